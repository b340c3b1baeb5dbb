#!/usr/bin/env bash
# bench/run_bench.sh [--quick] — build and run every benchmark, time PyTorch, write the report.
#   build/bench/<executable>.json   Google Benchmark JSON of bench_layers, bench_peers, bench_stf_<isa>
#   build/bench/torch.json          PyTorch's nn.TransformerEncoderLayer, float and int8, and its decoder step
#                                   through a K/V cache (bench/peers/torch_bench.py)
#   build/bench/report.md, .png     bench/report/report.py over all of them
# --quick: one short repetition each, for a CI smoke run (PyTorch only if already installed).
# Environment: JOBS=N build parallelism (default: the preset's); BENCH_NOTE=text quoted in the report;
# MIN_TIME=seconds and REPETITIONS=n override the timing of every benchmark (full: 0.5 s, 5).
# Installs what is missing with apt-get (Debian 12): the build dependencies, libeigen3-dev,
# libopenblas-serial-dev (the products alone against OpenBLAS), libdnnl-dev (the oneDNN peer),
# python3-matplotlib, and in full mode
# python3-torch and libopenblas0-serial.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "run_bench.sh: unknown argument '$arg' (usage: bench/run_bench.sh [--quick])" >&2; exit 2 ;;
  esac
done

PY=/usr/bin/python3  # Debian's: python3-torch and python3-matplotlib are installed for it
OUT=build/bench
BIN=build/native/bench
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
OPENBLAS_SERIAL=/usr/lib/$MULTIARCH/openblas-serial

# ---- dependencies -----------------------------------------------------------------------------------
packages=(g++ cmake make libboost1.81-dev catch2 libbenchmark-dev libeigen3-dev libopenblas-serial-dev
  libdnnl-dev python3-matplotlib)
[ $quick -eq 1 ] || packages+=(python3-torch libopenblas0-serial)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run_bench: installing ${missing[*]}"
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -q
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
fi

# ---- build --------------------------------------------------------------------------------------------
cmake --preset native >/dev/null
cmake --build --preset native ${JOBS:+--parallel "$JOBS"} --target bench_layers bench_peers

# ---- run ----------------------------------------------------------------------------------------------
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/report.md "$OUT"/report.png  # never mix results of two runs
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
if [ $quick -eq 1 ]; then
  min_time=${MIN_TIME:-0.01} repetitions=${REPETITIONS:-1}
  torch_args=(--quick)
else
  min_time=${MIN_TIME:-0.5} repetitions=${REPETITIONS:-5}
  torch_args=()
fi
gb_args=(--benchmark_min_time="$min_time" --benchmark_repetitions="$repetitions")
# Repetitions interleaved in random order across an executable's benchmarks: this VM's speed drifts
# by several percent over minutes, and run back to back, the 5 repetitions of one implementation
# and those of its peer would see different machines. Interleaved, each median (statiformer, Eigen,
# the FMA peak of bench_peers) is taken over the same stretch of time, so their ratios are too.
[ "$repetitions" -gt 1 ] && gb_args+=(--benchmark_display_aggregates_only=true --benchmark_enable_random_interleaving=true)
torch_args+=(--min-time "$min_time" --repetitions "$repetitions")

run_gb() {  # run_gb EXECUTABLE: its JSON goes to $OUT/EXECUTABLE.json
  local exe=$1
  echo "=== $exe"
  "$BIN/$exe" "${gb_args[@]}" --benchmark_out="$OUT/$exe.json" --benchmark_out_format=json
}
run_gb bench_peers  # first: the report keeps the first result of a name
# the variant bench_peers measured, interleaved with its peers: its bench_stf_<isa> would only repeat it
native_variant=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["context"].get("stf_kernels", ""))' \
  "$OUT/bench_peers.json" 2>/dev/null || true)
for exe in "$BIN"/bench_stf_*; do
  [ -x "$exe" ] || continue
  if [ -n "$native_variant" ] && [ "$(basename "$exe")" = "bench_stf_$native_variant" ]; then
    echo "=== $(basename "$exe"): skipped, bench_peers measured stf.$native_variant"
    continue
  fi
  run_gb "$(basename "$exe")"
done
run_gb bench_layers

# PyTorch, on Debian's OpenBLAS (serial): with the reference BLAS torch is 25-40x slower.
echo "=== torch_bench.py"
if "$PY" -c "import torch" 2>/dev/null; then
  torch_env=()
  blas=$(readlink -f "/etc/alternatives/libblas.so.3-$MULTIARCH" 2>/dev/null || true)
  if [[ "$blas" != */openblas-serial/* ]]; then
    if [ -e "$OPENBLAS_SERIAL/libblas.so.3" ]; then
      echo "run_bench: the system's libblas.so.3 is ${blas:-unset}, not OpenBLAS (serial); torch_bench runs with" \
        "LD_LIBRARY_PATH=$OPENBLAS_SERIAL (system left as is; to select it for all:" \
        "update-alternatives --set libblas.so.3-$MULTIARCH $OPENBLAS_SERIAL/libblas.so.3)" >&2
      torch_env=(env "LD_LIBRARY_PATH=$OPENBLAS_SERIAL${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    else
      echo "run_bench: WARNING: torch uses ${blas:-an unknown BLAS}, not OpenBLAS (serial: apt-get install" \
        "libopenblas0-serial); its numbers will be far too slow" >&2
    fi
  fi
  "${torch_env[@]}" "$PY" bench/peers/torch_bench.py --out "$OUT/torch.json" "${torch_args[@]}"
else
  echo "run_bench: PyTorch is not available to $PY (apt-get install python3-torch); torch skipped"
fi

# ---- report -------------------------------------------------------------------------------------------
note="$(nproc) CPUs; load average at the start $load_at_start, at the end $(cut -d' ' -f1-3 /proc/loadavg)"
[ $quick -eq 0 ] || note+="; --quick run: one short repetition each, indicative numbers only"
notes=("$note")
[ -n "${BENCH_NOTE:-}" ] && notes+=("$BENCH_NOTE")
note_args=()
for n in "${notes[@]}"; do note_args+=(--note "$n"); done
inputs=()
for f in "$OUT"/bench_peers.json "$OUT"/bench_stf_*.json "$OUT"/torch.json "$OUT"/bench_layers.json; do
  [ -e "$f" ] && inputs+=("$f")
done
"$PY" bench/report/report.py --md "$OUT/report.md" --png "$OUT/report.png" "${note_args[@]}" "${inputs[@]}"
echo "run_bench: $OUT/report.md, $OUT/report.png"
