// main() of bench_stf_<isa>: stf::EncoderLayer with the kernel variant of one x86 instruction set
// (stf_encoder_bench.cpp compiled with that ISA's flags). This file keeps the build's flags, and
// checks that the CPU can run the variant before any of that code runs; if not, it says so and
// exits successfully without running anything.
#include <cstdio>

#include "bench_support.hpp"

#if defined(STF_BENCH_ISA_AVX512)
#define STF_BENCH_ISA "avx512"
#define STF_BENCH_ISA_SUPPORTED __builtin_cpu_supports("avx512f")
#elif defined(STF_BENCH_ISA_AVX2)
#define STF_BENCH_ISA "avx2"
#define STF_BENCH_ISA_SUPPORTED (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#else
#error "define STF_BENCH_ISA_AVX2 or STF_BENCH_ISA_AVX512"
#endif

#ifndef STF_BENCH_BUILD
#define STF_BENCH_BUILD ""
#endif

int main(int argc, char** argv) {
  __builtin_cpu_init();
  if (!STF_BENCH_ISA_SUPPORTED) {
    std::fprintf(stderr, "bench_stf_%s: this CPU cannot run the %s kernels; nothing to run\n", STF_BENCH_ISA,
                 STF_BENCH_ISA);
    return 0;
  }
  const char* variant = stf_peers::register_stf_encoder_benchmarks();
  benchmark::AddCustomContext("stf_kernels", variant);
  benchmark::AddCustomContext("stf_build", STF_BENCH_BUILD);
  stf_peers::add_formula_context();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
