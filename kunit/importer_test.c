// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suites for the importer. Each case of umem_dmabuf_rs_importer runs
 * twice, against the built-in C implementation (ib_umem_dmabuf_builtin_ops)
 * and against the Rust one (umem_rs_ops), so the two are held to the same
 * expectations; umem_dmabuf_rs_diff compares them on random inputs;
 * umem_dmabuf_rs_hook checks that ib_core's exported entry points reach the
 * Rust code while it is registered and the C code when it is not.
 */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/anon_inodes.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/scatterlist.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "umem_dmabuf_rs.h"
#include "umem_mock_exporter.h"
#include "umem_test.h"

#define P PAGE_SIZE

static const struct ib_umem_dmabuf_ops *const umem_impls[] = {
	&ib_umem_dmabuf_builtin_ops,
	&umem_rs_ops,
};

static void umem_impl_desc(const struct ib_umem_dmabuf_ops *const *impl,
			   char *desc)
{
	strscpy(desc, *impl == &umem_rs_ops ? "rust" : "c",
		KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(umem_impl, umem_impls, umem_impl_desc);

static struct ib_umem_dmabuf *get_dyn(struct kunit *test,
				      struct umem_mock_exp *exp,
				      unsigned long offset, size_t size)
{
	struct umem_test_ctx *ctx = test->priv;
	struct ib_umem_dmabuf *umem;
	int fd = umem_mock_fd(test, exp);

	umem = ctx->impl->get(ctx->ibdev, ctx->dev, offset, size, fd,
			      IB_ACCESS_LOCAL_WRITE, &umem_test_drv_ops);
	close_fd(fd);
	return umem;
}

static int map_locked(struct umem_test_ctx *ctx, struct ib_umem_dmabuf *umem)
{
	int ret;

	dma_resv_lock(umem->attach->dmabuf->resv, NULL);
	ret = ctx->impl->map_pages(umem);
	dma_resv_unlock(umem->attach->dmabuf->resv);
	return ret;
}

static void unmap_locked(struct umem_test_ctx *ctx, struct ib_umem_dmabuf *umem)
{
	dma_resv_lock(umem->attach->dmabuf->resv, NULL);
	ctx->impl->unmap_pages(umem);
	dma_resv_unlock(umem->attach->dmabuf->resv);
}

/*
 * Checks the mapped window of @umem against an independent oracle: every
 * exporter entry that overlaps [ALIGN_DOWN(offset), ALIGN(offset + size))
 * contributes exactly its overlapping part, in order.
 */
static void expect_window(struct kunit *test, struct umem_mock_exp *exp,
			  struct ib_umem_dmabuf *umem)
{
	u64 start = ALIGN_DOWN(umem->umem.address, P);
	u64 end = ALIGN(umem->umem.address + umem->umem.length, P);
	struct scatterlist *sg = umem->umem.sgt_append.sgt.sgl;
	u32 n = 0, i;
	u64 cur_off = 0;

	KUNIT_ASSERT_NOT_NULL(test, umem->sgt);
	for (i = 0; i < exp->nents; cur_off += exp->lens[i], i++) {
		u64 lo = max(start, cur_off);
		u64 hi = min(end, cur_off + exp->lens[i]);

		if (lo >= hi)
			continue;
		KUNIT_ASSERT_NOT_NULL(test, sg);
		KUNIT_EXPECT_EQ_MSG(test, sg_dma_address(sg),
				    umem_mock_addr(exp, i) + (lo - cur_off),
				    "window entry %u (exporter entry %u)", n, i);
		KUNIT_EXPECT_EQ_MSG(test, (u64)sg_dma_len(sg), hi - lo,
				    "window entry %u (exporter entry %u)", n, i);
		n++;
		sg = sg_next(sg);
	}
	KUNIT_EXPECT_EQ(test, umem->umem.sgt_append.sgt.nents, n);
}

/* get + map + check + unmap + release, on a fresh exporter. */
static void window_case(struct kunit *test, const u32 *lens, u32 nents,
			bool dynamic, unsigned long offset, size_t size)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens, nents, dynamic);
	struct ib_umem_dmabuf *umem = get_dyn(test, exp, offset, size);

	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	KUNIT_EXPECT_EQ(test, umem->umem.address, offset);
	KUNIT_EXPECT_EQ(test, umem->umem.length, size);
	KUNIT_EXPECT_EQ(test, ib_umem_offset(&umem->umem), (int)(offset & ~PAGE_MASK));
	KUNIT_ASSERT_EQ(test, map_locked(ctx, umem), 0);
	expect_window(test, exp, umem);
	unmap_locked(ctx, umem);
	KUNIT_EXPECT_NULL(test, umem->sgt);
	ctx->impl->release(umem);
	umem_mock_destroy(test, exp);
}

