#!/usr/bin/python3
"""Export a PyTorch checkpoint to statiformer: a C++ weight header and a .safetensors file.

    /usr/bin/python3 tools/export.py CHECKPOINT SCHEMA.json [--map auto] \\
        [--header OUT.hpp --namespace NS] [--safetensors OUT.safetensors]
    /usr/bin/python3 tools/export.py CHECKPOINT --emit-model NAME --seq-len N --header OUT.hpp \\
        [--config CONFIG.json] [--seed S] [--safetensors OUT.safetensors] [--tgt-len T --start-token B]
        [--prompt-tokens IDS --new-tokens M]

--emit-model (no schema, one C++ compile; README "One compile"): the hyperparameters are read from
the module (a whole nn.TransformerEncoder [+ final nn.LayerNorm] or nn.TransformerEncoderLayer saved
with torch.save, or a state_dict / PyTorch-layout .safetensors with --config's constructor
arguments), the schema is derived from them (derived_schema: what stf_schema prints for the type),
and OUT.hpp holds `using Model = stf::...;`, the weights and their table with the hyperparameter
records, bind(Model::Params&), `bound_model` (bound at compile time), a seeded test input with
PyTorch's output and check(const Model&) -> max abs error. What it cannot express is one line on
stderr, exit status 2. The encoder-decoder stf_torch.TorchEncoderDecoder (saved whole) becomes
stf::Transformer<SEQ_LEN, --tgt-len, ...> with bound_model_params, a seeded source with PyTorch's
greedy tokens (from --start-token) and per-step log-probs, and check(Model&) -> {max abs error,
tokens equal}.

A decoder-only model (a whole tools/stf_torch.TorchDecoderOnly: embedding, positional encoding,
nn.TransformerEncoder run with a causal mask or GptBlock layers, final norm, generator) becomes
`stf::Gpt<N, vocab, ...>` with a capacity of --seq-len N positions; its header stores a test prompt
(--prompt-tokens IDS, else seeded random ids) with PyTorch's log-probabilities at every prompt
position, its greedy continuation (--new-tokens M) and each step's log-probabilities, and
check(Model&) runs prefill, generate and the steps ({max_error, tokens_equal, ...}). The model holds
its K/V caches, so it is a variable: `bound_model_params` (constexpr) are its parameters bound at
compile time.

CHECKPOINT: a state_dict or a whole module saved with torch.save. A whole module's hyperparameters
(nn.Transformer*: nhead, d_model, dim_feedforward, norm_first, activation, eps, num_layers;
nn.LayerNorm, nn.Embedding) are compared with the schema's first: a mismatch is an error.  SCHEMA.json: the model's
parameter schema, printed by the C++ side (`stf_schema MODEL`, include/statiformer/io/schema.hpp):
every parameter's name, PyTorch shape, dtype and stored layout (`transposed`, `stored_shape`).

Names are mapped from PyTorch's to statiformer's (tools/GOLDEN_FORMAT.md) by a name map:
  torch      nn.TransformerEncoderLayer/DecoderLayer, nn.TransformerEncoder/Decoder/Transformer,
             nn.MultiheadAttention (packed in_proj_weight/in_proj_bias split into q/k/v,
             q_proj_weight/k_proj_weight/v_proj_weight, out_proj -> o, multihead_attn -> cross_attn,
             linear1/linear2 -> ff.linear1/ff.linear2), embeddings' `lut`
  annotated  the annotated transformer: linears.0-3 -> q,k,v,o; src_attn -> cross_attn;
             feed_forward.w_1/w_2 -> ff.linear1/linear2; sublayer.N.norm.a_2/b_2 -> normN+1;
             norm.a_2/b_2 -> norm.weight/bias; src_embed.0.lut -> src_embed
  tutorial   W_q/W_k/W_v/W_o -> q,k,v,o; ff_proj/output_proj and feed_forward.0/2 (nn.Sequential)
             -> ff.linear1/linear2; feed_forward -> ff; norm1/norm2 kept
  auto       all three (they never disagree), the default
--map-file adds user rules applied first: a JSON list of [regex, replacement] over whole names.

Every name, shape and dtype is checked against the schema; missing, unexpected and mis-shaped
tensors are all reported by name and nothing is written.  Tensors are written in the layout the
model stores (`transposed`: the transpose of PyTorch's), as the schema says, never by guessing.

Outputs:
  --header       `alignas(64) inline constexpr float` arrays + `stf::WeightEntry table[]` for
                 stf::bind_table (include/statiformer/io/bind.hpp), ending with one record
                 {"key=value", nullptr, 0} per hyperparameter of the schema
  --safetensors  the safetensors format (little-endian F32 in stored layout, tensors in schema order,
                 data region 64-byte aligned, no gaps) with
                 __metadata__ {"format": "statiformer", "layout": "<schema version>", "model": ...,
                 and the schema's "hparams", key: value}, which include/statiformer/io/safetensors.hpp
                 requires.
The hyperparameters (heads, norm placement, activation, LayerNorm kind and eps, mask fill, lengths,
sizes, layer counts; include/statiformer/io/hparams.hpp) are the C++ model type's, as the schema
prints them: the loader and bind_table reject weights exported for another model type.
Both are deterministic: the same inputs give the same bytes.
"""

import argparse
import json
import math
import os
import re
import struct
import sys

import torch

import calibrate as calibrate_mod
import stf_torch

LAYOUT_FORMAT = "statiformer"
SUPPORTED_SCHEMA_VERSION = 2
RESERVED_METADATA = ("format", "layout", "model")
IGNORED = [r"(^|\.)pe$", r"(^|\.)num_batches_tracked$"]  # buffers that are not parameters


class ExportError(Exception):
    """A checkpoint that does not fit the schema; .problems lists every problem."""

    def __init__(self, problems):
        super().__init__("\n".join(problems))
        self.problems = problems


# ----------------------------------------------------------------------------------------------
# Name maps: PyTorch key -> list of (statiformer name, tensor)
# ----------------------------------------------------------------------------------------------

_ANNOTATED = [
    (r"(^|\.)linears\.0\.", r"\1q."),
    (r"(^|\.)linears\.1\.", r"\1k."),
    (r"(^|\.)linears\.2\.", r"\1v."),
    (r"(^|\.)linears\.3\.", r"\1o."),
    (r"(^|\.)src_attn\.", r"\1cross_attn."),
    (r"(^|\.)feed_forward\.w_1\.", r"\1ff.linear1."),
    (r"(^|\.)feed_forward\.w_2\.", r"\1ff.linear2."),
    (r"(^|\.)(src_embed|tgt_embed)\.0\.lut\.", r"\1\2."),
    (r"(^|\.)sublayer\.(\d+)\.norm\.a_2$", lambda m: f"{m.group(1)}norm{int(m.group(2)) + 1}.weight"),
    (r"(^|\.)sublayer\.(\d+)\.norm\.b_2$", lambda m: f"{m.group(1)}norm{int(m.group(2)) + 1}.bias"),
    (r"(^|\.)a_2$", r"\1weight"),
    (r"(^|\.)b_2$", r"\1bias"),
]

_TUTORIAL = [
    (r"(^|\.)W_q\.", r"\1q."),
    (r"(^|\.)W_k\.", r"\1k."),
    (r"(^|\.)W_v\.", r"\1v."),
    (r"(^|\.)W_o\.", r"\1o."),
    (r"(^|\.)feed_forward\.0\.", r"\1ff.linear1."),
    (r"(^|\.)feed_forward\.2\.", r"\1ff.linear2."),
    (r"(^|\.)(feed_forward|ff)\.(ff_proj|w_1)\.", r"\1ff.linear1."),
    (r"(^|\.)(feed_forward|ff)\.(output_proj|w_2)\.", r"\1ff.linear2."),
    (r"(^|\.)ff_proj\.", r"\1ff.linear1."),
    (r"(^|\.)output_proj\.", r"\1ff.linear2."),
    (r"(^|\.)feed_forward\.", r"\1ff."),
]

_TORCH = [
    (r"(^|\.)multihead_attn\.", r"\1cross_attn."),
    (r"(^|\.)out_proj\.", r"\1o."),
    (r"(^|\.)(src_embed|tgt_embed)\.lut\.", r"\1\2."),
    (r"(^|\.)(?<!ff\.)(linear[12])\.", r"\1ff.\2."),
    (r"(^|\.)([qkv])_proj_weight$", r"\1\2.weight"),
]

BUILTIN_MAPS = {"torch": _TORCH, "annotated": _ANNOTATED, "tutorial": _TUTORIAL,
                "auto": _ANNOTATED + _TUTORIAL + _TORCH}


def _split_packed(name, tensor):
    """`...in_proj_weight` [3D, D] / `...in_proj_bias` [3D] -> q, k, v pieces (rows [0,D), [D,2D), [2D,3D))."""
    m = re.search(r"(^|\.)in_proj_(weight|bias)$", name)
    if not m:
        return [(name, tensor)]
    prefix, leaf = name[: m.start()] + m.group(1), m.group(2)
    if tensor.dim() == 0 or tensor.shape[0] % 3:
        return [(name, tensor)]  # reported as unexpected: not a packed q/k/v
    d = tensor.shape[0] // 3
    return [(f"{prefix}{p}.{leaf}", tensor[i * d:(i + 1) * d]) for i, p in enumerate("qkv")]


def map_names(state_dict, rules):
    """[(statiformer name, torch key, tensor)] in state_dict order; ignored buffers dropped."""
    out = []
    for key, tensor in state_dict.items():
        if any(re.search(p, key) for p in IGNORED):
            continue
        name = key
        for pattern, repl in rules:
            name = re.sub(pattern, repl, name)
        out.extend((n, key, t) for n, t in _split_packed(name, tensor))
    return out


def load_checkpoint(path):
    """(state_dict, the module or None) from a torch.save file holding a state_dict or a module, or a
    PyTorch-layout .safetensors file (load_any)."""
    return load_any(path)


def load_state_dict(path):
    """A state_dict from a torch.save file holding a state_dict or a module."""
    return load_checkpoint(path)[0]


