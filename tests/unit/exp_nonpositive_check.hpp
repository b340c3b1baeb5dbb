// statiformer tests — simd_math::exp_nonpositive against simd_math::exp on one vocabulary, over
// every non-positive float and NaN (included by one translation unit per instruction set, each
// compiled with that set's flags).
#pragma once

#include <cstdint>
#include <cstring>

#include <statiformer/simd/math.hpp>

namespace stf_test {

/// The first bit pattern x where exp_nonpositive<I>(x) and exp<I>(x) differ in any bit, or -1,
/// over: every 61st negative float (sign bit set: -0 to the negative NaNs), every float in
/// [-88, -86.5] (the lower clamp) and in [-0.5, 0] down to 2^-30 (where n = round(x / ln 2)
/// leaves 0), then -0, +0, -inf and NaNs.
template <class I>
long long first_exp_nonpositive_mismatch() {
  using V = typename I::V;
  constexpr std::uint32_t L = static_cast<std::uint32_t>(I::lanes);
  auto bits_of = [](float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  };
  float in[L], a[L], b[L];
  auto check = [&](const std::uint32_t* bits) -> long long {
    std::memcpy(in, bits, sizeof in);
    const V x = I::load(in);
    I::store(a, stf::simd_math::exp_nonpositive<I>(x));
    I::store(b, stf::simd_math::exp_inline<I>(x));
    for (std::uint32_t i = 0; i < L; ++i)
      if (std::memcmp(&a[i], &b[i], 4) != 0) return bits[i];
    return -1;
  };
  // bits lo, lo + stride, ... up to hi (inclusive), L at a time (the last vector repeats hi)
  auto sweep = [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t stride) -> long long {
    std::uint32_t bits[L];
    for (std::uint64_t x = lo; x <= hi;) {
      for (std::uint32_t i = 0; i < L; ++i, x += stride) bits[i] = static_cast<std::uint32_t>(x <= hi ? x : hi);
      if (const long long bad = check(bits); bad >= 0) return bad;
    }
    return -1;
  };
  long long bad = sweep(0x80000000u, 0xffffffffu, 61);
  if (bad < 0) bad = sweep(bits_of(-86.5f), bits_of(-88.0f), 1);
  if (bad < 0) bad = sweep(bits_of(-0x1p-30f), bits_of(-0.5f), 1);
  const std::uint32_t specials[] = {0x80000000u, 0x00000000u, 0xff800000u, 0xff800001u,
                                    0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffffffffu};
  for (std::uint32_t i = 0; bad < 0 && i < sizeof specials / 4; i += L) {
    std::uint32_t bits[L];
    for (std::uint32_t j = 0; j < L; ++j) bits[j] = specials[(i + j) % (sizeof specials / 4)];
    bad = check(bits);
  }
  return bad;
}

}  // namespace stf_test