static const u32 lens_one16[] = { 16 * P };
static const u32 lens_pairs[] = { 2 * P, 2 * P, 2 * P, 2 * P, 2 * P, 2 * P, 2 * P, 2 * P };
static const u32 lens_mixed[] = { P, 3 * P, P, 16 * P, 2 * P, P, 8 * P };

static void window_inside_one_entry(struct kunit *test)
{
	window_case(test, lens_one16, 1, true, 2 * P, 3 * P);
	window_case(test, lens_one16, 1, false, 5 * P, 10 * P);
}

static void window_spanning_entries(struct kunit *test)
{
	window_case(test, lens_pairs, 8, true, P, 14 * P);
	window_case(test, lens_mixed, 7, false, 2 * P, 28 * P);
}

static void window_on_entry_boundaries(struct kunit *test)
{
	/* Starts at entry 1 and ends at the end of entry 3 of lens_mixed. */
	window_case(test, lens_mixed, 7, true, P, 20 * P);
	window_case(test, lens_pairs, 8, false, 4 * P, 4 * P);
}

static void window_sub_page_offset(struct kunit *test)
{
	/* The sub-page offset stays in umem.address; the window is page aligned. */
	window_case(test, lens_mixed, 7, true, P + 123, 2 * P);
	window_case(test, lens_pairs, 8, false, 3 * P + 4000, 200);
}

static void window_last_page(struct kunit *test)
{
	window_case(test, lens_mixed, 7, true, 31 * P, P);
	window_case(test, lens_one16, 1, false, 15 * P + 1, P - 1);
}

/*
 * Every window edge one byte either side of a table entry's start and of the
 * start of an entry's second page, ending one byte either side of the
 * entry's end: the first byte is then the last of the previous entry or
 * page, or the second of this one, and the last byte the last of this entry
 * or the first of the next. The first and the last entry are among them,
 * and so are the buffer's first and last byte alone.
 */
static void window_one_byte_edges(struct kunit *test)
{
	const u64 total = 32 * P;
	u64 b = 0, next, starts[4], ends[2], s, e;
	u32 k, i, j, n = 0;

	for (k = 0; k < ARRAY_SIZE(lens_mixed); k++, b = next) {
		next = b + lens_mixed[k];
		starts[0] = b - 1;
		starts[1] = b + 1;
		starts[2] = b + P - 1;
		starts[3] = b + P + 1;
		ends[0] = next - 1;
		ends[1] = next + 1;
		for (i = 0; i < ARRAY_SIZE(starts); i++) {
			s = starts[i];
			/* b - 1 of the first entry wraps: past the buffer. */
			if (s >= next || s >= total)
				continue;
			for (j = 0; j < ARRAY_SIZE(ends); j++) {
				e = ends[j];
				if (e <= s || e > total)
					continue;
				window_case(test, lens_mixed, ARRAY_SIZE(lens_mixed),
					    n++ % 2, s, e - s);
			}
		}
	}
	window_case(test, lens_mixed, ARRAY_SIZE(lens_mixed), true, 0, 1);
	window_case(test, lens_mixed, ARRAY_SIZE(lens_mixed), false, total - 1, 1);
	window_case(test, lens_mixed, ARRAY_SIZE(lens_mixed), true, 1, total - 2);
	/* The loop made windows from every entry: none was skipped whole. */
	KUNIT_EXPECT_GE(test, n, 3 * ARRAY_SIZE(lens_mixed));
}

static void window_whole_buffer(struct kunit *test)
{
	window_case(test, lens_mixed, 7, true, 0, 32 * P);
	window_case(test, lens_pairs, 8, false, 0, 16 * P);
}

