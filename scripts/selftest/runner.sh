#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Self-test of the verdict logic (scripts/report.py) on synthetic guest logs:
# a passing log must pass; a log with a failed case, a WARNING, a lockdep
# report, no KTAP at all, or a guest that died early must each fail, also as
# the second of two boots; a test stopped by the watchdog must fail.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
KUNIT_PY=$KSRC/tools/testing/kunit/kunit.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ktap() {	# ktap STATUS_OF_CASE_2
	cat <<EOT
@@UMEM-KTAP-BEGIN kunit@@
[    1.000000] KTAP version 1
[    1.000001] 1..1
[    1.000002]     KTAP version 1
[    1.000003]     # Subtest: demo_suite
[    1.000004]     # module: demo
[    1.000005]     1..2
[    1.000006]     ok 1 case_one
[    1.000007]     $1 2 case_two
[    1.000008] $1 1 demo_suite
@@UMEM-KTAP-END@@
EOT
}
end() { echo "@@UMEM-DMESG-BEGIN@@"; echo "[    2.0] reboot: Power down"; echo "@@UMEM-DMESG-END@@"; }

expect() {	# expect pass|fail NAME LOGFILE...
	local want=$1 name=$2 rc=0 logs=() l
	shift 2
	for l in "$@"; do
		logs+=(--log "$l")
	done
	python3 "$ROOT/scripts/report.py" --kunit-py "$KUNIT_PY" "${logs[@]}" --quiet --require-ktap \
		>"$tmp/out" 2>&1 || rc=$?
	if { [ "$want" = pass ] && [ $rc -eq 0 ]; } || { [ "$want" = fail ] && [ $rc -ne 0 ]; }; then
		return 0
	fi
	echo "runner self-test '$name': expected $want, report.py exited $rc:" >&2
	cat "$tmp/out" >&2
	return 1
}

bad=0
{ ktap ok; end; } >"$tmp/good"
expect pass "clean log" "$tmp/good" || bad=1
{ ktap "not ok"; end; } >"$tmp/failcase"
expect fail "failed case" "$tmp/failcase" || bad=1
grep -q "FAILED: .*demo_suite.case_two" "$tmp/out" || { echo "failing case not named" >&2; bad=1; }
{ ktap ok; echo "[    1.5] WARNING: CPU: 0 PID: 1 at rust/umem_shim.c:20 umem_shim_init"; end; } >"$tmp/warn"
expect fail "kernel WARNING" "$tmp/warn" || bad=1
{ ktap ok; echo "[    1.5] WARNING: possible circular locking dependency detected"; end; } >"$tmp/lockdep"
expect fail "lockdep report" "$tmp/lockdep" || bad=1
{ ktap ok; echo "[    1.5] BUG: kernel NULL pointer dereference, address: 0"; end; } >"$tmp/bug"
expect fail "kernel BUG" "$tmp/bug" || bad=1
end >"$tmp/noktap"
expect fail "no KTAP" "$tmp/noktap" || bad=1
ktap ok >"$tmp/died"
expect fail "guest died early" "$tmp/died" || bad=1
# Two boots: each log is judged on its own.
expect pass "two clean boots" "$tmp/good" "$tmp/good" || bad=1
expect fail "WARNING in the second boot" "$tmp/good" "$tmp/warn" || bad=1
expect fail "second boot died" "$tmp/good" "$tmp/died" || bad=1
expect fail "second boot without KTAP" "$tmp/good" "$tmp/noktap" || bad=1
# What a userspace test prints when the watchdog stops it (ktap_user.h).
{
	echo "@@UMEM-KTAP-BEGIN user@@"
	printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: user_suite\n'
	printf '    ok 1 first\n    not ok 2 killed_by_the_watchdog\nnot ok 1 user_suite\n'
	echo "@@UMEM-KTAP-END@@"
	end
} >"$tmp/killed"
expect fail "test stopped by the watchdog" "$tmp/killed" || bad=1
grep -q "FAILED: .*killed_by_the_watchdog" "$tmp/out" || { echo "killed case not named" >&2; bad=1; }
exit $bad
