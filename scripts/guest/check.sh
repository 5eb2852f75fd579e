# SPDX-License-Identifier: GPL-2.0
# Guest side of `make check`: load each module (its KUnit suites run at
# load) and unload it; the load/unload steps are a KTAP suite of their own.
. /umem/lib.sh

# reliability IMPORTER --save|--compare (rxe_dmabuf_fuzz on rxe0): every
# allocation of REG_DMABUF_MR failed in turn, a seeded fuzzer, the replay
# of make fuzz's corpus, a storm, and
# make bench's uverbs and data-path benchmarks once, tiny (they must run and
# print numbers).
# The Rust run saves its outcomes, the C run must reproduce them.
SEED=${UMEM_FUZZ_SEED:-20261130}
OPS=${UMEM_FUZZ_OPS:-20000}
STORM=${UMEM_STORM_SECS:-10}
reliability() {
	local imp=$1 mode=$2 fuzz="rxe_dmabuf_fuzz rxe0 $GIDX"
	step "fault_injection_uverbs_$imp" ktap_run "fault_injection_uverbs+$imp" \
		$fuzz "$imp" faults "$mode" /tmp/faults-rust.txt
	step "fuzz_$imp" ktap_run "fuzz+$imp" \
		$fuzz "$imp" fuzz "$SEED" "$OPS" "$mode" /tmp/fuzz-rust.txt
	# make fuzz's corpus: the seeds and every reproducer of what it found,
	# with the umem trace events recorded (umem_events_same_on_both_importers).
	step "umem_events_on_$imp" umem_events_on
	step "fuzz_corpus_$imp" ktap_run "replay+$imp" \
		$fuzz "$imp" replay /umem/corpus/* "$mode" /tmp/replay-rust.txt
	step "umem_events_of_$imp" umem_events_save "$imp"
	step "storm_$imp" ktap_run "storm+$imp" $fuzz "$imp" storm "$STORM"
	step "bench_uverbs_smoke_$imp" ktap_run "bench_uverbs+$imp" \
		$fuzz "$imp" regbench 16 2 1 0
	step "bench_remap_smoke_$imp" ktap_run "bench_remap+$imp" \
		$fuzz "$imp" regbench 16 2 2 0
	step "bench_datapath_smoke_$imp" ktap_run "bench_datapath+$imp" \
		rxe_dmabuf_bench rxe0 "$GIDX" "$imp" datapath 1 5 4096
	# The C importer's migration round is retransmit_while_migrating_c
	# (below): the same run with a short retransmit timeout.
	[ "$imp" = c ] || step "bench_migrate_smoke_$imp" ktap_run "bench_migrate+$imp" \
		rxe_dmabuf_bench rxe0 "$GIDX" "$imp" migrate 1 20 4096
	# Revocation latency (make bench's revoke mode, short): the gate that
	# the importer's slowest reaction to an invalidation or a revocation
	# stays below 1 s on this kernel (REVLAT_LIMIT_MS), so that a
	# regression which would stall a vfio-pci reset fails.
	step "bench_revoke_smoke_$imp" ktap_run "bench_revoke+$imp" \
		rxe_dmabuf_bench rxe0 "$GIDX" "$imp" revoke 2 500 4096
	# make bench's scale part, small: MRs over 2 MiB of each source, a
	# small MR against 64 MiB registered, storms of up to 4 MRs (each
	# re-mapped once per move, as the exporter counts): DMA-API debugging
	# warns when more than 7 mappings for one device overlap a cacheline,
	# as 8 MRs on one buffer would.
	step "bench_scale_smoke_$imp" ktap_run "bench_scale+$imp" \
		rxe_dmabuf_bench rxe0 "$GIDX" "$imp" scale 1 2 0 0
	step "bench_flat_smoke_$imp" ktap_run "bench_flat+$imp" \
		rxe_dmabuf_bench rxe0 "$GIDX" "$imp" flat 3 64 0 0
	step "bench_istorm_smoke_$imp" ktap_run "bench_istorm+$imp" \
		rxe_dmabuf_bench rxe0 "$GIDX" "$imp" istorm 2 4 0 0
}

# The umem trace events (include/trace/events/ib_umem_dmabuf.h, tracefs).
# ib_core's entry points emit get, map, unmap and release for whichever
# importer serves them; fence_wait and revoke come from inside each
# importer. The corpus replay is deterministic, so both importers must emit
# the same events with the same fields, less those that differ by nature:
# the umem's address, times, the fd, which importer served it, and the
# number of table entries (exporters merge physically contiguous pages, so
# it follows where the pages landed).
TRACEFS=/sys/kernel/tracing
umem_events_on() {
	[ -d $TRACEFS/events ] || mount -t tracefs nodev $TRACEFS || return 1
	echo 0 >$TRACEFS/tracing_on &&
		echo 8192 >$TRACEFS/buffer_size_kb &&
		echo >$TRACEFS/trace &&
		echo 1 >$TRACEFS/events/ib_umem_dmabuf/enable &&
		echo 1 >$TRACEFS/tracing_on
}
# umem_events_save IMPORTER: stops recording and writes the events, counted,
# to /tmp/events-IMPORTER.txt; fails if one was lost, if there are none, or
# if one was served by the other importer.
umem_events_save() {
	local out=/tmp/events-$1.txt want=module other=builtin
	[ "$1" = c ] && want=builtin other=module
	echo 0 >$TRACEFS/tracing_on
	echo 0 >$TRACEFS/events/ib_umem_dmabuf/enable
	grep -o 'ib_umem_dmabuf_[a-z_]*: .*' $TRACEFS/trace >/tmp/events-raw.txt
	sed -e 's/umem=[^ ]* *//' -e 's/ ns=[0-9]*//' -e 's/ fd=[-0-9]*//' -e 's/ entries=[0-9]*//' \
		-e 's/ importer=[a-z]*//' /tmp/events-raw.txt | sort | uniq -c >$out
	echo "# $(wc -l </tmp/events-raw.txt) umem trace events on the $1 importer:"
	sed 's/^/# /' $out
	! grep -q "^overrun: [1-9]" $TRACEFS/per_cpu/cpu*/stats &&
		grep -q "importer=$want" /tmp/events-raw.txt &&
		! grep -q "importer=$other" /tmp/events-raw.txt &&
		grep -q ib_umem_dmabuf_fence_wait $out && grep -q ib_umem_dmabuf_revoke $out
}
umem_events_same() {
	diff /tmp/events-rust.txt /tmp/events-c.txt
}

