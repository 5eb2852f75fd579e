# SPDX-License-Identifier: GPL-2.0
# Helpers for the guest jobs. KUnit output is taken from the kernel log that
# module loading produced, between markers the host extracts and feeds to
# tools/testing/kunit/kunit.py parse.

MODDIR=/umem/modules

# iproute2's ip (scripts/initramfs.sh), not the busybox applet the shell
# would otherwise run: that one cannot create a veth pair.
ip() {
	/umem/bin/ip "$@"
}

# ktap_insmod NAME MODULE [PARAM=VALUE...]: loads MODULE and prints the KTAP its
# KUnit suites wrote to the kernel log, between markers.
ktap_insmod() {
	local name=$1 mod=$2 old rc
	shift 2
	echo "umem-ktap-start $name" >/dev/kmsg
	# Keep the console quiet while the suites run, so their lines reach the
	# serial port once, from the dump below.
	old=$(cut -f1 /proc/sys/kernel/printk)
	echo 4 >/proc/sys/kernel/printk
	# The console is quiet meanwhile; the host judges progress by it, so
	# say every 30 s how far the kernel log (the suites' KTAP) has grown.
	log_growth "$name" &
	local ticker=$!
	# KTAP_INSMOD: a command that runs insmod, e.g. heap_exec (real_tables.sh).
	${KTAP_INSMOD:-insmod} "$MODDIR/$mod" "$@"
	rc=$?
	kill $ticker
	wait $ticker 2>/dev/null
	echo "$old" >/proc/sys/kernel/printk
	echo "@@UMEM-KTAP-BEGIN $name@@"
	dmesg >/tmp/ktap-dmesg
	if grep -q "umem-ktap-start $name\$" /tmp/ktap-dmesg; then
		sed -n "/umem-ktap-start $name\$/,\$p" /tmp/ktap-dmesg | sed 1d
	else
		# The kernel log wrapped past the start marker: the results are
		# lost, which must fail the run rather than read as "no tests".
		printf 'KTAP version 1\n1..1\nnot ok 1 %s_ktap_lost_from_kernel_log\n' "$name"
		rc=1
	fi
	echo "@@UMEM-KTAP-END@@"
	return $rc
}

# log_growth NAME: every 30 s, prints the kernel log's length if it grew.
log_growth() {
	local n last=
	while sleep 30; do
		n=$(dmesg | wc -l)
		[ "$n" = "$last" ] || echo "umem: $1: $n kernel log lines"
		last=$n
	done
}

# step NAME CMD...: runs CMD and records the result as one test of the
# KTAP suite that steps_report prints (so a failed insmod, rmmod or
# userspace test counts as a failure on the host). A step that runs a KTAP
# document (ktap_run, ktap_insmod) is recorded only when it fails (the
# program or insmod exited non-zero): its cases are the tests, counted once.
STEPS=/tmp/umem-steps
step() {
	local name=$1
	shift
	if "$@"; then
		case "$1" in
		ktap_run | ktap_insmod) ;;
		*) echo "ok $name" >>$STEPS ;;
		esac
	else
		echo "not ok $name" >>$STEPS
		echo "step failed: $name" >&2
	fi
}

# steps_report SUITE: prints the recorded steps as a KTAP document.
steps_report() {
	local n verdict i line
	[ -f $STEPS ] || return 0
	n=$(wc -l <$STEPS)
	verdict=ok
	grep -q '^not ok' $STEPS && verdict="not ok"
	echo "@@UMEM-KTAP-BEGIN $1@@"
	echo "KTAP version 1"
	echo "1..1"
	echo "    KTAP version 1"
	echo "    # Subtest: $1"
	echo "    1..$n"
	i=0
	while read -r line; do
		i=$((i + 1))
		case "$line" in
		"not ok "*) echo "    not ok $i ${line#not ok }" ;;
		*) echo "    ok $i ${line#ok }" ;;
		esac
	done <$STEPS
	echo "$verdict 1 $1"
	echo "@@UMEM-KTAP-END@@"
	rm -f $STEPS
}

# ktap_run NAME CMD...: runs a userspace test that prints KTAP, between
# markers, under ktap_watch: a test that makes no progress for $KTAP_STALL
# seconds (default 600) is stopped (SIGTERM, on which the tests print what
# they recorded and what they were doing, then SIGKILL), after the kernel
# has dumped its blocked tasks (sysrq w) into the log. Progress is output,
# or a line the test appends to $KTAP_PROGRESS when it finishes a case
# (samples/include/ktap_user.h). There is no limit on a test's total
# time: on a slow machine a test takes longer, but it keeps moving. The
# longest silence of a passing test is a single case (a 32 MiB transfer, an
# rdma-core test under KASAN: about 80 s), so 600 s is over seven times
# that on the machines the suite is measured on, and still over three
# times on one half as fast.
ktap_run() {
	local name=$1 rc pid start fifo=/tmp/ktap-run.fifo
	shift
	start=$(cut -d. -f1 /proc/uptime)
	export KTAP_PROGRESS=/tmp/ktap-progress.$name
	rm -f "$fifo" "$KTAP_PROGRESS"
	mkfifo "$fifo"
	echo "@@UMEM-KTAP-BEGIN $name@@"
	"$@" >"$fifo" 2>&1 &
	pid=$!
	/umem/bin/ktap_watch "$name" "${KTAP_STALL:-600}" $pid "$KTAP_PROGRESS" <"$fifo" &
	wait $pid
	rc=$?
	# The watchdog ends with the test's output.
	wait $!
	echo "@@UMEM-KTAP-END@@"
	rm -f "$fifo" "$KTAP_PROGRESS"
	unset KTAP_PROGRESS
	# For the run-time table (make check's lanes run in parallel boots).
	echo "umem: $name took $(($(cut -d. -f1 /proc/uptime) - start)) s"
	return $rc
}

