#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make kunit`: one short boot of the test kernel that loads both modules
# with their KUnit suites and nothing else; KUNIT_FILTER (a
# kunit.filter_glob, e.g. 'umem_dmabuf_rs_abs.window_*') narrows them, and
# UMEM_MODARGS adds module parameters of the importer. The verdict is
# make check's, on this boot alone. UMEM_KERNEL=fast boots the fast kernel
# (make check's regression gate: KUNIT_FILTER=umem_dmabuf_rs_bench.umem_bench_gate
# UMEM_MODARGS=bench_gate_rounds=15). KUNIT_LOG names the serial log
# (default build/logs/kunit-serial.log).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$ROOT/scripts/kernel.sh"
"$ROOT/scripts/module.sh"
log=${KUNIT_LOG:-$LOGDIR/kunit-serial.log}
args=()
[ -z "${KUNIT_FILTER:-}" ] || args+=("kunit.filter_glob=$KUNIT_FILTER")
[ -z "${UMEM_MODARGS:-}" ] || args+=("umem.modargs=${UMEM_MODARGS// /,}")
UMEM_TIMEOUT=${UMEM_TIMEOUT:-1200} "$ROOT/scripts/qemu.sh" kunit "$log" "${args[@]}" || true
# Only the test kernel has kmemleak.
leaks=()
[ "$UMEM_KERNEL" != test ] || leaks=(--require-kmemleak)
# UMEM_MANIFEST (make check's gate boots): judged against the manifest's
# section for this log, so that a case that skipped or vanished fails.
manifest=()
[ -z "${UMEM_MANIFEST:-}" ] || manifest=(--manifest "$UMEM_MANIFEST")
[ -z "${UMEM_MANIFEST:-}" ] || [ "${UMEM_WRITE_MANIFEST:-0}" = 0 ] ||
	manifest+=(--write-manifest "$ROOT/build/expected-$(basename "$log" .log).txt")
python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--require-ktap "${leaks[@]}" "${manifest[@]}" --log "$log"
