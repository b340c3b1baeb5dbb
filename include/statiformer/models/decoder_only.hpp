// statiformer — decoder-only (GPT-shaped) model: prefill, incremental decoding over a fixed-capacity
// key/value cache, greedy and seeded sampling without the heap.
#pragma once

#include <algorithm>
#include <cstdint>

#include <statiformer/graph/memory_plan.hpp>
#include <statiformer/graph/summary.hpp>
#include <statiformer/layers/causal_layer.hpp>
#include <statiformer/layers/embedding.hpp>
#include <statiformer/layers/heads.hpp>

namespace stf {

/// A small deterministic random number generator: the same numbers on every platform (integer
/// arithmetic only). The seed goes through SplitMix64 (so seed 0 is fine); each draw is one
/// xorshift64* step. Floats from bits: uniform() = float(x >> 40) · 2⁻²⁴, the top 24 bits as a
/// float in [0, 1), exactly (no rounding).
struct Rng {
  std::uint64_t state = 0;

  static constexpr std::uint64_t splitmix64(std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  constexpr explicit Rng(std::uint64_t seed = 0) : state(splitmix64(seed)) {
    if (state == 0) state = 0x9E3779B97F4A7C15ull;  // xorshift's one fixed point
  }
  constexpr std::uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  constexpr float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
};

/// How `generate` picks each new token.
/// - greedy: the argmax of the log-probabilities (the first of equal maxima).
/// - sampling: the top_k tokens by log-probability (ties: the lower id first), weights
///   w = exp((l - l_max) / temperature) (the kernels' exp: the same bits on every variant), summed in
///   that order; u = Rng::uniform() · sum, and the token is the first whose running sum exceeds u
///   (the last candidate if rounding leaves none). One draw per token; the Rng is seeded per call.
/// end_token >= 0 stops generation after that token is produced.
struct Sampler {
  bool greedy = true;
  float temperature = 1.0f;  ///< sampling only: finite and > 0
  index_t top_k = 0;         ///< sampling only: 1 .. Vocab (top_k = 1 is greedy)
  std::uint64_t seed = 0;
  int end_token = -1;

  static constexpr Sampler argmax(int end_token = -1) { return {true, 1.0f, 0, 0, end_token}; }
  static constexpr Sampler sample(float temperature, index_t top_k, std::uint64_t seed, int end_token = -1) {
    return {false, temperature, top_k, seed, end_token};
  }
};

/// Which log-probabilities `prefill` writes.
enum class PrefillOutput : std::uint8_t {
  last,       ///< the next token's, after the last prompt position: [Vocab]
  every_row,  ///< every prompt position's (row i: the distribution of token i + 1): [n, Vocab]
};

/// tokens → Embedding·√D + positional encoding → N causal layers (+ final norm) → Generator
/// (log_softmax). Decoding is incremental: `prefill` runs a prompt at once and fills every layer's
/// key/value cache, each `step` runs one position over the cache (O(position) attention).
/// Prefill then steps gives the same bits as steps alone. All storage is inside the object
/// (`arena_bytes` + `state_bytes`): declare it static on a microcontroller. Not thread-safe.
template <class EmbedT, class StackT, class GenT>
class DecoderOnly {
 public:
  using Embed = EmbedT;
  using Stack = StackT;
  using Gen = GenT;
  using Layer = typename Stack::Layer;
  using Cache = typename Stack::Cache;

  static constexpr index_t seq_len = Stack::seq_len, d_model = Stack::d_model, vocab = Embed::vocab,
                           n_layers = Stack::n_layers;
  static_assert(check::embedding_dmodel<Embed::d_model, Stack::d_model>());
  static_assert(check::generator_vocab<Gen::vocab, Embed::vocab>());
  static_assert(check::input_dmodel<Gen::d_model, Stack::d_model>());

  using PosEnc = PositionalEncoding<seq_len, d_model>;

  /// Names: embed.weight, layers.<i>.{self_attn.{q,k,v,o},ff.linear{1,2}}.{weight,bias},
  /// layers.<i>.norm{1,2}.*, norm.* (with a final norm), generator.proj.*.
  struct Params {
    using Owner = DecoderOnly;  ///< whose hyperparameters these are (io/hparams.hpp)
    typename Embed::Params embed;
    typename Stack::Params stack;
    typename Gen::Params generator;
    static constexpr index_t param_count =
        Embed::Params::param_count + Stack::Params::param_count + Gen::Params::param_count;
    static constexpr index_t param_bytes = param_bytes_of<typename Embed::Params>() +
                                           param_bytes_of<typename Stack::Params>() +
                                           param_bytes_of<typename Gen::Params>();
    template <class F>
    void visit(F&& f, const Name& prefix = {}) {
      embed.visit(f, prefix / "embed");
      stack.visit(f, prefix);
      generator.visit(f, prefix / "generator");
    }
  };

