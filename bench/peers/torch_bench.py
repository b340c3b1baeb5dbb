#!/usr/bin/python3
"""PyTorch's nn.TransformerEncoderLayer at the shapes of bench_peers, single-threaded, written as
Google Benchmark JSON so that bench/report/report.py reads it with the C++ results.

Run with Debian's interpreter (python3-torch is installed for it, not for a pyenv python3):

    /usr/bin/python3 bench/peers/torch_bench.py --out build/bench/torch.json [--quick]

Each layer is nn.TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True) in eval mode under
torch.inference_mode(), with torch.set_num_threads(1), on one sequence [1, S, D] with no padding
mask. Its weights are the ones bench_peers binds to stf::EncoderLayer and the Eigen peer (the same
LCG, in the same order), and so is the input.

Benchmarks (names as in bench_peers):
  EncoderLayer/torch/<S>x<D>x<H>x<F>      the plain call. In 1.13 this takes the eval fast path
                                          (one native op, aten::_transformer_encoder_layer_fwd)
                                          when its conditions hold; which path ran is detected
                                          with the profiler and written in the label.
  EncoderLayer/torch_std/<S>x<D>x<H>x<F>  (--standard-path, default in full mode) the same layer
                                          forced onto the standard Python path by an all-zero float
                                          src_mask, which adds 0 to the scores.
  EncoderLayerInt8/torch.<engine>/<S>x<D>x<H>x<F>
                                          (--int8, default yes) PyTorch's int8 counterpart of that
                                          layer for stf's EncoderLayerInt8 (issue 23), once per
                                          quantized engine torch offers (Debian's 1.13: onednn,
                                          qnnpack; no fbgemm): see make_int8_layer.
  DecoderStep/pytorch/<T>x<M>x<D>x<H>x<F>
                                          (--decoder-step, default yes) one new token through the
                                          weights of nn.TransformerDecoderLayer(D, H, F, dropout=0.0,
                                          batch_first=True) in eval mode, written as a PyTorch user
                                          writes generation with a K/V cache (fairseq, HF): see
                                          TorchDecoderStep. Timed at the last of T positions, the
                                          T - 1 before it and the M memory rows' keys and values in
                                          the cache, as DecoderStep/stf.<variant>. Checked first
                                          against the full layer's forward over the whole prefix.

Timing: warm-up, then iterations per repetition calibrated to --min-time seconds, --repetitions
repetitions; real time (perf_counter) and CPU time (process_time) per forward call; entries per
repetition plus mean/median/stddev aggregates, as Google Benchmark writes them.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import sysconfig
import time

# One thread everywhere, before torch (and its BLAS) are loaded.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

PLAN = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "plan.hpp")


def read_plan(path=PLAN):
    """-> (encoder shapes [(S, D, H, F)], decoder steps [(T, M, D, H, F)]): the benchmark plan as
    bench/plan.hpp declares it for the C++ benchmarks (its arrays kEncoderLayers and kDecoderSteps, one
    EncoderShape{...} / DecoderStepShape{...} per entry). Anything else inside an array is an error
    rather than a shape silently missing here."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"//[^\n]*", "", f.read())

    def entries(array, struct, n):
        m = re.search(r"\b%s\{(.*?)\};" % array, text, re.S)
        if not m:
            raise SystemExit(f"torch_bench: {path} declares no {array}")
        entry = r"\b%s\{([^}]*)\}" % struct
        found = [tuple(int(v) for v in e.split(",")) for e in re.findall(entry, m.group(1))]
        rest = re.sub(entry, "", m.group(1)).replace(",", "").strip()
        if rest or not found or any(len(e) != n for e in found):
            raise SystemExit(f"torch_bench: cannot read {array} in {path}: expected {struct}{{...}} entries of "
                             f"{n} integers, found {found}, and {rest!r}")
        return found

    return entries("kEncoderLayers", "EncoderShape", 4), entries("kDecoderSteps", "DecoderStepShape", 5)


