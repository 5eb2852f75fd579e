# SPDX-License-Identifier: GPL-2.0
# Guest side of make fuzz (scripts/fuzz.sh). The host passes the inputs as
# a tar archive on the first virtio disk (/dev/vda: the committed corpus,
# then what earlier runs kept) and takes the results back as a tar archive
# written to the second (/dev/vdb). umem.fuzz= on the kernel command line:
#   run SECS PHASES TMIN
#              AFL++ (afl-fuzz, no fork server, rxe_dmabuf_fuzz afl) for SECS
#              seconds on each importer of PHASES in turn (c+rust: the C
#              importer, then the Rust one), each from the inputs and the
#              earlier phases' finds; the kernel's coverage (KCOV) is the
#              feedback. After each phase, its first TMIN crashes are
#              minimized (afl-tmin) on the importer that crashed. Then every
#              input kept is replayed on both importers, which must give the
#              same outcomes (differential), and once more for the coverage
#              table (the program counters reached, and the symbols to name
#              them).
#   seeds N OPS  the seed corpus: N seeded runs of the fuzz mode, OPS
#              operations each, recorded as inputs (--record).
. /umem/lib.sh

mode=$(cmdline_value umem.fuzz | tr , ' ')
set -- $mode
in=/tmp/in out=/tmp/out
mkdir -p $in $out
tar -xf /dev/vda -C $in || echo "umem: no inputs on /dev/vda"
GIDX=$(rxe_setup)
step rxe_device_with_ipv4_gid test -n "$GIDX"
step insmod_exporter insmod $MODDIR/dmabuf_exporter_rs.ko
fz="rxe_dmabuf_fuzz rxe0 $GIDX"

# sum16 FILE: a name for FILE's contents (busybox has no cksum).
sum16() {
	md5sum <"$1" | cut -c1-16
}

# afl IMPORTER SECS INPUTS...: AFL++ on IMPORTER for SECS seconds, its
# findings in $out/afl-IMPORTER (queue/, crashes/, hangs/).
afl() {
	local imp=$1 secs=$2 seeds=/tmp/seeds-$1
	shift 2
	mkdir -p $seeds
	# Named by their checksum: the same input from two places runs once.
	for f in "$@"; do
		[ -f "$f" ] && cp "$f" "$seeds/$(sum16 "$f")"
	done
	# No fork server (the target is a plain program whose feedback is the
	# kernel's, not its own); its map comes through $__AFL_SHM_ID. An input
	# runs in about a second under TCG: 20 s is a hang. An input that
	# crashes already is skipped (and counted), not fatal.
	AFL_SKIP_CRASHES=1 AFL_NO_FORKSRV=1 AFL_SKIP_BIN_CHECK=1 AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 \
		AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1 AFL_NO_CRASH_README=1 \
		AFL_FAST_CAL=1 AFL_TMPDIR=/tmp \
		afl-fuzz -i $seeds -o "$out/afl-$imp" -V "$secs" -t 20000 -m none -- \
		/umem/bin/rxe_dmabuf_fuzz rxe0 "$GIDX" "$imp" afl @@ >/tmp/afl-$imp.txt 2>&1
	local rc=$?
	grep -E 'execs_done|corpus_count|saved_crashes|saved_hangs|edges_found|run_time' \
		"$out/afl-$imp/default/fuzzer_stats" 2>/dev/null | sed "s/^/# afl $imp: /"
	echo "# afl $imp: inputs_crashing : $(grep -c 'results in a crash' /tmp/afl-$imp.txt)"
	# AFL++'s own account (which inputs crashed in its dry run, and why
	# it stopped) comes back with the results.
	cp /tmp/afl-$imp.txt "$out/afl-$imp.log"
	[ $rc = 0 ] || tail -n 30 /tmp/afl-$imp.txt
	return $rc
}

