// statiformer — parameter schema: every layer lists its parameters by name and shape, in PyTorch
// state_dict order, through `visit`. Binding from an exported table, loading and printing the schema
// are all built on it (io/).
#pragma once

#include <cstring>

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
struct ParamRef {
  const float** data;
  index_t rows;
  index_t cols;  ///< 0 for a vector
  bool transposed = false;
  index_t panel = 0;  ///< columns per panel of the stored matrix; 0: plain row-major
  index_t rank() const { return cols ? 2 : 1; }
  index_t size() const { return cols ? rows * cols : rows; }
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

}  // namespace stf
