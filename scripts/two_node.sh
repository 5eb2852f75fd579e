#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# two_node.sh [SERVER_LOG CLIENT_LOG [CMDLINE...] | demo]: boots two guests of the
# cached kernel at once, joined by a virtual Ethernet link (a QEMU dgram
# netdev pair over UDP on 127.0.0.1: no root, no host bridge), and runs the
# guest job two_node on both (scripts/guest/two_node.sh): the server's
# dma-buf MRs are written, read and sent into by the client across the
# link, on the C importer and then on the Rust one. Fails if either guest
# fails to finish; the verdict on the two serial logs is report.py's.
# Knobs: TWO_NODE_BIG, the largest transfer in bytes (default 32 MiB);
# TWO_NODE_NETEM, tc netem's setting on both guests' side of the link, with
# commas for spaces (default loss,1%,delay,1ms,reorder,1%; empty: a
# clean link; the fast kernel has no netem); TWO_NODE_LOSSY, the importers
# of the lossy phase (default rust,c); TWO_NODE_TESTS, the importers of the
# tests on the clean link (default c,rust; "none"); TWO_NODE_BENCH=ROUNDS,MS, the
# client's numbers across the wire (default none). Without arguments (make
# two-node, make two-node-bench) it also builds what it needs and prints the
# verdict, and the numbers' report when TWO_NODE_BENCH is set.
# TWO_NODE_QP_TIMEOUT: rxe's retransmit timeout exponent (default 16 on the
# test kernel, 14 on the fast one).
set -euo pipefail
# make demo-2node: the fast kernel (as make demo), a clean link, a short
# transcript.
[ "${1:-}" != demo ] || export UMEM_KERNEL=fast
. "$(dirname "$0")/lib.sh"

if [ "${1:-}" = demo ]; then
	"$ROOT/scripts/kernel.sh"
	"$ROOT/scripts/module.sh"
	slog=$LOGDIR/demo-2node-server-serial.log
	clog=$LOGDIR/demo-2node-client-serial.log
	rm -f "$slog" "$clog"
	rc=0
	TWO_NODE_NETEM='' TWO_NODE_BIG=1048576 "$0" "$slog" "$clog" quiet umem.two_node_demo=1 ||
		rc=1
	echo
	echo "### two machines, 192.0.2.1 (server) and 192.0.2.2 (client), rxe on a virtual link"
	sed -n '/@@UMEM-KTAP-BEGIN two_node_demo+rust@@/,/@@UMEM-KTAP-END@@/p' "$clog" |
		grep -a '^    # [cs ]' | sed 's/^    # /  /'
	python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
		--require-ktap --log "$slog" --log "$clog" --quiet >"$LOGDIR/demo-2node-report.txt" ||
		rc=1
	[ $rc = 0 ] || { cat "$LOGDIR/demo-2node-report.txt"; die "the two-node demo failed (serial logs: $slog, $clog)"; }
	say "demo finished; serial logs: $slog, $clog"
	exit 0
fi
if [ $# -lt 2 ]; then
	"$ROOT/scripts/kernel.sh"
	"$ROOT/scripts/module.sh"
	slog=$LOGDIR/two-node-server-serial.log
	clog=$LOGDIR/two-node-client-serial.log
	rm -f "$slog" "$clog"
	"$0" "$slog" "$clog" || true
	# The fast kernel (numbers) has no kmemleak.
	leak=--require-kmemleak
	[ "$UMEM_KERNEL" = test ] || leak=
	rc=0
	python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
		--require-ktap $leak --log "$slog" --log "$clog" || rc=$?
	if [ -n "${TWO_NODE_BENCH:-}" ]; then
		commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
		git -C "$ROOT" diff --quiet HEAD -- rust samples scripts patches kernel 2>/dev/null ||
			commit="$commit+"
		rm -f "$ROOT/build/two-node-bench/results.json"
		/usr/bin/python3 "$ROOT/scripts/bench_report.py" --commit "$commit" --targets-only "$clog" \
			"$ROOT/build/two-node-bench" "$UMEM_KERNEL kernel, two guests" || rc=1
	fi
	# make two-node-bench publishes a passing run: two-node.rst's table
	# (Documentation/data/two-node-tables.rst) and the dataset it is made
	# from, which make check compares.
	if [ "${TWO_NODE_PUBLISH:-0}" = 1 ] && [ $rc = 0 ]; then
		data=$ROOT/Documentation/data
		cp "$ROOT/build/two-node-bench/results.json" "$data/two-node-results.json"
		/usr/bin/python3 "$ROOT/scripts/bench_report.py" --two-node-page \
			"$data/two-node-results.json" "$data/bench-results.json" >"$data/two-node-tables.rst"
		say "$data/two-node-tables.rst and two-node-results.json regenerated (commit $commit)"
	fi
	exit $rc
fi
slog=$1
clog=$2
shift 2
read -r p1 p2 < <(udp_port_pair)
netem=${TWO_NODE_NETEM-loss,1%,delay,1ms,reorder,1%}
say "two machines on a virtual link (UDP ports $p1 and $p2; netem: ${netem:-none})"
args=(kunit.enable=0 "umem.two_node_big=${TWO_NODE_BIG:-33554432}")
[ -z "$netem" ] || args+=("umem.two_node_netem=$netem")
[ -z "${TWO_NODE_BENCH:-}" ] || args+=("umem.two_node_bench=$TWO_NODE_BENCH")
[ -z "${TWO_NODE_LOSSY:-}" ] || args+=("umem.two_node_lossy=$TWO_NODE_LOSSY")
[ -z "${TWO_NODE_TESTS:-}" ] || args+=("umem.two_node_tests=$TWO_NODE_TESTS")
# rxe's retransmit timer, 4.096 us << N (guest/two_node.sh): 268 ms on the
# test kernel, 67 ms on the fast one, whose sender outruns the link.
qpt=${TWO_NODE_QP_TIMEOUT:-}
[ -n "$qpt" ] || [ "$UMEM_KERNEL" = test ] || qpt=14
[ -z "$qpt" ] || args+=("umem.two_node_qp_timeout=$qpt")
rc=0
UMEM_QEMU_ARGS=$(link_args "$p1" "$p2" 52:54:00:00:00:01) UMEM_TIMEOUT=${UMEM_TIMEOUT:-3600} \
	"$ROOT/scripts/qemu.sh" two_node "$slog" umem.node=server "${args[@]}" "$@" &
spid=$!
UMEM_QEMU_ARGS=$(link_args "$p2" "$p1" 52:54:00:00:00:02) UMEM_TIMEOUT=${UMEM_TIMEOUT:-3600} \
	"$ROOT/scripts/qemu.sh" two_node "$clog" umem.node=client "${args[@]}" "$@" || rc=1
wait $spid || rc=1
exit $rc
