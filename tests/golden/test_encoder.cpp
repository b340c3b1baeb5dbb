// Parity with PyTorch: encoder layers (post/pre-norm), encoder stacks (with/without final norm,
// both LayerNorm flavours) and the transformer classifier (a Sequential graph).
#include <catch2/catch.hpp>

#include <vector>

#include <statiformer/graph/sequential.hpp>
#include <statiformer/layers/embedding.hpp>
#include <statiformer/layers/heads.hpp>
#include <statiformer/layers/stack.hpp>

#include "../support/golden.hpp"
#include "options.hpp"

namespace {
using namespace stf;
using stf::test::golden_options;
using stf::test::GoldenCase;

/// Runs `Model` (an encoder layer or stack) over each batch item and compares with y.
template <class Model, index_t B, index_t S, index_t D>
void run_batched(const char* name) {
  const GoldenCase c = stf::test::load_golden(name);
  Model model{};
  stf::test::bind_golden(model.params, c);
  const std::vector<int> valid = c.ints("valid_len");
  const float* x = c.data("x", B * S * D);
  std::vector<float> y(B * S * D), scratch(Model::scratch_floats);
  for (index_t b = 0; b < B; ++b) {
    const Status st = model.forward(CMat<S, D>(x + b * S * D), Mat<S, D>(y.data() + b * S * D),
                                    static_cast<index_t>(valid[b]), scratch.data());
    REQUIRE(st == Status::ok);
  }
  stf::test::check_close(c, "y", y.data(), c.data("y", B * S * D), B * S * D);
}

template <index_t S, index_t V, index_t D, index_t H, index_t F, index_t N, index_t C>
void run_classifier(const char* name) {
  using Model = Sequential<S, Named<"src_embed", Embedding<V, D>>, PositionalEncoding<S, D>,
                           Named<"encoder", EncoderStack<EncoderLayer<S, D, H, F>, N>>, Named<"", Classifier<D, C>>>;
  const GoldenCase c = stf::test::load_golden(name);
  static Model model;
  stf::test::bind_golden(model, c);
  const std::vector<int> tokens = c.ints("tokens");
  const Status st = model.forward(nullptr, RunContext{tokens.data(), c.scalar("valid_len")});
  REQUIRE(st == Status::ok);
  // padded rows are not compared (zeros embedded here, the pad token's embedding in PyTorch)
  stf::test::check_close(c, "logits", model.output().data, c.data("y", S * C), c.scalar("valid_len") * C);
}

/// nn.TransformerEncoderLayer with src_mask and src_key_padding_mask (gaps), as Layer::Masks.
template <class Layer, index_t S, index_t D>
void run_masks(const char* name, bool causal) {
  const GoldenCase c = stf::test::load_golden(name);
  Layer layer{};
  stf::test::bind_golden(layer.params, c);
  TorchBoolMask<S, S> src_mask{};
  KeyPaddingMask<S> pad{};
  const float* m = c.data("src_mask", S * S);
  for (index_t i = 0; i < S * S; ++i) src_mask.masked[i] = m[i] != 0.0f;
  const float* kp = c.data("src_key_padding_mask", S);
  for (index_t i = 0; i < S; ++i) pad.pad[i] = kp[i] != 0.0f;
  std::vector<float> y(S * D), scratch(Layer::scratch_floats);
  REQUIRE(layer.forward(CMat<S, D>(c.data("x", S * D)), Mat<S, D>(y.data()),
                        {.src_mask = &src_mask, .src_key_padding_mask = &pad, .is_causal = causal},
                        scratch.data()) == Status::ok);
  stf::test::check_close(c, "y", y.data(), c.data("y", S * D), S * D);
}
}  // namespace

#define STF_GOLDEN_ENCODER_LAYER_MASKS(name, S, D, H, F, norm_first, act, causal)                               \
  TEST_CASE("golden encoder layer masks " #name, "[golden][encoder][mask]") {                                   \
    run_masks<EncoderLayer<S, D, H, F, golden_options(norm_first, LayerNormKind::torch, STF_ACT_##act)>, S, D>( \
        #name, bool(causal));                                                                                   \
  }
#define STF_GOLDEN_ENCODER_LAYER(name, B, S, D, H, F, norm_first, act)                                               \
  TEST_CASE("golden encoder layer " #name, "[golden][encoder]") {                                                    \
    run_batched<EncoderLayer<S, D, H, F, golden_options(norm_first, LayerNormKind::torch, STF_ACT_##act)>, B, S, D>( \
        #name);                                                                                                      \
  }
#define STF_GOLDEN_ENCODER_LAYER_EPS(name, B, S, D, H, F, norm_first, act, eps)                                       \
  TEST_CASE("golden encoder layer " #name, "[golden][encoder]") {                                                     \
    run_batched<EncoderLayer<S, D, H, F, stf::test::golden_options_eps(norm_first, STF_ACT_##act, float(eps))>, B, S, \
                D>(#name);                                                                                            \
  }
#define STF_GOLDEN_ENCODER_STACK(name, B, S, D, H, F, N, norm_first, final_norm, ln)                                  \
  TEST_CASE("golden encoder stack " #name, "[golden][encoder]") {                                                     \
    run_batched<EncoderStack<EncoderLayer<S, D, H, F, golden_options(norm_first, STF_LN_##ln)>, N, bool(final_norm)>, \
                B, S, D>(#name);                                                                                      \
  }
#define STF_GOLDEN_CLASSIFIER(name, S, V, D, H, F, N, C) \
  TEST_CASE("golden classifier " #name, "[golden][classifier]") { run_classifier<S, V, D, H, F, N, C>(#name); }
// words.hpp must follow the macros above and precede the cases.
// clang-format off
#include "words.hpp"
#include "cases.inc"
// clang-format on
