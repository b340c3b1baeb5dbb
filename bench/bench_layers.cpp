// Latency of the layers (with the kernels the build's flags select) and of every kernel variant
// of the registry next to the naive reference (Google Benchmark), with FLOP/s counters.
// Layer shapes (SeqLen, DModel, NHeads, DFf) from the benchmark plan (plan.hpp).
#include <benchmark/benchmark.h>

#include <boost/hana/for_each.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include <memory>
#include <vector>

#include <statiformer/kernels/reference.hpp>
#include <statiformer/kernels/registry.hpp>
#include <statiformer/statiformer.hpp>

#include "bench_common.hpp"
#include "plan.hpp"

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

/// Greedy decoding through the K/V cache, timed over a window of kDecodeWindow steps from position
/// P of a 2+2-layer model (D 128, 4 heads, DFf 512, 512 target positions, 32 memory rows): each
/// step costs its projections and feed-forward (constant) plus self-attention over the P + 1
/// cached positions, so the time per token grows linearly with the position. The model is brought
/// to position P once; each iteration restores that state (untimed copy) and decodes the window.
/// Name: DecodeTokens/D128/from<P>x<window>; counter "per token" = latency / window.
constexpr index_t kDecodeWindow = 32;
using DecodeModel = Transformer<32, 512, 32, 32, 128, 4, 512, 2>;

