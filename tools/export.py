#!/usr/bin/python3
"""Export a PyTorch checkpoint to statiformer: a C++ weight header and a .safetensors file.

    /usr/bin/python3 tools/export.py CHECKPOINT SCHEMA.json [--map auto] \\
        [--header OUT.hpp --namespace NS] [--safetensors OUT.safetensors]

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
import re
import struct
import sys

import torch

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
    """(state_dict, the module or None) from a torch.save file holding a state_dict or a module."""
    obj = torch.load(path, map_location="cpu")
    if isinstance(obj, torch.nn.Module):
        return obj.state_dict(), obj
    if not isinstance(obj, dict):
        raise ExportError([f"{path}: neither a state_dict nor an nn.Module ({type(obj).__name__})"])
    return obj, None


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


def match(schema, mapped, allow_cast=False, allow_non_finite=False):
    """[(entry, stored tensor)] in schema order, or ExportError listing every problem."""
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
    for entry in schema["params"]:
        name = entry["name"]
        if name not in by_name:
            problems.append(f"missing: '{name}' (shape {entry['shape']}) is not in the checkpoint")
            continue
        key, tensor = by_name[name]
        src = f"'{name}'" + (f" (from '{key}')" if key != name else "")
        if entry.get("dtype") != "F32":
            problems.append(f"dtype: {src}: the schema asks for {entry.get('dtype')}; only F32 is exported")
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
        t = stored_tensor(entry, tensor)
        if not allow_non_finite and not bool(torch.isfinite(t).all()):
            problems.append(f"value: {src} holds NaN or Inf")
            continue
        out.append((entry, t))
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


def ident(name):
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


def header_text(tensors, namespace, note, hparams=None, per_line=8):
    out = [f"// generated by tools/export.py ({note}) — do not edit\n",
           "#pragma once\n\n#include <statiformer/tensor.hpp>\n\n",
           f"namespace {namespace} {{\n"]
    for entry, t in tensors:
        vals = [cpp_float(v) for v in t.reshape(-1).tolist()]
        rows = [", ".join(vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
        dims = " * ".join(str(d) for d in entry["stored_shape"])
        layout = " transposed" if entry["transposed"] else ""
        out.append(f"// {entry['name']}: stored{layout} {entry['stored_shape']} (PyTorch {entry['shape']})\n")
        out.append(f"alignas(64) inline constexpr float {ident(entry['name'])}[{dims}] = {{\n    "
                   + ",\n    ".join(rows) + "};\n")
    out.append("inline constexpr stf::WeightEntry table[] = {\n")
    for entry, t in tensors:
        dims = " * ".join(str(d) for d in entry["stored_shape"])
        out.append(f'    {{"{entry["name"]}", {ident(entry["name"])}, {dims}}},\n')
    for key, value in (hparams or {}).items():  # hyperparameter records, checked by stf::bind_table
        out.append(f'    {{"{key}={value}", nullptr, 0}},\n')
    out.append(f"}};\n}}  // namespace {namespace}\n")
    return "".join(out)


def safetensors_bytes(tensors, metadata, align=64):
    """The safetensors file: u64 header length, JSON header (space-padded so the data region starts
    at a multiple of `align`), little-endian F32 data in schema order without gaps."""
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for entry, t in tensors:
        values = t.reshape(-1).tolist()
        blob = struct.pack(f"<{len(values)}f", *values)
        header[entry["name"]] = {"dtype": "F32", "shape": list(t.shape),
                                 "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % align)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def export(checkpoint, schema_path, map_name="auto", map_file=None, header=None, namespace=None,
           safetensors=None, allow_cast=False, allow_non_finite=False, strip_prefix=""):
    """Runs the whole export; returns the stored tensors [(schema entry, tensor)]."""
    schema = load_schema(schema_path)
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", help="torch.save file: a state_dict or an nn.Module")
    ap.add_argument("schema", help="the model's schema JSON (stf_schema MODEL)")
    ap.add_argument("--map", default="auto", choices=sorted(BUILTIN_MAPS), help="built-in name map")
    ap.add_argument("--map-file", help="JSON list of [regex, replacement] rules applied before the built-in map")
    ap.add_argument("--strip-prefix", default="", help="drop this prefix from every key first (e.g. 'model.')")
    ap.add_argument("--header", help="write a C++ header with the weights and a stf::WeightEntry table")
    ap.add_argument("--namespace", help="C++ namespace of the header (default: the schema's model name)")
    ap.add_argument("--safetensors", help="write a .safetensors file in statiformer's stored layout")
    ap.add_argument("--allow-cast", action="store_true", help="accept float16/bfloat16/float64 tensors (cast to F32)")
    ap.add_argument("--allow-non-finite", action="store_true", help="accept NaN/Inf values")
    args = ap.parse_args(argv)
    try:
        tensors = export(args.checkpoint, args.schema, args.map, args.map_file, args.header, args.namespace,
                         args.safetensors, args.allow_cast, args.allow_non_finite, args.strip_prefix)
    except ExportError as e:
        print(f"export: {len(e.problems)} problem(s), nothing written:", file=sys.stderr)
        for p in e.problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    n = sum(t.numel() for _, t in tensors)
    print(f"export: {len(tensors)} tensors, {n} floats")
    return 0


if __name__ == "__main__":
    sys.exit(main())
