// statiformer tests — the softmax's exp (simd_math::exp_nonpositive, x86 attention kernels) gives
// exp's bits for every non-positive float and NaN, on each x86 vocabulary the CPU runs.
#include <catch2/catch.hpp>

#include <statiformer/simd/isa.hpp>

long long exp_nonpositive_mismatch_avx2();
long long exp_nonpositive_mismatch_avx512();

TEST_CASE("exp_nonpositive equals exp on every non-positive float and NaN (AVX2, AVX-512)", "[kernels][math]") {
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) CHECK(exp_nonpositive_mismatch_avx2() == -1);
  if (__builtin_cpu_supports("avx512f")) CHECK(exp_nonpositive_mismatch_avx512() == -1);
}
