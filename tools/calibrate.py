"""Calibration of an int8 export (tools/export.py --emit-model --quantize FMT --calibrate INPUTS.pt).

The activation scales need no calibration (they are per row, at run time: kernels/QUANTIZATION.md).
What calibration inputs buy is the rounding of the int8 weights: with them each linear's weights are
rounded column by column, each column's rounding error compensated on the columns not yet rounded
through the inverse of the Gram matrix H = Σ xᵀx of the linear's inputs (GPTQ, Frantar et al. 2022:
the rounding that keeps the linear's output on those inputs closest to the float one). The scales
stay the scheme's (max |w| / 127 per output channel) and every q_w stays in [-127, 127], so the file
and the run time arithmetic are unchanged; only which integer each weight gets differs from
round-half-to-even. A column whose inputs were all zero is rounded to nearest.

INPUTS.pt (torch.save) holds model inputs, which are checked against the model first (every
problem is reported, the first eight by name, and nothing is written):
  token models (encoder-decoder sources, classifier inputs, decoder-only prompts): a 2-D integer
      tensor [N, L] or a list of 1-D integer tensors, 1 <= L <= --seq-len, ids within the vocabulary;
  encoder layers and stacks: a float tensor [N, S, d_model] or [S, d_model], or a list of [S, d_model]
      tensors, 1 <= S <= --seq-len, finite.
The float PyTorch module runs on them (a copy, dropout off, PyTorch's fused fast path not taken);
the encoder-decoder decodes each source greedily, then runs once over the decoded tokens. Afterwards
the same runs with the int8 weights simulated (dequantized, and for w8a8 each linear's input rows
quantized as the scheme does; the attention products stay float in this simulation) give the
report: the largest |int8 − float| relative to max |float| and the rms error relative to the rms of
the float outputs over the inputs, rounded to nearest and calibrated, and for token models how often
the top-1 token agrees. The rounding with the smaller rms error is the one written (the calibrated
one unless it does worse on the user's own inputs; with isotropic inputs, H ≈ c·I, the two nearly
coincide).
"""

import copy
import math

import torch
import torch.nn.functional as F

import stf_torch

TOKEN_KINDS = ("encdec", "classifier", "decoder_only")
_INT_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


class CalibrationError(Exception):
    def __init__(self, problems):
        super().__init__("; ".join(problems))
        self.problems = problems


def _vocab(spec):
    return spec["src_vocab"] if spec["kind"] == "encdec" else spec["vocab"]


def load(path, spec, seq_len):
    """The validated calibration inputs of `path` for the model `spec` (export.describe_*): a list of
    1-D int64 token tensors or of [S, d_model] float32 tensors. CalibrationError lists every problem."""
    try:
        obj = torch.load(path, map_location="cpu")
    except Exception as e:  # noqa: BLE001 (torch.load raises many kinds; every one is a bad file)
        raise CalibrationError([f"--calibrate {path}: not a torch.save file ({type(e).__name__}: {e})"]) from None
    return check(obj, spec, seq_len, f"--calibrate {path}")


def check(obj, spec, seq_len, what="--calibrate"):
    """load()'s checks on an object already read."""
    tokens = spec["kind"] in TOKEN_KINDS
    if isinstance(obj, torch.Tensor):
        if (tokens and obj.dim() != 2) or (not tokens and obj.dim() not in (2, 3)):
            shape = "[N, L] token ids" if tokens else "[N, S, d_model] or [S, d_model] floats"
            raise CalibrationError([f"{what}: a tensor of shape {list(obj.shape)}; this model takes {shape} "
                                    f"(or a list of {'1-D token tensors' if tokens else '[S, d_model] tensors'})"])
        items = list(obj) if (tokens or obj.dim() == 3) else [obj]
    elif isinstance(obj, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in obj):
        items = list(obj)
    else:
        raise CalibrationError([f"{what}: holds a {type(obj).__name__}; a tensor or a list of tensors is needed"])
    if not items:
        raise CalibrationError([f"{what}: no inputs"])
    problems = []
    out = []
    for i, t in enumerate(items):
        where = f"{what}: input {i}"
        if tokens:
            if t.dtype not in _INT_DTYPES:
                problems.append(f"{where}: dtype {t.dtype}; token ids are integers")
                continue
            if t.dim() != 1:
                problems.append(f"{where}: shape {list(t.shape)}; a 1-D sequence of token ids is needed")
                continue
            if not 1 <= t.numel() <= seq_len:
                problems.append(f"{where}: {t.numel()} tokens; the model takes 1 to {seq_len} (--seq-len)")
                continue
            v = _vocab(spec)
            bad = ((t < 0) | (t >= v)).nonzero()
            if bad.numel():
                j = int(bad[0])
                problems.append(f"{where}: token {int(t[j])} at position {j} is outside the vocabulary [0, {v})")
                continue
            out.append(t.to(torch.int64))
        else:
            d = spec["layer"]["d_model"]
            if not t.is_floating_point():
                problems.append(f"{where}: dtype {t.dtype}; the layer's input is floating point")
                continue
            if t.dim() != 2 or t.shape[1] != d:
                problems.append(f"{where}: shape {list(t.shape)}; [S, {d}] (d_model {d}) is needed")
                continue
            if not 1 <= t.shape[0] <= seq_len:
                problems.append(f"{where}: {t.shape[0]} rows; the model takes 1 to {seq_len} (--seq-len)")
                continue
            if not bool(torch.isfinite(t).all()):
                problems.append(f"{where}: holds NaN or Inf")
                continue
            out.append(t.to(torch.float32))
    if problems:
        shown = problems[:8] + ([f"... and {len(problems) - 8} more"] if len(problems) > 8 else [])
        raise CalibrationError(shown)
    return out


