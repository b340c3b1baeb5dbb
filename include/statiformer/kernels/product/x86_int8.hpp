// statiformer — matrix products, x86 (AVX2, AVX-512), part: the int8 number format
// (kernels/QUANTIZATION.md). The w8a8 linear of the avx2 and avx512 variants (selected by
// kernels/product/select.hpp's ProductInt8Select; the generic one is kernels/product/int8.hpp):
//  - each group of up to kQuantizedRowGroup rows (twice as many on the AVX512-VNNI path, whose
//    quantized elements are bytes: the scratch has room for 2-byte ones) is quantized into the scratch
//    (vector max|x|, cvtps2dq in the default rounding mode, clamp to ±127; AVX-512: max|x| on the
//    bits and no clamp, see quantize_i8), then every 64-output weight panel passes over the group
//    in register tiles of up to 6 rows, as even as they can be (groups too: 25 rows as 13 + 12);
//  - AVX-512 with AVX512-VNNI (checked at run time, below): tiles of 6 rows × 4 vectors of 16
//    int32 sums, one `vpdpbusd` per row and vector per k-quad (in asm, see dpbusd), and ReLU in
//    the epilogue. vpdpbusd multiplies unsigned by signed bytes. In a group of 4 rows or more the
//    rows go in unsigned, q + 128 (stored so by the quantization), the weights as they are, and
//    each output's sum then holds 128·Σ_k w[k, o] too, its start value minus that (the column sums of
//    each panel, one vpdpbusd of bytes 1 per weight vector and quad, once per group). In smaller
//    groups, where that would be as many vpdpbusd again, the weights go in unsigned, w + 128 (one
//    xor with 0x80 per weight vector, shared by the tile's rows), the rows signed, and each row's
//    sum then holds 128·Σ_k q_x[r, k] too (the row's sum is taken while quantizing it). The sums
//    wrap around 2³² on the way and the start value brings them back: two's complement arithmetic
//    is exact modulo 2³², and the result is within int32 (in ≤ ref::kMaxQuantizedIn). The last
//    tile over each panel prefetches the next panel's weights (or the next linear's) into L1, a
//    quad's lines with its own quad (linears of kPrefetchWeightBytes or more);
//  - AVX2 with AVX-VNNI (checked at run time, as above): the same on ymm, tiles of 6 rows × 2
//    vectors of 8 sums;
//  - AVX2 without AVX-VNNI, and AVX-512 without AVX512-VNNI: `vpmaddwd` on int16 (weights
//    sign-extended from their quads, activations quantized into int16), tiles of 6 rows × 8
//    outputs; each int32 lane sums two k of one output, and adjacent lanes are added at the end
//    (vphaddd). Exact: |x·w| ≤ 127², no saturation (vpmaddubsw would saturate, so it is not used).
// Then y = fma(float(acc), s_x · s_w, bias) (or the product without a bias) per vector, and the
// activation (but AVX512-VNNI's ReLU) as a pass over the group's rows (Elementwise::activation:
// the float linear's bits).
//
// Also the w8a32 linear's steps around the float product (generic::ProductInt8::linear_w8a32):
// convert_w8a32, a chunk of int8 weights to float, epilogue_w8a32, fma(acc, s_w, b) over a row, and
// product_w8a32_row, one row's product with each weight converted where it is used (on ymm in the
// avx2 variant, on zmm in the avx512 one; exact conversions and the float product's fma order: the
// generic loops' bits). And quantize_rows, the int8 attention's rows of each head (the linears'
// max|x|, absmax8 / absmax16, then cvtps2dq: generic::ProductInt8::quantize_row's bits, exactly k
// bytes written per row).
//
// Why a run-time check and not the variant's compile flags: the avx512 variant is compiled with
// -mavx512f only and runs on every AVX-512F CPU the dispatcher (simd/dispatch.hpp) finds; giving
// its translation unit -mavx512vnni would let GCC use VNNI (and BW) anywhere in it and require
// both from every CPU that runs the float kernels. So only the VNNI tiles carry the attribute
// target("avx512vnni"), and linear_w8a8 calls them when __builtin_cpu_supports says the CPU has
// it (constant true when the build's flags already promise it). kernels_detail::x86::int8_allow_vnni
// (product/select.hpp) turns VNNI off for the tests of the vpmaddwd code on CPUs that have VNNI.
//
// Compiles to nothing unless AVX2 and FMA, or AVX-512F, are enabled (the avx2 and avx512 variants' files).
#pragma once

#if defined(__x86_64__) && defined(__AVX2__) && (defined(__FMA__) || defined(__AVX512F__))
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/product/select.hpp>

namespace stf::kernels_detail::x86 {

/// The x86 w8a8 linear (see the file's comment); one per tag, so each variant has its own copy.
template <class Tag>
struct ProductInt8 {
  static constexpr index_t kTileRows = 6;
  /// Rows of the AVX512-VNNI tiles: 6 × 4 vectors of sums (24 registers, with the 4 weight vectors,
  /// the broadcast quad and the flip: 30 of 32).
  static constexpr index_t kVnniRows = 6;
  static constexpr index_t kGroup = kQuantizedRowGroup;
  /// AVX512-VNNI: the weight bytes from which a linear's panels' last tiles prefetch the next
  /// weights (see panels; a third of a 48 KB L1: smaller linears' weights stay in L1 between calls).
  static constexpr index_t kPrefetchWeightBytes = 16 * 1024;

  /// One register tile's operands: quantized rows (int8 or int16 elements, row stride ldq
  /// elements), their scales s and sums (VNNI), k-quads, the weights of the tile's first output
  /// (ldw bytes per quad: the panel's width · 4), n outputs from there, and where they go.
  struct Tile {
    const std::int8_t* q;
    index_t ldq;
    const float* s;
    const std::int32_t* sum;
    index_t quads;
    const std::int8_t* w;
    index_t ldw, n;
    const float* s_w;
    const float* bias;
    float* y;
    index_t ldy;
    bool relu = false;  ///< ReLU in the epilogue (the AVX512-VNNI tiles; the others leave it to a pass)
    /// AVX512-VNNI with unsigned activations (q + 128 in the rows): Σ_k w over the tile's outputs
    /// (the panel's quads, padding included), else null (signed activations, unsigned weights).
    const std::int32_t* colsum = nullptr;
    /// AVX512-VNNI: the next panel's weights (ldw bytes per quad as this one's), whose lines of each
    /// quad the tile prefetches into L1 with its own quad, or null.
    const std::int8_t* prefetch = nullptr;
  };

  // ---- AVX2 (both variants): int16 pairs by vpmaddwd -------------------------------------------
  static __m256i prefix8(index_t n) {  // int32 lanes < n all-ones (n may be 0)
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }

