// SPDX-License-Identifier: GPL-2.0
/*
 * umem_dmabuf_rs_heap: both importers on a buffer of the kernel's own
 * system dma-heap, whose map hands every map of one attachment the same
 * table (its own, DMA-mapped again each time), on a kernel without
 * CONFIG_DMABUF_DEBUG, which would hand each map a fresh copy instead.
 * Only there does an importer trim and restore the exporter's own entries,
 * and DMA-API debugging checks the restored lengths when the heap unmaps
 * them.
 *
 * A module cannot allocate from a heap by itself: the buffer comes from the
 * loading process, as the descriptor kunit_heap_fd (heap_exec in the
 * real-tables boot, scripts/guest/real_tables.sh). The parameter's setter
 * takes it: it runs in that process while the module loads, whereas KUnit
 * runs each case in a thread of its own, where the descriptor means
 * nothing. The module keeps the buffer until it is unloaded (the
 * parameter's free). Without it the cases skip (make check's main boot,
 * make kunit), those of the Rust suite umem_dmabuf_rs_heap_rs too.
 */
#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/fcntl.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "umem_dmabuf_rs.h"
#include "umem_test.h"

#define P PAGE_SIZE
/* The reference table's entries: a heap buffer of HEAP_PAGES has at most that many. */
#define HEAP_PAGES 19
#define HEAP_SIZE (HEAP_PAGES * P)

static struct dma_buf *heap_buf;
static int heap_fd = -1;
/* The system heap's name in its dma-bufs' exp_name. */
#define HEAP_EXP_NAME "system"

static const struct ib_umem_dmabuf_ops *const heap_impls[] = {
	&ib_umem_dmabuf_builtin_ops,
	&umem_rs_ops,
};

