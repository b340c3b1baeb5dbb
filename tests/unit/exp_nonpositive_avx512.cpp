// statiformer tests — exp_nonpositive on the AVX-512 vocabulary (built with -mavx512f).
// (GCC 12's avx512fintrin.h: see src/kernels/variant_avx512.cpp)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <statiformer/simd/x86_avx512.hpp>

#include "exp_nonpositive_check.hpp"

long long exp_nonpositive_mismatch_avx512() {
  return stf_test::first_exp_nonpositive_mismatch<stf::isa::Vocabulary<stf::isa::avx512>>();
}
long long subnormal_core_step_avx512() {
  return stf_test::first_subnormal_core_step<stf::isa::Vocabulary<stf::isa::avx512>>();
}
