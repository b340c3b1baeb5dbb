#!/usr/bin/python3
"""A small seeded PyTorch model for examples/exported (README, "One compile"): an
nn.TransformerEncoder of 2 pre-norm GELU layers (d_model 16, 4 heads, dim_feedforward 40) with a
final LayerNorm, its LayerNorms' weights and biases randomized (PyTorch initializes them to 1 and 0).

    /usr/bin/python3 examples/exported/make_model.py OUT.pt [--state-dict SD.pt --config CONFIG.json]
        [--calibration CAL.pt]
    /usr/bin/python3 examples/exported/make_model.py OUT.pt --decoder-only

OUT.pt: the whole module (torch.save(model)); --state-dict/--config: its state_dict and the
constructor arguments tools/export.py --config reads; --calibration: 64 seeded inputs [64, 10, 16]
(N(0, 1), apart from the weights' seed) for tools/export.py --calibrate. --decoder-only: a seeded
decoder-only model instead, tools/stf_torch.TorchDecoderOnly (vocabulary 23, 2 pre-norm GELU layers of
nn.TransformerEncoder run with a causal mask, d_model 16, 4 heads, dim_feedforward 40, final norm).
"""

import argparse
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import stf_torch  # noqa: E402

CONFIG = {"module": "TransformerEncoder", "d_model": 16, "nhead": 4, "dim_feedforward": 40, "num_layers": 2,
          "activation": "gelu", "norm_first": True, "final_norm": True}


def make(seed=7):
    torch.manual_seed(seed)
    c = CONFIG
    layer = nn.TransformerEncoderLayer(c["d_model"], c["nhead"], c["dim_feedforward"], 0.0, c["activation"],
                                       norm_first=c["norm_first"])
    model = nn.TransformerEncoder(layer, c["num_layers"], nn.LayerNorm(c["d_model"]), enable_nested_tensor=False)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.randn_like(p) * 0.2 + (1.0 if name.endswith("weight") else 0.0))
    return model.eval()


def make_decoder_only(seed=7):
    torch.manual_seed(seed)
    model = stf_torch.TorchDecoderOnly(23, 2, 16, 40, 4, norm_first=True, activation="gelu")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.randn_like(p) * 0.2 + (1.0 if name.endswith("weight") else 0.0))
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="the whole module, torch.save(model)")
    ap.add_argument("--state-dict", help="also its state_dict")
    ap.add_argument("--config", help="also its constructor arguments (JSON)")
    ap.add_argument("--calibration", help="also 64 seeded inputs [64, 10, 16] for export.py --calibrate")
    ap.add_argument("--decoder-only", action="store_true", help="a decoder-only model (TorchDecoderOnly) instead")
    args = ap.parse_args()
    if args.decoder_only:
        if args.state_dict or args.config or args.calibration:
            ap.error("--decoder-only writes the whole module only")
        model = make_decoder_only()
        torch.save(model, args.out)
        print(f"make_model: {args.out}: {sum(p.numel() for p in model.parameters())} parameters (decoder-only)")
        return
    model = make()
    torch.save(model, args.out)
    if args.state_dict:
        torch.save(model.state_dict(), args.state_dict)
    if args.config:
        with open(args.config, "w") as f:
            json.dump(CONFIG, f, indent=1)
    if args.calibration:
        gen = torch.Generator().manual_seed(1007)
        torch.save(torch.randn(64, 10, CONFIG["d_model"], generator=gen), args.calibration)
    print(f"make_model: {args.out}: {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
