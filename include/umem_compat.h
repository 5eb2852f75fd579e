/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the modules' C code names differently on the two kernels the series
 * supports, Linux 6.12 and Linux 7.3 (7.1 renamed move_notify to
 * invalidate_mappings and made it optional, 6.13 made namespaces strings,
 * 6.16 gave _ib_alloc_device() a namespace). Kbuild defines UMEM_V7 for
 * 7.x, as it passes the cfg umem_v7 to the Rust code.
 */
#ifndef UMEM_COMPAT_H
#define UMEM_COMPAT_H

#include <linux/dma-buf.h>
#include <linux/module.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>

#ifdef UMEM_V7	/* Kbuild: the kernel's VERSION is 7 */
/* An ib_device of @size bytes, never registered (the KUnit fixtures'). */
#define umem_ib_alloc_device(size) _ib_alloc_device(size, &init_net)
/* The importer callback that a move (or revocation) calls; optional. */
#define UMEM_INVALIDATE invalidate_mappings
#define UMEM_OPTIONAL_INVALIDATE 1
/* What ib_umem_dmabuf_get() returns for ops without the callback: a umem. */
#define UMEM_NO_INVALIDATE_ERR 0
/* A dynamic importer's attachment to a static exporter maps at map time. */
#define UMEM_ATTACH_MAPS_STATIC 0
#define umem_dma_buf_invalidate(dmabuf) dma_buf_invalidate_mappings(dmabuf)
#define UMEM_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
/* A zeroed allocation of the object @obj names (7.x: kzalloc_obj()). */
#define umem_kzalloc_obj(obj) kzalloc_obj(obj)
#else
#define umem_ib_alloc_device(size) _ib_alloc_device(size)
#define UMEM_INVALIDATE move_notify
#define UMEM_OPTIONAL_INVALIDATE 0
#define UMEM_NO_INVALIDATE_ERR (-EINVAL)
/* ... and maps the buffer at attach time, once (dma_buf_attach caches it). */
#define UMEM_ATTACH_MAPS_STATIC 1
#define umem_dma_buf_invalidate(dmabuf) dma_buf_move_notify(dmabuf)
#define UMEM_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#define umem_kzalloc_obj(obj) kzalloc(sizeof(obj), GFP_KERNEL)
#endif

#endif /* UMEM_COMPAT_H */