def _activation_text(fn):
    """relu, gelu (erf) or gelu_tanh. F.relu, F.gelu, nn.ReLU and nn.GELU are recognised as such;
    any other callable (a lambda such as PyTorch 1.13 needs for the tanh GELU in
    nn.TransformerEncoderLayer, a functools.partial) cannot be inspected reliably, so it is run on
    fixed probe values and named by the activation whose outputs it reproduces exactly; none: an
    "unsupported (...)" text, which no schema value equals."""
    F = torch.nn.functional
    if fn is F.relu or isinstance(fn, torch.nn.ReLU):
        return "relu"
    if fn is F.gelu or (isinstance(fn, torch.nn.GELU) and fn.approximate == "none"):
        return "gelu"
    if isinstance(fn, torch.nn.GELU) and fn.approximate == "tanh":
        return "gelu_tanh"
    probe = torch.linspace(-6.0, 6.0, 241)
    try:
        with torch.no_grad():
            got = fn(probe.clone())
    except Exception:  # noqa: BLE001  (any failure: not an activation we know)
        got = None
    if isinstance(got, torch.Tensor) and got.shape == probe.shape and got.dtype == probe.dtype:
        known = (("relu", F.relu), ("gelu", F.gelu),
                 ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")))
        for text, ref in known:
            if torch.equal(got, ref(probe)):
                return text
    return f"unsupported ({getattr(fn, '__name__', type(fn).__name__)})"


def module_hparams(module, rules, strip_prefix=""):
    """The hyperparameters a whole PyTorch module keeps (its constructor arguments), under the
    schema's keys (include/statiformer/io/hparams.hpp; module paths through the name map):
    nn.Transformer{Encoder,Decoder}[Layer], nn.LayerNorm, nn.Embedding. {key: text}."""
    nn = torch.nn
    out = {}
    for path, m in module.named_modules():
        if strip_prefix and path.startswith(strip_prefix):
            path = path[len(strip_prefix):]
        mapped = (path + "." if path else "") + "__hp__"
        for pattern, repl in rules:
            mapped = re.sub(pattern, repl, mapped)
        p = mapped[: -len("__hp__")]
        if isinstance(m, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
            out[p + "d_model"] = str(m.self_attn.embed_dim)
            out[p + "nhead"] = str(m.self_attn.num_heads)
            out[p + "dim_feedforward"] = str(m.linear1.out_features)
            out[p + "norm_first"] = str(bool(m.norm_first)).lower()
            out[p + "activation"] = _activation_text(m.activation)
            out[p + "layer_norm_eps"] = float_text(m.norm1.eps)
            out[p + "bias"] = str(m.self_attn.in_proj_bias is not None).lower()
        elif isinstance(m, (nn.TransformerEncoder, nn.TransformerDecoder)):
            out[p + "num_layers"] = str(len(m.layers))
        elif isinstance(m, nn.LayerNorm):
            out[p + "normalized_shape"] = str(m.normalized_shape[-1])
            out[p + "eps"] = float_text(m.eps)
        elif isinstance(m, nn.Embedding):
            out[p + "num_embeddings"] = str(m.num_embeddings)
            out[p + "embedding_dim"] = str(m.embedding_dim)
    return out


def check_module_hparams(schema, module, rules, strip_prefix=""):
    """ExportError listing every hyperparameter the module and the schema both name but disagree on:
    weights of a 4-head module exported for an 8-head C++ model would load and answer wrongly."""
    want = schema["hparams"]
    problems = [f"hyperparameter {k}: checkpoint {v}, schema {want[k]} (the C++ model type differs from the module)"
                for k, v in module_hparams(module, rules, strip_prefix).items() if k in want and want[k] != v]
    if problems:
        raise ExportError(problems)


def load_schema(path):
    with open(path) as f:
        schema = json.load(f)
    if schema.get("format") != "statiformer-schema" or schema.get("version") != SUPPORTED_SCHEMA_VERSION:
        raise ExportError([f"{path}: not a statiformer schema of version {SUPPORTED_SCHEMA_VERSION}"])
    hparams = schema.get("hparams")
    if hparams is None:
        raise ExportError([f"{path}: no \"hparams\" (printed by an stf_schema older than the hyperparameter "
                           "check): print it again; the loader rejects files without the model's hyperparameters"])
    bad = [k for k, v in hparams.items() if not isinstance(v, str) or k in RESERVED_METADATA or '"' in k + v
           or "=" in k or "\\" in k + v]
    if bad:
        raise ExportError([f"{path}: hyperparameter {k!r}: not a plain key with a string value" for k in bad])
    return schema


# ----------------------------------------------------------------------------------------------
# Checking against the schema
# ----------------------------------------------------------------------------------------------


def stored_tensor(entry, tensor):
    """The tensor in the layout the model stores, as the schema says: the transpose iff `transposed`,
    its elements in column panels of `panel` columns when `panel` > 0 (see the schema's header
    comment). The result keeps the stored shape; its contiguous data is in stored order."""
    t = tensor.detach().to(torch.float32)
    if entry["transposed"]:
        if t.dim() != 2:
            raise ExportError([f"{entry['name']}: transposed but of rank {t.dim()}"])
        t = t.t()
    t = t.contiguous()
    if list(t.shape) != entry["stored_shape"]:
        raise ExportError([f"{entry['name']}: stored shape {list(t.shape)} differs from the schema's "
                           f"{entry['stored_shape']}"])
    if t.dim() == 2:
        t = stf_torch.panel_order(t, entry.get("panel", 0)).reshape(t.shape)
    return t


NUMBER_FORMATS = ("w8a32", "w8a8")


class Int8Format(str):
    """A --quantize number format: its text ("w8a32", "w8a8"), as every `quantize` argument here
    takes it, and `int8_attention`: whether the w8a8 layers' attention products (Q·Kᵀ, P·V) are
    int8 too (--int8-attention: LayerOptions::int8_attention, the hyperparameter `int8_attention =
    true`; kernels/QUANTIZATION.md). The stored weights are the same either way."""

    def __new__(cls, fmt, int8_attention=False):
        self = super().__new__(cls, fmt)
        self.int8_attention = bool(int8_attention)
        return self


def int8_attention(quantize):
    """Does the number format `quantize` (None, a format's text or an Int8Format) make the attention int8?"""
    return bool(getattr(quantize, "int8_attention", False))


def format_flags(quantize):
    """The command-line flags that give `quantize` (for the generated headers' first line)."""
    if not quantize:
        return ""
    calibrated = getattr(quantize, "calibrated", 0)
    return (f" --quantize {quantize}" + (" --int8-attention" if int8_attention(quantize) else "") +
            (f" --calibrate ({calibrated} inputs)" if calibrated else ""))


def format_options(quantize):
    """The stf::LayerOptions fields of `quantize` (after the others: ", .format = ...")."""
    if not quantize:
        return ""
    return f", .format = stf::NumberFormat::{quantize}" + (", .int8_attention = true" if int8_attention(quantize)
                                                          else "")


def attention_note(quantize):
    """What the attention of an int8 layer computes in, for a generated header's comment."""
    return ("the attention's Q·Kᵀ and P·V int8 too, over an int8 K/V cache" if int8_attention(quantize)
            else "the attention and the K/V cache float")


def format_hparams(prefix, quantize):
    """The layer hyperparameters of `quantize` under `prefix`, in io/hparams.hpp's order."""
    if not quantize:
        return {}
    return {prefix + "number_format": str(quantize)} | (
        {prefix + "int8_attention": "true"} if int8_attention(quantize) else {})


def schema_format(schema):
    """The schema's int8 number format ("w8a32" or "w8a8", from its `number_format` hyperparameters), or
    None for a float model. Two different formats in one model: ExportError."""
    found = {v for k, v in schema["hparams"].items() if k == "number_format" or k.endswith(".number_format")}
    if len(found) > 1:
        raise ExportError([f"the schema mixes number formats {sorted(found)}: one --quantize applies to all"])
    return found.pop() if found else None


def _scale_owner(name):
    """The weight whose scales `name` holds: x.weight_scale -> x.weight."""
    return name[:-len("_scale")] if name.endswith(".weight_scale") else None


def match(schema, mapped, allow_cast=False, allow_non_finite=False, calibration=None):
    """[(entry, stored tensor)] in schema order, or ExportError listing every problem. An I8 entry
    (an int8 model's weight, kernels/QUANTIZATION.md) gets the float weight quantized, its
    `<name>_scale` entry the scales; rounded with `calibration` (tools/calibrate.py) where given."""
    problems = []
    by_name = {}
    for name, key, tensor in mapped:
        if name in by_name:
            problems.append(f"duplicate: '{name}' from both '{by_name[name][0]}' and '{key}'")
        by_name[name] = (key, tensor)
    wanted = {e["name"] for e in schema["params"]}
    unexpected = {}  # torch key -> the names it mapped to (a packed in_proj maps to three)
    for name, (key, _) in by_name.items():
        if name not in wanted:
            unexpected.setdefault(key, []).append(name)
    for key, names in unexpected.items():
        mapped = f" (mapped to {', '.join(repr(n) for n in names)})" if names != [key] else ""
        problems.append(f"unexpected: '{key}'{mapped} is not a parameter of the schema")
    out = []
    scales = {}  # weight name -> its scales, from the quantization of an I8 entry
    for entry in schema["params"]:
        name = entry["name"]
        if entry.get("scale"):
            if name in by_name:
                problems.append(f"unexpected: '{name}': the checkpoint holds scales; export takes the float "
                                "checkpoint and quantizes it")
            out.append((entry, None))  # filled below, from its weight's quantization
            continue
        if name not in by_name:
            problems.append(f"missing: '{name}' (shape {entry['shape']}) is not in the checkpoint")
            continue
        key, tensor = by_name[name]
        src = f"'{name}'" + (f" (from '{key}')" if key != name else "")
        int8 = entry.get("dtype") == "I8"
        if entry.get("dtype") != "F32" and not (int8 and entry.get("k_quads") and entry.get("transposed")):
            problems.append(f"dtype: {src}: the schema asks for {entry.get('dtype')}; F32, and I8 for the k-quad "
                            "weights of an int8 model, are exported")
            continue
        if not tensor.is_floating_point():
            problems.append(f"dtype: {src} is {tensor.dtype}, expected a floating-point tensor")
            continue
        if tensor.dtype != torch.float32 and not allow_cast:
            problems.append(f"dtype: {src} is {tensor.dtype}, expected torch.float32 (or pass --allow-cast)")
            continue
        if list(tensor.shape) != entry["shape"]:
            problems.append(f"shape: {src} is {list(tensor.shape)}, expected {entry['shape']}")
            continue
        if int8:
            if not bool(torch.isfinite(tensor).all()):
                problems.append(f"value: {src} holds NaN or Inf: it cannot be quantized")
                continue
            q, s = calibration.quantize(tensor) if calibration else stf_torch.quantize_weight(tensor)
            t = stf_torch.quad_order(q, entry.get("panel", stf_torch.WEIGHT_PANEL)).reshape(entry["stored_shape"])
            scales[name] = s
            out.append((entry, t))
            continue
        t = stored_tensor(entry, tensor)
        if not allow_non_finite and not bool(torch.isfinite(t).all()):
            problems.append(f"value: {src} holds NaN or Inf")
            continue
        out.append((entry, t))
    for i, (entry, t) in enumerate(out):
        if t is None:
            owner = _scale_owner(entry["name"])
            i8_weights = {e["name"] for e in schema["params"] if e.get("dtype") == "I8"}
            if owner not in i8_weights:
                problems.append(f"scale: '{entry['name']}' is not the scale vector of an I8 weight of the schema")
            elif owner not in scales:
                continue  # its weight's own problem is reported
            elif list(scales[owner].shape) != entry["stored_shape"]:
                problems.append(f"scale: '{entry['name']}' has {list(scales[owner].shape)} scales, the schema "
                                f"{entry['stored_shape']}")
            else:
                out[i] = (entry, scales[owner])
    if problems:
        raise ExportError(problems)
    return out


# ----------------------------------------------------------------------------------------------
# Writers
# ----------------------------------------------------------------------------------------------


def cpp_float(x):
    """A float32 value as an exact C++ float literal ('%.9g' round-trips float32)."""
    if math.isnan(x):
        return "__builtin_nanf(\"\")"
    if math.isinf(x):
        return "__builtin_inff()" if x > 0 else "-__builtin_inff()"
    s = "%.9g" % x
    if "." not in s and "e" not in s:
        s += ".0"
    return s + "f"


def float_text(x):
    """A float32 value as the C++ schema writes a float hyperparameter (io/hparams.hpp): the shortest
    "%.*e" text that reads back as the same float32."""
    x32 = struct.unpack("<f", struct.pack("<f", x))[0]
    for p in range(1, 10):
        text = "%.*e" % (p - 1, x32)
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == x32:
            return text
    return "%.8e" % x32


_FLOAT_LITERAL = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:e[-+]?\d+)?f\b")


def emitted_difference(committed, fresh, tolerant, relative=1e-6, shared_scale=False):
    """'' when the emitted header `fresh` is `committed` byte for byte but for the float constants and
    arrays named in `tolerant` (PyTorch's outputs for the header's test input: PyTorch picks its float
    kernels per CPU, so another CPU may round their last bits differently), which may differ by at
    most `relative` of the largest |value| of their constant (shared_scale: of all of them, for
    constants derived from the others, such as a difference of two log-probabilities, whose error is
    theirs); else where and why not."""
    with open(committed) as fa, open(fresh) as fb:
        a, b = fa.read().splitlines(), fb.read().splitlines()
    if len(a) != len(b):
        return f"{len(a)} lines, the export {len(b)}"
    decl = re.compile(r"^(?:alignas\(\d+\) )?inline constexpr float (\w+)")
    blocks, name = {}, None  # constant name -> its lines' indices (committed)
    for i, x in enumerate(a):
        m = decl.match(x)
        name = m.group(1) if m else name
        if name in tolerant:
            blocks.setdefault(name, []).append(i)
        if name and (x.rstrip().endswith(";")):
            name = None
    owner = {i: n for n, idx in blocks.items() for i in idx}
    scale = {n: max((abs(float(v[:-1])) for i in idx for v in _FLOAT_LITERAL.findall(a[i])), default=0.0)
             for n, idx in blocks.items()}
    if shared_scale:
        largest = max(scale.values(), default=0.0)
        scale = {n: largest for n in scale}
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        fx, fy = _FLOAT_LITERAL.findall(x), _FLOAT_LITERAL.findall(y)
        if i not in owner or _FLOAT_LITERAL.sub("F", x) != _FLOAT_LITERAL.sub("F", y) or len(fx) != len(fy):
            return f"line {i + 1}"
        for u, v in zip(fx, fy):
            if abs(float(u[:-1]) - float(v[:-1])) > relative * scale[owner[i]]:
                return f"line {i + 1}: {owner[i]} {u}, the export {v}"
    return ""


def ident(name):
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


def header_text(tensors, namespace, note, hparams=None, per_line=8):
    out = [f"// generated by tools/export.py ({note}) — do not edit\n",
           "#pragma once\n\n#include <statiformer/tensor.hpp>\n\n",
           f"namespace {namespace} {{\n"]
    for entry, t in tensors:
        int8 = entry.get("dtype") == "I8"
        if int8:
            vals, per = [str(v) for v in t.reshape(-1).tolist()], 4 * per_line
        else:
            vals, per = [cpp_float(v) for v in t.reshape(-1).tolist()], per_line
        rows = [", ".join(vals[i:i + per]) for i in range(0, len(vals), per)]
        dims = " * ".join(str(d) for d in entry["stored_shape"])
        layout = " transposed" if entry["transposed"] else ""
        layout += " int8 in k-quads" if int8 else ""
        out.append(f"// {entry['name']}: stored{layout} {entry['stored_shape']} (PyTorch {entry['shape']})\n")
        out.append(f"alignas(64) inline constexpr {'std::int8_t' if int8 else 'float'} {ident(entry['name'])}[{dims}] "
                   "= {\n    " + ",\n    ".join(rows) + "};\n")
    out.append("inline constexpr stf::WeightEntry table[] = {\n")
    for entry, t in tensors:
        dims = " * ".join(str(d) for d in entry["stored_shape"])
        if entry.get("dtype") == "I8":
            out.append(f'    {{"{entry["name"]}", nullptr, {dims}, {ident(entry["name"])}}},\n')
        else:
            out.append(f'    {{"{entry["name"]}", {ident(entry["name"])}, {dims}}},\n')
    out.append(hparam_records(hparams or {}))  # hyperparameter records, checked by stf::bind_table
    out.append(f"}};\n}}  // namespace {namespace}\n")
    return "".join(out)


def safetensors_bytes(tensors, metadata, align=64):
    """The safetensors file: u64 header length, JSON header (space-padded so the data region starts
    at a multiple of `align`), little-endian F32 data (I8 for an int8 model's weights) in schema order
    without gaps."""
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for entry, t in tensors:
        values = t.reshape(-1).tolist()
        int8 = entry.get("dtype") == "I8"
        blob = struct.pack(f"<{len(values)}{'b' if int8 else 'f'}", *values)
        header[entry["name"]] = {"dtype": "I8" if int8 else "F32", "shape": list(t.shape),
                                 "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % align)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def check_quantize(schema, quantize):
    """--quantize must name the schema's number format (the C++ type's), and only an int8 schema takes it."""
    fmt = schema_format(schema)
    if quantize is not None and quantize not in NUMBER_FORMATS:
        raise ExportError([f"--quantize {quantize!r}: one of {', '.join(NUMBER_FORMATS)}"])
    if fmt != quantize:
        if fmt is None:
            raise ExportError([f"--quantize {quantize}: the schema's model is float32; print the schema of the int8 "
                               f"model type (LayerOptions{{.format = stf::NumberFormat::{quantize}}})"])
        raise ExportError([f"the schema's model is {fmt} (number_format): pass --quantize {fmt}" if quantize is None
                           else f"--quantize {quantize}: the schema's model is {fmt}"])


def export(checkpoint, schema_path, map_name="auto", map_file=None, header=None, namespace=None,
           safetensors=None, allow_cast=False, allow_non_finite=False, strip_prefix="", quantize=None):
    """Runs the whole export; returns the stored tensors [(schema entry, tensor)]. quantize: the int8
    number format ("w8a32", "w8a8") of an int8 schema (which it must match), else None."""
    schema = load_schema(schema_path)
    check_quantize(schema, quantize)
    module = None
    if isinstance(checkpoint, str):
        state, module = load_checkpoint(checkpoint)
    elif isinstance(checkpoint, torch.nn.Module):
        state, module = checkpoint.state_dict(), checkpoint
    else:
        state = checkpoint
    if strip_prefix:
        state = {k[len(strip_prefix):] if k.startswith(strip_prefix) else k: v for k, v in state.items()}
    rules = []
    if map_file:
        with open(map_file) as f:
            rules += [(p, r) for p, r in json.load(f)]
    rules += BUILTIN_MAPS[map_name]
    if module is not None:
        check_module_hparams(schema, module, rules, strip_prefix)
    tensors = match(schema, map_names(state, rules), allow_cast, allow_non_finite)
    model = schema.get("model", "")
    if header:
        note = f"schema '{model}', map '{map_name}'"
        with open(header, "w", newline="\n") as f:
            f.write(header_text(tensors, namespace or ident(model or "weights"), note, schema["hparams"]))
    if safetensors:
        metadata = {"format": LAYOUT_FORMAT, "layout": str(schema["version"]), "model": model} | schema["hparams"]
        with open(safetensors, "wb") as f:
            f.write(safetensors_bytes(tensors, metadata))
    return tensors


# ----------------------------------------------------------------------------------------------
# Hyperparameter records read from PyTorch modules, for the generators that write their own headers
# (tools/train_demo.py, tools/golden_to_header.py): the keys io/hparams.hpp derives for the C++ type
# the module is run as, the values read from the module. bind_table compares them with the type's.
# ----------------------------------------------------------------------------------------------


def torch_layer_hparams(layer, prefix, seq_len, mem_len=None):
    """nn.TransformerEncoderLayer / nn.TransformerDecoderLayer as EncoderLayer / DecoderLayer."""
    act = _activation_text(layer.activation)
    out = {"d_model": str(layer.self_attn.embed_dim), "nhead": str(layer.self_attn.num_heads),
           "dim_feedforward": str(layer.linear1.out_features), "norm_first": str(bool(layer.norm_first)).lower(),
           "activation": act, "layer_norm": "torch", "layer_norm_eps": float_text(layer.norm1.eps),
           "bias": str(layer.self_attn.in_proj_bias is not None).lower(), "mask_fill": "-inf",
           "seq_len": str(seq_len)}
    if mem_len is not None:
        out["mem_len"] = str(mem_len)
    return {prefix + k: v for k, v in out.items()}


def torch_norm_hparams(norm, prefix):
    return {prefix + "normalized_shape": str(norm.normalized_shape[-1]), prefix + "layer_norm": "torch",
            prefix + "eps": float_text(norm.eps)}


def torch_stack_hparams(stack, prefix, seq_len, mem_len=None):
    """nn.TransformerEncoder / nn.TransformerDecoder as EncoderStack / DecoderStack."""
    out = {prefix + "num_layers": str(len(stack.layers))}
    for i, layer in enumerate(stack.layers):
        out |= torch_layer_hparams(layer, f"{prefix}layers.{i}.", seq_len, mem_len)
    if stack.norm is not None:
        out |= torch_norm_hparams(stack.norm, prefix + "norm.")
    return out


def embedding_hparams(num_embeddings, embedding_dim, prefix):
    return {prefix + "num_embeddings": str(num_embeddings), prefix + "embedding_dim": str(embedding_dim)}


def encdec_hparams(model, src_len, tgt_len):
    """tools/stf_torch.TorchEncoderDecoder as stf::Transformer<src_len, tgt_len, ...> (the positional
    encoding's table is the C++ model's: max(src_len, tgt_len) rows)."""
    out = embedding_hparams(model.src_embed.lut.num_embeddings, model.src_embed.lut.embedding_dim, "src_embed.")
    out |= embedding_hparams(model.tgt_embed.lut.num_embeddings, model.tgt_embed.lut.embedding_dim, "tgt_embed.")
    out |= {"positional_encoding.max_len": str(max(src_len, tgt_len)),
            "positional_encoding.d_model": str(model.src_embed.lut.embedding_dim)}
    out |= torch_stack_hparams(model.encoder, "encoder.", src_len)
    out |= torch_stack_hparams(model.decoder, "decoder.", tgt_len, src_len)
    proj = model.generator.proj
    out |= {"generator.in_features": str(proj.in_features), "generator.out_features": str(proj.out_features),
            "generator.log_softmax": "true"}
    return out


def hparam_records(hparams, indent="    "):
    """The table's closing records, {"key=value", nullptr, 0} (as header_text writes them)."""
    return "".join(f'{indent}{{"{k}={v}", nullptr, 0}},\n' for k, v in hparams.items())


# ----------------------------------------------------------------------------------------------
# Reading checkpoints: torch.save files (state_dict or whole module) and PyTorch-layout .safetensors
# ----------------------------------------------------------------------------------------------

_SAFETENSORS_DTYPES = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2),
                       "F64": (torch.float64, 8)}