# (S, D, H, F) of the EncoderLayer benchmarks, (T, M, D, H, F) of the DecoderStep ones
SHAPES, DECODER_STEP_SHAPES = read_plan()
FAST_PATH_OP = "aten::_transformer_encoder_layer_fwd"


def encoder_flops(s, d, f):
    """Matrix products only, as stf_peers::encoder_flops: 8·S·D² + 4·S²·D + 4·S·D·F."""
    return 8 * s * d * d + 4 * s * s * d + 4 * s * d * f


def decoder_step_flops(pos, m, d, f):
    """Matrix products only, as stf_peers::decoder_step_flops: 12·D² + 4·(pos + 1)·D + 4·M·D + 4·D·F."""
    return 12 * d * d + 4 * (pos + 1) * d + 4 * m * d + 4 * d * f


def encoder_bytes(param_count, s, d):
    """Parameters read, input read, output written (float32), as stf_peers::encoder_bytes."""
    return 4 * (param_count + 2 * s * d)


def lcg_floats(n, np):
    """The n floats of bench_peers' random_params: state = state·1664525 + 1013904223 (mod 2³²)
    from 12345, value = ((state >> 8) / 2²⁴ - 0.5) · 0.2 in float32. Vectorized by jumping ahead
    a block of states at a time."""
    a, c, mask = 1664525, 1013904223, 0xFFFFFFFF
    block = 4096
    first = []
    state = 12345
    for _ in range(min(n, block)):
        state = (state * a + c) & mask
        first.append(state)
    # jump-ahead by `block` steps: s -> A·s + C
    big_a, big_c = 1, 0
    for _ in range(block):
        big_a, big_c = (big_a * a) & mask, (big_c * a + c) & mask
    states = np.empty(n, dtype=np.uint64)
    cur = np.array(first, dtype=np.uint64)
    pos = 0
    while pos < n:
        take = min(block, n - pos)
        states[pos:pos + take] = cur[:take]
        pos += take
        cur = (cur * np.uint64(big_a) + np.uint64(big_c)) & np.uint64(mask)
    top = (states >> np.uint64(8)).astype(np.float32)
    return (top / np.float32(16777216.0) - np.float32(0.5)) * np.float32(0.2)


def bench_input(n, np):
    """bench_peers' input: x[i] = ((i·7919) mod 101) / 50 - 1 in float32."""
    i = np.arange(n, dtype=np.int64)
    return ((i * 7919) % 101).astype(np.float32) / np.float32(50.0) - np.float32(1.0)


def plain_from_panels(torch, flat, rows, cols, panel=64):
    """A [rows, cols] matrix from its elements in stf's column-panel order (kWeightPanel: panels of
    `panel` columns, each row-major, one after the other; plain row-major when cols <= panel)."""
    if cols <= panel:
        return flat.view(rows, cols)
    parts, pos = [], 0
    for p in range(0, cols, panel):
        width = min(panel, cols - p)
        parts.append(flat[pos:pos + rows * width].view(rows, width))
        pos += rows * width
    return torch.cat(parts, dim=1)


