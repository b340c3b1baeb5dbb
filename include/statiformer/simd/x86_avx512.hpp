// statiformer — SIMD vocabulary, x86-64 AVX-512F (16 lanes). Include only in translation units
// compiled with -mavx512f.
#pragma once

#include <immintrin.h>

#include <statiformer/config.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::isa {

template <>
struct Vocabulary<avx512> {
  using V = __m512;
  static constexpr index_t lanes = 16;
  static constexpr const char* name = "avx512";
  static bool supported() { return __builtin_cpu_supports("avx512f"); }  ///< can this CPU run it
  static constexpr index_t tile_rows = 4, tile_cols = 4;
  static constexpr index_t gemv_cols = 16;  ///< one row: 16 accumulators, reduced by reduce16x16

  static __mmask16 prefix(index_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load_partial(const float* p, index_t n) { return _mm512_maskz_loadu_ps(prefix(n), p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store_partial(float* p, V v, index_t n) { _mm512_mask_storeu_ps(p, prefix(n), v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }  // b when unordered
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_ps(a); }
  static V abs(V a) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));
  }
  static V keep_first(V v, index_t n) { return _mm512_maskz_mov_ps(prefix(n), v); }
  static V select_gt(V a, V b, V x, V y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), y, x); }
  static V select_nan(V x, V y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x); }
  static V pow2i(V n) {
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }
  static void split_exponent(V x, V& m, V& e) {
    const __m512i bits = _mm512_castps_si512(x);
    e = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srai_epi32(bits, 23), _mm512_set1_epi32(127)));
    m = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi32(0x007fffff)), _mm512_set1_epi32(0x3f800000)));
  }
  /// Canonical 16-lane sum: fold halves (8, 4, 2, 1).
  static float reduce16(const V* acc) {
    const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(acc[0]),
                                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[0]), 1)));
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  }
  /// out[k] = reduce16(&acc[k]) for 16 accumulators at once: the same fold (i + i+8, +4, +2, +1)
  /// done as a transpose-and-add tree, 15 additions instead of 64.
  static void reduce16x16(const V* acc, float* out) {
    V s[8], u[4], v[2];
    for (int m = 0; m < 8; ++m)  // lanes i + i+8: [acc 2m (8) | acc 2m+1 (8)]
      s[m] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * m], acc[2 * m + 1], 0x44),
                           _mm512_shuffle_f32x4(acc[2 * m], acc[2 * m + 1], 0xEE));
    for (int r = 0; r < 4; ++r)  // + lane i+4: quads = accumulators 4r..4r+3
      u[r] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * r], s[2 * r + 1], 0x88),
                           _mm512_shuffle_f32x4(s[2 * r], s[2 * r + 1], 0xDD));
    for (int p = 0; p < 2; ++p)  // + lane i+2: quad j = [acc 8p+j (2) | acc 8p+4+j (2)]
      v[p] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * p], u[2 * p + 1], 0x44),
                           _mm512_shuffle_ps(u[2 * p], u[2 * p + 1], 0xEE));
    // + lane i+1: lane 4j + t holds accumulator j + 4t
    const V w = _mm512_add_ps(_mm512_shuffle_ps(v[0], v[1], 0x88), _mm512_shuffle_ps(v[0], v[1], 0xDD));
    const __m512i to_natural = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_ps(out, _mm512_permutexvar_ps(to_natural, w));
  }
  /// A 4 × 4 tile's epilogue: sums (row-major, from reduce16x16) + bias[o] (if any), stored as four
  /// rows of 4 outputs y_stride floats apart. The same additions as the scalar epilogue.
  static void add_bias_store4x4(const float* sums, const float* bias, float* y, index_t y_stride) {
    V v = _mm512_loadu_ps(sums);
    if (bias) v = _mm512_add_ps(v, _mm512_broadcast_f32x4(_mm_loadu_ps(bias)));
    _mm_storeu_ps(y, _mm512_castps512_ps128(v));
    _mm_storeu_ps(y + y_stride, _mm512_extractf32x4_ps(v, 1));
    _mm_storeu_ps(y + 2 * y_stride, _mm512_extractf32x4_ps(v, 2));
    _mm_storeu_ps(y + 3 * y_stride, _mm512_extractf32x4_ps(v, 3));
  }
  static float reduce_max(V v) {
    alignas(64) float t[16];
    _mm512_store_ps(t, v);
    float m = t[0];
    for (int i = 1; i < 16; ++i) m = t[i] > m ? t[i] : m;
    return m;
  }
};

}  // namespace stf::isa
