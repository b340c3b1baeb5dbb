// statiformer — constexpr double math for tables built at compile time (positional encodings).
// The kernels' run-time exp, log and GELU are simd/math.hpp's (single IEEE operations, no libm).
#pragma once

#include <statiformer/config.hpp>

namespace stf::math {

// ---- constexpr double math for compile-time tables -------------------------------------------
namespace ct {

inline constexpr double kPi = 3.141592653589793238462643383279502884;
inline constexpr double kLn2 = 0.693147180559945309417232121458176568;

/// exp(x) for |x| < 700, accurate to a few ulp of double (range reduction by ln 2 + Taylor).
constexpr double exp(double x) {
  // x = n ln2 + r with |r| <= ln2 / 2.
  const double nf = x / kLn2;
  const long long n = static_cast<long long>(nf < 0 ? nf - 0.5 : nf + 0.5);
  const double r = x - static_cast<double>(n) * kLn2;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 30; ++k) {
    term *= r / k;
    sum += term;
  }
  double scale = 1.0;
  for (long long i = 0; i < (n < 0 ? -n : n); ++i) scale *= 2.0;
  return n < 0 ? sum / scale : sum * scale;
}

/// log(x) for x > 0: reduce to m * 2^e with m in [1, 2), then 2 atanh((m-1)/(m+1)).
constexpr double log(double x) {
  int e = 0;
  while (x >= 2.0) {
    x /= 2.0;
    ++e;
  }
  while (x < 1.0) {
    x *= 2.0;
    --e;
  }
  const double s = (x - 1.0) / (x + 1.0), s2 = s * s;
  double term = s, sum = 0.0;
  for (int k = 1; k < 200; k += 2) {
    sum += term / k;
    term *= s2;
  }
  return 2.0 * sum + e * kLn2;
}

/// sin and cos of x for |x| up to ~1e5, accurate to ~1e-15 absolute.
constexpr void sincos(double x, double& s, double& c) {
  // Reduce by pi/2 with a two-part constant (Cody-Waite), then Taylor on |r| <= pi/4.
  constexpr double kPio2Hi = 1.5707963267341256e+00;  // pi/2 to 33 bits: k * hi is exact
  constexpr double kPio2Lo = 6.0771005065061922e-11;  // pi/2 - hi
  const double kf = x / (kPi / 2);
  const long long k = static_cast<long long>(kf < 0 ? kf - 0.5 : kf + 0.5);
  const double r = (x - static_cast<double>(k) * kPio2Hi) - static_cast<double>(k) * kPio2Lo;
  double ts = r, tc = 1.0, ss = r, cc = 1.0;
  const double r2 = r * r;
  for (int n = 1; n < 15; ++n) {
    ts *= -r2 / ((2 * n) * (2 * n + 1));
    tc *= -r2 / ((2 * n - 1) * (2 * n));
    ss += ts;
    cc += tc;
  }
  switch (((k % 4) + 4) % 4) {
    case 0:
      s = ss;
      c = cc;
      break;
    case 1:
      s = cc;
      c = -ss;
      break;
    case 2:
      s = -ss;
      c = -cc;
      break;
    default:
      s = -cc;
      c = ss;
      break;
  }
}

constexpr double sqrt(double x) {
  if (x <= 0) return 0;
  double g = x > 1 ? x : 1;
  for (int i = 0; i < 100; ++i) g = 0.5 * (g + x / g);
  return g;
}

}  // namespace ct
}  // namespace stf::math
