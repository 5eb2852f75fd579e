// SPDX-License-Identifier: GPL-2.0
/*
 * umem_dmabuf_rs_bench: the importer's in-kernel costs, the C built-in ops
 * against the Rust ones, in one boot.
 *
 * For each exporter table size (1 to 262144 entries of one page, the mock
 * exporter's synthetic DMA addresses) each case times blocks of @bench_iters
 * operations, the two implementations alternating C, Rust, Rust, C in each of
 * @bench_rounds rounds, so that drift of the (shared, TCG) machine cancels.
 * Every block prints one line, "BENCH <bench> <entries> <c|rust> <round>
 * <ns per operation>", which scripts/bench_report.py turns into medians,
 * ratios with their intervals and plots (make bench).
 *
 * With the defaults (one round of one operation, tables up to 4096 entries)
 * umem_bench is the smoke test make check runs: it must run and print
 * numbers; make bench boots the kernel without debugging options and loads
 * the module with bench_rounds, bench_iters and bench_max_entries raised.
 *
 * umem_bench_gate is the regression gate, run by make check and make bench
 * on the fast kernel (bench_gate_rounds=15; 0, the default, skips it):
 * map_pages + unmap_pages of a umem over a buffer of bench_gate_entries
 * (65536) entries whose table the exporter built once, in rounds of C,
 * Rust, Rust, C blocks; each round gives one ratio, the two Rust blocks'
 * time over the two C blocks', and the median of those ratios must not
 * exceed bench_gate_max (1000) thousandths. The exporter's cost is nearly
 * nothing and the fast kernel's dma-buf core adds little, so the ratio is
 * that of the importers' own cost per table entry; both sides run in the
 * same boot, interleaved, so the verdict does not depend on the machine's
 * speed. umem_bench_gate_op holds the fixed cost of an operation the same
 * way (below). make check runs both cases twice: timed, and again in a
 * boot under QEMU -icount shift=0, where the guest's clock advances one
 * nanosecond per instruction executed, so that each block's "time" is its
 * instruction count, the same on every machine and in every round, and the
 * limits can be tight (bench_gate_max=950, bench_gate_op_max=1000: Rust
 * below C). On the test kernel the dma-buf core's debug copy of every mapped
 * table (CONFIG_DMABUF_DEBUG) costs several times the importers' walk,
 * and what is left is not their walk either (see Documentation/performance.rst):
 * there the gate measures nothing it could hold to a limit.
 */
#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "umem_dmabuf_rs.h"
#include "umem_mock_exporter.h"
#include "umem_test.h"

static unsigned int bench_rounds = 1;
module_param(bench_rounds, uint, 0644);
MODULE_PARM_DESC(bench_rounds, "Bench: rounds of C, Rust, Rust, C blocks (default 1)");
static unsigned int bench_iters = 1;
module_param(bench_iters, uint, 0644);
MODULE_PARM_DESC(bench_iters,
		 "Bench: operations per block up to 16 entries, fewer for larger tables (default 1)");
static unsigned int bench_max_entries = 4096;
module_param(bench_max_entries, uint, 0644);
MODULE_PARM_DESC(bench_max_entries, "Bench: largest exporter table (default 4096)");
static unsigned int bench_gate_rounds;
module_param(bench_gate_rounds, uint, 0644);
MODULE_PARM_DESC(bench_gate_rounds,
		 "Bench gate: rounds of C, Rust, Rust, C blocks (0 skips it; make check runs 15 on the fast kernel)");
static unsigned int bench_gate_entries = 65536;
module_param(bench_gate_entries, uint, 0644);
MODULE_PARM_DESC(bench_gate_entries, "Bench gate: entries of the exporter's table");
/*
 * 300 rounds of the one-entry case take seconds under TCG; their median
 * varied by about 0.03 from boot to boot, that of 15 rounds by about 0.1.
 */
static unsigned int bench_gate_op_rounds = 300;
module_param(bench_gate_op_rounds, uint, 0644);
MODULE_PARM_DESC(bench_gate_op_rounds, "Bench gate: rounds of the one-entry case (default 300)");
static unsigned int bench_gate_op_max = 1100;
module_param(bench_gate_op_max, uint, 0644);
MODULE_PARM_DESC(bench_gate_op_max,
		 "Bench gate: largest median Rust/C cost of a one-entry registration, in thousandths");
static unsigned int bench_gate_max = 1000;
module_param(bench_gate_max, uint, 0644);
MODULE_PARM_DESC(bench_gate_max,
		 "Bench gate: largest median Rust/C cost per table entry, in thousandths");

enum bench_op { BENCH_GET_MAP, BENCH_GET_PINNED };

static const char *const bench_names[] = { "get_map_unmap_release", "get_pinned_release" };

