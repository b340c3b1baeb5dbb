// statiformer — attention, x86 (AVX2, AVX-512), part: the int8 number format (kernels/QUANTIZATION.md,
// "Attention"). The w8a8 attention of the avx2 and avx512 variants (selected by
// kernels/attention/select.hpp's AttentionInt8Select; the generic one, which runs what this one
// declines, is kernels/attention/int8.hpp). The same steps as the generic code, on up to kRows
// (64) query rows at a time that share each key block's K and V, repacked once per block (a layer
// passes 64 rows a call, kAttentionInt8CallRows: with twelve, the packing took ~18 % of this
// kernel's time at 64×128×4):
//  - K of the block's 32 keys in d-quads (kp[quad][key]: the key's four bytes of the quad), as
//    unsigned bytes k + 128 (one xor with 0x80); Q·Kᵀ then takes one `vpdpbusd` per row, quad and
//    vector of keys (8 on ymm, 16 on zmm): u8 keys times the row's quad broadcast (signed), the sums
//    starting from −128·Σ_d q[d], so that they end at the exact int32 dot products (two's
//    complement arithmetic is exact modulo 2³², and the dot products are within int32); on zmm two
//    rows at a time, each vector of keys loaded once for both (scores_zmm);
//  - V of the block in key-quads (vp[key quad][d]: the four keys' bytes of dimension d, signed);
//    P·V takes one `vpdpbusd` per row, key quad and vector of dimensions: the row's quantized
//    weights (a quad broadcast) are the unsigned operand as they are, being ≥ 0 (p ≥ 0 times the
//    values' scales; a block whose weights are not all ≥ 0 goes the plain way, key by key); on zmm
//    two rows at a time where they read the same keys (weighted_values_pair);
//  - the float steps of each row and block exactly as the generic code, on the vocabulary's width
//    (16 lanes on avx512, 8 on avx2): the scores' float(acc) · (s_q · s_k) / √head_dim [+ mask] per
//    lane (the same operations, one rounding each); the block maximum (a vector maximum where it is
//    the same value: no NaN, not zero; else the generic scan); exp via the vocabulary's
//    exp_nonpositive, all the group's rows of a block in one pass over s − m_new (≤ 0: exp_v's bits
//    in fewer steps, the generic exp_shifted(p, nb, m_new)'s bits), the canonical sum per row;
//    quantize_row's operations in registers (max |x| on the bits, 127 / max, the add-subtract of
//    1.5·2²³; quantize_row itself for a row below kMinQuantizedMax or non-finite); fma(float(acc), s_b,
//    out) per lane and the final division.
// vpdpbusd: AVX-VNNI on ymm (`{vex}`; the avx2 variant, and the avx512 one on a CPU with AVX-VNNI
// but not AVX512-VNNI) or AVX512-VNNI on zmm (the avx512 variant; ymm with AVX512VL for the rows' Σq), checked at run
// time as the int8 products do (kernels/product/x86_int8.hpp) and written as inline assembly: the avx2 and avx512
// variants are compiled without the VNNI flags, and one body serves the ways of summing. CPUs without
// VNNI (and the tests, with kernels_detail::x86::int8_allow_vnni false) sum u8·s8 quads by two
// `vpmaddwd` on ymm, the even and odd bytes widened to int16 (exact: |a·b| ≤ 255·128).
// head_dim 1..kMaxHeadDim (256); the calls with a longer head go the generic way.
//
// Compiles to nothing unless AVX2 and FMA, or AVX-512F, are enabled (the avx2 and avx512 variants' files).
#pragma once

#if defined(__x86_64__) && defined(__AVX2__) && (defined(__FMA__) || defined(__AVX512F__))
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/select.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/product/int8.hpp>

namespace stf::kernels_detail::x86 {

/// The x86 w8a8 attention (see the file's comment); one per tag, so each variant has its own copy.
template <class Tag>
struct AttentionInt8 {
  using E = generic::Elementwise<Tag>;
  using Vec = ProductInt8<Tag>;  // (its prefix8 and fma8)
  static constexpr index_t B = kAttentionKeyBlock;
  static_assert(B == 32, "the key masks of a block are 32-bit words, its scores four vectors of 8");
  /// Query rows that share the packed K and V of a block: a layer's whole call
  /// (kAttentionInt8CallRows), where their quads fit kQuadWords.
  static constexpr index_t kRows = 64;
  static constexpr index_t kMaxHeadDim = 256;
  static constexpr index_t kMaxQuads = kMaxHeadDim / 4;
  /// The rows' quads, each row's rounded up to 8: kRows rows of a head up to 64 (16 quads); of a
  /// longer head, fewer rows at a time (at least 16).
  static constexpr index_t kQuadWords = kRows * 16;
  /// vp's row: the dimensions rounded up to a multiple of 32 (the P·V tiles of four vectors).
  static constexpr index_t kVpStride = kMaxHeadDim;
  /// The float steps on the vocabulary's width: 16 lanes (AVX-512), else 8.
  static constexpr bool kZmm = std::is_same_v<Tag, isa::avx512>;

  /// How the u8 · s8 quads are summed: AVX-VNNI, AVX512-VNNI (on ymm), or vpmaddwd.
  enum class Path { madd, avx_vnni, avx512_vnni };

  static bool cpu_avx_vnni() {
#if defined(__AVXVNNI__)
    return true;
#else
    return __builtin_cpu_supports("avxvnni");
#endif
  }
  static bool cpu_avx512_vnni() {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return true;
#else
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
#endif
  }

  /// acc + Σ over each int32 lane's four bytes of a (unsigned) · b (signed): vpdpbusd.
  template <Path P>
  static __m256i dp(__m256i acc, __m256i a, __m256i b) {
    if constexpr (P == Path::avx_vnni) {
      asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    } else if constexpr (P == Path::avx512_vnni) {
      asm("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    } else {
      // even bytes and odd bytes as int16 (a zero-extended, b sign-extended), one vpmaddwd each
      const __m256i a_even = _mm256_and_si256(a, _mm256_set1_epi16(0x00FF)), a_odd = _mm256_srli_epi16(a, 8);
      const __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8), b_odd = _mm256_srai_epi16(b, 8);
      acc = _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even), _mm256_madd_epi16(a_odd, b_odd)));
    }
    return acc;
  }