  /// a · b + c, one rounding: vfmadd on ymm, or where the flags have AVX-512F but not FMA (the
  /// avx512 variant built without -march) AVX-512F's on the low half of a zmm.
  static __m256 fma8(__m256 a, __m256 b, __m256 c) {
#if defined(__FMA__)
    return _mm256_fmadd_ps(a, b, c);
#else
    return _mm512_castps512_ps256(
        _mm512_fmadd_ps(_mm512_zextps256_ps512(a), _mm512_zextps256_ps512(b), _mm512_zextps256_ps512(c)));
#endif
  }

  /// max |x[i]| over n values (exact in any order), and whether all are finite (x · 0 is ±0 for a
  /// finite x, NaN for an infinity or a NaN).
  static float absmax8(const float* x, index_t n, bool& finite) {
    const __m256 sign = _mm256_set1_ps(-0.0f), zero = _mm256_setzero_ps();
    __m256 m = zero, bad = zero;
    index_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      m = _mm256_max_ps(_mm256_andnot_ps(sign, v), m);  // (a NaN lane keeps m; `bad` sees it)
      bad = _mm256_add_ps(bad, _mm256_mul_ps(v, zero));
    }
    if (i < n) {
      const __m256 v = _mm256_maskload_ps(x + i, prefix8(n - i));
      m = _mm256_max_ps(_mm256_andnot_ps(sign, v), m);
      bad = _mm256_add_ps(bad, _mm256_mul_ps(v, zero));
    }
    finite = _mm256_movemask_ps(_mm256_cmp_ps(bad, bad, _CMP_UNORD_Q)) == 0;
    const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    return _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
  }

  /// ref::quantize_row into int16 elements q[0, quantized_row_stride(n)) (zeros from n on).
  static float quantize_i16(const float* x, index_t n, std::int8_t* q) {
    bool finite = true;
    const float a = absmax8(x, n, finite);
    const index_t ld = quantized_row_stride(n);
    if (!finite || a < kMinQuantizedMax) {  // (a row of zeros among them)
      std::memset(q, 0, ld * 2);
      return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    }
    const __m256 inv = _mm256_set1_ps(127.0f / a);
    const __m256i hi = _mm256_set1_epi32(127), lo = _mm256_set1_epi32(-127);
    for (index_t i = 0; i < ld; i += 8) {
      const __m256 v = i + 8 <= n ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, prefix8(n > i ? n - i : 0));
      // (cvtps2dq: the default rounding mode, to nearest, ties to even)
      const __m256i qi = _mm256_max_epi32(_mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v, inv)), hi), lo);
      const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(qi, qi), 0x08);  // lanes 0-7 as int16
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 2 * i), _mm256_castsi256_si128(p));
    }
    return a / 127.0f;
  }

  /// R rows × up to 8 outputs: per k-quad, the 8 outputs' weights sign-extended into two int16
  /// vectors (4 outputs × 4 k each), each row's quad broadcast as four int16, two vpmaddwd.
  template <int R>
  static void tile_madd(const Tile& t) {
    __m256i acc[R][2];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    const bool full = t.n == 8;
    const __m128i m0 = _mm256_castsi256_si128(prefix8(t.n)), m1 = _mm256_extracti128_si256(prefix8(t.n), 1);
    const std::int8_t* wk = t.w;
    const std::int8_t* xk = t.q;
    for (index_t k = 0; k < t.quads; ++k, wk += t.ldw, xk += 2 * kQuadK) {
      __m128i w0, w1;
      if (full) {
        w0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wk));
        w1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wk + 16));
      } else {
        w0 = _mm_maskload_epi32(reinterpret_cast<const int*>(wk), m0);
        w1 = _mm_maskload_epi32(reinterpret_cast<const int*>(wk + 16), m1);
      }
      const __m256i a0 = _mm256_cvtepi8_epi16(w0), a1 = _mm256_cvtepi8_epi16(w1);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        long long quad;
        std::memcpy(&quad, xk + r * 2 * t.ldq, 8);
        const __m256i xb = _mm256_set1_epi64x(quad);
        acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(a0, xb));
        acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(a1, xb));
      }
    }
    // (the operands in locals: read through t, they would be reloaded after every store, the
    // vector stores' may-alias types reaching them)
    const float* const bias = t.bias;
    float* const y = t.y;
    const index_t ldy = t.ldy;
    float s[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) s[r] = t.s[r];
    const __m256i keep = prefix8(t.n);
    const __m256 sw = _mm256_maskload_ps(t.s_w, keep);
    const __m256 b = bias ? _mm256_maskload_ps(bias, keep) : _mm256_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      // lanes 2j, 2j + 1 of acc[r][h]: output 4h + j; vphaddd gives outputs 0 1 4 5 | 2 3 6 7
      const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8);
      const __m256 scale = _mm256_mul_ps(_mm256_set1_ps(s[r]), sw);
      const __m256 f = _mm256_cvtepi32_ps(sums);
      const __m256 v = bias ? fma8(f, scale, b) : _mm256_mul_ps(f, scale);
      if (full)
        _mm256_storeu_ps(y + r * ldy, v);
      else
        _mm256_maskstore_ps(y + r * ldy, keep, v);
    }
  }

  template <int R = 1>
  static void madd_rows(index_t rows, const Tile& t) {
    if constexpr (R < kTileRows) {
      if (rows > R) return madd_rows<R + 1>(rows, t);
    }
    tile_madd<R>(t);
  }

  // ---- AVX2 with AVX-VNNI (vpdpbusd on ymm; the avx2 variant, where the CPU has it) ---------------
  static bool avx_vnni() {
#if defined(__AVXVNNI__)
    return true;
#else
    return __builtin_cpu_supports("avxvnni");
#endif
  }

  /// ref::quantize_row into int8 elements q[0, quantized_row_stride(n)) (zeros from n on), and
  /// the sum of the row's q (8 lanes at a time).
  static float quantize_i8_256(const float* x, index_t n, std::int8_t* q, std::int32_t& sum) {
    bool finite = true;
    const float a = absmax8(x, n, finite);
    const index_t ld = quantized_row_stride(n);
    sum = 0;
    if (!finite || a < kMinQuantizedMax) {  // (a row of zeros among them)
      std::memset(q, 0, ld);
      return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    }
    const __m256 inv = _mm256_set1_ps(127.0f / a);
    const __m256i hi = _mm256_set1_epi32(127), lo = _mm256_set1_epi32(-127);
    __m256i total = _mm256_setzero_si256();
    for (index_t i = 0; i < ld; i += 8) {
      const __m256 v = i + 8 <= n ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, prefix8(n > i ? n - i : 0));
      // (cvtps2dq: the default rounding mode, to nearest, ties to even)
      const __m256i qi = _mm256_max_epi32(_mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v, inv)), hi), lo);
      total = _mm256_add_epi32(total, qi);
      const __m256i p16 = _mm256_packs_epi32(qi, qi);   // lanes 0-3 | 4-7 as int16, twice
      const __m256i p8 = _mm256_packs_epi16(p16, p16);  // as int8, four times
      const std::uint32_t b0 = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm256_castsi256_si128(p8)));
      const std::uint32_t b1 = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(p8, 1)));
      std::memcpy(q + i, &b0, 4);
      std::memcpy(q + i + 4, &b1, 4);
    }
    const __m128i t4 = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    const __m128i t2 = _mm_add_epi32(t4, _mm_shuffle_epi32(t4, 0x4E));
    sum = _mm_cvtsi128_si32(_mm_add_epi32(t2, _mm_shuffle_epi32(t2, 0xB1)));
    return a / 127.0f;
  }

  /// R rows × NV vectors of 8 outputs (the last holding n - 8·(NV - 1)), as tile_vnni on ymm.
  template <int R, int NV>
  [[gnu::target("avxvnni")]] static void tile_avx_vnni(const Tile& t) {
    __m256i acc[R][NV];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i) acc[r][i] = _mm256_setzero_si256();
    }
    const index_t tail = t.n - 8 * (NV - 1);
    const bool full = tail == 8;
    const __m256i last = prefix8(tail);
    const __m256i flip = _mm256_set1_epi32(static_cast<int>(0x80808080u));  // w + 128 as u8: w ^ 0x80
    const std::int8_t* wk = t.w;
    const std::int8_t* xk = t.q;
    for (index_t k = 0; k < t.quads; ++k, wk += t.ldw, xk += kQuadK) {
      __m256i wv[NV];
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i) {
        const __m256i w = i + 1 == NV && !full ? _mm256_maskload_epi32(reinterpret_cast<const int*>(wk + 32 * i), last)
                                               : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + 32 * i));
        wv[i] = _mm256_xor_si256(w, flip);
      }
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        std::int32_t quad;
        std::memcpy(&quad, xk + r * t.ldq, 4);
        const __m256i xb = _mm256_set1_epi32(quad);