  // ---- memory plan: step 0 = prefill, 1 = decode --------------------------------------------
  enum Buffer : index_t { kRows, kScratch, kLogits, kWeights, kBuffers };
  static constexpr MemoryPlan<kBuffers> plan = plan_memory<kBuffers>({{
      {seq_len * d_model, 0, 1},      // the rows being run (prefill: the prompt; step: one)
      {Stack::scratch_floats, 0, 1},  // layer scratch (a step takes step_scratch_floats of it)
      {vocab, 0, 1},                  // log-probabilities of the last position
      {vocab, 1, 1},                  // sampling weights
  }});

  // ---- footprint (all constexpr) ----------------------------------------------------------------
  static constexpr index_t param_count = Params::param_count;
  static constexpr index_t weight_bytes = param_bytes_of<Params>();       ///< flash (or RAM if loaded)
  static constexpr index_t const_bytes = sizeof(typename PosEnc::Table);  ///< PE table, flash
  /// RAM, planned; with the sampler's candidate order (vocab indices).
  static constexpr index_t arena_bytes = plan.arena_floats * sizeof(float) + vocab * sizeof(index_t);
  static constexpr index_t arena_unplanned_bytes = plan.sum_floats * sizeof(float) + vocab * sizeof(index_t);
  static constexpr index_t state_bytes = n_layers * sizeof(Cache);  ///< RAM, K/V caches

  Params params{};

  /// Runs tokens [0, n) at positions [0, n) (rewinding: what was cached is dropped) and fills the
  /// caches; the next step is at position n. logprobs (may be null): see PrefillOutput. Fails,
  /// writing nothing and keeping the position, if n is 0 or over seq_len (invalid_length) or a
  /// token is out of range.
  Status prefill(const int* tokens, index_t n, float* logprobs = nullptr, PrefillOutput which = PrefillOutput::last) {
    if (n == 0 || n > seq_len) return Status::invalid_length;
    if (Status st = Embed::check_tokens(tokens, n); st != Status::ok) return st;
    run_rows(tokens, 0, n, logprobs, which);
    return Status::ok;
  }

  /// Feeds the token at the current position and writes the next token's log-probabilities into
  /// logprobs [vocab] (may be null: only the caches advance). Fails (writing nothing) past the
  /// capacity or on a bad token id.
  Status step(int token, float* logprobs) {
    if (pos_ >= seq_len) return Status::capacity_exceeded;
    if (Status st = Embed::check_tokens(&token, 1); st != Status::ok) return st;
    run_rows(&token, pos_, 1, logprobs, PrefillOutput::last);
    return Status::ok;
  }

  /// Rewinds to position 0 (the next step starts a new sequence).
  void reset() { pos_ = 0; }
  index_t position() const { return pos_; }

  /// Prefills the prompt, then produces up to max_new tokens into out (max_new ints), feeding each
  /// back but the last; out_len receives how many (fewer when sampler.end_token is produced,
  /// which is included). Needs n_prompt + max_new - 1 <= seq_len (every fed token has a position).
  /// Fails, writing nothing (out, out_len and the caches untouched), on an empty or too long
  /// prompt (invalid_length), max_new beyond the capacity (capacity_exceeded), a token out of
  /// range, or sampler settings out of range (invalid_sampler).
  Status generate(const int* prompt, index_t n_prompt, index_t max_new, int* out, index_t& out_len,
                  const Sampler& sampler = Sampler{}) {
    if (n_prompt == 0 || n_prompt > seq_len) return Status::invalid_length;
    if (max_new > seq_len + 1 - n_prompt) return Status::capacity_exceeded;
    if (Status st = Embed::check_tokens(prompt, n_prompt); st != Status::ok) return st;
    if (Status st = check_sampler(sampler); st != Status::ok) return st;
    if (max_new == 0) {
      out_len = 0;
      return Status::ok;
    }
    Rng rng(sampler.seed);
    float* logprobs = buffer(kLogits);
    run_rows(prompt, 0, n_prompt, logprobs, PrefillOutput::last);
    index_t n = 0;
    for (;;) {
      const int token = sampler.greedy ? argmax(logprobs) : sample(logprobs, sampler, rng);
      out[n++] = token;
      if (n == max_new || token == sampler.end_token) break;
      run_rows(&token, pos_, 1, logprobs, PrefillOutput::last);
    }
    out_len = n;
    return Status::ok;
  }

  static Status check_sampler(const Sampler& s) {
    if (s.greedy) return Status::ok;
    if (s.top_k == 0 || s.top_k > vocab) return Status::invalid_sampler;
    if (!(s.temperature > 0.0f) || !(s.temperature <= 3.4e38f)) return Status::invalid_sampler;  // NaN, inf
    return Status::ok;
  }

  /// The first index of the largest log-probability.
  static int argmax(const float* logprobs) {
    index_t best = 0;
    for (index_t v = 1; v < vocab; ++v) best = logprobs[v] > logprobs[best] ? v : best;
    return static_cast<int>(best);
  }

