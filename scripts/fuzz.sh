#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# fuzz.sh [run|seeds]: make fuzz (Documentation/fuzzing.rst).
#
#   run    (make fuzz) boots the fuzz kernel (UMEM_KERNEL=fuzz: the test
#          kernel with KCOV on the code under test, kernel/fuzz.config) and
#          runs AFL++ in the guest against rxe_dmabuf_fuzz's afl mode,
#          FUZZ_SECS seconds (default 600) on each importer of
#          FUZZ_IMPORTERS (c+rust: the C one, then the Rust one), the
#          kernel's coverage as the feedback (scripts/guest/fuzz.sh). The inputs are
#          the committed corpus (samples/rxe_dmabuf/corpus) and what earlier
#          runs kept ($UMEM_CACHE/fuzz-queue, so a run resumes where the last
#          one stopped); every input kept is then replayed on both importers,
#          which must agree. Crashes (a kernel report, a failed check) and
#          hangs are written to build/fuzz/crashes, each a reproducer to add
#          to the corpus (make check replays it), the first FUZZ_TMIN (2) of
#          each phase also minimized by afl-tmin (NAME.min); the table of the functions
#          the inputs reach goes to build/fuzz/coverage.txt, the edges found
#          over time to build/fuzz/edges.txt and edges.png.
#          FUZZ_MUTANT=NAME fuzzes a module with one of scripts/mutants/
#          (Tree: project) applied, on its importer alone: the run passes
#          when AFL++ finds a crash, the way a bug the fuzzer finds is
#          carried from its crash to a corpus entry; what it keeps stays
#          out of $UMEM_CACHE/fuzz-queue.
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
	mutant=${FUZZ_MUTANT:-}
	phases=${FUZZ_IMPORTERS:-c+rust}
	if [ -n "$mutant" ]; then
		mpatch=$ROOT/scripts/mutants/$mutant.patch
		[ -f "$mpatch" ] || die "no mutant $mpatch"
		[ "$(mutant_field "$mutant" Tree)" = project ] ||
			die "FUZZ_MUTANT: $mutant patches the kernel; only Tree: project mutants are fuzzed"
		phases=${FUZZ_IMPORTERS:-$(mutant_field "$mutant" Importer)}
	fi
	case "$phases" in
	c | rust | c+rust | rust+c) ;;
	*) die "FUZZ_IMPORTERS: c, rust or c+rust, not $phases" ;;
	esac
	nphases=$(echo "$phases" | tr + '\n' | wc -l)
	tmin=${FUZZ_TMIN:-2}
	job=run,${FUZZ_SECS:-600},$phases,$tmin
	# The fuzzing phases, the minimizing (at most 15 minutes a crash), the
	# replays, the boot: the silence of a phase is its whole length (AFL++
	# prints nothing without its UI).
	export UMEM_STALL=$((${FUZZ_SECS:-600} + 900 * (tmin + 1)))
	export UMEM_TIMEOUT=$(((${FUZZ_SECS:-600} + 900 * tmin) * nphases + 3600))
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
rm -rf "$dir"
mkdir -p "$dir/result" "$store" "$LOGDIR"
# The production modules (no KUnit suites to fuzz or to list as unreached);
# with a mutant, those of a copy of the tree with it applied.
tree=$ROOT
if [ -n "${mutant:-}" ]; then
	tree=$dir/tree
	copy_sources "$tree"
	(cd "$tree" && patch -s -p1 <"$mpatch") || die "mutant $mutant does not apply"
	say "fuzzing mutant $mutant ($(mutant_field "$mutant" Mutant)) on the $phases importer"
fi
if ! UMEM_KUNIT=n UMEM_LOGDIR=$LOGDIR "$tree/scripts/module.sh"; then
	# A mutant the compiler only warns about is fuzzed all the same.
	[ -n "${mutant:-}" ] && [ -e "$tree/umem_dmabuf_rs.ko" ] || die "module build failed"
fi
# The inputs, a tar archive on the guest's first disk: corpus/ and kept/.
tar -cf "$dir/in.tar" -C "$corpus/.." corpus -C "$store/.." "$(basename "$store")" \
	--transform "s,^$(basename "$store"),kept,"
truncate -s 256M "$dir/out.img"
log=$LOGDIR/fuzz-serial.log
UMEM_AFL=1 UMEM_QEMU_ARGS="-drive file=$dir/in.tar,format=raw,if=virtio,readonly=on \
-drive file=$dir/out.img,format=raw,if=virtio" \
	"$tree/scripts/qemu.sh" fuzz "$log" "umem.fuzz=$job" kunit.enable=0 || true
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
	if [ "$kept" -gt 0 ] && [ -z "$mutant" ]; then
		cp "$dir/result/queue"/* "$store/"
	fi
	say "$kept inputs kept ($(find "$store" -type f | wc -l) in $store)"
	crashes=$(find "$dir/result/crashes" -type f ! -name '*.min' 2>/dev/null | wc -l)
	if [ "$crashes" -gt 0 ]; then
		mkdir -p "$dir/crashes"
		cp "$dir/result/crashes"/* "$dir/crashes/"
		grep -h '^# afl [a-z]*: crash ' "$log" | sed 's/^# //' >&2 || true
		say "$crashes crashing or hanging inputs in $dir/crashes (NAME.min: minimized):" \
			"add each to $corpus (as crash-NAME) once it is understood and fixed"
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
# A mutant's run is judged by whether the fuzzer found it; its boot fails.
if [ -n "${mutant:-}" ]; then
	# An input of the corpus that crashes found it before any fuzzing.
	before=$(sed -n 's/^# afl [a-z]*: inputs_crashing : //p' "$log" | awk '{ n += $1 } END { print n + 0 }')
	[ "$crashes" -gt 0 ] || [ "$before" -gt 0 ] ||
		die "mutant $mutant: no crash in ${FUZZ_SECS:-600} s of fuzzing"
	say "mutant $mutant: found: $crashes crashing inputs by fuzzing, $before of the inputs crash as they are"
	exit 0
fi
python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--require-ktap --require-kmemleak --log "$log"