#pragma GCC unroll 16
        for (int i = 0; i < NV; ++i) acc[r][i] = _mm256_dpbusd_avx_epi32(acc[r][i], wv[i], xb);
      }
    }
    // (the operands in locals: read through t, they would be reloaded after every store, the
    // vector stores' may-alias types reaching them)
    const float* const bias = t.bias;
    float* const y = t.y;
    const index_t ldy = t.ldy;
    float s[R];
    int offset[R];  // the 128·Σ q_x the unsigned weights added (modulo 2³², as the sums themselves)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      s[r] = t.s[r];
      offset[r] = static_cast<int>(static_cast<std::uint32_t>(t.sum[r]) * 128u);
    }
#pragma GCC unroll 16
    for (int i = 0; i < NV; ++i) {
      const bool partial = i + 1 == NV && !full;
      const __m256i keep = partial ? last : _mm256_set1_epi32(-1);
      const __m256 sw = _mm256_maskload_ps(t.s_w + 8 * i, keep);
      const __m256 b = bias ? _mm256_maskload_ps(bias + 8 * i, keep) : _mm256_setzero_ps();
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const __m256i sums = _mm256_sub_epi32(acc[r][i], _mm256_set1_epi32(offset[r]));
        const __m256 scale = _mm256_mul_ps(_mm256_set1_ps(s[r]), sw);
        const __m256 f = _mm256_cvtepi32_ps(sums);
        const __m256 v = bias ? fma8(f, scale, b) : _mm256_mul_ps(f, scale);
        if (partial)
          _mm256_maskstore_ps(y + r * ldy + 8 * i, keep, v);
        else
          _mm256_storeu_ps(y + r * ldy + 8 * i, v);
      }
    }
  }

  template <int R = 1>
  static void avx_vnni_rows(index_t rows, index_t nv, const Tile& t) {
    if constexpr (R < kTileRows) {
      if (rows > R) return avx_vnni_rows<R + 1>(rows, nv, t);
    }
    if (nv == 1)
      tile_avx_vnni<R, 1>(t);
    else
      tile_avx_vnni<R, 2>(t);
  }

