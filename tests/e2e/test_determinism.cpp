// 1000 repeated runs give bit-identical outputs: no state leaks between runs, nothing depends on
// uninitialized memory or on addresses.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../support/golden.hpp"

using namespace stf;

TEST_CASE("encoder-decoder: 1000 greedy decodings give the same bits", "[determinism]") {
  using M = Transformer<10, 10, 11, 11, 32, 4, 64, 2, kAnnotated>;
  static M model;
  const auto c = stf::test::load_golden("encdec_greedy_annotated_d32");
  stf::test::bind_golden(model.params, c);
  const std::vector<int> src = c.ints("src");
  const index_t src_valid = c.scalar("src_valid_len");

  auto run = [&](std::vector<float>& logprobs, std::vector<int>& tokens) {
    index_t n = 0;
    REQUIRE(model.greedy_decode(src.data(), src_valid, 1, -1, tokens.data(), n) == Status::ok);
    REQUIRE(model.encode(src.data(), src_valid) == Status::ok);
    for (index_t t = 0; t + 1 < n; ++t) REQUIRE(model.step(tokens[t], logprobs.data() + t * 11) == Status::ok);
  };
  std::vector<float> first(9 * 11), again(9 * 11);
  std::vector<int> first_tokens(10), tokens(10);
  run(first, first_tokens);
  int differing = 0;
  for (int rep = 1; rep < 1000; ++rep) {
    run(again, tokens);
    differing += std::memcmp(first.data(), again.data(), first.size() * sizeof(float)) != 0 || tokens != first_tokens;
  }
  CHECK(differing == 0);
}

TEST_CASE("classifier graph: 1000 forwards give the same bits", "[determinism]") {
  using M = Sequential<8, Named<"src_embed", Embedding<20, 16>>, PositionalEncoding<8, 16>,
                       Named<"encoder", EncoderStack<EncoderLayer<8, 16, 2, 32>, 2>>, Named<"", Classifier<16, 5>>>;
  static M model;
  const auto c = stf::test::load_golden("classifier_s8_v20_d16_h2_n2_c5");
  stf::test::bind_golden(model, c);
  const std::vector<int> tokens = c.ints("tokens");
  REQUIRE(model.forward(nullptr, RunContext{tokens.data(), c.scalar("valid_len")}) == Status::ok);
  std::vector<float> first(model.output().data, model.output().data + 8 * 5);
  int differing = 0;
  for (int rep = 1; rep < 1000; ++rep) {
    REQUIRE(model.forward(nullptr, RunContext{tokens.data(), c.scalar("valid_len")}) == Status::ok);
    differing += std::memcmp(first.data(), model.output().data, first.size() * sizeof(float)) != 0;
  }
  CHECK(differing == 0);
}
