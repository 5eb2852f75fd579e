#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Planted failures: the verdict (scripts/report.py with a manifest) must
# know what should have run. A synthetic boot and its manifest pass as
# they are; each plant below, one at a time, must turn the verdict red
# with a message that names what is wrong: a failing kernel-crate KUnit
# case at boot, a job that stopped after half its steps, a gate case that
# skipped because of a misspelled parameter, lockdep switched off mid-run,
# an rdma-core case that newly skips (or skips for another reason), a
# known failure that now passes, a suite or case gone from the log, a
# result outside every KTAP document, a job that exited non-zero or
# printed no exit line, a result the manifest does not list, a boot
# without a section, a debugobjects report from code other than the one
# known upstream report, a listed data race through the project's code,
# make check-kcsan on a boot whose KCSAN was off; the storm gate with a
# slow Rust importer; and
# the examples rule with an item that has none; make mutants' mutants that
# no longer apply, and its matrix with a killed and a surviving mutant.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
KUNIT_PY=$KSRC/tools/testing/kunit/kunit.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The pieces of a synthetic serial log, each overridable by a plant.
boot_ktap() {	# boot_ktap STATUS_OF_THE_THIRD_CASE [LINE_AFTER_THE_DOCUMENT]
	cat <<EOT
[    0.900000] Linux version 7.3.4 (synthetic)
[    1.000000] KTAP version 1
[    1.000001] 1..1
[    1.000002]     KTAP version 1
[    1.000003]     # Subtest: rust_dma_resv
[    1.000004]     # speed: normal
[    1.000005]     1..3
[    1.000006]     ok 1 lock_and_unlock
[    1.000007]     ok 2 assume_locked
[    1.000008]     # fences_wait: ASSERTION FAILED at rust/kernel/dma_buf/dma_resv.rs:300
[    1.000009]     $1 3 fences_wait
[    1.000010] $1 1 rust_dma_resv
EOT
	[ -z "${2:-}" ] || echo "$2"
}
steps=(rxe_device_with_ipv4_gid insmod_exporter rmmod_exporter rmmod_umem_dmabuf_rs)
steps_block() {	# steps_block N [LINE]: the first N of the guest's steps, all ok, then LINE
	local i
	echo "@@UMEM-KTAP-BEGIN guest_steps@@"
	printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: guest_steps\n'
	echo "    1..$1"
	for ((i = 0; i < $1; i++)); do
		echo "    ok $((i + 1)) ${steps[i]}"
	done
	echo "ok 1 guest_steps"
	[ -z "${2:-}" ] || echo "$2"
	echo "@@UMEM-KTAP-END@@"
}
rdma_core_block() {	# rdma_core_block SKIP_LINE_OF_CASE_2 [STATUS_OF_THE_KNOWN_FAILURE]
	echo "@@UMEM-KTAP-BEGIN rdma_core_c@@"
	printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: rdma_core_c\n    1..3\n'
	echo "    ok 1 test_dmabuf_reg_mr"
	echo "    $1"
	echo "    ${2:-not ok} 3 test_resize_cq"
	echo "not ok 1 rdma_core_c"
	echo "@@UMEM-KTAP-END@@"
}
gate_block() {	# gate_block LINE_OF_THE_GATE_CASE
	echo "@@UMEM-KTAP-BEGIN importer@@"
	# GATE as a kernel log line ("[  T] CASE"): the block is the kernel
	# log dump, every line with that timestamp.
	local stamp=""
	case "$1" in \[*) stamp="${1%%]*}] " ;; esac
	{
		printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: umem_dmabuf_rs_bench\n    1..1\n'
		echo "    ${1#"$stamp"}"
		echo "ok 1 umem_dmabuf_rs_bench"
	} | sed "s/^/$stamp/"
	echo "@@UMEM-KTAP-END@@"
}
tail_part() {	# tail_part EXIT_LINE SANITIZERS_LINE [DMESG LINE...]
	local l
	[ -z "$1" ] || echo "$1"
	echo "@@UMEM-KMEMLEAK-BEGIN@@"
	echo "@@UMEM-KMEMLEAK-END@@"
	echo "$2"
	echo "@@UMEM-DMESG-BEGIN@@"
	for l in "${@:3}"; do
		echo "$l"
	done
	echo "[    9.0] reboot: Power down"
	echo "@@UMEM-DMESG-END@@"
}
OKSKIP="ok 2 test_odp_reg_mr # SKIP Device does not support ODP"
# log NAME [VAR=VALUE...]: writes $tmp/NAME.log, the clean log unless a
# variable changes a piece: BOOT (the third boot case's status), STEPS (how
# many steps ran), SKIP (rdma-core's second case), KNOWN (the known
# failure's status), GATE (the gate case's line), EXTRA (a line in the
# job), EXIT (the exit line), SAN (the sanitizers line), DMESG (a kernel
# log line), BOOTAFTER and STEPSAFTER (lines after the end of the boot's
# and the steps' KTAP documents).
log() {
	local name=$1
	shift
	(
		BOOT=ok STEPS=${#steps[@]} SKIP=$OKSKIP KNOWN="not ok"
		GATE="ok 1 umem_bench_gate" EXTRA="" EXIT="@@UMEM-GUEST-EXIT rc=0@@"
		SAN="@@UMEM-SANITIZERS lockdep=1 kmemleak=1 dma_api=1@@" DMESG=""
		BOOTAFTER="" STEPSAFTER=""
		for a in "$@"; do
			eval "${a%%=*}=\${a#*=}"
		done
		boot_ktap "$BOOT" "$BOOTAFTER"
		echo "@@UMEM-GUEST-START job=check@@"
		gate_block "$GATE"
		rdma_core_block "$SKIP" "$KNOWN"
		[ -z "$EXTRA" ] || echo "$EXTRA"
		steps_block "$STEPS" "$STEPSAFTER"
		tail_part "$EXIT" "$SAN" ${DMESG:+"$DMESG"}
	) >"$tmp/$name.log"
}

manifest() {
	cat <<EOT
# synthetic
[host]
pass rustfmt

[check.log]
check guest run completed
check guest job exited 0
pass boot: rust_dma_resv.lock_and_unlock
pass boot: rust_dma_resv.assume_locked
pass boot: rust_dma_resv.fences_wait
pass importer: umem_dmabuf_rs_bench.umem_bench_gate
pass rdma_core_c: rdma_core_c.test_dmabuf_reg_mr
skip rdma_core_c: rdma_core_c.test_odp_reg_mr -- Device does not support ODP
xfail rdma_core_c: rdma_core_c.test_resize_cq -- rxe loses track of the CQ after a resize
EOT
	local s
	for s in "${steps[@]}"; do
		echo "pass guest_steps: guest_steps.$s"
	done
	cat <<EOT
check no test result outside a KTAP document
pass kernel log free of WARNING/BUG/Oops/lockdep/KASAN/UBSAN
check lockdep (debug_locks) still on at the end
check kmemleak still on at the end
check DMA-API debugging still on at the end
pass kmemleak: no leak in RDMA/dma-buf/project code
EOT
}
manifest >"$tmp/expected.txt"
echo "ok rustfmt" >"$tmp/host.txt"

# verdict NAME: report.py on $tmp/NAME.log as make check runs it; its
# output in $tmp/NAME.out, its exit status returned.
verdict() {
	cp "$tmp/$1.log" "$tmp/check.log"
	python3 "$ROOT/scripts/report.py" --kunit-py "$KUNIT_PY" --quiet --require-ktap \
		--require-kmemleak --manifest "$tmp/expected.txt" --host "$tmp/host.txt" \
		--log "$tmp/check.log" >"$tmp/$1.out" 2>&1
}

bad=0
# plant NAME WANT [VAR=VALUE...]: the log with the plant must fail and the
# verdict must say WANT (a fixed string).
plant() {
	local name=$1 want=$2
	shift 2
	log "$name" "$@"
	if verdict "$name"; then
		echo "    FAIL plant '$name': the verdict stayed green" >&2
		cat "$tmp/$name.out" >&2
		bad=1
	elif ! grep -qF -- "$want" "$tmp/$name.out"; then
		echo "    FAIL plant '$name': red, but without \"$want\":" >&2
		cat "$tmp/$name.out" >&2
		bad=1
	else
		echo "    ok   plant '$name': red, \"$want\""
	fi
}

log clean
if verdict clean && grep -qx '12 passed, 0 failed, 1 skipped' "$tmp/clean.out" &&
   grep -qx 'harness and smoke checks: 6 passed, 0 failed' "$tmp/clean.out"; then
	echo "    ok   the clean log with its manifest is green, each result counted once"
else
	echo "    FAIL the clean log with its manifest is not green as counted:" >&2
	cat "$tmp/clean.out" >&2
	bad=1
fi
plant boot_case_fails "FAILED: boot: rust_dma_resv.fences_wait (check.log)" BOOT="not ok"
plant job_stopped_halfway \
	"FAILED: guest_steps: guest_steps.rmmod_exporter: missing (the manifest expects pass) (check.log)" \
	STEPS=2
plant gate_skipped_by_misspelt_parameter \
	"FAILED: importer: umem_dmabuf_rs_bench.umem_bench_gate (check.log): skipped (bench_gate_rounds or bench_gate_op_rounds is 0), the manifest expects it to pass" \
	GATE="ok 1 umem_bench_gate # SKIP bench_gate_rounds or bench_gate_op_rounds is 0" \
	DMESG="[    2.0] umem_dmabuf_rs: unknown parameter 'bench_gate_round' ignored"
plant gate_median_above_limit \
	"gate umem_bench_gate states median 1.200 above its limit 1.100" \
	GATE=$'# umem_bench_gate: Rust/C per map: median 1.200 of 15 rounds (limit 1.100)\n    ok 1 umem_bench_gate'
plant gate_of_one_round "gate umem_bench_gate states 1 round(s), fewer than 3" \
	GATE=$'# umem_bench_gate: Rust/C per map: median 0.900 of 1 rounds (limit 1.100)\n    ok 1 umem_bench_gate'
plant expect_window_never_closed "expect-warnings window 'case_x' never closed" \
	DMESG=$'[    2.0] umem-expect-warnings-begin case_x drivers/x.c\n[    2.1] WARNING: CPU: 0 PID: 1 at drivers/x.c:1 f+0x1/0x2'
plant expect_window_mismatched "expect-warnings window 'case_y' ended, but 'case_x' was open" \
	DMESG=$'[    2.0] umem-expect-warnings-begin case_x drivers/x.c\n[    2.1] umem-expect-warnings-end case_y'
plant expect_window_other_site \
	"expect-warnings window 'case_x' expects a warning from drivers/x.c, not: WARNING: drivers/y.c:1 at g+0x1/0x2" \
	DMESG=$'[    2.0] umem-expect-warnings-begin case_x drivers/x.c\n[    2.1] WARNING: drivers/y.c:1 at g+0x1/0x2, CPU#0: t/1\n[    2.2] umem-expect-warnings-end case_x'
plant expect_window_without_site "expect-warnings window 'case_x' names no site of the warning it expects" \
	DMESG=$'[    2.0] umem-expect-warnings-begin case_x\n[    2.1] WARNING: drivers/x.c:1 at f+0x1/0x2, CPU#0: t/1\n[    2.2] umem-expect-warnings-end case_x'
# What a window does forgive: the warning from its site.
log expected_warning \
	DMESG=$'[    2.0] umem-expect-warnings-begin case_x drivers/x.c\n[    2.1] WARNING: drivers/x.c:1 at f+0x1/0x2, CPU#0: t/1\n[    2.2] umem-expect-warnings-end case_x'
if verdict expected_warning && grep -qF "1 WARNING line(s) provoked on purpose" "$tmp/expected_warning.out"; then
	echo "    ok   a warning from the site its window names is counted apart"
else
	echo "    FAIL a warning from the site its window names failed the run:" >&2
	cat "$tmp/expected_warning.out" >&2
	bad=1
fi
plant gate_skipped_by_misspelt_parameter_log "unknown parameter 'bench_gate_round' ignored" \
	DMESG="[    2.0] umem_dmabuf_rs: unknown parameter 'bench_gate_round' ignored"
plant lockdep_off_mid_run "FAILED: lockdep (debug_locks) still on at the end (check.log)" \
	SAN="@@UMEM-SANITIZERS lockdep=0 kmemleak=1 dma_api=1@@"
plant lockdep_off_message "turning off the locking correctness validator" \
	DMESG="[    3.0] turning off the locking correctness validator."
plant kmemleak_off "FAILED: kmemleak still on at the end (check.log)" \
	SAN="@@UMEM-SANITIZERS lockdep=1 kmemleak=0 dma_api=1@@"
plant dma_api_off_message "DMA-API: debugging out of memory - disabling" \
	DMESG="[    3.0] DMA-API: debugging out of memory - disabling"
plant sanitizers_line_missing "FAILED: DMA-API debugging still on at the end: missing" SAN=""
plant rdma_core_new_skip \
	"FAILED: rdma_core_c: rdma_core_c.test_odp_reg_mr (check.log): skipped for 'Device does not support ODP now', the manifest says 'Device does not support ODP'" \
	SKIP="ok 2 test_odp_reg_mr # SKIP Device does not support ODP now"
plant rdma_core_skip_passes "the manifest expects a skip (Device does not support ODP), it passed" \
	SKIP="ok 2 test_odp_reg_mr"
plant known_failure_passes "a known failure (rxe loses track of the CQ after a resize) now passes" \
	KNOWN=ok
plant case_vanished \
	"FAILED: rdma_core_c: rdma_core_c.test_odp_reg_mr: missing (the manifest expects skip) (check.log)" \
	SKIP="# (case 2 gone)"
plant result_outside_ktap "test results outside every KTAP document" EXTRA="    not ok 7 stray_case"
plant result_after_the_boot_plan "test results outside every KTAP document" \
	BOOTAFTER="[    1.000011] not ok 2 rust_dma_resv_again"
plant result_after_a_block_plan "test results outside every KTAP document" \
	STEPSAFTER="not ok 2 after_the_plan"
plant second_document_in_a_block "test results outside every KTAP document" \
	STEPSAFTER=$'KTAP version 1\n1..1\nnot ok 1 second_document'
plant result_outside_ktap_stamped "test results outside every KTAP document" \
	EXTRA="[    5.000000]     not ok 7 stray_case"
# A kernel log line that a judged block also holds, timestamp and all, is
# the console echoing the same record late: not a stray result.
log echoed GATE="[    1.500000] ok 1 umem_bench_gate" \
	EXTRA="[    1.500000]     ok 1 umem_bench_gate"
if verdict echoed; then
	echo "    ok   a console echo of a judged kernel log line is not a stray result"
else
	echo "    FAIL a console echo of a judged kernel log line counted as stray:" >&2
	cat "$tmp/echoed.out" >&2
	bad=1
fi
# The closing line's passes are split into the project's and upstream's own
# kernel-crate doctests on the line before it.
cat >"$tmp/doctests.log" <<'EOT'
[    1.000000] KTAP version 1
[    1.000001] 1..1
[    1.000002]     KTAP version 1
[    1.000003]     # Subtest: rust_doctests_kernel
[    1.000004]     1..2
[    1.000005]     ok 1 rust_doctest_kernel_alloc_kvec_rs_0
[    1.000006]     ok 2 rust_doctest_kernel_dma_buf_rs_0
[    1.000007] ok 1 rust_doctests_kernel
@@UMEM-GUEST-START job=check@@
@@UMEM-GUEST-EXIT rc=0@@
@@UMEM-DMESG-BEGIN@@
@@UMEM-DMESG-END@@
EOT
if python3 "$ROOT/scripts/report.py" --kunit-py "$KUNIT_PY" --quiet --log "$tmp/doctests.log" \
	>"$tmp/doctests.out" 2>&1 &&
	grep -qx "of the 6 passed: 5 the project's, 1 7.3's own kernel-crate doctests (files other than kernel::dma_buf's)" \
		"$tmp/doctests.out"; then
	echo "    ok   upstream's doctests are counted apart from the project's results"
else
	echo "    FAIL upstream's doctests not counted apart:" >&2
	cat "$tmp/doctests.out" >&2
	bad=1
fi
# The history lint on a tree with one planted line of each kind it refuses,
# and on the same tree without them.
mkdir -p "$tmp/hist"
git -C "$tmp/hist" init -q
echo "The product's page." >"$tmp/hist/clean.rst"
if ! "$ROOT/scripts/lint.sh" history "$tmp/hist" 2>/dev/null; then
	echo "    FAIL the history lint refuses a clean tree" >&2
	bad=1
fi
for planted in "measured in sess""ion 4" "the scratch scripts, not ke""pt" \
	"each variant made by ha""nd, then reverted" "on the devel""opment machines" \
	"as of 2026""-01-02" "the boots stopped by ha""nd" "a first vers""ion of this test hung" \
	"flagging every cache was tri""ed first" "two earlier ru""ns of the same mutant"; do
	echo "$planted" >"$tmp/hist/planted.rst"
	if "$ROOT/scripts/lint.sh" history "$tmp/hist" 2>/dev/null; then
		echo "    FAIL plant 'history: $planted': the lint stayed green" >&2
		bad=1
	else
		echo "    ok   plant 'history: $planted': red"
	fi
done
# The same echo inside a block, ahead of the kernel log dump that holds the
# whole document (the console printing a suite's tail late, after the
# block's begin marker): not stray either; a result line there that the
# dump does not hold is.
log echoed_in_block GATE="[    1.500000] ok 1 umem_bench_gate"
sed 's/^@@UMEM-KTAP-BEGIN importer@@$/&\n[    1.500000]     ok 1 umem_bench_gate/' \
	"$tmp/echoed_in_block.log" >"$tmp/echo_ok.log"
sed 's/^@@UMEM-KTAP-BEGIN importer@@$/&\n[    1.400000]     not ok 3 never_in_the_dump/' \
	"$tmp/echoed_in_block.log" >"$tmp/echo_bad.log"
awk '/^@@UMEM-KTAP-BEGIN importer@@$/ { in_gate = 1 }
	/^@@UMEM-KTAP-END@@$/ && in_gate { print "[    1.500000]     ok 1 umem_bench_gate"; in_gate = 0 }
	{ print }' "$tmp/echoed_in_block.log" >"$tmp/echo_after.log"
if verdict echo_ok && verdict echo_after && ! verdict echo_bad &&
	grep -qF "test results outside every KTAP document" "$tmp/echo_bad.out"; then
	echo "    ok   an echo ahead of or after a block's document is not stray, another result there is"
else
	echo "    FAIL a console echo ahead of a block's document judged wrongly:" >&2
	cat "$tmp/echo_ok.out" "$tmp/echo_after.out" "$tmp/echo_bad.out" >&2
	bad=1
fi
# odebug_report FRAME: a debugobjects report of a timer on the stack, whose
# call trace holds FRAME.
odebug_report() {
	printf '%s\n' \
		"[    4.000000] ODEBUG: object 000000003b8165f3 is on stack 00000000047f098d, but NOT annotated." \
		"[    4.000001] ------------[ cut here ]------------" \
		"[    4.000002] WARNING: lib/debugobjects.c:672 at debug_object_is_on_stack+0x99/0xa0, CPU#0: kunit_try_catch/725" \
		"[    4.000003] Call Trace:" \
		"[    4.000004]  $1" \
		"[    4.000005]  kunit_try_run_case+0x114/0x340" \
		"[    4.000006] ---[ end trace 0000000000000000 ]---"
}
# The one upstream report the verdict forgives (KNOWN_UPSTREAM in
# report.py) is forgiven only from the code it names.
log known_upstream DMESG="$(odebug_report rust_doctest_kernel_time_hrtimer_rs_1+0x4a/0xad)"
if verdict known_upstream && grep -qF "1 known upstream report(s), not counted" \
	"$tmp/known_upstream.out"; then
	echo "    ok   a known upstream report from the code it names is counted apart"
else
	echo "    FAIL a known upstream report from the code it names failed the run:" >&2
	cat "$tmp/known_upstream.out" >&2
	bad=1
fi
# A data race (make check-kcsan) is forgiven the same way, with KCSAN's
# report shape (closing rule, two stacks), and never when a frame is the
# project's: a listed race whose other side is in the Rust importer counts.
if python3 - "$ROOT/scripts" <<'PY'
import re
import sys
sys.path.insert(0, sys.argv[1])
import report
report.KNOWN_UPSTREAM.append((
    re.compile(r"BUG: KCSAN: data-race in upstream_a / upstream_b"),
    re.compile(r"\bupstream_a\+"), None, "a listed upstream race (plant)"))
def race(second):
    rule = "[    5.000000] " + "=" * 66
    return [rule, "[    5.000001] BUG: KCSAN: data-race in upstream_a / upstream_b", "",
            "[    5.000002] write to 0xffff888003c1a0b8 of 4 bytes by task 9 on cpu 0:",
            "[    5.000003]  upstream_a+0x1d/0x40",
            "[    5.000004] read to 0xffff888003c1a0b8 of 4 bytes by task 10 on cpu 1:",
            f"[    5.000005]  {second}", "[    5.000006] Reported by Kernel Concurrency Sanitizer on:",
            rule, "[    5.000007] after the report"]
listed = race("upstream_b+0x11/0x30")
ours = race("upstream_b+0x11/0x30 [umem_dmabuf_rs]")
skip, found = report.known_upstream(listed)
ok = found == ["a listed upstream race (plant)"] and skip == {1}
skip, found = report.known_upstream(ours)
ok = ok and not found and not skip
bad, _ = report.scan_problems(ours)
ok = ok and any("BUG: KCSAN" in line for line in bad)
sys.exit(0 if ok else 1)
PY
then
	echo "    ok   a listed upstream data race is forgiven, the same race through the project's code is not"
else
	echo "    FAIL the KCSAN allowlist forgave the project's race, or not the upstream one" >&2
	bad=1
fi
# make check-kcsan refuses a boot whose KCSAN was off or failed its selftest.
printf '%s\n' "[    0.0] kcsan: enabled early" "[    1.0] kcsan: selftest: 3/3 tests passed" \
	>"$tmp/kcsan-on.log"
grep -v 'enabled early' "$tmp/kcsan-on.log" >"$tmp/kcsan-off.log"
sed 's|3/3 tests passed|2/3 tests passed|' "$tmp/kcsan-on.log" >"$tmp/kcsan-selftest.log"
if "$ROOT/scripts/kcsan.sh" --check-enabled "$tmp/kcsan-on.log" 2>/dev/null &&
	! "$ROOT/scripts/kcsan.sh" --check-enabled "$tmp/kcsan-off.log" 2>/dev/null &&
	! "$ROOT/scripts/kcsan.sh" --check-enabled "$tmp/kcsan-selftest.log" 2>/dev/null; then
	echo "    ok   plant 'KCSAN off' and 'KCSAN selftest failed': make check-kcsan red"
else
	echo "    FAIL make check-kcsan's check that KCSAN was on is not red without it" >&2
	bad=1
fi
plant odebug_from_other_code "ODEBUG: object 000000003b8165f3 is on stack" \
	DMESG="$(odebug_report rust_doctest_kernel_dma_buf_rs_1+0x4a/0xad)"
# Forgiven by identity: another CPU's report printed inside the known one's
# lines still fails.
plant report_inside_a_forgiven_one "WARNING: drivers/gpu/drm/x.c:1 at f+0x1/0x2" \
	DMESG="$(odebug_report rust_doctest_kernel_time_hrtimer_rs_1+0x4a/0xad |
		sed '4a [    4.0000035] WARNING: drivers/gpu/drm/x.c:1 at f+0x1/0x2, CPU#1: t/2')"
