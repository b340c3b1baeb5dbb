// statiformer — attention on Arm NEON (aarch64; armv7-a with NEON and VFPv4), part: the int8 number
// format (kernels/QUANTIZATION.md, "Attention"). The w8a8 attention of the neon variant (selected by
// kernels/attention/select.hpp's AttentionInt8Select; the generic one, and the fallback of the calls
// this one declines, is kernels/attention/int8.hpp), the rows of a call (up to kAttentionCallRows)
// together over each block of keys, so that they share the block's K and V loads:
//  - Q·Kᵀ: the rows' queries copied once into 16-byte rows (zeros past head_dim); per key and 16
//    dimensions one K load serves every row (aarch64: four keys at a time with sdot, two with smull,
//    one Q load for them, their sums reduced by pairwise adds): `sdot` (vdotq_s32) where the target has the dot product
//    extension (__ARM_FEATURE_DOTPROD), else `smull` + `smlal` + `sadalp` (exact: each int16 lane
//    holds two products, 2 · 127² < 2¹⁵, q and k being quantize_row's, within ±127, as the int8
//    linear's, kernels/product/neon_int8.hpp);
//  - P·V: sdot: the block's values transposed once into key quads (4 dimensions × 4 keys a vector),
//    then per row, key quad and 4 dimensions one `sdot` by lane (vdotq_laneq_s32) against the row's
//    quantized weights; else per key and 8 dimensions the values widened once (`sxtl`) and per row
//    one `smlal` by lane of the row's weight (the rows' weights of a key as int16 lanes);
//  - the float part of each block (the scores' scale and mask, the maximum, exp, the canonical sum,
//    p · s_v, quantize_row, fma into the output, the final division) is the generic code's, the
//    same operations in the same order per row, through Kernels<Tag>'s exp, sum and quantize_rows
//    (a block whose allowed keys are a prefix with nothing added: on those keys only, without the
//    mask's tests; exp_shifted(p, nb, m) is exp(p − m), the difference taken first: ref's bits;
//    declared in kernels/api.hpp and defined in the library, so that the +dotprod test translation
//    unit does not instantiate float code of its own); the fma into the output per vector on aarch64 (IEEE) and in
//    scalar VFP on armv7 (its NEON flushes denormals). The keys from the call's largest key end on
//    are not read (their weights are 0 in every row), and a masked key's weight is 0.
// Integer sums are exact in any order: the bits are ref::attention_row_w8a8's. It declines (the
// generic code runs the call) a head_dim that is not a multiple of 8 or above kMaxHeadDim, and no keys.
//
// Guest instructions executed under qemu (-d in_asm,exec,nochain, counted; GCC 12 -O3; not hardware
// time, no NEON hardware was at hand), one call of 6 rows × 128 keys with prefix masks, generic →
// this: aarch64 head_dim 16: 87,244 → 48,940, 64: 142,994 → 76,766; aarch64 +dotprod 16: 83,466 →
// 45,151, 64: 127,913 → 59,029; armv7 16: 170,128 → 103,910, 64: 262,266 → 147,945. Of aarch64's
// 79,306 at head_dim 64 (before the last two changes) about 30,000 were the float part (the generic
// code's operations: row_weights, exp, quantize_rows, sum), the rest the int32 sums (and the copies
// of Q and the weights).
//
// The two ways of summing are a template parameter (AttentionInt8<Tag, kSdot>), not a compile-time
// branch on the build's flags, for the reason of the int8 linear's tiles: the kernel tests compile
// one translation unit with +dotprod (tests/unit/int8_neon_dotprod.cpp) so that the sdot code runs
// under qemu whatever the build's flags, and AttentionInt8<neon, true> exists only there (and in
// builds with +dotprod), never as a second copy of the class the library runs.
//
// Compiles to nothing unless NEON is enabled with aarch64 or VFPv4's fused multiply-add (the
// targets of the neon variant, kernels/registry.hpp).
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>

#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
#include <arm_neon.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

