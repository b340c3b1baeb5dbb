// statiformer — LayerNorm, generic: rows staged in groups on the SIMD vocabulary. Targets' own rows:
// kernels/norm/select.hpp. See kernels/README.md.
#pragma once

#include <cmath>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/norm/select.hpp>
#include <type_traits>

namespace stf::kernels_detail::generic {

/// LayerNorm of rows, both kinds (LayerNormKind): statistics as canonical 16-lane sums.
template <class Tag>
struct Norm : Elementwise<Tag> {
  using typename Elementwise<Tag>::I;
  using typename Elementwise<Tag>::V;
  using Elementwise<Tag>::L;
  using Elementwise<Tag>::reduce_lanes;
  using Elementwise<Tag>::lanes_acc;
  using Elementwise<Tag>::kSub;
  using Elementwise<Tag>::sum;
  using Elementwise<Tag>::map3;
  using Elementwise<Tag>::add;
  using Elementwise<Tag>::sub_count;

  /// LayerNorm of `rows` rows of n values (row stride n; y may alias x), in groups of rows taken
  /// stage by stage (means, then squared deviations, then the normalization): a row's statistics
  /// are two dependent reductions followed by a square root and a division, and the rows' chains
  /// overlap when they are not run one after the other. Up to 16 rows are one group on x86 (10 rows
  /// of 16 as 8 + 2 took 12% longer), more go 8 at a time.
  static void layer_norm_rows(const float* x, index_t rows, const float* gain, const float* bias, index_t n,
                              LayerNormKind kind, float eps, float* y) {
    // the same operations in the target's own code for whole 16-lane blocks where the selection
    // (kernels/norm/select.hpp) names one, row by row (in-order cores gain nothing from staging)
    using Row16 = typename NormSelect<Tag>::Row16;
    if constexpr (!std::is_void_v<Row16>) {
      if (kind == LayerNormKind::torch && n && n % 16 == 0) {
        for (index_t r = 0; r < rows; ++r) Row16::layer_norm16(x + r * n, gain, bias, n, eps, y + r * n);
        return;
      }
    }
    if constexpr (NormSelect<Tag>::fold_rows) {
      // (one row, a decoding step's: the plain stages below; the fold would sum reduce_rows rows, all
      // but one of zeros, on the step's dependent chain)
      if (rows > 1) return layer_norm_rows_across(x, rows, gain, bias, n, kind, eps, y);
    }
    // (16 on the wide x86 variants only: elsewhere the arrays would only take stack)
    constexpr index_t G = L >= 8 ? 16 : 8;
    const index_t group = rows <= G ? G : 8;  // (long rows: 8 at a time stay in L1 between the stages)
    for (index_t r0 = 0; r0 < rows; r0 += group) {
      const index_t g = rows - r0 < group ? rows - r0 : group;
      const float* xg = x + r0 * n;
      float* yg = y + r0 * n;
      float mean[G], scale[G];
      for (index_t r = 0; r < g; ++r) mean[r] = sum(xg + r * n, n) / static_cast<float>(n);
      for (index_t r = 0; r < g; ++r) {
        const V vmean = I::set1(mean[r]);
        const float ss = reduce_lanes(
            xg + r * n, n, [&](V v, index_t c) { return I::keep_first(I::sub(v, vmean), c); },
            [](V acc, V d) { return I::fma(d, d, acc); });
        scale[r] = kind == LayerNormKind::torch ? 1.0f / std::sqrt(ss / static_cast<float>(n) + eps)
                                                : std::sqrt(ss / static_cast<float>(n - 1)) + eps;
      }
      normalize_rows(xg, g, gain, bias, n, kind, mean, scale, yg);
    }
  }