  /// One token drawn from logprobs [vocab] by the rule of Sampler (settings already checked).
  int sample(const float* logprobs, const Sampler& s, Rng& rng) {
    index_t* order = order_;
    for (index_t v = 0; v < vocab; ++v) order[v] = v;
    const index_t k = s.top_k;
    std::partial_sort(order, order + k, order + vocab, [logprobs](index_t a, index_t b) {
      return logprobs[a] > logprobs[b] || (logprobs[a] == logprobs[b] && a < b);
    });
    float* w = buffer(kWeights);
    const float top = logprobs[order[0]];
    for (index_t i = 0; i < k; ++i) w[i] = (logprobs[order[i]] - top) / s.temperature;
    ActiveKernels::exp(w, w, k);
    float sum = 0.0f;
    for (index_t i = 0; i < k; ++i) sum += w[i];
    const float u = rng.uniform() * sum;
    float run = 0.0f;
    for (index_t i = 0; i < k; ++i) {
      run += w[i];
      if (run > u) return static_cast<int>(order[i]);
    }
    return static_cast<int>(order[k - 1]);
  }

  /// One row per named layer, as EncoderDecoder's: the embedding, each layer and the final norm,
  /// the generator, for one step at the last position (seq_len keys). See graph/summary.hpp.
  static constexpr index_t summary_rows = 1 + n_layers + (Stack::final_norm ? 1 : 0) + 1;
  static constexpr ModelSummary<summary_rows> summary_table() {
    ModelSummary<summary_rows> s{};
    index_t r = 0;
    const RowShape row = RowShape::matrix(1, d_model);
    s.rows[r++] = {"embed", "Embedding+PE", "step", RowShape::token_ids(1), row, Embed::Params::param_count, 0};
    for (index_t l = 0; l < n_layers; ++l)
      s.rows[r++] = {LayerPath("layers") / l,
                     Layer::name,
                     "step",
                     row,
                     row,
                     Layer::Params::param_count,
                     cost::multi_head(1, 1, seq_len, d_model) + cost::feed_forward(1, d_model, Layer::d_ff),
                     true,
                     false,
                     param_bytes_of<typename Layer::Params>()};
    if constexpr (Stack::final_norm)
      s.rows[r++] = {"norm", Stack::Norm::name, "step", row, row, Stack::Norm::Params::param_count, 0};
    s.rows[r++] = {"generator",
                   Gen::name,
                   "step",
                   row,
                   RowShape::matrix(1, vocab),
                   Gen::Params::param_count,
                   LayerCost<Gen>::mult_adds(1)};
    s.footprint = {param_count, weight_bytes, const_bytes, arena_bytes, arena_unplanned_bytes, state_bytes};
    return s;
  }

  /// Prints the torchinfo-like summary table through sink(const char*), one line at a time.
  template <class Sink>
  static void summary(Sink&& sink) {
    static constexpr auto table = summary_table();
    static_assert(table.params() == param_count, "DecoderOnly: every parameter is in one summary row");
    print_summary(table, sink);
  }

 private:
  float* buffer(Buffer b) { return arena_ + plan.offset[b]; }

  /// tokens (checked) at positions [first, first + n) through the model; the position becomes
  /// first + n. logprobs: null, the last row's [vocab], or every row's [n, vocab].
  void run_rows(const int* tokens, index_t first, index_t n, float* logprobs, PrefillOutput which) {
    float* rows = buffer(kRows);
    (void)Embed{params.embed}.run(tokens, n, rows);
    PosEnc::run(rows, n, first);
    Stack{params.stack}.run(rows, first, n, caches_, rows, buffer(kScratch));
    pos_ = first + n;
    if (!logprobs) return;
    if (which == PrefillOutput::every_row) {
      Gen{params.generator}.run(rows, n, logprobs);
      return;
    }
    float* out = buffer(kLogits);
    Gen{params.generator}.run(rows + (n - 1) * d_model, 1, out);
    if (out != logprobs)
      for (index_t v = 0; v < vocab; ++v) logprobs[v] = out[v];
  }

  alignas(kTensorAlign) float arena_[plan.arena_floats] = {};
  index_t order_[vocab] = {};
  Cache caches_[n_layers] = {};
  index_t pos_ = 0;
};

/// The usual shape of it: embedding, N causal layers with a final norm, generator.
template <index_t SeqLen, index_t Vocab, index_t DModel, index_t NHeads, index_t DFf, index_t NLayers,
          LayerOptions Opt = LayerOptions{}, bool FinalNorm = true>
using Gpt = DecoderOnly<Embedding<Vocab, DModel>,
                        CausalStack<CausalLayer<SeqLen, DModel, NHeads, DFf, Opt>, NLayers, FinalNorm>,
                        Generator<DModel, Vocab>>;

}  // namespace stf
