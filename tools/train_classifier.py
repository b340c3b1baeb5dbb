#!/usr/bin/python3
"""Train examples/classifier's model on a task that needs attention, and export it (issue 23).

    /usr/bin/python3 tools/train_classifier.py           # train, write the checkpoint and the files below
    /usr/bin/python3 tools/train_classifier.py --reuse   # load the committed checkpoint, write the files
    /usr/bin/python3 tools/train_classifier.py --check   # fail unless the committed files are the
                                                         # checkpoint's export, byte for byte but for
                                                         # PyTorch's CPU-dependent last bits (a ctest)

The model is examples/classifier's Sequential with the same hyperparameters (classifier_model.hpp):
tools/stf_torch.TorchTokenClassifier, embedding(20, 16)*sqrt(16) + sinusoidal PE, 2 post-norm
nn.TransformerEncoderLayer(16, 2, 32) (relu, no final norm), a per-token nn.Linear(16, 5).

The task: sequences of 1..8 tokens from 1..19 (0 is PAD, masked as key padding); each token's class
is how many times that token occurs in the sequence, capped at 5, minus 1 (classes 0..4 = counts
1, 2, 3, 4, 5+). A token's class depends on every other token, so nothing short of attention solves
it (the embedding and the position alone give 1/19 of the information). Sequences draw their tokens
from a random alphabet of 1..n distinct tokens, so every count is common.

Training is a fixed schedule (seed 1234, 6000 Adam steps of 256 sequences, label smoothing 0.1,
about 3 minutes on one CPU thread). The held-out set is 4000 sequences of 4..8 tokens that training never sees (sequences
of 1..3 tokens are left out of it: there are only 7,239 of them and training sees them all). The
script requires a token accuracy of at least 90 % on it.

Writes tools/classifier_model.pt (state_dict without the PE table; with --reuse it is loaded instead
of training) and, through tools/export.py's emitter (export.emit_model, the same test input):
  examples/classifier/classifier_weights.hpp        float32 (namespace stf_classifier)
  examples/classifier/classifier_weights_w8a8.hpp   int8 linears, int8 activations (stf_classifier_w8a8)
  examples/classifier/classifier_weights_w8a32.hpp  int8 linears, float activations (stf_classifier_w8a32)
  tests/golden/data/classifier_held_out.seq         the held-out set (not a golden case): one sequence
      a line, "tokens ; labels ; PyTorch's float predictions" (space-separated integers)
The int8 formats need no calibration data: weight scales come from the weights, and w8a8 scales
each row of a product's input at run time (kernels/QUANTIZATION.md); tests/e2e/test_classifier.cpp
measures their accuracy on the held-out set.
"""

import argparse
import filecmp
import math
import os
import random
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import stf_torch as st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "examples", "classifier", "classifier_weights{}.hpp")
STATE = os.path.join(ROOT, "tools", "classifier_model.pt")
HELD_OUT = os.path.join(ROOT, "tests", "golden", "data", "classifier_held_out.seq")

SEED = 1234
SEQ_LEN, VOCAB, D_MODEL, N_HEADS, D_FF, N_LAYERS, CLASSES = 8, 20, 16, 2, 32, 2, 5
PAD = 0
BATCH, LR, WARMUP, STEPS, EVAL_EVERY = 256, 3e-3, 200, 6000, 1000
HELD_OUT_COUNT, HELD_OUT_MIN_LEN = 4000, 4
MIN_ACCURACY = 0.90
# Label smoothing bounds the logits (without it they reach +-67, and float32's rounding, ~1e-6 of the
# largest, is more than 1e-5 relative on the small ones the example checks at that tolerance).
LABEL_SMOOTHING = 0.1
# The examples' input: counts 4, 2, 4, 1, 4, 2, 4 (classes 3 1 3 0 3 1 3), one PAD.
EXAMPLE_TOKENS = [7, 3, 7, 12, 7, 3, 7]

# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def labels_of(seq):
    """Each token's class: its count in the sequence, capped at 5, minus 1."""
    return [min(seq.count(t), CLASSES) - 1 for t in seq]


def random_sequence(rng, min_len=1):
    """n tokens (n uniform in min_len..8) drawn from a random alphabet of 1..n distinct tokens."""
    n = rng.randint(min_len, SEQ_LEN)
    alphabet = rng.sample(range(1, VOCAB), rng.randint(1, n))
    return [rng.choice(alphabet) for _ in range(n)]