  /// lanes_acc of a row's sums: y[i] = a[i] + x[i] (add's), stored, and summed into acc in
  /// lanes_acc's order (each vector of y stored after its loads of a and x: y may alias either).
  [[gnu::always_inline]] static inline void sums_acc(const float* a, const float* x, index_t n, float* y, V* acc) {
#pragma GCC unroll 16
    for (index_t s = 0; s < kSub; ++s) acc[s] = I::zero();
    index_t k = 0;
    for (; k + 16 <= n; k += 16) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) {
        const V v = I::add(I::load(a + k + s * L), I::load(x + k + s * L));
        I::store(y + k + s * L, v);
        acc[s] = I::add(acc[s], v);
      }
    }
    if (k < n) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) {
        const index_t c = sub_count(n - k, s);  // (0: zeros added, as lanes_acc adds them)
        const V v = I::add(I::load_partial(a + k + s * L, c), I::load_partial(x + k + s * L, c));
        I::store_partial(y + k + s * L, v, c);
        acc[s] = I::add(acc[s], v);
      }
    }
  }

  /// The last stage: y = (x - mean) · scale · gain + bias (torch), gain · (x - mean) / scale + bias
  /// (annotated), for g rows.
  [[gnu::always_inline]] static inline void normalize_rows(const float* xg, index_t g, const float* gain,
                                                           const float* bias, index_t n, LayerNormKind kind,
                                                           const float* mean, const float* scale, float* yg) {
    for (index_t r = 0; r < g; ++r) {
      const float* xr = xg + r * n;
      float* yr = yg + r * n;
      const V vmean = I::set1(mean[r]);
      const V vs = I::set1(scale[r]);
      if (kind == LayerNormKind::torch)
        map3(xr, gain, bias, yr, n,
             [&](V xv, V gv, V bv) { return I::add(I::mul(I::mul(I::sub(xv, vmean), vs), gv), bv); });
      else
        map3(xr, gain, bias, yr, n,
             [&](V xv, V gv, V bv) { return I::add(I::div(I::mul(gv, I::sub(xv, vmean)), vs), bv); });
    }
  }

  /// layer_norm_rows where the selection says fold_rows (x86: the vocabulary's reduce16_rows folds
  /// several rows' 16-lane sums at once): the same stages over groups of up to 16 rows, each stage's sums folded
  /// across the rows, and the statistics' scalar steps (division by n, + eps, square root,
  /// reciprocal) as vector operations over the group's rows: the same operations on each row's
  /// values, so the same bits.
  /// Res: the rows are x + res (add_layer_norm_rows), their sums taken in the first stage and written to
  /// y, which the later stages read (its own instantiations: the plain rows' code stays as it was).
  template <bool Res = false>
  static void layer_norm_rows_across(const float* x, index_t rows, const float* gain, const float* bias, index_t n,
                                     LayerNormKind kind, float eps, float* y, const float* res = nullptr) {
    // the short rows of small models with their length known to the compiler: the stages' loops
    // over a row's vectors unrolled, no tails (the encoder layer at D 16 and 32: 2-5 % faster)
    if (n == 16) return across_rows<16, Res>(x, rows, gain, bias, n, kind, eps, y, res);
    if (n == 32) return across_rows<32, Res>(x, rows, gain, bias, n, kind, eps, y, res);
    across_rows<0, Res>(x, rows, gain, bias, n, kind, eps, y, res);
  }

  /// y = layer_norm_rows(a + x) (Kernels::add_layer_norm_rows): where the selection folds rows, the
  /// sums a[i] + x[i] (add's) taken in layer_norm_rows_across' first stage, written to y (each element
  /// read before it is written: y may alias a or x) and read from there by the later stages, instead of
  /// a pass of add over every row first (the encoder layer at 10×16: ~3 %); a, where it is not y, as it was. Elsewhere,
  /// and for one row, add then layer_norm_rows: a holds the sums.
  static void add_layer_norm_rows(float* a, const float* x, index_t rows, const float* gain, const float* bias,
                                  index_t n, LayerNormKind kind, float eps, float* y) {
    if constexpr (NormSelect<Tag>::fold_rows && std::is_void_v<typename NormSelect<Tag>::Row16>) {
      if (rows > 1) return layer_norm_rows_across<true>(a, rows, gain, bias, n, kind, eps, y, x);
    }
    Elementwise<Tag>::add(a, x, rows * n);
    layer_norm_rows(a, rows, gain, bias, n, kind, eps, y);
  }

  /// layer_norm_rows_across for rows of N values (N > 0: n, a constant) or of n (N = 0); Res, res as there.
  template <index_t N, bool Res = false>
  [[gnu::always_inline]] static inline void across_rows(const float* x, index_t rows, const float* gain,
                                                        const float* bias, index_t n_run, LayerNormKind kind, float eps,
                                                        float* y, const float* res) {
    const index_t n = N ? N : n_run;
    constexpr index_t G = 16, RR = I::reduce_rows;
    static_assert(G % RR == 0 && RR % L == 0);
    const index_t group = rows <= G ? G : 8;  // (long rows: 8 at a time stay in L1 between the stages)
    const V vn = I::set1(static_cast<float>(n));
    // s / n as s · (1 / n) where n is a power of two: both are the rounding of the same real number
    // (as the attention's ScoreScale), so the same bits, and a multiplication instead of a division
    // on each statistic's dependent chain, which short rows wait for (a vdivps takes several times
    // a vmulps' latency)
    const bool n_pow2 = (n & (n - 1)) == 0;
    const V vinv_n = I::set1(1.0f / static_cast<float>(n));
    auto per_n = [&](V s) { return n_pow2 ? I::mul(s, vinv_n) : I::div(s, vn); };
    for (index_t r0 = 0; r0 < rows; r0 += group) {
      const index_t g = rows - r0 < group ? rows - r0 : group;
      const index_t gr = (g + RR - 1) / RR * RR;  // rows of whole folds (the others' sums are 0)
      const float* xg = x + r0 * n;
      float* yg = y + r0 * n;
      alignas(64) float mean[G], scale[G];
      for (index_t b = 0; b < gr; b += RR) {
        V acc[RR * kSub];
#pragma GCC unroll 16
        for (index_t r = 0; r < RR; ++r) {
          if (b + r < g) {
            if constexpr (Res)
              sums_acc(xg + (b + r) * n, res + (r0 + b + r) * n, n, yg + (b + r) * n, acc + r * kSub);
            else
              lanes_acc(
                  xg + (b + r) * n, n, [](V v, index_t) { return v; }, [](V a, V v) { return I::add(a, v); },
                  acc + r * kSub);
          } else {
            for (index_t s = 0; s < kSub; ++s) acc[r * kSub + s] = I::zero();
          }
        }
        I::reduce16_rows(acc, mean + b);
      }
      if constexpr (Res) xg = yg;  // (the sums)
      for (index_t r = 0; r < gr; r += L) I::store(mean + r, per_n(I::load(mean + r)));
      for (index_t b = 0; b < gr; b += RR) {
        V acc[RR * kSub];
#pragma GCC unroll 16
        for (index_t r = 0; r < RR; ++r) {
          if (b + r < g) {
            const V vmean = I::set1(mean[b + r]);
            lanes_acc(
                xg + (b + r) * n, n, [&](V v, index_t c) { return I::keep_first(I::sub(v, vmean), c); },
                [](V a, V d) { return I::fma(d, d, a); }, acc + r * kSub);
          } else {
            for (index_t s = 0; s < kSub; ++s) acc[r * kSub + s] = I::zero();
          }
        }
        I::reduce16_rows(acc, scale + b);
      }
      if (kind == LayerNormKind::torch) {
        const V ve = I::set1(eps), one = I::set1(1.0f);
        for (index_t r = 0; r < gr; r += L)
          I::store(scale + r, I::div(one, I::sqrt(I::add(per_n(I::load(scale + r)), ve))));
      } else {
        const V ve = I::set1(eps), vn1 = I::set1(static_cast<float>(n - 1));
        for (index_t r = 0; r < gr; r += L) I::store(scale + r, I::add(I::sqrt(I::div(I::load(scale + r), vn1)), ve));
      }
      normalize_rows(xg, g, gain, bias, n, kind, mean, scale, yg);
    }
  }

  static void layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind,
                             float eps, float* y) {
    layer_norm_rows(x, 1, gain, bias, n, kind, eps, y);
  }
};

}  // namespace stf::kernels_detail::generic
