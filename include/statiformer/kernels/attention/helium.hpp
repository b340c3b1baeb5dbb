// statiformer — attention kernels on Cortex-M55 (Helium / MVE): row groups of 2, 3, 4 or 6 over a
// prefix of the keys, scores, exp, sums and P·V in assembly. See kernels/README.md.
#pragma once

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/product/helium.hpp>
#include <statiformer/simd/arm_mve.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

namespace stf::kernels_detail::helium {

/// Streaming attention of row groups over a prefix of the keys (generic::Attention::attention_rows
/// calls it).
struct Attention {
  using I = isa::Vocabulary<isa::mve>;
  using V = I::V;

  /// Streaming attention of a group of `rows` query rows that all attend to the same keys [0, keys)
  /// (generic::Attention::attention_groups calls it for prefix masks of one length; false: not handled here,
  /// rows 1 and 5). The reference's operations per row and block of 32 keys (see
  /// ref::attention_row), with the group's rows side by side in every step:
  ///  - the queries go transposed into qT [head_dim][rows], so that one ldm brings q[0..rows, d];
  ///    the scores are then vectors across 4 keys, one accumulator per row (Kᵀ rows are contiguous
  ///    keys): per step one load, one pointer step, one ldm and `rows` vfma, every lane used
  ///    (attention_scores); divided by the scale (a product by its inverse when the scale is a
  ///    power of two: the same rounding of the same quotient) and their maxima taken as they are
  ///    stored, transposed into pT [keys][rows];
  ///  - exp(s - m) over pT as one flat array (the lanes' maxima repeat every 3 vectors for 1, 2, 3,
  ///    4 or 6 rows), attention_exp: simd_math::exp's operations for arguments <= 0 or NaN (what
  ///    s - max(s) is), where its n > 0 branch and the overflow select do nothing;
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
  template <int R>
  static void attention_group(const float* q, index_t q_stride, const float* kt, index_t kt_stride, const float* v,
                              index_t v_stride, index_t hd, index_t keys, float scale, float* p, float* out,
                              index_t out_stride) {
    constexpr index_t B = 32;  // kAttentionKeyBlock (kernels/api.hpp)
    const index_t bs = keys < B ? keys : B;
    float* pT = p;           // [bs][R]; the sums' vectors may read a few floats past it, into qT
    float* qT = p + R * bs;  // [hd][R]
    {
      const uint32x4_t offs = vmulq_n_u32(vidupq_n_u32(0u, 1), R);
      const index_t full = hd & ~index_t{3};
      for (int r = 0; r < R; ++r) {
        const float* qr = q + r * q_stride;
        for (index_t d = 0; d < full; d += 4)
          vstrwq_scatter_shifted_offset_f32(qT + d * R + r, offs, vld1q_f32(qr + d));
        if (full < hd) {
          const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(hd - full));
          vstrwq_scatter_shifted_offset_p_f32(qT + full * R + r, offs, vldrwq_z_f32(qr + full, pr), pr);
        }
      }
    }
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
      attention_exp<R>(pT, cnt, m);
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

