// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite dmabuf_exporter_rs_ib: the exporter with ib_core's importer, as
 * an RDMA driver reaches it (C API, C test). The exporter's own suite is built
 * in Rust (tests.rs, kunit_suite!).
 */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fdtable.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/ib_verbs.h>
#include <net/net_namespace.h>

#include "dmabuf_exporter_rs.h"
#include "uapi/dmabuf_exporter_rs.h"

MODULE_IMPORT_NS("DMA_BUF");

static char *expect_importer = "any";
module_param(expect_importer, charp, 0444);
MODULE_PARM_DESC(expect_importer,
		 "Test: which importer ib_core must use: any, c (built-in) or module (registered)");

static char *desc_netdev = "eth0";
module_param(desc_netdev, charp, 0444);
MODULE_PARM_DESC(desc_netdev,
		 "Test: the network device whose rxe ib_device ib_umem_get_desc() is called on");

static int importer_notified;

/* The RDMA driver's part: drop the mapping when the exporter moves. */
static void drv_move_notify(struct dma_buf_attachment *attach)
{
	importer_notified++;
	ib_umem_dmabuf_unmap_pages(attach->importer_priv);
}

static const struct dma_buf_attach_ops drv_ops = {
	.allow_peer2peer = true,
	.invalidate_mappings = drv_move_notify,
};

/*
 * The exporter with the importer of ib_core, through its exported API, as an
 * RDMA driver uses it: whichever importer is registered (the Rust module if
 * loaded, else the built-in C code) must follow two migrations.
 */
static void importers_follow_migration(struct kunit *test)
{
	struct device *dev = kunit_device_register(test, "dmabuf_exporter_rs_ib");
	struct ib_umem_dmabuf *umem;
	struct ib_device *ibdev;
	dma_addr_t before;
	int fd, round;

	KUNIT_ASSERT_FALSE(test, IS_ERR(dev));
	KUNIT_ASSERT_EQ(test, dma_coerce_mask_and_coherent(dev, DMA_BIT_MASK(64)), 0);
	ibdev = _ib_alloc_device(sizeof(*ibdev), &init_net);
	KUNIT_ASSERT_NOT_NULL(test, ibdev);
	ibdev->dma_device = dev;
	importer_notified = 0;

	fd = dmabuf_exp_kunit_create_fd(16 * PAGE_SIZE);
	KUNIT_ASSERT_GE(test, fd, 0);
	umem = ib_umem_dmabuf_get(ibdev, PAGE_SIZE + 100, 8 * PAGE_SIZE, fd,
				  IB_ACCESS_LOCAL_WRITE, &drv_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	kunit_info(test, "importer: %s\n", umem->ops ? "registered module" : "built-in C");
	if (!strcmp(expect_importer, "c"))
		KUNIT_EXPECT_NULL(test, umem->ops);
	else if (!strcmp(expect_importer, "module"))
		KUNIT_EXPECT_NOT_NULL(test, umem->ops);

	dma_resv_lock(umem->attach->dmabuf->resv, NULL);
	KUNIT_EXPECT_EQ(test, ib_umem_dmabuf_map_pages(umem), 0);
	before = sg_dma_address(umem->umem.sgt_append.sgt.sgl);
	KUNIT_EXPECT_EQ(test, umem->umem.sgt_append.sgt.nents, 9U);
	dma_resv_unlock(umem->attach->dmabuf->resv);

	for (round = 1; round <= 2; round++) {
		KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_migrate_fd(fd, 20), 0);
		KUNIT_EXPECT_EQ(test, importer_notified, round);
		KUNIT_EXPECT_NULL(test, umem->sgt);
		dma_resv_lock(umem->attach->dmabuf->resv, NULL);
		KUNIT_EXPECT_EQ(test, ib_umem_dmabuf_map_pages(umem), 0);
		KUNIT_EXPECT_NE(test, sg_dma_address(umem->umem.sgt_append.sgt.sgl), before);
		before = sg_dma_address(umem->umem.sgt_append.sgt.sgl);
		dma_resv_unlock(umem->attach->dmabuf->resv);
	}
	ib_umem_release(&umem->umem);
	close_fd(fd);
	ib_dealloc_device(ibdev);
}

