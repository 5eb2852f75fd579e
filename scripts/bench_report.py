#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench_report.py LOG OUTDIR [KERNEL]: turns the BENCH and DPBENCH lines of
a benchmark boot (kunit/bench_test.c, rxe_dmabuf_fuzz regbench and
stormbench, rxe_dmabuf_bench) into OUTDIR/results.json, results.md and plots
(ns_per_entry.png, ratio.png, datapath.png, migrate.png, revoke.png).

Each (benchmark, table size) has blocks timed in rounds of C, Rust, Rust, C.
Per round the ratio is the mean of its two Rust blocks over the mean of its
two C blocks, so drift within a round cancels; the report gives the median
ns per operation of each side with p10/p90, the median of the per-round
ratios, and a 95% bootstrap interval of that median (seeded, so a log always
gives the same report).

The data-path blocks (DPBENCH) compare targets within one importer: each
round runs ordinary, dynamic, pinned, devmem, heap, heap, devmem, pinned,
dynamic, ordinary (the migration run: 0, 1, 10, 100, 100, 10, 1, 0
migrations per second), and the per-round ratio is against the ordinary MR
(no migration): bandwidth over the baseline's bandwidth, or latency over
the baseline's latency. The processes that print them run C, Rust, Rust, C
per round too, so each target is also compared across importers: Rust/C
time per message. A null arm (rounds numbered from 1000) runs the C
importer on both sides of the same swap, the Rust module loaded with
register=0 for its two "null" blocks: null/C shows the method's own bias,
and the run is valid only if it is not seen (validity(): the null arm's
ratios, and Rust/C of the ordinary MR, which never calls an importer, must
have 1.00 within a distribution-free interval for their median; otherwise
the report writes results-invalid.json instead of results.json and fails).

REVLAT lines (rxe_dmabuf_bench revoke) give, per importer, how long it took
to follow an invalidation (unmap, and the next access served: remap) and a
revocation (revoke; revoke_pinned for a revocable pinned MR): samples, p50,
p99 and maximum, in ns.

BENCH_GATE lines (the regression gate, umem_bench_gate) give the gate's
per-round Rust/C ratios; the report shows their median.

With --targets-only the data path is compared within each importer only
(targets against the ordinary MR), not across importers: make
two-node-bench runs no null arm, so a comparison of importers there could
not be judged and is left out.

With --rst FILE COMMIT it also writes the tables as reStructuredText for
Documentation/performance.rst (scripts/bench.sh splices them in); with
--commit COMMIT only the dataset names the commit. The dataset names the
machine the report ran on, the run's own.

bench_report.py --storm-gate LOG LIMIT: make check's storm gate (see
storm_gate()).

bench_report.py --page JSON: Documentation/data/bench-tables.rst, which
performance.rst includes, from a results.json dataset alone (make bench
writes it so; make check checks that the published one matches its
dataset), with the figures of the plots that --plots draws.

bench_report.py --two-node-page JSON [LOOPBACK_JSON]: the table of
two-node.rst (Documentation/data/two-node-tables.rst), from the dataset make
two-node-bench publishes (Documentation/data/two-node-results.json) alone:
per importer and benchmark the ordinary MR's figure and the dma-buf MR's
over it; with make bench's dataset, how the link's bandwidth compares with
one guest's loopback.

bench_report.py --plots JSON OUTDIR: those plots, from the dataset alone
(make docs draws them into the manual).

