// The activation memory plans never give the same bytes to two buffers alive at the same step:
// for every pair of buffers whose lifetimes intersect, their float ranges are disjoint; every
// offset is aligned; the arena covers every buffer's end. Checked at compile time (the plans are
// constexpr) on real plans, with the lifetimes derived here from what each step reads and writes
// (not taken from the planner's input); at run time on the pointers the layers of a Sequential
// actually receive; and the check itself is shown to report plans perturbed to overlap.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../../examples/demo/demo_model.hpp"

using namespace stf;

namespace {

/// What is wrong with a plan, if anything: the first fault found and the buffers concerned.
struct PlanFault {
  enum Kind : std::uint8_t { none, misaligned, past_arena, overlap } kind = none;
  index_t a = 0, b = 0;
};

/// Checks a plan against the buffers' lifetimes and sizes (uses[i] for buffer i): every offset a
/// multiple of the tensor alignment, offset + floats within arena_floats, and for every pair of
/// non-empty buffers alive at a common step (first..last inclusive), disjoint [offset, offset +
/// floats) ranges. constexpr: usable in static_assert on the planner's constexpr plans.
template <index_t N>
constexpr PlanFault find_plan_fault(const std::array<BufferUse, N>& uses, const std::array<index_t, N>& offset,
                                    index_t arena_floats) {
  constexpr index_t align = kTensorAlign / sizeof(float);
  for (index_t i = 0; i < N; ++i) {
    if (offset[i] % align != 0) return {PlanFault::misaligned, i, i};
    if (offset[i] + uses[i].floats > arena_floats) return {PlanFault::past_arena, i, i};
  }
  for (index_t i = 0; i < N; ++i)
    for (index_t j = i + 1; j < N; ++j) {
      if (uses[i].floats == 0 || uses[j].floats == 0) continue;
      const bool alive_together = uses[i].first <= uses[j].last && uses[j].first <= uses[i].last;
      const bool bytes_shared = offset[i] < offset[j] + uses[j].floats && offset[j] < offset[i] + uses[i].floats;
      if (alive_together && bytes_shared) return {PlanFault::overlap, i, j};
    }
  return {};
}

/// The buffers of Sequential<SeqLen, Layers...>'s plan, as its documentation numbers them
/// (0..n-1: node i's output, n..2n-1: node i's scratch), with lifetimes from a walk over the
/// steps: step k reads the buffer holding node k's input and writes the buffer holding its
/// output (the input's own buffer when the node works in place on rows of the same width), and
/// uses its scratch; after the last step the caller reads the last output (step n).
template <index_t SeqLen, class... Layers>
constexpr std::array<BufferUse, 2 * sizeof...(Layers)> sequential_uses() {
  constexpr index_t n = sizeof...(Layers);
  constexpr std::array<index_t, n> in_cols{Layers::in_cols...}, out_cols{Layers::out_cols...},
      scratch{Layers::scratch_floats...};
  constexpr std::array<bool, n> in_place{Layers::in_place...};
  std::array<BufferUse, 2 * n> uses{};
  std::array<bool, 2 * n> touched{};
  auto touch = [&](index_t buffer, index_t step) {
    if (!touched[buffer]) {
      uses[buffer].first = uses[buffer].last = step;
      touched[buffer] = true;
    }
    uses[buffer].first = step < uses[buffer].first ? step : uses[buffer].first;
    uses[buffer].last = step > uses[buffer].last ? step : uses[buffer].last;
  };
  index_t holder = 0;  // the buffer holding the current activation
  for (index_t k = 0; k < n; ++k) {
    if (k > 0) touch(holder, k);  // reads its input
    const bool same_buffer = k > 0 && in_place[k] && in_cols[k] == out_cols[k];
    if (!same_buffer) {
      holder = k;
      uses[k].floats = SeqLen * out_cols[k];
    }
    touch(holder, k);  // writes its output
    uses[n + k].floats = scratch[k];
    touch(n + k, k);
  }
  touch(holder, n);  // the caller reads the output
  for (index_t i = 0; i < 2 * n; ++i)
    if (!touched[i]) uses[i] = {0, 0, 0};
  return uses;
}

template <class S, index_t SeqLen, class... Layers>
constexpr PlanFault sequential_fault() {
  return find_plan_fault(sequential_uses<SeqLen, Layers...>(), S::plan.offset, S::plan.arena_floats);
}

/// The buffers of an EncoderDecoder's plan, from what its steps use: step 0 (encode) writes the
/// memory with the encoder's scratch; step 1 (a decode step) reads the memory's cross-attention
/// (prepared from it), embeds one target row, runs the decoder with its step scratch and writes
/// the log-probabilities.
template <class M>
struct Parts;
template <class SrcEmbed, class TgtEmbed, class Encoder, class Decoder, class Gen>
struct Parts<EncoderDecoder<SrcEmbed, TgtEmbed, Encoder, Decoder, Gen>> {
  static constexpr index_t encoder_scratch = Encoder::scratch_floats,
                           decoder_step_scratch = Decoder::step_scratch_floats;
};

template <class M>
constexpr std::array<BufferUse, M::kBuffers> encdec_uses() {
  std::array<BufferUse, M::kBuffers> uses{};
  uses[M::kMemory] = {M::src_len * M::d_model, 0, 1};
  uses[M::kEncScratch] = {Parts<M>::encoder_scratch, 0, 0};
  uses[M::kRow] = {M::d_model, 1, 1};
  uses[M::kStepScratch] = {Parts<M>::decoder_step_scratch, 1, 1};
  uses[M::kLogits] = {M::tgt_vocab, 1, 1};
  return uses;
}

template <class M>
constexpr PlanFault encdec_fault() {
  return find_plan_fault(encdec_uses<M>(), M::plan.offset, M::plan.arena_floats);
}

// ---- real plans --------------------------------------------------------------------------------
template <index_t L>
using Enc = EncoderStack<EncoderLayer<L, 16, 2, 32>, 2>;
#define STF_CLASSIFIER_LAYERS                                                                    \
  8, Named<"src_embed", Embedding<20, 16>>, PositionalEncoding<8, 16>, Named<"encoder", Enc<8>>, \
      Named<"", Classifier<16, 5>>
using Classifier8 = Sequential<STF_CLASSIFIER_LAYERS>;
template <index_t L>
using EncL = EncoderStack<EncoderLayer<L, 24, 2, 48>, 3, true>;
// projections that change the width (not in place) next to in-place layers of several sizes
#define STF_MIXED_LAYERS                                                                                       \
  12, Classifier<24, 40>, FeedForward<12, 40, 80>, LayerNorm<40>, Classifier<40, 24>, EncL<12>, LayerNorm<24>, \
      Classifier<24, 7>
using Mixed12 = Sequential<STF_MIXED_LAYERS>;
#define STF_LM_LAYERS                                                                                     \
  32, Embedding<50, 64>, PositionalEncoding<32, 64>, EncoderStack<EncoderLayer<32, 64, 4, 128>, 3, true>, \
      Generator<64, 50>
using Lm32 = Sequential<STF_LM_LAYERS>;

// what a fault looks like, for the messages
const char* fault_name(PlanFault f) {
  switch (f.kind) {
    case PlanFault::none:
      return "none";
    case PlanFault::misaligned:
      return "misaligned";
    case PlanFault::past_arena:
      return "past the arena";
    case PlanFault::overlap:
      return "overlap";
  }
  return "?";
}

}  // namespace