static void put_ibdev(void *arg)
{
	struct ib_device *ibdev = arg;

	put_device(ibdev->dma_device);
	ib_dealloc_device(ibdev);
}

/*
 * An ib_device whose DMA device is the one rxe on @desc_netdev maps dma-bufs
 * for (the PCI function nearest above the network device: the virtio-net
 * one), or NULL when there is no such rxe device or function. Not rxe's own
 * ib_device: rxe registers without a DMA device (rxe_dmabuf.c passes the
 * PCI function explicitly), and ib_umem_get_desc() takes the ib_device's.
 */
static struct ib_device *desc_ibdev(struct kunit *test)
{
	struct net_device *ndev = dev_get_by_name(&init_net, desc_netdev);
	struct ib_device *rxe = NULL, *ibdev = NULL;
	struct device *pci = NULL;

	if (ndev)
		rxe = ib_device_get_by_netdev(ndev, RDMA_DRIVER_RXE);
	if (rxe)
		for (pci = ndev->dev.parent; pci && !dev_is_pci(pci); pci = pci->parent)
			;
	if (pci) {
		ibdev = _ib_alloc_device(sizeof(*ibdev), &init_net);
		if (ibdev)
			ibdev->dma_device = get_device(pci);
	}
	if (rxe)
		ib_device_put(rxe);
	dev_put(ndev);
	if (ibdev && kunit_add_action_or_reset(test, put_ibdev, ibdev))
		return NULL;
	return ibdev;
}

/* The DMA address at byte @at of the table @sgt maps, or 0 past its end. */
static dma_addr_t dma_at(struct sg_table *sgt, u64 at)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_dma_sg(sgt, sg, i) {
		if (at < sg_dma_len(sg))
			return sg_dma_address(sg) + at;
		at -= sg_dma_len(sg);
	}
	return 0;
}

/*
 * ib_umem_get_desc() with a dma-buf descriptor, as RDMA core calls it for
 * buffer descriptors (mlx5's doorbell pages, CQ and QP buffers): it goes to
 * ib_umem_dmabuf_get_pinned() and so to whichever importer is registered.
 * For rxe's DMA device, the umem must come back pinned and mapped, its window
 * the pages of [addr, addr + length) at the DMA addresses the exporter gives
 * that device, writable as the access asks; a bad fd, a range beyond
 * the buffer or wrapping around, a zero length at a page boundary (one
 * inside a page still covers that page, in C as in Rust), an unknown flag
 * or type must fail with the
 * built-in importer's errno and leave nothing attached. The boot runs this
 * once with each importer registered (exporter+rust-importer,
 * exporter+c-importer), each against the same expectations.
 */