#if defined(__AVX512F__)
  /// dp on zmm: AVX512-VNNI's vpdpbusd.
  static __m512i dp512(__m512i acc, __m512i a, __m512i b) {
    asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
  }
#endif

  /// The lanes of vector v (keys 8v..8v+7 of a block) whose bit is set in `bits`, as all-ones.
  static __m256i lanes_of(std::uint32_t bits, index_t v) {
    const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>((bits >> (8 * v)) & 0xFFu)), sel),
                              sel);
  }

  /// Bit i: whether key kb + i (i < nb) is allowed for the row.
  static std::uint32_t allowed_bits(const ref::RowMask& mask, index_t kb, index_t nb) {
    if (mask.key_end <= kb) return 0;
    const index_t e = mask.key_end - kb < nb ? mask.key_end - kb : nb;
    std::uint32_t bits = e >= 32 ? 0xFFFFFFFFu : (1u << e) - 1u;
    if (!mask.prefix())
      for (index_t i = 0; i < e; ++i)
        if (!mask.allows(kb + i)) bits &= ~(1u << i);
    return bits;
  }

  /// kp[c][j] = key j's bytes 4c..4c+3 (zeros past head_dim) + 128 each, j < n; zeros for j ≥ n.
  static void pack_keys(const std::int8_t* k, index_t k_stride, index_t n, index_t head_dim, std::int32_t (*kp)[B]) {
    const index_t full = head_dim / 4, quads = (head_dim + 3) / 4;
    // zeros for j >= n first, as whole vectors from the one holding key n (the keys below n are
    // written after them): as a loop of words, GCC made it a rep stosq per quad
    if (n < B)
      for (index_t c = 0; c < quads; ++c)
        for (index_t j = n / 8 * 8; j < B; j += 8)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(&kp[c][j]), _mm256_setzero_si256());
    for (index_t j = 0; j < n; ++j) {
      const std::int8_t* kj = k + j * k_stride;
      for (index_t c = 0; c < full; ++c) {
        std::uint32_t w;
        std::memcpy(&w, kj + 4 * c, 4);
        kp[c][j] = static_cast<std::int32_t>(w ^ 0x80808080u);
      }
      if (full < quads) {
        const auto w = static_cast<std::uint32_t>(bytes8(kj + 4 * full, head_dim - 4 * full));
        kp[full][j] = static_cast<std::int32_t>(w ^ 0x80808080u);
      }
    }
  }

  /// 16 bytes of row `src` from d0 (zeros past head_dim), or zeros for a row past n.
  static __m128i load16(const std::int8_t* src, index_t d0, index_t head_dim) {
    if (d0 + 16 <= head_dim) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + d0));
    if (d0 >= head_dim) return _mm_setzero_si128();
    // 1-15 bytes in registers, as pieces of fixed size (a memcpy of a variable length was a library
    // call per row: the 10x16 layer's values at head_dim 8)
    const index_t n = head_dim - d0;
    const std::int8_t* p = src + d0;
    const std::uint64_t lo = bytes8(p, n < 8 ? n : 8), hi = n > 8 ? bytes8(p + 8, n - 8) : 0;
    return _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo));
  }
  /// The c <= 8 bytes at p, little-endian, zeros above.
  static std::uint64_t bytes8(const std::int8_t* p, index_t c) {
    std::uint64_t v = 0;
    if (c == 8) {
      std::memcpy(&v, p, 8);
      return v;
    }
    index_t o = 0;
    if (c & 4) {
      std::uint32_t t = 0;
      std::memcpy(&t, p, 4);
      v = t;
      o = 4;
    }
    if (c & 2) {
      std::uint16_t t = 0;
      std::memcpy(&t, p + o, 2);
      v |= static_cast<std::uint64_t>(t) << (8 * o);
      o += 2;
    }
    if (c & 1) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(p[o])) << (8 * o);
    return v;
  }

  /// vp[iq][d] = the bytes of dimension d of keys 4iq..4iq+3 (zeros for keys ≥ n and d ≥ head_dim),
  /// d < head_dim rounded up to 32.
  static void pack_values(const std::int8_t* v, index_t v_stride, index_t n, index_t head_dim,
                          std::int32_t (*vp)[kVpStride]) {
    const index_t d32 = (head_dim + 31) / 32 * 32;
    for (index_t iq = 0; iq < (n + 3) / 4; ++iq)
      for (index_t d0 = 0; d0 < d32; d0 += 16) {
        __m128i r[4];
        for (index_t t = 0; t < 4; ++t) {
          const index_t j = 4 * iq + t;
          r[t] = j < n ? load16(v + j * v_stride, d0, head_dim) : _mm_setzero_si128();
        }
        const __m128i ab_lo = _mm_unpacklo_epi8(r[0], r[1]), ab_hi = _mm_unpackhi_epi8(r[0], r[1]);
        const __m128i cd_lo = _mm_unpacklo_epi8(r[2], r[3]), cd_hi = _mm_unpackhi_epi8(r[2], r[3]);
        auto* o = reinterpret_cast<__m128i*>(vp[iq] + d0);
        _mm_store_si128(o, _mm_unpacklo_epi16(ab_lo, cd_lo));      // d0 .. d0 + 3
        _mm_store_si128(o + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));  // d0 + 4 .. d0 + 7
        _mm_store_si128(o + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
        _mm_store_si128(o + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
      }
  }

  /// The maximum of the allowed scores x[i] (bit i of bits; at least one), as the generic scan
  /// `bm = (!any || x > bm) ? x : bm` finds it: a vector maximum where that is the same value (no
  /// NaN among them, and not a zero, whose sign is the first zero's), else the scan itself.
  static float block_max(const float* x, std::uint32_t bits) {
#if defined(__AVX512F__)
    if constexpr (kZmm) {
      const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
      __m512 mx = ninf;
      unsigned nan = 0;
      for (index_t h = 0; h < 2; ++h) {
        const __mmask16 on = static_cast<__mmask16>(bits >> (16 * h));
        const __m512 s = _mm512_load_ps(x + 16 * h);
        nan |= _mm512_mask_cmp_ps_mask(on, s, s, _CMP_UNORD_Q);
        mx = _mm512_max_ps(_mm512_mask_mov_ps(ninf, on, s), mx);
      }
      const float m = _mm512_reduce_max_ps(mx);
      if (nan == 0 && m != 0.0f) return m;
      return scan_max(x, bits);
    }
#endif
    const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256 mx = ninf;
    int nan = 0;
    for (int v = 0; v < 4; ++v) {
      if (((bits >> (8 * v)) & 0xFFu) == 0) continue;
      const __m256 on = _mm256_castsi256_ps(lanes_of(bits, v));
      const __m256 s = _mm256_load_ps(x + 8 * v);
      nan |= _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(s, s, _CMP_UNORD_Q), on));
      mx = _mm256_max_ps(_mm256_blendv_ps(ninf, s, on), mx);
    }
    const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    const float m = _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
    if (nan == 0 && m != 0.0f) return m;
    return scan_max(x, bits);
  }

  /// The generic code's scan for the block maximum.
  static float scan_max(const float* x, std::uint32_t bits) {
    bool any = false;
    float bm = 0.0f;
    for (int i = 0; i < 32; ++i) {
      if (!((bits >> i) & 1u)) continue;
      bm = (!any || x[i] > bm) ? x[i] : bm;
      any = true;
    }
    return bm;
  }

  /// out[0, n) = out · c (rows of up to kMaxHeadDim).
  static void scale_row(float* out, index_t n, float c) {
    const __m256 vc = _mm256_set1_ps(c);
    index_t d = 0;
    for (; d + 8 <= n; d += 8) _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_loadu_ps(out + d), vc));
    if (d < n) {
      const __m256i keep = Vec::prefix8(n - d);
      _mm256_maskstore_ps(out + d, keep, _mm256_mul_ps(_mm256_maskload_ps(out + d, keep), vc));
    }
  }

  /// One row's scores over the packed keys of a block: p[i] = float(acc) · (s_q · s_k[kb + i]) / scale
  /// [+ add[kb + i]] for i < nb (every lane: the allowed ones count).
  template <Path P>
  static void scores(const std::int32_t* qq, std::uint32_t corr, float s_q, const std::int32_t (*kp)[B],
                     const float* s_k, const float* add, index_t quads, index_t nb, float scale, float* p) {
#if defined(__AVX512F__)
    if constexpr (P == Path::avx512_vnni) {
      scores_zmm<1>(qq, 0, &corr, &s_q, kp, s_k, &add, quads, nb, scale, p);
      return;
    }
#endif
    const __m256i start = _mm256_set1_epi32(static_cast<int>(0u - corr));  // −128·Σ q (mod 2³²)
    __m256i acc0 = start, acc1 = start, acc2 = start, acc3 = start;
    if (nb > 16) {
      for (index_t c = 0; c < quads; ++c) {
        const __m256i qb = _mm256_set1_epi32(qq[c]);
        acc0 = dp<P>(acc0, _mm256_load_si256(reinterpret_cast<const __m256i*>(kp[c])), qb);
        acc1 = dp<P>(acc1, _mm256_load_si256(reinterpret_cast<const __m256i*>(kp[c] + 8)), qb);
        acc2 = dp<P>(acc2, _mm256_load_si256(reinterpret_cast<const __m256i*>(kp[c] + 16)), qb);
        acc3 = dp<P>(acc3, _mm256_load_si256(reinterpret_cast<const __m256i*>(kp[c] + 24)), qb);
      }
    } else {
      for (index_t c = 0; c < quads; ++c) {
        const __m256i qb = _mm256_set1_epi32(qq[c]);
        acc0 = dp<P>(acc0, _mm256_load_si256(reinterpret_cast<const __m256i*>(kp[c])), qb);
        acc1 = dp<P>(acc1, _mm256_load_si256(reinterpret_cast<const __m256i*>(kp[c] + 8)), qb);
      }
    }
    score_floats(acc0, acc1, acc2, acc3, s_q, s_k, add, nb, scale, p);
  }

