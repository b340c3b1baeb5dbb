// statiformer — a correctly rounded float fma for x86-64 code built without FMA instructions (the
// scalar variant of a build without -march, which runs on CPUs before Haswell / Piledriver or when
// STF_ISA=scalar forces it): the same bits as the hardware's vfmadd, inline, from double arithmetic
// only. glibc's fmaf on such a CPU (__fmaf_sse2) gets them by switching the SSE rounding mode to
// round-to-zero and back around one double addition: measured on Zen 5 (GLIBC_TUNABLES=
// glibc.cpu.hwcaps=-FMA,-FMA4), 65-71 ns per dependent call against 4.9 ns for its FMA3 path, and
// the scalar encoder layer 16-19x slower than with the FMA3 path.
//
// How: the product of two floats is exact in double (24 + 24 bits <= 53). The double sum s = p + c
// is rounded once; converting it to float would round a second time, which is wrong exactly when s
// lands on a float midpoint the exact sum was not on. Rounded to odd instead (s, or its neighbour
// towards the exact sum when s is inexact and even), the double keeps a sticky bit, and one rounding
// to float (24 bits, at most 53 - 2) is then the correctly rounded result (Boldo & Melquiond, "When
// double rounding is odd", 2005). The error of s is exact by TwoSum (Knuth), six additions, so no
// rounding-mode switch is needed. Assumes the default rounding mode (round to nearest), as the
// whole library does, and SSE2 arithmetic (no x87 excess precision).
#pragma once

#include <cstdint>
#include <cstring>

#include <statiformer/simd/isa.hpp>

namespace stf::simd_math {
inline namespace STF_VARIANT_NAMESPACE {

/// a·b + c rounded once to float (IEEE fma), from double additions and multiplications.
[[gnu::always_inline]] inline float fma_by_double(float a, float b, float c) {
  const double p = static_cast<double>(a) * static_cast<double>(b);  // exact
  const double dc = c;
  const double s = p + dc;  // rounded to nearest double
  // TwoSum: err = (p + c) - s exactly (NaN when an input or s is infinite or NaN)
  const double pv = s - dc, cv = s - pv;
  const double err = (p - pv) + (dc - cv);
  std::uint64_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  // round to odd: an inexact even s moves one ulp towards the exact sum (away from zero when err has
  // s's sign); comparisons with NaN are false, so infinities and NaN pass through unchanged
  if ((bits & 1) == 0 && (err > 0.0 || err < 0.0)) bits += (err > 0.0) == (s > 0.0) ? 1 : std::uint64_t(-1);
  double odd;
  std::memcpy(&odd, &bits, sizeof odd);
  return static_cast<float>(odd);
}

}  // namespace STF_VARIANT_NAMESPACE
}  // namespace stf::simd_math