  struct ScoreArgs {          // (byte offsets in the assembly)
    std::uint32_t addr[4];    // 0: pT + lane·R (the lanes' keys), advanced by 4 keys per vector
    const float* qT;          // 16
    const float* kt;          // 20: Kᵀ at the block's first key
    std::uint32_t kt_stride;  // 24: bytes
    std::uint32_t hd;         // 28
    std::uint32_t cnt;        // 32: keys in the block
    float* bm;                // 36: the rows' maxima, updated
    std::uint32_t scale;      // 40: bits of the inverse scale (multiply) or of the scale (divide)
  };
  /// The scores of R rows (qT) with the block's cnt keys, divided by the scale, stored in pT[j][r]
  /// (ScoreArgs::addr), their maxima into bm. Per 4 keys: accumulators q0..q(R-1), hd steps of
  /// fma(kt[d, j..j+3], q[r, d]) (the last vector's loads predicated), then the scale,
  /// the maxima (vmaxnmv; any order gives the same maximum of non-NaN values, and a signed zero's
  /// sign changes neither s - m nor exp), the scatter stores.
  template <int R, bool Div>
  [[gnu::noinline]] static void attention_scores(const ScoreArgs& a) {
    asm volatile(
        ".macro stf_sc_step pred, op=vfma\n"
        ".if \\pred\n vpst\n vldrwt.u32 q6, [r7]\n .else\n vldrw.u32 q6, [r7]\n .endif\n"
        "add r7, r7, r8\n"
        ".if %c[R] == 1\n ldr r0, [r6], #4\n .else\n ldm r6!, {r0-r%c[last]}\n .endif\n"
        "\\op\\().f32 q0, q6, r0\n"
        ".if %c[R] > 1\n \\op\\().f32 q1, q6, r1\n .endif\n"
        ".if %c[R] > 2\n \\op\\().f32 q2, q6, r2\n .endif\n"
        ".if %c[R] > 3\n \\op\\().f32 q3, q6, r3\n .endif\n"
        ".if %c[R] > 4\n \\op\\().f32 q4, q6, r4\n .endif\n"
        ".if %c[R] > 5\n \\op\\().f32 q5, q6, r5\n .endif\n"
        ".endm\n"
        // hd steps: the first a product (fma(a, b, +0) but for a zero's sign, which neither the
        // maximum's value nor any s - m nor exp sees), hd - 1 mod 4 single ones, then 4 per loop
        // iteration
        ".macro stf_sc_loop pred\n"
        "stf_sc_step \\pred, vmul\n"
        "ldr r12, [%[a], #28]\n"
        "sub r12, r12, #1\n"
        "lsls lr, r12, #31\n"
        "bpl 21f\n"
        "stf_sc_step \\pred\n"
        "21:\n"
        "bcc 22f\n"
        "stf_sc_step \\pred\n"
        "stf_sc_step \\pred\n"
        "22:\n"
        "lsr r12, r12, #2\n"
        "wls lr, r12, 24f\n"
        "23:\n"
        "stf_sc_step \\pred\n"
        "stf_sc_step \\pred\n"
        "stf_sc_step \\pred\n"
        "stf_sc_step \\pred\n"
        "le lr, 23b\n"
        "24:\n"
        ".endm\n"
        "vldrw.u32 q7, [%[a]]\n"
        "ldr r9, [%[a], #32]\n"   // keys left
        "ldr r10, [%[a], #20]\n"  // Kᵀ at the key vector
        "ldr r8, [%[a], #24]\n"
        "1:\n"
        "ldr r6, [%[a], #16]\n"
        "mov r7, r10\n"
        "cmp r9, #4\n"
        "blt 2f\n"
        "stf_sc_loop 0\n"
        "b 3f\n"
        "2:\n"
        "vctp.32 r9\n"
        "stf_sc_loop 1\n"
        "3:\n"
        "ldr r0, [%[a], #40]\n"  // the scale or its inverse
        ".if %c[div] == 0\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmul.f32 q\\i, q\\i, r0\n .endif\n .endr\n"
        ".else\n"
        "vmov s24, r0\n"
        ".irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23\n"
        " .if \\i < 4 * %c[R]\n vdiv.f32 s\\i, s\\i, s24\n .endif\n"
        ".endr\n"
        ".endif\n"
        "ldr r12, [%[a], #36]\n"
        ".if %c[R] == 1\n ldr r0, [r12]\n .else\n ldm r12, {r0-r%c[last]}\n .endif\n"
        "cmp r9, #4\n"
        "blt 6f\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmaxnmv.f32 r\\i, q\\i\n vstrw.32 q\\i, [q7, #4*\\i]\n .endif\n "
        ".endr\n"
        "b 7f\n"
        "6:\n"
        "vctp.32 r9\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vpstt\n vmaxnmvt.f32 r\\i, q\\i\n vstrwt.32 q\\i, [q7, #4*\\i]\n "
        ".endif\n .endr\n"
        "7:\n"
        ".if %c[R] == 1\n str r0, [r12]\n .else\n stm r12, {r0-r%c[last]}\n .endif\n"
        "mov r0, #16*%c[R]\n"  // the next 4 keys
        "vadd.i32 q7, q7, r0\n"
        "add r10, r10, #16\n"
        "subs r9, r9, #4\n"
        "bgt 1b\n"
        ".purgem stf_sc_loop\n"
        ".purgem stf_sc_step\n"
        :
        : [a] "r"(&a), [R] "i"(R), [last] "i"(R - 1), [div] "i"(Div), "m"(a)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r12", "lr", "q0", "q1", "q2", "q3", "q4",
          "q5", "q6", "q7", "cc", "memory");
  }

