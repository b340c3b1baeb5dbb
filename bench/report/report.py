#!/usr/bin/python3
"""Benchmark report: reads Google Benchmark JSON files (bench_layers, bench_peers, bench_stf_<isa>,
bench/peers/torch_bench.py) and writes a Markdown table and a PNG plot.

    /usr/bin/python3 bench/report/report.py --md build/bench/report.md --png build/bench/report.png \\
        build/bench/*.json

Benchmark names it understands:
  EncoderLayer/<impl>/<S>x<D>x<H>x<F>   one encoder layer per implementation (stf.<variant>, eigen,
                                        onednn, torch, torch_std): latency, ratios, % of the FMA peak
  EncoderLayerInt8/<impl>/<S>x<D>x<H>x<F>
                                        the int8 layer (stf.<variant>.<w8a32|w8a8|w8a8_int8attn>,
                                        torch.<engine>; w8a8_int8attn: Q·Kᵀ and P·V in int8 too):
                                        latency next to the float stf.<variant> of the same file,
                                        ratios and the issue-23 targets
  DecoderStep/<impl>/<T>x<M>x<D>x<H>x<F>
                                        one new token through a decoder layer at the last of T
                                        positions, M memory rows (K/V cache) per implementation
                                        (stf.<variant>; peers eigen, pytorch: STEP_PEERS): latency,
                                        stf's speed against the fastest peer, % of the peak
  FmaPeak/<isa>/<n>chains               the measured FMA peak (the highest FLOP/s is "the peak")
  Paired/EncoderLayer/<S>x<D>x<H>x<F>   stf, its peers and the widest FMA peak loop timed in turn,
                                        round after round (bench_peers' register_paired): the
                                        counters' medians and quartiles over the rounds, and the
                                        issue-26 targets judged on them (paired_rows)
  Gemm/<impl>/<M>x<K>x<N>               the layer's matrix products alone (stf.<variant>, openblas):
                                        latency, GFLOP/s and % of the FMA peak side by side
  DecodeTokens/<model>/from:<P>         greedy decoding of 32 tokens from position P through the K/V
                                        cache: time per token against position, with a straight-line fit
  anything else (bench_layers)          listed per layer with its latency and FLOP/s

Latency of a benchmark: its "median" aggregate when it was repeated, else the median over its
repetitions (CPU time by default: every timed program is single-threaded, and on a shared virtual
machine wall-clock time also counts the time the VM was not running, which spread the last
wall-clock run's repetitions by up to 226 %; --time real for wall-clock time). The targets of issue 26 (≥ 1.4× faster
than every peer or ≥ 90 % of the FMA peak at every shape, ≥ 90 % at both 128-row shapes, ≥ 50 % at
10×16×2×32) are judged per shape, each flagged when its margin is within the repetitions' spread, and
against the ceiling the layer's products timed alone set (products_alone_ns). Only the standard library and
matplotlib (Debian: python3-matplotlib) are used; without matplotlib no PNG is written.
"""

import argparse
import json
import os
import re
import statistics
import sys

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
ENCODER_RE = re.compile(r"^EncoderLayer/([^/]+)/(\d+)x(\d+)x(\d+)x(\d+)$")
INT8_RE = re.compile(r"^EncoderLayerInt8/([^/]+)/(\d+)x(\d+)x(\d+)x(\d+)$")
INT8_FORMATS = ("w8a8", "w8a32", "w8a8_int8attn")  # (the last: w8a8 with LayerOptions::int8_attention)
FMA_RE = re.compile(r"^FmaPeak/([^/]+)/(\d+)chains$")
DECODE_RE = re.compile(r"^DecodeTokens/([^/]+)/from:(\d+)$")
GEMM_RE = re.compile(r"^Gemm/([^/]+)/(\d+)x(\d+)x(\d+)$")
PAIRED_RE = re.compile(r"^Paired/EncoderLayer/(\d+)x(\d+)x(\d+)x(\d+)(/iterations:\d+)?$")
STEP_RE = re.compile(r"^DecoderStep/([^/]+)/(\d+)x(\d+)x(\d+)x(\d+)x(\d+)$")
DECODE_WINDOW = 32  # tokens per DecodeTokens iteration (kDecodeWindow in bench/bench_layers.cpp)
IMPL_ORDER = ["stf.scalar", "stf.avx2", "stf.avx512", "stf.neon", "stf.mve", "eigen", "onednn", "torch", "torch_std",
              "pytorch"]
# The decoder step's peers, and where each comes from: a missing one is named in the step rows.
STEP_PEERS = {
    "eigen": "DecoderStep/eigen from bench_peers (Eigen 3.4: libeigen3-dev)",
    "pytorch": "DecoderStep/pytorch from bench/peers/torch_bench.py (python3-torch)",
}
IMPL_TITLE = {
    "eigen": "Eigen 3.4",
    "onednn": "oneDNN",
    "torch": "PyTorch",
    "torch_std": "PyTorch (standard path)",
    "pytorch": "PyTorch",
    "openblas": "OpenBLAS sgemm",
}


def impl_title(impl):
    if impl.startswith("stf."):
        return f"stf ({impl[4:]})"
    return IMPL_TITLE.get(impl, impl)


def impl_key(impl):
    return (IMPL_ORDER.index(impl) if impl in IMPL_ORDER else len(IMPL_ORDER), impl)


class Result:
    """One benchmark (all repetitions of one run_name) of one file."""

    def __init__(self, run_name, source):
        self.name = run_name
        self.source = source
        self.iterations = []  # entries with run_type iteration
        self.aggregates = {}  # aggregate_name -> entry
        self.label = ""

    def ns(self, entry, field):
        return entry[field] * UNIT_NS[entry.get("time_unit", "ns")]

    def latency_ns(self, field):
        if "median" in self.aggregates:
            return self.ns(self.aggregates["median"], field)
        vals = [self.ns(e, field) for e in self.iterations]
        return statistics.median(vals) if vals else None

    def counter(self, key):
        if "median" in self.aggregates and key in self.aggregates["median"]:
            return self.aggregates["median"][key]
        vals = [e[key] for e in self.iterations if key in e]
        return statistics.median(vals) if vals else None

    def repetitions(self):
        return len(self.iterations)

    def spread(self, field):
        """(max - min) / median of the repetitions' times, or None with fewer than 3."""
        vals = [self.ns(e, field) for e in self.iterations]
        if len(vals) < 3:
            return None
        mid = statistics.median(vals)
        return (max(vals) - min(vals)) / mid if mid else None


