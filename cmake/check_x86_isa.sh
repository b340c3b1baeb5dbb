#!/bin/sh
# Fails if x86-64 machine code holds an instruction beyond a level:
#   check_x86_isa.sh LEVEL OBJDUMP ALLOW FILE...
# LEVEL:
#   no-avx512  no AVX-512 instruction: an EVEX-encoded one (first opcode byte 0x62, which in 64-bit
#              mode is always the EVEX prefix), or any operand only AVX-512 has: a zmm register,
#              xmm16-31 / ymm16-31, or a mask register k0-k7 (AVX2 code on an AVX-512 machine);
#   baseline   nothing beyond x86-64's baseline (SSE2), which a build without -march must not run
#              before it has asked the CPU: also no VEX-encoded instruction (AVX, AVX2, FMA: first
#              opcode byte 0xc4 or 0xc5, always the VEX prefix in 64-bit mode) and no ymm operand.
# FILE: objects or linked binaries, disassembled with `OBJDUMP -d -C`. ALLOW: an extended regex of
# demangled function names whose such code is expected (the AVX2 and AVX-512 kernel variants,
# called only where the CPU runs them); empty: none. Prints the first offending instructions with
# their function and a count per function; fails too if it checked no instruction, or, at the
# baseline level, if ALLOW matched no function (then it allowed nothing, and a wrong regex would go
# unnoticed; a program checked for no-avx512 may link no AVX-512 variant at all).
set -eu
level=$1
objdump=$2
allow=$3
shift 3
case $level in
  no-avx512)
    opcodes='^62 '
    operands='%zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])([^0-9]|$)|%k[0-7]([^0-9]|$)'
    what='AVX-512 instructions'
    must_allow=0 ;;
  baseline)
    opcodes='^(c4|c5|62) '
    operands='%[yz]mm[0-9]|%k[0-7]([^0-9]|$)'
    what='instructions beyond the x86-64 baseline'
    must_allow=1 ;;
  *)
    echo "check_x86_isa.sh: LEVEL must be no-avx512 or baseline, not '$level'" >&2
    exit 2 ;;
esac
status=0
for file in "$@"; do
  "$objdump" -d -C --insn-width=16 "$file" | awk -v allow="$allow" -v file="$file" -v opcodes="$opcodes" \
                                                -v operands="$operands" -v what="$what" \
                                                -v must_allow="$must_allow" '
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
      if (bytes ~ opcodes || part[3] ~ operands) {
        bad++
        per_fn[fn]++
        if (bad <= 12) printf "  %s\t%s\n", fn, part[3]
      }
    }
    END {
      if (insns == 0) { printf "%s: no instruction disassembled: nothing was checked\n", file; exit 1 }
      if (must_allow && allow != "" && skipped == 0) { printf "%s: no function matches /%s/\n", file, allow; exit 1 }
      if (bad > 0) {
        printf "%s: %d %s (first ones above), by function:\n", file, bad, what
        for (f in per_fn) printf "  %6d  %s\n", per_fn[f], f
        exit 1
      }
      printf "%s: %d instructions, no %s", file, insns, what
      if (skipped > 0) printf " (%d in functions matching /%s/ not checked)", skipped, allow
      printf "\n"
    }' || status=1
done
exit $status