static void window_thousands_of_entries(struct kunit *test)
{
	const u32 n = 3000;
	u32 *lens = kunit_kcalloc(test, n, sizeof(*lens), GFP_KERNEL);
	u32 i;

	KUNIT_ASSERT_NOT_NULL(test, lens);
	for (i = 0; i < n; i++)
		lens[i] = (i % 5 == 0) ? 4 * P : P;
	window_case(test, lens, n, true, 1000 * P + 17, 1500 * P);
	window_case(test, lens, n, false, 0, 3000 * P);
}

/*
 * A buffer of 8 GiB in three entries (no memory behind it: the mock's DMA
 * addresses are made up): offsets, lengths and the walk's running total
 * pass 4 GiB, where a 32-bit variable anywhere in the window's arithmetic
 * loses the high bits (the C importer had such a truncation).
 */
static const u32 lens_big[] = { U32_MAX & PAGE_MASK, U32_MAX & PAGE_MASK, 16 * P };

static void window_beyond_4gib(struct kunit *test)
{
	const unsigned long big = U32_MAX & PAGE_MASK;

	/* Across the first boundary, just below 4 GiB, and past it. */
	window_case(test, lens_big, 3, true, big - P + 5, 2 * P);
	/* Inside the third entry, beyond 8 GiB - 8 KiB. */
	window_case(test, lens_big, 3, false, 2 * big + 3 * P, 4 * P);
	/* From the middle of the second entry to the middle of the third. */
	window_case(test, lens_big, 3, true, big + 7 * P, big - 2 * P);
}

/* The exporter gets its own table back, on static and dynamic exporters. */
static void restore_before_unmap(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	bool dynamic;

	for (dynamic = false; ; dynamic = true) {
		struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, dynamic);
		struct ib_umem_dmabuf *umem = get_dyn(test, exp, 2 * P + 5, 17 * P);

		KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
		KUNIT_ASSERT_EQ(test, map_locked(ctx, umem), 0);
		/* The window really changed the table... */
		KUNIT_EXPECT_NE(test, umem->first_sg_offset, 0UL);
		KUNIT_EXPECT_NE(test, umem->last_sg_trim, 0UL);
		unmap_locked(ctx, umem);
		ctx->impl->release(umem);
		/* ...and the exporter saw it undone (checked in its unmap). */
		KUNIT_EXPECT_EQ(test, atomic_read(&exp->bad_restore), 0);
		KUNIT_EXPECT_EQ(test, atomic_read(&exp->unmapped), 1);
		umem_mock_destroy(test, exp);
		if (dynamic)
			break;
	}
}

/*
 * The check restore_before_unmap relies on can fail: a table given back with
 * its first entry still trimmed is counted, whether the exporter's unmap sees
 * the importer's table or the dma-buf core gave the importer a copy (7.x with
 * CONFIG_DMABUF_DEBUG, where the mock's probe looks at the copy).
 */
static void unrestored_table_is_seen(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	struct dma_buf_attachment *a;
	struct sg_table *sgt;

	a = dma_buf_dynamic_attach(exp->dmabuf, ctx->dev, &umem_test_drv_ops, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a));
	dma_resv_lock(exp->dmabuf->resv, NULL);
	sgt = dma_buf_map_attachment(a, DMA_BIDIRECTIONAL);
	if (!IS_ERR(sgt)) {
		sg_dma_len(sgt->sgl) -= P;
		dma_buf_unmap_attachment(a, sgt, DMA_BIDIRECTIONAL);
	}
	dma_resv_unlock(exp->dmabuf->resv);
	dma_buf_detach(exp->dmabuf, a);
	KUNIT_EXPECT_FALSE(test, IS_ERR(sgt));
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->bad_restore), 1);
	atomic_set(&exp->bad_restore, 0);
	umem_mock_destroy(test, exp);
}

static void map_twice_maps_once(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	struct ib_umem_dmabuf *umem = get_dyn(test, exp, 0, 4 * P);
	struct sg_table *sgt;

	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	KUNIT_ASSERT_EQ(test, map_locked(ctx, umem), 0);
	sgt = umem->sgt;
	KUNIT_ASSERT_EQ(test, map_locked(ctx, umem), 0);
	KUNIT_EXPECT_PTR_EQ(test, umem->sgt, sgt);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->map_calls), 1);
	expect_window(test, exp, umem);
	ctx->impl->release(umem);
	umem_mock_destroy(test, exp);
}