#if defined(__AVX512F__)
  /// scores<Path::avx512_vnni> of R rows at once (zmm: keys 0-15, 16-31): row j's quads at qq +
  /// j·qq_stride, its corr[j], s_q[j], add[j], its scores at p + j·B; each quad's keys loaded once
  /// for the R rows (a row alone loads two vectors of keys and a quad of its own per two vpdpbusd:
  /// the layer's rows go in pairs).
  template <int R>
  static void scores_zmm(const std::int32_t* qq, index_t qq_stride, const std::uint32_t* corr, const float* s_q,
                         const std::int32_t (*kp)[B], const float* s_k, const float* const* add, index_t quads,
                         index_t nb, float scale, float* p) {
    __m512i acc[R][2];
#pragma GCC unroll 2
    for (int j = 0; j < R; ++j) acc[j][0] = acc[j][1] = _mm512_set1_epi32(static_cast<int>(0u - corr[j]));
    for (index_t c = 0; c < quads; ++c) {
      const __m512i k0 = _mm512_load_si512(kp[c]), k1 = _mm512_load_si512(kp[c] + 16);
#pragma GCC unroll 2
      for (int j = 0; j < R; ++j) {
        const __m512i x = _mm512_set1_epi32(qq[j * qq_stride + c]);
        acc[j][0] = dp512(acc[j][0], k0, x);
        acc[j][1] = dp512(acc[j][1], k1, x);
      }
    }
#pragma GCC unroll 2
    for (int j = 0; j < R; ++j)
      score_floats(_mm512_castsi512_si256(acc[j][0]), _mm512_extracti64x4_epi64(acc[j][0], 1),
                   _mm512_castsi512_si256(acc[j][1]), _mm512_extracti64x4_epi64(acc[j][1], 1), s_q[j], s_k, add[j], nb,
                   scale, p + j * B);
  }
