// statiformer — every kernel, written once on the SIMD vocabulary I = isa::Vocabulary<Tag>, in the
// canonical order of kernels/api.hpp. Included only by src/kernels/variant_<isa>.cpp, each compiled
// with its ISA's flags; layers see only kernels/api.hpp.
#pragma once

#include <cmath>

#include <statiformer/kernels/api.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

// Register tiles only stay in registers when their small constant loops are fully unrolled:
// those loops carry `#pragma GCC unroll 16`.

namespace stf::kernels_detail {

template <class Tag>
struct Generic {
  using I = isa::Vocabulary<Tag>;
  using V = typename I::V;
  static constexpr index_t L = I::lanes;
  static constexpr index_t kSub = 16 / L;  ///< vectors per 16-lane block
  static_assert(16 % L == 0, "a vector must hold a divisor of 16 lanes");

  /// Lanes of sub-vector s of a block that holds `count` valid elements.
  static constexpr index_t sub_count(index_t count, index_t s) {
    return count > s * L ? (count - s * L < L ? count - s * L : L) : 0;
  }

  // ---- reductions in the canonical order ------------------------------------------------------
  /// The canonical 16-lane reduction of f(element) over x[0, n): the transformed value of lane
  /// vector s of each block, with `c` valid lanes, is combined into acc[s] by `step`; padding lanes
  /// must leave f's value 0 (f receives c to mask them). Then the lanes are folded.
  template <class F, class Step>
  static float reduce_lanes(const float* x, index_t n, F f, Step step) {
    V acc[kSub];
#pragma GCC unroll 16
    for (index_t s = 0; s < kSub; ++s) acc[s] = I::zero();
    for (index_t k = 0; k < n; k += 16) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) {
        const index_t c = sub_count(n - k, s);
        acc[s] = step(acc[s], f(I::load_partial(x + k + s * L, c), c));
      }
    }
    return I::reduce16(acc);
  }

  static float dot(const float* a, const float* b, index_t n) {
    V acc[kSub];
#pragma GCC unroll 16
    for (index_t s = 0; s < kSub; ++s) acc[s] = I::zero();
    index_t k = 0;
    for (; k + 16 <= n; k += 16) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) acc[s] = I::fma(I::load(a + k + s * L), I::load(b + k + s * L), acc[s]);
    }
    if (k < n) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) {
        const index_t c = sub_count(n - k, s);
        acc[s] = I::fma(I::load_partial(a + k + s * L, c), I::load_partial(b + k + s * L, c), acc[s]);
      }
    }
    return I::reduce16(acc);
  }

  static float sum(const float* x, index_t n) {
    return reduce_lanes(
        x, n, [](V v, index_t) { return v; }, [](V acc, V v) { return I::add(acc, v); });
  }

  // ---- element-wise ------------------------------------------------------------------------------
  template <class F>
  static void map(const float* x, float* y, index_t n, F f) {
    index_t i = 0;
    for (; i + L <= n; i += L) I::store(y + i, f(I::load(x + i)));
    if (i < n) I::store_partial(y + i, f(I::load_partial(x + i, n - i)), n - i);
  }

  static void activation(Activation a, float* x, index_t n) {
    if (a == Activation::relu)
      map(x, x, n, [](V v) { return simd_math::relu<I>(v); });
    else
      map(x, x, n, [](V v) { return simd_math::gelu<I>(v); });
  }

  static void add(float* y, const float* x, index_t n) {
    index_t i = 0;
    for (; i + L <= n; i += L) I::store(y + i, I::add(I::load(y + i), I::load(x + i)));
    if (i < n) I::store_partial(y + i, I::add(I::load_partial(y + i, n - i), I::load_partial(x + i, n - i)), n - i);
  }

  // ---- matrix product: register tiles of R rows × O outputs, each a 16-lane accumulator ---------
  /// y[r, o] = x[r] · w[o] (+ bias[o]) for an R × O tile; w rows are w_stride floats apart.
  template <index_t R, index_t O>
  static void tile(const float* x, index_t x_stride, index_t in, const float* w, index_t w_stride, const float* bias,
                   float* y, index_t y_stride) {
    V acc[R][O][kSub];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t o = 0; o < O; ++o) {
#pragma GCC unroll 16
        for (index_t s = 0; s < kSub; ++s) acc[r][o][s] = I::zero();
      }
    }
    index_t k = 0;
    for (; k + 16 <= in; k += 16) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) {
        V xv[R];
#pragma GCC unroll 16
        for (index_t r = 0; r < R; ++r) xv[r] = I::load(x + r * x_stride + k + s * L);
#pragma GCC unroll 16
        for (index_t o = 0; o < O; ++o) {
          const V wv = I::load(w + o * w_stride + k + s * L);
#pragma GCC unroll 16
          for (index_t r = 0; r < R; ++r) acc[r][o][s] = I::fma(xv[r], wv, acc[r][o][s]);
        }
      }
    }
    if (k < in) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) {
        const index_t c = sub_count(in - k, s);
        if (c == 0) {  // all padding: fma(0, 0, acc) is exactly acc + 0, without the loads
#pragma GCC unroll 16
          for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
            for (index_t o = 0; o < O; ++o) acc[r][o][s] = I::add(acc[r][o][s], I::zero());
          }
          continue;
        }
        V xv[R];