def make_layer(torch, np, s, d, h, f):
    layer = torch.nn.TransformerEncoderLayer(d, h, f, dropout=0.0, batch_first=True).eval()
    # stf's visit order: self_attn.{q,k,v,o}.{weight,bias}, ff.linear{1,2}.{weight,bias}, norm{1,2};
    # stf stores linear weights transposed ([in, out], in column panels), so PyTorch gets their
    # transposes
    sizes = [d * d, d] * 4 + [f * d, f, d * f, d, d, d, d, d]
    flat = torch.from_numpy(lcg_floats(sum(sizes), np))
    parts = list(torch.split(flat, sizes))
    q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, l1_w, l1_b, l2_w, l2_b, n1_w, n1_b, n2_w, n2_b = parts
    with torch.no_grad():
        attn = layer.self_attn
        attn.in_proj_weight.copy_(torch.cat([plain_from_panels(torch, w, d, d).t() for w in (q_w, k_w, v_w)]))
        attn.in_proj_bias.copy_(torch.cat([q_b, k_b, v_b]))
        attn.out_proj.weight.copy_(plain_from_panels(torch, o_w, d, d).t())
        attn.out_proj.bias.copy_(o_b)
        layer.linear1.weight.copy_(plain_from_panels(torch, l1_w, d, f).t())
        layer.linear1.bias.copy_(l1_b)
        layer.linear2.weight.copy_(plain_from_panels(torch, l2_w, f, d).t())
        layer.linear2.bias.copy_(l2_b)
        layer.norm1.weight.copy_(n1_w)
        layer.norm1.bias.copy_(n1_b)
        layer.norm2.weight.copy_(n2_w)
        layer.norm2.bias.copy_(n2_b)
    x = torch.from_numpy(bench_input(s * d, np)).view(1, s, d)
    param_count = sum(p.numel() for p in layer.parameters())
    return layer, x, param_count


def make_int8_layer(torch, layer, engine):
    """PyTorch's int8 version of the post-norm ReLU `layer` on quantized `engine`: its six linears
    (in_proj as one [3D, D] product, as nn.MultiheadAttention runs it, out_proj, linear1, linear2)
    as dynamically quantized int8 linears (torch.ao.nn.quantized.dynamic.Linear, per-channel int8
    weights, activations quantized per call: the counterpart of stf's w8a8), attention Q·Kᵀ and
    P·V, softmax, residuals and LayerNorms in float, as stf's int8 layer does.

    Composed here because torch.ao.quantization.quantize_dynamic cannot give that layer:
    nn.TransformerEncoderLayer's in_proj is a bare Parameter and its out_proj a
    NonDynamicallyQuantizableLinear, which quantize_dynamic leaves in float (it would quantize only
    linear1 and linear2), and in eval mode the layer's fast-path check then fails on the quantized
    linears' packed weights."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear
    from torch.ao.quantization import per_channel_dynamic_qconfig

    torch.backends.quantized.engine = engine  # the packed weights are the engine's
    attn = layer.self_attn
    d, h = attn.embed_dim, attn.num_heads
    hd = d // h

    def quantized(weight, bias):
        lin = torch.nn.Linear(weight.shape[1], weight.shape[0])
        with torch.no_grad():
            lin.weight.copy_(weight)
            lin.bias.copy_(bias)
        lin.qconfig = per_channel_dynamic_qconfig
        return DynamicLinear.from_float(lin)

    class Int8EncoderLayer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.in_proj = quantized(attn.in_proj_weight, attn.in_proj_bias)
            self.out_proj = quantized(attn.out_proj.weight, attn.out_proj.bias)
            self.linear1 = quantized(layer.linear1.weight, layer.linear1.bias)
            self.linear2 = quantized(layer.linear2.weight, layer.linear2.bias)
            self.norm1, self.norm2 = layer.norm1, layer.norm2
            self.scale = 1.0 / hd ** 0.5

        def forward(self, x):  # [1, S, D], batch_first
            s = x.shape[1]
            x = x[0]
            q, k, v = self.in_proj(x).view(s, 3, h, hd).permute(1, 2, 0, 3)  # each [H, S, hd]
            p = torch.softmax(torch.matmul(q * self.scale, k.transpose(-2, -1)), dim=-1)
            a = torch.matmul(p, v).transpose(0, 1).reshape(s, d)
            x = self.norm1(x + self.out_proj(a))
            x = self.norm2(x + self.linear2(torch.relu(self.linear1(x))))
            return x.unsqueeze(0)

    return Int8EncoderLayer().eval()


def int8_engines(torch):
    """The quantized engines to time, x86's first."""
    return [e for e in ("onednn", "x86", "fbgemm", "qnnpack") if e in torch.backends.quantized.supported_engines]


