# SPDX-License-Identifier: GPL-2.0
# Guest side of make check-fixes (scripts/fixes.sh): runs the reproducers of
# the fixes series on the kernel it booted (umem.fixes_stage=pristine, fixes
# or rxe) and reports what each saw, one line each:
#   @@UMEM-FIXES CASE bug|clean|error DETAIL@@
# The host decides: on pristine every case must be "bug", on the fixed
# kernels "clean". With umem.fixes_only=CASE (the only-N stages, one fix
# alone) only that case runs.
#   phys_vec_table_leak        0001: 64 maps and unmaps of a table built by
#                              dma_buf_phys_vec_to_sgt(); kmemleak's count
#                              of unreferenced objects allocated under it
#   udmabuf_segment_size       0002: a 2 MiB udmabuf on one huge page,
#                              mapped for a device of 64 KiB segments
#   system_heap_segment_size   0003: 4 MiB of the system dma-heap, the same
#   rxe_resend_after_full_ack  0005: a loopback RC stream of 4 KiB WRITEs
#                              with a retransmit timeout of one jiffy
#                              (rxe_resend): unfixed, a WRITE completes with
#                              IBV_WC_REM_INV_REQ_ERR (status 9)
# Two guests on a link (umem.node=server or client) run only fix 4's case:
#   dead_qp_packets_freed      0004: the client streams 64 KiB WRITEs into
#                              the server, whose QP goes to the error state
#                              under the stream (rxe_deadqp); unfixed, the
#                              server's kernel warns as rxe frees the NIC's
#                              packets with interrupts off (lockdep)
# Each segment case passes its verdict on two witnesses: the longest DMA
# entry the importer got, and DMA-API debugging's error count and message.
# On the rxe stage, rdma-core's DmaBuf tests then run on rxe through the
# built-in C importer (no Rust in that kernel), dma-bufs from udmabuf and
# from the system heap: @@UMEM-FIXES rxe_dmabuf_mr_ALLOCATOR pass|fail@@.
. /umem/lib.sh

stage=unknown
only=
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	umem.fixes_stage=*) stage=${arg#umem.fixes_stage=} ;;
	umem.fixes_only=*) only=${arg#umem.fixes_only=} ;;
	umem.resend=*) set -- $(echo "${arg#umem.resend=}" | tr , ' ')
		RESEND_TIMEOUT=$1 RESEND_SECS=$2 RESEND_STALL=$3 RESEND_PAIRS=$4 ;;
	esac
done
echo "# check-fixes: stage $stage${only:+, only $only}, kernel $(uname -r)"

report() {
	echo "@@UMEM-FIXES $*@@"
}

D=/sys/kernel/debug/fixes_repro
KL=/sys/kernel/debug/kmemleak
DMA_ERRORS=/sys/kernel/debug/dma-api/error_count

# leaked FUNCTION: how many objects kmemleak reports unreferenced whose
# allocation backtrace passes FUNCTION (two scans; an object must be 5 s
# old before kmemleak reports it).
leaked() {
	sleep 6
	echo scan >$KL
	sleep 2
	echo scan >$KL
	awk -v fn="$1" '/^unreferenced object/ { if (hit) n++; hit = 0 }
		index($0, fn) { hit = 1 }
		END { if (hit) n++; print n + 0 }' $KL
}

phys_vec_table_leak() {
	local n
	echo clear >$KL
	echo 64 >$D/phys_vec || { report phys_vec_table_leak error "the 64 maps failed"; return; }
	n=$(leaked dma_buf_phys_vec_to_sgt)
	if [ "$n" -gt 0 ]; then
		report phys_vec_table_leak bug "$n objects of dma_buf_phys_vec_to_sgt() leaked by 64 maps"
	else
		report phys_vec_table_leak clean "no object of dma_buf_phys_vec_to_sgt() leaked by 64 maps"
	fi
}

