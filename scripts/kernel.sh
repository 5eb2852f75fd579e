#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Builds the patched kernel $UMEM_KERNEL (test, fast or drivers, see lib.sh)
# into $UMEM_CACHE, or does nothing when the cached build's key (source
# version + patches + config fragments) is unchanged. --configure-only
# writes the configuration alone (scripts/kpatch.sh build-each), --source
# only unpacks the source and applies the series (make check, before it
# starts the builds that share the tree).
#
# The source tree is a git repository whose first commit (tag "pristine") is the
# unpacked Debian source; the series is applied with "git am" on top of it, so
# a changed patch only touches the files it changes and the rebuild is
# incremental.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

prepare_source() {
	local ver
	ver=$(kernel_pkg_version)
	if [ -f "$KSRC/.umem-pristine" ] && [ "$(cat "$KSRC/.umem-pristine")" = "$ver" ]; then
		return
	fi
	fetch_kernel_deb
	say "unpacking $KPKG $ver into $KSRC"
	rm -rf "$KSRC" "$UMEM_CACHE/build$KSUFFIX" "$UMEM_CACHE/build-fast$KSUFFIX"
	mkdir -p "$UMEM_CACHE"
	local tmp=$UMEM_CACHE/unpack.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	tar -C "$tmp" -xf "$KTARBALL"
	mv "$tmp/$KPKG" "$KSRC"
	rmdir "$tmp"
	say "recording the pristine source as a git commit (about a minute)"
	# (The Debian tarball's top-level .gitignore ignores everything.)
	git_record_pristine "$KSRC" "pristine $KPKG $ver"
	echo "$ver" >"$KSRC/.umem-pristine"
}

# Re-applying an unchanged series would still give the patched files new
# timestamps, and the other kernel would rebuild what depends on them. A
# tree whose series is unchanged but whose content is not what the series
# makes (commits or edits of patch development, a rebase under way) is
# neither built nor reset: that work is not in patches/ yet.
apply_patches() {
	local key
	key=$(series_key)
	if [ "${1:-}" != --force ] && [ "$(cut -d' ' -f1 "$KSRC/.umem-series" 2>/dev/null)" = "$key" ]; then
		# A record of the key alone (older scripts) gets its tree, if clean.
		[ "$(wc -w <"$KSRC/.umem-series")" != 1 ] || ! git_tree "$KSRC" diff --quiet HEAD ||
			series_state >"$KSRC/.umem-series"
		source_matches_series ||
			die "the kernel source $KSRC is not what patches/linux-$UMEM_KVER makes" \
				"(commits or edits not exported, or a rebase under way): export them" \
				"(scripts/kpatch.sh export) or discard them (scripts/kpatch.sh checkout)"
		echo "    series unchanged ($key)" >&2
		return
	fi
	rm -f "$KSRC/.umem-series"
	git_apply_series "$KSRC" "$KPATCHES"
	series_state >"$KSRC/.umem-series"
}

configure() {
	local cfg=$UMEM_CACHE/config-$UMEM_KERNEL$KSUFFIX frag
	mkdir -p "$cfg" "$KOUT"
	make -s -C "$KSRC" O="$cfg" LLVM=$KLLVM tinyconfig >"$LOGDIR/config-$UMEM_KERNEL.log" 2>&1 ||
		{ tail -20 "$LOGDIR/config-$UMEM_KERNEL.log"; die "make tinyconfig failed"; }
	(cd "$KSRC" && scripts/kconfig/merge_config.sh -m -O "$cfg" "$cfg/.config" \
		kernel/configs/kvm_guest.config "${KFRAGMENTS[@]}") \
		>>"$LOGDIR/config-$UMEM_KERNEL.log" 2>&1 || die "merge_config.sh failed (see $LOGDIR/config-$UMEM_KERNEL.log)"
	make -s -C "$KSRC" O="$cfg" LLVM=$KLLVM olddefconfig >>"$LOGDIR/config-$UMEM_KERNEL.log" 2>&1 ||
		{ tail -20 "$LOGDIR/config-$UMEM_KERNEL.log"; die "make olddefconfig failed"; }
	for frag in "${KCHECKED[@]}"; do
		"$ROOT/scripts/check-config.sh" "$frag" "$cfg/.config"
	done
	# Only replace the build's .config when it changed, so make keeps its work.
	if ! cmp -s "$cfg/.config" "$KOUT/.config"; then
		cp "$cfg/.config" "$KOUT/.config"
	fi
}