#if defined(__AVX512F__)
  // ---- AVX-512 with VNNI: u8 · s8 quads by vpdpbusd ----------------------------------------------
  static bool vnni() {
#if defined(__AVX512VNNI__)
    return true;
#else
    return __builtin_cpu_supports("avx512vnni");
#endif
  }

  static __mmask16 prefix16(index_t n) { return n >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u); }

  /// max |x[i]| over n values and whether all are finite, on the bits: |x| as an int32 (x & 0x7FFFFFFF)
  /// orders as the float does for the non-negative values, and every infinity and NaN is above every
  /// finite value (0x7F800000 on); so the largest is max|x| when all are finite (exact: a maximum),
  /// and an infinity or a NaN otherwise. Two instructions a vector (and, max), not |x|'s max and a
  /// NaN check's multiply and add.
  static float absmax16(const float* x, index_t n, bool& finite) {
    const __m512i abs_bits = _mm512_set1_epi32(0x7FFFFFFF);
    __m512i m = _mm512_setzero_si512();
    index_t i = 0;
    for (; i + 16 <= n; i += 16) m = _mm512_max_epi32(m, _mm512_and_si512(_mm512_loadu_si512(x + i), abs_bits));
    if (i < n) m = _mm512_max_epi32(m, _mm512_and_si512(_mm512_maskz_loadu_epi32(prefix16(n - i), x + i), abs_bits));
    const std::int32_t bits = _mm512_reduce_max_epi32(m);
    finite = bits < 0x7F800000;
    float a;
    std::memcpy(&a, &bits, 4);
    return a;
  }

  /// ref::quantize_row over rows [0, n) of x (row stride in) into q (rows ld =
  /// quantized_row_stride(in) bytes apart; zeros from in on), scales s: as int8 with each row's sum
  /// (ux false), or unsigned, q + 128 as u8 (ux true; no sums). First every row's max|x|, then
  /// every row's values: independent rows between the reductions and the division, which one row
  /// at a time waited for. Without ref::quantize_row's clamp to ±127: every |x| ≤ a, so
  /// |x · fl(127 / a)| ≤ 127 · (1 + 2⁻²⁴) before its rounding, below 127.5 after it: cvtps2dq
  /// gives at most 127 in magnitude, the clamp's bits.
  /// (target avx512bw: vpackssdw, vpacksswb on zmm; only the AVX512-VNNI path calls it, and every
  /// CPU with AVX512-VNNI has AVX512-BW.)
  [[gnu::target("avx512bw")]] static void quantize_i8(const float* x, index_t in, index_t n, std::int8_t* q, float* s,
                                                      std::int32_t* sum, bool ux) {
    const index_t ld = quantized_row_stride(in), full = in / 16 * 16;
    float a[2 * kGroup];
    bool finite[2 * kGroup];
    for (index_t r = 0; r < n; ++r) a[r] = absmax16(x + r * in, in, finite[r]);
    const __m512i offset = _mm512_set1_epi32(ux ? 128 : 0);
    for (index_t r = 0; r < n; ++r) {
      const float* xr = x + r * in;
      std::int8_t* qr = q + r * ld;
      sum[r] = 0;
      if (!finite[r] || a[r] < kMinQuantizedMax) {  // (a row of zeros among them)
        std::memset(qr, ux ? 0x80 : 0, ld);
        s[r] = finite[r] ? 0.0f : std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      const __m512 inv = _mm512_set1_ps(127.0f / a[r]);
      __m512i total = _mm512_setzero_si512();
      // (cvtps2dq: the default rounding mode, to nearest, ties to even)
      auto one = [&](__m512 v, index_t i) {
        const __m512i qi = _mm512_cvtps_epi32(_mm512_mul_ps(v, inv));
        if (!ux) total = _mm512_add_epi32(total, qi);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + i), _mm512_cvtepi32_epi8(_mm512_add_epi32(qi, offset)));
      };
      index_t i = 0;
      // 64 values at a time: packed to int8 by vpackssdw, vpacksswb (in range: no saturation) and
      // one vpermd (the packs interleave the four vectors' 128-bit lanes), not a 2-uop vpmovdb each
      const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
      const __m512i flip_bytes = _mm512_set1_epi32(ux ? static_cast<int>(0x80808080u) : 0);  // q + 128: q ^ 0x80
      for (; i + 64 <= full; i += 64) {
        __m512i qi[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          qi[j] = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xr + i + 16 * j), inv));
          if (!ux) total = _mm512_add_epi32(total, qi[j]);
        }
        const __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(qi[0], qi[1]), _mm512_packs_epi32(qi[2], qi[3]));
        _mm512_storeu_si512(qr + i, _mm512_xor_si512(_mm512_permutexvar_epi32(order, b), flip_bytes));
      }
      for (; i < full; i += 16) one(_mm512_loadu_ps(xr + i), i);
      for (; i < ld; i += 16) one(_mm512_maskz_loadu_ps(prefix16(in > i ? in - i : 0), xr + i), i);
      if (!ux) sum[r] = _mm512_reduce_add_epi32(total);
      s[r] = a[r] / 127.0f;
    }
  }

  /// acc += the products of w's unsigned and x's signed bytes, a quad per int32 lane (vpdpbusd).
  /// In asm: GCC 12 copies every sum into a new register around the intrinsic's tied operand (a
  /// vmovdqa32 per vpdpbusd, some sums kept on the stack), on the ports vpdpbusd runs on.
  static void dpbusd(__m512i& acc, __m512i w, __m512i x) { asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(w), "v"(x)); }

  /// R rows × NV vectors of 16 outputs (the last holding n - 16·(NV - 1)). UX: the rows hold
  /// q + 128 (unsigned), the weights go in as they are (signed), and each output's sum then holds
  /// 128·Σ_k w[k, o] too (t.colsum), the sums' start value minus that; else the weights go in unsigned,
  /// w ^ 0x80 (an xor per weight vector and quad), and the sums start at minus the rows' 128·Σ q_x.
  template <int R, int NV, bool UX>
  [[gnu::target("avx512vnni")]] static void tile_vnni(const Tile& t) {
    // (the operands in locals: read through t, GCC reloaded them after every store of the epilogue)
    const index_t ldq = t.ldq, ldw = t.ldw, quads = t.quads, ldy = t.ldy;
    const float* const s_w = t.s_w;
    const float* const bias = t.bias;
    const bool relu = t.relu;
    float* const y = t.y;
    const __mmask16 last = prefix16(t.n - 16 * (NV - 1));
    // the sums start at minus the offset the unsigned operand adds (modulo 2³², as the sums
    // themselves): UX, -128·Σ_k w per output; else -128·Σ q_x per row
    __m512i acc[R][NV];
#pragma GCC unroll 16
    for (int i = 0; i < NV; ++i) {
      const __m512i col =
          UX ? _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(_mm512_loadu_si512(t.colsum + 16 * i), 7))
             : _mm512_setzero_si512();
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r)
        acc[r][i] = UX ? col : _mm512_set1_epi32(static_cast<int>(0u - static_cast<std::uint32_t>(t.sum[r]) * 128u));
    }
    const __m512i flip = _mm512_set1_epi32(static_cast<int>(0x80808080u));  // w + 128 as u8: w ^ 0x80
    const std::int8_t* wk = t.w;
    const std::int8_t* xk = t.q;
    const std::int8_t* pf = t.prefetch;  // (a test and a branch per quad where it is null)
    for (const std::int8_t* const end = t.q + quads * kQuadK; xk != end; wk += ldw, xk += kQuadK) {
      if (pf) {
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) _mm_prefetch(reinterpret_cast<const char*>(pf + 64 * i), _MM_HINT_T0);
        pf += ldw;
      }
      __m512i wv[NV];
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i) {
        wv[i] = i + 1 == NV ? _mm512_maskz_loadu_epi32(last, wk + 64 * i) : _mm512_loadu_si512(wk + 64 * i);
        if constexpr (!UX) wv[i] = _mm512_xor_si512(wv[i], flip);
      }
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        std::int32_t q;
        std::memcpy(&q, xk + r * ldq, 4);
        const __m512i xb = _mm512_set1_epi32(q);
