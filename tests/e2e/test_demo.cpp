// The trained demo model, compiled in from its generated header, reproduces PyTorch's greedy
// decodings token for token (tests/golden/data/demo_reference.txt, written by tools/train_demo.py),
// and its first example's log-probabilities within the tolerance that file declares (5e-5 absolute
// + 5e-5 relative; measured: 3.5e-5 absolute at most, on log-probabilities from -24.6 to -2.5e-6, so
// 1e-5 absolute would not hold; the test prints the measured error).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../../examples/demo/demo_model.hpp"
#include "../../examples/demo/logprob_hash.hpp"
#include "../support/golden.hpp"

using namespace stf;
namespace dm = stf_demo;

namespace {
/// FNV-1a of the demo's memory and per-step log-probabilities for three inputs (see the test).
constexpr std::uint64_t kDemoHash = 0x3ebe9f54ddb64746ull;
using Demo = dm::Model;
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

namespace {
/// FNV-1a over bytes.
std::uint64_t fnv1a(const void* data, index_t n, std::uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (index_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
}  // namespace

// The bits of the demo model's outputs are part of the contract: every target and every kernel
// variant (reference, scalar, AVX2, AVX-512, NEON, Helium) must produce exactly these. The value is
// committed here; a change to it is a change of the canonical arithmetic and must be deliberate.
TEST_CASE("demo model output hash is the committed one", "[e2e][demo][hash]") {
  REQUIRE(bind_table(model.params, dm::weights::table).status == Status::ok);
  const int inputs[3][5] = {{3, 1, 4, 1, 5}, {9, 9, 0, 0, 1}, {2, 7, 1, 8, 2}};
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& digits : inputs) {
    int src[dm::kSrcLen] = {};
    for (int i = 0; i < 5; ++i) src[i] = dm::kDigit0 + digits[i];
    int out[dm::kTgtLen];
    index_t n = 0;
    REQUIRE(model.greedy_decode(src, 5, dm::kBos, dm::kEos, out, n) == Status::ok);
    REQUIRE(model.encode(src, 5) == Status::ok);
    h = fnv1a(model.memory().data, 5 * dm::kDModel * sizeof(float), h);
    float logprobs[dm::kVocab];
    for (index_t t = 0; t + 1 < n; ++t) {
      REQUIRE(model.step(out[t], logprobs) == Status::ok);
      h = fnv1a(logprobs, sizeof logprobs, h);
    }
  }
  std::printf("demo output hash (%s kernels): %016llx\n", ActiveKernels::name(), static_cast<unsigned long long>(h));
  CHECK(h == kDemoHash);
}

// The firmware takes the parameters bound at compile time (demo_model.hpp's bound_model_params,
// from the generated header's bound_params): every view must point at the array bind_table binds
// by name, and decoding with them gives the committed hash's bits.
TEST_CASE("the demo's parameters bound at compile time are the ones bind_table binds by name", "[e2e][demo][bind]") {
  static Demo by_name;
  REQUIRE(bind_table(by_name.params, dm::weights::table).status == Status::ok);
  Demo::Params bound = dm::bound_model_params;
  std::vector<const void*> named, at_compile_time;
  std::vector<std::string> names;
  by_name.params.visit(
      [&](const Name& n, ParamRef r) {
        named.push_back(*r.data);
        names.push_back(n.c_str());
      },
      {});
  bound.visit([&](const Name&, ParamRef r) { at_compile_time.push_back(*r.data); }, {});
  REQUIRE(named.size() == at_compile_time.size());
  for (std::size_t i = 0; i < named.size(); ++i) {
    INFO(names[i]);
    CHECK(at_compile_time[i] != nullptr);
    CHECK(at_compile_time[i] == named[i]);
  }
  static Demo model_bound;
  model_bound.params = dm::bound_model_params;
  std::uint64_t h1 = 0, h2 = 0;
  index_t s1 = 0, s2 = 0;
  const int src[dm::kSrcLen] = {6, 4, 7, 4, 8};
  REQUIRE(dm::logprob_hash(model_bound, src, 5, dm::kBos, dm::kEos, h1, s1) == Status::ok);
  REQUIRE(dm::logprob_hash(by_name, src, 5, dm::kBos, dm::kEos, h2, s2) == Status::ok);
  CHECK(h1 == dm::kCommittedLogprobHash);
  CHECK(h2 == dm::kCommittedLogprobHash);
}

// A configuration that promises a kernel variant (the native-avx2 preset: STF_EXPECT_ACTIVE_ISA=avx2)
// runs the tests above on it: the layers' variant is chosen by this translation unit's flags
// (simd/isa.hpp), and a build whose -march picked another one would test that one instead.
TEST_CASE("the layers run the kernel variant this configuration promises", "[e2e][isa]") {
  WARN("the layers run the " << ActiveKernels::name() << " kernels");
#if defined(STF_EXPECT_ACTIVE_ISA)
  CHECK(std::string(ActiveKernels::name()) == STF_EXPECT_ACTIVE_ISA);
#endif
  CHECK(ActiveKernels::supported());
}