#endif

  // ---- the float steps of one row's block, on the vocabulary's width (AVX-512: 16 lanes; AVX2: 8),
  // so that the vocabulary's exp and sum read what these wrote as they wrote it --------------------

  /// p[i] = float(acc) · (s_q · s_k[i]) / scale [+ add[i]], i < nb (acc0..3: keys 0-7, ..., 24-31).
  static void score_floats(__m256i acc0, __m256i acc1, __m256i acc2, __m256i acc3, float s_q, const float* s_k,
                           const float* add, index_t nb, float scale, float* p) {
#if defined(__AVX512F__)
    if constexpr (kZmm) {
      const __m512i acc[2] = {_mm512_inserti64x4(_mm512_castsi256_si512(acc0), acc1, 1),
                              _mm512_inserti64x4(_mm512_castsi256_si512(acc2), acc3, 1)};
      const __m512 sq = _mm512_set1_ps(s_q), sc = _mm512_set1_ps(scale);
      for (index_t h = 0; h < 2 && 16 * h < nb; ++h) {
        const __mmask16 keep = Vec::prefix16(nb - 16 * h);
        const __m512 sk = _mm512_maskz_loadu_ps(keep, s_k + 16 * h);
        __m512 x = _mm512_div_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[h]), _mm512_mul_ps(sq, sk)), sc);
        if (add) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(keep, add + 16 * h));
        _mm512_store_ps(p + 16 * h, x);
      }
      return;
    }
#endif
    const __m256i acc[4] = {acc0, acc1, acc2, acc3};
    const __m256 sq = _mm256_set1_ps(s_q), sc = _mm256_set1_ps(scale);
    for (index_t vv = 0; vv < 4 && 8 * vv < nb; ++vv) {
      const index_t i0 = 8 * vv;
      const __m256i keep = Vec::prefix8(nb - i0);
      const __m256 sk = _mm256_maskload_ps(s_k + i0, keep);
      __m256 x = _mm256_div_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[vv]), _mm256_mul_ps(sq, sk)), sc);
      if (add) x = _mm256_add_ps(x, _mm256_maskload_ps(add + i0, keep));
      _mm256_store_ps(p + i0, x);
    }
  }

  /// p[i] = allowed ? p[i] - m : 0 (bit i of bits), i < 32.
  static void shift(float* p, std::uint32_t bits, float m) {
#if defined(__AVX512F__)
    if constexpr (kZmm) {
      const __m512 vm = _mm512_set1_ps(m);
      for (index_t h = 0; h < 2; ++h)
        _mm512_store_ps(p + 16 * h,
                        _mm512_maskz_sub_ps(static_cast<__mmask16>(bits >> (16 * h)), _mm512_load_ps(p + 16 * h), vm));
      return;
    }
#endif
    const __m256 vm = _mm256_set1_ps(m);
    for (index_t vv = 0; vv < 4; ++vv) {
      const __m256 on = _mm256_castsi256_ps(lanes_of(bits, vv));
      _mm256_store_ps(p + 8 * vv, _mm256_and_ps(_mm256_sub_ps(_mm256_load_ps(p + 8 * vv), vm), on));
    }
  }

  /// p[i] = allowed ? p[i] : 0, i < 32.
  static void keep_allowed(float* p, std::uint32_t bits) {
#if defined(__AVX512F__)
    if constexpr (kZmm) {
      for (index_t h = 0; h < 2; ++h)
        _mm512_store_ps(p + 16 * h,
                        _mm512_maskz_mov_ps(static_cast<__mmask16>(bits >> (16 * h)), _mm512_load_ps(p + 16 * h)));
      return;
    }
#endif
    for (index_t vv = 0; vv < 4; ++vv) {
      const __m256 on = _mm256_castsi256_ps(lanes_of(bits, vv));
      _mm256_store_ps(p + 8 * vv, _mm256_and_ps(_mm256_load_ps(p + 8 * vv), on));
    }
  }

  /// p[i] = allowed ? p[i] · s_v[i] : 0 (i < nb; 0 from nb on), then p quantized as
  /// ProductInt8::quantize_row(p, nb, ·, false) does it into the quads wq[0, 8) (zero bytes from nb
  /// on): max |p| on the bits, 127 / max, each p · inv rounded by the add-subtract of 1.5·2²³.
  /// Returns the block scale; negative: whether a weight is below zero (a value scale below zero),
  /// which the caller sums key by key from qw (then written, nb bytes) instead.
  static float weights(float* p, std::uint32_t bits, const float* s_v, index_t nb, std::int32_t* wq, std::int8_t* qw,
                       bool& negative) {
    constexpr float kRound = 12582912.0f;  // 1.5 · 2²³ (ProductInt8::quantize_row)
    std::uint32_t mbits;
#if defined(__AVX512F__)
    if constexpr (kZmm) {
      __m512 x[2];
      __mmask16 neg = 0;
      __m512i mx = _mm512_setzero_si512();
      for (index_t h = 0; h < 2; ++h) {
        const __mmask16 on = static_cast<__mmask16>(bits >> (16 * h));
        const __m512 sv = _mm512_maskz_loadu_ps(Vec::prefix16(nb > 16 * h ? nb - 16 * h : 0), s_v + 16 * h);
        x[h] = _mm512_maskz_mul_ps(on, _mm512_load_ps(p + 16 * h), sv);
        _mm512_store_ps(p + 16 * h, x[h]);
        neg |= _mm512_cmp_ps_mask(x[h], _mm512_setzero_ps(), _CMP_LT_OQ);
        mx = _mm512_max_epu32(mx, _mm512_and_si512(_mm512_castps_si512(x[h]), _mm512_set1_epi32(0x7FFFFFFF)));
      }
      negative = neg != 0;
      mbits = _mm512_reduce_max_epu32(mx);
      const float a = std::bit_cast<float>(mbits);
      if (!(mbits < 0x7F800000u) || a < kMinQuantizedMax || negative) return fallback(p, nb, wq, qw);
      const float inv = 127.0f / a;
      if (!(inv <= std::numeric_limits<float>::max())) return fallback(p, nb, wq, qw);
      const __m512 vi = _mm512_set1_ps(inv), vr = _mm512_set1_ps(kRound);
      for (index_t h = 0; h < 2; ++h) {
        const __m512 r = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(x[h], vi), vr), vr);
        _mm_store_si128(reinterpret_cast<__m128i*>(wq + 4 * h), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(r)));
      }
      return a / 127.0f;
    }
