// statiformer — log_softmax, generic, on the SIMD vocabulary. See kernels/README.md.
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/softmax/select.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

namespace stf::kernels_detail::generic {

/// log_softmax of a row: max, the canonical sum of exp(x - max), and x - max - log(sum).
template <class Tag>
struct Softmax : Elementwise<Tag> {
  using typename Elementwise<Tag>::I;
  using typename Elementwise<Tag>::V;
  using Elementwise<Tag>::reduce_lanes;
  using Elementwise<Tag>::max_of;
  using Elementwise<Tag>::exp_v;
  using Elementwise<Tag>::map;
  using Elementwise<Tag>::add;

  static void log_softmax_row(float* x, index_t n) {
    const float m = max_of(x, n);
    const V vm = I::set1(m);
    const float total = reduce_lanes(
        x, n, [&](V v, index_t c) { return I::keep_first(exp_v(I::sub(v, vm)), c); },
        [](V acc, V e) { return I::add(acc, e); });
    using S = isa::Vocabulary<isa::scalar>;
    const V lse = I::set1(simd_math::log<S>(total));
    map(x, x, n, [&](V v) { return I::sub(I::sub(v, vm), lse); });
  }
};

}  // namespace stf::kernels_detail::generic
