// statiformer — one linear layer in any number format (NumberFormat): the one place where a layer's
// parameters choose the kernel that multiplies them. Layers call `linear_rows` with their
// LinearParamsOf<In, Out, Bias, Format> and a scratch of `linear_scratch_floats<Format>(rows, In)`.
#pragma once

#include <cstdint>
#include <utility>

#include <statiformer/kernels/api.hpp>
#include <statiformer/layers/params.hpp>

namespace stf {

/// Floats of scratch a linear in format F needs over `rows` rows of `in` inputs (f32: none; w8a8: the
/// quantized rows, linear_w8a8_scratch_bytes; w8a32: one converted chunk of a weight panel).
template <NumberFormat F>
constexpr index_t linear_scratch_floats(index_t rows, index_t in) {
  if constexpr (F == NumberFormat::w8a8)
    return (linear_w8a8_scratch_bytes(rows, in) + index_t(sizeof(float)) - 1) / index_t(sizeof(float));
  else if constexpr (F == NumberFormat::w8a32)
    return linear_w8a32_scratch_floats(in);
  else
    return 0;
}

/// y [rows, Out] = act(x [rows, In] Wᵀ + b) with int8 weights, in format F (w8a8: each row of x
/// quantized at run time; w8a32: x stays float). scratch: linear_scratch_floats<F>(rows, In). y must
/// not alias x.
template <NumberFormat F, index_t In, index_t Out, bool B>
void linear_rows(const QuantizedLinearParams<In, Out, B>& p, const float* x, index_t rows, float* y, float* scratch,
                 Fuse act = Fuse::none) {
  static_assert(is_int8(F), "an int8 linear runs in format w8a32 or w8a8");
  if constexpr (F == NumberFormat::w8a8)
    ActiveKernels::linear_w8a8(x, rows, In, p.weight, p.weight_scale.data, p.bias_or_null(), Out, y,
                               reinterpret_cast<std::int8_t*>(scratch), act);
  else
    ActiveKernels::linear_w8a32(x, rows, In, p.weight, p.weight_scale.data, p.bias_or_null(), Out, y, scratch, act);
}

/// y [rows, Out] = act(x [rows, In] Wᵀ + b) in float32 (format f32: a layer writes one call for every
/// format). y must not alias x.
template <NumberFormat F, index_t In, index_t Out, bool B>
void linear_rows(const LinearParams<In, Out, B>& p, const float* x, index_t rows, float* y, float*,
                 Fuse act = Fuse::none) {
  static_assert(F == NumberFormat::f32, "float parameters run in format f32");
  ActiveKernels::linear(x, rows, In, p.weight.data, p.bias_or_null(), Out, y, act);
}

namespace detail {
/// Whether the floats [a, a + na) and [b, b + nb) share an address (compared as integers: the
/// buffers may be unrelated arrays).
inline bool overlaps(const float* a, index_t na, const float* b, index_t nb) {
  const auto ia = reinterpret_cast<std::uintptr_t>(a), ib = reinterpret_cast<std::uintptr_t>(b);
  return ia < ib + nb * sizeof(float) && ib < ia + na * sizeof(float);
}

/// linear_rows_shared's body over pairs (parameters, output).
template <NumberFormat F, class... Params>
void linears_shared(const float* x, index_t rows, float* scratch, const std::pair<const Params&, float*>&... ls) {
  if constexpr (F == NumberFormat::w8a8) {
    constexpr index_t ins[] = {Params::in_features...}, in = ins[0];
    static_assert(((Params::in_features == in) && ...), "the linears share their input: the same In");
    const W8a8Linear linears[] = {{ls.first.weight, ls.first.weight_scale.data, ls.first.bias_or_null(),
                                   Params::out_features, ls.second, Fuse::none}...};
    ActiveKernels::linears_w8a8(x, rows, in, linears, sizeof...(Params), reinterpret_cast<std::int8_t*>(scratch));
  } else {
    (linear_rows<F>(ls.first, x, rows, ls.second, scratch), ...);
  }
}
}  // namespace detail

/// Two linears in format F over the same rows x [rows, In] (K and V of an attention): ya = x Aᵀ + a,
/// yb = x Bᵀ + b, the bits of linear_rows of each. In w8a8 each group of rows is quantized once for
/// both (Kernels::linears_w8a8); in the other formats they run one after the other. Neither y may
/// alias x or the other. scratch: linear_scratch_floats<F>(rows, In).
template <NumberFormat F, class PA, class PB>
void linear_rows_shared(const float* x, index_t rows, float* scratch, const PA& pa, float* ya, const PB& pb,
                        float* yb) {
  detail::linears_shared<F, PA, PB>(x, rows, scratch, {pa, ya}, {pb, yb});
}
/// Three linears over the same rows (Q, K and V of a self-attention), as the two above.
template <NumberFormat F, class PA, class PB, class PC>
void linear_rows_shared(const float* x, index_t rows, float* scratch, const PA& pa, float* ya, const PB& pb, float* yb,
                        const PC& pc, float* yc) {
  detail::linears_shared<F, PA, PB, PC>(x, rows, scratch, {pa, ya}, {pb, yb}, {pc, yc});
}

}  // namespace stf
