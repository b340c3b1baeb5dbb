#!/usr/bin/python3
"""Generate the safetensors corpus of tests/io/corpus/ from the declared list CASES below.

    /usr/bin/python3 tools/gen_corpus.py          # write tests/io/corpus/*.safetensors + corpus.inc
    /usr/bin/python3 tools/gen_corpus.py --check  # regenerate in memory; fail unless byte-identical

Every file targets the tiny model (tools/schema/models.hpp: proj.weight [3, 4], proj.bias [3],
norm.weight [3], norm.bias [3]; schema tests/io/schemas/tiny.json) and is one mistake away from the
valid file: the loader (include/statiformer/io/safetensors.hpp) must reject it with the declared
stf::LoadError, or, for the `ok` variants, load exactly the values of valid_f32 (the weights are
multiples of 1/8, exact in F16 and BF16). corpus.inc lists `STF_CORPUS(name, error)` for the C++
test; the files also seed the fuzzer. No torch needed.

The hyperparameter corpus (hp_*.safetensors, hp_corpus.inc) targets the small encoder-decoder `hp`
(tools/schema/models.hpp, schema tests/io/schemas/hp.json, whose "hparams" the C++ type prints): a
valid file, then one file per hyperparameter field with a wrong value (the first key of that field
in the schema), and files without hyperparameters, with one missing, one given twice, one extra.
hp_corpus.inc lists `STF_HP_CORPUS(name, error, "message prefix")`.

The decoder-only corpus (gpt_*.safetensors, gpt_corpus.inc: `STF_GPT_CORPUS(name, model, error,
"message prefix")`) does the same for the small decoder-only model `gpt_hp`, and crosses files of a
causal stack and of the encoder stack of the same shapes (`causal_stack_hp`, `enc_stack_hp`: the
same parameter names, only the `causal` key differs) into each other's model.
"""

import argparse
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "io", "corpus")

# the tiny model's tensors, schema order: name, shape, values (exact in F16/BF16)
TENSORS = [
    ("proj.weight", [3, 4], [(i * 5 % 17 - 8) / 8 for i in range(12)]),
    ("proj.bias", [3], [0.125, -0.25, 0.375]),
    ("norm.weight", [3], [1.0, 1.125, 0.875]),
    ("norm.bias", [3], [-0.125, 0.0, 0.5]),
]
METADATA = {"format": "statiformer", "layout": "2"}


def f16(x):
    return struct.pack("<e", x)


def bf16(x):
    return struct.pack("<f", x)[2:]


PACK = {"F32": lambda v: struct.pack("<f", v), "F16": f16, "BF16": bf16}


