#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Self-test of the verdict logic (scripts/report.py) on synthetic guest logs:
# a passing log must pass; a log with a failed case, a WARNING, a lockdep,
# KASAN, UBSAN, debugobjects or list corruption report, DMA-API errors
# counted by its debugfs error_count, a kmemleak leak in
# RDMA/dma-buf/our code (or no kmemleak report), no KTAP at all, or a guest
# that died early must each fail, also as the second of two boots; a test
# stopped by the watchdog must fail; a WARNING between expect-warnings
# markers passes, one outside them fails; qemu.sh names the test a stalled
# guest was running (running_case) and boots again only a kernel that died
# of an int3 trap before the job began (boot_crash_before_job). Then the benchmark report
# (scripts/bench_report.py) on a synthetic log: the ratios it computes, and
# whether its null arm lets it judge the importers, and the scale part's
# gates; last,
# the build progress of lib.sh (run_with_progress) over a churning build,
# the kernel source tree's check against the series (source_matches_series),
# the manual's patch references, the run-time tables of make demo and the
# verdict of make check-fixes.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
KUNIT_PY=$KSRC/tools/testing/kunit/kunit.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The guest's watchdog (samples/ktap/user/ktap_watch.c), built for the host:
# a stalled test that SIGKILL ends is stopped and nothing more; one that is
# still there after SIGKILL (here a zombie whose parent never reaps it,
# standing for a task blocked in the kernel) has the guest rebooted: the
# blocked tasks logged again, then SysRq b. The keys go to a file. Both
# cases run in the background, beside the checks below (about 7 s).
watch_case() {	# watch_case UNREAPED: prints the keys written and the exit status
	local child parent= writer rc keys="$tmp/sysrq.$1" fifo="$tmp/fifo.$1"
	: >"$keys"
	if [ "$1" = 1 ]; then
		(sleep 300 & echo $! >"$tmp/child.$1"; exec sleep 300) &
		parent=$!
		while [ ! -s "$tmp/child.$1" ]; do sleep 0.1; done
		child=$(cat "$tmp/child.$1")
	else
		sleep 300 &
		child=$!
	fi
	# Its input: a FIFO that a silent writer holds open.
	mkfifo "$fifo"
	sleep 300 >"$fifo" &
	writer=$!
	KTAP_WATCH_SYSRQ=$keys KTAP_WATCH_GRACE_S=0.2 KTAP_WATCH_UNKILLABLE_S=1 \
		timeout 60 "$tmp/ktap_watch" case 1 "$child" <"$fifo" >"$tmp/watch.$1" 2>&1
	rc=$?
	kill $writer $parent $child 2>/dev/null
	echo "$(cat "$keys") $rc"
}
if gcc -O2 -o "$tmp/ktap_watch" "$ROOT/samples/ktap/user/ktap_watch.c"; then
	watch_case 0 >"$tmp/watch-result.0" &
	watch_case 1 >"$tmp/watch-result.1" &
fi

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
# kmemleak [OBJECT...]: the guest's kmemleak report (each OBJECT a backtrace
# frame of one unreferenced object, as 6.12 and later print them: "func+off/size", or
# a bare address where the module is gone; "old:FRAME" in the older
# "[<addr>] func+off/size" form).
kmemleak() {
	local f
	echo "@@UMEM-KMEMLEAK-BEGIN@@"
	for f in "$@"; do
		echo "unreferenced object 0xffff888004d0c000 (size 64):"
		echo '  comm "insmod", pid 90, jiffies 4294893000'
		echo "  hex dump (first 32 bytes):"
		echo "    00 80 19 05 00 00 11 ff 00 00 00 00 00 00 00 00  ................"
		echo "  backtrace (crc 5e1f0a2b):"
		case $f in
		old:*)
			echo "    [<ffffffff81234567>] __kmalloc_noprof+0x1a0/0x3c0"
			echo "    [<ffffffff8198abcd>] ${f#old:}+0x42/0x100"
			;;
		0x*)
			echo "    __kmalloc_noprof+0x1a0/0x3c0"
			echo "    $f"
			;;
		*)
			echo "    __kmalloc_noprof+0x1a0/0x3c0"
			echo "    $f+0x42/0x100"
			;;
		esac
	done
	echo "@@UMEM-KMEMLEAK-END@@"
}
end() {
	kmemleak
	echo "@@UMEM-DMESG-BEGIN@@"; echo "[    2.0] reboot: Power down"; echo "@@UMEM-DMESG-END@@"
}

