// statiformer tests — simd_math::exp_nonpositive against simd_math::exp on one vocabulary, over
// every non-positive float and NaN, and exp's core on every float below its range and NaN
// (included by one translation unit per instruction set, each compiled with that set's flags).
#pragma once

#include <cfloat>
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

/// The first bit pattern x below exp's range (x < kExpLo, down to -inf) or NaN at which a step of
/// exp's core run on x itself (simd_math::exp_reduced: what the x86 vocabularies' exp_nonpositive
/// run in every lane, replacing those lanes' n by 0 before the last product) has a subnormal result,
/// or -1: every such float, its steps seen through exp_reduced's `seen`. (x86 computes a subnormal
/// result in a microcode assist, 16-19× a vector's time: simd/math.hpp.)
template <class I>
long long first_subnormal_core_step() {
  using V = typename I::V;
  constexpr std::uint32_t L = static_cast<std::uint32_t>(I::lanes);
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 16;
  const V smallest_normal = I::set1(FLT_MIN), zero = I::zero(), one = I::set1(1.0f);
  V subnormal = zero;  // 1 in a lane where a step was subnormal
  const auto seen = [&](const V& v) {
    const V a = I::abs(v);
    subnormal = I::max(subnormal, I::select_gt(smallest_normal, a, I::select_gt(a, zero, one, zero), zero));
  };
  // bits lo to hi (inclusive), L at a time (the last vector repeats hi), a chunk per test of the lanes
  auto run = [&](std::uint64_t lo, std::uint64_t hi) {
    std::uint32_t bits[L];
    float in[L];
    for (std::uint64_t x = lo; x <= hi;) {
      for (std::uint32_t i = 0; i < L; ++i, x += 1) bits[i] = static_cast<std::uint32_t>(x <= hi ? x : hi);
      std::memcpy(in, bits, sizeof in);
      V n, p;
      stf::simd_math::exp_reduced<I>(I::load(in), n, p, seen);
    }
  };
  auto sweep = [&](std::uint64_t lo, std::uint64_t hi) -> long long {
    for (std::uint64_t c = lo; c <= hi; c += kChunk) {
      const std::uint64_t end = c + kChunk - 1 < hi ? c + kChunk - 1 : hi;
      run(c, end);
      if (I::reduce_max(subnormal) == 0.0f) continue;
      for (std::uint64_t x = c; x <= end; ++x) {  // which float: one at a time
        subnormal = zero;
        run(x, x);
        if (I::reduce_max(subnormal) != 0.0f) return static_cast<long long>(x);
      }
    }
    return -1;
  };
  std::uint32_t lo_bits;
  const float lo = stf::simd_math::kExpLo;
  std::memcpy(&lo_bits, &lo, 4);
  long long bad = sweep(std::uint64_t{lo_bits} + 1, 0xffffffffu);  // below lo (more negative), -inf, -NaN
  if (bad < 0) bad = sweep(0x7f800001u, 0x7fffffffu);              // +NaN
  return bad;
}

}  // namespace stf_test
