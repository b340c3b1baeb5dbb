// stf::EncoderLayer benchmarks at the benchmark plan's shapes. Layers call Kernels<isa::active>, the
// variant this translation unit's compile flags select (simd/isa.hpp), so this file is compiled once
// into bench_peers (the build's flags) and once per x86 SIMD variant into bench_stf_<isa>, each a
// separate executable: one program cannot hold two instantiations of the same layer template.
// Names: EncoderLayer/stf.<variant>/<S>x<D>x<H>x<F>, and DecoderStep/stf.<variant>/<T>x<M>x<D>x<H>x<F>:
// one new token through a post-norm stf::DecoderLayer (its incremental entry point, step) at the
// last of T target positions, with T - 1 positions and the memory's M rows in the K/V cache.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

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
  register_shape<10, 16, 2, 32>();
  register_shape<16, 32, 4, 64>();
  register_shape<25, 64, 4, 128>();
  register_shape<32, 64, 4, 256>();
  register_shape<64, 128, 4, 512>();
  register_shape<128, 256, 8, 1024>();
  register_shape<128, 512, 8, 2048>();
  register_decoder_step<16, 16, 32, 4, 64>();
  register_decoder_step<25, 25, 64, 4, 128>();
  return stf::ActiveKernels::name();
}

}  // namespace stf_peers
