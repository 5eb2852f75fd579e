#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The kill matrix of `make mutants` (scripts/mutants.sh): which suite saw
which mutant.

Each mutant's boot (build/mutants/logs/NAME.log) is judged as make check
judges a boot (scripts/report.py), and compared with the baseline boot of
the same importer (baseline-rust.log, baseline-c.log), which must pass
everything. A suite kills a mutant only when one of its results goes from
pass in the baseline to fail, or fails where the baseline had no such
result; a result that passed and is missing, or now skips, did not run
(the guest died before it, which the guest column shows). The klog column
counts kernel reports only (WARNING, BUG, KASAN, lockdep, kmemleak, DMA-API
errors, a sanitizer switched off); the guest column a guest that died or a
step of its job that failed outside every suite. A mutant that does not
compile is killed by the compiler.

Each mutant's "Expect:" header names the columns expected to kill it
(the first word of each comma-separated part: "kunit (window cases), e2e";
"the compiler" for a mutant that must not build); the matrix says for each
whether that was met, and a mutant whose expectation is not met fails the
run as a survivor does: the header is a claim about the suites, kept true.

Prints the matrix as text; --update FILE also writes it, as an
reStructuredText table, between the markers ".. mutants-begin" and
".. mutants-end" of FILE. Exits non-zero when a baseline is not clean, a
mutant no longer applies, a mutant survives without an "Equivalent:"
line in its header saying why no test can see it, or a mutant's "Expect:"
is not met.
"""

import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

# (column, what it is, a pattern of its results' names; klog: the rest)
SUITES = [
    ("kcrate", "kernel::dma_buf's own KUnit suites at boot (rust_dma_buf, rust_dma_resv)",
     r"^boot: rust_dma_"),
    ("kunit", "the module's KUnit suites: both importers through their ops (at load)",
     r"^importer: "),
    ("exporter", "the test exporter's KUnit suites, through the importer", r"^exporter\+"),
    ("e2e", "rxe_dmabuf_test: registration, data, migration, revocation", r"^rxe_e2e\+"),
    ("uverbs", "the Rust uverbs client (ibv_reg_dmabuf_mr and the raw ioctl)",
     r"\.uverbs_client_"),
    ("faults", "every allocation of REG_DMABUF_MR failed in turn, against the reference",
     r"^fault_injection_uverbs\+"),
    ("fuzz", "the seeded differential fuzzer, against the reference", r"^fuzz\+"),
    ("replay", "make fuzz's corpus replayed, against the reference", r"^replay\+"),
    ("storm", "the concurrent registration storm", r"^storm\+"),
    ("removal", "device removal under live dma-buf MRs", r"^rxe_removal\+"),
    ("klog", "kernel reports: WARNING, BUG, KASAN, lockdep, kmemleak, DMA-API errors, "
     "a sanitizer switched off", None),
    ("guest", "the guest died, or a step of its job outside every suite failed", None),
]
# What make mutants leaves out of make check's main boot, named in the
# matrix's legend: a kill matrix measures only the suites it runs.
LEFT_OUT = ("the seeded fuzzer runs 4,000 operations (make check: 20,000) and the storm "
            "5 s; not run: the comparison of both importers' trace events, the KUnit "
            "doctests of the kernel crate at boot, the rdma-core, two-node, bounce, "
            "real-tables and gate boots")
# Results of the harness that say nothing of a suite: the guest's own steps
# are the suites' steps, counted through their suites' blocks.
HARNESS_RE = re.compile(r"^(guest_steps_mutants: |no test result outside|"
                        r"guest run completed|guest job exited 0)")
KLOG_RE = re.compile(r"^(kernel log free|kmemleak|DMA-API|.* still on at the end)")
PASSING = ("PASS", "SKIP")


def suite_of(name):
    """The column of a result's name, or None for a result of none."""
    if KLOG_RE.match(name):
        return "klog"
    for col, _, pattern in SUITES:
        if pattern and re.search(pattern, name):
            return col
    if HARNESS_RE.match(name):
        # The guest died, or a step failed outside every suite (insmod,
        # rmmod): the guest column.
        return "guest"
    return None


def expected(fields):
    """The columns a mutant's "Expect:" names ("compiler" for a mutant
    that must not build), or None without the field."""
    text = fields.get("Expect")
    if text is None:
        return None
    # Parenthesised remarks may hold commas: drop them first.
    text = re.sub(r"\([^)]*\)", "", text)
    cols = set()
    for part in text.split(","):
        words = part.split()
        if not words:
            continue
        word = words[1] if words[0] == "the" and len(words) > 1 else words[0]
        cols.add(word.rstrip(":"))
    return cols


