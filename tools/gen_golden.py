#!/usr/bin/python3
"""Generate statiformer's golden test data from tests/golden/plan.json.

Usage (Debian's python3 with python3-torch 1.13):
    /usr/bin/python3 tools/gen_golden.py          # write tests/golden/data/*.txt and cases.inc
    /usr/bin/python3 tools/gen_golden.py --check  # recompute; fail unless the files are identical
                                                  # but for PyTorch's per-CPU rounding of outputs
                                                  # (stf_torch.golden_drift)

For every case: torch.manual_seed(seed), build the module (PyTorch init, then non-trivial 1-D
parameters via stf_torch.randomize_vectors), draw inputs with randn, run it, write the file.
File format, tensor names and cases.inc line formats: tools/GOLDEN_FORMAT.md.
"""

import argparse
import json
import math
import os
import sys

import torch
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


def torch_layer(kind, p, norm_first, activation):
    """nn.TransformerEncoderLayer/DecoderLayer in train mode with dropout 0 (no fast path)."""
    cls = nn.TransformerEncoderLayer if kind == "encoder" else nn.TransformerDecoderLayer
    layer = cls(p["D"], p["H"], p["F"], dropout=0.0, activation=activation, batch_first=True,
                norm_first=norm_first)
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
    """nn.MultiheadAttention(batch_first=True), per-head weights."""
    b, sq, sk, d = p["B"], p["Sq"], p["Sk"], p["D"]
    if p["is_self"] and sq != sk:
        raise ValueError("self-attention needs Sq == Sk")
    mha = nn.MultiheadAttention(d, p["H"], bias=p["bias"], batch_first=True).train()
    st.randomize_vectors(mha)
    query = torch.randn(b, sq, d)
    kv = query if p["is_self"] else torch.randn(b, sk, d)
    mask = p["mask"]
    vl = batch_valid_len(inputs, "valid_len", b, sk) if "padding" in mask else torch.full((b,), sk)
    kpm = key_padding(vl, sk) if "padding" in mask else None
    attn_mask = causal_blocked(sq, sk) if "causal" in mask else None
    with torch.no_grad():
        out, weights = mha(query, kv, kv, key_padding_mask=kpm, need_weights=True,
                           attn_mask=attn_mask, average_attn_weights=False)
    tensors = st.canonical_from_torch(mha.state_dict(), split=not p["packed"])
    tensors.append(("query", query))
    if not p["is_self"]:
        tensors.append(("kv", kv))
    return tensors + [("valid_len", lengths_tensor(vl)), ("out", out), ("weights", weights)]


class FeedForward(nn.Module):
    """linear2(act(linear1(x))), optionally act() again on the output."""

    def __init__(self, d, f, activation, out_activation):
        super().__init__()
        self.linear1 = nn.Linear(d, f)
        self.linear2 = nn.Linear(f, d)
        self.act = F.relu if activation == "relu" else F.gelu
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
    """nn.LayerNorm (eps 1e-5) or the annotated LayerNorm (unbiased std + 1e-6)."""
    if p["flavour"] == "torch":
        norm = nn.LayerNorm(p["D"])
    else:
        if p["D"] < 2:
            raise ValueError("annotated LayerNorm needs D >= 2 (unbiased std)")
        norm = st.LayerNorm(p["D"])
    st.randomize_vectors(norm)
    x = torch.randn(p["S"], p["D"])
    with torch.no_grad():
        y = norm(x)
    params = st.canonical_from_annotated(norm.state_dict())
    return params + [("x", x), ("y", y)]


def gen_encoder_layer(p, inputs):
    """nn.TransformerEncoderLayer with src_key_padding_mask."""
    layer = torch_layer("encoder", p, p["norm_first"], p["activation"])
    st.randomize_vectors(layer)
    vl = batch_valid_len(inputs, "valid_len", p["B"], p["S"])
    x = torch.randn(p["B"], p["S"], p["D"])
    with torch.no_grad():
        y = layer(x, src_key_padding_mask=key_padding(vl, p["S"]))
    params = st.canonical_from_torch(layer.state_dict(), layer_level=True)
    return params + [("x", x), ("valid_len", lengths_tensor(vl)), ("y", y)]


