#!/usr/bin/python3
"""Tests of tools/export.py's name maps, checks and writers (a ctest when python3-torch is present).

    /usr/bin/python3 tools/test_export.py

The maps are checked against tools/stf_torch.py's canonical renamings (what the golden tests
use) on PyTorch's own modules, the annotated transformer and tutorial-style modules; the schemas
here are built from those names, the transposed ones marking every Linear weight transposed.
"""

import contextlib
import io
import json
import re
import os
import struct
import subprocess
import sys
import tempfile
import types
import unittest

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402
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


def torch_safetensors(state, metadata=None, dtype_text="F32"):
    """A PyTorch-layout .safetensors file (PyTorch's names and shapes), as safetensors.torch.save writes."""
    header, blobs, offset = ({"__metadata__": metadata} if metadata else {}), [], 0
    for k, t in state.items():
        blob = t.detach().contiguous().numpy().tobytes()
        header[k] = {"dtype": dtype_text, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def my_activation(x):  # a callable the exporter cannot identify
    return torch.tanh(x)


class EmitModel(unittest.TestCase):
    """--emit-model: the schema derived from the module, the header, and every refusal (one line, exit 2)."""

    def setUp(self):
        torch.manual_seed(3)
        self.tmp = Tmp()
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 24, 0.0, norm_first=True), 2,
                                         nn.LayerNorm(8), enable_nested_tensor=False)
        self.config = {"module": "TransformerEncoder", "d_model": 8, "nhead": 2, "dim_feedforward": 24,
                       "num_layers": 2, "norm_first": True, "final_norm": True}

    def emit_error(self, argv_or_module, expected, **kw):
        """main(argv) exits 2 with one stderr line holding `expected` and writes no header (or, for a
        module, emit_model raises an ExportError with that text)."""
        hpp = self.tmp.path("err.hpp")
        if isinstance(argv_or_module, nn.Module):
            with self.assertRaises(export.ExportError) as e:
                export.emit_model(argv_or_module, "m", 5, hpp, **kw)
            self.assertEqual(len(e.exception.problems), 1)
            self.assertIn(expected, e.exception.problems[0])
        else:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = export.main(argv_or_module + ["--header", hpp])
            self.assertEqual(rc, 2, err.getvalue())
            lines = err.getvalue().splitlines()
            self.assertEqual(len(lines), 1, err.getvalue())
            self.assertIn(expected, lines[0])
        self.assertFalse(os.path.exists(hpp))

    def test_derived_schema_is_stf_schemas(self):
        # tests/io/schemas/enc_stack.json: stf_schema's for EncoderStack<EncoderLayer<5, 8, 2, 100>, 2, true>
        # (a ctest checks the committed file against the C++ type)
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io", "schemas",
                               "enc_stack.json")) as f:
            want = json.load(f)
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 100), 2, norm=nn.LayerNorm(8))
        got = export.derived_schema(export.describe_module(enc), 5, "enc_stack")
        self.assertEqual(got, want)
        self.assertEqual(list(got["hparams"]), list(want["hparams"]))
        self.assertEqual(export.cpp_model_type(export.describe_module(enc), 5),
                         "stf::EncoderStack<stf::EncoderLayer<5, 8, 2, 100, stf::LayerOptions{.norm = "
                         "stf::NormPlacement::post, .activation = stf::Activation::relu}>, 2, true>")
        # a lone layer: the layer's own keys (as LAYER_HPARAMS, stf_schema's for EncoderLayer<5, 8, 2, 16>)
        lone = export.derived_schema(export.describe_module(nn.TransformerEncoderLayer(8, 2, 16)), 5, "l")
        self.assertEqual(lone["hparams"], LAYER_HPARAMS)
        self.assertEqual(lone["params"][0]["name"], "self_attn.q.weight")

    def test_module_state_dict_and_safetensors_give_one_header(self):
        t = self.tmp
        torch.save(self.enc, t.path("m.pt"))
        torch.save(self.enc.state_dict(), t.path("sd.pt"))
        with open(t.path("sd.safetensors"), "wb") as f:
            f.write(torch_safetensors(self.enc.state_dict()))
        cfg = t.write_json("c.json", self.config)
        texts = []
        for i, argv in enumerate(([t.path("m.pt")], [t.path("sd.pt"), "--config", cfg],
                                  [t.path("sd.safetensors"), "--config", cfg])):
            hpp = t.path(f"{i}.hpp")
            self.assertEqual(export.main(argv + ["--emit-model", "m", "--seq-len", "6", "--header", hpp]), 0)
            texts.append(read(hpp, "r").split("\n", 1)[1])  # line 1 names the input file
        self.assertEqual(texts[0], texts[1])
        self.assertEqual(texts[0], texts[2])
        # --safetensors beside the header: the derived schema's hyperparameters in the metadata
        st_path = t.path("m.safetensors")
        export.main([t.path("m.pt"), "--emit-model", "m", "--seq-len", "6", "--header", t.path("x.hpp"),
                     "--safetensors", st_path])
        blob = read(st_path)
        meta = json.loads(blob[8:8 + struct.unpack("<Q", blob[:8])[0]])["__metadata__"]
        self.assertEqual(meta["layers.1.nhead"], "2")
        self.assertEqual(meta["norm.eps"], "1e-05")
        text = texts[0]
        self.assertIn("using Model = stf::EncoderStack<stf::EncoderLayer<6, 8, 2, 24, stf::LayerOptions{.norm = "
                      "stf::NormPlacement::pre, .activation = stf::Activation::relu}>, 2, true>;", text)
        self.assertIn('{"layers.1.norm_first=true", nullptr, 0},', text)
        self.assertIn("inline stf::BindResult bind(Model::Params& params)", text)
        self.assertIn("inline float check(const Model& model)", text)
        # the stored output is PyTorch's for the stored input
        x = torch.randn(6, 8, generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            y = self.enc.eval()(x.unsqueeze(1)).reshape(-1)
        self.assertIn("test_output[48] = {\n    " + ", ".join(export.cpp_float(v) for v in y[:8].tolist()), text)

    def test_records_read_from_modules_are_stf_schemas(self):
        # tools/train_demo.py writes the demo's records from its PyTorch model: those of the C++ type
        # (tests/io/schemas/demo.json, checked against stf_schema demo by a ctest)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import train_demo
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io", "schemas",
                               "demo.json")) as f:
            want = json.load(f)["hparams"]
        got = export.encdec_hparams(train_demo.build_model(), train_demo.SRC_LEN, train_demo.TGT_LEN)
        self.assertEqual(list(got.items()), list(want.items()))
        self.assertEqual(export._cpp_member("layers.10.norm1.weight"), "layers[10].norm1.weight")

    def test_unsupported_modules(self):
        self.emit_error(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU()), "Sequential: not a module --emit-model supports")
        self.emit_error(nn.Transformer(8, 2, 1, 1, 16), "Transformer: not a module --emit-model supports (export its "
                        "encoder")
        custom = nn.TransformerEncoderLayer(8, 2, 16)
        custom.extra = nn.Linear(8, 8)
        self.emit_error(custom, "custom sublayer(s) extra: not supported")

        class Sub(nn.TransformerEncoderLayer):
            pass
        self.emit_error(Sub(8, 2, 16), "Sub: not a module --emit-model supports")
        self.emit_error(nn.TransformerEncoder(Sub(8, 2, 16), 2, enable_nested_tensor=False),
                        "layers.0: Sub is not an nn.TransformerEncoderLayer")
        self.emit_error(nn.TransformerEncoderLayer(8, 2, 16, activation=my_activation),
                        "activation unsupported (my_activation): statiformer has relu, gelu (erf form) and "
                        "gelu_tanh only")

    def test_tanh_gelu_and_eps_are_expressed(self):
        # PyTorch 1.13's layer takes the tanh GELU as a module or a callable; any eps > 0 is a LayerOption
        layer = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU(approximate="tanh"), layer_norm_eps=1e-6)
        spec = export.describe_module(layer)
        self.assertEqual(export.cpp_model_type(spec, 5),
                         "stf::EncoderLayer<5, 8, 2, 16, stf::LayerOptions{.norm = stf::NormPlacement::post, "
                         ".activation = stf::Activation::gelu_tanh, .layer_norm_eps = 1e-06f}>")
        self.assertEqual(export.derived_schema(spec, 5, "m")["hparams"]["layer_norm_eps"], "1e-06")
        default = export.describe_module(nn.TransformerEncoderLayer(8, 2, 16))
        self.assertNotIn("layer_norm_eps", export.cpp_model_type(default, 5))

    def test_eps(self):
        self.emit_error(nn.TransformerEncoderLayer(8, 2, 16, layer_norm_eps=float("inf")),
                        "layer_norm_eps inf: statiformer's LayerNorm takes a finite eps >= 0")
        self.enc.layers[1].norm1.eps = 1e-6
        self.emit_error(self.enc, "layers.1: norm1.eps 1e-06 and norm2.eps 1e-05 differ")
        self.enc.layers[1].norm2.eps = 1e-6
        self.emit_error(self.enc, "layers.1.layer_norm_eps 1e-06 differs from layers.0.layer_norm_eps 1e-05")
        self.enc.layers[1].norm1.eps = self.enc.layers[1].norm2.eps = 1e-5
        self.enc.norm.eps = 1e-6
        self.emit_error(self.enc, "norm.eps 1e-06 differs from the layers' 1e-05")

    def test_command_line_refusals(self):
        t = self.tmp
        emit = ["--emit-model", "m", "--seq-len", "5"]
        torch.save(self.enc, t.path("m.pt"))
        torch.save(self.enc.state_dict(), t.path("sd.pt"))
        cfg = t.write_json("c.json", self.config)
        self.emit_error([t.path("sd.pt")] + emit, "without its constructor arguments: pass --config")
        self.emit_error([t.path("m.pt"), "--config", cfg] + emit, "a whole module, which carries its own "
                        "hyperparameters: drop --config")
        self.emit_error([t.path("sd.pt"), "--config", t.write_json("c2.json", dict(self.config, d_model=16, nhead=4))]
                        + emit, "shapes do not match")
        self.emit_error([t.path("sd.pt"), "--config", t.write_json("c3.json", dict(self.config, num_layers=3))]
                        + emit, "missing 'layers.2.self_attn.in_proj_weight'")
        self.emit_error([t.path("sd.pt"), "--config", t.write_json("c4.json", dict(self.config, final_norm=False))]
                        + emit, "unexpected 'norm.weight'")
        self.emit_error([t.path("sd.pt"), "--config", t.write_json("c5.json", dict(self.config, heads=2))] + emit,
                        "unknown key(s) heads")
        self.emit_error([t.path("sd.pt"), "--config", t.write_json("c6.json", dict(self.config, nhead=3))] + emit,
                        "d_model 8 is not a multiple of nhead 3")
        self.emit_error([t.path("sd.pt"), "--config", t.write_json("c7.json", dict(self.config, module="Transformer"))]
                        + emit, "\"module\" 'Transformer': --config describes TransformerEncoder or")
        self.emit_error([t.path("m.pt"), "--emit-model", "m", "--seq-len", "0"], "--seq-len 0: a positive number")
        self.emit_error([t.path("m.pt"), "--emit-model", "my-model", "--seq-len", "5"], "a C++ identifier is needed")
        self.emit_error([t.path("m.pt"), "--emit-model", "m"], "--emit-model needs --header and --seq-len")
        self.emit_error([t.path("m.pt"), "s.json"] + emit, "SCHEMA not with --emit-model")
        self.emit_error([t.path("m.pt"), "--int8-attention"] + emit, "--int8-attention: an option of --quantize "
                        "w8a8 (int8 inputs of every product), not float32")
        self.emit_error([t.path("m.pt"), "--quantize", "w8a32", "--int8-attention"] + emit,
                        "--int8-attention: an option of --quantize w8a8 (int8 inputs of every product), not w8a32")
        self.emit_error([t.path("m.pt"), "s.json", "--int8-attention"], "--int8-attention is for --emit-model")

    def test_files_it_cannot_read(self):
        t = self.tmp
        emit = ["--emit-model", "m", "--seq-len", "5"]
        cfg = t.write_json("c.json", self.config)
        sd = self.enc.state_dict()
        # statiformer's own layout: written by export.py, not a PyTorch checkpoint
        with open(t.path("stf.safetensors"), "wb") as f:
            f.write(torch_safetensors(sd, {"format": "statiformer", "layout": "2"}))
        self.emit_error([t.path("stf.safetensors"), "--config", cfg] + emit, "already in statiformer's stored layout")
        with open(t.path("i64.safetensors"), "wb") as f:
            f.write(torch_safetensors({"layers.0.norm1.weight": torch.zeros(8, dtype=torch.int64)}, None, "I64"))
        self.emit_error([t.path("i64.safetensors"), "--config", cfg] + emit,
                        "tensor 'layers.0.norm1.weight' of dtype I64: cannot map it")
        with open(t.path("junk.pt"), "wb") as f:
            f.write(b"not a checkpoint at all")
        self.emit_error([t.path("junk.pt")] + emit, "not a torch.save file nor a .safetensors file")
        self.emit_error([t.path("absent.pt")] + emit, "no such file")
        # a whole module whose class is not importable where the exporter runs
        user = types.ModuleType("user_models_for_test")
        exec("import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.fc = torch.nn.Linear(2, 2)\n", user.__dict__)
        sys.modules["user_models_for_test"] = user
        try:
            torch.save(user.Net(), t.path("pickled.pt"))
        finally:
            del sys.modules["user_models_for_test"]
        self.emit_error([t.path("pickled.pt")] + emit, "a pickled whole module whose class cannot be imported here")
        # the schema path: the same readers, the same one-line problems
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(export.main([t.path("junk.pt"), t.write_json("s.json", schema_for([]))]), 1)
        self.assertIn("not a torch.save file nor a .safetensors file", err.getvalue())