class _Linears:
    """torch.nn.functional.linear, replaced while a model runs: records the Gram matrix of every weight's
    inputs (keyed by the weight view's storage address and shape), or runs the linears with simulated
    int8 weights (and int8 inputs rows for w8a8)."""

    def __init__(self):
        self.grams = {}  # key -> [weight view, H float64]
        self.weights = {}  # key -> the simulated weight (float64), for a run with int8 weights
        self.w8a8 = False
        self.record = False

    @staticmethod
    def key(w):
        return (w.data_ptr(), tuple(w.shape), tuple(w.stride()))

    def __call__(self, x, w, b=None):
        k = self.key(w)
        if self.record:
            xx = x.detach().reshape(-1, x.shape[-1]).double()
            g = self.grams.setdefault(k, [w.detach(), torch.zeros(w.shape[1], w.shape[1], dtype=torch.float64)])
            g[1] += xx.t() @ xx
        if k in self.weights:
            xd = x.double()
            if self.w8a8:
                xd = quantize_rows(xd)
            y = xd @ self.weights[k].t()
            if b is not None:
                y = y + b.double()
            return y.to(x.dtype)
        return _LINEAR(x, w, b)

    def __enter__(self):
        F.linear = self
        return self

    def __exit__(self, *exc):
        F.linear = _LINEAR


_LINEAR = F.linear


def quantize_rows(x):
    """Each row of x quantized and dequantized as kernels/QUANTIZATION.md's w8a8 inputs (float64)."""
    a = x.abs().amax(dim=-1, keepdim=True)
    inv = torch.where(a >= 2.0 ** -100, 127.0 / a, torch.zeros_like(a))
    q = torch.round(x * inv).clamp(-127, 127)
    return q * (a / 127.0)


def float_copy(module):
    """A float32 copy of module with dropout off, in train mode: PyTorch's fused fast path (which calls no
    F.linear and differs in masking) is not taken."""
    model = copy.deepcopy(module).float()
    for sub in model.modules():
        if isinstance(sub, torch.nn.Dropout):
            sub.p = 0.0
        if isinstance(sub, torch.nn.MultiheadAttention):
            sub.dropout = 0.0
    return model.train()


def _run(model, spec, inputs, start_token, tokens_of=None):
    """The model's outputs for every input (a list of tensors): encoder layers their output, token models
    their log-probabilities / logits. The encoder-decoder runs over tokens_of[i] (its greedy tokens) when
    given, else decodes greedily first; returns (outputs, tokens)."""
    outs, toks = [], []
    with torch.no_grad():
        for i, t in enumerate(inputs):
            kind = spec["kind"]
            if kind in ("layer", "stack"):
                batched = t[None] if spec["layer"]["batch_first"] else t[:, None]
                outs.append(model(batched).reshape(t.shape))
            elif kind == "classifier":
                outs.append(model(t[None], torch.tensor([t.numel()]))[0])
            elif kind == "decoder_only":
                outs.append(model(t[None]).reshape(t.numel(), -1))
            else:
                src, mask = t[None], stf_torch.padding_mask([t.numel()], t.numel())
                if tokens_of is None:
                    _, ys, _, _ = stf_torch.greedy_decode(model, src, mask, spec["tgt_len"], start_token)
                else:
                    ys = tokens_of[i]
                toks.append(ys)
                n = ys.shape[1] - 1
                out = model.decode(model.encode(src, mask), mask, ys[:, :n], stf_torch.subsequent_mask(n))
                outs.append(model.generator(out)[0])
    return outs, toks


def gptq(w, h, damp=0.01):
    """(q int8, s float32) of the float weight w [out, in] (PyTorch's layout) with the scheme's scales
    (stf_torch.quantize_weight) and the rounding compensated over the inputs' Gram matrix h [in, in]
    (float64); columns in order, damping `damp` times the mean of h's diagonal."""
    q0, s = stf_torch.quantize_weight(w)
    if not bool((h.diagonal() > 0).any()):
        return q0, s
    W = w.detach().double().clone()
    n = W.shape[1]
    h = h.clone()
    dead = h.diagonal() == 0
    h[dead, dead] = 1.0
    h += damp * float(h.diagonal().mean()) * torch.eye(n, dtype=torch.float64)
    u = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(h)), upper=True)
    sd = s.double()[:, None]
    safe = torch.where(sd > 0, sd, torch.ones_like(sd))
    q = torch.zeros_like(W)
    for i in range(n):
        col = W[:, i:i + 1]
        qi = torch.where(sd > 0, torch.round(col / safe), torch.zeros_like(col)).clamp(-127, 127)
        q[:, i:i + 1] = qi
        W[:, i + 1:] -= ((col - qi * sd) / u[i, i]) @ u[i:i + 1, i + 1:]
    return q.to(torch.int8), s


