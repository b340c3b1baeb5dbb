#!/usr/bin/python3
"""Firmware code size by part: the library's kernels per operation, its layers, parameter binding,
the runtime and the application, from an ELF's symbol table.

    tools/size_by_part.py [--readelf arm-none-eabi-readelf] [--top N] [--list REGEX] [--check]
                          [--max-unclassified BYTES] [--max-padding BYTES] [--max-library LABEL=BYTES]
                          [--not-larger LABEL=OTHER] [LABEL=]FILE.elf ...
    tools/size_by_part.py --selections -

One column per ELF. The code measured is what cmake/FirmwareSize.cmake's ".text" column counts:
the sections .vectors, .text, .ARM.extab, .ARM.exidx and .init_array. Each byte of them goes to
the symbol that covers it (`readelf -sW -C`: functions and objects with their sizes, clipped to
their section; a byte two symbols cover, as aliases like __aeabi_dadd/__adddf3 do, counts once,
for the one that starts first), and each symbol to a part by RULES below: the first rule whose
pattern matches the symbol's qualified name without return type, template arguments and parameter
lists (e.g. `stf::kernels_detail::generic::Product::tile_nv`; a lambda counts as its enclosing
function).
A symbol no rule matches is counted in "unclassified" and listed by name; the bytes no symbol
covers (alignment padding, .ARM.exidx) in "no symbol". The parts plus "no symbol" must add up to
the sections' size, counted independently from the section headers: the script says whether they do.

--top N    the first ELF's N largest kernel symbols, and its tile_nv and tile instantiations
--list RE  the first ELF's symbols in each part whose name matches RE ("kernels", "binding", "app")
--check    exit 1 if "unclassified" or "no symbol" exceeds its threshold in any ELF, or the parts do
           not add up, or (--expect-total) the first ELF's total is not the section report's .text
           (the Cortex-M ctest "firmware: code size by part" runs it on every firmware, through
           cmake/FirmwareSize.cmake -DBY_PART=...)
--selections -  instead of ELFs: read `./run size`'s measurements of both kernel selections per core
           from stdin ("== PRESET[_size_first]", then this script's kernels + layers and total rows,
           the demo's and fw_encoder_bench's instruction counts) and print them side by side
--max-library LABEL=BYTES  with --check, also exit 1 if column LABEL's "library: kernels + layers"
           exceeds BYTES (the ctest: the size-first demo on the Cortex-M4F, issue 22's 24 KB)
--not-larger LABEL=OTHER  with --check, also exit 1 if column LABEL's "library: kernels + layers"
           exceeds column OTHER's (the ctest "code size per number format": the w8a8 layer's code no
           larger than the float32 one's, issue 23)
"""
import argparse
import collections
import re
import subprocess
import sys

# The sections cmake/FirmwareSize.cmake counts as .text (code and what the code needs in flash next
# to it: the vector table, unwinding index, constructors); --expect-total checks they agree.
CODE_SECTIONS = (".vectors", ".text", ".ARM.extab", ".ARM.exidx", ".init_array")

# ---- the rule table --------------------------------------------------------------------------------
# (part, pattern): the first pattern that re.search()es the simplified name wins. Kernels (in the
# namespaces of KERNEL) are recognised first by the function's own name (the last component), so
# that they keep their part when the code moves between structs (the generic::<Op><Tag> of
# kernels/<op>/generic.hpp, the targets' <target>::<Op>, Kernels<Tag>), then by the struct they are in. A kernel matching
# neither is "unclassified", not some kernel part: a new name fails the ctest until it has a rule.
KERNEL = r"^stf::(kernels_detail|Kernels|kernels|simd_math|isa|ref)::(\w+::)*"  # namespace, struct path


def fn(names):
    """A kernel whose own name (the last component) matches `names`, in any struct."""
    return KERNEL + "(" + names + ")$"


def struct(names):
    """Any function of a kernel struct whose name matches `names` (a target's helpers)."""
    return KERNEL + "(" + names + ")::"


