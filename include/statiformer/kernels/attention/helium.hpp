// statiformer — attention kernels on Cortex-M55 (Helium / MVE): row groups of 2, 3, 4 or 6 over a
// prefix of the keys, scores, exp, sums and P·V in assembly. This file: the entry point
// attention_prefix_rows and the loop over key blocks (queries transposed, running maxima and sums);
// its parts: the scores, exp and sums in helium_scores.hpp, P·V in helium_values.hpp. See
// kernels/README.md.
#pragma once

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/helium_scores.hpp>
#include <statiformer/kernels/attention/helium_values.hpp>
#include <statiformer/kernels/product/helium.hpp>
#include <statiformer/simd/arm_mve.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

namespace stf::kernels_detail::helium {

/// Streaming attention of row groups over a prefix of the keys (generic::Attention::attention_rows
/// calls it): per block of keys the scores, exp and sums (AttentionScores, helium_scores.hpp), the
/// running maxima and sums here, P·V (AttentionValues, helium_values.hpp).
struct Attention : AttentionScores, AttentionValues {
  using AttentionScores::attention_exp;
  using AttentionScores::attention_scores;
  using AttentionScores::attention_sums;
  using AttentionScores::attention_sums32;
  using AttentionScores::kExpLo;
  using AttentionScores::ScoreArgs;
  using AttentionValues::attention_values;
  using AttentionValues::ValueArgs;