#pragma GCC unroll 16
        for (int i = 0; i < NV; ++i) {
          if constexpr (UX)
            dpbusd(acc[r][i], xb, wv[i]);
          else
            dpbusd(acc[r][i], wv[i], xb);
        }
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < NV; ++i) {
      const __mmask16 keep = i + 1 == NV ? last : __mmask16(0xFFFF);
      const __m512 sw = _mm512_maskz_loadu_ps(keep, s_w + 16 * i);
      const __m512 b = bias ? _mm512_maskz_loadu_ps(keep, bias + 16 * i) : _mm512_setzero_ps();
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(t.s[r]), sw);
        const __m512 f = _mm512_cvtepi32_ps(acc[r][i]);
        __m512 v = bias ? _mm512_fmadd_ps(f, scale, b) : _mm512_mul_ps(f, scale);
        // simd_math::relu's bits: v where v > 0, else +0 (NaN: +0)
        if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v);
        _mm512_mask_storeu_ps(y + r * ldy + 16 * i, keep, v);
      }
    }
  }

  /// Σ_k w[k, o] over a panel's quads for its n outputs (padding quads' weights included), into
  /// colsum[0, 64): vpdpbusd of bytes 1 (unsigned) by the weights.
  [[gnu::target("avx512vnni")]] static void column_sums(const std::int8_t* w, index_t quads, index_t ldw, index_t n,
                                                        std::int32_t* colsum) {
    // three quads' sums at a time (vpdpbusd's latency is 5 cycles: one chain per vector would
    // wait for it), added at the end (modulo 2³², exact in any order)
    __m512i cs[3][4];
    for (auto& c : cs)
      for (auto& v : c) v = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi32(0x01010101);  // bytes 1
    const index_t nv = (n + 15) / 16;
    const __mmask16 last = prefix16(n - 16 * (nv - 1));
    auto quad = [&](__m512i(&c)[4], const std::int8_t* wk) {
#pragma GCC unroll 4
      for (index_t i = 0; i < 4; ++i)
        if (i < nv)
          dpbusd(c[i], ones,
                 i + 1 == nv ? _mm512_maskz_loadu_epi32(last, wk + 64 * i) : _mm512_loadu_si512(wk + 64 * i));
    };
    index_t k = 0;
    for (; k + 3 <= quads; k += 3, w += 3 * ldw) {
      quad(cs[0], w);
      quad(cs[1], w + ldw);
      quad(cs[2], w + 2 * ldw);
    }
    for (; k < quads; ++k, w += ldw) quad(cs[0], w);
    static_assert(kWeightPanel == 64, "a panel's outputs: 4 vectors of 16");
    for (index_t i = 0; i < 4; ++i)
      _mm512_storeu_si512(colsum + 16 * i, _mm512_add_epi32(_mm512_add_epi32(cs[0][i], cs[1][i]), cs[2][i]));
  }

  /// The tiles of run's groups: unsigned rows (t.colsum set) in the groups of 4 rows or more,
  /// whose tiles have 3 rows or more; signed rows in the others, tiles of up to 3 rows.
  template <int R, int NV>
  static void tile_vnni_rows(const Tile& t) {
    if constexpr (R > 3) return tile_vnni<R, NV, true>(t);
    if constexpr (R == 3)
      if (t.colsum) return tile_vnni<R, NV, true>(t);
    if constexpr (R <= 3) return tile_vnni<R, NV, false>(t);
  }

  template <int R>
  static void vnni_nv(index_t nv, const Tile& t) {
    switch (nv) {
      case 1:
        return tile_vnni_rows<R, 1>(t);
      case 2:
        return tile_vnni_rows<R, 2>(t);
      case 3:
        return tile_vnni_rows<R, 3>(t);
      default:
        return tile_vnni_rows<R, 4>(t);
    }
  }
  template <int R = 1>
  static void vnni_rows(index_t rows, index_t nv, const Tile& t) {
    if constexpr (R < kVnniRows) {
      if (rows > R) return vnni_rows<R + 1>(rows, nv, t);
    }
    vnni_nv<R>(nv, t);
  }
#endif

  // ---- the w8a32 linear's steps around the float product (ymm; the avx512 variant's on zmm) --------
  /// Byte j (0-3) of each int32 lane of q, sign-extended: shifted to the lane's top, then back
  /// arithmetically.
  template <int J>
  static __m256i byte_lanes(__m256i q) {
    return _mm256_srai_epi32(J == 3 ? q : _mm256_slli_epi32(q, 24 - 8 * J), 24);
  }

  /// The w8a32 linear's chunk conversion (generic::ProductInt8::linear_w8a32): `quads` whole k-quads
  /// of a weight panel `width` outputs wide (quad i's bytes at w + 4·width·i, output o's four at
  /// 4·o), outputs [0, cw), into sq[(4·i + j)·cw + o] = float(w[4·i + j][o]) (exact). Per 8 outputs
  /// and quad: one load of their 32 bytes (an int32 lane an output), each k's byte sign-extended in
  /// its lane by two shifts, vcvtdq2ps and a store; the last 1-7 outputs of a row one by one (the
  /// loop GCC vectorized from the generic code took 13 % of the w8a32 layer at 128×256×8×1024). The
  /// avx512 variant's: convert_w8a32_16.
  static void convert_w8a32(const std::int8_t* w, index_t width, index_t cw, index_t quads, float* sq) {
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<Tag, isa::avx512>) return convert_w8a32_16(w, width, cw, quads, sq);
#endif
    const index_t full = cw / 8 * 8;
    for (index_t i = 0; i < quads; ++i, w += 4 * width, sq += 4 * cw) {
      for (index_t o = 0; o < full; o += 8) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 4 * o));
        _mm256_storeu_ps(sq + o, _mm256_cvtepi32_ps(byte_lanes<0>(q)));
        _mm256_storeu_ps(sq + cw + o, _mm256_cvtepi32_ps(byte_lanes<1>(q)));
        _mm256_storeu_ps(sq + 2 * cw + o, _mm256_cvtepi32_ps(byte_lanes<2>(q)));
        _mm256_storeu_ps(sq + 3 * cw + o, _mm256_cvtepi32_ps(byte_lanes<3>(q)));
      }
      for (index_t o = full; o < cw; ++o)
        for (index_t j = 0; j < 4; ++j) sq[j * cw + o] = static_cast<float>(w[4 * o + j]);
    }
  }

#if defined(__AVX512F__)
  /// Byte j (0-3) of each int32 lane of q, sign-extended (byte_lanes on zmm).
  template <int J>
  static __m512i byte_lanes16(__m512i q) {
    return _mm512_srai_epi32(J == 3 ? q : _mm512_slli_epi32(q, 24 - 8 * J), 24);
  }

  /// convert_w8a32 on zmm (the avx512 variant): per 16 outputs and quad one load of their 64 bytes,
  /// each k's byte sign-extended by two shifts, vcvtdq2ps and a store; the last 1-15 outputs of a
  /// row masked. The same conversions (exact).
  static void convert_w8a32_16(const std::int8_t* w, index_t width, index_t cw, index_t quads, float* sq) {
    for (index_t i = 0; i < quads; ++i, w += 4 * width, sq += 4 * cw) {
      for (index_t o = 0; o < cw; o += 16) {
        const __mmask16 keep = prefix16(cw - o);
        const __m512i q = _mm512_maskz_loadu_epi32(keep, w + 4 * o);
        _mm512_mask_storeu_ps(sq + o, keep, _mm512_cvtepi32_ps(byte_lanes16<0>(q)));
        _mm512_mask_storeu_ps(sq + cw + o, keep, _mm512_cvtepi32_ps(byte_lanes16<1>(q)));
        _mm512_mask_storeu_ps(sq + 2 * cw + o, keep, _mm512_cvtepi32_ps(byte_lanes16<2>(q)));
        _mm512_mask_storeu_ps(sq + 3 * cw + o, keep, _mm512_cvtepi32_ps(byte_lanes16<3>(q)));
      }
    }
  }