plant exit_nonzero "FAILED: guest job exited 0 (check.log)" EXIT="@@UMEM-GUEST-EXIT rc=2@@"
plant exit_line_missing "the guest job printed no exit line" EXIT=""
# A result the manifest does not name, and a boot it has no section for.
log unlisted
sed -i 's/^    ok 1 test_dmabuf_reg_mr$/    ok 1 test_dmabuf_reg_mr_new/' "$tmp/unlisted.log"
if verdict unlisted || ! grep -qF "test_dmabuf_reg_mr_new (check.log): not in the manifest" \
	"$tmp/unlisted.out"; then
	echo "    FAIL plant 'unlisted result': not red, or not named" >&2
	cat "$tmp/unlisted.out" >&2
	bad=1
else
	echo "    ok   plant 'unlisted result': red, named"
fi
log clean
cp "$tmp/clean.log" "$tmp/other.log"
if python3 "$ROOT/scripts/report.py" --kunit-py "$KUNIT_PY" --quiet \
	--manifest "$tmp/expected.txt" --log "$tmp/check.log" --log "$tmp/other.log" \
	>"$tmp/section.out" 2>&1 || ! grep -qF "the manifest has a section for other.log" \
	"$tmp/section.out"; then
	echo "    FAIL plant 'boot without a section': not red, or not named" >&2
	cat "$tmp/section.out" >&2
	bad=1
