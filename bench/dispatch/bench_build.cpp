// main() of bench_build_default and bench_build_native: stf::EncoderLayer at the benchmark plan's
// shapes (bench/plan.hpp, registered by bench/peers/stf_encoder_bench.cpp), in a program built as a user builds without
// -march (its layers call isa::dispatch, which STF_ISA can force) or with the build's -march (native: the static
// variant, no indirection). bench/dispatch/compare_builds.py runs both and prints the ratios.
#include <benchmark/benchmark.h>

#include <type_traits>

#include <statiformer/kernels/api.hpp>

#include "bench_support.hpp"

#ifndef STF_BENCH_BUILD
#define STF_BENCH_BUILD ""
#endif

int main(int argc, char** argv) {
  const char* variant = stf_peers::register_stf_encoder_benchmarks();
  benchmark::AddCustomContext("stf_kernels", variant);
  benchmark::AddCustomContext("stf_layers_call", std::is_same_v<stf::isa::active, stf::isa::dispatch>
                                                     ? "Kernels<isa::dispatch> (run-time choice)"
                                                     : "the compile flags' variant, directly");
  benchmark::AddCustomContext("stf_build", STF_BENCH_BUILD);
  stf_peers::add_formula_context();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
