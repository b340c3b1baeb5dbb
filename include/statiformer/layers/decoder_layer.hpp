// statiformer — transformer decoder layer (causal self-attention, cross-attention, FF), post- or
// pre-norm, with a fixed-capacity key/value cache for incremental decoding.
#pragma once

#include <cstdint>
#include <type_traits>

#include <statiformer/layers/attention.hpp>
#include <statiformer/layers/feed_forward.hpp>
#include <statiformer/layers/kv_cache.hpp>
#include <statiformer/layers/layer_norm.hpp>
#include <statiformer/layers/options.hpp>

namespace stf {

/// post-norm: x = LN1(x + SelfAttn(x)); x = LN2(x + CrossAttn(x, m)); y = LN3(x + FF(x))
/// pre-norm:  x = x + SelfAttn(LN1(x)); x = x + CrossAttn(LN2(x), m); y = x + FF(LN3(x))
/// SeqLen is the target capacity, MemLen the memory (encoder output) length. Opt.format: the number
/// format of its ten linears (NumberFormat); Opt.int8_attention (w8a8): both attentions in int8, over
/// int8 caches of the target's and the memory's keys and values (Int8AttentionCache); else float.
template <index_t SeqLen, index_t MemLen, index_t DModel, index_t NHeads, index_t DFf,
          LayerOptions Opt = LayerOptions{}>
struct DecoderLayer {
  using SelfAttention = MultiHeadAttention<SeqLen, SeqLen, DModel, NHeads, Opt.bias, Opt.format, Opt.int8_attention>;
  using CrossAttention = MultiHeadAttention<SeqLen, MemLen, DModel, NHeads, Opt.bias, Opt.format, Opt.int8_attention>;
  using FF = FeedForward<SeqLen, DModel, DFf, Opt.activation, false, Opt.format>;
  using Norm = LayerNorm<DModel, Opt.layer_norm, Opt.layer_norm_eps>;

  static constexpr index_t seq_len = SeqLen, mem_len = MemLen, d_model = DModel, n_heads = NHeads, d_ff = DFf,
                           head_dim = SelfAttention::head_dim;
  static constexpr LayerOptions options = Opt;
  static constexpr const char* name = "DecoderLayer";
  static constexpr index_t scratch_floats =
      SeqLen * DModel +
      max_of(max_of(SelfAttention::scratch_floats, CrossAttention::scratch_floats), FF::scratch_floats);
  /// Scratch of one incremental step: a residual row, a query/context row, one row's streaming
  /// attention scratch (int8 attention: the query's scales and the w8a8 attention's scratch), then
  /// FF's or the int8 projections' of one row (and the int8 query row).
  static constexpr index_t step_attention_floats = Opt.int8_attention
                                                       ? NHeads + attention_w8a8_scratch_floats()
                                                       : max_of(attention_scratch_floats(1, SeqLen, DModel / NHeads),
                                                                attention_scratch_floats(1, MemLen, DModel / NHeads));
  static constexpr index_t step_scratch_floats =
      2 * DModel + step_attention_floats +
      max_of(FF::scratch_floats,
             linear_scratch_floats<Opt.format>(1, DModel) + (Opt.int8_attention ? (DModel + 3) / 4 : 0));
  /// Rows of the memory prepare_memory projects at a time in w8a8 (K and V of each group from one
  /// quantization of its rows): a quantized group of the w8a8 linears (kQuantizedRowGroup).
  static constexpr index_t memory_group = MemLen < kQuantizedRowGroup ? MemLen : kQuantizedRowGroup;
  /// Scratch of prepare_memory: the int8 projections' (none in f32), after, in w8a8, a group's key
  /// rows (and value rows with the int8 attention).
  static constexpr index_t memory_scratch_floats = Opt.format == NumberFormat::w8a8
                                                       ? (Opt.int8_attention ? 2 : 1) * memory_group * DModel +
                                                             linear_scratch_floats<Opt.format>(memory_group, DModel)
                                                       : linear_scratch_floats<Opt.format>(MemLen, DModel);

  struct Params {
    using Owner = DecoderLayer;  ///< whose hyperparameters these are (io/hparams.hpp)
    typename SelfAttention::Params self_attn;
    typename CrossAttention::Params cross_attn;
    typename FF::Params ff;
    typename Norm::Params norm1, norm2, norm3;
    static constexpr index_t param_count = SelfAttention::Params::param_count + CrossAttention::Params::param_count +
                                           FF::Params::param_count + 3 * Norm::Params::param_count;
    static constexpr index_t param_bytes =
        param_bytes_of<typename SelfAttention::Params>() + param_bytes_of<typename CrossAttention::Params>() +
        param_bytes_of<typename FF::Params>() + 3 * param_bytes_of<typename Norm::Params>();
    template <class F>
    void visit(F&& f, const Name& prefix) {
      self_attn.visit(f, prefix / "self_attn");
      cross_attn.visit(f, prefix / "cross_attn");
      ff.visit(f, prefix / "ff");
      norm1.visit(f, prefix / "norm1");
      norm2.visit(f, prefix / "norm2");
      norm3.visit(f, prefix / "norm3");
    }
  };
  Params params;

