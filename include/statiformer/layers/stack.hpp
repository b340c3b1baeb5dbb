// statiformer — stacks of NLayers identical layer types (each with its own weights), with an
// optional final LayerNorm: nn.TransformerEncoder / nn.TransformerDecoder, the annotated
// transformer's Encoder / Decoder.
#pragma once

#include <statiformer/layers/decoder_layer.hpp>
#include <statiformer/layers/encoder_layer.hpp>
#include <statiformer/profiler.hpp>

namespace stf {

/// Parameters of a stack: `layers.<i>.*` for each layer, then `norm.*` with a final norm.
template <class Layer, index_t NLayers, bool FinalNorm>
struct StackParams {
  using Norm = LayerNorm<Layer::d_model, Layer::options.layer_norm, Layer::options.layer_norm_eps>;
  typename Layer::Params layers[NLayers];
  typename Norm::Params norm;  ///< unused unless FinalNorm
  static constexpr index_t param_count =
      NLayers * Layer::Params::param_count + (FinalNorm ? Norm::Params::param_count : 0);
  static constexpr index_t param_bytes =
      NLayers * param_bytes_of<typename Layer::Params>() + (FinalNorm ? param_bytes_of<typename Norm::Params>() : 0);
  template <class F>
  void visit(F&& f, const Name& prefix) {
    for (index_t i = 0; i < NLayers; ++i) layers[i].visit(f, prefix / "layers" / i);
    if constexpr (FinalNorm) norm.visit(f, prefix / "norm");
  }
};

/// N encoder layers run in place on one activation buffer, then the optional final norm.
template <class LayerT, index_t NLayers, bool FinalNorm = false>
struct EncoderStack {
  using Layer = LayerT;
  static_assert(check::stack_layers<NLayers>());
  using Norm = LayerNorm<Layer::d_model, Layer::options.layer_norm, Layer::options.layer_norm_eps>;
  static constexpr index_t seq_len = Layer::seq_len, d_model = Layer::d_model, n_layers = NLayers;
  static constexpr bool final_norm = FinalNorm;
  static constexpr const char* name = "EncoderStack";
  static constexpr index_t scratch_floats = Layer::scratch_floats;

  using Params = StackParams<Layer, NLayers, FinalNorm>;
  Params params;

  template <class X, class Y>
  Status forward(const X& x, Y&& y, index_t valid_len, float* scratch) const {
    static_assert(check::input_seq_len<rows_of<X>, seq_len>());
    static_assert(check::input_dmodel<cols_of<X>, d_model>());
    static_assert(check::input_seq_len<rows_of<Y>, seq_len>());
    static_assert(check::input_dmodel<cols_of<Y>, d_model>());
    if (valid_len == 0 || valid_len > seq_len) return Status::invalid_length;
    run(data_of(x), data_of(y), valid_len, scratch);
    return Status::ok;
  }
  /// The masks nn.TransformerEncoder takes (mask, src_key_padding_mask, is_causal; see
  /// EncoderLayer::Masks), the same for every layer.
  using Masks = typename Layer::Masks;
  template <class X, class Y>
  Status forward(const X& x, Y&& y, const Masks& masks, float* scratch) const {
    static_assert(check::input_seq_len<rows_of<X>, seq_len>());
    static_assert(check::input_dmodel<cols_of<X>, d_model>());
    static_assert(check::input_seq_len<rows_of<Y>, seq_len>());
    static_assert(check::input_dmodel<cols_of<Y>, d_model>());
    if (masks.valid_len == 0 || masks.valid_len > seq_len) return Status::invalid_length;
    run(data_of(x), data_of(y), masks.attention(), scratch);
    return Status::ok;
  }
  // Sequential node
  static constexpr index_t in_cols = d_model, out_cols = d_model;
  static constexpr bool in_place = true;
  Status apply(const float* in, float* out, float* scratch, const RunContext& ctx) const {
    if (ctx.valid_len == 0 || ctx.valid_len > seq_len || ctx.rows != seq_len) return Status::invalid_length;
    run(in, out, ctx.valid_len, scratch);
    return Status::ok;
  }

  /// The Sequential node, profiled: one row per layer (`path.layers.<i>`) and one for the final
  /// norm (`path.norm`), the names of their parameters.
  template <class Prof>
  Status apply(const float* in, float* out, float* scratch, const RunContext& ctx, Prof& prof,
               const LayerPath& path) const {
    if (ctx.valid_len == 0 || ctx.valid_len > seq_len || ctx.rows != seq_len) return Status::invalid_length;
    run(in, out, ctx.valid_len, scratch, prof, path);
    return Status::ok;
  }

