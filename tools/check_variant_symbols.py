#!/usr/bin/env python3
"""Fails if a kernel variant's object shares a weak (COMDAT) definition with another object, or has
one that is not its own.

    check_variant_symbols.py NM READELF OBJECT...

OBJECT: the object files of one library target (the statiformer library's). The kernel variants,
src/kernels/variant_<isa>.cpp (<isa>: scalar, avx2, avx512, neon, mve), are compiled with their own
instruction-set flags; the others (reference.cpp, variant_dispatch.cpp, the loader) with the build's.
An inline function, a template instantiation or an inline variable that two objects define is
emitted in both as a weak or COMDAT symbol, and the linker keeps one copy, any of them: a copy
compiled with -mavx512f may then run in the scalar variant, on a CPU without AVX-512 (SIGILL), or
the scalar copy (fma without FMA instructions) in the AVX2 variant (slow). So every weak definition
of a variant's object must be its own: defined in no other object of the list. Weak definitions
are nm's W, V and u symbols and the signatures of readelf's COMDAT groups. Prints each shared
symbol (demangled) with the objects that define it; fails too if fewer than two variant objects
define anything (nothing would have been compared).

A weak definition of variant_<isa>'s object must also name the variant: its namespace
(variant_<isa>) or its tag (isa::<isa>). Any other, such as an inline member of kernels/api.hpp that
the variant did not inline, is a symbol every translation unit may define, a program's own included,
and a program that links the library may then run the variant's copy (a program built without
-march ran stf::ref::MaskArrays::allows compiled with -mavx512f; the dispatch test caught it).
Such symbols are printed too.
"""
import os
import re
import subprocess
import sys

VARIANT = re.compile(r"variant_(scalar|avx2|avx512|neon|mve)\.")


def weak_definitions(nm, readelf, obj):
    names = set()
    out = subprocess.run([nm, "--defined-only", "-P", obj], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] in ("W", "V", "u"):
            names.add(parts[0])
    out = subprocess.run([readelf, "-gW", obj], check=True, capture_output=True, text=True).stdout
    for m in re.finditer(r"^COMDAT group section \[\s*\d+\] `[^']*' \[([^\]]+)\]", out, re.M):
        names.add(m.group(1))
    return names


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True, text=True).stdout
        return dict(zip(names, out.splitlines()))
    except (OSError, subprocess.CalledProcessError):
        return {n: n for n in names}


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    nm, readelf, objects = argv[1], argv[2], argv[3:]
    missing = [o for o in objects if not os.path.isfile(o)]
    if missing:
        print("no such object (not built?): " + ", ".join(missing))
        return 1
    defined_by = {}
    variants_defining = 0
    for obj in objects:
        names = weak_definitions(nm, readelf, obj)
        if VARIANT.search(os.path.basename(obj)) and names:
            variants_defining += 1
        for name in names:
            defined_by.setdefault(name, []).append(obj)
    if variants_defining < 2:
        print(f"{variants_defining} variant object(s) among {len(objects)} define a weak symbol: nothing compared")
        return 1
    shared = {
        name: objs
        for name, objs in defined_by.items()
        if len(objs) > 1 and any(VARIANT.search(os.path.basename(o)) for o in objs)
    }
    readable = demangle(sorted(defined_by))
    foreign = {}  # variant object -> its weak definitions that name neither its namespace nor its tag
    for name, objs in defined_by.items():
        for obj in objs:
            m = VARIANT.search(os.path.basename(obj))
            if m and f"variant_{m.group(1)}" not in readable[name] and f"isa::{m.group(1)}" not in readable[name]:
                foreign.setdefault(obj, []).append(name)
    if not shared and not foreign:
        print(f"{len(defined_by)} weak definitions in {len(objects)} objects ({variants_defining} kernel variants): "
              "none of a variant's is defined in another object, and each names its variant")
        return 0
    if shared:
        print(f"{len(shared)} weak definitions of a kernel variant are also defined in another object "
              "(the linker keeps any one copy):")
        for name in sorted(shared, key=lambda n: readable[n]):
            print(f"  {readable[name]}")
            for obj in shared[name]:
                print(f"      {os.path.basename(obj)}")
    for obj, names in sorted(foreign.items()):
        print(f"{os.path.basename(obj)}: {len(names)} weak definitions name neither the variant's namespace nor its "
              "tag (any other translation unit may define them: keep them inline, or in the variant's namespace):")
        for name in sorted(names, key=lambda n: readable[n]):
            print(f"  {readable[name]}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
