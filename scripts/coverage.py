#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Which functions of the code under test make check's main boot reaches.

The collector is the kernel's own: a kprobe event on every function of the
objects below (tracefs dynamic_events, in a trace instance of its own whose
buffer is off: only the probes' hit counters count), registered by the
guest before the first module is loaded (guest/lib.sh, cover_start) and
read before the storm gate's blocks, which run unprobed (cover_stop). Unlike
KCOV it sees every context: rxe's work items, KUnit's threads, the
exporter's migration worker.

  coverage.py probes --kout DIR --root DIR --probes OUT --map OUT.json
      the probe list the guest reads (EVENT TARGET per line) and what each
      event stands for
  coverage.py report --map FILE --log SERIAL [--fuzz FILE]
                     [--reasons FILE] [--table OUT] [--plot PNG] [--gate] [--rst]
      the table: per object and function, reached by make check (calls)
      and, with --fuzz (make fuzz's reached.json), by the fuzzer; --gate
      fails unless every importer function the boot did not reach has a
      line in --reasons saying why it cannot be (or what reaches it
      elsewhere), and every such line still names an unreached function.
"""

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_cover import demangle, functions  # noqa: E402

# (object, module or None for the kernel image, role). The importers are
# what --gate holds to "reached or explained".
KERNEL_OBJECTS = [
    ("drivers/infiniband/core/umem_dmabuf.o", "importer"),
    ("drivers/infiniband/sw/rxe/rxe_dmabuf.o", "rxe"),
    ("drivers/infiniband/sw/rxe/rxe_mr.o", "rxe"),
]
MODULES = [
    ("umem_dmabuf_rs.ko", "umem_dmabuf_rs", "importer"),
]
# Not the exporter sample: a module's probes are registered again at each
# of its loads and unregistered at each unload (one RCU grace period each),
# and its 270 callable functions made each load and unload of the two
# modules take 36 s instead of half a second in the main boot. make fuzz's
# table (KCOV) has it. Only functions that can run and are not test code
# get a probe.
# The module's test code (KUnit suites, fixtures, the mock exporter): C
# objects, and Rust items of these paths.
TEST_OBJECTS = "kunit/*.o"
TEST_RUST = ("umem_rs::tests", "umem_rs::abs::testing", "kernel::kunit", "exp_tests",
             "dmabuf_exporter_rs::tests")


DEAD = "no caller in the object: inlined wherever it is used"
# Tracepoint machinery the event macros generate: not code of the object.
GENERATED = ("__SCT__", "__traceiter_", "__probestub_", "trace_event_raw_event_",
             "trace_raw_output_", "perf_trace_", "__bpf_trace_", "trace_event_get_offsets_")


DATA_SECTIONS = (".data", ".rodata", ".init.data", ".exit.data", ".ref.data", "__ksymtab",
                 ".gnu.linkonce.this_module", ".kunit_test_suites", "__param",
                 ".init_array", ".fini_array")


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def reachable(path, module):
    """The functions of an object that can run: reachable through its calls,
    jumps and address-takings from a root. Roots are what its data points
    to (ops tables, exports, a module's init and exit) and, in an object of
    the kernel image, its global functions (other objects may call them).
    A function outside is an out-of-line copy nothing runs: every use of it
    was inlined."""
    index, executable, loaded = {}, set(), set()
    for line in run("readelf", "-SW", path).splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S*)", line)
        if m:
            index[m.group(2)] = m.group(1)
            if "X" in m.group(3):
                executable.add(m.group(2))
            if "A" in m.group(3):
                loaded.add(m.group(2))
    funcs, globl = {}, set()  # section index -> [(start, end, name)]
    for line in run("readelf", "-sW", path).splitlines():
        p = line.split()
        if len(p) >= 8 and p[3] == "FUNC" and p[6].isdigit():
            start = int(p[1], 16)
            funcs.setdefault(p[6], []).append((start, start + max(int(p[2]), 1), p[7]))
            if p[4] == "GLOBAL" and not module:
                globl.add(p[7])

    def resolve(name, sign, off, kind):
        """The function a relocation against NAME (a symbol or a section
        plus OFF) points into."""
        if name not in index:
            return name
        off = int(off, 16) * (-1 if sign == "-" else 1)
        if kind in ("R_X86_64_PC32", "R_X86_64_PLT32"):
            off += 4
        for start, end, fn in funcs.get(index[name], ()):
            if start <= off < end:
                return fn
        return None

    roots, edges, target = set(globl), {}, None
    for line in run("readelf", "-rW", path).splitlines():
        m = re.match(r"Relocation section '\.rela(\S+)'", line)
        if m:
            target = m.group(1)
            continue
        m = re.match(r"[0-9a-f]+\s+[0-9a-f]+\s+(R_X86_64_\w+)\s+[0-9a-f]+\s+(\S+)"
                     r"(?:\s+([+-])\s+([0-9a-f]+))?", line)
        # Data that points to code (ops tables, exports, the module, KUnit's
        # suites); not the metadata sections that name every function or
        # code address (debugging information, objtool's lists, the bug
        # table, alternatives).
        if m and target in loaded and target not in executable and \
                target.startswith(DATA_SECTIONS):
            roots.add(resolve(m.group(2), m.group(3) or "+", m.group(4) or "0", m.group(1)))
    caller = None
    # A call or jump's own target (<name> in the disassembly) counts only
    # when no relocation follows it: in an unlinked object a relocated
    # branch shows its placeholder displacement, which points at the next
    # instruction, often the next function's first byte.
    pending = None

    def add(frm, to):
        if to and to != frm:
            edges.setdefault(frm, set()).add(to)

    for line in run("objdump", "-dr", "--no-show-raw-insn", path).splitlines():
        m = re.match(r"[0-9a-f]+ <([^<>]+)>:$", line)
        if m:
            if pending:
                add(*pending)
            pending = None
            caller = m.group(1)
            continue
        if caller is None or not line.startswith(("\t", " ")):
            continue
        m = re.search(r"(R_X86_64_\w+)\s+([^+\-\s]+)(?:([+-])0x([0-9a-f]+))?", line)
        if m:
            pending = None
            add(caller, resolve(m.group(2), m.group(3) or "+", m.group(4) or "0", m.group(1)))
            continue
        if pending:
            add(*pending)
        found = re.findall(r"<([^<>+]+)>", line)
        pending = (caller, found[0]) if found else None
    if pending:
        add(*pending)
    return {r for r in roots if r}, edges


def closure(roots, edges, skip=frozenset()):
    """What ROOTS reach through EDGES, not passing through SKIP."""
    seen, todo = set(), [r for r in roots if r not in skip]
    while todo:
        fn = todo.pop()
        if fn in seen or fn in skip:
            continue
        seen.add(fn)
        todo.extend(edges.get(fn, ()))
    return seen


def test_c_functions(root):
    names = set()
    kdir = os.path.join(root, "kunit")
    if os.path.isdir(kdir):
        for f in sorted(os.listdir(kdir)):
            if fnmatch.fnmatch(f, "*.o"):
                names.update(functions(os.path.join(kdir, f)))
    return names


def probes(args):
    entries = []
    tests = test_c_functions(args.root)
    graphs = {}
    for rel, role in KERNEL_OBJECTS:
        path = os.path.join(args.kout, rel)
        if os.path.exists(path):
            entries += [(rel, None, role, n) for n in functions(path)
                        if not n.startswith(GENERATED)]
            graphs[rel] = reachable(path, False)
    for rel, mod, role in MODULES:
        path = os.path.join(args.root, rel)
        if os.path.exists(path):
            entries += [(rel, mod, role, n) for n in functions(path)]
            graphs[rel] = reachable(path, True)
    if not entries:
        print("coverage.py: no objects found", file=sys.stderr)
        return 1
    dm = demangle(sorted({e[3] for e in entries} |
                         {c for _, edges in graphs.values() for c in edges}))

    def is_test(sym):
        return sym in tests or any(t in dm.get(sym, sym) for t in TEST_RUST)

    # Live: reachable from any root; production: reachable without passing
    # through test code. What only tests reach counts as test code.
    live, prod, callers = {}, {}, {}
    for rel, (roots, edges) in graphs.items():
        live[rel] = closure(roots, edges)
        test_syms = {f for f in live[rel] | set(edges) if is_test(f)}
        prod[rel] = closure(roots, edges, test_syms)
        callers[rel] = {}
        for fn, callees in edges.items():
            for c in callees:
                callers[rel].setdefault(c, set()).add(fn)
    out, meta = [], []
    for i, (rel, mod, role, sym) in enumerate(entries):
        name = dm.get(sym, sym)
        test = is_test(sym) or (sym in live[rel] and sym not in prod[rel])
        ev = f"f{i}"
        if not test and sym in live[rel]:
            out.append(f"{ev} {mod + ':' if mod else ''}{sym}")
        meta.append({"event": ev, "object": rel, "role": role, "symbol": sym,
                     "name": name, "test": test, "dead": sym not in live[rel],
                     "callers": sorted(dm.get(c, c) for c in callers[rel].get(sym, ()))})
    with open(args.probes, "w") as f:
        f.write("\n".join(out) + "\n")
    with open(args.map, "w") as f:
        json.dump(meta, f, indent=0)
    return 0


def boot_counts(log):
    """{event: calls} from the boot's "umem-cover:" lines, and the events
    the guest could not register; None if the boot printed none."""
    hits, unprobed, seen = {}, set(), False
    with open(log, errors="replace") as f:
        for line in f:
            m = re.search(r"umem-cover: ?(.*)$", line)
            if m:
                seen = True
                for kv in m.group(1).split():
                    ev, _, n = kv.partition("=")
                    if n.isdigit():
                        hits[ev] = hits.get(ev, 0) + int(n)
            m = re.search(r"umem-cover-unprobed: (f\d+)", line)
            if m:
                unprobed.add(m.group(1))
    return (hits, unprobed) if seen else (None, unprobed)


def load_reasons(path):
    """[(pattern, reason)]: lines "PATTERN -- REASON" (fnmatch patterns on
    demangled names), # comments."""
    out = []
    if not path or not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            pat, sep, why = line.partition(" -- ")
            if not sep or not why.strip():
                raise SystemExit(f"coverage.py: {path}: no reason in: {line}")
            out.append((pat.strip(), why.strip()))
    return out


def short(name, width=100):
    return name if len(name) <= width else name[:width - 3] + "..."


def report(args):
    with open(args.map) as f:
        meta = json.load(f)
    hits, unprobed = boot_counts(args.log)
    if hits is None:
        print(f"coverage.py: no coverage lines in {args.log} (was the boot probed?)",
              file=sys.stderr)
        return 1
    fuzz = {}
    if args.fuzz and os.path.exists(args.fuzz):
        with open(args.fuzz) as f:
            fuzz = json.load(f)  # {run: [[object, symbol], ...]}
    fuzz_sets = {run: {tuple(x) for x in v} for run, v in fuzz.items()}
    reasons = load_reasons(args.reasons)
    used = set()

    lines = ["Functions of the code under test reached by make check's main boot",
             "(kprobe hit counts; '-' none, 'x' not probeable" +
             ("; make fuzz's runs: " + ", ".join(fuzz_sets) if fuzz_sets else "") + ")"]
    rows_by_obj = {}
    for m in meta:
        rows_by_obj.setdefault(m["object"], []).append(m)
    unexplained, summary = [], []
    for obj, rows in rows_by_obj.items():
        prod = [m for m in rows if not m["test"]]
        reached = [m for m in prod if hits.get(m["event"], 0) > 0]
        dead = [m for m in prod if m.get("dead") and not hits.get(m["event"], 0)]
        fz = {run: sum((obj, m["symbol"]) in s for m in prod) for run, s in fuzz_sets.items()}
        summary.append((obj, rows[0]["role"], len(prod), len(reached), fz, len(dead)))
        lines.append("")
        lines.append(f"{obj} ({rows[0]['role']}): {len(prod)} functions (and "
                     f"{len(rows) - len(prod)} of test code), make check reached "
                     f"{len(reached)}" + "".join(f", fuzz {r} {n}" for r, n in fz.items()))
        for m in sorted(prod, key=lambda m: m["name"]):
            ev = m["event"]
            calls = "x" if ev in unprobed else str(hits.get(ev, 0) or "-")
            marks = " ".join(r if (obj, m["symbol"]) in s else "-" * len(r)
                             for r, s in fuzz_sets.items())
            why = ""
            if not hits.get(ev) and m.get("dead"):
                why = "  <- " + DEAD
            elif not hits.get(ev):
                for i, (pat, reason) in enumerate(reasons):
                    if fnmatch.fnmatchcase(m["name"], pat):
                        why = "  <- " + reason
                        used.add(i)
                        break
                if not why and m["role"] == "importer":
                    unexplained.append(m)
            lines.append(f"  {calls:>8} {marks + ' ' if marks else ''}{short(m['name'])}{why}")
    # A line is stale only when it matches no unreached function at all:
    # whether a function counts as test code or production can differ from
    # one build of the module to the next (which copy the linker kept).
    for m in meta:
        if not hits.get(m["event"]):
            used |= {i for i, (pat, _) in enumerate(reasons)
                     if fnmatch.fnmatchcase(m["name"], pat)}
    total = sum(s[2] for s in summary)
    lines.append("")
    lines.append(f"{total} functions in all; make check reached "
                 f"{sum(s[3] for s in summary)}")
    text = "\n".join(lines) + "\n"
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if args.rst:
        print_rst(summary)
    else:
        for obj, role, n, r, fz, _ in summary:
            print(f"    {obj}: {r} of {n} functions reached")
    if args.plot:
        plot(summary, args.plot)

    if not args.gate:
        return 0
    rc = 0
    for m in unexplained:
        print(f"    unreached importer function with no reason: {short(m['name'], 160)}")
        for c in m.get("callers", []):
            print(f"        called by {short(c, 150)}")
        rc = 1
    for i, (pat, _) in enumerate(reasons):
        if i not in used:
            print(f"    reason for nothing unreached (stale): {pat}")
            rc = 1
    if not rc:
        print(f"    every unreached importer function has a reason ({len(used)} lines)")
    return rc


def print_rst(summary):
    runs = sorted({r for s in summary for r in s[4]})
    head = ["object", "role", "functions", "no caller", "make check"] + \
        [f"make fuzz ({r})" for r in runs]
    rows = [[os.path.basename(o), role, str(n), str(d), f"{r} ({100 * r // max(n - d, 1)} %)"] +
            [str(fz.get(run, 0)) for run in runs] for o, role, n, r, fz, d in summary]
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    rule = " ".join("=" * w for w in widths)
    print(rule)
    print(" ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    print(rule)
    for row in rows:
        print(" ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    print(rule)


def plot(summary, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [os.path.basename(s[0]) for s in summary]
    runs = sorted({r for s in summary for r in s[4]})
    width = 0.8 / (1 + len(runs))
    fig, ax = plt.subplots(figsize=(8, 3.5))
    xs = range(len(summary))
    ax.bar([x for x in xs], [100 * s[3] / max(s[2] - s[5], 1) for s in summary], width,
           label="make check")
    for k, run in enumerate(runs):
        ax.bar([x + (k + 1) * width for x in xs],
               [100 * s[4].get(run, 0) / max(s[2] - s[5], 1) for s in summary], width,
               label=f"make fuzz ({run})")
    ax.set_xticks([x + width * len(runs) / 2 for x in xs])
    ax.set_xticklabels(names, fontsize=8)
    ax.set_ylabel("callable functions reached (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("probes")
    p.add_argument("--kout", required=True)
    # The directory of umem_dmabuf_rs.ko and its kunit/*.o: the work tree
    # (the out-of-tree build) or the kernel build's drivers/infiniband/
    # core/umem_dmabuf_rs (the in-tree one).
    p.add_argument("--root", required=True)
    p.add_argument("--probes", required=True)
    p.add_argument("--map", required=True)
    r = sub.add_parser("report")
    r.add_argument("--map", required=True)
    r.add_argument("--log", required=True)
    r.add_argument("--fuzz")
    r.add_argument("--reasons")
    r.add_argument("--table")
    r.add_argument("--plot")
    r.add_argument("--gate", action="store_true")
    r.add_argument("--rst", action="store_true", help="the summary as an rst table")
    args = ap.parse_args()
    return probes(args) if args.cmd == "probes" else report(args)


if __name__ == "__main__":
    sys.exit(main())
