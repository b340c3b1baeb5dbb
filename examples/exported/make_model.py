#!/usr/bin/python3
"""A small seeded PyTorch model for examples/exported (README, "One compile"): an
nn.TransformerEncoder of 2 pre-norm GELU layers (d_model 16, 4 heads, dim_feedforward 40) with a
final LayerNorm, its LayerNorms' weights and biases randomized (PyTorch initializes them to 1 and 0).

    /usr/bin/python3 examples/exported/make_model.py OUT.pt [--state-dict SD.pt --config CONFIG.json]

OUT.pt: the whole module (torch.save(model)); --state-dict/--config: its state_dict and the
constructor arguments tools/export.py --config reads.
"""

import argparse
import json

import torch
import torch.nn as nn

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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="the whole module, torch.save(model)")
    ap.add_argument("--state-dict", help="also its state_dict")
    ap.add_argument("--config", help="also its constructor arguments (JSON)")
    args = ap.parse_args()
    model = make()
    torch.save(model, args.out)
    if args.state_dict:
        torch.save(model.state_dict(), args.state_dict)
    if args.config:
        with open(args.config, "w") as f:
            json.dump(CONFIG, f, indent=1)
    print(f"make_model: {args.out}: {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
