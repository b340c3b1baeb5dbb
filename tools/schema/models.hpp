// The model types whose parameter schemas tools/export.py is tested against (tests/io/): the demo
// encoder-decoder, an encoder stack and a decoder stack with PyTorch's layouts, the same stacks with
// every Linear weight stored transposed (the layout the kernels are moving to), a tiny model for
// the malformed-file corpus, the mutation tests and the fuzzer, a small encoder-decoder for the
// hyperparameter corpus, a small decoder-only model with its stack and an encoder stack of
// the same shapes for the `causal` marker's corpus, a small int8 encoder stack, a small int8
// decoder-only model and the classifier example's Sequential in int8.
#pragma once

#include <statiformer/statiformer.hpp>

#include "../../examples/classifier/classifier_model.hpp"
#include "../../examples/demo/demo_model.hpp"

namespace stf_io {

using stf::index_t;

/// nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 100), 2, norm=nn.LayerNorm(8)), post-norm.
/// linear1's weight is stored [8, 100]: two column panels (64 and 36).
using EncStack = stf::EncoderStack<stf::EncoderLayer<5, 8, 2, 100, stf::LayerOptions{}>, 2, true>;
/// nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 130, norm_first=True), 2, norm=nn.LayerNorm(8)).
/// linear1's weight is stored [8, 130]: three column panels, and the feed-forward runs in two
/// chunks of hidden units (128 and 2).
using DecStack =
    stf::DecoderStack<stf::DecoderLayer<4, 6, 8, 2, 130, stf::LayerOptions{.norm = stf::NormPlacement::pre}>, 2, true>;
using Demo = stf_demo::Model;
/// Small enough for a corpus file per hyperparameter (tools/gen_corpus.py, tests/io/corpus/hp_*):
/// src 2 tokens of 5, tgt 3 tokens of 6, d_model 4, 2 heads, d_ff 8, one layer per stack. Every
/// kind of hyperparameter the library knows appears in its table (the loader checks them all).
using HpModel = stf::Transformer<2, 3, 5, 6, 4, 2, 8, 1>;
/// The decoder-only model's hyperparameter corpus (tests/io/corpus/gpt_*): capacity 3, vocabulary 5,
/// d_model 4, 2 heads, d_ff 8, one causal layer and a final norm; its stack alone, and the encoder
/// stack of the same shapes, whose parameters have the same names (only `causal` tells them apart).
using GptHp = stf::Gpt<3, 5, 4, 2, 8, 1>;
using CausalStackHp = stf::CausalStack<stf::CausalLayer<3, 4, 2, 8>, 1, true>;
using EncStackHp = stf::EncoderStack<stf::EncoderLayer<3, 4, 2, 8>, 1, true>;
/// An int8 encoder stack (NumberFormat::w8a8: I8 weights in k-quads, F32 weight_scale vectors, the
/// number_format hyperparameter): d_model 8, 2 heads, d_ff 10, so linear2's reduction of 10 is stored
/// padded to 12. The loader's int8 paths (tests/unit/test_int8_layers.cpp, the fuzzer).
using EncStackW8a8 =
    stf::EncoderStack<stf::EncoderLayer<3, 8, 2, 10, stf::LayerOptions{.format = stf::NumberFormat::w8a8}>, 1, true>;
/// An int8 decoder-only model (NumberFormat::w8a8 in its causal layers; embedding and generator
/// float): tools/stf_torch.TorchDecoderOnly(5, 1, 8, 10, 2, block="gpt") as tools/export.py
/// --emit-model --quantize w8a8 --seq-len 3 types it; linear2's reduction of 10 padded to 12.
using GptW8a8 = stf::Gpt<3, 5, 8, 2, 10, 1,
                         stf::LayerOptions{.norm = stf::NormPlacement::pre,
                                           .activation = stf::Activation::gelu,
                                           .format = stf::NumberFormat::w8a8},
                         true>;
/// examples/classifier's model in w8a8 (a Sequential: embedding, positional encoding as node 1, the
/// int8 encoder stack, the float classifier): tools/stf_torch.TorchTokenClassifier as tools/export.py
/// --emit-model --quantize w8a8 types it.
using ClassifierW8a8 = classifier_example::ModelW8a8;

/// Tiny: a Linear(4 → 3) and a LayerNorm(3): 4 tensors, 21 floats, a ~300-byte header. Its layout
/// is spelled out here (proj.weight stored as PyTorch's [3, 4]) rather than taken from LinearParams,
/// so the malformed-file corpus does not depend on how the kernels store a Linear.
struct TinyParams {
  stf::CMat<3, 4> proj_weight;
  stf::CVec<3> proj_bias, norm_weight, norm_bias;
  static constexpr index_t param_count = 3 * 4 + 3 * 3;
  template <class F>
  void visit(F&& f, const stf::Name& prefix) {
    f(prefix / "proj" / "weight", stf::param_ref(proj_weight));
    f(prefix / "proj" / "bias", stf::param_ref(proj_bias));
    f(prefix / "norm" / "weight", stf::param_ref(norm_weight));
    f(prefix / "norm" / "bias", stf::param_ref(norm_bias));
  }
};

/// `Params` with every matrix except embeddings stored transposed ([In, Out], column panels): what main's
/// LinearParams declares. Lets the exporter's and the loader's transposed path be tested now.
template <class Params>
struct LinearsTransposed {
  using Owner = Params;  ///< the same hyperparameters as the wrapped model
  Params inner;
  static constexpr index_t param_count = Params::param_count;
  template <class F>
  void visit(F&& f, const stf::Name& prefix) {
    inner.visit(
        [&](const stf::Name& name, stf::ParamRef ref) {
          const char* tail = name.c_str() + (name.length >= 12 ? name.length - 12 : 0);
          if (ref.cols && std::strcmp(tail, "embed.weight") != 0) {
            ref.transposed = true;
            ref.panel = stf::kWeightPanel;
          }
          f(name, ref);
        },
        prefix);
  }
};

}  // namespace stf_io
