// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite dmabuf_exporter_rs_devmem: buffers in device memory (the BAR
 * of an ivshmem-plain device, exported peer-to-peer like GPU VRAM) through
 * ib_core's importer, whichever is registered (the module is loaded once
 * with the Rust importer and once with the built-in C one).
 *
 * The importing devices: the NIC (virtio-net), behind the same PCIe switch
 * as the ivshmem device, reaches the BAR peer-to-peer; the host bridge,
 * whose path to the BAR crosses the root complex, does not; a KUnit device
 * is no PCI function at all.
 */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fdtable.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <net/net_namespace.h>

#include "dmabuf_exporter_rs.h"

static bool require_devmem;
module_param(require_devmem, bool, 0444);
MODULE_PARM_DESC(require_devmem,
		 "Test: fail, rather than skip, the device-memory cases without an ivshmem device");

#define VIRTIO_NET_MODERN_ID	0x1041
#define BUF_PAGES		16

enum { STAT_PLACEMENT, STAT_P2P_MAPS, STAT_UNRESTORED, STAT_MIGRATIONS, STAT_MAPPINGS };

static int notified;

static void devmem_invalidate(struct dma_buf_attachment *attach)
{
	notified++;
	ib_umem_dmabuf_unmap_pages(attach->importer_priv);
}

static const struct dma_buf_attach_ops devmem_ops = {
	.allow_peer2peer = true,
	.invalidate_mappings = devmem_invalidate,
};

/*
 * The table an importer hands back when it unmaps. With CONFIG_DMABUF_DEBUG
 * the core gives importers a copy of the exporter's table, so the exporter
 * never sees what the importer trimmed: a kprobe on
 * dma_buf_unmap_attachment() records the table the importer gives back
 * (first entries' lengths, first address) for this suite's attachments.
 */
static struct {
	int n;
	unsigned int len[4];
	dma_addr_t first;
} handed_back;

#ifdef CONFIG_KPROBES
static int unmap_probe(struct kprobe *kp, struct pt_regs *regs)
{
	struct dma_buf_attachment *attach = (void *)regs_get_kernel_argument(regs, 0);
	struct sg_table *sgt = (void *)regs_get_kernel_argument(regs, 1);
	struct scatterlist *sg;
	unsigned int i;

	if (!attach || IS_ERR_OR_NULL(sgt) || attach->importer_ops != &devmem_ops)
		return 0;
	handed_back.n = 0;
	handed_back.first = sg_dma_address(sgt->sgl);
	for_each_sgtable_dma_sg(sgt, sg, i) {
		if (i < ARRAY_SIZE(handed_back.len))
			handed_back.len[i] = sg_dma_len(sg);
		handed_back.n++;
	}
	return 0;
}

static struct kprobe unmap_kp;

static int devmem_suite_init(struct kunit_suite *suite)
{
	/* A kprobe is registered anew from its symbol name only. */
	unmap_kp = (struct kprobe){
		.symbol_name = "dma_buf_unmap_attachment",
		.pre_handler = unmap_probe,
	};
	return register_kprobe(&unmap_kp);
}

static void devmem_suite_exit(struct kunit_suite *suite)
{
	unregister_kprobe(&unmap_kp);
}
#else
static int devmem_suite_init(struct kunit_suite *suite)
{
	return 0;
}

static void devmem_suite_exit(struct kunit_suite *suite)
{
}
#endif

struct devmem_ctx {
	u64 bus, len;
	struct pci_dev *nic;
	struct ib_device *near;	/* DMA device: the NIC */
	struct ib_device *far;	/* DMA device: the host bridge */
	struct ib_device *plain;	/* DMA device: a KUnit device */
	struct pci_dev *bridge;
};