#endif

  /// The k-quads of one row's w8a32 group (w8a32_row_group, w8a32_row_group16): per quad the G
  /// vectors of bytes load(w, g) gives, then step(q, x[k], j) for each k of the quad in order (a last
  /// quad's padding bytes not used).
  template <class Q, int G, class Load, class Step>
  [[gnu::always_inline]] static inline void w8a32_row_quads(const float* x, index_t in, const std::int8_t* wo,
                                                            index_t ldw, Load load, Step step) {
    const index_t whole_quads = in / kQuadK;
    const std::int8_t* w = wo;
    const float* xk = x;
    for (index_t i = 0; i < whole_quads; ++i, w += ldw, xk += kQuadK) {
      Q q[G];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) q[g] = load(w, g);
      step(q, xk[0], std::integral_constant<int, 0>{});
      step(q, xk[1], std::integral_constant<int, 1>{});
      step(q, xk[2], std::integral_constant<int, 2>{});
      step(q, xk[3], std::integral_constant<int, 3>{});
    }
    if (const index_t rem = in - whole_quads * kQuadK) {  // (the quad's padding bytes are not used)
      Q q[G];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) q[g] = load(w, g);
      step(q, xk[0], std::integral_constant<int, 0>{});
      if (rem > 1) step(q, xk[1], std::integral_constant<int, 1>{});
      if (rem > 2) step(q, xk[2], std::integral_constant<int, 2>{});
    }
  }

  /// G·8 outputs of product_w8a32_row from wo (their quads' bytes, ldw bytes per quad; the last
  /// group's outputs past `n` neither read nor stored): per quad one load of each group's 32 bytes,
  /// then per k the byte sign-extended by shifts, vcvtdq2ps and a vfmadd by x[k].
  template <int G>
  static void w8a32_row_group(const float* x, index_t in, const std::int8_t* wo, index_t ldw, index_t n, float* y) {
    __m256 acc[G];
    __m256i keep[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      acc[g] = _mm256_setzero_ps();
      const index_t lanes = n - 8 * g;
      keep[g] = prefix8(lanes < 8 ? lanes : 8);
    }
    const bool whole = n == 8 * G;
    auto load = [&](const std::int8_t* w, int g) {
      const auto* p = reinterpret_cast<const __m256i*>(w + 32 * g);
      return whole || g + 1 < G ? _mm256_loadu_si256(p)
                                : _mm256_maskload_epi32(reinterpret_cast<const int*>(p), keep[g]);
    };
    auto step = [&](const __m256i(&q)[G], float xk, auto j) {
      const __m256 xb = _mm256_set1_ps(xk);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[g] = fma8(xb, _mm256_cvtepi32_ps(byte_lanes<decltype(j)::value>(q[g])), acc[g]);
    };
    w8a32_row_quads<__m256i, G>(x, in, wo, ldw, load, step);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      if (whole || g + 1 < G)
        _mm256_storeu_ps(y + 8 * g, acc[g]);
      else
        _mm256_maskstore_ps(y + 8 * g, keep[g], acc[g]);
    }
  }

#if defined(__AVX512F__)
  /// w8a32_row_group on zmm (the avx512 variant): G·16 outputs, per quad one load of each group's 64
  /// bytes, per k the byte sign-extended by shifts, vcvtdq2ps and a vfmadd by x[k]: each shift,
  /// conversion and vfmadd for 16 outputs where the ymm group's take 8 (those, not the loads, bound
  /// the ymm loop). The same operations per output, so the same bits.
  template <int G>
  static void w8a32_row_group16(const float* x, index_t in, const std::int8_t* wo, index_t ldw, index_t n, float* y) {
    __m512 acc[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
    const __mmask16 last = prefix16(n - 16 * (G - 1));
    auto load = [&](const std::int8_t* w, int g) {
      return g + 1 < G ? _mm512_loadu_si512(w + 64 * g) : _mm512_maskz_loadu_epi32(last, w + 64 * g);
    };
    auto step = [&](const __m512i(&q)[G], float xk, auto j) {
      const __m512 xb = _mm512_set1_ps(xk);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g)
        acc[g] = _mm512_fmadd_ps(xb, _mm512_cvtepi32_ps(byte_lanes16<decltype(j)::value>(q[g])), acc[g]);
    };
    w8a32_row_quads<__m512i, G>(x, in, wo, ldw, load, step);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      if (g + 1 < G)
        _mm512_storeu_ps(y + 16 * g, acc[g]);
      else
        _mm512_mask_storeu_ps(y + 16 * g, last, acc[g]);
    }
  }
#endif

  /// One row of the w8a32 linear's product (generic::ProductInt8::linear_w8a32 with rows == 1, a
  /// decoding step): y[o] = the sum over k in order of fma(x[k], float(w[k, o]), ·) from +0, the
  /// float product's canonical order (its bits), each weight converted where it is used instead of
  /// into a chunk the product reads back: 32 outputs (four accumulators: their chains of four
  /// vfmadd per quad side by side) at a time, a panel's last 1-31 outputs by one to four, the last
  /// 1-7 lanes masked; on zmm (the avx512 variant) a whole panel, 64 outputs, at a time, a last
  /// narrower panel by one to four vectors of 16, the last masked.
  static void product_w8a32_row(const float* x, index_t in, const std::int8_t* qw, index_t out, float* y) {
    const index_t in4 = quad_padded(in);
    for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
      const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
      const std::int8_t* wp = qw + p0 * in4;
      const index_t ldw = width * kQuadK;
#if defined(__AVX512F__)
      if constexpr (std::is_same_v<Tag, isa::avx512>) {
        static_assert(kWeightPanel == 64, "a panel's outputs: 4 vectors of 16");
        if (width > 48)
          w8a32_row_group16<4>(x, in, wp, ldw, width, y + p0);
        else if (width > 32)
          w8a32_row_group16<3>(x, in, wp, ldw, width, y + p0);
        else if (width > 16)
          w8a32_row_group16<2>(x, in, wp, ldw, width, y + p0);
        else
          w8a32_row_group16<1>(x, in, wp, ldw, width, y + p0);
        continue;
      }
#endif
      index_t o = 0;
      for (; o + 32 <= width; o += 32) w8a32_row_group<4>(x, in, wp + kQuadK * o, ldw, 32, y + p0 + o);
      const index_t n = width - o;
      if (n > 24)
        w8a32_row_group<4>(x, in, wp + kQuadK * o, ldw, n, y + p0 + o);
      else if (n > 16)
        w8a32_row_group<3>(x, in, wp + kQuadK * o, ldw, n, y + p0 + o);
      else if (n > 8)
        w8a32_row_group<2>(x, in, wp + kQuadK * o, ldw, n, y + p0 + o);
      else if (n > 0)
        w8a32_row_group<1>(x, in, wp + kQuadK * o, ldw, n, y + p0 + o);
    }
  }

  /// The w8a32 linear's epilogue over one row (generic::ProductInt8::w8a32_epilogue before its
  /// activation): y = fma(acc, s_w, bias) (one rounding, the scalar bits), acc · s_w without a bias,
  /// 8 outputs at a time, the last 1-7 masked.
  static void epilogue_w8a32(float* y, const float* s_w, const float* bias, index_t out) {
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<Tag, isa::avx512>) {  // (on zmm: 16 outputs at a time, the last 1-15 masked)
      for (index_t o = 0; o < out; o += 16) {
        const __mmask16 keep = prefix16(out - o);
        const __m512 acc = _mm512_maskz_loadu_ps(keep, y + o), s = _mm512_maskz_loadu_ps(keep, s_w + o);
        const __m512 v = bias ? _mm512_fmadd_ps(acc, s, _mm512_maskz_loadu_ps(keep, bias + o)) : _mm512_mul_ps(acc, s);
        _mm512_mask_storeu_ps(y + o, keep, v);
      }
      return;
    }