namespace stf::kernels_detail::neon {

/// The NEON w8a8 attention (see the file's comment); kSdot: the dot product instructions (only
/// where the translation unit has __ARM_FEATURE_DOTPROD).
template <class Tag, bool kSdot>
struct AttentionInt8 {
#if !defined(__ARM_FEATURE_DOTPROD)
  static_assert(!kSdot, "AttentionInt8<Tag, true> needs the dot product extension (+dotprod)");
#endif
  using K = Kernels<Tag>;
  static constexpr index_t kRows = 6;  ///< rows at a time (kAttentionCallRows on NEON)
  static constexpr index_t kBlock = kAttentionKeyBlock;
  static_assert(kBlock == 32, "a block's weights are two 16-byte vectors per row");
  static constexpr index_t kMaxHeadDim = 256;  ///< (the queries and the transposed values on the stack)

  /// acc + the four int32 sums of a · b over each lane's 4 bytes (sdot), or of the whole 16 bytes
  /// in some lanes (smull, smlal, sadalp): a dot product is the sum of the lanes either way.
  static int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
    if constexpr (kSdot) {
#if defined(__ARM_FEATURE_DOTPROD)
      return vdotq_s32(acc, a, b);
#endif
    }
#if defined(__aarch64__)
    const int16x8_t t = vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(b)), a, b);  // (smlal2: no high-half moves)
#else
    const int16x8_t t = vmlal_s8(vmull_s8(vget_low_s8(a), vget_low_s8(b)), vget_high_s8(a), vget_high_s8(b));
#endif
    return vpadalq_s16(acc, t);
  }

  static std::int32_t lanes_sum(int32x4_t a) {
#if defined(__aarch64__)
    return vaddvq_s32(a);
#else
    const int32x2_t s = vadd_s32(vget_low_s32(a), vget_high_s32(a));
    return vget_lane_s32(vpadd_s32(s, s), 0);
#endif
  }

  /// The int32 scores of R rows (queries qx: row r at qx[r], head_dim rounded up to 16, zeros past
  /// head_dim) with keys [0, n) of k, into sc[r][j].
  template <int R>
  static void scores(const std::int8_t (*qx)[kMaxHeadDim], index_t head_dim, const std::int8_t* k, index_t k_stride,
                     index_t n, std::int32_t (*sc)[kBlock]) {
    const index_t d16 = head_dim / 16 * 16;
    index_t j = 0;
#if defined(__aarch64__)
    // kKeys keys at a time (aarch64's 32 registers: kKeys · R sums; sdot 4, smull 2, whose int16
    // products take registers too): one Q load for the keys, and the sums of a row's keys reduced
    // into one vector by pairwise adds
    constexpr index_t kKeys = kSdot ? 4 : 2;
    for (; j + kKeys <= n; j += kKeys) {
      const std::int8_t* kj = k + j * k_stride;
      int32x4_t acc[R][kKeys];
      for (int r = 0; r < R; ++r)
        for (index_t t = 0; t < kKeys; ++t) acc[r][t] = vdupq_n_s32(0);
      for (index_t d = 0; d < head_dim; d += 16) {
        int8x16_t kv[kKeys];
        if (d < d16) {
          for (index_t t = 0; t < kKeys; ++t) kv[t] = vld1q_s8(kj + t * k_stride + d);
        } else {  // (8 more: head_dim is a multiple of 8)
          for (index_t t = 0; t < kKeys; ++t) kv[t] = vcombine_s8(vld1_s8(kj + t * k_stride + d), vdup_n_s8(0));
        }
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
          const int8x16_t qv = vld1q_s8(qx[r] + d);
          for (index_t t = 0; t < kKeys; ++t) acc[r][t] = dot16(acc[r][t], qv, kv[t]);
        }
      }
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        if constexpr (kKeys == 4) {
          vst1q_s32(sc[r] + j, vpaddq_s32(vpaddq_s32(acc[r][0], acc[r][1]), vpaddq_s32(acc[r][2], acc[r][3])));
        } else {
          const int32x4_t x = vpaddq_s32(acc[r][0], acc[r][1]);
          vst1_s32(sc[r] + j, vget_low_s32(vpaddq_s32(x, x)));
        }
      }
    }
