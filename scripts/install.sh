#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# install.sh install|uninstall: make module-install and make module-uninstall,
# for a real machine (Documentation/install.rst).
#
# install: puts the production umem_dmabuf_rs.ko that make module KDIR=...
# built into /lib/modules/KVER/updates/ (KVER: the release of the kernel
# tree KDIR, default the running kernel's build tree), signed with
# SIGN_KEY/SIGN_CERT when given (the kernel's scripts/sign-file, or
# SIGN_FILE), runs depmod, and with UMEM_AT_BOOT=1 has it loaded at boot
# (/etc/modules-load.d/umem_dmabuf_rs.conf). It refuses the test build
# (UMEM_KUNIT=y), a module built for another kernel, and an unsigned module
# for a kernel that only loads signed ones (module.sig_enforce, or lockdown
# under Secure Boot).
#
# uninstall: the rollback to the built-in C importer: unloads the module
# (refused by the kernel while an MR it made lives), removes what install
# put there and runs depmod.
#
# INSTALL_MOD_PATH installs into another root (as Kbuild's modules_install);
# UMEM_MODULE names another module file.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

action=${1:-}
case "$action" in
install | uninstall) ;;
*) die "usage: install.sh install|uninstall (make module-install, make module-uninstall)" ;;
esac
KDIR=${KDIR:-/lib/modules/$(uname -r)/build}
root=${INSTALL_MOD_PATH:-}
ko=${UMEM_MODULE:-$ROOT/umem_dmabuf_rs.ko}
release=$KDIR/include/config/kernel.release
[ -f "$release" ] || die "no kernel tree at $KDIR (give KDIR=, the tree make module built against)"
kver=$(cat "$release")
dest=$root/lib/modules/$kver/updates/umem_dmabuf_rs.ko
boot=$root/etc/modules-load.d/umem_dmabuf_rs.conf

run_depmod() {
	if [ -n "$root" ]; then
		depmod -b "$root" "$kver"
	else
		depmod "$kver"
	fi
}

# Whether the kernel kver, if it is the running one, loads only signed
# modules.
signed_only() {
	[ "$kver" = "$(uname -r)" ] || return 1
	[ "$(cat /sys/module/module/parameters/sig_enforce 2>/dev/null)" = Y ] && return 0
	grep -q '\[integrity\]\|\[confidentiality\]' /sys/kernel/security/lockdown 2>/dev/null
}

if [ "$action" = uninstall ]; then
	if [ -z "$root" ] && [ -d /sys/module/umem_dmabuf_rs ]; then
		rmmod umem_dmabuf_rs ||
			die "rmmod umem_dmabuf_rs refused: an MR it made still lives (deregister it, or stop the program that holds it, and run this again)"
		say "unloaded umem_dmabuf_rs: the built-in C importer serves new dma-buf MRs"
	fi
	rm -f "$dest" "$boot"
	run_depmod
	say "removed $dest and $boot (where they were); depmod $kver done"
	exit 0
fi

[ -f "$ko" ] || die "no $ko: build it first (make module KDIR=$KDIR)"
# (Read whole first: under pipefail, grep -q ending the pipe early would
# fail readelf with SIGPIPE on a large module, and the check with it.)
sections=$(readelf -SW "$ko") || die "readelf cannot read $ko"
if grep -q '\.kunit' <<<"$sections"; then
	die "$ko is the test build (KUnit suites, UMEM_KUNIT=y): build the production one with make module KDIR=$KDIR"
fi
vermagic=$(modinfo -F vermagic "$ko")
[ "${vermagic%% *}" = "$kver" ] ||
	die "$ko was built for ${vermagic%% *}, not for $kver (the tree in $KDIR): make module KDIR=$KDIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$ko" "$tmp/umem_dmabuf_rs.ko"
if [ -n "${SIGN_KEY:-}" ]; then
	[ -n "${SIGN_CERT:-}" ] || die "SIGN_KEY needs SIGN_CERT, the key's certificate (DER or PEM)"
	signer=${SIGN_FILE:-$KDIR/scripts/sign-file}
	[ -x "$signer" ] ||
		die "no $signer (the kernel builds it with CONFIG_MODULE_SIG; Debian ships it in linux-kbuild-*): give SIGN_FILE="
	"$signer" sha256 "$SIGN_KEY" "$SIGN_CERT" "$tmp/umem_dmabuf_rs.ko"
	say "signed with $SIGN_CERT ($(modinfo -F signer "$tmp/umem_dmabuf_rs.ko"))"
elif [ -z "$root" ] && signed_only; then
	die "the running kernel loads only signed modules (module.sig_enforce or lockdown): give SIGN_KEY= and SIGN_CERT= of a key it trusts (under Secure Boot, one enrolled with mokutil --import; Documentation/install.rst)"
fi
install -D -m 0644 "$tmp/umem_dmabuf_rs.ko" "$dest"
run_depmod
say "installed $dest; depmod $kver done; load it with: modprobe umem_dmabuf_rs"
if [ "${UMEM_AT_BOOT:-0}" = 1 ]; then
	mkdir -p "$(dirname "$boot")"
	echo umem_dmabuf_rs >"$boot"
	say "loaded at boot: $boot"
fi
