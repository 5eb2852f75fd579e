#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""fuzz_edges.py RESULT_DIR [PNG]: make fuzz's edges over time.

AFL++ writes, for each phase of a make fuzz run (scripts/guest/fuzz.sh:
afl-c, then afl-rust), a plot_data file: one line per stats update, the
seconds since the phase began, the executions, the inputs kept, the crashes
and hangs saved and the edges found in the coverage map (here, the kernel's
KCOV edges). This prints, per phase, up to ten of its lines evenly spread
over its time and the last one, and with PNG draws the edges found against
time for both phases.
"""
import sys
from pathlib import Path

COLUMNS = ("relative_time", "total_execs", "corpus_count", "saved_crashes", "saved_hangs",
           "edges_found")


def read(path):
    """The plot_data lines of path as dicts of the COLUMNS, or [] if none."""
    if not path.is_file():
        return []
    lines = path.read_text(errors="replace").splitlines()
    if not lines or not lines[0].startswith("#"):
        return []
    names = [n.strip() for n in lines[0].lstrip("# ").split(",")]
    if any(c not in names for c in COLUMNS):
        return []
    rows = []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(names):
            continue
        try:
            rows.append({c: int(float(cells[names.index(c)].rstrip("%"))) for c in COLUMNS})
        except ValueError:
            continue
    return rows


def spread(rows, n=10):
    """Up to n rows evenly spread over the time, and the last."""
    if len(rows) <= n:
        return rows
    step = (len(rows) - 1) / (n - 1)
    return [rows[round(i * step)] for i in range(n)]


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    result = Path(sys.argv[1])
    phases = {imp: read(result / f"afl-{imp}" / "default" / "plot_data") for imp in ("c", "rust")}
    if not any(phases.values()):
        print(f"no AFL++ plot_data under {result}", file=sys.stderr)
        return 1
    print("phase  seconds   execs  inputs  crashes  hangs  edges")
    for imp, rows in phases.items():
        for r in spread(rows):
            print(f"{imp:5} {r['relative_time']:8} {r['total_execs']:7} {r['corpus_count']:7} "
                  f"{r['saved_crashes']:8} {r['saved_hangs']:6} {r['edges_found']:6}")
    if len(sys.argv) == 3:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        for imp, rows in phases.items():
            if rows:
                ax.plot([r["relative_time"] for r in rows], [r["edges_found"] for r in rows],
                        drawstyle="steps-post", label=f"{imp} importer")
        ax.set_xlabel("seconds into the phase")
        ax.set_ylabel("edges found (KCOV)")
        ax.set_title("make fuzz: edges over time")
        ax.legend()
        fig.tight_layout()
        fig.savefig(sys.argv[2], dpi=110)
        plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