bench_report.py --boots LOG...: the in-kernel benchmarks of several boots
(make bench, or make kunit with KUNIT_FILTER=umem_dmabuf_rs_bench.umem_bench),
for comparisons across boots, kernels or commits: per benchmark and size,
each boot's median per-round Rust/C, then their median over the boots with a
95% bootstrap interval (Documentation/performance.rst, "Where the limits come from").
"""
import json
import math
import os
import random
import re
import statistics
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

BENCH_RE = re.compile(r" BENCH (\S+) (\d+) (c|rust) (\d+) (\d+)")
DP_RE = re.compile(r"DPBENCH (\S+) (\d+) (c|rust|null) (\S+) (\d+) (\d+)")
REVLAT_RE = re.compile(r"REVLAT (unmap|remap|revoke_pinned|revoke) (c|rust) (\d+) (\d+) (\d+) (\d+)")
GATE_RE = re.compile(r" BENCH_GATE(_OP)? (\d+) (\d+) (\d+) (\d+\.\d+)")
SCALE_RE = re.compile(r" SCALE (\S+) (dynamic|pinned) (\d+) (c|rust) (\d+) (\d+)")
FLAT_RE = re.compile(r" FLAT (\d+) (c|rust) (\d+) (\d+)")
ISTORM_RE = re.compile(r" ISTORM (\d+) (c|rust) (\d+) (\d+) (\d+) (\d+)")
# make bench's gates on the scale rows: the registration of a small MR with
# the most bytes registered around it over the same with none, per importer
# (its median over the blocks), and an invalidation storm's time until all
# MRs are re-mapped, Rust/C (the lower end of its interval).
FLAT_LIMIT = 1.2
ISTORM_LIMIT = 1.0
BASELINE = {"ordinary", "mig0"}


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


def block_lines(log, names):
    """The lines of the KTAP blocks named by the regex `names` (the kernel
    log dump at the end of a boot repeats the in-kernel ones: not read)."""
    inside = False
    for line in Path(log).read_text(errors="replace").splitlines():
        if re.search(rf"@@UMEM-KTAP-BEGIN (?:{names})@@", line):
            inside = True
        elif "@@UMEM-KTAP-END@@" in line:
            inside = False
        elif inside:
            yield line


def parse(log, blocks=r"bench(_uverbs)?"):
    """(bench, entries) -> round -> impl -> [ns, ...]."""
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for line in block_lines(log, blocks):
        m = BENCH_RE.search(line)
        if m:
            data[(m.group(1), int(m.group(2)))][int(m.group(4))][m.group(3)].append(
                int(m.group(5)))
    return data


def parse_dp(log):
    """(bench, bytes, importer) -> round -> target -> [ns per message, ...]."""
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for line in block_lines(log, r"bench_(datapath|migrate)|two_node_bench\+\w+"):
        m = DP_RE.search(line)
        if m:
            key = (m.group(1), int(m.group(2)), m.group(3))
            data[key][int(m.group(5))][m.group(4)].append(int(m.group(6)))
    return data


def parse_gate(log, op=False):
    """The gate's per-round (C ns, Rust ns, ratio): per table entry
    (umem_bench_gate), or with op per one-entry operation (umem_bench_gate_op)."""
    return [(int(m.group(3)), int(m.group(4)), float(m.group(5)))
            for m in map(GATE_RE.search, block_lines(log, r"bench|importer"))
            if m and bool(m.group(1)) == op]


def parse_revlat(log):
    """Rows of revocation latency: what, importer, samples, p50/p99/max ns."""
    order = {"unmap": 0, "remap": 1, "revoke": 2, "revoke_pinned": 3}
    rows = [{"what": m.group(1), "importer": m.group(2), "samples": int(m.group(3)),
             "p50_ns": int(m.group(4)), "p99_ns": int(m.group(5)), "max_ns": int(m.group(6))}
            for m in map(REVLAT_RE.search, block_lines(log, r"bench_revoke(\+\w+)?")) if m]
    return sorted(rows, key=lambda r: (order[r["what"]], r["importer"]))


REVLAT_HEADER = ["latency", "importer", "samples", "p50 ms", "p99 ms", "max ms"]
REVLAT_TEXT = ("Revocation latency (``rxe_dmabuf_bench revoke``, timed by the exporter): "
               "``unmap`` from an invalidation (a migration every 10 ms under a stream of "
               "WRITEs) until rxe unmapped the MR, ``remap`` until its next map (the next "
               "access served), ``revoke`` from a vfio-pci-style revocation of a mapped MR "
               "until the exporter saw it unmapped, ``revoke_pinned`` the same for a revocable "
               "pinned MR (rxe's ``dmabuf_revocable=1``); make check holds every maximum below "
               "1 s on the test kernel:")


def revlat_cells(r):
    return [r["what"], r["importer"], str(r["samples"]), f"{r['p50_ns'] / 1e6:.3f}",
            f"{r['p99_ns'] / 1e6:.3f}", f"{r['max_ns'] / 1e6:.3f}"]


def markdown_revlat(rows):
    if not rows:
        return ""
    out = ["", REVLAT_TEXT.replace("``", "`"), "", "| " + " | ".join(REVLAT_HEADER) + " |",
           "|---|---|---:|---:|---:|---:|"]
    out += ["| " + " | ".join(revlat_cells(r)) + " |" for r in rows]
    return "\n".join(out) + "\n"


def plot_revlat(rows, outdir):
    """revoke.png: p50, p99 and maximum per latency and importer (log scale)."""
    if not rows:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    labels = [f"{r['what']}\n{r['importer']}" for r in rows]
    x = range(len(rows))
    for off, key, name in ((-0.25, "p50_ns", "p50"), (0, "p99_ns", "p99"),
                           (0.25, "max_ns", "max")):
        ax.bar([i + off for i in x], [max(r[key], 1) / 1e6 for r in rows], 0.25, label=name)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels)
    ax.set_yscale("log")
    ax.set_ylabel("ms")
    ax.set_title("Revocation latency (exporter's view)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(outdir / "revoke.png", dpi=110)
    plt.close(fig)


NULL_ROUND = 1000


def summarize_dp_importers(data):
    """Per (arm, bench, bytes, target): Rust/C time per message (arm "rust")
    or null/C (arm "null": the C importer on both sides of the swap), per
    round; the C blocks of a null round are numbered from NULL_ROUND."""
    rows = []
    keys = sorted({(b, n) for (b, n, _) in data})
    for arm in ("rust", "null"):
        for (bench, size) in keys:
            c, r = data.get((bench, size, "c")), data.get((bench, size, arm))
            if not c or not r:
                continue
            targets = sorted({t for x in r.values() for t in x}, key=target_order)
            for tgt in targets:
                per_round = {rnd: statistics.mean(r[rnd][tgt]) / statistics.mean(c[rnd][tgt])
                             for rnd in sorted(c) if c[rnd].get(tgt) and r.get(rnd, {}).get(tgt)
                             and (rnd >= NULL_ROUND) == (arm == "null")}
                if not per_round:
                    continue
                ratios = list(per_round.values())
                lo, hi = bootstrap_median(ratios)
                rows.append({"arm": arm, "bench": bench, "bytes": size, "target": tgt,
                             "rounds": len(ratios), "ratio": statistics.median(ratios),
                             "ratio_ci95": [lo, hi], "per_round": per_round})
    # Net of the process: a target's ratio over the ordinary MR's in the
    # same round (same arm, benchmark and size). The ordinary MR never calls
    # an importer, so what moves both (the module's presence, memory layout)
    # cancels, and what is left is the importer's own share of the target.
    ordinary = {(r["arm"], r["bench"], r["bytes"]): r["per_round"] for r in rows
                if r["target"] == "ordinary"}
    for r in rows:
        base = ordinary.get((r["arm"], r["bench"], r["bytes"]))
        if not base or r["target"] == "ordinary":
            continue
        net = [x / base[rnd] for rnd, x in r["per_round"].items() if rnd in base]
        if net:
            r["net"] = statistics.median(net)
            r["net_ci95"] = list(bootstrap_median(net))
    return rows


def median_interval(xs, alpha):
    """A distribution-free interval for the median of xs at level 1 - alpha
    at least (order statistics; the sign test): [x_(k), x_(n-k+1)] for the
    largest k with P(Binomial(n, 1/2) < k) <= alpha / 2, or None when even
    the range falls short (too few values)."""
    xs, n = sorted(xs), len(xs)
    tail, k = 0.0, 0
    for i in range(n // 2):
        tail += math.comb(n, i) / 2 ** n
        if tail > alpha / 2:
            break
        k = i + 1
    return (xs[k - 1], xs[n - k]) if k else None


def validity(imp_rows, alpha=0.05):
    """The data path's comparison of importers is valid when its null arm
    shows no bias: per round, the geometric mean of the null arm's null/C
    ratios (every benchmark, size and target), and of the Rust/C ratios of
    the ordinary MR (which never calls an importer), must each have 1.00
    within a distribution-free interval for its median, at a family-wise
    level of 1 - alpha (Bonferroni over the two). Pooling over rows keeps
    the chance of a false verdict at alpha, where a 95% interval per row
    would miss 1.00 in about one row in twenty of an unbiased run."""
    checks = [("null arm: null/C, every target (the swap alone)",
               [r for r in imp_rows if r["arm"] == "null"]),
              ("importers: Rust/C of the ordinary MR (no importer call)",
               [r for r in imp_rows if r["arm"] == "rust" and r["target"] == "ordinary"])]
    out = []
    for name, rows in checks:
        rounds = sorted(set().union(*(r["per_round"] for r in rows))) if rows else []
        pooled = []
        for rnd in rounds:
            xs = [r["per_round"][rnd] for r in rows if rnd in r["per_round"]]
            pooled.append(math.exp(statistics.mean(math.log(x) for x in xs)))
        iv = median_interval(pooled, alpha / len(checks)) if pooled else None
        holds = iv is not None and iv[0] <= 1.0 <= iv[1]
        out.append({"check": name, "rows": len(rows), "rounds": len(pooled),
                    "median": statistics.median(pooled) if pooled else None,
                    "interval": list(iv) if iv else None,
                    "level": 1 - alpha / len(checks), "holds": holds})
    return {"valid": all(c["holds"] for c in out), "alpha": alpha, "checks": out}


def validity_lines(v):
    lines = []
    for c in v["checks"]:
        if c["interval"] is None:
            what = (f"{c['rounds']} rounds: too few for an interval at "
                    f"{c['level']:.3f} (7 at least)")
        else:
            what = (f"median {c['median']:.3f} of {c['rounds']} rounds, "
                    f"[{c['interval'][0]:.3f}, {c['interval'][1]:.3f}] at {c['level']:.3f}")
        lines.append(f"{c['check']}: {what}: {'holds' if c['holds'] else 'FAILS'}")
    return lines


def target_order(name):
    """ordinary, dynamic, pinned, devmem, heap; mig0, mig1, mig10, mig100."""
    fixed = {"ordinary": 0, "dynamic": 1, "pinned": 2, "devmem": 3, "heap": 4}
    if name in fixed:
        return fixed[name]
    return 10 + int(name[3:]) if name.startswith("mig") and name[3:].isdigit() else 99


def compare_dp(rounds, bench, size, imp, base, tgt):
    """Target @tgt against @base, round by round; a row, or None."""
    latency = bench.endswith("_lat")
    ns_all, ratios = [], []
    for rnd in sorted(rounds):
        b = rounds[rnd].get(base, [])
        x = rounds[rnd].get(tgt, [])
        if not b or not x:
            continue
        ns_all += x
        mb, mx = statistics.mean(b), statistics.mean(x)
        ratios.append(mx / mb if latency else mb / mx)
    if not ratios:
        return None
    lo, hi = bootstrap_median(ratios)
    med = statistics.median(ns_all)
    return {
        "bench": bench, "bytes": size, "importer": imp, "target": tgt,
        "baseline": base, "rounds": len(ratios),
        "ns_per_msg": med, "ns_p10": quantile(ns_all, 0.1),
        "ns_p90": quantile(ns_all, 0.9),
        "mb_per_s": None if latency else size / med * 1e3,
        "ratio": statistics.median(ratios), "ratio_ci95": [lo, hi],
        "ratio_kind": "latency/baseline" if latency else "bandwidth/baseline",
    }


def summarize_dp(data):
    rows = []
    for (bench, size, imp) in sorted(k for k in data if k[2] != "null"):
        rounds = data[(bench, size, imp)]
        targets = sorted({t for r in rounds.values() for t in r}, key=target_order)
        base = next((t for t in targets if t in BASELINE), None)
        if base is None:
            continue
        for tgt in targets:
            row = compare_dp(rounds, bench, size, imp, base, tgt)
            if row:
                rows.append(row)
    return rows


def summarize_devmem(data):
    """The dynamic MR in device memory against the one in system memory."""
    rows = []
    for (bench, size, imp) in sorted(k for k in data if k[2] != "null"):
        row = compare_dp(data[(bench, size, imp)], bench, size, imp, "dynamic", "devmem")
        if row:
            rows.append(row)
    return rows


def ratio_row(rounds):
    """Rust/C of a {round: {"c": [ns...], "rust": [ns...]}}: the per-round
    ratio of the means, its median and 95% bootstrap interval, and each
    side's median over all blocks; None without a complete round."""
    c_all, r_all, ratios = [], [], []
    for rnd in sorted(rounds):
        c, r = rounds[rnd].get("c"), rounds[rnd].get("rust")
        if not c or not r:
            continue
        c_all += c
        r_all += r
        ratios.append(statistics.mean(r) / statistics.mean(c))
    if not ratios:
        return None
    lo, hi = bootstrap_median(ratios)
    return {"rounds": len(ratios),
            "c_ns": statistics.median(c_all), "c_p10": quantile(c_all, 0.1),
            "c_p90": quantile(c_all, 0.9),
            "rust_ns": statistics.median(r_all), "rust_p10": quantile(r_all, 0.1),
            "rust_p90": quantile(r_all, 0.9),
            "ratio": statistics.median(ratios), "ratio_ci95": [lo, hi]}


