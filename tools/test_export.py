#!/usr/bin/python3
"""Tests of tools/export.py's name maps, checks and writers (a ctest when python3-torch is present).

    /usr/bin/python3 tools/test_export.py

The maps are checked against tools/stf_torch.py's canonical renamings (what the golden tests
use) on PyTorch's own modules, the annotated transformer and tutorial-style modules; the schemas
here are built from those names, the transposed ones marking every Linear weight transposed.
"""

import json
import os
import struct
import sys
import tempfile
import unittest

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import stf_torch as st  # noqa: E402


# hyperparameters as stf_schema prints them for an EncoderLayer<5, 8, 2, 16> (io/hparams.hpp)
LAYER_HPARAMS = {"d_model": "8", "nhead": "2", "dim_feedforward": "16", "norm_first": "false", "activation": "relu",
                 "layer_norm": "torch", "layer_norm_eps": "1e-05", "bias": "true", "mask_fill": "-inf", "seq_len": "5"}


def schema_for(named, transposed=lambda name, t: False, hparams=None):
    """A schema JSON (as stf_schema prints it) for [(name, tensor)]."""
    params = []
    for name, t in named:
        shape = list(t.shape)
        tr = bool(transposed(name, t)) and len(shape) == 2
        params.append({"name": name, "dtype": "F32", "shape": shape, "transposed": tr,
                       "stored_shape": shape[::-1] if tr else shape, "panel": st.WEIGHT_PANEL if tr else 0})
    return {"format": "statiformer-schema", "version": 2, "model": "test",
            "param_count": sum(t.numel() for _, t in named), "hparams": dict(hparams or LAYER_HPARAMS),
            "params": params}


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def linear_weights(name, t):
    return t.dim() == 2 and not name.endswith("embed.weight")


class Tmp:
    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()

    def __del__(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def write_json(self, name, obj):
        with open(self.path(name), "w") as f:
            json.dump(obj, f)
        return self.path(name)


def exported(state, named, map_name, transposed=lambda n, t: False):
    tmp = Tmp()
    schema = tmp.write_json("schema.json", schema_for(named, transposed))
    return export.export(state, schema, map_name)


class Maps(unittest.TestCase):
    def check_same(self, got, named):
        self.assertEqual([e["name"] for e, _ in got], [n for n, _ in named])
        for (e, t), (n, want) in zip(got, named):
            self.assertTrue(torch.equal(t, want.contiguous()), n)

    def test_nn_transformer(self):
        torch.manual_seed(1)
        model = nn.Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True)
        sd = model.state_dict()
        named = st.canonical_from_torch(sd)
        for map_name in ("torch", "auto"):
            self.check_same(exported(sd, named, map_name), named)

    def test_encoder_layer_and_decoder_layer(self):
        for layer in (nn.TransformerEncoderLayer(8, 2, 16), nn.TransformerDecoderLayer(8, 2, 16)):
            sd = layer.state_dict()
            named = st.canonical_from_torch(sd, layer_level=True)
            self.assertIn("ff.linear1.weight", [n for n, _ in named])
            self.check_same(exported(sd, named, "torch"), named)

    def test_multihead_attention_packed_and_separate(self):
        mha = nn.MultiheadAttention(8, 2)
        sd = mha.state_dict()
        got = exported(sd, [(n, t) for n, t in st.canonical_from_torch(sd)], "torch")
        w = sd["in_proj_weight"]
        self.assertEqual([e["name"] for e, _ in got],
                         ["q.weight", "k.weight", "v.weight", "q.bias", "k.bias", "v.bias", "o.weight", "o.bias"])
        self.assertTrue(torch.equal(got[1][1], w[8:16]))
        separate = nn.MultiheadAttention(8, 2, kdim=8, vdim=8, bias=False)
        separate._qkv_same_embed_dim = False
        sd2 = {"q_proj_weight": torch.randn(8, 8), "k_proj_weight": torch.randn(8, 8),
               "v_proj_weight": torch.randn(8, 8), "out_proj.weight": torch.randn(8, 8)}
        named2 = [("q.weight", sd2["q_proj_weight"]), ("k.weight", sd2["k_proj_weight"]),
                  ("v.weight", sd2["v_proj_weight"]), ("o.weight", sd2["out_proj.weight"])]
        self.check_same(exported(sd2, named2, "torch"), named2)

    def test_annotated_transformer(self):
        torch.manual_seed(2)
        model = st.make_model(11, 11, 2, 8, 16, 2)
        sd = model.state_dict()
        named = st.canonical_from_annotated(sd)
        got = exported(sd, named, "annotated")
        self.check_same(got, named)
        self.assertIn("encoder.layers.0.norm2.weight", [e["name"] for e, _ in got])  # sublayer.1.norm.a_2
        self.check_same(exported(sd, named, "auto"), named)

    def test_tutorial_modules(self):
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(8, 8) for _ in range(4))

        class Layer(nn.Module):
            def __init__(self, sequential):
                super().__init__()
                self.self_attn = Attention()
                if sequential:
                    self.feed_forward = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
                else:
                    self.ff_proj, self.output_proj = nn.Linear(8, 16), nn.Linear(16, 8)
                self.norm1, self.norm2 = nn.LayerNorm(8), nn.LayerNorm(8)

        for sequential in (True, False):
            sd = {f"layers.0.{k}": v for k, v in Layer(sequential).state_dict().items()}
            names = [f"layers.0.self_attn.{p}.{leaf}" for p in "qkvo" for leaf in ("weight", "bias")]
            names += [f"layers.0.ff.linear{i}.{leaf}" for i in (1, 2) for leaf in ("weight", "bias")]
            names += [f"layers.0.norm{i}.{leaf}" for i in (1, 2) for leaf in ("weight", "bias")]
            tensors = list(sd.values())
            named = list(zip(names, tensors))
            self.check_same(exported(sd, named, "tutorial"), named)
            self.check_same(exported(sd, named, "auto"), named)


