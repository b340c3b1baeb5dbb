// statiformer — parameter schema: every layer lists its parameters by name and shape, in PyTorch
// state_dict order, through `visit`. Binding from an exported table, loading and printing the schema
// are all built on it (io/).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <statiformer/tensor.hpp>

namespace stf {

/// A dotted parameter name built without the heap ("encoder.layers.0.self_attn.q.weight").
struct Name {
  static constexpr index_t capacity = 127;
  char text[capacity + 1] = {};
  index_t length = 0;

  constexpr Name() = default;
  constexpr Name(const char* s) { append(s); }  // NOLINT: implicit on purpose

  /// `prefix / "q"` → "prefix.q" (no dot after an empty prefix).
  constexpr Name operator/(const char* part) const {
    Name n = *this;
    if (!*part) return n;
    if (n.length) n.append(".");
    n.append(part);
    return n;
  }
  constexpr Name operator/(index_t i) const {
    char digits[24] = {};
    index_t k = 0;
    do {
      digits[k++] = static_cast<char>('0' + i % 10);
      i /= 10;
    } while (i);
    char rev[24] = {};
    for (index_t j = 0; j < k; ++j) rev[j] = digits[k - 1 - j];
    return *this / rev;
  }
  constexpr const char* c_str() const { return text; }

 private:
  constexpr void append(const char* s) {
    while (*s && length < capacity) text[length++] = *s++;
    text[length] = '\0';
  }
};

/// One parameter slot: where its data pointer is stored, and its PyTorch shape (rank 1 or 2).
/// `transposed`: the model stores the transpose of the PyTorch tensor, [cols, rows], in column
/// panels of `panel` columns (see kWeightPanel, stored_index; a stored matrix of at most `panel` columns is
/// plain row-major): what the kernels read. Exporters write that layout, binders expect it.
///
/// An int8 weight (NumberFormat w8a32, w8a8; kernels/QUANTIZATION.md) has `data_i8` instead of
/// `data`: stored [quad_padded(cols), rows] in panels and k-quads (qweight_index), dtype I8, values
/// in [-127, 127]. Its per-output scales are a float vector with `scale` set: finite and >= 0.
struct ParamRef {
  const float** data;
  index_t rows;
  index_t cols;  ///< 0 for a vector
  bool transposed = false;
  index_t panel = 0;                      ///< columns per panel of the stored matrix; 0: plain row-major
  const std::int8_t** data_i8 = nullptr;  ///< an int8 weight's slot (data is null then)
  bool scale = false;                     ///< per-output scales of an int8 weight
  bool is_int8() const { return data_i8 != nullptr; }
  index_t rank() const { return cols ? 2 : 1; }
  /// Stored elements (an int8 weight's reduction padded to whole k-quads).
  index_t size() const { return cols ? rows * (is_int8() ? quad_padded(cols) : cols) : rows; }
  /// Stored bytes: 1 per int8 element, 4 per float.
  index_t bytes() const { return size() * (is_int8() ? 1 : index_t(sizeof(float))); }
};

template <index_t R, index_t C>
inline ParamRef param_ref(CMat<R, C>& m) {
  return {&m.data, R, C};
}
/// A matrix the model stores transposed: PyTorch shape [C, R], stored [R, C] in column panels.
template <index_t R, index_t C>
inline ParamRef param_ref_transposed(CMat<R, C>& m) {
  return {&m.data, C, R, true, kWeightPanel};
}
template <index_t N>
inline ParamRef param_ref(CVec<N>& v) {
  return {&v.data, N, 0};
}

/// y = x Wᵀ + b, W in PyTorch's [Out, In] shape, stored transposed as [In, Out] in column panels
/// of kWeightPanel outputs (rows of the stored matrix run across outputs, which the kernels
/// vectorize; element [k, o] at weight_index(In, Out, k, o)). Bias is part of the schema iff
/// HasBias.
template <index_t In, index_t Out, bool HasBias = true>
struct LinearParams {
  static constexpr index_t in_features = In, out_features = Out;
  static constexpr bool has_bias = HasBias;
  static constexpr index_t param_count = In * Out + (HasBias ? Out : 0);

  CMat<In, Out> weight;  ///< Wᵀ
  CVec<Out> bias;        ///< null when !HasBias

  template <class F>
  void visit(F&& f, const Name& prefix) {
    f(prefix / "weight", param_ref_transposed(weight));
    if constexpr (HasBias) f(prefix / "bias", param_ref(bias));
  }
  const float* bias_or_null() const { return HasBias ? bias.data : nullptr; }
};

/// The int8 linear (NumberFormat w8a32 or w8a8; kernels/QUANTIZATION.md): `weight` is q_w, Wᵀ in
/// int8, quad_padded(In) · Out bytes in panels of kWeightPanel outputs and k-quads
/// (qweight_index); `weight_scale` s_w [Out] one scale per output; the bias stays float. Its
/// schema: weight (I8), weight_scale (F32, >= 0), bias.
template <index_t In, index_t Out, bool HasBias = true>
struct QuantizedLinearParams {
  static_assert(check::int8_reduction<In>());
  static constexpr index_t in_features = In, out_features = Out;
  static constexpr bool has_bias = HasBias;
  /// Elements: the weight's, its scales and the bias.
  static constexpr index_t param_count = In * Out + Out + (HasBias ? Out : 0);
  /// Bytes (flash): the int8 weight with its padding to k-quads, the float scales and bias.
  static constexpr index_t param_bytes = quad_padded(In) * Out + index_t(sizeof(float)) * (Out + (HasBias ? Out : 0));

  const std::int8_t* weight = nullptr;
  CVec<Out> weight_scale;
  CVec<Out> bias;  ///< null when !HasBias

  template <class F>
  void visit(F&& f, const Name& prefix) {
    f(prefix / "weight", ParamRef{nullptr, Out, In, true, kWeightPanel, &weight});
    ParamRef s = param_ref(weight_scale);
    s.scale = true;
    f(prefix / "weight_scale", s);
    if constexpr (HasBias) f(prefix / "bias", param_ref(bias));
  }
  const float* bias_or_null() const { return HasBias ? bias.data : nullptr; }
};

/// The parameters of a linear in number format F.
template <index_t In, index_t Out, bool HasBias, NumberFormat F>
using LinearParamsOf =
    std::conditional_t<is_int8(F), QuantizedLinearParams<In, Out, HasBias>, LinearParams<In, Out, HasBias>>;

/// Bytes of a parameter struct's data: its `param_bytes` where it declares them (a struct holding
/// int8 weights), else 4 per element.
template <class P>
constexpr index_t param_bytes_of() {
  if constexpr (requires { P::param_bytes; })
    return P::param_bytes;
  else
    return P::param_count * index_t(sizeof(float));
}

}  // namespace stf
