// stf::EncoderLayer benchmarks at the benchmark plan's shapes. Layers call Kernels<isa::active>, the
// variant this translation unit's compile flags select (simd/isa.hpp), so this file is compiled once
// into bench_peers (the build's flags) and once per x86 SIMD variant into bench_stf_<isa>, each a
// separate executable: one program cannot hold two instantiations of the same layer template.
// Names: EncoderLayer/stf.<variant>/<S>x<D>x<H>x<F>.
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
}  // namespace

const char* register_stf_encoder_benchmarks() {
  register_shape<10, 16, 2, 32>();
  register_shape<16, 32, 4, 64>();
  register_shape<25, 64, 4, 128>();
  register_shape<32, 64, 4, 256>();
  register_shape<64, 128, 4, 512>();
  register_shape<128, 256, 8, 1024>();
  register_shape<128, 512, 8, 2048>();
  return stf::ActiveKernels::name();
}

}  // namespace stf_peers