static int devmem_init(struct kunit *test)
{
	struct devmem_ctx *ctx;
	struct device *dev;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;
	ctx->bus = dmabuf_exp_kunit_devmem_range(false);
	ctx->len = dmabuf_exp_kunit_devmem_range(true);
	ctx->nic = pci_get_device(PCI_VENDOR_ID_REDHAT_QUMRANET, VIRTIO_NET_MODERN_ID, NULL);
	ctx->bridge = pci_get_domain_bus_and_slot(0, 0, PCI_DEVFN(0, 0));
	if (!ctx->len || !ctx->nic || !ctx->bridge) {
		if (require_devmem)
			KUNIT_FAIL_AND_ABORT(test, "no device memory (%llu B), NIC or host bridge",
					     ctx->len);
		kunit_skip(test, "no ivshmem device, virtio-net NIC or host bridge");
	}
	ctx->near = _ib_alloc_device(sizeof(*ctx->near), &init_net);
	ctx->far = _ib_alloc_device(sizeof(*ctx->far), &init_net);
	ctx->plain = _ib_alloc_device(sizeof(*ctx->plain), &init_net);
	KUNIT_ASSERT_NOT_NULL(test, ctx->near);
	KUNIT_ASSERT_NOT_NULL(test, ctx->far);
	KUNIT_ASSERT_NOT_NULL(test, ctx->plain);
	ctx->near->dma_device = &ctx->nic->dev;
	ctx->far->dma_device = &ctx->bridge->dev;
	dev = kunit_device_register(test, "dmabuf_exporter_rs_devmem");
	KUNIT_ASSERT_FALSE(test, IS_ERR(dev));
	KUNIT_ASSERT_EQ(test, dma_coerce_mask_and_coherent(dev, DMA_BIT_MASK(64)), 0);
	ctx->plain->dma_device = dev;
	notified = 0;
	return 0;
}

static void devmem_exit(struct kunit *test)
{
	struct devmem_ctx *ctx = test->priv;

	if (!ctx)
		return;
	if (ctx->near)
		ib_dealloc_device(ctx->near);
	if (ctx->far)
		ib_dealloc_device(ctx->far);
	if (ctx->plain)
		ib_dealloc_device(ctx->plain);
	pci_dev_put(ctx->nic);
	pci_dev_put(ctx->bridge);
}

static bool in_bar(const struct devmem_ctx *ctx, dma_addr_t addr, unsigned int len)
{
	return addr >= ctx->bus && addr + len <= ctx->bus + ctx->len;
}

/* Maps @umem (lock held inside); counts its window's entries in the BAR. */
static int map_count_in_bar(struct kunit *test, struct ib_umem_dmabuf *umem,
			    unsigned int *in, size_t *bytes)
{
	struct devmem_ctx *ctx = test->priv;
	struct scatterlist *sg;
	unsigned int i;
	int ret;

	*in = 0;
	*bytes = 0;
	dma_resv_lock(umem->attach->dmabuf->resv, NULL);
	ret = ib_umem_dmabuf_map_pages(umem);
	if (!ret) {
		for_each_sg(umem->umem.sgt_append.sgt.sgl, sg,
			    umem->umem.sgt_append.sgt.nents, i) {
			if (in_bar(ctx, sg_dma_address(sg), sg_dma_len(sg)))
				(*in)++;
			*bytes += sg_dma_len(sg);
		}
	}
	dma_resv_unlock(umem->attach->dmabuf->resv);
	return ret;
}

static void unmap(struct ib_umem_dmabuf *umem)
{
	dma_resv_lock(umem->attach->dmabuf->resv, NULL);
	ib_umem_dmabuf_unmap_pages(umem);
	dma_resv_unlock(umem->attach->dmabuf->resv);
}

/*
 * A NIC that reaches the BAR peer-to-peer gets bus addresses in it, the
 * window trimmed out of the chunks' entries (4 + 8 + 4 pages; the window is
 * pages 1 to 9: three pages of the first entry, six of the second), and the
 * table back as it was made.
 */