def summarize(data):
    rows = []
    for (bench, entries) in sorted(data, key=lambda k: (k[0], k[1])):
        row = ratio_row(data[(bench, entries)])
        if not row:
            continue
        row = dict(row, bench=bench, entries=entries)
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


def markdown_devmem(rows):
    if not rows:
        return ""
    out = ["", "Device memory against system memory: the dynamic MR on a buffer in the "
           "exporter's BAR over the dynamic MR on system pages (same importer, same round).", "",
           "| benchmark | bytes | importer | devmem us/msg | ratio [95% CI] |",
           "|---|---:|---|---:|---:|"]
    for r in rows:
        out.append(f"| {r['bench']} | {r['bytes']} | {r['importer']} "
                   f"| {r['ns_per_msg'] / 1e3:.1f} | {ci(r)} |")
    return "\n".join(out) + "\n"


def markdown_dp(rows):
    if not rows:
        return ""
    out = ["", "Data path on rxe (loopback RC QP, 16 outstanding; latency: one 8-byte WRITE at a "
           "time). Ratio: bandwidth over the baseline's (ordinary MR; no migration), or latency "
           "over the baseline's; median of the per-round ratios, 95% bootstrap interval.", "",
           "| benchmark | bytes | importer | target | us/msg (p10-p90) | MB/s | ratio [95% CI] |",
           "|---|---:|---|---|---:|---:|---:|"]
    for r in rows:
        mb = f"{r['mb_per_s']:.1f}" if r["mb_per_s"] is not None else "-"
        out.append(
            f"| {r['bench']} | {r['bytes']} | {r['importer']} | {r['target']} "
            f"| {r['ns_per_msg'] / 1e3:.1f} ({r['ns_p10'] / 1e3:.1f}-{r['ns_p90'] / 1e3:.1f}) "
            f"| {mb} | {r['ratio']:.3f} [{r['ratio_ci95'][0]:.3f}, {r['ratio_ci95'][1]:.3f}] |")
    return "\n".join(out) + "\n"