# segments CASE SOURCE KIB
segments() {
	local before after got entries longest warned=0
	before=$(cat $DMA_ERRORS)
	dmesg -c >/dev/null
	if ! got=$(/umem/bin/fixes_repro_user "$2" "$3"); then
		report "$1" error "fixes_repro_user $2 $3 failed"
		return
	fi
	after=$(cat $DMA_ERRORS)
	dmesg | grep -q 'mapping sg segment longer than device claims to support' && warned=1
	entries=${got% *}
	longest=${got#* }
	local what="$3 KiB: $entries entries, the longest $longest bytes; DMA-API errors $before -> $after"
	if [ "$longest" -gt 65536 ] && [ "$after" -gt "$before" ] && [ $warned = 1 ]; then
		report "$1" bug "$what, \"mapping sg segment longer than device claims to support\""
	elif [ "$longest" -le 65536 ] && [ "$after" = "$before" ] && [ $warned = 0 ]; then
		report "$1" clean "$what"
	else
		report "$1" error "$what (the witnesses disagree; warned=$warned)"
	fi
}

# rxe_dmabuf_mr ALLOCATOR: rdma-core's DmaBuf tests on rxe0, except the two
# that touch every page through the CPU mapping (slow under TCG, and not
# about the importer).
rxe_dmabuf_mr() {
	local rc=0
	echo "@@UMEM-KTAP-BEGIN rxe_dmabuf_mr_$1@@"
	RDMA_CORE_MUST_RUN=test_mr.DmaBufMRTest,test_mr.DmaBufTestCase PYTHONUNBUFFERED=1 \
	PYTHONDONTWRITEBYTECODE=1 PYVERBS_DMABUF_ALLOCATOR=$1 \
		python3 /umem/rdma_core_ktap.py "rxe_dmabuf_mr_$1" /umem/rdma-core-tests \
		test_mr.DmaBufMRTest,test_mr.DmaBufTestCase,-test_mr.DmaBufMRTest.test_dmabuf_read,-test_mr.DmaBufMRTest.test_dmabuf_write \
		--dev rxe0 --gid "$GIDX" 2>&1 || rc=$?
	echo "@@UMEM-KTAP-END rxe_dmabuf_mr_$1@@"
	if [ $rc = 0 ]; then
		report "rxe_dmabuf_mr_$1" pass "rdma-core's DmaBuf tests on the C importer"
	else
		report "rxe_dmabuf_mr_$1" fail "rdma-core's DmaBuf tests exited $rc"
	fi
}

# rxe_resend_after_full_ack TIMEOUT SECS STALL_MS PAIRS
rxe_resend_after_full_ack() {
	local out rc=0
	out=$(/umem/bin/rxe_resend rxe0 "$GIDX" "$1" "$2" "$3" "$4" 2>&1) || rc=$?
	echo "$out" | sed 's/^ *//; s/^/# /'
	if [ $rc = 3 ] && echo "$out" | grep -q 'completion status 9$'; then
		report rxe_resend_after_full_ack bug "a WRITE completed with IBV_WC_REM_INV_REQ_ERR (timeout $1, $2 s, stalls of $3 ms, $4 QP pairs)"
	elif [ $rc = 0 ]; then
		report rxe_resend_after_full_ack clean "every WRITE of $4 QP pairs completed (timeout $1, $2 s, stalls of $3 ms)"
	else
		report rxe_resend_after_full_ack error "rxe_resend exited $rc"
	fi
}

# dead_qp ROLE: fix 4's case on this side of the link.
dead_qp() {
	local gidx warn out n
	if [ "$1" = server ]; then
		gidx=$(rxe_setup rxe0 eth1 192.0.2.1/24 ffff:c000:0201)
	else
		gidx=$(rxe_setup rxe0 eth1 192.0.2.2/24 ffff:c000:0202)
	fi
	[ -n "$gidx" ] || { report dead_qp_packets_freed error "no rxe0 on eth1"; return; }
	if [ "$1" = client ]; then
		RDMA_TEST_STALL=10 /umem/bin/rxe_deadqp client rxe0 "$gidx" 192.0.2.1 18600 60 2>&1 |
			sed 's/^ *//; s/^/# /'
		return
	fi
	dmesg -c >/dev/null
	if ! out=$(/umem/bin/rxe_deadqp server rxe0 "$gidx" 18600 5 2>&1); then
		echo "$out" | sed 's/^/# /'
		report dead_qp_packets_freed error "rxe_deadqp server failed"
		return
	fi
	echo "$out" | sed 's/^/# /'
	sleep 2
	warn=$(dmesg | grep -E 'WARNING:|inconsistent lock state|BUG:' | head -n 3 | tr '\n' ' ')
	n=$(echo "$out" | sed -n 's/^rxe_deadqp: \([0-9]*\) packets received while .*/\1/p')
	if [ "${n:-0}" -le 0 ]; then
		report dead_qp_packets_freed error "no packet reached the server after its QP died"
	elif [ -n "$warn" ]; then
		report dead_qp_packets_freed bug "the server's QP died under a stream: $warn"
	else
		report dead_qp_packets_freed clean "the server's QP died under a stream, $n packets arrived for it, no warning"
	fi
}

role=$(cmdline_value umem.node || true)
if [ -n "$role" ]; then
	dead_qp "$role"
	exit 0
fi

# runs CASE: whether this boot runs CASE.
runs() {
	[ -z "$only" ] || [ "$only" = "$1" ]
}

if runs phys_vec_table_leak || runs udmabuf_segment_size || runs system_heap_segment_size; then
	if ! insmod /umem/modules/fixes_repro.ko || [ ! -w $D/import ]; then
		report module error "fixes_repro did not load or bind ivshmem"
		exit 1
	fi
	# DMA-API debugging prints only its first error unless told otherwise.
	echo 1 >/sys/kernel/debug/dma-api/all_errors
	echo 1 >/proc/sys/vm/nr_hugepages
	! runs phys_vec_table_leak || phys_vec_table_leak
	! runs udmabuf_segment_size || segments udmabuf_segment_size udmabuf 2048
	! runs system_heap_segment_size || segments system_heap_segment_size heap 4096
	rmmod fixes_repro
	echo 0 >/proc/sys/vm/nr_hugepages
fi

runs rxe_resend_after_full_ack || [ "$stage" = rxe ] || exit 0
GIDX=$(rxe_setup)
if runs rxe_resend_after_full_ack; then
	for c in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do
		echo "${c##*/} $(cat "$c")"
	done >/tmp/counters.before
	rxe_resend_after_full_ack "${RESEND_TIMEOUT:-1}" "${RESEND_SECS:-60}" "${RESEND_STALL:-4}" "${RESEND_PAIRS:-12}"
	for c in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do
		echo "${c##*/} $(cat "$c")"
	done | diff /tmp/counters.before - | sed -n 's/^+\([a-z]\)/# rxe0 counter after the stream: \1/p'
fi
if [ "$stage" = rxe ]; then
	rxe_dmabuf_mr udmabuf
	rxe_dmabuf_mr heap
fi