RULES = [
    # kernels, by the function's own name, so that a kernel keeps its part when it moves between
    # structs (generic::<Op>, the targets' <target>::<Op>, Kernels<Tag>); the names of
    # kernels/<op>/generic.hpp, kernels/<op>/<target>.hpp and the vocabularies (simd/), which -O3
    # inlines but -Os may not
    ("kernels: attention", fn(r"attention\w*|stream_\w*|values_\w*|scores_\w*|span_\w*|scale_max|exp_sum|"
                              r"exp_groups\w*|sum_tree\w*|weighted_values\w*|group_keys|group_block_rows|"
                              r"tall_group|block_exps|block_weights|rescale|allowed|softmax_scores")),
    ("kernels: product", fn(r"tile\w*|tall_rows|row_tile\w*|row_panel\w*|product\w*|gemm\w*|gemv\w*|"
                            r"linear\w*|panel\w*|block_steps|fma_scalar|plain|column|quantize\w*")),
    ("kernels: norm", fn(r"layer_norm\w*|rms_norm\w*")),
    ("kernels: softmax", fn(r"log_softmax\w*|softmax\w*")),
    ("kernels: elementwise", fn(r"add\w*|sub|mul|div\w*|map\w*|relu\w*|gelu\w*|activation\w*|fma_n|"
                                r"exp_shifted")),
    ("kernels: exp, log, erfc", fn(r"exp|exp_v|exp_kernel|exp_n|exp_nonpositive|split_exponent|pow2i|log|log_v|"
                                   r"erfc")),
    ("kernels: transpose, other", fn(r"transpose\w*|dot|sum|reduce\w*|max_of|copy\w*|fill\w*|name|supported|"
                                     r"load\w*|store\w*|set1|zero\w*|lane\w*|keep_first|select_\w*|split_\w*|"
                                     r"fma|abs|min|max|sqrt|sub_count")),
    # kernels/api.hpp's weight blocks (panel-stored weights of the products)
    ("kernels: product", r"^stf::WeightBlock::"),
    # kernels, by the struct they are in (helpers with other names)
    ("kernels: attention", struct(r"\w*Attention\w*")),
    ("kernels: product", struct(r"\w*(Product|Gemm)\w*")),
    ("kernels: norm", struct(r"\w*Norm\w*")),
    ("kernels: softmax", struct(r"\w*Softmax\w*")),
    ("kernels: elementwise", struct(r"\w*(Elementwise|Activation)\w*")),
    # parameters by name: the Params' visit and layers/params.hpp's Name, io/bind.hpp, io/schema.hpp,
    # io/hparams.hpp (the hyperparameter tables and their walk); the safetensors loader
    # (io/safetensors.hpp, src/io/safetensors.cpp)
    ("binding: visit, by name, schema", r"^stf::(\w+::)*(bind\w*|visit)$|^stf::Name::|"
                                        r"^stf::(detail::)?(SchemaSink::|stored_shape$|write_schema\w*$)|"
                                        r"^stf::(for_each_hparam|hparam_table)$"),
    ("binding: safetensors", r"^stf::(detail::safetensors::|load_safetensors$|to_string$|ParamStorage::)"),
    # layers, graph, models
    ("layers", r"^stf::(\w*Layer|\w*Stack|EncoderDecoder|DecoderOnly|MultiHeadAttention|ScaledDotProductAttention|"
               r"FeedForward|LayerNorm|Embedding|PositionalEncoding|ProjectionHead|Sequential|"
               r"Profiler|NullProfiler|MemoryPlan)::|"
               r"^stf::detail::\w+$|"  # layers/attention.hpp's helpers (transpose, attention_head)
               r"^boost::hana::"),  # Sequential (graph/) runs its layers in hana::for_each's on_each
    # graph/summary.hpp's summaries and profile printers, profiler.hpp's LayerPath
    ("graph: summaries, profile printers", r"^(stf::)?(summary_detail::|(\w+::)*Line::|print_summary\w*$|"
                                           r"print_profile\w*$|LayerPath::|LayerCost)"),
    # the firmware runtime (examples/firmware/runtime)
    ("runtime: startup, faults, SysTick", r"^(\w+_Handler|enable_fpu|fw_vector_table|fw_stack_\w+|"
                                          r"fw_fault_report|__cxa_atexit|atexit|abort|"
                                          r"fw::(systick_\w+|delay_3n|for_each_phase|exact_instructions|gcd))$"),
    ("runtime: semihosting console", r"^(fw_put\w*|fw_flush|fw_exit|put_digits|pad|semihost)$"),
    # the toolchain's libraries
    ("runtime: libgcc", r"^__(aeabi_\w+|(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|unord|fix|float|extend|"
                        r"trunc)\w*[sdt][fi]\d?|u?divmod\w+|gnu_\w+|clz\w+|ctz\w+|popcount\w+)$"),
    ("runtime: libm", r"^(__ieee754_\w+|__kernel_\w+|__math_\w+|__fdlib\w+|"
                      r"(sqrt|exp|log|pow|fma|sin|cos|tan|floor|ceil|fabs|round|erf|tanh)f?)$"),
    ("runtime: libc", r"^(mem\w+|str\w+|two_way_\w+|critical_factorization|__errno|_impure_\w+|"
                      r"_?exit|__libc_\w+|_init|_fini|__register_\w+|__call_\w+|"
                      r"frame_dummy|__do_global_\w+)$"),
    # the application: the firmware program itself
    ("app", r"^(main|_GLOBAL__sub_I_\w+|\(anonymous_namespace\)::|stf_demo::|stf_classifier::|gpt_char::|"
            r"stf_cases::|stf_checks::|fw::BenchLayer::|fw::bench_\w+$|(std::)?basic_string_view::)"),
    # (stf_cases, stf_checks: tests/support/kernel_cases.hpp, kernel_checks.hpp; string_view: the
    # kernel check's selection names)
]
PART_ORDER = [part for part, _ in RULES]
PART_ORDER = list(dict.fromkeys(PART_ORDER)) + ["unclassified", "no symbol (padding)"]
KERNEL_PARTS = [p for p in PART_ORDER if p.startswith("kernels:")]
COMPILED = [(part, re.compile(pattern)) for part, pattern in RULES]


