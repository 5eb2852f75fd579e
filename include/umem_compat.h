/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The dma-buf names the modules' C code uses, for both kernels the series
 * supports: Linux 6.12 and Linux 7.3 (where 7.1 renamed move_notify to
 * invalidate_mappings and 6.13 made namespaces strings). The Rust code gets
 * the same choice from the cfg umem_v7 (Kbuild).
 */
#ifndef UMEM_COMPAT_H
#define UMEM_COMPAT_H

#include <linux/dma-buf.h>
#include <linux/module.h>
#include <linux/version.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
/* An ib_device of @size bytes, never registered (the KUnit fixtures'). */
#define umem_ib_alloc_device(size) _ib_alloc_device(size, &init_net)
#else
#define umem_ib_alloc_device(size) _ib_alloc_device(size)
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
/* The arguments of a KUnit parameter generator (7.x passes the test too). */
#define UMEM_GEN_PARAMS_ARGS(prev, desc) \
	struct kunit *test, const void *prev, char *desc
#else
#define UMEM_GEN_PARAMS_ARGS(prev, desc) const void *prev, char *desc
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 1, 0)
/* The importer callback that a move (or revocation) calls; optional. */
#define UMEM_OPTIONAL_INVALIDATE 1
/* A dynamic importer's attachment to a static exporter maps at map time. */
#define UMEM_ATTACH_MAPS_STATIC 0
/* What ib_umem_dmabuf_get() returns for ops without the callback: a umem. */
#define UMEM_NO_INVALIDATE_ERR 0
#define UMEM_INVALIDATE invalidate_mappings
#define umem_dma_buf_invalidate(dmabuf) dma_buf_invalidate_mappings(dmabuf)
#define UMEM_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
#else
#define UMEM_OPTIONAL_INVALIDATE 0
/* ... and maps the buffer at attach time, once (dma_buf_attach caches it). */
#define UMEM_ATTACH_MAPS_STATIC 1
#define UMEM_NO_INVALIDATE_ERR (-EINVAL)
#define UMEM_INVALIDATE move_notify
#define umem_dma_buf_invalidate(dmabuf) dma_buf_move_notify(dmabuf)
#define UMEM_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#endif

#endif /* UMEM_COMPAT_H */