TEST_CASE("real plans give disjoint bytes to buffers alive at the same step (compile time)", "[plan]") {
  STATIC_REQUIRE(sequential_fault<Classifier8, STF_CLASSIFIER_LAYERS>().kind == PlanFault::none);
  STATIC_REQUIRE(sequential_fault<Mixed12, STF_MIXED_LAYERS>().kind == PlanFault::none);
  STATIC_REQUIRE(sequential_fault<Lm32, STF_LM_LAYERS>().kind == PlanFault::none);
  STATIC_REQUIRE(encdec_fault<stf_demo::Model>().kind == PlanFault::none);
  STATIC_REQUIRE(encdec_fault<Transformer<10, 12, 13, 13, 32, 4, 64, 2>>().kind == PlanFault::none);
  STATIC_REQUIRE(encdec_fault<Transformer<10, 10, 11, 11, 32, 4, 64, 2, kAnnotated>>().kind == PlanFault::none);
  STATIC_REQUIRE(encdec_fault<Transformer<64, 48, 100, 120, 128, 8, 256, 3>>().kind == PlanFault::none);
  // the plans share bytes where they can: the classifier's arena is below one buffer per use,
  // and the byte counts are the arena's
  STATIC_REQUIRE(Classifier8::arena_bytes < Classifier8::arena_unplanned_bytes);
  STATIC_REQUIRE(Classifier8::arena_bytes == Classifier8::plan.arena_floats * sizeof(float));
  STATIC_REQUIRE(stf_demo::Model::arena_bytes == stf_demo::Model::plan.arena_floats * sizeof(float));
}

