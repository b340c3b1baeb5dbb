// statiformer tests — whether this CPU (and its OS) can run a kernel variant, decided from the raw
// cpuid and xgetbv bits (stf::isa::x86_can_run, simd/dispatch.hpp: the detection the run-time
// dispatching variant uses too), independently of the variants' own supported()
// (__builtin_cpu_supports), so that a test can fail when supported() is wrong instead of trusting
// it to skip a variant.
#pragma once

#include <cstring>

#include <statiformer/simd/dispatch.hpp>

namespace stf_test {

using CpuVerdict = stf::isa::CpuVerdict;

/// Whether this CPU can run the variant named `name` (Kernels<Tag>::name()). NEON and Helium
/// variants exist only in builds whose flags already require them (kernels/registry.hpp): a CPU
/// that lacked them could not run the test binary at all.
inline CpuVerdict cpu_can_run(const char* name) {
  if (std::strcmp(name, "scalar") == 0) return {true, "portable C++"};
#if defined(__x86_64__)
  if (std::strcmp(name, "avx2") == 0) return stf::isa::x86_can_run(false);
  if (std::strcmp(name, "avx512") == 0) return stf::isa::x86_can_run(true);
#endif
  if (std::strcmp(name, "neon") == 0 || std::strcmp(name, "mve") == 0) return {true, "this build's flags require it"};
  return {false, "a variant this test does not know: add it to tests/unit/isa_cpuid.hpp"};
}

}  // namespace stf_test
