#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make docs`: builds Documentation/ with Debian's Sphinx into
# build/docs/html; any warning (a broken reference, bad markup, a page in
# no toctree) fails it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

command -v sphinx-build >/dev/null || "$ROOT/scripts/setup.sh"
out=$ROOT/build/docs
rm -rf "$out"
/usr/bin/sphinx-build -W --keep-going -q -b html -d "$out/doctrees" \
	"$ROOT/Documentation" "$out/html"