def make_decoder_layer(torch, np, t, m, d, h, f):
    """nn.TransformerDecoderLayer with bench_peers' weights (stf::DecoderLayer's visit order:
    self_attn.{q,k,v,o}, cross_attn.{q,k,v,o}, ff.linear{1,2}, norm{1,2,3}), the step's target
    rows [1, T, D] and memory [1, M, D] (one bench_input: T target rows, then M memory rows)."""
    layer = torch.nn.TransformerDecoderLayer(d, h, f, dropout=0.0, batch_first=True).eval()
    sizes = [d * d, d] * 8 + [f * d, f, d * f, d] + [d, d] * 3
    flat = torch.from_numpy(lcg_floats(sum(sizes), np))
    parts = list(torch.split(flat, sizes))
    with torch.no_grad():
        for attn, base in ((layer.self_attn, 0), (layer.multihead_attn, 8)):
            q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b = parts[base:base + 8]
            attn.in_proj_weight.copy_(torch.cat([plain_from_panels(torch, w, d, d).t() for w in (q_w, k_w, v_w)]))
            attn.in_proj_bias.copy_(torch.cat([q_b, k_b, v_b]))
            attn.out_proj.weight.copy_(plain_from_panels(torch, o_w, d, d).t())
            attn.out_proj.bias.copy_(o_b)
        l1_w, l1_b, l2_w, l2_b, n1_w, n1_b, n2_w, n2_b, n3_w, n3_b = parts[16:]
        layer.linear1.weight.copy_(plain_from_panels(torch, l1_w, d, f).t())
        layer.linear1.bias.copy_(l1_b)
        layer.linear2.weight.copy_(plain_from_panels(torch, l2_w, f, d).t())
        layer.linear2.bias.copy_(l2_b)
        for norm, w, b in ((layer.norm1, n1_w, n1_b), (layer.norm2, n2_w, n2_b), (layer.norm3, n3_w, n3_b)):
            norm.weight.copy_(w)
            norm.bias.copy_(b)
    rows = torch.from_numpy(bench_input((t + m) * d, np))
    return layer, rows[:t * d].view(1, t, d), rows[t * d:].view(1, m, d)


