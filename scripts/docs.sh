#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make docs`: builds Documentation/ with Debian's Sphinx into
# build/docs/html, with the plots of make bench's dataset; any warning (a broken reference, bad markup, a page in
# no toctree) fails it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

command -v sphinx-build >/dev/null || "$ROOT/scripts/setup.sh"
out=$ROOT/build/docs
rm -rf "$out"
# A copy of the sources, with the plots of make bench's published dataset
# drawn into it (performance.rst shows them; nothing is written into the
# tree).
mkdir -p "$out"
cp -r "$ROOT/Documentation" "$out/src"
/usr/bin/python3 "$ROOT/scripts/bench_report.py" --plots \
	"$ROOT/Documentation/data/bench-results.json" "$out/src/data/plots" ||
	die "the plots of Documentation/data/bench-results.json could not be drawn"
/usr/bin/sphinx-build -W --keep-going -q -b html -d "$out/doctrees" "$out/src" "$out/html"