static const u32 bench_sizes[] = { 1, 16, 256, 4096, 65536, 262144 };

/* The implementation of each block of a round: drift within it cancels. */
static const struct ib_umem_dmabuf_ops *const order[] = {
	&ib_umem_dmabuf_builtin_ops, &umem_rs_ops, &umem_rs_ops, &ib_umem_dmabuf_builtin_ops,
};

struct bench_param {
	enum bench_op op;
	u32 entries;
};

static struct bench_param bench_params[2 * ARRAY_SIZE(bench_sizes)];

static const void *bench_gen_params(struct kunit *test, const void *prev,
				    char *desc)
{
	const struct bench_param *p = prev ? (const struct bench_param *)prev + 1 :
					     bench_params;
	u32 i;

	if (!prev) {
		for (i = 0; i < ARRAY_SIZE(bench_params); i++) {
			bench_params[i].op = i / ARRAY_SIZE(bench_sizes);
			bench_params[i].entries = bench_sizes[i % ARRAY_SIZE(bench_sizes)];
		}
	}
	if (p >= bench_params + ARRAY_SIZE(bench_params))
		return NULL;
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s_%u", bench_names[p->op], p->entries);
	return p;
}

/* One operation of @op on the whole buffer behind @fd; 0 or an errno. */
static int bench_once(struct umem_test_ctx *ctx, const struct ib_umem_dmabuf_ops *impl,
		      enum bench_op op, int fd, size_t size)
{
	struct ib_umem_dmabuf *u;
	int ret = 0;

	ctx->impl = impl;
	if (op == BENCH_GET_PINNED) {
		u = impl->get_pinned(ctx->ibdev, ctx->dev, 0, size, fd, 0);
		if (IS_ERR(u))
			return PTR_ERR(u);
	} else {
		u = impl->get(ctx->ibdev, ctx->dev, 0, size, fd, IB_ACCESS_LOCAL_WRITE,
			      &umem_test_drv_ops);
		if (IS_ERR(u))
			return PTR_ERR(u);
		dma_resv_lock(u->attach->dmabuf->resv, NULL);
		ret = impl->map_pages(u);
		impl->unmap_pages(u);
		dma_resv_unlock(u->attach->dmabuf->resv);
	}
	impl->release(u);
	return ret;
}

/*
 * Times one block of @iters operations; ns per operation, or 0 if an
 * operation failed.
 */
static u64 bench_block(struct kunit *test, const struct ib_umem_dmabuf_ops *impl,
		       enum bench_op op, int fd, size_t size, u32 iters)
{
	u64 start = ktime_get_ns();
	u32 i;

	for (i = 0; i < iters; i++) {
		int ret = bench_once(test->priv, impl, op, fd, size);

		if (ret) {
			KUNIT_FAIL(test, "%s failed: %d", bench_names[op], ret);
			return 0;
		}
	}
	return div_u64(ktime_get_ns() - start, iters);
}