#pragma GCC unroll 16
        for (index_t r = 0; r < R; ++r) xv[r] = I::load_partial(x + r * x_stride + k + s * L, c);
#pragma GCC unroll 16
        for (index_t o = 0; o < O; ++o) {
          const V wv = I::load_partial(w + o * w_stride + k + s * L, c);
#pragma GCC unroll 16
          for (index_t r = 0; r < R; ++r) acc[r][o][s] = I::fma(xv[r], wv, acc[r][o][s]);
        }
      }
    }
    float sums[R * O];
    if constexpr (R * O == 16 && kSub == 1 && requires(const V* a, float* f) { I::reduce16x16(a, f); }) {
      V flat[16];
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
        for (index_t o = 0; o < O; ++o) flat[r * O + o] = acc[r][o][0];
      }
      I::reduce16x16(flat, sums);
      if constexpr (R == 4 && O == 4 && requires(float* f) { I::add_bias_store4x4(f, f, f, index_t{}); }) {
        I::add_bias_store4x4(sums, bias, y, y_stride);
        return;
      }
    } else {
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
        for (index_t o = 0; o < O; ++o) sums[r * O + o] = I::reduce16(acc[r][o]);
      }
    }
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t o = 0; o < O; ++o) {
        const float v = sums[r * O + o];
        y[r * y_stride + o] = bias ? v + bias[o] : v;
      }
    }
  }

  /// Outputs per tile: tile_cols, or for a single row (a matrix-vector product) the vocabulary's
  /// gemv_cols where it has one (more accumulators, since no row shares the weight loads).
  template <index_t R>
  static constexpr index_t cols_for_rows() {
    if constexpr (R == 1 && requires { I::gemv_cols; })
      return I::gemv_cols;
    else
      return I::tile_cols;
  }

  template <index_t R>
  static void tile_row_block(const float* x, index_t x_stride, index_t in, const float* w, index_t w_stride,
                             const float* bias, index_t out, float* y, index_t y_stride) {
    constexpr index_t O = cols_for_rows<R>();
    index_t o = 0;
    for (; o + O <= out; o += O)
      tile<R, O>(x, x_stride, in, w + o * w_stride, w_stride, bias ? bias + o : nullptr, y + o, y_stride);
    for (; o < out; ++o)
      tile<R, 1>(x, x_stride, in, w + o * w_stride, w_stride, bias ? bias + o : nullptr, y + o, y_stride);
  }

  static void linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out, float* y,
                     Fuse act) {
    constexpr index_t R = I::tile_rows;
    // Cache blocking: a block of weight rows (~64 KiB) stays in cache while every input row passes.
    constexpr index_t kBlockBytes = 32 * 1024;
    index_t ob = kBlockBytes / (in * sizeof(float));
    ob = ob < 16 ? 16 : ob / 16 * 16;
    for (index_t o0 = 0; o0 < out; o0 += ob) {
      const index_t n = out - o0 < ob ? out - o0 : ob;
      const float* wb = w + o0 * in;
      const float* bb = bias ? bias + o0 : nullptr;
      index_t r = 0;
      for (; r + R <= rows; r += R) tile_row_block<R>(x + r * in, in, in, wb, in, bb, n, y + r * out + o0, out);
      for (; r < rows; ++r) tile_row_block<1>(x + r * in, in, in, wb, in, bb, n, y + r * out + o0, out);
    }
    if (act != Fuse::none) activation(act == Fuse::relu ? Activation::relu : Activation::gelu, y, rows * out);
  }

  // ---- normalization and softmax -------------------------------------------------------------
  static void layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind,
                             float eps, float* y) {
    const float mean = sum(x, n) / static_cast<float>(n);
    const V vmean = I::set1(mean);
    const float ss = reduce_lanes(
        x, n, [&](V v, index_t c) { return I::keep_first(I::sub(v, vmean), c); },
        [](V acc, V d) { return I::fma(d, d, acc); });
    index_t i = 0;
    if (kind == LayerNormKind::torch) {
      const V inv = I::set1(1.0f / std::sqrt(ss / static_cast<float>(n) + eps));
      auto f = [&](V xv, V g, V b) { return I::add(I::mul(I::mul(I::sub(xv, vmean), inv), g), b); };
      for (; i + L <= n; i += L) I::store(y + i, f(I::load(x + i), I::load(gain + i), I::load(bias + i)));
      if (i < n)
        I::store_partial(
            y + i, f(I::load_partial(x + i, n - i), I::load_partial(gain + i, n - i), I::load_partial(bias + i, n - i)),
            n - i);
    } else {
      const V denom = I::set1(std::sqrt(ss / static_cast<float>(n - 1)) + eps);
      auto f = [&](V xv, V g, V b) { return I::add(I::div(I::mul(g, I::sub(xv, vmean)), denom), b); };
      for (; i + L <= n; i += L) I::store(y + i, f(I::load(x + i), I::load(gain + i), I::load(bias + i)));
      if (i < n)
        I::store_partial(
            y + i, f(I::load_partial(x + i, n - i), I::load_partial(gain + i, n - i), I::load_partial(bias + i, n - i)),
            n - i);
    }
  }

  static float max_of(const float* x, index_t n) {
    float m = x[0];
    index_t i = 0;
    if (n >= L) {
      V vm = I::load(x);
      for (i = L; i + L <= n; i += L) vm = I::max(I::load(x + i), vm);
      const float t = I::reduce_max(vm);
      m = t > m ? t : m;
    }
    for (; i < n; ++i) m = x[i] > m ? x[i] : m;
    return m;
  }

  static void log_softmax_row(float* x, index_t n) {
    const float m = max_of(x, n);
    const V vm = I::set1(m);
    const float total = reduce_lanes(
        x, n, [&](V v, index_t c) { return I::keep_first(simd_math::exp<I>(I::sub(v, vm)), c); },
        [](V acc, V e) { return I::add(acc, e); });
    using S = isa::Vocabulary<isa::scalar>;
    const V lse = I::set1(simd_math::log<S>(total));
    map(x, x, n, [&](V v) { return I::sub(I::sub(v, vm), lse); });
  }

  // ---- attention ------------------------------------------------------------------------------
  static bool allowed(const ref::RowMask& mask, index_t j) {
    return j < mask.key_end && (!mask.allow || mask.allow[j] != 0);
  }

  /// Turns one row of raw scores into attention weights in place: masked keys -inf, allowed ones
  /// divided by scale, then exp(s - max) (0 for masked), the canonical sum, and the division.
  /// Returns false, leaving the row unnormalized, when every key is masked.
  static bool softmax_scores(float* p, index_t n_keys, const ref::RowMask& mask, float scale) {
    bool any = false;
    float m = 0.0f;
    for (index_t j = 0; j < n_keys; ++j) {
      if (!allowed(mask, j)) {
        p[j] = -INFINITY;
        continue;
      }
      p[j] = p[j] / scale;
      m = (!any || p[j] > m) ? p[j] : m;
      any = true;
    }
    if (!any) return false;
    const V vm = I::set1(m);
    map(p, p, n_keys, [&](V s) { return simd_math::exp<I>(I::sub(s, vm)); });
    const V total = I::set1(sum(p, n_keys));
    map(p, p, n_keys, [&](V e) { return I::div(e, total); });
    return true;
  }

  static constexpr index_t kAttentionRows = kAttentionRowGroup;

  /// attention_row for n_rows query rows (row r: q + r·q_stride, masks[r], weights p + r·n_keys,
  /// output out + r·out_stride, which may alias its query row): the scores of a group of rows are
  /// one register-tiled product with the K rows, and their values share each V row's loads.
  static void attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* k, const float* v,
                             index_t kv_stride, index_t head_dim, index_t n_keys, const ref::RowMask* masks,
                             MaskFill fill, float* p, float* out, index_t out_stride) {
    const float scale = std::sqrt(static_cast<float>(head_dim));
    constexpr index_t R = I::tile_rows < kAttentionRows ? I::tile_rows : kAttentionRows;
    for (index_t r0 = 0; r0 < n_rows; r0 += kAttentionRows) {
      const index_t nr = n_rows - r0 < kAttentionRows ? n_rows - r0 : kAttentionRows;
      const float* qg = q + r0 * q_stride;
      float* pg = p + r0 * n_keys;
      index_t r = 0;
      for (; r + R <= nr; r += R)
        tile_row_block<R>(qg + r * q_stride, q_stride, head_dim, k, kv_stride, nullptr, n_keys, pg + r * n_keys,
                          n_keys);
      for (; r < nr; ++r)
        tile_row_block<1>(qg + r * q_stride, q_stride, head_dim, k, kv_stride, nullptr, n_keys, pg + r * n_keys,
                          n_keys);
      bool all_any = true;
      bool any[kAttentionRows];
      for (r = 0; r < nr; ++r) all_any &= any[r] = softmax_scores(pg + r * n_keys, n_keys, masks[r0 + r], scale);
      const index_t nv = (head_dim + L - 1) / L;
      if (all_any && nv <= 4) {
        weighted_values_rows(nr, nv, pg, n_keys, v, kv_stride, head_dim, n_keys, masks + r0, out + r0 * out_stride,
                             out_stride);
        continue;
      }
      for (r = 0; r < nr; ++r) {
        float* pr = pg + r * n_keys;
        float* o = out + (r0 + r) * out_stride;
        if (any[r]) {
          const ref::RowMask& mask = masks[r0 + r];
          weighted_values(
              pr, v, kv_stride, head_dim, n_keys, [&](index_t j) { return allowed(mask, j); }, o);
        } else {  // every key masked: the documented convention
          const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
          for (index_t j = 0; j < n_keys; ++j) pr[j] = w;
          weighted_values(
              pr, v, kv_stride, head_dim, n_keys, [&](index_t) { return w != 0.0f; }, o);
        }
      }
    }
  }

  static void attention_row(const float* q, const float* k, const float* v, index_t kv_stride, index_t head_dim,
                            index_t n_keys, ref::RowMask mask, MaskFill fill, float* p, float* out) {
    attention_rows(q, head_dim, 1, k, v, kv_stride, head_dim, n_keys, &mask, fill, p, out, head_dim);
  }

  /// The values of NR rows at once (NV vectors per row in registers), each row's keys in order.
  template <index_t NR, index_t NV>
  static void weighted_values_rows_fixed(const float* p, index_t p_stride, const float* v, index_t kv_stride,
                                         index_t head_dim, index_t n_keys, const ref::RowMask* masks, float* out,
                                         index_t out_stride) {
    const index_t tail = head_dim - (NV - 1) * L;
    V acc[NR][NV];
#pragma GCC unroll 16
    for (index_t r = 0; r < NR; ++r) {
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) acc[r][i] = I::zero();
    }
    for (index_t j = 0; j < n_keys; ++j) {
      bool use[NR];
      bool any = false;
#pragma GCC unroll 16
      for (index_t r = 0; r < NR; ++r) any |= use[r] = allowed(masks[r], j);
      if (!any) continue;
      const float* vj = v + j * kv_stride;
      V vv[NV];
#pragma GCC unroll 16
      for (index_t i = 0; i + 1 < NV; ++i) vv[i] = I::load(vj + i * L);
      vv[NV - 1] = I::load_partial(vj + (NV - 1) * L, tail);
#pragma GCC unroll 16
      for (index_t r = 0; r < NR; ++r) {
        if (!use[r]) continue;
        const V pj = I::set1(p[r * p_stride + j]);
#pragma GCC unroll 16
        for (index_t i = 0; i < NV; ++i) acc[r][i] = I::fma(pj, vv[i], acc[r][i]);
      }
    }
