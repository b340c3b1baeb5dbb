// statiformer — attention on Cortex-M4F/M7 (Arm M-profile with an FPU and the DSP extension),
// part: the int8 number format (kernels/QUANTIZATION.md, "Attention"). The w8a8 attention of the
// scalar variant (selected by kernels/attention/select.hpp's AttentionInt8Select; the generic one,
// and the fallback of the calls this one declines, is kernels/attention/int8.hpp), the rows of a
// call (up to kAttentionCallRows) together over each block of keys:
//  - Q·Kᵀ: the call's query rows expanded once into int16 pairs (sxtb16 q and sxtb16 q, ror #8, per
//    quad: (q0, q2), (q1, q3)), interleaved by quad so one pointer walks all rows; per key quad one
//    word load and two sxtb16 serve every row, two smlad per row (four products);
//  - P·V: the block's values packed once per call into int16 pairs of keys (k0, k2) and (k1, k3)
//    of each key quad (sxtb16 and the halves' pack), a chunk of dimensions at a time, so that a
//    row's quantized weights need only their own sxtb16 (w0, w2), (w1, w3); then per pair of keys
//    and dimension one smlad per row;
//  - the float part of each block (the scores' scale and mask, the maximum, exp_shifted, the
//    canonical sum, p · s_v, quantize_row, fma into the output, the final division) is the generic
//    code's, the same operations in the same order per row. A block whose keys a row all attends
//    to, with nothing added, takes them without the mask's tests and in the float attention's
//    assembly where it has them: the scale and the maximum (scale_max, with the scales' products),
//    exp(s - m) and the canonical sum (cortex_m4f::Attention::exp_sum), max |p · s_v| in the loop
//    that forms it, the rounding by vcvtr four at a time (cortex_m4f::ProductInt8::quantize_max):
//    the same bits. The keys from the call's largest key end on are not read (their weights are 0
//    in every row), and a masked key's weight is 0.
// Integer sums are exact in any order: the bits are ref::attention_row_w8a8's. It declines (the
// generic code runs the call) a head_dim that is not a multiple of 4 or above kMaxHeadDim, and no keys.
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/cortex_m4f.hpp>
#include <statiformer/kernels/product/cortex_m4f_int8.hpp>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace stf::kernels_detail {
namespace generic {
template <class Tag>
struct ProductInt8;  // kernels/product/int8.hpp: quantize_row
template <class Tag>
struct Elementwise;  // kernels/elementwise/generic.hpp: exp_shifted, sum
}  // namespace generic

namespace cortex_m4f {

/// The Cortex-M4F/M7 w8a8 attention (see the file's comment).
template <class Tag>
struct AttentionInt8 {
  static constexpr index_t kRows = 6;  ///< rows at a time (kAttentionCallRows on Cortex-M)
  static constexpr index_t kBlock = kAttentionKeyBlock;
  static constexpr index_t kMaxHeadDim = 64;  ///< (the expanded queries on the stack: 24 bytes per dimension)
  static constexpr index_t kDimChunk = 8;     ///< dimensions of the packed values at a time

