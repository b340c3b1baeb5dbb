// The trained demo model, compiled in from its generated header, reproduces PyTorch's greedy
// decodings token for token (tests/golden/data/demo_reference.txt, written by tools/train_demo.py),
// and its first example's log-probabilities within the tolerance that file declares (5e-5 absolute
// + 5e-5 relative; measured: 3.5e-5 absolute at most, on log-probabilities from -24.6 to -2.5e-6, so
// 1e-5 absolute would not hold; the test prints the measured error).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../../examples/demo/demo_model.hpp"
#include "../../examples/demo/demo_weights_w8a32.hpp"
#include "../../examples/demo/demo_weights_w8a8.hpp"
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

// ---- the demo in int8 (issue 23; kernels/QUANTIZATION.md) ----------------------------------------
namespace {
stf_demo_w8a8::Model model_w8a8;
stf_demo_w8a32::Model model_w8a32;

/// Greedy decoding of `digits` (1 to kSrcLen digits) by `m`: the tokens after BOS, up to EOS.
template <class Model>
std::vector<int> decode(Model& m, const std::string& digits) {
  int src[dm::kSrcLen] = {};
  for (std::size_t i = 0; i < digits.size(); ++i) src[i] = dm::kDigit0 + (digits[i] - '0');
  int out[dm::kTgtLen];
  index_t n = 0;
  if (m.greedy_decode(src, digits.size(), dm::kBos, dm::kEos, out, n) != Status::ok) return {};
  return std::vector<int>(out, out + n);
}
}  // namespace

// The int8 models' log-probabilities are as much a contract as the float model's: every target and
// kernel variant gives these bits (integer sums are exact in any order; the float steps keep the
// canonical order).
TEST_CASE("the int8 demo models' output hashes are the committed ones", "[e2e][demo][hash][int8]") {
  REQUIRE(stf_demo_w8a8::bind(model_w8a8.params).status == Status::ok);
  REQUIRE(stf_demo_w8a32::bind(model_w8a32.params).status == Status::ok);
  const int src[dm::kSrcLen] = {dm::kDigit0 + 3, dm::kDigit0 + 1, dm::kDigit0 + 4, dm::kDigit0 + 1, dm::kDigit0 + 5};
  std::uint64_t h8 = 0, h32 = 0;
  index_t s8 = 0, s32 = 0;
  REQUIRE(dm::logprob_hash(model_w8a8, src, 5, dm::kBos, dm::kEos, h8, s8) == Status::ok);
  REQUIRE(dm::logprob_hash(model_w8a32, src, 5, dm::kBos, dm::kEos, h32, s32) == Status::ok);
  std::printf("int8 demo output hashes (%s kernels): w8a8 %016llx, w8a32 %016llx\n", ActiveKernels::name(),
              static_cast<unsigned long long>(h8), static_cast<unsigned long long>(h32));
  CHECK(h8 == dm::kCommittedLogprobHashW8a8);
  CHECK(h32 == dm::kCommittedLogprobHashW8a32);
  // each model against PyTorch's float model on its header's test source (teacher-forced log-probs)
  const stf_demo_w8a8::CheckResult r8 = stf_demo_w8a8::check(model_w8a8);
  const stf_demo_w8a32::CheckResult r32 = stf_demo_w8a32::check(model_w8a32);
  std::printf("against PyTorch's float model: w8a8 max |log-prob error| %.3g (tokens %s), w8a32 %.3g (tokens %s)\n",
              static_cast<double>(r8.max_abs_error), r8.tokens_equal ? "equal" : "differ",
              static_cast<double>(r32.max_abs_error), r32.tokens_equal ? "equal" : "differ");
  CHECK(r8.tokens_equal);
  CHECK(r32.tokens_equal);
}

// Issue 23's accuracy targets for the demo: on the held-out set (the 10,000 sequences training never
// saw, tools/train_demo.py), greedy decodings equal to the float model's for at least 99 % of them in
// w8a8, and for all of them in w8a32. Measured: w8a8 99.99 % (one sequence, printed), w8a32 100 %
// (its weights rounded over calibration inputs, export.py --calibrate; rounded to nearest it parted
// from the float model on one near-tie, 0.19 apart in log-probability: kernels/QUANTIZATION.md).
// Under qemu-user (cross builds) it takes every STF_HELD_OUT_STRIDE-th sequence: the whole set costs
// minutes there, and the bits are the same on every target (the hash test above), so the native run
// measures the whole set.
#ifndef STF_HELD_OUT_STRIDE
#define STF_HELD_OUT_STRIDE 1
#endif
TEST_CASE("the int8 demo models decode the held-out set as the float model does", "[e2e][demo][int8]") {
  REQUIRE(bind_table(model.params, dm::weights::table).status == Status::ok);
  REQUIRE(stf_demo_w8a8::bind(model_w8a8.params).status == Status::ok);
  REQUIRE(stf_demo_w8a32::bind(model_w8a32.params).status == Status::ok);
  const std::vector<std::string> all = stf::test::golden_lines("demo_held_out.seq");
  REQUIRE(all.size() == 10000);
  std::vector<std::string> held_out;
  for (std::size_t i = 0; i < all.size(); i += STF_HELD_OUT_STRIDE) held_out.push_back(all[i]);
  index_t same8 = 0, same32 = 0, correct_f32 = 0, correct8 = 0;
  std::string differ8, differ32;  // the first sequence each decodes otherwise than float32
  for (const std::string& digits : held_out) {
    REQUIRE((!digits.empty() && digits.size() <= dm::kSrcLen));
    const std::vector<int> f = decode(model, digits), q8 = decode(model_w8a8, digits),
                           q32 = decode(model_w8a32, digits);
    std::vector<int> want{dm::kBos};
    for (std::size_t i = digits.size(); i-- > 0;) want.push_back(dm::kDigit0 + (digits[i] - '0'));
    want.push_back(dm::kEos);
    same8 += q8 == f;
    same32 += q32 == f;
    if (q8 != f && differ8.empty()) differ8 = digits;
    if (q32 != f && differ32.empty()) differ32 = digits;
    correct_f32 += f == want;
    correct8 += q8 == want;
  }
  const double n = static_cast<double>(held_out.size());
  auto pct = [&](index_t k) { return 100.0 * static_cast<double>(k) / n; };
  std::printf(
      "held-out set (%zu sequences): w8a8 decodes equal to float32 %.2f %%, w8a32 %.2f %%; correct: "
      "float32 %.2f %%, w8a8 %.2f %%\n",
      held_out.size(), pct(same8), pct(same32), pct(correct_f32), pct(correct8));
  std::printf("  first differing sequence: w8a8 \"%s\", w8a32 \"%s\"\n", differ8.c_str(), differ32.c_str());
  CHECK(pct(same8) >= 99.0);
  CHECK(same32 == static_cast<index_t>(held_out.size()));
}
