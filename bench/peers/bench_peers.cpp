// stf::EncoderLayer against peers at the benchmark plan's shapes (bench/plan.hpp: SeqLen, DModel, NHeads, DFf), with
// the same weights and input, plus the FMA peak of this core. Google Benchmark; names are
//   EncoderLayer/stf.<variant>/<S>x<D>x<H>x<F>  the kernel variant this build's flags select
//                                               (bench_stf_<isa> time the other x86 variants)
//   EncoderLayer/eigen/<S>x<D>x<H>x<F>          the Eigen peer (eigen_encoder.hpp)
//   DecoderStep/eigen/<T>x<M>x<D>x<H>x<F>       the Eigen decoder step (eigen_step.hpp) at the last
//                                               of T positions, as DecoderStep/stf.<variant>
//   EncoderLayer/onednn/<S>x<D>x<H>x<F>         the oneDNN peer (dnnl_peer.cpp; where the build found
//                                               oneDNN), checked against stf::EncoderLayer to 1e-5
//                                               before it is timed
//   FmaPeak/<isa>/<chains>chains                isa: scalar, avx2 (256-bit), avx512 (512-bit), when
//                                               the CPU has it
//   Gemm/<impl>/<M>x<K>x<N>                     the layer's matrix products alone: stf.<variant>
//                                               against OpenBLAS's sgemm (gemm_peers.cpp)
//   Paired/EncoderLayer/<S>x<D>x<H>x<F>         stf.<variant>, its peers and the widest FMA peak
//                                               timed in turn, in short slots, round after round:
//                                               per round the peers' speed ratios and stf's share
//                                               of the peak, their medians and quartiles as
//                                               counters (see register_paired)
// Counters: FLOP/s (see stf_peers::encoder_flops), bytes (bytes touched per forward, see
// stf_peers::encoder_bytes) and bytes_per_second. bench/run_bench.sh runs it and writes the report.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../plan.hpp"
#include "bench_support.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define STF_BENCH_X86 1
#endif

#ifndef STF_BENCH_BUILD
#define STF_BENCH_BUILD ""
#endif