# A variant of another kernel (KSEED, see lib.sh) starts from a copy of that
# kernel's finished build: make then recompiles only what the variant's
# options change, instead of the whole tree.
seed_build() {
	[ -n "$KSEED" ] && [ ! -e "$KOUT/$KPRODUCT" ] && [ -e "$KSEED/$KPRODUCT" ] || return 0
	say "starting the $UMEM_KERNEL kernel from a copy of $KSEED"
	rm -rf "$KOUT.tmp"
	cp -a "$KSEED" "$KOUT.tmp"
	rm -f "$KOUT.tmp/.umem-key"
	# configure() wrote the variant's .config already: keep it.
	cp "$KOUT/.config" "$KOUT.tmp/.config"
	rm -rf "$KOUT"
	mv "$KOUT.tmp" "$KOUT"
}

main() {
	mkdir -p "$LOGDIR"
	if [ "${1:-}" = "--prepare-only" ]; then
		# For patch development: source tree with the series applied.
		prepare_source
		apply_patches --force
		return
	fi
	case "${1:-}" in
	--source | --configure-only)
		prepare_source
		apply_patches
		[ "$1" = --source ] || configure
		return
		;;
	esac
	"$ROOT/scripts/setup.sh"
	local key
	key=$(kernel_key)
	if [ -f "$KOUT/.umem-key" ] && [ "$(cat "$KOUT/.umem-key")" = "$key" ] &&
	   [ -f "$KOUT/$KPRODUCT" ]; then
		say "$UMEM_KERNEL kernel $(kernel_pkg_version) cached ($key) in $KOUT"
		return
	fi
	prepare_source
	say "applying patches/linux-$UMEM_KVER"
	apply_patches
	say "configuring the $UMEM_KERNEL kernel (tinyconfig + kvm_guest.config + ${KFRAGMENTS[*]##*/})"
	configure
	rm -f "$KOUT/.umem-key"
	seed_build
	local what="the $UMEM_KERNEL kernel $(kernel_pkg_version) (a first build takes 10 to 25 minutes on 2 cores"
	local stage="$UMEM_KERNEL kernel build"
	if [ ${#KTARGETS[@]} != 0 ]; then
		what="${KTARGETS[*]} with the $UMEM_KERNEL configuration (a first build takes about 5 minutes"
		stage="$UMEM_KERNEL build"
	fi
	say "building $what; full log: $LOGDIR/kernel-build-$UMEM_KERNEL.log)"
	PROGRESS_COUNT_FILE=$UMEM_CACHE/objcount-$UMEM_KERNEL$KSUFFIX \
		run_with_progress "$stage" "$LOGDIR/kernel-build-$UMEM_KERNEL.log" "$KOUT" \
		make -C "$KSRC" O="$KOUT" LLVM=$KLLVM -j"$(nproc)" "${KMAKEVARS[@]}" "${KTARGETS[@]}"
	find "$KOUT" -name '*.o' | wc -l >"$UMEM_CACHE/objcount-$UMEM_KERNEL$KSUFFIX" || true
	# A build the source changed under is of no series: not cached.
	source_matches_series ||
		die "the kernel source $KSRC changed during the $UMEM_KERNEL kernel's build" \
			"(a rebase or an edit there?): its build is not cached; run this again"
	echo "$key" >"$KOUT/.umem-key"
}

main "$@"
