# SPDX-License-Identifier: GPL-2.0
# Guest side of the rdma-core boot: rdma-core's own test suite (tests/,
# unmodified, run by rdma_core_ktap.py) on rxe, through the patched
# libibverbs and rxe provider, on the built-in C importer and then on the
# Rust module:
#   rdma_dmabuf_pingpong_<importer>  the C example between two processes,
#                                  the server's buffer in device memory
#   smoke_*                        make smoke's script (scripts/smoke.sh)
#                                  as on a real machine, rxe0 for its NIC,
#                                  between the two importers' suites: its
#                                  refusals, then one system-heap MR served
#                                  by the module it loads and unloads, one
#                                  served by the C importer (--importer
#                                  builtin) and its refusal while the
#                                  module is loaded, one of a dma-buf
#                                  another process holds (--dmabuf)
#   rdma_core_<importer>           C: test_mr (the DmaBuf tests reach the
#                                  importer, the others rxe's MR code, the
#                                  same on either importer, so once); make
#                                  check-full (umem.full=1): the whole suite
#                                  (the rest of rxe and the patched
#                                  libibverbs); Rust: the DmaBuf tests;
#                                  dma-bufs from the movable exporter;
#                                  without test_dmabuf_read and _write
#                                  (below)
#   rdma_core_udmabuf_rust         the DmaBuf tests on udmabuf buffers,
#                                  without test_dmabuf_read and _write, on
#                                  the Rust importer (on C about 80 s of
#                                  the longest boot for what the main
#                                  boot's rxe tests of udmabuf cover)
#   rdma_core_heap_<importer>      the DmaBuf tests on buffers of the
#   rdma_core_vgem_<importer>      kernel's system dma-heap, and of vgem
#                                  (GEM objects exported with PRIME),
#                                  without test_dmabuf_read and _write
#   rdma_core_migrate_<importer>   all the DmaBuf tests on buffers in
#                                  device memory (the exporter's PCI BAR,
#                                  reached peer-to-peer) while exp_migrate
#                                  moves every buffer the tests hold between
#                                  device and system memory, every 50 ms
# test_dmabuf_read and _write do CPU access through the buffer's mapping,
# page fault by page fault, which the test kernel's KASAN makes slow: 72 and
# 78 s each on udmabuf, 25 and 19 s on exporter buffers. They run once per
# importer, in the migrate lane, where the contents they check move under
# them.
# RDMA_CORE_SELECT (kernel command line umem.rc_select=) replaces the
# selection of rdma_core_c.
. /umem/lib.sh

T=/umem/rdma-core-tests
DMABUF_TESTS=test_mr.DmaBufMRTest,test_mr.DmaBufTestCase
CPU_ACCESS=-test_mr.DmaBufMRTest.test_dmabuf_read,-test_mr.DmaBufMRTest.test_dmabuf_write
export RDMA_CORE_KNOWN=/umem/rdma_core_known.txt
# They skip when pyverbs cannot allocate or rxe cannot register: a failure.
export RDMA_CORE_MUST_RUN=$DMABUF_TESTS
export PYTHONDONTWRITEBYTECODE=1
# Its output goes to a pipe (ktap_watch): a line at a time, as on a tty.
export PYTHONUNBUFFERED=1
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	umem.rc_select=*) RDMA_CORE_SELECT=${arg#umem.rc_select=} ;;
	umem.full=1) RDMA_CORE_FULL=1 ;;
	esac
done
C_SELECT=test_mr,$CPU_ACCESS
[ "${RDMA_CORE_FULL:-0}" = 0 ] || C_SELECT=test_,$CPU_ACCESS

# rdma_core ALLOCATOR SUITE SELECT: rdma-core's tests on rxe0, dma-bufs
# from ALLOCATOR (patches/rdma-core: PYVERBS_DMABUF_ALLOCATOR).
rdma_core() {
	PYVERBS_DMABUF_ALLOCATOR=$1 exec python3 /umem/rdma_core_ktap.py "$2" $T "$3" \
		--dev rxe0 --gid "$GIDX"
}

# migrating ALLOCATOR SUITE SELECT: the same while exp_migrate moves the
# buffers (between device and system memory for ALLOCATOR devmem); fails
# unless the tests pass and importers were notified of moves.
migrating() {
	local pid mpid rc mrc swap=
	[ "$1" = devmem ] && swap=swap
	rdma_core "$@" &
	pid=$!
	exp_migrate $pid 50 1 $swap &
	mpid=$!
	wait $pid
	rc=$?
	stop_helper $mpid
	wait $mpid
	mrc=$?
	verdict "rdma-core's tests" $rc exp_migrate $mrc
}

# pingpong: samples/rdma_dmabuf_pingpong between two processes, the
# server's dma-buf in device memory (moved between it and system memory
# every 10 ms), the client's from udmabuf: 50 round trips, each with
# migrations under way.
pingpong() {
	local spid mpid crc src mrc
	rdma_dmabuf_pingpong -d rxe0 -g "$GIDX" -s 65536 -n 50 --dmabuf devmem \
		>/tmp/pp-server.txt 2>&1 &
	spid=$!
	exp_migrate $spid 10 1 swap >/tmp/pp-migrate.txt &
	mpid=$!
	rdma_dmabuf_pingpong -d rxe0 -g "$GIDX" -s 65536 -n 50 --dmabuf udmabuf 127.0.0.1
	crc=$?
	wait $spid
	src=$?
	stop_helper $mpid
	wait $mpid
	mrc=$?
	sed 's/^/server: /' /tmp/pp-server.txt
	cat /tmp/pp-migrate.txt
	verdict client $crc server $src exp_migrate $mrc
}

