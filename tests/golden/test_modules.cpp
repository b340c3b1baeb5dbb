// Parity with PyTorch: feed-forward, LayerNorm (both flavours, any eps), positional encoding, embedding,
// generator.
#include <catch2/catch.hpp>

#include <vector>

#include <statiformer/layers/embedding.hpp>
#include <statiformer/layers/feed_forward.hpp>
#include <statiformer/layers/heads.hpp>
#include <statiformer/layers/layer_norm.hpp>

#include "../support/golden.hpp"

namespace {
using namespace stf;
using stf::test::GoldenCase;

template <index_t S, index_t D, index_t F, Activation Act, bool OutAct>
void run_ffn(const char* name) {
  const GoldenCase c = stf::test::load_golden(name);
  FeedForward<S, D, F, Act, OutAct> ff{};
  stf::test::bind_golden(ff.params, c);
  Tensor<S, D> y{};
  std::vector<float> scratch(decltype(ff)::scratch_floats);
  ff.forward(CMat<S, D>(c.data("x", S * D)), y, scratch.data());
  stf::test::check_close(c, "y", y.data, c.data("y", S * D), S * D);
  // in place gives the same bits
  Tensor<S, D> z{};
  for (index_t i = 0; i < S * D; ++i) z.data[i] = c.data("x", S * D)[i];
  ff.forward(z, z, scratch.data());
  CHECK(std::equal(z.data, z.data + S * D, y.data));
}

template <index_t S, index_t D, LayerNormKind Kind, float Eps = default_layer_norm_eps(Kind)>
void run_layernorm(const char* name) {
  const GoldenCase c = stf::test::load_golden(name);
  LayerNorm<D, Kind, Eps> ln{};
  stf::test::bind_golden(ln.params, c);
  Tensor<S, D> y{};
  ln.forward(CMat<S, D>(c.data("x", S * D)), y);
  stf::test::check_close(c, "y", y.data, c.data("y", S * D), S * D);
}

template <index_t S, index_t D>
void run_posenc(const char* name) {
  const GoldenCase c = stf::test::load_golden(name);
  std::vector<float> y(c.data("x", S * D), c.data("x", S * D) + S * D);
  PositionalEncoding<S, D>::run(y.data(), S);
  stf::test::check_close(c, "y", y.data(), c.data("y", S * D), S * D);
}

template <index_t S, index_t V, index_t D>
void run_embedding(const char* name) {
  const GoldenCase c = stf::test::load_golden(name);
  Embedding<V, D> emb{};
  stf::test::bind_golden(emb.params, c);
  const std::vector<int> tokens = c.ints("tokens");
  Tensor<S, D> y{};
  REQUIRE(emb.run(tokens.data(), S, y.data) == Status::ok);
  stf::test::check_close(c, "y", y.data, c.data("y", S * D), S * D);
}

template <index_t S, index_t D, index_t V>
void run_generator(const char* name) {
  const GoldenCase c = stf::test::load_golden(name);
  Generator<D, V> gen{};
  stf::test::bind_golden(gen.params, c);
  Tensor<S, V> y{};
  gen.run(c.data("x", S * D), S, y.data);
  stf::test::check_close(c, "y", y.data, c.data("y", S * V), S * V);
}
}  // namespace

#define STF_GOLDEN_FFN(name, S, D, F, act, out_act) \
  TEST_CASE("golden ffn " #name, "[golden][ffn]") { run_ffn<S, D, F, STF_ACT_##act, bool(out_act)>(#name); }
#define STF_GOLDEN_LAYERNORM(name, S, D, flavour) \
  TEST_CASE("golden layernorm " #name, "[golden][layernorm]") { run_layernorm<S, D, STF_LN_##flavour>(#name); }
#define STF_GOLDEN_LAYERNORM_EPS(name, S, D, flavour, eps)                 \
  TEST_CASE("golden layernorm " #name, "[golden][layernorm]") {            \
    run_layernorm<S, D, STF_LN_##flavour, static_cast<float>(eps)>(#name); \
  }
#define STF_GOLDEN_POSENC(name, S, D) \
  TEST_CASE("golden posenc " #name, "[golden][posenc]") { run_posenc<S, D>(#name); }
#define STF_GOLDEN_EMBEDDING(name, S, V, D) \
  TEST_CASE("golden embedding " #name, "[golden][embedding]") { run_embedding<S, V, D>(#name); }
#define STF_GOLDEN_GENERATOR(name, S, D, V) \
  TEST_CASE("golden generator " #name, "[golden][generator]") { run_generator<S, D, V>(#name); }
// words.hpp must follow the macros above and precede the cases.
// clang-format off
#include "words.hpp"
#include "cases.inc"
// clang-format on
