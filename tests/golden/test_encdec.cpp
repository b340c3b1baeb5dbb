// Parity with PyTorch: the encoder-decoder model and greedy decoding (the annotated transformer's
// inference test, and the same loop around nn.Transformer layers).
#include <catch2/catch.hpp>

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

  // 2. free-running greedy decoding reproduces PyTorch's tokens
  std::vector<int> got(T);
  index_t n = 0;
  REQUIRE(model.greedy_decode(src.data(), src_valid, want[0], -1, got.data(), n) == Status::ok);
  CHECK(n == T);
  CHECK(got == want);
  // 3. capacity: greedy decoding fed T-1 positions; position T-1 is the last one there is room for,
  // the step after it is refused and writes nothing
  float probe[V];
  REQUIRE(model.step(0, probe) == Status::ok);
  probe[0] = 42.0f;
  CHECK(model.step(0, probe) == Status::capacity_exceeded);
  CHECK(probe[0] == 42.0f);
}
}  // namespace

#define STF_GOLDEN_ENCDEC(name, S, T, V, D, H, F, N, norm_first, ln)                                 \
  TEST_CASE("golden encoder-decoder " #name, "[golden][encdec]") {                                   \
    run_encdec<Transformer<S, T, V, V, D, H, F, N, golden_options(norm_first, STF_LN_##ln)>>(#name); \
  }
// words.hpp must follow the macros above and precede the cases.
// clang-format off
#include "words.hpp"
#include "cases.inc"
// clang-format on