def held_out_set(rng):
    """HELD_OUT_COUNT distinct sequences of HELD_OUT_MIN_LEN..8 tokens."""
    seen, out = set(), []
    while len(out) < HELD_OUT_COUNT:
        s = random_sequence(rng, HELD_OUT_MIN_LEN)
        if tuple(s) not in seen:
            seen.add(tuple(s))
            out.append(s)
    return out


def tensors(seqs):
    """(tokens [B,8], valid_len [B], labels [B,8] with -100 at PAD) for token lists."""
    tokens = torch.full((len(seqs), SEQ_LEN), PAD, dtype=torch.long)
    labels = torch.full((len(seqs), SEQ_LEN), -100, dtype=torch.long)
    for i, s in enumerate(seqs):
        tokens[i, :len(s)] = torch.tensor(s)
        labels[i, :len(s)] = torch.tensor(labels_of(s))
    return tokens, torch.tensor([len(s) for s in seqs]), labels


def training_batch(rng, excluded):
    seqs = []
    while len(seqs) < BATCH:
        s = random_sequence(rng)
        if tuple(s) not in excluded:
            seqs.append(s)
    return tensors(seqs)


# --------------------------------------------------------------------------------------------
# Model, training, evaluation
# --------------------------------------------------------------------------------------------


def build_model():
    """The classifier in train() mode with dropout 0 (identical to eval, never the fast path)."""
    return st.TorchTokenClassifier(VOCAB, N_LAYERS, D_MODEL, D_FF, N_HEADS, CLASSES, max_len=64).train()


@torch.no_grad()
def predictions(model, seqs):
    """PyTorch's float predictions (argmax of the logits; the first class on a tie), one list a sequence."""
    tokens, valid, _ = tensors(seqs)
    pred = model(tokens, valid).argmax(-1)
    return [pred[i, :len(s)].tolist() for i, s in enumerate(seqs)]


def accuracy(seqs, preds):
    """Token accuracy over the valid tokens."""
    right = sum(p == l for s, ps in zip(seqs, preds) for p, l in zip(ps, labels_of(s)))
    return right / sum(len(s) for s in seqs)


def train(model, held_out):
    """Adam, linear warmup then cosine decay to 0 over STEPS (a fixed, deterministic schedule)."""
    rng = random.Random(SEED + 1)
    excluded = {tuple(s) for s in held_out}
    probe = held_out[::4]
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.98), eps=1e-9)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        scale = min(step / WARMUP, 0.5 * (1 + math.cos(math.pi * step / STEPS)))
        for g in opt.param_groups:
            g["lr"] = LR * scale
        tokens, valid, labels = training_batch(rng, excluded)
        loss = F.cross_entropy(model(tokens, valid).reshape(-1, CLASSES), labels.reshape(-1), ignore_index=-100,
                               label_smoothing=LABEL_SMOOTHING)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % EVAL_EVERY == 0:
            print(f"step {step:5d}  loss {loss.item():.4f}  probe acc {accuracy(probe, predictions(model, probe)):.4f}"
                  f"  {time.time() - t0:.0f}s", flush=True)
    return time.time() - t0


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------


def outputs(header=HEADER, held_out=HELD_OUT):
    """The files the script writes: the three headers, then the held-out set."""
    return [header.format(f"_{fmt}" if fmt else "") for fmt in (None,) + tuple(export.NUMBER_FORMATS)] + [held_out]


def write_headers(model, header=HEADER, verbose=True):
    """The float32 and int8 headers, by export.emit_model (the same input: EXAMPLE_TOKENS)."""
    for fmt in (None,) + tuple(export.NUMBER_FORMATS):
        suffix = f"_{fmt}" if fmt else ""
        _, schema, _ = export.emit_model(model, f"stf_classifier{suffix}", SEQ_LEN, header.format(suffix),
                                         quantize=fmt, tokens=EXAMPLE_TOKENS)
        int8 = sum(math.prod(p["stored_shape"]) for p in schema["params"] if p["dtype"] == "I8")
        floats = sum(math.prod(p["stored_shape"]) for p in schema["params"] if p["dtype"] == "F32")
        if verbose:
            print(f"{os.path.relpath(header.format(suffix), ROOT)}: {fmt or 'f32'}: {floats} floats + {int8} int8 "
                  f"= {4 * floats + int8} B")


