#!/usr/bin/python3
"""The benchmark plan (bench/plan.hpp) is the one list of shapes: torch_bench.py reads the shapes
bench_peers registers for statiformer, Eigen and oneDNN, in the same order, and refuses a plan it
cannot read whole.

    /usr/bin/python3 bench/peers/test_plan.py BENCH_PEERS_EXECUTABLE

Standard library only: torch_bench.py's --list and read_plan run before it imports torch.
"""

import importlib.util
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_BENCH = os.path.join(HERE, "torch_bench.py")


def shapes_of(names, family, impl_pattern):
    """The shape part of the names family/<impl>/<shape>, in order, for impls matching impl_pattern."""
    out = []
    for n in names:
        m = re.fullmatch(r"%s/(%s)/([0-9x]+)" % (family, impl_pattern), n)
        if m:
            out.append(m.group(2))
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    failures = []

    def check(what, got, want):
        ok = got == want
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {got}" + ("" if ok else f", expected {want}"))
        if not ok:
            failures.append(what)

    lines = subprocess.run([sys.executable, TORCH_BENCH, "--list"], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    torch_enc = [l for l in lines if not l.startswith("step ")]
    torch_step = [l[len("step "):] for l in lines if l.startswith("step ")]
    names = subprocess.run([sys.argv[1], "--benchmark_list_tests=true"], check=True, capture_output=True,
                           text=True).stdout.split()
    check("statiformer's encoder shapes (bench_peers) = torch_bench's", shapes_of(names, "EncoderLayer", r"stf\.[^/]+"),
          torch_enc)
    check("Eigen's encoder shapes = torch_bench's", shapes_of(names, "EncoderLayer", "eigen"), torch_enc)
    dnnl = shapes_of(names, "EncoderLayer", "onednn")
    if dnnl:  # (optional: bench_peers without oneDNN has none)
        check("oneDNN's encoder shapes = torch_bench's", dnnl, torch_enc)
    check("statiformer's int8 shapes = torch_bench's",
          list(dict.fromkeys(shapes_of(names, "EncoderLayerInt8", r"stf\.[^/]+"))), torch_enc)
    check("statiformer's decoder steps = torch_bench's", shapes_of(names, "DecoderStep", r"stf\.[^/]+"), torch_step)
    check("Eigen's decoder steps = torch_bench's", shapes_of(names, "DecoderStep", "eigen"), torch_step)
    check("every plan shape was listed", len(torch_enc) >= 1 and len(torch_step) >= 1, True)

    # a plan torch_bench cannot read whole is an error, not a shape missing from its table
    spec = importlib.util.spec_from_file_location("torch_bench", TORCH_BENCH)
    tb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tb)
    with open(tb.PLAN, encoding="utf-8") as f:
        plan = f.read()
    good = tb.read_plan()
    check("read_plan on bench/plan.hpp", (len(good[0]), len(good[1])), (len(torch_enc), len(torch_step)))
    broken = {
        "an entry without its type": plan.replace("EncoderShape{25, 64, 4, 128}", "{25, 64, 4, 128}"),
        "an entry of three numbers": plan.replace("EncoderShape{25, 64, 4, 128}", "EncoderShape{25, 64, 4}"),
        "no decoder steps": plan.replace("kDecoderSteps", "kSteps"),
    }
    for what, text in broken.items():
        if text == plan:
            check(f"the plan has the entry the refusal '{what}' edits", False, True)
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".hpp", delete=False) as f:
            f.write(text)
        try:
            tb.read_plan(f.name)
            refused = False
        except SystemExit as e:
            refused = "torch_bench:" in str(e)
        finally:
            os.unlink(f.name)
        check(f"read_plan refuses {what}", refused, True)

    print("FAILED: " + "; ".join(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
