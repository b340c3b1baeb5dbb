#!/bin/sh
# Fails if machine code holds any AVX-512 instruction: an EVEX-encoded one (first opcode byte 0x62,
# which in 64-bit mode is always the EVEX prefix), or any operand that only AVX-512 has: a zmm
# register, xmm16-31 / ymm16-31, or a mask register k0-k7.
#   check_no_avx512.sh OBJDUMP ALLOW FILE...
# FILE: objects or linked binaries, disassembled with `OBJDUMP -d -C`. ALLOW: an extended regex of
# demangled function names whose AVX-512 code is expected (e.g. "avx512" for a linked binary that
# also holds the AVX-512 variant); empty: none. Prints the first offending instructions with their
# function and a count per function; fails too if it found no instruction at all (nothing checked).
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
      while (bytes ~ /^(26|2e|36|3e|64|65|67) /) bytes = substr(bytes, 4)  # prefixes EVEX may follow
      if (bytes ~ /^62 / || part[3] ~ /%zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])([^0-9]|$)|%k[0-7]([^0-9]|$)/) {
        bad++
        per_fn[fn]++
        if (bad <= 12) printf "  %s\t%s\n", fn, part[3]
      }
    }
    END {
      if (insns == 0) { printf "%s: no instruction disassembled: nothing was checked\n", file; exit 1 }
      if (bad > 0) {
        printf "%s: %d AVX-512 instructions (first ones above), by function:\n", file, bad
        for (f in per_fn) printf "  %6d  %s\n", per_fn[f], f
        exit 1
      }
      printf "%s: %d instructions, none AVX-512", file, insns
      if (skipped > 0) printf " (%d in functions matching /%s/ not checked)", skipped, allow
      printf "\n"
    }' || status=1
done
exit $status
