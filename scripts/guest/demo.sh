# SPDX-License-Identifier: GPL-2.0
# Guest side of `make demo`: a short transcript of what the project does.
set -e
step() { echo; echo "### $*"; }

step "kernel"
uname -r
step "dma-buf move notification and debug support in this kernel"
ls /sys/kernel/debug/dma_buf/
step "loading the Rust importer module (umem_dmabuf_rs.ko)"
insmod /umem/modules/umem_dmabuf_rs.ko
grep umem_dmabuf_rs /proc/modules
dmesg | grep -E 'umem_dmabuf_rs: |# umem_dmabuf_rs|ok [0-9]+ umem_dmabuf_rs' | sed 's/^\[[ 0-9.]*\] //'
step "unloading it"
rmmod umem_dmabuf_rs
echo "module unloaded"
