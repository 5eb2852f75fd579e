# SPDX-License-Identifier: GPL-2.0
# Guest side of the two-machine run (scripts/two_node.sh). Two guests boot
# the same kernel, joined by a second virtual NIC (eth1); umem.node=server
# or client on the command line says which one this is. Each puts rxe on
# eth1; the server loads the test exporter and serves rxe_2node, the client
# runs the same program against it (its own MRs are ordinary ones):
#   1. the tests on the C importer, then with the Rust module loaded
#      (umem.two_node_tests: the importers, "none" for neither);
#   2. the server killed in the middle of a WRITE stream (Rust);
#   3. with loss and reordering on the link (umem.two_node_netem), the
#      tests again with less traffic, on the Rust importer, then the C one;
#   4. the numbers (umem.two_node_bench), on the C importer, then the Rust
#      one, on a clean link.
. /umem/lib.sh

role=$(cmdline_value umem.node)
# The largest transfer (default 32 MiB; make check uses less).
if big=$(cmdline_value umem.two_node_big); then
	export RXE_2NODE_BIG=$big
fi
bench=$(cmdline_value umem.two_node_bench || true)
export RXE_2NODE_BENCH=$bench
netem=$(cmdline_value umem.two_node_netem || true)
# The importers the lossy phase runs on (make check: the Rust one only).
lossy=$(cmdline_value umem.two_node_lossy || echo rust,c)
# The importers the tests on the clean link run on (make check: none; the
# lossy phase runs the same tests with less traffic).
clean=$(cmdline_value umem.two_node_tests || echo c,rust)
[ "$clean" != none ] || clean=
# rxe recovers a lost packet by a NAK (a gap in the PSNs) or by its
# retransmit timer (default 4.3 s; rxe retries forever at the retry count
# of 7). The link loses packets even without netem: on the fast kernel the
# sender outruns the receiving QEMU and the host drops datagrams its UDP
# socket has no room for (a 1 MiB transfer then took seconds), so
# two_node.sh cuts the timer there to 67 ms (14). On the test kernel it is
# 268 ms (16): a shorter one fires while the peer guest waits for a host
# core, and the retransmissions it starts slowed make check's other boots
# down several times over.
export RXE_TEST_QP_TIMEOUT=$(cmdline_value umem.two_node_qp_timeout || echo 16)

if [ "$role" = server ]; then
	GIDX=$(rxe_setup rxe0 eth1 192.0.2.1/24 ffff:c000:0201)
else
	GIDX=$(rxe_setup rxe0 eth1 192.0.2.2/24 ffff:c000:0202)
fi
step "rxe_on_the_wire_$role" test -n "$GIDX"

# rxe_counter NAME: the rxe0 port counter NAME.
rxe_counter() {
	cat /sys/class/infiniband/rxe0/ports/1/hw_counters/"$1"
}

# netem_worked COUNTER...: the link dropped packets on this side and rxe's
# COUNTERs (its recovery: NAKs sent or received, retries) moved since
# netem_on.
netem_worked() {
	local dropped sum=0 c n
	dropped=$(/umem/bin/tc -s qdisc show dev eth1 |
		sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -1)
	for c in "$@"; do
		n=$(($(rxe_counter "$c") - $(cat "/tmp/netem-$c")))
		sum=$((sum + n))
		echo "netem: rxe0 $c +$n" >&2
	done
	echo "netem: $dropped packets dropped on eth1" >&2
	[ "${dropped:-0}" -gt 0 ] && [ "$sum" -gt 0 ]
}

# netem_on / netem_off: loss and reordering on this guest's side of the
# link (tc netem; the setting comes with commas for spaces, e.g.
# loss,1%,delay,1ms,reorder,1%).
netem_on() {
	local c
	for c in out_of_seq_request rcvd_seq_err completer_retry_err; do
		rxe_counter $c >/tmp/netem-$c
	done
	# shellcheck disable=SC2046 # the words of the setting
	step "netem_on_the_wire_$role" /umem/bin/tc qdisc add dev eth1 root netem \
		$(echo "$netem" | tr , ' ')
}