#endif
    for (index_t o = 0; o < out; o += 8) {
      const bool whole = out - o >= 8;
      const __m256i keep = prefix8(whole ? 8 : out - o);
      const __m256 acc = whole ? _mm256_loadu_ps(y + o) : _mm256_maskload_ps(y + o, keep);
      const __m256 s = whole ? _mm256_loadu_ps(s_w + o) : _mm256_maskload_ps(s_w + o, keep);
      __m256 v;
      if (bias)
        v = fma8(acc, s, whole ? _mm256_loadu_ps(bias + o) : _mm256_maskload_ps(bias + o, keep));
      else
        v = _mm256_mul_ps(acc, s);
      if (whole)
        _mm256_storeu_ps(y + o, v);
      else
        _mm256_maskstore_ps(y + o, keep, v);
    }
  }

  // ---- the int8 attention's rows: quantize_rows (ymm; the avx512 variant's on zmm) ----------------
  /// max |x[i]| over n values and whether all are finite: absmax16 in the avx512 variant, absmax8
  /// in the avx2 one (either is generic::ProductInt8::quantize_row's maximum where the row is finite).
  static float absmax(const float* x, index_t n, bool& finite) {
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<Tag, isa::avx512>) return absmax16(x, n, finite);
#endif
    return absmax8(x, n, finite);
  }

  /// q[0, k) = x · inv rounded to nearest, ties to even (cvtps2dq in the default rounding mode: the
  /// add-subtract of 1.5·2²³'s bits for |x · inv| ≤ 127.5), exactly k bytes.
  static void quantize_values(const float* x, index_t k, float inv, std::int8_t* q) {
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<Tag, isa::avx512>) {
      const __m512 vi = _mm512_set1_ps(inv);
      for (index_t i = 0; i < k; i += 16) {
        const __mmask16 keep = prefix16(k - i);
        // (vpmovdb to memory under the mask: AVX-512F, the bytes from k on not written)
        _mm512_mask_cvtepi32_storeu_epi8(q + i, keep,
                                         _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(keep, x + i), vi)));
      }
      return;
    }
