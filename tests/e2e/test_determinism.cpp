// 1000 repeated runs give bit-identical outputs: no state leaks between runs, nothing depends on
// uninitialized memory or on addresses. Separately allocated copies of a model (static, and placed
// at other offsets in heap buffers, with their inputs, outputs, scratch and weights at other
// addresses and alignments) give the same bits as the static one.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../support/golden.hpp"

using namespace stf;

namespace {

/// Storage for one T placed `offset` bytes past a 4096-byte boundary (a multiple of T's alignment:
/// other cache lines and page offsets than a static T's) in a heap buffer.
template <class T>
class Placed {
 public:
  explicit Placed(std::size_t offset) : bytes_(sizeof(T) + 8192 + offset) {
    const auto base = reinterpret_cast<std::uintptr_t>(bytes_.data());
    const std::uintptr_t at = (base + 4095) / 4096 * 4096 + offset;
    REQUIRE(at % alignof(T) == 0);
    object_ = new (reinterpret_cast<void*>(at)) T{};
  }
  ~Placed() { object_->~T(); }
  Placed(const Placed&) = delete;
  Placed& operator=(const Placed&) = delete;
  T& operator*() { return *object_; }
  T* operator->() { return object_; }

 private:
  std::vector<unsigned char> bytes_;
  T* object_;
};

/// Copies every parameter the model is bound to into one heap buffer, each starting `skew` floats
/// past a 64-byte boundary (so no weight keeps its alignment), and rebinds the model to the copies.
template <class Params>
std::vector<float> rebind_copies(Params& params, index_t skew) {
  index_t total = 0;
  params.visit([&](const Name&, ParamRef r) { total += r.size() + 32; }, {});
  std::vector<float> storage(total + 32);
  float* at = storage.data();
  params.visit(
      [&](const Name&, ParamRef r) {
        while ((reinterpret_cast<std::uintptr_t>(at) / sizeof(float)) % 16 != skew) ++at;
        std::memcpy(at, *r.data, r.size() * sizeof(float));
        *r.data = at;
        at += r.size();
      },
      {});
  return storage;
}

}  // namespace

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

TEST_CASE("encoder-decoder: separately allocated copies give the same bits as the static model", "[determinism]") {
  using M = Transformer<10, 10, 11, 11, 32, 4, 64, 2, kAnnotated>;
  static M model;
  const auto c = stf::test::load_golden("encdec_greedy_annotated_d32");
  stf::test::bind_golden(model.params, c);
  const std::vector<int> src = c.ints("src");
  const index_t src_valid = c.scalar("src_valid_len");

  // greedy tokens, then every step's log-probabilities again, from a source copy `src_at` and
  // into outputs `logprobs` (both wherever the caller put them)
  auto run = [&](M& m, const int* src_at, int* tokens, float* logprobs) {
    index_t n = 0;
    REQUIRE(m.greedy_decode(src_at, src_valid, 1, -1, tokens, n) == Status::ok);
    REQUIRE(n == 10);
    REQUIRE(m.encode(src_at, src_valid) == Status::ok);
    for (index_t t = 0; t + 1 < n; ++t) REQUIRE(m.step(tokens[t], logprobs + t * 11) == Status::ok);
  };
  std::vector<float> want(9 * 11);
  std::vector<int> want_tokens(10);
  run(model, src.data(), want_tokens.data(), want.data());

  for (const std::size_t offset : {std::size_t{64}, std::size_t{64 * 37}, std::size_t{4096 - 64}}) {
    INFO("a copy " << offset << " bytes past a page boundary");
    Placed<M> copy(offset);
    stf::test::bind_golden(copy->params, c);
    // inputs and outputs one int / one float past a 64-byte boundary, in fresh heap buffers
    std::vector<int> src_buf(src.size() + 32), tokens_buf(10 + 32);
    std::vector<float> out_buf(9 * 11 + 32, -1.0f);
    auto skewed = [](auto* p, index_t skew) {
      while ((reinterpret_cast<std::uintptr_t>(p) / sizeof(*p)) % 16 != skew) ++p;
      return p;
    };
    int* src_at = skewed(src_buf.data(), 1 + offset / 64 % 7);
    std::copy(src.begin(), src.end(), src_at);
    int* tokens = skewed(tokens_buf.data(), 3);
    float* out = skewed(out_buf.data(), 5);
    run(*copy, src_at, tokens, out);
    CHECK(std::memcmp(out, want.data(), want.size() * sizeof(float)) == 0);
    CHECK(std::equal(want_tokens.begin(), want_tokens.end(), tokens));
    // the same again with its weights copied to unaligned addresses
    const auto weights = rebind_copies(copy->params, 1 + offset / 64 % 15);
    std::fill(out_buf.begin(), out_buf.end(), -1.0f);
    run(*copy, src_at, tokens, out);
    CHECK(std::memcmp(out, want.data(), want.size() * sizeof(float)) == 0);
    CHECK(std::equal(want_tokens.begin(), want_tokens.end(), tokens));
  }
  // and the static model still gives its bits after the copies ran (no shared state)
  std::vector<float> again(9 * 11);
  std::vector<int> again_tokens(10);
  run(model, src.data(), again_tokens.data(), again.data());
  CHECK(std::memcmp(again.data(), want.data(), want.size() * sizeof(float)) == 0);
}