else
	echo "    ok   plant 'boot without a section': red, named"
fi
# The suite of a whole module gone (its KTAP block deleted).
log clean
sed '/@@UMEM-KTAP-BEGIN importer@@/,/@@UMEM-KTAP-END@@/d' "$tmp/clean.log" >"$tmp/nosuite.log"
if verdict nosuite || ! grep -qF \
	"importer: umem_dmabuf_rs_bench.umem_bench_gate: missing (the manifest expects pass)" \
	"$tmp/nosuite.out"; then
	echo "    FAIL plant 'suite missing': not red, or not named" >&2
	cat "$tmp/nosuite.out" >&2
	bad=1
else
	echo "    ok   plant 'suite missing': red, named"
fi
# The storm gate (check.sh: bench_report.py --storm-gate) on two rounds of
# C, Rust, Rust, C blocks: green at par, red when the Rust blocks take
# 1.3 times as long, and red without rounds.
storm_log() {	# storm_log RUST_NS: two rounds, C at 5000000 ns per registration
	local r imp tag ns
	for r in 0 1; do
		for imp in "c a" "rust a" "rust b" "c b"; do
			tag=${imp#* }
			imp=${imp% *}
			ns=5000000
			[ "$imp" = c ] || ns=$1
			echo "@@UMEM-KTAP-BEGIN storm_gate_$r$tag+$imp@@"
			echo "    # BENCH storm_reg_dereg 4 $imp $r $ns"
			echo "@@UMEM-KTAP-END@@"
		done
	done
}
storm_log 5100000 >"$tmp/storm-par.log"
storm_log 6500000 >"$tmp/storm-slow.log"
: >"$tmp/storm-none.log"
gate() { python3 "$ROOT/scripts/bench_report.py" --storm-gate "$tmp/$1.log" 1.25 >"$tmp/$1.out" 2>&1; }
if ! gate storm-par || ! grep -qF 'median 1.020 of 2 rounds' "$tmp/storm-par.out"; then
	echo "    FAIL the storm gate is not green at par" >&2
	cat "$tmp/storm-par.out" >&2
	bad=1
elif gate storm-slow || ! grep -qF 'median 1.300 of 2 rounds' "$tmp/storm-slow.out" ||
	! grep -qF '(limit 1.250): TOO SLOW' "$tmp/storm-slow.out"; then
	echo "    FAIL plant 'storm gate, Rust 1.3 times slower': not red, or not named" >&2
	cat "$tmp/storm-slow.out" >&2
	bad=1
elif gate storm-none || ! grep -qF 'no interleaved C and Rust rounds' "$tmp/storm-none.out"; then
	echo "    FAIL plant 'storm gate without rounds': not red, or not named" >&2
	cat "$tmp/storm-none.out" >&2
	bad=1
else
	echo "    ok   plant 'storm gate, Rust 1.3 times slower' and 'without rounds': red, named"
fi
# The examples rule (scripts/examples.py, lint.sh examples) on a synthetic
# file: green as written; red, naming the item, for a type whose example
# section is prose only, for a function without one, and for a method no
# doctest calls.
examples_file() {	# examples_file PLANT
	cat <<'EOT'
/// A counter.
///
/// # Examples
///
/// ```
/// let c = Counter::new();
/// assert_eq!(c.get(), 0);
/// ```
pub struct Counter(u32);

impl Counter {
    /// A counter at zero.
    pub fn new() -> Self {
        Counter(0)
    }

    /// Its value.
    pub fn get(&self) -> u32 {
        self.0
    }
EOT
	[ "$1" != method ] || printf '\n    /// Adds one.\n    pub fn bump(&mut self) {\n        self.0 += 1;\n    }\n'
	echo "}"
	[ "$1" != function ] || printf '\n/// Two.\npub fn two() -> u32 {\n    2\n}\n'
	[ "$1" != prose ] || printf '\n/// Nothing.\n///\n/// # Examples\n///\n/// See [`Counter`].\npub struct Nothing;\n'
}
examples_plant() {	# examples_plant PLANT MESSAGE
	examples_file "$1" >"$tmp/ex-$1.rs"
	if python3 "$ROOT/scripts/examples.py" "$KSRC" "$tmp/ex-$1.rs" >"$tmp/ex-$1.out" 2>&1 ||
	   ! grep -qF "$2" "$tmp/ex-$1.out"; then
		echo "    FAIL plant 'examples: $1': not red, or not named" >&2
		cat "$tmp/ex-$1.out" >&2
		bad=1
	else
		echo "    ok   plant 'examples: $1': red, named"
	fi
}
examples_file none >"$tmp/ex-none.rs"
if ! python3 "$ROOT/scripts/examples.py" "$KSRC" "$tmp/ex-none.rs" >"$tmp/ex-none.out" 2>&1; then
	echo "    FAIL the examples rule is not green on a file that follows it" >&2
	cat "$tmp/ex-none.out" >&2
	bad=1
fi
examples_plant method 'public method `bump` has no "# Examples" and no doctest of its file calls it'
examples_plant function 'public item `two` has no "# Examples"'
examples_plant prose 'public item `Nothing` has no "# Examples"'
# make mutants' mutants must apply (scripts/mutants.py --check-apply): green
# on a real one; red, naming it, for a mutant whose context is gone and for
# one without its header.
mutants_plant() {	# mutants_plant PLANT MESSAGE
	local d=$tmp/mutants-$1
	mkdir -p "$d"
	cp "$ROOT/scripts/mutants/rust-size-off-by-one.patch" "$d/"
	case "$1" in
	stale) sed 's/^-\(.*dmabuf.size()\)/-\1 \/\/ gone/' \
		"$ROOT/scripts/mutants/rust-size-off-by-one.patch" >"$d/stale.patch" ;;
	headless) sed '/^Mutant: /d' "$ROOT/scripts/mutants/rust-size-off-by-one.patch" \
		>"$d/headless.patch" ;;
	esac
	if python3 "$ROOT/scripts/mutants.py" --mutants "$d" --check-apply "$ROOT" "$KSRC" \
		>"$tmp/mutants-$1.out" 2>&1; then
		[ "$1" = none ] && return
	elif [ "$1" != none ] && grep -qF "$2" "$tmp/mutants-$1.out"; then
		echo "    ok   plant 'mutants: $1': red, named"
		return
	fi
	echo "    FAIL plant 'mutants: $1': ${2:-not green on a mutant that applies}" >&2
	cat "$tmp/mutants-$1.out" >&2
	bad=1
}
mutants_plant none
mutants_plant stale "stale: does not apply to the project tree"
mutants_plant headless "headless: the header needs Mutant:"
# The kill matrix (scripts/mutants.py) on synthetic boots: one block per
# suite, all passing in the baselines; a mutant whose fuzzer case fails is
# killed by the fuzzer alone, as its Expect: says; one that changes nothing
# survives, which fails the run unless its header says why it is
# equivalent; a case that now skips did not run, and kills nothing; a kill
# by another suite than the Expect: names fails the run.
mutant_boot() {	# mutant_boot FILE FUZZ_STATUS [FUZZ_DIRECTIVE]
	local b
	{
		# kernel::dma_buf's own suite, at boot.
		printf '[    1.000000] KTAP version 1\n[    1.000001] 1..1\n'
		printf '[    1.000002]     KTAP version 1\n[    1.000003]     # Subtest: rust_dma_buf\n'
		printf '[    1.000004]     1..1\n[    1.000005]     ok 1 import_maps_and_pins_once\n'
		printf '[    1.000006] ok 1 rust_dma_buf\n'
		echo "@@UMEM-GUEST-START job=mutants@@"
		for b in importer exporter+rust-importer rxe_e2e+rust-importer \
			fault_injection_uverbs+rust fuzz+rust replay+rust storm+rust \
			rxe_removal+rust-importer; do
			echo "@@UMEM-KTAP-BEGIN $b@@"
			printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n    1..1\n'
			if [ "$b" = fuzz+rust ]; then
				echo "    $2 1 outcomes_match${3:-}"
				echo "$2 1 s"
			else
				printf '    ok 1 c\nok 1 s\n'
			fi
			echo "@@UMEM-KTAP-END@@"
		done
		echo "@@UMEM-KTAP-BEGIN guest_steps_mutants@@"
		printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: guest_steps_mutants\n'
		printf '    1..1\n    ok 1 uverbs_client_rust\nok 1 guest_steps_mutants\n'
		echo "@@UMEM-KTAP-END@@"
		tail_part "@@UMEM-GUEST-EXIT rc=0@@" "@@UMEM-SANITIZERS lockdep=1 kmemleak=1 dma_api=1@@"
	} >"$1"
}
mkdir -p "$tmp/mut/logs" "$tmp/mut/patches"
for imp in rust c; do
	mutant_boot "$tmp/mut/logs/baseline-$imp.log" ok
