#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# module.sh [clean] [MAKE ARGS...]: builds the project's modules against the
# cached kernel (make -C $KOUT LLVM=$KLLVM M=$ROOT), or against $KDIR when set (a
# kernel tree the user built with patches/linux-7.3). Fails on any compiler
# or clippy warning, printing it. UMEM_KUNIT=y (the default) builds the
# modules with their KUnit suites, fixtures and mock exporter, as make check,
# make kunit, make bench and make demo load them; UMEM_KUNIT=n (make module)
# builds the production modules, which link no test code (see Kbuild).
# UMEM_GUEST_PROGRAMS=n builds the modules alone, not the guest programs
# (make check's copy of the tree for the gate boots, which run none); it is
# the default with KDIR=, whose rustc and clang (from the tree's
# configuration) the build then uses, or refuses to build without.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

user_kdir=${KDIR:-}
KDIR=${KDIR:-$KOUT}
[ -f "$KDIR/Module.symvers" ] || die "no built kernel in $KDIR: run 'make kernel' first (or give KDIR=<a built, patched kernel tree>)"

# kdir_toolchain: a kernel tree the user built (KDIR) decides the compilers:
# a Rust module links against that kernel's `kernel` crate, which only the
# rustc that compiled it can read, and Kbuild must use the same clang. The
# rustc is taken from the tree's configuration and used if rustup has it;
# a mismatch it cannot resolve is refused, saying what to install.
kdir_toolchain() {
	local conf=$KDIR/include/config/auto.conf want clang major
	[ -f "$conf" ] || die "$KDIR has no include/config/auto.conf: not a configured, built kernel tree"
	grep -q '^CONFIG_RUST=y' "$conf" ||
		die "the kernel in $KDIR was built without CONFIG_RUST: see Documentation/install.rst, 2"
	grep -q '^CONFIG_PCI_P2PDMA=y' "$conf" ||
		echo "the kernel in $KDIR has no CONFIG_PCI_P2PDMA: the importer is built alone, without the exporter sample"
	want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\{0,1\}rustc \([0-9.]*\).*/\1/p' "$conf")
	[ -n "$want" ] || die "$conf does not say which rustc built the kernel"
	if [ "$want" != "$RUSTUP_TOOLCHAIN" ]; then
		if rustup toolchain list 2>/dev/null | grep -q "^$want-"; then
			echo "the kernel in $KDIR was built with rustc $want: the modules are built with it too"
			export RUSTUP_TOOLCHAIN=$want
		else
			die "the kernel in $KDIR was built with rustc $want, and rustup has no such toolchain (this project pins $RUST_TOOLCHAIN): rustup toolchain install $want --component rust-src, then run this again"
		fi
	fi
	clang=$(sed -n 's/^CONFIG_CLANG_VERSION=\([0-9]*\)/\1/p' "$conf")
	if [ "${clang:-0}" = 0 ]; then
		KLLVM=	# a GCC-built kernel: Kbuild's defaults
		return
	fi
	major=$((clang / 10000))
	if command -v "clang-$major" >/dev/null; then
		KLLVM=-$major
	elif clang --version 2>/dev/null | grep -q "version $major\."; then
		KLLVM=1
	else
		die "the kernel in $KDIR was built with clang $major, which is not installed: apt-get install clang-$major lld-$major llvm-$major"
	fi
}
[ -z "$user_kdir" ] || kdir_toolchain
mkdir -p "$LOGDIR" "$ROOT/build"
stamp=$ROOT/build/module-kernel
if [ "${1:-}" = clean ]; then
	make -s -C "$KDIR" LLVM=$KLLVM M="$ROOT" clean
	rm -f "$stamp"
	exit 0
fi
UMEM_KUNIT=${UMEM_KUNIT:-y}
case "$UMEM_KUNIT" in
y | n) ;;
*) die "UMEM_KUNIT must be y or n, not '$UMEM_KUNIT'" ;;
esac
# Objects built for the other kernel (test or fast), or with the other
# UMEM_KUNIT, must not be linked into modules for this one.
this="$KDIR $(cat "$KDIR/.umem-key" 2>/dev/null || true) kunit=$UMEM_KUNIT"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$this" ]; then
	make -s -C "$KDIR" LLVM=$KLLVM M="$ROOT" clean
fi
echo "$this" >"$stamp"
# guest_programs: the guest's userspace test programs, in build/guest-bin.
guest_programs() {
	local tmpbin=$ROOT/build/guest-bin.new src out link manifest
	mkdir -p "$ROOT/build/guest-bin" "$tmpbin"
	for src in "$ROOT"/samples/*/user/*.c "$ROOT"/samples/rdma_dmabuf_pingpong/*.c \
		"$ROOT"/samples/rdma_dmabuf_smoke/*.c; do
		[ -e "$src" ] || continue
		out=$ROOT/build/guest-bin/$(basename "$src" .c)
		# Static, except RDMA programs: libibverbs loads its providers itself.
		link=(-static)
		grep -q 'infiniband/verbs.h' "$src" && link=(-libverbs)
		# Replaced atomically (built beside, then renamed): make check packs
		# initramfs images from build/guest-bin meanwhile.
		gcc -O2 -Wall -Wextra -Werror -I"$ROOT/include/uapi" -I"$ROOT/samples/include" \
			-o "$tmpbin/$(basename "$out")" "$src" "${link[@]}" ||
			die "building $(basename "$src") failed"
		mv "$tmpbin/$(basename "$out")" "$out"
	done

	# The Rust uverbs client (cargo; its build script runs bindgen on libibverbs).
	for manifest in "$ROOT"/samples/*/Cargo.toml; do
		[ -e "$manifest" ] || continue
		cargo build --quiet --release --locked --manifest-path "$manifest" \
			--target-dir "$CARGO_TARGET" >"$LOGDIR/cargo-build.log" 2>&1 || {
			tail -n 40 "$LOGDIR/cargo-build.log" >&2
			die "cargo build of $(dirname "$manifest") failed"
		}
	done
	if [ -x "$CARGO_TARGET/release/uverbs-dmabuf" ]; then
		cp "$CARGO_TARGET/release/uverbs-dmabuf" "$tmpbin/uverbs-dmabuf"
		mv "$tmpbin/uverbs-dmabuf" "$ROOT/build/guest-bin/uverbs-dmabuf"
	fi
}
# A user's kernel tree (KDIR) gets the modules alone: the guest programs
# are for the QEMU guests (and need cargo, bindgen and libibverbs-dev).
[ -z "$user_kdir" ] || UMEM_GUEST_PROGRAMS=${UMEM_GUEST_PROGRAMS:-n}
if [ "${UMEM_GUEST_PROGRAMS:-y}" != n ]; then
	guest_programs
fi

log=$LOGDIR/module-build.log
if ! make -C "$KDIR" LLVM=$KLLVM M="$ROOT" UMEM_KUNIT="$UMEM_KUNIT" -j"$(nproc)" "$@" modules \
	>"$log" 2>&1; then
	grep -v '^make\|^  [A-Z]' "$log" | tail -n 60 >&2
	die "module build failed (full log: $log)"
fi
if grep -qiE '(^|[^a-z_])warning[:\[]' "$log"; then
	grep -iE -A12 '(^|[^a-z_])warning[:\[]' "$log" | head -n 80 >&2
	die "module build has warnings (full log: $log)"
fi
