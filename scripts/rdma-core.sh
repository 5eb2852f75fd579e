#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core.sh [build|checkout|export]: the patched rdma-core (libibverbs,
# the rxe provider, pyverbs and its tests) for the guest.
#
#   build     (default) builds into $UMEM_CACHE/rdma-core and installs into
#             its stage/ folder, or does nothing when the cached build's key
#             (tarball hash + patches/rdma-core + this recipe) is unchanged
#   checkout  resets the cached source tree to pristine + the series as
#             commits, for patch work (commit there, then "export")
#   export    writes the commits on top of pristine back to patches/rdma-core
#
# The source is rdma-core v59.0 as carried by PyPI's pyverbs 59.0 sdist (no
# Debian source package can be downloaded here). "pip download" cannot fetch
# it: pip prepares the sdist's metadata, which builds cmake from source, so
# the file is taken from the package index directly and checked against its
# pinned sha256. Like the kernel tree, the source is a git repository whose
# first commit is the pristine tarball, so a changed patch only rebuilds the
# files it touches.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RC_NAME=pyverbs-59.0.tar.gz
RC_SHA256=b30d56bb620b3d3b4301876f9a04c964be1c76cc6553a451e1465f1c6ac9f20e
RC_INDEX=${PIP_INDEX_URL:-https://pypi.org/simple}
RCSRC=$RCDIR/src
RCBUILD=$RCDIR/build
PATCHES=$ROOT/patches/rdma-core

fetch() {
	local tarball=$RCDIR/dl/$RC_NAME url
	if [ -f "$tarball" ] && echo "$RC_SHA256  $tarball" | sha256sum -c --quiet 2>/dev/null; then
		echo "$tarball"
		return
	fi
	mkdir -p "$RCDIR/dl"
	say "downloading $RC_NAME from $RC_INDEX/pyverbs/"
	url=$(curl -fsSL "$RC_INDEX/pyverbs/" | grep -o "href=\"[^\"]*/$RC_NAME[#\"]" |
		head -n 1 | sed 's/^href="//; s/[#"]$//') || true
	[ -n "$url" ] || die "$RC_NAME not listed at $RC_INDEX/pyverbs/"
	case "$url" in
	http*) ;;
	*) url=$RC_INDEX/pyverbs/$url ;;
	esac
	curl -fsSL -o "$tarball.tmp" "$url" || die "downloading $url failed"
	echo "$RC_SHA256  $tarball.tmp" | sha256sum -c --quiet ||
		die "$RC_NAME: sha256 mismatch (expected $RC_SHA256)"
	mv "$tarball.tmp" "$tarball"
	echo "$tarball"
}

prepare_source() {
	local tarball
	tarball=$(fetch)
	if [ -f "$RCSRC/.umem-pristine" ] && [ "$(cat "$RCSRC/.umem-pristine")" = "$RC_SHA256" ]; then
		return
	fi
	say "unpacking rdma-core from $RC_NAME"
	rm -rf "$RCSRC" "$RCBUILD" "$RCDIR/unpack.tmp"
	mkdir -p "$RCDIR/unpack.tmp"
	tar -C "$RCDIR/unpack.tmp" -xzf "$tarball"
	mv "$RCDIR/unpack.tmp/pyverbs-59.0/rdma-core" "$RCSRC"
	rm -rf "$RCDIR/unpack.tmp"
	git_record_pristine "$RCSRC" "pristine rdma-core v59.0 ($RC_NAME)"
	echo "$RC_SHA256" >"$RCSRC/.umem-pristine"
}

apply_patches() {
	git_apply_series "$RCSRC" "$PATCHES"
}

build() {
	local key
	key=$(rdma_core_key)
	if [ -f "$RCDIR/.umem-key" ] && [ "$(cat "$RCDIR/.umem-key")" = "$key" ] &&
	   [ -f "$RCSTAGE/usr/lib/x86_64-linux-gnu/libibverbs.so.1" ]; then
		say "rdma-core v59.0 cached ($key) in $RCDIR"
		return
	fi
	prepare_source
	say "applying patches/rdma-core"
	apply_patches
	rm -f "$RCDIR/.umem-key"
	mkdir -p "$RCBUILD"
	# Debian's python3 (the guest runs it), not a pyenv one on PATH.
	if [ ! -f "$RCBUILD/build.ninja" ]; then
		(cd "$RCBUILD" && cmake -GNinja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
			-DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc \
			-DCMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu \
			-DNO_MAN_PAGES=1 -DENABLE_STATIC=0 -DNO_PYVERBS=0 \
			-DPYTHON_EXECUTABLE=/usr/bin/python3 "$RCSRC") \
			>"$LOGDIR/rdma-core-config.log" 2>&1 ||
			{ tail -n 30 "$LOGDIR/rdma-core-config.log" >&2; die "rdma-core cmake failed"; }
	fi
	say "building rdma-core v59.0 (about 2 minutes the first time; log: $LOGDIR/rdma-core-build.log)"
	PROGRESS_COUNT_FILE=$RCDIR/objcount \
		run_with_progress "rdma-core build" "$LOGDIR/rdma-core-build.log" "$RCBUILD" \
		ninja -C "$RCBUILD"
	find "$RCBUILD" -name '*.o' | wc -l >"$RCDIR/objcount" || true
	rm -rf "$RCSTAGE"
	DESTDIR=$RCSTAGE ninja -C "$RCBUILD" install >"$LOGDIR/rdma-core-install.log" 2>&1 ||
		{ tail -n 30 "$LOGDIR/rdma-core-install.log" >&2; die "rdma-core install failed"; }
	echo "$key" >"$RCDIR/.umem-key"
}

mkdir -p "$LOGDIR"
case "${1:-build}" in
build)
	# What rdma-core's build needs, nothing of the kernel's or QEMU's: the
	# same command builds it on a real machine.
	"$ROOT/scripts/setup.sh" --rdma-core
	build
	;;
checkout)
	prepare_source
	apply_patches
	echo "$RCSRC: pristine + $(ls "$PATCHES"/*.patch 2>/dev/null | wc -l) patches as commits"
	;;
export)
	rm -f "$PATCHES"/*.patch
	git -C "$RCSRC" format-patch -q --zero-commit --no-signature --no-numbered \
		-o "$PATCHES" pristine..HEAD
	# No author, as the kernel series (lib.sh, strip_author).
	strip_author "$PATCHES"/*.patch
	ls "$PATCHES"
	;;
*)
	die "usage: rdma-core.sh [build|checkout|export]"
	;;
esac