def markdown_dp_importers(rows):
    if not rows:
        return ""
    out = ["", "Data path, importers compared (per round C, Rust, Rust, C or Rust, C, C, "
           "Rust processes, the order drawn): Rust/C time per message; the null arm, the "
           "same swap with the C importer on both sides: null/C. Median of the per-round "
           "ratios, 95% bootstrap interval.",
           "", "| arm | benchmark | bytes | target | ratio [95% CI] |", "|---|---|---:|---|---:|"]
    for r in rows:
        out.append(f"| {arm_name(r)} | {r['bench']} | {r['bytes']} | {r['target']} "
                   f"| {r['ratio']:.3f} [{r['ratio_ci95'][0]:.3f}, {r['ratio_ci95'][1]:.3f}] |")
    return "\n".join(out) + "\n"


def arm_name(r):
    return "Rust/C" if r["arm"] == "rust" else "null/C"


def rst_table(header, rows):
    """A simple-table of strings (first column left, the rest right)."""
    cols = list(zip(header, *rows))
    widths = [max(len(x) for x in col) for col in cols]
    line = "  ".join("=" * w for w in widths)

    def fmt(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line, fmt(header), line] + [fmt(r) for r in rows] + [line]


def ci(r):
    return f"{r['ratio']:.3f} [{r['ratio_ci95'][0]:.3f}, {r['ratio_ci95'][1]:.3f}]"


def net_ci(r):
    if "net" not in r:
        return "-"
    return f"{r['net']:.3f} [{r['net_ci95'][0]:.3f}, {r['net_ci95'][1]:.3f}]"


def storm_cells(r):
    return [r["kernel"], str(r["entries"]), str(r["rounds"]), f"{r['c_ns'] / 1e6:.3f}",
            f"{r['rust_ns'] / 1e6:.3f}", ci(r)]


STORM_HEADER = ["kernel", "workers", "rounds", "C ms/reg", "Rust ms/reg", "Rust/C [95% CI]"]
STORM_TEXT = ("Concurrent registration storm (``rxe_dmabuf_fuzz stormbench``: workers "
              "register and deregister dynamic MRs while the shared buffers migrate and "
              "RDMA WRITEs run; wall time per registration and deregistration of all "
              "workers together; the test kernel has KASAN, lockdep, kmemleak and DMA-API "
              "debugging, and its ratio is make check's storm gate, limit 1.25):")


def markdown_storm(rows):
    if not rows:
        return ""
    out = ["", STORM_TEXT.replace("``", "`"), "", "| " + " | ".join(STORM_HEADER) + " |",
           "|---|---:|---:|---:|---:|---:|"]
    out += ["| " + " | ".join(storm_cells(r)) + " |" for r in rows]
    return "\n".join(out) + "\n"


def summarize_scale(log):
    """SCALE lines (rxe_dmabuf_bench scale): per source, MR kind and size,
    the ns of an MR's registration + first access + deregistration."""
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for m in map(SCALE_RE.search, block_lines(log, r"bench_scale")):
        if m:
            data[(m.group(1), m.group(2), int(m.group(3)))][int(m.group(5))][
                m.group(4)].append(int(m.group(6)))
    rows = []
    for (src, mode, size) in sorted(data):
        r = ratio_row(data[(src, mode, size)])
        if r:
            rows.append(dict(r, source=src, mode=mode, bytes=size))
    return rows


def flat_blocks(log):
    """The FLAT lines of each bench_flat process: [(importer, round,
    [(bytes registered, ns), ...]), ...] in the order printed."""
    blocks, cur = [], None
    for line in Path(log).read_text(errors="replace").splitlines():
        if re.search(r"@@UMEM-KTAP-BEGIN bench_flat@@", line):
            cur = []
            blocks.append(cur)
        elif "@@UMEM-KTAP-END@@" in line:
            cur = None
        elif cur is not None:
            m = FLAT_RE.search(line)
            if m:
                cur.append((m.group(2), int(m.group(3)), int(m.group(1)), int(m.group(4))))
    return [(b[0][0], b[0][1], [(x[2], x[3]) for x in b]) for b in blocks if b]


def summarize_flat(log):
    """Per importer: each block's last/first (the small MR's registration
    with the most bytes registered over the mean of the first and last
    levels, none registered: a linear drift cancels), their median with a
    bootstrap interval, and the median ns per level."""
    rows = []
    for imp in ("c", "rust"):
        levels, ratios = defaultdict(list), []
        for b_imp, _, pts in flat_blocks(log):
            if b_imp != imp or len(pts) < 3 or pts[0][0] or pts[-1][0]:
                continue
            top = max(pts)[0]
            peak = statistics.mean(ns for n, ns in pts if n == top)
            ratios.append(peak / statistics.mean([pts[0][1], pts[-1][1]]))
            for n, ns in pts:
                levels[n].append(ns)
        if not ratios:
            continue
        lo, hi = bootstrap_median(ratios) if len(ratios) > 1 else (ratios[0], ratios[0])
        rows.append({"importer": imp, "blocks": len(ratios), "ratio": statistics.median(ratios),
                     "ratio_ci95": [lo, hi], "limit": FLAT_LIMIT,
                     "levels": [{"bytes": n, "ns": statistics.median(v)}
                                for n, v in sorted(levels.items())]})
    return rows


def summarize_istorm(log):
    """ISTORM lines: per number of MRs K, the time until all were re-mapped
    (each block's median over its storms) and the p50/p99 latency of one MR's
    re-mapping access, per importer, and Rust/C of the time per round."""
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    lat = defaultdict(lambda: defaultdict(list))
    for m in map(ISTORM_RE.search, block_lines(log, r"bench_istorm")):
        if m:
            k, imp = int(m.group(1)), m.group(2)
            data[k][int(m.group(3))][imp].append(int(m.group(4)))
            lat[k][imp].append((int(m.group(5)), int(m.group(6))))
    rows = []
    for k in sorted(data):
        r = ratio_row(data[k])
        if not r:
            continue
        for imp in ("c", "rust"):
            r[f"{imp}_p50_ns"] = statistics.median(x[0] for x in lat[k][imp])
            r[f"{imp}_p99_ns"] = statistics.median(x[1] for x in lat[k][imp])
        rows.append(dict(r, mrs=k, limit=ISTORM_LIMIT))
    return rows


def scale_gates(flat, istorm):
    """make bench's gates on the scale part: (ok, line) each."""
    out = []
    for r in flat:
        ok = r["ratio"] <= r["limit"]
        out.append((ok, f"registration with {r['levels'][-1]['bytes'] >> 20} MiB registered "
                        f"over none, {r['importer']}: median {r['ratio']:.3f} of "
                        f"{r['blocks']} blocks (limit {r['limit']:.2f})"
                        f"{'' if ok else ': NOT FLAT'}"))
    for r in istorm:
        ok = r["ratio_ci95"][0] <= r["limit"]
        out.append((ok, f"invalidation storm of {r['mrs']} MRs, Rust/C time until all "
                        f"re-mapped: {ci(r)} over {r['rounds']} rounds (the interval must "
                        f"reach {r['limit']:.2f}){'' if ok else ': RUST SLOWER'}"))
    return out