class EmitDecoderOnly(unittest.TestCase):
    """--emit-model of a decoder-only model (tools/stf_torch.TorchDecoderOnly) as stf::Gpt: the derived
    schema is stf_schema's, the header's stored test is PyTorch's, and what it cannot express or
    run is one line, exit 2. (The header compiled and run: the README's one-compile ctest.)"""

    def setUp(self):
        torch.manual_seed(5)
        self.tmp = Tmp()
        self.gpt = st.TorchDecoderOnly(13, 2, 16, 32, 2, final_norm=True, block="gpt")
        torch.save(self.gpt, self.tmp.path("gpt.pt"))

    def emit_error(self, argv, expected):
        EmitModel.emit_error(self, argv, expected)

    def test_derived_schema_is_stf_schemas(self):
        # tests/io/schemas/gpt_hp.json: stf_schema's for Gpt<3, 5, 4, 2, 8, 1> (a ctest checks it against the type)
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io", "schemas",
                               "gpt_hp.json")) as f:
            want = json.load(f)
        m = st.TorchDecoderOnly(5, 1, 4, 8, 2, final_norm=True)
        spec = export.describe_decoder_only(m, 3)
        got = export.decoder_only_schema(spec, 3, "gpt_hp")
        self.assertEqual(got, want)
        self.assertEqual(list(got["hparams"]), list(want["hparams"]))
        self.assertEqual(export.decoder_only_hparams(m, 3), want["hparams"])
        self.assertEqual(export.decoder_only_cpp_type(spec, 3),
                         "stf::Gpt<3, 5, 4, 2, 8, 1, stf::LayerOptions{.norm = stf::NormPlacement::post, "
                         ".activation = stf::Activation::relu}, true>")
        # the hand-written GPT block: pre-norm, erf GELU
        spec = export.describe_decoder_only(self.gpt, 12)
        self.assertEqual(export.decoder_only_cpp_type(spec, 12),
                         "stf::Gpt<12, 13, 16, 2, 32, 2, stf::LayerOptions{.norm = stf::NormPlacement::pre, "
                         ".activation = stf::Activation::gelu}, true>")

    def test_header_holds_pytorchs_prompt_logprobs_and_greedy_tokens(self):
        t = self.tmp
        hpp, sft = t.path("g.hpp"), t.path("g.safetensors")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = export.main([t.path("gpt.pt"), "--emit-model", "g", "--seq-len", "12", "--header", hpp,
                              "--prompt-tokens", "3,1,4", "--new-tokens", "9", "--safetensors", sft])
        self.assertEqual(rc, 0)
        self.assertIn("test prompt of 3 tokens, 9 greedy tokens", out.getvalue())
        text = read(hpp, "r")
        self.assertIn("using Model = stf::Gpt<12, 13, 16, 2, 32, 2,", text)
        self.assertIn('{"layers.1.causal=true", nullptr, 0},', text)
        self.assertIn('{"embed.num_embeddings=13", nullptr, 0},', text)
        self.assertIn("inline constexpr Model::Params bound_model_params = bound_params();", text)
        self.assertIn("  p.stack.layers[1].ff.linear2.bias = ", text)
        self.assertIn("inline CheckResult check(Model& model)", text)
        prompt_lp, tokens, steps, _ = st.greedy_generate(self.gpt.train(), torch.tensor([3, 1, 4]), 9)
        self.assertIn("inline constexpr int test_prompt[3] = {\n    3, 1, 4};", text)
        self.assertIn("inline constexpr int test_tokens[9] = {\n    " + ", ".join(str(int(x)) for x in tokens) + "};",
                      text)
        for name, t_ in (("test_prompt_logprobs[39]", prompt_lp), ("test_step_logprobs[117]", steps)):
            self.assertIn(name + " = {\n    " + ", ".join(export.cpp_float(v) for v in t_.reshape(-1)[:8].tolist()),
                          text)
        blob = read(sft)
        meta = json.loads(blob[8:8 + struct.unpack("<Q", blob[:8])[0]])["__metadata__"]
        self.assertEqual(meta["layers.0.causal"], "true")
        self.assertEqual(meta["layers.0.seq_len"], "12")
        # deterministic: the same module gives the same header
        export.main([t.path("gpt.pt"), "--emit-model", "g", "--seq-len", "12", "--header", t.path("h2.hpp"),
                     "--prompt-tokens", "3,1,4", "--new-tokens", "9"])
        self.assertEqual(read(t.path("h2.hpp"), "r").split("\n", 1)[1], text.split("\n", 1)[1])

    def test_refusals(self):
        t = self.tmp
        emit = [t.path("gpt.pt"), "--emit-model", "g", "--seq-len", "12"]
        self.emit_error(emit + ["--prompt-tokens", "3,13"], "--prompt-tokens: token 13 out of range [0, 13)")
        self.emit_error(emit + ["--prompt-tokens", "-1"], "--prompt-tokens: token -1 out of range [0, 13)")
        self.emit_error(emit + ["--prompt-tokens", ",".join(["1"] * 13)],
                        "--prompt-tokens: a prompt of 13 tokens: the model holds 1 to 12")
        self.emit_error(emit + ["--prompt-tokens", "1,2", "--new-tokens", "12"],
                        "--new-tokens 12: a prompt of 2 tokens leaves room for 1 to 11 new tokens in a capacity of 12")
        self.emit_error(emit + ["--new-tokens", "0"], "--new-tokens 0:")
        self.emit_error(emit + ["--prompt-tokens", "a,b"], "--prompt-tokens 'a,b': comma-separated integers")
        self.emit_error([t.path("gpt.pt"), "--emit-model", "g", "--seq-len", "6000"],
                        "--seq-len 6000: over the positional encoding's 5000 positions")
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1, enable_nested_tensor=False)
        torch.save(enc, t.path("enc.pt"))
        self.emit_error([t.path("enc.pt"), "--emit-model", "m", "--seq-len", "4", "--prompt-tokens", "1"],
                        "--prompt-tokens/--new-tokens: for a decoder-only model, not TransformerEncoder")
        # and the encoder-decoder's options are refused for other models, not ignored
        self.emit_error(emit + ["--tgt-len", "3"],
                        "--tgt-len/--start-token: for the encoder-decoder, not TorchDecoderOnly")
        self.emit_error([t.path("enc.pt"), "--emit-model", "m", "--seq-len", "4", "--start-token", "1"],
                        "--tgt-len/--start-token: for the encoder-decoder, not TransformerEncoder")
        self.emit_error([t.path("gpt.pt"), t.write_json("s.json", schema_for([])), "--new-tokens", "3"],
                        "--prompt-tokens/--new-tokens are for --emit-model of a decoder-only model")
        # what Gpt cannot compute
        other_eps = st.TorchDecoderOnly(13, 2, 16, 32, 2, block="gpt")
        other_eps.layers[1].norm1.eps = other_eps.layers[1].norm2.eps = 1e-6
        self.emit_module_error(other_eps, "layers.1.layer_norm_eps 1e-06 differs from layers.0.layer_norm_eps 1e-05")

        class MyBlock(st.GptBlock):
            pass
        custom = st.TorchDecoderOnly(13, 1, 16, 32, 2, block="gpt")
        custom.layers[0] = MyBlock(16, 2, 32)
        self.emit_module_error(custom, "layers.0: MyBlock is not a tools/stf_torch.GptBlock: not supported")
        enc_layers = st.TorchDecoderOnly(13, 1, 16, 32, 2, activation=my_activation)
        self.emit_module_error(enc_layers, "activation")

        class MyGpt(st.TorchDecoderOnly):  # may compute something else
            pass
        self.emit_module_error(MyGpt(13, 1, 16, 32, 2), "MyGpt: not a module --emit-model supports")

    def emit_module_error(self, module, expected):
        with self.assertRaises(export.ExportError) as e:
            export.emit_model(module, "m", 8, self.tmp.path("err.hpp"))
        self.assertEqual(len(e.exception.problems), 1)
        self.assertIn(expected, e.exception.problems[0])
        self.assertFalse(os.path.exists(self.tmp.path("err.hpp")))


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# examples/exported/main.cpp's counterpart for an emitted encoder-decoder: bound by name and at compile
# time, each checked against PyTorch's stored greedy decoding
ENCDEC_MAIN = """#include <cstdio>

#include "m.hpp"

int main() {
  static m::Model by_name, bound;
  if (!m::bind(by_name.params)) return 2;
  bound.params = m::bound_model_params;
  const m::CheckResult a = m::check(by_name), b = m::check(bound);
  const float ra = a.max_abs_error / m::test_logprobs_max_abs, rb = b.max_abs_error / m::test_logprobs_max_abs;
  std::printf("by name %.3g tokens %s; bound %.3g tokens %s\\n", static_cast<double>(ra),
              a.tokens_equal ? "equal" : "DIFFER", static_cast<double>(rb), b.tokens_equal ? "equal" : "DIFFER");
  return a.tokens_equal && b.tokens_equal && ra <= 1e-5f && rb <= 1e-5f ? 0 : 1;
}
"""


