#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest-check.sh: init (PID 1) of make check-install's guest
# (scripts/check-install.sh): a Debian 12 root into which the kernel
# packages of scripts/install/debian-kernel.sh were installed with dpkg -i,
# booted with lockdown=integrity. Checks, one TAP line each, what
# Documentation/install.rst says of that install: the kernel runs locked
# down, its module of the Rust importer is installed with the kernel and
# signed, an unsigned copy is refused, modprobe loads the signed one, make
# smoke's script serves a dma-buf MR with it on rxe (its own choice of
# device, port, GID and module), the page's load block loads it, its
# rollback block takes it out and keeps it out, and the C importer serves
# then. load.sh and rollback.sh are the page's blocks, written by the host.
# Powers the machine off at the end.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
U=/root/umem
n=0
step() {	# step NAME COMMAND...: runs COMMAND, prints its TAP line
	name=$1
	shift
	n=$((n + 1))
	if "$@" >/tmp/step.out 2>&1; then
		echo "ok $n $name"
	else
		echo "not ok $n $name"
	fi
	sed 's/^/# /' /tmp/step.out
}

mount -t proc proc /proc 2>/dev/null
mount -t sysfs sysfs /sys 2>/dev/null
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -o remount,rw /
echo "# guest-check: kernel $(uname -r), $(cat /proc/cmdline)"

locked_down() {
	cat /sys/kernel/security/lockdown
	grep -q '\[integrity\]' /sys/kernel/security/lockdown
}
from_the_package() {
	dpkg-query -W "linux-image-$(uname -r)"
	f=$(modinfo -F filename umem_dmabuf_rs) || return 1
	echo "$f"
	case "$f" in
	/lib/modules/"$(uname -r)"/kernel/drivers/infiniband/core/umem_dmabuf_rs/*) ;;
	*) return 1 ;;
	esac
	dpkg -S "${f#/usr}" 2>/dev/null || dpkg -S "$f"
}
signed() {
	modinfo -F signer umem_dmabuf_rs
	modinfo -F sig_hashalgo umem_dmabuf_rs
	[ -n "$(modinfo -F signer umem_dmabuf_rs)" ]
}
unsigned_refused() {
	modprobe ib_uverbs
	if insmod $U/umem_dmabuf_rs.unsigned.ko; then
		rmmod umem_dmabuf_rs
		return 1
	fi
	dmesg | grep -i 'unsigned module' | tail -n 1
	[ ! -d /sys/module/umem_dmabuf_rs ] && dmesg | grep -qi 'lockdown.*unsigned module'
}
modprobe_loads() {
	modprobe umem_dmabuf_rs || return 1
	cat /sys/module/umem_dmabuf_rs/taint
	[ -z "$(cat /sys/module/umem_dmabuf_rs/taint)" ] && modprobe -r umem_dmabuf_rs
}
# rxe0 on the first network interface (QEMU's user network), whatever
# name udev gave it.
rxe() {
	modprobe virtio_net
	i=0
	while [ $i -lt 100 ] && [ -z "$(ls /sys/class/net | grep -vx lo)" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	nic=$(ls /sys/class/net | grep -vx lo | head -n 1)
	echo "network interface: $nic"
	[ -n "$nic" ] || return 1
	ip link set "$nic" up
	ip addr add 10.0.2.15/24 dev "$nic"
	rdma link add rxe0 type rxe netdev "$nic"
	i=0
	while [ $i -lt 100 ]; do
		grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null &&
			grep -qs 0a00:020f /sys/class/infiniband/rxe0/ports/1/gids/* && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
# Section 5's load block: loaded now and at every boot.
loaded() {
	sh -ex $U/load.sh || return 1
	test -d /sys/module/umem_dmabuf_rs && test -f /etc/modules-load.d/umem_dmabuf_rs.conf
}
# Section 9's rollback block: unloaded, off the boot list, and kept from
# loading again.
rolled_back() {
	sh -ex $U/rollback.sh || return 1
	test ! -d /sys/module/umem_dmabuf_rs || return 1
	test ! -e /etc/modules-load.d/umem_dmabuf_rs.conf || return 1
	if modprobe umem_dmabuf_rs; then
		echo "modprobe umem_dmabuf_rs loaded it after the rollback"
		return 1
	fi
	test ! -d /sys/module/umem_dmabuf_rs
}
# Deleting the rollback's file undoes it.
undone() {
	rm /etc/modprobe.d/umem_dmabuf_rs.conf
	modprobe umem_dmabuf_rs && modprobe -r umem_dmabuf_rs
}

step lockdown_is_integrity locked_down
step module_installed_by_the_kernel_package from_the_package
step module_signed_by_the_build signed
step unsigned_module_refused_under_lockdown unsigned_refused
step modprobe_loads_the_signed_module_untainted modprobe_loads
step rxe_on_the_network_interface rxe
step smoke_with_its_own_choices sh $U/smoke.sh --program $U/rdma_dmabuf_smoke
step smoke_left_the_module_unloaded test ! -d /sys/module/umem_dmabuf_rs
step load_block_loads_the_module loaded
step smoke_with_the_loaded_module sh $U/smoke.sh --program $U/rdma_dmabuf_smoke
step rollback_block_unloads_and_keeps_it_out rolled_back
step smoke_on_the_c_importer_after_the_rollback \
	sh $U/smoke.sh --program $U/rdma_dmabuf_smoke --importer builtin
step rollback_undone undone
step no_kernel_warning sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|lockdep|KASAN"'
echo "1..$n"
echo "# guest-check: done"
sync
echo 1 >/proc/sys/kernel/sysrq
echo o >/proc/sysrq-trigger
sleep 10