#endif
    for (; j < n; ++j) {
      const std::int8_t* kj = k + j * k_stride;
      int32x4_t acc[R];
      for (int r = 0; r < R; ++r) acc[r] = vdupq_n_s32(0);
      for (index_t d = 0; d < d16; d += 16) {
        const int8x16_t kv = vld1q_s8(kj + d);
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) acc[r] = dot16(acc[r], vld1q_s8(qx[r] + d), kv);
      }
      if (d16 < head_dim) {  // (8 more: head_dim is a multiple of 8)
        const int8x16_t kv = vcombine_s8(vld1_s8(kj + d16), vdup_n_s8(0));
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) acc[r] = dot16(acc[r], vld1q_s8(qx[r] + d16), kv);
      }
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) sc[r][j] = lanes_sum(acc[r]);
    }
  }

  /// acc + v · (lane r of the rows' weights: rows 0-3 in lo, 4-7 in hi).
  template <int r>
  static int32x4_t mla_row(int32x4_t acc, int16x4_t v, int16x4_t lo, int16x4_t hi) {
    if constexpr (r < 4)
      return vmlal_lane_s16(acc, v, lo, r);
    else
      return vmlal_lane_s16(acc, v, hi, r - 4);
  }

  /// The P·V sums of R rows over keys [0, n) of the block's values vb (row stride v_stride) and 8
  /// dimensions from d: lo[r] dimensions d..d+3, hi[r] d+4..d+7; wx[j]: key j's weights of the rows
  /// as int16 (8 lanes).
  template <int R>
  static void values_widened(const std::int16_t (*wx)[8], const std::int8_t* vb, index_t v_stride, index_t n,
                             int32x4_t* lo, int32x4_t* hi) {
    // (the sums in locals, written out at the end: through the pointers GCC stored them every key)
    int32x4_t a[R], b[R];
    for (int r = 0; r < R; ++r) a[r] = b[r] = vdupq_n_s32(0);
    for (index_t j = 0; j < n; ++j) {
      const int16x8_t v16 = vmovl_s8(vld1_s8(vb + j * v_stride));
      const int16x4_t vl = vget_low_s16(v16), vh = vget_high_s16(v16);
      const int16x4_t wl = vld1_s16(wx[j]), wh = vld1_s16(wx[j] + 4);
      [&]<int... I>(std::integer_sequence<int, I...>) {
        ((a[I] = mla_row<I>(a[I], vl, wl, wh), b[I] = mla_row<I>(b[I], vh, wl, wh)), ...);
      }
      (std::make_integer_sequence<int, R>{});
    }
    for (int r = 0; r < R; ++r) lo[r] = a[r], hi[r] = b[r];
  }