  /// pT[j][r] = exp(pT[j][r] - m[r]) for j < cnt: a flat array of cnt·R floats whose lanes' maxima
  /// repeat every 12 floats (3 vectors). Groups of 3 vectors in assembly (constants in r0-r11, the
  /// maxima in q5-q7), the rest through exp (the same operations).
  template <int R>
  static void attention_exp(float* pT, index_t cnt, const float* m) {
    static_assert(12 % R == 0);
    alignas(16) float mv[12];
    for (int i = 0; i < 12; ++i) mv[i] = m[i % R];
    const index_t n = cnt * R;
    exp_groups12(pT, n / 12, n % 12, mv);
  }
  /// `groups` groups of 12 floats (3 vectors, the maxima q5, q6, q7), then `rest` (< 12) floats
  /// in a tail-predicated loop that turns the maxima q5 <- q6 <- q7 after each vector.
  [[gnu::noinline]] static void exp_groups12(float* p, index_t groups, index_t rest, const float* mv) {
    alignas(8) static constexpr float kConstants[] = {
        12582912.0f,   1.44269504088896341f, -0.693359375f, 2.12194440e-4f, 1.0f / 5040.0f, 1.0f / 720.0f,
        1.0f / 120.0f, 1.0f / 24.0f,         1.0f / 6.0f,   0.5f,           1.0f,           -87.3365448f};
    struct {
      float* p;
      std::uint32_t groups;
      const float* mv;
      const float* c;
      std::uint32_t rest;
    } args{p, static_cast<std::uint32_t>(groups), mv, kConstants, static_cast<std::uint32_t>(rest)};
    void* a = &args;
    asm volatile(
        // x = s - m, and the predicate x < lo; n = fma(x, log2e, magic) - magic (nm: its bits are
        // magic's + n); r = fma(n, -c1, x), fma(n, c2, r) in x's register; Horner; p · 2^n as
        // bits(p) + (n << 23) = bits(p) + (bits(nm) << 23) (magic's low 9 bits are 0): exact where
        // the product is normal (p in [0.7, 1.42], n in [-126, 0]), and where it is not (n = -126,
        // p < 1) a denormal that every MVE use flushes to zero, as it flushes vmul's result; x < lo: +0.
        // A NaN x needs no select: MVE arithmetic returns the default NaN (FPSCR.DN as in the
        // standard FPSCR value), which x = s - m already is, so NaN in, the same NaN out.
        ".macro stf_exp_vec m\n"
        "vldrw.u32 q0, [%[a]]\n"
        "vsub.f32 q0, q0, \\m\n"
        "vcmp.f32 lt, q0, r11\n"
        "vdup.32 q1, r0\n"
        "vfma.f32 q1, q0, r1\n"
        "vsub.f32 q2, q1, r0\n"
        "vfma.f32 q0, q2, r2\n"
        "vfma.f32 q0, q2, r3\n"
        "vdup.32 q4, r4\n"
        "vfmas.f32 q4, q0, r5\n"
        "vfmas.f32 q4, q0, r6\n"
        "vfmas.f32 q4, q0, r7\n"
        "vfmas.f32 q4, q0, r8\n"
        "vfmas.f32 q4, q0, r9\n"
        "vfmas.f32 q4, q0, r10\n"
        "vfmas.f32 q4, q0, r10\n"
        "vshl.i32 q1, q1, #23\n"
        "vadd.i32 q4, q4, q1\n"
        "vpst\n"
        "vmovt.i32 q4, #0\n"
        "vstrw.32 q4, [%[a]], #16\n"
        ".endm\n"
        "ldr r0, [%[a], #8]\n"
        "vldrw.u32 q5, [r0]\n"
        "vldrw.u32 q6, [r0, #16]\n"
        "vldrw.u32 q7, [r0, #32]\n"
        "ldr r1, [%[a], #16]\n"  // rest, kept in s12 (q3 is free)
        "vmov s12, r1\n"
        "ldr lr, [%[a], #4]\n"  // groups
        "ldr r0, [%[a], #12]\n"
        "ldr %[a], [%[a]]\n"
        "ldm r0, {r0-r11}\n"
        "wls lr, lr, 2f\n"
        "1:\n"
        "stf_exp_vec q5\n"
        "stf_exp_vec q6\n"
        "stf_exp_vec q7\n"
        "le lr, 1b\n"
        "2:\n"
        "vmov s13, r1\n"  // (log2e kept in s13 meanwhile)
        "vmov r1, s12\n"
        "wlstp.32 lr, r1, 4f\n"
        "vmov r1, s13\n"
        "3:\n"
        "stf_exp_vec q5\n"
        "vmov q1, q5\n"
        "vmov q5, q6\n"
        "vmov q6, q7\n"
        "vmov q7, q1\n"
        "letp lr, 3b\n"
        "4:\n"
        ".purgem stf_exp_vec\n"
        : [a] "+r"(a)
        :  // (args and the constants: read through a, "memory")
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "lr", "q0", "q1", "q2", "q3", "q4",
          "q5", "q6", "q7", "cc", "memory");
  }

