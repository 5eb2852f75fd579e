#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks the manual's references to the kernel series against the series.

In Documentation/*.rst and README.md a patch is named "patch NNNN
(``SUBJECT``)" (or "patch NNNN, ``SUBJECT``" inside parentheses), NNNN its number in patches/linux-7.3/ and SUBJECT its subject
(or the start of it, at least 20 characters); a range is "patches NNNN to
MMMM"; a plain "patch NNNN" must name a patch that exists. A number in
another form ("patch 3", "Patch 14 of the series") is an error: numbers
change when the series does, and a reference the lint cannot check goes
stale silently. Arguments, if any, are the files to check instead. The numbered list of development.rst must give each
patch's subject in the series' order.
"""

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def subjects(series):
    out = {}
    for p in sorted(glob.glob(os.path.join(series, "0*.patch"))):
        n = os.path.basename(p)[:4]
        if n == "0000":
            continue
        lines = open(p, errors="replace").read().split("\n")
        for i, line in enumerate(lines):
            if line.startswith("Subject:"):
                s = re.sub(r"^Subject: \[(?:RFC )?PATCH[^]]*\] ", "", line)
                j = i + 1
                while lines[j].startswith(" "):
                    s += lines[j]
                    j += 1
                out[n] = s
                break
    return out


def norm(text):
    return " ".join(text.split())


def main():
    series = os.path.join(ROOT, "patches", "linux-7.3")
    subj = subjects(series)
    files = sorted(glob.glob(os.path.join(ROOT, "Documentation", "*.rst")))
    files.append(os.path.join(ROOT, "README.md"))
    if len(sys.argv) > 1:  # the files to check instead (the lint's self-test)
        files = [os.path.abspath(f) for f in sys.argv[1:]]
    errors = []
    # Any white space between the words: a reference broken across lines
    # is a reference all the same.
    any_ref = re.compile(r"\b[Pp]atch(?:es)?\s+([0-9]+)\b")
    full = re.compile(r"\b[Pp]atch\s+([0-9]{4})(\s+\(``([^`]+)``\)|,\s+``([^`]+)``)?")
    rng = re.compile(r"\b[Pp]atches\s+([0-9]{4})\s+to\s+([0-9]{4})\b")
    for path in files:
        text = open(path).read()
        rel = os.path.relpath(path, ROOT)

        def where(pos):
            return f"{rel}:{text.count(chr(10), 0, pos) + 1}"

        ok_pos = set()
        for m in full.finditer(text):
            ok_pos.add(m.start(1))
            n = m.group(1)
            if n not in subj:
                errors.append(f"{where(m.start())}: patch {n} is not in patches/linux-7.3")
            elif m.group(3) or m.group(4):
                named, real = norm(m.group(3) or m.group(4)), norm(subj[n])
                if len(named) < 20 and named != real or not real.startswith(named):
                    errors.append(f"{where(m.start())}: patch {n} is ``{real}``, "
                                  f"not ``{named}``")
        for m in rng.finditer(text):
            ok_pos.update((m.start(1),))
            for n in m.groups():
                if n not in subj:
                    errors.append(f"{where(m.start())}: patch {n} is not in patches/linux-7.3")
        for m in any_ref.finditer(text):
            if m.start(1) not in ok_pos:
                errors.append(f"{where(m.start())}: '{norm(m.group(0))}': name a patch as "
                              "\"patch NNNN (``subject``)\"")
    dev = os.path.join(ROOT, "Documentation", "development.rst")
    text = open(dev).read()
    items = re.findall(r"^   ([0-9]+)\. ``(.*?)``", text, re.M | re.S)
    if [int(n) for n, _ in items] != list(range(1, len(subj) + 1)):
        errors.append(f"Documentation/development.rst: the series list has "
                      f"{len(items)} items, the series {len(subj)} patches")
    for n, s in items:
        key = f"{int(n):04d}"
        if key in subj and norm(s) != norm(subj[key]):
            errors.append(f"Documentation/development.rst: item {n} is ``{norm(s)}``, "
                          f"patch {key} is ``{norm(subj[key])}``")
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
