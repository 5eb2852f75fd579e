#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# two_node.sh [SERVER_LOG CLIENT_LOG [CMDLINE...]]: boots two guests of the
# cached kernel at once, joined by a virtual Ethernet link (a QEMU dgram
# netdev pair over UDP on 127.0.0.1: no root, no host bridge), and runs the
# guest job two_node on both (scripts/guest/two_node.sh): the server's
# dma-buf MRs are written, read and sent into by the client across the
# link, on the C importer and then on the Rust one. Fails if either guest
# fails to finish; the verdict on the two serial logs is report.py's.
# TWO_NODE_BIG: the largest transfer in bytes (default 32 MiB). Without
# arguments (make two-node) it also builds what it needs and prints the
# verdict.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ $# -lt 2 ]; then
	"$ROOT/scripts/kernel.sh"
	"$ROOT/scripts/module.sh"
	slog=$LOGDIR/two-node-server-serial.log
	clog=$LOGDIR/two-node-client-serial.log
	rm -f "$slog" "$clog"
	"$0" "$slog" "$clog" || true
	exec python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
		--require-ktap --require-kmemleak --log "$slog" --log "$clog"
fi
slog=$1
clog=$2
shift 2
# Two free UDP ports, picked by the kernel.
read -r p1 p2 < <(python3 - <<'PY'
import socket
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))
PY
)
link() {	# link LOCAL_PORT REMOTE_PORT MAC: the second NIC's QEMU arguments
	printf -- '-netdev dgram,id=w0,local.type=inet,local.host=127.0.0.1,local.port=%s,%s %s' \
		"$1" "remote.type=inet,remote.host=127.0.0.1,remote.port=$2" \
		"-device virtio-net-pci,netdev=w0,mac=$3"
}
say "two machines on a virtual link (UDP ports $p1 and $p2)"
rc=0
UMEM_QEMU_ARGS=$(link "$p1" "$p2" 52:54:00:00:00:01) UMEM_TIMEOUT=${UMEM_TIMEOUT:-600} \
	"$ROOT/scripts/qemu.sh" two_node "$slog" kunit.enable=0 umem.node=server \
	"umem.two_node_big=${TWO_NODE_BIG:-33554432}" "$@" &
spid=$!
UMEM_QEMU_ARGS=$(link "$p2" "$p1" 52:54:00:00:00:02) UMEM_TIMEOUT=${UMEM_TIMEOUT:-600} \
	"$ROOT/scripts/qemu.sh" two_node "$clog" kunit.enable=0 umem.node=client \
	"umem.two_node_big=${TWO_NODE_BIG:-33554432}" "$@" || rc=1
wait $spid || rc=1
exit $rc