static void unmap_when_unmapped(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	struct ib_umem_dmabuf *umem = get_dyn(test, exp, 0, 4 * P);

	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	unmap_locked(ctx, umem);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unmapped), 0);
	KUNIT_ASSERT_EQ(test, map_locked(ctx, umem), 0);
	unmap_locked(ctx, umem);
	unmap_locked(ctx, umem);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unmapped), 1);
	ctx->impl->release(umem);
	umem_mock_destroy(test, exp);
}

static void move_notify_then_remap(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	struct ib_umem_dmabuf *umem = get_dyn(test, exp, 3 * P, 10 * P);
	u64 before;

	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	KUNIT_ASSERT_EQ(test, map_locked(ctx, umem), 0);
	before = sg_dma_address(umem->umem.sgt_append.sgt.sgl);
	umem_mock_move(exp);
	KUNIT_EXPECT_EQ(test, ctx->notified, 1);
	KUNIT_EXPECT_NULL(test, umem->sgt);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unmapped), 1);
	KUNIT_ASSERT_EQ(test, map_locked(ctx, umem), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->mapped), 2);
	/* The new mapping has the moved addresses. */
	KUNIT_EXPECT_NE(test, sg_dma_address(umem->umem.sgt_append.sgt.sgl), before);
	expect_window(test, exp, umem);
	ctx->impl->release(umem);
	umem_mock_destroy(test, exp);
}

static void revoke_once(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *umem;
	struct dma_resv *resv = exp->dmabuf->resv;

	umem = ctx->impl->get_pinned_revocable_and_lock(ctx->ibdev, ctx->dev, P, 8 * P, fd, 0);
	close_fd(fd);
	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	/* Returned with the lock held, pinned and mapped. */
	KUNIT_EXPECT_TRUE(test, dma_resv_is_locked(resv));
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->pinned), 1);
	KUNIT_EXPECT_NOT_NULL(test, umem->sgt);
	ctx->impl->set_revoke_locked(umem, umem_test_drv_revoke, ctx);
	dma_resv_unlock(resv);

	umem_mock_move(exp);		/* the exporter revokes */
	KUNIT_EXPECT_EQ(test, ctx->revoked, 1);
	KUNIT_EXPECT_NULL(test, umem->sgt);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unpinned), 1);
	KUNIT_EXPECT_EQ(test, (u32)umem->revoked, 1U);

	ctx->impl->revoke(umem);	/* once only */
	umem_mock_move(exp);
	KUNIT_EXPECT_EQ(test, ctx->revoked, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unpinned), 1);

	KUNIT_EXPECT_EQ(test, map_locked(ctx, umem), -EINVAL);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->map_calls), 1);

	ctx->impl->revoke_lock(umem);
	KUNIT_EXPECT_TRUE(test, dma_resv_is_locked(resv));
	ctx->impl->revoke_unlock(umem);
	KUNIT_EXPECT_FALSE(test, dma_resv_is_locked(resv));

	ctx->impl->release(umem);
	KUNIT_EXPECT_EQ(test, ctx->revoked, 1);
	umem_mock_destroy(test, exp);
}

/*
 * A move notified before creation returned (the exporter sees the attachment
 * as soon as dma_buf_dynamic_attach() has listed it) revokes the umem like
 * any other move: creation fails with EINVAL and leaves nothing pinned,
 * mapped or attached. Rust only: the C importer dereferences the still-NULL
 * umem_dmabuf->attach in that notification (dma_resv_assert_held() in
 * builtin_unmap_pages() under lockdep).
 */
static void revocable_moved_during_creation(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *umem;

	exp->notify_in_attach = true;
	umem = umem_rs_ops.get_pinned_revocable_and_lock(ctx->ibdev, ctx->dev, 0, 4 * P, fd, 0);
	close_fd(fd);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(umem), -EINVAL);
	if (!IS_ERR(umem)) {
		dma_resv_unlock(exp->dmabuf->resv);
		umem_rs_ops.release(umem);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->map_calls), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->detached), 1);
	KUNIT_EXPECT_FALSE(test, dma_resv_is_locked(exp->dmabuf->resv));
	umem_mock_destroy(test, exp);
}

