#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The run-time tables of make check and make demo, from a run's own records.

make check appends "EPOCH begin|end NAME" lines to build/results/phases.txt
for its phases (set-up, each kernel and rdma-core build, host checks, each
boot, the whole run) and keeps its verdict in build/results/verdict.txt.
This script turns them into a table: each phase's start and end, in
minutes after the run began, and its wall time; the machine's cores and
processor; the verdict's closing line.

usage: runtimes.py [--run check|demo|check-install|check-kcsan] [--results DIR]
                   [--logs DIR]
                   [--update FILE... --kind first|warm]

make demo records the same in build/demo-results/ (--run demo): its
phases, its commit, and "demo finished" once every step passed; make
check-install in build/install-results/ (--run check-install) and make
check-kcsan in build/kcsan-results/ (--run check-kcsan), their verdicts a
"N passed, N failed" line.

The run's commit (build/results/commit.txt, "-dirty" when the tree had
changes) and machine (machine.txt: cores and CPU model) are named in the
table and in the README's line, so that the first and the warm run can be
seen to be of the same tree, and where each was taken.

The guests' parts that took 30 s or more (their "umem: NAME took N s"
lines in the serial logs of --logs, of the boots the run recorded) follow
in a second table.

Without --update it prints the table. With it, each FILE's block between
the lines "make-RUN-times-KIND-begin" and "make-RUN-times-KIND-end"
(an rst comment ".. make-check-times-first-begin" in the manual, an HTML
comment in README.md) is replaced: the manual gets the whole table, the
README one line with the total, the machine and the result.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mmss(sec):
    return f"{sec // 60} min {sec % 60:02d} s"


def phases(path, run):
    """[(name, begin, end)] in order of their begin; the run's own first."""
    begin, end = {}, {}
    if not os.path.exists(path):
        return []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 2)
            if len(parts) != 3 or parts[1] not in ("begin", "end"):
                continue
            t, what, name = int(parts[0]), parts[1], parts[2]
            if what == "begin":
                begin.setdefault(name, t)  # the first begin of a name
            else:
                end[name] = t  # and its last end
    out = [(n, b, end.get(n)) for n, b in begin.items()]
    out.sort(key=lambda x: (x[0] != run, x[1]))
    return out


def machine(results):
    """(cores, CPU model) of the run, from machine.txt ("CORES MODEL", written
    by the run), else of the machine it runs on."""
    try:
        with open(os.path.join(results, "machine.txt")) as f:
            cores, _, model = f.read().strip().partition(" ")
            return int(cores), model
    except (OSError, ValueError):
        pass
    cores = os.cpu_count()
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return cores, model


def verdict(results, run):
    """make check's closing line; make demo's "demo finished" or "demo failed"."""
    pat = r"^demo (finished|failed)$" if run == "make demo" else r"^\d+ passed, \d+ failed"
    try:
        with open(os.path.join(results, "verdict.txt")) as f:
            lines = [l.strip() for l in f if re.match(pat, l.strip())]
        return lines[-1] if lines else "no verdict"
    except OSError:
        return "no verdict"


def commit(results):
    """The commit the run tested (make check writes it to commit.txt), or
    "an unrecorded commit"."""
    try:
        with open(os.path.join(results, "commit.txt")) as f:
            return f.read().strip() or "an unrecorded commit"
    except OSError:
        return "an unrecorded commit"