def _is_safetensors(path):
    """A safetensors file starts with a u64 header length followed by the JSON header's '{'."""
    with open(path, "rb") as f:
        head = f.read(9)
    if len(head) < 9 or head[8:9] != b"{":
        return False
    n = struct.unpack("<Q", head[:8])[0]
    return 2 <= n <= os.path.getsize(path) - 8


def read_safetensors(path):
    """The state_dict of a PyTorch-layout .safetensors file (PyTorch's names and shapes). One
    ExportError line for what cannot be mapped: statiformer's own files (stored layout), tensors
    of a dtype other than F32/F16/BF16/F64, a malformed header."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    try:
        header = json.loads(data[8:8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ExportError([f"{path}: a .safetensors file whose header is not JSON ({e})"]) from None
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(header, dict):
        raise ExportError([f"{path}: a .safetensors header that is not a JSON object"])
    if meta.get("format") == LAYOUT_FORMAT:
        raise ExportError([f"{path}: already in statiformer's stored layout (written by tools/export.py): load it "
                           "with stf::load_safetensors; the exporter reads PyTorch's layout"])
    state, base = {}, 8 + n
    for name, info in header.items():
        dtype = info.get("dtype") if isinstance(info, dict) else None
        if dtype not in _SAFETENSORS_DTYPES:
            raise ExportError([f"{path}: tensor '{name}' of dtype {dtype}: cannot map it to a float parameter "
                               f"(F32, F16, BF16, F64)"])
        tdtype, size = _SAFETENSORS_DTYPES[dtype]
        shape, (begin, end) = info.get("shape"), info.get("data_offsets", (None, None))
        count = math.prod(shape) if isinstance(shape, list) else -1
        if not isinstance(begin, int) or not isinstance(end, int) or end - begin != count * size \
                or base + end > len(data) or begin < 0:
            raise ExportError([f"{path}: tensor '{name}': shape {shape} and data_offsets {[begin, end]} do not "
                               f"fit the file"])
        raw = bytearray(data[base + begin:base + end])
        state[name] = torch.frombuffer(raw, dtype=tdtype).reshape(shape) if count else torch.zeros(shape,
                                                                                                   dtype=tdtype)
    return state


def load_any(path):
    """(state_dict, the module or None) from a torch.save file or a PyTorch-layout .safetensors;
    every failure one ExportError line (no traceback)."""
    if not os.path.isfile(path):
        raise ExportError([f"{path}: no such file"])
    if _is_safetensors(path):
        return read_safetensors(path), None
    try:
        obj = torch.load(path, map_location="cpu")
    except (AttributeError, ModuleNotFoundError, ImportError) as e:
        raise ExportError([f"{path}: a pickled whole module whose class cannot be imported here ({e}): save its "
                           "state_dict (torch.save(model.state_dict(), ...)) and pass --config with its "
                           "constructor arguments"]) from None
    except Exception as e:  # pickle.UnpicklingError, RuntimeError (not a zip), EOFError, ...
        raise ExportError([f"{path}: not a torch.save file nor a .safetensors file "
                           f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"]) from None
    if isinstance(obj, torch.nn.Module):
        return obj.state_dict(), obj
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise ExportError([f"{path}: neither a state_dict nor an nn.Module ({type(obj).__name__})"])
    return obj, None


# ----------------------------------------------------------------------------------------------
# The C++ model from the PyTorch module (--emit-model): hyperparameters read from the module, the
# schema derived from them (what stf_schema prints for the type), one header with the type alias,
# the weights, bind(), a stored test input with PyTorch's output and check().
# ----------------------------------------------------------------------------------------------

CONFIG_KEYS = {"module": None, "d_model": None, "nhead": None, "dim_feedforward": 2048, "num_layers": 1,
               "activation": "relu", "layer_norm_eps": 1e-5, "norm_first": False, "batch_first": False,
               "final_norm": False}
CONFIG_MODULES = ("TransformerEncoder", "TransformerEncoderLayer")
CPP_ACTIVATION = {"relu": "stf::Activation::relu", "gelu": "stf::Activation::gelu",
                  "gelu_tanh": "stf::Activation::gelu_tanh"}
TORCH_LAYER_NORM_EPS = "1e-05"  # statiformer's `torch` LayerNorm (stf::LayerNormKind::torch)
_LAYER_CHILDREN = {"self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2",
                   "activation"}  # an activation module (nn.ReLU(), nn.GELU()) is checked as the activation


def module_from_config(state, config_path):
    """The nn module the config describes, with the state_dict loaded (strictly). Config: JSON with
    "module" (TransformerEncoder or TransformerEncoderLayer), d_model, nhead, and optionally
    dim_feedforward, num_layers, activation, layer_norm_eps, norm_first, batch_first, final_norm."""
    try:
        with open(config_path) as f:
            config = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ExportError([f"{config_path}: not a readable JSON file ({e})"]) from None
    if not isinstance(config, dict):
        raise ExportError([f"{config_path}: not a JSON object"])
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise ExportError([f"{config_path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(CONFIG_KEYS)})"])
    c = {k: config.get(k, v) for k, v in CONFIG_KEYS.items()}
    if c["module"] not in CONFIG_MODULES:
        raise ExportError([f"{config_path}: \"module\" {c['module']!r}: --config describes "
                           f"{' or '.join(CONFIG_MODULES)}"])
    for k in ("d_model", "nhead", "dim_feedforward", "num_layers"):
        if not isinstance(c[k], int) or isinstance(c[k], bool) or c[k] < 1:
            raise ExportError([f"{config_path}: {k} {c[k]!r}: a positive integer is needed"])
    if c["d_model"] % c["nhead"]:
        raise ExportError([f"{config_path}: d_model {c['d_model']} is not a multiple of nhead {c['nhead']}"])
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(c["d_model"], c["nhead"], c["dim_feedforward"], 0.0, c["activation"]
                                       if c["activation"] in ("relu", "gelu") else _bad_config_activation(
                                           config_path, c["activation"]), float(c["layer_norm_eps"]),
                                       bool(c["batch_first"]), bool(c["norm_first"]))
    if c["module"] == "TransformerEncoderLayer":
        module = layer
    else:
        norm = nn.LayerNorm(c["d_model"], float(c["layer_norm_eps"])) if c["final_norm"] else None
        module = nn.TransformerEncoder(layer, c["num_layers"], norm, enable_nested_tensor=False)
    _check_shapes_fit(module, state, config_path)
    result = module.load_state_dict(state, strict=False)
    problems = [f"missing '{k}'" for k in result.missing_keys] + [f"unexpected '{k}'" for k in result.unexpected_keys]
    if problems:
        raise ExportError([f"the state_dict does not fit {config_path}'s {c['module']}: " + "; ".join(problems)])
    return module


def _bad_config_activation(config_path, activation):
    raise ExportError([f"{config_path}: activation {activation!r}: statiformer has \"relu\" and \"gelu\" (erf)"])


def _check_shapes_fit(module, state, config_path):
    own = module.state_dict()
    bad = [f"'{k}' is {list(t.shape)}, the config's module has {list(own[k].shape)}" for k, t in state.items()
           if k in own and list(t.shape) != list(own[k].shape)]
    if bad:
        raise ExportError([f"shapes do not match {config_path}: " + "; ".join(bad)])


def _layer_spec(layer, where):
    """The hyperparameters of an nn.TransformerEncoderLayer as statiformer can express them."""
    nn = torch.nn
    if type(layer) is not nn.TransformerEncoderLayer:
        raise ExportError([f"{where}: {type(layer).__name__} is not an nn.TransformerEncoderLayer (a subclass may "
                           "compute something else): not supported"])
    extra = sorted(set(dict(layer.named_children())) - _LAYER_CHILDREN)
    if extra:
        raise ExportError([f"{where}: custom sublayer(s) {', '.join(extra)}: not supported"])
    attn = layer.self_attn
    checks = [(type(attn) is nn.MultiheadAttention, "self_attn is not an nn.MultiheadAttention"),
              (getattr(attn, "_qkv_same_embed_dim", False), "self_attn has kdim/vdim other than embed_dim"),
              (attn.in_proj_bias is not None and attn.out_proj.bias is not None,
               "self_attn without biases (statiformer's layer has them)"),
              (attn.bias_k is None and attn.bias_v is None, "self_attn with add_bias_kv"),
              (not attn.add_zero_attn, "self_attn with add_zero_attn")]
    for name in ("linear1", "linear2"):
        lin = getattr(layer, name)
        checks.append((type(lin) is nn.Linear and lin.bias is not None, f"{name} is not an nn.Linear with bias"))
    for name in ("norm1", "norm2"):
        norm = getattr(layer, name)
        checks.append((type(norm) is nn.LayerNorm and norm.elementwise_affine, f"{name} is not an affine nn.LayerNorm"))
    for ok, what in checks:
        if not ok:
            raise ExportError([f"{where}: {what}: not supported"])
    act = _activation_text(layer.activation)
    if act not in CPP_ACTIVATION:
        raise ExportError([f"{where}: activation {act}: statiformer has relu, gelu (erf form) and gelu_tanh only"])
    eps1, eps2 = float_text(layer.norm1.eps), float_text(layer.norm2.eps)
    if eps1 != eps2:
        raise ExportError([f"{where}: norm1.eps {eps1} and norm2.eps {eps2} differ: statiformer's layer has one eps"])
    d = attn.embed_dim
    return {"d_model": d, "nhead": attn.num_heads, "dim_feedforward": layer.linear1.out_features,
            "norm_first": bool(layer.norm_first), "activation": act, "layer_norm_eps": eps1,
            "batch_first": bool(getattr(layer, "batch_first", False) or attn.batch_first)}


def describe_module(module):
    """{kind, layer spec, num_layers, final_norm} of a supported module, else one ExportError line."""
    nn = torch.nn
    kind = type(module).__name__
    if type(module) is nn.TransformerEncoderLayer:
        return {"kind": "layer", "layer": _layer_spec(module, "the module"), "num_layers": 1, "final_norm": False}
    if type(module) is stf_torch.TorchEncoderDecoder:
        return describe_encdec(module)
    if type(module) is stf_torch.TorchTokenClassifier:
        return describe_classifier(module)
    if type(module) is not nn.TransformerEncoder:
        hint = " (export its encoder, model.encoder, or use the schema path)" if kind == "Transformer" else ""
        raise ExportError([f"{kind}: not a module --emit-model supports{hint}: nn.TransformerEncoder "
                           "(with an optional final nn.LayerNorm), nn.TransformerEncoderLayer, the "
                           "encoder-decoder stf_torch.TorchEncoderDecoder, the per-token classifier "
                           "stf_torch.TorchTokenClassifier or the decoder-only tools/stf_torch.TorchDecoderOnly"])
    specs = [_layer_spec(layer, f"layers.{i}") for i, layer in enumerate(module.layers)]
    for i, s in enumerate(specs[1:], 1):
        for k, v in s.items():
            if v != specs[0][k]:
                raise ExportError([f"layers.{i}.{k} {v} differs from layers.0.{k} {specs[0][k]}: statiformer's stack "
                                   "repeats one layer type"])
    spec = {"kind": "stack", "layer": specs[0], "num_layers": len(specs), "final_norm": module.norm is not None}
    if module.norm is not None:
        norm = module.norm
        if type(norm) is not nn.LayerNorm or not norm.elementwise_affine or \
                list(norm.normalized_shape) != [specs[0]["d_model"]]:
            raise ExportError([f"norm: {type(norm).__name__} is not an affine nn.LayerNorm({specs[0]['d_model']})"])
        if float_text(norm.eps) != specs[0]["layer_norm_eps"]:
            raise ExportError([f"norm.eps {float_text(norm.eps)} differs from the layers' "
                               f"{specs[0]['layer_norm_eps']}: "
                               "statiformer's stack gives its final norm the layers' eps"])
    return spec


def _check_expressible(spec):
    eps = spec["layer"]["layer_norm_eps"]
    if not math.isfinite(float(eps)) or float(eps) < 0:
        raise ExportError([f"layer_norm_eps {eps}: statiformer's LayerNorm takes a finite eps >= 0"])


def derived_schema(spec, seq_len, model_name, quantize=None):
    """The schema stf_schema prints for the C++ type of `spec` (params in visit order, every Linear
    weight stored transposed in column panels, hparams as io/hparams.hpp derives them). quantize
    ("w8a32", "w8a8"): the layers' int8 number format (I8 weights in k-quads and their scales)."""
    if spec["kind"] == "encdec":
        return derived_encdec_schema(spec, seq_len, model_name, quantize)
    if spec["kind"] == "classifier":
        return derived_classifier_schema(spec, seq_len, model_name, quantize)
    lay = spec["layer"]
    d, f = lay["d_model"], lay["dim_feedforward"]
    params, hp = [], {}

    def linear(prefix, out_f, in_f):
        if quantize:
            in4 = (in_f + stf_torch.QUAD_K - 1) // stf_torch.QUAD_K * stf_torch.QUAD_K
            params.append({"name": prefix + "weight", "dtype": "I8", "shape": [out_f, in_f], "transposed": True,
                           "stored_shape": [in4, out_f], "panel": stf_torch.WEIGHT_PANEL, "k_quads": True})
            params.append({"name": prefix + "weight_scale", "dtype": "F32", "shape": [out_f], "transposed": False,
                           "stored_shape": [out_f], "panel": 0, "scale": True})
        else:
            params.append({"name": prefix + "weight", "dtype": "F32", "shape": [out_f, in_f], "transposed": True,
                           "stored_shape": [in_f, out_f], "panel": stf_torch.WEIGHT_PANEL})
        vector(prefix + "bias", out_f)

    def vector(name, n):
        params.append({"name": name, "dtype": "F32", "shape": [n], "transposed": False, "stored_shape": [n],
                       "panel": 0})

    def layer(p):
        for x in "qkvo":
            linear(f"{p}self_attn.{x}.", d, d)
        linear(f"{p}ff.linear1.", f, d)
        linear(f"{p}ff.linear2.", d, f)
        for n in ("norm1", "norm2"):
            vector(f"{p}{n}.weight", d)
            vector(f"{p}{n}.bias", d)
        hp.update({p + "d_model": str(d), p + "nhead": str(lay["nhead"]), p + "dim_feedforward": str(f),
                   p + "norm_first": str(lay["norm_first"]).lower(), p + "activation": lay["activation"],
                   p + "layer_norm": "torch", p + "layer_norm_eps": lay["layer_norm_eps"], p + "bias": "true",
                   p + "mask_fill": "-inf"})
        hp.update(format_hparams(p, quantize))
        hp[p + "seq_len"] = str(seq_len)

    if spec["kind"] == "layer":
        layer("")
    else:
        hp["num_layers"] = str(spec["num_layers"])
        for i in range(spec["num_layers"]):
            layer(f"layers.{i}.")
        if spec["final_norm"]:
            vector("norm.weight", d)
            vector("norm.bias", d)
            hp.update({"norm.normalized_shape": str(d), "norm.layer_norm": "torch", "norm.eps": lay["layer_norm_eps"]})
    return {"format": "statiformer-schema", "version": SUPPORTED_SCHEMA_VERSION, "model": model_name,
            "param_count": sum(math.prod(p["shape"]) for p in params), "hparams": hp, "params": params}