def load(paths):
    """-> (results by run_name in first-seen order, contexts [(path, context)])."""
    results, contexts, duplicates = {}, [], set()
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            print(f"report: skipping {path}: {e}", file=sys.stderr)
            continue
        contexts.append((path, data.get("context", {})))
        entries = data.get("benchmarks", [])
        # in registration order (family, then instance), as without random interleaving, which
        # writes the repetitions of all benchmarks of a file shuffled; entries without the
        # indices (torch.json) keep their order
        if all("family_index" in e for e in entries):
            entries = sorted(entries, key=lambda e: (e["family_index"], e.get("per_family_instance_index", 0)))
        for e in entries:
            if e.get("error_occurred"):
                print(f"report: {path}: {e.get('name')} failed: {e.get('error_message', '')}", file=sys.stderr)
                continue
            run_name = e.get("run_name", e["name"])
            if run_name in results and results[run_name].source != path:
                if run_name not in duplicates:
                    print(f"report: {run_name} is in {results[run_name].source} and {path}; keeping the first",
                          file=sys.stderr)
                    duplicates.add(run_name)
                continue
            r = results.setdefault(run_name, Result(run_name, path))
            if e.get("run_type") == "aggregate":
                r.aggregates[e.get("aggregate_name", "")] = e
            else:
                r.iterations.append(e)
            if e.get("label"):
                r.label = e["label"]
    return results, contexts


def fmt_time(ns):
    if ns is None:
        return "–"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.3g} µs" if ns < 1e5 else f"{ns / 1e3:.0f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.3g} ms" if ns < 1e8 else f"{ns / 1e6:.0f} ms"
    return f"{ns / 1e9:.3g} s"


def fmt_ratio(x):
    if x is None:
        return "–"
    return f"{x:.3g}×" if x < 100 else f"{x:.0f}×"


def table_head(w, head):
    """A Markdown table's header row and alignment row (first column left, the others right)."""
    w("| " + " | ".join(head) + " |")
    w("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")


def encoder_flops(s, d, f):
    return 8 * s * d * d + 4 * s * s * d + 4 * s * d * f


def step_flops(t, m, d, f):
    """One decoder step at position t - 1 (stf_peers::decoder_step_flops): 12·D² + 4·T·D + 4·M·D + 4·D·F."""
    return 12 * d * d + 4 * t * d + 4 * m * d + 4 * d * f


def steps_of(results):
    """-> {(T, M, D, H, F): {impl: Result}} of the DecoderStep benchmarks."""
    out = {}
    for r in results.values():
        m = STEP_RE.match(r.name)
        if m:
            out.setdefault(tuple(int(v) for v in m.group(2, 3, 4, 5, 6)), {})[m.group(1)] = r
    return out


def build(results, field):
    """-> encoder {shape: {impl: Result}}, fma {isa: Result}, gemm {(M, K, N): {impl: Result}} in first-seen
    order, others [Result]."""
    encoder, fma, gemm, others = {}, {}, {}, []
    for r in results.values():
        if STEP_RE.match(r.name) or INT8_RE.match(r.name) or PAIRED_RE.match(r.name):
            continue
        m = GEMM_RE.match(r.name)
        if m:
            gemm.setdefault(tuple(int(v) for v in m.group(2, 3, 4)), {})[m.group(1)] = r
            continue
        m = ENCODER_RE.match(r.name)
        if m:
            shape = tuple(int(v) for v in m.group(2, 3, 4, 5))
            encoder.setdefault(shape, {})[m.group(1)] = r
            continue
        m = FMA_RE.match(r.name)
        if m:
            fma[m.group(1)] = r
            continue
        if r.latency_ns(field) is not None and not DECODE_RE.match(r.name):
            others.append(r)
    return encoder, fma, gemm, others


def decode_rows(results, field):
    """-> {model: [(mid-window position, ns per token)]} of the DecodeTokens benchmarks."""
    out = {}
    for r in results.values():
        m = DECODE_RE.match(r.name)
        t = r.latency_ns(field) if m else None
        if t:
            out.setdefault(m.group(1), []).append((int(m.group(2)) + (DECODE_WINDOW - 1) / 2, t / DECODE_WINDOW))
    return {k: sorted(v) for k, v in out.items()}