#pragma GCC unroll 16
    for (index_t r = 0; r < NR; ++r) {
#pragma GCC unroll 16
      for (index_t i = 0; i + 1 < NV; ++i) I::store(out + r * out_stride + i * L, acc[r][i]);
      I::store_partial(out + r * out_stride + (NV - 1) * L, acc[r][NV - 1], tail);
    }
  }

  template <index_t NR>
  static void weighted_values_rows_nv(index_t nv, const float* p, index_t p_stride, const float* v, index_t kv_stride,
                                      index_t head_dim, index_t n_keys, const ref::RowMask* masks, float* out,
                                      index_t out_stride) {
    switch (nv) {
      case 1:
        return weighted_values_rows_fixed<NR, 1>(p, p_stride, v, kv_stride, head_dim, n_keys, masks, out, out_stride);
      case 2:
        return weighted_values_rows_fixed<NR, 2>(p, p_stride, v, kv_stride, head_dim, n_keys, masks, out, out_stride);
      case 3:
        return weighted_values_rows_fixed<NR, 3>(p, p_stride, v, kv_stride, head_dim, n_keys, masks, out, out_stride);
      default:
        return weighted_values_rows_fixed<NR, 4>(p, p_stride, v, kv_stride, head_dim, n_keys, masks, out, out_stride);
    }
  }

  static void weighted_values_rows(index_t nr, index_t nv, const float* p, index_t p_stride, const float* v,
                                   index_t kv_stride, index_t head_dim, index_t n_keys, const ref::RowMask* masks,
                                   float* out, index_t out_stride) {
    switch (nr) {
      case 1:
        return weighted_values_rows_nv<1>(nv, p, p_stride, v, kv_stride, head_dim, n_keys, masks, out, out_stride);
      case 2:
        return weighted_values_rows_nv<2>(nv, p, p_stride, v, kv_stride, head_dim, n_keys, masks, out, out_stride);
      case 3:
        return weighted_values_rows_nv<3>(nv, p, p_stride, v, kv_stride, head_dim, n_keys, masks, out, out_stride);
      default:
        return weighted_values_rows_nv<4>(nv, p, p_stride, v, kv_stride, head_dim, n_keys, masks, out, out_stride);
    }
  }

  /// out[d] = Σ_j p[j] · v[j][d] over the keys `use(j)` accepts, in key order, lane-wise over d.
  /// NV accumulators (head_dim in ((NV-1)·L, NV·L]) held in registers, keys in the outer loop.
  template <index_t NV, class Use>
  static void weighted_values_regs(const float* p, const float* v, index_t kv_stride, index_t head_dim, index_t n_keys,
                                   Use use, float* out) {
    const index_t tail = head_dim - (NV - 1) * L;  // lanes of the last vector, 1..L
    V acc[NV];
#pragma GCC unroll 16
    for (index_t i = 0; i < NV; ++i) acc[i] = I::zero();
    for (index_t j = 0; j < n_keys; ++j) {
      if (!use(j)) continue;
      const V pj = I::set1(p[j]);
      const float* vj = v + j * kv_stride;
#pragma GCC unroll 16
      for (index_t i = 0; i + 1 < NV; ++i) acc[i] = I::fma(pj, I::load(vj + i * L), acc[i]);
      acc[NV - 1] = I::fma(pj, I::load_partial(vj + (NV - 1) * L, tail), acc[NV - 1]);
    }
#pragma GCC unroll 16
    for (index_t i = 0; i + 1 < NV; ++i) I::store(out + i * L, acc[i]);
    I::store_partial(out + (NV - 1) * L, acc[NV - 1], tail);
  }

  template <class Use>
  static void weighted_values(const float* p, const float* v, index_t kv_stride, index_t head_dim, index_t n_keys,
                              Use use, float* out) {
    switch ((head_dim + L - 1) / L) {
      case 1:
        return weighted_values_regs<1>(p, v, kv_stride, head_dim, n_keys, use, out);
      case 2:
        return weighted_values_regs<2>(p, v, kv_stride, head_dim, n_keys, use, out);
      case 3:
        return weighted_values_regs<3>(p, v, kv_stride, head_dim, n_keys, use, out);
      case 4:
        return weighted_values_regs<4>(p, v, kv_stride, head_dim, n_keys, use, out);
      default:
        break;
    }
    index_t d = 0;
    for (; d + L <= head_dim; d += L) {
      V acc = I::zero();
      for (index_t j = 0; j < n_keys; ++j)
        if (use(j)) acc = I::fma(I::set1(p[j]), I::load(v + j * kv_stride + d), acc);
      I::store(out + d, acc);
    }
    if (d < head_dim) {
      const index_t c = head_dim - d;
      V acc = I::zero();
      for (index_t j = 0; j < n_keys; ++j)
        if (use(j)) acc = I::fma(I::set1(p[j]), I::load_partial(v + j * kv_stride + d, c), acc);
      I::store_partial(out + d, acc, c);
    }
  }
};

}  // namespace stf::kernels_detail