#if defined(__ARM_FEATURE_DOTPROD)
  /// P·V with sdot: the block's values vb (keys [0, n), row stride v_stride) transposed into key
  /// quads, vt[kq][4d + t] = v[4kq + t][d] (zeros for keys ≥ n, up to 16 keys, and dimensions ≥
  /// head_dim, up to 16), then per 8 dimensions, key quad and row two `sdot` by lane against the
  /// row's weights (qw[r], zeros for rows without keys in the block and keys ≥ n), into the outputs.
  template <int R>
  static void values_sdot(const std::int8_t (*qw)[kBlock], const bool* any, const std::int8_t* vb, index_t v_stride,
                          index_t n, index_t head_dim, const float* s_b, float* out, index_t out_stride) {
    constexpr index_t kVt = kMaxHeadDim * 4;
    alignas(16) std::int8_t vt[kBlock / 4][kVt];
    const index_t n16 = (n + 15) / 16;  // 16 keys (4 quads) a weight vector
    const index_t d16 = (head_dim + 15) / 16 * 16;
    const int8x16_t zero = vdupq_n_s8(0);
    for (index_t kq = 0; kq < 4 * n16; ++kq)
      for (index_t d = 0; d < d16; d += 16) {
        int8x16_t x[4];
        for (index_t t = 0; t < 4; ++t) {
          const index_t j = 4 * kq + t;
          const std::int8_t* src = vb + j * v_stride + d;
          x[t] = j >= n ? zero : d + 16 <= head_dim ? vld1q_s8(src) : vcombine_s8(vld1_s8(src), vdup_n_s8(0));
        }
        const int8x16_t a = vzip1q_s8(x[0], x[1]), b = vzip2q_s8(x[0], x[1]);
        const int8x16_t c = vzip1q_s8(x[2], x[3]), e = vzip2q_s8(x[2], x[3]);
        std::int8_t* o = vt[kq] + 4 * d;
        vst1q_s8(o, vreinterpretq_s8_s16(vzip1q_s16(vreinterpretq_s16_s8(a), vreinterpretq_s16_s8(c))));
        vst1q_s8(o + 16, vreinterpretq_s8_s16(vzip2q_s16(vreinterpretq_s16_s8(a), vreinterpretq_s16_s8(c))));
        vst1q_s8(o + 32, vreinterpretq_s8_s16(vzip1q_s16(vreinterpretq_s16_s8(b), vreinterpretq_s16_s8(e))));
        vst1q_s8(o + 48, vreinterpretq_s8_s16(vzip2q_s16(vreinterpretq_s16_s8(b), vreinterpretq_s16_s8(e))));
      }
    // the rows' weights, zeros past n (and for a row without keys in the block)
    alignas(16) std::int8_t wq[R][kBlock];
    for (int r = 0; r < R; ++r)
      for (index_t j = 0; j < kBlock; ++j) wq[r][j] = any[r] && j < n ? qw[r][j] : 0;
    for (index_t d0 = 0; d0 < head_dim; d0 += 8) {
      int32x4_t lo[R], hi[R];
      for (int r = 0; r < R; ++r) lo[r] = hi[r] = vdupq_n_s32(0);
      for (index_t c = 0; c < n16; ++c) {
        int8x16_t w[R];
        for (int r = 0; r < R; ++r) w[r] = vld1q_s8(wq[r] + 16 * c);
        [&]<int... T>(std::integer_sequence<int, T...>) {
          (
              [&] {
                const std::int8_t* src = vt[4 * c + T] + 4 * d0;
                const int8x16_t v0 = vld1q_s8(src), v1 = vld1q_s8(src + 16);
#pragma GCC unroll 6
                for (int r = 0; r < R; ++r) {
                  lo[r] = vdotq_laneq_s32(lo[r], v0, w[r], T);
                  hi[r] = vdotq_laneq_s32(hi[r], v1, w[r], T);
                }
              }(),
              ...);
        }
        (std::make_integer_sequence<int, 4>{});
      }
      for (int r = 0; r < R; ++r)
        if (any[r]) {
          float* o = out + r * out_stride + d0;
          fma4(o, lo[r], s_b[r]);
          fma4(o + 4, hi[r], s_b[r]);
        }
    }
  }
