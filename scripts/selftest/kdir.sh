#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make module KDIR=: a kernel tree the modules cannot be built against is
# refused with what to do, before any compiler runs: one built by a rustc
# rustup does not have, by a clang that is not installed, or without Rust.
# (A tree built with the pinned toolchain, the cached test kernel, is the
# doctest of install.rst's module block.)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
kdir=$(mktemp -d)
trap 'rm -rf "$kdir"' EXIT
mkdir -p "$kdir/include/config"
touch "$kdir/Module.symvers"
bad=0
refused() {	# refused WANT AUTO.CONF-LINES...
	local want=$1 out
	shift
	printf '%s\n' "$@" >"$kdir/include/config/auto.conf"
	if out=$(KDIR=$kdir UMEM_KUNIT=n "$ROOT/scripts/module.sh" 2>&1); then
		echo "    FAIL make module KDIR= built against a tree it should refuse ($want)" >&2
		bad=1
	elif ! grep -qF -- "$want" <<<"$out"; then
		echo "    FAIL make module KDIR= refused, but without \"$want\": $out" >&2
		bad=1
	else
		echo "    ok   refused: \"$want\""
	fi
}
refused "was built with rustc 1.80.0, and rustup has no such toolchain" CONFIG_RUST=y \
	'CONFIG_RUSTC_VERSION_TEXT="rustc 1.80.0 (051478957 0)"' CONFIG_CLANG_VERSION=190107
refused "was built with clang 99, which is not installed" CONFIG_RUST=y \
	"CONFIG_RUSTC_VERSION_TEXT=rustc $RUST_TOOLCHAIN (0 0)" CONFIG_CLANG_VERSION=990000
refused "was built without CONFIG_RUST" "CONFIG_RUSTC_VERSION_TEXT=rustc $RUST_TOOLCHAIN"
exit $bad
