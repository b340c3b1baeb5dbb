#!/usr/bin/python3
"""Train statiformer's demo model ("reverse a digit sequence") and export it.

    /usr/bin/python3 tools/train_demo.py

Vocabulary (13): 0 PAD, 1 BOS, 2 EOS, 3..12 the digits 0..9.  Source: 1..10 digits padded with
PAD to 10 (key padding mask); target: BOS + reversed digits + EOS, padded to 12.  The model is
the encdec_greedy ln=torch structure (tools/stf_torch.TorchEncoderDecoder: embedding*sqrt(D) +
sinusoidal PE, 2+2 post-norm nn.Transformer layers with relu, final LayerNorms, log_softmax
generator).  Training is a fixed schedule (seed 1234, 3600 Adam steps, about 3.5 minutes on one
CPU thread); the script then requires greedy decoding to be 100% correct on a held-out set of
1000 random sequences of every length 1..10 and on every constant sequence (e.g. 0000000000).

Writes examples/demo/demo_weights.hpp, tests/golden/data/demo_reference.txt and
tools/demo_model.pt (state_dict without the PE table).  With --reuse it skips training, loads
tools/demo_model.pt, re-checks the accuracy and rewrites the first two (same bytes).

Also writes the int8 models (issue 23; kernels/QUANTIZATION.md): examples/demo/demo_weights_w8a8.hpp and
demo_weights_w8a32.hpp (tools/export.py --emit-model --quantize of the same trained model, w8a32 with
--calibrate over 2,000 training-distribution sources: CALIBRATED; namespaces
stf_demo_w8a8, stf_demo_w8a32), and the held-out set (the sequences training never saw) as
tests/golden/data/demo_held_out.seq (not a golden case: one sequence of digits per line), on which tests/e2e/test_demo.cpp
measures how often the int8 models' greedy decodings equal the float model's.
"""

import argparse
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import stf_torch as st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "examples", "demo", "demo_weights.hpp")
REFERENCE = os.path.join(ROOT, "tests", "golden", "data", "demo_reference.txt")
STATE = os.path.join(ROOT, "tools", "demo_model.pt")
INT8_HEADER = os.path.join(ROOT, "examples", "demo", "demo_weights_{}.hpp")
HELD_OUT = os.path.join(ROOT, "tests", "golden", "data", "demo_held_out.seq")

SEED = 1234
VOCAB, SRC_LEN, TGT_LEN = 13, 10, 12
D_MODEL, N_HEADS, D_FF, N_LAYERS = 32, 4, 64, 2
PAD, BOS, EOS, DIGIT0 = 0, 1, 2, 3
BATCH, LR, WARMUP, STEPS, EVAL_EVERY = 128, 2e-3, 200, 3600, 300
HELD_OUT_PER_LEN = 1000
# The trained model's log-probs reach ~-25 and its activations are larger than a random model's;
# PyTorch float32 is ~3e-5 (3e-6 relative) from a float64 recomputation, so 1e-5/1e-5 would
# leave a C++ float32 implementation too little headroom.
REFERENCE_TOLERANCE = (5e-5, 5e-5)

# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def encode_pair(digits):
    """(src [10], tgt [12]) token lists for a digit list."""
    src = [DIGIT0 + d for d in digits] + [PAD] * (SRC_LEN - len(digits))
    tgt = [BOS] + [DIGIT0 + d for d in reversed(digits)] + [EOS]
    return src, tgt + [PAD] * (TGT_LEN - len(tgt))


def tensors(seqs):
    """(src [B,10], valid_len [B], tgt [B,12]) long tensors for digit lists."""
    pairs = [encode_pair(s) for s in seqs]
    src = torch.tensor([p[0] for p in pairs])
    tgt = torch.tensor([p[1] for p in pairs])
    return src, torch.tensor([len(s) for s in seqs]), tgt


def held_out_set(rng):
    """HELD_OUT_PER_LEN random digit sequences of every length 1..10."""
    return [[rng.randrange(10) for _ in range(n)]
            for n in range(1, SRC_LEN + 1) for _ in range(HELD_OUT_PER_LEN)]


def repetitive_set():
    """Every constant sequence (10 digits x lengths 1..10): a check beyond the random held-out set."""
    return [[d] * n for n in range(1, SRC_LEN + 1) for d in range(10)]