namespace stf {

// Kernels<Tag>'s members, defined from Generic<Tag>; each variant translation unit instantiates
// them for its own tag: `template struct stf::Kernels<stf::isa::avx2>;`.
template <class Tag>
void Kernels<Tag>::linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out,
                          float* y, Fuse act) noexcept {
  kernels_detail::Generic<Tag>::linear(x, rows, in, w, bias, out, y, act);
}
template <class Tag>
void Kernels<Tag>::attention_row(const float* q, const float* k, const float* v, index_t kv_stride, index_t head_dim,
                                 index_t n_keys, ref::RowMask mask, MaskFill fill, float* p, float* out) noexcept {
  kernels_detail::Generic<Tag>::attention_row(q, k, v, kv_stride, head_dim, n_keys, mask, fill, p, out);
}
template <class Tag>
void Kernels<Tag>::attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* k, const float* v,
                                  index_t kv_stride, index_t head_dim, index_t n_keys, const ref::RowMask* masks,
                                  MaskFill fill, float* p, float* out, index_t out_stride) noexcept {
  kernels_detail::Generic<Tag>::attention_rows(q, q_stride, n_rows, k, v, kv_stride, head_dim, n_keys, masks, fill, p,
                                               out, out_stride);
}
template <class Tag>
void Kernels<Tag>::layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind,
                                  float eps, float* y) noexcept {
  kernels_detail::Generic<Tag>::layer_norm_row(x, gain, bias, n, kind, eps, y);
}
template <class Tag>
void Kernels<Tag>::log_softmax_row(float* x, index_t n) noexcept {
  kernels_detail::Generic<Tag>::log_softmax_row(x, n);
}
template <class Tag>
void Kernels<Tag>::activation(Activation a, float* x, index_t n) noexcept {
  kernels_detail::Generic<Tag>::activation(a, x, n);
}
template <class Tag>
void Kernels<Tag>::add(float* y, const float* x, index_t n) noexcept {
  kernels_detail::Generic<Tag>::add(y, x, n);
}
template <class Tag>
float Kernels<Tag>::dot(const float* a, const float* b, index_t n) noexcept {
  return kernels_detail::Generic<Tag>::dot(a, b, n);
}
template <class Tag>
float Kernels<Tag>::sum(const float* x, index_t n) noexcept {
  return kernels_detail::Generic<Tag>::sum(x, n);
}
template <class Tag>
void Kernels<Tag>::exp(const float* x, float* y, index_t n) noexcept {
  using G = kernels_detail::Generic<Tag>;
  G::map(x, y, n, [](typename G::V v) { return simd_math::exp<typename G::I>(v); });
}
template <class Tag>
void Kernels<Tag>::log(const float* x, float* y, index_t n) noexcept {
  using G = kernels_detail::Generic<Tag>;
  G::map(x, y, n, [](typename G::V v) { return simd_math::log<typename G::I>(v); });
}
template <class Tag>
void Kernels<Tag>::gelu(const float* x, float* y, index_t n) noexcept {
  using G = kernels_detail::Generic<Tag>;
  G::map(x, y, n, [](typename G::V v) { return simd_math::gelu<typename G::I>(v); });
}
template <class Tag>
bool Kernels<Tag>::supported() noexcept {
  return isa::Vocabulary<Tag>::supported();
}
template <class Tag>
const char* Kernels<Tag>::name() noexcept {
  return isa::Vocabulary<Tag>::name;
}

}  // namespace stf
