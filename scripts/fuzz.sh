#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# fuzz.sh [run|seeds]: make fuzz (Documentation/testing.rst, "Fuzzing").
#
#   run    (make fuzz) boots the fuzz kernel (UMEM_KERNEL=fuzz: the test
#          kernel with KCOV on the code under test, kernel/fuzz.config) and
#          runs AFL++ in the guest against rxe_dmabuf_fuzz's afl mode,
#          FUZZ_SECS seconds (default 600) on each importer, the kernel's
#          coverage as the feedback (scripts/guest/fuzz.sh). The inputs are
#          the committed corpus (samples/rxe_dmabuf/corpus) and what earlier
#          runs kept ($UMEM_CACHE/fuzz-queue, so a run resumes where the last
#          one stopped); every input kept is then replayed on both importers,
#          which must agree. Crashes (a kernel report, a failed check) and
#          hangs are written to build/fuzz/crashes, each a reproducer to add
#          to the corpus (make check replays it); the table of the functions
#          the inputs reach goes to build/fuzz/coverage.txt, the edges found
#          over time to build/fuzz/edges.txt and edges.png.
#   seeds  writes the seed corpus: FUZZ_SEEDS (8) seeded runs of the fuzz
#          mode, FUZZ_SEED_OPS (200) operations each, on the test kernel,
#          recorded as inputs (samples/rxe_dmabuf/corpus/seed-N).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

what=${1:-run}
corpus=$ROOT/samples/rxe_dmabuf/corpus
dir=$ROOT/build/fuzz
store=$UMEM_CACHE/fuzz-queue
case "$what" in
run)
	export UMEM_KERNEL=fuzz
	job=run,${FUZZ_SECS:-600}
	# Two fuzzing phases, the replays, the boot: the silence of a phase is
	# its whole length (AFL++ prints nothing without its UI).
	export UMEM_STALL=$((${FUZZ_SECS:-600} + 900))
	export UMEM_TIMEOUT=$((${FUZZ_SECS:-600} * 2 + 3600))
	;;
seeds)
	export UMEM_KERNEL=test
	job=seeds,${FUZZ_SEEDS:-8},${FUZZ_SEED_OPS:-200}
	;;
*)
	die "usage: fuzz.sh [run|seeds]"
	;;
esac
"$ROOT/scripts/setup.sh" afl++
# setup.sh has run: a second call of kernel.sh's would find nothing to do.
"$ROOT/scripts/kernel.sh"
# The production modules (no KUnit suites to fuzz or to list as unreached).
UMEM_KUNIT=n "$ROOT/scripts/module.sh"

rm -rf "$dir"
mkdir -p "$dir/result" "$store" "$LOGDIR"
# The inputs, a tar archive on the guest's first disk: corpus/ and kept/.
tar -cf "$dir/in.tar" -C "$corpus/.." corpus -C "$store/.." "$(basename "$store")" \
	--transform "s,^$(basename "$store"),kept,"
truncate -s 256M "$dir/out.img"
log=$LOGDIR/fuzz-serial.log
UMEM_AFL=1 UMEM_QEMU_ARGS="-drive file=$dir/in.tar,format=raw,if=virtio,readonly=on \
-drive file=$dir/out.img,format=raw,if=virtio" \
	"$ROOT/scripts/qemu.sh" fuzz "$log" "umem.fuzz=$job" kunit.enable=0 || true
tar -xf "$dir/out.img" -C "$dir/result" 2>/dev/null || echo "the guest wrote no results" >&2

case "$what" in
seeds)
	n=$(find "$dir/result" -maxdepth 1 -name 'seed-*' | wc -l)
	if [ "$n" -gt 0 ]; then
		rm -f "$corpus"/seed-*
		cp "$dir/result"/seed-* "$corpus/"
		say "$n seed inputs written to $corpus"
	fi
	;;
run)
	kept=$(find "$dir/result/queue" -type f 2>/dev/null | wc -l)
	if [ "$kept" -gt 0 ]; then
		cp "$dir/result/queue"/* "$store/"
	fi
	say "$kept inputs kept ($(find "$store" -type f | wc -l) in $store)"
	crashes=$(find "$dir/result/crashes" -type f 2>/dev/null | wc -l)
	if [ "$crashes" -gt 0 ]; then
		mkdir -p "$dir/crashes"
		cp "$dir/result/crashes"/* "$dir/crashes/"
		say "$crashes crashing or hanging inputs in $dir/crashes: add each to $corpus" \
			"(as crash-NAME) once it is understood and fixed"
	fi
	# Edges over time, each phase (Debian's python3, which has matplotlib).
	if /usr/bin/python3 "$ROOT/scripts/fuzz_edges.py" "$dir/result" "$dir/edges.png" \
		>"$dir/edges.txt"; then
		say "edges over time: $dir/edges.txt, $dir/edges.png"
		cat "$dir/edges.txt"
	fi
	if [ -f "$dir/result/kallsyms.txt" ]; then
		python3 "$ROOT/scripts/fuzz_cover.py" --kallsyms "$dir/result/kallsyms.txt" \
			--pcs c="$dir/result/pcs-c.txt" --pcs rust="$dir/result/pcs-rust.txt" \
			--kout "$KOUT" --root "$ROOT" --json "$dir/reached.json" >"$dir/coverage.txt"
		say "coverage: $dir/coverage.txt"
		tail -n 3 "$dir/coverage.txt"
	fi
	;;
esac
python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--require-ktap --require-kmemleak --log "$log"
