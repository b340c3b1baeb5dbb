#!/bin/sh
# Fails if machine code holds any instruction beyond x86-64's baseline (SSE2) that a build without
# -march must not execute before it has asked the CPU: a VEX-encoded one (AVX, AVX2, FMA: first
# opcode byte 0xc4 or 0xc5, which in 64-bit mode are always the VEX prefix), an EVEX-encoded one
# (0x62, AVX-512), or any ymm, zmm or mask register operand.
#   check_x86_baseline.sh OBJDUMP ALLOW FILE...
# FILE: objects or linked binaries, disassembled with `OBJDUMP -d -C`. ALLOW: an extended regex of
# demangled function names whose such code is expected (the AVX2 and AVX-512 kernel variants,
# called only where the CPU runs them); empty: none. Prints the first offending instructions with
# their function and a count per function; fails too if it checked no instruction, or if ALLOW
# matched no function (then it allowed nothing, and a wrong regex would go unnoticed).
set -eu
objdump=$1
allow=$2
shift 2
status=0
for file in "$@"; do
  "$objdump" -d -C --insn-width=16 "$file" | awk -v allow="$allow" -v file="$file" '
    /^[0-9a-f]+ <.*>:$/ {
      fn = substr($0, index($0, "<") + 1)
      fn = substr(fn, 1, length(fn) - 2)
      allowed = allow != "" && fn ~ allow
      next
    }
    /^ *[0-9a-f]+:\t/ {
      n = split($0, part, "\t")
      if (n < 3) next  # a padding line without an instruction
      insns++
      if (allowed) { skipped++; next }
      bytes = part[2]
      while (bytes ~ /^(26|2e|36|3e|64|65|67) /) bytes = substr(bytes, 4)  # prefixes VEX/EVEX may follow
      if (bytes ~ /^(c4|c5|62) / || part[3] ~ /%[yz]mm[0-9]|%k[0-7]([^0-9]|$)/) {
        bad++
        per_fn[fn]++
        if (bad <= 12) printf "  %s\t%s\n", fn, part[3]
      }
    }
    END {
      if (insns == 0) { printf "%s: no instruction disassembled: nothing was checked\n", file; exit 1 }
      if (allow != "" && skipped == 0) { printf "%s: no function matches /%s/\n", file, allow; exit 1 }
      if (bad > 0) {
        printf "%s: %d instructions beyond the x86-64 baseline (first ones above), by function:\n", file, bad
        for (f in per_fn) printf "  %6d  %s\n", per_fn[f], f
        exit 1
      }
      printf "%s: %d instructions, none beyond the x86-64 baseline", file, insns
      if (skipped > 0) printf " (%d in functions matching /%s/ not checked)", skipped, allow
      printf "\n"
    }' || status=1
done
exit $status