def training_batch(rng, excluded):
    """BATCH random sequences, length n in 1..10 drawn with weight n (long ones are harder).

    One in ten uses only one or two distinct digits (runs such as 0000000000 are otherwise too
    rare to learn to count); sequences of length >= 5 never come from the held-out set.
    """
    lengths = list(range(1, SRC_LEN + 1))
    seqs = []
    while len(seqs) < BATCH:
        n = rng.choices(lengths, weights=lengths)[0]
        alphabet = rng.sample(range(10), rng.randint(1, 2)) if rng.random() < 0.1 else range(10)
        s = [rng.choice(alphabet) for _ in range(n)]
        if len(s) < 5 or tuple(s) not in excluded:  # short ones: the whole space is held out
            seqs.append(s)
    return tensors(seqs)


# --------------------------------------------------------------------------------------------
# Model, training, evaluation
# --------------------------------------------------------------------------------------------


def build_model():
    """The demo model in train() mode with dropout 0 (identical to eval, never the fast path)."""
    return st.TorchEncoderDecoder(VOCAB, VOCAB, N_LAYERS, D_MODEL, D_FF, N_HEADS,
                                  norm_first=False, dropout=0.0, max_len=64).train()


def loss_fn(model, src, valid, tgt):
    """Teacher-forced NLL over the 11 target positions (PAD ignored)."""
    src_mask = st.padding_mask(valid, SRC_LEN)
    memory = model.encode(src, src_mask)
    out = model.decode(memory, src_mask, tgt[:, :-1], st.subsequent_mask(TGT_LEN - 1))
    logp = model.generator(out)
    return F.nll_loss(logp.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1), ignore_index=PAD)


@torch.no_grad()
def batch_greedy(model, src, valid):
    """Greedy decode a batch for TGT_LEN - 1 steps (no early stop)."""
    src_mask = st.padding_mask(valid, SRC_LEN)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)
    for _ in range(TGT_LEN - 1):
        out = model.decode(memory, src_mask, ys, st.subsequent_mask(ys.size(1)))
        ys = torch.cat([ys, model.generator(out[:, -1]).argmax(-1, keepdim=True)], dim=1)
    return ys


def accuracy(model, seqs, chunk=1000):
    """Fraction of sequences whose greedy output matches BOS + reversed + EOS exactly."""
    correct = 0
    for i in range(0, len(seqs), chunk):
        src, valid, tgt = tensors(seqs[i:i + chunk])
        ys = batch_greedy(model, src, valid)
        keep = torch.arange(TGT_LEN)[None, :] < (valid + 2)[:, None]  # up to and incl. EOS
        correct += int(((ys == tgt) | ~keep).all(dim=1).sum())
    return correct / len(seqs)


def train(model, held_out):
    """Adam, linear warmup then cosine decay to 0 over STEPS (a fixed, deterministic schedule).

    Logs the accuracy on a 1000-sequence probe subset every EVAL_EVERY steps; returns
    (steps, seconds, accuracy on the whole held-out set).
    """
    rng = random.Random(SEED + 1)
    excluded = {tuple(s) for s in held_out}
    probe = held_out[::10]  # 100 per length, cheap to evaluate often
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.98), eps=1e-9)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        scale = min(step / WARMUP, 0.5 * (1 + math.cos(math.pi * step / STEPS)))
        for g in opt.param_groups:
            g["lr"] = LR * scale
        loss = loss_fn(model, *training_batch(rng, excluded))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % EVAL_EVERY == 0:
            print(f"step {step:5d}  loss {loss.item():.4f}  probe acc {accuracy(model, probe):.4f}"
                  f"  {time.time() - t0:.0f}s", flush=True)
    seconds = time.time() - t0
    per_len = [accuracy(model, held_out[i:i + HELD_OUT_PER_LEN])
               for i in range(0, len(held_out), HELD_OUT_PER_LEN)]
    print("held-out accuracy by length 1..10: " + " ".join(f"{a:.3f}" for a in per_len))
    return STEPS, seconds, sum(per_len) / len(per_len)


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------


def cpp_float(x):
    """A float32 value as a C++ float literal ('%.9g' + 'f', always with '.' or an exponent)."""
    s = st.fmt_float(x)
    if "." not in s and "e" not in s:
        s += ".0"
    return s + "f"


