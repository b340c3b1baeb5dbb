// Latency of the layers (with the kernels the build's flags select) and of every kernel variant
// of the registry next to the naive reference (Google Benchmark), with FLOP/s counters.
// Layer shapes (SeqLen, DModel, NHeads, DFf) from the project's benchmark plan.
#include <benchmark/benchmark.h>

#include <boost/hana/for_each.hpp>

#include <string>

#include <memory>
#include <vector>

#include <statiformer/kernels/reference.hpp>
#include <statiformer/kernels/registry.hpp>
#include <statiformer/statiformer.hpp>

#include "bench_common.hpp"

namespace {
using namespace stf;

using stf_bench::random_input;
using stf_bench::random_params;

template <index_t S, index_t D, index_t H, index_t F>
void BM_EncoderLayer(benchmark::State& state) {
  auto layer = std::make_unique<EncoderLayer<S, D, H, F>>();
  auto w = random_params(layer->params);
  auto x = random_input(S * D);
  stf_bench::AlignedFloats y(S * D), scratch(EncoderLayer<S, D, H, F>::scratch_floats);
  for (auto _ : state) {
    layer->run(x.data(), y.data(), S, scratch.data());
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * S * D * D * 4 + 2.0 * 2 * S * S * D + 2.0 * 2 * S * D * F;
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

template <index_t S, index_t D, index_t H>
void BM_MultiHeadAttention(benchmark::State& state) {
  auto mha = std::make_unique<MultiHeadAttention<S, S, D, H>>();
  auto w = random_params(mha->params);
  auto x = random_input(S * D);
  stf_bench::AlignedFloats y(S * D), scratch(MultiHeadAttention<S, S, D, H>::scratch_floats);
  for (auto _ : state) {
    mha->run(x.data(), x.data(), AttentionMask::padding(S), scratch.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * S * D * D * 4 + 2.0 * 2 * S * S * D;
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

template <index_t S, index_t D, index_t F>
void BM_FeedForward(benchmark::State& state) {
  auto ff = std::make_unique<FeedForward<S, D, F>>();
  auto w = random_params(ff->params);
  auto x = random_input(S * D);
  stf_bench::AlignedFloats y(S * D), scratch(FeedForward<S, D, F>::scratch_floats);
  for (auto _ : state) {
    ff->run(x.data(), S, y.data(), scratch.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(4.0 * S * D * F, benchmark::Counter::kIsIterationInvariantRate);
}

template <index_t S, index_t D>
void BM_LayerNorm(benchmark::State& state) {
  LayerNorm<D> ln{};
  auto w = random_params(ln.params);
  auto x = random_input(S * D);
  stf_bench::AlignedFloats y(S * D);
  for (auto _ : state) {
    ln.run(x.data(), S, y.data());
    benchmark::DoNotOptimize(y.data());
  }
}

/// One greedy-decode step of a 2+2-layer model at a given position (the K/V cache makes it O(pos)).
void BM_DecodeStep(benchmark::State& state) {
  using M = Transformer<64, 64, 32, 32, 64, 4, 256, 2>;
  static M model;
  auto w = random_params(model.params);
  int src[64];
  for (int i = 0; i < 64; ++i) src[i] = i % 32;
  const auto pos = static_cast<index_t>(state.range(0));
  float logprobs[32];
  for (auto _ : state) {
    state.PauseTiming();
    (void)model.encode(src, 64);
    for (index_t t = 0; t < pos; ++t) (void)model.step(1, logprobs);
    state.ResumeTiming();
    (void)model.step(1, logprobs);
    benchmark::DoNotOptimize(logprobs);
  }
}
}  // namespace

BENCHMARK(BM_EncoderLayer<10, 16, 2, 32>);
BENCHMARK(BM_EncoderLayer<32, 64, 4, 256>);
BENCHMARK(BM_EncoderLayer<64, 128, 4, 512>);
BENCHMARK(BM_MultiHeadAttention<10, 16, 2>);
BENCHMARK(BM_MultiHeadAttention<32, 64, 4>);
BENCHMARK(BM_MultiHeadAttention<64, 128, 4>);
BENCHMARK(BM_FeedForward<10, 16, 32>);
BENCHMARK(BM_FeedForward<32, 64, 256>);
BENCHMARK(BM_FeedForward<64, 128, 512>);
BENCHMARK(BM_LayerNorm<32, 64>);
BENCHMARK(BM_LayerNorm<64, 128>);
BENCHMARK(BM_DecodeStep)->Arg(0)->Arg(15)->Arg(31)->Arg(63);

namespace {
/// Kernel benchmarks for one implementation of the kernel interface (a variant or the reference).
template <class Linear, class Attention, class Norm>
void register_kernels(const std::string& name, Linear linear, Attention attention, Norm norm) {
  struct Shape {
    index_t rows, in, out;
  };
  for (Shape sh : {Shape{10, 16, 16}, Shape{10, 16, 32}, Shape{32, 64, 64}, Shape{32, 64, 256}, Shape{64, 128, 512},
                   Shape{128, 256, 1024}, Shape{1, 256, 1024}}) {
    const std::string label = "kernel/linear/" + name + "/" + std::to_string(sh.rows) + "x" + std::to_string(sh.in) +
                              "x" + std::to_string(sh.out);
    benchmark::RegisterBenchmark(label.c_str(), [=](benchmark::State& state) {
      const auto x = random_input(sh.rows * sh.in), w = random_input(sh.out * sh.in), b = random_input(sh.out);
      stf_bench::AlignedFloats y(sh.rows * sh.out);
      for (auto _ : state) {
        linear(x.data(), sh.rows, sh.in, w.data(), b.data(), sh.out, y.data(), Fuse::none);
        benchmark::DoNotOptimize(y.data());
      }
      state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(sh.rows * sh.in * sh.out),
                                                    benchmark::Counter::kIsIterationInvariantRate);
      state.counters["bytes"] = static_cast<double>((sh.rows * sh.in + sh.out * sh.in + sh.rows * sh.out) * 4);
    });
  }
  for (index_t keys : {10, 64, 128}) {
    const index_t hd = 32;
    const std::string label = "kernel/attention_row/" + name + "/hd32xkeys" + std::to_string(keys);
    benchmark::RegisterBenchmark(label.c_str(), [=](benchmark::State& state) {
      const auto q = random_input(hd), k = random_input(keys * hd), v = random_input(keys * hd);
      stf_bench::AlignedFloats p(attention_scratch_floats(1, keys, hd)), out(hd);
      for (auto _ : state) {
        attention(q.data(), k.data(), keys, v.data(), hd, hd, keys, ref::RowMask{keys, nullptr}, MaskFill::neg_inf,
                  p.data(), out.data());
        benchmark::DoNotOptimize(out.data());
      }
      state.counters["FLOP/s"] =
          benchmark::Counter(4.0 * static_cast<double>(keys * hd), benchmark::Counter::kIsIterationInvariantRate);
    });
  }
  const std::string label = "kernel/layer_norm_row/" + name + "/512";
  benchmark::RegisterBenchmark(label.c_str(), [=](benchmark::State& state) {
    const auto x = random_input(512), g = random_input(512), b = random_input(512);
    stf_bench::AlignedFloats y(512);
    for (auto _ : state) {
      norm(x.data(), g.data(), b.data(), 512, LayerNormKind::torch, 1e-5f, y.data());
      benchmark::DoNotOptimize(y.data());
    }
  });
}
}  // namespace

int main(int argc, char** argv) {
  register_kernels("reference", ref::linear, ref::attention_row, ref::layer_norm_row);
  boost::hana::for_each(kernel_registry::variants, [](auto t) {
    using K = Kernels<typename decltype(t)::type>;
    if (!K::supported()) return;  // this CPU cannot run it
    register_kernels(K::name(), K::linear, K::attention_row, K::layer_norm_row);
  });
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