class Calibration:
    """The recorded Gram matrices of one model's linears over the calibration inputs, the rounding of its
    int8 weights from them, and the report (export.py: calibrate(), match(), the report line)."""

    def __init__(self, module, spec, inputs, start_token=1):
        self.spec, self.inputs, self.start_token = spec, inputs, start_token
        self.model = float_copy(module)
        self.linears = _Linears()
        prev = torch.get_num_threads()
        torch.set_num_threads(1)  # (the same bytes on every run)
        try:
            with self.linears:
                if spec["kind"] == "encdec":  # greedy decoding reruns the prefixes: record the teacher-forced pass
                    _, self.tokens = _run(self.model, spec, inputs, start_token)
                    self.linears.record = True
                    self.float_out, _ = _run(self.model, spec, inputs, start_token, self.tokens)
                else:
                    self.linears.record = True
                    self.float_out, self.tokens = _run(self.model, spec, inputs, start_token)
                self.linears.record = False
        finally:
            torch.set_num_threads(prev)
        self.rounded = {}  # recorded key -> {"nearest": weight float64, "calibrated": weight float64}
        self.result = None  # report(), once the weights are rounded
        self.chosen = "calibrated"  # the rounding export.match_calibrated kept
        self.reached = self.quantized = 0  # int8 weights the runs reached (calibrated), of all quantized

    def _sources(self, w):
        """The recorded weights (key, row offset) whose rows hold w's values."""
        out, n = [], w.shape[0]
        for k, (rec, _) in self.linears.grams.items():
            if rec.shape[1] != w.shape[1] or rec.shape[0] % n:
                continue
            for r0 in range(0, rec.shape[0], n):
                if torch.equal(rec[r0:r0 + n], w):
                    out.append((k, r0))
        return out

    def quantize(self, w):
        """(q, s) of the float weight w [out, in] (an int8 entry's): calibrated where the model's runs
        reached it, else the scheme's nearest rounding."""
        src = self._sources(w.detach().float())
        self.quantized += 1
        if not src:
            return stf_torch.quantize_weight(w)
        self.reached += 1
        h = sum(self.linears.grams[k][1] for k, _ in src)
        prev = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            q, s = gptq(w, h)
        finally:
            torch.set_num_threads(prev)
        q0, _ = stf_torch.quantize_weight(w)
        for k, r0 in src:
            rec = self.linears.grams[k][0]
            r = self.rounded.setdefault(k, {"nearest": rec.double().clone(), "calibrated": rec.double().clone()})
            r["nearest"][r0:r0 + w.shape[0]] = q0.double() * s.double()[:, None]
            r["calibrated"][r0:r0 + w.shape[0]] = q.double() * s.double()[:, None]
        return q, s

    def report(self, fmt):
        """{"nearest": (max error / max |float|, rms error / rms float, top-1 agreement or None),
        "calibrated": ...} of the int8
        weights simulated (fmt "w8a8": the linears' input rows too) on the calibration inputs."""
        ymax = max(float(y.abs().max()) for y in self.float_out) or 1.0
        res = {}
        prev = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for which in ("nearest", "calibrated"):
                self.linears.weights = {k: r[which] for k, r in self.rounded.items()}
                self.linears.w8a8 = str(fmt) == "w8a8"
                with self.linears:
                    outs, _ = _run(self.model, self.spec, self.inputs, self.start_token, self.tokens or None)
                err = max(float((a.double() - b.double()).abs().max()) for a, b in zip(outs, self.float_out))
                sq = sum(float(((a.double() - b.double()) ** 2).sum()) for a, b in zip(outs, self.float_out))
                rms = math.sqrt(sq / sum(float((b.double() ** 2).sum()) for b in self.float_out))
                agree = None
                if self.spec["kind"] in TOKEN_KINDS:
                    same = sum(int((a.argmax(-1) == b.argmax(-1)).sum()) for a, b in zip(outs, self.float_out))
                    agree = same / sum(b.shape[0] for b in self.float_out)
                res[which] = (err / ymax, rms, agree)
        finally:
            self.linears.weights = {}
            torch.set_num_threads(prev)
        return res


def report_text(res, n_inputs, chosen, reached=None, quantized=None):
    def one(which):
        rel, rms, agree = res[which]
        return (f"{which} {100 * rel:.3g} % / {100 * rms:.3g} %" +
                ("" if agree is None else f", top-1 as float {100 * agree:.2f} %"))
    if not math.isfinite(res["calibrated"][0]):
        return f"calibration on {n_inputs} inputs: the simulated int8 model's output is not finite"
    return (f"calibration on {n_inputs} inputs, int8 simulated, max |error| / max |float| and rms error / rms float: "
            f"{one('nearest')}, {one('calibrated')}; written: {chosen}" +
            ("" if quantized is None else f" ({reached} of {quantized} int8 weights reached by the inputs)"))
