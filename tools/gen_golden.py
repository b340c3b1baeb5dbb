#!/usr/bin/python3
"""Generate statiformer's golden test data from tests/golden/plan.json.

Usage (Debian's python3 with python3-torch 1.13):
    /usr/bin/python3 tools/gen_golden.py          # write tests/golden/data/*.txt and cases.inc
    /usr/bin/python3 tools/gen_golden.py --check  # recompute; fail unless the files are identical
                                                  # but for PyTorch's per-CPU rounding of outputs,
                                                  # at most DRIFT_ALLOWANCE of a case's tolerance
                                                  # (stf_torch.golden_drift), and unless every
                                                  # case's tolerance comes from its measurement
    /usr/bin/python3 tools/gen_golden.py --measure build/native
                                                  # measure every case's errors (the C++ golden
                                                  # tests' against PyTorch, PyTorch's against the
                                                  # float64 oracle, PyTorch's drift across CPU
                                                  # kernels), write them into plan.json and set the
                                                  # tolerances from them (TOLERANCE_FACTOR)

For every case: torch.manual_seed(seed), build the module (PyTorch init, then non-trivial 1-D
parameters via stf_torch.randomize_vectors), draw inputs with randn, run it, write the file.
File format, tensor names, cases.inc line formats and the tolerance rule: tools/GOLDEN_FORMAT.md.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile


def _pin_blas_kernels():
    """PyTorch's float32 rounding follows the OpenBLAS kernels, which OpenBLAS picks per CPU. The
    data and --check run under one of the flavours --measure measured (DRIFT_FLAVOURS): SkylakeX
    where the CPU has AVX-512, Haswell where it has AVX2 and FMA (x86-64 only), unless the
    environment names one (as --measure's flavours do). Left to itself, OpenBLAS on a Sapphire Rapids
    picked kernels of its own, and the committed data drifted by 20.7 % of a tolerance there (10 %
    allowed); pinned, at most 5 %. Must run before torch is imported."""
    if "OPENBLAS_CORETYPE" in os.environ or not os.path.exists("/proc/cpuinfo"):
        return
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    if "avx512f" in flags:
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    elif "avx2" in flags and "fma" in flags:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"


_pin_blas_kernels()

import torch  # noqa: E402
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stf_torch as st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAN = os.path.join(ROOT, "tests", "golden", "plan.json")
DATA = os.path.join(ROOT, "tests", "golden", "data")
CASES_INC = os.path.join(ROOT, "tests", "golden", "cases.inc")
# Files in DATA written by other tools (not part of the plan).
FOREIGN_FILES = {"demo_reference.txt"}

# The tolerance rule: a case's atol is TOLERANCE_FACTOR times the largest error measured for it,
# the drift counted DRIFT_MARGIN times (rounded up to two significant digits), rtol 0; see
# tolerance_from.
TOLERANCE_FACTOR = 10
DRIFT_MARGIN = 2
# --check: a regenerated value may differ from the committed one by at most this share of its
# case's tolerance. PyTorch's float32 rounding follows the CPU (OpenBLAS's kernels, ATen's vector
# width); --measure records the largest such drift it can provoke on this machine in the case's
# "drift_abs", and the tolerance is at least TOLERANCE_FACTOR x DRIFT_MARGIN times it: the CPU
# flavours measured drift by at most 5 % of a tolerance, half the allowance, which leaves room for
# a CPU whose kernels were not among them.
DRIFT_ALLOWANCE = 0.10
# The CPU flavours --measure runs PyTorch under to measure that drift: OpenBLAS's kernels for an
# AVX-512 Intel CPU (the committed data were made with them), an AVX2 one, and AMD Zen, each with
# ATen's AVX2 and AVX-512 kernels. Flavours the CPU cannot run (AVX-512 ones) are skipped.
DRIFT_FLAVOURS = [{"OPENBLAS_CORETYPE": blas, "ATEN_CPU_CAPABILITY": aten}
                  for blas in ("SkylakeX", "Haswell", "Zen") for aten in ("avx2", "avx512")]
# The C++ golden test executables (in <build>/tests) whose "golden <case> <what> max_abs .."
# lines --measure reads.
GOLDEN_TESTS = ["golden_attention", "golden_modules", "golden_encoder", "golden_decoder",
                "golden_encdec", "golden_decoder_only"]

# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def key_padding(valid_len, s):
    """[B,S] bool, True where the key is padding (PyTorch's key_padding_mask convention)."""
    return ~st.padding_mask(valid_len, s)[:, 0, :]


def causal_blocked(sq, sk):
    """[Sq,Sk] bool, True where key j > query i (PyTorch's attn_mask convention)."""
    return torch.triu(torch.ones(sq, sk, dtype=torch.bool), diagonal=1)


def as_list(v, n):
    """An int or list from the plan as a list of n ints."""
    return list(v) if isinstance(v, list) else [v] * n


def batch_valid_len(inputs, key, b, s):
    """valid lengths from the plan (default: all valid), checked to be in 1..s."""
    vl = as_list(inputs.get(key, s), b)
    if len(vl) != b or not all(1 <= v <= s for v in vl):
        raise ValueError(f"{key} {vl} must have {b} entries in 1..{s}")
    return torch.tensor(vl, dtype=torch.long)


def lengths_tensor(vl):
    """Valid lengths as the float tensor that goes into the file."""
    return torch.as_tensor(vl, dtype=torch.float32)


def prefixed(prefix, named):
    """Prepend a prefix to (name, tensor) pairs."""
    return [(prefix + n, t) for n, t in named]


def small_inputs(x, inputs):
    """x [..., S, D] times the plan's "scale" (default 1), row s of every batch item also times
    "row_scales"[s % len] (default 1): rows of variance scale² · row_scale², where LayerNorm's eps
    matters."""
    x = x * float(inputs.get("scale", 1.0))
    rows = inputs.get("row_scales")
    if rows:
        s = x.shape[-2]
        x = x * torch.tensor([float(rows[i % len(rows)]) for i in range(s)])[:, None]
    return x


def small_vectors(module, inputs, exclude=()):
    """Scale the module's 1-D parameters by the plan's "scale" (stf_torch.scale_vectors), if any."""
    if "scale" in inputs:
        st.scale_vectors(module, float(inputs["scale"]), exclude)


def torch_activation(name):
    """The activation argument nn.Transformer*Layer takes for a plan's word: "relu" and "gelu" as
    they are; gelu_tanh, which PyTorch 1.13 has no word for, as a callable."""
    if name == "gelu_tanh":
        return lambda x: F.gelu(x, approximate="tanh")
    return name


def torch_layer(kind, p, norm_first, activation, eps=1e-5):
    """nn.TransformerEncoderLayer/DecoderLayer in train mode with dropout 0 (no fast path)."""
    cls = nn.TransformerEncoderLayer if kind == "encoder" else nn.TransformerDecoderLayer
    layer = cls(p["D"], p["H"], p["F"], dropout=0.0, activation=torch_activation(activation),
                batch_first=True, norm_first=norm_first, layer_norm_eps=eps)
    return layer.train()


# --------------------------------------------------------------------------------------------
# One generator per module: (params, inputs) -> list of (tensor name, tensor)
# --------------------------------------------------------------------------------------------


def gen_sdpa(p, inputs):
    """Scaled dot-product attention with an explicit [Sq,Sk] mask."""
    sq, sk, d = p["Sq"], p["Sk"], p["D"]
    q, k, v = torch.randn(sq, d), torch.randn(sk, d), torch.randn(sk, d)
    valid = int(inputs.get("valid_len", sk)) if p["mask"] == "padding" else sk
    if p["mask"] == "none":
        mask = torch.ones(sq, sk, dtype=torch.bool)
    elif p["mask"] == "padding":
        mask = st.padding_mask([valid], sk)[0].expand(sq, sk)
    elif p["mask"] == "causal":
        mask = ~causal_blocked(sq, sk)
    elif p["mask"] == "bool":
        mask = torch.rand(sq, sk) > 0.35
        if "masked_row" in inputs:
            mask[inputs["masked_row"]] = False
    else:
        raise ValueError(p["mask"])
    fill = {"neg_inf": -math.inf, "neg_1e9": -1e9}[p["fill"]]
    out, weights = st.attention(q, k, v, mask, fill)
    if p["fill"] == "neg_inf":
        # statiformer's definition for fully masked rows: weights 0, output 0 (PyTorch: NaN).
        dead = ~mask.any(dim=-1)
        weights = torch.where(dead[:, None], torch.zeros_like(weights), weights)
        out = torch.where(dead[:, None], torch.zeros_like(out), out)
    return [("q", q), ("k", k), ("v", v), ("valid_len", lengths_tensor([valid])),
            ("mask", mask), ("out", out), ("weights", weights)]


def gen_mha(p, inputs):
    """nn.MultiheadAttention(batch_first=True), per-head weights.

    fill neg_inf: PyTorch's own bool masks (-inf). fill neg_1e9: one float attn_mask [B·H, Sq, Sk]
    of 0 / -1e9 added to the scores (masked_fill(-1e9) but for scores of magnitude >= 32, which
    random inputs never reach); a fully masked row (bool masks' masked_row) then gets uniform
    weights, as statiformer defines it."""
    b, sq, sk, d, h = p["B"], p["Sq"], p["Sk"], p["D"], p["H"]
    if p["is_self"] and sq != sk:
        raise ValueError("self-attention needs Sq == Sk")
    mha = nn.MultiheadAttention(d, h, bias=p["bias"], batch_first=True).train()
    st.randomize_vectors(mha)
    query = torch.randn(b, sq, d)
    kv = query if p["is_self"] else torch.randn(b, sk, d)
    mask = p["mask"]
    vl = batch_valid_len(inputs, "valid_len", b, sk) if "padding" in mask else torch.full((b,), sk)
    # allowed [B, Sq, Sk]: True where query i may attend to key j
    allowed = st.padding_mask(vl, sk).expand(b, sq, sk).clone()
    if "causal" in mask:
        allowed &= ~causal_blocked(sq, sk)
    bool_mask = None
    if mask == "bool":
        bool_mask = torch.rand(sq, sk) > 0.35
        if "masked_row" in inputs:
            if p["fill"] == "neg_inf":
                raise ValueError("a fully masked row with -inf is NaN in PyTorch: use neg_1e9")
            bool_mask[inputs["masked_row"]] = False
        allowed &= bool_mask
    elif mask not in ("none", "padding", "causal", "padding_causal"):
        raise ValueError(mask)
    with torch.no_grad():
        if p["fill"] == "neg_inf":
            kpm = key_padding(vl, sk) if "padding" in mask else None
            attn_mask = causal_blocked(sq, sk) if "causal" in mask else None
            if bool_mask is not None:
                attn_mask = ~bool_mask
            out, weights = mha(query, kv, kv, key_padding_mask=kpm, need_weights=True,
                               attn_mask=attn_mask, average_attn_weights=False)
        else:
            additive = torch.zeros(b, sq, sk).masked_fill(~allowed, -1e9).repeat_interleave(h, dim=0)
            out, weights = mha(query, kv, kv, need_weights=True, attn_mask=additive,
                               average_attn_weights=False)
    tensors = st.canonical_from_torch(mha.state_dict(), split=not p["packed"])
    tensors.append(("query", query))
    if not p["is_self"]:
        tensors.append(("kv", kv))
    tensors.append(("valid_len", lengths_tensor(vl)))
    if bool_mask is not None:
        tensors.append(("mask", bool_mask))
    return tensors + [("out", out), ("weights", weights)]


class FeedForward(nn.Module):
    """linear2(act(linear1(x))), optionally act() again on the output."""

    def __init__(self, d, f, activation, out_activation):
        super().__init__()
        self.linear1 = nn.Linear(d, f)
        self.linear2 = nn.Linear(f, d)
        self.act = {"relu": F.relu, "gelu": F.gelu,
                    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}[activation]
        self.out_activation = out_activation

    def forward(self, x):
        y = self.linear2(self.act(self.linear1(x)))
        return self.act(y) if self.out_activation else y


def gen_ffn(p, inputs):
    """Position-wise feed-forward."""
    ff = FeedForward(p["D"], p["F"], p["activation"], p["out_activation"])
    st.randomize_vectors(ff)
    x = torch.randn(p["S"], p["D"])
    with torch.no_grad():
        y = ff(x)
    return list(ff.state_dict().items()) + [("x", x), ("y", y)]


def gen_layernorm(p, inputs):
    """nn.LayerNorm (eps 1e-5) or the annotated LayerNorm (unbiased std + 1e-6); layernorm_eps:
    the eps p["eps"]."""
    eps = p.get("eps")
    if p["flavour"] == "torch":
        norm = nn.LayerNorm(p["D"]) if eps is None else nn.LayerNorm(p["D"], eps=eps)
    else:
        if p["D"] < 2:
            raise ValueError("annotated LayerNorm needs D >= 2 (unbiased std)")
        norm = st.LayerNorm(p["D"]) if eps is None else st.LayerNorm(p["D"], eps=eps)
    st.randomize_vectors(norm)
    x = small_inputs(torch.randn(p["S"], p["D"]), inputs)
    with torch.no_grad():
        y = norm(x)
    params = st.canonical_from_annotated(norm.state_dict())
    return params + [("x", x), ("y", y)]


def gen_encoder_layer(p, inputs):
    """nn.TransformerEncoderLayer with src_key_padding_mask; encoder_layer_eps: layer_norm_eps p["eps"]."""
    layer = torch_layer("encoder", p, p["norm_first"], p["activation"], p.get("eps", 1e-5))
    st.randomize_vectors(layer)
    small_vectors(layer, inputs)
    vl = batch_valid_len(inputs, "valid_len", p["B"], p["S"])
    x = small_inputs(torch.randn(p["B"], p["S"], p["D"]), inputs)
    with torch.no_grad():
        y = layer(x, src_key_padding_mask=key_padding(vl, p["S"]))
    params = st.canonical_from_torch(layer.state_dict(), layer_level=True)
    return params + [("x", x), ("valid_len", lengths_tensor(vl)), ("y", y)]


def gen_decoder_layer(p, inputs):
    """nn.TransformerDecoderLayer, causal tgt_mask, memory_key_padding_mask."""
    layer = torch_layer("decoder", p, p["norm_first"], p["activation"])
    st.randomize_vectors(layer)
    small_vectors(layer, inputs)
    vl = batch_valid_len(inputs, "mem_valid_len", p["B"], p["Sm"])
    x = small_inputs(torch.randn(p["B"], p["S"], p["D"]), inputs)
    memory = small_inputs(torch.randn(p["B"], p["Sm"], p["D"]), inputs)
    with torch.no_grad():
        y = layer(x, memory, tgt_mask=causal_blocked(p["S"], p["S"]),
                  memory_key_padding_mask=key_padding(vl, p["Sm"]))
    params = st.canonical_from_torch(layer.state_dict(), layer_level=True)
    return params + [("x", x), ("memory", memory), ("mem_valid_len", lengths_tensor(vl)),
                     ("y", y)]


def torch_masks(sq, sk, causal):
    """PyTorch-convention masks with gaps: an attn_mask [Sq,Sk] and a key_padding_mask [Sk] (True
    = masked), and their union with the causal mask when asked; each query keeps one key (a fully
    masked row is NaN in PyTorch)."""
    attn = torch.rand(sq, sk) < 0.3
    pad = torch.rand(sk) < 0.3
    for i in range(sq):
        j = int(torch.randint(0, min(i, sk - 1) + 1 if causal else sk, ()))
        attn[i, j] = False
        pad[j] = False
    return attn, pad, (attn | causal_blocked(sq, sk)) if causal else attn


def gen_mha_masks(p, inputs):
    """nn.MultiheadAttention with a bool attn_mask (with the causal mask when asked) and a
    key_padding_mask, both with gaps (statiformer: TorchMasks)."""
    sq, sk, d, h = p["Sq"], p["Sk"], p["D"], p["H"]
    if p["is_self"] and sq != sk:
        raise ValueError("self-attention needs Sq == Sk")
    mha = nn.MultiheadAttention(d, h, batch_first=True).train()
    st.randomize_vectors(mha)
    query = torch.randn(1, sq, d)
    kv = query if p["is_self"] else torch.randn(1, sk, d)
    attn, pad, attn_mask = torch_masks(sq, sk, p["causal"])
    float_mask = None
    if p["float"]:
        # a float attn_mask: values added to the scores, -inf where the bool mask masks
        float_mask = torch.rand(sq, sk) * 4.0 - 2.0
        attn_mask = float_mask.masked_fill(attn_mask, float("-inf"))
    with torch.no_grad():
        out, weights = mha(query, kv, kv, key_padding_mask=pad[None], attn_mask=attn_mask,
                           need_weights=True, average_attn_weights=False)
    tensors = st.canonical_from_torch(mha.state_dict(), split=True)
    tensors.append(("query", query))
    if not p["is_self"]:
        tensors.append(("kv", kv))
    if float_mask is not None:
        tensors.append(("float_mask", float_mask))
    return tensors + [("attn_mask", attn), ("key_padding_mask", pad), ("out", out),
                      ("weights", weights)]


def gen_encoder_layer_masks(p, inputs):
    """nn.TransformerEncoderLayer with src_mask (bool, with the causal mask when asked) and
    src_key_padding_mask, both with gaps."""
    s = p["S"]
    layer = torch_layer("encoder", p, p["norm_first"], p["activation"])
    st.randomize_vectors(layer)
    x = torch.randn(1, s, p["D"])
    attn, pad, src_mask = torch_masks(s, s, p["causal"])
    with torch.no_grad():
        y = layer(x, src_mask=src_mask, src_key_padding_mask=pad[None])
    params = st.canonical_from_torch(layer.state_dict(), layer_level=True)
    return params + [("x", x), ("src_mask", attn), ("src_key_padding_mask", pad), ("y", y)]


def gen_decoder_layer_masks(p, inputs):
    """nn.TransformerDecoderLayer with tgt_mask (bool, with the causal mask), memory_mask,
    tgt_key_padding_mask and memory_key_padding_mask, all with gaps."""
    s, sm = p["S"], p["Sm"]
    layer = torch_layer("decoder", p, p["norm_first"], p["activation"])
    st.randomize_vectors(layer)
    x = torch.randn(1, s, p["D"])
    memory = torch.randn(1, sm, p["D"])
    tgt, tgt_pad, tgt_mask = torch_masks(s, s, True)
    mem, mem_pad, _ = torch_masks(s, sm, False)
    with torch.no_grad():
        y = layer(x, memory, tgt_mask=tgt_mask, memory_mask=mem, tgt_key_padding_mask=tgt_pad[None],
                  memory_key_padding_mask=mem_pad[None])
    params = st.canonical_from_torch(layer.state_dict(), layer_level=True)
    return params + [("x", x), ("memory", memory), ("tgt_mask", tgt), ("memory_mask", mem),
                     ("tgt_key_padding_mask", tgt_pad), ("memory_key_padding_mask", mem_pad),
                     ("y", y)]


def check_annotated(p):
    """The annotated flavour is pre-norm with a final norm only."""
    if p["ln"] == "annotated" and not (p["norm_first"] and p["final_norm"]):
        raise ValueError("ln=annotated needs norm_first=1 and final_norm=1")


def annotated_stack(kind, p, inputs):
    """Annotated Encoder/Decoder of N layers, xavier matrices, random 1-D parameters."""
    d, h, f = p["D"], p["H"], p["F"]
    ff = st.PositionwiseFeedForward(d, f)
    if kind == "encoder":
        stack = st.Encoder(st.EncoderLayer(d, st.MultiHeadedAttention(h, d), ff), p["N"])
    else:
        layer = st.DecoderLayer(d, st.MultiHeadedAttention(h, d), st.MultiHeadedAttention(h, d), ff)
        stack = st.Decoder(layer, p["N"])
    st.xavier_matrices(stack)
    st.randomize_vectors(stack)
    small_vectors(stack, inputs)
    return stack


def torch_stack(kind, p, inputs):
    """nn.TransformerEncoder/Decoder with independently initialised layers."""
    layer = torch_layer(kind, p, p["norm_first"], "relu")
    norm = nn.LayerNorm(p["D"]) if p["final_norm"] else None
    if kind == "encoder":
        stack = nn.TransformerEncoder(layer, p["N"], norm=norm, enable_nested_tensor=False)
    else:
        stack = nn.TransformerDecoder(layer, p["N"], norm=norm)
    st.reinit_layers(stack)
    st.randomize_vectors(stack)
    small_vectors(stack, inputs)
    return stack.train()


def gen_encoder_stack(p, inputs):
    """Encoder stack, torch or annotated flavour."""
    check_annotated(p)
    vl = batch_valid_len(inputs, "valid_len", p["B"], p["S"])
    if p["ln"] == "annotated":
        stack = annotated_stack("encoder", p, inputs)
        x = small_inputs(torch.randn(p["B"], p["S"], p["D"]), inputs)
        with torch.no_grad():
            y = stack(x, st.padding_mask(vl, p["S"]))
        params = st.canonical_from_annotated(stack.state_dict())
    else:
        stack = torch_stack("encoder", p, inputs)
        x = small_inputs(torch.randn(p["B"], p["S"], p["D"]), inputs)
        with torch.no_grad():
            y = stack(x, src_key_padding_mask=key_padding(vl, p["S"]))
        params = st.canonical_from_torch(stack.state_dict())
    return params + [("x", x), ("valid_len", lengths_tensor(vl)), ("y", y)]


def gen_decoder_stack(p, inputs):
    """Decoder stack, torch or annotated flavour (causal self-attention, memory padding)."""
    check_annotated(p)
    b, s, sm, d = p["B"], p["S"], p["Sm"], p["D"]
    vl = batch_valid_len(inputs, "mem_valid_len", b, sm)
    if p["ln"] == "annotated":
        stack = annotated_stack("decoder", p, inputs)
        x = small_inputs(torch.randn(b, s, d), inputs)
        memory = small_inputs(torch.randn(b, sm, d), inputs)
        with torch.no_grad():
            y = stack(x, memory, st.padding_mask(vl, sm), st.subsequent_mask(s))
        params = st.canonical_from_annotated(stack.state_dict())
    else:
        stack = torch_stack("decoder", p, inputs)
        x = small_inputs(torch.randn(b, s, d), inputs)
        memory = small_inputs(torch.randn(b, sm, d), inputs)
        with torch.no_grad():
            y = stack(x, memory, tgt_mask=causal_blocked(s, s),
                      memory_key_padding_mask=key_padding(vl, sm))
        params = st.canonical_from_torch(stack.state_dict())
    return params + [("x", x), ("memory", memory), ("mem_valid_len", lengths_tensor(vl)),
                     ("y", y)]


def gen_posenc(p, inputs):
    """x + pe[:S]."""
    if p["D"] % 2:
        raise ValueError("posenc needs an even D")
    pe = st.PositionalEncoding(p["D"])
    x = torch.randn(p["S"], p["D"])
    with torch.no_grad():
        y = pe(x.unsqueeze(0))[0]
    return [("x", x), ("y", y)]


def gen_embedding(p, inputs):
    """weight[tokens] * sqrt(D)."""
    emb = st.Embeddings(p["D"], p["V"])
    tokens = torch.randint(0, p["V"], (p["S"],))
    with torch.no_grad():
        y = emb(tokens)
    return [("weight", emb.lut.weight), ("tokens", tokens), ("y", y)]


def gen_generator(p, inputs):
    """log_softmax(x Wᵀ + b)."""
    gen = st.Generator(p["D"], p["V"])
    st.randomize_vectors(gen)
    x = torch.randn(p["S"], p["D"])
    with torch.no_grad():
        y = gen(x)
    return list(gen.state_dict().items()) + [("x", x), ("y", y)]


def gen_classifier(p, inputs):
    """tokens -> embedding*sqrt(D) + PE -> post-norm encoder (no final norm) -> proj."""
    s, d = p["S"], p["D"]
    emb = st.Embeddings(d, p["V"])
    pe = st.PositionalEncoding(d)
    stack = torch_stack("encoder", dict(p, norm_first=False, final_norm=False), inputs)
    proj = nn.Linear(d, p["C"])
    st.randomize_vectors(proj)
    vl = batch_valid_len(inputs, "valid_len", 1, s)
    tokens = torch.randint(1, p["V"], (s,))
    tokens[int(vl[0]):] = 0
    with torch.no_grad():
        h = stack(pe(emb(tokens[None])), src_key_padding_mask=key_padding(vl, s))
        y = proj(h)[0]
    params = [("src_embed.weight", emb.lut.weight)]
    params += prefixed("encoder.", st.canonical_from_torch(stack.state_dict()))
    params += prefixed("proj.", list(proj.state_dict().items()))
    return params + [("tokens", tokens), ("valid_len", lengths_tensor(vl)), ("y", y)]


# "scale" in an encoder-decoder leaves the generator and the decoder's final norm as they are (its
# log-probs stay those of a model that decodes with clear margins) and scales every other 1-D
# parameter: the layers' norms then see rows of variance ~scale² (but a stack's first norm, which
# sees the embeddings plus the positional encoding).
ENCDEC_KEEP = ("generator.", "decoder.norm.")


def gen_encdec_greedy(p, inputs):
    """Random encoder-decoder, greedy decoding of one source."""
    s, v = p["S"], p["V"]
    if p["ln"] == "annotated":
        if not p["norm_first"]:
            raise ValueError("ln=annotated needs norm_first=1")
        model = st.make_model(v, v, p["N"], p["D"], p["F"], p["H"]).eval()
        st.randomize_vectors(model)
        small_vectors(model, inputs, ENCDEC_KEEP)
        params = st.canonical_from_annotated(model.state_dict())
    else:
        model = st.TorchEncoderDecoder(v, v, p["N"], p["D"], p["F"], p["H"], p["norm_first"])
        st.reinit_layers(model)
        st.randomize_vectors(model)
        small_vectors(model, inputs, ENCDEC_KEEP)
        model.train()  # dropout is 0; train mode only avoids the fast path
        params = st.canonical_from_torch_encdec(model)
    src = torch.tensor(inputs["src"], dtype=torch.long)
    valid = int(inputs["src_valid_len"])
    if src.shape != (s,) or not 1 <= valid <= s or not all(0 <= t < v for t in inputs["src"]):
        raise ValueError("bad src / src_valid_len")
    start = int(inputs["start"])
    with torch.no_grad():
        memory, ys, logprobs, margin = st.greedy_decode(
            model, src[None], st.padding_mask([valid], s), p["T"], start)
    return params + [("src", src), ("src_valid_len", lengths_tensor([valid])),
                     ("start", lengths_tensor([start])), ("memory", memory[0]),
                     ("decoded", ys[0]), ("logprobs", logprobs),
                     ("min_margin", torch.tensor([margin]))]


def gen_encdec_masks(p, inputs):
    """nn.Transformer's masks through the encoder-decoder (stf_torch.TorchEncoderDecoder, torch
    layers): a src_mask and a src_key_padding_mask with gaps for the encoder, the same key padding
    as memory_key_padding_mask, optionally a memory_mask [T, S] (the decoder at length L reads its
    first L rows), the causal tgt_mask; greedy decoding from the start token. With float=1 the
    src_mask and memory_mask are given as floats: finite values added to the scores, -inf where
    the bool masks mask (stored as the finite values and the bool masks)."""
    s, t, v = p["S"], p["T"], p["V"]
    if p["float"] and not p["memory_mask"]:
        raise ValueError("float=1 needs memory_mask=1 (both masks are given as floats)")
    model = st.TorchEncoderDecoder(v, v, p["N"], p["D"], p["F"], p["H"], p["norm_first"])
    st.reinit_layers(model)
    st.randomize_vectors(model)
    model.train()  # dropout is 0; train mode only avoids the fast path
    src = torch.tensor(inputs["src"], dtype=torch.long)
    if src.shape != (s,) or not all(0 <= tok < v for tok in inputs["src"]):
        raise ValueError("bad src")
    src_mask, pad, _ = torch_masks(s, s, False)  # each encoder row keeps a key no mask takes
    memory_mask = torch.rand(t, s) < 0.3
    kept = [j for j in range(s) if not pad[j]]
    for i in range(t):  # each decoding position keeps a memory key
        memory_mask[i, kept[int(torch.randint(0, len(kept), ()))]] = False
    if not p["memory_mask"]:
        memory_mask[:] = False
    src_attn, memory_attn = src_mask, memory_mask
    if p["float"]:  # drawn after the bool masks: the float=0 cases' draws are unchanged
        src_float = torch.rand(s, s) * 4.0 - 2.0
        memory_float = torch.rand(t, s) * 4.0 - 2.0
        src_attn = src_float.masked_fill(src_mask, float("-inf"))
        memory_attn = memory_float.masked_fill(memory_mask, float("-inf"))
    start = int(inputs["start"])
    with torch.no_grad():
        memory = model.encoder(model.pos(model.src_embed(src[None])), mask=src_attn,
                               src_key_padding_mask=pad[None])
        ys = torch.full((1, 1), start, dtype=torch.long)
        rows, margin = [], math.inf
        for _ in range(t - 1):
            n = ys.size(1)
            out = model.decoder(model.pos(model.tgt_embed(ys)), memory,
                                tgt_mask=causal_blocked(n, n),
                                memory_mask=memory_attn[:n] if p["memory_mask"] else None,
                                memory_key_padding_mask=pad[None])
            prob = model.generator(out[:, -1])[0]
            rows.append(prob)
            top2 = torch.topk(prob, 2).values
            margin = min(margin, float(top2[0] - top2[1]))
            ys = torch.cat([ys, torch.argmax(prob).view(1, 1)], dim=1)
    tensors = st.canonical_from_torch_encdec(model) + [("src", src), ("start", lengths_tensor([start])),
                                                       ("src_mask", src_mask),
                                                       ("src_key_padding_mask", pad)]
    if p["memory_mask"]:
        tensors.append(("memory_mask", memory_mask))
    if p["float"]:
        tensors += [("src_float_mask", src_float), ("memory_float_mask", memory_float)]
    return tensors + [("memory", memory[0]), ("decoded", ys[0]), ("logprobs", torch.stack(rows)),
                      ("min_margin", torch.tensor([margin]))]


def gen_decoder_only(p, inputs):
    """Decoder-only model (nn.TransformerEncoder with a causal mask, or hand-written GPT blocks):
    every prompt position's log-probs, then greedy generation to the capacity S (no cache)."""
    s, v = p["S"], p["V"]
    if p["block"] == "gpt" and not (p["norm_first"] and p["activation"] == "gelu"):
        raise ValueError("block=gpt is pre-norm with GELU: norm_first=1, activation=gelu")
    model = st.TorchDecoderOnly(v, p["N"], p["D"], p["F"], p["H"], p["norm_first"],
                                p["final_norm"], p["activation"], p["block"])
    st.reinit_layers(model)
    st.randomize_vectors(model)
    model.train()  # dropout is 0; train mode only avoids the fast path
    prompt = torch.tensor(inputs["prompt"], dtype=torch.long)
    if not 1 <= len(prompt) <= s or not all(0 <= t < v for t in inputs["prompt"]):
        raise ValueError("bad prompt")
    n_new = s + 1 - len(prompt)  # to the capacity: every generated token but the last is fed
    with torch.no_grad():
        logprobs, generated, gen_logprobs, margin = st.greedy_generate(model, prompt, n_new)
    params = st.canonical_from_decoder_only(model)
    return params + [("prompt", prompt), ("logprobs", logprobs), ("generated", generated),
                     ("gen_logprobs", gen_logprobs), ("min_margin", torch.tensor([margin]))]


# module -> (cases.inc macro, macro parameter order after the name, generator)
MODULES = {
    "sdpa": ("STF_GOLDEN_SDPA", ["Sq", "Sk", "D", "mask", "fill"], gen_sdpa),
    "mha": ("STF_GOLDEN_MHA",
            ["B", "Sq", "Sk", "D", "H", "bias", "packed", "is_self", "mask", "fill"], gen_mha),
    "ffn": ("STF_GOLDEN_FFN", ["S", "D", "F", "activation", "out_activation"], gen_ffn),
    "layernorm": ("STF_GOLDEN_LAYERNORM", ["S", "D", "flavour"], gen_layernorm),
    "layernorm_eps": ("STF_GOLDEN_LAYERNORM_EPS", ["S", "D", "flavour", "eps"], gen_layernorm),
    "encoder_layer": ("STF_GOLDEN_ENCODER_LAYER",
                      ["B", "S", "D", "H", "F", "norm_first", "activation"], gen_encoder_layer),
    "encoder_layer_eps": ("STF_GOLDEN_ENCODER_LAYER_EPS",
                          ["B", "S", "D", "H", "F", "norm_first", "activation", "eps"],
                          gen_encoder_layer),
    "decoder_layer": ("STF_GOLDEN_DECODER_LAYER",
                      ["B", "S", "Sm", "D", "H", "F", "norm_first", "activation"],
                      gen_decoder_layer),
    "encoder_stack": ("STF_GOLDEN_ENCODER_STACK",
                      ["B", "S", "D", "H", "F", "N", "norm_first", "final_norm", "ln"],
                      gen_encoder_stack),
    "decoder_stack": ("STF_GOLDEN_DECODER_STACK",
                      ["B", "S", "Sm", "D", "H", "F", "N", "norm_first", "final_norm", "ln"],
                      gen_decoder_stack),
    "encdec_masks": ("STF_GOLDEN_ENCDEC_MASKS",
                     ["S", "T", "V", "D", "H", "F", "N", "norm_first", "memory_mask", "float"],
                     gen_encdec_masks),
    "mha_masks": ("STF_GOLDEN_MHA_MASKS", ["Sq", "Sk", "D", "H", "is_self", "causal", "float"],
                  gen_mha_masks),
    "encoder_layer_masks": ("STF_GOLDEN_ENCODER_LAYER_MASKS",
                            ["S", "D", "H", "F", "norm_first", "activation", "causal"],
                            gen_encoder_layer_masks),
    "decoder_layer_masks": ("STF_GOLDEN_DECODER_LAYER_MASKS",
                            ["S", "Sm", "D", "H", "F", "norm_first", "activation"],
                            gen_decoder_layer_masks),
    "posenc": ("STF_GOLDEN_POSENC", ["S", "D"], gen_posenc),
    "embedding": ("STF_GOLDEN_EMBEDDING", ["S", "V", "D"], gen_embedding),
    "generator": ("STF_GOLDEN_GENERATOR", ["S", "D", "V"], gen_generator),
    "classifier": ("STF_GOLDEN_CLASSIFIER", ["S", "V", "D", "H", "F", "N", "C"], gen_classifier),
    "encdec_greedy": ("STF_GOLDEN_ENCDEC",
                      ["S", "T", "V", "D", "H", "F", "N", "norm_first", "ln"], gen_encdec_greedy),
    "decoder_only": ("STF_GOLDEN_DECODER_ONLY",
                     ["S", "V", "D", "H", "F", "N", "norm_first", "final_norm", "activation",
                      "block"], gen_decoder_only),
}

WORDS = {"relu", "gelu", "gelu_tanh", "none", "padding", "causal", "bool", "neg_inf", "neg_1e9", "torch",
         "annotated", "padding_causal", "gpt"}

# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def ordered_params(case):
    """The case's params as (key, value) in macro order, validated."""
    _, order, _ = MODULES[case["module"]]
    params = case["params"]
    if set(params) != set(order):
        raise ValueError(f"{case['name']}: params {sorted(params)} != {sorted(order)}")
    for k in order:
        v = params[k]
        if isinstance(v, str) and v not in WORDS:
            raise ValueError(f"{case['name']}: unknown word {v!r} for {k}")
        if k == "eps":
            if not (isinstance(v, float) and v > 0):
                raise ValueError(f"{case['name']}: eps must be a float > 0")
        elif not isinstance(v, (bool, int, str)):
            raise ValueError(f"{case['name']}: {k} must be an int, bool or word")
    if "D" in params and "H" in params and params["D"] % params["H"]:
        raise ValueError(f"{case['name']}: D must be a multiple of H")
    return [(k, params[k]) for k in order]


def round_up(x, digits=2):
    """x rounded up to `digits` significant digits (0 stays 0)."""
    if x <= 0:
        return 0.0
    quantum = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return float(f"{math.ceil(x / quantum - 1e-9) * quantum:.{digits}g}")


def tolerance_from(measured):
    """The tolerance rule: atol = TOLERANCE_FACTOR x the largest of the case's measured errors
    (the C++ result against PyTorch, PyTorch against the float64 oracle, and DRIFT_MARGIN x
    PyTorch's drift across CPU kernels), rounded up to two significant digits; rtol 0. An absolute
    bound, because each error is the max over the case's whole output and the outputs of one case
    share a magnitude."""
    worst = max(measured["max_abs"], measured["float64_abs"], DRIFT_MARGIN * measured["drift_abs"])
    return {"rtol": 0.0, "atol": round_up(TOLERANCE_FACTOR * worst)}


def case_tolerance(case, defaults):
    """The case's tolerance: from its measurement, else (a new case, until --measure) the plan's
    provisional default."""
    if "measured" in case:
        return tolerance_from(case["measured"])
    return dict(defaults["tolerance"])


def render_case(case, defaults):
    """(file text, cases.inc line) for one case."""
    macro, _, gen = MODULES[case["module"]]
    params = ordered_params(case)
    tol = case_tolerance(case, defaults)
    torch.manual_seed(case["seed"])
    tensors = gen(dict(params), case.get("inputs", {}))
    text = st.golden_text(case["name"], case["module"], params, (tol["rtol"], tol["atol"]),
                          tensors)
    args = ", ".join([case["name"]] + [st.fmt_value(v) for _, v in params])
    return text, f"{macro}({args})"


def render_all(plan):
    """{path: text} for every data file and cases.inc."""
    names = [c["name"] for c in plan["cases"]]
    if len(set(names)) != len(names):
        raise ValueError("duplicate case names")
    outputs, lines = {}, []
    for case in plan["cases"]:
        if not case["name"].isidentifier():
            raise ValueError(f"case name {case['name']!r} is not a C identifier")
        text, line = render_case(case, plan["defaults"])
        outputs[os.path.join(DATA, case["name"] + ".txt")] = text
        lines.append(line)
    header = "// generated by tools/gen_golden.py from tests/golden/plan.json — do not edit\n"
    outputs[CASES_INC] = header + "\n".join(lines) + "\n"
    return outputs


def stale_files(outputs):
    """Files in DATA that the plan no longer produces."""
    present = {os.path.join(DATA, f) for f in os.listdir(DATA) if f.endswith(".txt")}
    foreign = {os.path.join(DATA, f) for f in FOREIGN_FILES}
    return sorted(present - set(outputs) - foreign)


def check(outputs, plan):
    """Compare outputs with the files on disk; return the number of problems. cases.inc must be
    byte-identical; a case's values may drift by DRIFT_ALLOWANCE of its tolerance (PyTorch rounds
    per CPU); every case must have been measured (its tolerance comes from the measurement)."""
    problems, worst, worst_case = 0, 0.0, None
    for case in plan["cases"]:
        if "measured" not in case:
            print(f"UNMEASURED {case['name']}: run tools/gen_golden.py --measure <build dir>")
            problems += 1
    for path, text in outputs.items():
        rel = os.path.relpath(path, ROOT)
        if not os.path.exists(path):
            print(f"MISSING {rel}")
            problems += 1
            continue
        with open(path, "rb") as f:
            committed = f.read().decode()
        if path == CASES_INC:
            problem = None if committed == text else "not byte-identical"
        else:
            problem, drift = st.golden_drift(committed, text, DRIFT_ALLOWANCE)
            if drift > worst:
                worst, worst_case = drift, os.path.basename(path)[:-len(".txt")]
        if problem:
            print(f"DIFFERS {rel}: {problem}")
            problems += 1
    for path in stale_files(outputs):
        print(f"STALE {os.path.relpath(path, ROOT)} (not in the plan)")
        problems += 1
    print(f"worst drift of PyTorch's outputs on this CPU from the committed ones: {worst:.1%} of the "
          f"case's tolerance ({worst_case or 'byte-identical'}; allowed {DRIFT_ALLOWANCE:.0%})")
    return problems


# --------------------------------------------------------------------------------------------
# --measure: the errors each tolerance is made from
# --------------------------------------------------------------------------------------------

# check_close's line in the C++ golden tests (tests/support/golden.cpp)
CPP_LINE = re.compile(r"^golden (\S+)\s+(\S+)\s+max_abs (\S+)\s+max_rel (\S+)")


def cpp_errors(build_dir):
    """{case: [max_abs, max_rel]} of the C++ results against PyTorch's, over every comparison the
    golden tests print for the case (both attention modes, every output tensor)."""
    errors = {}
    for name in GOLDEN_TESTS:
        exe = os.path.join(build_dir, "tests", name)
        if not os.path.exists(exe):
            raise SystemExit(f"{exe} missing: build the golden tests first")
        run = subprocess.run([exe], capture_output=True, text=True, check=False)
        for line in run.stdout.splitlines():
            m = CPP_LINE.match(line)
            if m:
                e = errors.setdefault(m.group(1), [0.0, 0.0])
                e[0], e[1] = max(e[0], float(m.group(3))), max(e[1], float(m.group(4)))
    return errors


def runnable(flavour):
    """Whether this CPU can run a DRIFT_FLAVOURS entry (AVX-512 kernels need AVX-512F)."""
    with open("/proc/cpuinfo") as f:
        avx512 = " avx512f" in f.read()
    return avx512 or (flavour["OPENBLAS_CORETYPE"] != "SkylakeX"
                      and flavour["ATEN_CPU_CAPABILITY"] != "avx512")


def drift_errors(plan, outputs):
    """{case: max |value under a DRIFT_FLAVOURS CPU flavour - value in outputs|} over every tensor
    but the decoded tokens, which must not change at all."""
    drift = {c["name"]: 0.0 for c in plan["cases"]}
    for flavour in DRIFT_FLAVOURS:
        label = " ".join(f"{k}={v}" for k, v in flavour.items())
        if not runnable(flavour):
            print(f"drift: skipping {label} (no AVX-512 on this CPU)")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--render-to", tmp],
                           env=dict(os.environ, **flavour), check=True, stdout=subprocess.DEVNULL)
            for case in plan["cases"]:
                name = case["name"]
                want = st.parse_golden(outputs[os.path.join(DATA, name + ".txt")])["tensors"]
                got = st.read_golden(os.path.join(tmp, name + ".txt"))["tensors"]
                for tname, t in want.items():
                    d = float((got[tname] - t).abs().max()) if t.numel() else 0.0
                    if tname in ("decoded", "generated") and d != 0:
                        raise SystemExit(f"{name}: decoded tokens change under {label}: a near-tie")
                    drift[name] = max(drift[name], d)
        print(f"drift: {label}: worst {max(drift.values()):.3g}")
    return drift


def write_outputs(outputs):
    """Write the data files and cases.inc."""
    os.makedirs(DATA, exist_ok=True)
    for path, text in outputs.items():
        with open(path, "w", newline="\n") as f:
            f.write(text)


def write_plan(plan):
    """plan.json with one line per case (the layout it is kept in)."""
    head = {k: v for k, v in plan.items() if k != "cases"}
    text = json.dumps(head, indent=2, ensure_ascii=False)[:-2] + ',\n  "cases": [\n'
    text += ",\n".join("    " + json.dumps(c, ensure_ascii=False) for c in plan["cases"])
    with open(PLAN, "w", newline="\n") as f:
        f.write(text + "\n  ]\n}\n")


def measure(plan, build_dir):
    """Measure every case, write the figures into plan.json and regenerate with the tolerances
    they give (tolerance_from)."""
    import verify_golden  # noqa: E402  (NumPy; only --measure needs it)
    outputs = render_all(plan)
    write_outputs(outputs)  # the C++ tests read these
    cpp = cpp_errors(build_dir)
    missing = [c["name"] for c in plan["cases"] if c["name"] not in cpp]
    if missing:
        raise SystemExit(f"not run by the golden tests in {build_dir} (rebuild them: cases.inc "
                         f"changed?): {', '.join(missing)}")
    drift = drift_errors(plan, outputs)
    for case in plan["cases"]:
        name = case["name"]
        oracle = verify_golden.max_abs_error(os.path.join(DATA, name + ".txt"))
        case["measured"] = {"max_abs": round_up(cpp[name][0], 3), "max_rel": round_up(cpp[name][1], 3),
                            "float64_abs": round_up(oracle, 3), "drift_abs": round_up(drift[name], 3)}
        tol = tolerance_from(case["measured"])
        print(f"{name:45} {case['measured']} -> atol {tol['atol']:g}")
    write_plan(plan)
    write_outputs(render_all(plan))
    print(f"measured {len(plan['cases'])} cases; plan.json, data and cases.inc rewritten")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--check", action="store_true",
                        help="recompute and verify the committed files reproduce")
    parser.add_argument("--measure", metavar="BUILD_DIR",
                        help="measure every case's errors with the golden tests built in BUILD_DIR, "
                             "write them and the tolerances they give")
    parser.add_argument("--render-to", metavar="DIR", help=argparse.SUPPRESS)  # (--measure's drift)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with open(PLAN) as f:
        plan = json.load(f)
    if args.measure:
        measure(plan, args.measure)
        return 0
    outputs = render_all(plan)
    if args.render_to:
        for case in plan["cases"]:
            name = case["name"] + ".txt"
            with open(os.path.join(args.render_to, name), "w", newline="\n") as f:
                f.write(outputs[os.path.join(DATA, name)])
        return 0
    if args.check:
        problems = check(outputs, plan)
        print(f"{len(plan['cases'])} cases: " + ("OK" if not problems else f"{problems} problems"))
        return 1 if problems else 0
    write_outputs(outputs)
    for path in stale_files(outputs):
        print(f"warning: stale {os.path.relpath(path, ROOT)} is not in the plan")
    total = sum(len(t) for t in outputs.values())
    print(f"wrote {len(plan['cases'])} cases, {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