static void revoke_on_release(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_pairs, 8, true);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *umem;

	umem = ctx->impl->get_pinned_revocable_and_lock(ctx->ibdev, ctx->dev, 0, 16 * P, fd, 0);
	close_fd(fd);
	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	ctx->impl->set_revoke_locked(umem, umem_test_drv_revoke, ctx);
	dma_resv_unlock(exp->dmabuf->resv);
	ctx->impl->release(umem);
	KUNIT_EXPECT_EQ(test, ctx->revoked, 1);
	umem_mock_destroy(test, exp);
}

static void pinned_pin_count(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *umem;

	umem = ctx->impl->get_pinned(ctx->ibdev, ctx->dev, 2 * P, 6 * P, fd, 0);
	close_fd(fd);
	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	KUNIT_EXPECT_FALSE(test, dma_resv_is_locked(exp->dmabuf->resv));
	KUNIT_EXPECT_EQ(test, (u32)umem->pinned, 1U);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->pinned), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->mapped), 1);
	expect_window(test, exp, umem);
	ctx->impl->release(umem);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unpinned), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unmapped), 1);
	umem_mock_destroy(test, exp);
}

/*
 * The callbacks each creation path attaches with: since 7.1 the pinned ops
 * have none (a move of a pinned buffer does not reach the importer at all),
 * the revocable ones revoke; both allow peer-to-peer. Before 7.1 the pinned
 * ops had a callback that only logged.
 */
static void attach_ops_per_path(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	int fd = umem_mock_fd(test, exp);
	const struct dma_buf_attach_ops *ops;
	struct ib_umem_dmabuf *umem;

	umem = ctx->impl->get_pinned(ctx->ibdev, ctx->dev, 0, 8 * P, fd, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	ops = umem->attach->importer_ops;
	KUNIT_EXPECT_TRUE(test, ops->allow_peer2peer);
	KUNIT_EXPECT_FALSE(test, !!ops->invalidate_mappings);
	ctx->impl->release(umem);

	umem = ctx->impl->get_pinned_revocable_and_lock(ctx->ibdev, ctx->dev, 0, 8 * P, fd, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	ops = umem->attach->importer_ops;
	KUNIT_EXPECT_TRUE(test, ops->allow_peer2peer);
	KUNIT_EXPECT_TRUE(test, !!ops->invalidate_mappings);
	dma_resv_unlock(exp->dmabuf->resv);
	ctx->impl->release(umem);
	close_fd(fd);
	umem_mock_destroy(test, exp);
}

/* A move of a pinned (not revocable) buffer is only logged: the umem stays. */
static void pinned_move_is_ignored(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *umem;
	struct sg_table *sgt;

	umem = ctx->impl->get_pinned(ctx->ibdev, ctx->dev, 0, 8 * P, fd, 0);
	close_fd(fd);
	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	sgt = umem->sgt;
	umem_mock_move(exp);
	KUNIT_EXPECT_PTR_EQ(test, umem->sgt, sgt);
	KUNIT_EXPECT_EQ(test, (u32)umem->pinned, 1U);
	KUNIT_EXPECT_EQ(test, (u32)umem->revoked, 0U);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unmapped), 0);
	ctx->impl->release(umem);
	umem_mock_destroy(test, exp);
}

static void fail_pin_no_leak(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *umem;

	exp->fail_pin = -ENOMEM;
	umem = ctx->impl->get_pinned(ctx->ibdev, ctx->dev, 0, 4 * P, fd, 0);
	close_fd(fd);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(umem), -ENOMEM);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->pin_calls), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unpinned), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->map_calls), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->detached), 1);
	KUNIT_EXPECT_FALSE(test, dma_resv_is_locked(exp->dmabuf->resv));
	umem_mock_destroy(test, exp);
}

static void fail_map_no_double_unpin(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *umem;

	exp->fail_map = -EIO;
	umem = ctx->impl->get_pinned_revocable_and_lock(ctx->ibdev, ctx->dev, 0, 4 * P, fd, 0);
	close_fd(fd);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(umem), -EIO);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->pinned), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unpinned), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->detached), 1);
	KUNIT_EXPECT_FALSE(test, dma_resv_is_locked(exp->dmabuf->resv));
	umem_mock_destroy(test, exp);
}

