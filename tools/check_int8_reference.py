#!/usr/bin/env python3
"""Checks statiformer's int8 reference kernels against an independent recomputation.

Runs the dump program (tests/unit/int8_reference_dump.cpp; its path is the argument), which prints
stf::ref::quantize_row, product_i8, linear_w8a8, linear_w8a32 and attention_rows_w8a8 on a fixed plan
of cases, and recomputes every result from the inputs alone, following
include/statiformer/kernels/QUANTIZATION.md:

* the quantization with NumPy float32 arithmetic (max |x|, 127 / a, x * inv, np.rint = ties to
  even, clip to +-127, a / 127);
* the int32 accumulators as Python integers (unbounded: an overflow of the C++ int32 shows);
* the k-quad weight layout from its own formula;
* the epilogues' fma exactly (fractions), rounded once to float32;
* the w8a8 attention ("Attention"): Q.K^T and P.V as Python integers, the online softmax over blocks
  of 32 keys in float32 with exp written out from its documented steps (simd/math.hpp: the 1.5*2^23
  rounding, Cody-Waite reduction, degree-7 Horner with fma, the scaling by 2^n), the canonical sum
  (16 lanes, folded 8-4-2-1), each block's weights times the values' scales quantized per row.

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
    if a < F32(2.0**-100):  # kMinQuantizedMax: zeros with scale 0 (a row of zeros among them)
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


KEY_BLOCK = 32  # kAttentionKeyBlock
EXP_LO, EXP_HI = F32(-87.3365448), F32(88.7228394)
MAGIC = F32(12582912.0)  # 1.5 * 2^23


def exp32(x):
    """simd/math.hpp's exp on one float32 (its one-lane branch): the same IEEE steps."""
    if np.isnan(x):
        return x
    if not (EXP_LO <= x <= EXP_HI):
        return F32(0) if x < EXP_LO else F32(np.inf)
    n = fma32(x, F32(1.44269504088896341), MAGIC) - MAGIC
    r = fma32(n, F32(-0.693359375), x)
    r = fma32(n, F32(2.12194440e-4), r)
    p = F32(1) / F32(5040)
    for c in (F32(1) / F32(720), F32(1) / F32(120), F32(1) / F32(24), F32(1) / F32(6), F32(0.5), F32(1), F32(1)):
        p = fma32(p, r, c)
    n = int(n)
    return (p * F32(2.0**(n - 1))) * F32(2) if n > 0 else p * F32(2.0**n)


def sum32(x):
    """The canonical sum: 16 lanes, x[k] into lane k % 16 in order, folded 8-4-2-1."""
    lanes = [F32(0)] * 16
    for k in range((len(x) + 15) // 16 * 16):
        lanes[k % 16] = lanes[k % 16] + (x[k] if k < len(x) else F32(0))
    while len(lanes) > 1:
        h = len(lanes) // 2
        lanes = [lanes[i] + lanes[i + h] for i in range(h)]
    return lanes[0]


def attention_row(q, sq, k, sk, v, sv, allowed, add, fill):
    """One query row of the w8a8 attention (QUANTIZATION.md, "Attention")."""
    hd, n_keys = len(q), len(k)
    scale = np.sqrt(F32(hd))
    out = [F32(0)] * hd
    seen, m, l = False, F32(0), F32(0)
    for kb in range(0, n_keys, KEY_BLOCK):
        nb = min(KEY_BLOCK, n_keys - kb)
        p = [F32(0)] * nb
        any_, bm = False, F32(0)
        for i in range(nb):
            j = kb + i
            if not allowed[j]:
                continue
            acc = sum(int(a) * int(b) for a, b in zip(q, k[j]))
            p[i] = (F32(acc) * (sq * sk[j])) / scale
            if add is not None:
                p[i] = p[i] + add[j]
            bm = p[i] if (not any_ or p[i] > bm) else bm
            any_ = True
        if not any_:
            continue
        m_new = m if (seen and m > bm) else bm
        if seen:
            c = exp32(m - m_new)
            l = l * c
            out = [o * c for o in out]
        p = [exp32(p[i] - m_new) if allowed[kb + i] else F32(0) for i in range(nb)]
        l = l + sum32(p) if seen else sum32(p)
        p = [p[i] * sv[kb + i] if allowed[kb + i] else F32(0) for i in range(nb)]
        qw, s_b = quantize_row(np.array(p, dtype=np.float32))
        for d in range(hd):
            acc = sum(int(qw[i]) * int(v[kb + i][d]) for i in range(nb) if allowed[kb + i])
            out[d] = fma32(F32(acc), s_b, out[d])
        m, seen = m_new, True
    if seen:
        return [o / l for o in out]
    w = F32(1) / F32(n_keys) if fill == 1 else F32(0)
    res = []
    for d in range(hd):
        acc = F32(0)
        if w != 0:
            for j in range(n_keys):
                acc = fma32(w, F32(int(v[j][d])) * sv[j], acc)
        res.append(acc)
    return res


def check_attention(name, rows, hd, keys, fill, f, masks, problems):
    q = np.array(f["q"], dtype=np.int64).reshape(rows, hd)
    k = np.array(f["k"], dtype=np.int64).reshape(keys, hd)
    v = np.array(f["v"], dtype=np.int64).reshape(keys, hd)
    sq, sk, sv = f32(f["sq"]), f32(f["sk"]), f32(f["sv"])
    out = f32(f["out"]).reshape(rows, hd)
    for r in range(rows):
        key_end, allow, add = masks[r]
        allowed = [j < key_end and (allow is None or allow[j] == "1") and (add is None or add[j] != -np.inf)
                   for j in range(keys)]
        want = attention_row(q[r], sq[r], k, sk, v, sv, allowed, add, fill)
        for d in range(hd):
            if not same_bits(out[r, d], want[d]):
                problems.append(f"attention {name} row {r} [{d}]: {out[r, d]!r}, expected {want[d]!r}")
                break
        if len(problems) > 20:
            return


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = subprocess.run([argv[0]], check=True, capture_output=True, text=True).stdout.splitlines()
    problems, cases, attentions, i = [], 0, 0, 0
    while i < len(out):
        head = out[i].split()
        if head[0] == "attention":
            name, rows, hd, keys, fill = head[1], int(head[2]), int(head[3]), int(head[4]), int(head[5])
            fields = {}
            for line in out[i + 1:i + 7]:
                tag, *vals = line.split()
                fields[tag] = vals
            masks = []
            for line in out[i + 7:i + 7 + rows]:
                _, _, key_end, allow, add = line.split()
                masks.append((int(key_end), None if allow == "-" else allow,
                              None if add == "-" else f32(add.split(","))))
            fields["out"] = out[i + 7 + rows].split()[1:]
            i += 8 + rows
            check_attention(name, rows, hd, keys, fill, fields, masks, problems)
            attentions += 1
            continue
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
    if attentions == 0:
        problems.append("no attention case in the dump")
    if problems:
        print("check_int8_reference: mismatches:\n  " + "\n  ".join(problems[:20]), file=sys.stderr)
        return 1
    print(f"check_int8_reference: {cases} product cases and {attentions} attention cases equal bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
