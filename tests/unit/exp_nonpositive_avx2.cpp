// statiformer tests — exp_nonpositive on the AVX2 vocabulary (built with -mavx2 -mfma).
#include <statiformer/simd/x86_avx2.hpp>

#include "exp_nonpositive_check.hpp"

long long exp_nonpositive_mismatch_avx2() {
  return stf_test::first_exp_nonpositive_mismatch<stf::isa::Vocabulary<stf::isa::avx2>>();
}
long long subnormal_core_step_avx2() {
  return stf_test::first_subnormal_core_step<stf::isa::Vocabulary<stf::isa::avx2>>();
}