  /// Key/value cache of one layer: self-attention keys/values of the positions decoded so far,
  /// and the cross-attention keys/values of the memory, computed once per memory. Keys are kept
  /// transposed (Kᵀ, [DModel, capacity]), as the attention kernels read them.
  struct FloatCache {
    SelfAttentionCache<SeqLen, DModel> self;
    Tensor<DModel, MemLen> cross_kt;
    Tensor<MemLen, DModel> cross_v;
  };
  /// With the int8 attention: both in int8, one scale per head and key (Int8AttentionCache).
  struct Int8Cache {
    Int8AttentionCache<SeqLen, DModel, NHeads> self;
    Int8AttentionCache<MemLen, DModel, NHeads> cross;
  };
  using Cache = std::conditional_t<Opt.int8_attention, Int8Cache, FloatCache>;
  static constexpr index_t cache_bytes = sizeof(Cache);
  /// The float cache's elements; the int8 cache's bytes as whole floats.
  static constexpr index_t cache_floats = Opt.int8_attention ? (cache_bytes + sizeof(float) - 1) / sizeof(float)
                                                             : 2 * SeqLen * DModel + 2 * MemLen * DModel;

  /// The masks nn.TransformerDecoderLayer takes (all optional; each attention's masked set is the
  /// union of its masks): tgt_mask [SeqLen, SeqLen] and memory_mask [SeqLen, MemLen] (bool, True
  /// = masked; as floats added to the scores: tgt_float_mask, memory_float_mask),
  /// tgt_key_padding_mask [SeqLen] and memory_key_padding_mask [MemLen] (True = padding, gaps
  /// allowed); tgt_is_causal (key j masked for query i when j > i) is on by default, as the
  /// decoder is causal unless told otherwise (PyTorch's layer called without a tgt_mask is not:
  /// pass tgt_is_causal = false then); trailing memory padding as a length. A query row left with
  /// no key follows the kernels' fully-masked-row convention (MaskFill::neg_inf: output 0).
  struct Masks {
    const TorchBoolMask<SeqLen, SeqLen>* tgt_mask = nullptr;
    const TorchBoolMask<SeqLen, MemLen>* memory_mask = nullptr;
    const KeyPaddingMask<SeqLen>* tgt_key_padding_mask = nullptr;
    const KeyPaddingMask<MemLen>* memory_key_padding_mask = nullptr;
    bool tgt_is_causal = true;
    index_t mem_valid_len = MemLen;
    const TorchFloatMask<SeqLen, SeqLen>* tgt_float_mask = nullptr;     ///< a float tgt_mask (added)
    const TorchFloatMask<SeqLen, MemLen>* memory_float_mask = nullptr;  ///< a float memory_mask

    constexpr AttentionMask self_attention() const {
      return TorchMasks<SeqLen, SeqLen>{tgt_mask, tgt_key_padding_mask, tgt_is_causal, SeqLen, tgt_float_mask}
          .attention(Opt.fill);
    }
    constexpr AttentionMask cross_attention() const {
      return TorchMasks<SeqLen, MemLen>{memory_mask, memory_key_padding_mask, false, mem_valid_len, memory_float_mask}
          .attention(Opt.fill);
    }
  };

  /// y = layer(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask),
  /// e.g. `layer.forward(x, m, y, {.memory_key_padding_mask = &pad}, scratch)`. y may alias x.
  template <class X, class M, class Y>
  Status forward(const X& x, const M& memory, Y&& y, const Masks& masks, float* scratch) const {
    static_assert(check::input_seq_len<rows_of<X>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<X>, DModel>());
    static_assert(check::memory_len<rows_of<M>, MemLen>());
    static_assert(check::memory_dmodel<cols_of<M>, DModel>());
    static_assert(check::input_seq_len<rows_of<Y>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<Y>, DModel>());
    if (masks.mem_valid_len == 0 || masks.mem_valid_len > MemLen) return Status::invalid_length;
    run(data_of(x), data_of(memory), data_of(y), masks.self_attention(), masks.cross_attention(), scratch);
    return Status::ok;
  }

