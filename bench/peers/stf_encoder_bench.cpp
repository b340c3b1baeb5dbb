// stf::EncoderLayer benchmarks at the benchmark plan's shapes (bench/plan.hpp). Layers call Kernels<isa::active>, the
// variant this translation unit's compile flags select (simd/isa.hpp), so this file is compiled once
// into bench_peers (the build's flags) and once per x86 SIMD variant into bench_stf_<isa>, each a
// separate executable: one program cannot hold two instantiations of the same layer template.
// Names: EncoderLayer/stf.<variant>/<S>x<D>x<H>x<F>, and DecoderStep/stf.<variant>/<T>x<M>x<D>x<H>x<F>:
// one new token through a post-norm stf::DecoderLayer (its incremental entry point, step) at the
// last of T target positions, with T - 1 positions and the memory's M rows in the K/V cache.
// EncoderLayerInt8/stf.<variant>.<format>/<S>x<D>x<H>x<F>: the same post-norm ReLU layer with its
// six linears in an int8 number format (w8a32, w8a8; kernels/QUANTIZATION.md), and w8a8 with its
// attention in int8 too (w8a8_int8attn: LayerOptions::int8_attention), timed in the same
// executable as the float layer so that report.py's float/int8 ratios come from one run (issue 23).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../plan.hpp"
#include "bench_support.hpp"