namespace {
using stf::index_t;

/// Benchmarks skipped because a peer failed its check (weights not bound, output differs from
/// stf's): main exits non-zero, so the peers' smoke ctest fails on a wrong peer.
int g_failed_checks = 0;

template <index_t S, index_t D, index_t H, index_t F>
void register_eigen() {
  using Layer = stf::EncoderLayer<S, D, H, F>;
  constexpr double flops = stf_peers::encoder_flops(S, D, F);
  constexpr double bytes = stf_peers::encoder_bytes(Layer::Params::param_count, S, D);
  const std::string name = "EncoderLayer/eigen/" + stf_peers::shape_name(S, D, H, F);
  benchmark::RegisterBenchmark(name.c_str(), [](benchmark::State& state) {
    typename Layer::Params params;  // the stf schema, to bind the same weights as for stf
    const auto weights = stf_peers::random_params(params);
    stf_peers::EncoderWeights w;
    stf_peers::PlainCopies plain;
    if (!stf_peers::peer_weights_of<Layer>(params, w, plain)) {
      ++g_failed_checks;
      state.SkipWithError("the Eigen peer's weights do not bind by name");
      return;
    }
    auto peer = stf_peers::make_eigen_encoder({int(S), int(D), int(H), int(F)}, w);
    const auto x = stf_peers::random_input(S * D);
    stf_bench::AlignedFloats y(S * D);
    for (auto _ : state) {
      peer->forward(x.data(), y.data(), int(S));
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    stf_peers::set_counters(state, flops, bytes);
  });
}

template <index_t T, index_t M, index_t D, index_t H, index_t F>
void register_eigen_step() {
  using Layer = stf::DecoderLayer<T, M, D, H, F>;
  constexpr index_t pos = T - 1;  // the last position, as DecoderStep/stf.<variant>
  constexpr double flops = stf_peers::decoder_step_flops(pos, M, D, F);
  const std::string name = "DecoderStep/eigen/" + stf_peers::decoder_step_name(T, M, D, H, F);
  benchmark::RegisterBenchmark(name.c_str(), [](benchmark::State& state) {
    typename Layer::Params params;  // the stf schema, to bind the same weights as for stf
    const auto weights = stf_peers::random_params(params);
    stf_peers::DecoderWeights w;
    stf_peers::PlainCopies plain;
    if (!stf_peers::decoder_peer_weights_of<Layer>(params, w, plain)) {
      ++g_failed_checks;
      state.SkipWithError("the Eigen step's weights do not bind by name");
      return;
    }
    auto peer = stf_peers::make_eigen_decoder_step({int(T), int(M), int(D), int(H), int(F)}, w);
    const auto memory = stf_peers::random_input(M * D), x = stf_peers::random_input(D);
    stf_bench::AlignedFloats y(D);
    peer->prepare_memory(memory.data());
    for (index_t p = 0; p < pos; ++p) peer->step(x.data(), int(p), y.data());
    for (auto _ : state) {  // rewrites position pos's key and value with the same values each time
      peer->step(x.data(), int(pos), y.data());
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  });
}

#ifdef STF_BENCH_HAVE_DNNL
/// The attention form EncoderLayer/onednn times; STF_BENCH_DNNL_ATTENTION=per_head times the other
/// (bench/peers/README.md says which is faster here).
stf_peers::DnnlAttention dnnl_attention() {
  const char* v = std::getenv("STF_BENCH_DNNL_ATTENTION");
  return v && std::string(v) == "per_head" ? stf_peers::DnnlAttention::per_head : stf_peers::DnnlAttention::batched;
}

/// "" where the oneDNN peer computes what stf's layer computes (kDnnlTolerance, on the benchmark input
/// and on it times 8: peaked attention, see stf_peers::peer_diff), else why not.
template <class Layer>
std::string dnnl_mismatch(const Layer& layer, stf_peers::EncoderPeer& peer) {
  for (const float input_scale : {1.0f, 8.0f}) {
    const stf_peers::PeerDiff diff = stf_peers::peer_diff(layer, peer, Layer::seq_len, input_scale);
    if (!diff.within(stf_peers::kDnnlTolerance))
      return "the oneDNN peer differs from stf::EncoderLayer: relative " + std::to_string(diff.relative());
  }
  return "";
}

template <index_t S, index_t D, index_t H, index_t F>
void register_dnnl() {
  using Layer = stf::EncoderLayer<S, D, H, F>;
  constexpr double flops = stf_peers::encoder_flops(S, D, F);
  constexpr double bytes = stf_peers::encoder_bytes(Layer::Params::param_count, S, D);
  const std::string name = "EncoderLayer/onednn/" + stf_peers::shape_name(S, D, H, F);
  benchmark::RegisterBenchmark(name.c_str(), [](benchmark::State& state) {
    auto layer = std::make_unique<Layer>();  // stf's layer: the same weights, and the oracle
    const auto weights = stf_peers::random_params(layer->params);
    stf_peers::EncoderWeights w;
    stf_peers::PlainCopies plain;
    if (!stf_peers::peer_weights_of<Layer>(layer->params, w, plain)) {
      ++g_failed_checks;
      state.SkipWithError("the oneDNN peer's weights do not bind by name");
      return;
    }
    const stf_peers::DnnlAttention mode = dnnl_attention();
    auto peer = stf_peers::make_dnnl_encoder({int(S), int(D), int(H), int(F)}, w, mode);
    // not timed unless it computes what stf::EncoderLayer computes
    if (const std::string msg = dnnl_mismatch(*layer, *peer); !msg.empty()) {
      ++g_failed_checks;
      state.SkipWithError(msg.c_str());
      return;
    }
    const auto x = stf_peers::random_input(S * D);
    stf_bench::AlignedFloats y(S * D);
    for (auto _ : state) {
      peer->forward(x.data(), y.data(), int(S));
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    state.SetLabel(mode == stf_peers::DnnlAttention::batched ? "attention batched over heads" : "attention per head");
    stf_peers::set_counters(state, flops, bytes);
  });
}
#endif

/// An FMA peak loop (FmaPeak/<isa>): the kernel, its FLOP per call, and its isa's name.
struct PeakLoop {
  float (*kernel)(std::int64_t) = nullptr;
  double flops = 0;
  const char* isa = "none";
};

// ---- FMA peak --------------------------------------------------------------------------------------
// Independent chains c = c·a + b (a = 1 - 1e-6, b = 1e-6: c stays at 1, no denormals), one FMA per
// chain per step, all chains in registers. With 2 FMA ports of latency 4 a core needs >= 8 chains in
// flight; 12 (16 for AVX-512, which has 32 registers) leaves room. A multiply-add counts as 2 FLOP.
constexpr std::int64_t kFmaSteps = 1 << 14;

#ifdef STF_BENCH_X86
constexpr int kScalarChains = 12, kAvx2Chains = 12, kAvx512Chains = 16;
volatile float fma_seed = 1.0f;  // opaque start: c = 1 is a fixed point the compiler could fold

// Scalar: one float per FMA (kept from being vectorized into the packed kernels below).
#if defined(__clang__)
#define STF_BENCH_NO_VECTORIZE
#else
#define STF_BENCH_NO_VECTORIZE optimize("no-tree-vectorize"),
#endif
__attribute__((target("fma"), STF_BENCH_NO_VECTORIZE noinline)) float fma_chains_scalar(std::int64_t steps) {
  float c[kScalarChains];
  for (float& v : c) v = fma_seed;
  const float a = 1.0f - 1e-6f, b = 1e-6f;
  for (std::int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 16
    for (float& v : c) v = __builtin_fmaf(v, a, b);
  }
  float sum = 0.0f;
  for (float v : c) sum += v;
  return sum;
}

__attribute__((target("avx2,fma"), noinline)) float fma_chains_avx2(std::int64_t steps) {
  __m256 c[kAvx2Chains];
  for (__m256& v : c) v = _mm256_set1_ps(fma_seed);
  const __m256 a = _mm256_set1_ps(1.0f - 1e-6f), b = _mm256_set1_ps(1e-6f);
  for (std::int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 16
    for (__m256& v : c) v = _mm256_fmadd_ps(v, a, b);
  }
  __m256 sum = _mm256_setzero_ps();
  for (__m256 v : c) sum = _mm256_add_ps(sum, v);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  return lanes[0];
}

__attribute__((target("avx512f"), noinline)) float fma_chains_avx512(std::int64_t steps) {
  __m512 c[kAvx512Chains];
  for (__m512& v : c) v = _mm512_set1_ps(fma_seed);
  const __m512 a = _mm512_set1_ps(1.0f - 1e-6f), b = _mm512_set1_ps(1e-6f);
  for (std::int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 16
    for (__m512& v : c) v = _mm512_fmadd_ps(v, a, b);
  }
  __m512 sum = _mm512_setzero_ps();
  for (__m512 v : c) sum = _mm512_add_ps(sum, v);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return lanes[0];
}

/// Registers FmaPeak/<isa>/<chains>chains; returns its loop.
PeakLoop register_fma_peak(const char* isa, int chains, int lanes, float (*kernel)(std::int64_t)) {
  const std::string name = std::string("FmaPeak/") + isa + "/" + std::to_string(chains) + "chains";
  const double flops = 2.0 * lanes * chains * static_cast<double>(kFmaSteps);
  benchmark::RegisterBenchmark(name.c_str(), [flops, kernel](benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(kernel(kFmaSteps));
    state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  });
  return {kernel, flops, isa};
}

/// Registers the FMA peaks this CPU runs; `widest` receives the widest ISA's loop (the paired
/// rounds' peak). Returns their ISAs' names.
std::string register_fma_peaks(PeakLoop& widest) {
  __builtin_cpu_init();
  std::string isas;
  if (__builtin_cpu_supports("fma")) {
    register_fma_peak("scalar", kScalarChains, 1, fma_chains_scalar);
    isas += "scalar";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    widest = register_fma_peak("avx2", kAvx2Chains, 8, fma_chains_avx2);
    isas += " avx2";
  } else {
    std::fprintf(stderr, "bench_peers: no AVX2+FMA on this CPU, FmaPeak/avx2 skipped\n");
  }
  if (__builtin_cpu_supports("avx512f")) {
    widest = register_fma_peak("avx512", kAvx512Chains, 16, fma_chains_avx512);
    isas += " avx512";
  } else {
    std::fprintf(stderr, "bench_peers: no AVX-512F on this CPU, FmaPeak/avx512 skipped\n");
  }
  return isas;
}
#else
std::string register_fma_peaks(PeakLoop&) {
  std::fprintf(stderr, "bench_peers: FmaPeak is only written for x86 (AVX2/AVX-512), skipped\n");
  return "none";
}
#endif
// ---- paired rounds -----------------------------------------------------------------------------
// On a shared virtual machine the core's speed moves between levels (bench/ab/ab.sh: ~40 % apart,
// several times a minute), so two latencies measured seconds apart, even with their repetitions
// interleaved, give ratios whose spread hides a few percent. Timed in turn in slots a few
// milliseconds long, the implementations of a round see one level, and the round's ratios do not
// depend on it: Paired/EncoderLayer/<shape> times stf's layer, each peer and the widest FMA peak
// loop that way and reports, per ratio, the median over the rounds and its quartiles.

/// Mean nanoseconds per call of f over a slot of at least slot_ms (whole batches of calls). The clock
/// is read once a batch, and a batch doubles until it lasts kBatchNs: a read costs ~24 ns on the
/// KVM guests measured (the vDSO's steady_clock), 2-3 % of the layer at 10x16 when read once a call,
/// and at most ~0.25 % of a batch.
double slot_ns(const std::function<void()>& f, double slot_ms) {
  using clock = std::chrono::steady_clock;
  constexpr double kBatchNs = 10000.0;
  const auto t0 = clock::now();
  const auto until = t0 + std::chrono::duration<double, std::milli>(slot_ms);
  std::int64_t n = 0, batch = 1;
  auto t = t0;
  do {
    for (std::int64_t i = 0; i < batch; ++i) f();
    n += batch;
    const auto t1 = clock::now();
    if (std::chrono::duration<double, std::nano>(t1 - t).count() < kBatchNs) batch *= 2;
    t = t1;
  } while (t < until);
  return std::chrono::duration<double, std::nano>(t - t0).count() / static_cast<double>(n);
}

/// Sets counters name, name_q1 and name_q3: the median and quartiles of v (nearest rank).
void set_quartiles(benchmark::State& state, const std::string& name, std::vector<double> v) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  state.counters[name] = v[(n - 1) / 2];
  state.counters[name + "_q1"] = v[(n - 1) / 4];
  state.counters[name + "_q3"] = v[(3 * (n - 1) + 3) / 4];
}

/// Rounds and slot length: STF_BENCH_PAIR_ROUNDS (default 15), STF_BENCH_PAIR_MS (default 10).
int pair_rounds() {
  const char* v = std::getenv("STF_BENCH_PAIR_ROUNDS");
  const int n = v ? std::atoi(v) : 15;
  return n > 0 ? n : 15;
}
double pair_ms() {
  const char* v = std::getenv("STF_BENCH_PAIR_MS");
  const double ms = v ? std::atof(v) : 10.0;
  return ms > 0 ? ms : 10.0;
}

/// Paired/EncoderLayer/<shape>: one iteration of pair_rounds() rounds; each round times stf's layer
/// (the build's variant, as EncoderLayer/stf.<variant>), the Eigen peer, the oneDNN peer (where
/// built; checked against stf's layer first, as EncoderLayer/onednn) and the widest FMA peak loop,
/// one slot each, starting each round with the next of them. Counters (median over the rounds, and
/// _q1, _q3): speed_eigen and speed_onednn, the peer's latency / stf's (above 1: stf faster);
/// peak_fraction, stf's FLOP/s over the peak loop's in the same round; stf_ns, stf's latency; and
/// rounds. Nothing is reported for a peer that failed its check or its binding.
template <index_t S, index_t D, index_t H, index_t F>
void register_paired(const PeakLoop& peak) {
  using Layer = stf::EncoderLayer<S, D, H, F>;
  constexpr double flops = stf_peers::encoder_flops(S, D, F);
  const std::string name = "Paired/EncoderLayer/" + stf_peers::shape_name(S, D, H, F);
  benchmark::RegisterBenchmark(name.c_str(), [peak, name](benchmark::State& state) {
    auto layer = std::make_unique<Layer>();
    const auto weights = stf_peers::random_params(layer->params);
    const auto x = stf_peers::random_input(S * D);
    stf_bench::AlignedFloats y_stf(S * D), y_eigen(S * D), y_dnnl(S * D), scratch(Layer::scratch_floats);
    stf_peers::EncoderWeights w;
    stf_peers::PlainCopies plain;
    const bool bound = stf_peers::peer_weights_of<Layer>(layer->params, w, plain);
    std::vector<std::string> names;
    std::vector<std::function<void()>> runs;
    names.push_back("stf");
    runs.push_back([&] {
      layer->run(x.data(), y_stf.data(), S, scratch.data());
      benchmark::DoNotOptimize(y_stf.data());
      benchmark::ClobberMemory();
    });
    std::unique_ptr<stf_peers::EncoderPeer> eigen, dnnl;
    if (bound) {
      eigen = stf_peers::make_eigen_encoder({int(S), int(D), int(H), int(F)}, w);
      names.push_back("eigen");
      runs.push_back([&] {
        eigen->forward(x.data(), y_eigen.data(), int(S));
        benchmark::DoNotOptimize(y_eigen.data());
        benchmark::ClobberMemory();
      });
#ifdef STF_BENCH_HAVE_DNNL
      dnnl = stf_peers::make_dnnl_encoder({int(S), int(D), int(H), int(F)}, w, dnnl_attention());
      const std::string mismatch = dnnl_mismatch(*layer, *dnnl);
      if (mismatch.empty()) {
        names.push_back("onednn");
        runs.push_back([&] {
          dnnl->forward(x.data(), y_dnnl.data(), int(S));
          benchmark::DoNotOptimize(y_dnnl.data());
          benchmark::ClobberMemory();
        });
      } else {
        ++g_failed_checks;
        std::fprintf(stderr, "%s: %s, left out\n", name.c_str(), mismatch.c_str());
      }
#endif
    } else {
      ++g_failed_checks;
      std::fprintf(stderr, "%s: the peers' weights do not bind by name, left out\n", name.c_str());
    }
    if (peak.kernel) {
      names.push_back("peak");
      runs.push_back([&] { benchmark::DoNotOptimize(peak.kernel(kFmaSteps)); });
    }
    const int rounds = pair_rounds();
    const double ms = pair_ms();
    const std::size_t k = runs.size();
    std::vector<std::vector<double>> ns(k);
    for (auto _ : state) {
      for (auto& f : runs) f();  // (warm: caches, and each peer's first-call set-up)
      for (int r = 0; r < rounds; ++r)
        for (std::size_t j = 0; j < k; ++j) {
          const std::size_t i = (static_cast<std::size_t>(r) + j) % k;
          ns[i].push_back(slot_ns(runs[i], ms));
        }
    }
    set_quartiles(state, "stf_ns", ns[0]);
    for (std::size_t i = 1; i < k; ++i) {
      std::vector<double> ratio(rounds);
      for (int r = 0; r < rounds; ++r)
        ratio[r] = names[i] == "peak" ? (flops / ns[0][r]) / (peak.flops / ns[i][r]) : ns[i][r] / ns[0][r];
      set_quartiles(state, names[i] == "peak" ? std::string("peak_fraction") : "speed_" + names[i], ratio);
    }
    state.counters["rounds"] = rounds;
    state.SetLabel(std::string("peak: ") + peak.isa);
  })->Iterations(1);
}

}  // namespace

int main(int argc, char** argv) {
  const char* variant = stf_peers::register_stf_encoder_benchmarks();
  namespace plan = stf_bench::plan;
  plan::for_each<plan::kEncoderLayers>(
      []<plan::EncoderShape Sh>() { register_eigen<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff>(); });
  plan::for_each<plan::kDecoderSteps>([]<plan::DecoderStepShape Sh>() {
    register_eigen_step<Sh.positions, Sh.memory, Sh.d_model, Sh.n_heads, Sh.d_ff>();
  });
#ifdef STF_BENCH_HAVE_DNNL
  plan::for_each<plan::kEncoderLayers>(
      []<plan::EncoderShape Sh>() { register_dnnl<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff>(); });
  benchmark::AddCustomContext("onednn_peer", stf_peers::dnnl_build_info());
#else
  benchmark::AddCustomContext("onednn_peer", "not built (oneDNN not found: apt-get install libdnnl-dev)");
#endif
  PeakLoop peak;
  benchmark::AddCustomContext("fma_peak_isas", register_fma_peaks(peak));
  plan::for_each<plan::kEncoderLayers>(
      [&peak]<plan::EncoderShape Sh>() { register_paired<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff>(peak); });
  benchmark::AddCustomContext("openblas", stf_peers::register_gemm_benchmarks());
  benchmark::AddCustomContext("stf_kernels", variant);
  benchmark::AddCustomContext("stf_build", STF_BENCH_BUILD);
  benchmark::AddCustomContext("eigen_peer", stf_peers::eigen_build_info());
  stf_peers::add_formula_context();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (g_failed_checks > 0) {
    std::fprintf(stderr, "bench_peers: %d peer benchmark(s) skipped: a peer failed its check (see above)\n",
                 g_failed_checks);
    return 1;
  }
  return 0;
}
