# SPDX-License-Identifier: GPL-2.0
# Guest side of `make demo`: a short transcript of what the project does.
# Any failing step ends the demo with a non-zero status.
set -e
step() { echo; echo "### $*"; }
klog() { dmesg | sed -n "/umem-demo-mark$/,\$p" | sed '1d; s/^\[[ 0-9.]*\] //'; }

step "kernel $(uname -r), with dma-buf debugfs at /sys/kernel/debug/dma_buf"
step "loading the Rust importer module: insmod umem_dmabuf_rs.ko"
echo "umem-demo-mark" >/dev/kmsg
insmod /umem/modules/umem_dmabuf_rs.ko
grep '^umem_dmabuf_rs ' /proc/modules
step "its KUnit suites ran at load (abstractions: resv guard, sg DMA view, window)"
klog | grep -E '^umem_dmabuf_rs: |^    (not )?ok |^(not )?ok ' | sed 's/^/  /'
if klog | grep -q '^ *not ok'; then
	echo "a KUnit case failed"
	exit 1
fi
step "unloading it: rmmod umem_dmabuf_rs"
rmmod umem_dmabuf_rs
grep -q '^umem_dmabuf_rs ' /proc/modules && exit 1
echo "  unloaded"
