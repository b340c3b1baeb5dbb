#!/usr/bin/python3
"""Train the character-level decoder-only example (examples/gpt/) and write its header.

    /usr/bin/python3 tools/train_gpt.py            # train (~2 minutes, CPU, one thread), save, export
    /usr/bin/python3 tools/train_gpt.py --export   # only export the committed checkpoint again
    /usr/bin/python3 tools/train_gpt.py --check    # fail unless the committed header is the export
                                                   # of the committed checkpoint, byte for byte but
                                                   # for PyTorch's CPU-dependent last bits

The text: /usr/share/common-licenses/GPL-3 (Debian's base-files, in every base install). The
vocabulary: 96 tokens, id 0 = '\\n', ids 1..95 = ' '..'~' (printable ASCII; any other character
reads as ' '), so C++ needs no table (examples/gpt/gpt.cpp: to_token, to_char). The model:
tools/stf_torch.TorchDecoderOnly with the hand-written GptBlock layers (pre-norm, erf GELU): d_model
48, 4 heads, dim_feedforward 128, 2 layers, a final norm, trained on windows of CAPACITY = 64
characters; in C++ stf::Gpt<64, 96, 48, 4, 128, 2, pre-norm GELU>. Deterministic: fixed seeds, one
thread, CPU, torch.use_deterministic_algorithms (a second run on the machine that trained the
committed checkpoint, Debian 12's torch 1.13.1, reproduced its weights bit for bit; another CPU or
torch may differ in the last bits, which is why --check compares the header with the checkpoint,
not with a new training).

Outputs: examples/gpt/gpt_char.pt (the whole module, torch.save) and examples/gpt/gpt_char_model.hpp,
written by tools/export.py --emit-model gpt_char --seq-len 64 with the stored prompt PROMPT and
NEW_TOKENS greedy tokens (PyTorch's log-probabilities and tokens, which the example and the
firmware check).
"""

import argparse
import math
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import stf_torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = "/usr/share/common-licenses/GPL-3"
CHECKPOINT = os.path.join(ROOT, "examples", "gpt", "gpt_char.pt")
HEADER = os.path.join(ROOT, "examples", "gpt", "gpt_char_model.hpp")
NAME = "gpt_char"
VOCAB, D_MODEL, HEADS, D_FF, LAYERS, CAPACITY = 96, 48, 4, 128, 2, 64
STEPS, BATCH, LR, SEED = 2500, 32, 3e-3, 1234
PROMPT = "This License "
NEW_TOKENS = 40
# --check's tolerance for PyTorch's log-probabilities of the test prompt and steps (and their smallest
# top-2 gap, a difference of two of them): a share of the largest |log-probability| (21.9). PyTorch picks
# its float kernels per CPU: the header exported on an Intel Xeon (Sapphire Rapids) and again on an AMD Zen 5
# differ by up to 2.8e-5 in the step log-probabilities (1.3e-6 of the largest), 1.1e-5 in the prompt's
# and 4.8e-7 in the gap, with the weights and tokens byte for byte the same. 4e-6 (8.8e-5) leaves room
# for other CPUs and stays below the 1e-4 the example checks its own log-probabilities against.
LOGPROB_TOLERANCE = 4e-6


def to_token(c):
    return 0 if c == "\n" else (ord(c) - 31 if " " <= c <= "~" else 1)


def to_text(ids):
    return "".join("\n" if i == 0 else chr(i + 31) for i in ids)


def build_model():
    return stf_torch.TorchDecoderOnly(VOCAB, LAYERS, D_MODEL, D_FF, HEADS, final_norm=True, block="gpt")


def train():
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    with open(TEXT, encoding="utf-8") as f:
        data = torch.tensor([to_token(c) for c in f.read()], dtype=torch.long)
    model = build_model()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    gen = torch.Generator().manual_seed(SEED)
    start = time.time()
    for step in range(STEPS):
        lr = LR * 0.5 * (1 + math.cos(math.pi * step / STEPS))
        for g in opt.param_groups:
            g["lr"] = lr
        at = torch.randint(len(data) - CAPACITY - 1, (BATCH,), generator=gen)
        x = torch.stack([data[i:i + CAPACITY] for i in at])
        y = torch.stack([data[i + 1:i + CAPACITY + 1] for i in at])
        # TorchDecoderOnly runs one sequence ([1, L] -> [L, V]); the batch goes through the parts
        h = model.pos(model.embed(x))
        for layer in model.layers:
            h = layer(h)
        logp = model.generator(model.norm(h))
        loss = torch.nn.functional.nll_loss(logp.reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == STEPS - 1:
            print(f"step {step:5d}  loss {loss.item():.4f}  ({time.time() - start:.0f} s)", flush=True)
    return model


def export_header(header):
    prompt = ",".join(str(to_token(c)) for c in PROMPT)
    rc = export.main([CHECKPOINT, "--emit-model", NAME, "--seq-len", str(CAPACITY), "--header", header,
                      "--prompt-tokens", prompt, "--new-tokens", str(NEW_TOKENS)])
    if rc != 0:
        raise SystemExit(rc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--export", action="store_true", help="only export the committed checkpoint again")
    ap.add_argument("--check", action="store_true", help="fail unless the committed header is the checkpoint's export")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "gpt_char_model.hpp")
            export_header(out)
            with open(out, "rb") as a, open(HEADER, "rb") as b:
                identical = a.read() == b.read()
            # (PyTorch's log-probabilities of the test prompt may differ in their last bits on another CPU)
            why = "" if identical else export.emitted_difference(
                HEADER, out, {"test_prompt_logprobs", "test_step_logprobs", "test_min_margin"}, LOGPROB_TOLERANCE,
                shared_scale=True)
        print(f"train_gpt --check: {os.path.relpath(HEADER, ROOT)} {'is' if not why else 'is NOT'} the export of "
              f"{os.path.relpath(CHECKPOINT, ROOT)}" + ("" if identical or why else
                                                       f" (but for PyTorch's last bits, within {LOGPROB_TOLERANCE:g} "
                                                       "of the largest |log-probability|)")
              + (f": {why}" if why else ""))
        return 0 if not why else 1
    if not args.export:
        model = train()
        # the positional table the model uses: CAPACITY rows (the same values as the first rows of
        # the 5000 it was built with), not 0.9 MB of unused ones in the checkpoint
        pos = stf_torch.PositionalEncoding(D_MODEL, max_len=CAPACITY)
        assert torch.equal(pos.pe, model.pos.pe[:, :CAPACITY])
        model.pos = pos
        torch.save(model, CHECKPOINT)
        with torch.no_grad():
            _, tokens, _, _ = stf_torch.greedy_generate(model, torch.tensor([to_token(c) for c in PROMPT]),
                                                        NEW_TOKENS)
        print(f"greedy: {PROMPT + to_text(tokens.tolist())!r}")
    export_header(HEADER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
