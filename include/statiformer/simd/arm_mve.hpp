// statiformer — SIMD vocabulary, Armv8.1-M Helium / MVE with floating point (4 lanes, 8 Q
// registers): Cortex-M55. No vector division or square root: those run lane by lane.
#pragma once

#include <arm_mve.h>

#include <cmath>
#include <initializer_list>
#include <limits>

#include <statiformer/config.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::isa {

template <>
struct Vocabulary<mve> {
  using V = float32x4_t;
  static constexpr index_t lanes = 4;
  static constexpr const char* name = "mve";
  static bool supported() { return true; }  ///< can this CPU run it
  /// Register tile of the matrix kernels: 3 rows × 2 vectors = 6 accumulators + 2 weight vectors
  /// fill the 8 Q registers; the row values stay scalars (vfma by a general-purpose register).
  static constexpr index_t gemm_rows = 3, gemm_vecs = 2;

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
  static V div(V a, V b) {
    return lanewise(a, b, [](float x, float y) { return x / y; });
  }
  static V sqrt(V a) {
    return lanewise(a, a, [](float x, float) { return std::sqrt(x); });
  }
  static V keep_first(V v, index_t n) {
    return vpselq_f32(v, vdupq_n_f32(0.0f), vctp32q(static_cast<uint32_t>(n < 4 ? n : 4)));
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
  /// simd_math::exp's operations with the same bits, in a third of the instructions: constants
  /// as scalar operands (vfma/vfmas/vsub/vcmp by a general-purpose register) instead of vectors,
  /// which 8 Q registers cannot hold (GCC spilled them every iteration), and predicated moves for
  /// the selects. Two identities: the clamp of x to [lo, hi] is dropped, since every lane outside
  /// it (or NaN) is replaced by the final selects, so only lanes where xc == x survive; and
  /// pow2i(n - d) is computed as cvt(n) - d, since n - d is exact for the integral n.
  static V exp(V x) {
    constexpr float magic = 12582912.0f;
    V n = vfmaq_n_f32(vdupq_n_f32(magic), x, 1.44269504088896341f);  // fma(x, log2e, magic)
    n = vsubq_n_f32(n, magic);
    V r = vfmaq_n_f32(x, n, -0.693359375f);  // fma(n, -c1, x)
    r = vfmaq_n_f32(r, n, 2.12194440e-4f);
    V p = vdupq_n_f32(1.0f / 5040.0f);  // Horner: p = fma(p, r, c) = p·r + c (vfmas)
    p = vfmasq_n_f32(p, r, 1.0f / 720.0f);
    p = vfmasq_n_f32(p, r, 1.0f / 120.0f);
    p = vfmasq_n_f32(p, r, 1.0f / 24.0f);
    p = vfmasq_n_f32(p, r, 1.0f / 6.0f);
    p = vfmasq_n_f32(p, r, 0.5f);
    p = vfmasq_n_f32(p, r, 1.0f);
    p = vfmasq_n_f32(p, r, 1.0f);
    // p · 2^(n-d) · 2^d, d = 1 for n > 0; the product with 2^0 = 1 is exact, so only where d = 1
    const int32x4_t ni = vcvtq_s32_f32(n);
    const mve_pred16_t positive = vcmpgtq_n_s32(ni, 0);
    const int32x4_t e = vsubq_m_n_s32(vaddq_n_s32(ni, 127), vaddq_n_s32(ni, 127), 1, positive);
    V y = vmulq_f32(p, vreinterpretq_f32_s32(vshlq_n_s32(e, 23)));
    y = vmulq_m_n_f32(y, y, 2.0f, positive);
    y = vdupq_m_n_f32(y, 0.0f, vcmpltq_n_f32(x, -87.3365448f));
    y = vdupq_m_n_f32(y, std::numeric_limits<float>::infinity(), vcmpgtq_n_f32(x, 88.7228394f));
    return vpselq_f32(x, y, vcmpneq_f32(x, x));  // NaN stays NaN
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

}  // namespace stf::isa