void BM_DecodeTokens(benchmark::State& state) {
  static const auto model = [] {
    auto m = std::make_unique<DecodeModel>();
    static const auto weights = random_params(m->params);
    return m;
  }();
  const auto from = static_cast<index_t>(state.range(0));
  auto at = std::make_unique<DecodeModel>(*model);  // the model at position `from`
  int src[32];
  for (int i = 0; i < 32; ++i) src[i] = (i * 7) % 32;
  float logprobs[32];
  if (at->encode(src, 32) != Status::ok) return state.SkipWithError("encode failed");
  for (index_t t = 0; t < from; ++t)
    if (at->step(1 + static_cast<int>(t % 31), logprobs) != Status::ok) return state.SkipWithError("step failed");
  auto work = std::make_unique<DecodeModel>(*at);
  for (auto _ : state) {
    state.PauseTiming();
    *work = *at;
    state.ResumeTiming();
    for (index_t t = 0; t < kDecodeWindow; ++t) (void)work->step(1 + static_cast<int>(t % 31), logprobs);
    benchmark::DoNotOptimize(logprobs);
  }
  state.counters["per token"] = benchmark::Counter(
      static_cast<double>(kDecodeWindow), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
}  // namespace

BENCHMARK(BM_DecodeTokens)->Name("DecodeTokens/D128")->ArgName("from")->Arg(0)->Arg(96)->Arg(224)->Arg(352)->Arg(480);

namespace {
/// Kernel benchmarks for one implementation of the kernel interface (a variant or the reference).
template <class Linear, class Attention, class Norm, class Exp, class Transpose>
void register_kernels(const std::string& name, Linear linear, Attention attention, Norm norm, Exp exp,
                      Transpose transpose) {
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
  // spread: the query scaled so that the scores span hundreds, and most of each row's exp(s - max)
  // fall below exp's range (peaked attention): their result is 0, and it should cost what any
  // other exponential does
  for (const auto& [keys, spread] : {std::pair<index_t, bool>{10, false}, {64, false}, {128, false}, {128, true}}) {
    const index_t hd = 32;
    const std::string label =
        "kernel/attention_row/" + name + "/hd32xkeys" + std::to_string(keys) + (spread ? "/spread" : "");
    benchmark::RegisterBenchmark(label.c_str(), [=](benchmark::State& state) {
      auto q = random_input(hd);
      if (spread)
        for (float& e : q) e *= 400.0f;
      const auto k = random_input(keys * hd), v = random_input(keys * hd);
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
  // exp over a range inside its domain, and one below it (results 0 there)
  for (const auto& [range, lo] : {std::pair<const char*, float>{"in_range", -10.0f}, {"below_range", -120.0f}}) {
    const std::string label = "kernel/exp/" + name + "/1024/" + range;
    benchmark::RegisterBenchmark(label.c_str(), [=](benchmark::State& state) {
      stf_bench::AlignedFloats x(1024), y(1024);
      for (index_t i = 0; i < 1024; ++i) x[i] = lo + 10.0f * static_cast<float>(i) / 1024.0f;
      for (auto _ : state) {
        exp(x.data(), y.data(), 1024);
        benchmark::DoNotOptimize(y.data());
      }
      state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1024);
    });
  }
  // keys [S, D] into Kᵀ, as the attention layers do
  for (const auto& [rows, cols] : {std::pair<index_t, index_t>{64, 128}, {128, 256}}) {
    const std::string label = "kernel/transpose/" + name + "/" + std::to_string(rows) + "x" + std::to_string(cols);
    benchmark::RegisterBenchmark(label.c_str(), [=](benchmark::State& state) {
      const auto src = random_input(rows * cols);
      stf_bench::AlignedFloats dst(rows * cols);
      for (auto _ : state) {
        transpose(src.data(), rows, cols, cols, dst.data(), rows);
        benchmark::DoNotOptimize(dst.data());
      }
      state.counters["bytes"] = static_cast<double>(2 * rows * cols * 4);
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

/// The int8 linears of variant K (kernels/QUANTIZATION.md: w8a8, and w8a32 with `w8a32`) at the
/// layers' products (and a decoding step's single row), next to K's float linear at the same shape:
/// counter "int8/f32 speed" = the float linear's time / the int8 one's (both measured here, best of
/// 5 batches of calls, after the benchmark's own loop).
template <class K>
void register_int8(const std::string& name, bool w8a32) {
  struct Shape {
    index_t rows, in, out;
  };
  for (Shape sh :
       {Shape{1, 64, 256}, Shape{10, 16, 32}, Shape{32, 64, 256}, Shape{64, 128, 512}, Shape{128, 512, 2048}}) {
    const std::string label = std::string(w8a32 ? "kernel/linear_w8a32/" : "kernel/linear_w8a8/") + name + "/" +
                              std::to_string(sh.rows) + "x" + std::to_string(sh.in) + "x" + std::to_string(sh.out);
    benchmark::RegisterBenchmark(label.c_str(), [=](benchmark::State& state) {
      const auto x = random_input(sh.rows * sh.in), w = random_input(sh.out * sh.in), b = random_input(sh.out),
                 s_w = random_input(sh.out);
      std::vector<std::int8_t> qw(quad_padded(sh.in) * sh.out), scratch(linear_w8a8_scratch_bytes(sh.rows, sh.in));
      stf_bench::AlignedFloats w32_scratch(linear_w8a32_scratch_floats(sh.in));
      for (std::size_t i = 0; i < qw.size(); ++i)
        qw[i] = static_cast<std::int8_t>(static_cast<int>(i * 37 % 255) - 127);
      stf_bench::AlignedFloats y(sh.rows * sh.out);
      auto int8 = [&] {
        if (w8a32)
          K::linear_w8a32(x.data(), sh.rows, sh.in, qw.data(), s_w.data(), b.data(), sh.out, y.data(),
                          w32_scratch.data(), Fuse::none);
        else
          K::linear_w8a8(x.data(), sh.rows, sh.in, qw.data(), s_w.data(), b.data(), sh.out, y.data(), scratch.data(),
                         Fuse::none);
      };
      auto f32 = [&] { K::linear(x.data(), sh.rows, sh.in, w.data(), b.data(), sh.out, y.data(), Fuse::none); };
      for (auto _ : state) {
        int8();
        benchmark::DoNotOptimize(y.data());
      }
      auto best = [&](auto&& f) {
        const int calls = static_cast<int>(2e7 / static_cast<double>(sh.rows * sh.in * sh.out)) + 1;
        double t = 1e30;
        for (int rep = 0; rep < 5; ++rep) {
          const auto t0 = std::chrono::steady_clock::now();
          for (int c = 0; c < calls; ++c) f();
          benchmark::DoNotOptimize(y.data());
          t = std::min(t, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return t;
      };
      const double t_f32 = best(f32), t_int8 = best(int8);
      state.counters["int8/f32 speed"] = t_f32 / t_int8;
      state.counters["MAC/s"] = benchmark::Counter(static_cast<double>(sh.rows * sh.in * sh.out),
                                                   benchmark::Counter::kIsIterationInvariantRate);
    });
  }
}

/// "<a, b, ...>", as BENCHMARK(BM_EncoderLayer<10, 16, 2, 32>) names its benchmark.
std::string template_args(std::initializer_list<index_t> args) {
  std::string s = "<";
  for (const index_t a : args) s += (s.size() > 1 ? ", " : "") + std::to_string(a);
  return s + ">";
}
/// The encoder layer, its attention, its feed-forward and its LayerNorm at every shape of the
/// benchmark plan (bench/plan.hpp), each kind over all the shapes before the next.
void register_layers() {
  namespace plan = stf_bench::plan;
  plan::for_each<plan::kEncoderLayers>([]<plan::EncoderShape Sh>() {
    benchmark::RegisterBenchmark(
        ("BM_EncoderLayer" + template_args({Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff})).c_str(),
        BM_EncoderLayer<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff>);
  });
  plan::for_each<plan::kEncoderLayers>([]<plan::EncoderShape Sh>() {
    benchmark::RegisterBenchmark(
        ("BM_MultiHeadAttention" + template_args({Sh.seq_len, Sh.d_model, Sh.n_heads})).c_str(),
        BM_MultiHeadAttention<Sh.seq_len, Sh.d_model, Sh.n_heads>);
  });
  plan::for_each<plan::kEncoderLayers>([]<plan::EncoderShape Sh>() {
    benchmark::RegisterBenchmark(("BM_FeedForward" + template_args({Sh.seq_len, Sh.d_model, Sh.d_ff})).c_str(),
                                 BM_FeedForward<Sh.seq_len, Sh.d_model, Sh.d_ff>);
  });
  plan::for_each<plan::kEncoderLayers>([]<plan::EncoderShape Sh>() {
    benchmark::RegisterBenchmark(("BM_LayerNorm" + template_args({Sh.seq_len, Sh.d_model})).c_str(),
                                 BM_LayerNorm<Sh.seq_len, Sh.d_model>);
  });
}
}  // namespace

int main(int argc, char** argv) {
  register_layers();
  register_kernels("reference", ref::linear, ref::attention_row, ref::layer_norm_row, ref::exp, ref::transpose);
  boost::hana::for_each(kernel_registry::variants, [](auto t) {
    using K = Kernels<typename decltype(t)::type>;
    if (!K::supported()) return;  // this CPU cannot run it
    register_kernels(K::name(), K::linear, K::attention_row, K::layer_norm_row, K::exp, K::transpose);
    register_int8<K>(K::name(), false);
    register_int8<K>(K::name(), true);
    // which variant of each operation these figures are (kernels/registry.hpp), in the report
    std::string variants;
    for (const kernel_registry::Selected& s : kernel_registry::selected<typename decltype(t)::type>()) {
      if (!variants.empty()) variants.push_back(' ');
      variants.append(s.op).push_back('=');
      variants.append(s.variant);
    }
    benchmark::AddCustomContext(std::string("variants ") + K::name(), variants);
  });
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