#endif
    __m256 x[4];
    int neg = 0;
    __m256i mx = _mm256_setzero_si256();
    for (index_t vv = 0; vv < 4; ++vv) {
      const __m256 on = _mm256_castsi256_ps(lanes_of(bits, vv));
      const __m256 sv = _mm256_maskload_ps(s_v + 8 * vv, Vec::prefix8(nb > 8 * vv ? nb - 8 * vv : 0));
      x[vv] = _mm256_and_ps(_mm256_mul_ps(_mm256_load_ps(p + 8 * vv), sv), on);
      _mm256_store_ps(p + 8 * vv, x[vv]);
      neg |= _mm256_movemask_ps(_mm256_cmp_ps(x[vv], _mm256_setzero_ps(), _CMP_LT_OQ));
      mx = _mm256_max_epu32(mx, _mm256_and_si256(_mm256_castps_si256(x[vv]), _mm256_set1_epi32(0x7FFFFFFF)));
    }
    negative = neg != 0;
    const __m128i m4 = _mm_max_epu32(_mm256_castsi256_si128(mx), _mm256_extracti128_si256(mx, 1));
    const __m128i m2 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0x4E));
    mbits = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_max_epu32(m2, _mm_shuffle_epi32(m2, 0xB1))));
    const float a = std::bit_cast<float>(mbits);
    if (!(mbits < 0x7F800000u) || a < kMinQuantizedMax || negative) return fallback(p, nb, wq, qw);
    const float inv = 127.0f / a;
    if (!(inv <= std::numeric_limits<float>::max())) return fallback(p, nb, wq, qw);
    const __m256 vi = _mm256_set1_ps(inv), vr = _mm256_set1_ps(kRound);
    for (index_t vv = 0; vv < 4; ++vv) {
      const __m256i qi = _mm256_cvttps_epi32(_mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(x[vv], vi), vr), vr));
      const __m256i p16 = _mm256_packs_epi32(qi, qi);   // lanes 0-3 | 4-7 as int16, twice
      const __m256i p8 = _mm256_packs_epi16(p16, p16);  // as int8, four times
      wq[2 * vv] = _mm_cvtsi128_si32(_mm256_castsi256_si128(p8));
      wq[2 * vv + 1] = _mm_cvtsi128_si32(_mm256_extracti128_si256(p8, 1));
    }
    return a / 127.0f;
  }

  /// The rare rows of `weights`: ProductInt8::quantize_row itself (its clamps where 127 / max
  /// overflows; zeros and scale 0 or NaN for a zero or non-finite row).
  static float fallback(const float* p, index_t nb, std::int32_t* wq, std::int8_t* qw) {
    std::memset(qw, 0, B);
    const float s_b = generic::ProductInt8<Tag>::quantize_row(p, nb, qw, false);
    std::memcpy(wq, qw, B);
    return s_b;
  }

  /// out[0, head_dim) = fma(float(Σ_i w[i] · v[i][d]), s_b, out[d]): the weights' quads (≥ 0) against
  /// the packed values, nq key quads.
  template <Path P>
  static void weighted_values(const std::int32_t* wq, index_t nq, const std::int32_t (*vp)[kVpStride], index_t head_dim,
                              float s_b, float* out) {
#if defined(__AVX512F__)
    if constexpr (P == Path::avx512_vnni) {  // (zmm: 16 dimensions a vector)
      const __m512 vs = _mm512_set1_ps(s_b);
      for (index_t d0 = 0; d0 < head_dim; d0 += 32) {
        __m512i a0 = _mm512_setzero_si512(), a1 = a0;
        if (head_dim - d0 > 16) {
          // (even and odd key quads in chains of their own: half the latency; integer sums, exact)
          __m512i b0 = a0, b1 = a0;
          index_t iq = 0;
          for (; iq + 2 <= nq; iq += 2) {
            const __m512i wa = _mm512_set1_epi32(wq[iq]), wb = _mm512_set1_epi32(wq[iq + 1]);
            a0 = dp512(a0, wa, _mm512_load_si512(vp[iq] + d0));
            a1 = dp512(a1, wa, _mm512_load_si512(vp[iq] + d0 + 16));
            b0 = dp512(b0, wb, _mm512_load_si512(vp[iq + 1] + d0));
            b1 = dp512(b1, wb, _mm512_load_si512(vp[iq + 1] + d0 + 16));
          }
          if (iq < nq) {
            const __m512i wa = _mm512_set1_epi32(wq[iq]);
            a0 = dp512(a0, wa, _mm512_load_si512(vp[iq] + d0));
            a1 = dp512(a1, wa, _mm512_load_si512(vp[iq] + d0 + 16));
          }
          a0 = _mm512_add_epi32(a0, b0);
          a1 = _mm512_add_epi32(a1, b1);
        } else {
          // (two chains of sums, even and odd key quads: half the latency; integer sums, exact)
          index_t iq = 0;
          for (; iq + 2 <= nq; iq += 2) {
            a0 = dp512(a0, _mm512_set1_epi32(wq[iq]), _mm512_load_si512(vp[iq] + d0));
            a1 = dp512(a1, _mm512_set1_epi32(wq[iq + 1]), _mm512_load_si512(vp[iq + 1] + d0));
          }
          if (iq < nq) a0 = dp512(a0, _mm512_set1_epi32(wq[iq]), _mm512_load_si512(vp[iq] + d0));
          a0 = _mm512_add_epi32(a0, a1);
          a1 = _mm512_setzero_si512();
        }
        const __m512i acc[2] = {a0, a1};
        for (index_t h = 0; h < 2 && d0 + 16 * h < head_dim; ++h) {
          const index_t d = d0 + 16 * h;
          const __mmask16 keep = Vec::prefix16(head_dim - d);
          _mm512_mask_storeu_ps(out + d, keep,
                                _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[h]), vs, _mm512_maskz_loadu_ps(keep, out + d)));
        }
      }
      return;
    }
