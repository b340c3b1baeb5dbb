// statiformer — attention on Cortex-M55 (Helium / MVE), part: the int8 number format
// (kernels/QUANTIZATION.md, "Attention"). The w8a8 attention of the mve variant (selected by
// kernels/attention/select.hpp's AttentionInt8Select; the generic one is kernels/attention/int8.hpp),
// for groups of up to 6 query rows whose masks are prefixes (no mask arrays; it declines a call
// with any other row, and the generic code runs it):
//  - Q·Kᵀ: vmladav.s8 sums the 16 byte products of a query row and a key row into a general-purpose
//    register; per pair of keys two loads, per query row two vmladav and one strd (the rows' query
//    vectors stay in registers for head_dim <= 16; longer heads loop over 16-byte chunks);
//  - P·V: the block's int8 weights of a row are a contiguous vector over 16 keys; the values are
//    transposed, 16 dimensions at a time, into [dimension][16 keys] (one vldrb and one byte scatter
//    per key), so that one vmladav per row and dimension sums 16 keys;
//  - the float steps per row and block in vectors, the same operations in the same order as the
//    generic code's: float(acc) · (s_q · s_k) divided by the scale (a power-of-two scale as a product
//    by its exact inverse, others lane by lane on the scalar unit), the block maximum, the rescale
//    c = exp(m - m_new) by Elementwise<mve>::exp_shifted itself (one call for the rows whose maximum
//    moved; none where it stayed: c = exp(+0) = 1), the block's exp by exp_row (exp_shifted's
//    operations for arguments <= 0, below), the canonical 16-lane sum (its tree on the vectors:
//    every value is >= +0), p · s_v, the block's quantization (max, 127 / a, x · inv, vcvtn),
//    fma(float(acc), s_b, out) (the first block's: the product, the output being +0), and the final
//    division by the sum on the scalar unit.
// At (64,64,4,256) the w8a8 layer with it takes 1,231,721 instructions (the generic int8 attention:
// 5,224,574; the float attention: 1,224,443). Per row and block of 32 keys (profile.py, 512 of them):
// Q·Kᵀ 68 (6 rows a call), exp 174, the sum, p · s_v and the quantization 96, the transposition and
// P·V 100; the float scores, the output's steps and the loops about 320 (group); and 43 per row
// for quantize_rows.
// MVE flushes denormals: the quantization keeps that out of its q (a block whose max p·s_v is below
// kMinQuantizedMax is quantized by the scalar code, as kernels/product/helium_int8.hpp does); the scores can
// have none (the call is declined unless every s_q and s_k is 0 or in [2⁻⁴⁰, 2⁴⁰]: no NaN, infinity
// or denormal among the scores); the output's running sums and rescales below 2⁻¹²⁶ are the float
// path's exception (examples/firmware/README.md), as in the float attention.
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/product/int8.hpp>

namespace stf::kernels_detail::helium {

/// The Helium w8a8 attention (see the file's comment).
struct AttentionInt8 {
  using E = generic::Elementwise<isa::mve>;
  using Q = generic::ProductInt8<isa::mve>;
  static constexpr int kGroup = 6;                  ///< query rows at a time
  static constexpr index_t B = kAttentionKeyBlock;  ///< 32 keys per block
  static constexpr index_t kChunk = 16;             ///< dimensions of one transposed slice of V
  static_assert(B == 32, "the block's vectors: 2 × 16 int8 weights, 8 × 4 floats");

  /// Kernels::attention_rows_w8a8 (kernels/api.hpp); false: declined (a row with mask arrays, or a
  /// scale out of the range above).
  static bool attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows,
                                  const std::int8_t* k, index_t k_stride, const float* s_k, const std::int8_t* v,
                                  index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                                  const ref::RowMask* masks, MaskFill fill, float* /*p*/, float* out,
                                  index_t out_stride) {
    index_t end = 0;  // keys any row reads
    for (index_t r = 0; r < n_rows; ++r) {
      if (!masks[r].prefix()) return false;
      const index_t e = masks[r].key_end < n_keys ? masks[r].key_end : n_keys;
      end = e > end ? e : end;
    }
    if (!scales_in_range(s_q, n_rows) || !scales_in_range(s_k, end)) return false;
    for (index_t r0 = 0; r0 < n_rows; r0 += kGroup) {
      const int rows = static_cast<int>(n_rows - r0 < kGroup ? n_rows - r0 : kGroup);
      group(q + r0 * q_stride, q_stride, s_q + r0, rows, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys,
            masks + r0, fill, out + r0 * out_stride, out_stride);
    }
    return true;
  }