expect() {	# expect pass|fail NAME LOGFILE...
	local want=$1 name=$2 rc=0 logs=() l
	shift 2
	for l in "$@"; do
		logs+=(--log "$l")
	done
	python3 "$ROOT/scripts/report.py" --kunit-py "$KUNIT_PY" "${logs[@]}" --quiet --require-ktap \
		--require-kmemleak \
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
# Sanitizers and debug checks.
{ ktap ok; echo "[    1.5] BUG: KASAN: slab-use-after-free in rxe_mr_copy+0x80/0x200"; end; } >"$tmp/kasan"
expect fail "KASAN report" "$tmp/kasan" || bad=1
{ ktap ok; echo "[    1.5] UBSAN: shift-out-of-bounds in drivers/infiniband/core/umem_dmabuf.c:60:20"; end; } >"$tmp/ubsan"
expect fail "UBSAN report" "$tmp/ubsan" || bad=1
{ ktap ok; echo "[    1.5] ODEBUG: free active (active state 0) object: 00000000 object type: work_struct"; end; } >"$tmp/odebug"
expect fail "debugobjects report" "$tmp/odebug" || bad=1
{ ktap ok; echo "[    1.5] list_add corruption. next->prev should be prev (ffff8880), but was 0000"; end; } >"$tmp/list"
expect fail "list corruption" "$tmp/list" || bad=1
{ ktap ok; echo "@@UMEM-DMA-API-ERRORS 0@@"; end; } >"$tmp/dma0"
expect pass "DMA-API error count 0" "$tmp/dma0" || bad=1
{ ktap ok; echo "@@UMEM-DMA-API-ERRORS 12@@"; end; } >"$tmp/dma12"
expect fail "DMA-API errors counted" "$tmp/dma12" || bad=1
# Leaks: ours fail, others are only reported; a missing report fails.
{ ktap ok; kmemleak rxe_mr_init_user; end; } >"$tmp/leak"
expect fail "kmemleak leak in rxe" "$tmp/leak" || bad=1
{ ktap ok; kmemleak "umem_rs_get [umem_dmabuf_rs]"; end; } >"$tmp/leakmod"
expect fail "kmemleak leak in our module" "$tmp/leakmod" || bad=1
{ ktap ok; kmemleak old:rxe_mr_init_user; end; } >"$tmp/leakold"
expect fail "kmemleak leak in rxe, older frame format" "$tmp/leakold" || bad=1
{ ktap ok; kmemleak 0xffffffffa0000d05; end; } >"$tmp/leakgone"
expect fail "kmemleak leak in an unloaded module" "$tmp/leakgone" || bad=1
{ ktap ok; kmemleak ext4_fill_super 0xffffffff81000000; end; } >"$tmp/leakother"
expect pass "kmemleak leak elsewhere is only counted" "$tmp/leakother" || bad=1
{ ktap ok; kmemleak acpi_ns_evaluate; end; } >"$tmp/leakother"
expect pass "kmemleak leak elsewhere" "$tmp/leakother" || bad=1
# The series' Rust in the kernel crate, by its mangled names.
leak_in_rust() {	# leak_in_rust PATH SYMBOL
	{ ktap ok; kmemleak "$2"; end; } >"$tmp/leakrust"
	expect fail "kmemleak leak in the series' Rust ($1)" "$tmp/leakrust" || bad=1
}
leak_in_rust kernel::scatterlist _RNvMNtCs1EKtwoKEMO2_6kernel11scatterlistNtB2_7SGTable3new
leak_in_rust kernel::dma _RNvMNtCs1EKtwoKEMO2_6kernel3dmaINtB2_17CoherentAllocationE5alloc
{ ktap ok; echo "@@UMEM-DMESG-BEGIN@@"; echo "@@UMEM-DMESG-END@@"; } >"$tmp/noleakscan"
expect fail "no kmemleak report" "$tmp/noleakscan" || bad=1
# A WARNING a test provokes on purpose, between its markers and from the
# site the begin marker names, does not count; one after the end marker
# does, and so do one from another site and a lockdep report inside.
expected_warning() {	# expected_warning LINE_INSIDE [LINE_AFTER]
	ktap ok
	echo "[    1.4] umem-expect-warnings-begin provoked_case rust/helpers/bug.c"
	echo "[    1.5] $1"
	echo "[    1.6] umem-expect-warnings-end provoked_case"
	[ -n "${2:-}" ] && echo "[    1.7] $2"
	end
}
warnline="WARNING: CPU: 0 PID: 93 at rust/helpers/bug.c:12 rust_helper_WARN_ON+0x5/0x10"
expected_warning "$warnline" >"$tmp/expected"
expect pass "expected WARNING between markers" "$tmp/expected" || bad=1
expected_warning "$warnline" "$warnline" >"$tmp/unexpected"
expect fail "WARNING after the end marker" "$tmp/unexpected" || bad=1
expected_warning "WARNING: possible circular locking dependency detected" >"$tmp/lockdepin"
expect fail "lockdep report between markers" "$tmp/lockdepin" || bad=1
expected_warning "WARNING: drivers/dma-buf/dma-buf.c:1130 at dma_buf_unmap_attachment+0x5/0x10" \
	>"$tmp/othersite"
expect fail "WARNING from another site between markers" "$tmp/othersite" || bad=1
expected_warning "WARNING: rust/helpers/bug.c:12 at rust_helper_WARN_ON+0x5/0x10, CPU#0: t/1" \
	>"$tmp/newform"
expect pass "expected WARNING in 7.3's form between markers" "$tmp/newform" || bad=1
# The console cut the begin marker off and printed it again whole (printk's
# replay): one window, not two.
{
	ktap ok
	echo "[    1.4] umem-expect-warnings-begin provoked_case rust/hel"
	echo "** replaying previous printk message **"
	echo "[    1.4] umem-expect-warnings-begin provoked_case rust/helpers/bug.c"
	echo "[    1.5] $warnline"
	echo "[    1.6] umem-expect-warnings-end provoked_case"
	end
} >"$tmp/replayed"
expect pass "a marker the console cut off and replayed" "$tmp/replayed" || bad=1
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

# What qemu.sh says a guest stopped for a stall was running (running_case).
case_of() {	# case_of WANT LINE...: the log of LINEs must name WANT
	local want=$1 got
	shift
	printf '%s\n' "$@" >"$tmp/case.log"
	got=$(running_case "$tmp/case.log")
	if [ "$got" = "$want" ]; then
		echo "    ok   running_case: $want"
	else
		echo "    FAIL running_case: '$got', not '$want'" >&2
		bad=1
	fi
}
case_of "running: test rxe_e2e+c-importer" "@@UMEM-KTAP-BEGIN importer@@" \
	"@@UMEM-KTAP-END@@" "@@UMEM-KTAP-BEGIN rxe_e2e+c-importer@@" "    ok 1 x"
case_of "running: KUnit suites of importer" "[    3.1] umem-ktap-start importer" \
	"umem: importer: 120 kernel log lines"
case_of "between tests (step failed: insmod_x)" "@@UMEM-KTAP-BEGIN a@@" "@@UMEM-KTAP-END@@" \
	"step failed: insmod_x"
case_of "after its job (the kernel log was dumped)" "@@UMEM-KTAP-BEGIN a@@" \
	"@@UMEM-KTAP-END@@" "@@UMEM-DMESG-BEGIN@@" "[    3.1] umem-ktap-start exporter" \
	"@@UMEM-DMESG-END@@" "reboot: Power down blocked"

# Which dead guests qemu.sh boots once more (boot_crash_before_job): only
# one whose kernel died of an int3 trap before the job began.
crash_of() {	# want=0|1 what=TEXT crash_of LINE...: want 0 if LINEs are such a log
	local got=1
	printf '%s\n' "${@}" >"$tmp/crash.log"
	boot_crash_before_job "$tmp/crash.log" && got=0
	if [ "$got" = "$want" ]; then
		echo "    ok   boot_crash_before_job: $what"
	else
		echo "    FAIL boot_crash_before_job: $what (got $got)" >&2
		bad=1
	fi
}
int3="[    0.687751] Oops: int3: 0000 [#1] SMP"
want=0 what="an int3 Oops while booting" crash_of "[    0.5] Linux version 7.3.4" "$int3"
want=1 what="an int3 Oops after the job began" crash_of "@@UMEM-GUEST-START job=check@@" \
	"$int3"
want=1 what="another Oops while booting" crash_of \
	"[    0.6] Oops: general protection fault, probably for non-canonical address"
want=1 what="a guest that finished" crash_of "@@UMEM-GUEST-START job=check@@" \
	"@@UMEM-DMESG-END@@"

# The benchmark report: two rounds; Rust blocks twice as slow as C ones,
# a dynamic MR at 0.8 of the ordinary one's bandwidth, a latency 1.5x, a
# device-memory MR at half the dynamic one's bandwidth, and lines outside
# the benchmark's KTAP blocks ignored.
{
	echo "    # DPBENCH write_bw 4096 rust ordinary 0 1"
	echo "@@UMEM-KTAP-BEGIN bench@@"
	for r in 0 1; do
		echo "[    1.0]     # BENCH get_pinned_release 1 c $r 1000"
		echo "[    1.0]     # BENCH get_pinned_release 1 rust $r 2000"
	done
	echo "@@UMEM-KTAP-END@@"
	echo "@@UMEM-KTAP-BEGIN bench_datapath@@"
	for r in 0 1; do
		echo "    # DPBENCH write_bw 65536 rust ordinary $r 800"
		echo "    # DPBENCH write_bw 65536 rust dynamic $r 1000"
		echo "    # DPBENCH write_bw 65536 rust devmem $r 2000"
		echo "    # DPBENCH write_lat 8 rust ordinary $r 200"
		echo "    # DPBENCH write_lat 8 rust dynamic $r 300"
	done
	echo "@@UMEM-KTAP-END@@"
} >"$tmp/bench.log"
if /usr/bin/python3 "$ROOT/scripts/bench_report.py" "$tmp/bench.log" "$tmp/bench" >/dev/null &&
   /usr/bin/python3 - "$tmp/bench/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ratio = {(x["bench"], x["entries"]): x["ratio"] for x in r["results"]}
dp = {(x["bench"], x["target"]): (x["ratio"], x["mb_per_s"]) for x in r["datapath"]}
ok = (ratio == {("get_pinned_release", 1): 2.0}
      and dp[("write_bw", "dynamic")] == (0.8, 65536 / 1000 * 1e3)
      and dp[("write_bw", "ordinary")][0] == 1.0
      and dp[("write_lat", "dynamic")] == (1.5, None)
      and [(x["bench"], x["ratio"]) for x in r["datapath_devmem"]] == [("write_bw", 0.5)]
      and not any(x["bytes"] == 4096 for x in r["datapath"]))
sys.exit(0 if ok else 1)
PY
then
	echo "    ok   bench report: Rust/C, dma-buf/ordinary and devmem/system ratios"
else
	echo "    FAIL bench report: Rust/C, dma-buf/ordinary and devmem/system ratios" >&2
	bad=1
fi
# The data path's validity (bench_report.py, validity()): nine rounds whose
# Rust and null blocks are 2% slower or faster than the C ones by turns
# are valid; a null arm 10% slower every round, a Rust importer that slows
# down the ordinary MR, or too few rounds to judge, are not: the report
# fails, with results-invalid.json and no results.json.
dp_log() {	# dp_log ROUNDS NULL_PERCENT ORDINARY_PERCENT: a data-path boot's log
	local r sign
	echo "@@UMEM-KTAP-BEGIN bench_datapath@@"
	for ((r = 0; r < $1; r++)); do
		sign=$(( r % 2 ? -2 : 2 ))
		for t in ordinary dynamic; do
			echo "    # DPBENCH write_bw 65536 c $t $r 1000"
			echo "    # DPBENCH write_bw 65536 c $t $((1000 + r)) 1000"
			echo "    # DPBENCH write_bw 65536 null $t $((1000 + r)) $((1000 + 10 * (sign + $2)))"
		done
		echo "    # DPBENCH write_bw 65536 rust ordinary $r $((1000 + 10 * (sign + $3)))"
		echo "    # DPBENCH write_bw 65536 rust dynamic $r 1300"
	done
	echo "@@UMEM-KTAP-END@@"
}
# report_verdict WHAT LOG_FN NAME EXPECTED_STATUS ARGS...: bench_report.py's
# exit status on the log that LOG_FN ARGS writes, and its dataset:
# results.json, or with status 3 (not valid) results-invalid.json alone.
report_verdict() {
	local what=$1 fn=$2 name=$3 want=$4 rc d=$tmp/$3
	shift 4
	"$fn" "$@" >"$d.log"
	/usr/bin/python3 "$ROOT/scripts/bench_report.py" "$d.log" "$d" >"$d.out" 2>&1
	rc=$?
	if [ "$want" = 3 ]; then
		[ -e "$d/results-invalid.json" ] && [ ! -e "$d/results.json" ] ||
			rc="$rc, results.json written"
	else
		[ -e "$d/results.json" ] || rc="$rc, no results.json"
	fi
	if [ "$rc" = "$want" ]; then
		echo "    ok   bench report: $what, $name"
	else
		echo "    FAIL bench report: $what, $name (status $rc, expected $want)" >&2
		cat "$d.out" >&2
		bad=1
	fi
}
report_verdict validity dp_log unbiased 0 9 0 0
report_verdict validity dp_log biased_null_arm 3 9 10 0
report_verdict validity dp_log biased_ordinary_mr 3 9 0 10
report_verdict validity dp_log too_few_rounds 3 5 0 0

# The scale part's gates (bench_report.py, scale_gates()): five rounds of
# C, Rust, Rust, C blocks whose flat levels and storms differ by 1% by
# turns pass; a small MR that costs 1.3 times as much with the most bytes
# registered (Rust only), or a storm of 256 MRs for which Rust takes 1.2
# times C's time in every round, fail with status 4, the data still written.
scale_log() {	# scale_log FLAT_PEAK_PERCENT STORM_PERCENT: a scale boot's log
	local r imp i sign peak slow
	for ((r = 0; r < 5; r++)); do
		i=0
		for imp in c rust rust c; do
			i=$((i + 1))
			sign=$(( (r + i) % 2 ? -1 : 1 ))
			peak=100 slow=100
			[ "$imp" = c ] || { peak=$1; slow=$2; }
			echo "@@UMEM-KTAP-BEGIN bench_flat@@"
			for lv in 0 1 2 3 4 3 2 1 0; do
				echo "    # FLAT $((lv << 28)) $imp $r $(( lv == 4 ? 1000 * peak / 100 : 1000 + 10 * sign ))"
			done
			echo "@@UMEM-KTAP-END@@"
			echo "@@UMEM-KTAP-BEGIN bench_istorm@@"
			echo "    # ISTORM 256 $imp $r $(( 10 * slow + 10 * sign )) 3 4"
			echo "@@UMEM-KTAP-END@@"
		done
	done
}
report_verdict "scale gates" scale_log flat_and_even 0 100 100
report_verdict "scale gates" scale_log not_flat 4 130 100
report_verdict "scale gates" scale_log storm_slower 4 100 120

# make fuzz's edges over time (fuzz_edges.py) from AFL++'s plot_data of
# both phases: each phase's lines, its edges as written.
for imp in c rust; do
	mkdir -p "$tmp/fz/afl-$imp/default"
	{
		echo "# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found"
		echo "5, 0, 0, 9, 9, 9, 1.20%, 0, 0, 1, 1.50, 8, 700"
		echo "65, 0, 3, 11, 8, 8, 1.30%, 1, 0, 2, 1.60, 100, 760"
	} >"$tmp/fz/afl-$imp/default/plot_data"
done
edges=$(/usr/bin/python3 "$ROOT/scripts/fuzz_edges.py" "$tmp/fz" 2>&1)
if grep -qE '^c +65 +100 +11 +1 +0 +760$' <<<"$edges" &&
   grep -qE '^rust +5 +8 +9 +0 +0 +700$' <<<"$edges"; then
	echo "    ok   fuzz report: edges over time (fuzz_edges.py)"
else
	echo "    FAIL fuzz report: edges over time (fuzz_edges.py): $edges" >&2
	bad=1
fi

# The comparison across boots (bench_report.py --boots): three boots
# whose Rust blocks take 1, 2 and 3 times the C ones' (make kunit's KTAP
# block, "importer"), and the kernel log's repetition of the lines, outside
# every block, ignored: median 2 over 3 boots.
for k in 1 2 3; do
	{
		echo "@@UMEM-KTAP-BEGIN importer@@"
		for r in 0 1; do
			echo "[    1.0]     # BENCH get_map_unmap_release 1 c $r 1000"
			echo "[    1.0]     # BENCH get_map_unmap_release 1 rust $r $((k * 1000))"
		done
		echo "@@UMEM-KTAP-END@@"
		echo "[    1.0]     # BENCH get_map_unmap_release 1 rust 0 9000"
	} >"$tmp/boot$k.log"
done
boots=$(/usr/bin/python3 "$ROOT/scripts/bench_report.py" --boots "$tmp"/boot{1,2,3}.log 2>&1)
if [ "${boots%%[[]*}" = "get_map_unmap_release 1: Rust/C 2.000 " ] &&
   [ "${boots##*:}" = " 1.000 2.000 3.000" ]; then
	echo "    ok   bench report: Rust/C across boots (--boots)"
else
	echo "    FAIL bench report: Rust/C across boots (--boots): $boots" >&2
	bad=1
fi
# run_with_progress (lib.sh) must outlive a build that creates and deletes
# files under the directory it counts (find then fails, which under
# "set -e -o pipefail" ended kernel.sh while make went on), and must return
# the command's own status. Plain assignments, not conditions: errexit is
# not in force in an "if" or "!" context, even in a subshell that sets it.
churn='for i in $(seq 600); do d=$0/d$((i % 5)); mkdir -p "$d"; : >"$d/x$i.o"
	rm -rf "$0/d$(((i + 2) % 5))"; done; exit $1'
progress() {	# progress RC: runs the churning command, which exits RC
	(set -euo pipefail
	 trap 'echo "returned $?"' EXIT
	 mkdir -p "$tmp/churn$1"
	 UMEM_PHASES= PROGRESS_INTERVAL=0.02 PROGRESS_COUNT_FILE=/dev/null run_with_progress churn \
		"$tmp/churn$1.log" "$tmp/churn$1" bash -c "$churn" "$tmp/churn$1" "$1") 2>/dev/null
}
ran0=$(progress 0)
ran3=$(progress 3)
if [ "$ran0" = "returned 0" ] && [ "$ran3" = "returned 3" ]; then
	echo "    ok   build progress: a build churning its files is followed to its end"
else
	echo "    FAIL build progress: a build churning its files is followed to its end ($ran0, $ran3)" >&2
	bad=1
fi
# A kernel source tree is what the series makes only as recorded
# (source_matches_series, lib.sh): an edit of a tracked file or a commit on
# top (a rebase under way) is seen, so that kernel.sh neither builds nor
# caches from it. A scratch repository stands for the tree.
srcmatch() {	# srcmatch: "match" or "differs" for $tmp/ks
	(KSRC=$tmp/ks
	 series_key() { echo k; }
	 source_matches_series && echo match || echo differs)
}
git init -q "$tmp/ks" && echo a >"$tmp/ks/f" && git -C "$tmp/ks" add f &&
	git_tree "$tmp/ks" commit -qm a
echo "k $(git -C "$tmp/ks" rev-parse 'HEAD^{tree}')" >"$tmp/ks/.umem-series"
m_clean=$(srcmatch)
echo b >>"$tmp/ks/f"
m_edit=$(srcmatch)
git_tree "$tmp/ks" commit -qam b
m_commit=$(srcmatch)
if [ "$m_clean $m_edit $m_commit" = "match differs differs" ]; then
	echo "    ok   kernel source: an edit or a commit beyond the series is seen"
else
	echo "    FAIL kernel source: an edit or a commit beyond the series is seen" \
		"($m_clean $m_edit $m_commit)" >&2
	bad=1
fi
# The manual's patch references (scripts/patchrefs.py): a stale number, a
# wrong subject and a bare number are each reported, also a bare number
# broken onto the next line. The good references name the series' first
# patch by the start of its own subject, whatever the series is, on one line
# and across two.
first=$(sed -n 's/^Subject: \[[^]]*\] //p' "$KPATCHES"/0001-*.patch | cut -c1-30)
printf '%s\n' "patch 0001 (\`\`$first\`\`) is fine, and so is patch" \
	"0001 (\`\`$first\`\`)." >"$tmp/refs-ok.rst"
printf '%s\n' 'patch 0099, patch 0001 (``RDMA/rxe: something else entirely``),' \
	'and patch 3 are not, nor is Patch' '14 of the series.' >"$tmp/refs-bad.rst"
refs=$(python3 "$ROOT/scripts/patchrefs.py" "$tmp/refs-bad.rst" 2>&1)
if python3 "$ROOT/scripts/patchrefs.py" "$tmp/refs-ok.rst" &&
   [ "$(grep -c 'refs-bad.rst' <<<"$refs")" = 4 ]; then
	echo "    ok   patch references: stale number, wrong subject, bare number (one line or two) reported"
else
	echo "    FAIL patch references: $refs" >&2
	bad=1
fi
# The run-time tables (scripts/runtimes.py): make demo's records give its
# total and its own boots' long parts, not those of another run's logs.
mkdir -p "$tmp/rt/res" "$tmp/rt/logs"
printf '%s\n' "1000 begin make demo" "1005 begin boot demo" "1100 end boot demo" \
	"1210 end make demo" >"$tmp/rt/res/phases.txt"
echo "demo finished" >"$tmp/rt/res/verdict.txt"
echo "umem: demo_part took 40 s" >"$tmp/rt/logs/demo-serial.log"
echo "umem: check_part took 90 s" >"$tmp/rt/logs/check-serial.log"
printf '%s\n' '<!-- make-demo-times-warm-begin -->' x '<!-- make-demo-times-warm-end -->' \
	>"$tmp/rt/R.md"
rt=$(python3 "$ROOT/scripts/runtimes.py" --run demo --results "$tmp/rt/res" --logs "$tmp/rt/logs")
if python3 "$ROOT/scripts/runtimes.py" --run demo --results "$tmp/rt/res" \
	--logs "$tmp/rt/logs" --update "$tmp/rt/R.md" --kind warm &&
   grep -q '^`make demo`, warm run: 3 min 30 s on .*`demo finished`\.$' "$tmp/rt/R.md" &&
   grep -q 'demo_part' <<<"$rt" && ! grep -q 'check_part' <<<"$rt"; then
	echo "    ok   run times: make demo's total and its own boots' parts"
else
	echo "    FAIL run times: make demo's total and its own boots' parts: $(cat "$tmp/rt/R.md") $rt" >&2
	bad=1
fi
# make check-fixes' verdict (scripts/fixes.sh judge): the pristine kernel
# must show every bug, the fixed ones none, with a kernel log free of
# warnings and DMA-API errors, and the rxe kernel's DmaBuf tests must pass.
fixes_log() {	# fixes_log SEEN [DMESG_LINE [DMA_ERRORS [HEAP_RESULT]]]
	local c
	for c in phys_vec_table_leak udmabuf_segment_size system_heap_segment_size \
		 rxe_resend_after_full_ack; do
		echo "@@UMEM-FIXES $c $1 what was seen@@"
	done
	echo "@@UMEM-FIXES rxe_dmabuf_mr_udmabuf pass rdma-core's DmaBuf tests@@"
	echo "@@UMEM-FIXES rxe_dmabuf_mr_heap ${4:-pass} rdma-core's DmaBuf tests@@"
	echo "@@UMEM-DMESG-BEGIN@@"
	echo "[    1.000000] rdma_rxe: loaded"
	[ -z "${2:-}" ] || echo "$2"
	echo "@@UMEM-DMESG-END@@"
	echo "@@UMEM-DMA-API-ERRORS ${3:-0}@@"
}
fixes_case() {	# fixes_case pass|fail NAME STAGE LOG
	local rc=0
	"$ROOT/scripts/fixes.sh" judge "$3" "$4" >"$tmp/fixes.out" 2>&1 || rc=1
	if { [ "$1" = pass ] && [ $rc = 0 ]; } || { [ "$1" = fail ] && [ $rc = 1 ] &&
	   grep -q '^[0-9]* passed, [1-9][0-9]* failed$' "$tmp/fixes.out"; }; then
		echo "    ok   check-fixes verdict: $2"
	else
		echo "    FAIL check-fixes verdict: $2 (expected $1): $(cat "$tmp/fixes.out")" >&2
		bad=1
	fi
}
fixes_log bug >"$tmp/fx-pristine"
fixes_case pass "pristine shows every bug" pristine "$tmp/fx-pristine"
fixes_log bug >"$tmp/fx-pristine1"
sed -i 's/^@@UMEM-FIXES udmabuf_segment_size bug /@@UMEM-FIXES udmabuf_segment_size clean /' \
	"$tmp/fx-pristine1"
fixes_case fail "pristine without one bug" pristine "$tmp/fx-pristine1"
fixes_log clean >"$tmp/fx-fixes"
fixes_case pass "fixed kernel, every case clean" fixes "$tmp/fx-fixes"
fixes_log bug >"$tmp/fx-fixes1"
fixes_case fail "fixed kernel still showing the bugs" fixes "$tmp/fx-fixes1"
grep -v rxe_resend_after_full_ack "$tmp/fx-fixes" >"$tmp/fx-fixes2"
fixes_case fail "fixed kernel, a case without a result" fixes "$tmp/fx-fixes2"
fixes_log clean "$warnline" >"$tmp/fx-fixes3"
fixes_case fail "fixed kernel, a WARNING in its log" fixes "$tmp/fx-fixes3"
fixes_log clean "" 1 >"$tmp/fx-fixes4"
fixes_case fail "fixed kernel, a DMA-API error counted" fixes "$tmp/fx-fixes4"
fixes_log clean >"$tmp/fx-rxe"
fixes_case pass "rxe kernel, DmaBuf tests passed" rxe "$tmp/fx-rxe"
fixes_log clean "" 0 fail >"$tmp/fx-rxe1"
fixes_case fail "rxe kernel, DmaBuf tests failed" rxe "$tmp/fx-rxe1"
# A fix alone (only-N): its own case clean, the others not run.
printf '%s\n' '@@UMEM-FIXES udmabuf_segment_size clean 2048 KiB: 32 entries@@' \
	'@@UMEM-DMESG-BEGIN@@' '@@UMEM-DMESG-END@@' '@@UMEM-DMA-API-ERRORS 0@@' >"$tmp/fx-only2"
fixes_case pass "fix 2 alone, its case clean" only-2 "$tmp/fx-only2"
sed 's/udmabuf_segment_size clean/udmabuf_segment_size bug/' "$tmp/fx-only2" >"$tmp/fx-only2b"
fixes_case fail "fix 2 alone, its bug still seen" only-2 "$tmp/fx-only2b"
fixes_case fail "fix 3 alone judged on fix 2's case" only-3 "$tmp/fx-only2"
sed 's/^@@UMEM-DMA-API-ERRORS 0@@/@@UMEM-DMA-API-ERRORS 2@@/' "$tmp/fx-only2" >"$tmp/fx-only2c"
fixes_case fail "fix 2 alone, a DMA-API error counted" only-2 "$tmp/fx-only2c"
sed 's/^@@UMEM-DMESG-BEGIN@@$/&\n[    0.59] DMA-API: preallocated 65536 debug entries\n[    0.60] DMA-API: debugging enabled by kernel config/' \
	"$tmp/fx-only2" >"$tmp/fx-only2d"
fixes_case pass "fix 2 alone, DMA-API debugging's boot lines in its log" only-2 "$tmp/fx-only2d"
sed 's/^@@UMEM-DMESG-BEGIN@@$/&\n[   9.1] DMA-API: ivshmem 0000:00:04.0: device driver frees DMA memory with wrong function/' \
	"$tmp/fx-only2" >"$tmp/fx-only2e"
fixes_case fail "fix 2 alone, a DMA-API error in its log" only-2 "$tmp/fx-only2e"
# Fix 4's pair (fixes.sh judge STAGE SLOG CLOG SRC CRC): pristine must warn
# (its server may hang after the warning); a fixed pair must finish, report
# clean and hold no warning in either log.
pair_case() {	# pair_case pass|fail NAME STAGE SLOG CLOG SRC CRC
	local rc=0
	"$ROOT/scripts/fixes.sh" judge "$3" "$4" "$5" "$6" "$7" >"$tmp/fixes.out" 2>&1 || rc=1
	if { [ "$1" = pass ] && [ $rc = 0 ]; } || { [ "$1" = fail ] && [ $rc = 1 ]; }; then
		echo "    ok   check-fixes verdict: $2"
	else
		echo "    FAIL check-fixes verdict: $2 (expected $1): $(cat "$tmp/fixes.out")" >&2
		bad=1
	fi
}
printf '%s\n' "[   26.1] WARNING: net/core/page_pool.c:843 at page_pool_put_unrefed_netmem+0x75/0x2a0" \
	>"$tmp/fx-srv-warn"
printf '%s\n' '@@UMEM-FIXES dead_qp_packets_freed clean 40 packets arrived, no warning@@' \
	'@@UMEM-DMESG-BEGIN@@' '[    1.0] rdma_rxe: loaded' '@@UMEM-DMESG-END@@' >"$tmp/fx-srv-clean"
printf '%s\n' '@@UMEM-DMESG-BEGIN@@' '@@UMEM-DMESG-END@@' >"$tmp/fx-cli"
pair_case pass "pristine pair: the server warned and hung" pristine "$tmp/fx-srv-warn" "$tmp/fx-cli" 1 0
pair_case fail "pristine pair: no warning" pristine "$tmp/fx-srv-clean" "$tmp/fx-cli" 0 0
pair_case pass "fixed pair: clean, both finished" fixes "$tmp/fx-srv-clean" "$tmp/fx-cli" 0 0
pair_case pass "fix 4 alone: clean, both finished" only-4 "$tmp/fx-srv-clean" "$tmp/fx-cli" 0 0
pair_case fail "fix 4 alone: the server warned" only-4 "$tmp/fx-srv-warn" "$tmp/fx-cli" 1 0
pair_case fail "fixed pair: the server did not finish" fixes "$tmp/fx-srv-clean" "$tmp/fx-cli" 1 0
cat "$tmp/fx-srv-clean" "$tmp/fx-srv-warn" >"$tmp/fx-srv-both"
pair_case fail "fixed pair: a warning in the server's log" fixes "$tmp/fx-srv-both" "$tmp/fx-cli" 0 0
wait
killable=$(cat "$tmp/watch-result.0" 2>/dev/null || echo "not built")
blocked=$(cat "$tmp/watch-result.1" 2>/dev/null)
if [ "$killable" = "w 124" ] && [ "$blocked" = "wwb 125" ] &&
   grep -q 'still there .* after SIGKILL' "$tmp/watch.1"; then
	echo "    ok   guest watchdog: a test SIGKILL cannot end reboots the guest, one it ends does not"
else
	echo "    FAIL guest watchdog: killable: $killable, blocked: $blocked" >&2
	bad=1
fi
exit $bad