# revocation_gate_can_fail: the same run with a limit of 0 ms must fail
# that case, and only it (its output is kept out of the verdict).
revocation_gate_can_fail() {
	local out=/tmp/revlat-gate.txt
	REVLAT_LIMIT_MS=0 rxe_dmabuf_bench rxe0 "$GIDX" c revoke 1 100 4096 >$out 2>&1
	sed 's/^/# revocation gate check: /' $out
	grep -q '^    not ok [0-9]* revocation_latency_max' $out &&
		[ "$(grep -c '^    not ok' $out)" = 1 ]
}

# replay_comparison_can_fail: the corpus replay's comparison (the C run
# reproducing the Rust run's outcomes) against a planted difference. One
# input replayed twice on the C importer agrees with itself; compared with
# the same outcomes with line 10 changed, it must fail, naming that line
# (the outputs are kept out of the verdict).
replay_comparison_can_fail() {
	local fuzz="rxe_dmabuf_fuzz rxe0 $GIDX c replay /umem/corpus/seed-1"
	$fuzz --save /tmp/plant-a.txt >/tmp/plant-out.txt 2>&1 &&
		sed '10s/$/ planted/' /tmp/plant-a.txt >/tmp/plant-b.txt &&
		! cmp -s /tmp/plant-a.txt /tmp/plant-b.txt || return 1
	$fuzz --compare /tmp/plant-a.txt >/tmp/plant-same.txt 2>&1 ||
		{ sed 's/^/# replay plant, same: /' /tmp/plant-same.txt; return 1; }
	$fuzz --compare /tmp/plant-b.txt >/tmp/plant-diff.txt 2>&1
	sed 's/^/# replay plant: /' /tmp/plant-diff.txt | grep '# line\|not ok'
	grep -q '^    not ok [0-9]* same_outcomes_as /tmp/plant-b.txt' /tmp/plant-diff.txt &&
		grep -q '^    # line 10: /tmp/plant-b.txt has' /tmp/plant-diff.txt &&
		grep -q '^    # 1 of [0-9]* outcomes differ' /tmp/plant-diff.txt
}

# retransmitting_stream ARGS...: rxe_dmabuf_bench ARGS with a retransmit
# timeout of 16 ms (RXE_TEST_QP_TIMEOUT=12), shorter than a responder's wait
# for the exporter's copy after a move, so that a WRITE stream into a
# migrating buffer is retried again and again, often twice in a row with
# an acknowledgment in between. rxe once resent the oldest request past its
# own PSNs then, shifting every later packet: the responder NAKed a
# request as invalid (IBV_WC_REM_INV_REQ_ERR) within the first blocks
# (the series' fix "RDMA/rxe: do not resend a request that was
# acknowledged in full"). The importer does not matter; C runs it, and
# it is also make bench's migration round on C, run and printed once.
retransmitting_stream() {
	RXE_TEST_QP_TIMEOUT=12 rxe_dmabuf_bench "$@"
}