SCALE_TEXT = ("An MR's registration, first access (an 8-byte WRITE, which maps a dynamic "
              "MR) and deregistration through uverbs on rxe, against the buffer's size "
              "(``rxe_dmabuf_bench scale``), milliseconds and microseconds per MiB:")
FLAT_TEXT = ("The same for a 16-page MR against the bytes already registered around it "
             "(``rxe_dmabuf_bench flat``: 64 buffers of the exporter in one-page entries, "
             "registered and mapped a quarter at a time, then released; median per level "
             "in microseconds); last/first is the level with the most over none, median of "
             "the blocks (make bench fails above the limit):")
ISTORM_TEXT = ("Invalidation storm (``rxe_dmabuf_bench istorm``): K dynamic MRs on one "
               "16-page buffer that moves, each then written once, which re-maps it; the "
               "time from the move until all K are re-mapped (median of the storms) and "
               "one MR's re-mapping WRITE (p50, p99), milliseconds; Rust/C of the first "
               "(make bench fails if its interval lies above 1.00):")


def scale_tables(scale, flat, istorm):
    out = []
    if scale:
        out += [SCALE_TEXT, ""]
        out += rst_table(
            ["source", "MR", "MiB", "C ms", "Rust ms", "C us/MiB", "Rust us/MiB",
             "Rust/C [95% CI]"],
            [[r["source"], r["mode"], str(r["bytes"] >> 20), f"{r['c_ns'] / 1e6:.2f}",
              f"{r['rust_ns'] / 1e6:.2f}", f"{r['c_ns'] / 1e3 / (r['bytes'] >> 20):.1f}",
              f"{r['rust_ns'] / 1e3 / (r['bytes'] >> 20):.1f}", ci(r)] for r in scale])
        out.append("")
    if flat:
        sizes = [lv["bytes"] for lv in flat[0]["levels"]]
        out += [FLAT_TEXT, ""]
        out += rst_table(
            ["importer", "blocks"] + [f"{n >> 20} MiB" for n in sizes] +
            ["last/first [95% CI]", "limit"],
            [[r["importer"], str(r["blocks"])] +
             [f"{lv['ns'] / 1e3:.0f}" for lv in r["levels"]] + [ci(r), f"{r['limit']:.2f}"]
             for r in flat])
        out.append("")
    if istorm:
        out += [ISTORM_TEXT, ""]
        out += rst_table(
            ["MRs", "rounds", "C all", "Rust all", "C p50", "C p99", "Rust p50", "Rust p99",
             "Rust/C [95% CI]"],
            [[str(r["mrs"]), str(r["rounds"]), f"{r['c_ns'] / 1e6:.2f}",
              f"{r['rust_ns'] / 1e6:.2f}", f"{r['c_p50_ns'] / 1e6:.3f}",
              f"{r['c_p99_ns'] / 1e6:.3f}", f"{r['rust_p50_ns'] / 1e6:.3f}",
              f"{r['rust_p99_ns'] / 1e6:.3f}", ci(r)] for r in istorm])
        out.append("")
    return out


def rst(rows, dp_rows, imp_rows, dev_rows, gate, gate_op, kernel, commit, storm=(),
        revlat=(), valid=None, scale=(), flat=(), istorm=()):
    """Documentation/performance.rst's tables."""
    out = [f"Measured at commit ``{commit}`` on the fast kernel ({kernel}), QEMU TCG, "
           "by ``make bench`` (defaults); Rust/C is the median of the per-round ratios "
           "with its 95% bootstrap interval.", ""]
    if gate:
        ratios = sorted(g[2] for g in gate)
        out += [f"Regression gate (``umem_bench_gate``, 65536 entries): median Rust/C "
                f"{statistics.median(ratios):.3f} over {len(ratios)} rounds.", ""]
    if gate_op:
        ratios = sorted(g[2] for g in gate_op)
        out += [f"Regression gate, fixed cost (``umem_bench_gate_op``, one-entry "
                f"registration): median Rust/C {statistics.median(ratios):.3f} over "
                f"{len(ratios)} rounds.", ""]
    if rows:
        out += ["In-kernel, per operation and per table entry:", ""]
        out += rst_table(
            ["benchmark", "entries", "C ns/op", "Rust ns/op", "C ns/entry", "Rust ns/entry",
             "Rust/C [95% CI]"],
            [[r["bench"], str(r["entries"]), f"{r['c_ns']:.0f}", f"{r['rust_ns']:.0f}",
              f"{r['c_ns_per_entry']:.1f}", f"{r['rust_ns_per_entry']:.1f}", ci(r)]
             for r in rows])
        out.append("")
    if storm:
        out += [STORM_TEXT, ""]
        out += rst_table(STORM_HEADER, [storm_cells(r) for r in storm])
        out.append("")
    if dp_rows:
        out += ["rxe data path, against the ordinary MR (bandwidth, or latency for "
                "``write_lat``):", ""]
        out += rst_table(
            ["benchmark", "bytes", "importer", "target", "MB/s", "ratio [95% CI]"],
            [[r["bench"], str(r["bytes"]), r["importer"], r["target"],
              f"{r['mb_per_s']:.1f}" if r["mb_per_s"] is not None else "-", ci(r)]
             for r in dp_rows if r["target"] != r["baseline"] or r["bench"].startswith("mig")])
        out.append("")
    if imp_rows:
        out += ["rxe data path, importers compared (Rust/C time per message), and the null "
                "arm (null/C: the same swap, the C importer on both sides):", ""]
        out += ["(net: the same over the ordinary MR's ratio of that round, which no "
                "importer serves: the importer's own share of the target.)", ""]
        out += rst_table(["arm", "benchmark", "bytes", "target", "ratio [95% CI]",
                          "net [95% CI]"],
                         [[arm_name(r), r["bench"], str(r["bytes"]), r["target"], ci(r),
                           net_ci(r)] for r in imp_rows])
        out.append("")
    if valid:
        out += ["The method's validity (``bench_report.py``, ``validity()``), per round "
                "the geometric mean over the rows:", ""]
        out += [f"- {line}" for line in validity_lines(valid)]
        out.append("")
    if dev_rows:
        out += ["rxe data path, device memory against system memory (the dynamic MR on a "
                "buffer in the BAR over the dynamic MR on system pages, same importer; "
                "bandwidth, or latency for ``write_lat``):", ""]
        out += rst_table(
            ["benchmark", "bytes", "importer", "devmem MB/s", "ratio [95% CI]"],
            [[r["bench"], str(r["bytes"]), r["importer"],
              f"{r['mb_per_s']:.1f}" if r["mb_per_s"] is not None else "-", ci(r)]
             for r in dev_rows])
        out.append("")
    if revlat:
        out += [REVLAT_TEXT, ""]
        out += rst_table(REVLAT_HEADER, [revlat_cells(r) for r in revlat])
        out.append("")
    out += scale_tables(scale, flat, istorm)
    return "\n".join(out)


