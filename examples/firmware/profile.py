#!/usr/bin/env python3
"""Instructions by function of one traced firmware run (examples/firmware/profile_firmware.cpp):
qemu-system-arm one instruction per translation block (-singlestep), every executed block logged
(-d exec,nochain); counts the lines between the markers profile_begin and profile_end.

  examples/firmware/profile.py build/cortex-m55 1 [--pc] [--format=w8a8]
  (shape 0, 1 or 2; --pc: by address too; --focus=NAME: the disassembly of the functions whose names
  contain NAME, with counts; --format: w8a8, w8a32 or w8a8_int8_attention, else float32)
"""
import collections, os, re, subprocess, sys

MACHINES = {"m4": "mps2-an386", "m7": "mps2-an500", "m55": "mps3-an547"}

def main():
    build, shape = sys.argv[1], sys.argv[2]
    by_pc = "--pc" in sys.argv or any(a.startswith("--focus=") for a in sys.argv)
    focus = next((a[len("--focus="):] for a in sys.argv if a.startswith("--focus=")), None)
    core = re.search(r"cortex-(m\d+)", build).group(1)
    fmt = next((a[len("--format="):] for a in sys.argv if a.startswith("--format=")), None)
    if fmt:
        shape = f"{shape}_{fmt}"
    subprocess.run(["cmake", "--build", build, "--target", f"fw_profile{shape}", "-j2"], check=True,
                   stdout=subprocess.DEVNULL)
    elf = os.path.join(build, "examples/firmware", f"fw_profile{shape}.elf")
    log = f"/tmp/fw_profile_{core}_{shape}.log"
    subprocess.run(["qemu-system-arm", "-M", MACHINES[core], "-nographic", "-monitor", "none", "-serial", "none",
                    "-semihosting-config", "enable=on,target=native", "-icount", "shift=0", "-singlestep",
                    "-d", "exec,nochain", "-D", log, "-kernel", elf], check=True)
    counts = collections.Counter()
    pcs = collections.Counter()
    total = 0
    inside = False
    pat = re.compile(r"Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/[0-9a-f]+/[0-9a-f]+\] (\S*)")
    with open(log) as f:
        for line in f:
            m = pat.match(line)
            if not m:
                continue
            sym = m.group(2)
            if sym == "profile_begin":
                inside = True
                continue
            if sym == "profile_end":
                break
            if inside:
                counts[sym] += 1
                total += 1
                if by_pc:
                    pcs[(sym, m.group(1))] += 1
    os.remove(log)
    print(f"total {total:,}")
    for sym, n in counts.most_common(40):
        print(f"{n:>10,} {100.0 * n / total:5.1f}%  {demangle(sym)[:150]}")
    if by_pc and not focus:
        for (sym, pc), n in pcs.most_common(60):
            print(f"{n:>10,}  {pc}  {demangle(sym)[:80]}")
    if focus:  # the disassembly of the functions whose names contain `focus`, with counts
        hits = {int(pc, 16) & ~1: n for (sym, pc), n in pcs.items() if focus in demangle(sym)}
        arch = ["-m", "armv8.1-m.main"] if core == "m55" else []  # (else MVE shows as coprocessor instructions)
        dis = subprocess.run(["arm-none-eabi-objdump", "-d", "--no-show-raw-insn", "-C", *arch, elf],
                             capture_output=True, text=True).stdout
        show = False
        for line in dis.splitlines():
            if line.endswith(">:"):
                show = focus in line
            if show:
                m = re.match(r"\s*([0-9a-f]+):", line)
                n = hits.get(int(m.group(1), 16), 0) if m else 0
                print(f"{n:>8} {line}")

def demangle(s):
    try:
        return subprocess.run(["c++filt", s], capture_output=True, text=True).stdout.strip()
    except OSError:
        return s

main()