def cpp_model_type(spec, seq_len, quantize=None):
    if spec["kind"] == "encdec":
        return cpp_encdec_type(spec, seq_len, quantize)
    if spec["kind"] == "classifier":
        return cpp_classifier_type(spec, seq_len, quantize)
    lay = spec["layer"]
    eps = lay["layer_norm_eps"]
    eps_opt = "" if eps == TORCH_LAYER_NORM_EPS else f", .layer_norm_eps = {cpp_float(float(eps))}"
    fmt_opt = format_options(quantize)
    opts = (f"stf::LayerOptions{{.norm = stf::NormPlacement::{'pre' if lay['norm_first'] else 'post'}, "
            f".activation = {CPP_ACTIVATION[lay['activation']]}{eps_opt}{fmt_opt}}}")
    layer = f"stf::EncoderLayer<{seq_len}, {lay['d_model']}, {lay['nhead']}, {lay['dim_feedforward']}, {opts}>"
    if spec["kind"] == "layer":
        return layer
    return f"stf::EncoderStack<{layer}, {spec['num_layers']}, {'true' if spec['final_norm'] else 'false'}>"


def torch_description(spec):
    if spec["kind"] == "encdec":
        return encdec_description(spec)
    if spec["kind"] == "classifier":
        return classifier_description(spec)
    lay = spec["layer"]
    layer = (f"nn.TransformerEncoderLayer(d_model={lay['d_model']}, nhead={lay['nhead']}, "
             f"dim_feedforward={lay['dim_feedforward']}, activation={lay['activation']!r}, "
             f"layer_norm_eps={lay['layer_norm_eps']}, norm_first={lay['norm_first']})")
    if spec["kind"] == "layer":
        return layer
    norm = f", norm=nn.LayerNorm({lay['d_model']})" if spec["final_norm"] else ""
    return f"nn.TransformerEncoder({layer}, num_layers={spec['num_layers']}{norm})"


def reference_io(module, spec, seq_len, seed):
    """A seeded test input [seq_len, d_model] and PyTorch's output for it (eval mode, no mask)."""
    d = spec["layer"]["d_model"]
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(seq_len, d, generator=gen, dtype=torch.float32)
    module = module.eval()
    batched = x.unsqueeze(0) if spec["layer"]["batch_first"] else x.unsqueeze(1)
    with torch.no_grad():
        y = module.float()(batched)
    y = y.reshape(seq_len, d)
    if not bool(torch.isfinite(y).all()):
        raise ExportError(["PyTorch's output for the test input holds NaN or Inf: nothing to check against"])
    return x, y