  /// Whether every x[i], i < n, is +0 or in [2⁻⁴⁰, 2⁴⁰] (on the bits: a sign, NaN or infinity is
  /// out of range).
  static bool scales_in_range(const float* x, index_t n) {
    constexpr std::uint32_t lo = 0x2B800000u;  // 2⁻⁴⁰
    constexpr std::uint32_t hi = 0x53800000u;  // 2⁴⁰
    uint32x4_t mx = vdupq_n_u32(0), mn = vdupq_n_u32(~0u);
    if (n > 0)
      asm volatile(  // 5 instructions per vector
          "dlstp.32 lr, %[n]\n"
          "1:\n"
          "vldrw.u32 q0, [%[x]], #16\n"
          "vmax.u32 %q[mx], %q[mx], q0\n"
          "vsub.i32 q0, q0, %[one]\n"
          "vmin.u32 %q[mn], %q[mn], q0\n"
          "letp lr, 1b\n"
          : [x] "+r"(x), [mx] "+w"(mx), [mn] "+w"(mn)
          : [n] "r"(n), [one] "r"(1u)
          : "q0", "lr", "memory");
    return vmaxvq_u32(0u, mx) <= hi && vminvq_u32(~0u, mn) >= lo - 1u;
  }

 private:
  struct Row {
    float m = 0.0f, l = 0.0f;
    bool seen = false;
  };

  /// The attention of `rows` (1..6) query rows (see the file's comment).
  static void group(const std::int8_t* q, index_t q_stride, const float* s_q, int rows, const std::int8_t* k,
                    index_t k_stride, const float* s_k, const std::int8_t* v, index_t v_stride, const float* s_v,
                    index_t hd, index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* out,
                    index_t out_stride) {
    const float scale = std::sqrt(static_cast<float>(hd));
    std::uint32_t sbits;
    std::memcpy(&sbits, &scale, sizeof sbits);
    // a power-of-two scale divides as its (exact) inverse multiplies (no denormal score: above)
    const bool pow2 = (sbits & 0x007fffffu) == 0;
    const float inv_scale = 1.0f / scale;
    alignas(16) std::int32_t S[kGroup][B];  // the block's scores: int32 sums, then floats in place
    alignas(16) std::int8_t W[kGroup][B];   // the block's quantized weights
    alignas(16) std::int8_t VT[2][kChunk][16];
    alignas(16) std::int32_t A[kGroup][kChunk];
    Row st[kGroup];
    index_t e_row[kGroup], end = 0;
    for (int r = 0; r < rows; ++r) {
      e_row[r] = masks[r].key_end < n_keys ? masks[r].key_end : n_keys;
      end = e_row[r] > end ? e_row[r] : end;
    }
    for (index_t kb = 0; kb < end; kb += B) {
      const index_t nb = n_keys - kb < B ? n_keys - kb : B;
      const index_t n_read = end - kb < nb ? end - kb : nb;
      scores(q, q_stride, rows, k + kb * k_stride, k_stride, hd, n_read, S);
      float s_b[kGroup], m_new[kGroup], cx[kGroup], bmin[kGroup];
      bool active[kGroup];
      index_t e[kGroup];
      int moved[kGroup], n_moved = 0;
      // the scores as floats and their block maxima; the running maxima
      for (int r = 0; r < rows; ++r) {
        e[r] = e_row[r] > kb ? (e_row[r] - kb < nb ? e_row[r] - kb : nb) : 0;
        active[r] = e[r] > 0;
        if (!active[r]) continue;
        const float bm = pow2 ? score_floats<true>(S[r], s_q[r], s_k + kb, e[r], inv_scale, scale, &bmin[r])
                              : score_floats<false>(S[r], s_q[r], s_k + kb, e[r], inv_scale, scale, &bmin[r]);
        const Row& w = st[r];
        m_new[r] = (w.seen && w.m > bm) ? w.m : bm;
        if (w.seen && m_new[r] != w.m) {  // (else c = exp(+0) = 1: l and out stay)
          cx[n_moved] = w.m - m_new[r];
          moved[n_moved++] = r;
        }
      }
      if (n_moved) {  // what came before, to the new maxima: c = exp(m - m_new), as the generic code
        E::exp_shifted(cx, cx, n_moved, 0.0f);
        for (int i = 0; i < n_moved; ++i) {
          const int r = moved[i];
          st[r].l = st[r].l * cx[i];
          rescale(out + r * out_stride, hd, cx[i]);
        }
      }
      // the weights, their canonical sums, times the values' scales, quantized
      for (int r = 0; r < rows; ++r) {
        if (!active[r]) continue;
        float* p = reinterpret_cast<float*>(S[r]);
        Row& w = st[r];
        w.m = m_new[r];
        // (no x = s - m below exp's lower limit: its select of +0 does nothing; fl(min - m) bounds
        // every fl(s - m))
        if (bmin[r] - m_new[r] >= kExpLo)
          exp_row<false>(p, e[r], m_new[r]);
        else
          exp_row<true>(p, e[r], m_new[r]);
        if (e[r] == B) {  // (a whole block: every vector full)
          alignas(16) float x[B];
          float bs, a;
          sum_weights32(p, s_v + kb, x, &bs, &a);
          w.l = w.seen ? w.l + bs : bs;
          if (a >= kMinQuantizedMax) {
            quantize32(x, 127.0f / a, W[r]);
            s_b[r] = a / 127.0f;
            continue;
          }
        }
        for (index_t i = e[r]; i < B; ++i) p[i] = 0.0f;
        if (e[r] != B) {
          const float bs = sum32(p);
          w.l = w.seen ? w.l + bs : bs;
        }
        s_b[r] = weights(p, s_v + kb, e[r], nb, W[r]);
      }
      bool first[kGroup];  // (the output is +0 before: fma(x, s_b, +0) is the product x · s_b)
      for (int r = 0; r < rows; ++r) first[r] = !st[r].seen;
      values(W, rows, active, first, s_b, v + kb * v_stride, v_stride, hd, n_read, VT, A, out, out_stride);
      for (int r = 0; r < rows; ++r) st[r].seen = st[r].seen || active[r];
    }
    for (int r = 0; r < rows; ++r) {
      float* o = out + r * out_stride;
      if (st[r].seen) {
        divide(o, hd, st[r].l);
        continue;
      }
      // every key masked: the documented convention (the generic code's)
      const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
      for (index_t d = 0; d < hd; ++d) {
        float acc = 0.0f;
        if (w != 0.0f)
          for (index_t j = 0; j < n_keys; ++j) acc = std::fma(w, static_cast<float>(v[j * v_stride + d]) * s_v[j], acc);
        o[d] = acc;
      }
    }
  }