  template <class Prof = NullProfiler>
  void run(const float* x, float* y, index_t valid_len, float* scratch, Prof&& prof = Prof{},
           const LayerPath& path = {}) const {
    run(x, y, AttentionMask::padding(valid_len, Layer::options.fill), scratch, prof, path);
  }
  template <class Prof = NullProfiler>
  void run(const float* x, float* y, const AttentionMask& mask, float* scratch, Prof&& prof = Prof{},
           const LayerPath& path = {}) const {
    for (index_t i = 0; i < NLayers; ++i) {
      const LayerPath layer = path / "layers" / i;  // built outside the timed span
      prof.begin(layer);
      Layer{params.layers[i]}.run(i == 0 ? x : y, y, mask, scratch);
      prof.end(layer);
    }
    if constexpr (FinalNorm) {
      const LayerPath norm = path / "norm";
      prof.begin(norm);
      Norm{params.norm}.run(y, seq_len, y);
      prof.end(norm);
    }
  }
};

/// N decoder layers with an optional final norm; whole-sequence forward and incremental steps.
template <class LayerT, index_t NLayers, bool FinalNorm = false>
struct DecoderStack {
  using Layer = LayerT;
  static_assert(check::stack_layers<NLayers>());
  using Norm = LayerNorm<Layer::d_model, Layer::options.layer_norm, Layer::options.layer_norm_eps>;
  using Cache = typename Layer::Cache;
  static constexpr index_t seq_len = Layer::seq_len, mem_len = Layer::mem_len, d_model = Layer::d_model,
                           n_layers = NLayers;
  static constexpr bool final_norm = FinalNorm;
  static constexpr const char* name = "DecoderStack";
  static constexpr index_t scratch_floats = Layer::scratch_floats;
  static constexpr index_t step_scratch_floats = Layer::step_scratch_floats;
  static constexpr index_t memory_scratch_floats = Layer::memory_scratch_floats;

  using Params = StackParams<Layer, NLayers, FinalNorm>;
  Params params;

  template <class X, class M, class Y>
  Status forward(const X& x, const M& memory, Y&& y, index_t mem_valid_len, float* scratch) const {
    static_assert(check::input_seq_len<rows_of<X>, seq_len>());
    static_assert(check::input_dmodel<cols_of<X>, d_model>());
    static_assert(check::memory_len<rows_of<M>, mem_len>());
    static_assert(check::memory_dmodel<cols_of<M>, d_model>());
    static_assert(check::input_seq_len<rows_of<Y>, seq_len>());
    static_assert(check::input_dmodel<cols_of<Y>, d_model>());
    if (mem_valid_len == 0 || mem_valid_len > mem_len) return Status::invalid_length;
    run(data_of(x), data_of(memory), data_of(y), mem_valid_len, scratch);
    return Status::ok;
  }
  void run(const float* x, const float* memory, float* y, index_t mem_valid_len, float* scratch) const {
    for (index_t i = 0; i < NLayers; ++i)
      Layer{params.layers[i]}.run(i == 0 ? x : y, memory, y, mem_valid_len, scratch);
    if constexpr (FinalNorm) Norm{params.norm}.run(y, seq_len, y);
  }
  /// The masks nn.TransformerDecoder takes (tgt_mask, memory_mask, tgt_key_padding_mask,
  /// memory_key_padding_mask; see DecoderLayer::Masks), the same for every layer.
  using Masks = typename Layer::Masks;
  template <class X, class M, class Y>
  Status forward(const X& x, const M& memory, Y&& y, const Masks& masks, float* scratch) const {
    static_assert(check::input_seq_len<rows_of<X>, seq_len>());
    static_assert(check::input_dmodel<cols_of<X>, d_model>());
    static_assert(check::memory_len<rows_of<M>, mem_len>());
    static_assert(check::memory_dmodel<cols_of<M>, d_model>());
    static_assert(check::input_seq_len<rows_of<Y>, seq_len>());
    static_assert(check::input_dmodel<cols_of<Y>, d_model>());
    if (masks.mem_valid_len == 0 || masks.mem_valid_len > mem_len) return Status::invalid_length;
    const AttentionMask self_mask = masks.self_attention(), cross_mask = masks.cross_attention();
    for (index_t i = 0; i < NLayers; ++i)
      Layer{params.layers[i]}.run(i == 0 ? data_of(x) : data_of(y), data_of(memory), data_of(y), self_mask, cross_mask,
                                  scratch);
    if constexpr (FinalNorm) Norm{params.norm}.run(data_of(y), seq_len, data_of(y));
    return Status::ok;
  }

  /// Every layer's cross-attention keys and values of the memory. scratch: memory_scratch_floats
  /// (none in f32: may be null there).
  void prepare_memory(const float* memory, Cache* caches, float* scratch = nullptr) const {
    for (index_t i = 0; i < NLayers; ++i) Layer{params.layers[i]}.prepare_memory(memory, caches[i], scratch);
  }
  /// One target row at position pos through every layer (and the final norm). y may alias x. The
  /// masks as DecoderLayer::step's (memory_mask, memory_float_mask: row pos is read).
  void step(const float* x, index_t pos, index_t mem_valid_len, Cache* caches, float* y, float* scratch,
            const KeyPaddingMask<mem_len>* memory_key_padding_mask = nullptr,
            const TorchBoolMask<seq_len, mem_len>* memory_mask = nullptr,
            const TorchFloatMask<seq_len, mem_len>* memory_float_mask = nullptr) const {
    for (index_t i = 0; i < NLayers; ++i)
      Layer{params.layers[i]}.step(i == 0 ? x : y, pos, mem_valid_len, caches[i], y, scratch, memory_key_padding_mask,
                                   memory_mask, memory_float_mask);
    if constexpr (FinalNorm) Norm{params.norm}.run(y, 1, y);
  }
};

}  // namespace stf