namespace stf_peers {
namespace {
using stf::index_t;

template <index_t S, index_t D, index_t H, index_t F>
void register_shape() {
  using Layer = stf::EncoderLayer<S, D, H, F>;
  constexpr double flops = encoder_flops(S, D, F);
  constexpr double bytes = encoder_bytes(Layer::Params::param_count, S, D);
  const std::string name = std::string("EncoderLayer/stf.") + stf::ActiveKernels::name() + "/" + shape_name(S, D, H, F);
  benchmark::RegisterBenchmark(name.c_str(), [](benchmark::State& state) {
    auto layer = std::make_unique<Layer>();
    const auto weights = random_params(layer->params);
    const auto x = random_input(S * D);
    AlignedFloats y(S * D), scratch(Layer::scratch_floats);
    for (auto _ : state) {
      layer->run(x.data(), y.data(), S, scratch.data());
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    set_counters(state, flops, bytes);
  });
}

/// The storage of an int8 layer's parameters (random_int8_params); must outlive the layer's binding.
struct Int8Storage {
  std::vector<std::int8_t, stf_bench::AlignedAllocator<std::int8_t>> weights;
  AlignedFloats floats;
};

/// Binds every parameter of an int8 layer: int8 weights pseudo-random in [-127, 127], their
/// per-output scales 1 / (127·√in) (in: the linear's reduction; the weights then span ±1/√in as
/// PyTorch's nn.Linear initialization does, which keeps the activations of a deep enough layer in
/// range), the float parameters (biases, LayerNorms) as random_params fills them. The values do not
/// change the timing; the ranges only keep the output finite, which the benchmark checks.
template <class Params>
Int8Storage random_int8_params(Params& params) {
  constexpr stf::index_t kAlign = 64;  // bytes: every parameter starts on a 64-byte boundary
  auto padded = [](stf::index_t n, stf::index_t unit) { return (n + unit - 1) / unit * unit; };
  stf::index_t total_i8 = 0, total_f = 0;
  params.visit(
      [&](const stf::Name&, stf::ParamRef r) {
        if (r.is_int8())
          total_i8 += padded(r.size(), kAlign);
        else
          total_f += padded(r.size(), kAlign / 4);
      },
      {});
  Int8Storage st{decltype(Int8Storage::weights)(total_i8), AlignedFloats(total_f)};
  std::uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  stf::index_t off_i8 = 0, off_f = 0, last_in = 1;
  params.visit(
      [&](const stf::Name&, stf::ParamRef r) {
        if (r.is_int8()) {
          std::int8_t* q = st.weights.data() + off_i8;
          for (stf::index_t i = 0; i < r.size(); ++i) q[i] = static_cast<std::int8_t>(int(next() >> 8) % 255 - 127);
          *r.data_i8 = q;
          last_in = r.cols;  // PyTorch shape [out, in]: the scales that follow are this linear's
          off_i8 += padded(r.size(), kAlign);
          return;
        }
        float* p = st.floats.data() + off_f;
        const float scale = 1.0f / (127.0f * std::sqrt(static_cast<float>(last_in)));
        for (stf::index_t i = 0; i < r.size(); ++i)
          p[i] = r.scale ? scale : (static_cast<float>(next() >> 8) / 16777216.0f - 0.5f) * 0.2f;
        *r.data = p;
        off_f += padded(r.size(), kAlign / 4);
      },
      {});
  return st;
}

constexpr const char* format_name(stf::NumberFormat f) {
  return f == stf::NumberFormat::w8a8 ? "w8a8" : f == stf::NumberFormat::w8a32 ? "w8a32" : "f32";
}

/// Int8Attention (w8a8 only): Q·Kᵀ and P·V in int8 too (LayerOptions::int8_attention), format
/// name `w8a8_int8attn`.
template <index_t S, index_t D, index_t H, index_t F, stf::NumberFormat Format, bool Int8Attention = false>
void register_int8_shape() {
  using Layer =
      stf::EncoderLayer<S, D, H, F,
                        stf::LayerOptions{
                            .norm = stf::NormPlacement::post, .format = Format, .int8_attention = Int8Attention}>;
  constexpr double flops = encoder_flops(S, D, F);
  const std::string name = std::string("EncoderLayerInt8/stf.") + stf::ActiveKernels::name() + "." +
                           format_name(Format) + (Int8Attention ? "_int8attn" : "") + "/" + shape_name(S, D, H, F);
  benchmark::RegisterBenchmark(name.c_str(), [](benchmark::State& state) {
    auto layer = std::make_unique<Layer>();
    const auto weights = random_int8_params(layer->params);
    const auto x = random_input(S * D);
    AlignedFloats y(S * D), scratch(Layer::scratch_floats);
    layer->run(x.data(), y.data(), S, scratch.data());  // once, untimed: a layer that computes
    for (float v : y)
      if (!std::isfinite(v)) return state.SkipWithError("int8 layer output is not finite");
    for (auto _ : state) {
      layer->run(x.data(), y.data(), S, scratch.data());
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["bytes"] = static_cast<double>(stf::param_bytes_of<typename Layer::Params>()) + 8.0 * S * D;
  });
}

template <index_t S, index_t D, index_t H, index_t F>
void register_int8_formats() {
  register_int8_shape<S, D, H, F, stf::NumberFormat::w8a32>();
  register_int8_shape<S, D, H, F, stf::NumberFormat::w8a8>();
  register_int8_shape<S, D, H, F, stf::NumberFormat::w8a8, true>();
}

template <index_t T, index_t M, index_t D, index_t H, index_t F>
void register_decoder_step() {
  using Layer = stf::DecoderLayer<T, M, D, H, F>;
  constexpr index_t pos = T - 1;  // the last position: the step attends over all T positions
  constexpr double flops = decoder_step_flops(pos, M, D, F);
  const std::string name =
      std::string("DecoderStep/stf.") + stf::ActiveKernels::name() + "/" + decoder_step_name(T, M, D, H, F);
  benchmark::RegisterBenchmark(name.c_str(), [](benchmark::State& state) {
    auto layer = std::make_unique<Layer>();
    const auto weights = random_params(layer->params);
    auto cache = std::make_unique<typename Layer::Cache>();
    const auto memory = random_input(M * D), x = random_input(D);
    AlignedFloats y(D), scratch(Layer::step_scratch_floats);
    layer->prepare_memory(memory.data(), *cache);
    for (index_t p = 0; p < pos; ++p) layer->step(x.data(), p, M, *cache, y.data(), scratch.data());
    for (auto _ : state) {  // rewrites position pos's key and value with the same values each time
      layer->step(x.data(), pos, M, *cache, y.data(), scratch.data());
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  });
}
}  // namespace

const char* register_stf_encoder_benchmarks() {
  // whether the int8 products can use vpdpbusd here (x86_int8.hpp checks it at run time): the
  // issue-23 target on the int8 layer's speed is for a VNNI machine
#if defined(__x86_64__)
  __builtin_cpu_init();
  benchmark::AddCustomContext("cpu_vnni", std::string("avx512_vnni ") +
                                              (__builtin_cpu_supports("avx512vnni") ? "yes" : "no") + ", avx_vnni " +
                                              (__builtin_cpu_supports("avxvnni") ? "yes" : "no"));
#endif
  namespace plan = stf_bench::plan;
  plan::for_each<plan::kEncoderLayers>(
      []<plan::EncoderShape Sh>() { register_shape<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff>(); });
  plan::for_each<plan::kDecoderSteps>([]<plan::DecoderStepShape Sh>() {
    register_decoder_step<Sh.positions, Sh.memory, Sh.d_model, Sh.n_heads, Sh.d_ff>();
  });
  // the int8 layer at the float layer's shapes (issue 23), registered after it: report.py compares them
  plan::for_each<plan::kEncoderLayers>(
      []<plan::EncoderShape Sh>() { register_int8_formats<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff>(); });
  return stf::ActiveKernels::name();
}

}  // namespace stf_peers
