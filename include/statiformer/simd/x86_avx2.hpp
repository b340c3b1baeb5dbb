// statiformer — SIMD vocabulary, x86-64 AVX2 + FMA (8 lanes). Include only in translation units
// compiled with -mavx2 -mfma.
#pragma once

#include <immintrin.h>

#include <statiformer/config.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::isa {
inline namespace STF_VARIANT_NAMESPACE {

template <>
struct Vocabulary<avx2> {
  using V = __m256;
  static constexpr index_t lanes = 8;
  static constexpr const char* name = "avx2";
  /// Which of simd/math.hpp's steps this vocabulary spells in its own instructions (the same bits;
  /// the kernel tests compare): exp, exp_nonpositive's last steps, exp's lower clamp.
  static constexpr bool own_exp = false, own_exp_nonpositive = false, own_zero_unless_ge = true;
  static bool supported() {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }  ///< can this CPU run it
  /// Register tile of the matrix kernels: 6 rows × 2 vectors = 12 of the 16 ymm registers.
  static constexpr index_t gemm_rows = 6, gemm_vecs = 2;
  static constexpr index_t gemv_vecs = 8;  ///< vectors of a single row's tile

  static __m256i prefix_mask(index_t n) {  // lanes < n all-ones
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
  }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load_partial(const float* p, index_t n) { return _mm256_maskload_ps(p, prefix_mask(n)); }
  static V load_partial_or(const float* p, index_t n, float fill) {
    const __m256i m = prefix_mask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void store_partial(float* p, V v, index_t n) { _mm256_maskstore_ps(p, prefix_mask(n), v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  /// div in the first n lanes (n <= 8), the others unspecified: an xmm division where n <= 4 (the
  /// same IEEE division of each lane at a lower cost).
  static V div_first(V a, V b, index_t n) {
    if (n <= 4) return _mm256_zextps128_ps256(_mm_div_ps(_mm256_castps256_ps128(a), _mm256_castps256_ps128(b)));
    return _mm256_div_ps(a, b);
  }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fma_n(float a, V b, V c) { return fma(set1(a), b, c); }  ///< a·b + c with a scalar a
  static V max(V a, V b) { return _mm256_max_ps(a, b); }            // b when unordered
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
  static V abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static V keep_first(V v, index_t n) { return _mm256_and_ps(v, _mm256_castsi256_ps(prefix_mask(n))); }
  static V select_gt(V a, V b, V x, V y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_GT_OQ)); }
  static V select_nan(V x, V y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); }
  /// x where x >= lo, else +0 (NaN: +0): where exp's core runs its lanes below the range, since
  /// arithmetic with a subnormal result takes a microcode assist here (simd/math.hpp).
  static V zero_unless_ge(V x, V lo) { return _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GE_OQ), x); }
  static V pow2i(V n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static void split_exponent(V x, V& m, V& e) {
    const __m256i bits = _mm256_castps_si256(x);
    e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srai_epi32(bits, 23), _mm256_set1_epi32(127)));
    m = _mm256_castsi256_ps(
        _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
  }
  /// Canonical 16-lane sum of acc[0] (lanes 0-7) and acc[1] (lanes 8-15).
  static float reduce16(const V* acc) {
    const __m256 s8 = _mm256_add_ps(acc[0], acc[1]);
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  }
  /// reduce16 of 8 rows at once: sums[r] = reduce16(acc + 2r) bit for bit for r < 8 (acc: two
  /// vectors a row). The same folds in halves with the same operands, taken across the rows (pairs
  /// of rows share a vector after the second fold): 15 additions and 14 shuffles where 8 reduce16
  /// take 32 additions and shuffles in 8 chains of 4 dependent steps. The folds leave the sum of the
  /// row in position h + 2p in lane 4h + p; the rows enter in the order that puts row r in lane r
  /// (position h + 2p takes row rows_in(h + 2p) = 4h + p), so the sums need no permutation on their way out.
  static constexpr index_t reduce_rows = 8;
  static constexpr int rows_in(int i) { return 4 * (i % 2) + i / 2; }
  static void reduce16_rows(const V* acc, float* sums) {
    V s8[8], c[4], d[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) s8[i] = _mm256_add_ps(acc[2 * rows_in(i)], acc[2 * rows_in(i) + 1]);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j)  // half h: position 2j + h, lanes i and i + 4 (i < 4)
      c[j] = _mm256_add_ps(_mm256_permute2f128_ps(s8[2 * j], s8[2 * j + 1], 0x20),
                           _mm256_permute2f128_ps(s8[2 * j], s8[2 * j + 1], 0x31));
#pragma GCC unroll 2
    for (int j = 0; j < 2; ++j)  // half h: positions 4j + h and 4j + 2 + h, lanes i and i + 2 (i < 2)
      d[j] = _mm256_add_ps(_mm256_shuffle_ps(c[2 * j], c[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm256_shuffle_ps(c[2 * j], c[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // lane 4h + p: position h + 2p, that is row 4h + p; lanes 0 and 1
    _mm256_storeu_ps(sums, _mm256_add_ps(_mm256_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm256_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1))));
  }
  /// The largest lane, folded in halves in registers (as AVX-512's _mm512_reduce_max_ps): a
  /// maximum is exact in any order (of values that are not NaN; a zero's sign, which it may pick
  /// either way, no softmax step sees: s - (±0) and exp(±0) are the same).
  static float reduce_max(V v) {
    const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    return _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
  }
  /// d[c·ld + r] = s[r·ls + c] for an 8 × 8 tile: 8 row loads, shuffles of lane pairs, of 64-bit
  /// pairs and of 128-bit halves, 8 row stores.
  static void transpose_tile(const float* s, index_t ls, float* d, index_t ld) {
    V r[8], t[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * ls);
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {
      r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
      r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      _mm256_storeu_ps(d + i * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
      _mm256_storeu_ps(d + (i + 4) * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
  }
};

}  // namespace STF_VARIANT_NAMESPACE
}  // namespace stf::isa
