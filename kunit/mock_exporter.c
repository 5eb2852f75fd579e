// SPDX-License-Identifier: GPL-2.0
/*
 * Mock dma-buf exporter for the KUnit tests (see umem_mock_exporter.h).
 *
 * The tables it maps carry synthetic DMA addresses and no pages: an importer
 * must only read DMA addresses and lengths, and nothing here is ever DMA'd to.
 */
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/dma-resv.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "umem_mock_exporter.h"

MODULE_IMPORT_NS("DMA_BUF");

u64 umem_mock_addr(struct umem_mock_exp *exp, u32 i)
{
	u64 addr = exp->base;
	u32 j;

	for (j = 0; j < i; j++)
		addr += exp->lens[j] + exp->gap;
	return addr;
}

/* A table of the buffer's entries at their current DMA addresses. */
static struct sg_table *mock_build(struct umem_mock_exp *exp)
{
	struct scatterlist *sg;
	struct sg_table *sgt;
	u64 addr = exp->base;
	int i, ret;

	sgt = kzalloc_obj(*sgt);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, exp->nents, GFP_KERNEL);
	if (ret) {
		kfree(sgt);
		return ERR_PTR(ret);
	}
	for_each_sgtable_dma_sg(sgt, sg, i) {
		sg_dma_address(sg) = addr;
		sg_dma_len(sg) = exp->lens[i];
		addr += exp->lens[i] + exp->gap;
	}
	return sgt;
}

static void mock_free(struct sg_table *sgt)
{
	sg_free_table(sgt);
	kfree(sgt);
}

/* An attachment's own table, built at attach when exp->prebuild is set. */
struct mock_prebuilt {
	struct sg_table *sgt;
	struct scatterlist *last;
	u64 last_addr;
	bool busy;
};

static int mock_attach(struct dma_buf *dmabuf, struct dma_buf_attachment *a)
{
	struct umem_mock_exp *exp = dmabuf->priv;
	struct mock_prebuilt *pre;
	struct scatterlist *sg;
	int i;

	if (exp->prebuild) {
		pre = kzalloc_obj(*pre);
		if (!pre)
			return -ENOMEM;
		pre->sgt = mock_build(exp);
		if (IS_ERR(pre->sgt)) {
			i = PTR_ERR(pre->sgt);
			kfree(pre);
			return i;
		}
		for_each_sgtable_dma_sg(pre->sgt, sg, i)
			pre->last = sg;
		pre->last_addr = umem_mock_addr(exp, exp->nents - 1);
		a->priv = pre;
	}
	atomic_inc(&exp->attached);
	if (exp->notify_in_attach && a->importer_ops &&
	    a->importer_ops->invalidate_mappings) {
		dma_resv_lock(dmabuf->resv, NULL);
		a->importer_ops->invalidate_mappings(a);
		dma_resv_unlock(dmabuf->resv);
	}
	return 0;
}

static void mock_detach(struct dma_buf *dmabuf, struct dma_buf_attachment *a)
{
	struct umem_mock_exp *exp = dmabuf->priv;
	struct mock_prebuilt *pre = a->priv;

	if (pre) {
		mock_free(pre->sgt);
		kfree(pre);
	}
	atomic_inc(&exp->detached);
}

static int mock_pin(struct dma_buf_attachment *attach)
{
	struct umem_mock_exp *exp = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	atomic_inc(&exp->pin_calls);
	if (exp->fail_pin)
		return exp->fail_pin;
	atomic_inc(&exp->pinned);
	return 0;
}

static void mock_unpin(struct dma_buf_attachment *attach)
{
	struct umem_mock_exp *exp = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	atomic_inc(&exp->unpinned);
}

static struct sg_table *mock_map(struct dma_buf_attachment *attach,
				 enum dma_data_direction dir)
{
	struct umem_mock_exp *exp = attach->dmabuf->priv;
	struct sg_table *sgt;

	if (exp->dynamic)
		dma_resv_assert_held(attach->dmabuf->resv);
	atomic_inc(&exp->map_calls);
	if (exp->fail_map)
		return ERR_PTR(exp->fail_map);
	if (attach->priv) {
		struct mock_prebuilt *pre = attach->priv;

		/* The attachment's table, one mapping of it at a time. */
		if (pre->busy)
			return ERR_PTR(-EBUSY);
		pre->busy = true;
		atomic_inc(&exp->mapped);
		return pre->sgt;
	}
	sgt = mock_build(exp);
	if (!IS_ERR(sgt))
		atomic_inc(&exp->mapped);
	return sgt;
}

/*
 * Whether @sgt holds the buffer's entries as the exporter mapped them. Of a
 * prebuilt table (@pre) only the first and the last entry are compared: an
 * importer mapping the whole buffer trims no other, and the bench gate's
 * unmap stays cheap.
 */