static void fence_wait_waits(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_mixed, 7, true);
	struct ib_umem_dmabuf *umem = get_dyn(test, exp, 0, 8 * P);
	struct dma_fence *fence;
	unsigned long t0;

	KUNIT_ASSERT_FALSE(test, IS_ERR(umem));
	fence = umem_mock_add_fence(exp, 200);
	KUNIT_ASSERT_NOT_NULL(test, fence);
	t0 = jiffies;
	KUNIT_EXPECT_EQ(test, map_locked(ctx, umem), 0);
	KUNIT_EXPECT_TRUE(test, dma_fence_is_signaled(fence));
	KUNIT_EXPECT_GE(test, jiffies_to_msecs(jiffies - t0), 150U);
	/* Whatever the importer did, nothing may outlive the test. */
	dma_fence_wait(fence, false);
	dma_fence_put(fence);

	/* Already mapped: a second map only waits again, it does not re-map. */
	fence = umem_mock_add_fence(exp, 100);
	KUNIT_ASSERT_NOT_NULL(test, fence);
	KUNIT_EXPECT_EQ(test, map_locked(ctx, umem), 0);
	KUNIT_EXPECT_TRUE(test, dma_fence_is_signaled(fence));
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->map_calls), 1);
	dma_fence_wait(fence, false);
	dma_fence_put(fence);
	ctx->impl->release(umem);
	umem_mock_destroy(test, exp);
}

/* A file descriptor that is open but not a dma-buf. */
static int other_fd(void)
{
	static const struct file_operations fops = { .owner = THIS_MODULE };

	return anon_inode_getfd("umem_dmabuf_rs_test", &fops, NULL, O_CLOEXEC);
}

static void get_errnos(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_pairs, 8, true);
	const struct ib_umem_dmabuf_ops *impl = ctx->impl;
	int fd = umem_mock_fd(test, exp);
	int nfd = other_fd();
	const struct dma_buf_attach_ops *ops = &umem_test_drv_ops;
	struct ib_umem_dmabuf *u;

	KUNIT_ASSERT_GE(test, nfd, 0);
#define EXPECT_ERR(expr, err) do {					\
		u = (expr);						\
		KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(u), err);		\
		if (!IS_ERR(u))						\
			impl->release(u);				\
	} while (0)
	/* offset + size overflows */
	EXPECT_ERR(impl->get(ctx->ibdev, ctx->dev, ULONG_MAX - P, 2 * P, fd, 0, ops), -EINVAL);
	/* beyond the buffer */
	EXPECT_ERR(impl->get(ctx->ibdev, ctx->dev, 15 * P, 2 * P, fd, 0, ops), -EINVAL);
	EXPECT_ERR(impl->get(ctx->ibdev, ctx->dev, 0, 16 * P + 1, fd, 0, ops), -EINVAL);
	/* zero length */
	EXPECT_ERR(impl->get(ctx->ibdev, ctx->dev, P, 0, fd, 0, ops), -EINVAL);
	/* not an open descriptor */
	EXPECT_ERR(impl->get(ctx->ibdev, ctx->dev, 0, P, -1, 0, ops), -EBADF);
	EXPECT_ERR(impl->get(ctx->ibdev, ctx->dev, 0, P, 100000, 0, ops), -EBADF);
	/* open, but not a dma-buf */
	EXPECT_ERR(impl->get(ctx->ibdev, ctx->dev, 0, P, nfd, 0, ops), -EINVAL);
	/*
	 * No ops, or ops that cannot invalidate: accepted since 7.1, where the
	 * callback became optional (such an importer pins before it maps).
	 */
	EXPECT_ERR(impl->get(ctx->ibdev, ctx->dev, 0, P, fd, 0, NULL), 0);
	ops = &umem_test_drv_ops_no_move;
	EXPECT_ERR(impl->get(ctx->ibdev, ctx->dev, 0, P, fd, 0, ops), 0);
	/* the pinned variants check the same way */
	EXPECT_ERR(impl->get_pinned(ctx->ibdev, ctx->dev, 0, 0, fd, 0), -EINVAL);
	EXPECT_ERR(impl->get_pinned(ctx->ibdev, ctx->dev, 0, P, -1, 0), -EBADF);
	EXPECT_ERR(impl->get_pinned_revocable_and_lock(ctx->ibdev, ctx->dev, 16 * P, P, fd, 0),
		   -EINVAL);
