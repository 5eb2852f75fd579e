// SPDX-License-Identifier: GPL-2.0
/* Shared fixture of the importer's KUnit suites (see umem_test.h). */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <net/net_namespace.h>

#include "umem_dmabuf_rs.h"
#include "umem_test.h"

/* The running case; KUnit runs cases one at a time. */
static struct umem_test_ctx *umem_test_cur;

static void drv_move_notify(struct dma_buf_attachment *attach)
{
	struct ib_umem_dmabuf *umem_dmabuf = attach->importer_priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	umem_test_cur->notified++;
	umem_test_cur->impl->unmap_pages(umem_dmabuf);
}

const struct dma_buf_attach_ops umem_test_drv_ops = {
	.allow_peer2peer = true,
	.invalidate_mappings = drv_move_notify,
};

const struct dma_buf_attach_ops umem_test_drv_ops_no_move = {
	.allow_peer2peer = true,
};

void umem_test_drv_revoke(void *priv)
{
	struct umem_test_ctx *ctx = priv;

	ctx->revoked++;
}

int umem_test_init(struct kunit *test)
{
	struct umem_test_ctx *ctx;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	ctx->dev = kunit_device_register(test, "umem_dmabuf_rs_test");
	KUNIT_ASSERT_FALSE(test, IS_ERR(ctx->dev));
	KUNIT_ASSERT_EQ(test, dma_coerce_mask_and_coherent(ctx->dev, DMA_BIT_MASK(64)), 0);
	ctx->ibdev = _ib_alloc_device(sizeof(struct ib_device), &init_net);
	KUNIT_ASSERT_NOT_NULL(test, ctx->ibdev);
	ctx->ibdev->dma_device = ctx->dev;
	ctx->impl = test->param_value ?
		*(const struct ib_umem_dmabuf_ops *const *)test->param_value :
		&umem_rs_ops;
	test->priv = ctx;
	umem_test_cur = ctx;
	return 0;
}

void umem_test_exit(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;

	if (ctx && ctx->ibdev)
		ib_dealloc_device(ctx->ibdev);
	umem_test_cur = NULL;
}

static void umem_test_free_ibdev(void *ibdev)
{
	ib_dealloc_device(ibdev);
}

struct ib_device *umem_test_ibdev(struct kunit *test)
{
	struct ib_device *ibdev;
	struct device *dev;

	dev = kunit_device_register(test, "umem_dmabuf_rs_abs");
	if (IS_ERR(dev) || dma_coerce_mask_and_coherent(dev, DMA_BIT_MASK(64)))
		return NULL;
	ibdev = _ib_alloc_device(sizeof(*ibdev), &init_net);
	if (!ibdev)
		return NULL;
	ibdev->dma_device = dev;
	if (kunit_add_action_or_reset(test, umem_test_free_ibdev, ibdev))
		return NULL;
	return ibdev;
}