  /// S[r][i] = Σ_d q_r[d] · k_i[d] for the block's first n keys.
  static void scores(const std::int8_t* q, index_t q_stride, int rows, const std::int8_t* k, index_t k_stride,
                     index_t hd, index_t n, std::int32_t (*S)[B]) {
    if (hd <= 16) {
      switch (rows) {
        case 1:
          return hd == 16 ? scores16<1, true>(q, q_stride, k, k_stride, hd, n, S[0])
                          : scores16<1, false>(q, q_stride, k, k_stride, hd, n, S[0]);
        case 2:
          return hd == 16 ? scores16<2, true>(q, q_stride, k, k_stride, hd, n, S[0])
                          : scores16<2, false>(q, q_stride, k, k_stride, hd, n, S[0]);
        case 3:
          return hd == 16 ? scores16<3, true>(q, q_stride, k, k_stride, hd, n, S[0])
                          : scores16<3, false>(q, q_stride, k, k_stride, hd, n, S[0]);
        case 4:
          return hd == 16 ? scores16<4, true>(q, q_stride, k, k_stride, hd, n, S[0])
                          : scores16<4, false>(q, q_stride, k, k_stride, hd, n, S[0]);
        case 5:
          return hd == 16 ? scores16<5, true>(q, q_stride, k, k_stride, hd, n, S[0])
                          : scores16<5, false>(q, q_stride, k, k_stride, hd, n, S[0]);
        default:
          return hd == 16 ? scores16<6, true>(q, q_stride, k, k_stride, hd, n, S[0])
                          : scores16<6, false>(q, q_stride, k, k_stride, hd, n, S[0]);
      }
    }
    for (int r = 0; r < rows; ++r)
      for (index_t i = 0; i < n; ++i) {
        std::int32_t acc = 0;
        const std::int8_t* qr = q + r * q_stride;
        const std::int8_t* ki = k + i * k_stride;
        for (index_t d = 0; d < hd; d += 16) {
          const mve_pred16_t pd = vctp8q(static_cast<std::uint32_t>(hd - d));
          acc = vmladavaq_p_s8(acc, vldrbq_z_s8(qr + d, pd), vldrbq_z_s8(ki + d, pd), pd);
        }
        S[r][i] = acc;
      }
  }
  /// scores for head_dim <= 16: the R query rows in registers (zeros past head_dim), per pair of
  /// keys two loads (predicated unless head_dim is 16) and pointer steps, per row two vmladav
  /// (accumulators r0, r2) and one strd into S[r][i, i + 1] (rows B·4 bytes apart): 5 + 3R
  /// instructions per 2 keys (4 + 2R per key one at a time).
  template <int R, bool Full>
  [[gnu::noinline]] static void scores16(const std::int8_t* q, index_t q_stride, const std::int8_t* k, index_t k_stride,
                                         index_t hd, index_t n, std::int32_t* s) {
    const mve_pred16_t pd = vctp8q(static_cast<std::uint32_t>(hd));
    int8x16_t qv[6];
    for (int r = 0; r < 6; ++r) qv[r] = r < R ? vldrbq_z_s8(q + r * q_stride, pd) : qv[0];
    asm volatile(
        ".macro stf_k8 q\n"
        ".if %c[full]\n vldrb.u8 \\q, [%[k]]\n .else\n vpst\n vldrbt.u8 \\q, [%[k]]\n .endif\n"
        "add %[k], %[k], %[ks]\n"
        ".endm\n"
        "vctp.8 %[hd]\n"
        "lsrs r4, %[n], #1\n"  // pairs of keys
        "wls lr, r4, 2f\n"
        "1:\n"
        "stf_k8 q6\n"
        "stf_k8 q7\n"
        ".if %c[R] > 1\n vmladav.s8 r0, %q[q1], q6\n vmladav.s8 r2, %q[q1], q7\n strd r0, r2, [%[s], #4*%c[B]]\n "
        ".endif\n"
        ".if %c[R] > 2\n vmladav.s8 r0, %q[q2], q6\n vmladav.s8 r2, %q[q2], q7\n strd r0, r2, [%[s], #8*%c[B]]\n "
        ".endif\n"
        ".if %c[R] > 3\n vmladav.s8 r0, %q[q3], q6\n vmladav.s8 r2, %q[q3], q7\n strd r0, r2, [%[s], #12*%c[B]]\n "
        ".endif\n"
        ".if %c[R] > 4\n vmladav.s8 r0, %q[q4], q6\n vmladav.s8 r2, %q[q4], q7\n strd r0, r2, [%[s], #16*%c[B]]\n "
        ".endif\n"
        ".if %c[R] > 5\n vmladav.s8 r0, %q[q5], q6\n vmladav.s8 r2, %q[q5], q7\n strd r0, r2, [%[s], #20*%c[B]]\n "
        ".endif\n"
        "vmladav.s8 r0, %q[q0], q6\n"
        "vmladav.s8 r2, %q[q0], q7\n"
        "strd r0, r2, [%[s]], #8\n"
        "le lr, 1b\n"
        "2:\n"
        "tst %[n], #1\n"  // the last key of an odd count
        "beq 3f\n"
        "stf_k8 q7\n"
        ".if %c[R] > 0\n vmladav.s8 r0, %q[q0], q7\n str r0, [%[s], #0*%c[B]]\n .endif\n"
        ".if %c[R] > 1\n vmladav.s8 r0, %q[q1], q7\n str r0, [%[s], #4*%c[B]]\n .endif\n"
        ".if %c[R] > 2\n vmladav.s8 r0, %q[q2], q7\n str r0, [%[s], #8*%c[B]]\n .endif\n"
        ".if %c[R] > 3\n vmladav.s8 r0, %q[q3], q7\n str r0, [%[s], #12*%c[B]]\n .endif\n"
        ".if %c[R] > 4\n vmladav.s8 r0, %q[q4], q7\n str r0, [%[s], #16*%c[B]]\n .endif\n"
        ".if %c[R] > 5\n vmladav.s8 r0, %q[q5], q7\n str r0, [%[s], #20*%c[B]]\n .endif\n"
        "3:\n"
        ".purgem stf_k8\n"
        : [k] "+r"(k), [s] "+r"(s)
        : [hd] "r"(hd), [n] "r"(n), [ks] "r"(k_stride), [q0] "w"(qv[0]), [q1] "w"(qv[1]), [q2] "w"(qv[2]),
          [q3] "w"(qv[3]), [q4] "w"(qv[4]), [q5] "w"(qv[5]), [R] "i"(R), [B] "i"(B), [full] "i"(Full)
        : "r0", "r2", "r4", "q6", "q7", "lr", "cc", "memory");
  }

