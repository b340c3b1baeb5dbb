#!/usr/bin/env python3
"""Writes the fuzzer's own seeds (tests/fuzz/seeds/): the tiny model (tools/schema/models.hpp,
TinyParams: proj.weight [3, 4], proj.bias, norm.weight, norm.bias [3]) in F16 and in BF16 with the
values where a conversion goes wrong first: subnormals of either sign, the smallest normal, the
largest finite value, zeros of either sign, one. The malformed-file corpus (tests/io/corpus) has
only ordinary values, and the fuzzer took about two minutes to reach an F16 subnormal from it.
    python3 tests/fuzz/make_seeds.py
"""
import json
import os
import struct

NAMES = [("proj.weight", [3, 4]), ("proj.bias", [3]), ("norm.weight", [3]), ("norm.bias", [3])]
EDGES = {
    # sign | exponent | significand, 21 values each
    "F16": [0x0001, 0x8001, 0x0200, 0x03FF, 0x83FF, 0x0400, 0x8400, 0x7BFF, 0xFBFF, 0x0000, 0x8000,
            0x3C00, 0xBC00, 0x3555, 0x0155, 0x7800, 0x0401, 0x2E66, 0x8200, 0x0010, 0x5640],
    "BF16": [0x0001, 0x8001, 0x0040, 0x007F, 0x807F, 0x0080, 0x8080, 0x7F7F, 0xFF7F, 0x0000, 0x8000,
             0x3F80, 0xBF80, 0x3EAB, 0x0055, 0x7F00, 0x0081, 0x3DCD, 0x8040, 0x0010, 0x4049],
}


def write(path, dtype, values):
    header, data = {"__metadata__": {"format": "statiformer", "layout": "2"}}, b""
    it = iter(values)
    for name, shape in NAMES:
        n = shape[0] * (shape[1] if len(shape) > 1 else 1)
        chunk = struct.pack("<%dH" % n, *[next(it) for _ in range(n)])
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(chunk)]}
        data += chunk
    text = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
for dtype, values in EDGES.items():
    write(os.path.join(here, "edges_%s.safetensors" % dtype.lower()), dtype, values)

# An int8 file (tools/schema/models.hpp EncStackW8a8: I8 weights in k-quads, F32 weight_scale
# vectors, the number_format hyperparameter), so the fuzzer starts inside the loader's int8 paths:
# a seeded float nn.TransformerEncoder quantized by tools/export.py --quantize w8a8 against the
# committed schema. Needs Debian's python3-torch; skipped without it.
try:
    import sys
    import tempfile

    import torch

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    sys.path.insert(0, os.path.join(root, "tools"))
    import export

    torch.manual_seed(8)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 10, dropout=0.0)
    module = torch.nn.TransformerEncoder(layer, 1, norm=torch.nn.LayerNorm(8))
    export.export(module.state_dict(), os.path.join(root, "tests", "io", "schemas", "enc_w8a8.json"),
                  map_name="torch", safetensors=os.path.join(here, "enc_w8a8.safetensors"), quantize="w8a8")

    # An int8 decoder-only model (tools/schema/models.hpp GptW8a8): a seeded GPT of tools/stf_torch.py
    # through tools/export.py --emit-model --quantize w8a8 (its header is not kept)
    torch.manual_seed(9)
    gpt = export.stf_torch.TorchDecoderOnly(5, 1, 8, 10, 2, final_norm=True, block="gpt")
    with tempfile.TemporaryDirectory() as tmp:
        export.emit_model(gpt, "gpt_w8a8", 3, os.path.join(tmp, "gpt_w8a8.hpp"), quantize="w8a8",
                          safetensors=os.path.join(here, "gpt_w8a8.safetensors"))
except ImportError:
    print("make_seeds: no torch: the int8 seed is not written")