static void p2p_table_holds_bar_bus_addresses(struct kunit *test)
{
	struct devmem_ctx *ctx = test->priv;
	struct ib_umem_dmabuf *umem;
	struct scatterlist *first, *last;
	dma_addr_t mapped;
	unsigned int in;
	size_t bytes;
	int fd;

	fd = dmabuf_exp_kunit_create_devmem_fd(BUF_PAGES * PAGE_SIZE, 1);
	KUNIT_ASSERT_GE(test, fd, 0);
	umem = ib_umem_dmabuf_get(ctx->near, PAGE_SIZE + 100, 8 * PAGE_SIZE, fd,
				  IB_ACCESS_LOCAL_WRITE, &devmem_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	KUNIT_EXPECT_TRUE(test, umem->attach->peer2peer);
	KUNIT_EXPECT_EQ(test, map_count_in_bar(test, umem, &in, &bytes), 0);
	KUNIT_EXPECT_EQ(test, umem->umem.sgt_append.sgt.nents, 2U);
	KUNIT_EXPECT_EQ(test, in, 2U);
	KUNIT_EXPECT_EQ(test, bytes, 9 * PAGE_SIZE);
	first = umem->umem.sgt_append.sgt.sgl;
	last = sg_next(first);
	KUNIT_EXPECT_EQ(test, sg_dma_len(first), 3 * PAGE_SIZE);
	KUNIT_EXPECT_TRUE(test, last && sg_dma_len(last) == 6 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, (sg_dma_address(first) - ctx->bus) % PAGE_SIZE, 0);
	mapped = sg_dma_address(first);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_PLACEMENT), 1);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_P2P_MAPS), 1);
	handed_back.n = -1;
	unmap(umem);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_MAPPINGS), 0);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_UNRESTORED), 0);
	/* Given back whole: 4 + 8 + 4 pages, from the first chunk's start. */
	if (IS_ENABLED(CONFIG_KPROBES)) {
		KUNIT_EXPECT_EQ(test, handed_back.n, 3);
		KUNIT_EXPECT_EQ(test, handed_back.len[0], 4 * PAGE_SIZE);
		KUNIT_EXPECT_EQ(test, handed_back.len[1], 8 * PAGE_SIZE);
		KUNIT_EXPECT_EQ(test, handed_back.len[2], 4 * PAGE_SIZE);
		KUNIT_EXPECT_EQ(test, handed_back.first, mapped - PAGE_SIZE);
	}
	ib_umem_release(&umem->umem);
	close_fd(fd);
}

/*
 * An importer whose device cannot reach the BAR moves the buffer to system
 * memory when it maps it: the peer-to-peer importer is told, the contents
 * move along, and from then on both get system memory.
 */
static void non_p2p_importer_moves_buffer_to_system(struct kunit *test)
{
	struct devmem_ctx *ctx = test->priv;
	struct ib_umem_dmabuf *p2p, *plain;
	size_t len = BUF_PAGES * PAGE_SIZE, bytes;
	unsigned int in;
	int fd;

	fd = dmabuf_exp_kunit_create_devmem_fd(len, 0);
	KUNIT_ASSERT_GE(test, fd, 0);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_pattern(fd, 7, len, false), 0);
	p2p = ib_umem_dmabuf_get(ctx->near, 0, len, fd, IB_ACCESS_LOCAL_WRITE, &devmem_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(p2p));
	plain = ib_umem_dmabuf_get(ctx->plain, 0, len, fd, IB_ACCESS_LOCAL_WRITE, &devmem_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(plain));
	KUNIT_EXPECT_EQ(test, map_count_in_bar(test, p2p, &in, &bytes), 0);
	KUNIT_EXPECT_EQ(test, in, BUF_PAGES);

	notified = 0;
	KUNIT_EXPECT_EQ(test, map_count_in_bar(test, plain, &in, &bytes), 0);
	KUNIT_EXPECT_EQ(test, in, 0U);
	KUNIT_EXPECT_EQ(test, bytes, len);
	KUNIT_EXPECT_GE(test, notified, 1);
	KUNIT_EXPECT_NULL(test, p2p->sgt);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_PLACEMENT), 0);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_MIGRATIONS), 1);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_pattern(fd, 7, len, true), 0);

	/* The peer-to-peer importer maps system memory now. */
	KUNIT_EXPECT_EQ(test, map_count_in_bar(test, p2p, &in, &bytes), 0);
	KUNIT_EXPECT_EQ(test, in, 0U);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_P2P_MAPS), 1);

	/* Back into device memory on demand: both are told, the bytes move. */
	notified = 0;
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_place_fd(fd, true), 0);
	KUNIT_EXPECT_EQ(test, notified, 2);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_PLACEMENT), 1);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_pattern(fd, 7, len, true), 0);
	KUNIT_EXPECT_EQ(test, map_count_in_bar(test, p2p, &in, &bytes), 0);
	KUNIT_EXPECT_EQ(test, in, BUF_PAGES);
	unmap(p2p);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_UNRESTORED), 0);
	ib_umem_release(&plain->umem);
	ib_umem_release(&p2p->umem);
	close_fd(fd);
}