static bool mock_table_intact(struct umem_mock_exp *exp, struct mock_prebuilt *pre,
			      struct sg_table *sgt)
{
	struct scatterlist *sg;
	u64 addr = exp->base;
	int i;

	if (sgt->nents != exp->nents)
		return false;
	if (pre && sgt == pre->sgt)
		return sg_dma_address(sgt->sgl) == exp->base &&
		       sg_dma_len(sgt->sgl) == exp->lens[0] &&
		       sg_dma_address(pre->last) == pre->last_addr &&
		       sg_dma_len(pre->last) == exp->lens[exp->nents - 1];
	for_each_sgtable_dma_sg(sgt, sg, i) {
		if (sg_dma_len(sg) != exp->lens[i] || sg_dma_address(sg) != addr)
			return false;
		addr += exp->lens[i] + exp->gap;
	}
	return true;
}

static void mock_unmap(struct dma_buf_attachment *attach,
		       struct sg_table *sgt, enum dma_data_direction dir)
{
	struct umem_mock_exp *exp = attach->dmabuf->priv;
	struct mock_prebuilt *pre = attach->priv;

	/* The importer must give back exactly what it was given. */
	if (!mock_table_intact(exp, pre, sgt))
		atomic_inc(&exp->bad_restore);
	if (pre && sgt == pre->sgt)
		pre->busy = false;
	else
		mock_free(sgt);
	atomic_inc(&exp->unmapped);
}

static void mock_release(struct dma_buf *dmabuf)
{
	struct umem_mock_exp *exp = dmabuf->priv;

	WRITE_ONCE(exp->released, true);
}

static const struct dma_buf_ops mock_static_ops = {
	.attach = mock_attach,
	.detach = mock_detach,
	.map_dma_buf = mock_map,
	.unmap_dma_buf = mock_unmap,
	.release = mock_release,
};

static const struct dma_buf_ops mock_dynamic_ops = {
	.attach = mock_attach,
	.detach = mock_detach,
	.pin = mock_pin,
	.unpin = mock_unpin,
	.map_dma_buf = mock_map,
	.unmap_dma_buf = mock_unmap,
	.release = mock_release,
};

#if IS_ENABLED(CONFIG_DMABUF_DEBUG)
static bool mock_exports(struct dma_buf *dmabuf)
{
	return dmabuf->ops == &mock_static_ops || dmabuf->ops == &mock_dynamic_ops;
}

/*
 * With CONFIG_DMABUF_DEBUG, 7.x's dma-buf core hands importers a copy of the
 * exporter's table and frees it in dma_buf_unmap_attachment() before calling
 * the exporter: whatever an importer failed to restore never reaches
 * mock_unmap(). A probe on that function checks the copy the importer gives
 * back (all but those of the bench gate's prebuilt tables).
 */
static int mock_unmap_probe(struct kprobe *kp, struct pt_regs *regs)
{
	struct dma_buf_attachment *attach = (void *)regs_get_kernel_argument(regs, 0);
	struct sg_table *sgt = (void *)regs_get_kernel_argument(regs, 1);
	struct umem_mock_exp *exp;

	if (!attach || !sgt || !attach->dmabuf || !mock_exports(attach->dmabuf))
		return 0;
	exp = attach->dmabuf->priv;
	if (!exp->prebuild && !mock_table_intact(exp, NULL, sgt))
		atomic_inc(&exp->bad_restore);
	return 0;
}

static struct kprobe mock_unmap_kp;

int umem_mock_suite_init(struct kunit_suite *suite)
{
	int ret = -EOPNOTSUPP;

	/* A kprobe is registered anew from its symbol name only. */
	mock_unmap_kp = (struct kprobe){
		.symbol_name = "dma_buf_unmap_attachment",
		.pre_handler = mock_unmap_probe,
	};
	if (IS_ENABLED(CONFIG_KPROBES))
		ret = register_kprobe(&mock_unmap_kp);
	if (ret)
		pr_err("%s: cannot check restored tables under CONFIG_DMABUF_DEBUG: %d\n",
		       suite->name, ret);
	return ret;
}

void umem_mock_suite_exit(struct kunit_suite *suite)
{
	unregister_kprobe(&mock_unmap_kp);
}
#else
int umem_mock_suite_init(struct kunit_suite *suite)
{
	return 0;
}

void umem_mock_suite_exit(struct kunit_suite *suite)
{
}
#endif