  /// Whole-sequence forward (teacher forcing): causal self-attention over the SeqLen target rows,
  /// cross-attention to memory rows < mem_valid_len. y may alias x.
  template <class X, class M, class Y>
  Status forward(const X& x, const M& memory, Y&& y, index_t mem_valid_len, float* scratch) const {
    static_assert(check::input_seq_len<rows_of<X>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<X>, DModel>());
    static_assert(check::memory_len<rows_of<M>, MemLen>());
    static_assert(check::memory_dmodel<cols_of<M>, DModel>());
    static_assert(check::input_seq_len<rows_of<Y>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<Y>, DModel>());
    if (mem_valid_len == 0 || mem_valid_len > MemLen) return Status::invalid_length;
    run(data_of(x), data_of(memory), data_of(y), mem_valid_len, scratch);
    return Status::ok;
  }

  void run(const float* x, const float* memory, float* y, index_t mem_valid_len, float* scratch) const {
    run(x, memory, y, AttentionMask::causal_mask(SeqLen, Opt.fill), AttentionMask::padding(mem_valid_len, Opt.fill),
        scratch);
  }

  /// Shape-erased body under any self-attention mask [SeqLen, SeqLen] and cross-attention mask
  /// [SeqLen, MemLen] (valid_keys already checked). y may alias x.
  void run(const float* x, const float* memory, float* y, const AttentionMask& self_mask,
           const AttentionMask& cross_mask, float* scratch) const {
    constexpr index_t n = SeqLen * DModel;
    float* t = scratch;
    float* inner = scratch + n;
    const SelfAttention self_attn{params.self_attn};
    const CrossAttention cross_attn{params.cross_attn};
    const FF ff{params.ff};
    const Norm norm1{params.norm1}, norm2{params.norm2}, norm3{params.norm3};
    if constexpr (Opt.norm == NormPlacement::post) {
      self_attn.run(x, x, self_mask, inner, t);
      norm1.add_run_into(x, t, SeqLen, y);
      cross_attn.run(y, memory, cross_mask, inner, t);
      norm2.add_run(y, t, SeqLen);
      ff.run(y, SeqLen, t, inner);
      norm3.add_run(y, t, SeqLen);
    } else {
      if (x != y)
        for (index_t i = 0; i < n; ++i) y[i] = x[i];
      norm1.run(y, SeqLen, t);
      self_attn.run(t, t, self_mask, inner, t);
      ActiveKernels::add(y, t, n);
      norm2.run(y, SeqLen, t);
      cross_attn.run(t, memory, cross_mask, inner, t);
      ActiveKernels::add(y, t, n);
      norm3.run(y, SeqLen, t);
      ff.run(t, SeqLen, t, inner);
      ActiveKernels::add(y, t, n);
    }
  }

  /// Computes the cross-attention keys and values of a memory [MemLen, DModel] into the cache.
  /// scratch: memory_scratch_floats (none in f32: may be null there).
  void prepare_memory(const float* memory, Cache& cache, float* scratch = nullptr) const {
    const auto& ca = params.cross_attn;
    if constexpr (Opt.format == NumberFormat::w8a8) {
      // per group of rows, K and V in one call (their input quantized once): K's rows through the
      // scratch into Kᵀ (with the int8 attention, both quantized per head into the cache)
      constexpr index_t g = memory_group;
      float* kr = scratch;
      float* vr = kr + g * DModel;  // (the int8 attention's)
      float* lin = vr + (Opt.int8_attention ? g * DModel : 0);
      for (index_t r0 = 0; r0 < MemLen; r0 += g) {
        const index_t n = MemLen - r0 < g ? MemLen - r0 : g;
        const float* x = memory + r0 * DModel;
        if constexpr (Opt.int8_attention) {
          linear_rows_shared<Opt.format>(x, n, lin, ca.k, kr, ca.v, vr);
          detail::quantize_heads<DModel, NHeads>(kr, n, cache.cross.k + r0 * DModel, cache.cross.k_scale + r0, MemLen);
          detail::quantize_heads<DModel, NHeads>(vr, n, cache.cross.v + r0 * DModel, cache.cross.v_scale + r0, MemLen);
        } else {
          linear_rows_shared<Opt.format>(x, n, lin, ca.k, kr, ca.v, cache.cross_v.data + r0 * DModel);
          detail::transpose(kr, n, DModel, DModel, cache.cross_kt.data + r0, MemLen);
        }
      }
    } else {  // (the int8 attention is w8a8's only) K goes through cross_v (free until V) into Kᵀ
      linear_rows<Opt.format>(ca.k, memory, MemLen, cache.cross_v.data, scratch);
      detail::transpose(cache.cross_v.data, MemLen, DModel, DModel, cache.cross_kt.data, MemLen);
      linear_rows<Opt.format>(ca.v, memory, MemLen, cache.cross_v.data, scratch);
    }
  }

