// statiformer — exp, log and GELU written once on the SIMD vocabulary. Every step is a single IEEE
// operation (add, sub, mul, div, fma, sqrt, exponent bit manipulation), never libm, so every ISA and
// the scalar reference compute the same bits. Accuracy: exp within 2 ulp, log within 2 ulp on
// normal inputs, GELU within 1e-6 relative (fit: tools/fit_erfc.py), tanh GELU: see gelu_tanh.
#pragma once

#include <limits>
#include <type_traits>

#include <statiformer/simd/isa.hpp>

namespace stf::simd_math {
inline namespace STF_VARIANT_NAMESPACE {

/// exp's core on x (clamped to the range, or below it where the caller replaces the result):
/// n = round(x / ln 2) (the 1.5·2^23 trick) and p = e^r for r = x - n·ln 2 (Cody-Waite, two
/// parts; |r| <= ln2/2 in the range: Taylor to degree 7, Horner with fma). seen: called with each
/// step's result in turn (a test's check of the steps, tests/unit/exp_nonpositive_check.hpp; by
/// default nothing).
struct NoSteps {
  template <class V>
  void operator()(const V&) const {}
};
template <class I, class Seen = NoSteps>
[[gnu::always_inline]] inline void exp_reduced(typename I::V xc, typename I::V& n, typename I::V& p, Seen seen = {}) {
  constexpr bool see = !std::is_same_v<Seen, NoSteps>;  // (else no call at all: the same code as without)
  const auto magic = I::set1(12582912.0f);
  const auto t = I::fma(xc, I::set1(1.44269504088896341f), magic);
  if constexpr (see) seen(t);
  n = I::sub(t, magic);
  if constexpr (see) seen(n);
  auto r = I::fma(n, I::set1(-0.693359375f), xc);
  if constexpr (see) seen(r);
  r = I::fma(n, I::set1(2.12194440e-4f), r);
  if constexpr (see) seen(r);
  p = I::set1(1.0f / 5040.0f);
  p = I::fma(p, r, I::set1(1.0f / 720.0f));
  if constexpr (see) seen(p);
  p = I::fma(p, r, I::set1(1.0f / 120.0f));
  if constexpr (see) seen(p);
  p = I::fma(p, r, I::set1(1.0f / 24.0f));
  if constexpr (see) seen(p);
  p = I::fma(p, r, I::set1(1.0f / 6.0f));
  if constexpr (see) seen(p);
  p = I::fma(p, r, I::set1(0.5f));
  if constexpr (see) seen(p);
  p = I::fma(p, r, I::set1(1.0f));
  if constexpr (see) seen(p);
  p = I::fma(p, r, I::set1(1.0f));
  if constexpr (see) seen(p);
}

/// exp's lower end: below it the result is 0 (exp leaves the normal range).
inline constexpr float kExpLo = -87.3365448f;

/// exp_reduced as an argument (for a vocabulary's own exp_nonpositive), with kExpLo.
template <class I>
struct ExpCore {
  static constexpr float lo = kExpLo;
  [[gnu::always_inline]] void operator()(typename I::V xc, typename I::V& n, typename I::V& p) const {
    exp_reduced<I>(xc, n, p);
  }
};

/// What exp's core runs on in place of x: the lanes below lo are replaced after it (by 0), and
/// all that matters there is that the core's steps stay cheap. Clamped to lo, their p · 2^n is
/// subnormal, which x86 computes in a microcode assist (measured: 16-19× the time of a vector of
/// in-range lanes); so the x86 vocabularies run those lanes on 0 instead (zero_unless_ge), and
/// the others keep the single max. (exp_nonpositive on x86 runs the core on x itself and replaces
/// those lanes' n by 0 instead: off the exp's dependent chain.)
template <class I>
[[gnu::always_inline]] inline typename I::V below_lo_harmless(typename I::V x, typename I::V lo) {
  if constexpr (I::own_zero_unless_ge)
    return I::zero_unless_ge(x, lo);  // (NaN: 0, replaced after the core too)
  else
    return I::max(x, lo);  // (NaN: lo)
}

/// exp(x). Below -87.33 (where exp leaves the normal range) the result is 0; above 88.72, +inf;
/// NaN stays NaN. exp_inline: the same, always inlined (kernels whose vector registers must not
/// be spilled around a call: every vector register is caller-saved on x86-64).
template <class I>
[[gnu::always_inline]] inline typename I::V exp_inline(typename I::V x) {
  using V = typename I::V;
  // a vocabulary may spell the same operations in its own instructions (same bits, checked by the
  // kernel tests): simd/arm_mve.hpp
  if constexpr (I::own_exp)
    return I::exp(x);
  else if constexpr (I::lanes == 1) {
    // One lane: the same operations, with branches where the vector code selects (a scalar core
    // has no select instruction, and the clamps are no-ops inside the range).
    if (!(x >= kExpLo && x <= 88.7228394f))
      return x != x ? x : (x < kExpLo ? 0.0f : std::numeric_limits<float>::infinity());
    float n, p;
    exp_reduced<I>(x, n, p);
    // as below: p · 2^(n-d) · 2^d, d = 1 for n > 0 (a product with 2^0 = 1 is exact, so skipped)
    return n > 0.0f ? I::mul(I::mul(p, I::pow2i(I::sub(n, 1.0f))), 2.0f) : I::mul(p, I::pow2i(n));
  }
  const V lo = I::set1(kExpLo), hi = I::set1(88.7228394f);
  const V xc = I::min(below_lo_harmless<I>(x, lo), hi);
  V n, p;
  exp_reduced<I>(xc, n, p);
  // p · 2^n, as p · 2^(n-d) · 2^d with d = 1 for n > 0, so both exponents stay normal
  const V d = I::select_gt(n, I::zero(), I::set1(1.0f), I::zero());
  V y = I::mul(I::mul(p, I::pow2i(I::sub(n, d))), I::pow2i(d));
  y = I::select_gt(lo, x, I::zero(), y);
  y = I::select_gt(x, hi, I::set1(std::numeric_limits<float>::infinity()), y);
  return I::select_nan(x, y);
}

template <class I>
typename I::V exp(typename I::V x) {
  return exp_inline<I>(x);
}

/// exp(x) for x <= 0 or NaN (a softmax's x - max): exp's bits with the steps that are no-ops
/// there left out (the upper clamp and the overflow select; n <= 0, so the split 2^(n-d) · 2^d
/// has d = 0 and its product with 2^0 = 1 is exact). Lanes that break the precondition give
/// unspecified values. Always inlined, as exp_inline.
template <class I>
[[gnu::always_inline]] inline typename I::V exp_nonpositive(typename I::V x) {
  using V = typename I::V;
  if constexpr (I::lanes == 1 || I::own_exp) {
    return exp<I>(x);
  } else if constexpr (I::own_exp_nonpositive) {
    // a vocabulary's own last steps around the same core (the same bits:
    // tests/unit/exp_nonpositive_check.hpp)
    return I::exp_nonpositive(x, ExpCore<I>{});
  } else if constexpr (I::own_zero_unless_ge) {
    // (x86: AVX2) the core on x itself and its n replaced by 0 below lo, as the AVX-512 vocabulary's
    // exp_nonpositive (simd/x86_avx512.hpp): no step on those lanes makes a subnormal, and the
    // compare is off the dependent chain (NaN lanes keep a NaN n: p is NaN, and so their product)
    const V lo = I::set1(kExpLo);
    V n, p;
    exp_reduced<I>(x, n, p);
    const V y = I::select_gt(lo, x, I::zero(), I::mul(p, I::pow2i(I::select_gt(lo, x, I::zero(), n))));
    return I::select_nan(x, y);
  } else {
    const V lo = I::set1(kExpLo);
    const V xc = below_lo_harmless<I>(x, lo);
    V n, p;
    exp_reduced<I>(xc, n, p);
    const V y = I::select_gt(lo, x, I::zero(), I::mul(p, I::pow2i(n)));
    return I::select_nan(x, y);
  }
}

/// log(x) for x > 0 (normal or infinite); 0 → -inf; x < 0 or NaN → NaN.
template <class I>
typename I::V log(typename I::V x) {
  using V = typename I::V;
  V m, e;
  I::split_exponent(x, m, e);
  // m in [1, 2) → [√½, √2)
  const V big = I::select_gt(m, I::set1(1.41421356f), I::set1(1.0f), I::zero());
  m = I::select_gt(m, I::set1(1.41421356f), I::mul(m, I::set1(0.5f)), m);
  e = I::add(e, big);
  // log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716
  const V f = I::sub(m, I::set1(1.0f));
  const V s = I::div(f, I::add(I::set1(2.0f), f));
  const V s2 = I::mul(s, s);
  V q = I::set1(2.0f / 9.0f);
  q = I::fma(q, s2, I::set1(2.0f / 7.0f));
  q = I::fma(q, s2, I::set1(2.0f / 5.0f));
  q = I::fma(q, s2, I::set1(2.0f / 3.0f));
  const V logm = I::fma(I::mul(s, s2), q, I::add(s, s));
  // e·ln2 in two parts
  V y = I::fma(e, I::set1(0.693359375f), I::fma(e, I::set1(-2.12194440e-4f), logm));
  const float inf = std::numeric_limits<float>::infinity();
  y = I::select_gt(x, I::set1(3.40282347e38f), I::set1(inf), y);                        // +inf
  y = I::select_gt(I::set1(1.17549435e-38f), x, I::set1(-inf), y);                      // 0 (and tiny)
  y = I::select_gt(I::zero(), x, I::set1(std::numeric_limits<float>::quiet_NaN()), y);  // negative
  return I::select_nan(x, y);
}

/// Coefficients of P in erfc(a) = t · exp(-a² + P(t)), t = 1 / (1 + a/2), a >= 0, lowest first.
/// Generated by tools/fit_erfc.py (least squares on Chebyshev nodes, a in [0, 10]).
inline constexpr float kErfcP[] = {-1.26544797f,   0.998632789f,  0.3866404f,  0.0346027985f, 0.0012675887f,
                                   -0.0802804381f, -0.696251869f, 1.15673375f, -0.6808272f,   0.144930214f};

/// erfc(z) for any z: erfc(|z|) from the fit, and 2 - erfc(|z|) for z < 0.
template <class I>
typename I::V erfc(typename I::V z) {
  using V = typename I::V;
  const V a = I::abs(z);
  const V t = I::div(I::set1(1.0f), I::fma(a, I::set1(0.5f), I::set1(1.0f)));
  V p = I::set1(kErfcP[9]);
  for (int k = 8; k >= 0; --k) p = I::fma(p, t, I::set1(kErfcP[k]));
  // exp(-a² + p) with the rounding error of the argument carried separately: q = fl(-a² + p),
  // r = (-a² - q) + p is what q lost, and exp(q + r) ≈ exp(q) · (1 + r)
  const V na = I::sub(I::zero(), a);
  const V q = I::fma(na, a, p);
  const V r = I::add(I::fma(na, a, I::sub(I::zero(), q)), p);
  const V eq = exp<I>(q);
  const V y = I::mul(t, I::fma(eq, r, eq));
  return I::select_gt(I::zero(), z, I::sub(I::set1(2.0f), y), y);
}

/// Exact GELU: x · Φ(x) = x/2 · erfc(-x/√2).
template <class I>
typename I::V gelu(typename I::V x) {
  const auto arg = I::mul(x, I::set1(-0.707106781186547524f));
  return I::mul(I::mul(x, I::set1(0.5f)), erfc<I>(arg));
}

/// tanh-approximated GELU (PyTorch's approximate='tanh'): 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³),
/// computed as x / (1 + e^(-2u)) (1 + tanh(u) = 2 / (1 + e^(-2u)): one exp and one division, and no
/// 1 + tanh(u) that cancels for negative x), with -2u = (-2√(2/π)·x) · (1 + 0.044715·x²). For every
/// finite x, 1 + e^(-2u) >= 1: the result has x's sign and |result| <= |x|. e^(-2u) saturates to 0
/// for u > 43.6 (the result is x) and to +inf for u < -44.4, x < -10.04 (x / inf: -0, where the exact
/// result is under 3e-38; PyTorch's float 1 + tanh(u) is 0 from x < -5.5 on); x² or -2u overflowing
/// to ±inf saturate the same way (never 0 · inf or inf / inf), so never NaN (x = -inf: NaN, as
/// PyTorch's). Accuracy: tests/unit/test_kernels.cpp ("own tanh GELU").
template <class I>
typename I::V gelu_tanh(typename I::V x) {
  using V = typename I::V;
  const V s = I::fma(I::mul(x, x), I::set1(0.044715f), I::set1(1.0f));  // 1 + 0.044715·x²
  const V a = I::mul(x, I::set1(-1.59576912160573071f));                // -2·√(2/π)·x
  const V e = exp<I>(I::mul(a, s));                                     // e^(-2u)
  return I::div(x, I::add(I::set1(1.0f), e));
}

template <class I>
typename I::V relu(typename I::V x) {
  return I::select_gt(x, I::zero(), x, I::zero());
}

}  // namespace STF_VARIANT_NAMESPACE
}  // namespace stf::simd_math
