#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make mutants`: the suites' detection power, measured. Each mutant in
# scripts/mutants/ is one plausible mistake, a patch with a header saying
# what it breaks (scripts/mutants/README):
#   Tree: project   a patch of this tree (the Rust importer, its crate):
#                   the module is rebuilt in a copy of the tree;
#   Tree: kernel    a patch of the kernel source (the C importer,
#                   kernel::dma_buf): the test kernel is rebuilt, into a
#                   build directory of its own (a copy of the cached one,
#                   so that the cache is never touched), and the source is
#                   restored at once.
# A mutant that does not build is killed by the build. The others boot the
# test kernel with the mutants job (scripts/guest/mutants.sh, one vCPU,
# two boots at a time); a first boot without a mutant is the baseline,
# which must pass everything. scripts/mutants.py compares each boot with
# it and prints the kill matrix: mutant x suite.
# Arguments: mutant names (default: all). MUTANTS_UPDATE=1 writes the
# matrix into Documentation/data/kill-matrix.rst.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

dir=$ROOT/build/mutants
logs=$dir/logs
mkdir -p "$logs"
"$ROOT/scripts/setup.sh" || die "set-up failed"
"$ROOT/scripts/kernel.sh" || die "kernel build failed"
UMEM_KUNIT=y "$ROOT/scripts/module.sh" || die "module build failed"

names=()
if [ $# -gt 0 ]; then
	names=("$@")
else
	for p in "$ROOT"/scripts/mutants/*.patch; do
		names+=("$(basename "$p" .patch)")
	done
fi


# Of the kernel's own suites at boot, kernel::dma_buf's (rust_dma_buf,
# rust_dma_resv), which see the kernel-crate mutants; the guest job sets
# the filter again for the modules, whose suites run at load.
cmdline=('kunit.filter_glob=rust_dma_*' umem.mutant_fuzz_ops=4000
	 umem.mutant_storm_secs=5)
jobs_running=0
boot() {	# boot NAME TREE [BZIMAGE] [CMDLINE...]: in the background
	local name=$1 tree=$2 image=$3
	shift 3
	while [ "$jobs_running" -ge "${MUTANTS_PARALLEL:-2}" ]; do
		wait -n
		jobs_running=$((jobs_running - 1))
	done
	say "mutant $name: booting (log: $logs/$name.log)"
	(UMEM_SMP=1 UMEM_BZIMAGE=$image UMEM_TIMEOUT=3600 UMEM_STALL=600 \
		UMEM_LOGDIR=$logs "$tree/scripts/qemu.sh" mutants "$logs/$name.log" \
		"${cmdline[@]}" "$@" >"$logs/$name.qemu.txt" 2>&1 || true) &
	jobs_running=$((jobs_running + 1))
}

# copy_tree NAME: a copy of this tree's sources for NAME's module.
copy_tree() {
	copy_sources "$dir/tree-$1"
}

# build_module NAME [KDIR]: the modules of NAME's tree, against KDIR (the
# cached test kernel by default); a mutant the compiler only warns about
# is built all the same (the module is there; make check's build would
# refuse the warning). Fails, with the status "build", if it does not
# compile.
build_module() {
	local tree=$dir/tree-$1
	if ! KDIR=${2:-} UMEM_KUNIT=y UMEM_GUEST_PROGRAMS=y UMEM_LOGDIR=$tree/build/logs \
		"$tree/scripts/module.sh" \
		>>"$logs/$1.build.txt" 2>&1 &&
		! grep -q 'module build has warnings' "$logs/$1.build.txt"; then
		echo "build" >"$logs/$1.status"
		say "mutant $1: does not build (killed by the compiler)"
		return 1
	fi
}

# Project mutants: a copy of the tree, patched, the module rebuilt there.
project_mutant() {	# project_mutant NAME
	local name=$1 tree=$dir/tree-$1
	copy_tree "$name"
	if ! (cd "$tree" && patch -s -p1 <"$ROOT/scripts/mutants/$name.patch") \
		>"$logs/$name.apply.txt" 2>&1; then
		echo "stale" >"$logs/$name.status"
		say "mutant $name: does not apply (scripts/mutants/$name.patch)"
		return
	fi
	build_module "$name" || return
	echo "booted" >"$logs/$name.status"
	boot "$name" "$tree" "" umem.mutant_importer="$(mutant_field "$name" Importer)"
}

# Kernel mutants: the source patched, the kernel rebuilt in its own
# directory, the source restored before anything else happens.
kout=$UMEM_CACHE/build-mutant$KSUFFIX
applied=
restore_source() {
	[ -z "$applied" ] || git -C "$KSRC" apply -R "$applied" || true
	applied=
}
# Also when interrupted: the cached kernels' keys do not cover the source's
# contents, so a mutant left applied would go into their next rebuild.
trap restore_source EXIT
trap 'restore_source; exit 130' INT TERM HUP
kernel_mutant() {	# kernel_mutant NAME
	local name=$1 patch=$ROOT/scripts/mutants/$1.patch
	if [ "$(cat "$kout/.umem-key" 2>/dev/null)" != "$(cat "$KOUT/.umem-key")" ]; then
		say "copying the test kernel's build to $kout (once)"
		rm -rf "$kout"
		cp -a "$KOUT" "$kout" || die "copying $KOUT failed"
	fi
	if ! git -C "$KSRC" apply "$patch" 2>"$logs/$name.apply.txt"; then
		echo "stale" >"$logs/$name.status"
		say "mutant $name: does not apply to $KSRC"
		return
	fi
	applied=$patch
	say "mutant $name: rebuilding the test kernel in $kout"
	if ! make -C "$KSRC" O="$kout" LLVM=$KLLVM -j"$(nproc)" bzImage \
		>"$logs/$name.build.txt" 2>&1; then
		restore_source
		echo "build" >"$logs/$name.status"
		say "mutant $name: does not build (killed by the compiler)"
		return
	fi
	restore_source
	cp "$kout/arch/x86/boot/bzImage" "$dir/bzImage-$name"
	# The modules against this kernel: they inline its crate's functions.
	copy_tree "$name"
	build_module "$name" "$kout" || return
	echo "booted" >"$logs/$name.status"
	boot "$name" "$dir/tree-$name" "$dir/bzImage-$name" \
		umem.mutant_importer="$(mutant_field "$name" Importer)"
}

say "baseline: no mutant, both importers"
boot baseline-rust "$ROOT" "" umem.mutant_importer=rust
boot baseline-c "$ROOT" "" umem.mutant_importer=c
for name in "${names[@]}"; do
	[ -e "$ROOT/scripts/mutants/$name.patch" ] || die "no mutant $name"
	rm -f "$logs/$name".*
	case "$(mutant_field "$name" Tree)" in
	project) project_mutant "$name" ;;
	kernel) kernel_mutant "$name" ;;
	*) die "$name: Tree: must be project or kernel" ;;
	esac
done
wait
# The trees and kernel images take about 80 MiB a mutant; the logs stay.
[ "${MUTANTS_KEEP:-0}" = 1 ] || rm -rf "$dir"/tree-* "$dir"/bzImage-*
update=()
[ "${MUTANTS_UPDATE:-0}" = 0 ] || update=(--update "$ROOT/Documentation/data/kill-matrix.rst")
python3 "$ROOT/scripts/mutants.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--mutants "$ROOT/scripts/mutants" --logs "$logs" --commit "$(record_commit)" \
	"${update[@]}" "${names[@]}"