  /// One incremental step: row x (the target at position pos) → row y, appending this position's
  /// self-attention key/value to the cache. Costs O(pos) attention, and gives the same bits as row
  /// pos of `run` over the whole prefix. y may alias x. pos < SeqLen is the caller's contract.
  /// memory_key_padding_mask: optional [MemLen] (True = padding), as Masks'; memory_mask: optional
  /// [SeqLen, MemLen] (True = masked), of which this step reads row pos; memory_float_mask:
  /// optional [SeqLen, MemLen] added to the scores (-inf masks), row pos read likewise (the
  /// self-attention stays causal over the cache: a target key-padding mask has no meaning for
  /// positions not yet decoded).
  void step(const float* x, index_t pos, index_t mem_valid_len, Cache& cache, float* y, float* scratch,
            const KeyPaddingMask<MemLen>* memory_key_padding_mask = nullptr,
            const TorchBoolMask<SeqLen, MemLen>* memory_mask = nullptr,
            const TorchFloatMask<SeqLen, MemLen>* memory_float_mask = nullptr) const {
    float* t = scratch;                        // [DModel] sublayer output
    float* q = t + DModel;                     // [DModel] query, then context
    float* p = q + DModel;                     // streaming attention scratch
    float* inner = p + step_attention_floats;  // FF's scratch, or the int8 projections'

    const FF ff{params.ff};
    const Norm norm1{params.norm1}, norm2{params.norm2}, norm3{params.norm3};

    auto self_attend = [&](const float* in, float* out) {
      detail::cached_self_attention<SeqLen, DModel, NHeads, Opt.format>(params.self_attn, in, pos, 1, cache.self,
                                                                        Opt.fill, q, out);
    };
    const ref::MaskArrays memory_arrays{nullptr, memory_mask ? memory_mask->masked + pos * MemLen : nullptr,
                                        memory_key_padding_mask ? memory_key_padding_mask->pad : nullptr,
                                        memory_float_mask ? memory_float_mask->add + pos * MemLen : nullptr};
    const ref::RowMask memory_row{
        mem_valid_len, memory_mask || memory_key_padding_mask || memory_float_mask ? &memory_arrays : nullptr};
    auto cross_attend = [&](const float* in, float* out) {
      const auto& ca = params.cross_attn;
      linear_rows<Opt.format>(ca.q, in, 1, q, inner);
      if constexpr (Opt.int8_attention) {  // the query quantized per head, the w8a8 attention
        float* s_q = p;                    // [NHeads]
        float* p8 = s_q + NHeads;          // the w8a8 attention's scratch
        auto* q8 = reinterpret_cast<std::int8_t*>(inner + linear_scratch_floats<Opt.format>(1, DModel));
        detail::quantize_heads<DModel, NHeads>(q, 1, q8, s_q, 1);
        const auto& c = cache.cross;
        for (index_t h = 0; h < NHeads; ++h) {
          const index_t off = h * head_dim;
          ActiveKernels::attention_rows_w8a8(q8 + off, DModel, s_q + h, 1, c.k + off, DModel, c.k_scale + h * MemLen,
                                             c.v + off, DModel, c.v_scale + h * MemLen, head_dim, MemLen, &memory_row,
                                             Opt.fill, p8, q + off, DModel);
        }
      } else {  // every head in one call
        ActiveKernels::attention_heads(q, NHeads, cache.cross_kt.data, MemLen, cache.cross_v.data, DModel, head_dim,
                                       MemLen, memory_row, Opt.fill, p, q);
      }
      linear_rows<Opt.format>(ca.o, q, 1, out, inner);
    };

    if constexpr (Opt.norm == NormPlacement::post) {
      self_attend(x, t);
      norm1.add_run_into(x, t, 1, y);
      cross_attend(y, t);
      norm2.add_run(y, t, 1);
      ff.run(y, 1, t, inner);
      norm3.add_run(y, t, 1);
    } else {
      if (x != y)
        for (index_t i = 0; i < DModel; ++i) y[i] = x[i];
      norm1.run(y, 1, t);
      self_attend(t, t);
      ActiveKernels::add(y, t, DModel);
      norm2.run(y, 1, t);
      cross_attend(t, t);
      ActiveKernels::add(y, t, DModel);
      norm3.run(y, 1, t);
      ff.run(t, 1, t, inner);
      ActiveKernels::add(y, t, DModel);
    }
  }
};

}  // namespace stf