def entries(dtype="F32", order=None):
    """(header dict without metadata, data bytes) with tensors contiguous in `order`."""
    order = order or [t[0] for t in TENSORS]
    by_name = {t[0]: t for t in TENSORS}
    header, data = {}, b""
    for name in order:
        _, shape, values = by_name[name]
        blob = b"".join(PACK[dtype](v) for v in values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    return header, data


def pack(json_bytes, data, header_len=None, align=8):
    """u64 length + header (space-padded so the data region starts at a multiple of `align`) + data."""
    if isinstance(json_bytes, str):
        json_bytes = json_bytes.encode()
    json_bytes += b" " * ((-(8 + len(json_bytes))) % align)
    n = len(json_bytes) if header_len is None else header_len
    return struct.pack("<Q", n) + json_bytes + data


def dumps(d):
    return json.dumps(d, separators=(",", ":"))


def file_with(mutate=None, dtype="F32", metadata=True, order=None, data_extra=b"", align=8):
    """A file built from the valid header after mutate(header) (mutate may return a new data)."""
    header, data = entries(dtype, order)
    full = ({"__metadata__": dict(METADATA)} if metadata else {}) | header
    if mutate:
        new = mutate(full, data)
        if isinstance(new, bytes):
            data = new
    return pack(dumps(full), data + data_extra, align=align)


def valid():
    return file_with()


def raw_header(text, data=None, align=1):
    _, d = entries()
    return pack(text, d if data is None else data, align=align)


def valid_json():
    return dumps({"__metadata__": METADATA} | entries()[0])


def set_field(name, field, value):
    def mutate(h, data):
        h[name][field] = value
    return mutate


def deep(n):
    return "{" + '"__metadata__":' + "[" * n + "]" * n + "}"


def many_tensors(n):
    h = {"__metadata__": METADATA}
    for i in range(n):
        h[f"x{i}"] = {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
    return pack(dumps(h), b"\0" * (4 * n))


def with_value(index, value, dtype="F32"):
    """proj.weight[index] replaced (a NaN or infinity)."""
    header, data = entries(dtype)
    size = {"F32": 4, "F16": 2, "BF16": 2}[dtype]
    data = data[: index * size] + PACK[dtype](value) + data[(index + 1) * size:]
    return pack(dumps({"__metadata__": METADATA} | header), data)


def duplicate_name():
    # proj.bias a second time, in its own 12 bytes at the end: names, not offsets, are wrong
    header, data = entries()
    text = dumps({"__metadata__": METADATA} | header)[:-1]
    text += ',"proj.bias":{"dtype":"F32","shape":[3],"data_offsets":[%d,%d]}}' % (len(data), len(data) + 12)
    return pack(text, data + data[48:60])


def extra_tensor(h, data):
    h["proj.extra"] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}
    return data + b"\0\0\0\0"


def drop_last(h, data):
    del h["norm.bias"]
    return data[:-12]


def rename(old, new):
    def mutate(h, data):
        h[new] = h.pop(old)
    return mutate


def escaped_names():
    text = valid_json().replace('"proj.weight"', '"proj\\u002eweight"').replace('"norm.bias"', '"\\u006eorm.bias"')
    return raw_header(text)


def overlap(h, data):
    # norm.weight and norm.bias both at norm.weight's bytes; 12 bytes at the end left uncovered
    h["norm.bias"]["data_offsets"] = list(h["norm.weight"]["data_offsets"])


def gap(h, data):
    # 4 unused bytes between proj.bias and the norm tensors
    for name in ("norm.weight", "norm.bias"):
        b, e = h[name]["data_offsets"]
        h[name]["data_offsets"] = [b + 4, e + 4]
    return data[:60] + b"\0\0\0\0" + data[60:]


def truncated(n):
    return valid()[:n]


def header_len(value):
    f = valid()
    return struct.pack("<Q", value) + f[8:]


# name -> (expected stf::LoadError, bytes). The declared list: every case is built, never typed.
CASES = [
    # valid variants: load exactly valid_f32's values
    ("valid_f32", "ok", valid),
    ("valid_f16", "ok", lambda: file_with(dtype="F16")),
    ("valid_bf16", "ok", lambda: file_with(dtype="BF16")),
    ("valid_reordered", "ok", lambda: file_with(order=["norm.bias", "proj.weight", "norm.weight", "proj.bias"])),
    ("valid_escaped_names", "ok", escaped_names),
    ("valid_extra_metadata", "ok", lambda: file_with(lambda h, d: h["__metadata__"].update(model="tiny", x="y"))),
    ("valid_whitespace", "ok", lambda: raw_header(" \t\r\n" + valid_json().replace(",", " ,\n ").replace(":", " : "))),
    ("valid_unaligned_data", "ok", lambda: raw_header(valid_json() + " " * ((-(8 + len(valid_json())) + 1) % 8))),
    # the 8-byte header length
    ("empty", "file_too_small", lambda: b""),
    ("truncated_4", "file_too_small", lambda: truncated(4)),
    ("truncated_7", "file_too_small", lambda: truncated(7)),
    ("header_len_zero", "header_length", lambda: header_len(0)),
    ("header_len_max_u64", "header_length", lambda: header_len(2**64 - 1)),
    ("header_len_wraps_size", "header_length", lambda: header_len(2**64 - 8)),
    ("header_len_past_file", "header_length", lambda: header_len(len(valid()) - 7)),
    ("header_len_above_limit", "header_length", lambda: header_len(100_000_001)),
    ("truncated_in_header", "header_length", lambda: truncated(40)),
    ("torch_save_zip_magic", "header_length", lambda: b"PK\x03\x04\x00\x00\x08\x08" + valid()[8:]),
    ("header_len_short", "json_syntax", lambda: header_len(50)),
    # JSON syntax
    ("header_only_spaces", "json_syntax", lambda: raw_header("        ")),
    ("utf8_bom", "json_syntax", lambda: raw_header(b"\xef\xbb\xbf" + valid_json().encode())),
    ("trailing_garbage", "json_syntax", lambda: raw_header(valid_json() + "x")),
    ("unterminated_object", "json_syntax", lambda: raw_header(valid_json()[:-1])),
    ("unterminated_string", "json_syntax", lambda: raw_header('{"__metadata__')),
    ("missing_colon", "json_syntax", lambda: raw_header(valid_json().replace('"proj.bias":', '"proj.bias"'))),
    ("trailing_comma", "json_syntax", lambda: raw_header(valid_json()[:-1] + ",}")),
    ("single_quotes", "json_syntax", lambda: raw_header(valid_json().replace('"F32"', "'F32'", 1))),
    ("non_utf8_key", "json_syntax", lambda: raw_header(valid_json().replace("proj.bias", "proj.b\xffas")
                                                      .encode("latin-1"))),
    ("overlong_utf8", "json_syntax", lambda: raw_header(valid_json().encode().replace(b"proj.bias", b"proj\xc0\xaebias"))),
    ("utf8_surrogate", "json_syntax", lambda: raw_header(valid_json().encode().replace(b"proj.bias", b"proj\xed\xa0\x80"))),
    ("truncated_utf8", "json_syntax", lambda: raw_header(valid_json().encode().replace(b"proj.bias", b"proj.bia\xe2\x82"))),
    ("lone_surrogate_escape", "json_syntax", lambda: raw_header(valid_json().replace("proj.bias", "proj\\ud800"))),
    ("bad_escape", "json_syntax", lambda: raw_header(valid_json().replace("proj.bias", "proj\\xbias"))),
    ("bad_unicode_escape", "json_syntax", lambda: raw_header(valid_json().replace("proj.bias", "proj\\u00zz"))),
    ("control_char_in_string", "json_syntax", lambda: raw_header(valid_json().replace("proj.bias", "proj\nbias"))),
    ("nul_in_header", "json_syntax", lambda: raw_header(valid_json().replace(",", "\0,", 1))),
    ("number_leading_zero", "json_syntax", lambda: raw_header(valid_json().replace("[3]", "[03]", 1))),
    ("number_bare_minus", "json_syntax", lambda: raw_header(valid_json().replace("[3]", "[-]", 1))),
    ("bad_literal", "json_syntax", lambda: raw_header(valid_json()[:-1] + ',"x":tru}')),
    ("deep_nesting_10000", "json_too_deep", lambda: raw_header(deep(10000))),
    ("nesting_depth_4", "json_too_deep", lambda: file_with(set_field("proj.bias", "shape", [[3]]))),
    # safetensors structure
    ("top_level_array", "header_structure", lambda: raw_header("[1, 2]")),
    ("entry_not_object", "header_structure", lambda: file_with(lambda h, d: h.update({"proj.bias": 5}))),
    ("missing_dtype", "header_structure", lambda: file_with(lambda h, d: h["proj.bias"].pop("dtype"))),
    ("missing_data_offsets", "header_structure", lambda: file_with(lambda h, d: h["norm.bias"].pop("data_offsets"))),
    ("unknown_field", "header_structure", lambda: file_with(set_field("proj.bias", "stride", [1]))),
    ("repeated_field", "header_structure",
     lambda: raw_header(valid_json().replace('"dtype":"F32"', '"dtype":"F32","dtype":"F32"', 1))),
    ("dtype_not_string", "header_structure", lambda: file_with(set_field("proj.bias", "dtype", 32))),
    ("negative_offset", "header_structure", lambda: file_with(set_field("proj.weight", "data_offsets", [-4, 44]))),
    ("fractional_shape", "header_structure", lambda: raw_header(valid_json().replace("[3]", "[3.0]", 1))),
    ("exponent_offset", "header_structure", lambda: raw_header(valid_json().replace('[0,', '[0e0,', 1))),
    ("three_offsets", "header_structure", lambda: file_with(set_field("proj.bias", "data_offsets", [48, 60, 72]))),
    ("metadata_value_not_string", "header_structure", lambda: file_with(lambda h, d: h["__metadata__"].update(x=1))),
    # statiformer's layout
    ("torch_layout_no_metadata", "not_statiformer_layout", lambda: file_with(metadata=False)),
    ("empty_object", "not_statiformer_layout", lambda: raw_header("{}", b"")),
    ("metadata_format_pytorch", "not_statiformer_layout",
     lambda: file_with(lambda h, d: h["__metadata__"].update(format="pt"))),
    # version 1 stored wide linear weights plain, not in column panels: same shapes, other order
    ("metadata_layout_1", "not_statiformer_layout", lambda: file_with(lambda h, d: h["__metadata__"].update(layout="1"))),
    ("metadata_layout_3", "not_statiformer_layout", lambda: file_with(lambda h, d: h["__metadata__"].update(layout="3"))),
    ("metadata_no_layout", "not_statiformer_layout", lambda: file_with(lambda h, d: h["__metadata__"].pop("layout"))),
    # names
    ("too_many_tensors", "too_many_tensors", lambda: many_tensors(300)),
    ("duplicate_metadata", "duplicate_name", lambda: raw_header(valid_json()[:-1] + ',"__metadata__":{}}')),
    ("duplicate_name", "duplicate_name", duplicate_name),
    ("unexpected_name", "unexpected_name", lambda: file_with(extra_tensor)),
    ("renamed_tensor", "unexpected_name", lambda: file_with(rename("norm.bias", "norm.beta"))),
    ("name_case_differs", "unexpected_name", lambda: file_with(rename("proj.weight", "Proj.weight"))),
    ("missing_name", "missing_name", lambda: file_with(drop_last)),
    # per parameter
    ("dtype_i64", "dtype", lambda: file_with(set_field("proj.bias", "dtype", "I64"))),
    ("dtype_f64", "dtype", lambda: file_with(set_field("proj.bias", "dtype", "F64"))),
    ("dtype_lowercase", "dtype", lambda: file_with(set_field("proj.bias", "dtype", "f32"))),
    ("shape_torch_transposed", "shape", lambda: file_with(set_field("proj.weight", "shape", [4, 3]))),
    ("shape_flattened", "shape", lambda: file_with(set_field("proj.weight", "shape", [12]))),
    ("shape_rank_3", "shape", lambda: file_with(set_field("proj.weight", "shape", [3, 4, 1]))),
    ("shape_scalar", "shape", lambda: file_with(set_field("proj.bias", "shape", []))),
    ("shape_overflow", "shape", lambda: file_with(set_field("proj.bias", "shape", [2**64 + 3]))),
    ("offsets_overflow", "offsets", lambda: file_with(set_field("norm.bias", "data_offsets", [72, 2**64 + 84]))),
    ("offsets_wrap", "offsets", lambda: file_with(set_field("norm.bias", "data_offsets", [2**64 - 4, 8]))),
    ("offsets_reversed", "offsets", lambda: file_with(set_field("norm.bias", "data_offsets", [84, 72]))),
    ("offsets_past_data", "offsets", lambda: file_with(set_field("norm.bias", "data_offsets", [80, 92]))),
    ("offsets_wrong_size", "offsets", lambda: file_with(set_field("norm.bias", "data_offsets", [72, 80]))),
    ("truncated_in_data", "offsets", lambda: truncated(len(valid()) - 2)),
    ("f16_size_as_f32", "offsets", lambda: file_with(set_field("proj.bias", "dtype", "F16"))),
    # the data region
    ("overlap", "overlap", lambda: file_with(overlap)),
    ("gap_between", "gap", lambda: file_with(gap)),
    ("trailing_data", "gap", lambda: file_with(data_extra=b"\0\0\0\0")),
    # values
    ("nan_weight", "non_finite", lambda: with_value(5, float("nan"))),
    ("inf_weight", "non_finite", lambda: with_value(0, float("inf"))),
    ("neg_inf_bf16", "non_finite", lambda: with_value(11, float("-inf"), "BF16")),
    ("nan_f16", "non_finite", lambda: with_value(3, float("nan"), "F16")),
]


# ---- the hyperparameter corpus ------------------------------------------------------------------

HP_SCHEMA = os.path.join(ROOT, "tests", "io", "schemas", "hp.json")
# a wrong value for each kind of value text
HP_WRONG = {"true": "false", "false": "true", "relu": "gelu", "gelu": "relu", "torch": "annotated",
            "annotated": "torch", "-inf": "-1e9", "-1e9": "-inf", "1e-05": "1e-06", "1e-06": "1e-05"}


def hp_file(hparams_update=None, drop=(), raw_extra="", schema_path=HP_SCHEMA):
    """A valid file for the hp model (or schema_path's), its hyperparameters changed; raw_extra is
    appended to the metadata object's text (for what JSON dicts cannot hold: a key twice)."""
    with open(schema_path) as f:
        schema = json.load(f)
    hparams = {k: v for k, v in schema["hparams"].items() if k not in drop} | (hparams_update or {})
    header, data = {}, b""
    for j, p in enumerate(schema["params"]):
        n = 1
        for d in p["stored_shape"]:
            n *= d
        blob = b"".join(struct.pack("<f", ((i * 7 + j * 3) % 17 - 8) / 8) for i in range(n))
        header[p["name"]] = {"dtype": "F32", "shape": p["stored_shape"], "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    meta = dumps(dict(METADATA) | hparams)
    text = '{"__metadata__":' + meta[:-1] + raw_extra + "}," + dumps(header)[1:]
    return pack(text, data)


def hp_cases():
    """[(name, error, message prefix, bytes)]: valid, one wrong value per field, and the rest."""
    with open(HP_SCHEMA) as f:
        hparams = json.load(f)["hparams"]
    cases = [("hp_valid", "ok", "", hp_file())]
    fields = {}
    for key in hparams:
        fields.setdefault(key.rsplit(".", 1)[-1], key)
    for field, key in fields.items():
        model = hparams[key]
        wrong = HP_WRONG.get(model) or str(int(model) * 2)
        cases.append((f"hp_{field}", "hyperparameter", f"hyperparameter {key}: file {wrong}, model {model}",
                      hp_file({key: wrong})))
    first = next(iter(hparams))
    cases += [
        ("hp_none", "hyperparameter", f"hyperparameter {first}: not in the file, model {hparams[first]}",
         hp_file(drop=tuple(hparams))),
        ("hp_one_missing", "hyperparameter", "hyperparameter decoder.layers.0.mem_len: not in the file, model 2",
         hp_file(drop=("decoder.layers.0.mem_len",))),
        ("hp_twice", "hyperparameter", "hyperparameter encoder.layers.0.nhead: appears 2 times in the file",
         hp_file(raw_extra=',"encoder.layers.0.nhead":"2"')),
        ("hp_extra_key", "ok", "", hp_file({"encoder.layers.0.dropout": "0.1"})),
    ]
    return cases


def schema_path(model):
    return os.path.join(ROOT, "tests", "io", "schemas", f"{model}.json")


def gpt_cases():
    """[(name, model, error, message prefix, bytes)] for the decoder-only corpus (gpt_*): a valid file
    of the `gpt_hp` model and one wrong value per field (the first key of each), then the `causal`
    marker between a causal stack and the encoder stack of the same shapes (the same names)."""
    gpt = schema_path("gpt_hp")
    with open(gpt) as f:
        hparams = json.load(f)["hparams"]
    cases = [("gpt_valid", "gpt", "ok", "", hp_file(schema_path=gpt))]
    fields = {}
    for key in hparams:
        fields.setdefault(key.rsplit(".", 1)[-1], key)
    for field, key in fields.items():
        model = hparams[key]
        wrong = HP_WRONG.get(model) or str(int(model) * 2)
        cases.append((f"gpt_{field}", "gpt", "hyperparameter", f"hyperparameter {key}: file {wrong}, model {model}",
                      hp_file({key: wrong}, schema_path=gpt)))
    causal, enc = schema_path("causal_stack_hp"), schema_path("enc_stack_hp")
    cases += [
        ("gpt_no_causal", "gpt", "hyperparameter", "hyperparameter layers.0.causal: not in the file, model true",
         hp_file(drop=("layers.0.causal",), schema_path=gpt)),
        ("gpt_enc_into_causal", "causal_stack", "hyperparameter",
         "hyperparameter layers.0.causal: not in the file, model true", hp_file(schema_path=enc)),
        ("gpt_causal_into_enc", "enc_stack", "hyperparameter",
         "hyperparameter layers.0.causal: file true, not in the model", hp_file(schema_path=causal)),
        ("gpt_causal_unmarked_into_enc", "enc_stack", "ok", "",
         hp_file(drop=("layers.0.causal",), schema_path=causal)),
    ]
    return cases


def build():
    files = {}
    for name, error, make in CASES:
        files[f"{name}.safetensors"] = make()
    inc = ["// generated by tools/gen_corpus.py from its CASES list — do not edit\n"]
    inc += [f"STF_CORPUS({name}, {error})\n" for name, error, _ in CASES]
    files["corpus.inc"] = "".join(inc).encode()
    hp = hp_cases()
    for name, _, _, data in hp:
        files[f"{name}.safetensors"] = data
    inc = ["// generated by tools/gen_corpus.py (hp_cases) — do not edit\n"]
    inc += [f'STF_HP_CORPUS({name}, {error}, "{message}")\n' for name, error, message, _ in hp]
    files["hp_corpus.inc"] = "".join(inc).encode()
    gpt = gpt_cases()
    for name, _, _, _, data in gpt:
        files[f"{name}.safetensors"] = data
    inc = ["// generated by tools/gen_corpus.py (gpt_cases) — do not edit\n"]
    inc += [f'STF_GPT_CORPUS({name}, {model}, {error}, "{message}")\n' for name, model, error, message, _ in gpt]
    files["gpt_corpus.inc"] = "".join(inc).encode()
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail unless the committed corpus is reproduced")
    args = ap.parse_args()
    names = [c[0] for c in CASES] + [c[0] for c in hp_cases()] + [c[0] for c in gpt_cases()]
    assert len(set(names)) == len(names), "duplicate case name"
    files = build()
    if args.check:
        committed = set(os.listdir(OUT)) if os.path.isdir(OUT) else set()
        bad = [n for n, b in files.items() if n not in committed or open(os.path.join(OUT, n), "rb").read() != b]
        bad += sorted(committed - set(files))
        if bad:
            print("gen_corpus --check: differ: " + ", ".join(bad), file=sys.stderr)
            return 1
        print(f"gen_corpus --check: {len(files) - 3} files reproduce byte for byte")
        return 0
    os.makedirs(OUT, exist_ok=True)
    for n in set(os.listdir(OUT)) - set(files):
        os.remove(os.path.join(OUT, n))
    for n, b in files.items():
        with open(os.path.join(OUT, n), "wb") as f:
            f.write(b)
    bad = sum(1 for c in CASES if c[1] != "ok")
    hp = hp_cases()
    print(f"gen_corpus: {len(CASES)} files ({bad} malformed, {len(CASES) - bad} valid variants), "
          f"{len(hp)} hyperparameter files and {len(gpt_cases())} decoder-only ones in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
