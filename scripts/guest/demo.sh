# SPDX-License-Identifier: GPL-2.0
# Guest side of `make demo`: a short transcript of what the project does.
# Any failing step ends the demo with a non-zero status.
set -e
. /umem/lib.sh
step() { echo; echo "### $*"; }
klog() { dmesg | sed -n "/umem-demo-mark$/,\$p" | sed '1d; s/^\[[ 0-9.]*\] //'; }
calls=/sys/kernel/debug/umem_dmabuf_rs/calls

step "kernel $(uname -r): ib_core patched to accept a pluggable dma-buf importer"
grep -q ib_umem_dmabuf_register_ops /proc/kallsyms && echo "  ib_umem_dmabuf_register_ops: present"

step "insmod umem_dmabuf_rs.ko kunit=1 count_calls=1: the Rust importer registers with ib_core"
echo "umem-demo-mark" >/dev/kmsg
insmod /umem/modules/umem_dmabuf_rs.ko kunit=1 count_calls=1
grep '^umem_dmabuf_rs ' /proc/modules | sed 's/^/  /'

step "its KUnit suites ran at load (kunit=1), every importer case on both the C and the Rust code"
klog | grep -E '^# [a-z_]+: pass:' | sed 's/^# /  /'
klog | grep -E 'diff_random_cases: [0-9]+ cases' | sed 's/^ *# /  /'
if klog | grep -q '^ *not ok'; then
	echo "  a KUnit case failed:"
	klog | grep '^ *not ok' | sed 's/^/    /'
	exit 1
fi

step "ib_core reached the Rust entry points this many times ($calls)"
sed 's/^/  /' "$calls"
[ "$(awk '$1 == "get" { print $2 }' "$calls")" -gt 0 ]

step "rmmod umem_dmabuf_rs: unregisters; ib_core falls back to its C code"
rmmod umem_dmabuf_rs
! grep -q '^umem_dmabuf_rs ' /proc/modules
echo "  unloaded"

step "insmod dmabuf_exporter_rs.ko: a dma-buf exporter whose buffers migrate, like GPU memory"
insmod /umem/modules/dmabuf_exporter_rs.ko
ls -l /dev/dmabuf_exporter_rs | sed 's/^/  /'
exp_demo

step "soft-RoCE: rdma link add rxe0 type rxe netdev eth0"
GIDX=$(rxe_setup)
[ -n "$GIDX" ]
rdma link show rxe0/1 | sed 's/^/  /'
echo "  RoCE v2 GID index $GIDX: $(cat /sys/class/infiniband/rxe0/ports/1/gids/$GIDX)"

step "a dma-buf MR on rxe, through the Rust importer (uverbs-dmabuf, the Rust uverbs client)"
insmod /umem/modules/umem_dmabuf_rs.ko count_calls=1
get_before=$(awk '$1 == "get" { print $2 }' "$calls")
uverbs-dmabuf rxe0 "$GIDX"
echo "  ib_core called the Rust importer's get $(( $(awk '$1 == "get" { print $2 }' "$calls") - get_before )) time(s)"
rmmod umem_dmabuf_rs

step "the same on the built-in C importer"
uverbs-dmabuf rxe0 "$GIDX"

# pingpong KIND [swap]: samples/rdma_dmabuf_pingpong between two processes,
# the server's buffer from allocator KIND migrating every 10 ms (with swap,
# between device and system memory), the client's from udmabuf.
pingpong() {
	local server migrator crc=0 src=0 mrc=0
	rdma_dmabuf_pingpong -d rxe0 -g "$GIDX" -s 65536 -n 50 --dmabuf "$1" \
		>/tmp/server.txt 2>&1 &
	server=$!
	exp_migrate $server 10 1 ${2:-} >/tmp/migrate.txt &
	migrator=$!
	rdma_dmabuf_pingpong -d rxe0 -g "$GIDX" -s 65536 -n 50 --dmabuf udmabuf 127.0.0.1 \
		>/tmp/client.txt 2>&1 || crc=$?
	wait $server || src=$?
	# The migrator follows the server and ends with it, maybe already has:
	# either way it is done, and its status is its own verdict.
	stop_helper $migrator
	wait $migrator || mrc=$?
	sed 's/^/  client: /' /tmp/client.txt
	sed 's/^/  server: /' /tmp/server.txt
	sed 's/^# /  /' /tmp/migrate.txt
	verdict "client" $crc "server" $src "migrator" $mrc
}

step "ibv_reg_dmabuf_mr() from C, two processes (samples/rdma_dmabuf_pingpong), the server's buffer migrating every 10 ms"
pingpong exporter

step "device memory: the exporter's PCI BAR (ivshmem, behind one PCIe switch with the NIC), like GPU VRAM"
dmesg | grep -o 'dmabuf_exporter_rs [0-9a-f:.]*: device memory: .*' | sed 's/^/  /'
echo "  the client RDMA WRITEs and SENDs into the server's buffer in the BAR, which"
echo "  moves between device and system memory every 10 ms; rxe reaches it peer-to-peer"
t=/sys/kernel/tracing
[ -d $t/events ] || mount -t tracefs nodev $t
echo 0 >$t/tracing_on
echo >$t/trace
echo 1 >$t/events/ib_umem_dmabuf/enable
echo 1 >$t/tracing_on
pingpong devmem swap
echo 0 >$t/tracing_on
echo 0 >$t/events/ib_umem_dmabuf/enable

step "what the dma-buf MRs did meanwhile: the umem trace events (tracefs, Documentation/observability.rst)"
grep -o 'ib_umem_dmabuf_[a-z_]*:' $t/trace | sort | uniq -c | sed 's/:$//; s/^ */  /'
grep -m 1 'ib_umem_dmabuf_get:' $t/trace | sed 's/^.*ib_umem/  ib_umem/'
grep -m 2 'ib_umem_dmabuf_map:' $t/trace | sed 's/^.*ib_umem/  ib_umem/'
grep -m 1 'ib_umem_dmabuf_fence_wait:' $t/trace | sed 's/^.*ib_umem/  ib_umem/'
grep -q 'ib_umem_dmabuf_map:.* err=0' $t/trace

step "RDMA WRITE, SEND and READ in device memory with each importer; the host reads the BAR's file after the boot"
wrc=0
rxe_dmabuf_test rxe0 "$GIDX" witness c "insmod /umem/modules/umem_dmabuf_rs.ko" \
	rust "rmmod umem_dmabuf_rs" >/tmp/witness.txt 2>&1 || wrc=$?
grep 'devmem-witness' /tmp/witness.txt | sed 's/^# /  /'
grep -c '^    ok' /tmp/witness.txt | sed 's/^/  checks passed in the guest: /'
grep '^    not ok' /tmp/witness.txt | sed 's/^/  /' || true
verdict "witness" $wrc

step "nothing left behind: dma-buf buffers alive (debugfs bufinfo)"
grep -c dmabuf_exporter_rs /sys/kernel/debug/dma_buf/bufinfo | sed 's/^/  buffers of the exporter: /'
! grep -q dmabuf_exporter_rs /sys/kernel/debug/dma_buf/bufinfo
rmmod dmabuf_exporter_rs
echo "  exporter unloaded"