class Quantize(unittest.TestCase):
    """--quantize: the int8 schema, the quantization, the refusals (the C++ side: test_quantize.py)."""

    SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io", "schemas")

    def setUp(self):
        self.tmp = Tmp()
        torch.manual_seed(8)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 10, dropout=0.0), 1, norm=nn.LayerNorm(8))

    def test_derived_int8_schema_is_stf_schemas(self):
        # tests/io/schemas/enc_w8a8.json: stf_schema's for the int8 EncoderStack of tools/schema/models.hpp
        with open(os.path.join(self.SCHEMAS, "enc_w8a8.json")) as f:
            want = json.load(f)
        got = export.derived_schema(export.describe_module(self.enc), 3, "enc_w8a8", quantize="w8a8")
        self.assertEqual(got, want)
        self.assertEqual(list(got["hparams"]), list(want["hparams"]))
        self.assertIn(".format = stf::NumberFormat::w8a8", export.cpp_model_type(export.describe_module(self.enc), 3,
                                                                               "w8a8"))

    def test_weights_are_quantized_as_the_scheme_says(self):
        w = torch.tensor([[0.5, -1.0, 0.25, 0.0], [0.0, 0.0, 0.0, 0.0], [3.0, 1.5, -0.75, 0.0126]])
        q, s = st.quantize_weight(w)
        self.assertEqual(s.dtype, torch.float32)
        self.assertEqual(s.tolist()[1], 0.0)  # a channel of zeros: scale 0, q 0
        self.assertEqual(q[1].tolist(), [0, 0, 0, 0])
        self.assertEqual(q[0].tolist(), [64, -127, 32, 0])  # 0.5 / (1 / 127) = 63.5: half to even
        self.assertEqual(q[2].tolist(), [127, 64, -32, 1])  # 1.5 * 127 / 3 = 63.5 -> 64; 0.0126 * 42.33 = 0.53 -> 1
        # stored: [in4, out] in k-quads, [k / 4][o][k % 4]
        order = st.quad_order(q).tolist()
        self.assertEqual(order[:4], q[0].tolist())
        self.assertEqual(order[4:8], q[1].tolist())

    def test_schema_and_flag_must_agree(self):
        schema = os.path.join(self.SCHEMAS, "enc_w8a8.json")
        out = self.tmp.path("w.safetensors")
        for quantize, expected in ((None, "pass --quantize w8a8"), ("w8a32", "the schema's model is w8a8")):
            with self.assertRaises(export.ExportError) as e:
                export.export(self.enc.state_dict(), schema, map_name="torch", safetensors=out, quantize=quantize)
            self.assertIn(expected, e.exception.problems[0])
        with self.assertRaises(export.ExportError) as e:
            export.export(self.enc.state_dict(), os.path.join(self.SCHEMAS, "enc_stack.json"), quantize="w8a8")
        self.assertIn("float32", e.exception.problems[0])
        self.assertFalse(os.path.exists(out))
        tensors = export.export(self.enc.state_dict(), schema, map_name="torch", safetensors=out, quantize="w8a8")
        self.assertEqual(tensors[0][1].dtype, torch.int8)
        self.assertEqual(tensors[1][0]["name"], "layers.0.self_attn.q.weight_scale")
        # the file: I8 weights, F32 scales, the number format in the metadata
        with open(out, "rb") as f:
            data = f.read()
        header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
        self.assertEqual(header["layers.0.self_attn.q.weight"]["dtype"], "I8")
        self.assertEqual(header["layers.0.ff.linear2.weight"]["shape"], [12, 8])  # 10 padded to 12
        self.assertEqual(header["layers.0.self_attn.q.weight_scale"]["dtype"], "F32")
        self.assertEqual(header["__metadata__"]["layers.0.number_format"], "w8a8")

    def test_checkpoint_with_scales_or_non_finite_weights_is_refused(self):
        schema = os.path.join(self.SCHEMAS, "enc_w8a8.json")
        sd = dict(self.enc.state_dict())
        bad = dict(sd)
        bad["layers.0.linear1.weight"] = sd["layers.0.linear1.weight"].clone()
        bad["layers.0.linear1.weight"][0, 0] = float("nan")
        with self.assertRaises(export.ExportError) as e:
            export.export(bad, schema, map_name="torch", quantize="w8a8")
        self.assertIn("cannot be quantized", "; ".join(e.exception.problems))

    def test_derived_int8_decoder_only_schema_is_stf_schemas(self):
        # tests/io/schemas/gpt_w8a8.json: stf_schema's for the int8 Gpt of tools/schema/models.hpp
        with open(os.path.join(self.SCHEMAS, "gpt_w8a8.json")) as f:
            want = json.load(f)
        gpt = st.TorchDecoderOnly(5, 1, 8, 10, 2, final_norm=True, block="gpt")
        spec = export.describe_decoder_only(gpt, 3)
        got = export.decoder_only_schema(spec, 3, "gpt_w8a8", quantize="w8a8")
        self.assertEqual(got, want)
        self.assertEqual(list(got["hparams"]), list(want["hparams"]))
        self.assertEqual(export.decoder_only_cpp_type(spec, 3, "w8a8"),
                         "stf::Gpt<3, 5, 8, 2, 10, 1, stf::LayerOptions{.norm = stf::NormPlacement::pre, "
                         ".activation = stf::Activation::gelu, .format = stf::NumberFormat::w8a8}, true>")

    def test_emit_model_quantizes_the_decoder_only_model(self):
        # the header compiled and run: bound by name and at compile time, its log-probabilities against
        # PyTorch's float model's
        t = self.tmp
        torch.manual_seed(6)
        gpt = st.TorchDecoderOnly(13, 2, 32, 64, 4, final_norm=True, block="gpt")
        for fmt, att8 in (("w8a32", False), ("w8a8", False), ("w8a8", True)):
            d = t.path(fmt + ("_int8_attention" if att8 else ""))
            os.makedirs(d)
            hpp, sft = os.path.join(d, "g.hpp"), os.path.join(d, "g.safetensors")
            _, schema, _ = export.emit_model(gpt, "g", 16, hpp, safetensors=sft, quantize=fmt, prompt=[3, 1, 4, 1, 5],
                                             new_tokens=8, int8_attention=att8)
            text = read(hpp, "r")
            self.assertIn(f"--quantize {fmt}" + (" --int8-attention" if att8 else " from"), text.split("\n", 1)[0])
            opts = f".format = stf::NumberFormat::{fmt}" + (", .int8_attention = true" if att8 else "")
            self.assertIn(opts + "}, true>;", text)
            self.assertIn("detail::int8_view<", text)
            with open(sft, "rb") as f:
                data = f.read()
            header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
            self.assertEqual(header["layers.1.ff.linear1.weight"]["dtype"], "I8")
            self.assertEqual(header["embed.weight"]["dtype"], "F32")
            self.assertEqual(header["__metadata__"]["layers.1.number_format"], fmt)
            self.assertEqual(header["__metadata__"].get("layers.1.int8_attention"), "true" if att8 else None)
            self.assertNotIn("embed.number_format", header["__metadata__"])
            main_cpp, exe = os.path.join(d, "main.cpp"), os.path.join(d, "main")
            with open(main_cpp, "w") as f:
                f.write(GPT_INT8_MAIN)
            cxx = os.environ.get("CXX", "g++")
            subprocess.run([cxx, "-std=c++20", "-O2", "-ffp-contract=off", "-DSTF_NO_DISPATCH", "-Wall", "-Wextra",
                            "-Wpedantic", "-Werror", "-I" + os.path.join(ROOT, "include"), "-I" + d, main_cpp,
                            os.path.join(ROOT, "src/kernels/reference.cpp"),
                            os.path.join(ROOT, "src/kernels/variant_scalar.cpp"), "-o", exe], check=True)
            r = subprocess.run([exe], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            err = float(r.stdout.split()[1])
            # log-probabilities (|lp| of a few units): measured 0.0014 (w8a8) and 0.00064 (w8a32), and
            # PyTorch's greedy tokens
            self.assertLess(err, 0.02 if fmt == "w8a8" else 0.005, r.stdout)
            self.assertIn("tokens equal", r.stdout)

    def test_emit_model_quantizes_the_encoder_decoder(self):
        # the header compiled and run: bound by name and at compile time (the same bits), its
        # teacher-forced log-probabilities against PyTorch's float model's, its greedy tokens
        t = self.tmp
        model = small_encdec()
        for fmt, att8 in (("w8a32", False), ("w8a8", False), ("w8a8", True)):
            d = t.path("encdec_" + fmt + ("_int8_attention" if att8 else ""))
            os.makedirs(d)
            hpp, sft = os.path.join(d, "m.hpp"), os.path.join(d, "m.safetensors")
            _, schema, _ = export.emit_model(model, "m", 6, hpp, tgt_len=7, seed=2, safetensors=sft, quantize=fmt,
                                             int8_attention=att8)
            text = read(hpp, "r")
            self.assertIn(f"--tgt-len 7 --quantize {fmt}" + (" --int8-attention" if att8 else " from"),
                          text.split("\n", 1)[0])
            opts = f".format = stf::NumberFormat::{fmt}" + (", .int8_attention = true" if att8 else "")
            self.assertIn(opts + "}>;", text)
            with open(sft, "rb") as f:
                data = f.read()
            header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
            self.assertEqual(header["decoder.layers.1.cross_attn.k.weight"]["dtype"], "I8")
            self.assertEqual(header["generator.proj.weight"]["dtype"], "F32")
            self.assertEqual(header["__metadata__"]["decoder.layers.1.number_format"], fmt)
            self.assertEqual(header["__metadata__"]["encoder.layers.0.number_format"], fmt)
            for key in ("encoder.layers.0.int8_attention", "decoder.layers.1.int8_attention"):
                self.assertEqual(header["__metadata__"].get(key), "true" if att8 else None)
            main_cpp, exe = os.path.join(d, "main.cpp"), os.path.join(d, "main")
            with open(main_cpp, "w") as f:
                f.write(ENCDEC_INT8_MAIN)
            cxx = os.environ.get("CXX", "g++")
            subprocess.run([cxx, "-std=c++20", "-O2", "-ffp-contract=off", "-DSTF_NO_DISPATCH", "-Wall", "-Wextra",
                            "-Wpedantic", "-Werror", "-I" + os.path.join(ROOT, "include"), "-I" + d, main_cpp,
                            os.path.join(ROOT, "src/kernels/reference.cpp"),
                            os.path.join(ROOT, "src/kernels/variant_scalar.cpp"), "-o", exe], check=True)
            r = subprocess.run([exe], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            err = float(r.stdout.split()[1])  # measured 0.00040 (w8a8), 0.00026 (w8a32)
            self.assertLess(err, 0.02 if fmt == "w8a8" else 0.005, r.stdout)
            self.assertIn("tokens equal", r.stdout)


# The int8 encoder-decoder header's check (tools/export.py --emit-model --quantize): bound by name and
# at compile time, the same bits; prints the largest |log-prob - PyTorch's| over max |log-prob|
ENCDEC_INT8_MAIN = """#include <cstdio>
#include <cstring>

#include "m.hpp"

int main() {
  static m::Model by_name, bound;
  if (!m::bind(by_name.params)) return 2;
  bound.params = m::bound_model_params;
  const m::CheckResult a = m::check(by_name), b = m::check(bound);
  std::printf("relative_error %.6g tokens %s\\n", static_cast<double>(a.max_abs_error / m::test_logprobs_max_abs),
              a.tokens_equal ? "equal" : "DIFFER");
  const bool same = std::memcmp(&a.max_abs_error, &b.max_abs_error, sizeof(float)) == 0 &&
                    a.tokens_equal == b.tokens_equal;
  return same ? 0 : 1;
}
"""


# The int8 decoder-only header's check (tools/export.py --emit-model --quantize): bound by name and at
# compile time, the same bits; prints the largest |log-prob - PyTorch's|
GPT_INT8_MAIN = """#include <cstdio>
#include <cstring>

#include "g.hpp"

int main() {
  static g::Model by_name, bound;
  if (!g::bind(by_name.params)) return 2;
  bound.params = g::bound_model_params;
  const g::CheckResult a = g::check(by_name), b = g::check(bound);
  std::printf("max_error %.6g tokens %s status %d\\n", static_cast<double>(a.max_error),
              a.tokens_equal ? "equal" : "DIFFER", static_cast<int>(a.status));
  const bool same = std::memcmp(&a.max_error, &b.max_error, sizeof(float)) == 0 && a.tokens == b.tokens;
  return a.status == stf::Status::ok && same ? 0 : 1;
}
"""


def small_encdec(norm_first=True):
    torch.manual_seed(2)  # its greedy decoding of the stored source has 5 distinct tokens, margins >= 0.078
    model = st.TorchEncoderDecoder(11, 9, 2, 16, 32, 2, norm_first)
    st.reinit_layers(model)
    st.randomize_vectors(model)
    return model.eval()


class EmitEncoderDecoder(unittest.TestCase):
    """--emit-model for stf_torch.TorchEncoderDecoder: stf::Transformer, its schema, the stored greedy
    decoding and check(), and what it refuses."""

    def setUp(self):
        self.tmp = Tmp()

    def emit_error(self, module, expected, **kw):
        with self.assertRaises(export.ExportError) as e:
            export.emit_model(module, "m", 6, self.tmp.path("err.hpp"), **kw)
        self.assertEqual(len(e.exception.problems), 1)
        self.assertIn(expected, e.exception.problems[0])
        self.assertFalse(os.path.exists(self.tmp.path("err.hpp")))

    def test_derived_schema_is_stf_schemas(self):
        # tests/io/schemas/demo.json: stf_schema's for the demo's stf::Transformer<10, 12, 13, 13, 32, 4, 64, 2>
        # (a ctest checks the committed file against the C++ type); train_demo's model is a TorchEncoderDecoder
        import train_demo
        with open(os.path.join(ROOT, "tests", "io", "schemas", "demo.json")) as f:
            want = json.load(f)
        spec = dict(export.describe_module(train_demo.build_model()), tgt_len=train_demo.TGT_LEN)
        got = export.derived_schema(spec, train_demo.SRC_LEN, "demo")
        self.assertEqual(got, want)
        self.assertEqual(list(got["hparams"]), list(want["hparams"]))
        self.assertEqual([p["name"] for p in got["params"]], [p["name"] for p in want["params"]])
        self.assertEqual(export.cpp_model_type(spec, 10),
                         "stf::Transformer<10, 12, 13, 13, 32, 4, 64, 2, stf::LayerOptions{.norm = "
                         "stf::NormPlacement::post, .activation = stf::Activation::relu}>")
        # the records the demo's writer reads from the module are the same
        self.assertEqual(got["hparams"], export.encdec_hparams(train_demo.build_model(), 10, 12))

    def test_emitted_header_compiles_and_matches_pytorch(self):
        t = self.tmp
        model = small_encdec()
        torch.save(model, t.path("m.pt"))
        hpp = t.path("m.hpp")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = export.main([t.path("m.pt"), "--emit-model", "m", "--seq-len", "6", "--tgt-len", "7", "--header", hpp,
                              "--seed", "2"])
        self.assertEqual(rc, 0)
        self.assertIn("m::Model = stf_torch.TorchEncoderDecoder(src_vocab=11, tgt_vocab=9", out.getvalue())
        text = read(hpp, "r")
        self.assertIn("using Model = stf::Transformer<6, 7, 11, 9, 16, 2, 32, 2, stf::LayerOptions{.norm = "
                      "stf::NormPlacement::pre, .activation = stf::Activation::relu}>;", text)
        self.assertIn('{"decoder.layers.1.mem_len=6", nullptr, 0},', text)
        # the stored source and PyTorch's greedy decoding of it
        src = torch.randint(0, 11, (6,), generator=torch.Generator().manual_seed(2))
        with torch.no_grad():
            _, ys, logprobs, _ = st.greedy_decode(model, src[None], st.padding_mask([6], 6), 7, 1)
        self.assertIn(f"test_src[6] = {{\n    {', '.join(str(v) for v in src.tolist())}}};", text)
        self.assertIn(f"test_tokens[7] = {{\n    {', '.join(str(v) for v in ys[0].tolist())}}};", text)
        self.assertGreater(len(set(ys[0].tolist())), 2)  # a decoding worth comparing
        self.assertIn("test_logprobs[54] = {\n    " + ", ".join(export.cpp_float(v) for v in logprobs[0, :8].tolist()),
                      text)
        def run(header_dir):
            main_cpp, exe = os.path.join(header_dir, "main.cpp"), os.path.join(header_dir, "main")
            with open(main_cpp, "w") as f:  # beside the header: "m.hpp" is looked up there first
                f.write(ENCDEC_MAIN)
            cxx = os.environ.get("CXX", "g++")
            subprocess.run([cxx, "-std=c++20", "-O2", "-ffp-contract=off", "-DSTF_NO_DISPATCH", "-Wall", "-Wextra",
                            "-Wpedantic", "-Werror", "-Wshadow", "-Wconversion", "-I" + os.path.join(ROOT, "include"),
                            "-I" + header_dir, main_cpp, os.path.join(ROOT, "src/kernels/reference.cpp"),
                            os.path.join(ROOT, "src/kernels/variant_scalar.cpp"), "-o", exe], check=True)
            return subprocess.run([exe], capture_output=True, text=True)
        r = run(t.dir.name)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"tokens equal; bound [0-9.e-]+ tokens equal")
        # check() can fail: one stored token changed makes the tokens differ and the teacher-forced
        # log-probs move
        os.makedirs(t.path("bad"))
        toks = ys[0].tolist()
        bad_toks = toks[:3] + [(toks[3] + 1) % 9] + toks[4:]
        good_line = f"test_tokens[7] = {{\n    {', '.join(str(v) for v in toks)}}};"
        self.assertIn(good_line, text)  # else the replacement below would change nothing
        with open(t.path("bad/m.hpp"), "w") as f:
            f.write(text.replace(good_line, f"test_tokens[7] = {{\n    {', '.join(str(v) for v in bad_toks)}}};"))
        r = run(t.path("bad"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("tokens DIFFER", r.stdout)

    def test_refusals(self):
        m = small_encdec()
        m.decoder.layers[1].norm_first = False
        self.emit_error(m, "decoder.layers.1.norm_first False differs from encoder.layers.0.norm_first True: "
                        "stf::Transformer repeats one layer type in both stacks")
        m = small_encdec()
        m.decoder.layers = m.decoder.layers[:1]
        self.emit_error(m, "2 encoder and 1 decoder layers")
        m = small_encdec()
        m.decoder.norm = None
        self.emit_error(m, "decoder.norm: stf::Transformer has a final affine nn.LayerNorm on each stack")
        m = small_encdec()
        m.decoder.layers[0].norm3.eps = 1e-6
        self.emit_error(m, "decoder.layers.0: norm1/2/3.eps 1e-05, 1e-05, 1e-06 differ")
        m = small_encdec()
        m.generator.proj = nn.Linear(16, 9, bias=False)
        self.emit_error(m, "generator.proj: 9 outputs (bias: False)")
        m = small_encdec()
        m.extra = nn.Linear(2, 2)
        self.emit_error(m, "TorchEncoderDecoder: custom sublayer(s) extra")
        self.emit_error(small_encdec(), "--tgt-len 1: at least 2 target tokens", tgt_len=1)
        self.emit_error(small_encdec(), "--start-token 9: not in the target vocabulary [0, 9)", start_token=9)


class EmitClassifier(unittest.TestCase):
    """--emit-model for stf_torch.TorchTokenClassifier: examples/classifier's Sequential, its schema (float
    and int8), the stored input with PyTorch's logits, and what it refuses."""

    def setUp(self):
        self.tmp = Tmp()
        torch.manual_seed(5)
        self.model = st.TorchTokenClassifier(20, 2, 16, 32, 2, 5, max_len=64)

    def test_derived_schema_is_stf_schemas(self):
        # tests/io/schemas/classifier_w8a8.json: stf_schema's for classifier_example::ModelW8a8 (a ctest
        # checks the committed file against the C++ type)
        with open(os.path.join(ROOT, "tests", "io", "schemas", "classifier_w8a8.json")) as f:
            want = json.load(f)
        spec = export.describe_module(self.model)
        got = export.derived_schema(spec, 8, "classifier_w8a8", quantize="w8a8")
        self.assertEqual(got, want)
        self.assertEqual(list(got["hparams"]), list(want["hparams"]))
        self.assertEqual(export.cpp_model_type(spec, 8, "w8a8"),
                         'stf::Sequential<8, stf::Named<"src_embed", stf::Embedding<20, 16>>, '
                         'stf::PositionalEncoding<8, 16>, stf::Named<"encoder", stf::EncoderStack<stf::EncoderLayer<'
                         '8, 16, 2, 32, stf::LayerOptions{.norm = stf::NormPlacement::post, .activation = '
                         'stf::Activation::relu, .format = stf::NumberFormat::w8a8}>, 2, false>>, '
                         'stf::Named<"", stf::Classifier<16, 5>>>')
        # float: the golden classifier case's records (tools/golden_to_header.py), in the same order
        import golden_to_header
        p = {"S": "8", "V": "20", "D": "16", "H": "2", "F": "32", "N": "2", "C": "5"}
        records = golden_to_header.golden_hparams({"module": ["classifier"],
                                                   "param": [f"{k} {v}" for k, v in p.items()]})
        self.assertEqual(list(export.derived_schema(spec, 8, "c")["hparams"].items()), list(records.items()))

    def test_header_holds_the_input_and_pytorchs_logits(self):
        hpp = self.tmp.path("c.hpp")
        export.emit_model(self.model, "c", 8, hpp, tokens=[7, 3, 7, 12])
        text = read(hpp, "r")
        self.assertIn("inline constexpr stf::index_t test_valid_len = 4;", text)
        self.assertIn("test_tokens[8] = {\n    7, 3, 7, 12, 0, 0, 0, 0};", text)
        with torch.no_grad():
            y = self.model.eval()(torch.tensor([[7, 3, 7, 12, 0, 0, 0, 0]]), torch.tensor([4]))[0]
        self.assertIn("test_logits[40] = {\n    " + ", ".join(export.cpp_float(v) for v in y[0].tolist()), text)
        self.assertIn('{"log_softmax=false", nullptr, 0},', text)
        export.emit_model(self.model, "c8", 8, self.tmp.path("c8.hpp"), quantize="w8a32")
        self.assertIn('{"encoder.layers.1.number_format=w8a32", nullptr, 0},', read(self.tmp.path("c8.hpp"), "r"))

    def test_refusals(self):
        def error(module, expected, **kw):
            with self.assertRaises(export.ExportError) as e:
                export.emit_model(module, "m", 8, self.tmp.path("err.hpp"), **kw)
            self.assertIn(expected, e.exception.problems[0])
            self.assertFalse(os.path.exists(self.tmp.path("err.hpp")))
        error(self.model, "1 to 8 tokens in [0, 20)", tokens=[3, 20])
        error(self.model, "1 to 8 tokens in [0, 20)", tokens=[1] * 9)
        with_norm = st.TorchTokenClassifier(20, 1, 16, 32, 2, 5)
        with_norm.encoder.norm = nn.LayerNorm(16)
        error(with_norm, "final norm")
        error(nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1), "the per-token classifier's",
              tokens=[1])
        error(st.TorchDecoderOnly(5, 1, 8, 10, 2, block="gpt"), "the per-token classifier's", tokens=[1])


class Calibrate(unittest.TestCase):
    """--calibrate (tools/calibrate.py): the calibrated rounding, its inputs' checks, the export with it."""

    def setUp(self):
        self.tmp = Tmp()
        torch.manual_seed(3)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0), 2, norm=nn.LayerNorm(32))
        self.cal = torch.randn(16, 10, 32, generator=torch.Generator().manual_seed(4))

    def test_identity_gram_rounds_to_nearest(self):
        # H = c·I: no column's error can be compensated by another: GPTQ is the scheme's rounding
        w = torch.randn(24, 40, generator=torch.Generator().manual_seed(1))
        q, s = calibrate.gptq(w, 3.0 * torch.eye(40, dtype=torch.float64))
        q0, s0 = st.quantize_weight(w)
        self.assertTrue(torch.equal(q, q0))
        self.assertTrue(torch.equal(s, s0))

    def test_calibrated_rounding_lowers_the_error_on_correlated_inputs(self):
        gen = torch.Generator().manual_seed(2)
        w = torch.randn(48, 64, generator=gen)
        x = torch.randn(512, 64, generator=gen) @ torch.randn(64, 64, generator=gen)  # correlated columns
        h = x.double().t() @ x.double()
        q, s = calibrate.gptq(w, h)
        q0, s0 = st.quantize_weight(w)
        self.assertTrue(torch.equal(s, s0))  # the scheme's scales
        self.assertEqual(q.dtype, torch.int8)
        self.assertGreaterEqual(int(q.min()), -127)

        def err(qq):
            return float(((x.double() @ (w.double() - qq.double() * s.double()[:, None]).t()) ** 2).sum())

        self.assertLess(err(q), 0.7 * err(q0))  # (0.51 here)

    def test_export_with_calibration_is_deterministic_and_reported(self):
        texts = []
        for i in range(2):
            rep = []
            export.emit_model(self.enc, "m", 10, self.tmp.path(f"m{i}.hpp"), quantize="w8a32", calibrate=self.cal,
                              report=rep)
            self.assertEqual(len(rep), 1)
            self.assertRegex(rep[0], r"calibration on 16 inputs.*nearest [0-9.]+ % / [0-9.]+ %, calibrated "
                             r"[0-9.]+ % / [0-9.]+ %; written: calibrated \(12 of 12 int8 weights reached")
            with open(self.tmp.path(f"m{i}.hpp")) as f:
                texts.append(f.read())
        self.assertEqual(texts[0], texts[1])
        m = re.search(r"nearest [0-9.]+ % / ([0-9.]+) %, calibrated [0-9.]+ % / ([0-9.]+) %", rep[0])
        self.assertLess(float(m.group(2)), 0.95 * float(m.group(1)))  # rms 0.256 % -> 0.219 % here
        export.emit_model(self.enc, "m", 10, self.tmp.path("plain.hpp"), quantize="w8a32")
        with open(self.tmp.path("plain.hpp")) as f:
            plain = f.read()
        self.assertNotEqual(plain, texts[0])  # other int8 weights
        # where the calibrated rounding does worse on the inputs, the nearest one is written
        real = calibrate.Calibration.report
        try:
            calibrate.Calibration.report = lambda c, fmt: {"nearest": (0.01, 0.001, None),
                                                           "calibrated": (0.01, 0.002, None)}
            rep = []
            export.emit_model(self.enc, "m", 10, self.tmp.path("n.hpp"), quantize="w8a32", calibrate=self.cal,
                              report=rep)
        finally:
            calibrate.Calibration.report = real
        self.assertIn("written: nearest", rep[0])
        with open(self.tmp.path("n.hpp")) as f:
            self.assertEqual(f.read(), plain)
        # the file: the scheme's scales, int8 weights within [-127, 127]
        out = self.tmp.path("m.safetensors")
        tensors = export.emit_model(self.enc, "m", 10, self.tmp.path("m.hpp"), quantize="w8a8", calibrate=self.cal,
                                    safetensors=out)
        self.assertTrue(os.path.exists(out))
        del tensors

    def test_token_models_calibrate(self):
        gen = torch.Generator().manual_seed(6)
        for model, kw, vocab, n in ((st.TorchDecoderOnly(13, 2, 16, 32, 2, final_norm=True, block="gpt"), {}, 13, 8),
                                    (small_encdec(), {"tgt_len": 6}, 11, 6),
                                    (st.TorchTokenClassifier(20, 2, 16, 32, 2, 5, max_len=64), {}, 20, 8)):
            cal = [torch.randint(vocab, (int(torch.randint(1, n + 1, (1,), generator=gen)),), generator=gen)
                   for _ in range(12)]
            rep = []
            export.emit_model(model, "m", n, self.tmp.path("t.hpp"), quantize="w8a8", calibrate=cal, report=rep, **kw)
            # every int8 weight reached (q, k, v of a packed in_proj matched to their inputs' rows)
            self.assertRegex(rep[0], r"top-1 as float [0-9.]+ %.*written: (calibrated|nearest) \((\d+) of \2 int8")

    def test_inputs_that_do_not_fit_are_refused_and_nothing_is_written(self):
        hpp = self.tmp.path("err.hpp")

        def refused(cal, expected, module=None, n=10, quantize="w8a8", **kw):
            with self.assertRaises(export.ExportError) as e:
                export.emit_model(module or self.enc, "m", n, hpp, quantize=quantize, calibrate=cal, **kw)
            self.assertIn(expected, "; ".join(e.exception.problems))
            self.assertFalse(os.path.exists(hpp))
            return e.exception.problems

        refused(self.cal, "an option of --quantize", quantize=None)
        refused(torch.randn(4, 10, 16), "[S, 32] (d_model 32) is needed")
        refused(torch.randn(4, 11, 32), "11 rows; the model takes 1 to 10")
        refused(torch.ones(4, 10, 32, dtype=torch.int64), "dtype torch.int64; the layer's input is floating point")
        bad = self.cal.clone()
        bad[3, 2, 1] = float("nan")
        self.assertEqual(refused(bad, "input 3: holds NaN"), ["--calibrate: input 3: holds NaN or Inf"])
        refused(torch.randn(2, 2, 10, 32), "a tensor of shape [2, 2, 10, 32]")
        refused([], "no inputs")
        refused({"x": self.cal}, "holds a dict")
        gpt = st.TorchDecoderOnly(13, 2, 16, 32, 2, final_norm=True, block="gpt")
        refused(torch.randn(3, 5), "dtype torch.float32; token ids are integers", gpt, 8)
        refused(torch.tensor([[1, 2, 13]]), "token 13 at position 2 is outside the vocabulary [0, 13)", gpt, 8)
        refused([torch.tensor([1] * 9)], "9 tokens; the model takes 1 to 8", gpt, 8)
        # every problem is named, up to eight
        many = refused([torch.tensor([99])] * 10, "... and 2 more", gpt, 8)
        self.assertEqual(len(many), 9)
        # a file that is not torch.save's
        with open(self.tmp.path("cal.pt"), "w") as f:
            f.write("not a tensor")
        refused(self.tmp.path("cal.pt"), "not a torch.save file")

    def test_command_line(self):
        torch.save(self.enc, self.tmp.path("enc.pt"))
        torch.save(self.cal, self.tmp.path("cal.pt"))
        hpp = self.tmp.path("m.hpp")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = export.main([self.tmp.path("enc.pt"), "--emit-model", "m", "--seq-len", "10", "--header", hpp,
                              "--quantize", "w8a32", "--calibrate", self.tmp.path("cal.pt")])
        self.assertEqual(rc, 0)
        self.assertIn("export: calibration on 16 inputs", out.getvalue())
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = export.main([self.tmp.path("enc.pt"), "--emit-model", "m", "--seq-len", "4", "--header",
                              self.tmp.path("n.hpp"), "--quantize", "w8a32", "--calibrate", self.tmp.path("cal.pt")])
        self.assertEqual(rc, 2)
        self.assertIn("10 rows; the model takes 1 to 4 (--seq-len)", err.getvalue())
        self.assertFalse(os.path.exists(self.tmp.path("n.hpp")))
        with contextlib.redirect_stderr(io.StringIO()) as e2:
            rc = export.main([self.tmp.path("enc.pt"), self.tmp.path("schema.json"), "--calibrate",
                              self.tmp.path("cal.pt")])
        self.assertEqual(rc, 2)
        self.assertIn("--calibrate is for --emit-model", e2.getvalue())


