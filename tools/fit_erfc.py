#!/usr/bin/python3
"""Fits the polynomial P of statiformer's erfc approximation and prints it as C++.

    erfc(a) = t * exp(-a*a + P(t)),  t = 1 / (1 + a/2),  a >= 0   (erfc(-a) = 2 - erfc(a))

P is fitted by least squares on Chebyshev nodes of t over a in [0, 10] (beyond that erfc(a) <
2e-45 underflows float anyway), in float64, then checked in float32 arithmetic (numpy) against
math.erfc. Regenerate with: /usr/bin/python3 tools/fit_erfc.py
"""
import math

import numpy as np

DEGREE = 9
A_MAX = 10.0


def target(t):
    a = 2.0 / t - 2.0
    return np.array([math.log(math.erfc(x) / tt) + x * x for x, tt in zip(a, t)])


def main():
    t_lo, t_hi = 1.0 / (1.0 + A_MAX / 2.0), 1.0
    k = np.arange(400)
    nodes = 0.5 * (t_lo + t_hi) + 0.5 * (t_hi - t_lo) * np.cos(math.pi * (k + 0.5) / len(k))
    coeffs = np.polynomial.polynomial.polyfit(nodes, target(nodes), DEGREE)  # c0 + c1 t + ...
    c32 = coeffs.astype(np.float32)

    # float32 evaluation as the kernels do it (Horner with fma is more exact than this; fine)
    a = np.linspace(0, 9.0, 200001)
    t = (np.float32(1) / (np.float32(1) + np.float32(0.5) * a.astype(np.float32))).astype(np.float32)
    p = np.float32(c32[-1])
    for c in c32[-2::-1]:
        p = (p * t + c).astype(np.float32)
    y = t.astype(np.float64) * np.exp(-(a.astype(np.float32).astype(np.float64) ** 2) + p.astype(np.float64))
    want = np.array([math.erfc(x) for x in a.astype(np.float32).astype(np.float64)])
    rel = np.max(np.abs(y - want) / want)
    print(f"// erfc fit: degree {DEGREE}, max relative error {rel:.2e} over a in [0, 9] (float32 P)")
    print("inline constexpr float kErfcP[] = {" + ", ".join(f"{float(c):.9g}f" for c in c32) + "};")


if __name__ == "__main__":
    main()
