#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench_report.py LOG OUTDIR [KERNEL]: turns the BENCH lines of a benchmark
boot (rust/kunit/bench_test.c) into OUTDIR/results.json, results.md and
plots (ns_per_entry.png, ratio.png).

Each (benchmark, table size) has blocks timed in rounds of C, Rust, Rust, C.
Per round the ratio is the mean of its two Rust blocks over the mean of its
two C blocks, so drift within a round cancels; the report gives the median
ns per operation of each side with p10/p90, the median of the per-round
ratios, and a 95% bootstrap interval of that median (seeded, so a log always
gives the same report).
"""
import json
import random
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

BENCH_RE = re.compile(r"BENCH (\S+) (\d+) (c|rust) (\d+) (\d+)")


def quantile(xs, q):
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def bootstrap_median(xs, n=2000, seed=1):
    rnd = random.Random(seed)
    meds = sorted(statistics.median(rnd.choices(xs, k=len(xs))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def parse(log):
    """(bench, entries) -> round -> impl -> [ns, ...], from the benchmark's
    KTAP blocks (the kernel log dump at the end repeats the in-kernel ones)."""
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    inside = False
    for line in Path(log).read_text(errors="replace").splitlines():
        if re.search(r"@@UMEM-KTAP-BEGIN bench(_uverbs)?@@", line):
            inside = True
        elif "@@UMEM-KTAP-END@@" in line:
            inside = False
        m = BENCH_RE.search(line) if inside else None
        if m:
            data[(m.group(1), int(m.group(2)))][int(m.group(4))][m.group(3)].append(
                int(m.group(5)))
    return data


def summarize(data):
    rows = []
    for (bench, entries) in sorted(data, key=lambda k: (k[0], k[1])):
        rounds = data[(bench, entries)]
        c_all, r_all, ratios = [], [], []
        for rnd in sorted(rounds):
            c = rounds[rnd]["c"]
            r = rounds[rnd]["rust"]
            if not c or not r:
                continue
            c_all += c
            r_all += r
            ratios.append(statistics.mean(r) / statistics.mean(c))
        if not ratios:
            continue
        lo, hi = bootstrap_median(ratios)
        row = {
            "bench": bench,
            "entries": entries,
            "rounds": len(ratios),
            "c_ns": statistics.median(c_all),
            "c_p10": quantile(c_all, 0.1),
            "c_p90": quantile(c_all, 0.9),
            "rust_ns": statistics.median(r_all),
            "rust_p10": quantile(r_all, 0.1),
            "rust_p90": quantile(r_all, 0.9),
            "ratio": statistics.median(ratios),
            "ratio_ci95": [lo, hi],
        }
        row["c_ns_per_entry"] = row["c_ns"] / entries
        row["rust_ns_per_entry"] = row["rust_ns"] / entries
        rows.append(row)
    return rows


def markdown(rows, kernel):
    out = [f"Kernel: {kernel} (no lockdep, DMA-API or dma-buf debugging), QEMU TCG.",
           "Rust/C: median of the per-round ratios, 95% bootstrap interval.", "",
           "| benchmark | entries | C ns/op (p10-p90) | Rust ns/op (p10-p90) | C ns/entry | "
           "Rust ns/entry | Rust/C [95% CI] |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(
            f"| {r['bench']} | {r['entries']} | {r['c_ns']:.0f} ({r['c_p10']:.0f}-{r['c_p90']:.0f}) "
            f"| {r['rust_ns']:.0f} ({r['rust_p10']:.0f}-{r['rust_p90']:.0f}) "
            f"| {r['c_ns_per_entry']:.1f} | {r['rust_ns_per_entry']:.1f} "
            f"| {r['ratio']:.3f} [{r['ratio_ci95'][0]:.3f}, {r['ratio_ci95'][1]:.3f}] |")
    return "\n".join(out) + "\n"


def plots(rows, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    benches = sorted({r["bench"] for r in rows})
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for b in benches:
        rs = [r for r in rows if r["bench"] == b]
        x = [r["entries"] for r in rs]
        ax.plot(x, [r["c_ns_per_entry"] for r in rs], "o-", label=f"{b} C")
        ax.plot(x, [r["rust_ns_per_entry"] for r in rs], "s--", label=f"{b} Rust")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("exporter table entries")
    ax.set_ylabel("ns per entry (median)")
    ax.set_title("In-kernel importer cost per table entry (TCG)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(outdir / "ns_per_entry.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for b in benches:
        rs = [r for r in rows if r["bench"] == b]
        x = [r["entries"] for r in rs]
        y = [r["ratio"] for r in rs]
        err = [[r["ratio"] - r["ratio_ci95"][0] for r in rs],
               [r["ratio_ci95"][1] - r["ratio"] for r in rs]]
        ax.errorbar(x, y, yerr=err, fmt="o-", capsize=3, label=b)
    ax.axhline(1.0, color="grey", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("exporter table entries")
    ax.set_ylabel("Rust / C (median, 95% CI)")
    ax.set_title("Rust importer against the C one, same boot")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(outdir / "ratio.png", dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    log, outdir = sys.argv[1], Path(sys.argv[2])
    kernel = sys.argv[3] if len(sys.argv) > 3 else "?"
    outdir.mkdir(parents=True, exist_ok=True)
    rows = summarize(parse(log))
    if not rows:
        print(f"no BENCH lines in {log}", file=sys.stderr)
        return 1
    (outdir / "results.json").write_text(json.dumps({"kernel": kernel, "results": rows},
                                                    indent=1) + "\n")
    md = markdown(rows, kernel)
    (outdir / "results.md").write_text(md)
    plots(rows, outdir)
    print(md)
    print(f"written: {outdir}/results.json, results.md, ns_per_entry.png, ratio.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
