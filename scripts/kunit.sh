#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make kunit`: one short boot of the test kernel that loads both modules
# with their KUnit suites and nothing else; KUNIT_FILTER (a
# kunit.filter_glob, e.g. 'umem_dmabuf_rs_abs.window_*') narrows them, and
# UMEM_MODARGS adds module parameters of the importer. The verdict is
# make check's, on this boot alone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$ROOT/scripts/kernel.sh"
"$ROOT/scripts/module.sh"
log=$LOGDIR/kunit-serial.log
args=()
[ -z "${KUNIT_FILTER:-}" ] || args+=("kunit.filter_glob=$KUNIT_FILTER")
[ -z "${UMEM_MODARGS:-}" ] || args+=("umem.modargs=${UMEM_MODARGS// /,}")
UMEM_TIMEOUT=${UMEM_TIMEOUT:-1200} "$ROOT/scripts/qemu.sh" kunit "$log" "${args[@]}" || true
python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--require-ktap --require-kmemleak --log "$log"
