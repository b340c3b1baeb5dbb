#!/usr/bin/python3
"""How much a build without -march loses against -march=native: stf::EncoderLayer at the three layer
shapes of bench_layers, timed in bench_build_native (the native preset's -march=native: the static
variant) and in bench_build_default (no -march: isa::dispatch, run as it chooses, then forced to AVX2
and to scalar with STF_ISA), with a table of medians and ratios to native.

    bench/dispatch/compare_builds.py            # configure + build the native preset's two targets, run
    bench/dispatch/compare_builds.py --quick    # one short repetition each (a smoke run)

Run it on a quiet machine: the repetitions are interleaved in random order (this VM's speed drifts),
and the table shows CPU time (time descheduled is not counted), but other processes on the same cores
still move the numbers by several percent or more (caches, SMT siblings).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHAPES = ["10x16x2x32", "32x64x4x256", "64x128x4x512"]  # bench_layers' BM_EncoderLayer shapes
# (label, executable, STF_ISA or None for unset)
RUNS = [
    ("-march=native", "bench_build_native", None),
    ("no -march", "bench_build_default", None),
    ("no -march, STF_ISA=avx2", "bench_build_default", "avx2"),
    ("no -march, STF_ISA=scalar", "bench_build_default", "scalar"),
]


def run(exe, isa, args):
    env = dict(os.environ)
    env.pop("STF_ISA", None)
    if isa:
        env["STF_ISA"] = isa
    gb = [
        exe,
        "--benchmark_filter=^EncoderLayer/.*/(%s)$" % "|".join(SHAPES),
        "--benchmark_min_time=%s" % args.min_time,
        "--benchmark_repetitions=%d" % args.repetitions,
        "--benchmark_format=json",
    ]
    if args.repetitions > 1:
        gb += ["--benchmark_enable_random_interleaving=true", "--benchmark_report_aggregates_only=true"]
    out = subprocess.run(gb, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    data = json.loads(out)
    times = {}
    for b in data["benchmarks"]:
        if args.repetitions > 1 and b.get("aggregate_name") != "median":
            continue
        shape = b["run_name"].rsplit("/", 1)[1]
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b["time_unit"]]
        times[shape] = b["cpu_time"] * scale
    return data["context"].get("stf_kernels", "?"), data["context"].get("stf_build", ""), times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="one short repetition each (smoke run)")
    p.add_argument("--no-build", action="store_true", help="use the executables as built")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "native", "bench", "dispatch"),
                   help="folder of bench_build_native and bench_build_default")
    p.add_argument("--min-time", type=float, default=None, help="seconds per repetition (default 0.5)")
    p.add_argument("--repetitions", type=int, default=None, help="repetitions (default 5)")
    args = p.parse_args()
    args.min_time = args.min_time or (0.01 if args.quick else 0.5)
    args.repetitions = args.repetitions or (1 if args.quick else 5)
    if not args.no_build:
        subprocess.run(["cmake", "--preset", "native"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", "--preset", "native", "--target", "bench_build_native",
                        "bench_build_default"], cwd=ROOT, check=True)
    load = open("/proc/loadavg").read().split()[:3]
    results, builds = [], []
    for label, exe, isa in RUNS:
        variant, build, times = run(os.path.join(args.bin, exe), isa, args)
        missing = [s for s in SHAPES if s not in times]
        if missing:
            sys.exit("compare_builds: %s gave no time for %s" % (exe, ", ".join(missing)))
        results.append(("%s (%s)" % (label, variant), times))
        builds.append("%s: %s, %s" % (label, exe, build))
    native = results[0][1]
    print("stf::EncoderLayer, median CPU time per call in µs (ratio to -march=native); %d repetitions of %.2f s;"
          " load average %s at the start, %s at the end"
          % (args.repetitions, args.min_time, " ".join(load), " ".join(open("/proc/loadavg").read().split()[:3])))
    print()
    print("| S x D x H x F | " + " | ".join(name for name, _ in results) + " |")
    print("|---|" + "---|" * len(results))
    for s in SHAPES:
        cells = ["%.1f" % native[s]] + ["%.1f (%.2fx)" % (t[s], t[s] / native[s]) for _, t in results[1:]]
        print("| %s | %s |" % (s, " | ".join(cells)))
    print()
    for b in builds:
        print("- " + b)


if __name__ == "__main__":
    main()
