// statiformer — the hyperparameters of a model type: every compile-time value that changes the
// arithmetic but not the parameter shapes (heads, norm placement, activation, LayerNorm kind and
// eps, mask fill, lengths), and those that the shapes also show (d_model, dim_feedforward,
// vocabulary sizes, layer counts), as text, derived from the type at compile time.
//
// Each is keyed like a parameter, by its module's path in `visit` order, then the field:
//   encoder.num_layers = 2, encoder.layers.0.nhead = 4, encoder.layers.0.norm_first = false,
//   encoder.layers.0.activation = relu, encoder.layers.0.layer_norm_eps = 1e-05, ...
// so a stack and a Sequential of the same Named layers give the same keys. The schema JSON
// ("hparams"), the safetensors `__metadata__` and the generated weight table carry them; the
// loader and bind_table compare them with the model's (a value's text must be equal).
//
// Where they come from: the layer types (layers/), the stacks' StackParams, Sequential,
// EncoderDecoder and DecoderOnly. A parameter struct that belongs to a module names it
// `using Owner = ...`; a struct the library does not know has no hyperparameters (nothing
// written, nothing checked).
//
// A CausalLayer has an EncoderLayer's keys plus `causal = true`, so weights of causal layers and of
// encoder layers (the same names and shapes) do not bind into each other: the loader rejects a file
// without the model's `causal` key, and a file's `causal` key the model does not have; bind_table
// rejects both. `int8_attention = true` (a w8a8 layer whose Q·Kᵀ and P·V are int8, written only
// where on) is the other key of a file the loader does not ignore when the model lacks it.
//
// Values: integers in decimal; bool as true/false; enums by name (norm_first true/false, activation
// relu/gelu/gelu_tanh, layer_norm torch/annotated, mask_fill -inf/-1e9); eps as the shortest %.Ne text
// (Python's "%.*e") that reads back as the same float: 1e-05, 1e-06.
#pragma once

#include <cstring>
#include <type_traits>

#include <statiformer/graph/sequential.hpp>
#include <statiformer/layers/causal_layer.hpp>
#include <statiformer/layers/stack.hpp>
#include <statiformer/models/decoder_only.hpp>
#include <statiformer/models/encoder_decoder.hpp>