#endif
    const __m256 vs = _mm256_set1_ps(s_b);
    for (index_t d0 = 0; d0 < head_dim; d0 += 32) {
      __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
      if (head_dim - d0 > 16) {
        for (index_t iq = 0; iq < nq; ++iq) {
          const __m256i wb = _mm256_set1_epi32(wq[iq]);
          const std::int32_t* vr = vp[iq] + d0;
          a0 = dp<P>(a0, wb, _mm256_load_si256(reinterpret_cast<const __m256i*>(vr)));
          a1 = dp<P>(a1, wb, _mm256_load_si256(reinterpret_cast<const __m256i*>(vr + 8)));
          a2 = dp<P>(a2, wb, _mm256_load_si256(reinterpret_cast<const __m256i*>(vr + 16)));
          a3 = dp<P>(a3, wb, _mm256_load_si256(reinterpret_cast<const __m256i*>(vr + 24)));
        }
      } else {
        for (index_t iq = 0; iq < nq; ++iq) {
          const __m256i wb = _mm256_set1_epi32(wq[iq]);
          const std::int32_t* vr = vp[iq] + d0;
          a0 = dp<P>(a0, wb, _mm256_load_si256(reinterpret_cast<const __m256i*>(vr)));
          a1 = dp<P>(a1, wb, _mm256_load_si256(reinterpret_cast<const __m256i*>(vr + 8)));
        }
      }
      const __m256i acc[4] = {a0, a1, a2, a3};
      for (index_t vv = 0; vv < 4; ++vv) {
        const index_t d = d0 + 8 * vv;
        if (d >= head_dim) break;
        const __m256 f = _mm256_cvtepi32_ps(acc[vv]);
        if (d + 8 <= head_dim) {
          _mm256_storeu_ps(out + d, Vec::fma8(f, vs, _mm256_loadu_ps(out + d)));
        } else {
          const __m256i keep = Vec::prefix8(head_dim - d);
          _mm256_maskstore_ps(out + d, keep, Vec::fma8(f, vs, _mm256_maskload_ps(out + d, keep)));
        }
      }
    }
  }

#if defined(__AVX512F__)
  /// weighted_values<Path::avx512_vnni> of two rows at once, (wq[0], s_b[0], out) and (wq[1], s_b[1],
  /// out + out_stride), over the same nq key quads: each vector of values loaded once for both rows.
  static void weighted_values_pair(const std::int32_t (*wq)[B / 4], index_t nq, const std::int32_t (*vp)[kVpStride],
                                   index_t head_dim, const float* s_b, float* out, index_t out_stride) {
    for (index_t d0 = 0; d0 < head_dim; d0 += 32) {
      __m512i acc[2][2];  // [row][dimensions d0.., d0 + 16..]
      const __m512i zero = _mm512_setzero_si512();
      if (head_dim - d0 > 16) {
        __m512i a0 = zero, a1 = zero, b0 = zero, b1 = zero;
        for (index_t iq = 0; iq < nq; ++iq) {
          const __m512i v0 = _mm512_load_si512(vp[iq] + d0), v1 = _mm512_load_si512(vp[iq] + d0 + 16);
          const __m512i w0 = _mm512_set1_epi32(wq[0][iq]), w1 = _mm512_set1_epi32(wq[1][iq]);
          a0 = dp512(a0, w0, v0);
          a1 = dp512(a1, w0, v1);
          b0 = dp512(b0, w1, v0);
          b1 = dp512(b1, w1, v1);
        }
        acc[0][0] = a0, acc[0][1] = a1, acc[1][0] = b0, acc[1][1] = b1;
      } else {
        // (each row's even and odd key quads in chains of their own: half the latency; integer sums, exact)
        __m512i a0 = zero, a1 = zero, b0 = zero, b1 = zero;
        index_t iq = 0;
        for (; iq + 2 <= nq; iq += 2) {
          const __m512i v0 = _mm512_load_si512(vp[iq] + d0), v1 = _mm512_load_si512(vp[iq + 1] + d0);
          a0 = dp512(a0, _mm512_set1_epi32(wq[0][iq]), v0);
          a1 = dp512(a1, _mm512_set1_epi32(wq[0][iq + 1]), v1);
          b0 = dp512(b0, _mm512_set1_epi32(wq[1][iq]), v0);
          b1 = dp512(b1, _mm512_set1_epi32(wq[1][iq + 1]), v1);
        }
        if (iq < nq) {
          const __m512i v0 = _mm512_load_si512(vp[iq] + d0);
          a0 = dp512(a0, _mm512_set1_epi32(wq[0][iq]), v0);
          b0 = dp512(b0, _mm512_set1_epi32(wq[1][iq]), v0);
        }
        acc[0][0] = _mm512_add_epi32(a0, a1), acc[0][1] = zero;
        acc[1][0] = _mm512_add_epi32(b0, b1), acc[1][1] = zero;
      }
      for (index_t j = 0; j < 2; ++j) {
        const __m512 vs = _mm512_set1_ps(s_b[j]);
        float* o = out + j * out_stride;
        for (index_t h = 0; h < 2 && d0 + 16 * h < head_dim; ++h) {
          const index_t d = d0 + 16 * h;
          const __mmask16 keep = Vec::prefix16(head_dim - d);
          _mm512_mask_storeu_ps(o + d, keep,
                                _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[j][h]), vs, _mm512_maskz_loadu_ps(keep, o + d)));
        }
      }
    }
  }
