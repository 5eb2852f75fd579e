#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# smoke.sh [-d DEV] [-p PORT] [-g GIDX] [--module KO] [--program PATH]
#          [--importer module|builtin] [--dmabuf PID:FD]:
# make smoke (SMOKE_ARGS). Run as root on a machine booted into a kernel
# with the series: one dma-buf MR from the system dma-heap on an RDMA
# device, served by the Rust importer, with a loopback RDMA WRITE and READ
# whose bytes are checked (samples/rdma_dmabuf_smoke). Without -d, the
# first RDMA device with an ACTIVE port; without -p, that device's first
# ACTIVE port; without -g, the port's first IPv4 GID (RoCE). It
#  - refuses (exit 2, saying why) a kernel without the series, a machine
#    without an RDMA device with an ACTIVE port, without uverbs or without
#    the system heap;
#  - loads umem_dmabuf_rs (--module KO, else the installed module, else the
#    one make module built here) unless it is loaded already; with
#    --importer builtin (a machine rolled back to the C importer) it loads
#    nothing, refuses while umem_dmabuf_rs is loaded and wants the MR
#    served by the built-in C importer instead;
#  - with --dmabuf PID:FD registers the dma-buf process PID holds as FD (a
#    GPU's memory, say; the program takes it with pidfd_getfd()) instead of
#    one of the system heap, and checks it by RDMA WRITE and READ back, its
#    contents overwritten;
#  - records the ib_umem_dmabuf (and, on rxe, rxe_dmabuf) trace events in a
#    trace instance of its own, prints them and which importer served the
#    MR (the get event's importer=), and the MR's netlink attributes
#    (rdma resource show mr -dd) while it is registered;
#  - leaves nothing behind: the trace instance removed, the module unloaded
#    if it loaded it, tracefs unmounted if it mounted it, and its own
#    dma-buf gone (debugfs bufinfo, when mounted: by the buffer's inode,
#    whatever other buffers the system makes or frees meanwhile).
# Exit status 0 only when the bytes arrived intact, the importer asked for
# (the module, by default) served the MR and nothing was left. POSIX sh: make check runs it in QEMU's busybox, on
# rxe, as the stand-in for a real machine. SMOKE_KALLSYMS replaces
# /proc/kallsyms (the guest's check of the refusal).
set -u
dev= port= gidx= ko= prog= want=module foreign=
here=$(cd "$(dirname "$0")/.." 2>/dev/null && pwd)
while [ $# -gt 0 ]; do
	case "$1" in
	-d) dev=$2; shift 2 ;;
	-p) port=$2; shift 2 ;;
	-g) gidx=$2; shift 2 ;;
	--module) ko=$2; shift 2 ;;
	--program) prog=$2; shift 2 ;;
	--importer) want=$2; shift 2 ;;
	--dmabuf) foreign=$2; shift 2 ;;
	*) echo "usage: smoke.sh [-d DEV] [-p PORT] [-g GIDX] [--module KO] [--program PATH] [--importer module|builtin] [--dmabuf PID:FD]" >&2; exit 2 ;;
	esac
done
say() { echo "smoke: $*"; }
refuse() { echo "smoke: refused: $*" >&2; exit 2; }
case "$want" in
module | builtin) ;;
*) refuse "--importer is module or builtin, not '$want'" ;;
esac

[ "$(id -u)" = 0 ] || refuse "run as root (it loads a module and registers memory)"
[ -n "$prog" ] || prog=$here/build/smoke/rdma_dmabuf_smoke
[ -x "$prog" ] || refuse "no $prog: build it with make smoke"

# ib_core and uverbs, if they are modules (built in, this does nothing).
modprobe -q ib_uverbs 2>/dev/null || true
T=/sys/kernel/tracing
mounted=
if [ ! -d $T/events ]; then
	mount -t tracefs nodev $T 2>/dev/null || refuse "cannot mount tracefs on $T"
	mounted=1
