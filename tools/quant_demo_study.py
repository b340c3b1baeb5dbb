#!/usr/bin/env python3
"""Why the demo's w8a32 model does not decode every held-out sequence as the float one (issue 23).

Simulates w8a32 in PyTorch: the trained demo model (tools/demo_model.pt) with the weights of every
encoder and decoder layer's linears replaced by q_w * s_w (kernels/QUANTIZATION.md's weights),
greedy-decodes the 10,000 held-out sequences (tools/train_demo.py) and lists those decoded otherwise
than by the float model (compared up to EOS, as tests/e2e/test_demo.cpp does), under three weight
roundings: the scheme's (max |w| / 127 per channel), per-channel scales minimizing the squared weight
error (clip ratio 0.5..1.0), the scheme's with bias correction (b += (W - q_w s_w) E[x], E[x] over
2,000 training-distribution sequences), and the scheme's scales with the rounding calibrated by
tools/calibrate.py (export.py --calibrate) over those 2,000 sequences. For each it prints the largest
and mean |log-probability error| against the float model (teacher-forced over the float model's greedy
tokens, every held-out sequence and step), and for each listed sequence the float model's margin
(top-1 minus top-2 log-probability) at the step where the decodings part.

Usage: python3 tools/quant_demo_study.py   (Debian's python3-torch; about five minutes on one core)
"""
import os
import random
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402
import export  # noqa: E402
import stf_torch as st  # noqa: E402
import train_demo as td  # noqa: E402


def main():
    torch.set_num_threads(1)
    model = td.build_model()  # train() mode, dropout 0: the model the C++ demo is checked against
    model.load_state_dict(torch.load(td.STATE), strict=False)
    held = td.held_out_set(random.Random(td.SEED))
    src, valid, _ = td.tensors(held)

    def decode_all():
        out = torch.cat([td.batch_greedy(model, src[i:i + 1000], valid[i:i + 1000])
                         for i in range(0, len(held), 1000)]).tolist()
        return [tuple(r[:r.index(td.EOS) + 1]) if td.EOS in r else tuple(r) for r in out]

    base = decode_all()
    base_tokens_cache = base_tokens(model, src, valid)
    base_lp = logprobs_all(model, src, valid, base_tokens_cache)
    orig = {k: v.clone() for k, v in model.state_dict().items()}
    linears = [k for k, v in orig.items() if v.dim() == 2 and "layers" in k and k.endswith("weight")]
    means = input_means(model, held)

    def scheme(w):
        q, s = st.quantize_weight(w)
        return q.float() * s[:, None]

    def mse_clipped(w, steps=200, lo=0.5):
        a = w.abs().amax(dim=1)
        best, best_err = None, None
        for i in range(steps + 1):
            s = a * (lo + (1 - lo) * i / steps) / 127.0
            d = torch.round(w / s[:, None]).clamp(-127, 127) * s[:, None]
            err = ((w - d) ** 2).sum(dim=1)
            if best is None:
                best, best_err = d.clone(), err
            else:
                better = err < best_err
                best[better], best_err = d[better], torch.where(better, err, best_err)
        return best

    cal = calibration(model, held)

    def calibrated(w):  # per q/k/v block of a packed in_proj, as export.py stores them
        parts = w.split(w.shape[1]) if w.shape[0] == 3 * w.shape[1] else [w]
        out = []
        for part in parts:
            q, s = cal.quantize(part)
            out.append(q.float() * s[:, None])
        return torch.cat(out)

    for name, rounding, correct in [("scheme", scheme, False), ("mse-clipped scales", mse_clipped, False),
                                    ("scheme + bias correction", scheme, True),
                                    ("calibrated rounding (tools/calibrate.py)", calibrated, False)]:
        sd = dict(orig)
        for k in linears:
            sd[k] = rounding(orig[k])
            if correct:
                bias_correct(sd, orig, k, means)
        model.load_state_dict(sd)
        out = decode_all()
        lp = logprobs_all(model, src, valid, base_tokens_cache)
        model.load_state_dict(orig)
        differ = [i for i in range(len(held)) if out[i] != base[i]]
        err = (lp - base_lp).abs()
        print(f"{name}: {len(held) - len(differ)} of {len(held)} decoded as float32; |log-prob error| max "
              f"{float(err.max()):.3f}, mean {float(err.mean()):.4f}")
        for i in differ[:10]:
            step = next(j for j, (a, b) in enumerate(zip(out[i], base[i])) if a != b)
            print(f"  {''.join(map(str, held[i]))}: parts at output step {step - 1}, "
                  f"float margin {float_margin(model, held[i], base[i], step):.3f}")