netem_off() {
	if [ "$role" = server ]; then
		# The server's responder saw the gaps the loss made.
		step netem_server_recovered netem_worked out_of_seq_request
	else
		# The client's requester was NAKed for a gap or timed out and retried.
		step netem_client_recovered netem_worked rcvd_seq_err completer_retry_err
	fi
	step "netem_off_$role" /umem/bin/tc qdisc del dev eth1 root
}

# run KIND IMPORTER PORT: one rxe_2node run on both sides,
# KIND "" (the tests), lossy, bench or demo; the suites are two_node_IMPORTER
# and two_node_client_IMPORTER, or two_node_KIND_server_IMPORTER and
# two_node_KIND_IMPORTER.
run() {
	local kind=$1 imp=$2 port=$3 name
	if [ "$role" = server ]; then
		name=two_node${kind:+_${kind}_server}
		step "${name}_$imp" ktap_run "$name+$imp" \
			rxe_2node server rxe0 "$GIDX" "$imp" "$port" $kind
	else
		name=two_node_${kind:-client}
		step "${name}_$imp" ktap_run "$name+$imp" \
			rxe_2node client rxe0 "$GIDX" "$imp" 192.0.2.1 "$port" $kind
	fi
}

insmod_rust() {
	[ "$role" = client ] || step insmod_umem_dmabuf_rs insmod "$MODDIR/umem_dmabuf_rs.ko" count_calls=1
}

rmmod_rust() {
	[ "$role" = client ] || step rmmod_umem_dmabuf_rs rmmod umem_dmabuf_rs
}

[ "$role" = client ] || step insmod_exporter insmod "$MODDIR/dmabuf_exporter_rs.ko"
if cmdline_value umem.two_node_demo >/dev/null; then
	# make demo-2node: one short client run against the Rust importer.
	insmod_rust
	run demo rust 18515
	rmmod_rust
else
	case ",$clean," in *,c,*) run "" c 18515 ;; esac
	insmod_rust
	case ",$clean," in *,rust,*) run "" rust 18516 ;; esac
	if [ "$role" = server ]; then
		# Killed mid-stream (SIGKILL, on the client's word): the process's
		# MRs, attachments and buffers must go with it.
		step server_killed_mid_stream sh -c \
			'rxe_2node server rxe0 "$1" rust 18517 >/dev/null; [ $? -eq 137 ]' sh "$GIDX"
		step killed_servers_buffers_released sh -c 'for i in $(seq 600); do
			grep -q dmabuf_exporter_rs /sys/kernel/debug/dma_buf/bufinfo || exit 0
			sleep 0.1; done; exit 1'
	else
		# A short timer and a finite retry count (rxe retries forever at
		# 7), so that the QP gives up once the server's QP is gone; if the
		# server's MR goes first, the QP gets a remote access error.
		RXE_TEST_QP_TIMEOUT=14 RXE_TEST_QP_RETRY=3 run kill rust 18517
	fi
	if [ "$role" = server ]; then
		step rust_importer_created_the_umems awk \
			'$1 == "get" { n = $2 } END { exit !(n > 0) }' \
			/sys/kernel/debug/umem_dmabuf_rs/calls
	fi
	if [ -n "$netem" ]; then
		netem_on
		case ",$lossy," in *,rust,*) run lossy rust 18518 ;; esac
		rmmod_rust
		case ",$lossy," in *,c,*) run lossy c 18519 ;; esac
		netem_off
	else
		rmmod_rust
	fi
	if [ -n "$bench" ]; then
		run bench c 18520
		insmod_rust
		run bench rust 18521
		rmmod_rust
	fi
fi
if [ "$role" = server ]; then
	step no_dma_bufs_left sh -c '! grep -q dmabuf_exporter_rs /sys/kernel/debug/dma_buf/bufinfo'
	step rmmod_exporter rmmod dmabuf_exporter_rs
fi
steps_report guest_steps
