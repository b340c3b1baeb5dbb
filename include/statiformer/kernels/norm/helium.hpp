// statiformer — LayerNorm kernels on Cortex-M55 (Helium / MVE), in assembly. See kernels/README.md.
#pragma once

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>

#include <statiformer/config.hpp>
#include <statiformer/simd/arm_mve.hpp>

namespace stf::kernels_detail::helium {

/// LayerNorm rows (generic::Norm::layer_norm_rows calls them).
struct Norm {
  using I = isa::Vocabulary<isa::mve>;
  using V = I::V;

  /// LayerNorm, torch kind, of a row of a multiple of 16 (generic::Norm::layer_norm_rows calls it): the
  /// same operations (canonical 16-lane sums over 4 accumulator vectors folded as reduce16, then
  /// ((x - mean) · inv) · gain + bias), in assembly with post-incremented loads and the mean and
  /// inverse as scalar operands (GCC: 424 instructions for a row of 64).
  [[gnu::noinline]] static void layer_norm16(const float* x, const float* gain, const float* bias, index_t n, float eps,
                                             float* y) {
    if (n == 16) return layer_norm_16(x, gain, bias, eps, y);
    const float* xs;
    uint32_t mean, inv;
    asm volatile(
        "vmov s20, %[nf]\n"  // s20: n, s21: eps (S registers of q5)
        "vmov s21, %[eps]\n"
        "vmov.i32 q0, #0\n"  // mean: the canonical 16-lane sum (4 vectors) / n
        "vmov.i32 q1, #0\n"
        "vmov.i32 q2, #0\n"
        "vmov.i32 q3, #0\n"
        "mov %[xs], %[x]\n"
        "wls lr, %[n16], 2f\n"
        "1:\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vadd.f32 q0, q0, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vadd.f32 q1, q1, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vadd.f32 q2, q2, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vadd.f32 q3, q3, q4\n"
        "le lr, 1b\n"
        "2:\n"
        "vadd.f32 q0, q0, q2\n"
        "vadd.f32 q1, q1, q3\n"
        "vadd.f32 q0, q0, q1\n"
        "vadd.f32 s0, s0, s2\n"
        "vadd.f32 s1, s1, s3\n"
        "vadd.f32 s22, s0, s1\n"
        "vdiv.f32 s22, s22, s20\n"  // s22: mean
        "vmov %[mean], s22\n"
        "vmov.i32 q0, #0\n"  // ss: the canonical sum of (x - mean)^2
        "vmov.i32 q1, #0\n"
        "vmov.i32 q2, #0\n"
        "vmov.i32 q3, #0\n"
        "mov %[xs], %[x]\n"
        "wls lr, %[n16], 4f\n"
        "3:\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vfma.f32 q0, q4, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vfma.f32 q1, q4, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vfma.f32 q2, q4, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vfma.f32 q3, q4, q4\n"
        "le lr, 3b\n"
        "4:\n"
        "vadd.f32 q0, q0, q2\n"
        "vadd.f32 q1, q1, q3\n"
        "vadd.f32 q0, q0, q1\n"
        "vadd.f32 s0, s0, s2\n"
        "vadd.f32 s1, s1, s3\n"
        "vadd.f32 s23, s0, s1\n"
        "vdiv.f32 s23, s23, s20\n"  // inv = 1 / sqrt(ss / n + eps)
        "vadd.f32 s23, s23, s21\n"
        "vsqrt.f32 s23, s23\n"
        "vmov.f32 s20, #1.0\n"
        "vdiv.f32 s23, s20, s23\n"
        "vmov %[inv], s23\n"
        "wls lr, %[n16], 6f\n"  // y = ((x - mean) · inv) · gain + bias, 4 vectors per iteration
        "5:\n"
        ".rept 4\n"
        "vldrw.u32 q4, [%[x]], #16\n"
        "vldrw.u32 q5, [%[g]], #16\n"
        "vldrw.u32 q6, [%[b]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vmul.f32 q4, q4, %[inv]\n"
        "vmul.f32 q4, q4, q5\n"
        "vadd.f32 q4, q4, q6\n"
        "vstrw.32 q4, [%[y]], #16\n"
        ".endr\n"
        "le lr, 5b\n"
        "6:\n"
        : [x] "+r"(x), [g] "+r"(gain), [b] "+r"(bias), [y] "+r"(y), [xs] "=&r"(xs), [mean] "=&r"(mean), [inv] "=&r"(inv)
        : [n16] "r"(n / 16), [nf] "r"(static_cast<float>(n)), [eps] "r"(eps)
        : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "lr", "memory");
  }
  /// layer_norm16 for a row of exactly 16, held in q0-q3 from one load each: each lane's sum is
  /// 0 + x[i] (the fold's result + 0 gives the same bits: only a -0 could differ, and only in the
  /// end), the squares' 0 + d·d are d·d, then the same folds, scalar steps and normalization.
  static void layer_norm_16(const float* x, const float* gain, const float* bias, float eps, float* y) {
    asm volatile(
        "vldrw.u32 q0, [%[x]]\n"
        "vldrw.u32 q1, [%[x], #16]\n"
        "vldrw.u32 q2, [%[x], #32]\n"
        "vldrw.u32 q3, [%[x], #48]\n"
        "vadd.f32 q4, q0, q2\n"  // mean
        "vadd.f32 q5, q1, q3\n"
        "vadd.f32 q4, q4, q5\n"
        "vadd.f32 s16, s16, s18\n"
        "vadd.f32 s17, s17, s19\n"
        "vadd.f32 s16, s16, s17\n"
        "vmov.i32 q5, #0\n"
        "vadd.f32 s16, s16, s20\n"
        "vmov.f32 s20, #16.0\n"
        "vdiv.f32 s16, s16, s20\n"
        "vmov %[x], s16\n"
        "vsub.f32 q0, q0, %[x]\n"  // d = x - mean
        "vsub.f32 q1, q1, %[x]\n"
        "vsub.f32 q2, q2, %[x]\n"
        "vsub.f32 q3, q3, %[x]\n"
        "vmul.f32 q4, q0, q0\n"  // squares, folded
        "vmul.f32 q5, q1, q1\n"
        "vmul.f32 q6, q2, q2\n"
        "vmul.f32 q7, q3, q3\n"
        "vadd.f32 q4, q4, q6\n"
        "vadd.f32 q5, q5, q7\n"
        "vadd.f32 q4, q4, q5\n"
        "vadd.f32 s16, s16, s18\n"
        "vadd.f32 s17, s17, s19\n"
        "vadd.f32 s16, s16, s17\n"
        "vmov.f32 s18, #16.0\n"  // inv = 1 / sqrt(ss / n + eps)
        "vdiv.f32 s16, s16, s18\n"
        "vmov s19, %[eps]\n"
        "vadd.f32 s16, s16, s19\n"
        "vsqrt.f32 s16, s16\n"
        "vmov.f32 s17, #1.0\n"
        "vdiv.f32 s16, s17, s16\n"
        "vmov %[x], s16\n"
        ".irp i, 0, 1, 2, 3\n"  // y = ((x - mean) · inv) · gain + bias
        "vldrw.u32 q4, [%[g]], #16\n"
        "vldrw.u32 q5, [%[b]], #16\n"
        "vmul.f32 q\\i, q\\i, %[x]\n"
        "vmul.f32 q\\i, q\\i, q4\n"
        "vadd.f32 q\\i, q\\i, q5\n"
        "vstrw.32 q\\i, [%[y]], #16\n"
        ".endr\n"
        : [x] "+r"(x), [g] "+r"(gain), [b] "+r"(bias), [y] "+r"(y)
        : [eps] "r"(eps)
        : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
  }
};

}  // namespace stf::kernels_detail::helium
#endif