namespace stf {

namespace detail::hparams {

/// A value's text, built at compile time.
struct Text {
  char text[24] = {};
  index_t length = 0;
  constexpr void put(char c) {
    if (length + 1 < 24) text[length++] = c;
  }
  constexpr void put(const char* s) {
    while (*s) put(*s++);
  }
  constexpr void number(unsigned long long v, index_t min_digits = 1) {
    char d[24] = {};
    index_t n = 0;
    do {
      d[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v || n < min_digits);
    while (n) put(d[--n]);
  }
};

constexpr Text text(const char* s) {
  Text t;
  t.put(s);
  return t;
}
constexpr Text text(index_t v) {
  Text t;
  t.number(v);
  return t;
}
constexpr Text text(bool v) { return text(v ? "true" : "false"); }
constexpr Text text(Activation a) {
  return text(a == Activation::relu ? "relu" : (a == Activation::gelu ? "gelu" : "gelu_tanh"));
}
constexpr Text text(LayerNormKind k) { return text(k == LayerNormKind::torch ? "torch" : "annotated"); }
constexpr Text text(MaskFill f) { return text(f == MaskFill::neg_inf ? "-inf" : "-1e9"); }
constexpr Text text(NumberFormat f) {
  return text(f == NumberFormat::f32 ? "f32" : (f == NumberFormat::w8a32 ? "w8a32" : "w8a8"));
}

/// The shortest "d[.ddd]e±XX" (Python's "%.*e" % (p - 1, x)) that reads back as the float x > 0.
constexpr Text text(float x) {
  Text t;
  if (!(x > 0.0f)) return text(x == 0.0f ? "0e+00" : "?");
  double d = x;
  int e10 = 0;
  while (d >= 10.0) d /= 10.0, ++e10;
  while (d < 1.0) d *= 10.0, --e10;
  for (int p = 1; p <= 9; ++p) {
    // m = round(x / 10^(e10 - p + 1)), computed from x itself (not the scaled d) with exact powers of ten
    double scale = 1.0;
    const int k = e10 - p + 1;
    for (int i = 0; i < (k < 0 ? -k : k); ++i) scale *= 10.0;
    const double scaled = k < 0 ? static_cast<double>(x) * scale : static_cast<double>(x) / scale;
    auto m = static_cast<unsigned long long>(scaled + 0.5);
    int e = e10;
    unsigned long long limit = 1;
    for (int i = 0; i < p; ++i) limit *= 10;
    if (m >= limit) m /= 10, ++e;  // 9.99.. rounded up to 10.0
    // back = m * 10^(e - p + 1)
    double back = static_cast<double>(m);
    for (int i = e - p + 1; i > 0; --i) back *= 10.0;
    double div = 1.0;
    for (int i = e - p + 1; i < 0; ++i) div *= 10.0;
    back /= div;
    if (static_cast<float>(back) != x && p < 9) continue;
    char digits[24] = {};
    index_t n = 0;
    for (unsigned long long v = m; v; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
    t.put(digits[n - 1]);
    if (n > 1) t.put('.');
    for (index_t i = n - 1; i-- > 0;) t.put(digits[i]);
    t.put('e');
    t.put(e < 0 ? '-' : '+');
    t.number(static_cast<unsigned long long>(e < 0 ? -e : e), 2);
    return t;
  }
  return t;
}

}  // namespace detail::hparams

// ---- what each module type declares (overloads on a null pointer of the module type: a Named<...>
// node finds its layer's overload through the base class) -------------------------------------------

namespace hparams {

using detail::hparams::text;

/// A module the library does not know: no hyperparameters.
template <class H>
constexpr void describe(H&, const Name&, const void*) {}

template <class H, index_t DModel, LayerNormKind Kind, LayerNormEps Eps>
constexpr void describe(H& h, const Name& p, const LayerNorm<DModel, Kind, Eps>*) {
  h(p / "normalized_shape", text(DModel));
  h(p / "layer_norm", text(Kind));
  h(p / "eps", text(Eps.value));
}

/// `number_format` (w8a32, w8a8) where the linears are int8; a float module has no such key, so the
/// files written before the key existed still load. The int8 formats' files differ from the float
/// ones in their dtypes too, but w8a32 and w8a8 files are the same bytes: only this key tells them apart.
template <class H>
constexpr void describe_format(H& h, const Name& p, NumberFormat f) {
  if (is_int8(f)) h(p / "number_format", text(f));
}

template <class H, index_t SeqQ, index_t SeqK, index_t DModel, index_t NHeads, bool Bias, NumberFormat Format,
          bool Int8Attention>
constexpr void describe(H& h, const Name& p,
                        const MultiHeadAttention<SeqQ, SeqK, DModel, NHeads, Bias, Format, Int8Attention>*) {
  h(p / "embed_dim", text(DModel));
  h(p / "num_heads", text(NHeads));
  h(p / "bias", text(Bias));
  h(p / "seq_q", text(SeqQ));
  h(p / "seq_k", text(SeqK));
  describe_format(h, p, Format);
  if (Int8Attention) h(p / "int8_attention", text(true));
}

template <class H, index_t SeqLen, index_t DModel, index_t DFf, Activation Act, bool OutAct, NumberFormat Format>
constexpr void describe(H& h, const Name& p, const FeedForward<SeqLen, DModel, DFf, Act, OutAct, Format>*) {
  h(p / "d_model", text(DModel));
  h(p / "dim_feedforward", text(DFf));
  h(p / "activation", text(Act));
  h(p / "out_activation", text(OutAct));
  h(p / "seq_len", text(SeqLen));
  describe_format(h, p, Format);
}

/// The options every layer shares, under nn.Transformer*Layer's argument names where it has one.
template <class H, LayerOptions Opt, index_t DModel, index_t NHeads, index_t DFf>
constexpr void describe_layer(H& h, const Name& p) {
  h(p / "d_model", text(DModel));
  h(p / "nhead", text(NHeads));
  h(p / "dim_feedforward", text(DFf));
  h(p / "norm_first", text(Opt.norm == NormPlacement::pre));
  h(p / "activation", text(Opt.activation));
  h(p / "layer_norm", text(Opt.layer_norm));
  h(p / "layer_norm_eps", text(LayerNorm<DModel, Opt.layer_norm, Opt.layer_norm_eps>::eps));
  h(p / "bias", text(Opt.bias));
  h(p / "mask_fill", text(Opt.fill));
  describe_format(h, p, Opt.format);
  if (Opt.int8_attention) h(p / "int8_attention", text(true));  // (only where on: w8a8 files stay as they are)
}

template <class H, index_t SeqLen, index_t DModel, index_t NHeads, index_t DFf, LayerOptions Opt>
constexpr void describe(H& h, const Name& p, const EncoderLayer<SeqLen, DModel, NHeads, DFf, Opt>*) {
  describe_layer<H, Opt, DModel, NHeads, DFf>(h, p);
  h(p / "seq_len", text(SeqLen));
}

template <class H, index_t SeqLen, index_t MemLen, index_t DModel, index_t NHeads, index_t DFf, LayerOptions Opt>
constexpr void describe(H& h, const Name& p, const DecoderLayer<SeqLen, MemLen, DModel, NHeads, DFf, Opt>*) {
  describe_layer<H, Opt, DModel, NHeads, DFf>(h, p);
  h(p / "seq_len", text(SeqLen));
  h(p / "mem_len", text(MemLen));
}

/// A causal layer: an encoder layer's keys and `causal = true` (the same weights, another
/// computation). seq_len is its capacity.
template <class H, index_t SeqLen, index_t DModel, index_t NHeads, index_t DFf, LayerOptions Opt>
constexpr void describe(H& h, const Name& p, const CausalLayer<SeqLen, DModel, NHeads, DFf, Opt>*) {
  describe_layer<H, Opt, DModel, NHeads, DFf>(h, p);
  h(p / "seq_len", text(SeqLen));
  h(p / "causal", text(true));
}

template <class H, class Layer, index_t NLayers, bool FinalNorm>
constexpr void describe(H& h, const Name& p, const StackParams<Layer, NLayers, FinalNorm>*) {
  h(p / "num_layers", text(NLayers));
  for (index_t i = 0; i < NLayers; ++i) describe(h, p / "layers" / i, static_cast<const Layer*>(nullptr));
  if constexpr (FinalNorm)
    describe(h, p / "norm", static_cast<const typename StackParams<Layer, NLayers, FinalNorm>::Norm*>(nullptr));
}
template <class H, class Layer, index_t NLayers, bool FinalNorm>
constexpr void describe(H& h, const Name& p, const EncoderStack<Layer, NLayers, FinalNorm>*) {
  describe(h, p, static_cast<const StackParams<Layer, NLayers, FinalNorm>*>(nullptr));
}
template <class H, class Layer, index_t NLayers, bool FinalNorm>
constexpr void describe(H& h, const Name& p, const DecoderStack<Layer, NLayers, FinalNorm>*) {
  describe(h, p, static_cast<const StackParams<Layer, NLayers, FinalNorm>*>(nullptr));
}

template <class H, class Layer, index_t NLayers, bool FinalNorm>
constexpr void describe(H& h, const Name& p, const CausalStack<Layer, NLayers, FinalNorm>*) {
  describe(h, p, static_cast<const StackParams<Layer, NLayers, FinalNorm>*>(nullptr));
}

template <class H, index_t Vocab, index_t DModel>
constexpr void describe(H& h, const Name& p, const Embedding<Vocab, DModel>*) {
  h(p / "num_embeddings", text(Vocab));
  h(p / "embedding_dim", text(DModel));
}

template <class H, index_t MaxLen, index_t DModel>
constexpr void describe(H& h, const Name& p, const PositionalEncoding<MaxLen, DModel>*) {
  h(p / "max_len", text(MaxLen));
  h(p / "d_model", text(DModel));
}

template <class H, index_t DModel, index_t Out, bool LogSoftmax>
constexpr void describe(H& h, const Name& p, const ProjectionHead<DModel, Out, LogSoftmax>*) {
  h(p / "in_features", text(DModel));
  h(p / "out_features", text(Out));
  h(p / "log_softmax", text(LogSoftmax));
}

template <class H, class SrcEmbed, class TgtEmbed, class Encoder, class Decoder, class Gen>
constexpr void describe(H& h, const Name& p, const EncoderDecoder<SrcEmbed, TgtEmbed, Encoder, Decoder, Gen>*) {
  using M = EncoderDecoder<SrcEmbed, TgtEmbed, Encoder, Decoder, Gen>;
  describe(h, p / "src_embed", static_cast<const SrcEmbed*>(nullptr));
  describe(h, p / "tgt_embed", static_cast<const TgtEmbed*>(nullptr));
  describe(h, p / "positional_encoding", static_cast<const typename M::PosEnc*>(nullptr));
  describe(h, p / "encoder", static_cast<const Encoder*>(nullptr));
  describe(h, p / "decoder", static_cast<const Decoder*>(nullptr));
  describe(h, p / "generator", static_cast<const Gen*>(nullptr));
}

/// The stack's keys at the model's root, as its parameters are (layers.<i>.*, norm.*).
template <class H, class Embed, class Stack, class Gen>
constexpr void describe(H& h, const Name& p, const DecoderOnly<Embed, Stack, Gen>*) {
  using M = DecoderOnly<Embed, Stack, Gen>;
  describe(h, p / "embed", static_cast<const Embed*>(nullptr));
  describe(h, p / "positional_encoding", static_cast<const typename M::PosEnc*>(nullptr));
  describe(h, p, static_cast<const Stack*>(nullptr));
  describe(h, p / "generator", static_cast<const Gen*>(nullptr));
}

/// Each node under the prefix `visit` gives its parameters (its Named prefix, or its index).
template <class H, index_t SeqLen, Node... Layers>
constexpr void describe(H& h, const Name& p, const Sequential<SeqLen, Layers...>*) {
  index_t k = 0;
  auto node = [&]<class L>(const L* l) {
    if constexpr (requires { L::prefix; })
      describe(h, p / L::prefix, l);
    else
      describe(h, p / k, l);
    ++k;
  };
  (node(static_cast<const Layers*>(nullptr)), ...);
}

/// The module whose hyperparameters a parameter struct carries: its `Owner`, followed to the end.
template <class P>
constexpr auto owner() {
  if constexpr (requires { typename P::Owner; })
    return owner<typename P::Owner>();
  else
    return static_cast<const P*>(nullptr);
}

}  // namespace hparams

/// The hyperparameters of a model (or parameter struct) type, as "key\0value\0" pairs, in flash.
template <index_t Bytes, index_t Count>
struct HParamTable {
  char text[Bytes > 0 ? Bytes : 1] = {};
  static constexpr index_t count = Count;
  static constexpr index_t bytes = Bytes;
};

namespace detail::hparams {

struct Counter {
  index_t bytes = 0, count = 0;
  constexpr void operator()(const Name& key, const Text& value) {
    bytes += key.length + 1 + value.length + 1;
    ++count;
  }
};
template <index_t Bytes, index_t Count>
struct Writer {
  HParamTable<Bytes, Count> table{};
  index_t at = 0;
  constexpr void operator()(const Name& key, const Text& value) {
    for (index_t i = 0; i <= key.length; ++i) table.text[at++] = key.text[i];
    for (index_t i = 0; i < value.length; ++i) table.text[at++] = value.text[i];
    table.text[at++] = '\0';
  }
};

template <class P>
constexpr Counter count() {
  Counter c;
  stf::hparams::describe(c, Name{}, stf::hparams::owner<P>());
  return c;
}
template <class P>
constexpr auto build() {
  constexpr Counter c = count<P>();
  Writer<c.bytes, c.count> w;
  stf::hparams::describe(w, Name{}, stf::hparams::owner<P>());
  return w.table;
}

}  // namespace detail::hparams

/// The hyperparameter table of P (a model, a stack, or a parameter struct with an Owner):
/// hparam_table<P>.text holds count pairs "key\0value\0".
template <class P>
inline constexpr auto hparam_table = detail::hparams::build<std::remove_cvref_t<P>>();

/// Calls f(key, value) for each hyperparameter of a table, in order.
template <index_t Bytes, index_t Count, class F>
void for_each_hparam(const HParamTable<Bytes, Count>& table, F&& f) {
  const char* s = table.text;
  for (index_t i = 0; i < Count; ++i) {
    const char* key = s;
    s += std::strlen(s) + 1;
    f(key, static_cast<const char*>(s));
    s += std::strlen(s) + 1;
  }
}

}  // namespace stf