#endif

  /// o[0, 4) = fma(float(acc), s, o) per lane (aarch64: vector, IEEE; armv7: scalar VFP).
  static void fma4(float* o, int32x4_t acc, float s) {
#if defined(__aarch64__)
    vst1q_f32(o, vfmaq_f32(vld1q_f32(o), vcvtq_f32_s32(acc), vdupq_n_f32(s)));
#else
    std::int32_t a[4];
    vst1q_s32(a, acc);
    for (int i = 0; i < 4; ++i) o[i] = std::fma(static_cast<float>(a[i]), s, o[i]);
#endif
  }

  /// One row's float part of a block (the generic code's steps 1-3): from its int32 scores sc[0, nb)
  /// (those of the keys it allows), the running maximum m, sum l and output o, into the block's
  /// quantized weights qw[0, nb) and their scale s_b. false: no key of the block allowed (nothing
  /// changed).
  static bool row_weights(const std::int32_t* sc, const ref::RowMask& mask, index_t kb, float sq, const float* s_k,
                          const float* s_v, index_t nb, float scale, index_t head_dim, bool seen, float& m, float& l,
                          float* o, std::int8_t* qw, float& s_b) {
    // (s_k and s_v from the block's first key, kb; the mask's keys kb + i)
    alignas(16) float p[kBlock];
    // the factor exp(m − m_new) of what came before, into l and o
    const auto rescale = [&](float m_new) {
      if (!seen) return;
      float c = m - m_new;  // (exp_shifted(c, 0): exp(c − 0), and c − 0 is c)
      K::exp(&c, &c, 1);
      l = l * c;
      for (index_t d = 0; d < head_dim; ++d) o[d] = o[d] * c;
    };
    if (mask.prefix()) {
      // the keys [0, e) of the block allowed, nothing added: the same operations on them without the
      // mask's tests (exp is per element; the canonical sum over the block's nb as the generic code's)
      const index_t e = mask.key_end <= kb ? 0 : (mask.key_end - kb < nb ? mask.key_end - kb : nb);
      if (e == 0) return false;
      for (index_t i = 0; i < e; ++i) p[i] = (static_cast<float>(sc[i]) * (sq * s_k[i])) / scale;
      float bm = p[0];
      for (index_t i = 1; i < e; ++i) bm = p[i] > bm ? p[i] : bm;
      const float m_new = (seen && m > bm) ? m : bm;
      rescale(m_new);
      for (index_t i = 0; i < e; ++i) p[i] = p[i] - m_new;
      K::exp(p, p, e);
      for (index_t i = e; i < nb; ++i) p[i] = 0.0f;
      l = seen ? l + K::sum(p, nb) : K::sum(p, nb);
      for (index_t i = 0; i < e; ++i) p[i] = p[i] * s_v[i];
      K::quantize_rows(p, nb, 1, nb, qw, nb, &s_b);
      m = m_new;
      return true;
    }
    const float* add = mask.additive() ? mask.additive() + kb : nullptr;
    bool any = false;
    float bm = 0.0f;
    for (index_t i = 0; i < nb; ++i) {
      if (!mask.allows(kb + i)) continue;
      p[i] = (static_cast<float>(sc[i]) * (sq * s_k[i])) / scale;
      if (add) p[i] = p[i] + add[i];
      bm = (!any || p[i] > bm) ? p[i] : bm;
      any = true;
    }
    if (!any) return false;
    const float m_new = (seen && m > bm) ? m : bm;
    rescale(m_new);
    for (index_t i = 0; i < nb; ++i) p[i] = mask.allows(kb + i) ? p[i] - m_new : 0.0f;  // (masked: m_new − m_new)
    K::exp(p, p, nb);
    for (index_t i = 0; i < nb; ++i)
      if (!mask.allows(kb + i)) p[i] = 0.0f;
    l = seen ? l + K::sum(p, nb) : K::sum(p, nb);
    for (index_t i = 0; i < nb; ++i) p[i] = mask.allows(kb + i) ? p[i] * s_v[i] : 0.0f;
    K::quantize_rows(p, nb, 1, nb, qw, nb, &s_b);
    m = m_new;
    return true;
  }

  /// Kernels::attention_rows_w8a8 (kernels/api.hpp), kRows rows at a time; false: declined (see the
  /// file's comment). p is not used (the rows' blocks are on the stack).
  static bool attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows,
                                  const std::int8_t* k, index_t k_stride, const float* s_k, const std::int8_t* v,
                                  index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                                  const ref::RowMask* masks, MaskFill fill, float* /*p*/, float* out,
                                  index_t out_stride) {
    if (head_dim < 8 || head_dim % 8 != 0 || head_dim > kMaxHeadDim || n_keys < 1) return false;
    for (index_t r0 = 0; r0 < n_rows; r0 += kRows) {
      const index_t n = n_rows - r0 < kRows ? n_rows - r0 : kRows;
      const std::int8_t* qr = q + r0 * q_stride;
      float* o = out + r0 * out_stride;
      switch (n) {
        case 1:
          group<1>(qr, q_stride, s_q + r0, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks + r0, fill, o,
                   out_stride);
          break;
        case 2:
          group<2>(qr, q_stride, s_q + r0, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks + r0, fill, o,
                   out_stride);
          break;
        case 3:
          group<3>(qr, q_stride, s_q + r0, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks + r0, fill, o,
                   out_stride);
          break;
        case 4:
          group<4>(qr, q_stride, s_q + r0, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks + r0, fill, o,
                   out_stride);
          break;
        case 5:
          group<5>(qr, q_stride, s_q + r0, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks + r0, fill, o,
                   out_stride);
          break;
        default:
          group<6>(qr, q_stride, s_q + r0, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks + r0, fill, o,
                   out_stride);
          break;
      }
    }
    return true;
  }

  /// attention_rows_w8a8 for R (1 to kRows) rows.
  template <int R>
  static void group(const std::int8_t* q, index_t q_stride, const float* s_q, const std::int8_t* k, index_t k_stride,
                    const float* s_k, const std::int8_t* v, index_t v_stride, const float* s_v, index_t head_dim,
                    index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* out, index_t out_stride) {
    const float scale = std::sqrt(static_cast<float>(head_dim));
    alignas(16) std::int8_t qx[R][kMaxHeadDim];
    const index_t d16 = (head_dim + 15) / 16 * 16;
    for (int r = 0; r < R; ++r) {
      std::memcpy(qx[r], q + r * q_stride, head_dim);
      std::memset(qx[r] + head_dim, 0, d16 - head_dim);
      for (index_t d = 0; d < head_dim; ++d) out[r * out_stride + d] = 0.0f;
    }
    index_t key_end = 0;  // the keys any row reads
    for (int r = 0; r < R; ++r) key_end = masks[r].key_end > key_end ? masks[r].key_end : key_end;
    key_end = key_end < n_keys ? key_end : n_keys;
    alignas(16) std::int32_t sc[R][kBlock];       // the block's int32 scores
    alignas(16) std::int8_t qw[R][kBlock];        // the rows' quantized weights
    alignas(16) std::int16_t wx[kBlock][8] = {};  // key j, row r: the weight, widened
    float m[R] = {}, l[R] = {}, s_b[R] = {};
    bool seen[R] = {}, any[R] = {};
    for (index_t kb = 0; kb < key_end; kb += kBlock) {
      const index_t nb = n_keys - kb < kBlock ? n_keys - kb : kBlock;
      const index_t nr = key_end - kb < nb ? key_end - kb : nb;  // the keys read (≥ 1)
      // 1. the int32 scores of the rows with the keys read
      scores<R>(qx, head_dim, k + kb * k_stride, k_stride, nr, sc);
      // 2. per row, the float part of the generic code
      for (int r = 0; r < R; ++r) {
        const bool a = row_weights(sc[r], masks[r], kb, s_q[r], s_k + kb, s_v + kb, nb, scale, head_dim, seen[r], m[r],
                                   l[r], out + r * out_stride, qw[r], s_b[r]);
        any[r] = a;
        for (index_t j = 0; j < nr; ++j) wx[j][r] = a ? qw[r][j] : 0;
      }
      // 3. P·V: every row's sums over the keys read, into the outputs
      const std::int8_t* vb = v + kb * v_stride;
#if defined(__ARM_FEATURE_DOTPROD)
      if constexpr (kSdot) {
        values_sdot<R>(qw, any, vb, v_stride, nr, head_dim, s_b, out, out_stride);
        for (int r = 0; r < R; ++r) seen[r] = seen[r] || any[r];
        continue;
      }
#endif
      for (index_t d0 = 0; d0 < head_dim; d0 += 8) {
        int32x4_t lo[R], hi[R];
        values_widened<R>(wx, vb + d0, v_stride, nr, lo, hi);
        for (int r = 0; r < R; ++r)
          if (any[r]) {
            float* o = out + r * out_stride + d0;
            fma4(o, lo[r], s_b[r]);
            fma4(o + 4, hi[r], s_b[r]);
          }
      }
      for (int r = 0; r < R; ++r) seen[r] = seen[r] || any[r];
    }
    for (int r = 0; r < R; ++r) {
      float* o = out + r * out_stride;
      if (seen[r]) {
        for (index_t d = 0; d < head_dim; ++d) o[d] = o[d] / l[r];
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
};

}  // namespace stf::kernels_detail::neon
#endif
