#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make fuzz's coverage table: which functions of the code under test the
fuzzer's inputs reached, on each importer.

The guest replays every input it kept with KCOV on (rxe_dmabuf_fuzz replay
--pcs) and writes the distinct kernel program counters reached, one file
per importer, and /proc/kallsyms while both modules are loaded. A program
counter belongs to the function whose symbol is the nearest below it. The
functions listed are those of the instrumented objects (kernel_vars fuzz in
scripts/lib.sh, the project's modules), read from the built objects.

usage: fuzz_cover.py --kallsyms FILE --pcs NAME=FILE... --kout DIR --root DIR
                    [--json OUT]
--json also writes the reached functions per run, {NAME: [[OBJECT, SYMBOL],
...]}, for scripts/coverage.py (make coverage).
"""

import argparse
import bisect
import json
import os
import subprocess
import sys

# The instrumented kernel objects (scripts/lib.sh, kernel_vars fuzz), and
# the project's modules; the Rust kernel crate's functions are listed when
# they belong to its dma-buf abstractions.
KERNEL_OBJECTS = [
    "drivers/infiniband/core/umem_dmabuf.o",
    "drivers/infiniband/core/uverbs_std_types_mr.o",
    "drivers/infiniband/sw/rxe/rxe_dmabuf.o",
    "drivers/infiniband/sw/rxe/rxe_mr.o",
    "drivers/dma-buf/dma-buf.o",
    "drivers/dma-buf/dma-resv.o",
]
KERNEL_CRATE = "rust/kernel.o"
MODULES = {
    "umem_dmabuf_rs.ko": "umem_dmabuf_rs",
    "samples/dmabuf_exporter/dmabuf_exporter_rs.ko": "dmabuf_exporter_rs",
}
DEMANGLE = "/usr/lib/llvm-19/bin/llvm-cxxfilt"


def functions(path):
    """The function symbols an object defines."""
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT" and not parts[2].startswith("__pfx_") \
                and "." not in parts[2]:
            names.append(parts[2])
    return sorted(set(names))


def demangle(names):
    if not names:
        return {}
    try:
        out = subprocess.run([DEMANGLE], input="\n".join(names), capture_output=True,
                             text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        out = names
    return dict(zip(names, out))


def kallsyms(path):
    """Sorted text symbols: [(address, name, module or None)]."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3 or parts[1] not in "tT":
                continue
            mod = parts[3].strip("[]") if len(parts) > 3 else None
            syms.append((int(parts[0], 16), parts[2], mod))
    syms.sort()
    return syms


def reached(pcs_path, syms):
    """{(name, module)} of the functions the program counters fall in."""
    addrs = [s[0] for s in syms]
    out = set()
    if not os.path.exists(pcs_path):
        return out
    with open(pcs_path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            i = bisect.bisect_right(addrs, int(line, 16)) - 1
            if i >= 0:
                out.add((syms[i][1], syms[i][2]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kallsyms", required=True)
    ap.add_argument("--pcs", action="append", default=[], help="NAME=FILE")
    ap.add_argument("--kout", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()

    syms = kallsyms(args.kallsyms)
    runs = []
    for spec in args.pcs:
        name, _, path = spec.partition("=")
        runs.append((name, reached(path, syms)))

    objects = []  # (label, module or None, [function names])
    for rel in KERNEL_OBJECTS:
        path = os.path.join(args.kout, rel)
        if os.path.exists(path):
            objects.append((rel, None, functions(path)))
    crate = os.path.join(args.kout, KERNEL_CRATE)
    if os.path.exists(crate):
        names = functions(crate)
        dm = demangle(names)
        names = [n for n in names if "dma_buf" in dm[n] or "dma_resv" in dm[n]]
        objects.append((KERNEL_CRATE + " (dma_buf, dma_resv)", None, names))
    for rel, mod in MODULES.items():
        path = os.path.join(args.root, rel)
        if os.path.exists(path):
            objects.append((rel, mod, functions(path)))

    print("Functions of the code under test reached by make fuzz's kept inputs")
    print("(replayed with KCOV; columns: " + ", ".join(n for n, _ in runs) + ")")
    totals = [0] * len(runs)
    count = 0
    for label, mod, names in objects:
        dm = demangle(names)
        print()
        hit = [sum((n, mod) in r for n in names) for _, r in runs]
        print(f"{label}: {len(names)} functions, reached " +
              ", ".join(f"{name} {h}" for (name, _), h in zip(runs, hit)))
        for n in names:
            marks = " ".join(name if (n, mod) in r else "-" * len(name) for name, r in runs)
            print(f"  {marks}  {dm.get(n, n)}")
        totals = [t + h for t, h in zip(totals, hit)]
        count += len(names)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({name: sorted([label.split(" ")[0], n] for label, mod, names in objects
                                    for n in names if (n, mod) in r)
                       for name, r in runs}, f)
    print()
    print(f"{count} functions in all; reached: " +
          ", ".join(f"{name} {t}" for (name, _), t in zip(runs, totals)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