  /// Streaming attention of a group of `rows` query rows that all attend to the same keys [0, keys)
  /// (generic::Attention::attention_groups calls it for prefix masks of one length; false: not handled here,
  /// rows 1 and 5). The reference's operations per row and block of 32 keys (see
  /// ref::attention_row), with the group's rows side by side in every step:
  ///  - the queries go transposed into qT [head_dim][rows] (transpose_queries: gathers over panels
  ///    of 4 rows), so that one ldm brings q[0..rows, d];
  ///    the scores are then vectors across 4 keys, one accumulator per row (Kᵀ rows are contiguous
  ///    keys): per step one load, one pointer step, one ldm and `rows` vfma, every lane used
  ///    (attention_scores); divided by the scale (a product by its inverse when the scale is a
  ///    power of two: the same rounding of the same quotient) and their maxima taken as they are
  ///    stored, transposed into pT [keys][rows];
  ///  - exp(s - m) over pT as one flat array (the lanes' maxima repeat every 3 vectors for 1, 2, 3,
  ///    4 or 6 rows), attention_exp: simd_math::exp's operations for arguments <= 0 or NaN (what
  ///    s - max(s) is), where its n > 0 branch and the overflow select do nothing, and its select
  ///    of +0 below its range too where the block's scores cannot reach it (ScoreArgs::smin);
  ///  - the rows' canonical 16-lane sums as one tree of vector additions across the rows;
  ///  - P·V as vectors across 4 outputs, one accumulator per row, ldm of pT[j][0..rows)
  ///    (attention_values), the last block's division by the sum on the S registers.
  static bool attention_prefix_rows(const float* q, index_t q_stride, index_t rows, const float* kt, index_t kt_stride,
                                    const float* v, index_t v_stride, index_t head_dim, index_t keys, float scale,
                                    float* p, float* out, index_t out_stride) {
    switch (rows) {
      case 2:
        attention_group<2>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, keys, scale, p, out, out_stride);
        return true;
      case 3:
        attention_group<3>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, keys, scale, p, out, out_stride);
        return true;
      case 4:
        attention_group<4>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, keys, scale, p, out, out_stride);
        return true;
      case 6:
        attention_group<6>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, keys, scale, p, out, out_stride);
        return true;
      default:
        return false;
    }
  }

 private:
  // ---- attention_prefix_rows' pieces ------------------------------------------------------------
  /// qT[d][r] = q[r, d]: panels of 4 rows (2 or 3 rows: one panel predicated to them; 6: rows 0-3,
  /// then 2-5), a gather per d that steps the rows' addresses by one float (vldrw [q0, #4]!) and a
  /// store that steps by a row of qT (R floats): 4 d per loop iteration, then one at a time.
  template <int R>
  static void transpose_queries(const float* q, index_t q_stride, index_t hd, float* qT) {
    for (int panel = 0; panel < (R > 4 ? 2 : 1); ++panel) {
      const int r0 = panel ? R - 4 : 0;
      alignas(16) uint32_t addr[4];  // (lanes past the rows: row 0's, never accessed)
      for (int i = 0; i < 4; ++i) addr[i] = address(q + (r0 + (r0 + i < R ? i : 0)) * q_stride) - 4u;
      float* t = qT + r0;
      asm volatile(
          ".macro stf_qt_step\n"
          ".if %c[R] < 4\n vpstt\n vldrwt.u32 q1, [q0, #4]!\n vstrwt.32 q1, [%[t]], #4*%c[R]\n"
          ".else\n vldrw.u32 q1, [q0, #4]!\n vstrw.32 q1, [%[t]], #4*%c[R]\n .endif\n"
          ".endm\n"
          "vldrw.u32 q0, [%[addr]]\n"
          ".if %c[R] < 4\n vctp.32 %[nr]\n .endif\n"
          "lsr r12, %[hd], #2\n"
          "wls lr, r12, 2f\n"
          "1:\n"
          ".rept 4\n stf_qt_step\n .endr\n"
          "le lr, 1b\n"
          "2:\n"
          "and r12, %[hd], #3\n"
          "wls lr, r12, 4f\n"
          "3:\n"
          "stf_qt_step\n"
          "le lr, 3b\n"
          "4:\n"
          ".purgem stf_qt_step\n"
          : [t] "+r"(t)
          : [addr] "r"(addr), [hd] "r"(hd), [nr] "r"(R), [R] "i"(R), "m"(addr)
          : "r12", "lr", "q0", "q1", "cc", "memory");
    }
  }
  template <int R>
  static void attention_group(const float* q, index_t q_stride, const float* kt, index_t kt_stride, const float* v,
                              index_t v_stride, index_t hd, index_t keys, float scale, float* p, float* out,
                              index_t out_stride) {
    constexpr index_t B = 32;  // kAttentionKeyBlock (kernels/api.hpp)
    const index_t bs = keys < B ? keys : B;
    float* pT = p;           // [bs][R]; the sums' vectors may read a few floats past it, into qT
    float* qT = p + R * bs;  // [hd][R]
    transpose_queries<R>(q, q_stride, hd, qT);
    // a power-of-two scale divides as its (exact) inverse multiplies
    std::uint32_t sbits;
    std::memcpy(&sbits, &scale, sizeof sbits);
    const bool pow2 = (sbits & 0x007fffffu) == 0 && ((sbits >> 23) & 0xffu) > 1u && ((sbits >> 23) & 0xffu) < 254u;
    const float factor = pow2 ? 1.0f / scale : scale;
    ScoreArgs sa;
    std::memcpy(&sa.scale, &factor, sizeof factor);
    sa.qT = qT;
    sa.kt_stride = static_cast<uint32_t>(kt_stride * 4);
    sa.hd = static_cast<uint32_t>(hd);
    vst1q_u32(sa.addr, vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0u, 1), 4 * R), address(pT)));
    float m[R] = {}, l[R < 4 ? 4 : R] = {};  // (l: read as a whole vector)
    using S = isa::Vocabulary<isa::scalar>;
    for (index_t kb = 0; kb < keys; kb += B) {
      const index_t cnt = keys - kb < B ? keys - kb : B;
      float bm[R];
      for (int r = 0; r < R; ++r) bm[r] = -std::numeric_limits<float>::infinity();
      sa.kt = kt + kb;
      sa.cnt = static_cast<uint32_t>(cnt);
      sa.bm = bm;
      sa.smin = 0x7f800000u;  // +inf
      if (pow2)
        attention_scores<R, false>(sa);
      else
        attention_scores<R, true>(sa);
      // the running maxima; what came before rescaled to them: the sums here, the outputs by
      // attention_values (by c = 1 where the maximum stayed: exact, MVE's outputs are never
      // denormal)
      float c[R];
      bool moved = false;
      for (int r = 0; r < R; ++r) {
        const float m_new = (kb && m[r] > bm[r]) ? m[r] : bm[r];
        c[r] = 1.0f;
        if (kb && m_new != m[r]) {
          c[r] = simd_math::exp<S>(m[r] - m_new);
          l[r] = l[r] * c[r];
          moved = true;
        }
        m[r] = m_new;
      }
      float smin;  // (exp's select of +0 only where the block's scores can reach it)
      std::memcpy(&smin, &sa.smin, sizeof smin);
      attention_exp<R>(pT, cnt, m, smin);
      float bsum[R];
      if (cnt == 32)
        attention_sums32<R>(pT, bsum);
      else
        attention_sums<R>(pT, cnt, bsum);
      for (int r = 0; r < R; ++r) l[r] = kb ? l[r] + bsum[r] : bsum[r];
      const bool last = kb + B >= keys;
      ValueArgs va{pT,
                   v + kb * v_stride,
                   static_cast<uint32_t>(v_stride * 4),
                   static_cast<uint32_t>(cnt),
                   out,
                   static_cast<uint32_t>(out_stride * 4),
                   static_cast<uint32_t>(hd),
                   (kb == 0 ? 1u : 0u) | (last ? 2u : 0u) | (moved ? 4u : 0u),
                   l,
                   c};
      attention_values<R>(va);
    }
  }
};

}  // namespace stf::kernels_detail::helium
#endif
