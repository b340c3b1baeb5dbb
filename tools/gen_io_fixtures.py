#!/usr/bin/python3
"""Generate the exporter/loader round-trip fixtures from tests/io/plan.json (seeded, deterministic).

    /usr/bin/python3 tools/gen_io_fixtures.py          # write tests/io/data/
    /usr/bin/python3 tools/gen_io_fixtures.py --check  # regenerate in a temporary directory; fail
                                                       # unless every weight file is byte-identical
                                                       # and every golden text is, but for PyTorch's
                                                       # per-CPU rounding (stf_torch.golden_drift)
    /usr/bin/python3 tools/gen_io_fixtures.py --schema-tool build/native/tests/io/schema_tool/stf_schema
        # first rewrite tests/io/schemas/*.json from the C++ types (after a layout change), then the data

For each case: build the PyTorch module (or load the committed checkpoint), torch.save its
state_dict, export it with tools/export.py against tests/io/schemas/<schema>.json (the C++ schema,
`stf_schema MODEL`), and write PyTorch's outputs on seeded inputs as <name>.txt (golden format).
With "transposed_schema", the same checkpoint is also exported in the transposed layout
(<name>_transposed.safetensors): the tests check it holds exactly the transposes.
"""

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import stf_torch as st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAN = os.path.join(ROOT, "tests", "io", "plan.json")
SCHEMAS = os.path.join(ROOT, "tests", "io", "schemas")
DATA = os.path.join(ROOT, "tests", "io", "data")


def encoder_stack(p):
    layer = nn.TransformerEncoderLayer(p["D"], p["H"], p["F"], 0.0, activation="relu", batch_first=True,
                                       norm_first=p["norm_first"])
    return nn.TransformerEncoder(layer, p["N"], norm=nn.LayerNorm(p["D"]), enable_nested_tensor=False)


def decoder_stack(p):
    layer = nn.TransformerDecoderLayer(p["D"], p["H"], p["F"], 0.0, activation="relu", batch_first=True,
                                       norm_first=p["norm_first"])
    return nn.TransformerDecoder(layer, p["N"], norm=nn.LayerNorm(p["D"]))


@torch.no_grad()
def run_case(case, out_dir):
    """Writes the case's files into out_dir; returns their names."""
    name, p = case["name"], case.get("params", {})
    torch.manual_seed(case.get("seed", 0))
    if case["module"] == "demo":
        model = st.TorchEncoderDecoder(13, 13, 2, 32, 64, 4, norm_first=False, dropout=0.0, max_len=64).train()
        model.load_state_dict(torch.load(os.path.join(ROOT, case["checkpoint"])), strict=False)
    else:
        model = (encoder_stack if case["module"] == "encoder_stack" else decoder_stack)(p).train()
        st.reinit_layers(model)
        st.randomize_vectors(model)
    files = []
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "model.pt")
        torch.save(model.state_dict(), ckpt)  # the exporter's input, as a user would save it
        schema = os.path.join(SCHEMAS, case["schema"] + ".json")
        header = os.path.join(out_dir, f"{name}_weights.hpp") if case.get("header") else None
        export.export(ckpt, schema, case["map"], header=header, namespace=f"stf_io_{name}",
                      safetensors=os.path.join(out_dir, f"{name}.safetensors"))
        files += [f"{name}.safetensors"] + ([f"{name}_weights.hpp"] if header else [])
        if case.get("transposed_schema"):
            export.export(ckpt, os.path.join(SCHEMAS, case["transposed_schema"] + ".json"), case["map"],
                          safetensors=os.path.join(out_dir, f"{name}_transposed.safetensors"))
            files.append(f"{name}_transposed.safetensors")

    inputs = case.get("inputs", {})
    tensors, params = [], []
    if case["module"] == "encoder_stack":
        x = torch.randn(1, p["S"], p["D"])
        valid = inputs["valid_len"]
        pad = torch.arange(p["S"])[None, :] >= valid
        y = model(x, src_key_padding_mask=pad)
        tensors = [("x", x[0]), ("valid_len", torch.tensor([valid])), ("y", y[0])]
    elif case["module"] == "decoder_stack":
        x = torch.randn(1, p["S"], p["D"])
        memory = torch.randn(1, p["Sm"], p["D"])
        valid = inputs["mem_valid_len"]
        pad = torch.arange(p["Sm"])[None, :] >= valid
        causal = torch.triu(torch.ones(p["S"], p["S"], dtype=torch.bool), diagonal=1)
        y = model(x, memory, tgt_mask=causal, memory_key_padding_mask=pad)
        tensors = [("x", x[0]), ("memory", memory[0]), ("mem_valid_len", torch.tensor([valid])), ("y", y[0])]
    else:  # demo: greedy decoding, the per-step log-probabilities and the encoder memory
        for i, digits in enumerate(inputs["src"]):
            src = torch.tensor([[3 + d for d in digits] + [0] * (10 - len(digits))])
            memory, ys, logprobs, _ = st.greedy_decode(model, src, st.padding_mask(torch.tensor([len(digits)]), 10),
                                                       12, 1, stop_symbol=2)
            tensors += [(f"src_{i}", src[0]), (f"src_valid_len_{i}", torch.tensor([len(digits)])),
                        (f"memory_{i}", memory[0]), (f"decoded_{i}", ys[0]), (f"logprobs_{i}", logprobs)]
    tol = case["tolerance"]
    text = st.golden_text(name, case["module"], params, (tol["rtol"], tol["atol"]), tensors)
    with open(os.path.join(out_dir, f"{name}.txt"), "w", newline="\n") as f:
        f.write(text)
    return files + [f"{name}.txt"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="regenerate and compare with the committed files")
    ap.add_argument("--schema-tool", help="stf_schema binary: rewrite tests/io/schemas/*.json with it first")
    args = ap.parse_args()
    if args.schema_tool and not args.check:
        for fname in sorted(os.listdir(SCHEMAS)):
            model = fname[: -len(".json")]
            out = subprocess.run([args.schema_tool, model], check=True, capture_output=True).stdout
            with open(os.path.join(SCHEMAS, fname), "wb") as f:
                f.write(out)
            print(f"schema {model}: rewritten from {args.schema_tool}")
    torch.set_num_threads(1)
    with open(PLAN) as f:
        plan = json.load(f)
    if not args.check:
        os.makedirs(DATA, exist_ok=True)
        for case in plan["cases"]:
            print(f"{case['name']}: " + ", ".join(run_case(case, DATA)))
        return 0
    bad, drifted = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for case in plan["cases"]:
            for fname in run_case(case, tmp):
                committed, fresh = os.path.join(DATA, fname), os.path.join(tmp, fname)
                if not os.path.exists(committed):
                    bad.append(f"{fname} (missing)")
                elif fname.endswith(".txt"):  # PyTorch's outputs: its rounding follows the CPU
                    with open(committed) as f, open(fresh) as g:
                        problem, worst = st.golden_drift(f.read(), g.read())
                    if problem:
                        bad.append(f"{fname} ({problem})")
                    elif worst > 0:
                        drifted.append(f"{fname} {worst:.0%}")
                elif not filecmp.cmp(committed, fresh, shallow=False):  # the exporter's: exact
                    bad.append(fname)
    if bad:
        print("gen_io_fixtures --check: differ from a fresh generation: " + "; ".join(bad), file=sys.stderr)
        return 1
    print(f"gen_io_fixtures --check: all files of {len(plan['cases'])} cases reproduce, weights byte for byte"
          + (f"; PyTorch's outputs drift on this CPU by at most this share of their tolerance: {', '.join(drifted)}"
             if drifted else ", outputs too"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