class Checks(unittest.TestCase):
    def test_every_problem_is_reported_by_name(self):
        layer = nn.TransformerEncoderLayer(8, 2, 16)
        sd = dict(layer.state_dict())
        named = st.canonical_from_torch(sd, layer_level=True)
        del sd["norm2.bias"]
        sd["extra.weight"] = torch.zeros(3)
        sd["linear1.bias"] = torch.zeros(15)
        sd["norm1.weight"] = sd["norm1.weight"].double()
        with self.assertRaises(export.ExportError) as e:
            exported(sd, named, "torch")
        text = str(e.exception)
        self.assertIn("missing: 'norm2.bias'", text)
        self.assertIn("unexpected: 'extra.weight'", text)
        self.assertIn("shape: 'ff.linear1.bias' (from 'linear1.bias') is [15], expected [16]", text)
        self.assertIn("dtype: 'norm1.weight' is torch.float64", text)
        self.assertEqual(len(e.exception.problems), 4)

    def test_non_finite_rejected(self):
        lin = nn.Linear(4, 3)
        sd = lin.state_dict()
        sd["weight"][0, 0] = float("nan")
        with self.assertRaises(export.ExportError):
            exported(sd, list(sd.items()), "torch")


class Writers(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(3)
        self.layer = nn.TransformerEncoderLayer(8, 2, 16)
        self.sd = self.layer.state_dict()
        self.named = st.canonical_from_torch(self.sd, layer_level=True)

    def test_transposed_entries_are_written_transposed_as_the_schema_says(self):
        tmp = Tmp()
        schema = tmp.write_json("s.json", schema_for(self.named, linear_weights))
        out = tmp.path("w.safetensors")
        got = export.export(self.sd, schema, "torch", header=tmp.path("w.hpp"), namespace="ns", safetensors=out)
        for (entry, t), (name, want) in zip(got, self.named):
            if entry["transposed"]:
                self.assertTrue(torch.equal(t, want.t()), name)
            else:
                self.assertTrue(torch.equal(t, want), name)
        blob = read(out)
        (n,) = struct.unpack("<Q", blob[:8])
        header = json.loads(blob[8:8 + n])
        self.assertEqual((8 + n) % 64, 0)
        self.assertEqual(header["__metadata__"]["format"], "statiformer")
        self.assertEqual(header["__metadata__"]["layout"], "2")
        data = blob[8 + n:]
        end = 0
        for entry, t in got:
            h = header[entry["name"]]
            self.assertEqual(h["shape"], entry["stored_shape"])
            b, e = h["data_offsets"]
            self.assertEqual(b, end)
            end = e
            values = struct.unpack(f"<{t.numel()}f", data[b:e])
            self.assertEqual(list(values), t.reshape(-1).tolist())
        self.assertEqual(end, len(data))
        text = read(tmp.path("w.hpp"), "r")
        self.assertIn("alignas(64) inline constexpr float self_attn_q_weight[8 * 8]", text)
        self.assertIn("stored transposed [16, 8] (PyTorch [8, 16])", text)  # linear2.weight
        self.assertIn('{"ff.linear1.weight", ff_linear1_weight, 8 * 16}', text)

    def test_wide_transposed_matrices_are_written_in_column_panels(self):
        # d_ff 100: linear1.weight is stored [8, 100], two panels of 64 and 36 columns
        torch.manual_seed(4)
        layer = nn.TransformerEncoderLayer(8, 2, 100)
        named = st.canonical_from_torch(layer.state_dict(), layer_level=True)
        tmp = Tmp()
        schema = tmp.write_json("s.json", schema_for(named, linear_weights))
        got = export.export(layer.state_dict(), schema, "torch")
        seen = 0
        for (entry, t), (name, want) in zip(got, named):
            if not entry["transposed"]:
                continue
            rows, cols = entry["stored_shape"]
            flat, plain = t.reshape(-1), want.t()
            for r in range(rows):
                for c in range(cols):
                    if cols <= 64:
                        i = r * cols + c
                    else:
                        p0 = c // 64 * 64
                        i = p0 * rows + r * min(64, cols - p0) + (c - p0)
                    self.assertEqual(flat[i].item(), plain[r, c].item(), (name, r, c))
            seen += cols > 64
        self.assertEqual(seen, 1)  # linear1.weight

    def test_whole_module_checkpoint_and_determinism(self):
        tmp = Tmp()
        torch.save(self.layer, tmp.path("m.pt"))
        schema = tmp.write_json("s.json", schema_for(self.named))
        a, b = tmp.path("a.safetensors"), tmp.path("b.safetensors")
        export.export(tmp.path("m.pt"), schema, "torch", safetensors=a)
        torch.save(self.sd, tmp.path("sd.pt"))
        export.export(tmp.path("sd.pt"), schema, "torch", safetensors=b)
        self.assertEqual(read(a), read(b))

    def test_hyperparameters_travel_in_the_metadata_and_the_header(self):
        tmp = Tmp()
        schema = tmp.write_json("s.json", schema_for(self.named, linear_weights))
        out, hpp = tmp.path("w.safetensors"), tmp.path("w.hpp")
        export.export(self.sd, schema, "torch", header=hpp, namespace="ns", safetensors=out)
        blob = read(out)
        (n,) = struct.unpack("<Q", blob[:8])
        meta = json.loads(blob[8:8 + n])["__metadata__"]
        self.assertEqual(meta, {"format": "statiformer", "layout": "2", "model": "test"} | LAYER_HPARAMS)
        text = read(hpp, "r")
        for key, value in LAYER_HPARAMS.items():
            self.assertIn(f'{{"{key}={value}", nullptr, 0}},', text)
        # the records end the table, after every tensor
        self.assertLess(text.index('"ff.linear1.weight"'), text.index('"d_model=8"'))

    def test_schema_without_hyperparameters_is_refused(self):
        tmp = Tmp()
        bare = schema_for(self.named)
        del bare["hparams"]
        with self.assertRaises(export.ExportError) as e:
            export.export(self.sd, tmp.write_json("s.json", bare), "torch")
        self.assertIn('no "hparams"', str(e.exception))
        for bad in ({"nhead": 2}, {"layout": "3"}, {"a=b": "1"}, {"x": 'a"b'}):
            with self.assertRaises(export.ExportError, msg=str(bad)) as e:
                export.export(self.sd, tmp.write_json("s.json", schema_for(self.named, hparams=bad)), "torch")
            self.assertIn("hyperparameter", str(e.exception))

    def test_committed_schemas_hyperparameters_are_pytorchs(self):
        # tests/io/schemas/enc_stack.json is stf_schema's for nn.TransformerEncoder(
        # nn.TransformerEncoderLayer(8, 2, 100), 2, norm=nn.LayerNorm(8)): its texts are that module's values
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io", "schemas",
                               "enc_stack.json")) as f:
            hp = json.load(f)["hparams"]
        layer = nn.TransformerEncoderLayer(8, 2, 100)
        enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
        self.assertEqual(hp["num_layers"], str(enc.num_layers))
        for i, m in enumerate(enc.layers):
            p = f"layers.{i}."
            self.assertEqual(hp[p + "nhead"], str(m.self_attn.num_heads))
            self.assertEqual(hp[p + "d_model"], str(m.self_attn.embed_dim))
            self.assertEqual(hp[p + "dim_feedforward"], str(m.linear1.out_features))
            self.assertEqual(hp[p + "norm_first"], str(m.norm_first).lower())
            self.assertEqual(hp[p + "layer_norm_eps"], export.float_text(m.norm1.eps))
            self.assertEqual(hp[p + "activation"], "relu")
        self.assertEqual(hp["norm.eps"], export.float_text(enc.norm.eps))
        self.assertEqual(export.float_text(1e-6), "1e-06")
        self.assertEqual(export.float_text(0.25), "2.5e-01")

    def test_activation_text_names_modules_functions_and_callables(self):
        import functools
        F = torch.nn.functional
        cases = ((F.relu, "relu"), (nn.ReLU(), "relu"), (F.gelu, "gelu"), (nn.GELU(), "gelu"),
                 (nn.GELU(approximate="tanh"), "gelu_tanh"),
                 (lambda x: F.gelu(x, approximate="tanh"), "gelu_tanh"),  # how PyTorch 1.13's layer takes it
                 (functools.partial(F.gelu, approximate="tanh"), "gelu_tanh"), (lambda x: F.gelu(x), "gelu"))
        for fn, want in cases:
            self.assertEqual(export._activation_text(fn), want)
        for other in (torch.tanh, F.silu, lambda x: x * 0.5, lambda x: F.gelu(x * 1.0000001, approximate="tanh")):
            self.assertTrue(export._activation_text(other).startswith("unsupported"))
        layer = nn.TransformerEncoderLayer(8, 2, 16, activation=lambda x: F.gelu(x, approximate="tanh"),
                                           layer_norm_eps=1e-12)
        hp = export.module_hparams(layer, [])
        self.assertEqual(hp["activation"], "gelu_tanh")
        self.assertEqual(hp["layer_norm_eps"], "1e-12")

    def test_whole_module_hyperparameters_are_checked_against_the_schema(self):
        tmp = Tmp()
        torch.save(self.layer, tmp.path("m.pt"))  # nn.TransformerEncoderLayer(8, 2, 16): 2 heads, post-norm, relu
        for key, wrong in (("nhead", "4"), ("norm_first", "true"), ("activation", "gelu"),
                           ("layer_norm_eps", "1e-06"), ("dim_feedforward", "32")):
            hp = dict(LAYER_HPARAMS, **{key: wrong})
            schema = tmp.write_json("s.json", schema_for(self.named, hparams=hp))
            with self.assertRaises(export.ExportError, msg=key) as e:
                export.export(tmp.path("m.pt"), schema, "torch")
            self.assertIn(f"hyperparameter {key}: checkpoint {LAYER_HPARAMS[key]}, schema {wrong}", str(e.exception))
        # a state_dict carries none: only the schema's are written
        export.export(self.sd, tmp.write_json("s.json", schema_for(self.named, hparams=hp)), "torch")
        # the module as such, not only its file
        with self.assertRaises(export.ExportError):
            export.export(self.layer, schema, "torch")

    def test_command_line_reports_and_writes_nothing_on_error(self):
        tmp = Tmp()
        torch.save(self.sd, tmp.path("sd.pt"))
        schema = tmp.write_json("s.json", schema_for(self.named[:-1]))  # norm2.bias unexpected
        out = tmp.path("x.safetensors")
        self.assertEqual(export.main([tmp.path("sd.pt"), schema, "--map", "torch", "--safetensors", out]), 1)
        self.assertFalse(os.path.exists(out))
        schema = tmp.write_json("s2.json", schema_for(self.named))
        self.assertEqual(export.main([tmp.path("sd.pt"), schema, "--map", "torch", "--safetensors", out]), 0)
        self.assertTrue(os.path.exists(out))


if __name__ == "__main__":
    torch.set_num_threads(1)
    unittest.main(verbosity=1)