fi
unmount() { [ -z "$mounted" ] || umount $T; }
if ! grep -qw ib_umem_dmabuf_register_ops "${SMOKE_KALLSYMS:-/proc/kallsyms}" ||
	[ ! -d $T/events/ib_umem_dmabuf ]; then
	unmount
	refuse "the running kernel ($(uname -r)) does not carry the series: no ib_umem_dmabuf_register_ops, no ib_umem_dmabuf trace events; boot a kernel built with patches/linux-7.3 (Documentation/install.rst)"
fi
IB=/sys/class/infiniband
active() {	# active DEV PORT: the port's state is ACTIVE
	grep -q ACTIVE "$IB/$1/ports/$2/state" 2>/dev/null
}
states() {	# every port's state, for a refusal
	for p in "$IB"/*/ports/*; do
		[ -e "$p/state" ] || continue
		d=${p%/ports/*}
		echo "${d##*/} port ${p##*/}: $(cut -d' ' -f2 "$p/state")"
	done | tr '\n' ';'
}
first_active() {	# first_active DEV: the device's first ACTIVE port
	for p in $(ls "$IB/$1/ports" 2>/dev/null | sort -n); do
		active "$1" "$p" && { echo "$p"; return 0; }
	done
	return 1
}
if [ -n "$dev" ] && [ ! -e "$IB/$dev" ]; then
	unmount
	refuse "no RDMA device $dev (there are: $(ls $IB 2>/dev/null | tr '\n' ' '))"
fi
if [ -n "$port" ]; then
	[ -n "$dev" ] || { unmount; refuse "-p needs -d"; }
	[ -e "$IB/$dev/ports/$port" ] || { unmount; refuse "$dev has no port $port (ports: $(ls $IB/$dev/ports | tr '\n' ' '))"; }
	active "$dev" "$port" || { unmount; refuse "port $port of $dev is not ACTIVE ($(states))"; }
elif [ -n "$dev" ]; then
	port=$(first_active "$dev") || { unmount; refuse "no ACTIVE port on $dev ($(states))"; }
else
	for d in $(ls $IB 2>/dev/null); do
		port=$(first_active "$d") && { dev=$d; break; }
	done
	if [ -z "$dev" ]; then
		unmount
		[ -n "$(ls $IB 2>/dev/null)" ] ||
			refuse "no RDMA device (for a software one: rdma link add rxe0 type rxe netdev IFACE)"
		refuse "no RDMA device with an ACTIVE port ($(states)); give -d DEV -p PORT to choose one"
	fi
fi
ls /dev/infiniband/uverbs* >/dev/null 2>&1 ||
	{ unmount; refuse "no /dev/infiniband/uverbs* (CONFIG_INFINIBAND_USER_ACCESS; modprobe ib_uverbs)"; }
if [ -n "$foreign" ]; then
	echo "$foreign" | grep -qxE '[0-9]+:[0-9]+' ||
		{ unmount; refuse "--dmabuf wants PID:FD, not '$foreign'"; }
	target=$(readlink "/proc/${foreign%%:*}/fd/${foreign#*:}" 2>/dev/null) ||
		{ unmount; refuse "--dmabuf $foreign: process ${foreign%%:*} has no fd ${foreign#*:}"; }
	say "kernel $(uname -r) carries the series; device $dev port $port (ACTIVE); the buffer: fd ${foreign#*:} of process ${foreign%%:*} ($target)"
else
	[ -c /dev/dma_heap/system ] || { unmount; refuse "no /dev/dma_heap/system (CONFIG_DMABUF_HEAPS_SYSTEM)"; }
	say "kernel $(uname -r) carries the series; device $dev port $port (ACTIVE); system heap present"
fi

BUFINFO=/sys/kernel/debug/dma_buf/bufinfo
listed() {	# listed INO: debugfs bufinfo lists a dma-buf of inode INO
	awk -F '\t' -v ino="$1" 'NF >= 6 && $6 ~ /^[0-9]+$/ && $6 + 0 == ino + 0 { f = 1 } END { exit !f }' $BUFINFO
}

loaded=
if [ "$want" = builtin ]; then
	[ ! -d /sys/module/umem_dmabuf_rs ] ||
		{ unmount; refuse "umem_dmabuf_rs is loaded: unload it (modprobe -r umem_dmabuf_rs) to check the built-in C importer"; }
	say "umem_dmabuf_rs is not loaded: the built-in C importer should serve"
