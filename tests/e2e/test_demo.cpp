// The trained demo model, compiled in from its generated header, reproduces PyTorch's greedy
// decodings token for token (tests/golden/data/demo_reference.txt, written by tools/train_demo.py),
// and its first example's log-probabilities to 1e-5.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../../examples/demo/demo_weights.hpp"
#include "../support/golden.hpp"

using namespace stf;
namespace dm = stf_demo;

namespace {
using Demo =
    Transformer<dm::kSrcLen, dm::kTgtLen, dm::kVocab, dm::kVocab, dm::kDModel, dm::kNHeads, dm::kDFf, dm::kNLayers>;
Demo model;
}  // namespace

TEST_CASE("demo model decodes exactly as the trained PyTorch model", "[e2e][demo]") {
  REQUIRE(bind_table(model.params, dm::weights::table).status == Status::ok);
  const auto c = stf::test::load_golden("demo_reference");
  index_t cases = 0;
  for (index_t i = 0; c.has("src_" + std::to_string(i)); ++i, ++cases) {
    const std::vector<int> src = c.ints("src_" + std::to_string(i));
    const index_t len = c.scalar("src_valid_len_" + std::to_string(i));
    std::vector<int> want = c.ints("decoded_" + std::to_string(i));
    std::vector<int> got(dm::kTgtLen, dm::kPad);
    index_t n = 0;
    REQUIRE(model.greedy_decode(src.data(), len, dm::kBos, dm::kEos, got.data(), n) == Status::ok);
    INFO("example " << i << " of length " << len);
    CHECK(got == want);
    // and the answer is right: BOS, the source reversed, EOS
    CHECK(n == len + 2);
    for (index_t k = 0; k < len && k + 1 < n; ++k) CHECK(got[1 + k] == src[len - 1 - k]);
  }
  CHECK(cases >= 20);

  // teacher-forced log-probabilities of example 0
  const std::vector<int> src = c.ints("src_0");
  const std::vector<int> tokens = c.ints("decoded_0");
  REQUIRE(model.encode(src.data(), c.scalar("src_valid_len_0")) == Status::ok);
  std::vector<float> logprobs((dm::kTgtLen - 1) * dm::kVocab);
  for (index_t t = 0; t + 1 < dm::kTgtLen; ++t)
    REQUIRE(model.step(tokens[t], logprobs.data() + t * dm::kVocab) == Status::ok);
  stf::test::check_close(c, "logprobs_0", logprobs.data(), c.data("logprobs_0", logprobs.size()), logprobs.size());
}