def gen_decoder_layer(p, inputs):
    """nn.TransformerDecoderLayer, causal tgt_mask, memory_key_padding_mask."""
    layer = torch_layer("decoder", p, p["norm_first"], p["activation"])
    st.randomize_vectors(layer)
    vl = batch_valid_len(inputs, "mem_valid_len", p["B"], p["Sm"])
    x = torch.randn(p["B"], p["S"], p["D"])
    memory = torch.randn(p["B"], p["Sm"], p["D"])
    with torch.no_grad():
        y = layer(x, memory, tgt_mask=causal_blocked(p["S"], p["S"]),
                  memory_key_padding_mask=key_padding(vl, p["Sm"]))
    params = st.canonical_from_torch(layer.state_dict(), layer_level=True)
    return params + [("x", x), ("memory", memory), ("mem_valid_len", lengths_tensor(vl)),
                     ("y", y)]


def check_annotated(p):
    """The annotated flavour is pre-norm with a final norm only."""
    if p["ln"] == "annotated" and not (p["norm_first"] and p["final_norm"]):
        raise ValueError("ln=annotated needs norm_first=1 and final_norm=1")


def annotated_stack(kind, p):
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
    return stack


def torch_stack(kind, p):
    """nn.TransformerEncoder/Decoder with independently initialised layers."""
    layer = torch_layer(kind, p, p["norm_first"], "relu")
    norm = nn.LayerNorm(p["D"]) if p["final_norm"] else None
    if kind == "encoder":
        stack = nn.TransformerEncoder(layer, p["N"], norm=norm, enable_nested_tensor=False)
    else:
        stack = nn.TransformerDecoder(layer, p["N"], norm=norm)
    st.reinit_layers(stack)
    st.randomize_vectors(stack)
    return stack.train()


def gen_encoder_stack(p, inputs):
    """Encoder stack, torch or annotated flavour."""
    check_annotated(p)
    vl = batch_valid_len(inputs, "valid_len", p["B"], p["S"])
    if p["ln"] == "annotated":
        stack = annotated_stack("encoder", p)
        x = torch.randn(p["B"], p["S"], p["D"])
        with torch.no_grad():
            y = stack(x, st.padding_mask(vl, p["S"]))
        params = st.canonical_from_annotated(stack.state_dict())
    else:
        stack = torch_stack("encoder", p)
        x = torch.randn(p["B"], p["S"], p["D"])
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
        stack = annotated_stack("decoder", p)
        x, memory = torch.randn(b, s, d), torch.randn(b, sm, d)
        with torch.no_grad():
            y = stack(x, memory, st.padding_mask(vl, sm), st.subsequent_mask(s))
        params = st.canonical_from_annotated(stack.state_dict())
    else:
        stack = torch_stack("decoder", p)
        x, memory = torch.randn(b, s, d), torch.randn(b, sm, d)
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
    stack = torch_stack("encoder", dict(p, norm_first=False, final_norm=False))
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


def gen_encdec_greedy(p, inputs):
    """Random encoder-decoder, greedy decoding of one source."""
    s, v = p["S"], p["V"]
    if p["ln"] == "annotated":
        if not p["norm_first"]:
            raise ValueError("ln=annotated needs norm_first=1")
        model = st.make_model(v, v, p["N"], p["D"], p["F"], p["H"]).eval()
        st.randomize_vectors(model)
        params = st.canonical_from_annotated(model.state_dict())
    else:
        model = st.TorchEncoderDecoder(v, v, p["N"], p["D"], p["F"], p["H"], p["norm_first"])
        st.reinit_layers(model)
        st.randomize_vectors(model)
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