  /// The R rows' canonical sums of pT[j][r], j < cnt <= 32 (lane k of row r: the keys k and k+16,
  /// from +0, folded as reduce16), vectors across the rows: rows 0-3 from pT[j][0..3], rows 4-5 from
  /// pT[j][2..5]; for 2 and 3 rows the lanes past the last row hold another key's values, unused.
  template <int R>
  static void attention_sums(const float* pT, index_t cnt, float* sums) {
    const auto tree = [&](const float* base) {
      const bool whole = cnt == 32;  // (the usual block: no conditions)
      const auto leaf = [&](index_t i) {
        if (whole) return vaddq_f32(vld1q_f32(base + i * R), vld1q_f32(base + (i + 16) * R));
        V a = i < cnt ? vld1q_f32(base + i * R) : vdupq_n_f32(0.0f);
        return i + 16 < cnt ? vaddq_f32(a, vld1q_f32(base + (i + 16) * R)) : a;
      };
      const auto b = [&](index_t i) { return vaddq_f32(leaf(i), leaf(i + 8)); };
      const auto c = [&](index_t i) { return vaddq_f32(b(i), b(i + 4)); };
      const auto d = [&](index_t i) { return vaddq_f32(c(i), c(i + 2)); };
      return vaddq_f32(d(0), d(1));
    };
    const V t = tree(pT);
    for (int r = 0; r < (R < 4 ? R : 4); ++r) sums[r] = lane(t, r);
    if constexpr (R > 4) {
      const V u = tree(pT + 2);
      sums[4] = lane(u, 2);
      sums[5] = lane(u, 3);
    }
  }
  /// attention_sums for 32 keys in assembly: the tree in the order of the folds (lane i: keys i,
  /// i + 16; then i + 8, i + 4, i + 2, i + 1), the keys through pointers that step by R floats.
  template <int R>
  static void attention_sums32(const float* pT, float* sums) {
    alignas(16) float t[8];
    sum_tree32<R>(pT, t);
    if constexpr (R > 4) sum_tree32<R>(pT + 2, t + 4);
    for (int r = 0; r < (R < 4 ? R : 4); ++r) sums[r] = t[r];
    if constexpr (R > 4) {
      sums[4] = t[6];
      sums[5] = t[7];
    }
  }
  template <int R>
  [[gnu::noinline]] static void sum_tree32(const float* base, float* t) {
    const float* p0 = base;
    const float* p1 = base + 8 * R;
    const float* p2 = base + 16 * R;
    const float* p3 = base + 24 * R;
    asm volatile(
        // B_i = A_i + A_(i+8), A_i = key i + key i + 16: q0..q3 B_0..B_3, then + B_4..B_7
        ".macro stf_sum_leaves\n"  // q4 = A_i + A_(i+8), the pointers to key i + 1
        "vldrw.u32 q4, [%[p0]], #4*%c[R]\n"
        "vldrw.u32 q5, [%[p1]], #4*%c[R]\n"
        "vldrw.u32 q6, [%[p2]], #4*%c[R]\n"
        "vldrw.u32 q7, [%[p3]], #4*%c[R]\n"
        "vadd.f32 q4, q4, q6\n"
        "vadd.f32 q5, q5, q7\n"
        "vadd.f32 q4, q4, q5\n"
        ".endm\n"
        ".irp i, 0, 1, 2, 3\n stf_sum_leaves\n vmov q\\i, q4\n .endr\n"
        ".irp i, 0, 1, 2, 3\n stf_sum_leaves\n vadd.f32 q\\i, q\\i, q4\n .endr\n"
        ".purgem stf_sum_leaves\n"
        "vadd.f32 q0, q0, q2\n"
        "vadd.f32 q1, q1, q3\n"
        "vadd.f32 q0, q0, q1\n"
        "vstrw.32 q0, [%[t]]\n"
        : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3)
        : [t] "r"(t), [R] "i"(R)
        : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
  }
  static float lane(V v, int i) {
    switch (i) {
      case 0:
        return vgetq_lane_f32(v, 0);
      case 1:
        return vgetq_lane_f32(v, 1);
      case 2:
        return vgetq_lane_f32(v, 2);
      default:
        return vgetq_lane_f32(v, 3);
    }
  }

