#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kcsan.sh (make check-kcsan): the concurrent suites on the KCSAN kernel
# (UMEM_KERNEL=kcsan, kernel/kcsan.config; its own build and cache key):
# the guest job scripts/guest/kcsan.sh, then the two-node pair (the lossy
# link, WRITEs into a migrating buffer, the killed server; Rust importer).
# The verdict is make check's (scripts/report.py): a data race report
# (BUG: KCSAN) fails it, unless report.py lists it as a known upstream one.
# Phases, commit, machine and verdict in build/kcsan-results/, for the
# lane's run-time table (scripts/runtimes.py --run check-kcsan).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# kcsan_on LOG...: no report from a KCSAN that was off proves nothing, so
# each boot must have enabled it and passed its own boot-time selftest
# (races it plants). kcsan.sh --check-enabled LOG... runs only this (the
# runner's plants, scripts/selftest/plants.sh).
kcsan_on() {
	local l rc=0
	for l in "$@"; do
		if ! grep -aq 'kcsan: enabled early' "$l" ||
			! grep -aq 'kcsan: selftest: 3/3 tests passed' "$l"; then
			echo "not ok: KCSAN was not enabled, or failed its selftest, in $(basename "$l")" >&2
			rc=1
		fi
	done
	return $rc
}
if [ "${1:-}" = --check-enabled ]; then
	shift
	kcsan_on "$@"
	exit
fi

RESULTS=$ROOT/build/kcsan-results
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
export UMEM_PHASES=$RESULTS/phases.txt
record_commit >"$RESULTS/commit.txt"
record_machine >"$RESULTS/machine.txt"
phase_mark begin "make check-kcsan"
export UMEM_KERNEL=kcsan
"$ROOT/scripts/kernel.sh"
"$ROOT/scripts/module.sh"
log=$LOGDIR/kcsan-serial.log
slog=$LOGDIR/kcsan-two-node-server-serial.log
clog=$LOGDIR/kcsan-two-node-client-serial.log
UMEM_TIMEOUT=${UMEM_TIMEOUT:-3600} "$ROOT/scripts/qemu.sh" kcsan "$log" kunit.enable=0 || true
UMEM_SMP=1 TWO_NODE_TESTS=none TWO_NODE_LOSSY=rust TWO_NODE_BENCH= \
	"$ROOT/scripts/two_node.sh" "$slog" "$clog" || true
rc=0
kcsan_on "$log" "$slog" "$clog" || rc=1
python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--require-ktap --log "$log" --log "$slog" --log "$clog" | tee "$RESULTS/verdict.txt" || rc=1
phase_mark end "make check-kcsan"
exit $rc
