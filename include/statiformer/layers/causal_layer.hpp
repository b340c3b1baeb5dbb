// statiformer — causal self-attention layer without cross-attention (the GPT block), post- or
// pre-norm, with prefill and incremental steps over a fixed-capacity key/value cache; and a stack
// of them.
#pragma once

#include <statiformer/layers/kv_cache.hpp>
#include <statiformer/layers/stack.hpp>

namespace stf {

/// What nn.TransformerEncoderLayer computes run with a causal mask (key j masked for query i > j):
/// post-norm: x = LN1(x + SelfAttn(x)); y = LN2(x + FF(x))
/// pre-norm:  x = x + SelfAttn(LN1(x)); y = x + FF(LN2(x))        (norm_first=True)
/// SeqLen is the capacity (positions 0 .. SeqLen-1). Its parameters are EncoderLayer's (same names:
/// self_attn.{q,k,v,o}, ff.linear{1,2}, norm{1,2}); its hyperparameters add `causal = true`.
/// `prefill` runs positions [0, n) at once, `step` one position; both append the positions' keys
/// and values to the cache, and prefill then steps give the same bits as steps alone.
/// Opt.format: the number format of its six linears (NumberFormat); Opt.int8_attention (w8a8): the
/// int8 attention over an int8 K/V cache (Int8AttentionCache), else the attention and cache are float.
template <index_t SeqLen, index_t DModel, index_t NHeads, index_t DFf, LayerOptions Opt = LayerOptions{}>
struct CausalLayer {
  using SelfAttention = MultiHeadAttention<SeqLen, SeqLen, DModel, NHeads, Opt.bias, Opt.format, Opt.int8_attention>;
  using FF = FeedForward<SeqLen, DModel, DFf, Opt.activation, false, Opt.format>;
  using Norm = LayerNorm<DModel, Opt.layer_norm, Opt.layer_norm_eps>;
  /// EncoderLayer's parameters (the same names and shapes), owned by CausalLayer: its
  /// hyperparameters (io/hparams.hpp) say `causal`, so an encoder layer's file does not bind silently.
  struct Params : EncoderLayer<SeqLen, DModel, NHeads, DFf, Opt>::Params {
    using Owner = CausalLayer;  ///< whose hyperparameters these are (io/hparams.hpp)
  };
  using Cache = SelfAttentionCacheOf<SeqLen, DModel, NHeads, Opt.int8_attention>;

  static constexpr index_t seq_len = SeqLen, d_model = DModel, n_heads = NHeads, d_ff = DFf,
                           head_dim = SelfAttention::head_dim;
  static constexpr LayerOptions options = Opt;
  static constexpr const char* name = "CausalLayer";
  /// Bytes of one layer's cache (sizeof(Cache); float: Kᵀ and V, 2 · SeqLen · DModel floats; int8:
  /// K and V rows in a quarter of those bytes, and one float scale per head and position for each).
  static constexpr index_t cache_bytes = sizeof(Cache);
  /// The float cache's elements (2 · SeqLen · DModel); the int8 cache's bytes as whole floats.
  static constexpr index_t cache_floats =
      Opt.int8_attention ? (cache_bytes + sizeof(float) - 1) / sizeof(float) : 2 * SeqLen * DModel;

  /// Scratch of `run` over n rows: the sublayer output [n, DModel], then the attention's queries
  /// and streaming scratch, or the FF's.
  static constexpr index_t scratch_floats_for(index_t n) {
    return n * DModel +
           max_of(detail::cached_attention_floats<Opt.format, Opt.int8_attention>(n, SeqLen, DModel, head_dim),
                  FF::scratch_floats);
  }
  static constexpr index_t scratch_floats = scratch_floats_for(SeqLen);  ///< prefill of up to SeqLen rows
  static constexpr index_t step_scratch_floats = scratch_floats_for(1);

  Params params;

  /// Positions [0, n) from x [n, DModel] into y (may alias x), filling the cache's first n
  /// positions. Fails (writing nothing) unless 1 <= n <= SeqLen.
  Status prefill(const float* x, index_t n, Cache& cache, float* y, float* scratch) const {
    if (n == 0 || n > SeqLen) return Status::invalid_length;
    run(x, 0, n, cache, y, scratch);
    return Status::ok;
  }
  /// Position pos (row x → row y, y may alias x), over the cached keys/values of [0, pos).
  /// Fails (writing nothing) past the capacity.
  Status step(const float* x, index_t pos, Cache& cache, float* y, float* scratch) const {
    if (pos >= SeqLen) return Status::capacity_exceeded;
    run(x, pos, 1, cache, y, scratch);
    return Status::ok;
  }

  /// Rows x [n, DModel] at positions [first, first + n) → y (may alias x); the cache holds the
  /// positions before first. first + n <= SeqLen and n >= 1 are the caller's contract. Scratch:
  /// scratch_floats_for(n).
  void run(const float* x, index_t first, index_t n, Cache& cache, float* y, float* scratch) const {
    const index_t len = n * DModel;
    float* t = scratch;
    float* inner = scratch + len;
    const FF ff{params.ff};
    const Norm norm1{params.norm1}, norm2{params.norm2};
    auto attend = [&](const float* in, float* out) {
      detail::cached_self_attention<SeqLen, DModel, NHeads, Opt.format>(params.self_attn, in, first, n, cache, Opt.fill,
                                                                        inner, out);
    };
    if constexpr (Opt.norm == NormPlacement::post) {
      attend(x, t);
      norm1.add_run_into(x, t, n, y);
      ff.run(y, n, t, inner);
      norm2.add_run(y, t, n);
    } else {
      if (x != y)
        for (index_t i = 0; i < len; ++i) y[i] = x[i];
      norm1.run(y, n, t);
      attend(t, t);
      ActiveKernels::add(y, t, len);
      norm2.run(y, n, t);
      ff.run(t, n, t, inner);
      ActiveKernels::add(y, t, len);
    }
  }
};

/// NLayers causal layers (each with its own weights and cache) and an optional final norm:
/// nn.TransformerEncoder(layer, N, norm) run with a causal mask. Parameters: `layers.<i>.*`, `norm.*`.
template <class LayerT, index_t NLayers, bool FinalNorm = false>
struct CausalStack {
  using Layer = LayerT;
  static_assert(check::stack_layers<NLayers>());
  using Norm = LayerNorm<Layer::d_model, Layer::options.layer_norm, Layer::options.layer_norm_eps>;
  using Cache = typename Layer::Cache;
  static constexpr index_t seq_len = Layer::seq_len, d_model = Layer::d_model, n_layers = NLayers;
  static constexpr bool final_norm = FinalNorm;
  static constexpr const char* name = "CausalStack";
  static constexpr index_t scratch_floats = Layer::scratch_floats;
  static constexpr index_t step_scratch_floats = Layer::step_scratch_floats;

  using Params = StackParams<Layer, NLayers, FinalNorm>;
  Params params;

  /// Rows [first, first + n) through every layer (caches[i] is layer i's), then the final norm.
  /// y may alias x. Contract as CausalLayer::run.
  void run(const float* x, index_t first, index_t n, Cache* caches, float* y, float* scratch) const {
    for (index_t i = 0; i < NLayers; ++i) Layer{params.layers[i]}.run(i == 0 ? x : y, first, n, caches[i], y, scratch);
    if constexpr (FinalNorm) Norm{params.norm}.run(y, n, y);
  }
};

}  // namespace stf
