// statiformer — SIMD vocabulary, Arm NEON (4 lanes): aarch64, or armv7 with VFPv4 (vfmaq_f32).
// armv7 has no vector division or square root: those run lane by lane (same IEEE results). armv7
// NEON arithmetic flushes denormals to zero, so there, and only for inputs or intermediates below
// 1.2e-38, bits can differ from the scalar reference.
#pragma once

#include <arm_neon.h>

#include <cmath>

#include <statiformer/config.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::isa {
inline namespace STF_VARIANT_NAMESPACE {

template <>
struct Vocabulary<neon> {
  using V = float32x4_t;
  static constexpr index_t lanes = 4;
  static constexpr const char* name = "neon";
  /// Which of simd/math.hpp's steps this vocabulary spells in its own instructions (the same bits;
  /// the kernel tests compare): exp, exp_nonpositive's last steps, exp's lower clamp.
  static constexpr bool own_exp = false, own_exp_nonpositive = false, own_zero_unless_ge = false;
  static bool supported() { return true; }  ///< can this CPU run it
  /// Register tile of the matrix kernels: rows × vectors of outputs (aarch64 has 32 Q registers,
  /// armv7 16).
#if defined(__aarch64__)
  static constexpr index_t gemm_rows = 6, gemm_vecs = 3;
#else
  static constexpr index_t gemm_rows = 4, gemm_vecs = 2;
#endif
  static constexpr index_t gemv_vecs = gemm_vecs;  ///< vectors of a single row's tile

  static uint32x4_t prefix_mask(index_t n) {
    const uint32_t idx[4] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(idx), vdupq_n_u32(static_cast<uint32_t>(n)));
  }
  static V load(const float* p) { return vld1q_f32(p); }
  static V load_partial(const float* p, index_t n) {
    float t[4] = {0, 0, 0, 0};
    for (index_t i = 0; i < n && i < 4; ++i) t[i] = p[i];
    return vld1q_f32(t);
  }
  static V load_partial_or(const float* p, index_t n, float fill) {
    float t[4] = {fill, fill, fill, fill};
    for (index_t i = 0; i < n && i < 4; ++i) t[i] = p[i];
    return vld1q_f32(t);
  }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static void store_partial(float* p, V v, index_t n) {
    float t[4];
    vst1q_f32(t, v);
    for (index_t i = 0; i < n && i < 4; ++i) p[i] = t[i];
  }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V zero() { return vdupq_n_f32(0.0f); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V fma_n(float a, V b, V c) { return fma(set1(a), b, c); }     ///< a·b + c with a scalar a
  static V max(V a, V b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }  // b when unordered, as x86
  static V min(V a, V b) { return vbslq_f32(vcltq_f32(a, b), a, b); }
  static V abs(V a) { return vabsq_f32(a); }
#if defined(__aarch64__)
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V sqrt(V a) { return vsqrtq_f32(a); }
#else
  static V div(V a, V b) {
    return lanewise(a, b, [](float x, float y) { return x / y; });
  }
  static V sqrt(V a) {
    return lanewise(a, a, [](float x, float) { return std::sqrt(x); });
  }
#endif
  static V keep_first(V v, index_t n) {
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), prefix_mask(n)));
  }
  static V select_gt(V a, V b, V x, V y) { return vbslq_f32(vcgtq_f32(a, b), x, y); }
  static V select_nan(V x, V y) { return vbslq_f32(vceqq_f32(x, x), y, x); }
  static V pow2i(V n) {
    const int32x4_t e = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
    return vreinterpretq_f32_s32(vshlq_n_s32(e, 23));
  }
  static void split_exponent(V x, V& m, V& e) {
    const int32x4_t bits = vreinterpretq_s32_f32(x);
    e = vcvtq_f32_s32(vsubq_s32(vshrq_n_s32(bits, 23), vdupq_n_s32(127)));
    m = vreinterpretq_f32_s32(vorrq_s32(vandq_s32(bits, vdupq_n_s32(0x007fffff)), vdupq_n_s32(0x3f800000)));
  }
  /// Canonical 16-lane sum of acc[0..3] (lanes 0-3, 4-7, 8-11, 12-15): fold halves.
  static float reduce16(const V* acc) {
    const V s8a = vaddq_f32(acc[0], acc[2]), s8b = vaddq_f32(acc[1], acc[3]);
    const V s4 = vaddq_f32(s8a, s8b);
    const float32x2_t s2 = vadd_f32(vget_low_f32(s4), vget_high_f32(s4));
    return vget_lane_f32(s2, 0) + vget_lane_f32(s2, 1);
  }
  static float reduce_max(V v) {
    float t[4];
    vst1q_f32(t, v);
    float m = t[0];
    for (int i = 1; i < 4; ++i) m = t[i] > m ? t[i] : m;
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
