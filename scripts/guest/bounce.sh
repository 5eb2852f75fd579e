# SPDX-License-Identifier: GPL-2.0
# Guest side of the second boot of `make check`, with swiotlb=force (every
# streaming DMA mapping bounces) and KUnit disabled: rxe must refuse dma-buf
# MRs, since the bus addresses it would translate belong to bounce copies.
. /umem/lib.sh

GIDX=$(rxe_setup)
step rxe_device_with_ipv4_gid test -n "$GIDX"
step swiotlb_forced grep -q 'swiotlb=force' /proc/cmdline
step insmod_exporter insmod "$MODDIR/dmabuf_exporter_rs.ko" expect_importer=c
step rxe_bounce_refusal ktap_run rxe_bounce rxe_dmabuf_test rxe0 "$GIDX" bounce
step rmmod_exporter rmmod dmabuf_exporter_rs
steps_report guest_steps_bounce
