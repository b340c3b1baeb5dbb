// statiformer — LayerNorm kernels on Cortex-M4F/M7 (Arm M-profile with an FPU), in assembly.
// See kernels/README.md.
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/simd/scalar.hpp>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
namespace stf::kernels_detail::cortex_m4f {

/// LayerNorm rows (generic::Norm::layer_norm_rows calls them).
struct Norm {
  /// LayerNorm, torch kind, of a row of a multiple of 16 (generic::Norm::layer_norm_rows calls it): the
  /// same operations (canonical 16-lane sums, then ((x - mean) · inv) · gain + bias), in assembly
  /// with 4 elements per vldmia (GCC kept the 16 lane sums in memory: 463 instructions for 16).
  static void layer_norm16(const float* x, const float* gain, const float* bias, index_t n, float eps, float* y) {
    alignas(8) static constexpr float kZeros[16] = {};
    const float* xs;
    index_t count;
    asm volatile(
        "vmov s30, %[nf]\n"  // s30: n, s31: eps
        "vmov s31, %[eps]\n"
        "vldmia %[zeros], {s0-s15}\n"  // mean: the canonical 16-lane sum / n
        "mov %[xs], %[x]\n"
        "mov %[cnt], %[n16]\n"
        "1:\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vadd.f32 s0, s0, s16\n"
        "vadd.f32 s1, s1, s17\n"
        "vadd.f32 s2, s2, s18\n"
        "vadd.f32 s3, s3, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vadd.f32 s4, s4, s16\n"
        "vadd.f32 s5, s5, s17\n"
        "vadd.f32 s6, s6, s18\n"
        "vadd.f32 s7, s7, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vadd.f32 s8, s8, s16\n"
        "vadd.f32 s9, s9, s17\n"
        "vadd.f32 s10, s10, s18\n"
        "vadd.f32 s11, s11, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vadd.f32 s12, s12, s16\n"
        "vadd.f32 s13, s13, s17\n"
        "vadd.f32 s14, s14, s18\n"
        "vadd.f32 s15, s15, s19\n"
        "subs %[cnt], %[cnt], #1\n"
        "bne 1b\n" STF_FOLD16_S0_S1
        "vadd.f32 s28, s0, s1\n"
        "vdiv.f32 s28, s28, s30\n"     // s28: mean
        "vldmia %[zeros], {s0-s15}\n"  // ss: the canonical 16-lane sum of (x - mean)^2
        "mov %[xs], %[x]\n"
        "mov %[cnt], %[n16]\n"
        "2:\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vsub.f32 s16, s16, s28\n"
        "vsub.f32 s17, s17, s28\n"
        "vsub.f32 s18, s18, s28\n"
        "vsub.f32 s19, s19, s28\n"
        "vfma.f32 s0, s16, s16\n"
        "vfma.f32 s1, s17, s17\n"
        "vfma.f32 s2, s18, s18\n"
        "vfma.f32 s3, s19, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vsub.f32 s16, s16, s28\n"
        "vsub.f32 s17, s17, s28\n"
        "vsub.f32 s18, s18, s28\n"
        "vsub.f32 s19, s19, s28\n"
        "vfma.f32 s4, s16, s16\n"
        "vfma.f32 s5, s17, s17\n"
        "vfma.f32 s6, s18, s18\n"
        "vfma.f32 s7, s19, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vsub.f32 s16, s16, s28\n"
        "vsub.f32 s17, s17, s28\n"
        "vsub.f32 s18, s18, s28\n"
        "vsub.f32 s19, s19, s28\n"
        "vfma.f32 s8, s16, s16\n"
        "vfma.f32 s9, s17, s17\n"
        "vfma.f32 s10, s18, s18\n"
        "vfma.f32 s11, s19, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vsub.f32 s16, s16, s28\n"
        "vsub.f32 s17, s17, s28\n"
        "vsub.f32 s18, s18, s28\n"
        "vsub.f32 s19, s19, s28\n"
        "vfma.f32 s12, s16, s16\n"
        "vfma.f32 s13, s17, s17\n"
        "vfma.f32 s14, s18, s18\n"
        "vfma.f32 s15, s19, s19\n"
        "subs %[cnt], %[cnt], #1\n"
        "bne 2b\n" STF_FOLD16_S0_S1
        "vadd.f32 s29, s0, s1\n"
        "vdiv.f32 s29, s29, s30\n"  // s29: inv = 1 / sqrt(ss / n + eps)
        "vadd.f32 s29, s29, s31\n"
        "vsqrt.f32 s29, s29\n"
        "vmov.f32 s20, #1.0\n"
        "vdiv.f32 s29, s20, s29\n"
        "lsl %[cnt], %[n16], #2\n"  // y = ((x - mean) · inv) · gain + bias, 4 at a time
        "3:\n"
        "vldmia %[x]!, {s16-s19}\n"
        "vldmia %[g]!, {s20-s23}\n"
        "vldmia %[b]!, {s24-s27}\n"
        "vsub.f32 s16, s16, s28\n"
        "vmul.f32 s16, s16, s29\n"
        "vmul.f32 s16, s16, s20\n"
        "vadd.f32 s16, s16, s24\n"
        "vsub.f32 s17, s17, s28\n"
        "vmul.f32 s17, s17, s29\n"
        "vmul.f32 s17, s17, s21\n"
        "vadd.f32 s17, s17, s25\n"
        "vsub.f32 s18, s18, s28\n"
        "vmul.f32 s18, s18, s29\n"
        "vmul.f32 s18, s18, s22\n"
        "vadd.f32 s18, s18, s26\n"
        "vsub.f32 s19, s19, s28\n"
        "vmul.f32 s19, s19, s29\n"
        "vmul.f32 s19, s19, s23\n"
        "vadd.f32 s19, s19, s27\n"
        "vstmia %[y]!, {s16-s19}\n"
        "subs %[cnt], %[cnt], #1\n"
        "bne 3b\n"
        : [x] "+r"(x), [g] "+r"(gain), [b] "+r"(bias), [y] "+r"(y), [xs] "=&r"(xs), [cnt] "=&r"(count)
        : [n16] "r"(n / 16), [nf] "r"(static_cast<float>(n)), [eps] "r"(eps), [zeros] "r"(kZeros), "m"(kZeros)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc",
          "memory");
  }
};

}  // namespace stf::kernels_detail::cortex_m4f
#endif
