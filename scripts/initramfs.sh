#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# initramfs.sh OUT.cpio: builds the guest's root filesystem: busybox, the
# userspace RDMA stack of the host (libibverbs + the rxe provider, iproute2's
# rdma, ibverbs-utils) with the shared libraries they need, the project's
# modules and test programs, and scripts/guest/ as /umem.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,lib64,usr/lib/x86_64-linux-gnu,umem/modules,umem/bin}
cp /usr/bin/busybox "$root/bin/busybox"
for app in $("$root/bin/busybox" --list); do
	[ -e "$root/bin/$app" ] || ln -s busybox "$root/bin/$app"
done

# Copies a host file and, for ELF files, every shared library it needs.
add_file() {
	local f=$1
	[ -e "$root$f" ] && return
	mkdir -p "$root$(dirname "$f")"
	cp -L "$f" "$root$f"
	if [ "$(head -c4 "$f" | tail -c3)" = "ELF" ]; then
		local lib
		for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true); do
			add_file "$lib"
		done
	fi
}

for bin in /usr/bin/rdma /usr/bin/ibv_devinfo /usr/bin/ibv_devices /usr/bin/ibv_rc_pingpong; do
	add_file "$bin"
done
add_file /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
# iproute2's ip (same package as rdma): busybox's cannot create a veth
# pair. The guest scripts call it by path (see guest/lib.sh).
add_file /usr/bin/ip
mv "$root/usr/bin/ip" "$root/umem/bin/ip"
mkdir -p "$root/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"

# Project artefacts: modules and guest programs built by scripts/module.sh.
for ko in "$ROOT"/*.ko "$ROOT"/samples/*/*.ko; do
	[ -e "$ko" ] && cp "$ko" "$root/umem/modules/"
done
for b in "$ROOT"/build/guest-bin/*; do
	[ -e "$b" ] && add_file "$b" && mv "$root$b" "$root/umem/bin/"
done
cp "$ROOT"/scripts/guest/* "$root/umem/"
chmod +x "$root"/umem/*.sh
cp "$ROOT/scripts/guest/init" "$root/init"
chmod +x "$root/init"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$out"