done
for m in killed survivor equivalent skipped unmet; do
	{
		echo "Mutant: synthetic $m"
		echo "Importer: rust"
		echo "Tree: project"
		case $m in
		equivalent) echo "Equivalent: nothing a test could see" ;;
		unmet) echo "Expect: kunit (its window cases), e2e" ;;
		*) echo "Expect: fuzz (outcomes)" ;;
		esac
	} >"$tmp/mut/patches/$m.patch"
	echo booted >"$tmp/mut/logs/$m.status"
done
mutant_boot "$tmp/mut/logs/killed.log" "not ok"
mutant_boot "$tmp/mut/logs/survivor.log" ok
mutant_boot "$tmp/mut/logs/skipped.log" ok " # SKIP the mutant made it skip"
cp "$tmp/mut/logs/survivor.log" "$tmp/mut/logs/equivalent.log"
cp "$tmp/mut/logs/killed.log" "$tmp/mut/logs/unmet.log"
matrix() {	# matrix MUTANT...: mutants.py's matrix in $tmp/mut/out
	python3 "$ROOT/scripts/mutants.py" --kunit-py "$KUNIT_PY" --mutants "$tmp/mut/patches" \
		--logs "$tmp/mut/logs" "$@" >"$tmp/mut/out" 2>&1
}
if matrix killed equivalent &&
	grep -Eq '^  killed +\. +\. +\. +\. +\. +\. +K +\. +\. +\. +\. +\.  killed$' "$tmp/mut/out" &&
	grep -q '^  equivalent .*equivalent: nothing a test could see$' "$tmp/mut/out" &&
	grep -q '^1 of 2 mutants killed, 1 as their Expect: says$' "$tmp/mut/out" &&
	! matrix survivor && grep -q '^  survivor .*SURVIVED$' "$tmp/mut/out" &&
	! matrix skipped && grep -Eq '^  skipped +\. +\. +\. +\. +\. +\. +- .*SURVIVED$' "$tmp/mut/out" &&
	! matrix unmet &&
	grep -q '^unmet: Expect: NOT MET: expected e2e, kunit; killed by fuzz$' "$tmp/mut/out"; then
	echo "    ok   plant 'mutants: a failing fuzzer kills, a survivor, a skip, an unmet Expect: are red'"