# --check on another CPU: PyTorch picks its float kernels per CPU, so its logits may differ in their
# last bits from the committed ones (the test input's test_logits; a held-out prediction whose top two
# logits are that close). Everything else of the export must match byte for byte.
LOGITS_TOLERANCE = 1e-6  # of the largest |logit|: a few float32 roundings (the example checks 1e-5)


def same_header(committed, fresh):
    """'' when fresh is committed but for PyTorch's test logits within LOGITS_TOLERANCE; else why not."""
    return export.emitted_difference(committed, fresh, {"test_logits", "test_logits_max_abs"}, LOGITS_TOLERANCE)


@torch.no_grad()
def same_held_out(model, committed, fresh):
    """'' when fresh is committed but for predictions on near-ties (top two logits within LOGITS_TOLERANCE)."""
    a, b = open(committed).read().splitlines(), open(fresh).read().splitlines()
    if len(a) != len(b):
        return f"{len(a)} lines, the export {len(b)}"
    for n, (x, y) in enumerate(zip(a, b), 1):
        if x == y:
            continue
        xs, ys = x.split(" ; "), y.split(" ; ")
        if len(xs) != 3 or xs[:2] != ys[:2]:
            return f"line {n}"
        seq = list(map(int, xs[0].split()))
        tokens, valid, _ = tensors([seq])
        logits = model(tokens, valid)[0]
        for t, (p, q) in enumerate(zip(xs[2].split(), ys[2].split())):
            if p == q:
                continue
            row = logits[t]
            top = row.topk(2).values
            if float(top[0] - top[1]) > LOGITS_TOLERANCE * float(row.abs().max()):
                return f"line {n}: token {t} predicted {p}, the export {q}, not a near-tie"
    return ""


def write_held_out(seqs, preds, path=HELD_OUT):
    with open(path, "w", newline="\n") as f:
        for s, p in zip(seqs, preds):
            f.write(" ".join(map(str, s)) + " ; " + " ".join(map(str, labels_of(s))) + " ; " +
                    " ".join(map(str, p)) + "\n")


def main():
    parser = argparse.ArgumentParser(description="train and export examples/classifier's model")
    parser.add_argument("--reuse", action="store_true",
                        help="skip training: load tools/classifier_model.pt, re-check and re-export")
    parser.add_argument("--check", action="store_true",
                        help="fail unless the committed headers and held-out set are the checkpoint's export")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    held_out = held_out_set(random.Random(SEED))
    model = build_model()
    if args.reuse or args.check:
        model.load_state_dict(torch.load(STATE), strict=False)  # PE table is rebuilt
        how = f"loaded {STATE}"
    else:
        how = f"trained {STEPS} steps in {train(model, held_out):.0f}s"
    preds = predictions(model, held_out)
    acc = accuracy(held_out, preds)
    print(f"{how}; float held-out token accuracy {100 * acc:.2f}% on {len(held_out)} sequences "
          f"({sum(len(s) for s in held_out)} tokens)")
    if acc < MIN_ACCURACY:
        print(f"error: below {100 * MIN_ACCURACY:.0f}% accuracy", file=sys.stderr)
        return 1
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            write_headers(model, os.path.join(tmp, "classifier_weights{}.hpp"), verbose=False)
            write_held_out(held_out, preds, os.path.join(tmp, "held_out.seq"))
            fresh = outputs(os.path.join(tmp, "classifier_weights{}.hpp"), os.path.join(tmp, "held_out.seq"))
            differ = []
            for c, f in zip(outputs(), fresh):
                if filecmp.cmp(c, f, shallow=False):
                    continue
                why = same_held_out(model, c, f) if c == HELD_OUT else same_header(c, f)
                if why:
                    differ.append(f"{os.path.relpath(c, ROOT)} ({why})")
                else:
                    print(f"train_classifier --check: {os.path.relpath(c, ROOT)}: differs only where this CPU's "
                          f"PyTorch rounds differently (within the tolerances)")
        print(f"train_classifier --check: {'these differ from' if differ else 'the committed files are'} the "
              f"export of {os.path.relpath(STATE, ROOT)}{': ' + ', '.join(differ) if differ else ''}")
        return 1 if differ else 0
    if not args.reuse:
        state = {k: v for k, v in model.state_dict().items() if not k.startswith("pos.")}
        torch.save(state, STATE)
    write_headers(model)
    write_held_out(held_out, preds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
