// statiformer tests — whether this CPU (and its OS) can run a kernel variant, decided here from the
// raw cpuid and xgetbv bits, independently of the library's Vocabulary::supported()
// (__builtin_cpu_supports), so that a test can fail when supported() is wrong instead of trusting
// it to skip a variant.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace stf_test {

struct CpuVerdict {
  bool can_run;
  const char* why;  ///< the cpuid bit or OS state that decided it
};

#if defined(__x86_64__)
/// XCR0, the register state the OS saves (xgetbv 0; only valid when cpuid says OSXSAVE).
inline std::uint64_t xcr0() {
  std::uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (std::uint64_t{hi} << 32) | lo;
}

/// AVX2 + FMA (the avx2 variant), or AVX-512F on top (the avx512 variant), from cpuid leaves 1 and
/// 7 and the OS's XCR0: ymm state (bits 1, 2) for both, opmask and zmm state (bits 5, 6, 7) for
/// AVX-512.
inline CpuVerdict x86_can_run(bool avx512) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return {false, "cpuid leaf 1 is missing"};
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
  if (!avx) return {false, "cpuid.1:ECX.AVX[28] is clear"};
  if (!fma) return {false, "cpuid.1:ECX.FMA[12] is clear"};
  if (!osxsave) return {false, "cpuid.1:ECX.OSXSAVE[27] is clear: the OS does not enable XSAVE"};
  const std::uint64_t xcr = xcr0();
  if ((xcr & 0x6) != 0x6) return {false, "XCR0 bits 1-2 (SSE, AVX state) are not both set: the OS does not save ymm"};
  if (__get_cpuid_max(0, nullptr) < 7) return {false, "cpuid has no leaf 7"};
  __cpuid_count(7, 0, a, b, c, d);
  if (!(b & (1u << 5))) return {false, "cpuid.7.0:EBX.AVX2[5] is clear"};
  if (!avx512) return {true, "cpuid: AVX, FMA, AVX2; XCR0: ymm state"};
  if (!(b & (1u << 16))) return {false, "cpuid.7.0:EBX.AVX512F[16] is clear"};
  if ((xcr & 0xe0) != 0xe0)
    return {false, "XCR0 bits 5-7 (opmask, zmm state) are not all set: the OS does not save zmm"};
  return {true, "cpuid: AVX, FMA, AVX2, AVX512F; XCR0: ymm, opmask and zmm state"};
}
#endif

/// Whether this CPU can run the variant named `name` (Kernels<Tag>::name()). NEON and Helium
/// variants exist only in builds whose flags already require them (kernels/registry.hpp): a CPU
/// that lacked them could not run the test binary at all.
inline CpuVerdict cpu_can_run(const char* name) {
  if (std::strcmp(name, "scalar") == 0) return {true, "portable C++"};
#if defined(__x86_64__)
  if (std::strcmp(name, "avx2") == 0) return x86_can_run(false);
  if (std::strcmp(name, "avx512") == 0) return x86_can_run(true);
#endif
  if (std::strcmp(name, "neon") == 0 || std::strcmp(name, "mve") == 0) return {true, "this build's flags require it"};
  return {false, "a variant this test does not know: add it to tests/unit/isa_cpuid.hpp"};
}

}  // namespace stf_test