class TorchDecoderStep:
    """One incremental step of a post-norm nn.TransformerDecoderLayer (eval, ReLU) as a PyTorch user
    writes generation with a K/V cache (fairseq's and HF's incremental decoding): q/k/v by F.linear on
    the slices of in_proj_weight, the new key and value written into preallocated cache tensors
    [T, D] at their position (no torch.cat), per-head scores / sqrt(hd), softmax, @ V over the cached
    positions, out_proj, add & norm1; the query's cross-attention over the memory's keys and values,
    projected once (prepare_memory), add & norm2; linear1, ReLU, linear2, add & norm3."""

    def __init__(self, torch, layer, t):
        self.torch, self.F = torch, torch.nn.functional
        sa, ca = layer.self_attn, layer.multihead_attn
        d = sa.embed_dim
        self.d, self.h, self.hd = d, sa.num_heads, d // sa.num_heads
        self.sqrt_hd = math.sqrt(self.hd)
        w, b = sa.in_proj_weight, sa.in_proj_bias
        self.wq, self.wk, self.wv = w[:d], w[d:2 * d], w[2 * d:]
        self.bq, self.bk, self.bv = b[:d], b[d:2 * d], b[2 * d:]
        self.wo, self.bo = sa.out_proj.weight, sa.out_proj.bias
        cw, cb = ca.in_proj_weight, ca.in_proj_bias
        self.cwq, self.cwk, self.cwv = cw[:d], cw[d:2 * d], cw[2 * d:]
        self.cbq, self.cbk, self.cbv = cb[:d], cb[d:2 * d], cb[2 * d:]
        self.cwo, self.cbo = ca.out_proj.weight, ca.out_proj.bias
        self.w1, self.b1, self.w2, self.b2 = layer.linear1.weight, layer.linear1.bias, layer.linear2.weight, layer.linear2.bias
        self.norms = [(n.weight, n.bias, n.eps) for n in (layer.norm1, layer.norm2, layer.norm3)]
        self.k_cache = torch.zeros(t, d)
        self.v_cache = torch.zeros(t, d)
        self.mem_k = self.mem_v = None

    def prepare_memory(self, memory):
        """The memory [M, D]'s cross-attention keys and values, per head [H, M, hd]."""
        m = memory.shape[0]
        self.mem_k = self.F.linear(memory, self.cwk, self.cbk).view(m, self.h, self.hd).transpose(0, 1)
        self.mem_v = self.F.linear(memory, self.cwv, self.cbv).view(m, self.h, self.hd).transpose(0, 1)

    def attend(self, q, k, v):
        """q [1, D] over k, v [H, n, hd] -> [1, D]."""
        scores = self.torch.matmul(q.view(self.h, 1, self.hd), k.transpose(1, 2)) / self.sqrt_hd
        return self.torch.matmul(self.torch.softmax(scores, dim=-1), v).view(1, self.d)

    def norm(self, x, i):
        w, b, eps = self.norms[i]
        return self.F.layer_norm(x, (self.d,), w, b, eps)

    def step(self, x, pos):
        """Row x [1, D] at position pos -> [1, D]; writes the cache's row pos."""
        F, n = self.F, pos + 1
        q = F.linear(x, self.wq, self.bq)
        self.k_cache[pos] = F.linear(x, self.wk, self.bk)[0]
        self.v_cache[pos] = F.linear(x, self.wv, self.bv)[0]
        k = self.k_cache[:n].view(n, self.h, self.hd).transpose(0, 1)
        v = self.v_cache[:n].view(n, self.h, self.hd).transpose(0, 1)
        x = self.norm(x + F.linear(self.attend(q, k, v), self.wo, self.bo), 0)
        q = F.linear(x, self.cwq, self.cbq)
        x = self.norm(x + F.linear(self.attend(q, self.mem_k, self.mem_v), self.cwo, self.cbo), 1)
        return self.norm(x + F.linear(F.relu(F.linear(x, self.w1, self.b1)), self.w2, self.b2), 2)


def check_decoder_step(torch, layer, step, tgt, memory, tolerance):
    """Projects the memory [1, M, D], steps through every position of tgt [1, T, D] and compares
    each output row with the full layer's forward over the whole prefix (causal tgt mask); raises
    if max|diff| / max|y| exceeds tolerance at any row (the last row included). Returns the
    relative difference."""
    t = tgt.shape[1]
    causal = torch.nn.Transformer.generate_square_subsequent_mask(t)
    y_full = layer(tgt, memory, tgt_mask=causal)[0]
    step.prepare_memory(memory[0])
    y_step = torch.cat([step.step(tgt[0, pos:pos + 1], pos) for pos in range(t)])
    rel = float((y_step - y_full).abs().max() / y_full.abs().max())
    if not rel <= tolerance:  # NaN too
        raise RuntimeError(f"torch_bench: the PyTorch incremental decoder step differs from "
                           f"nn.TransformerDecoderLayer's forward over the prefix: max|diff| / max|y| = {rel:.3g} "
                           f"> {tolerance:g} (last row: {float((y_step[-1] - y_full[-1]).abs().max()):.3g})")
    return rel


def ran_fast_path(torch, call):
    """Whether `call()` ran the fused eval fast path (seen by the autograd profiler)."""
    with torch.autograd.profiler.profile() as prof:
        call()
    return any(e.name == FAST_PATH_OP for e in prof.function_events)


def fast_path_summary(paths):
    """Whether the plain EncoderLayer/torch calls took the eval fast path: yes, no, mixed, or none timed
    (a run filtered to other benchmarks says so instead of claiming yes)."""
    took = [("fast" in p) for n, p in paths.items() if n.startswith("EncoderLayer/torch/")]
    if not took:
        return "none timed"
    return "yes" if all(took) else "no" if not any(took) else "mixed"


