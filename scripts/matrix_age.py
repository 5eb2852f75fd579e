#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How old the kill matrix is, said where the matrix is quoted.

The matrix (Documentation/data/kill-matrix.rst) names the commit of the
make mutants run that wrote it. This counts, from git, the commits since
then that changed what the mutants mutate or are: the importer (rust/),
the series' Rust patches (patches/linux-7.3/*-rust-*.patch and the Rust
importer's *-Rust-* one) and the mutants (scripts/mutants/). Changes not
committed yet count as one more commit, so that a commit which changes
those files and updates the sentence states its own count.

usage: matrix_age.py                     print the sentence
       matrix_age.py --update FILE...    write it between the markers
       matrix_age.py --check FILE...     fail if a FILE states another one
       matrix_age.py --selftest          --check must fail on a wrong count

The markers are "kill-matrix-age-begin" and "kill-matrix-age-end" (an rst
comment in the manual, an HTML comment in README.md); the line between
them is the sentence. A clone without the matrix's commit in its history
cannot count: --check then says so and passes.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MATRIX = os.path.join(ROOT, "Documentation", "data", "kill-matrix.rst")
PARTS = [
    ("the importer (rust/)", ["rust/"]),
    ("the series' Rust patches", [":(glob)patches/linux-*/*-rust-*.patch",
                                  ":(glob)patches/linux-*/*-Rust-*.patch"]),
    ("the mutants (scripts/mutants/)", ["scripts/mutants/"]),
]


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def matrix_commit():
    with open(MATRIX) as f:
        m = re.search(r"``make mutants`` at ([0-9a-f]{7,40}):", f.read())
    if not m:
        sys.exit(f"{MATRIX}: no \"``make mutants`` at COMMIT:\" line")
    return m.group(1)


def sentence():
    """The sentence, or None when the matrix's commit is not in history."""
    base = matrix_commit()
    try:
        git("cat-file", "-e", base + "^{commit}")
    except subprocess.CalledProcessError:
        return base, None
    counts = []
    for _, paths in PARTS:
        n = int(git("rev-list", "--count", f"{base}..HEAD", "--", *paths))
        if git("status", "--porcelain", "--", *paths):
            n += 1
        counts.append(n)
    if not any(counts):
        return base, (f"Kill matrix of make mutants at {base}: no commit since "
                      "changed the importer, the series' Rust patches or the mutants.")
    said = ", ".join(f"{n} to {what}" for n, (what, _) in zip(counts, PARTS))
    return base, (f"Kill matrix of make mutants at {base}; commits since: {said}. "
                  "The matrix is of an older tree.")


BLOCK = re.compile(r"(kill-matrix-age-begin[^\n]*\n)(.*?)(\n[^\n]*kill-matrix-age-end)", re.S)


def stated(path):
    with open(path) as f:
        m = BLOCK.search(f.read())
    if not m:
        sys.exit(f"{path}: no kill-matrix-age-begin/end markers")
    return m.group(2).strip()


def update(path, text):
    with open(path) as f:
        s = f.read()
    if not BLOCK.search(s):
        sys.exit(f"{path}: no kill-matrix-age-begin/end markers")
    # rst: a blank line after the comment that opens the block and before
    # the one that closes it.
    body = f"\n{text}\n" if path.endswith(".rst") else text
    s = BLOCK.sub(lambda m: m.group(1) + body + m.group(3), s, count=1)
    with open(path, "w") as f:
        f.write(s)


def check(paths, text):
    bad = 0
    for p in paths:
        if stated(p) != text:
            print(f"{p} says: {stated(p)}\n  git says: {text}\n"
                  "  (scripts/matrix_age.py --update README.md Documentation/mutants.rst)",
                  file=sys.stderr)
            bad = 1
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--update", nargs="+", metavar="FILE")
    ap.add_argument("--check", nargs="+", metavar="FILE")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args()
    base, text = sentence()
    if text is None:
        print(f"not counted: {base}, the matrix's commit, is not in this clone's history")
        return 0
    if args.update:
        for p in args.update:
            update(p, text)
        return 0
    if args.check:
        if check(args.check, text):
            return 1
        print(f"    {text}")
        return 0
    if args.selftest:
        # The first count one more, or a count where there was none.
        wrong = re.sub(r"since: (\d+)", lambda m: f"since: {int(m.group(1)) + 1}", text, count=1)
        if wrong == text:
            wrong = text.replace("no commit since", "1 commit since")
        with tempfile.NamedTemporaryFile("w", suffix=".rst") as t:
            t.write(f".. kill-matrix-age-begin\n\n{wrong}\n\n.. kill-matrix-age-end\n")
            t.flush()
            with open(os.devnull, "w") as null:
                saved, sys.stderr = sys.stderr, null
                try:
                    red = check([t.name], text)
                finally:
                    sys.stderr = saved
            t.seek(0)
        if not red:
            print("selftest: a wrong count was accepted", file=sys.stderr)
            return 1
        print("    a stated count one off is refused")
        return 0
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