#endif
    const __m256 vi = _mm256_set1_ps(inv);
    for (index_t i = 0; i < k; i += 8) {
      const bool whole = i + 8 <= k;
      const __m256 v = whole ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, prefix8(k - i));
      const __m256i qi = _mm256_cvtps_epi32(_mm256_mul_ps(v, vi));
      const __m256i p16 = _mm256_packs_epi32(qi, qi);   // lanes 0-3 | 4-7 as int16, twice (in range)
      const __m256i p8 = _mm256_packs_epi16(p16, p16);  // as int8, four times
      const auto lo = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm256_castsi256_si128(p8)));
      const auto hi = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(p8, 1)));
      const std::uint64_t bytes = lo | (static_cast<std::uint64_t>(hi) << 32);
      if (whole) {
        std::memcpy(q + i, &bytes, 8);
      } else {
        const index_t c = k - i;  // 1-7 bytes, as pieces of fixed size
        index_t o = 0;
        if (c & 4) std::memcpy(q + i, &lo, 4), o = 4;
        if (c & 2) {
          const auto t = static_cast<std::uint16_t>(bytes >> (8 * o));
          std::memcpy(q + i + o, &t, 2);
          o += 2;
        }
        if (c & 1) q[i + o] = static_cast<std::int8_t>(bytes >> (8 * o));
      }
    }
  }

  /// Kernels::quantize_rows (kernels/api.hpp): generic::ProductInt8::quantize_row(x_r, k, q_r, false)
  /// over each row: rows ldx floats apart, exactly k bytes of each ldq-byte row written (the
  /// attention's heads side by side), the scales in s. In batches of 8 rows, first their max|x|,
  /// then their values: independent rows between a reduction and the division that waits for it.
  static void quantize_rows(const float* x, index_t ldx, index_t rows, index_t k, std::int8_t* q, index_t ldq,
                            float* s) {
    constexpr index_t kBatch = 8;
    for (index_t r0 = 0; r0 < rows; r0 += kBatch) {
      const index_t n = rows - r0 < kBatch ? rows - r0 : kBatch;
      float a[kBatch];
      bool finite[kBatch];
      for (index_t r = 0; r < n; ++r) a[r] = absmax(x + (r0 + r) * ldx, k, finite[r]);
      for (index_t r = 0; r < n; ++r) {
        std::int8_t* qr = q + (r0 + r) * ldq;
        if (!finite[r] || a[r] < kMinQuantizedMax) {  // (a row of zeros among them)
          std::memset(qr, 0, k);
          s[r0 + r] = finite[r] ? 0.0f : std::numeric_limits<float>::quiet_NaN();
          continue;
        }
        // |x| ≤ a, so |x · (127 / a)| ≤ 127 · (1 + 2⁻²⁴)², which rounds to at most 127: no clamp
        quantize_values(x + (r0 + r) * ldx, k, 127.0f / a[r], qr);
        s[r0 + r] = a[r] / 127.0f;
      }
    }
  }

  // ---- the walk ----------------------------------------------------------------------------------
  /// The kernels a call runs: int16 pairs (vpmaddwd), u8 · s8 quads on ymm (AVX-VNNI) or on zmm
  /// (AVX512-VNNI).
  enum class Path { madd, avx_vnni, avx512_vnni };

  template <Path P>
  static void run(const float* x, index_t rows, index_t in, const W8a8Linear* linears, index_t count,
                  std::int8_t* scratch) {
    const index_t in4 = quad_padded(in), ld = quantized_row_stride(in);
    constexpr index_t kBytes = P == Path::madd ? 2 : 1;  // per quantized element
    // Rows quantized at a time: the scratch holds min(rows, kGroup) rows of 2-byte elements, so
    // twice as many of AVX512-VNNI's 1-byte ones (each weight panel read half as often; its tiles
    // read the panel whole, 6 rows at a time). (AVX-VNNI's tiles of 16 outputs run over the
    // group's rows per 16 outputs: 128x512x2048 was 4% slower with 48 rows.)
    constexpr index_t group = P == Path::avx512_vnni ? 2 * kGroup : kGroup;
    // (not cleared: each group's rows [0, n) are written before they are read; cleared, the two
    // arrays cost a rep stosq per call)
    float s[group];
    std::int32_t sum[group];
    for (index_t r0 = 0, n = 0; r0 < rows; r0 += n) {
      // (groups as even as they go: 25 rows as 13 + 12, not 24 + 1, whose one row would be a tile
      // of its own)
      n = even_part(rows - r0, group);
      // AVX512-VNNI: unsigned rows (and the panels' column sums) from 4 rows on, see tile_vnni
      const bool ux = P == Path::avx512_vnni && n >= 4;
      if constexpr (P == Path::avx512_vnni) {
#if defined(__AVX512F__)
        quantize_i8(x + r0 * in, in, n, scratch, s, sum, ux);
#endif
      } else {
        for (index_t r = 0; r < n; ++r) {
          const float* xr = x + (r0 + r) * in;
          std::int8_t* qr = scratch + r * ld * kBytes;
          if constexpr (P == Path::madd) s[r] = quantize_i16(xr, in, qr);
          if constexpr (P == Path::avx_vnni) s[r] = quantize_i8_256(xr, in, qr, sum[r]);
        }
      }
      for (index_t l = 0; l < count; ++l) {  // (the group's quantized rows serve every linear)
        // the weights read after this linear's (AVX512-VNNI prefetches them, see panels)
        const std::int8_t* next = l + 1 < count ? linears[l + 1].qw : r0 + n < rows ? linears[0].qw : nullptr;
        panels<P>(linears[l], r0, n, in4, ld, ux, scratch, s, sum, next);
      }
    }
  }

  /// The products of one linear with the quantized rows [r0, r0 + n) of a call (run), its epilogue
  /// and activation.
  template <Path P>
  static void panels(const W8a8Linear& L, index_t r0, index_t n, index_t in4, index_t ld, bool ux, std::int8_t* scratch,
                     float* s, std::int32_t* sum, const std::int8_t* next) {
    (void)ux, (void)next;                                // (avx2)
    constexpr index_t kBytes = P == Path::madd ? 2 : 1;  // per quantized element
    const index_t quads = in4 / kQuadK, out = L.out;
    const std::int8_t* qw = L.qw;
    const float *s_w = L.s_w, *bias = L.bias;
    float* y = L.y;
    const Fuse act = L.act;
    // ReLU in the AVX512-VNNI tiles' epilogue; any other activation as a pass over the rows
    const bool fused_relu = P == Path::avx512_vnni && act == Fuse::relu;
    for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
      const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
      const std::int8_t* wp = qw + p0 * in4;
      // the register tile of the group's rows from r
      auto tile = [&](index_t r) {
        return Tile{scratch + r * ld * kBytes,
                    ld,
                    s + r,
                    sum + r,
                    quads,
                    wp,
                    width * kQuadK,
                    width,
                    s_w + p0,
                    bias ? bias + p0 : nullptr,
                    y + (r0 + r) * out + p0,
                    out,
                    fused_relu};
      };
#if defined(__AVX512F__)
      if constexpr (P == Path::avx512_vnni) {
        const bool prefetch = in4 * out >= kPrefetchWeightBytes;
        alignas(64) std::int32_t colsum[kWeightPanel];
        if (ux) column_sums(wp, quads, width * kQuadK, width, colsum);
        // ceil(n / kVnniRows) tiles of as even a number of rows as they can have (a group of
        // 32 rows: 6 6 5 5 5 5, not 6 6 6 6 6 2: each tile reads the panel's weights once)
        for (index_t r = 0, tr = 0; r < n; r += tr) {
          tr = even_part(n - r, kVnniRows);
          Tile t = tile(r);
          t.colsum = ux ? colsum : nullptr;
          // the panel's last tile brings the next weights into L1 (each panel's first pass, the
          // column sums, waited for them: 7 % of a 128x512x2048 linear); not where the weights
          // are few enough to stay in L1 (there the prefetches only cost: the 16x32 w8a8 layer
          // takes 0.96× the time without them)
          if (r + tr == n && prefetch) t.prefetch = p0 + kWeightPanel < out ? wp + kWeightPanel * in4 : next;
          vnni_rows(tr, (width + 15) / 16, t);
        }
        continue;
      }
#endif
      // (tiles as even as they go, as above: a group of 16 rows as 6 5 5, not 6 6 4)
      for (index_t r = 0, tr = 0; r < n; r += tr) {
        tr = even_part(n - r, kTileRows);
        const Tile t = tile(r);
        constexpr index_t step = P == Path::madd ? 8 : 16;  // outputs of a tile
        for (index_t o = 0; o < width; o += step) {
          Tile to = t;
          to.w = wp + o * kQuadK;
          to.n = width - o < step ? width - o : step;
          to.s_w = s_w + p0 + o;
          to.bias = bias ? bias + p0 + o : nullptr;
          to.y = t.y + o;
          if constexpr (P == Path::madd)
            madd_rows(tr, to);
          else
            avx_vnni_rows(tr, (to.n + 7) / 8, to);
        }
      }
    }
    if (act != Fuse::none && !fused_relu)
      for (index_t r = 0; r < n; ++r)
        generic::Elementwise<Tag>::activation(activation_of(act), y + (r0 + r) * out, out);
  }

  /// Kernels::linears_w8a8 (kernels/api.hpp).
  static void linears_w8a8(const float* x, index_t rows, index_t in, const W8a8Linear* linears, index_t count,
                           std::int8_t* scratch) {
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<Tag, isa::avx512>) {
      if (int8_allow_vnni && vnni()) return run<Path::avx512_vnni>(x, rows, in, linears, count, scratch);
    }
#endif
    if constexpr (std::is_same_v<Tag, isa::avx2>) {
      if (int8_allow_vnni && avx_vnni()) return run<Path::avx_vnni>(x, rows, in, linears, count, scratch);
    }
    run<Path::madd>(x, rows, in, linears, count, scratch);
  }
};

}  // namespace stf::kernels_detail::x86
#endif
