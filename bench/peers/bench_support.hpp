// What the benchmark executables of bench/peers share (Google Benchmark side).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "common.hpp"

namespace stf_peers {

/// "<S>x<D>x<H>x<F>", the shape part of every EncoderLayer benchmark name.
inline std::string shape_name(stf::index_t S, stf::index_t D, stf::index_t H, stf::index_t F) {
  return std::to_string(S) + "x" + std::to_string(D) + "x" + std::to_string(H) + "x" + std::to_string(F);
}

/// "<T>x<M>x<D>x<H>x<F>", the shape part of every DecoderStep benchmark name: target positions,
/// memory rows, DModel, NHeads, DFf.
inline std::string decoder_step_name(stf::index_t T, stf::index_t M, stf::index_t D, stf::index_t H, stf::index_t F) {
  return std::to_string(T) + "x" + std::to_string(M) + "x" + std::to_string(D) + "x" + std::to_string(H) + "x" +
         std::to_string(F);
}

/// FLOP/s (rate of encoder_flops), bytes (encoder_bytes, per forward) and bytes_per_second.
inline void set_counters(benchmark::State& state, double flops, double bytes) {
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes"] = bytes;
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes * static_cast<double>(state.iterations())));
}

/// Registers EncoderLayer/stf.<variant>/<shape> at every shape (stf_encoder_bench.cpp); returns the
/// variant's name: Kernels<isa::active> under that translation unit's compile flags.
const char* register_stf_encoder_benchmarks();

/// Registers Gemm/<impl>/<M>x<K>x<N>, the layer's matrix products alone, for statiformer's active
/// variant and, where the build found it, OpenBLAS (gemm_peers.cpp); returns OpenBLAS's
/// configuration string, or why it is missing.
const char* register_gemm_benchmarks();

/// Context every executable adds to its JSON: the work formulas.
inline void add_formula_context() {
  benchmark::AddCustomContext("flop_formula", "8*S*D^2 + 4*S^2*D + 4*S*D*F (matrix products only, valid_len = S)");
  benchmark::AddCustomContext("bytes_formula", "4*(param_count + 2*S*D): parameters read, input read, output written");
}

}  // namespace stf_peers
