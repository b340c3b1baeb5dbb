#!/usr/bin/env python3
"""Checks statiformer's int8 reference kernels against an independent recomputation.

Runs the dump program (tests/unit/int8_reference_dump.cpp; its path is the argument), which prints
stf::ref::quantize_row, product_i8, linear_w8a8 and linear_w8a32 on a fixed plan of cases, and
recomputes every result from the inputs alone, following include/statiformer/kernels/QUANTIZATION.md:

* the quantization with NumPy float32 arithmetic (max |x|, 127 / a, x * inv, np.rint = ties to
  even, clip to +-127, a / 127);
* the int32 accumulators as Python integers (unbounded: an overflow of the C++ int32 shows);
* the k-quad weight layout from its own formula;
* the epilogues' fma exactly (fractions), rounded once to float32.

Exit 0 when everything matches bit for bit, 1 with the first mismatches otherwise.
Usage: check_int8_reference.py PATH/TO/int8_reference_dump
"""

import struct
import subprocess
import sys
from fractions import Fraction

import numpy as np

PANEL = 64  # kWeightPanel
QUAD = 4  # kQuadK
F32 = np.float32


def f32(bits):
    return np.array([int(b, 16) for b in bits], dtype=np.uint32).view(np.float32)


def bits(v):
    return int(np.array([v], dtype=np.float32).view(np.uint32)[0])


def round_to_f32(x):
    """The float32 nearest to the exact rational x, ties to even (one rounding)."""
    d = float(x)  # correctly rounded to double
    f = np.float32(d)
    if float(f) == d:
        return f
    lo, hi = (f, np.nextafter(f, F32(np.inf))) if float(f) < d else (np.nextafter(f, F32(-np.inf)), f)
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    if x < mid:
        return lo
    if x > mid:
        return hi
    return lo if (bits(lo) & 1) == 0 else hi


def fma32(a, b, c):
    if not all(np.isfinite([a, b, c])):  # NaN and infinities: what IEEE gives, no rounding involved
        return F32(float(a) * float(b) + float(c))
    return round_to_f32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))


def quantize_row(x):
    """(q, s) of one float32 row, as QUANTIZATION.md defines them."""
    ax = np.abs(x)
    if not np.all(np.isfinite(x)):
        return np.zeros(len(x), dtype=np.int64), F32(np.nan)
    a = ax.max()
    if a == 0:
        return np.zeros(len(x), dtype=np.int64), F32(0)
    inv = F32(127) / a
    q = np.clip(np.rint(x * inv), -127, 127).astype(np.int64)
    return q, a / F32(127)


def quad_index(n_in, n_out, k, o):
    in4 = (n_in + QUAD - 1) // QUAD * QUAD
    p0 = o // PANEL * PANEL
    width = min(PANEL, n_out - p0)
    return p0 * in4 + (k // QUAD) * width * QUAD + (o - p0) * QUAD + k % QUAD


def same_bits(got, want):
    if np.isnan(want):
        return bool(np.isnan(got))
    return bits(got) == bits(want)


def check_case(name, rows, n_in, n_out, f, problems):
    x = f32(f["x"]).reshape(rows, n_in)
    w = np.array(f["w"], dtype=np.int64).reshape(n_in, n_out)
    stored = [int(v) for v in f["stored"]]
    sw, b = f32(f["sw"]), f32(f["b"])
    expect_stored = [0] * (((n_in + QUAD - 1) // QUAD * QUAD) * n_out)
    for k in range(n_in):
        for o in range(n_out):
            expect_stored[quad_index(n_in, n_out, k, o)] = int(w[k, o])
    if stored != expect_stored:
        problems.append(f"{name}: the stored k-quad layout differs")
    q_got = np.array(f["q"], dtype=np.int64).reshape(rows, n_in)
    s_got = f32(f["s"])
    acc_got = np.array(f["acc"], dtype=np.int64).reshape(rows, n_out)
    y8_got, y32_got = f32(f["y8"]).reshape(rows, n_out), f32(f["y32"]).reshape(rows, n_out)
    for r in range(rows):
        q, s = quantize_row(x[r])
        if not np.array_equal(q, q_got[r]):
            k = int(np.nonzero(q != q_got[r])[0][0])
            problems.append(f"{name} row {r}: q[{k}] = {q_got[r, k]}, expected {q[k]} (x = {x[r, k]!r})")
        if not same_bits(s_got[r], s):
            problems.append(f"{name} row {r}: scale {s_got[r]!r}, expected {s!r}")
        acc = [sum(int(q[k]) * int(w[k, o]) for k in range(n_in)) for o in range(n_out)]
        for o in range(n_out):
            if acc[o] != acc_got[r, o]:
                problems.append(f"{name} [{r},{o}]: acc {acc_got[r, o]}, expected {acc[o]}")
            if np.isnan(s):
                want8 = F32(np.nan)
            else:
                want8 = fma32(F32(acc[o]), s * sw[o], b[o])
            if not same_bits(y8_got[r, o], want8):
                problems.append(f"{name} [{r},{o}]: w8a8 y {y8_got[r, o]!r}, expected {want8!r}")
            acc32 = F32(0)
            for k in range(n_in):
                acc32 = fma32(x[r, k], F32(w[k, o]), acc32)
            want32 = fma32(acc32, sw[o], b[o])
            if not same_bits(y32_got[r, o], want32):
                problems.append(f"{name} [{r},{o}]: w8a32 y {y32_got[r, o]!r}, expected {want32!r}")
        if len(problems) > 20:
            return


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = subprocess.run([argv[0]], check=True, capture_output=True, text=True).stdout.splitlines()
    problems, cases, i = [], 0, 0
    while i < len(out):
        head = out[i].split()
        if head[0] != "case":
            problems.append(f"line {i + 1}: expected 'case', got {head[0]!r}")
            break
        name, rows, n_in, n_out = head[1], int(head[2]), int(head[3]), int(head[4])
        fields = {}
        for line in out[i + 1:i + 11]:
            tag, *vals = line.split()
            fields[tag] = vals
        i += 11
        if n_in > 4096:  # the long reduction: only the accumulators (the per-element fma check is slow)
            x = f32(fields["x"])
            q, _ = quantize_row(x)
            w = np.array(fields["w"], dtype=np.int64).reshape(n_in, n_out)
            for o in range(n_out):
                want = int(np.dot(q, w[:, o]))
                if want != int(fields["acc"][o]):
                    problems.append(f"{name} [0,{o}]: acc {fields['acc'][o]}, expected {want}")
            if int(np.abs(w).max()) != 127 or abs(want) < 2**31 - 2**16:
                problems.append(f"{name}: the case no longer reaches the int32 limit ({want})")
        else:
            check_case(name, rows, n_in, n_out, fields, problems)
        cases += 1
    if problems:
        print("check_int8_reference: mismatches:\n  " + "\n  ".join(problems[:20]), file=sys.stderr)
        return 1
    print(f"check_int8_reference: {cases} cases equal bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