#undef EXPECT_ERR
	close_fd(nfd);
	close_fd(fd);
	/*
	 * Nothing attached but the two umems without invalidation, each
	 * detached on release; nothing leaked (the refcount check is in
	 * destroy).
	 */
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->attached), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->detached),
			atomic_read(&exp->attached));
	umem_mock_destroy(test, exp);
}

static void get_records_access(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, lens_pairs, 8, false);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *u;

	u = ctx->impl->get(ctx->ibdev, ctx->dev, 0, P, fd, 0, &umem_test_drv_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(u));
	KUNIT_EXPECT_EQ(test, (u32)u->umem.writable, 0U);
	KUNIT_EXPECT_EQ(test, (u32)u->umem.is_dmabuf, 1U);
	KUNIT_EXPECT_PTR_EQ(test, u->umem.ibdev, ctx->ibdev);
	KUNIT_EXPECT_PTR_EQ(test, u->attach->importer_priv, (void *)u);
	KUNIT_EXPECT_PTR_EQ(test, u->attach->importer_ops, &umem_test_drv_ops);
	ctx->impl->release(u);
	u = ctx->impl->get(ctx->ibdev, ctx->dev, 0, P, fd, IB_ACCESS_REMOTE_WRITE,
			   &umem_test_drv_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(u));
	KUNIT_EXPECT_EQ(test, (u32)u->umem.writable, 1U);
	ctx->impl->release(u);
	close_fd(fd);
	umem_mock_destroy(test, exp);
}

static struct kunit_case umem_importer_cases[] = {
	KUNIT_CASE_PARAM(window_inside_one_entry, umem_impl_gen_params),
	KUNIT_CASE_PARAM(window_spanning_entries, umem_impl_gen_params),
	KUNIT_CASE_PARAM(window_on_entry_boundaries, umem_impl_gen_params),
	KUNIT_CASE_PARAM(window_sub_page_offset, umem_impl_gen_params),
	KUNIT_CASE_PARAM(window_last_page, umem_impl_gen_params),
	KUNIT_CASE_PARAM(window_one_byte_edges, umem_impl_gen_params),
	KUNIT_CASE_PARAM(window_whole_buffer, umem_impl_gen_params),
	KUNIT_CASE_PARAM(window_thousands_of_entries, umem_impl_gen_params),
	KUNIT_CASE_PARAM(window_beyond_4gib, umem_impl_gen_params),
	KUNIT_CASE_PARAM(restore_before_unmap, umem_impl_gen_params),
	KUNIT_CASE(unrestored_table_is_seen),
	KUNIT_CASE_PARAM(map_twice_maps_once, umem_impl_gen_params),
	KUNIT_CASE_PARAM(unmap_when_unmapped, umem_impl_gen_params),
	KUNIT_CASE_PARAM(move_notify_then_remap, umem_impl_gen_params),
	KUNIT_CASE_PARAM(revoke_once, umem_impl_gen_params),
	KUNIT_CASE(revocable_moved_during_creation),
	KUNIT_CASE_PARAM(revoke_on_release, umem_impl_gen_params),
	KUNIT_CASE_PARAM(pinned_pin_count, umem_impl_gen_params),
	KUNIT_CASE_PARAM(attach_ops_per_path, umem_impl_gen_params),
	KUNIT_CASE_PARAM(pinned_move_is_ignored, umem_impl_gen_params),
	KUNIT_CASE_PARAM(fail_pin_no_leak, umem_impl_gen_params),
	KUNIT_CASE_PARAM(fail_map_no_double_unpin, umem_impl_gen_params),
	KUNIT_CASE_PARAM(fence_wait_waits, umem_impl_gen_params),
	KUNIT_CASE_PARAM(get_errnos, umem_impl_gen_params),
	KUNIT_CASE_PARAM(get_records_access, umem_impl_gen_params),
	{}
};

static struct kunit_suite umem_importer_suite = {
	.name = "umem_dmabuf_rs_importer",
	.suite_init = umem_mock_suite_init,
	.suite_exit = umem_mock_suite_exit,
	.init = umem_test_init,
	.exit = umem_test_exit,
	.test_cases = umem_importer_cases,
};

kunit_test_suites(&umem_importer_suite);