static void heap_impl_desc(const struct ib_umem_dmabuf_ops *const *impl, char *desc)
{
	strscpy(desc, *impl == &umem_rs_ops ? "rust" : "c", KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(heap_impl, heap_impls, heap_impl_desc);

/* Takes the loading process's buffer @val (a descriptor) for the suites. */
static int heap_fd_set(const char *val, const struct kernel_param *kp)
{
	struct dma_buf *buf;
	int fd, err;

	err = kstrtoint(val, 0, &fd);
	if (err)
		return err;
	buf = dma_buf_get(fd);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	if (strcmp(buf->exp_name, HEAP_EXP_NAME) || buf->size != HEAP_SIZE) {
		pr_err("umem_dmabuf_rs_heap: kunit_heap_fd is a %zu-byte buffer of %s, not %lu bytes of the system heap\n",
		       buf->size, buf->exp_name, HEAP_SIZE);
		dma_buf_put(buf);
		return -EINVAL;
	}
	if (heap_buf)
		dma_buf_put(heap_buf);
	heap_buf = buf;
	heap_fd = fd;
	return 0;
}

/* At unload, or when the load fails after the parameters were set. */
static void heap_fd_free(void *arg)
{
	if (heap_buf)
		dma_buf_put(heap_buf);
	heap_buf = NULL;
}

static const struct kernel_param_ops heap_fd_ops = {
	.set = heap_fd_set,
	.get = param_get_int,
	.free = heap_fd_free,
};

module_param_cb(kunit_heap_fd, &heap_fd_ops, &heap_fd, 0444);
MODULE_PARM_DESC(kunit_heap_fd,
		 "Test: a system dma-heap buffer of the loading process for the heap suites (kunit=1)");

/*
 * For the Rust suite umem_dmabuf_rs_heap_rs (rust/tests.rs): the heap
 * buffer, which the module holds until it is unloaded, or NULL with @test
 * marked skipped as this suite's cases are.
 */
struct dma_buf *umem_kunit_heap_buf(struct kunit *test)
{
	if (!heap_buf)
		kunit_mark_skipped(test,
				   "no heap buffer (load with kunit_heap_fd=, scripts/guest/real_tables.sh)");
	return heap_buf;
}

struct heap_entries {
	u32 n;
	u64 addr[HEAP_PAGES];
	u32 len[HEAP_PAGES];
};

static int heap_init(struct kunit *test)
{
	if (!heap_buf)
		kunit_skip(test,
			   "no heap buffer (load with kunit_heap_fd=, scripts/guest/real_tables.sh)");
	return umem_test_init(test);
}

/* A dynamic umem of [off, off + len) of the heap buffer, through ctx->impl. */
static struct ib_umem_dmabuf *heap_get(struct kunit *test, unsigned long off, size_t len)
{
	struct umem_test_ctx *ctx = test->priv;
	struct ib_umem_dmabuf *umem;
	int fd;

	get_dma_buf(heap_buf);
	fd = dma_buf_fd(heap_buf, O_CLOEXEC);
	if (fd < 0)
		dma_buf_put(heap_buf);
	KUNIT_ASSERT_GE(test, fd, 0);
	umem = ctx->impl->get(ctx->ibdev, ctx->dev, off, len, fd,
			      IB_ACCESS_LOCAL_WRITE, &umem_test_drv_ops);
	close_fd(fd);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(umem), "get [%lu, +%zu): %d", off, len,
			       PTR_ERR_OR_ZERO(umem));
	return umem;
}

/* The entries ib_core hands the driver (the trimmed window), while mapped. */
static void heap_window(struct kunit *test, struct ib_umem_dmabuf *umem,
			struct heap_entries *out)
{
	struct scatterlist *sg;
	unsigned int i;

	out->n = 0;
	for_each_sgtable_dma_sg(&umem->umem.sgt_append.sgt, sg, i) {
		KUNIT_ASSERT_LT(test, out->n, HEAP_PAGES);
		out->addr[out->n] = sg_dma_address(sg);
		out->len[out->n] = sg_dma_len(sg);
		out->n++;
	}
}

/* The whole buffer's entries as ctx->impl maps them: the heap's table. */
static void heap_reference(struct kunit *test, struct heap_entries *ref)
{
	struct umem_test_ctx *ctx = test->priv;
	struct ib_umem_dmabuf *umem = heap_get(test, 0, HEAP_SIZE);

	dma_resv_lock(heap_buf->resv, NULL);
	KUNIT_EXPECT_EQ(test, ctx->impl->map_pages(umem), 0);
	heap_window(test, umem, ref);
	ctx->impl->unmap_pages(umem);
	dma_resv_unlock(heap_buf->resv);
	ctx->impl->release(umem);
	KUNIT_ASSERT_GT(test, ref->n, 0);
}

/*
 * The map of a heap attachment is the heap's own table: the same table on
 * every map (a kernel with CONFIG_DMABUF_DEBUG gives a fresh copy each
 * time, and fails here), and a second map_pages while mapped does not reach
 * the heap again (it would DMA-map that table twice).
 */
static void heap_same_table_each_map(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct ib_umem_dmabuf *umem = heap_get(test, 0, HEAP_SIZE);
	struct heap_entries *a, *b;
	struct sg_table *first;

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	dma_resv_lock(heap_buf->resv, NULL);
	KUNIT_EXPECT_EQ(test, ctx->impl->map_pages(umem), 0);
	first = umem->sgt;
	heap_window(test, umem, a);
	KUNIT_EXPECT_EQ(test, ctx->impl->map_pages(umem), 0);
	KUNIT_EXPECT_PTR_EQ(test, umem->sgt, first);
	ctx->impl->unmap_pages(umem);
	KUNIT_EXPECT_NULL(test, umem->sgt);
	KUNIT_EXPECT_EQ(test, ctx->impl->map_pages(umem), 0);
	KUNIT_EXPECT_PTR_EQ_MSG(test, umem->sgt, first,
				"a new table on the second map: the kernel copies tables (CONFIG_DMABUF_DEBUG)");
	heap_window(test, umem, b);
	ctx->impl->unmap_pages(umem);
	dma_resv_unlock(heap_buf->resv);
	ctx->impl->release(umem);
	KUNIT_EXPECT_EQ(test, a->n, b->n);
	KUNIT_EXPECT_MEMEQ(test, a->addr, b->addr, sizeof(a->addr));
	KUNIT_EXPECT_MEMEQ(test, a->len, b->len, sizeof(a->len));
}

/* Windows across and within the heap's entries, and at the buffer's ends. */
static const struct {
	unsigned long off;
	size_t len;
} heap_windows[] = {
	{ 100, P },
	{ P + 100, 16 * P },
	{ 17 * P + 5, 2 * P - 10 },
	{ HEAP_SIZE - P - 1, P + 1 },
	{ 3 * P, P },
};

/*
 * @got against the oracle: each entry of @ref that overlaps the umem's
 * page-aligned range, cut to it.
 */
static void heap_expect_window(struct kunit *test, const struct heap_entries *ref,
			       unsigned long off, size_t len, const struct heap_entries *got)
{
	u64 start = ALIGN_DOWN(off, P), end = ALIGN(off + len, P), at = 0;
	u32 i, n = 0;

	for (i = 0; i < ref->n; at += ref->len[i], i++) {
		u64 lo = max(start, at), hi = min(end, at + ref->len[i]);

		if (lo >= hi)
			continue;
		if (n >= got->n)
			break;
		KUNIT_EXPECT_EQ_MSG(test, got->addr[n], ref->addr[i] + (lo - at),
				    "[%lu, +%zu) entry %u", off, len, n);
		KUNIT_EXPECT_EQ_MSG(test, (u64)got->len[n], hi - lo,
				    "[%lu, +%zu) entry %u", off, len, n);
		n++;
	}
	KUNIT_EXPECT_EQ_MSG(test, got->n, n, "[%lu, +%zu) entries", off, len);
}

/*
 * Each window, on two maps of the same table, against the whole table's
 * entries. The window is cut on the heap's own table and must be undone
 * before the heap unmaps it: DMA-API debugging compares the lengths the heap
 * unmaps with those it mapped, so a window left in place is a WARNING
 * ("frees DMA memory with different size"; seen with
 * scripts/mutants/kdb-unmap-no-restore.patch). A second map does not show
 * it: the heap's dma_map_sgtable() rewrites every entry's DMA fields.
 */
static void heap_window_on_the_exporters_table(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct heap_entries *ref, *got;
	unsigned int w, round;

	ref = kunit_kzalloc(test, sizeof(*ref), GFP_KERNEL);
	got = kunit_kzalloc(test, sizeof(*got), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ref);
	KUNIT_ASSERT_NOT_NULL(test, got);
	heap_reference(test, ref);
	for (w = 0; w < ARRAY_SIZE(heap_windows); w++) {
		unsigned long off = heap_windows[w].off;
		size_t len = heap_windows[w].len;
		struct ib_umem_dmabuf *umem = heap_get(test, off, len);
		struct sg_table *table = NULL;

		dma_resv_lock(heap_buf->resv, NULL);
		for (round = 0; round < 2; round++) {
			KUNIT_EXPECT_EQ(test, ctx->impl->map_pages(umem), 0);
			if (round)
				KUNIT_EXPECT_PTR_EQ(test, umem->sgt, table);
			table = umem->sgt;
			heap_window(test, umem, got);
			heap_expect_window(test, ref, off, len, got);
			ctx->impl->unmap_pages(umem);
		}
		dma_resv_unlock(heap_buf->resv);
		ctx->impl->release(umem);
	}
}

static struct kunit_case heap_cases[] = {
	KUNIT_CASE_PARAM(heap_same_table_each_map, heap_impl_gen_params),
	KUNIT_CASE_PARAM(heap_window_on_the_exporters_table, heap_impl_gen_params),
	{}
};

static struct kunit_suite umem_heap_suite = {
	.name = "umem_dmabuf_rs_heap",
	.init = heap_init,
	.exit = umem_test_exit,
	.test_cases = heap_cases,
};

kunit_test_suites(&umem_heap_suite);
