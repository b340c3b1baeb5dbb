// Parity with PyTorch: the decoder-only model (nn.TransformerEncoder run with a causal mask, and a
// hand-written GPT block), prefill log-probabilities of a prompt and greedy generation to the capacity.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include <statiformer/models/decoder_only.hpp>

#include "../support/golden.hpp"
#include "options.hpp"

namespace {
using namespace stf;
using stf::test::golden_options;
using stf::test::GoldenCase;

template <class Model>
void run_decoder_only(const char* name) {
  constexpr index_t S = Model::seq_len, V = Model::vocab;
  const GoldenCase c = stf::test::load_golden(name);
  static Model model;
  stf::test::bind_golden(model.params, c);
  const std::vector<int> prompt = c.ints("prompt");
  const std::vector<int> want = c.ints("generated");
  const index_t P = prompt.size(), G = want.size();
  REQUIRE(P + G == S + 1);  // generation runs to the capacity

  // 1. every prompt position's log-probabilities from one prefill
  std::vector<float> logprobs(P * V);
  REQUIRE(model.prefill(prompt.data(), P, logprobs.data(), PrefillOutput::every_row) == Status::ok);
  stf::test::check_close(c, "logprobs", logprobs.data(), c.data("logprobs", P * V), P * V);

  // 2. greedy generation reproduces PyTorch's tokens exactly (PyTorch reran the whole sequence)
  std::vector<int> got(G, -1);
  index_t n = 0;
  REQUIRE(model.generate(prompt.data(), P, G, got.data(), n) == Status::ok);
  CHECK(n == G);
  CHECK(got == want);
  CHECK(model.position() == S);

  // 3. each generation step's log-probabilities, teacher-forced with PyTorch's tokens, by steps
  // alone from position 0 (the prompt's rows too: steps give prefill's bits)
  std::vector<float> prompt_steps(P * V), gen(G * V);
  model.reset();
  for (index_t i = 0; i < P; ++i) REQUIRE(model.step(prompt[i], prompt_steps.data() + i * V) == Status::ok);
  CHECK(std::memcmp(prompt_steps.data(), logprobs.data(), logprobs.size() * sizeof(float)) == 0);
  std::memcpy(gen.data(), prompt_steps.data() + (P - 1) * V, V * sizeof(float));
  for (index_t i = 1; i < G; ++i) REQUIRE(model.step(want[i - 1], gen.data() + i * V) == Status::ok);
  stf::test::check_close(c, "gen_logprobs", gen.data(), c.data("gen_logprobs", G * V), G * V);
}
}  // namespace

#define STF_GOLDEN_DECODER_ONLY(name, S, V, D, H, F, N, norm_first, final_norm, act, block)                       \
  TEST_CASE("golden decoder-only " #name " (" #block ")", "[golden][decoder_only]") {                             \
    run_decoder_only<Gpt<S, V, D, H, F, N, golden_options(norm_first, STF_LN_torch, STF_ACT_##act), final_norm>>( \
        #name);                                                                                                   \
  }
// words.hpp must follow the macros above and precede the cases.
// clang-format off
#include "words.hpp"
#include "cases.inc"
// clang-format on
