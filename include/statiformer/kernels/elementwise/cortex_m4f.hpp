// statiformer — element-wise kernels on Cortex-M4F/M7 (Arm M-profile with an FPU): division of a
// row by a scalar and addition of rows, 4 elements per vldmia/vstmia. See kernels/README.md.
#pragma once

#include <statiformer/config.hpp>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
namespace stf::kernels_detail::cortex_m4f {

/// Element-wise row operations (generic::Elementwise::div_map, generic::Elementwise::add call them).
struct Elementwise {
  /// y[i] = x[i] / d for i < n, y may be x (generic::Elementwise::div_map calls it: the softmax's scaling and
  /// normalization), 4 elements per vldmia/vstmia.
  static void div_n(const float* x, float* y, index_t n, float d) {
    index_t count;
    asm volatile(
        "lsrs %[count], %[n], #2\n"
        "beq 2f\n"
        "1:\n"
        "vldmia %[x]!, {s0-s3}\n"
        "vdiv.f32 s0, s0, %[d]\n"
        "vdiv.f32 s1, s1, %[d]\n"
        "vdiv.f32 s2, s2, %[d]\n"
        "vdiv.f32 s3, s3, %[d]\n"
        "vstmia %[y]!, {s0-s3}\n"
        "subs %[count], %[count], #1\n"
        "bne 1b\n"
        "2:\n"
        "ands %[count], %[n], #3\n"
        "beq 4f\n"
        "3:\n"
        "vldmia %[x]!, {s0}\n"
        "vdiv.f32 s0, s0, %[d]\n"
        "vstmia %[y]!, {s0}\n"
        "subs %[count], %[count], #1\n"
        "bne 3b\n"
        "4:\n"
        : [x] "+r"(x), [y] "+r"(y), [count] "=&r"(count)
        : [n] "r"(n), [d] "t"(d)
        : "s0", "s1", "s2", "s3", "cc", "memory");
  }
  /// y[i] += x[i] for i < n (generic::Elementwise::add calls it), 4 elements per vldmia/vstmia (GCC: one at a
  /// time, 6 instructions per element).
  static void add_n(float* y, const float* x, index_t n) {
    float* yr = y;  // (read and written through separate pointers: vstmia's writeback is ahead)
    index_t count;
    asm volatile(
        "lsrs %[count], %[n], #2\n"
        "beq 2f\n"
        "1:\n"
        "vldmia %[yr]!, {s0-s3}\n"
        "vldmia %[x]!, {s4-s7}\n"
        "vadd.f32 s0, s0, s4\n"
        "vadd.f32 s1, s1, s5\n"
        "vadd.f32 s2, s2, s6\n"
        "vadd.f32 s3, s3, s7\n"
        "vstmia %[y]!, {s0-s3}\n"
        "subs %[count], %[count], #1\n"
        "bne 1b\n"
        "2:\n"
        "ands %[count], %[n], #3\n"
        "beq 4f\n"
        "3:\n"
        "vldmia %[yr]!, {s0}\n"
        "vldmia %[x]!, {s4}\n"
        "vadd.f32 s0, s0, s4\n"
        "vstmia %[y]!, {s0}\n"
        "subs %[count], %[count], #1\n"
        "bne 3b\n"
        "4:\n"
        : [y] "+r"(y), [yr] "+r"(yr), [x] "+r"(x), [count] "=&r"(count)
        : [n] "r"(n)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "cc", "memory");
  }
};

}  // namespace stf::kernels_detail::cortex_m4f
#endif
