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
// Counters: FLOP/s (see stf_peers::encoder_flops), bytes (bytes touched per forward, see
// stf_peers::encoder_bytes) and bytes_per_second. bench/run_bench.sh runs it and writes the report.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
    for (const float input_scale : {1.0f, 8.0f}) {  // 8: peaked attention (stf_peers::peer_diff)
      const stf_peers::PeerDiff diff = stf_peers::peer_diff(*layer, *peer, S, input_scale);
      if (!diff.within(stf_peers::kDnnlTolerance)) {
        const std::string msg =
            "the oneDNN peer differs from stf::EncoderLayer: relative " + std::to_string(diff.relative());
        ++g_failed_checks;
        state.SkipWithError(msg.c_str());
        return;
      }
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

void register_fma_peak(const char* isa, int chains, int lanes, float (*kernel)(std::int64_t)) {
  const std::string name = std::string("FmaPeak/") + isa + "/" + std::to_string(chains) + "chains";
  const double flops = 2.0 * lanes * chains * static_cast<double>(kFmaSteps);
  benchmark::RegisterBenchmark(name.c_str(), [flops, kernel](benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(kernel(kFmaSteps));
    state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  });
}

std::string register_fma_peaks() {
  __builtin_cpu_init();
  std::string isas;
  if (__builtin_cpu_supports("fma")) {
    register_fma_peak("scalar", kScalarChains, 1, fma_chains_scalar);
    isas += "scalar";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    register_fma_peak("avx2", kAvx2Chains, 8, fma_chains_avx2);
    isas += " avx2";
  } else {
    std::fprintf(stderr, "bench_peers: no AVX2+FMA on this CPU, FmaPeak/avx2 skipped\n");
  }
  if (__builtin_cpu_supports("avx512f")) {
    register_fma_peak("avx512", kAvx512Chains, 16, fma_chains_avx512);
    isas += " avx512";
  } else {
    std::fprintf(stderr, "bench_peers: no AVX-512F on this CPU, FmaPeak/avx512 skipped\n");
  }
  return isas;
}
#else
std::string register_fma_peaks() {
  std::fprintf(stderr, "bench_peers: FmaPeak is only written for x86 (AVX2/AVX-512), skipped\n");
  return "none";
}
#endif
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
  benchmark::AddCustomContext("fma_peak_isas", register_fma_peaks());
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