# module -> (cases.inc macro, macro parameter order after the name, generator)
MODULES = {
    "sdpa": ("STF_GOLDEN_SDPA", ["Sq", "Sk", "D", "mask", "fill"], gen_sdpa),
    "mha": ("STF_GOLDEN_MHA", ["B", "Sq", "Sk", "D", "H", "bias", "packed", "is_self", "mask"],
            gen_mha),
    "ffn": ("STF_GOLDEN_FFN", ["S", "D", "F", "activation", "out_activation"], gen_ffn),
    "layernorm": ("STF_GOLDEN_LAYERNORM", ["S", "D", "flavour"], gen_layernorm),
    "encoder_layer": ("STF_GOLDEN_ENCODER_LAYER",
                      ["B", "S", "D", "H", "F", "norm_first", "activation"], gen_encoder_layer),
    "decoder_layer": ("STF_GOLDEN_DECODER_LAYER",
                      ["B", "S", "Sm", "D", "H", "F", "norm_first", "activation"],
                      gen_decoder_layer),
    "encoder_stack": ("STF_GOLDEN_ENCODER_STACK",
                      ["B", "S", "D", "H", "F", "N", "norm_first", "final_norm", "ln"],
                      gen_encoder_stack),
    "decoder_stack": ("STF_GOLDEN_DECODER_STACK",
                      ["B", "S", "Sm", "D", "H", "F", "N", "norm_first", "final_norm", "ln"],
                      gen_decoder_stack),
    "posenc": ("STF_GOLDEN_POSENC", ["S", "D"], gen_posenc),
    "embedding": ("STF_GOLDEN_EMBEDDING", ["S", "V", "D"], gen_embedding),
    "generator": ("STF_GOLDEN_GENERATOR", ["S", "D", "V"], gen_generator),
    "classifier": ("STF_GOLDEN_CLASSIFIER", ["S", "V", "D", "H", "F", "N", "C"], gen_classifier),
    "encdec_greedy": ("STF_GOLDEN_ENCDEC",
                      ["S", "T", "V", "D", "H", "F", "N", "norm_first", "ln"], gen_encdec_greedy),
}

WORDS = {"relu", "gelu", "none", "padding", "causal", "bool", "neg_inf", "neg_1e9", "torch",
         "annotated", "padding_causal"}

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
        if not isinstance(v, (bool, int, str)):
            raise ValueError(f"{case['name']}: {k} must be an int, bool or word")
    if "D" in params and "H" in params and params["D"] % params["H"]:
        raise ValueError(f"{case['name']}: D must be a multiple of H")
    return [(k, params[k]) for k in order]


def render_case(case, defaults):
    """(file text, cases.inc line) for one case."""
    macro, _, gen = MODULES[case["module"]]
    params = ordered_params(case)
    tol = dict(defaults["tolerance"], **case.get("tolerance", {}))
    if (tol["rtol"], tol["atol"]) != (defaults["tolerance"]["rtol"], defaults["tolerance"]["atol"]) \
            and "why" not in case:
        raise ValueError(f"{case['name']}: a non-default tolerance needs a 'why'")
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


def check(outputs):
    """Compare outputs with the files on disk; return the number of problems. cases.inc must be
    byte-identical; a case's values may drift within its tolerance (PyTorch rounds per CPU)."""
    problems, worst = 0, 0.0
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
            problem, drift = st.golden_drift(committed, text)
            worst = max(worst, drift)
        if problem:
            print(f"DIFFERS {rel}: {problem}")
            problems += 1
    for path in stale_files(outputs):
        print(f"STALE {os.path.relpath(path, ROOT)} (not in the plan)")
        problems += 1
    if worst > 0:
        print(f"PyTorch's outputs on this CPU drift from the committed ones by at most {worst:.0%} of a case's tolerance")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--check", action="store_true",
                        help="recompute and verify the committed files are byte-identical")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with open(PLAN) as f:
        plan = json.load(f)
    outputs = render_all(plan)
    if args.check:
        problems = check(outputs)
        print(f"{len(plan['cases'])} cases: " + ("OK" if not problems else f"{problems} problems"))
        return 1 if problems else 0
    os.makedirs(DATA, exist_ok=True)
    for path, text in outputs.items():
        with open(path, "w", newline="\n") as f:
            f.write(text)
    for path in stale_files(outputs):
        print(f"warning: stale {os.path.relpath(path, ROOT)} is not in the plan")
    total = sum(len(t) for t in outputs.values())
    print(f"wrote {len(plan['cases'])} cases, {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
