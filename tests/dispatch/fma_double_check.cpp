// simd_math::fma_by_double (the scalar variant's fma on x86-64 without FMA instructions) gives the
// bits of a correctly rounded fma (std::fma: libm's, or the hardware's under -mfma) on
//  - 2^24 triples of random bit patterns (every exponent, subnormals, infinities, NaN),
//  - cancellations: c the negated product rounded to float, and its neighbours,
//  - double-rounding traps: a·b exactly halfway between two floats, c far below its last bit, so
//    that the exact sum is just off the midpoint and the double sum is on it; the check also counts
//    how many of these the naive float(double(a)·b + c) gets wrong, and fails if none (the traps
//    would then test nothing),
//  - results in the subnormal range, overflow, signed zeros.
// Exit status 0 when every case matches; the first mismatches are printed.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include <statiformer/simd/fma_double.hpp>

namespace {

long cases = 0, failures = 0;

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }

void check(float a, float b, float c) {
  ++cases;
  const float got = stf::simd_math::fma_by_double(a, b, c), want = std::fma(a, b, c);
  if (!same(got, want) && ++failures <= 10)
    std::printf("FAILED: fma(%a, %a, %a) = %a, correctly rounded %a\n", double(a), double(b), double(c), double(got),
                double(want));
}

std::uint32_t state = 12345;
std::uint32_t next() {
  state ^= state << 13, state ^= state >> 17, state ^= state << 5;
  return state;
}

}  // namespace

int main() {
  // random bit patterns
  for (int i = 0; i < (1 << 24); ++i) check(from_bits(next()), from_bits(next()), from_bits(next()));
  // cancellations
  for (int i = 0; i < (1 << 20); ++i) {
    const float a = from_bits((next() & 0x807fffffu) | (static_cast<std::uint32_t>(64 + next() % 128) << 23));
    const float b = from_bits((next() & 0x807fffffu) | (static_cast<std::uint32_t>(64 + next() % 128) << 23));
    const float c = -static_cast<float>(static_cast<double>(a) * b);
    check(a, b, c);
    check(a, b, std::nextafter(c, 0.0f));
    check(a, b, std::nextafter(c, std::numeric_limits<float>::infinity()));
  }
  // double-rounding traps: a (13 significant bits, odd) times b (12, odd) is exact and odd: when it
  // has 25 significant bits, halfway between two floats; c = ±2^(e - k) moves the exact sum off the
  // midpoint by less than half a double ulp for k > 53 (the double sum rounds back onto it), by more
  // for k < 53
  long naive_wrong = 0;
  for (int i = 0; i < (1 << 18); ++i) {
    const float a = std::ldexp(static_cast<float>((next() % 2048) * 2 + 1 + 4096), static_cast<int>(next() % 40) - 32);
    const float b = std::ldexp(static_cast<float>((next() % 1024) * 2 + 1 + 2048), static_cast<int>(next() % 40) - 32);
    const double p = static_cast<double>(a) * b;
    for (int k = 30; k <= 90; k += 3) {
      const float c = std::ldexp(next() % 2 ? 1.0f : -1.0f, std::ilogb(p) - k);
      if (c == 0.0f) continue;
      check(a, b, c);
      naive_wrong += !same(static_cast<float>(p + c), std::fma(a, b, c));
    }
  }
  // subnormal results, overflow, specials
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < (1 << 20); ++i) {
    const float a = from_bits((next() & 0x807fffffu) | ((20 + next() % 50) << 23));
    const float b = from_bits((next() & 0x807fffffu) | ((20 + next() % 50) << 23));
    check(a, b, from_bits(next() & 0x80ffffffu));  // |c| below 2^-125, or subnormal
    check(std::ldexp(a, 200), std::ldexp(b, 150), from_bits(next()));
  }
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan, 3e38f, -3e38f, 1e-45f, -1e-45f, 1e-38f};
  for (float a : specials)
    for (float b : specials)
      for (float c : specials) check(a, b, c);
  std::printf(
      "fma_by_double: %ld cases, %ld differ from a correctly rounded fma; the naive double sum got %ld "
      "of the double-rounding traps wrong\n",
      cases, failures, naive_wrong);
  if (naive_wrong == 0) std::printf("FAILED: the double-rounding traps caught no naive error: they test nothing\n");
  return failures == 0 && naive_wrong > 0 ? 0 : 1;
}