  /// The scores of one row, i < e (>= 1), as floats in place: (float(acc) · (s_q · s_k[i])) / scale;
  /// returns their maximum, *mn their minimum (-inf unless the scale is a power of two). One
  /// tail-predicated loop (9 instructions per vector with a power-of-two scale: its inverse
  /// multiplies; else the division lane by lane after it, on the scalar unit).
  template <bool Pow2>
  static float score_floats(std::int32_t* s, float sq, const float* sk, index_t e, float inv_scale, float scale,
                            float* mn) {
    float* p = reinterpret_cast<float*>(s);
    float32x4_t mx = vdupq_n_f32(-INFINITY), mi = vdupq_n_f32(INFINITY);
    const std::int32_t* a = s;
    asm volatile(
        "dlstp.32 lr, %[e]\n"
        "1:\n"
        "vldrw.u32 q0, [%[a]]\n"
        "vldrw.u32 q1, [%[sk]], #16\n"
        "vcvt.f32.s32 q0, q0\n"
        "vmul.f32 q1, q1, %[sq]\n"
        "vmul.f32 q0, q0, q1\n"
        ".if %c[pow2]\n"
        " vmul.f32 q0, q0, %[inv]\n"
        " vmaxnm.f32 %q[mx], %q[mx], q0\n"
        " vminnm.f32 %q[mi], %q[mi], q0\n"
        ".endif\n"
        "vstrw.32 q0, [%[a]], #16\n"
        "letp lr, 1b\n"
        : [a] "+r"(a), [sk] "+r"(sk), [mx] "+w"(mx), [mi] "+w"(mi)
        : [e] "r"(e), [sq] "r"(sq), [inv] "r"(inv_scale), [pow2] "i"(Pow2)
        : "q0", "q1", "lr", "cc", "memory");
    if (Pow2) {
      *mn = vminnmvq_f32(INFINITY, mi);
      return vmaxnmvq_f32(-INFINITY, mx);
    }
    *mn = -INFINITY;
    float m = -INFINITY;
    for (index_t i = 0; i < e; ++i) {
      p[i] = p[i] / scale;
      m = p[i] > m ? p[i] : m;
    }
    return m;
  }