static void umem_bench(struct kunit *test)
{
	const struct bench_param *p = test->param_value;
	struct umem_mock_exp *exp;
	u32 *lens, i, r, iters, blocks = 0;
	int fd;

	if (p->entries > bench_max_entries)
		kunit_skip(test, "above bench_max_entries=%u", bench_max_entries);
	if (!bench_iters || !bench_rounds)
		kunit_skip(test, "bench_iters or bench_rounds is 0");
	lens = kunit_kcalloc(test, p->entries, sizeof(*lens), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, lens);
	for (i = 0; i < p->entries; i++)
		lens[i] = PAGE_SIZE;
	/* Fewer operations per block for larger tables: similar block times. */
	iters = max(1U, bench_iters / max(1U, p->entries / 16));
	exp = umem_mock_create(test, lens, p->entries, true);
	fd = umem_mock_fd(test, exp);
	for (r = 0; r < bench_rounds; r++) {
		for (i = 0; i < ARRAY_SIZE(order); i++) {
			u64 ns = bench_block(test, order[i], p->op, fd, exp->size, iters);

			if (!ns)
				goto out;
			kunit_info(test, "BENCH %s %u %s %u %llu\n", bench_names[p->op],
				   p->entries, order[i] == &umem_rs_ops ? "rust" : "c", r, ns);
			blocks++;
		}
	}
out:
	close_fd(fd);
	umem_mock_destroy(test, exp);
	/* The smoke test's whole assertion: it ran and produced numbers. */
	KUNIT_EXPECT_EQ(test, blocks, bench_rounds * (u32)ARRAY_SIZE(order));
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * A gate's verdict: the median of the @rounds per-round Rust/C ratios in
 * @ratio (thousandths) must not exceed @max thousandths. The ratios are of
 * ktime_get_ns() differences: times, or, under QEMU -icount shift=0 (where
 * the guest's clock counts one nanosecond per instruction), instructions.
 */
static void gate_verdict(struct kunit *test, u64 *ratio, u32 rounds, unsigned int max,
			 const char *what)
{
	u64 median;

	sort(ratio, rounds, sizeof(*ratio), cmp_u64, NULL);
	median = ratio[rounds / 2];
	kunit_info(test, "Rust/C per %s: median %llu.%03llu of %u rounds (limit %u.%03u)\n",
		   what, median / 1000, median % 1000, rounds, max / 1000, max % 1000);
	KUNIT_EXPECT_LE_MSG(test, median, (u64)max,
			    "the Rust importer costs more than the limit allows: %s", what);
}

/*
 * Times @iters map_pages + unmap_pages of umem @u (reservation lock taken
 * and dropped around each); ns per pair, or 0 if a map failed.
 */
static u64 gate_block(struct kunit *test, const struct ib_umem_dmabuf_ops *impl,
		      struct ib_umem_dmabuf *u, u32 iters)
{
	struct dma_resv *resv = u->attach->dmabuf->resv;
	u64 start = ktime_get_ns();
	u32 i;
	int ret;

	for (i = 0; i < iters; i++) {
		dma_resv_lock(resv, NULL);
		ret = impl->map_pages(u);
		impl->unmap_pages(u);
		dma_resv_unlock(resv);
		if (ret) {
			KUNIT_FAIL(test, "map_pages failed: %d", ret);
			return 0;
		}
	}
	return div64_u64(ktime_get_ns() - start, iters);
}

/*
 * Times @iters dma_buf_map_attachment() + dma_buf_unmap_attachment() of
 * @attach, the dma-buf core's and the exporter's share of a gate pair; ns per
 * pair, or 0 if a map failed.
 */
static u64 core_block(struct kunit *test, struct dma_buf_attachment *attach, u32 iters)
{
	struct dma_resv *resv = attach->dmabuf->resv;
	u64 start = ktime_get_ns();
	struct sg_table *sgt;
	u32 i;

	for (i = 0; i < iters; i++) {
		dma_resv_lock(resv, NULL);
		sgt = dma_buf_map_attachment(attach, DMA_BIDIRECTIONAL);
		if (!IS_ERR(sgt))
			dma_buf_unmap_attachment(attach, sgt, DMA_BIDIRECTIONAL);
		dma_resv_unlock(resv);
		if (IS_ERR(sgt)) {
			KUNIT_FAIL(test, "dma_buf_map_attachment failed: %ld", PTR_ERR(sgt));
			return 0;
		}
	}
	return div64_u64(ktime_get_ns() - start, iters);
}

/*
 * The regression gate. Each attachment's table is built once and handed
 * out again on every map, so a map_pages + unmap_pages pair costs what the
 * importer itself does per table entry (the window's walk and restore) and
 * almost nothing of the exporter's: one umem per
 * implementation on one buffer of bench_gate_entries entries, the pairs
 * timed in rounds of C, Rust, Rust, C blocks.
 */
static void umem_bench_gate(struct kunit *test)
{
	const struct ib_umem_dmabuf_ops *impls[2] = { &ib_umem_dmabuf_builtin_ops, &umem_rs_ops };
	struct umem_test_ctx *ctx = test->priv;
	struct ib_umem_dmabuf *umems[2] = { NULL, NULL };
	u32 *lens, i, r, n = bench_gate_entries, iters;
	struct dma_buf_attachment *core = NULL;
	struct umem_mock_exp *exp;
	u64 *ratio, ns[2], base;
	char what[64];
	int fd;

	if (!bench_gate_rounds || !n)
		kunit_skip(test, "bench_gate_rounds or bench_gate_entries is 0");
	lens = kunit_kcalloc(test, n, sizeof(*lens), GFP_KERNEL);
	ratio = kunit_kcalloc(test, bench_gate_rounds, sizeof(*ratio), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, lens);
	KUNIT_ASSERT_NOT_NULL(test, ratio);
	for (i = 0; i < n; i++)
		lens[i] = PAGE_SIZE;
	exp = umem_mock_create(test, lens, n, false);
	exp->prebuild = true;
	fd = umem_mock_fd(test, exp);
	for (i = 0; i < 2; i++) {
		ctx->impl = impls[i];
		umems[i] = impls[i]->get(ctx->ibdev, ctx->dev, 0, exp->size, fd,
					 IB_ACCESS_LOCAL_WRITE, &umem_test_drv_ops);
		if (IS_ERR(umems[i])) {
			KUNIT_FAIL(test, "get failed: %ld", PTR_ERR(umems[i]));
			umems[i] = NULL;
			goto out;
		}
		/* One pair first on each side: caches warm. */
		if (!gate_block(test, impls[i], umems[i], 1))
			goto out;
	}
	core = dma_buf_dynamic_attach(exp->dmabuf, ctx->dev, &umem_test_drv_ops, NULL);
	if (IS_ERR(core)) {
		KUNIT_FAIL(test, "attach failed: %ld", PTR_ERR(core));
		core = NULL;
		goto out;
	}
	/* About 16 pairs per block at 65536 entries. */
	iters = max(1U, (16U << 16) / n);
	for (r = 0; r < bench_gate_rounds; r++) {
		ns[0] = 0;
		ns[1] = 0;
		base = core_block(test, core, iters);
		if (!base)
			goto out;
		for (i = 0; i < ARRAY_SIZE(order); i++) {
			bool rust = order[i] == &umem_rs_ops;
			u64 t = gate_block(test, order[i], umems[rust], iters);

			if (!t)
				goto out;
			ns[rust] += t;
		}
		ratio[r] = div64_u64(ns[1] * 1000, max(ns[0], 1ULL));
		kunit_info(test, "BENCH_GATE %u %llu %llu %llu.%03llu core %llu\n", r, ns[0] / 2,
			   ns[1] / 2, ratio[r] / 1000, ratio[r] % 1000, base);
	}
	snprintf(what, sizeof(what), "map_pages + unmap_pages of %u entries", n);
	gate_verdict(test, ratio, bench_gate_rounds, bench_gate_max, what);
out:
	if (core)
		dma_buf_detach(exp->dmabuf, core);
	for (i = 0; i < 2; i++)
		if (umems[i])
			impls[i]->release(umems[i]);
	close_fd(fd);
	umem_mock_destroy(test, exp);
}

/*
 * The gate's second half: the fixed cost of an operation. get + map_pages +
 * unmap_pages + release of a one-entry umem, in the same rounds of C, Rust,
 * Rust, C blocks (256 operations each), bench_gate_op_rounds of them; the
 * median ratio must not exceed bench_gate_op_max (1100) thousandths.
 * Out-of-line calls into the kernel crate show here, not per table entry.
 */
static void umem_bench_gate_op(struct kunit *test)
{
	u32 lens[1] = { PAGE_SIZE }, r, i;
	struct umem_mock_exp *exp;
	u64 *ratio, ns[2];
	int fd;

	if (!bench_gate_rounds || !bench_gate_op_rounds)
		kunit_skip(test, "bench_gate_rounds or bench_gate_op_rounds is 0");
	ratio = kunit_kcalloc(test, bench_gate_op_rounds, sizeof(*ratio), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ratio);
	exp = umem_mock_create(test, lens, 1, true);
	fd = umem_mock_fd(test, exp);
	/* Warm both sides up. */
	if (!bench_block(test, &ib_umem_dmabuf_builtin_ops, BENCH_GET_MAP, fd, exp->size, 16) ||
	    !bench_block(test, &umem_rs_ops, BENCH_GET_MAP, fd, exp->size, 16))
		goto out;
	for (r = 0; r < bench_gate_op_rounds; r++) {
		ns[0] = 0;
		ns[1] = 0;
		for (i = 0; i < ARRAY_SIZE(order); i++) {
			u64 t = bench_block(test, order[i], BENCH_GET_MAP, fd, exp->size, 256);

			if (!t)
				goto out;
			ns[order[i] == &umem_rs_ops] += t;
		}
		ratio[r] = div64_u64(ns[1] * 1000, max(ns[0], 1ULL));
		kunit_info(test, "BENCH_GATE_OP %u %llu %llu %llu.%03llu\n", r, ns[0] / 2,
			   ns[1] / 2, ratio[r] / 1000, ratio[r] % 1000);
	}
	gate_verdict(test, ratio, bench_gate_op_rounds, bench_gate_op_max,
		     "one-entry get + map + unmap + release");
out:
	close_fd(fd);
	umem_mock_destroy(test, exp);
}

static struct kunit_case umem_bench_cases[] = {
	KUNIT_CASE_PARAM_ATTR(umem_bench, bench_gen_params, { .speed = KUNIT_SPEED_SLOW }),
	KUNIT_CASE_ATTR(umem_bench_gate, { .speed = KUNIT_SPEED_SLOW }),
	KUNIT_CASE_ATTR(umem_bench_gate_op, { .speed = KUNIT_SPEED_SLOW }),
	{}
};

static struct kunit_suite umem_bench_suite = {
	.name = "umem_dmabuf_rs_bench",
	.suite_init = umem_mock_suite_init,
	.suite_exit = umem_mock_suite_exit,
	.init = umem_test_init,
	.exit = umem_test_exit,
	.test_cases = umem_bench_cases,
};

kunit_test_suites(&umem_bench_suite);