elif [ -d /sys/module/umem_dmabuf_rs ]; then
	say "umem_dmabuf_rs was loaded already: used as it is, left loaded"
elif [ -n "$ko" ]; then
	insmod "$ko" || { unmount; refuse "insmod $ko failed (see dmesg)"; }
	loaded=1
elif modinfo umem_dmabuf_rs >/dev/null 2>&1; then
	modprobe umem_dmabuf_rs || { unmount; refuse "modprobe umem_dmabuf_rs failed (see dmesg)"; }
	loaded=1
elif [ -f "$here/umem_dmabuf_rs.ko" ]; then
	insmod "$here/umem_dmabuf_rs.ko" || { unmount; refuse "insmod $here/umem_dmabuf_rs.ko failed (see dmesg)"; }
	loaded=1
else
	unmount
	refuse "no umem_dmabuf_rs: give --module KO, install it or run make module"
fi
[ -z "$loaded" ] || say "loaded umem_dmabuf_rs"

inst=$T/instances/umem_smoke_$$
mkdir $inst
echo 1 >$inst/events/ib_umem_dmabuf/enable
[ ! -d $inst/events/rxe_dmabuf ] || echo 1 >$inst/events/rxe_dmabuf/enable
show=:
command -v rdma >/dev/null 2>&1 && show="rdma -dd resource show mr dev $dev"
out=/tmp/umem_smoke_$$.out
"$prog" -d "$dev" -p "$port" ${gidx:+-g "$gidx"} ${foreign:+-f "$foreign"} -c "echo 'smoke: netlink, rdma resource show mr -dd:'; $show" >$out 2>&1
prc=$?
cat $out
echo 0 >$inst/events/enable
say "trace events (ib_umem_dmabuf, rxe_dmabuf) during the run:"
grep -v '^#' $inst/trace | sed 's/^ */    /'
fd=$(sed -n 's/.*(dma-buf fd=\([0-9]*\)).*/\1/p' $out)
ino=$(sed -n "s/.*the buffer's inode is \([0-9]*\).*/\1/p" $out)
importer=$(grep -v '^#' $inst/trace | grep "ib_umem_dmabuf_get:.* fd=$fd .*err=0" |
	sed -n 's/.* importer=\([a-z]*\) .*/\1/p' | head -n 1)
rm -f $out
rmdir $inst
rc=0
if [ -n "$loaded" ]; then
	rmmod umem_dmabuf_rs || { say "FAIL: rmmod umem_dmabuf_rs"; rc=1; }
fi
unmount

if [ $prc -ne 0 ]; then
	say "FAIL: the dma-buf MR's transfers (rdma_dmabuf_smoke exited $prc)"
	rc=1
fi
case "$want:$importer" in
module:module) say "the Rust importer (umem_dmabuf_rs) served the MR: ib_umem_dmabuf_get importer=module" ;;
builtin:builtin) say "the built-in C importer served the MR: ib_umem_dmabuf_get importer=builtin" ;;
*:module | *:builtin) say "FAIL: importer=$importer served the MR, not $want"; rc=1 ;;
*) say "FAIL: no ib_umem_dmabuf_get event for the MR's dma-buf (fd=$fd)"; rc=1 ;;
esac
if [ -n "$foreign" ]; then
	say "the buffer is process ${foreign%%:*}'s: it stays"
elif [ ! -r $BUFINFO ]; then
	say "no debugfs bufinfo: not checked that the buffer is gone"
elif [ -z "$ino" ]; then
	say "FAIL: the program did not say its buffer's inode"
	rc=1
elif listed "$ino"; then
	say "FAIL: the dma-buf of inode $ino is still there"
	rc=1
else
	say "nothing left: the dma-buf of inode $ino is gone"
fi
[ -e $inst ] && { say "FAIL: trace instance $inst left"; rc=1; }
if [ $rc -eq 0 ]; then
	say "ok"
else
	say "failed"
fi
exit $rc
