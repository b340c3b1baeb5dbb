// The decoder-only model: prefill then steps gives the same bits as steps alone; seeded sampling is
// reproducible and top_k = 1 is greedy; every misuse is refused with its Status, writing nothing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <statiformer/models/decoder_only.hpp>

#include "../support/test_data.hpp"

using namespace stf;

namespace {

/// Binds every parameter of a model to deterministic random values (norm gains around 1).
struct RandomWeights {
  std::vector<std::vector<float>> storage;
  template <class Params>
  void bind(Params& params, std::uint32_t seed) {
    params.visit(
        [&](const Name& name, ParamRef ref) {
          const bool gain = std::strstr(name.c_str(), "norm") && std::strstr(name.c_str(), "weight");
          std::vector<float> v = stf_test::data(ref.size(), seed++, gain ? 0.2f : 0.5f);
          if (gain)
            for (float& x : v) x += 1.0f;
          storage.push_back(std::move(v));
          *ref.data = storage.back().data();
        },
        Name{});
  }
};

template <class Model>
std::unique_ptr<Model> make_model(RandomWeights& w, std::uint32_t seed) {
  auto m = std::make_unique<Model>();
  w.bind(m->params, seed);
  return m;
}

std::vector<int> tokens_for(index_t n, index_t vocab, std::uint32_t seed) {
  std::vector<int> t(n);
  for (index_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    t[i] = static_cast<int>((seed >> 8) % vocab);
  }
  return t;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Every split of the sequence into a prefill of p positions and steps: the log-probabilities of
/// every position are the bits of steps alone.
template <class Model>
void check_prefill_equals_steps(std::uint32_t seed) {
  constexpr index_t S = Model::seq_len, V = Model::vocab;
  RandomWeights w;
  auto model = make_model<Model>(w, seed);
  const std::vector<int> tokens = tokens_for(S, V, seed);

  std::vector<float> steps(S * V);
  model->reset();
  for (index_t i = 0; i < S; ++i) REQUIRE(model->step(tokens[i], steps.data() + i * V) == Status::ok);
  REQUIRE(model->position() == S);

  for (index_t p : {index_t{1}, index_t{2}, S / 2 + 1, S - 1, S}) {
    std::vector<float> got(S * V, -1.0f);
    REQUIRE(model->prefill(tokens.data(), p, got.data(), PrefillOutput::every_row) == Status::ok);
    REQUIRE(model->position() == p);
    for (index_t i = p; i < S; ++i) REQUIRE(model->step(tokens[i], got.data() + i * V) == Status::ok);
    INFO("prefill of " << p << " positions, then steps");
    CHECK(same_bits(got, steps));
    // the last row alone (PrefillOutput::last) is the same row
    std::vector<float> last(V), want(steps.begin() + static_cast<std::ptrdiff_t>((p - 1) * V),
                                     steps.begin() + static_cast<std::ptrdiff_t>(p * V));
    REQUIRE(model->prefill(tokens.data(), p, last.data()) == Status::ok);
    CHECK(same_bits(last, want));
  }
}

// small: one attention call; long: more rows than a row group (6 / 12) and keys past a block (32)
using SmallPost = Gpt<12, 13, 16, 2, 32, 2>;
using SmallPre = Gpt<12, 13, 16, 2, 32, 2, LayerOptions{.norm = NormPlacement::pre, .activation = Activation::gelu}>;
using LongPre = Gpt<40, 11, 32, 4, 64, 2, LayerOptions{.norm = NormPlacement::pre}>;
using LongPostNoFinal = Gpt<40, 11, 32, 2, 48, 1, LayerOptions{}, false>;

}  // namespace

TEST_CASE("decoder-only: prefill then steps gives the bits of steps alone", "[decoder_only]") {
  check_prefill_equals_steps<SmallPost>(11);
  check_prefill_equals_steps<SmallPre>(12);
  check_prefill_equals_steps<LongPre>(13);
  check_prefill_equals_steps<LongPostNoFinal>(14);
}

TEST_CASE("decoder-only: a causal layer's prefill equals its steps, and row i ignores rows after i", "[decoder_only]") {
  using L = CausalLayer<20, 16, 2, 32, LayerOptions{.norm = NormPlacement::pre}>;
  RandomWeights w;
  L layer{};
  w.bind(layer.params, 40);
  const std::vector<float> x = stf_test::data(20 * 16, 41);
  std::vector<float> scratch(L::scratch_floats), y(20 * 16), ys(20 * 16);
  auto cache = std::make_unique<L::Cache>();
  REQUIRE(layer.prefill(x.data(), 20, *cache, y.data(), scratch.data()) == Status::ok);
  for (index_t i = 0; i < 20; ++i)
    REQUIRE(layer.step(x.data() + i * 16, i, *cache, ys.data() + i * 16, scratch.data()) == Status::ok);
  CHECK(same_bits(y, ys));
  // a prefill of the first 7 rows gives the same first 7 rows (causality: later rows unseen)
  std::vector<float> y7(7 * 16);
  REQUIRE(layer.prefill(x.data(), 7, *cache, y7.data(), scratch.data()) == Status::ok);
  CHECK(std::memcmp(y7.data(), y.data(), y7.size() * sizeof(float)) == 0);
  // run over rows [first, first + n) continues a prefill: 7 rows, then 9 at once, then 4 more
  std::vector<float> yr(20 * 16);
  REQUIRE(layer.prefill(x.data(), 7, *cache, yr.data(), scratch.data()) == Status::ok);
  layer.run(x.data() + 7 * 16, 7, 9, *cache, yr.data() + 7 * 16, scratch.data());
  layer.run(x.data() + 16 * 16, 16, 4, *cache, yr.data() + 16 * 16, scratch.data());
  CHECK(same_bits(yr, y));
  // misuse
  CHECK(layer.prefill(x.data(), 0, *cache, y7.data(), scratch.data()) == Status::invalid_length);
  CHECK(layer.prefill(x.data(), 21, *cache, y7.data(), scratch.data()) == Status::invalid_length);
  CHECK(layer.step(x.data(), 20, *cache, y7.data(), scratch.data()) == Status::capacity_exceeded);
}

TEST_CASE("decoder-only: greedy generation follows the argmax of each step", "[decoder_only]") {
  using M = SmallPost;
  RandomWeights w;
  auto model = make_model<M>(w, 21);
  const std::vector<int> prompt = tokens_for(4, M::vocab, 5);
  std::vector<int> out(8, -1);
  index_t n = 0;
  REQUIRE(model->generate(prompt.data(), 4, 8, out.data(), n) == Status::ok);
  REQUIRE(n == 8);
  // the same by hand: steps alone from position 0, argmax of each, fed back
  std::vector<float> lp(M::vocab);
  model->reset();
  for (int t : prompt) REQUIRE(model->step(t, lp.data()) == Status::ok);
  for (index_t i = 0; i < 8; ++i) {
    index_t best = 0;
    for (index_t v = 1; v < M::vocab; ++v)
      if (lp[v] > lp[best]) best = v;
    CHECK(out[i] == static_cast<int>(best));
    if (i + 1 < 8) REQUIRE(model->step(out[i], lp.data()) == Status::ok);
  }
  // an end token stops generation after it is produced
  std::vector<int> stopped(8, -1);
  index_t m = 0;
  REQUIRE(model->generate(prompt.data(), 4, 8, stopped.data(), m, Sampler::argmax(out[2])) == Status::ok);
  index_t first = 0;
  while (out[first] != out[2]) ++first;
  CHECK(m == first + 1);
  CHECK(std::equal(stopped.begin(), stopped.begin() + static_cast<std::ptrdiff_t>(m), out.begin()));
  // the capacity: 12 positions hold a 4-token prompt and 8 fed tokens, so 9 new ones fit
  out.assign(9, -1);
  REQUIRE(model->generate(prompt.data(), 4, 9, out.data(), n) == Status::ok);
  CHECK(n == 9);
  CHECK(model->position() == 12);
}

TEST_CASE("decoder-only: seeded sampling is reproducible, top_k = 1 is greedy", "[decoder_only]") {
  using M = LongPre;
  RandomWeights w;
  auto model = make_model<M>(w, 31);
  const std::vector<int> prompt = tokens_for(3, M::vocab, 9);
  constexpr index_t N = 30;
  auto run = [&](const Sampler& s) {
    std::vector<int> out(N, -1);
    index_t n = 0;
    REQUIRE(model->generate(prompt.data(), 3, N, out.data(), n, s) == Status::ok);
    REQUIRE(n == N);
    return out;
  };
  const std::vector<int> greedy = run(Sampler::argmax());
  // the same seed gives the same tokens; other seeds give other sequences
  const std::vector<int> a = run(Sampler::sample(1.5f, M::vocab, 7));
  CHECK(run(Sampler::sample(1.5f, M::vocab, 7)) == a);
  index_t differ = 0;
  for (std::uint64_t seed = 8; seed < 12; ++seed) differ += run(Sampler::sample(1.5f, M::vocab, seed)) != a ? 1 : 0;
  CHECK(differ == 4);
  CHECK(a != greedy);
  // top_k = 1 is greedy, at any temperature and seed
  CHECK(run(Sampler::sample(1.0f, 1, 3)) == greedy);
  CHECK(run(Sampler::sample(100.0f, 1, 4)) == greedy);
  // a tiny temperature concentrates all the weight on the argmax
  CHECK(run(Sampler::sample(1e-3f, M::vocab, 5)) == greedy);

  // the candidates are the top_k: every token sampled with top_k = 2 is one of the step's two best
  // log-probabilities (replayed by steps alone)
  const std::vector<int> k2 = run(Sampler::sample(3.0f, 2, 6));
  std::vector<float> lp(M::vocab);
  model->reset();
  for (int t : prompt) REQUIRE(model->step(t, lp.data()) == Status::ok);
  index_t not_first = 0;
  for (index_t i = 0; i < N; ++i) {
    index_t better = 0;
    for (index_t v = 0; v < M::vocab; ++v)
      if (lp[v] > lp[static_cast<index_t>(k2[i])] ||
          (lp[v] == lp[static_cast<index_t>(k2[i])] && v < static_cast<index_t>(k2[i])))
        ++better;
    CHECK(better <= 1);
    not_first += better;
    if (i + 1 < N) REQUIRE(model->step(k2[i], lp.data()) == Status::ok);
  }
  CHECK(not_first > 0);  // at temperature 3 the second candidate is drawn too
}

TEST_CASE("decoder-only: the sampler draws tokens with their probabilities", "[decoder_only]") {
  // one distribution, many seeds: each token's frequency is near its softmax(l / T) over the top k
  using M = SmallPre;
  RandomWeights w;
  auto model = make_model<M>(w, 51);
  const std::vector<int> prompt = tokens_for(5, M::vocab, 2);
  std::vector<float> lp(M::vocab);
  REQUIRE(model->prefill(prompt.data(), 5, lp.data()) == Status::ok);
  const float temperature = 2.0f;
  const index_t k = 4;
  std::vector<index_t> order(M::vocab);
  for (index_t v = 0; v < M::vocab; ++v) order[v] = v;
  std::sort(order.begin(), order.end(), [&](index_t a, index_t b) { return lp[a] > lp[b]; });
  std::vector<double> want(M::vocab, 0.0);
  double sum = 0;
  for (index_t i = 0; i < k; ++i) sum += std::exp((lp[order[i]] - lp[order[0]]) / temperature);
  for (index_t i = 0; i < k; ++i) want[order[i]] = std::exp((lp[order[i]] - lp[order[0]]) / temperature) / sum;
  std::vector<double> count(M::vocab, 0.0);
  constexpr int draws = 4000;
  for (int s = 0; s < draws; ++s) {
    int tok = -1;
    index_t n = 0;
    REQUIRE(model->generate(prompt.data(), 5, 1, &tok, n, Sampler::sample(temperature, k, std::uint64_t(s))) ==
            Status::ok);
    count[static_cast<index_t>(tok)] += 1.0;
  }
  for (index_t v = 0; v < M::vocab; ++v) {
    INFO("token " << v << " want " << want[v] << " got " << count[v] / draws);
    CHECK(std::fabs(count[v] / draws - want[v]) < 0.03);  // ~4 standard deviations at p = 0.5
  }
}

TEST_CASE("decoder-only: misuse is refused with its status and writes nothing", "[decoder_only]") {
  using M = SmallPost;
  constexpr index_t S = M::seq_len, V = M::vocab;
  RandomWeights w;
  auto model = make_model<M>(w, 61);
  std::vector<int> prompt = tokens_for(S + 1, V, 3);
  REQUIRE(model->prefill(prompt.data(), 3) == Status::ok);
  std::vector<int> out(S + 2, -7);
  index_t n = 12345;
  auto untouched = [&](Status got, Status want) {
    CHECK(got == want);
    CHECK(n == 12345);
    CHECK(model->position() == 3);
    for (int t : out) CHECK(t == -7);
  };
  const Sampler ok = Sampler::sample(1.0f, V, 1);
  untouched(model->generate(prompt.data(), 0, 1, out.data(), n), Status::invalid_length);
  untouched(model->generate(prompt.data(), S + 1, 1, out.data(), n), Status::invalid_length);
  untouched(model->generate(prompt.data(), 4, S - 2, out.data(), n), Status::capacity_exceeded);
  untouched(model->generate(prompt.data(), S, 2, out.data(), n), Status::capacity_exceeded);
  std::vector<int> bad = prompt;
  bad[1] = static_cast<int>(V);
  untouched(model->generate(bad.data(), 3, 2, out.data(), n), Status::token_out_of_range);
  bad[1] = -1;
  untouched(model->generate(bad.data(), 3, 2, out.data(), n, ok), Status::token_out_of_range);
  untouched(model->generate(prompt.data(), 3, 2, out.data(), n, Sampler::sample(1.0f, 0, 1)), Status::invalid_sampler);
  untouched(model->generate(prompt.data(), 3, 2, out.data(), n, Sampler::sample(1.0f, V + 1, 1)),
            Status::invalid_sampler);
  for (float t : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
    untouched(model->generate(prompt.data(), 3, 2, out.data(), n, Sampler::sample(t, V, 1)), Status::invalid_sampler);
  // prefill and step refuse too, leaving the position and the output alone
  std::vector<float> lp(V, 42.0f);
  CHECK(model->prefill(prompt.data(), 0, lp.data()) == Status::invalid_length);
  CHECK(model->prefill(prompt.data(), S + 1, lp.data()) == Status::invalid_length);
  CHECK(model->prefill(bad.data(), 3, lp.data()) == Status::token_out_of_range);
  CHECK(model->step(static_cast<int>(V), lp.data()) == Status::token_out_of_range);
  CHECK(model->step(-1, lp.data()) == Status::token_out_of_range);
  CHECK(model->position() == 3);
  for (float x : lp) CHECK(x == 42.0f);
  // the last position is usable, the one after it is not
  REQUIRE(model->prefill(prompt.data(), S - 1) == Status::ok);
  REQUIRE(model->step(0, lp.data()) == Status::ok);
  std::fill(lp.begin(), lp.end(), 42.0f);
  CHECK(model->step(0, lp.data()) == Status::capacity_exceeded);
  CHECK(model->position() == S);
  for (float x : lp) CHECK(x == 42.0f);
  // the largest generation that fits, and max_new = 0
  CHECK(model->generate(prompt.data(), 4, S - 3, out.data(), n) == Status::ok);
  CHECK(n == S - 3);
  CHECK(model->generate(prompt.data(), S, 1, out.data(), n) == Status::ok);
  CHECK(n == 1);
  CHECK(model->generate(prompt.data(), 1, 0, out.data(), n) == Status::ok);
  CHECK(n == 0);
  CHECK(std::string(to_string(Status::invalid_sampler)).find("top_k") != std::string::npos);
}

TEST_CASE("decoder-only: parameter names, footprint and summary", "[decoder_only]") {
  using M = Gpt<12, 13, 16, 2, 32, 2>;
  std::vector<std::string> names;
  index_t total = 0;
  static M model;
  model.params.visit([&](const Name& name, ParamRef ref) {
    names.emplace_back(name.c_str());
    total += ref.size();
  });
  CHECK(total == M::param_count);
  CHECK(M::weight_bytes == M::param_count * sizeof(float));
  CHECK(names.front() == "embed.weight");
  CHECK(names[1] == "layers.0.self_attn.q.weight");
  CHECK(std::find(names.begin(), names.end(), "layers.1.ff.linear2.bias") != names.end());
  CHECK(std::find(names.begin(), names.end(), "layers.1.norm2.weight") != names.end());
  CHECK(names[names.size() - 4] == "norm.weight");
  CHECK(names.back() == "generator.proj.bias");
  CHECK(M::state_bytes == 2 * 2 * 12 * 16 * sizeof(float));
  std::string text;
  M::summary([&](const char* line) { (text += line) += '\n'; });
  CHECK(text.find("layers.1") != std::string::npos);
  CHECK(text.find("CausalLayer") != std::string::npos);
  CHECK(text.find("generator") != std::string::npos);
}