TEST_CASE("encoder layer: inputs, outputs and scratch at other addresses and alignments give the same bits",
          "[determinism]") {
  using L = EncoderLayer<13, 64, 4, 128>;
  static L layer;
  std::vector<float> w(L::Params::param_count + 64);
  for (index_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>((i * 37) % 23) - 0.25f;
  index_t used = 0;
  layer.params.visit(
      [&](const Name&, ParamRef r) {
        *r.data = w.data() + used;
        used += r.size();
      },
      {});
  std::vector<float> x0(13 * 64);
  for (index_t i = 0; i < x0.size(); ++i) x0[i] = static_cast<float>((i * 7919) % 101) / 50.0f - 1.0f;
  auto forward = [&](index_t skew) {
    // x, y and scratch each `skew` floats past a 64-byte boundary of their own heap buffer
    std::vector<float> xb(x0.size() + 32), yb(x0.size() + 32), sb(L::scratch_floats + 32, 7.0f);
    auto at = [&](std::vector<float>& b) {
      float* p = b.data();
      while ((reinterpret_cast<std::uintptr_t>(p) / sizeof(float)) % 16 != skew) ++p;
      return p;
    };
    float *x = at(xb), *y = at(yb), *s = at(sb);
    std::copy(x0.begin(), x0.end(), x);
    REQUIRE(layer.forward(CMat<13, 64>(x), Mat<13, 64>(y), 11, s) == Status::ok);
    return std::vector<float>(y, y + x0.size());
  };
  const auto want = forward(0);
  for (index_t skew = 1; skew < 16; ++skew) {
    INFO("buffers " << skew << " floats past a 64-byte boundary");
    const auto got = forward(skew);
    CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
  }
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

TEST_CASE("classifier graph: separately allocated copies give the same bits as the static one", "[determinism]") {
  using M = Sequential<8, Named<"src_embed", Embedding<20, 16>>, PositionalEncoding<8, 16>,
                       Named<"encoder", EncoderStack<EncoderLayer<8, 16, 2, 32>, 2>>, Named<"", Classifier<16, 5>>>;
  static M model;
  const auto c = stf::test::load_golden("classifier_s8_v20_d16_h2_n2_c5");
  stf::test::bind_golden(model, c);
  const std::vector<int> tokens = c.ints("tokens");
  const index_t valid = c.scalar("valid_len");
  REQUIRE(model.forward(nullptr, RunContext{tokens.data(), valid}) == Status::ok);
  const std::vector<float> want(model.output().data, model.output().data + 8 * 5);
  for (const std::size_t offset : {std::size_t{64}, std::size_t{192}, std::size_t{4096 - 128}}) {
    INFO("a copy " << offset << " bytes past a page boundary");
    Placed<M> copy(offset);
    stf::test::bind_golden(*copy, c);
    std::vector<int> tok_buf(tokens.size() + 16);
    int* tok = tok_buf.data() + offset / 64 % 5;
    std::copy(tokens.begin(), tokens.end(), tok);
    REQUIRE(copy->forward(nullptr, RunContext{tok, valid}) == Status::ok);
    CHECK(std::memcmp(copy->output().data, want.data(), want.size() * sizeof(float)) == 0);
    const auto weights = rebind_copies(*copy, 1 + offset / 64 % 15);
    REQUIRE(copy->forward(nullptr, RunContext{tok, valid}) == Status::ok);
    CHECK(std::memcmp(copy->output().data, want.data(), want.size() * sizeof(float)) == 0);
  }
}