def base_tokens(model, src, valid):
    """The float model's greedy tokens [N, TGT_LEN] (batched as decode_all)."""
    return torch.cat([td.batch_greedy(model, src[i:i + 1000], valid[i:i + 1000]) for i in range(0, len(src), 1000)])


def logprobs_all(model, src, valid, tokens):
    """The model's log-probabilities [N, TGT_LEN - 1, V], teacher-forced over `tokens`."""
    out = []
    with torch.no_grad():
        for i in range(0, len(src), 1000):
            s, v, ys = src[i:i + 1000], valid[i:i + 1000], tokens[i:i + 1000, :-1]
            mask = st.padding_mask(v, td.SRC_LEN)
            o = model.decode(model.encode(s, mask), mask, ys, st.subsequent_mask(ys.size(1)))
            out.append(model.generator(o))
    return torch.cat(out)


def calibration(model, held):
    """tools/calibrate.py's Calibration of the model over td.calibration_sources (as export.py --calibrate
    would take them: one token tensor per source, at its own length)."""
    spec = dict(export.describe_module(model), tgt_len=td.TGT_LEN)
    inputs = [torch.tensor(td.encode_pair(s)[0][:len(s)]) for s in td.calibration_sources(held)]
    return calibrate.Calibration(model, spec, calibrate.check(inputs, spec, td.SRC_LEN), td.BOS)


def float_margin(model, digits, decoded, step):
    """The float model's top-1 minus top-2 log-probability where it chose decoded[step]."""
    s, v, _ = td.tensors([digits])
    with torch.no_grad():
        mask = st.padding_mask(v, td.SRC_LEN)
        ys = torch.tensor([list(decoded[:step])])
        out = model.decode(model.encode(s, mask), mask, ys, st.subsequent_mask(step))
        top = model.generator(out[:, -1])[0].topk(2).values
    return float(top[0] - top[1])


def input_means(model, held):
    """E[x] of every layer linear's input over 2,000 training-distribution sequences (none held out):
    linear1/linear2 by hooks, in_proj by its query and key/value inputs (out_proj is not reached by
    hooks: MultiheadAttention calls the functional form, so it is left uncorrected)."""
    cal = td.calibration_sources(held)
    seen, hooks = {}, []

    def keep(key, x):
        seen.setdefault(key, []).append(x.detach().reshape(-1, x.shape[-1]))

    for name, mod in model.named_modules():
        if isinstance(mod, nn.Linear) and "layers" in name and "out_proj" not in name:
            hooks.append(mod.register_forward_hook(lambda m, i, o, k=name + ".weight": keep(k, i[0])))
        if isinstance(mod, nn.MultiheadAttention):
            def h(m, i, o, k=name + ".in_proj_weight"):
                keep(k + ".q", i[0])
                keep(k + ".kv", i[1])
            hooks.append(mod.register_forward_hook(h))
    s, v, _ = td.tensors(cal)
    td.batch_greedy(model, s, v)
    for h in hooks:
        h.remove()
    return {k: torch.cat(x).double().mean(0) for k, x in seen.items()}


def bias_correct(sd, orig, k, means):
    err = orig[k].double() - sd[k].double()
    if k.endswith("in_proj_weight"):
        bk = k[:-len("in_proj_weight")] + "in_proj_bias"
        d = err.shape[1]
        b = orig[bk].double().clone()
        b[:d] += err[:d] @ means[k + ".q"]
        b[d:] += err[d:] @ means[k + ".kv"]
        sd[bk] = b.float()
    elif k in means:
        bk = k[:-len("weight")] + "bias"
        sd[bk] = (orig[bk].double() + err @ means[k]).float()


if __name__ == "__main__":
    main()