# stop_helper PID: asks a helper process (a migrator beside a test) to
# finish. One that already finished on its own is not an error.
stop_helper() {
	kill -TERM "$1" 2>/dev/null || true
}

# verdict NAME STATUS [NAME STATUS...]: fails, naming each process that
# exited non-zero, unless all of them exited 0.
verdict() {
	local rc=0
	while [ $# -ge 2 ]; do
		if [ "$2" -ne 0 ]; then
			echo "  $1 failed (exit $2)" >&2
			rc=1
		fi
		shift 2
	done
	return $rc
}

# cmdline_value KEY: prints the value of KEY=VALUE on the kernel command
# line; fails if there is none.
cmdline_value() {
	local arg
	for arg in $(cat /proc/cmdline); do
		case "$arg" in
		"$1"=*)
			echo "${arg#"$1"=}"
			return 0
			;;
		esac
	done
	return 1
}

# rxe_setup [NAME NETDEV ADDR GID_SUFFIX]: a soft-RoCE device NAME (rxe0) on
# NETDEV (eth0) with the IPv4 address ADDR (192.0.2.1/24); prints the index
# of its IPv4 (RoCE v2) GID, the one ending in GID_SUFFIX (the address in
# hex), waiting up to 60 s for it (it comes within a second). Can run again
# after the device was removed.
rxe_setup() {
	local name=${1:-rxe0} dev=${2:-eth0} addr=${3:-192.0.2.1/24}
	local suffix=${4:-ffff:c000:0201} i g
	ip link set "$dev" up >&2
	ip addr replace "$addr" dev "$dev" >&2
	rdma link add "$name" type rxe netdev "$dev" >&2 || return 1
	for i in $(seq 600); do
		for g in /sys/class/infiniband/"$name"/ports/1/gids/*; do
			if grep -q "$suffix" "$g" 2>/dev/null; then
				basename "$g"
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}

# wait_gone PATH: waits up to 60 s for PATH to disappear (it goes within a
# second).
wait_gone() {
	local i
	for i in $(seq 600); do
		[ -e "$1" ] || return 0
		sleep 0.1
	done
	return 1
}

# Function coverage (scripts/coverage.py): with /umem/cover-probes.txt in
# the initramfs (UMEM_COVER_PROBES), cover_start puts a kprobe event on
# each function it lists ("EVENT [MODULE:]SYMBOL"; a module's are armed
# when it loads) in a trace instance of its own whose buffer stays off,
# so that only the probes' hit counters count. Coverage needs one hit: a
# sweeper disarms every probe that has been hit, every few seconds, so
# that the hot paths (rxe's copy loops) run at full speed
# again (the counters keep the calls counted until then). cover_stop
# disarms the rest and prints the counters that moved, as "umem-cover:
# EVENT=CALLS..." lines, and the events that could not be registered.
COVER=/sys/kernel/tracing/instances/umem_cover
cover_start() {
	local ev target n=0 t0
	[ -r /umem/cover-probes.txt ] || return 0
	[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing ||
		return 1
	t0=$(date +%s)
	while read -r ev target; do
		if echo "p:cover/$ev $target" >>/sys/kernel/tracing/dynamic_events 2>/dev/null; then
			n=$((n + 1))
		else
			echo "umem-cover-unprobed: $ev $target"
		fi
	done </umem/cover-probes.txt
	mkdir -p $COVER && echo 0 >$COVER/tracing_on && echo 1 >$COVER/buffer_size_kb &&
		echo 1 >$COVER/events/cover/enable || return 1
	echo "umem-cover-armed: $n probes in $(($(date +%s) - t0)) s"
	: >/tmp/cover-off
	cover_sweep &
	echo $! >/tmp/cover-sweeper
}
cover_sweep() {
	while sleep 3; do
		awk 'NR == FNR { off[$1] = 1; next } $2 > 0 && !($1 in off) { print $1 }' \
			/tmp/cover-off /sys/kernel/tracing/kprobe_profile >/tmp/cover-new
		while read -r ev; do
			echo 0 >$COVER/events/cover/$ev/enable
		done </tmp/cover-new
		cat /tmp/cover-new >>/tmp/cover-off
	done
}
cover_stop() {
	[ -d $COVER ] || return 0
	kill "$(cat /tmp/cover-sweeper)" 2>/dev/null
	echo 0 >$COVER/events/cover/enable
	awk '$2 > 0 { printf "%s=%s ", $1, $2; if (++n % 12 == 0) printf "\n" }
	     END { printf "\n" }' /sys/kernel/tracing/kprobe_profile | sed 's/^/umem-cover: /'
}