static void get_desc_pins_a_dmabuf_descriptor(struct kunit *test)
{
	const u64 size = 16 * PAGE_SIZE, addr = PAGE_SIZE + 100, len = 8 * PAGE_SIZE;
	struct ib_uverbs_buffer_desc desc = {
		.type = IB_UVERBS_BUFFER_TYPE_DMABUF, .addr = addr, .length = len,
	};
	const struct {
		const char *what;
		s32 fd;
		u32 type, flags;
		u64 addr, length;
		int err;
	} bad[] = {
		{ "a bad fd", -1, IB_UVERBS_BUFFER_TYPE_DMABUF, 0, addr, len, -EBADF },
		{ "a range past the end", 0, IB_UVERBS_BUFFER_TYPE_DMABUF, 0, size - PAGE_SIZE,
		  2 * PAGE_SIZE, -EINVAL },
		{ "a wrapping range", 0, IB_UVERBS_BUFFER_TYPE_DMABUF, 0, ULONG_MAX - 10, len,
		  -EINVAL },
		{ "a zero length", 0, IB_UVERBS_BUFFER_TYPE_DMABUF, 0, PAGE_SIZE, 0, -EINVAL },
		{ "an unknown flag", 0, IB_UVERBS_BUFFER_TYPE_DMABUF, 1, addr, len, -EINVAL },
		{ "an unknown type", 0, IB_UVERBS_BUFFER_TYPE_VA + 1, 0, addr, len, -EINVAL },
	};
	struct dma_buf_attachment *ref;
	struct ib_umem_dmabuf *umem_dmabuf;
	struct ib_device *ibdev;
	struct scatterlist *sg;
	struct dma_buf *dmabuf;
	struct sg_table *table;
	struct ib_umem *umem;
	int fd, access;
	unsigned int i;
	u64 at;

	ibdev = desc_ibdev(test);
	if (!ibdev)
		kunit_skip(test, "no rxe device on %s", desc_netdev);
	fd = dmabuf_exp_kunit_create_fd(size);
	KUNIT_ASSERT_GE(test, fd, 0);
	dmabuf = dma_buf_get(fd);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dmabuf));

	/* The exporter's own addresses for rxe's DMA device. */
	ref = dma_buf_attach(dmabuf, ibdev->dma_device);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ref));
	table = dma_buf_map_attachment_unlocked(ref, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(table));

	for (access = 0; access <= IB_ACCESS_LOCAL_WRITE; access += IB_ACCESS_LOCAL_WRITE) {
		desc.fd = fd;
		umem = ib_umem_get_desc(ibdev, &desc, access);
		KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(umem), "access %d: %d", access,
				       PTR_ERR_OR_ZERO(umem));
		KUNIT_EXPECT_TRUE(test, (bool)umem->is_dmabuf);
		umem_dmabuf = to_ib_umem_dmabuf(umem);
		kunit_info(test, "access %d, importer: %s\n", access,
			   umem_dmabuf->ops ? "registered module" : "built-in C");
		if (!strcmp(expect_importer, "c"))
			KUNIT_EXPECT_NULL(test, umem_dmabuf->ops);
		else if (!strcmp(expect_importer, "module"))
			KUNIT_EXPECT_NOT_NULL(test, umem_dmabuf->ops);
		KUNIT_EXPECT_PTR_EQ(test, umem->ibdev, ibdev);
		KUNIT_EXPECT_EQ(test, umem->address, addr);
		KUNIT_EXPECT_EQ(test, umem->length, len);
		KUNIT_EXPECT_EQ(test, (bool)umem->writable, access != 0);
		KUNIT_EXPECT_TRUE(test, (bool)umem_dmabuf->pinned);
		KUNIT_EXPECT_NOT_NULL(test, umem_dmabuf->sgt);
		KUNIT_EXPECT_PTR_EQ(test, umem_dmabuf->attach->dev, ibdev->dma_device);
		/* The window: whole pages from addr's page, at the exporter's addresses. */
		at = ALIGN_DOWN(addr, PAGE_SIZE);
		for_each_sgtable_dma_sg(&umem->sgt_append.sgt, sg, i) {
			KUNIT_EXPECT_EQ_MSG(test, sg_dma_address(sg), dma_at(table, at),
					    "entry %u", i);
			at += sg_dma_len(sg);
		}
		KUNIT_EXPECT_EQ(test, at, ALIGN(addr + len, PAGE_SIZE));
		ib_umem_release(umem);
	}

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		desc.fd = bad[i].fd < 0 ? bad[i].fd : fd;
		desc.type = bad[i].type;
		desc.flags = bad[i].flags;
		desc.addr = bad[i].addr;
		desc.length = bad[i].length;
		umem = ib_umem_get_desc(ibdev, &desc, IB_ACCESS_LOCAL_WRITE);
		KUNIT_EXPECT_EQ_MSG(test, PTR_ERR_OR_ZERO(umem), bad[i].err, "%s",
				    bad[i].what);
		if (!IS_ERR(umem))
			ib_umem_release(umem);
	}

	dma_buf_unmap_attachment_unlocked(ref, table, DMA_BIDIRECTIONAL);
	dma_buf_detach(dmabuf, ref);
	/* Nothing of the umems is left on the buffer. */
	KUNIT_EXPECT_TRUE(test, list_empty(&dmabuf->attachments));
	dma_buf_put(dmabuf);
	close_fd(fd);
}

/*
 * The UAPI structures are written twice, in include/uapi (for C and
 * userspace) and in uapi.rs: every field offset and structure size must be
 * the same, in the header's order.
 */
