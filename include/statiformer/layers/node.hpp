// statiformer — what a layer must provide to be a node of a Sequential graph.
#pragma once

#include <concepts>

#include <statiformer/config.hpp>

namespace stf {

/// Runtime inputs every node of one forward call sees.
struct RunContext {
  const int* tokens = nullptr;  ///< for a token source node (an Embedding first)
  index_t valid_len = 0;        ///< valid (unpadded) positions, 1..SeqLen
  index_t rows = 0;             ///< rows of the graph (its SeqLen); set by the graph
};

/// A Sequential node maps rows of `in_cols` floats to rows of `out_cols` floats (in_cols == 0: a
/// token source), declares its scratch, whether its output may alias its input, and its schema.
template <class L>
concept Node = requires(const L& layer, const float* in, float* out, float* scratch, const RunContext& ctx) {
  { L::in_cols } -> std::convertible_to<index_t>;
  { L::out_cols } -> std::convertible_to<index_t>;
  { L::scratch_floats } -> std::convertible_to<index_t>;
  { L::in_place } -> std::convertible_to<bool>;
  { L::name } -> std::convertible_to<const char*>;
  { L::Params::param_count } -> std::convertible_to<index_t>;
  { layer.apply(in, out, scratch, ctx) } -> std::same_as<Status>;
};

/// A string usable as a template argument: `Named<"encoder", EncoderStack<...>>`.
template <index_t N>
struct fixed_string {
  char text[N]{};
  constexpr fixed_string(const char (&s)[N]) {  // NOLINT: implicit on purpose
    for (index_t i = 0; i < N; ++i) text[i] = s[i];
  }
};

/// Gives a node the schema prefix of its parameters ("encoder" → "encoder.layers.0...").
template <fixed_string Prefix, Node L>
struct Named : L {
  static constexpr const char* prefix = Prefix.text;
};

}  // namespace stf
