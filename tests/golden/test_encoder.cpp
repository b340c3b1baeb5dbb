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
}  // namespace

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