def _cpp_array(name, t, per_line=8):
    vals = [cpp_float(v) for v in t.reshape(-1).tolist()]
    rows = [", ".join(vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
    return f"alignas(64) inline constexpr float {name}[{len(vals)}] = {{\n    " + ",\n    ".join(rows) + "};\n"


def _cpp_member(name):
    """A parameter's name as the member path of Params: layers.0.self_attn.q.weight -> layers[0].self_attn.q.weight."""
    return re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", name)


def compile_time_binding(tensors, schema):
    """`bound_model`: a constexpr Model whose parameter views point into the arrays above, each
    assignment checked by the compiler (the member exists, the array has the view's size), with the
    hyperparameters compared with the type's (stf::hparam_table) in a static_assert: no name lookup
    is left for run time (firmware links no binding code)."""
    int8_sizes = {entry["name"]: math.prod(entry["stored_shape"]) for entry, _ in tensors if entry.get("dtype") == "I8"}
    return (binding_text([entry["name"] for entry, _ in tensors], schema["hparams"], int8_sizes=int8_sizes) +
            "/// The model, already bound (constant: in flash on a microcontroller).\n"
            "inline constexpr Model bound_model{bound_params()};\n\n")


def binding_text(names, hparams, array_of=ident, params_type=None, int8_sizes=None):
    """The compile-time binding every generated weight header carries: detail::view (an array's size
    checked against its parameter's view), the hyperparameters as stf::hparam_table stores them and
    their comparison, and bound_params() (each parameter's view set from its array, by member path).
    params_type None: for `Model::Params`, with the static_assert; else a template over Params (the
    header does not know the model type: its includer instantiates bound_params<Model::Params>() and
    static_asserts same_hparams<Model::Params>()). array_of(name): the C++ expression of a parameter's
    float array. int8_sizes: {name: stored bytes} of the int8 weights (bound through detail::int8_view)."""
    int8_sizes = int8_sizes or {}
    pieces = "".join(f'    "{k}" "\\0" "{v}" "\\0"\n' for k, v in hparams.items())
    generic = params_type is not None
    head = "template <class Params>\n" if generic else ""
    params = "Params" if generic else "Model::Params"
    out = ["namespace detail {\n",
           "template <class View, stf::index_t N>\n",
           "constexpr View view(const float (&array)[N]) {\n",
           "  static_assert(N == View::size, \"an array's size differs from its parameter's\");\n",
           "  return View(array);\n",
           "}\n",
           *(["template <stf::index_t Size, stf::index_t N>\n",
              "constexpr const std::int8_t* int8_view(const std::int8_t (&array)[N]) {\n",
              "  static_assert(N == Size, \"an int8 array's size differs from its parameter's\");\n",
              "  return array;\n",
              "}\n"] if int8_sizes else []),
           "/// The weights' hyperparameters as stf::hparam_table stores them (\"key\\0value\\0\" pairs).\n",
           "inline constexpr char hparams_text[] =\n" + pieces + "    \"\";\n",
           head + "constexpr bool same_hparams() {\n",
           f"  constexpr auto& model = stf::hparam_table<{params}>;\n",
           "  if (static_cast<stf::index_t>(sizeof(hparams_text)) - 1 != model.bytes) return false;\n",
           "  for (stf::index_t i = 0; i < model.bytes; ++i)\n",
           "    if (model.text[i] != hparams_text[i]) return false;\n",
           "  return true;\n",
           "}\n",
           "}  // namespace detail\n"]
    if generic:
        out += ["\n/// The parameters bound at compile time, views into the arrays above (instantiate it for the\n",
                "/// model's Params; static_assert detail::same_hparams<Params>() beside it).\n"]
    else:
        out += ["static_assert(detail::same_hparams(),\n",
                "              \"the weights' hyperparameters differ from Model's (io/hparams.hpp)\");\n\n",
                "/// Model's parameters bound at compile time, views into the arrays above.\n"]
    out += [head + f"constexpr {params} bound_params() {{\n", f"  {params} p{{}};\n"]
    for name in names:
        m = _cpp_member(name)
        if name in int8_sizes:
            out.append(f"  p.{m} = detail::int8_view<{int8_sizes[name]}>({array_of(name)});\n")
        else:
            out.append(f"  p.{m} = detail::view<decltype(p.{m})>({array_of(name)});\n")
    out += ["  return p;\n", "}\n"]
    return "".join(out)


def model_header_text(name, spec, seq_len, tensors, schema, x, y, seed, source, quantize=None):
    d = spec["layer"]["d_model"]
    flag = format_flags(quantize)
    count_note = ("the int8 weights' elements, their scales and the float parameters" if quantize
                  else "PyTorch's parameter count")
    weights = header_text(tensors, name, "", schema["hparams"])
    body = weights[weights.index(f"namespace {name} {{\n") + len(f"namespace {name} {{\n"):
                   weights.rindex("}  // namespace")]
    int8_note = (f"/// Its linears{' and attention products' if int8_attention(quantize) else ''} are int8 ({quantize}, "
                 "kernels/QUANTIZATION.md): check() measures them against PyTorch's float module.\n" if quantize else "")
    out = [f"// generated by tools/export.py --emit-model {name} --seq-len {seq_len}{flag} from {source} — do not "
           "edit\n",
           f"// PyTorch: {torch_description(spec)}\n",
           "#pragma once\n\n#include <statiformer/io/bind.hpp>\n#include <statiformer/statiformer.hpp>\n\n",
           f"namespace {name} {{\n\n",
           f"/// The C++ model of the module above, over sequences of {seq_len} tokens.\n",
           int8_note,
           f"using Model = {cpp_model_type(spec, seq_len, quantize)};\n",
           f"static_assert(Model::Params::param_count == {schema['param_count']});  // {count_note}\n\n",
           body,
           "\n/// Binds the weights above to `params` by name at run time (names, sizes and hyperparameters\n",
           "/// checked; all or nothing). `bound_model` below needs no binding.\n",
           "inline stf::BindResult bind(Model::Params& params) { return stf::bind_table(params, table); }\n\n",
           compile_time_binding(tensors, schema),
           f"// A test input (torch.randn, seed {seed}) and PyTorch's output for it, all {seq_len} tokens valid.\n",
           f"inline constexpr stf::index_t test_valid_len = {seq_len};\n",
           _cpp_array("test_input", x), _cpp_array("test_output", y),
           f"inline constexpr float test_output_max_abs = {cpp_float(float(y.abs().max()))};\n\n",
           "/// Runs `model` on test_input: the largest |statiformer - PyTorch| over the output (NaN if any\n",
           "/// output is NaN), or +infinity if the forward pass refused to run.\n",
           "inline float check(const Model& model) {\n",
           f"  static stf::Tensor<{seq_len}, {d}> x, y;\n",
           "  static float scratch[Model::scratch_floats];\n",
           "  for (stf::index_t i = 0; i < x.size; ++i) x.data[i] = test_input[i];\n",
           "  if (model.forward(x, y, test_valid_len, scratch) != stf::Status::ok) return __builtin_inff();\n",
           "  float err = 0.0f;\n",
           "  for (stf::index_t i = 0; i < y.size; ++i) {\n",
           "    const float d = y.data[i] - test_output[i];\n",
           "    const float e = d < 0.0f ? -d : d;\n",
           "    if (!(e <= err)) err = e;  // a NaN sticks\n",
           "  }\n",
           "  return err;\n",
           "}\n\n",
           f"}}  // namespace {name}\n"]
    return "".join(out)


def _calibration(calibrate, module, spec, seq_len, start_token=1):
    """A calibrate.Calibration of `module` over the inputs `calibrate` (a path, or the inputs), or None."""
    if calibrate is None:
        return None
    try:
        if isinstance(calibrate, (str, os.PathLike)):
            inputs = calibrate_mod.load(calibrate, spec, seq_len)
        else:
            inputs = calibrate_mod.check(calibrate, spec, seq_len)
    except calibrate_mod.CalibrationError as e:
        raise ExportError(e.problems) from None
    return calibrate_mod.Calibration(module, spec, inputs, start_token)


def match_calibrated(schema, mapped, calibration, quantize):
    """match(), the int8 weights rounded by `calibration` where that lowers the simulated int8 model's rms
    error on the calibration inputs (calibration.chosen says which rounding was kept)."""
    tensors = match(schema, mapped, calibration=calibration)
    if calibration is not None:
        calibration.result = calibration.report(quantize)
        if calibration.result["calibrated"][1] > calibration.result["nearest"][1]:
            calibration.chosen = "nearest"
            tensors = match(schema, mapped)
        elif isinstance(quantize, Int8Format):
            quantize.calibrated = len(calibration.inputs)  # (format_flags: the header's first line)
    return tensors


def _report(calibration, quantize, report):
    if calibration is not None and report is not None:
        report.append(calibrate_mod.report_text(calibration.result, len(calibration.inputs), calibration.chosen,
                                                calibration.reached, calibration.quantized))


def emit_model(checkpoint, name, seq_len, header, config=None, seed=0, safetensors=None, tgt_len=None,
               start_token=None, prompt=None, new_tokens=None, quantize=None, int8_attention=False, tokens=None,
               calibrate=None, report=None):
    """--emit-model: the whole path. Returns (spec, schema, max |PyTorch output|), for a decoder-only
    model (spec, schema, its reference: emit_decoder_only). tgt_len, start_token (default 1): the
    encoder-decoder's; prompt, new_tokens: the decoder-only model's; tokens: the per-token classifier's
    test input (its valid tokens, at most seq_len; default: seeded random tokens, all valid).
    int8_attention: with quantize "w8a8", the layers' attention products int8 too
    (LayerOptions::int8_attention). calibrate: with quantize, a file of calibration inputs (or the
    inputs, a tensor or a list of tensors; tools/calibrate.py): the int8 weights rounded over their
    inputs' statistics; `report` (a list) receives its report line."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
        raise ExportError([f"--emit-model {name!r}: a C++ identifier is needed (the header's namespace)"])
    if not isinstance(seq_len, int) or seq_len < 1:
        raise ExportError([f"--seq-len {seq_len}: a positive number of tokens is needed"])
    if isinstance(checkpoint, torch.nn.Module):
        state, module, source = checkpoint.state_dict(), checkpoint, "a module"
    else:
        state, module = load_any(checkpoint)
        source = os.path.basename(checkpoint)
    if config is not None:
        if module is not None:
            raise ExportError([f"{checkpoint}: a whole module, which carries its own hyperparameters: drop --config"])
        module = module_from_config(state, config)
    elif module is None:
        raise ExportError([f"{checkpoint}: a state_dict (or .safetensors) without its constructor arguments: pass "
                           "--config CONFIG.json (module, d_model, nhead, dim_feedforward, num_layers, ...)"])
    if (tgt_len is not None or start_token is not None) and type(module) is not stf_torch.TorchEncoderDecoder:
        raise ExportError([f"--tgt-len/--start-token: for the encoder-decoder, not {type(module).__name__}"])
    if tokens is not None and type(module) is not stf_torch.TorchTokenClassifier:
        raise ExportError([f"tokens: the per-token classifier's test input, not {type(module).__name__}'s"])
    if quantize is not None and quantize not in NUMBER_FORMATS:
        raise ExportError([f"--quantize {quantize!r}: one of {', '.join(NUMBER_FORMATS)}"])
    if int8_attention and quantize != "w8a8":
        raise ExportError([f"--int8-attention: an option of --quantize w8a8 (int8 inputs of every product), not "
                           f"{'float32' if quantize is None else quantize}"])
    if calibrate is not None and quantize is None:
        raise ExportError(["--calibrate: an option of --quantize (it rounds the int8 weights)"])
    if quantize is not None:
        quantize = Int8Format(quantize, int8_attention)
    if is_decoder_only(module):
        calibration = _calibration(calibrate, module, describe_decoder_only(module, seq_len), seq_len)
        out = emit_decoder_only(module, state, name, seq_len, header, seed, safetensors, source, prompt, new_tokens,
                                quantize, calibration)
        _report(calibration, quantize, report)
        return out
    if prompt is not None or new_tokens is not None:
        raise ExportError([f"--prompt-tokens/--new-tokens: for a decoder-only model, not {type(module).__name__}"])
    spec = describe_module(module)
    _check_expressible(spec)
    if spec["kind"] == "encdec":
        start = 1 if start_token is None else start_token
        calibration = _calibration(calibrate, module, dict(spec, tgt_len=seq_len if tgt_len is None else tgt_len),
                                   seq_len, start)
        out = emit_encdec(module, spec, state, name, seq_len, tgt_len, start, header, seed, source, safetensors,
                          quantize, calibration)
        _report(calibration, quantize, report)
        return out
    if spec["kind"] == "classifier":
        calibration = _calibration(calibrate, module, spec, seq_len)
        out = emit_classifier(module, spec, state, name, seq_len, header, seed, source, safetensors, quantize,
                              tokens, calibration)
        _report(calibration, quantize, report)
        return out
    calibration = _calibration(calibrate, module, spec, seq_len)
    schema = derived_schema(spec, seq_len, name, quantize)
    tensors = match_calibrated(schema, map_names(state, BUILTIN_MAPS["torch"]), calibration, quantize)
    _report(calibration, quantize, report)
    x, y = reference_io(module, spec, seq_len, seed)
    text = model_header_text(name, spec, seq_len, tensors, schema, x, y, seed, source, quantize)
    with open(header, "w", newline="\n") as f:
        f.write(text)
    if safetensors:
        metadata = {"format": LAYOUT_FORMAT, "layout": str(schema["version"]), "model": name} | schema["hparams"]
        with open(safetensors, "wb") as f:
            f.write(safetensors_bytes(tensors, metadata))
    return spec, schema, float(y.abs().max())


# ----------------------------------------------------------------------------------------------
# --emit-model for the encoder-decoder: stf_torch.TorchEncoderDecoder (embeddings * sqrt(D) + the
# sinusoidal PE, nn.TransformerEncoder/Decoder with final nn.LayerNorms, a log_softmax generator) as
# stf::Transformer<SrcLen, TgtLen, ...>, --seq-len the source length, --tgt-len the target capacity.
# ----------------------------------------------------------------------------------------------

_DECODER_LAYER_CHILDREN = {"self_attn", "multihead_attn", "linear1", "dropout", "linear2", "norm1", "norm2",
                           "norm3", "dropout1", "dropout2", "dropout3", "activation"}
_ENCDEC_CHILDREN = {"src_embed", "tgt_embed", "pos", "encoder", "decoder", "generator"}


def _attention_checks(attn, what):
    nn = torch.nn
    return [(type(attn) is nn.MultiheadAttention, f"{what} is not an nn.MultiheadAttention"),
            (getattr(attn, "_qkv_same_embed_dim", False), f"{what} has kdim/vdim other than embed_dim"),
            (attn.in_proj_bias is not None and attn.out_proj.bias is not None,
             f"{what} without biases (statiformer's layer has them)"),
            (attn.bias_k is None and attn.bias_v is None, f"{what} with add_bias_kv"),
            (not attn.add_zero_attn, f"{what} with add_zero_attn")]


def _decoder_layer_spec(layer, where):
    """The hyperparameters of an nn.TransformerDecoderLayer as statiformer can express them."""
    nn = torch.nn
    if type(layer) is not nn.TransformerDecoderLayer:
        raise ExportError([f"{where}: {type(layer).__name__} is not an nn.TransformerDecoderLayer (a subclass may "
                           "compute something else): not supported"])
    extra = sorted(set(dict(layer.named_children())) - _DECODER_LAYER_CHILDREN)
    if extra:
        raise ExportError([f"{where}: custom sublayer(s) {', '.join(extra)}: not supported"])
    checks = _attention_checks(layer.self_attn, "self_attn") + _attention_checks(layer.multihead_attn,
                                                                                 "multihead_attn")
    checks.append((layer.multihead_attn.num_heads == layer.self_attn.num_heads,
                   "multihead_attn and self_attn have different head counts"))
    for n in ("linear1", "linear2"):
        lin = getattr(layer, n)
        checks.append((type(lin) is nn.Linear and lin.bias is not None, f"{n} is not an nn.Linear with bias"))
    for n in ("norm1", "norm2", "norm3"):
        norm = getattr(layer, n)
        checks.append((type(norm) is nn.LayerNorm and norm.elementwise_affine, f"{n} is not an affine nn.LayerNorm"))
    for ok, what in checks:
        if not ok:
            raise ExportError([f"{where}: {what}: not supported"])
    act = _activation_text(layer.activation)
    if act not in CPP_ACTIVATION:
        raise ExportError([f"{where}: activation {act}: statiformer has relu, gelu (erf form) and gelu_tanh only"])
    eps = [float_text(getattr(layer, n).eps) for n in ("norm1", "norm2", "norm3")]
    if len(set(eps)) != 1:
        raise ExportError([f"{where}: norm1/2/3.eps {', '.join(eps)} differ: statiformer's layer has one eps"])
    attn = layer.self_attn
    return {"d_model": attn.embed_dim, "nhead": attn.num_heads, "dim_feedforward": layer.linear1.out_features,
            "norm_first": bool(layer.norm_first), "activation": act, "layer_norm_eps": eps[0],
            "batch_first": bool(getattr(layer, "batch_first", False) or attn.batch_first)}


def _stack_specs(stack, prefix, layer_spec):
    specs = [layer_spec(layer, f"{prefix}.layers.{i}") for i, layer in enumerate(stack.layers)]
    nn = torch.nn
    norm = stack.norm
    if norm is None or type(norm) is not nn.LayerNorm or not norm.elementwise_affine:
        raise ExportError([f"{prefix}.norm: stf::Transformer has a final affine nn.LayerNorm on each stack"])
    if float_text(norm.eps) != specs[0]["layer_norm_eps"]:
        raise ExportError([f"{prefix}.norm.eps {float_text(norm.eps)} differs from the layers' "
                           f"{specs[0]['layer_norm_eps']}: statiformer's stack gives its final norm the layers' eps"])
    return specs


def describe_encdec(module):
    """The spec of a stf_torch.TorchEncoderDecoder as stf::Transformer expresses it (one layer type in
    both stacks, as many encoder as decoder layers, final norms), else one ExportError line."""
    extra = sorted(set(dict(module.named_children())) - _ENCDEC_CHILDREN)
    if extra:
        raise ExportError([f"TorchEncoderDecoder: custom sublayer(s) {', '.join(extra)}: not supported"])
    enc = _stack_specs(module.encoder, "encoder", _layer_spec)
    dec = _stack_specs(module.decoder, "decoder", _decoder_layer_spec)
    first = enc[0]
    for where, s in [(f"encoder.layers.{i}", x) for i, x in enumerate(enc)] + \
                    [(f"decoder.layers.{i}", x) for i, x in enumerate(dec)]:
        for k, v in s.items():
            if v != first[k]:
                raise ExportError([f"{where}.{k} {v} differs from encoder.layers.0.{k} {first[k]}: "
                                   "stf::Transformer repeats one layer type in both stacks"])
    if len(enc) != len(dec):
        raise ExportError([f"{len(enc)} encoder and {len(dec)} decoder layers: stf::Transformer has as many of each"])
    d = first["d_model"]
    src, tgt, proj = module.src_embed.lut, module.tgt_embed.lut, module.generator.proj
    for what, dim in (("src_embed", src.embedding_dim), ("tgt_embed", tgt.embedding_dim),
                      ("generator.proj.in_features", proj.in_features)):
        if dim != d:
            raise ExportError([f"{what} {dim} differs from d_model {d}"])
    if proj.out_features != tgt.num_embeddings or proj.bias is None:
        raise ExportError([f"generator.proj: {proj.out_features} outputs (bias: {proj.bias is not None}) for a "
                           f"target vocabulary of {tgt.num_embeddings}: an nn.Linear with bias onto the vocabulary "
                           "is needed"])
    return {"kind": "encdec", "layer": first, "num_layers": len(enc), "final_norm": True,
            "src_vocab": src.num_embeddings, "tgt_vocab": tgt.num_embeddings, "tgt_len": None}


def derived_encdec_schema(spec, src_len, model_name, quantize=None):
    """What stf_schema prints for cpp_encdec_type(spec, src_len, quantize) (the order of EncoderDecoder::
    Params::visit, the keys of io/hparams.hpp). quantize: the encoder's and decoder's layers' int8 number
    format (the embeddings and the generator stay float)."""
    lay, n, tgt_len = spec["layer"], spec["num_layers"], spec["tgt_len"]
    d, f = lay["d_model"], lay["dim_feedforward"]
    params, hp = [], {}

    def vector(name, size):
        params.append({"name": name, "dtype": "F32", "shape": [size], "transposed": False, "stored_shape": [size],
                       "panel": 0})

    def linear(prefix, out_f, in_f, int8=False):
        if int8:
            in4 = (in_f + stf_torch.QUAD_K - 1) // stf_torch.QUAD_K * stf_torch.QUAD_K
            params.append({"name": prefix + "weight", "dtype": "I8", "shape": [out_f, in_f], "transposed": True,
                           "stored_shape": [in4, out_f], "panel": stf_torch.WEIGHT_PANEL, "k_quads": True})
            params.append({"name": prefix + "weight_scale", "dtype": "F32", "shape": [out_f], "transposed": False,
                           "stored_shape": [out_f], "panel": 0, "scale": True})
        else:
            params.append({"name": prefix + "weight", "dtype": "F32", "shape": [out_f, in_f], "transposed": True,
                           "stored_shape": [in_f, out_f], "panel": stf_torch.WEIGHT_PANEL})
        vector(prefix + "bias", out_f)

    def norm(prefix):
        vector(prefix + "weight", d)
        vector(prefix + "bias", d)

    def stack(prefix, attentions, norms, seq_len, mem_len=None):
        hp[prefix + "num_layers"] = str(n)
        for i in range(n):
            p = f"{prefix}layers.{i}."
            for a in attentions:
                for x in "qkvo":
                    linear(f"{p}{a}.{x}.", d, d, bool(quantize))
            linear(f"{p}ff.linear1.", f, d, bool(quantize))
            linear(f"{p}ff.linear2.", d, f, bool(quantize))
            for k in range(1, norms + 1):
                norm(f"{p}norm{k}.")
            hp.update({p + "d_model": str(d), p + "nhead": str(lay["nhead"]), p + "dim_feedforward": str(f),
                       p + "norm_first": str(lay["norm_first"]).lower(), p + "activation": lay["activation"],
                       p + "layer_norm": "torch", p + "layer_norm_eps": lay["layer_norm_eps"], p + "bias": "true",
                       p + "mask_fill": "-inf"})
            hp.update(format_hparams(p, quantize))
            hp[p + "seq_len"] = str(seq_len)
            if mem_len is not None:
                hp[p + "mem_len"] = str(mem_len)
        norm(prefix + "norm.")
        hp.update({prefix + "norm.normalized_shape": str(d), prefix + "norm.layer_norm": "torch",
                   prefix + "norm.eps": lay["layer_norm_eps"]})

    for which, vocab in (("src_embed", spec["src_vocab"]), ("tgt_embed", spec["tgt_vocab"])):
        params.append({"name": which + ".weight", "dtype": "F32", "shape": [vocab, d], "transposed": False,
                       "stored_shape": [vocab, d], "panel": 0})
        hp.update({which + ".num_embeddings": str(vocab), which + ".embedding_dim": str(d)})
    hp.update({"positional_encoding.max_len": str(max(src_len, tgt_len)), "positional_encoding.d_model": str(d)})
    stack("encoder.", ["self_attn"], 2, src_len)
    stack("decoder.", ["self_attn", "cross_attn"], 3, tgt_len, src_len)
    linear("generator.proj.", spec["tgt_vocab"], d)
    hp.update({"generator.in_features": str(d), "generator.out_features": str(spec["tgt_vocab"]),
               "generator.log_softmax": "true"})
    return {"format": "statiformer-schema", "version": SUPPORTED_SCHEMA_VERSION, "model": model_name,
            "param_count": sum(math.prod(p["shape"]) for p in params), "hparams": hp, "params": params}


def cpp_encdec_type(spec, src_len, quantize=None):
    lay = spec["layer"]
    eps = lay["layer_norm_eps"]
    eps_opt = "" if eps == TORCH_LAYER_NORM_EPS else f", .layer_norm_eps = {cpp_float(float(eps))}"
    fmt_opt = format_options(quantize)
    opts = (f"stf::LayerOptions{{.norm = stf::NormPlacement::{'pre' if lay['norm_first'] else 'post'}, "
            f".activation = {CPP_ACTIVATION[lay['activation']]}{eps_opt}{fmt_opt}}}")
    return (f"stf::Transformer<{src_len}, {spec['tgt_len']}, {spec['src_vocab']}, {spec['tgt_vocab']}, "
            f"{lay['d_model']}, {lay['nhead']}, {lay['dim_feedforward']}, {spec['num_layers']}, {opts}>")


def encdec_description(spec):
    lay = spec["layer"]
    return (f"stf_torch.TorchEncoderDecoder(src_vocab={spec['src_vocab']}, tgt_vocab={spec['tgt_vocab']}, "
            f"n={spec['num_layers']}, d_model={lay['d_model']}, d_ff={lay['dim_feedforward']}, h={lay['nhead']}, "
            f"norm_first={lay['norm_first']}, activation={lay['activation']!r}, "
            f"layer_norm_eps={lay['layer_norm_eps']})")


def encdec_reference_io(module, spec, src_len, start_token, seed):
    """A seeded source of src_len tokens (all valid) and PyTorch's greedy decoding of it from
    start_token to the target capacity: the tokens [tgt_len] and each step's log-probs [tgt_len-1, V]."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, spec["src_vocab"], (src_len,), generator=gen)
    module = module.float().eval()
    with torch.no_grad():
        _, ys, logprobs, _ = stf_torch.greedy_decode(module, src[None], stf_torch.padding_mask([src_len], src_len),
                                                     spec["tgt_len"], start_token)
    if not bool(torch.isfinite(logprobs).all()):
        raise ExportError(["PyTorch's log-probabilities for the test source hold NaN or Inf: nothing to check against"])
    return src, ys[0], logprobs


def encdec_header_text(name, spec, src_len, tensors, schema, src, tokens, logprobs, seed, source, quantize=None):
    flag = format_flags(quantize)
    count_note = ("the int8 weights' elements, their scales and the float parameters" if quantize
                  else "PyTorch's parameter count")
    int8_note = (f"/// Its layers' linears are int8 ({quantize}, kernels/QUANTIZATION.md; {attention_note(quantize)}):\n"
                 "/// check() measures them against PyTorch's float module.\n" if quantize else "")
    weights = header_text(tensors, name, "", schema["hparams"])
    body = weights[weights.index(f"namespace {name} {{\n") + len(f"namespace {name} {{\n"):
                   weights.rindex("}  // namespace")]
    # the model holds its decoding state (arena, K/V caches), so it cannot be a constant: the
    # parameters are, and a static model takes them by assignment (no name lookup)
    int8_sizes = {entry["name"]: math.prod(entry["stored_shape"]) for entry, _ in tensors if entry.get("dtype") == "I8"}
    binding = binding_text([entry["name"] for entry, _ in tensors], schema["hparams"], int8_sizes=int8_sizes) + "\n"
    t, v = spec["tgt_len"], spec["tgt_vocab"]
    out = [f"// generated by tools/export.py --emit-model {name} --seq-len {src_len} --tgt-len {t}{flag} from {source} "
           "— do not edit\n",
           f"// PyTorch: {encdec_description(spec)}\n",
           "#pragma once\n\n#include <statiformer/io/bind.hpp>\n#include <statiformer/statiformer.hpp>\n\n",
           f"namespace {name} {{\n\n",
           f"/// The C++ model of the module above: sources of {src_len} tokens, up to {t} target tokens.\n",
           int8_note,
           f"using Model = {cpp_encdec_type(spec, src_len, quantize)};\n",
           f"static_assert(Model::Params::param_count == {schema['param_count']});  // {count_note}\n\n",
           body,
           "\n/// Binds the weights above to `params` by name at run time (names, sizes and hyperparameters\n",
           "/// checked; all or nothing). `bound_model_params` below needs no binding.\n",
           "inline stf::BindResult bind(Model::Params& params) { return stf::bind_table(params, table); }\n\n",
           binding,
           "/// The parameters bound at compile time (constant: in flash on a microcontroller). The model\n",
           "/// object holds its decoding state (arena, K/V caches) and so is not constant: declare it static\n",
           "/// and assign `model.params = bound_model_params;` (a copy of the views, no name lookup).\n",
           "inline constexpr Model::Params bound_model_params = bound_params();\n\n",
           f"// A test source (torch.randint, seed {seed}; all {src_len} tokens valid) and PyTorch's greedy\n",
           f"// decoding of it from token {int(tokens[0])} to the capacity: its tokens and each step's log-probs.\n",
           f"inline constexpr stf::index_t test_src_valid_len = {src_len};\n",
           f"inline constexpr int test_start_token = {int(tokens[0])};\n",
           _cpp_ints("test_src", src.tolist()), _cpp_ints("test_tokens", tokens.tolist()),
           _cpp_array("test_logprobs", logprobs),
           f"inline constexpr float test_logprobs_max_abs = {cpp_float(float(logprobs.abs().max()))};\n\n",
           "struct CheckResult {\n",
           "  float max_abs_error;  ///< largest |statiformer - PyTorch| over the steps' log-probs (NaN sticks)\n",
           "  bool tokens_equal;    ///< greedy decoding gave PyTorch's tokens\n",
           "};\n\n",
           "/// Runs `model` on test_src: every step's log-probabilities teacher-forced with PyTorch's tokens,\n",
           "/// then greedy decoding (tokens compared). max_abs_error is +infinity if a call refused to run.\n",
           "inline CheckResult check(Model& model) {\n",
           "  CheckResult r{0.0f, false};\n",
           "  if (model.encode(test_src, test_src_valid_len) != stf::Status::ok) return {__builtin_inff(), false};\n",
           "  float logprobs[Model::tgt_vocab];\n",
           "  for (stf::index_t s = 0; s + 1 < Model::tgt_len; ++s) {\n",
           "    if (model.step(test_tokens[s], logprobs) != stf::Status::ok) return {__builtin_inff(), false};\n",
           "    for (stf::index_t i = 0; i < Model::tgt_vocab; ++i) {\n",
           "      const float d = logprobs[i] - test_logprobs[s * Model::tgt_vocab + i];\n",
           "      const float e = d < 0.0f ? -d : d;\n",
           "      if (!(e <= r.max_abs_error)) r.max_abs_error = e;  // a NaN sticks\n",
           "    }\n",
           "  }\n",
           "  int out[Model::tgt_len];\n",
           "  stf::index_t n = 0;\n",
           "  const stf::Status st =\n",
           "      model.greedy_decode(test_src, test_src_valid_len, test_start_token, -1, out, n);\n",
           "  if (st != stf::Status::ok)\n",
           "    return {__builtin_inff(), false};\n",
           "  r.tokens_equal = n == Model::tgt_len;\n",
           "  for (stf::index_t i = 0; r.tokens_equal && i < n; ++i) r.tokens_equal = out[i] == test_tokens[i];\n",
           "  return r;\n",
           "}\n\n",
           f"}}  // namespace {name}\n"]
    assert len(tokens) == t and logprobs.shape == (t - 1, v)
    return "".join(out)


def emit_encdec(module, spec, state, name, src_len, tgt_len, start_token, header, seed, source, safetensors,
                quantize=None, calibration=None):
    """--emit-model for a TorchEncoderDecoder. Returns (spec, schema, max |PyTorch log-prob|). quantize: the
    layers' int8 number format (the reference stays PyTorch's float model)."""
    tgt_len = src_len if tgt_len is None else tgt_len
    if not isinstance(tgt_len, int) or tgt_len < 2:
        raise ExportError([f"--tgt-len {tgt_len}: at least 2 target tokens are needed (the start and one decoded)"])
    if not isinstance(start_token, int) or not 0 <= start_token < spec["tgt_vocab"]:
        raise ExportError([f"--start-token {start_token}: not in the target vocabulary [0, {spec['tgt_vocab']})"])
    spec = dict(spec, tgt_len=tgt_len)
    schema = derived_encdec_schema(spec, src_len, name, quantize)
    tensors = match_calibrated(schema, map_names(state, BUILTIN_MAPS["torch"]), calibration, quantize)
    src, tokens, logprobs = encdec_reference_io(module, spec, src_len, start_token, seed)
    text = encdec_header_text(name, spec, src_len, tensors, schema, src, tokens, logprobs, seed, source, quantize)
    with open(header, "w", newline="\n") as f:
        f.write(text)
    if safetensors:
        metadata = {"format": LAYOUT_FORMAT, "layout": str(schema["version"]), "model": name} | schema["hparams"]
        with open(safetensors, "wb") as f:
            f.write(safetensors_bytes(tensors, metadata))
    return spec, schema, float(logprobs.abs().max())


# ----------------------------------------------------------------------------------------------
# --emit-model for the per-token classifier: stf_torch.TorchTokenClassifier (embedding·√D + the
# sinusoidal PE, nn.TransformerEncoder without a final norm, an nn.Linear onto the classes) as
# examples/classifier's stf::Sequential<S, Named<"src_embed", Embedding>, PositionalEncoding,
# Named<"encoder", EncoderStack>, Named<"", Classifier>>. quantize: the encoder layers' linears int8
# (the embedding and the classifier stay float, as the generator does).
# ----------------------------------------------------------------------------------------------

_CLASSIFIER_CHILDREN = {"src_embed", "pos", "encoder", "proj"}


def describe_classifier(module):
    """The spec of a stf_torch.TorchTokenClassifier, else one ExportError line."""
    extra = sorted(set(dict(module.named_children())) - _CLASSIFIER_CHILDREN)
    if extra:
        raise ExportError([f"TorchTokenClassifier: custom sublayer(s) {', '.join(extra)}: not supported"])
    if module.encoder.norm is not None:
        raise ExportError(["TorchTokenClassifier: an encoder with a final norm: examples/classifier's stack has none"])
    enc = describe_module(module.encoder)
    d, emb, proj = enc["layer"]["d_model"], module.src_embed.lut, module.proj
    if emb.embedding_dim != d or proj.in_features != d:
        raise ExportError([f"src_embed {emb.embedding_dim} / proj.in_features {proj.in_features} differ from d_model {d}"])
    if type(proj) is not torch.nn.Linear or proj.bias is None:
        raise ExportError(["proj: an nn.Linear with bias is needed (stf::Classifier)"])
    return dict(enc, kind="classifier", vocab=emb.num_embeddings, classes=proj.out_features)


def derived_classifier_schema(spec, seq_len, model_name, quantize=None):
    """What stf_schema prints for cpp_classifier_type(spec, seq_len, quantize): the Sequential's nodes in
    order, each prefixed by its Named prefix (or its index: the positional encoding is node 1)."""
    d, v, c = spec["layer"]["d_model"], spec["vocab"], spec["classes"]
    stack = derived_schema(dict(spec, kind="stack"), seq_len, model_name, quantize)
    params = [{"name": "src_embed.weight", "dtype": "F32", "shape": [v, d], "transposed": False,
               "stored_shape": [v, d], "panel": 0}]
    params += [dict(p, name="encoder." + p["name"]) for p in stack["params"]]
    params += [{"name": "proj.weight", "dtype": "F32", "shape": [c, d], "transposed": True, "stored_shape": [d, c],
                "panel": stf_torch.WEIGHT_PANEL},
               {"name": "proj.bias", "dtype": "F32", "shape": [c], "transposed": False, "stored_shape": [c],
                "panel": 0}]
    hp = embedding_hparams(v, d, "src_embed.") | {"1.max_len": str(seq_len), "1.d_model": str(d)}
    hp |= {"encoder." + k: val for k, val in stack["hparams"].items()}
    hp |= {"in_features": str(d), "out_features": str(c), "log_softmax": "false"}
    return {"format": "statiformer-schema", "version": SUPPORTED_SCHEMA_VERSION, "model": model_name,
            "param_count": sum(math.prod(p["shape"]) for p in params), "hparams": hp, "params": params}


def cpp_classifier_type(spec, seq_len, quantize=None):
    d = spec["layer"]["d_model"]
    stack = cpp_model_type(dict(spec, kind="stack"), seq_len, quantize)
    return (f"stf::Sequential<{seq_len}, stf::Named<\"src_embed\", stf::Embedding<{spec['vocab']}, {d}>>, "
            f"stf::PositionalEncoding<{seq_len}, {d}>, stf::Named<\"encoder\", {stack}>, "
            f"stf::Named<\"\", stf::Classifier<{d}, {spec['classes']}>>>")


def classifier_description(spec):
    return (f"stf_torch.TorchTokenClassifier(vocab={spec['vocab']}, classes={spec['classes']}, "
            f"encoder={torch_description(dict(spec, kind='stack'))})")


def classifier_reference_io(module, spec, seq_len, seed, tokens=None):
    """The test input (tokens [seq_len], PAD 0 after the valid ones) and PyTorch's logits [seq_len, C]."""
    if tokens is None:
        gen = torch.Generator().manual_seed(seed)
        tokens = torch.randint(0, spec["vocab"], (seq_len,), generator=gen).tolist()
    tokens = [int(t) for t in tokens]
    if not 1 <= len(tokens) <= seq_len or not all(0 <= t < spec["vocab"] for t in tokens):
        raise ExportError([f"tokens {tokens}: 1 to {seq_len} tokens in [0, {spec['vocab']}) are needed"])
    valid = len(tokens)
    src = torch.tensor(tokens + [0] * (seq_len - valid))
    module = module.float().eval()
    with torch.no_grad():
        y = module(src[None], torch.tensor([valid]))[0]
    if not bool(torch.isfinite(y[:valid]).all()):
        raise ExportError(["PyTorch's logits for the test input hold NaN or Inf: nothing to check against"])
    return src, valid, y


def classifier_header_text(name, spec, seq_len, tensors, schema, src, valid, y, seed, source, quantize=None,
                           seeded=True):
    flag = format_flags(quantize)
    count_note = ("the int8 weights' elements, their scales and the float parameters" if quantize
                  else "PyTorch's parameter count")
    floats = "the embedding and the\n/// classifier float, the attention int8 too" if int8_attention(quantize) else \
        "the embedding, the\n/// attention and the classifier float"
    int8_note = (f"/// Its encoder layers' linears are int8 ({quantize}, kernels/QUANTIZATION.md; {floats}): check() measures "
                 "them against PyTorch's float module.\n" if quantize else "")
    weights = header_text(tensors, name, "", schema["hparams"])
    body = weights[weights.index(f"namespace {name} {{\n") + len(f"namespace {name} {{\n"):
                   weights.rindex("}  // namespace")]
    c = spec["classes"]
    how = f"torch.randint, seed {seed}" if seeded else "given"
    out = [f"// generated by tools/export.py --emit-model {name} --seq-len {seq_len}{flag} from {source} — do not "
           "edit\n",
           f"// PyTorch: {classifier_description(spec)}\n",
           "#pragma once\n\n#include <statiformer/io/bind.hpp>\n#include <statiformer/statiformer.hpp>\n\n",
           f"namespace {name} {{\n\n",
           f"/// The C++ model of the module above, over sequences of {seq_len} tokens.\n",
           int8_note,
           f"using Model = {cpp_classifier_type(spec, seq_len, quantize)};\n",
           f"static_assert(Model::param_count == {schema['param_count']});  // {count_note}\n\n",
           body,
           "\n/// Binds the weights above to `model` by name (names, sizes and hyperparameters checked; all or\n",
           "/// nothing).\n",
           "inline stf::BindResult bind(Model& model) { return stf::bind_table(model, table); }\n\n",
           f"// A test input ({how}; its first {valid} tokens valid, PAD 0 after them) and PyTorch's\n",
           "// logits for it (every position's; the padded ones are not checked).\n",
           f"inline constexpr stf::index_t test_valid_len = {valid};\n",
           _cpp_ints("test_tokens", src.tolist()),
           _cpp_array("test_logits", y),
           f"inline constexpr float test_logits_max_abs = {cpp_float(float(y[:valid].abs().max()))};\n\n",
           "/// Runs `model` on test_tokens: the largest |statiformer - PyTorch| over the valid tokens' logits\n",
           "/// (NaN if any is NaN), or +infinity if the forward pass refused to run.\n",
           "inline float check(Model& model) {\n",
           "  if (model.forward(nullptr, stf::RunContext{test_tokens, test_valid_len}) != stf::Status::ok)\n",
           "    return __builtin_inff();\n",
           f"  const stf::CMat<{seq_len}, {c}> logits = model.output();\n",
           "  float err = 0.0f;\n",
           "  for (stf::index_t s = 0; s < test_valid_len; ++s)\n",
           f"    for (stf::index_t k = 0; k < {c}; ++k) {{\n",
           f"      const float d = logits(s, k) - test_logits[s * {c} + k];\n",
           "      const float e = d < 0.0f ? -d : d;\n",
           "      if (!(e <= err)) err = e;  // a NaN sticks\n",
           "    }\n",
           "  return err;\n",
           "}\n\n",
           f"}}  // namespace {name}\n"]
    return "".join(out)


def emit_classifier(module, spec, state, name, seq_len, header, seed, source, safetensors, quantize=None,
                    tokens=None, calibration=None):
    """--emit-model for a TorchTokenClassifier. Returns (spec, schema, max |PyTorch logit|). quantize: the
    encoder layers' int8 number format (the reference stays PyTorch's float model)."""
    schema = derived_classifier_schema(spec, seq_len, name, quantize)
    tensors = match_calibrated(schema, map_names(state, BUILTIN_MAPS["torch"]), calibration, quantize)
    src, valid, y = classifier_reference_io(module, spec, seq_len, seed, tokens)
    text = classifier_header_text(name, spec, seq_len, tensors, schema, src, valid, y, seed, source, quantize,
                                  seeded=tokens is None)
    with open(header, "w", newline="\n") as f:
        f.write(text)
    if safetensors:
        metadata = {"format": LAYOUT_FORMAT, "layout": str(schema["version"]), "model": name} | schema["hparams"]
        with open(safetensors, "wb") as f:
            f.write(safetensors_bytes(tensors, metadata))
    return spec, schema, float(y[:valid].abs().max())


# ----------------------------------------------------------------------------------------------
# The decoder-only model (--emit-model of tools/stf_torch.TorchDecoderOnly): embedding·√D +
# positional encoding, N causal layers (nn.TransformerEncoder run with a causal mask, or GptBlock
# layers), an optional final norm, the generator; as stf::Gpt<capacity, vocab, ...>. The stored test
# is a prompt with PyTorch's log-probabilities at every prompt position, its greedy continuation and
# each step's log-probabilities; check() runs prefill, generate and the steps.
# ----------------------------------------------------------------------------------------------


def is_decoder_only(module):
    return type(module) is stf_torch.TorchDecoderOnly


def _gpt_block_spec(block, where):
    """A GptBlock (pre-norm, erf GELU, biases) as statiformer's causal layer expresses it."""
    nn = torch.nn
    if type(block) is not stf_torch.GptBlock:
        raise ExportError([f"{where}: {type(block).__name__} is not a tools/stf_torch.GptBlock: not supported"])
    lin = [block.self_attn[x] for x in "qkvo"] + [block.ff["linear1"], block.ff["linear2"]]
    if any(type(m) is not nn.Linear or m.bias is None for m in lin):
        raise ExportError([f"{where}: a projection is not an nn.Linear with bias: not supported"])
    for n in ("norm1", "norm2"):
        norm = getattr(block, n)
        if type(norm) is not nn.LayerNorm or not norm.elementwise_affine:
            raise ExportError([f"{where}: {n} is not an affine nn.LayerNorm: not supported"])
    eps1, eps2 = float_text(block.norm1.eps), float_text(block.norm2.eps)
    if eps1 != eps2:
        raise ExportError([f"{where}: norm1.eps {eps1} and norm2.eps {eps2} differ: statiformer's layer has one eps"])
    d = block.self_attn["q"].in_features
    return {"d_model": d, "nhead": block.h, "dim_feedforward": block.ff["linear1"].out_features, "norm_first": True,
            "activation": "gelu", "layer_norm_eps": eps1, "batch_first": True}


def describe_decoder_only(module, capacity):
    """{kind "decoder_only", block, layer spec, num_layers, final_norm, vocab} of a TorchDecoderOnly
    whose parts statiformer's Gpt computes, else one ExportError line."""
    nn = torch.nn
    embed, pos, gen = module.embed, module.pos, module.generator
    lut = getattr(embed, "lut", None)
    if type(embed) is not stf_torch.Embeddings or type(lut) is not nn.Embedding or lut.padding_idx is not None \
            or lut.max_norm is not None or embed.d_model != lut.embedding_dim:
        raise ExportError(["embed: not tools/stf_torch.Embeddings over a plain nn.Embedding: not supported"])
    vocab, d = lut.num_embeddings, lut.embedding_dim
    if type(pos) is not stf_torch.PositionalEncoding or list(pos.pe.shape[-1:]) != [d]:
        raise ExportError(["pos: not tools/stf_torch.PositionalEncoding of d_model: not supported"])
    if pos.pe.shape[-2] < capacity:
        raise ExportError([f"--seq-len {capacity}: over the positional encoding's {pos.pe.shape[-2]} positions"])
    proj = getattr(gen, "proj", None)
    if type(gen) is not stf_torch.Generator or type(proj) is not nn.Linear or proj.bias is None \
            or proj.in_features != d or proj.out_features != vocab:
        raise ExportError([f"generator: not tools/stf_torch.Generator, an nn.Linear({d}, {vocab}) with bias"])
    if module.block == "torch":
        inner = describe_module(module.stack)  # nn.TransformerEncoder's rules, run with a causal mask
        layer, n, final = inner["layer"], inner["num_layers"], inner["final_norm"]
    else:
        specs = [_gpt_block_spec(b, f"layers.{i}") for i, b in enumerate(module.layers)]
        for i, s in enumerate(specs[1:], 1):
            for k, v in s.items():
                if v != specs[0][k]:
                    raise ExportError([f"layers.{i}.{k} {v} differs from layers.0.{k} {specs[0][k]}: statiformer's "
                                       "stack repeats one layer type"])
        layer, n, final = specs[0], len(specs), module.norm is not None
        if final:
            norm = module.norm
            if type(norm) is not nn.LayerNorm or not norm.elementwise_affine or list(norm.normalized_shape) != [d]:
                raise ExportError([f"norm: {type(norm).__name__} is not an affine nn.LayerNorm({d})"])
            if float_text(norm.eps) != layer["layer_norm_eps"]:
                raise ExportError([f"norm.eps {float_text(norm.eps)} differs from the layers' "
                                   f"{layer['layer_norm_eps']}: statiformer's stack gives its final norm the "
                                   "layers' eps"])
    if layer["d_model"] != d:
        raise ExportError([f"the layers' d_model {layer['d_model']} differs from the embedding's {d}"])
    return {"kind": "decoder_only", "block": module.block, "layer": layer, "num_layers": n, "final_norm": final,
            "vocab": vocab}


def decoder_only_schema(spec, capacity, model_name, quantize=None):
    """The schema stf_schema prints for stf::Gpt of `spec` (io/hparams.hpp's keys: embed,
    positional_encoding, the stack's at the root with layers.<i>.causal, generator). quantize
    ("w8a32", "w8a8"): the causal layers' int8 number format (the embedding and generator stay float)."""
    d, v = spec["layer"]["d_model"], spec["vocab"]
    stack = derived_schema({"kind": "stack", "layer": spec["layer"], "num_layers": spec["num_layers"],
                            "final_norm": spec["final_norm"]}, capacity, model_name, quantize)
    hp = embedding_hparams(v, d, "embed.") | {"positional_encoding.max_len": str(capacity),
                                              "positional_encoding.d_model": str(d)}
    for k, val in stack["hparams"].items():
        hp[k] = val
        if re.fullmatch(r"layers\.\d+\.seq_len", k):
            hp[k[:-len("seq_len")] + "causal"] = "true"
    hp |= {"generator.in_features": str(d), "generator.out_features": str(v), "generator.log_softmax": "true"}
    params = ([{"name": "embed.weight", "dtype": "F32", "shape": [v, d], "transposed": False, "stored_shape": [v, d],
                "panel": 0}] + stack["params"] +
              [{"name": "generator.proj.weight", "dtype": "F32", "shape": [v, d], "transposed": True,
                "stored_shape": [d, v], "panel": stf_torch.WEIGHT_PANEL},
               {"name": "generator.proj.bias", "dtype": "F32", "shape": [v], "transposed": False, "stored_shape": [v],
                "panel": 0}])
    return {"format": "statiformer-schema", "version": SUPPORTED_SCHEMA_VERSION, "model": model_name,
            "param_count": sum(math.prod(p["shape"]) for p in params), "hparams": hp, "params": params}


def decoder_only_hparams(module, capacity):
    """The hyperparameter records of a TorchDecoderOnly run as stf::Gpt<capacity, ...> (what
    stf_schema prints for that type; tools/train_gpt.py's header carries them)."""
    return decoder_only_schema(describe_decoder_only(module, capacity), capacity, "")["hparams"]


def decoder_only_cpp_type(spec, capacity, quantize=None):
    layer_type = cpp_model_type({"kind": "layer", "layer": spec["layer"]}, capacity, quantize)
    opts = layer_type[layer_type.index("stf::LayerOptions"):-1]
    lay = spec["layer"]
    return (f"stf::Gpt<{capacity}, {spec['vocab']}, {lay['d_model']}, {lay['nhead']}, {lay['dim_feedforward']}, "
            f"{spec['num_layers']}, {opts}, {'true' if spec['final_norm'] else 'false'}>")


def decoder_only_description(spec):
    lay = spec["layer"]
    return (f"TorchDecoderOnly(vocab={spec['vocab']}, n={spec['num_layers']}, d_model={lay['d_model']}, "
            f"d_ff={lay['dim_feedforward']}, h={lay['nhead']}, norm_first={lay['norm_first']}, "
            f"final_norm={spec['final_norm']}, activation={lay['activation']!r}, block={spec['block']!r}) "
            f"[layer_norm_eps {lay['layer_norm_eps']}]")


def decoder_only_reference(module, spec, capacity, seed, prompt=None, new_tokens=None):
    """(prompt [n], PyTorch's log-probs at every prompt position [n, V], its greedy tokens [m], each
    step's log-probs [m, V], the smallest top-1 minus top-2 gap over the steps). The prompt: the
    given token ids, else n = max(1, min(8, capacity // 4)) seeded random ones; m: new_tokens, else
    as many as the capacity allows, at most 16. Dropout is switched off (a copy of the module, run
    in train mode: PyTorch's masked fast path is not taken)."""
    v = spec["vocab"]
    if prompt is None:
        gen = torch.Generator().manual_seed(seed)
        prompt = torch.randint(v, (max(1, min(8, capacity // 4)),), generator=gen).tolist()
    bad = [t for t in prompt if not isinstance(t, int) or not 0 <= t < v]
    if bad:
        raise ExportError([f"--prompt-tokens: token {bad[0]} out of range [0, {v})"])
    if not 1 <= len(prompt) <= capacity:
        raise ExportError([f"--prompt-tokens: a prompt of {len(prompt)} tokens: the model holds 1 to {capacity}"])
    room = capacity + 1 - len(prompt)
    m = min(room, 16) if new_tokens is None else new_tokens
    if not 1 <= m <= room:
        raise ExportError([f"--new-tokens {m}: a prompt of {len(prompt)} tokens leaves room for 1 to {room} new tokens "
                           f"in a capacity of {capacity}"])
    model = calibrate_mod.float_copy(module)
    ids = torch.tensor(prompt, dtype=torch.long)
    with torch.no_grad():
        prompt_lp, tokens, step_lp, margin = stf_torch.greedy_generate(model, ids, m)
    if not bool(torch.isfinite(prompt_lp).all()) or not bool(torch.isfinite(step_lp).all()):
        raise ExportError(["PyTorch's log-probabilities for the test prompt hold NaN or Inf: nothing to check against"])
    return ids, prompt_lp, tokens, step_lp, margin


def _cpp_ints(name, values, per_line=16):
    rows = [", ".join(str(int(x)) for x in values[i:i + per_line]) for i in range(0, len(values), per_line)]
    return f"inline constexpr int {name}[{len(values)}] = {{\n    " + ",\n    ".join(rows) + "};\n"


def decoder_only_header_text(name, spec, capacity, tensors, schema, io_, seed, source, prompt_given, quantize=None):
    prompt, prompt_lp, tokens, step_lp, margin = io_
    flag = format_flags(quantize)
    count_note = ("the int8 weights' elements, their scales and the float parameters" if quantize
                  else "PyTorch's parameter count")
    int8_note = (f"/// Its causal layers' linears are int8 ({quantize}, kernels/QUANTIZATION.md; {attention_note(quantize)}):\n"
                 "/// check() measures them against PyTorch's float module.\n" if quantize else "")
    weights = header_text(tensors, name, "", schema["hparams"])
    body = weights[weights.index(f"namespace {name} {{\n") + len(f"namespace {name} {{\n"):
                   weights.rindex("}  // namespace")]
    binding = compile_time_binding(tensors, schema)
    # the stack's parameters are named at the root (layers.<i>.*, norm.*) but are members of .stack
    binding = re.sub(r"\bp\.(layers\[|norm\.)", r"p.stack.\1", binding)
    cut = binding.index("/// The model, already bound")  # a Gpt holds its caches: the model is RAM
    binding = binding[:cut] + (
        "/// The parameters bound at compile time (constant: in flash on a microcontroller). A decoder-only\n"
        "/// model holds its K/V caches and arena, so the model itself is a variable (RAM):\n"
        "///   static Model model;  model.params = bound_model_params;\n"
        "/// copies these views: no name lookup, no binding code.\n"
        "inline constexpr Model::Params bound_model_params = bound_params();\n\n")
    origin = "the given token ids" if prompt_given else f"torch.randint, seed {seed}"
    out = [f"// generated by tools/export.py --emit-model {name} --seq-len {capacity}{flag} from {source} — do not "
           "edit\n",
           f"// PyTorch: {decoder_only_description(spec)}\n",
           "#pragma once\n\n#include <statiformer/io/bind.hpp>\n#include <statiformer/statiformer.hpp>\n\n",
           f"namespace {name} {{\n\n",
           f"/// The C++ model of the module above, with a capacity of {capacity} positions.\n",
           int8_note,
           f"using Model = {decoder_only_cpp_type(spec, capacity, quantize)};\n",
           f"static_assert(Model::Params::param_count == {schema['param_count']});  // {count_note}\n\n",
           body,
           "\n/// Binds the weights above to `params` by name at run time (names, sizes and hyperparameters\n",
           "/// checked; all or nothing). `bound_model_params` below needs no binding.\n",
           "inline stf::BindResult bind(Model::Params& params) { return stf::bind_table(params, table); }\n\n",
           binding,
           f"// A test prompt ({origin}), PyTorch's log-probabilities at each of its positions, its greedy\n",
           "// continuation and each new token's log-probabilities (the step that produced it).\n",
           f"inline constexpr stf::index_t test_prompt_len = {len(prompt)}, test_new_tokens = {len(tokens)};\n",
           _cpp_ints("test_prompt", prompt.tolist()), _cpp_ints("test_tokens", tokens.tolist()),
           _cpp_array("test_prompt_logprobs", prompt_lp), _cpp_array("test_step_logprobs", step_lp),
           f"/// PyTorch's smallest top-1 minus top-2 log-probability gap over the greedy steps.\n",
           f"inline constexpr float test_min_margin = {cpp_float(margin)};\n\n",
           "struct CheckResult {\n",
           "  float max_error;      ///< largest |statiformer - PyTorch| log-probability (NaN sticks; inf: a call failed)\n",
           "  bool tokens_equal;    ///< generate's greedy tokens are PyTorch's\n",
           "  stf::index_t tokens;  ///< how many generate produced\n",
           "  stf::Status status;   ///< the first call that failed, else ok\n",
           "};\n\n",
           "/// Runs `model` on the test prompt: prefill (every prompt position's log-probabilities), generate\n",
           "/// (greedy, test_new_tokens tokens), then prefill and steps fed PyTorch's tokens (each step's\n",
           "/// log-probabilities); compares everything with PyTorch's.\n",
           "inline CheckResult check(Model& model) {\n",
           "  static float lp[test_prompt_len * Model::vocab];\n",
           "  static int out[test_new_tokens];\n",
           "  CheckResult r{0.0f, false, 0, stf::Status::ok};\n",
           "  const auto compare = [&r](const float* got, const float* want, stf::index_t n) {\n",
           "    for (stf::index_t i = 0; i < n; ++i) {\n",
           "      const float d = got[i] - want[i];\n",
           "      const float e = d < 0.0f ? -d : d;\n",
           "      if (!(e <= r.max_error)) r.max_error = e;  // a NaN sticks\n",
           "    }\n",
           "  };\n",
           "  const auto failed = [&r](stf::Status s) {\n",
           "    r.status = s;\n",
           "    r.max_error = __builtin_inff();\n",
           "    return r;\n",
           "  };\n",
           "  stf::Status s = model.prefill(test_prompt, test_prompt_len, lp, stf::PrefillOutput::every_row);\n",
           "  if (s != stf::Status::ok) return failed(s);\n",
           "  compare(lp, test_prompt_logprobs, test_prompt_len * Model::vocab);\n",
           "  s = model.generate(test_prompt, test_prompt_len, test_new_tokens, out, r.tokens);\n",
           "  if (s != stf::Status::ok) return failed(s);\n",
           "  r.tokens_equal = r.tokens == test_new_tokens;\n",
           "  for (stf::index_t i = 0; i < r.tokens && r.tokens_equal; ++i) r.tokens_equal = out[i] == test_tokens[i];\n",
           "  s = model.prefill(test_prompt, test_prompt_len, lp);\n",
           "  if (s != stf::Status::ok) return failed(s);\n",
           "  compare(lp, test_step_logprobs, Model::vocab);\n",
           "  for (stf::index_t i = 1; i < test_new_tokens; ++i) {\n",
           "    s = model.step(test_tokens[i - 1], lp);\n",
           "    if (s != stf::Status::ok) return failed(s);\n",
           "    compare(lp, test_step_logprobs + i * Model::vocab, Model::vocab);\n",
           "  }\n",
           "  return r;\n",
           "}\n\n",
           f"}}  // namespace {name}\n"]
    return "".join(out)


def emit_decoder_only(module, state, name, capacity, header, seed, safetensors, source, prompt=None, new_tokens=None,
                      quantize=None, calibration=None):
    """--emit-model for a TorchDecoderOnly. Returns (spec, schema, the stored prompt's length). quantize: the
    causal layers' int8 number format (their linears' weights quantized; the reference stays PyTorch's float model)."""
    spec = describe_decoder_only(module, capacity)
    _check_expressible(spec)
    schema = decoder_only_schema(spec, capacity, name, quantize)
    named = [(n, n, t) for n, t in stf_torch.canonical_from_decoder_only(module)]
    tensors = match_calibrated(schema, named, calibration, quantize)
    io_ = decoder_only_reference(module, spec, capacity, seed, prompt, new_tokens)
    text = decoder_only_header_text(name, spec, capacity, tensors, schema, io_, seed, source, prompt is not None,
                                    quantize)
    with open(header, "w", newline="\n") as f:
        f.write(text)
    if safetensors:
        metadata = {"format": LAYOUT_FORMAT, "layout": str(schema["version"]), "model": name} | schema["hparams"]
        with open(safetensors, "wb") as f:
            f.write(safetensors_bytes(tensors, metadata))
    return spec, schema, io_


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint",
                    help="torch.save file (a state_dict or an nn.Module) or a PyTorch-layout .safetensors")
    ap.add_argument("schema", nargs="?", help="the model's schema JSON (stf_schema MODEL); not with --emit-model")
    ap.add_argument("--map", default="auto", choices=sorted(BUILTIN_MAPS), help="built-in name map")
    ap.add_argument("--map-file", help="JSON list of [regex, replacement] rules applied before the built-in map")
    ap.add_argument("--strip-prefix", default="", help="drop this prefix from every key first (e.g. 'model.')")
    ap.add_argument("--header", help="write a C++ header with the weights and a stf::WeightEntry table")
    ap.add_argument("--namespace", help="C++ namespace of the header (default: the schema's model name)")
    ap.add_argument("--safetensors", help="write a .safetensors file in statiformer's stored layout")
    ap.add_argument("--allow-cast", action="store_true", help="accept float16/bfloat16/float64 tensors (cast to F32)")
    ap.add_argument("--allow-non-finite", action="store_true", help="accept NaN/Inf values")
    emit = ap.add_argument_group("the C++ model from the module (no schema, one C++ compile)")
    emit.add_argument("--emit-model", metavar="NAME", help="write --header with namespace NAME: the stf:: model type "
                      "`Model`, the weights, bind(), a test input with PyTorch's output and check()")
    emit.add_argument("--seq-len", type=int, help="the model's sequence length (tokens), with --emit-model")
    emit.add_argument("--config", help="JSON constructor arguments for a state_dict or .safetensors checkpoint")
    emit.add_argument("--seed", type=int, default=0, help="seed of the stored test input (default 0)")
    emit.add_argument("--prompt-tokens", metavar="IDS", help="decoder-only: the stored test prompt, comma-separated "
                      "token ids (default: seeded random ones)")
    emit.add_argument("--new-tokens", type=int, help="decoder-only: how many tokens the stored greedy continuation has")
    emit.add_argument("--tgt-len", type=int, help="the encoder-decoder's target capacity in tokens (default: "
                      "--seq-len, the source length)")
    ap.add_argument("--quantize", choices=NUMBER_FORMATS,
                    help="int8 linears (kernels/QUANTIZATION.md): w8a32 int8 weights, w8a8 also int8 inputs of the "
                    "linears; with a SCHEMA, its model's number format; with --emit-model, the layers of every model "
                    "(embeddings and generators stay float)")
    emit.add_argument("--int8-attention", action="store_true",
                      help="with --quantize w8a8: the attention's Q·Kᵀ and P·V int8 too, over an int8 K/V cache "
                      "(LayerOptions::int8_attention; kernels/QUANTIZATION.md). Off by default: slower than the float "
                      "attention on every target measured")
    emit.add_argument("--calibrate", metavar="INPUTS.pt",
                      help="with --quantize: model inputs (torch.save: token ids [N, L] or a list of 1-D tensors; an "
                      "encoder's float [N, S, d_model]) over which the int8 weights are rounded (tools/calibrate.py: "
                      "GPTQ's error-compensating rounding, the scheme's scales); prints the simulated int8 model's "
                      "error against the float one on them, rounded to nearest and calibrated")
    emit.add_argument("--start-token", type=int,
                      help="the encoder-decoder's start token for the stored greedy decoding (default 1)")
    args = ap.parse_args(argv)
    if args.emit_model is not None:
        misuse = [f for f, v in (("SCHEMA", args.schema), ("--map-file", args.map_file),
                                 ("--namespace", args.namespace), ("--strip-prefix", args.strip_prefix),
                                 ("--allow-cast", args.allow_cast),
                                 ("--allow-non-finite", args.allow_non_finite)) if v]
        if misuse or not args.header or args.seq_len is None:
            what = (f"{', '.join(misuse)} not with --emit-model" if misuse
                    else "--emit-model needs --header and --seq-len")
            print(f"export: {what}", file=sys.stderr)
            return 2
        report = []
        try:
            prompt = None
            if args.prompt_tokens is not None:
                try:
                    prompt = [int(x) for x in args.prompt_tokens.split(",")]
                except ValueError:
                    raise ExportError([f"--prompt-tokens {args.prompt_tokens!r}: comma-separated integers are "
                                       "needed"]) from None
            spec, schema, ref = emit_model(args.checkpoint, args.emit_model, args.seq_len, args.header, args.config,
                                           args.seed, args.safetensors, tgt_len=args.tgt_len,
                                           start_token=args.start_token, prompt=prompt, new_tokens=args.new_tokens,
                                           quantize=args.quantize, int8_attention=args.int8_attention,
                                           calibrate=args.calibrate, report=report)
        except ExportError as e:
            print(f"export: {'; '.join(e.problems)}", file=sys.stderr)
            return 2
        what = (f"{args.quantize}: {sum(math.prod(p['stored_shape']) for p in schema['params'] if p['dtype'] == 'I8')}"
                f" int8 weights" if args.quantize else f"{schema['param_count']} floats")
        for line in report:
            print(f"export: {line}")
        if spec["kind"] == "decoder_only":
            print(f"export: {args.header}: {args.emit_model}::Model = {decoder_only_description(spec)} with a "
                  f"capacity of {args.seq_len}, {what}; test prompt of {len(ref[0])} tokens, "
                  f"{len(ref[2])} greedy tokens")
            return 0
        print(f"export: {args.header}: {args.emit_model}::Model = {torch_description(spec)} over {args.seq_len} "
              f"tokens, {what}")
        return 0
    if args.prompt_tokens is not None or args.new_tokens is not None:
        print("export: --prompt-tokens/--new-tokens are for --emit-model of a decoder-only model", file=sys.stderr)
        return 2
    if args.calibrate is not None:
        print("export: --calibrate is for --emit-model (it runs the module on its inputs)", file=sys.stderr)
        return 2
    if args.int8_attention:
        print("export: --int8-attention is for --emit-model (with a SCHEMA, its model type decides)", file=sys.stderr)
        return 2
    if args.schema is None or args.config:
        print("export: a SCHEMA argument is needed (or --emit-model NAME --seq-len N" + (
            "; --config is for --emit-model)" if args.config else ")"), file=sys.stderr)
        return 2
    try:
        tensors = export(args.checkpoint, args.schema, args.map, args.map_file, args.header, args.namespace,
                         args.safetensors, args.allow_cast, args.allow_non_finite, args.strip_prefix, args.quantize)
    except ExportError as e:
        print(f"export: {len(e.problems)} problem(s), nothing written:", file=sys.stderr)
        for p in e.problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    n = sum(t.numel() for e, t in tensors if e.get("dtype") != "I8")
    n8 = sum(t.numel() for e, t in tensors if e.get("dtype") == "I8")
    print(f"export: {len(tensors)} tensors, {n} floats" + (f", {n8} int8 weights ({args.quantize})" if n8 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
