// Parity with PyTorch: the encoder-decoder model and greedy decoding (the annotated transformer's
// inference test, and the same loop around nn.Transformer layers).
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <statiformer/models/encoder_decoder.hpp>

#include "../support/golden.hpp"
#include "options.hpp"

namespace {
using namespace stf;
using stf::test::golden_options;
using stf::test::GoldenCase;

template <class Model>
void run_encdec(const char* name) {
  constexpr index_t S = Model::src_len, T = Model::tgt_len, V = Model::tgt_vocab, D = Model::d_model;
  const GoldenCase c = stf::test::load_golden(name);
  static Model model;
  stf::test::bind_golden(model.params, c);
  const std::vector<int> src = c.ints("src");
  const std::vector<int> want = c.ints("decoded");
  const index_t src_valid = c.scalar("src_valid_len");
  REQUIRE(want.size() == T);

  // 1. the memory, then every step's log-probabilities, teacher-forced with PyTorch's tokens
  REQUIRE(model.encode(src.data(), src_valid) == Status::ok);
  // rows at padded positions are not compared: statiformer embeds padding as zeros, PyTorch embeds
  // whatever pad token the batch holds; neither is ever attended to.
  stf::test::check_close(c, "memory", model.memory().data, c.data("memory", S * D), src_valid * D);
  std::vector<float> logprobs((T - 1) * V);
  for (index_t t = 0; t + 1 < T; ++t) REQUIRE(model.step(want[t], logprobs.data() + t * V) == Status::ok);
  stf::test::check_close(c, "logprobs", logprobs.data(), c.data("logprobs", (T - 1) * V), (T - 1) * V);

  // 1b. PaddedRows::tokens embeds the pad tokens as PyTorch does: the whole memory matches, and the
  // log-probabilities are the same bits as with zeros at the padded rows (no row attends to them)
  REQUIRE(model.encode(src.data(), src_valid, PaddedRows::tokens) == Status::ok);
  stf::test::check_close(c, "memory", model.memory().data, c.data("memory", S * D), S * D);
  std::vector<float> logprobs_tokens((T - 1) * V);
  for (index_t t = 0; t + 1 < T; ++t) REQUIRE(model.step(want[t], logprobs_tokens.data() + t * V) == Status::ok);
  CHECK(std::memcmp(logprobs.data(), logprobs_tokens.data(), logprobs.size() * sizeof(float)) == 0);
  if (src_valid < S) {  // a pad token out of range is refused in tokens mode, and the memory is untouched
    std::vector<int> bad = src;
    bad[S - 1] = static_cast<int>(Model::src_vocab);
    const std::vector<float> before(model.memory().data, model.memory().data + S * D);
    CHECK(model.encode(bad.data(), src_valid, PaddedRows::tokens) == Status::token_out_of_range);
    CHECK(std::memcmp(before.data(), model.memory().data, before.size() * sizeof(float)) == 0);
    CHECK(model.encode(bad.data(), src_valid) == Status::ok);  // zeros mode never reads the pad tokens
  }

  // 2. free-running greedy decoding reproduces PyTorch's tokens, and each token's log-probability
  std::vector<int> got(T);
  std::vector<float> token_logprobs(T, -1.0f);
  index_t n = 0;
  REQUIRE(model.greedy_decode(src.data(), src_valid, want[0], -1, got.data(), n, token_logprobs.data()) == Status::ok);
  CHECK(n == T);
  CHECK(got == want);
  CHECK(token_logprobs[0] == 0.0f);
  const float* golden_logprobs = c.data("logprobs", (T - 1) * V);
  std::vector<float> chosen(T - 1);
  for (index_t t = 1; t < T; ++t) chosen[t - 1] = golden_logprobs[(t - 1) * V + static_cast<index_t>(want[t])];
  stf::test::check_close(c, "token_logprobs", token_logprobs.data() + 1, chosen.data(), T - 1);

  // the component types are exposed as what the Transformer alias composes
  static_assert(std::is_same_v<typename Model::Gen, Generator<D, V>>);
  static_assert(std::is_same_v<typename Model::SrcEmbed, Embedding<Model::src_vocab, D>>);
  static_assert(std::is_same_v<typename Model::TgtEmbed, Embedding<V, D>>);
  static_assert(Model::Encoder::n_layers == Model::Decoder::n_layers && Model::Decoder::seq_len == T);
  // 3. capacity: greedy decoding fed T-1 positions; position T-1 is the last one there is room for,
  // the step after it is refused and writes nothing
  float probe[V];
  REQUIRE(model.step(0, probe) == Status::ok);
  probe[0] = 42.0f;
  CHECK(model.step(0, probe) == Status::capacity_exceeded);
  CHECK(probe[0] == 42.0f);
}

template <class Mask>
void load_bytes(const GoldenCase& c, const char* name, Mask& m) {
  const float* f = c.data(name, sizeof m);
  auto* bytes = reinterpret_cast<std::uint8_t*>(&m);
  for (std::size_t i = 0; i < sizeof m; ++i) bytes[i] = f[i] != 0.0f;
}

/// nn.Transformer's masks through the model: src_mask and src_key_padding_mask (gaps) for the
/// encoder, the key padding again for the memory, memory_mask rows if the case has one. With
/// float_masks the src_mask and memory_mask go in as float masks only (Masks::src_float_mask,
/// memory_float_mask): the case's finite values, -inf where its bool masks mask.
template <class Model, bool FloatMasks>
void run_encdec_masks(const char* name) {
  constexpr index_t S = Model::src_len, T = Model::tgt_len, V = Model::tgt_vocab, D = Model::d_model;
  const GoldenCase c = stf::test::load_golden(name);
  static Model model;
  stf::test::bind_golden(model.params, c);
  const std::vector<int> src = c.ints("src");
  const std::vector<int> want = c.ints("decoded");
  REQUIRE(want.size() == T);
  TorchBoolMask<S, S> src_mask{};
  KeyPaddingMask<S> pad{};
  TorchBoolMask<T, S> memory_mask{};
  load_bytes(c, "src_mask", src_mask);
  load_bytes(c, "src_key_padding_mask", pad);
  const bool has_memory_mask = c.has("memory_mask");
  if (has_memory_mask) load_bytes(c, "memory_mask", memory_mask);
  typename Model::Masks masks{.src_mask = &src_mask, .src_key_padding_mask = &pad};
  if (has_memory_mask) masks.memory_mask = &memory_mask;
  // float masks: static (they outlive decoding, as memory_float_mask must)
  static TorchFloatMask<S, S> src_float{};
  static TorchFloatMask<T, S> memory_float{};
  if constexpr (FloatMasks) {
    REQUIRE(has_memory_mask);
    const float* sf = c.data("src_float_mask", S * S);
    const float* mf = c.data("memory_float_mask", T * S);
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    for (index_t i = 0; i < S * S; ++i) src_float.add[i] = src_mask.masked[i] ? neg_inf : sf[i];
    for (index_t i = 0; i < T * S; ++i) memory_float.add[i] = memory_mask.masked[i] ? neg_inf : mf[i];
    masks.src_mask = nullptr;
    masks.memory_mask = nullptr;
    masks.src_float_mask = &src_float;
    masks.memory_float_mask = &memory_float;
  }

  // 1. the memory at every row (PyTorch's encoder computes the padded rows too), then every step's
  // log-probabilities teacher-forced with PyTorch's tokens. The key padding is a copy of the
  // caller's: the steps run after the caller's array is changed to all-padding.
  KeyPaddingMask<S> pad_copy = pad;
  masks.src_key_padding_mask = &pad_copy;
  REQUIRE(model.encode(src.data(), masks) == Status::ok);
  for (auto& b : pad_copy.pad) b = 1;
  masks.src_key_padding_mask = &pad;
  stf::test::check_close(c, "memory", model.memory().data, c.data("memory", S * D), S * D);
  std::vector<float> logprobs((T - 1) * V);
  for (index_t t = 0; t + 1 < T; ++t) REQUIRE(model.step(want[t], logprobs.data() + t * V) == Status::ok);
  stf::test::check_close(c, "logprobs", logprobs.data(), c.data("logprobs", (T - 1) * V), (T - 1) * V);

  // 2. free-running greedy decoding under the same masks: PyTorch's tokens and their log-probabilities
  std::vector<int> got(T);
  std::vector<float> token_logprobs(T, -1.0f);
  index_t n = 0;
  REQUIRE(model.greedy_decode(src.data(), masks, want[0], -1, got.data(), n, token_logprobs.data()) == Status::ok);
  CHECK(n == T);
  CHECK(got == want);
  const float* golden_logprobs = c.data("logprobs", (T - 1) * V);
  std::vector<float> chosen(T - 1);
  for (index_t t = 1; t < T; ++t) chosen[t - 1] = golden_logprobs[(t - 1) * V + static_cast<index_t>(want[t])];
  stf::test::check_close(c, "token_logprobs", token_logprobs.data() + 1, chosen.data(), T - 1);
}
}  // namespace

#define STF_GOLDEN_ENCDEC_MASKS(name, S, T, V, D, H, F, N, norm_first, memory_mask, float_masks)            \
  TEST_CASE("golden encoder-decoder masks " #name, "[golden][encdec][mask]") {                              \
    run_encdec_masks<Transformer<S, T, V, V, D, H, F, N, golden_options(norm_first, LayerNormKind::torch)>, \
                     float_masks != 0>(#name);                                                              \
  }
#define STF_GOLDEN_ENCDEC(name, S, T, V, D, H, F, N, norm_first, ln)                                 \
  TEST_CASE("golden encoder-decoder " #name, "[golden][encdec]") {                                   \
    run_encdec<Transformer<S, T, V, V, D, H, F, N, golden_options(norm_first, STF_LN_##ln)>>(#name); \
  }
// words.hpp must follow the macros above and precede the cases.
// clang-format off
#include "words.hpp"
#include "cases.inc"
// clang-format on
