// statiformer tests — the softmax's exp (simd_math::exp_nonpositive, x86 attention kernels) gives
// exp's bits on non-positive floats and NaN, on each x86 vocabulary the CPU runs: every 61st
// negative float, densely where the algorithm has edges (the lower clamp, and near 0 where
// n = round(x / ln 2) is 0), and the special values (exp_nonpositive_check.hpp).
#include <catch2/catch.hpp>

#include "isa_cpuid.hpp"

long long exp_nonpositive_mismatch_avx2();
long long exp_nonpositive_mismatch_avx512();
long long subnormal_core_step_avx2();
long long subnormal_core_step_avx512();

TEST_CASE(
    "exp_nonpositive equals exp bit for bit on every 61st negative float, all near the clamp and near 0, "
    "zeros, -inf, NaNs (AVX2, AVX-512)",
    "[kernels][math]") {
  // Which ISAs run is decided from cpuid (isa_cpuid.hpp), and __builtin_cpu_supports, which the
  // library's Vocabulary::supported() uses, must agree: a wrong gate fails instead of passing with
  // nothing checked. Each ISA's run or skip is reported.
  int ran = 0;
  const stf_test::CpuVerdict avx2 = stf_test::cpu_can_run("avx2"), avx512 = stf_test::cpu_can_run("avx512");
  CHECK(avx2.can_run == (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")));
  CHECK(avx512.can_run == static_cast<bool>(__builtin_cpu_supports("avx512f")));
  if (avx2.can_run) {
    WARN("AVX2 runs: " << avx2.why);
    CHECK(exp_nonpositive_mismatch_avx2() == -1);
    ++ran;
  } else {
    WARN("AVX2 skipped: " << avx2.why);
  }
  if (avx512.can_run) {
    WARN("AVX-512 runs: " << avx512.why);
    CHECK(exp_nonpositive_mismatch_avx512() == -1);
    ++ran;
  } else {
    WARN("AVX-512 skipped: " << avx512.why);
  }
  // Nothing runs only on a CPU that cpuid says has no AVX2 (with the checks above agreeing).
  if (ran == 0) WARN("nothing checked: this CPU runs neither the AVX2 nor the AVX-512 vocabulary");
}

// (the x86 vocabularies' exp_nonpositive run the core on those lanes too, and x86 computes a subnormal
// result in a microcode assist)
TEST_CASE("exp's core on every float below exp's range and every NaN: no subnormal step (AVX2, AVX-512)",
          "[kernels][math]") {
  int ran = 0;
  if (stf_test::cpu_can_run("avx2").can_run) {
    CHECK(subnormal_core_step_avx2() == -1);
    ++ran;
  }
  if (stf_test::cpu_can_run("avx512").can_run) {
    CHECK(subnormal_core_step_avx512() == -1);
    ++ran;
  }
  if (ran == 0) WARN("nothing checked: this CPU runs neither the AVX2 nor the AVX-512 vocabulary");
}
