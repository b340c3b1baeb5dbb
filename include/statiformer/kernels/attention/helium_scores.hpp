// statiformer — helium::Attention's scores part (Cortex-M55, Helium / MVE): for one block of keys
// and a group of 2, 3, 4 or 6 query rows, the scores (Q·Kᵀ divided by the scale, their maxima),
// exp(s - m) over them and the rows' canonical sums, in assembly: the block's softmax weights
// before the division by the sum. The entry point and the loop over key blocks are in
// kernels/attention/helium.hpp, the product with the values in helium_values.hpp. See
// kernels/README.md.
#pragma once

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>

#include <cstdint>

#include <statiformer/config.hpp>
#include <statiformer/simd/arm_mve.hpp>

namespace stf::kernels_detail::helium {

/// The scores, exp and sums of a group of R rows over one block of keys, stored transposed in
/// pT [keys][R] (helium::Attention::attention_group calls them per block).
struct AttentionScores {
  using I = isa::Vocabulary<isa::mve>;
  using V = I::V;

  struct ScoreArgs {          // (byte offsets in the assembly)
    std::uint32_t addr[4];    // 0: pT + lane·R (the lanes' keys), advanced by 4 keys per vector
    const float* qT;          // 16
    const float* kt;          // 20: Kᵀ at the block's first key
    std::uint32_t kt_stride;  // 24: bytes
    std::uint32_t hd;         // 28
    std::uint32_t cnt;        // 32: keys in the block
    float* bm;                // 36: the rows' maxima, updated
    std::uint32_t scale;      // 40: bits of the inverse scale (multiply) or of the scale (divide)
    std::uint32_t smin;       // 44: bits of +inf, lowered to a bound from below of the block's scores
                              //     over all its rows (for attention_exp's clamp)
  };
  /// The scores of R rows (qT) with the block's cnt keys, divided by the scale, stored in pT[j][r]
  /// (ScoreArgs::addr), their maxima into bm. Per 4 keys: accumulators q0..q(R-1), hd steps of
  /// fma(kt[d, j..j+3], q[r, d]) (the last vector's loads predicated), then the scale,
  /// the maxima (vmaxnmv; any order gives the same maximum of non-NaN values, and a signed zero's
  /// sign changes neither s - m nor exp), the scatter stores, a bound from below of the block's
  /// scores over every row (vminnmv into ScoreArgs::smin).
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
        // the minimum over the rows, unpredicated: a last vector's lanes past the keys hold zeros
        // (or NaN, which vminnmv skips), which can only lower it (the bound stays a bound)
        "ldr r0, [%[a], #44]\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vminnmv.f32 r0, q\\i\n .endif\n .endr\n"
        "str r0, [%[a], #44]\n"
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

  /// exp's lower bound: x < kExpLo gives +0.
  static constexpr float kExpLo = -87.3365448f;
  /// pT[j][r] = exp(pT[j][r] - m[r]) for j < cnt: a flat array of cnt·R floats whose lanes' maxima
  /// repeat every 12 floats (3 vectors). Groups of 3 vectors in assembly (constants in r0-r11, the
  /// maxima in q5-q7), the rest through exp (the same operations). smin: a bound from below of
  /// the block's scores (ScoreArgs::smin); exp's select of +0 for x < kExpLo is left out where
  /// smin - max m cannot reach it (it would change nothing: subtraction rounds monotonically, so
  /// every s - m[r] is at least that; a NaN bound keeps the select).
  template <int R>
  static void attention_exp(float* pT, index_t cnt, const float* m, float smin) {
    static_assert(12 % R == 0);
    alignas(16) float mv[12];
    for (int i = 0; i < 12; ++i) mv[i] = m[i % R];
    const V m0 = vld1q_f32(mv);  // (every row's maximum: mv[0..4) for 2, 3 or 4 rows, mv[0..8) for 6)
    const float mmax = vmaxnmvq_f32(R > 4 ? vmaxnmvq_f32(mv[0], vld1q_f32(mv + 4)) : mv[0], m0);
    const index_t n = cnt * R;
    if (!(smin - mmax >= kExpLo))
      exp_groups12<true>(pT, n / 12, n % 12, mv);
    else
      exp_groups12<false>(pT, n / 12, n % 12, mv);
  }
  /// `groups` groups of 12 floats (3 vectors, the maxima q5, q6, q7), then `rest` (< 12) floats
  /// in a tail-predicated loop that turns the maxima q5 <- q6 <- q7 after each vector. Clamp =
  /// false: no x is below lo (the caller knows), 17 instructions per vector instead of 23: no
  /// select, and bits(p) + (bits(nm) << 23) as one vmla by 1 << 23 (the same integer, mod 2^32).
  template <bool Clamp>
  [[gnu::noinline]] static void exp_groups12(float* p, index_t groups, index_t rest, const float* mv) {
    alignas(8) static constexpr float kConstants[] = {
        12582912.0f,
        1.44269504088896341f,
        -0.693359375f,
        2.12194440e-4f,
        1.0f / 5040.0f,
        1.0f / 720.0f,
        1.0f / 120.0f,
        1.0f / 24.0f,
        1.0f / 6.0f,
        0.5f,
        1.0f,
        Clamp ? kExpLo : 1.17549435e-38f};  // (r11: lo, or without the select the bits 1 << 23, FLT_MIN's)
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
        // (the predicate x < lo: MVE's `lt` holds for an unordered compare too, so a NaN x would end
        // as +0; the second compare, predicated, ANDs x == x into it)
        ".if %c[clamp]\n vcmp.f32 lt, q0, r11\n vpst\n vcmpt.f32 eq, q0, q0\n .endif\n"
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
        ".if %c[clamp]\n vshl.i32 q1, q1, #23\n vadd.i32 q4, q4, q1\n .else\n vmla.u32 q4, q1, r11\n .endif\n"
        ".if %c[clamp]\n vpst\n vmovt.i32 q4, #0\n .endif\n"
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
        : [clamp] "i"(Clamp)  // (args and the constants: read through a, "memory")
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
};

}  // namespace stf::kernels_detail::helium
#endif