TEST_CASE("the plan check reports buffers forced to overlap, misaligned or past the arena", "[plan]") {
  // the demo model's plan, perturbed by hand: the log-probabilities moved onto the decoder's step
  // scratch (both alive while decoding)
  using M = stf_demo::Model;
  constexpr auto uses = encdec_uses<M>();
  constexpr auto onto = [](index_t moved, index_t target) {
    auto offset = M::plan.offset;
    offset[moved] = offset[target];
    return offset;
  };
  constexpr PlanFault f = find_plan_fault(uses, onto(M::kLogits, M::kStepScratch), M::plan.arena_floats);
  STATIC_REQUIRE(f.kind == PlanFault::overlap);
  STATIC_REQUIRE(((f.a == M::kStepScratch && f.b == M::kLogits) || (f.a == M::kLogits && f.b == M::kStepScratch)));
  // moved past the arena's end instead (and the arena grown): apart from everything, fine
  constexpr auto past_end = [] {
    auto offset = M::plan.offset;
    offset[M::kLogits] = M::plan.arena_floats;
    return offset;
  }();
  STATIC_REQUIRE(find_plan_fault(uses, past_end, M::plan.arena_floats + align_floats(M::tgt_vocab)).kind ==
                 PlanFault::none);
  STATIC_REQUIRE(find_plan_fault(uses, past_end, M::plan.arena_floats + M::tgt_vocab - 1).kind ==
                 PlanFault::past_arena);
  // two live buffers overlapping by one float only
  constexpr auto by_one = [] {
    auto offset = M::plan.offset;
    offset[M::kRow] = offset[M::kMemory] + M::src_len * M::d_model - 1;
    return offset;
  }();
  CHECK(fault_name(find_plan_fault(uses, by_one, M::plan.arena_floats + 1024)) == std::string("misaligned"));
  // (aligned, sharing one line with the memory's end)
  constexpr auto by_line = [] {
    auto offset = M::plan.offset;
    offset[M::kRow] = align_floats(offset[M::kMemory] + M::src_len * M::d_model) - kTensorAlign / sizeof(float);
    return offset;
  }();
  STATIC_REQUIRE(find_plan_fault(uses, by_line, M::plan.arena_floats + 1024).kind == PlanFault::overlap);
  // an arena one float short of the last buffer's end
  index_t end = 0;
  for (index_t i = 0; i < M::kBuffers; ++i) end = std::max(end, M::plan.offset[i] + uses[i].floats);
  CHECK(find_plan_fault(uses, M::plan.offset, end).kind == PlanFault::none);
  CHECK(find_plan_fault(uses, M::plan.offset, end - 1).kind == PlanFault::past_arena);
  // a Sequential plan with its first output moved onto the scratch of the node that reads it
  constexpr auto seq_uses = sequential_uses<STF_CLASSIFIER_LAYERS>();
  auto offset = Classifier8::plan.offset;
  // (buffers 0-3: the 4 nodes' outputs, 4-7 their scratch; nodes 1 and 2 work in place on
  // buffer 0, node 2 with its scratch, buffer 6; node 3 reads buffer 0 into buffer 3)
  offset[0] = offset[6];
  const PlanFault g = find_plan_fault(seq_uses, offset, Classifier8::plan.arena_floats);
  INFO("fault " << fault_name(g) << " between buffers " << g.a << " and " << g.b);
  CHECK(g.kind == PlanFault::overlap);
  CHECK(g.a == 0);  // with node 2's scratch, or with node 3's output that shares its bytes
  CHECK((g.b == 6 || g.b == 3));
}