# stalled_case_fails_alone: the runner's own check that a stuck case fails
# by itself and says why. The WRITE of the case one_page waits behind a
# copy fence of 10 s (RXE_TEST_FORCE_STALL) while the stall interval is
# 3 s: that one result must fail, naming the stall; the case after it must
# pass on the new QP pair; nothing else may fail.
stalled_case_fails_alone() {
	local out=/tmp/stall-check.txt
	RXE_TEST_FORCE_STALL=one_page RDMA_TEST_STALL=3 \
		RXE_TEST_CASES=one_page,64k_sub_page_offset \
		rxe_dmabuf_test rxe0 "$GIDX" >$out 2>&1
	sed 's/^/# stall check: /' $out
	grep -q '^    not ok [0-9]* one_page: rdma_write_into_dmabuf_mr (.*, no progress for [0-9]* s)$' \
		$out || { echo "# the stalled WRITE did not fail with its reason" >&2; return 1; }
	[ "$(grep -c '^    not ok' $out)" -eq 1 ] ||
		{ echo "# more than the stalled case failed" >&2; return 1; }
	grep -q '^    ok [0-9]* 64k_sub_page_offset: rdma_read_from_dmabuf_mr$' $out ||
		{ echo "# the case after the stall did not pass" >&2; return 1; }
}

# production_load_runs_no_kunit: loaded without kunit=1, the module runs
# none of its suites, and still registers with ib_core; it counts no calls
# unless asked to (count_calls), and the parameter can be changed at run time.
production_load_runs_no_kunit() {
	echo "umem-production-load" >/dev/kmsg
	insmod "$MODDIR/umem_dmabuf_rs.ko" || return 1
	if dmesg | sed -n '/umem-production-load$/,$p' | grep -q 'Subtest: umem_dmabuf_rs'; then
		echo "# a production load ran KUnit suites" >&2
		rmmod umem_dmabuf_rs
		return 1
	fi
	p=/sys/module/umem_dmabuf_rs/parameters
	# debugfs: one "ENTRY CALLS" line per entry point of the importer.
	calls=/sys/kernel/debug/umem_dmabuf_rs/calls
	test -r $calls && grep -q '^get [0-9][0-9]*$' $calls &&
		! grep -qv '^[a-z_]* [0-9][0-9]*$' $calls &&
		[ "$(cat $p/register)" = Y ] &&
		[ "$(cat $p/count_calls)" = N ] &&
		echo 1 >$p/count_calls && [ "$(cat $p/count_calls)" = Y ] &&
		! echo maybe >$p/count_calls 2>/dev/null && [ "$(cat $p/count_calls)" = Y ] &&
		rmmod umem_dmabuf_rs
}

# Function coverage of everything below until the storm gate, whose blocks
# run unprobed (scripts/coverage.py; the host gates it).
step coverage_probes_armed cover_start
# qemu.sh boots with no5lvl (see there): 4-level paging, no la57 flag.
step four_level_paging sh -c '! grep -qw la57 /proc/cpuinfo'
GIDX=$(rxe_setup)
step rxe_device_with_ipv4_gid test -n "$GIDX"

step insmod_umem_dmabuf_rs ktap_insmod importer umem_dmabuf_rs.ko kunit=1 $UMEM_MODARGS
# make check loads the importer as the kernel build made it (the series'
# last patch, CONFIG_INFINIBAND_UMEM_DMABUF_RUST=m): an out-of-tree
# module would taint the kernel with O (scripts/initramfs.sh, UMEM_IMPORTER).
step umem_dmabuf_rs_from_the_kernel_build sh -c \
	'[ -e /sys/module/umem_dmabuf_rs/taint ] && ! grep -q O /sys/module/umem_dmabuf_rs/taint'
# The exporter's suites, with the Rust importer registered...
step insmod_exporter_rust_importer ktap_insmod exporter+rust-importer dmabuf_exporter_rs.ko \
	expect_importer=module require_devmem=1
