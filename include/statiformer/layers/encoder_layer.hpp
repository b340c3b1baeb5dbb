// statiformer — transformer encoder layer, post-norm or pre-norm.
#pragma once

#include <statiformer/layers/attention.hpp>
#include <statiformer/layers/feed_forward.hpp>
#include <statiformer/layers/layer_norm.hpp>
#include <statiformer/layers/node.hpp>
#include <statiformer/layers/options.hpp>

namespace stf {

/// post-norm: x = LN1(x + SelfAttn(x));  y = LN2(x + FF(x))      (nn.TransformerEncoderLayer)
/// pre-norm:  x = x + SelfAttn(LN1(x));  y = x + FF(LN2(x))      (norm_first=True; annotated)
/// Keys at positions >= valid_len are masked (key padding), or any masks PyTorch's layer takes
/// (Masks). y may alias x, so a stack of layers runs in place on one activation buffer.
template <index_t SeqLen, index_t DModel, index_t NHeads, index_t DFf, LayerOptions Opt = LayerOptions{}>
struct EncoderLayer {
  using SelfAttention = MultiHeadAttention<SeqLen, SeqLen, DModel, NHeads, Opt.bias, Opt.format, Opt.int8_attention>;
  using FF = FeedForward<SeqLen, DModel, DFf, Opt.activation, false, Opt.format>;
  using Norm = LayerNorm<DModel, Opt.layer_norm, Opt.layer_norm_eps>;

  static constexpr index_t seq_len = SeqLen, d_model = DModel, n_heads = NHeads, d_ff = DFf;
  static constexpr LayerOptions options = Opt;
  static constexpr const char* name = "EncoderLayer";
  static constexpr index_t scratch_floats = SeqLen * DModel + max_of(SelfAttention::scratch_floats, FF::scratch_floats);

  struct Params {
    using Owner = EncoderLayer;  ///< whose hyperparameters these are (io/hparams.hpp)
    typename SelfAttention::Params self_attn;
    typename FF::Params ff;
    typename Norm::Params norm1, norm2;
    static constexpr index_t param_count =
        SelfAttention::Params::param_count + FF::Params::param_count + 2 * Norm::Params::param_count;
    static constexpr index_t param_bytes = param_bytes_of<typename SelfAttention::Params>() +
                                           param_bytes_of<typename FF::Params>() +
                                           2 * param_bytes_of<typename Norm::Params>();
    template <class F>
    void visit(F&& f, const Name& prefix) {
      self_attn.visit(f, prefix / "self_attn");
      ff.visit(f, prefix / "ff");
      norm1.visit(f, prefix / "norm1");
      norm2.visit(f, prefix / "norm2");
    }
  };
  Params params;

  /// The masks nn.TransformerEncoderLayer takes (all optional; the masked set is their union):
  /// src_mask [SeqLen, SeqLen] (bool, True = masked; or as floats added to the scores:
  /// src_float_mask), src_key_padding_mask [SeqLen] (True = padding, gaps allowed), is_causal (key
  /// j masked for query i when j > i), and trailing padding as a length (keys >= valid_len
  /// masked). A query row left with no key follows the kernels' fully-masked-row convention
  /// (MaskFill::neg_inf: attention output 0; PyTorch: NaN).
  struct Masks {
    const TorchBoolMask<SeqLen, SeqLen>* src_mask = nullptr;
    const KeyPaddingMask<SeqLen>* src_key_padding_mask = nullptr;
    bool is_causal = false;
    index_t valid_len = SeqLen;
    const TorchFloatMask<SeqLen, SeqLen>* src_float_mask = nullptr;  ///< a float src_mask (added)

    constexpr AttentionMask attention() const {
      return TorchMasks<SeqLen, SeqLen>{src_mask, src_key_padding_mask, is_causal, valid_len, src_float_mask}.attention(
          Opt.fill);
    }
  };

  /// y = layer(x, src_mask, src_key_padding_mask), e.g. `layer.forward(x, y, {.src_key_padding_mask
  /// = &pad}, scratch)`. y may alias x.
  template <class X, class Y>
  Status forward(const X& x, Y&& y, const Masks& masks, float* scratch) const {
    static_assert(check::input_seq_len<rows_of<X>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<X>, DModel>());
    static_assert(check::input_seq_len<rows_of<Y>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<Y>, DModel>());
    if (masks.valid_len == 0 || masks.valid_len > SeqLen) return Status::invalid_length;
    run(data_of(x), data_of(y), masks.attention(), scratch);
    return Status::ok;
  }

  template <class X, class Y>
  Status forward(const X& x, Y&& y, index_t valid_len, float* scratch) const {
    static_assert(check::input_seq_len<rows_of<X>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<X>, DModel>());
    static_assert(check::input_seq_len<rows_of<Y>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<Y>, DModel>());
    if (valid_len == 0 || valid_len > SeqLen) return Status::invalid_length;
    run(data_of(x), data_of(y), valid_len, scratch);
    return Status::ok;
  }

  /// Shape-erased body; valid_len already checked. y may alias x.
  // Sequential node
  static constexpr index_t in_cols = DModel, out_cols = DModel;
  static constexpr bool in_place = true;
  Status apply(const float* in, float* out, float* scratch, const RunContext& ctx) const {
    if (ctx.valid_len == 0 || ctx.valid_len > SeqLen || ctx.rows != SeqLen) return Status::invalid_length;
    run(in, out, ctx.valid_len, scratch);
    return Status::ok;
  }

  void run(const float* x, float* y, index_t valid_len, float* scratch) const {
    run(x, y, AttentionMask::padding(valid_len, Opt.fill), scratch);
  }

  /// Shape-erased body under any mask of [SeqLen, SeqLen] (its valid_keys already checked).
  void run(const float* x, float* y, const AttentionMask& mask, float* scratch) const {
    constexpr index_t n = SeqLen * DModel;
    float* t = scratch;
    float* inner = scratch + n;
    const SelfAttention attn{params.self_attn};
    const FF ff{params.ff};
    const Norm norm1{params.norm1}, norm2{params.norm2};
    if constexpr (Opt.norm == NormPlacement::post) {
      attn.run(x, x, mask, inner, t);
      norm1.add_run_into(x, t, SeqLen, y);
      ff.run(y, SeqLen, t, inner);
      norm2.add_run(y, t, SeqLen);
    } else {
      norm1.run(x, SeqLen, t);
      attn.run(t, t, mask, inner, t);
      copy_if_distinct(x, y, n);
      ActiveKernels::add(y, t, n);
      norm2.run(y, SeqLen, t);
      ff.run(t, SeqLen, t, inner);
      ActiveKernels::add(y, t, n);
    }
  }

 private:
  static void copy_if_distinct(const float* x, float* y, index_t n) {
    if (x != y)
      for (index_t i = 0; i < n; ++i) y[i] = x[i];
  }
};

}  // namespace stf