def cpp_tensor(name, t, per_line=8):
    """`inline constexpr stf::Tensor<dims> name{{ ... }};`"""
    dims = ", ".join(str(d) for d in t.shape)
    vals = [cpp_float(v) for v in t.reshape(-1).tolist()]
    rows = [", ".join(vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
    body = ",\n    ".join(rows)
    return f"inline constexpr stf::Tensor<{dims}> {name}{{{{\n    {body}}}}};\n"


def write_header(named, note, hparams):
    """examples/demo/demo_weights.hpp with one constexpr tensor per canonical parameter, the table
    ending with the model's hyperparameter records (read from the PyTorch model; bind_table compares
    them with stf_demo::Model's), and the same binding at compile time (export.binding_text, the
    emitter export.py --emit-model writes it with): bound_params<Params>() and
    detail::same_hparams<Params>(), which examples/demo/demo_model.hpp instantiates for its Model."""
    out = [f"// generated by tools/train_demo.py ({note}) — do not edit\n",
           "#pragma once\n", "#include <statiformer/io/hparams.hpp>\n", "#include <statiformer/tensor.hpp>\n",
           "namespace stf_demo {\n",
           f"inline constexpr std::size_t kVocab = {VOCAB}, kSrcLen = {SRC_LEN}, "
           f"kTgtLen = {TGT_LEN}, kDModel = {D_MODEL}, kNHeads = {N_HEADS}, kDFf = {D_FF}, "
           f"kNLayers = {N_LAYERS};\n",
           f"inline constexpr int kPad = {PAD}, kBos = {BOS}, kEos = {EOS}, "
           f"kDigit0 = {DIGIT0};\n",
           "namespace weights {\n"]
    entries = []
    for name, t in named:
        ident = name.replace(".", "_")
        if st.stored_transposed(name, list(t.shape)):
            # the layout the model stores: [in, out] in column panels
            t = st.panel_order(t.t()).reshape(t.shape[1], t.shape[0])
        out.append(cpp_tensor(ident, t))
        size = " * ".join(str(d) for d in t.shape)
        entries.append(f'    {{"{name}", {ident}.data, {size}}},\n')
    out.append("inline constexpr stf::WeightEntry table[] = {\n")
    out += entries
    out.append(export.hparam_records(hparams))
    out.append("};\n")
    out.append(export.binding_text([name for name, _ in named], hparams,
                                   array_of=lambda name: name.replace(".", "_") + ".data", params_type="Params"))
    out.append("}  // namespace weights\n}  // namespace stf_demo\n")
    os.makedirs(os.path.dirname(HEADER), exist_ok=True)
    with open(HEADER, "w", newline="\n") as f:
        f.write("".join(out))


def reference_sources():
    """20 fixed digit sequences: example 0 has length 10 (so its decoding takes all 11 steps)."""
    rng = random.Random(SEED + 2)
    fixed = [[9, 8, 7, 6, 5, 4, 3, 2, 1, 0], [3, 1, 4, 1, 5], [7], [0], [1, 2],
             [0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [2, 7, 1, 8, 2, 8, 1, 8, 2, 8], [5, 5, 5],
             [1, 0, 1, 0], [9, 9, 0, 0, 9, 9, 0]]
    return fixed + [[rng.randrange(10) for _ in range(n)] for n in range(1, 11)]


@torch.no_grad()
def write_reference(model):
    """tests/golden/data/demo_reference.txt: sources, greedy outputs, logprobs of example 0."""
    seqs = reference_sources()
    tensors_out, margins, all_ok = [], [], True
    for i, digits in enumerate(seqs):
        src, valid, tgt = tensors([digits])
        _, ys, logprobs, margin = st.greedy_decode(model, src, st.padding_mask(valid, SRC_LEN),
                                                   TGT_LEN, BOS, stop_symbol=EOS)
        decoded = torch.full((TGT_LEN,), PAD, dtype=torch.long)
        decoded[: ys.size(1)] = ys[0]
        all_ok &= bool((decoded == tgt[0]).all())
        margins.append(margin)
        tensors_out += [(f"src_{i}", src[0]), (f"src_valid_len_{i}", valid),
                        (f"decoded_{i}", decoded)]
        if i == 0:
            assert logprobs.shape == (TGT_LEN - 1, VOCAB), "example 0 must use all 11 steps"
            logprobs_0 = logprobs
    tensors_out += [("logprobs_0", logprobs_0), ("min_margin", torch.tensor(margins))]
    params = [("count", len(seqs)), ("V", VOCAB), ("SrcLen", SRC_LEN), ("TgtLen", TGT_LEN)]
    text = st.golden_text("demo_reference", "demo_reference", params, REFERENCE_TOLERANCE,
                          tensors_out)
    with open(REFERENCE, "w", newline="\n") as f:
        f.write(text)
    print(f"reference: {len(seqs)} examples, all correct: {all_ok}, "
          f"smallest min_margin {min(margins):.3f}")


def calibration_sources(held_out, n=2000, seed=99):
    """n training-distribution digit lists, none of them held out: the int8 export's calibration inputs."""
    rng = random.Random(seed)
    excluded = {tuple(s) for s in held_out}
    cal = []
    while len(cal) < n:
        s = [rng.randrange(10) for _ in range(rng.randint(1, 10))]
        if len(s) < 5 or tuple(s) not in excluded:
            cal.append(s)
    return cal


# The formats whose weights are rounded over calibration_sources (export.py --calibrate), chosen on the
# held-out set (tests/e2e/test_demo.cpp; kernels/QUANTIZATION.md): w8a32 calibrated decodes all 10,000
# as the float model (rounded to nearest: 9,999); w8a8 calibrated 9,998 (nearest: 9,999), so w8a8 keeps
# the nearest rounding.
CALIBRATED = ("w8a32",)


def write_int8(model, held_out):
    """The int8 headers (export.emit_model: the trained model's weights quantized per output channel,
    the CALIBRATED formats' rounded over calibration_sources as `export.py --calibrate` does; its test
    source and PyTorch's float decoding of it) and the held-out set's file."""
    cal = [torch.tensor(encode_pair(s)[0][:len(s)]) for s in calibration_sources(held_out)]
    for fmt in export.NUMBER_FORMATS:
        report = []
        export.emit_model(model, f"stf_demo_{fmt}", SRC_LEN, INT8_HEADER.format(fmt), tgt_len=TGT_LEN,
                          start_token=BOS, quantize=fmt, calibrate=cal if fmt in CALIBRATED else None,
                          report=report)
        if report:
            print(f"{fmt}: {report[0]}")
    with open(HELD_OUT, "w", newline="\n") as f:
        f.write("".join("".join(str(d) for d in seq) + "\n" for seq in held_out))


def main():
    parser = argparse.ArgumentParser(description="train and export the statiformer demo model")
    parser.add_argument("--reuse", action="store_true",
                        help="skip training: load tools/demo_model.pt, re-check and re-export")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    held_out = held_out_set(random.Random(SEED))
    model = build_model()
    if args.reuse:
        model.load_state_dict(torch.load(STATE), strict=False)  # PE table is rebuilt
        steps, seconds = STEPS, 0.0
        acc = accuracy(model, held_out)
    else:
        steps, seconds, acc = train(model, held_out)
    rep_acc = accuracy(model, repetitive_set())
    how = f"loaded {STATE}" if args.reuse else f"trained {steps} steps in {seconds:.0f}s"
    print(f"{how}; held-out accuracy {acc:.4f} on {len(held_out)} sequences; "
          f"constant sequences {rep_acc:.4f}")
    if acc < 1.0 or rep_acc < 1.0:
        print("error: did not reach 100% accuracy", file=sys.stderr)
        return 1
    named = st.canonical_from_torch_encdec(model)
    note = (f"seed {SEED}, {steps} steps, accuracy {100 * acc:.2f}% on {len(held_out)} "
            f"held-out sequences")
    write_header(named, note, export.encdec_hparams(model, SRC_LEN, TGT_LEN))
    write_reference(model)
    write_int8(model, held_out)
    if not args.reuse:
        state = {k: v for k, v in model.state_dict().items() if not k.startswith("pos.")}
        torch.save(state, STATE)
        if os.path.getsize(STATE) > 1 << 20:
            os.remove(STATE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
