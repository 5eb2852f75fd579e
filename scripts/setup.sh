#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# setup.sh [PACKAGE...]: installs what the build and the QEMU runs need, and
# the Debian PACKAGEs a lane needs besides (make fuzz: afl++). Idempotent: a
# second run checks and returns at once.
# setup.sh --rdma-core: only what building the patched rdma-core needs
# (scripts/rdma-core.sh on a real machine: no QEMU, Rust, bindgen or
# kernel source).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RDMA_CORE_DEBS=(gcc make libc6-dev git curl cmake ninja-build cython3 python3-dev
		libnl-3-dev libnl-route-3-dev pkg-config)
rdma_core_only=
if [ "${1:-}" = --rdma-core ]; then
	rdma_core_only=1
	shift
fi
DEBS=(clang lld llvm libclang-dev bc flex bison libelf-dev
      libssl-dev cpio kmod qemu-system-x86 rdma-core ibverbs-utils
      ibverbs-providers libibverbs-dev iproute2 busybox-static python3 rsync
      git make gcc libc6-dev
      curl cmake ninja-build cython3 python3-dev libnl-3-dev libnl-route-3-dev
      pkg-config python3-matplotlib python3-sphinx)
# The kernel's compilers: 7.3 needs LLVM >= 17 (its source comes from
# trixie-backports: lib.sh, fetch_kernel_deb).
DEBS+=(clang-19 lld-19 llvm-19 libclang-19-dev xz-utils)
DEBS+=("$@")
[ -z "$rdma_core_only" ] || DEBS=("${RDMA_CORE_DEBS[@]}")

missing=()
for p in "${DEBS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	command -v apt-get >/dev/null || die "apt-get not found: a Debian-based system is required (missing: ${missing[*]})"
	say "installing Debian packages: ${missing[*]}"
	$SUDO apt-get update -qq || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null ||
		die "apt-get install failed for: ${missing[*]}"
fi

[ -z "$rdma_core_only" ] || exit 0

command -v rustup >/dev/null || die "rustup not found: install a Rust toolchain with rustup"
# install_rustc VERSION COMPONENTS WHAT: rustup's toolchain VERSION with
# the components (comma-separated) unless all of them are there already.
install_rustc() {
	local have want
	want=$(tr , '\n' <<<"$2" | wc -l)
	have=$(rustup component list --toolchain "$1" --installed 2>/dev/null |
		grep -cE "^(${2//,/|})(-|\$)" || true)
	[ "$have" = "$want" ] && return
	say "installing Rust $1 with $2 ($3)"
	rustup toolchain install --profile minimal -c "$2" "$1" >/dev/null ||
		die "rustup toolchain install $1 failed"
}
# The pinned toolchain (rust-toolchain.toml; RUSTUP_TOOLCHAIN, lib.sh).
install_rustc "$RUST_TOOLCHAIN" rust-src,rustfmt,clippy "the project's"
# 7.3's minimum rustc, for the GCC-configured tree (UMEM_KERNEL=gcc, lib.sh).
install_rustc "$GCC_RUSTC" rust-src,rustfmt "7.3's minimum, for the GCC-built tree"
# The rustc whose LLVM is clang-19's, for the fast kernel (UMEM_KERNEL=fast,
# lib.sh): with it Kbuild inlines the C helpers into Rust.
install_rustc "$INLINE_RUSTC" rust-src,rustfmt "LLVM 19, as clang-19: for the fast kernel"
if ! bindgen --version 2>/dev/null | grep -q " $BINDGEN_VERSION\$"; then
	say "installing bindgen-cli $BINDGEN_VERSION (about 2 minutes)"
	RUSTUP_TOOLCHAIN=$RUST_TOOLCHAIN cargo install --locked --quiet bindgen-cli --version "$BINDGEN_VERSION" ||
		die "cargo install bindgen-cli $BINDGEN_VERSION failed"
fi
fetch_kernel_deb
[ -f "$KTARBALL" ] || die "$KTARBALL missing after installing $KPKG"