def header(path):
    """The fields of a mutant's header (the lines before its diff)."""
    fields = {}
    with open(path) as f:
        for line in f:
            if line.startswith("diff --git") or line.startswith("--- "):
                break
            m = re.match(r"^([A-Z][a-z]+): (.*)$", line.rstrip("\n"))
            if m:
                fields[m.group(1)] = m.group(2)
    return fields


def judged(args, log):
    """{name: status} of one boot's log, judged as make check does."""
    ns = argparse.Namespace(kunit_py=args.kunit_py, quiet=True, require_ktap=True,
                            require_kmemleak=True)
    saved = sys.stdout
    try:
        sys.stdout = open(os.devnull, "w")
        results = report.log_results(ns, log)
    finally:
        sys.stdout.close()
        sys.stdout = saved
    return {r.name: r.status for r in results}


def compare(base, got):
    """{column: "K" killed, "." passed, "-" not run} of a mutant's boot."""
    cells = {}
    for name, status in base.items():
        col = suite_of(name)
        if col is None or status != "PASS":
            continue
        mine = got.get(name)
        if mine is None or mine == "SKIP":
            cell = "-"
        else:
            cell = "." if mine in PASSING else "K"
        old = cells.get(col)
        if old == "K" or cell == "K":
            cells[col] = "K"
        elif old == "." or cell == ".":
            cells[col] = "."
        else:
            cells[col] = "-"
    # A new failure that the baseline does not have (a result it never
    # printed, a sanitizer's report) kills too.
    for name, status in got.items():
        col = suite_of(name)
        if col is not None and name not in base and status not in PASSING:
            cells[col] = "K"
    return cells


def rst_table(rows):
    cols = [c for c, _, _ in SUITES]
    out = [".. list-table::", "   :header-rows: 1", ""]
    head = ["mutant", "mistake"] + cols + ["verdict", "Expect:"]
    out.append("   * - " + head[0])
    out += [f"     - {h}" for h in head[1:]]
    for r in rows:
        out.append(f"   * - ``{r['name']}``")
        out.append(f"     - {r['what']}")
        for c in cols:
            out.append(f"     - {r['cells'].get(c, '') or ' '}")
        out.append(f"     - {r['verdict']}")
        out.append(f"     - {r['expect']}")
    return out


def update(path, lines):
    with open(path) as f:
        text = f.read()
    begin, end = ".. mutants-begin", ".. mutants-end"
    if begin not in text or end not in text:
        sys.exit(f"{path}: no '{begin}' ... '{end}' markers")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(head + begin + "\n\n" + "\n".join(lines) + "\n\n" + end + tail)


