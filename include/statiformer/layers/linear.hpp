// statiformer — one linear layer in any number format (NumberFormat): the one place where a layer's
// parameters choose the kernel that multiplies them. Layers call `linear_rows` with their
// LinearParamsOf<In, Out, Bias, Format> and a scratch of `linear_scratch_floats<Format>(rows, In)`.
#pragma once

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

}  // namespace stf