# minimize IMPORTER N: the first N crashes of IMPORTER's phase, each made as
# small as afl-tmin can in 15 minutes while it still crashes, checked without
# AFL++ (the program aborts when the input still fails a check): then
# $out/crashes/NAME.min beside the crash NAME.
minimize() {
	local imp=$1 n=$2 f name
	for f in "$out/afl-$imp"/default/crashes/id:*; do
		[ -f "$f" ] && [ "$n" -gt 0 ] || continue
		n=$((n - 1))
		name=$(sum16 "$f")
		# afl-tmin starts the program as afl-fuzz does; AFL_MAP_SIZE as the
		# faux fork server reports it, or it restarts and gives up.
		AFL_NO_FORKSRV=1 AFL_SKIP_BIN_CHECK=1 AFL_MAP_SIZE=4194304 AFL_TMPDIR=/tmp \
			timeout 900 afl-tmin -i "$f" -o "/tmp/$name.min" -t 20000 -m none -- \
			/umem/bin/rxe_dmabuf_fuzz rxe0 "$GIDX" "$imp" afl @@ >/tmp/tmin-$name.txt 2>&1
		if [ -s "/tmp/$name.min" ] &&
			! /umem/bin/rxe_dmabuf_fuzz rxe0 "$GIDX" "$imp" afl "/tmp/$name.min" \
			>/tmp/check-$name.txt 2>&1; then
			mkdir -p $out/crashes
			cp "/tmp/$name.min" "$out/crashes/$name.min"
			echo "# afl $imp: crash $name minimized from $(wc -c <"$f") to" \
				"$(wc -c <"/tmp/$name.min") bytes, still crashes"
		else
			echo "# afl $imp: crash $name not minimized"
			tail -n 5 /tmp/tmin-$name.txt
		fi
	done
}

case "$1" in
seeds)
	i=1
	while [ "$i" -le "$2" ]; do
		step "seed_$i" ktap_run "seed_$i+c" $fz c fuzz "$i" "$3" --record "$out/seed-$i"
		i=$((i + 1))
	done
	;;
run)
	secs=$2 tmin=${4:-0}
	for imp in $(echo "${3:-c+rust}" | tr + ' '); do
		if [ "$imp" = rust ]; then
			step insmod_umem_dmabuf_rs insmod $MODDIR/umem_dmabuf_rs.ko
		fi
		step "afl_$imp" afl "$imp" "$secs" $in/*/* $out/afl-*/default/queue/id:*
		if [ "$tmin" -gt 0 ]; then
			minimize "$imp" "$tmin"
		fi
	done
	# The replays need both importers: the Rust one loaded first.
	[ -d /sys/module/umem_dmabuf_rs ] ||
		step insmod_umem_dmabuf_rs insmod $MODDIR/umem_dmabuf_rs.ko
	# What both kept, replayed on both importers: the same outcomes.
	mkdir -p $out/queue
	for f in $out/afl-c/default/queue/id:* $out/afl-rust/default/queue/id:*; do
		[ -f "$f" ] && cp "$f" "$out/queue/$(sum16 "$f")"
	done
	step replay_rust ktap_run replay+rust $fz rust replay $out/queue/* --save /tmp/o-rust \
		--pcs $out/pcs-rust.txt
	# The symbols that name the program counters, while both modules are
	# loaded (at the addresses the program counters were recorded at).
	cat /proc/kallsyms >$out/kallsyms.txt
	step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
	step replay_c ktap_run replay+c $fz c replay $out/queue/* --compare /tmp/o-rust \
		--pcs $out/pcs-c.txt
	;;
esac
mkdir -p $out/crashes
for f in $out/afl-*/default/crashes/id:* $out/afl-*/default/hangs/id:*; do
	[ -f "$f" ] && cp "$f" "$out/crashes/$(sum16 "$f")"
done
rm -rf $out/afl-*/default/.cur_input
step results_written tar -cf /dev/vdb -C $out .
sync
step rmmod_exporter rmmod dmabuf_exporter_rs
steps_report guest_steps
