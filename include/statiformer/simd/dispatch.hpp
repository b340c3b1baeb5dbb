// statiformer — which x86-64 kernel variant this CPU can run, and which one the dispatching variant
// (isa::dispatch: layers built without -march) runs. The detection reads cpuid and the register
// state the OS saves (xgetbv), and is the one the tests use too (tests/unit/isa_cpuid.hpp); it does
// not ask the variants' own supported() (__builtin_cpu_supports), so the tests can check one
// against the other. Empty except on x86-64.
//
// The choice is made once per process, at the first kernel call through isa::dispatch (thread-safe,
// no heap): the variant the environment variable STF_ISA names (scalar, avx2 or avx512; unset, empty
// or auto: the best this CPU runs), else AVX-512F, else AVX2 + FMA, else scalar. A value that is not
// one of these names, or that names a variant this CPU cannot run, is reported once on stderr
// ("statiformer: STF_ISA=... ; running ...") and the best variant runs instead: the outputs are the
// same bits whichever runs, only the speed differs. dispatch_choice() says what runs and why.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace stf::isa {

/// Whether the CPU can run a variant, and the cpuid bit or OS state that decided it.
struct CpuVerdict {
  bool can_run;
  const char* why;
};

#if defined(__x86_64__)
/// XCR0, the register state the OS saves (xgetbv 0; only valid when cpuid says OSXSAVE).
inline std::uint64_t x86_xcr0() noexcept {
  std::uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (std::uint64_t{hi} << 32) | lo;
}

/// AVX2 + FMA (the avx2 variant), or AVX-512F on top (the avx512 variant), from cpuid leaves 1 and
/// 7 and the OS's XCR0: ymm state (bits 1, 2) for both, opmask and zmm state (bits 5, 6, 7) for
/// AVX-512.
inline CpuVerdict x86_can_run(bool avx512) noexcept {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return {false, "cpuid leaf 1 is missing"};
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
  if (!avx) return {false, "cpuid.1:ECX.AVX[28] is clear"};
  if (!fma) return {false, "cpuid.1:ECX.FMA[12] is clear"};
  if (!osxsave) return {false, "cpuid.1:ECX.OSXSAVE[27] is clear: the OS does not enable XSAVE"};
  const std::uint64_t xcr = x86_xcr0();
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

/// What the dispatching variant runs: name is Kernels<isa::dispatch>::name() ("avx512", "avx2" or
/// "scalar"); why says how it was chosen (STF_ISA, or the CPU's best and the cpuid bits that
/// decided it); ignored_request: STF_ISA named something else that could not be honoured (the
/// message printed on stderr is why).
struct DispatchChoice {
  const char* name;
  const char* why;
  bool ignored_request;
};

/// The choice of this process (made at the first call of this or of a dispatching kernel).
DispatchChoice dispatch_choice() noexcept;

/// The rule itself, for any request and CPU (tests): requested is STF_ISA's value (null: unset),
/// avx2 and avx512 what x86_can_run says; why is written into buffer (size bytes, at least 1).
DispatchChoice decide_dispatch(const char* requested, CpuVerdict avx2, CpuVerdict avx512, char* buffer,
                               std::size_t size) noexcept;
#endif

}  // namespace stf::isa