def table(rows, name, kind, cores, model, result, at):
    run = next((r for r in rows if r[0] == name), None)
    t0 = run[1] if run else rows[0][1]
    total = (run[2] - run[1]) if run and run[2] else None
    what = "a first run (empty cache)" if kind == "first" else "a warm run (caches filled)"
    short = name.split()[1]
    if short == "check-install" and kind == "first":
        what = "a first run (its packages and Debian root not cached)"
    if short == "check-kcsan":
        what = "its kernel built" if kind == "first" else "its kernel cached"
    runarg = "" if short == "check" else f" --run {short}"
    data = f"runtimes-{kind}.rst" if short == "check" else f"runtimes-{short}-{kind}.rst"
    readme = " README.md" if short in ("check", "demo") else ""
    out = [f"``{name}`` at {at}, {what}, on {cores} cores ({model}):",
           f"{mmss(total) if total is not None else 'unfinished'}, ``{result}``.",
           f"Regenerate: ``scripts/runtimes.py{runarg} --update "
           f"Documentation/data/{data}{readme} --kind {kind}`` after the run.", "",
           ".. list-table::", "   :header-rows: 1", "",
           "   * - phase", "     - from (min)", "     - to (min)", "     - wall time"]
    for phase, b, e in rows:
        if phase == name:
            continue
        out += [f"   * - {phase}", f"     - {(b - t0) / 60:.1f}",
                f"     - {(e - t0) / 60:.1f}" if e else "     - (no end)",
                f"     - {mmss(e - b)}" if e else "     -"]
    return out, total


def lanes(logdir, boots):
    """[(log, lane, seconds)] from the "umem: NAME took N s" lines of the
    serial logs of BOOTS (the run's "boot NAME" phases)."""
    out = []
    if not os.path.isdir(logdir):
        return out
    for name in sorted(os.listdir(logdir)):
        if not name.endswith("-serial.log") or name[:-len("-serial.log")] not in boots:
            continue
        with open(os.path.join(logdir, name), errors="replace") as f:
            for line in f:
                m = re.search(r"umem: (\S+) took (\d+) s", line)
                if m:
                    out.append((name[:-len("-serial.log")], m.group(1), int(m.group(2))))
    return out


def lane_table(rows, least):
    rows = [r for r in rows if r[2] >= least]
    if not rows:
        return []
    out = ["", f"The guests' longest parts (``umem: NAME took N s``, {least} s or more):", "",
           ".. list-table::", "   :header-rows: 1", "",
           "   * - boot", "     - part", "     - wall time"]
    for log, lane, sec in sorted(rows, key=lambda r: -r[2]):
        out += [f"   * - {log}", f"     - ``{lane}``", f"     - {sec} s"]
    return out


def replace_block(path, run, kind, body):
    text = open(path).read()
    mark = f"make-{run}-times-{kind}"
    pat = re.compile(rf"({mark}-begin[^\n]*\n)(.*?)(\n[^\n]*{mark}-end)", re.S)
    if not pat.search(text):
        sys.exit(f"{path}: no {mark}-begin/end markers")
    text = pat.sub(lambda m: m.group(1) + "\n".join(body) + m.group(3), text, count=1)
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", choices=("check", "demo", "check-install", "check-kcsan"),
                    default="check")
    ap.add_argument("--results")
    ap.add_argument("--logs", default=os.path.join(ROOT, "build", "logs"))
    ap.add_argument("--update", nargs="*", default=[])
    ap.add_argument("--kind", choices=("first", "warm"), default="warm")
    args = ap.parse_args()
    name = f"make {args.run}"
    results = args.results or os.path.join(
        ROOT, "build", {"check": "results", "demo": "demo-results",
                        "check-install": "install-results",
                        "check-kcsan": "kcsan-results"}[args.run])
    rows = phases(os.path.join(results, "phases.txt"), name)
    if not rows:
        sys.exit("no phases recorded")
    cores, model = machine(results)
    result = verdict(results, name)
    at = commit(results)
    body, total = table(rows, name, args.kind, cores, model, result, at)
    boots = {p[len("boot "):] for p, _, _ in rows if p.startswith("boot ")}
    body += lane_table(lanes(args.logs, boots), 30)
    if not args.update:
        print("\n".join(body))
        return 0
    for path in args.update:
        if path.endswith(".md"):
            what = "First run (empty cache)" if args.kind == "first" else "Warm run"
            if args.run != "check":
                what = f"`{name}`, {what[0].lower() + what[1:]}"
            line = (f"{what}: {mmss(total) if total is not None else 'unfinished'} "
                    f"on {cores} cores ({model}) at {at}, `{result}`.")
            replace_block(path, args.run, args.kind, [line])
        else:
            replace_block(path, args.run, args.kind, [""] + body + [""])
    return 0


if __name__ == "__main__":
    sys.exit(main())