class EmittedDifference(unittest.TestCase):
    """export.emitted_difference: --check's comparison of a fresh export with a committed header."""

    HEADER = ("alignas(64) inline constexpr float w[4] = {\n    0.5f, -1.25f, 2.0f, 3.0f,\n};\n"
              "alignas(64) inline constexpr float test_logits[4] = {\n    4.0f, -2.0f, 1.0f, 0.125f,\n};\n"
              "inline constexpr float test_logits_max_abs = 4.0f;\n")

    def differ(self, fresh_text):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a.hpp"), os.path.join(tmp, "b.hpp")
            with open(a, "w") as f:
                f.write(self.HEADER)
            with open(b, "w") as f:
                f.write(fresh_text)
            return export.emitted_difference(a, b, {"test_logits", "test_logits_max_abs"}, 1e-6)

    def test_identical(self):
        self.assertEqual(self.differ(self.HEADER), "")

    def test_test_outputs_within_tolerance(self):
        self.assertEqual(self.differ(self.HEADER.replace("1.0f, 0.125f", "1.000003f, 0.125f")), "")
        self.assertEqual(self.differ(self.HEADER.replace("max_abs = 4.0f", "max_abs = 4.000001f")), "")

    def test_test_outputs_beyond_tolerance(self):
        self.assertIn("test_logits 1.0f", self.differ(self.HEADER.replace("1.0f, 0.125f", "1.0001f, 0.125f")))

    def test_weights_exactly(self):
        self.assertEqual(self.differ(self.HEADER.replace("-1.25f", "-1.2500001f")), "line 2")

    def test_shared_scale(self):
        # a small constant derived from the large ones (a gap between two log-probabilities) may move as
        # they do: by `relative` of the largest |value| of every tolerant constant, not of its own
        header = self.HEADER + "inline constexpr float test_gap = 0.001f;\n"
        fresh = header.replace("test_gap = 0.001f", "test_gap = 0.001003f")
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a.hpp"), os.path.join(tmp, "b.hpp")
            with open(a, "w") as f:
                f.write(header)
            with open(b, "w") as f:
                f.write(fresh)
            tolerant = {"test_logits", "test_logits_max_abs", "test_gap"}
            self.assertIn("test_gap 0.001f", export.emitted_difference(a, b, tolerant, 1e-6))
            self.assertEqual(export.emitted_difference(a, b, tolerant, 1e-6, shared_scale=True), "")
            self.assertIn("test_gap", export.emitted_difference(a, b, tolerant, 1e-7, shared_scale=True))

    def test_structure(self):
        self.assertEqual(self.differ(self.HEADER.replace("test_logits[4]", "test_logits[5]")), "line 4")
        self.assertIn("lines", self.differ(self.HEADER + "\n"))


if __name__ == "__main__":
    torch.set_num_threads(1)
    unittest.main(verbosity=1)