def time_call(call, min_time, repetitions, warmup_time):
    """[(iterations, real seconds per call, cpu seconds per call)] per repetition."""
    t_end = time.perf_counter() + warmup_time
    warm = 0
    while warm < 3 or time.perf_counter() < t_end:
        call()
        warm += 1
    # calibrate: grow the iteration count until one batch takes >= min_time (as Google Benchmark)
    iters = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time or iters >= 1_000_000_000:
            break
        iters = max(iters + 1, int(iters * min(10.0, 1.4 * min_time / max(elapsed, 1e-9))))
    runs = []
    for _ in range(repetitions):
        r0, c0 = time.perf_counter(), time.process_time()
        for _ in range(iters):
            call()
        r1, c1 = time.perf_counter(), time.process_time()
        runs.append((iters, (r1 - r0) / iters, (c1 - c0) / iters))
    return runs


def dpkg_query(fmt, package):
    try:
        return subprocess.run(["dpkg-query", "-W", f"-f={fmt}", package], capture_output=True, text=True,
                              check=False).stdout
    except OSError:
        return ""


def blas_info(torch):
    """Which BLAS torch's matrix products go through: the Debian alternative, and the library
    actually mapped into this process after a product."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    alt = f"/etc/alternatives/libblas.so.3-{multiarch}"
    selected = os.path.realpath(alt) if os.path.exists(alt) else "(no alternative)"
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))
    loaded = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path)
            if any(k in name for k in ("blas", "mkl", "blis", "atlas")):
                loaded.add(os.path.realpath(path))
    status = dpkg_query("${Status}", "libopenblas0-serial")
    return {
        "blas_alternative": f"{alt} -> {selected}",
        "blas_loaded": ", ".join(sorted(loaded)) or "(none found in /proc/self/maps)",
        "libopenblas0_serial": "installed" if "install ok installed" in status else "not installed",
        "blas_is_openblas_serial": "yes" if any("openblas-serial" in p for p in loaded) else "no",
    }


def gb_entry(name, family, reps, rep, iters, real_s, cpu_s, flops, nbytes, label, run_type="iteration",
             aggregate=None):
    e = {
        "name": name if aggregate is None else f"{name}_{aggregate}",
        "family_index": family,
        "per_family_instance_index": 0,
        "run_name": name,
        "run_type": run_type,
        "repetitions": reps,
        "repetition_index": rep,
        "threads": 1,
        "iterations": iters,
        "real_time": real_s * 1e9,
        "cpu_time": cpu_s * 1e9,
        "time_unit": "ns",
        "FLOP/s": flops / real_s if real_s > 0 else 0.0,
        "bytes": nbytes,
        "bytes_per_second": nbytes / real_s if real_s > 0 and nbytes else 0.0,
        "label": label,
    }
    if nbytes is None:  # the decoder step counts no bytes (as DecoderStep/stf.<variant>)
        e.pop("bytes")
        e.pop("bytes_per_second")
    if aggregate is not None:
        e.pop("repetition_index")
        e["aggregate_name"] = aggregate
        e["aggregate_unit"] = "time"
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="Google Benchmark JSON file to write (required unless --list)")
    ap.add_argument("--list", action="store_true",
                    help="print the shapes of the benchmark plan (bench/plan.hpp) as SxDxHxF and "
                         "step TxMxDxHxF lines, and exit")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 repetition, 10 ms per shape")
    ap.add_argument("--min-time", type=float, default=None, help="seconds per repetition (default 0.5)")
    ap.add_argument("--repetitions", type=int, default=None, help="repetitions (default 5)")
    ap.add_argument("--standard-path", choices=("auto", "yes", "no"), default="auto",
                    help="also time the standard (non-fast) path; auto: yes unless --quick")
    ap.add_argument("--int8", choices=("yes", "no"), default="yes",
                    help="also time PyTorch's int8 layer (EncoderLayerInt8/torch.<engine>)")
    ap.add_argument("--int8-tolerance", type=float, default=0.05,
                    help="max |y_int8 - y_float| / max |y_float| before an int8 layer is timed")
    ap.add_argument("--decoder-step", choices=("yes", "no"), default="yes",
                    help="also time the incremental decoder step (DecoderStep/pytorch)")
    ap.add_argument("--step-tolerance", type=float, default=1e-5,
                    help="max |y_step - y_full| / max |y_full| before the decoder step is timed")
    ap.add_argument("--filter", default="",
                    help="only shapes whose SxDxHxF (decoder step: TxMxDxHxF) contains this text")
    args = ap.parse_args()
    if args.list:
        for shape in SHAPES:
            print("x".join(map(str, shape)))
        for shape in DECODER_STEP_SHAPES:
            print("step " + "x".join(map(str, shape)))
        return 0
    if not args.out:
        ap.error("--out is required (or --list)")
    min_time = args.min_time if args.min_time is not None else (0.01 if args.quick else 0.5)
    reps = args.repetitions if args.repetitions is not None else (1 if args.quick else 5)
    warmup = 0.02 if args.quick else 0.2
    standard = args.standard_path == "yes" or (args.standard_path == "auto" and not args.quick)

    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"torch_bench: PyTorch is not available to {sys.executable} ({e}); "
              "install python3-torch and run with /usr/bin/python3", file=sys.stderr)
        return 2

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    blas = blas_info(torch)
    if blas["blas_is_openblas_serial"] != "yes":
        print("torch_bench: WARNING: torch is not using Debian's OpenBLAS (serial); with the reference "
              "BLAS it is 25-40x slower. Install libopenblas0-serial and select it:\n"
              "  update-alternatives --config libblas.so.3-x86_64-linux-gnu\n"
              f"  now: {blas['blas_alternative']}; loaded: {blas['blas_loaded']}", file=sys.stderr)

    benchmarks = []
    paths = {}
    family = 0
    failed = 0  # int8 layers too far from the float one

    def record(name, call, label, flops, nbytes):
        """Times call() and appends its entries (per repetition, then the aggregates)."""
        nonlocal family
        runs = time_call(call, min_time, reps, warmup)
        for rep, (iters, real_s, cpu_s) in enumerate(runs):
            benchmarks.append(gb_entry(name, family, reps, rep, iters, real_s, cpu_s, flops, nbytes, label))
        if reps > 1:
            reals = [r for _, r, _ in runs]
            cpus = [c for _, _, c in runs]
            for agg, fn in (("mean", statistics.mean), ("median", statistics.median),
                            ("stddev", statistics.stdev)):
                e = gb_entry(name, family, reps, 0, len(runs), fn(reals), fn(cpus), flops, nbytes, label,
                             run_type="aggregate", aggregate=agg)
                if agg == "stddev":  # a rate of a spread means nothing
                    e.pop("FLOP/s")
                    e.pop("bytes_per_second", None)
                benchmarks.append(e)
        med = statistics.median(r for _, r, _ in runs)
        print(f"{name:42s} {med * 1e6:12.1f} us  {flops / med / 1e9:8.2f} GFLOP/s  [{label}]")
        family += 1

    with torch.inference_mode():
        for (s, d, h, f) in SHAPES:
            shape = f"{s}x{d}x{h}x{f}"
            if args.filter and args.filter not in shape:
                continue
            layer, x, param_count = make_layer(torch, np, s, d, h, f)
            zero_mask = torch.zeros(s, s)
            variants = [("torch", lambda: layer(x))]
            if standard:
                variants.append(("torch_std", lambda: layer(x, src_mask=zero_mask)))
            flops = encoder_flops(s, d, f)
            nbytes = encoder_bytes(param_count, s, d)
            # (name, call, label: None for the float layer, whose path the profiler tells, engine or None)
            variants = [(f"EncoderLayer/{impl}/{shape}", call, None, None) for impl, call in variants]
            if args.int8 == "yes":
                y_float = layer(x, src_mask=zero_mask)  # the standard path: the int8 layer's computation
                for engine in int8_engines(torch):
                    name = f"EncoderLayerInt8/torch.{engine}/{shape}"
                    q_layer = make_int8_layer(torch, layer, engine)
                    rel = float((q_layer(x) - y_float).abs().max() / y_float.abs().max())
                    label = (f"engine {torch.backends.quantized.engine}, dynamic int8 linears (per-channel weights); "
                             f"max|y - y_float| / max|y_float| = {rel:.2g}")
                    if not rel <= args.int8_tolerance:  # NaN too
                        print(f"torch_bench: {name}: {label}, above --int8-tolerance {args.int8_tolerance}: "
                              "not timed", file=sys.stderr)
                        failed += 1
                        continue
                    variants.append((name, (lambda m: lambda: m(x))(q_layer), label, engine))
            for name, call, label, engine in variants:
                if engine is not None:
                    torch.backends.quantized.engine = engine
                if label is None:
                    fast = ran_fast_path(torch, call)
                    label = ("fast path (" + FAST_PATH_OP + ")") if fast else "standard path"
                paths[name] = label
                record(name, call, label, flops, nbytes)
        for (t, m, d, h, f) in DECODER_STEP_SHAPES if args.decoder_step == "yes" else []:
            shape = f"{t}x{m}x{d}x{h}x{f}"
            if args.filter and args.filter not in shape:
                continue
            layer, tgt, memory = make_decoder_layer(torch, np, t, m, d, h, f)
            step = TorchDecoderStep(torch, layer, t)
            # times 8: peaked attention, where an error in Q, K or the scale reaches the output (a
            # 1e-3 error in 1/sqrt(hd) moved it by 5e-7 relative on the benchmark input, 1.1e-5 on this)
            rel = max(check_decoder_step(torch, layer, step, tgt * scale, memory * scale, args.step_tolerance)
                      for scale in (1.0, 8.0))
            step.prepare_memory(memory[0])
            for pos in range(t - 1):  # the cache holds T - 1 positions, the memory's keys and values
                step.step(tgt[0, pos:pos + 1], pos)
            x = tgt[0, t - 1:t]
            label = (f"incremental step, K/V cache; vs the full layer over the prefix: max|diff| / max|y| = "
                     f"{rel:.2g}")
            record(f"DecoderStep/pytorch/{shape}", (lambda s_, x_, p_: lambda: s_.step(x_, p_))(step, x, t - 1),
                   label, decoder_step_flops(t - 1, m, d, f), None)

    used_paths = sorted({p for n, p in paths.items() if n.startswith("EncoderLayer/")})
    context = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": os.path.abspath(__file__),
        "num_cpus": os.cpu_count(),
        "mhz_per_cpu": 0,
        "cpu_scaling_enabled": False,
        "caches": [],
        "load_avg": list(os.getloadavg()),
        "library_build_type": "release",
        "python": f"{sys.executable} {platform.python_version()}",
        "torch_version": torch.__version__,
        "torch_package": dpkg_query("${Package} ${Version}", "python3-torch") or "(not a Debian package)",
        "torch_num_threads": str(torch.get_num_threads()),
        "torch_timing": f"min_time {min_time} s, {reps} repetitions, warm-up {warmup} s, inference_mode, eval",
        "torch_paths": "; ".join(f"{n}: {p}" for n, p in paths.items()),
        "torch_int8_engines": (", ".join(int8_engines(torch)) +
                               f" (supported: {', '.join(torch.backends.quantized.supported_engines)})"
                               if args.int8 == "yes" else "not timed (--int8 no)"),
        "torch_fast_path": fast_path_summary(paths),
        **blas,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as out:
        json.dump({"context": context, "benchmarks": benchmarks}, out, indent=2)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread; BLAS: {blas['blas_loaded']}; "
          f"paths: {', '.join(used_paths)} -> {args.out}")
    if failed:
        print(f"torch_bench: {failed} int8 layer(s) not timed: too far from the float layer", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