struct umem_mock_exp *umem_mock_create(struct kunit *test, const u32 *lens,
				       u32 nents, bool dynamic)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct umem_mock_exp *exp;
	u32 i;

	exp = kunit_kzalloc(test, sizeof(*exp), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, exp);
	exp->lens = lens;
	exp->nents = nents;
	exp->dynamic = dynamic;
	exp->base = 0x100000000ULL;
	exp->gap = 16 * PAGE_SIZE;
	for (i = 0; i < nents; i++)
		exp->size += lens[i];

	info.ops = dynamic ? &mock_dynamic_ops : &mock_static_ops;
	info.size = exp->size;
	info.flags = O_RDWR;
	info.priv = exp;
	exp->dmabuf = dma_buf_export(&info);
	KUNIT_ASSERT_FALSE(test, IS_ERR(exp->dmabuf));
	return exp;
}

struct dma_buf *umem_mock_dmabuf(struct umem_mock_exp *exp)
{
	return exp->dmabuf;
}

unsigned int umem_mock_mapped(struct umem_mock_exp *exp)
{
	return atomic_read(&exp->mapped);
}

unsigned int umem_mock_unmapped(struct umem_mock_exp *exp)
{
	return atomic_read(&exp->unmapped);
}

unsigned int umem_mock_unpinned(struct umem_mock_exp *exp)
{
	return atomic_read(&exp->unpinned);
}

int umem_mock_fd(struct kunit *test, struct umem_mock_exp *exp)
{
	int fd;

	get_dma_buf(exp->dmabuf);
	fd = dma_buf_fd(exp->dmabuf, O_CLOEXEC);
	if (fd < 0)
		dma_buf_put(exp->dmabuf);
	KUNIT_ASSERT_GE(test, fd, 0);
	return fd;
}

void umem_mock_move(struct umem_mock_exp *exp)
{
	dma_resv_lock(exp->dmabuf->resv, NULL);
	/* Importers unmap the old tables during the notification... */
	dma_buf_invalidate_mappings(exp->dmabuf);
	/* ...and map the buffer at its new place afterwards, unless pinned. */
	if (atomic_read(&exp->pinned) == atomic_read(&exp->unpinned))
		exp->base += 0x10000000ULL;
	dma_resv_unlock(exp->dmabuf->resv);
}

/*
 * Everything the signalling work touches lives here, so a fence may outlive
 * the exporter (as it does when an importer failed to wait for it).
 */
struct umem_mock_fence {
	struct dma_fence base;
	spinlock_t lock;	/* the fence's own lock (dma_fence_init) */
	struct delayed_work work;
};

static const char *mock_fence_name(struct dma_fence *fence)
{
	return "umem_mock";
}

static const struct dma_fence_ops mock_fence_ops = {
	.get_driver_name = mock_fence_name,
	.get_timeline_name = mock_fence_name,
};

static void mock_fence_signal(struct work_struct *work)
{
	struct umem_mock_fence *f =
		container_of(to_delayed_work(work), struct umem_mock_fence, work);

	dma_fence_signal(&f->base);
	dma_fence_put(&f->base);
}

struct dma_fence *umem_mock_add_fence(struct umem_mock_exp *exp,
				      unsigned int delay_ms)
{
	struct umem_mock_fence *f;

	f = kzalloc_obj(*f);
	if (!f)
		return NULL;
	spin_lock_init(&f->lock);
	dma_fence_init(&f->base, &mock_fence_ops, &f->lock,
		       dma_fence_context_alloc(1), 1);
	dma_resv_lock(exp->dmabuf->resv, NULL);
	if (dma_resv_reserve_fences(exp->dmabuf->resv, 1)) {
		dma_resv_unlock(exp->dmabuf->resv);
		dma_fence_put(&f->base);
		return NULL;
	}
	dma_resv_add_fence(exp->dmabuf->resv, &f->base, DMA_RESV_USAGE_KERNEL);
	dma_resv_unlock(exp->dmabuf->resv);
	/* One reference for the caller; the initial one goes with the work. */
	dma_fence_get(&f->base);
	INIT_DELAYED_WORK(&f->work, mock_fence_signal);
	schedule_delayed_work(&f->work, msecs_to_jiffies(delay_ms));
	return &f->base;
}

void umem_mock_expect_balanced(struct kunit *test, struct umem_mock_exp *exp)
{
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->attached),
			atomic_read(&exp->detached));
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->pinned),
			atomic_read(&exp->unpinned));
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->mapped),
			atomic_read(&exp->unmapped));
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->bad_restore), 0);
}

void umem_mock_destroy(struct kunit *test, struct umem_mock_exp *exp)
{
	int i;

	/* Only the export reference may be left. */
	KUNIT_EXPECT_EQ(test, file_count(exp->dmabuf->file), 1);
	dma_buf_put(exp->dmabuf);
	/*
	 * A kernel thread's last fput is deferred; flush_delayed_fput() runs
	 * what is queued but does not wait for a release that the delayed work
	 * already took off the queue, so give that one a moment.
	 */
	flush_delayed_fput();
	for (i = 0; i < 50 && !READ_ONCE(exp->released); i++)
		msleep(20);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(exp->released));
	umem_mock_expect_balanced(test, exp);
}