  struct ValueArgs {           // (byte offsets in the assembly)
    const float* pT;           // 0
    const float* v;            // 4: V at the block's first key
    std::uint32_t v_stride;    // 8: bytes
    std::uint32_t cnt;         // 12
    float* out;                // 16
    std::uint32_t out_stride;  // 20: bytes
    std::uint32_t hd;          // 24
    std::uint32_t flags;       // 28: bit 0 from +0 (else from out), bit 1 divide by l, bit 2 rescale by c
    const float* l;            // 32
    const float* c;            // 36
  };
  /// out[r, d] = fma(pT[j][r], v[j, d], out[r, d]) over the block's keys in order, 4 outputs at a
  /// time (the last vector predicated): accumulators q0..q(R-1), per key one ldm of pT[j], one
  /// load of v, a pointer step, R vfma. With the last block, then divided by l[r] lane by lane.
  template <int R>
  [[gnu::noinline]] static void attention_values(const ValueArgs& a) {
    asm volatile(
        ".macro stf_pv_step pred\n"
        ".if %c[R] == 1\n ldr r0, [r6], #4\n .else\n ldm r6!, {r0-r%c[last]}\n .endif\n"
        ".if \\pred\n vpst\n vldrwt.u32 q6, [r7]\n .else\n vldrw.u32 q6, [r7]\n .endif\n"
        "add r7, r7, r8\n"
        "vfma.f32 q0, q6, r0\n"
        ".if %c[R] > 1\n vfma.f32 q1, q6, r1\n .endif\n"
        ".if %c[R] > 2\n vfma.f32 q2, q6, r2\n .endif\n"
        ".if %c[R] > 3\n vfma.f32 q3, q6, r3\n .endif\n"
        ".if %c[R] > 4\n vfma.f32 q4, q6, r4\n .endif\n"
        ".if %c[R] > 5\n vfma.f32 q5, q6, r5\n .endif\n"
        ".endm\n"
        ".macro stf_pv_loop pred\n"  // cnt steps: cnt mod 4 single ones, then 4 per loop iteration
        "ldr r0, [%[a], #12]\n"
        "lsls lr, r0, #31\n"
        "bpl 21f\n"
        "stf_pv_step \\pred\n"
        "21:\n"
        "bcc 22f\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "22:\n"
        "ldr r0, [%[a], #12]\n"
        "lsr r0, r0, #2\n"
        "wls lr, r0, 24f\n"
        "23:\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "le lr, 23b\n"
        "24:\n"
        ".endm\n"
        ".macro stf_pv_rows op, sfx, pred\n"  // load or store the accumulators at out rows from r12
        "mov r0, r12\n"
        "ldr r1, [%[a], #20]\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n"
        " .if \\i < %c[R]\n"
        "  .if \\pred\n vpst\n \\op\\()t.\\sfx q\\i, [r0]\n .else\n \\op\\().\\sfx q\\i, [r0]\n .endif\n"
        "  add r0, r0, r1\n"
        " .endif\n"
        ".endr\n"
        ".endm\n"
        "ldr r9, [%[a], #24]\n"   // outputs left
        "ldr r10, [%[a], #4]\n"   // V at the output vector
        "ldr r12, [%[a], #16]\n"  // out at the output vector
        "ldr r8, [%[a], #8]\n"
        "1:\n"
        "vctp.32 r9\n"
        "ldr r0, [%[a], #28]\n"
        "tst r0, #1\n"
        "beq 2f\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmov.i32 q\\i, #0\n .endif\n .endr\n"
        "b 4f\n"
        "2:\n"
        "cmp r9, #4\n"
        "blt 3f\n"
        "stf_pv_rows vldrw, u32, 0\n"
        "b 10f\n"
        "3:\n"
        "stf_pv_rows vldrw, u32, 1\n"
        "10:\n"
        "ldr r0, [%[a], #28]\n"  // rescaled: out[r] · c[r]
        "tst r0, #4\n"
        "beq 4f\n"
        "ldr r0, [%[a], #36]\n"
        ".if %c[R] == 1\n ldr r0, [r0]\n .else\n ldm r0, {r0-r%c[last]}\n .endif\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmul.f32 q\\i, q\\i, r\\i\n .endif\n .endr\n"
        "4:\n"
        "ldr r6, [%[a]]\n"
        "mov r7, r10\n"
        "cmp r9, #4\n"
        "blt 5f\n"
        "stf_pv_loop 0\n"
        "b 6f\n"
        "5:\n"
        "vctp.32 r9\n"
        "stf_pv_loop 1\n"
        "6:\n"
        "ldr r0, [%[a], #28]\n"
        "tst r0, #2\n"
        "beq 7f\n"
        "ldr r0, [%[a], #32]\n"  // l[0..R) into s24..
        "vldrw.u32 q6, [r0]\n"
        ".if %c[R] > 4\n vldr s28, [r0, #16]\n vldr s29, [r0, #20]\n .endif\n"
        ".if %c[R] > 0\n vdiv.f32 s0, s0, s24\n vdiv.f32 s1, s1, s24\n vdiv.f32 s2, s2, s24\n vdiv.f32 s3, s3, s24\n "
        ".endif\n"
        ".if %c[R] > 1\n vdiv.f32 s4, s4, s25\n vdiv.f32 s5, s5, s25\n vdiv.f32 s6, s6, s25\n vdiv.f32 s7, s7, s25\n "
        ".endif\n"
        ".if %c[R] > 2\n vdiv.f32 s8, s8, s26\n vdiv.f32 s9, s9, s26\n vdiv.f32 s10, s10, s26\n vdiv.f32 s11, s11, "
        "s26\n .endif\n"
        ".if %c[R] > 3\n vdiv.f32 s12, s12, s27\n vdiv.f32 s13, s13, s27\n vdiv.f32 s14, s14, s27\n vdiv.f32 s15, "
        "s15, s27\n .endif\n"
        ".if %c[R] > 4\n vdiv.f32 s16, s16, s28\n vdiv.f32 s17, s17, s28\n vdiv.f32 s18, s18, s28\n vdiv.f32 s19, "
        "s19, s28\n .endif\n"
        ".if %c[R] > 5\n vdiv.f32 s20, s20, s29\n vdiv.f32 s21, s21, s29\n vdiv.f32 s22, s22, s29\n vdiv.f32 s23, "
        "s23, s29\n .endif\n"
        "7:\n"
        "cmp r9, #4\n"
        "blt 8f\n"
        "stf_pv_rows vstrw, 32, 0\n"
        "b 9f\n"
        "8:\n"
        "vctp.32 r9\n"
        "stf_pv_rows vstrw, 32, 1\n"
        "9:\n"
        "add r12, r12, #16\n"
        "add r10, r10, #16\n"
        "subs r9, r9, #4\n"
        "bgt 1b\n"
        ".purgem stf_pv_rows\n"
        ".purgem stf_pv_loop\n"
        ".purgem stf_pv_step\n"
        :
        : [a] "r"(&a), [R] "i"(R), [last] "i"(R - 1), "m"(a)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r12", "lr", "q0", "q1", "q2", "q3", "q4",
          "q5", "q6", "q7", "cc", "memory");
  }
};

}  // namespace stf::kernels_detail::helium
#endif