OPENERS, CLOSERS = "<({[", ">)}]"


def top_split(text, sep):
    """text split at each `sep` outside brackets."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text.startswith("->", i):
            i += 2
            continue
        if text[i] in OPENERS:
            depth += 1
        elif text[i] in CLOSERS:
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    return parts + [text[start:]]


def simplify(name, keep_templates=False):
    """The qualified name without return type, parameter lists and (unless keep_templates) template
    arguments: 'void stf::kernels_detail::generic::Product<stf::isa::scalar>::tile_nv<1u, 3u>(unsigned int, ...)'
    -> 'stf::kernels_detail::generic::Product::tile_nv'. A lambda is a component '{lambda}'."""
    name = re.sub(r"( \[clone [^\]]*\])+$", "", name)
    out = []
    stack = []  # the open brackets

    def visible():  # outside every bracket, or inside kept template arguments
        return not stack or (keep_templates and stack[0] == "<")

    i = 0
    while i < len(name):
        c = name[i]
        if not stack and name.startswith("operator", i) and (i == 0 or name[i - 1] in ": "):
            m = re.match(r"operator(\(\)|\[\]|->\*?|<=>|<<=?|>>=?|[-+*/%^&|~!=<>,]=?|&&|\|\||\+\+|--|"
                         r" ?new(\[\])?| ?delete(\[\])?| \w[\w: ]*|\"\" ?\w+)", name[i:])
            if m:
                out.append(m.group(0))
                i += len(m.group(0))
                continue
        if name.startswith("->", i):  # not a closing bracket
            out.append("->" if visible() else "")
            i += 2
            continue
        if name.startswith("(anonymous namespace)", i):
            out.append("(anonymous_namespace)" if visible() else "")
            i += len("(anonymous namespace)")
            continue
        if not stack and name.startswith("{lambda(", i):
            out.append("{lambda}")
            stack.append("{")
            i += 1
            continue
        if c in OPENERS:
            stack.append(c)
            shown = visible()
        elif c in CLOSERS:
            opener = stack.pop() if stack else ""
            shown = visible() if stack else keep_templates and opener == "<"
            if not stack and opener == "(":  # a member function's qualifiers before its local entity
                m = re.match(r"(?: (?:const|volatile)| ?&&?)+(?=::)", name[i + 1:])
                i += len(m.group(0)) if m else 0
        else:
            shown = visible()
        if shown:
            out.append(c)
        i += 1
    flat = re.sub(r"( (const|volatile)|&&?)+$", "", "".join(out).strip())
    # the return type, if any, is separated from the name by a space outside brackets
    return flat if flat.endswith("operator") else top_split(flat, " ")[-1]


def without_lambda(simple):
    """A lambda's code counts as its enclosing function's."""
    return re.sub(r"(::\{lambda\})+(::operator\(\))?$", "", simple)


def classify(simple):
    simple = without_lambda(simple)
    for part, pattern in COMPILED:
        if pattern.search(simple):
            return part
    return "unclassified"


def short_name(name, width=90):
    """A readable name: the last two components, with their template arguments."""
    full = simplify(name, keep_templates=True)
    last = top_split(without_lambda(full), "::")
    last = last[-3:] if len(last) > 2 and last[-2] == "Params" else last[-2:]  # whose Params
    text = "::".join(re.sub(r"<.{40,}>$", "<...>", part) for part in last)  # long arguments elided
    text += "::{lambda}" if full != without_lambda(full) else ""
    clone = re.search(r"( \[clone [^\]]*\])+$", name)
    text += clone.group(0).replace("[clone ", "[") if clone else ""
    return text if len(text) <= width else text[: width - 3] + "..."


def read_elf(readelf, path):
    """The code sections [(name, start, size)] and the symbols [(start, size, name)] in them."""
    sections = []
    out = subprocess.run([readelf, "-SW", path], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and m.group(1) in CODE_SECTIONS:
            sections.append((m.group(1), int(m.group(2), 16), int(m.group(3), 16)))
    if not any(name == ".text" for name, _, _ in sections):
        sys.exit(f"size_by_part: {path} has no .text section")
    symbols = []
    out = subprocess.run([readelf, "-sW", "-C", path], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[0].endswith(":"):
            continue
        _, value, size, kind, _, _, ndx, name = fields
        if kind not in ("FUNC", "OBJECT") or ndx in ("UND", "ABS") or int(size, 0) == 0:
            continue
        start = int(value, 16)
        if kind == "FUNC":
            start &= ~1  # the Thumb bit
        for _, s, n in sections:
            if s <= start < s + n:
                # clipped to its section: newlib's strcmp (assembly) declares 8 bytes past .text's end
                symbols.append((start, min(int(size, 0), s + n - start), name))
    return sections, symbols


def measure(readelf, path):
    """Bytes per part, the symbols per part, and the accounting of the code sections."""
    sections, symbols = read_elf(readelf, path)
    total = sum(n for _, _, n in sections)
    by_part = collections.Counter()
    members = collections.defaultdict(list)
    covered_end = 0
    for start, size, name in sorted(symbols, key=lambda s: (s[0], -s[1])):
        own = max(0, start + size - max(start, covered_end))  # bytes not already counted
        covered_end = max(covered_end, start + size)
        part = classify(simplify(name))
        by_part[part] += own
        members[part].append((own, name))
    # the bytes of the sections no symbol covers, counted independently of the symbols' sizes
    covered = sorted((s, s + n) for s, n, _ in symbols)
    no_symbol = 0
    for _, sec_start, sec_size in sections:
        pos, end = sec_start, sec_start + sec_size
        for s, e in covered:
            if e <= pos or s >= end:
                continue
            no_symbol += max(0, s - pos)
            pos = max(pos, e)
        no_symbol += max(0, end - pos)
    by_part["no symbol (padding)"] = no_symbol
    return {"total": total, "by_part": by_part, "members": members}


def selections_table(lines):
    """Speed-first vs size-first per core, from `./run size`'s measurements (see --selections)."""
    runs = collections.defaultdict(dict)  # (preset, selection) -> {row: value}
    key = None
    for line in lines:
        m = re.match(r"== (\S+?)(_size_first)?$", line.strip())
        if m:
            key = (m.group(1), "size-first" if m.group(2) else "speed-first")
            continue
        if key is None:
            continue
        m = re.match(r"(library: kernels \+ layers|total \(= sections' size\))\s+(\d+)", line)
        if m:
            row = "kernels + layers (B)" if m.group(1).startswith("library") else "total .text (B)"
            runs[key][row] = int(m.group(2))
        m = re.search(r"total \(no profiler\)\s+(\d+)", line)
        if m:
            runs[key]["demo (instructions)"] = int(m.group(1))
        m = re.match(r"\d+:\s+\(([\d, ]+)\)\s+([\d,]+)", line)
        if m:
            shape = ",".join(x.strip() for x in m.group(1).split(","))
            runs[key][f"encoder layer ({shape})"] = int(m.group(2).replace(",", ""))
    presets = list(dict.fromkeys(p for p, _ in runs))
    rows = list(dict.fromkeys(r for v in runs.values() for r in v))
    print("kernels: speed-first vs size-first (STF_KERNELS_SIZE_FIRST; the same bits), "
          "ratio = size-first / speed-first; instructions: the demo's greedy decoding, "
          "fw_encoder_bench's forward per shape (S,D,H,F)")
    print("".ljust(26) + "".join(f"{p:>12}{'size-first':>12}{'ratio':>7}" for p in presets))
    worst = 0.0
    for r in rows:
        cells = ""
        for p in presets:
            a, b = runs[(p, "speed-first")].get(r), runs[(p, "size-first")].get(r)
            ratio = f"{b / a:.3f}" if a and b else "-"
            if a and b and "(B)" not in r:
                worst = max(worst, b / a)
            cells += f"{'-' if a is None else a:>12}{'-' if b is None else b:>12}{ratio:>7}"
        print(r.ljust(26) + cells)
    print(f"largest instruction ratio: {worst:.3f}")
    return 0