def line_fit(points):
    """Least squares y = a + b·x over [(x, y)] -> (a, b, r²), or None with fewer than 3 points."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    syy = sum((y - my) ** 2 for _, y in points)
    if sxx == 0 or syy == 0:
        return None
    b = sxy / sxx
    return my - b * mx, b, sxy * sxy / (sxx * syy)


def peak_of(fma):
    """(FLOP/s, isa) of the highest measured FMA peak, or (None, None)."""
    best = (None, None)
    for isa, r in fma.items():
        v = r.counter("FLOP/s")
        if v and (best[0] is None or v > best[0]):
            best = (v, isa)
    return best

def margin(value, threshold, spread):
    """(met, within the spread or None when unknown) of value >= threshold."""
    met = value >= threshold
    if spread is None:
        return met, None
    return met, abs(value / threshold - 1) <= spread


def add_spreads(*spreads):
    return None if any(x is None for x in spreads) else sum(spreads)


def verdict(parts, flag="within the spread"):
    """parts: [(name, met, within)] -> 'met (name)' / 'not met', flagged (`flag`) when a spread could flip it."""
    met = [p for p in parts if p[1]]
    if met:
        text = "met (" + ", ".join(p[0] for p in met) + ")"
        unsure = all(p[2] is not False for p in met)  # no part clearly met
    else:
        text = "not met"
        unsure = any(p[2] is not False for p in parts)
    known = all(p[2] is not None for p in (met or parts))
    if unsure:
        text += f", **{flag}**" if known else ", spread unknown (one repetition)"
    return text


def missing_step_peers(peers):
    """'' or 'no result from X (source); ...' for the STEP_PEERS without a latency in `peers`."""
    gone = [i for i in STEP_PEERS if i not in peers]
    return "; ".join(f"no result from {impl_title(i)} ({STEP_PEERS[i]})" for i in gone)


def step_peer_ratio(per, field):
    """-> (fastest peer, its latency / the fastest stf variant's, the two spreads summed) of one step
    shape, or (None, None, None) without an stf variant or a peer."""
    stf = {i: r.latency_ns(field) for i, r in per.items() if i.startswith("stf.") and r.latency_ns(field)}
    peers = {i: r.latency_ns(field) for i, r in per.items() if not i.startswith("stf.") and r.latency_ns(field)}
    if not stf or not peers:
        return None, None, None
    best, fastest = min(stf, key=stf.get), min(peers, key=peers.get)
    return fastest, peers[fastest] / stf[best], add_spreads(per[best].spread(field), per[fastest].spread(field))


def products_alone_ns(shape, impl, gemm, field):
    """The latency [ns] of an encoder layer's six linears as `impl`'s products alone (the Gemm rows of
    the same run: 4·[S, D]·[D, D] + [S, D]·[D, F] + [S, F]·[F, D]), or None when one is missing. The
    layer cannot run faster than its products with the same kernel (its attention, softmax,
    LayerNorms, transposes and residuals come on top): with the attention's products at the FMA peak
    added (target_rows), this bounds its speed, the ceiling."""
    s, d, _, f = shape
    times = [gemm.get(mkn, {}).get(impl) for mkn in ((s, d, d), (s, d, f), (s, f, d))]
    if any(r is None or not r.latency_ns(field) for r in times):
        return None
    return 4 * times[0].latency_ns(field) + times[1].latency_ns(field) + times[2].latency_ns(field)


def ceiling_note(parts):
    """'' or '; **beyond the products' ceiling**' when every part of a missed target is out of its reach.
    parts: [(met, reachable)], reachable None where no ceiling is known."""
    if any(met for met, _ in parts) or any(reach is not False for _, reach in parts):
        return ""
    return "; **beyond the products' ceiling**"


def target_rows(encoder, steps, fma, field, gemm=None):
    """The rows of the targets table: [shape, target, measured, ceiling, verdict]. gemm (build's): the
    products alone, for each encoder shape's ceiling (products_alone_ns; '–' where the run has none)."""
    peak, peak_isa = peak_of(fma)
    if not peak:
        return []
    peak_spread = fma[peak_isa].spread(field) if peak_isa in fma else None
    rows = []
    cases = [(s, per, encoder_flops(s[0], s[1], s[3]), False) for s, per in encoder.items()]
    cases += [(s, per, step_flops(s[0], s[1], s[2], s[4]), True) for s, per in steps.items()]
    cases.sort(key=lambda c: (c[3], c[2]))
    for shape, per, flops, is_step in cases:
        stf = {i: r for i, r in per.items() if i.startswith("stf.") and r.latency_ns(field)}
        if not stf:
            continue
        best = min(stf, key=lambda i: stf[i].latency_ns(field))
        t_stf, s_stf = stf[best].latency_ns(field), stf[best].spread(field)
        pct = flops / (t_stf * 1e-9) / peak
        pct_met, pct_within = margin(pct, 0.9, add_spreads(s_stf, peak_spread))
        name = ("step " if is_step else "") + "×".join(map(str, shape))
        pct_text = f"{100 * pct:.1f}% of peak ({best})"
        peers = {i: r for i, r in per.items() if not i.startswith("stf.") and r.latency_ns(field)}
        missing = missing_step_peers(peers) if is_step else ""
        parts = [("≥ 90% of peak", pct_met, pct_within)]
        # the ceiling: the same layer with nothing but its products, as the same variant runs them alone
        t_prod = None if is_step else products_alone_ns(shape, best, gemm or {}, field)
        if t_prod:  # the attention's products (Q·Kᵀ, P·V: 4·S²·D) at the FMA peak, the fastest they can be
            t_prod += 4.0 * shape[0] * shape[0] * shape[1] / peak * 1e9
        pct_ceiling = flops / (t_prod * 1e-9) / peak if t_prod else None
        reach = [(pct_met, None if pct_ceiling is None else pct_ceiling >= 0.9)]
        if peers:
            fastest = min(peers, key=lambda i: peers[i].latency_ns(field))
            ratio = peers[fastest].latency_ns(field) / t_stf
            r_met, r_within = margin(ratio, 1.4, add_spreads(s_stf, peers[fastest].spread(field)))
            parts.insert(0, ("≥ 1.4× every peer", r_met, r_within))
            measured = f"{fmt_ratio(ratio)} the speed of the fastest peer, {impl_title(fastest)}; {pct_text}"
            ratio_ceiling = peers[fastest].latency_ns(field) / t_prod if t_prod else None
            reach.insert(0, (r_met, None if ratio_ceiling is None else ratio_ceiling >= 1.4))
        else:
            measured = f"no peer (n/a); {pct_text}"
            ratio_ceiling = None
        pct_ceiling_text = f"at most {100 * pct_ceiling:.1f}% of peak" if t_prod else "–"
        ceiling = "–"
        if t_prod:
            ceiling = ("at most " + (f"{fmt_ratio(ratio_ceiling)} the fastest peer, " if ratio_ceiling else "")
                       + f"{100 * pct_ceiling:.1f}% of peak ({fmt_time(t_prod)})")
        if missing:
            measured += f"; {missing}"
        rows.append([name, "≥ 1.4× every peer or ≥ 90% of peak", measured, ceiling,
                     verdict(parts) + ceiling_note(reach)])
        if not is_step and shape[0] == 128:
            rows.append([name, "≥ 90% of peak (128 rows)", pct_text, pct_ceiling_text,
                         verdict([("", pct_met, pct_within)]).replace(" ()", "")
                         + ceiling_note([(pct_met, None if pct_ceiling is None else pct_ceiling >= 0.9)])])
        if not is_step and shape == (10, 16, 2, 32):
            m, within = margin(pct, 0.5, add_spreads(s_stf, peak_spread))
            rows.append([name, "≥ 50% of peak", pct_text, pct_ceiling_text,
                         verdict([("", m, within)]).replace(" ()", "")
                         + ceiling_note([(m, None if pct_ceiling is None else pct_ceiling >= 0.5)])])
    return rows


def quartile_margin(value, q1, q3, threshold):
    """(met, within) of a paired median against threshold, as margin's: within when the rounds' quartiles
    lie on both sides of it."""
    return value >= threshold, (q1 >= threshold) != (q3 >= threshold)


def paired_verdict(parts):
    """verdict, flagged when the rounds' quartiles straddle the threshold of every part that decides it."""
    return verdict(parts, "within the rounds' quartiles")


PAIRED_PEERS = ("eigen", "onednn")  # (counters speed_<impl>)


def paired_rows(results):
    """The rows of the paired table: [shape, stf, speed per PAIRED_PEERS, % of peak, (a), (b) or (c)] of the
    Paired/EncoderLayer benchmarks (bench_peers' register_paired), in shape order; counters are the
    median over the benchmark's repetitions."""
    found = []
    for r in results.values():
        m = PAIRED_RE.match(r.name)
        if m and r.counter("stf_ns"):
            found.append((tuple(int(x) for x in m.groups()[:4]), r))
    rows = []
    for shape, r in sorted(found, key=lambda c: encoder_flops(c[0][0], c[0][1], c[0][3])):
        def q(key):
            return r.counter(key), r.counter(key + "_q1"), r.counter(key + "_q3")

        def text(v, pct=False):
            if pct:
                return f"{100 * v[0]:.1f}% [{100 * v[1]:.1f}, {100 * v[2]:.1f}]"
            return f"{fmt_ratio(v[0])} [{v[1]:.3g}, {v[2]:.3g}]"

        cells = [f"{fmt_time(r.counter('stf_ns'))} [{fmt_time(r.counter('stf_ns_q1'))}, {fmt_time(r.counter('stf_ns_q3'))}]"]
        speeds = {i: q("speed_" + i) for i in PAIRED_PEERS if r.counter("speed_" + i) is not None}
        cells += [text(speeds[i]) if i in speeds else "–" for i in PAIRED_PEERS]
        peak = q("peak_fraction") if r.counter("peak_fraction") is not None else None
        cells.append(text(peak, True) if peak else "–")
        parts = []
        if speeds:
            binding = min(speeds, key=lambda i: speeds[i][0])
            v, q1, q3 = speeds[binding]
            met, resolved = quartile_margin(v, q1, q3, 1.4)
            parts.append((f"≥ 1.4× every peer: {impl_title(binding)} binds", met, resolved))
        if peak:
            met, resolved = quartile_margin(*peak, 0.9)
            parts.append(("≥ 90% of peak", met, resolved))
        cells.append(paired_verdict(parts) if parts else "–")
        extra = "–"
        if peak and shape[0] == 128:
            extra = "≥ 90% of peak: " + paired_verdict([("", *quartile_margin(*peak, 0.9))]).replace(" ()", "")
        elif peak and shape == (10, 16, 2, 32):
            extra = "≥ 50% of peak: " + paired_verdict([("", *quartile_margin(*peak, 0.5))]).replace(" ()", "")
        rows.append(["×".join(map(str, shape))] + cells + [extra])
    return rows


def int8_of(results):
    """-> {shape: {impl: Result}} of the EncoderLayerInt8 benchmarks."""
    out = {}
    for r in results.values():
        m = INT8_RE.match(r.name)
        if m:
            out.setdefault(tuple(int(v) for v in m.group(2, 3, 4, 5)), {})[m.group(1)] = r
    return out


def int8_rows(results, encoder, field):
    """The rows of the int8 table, one per (shape, stf variant): [cells]. The float layer of a row is
    EncoderLayer/stf.<variant> from the file the int8 layer came from (one run, interleaved with it);
    PyTorch's int8 is its fastest engine. Targets (issue 23), per int8 format: (a) ≥ 2× faster than
    the float layer at S ≥ 64; (b) faster than PyTorch's int8 at every shape."""
    int8 = int8_of(results)
    rows = []
    for shape in sorted(int8, key=lambda s: encoder_flops(s[0], s[1], s[3])):
        per = int8[shape]
        torch_q = {i: r for i, r in per.items() if i.startswith("torch.") and r.latency_ns(field)}
        fastest = min(torch_q, key=lambda i: torch_q[i].latency_ns(field)) if torch_q else None
        t_torch = torch_q[fastest].latency_ns(field) if fastest else None
        variants = sorted({i.rsplit(".", 1)[0] for i in per if i.startswith("stf.") and i.count(".") == 2},
                          key=impl_key)
        for variant in variants:
            fl = encoder.get(shape, {}).get(variant)
            same_file = {f: per.get(f"{variant}.{f}") for f in INT8_FORMATS}
            if fl is not None and any(r is not None and r.source != fl.source for r in same_file.values()):
                fl = None  # a float layer of another run: no ratio
            t_float = fl.latency_ns(field) if fl else None
            cells = ["×".join(map(str, shape)), impl_title(variant), fmt_time(t_float)]
            speed, vs_torch, float_verdict, torch_verdict = [], [], [], []
            for f in INT8_FORMATS:
                r = same_file[f]
                t = r.latency_ns(field) if r else None
                cells.append(fmt_time(t))
                ratio = t_float / t if t and t_float else None
                tratio = t_torch / t if t and t_torch else None
                speed.append(fmt_ratio(ratio))
                vs_torch.append(fmt_ratio(tratio))
                if ratio is not None and shape[0] >= 64:
                    met, within = margin(ratio, 2.0, add_spreads(r.spread(field), fl.spread(field)))
                    float_verdict.append(f"{f} " + verdict([("", met, within)]).replace(" ()", "") +
                                         f" ({fmt_ratio(ratio)})")
                if tratio is not None:
                    met, within = margin(tratio, 1.0, add_spreads(r.spread(field), torch_q[fastest].spread(field)))
                    torch_verdict.append(f"{f} " + verdict([("", met, within)]).replace(" ()", "") +
                                         f" ({fmt_ratio(tratio)})")
            cells += speed
            cells += [fmt_time(t_torch) + (f" ({fastest[6:]})" if fastest else "")] + vs_torch
            cells.append("; ".join(float_verdict) if float_verdict else ("n/a (S < 64)" if shape[0] < 64 else "–"))
            cells.append("; ".join(torch_verdict) if torch_verdict else "no PyTorch int8")
            spreads = [fl.spread(field) if fl else None] + [same_file[f].spread(field) if same_file[f] else None
                                                           for f in INT8_FORMATS]
            spreads.append(torch_q[fastest].spread(field) if fastest else None)
            cells.append(" / ".join("–" if v is None else f"{100 * v:.0f}%" for v in spreads))
            rows.append(cells)
    return rows


def markdown(results, contexts, field, notes):
    encoder, fma, gemm, others = build(results, field)
    peak, peak_isa = peak_of(fma)
    shapes = sorted(encoder, key=lambda s: encoder_flops(s[0], s[1], s[3]))
    impls = sorted({i for per in encoder.values() for i in per}, key=impl_key)
    stf_impls = [i for i in impls if i.startswith("stf.")]
    peers = [i for i in impls if not i.startswith("stf.")]
    out = []
    w = out.append
    w("# statiformer benchmark report\n")
    for n in notes:
        w(f"> {n}\n")
    w(f"Latency: median of the repetitions, {'real (wall-clock)' if field == 'real_time' else 'CPU'} time per "
      f"forward call, one thread, batch 1, all tokens valid. "
      f"GFLOP/s counts the matrix products only: 8·S·D² + 4·S²·D + 4·S·D·F. "
      + (f"Peak: the measured FMA peak of this core, {peak / 1e9:.1f} GFLOP/s ({peak_isa})." if peak else
         "No FMA peak was measured.") + "\n")

    if shapes:
        w("## Encoder layer (post-norm, ReLU): latency\n")
        w("Shape is (SeqLen × DModel × NHeads × DFf). `best stf / X` is the latency of the fastest stf "
          "kernel variant divided by X's (above 1: stf is slower).\n")
        head = ["shape", "MFLOP"] + [impl_title(i) for i in impls]
        if stf_impls:
            head += [f"best stf / {impl_title(p)}" for p in peers]
        table_head(w, head)
        for shape in shapes:
            per = encoder[shape]
            lat = {i: per[i].latency_ns(field) if i in per else None for i in impls}
            row = ["×".join(map(str, shape)), f"{encoder_flops(shape[0], shape[1], shape[3]) / 1e6:.3g}"]
            row += [fmt_time(lat[i]) for i in impls]
            stf_lat = [lat[i] for i in stf_impls if lat[i]]
            best = min(stf_lat) if stf_lat else None
            if stf_impls:
                row += [fmt_ratio(best / lat[p]) if best and lat[p] else "–" for p in peers]
            w("| " + " | ".join(row) + " |")
        w("")

        spreads = {(shape, i): encoder[shape][i].spread(field) for shape in shapes for i in impls
                   if i in encoder[shape]}
        if any(v is not None for v in spreads.values()):
            w("## Encoder layer: spread of the repetitions\n")
            w("(max − min) / median of each latency's repetitions in this run. A ratio whose distance "
              "from a target is within the spreads of its two latencies is not resolved by one run.\n")
            head = ["shape"] + [impl_title(i) for i in impls]
            table_head(w, head)
            for shape in shapes:
                row = ["×".join(map(str, shape))]
                for i in impls:
                    v = spreads.get((shape, i))
                    row.append("–" if v is None else f"{100 * v:.1f}%")
                w("| " + " | ".join(row) + " |")
            w("")

        w("## Encoder layer: GFLOP/s (% of the FMA peak)\n")
        head = ["shape"] + [impl_title(i) for i in impls]
        table_head(w, head)
        for shape in shapes:
            per = encoder[shape]
            flops = encoder_flops(shape[0], shape[1], shape[3])
            row = ["×".join(map(str, shape))]
            for i in impls:
                t = per[i].latency_ns(field) if i in per else None
                if not t:
                    row.append("–")
                    continue
                rate = flops / (t * 1e-9)
                row.append(f"{rate / 1e9:.3g}" + (f" ({100 * rate / peak:.1f}%)" if peak else ""))
            w("| " + " | ".join(row) + " |")
        w("")
        for impl in impls:
            labs = {per[impl].label for per in encoder.values() if impl in per and per[impl].label}
            if len(labs) == 1:
                w(f"{impl_title(impl)} ran the {labs.pop()} at every shape.\n")
            elif labs:
                w(f"{impl_title(impl)}: " + "; ".join(
                    f"{'×'.join(map(str, s))}: {encoder[s][impl].label}" for s in shapes
                    if impl in encoder[s] and encoder[s][impl].label) + "\n")
        if stf_impls and len(stf_impls) > 1:
            best = []
            for shape in shapes:
                lat = {i: encoder[shape][i].latency_ns(field) for i in stf_impls if i in encoder[shape]}
                lat = {i: t for i, t in lat.items() if t}
                if lat:
                    best.append(min(lat, key=lat.get))
            if best:
                names = sorted(set(best), key=impl_key)
                w("Fastest stf variant: " + (f"{names[0]} at every shape." if len(names) == 1 else
                                            ", ".join(f"{'×'.join(map(str, s))}: {b}" for s, b in zip(shapes, best)))
                  + "\n")

    steps = steps_of(results)
    if steps:
        # every expected peer gets a column, "–" where it has no result (named below the table)
        step_impls = sorted({i for per in steps.values() for i in per} | set(STEP_PEERS), key=impl_key)
        step_stf = [i for i in step_impls if i.startswith("stf.")]
        w("## Decoder step through the K/V cache\n")
        w("One new token through a post-norm decoder layer (self-attention, cross-attention, "
          "feed-forward) at the last of T target positions, with the T − 1 earlier positions and the M "
          "memory rows already in the K/V cache: statiformer's `DecoderLayer::step`. Shape is "
          "(T × M × DModel × NHeads × DFf). MFLOP counts the step's products: 12·D² + 4·T·D + 4·M·D + "
          "4·D·F. Its peers are the same incremental step as their users write it, with the same "
          "weights: Eigen 3.4 (bench/peers/eigen_step.hpp: GEMVs on the weights mapped in place, a K/V "
          "cache allocated once, checked against stf's step to 1e-5 by test_eigen_step) and PyTorch "
          "(torch_bench.py: F.linear on nn.TransformerDecoderLayer's weights, preallocated K/V cache "
          "tensors, per-head softmax; checked against the layer's full forward over the prefix to 1e-5 "
          "before it is timed). `stf speed` is the fastest peer's latency divided by the fastest stf "
          "variant's (above 1: stf is faster); `spread` sums the two latencies' (max − min) / median. "
          "A one-row step is matrix-vector products: it cannot approach the FMA peak.\n")
        head = (["shape", "MFLOP"] + [impl_title(i) for i in step_impls] +
                ["fastest peer", "stf speed", "spread", "best stf GFLOP/s"])
        table_head(w, head)
        missing = {}
        for shape, per in steps.items():
            flops = step_flops(shape[0], shape[1], shape[2], shape[4])
            lat = {i: per[i].latency_ns(field) if i in per else None for i in step_impls}
            row = ["×".join(map(str, shape)), f"{flops / 1e6:.3g}"] + [fmt_time(lat[i]) for i in step_impls]
            fastest, ratio, spread = step_peer_ratio(per, field)
            row += [impl_title(fastest) if fastest else "n/a", fmt_ratio(ratio) if ratio else "n/a",
                    "–" if spread is None else f"{100 * spread:.1f}%"]
            best = min((lat[i] for i in step_stf if lat[i]), default=None)
            rate = flops / (best * 1e-9) if best else None
            row += [(f"{rate / 1e9:.3g}" + (f" ({100 * rate / peak:.1f}%)" if peak else "")) if rate else "–"]
            w("| " + " | ".join(row) + " |")
            for i in STEP_PEERS:
                if not lat[i]:
                    missing.setdefault(i, []).append("×".join(map(str, shape)))
        w("")
        for i, shapes_missing in missing.items():
            w(f"{impl_title(i)}: no result at {', '.join(shapes_missing)} ({STEP_PEERS[i]} missing from this "
              "run).\n")
        for i in step_impls:
            labs = ["×".join(map(str, s)) + ": " + per[i].label for s, per in steps.items() if i in per and per[i].label]
            if labs:
                w(f"{impl_title(i)} (step): {'; '.join(labs)}.\n")

    targets = target_rows(encoder, steps, fma, field, gemm)
    if targets:
        w("## Targets (issue 26)\n")
        w("Per shape, the fastest stf variant against: (a) ≥ 1.4× faster than every peer (the fastest "
          "peer binds), or ≥ 90 % of the FMA peak of the widest ISA measured (near the peak no "
          "implementation can be 1.4× faster; the verdict says which part holds); (b) ≥ 90 % of the peak "
          "at both 128-row shapes; (c) ≥ 50 % of the peak at 10×16×2×32. A margin is **within the "
          "spread** when its distance from the threshold is no larger than the sum of the (max − min) / "
          "median spreads of the repetitions behind it (stf and peer, or stf and the FMA peak): one run "
          "does not resolve it. With one repetition the spread is unknown. The decoder-step rows (`step`) "
          "judge (a) against the step's peers (Eigen 3.4, PyTorch); a peer without a result is named in "
          "the row. Where the run timed the layer's six linears alone with the same variant (the Gemm "
          "rows), the ceiling column gives the ceiling they set: the layer with nothing but its products, the linears "
          "4·[S, D]·[D, D] + [S, D]·[D, F] + [S, F]·[F, D] at their measured latencies and the attention's "
          "4·S²·D FLOP at the FMA peak (no faster is possible), as a ratio to the fastest peer and a % of "
          "the peak, with that time in brackets (an estimate: inside the layer the feed-forward runs in chunks of 128 "
          "hidden units, and AVX-512 shares the Q, K and V products' tiles). A target missed whose every "
          "part is also above that ceiling is marked **beyond the products' ceiling**: reaching it needs "
          "the products faster than they ran alone in this run, whatever the rest of the layer costs.\n")
        w("| shape | target | measured | ceiling | verdict |")
        w("|---|---|---|---|---|")
        for row in targets:
            w("| " + " | ".join(row) + " |")
        w("")

    paired = paired_rows(results)
    if paired:
        w("## Targets from paired rounds (issue 26)\n")
        w("`Paired/EncoderLayer/<shape>` (bench_peers): stf's layer (the build's variant), each peer and the "
          "FMA peak loop of the widest ISA timed in turn, one slot of a few milliseconds each, round after "
          "round, so that the rounds' ratios do not see the core's speed move between levels as latencies "
          "measured seconds apart do. Per cell the median over the rounds and its quartiles [q1, q3] "
          "(the medians of the benchmark's repetitions); speeds are the peer's latency over stf's (above "
          "1: stf is faster), % of peak stf's FLOP/s over the peak loop's of the same round. The same "
          "targets as above, judged on those medians; a verdict is **within the rounds' quartiles** when "
          "the quartiles of every figure that decides it lie on both sides of its threshold.\n")
        w("| shape | stf | vs " + " | vs ".join(impl_title(i) for i in PAIRED_PEERS)
          + " | % of peak | ≥ 1.4× every peer or ≥ 90% of peak | 128 rows: ≥ 90%; 10×16: ≥ 50% |")
        w("|---|" + "---:|" * (3 + len(PAIRED_PEERS)) + "---|")
        for row in paired:
            w("| " + " | ".join(row) + " |")
        w("")

    rows8 = int8_rows(results, encoder, field)
    if rows8:
        int8 = int8_of(results)
        vnni = sorted({ctx["cpu_vnni"] for _, ctx in contexts if ctx.get("cpu_vnni")})
        w("## Encoder layer, int8 (issue 23)\n")
        w("The post-norm ReLU encoder layer with its six linears in int8 (kernels/QUANTIZATION.md): w8a32 "
          "(int8 weights, float activations) and w8a8 (activations quantized per row; on x86 the products "
          "run `vpdpbusd` where the CPU has VNNI); attention Q·Kᵀ and P·V stay float, except in "
          "w8a8_int8attn (w8a8 with `LayerOptions::int8_attention`: Q, K and V rows quantized per head, "
          "int32 sums; on x86 `vpdpbusd` where the CPU has VNNI). `float` is the "
          "same variant's float layer timed in the same executable and run as the int8 one (repetitions "
          "interleaved), so `float / int8` is a one-run ratio. PyTorch int8: its layer with the six "
          "linears dynamically quantized (torch.ao.nn.quantized.dynamic.Linear, per-channel int8 weights, "
          "the counterpart of w8a8), its fastest quantized engine (in brackets), one thread; `PyTorch / "
          "int8` above 1: stf is faster. Targets, per format: (a) ≥ 2× faster than the float layer at "
          "S ≥ 64 on a VNNI machine; (b) faster than PyTorch's int8 at every shape. A verdict is **within "
          "the spread** when the margin is no larger than the two latencies' repetition spreads.\n")
        if vnni:
            w("CPU: " + "; ".join(vnni) + ".\n")
        head = ["shape", "variant", "float"] + [f"{f}" for f in INT8_FORMATS] + \
            [f"float / {f}" for f in INT8_FORMATS] + ["PyTorch int8"] + [f"PyTorch / {f}" for f in INT8_FORMATS] + \
            ["(a) ≥ 2× float, S ≥ 64", "(b) faster than PyTorch int8",
             "spread: float / " + " / ".join(INT8_FORMATS) + " / PyTorch"]
        table_head(w, head)
        for row in rows8:
            w("| " + " | ".join(row) + " |")
        w("")
        engines = sorted({i for per in int8.values() for i in per if i.startswith("torch.")})
        for e in engines:
            # torch_bench's label: "<how it ran>; <its distance from the float layer>"
            labs = [(s, per[e].label.split("; ", 1)) for s, per in int8.items() if e in per and per[e].label]
            if labs:
                how = sorted({lab[0] for _, lab in labs})
                diffs = [(s, lab[1].split(" = ")) for s, lab in labs if len(lab) > 1]
                what = sorted({d[0] for _, d in diffs if len(d) > 1})
                w(f"PyTorch int8 ({e[6:]}): " + "; ".join(how) + "." + (
                    f" {' '.join(what)} against its float layer: " + ", ".join(
                        f"{d[1]} ({'×'.join(map(str, s))})" for s, d in diffs if len(d) > 1) + "." if what else "")
                  + "\n")

    if fma:
        w("## FMA peak of this core\n")
        w("Independent FMA chains (c = c·a + b) in registers; one multiply-add = 2 FLOP.\n")
        w("| benchmark | GFLOP/s | time per call |")
        w("|---|---:|---:|")
        for isa in sorted(fma, key=lambda i: fma[i].counter("FLOP/s") or 0):
            r = fma[isa]
            w(f"| `{r.name}` | {(r.counter('FLOP/s') or 0) / 1e9:.1f} | {fmt_time(r.latency_ns(field))} |")
        w("")

    if gemm:
        gimpls = sorted({i for per in gemm.values() for i in per}, key=impl_key)
        w("## Matrix products alone\n")
        w("The encoder layer's products at each shape (S, D, F): [S, D]·[D, D] (each projection), "
          "[S, D]·[D, F] and [S, F]·[F, D] (the feed-forward), no bias; (M × K × N) is [M, K]·[K, N]. "
          "GFLOP/s = 2·M·K·N per call, with the % of the FMA peak: how near the peak a product alone gets, "
          "which bounds what a whole layer can reach. The last row, 6 × 128 × 64, is one register tile of "
          "the AVX-512 kernel (four tiles of 6 rows × 2 vectors of the AVX2 one) over one block of its "
          "reduction with every operand in L1: the product kernel's own ceiling on this machine.\n")
        head = ["M × K × N"] + [impl_title(i) for i in gimpls] + [f"GFLOP/s {impl_title(i)}" for i in gimpls]
        table_head(w, head)
        for mkn, per in gemm.items():
            lat = {i: per[i].latency_ns(field) if i in per else None for i in gimpls}
            row = ["×".join(map(str, mkn))] + [fmt_time(lat[i]) for i in gimpls]
            for i in gimpls:
                if not lat[i]:
                    row.append("–")
                    continue
                rate = 2.0 * mkn[0] * mkn[1] * mkn[2] / (lat[i] * 1e-9)
                row.append(f"{rate / 1e9:.3g}" + (f" ({100 * rate / peak:.1f}%)" if peak else ""))
            w("| " + " | ".join(row) + " |")
        w("")

    for model, pts in decode_rows(results, field).items():
        w(f"## Greedy decoding through the K/V cache ({model})\n")
        w(f"Time per token over windows of {DECODE_WINDOW} steps, against the window's middle position. "
          "Each step's projections and feed-forward cost the same at every position; its self-attention "
          "reads every cached position, so the time should grow linearly.\n")
        w("| position | time per token |")
        w("|---:|---:|")
        for x, y in pts:
            w(f"| {x:g} | {fmt_time(y)} |")
        fit = line_fit(pts)
        if fit:
            a, b, r2 = fit
            w(f"\nLeast-squares line: {fmt_time(a)} + {fmt_time(b)} per position (r² = {r2:.3f}).\n")
        else:
            w("")

    if others:
        w("## stf per layer and per kernel (bench_layers)\n")
        w("| benchmark | latency | GFLOP/s | % of peak |")
        w("|---|---:|---:|---:|")
        for r in others:
            rate = r.counter("FLOP/s")
            w(f"| `{r.name}` | {fmt_time(r.latency_ns(field))} | "
              f"{f'{rate / 1e9:.3g}' if rate else '–'} | "
              f"{f'{100 * rate / peak:.2f}%' if rate and peak else '–'} |")
        w("")

    w("## Runs\n")
    keys = ["date", "host_name", "num_cpus", "mhz_per_cpu", "load_avg", "stf_kernels", "cpu_vnni", "stf_build",
            "eigen_peer",
            "onednn_peer",
            "fma_peak_isas", "openblas", "torch_version", "torch_package", "torch_num_threads", "torch_fast_path",
            "torch_int8_engines",
            "blas_alternative", "blas_loaded", "libopenblas0_serial", "torch_timing"]
    for path, ctx in contexts:
        w(f"- `{os.path.basename(path)}` ({os.path.basename(str(ctx.get('executable', '?')))})")
        for k in keys:
            if k in ctx and ctx[k] not in ("", None):
                v = ctx[k]
                if isinstance(v, list):
                    v = ", ".join(f"{x:.2f}" if isinstance(x, float) else str(x) for x in v)
                w(f"  - {k}: {v}")
    w("")
    return "\n".join(out)


def plot(results, field, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib is not available (apt-get install python3-matplotlib); no PNG written",
              file=sys.stderr)
        return False
    encoder, fma, _, _ = build(results, field)
    if not encoder:
        print("report: no EncoderLayer results; no PNG written", file=sys.stderr)
        return False
    shapes = sorted(encoder, key=lambda s: encoder_flops(s[0], s[1], s[3]))
    impls = sorted({i for per in encoder.values() for i in per}, key=impl_key)
    xs = list(range(len(shapes)))
    xlabels = ["×".join(map(str, s)) for s in shapes]
    fig, (ax_t, ax_f) = plt.subplots(1, 2, figsize=(14, 5.8))
    markers = "osD^v<>phX*"
    for n, impl in enumerate(impls):
        lat, rate, px = [], [], []
        for x, shape in zip(xs, shapes):
            r = encoder[shape].get(impl)
            t = r.latency_ns(field) if r else None
            if t:
                px.append(x)
                lat.append(t / 1e3)
                rate.append(encoder_flops(shape[0], shape[1], shape[3]) / (t * 1e-9) / 1e9)
        title = impl_title(impl)
        labs = {encoder[s][impl].label for s in shapes if impl in encoder[s] and encoder[s][impl].label}
        if len(labs) == 1 and "path" not in title:
            title += f", {labs.pop().split(' (')[0]}"
        style = dict(marker=markers[n % len(markers)], linewidth=2, markersize=7, label=title)
        if impl.startswith("stf."):
            style["linestyle"] = "-"
        else:
            style["linestyle"] = "--"
        ax_t.plot(px, lat, **style)
        ax_f.plot(px, rate, **style)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("latency per layer forward [µs] (log)")
    ax_t.set_title("Encoder layer latency (lower is better)")
    ax_f.set_yscale("log")
    ax_f.set_ylabel("GFLOP/s (matrix products) (log)")
    ax_f.set_title("Encoder layer throughput vs FMA peak")
    for isa, r in sorted(fma.items(), key=lambda kv: -(kv[1].counter("FLOP/s") or 0)):
        v = r.counter("FLOP/s")
        if v:
            ax_f.axhline(v / 1e9, color="grey", linestyle=":", linewidth=1.2)
            ax_f.annotate(f"FMA peak {isa}: {v / 1e9:.0f} GFLOP/s", (xs[-1], v / 1e9), textcoords="offset points",
                          xytext=(0, 3), ha="right", fontsize=9, color="dimgrey")
    for ax in (ax_t, ax_f):
        ax.set_xticks(xs)
        ax.set_xticklabels(xlabels, rotation=20)
        ax.set_xlabel("shape: SeqLen×DModel×NHeads×DFf")
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", alpha=0.12)
    ax_t.legend(fontsize=9, loc="upper left")
    fig.suptitle("statiformer vs peers: one nn.TransformerEncoderLayer forward, float32, one thread", fontsize=12)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="Google Benchmark JSON files")
    ap.add_argument("--md", default="report.md", help="Markdown output (default report.md)")
    ap.add_argument("--png", help="PNG output (default: report.png beside the Markdown output)")
    ap.add_argument("--time", choices=("real", "cpu"), default="cpu",
                    help="which time is the latency (default cpu: single-threaded programs)")
    ap.add_argument("--note", action="append", default=[], help="a line quoted at the top of the report")
    args = ap.parse_args()
    field = "real_time" if args.time == "real" else "cpu_time"
    if args.png is None:
        args.png = os.path.join(os.path.dirname(args.md), "report.png")
    results, contexts = load([p for p in args.inputs if os.path.exists(p)])
    missing = [p for p in args.inputs if not os.path.exists(p)]
    for p in missing:
        print(f"report: {p} does not exist; left out", file=sys.stderr)
    if not results:
        print("report: no benchmark results", file=sys.stderr)
        return 1
    md = markdown(results, contexts, field, args.note)
    with open(args.md, "w") as f:
        f.write(md)
    print(f"report: wrote {args.md}")
    if plot(results, field, args.png):
        print(f"report: wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
