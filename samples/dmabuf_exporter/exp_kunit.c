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
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <net/net_namespace.h>

#include "dmabuf_exporter_rs.h"
#include "uapi/dmabuf_exporter_rs.h"

MODULE_IMPORT_NS("DMA_BUF");

static char *expect_importer = "any";
module_param(expect_importer, charp, 0444);
MODULE_PARM_DESC(expect_importer,
		 "Test: which importer ib_core must use: any, c (built-in) or module (registered)");

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
	KUNIT_CASE(uapi_layout_matches_c),
	{}
};

static struct kunit_suite dmabuf_exp_ib_suite = {
	.name = "dmabuf_exporter_rs_ib",
	.test_cases = dmabuf_exp_ib_cases,
};

kunit_test_suites(&dmabuf_exp_ib_suite);
