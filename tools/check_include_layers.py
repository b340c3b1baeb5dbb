#!/usr/bin/env python3
"""The include graph of include/statiformer points one way (ARCHITECTURE.md, "Layers and their
dependencies"): a header may include headers of its own layer or of layers before it, never after.
Prints every arrow that points back up and exits 1 if there is one."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / 'include' / 'statiformer'
# layer order; a path matches the first rule whose prefix it starts with
LAYERS = [
    ('base', ['config.hpp', 'tensor.hpp', 'math.hpp', 'shape/', 'profiler.hpp']),
    ('simd', ['simd/']),
    ('kernels', ['kernels/']),
    ('layers', ['layers/']),
    ('graph', ['graph/']),
    ('models', ['models/']),
    ('io', ['io/']),
    ('umbrella', ['statiformer.hpp']),
]


def layer_of(rel):
    for rank, (name, prefixes) in enumerate(LAYERS):
        if any(rel == p or (p.endswith('/') and rel.startswith(p)) for p in prefixes):
            return rank, name
    return None, None


def main():
    bad, unknown, arrows = [], [], 0
    for path in sorted(ROOT.rglob('*.hpp')):
        rel = path.relative_to(ROOT).as_posix()
        rank, name = layer_of(rel)
        if rank is None:
            unknown.append(rel)
            continue
        for inc in re.findall(r'^\s*#\s*include\s*<statiformer/([^>]+)>', path.read_text(), re.M):
            arrows += 1
            r2, n2 = layer_of(inc)
            if r2 is None:
                unknown.append(f'{inc} (included by {rel})')
            elif r2 > rank:
                bad.append(f'{rel} ({name}) includes {inc} ({n2}), a later layer')
    for u in unknown:
        print(f'check_include_layers: {u}: in no layer of tools/check_include_layers.py LAYERS')
    for b in bad:
        print(f'check_include_layers: {b}')
    print(f'check_include_layers: {arrows} includes between the library\'s headers, {len(bad)} pointing back up')
    return 1 if bad or unknown else 0


if __name__ == '__main__':
    sys.exit(main())
