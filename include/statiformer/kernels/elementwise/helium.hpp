// statiformer — element-wise kernels on Cortex-M55 (Helium / MVE): exp(x - m) over a row (the
// softmax's weights) and addition of rows, tail-predicated loops. See kernels/README.md.
#pragma once

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include <statiformer/config.hpp>
#include <statiformer/simd/arm_mve.hpp>

namespace stf::kernels_detail::helium {

/// Element-wise row operations (generic::Elementwise::exp_shifted, generic::Elementwise::add call them).
struct Elementwise {
  using I = isa::Vocabulary<isa::mve>;
  using V = I::V;

  /// y[i] = exp(x[i] - m) for i < n, as map(x, y, n, exp(sub(v, set1(m)))) (the softmax's
  /// weights), with exp's operations as above: one assembly loop, tail-predicated (wlstp/letp),
  /// so the constants come by two ldm per vector instead of exp's five loads, VPR needs no saving
  /// and the loop no bookkeeping (42 -> 35 instructions per vector).
  [[gnu::noinline]] static void exp_shifted(const float* x, float* y, index_t n, float m) {
    alignas(8) static constexpr float kConstants[] = {
        12582912.0f,    1.44269504088896341f,
        -0.693359375f,  2.12194440e-4f,
        1.0f / 5040.0f, 1.0f / 720.0f,
        1.0f / 120.0f,  1.0f / 24.0f,  // first ldm: r0-r7
        1.0f / 6.0f,    0.5f,
        1.0f,           -87.3365448f,
        88.7228394f,    std::numeric_limits<float>::infinity()};  // second ldm: r0-r5 (r6, r7: 127, 1)
    const float* c = kConstants;
    V s, nv, r, p, e;
    asm volatile(
        "wlstp.32 lr, %[n], 2f\n"
        "1:\n"
        "vldrw.u32 %q[s], [%[x]], #16\n"
        "vsub.f32 %q[s], %q[s], %[m]\n"
        "ldm %[c]!, {r0-r7}\n"
        "vdup.32 %q[nv], r0\n"  // n = fma(s, log2e, magic) - magic
        "vfma.f32 %q[nv], %q[s], r1\n"
        "vsub.f32 %q[nv], %q[nv], r0\n"
        "vmov %q[r], %q[s]\n"  // r = fma(n, -c1, s), then fma(n, c2, r)
        "vfma.f32 %q[r], %q[nv], r2\n"
        "vfma.f32 %q[r], %q[nv], r3\n"
        "vdup.32 %q[p], r4\n"  // Horner: p = p·r + c
        "vfmas.f32 %q[p], %q[r], r5\n"
        "vfmas.f32 %q[p], %q[r], r6\n"
        "vfmas.f32 %q[p], %q[r], r7\n"
        "ldm %[c], {r0-r5}\n"
        "sub %[c], %[c], #32\n"
        "vfmas.f32 %q[p], %q[r], r0\n"
        "vfmas.f32 %q[p], %q[r], r1\n"
        "vfmas.f32 %q[p], %q[r], r2\n"
        "vfmas.f32 %q[p], %q[r], r2\n"
        "vcvt.s32.f32 %q[nv], %q[nv]\n"  // 2^(n-d): ((n + 127) - d) << 23, d = n > 0
        "mov r0, #127\n"
        "vadd.i32 %q[r], %q[nv], r0\n"
        "mov r0, #1\n"
        "vpt.s32 gt, %q[nv], zr\n"
        "vsubt.i32 %q[r], %q[r], r0\n"
        "vshl.i32 %q[r], %q[r], #23\n"
        "vmul.f32 %q[e], %q[p], %q[r]\n"
        "vpst\n"  // · 2^d
        "vaddt.f32 %q[e], %q[e], %q[e]\n"
        "vpt.f32 lt, %q[s], r3\n"  // s < lo: 0
        "vmovt.i32 %q[e], #0\n"
        "vpt.f32 gt, %q[s], r4\n"  // s > hi: inf
        "vdupt.32 %q[e], r5\n"
        "vpt.f32 ne, %q[s], %q[s]\n"  // NaN stays NaN
        "vmovt %q[e], %q[s]\n"
        "vstrw.32 %q[e], [%[y]], #16\n"
        "letp lr, 1b\n"
        "2:\n"
        : [x] "+r"(x), [y] "+r"(y), [c] "+r"(c), [s] "=&w"(s), [nv] "=&w"(nv), [r] "=&w"(r), [p] "=&w"(p), [e] "=&w"(e)
        : [n] "r"(n), [m] "r"(m), "m"(kConstants)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "lr", "cc", "memory");
  }
  /// y[i] += x[i] for i < n (generic::Elementwise::add calls it): one tail-predicated loop, 5 instructions per
  /// vector.
  [[gnu::noinline]] static void add_n(float* y, const float* x, index_t n) {
    asm volatile(
        "wlstp.32 lr, %[n], 2f\n"
        "1:\n"
        "vldrw.u32 q0, [%[y]]\n"
        "vldrw.u32 q1, [%[x]], #16\n"
        "vadd.f32 q0, q0, q1\n"
        "vstrw.32 q0, [%[y]], #16\n"
        "letp lr, 1b\n"
        "2:\n"
        : [y] "+r"(y), [x] "+r"(x)
        : [n] "r"(n)
        : "q0", "q1", "lr", "memory");
  }
};

}  // namespace stf::kernels_detail::helium
#endif