# importer_suites IMPORTER SELECT
importer_suites() {
	step "rdma_dmabuf_pingpong_$1" pingpong
	step "rdma_core_$1" ktap_run "rdma_core_$1" \
		rdma_core exporter "rdma_core_$1" "$2"
	[ "$1" = c ] || step "rdma_core_udmabuf_$1" ktap_run "rdma_core_udmabuf_$1" \
		rdma_core udmabuf "rdma_core_udmabuf_$1" $DMABUF_TESTS,$CPU_ACCESS
	step "rdma_core_heap_$1" ktap_run "rdma_core_heap_$1" \
		rdma_core heap "rdma_core_heap_$1" $DMABUF_TESTS,$CPU_ACCESS
	step "rdma_core_vgem_$1" ktap_run "rdma_core_vgem_$1" \
		rdma_core vgem "rdma_core_vgem_$1" $DMABUF_TESTS,$CPU_ACCESS
	step "rdma_core_migrate_$1" ktap_run "rdma_core_migrate_$1" \
		migrating devmem "rdma_core_migrate_$1" $DMABUF_TESTS
}

# smoke_refused WANT ARGS...: make smoke's script (scripts/smoke.sh) with
# ARGS must refuse, exit 2, saying WANT.
smoke_refused() {
	local want=$1 rc
	shift
	sh /umem/smoke.sh "$@" >/tmp/smoke.out 2>&1
	rc=$?
	cat /tmp/smoke.out
	[ $rc -eq 2 ] && grep -q "$want" /tmp/smoke.out
}

# smoke_refused_without_series: the same, on a kernel whose symbols lack
# the series' hook (SMOKE_KALLSYMS stands in for /proc/kallsyms).
smoke_refused_without_series() {
	local rc
	export SMOKE_KALLSYMS=/dev/null
	smoke_refused "does not carry the series" --program /umem/bin/rdma_dmabuf_smoke
	rc=$?
	unset SMOKE_KALLSYMS
	return $rc
}

# smoke: make smoke as on a real machine, rxe0 standing in for its NIC,
# with its own choice of device, ACTIVE port, GID and module (modprobe: the
# initramfs installs the module as the kernel build made it, with depmod's
# modules.dep; scripts/initramfs.sh): it loads the Rust importer, registers
# a system-heap dma-buf MR, WRITEs and READs through it and unloads the
# module again.
smoke() {
	sh /umem/smoke.sh --program /umem/bin/rdma_dmabuf_smoke "$@"
}

# smoke_foreign: make smoke's --dmabuf, with a buffer of the system heap
# that another process (python) allocated and holds, as a GPU runtime holds
# the dma-buf of its memory; the buffer must still be its owner's after.
smoke_foreign() {
	local pid fd i rc
	python3 -c '
import fcntl, os, struct, time
heap = os.open("/dev/dma_heap/system", os.O_RDONLY)
# DMA_HEAP_IOCTL_ALLOC: struct dma_heap_allocation_data, 24 bytes
a = bytearray(struct.pack("QIIQ", 1 << 20, 0, os.O_RDWR, 0))
fcntl.ioctl(heap, 0xC0184800, a)
print(struct.unpack("QIIQ", a)[1], flush=True)
time.sleep(3600)' >/tmp/holder.out &
	pid=$!
	for i in $(seq 300); do
		fd=$(cat /tmp/holder.out)
		[ -z "$fd" ] || break
		sleep 0.1
	done
	smoke --dmabuf "$pid:$fd"
	rc=$?
	[ -e "/proc/$pid/fd/$fd" ] || { echo "the holder lost its buffer"; rc=1; }
	kill "$pid"
	wait "$pid" 2>/dev/null
	return $rc
}

GIDX=$(rxe_setup)
step rxe_device_with_ipv4_gid test -n "$GIDX"
step insmod_exporter insmod $MODDIR/dmabuf_exporter_rs.ko
importer_suites c "${RDMA_CORE_SELECT:-$C_SELECT}"
step smoke_refuses_a_kernel_without_the_series smoke_refused_without_series
step smoke_refuses_a_missing_device smoke_refused "no RDMA device nosuch" -d nosuch \
	--program /umem/bin/rdma_dmabuf_smoke
step smoke_refuses_a_port_that_is_not_there smoke_refused "rxe0 has no port 2" -d rxe0 -p 2 \
	--program /umem/bin/rdma_dmabuf_smoke
step smoke_on_rxe smoke
step smoke_left_the_module_unloaded test ! -d /sys/module/umem_dmabuf_rs
# A machine rolled back to the C importer (Documentation/install.rst).
step smoke_with_the_c_importer smoke --importer builtin
step smoke_of_another_process_dmabuf smoke_foreign
step insmod_umem_dmabuf_rs insmod $MODDIR/umem_dmabuf_rs.ko count_calls=1
step smoke_refuses_the_c_importer_while_the_module_is_loaded \
	smoke_refused "umem_dmabuf_rs is loaded" --importer builtin --program /umem/bin/rdma_dmabuf_smoke
importer_suites rust $DMABUF_TESTS,$CPU_ACCESS
# The Rust importer, not the built-in one, made the tests' umems.
calls=/sys/kernel/debug/umem_dmabuf_rs/calls
awk '{ print "# umem_dmabuf_rs entry point", $1 ": " $2 " calls" }' $calls
step rust_importer_served_the_tests [ "$(awk '$1 == "get" { print $2 }' $calls)" -gt 50 ]
# Nothing of the tests holds either module any more.
step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
step rmmod_exporter rmmod dmabuf_exporter_rs
steps_report guest_steps