/*
 * The host bridge is a PCI function, but its path to the BAR crosses the
 * root complex, which the P2P distance check does not allow: it gets
 * system memory.
 */
static void far_pci_device_gets_system_memory(struct kunit *test)
{
	struct devmem_ctx *ctx = test->priv;
	struct ib_umem_dmabuf *umem;
	size_t len = 4 * PAGE_SIZE, bytes;
	unsigned int in;
	int fd;

	fd = dmabuf_exp_kunit_create_devmem_fd(len, 0);
	KUNIT_ASSERT_GE(test, fd, 0);
	umem = ib_umem_dmabuf_get(ctx->far, 0, len, fd, IB_ACCESS_LOCAL_WRITE, &devmem_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	KUNIT_EXPECT_EQ(test, map_count_in_bar(test, umem, &in, &bytes), 0);
	KUNIT_EXPECT_EQ(test, in, 0U);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_PLACEMENT), 0);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_P2P_MAPS), 0);
	ib_umem_release(&umem->umem);
	close_fd(fd);
}

/*
 * Pinned by an importer that reaches it, a buffer stays in device memory:
 * a move on demand and a pin by an importer that would need one fail with
 * EBUSY; once unpinned it moves.
 */
static void pinned_in_devmem_refuses_to_move(struct kunit *test)
{
	struct devmem_ctx *ctx = test->priv;
	struct ib_umem_dmabuf *pinned, *other;
	size_t len = 4 * PAGE_SIZE;
	int fd;

	fd = dmabuf_exp_kunit_create_devmem_fd(len, 0);
	KUNIT_ASSERT_GE(test, fd, 0);
	pinned = ib_umem_dmabuf_get_pinned_with_dma_device(ctx->near, &ctx->nic->dev, 0,
							   len, fd, IB_ACCESS_LOCAL_WRITE);
	KUNIT_ASSERT_FALSE(test, IS_ERR(pinned));
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_PLACEMENT), 1);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_place_fd(fd, false), -EBUSY);
	other = ib_umem_dmabuf_get_pinned_with_dma_device(ctx->plain, ctx->plain->dma_device,
							  0, len, fd, IB_ACCESS_LOCAL_WRITE);
	KUNIT_EXPECT_TRUE(test, IS_ERR(other));
	if (IS_ERR(other))
		KUNIT_EXPECT_EQ(test, PTR_ERR(other), -EBUSY);
	else
		ib_umem_release(&other->umem);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_PLACEMENT), 1);
	ib_umem_release(&pinned->umem);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_place_fd(fd, false), 0);
	KUNIT_EXPECT_EQ(test, dmabuf_exp_kunit_stat(fd, STAT_PLACEMENT), 0);
	close_fd(fd);
}

static struct kunit_case devmem_cases[] = {
	KUNIT_CASE(p2p_table_holds_bar_bus_addresses),
	KUNIT_CASE(non_p2p_importer_moves_buffer_to_system),
	KUNIT_CASE(far_pci_device_gets_system_memory),
	KUNIT_CASE(pinned_in_devmem_refuses_to_move),
	{}
};

static struct kunit_suite devmem_suite = {
	.name = "dmabuf_exporter_rs_devmem",
	.suite_init = devmem_suite_init,
	.suite_exit = devmem_suite_exit,
	.init = devmem_init,
	.exit = devmem_exit,
	.test_cases = devmem_cases,
};

kunit_test_suites(&devmem_suite);