#endif

  /// x[i] = exp(x[i]) for x[i] ≤ 0 or NaN, i < n: the vocabulary's exp_nonpositive, exp_v's bits in
  /// fewer steps (the generic code's exp_shifted(p, p, nb, m_new) is exp_v(p − m_new), and every
  /// value here is already shifted, s − m_new ≤ 0 or 0 for a masked key, m − m_new ≤ 0; NaN stays).
  static void exp_nonpositive(float* x, index_t n) {
    E::map(x, x, n, [](typename E::V v) { return E::exp_nonpositive(v); });
  }

  /// Up to kRows rows (see attention_rows_w8a8). Per key block, the rows' steps in phases, so that
  /// the exps of all rows are one pass (exp_nonpositive): the rows' scores (on zmm in pairs), then
  /// their block maxima; the factors exp(m - m_new) of the rows that had a block before, as one
  /// pass; the rows' shifted scores s - m_new as one pass (each value the bits of the generic
  /// exp_shifted(p, p, nb, m_new)); then per row the canonical sum, the values' scales,
  /// quantize_row, and the weighted values (on zmm per pair of rows).
  template <Path P>
  static void group(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows, const std::int8_t* k,
                    index_t k_stride, const float* s_k, const std::int8_t* v, index_t v_stride, const float* s_v,
                    index_t head_dim, index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* out,
                    index_t out_stride) {
    const index_t quads = (head_dim + 3) / 4;
    const index_t qq_stride = (quads + 7) / 8 * 8;
    alignas(32) std::int32_t qq[kQuadWords];
    std::uint32_t corr[kRows];
    float m[kRows], l[kRows];
    bool seen[kRows];
    for (index_t r = 0; r < n_rows; ++r) {
      const std::int8_t* qr = q + r * q_stride;
      // the row's quads, zeros past head_dim, and Σ_d q[d] (the bytes against ones, u8), 8 quads a
      // vector built in registers (a memset, a memcpy and a vector load over both stores, which
      // cannot be forwarded, stalled every row and head)
      __m256i total = _mm256_setzero_si256();
      for (index_t c = 0; c < quads; c += 8) {
        const __m256i row = _mm256_setr_m128i(load16(qr, 4 * c, head_dim), load16(qr, 4 * c + 16, head_dim));
        _mm256_store_si256(reinterpret_cast<__m256i*>(qq + r * qq_stride + c), row);
        total = dp<P>(total, _mm256_set1_epi32(0x01010101), row);
      }
      const __m128i t4 = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
      const __m128i t2 = _mm_add_epi32(t4, _mm_shuffle_epi32(t4, 0x4E));
      const std::int32_t sum = _mm_cvtsi128_si32(_mm_add_epi32(t2, _mm_shuffle_epi32(t2, 0xB1)));
      corr[r] = static_cast<std::uint32_t>(sum) * 128u;
      m[r] = l[r] = 0.0f;
      seen[r] = false;
      float* o = out + r * out_stride;
      for (index_t d = 0; d < head_dim; ++d) o[d] = 0.0f;
    }
    const float scale = std::sqrt(static_cast<float>(head_dim));
    alignas(64) std::int32_t kp[kMaxQuads][B];
    alignas(64) std::int32_t vp[B / 4][kVpStride];
    alignas(64) float p[kRows][B];
    alignas(32) std::int8_t qw[B];
    for (index_t kb = 0; kb < n_keys; kb += B) {
      const index_t nb = n_keys - kb < B ? n_keys - kb : B;
      std::uint32_t bits[kRows];
      index_t end[kRows];  // each row's keys below its key end, in the block
      index_t n_read = 0;  // the most of them
      for (index_t r = 0; r < n_rows; ++r) {
        bits[r] = allowed_bits(masks[r], kb, nb);
        end[r] = bits[r] == 0 ? 0 : (masks[r].key_end - kb < nb ? masks[r].key_end - kb : nb);
        n_read = end[r] > n_read ? end[r] : n_read;
      }
      if (n_read == 0) continue;
      pack_keys(k + kb * k_stride, k_stride, n_read, head_dim, kp);
      pack_values(v + kb * v_stride, v_stride, n_read, head_dim, vp);
      // 1. the scores of the block's allowed keys (AVX512-VNNI: two rows at a time where both have
      // some), then per row their maximum, the new maximum
      auto additive = [&](index_t r) { return masks[r].additive() ? masks[r].additive() + kb : nullptr; };
      for (index_t r = 0; r < n_rows; ++r) {
        if (bits[r] == 0) continue;
#if defined(__AVX512F__)
        if constexpr (P == Path::avx512_vnni) {
          if (r + 1 < n_rows && bits[r + 1] != 0) {
            const float* add[2] = {additive(r), additive(r + 1)};
            scores_zmm<2>(qq + r * qq_stride, qq_stride, corr + r, s_q + r, kp, s_k + kb, add, quads, nb, scale, p[r]);
            ++r;
            continue;
          }
        }
#endif
        scores<P>(qq + r * qq_stride, corr[r], s_q[r], kp, s_k + kb, additive(r), quads, nb, scale, p[r]);
      }
      float c[kRows];
      index_t n_c = 0;  // rows with factors c[0, n_c) (the rows before: factor 1, unused)
      float m_new[kRows];
      for (index_t r = 0; r < n_rows; ++r) {
        if (bits[r] == 0) {
          for (index_t vv = 0; vv < 4; ++vv) _mm256_store_ps(p[r] + 8 * vv, _mm256_setzero_ps());
          c[r] = 0.0f;
          continue;
        }
        const float bm = block_max(p[r], bits[r]);
        m_new[r] = (seen[r] && m[r] > bm) ? m[r] : bm;
        c[r] = seen[r] ? m[r] - m_new[r] : 0.0f;
        n_c = seen[r] ? r + 1 : n_c;
        shift(p[r], bits[r], m_new[r]);  // (masked keys: 0, as the generic code's m_new - m_new)
      }
      // 2. what came before, to the new maximum
      if (n_c > 0) exp_nonpositive(c, n_c);
      for (index_t r = 0; r < n_rows; ++r)
        if (bits[r] != 0 && seen[r]) {
          l[r] = l[r] * c[r];
          scale_row(out + r * out_stride, head_dim, c[r]);
        }
      // 3. the weights (masked keys: 0), their canonical sum, times the values' scales, quantized
      // (a block of up to 16 keys: each row's first vectors only, the lanes from nb on being
      // zeroed by keep_allowed and never read before)
      const index_t lanes = (nb + E::L - 1) / E::L * E::L;
      if (lanes == B)
        exp_nonpositive(&p[0][0], n_rows * B);
      else
        for (index_t r = 0; r < n_rows; ++r) exp_nonpositive(p[r], lanes);
      for (index_t r = 0; r < n_rows; ++r) {
        if (bits[r] == 0) continue;
        // (AVX512-VNNI: the weighted values of two rows at a time where both have keys in the
        // block, the same number of them read, and weights ≥ 0)
        const bool pair = P == Path::avx512_vnni && r + 1 < n_rows && bits[r + 1] != 0 && end[r + 1] == end[r];
        alignas(16) std::int32_t wq[2][B / 4] = {};
        float s_b[2];
        bool packed[2] = {false, false};  // whether the row's weights go against the packed values
        for (index_t j = 0; j < (pair ? 2 : 1); ++j) {
          const index_t rj = r + j;
          float* pr = p[rj];
          keep_allowed(pr, bits[rj]);
          l[rj] = seen[rj] ? l[rj] + E::sum(pr, nb) : E::sum(pr, nb);
          bool negative = false;
          s_b[j] = weights(pr, bits[rj], s_v + kb, nb, wq[j], qw, negative);
          packed[j] = !negative;
          m[rj] = m_new[rj];
          seen[rj] = true;
          if (!negative) continue;
          // 4. (a negative weight: a negative value scale) their int32 sums with the values key by
          // key, as the generic code, scaled into the running output
          float* o = out + rj * out_stride;
          for (index_t d = 0; d < head_dim; ++d) {
            std::int32_t acc = 0;
            for (index_t i = 0; i < end[rj]; ++i)
              acc += static_cast<std::int32_t>(qw[i]) * static_cast<std::int32_t>(v[(kb + i) * v_stride + d]);
            o[d] = std::fma(static_cast<float>(acc), s_b[j], o[d]);
          }
        }
        // 4. their int32 sums with the packed values, scaled into the running output
#if defined(__AVX512F__)
        if constexpr (P == Path::avx512_vnni) {
          if (pair && packed[0] && packed[1]) {
            weighted_values_pair(wq, (end[r] + 3) / 4, vp, head_dim, s_b, out + r * out_stride, out_stride);
            ++r;
            continue;
          }
        }
#endif
        for (index_t j = 0; j < (pair ? 2 : 1); ++j)
          if (packed[j])
            weighted_values<P>(wq[j], (end[r + j] + 3) / 4, vp, head_dim, s_b[j], out + (r + j) * out_stride);
        r += pair ? 1 : 0;
      }
    }
    for (index_t r = 0; r < n_rows; ++r) {
      float* o = out + r * out_stride;
      if (seen[r]) {
        const __m256 vl = _mm256_set1_ps(l[r]);
        index_t d = 0;
        for (; d + 8 <= head_dim; d += 8) _mm256_storeu_ps(o + d, _mm256_div_ps(_mm256_loadu_ps(o + d), vl));
        for (; d < head_dim; ++d) o[d] = o[d] / l[r];
        continue;
      }
      // every key masked: the documented convention
      const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
      for (index_t d = 0; d < head_dim; ++d) {
        float acc = 0.0f;
        if (w != 0.0f)
          for (index_t j = 0; j < n_keys; ++j) acc = std::fma(w, static_cast<float>(v[j * v_stride + d]) * s_v[j], acc);
        o[d] = acc;
      }
    }
  }

  template <Path P>
  static void run(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows, const std::int8_t* k,
                  index_t k_stride, const float* s_k, const std::int8_t* v, index_t v_stride, const float* s_v,
                  index_t head_dim, index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* out,
                  index_t out_stride) {
    // rows at a time: as many as kQuadWords holds (kRows up to head_dim 64), as even as they go
    const index_t fit = kQuadWords / ((head_dim + 31) / 32 * 8), cap = fit < kRows ? fit : kRows;
    const index_t groups = (n_rows + cap - 1) / cap, each = (n_rows + groups - 1) / groups;
    for (index_t r0 = 0; r0 < n_rows; r0 += each) {
      const index_t n = n_rows - r0 < each ? n_rows - r0 : each;
      group<P>(q + r0 * q_stride, q_stride, s_q + r0, n, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys,
               masks + r0, fill, out + r0 * out_stride, out_stride);
    }
  }

  /// Kernels::attention_rows_w8a8 (kernels/api.hpp) where head_dim ≤ kMaxHeadDim (else false: the
  /// generic code runs the call). p is not used (the rows' blocks are on the stack).
  static bool attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows,
                                  const std::int8_t* k, index_t k_stride, const float* s_k, const std::int8_t* v,
                                  index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                                  const ref::RowMask* masks, MaskFill fill, float* /*p*/, float* out,
                                  index_t out_stride) {
    if (head_dim < 1 || head_dim > kMaxHeadDim || n_keys < 1) return false;
    if (int8_allow_vnni) {
      if constexpr (std::is_same_v<Tag, isa::avx512>) {
        if (cpu_avx512_vnni()) {
          run<Path::avx512_vnni>(q, q_stride, s_q, n_rows, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks,
                                 fill, out, out_stride);
          return true;
        }
      }
      if (cpu_avx_vnni()) {
        run<Path::avx_vnni>(q, q_stride, s_q, n_rows, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks, fill,
                            out, out_stride);
        return true;
      }
    }
    run<Path::madd>(q, q_stride, s_q, n_rows, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks, fill, out,
                    out_stride);
    return true;
  }
};

}  // namespace stf::kernels_detail::x86
#endif