  /// p[i] = exp(p[i] - m), i < n, for p[i] <= m (finite): Elementwise<mve>::exp_shifted's operations
  /// (kernels/elementwise/helium.hpp) where its steps for n > 0 and for overflow do nothing, in one
  /// tail-predicated loop with the constants in registers, 21 instructions per vector (35): x = p - m;
  /// n = fma(x, log2e, magic) - magic; r = fma(n, -c1, x), fma(n, c2, r); the same Horner steps;
  /// times 2^n (vmul, as exp_shifted: 2^n's bits built as (bits(fma(...)) << 23) + bits(1.0), the
  /// same float as its ((n + 127) << 23), since magic's bits end in 22 zeros; one vmlas by 1 << 23);
  /// x < lo: +0 (Clamp = false: no x is, 18 instructions per vector).
  static constexpr float kExpLo = -87.3365448f;
  template <bool Clamp>
  [[gnu::noinline]] static void exp_row(float* p, index_t n, float m) {
    alignas(8) static constexpr float kConstants[] = {
        1.44269504088896341f, -0.693359375f, 2.12194440e-4f, 1.0f / 5040.0f, 1.0f / 720.0f,
        1.0f / 120.0f,        1.0f / 24.0f,  1.0f / 6.0f,    0.5f,           1.0f};  // r1-r10
    const float32x4_t mv = vdupq_n_f32(m), magic = vdupq_n_f32(12582912.0f), lo = vdupq_n_f32(kExpLo);
    const uint32x4_t k23 = vdupq_n_u32(1u << 23);
    const float* c = kConstants;
    asm volatile(
        "ldm %[c], {r1-r10}\n"
        "wlstp.32 lr, %[n], 2f\n"
        "1:\n"
        "vldrw.u32 q0, [%[p]]\n"
        "vsub.f32 q0, q0, %q[m]\n"
        ".if %c[clamp]\n vcmp.f32 lt, q0, %q[lo]\n .endif\n"
        "vmov q1, %q[magic]\n"
        "vfma.f32 q1, q0, r1\n"
        "vsub.f32 q2, q1, %q[magic]\n"
        "vfma.f32 q0, q2, r2\n"
        "vfma.f32 q0, q2, r3\n"
        "vdup.32 q3, r4\n"
        "vfmas.f32 q3, q0, r5\n"
        "vfmas.f32 q3, q0, r6\n"
        "vfmas.f32 q3, q0, r7\n"
        "vfmas.f32 q3, q0, r8\n"
        "vfmas.f32 q3, q0, r9\n"
        "vfmas.f32 q3, q0, r10\n"
        "vfmas.f32 q3, q0, r10\n"
        "vmlas.u32 q1, %q[k23], r10\n"  // (bits(nm) << 23) + bits(1.0), mod 2^32
        "vmul.f32 q3, q3, q1\n"
        ".if %c[clamp]\n vpst\n vmovt.i32 q3, #0\n .endif\n"
        "vstrw.32 q3, [%[p]], #16\n"
        "letp lr, 1b\n"
        "2:\n"
        : [p] "+r"(p)
        : [n] "r"(n), [c] "r"(c), [m] "w"(mv), [magic] "w"(magic), [lo] "w"(lo), [k23] "w"(k23), [clamp] "i"(Clamp),
          "m"(kConstants)
        : "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "q0", "q1", "q2", "q3", "lr", "cc", "memory");
  }

  /// A whole block's row (32 keys, every one allowed): *sum = Σ p in the canonical order (sum32),
  /// x = p · s_v and *a = max x (every x >= +0), in one pass of 8 loads of p: the lane vectors
  /// a_s = p_s + p_(s+4) (s < 4), then (a_0 + a_2) + (a_1 + a_3) and its lanes (0 + 2) + (1 + 3) on
  /// the scalar unit, as reduce16.
  [[gnu::noinline]] static void sum_weights32(const float* p, const float* sv, float* x, float* sum, float* a) {
    asm volatile(
        "vmov.i32 q7, #0\n"
        ".irp s, 0, 1, 2, 3\n"
        " vldrw.u32 q4, [%[p], #16*\\s]\n"
        " vldrw.u32 q5, [%[p], #16*\\s+64]\n"
        " vadd.f32 q\\s, q4, q5\n"
        " vldrw.u32 q6, [%[sv], #16*\\s]\n"
        " vmul.f32 q6, q4, q6\n"
        " vmaxnm.f32 q7, q7, q6\n"
        " vstrw.32 q6, [%[x], #16*\\s]\n"
        " vldrw.u32 q6, [%[sv], #16*\\s+64]\n"
        " vmul.f32 q6, q5, q6\n"
        " vmaxnm.f32 q7, q7, q6\n"
        " vstrw.32 q6, [%[x], #16*\\s+64]\n"
        ".endr\n"
        "vadd.f32 q0, q0, q2\n"
        "vadd.f32 q1, q1, q3\n"
        "vadd.f32 q0, q0, q1\n"
        "vadd.f32 s4, s0, s2\n"
        "vadd.f32 s5, s1, s3\n"
        "vadd.f32 s4, s4, s5\n"
        "vstr s4, [%[sum]]\n"
        "mov r0, #0\n"
        "vmaxnmv.f32 r0, q7\n"
        "str r0, [%[a]]\n"
        :
        : [p] "r"(p), [sv] "r"(sv), [x] "r"(x), [sum] "r"(sum), [a] "r"(a)
        : "r0", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
  }
  /// w[i] = vcvtn(x[i] · inv), i < 32 (ties to even; |w| <= 127).
  [[gnu::noinline]] static void quantize32(const float* x, float inv, std::int8_t* w) {
    asm volatile(
        ".irp s, 0, 1, 2, 3, 4, 5, 6, 7\n"
        " vldrw.u32 q0, [%[x], #16*\\s]\n"
        " vmul.f32 q0, q0, %[inv]\n"
        " vcvtn.s32.f32 q0, q0\n"
        " vstrb.32 q0, [%[w], #4*\\s]\n"
        ".endr\n"
        :
        : [x] "r"(x), [inv] "r"(inv), [w] "l"(w)
        : "q0", "memory");
  }

  /// Σ p[0, 32) in the canonical order (kernels/elementwise/generic.hpp's sum: lane i of 16 the
  /// keys i and i + 16, folded as reduce16), every p >= +0.
  static float sum32(const float* p) {
    float32x4_t a[4];
    for (int s = 0; s < 4; ++s) a[s] = vaddq_f32(vld1q_f32(p + 4 * s), vld1q_f32(p + 16 + 4 * s));
    const float32x4_t s8a = vaddq_f32(a[0], a[2]), s8b = vaddq_f32(a[1], a[3]);
    const float32x4_t s4 = vaddq_f32(s8a, s8b);
    const float s2a = vgetq_lane_f32(s4, 0) + vgetq_lane_f32(s4, 2);
    const float s2b = vgetq_lane_f32(s4, 1) + vgetq_lane_f32(s4, 3);
    return s2a + s2b;
  }

  /// The block's weights of one row: p[i] · s_v[i] (i < e; 0 from e on, p is 0 there too),
  /// quantized into w[0, 32) (zeros from e on); returns their scale s_b.
  static float weights(const float* p, const float* sv, index_t e, index_t nb, std::int8_t* w) {
    alignas(16) float x[B];
    // the vectors that hold keys below e; past them every weight is 0 (their x would be 0 · 0)
    const index_t ev = (e + 3) / 4 * 4;
    float32x4_t mx = vdupq_n_f32(0.0f);
    for (index_t i = 0; i < ev; i += 4) {
      const mve_pred16_t pr = vctp32q(static_cast<std::uint32_t>(e - i));
      const float32x4_t xi = vmulq_f32(vld1q_f32(p + i), vldrwq_z_f32(sv + i, pr));
      mx = vmaxnmq_f32(mx, xi);
      vst1q_f32(x + i, xi);
    }
    const float a = vmaxnmvq_f32(0.0f, mx);
    if (!(a >= kMinQuantizedMax)) {  // zero or tiny (a flushed denormal x could give another q): the scalar code
      for (index_t i = 0; i < nb; ++i) x[i] = i < e ? p[i] * sv[i] : 0.0f;
      const float s = Q::quantize_row(x, nb, w, false);
      for (index_t i = nb; i < B; ++i) w[i] = 0;
      return s;
    }
    const float inv = 127.0f / a;
    for (index_t i = 0; i < ev; i += 4) {
      const int32x4_t qi = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + i), inv));  // (ties to even; |q| <= 127)
      vstrbq_s32(w + i, qi);
    }
    for (index_t i = ev; i < B; i += 4) vstrbq_s32(w + i, vdupq_n_s32(0));
    return a / 127.0f;
  }

  /// o[d] *= c, d < hd: 3 instructions per vector.
  static void rescale(float* o, index_t hd, float c) {
    asm volatile(
        "dlstp.32 lr, %[n]\n"
        "1:\n"
        "vldrw.u32 q0, [%[o]]\n"
        "vmul.f32 q0, q0, %[c]\n"
        "vstrw.32 q0, [%[o]], #16\n"
        "letp lr, 1b\n"
        : [o] "+r"(o)
        : [n] "r"(hd), [c] "r"(c)
        : "q0", "lr", "memory");
  }
  /// o[d] = o[d] / l, d < hd, on the scalar unit (MVE has no division): 4 at a time by vldm/vstm.
  static void divide(float* o, index_t hd, float l) {
    const index_t n4 = hd / 4;
    asm volatile(
        "wls lr, %[n], 2f\n"
        "1:\n"
        "vldm %[o], {s0-s3}\n"
        "vdiv.f32 s0, s0, %[l]\n"
        "vdiv.f32 s1, s1, %[l]\n"
        "vdiv.f32 s2, s2, %[l]\n"
        "vdiv.f32 s3, s3, %[l]\n"
        "vstmia %[o]!, {s0-s3}\n"
        "le lr, 1b\n"
        "2:\n"
        : [o] "+r"(o)
        : [n] "r"(n4), [l] "t"(l)
        : "s0", "s1", "s2", "s3", "lr", "memory");
    for (index_t d = 0; d < hd % 4; ++d) o[d] = o[d] / l;
  }

  /// P·V of the block for the active rows: out[r][d] = fma(float(Σ_i W[r][i] · v_i[d]), s_b[r],
  /// out[r][d]), the keys i < n (the weights are 0 from each row's e on, so the keys of VT past n,
  /// left from an earlier block or never written, add 0).
  static void values(const std::int8_t (*W)[B], int rows, const bool* active, const bool* first, const float* s_b,
                     const std::int8_t* v, index_t v_stride, index_t hd, index_t n, std::int8_t (*VT)[kChunk][16],
                     std::int32_t (*A)[kChunk], float* out, index_t out_stride) {
    const bool two = n > 16;
    for (index_t d0 = 0; d0 < hd; d0 += kChunk) {
      const index_t nd = hd - d0 < kChunk ? hd - d0 : kChunk;
      transpose(v + d0, v_stride, nd, n < 16 ? n : 16, VT[0][0]);
      if (two) transpose(v + d0 + 16 * v_stride, v_stride, nd, n - 16, VT[1][0]);
      for (int r0 = 0; r0 < rows; r0 += 3) {
        const int rr = rows - r0 < 3 ? rows - r0 : 3;
        const std::int8_t* w = W[r0];
        std::int32_t* a = A[r0];
        if (two) {
          if (rr == 3) sums<3, 2>(w, VT[0][0], nd, a);
          if (rr == 2) sums<2, 2>(w, VT[0][0], nd, a);
          if (rr == 1) sums<1, 2>(w, VT[0][0], nd, a);
        } else {
          if (rr == 3) sums<3, 1>(w, VT[0][0], nd, a);
          if (rr == 2) sums<2, 1>(w, VT[0][0], nd, a);
          if (rr == 1) sums<1, 1>(w, VT[0][0], nd, a);
        }
      }
      for (int r = 0; r < rows; ++r) {
        if (!active[r]) continue;
        float* o = out + r * out_stride + d0;
        const std::int32_t* a = A[r];
        if (first[r]) {
          asm volatile(  // o[d] = float(a[d]) · s_b: 4 instructions per vector
              "dlstp.32 lr, %[n]\n"
              "1:\n"
              "vldrw.u32 q0, [%[a]], #16\n"
              "vcvt.f32.s32 q0, q0\n"
              "vmul.f32 q0, q0, %[s]\n"
              "vstrw.32 q0, [%[o]], #16\n"
              "letp lr, 1b\n"
              : [a] "+r"(a), [o] "+r"(o)
              : [n] "r"(nd), [s] "r"(s_b[r])
              : "q0", "lr", "memory");
          continue;
        }
        asm volatile(  // o[d] = fma(float(a[d]), s_b, o[d]): 6 instructions per vector
            "dlstp.32 lr, %[n]\n"
            "1:\n"
            "vldrw.u32 q0, [%[a]], #16\n"
            "vldrw.u32 q1, [%[o]]\n"
            "vcvt.f32.s32 q0, q0\n"
            "vfma.f32 q1, q0, %[s]\n"
            "vstrw.32 q1, [%[o]], #16\n"
            "letp lr, 1b\n"
            : [a] "+r"(a), [o] "+r"(o)
            : [n] "r"(nd), [s] "r"(s_b[r])
            : "q0", "q1", "lr", "memory");
      }
    }
  }
  /// t[d][i] = v[i][d] for i < n (<= 16), d < nd (<= 16): per key a predicated load of the row and
  /// a byte scatter to the offsets 16·d.
  [[gnu::noinline]] static void transpose(const std::int8_t* v, index_t v_stride, index_t nd, index_t n,
                                          std::int8_t* t) {
    const uint8x16_t offs = vmulq_n_u8(vidupq_n_u8(0u, 1), 16);
    if (nd == 16)
      asm volatile(
          "wls lr, %[n], 2f\n"
          "1:\n"
          "vldrb.u8 q7, [%[v]]\n"
          "add %[v], %[v], %[vs]\n"
          "vstrb.8 q7, [%[t], %q[o]]\n"
          "adds %[t], #1\n"
          "le lr, 1b\n"
          "2:\n"
          : [v] "+r"(v), [t] "+r"(t)
          : [n] "r"(n), [vs] "r"(v_stride), [o] "w"(offs)
          : "q7", "lr", "cc", "memory");
    else
      asm volatile(
          "vctp.8 %[nd]\n"
          "wls lr, %[n], 2f\n"
          "1:\n"
          "vpst\n"
          "vldrbt.u8 q7, [%[v]]\n"
          "add %[v], %[v], %[vs]\n"
          "vpst\n"
          "vstrbt.8 q7, [%[t], %q[o]]\n"
          "adds %[t], #1\n"
          "le lr, 1b\n"
          "2:\n"
          : [v] "+r"(v), [t] "+r"(t)
          : [nd] "r"(nd), [n] "r"(n), [vs] "r"(v_stride), [o] "w"(offs)
          : "q7", "lr", "cc", "memory");
  }
  /// a[r][d] = Σ_i w[r][i] · t[i / 16][d][i % 16] for R rows (<= 3) and d < nd, over H halves of 16
  /// keys: the rows' weight vectors in registers, per dimension H loads, R·H vmladav, R stores.
  template <int R, int H>
  [[gnu::noinline]] static void sums(const std::int8_t* w, const std::int8_t* t, index_t nd, std::int32_t* a) {
    int8x16_t wv[6];
    for (int r = 0; r < 3; ++r)
      for (int h = 0; h < 2; ++h) wv[2 * r + h] = r < R && h < H ? vld1q_s8(w + r * B + 16 * h) : vdupq_n_s8(0);
    const std::int8_t* t1 = t + kChunk * 16;
    asm volatile(
        "wls lr, %[nd], 2f\n"
        "1:\n"
        "vldrb.u8 q6, [%[t0]], #16\n"
        ".if %c[H] > 1\n vldrb.u8 q7, [%[t1]], #16\n .endif\n"
        ".if %c[R] > 1\n"
        " vmladav.s8 r2, %q[w10], q6\n"
        " .if %c[H] > 1\n vmladava.s8 r2, %q[w11], q7\n .endif\n"
        " str r2, [%[a], #4*%c[C]]\n"
        ".endif\n"
        ".if %c[R] > 2\n"
        " vmladav.s8 r4, %q[w20], q6\n"
        " .if %c[H] > 1\n vmladava.s8 r4, %q[w21], q7\n .endif\n"
        " str r4, [%[a], #8*%c[C]]\n"
        ".endif\n"
        "vmladav.s8 r0, %q[w00], q6\n"
        ".if %c[H] > 1\n vmladava.s8 r0, %q[w01], q7\n .endif\n"
        "str r0, [%[a]], #4\n"
        "le lr, 1b\n"
        "2:\n"
        : [t0] "+r"(t), [t1] "+r"(t1), [a] "+r"(a)
        : [nd] "r"(nd), [w00] "w"(wv[0]), [w01] "w"(wv[1]), [w10] "w"(wv[2]), [w11] "w"(wv[3]), [w20] "w"(wv[4]),
          [w21] "w"(wv[5]), [R] "i"(R), [H] "i"(H), [C] "i"(kChunk)
        : "r0", "r2", "r4", "q6", "q7", "lr", "cc", "memory");
  }
};

}  // namespace stf::kernels_detail::helium
#endif
