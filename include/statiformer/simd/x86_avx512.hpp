// statiformer — SIMD vocabulary, x86-64 AVX-512F (16 lanes). Include only in translation units
// compiled with -mavx512f.
#pragma once

#include <immintrin.h>

#include <statiformer/config.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::isa {
inline namespace STF_VARIANT_NAMESPACE {

template <>
struct Vocabulary<avx512> {
  using V = __m512;
  static constexpr index_t lanes = 16;
  static constexpr const char* name = "avx512";
  /// Which of simd/math.hpp's steps this vocabulary spells in its own instructions (the same bits;
  /// the kernel tests compare): exp, exp_nonpositive's last steps, exp's lower clamp.
  static constexpr bool own_exp = false, own_exp_nonpositive = true, own_zero_unless_ge = true;
  static bool supported() { return __builtin_cpu_supports("avx512f"); }  ///< can this CPU run it
  /// Register tile of the matrix kernels: 6 rows × 4 vectors = 24 of the 32 zmm registers.
  static constexpr index_t gemm_rows = 6, gemm_vecs = 4;
  static constexpr index_t gemv_vecs = 8;  ///< vectors of a single row's tile

  static __mmask16 prefix(index_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load_partial(const float* p, index_t n) { return _mm512_maskz_loadu_ps(prefix(n), p); }
  static V load_partial_or(const float* p, index_t n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), prefix(n), p);
  }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store_partial(float* p, V v, index_t n) { _mm512_mask_storeu_ps(p, prefix(n), v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  /// div in the first n lanes (n <= 16), the others unspecified: a ymm division where n <= 8 (the
  /// same IEEE division of each lane at half a zmm division's cost: one divider, fed a lane at a
  /// time).
  static V div_first(V a, V b, index_t n) {
    if (n <= 8) return _mm512_zextps256_ps512(_mm256_div_ps(_mm512_castps512_ps256(a), _mm512_castps512_ps256(b)));
    return _mm512_div_ps(a, b);
  }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V fma_n(float a, V b, V c) { return fma(set1(a), b, c); }  ///< a·b + c with a scalar a
  static V max(V a, V b) { return _mm512_max_ps(a, b); }            // b when unordered
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_ps(a); }
  static V abs(V a) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));
  }
  static V keep_first(V v, index_t n) { return _mm512_maskz_mov_ps(prefix(n), v); }
  static V select_gt(V a, V b, V x, V y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), y, x); }
  static V select_nan(V x, V y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x); }
  /// x where x >= lo, else +0 (NaN: +0): where exp's core runs its lanes below the range, since
  /// arithmetic with a subnormal result takes a microcode assist here (simd/math.hpp).
  static V zero_unless_ge(V x, V lo) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ), x); }
  /// simd_math::exp_nonpositive with its last steps in this set's instructions, around the same
  /// core (Core: simd_math::ExpCore, n = round(x / ln 2), p = e^(x - n ln 2), and its lower end
  /// lo). The core runs on x itself in every lane. The lanes below lo and NaN end as max(+0, x):
  /// +0, or x itself where x is NaN (vmaxps returns its second operand when either is NaN); their
  /// n is replaced by 0 before the vscalefps, so that no lane of it makes a subnormal (p · 2^n with
  /// n < -126 would, and x86 computes a subnormal result in a microcode assist: simd/math.hpp),
  /// masked off or not; and no step of the core on them does (every float below lo and every NaN
  /// checked: tests/unit/exp_nonpositive_check.hpp). The others, n an integer in [-126, 0], end as
  /// vscalefps(p, n): the one rounding of p · 2^n, which is what the generic p · pow2i(n) computes
  /// (2^n is normal there). The compare and the replacement of n are off the exp's dependent chain
  /// (where the core ran on x zeroed below lo, as below_lo_harmless does, the encoder layer at
  /// 10×16×2×32 took ~2 % longer: bench/ab/ab.sh on Zen 5). (The zero-masked vscalefps: the unmasked
  /// intrinsic's undefined source trips GCC 12's -Wmaybe-uninitialized; the masked max overwrites
  /// those lanes either way.)
  template <class Core>
  static V exp_nonpositive(V x, Core core) {
    const __mmask16 outside = _mm512_cmp_ps_mask(x, _mm512_set1_ps(Core::lo), _CMP_NGE_UQ);
    const __mmask16 inside = static_cast<__mmask16>(~outside);
    V n, p;
    core(x, n, p);
    const V n_inside = _mm512_maskz_mov_ps(inside, n);  // (0 below lo)
    return _mm512_mask_max_ps(_mm512_maskz_scalef_ps(inside, p, n_inside), outside, _mm512_setzero_ps(), x);
  }
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
  /// reduce16 of 16 rows at once: sums[r] = reduce16(acc + r) bit for bit for r < 16 (acc: one
  /// vector a row). The same folds in halves with the same operands, taken across the rows (pairs
  /// of rows share a vector after the first fold, four after the second): 15 additions and 30
  /// shuffles where 16 reduce16 take 64 additions and shuffles in 16 chains of 4 dependent steps.
  /// The folds leave the sum of the row in position k + 4p in lane 4k + p; the rows enter in the
  /// order that puts row r in lane r (position k + 4p takes row rows_in(k + 4p) = 4k + p), so the
  /// sums need no permutation on their way out (a vpermps on every caller's chain: 5 cycles on Zen 5).
  static constexpr index_t reduce_rows = 16;
  static constexpr int rows_in(int i) { return 4 * (i % 4) + i / 4; }
  [[gnu::always_inline]] static void reduce16_rows(const V* acc, float* sums) {
    V b[8], c[4], d[2];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {  // positions 2j, 2j+1: lanes i and i + 8 (i < 8)
      const V x = acc[rows_in(2 * j)], y = acc[rows_in(2 * j + 1)];
      b[j] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x44), _mm512_shuffle_f32x4(x, y, 0xEE));
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {  // quarter k: position 4j + k, lanes i and i + 4 (i < 4)
      V lo, hi;
      split_quarters(b[2 * j], b[2 * j + 1], lo, hi);
      c[j] = _mm512_add_ps(lo, hi);
    }