def check_apply(mutants, root, ksrc):
    """make check's gate: every mutant has a well-formed header and applies
    to its tree (this one, or the kernel source with the series), so that
    make mutants cannot find one stale. Returns the problems."""
    problems = []
    names = sorted(p[:-6] for p in os.listdir(mutants) if p.endswith(".patch"))
    if not names:
        problems.append(f"no mutant in {mutants}")
    for name in names:
        path = os.path.abspath(os.path.join(mutants, name + ".patch"))
        fields = header(path)
        if not fields.get("Mutant") or fields.get("Importer") not in ("rust", "c") or \
                fields.get("Tree") not in ("project", "kernel"):
            problems.append(f"{name}: the header needs Mutant:, Importer: rust|c and "
                            "Tree: project|kernel")
            continue
        if not fields.get("Expect") and not fields.get("Equivalent"):
            problems.append(f"{name}: the header needs Expect: (the suites that should "
                            "kill it) or Equivalent: (why none can)")
            continue
        if fields["Tree"] == "project":
            cmd = ["patch", "--dry-run", "-s", "-f", "-p1", "-d", root, "-i", path]
        else:
            cmd = ["git", "-C", ksrc, "apply", "--check", path]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            why = (proc.stdout + proc.stderr).strip().splitlines()
            problems.append(f"{name}: does not apply to the {fields['Tree']} tree" +
                            (f": {why[0]}" if why else ""))
    return problems, len(names)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kunit-py")
    ap.add_argument("--mutants", required=True, help="the directory of the mutants' patches")
    ap.add_argument("--logs", help="build/mutants/logs")
    ap.add_argument("--update", metavar="FILE")
    ap.add_argument("--commit", default="an unrecorded commit",
                    help="the commit whose tree the run tested, named in the matrix")
    ap.add_argument("--check-apply", nargs=2, metavar=("ROOT", "KSRC"),
                    help="only check that every mutant applies (make check)")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    if args.check_apply:
        problems, n = check_apply(args.mutants, *args.check_apply)
        for p in problems:
            print(p)
        print(f"{n} mutants, {len(problems)} stale or malformed")
        return 1 if problems else 0
    if not args.kunit_py or not args.logs:
        ap.error("--kunit-py and --logs are needed for the matrix")

    ok = True
    bases = {}
    for imp in ("rust", "c"):
        base = judged(args, os.path.join(args.logs, f"baseline-{imp}.log"))
        bad = sorted(n for n, s in base.items() if s == "FAIL")
        # Every suite must have run in the baseline, or it could kill nothing.
        bad += [f"no passing result of {col}" for col, _, _ in SUITES
                if not any(suite_of(n) == col and s == "PASS" for n, s in base.items())]
        if bad:
            ok = False
            print(f"baseline-{imp}: not clean, the matrix means nothing: " +
                  ", ".join(bad[:5]))
        bases[imp] = base
    names = args.names or sorted(p[:-6] for p in os.listdir(args.mutants)
                                 if p.endswith(".patch"))
    rows = []
    for name in names:
        fields = header(os.path.join(args.mutants, name + ".patch"))
        try:
            with open(os.path.join(args.logs, name + ".status")) as f:
                state = f.read().strip()
        except OSError:
            state = "missing"
        what = fields.get("Mutant", "?")
        if fields.get("Origin"):
            what += f" (origin: {fields['Origin']})"
        row = {"name": name, "what": what, "cells": {}, "expect": ""}
        if state == "build":
            row["verdict"] = "killed (does not compile)"
        elif state == "booted":
            imp = fields.get("Importer", "rust")
            row["cells"] = compare(bases[imp],
                                   judged(args, os.path.join(args.logs, name + ".log")))
            if "K" in row["cells"].values():
                row["verdict"] = "killed"
            elif fields.get("Equivalent"):
                row["verdict"] = "equivalent: " + fields["Equivalent"]
            else:
                row["verdict"] = "SURVIVED"
                ok = False
        else:
            row["verdict"] = "STALE (does not apply)" if state == "stale" else "NOT RUN"
            ok = False
        want = expected(fields)
        if row["verdict"].startswith("equivalent"):
            row["expect"] = "none (equivalent)"
        elif state in ("build", "booted"):
            got = {"compiler"} if state == "build" else \
                {c for c, v in row["cells"].items() if v == "K"}
            if want is None:
                row["expect"] = "NO Expect: LINE"
                ok = False
            elif want <= got:
                row["expect"] = "met"
            else:
                row["expect"] = (f"NOT MET: expected {', '.join(sorted(want))}; killed by "
                                 f"{', '.join(sorted(got)) or 'none'}")
                ok = False
        rows.append(row)

    cols = [c for c, _, _ in SUITES]
    width = max([len(r["name"]) for r in rows] + [6])
    print("kill matrix (K killed, . passed, - did not run):")
    print(f"  {'mutant':<{width}} " + " ".join(f"{c:>8}" for c in cols) + "  verdict")
    for r in rows:
        print(f"  {r['name']:<{width}} " +
              " ".join(f"{r['cells'].get(c, ''):>8}" for c in cols) + "  " + r["verdict"])
    for c, what, _ in SUITES:
        print(f"  {c}: {what}")
    print(f"  left out: {LEFT_OUT}")
    for r in rows:
        if r["expect"] and r["expect"] not in ("met", "none (equivalent)"):
            print(f"{r['name']}: Expect: {r['expect']}")
    killed = sum(1 for r in rows if r["verdict"].startswith("killed"))
    met = sum(1 for r in rows if r["expect"] == "met")
    print(f"{killed} of {len(rows)} mutants killed, {met} as their Expect: says")
    if args.update:
        legend = [f"``{c}``: {what}." for c, what, _ in SUITES]
        lines = [f"``make mutants`` at {args.commit}: {killed} of {len(rows)} mutants killed, "
                 f"{met} as their ``Expect:`` says. K: a result of the suite went from pass "
                 "to fail, ``.``: it passed, ``-``: it did not run (the guest had died).", ""]
        lines += ["- " + l for l in legend]
        lines += [f"- left out of make check's main boot: {LEFT_OUT}.", ""] + rst_table(rows)
        update(args.update, lines)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