else
	echo "    FAIL plant 'mutants: a failing fuzzer kills, a survivor, a skip, an unmet Expect: are red'" >&2
	cat "$tmp/mut/out" >&2
	bad=1
fi
# A report that prints "0 failed" and exits 0 while a host check failed,
# or while it printed no closing line, or that exits non-zero with a clean
# closing line: make check's own exit status (verdict_status) is red each
# time, and its output still ends with a closing line that counts the failure.
printf 'ok rustfmt\nnot ok module build\n' >"$tmp/host-bad.txt"
printf 'ok rustfmt\n' >"$tmp/host-ok.txt"
printf 'summary\n12 passed, 0 failed, 1 skipped\n' >"$tmp/verdict-ok.txt"
printf 'summary\n' >"$tmp/verdict-none.txt"
status_plant() {	# status_plant NAME RC HOST VERDICT WANT_LAST_LINE
	local out rc=0
	out=$(verdict_status "$2" "$tmp/$3" "$tmp/$4") || rc=$?
	if [ "$rc" != 0 ] && [ "$(tail -n 1 <<<"$out")" = "$5" ]; then
		echo "    ok   plant '$1': red, \"$(tail -n 1 <<<"$out")\""
	else
		echo "    FAIL plant '$1': exit $rc, output: $out" >&2
		bad=1
	fi
}
status_plant report_hides_host_failure 0 host-bad.txt verdict-ok.txt "12 passed, 1 failed"
status_plant report_without_closing_line 0 host-ok.txt verdict-none.txt "0 passed, 1 failed"
status_plant report_exits_nonzero 3 host-ok.txt verdict-ok.txt "12 passed, 1 failed"
if verdict_status 0 "$tmp/host-ok.txt" "$tmp/verdict-ok.txt" >"$tmp/status.out"; then
	echo "    ok   a clean report and host record: make check exits 0"
else
	echo "    FAIL a clean report and host record turned red: $(cat "$tmp/status.out")" >&2
	bad=1
fi
exit $bad
