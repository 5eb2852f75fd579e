#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: boots the patched kernel, runs scripts/guest/demo.sh, and shows
# its transcript, then the two-machine one (scripts/two_node.sh demo). Exits
# non-zero if any step of either fails.
set -euo pipefail
# The kernel without the test kernel's debugging (lib.sh).
export UMEM_KERNEL=fast
# The importer as the kernel build made it (CONFIG_INFINIBAND_UMEM_DMABUF_RUST=m;
# scripts/initramfs.sh); the exporter sample is built out of tree.
export UMEM_IMPORTER=kernel
. "$(dirname "$0")/lib.sh"

# Each phase's start and end and the outcome, for the run-time line of the
# README (scripts/runtimes.py --run demo).
results=$ROOT/build/demo-results
mkdir -p "$results"
export UMEM_PHASES=$results/phases.txt
: >"$UMEM_PHASES"
record_commit >"$results/commit.txt"
record_machine >"$results/machine.txt"
echo "demo failed" >"$results/verdict.txt"
phase_mark begin "make demo"
"$ROOT/scripts/kernel.sh"
"$ROOT/scripts/rdma-core.sh"
"$ROOT/scripts/module.sh"
log=$LOGDIR/demo-serial.log
"$ROOT/scripts/qemu.sh" demo "$log" quiet
echo
sed -n '/@@UMEM-GUEST-START/,/@@UMEM-GUEST-EXIT/p' "$log" | sed '1d;$d'
rc=$(sed -n 's/.*@@UMEM-GUEST-EXIT rc=\([0-9]*\)@@.*/\1/p' "$log")
python3 "$ROOT/scripts/report.py" --kunit-py "$KSRC/tools/testing/kunit/kunit.py" \
	--log "$log" --quiet >"$LOGDIR/demo-report.txt" || {
	cat "$LOGDIR/demo-report.txt"
	die "the kernel log of the demo shows a problem (serial log: $log)"
}
[ "$rc" = 0 ] || die "a demo step failed (serial log: $log)"
echo
echo "### the host: the guest's device memory is the file behind the BAR ($(basename "$ROOT/build/devmem-$(basename "$log" .log).bin"))"
python3 "$ROOT/scripts/devmem_check.py" "$ROOT/build/devmem-$(basename "$log" .log).bin" "$log" c rust ||
	die "the host does not find in the BAR what the guest wrote there"
say "demo finished; serial log: $log"
# The same across two machines (make demo-2node).
"$ROOT/scripts/two_node.sh" demo
phase_mark end "make demo"
echo "demo finished" >"$results/verdict.txt"