static const size_t uapi_layout[] = {
	offsetof(struct dmabuf_exp_create, version),
	offsetof(struct dmabuf_exp_create, flags),
	offsetof(struct dmabuf_exp_create, size),
	offsetof(struct dmabuf_exp_create, chunks),
	offsetof(struct dmabuf_exp_create, nchunks),
	offsetof(struct dmabuf_exp_create, fd),
	sizeof(struct dmabuf_exp_create),
	offsetof(struct dmabuf_exp_migrate, version),
	offsetof(struct dmabuf_exp_migrate, fd),
	offsetof(struct dmabuf_exp_migrate, delay_ms),
	offsetof(struct dmabuf_exp_migrate, flags),
	sizeof(struct dmabuf_exp_migrate),
	offsetof(struct dmabuf_exp_stats, version),
	offsetof(struct dmabuf_exp_stats, fd),
	offsetof(struct dmabuf_exp_stats, attachments),
	offsetof(struct dmabuf_exp_stats, pins),
	offsetof(struct dmabuf_exp_stats, mappings),
	offsetof(struct dmabuf_exp_stats, maps),
	offsetof(struct dmabuf_exp_stats, migrations),
	offsetof(struct dmabuf_exp_stats, move_notifies),
	offsetof(struct dmabuf_exp_stats, p2p_maps),
	offsetof(struct dmabuf_exp_stats, unrestored),
	offsetof(struct dmabuf_exp_stats, placement),
	offsetof(struct dmabuf_exp_stats, reserved),
	offsetof(struct dmabuf_exp_stats, devmem_offset),
	sizeof(struct dmabuf_exp_stats),
	offsetof(struct dmabuf_exp_inject, version),
	offsetof(struct dmabuf_exp_inject, fd),
	offsetof(struct dmabuf_exp_inject, pin_errno),
	offsetof(struct dmabuf_exp_inject, map_errno),
	sizeof(struct dmabuf_exp_inject),
	offsetof(struct dmabuf_exp_rw, version),
	offsetof(struct dmabuf_exp_rw, fd),
	offsetof(struct dmabuf_exp_rw, offset),
	offsetof(struct dmabuf_exp_rw, len),
	offsetof(struct dmabuf_exp_rw, data),
	offsetof(struct dmabuf_exp_rw, flags),
	offsetof(struct dmabuf_exp_rw, reserved),
	sizeof(struct dmabuf_exp_rw),
	offsetof(struct dmabuf_exp_revoke, version),
	offsetof(struct dmabuf_exp_revoke, fd),
	offsetof(struct dmabuf_exp_revoke, flags),
	offsetof(struct dmabuf_exp_revoke, reserved),
	offsetof(struct dmabuf_exp_revoke, wait_ns),
	offsetof(struct dmabuf_exp_revoke, unmapped),
	sizeof(struct dmabuf_exp_revoke),
	offsetof(struct dmabuf_exp_latency, version),
	offsetof(struct dmabuf_exp_latency, fd),
	offsetof(struct dmabuf_exp_latency, count),
	offsetof(struct dmabuf_exp_latency, reserved),
	offsetof(struct dmabuf_exp_latency, unmap_ns),
	offsetof(struct dmabuf_exp_latency, remap_ns),
	offsetof(struct dmabuf_exp_latency, unmaps),
	offsetof(struct dmabuf_exp_latency, remaps),
	offsetof(struct dmabuf_exp_latency, dropped),
	sizeof(struct dmabuf_exp_latency),
};

static void uapi_layout_matches_c(struct kunit *test)
{
	u32 i;

	for (i = 0; i < ARRAY_SIZE(uapi_layout); i++)
		KUNIT_EXPECT_EQ_MSG(test, dmabuf_exp_uapi_layout(i), (s64)uapi_layout[i],
				    "entry %u of the layout", i);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_uapi_layout(i), -1);
}

static struct kunit_case dmabuf_exp_ib_cases[] = {
	KUNIT_CASE(importers_follow_migration),
	KUNIT_CASE(get_desc_pins_a_dmabuf_descriptor),
	KUNIT_CASE(uapi_layout_matches_c),
	{}
};

static struct kunit_suite dmabuf_exp_ib_suite = {
	.name = "dmabuf_exporter_rs_ib",
	.test_cases = dmabuf_exp_ib_cases,
};

kunit_test_suites(&dmabuf_exp_ib_suite);