def plots_dp(rows, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dp = [r for r in rows if not r["bench"].startswith("migrate") and r["target"] != r["baseline"]]
    if dp:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        labels = sorted({(r["bench"], r["bytes"]) for r in dp},
                        key=lambda k: (k[0], k[1]))
        series = sorted({(r["importer"], r["target"]) for r in dp})
        width = 0.8 / max(len(series), 1)
        for i, (imp, tgt) in enumerate(series):
            xs, ys, err = [], [], [[], []]
            for j, lab in enumerate(labels):
                r = next((r for r in dp if (r["bench"], r["bytes"]) == lab and
                          r["importer"] == imp and r["target"] == tgt), None)
                if r is None:
                    continue
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(r["ratio"])
                err[0].append(r["ratio"] - r["ratio_ci95"][0])
                err[1].append(r["ratio_ci95"][1] - r["ratio"])
            ax.bar(xs, ys, width, yerr=err, capsize=2, label=f"{tgt} ({imp} importer)")
        ax.axhline(1.0, color="grey", lw=1)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels([f"{b}\n{n} B" for b, n in labels], fontsize=7)
        ax.set_ylim(0.5, 1.3)
        ax.set_ylabel("dma-buf MR / ordinary MR\n(bandwidth; latency for write_lat)")
        ax.set_title("rxe data path into dma-buf MRs against an ordinary MR (TCG)")
        ax.legend(fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(outdir / "datapath.png", dpi=110)
        plt.close(fig)

    mig = [r for r in rows if r["bench"].startswith("migrate")]
    if mig:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for imp in sorted({r["importer"] for r in mig}):
            rs = sorted((r for r in mig if r["importer"] == imp),
                        key=lambda r: target_order(r["target"]))
            x = [max(int(r["target"][3:]), 0.5) for r in rs]
            ax.plot(x, [r["mb_per_s"] for r in rs], "o-", label=f"{imp} importer")
        ax.set_xscale("log")
        ax.set_xlabel("migrations per second (0 plotted at 0.5)")
        ax.set_ylabel("WRITE MB/s, 1 MiB messages (median)")
        ax.set_title("WRITE into a dynamic dma-buf MR while it migrates (TCG)")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(outdir / "migrate.png", dpi=110)
        plt.close(fig)


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


def plots_scale(scale, flat, istorm, outdir):
    """scale.png (cost per MiB against size), flat.png (the small MR's
    registration against bytes registered) and istorm.png (time until all
    MRs are re-mapped against their number), each importer."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if scale:
        # One panel per exporter layout: in each, a colour per mode, C solid
        # and Rust dashed in that colour, the band between the 10th and 90th
        # percentiles of the rounds drawn around each line.
        sources = sorted({r["source"] for r in scale})
        cols = min(len(sources), 3)
        rows_n = (len(sources) + cols - 1) // cols
        fig, axes = plt.subplots(rows_n, cols, figsize=(4 * cols, 3.4 * rows_n),
                                 sharey=True, squeeze=False)
        colours = {"pinned": "tab:blue", "dynamic": "tab:orange"}
        for ax, src in zip(axes.flat, sources):
            for mode in sorted({r["mode"] for r in scale if r["source"] == src}):
                rs = sorted((r for r in scale if (r["source"], r["mode"]) == (src, mode)),
                            key=lambda r: r["bytes"])
                x = [r["bytes"] >> 20 for r in rs]
                colour = colours.get(mode, "tab:grey")
                for imp, style in (("c", "-"), ("rust", "--")):
                    mib = [r["bytes"] >> 20 for r in rs]
                    ax.plot(x, [r[f"{imp}_ns"] / 1e3 / m for r, m in zip(rs, mib)], style,
                            marker="o" if imp == "c" else "s", ms=3, color=colour,
                            label=f"{mode}, {'C' if imp == 'c' else 'Rust'}")
                    if all(f"{imp}_p10" in r and f"{imp}_p90" in r for r in rs):
                        ax.fill_between(x, [r[f"{imp}_p10"] / 1e3 / m for r, m in zip(rs, mib)],
                                        [r[f"{imp}_p90"] / 1e3 / m for r, m in zip(rs, mib)],
                                        color=colour, alpha=0.12 if imp == "c" else 0.08, lw=0)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(src, fontsize=9)
            ax.set_xlabel("buffer (MiB)", fontsize=8)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=6)
        for ax in list(axes.flat)[len(sources):]:
            ax.set_visible(False)
        for ax in axes[:, 0]:
            ax.set_ylabel("us per MiB (median;\nband: p10 to p90)", fontsize=8)
        fig.suptitle("Registration + first access + deregistration, per exporter layout (TCG)",
                     fontsize=10)
        fig.tight_layout()
        fig.savefig(outdir / "scale.png", dpi=110)
        plt.close(fig)
    if flat:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for r in flat:
            ax.plot([lv["bytes"] >> 20 for lv in r["levels"]],
                     [lv["ns"] / 1e3 for lv in r["levels"]], "o-", label=r["importer"])
        ax.set_xlabel("bytes already registered (MiB)")
        ax.set_ylabel("us per 16-page MR (median)")
        ax.set_ylim(bottom=0)
        ax.set_title("Registration against bytes already registered")
        ax.legend()
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(outdir / "flat.png", dpi=110)
        plt.close(fig)
    if istorm:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for imp, style in (("c", "o-"), ("rust", "s--")):
            ax.plot([r["mrs"] for r in istorm], [r[f"{imp}_ns"] / 1e6 for r in istorm], style,
                    label=f"{imp}: all re-mapped")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("MRs on the moving buffer")
        ax.set_ylabel("ms (median)")
        ax.set_title("Invalidation storm")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(outdir / "istorm.png", dpi=110)
        plt.close(fig)


def boots(logs):
    """--boots: one line per in-kernel benchmark and size over the boots of
    LOGS (make bench's KTAP block, or make kunit's, "importer")."""
    per_boot = defaultdict(list)
    for log in logs:
        for row in summarize(parse(log, r"bench|importer")):
            per_boot[(row["bench"], row["entries"])].append(row["ratio"])
    if not per_boot:
        print("no BENCH lines in " + " ".join(logs), file=sys.stderr)
        return 1
    for (bench, entries), ratios in sorted(per_boot.items()):
        lo, hi = bootstrap_median(ratios)
        print(f"{bench} {entries}: Rust/C {statistics.median(ratios):.3f} "
              f"[{lo:.3f}, {hi:.3f}] over {len(ratios)} boots:",
              " ".join(f"{x:.3f}" for x in ratios))
    return 0


def storm_gate(log, limit):
    """--storm-gate LOG LIMIT: make check's gate on the concurrent
    registration storm of the test kernel's main boot (guest/check.sh,
    blocks storm_gate_*): the median over the rounds of Rust/C wall time
    per registration (each round: C, Rust, Rust, C blocks) must not exceed
    LIMIT. Prints the verdict line, with the limit; fails without rounds."""
    rows = [r for r in summarize(parse(log, r"storm_gate_\w+\+\w+"))
            if r["bench"] == "storm_reg_dereg"]
    if not rows:
        print(f"storm_reg_dereg: no interleaved C and Rust rounds in {log}", file=sys.stderr)
        return 1
    r = rows[0]
    ok = r["ratio"] <= limit
    print(f"storm_reg_dereg: Rust/C time per registration, {r['entries']} workers: median "
          f"{r['ratio']:.3f} of {r['rounds']} rounds [{r['ratio_ci95'][0]:.3f}, "
          f"{r['ratio_ci95'][1]:.3f}] (limit {limit:.3f}){'' if ok else ': TOO SLOW'}")
    return 0 if ok else 1


def from_dataset(path):
    """The tables of a results.json dataset, as --rst wrote them from the
    run's log: the page's tables can be regenerated from the published
    dataset alone."""
    d = json.loads(Path(path).read_text())
    gate = [(g["c_ns"], g["rust_ns"], g["ratio"]) for g in d.get("gate", [])]
    gate_op = [(g["c_ns"], g["rust_ns"], g["ratio"]) for g in d.get("gate_op", [])]
    return rst(d.get("results", []), d.get("datapath", []), d.get("datapath_importers", []),
               d.get("datapath_devmem", []), gate, gate_op, d.get("kernel", "?"),
               d.get("commit"), d.get("storm", []), d.get("revocation_latency", []),
               d.get("validity"), d.get("scale", []), d.get("flat", []),
               d.get("istorm", []))


def plot_names(d):
    """The plots a dataset gives (draw_all() draws exactly these)."""
    dp = d.get("datapath", [])
    names = []
    if d.get("results"):
        names += ["ns_per_entry.png", "ratio.png"]
    if any(not r["bench"].startswith("migrate") and r["target"] != r["baseline"] for r in dp):
        names.append("datapath.png")
    if any(r["bench"].startswith("migrate") for r in dp):
        names.append("migrate.png")
    names += [name for key, name in (("revocation_latency", "revoke.png"), ("scale", "scale.png"),
                                     ("flat", "flat.png"), ("istorm", "istorm.png"))
              if d.get(key)]
    return names


def draw_all(path, outdir):
    """--plots JSON OUTDIR: the plots of a results.json dataset, drawn from
    it alone (make docs puts them into the manual)."""
    d = json.loads(Path(path).read_text())
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    if d.get("results"):
        plots(d["results"], outdir)
    plots_dp(d.get("datapath", []), outdir)
    plot_revlat(d.get("revocation_latency", []), outdir)
    plots_scale(d.get("scale", []), d.get("flat", []), d.get("istorm", []), outdir)
    drawn = sorted(p.name for p in outdir.glob("*.png"))
    if drawn != sorted(plot_names(d)):
        print(f"plots drawn {drawn}, expected {sorted(plot_names(d))}", file=sys.stderr)
        return 1
    return 0


def plot_directives(d):
    """The page's figures: the plots make docs draws from the dataset."""
    names = plot_names(d)
    if not names:
        return ""
    out = ["Plots of this dataset (``make docs`` draws them from it, "
           "``scripts/bench_report.py --plots``):", ""]
    for name in names:
        out += [f".. image:: data/plots/{name}", "   :width: 90%", ""]
    return "\n".join(out)


TWO_NODE_HEADER = (".. SPDX-License-Identifier: GPL-2.0\n\n"
                   ".. Generated by make two-node-bench (scripts/bench_report.py "
                   "--two-node-page): do not edit.\n\n")
# rxe_2node's bench mode names its blocks wire_*; make bench's loopback
# blocks are the same measurement without the wire.
TWO_NODE_BENCH = {"wire_write_bw": "WRITE bandwidth", "wire_write_lat": "WRITE latency"}


def size_name(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} bytes"


def two_node_page(path, loopback=None):
    """--two-node-page: the two-node numbers of a make two-node-bench
    dataset, and how its bandwidth compares with make bench's loopback."""
    d = json.loads(Path(path).read_text())
    rows = [r for r in d.get("datapath", []) if r["bench"] in TWO_NODE_BENCH]
    base = {(r["bench"], r["bytes"], r["importer"]): r for r in rows if r["target"] == "ordinary"}
    table, inside = [], 0
    order = list(TWO_NODE_BENCH)
    for r in sorted(rows, key=lambda r: (order.index(r["bench"]), r["bytes"], r["importer"])):
        o = base.get((r["bench"], r["bytes"], r["importer"]))
        if r["target"] == "ordinary" or not o:
            continue
        lat = r["bench"].endswith("_lat")
        fig = (f"{o['ns_per_msg'] / 1e3:.0f} us" if lat else f"{o['mb_per_s']:.1f} MB/s")
        lo, hi = r["ratio_ci95"]
        inside += lo <= 1.0 <= hi
        table.append([TWO_NODE_BENCH[r["bench"]], size_name(r["bytes"]),
                      "Rust" if r["importer"] == "rust" else "C", fig,
                      f"{r['ratio']:.3f} [{lo:.3f}, {hi:.3f}]"])
    if not table:
        raise SystemExit(f"{path}: no two-node rows ({', '.join(TWO_NODE_BENCH)})")
    rounds = sorted({r["rounds"] for r in rows})
    machine = d.get("machine") or "a machine not recorded"
    out = textwrap.wrap(
        f"``make two-node-bench`` at {d.get('commit') or 'an unrecorded commit'} on "
        f"{machine}, {d.get('kernel', '?')}: per row the ordinary MR's bandwidth (or "
        f"latency), and the dma-buf MR's over it as the median of "
        f"{'/'.join(map(str, rounds))} rounds' ratios with a 95 % bootstrap interval. "
        "Regenerate: ``make two-node-bench`` (it rewrites this file and "
        "``two-node-results.json``).", 76) + [""]
    out += rst_table(["benchmark", "message", "importer", "ordinary MR",
                      "dma-buf MR / ordinary"], table)
    out += ["", f"{inside} of the {len(table)} intervals include 1.0."]
    if loopback:
        lb = json.loads(Path(loopback).read_text())
        pairs = []
        for (bench, size, imp), o in sorted(base.items()):
            m = next((x for x in lb.get("datapath", []) if x["bench"] == bench.removeprefix("wire_")
                      and x["bytes"] == size and x["importer"] == imp
                      and x["target"] == "ordinary" and x.get("mb_per_s")), None)
            if m and o.get("mb_per_s"):
                pairs.append(o["mb_per_s"] / m["mb_per_s"])
        if pairs:
            out += [""] + textwrap.wrap(
                f"Across the link an ordinary MR's WRITE stream reaches {min(pairs):.2f} to "
                f"{max(pairs):.2f} of the bandwidth one guest's loopback gives at the same "
                f"message size (make bench at {lb.get('commit')}, ``data/bench-results.json``).",
                76)
    return TWO_NODE_HEADER + "\n".join(out) + "\n"


def machine_name():
    """"N cores (CPU model)" of the machine this runs on."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f
                          if ln.startswith("model name")), "")
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model})" if model else f"{os.cpu_count()} cores"


PAGE_HEADER = (".. SPDX-License-Identifier: GPL-2.0\n\n"
               ".. Generated by make bench (scripts/bench_report.py --page): do not edit.\n\n")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--page":
        page = from_dataset(sys.argv[2]).rstrip("\n") + "\n\n"
        plots_rst = plot_directives(json.loads(Path(sys.argv[2]).read_text()))
        print(PAGE_HEADER + page + plots_rst, end="")
        return 0
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--two-node-page":
        print(two_node_page(*sys.argv[2:]), end="")
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "--plots":
        return draw_all(sys.argv[2], sys.argv[3])
    if len(sys.argv) > 2 and sys.argv[1] == "--boots":
        return boots(sys.argv[2:])
    if len(sys.argv) == 4 and sys.argv[1] == "--storm-gate":
        return storm_gate(sys.argv[2], float(sys.argv[3]))
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    args = sys.argv[1:]
    rst_out, commit = None, None
    if "--rst" in args:
        i = args.index("--rst")
        rst_out, commit = Path(args[i + 1]), args[i + 2]
        del args[i:i + 3]
    if "--commit" in args:
        i = args.index("--commit")
        commit = args[i + 1]
        del args[i:i + 2]
    method = None
    if "--method" in args:
        i = args.index("--method")
        method = args[i + 1]
        del args[i:i + 2]
    targets_only = "--targets-only" in args
    if targets_only:
        args.remove("--targets-only")
    storm_test = None
    if "--storm-test" in args:
        i = args.index("--storm-test")
        storm_test = args[i + 1]
        del args[i:i + 2]
    log, outdir = args[0], Path(args[1])
    kernel = args[2] if len(args) > 2 else "?"
    outdir.mkdir(parents=True, exist_ok=True)
    rows = summarize(parse(log))
    # The storm: its own table, on this boot's kernel and, with
    # --storm-test, on the test kernel too.
    storm = [dict(r, kernel="fast") for r in rows if r["bench"] == "storm_reg_dereg"]
    rows = [r for r in rows if r["bench"] != "storm_reg_dereg"]
    if storm_test:
        storm += [dict(r, kernel="test") for r in summarize(parse(storm_test))
                  if r["bench"] == "storm_reg_dereg"]
    dp_data = parse_dp(log)
    dp_rows = summarize_dp(dp_data)
    imp_rows = [] if targets_only else summarize_dp_importers(dp_data)
    dev_rows = summarize_devmem(dp_data)
    gate = parse_gate(log)
    gate_op = parse_gate(log, op=True)
    revlat = parse_revlat(log)
    scale, flat, istorm = summarize_scale(log), summarize_flat(log), summarize_istorm(log)
    gates = scale_gates(flat, istorm)
    if not any((rows, dp_rows, storm, revlat, scale, flat, istorm)):
        print(f"no benchmark lines in {log}", file=sys.stderr)
        return 1
    # The comparison of importers on the data path counts only if its null
    # arm shows no bias; without one (BENCH_DP=0) there is nothing to judge.
    valid = validity(imp_rows) if imp_rows else None
    ok = valid is None or valid["valid"]
    dataset = {"dataset": "umem-dmabuf-rs make bench", "version": 1,
               "commit": commit, "machine": machine_name(), "kernel": kernel, "method": method,
               "valid": ok, "validity": valid}
    name = "results.json" if ok else "results-invalid.json"
    (outdir / name).write_text(json.dumps(
        dict(dataset, results=rows, datapath=dp_rows,
             datapath_importers=[{k: v for k, v in r.items() if k != "per_round"}
                                 for r in imp_rows],
             datapath_devmem=dev_rows,
             gate=[{"c_ns": c, "rust_ns": r, "ratio": x} for c, r, x in gate],
             gate_op=[{"c_ns": c, "rust_ns": r, "ratio": x} for c, r, x in gate_op],
             storm=storm, revocation_latency=revlat, scale=scale, flat=flat,
             istorm=istorm, gates=[{"ok": g, "gate": line} for g, line in gates]),
        indent=1) + "\n")
    if rst_out and ok:
        rst_out.write_text(rst(rows, dp_rows, imp_rows, dev_rows, gate, gate_op, kernel,
                               commit, storm, revlat, valid, scale, flat, istorm))
    md = (markdown(rows, kernel) + markdown_dp(dp_rows) + markdown_dp_importers(imp_rows) +
          markdown_devmem(dev_rows) + markdown_storm(storm) + markdown_revlat(revlat) +
          "\n".join(scale_tables(scale, flat, istorm)))
    (outdir / "results.md").write_text(md)
    if rows:
        plots(rows, outdir)
    plots_dp(dp_rows, outdir)
    plot_revlat(revlat, outdir)
    plots_scale(scale, flat, istorm, outdir)
    print(md)
    if valid:
        print("\n".join(["Validity of the importers' data-path comparison:"] +
                        ["  " + line for line in validity_lines(valid)]))
    print(f"written: {outdir}/{name}, results.md and plots")
    for g, line in gates:
        print(("gate: " if g else "GATE FAILED: ") + line)
    if not ok:
        print("the benchmark's null arm shows a bias: its comparison of importers is not "
              f"valid, and {outdir}/results.json was not written", file=sys.stderr)
        return 3
    return 0 if all(g for g, _ in gates) else 4


if __name__ == "__main__":
    sys.exit(main())
