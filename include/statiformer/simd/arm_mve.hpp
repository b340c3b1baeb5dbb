// statiformer — SIMD vocabulary, Armv8.1-M Helium / MVE with floating point (4 lanes, 8 Q
// registers): Cortex-M55. No vector division or square root: those run lane by lane.
#pragma once

#include <arm_mve.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>

#include <statiformer/config.hpp>
#include <statiformer/simd/isa.hpp>
#include <statiformer/simd/math.hpp>

namespace stf::isa {
inline namespace STF_VARIANT_NAMESPACE {

template <>
struct Vocabulary<mve> {
  using V = float32x4_t;
  static constexpr index_t lanes = 4;
  static constexpr const char* name = "mve";
  /// Which of simd/math.hpp's steps this vocabulary spells in its own instructions (the same bits;
  /// the kernel tests compare): exp, exp_nonpositive's last steps, exp's lower clamp.
  static constexpr bool own_exp = true, own_exp_nonpositive = false, own_zero_unless_ge = false;
  static bool supported() { return true; }  ///< can this CPU run it
  /// Register tile of the matrix kernels: up to 4 rows × 16 vectors of outputs, computed by
  /// row_tile (kernels/product/helium.hpp) with vectors across the rows, in panels of 6 outputs
  /// (so wide that one call runs up to 10 panels in its assembly loop); a single row: the generic
  /// 1 × 6 tile.
  static constexpr index_t gemm_rows = 4, gemm_vecs = 16, gemv_vecs = 6;

  static V load(const float* p) { return vld1q_f32(p); }
  static V load_partial(const float* p, index_t n) {
    return vldrwq_z_f32(p, vctp32q(static_cast<uint32_t>(n < 4 ? n : 4)));
  }
  static V load_partial_or(const float* p, index_t n, float fill) {
    const mve_pred16_t m = vctp32q(static_cast<uint32_t>(n < 4 ? n : 4));
    return vpselq_f32(vldrwq_z_f32(p, m), vdupq_n_f32(fill), m);
  }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static void store_partial(float* p, V v, index_t n) {
    vstrwq_p_f32(p, v, vctp32q(static_cast<uint32_t>(n < 4 ? n : 4)));
  }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V zero() { return vdupq_n_f32(0.0f); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V fma_n(float a, V b, V c) { return vfmaq_n_f32(c, b, a); }      ///< a·b + c, one rounding
  static V max(V a, V b) { return vpselq_f32(a, b, vcmpgtq_f32(a, b)); }  // b when unordered
  static V min(V a, V b) { return vpselq_f32(a, b, vcmpltq_f32(a, b)); }
  static V abs(V a) { return vabsq_f32(a); }
  /// Lane by lane (MVE has no vector division): vdiv.f32 on the S registers that alias the Q
  /// registers' lanes, instead of a round trip through memory.
  static V div(V a, V b) {
    register V num asm("q0") = a;
    register V den asm("q1") = b;
    asm("vdiv.f32 s0, s0, s4\n"
        "vdiv.f32 s1, s1, s5\n"
        "vdiv.f32 s2, s2, s6\n"
        "vdiv.f32 s3, s3, s7\n"
        : "+w"(num)
        : "w"(den));
    return num;
  }
  static V sqrt(V a) {
    return lanewise(a, a, [](float x, float) { return std::sqrt(x); });
  }
  static V keep_first(V v, index_t n) {
    // (whole vectors unchanged: GCC does not fold the all-true select of the full blocks)
    return n >= 4 ? v : vpselq_f32(v, vdupq_n_f32(0.0f), vctp32q(static_cast<uint32_t>(n)));
  }
  static V select_gt(V a, V b, V x, V y) { return vpselq_f32(x, y, vcmpgtq_f32(a, b)); }
  static V select_nan(V x, V y) { return vpselq_f32(y, x, vcmpeqq_f32(x, x)); }
  static V pow2i(V n) {
    const int32x4_t e = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
    return vreinterpretq_f32_s32(vshlq_n_s32(e, 23));
  }
  static void split_exponent(V x, V& m, V& e) {
    const int32x4_t bits = vreinterpretq_s32_f32(x);
    e = vcvtq_f32_s32(vsubq_s32(vshrq_n_s32(bits, 23), vdupq_n_s32(127)));
    m = vreinterpretq_f32_s32(vorrq_s32(vandq_s32(bits, vdupq_n_s32(0x007fffff)), vdupq_n_s32(0x3f800000)));
  }
  /// simd_math::exp's operations with the same bits, in a third of the instructions (assembly:
  /// GCC 12 holds the dozen constants as vectors, which 8 Q registers cannot hold, and moves every
  /// select's predicate through general-purpose registers). The constants come from a table
  /// (ldm, ldrd) and are used as scalar operands (vfma/vfmas/vsub/vcmp by a general-purpose register);
  /// the selects are predicated moves. Two identities: the clamp of x to [lo, hi] is dropped, since
  /// every lane outside it (or NaN) is replaced by the final selects, so only lanes where xc == x
  /// survive; pow2i(n - d) is computed as cvt(n) - d (n - d is exact for the integral n), and the
  /// product with 2^d as y + y where d = 1 (both exact doublings, or both overflow).
  static V exp(V x) {
    alignas(8) static constexpr float kConstants[] = {12582912.0f,    1.44269504088896341f,
                                                      -0.693359375f,  2.12194440e-4f,
                                                      1.0f / 5040.0f, 1.0f / 720.0f,
                                                      1.0f / 120.0f,  1.0f / 24.0f,
                                                      1.0f / 6.0f,    0.5f,
                                                      1.0f,           -87.3365448f,
                                                      88.7228394f,    std::numeric_limits<float>::infinity()};
    V n, r, p, y;
    // (six general-purpose registers only: with more, GCC 12 fails to allocate the callers' loops)
    std::uint32_t vpr;
    // (the caller's predicate is kept: GCC 12 knows no clobber name for VPR)
    asm("vmrs %[vpr], p0\n"
        "ldm %[c], {r0-r5}\n"
        "vdup.32 %q[n], r0\n"  // n = round(x / ln 2): fma(x, log2e, magic) - magic
        "vfma.f32 %q[n], %q[x], r1\n"
        "vsub.f32 %q[n], %q[n], r0\n"
        "vmov %q[r], %q[x]\n"  // r = fma(n, -c1, x), then fma(n, c2, r)
        "vfma.f32 %q[r], %q[n], r2\n"
        "vfma.f32 %q[r], %q[n], r3\n"
        "vdup.32 %q[p], r4\n"  // Horner: p = fma(p, r, c) = p·r + c
        "vfmas.f32 %q[p], %q[r], r5\n"
        "ldrd r0, r1, [%[c], #24]\n"
        "ldrd r2, r3, [%[c], #32]\n"
        "ldrd r4, r5, [%[c], #40]\n"
        "vfmas.f32 %q[p], %q[r], r0\n"
        "vfmas.f32 %q[p], %q[r], r1\n"
        "vfmas.f32 %q[p], %q[r], r2\n"
        "vfmas.f32 %q[p], %q[r], r3\n"
        "vfmas.f32 %q[p], %q[r], r4\n"
        "vfmas.f32 %q[p], %q[r], r4\n"
        "vcvt.s32.f32 %q[n], %q[n]\n"  // 2^(n-d): ((n + 127) - d) << 23, d = n > 0
        "mov r0, #127\n"
        "vadd.i32 %q[r], %q[n], r0\n"
        "mov r0, #1\n"
        "vpt.s32 gt, %q[n], zr\n"
        "vsubt.i32 %q[r], %q[r], r0\n"
        "vshl.i32 %q[r], %q[r], #23\n"
        "vmul.f32 %q[y], %q[p], %q[r]\n"
        "vpst\n"  // · 2^d
        "vaddt.f32 %q[y], %q[y], %q[y]\n"
        "ldrd r2, r3, [%[c], #48]\n"
        "vpt.f32 lt, %q[x], r5\n"  // x < lo: 0
        "vmovt.i32 %q[y], #0\n"
        "vpt.f32 gt, %q[x], r2\n"  // x > hi: inf
        "vdupt.32 %q[y], r3\n"
        "vpt.f32 ne, %q[x], %q[x]\n"  // NaN stays NaN
        "vmovt %q[y], %q[x]\n"
        "vmsr p0, %[vpr]\n"
        : [n] "=&w"(n), [r] "=&w"(r), [p] "=&w"(p), [y] "=&w"(y), [vpr] "=&r"(vpr)
        : [x] "w"(x), [c] "r"(kConstants), "m"(kConstants)
        : "r0", "r1", "r2", "r3", "r4", "r5", "cc");
    return y;
  }
  static float reduce16(const V* acc) {
    const V s8a = vaddq_f32(acc[0], acc[2]), s8b = vaddq_f32(acc[1], acc[3]);
    const V s4 = vaddq_f32(s8a, s8b);
    const float s2a = vgetq_lane_f32(s4, 0) + vgetq_lane_f32(s4, 2);
    const float s2b = vgetq_lane_f32(s4, 1) + vgetq_lane_f32(s4, 3);
    return s2a + s2b;
  }
  static float reduce_max(V v) {
    float m = vgetq_lane_f32(v, 0);
    for (float x : {vgetq_lane_f32(v, 1), vgetq_lane_f32(v, 2), vgetq_lane_f32(v, 3)}) m = x > m ? x : m;
    return m;
  }

 private:
  template <class F>
  static V lanewise(V a, V b, F f) {
    float x[4], y[4];
    vst1q_f32(x, a);
    vst1q_f32(y, b);
    for (int i = 0; i < 4; ++i) x[i] = f(x[i], y[i]);
    return vld1q_f32(x);
  }
};

}  // namespace STF_VARIANT_NAMESPACE
}  // namespace stf::isa
