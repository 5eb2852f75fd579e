#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# hw-drivers.sh [--without SYMBOL]: make check's test of the hardware RDMA
# drivers with dma-buf MRs (lib.sh, HW_RDMA_DRIVERS) as UMEM_KERNEL=drivers
# compiled them: each driver's object is there, calls some
# ib_umem_dmabuf_*() function, and every one it calls is exported by the
# test kernel (its Module.symvers; ib_core is built in, so this is the link
# that a compile-only build leaves out). --without SYMBOL checks against
# that Module.symvers less SYMBOL, which must fail (make check runs both).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

exports=$(kernel_vars test && echo "$KOUT")/Module.symvers
dout=$(kernel_vars drivers && echo "$KOUT")
[ -f "$exports" ] || die "$exports missing: build the test kernel (scripts/kernel.sh)"
if [ "${1:-}" = --without ]; then
	tmp=$(mktemp)
	trap 'rm -f "$tmp"' EXIT
	awk -v s="$2" '$2 != s' "$exports" >"$tmp"
	exports=$tmp
fi
rc=0
for d in "${HW_RDMA_DRIVERS[@]}"; do
	o=$dout/drivers/infiniband/hw/$d.o
	if [ ! -f "$o" ]; then
		echo "    missing: drivers/infiniband/hw/$d.o" >&2
		rc=1
		continue
	fi
	syms=$("llvm-nm$KLLVM" -u "$o" | awk '$NF ~ /^ib_umem_dmabuf_/ { print $NF }' | sort -u)
	if [ -z "$syms" ]; then
		echo "    $d.o calls no ib_umem_dmabuf_*() function" >&2
		rc=1
	fi
	for s in $syms; do
		awk -v s="$s" '$2 == s { f = 1 } END { exit !f }' "$exports" ||
			{ echo "    $d.o calls $s, which the test kernel does not export" >&2; rc=1; }
	done
done
exit $rc
