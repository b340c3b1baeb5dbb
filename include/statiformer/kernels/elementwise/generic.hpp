// statiformer — element-wise kernels and row reductions, generic: written once on the SIMD
// vocabulary, in the canonical order of kernels/api.hpp (16-lane sums). See kernels/README.md.
#pragma once

#include <cstdint>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/elementwise/select.hpp>
#include <statiformer/simd/math.hpp>
#include <type_traits>

namespace stf::kernels_detail::generic {

/// Row arithmetic on the vocabulary I = isa::Vocabulary<Tag>: the canonical 16-lane reductions
/// (sum, dot, reduce_lanes), the maximum, maps (division by a scalar, exp(x - m), activations,
/// addition), and the vector-by-scalar fma every product uses. The base of every other generic
/// kernel struct.
template <class Tag>
struct Elementwise {
  using I = isa::Vocabulary<Tag>;
  /// The target's own loops where the selection names them (kernels/elementwise/select.hpp): a
  /// struct, or void where the vocabulary code below runs.
  using Div = typename ElementwiseSelect<Tag>::Div;
  using ExpShifted = typename ElementwiseSelect<Tag>::ExpShifted;
  using Add = typename ElementwiseSelect<Tag>::Add;
  using V = typename I::V;
  static constexpr index_t L = I::lanes;
  static constexpr index_t kSub = 16 / L;  ///< vectors per 16-lane block
  static_assert(16 % L == 0, "a vector must hold a divisor of 16 lanes");
  /// The size-first selection (kKernelsSizeFirst, kernels/api.hpp) where a 16-lane block is 4 or
  /// more vectors (one-lane and four-lane vocabularies): the reductions' loops over a block's
  /// vectors stay loops. Unrolled, a reduction holds kSub copies of f: log_softmax_row was
  /// 6,426 B on the Cortex-M4F (756 B rolled), 2,752 B on the M55 (1,264 B).
  static constexpr bool kRollLanes = kKernelsSizeFirst && kSub >= 4;

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
    lanes_acc(x, n, f, step, acc);
    return I::reduce16(acc);
  }
  /// reduce_lanes before its fold: the kSub lane vectors acc[0, kSub) of the 16-lane block.
  template <class F, class Step>
  [[gnu::always_inline]] static inline void lanes_acc(const float* x, index_t n, F f, Step step, V* acc) {
#pragma GCC unroll 16
    for (index_t s = 0; s < kSub; ++s) acc[s] = I::zero();
    index_t k = 0;
    if constexpr (kRollLanes) {  // the same steps, one vector at a time
      for (; k + 16 <= n; k += 16) {
#pragma GCC unroll 1
        for (index_t s = 0; s < kSub; ++s) acc[s] = step(acc[s], f(I::load(x + k + s * L), L));
      }
      if (k < n) {
#pragma GCC unroll 1
        for (index_t s = 0; s < kSub; ++s) {
          const index_t c = sub_count(n - k, s);
          acc[s] = step(acc[s], f(I::load_partial(x + k + s * L, c), c));
        }
      }
    } else {
      for (; k + 16 <= n; k += 16) {
#pragma GCC unroll 16
        for (index_t s = 0; s < kSub; ++s) acc[s] = step(acc[s], f(I::load(x + k + s * L), L));
      }
      if (k < n) {
#pragma GCC unroll 16
        for (index_t s = 0; s < kSub; ++s) {
          const index_t c = sub_count(n - k, s);
          acc[s] = step(acc[s], f(I::load_partial(x + k + s * L, c), c));
        }
      }
    }
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
      if constexpr (kRollLanes) {  // (the tail only; the full blocks stay unrolled)
#pragma GCC unroll 1
        for (index_t s = 0; s < kSub; ++s) {
          const index_t c = sub_count(n - k, s);
          acc[s] = I::fma(I::load_partial(a + k + s * L, c), I::load_partial(b + k + s * L, c), acc[s]);
        }
      } else {
#pragma GCC unroll 16
        for (index_t s = 0; s < kSub; ++s) {
          const index_t c = sub_count(n - k, s);
          acc[s] = I::fma(I::load_partial(a + k + s * L, c), I::load_partial(b + k + s * L, c), acc[s]);
        }
      }
    }
    return I::reduce16(acc);
  }

  static float sum(const float* x, index_t n) {
    return reduce_lanes(
        x, n, [](V v, index_t) { return v; }, [](V acc, V v) { return I::add(acc, v); });
  }

  /// The maximum of x[0, n), n >= 1 (for finite values the order of comparisons does not matter).
  static float max_of(const float* x, index_t n) {
    V vm = I::load_partial_or(x, n < L ? n : L, x[0]);
    index_t i = L;
    for (; i + L <= n; i += L) vm = I::max(I::load(x + i), vm);
    if (i < n) vm = I::max(I::load_partial_or(x + i, n - i, x[0]), vm);
    return I::reduce_max(vm);
  }

  // ---- element-wise ------------------------------------------------------------------------------
  /// y[i] = x[i] / d, i < n (y may be x): the target's loop where it has one (Cortex-M4F/M7:
  /// kernels/elementwise/cortex_m4f.hpp).
  static void div_map(const float* x, float* y, index_t n, float d) {
    if constexpr (!std::is_void_v<Div>) {
      Div::div_n(x, y, n, d);
    } else {
      const V vd = I::set1(d);
      map(x, y, n, [&](V v) { return I::div(v, vd); });
    }
  }
  /// y[i] = exp(x[i] - m), i < n (the softmax's weights; y may be x): the target's loop where
  /// it has one (kernels/elementwise/helium.hpp), the same operations.
  static void exp_shifted(const float* x, float* y, index_t n, float m) {
    if constexpr (!std::is_void_v<ExpShifted>) {
      ExpShifted::exp_shifted(x, y, n, m);
    } else {
      const V vm = I::set1(m);
      map(x, y, n, [&](V v) { return exp_v(I::sub(v, vm)); });
    }
  }

  /// simd_math::exp, or the vocabulary's kernel of the same operations where it has one (Cortex-M
  /// scalar: simd/scalar.hpp; not simd_math's own hook, which the reference would take too).
  /// Inlined on wide vocabularies (x86: a call spills every live vector register).
  [[gnu::always_inline]] static V exp_v(V x) {
    if constexpr (ElementwiseSelect<Tag>::exp_kernel)
      return I::exp_kernel(x);
    else if constexpr (L >= 8)
      return simd_math::exp_inline<I>(x);
    else
      return simd_math::exp<I>(x);
  }

  /// exp_v for x <= 0 or NaN (a softmax's s - max): simd_math::exp_nonpositive, the same bits
  /// with fewer steps, where no vocabulary kernel takes it.
  [[gnu::always_inline]] static V exp_nonpositive(V x) {
    if constexpr (ElementwiseSelect<Tag>::exp_kernel)
      return I::exp_kernel(x);
    else
      return simd_math::exp_nonpositive<I>(x);
  }

  template <class F>
  static void map(const float* x, float* y, index_t n, F f) {
    index_t i = 0;
    for (; i + L <= n; i += L) I::store(y + i, f(I::load(x + i)));
    if (i < n) I::store_partial(y + i, f(I::load_partial(x + i, n - i)), n - i);
  }

  /// y[i] = f(a[i], b[i], c[i]) vector by vector.
  template <class F>
  static void map3(const float* a, const float* b, const float* c, float* y, index_t n, F f) {
    index_t i = 0;
    for (; i + L <= n; i += L) I::store(y + i, f(I::load(a + i), I::load(b + i), I::load(c + i)));
    if (i < n)
      I::store_partial(
          y + i, f(I::load_partial(a + i, n - i), I::load_partial(b + i, n - i), I::load_partial(c + i, n - i)), n - i);
  }

  static void activation(Activation a, float* x, index_t n) {
    if (a == Activation::relu)
      map(x, x, n, [](V v) { return simd_math::relu<I>(v); });
    else if (a == Activation::gelu)
      map(x, x, n, [](V v) { return simd_math::gelu<I>(v); });
    else
      map(x, x, n, [](V v) { return simd_math::gelu_tanh<I>(v); });
  }

  static void add(float* y, const float* x, index_t n) {
    if constexpr (!std::is_void_v<Add>) return Add::add_n(y, x, n);  // Cortex-M
    index_t i = 0;
    for (; i + L <= n; i += L) I::store(y + i, I::add(I::load(y + i), I::load(x + i)));
    if (i < n) I::store_partial(y + i, I::add(I::load_partial(y + i, n - i), I::load_partial(x + i, n - i)), n - i);
  }
};

}  // namespace stf::kernels_detail::generic