  static std::int32_t sxtb16_ror8(std::int32_t w) {
    std::int32_t r;
    asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(w));
    return r;
  }
  static std::int32_t load_word(const std::int8_t* p) {  // (ldr: any alignment on Armv7-M)
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  /// (lo(a), lo(b)) and (hi(a), hi(b)) as int16 pairs: pkhbt, pkhtb.
  static std::int32_t pack_lo(std::int32_t a, std::int32_t b) {
    std::int32_t r;
    asm("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  static std::int32_t pack_hi(std::int32_t a, std::int32_t b) {
    std::int32_t r;
    asm("pkhtb %0, %2, %1, asr #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  /// The int32 scores of R rows (expanded queries qx: per quad R (A, B) pairs) with keys [0, n) of
  /// k, into sc[r][j].
  template <int R>
  static void scores(const std::int32_t* qx, index_t quads, const std::int8_t* k, index_t k_stride, index_t n,
                     std::int32_t (*sc)[kBlock]) {
    for (index_t j = 0; j < n; ++j) {
      const std::int8_t* kj = k + j * k_stride;
      const std::int32_t* x = qx;
      std::int32_t c[R] = {};
      for (index_t d = 0; d < quads; ++d, kj += 4, x += 2 * R) {
        const std::int32_t w = load_word(kj);
        const std::int32_t e = __sxtb16(w), o = sxtb16_ror8(w);
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
          c[r] = __smlad(x[2 * r], e, c[r]);
          c[r] = __smlad(x[2 * r + 1], o, c[r]);
        }
      }
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) sc[r][j] = c[r];
    }
  }

  /// R rows (weights w: per key pair kRows words, the rows' from w) × D dimensions (packed values
  /// vp: per key pair kDimChunk words, the dimensions' from vp) over `pairs` key pairs: c[r][d].
  template <int R, int D>
  static void values(const std::int32_t* w, const std::int32_t* vp, index_t pairs, std::int32_t (&c)[R][D]) {
    std::int32_t a[R][D] = {};
    for (index_t t = 0; t < pairs; ++t, w += kRows, vp += kDimChunk) {
#pragma GCC unroll 4
      for (int d = 0; d < D; ++d) {
        const std::int32_t v = vp[d];
#pragma GCC unroll 3
        for (int r = 0; r < R; ++r) a[r][d] = __smlad(w[r], v, a[r][d]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int d = 0; d < D; ++d) c[r][d] = a[r][d];
  }

  /// Kernels::attention_rows_w8a8 (kernels/api.hpp), kRows rows at a time; false: declined (see the
  /// file's comment).
  static bool attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows,
                                  const std::int8_t* k, index_t k_stride, const float* s_k, const std::int8_t* v,
                                  index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                                  const ref::RowMask* masks, MaskFill fill, float* p, float* out, index_t out_stride) {
    if (head_dim % 4 != 0 || head_dim > kMaxHeadDim || n_keys < 1) return false;
    for (index_t r0 = 0; r0 < n_rows; r0 += kRows)
      group(q + r0 * q_stride, q_stride, s_q + r0, n_rows - r0 < kRows ? n_rows - r0 : kRows, k, k_stride, s_k, v,
            v_stride, s_v, head_dim, n_keys, masks + r0, fill, p, out + r0 * out_stride, out_stride);
    return true;
  }

  /// p[i] = (float(acc[i]) · (sq · sk[i])) / d for i < n (n >= 1; the generic code's score), and
  /// their maximum: the first, then each one greater than the maximum so far (the reference's
  /// order). Four at a time (two vldm, four vmul of the scales, four vcvt, four vmul, four vdiv,
  /// vstm, four compare-and-moves), the rest one by one: Attention::scale_max with the scales.
  static float scale_max(const std::int32_t* acc, const float* sk, float sq, index_t n, float d, float* p) {
    std::uint32_t mbits;
    index_t c4, rest;
    // one score into s8: s0 = sq · sk, s8 = float(acc) · s0 / d, stored
#define STF_M4F_SCORE1                                                                       \
  "vldmia %[sk]!, {s0}\nvldmia %[acc]!, {s8}\nvmul.f32 s0, %[sq], s0\nvcvt.f32.s32 s8, s8\n" \
  "vmul.f32 s8, s8, s0\nvdiv.f32 s8, s8, %[d]\nvstmia %[p]!, {s8}\n"
    asm volatile(STF_M4F_SCORE1
                 "vmov.f32 s4, s8\n"
                 "subs %[rest], %[n], #1\n"
                 "lsrs %[c4], %[rest], #2\n"
                 "beq 2f\n"
                 "1:\n"
                 "vldmia %[sk]!, {s0-s3}\n"
                 "vldmia %[acc]!, {s8-s11}\n"
                 "vmul.f32 s0, %[sq], s0\n"
                 "vmul.f32 s1, %[sq], s1\n"
                 "vmul.f32 s2, %[sq], s2\n"
                 "vmul.f32 s3, %[sq], s3\n"
                 "vcvt.f32.s32 s8, s8\n"
                 "vcvt.f32.s32 s9, s9\n"
                 "vcvt.f32.s32 s10, s10\n"
                 "vcvt.f32.s32 s11, s11\n"
                 "vmul.f32 s8, s8, s0\n"
                 "vmul.f32 s9, s9, s1\n"
                 "vmul.f32 s10, s10, s2\n"
                 "vmul.f32 s11, s11, s3\n"
                 "vdiv.f32 s8, s8, %[d]\n"
                 "vdiv.f32 s9, s9, %[d]\n"
                 "vdiv.f32 s10, s10, %[d]\n"
                 "vdiv.f32 s11, s11, %[d]\n"
                 "vstmia %[p]!, {s8-s11}\n" STF_M4F_MAX_S4("s8") STF_M4F_MAX_S4("s9") STF_M4F_MAX_S4("s10")
                     STF_M4F_MAX_S4("s11") "subs %[c4], %[c4], #1\n"
                 "bne 1b\n"
                 "2:\n"
                 "ands %[rest], %[rest], #3\n"
                 "beq 4f\n"
                 "3:\n" STF_M4F_SCORE1 STF_M4F_MAX_S4("s8") "subs %[rest], %[rest], #1\n"
                 "bne 3b\n"
                 "4:\n"
                 "vmov %[m], s4\n"
                 : [acc] "+r"(acc), [sk] "+r"(sk), [p] "+r"(p), [c4] "=&r"(c4), [rest] "=&r"(rest), [m] "=r"(mbits)
                 : [n] "r"(n), [sq] "t"(sq), [d] "t"(d)
                 : "s0", "s1", "s2", "s3", "s4", "s8", "s9", "s10", "s11", "cc", "memory");
#undef STF_M4F_SCORE1
    float m;
    std::memcpy(&m, &mbits, sizeof m);
    return m;
  }

  /// p[i] = e[i] · sv[i] for i < n, and max |p[i]| as bits (the sign cleared; quantize_row's first
  /// loop, as ProductInt8::max_abs_bits takes it: the maximum of the bits shifted left by one).
  /// Four at a time (two vldm, four vmul, vstm, two vmov of pairs, three instructions per maximum),
  /// the rest one by one.
  static std::uint32_t weights_max(const float* e, const float* sv, index_t n, float* p) {
    std::uint32_t m = 0;  // max of the bits << 1
    if (index_t quads = n / 4) {
      std::uint32_t a, b, c, d;
      asm volatile("1:\n\t"
                   "vldmia %[e]!, {s0-s3}\n\t"
                   "vldmia %[sv]!, {s4-s7}\n\t"
                   "vmul.f32 s0, s0, s4\n\t"
                   "vmul.f32 s1, s1, s5\n\t"
                   "vmul.f32 s2, s2, s6\n\t"
                   "vmul.f32 s3, s3, s7\n\t"
                   "vstmia %[p]!, {s0-s3}\n\t"
                   "vmov %[a], %[b], s0, s1\n\t"
                   "vmov %[c], %[d], s2, s3\n\t" STF_M4_MAX_BITS("a") STF_M4_MAX_BITS("b")
                       STF_M4_MAX_BITS("c") STF_M4_MAX_BITS("d")
                   "subs %[n], %[n], #1\n\t"
                   "bne 1b"
                   : [m] "+r"(m), [e] "+r"(e), [sv] "+r"(sv), [p] "+r"(p), [n] "+r"(quads), [a] "=&r"(a), [b] "=&r"(b),
                     [c] "=&r"(c), [d] "=&r"(d)
                   :
                   : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "cc", "memory");
    }
    for (index_t i = 0; i < n % 4; ++i) {
      const float y = e[i] * sv[i];
      p[i] = y;
      std::uint32_t v;
      std::memcpy(&v, &y, 4);
      m = v << 1 > m ? v << 1 : m;
    }
    return m >> 1;
  }

  /// attention_rows_w8a8 for 1 to kRows rows.
  static void group(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows, const std::int8_t* k,
                    index_t k_stride, const float* s_k, const std::int8_t* v, index_t v_stride, const float* s_v,
                    index_t head_dim, index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                    index_t out_stride) {
    using E = generic::Elementwise<Tag>;
    const index_t quads = head_dim / 4;
    const float scale = std::sqrt(static_cast<float>(head_dim));
    // the queries, expanded: quad d, row r at qx[(d · n_rows + r) · 2]
    std::int32_t qx[kMaxHeadDim / 4 * kRows * 2];
    for (index_t r = 0; r < n_rows; ++r)
      for (index_t d = 0; d < quads; ++d) {
        const std::int32_t w = load_word(q + r * q_stride + 4 * d);
        qx[(d * n_rows + r) * 2] = __sxtb16(w);
        qx[(d * n_rows + r) * 2 + 1] = sxtb16_ror8(w);
      }
    index_t key_end = 0;  // the keys any row reads
    for (index_t r = 0; r < n_rows; ++r) key_end = masks[r].key_end > key_end ? masks[r].key_end : key_end;
    key_end = key_end < n_keys ? key_end : n_keys;
    alignas(8) std::int32_t sc[kRows][kBlock];           // the block's int32 scores
    alignas(8) std::int32_t wx[kBlock / 2 * kRows];      // key pair t, row r: the weights (w_t, w_t+2)
    alignas(8) std::int32_t vp[kBlock / 2 * kDimChunk];  // key pair t, dimension d: the values
    alignas(8) float eb[kBlock];                         // a row's weights exp(s - m) (exp_sum)
    float m[kRows] = {}, l[kRows] = {}, s_b[kRows] = {};
    bool seen[kRows] = {}, any[kRows] = {};
    auto* qw = reinterpret_cast<std::int8_t*>(p + kBlock);
    for (index_t kb = 0; kb < key_end; kb += kBlock) {
      const index_t nb = n_keys - kb < kBlock ? n_keys - kb : kBlock;
      const index_t nr = key_end - kb < nb ? key_end - kb : nb;  // the keys read (≥ 1)
      const index_t groups = (nr + 3) / 4, pairs = 2 * groups;
      // 1. the int32 scores of the rows with the keys read
      const std::int8_t* kblk = k + kb * k_stride;
      switch (n_rows) {
        case 1:
          scores<1>(qx, quads, kblk, k_stride, nr, sc);
          break;
        case 2:
          scores<2>(qx, quads, kblk, k_stride, nr, sc);
          break;
        case 3:
          scores<3>(qx, quads, kblk, k_stride, nr, sc);
          break;
        case 4:
          scores<4>(qx, quads, kblk, k_stride, nr, sc);
          break;
        case 5:
          scores<5>(qx, quads, kblk, k_stride, nr, sc);
          break;
        default:
          scores<6>(qx, quads, kblk, k_stride, nr, sc);
          break;
      }
      // 2. per row, the float part of the generic code: scores, maximum, rescale, weights, sum,
      // quantized (then expanded into key pairs)
      for (index_t r = 0; r < n_rows; ++r) {
        const ref::RowMask mask = masks[r];
        const float* add = mask.additive();
        const float sq = s_q[r];
        float* o = out + r * out_stride;
        if (mask.prefix() && mask.key_end >= kb + nb) {
          // every key of the block allowed, nothing added: the same operations without the mask's
          // tests, the float attention's steps in assembly (scale and maximum, exp and the sum)
          const float bm = scale_max(sc[r], s_k + kb, sq, nb, scale, p);
          any[r] = true;
          const float m_new = (seen[r] && m[r] > bm) ? m[r] : bm;
          if (seen[r]) {
            float c = m[r] - m_new;
            E::exp_shifted(&c, &c, 1, 0.0f);
            l[r] = l[r] * c;
            for (index_t d = 0; d < head_dim; ++d) o[d] = o[d] * c;
          } else {
            for (index_t d = 0; d < head_dim; ++d) o[d] = 0.0f;
          }
          const float bsum = Attention::exp_sum(p, eb, nb, m_new);
          l[r] = seen[r] ? l[r] + bsum : bsum;
          s_b[r] = ProductInt8<Tag>::quantize_max(p, nb, weights_max(eb, s_v + kb, nb, p), qw);
          for (index_t g = 0; g < groups; ++g) {
            const std::int32_t w = load_word(qw + 4 * g);
            wx[2 * g * kRows + r] = __sxtb16(w);
            wx[(2 * g + 1) * kRows + r] = sxtb16_ror8(w);
          }
          m[r] = m_new;
          continue;
        }
        any[r] = false;
        float bm = 0.0f;
        for (index_t i = 0; i < nb; ++i) {
          if (!mask.allows(kb + i)) continue;
          p[i] = (static_cast<float>(sc[r][i]) * (sq * s_k[kb + i])) / scale;
          if (add) p[i] = p[i] + add[kb + i];
          bm = (!any[r] || p[i] > bm) ? p[i] : bm;
          any[r] = true;
        }
        if (!any[r]) {
          for (index_t t = 0; t < pairs; ++t) wx[t * kRows + r] = 0;
          continue;
        }
        const float m_new = (seen[r] && m[r] > bm) ? m[r] : bm;
        if (seen[r]) {
          float c = m[r] - m_new;
          E::exp_shifted(&c, &c, 1, 0.0f);
          l[r] = l[r] * c;
          for (index_t d = 0; d < head_dim; ++d) o[d] = o[d] * c;
        } else {
          for (index_t d = 0; d < head_dim; ++d) o[d] = 0.0f;
        }
        for (index_t i = 0; i < nb; ++i)
          if (!mask.allows(kb + i)) p[i] = m_new;
        E::exp_shifted(p, p, nb, m_new);
        for (index_t i = 0; i < nb; ++i)
          if (!mask.allows(kb + i)) p[i] = 0.0f;
        l[r] = seen[r] ? l[r] + E::sum(p, nb) : E::sum(p, nb);
        for (index_t i = 0; i < nb; ++i) p[i] = mask.allows(kb + i) ? p[i] * s_v[kb + i] : 0.0f;
        s_b[r] = generic::ProductInt8<Tag>::quantize_row(p, nb, qw, true);  // (zeros to the quad's end)
        for (index_t g = 0; g < groups; ++g) {
          const std::int32_t w = load_word(qw + 4 * g);
          wx[2 * g * kRows + r] = __sxtb16(w);
          wx[(2 * g + 1) * kRows + r] = sxtb16_ror8(w);
        }
        m[r] = m_new;
      }
      // 3. P·V: the values packed a chunk of dimensions at a time, every row's sums, into the outputs
      for (index_t d0 = 0; d0 < head_dim; d0 += kDimChunk) {
        const index_t nd = head_dim - d0 < kDimChunk ? head_dim - d0 : kDimChunk;
        const std::int8_t* vb = v + kb * v_stride + d0;
        for (index_t g = 0; g < groups; ++g) {
          const index_t j = 4 * g;
          for (index_t d = 0; d < nd; d += 4) {
            const std::int32_t w0 = load_word(vb + j * v_stride + d);
            const std::int32_t w1 = j + 1 < nr ? load_word(vb + (j + 1) * v_stride + d) : 0;
            const std::int32_t w2 = j + 2 < nr ? load_word(vb + (j + 2) * v_stride + d) : 0;
            const std::int32_t w3 = j + 3 < nr ? load_word(vb + (j + 3) * v_stride + d) : 0;
            const std::int32_t a0 = __sxtb16(w0), a1 = sxtb16_ror8(w0), c0 = __sxtb16(w2), c1 = sxtb16_ror8(w2);
            const std::int32_t b0 = __sxtb16(w1), b1 = sxtb16_ror8(w1), e0 = __sxtb16(w3), e1 = sxtb16_ror8(w3);
            std::int32_t* p0 = vp + 2 * g * kDimChunk + d;  // keys (0, 2)
            std::int32_t* p1 = p0 + kDimChunk;              // keys (1, 3)
            p0[0] = pack_lo(a0, c0), p0[1] = pack_lo(a1, c1), p0[2] = pack_hi(a0, c0), p0[3] = pack_hi(a1, c1);
            p1[0] = pack_lo(b0, e0), p1[1] = pack_lo(b1, e1), p1[2] = pack_hi(b0, e0), p1[3] = pack_hi(b1, e1);
          }
        }
        index_t r = 0;
        for (; r + 3 <= n_rows; r += 3)
          for (index_t d = 0; d < nd; d += 2) {
            std::int32_t c[3][2];
            values<3, 2>(wx + r, vp + d, pairs, c);
            for (index_t i = 0; i < 3; ++i)
              if (any[r + i]) {
                float* o = out + (r + i) * out_stride + d0 + d;
                o[0] = std::fma(static_cast<float>(c[i][0]), s_b[r + i], o[0]);
                o[1] = std::fma(static_cast<float>(c[i][1]), s_b[r + i], o[1]);
              }
          }
        for (; r < n_rows; ++r)
          for (index_t d = 0; d < nd; d += 4) {
            std::int32_t c[1][4];
            values<1, 4>(wx + r, vp + d, pairs, c);
            if (any[r]) {
              float* o = out + r * out_stride + d0 + d;
              for (index_t i = 0; i < 4; ++i) o[i] = std::fma(static_cast<float>(c[0][i]), s_b[r], o[i]);
            }
          }
      }
      for (index_t r = 0; r < n_rows; ++r) seen[r] = seen[r] || any[r];
    }
    for (index_t r = 0; r < n_rows; ++r) {
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

}  // namespace cortex_m4f
}  // namespace stf::kernels_detail
#endif