namespace {

/// A layer that records the buffers Sequential hands it, then runs as L.
struct Handed {
  const float* in;
  float* out;
  float* scratch;
  index_t in_floats, out_floats, scratch_floats;
  bool in_place;
};
std::vector<Handed> g_handed;

template <class L>
struct Recorded : L {
  Status apply(const float* in, float* out, float* scratch, const RunContext& ctx) const {
    g_handed.push_back({in, out, scratch, ctx.rows * L::in_cols, ctx.rows * L::out_cols, L::scratch_floats,
                        L::in_place && L::in_cols == L::out_cols});
    return L::apply(in, out, scratch, ctx);
  }
};

bool disjoint(const float* a, index_t na, const float* b, index_t nb) {
  if (na == 0 || nb == 0) return true;
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return pa + na * sizeof(float) <= pb || pb + nb * sizeof(float) <= pa;
}

/// Runs a Sequential of Recorded layers on zero weights and checks each step's buffers: its
/// scratch apart from its input and output, its input apart from its output unless it works in
/// place (then the same address), every buffer aligned and inside the model, each step's input
/// the previous step's output.
template <class S>
void check_handed(S& model, const float* input, const int* tokens, index_t rows) {
  std::vector<float> zeros(S::param_count, 0.0f);
  index_t offset = 0;
  model.visit([&](const Name&, ParamRef r) {
    *r.data = zeros.data() + offset;
    offset += r.size();
  });
  g_handed.clear();
  REQUIRE(model.forward(input, RunContext{tokens, rows}) == Status::ok);
  REQUIRE(g_handed.size() == S::n_layers);
  const auto lo = reinterpret_cast<std::uintptr_t>(&model), hi = lo + sizeof(S);
  auto inside = [&](const float* p, index_t n) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return n == 0 || (a >= lo && a + n * sizeof(float) <= hi && a % kTensorAlign == 0);
  };
  for (index_t k = 0; k < g_handed.size(); ++k) {
    const Handed& h = g_handed[k];
    INFO("step " << k);
    CHECK(disjoint(h.scratch, h.scratch_floats, h.in, k == 0 ? 0 : h.in_floats));
    CHECK(disjoint(h.scratch, h.scratch_floats, h.out, h.out_floats));
    if (k > 0 && h.in_place)
      CHECK(h.in == h.out);
    else if (k > 0)
      CHECK(disjoint(h.in, h.in_floats, h.out, h.out_floats));
    CHECK(inside(h.out, h.out_floats));
    CHECK(inside(h.scratch, h.scratch_floats));
    if (k > 0) CHECK(h.in == g_handed[k - 1].out);
  }
  CHECK(model.output().data == g_handed.back().out);
}

}  // namespace

TEST_CASE("each layer of a Sequential gets scratch and output apart from its input (run time)", "[plan]") {
  {
    using S = Sequential<8, Recorded<Embedding<20, 16>>, Recorded<PositionalEncoding<8, 16>>, Recorded<Enc<8>>,
                         Recorded<Classifier<16, 5>>>;
    STATIC_REQUIRE(S::arena_bytes == Classifier8::arena_bytes);
    static S model;
    const int tokens[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    check_handed(model, nullptr, tokens, 8);
  }
  {
    using S = Sequential<12, Recorded<Classifier<24, 40>>, Recorded<FeedForward<12, 40, 80>>, Recorded<LayerNorm<40>>,
                         Recorded<Classifier<40, 24>>, Recorded<EncL<12>>, Recorded<LayerNorm<24>>,
                         Recorded<Classifier<24, 7>>>;
    STATIC_REQUIRE(S::arena_bytes == Mixed12::arena_bytes);
    static S model;
    std::vector<float> x(12 * 24, 0.5f);
    check_handed(model, x.data(), nullptr, 12);
  }
}
