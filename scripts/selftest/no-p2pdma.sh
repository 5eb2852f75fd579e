#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make module against a kernel without CONFIG_PCI_P2PDMA builds the importer
# alone (Kbuild leaves the exporter sample out): the production modules,
# built in a copy of the tree against the test kernel with the option
# overridden on make's command line, must give umem_dmabuf_rs.ko and no
# dmabuf_exporter_rs.ko.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$KOUT/Module.symvers" ] || die "no built test kernel in $KOUT (scripts/kernel.sh)"
copy_sources "$tmp"
if ! make -C "$KOUT" LLVM=$KLLVM M="$tmp" UMEM_KUNIT=n CONFIG_PCI_P2PDMA= -j"$(nproc)" modules \
	>"$tmp/build.log" 2>&1; then
	echo "    FAIL the modules do not build without CONFIG_PCI_P2PDMA:" >&2
	tail -n 20 "$tmp/build.log" >&2
	exit 1
fi
rc=0
if [ -e "$tmp/umem_dmabuf_rs.ko" ]; then
	echo "    ok   umem_dmabuf_rs.ko built"
else
	echo "    FAIL no umem_dmabuf_rs.ko" >&2
	rc=1
fi
if [ -e "$tmp/samples/dmabuf_exporter/dmabuf_exporter_rs.ko" ]; then
	echo "    FAIL the exporter sample was built without CONFIG_PCI_P2PDMA" >&2
	rc=1
else
	echo "    ok   no exporter sample"
fi
exit $rc