def main():
    if sys.argv[1:] == ["--selections", "-"]:
        return selections_table(sys.stdin)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("elfs", nargs="+", metavar="[LABEL=]FILE.elf")
    ap.add_argument("--readelf", default="arm-none-eabi-readelf")
    ap.add_argument("--top", type=int, default=0, metavar="N")
    ap.add_argument("--list", metavar="REGEX", help="the first ELF's symbols of the parts matching REGEX")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--max-unclassified", type=int, default=256, metavar="BYTES")
    ap.add_argument("--max-padding", type=int, default=2048, metavar="BYTES")
    ap.add_argument("--max-library", action="append", default=[], metavar="LABEL=BYTES",
                    help="column LABEL's kernels + layers must be at most BYTES")
    ap.add_argument("--not-larger", action="append", default=[], metavar="LABEL=OTHER",
                    help="column LABEL's kernels + layers must be at most column OTHER's")
    ap.add_argument("--expect-total", type=int, metavar="BYTES",
                    help="the first ELF's code total must be BYTES (cmake/FirmwareSize.cmake's .text)")
    args = ap.parse_args()

    columns = []
    for spec in args.elfs:
        label, _, path = spec.rpartition("=")
        columns.append((label or path.rsplit("/", 1)[-1].removesuffix(".elf"), measure(args.readelf, path)))

    width = max(len(p) for p in PART_ORDER) + 2
    colw = max(10, max(len(label) for label, _ in columns) + 1)

    def row(label, values):
        print(label.ljust(width) + "".join(str(v).rjust(colw) for v in values))

    print("code by part (bytes of " + " + ".join(CODE_SECTIONS) + ", from the symbol table)")
    row("part", [label for label, _ in columns])
    binding = [p for p in PART_ORDER if p.startswith("binding:")]
    subtotals = {"kernels (all operations)": KERNEL_PARTS,
                 "library: kernels + layers": KERNEL_PARTS + ["layers"],
                 "library: + binding": KERNEL_PARTS + ["layers"] + binding}
    for part in PART_ORDER:
        row(part, [m["by_part"][part] for _, m in columns])
    for name, parts in subtotals.items():
        row(name, [sum(m["by_part"][p] for p in parts) for _, m in columns])
    row("total (= sections' size)", [m["total"] for _, m in columns])

    failures = []
    for label, m in columns:
        counted = sum(m["by_part"].values())
        if counted != m["total"]:
            failures.append(f"{label}: the parts add up to {counted} B, the sections to {m['total']} B")
        unclassified = m["by_part"]["unclassified"]
        if unclassified:
            print(f"{label}: unclassified symbols ({unclassified} B; add a rule to RULES in "
                  "tools/size_by_part.py):")
            for own, name in sorted(m["members"]["unclassified"], reverse=True):
                print(f"  {own:7d}  {short_name(name, 110)}")
        if unclassified > args.max_unclassified:
            failures.append(f"{label}: {unclassified} B unclassified (at most {args.max_unclassified})")
        padding = m["by_part"]["no symbol (padding)"]
        if padding > args.max_padding:
            failures.append(f"{label}: {padding} B covered by no symbol (at most {args.max_padding})")
    # each column's "library: kernels + layers" (--max-library, --not-larger)
    library = {lab: sum(m["by_part"][p] for p in subtotals["library: kernels + layers"]) for lab, m in columns}
    for spec in args.max_library:
        label, _, limit = spec.rpartition("=")
        if label not in library or not limit.isdigit():
            sys.exit(f"size_by_part: --max-library {spec}: no column {label!r} or no byte count")
        if library[label] > int(limit):
            failures.append(f"{label}: kernels + layers {library[label]} B, more than {limit} B")
        else:
            print(f"{label}: kernels + layers {library[label]} B, within {limit} B")
    for spec in args.not_larger:
        label, _, other = spec.partition("=")
        if label not in library or other not in library:
            sys.exit(f"size_by_part: --not-larger {spec}: no column {label!r} or {other!r}")
        if library[label] > library[other]:
            failures.append(f"{label}: kernels + layers {library[label]} B, more than {other}'s {library[other]} B")
        else:
            print(f"{label}: kernels + layers {library[label]} B, not more than {other}'s {library[other]} B")
    if args.expect_total is not None and columns[0][1]["total"] != args.expect_total:
        label, m = columns[0]
        failures.append(f"{label}: code sections of {m['total']} B, but the section report's .text is "
                        f"{args.expect_total} B (CODE_SECTIONS and cmake/FirmwareSize.cmake differ)")
    if not any("add up" in f for f in failures):
        print("the parts and the bytes no symbol covers (alignment padding, .ARM.exidx) add up to the "
              "sections' size in every column")
    else:
        print("the parts do NOT add up to the sections' size (see FAIL below with --check)")

    if args.top:
        label, m = columns[0]
        kernels = sorted(((own, part, name) for part in KERNEL_PARTS for own, name in m["members"][part]),
                         reverse=True)
        print(f"\n{label}: the {args.top} largest kernel symbols")
        for own, part, name in kernels[: args.top]:
            print(f"  {own:7d}  {part.removeprefix('kernels: '):12s} {short_name(name)}")
        for fn_name in ("tile_nv", "tile"):
            tiles = [(own, name) for own, _, name in kernels
                     if without_lambda(simplify(name)).endswith("::" + fn_name)]
            print(f"{label}: {len(tiles)} {fn_name} instantiations, {sum(o for o, _ in tiles)} B:")
            for own, name in tiles:
                print(f"  {own:7d}  {short_name(name)}")

    if args.list:
        label, m = columns[0]
        for part in PART_ORDER:
            if re.search(args.list, part):
                print(f"\n{label}: {part}")
                for own, name in sorted(m["members"][part], reverse=True):
                    print(f"  {own:7d}  {short_name(name, 110)}")

    if args.check:
        for f in failures:
            print("FAIL: " + f)
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
