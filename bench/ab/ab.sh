#!/usr/bin/env bash
# bench/ab/ab.sh BASE [SUBSTRING...] — x86: the encoder layer and the decoder step of the working tree
# against those of git revision BASE, both compiled into one executable (bench_ab: the baseline's tree with
# -Dstf=stf_base) and timed in pairs, base and new one after the other (ab_main.cpp). On a shared VM whose speed switches
# between levels ~40 % apart several times a minute, runs of two executables in turn gave pair ratios
# spread over ±8 % and more; pairs a few milliseconds apart see one level. Prints per shape both medians,
# the median of the pairs' ratios new / base with their quartiles, the ratio of the two minima, and whether
# the two sides' outputs have the same bits (a checksum).
#   SUBSTRING: shapes to time, e.g. 10x16 128x256 DecoderStep EncoderLayerInt8/w8a8/ (default: all: the
#   encoder layer and the decoder step at the shapes of bench/plan.hpp, a step at 64x64x64x4x128, and the
#   encoder layer in w8a8, w8a32 and w8a8 with int8 attention at the plan's shapes; ab_layers.cpp)
# Environment: ROUNDS (pairs per shape, default 21), PAIR_MS (default 20), OUT (default build/ab),
# CXX (default g++). Needs git and an x86-64 CPU with AVX2 or AVX-512 (-march=native: the layers call the
# machine's own variant, as in the native preset).
set -euo pipefail
cd "$(dirname "$0")/../.."
base=${1:?usage: bench/ab/ab.sh BASE_REVISION [SUBSTRING...]}
shift
out=${OUT:-build/ab}
cxx=${CXX:-g++}
git rev-parse --verify --quiet "$base^{commit}" >/dev/null || { echo "ab.sh: '$base' is not a revision" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out/base" "$out/obj"
git archive "$base" include src | tar -x -C "$out/base"
flags=(-std=gnu++20 -O3 -DNDEBUG -march=native -ffp-contract=off -w)

# compile SIDE ROOT: every library source of the tree at ROOT (src/, the variants with the flags the CMake
# target gives them) and ab_layers.cpp against its headers
compile() {
  local side=$1 root=$2 rename=() file extra
  [ "$side" = base ] && rename=(-Dstf=stf_base)
  while IFS= read -r file; do
    case $(basename "$file") in
      variant_avx2.cpp) extra="-mavx2 -mfma -mno-avx512f" ;;
      variant_avx512.cpp) extra="-mavx512f" ;;
      *) extra="" ;;
    esac
    echo "$cxx ${flags[*]} ${rename[*]} $extra -I$root/include -c $root/$file -o $out/obj/$side.$(echo "$file" | tr / .).o"
  done < <(cd "$root" && find src -name '*.cpp' | sort)
  # (a tree from before LayerOptions::int8_attention: no int8 cases on its side)
  grep -q int8_attention "$root/include/statiformer/layers/options.hpp" 2>/dev/null || rename+=(-DSTF_AB_NO_INT8)
  echo "$cxx ${flags[*]} ${rename[*]} -DSTF_AB_SIDE=$side -I$root/include -c bench/ab/ab_layers.cpp -o $out/obj/$side.ab_layers.o"
}
{ compile base "$out/base"; compile new .; } >"$out/compile.txt"
echo "ab.sh: building $out/bench_ab ($(git rev-parse --short "$base") against the working tree)"
xargs -P 2 -I{} sh -c '{}' <"$out/compile.txt"
"$cxx" "${flags[@]}" bench/ab/ab_main.cpp "$out"/obj/*.o -o "$out/bench_ab"
filters=()
for f in "$@"; do filters+=(--filter "$f"); done
"$out/bench_ab" --rounds "${ROUNDS:-21}" --pair-ms "${PAIR_MS:-20}" "${filters[@]}"