#pragma GCC unroll 2
    for (int j = 0; j < 2; ++j)  // quarter k: positions 8j + k and 8j + 4 + k, lanes i and i + 2 (i < 2)
      d[j] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * j], c[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(c[2 * j], c[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // lane 4k + p: position k + 4p, that is row 4k + p; lanes 0 and 1
    _mm512_storeu_ps(sums, _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1))));
  }
  /// The largest lane (a tree of maxima: for values that are not NaN, the order does not matter).
  static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }
  /// reduce_max of 16 rows at once: maxs[r] = reduce_max(v[r]) bit for bit for r < 16, NaN lanes
  /// included: the tree of _mm512_reduce_max_ps (GCC's avx512fintrin.h: max(upper 8, lower 8),
  /// max(upper 4, lower 4), max(lanes 0 1, lanes 2 3), max(lane 0, lane 1)), each vmaxps with the
  /// same first and second operands (the second is returned when either is NaN), taken across the
  /// rows as reduce16_rows takes its folds: 15 maxima and 30 shuffles for 16 rows where 16
  /// reduce_max take 64 maxima and shuffles. The rows enter as reduce16_rows' do (row r out in lane r).
  [[gnu::always_inline]] static void reduce_max_rows(const V* v, float* maxs) {
    V b[8], c[4], d[2];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {  // positions 2j, 2j+1: max(lane i + 8, lane i) (i < 8)
      const V x = v[rows_in(2 * j)], y = v[rows_in(2 * j + 1)];
      b[j] = _mm512_max_ps(_mm512_shuffle_f32x4(x, y, 0xEE), _mm512_shuffle_f32x4(x, y, 0x44));
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {  // quarter k: position 4j + k, max(lane i + 4, lane i) (i < 4)
      V lo, hi;
      split_quarters(b[2 * j], b[2 * j + 1], lo, hi);
      c[j] = _mm512_max_ps(hi, lo);
    }
#pragma GCC unroll 2
    for (int j = 0; j < 2; ++j)  // quarter k: positions 8j + k and 8j + 4 + k, max(lane i, lane i + 2) (i < 2)
      d[j] = _mm512_max_ps(_mm512_shuffle_ps(c[2 * j], c[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(c[2 * j], c[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // lane 4k + p: position k + 4p, that is row 4k + p; max(lane 0, lane 1)
    _mm512_storeu_ps(maxs, _mm512_max_ps(_mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1))));
  }
  /// lo: quarters 0 and 2 of a, then of b; hi: quarters 1 and 3 of a, then of b.
  static void split_quarters(V a, V b, V& lo, V& hi) {
    lo = _mm512_shuffle_f32x4(a, b, 0x88);
    hi = _mm512_shuffle_f32x4(a, b, 0xDD);
  }
  /// The 4 × 4 transposes of four vectors' 128-bit quarters, quarter by quarter: lane j of quarter k
  /// of o[i] is lane i of quarter k of the j-th of a, b, c, d (two rounds: pairs of lanes, then of
  /// 64-bit pairs). transpose_tile's first rounds, and those of the attention's rows in lanes
  /// (kernels/attention/x86_lanes.hpp).
  [[gnu::always_inline]] static void transpose_quarters4(V a, V b, V c, V d, V* o) {
    const V t0 = _mm512_unpacklo_ps(a, b), t1 = _mm512_unpackhi_ps(a, b);
    const V t2 = _mm512_unpacklo_ps(c, d), t3 = _mm512_unpackhi_ps(c, d);
    o[0] = _mm512_shuffle_ps(t0, t2, 0x44);
    o[1] = _mm512_shuffle_ps(t0, t2, 0xEE);
    o[2] = _mm512_shuffle_ps(t1, t3, 0x44);
    o[3] = _mm512_shuffle_ps(t1, t3, 0xEE);
  }
  /// d[c·ld + r] = s[r·ls + c] for a 16 × 16 tile: 16 row loads, four rounds of shuffles (pairs of
  /// lanes, of 64-bit pairs, then of 128-bit quarters twice), 16 row stores.
  static void transpose_tile(const float* s, index_t ls, float* d, index_t ld) {
    V r[16], t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(s + i * ls);
#pragma GCC unroll 4
    for (int i = 0; i < 16; i += 4) {  // pairs of lanes, then of 64-bit pairs
      transpose_quarters4(r[i], r[i + 1], r[i + 2], r[i + 3], r + i);
    }
    // 128-bit quarters: rows i and i + 4 within each group of 8, then rows i and i + 8
#pragma GCC unroll 2
    for (int g = 0; g < 16; g += 8) {
#pragma GCC unroll 4
      for (int i = g; i < g + 4; ++i) split_quarters(r[i], r[i + 4], t[i], t[i + 4]);
    }
#pragma GCC unroll 2
    for (int g = 0; g < 8; g += 4) {
#pragma GCC unroll 4
      for (int i = g; i < g + 4; ++i) split_quarters(t[i], t[i + 8], r[i], r[i + 8]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(d + i * ld, r[i]);
  }
};

}  // namespace STF_VARIANT_NAMESPACE
}  // namespace stf::isa