step rxe_e2e_rust_importer ktap_run rxe_e2e+rust-importer rxe_dmabuf_test rxe0 "$GIDX" rust stress
step uverbs_client_rust_importer uverbs-dmabuf rxe0 "$GIDX"
step uverbs_client_raw_ioctl_rust_importer uverbs-dmabuf rxe0 "$GIDX" --raw
reliability rust --save
# Device removal under a process with live dma-buf MRs, then rxe0 again.
step rxe_removal_rust_importer ktap_run rxe_removal+rust-importer \
	rxe_dmabuf_test rxe0 "$GIDX" rust remove
GIDX=$(rxe_setup)
step rxe_device_added_again_rust_importer test -n "$GIDX"
step rmmod_exporter_rust_importer rmmod dmabuf_exporter_rs
step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
# ...and, the Rust module gone, with the built-in C importer again.
step production_load_runs_no_kunit production_load_runs_no_kunit
step insmod_exporter_c_importer ktap_insmod exporter+c-importer dmabuf_exporter_rs.ko \
	expect_importer=c require_devmem=1
step exporter_userspace_test ktap_run exporter_user /umem/bin/exp_test
step rxe_e2e_c_importer ktap_run rxe_e2e+c-importer rxe_dmabuf_test rxe0 "$GIDX" stress
step stalled_case_fails_alone stalled_case_fails_alone
step uverbs_client_c_importer uverbs-dmabuf rxe0 "$GIDX"
step uverbs_client_raw_ioctl_c_importer uverbs-dmabuf rxe0 "$GIDX" --raw
reliability c --compare
step umem_events_same_on_both_importers umem_events_same
step revocation_gate_can_fail revocation_gate_can_fail
step replay_comparison_can_fail replay_comparison_can_fail
step retransmit_while_migrating_c ktap_run retransmit_migrate+c \
	retransmitting_stream rxe0 "$GIDX" c migrate 1 20 4096
step rxe_removal_c_importer ktap_run rxe_removal+c-importer \
	rxe_dmabuf_test rxe0 "$GIDX" remove
# The other way a device goes: its network device is deleted (a veth here).
ip link add veth0 type veth peer name veth1 && ip link set veth1 up
GIDX=$(rxe_setup rxe1 veth0 198.51.100.1/24 ffff:c633:6401)
step rxe_on_veth test -n "$GIDX"
step rxe_netdev_removal_c_importer ktap_run rxe_removal_netdev+c-importer \
	rxe_dmabuf_test rxe1 "$GIDX" remove-netdev veth0
step rxe1_gone wait_gone /sys/class/infiniband/rxe1
# Last use of device memory in this boot: data written in the BAR with each
# importer stays there for the host to read (scripts/devmem_check.py).
GIDX=$(rxe_setup)
step rxe_device_for_the_witness test -n "$GIDX"
step rxe_devmem_witness ktap_run rxe_devmem_witness rxe_dmabuf_test rxe0 "$GIDX" witness \
	c "insmod $MODDIR/umem_dmabuf_rs.ko" rust "rmmod umem_dmabuf_rs"
step coverage_counted cover_stop
# The concurrent registration storm (rxe_dmabuf_fuzz stormbench), C
# against Rust in rounds of C, Rust, Rust, C blocks, the Rust module loaded
# for the middle two, so that drift cancels: the host gates the median
# ratio (check.sh, storm_gate). UMEM_STORM_GATE=ROUNDS,SECS,WORKERS.
# Seven short rounds rather than three long ones: the boots beside this one
# (the two-node pair) may end while the rounds run, and the round in which
# the load changes is skewed (its C block before the change, its Rust
# blocks after); with three rounds one skewed and one noisy round moved
# the median past the limit, with seven one such round cannot.
sg=${UMEM_STORM_GATE:-7,2,4}
sg_rounds=${sg%%,*}
sg_secs=${sg#*,}
sg_workers=${sg_secs#*,}
sg_secs=${sg_secs%%,*}
storm_block() {	# storm_block IMPORTER ROUND TAG
	step "storm_gate_$2$3_$1" ktap_run "storm_gate_$2$3+$1" \
		rxe_dmabuf_fuzz rxe0 "$GIDX" "$1" stormbench "$sg_workers" "$sg_secs" "$2"
}
r=0
while [ "$r" -lt "$sg_rounds" ]; do
	storm_block c "$r" a
	step "insmod_rust_storm_gate_$r" insmod "$MODDIR/umem_dmabuf_rs.ko"
	storm_block rust "$r" a
	storm_block rust "$r" b
	step "rmmod_rust_storm_gate_$r" rmmod umem_dmabuf_rs
	storm_block c "$r" b
	r=$((r + 1))
done
step rmmod_exporter_c_importer rmmod dmabuf_exporter_rs
steps_report guest_steps
