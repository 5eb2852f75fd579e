// SPDX-License-Identifier: GPL-2.0
/*
 * fault_injection_c, fault_injection_rust: every error path of the
 * importer's entry points, reached by failing allocations one at a time.
 *
 * For each entry point the case fails the k-th allocation of the calling
 * task (current->fail_nth, what /proc/self/fail-nth sets) for k = 1, 2, ...
 * until the call no longer reaches a k-th allocation, and after every call
 * checks that nothing is left behind: the mock exporter saw every attach, pin
 * and map undone, the buffer's file has only the export reference and is
 * released, and this module's reference count is back. Then the exporter's
 * own pin and map fail. The Rust suite compares every errno with the C
 * importer's at the same k (the C sweep is recorded by fault_injection_c,
 * which runs first, or repeated if that suite was filtered out).
 *
 * The calls go through ib_core's exported functions, which reach the Rust
 * importer while it is registered; the C sweep unregisters it meanwhile.
 *
 * Needs failslab set up by the guest before the module is loaded
 * (scripts/guest/init): GFP_KERNEL allocations not ignored, and only the
 * kmalloc caches flagged failslab=1 (kmemleak's and debugobjects' own
 * allocations must never fail).
 */
#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "umem_dmabuf_rs.h"
#include "umem_mock_exporter.h"
#include "umem_test.h"

#define P PAGE_SIZE
/* More allocation points than any entry point has: the sweep must end. */
#define FI_MAX_POINTS 48

enum fi_call {
	FI_GET,
	FI_GET_WITH_DMA_DEVICE,
	FI_GET_PINNED,
	FI_GET_PINNED_WITH_DMA_DEVICE,
	FI_GET_PINNED_REVOCABLE_AND_LOCK,
	FI_GET_PINNED_REVOCABLE_WITH_DMA_DEVICE,
	FI_MAP_PAGES,
};

struct fi_entry {
	const char *name;
	enum fi_call call;
	bool dynamic;		/* exporter with pin/unpin and move_notify */
	/*
	 * Allocations the call makes at least (the umem and the attachment;
	 * the exporter's table). Fewer means failslab is not set up. Until
	 * 7.x a static exporter's table was mapped once, at attach, and
	 * map_pages reused it; 7.x maps at map time.
	 */
	int min_points;
};

static const struct fi_entry fi_entries[] = {
	{ "get", FI_GET, true, 2 },
	{ "get_static_exporter", FI_GET, false, 2 },
	{ "get_with_dma_device", FI_GET_WITH_DMA_DEVICE, true, 2 },
	{ "get_pinned", FI_GET_PINNED, true, 4 },
	{ "get_pinned_static_exporter", FI_GET_PINNED, false, 4 },
	{ "get_pinned_with_dma_device", FI_GET_PINNED_WITH_DMA_DEVICE, true, 4 },
	{ "get_pinned_revocable_and_lock", FI_GET_PINNED_REVOCABLE_AND_LOCK, true, 4 },
	{ "get_pinned_revocable_with_dma_device_and_lock",
	  FI_GET_PINNED_REVOCABLE_WITH_DMA_DEVICE, true, 4 },
	{ "map_pages", FI_MAP_PAGES, true, 2 },
	{ "map_pages_static_exporter", FI_MAP_PAGES, false, 0 },
};

/* The outcome of one entry point under every injected failure. */
struct fi_sweep {
	bool done;
	int points;			/* allocations the call makes */
	int err[FI_MAX_POINTS];		/* errno with allocation k + 1 failed */
	int pin_err, map_err;		/* errno with the exporter's pin/map failing */
};

static void fi_entry_desc(const struct fi_entry *e, char *desc)
{
	strscpy(desc, e->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(fi_entry, fi_entries, fi_entry_desc);

#if IS_ENABLED(CONFIG_FAILSLAB)

/* The C importer's sweeps, for the Rust suite to compare with. */
static struct fi_sweep fi_c_sweeps[ARRAY_SIZE(fi_entries)];

static const u32 fi_lens[] = { 2 * P, P, 4 * P };

/* Fails the @k-th allocation from here on (0: none). */
static void fi_arm(unsigned int k)
{
	WRITE_ONCE(current->fail_nth, k);
}

/* Disarms; whether the armed allocation was reached (and failed). */
static bool fi_disarm(void)
{
	bool reached = READ_ONCE(current->fail_nth) == 0;

	WRITE_ONCE(current->fail_nth, 0);
	return reached;
}

/*
 * Creates a umem of the buffer behind @fd the way @call does, failing the
 * k-th allocation of creation (none if @k is 0); returns it or an errno.
 */
static struct ib_umem_dmabuf *fi_create(struct umem_test_ctx *ctx,
					enum fi_call call, int fd,
					unsigned int k, bool *reached)
{
	const unsigned long off = P, size = 5 * P;
	struct ib_umem_dmabuf *u;

	fi_arm(k);
	switch (call) {
	case FI_GET:
	case FI_MAP_PAGES:
		u = ib_umem_dmabuf_get(ctx->ibdev, off, size, fd,
				       IB_ACCESS_LOCAL_WRITE, &umem_test_drv_ops);
		break;
	case FI_GET_WITH_DMA_DEVICE:
		u = ib_umem_dmabuf_get_with_dma_device(ctx->ibdev, ctx->dev, off,
						       size, fd, IB_ACCESS_LOCAL_WRITE,
						       &umem_test_drv_ops);
		break;
	case FI_GET_PINNED:
		u = ib_umem_dmabuf_get_pinned(ctx->ibdev, off, size, fd, 0);
		break;
	case FI_GET_PINNED_WITH_DMA_DEVICE:
		u = ib_umem_dmabuf_get_pinned_with_dma_device(ctx->ibdev, ctx->dev,
							      off, size, fd, 0);
		break;
	case FI_GET_PINNED_REVOCABLE_WITH_DMA_DEVICE:
		u = ib_umem_dmabuf_get_pinned_revocable_with_dma_device_and_lock(ctx->ibdev,
										 ctx->dev,
										 off, size,
										 fd, 0);
		if (!IS_ERR(u))
			dma_resv_unlock(u->attach->dmabuf->resv);
		break;
	default:
		u = ib_umem_dmabuf_get_pinned_revocable_and_lock(ctx->ibdev, off,
								 size, fd, 0);
		if (!IS_ERR(u))
			dma_resv_unlock(u->attach->dmabuf->resv);
		break;
	}
	*reached = fi_disarm();
	return u;
}

/*
 * One call of @e with allocation @k failed (0: none) on a fresh buffer;
 * checks that it left nothing behind. Returns the errno (0 on success) and
 * whether allocation @k was reached.
 */
static int fi_once(struct kunit *test, const struct fi_entry *e,
		   unsigned int k, int fail_pin, int fail_map, bool *reached)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp;
	struct ib_umem_dmabuf *u;
	int fd, err, refs;

	exp = umem_mock_create(test, fi_lens, ARRAY_SIZE(fi_lens), e->dynamic);
	/* After the export, which holds this module (the exporter's owner). */
	refs = module_refcount(THIS_MODULE);
	exp->fail_pin = fail_pin;
	exp->fail_map = fail_map;
	fd = umem_mock_fd(test, exp);
	u = fi_create(ctx, e->call, fd, e->call == FI_MAP_PAGES ? 0 : k, reached);
	close_fd(fd);
	err = PTR_ERR_OR_ZERO(u);
	if (e->call == FI_MAP_PAGES && !err) {
		dma_resv_lock(exp->dmabuf->resv, NULL);
		fi_arm(k);
		err = ib_umem_dmabuf_map_pages(u);
		*reached = fi_disarm();
		ib_umem_dmabuf_unmap_pages(u);
		dma_resv_unlock(exp->dmabuf->resv);
	} else if (e->call == FI_MAP_PAGES && !fail_pin && !fail_map) {
		KUNIT_FAIL(test, "%s: get failed with nothing injected: %d",
			   e->name, err);
	}
	if (!IS_ERR(u))
		ib_umem_release(&u->umem);
	/* Nothing left: no module reference, attachment, pin, map or file. */
	KUNIT_EXPECT_EQ_MSG(test, module_refcount(THIS_MODULE), refs,
			    "%s, allocation %u failed", e->name, k);
	umem_mock_destroy(test, exp);
	return err;
}

static void fi_sweep(struct kunit *test, const struct fi_entry *e,
		     struct fi_sweep *s)
{
	bool reached;
	int err;
	u32 k;

	memset(s, 0, sizeof(*s));
	for (k = 1; k <= FI_MAX_POINTS; k++) {
		err = fi_once(test, e, k, 0, 0, &reached);
		if (!reached) {
			/* Fewer than k allocations: the call ran unharmed. */
			KUNIT_EXPECT_EQ_MSG(test, err, 0, "%s with nothing failed", e->name);
			s->points = k - 1;
			break;
		}
		s->err[k - 1] = err;
	}
	KUNIT_EXPECT_LE_MSG(test, k, FI_MAX_POINTS, "%s: the sweep did not end", e->name);
	/* The exporter refuses to pin, then to map. */
	s->pin_err = fi_once(test, e, 0, -ENOMEM, 0, &reached);
	s->map_err = fi_once(test, e, 0, 0, -EIO, &reached);
	s->done = true;
}

static void fi_report(struct kunit *test, const struct fi_entry *e,
		      const struct fi_sweep *s, const char *importer)
{
	char buf[160];
	int i, n = 0;

	for (i = 0; i < s->points && n < sizeof(buf) - 8; i++)
		n += scnprintf(buf + n, sizeof(buf) - n, " %d", s->err[i]);
	kunit_info(test, "%s importer, %s: %d injection points, errnos:%s; pin failing: %d, map failing: %d\n",
		   importer, e->name, s->points, n ? buf : " none", s->pin_err,
		   s->map_err);
}

/* Runs @fn with the C importer answering ib_core's entry points. */
static void fi_sweep_c(struct kunit *test, const struct fi_entry *e,
		       struct fi_sweep *s)
{
	struct umem_test_ctx *ctx = test->priv;
	bool registered = umem_shim_is_registered();

	if (registered)
		ib_umem_dmabuf_unregister_ops(&umem_rs_ops);
	ctx->impl = &ib_umem_dmabuf_builtin_ops;
	fi_sweep(test, e, s);
	if (registered)
		KUNIT_EXPECT_EQ(test, ib_umem_dmabuf_register_ops(&umem_rs_ops), 0);
}

static void fault_injection_c(struct kunit *test)
{
	const struct fi_entry *e = test->param_value;
	struct fi_sweep *s = &fi_c_sweeps[e - fi_entries];

	fi_sweep_c(test, e, s);
	fi_report(test, e, s, "C");
	KUNIT_EXPECT_GE_MSG(test, s->points, e->min_points,
			    "too few allocations failed: is failslab set up (ignore-gfp-wait=N, cache-filter)?");
}

static void fault_injection_rust(struct kunit *test)
{
	const struct fi_entry *e = test->param_value;
	const struct fi_sweep *c = &fi_c_sweeps[e - fi_entries];
	struct fi_sweep *rs;
	int i;

	if (!umem_shim_is_registered())
		kunit_skip(test, "loaded with register=0");
	rs = kunit_kzalloc(test, sizeof(*rs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rs);
	if (!c->done) {
		struct fi_sweep *redo = kunit_kzalloc(test, sizeof(*redo), GFP_KERNEL);

		KUNIT_ASSERT_NOT_NULL(test, redo);
		fi_sweep_c(test, e, redo);
		c = redo;
	}
	((struct umem_test_ctx *)test->priv)->impl = &umem_rs_ops;
	fi_sweep(test, e, rs);
	fi_report(test, e, rs, "Rust");
	KUNIT_EXPECT_GE(test, rs->points, e->min_points);
	KUNIT_EXPECT_EQ_MSG(test, rs->points, c->points,
			    "%s: injection points differ from C's", e->name);
	for (i = 0; i < rs->points && i < c->points; i++)
		KUNIT_EXPECT_EQ_MSG(test, rs->err[i], c->err[i],
				    "%s, allocation %d failed: Rust and C errnos differ",
				    e->name, i + 1);
	KUNIT_EXPECT_EQ(test, rs->pin_err, c->pin_err);
	KUNIT_EXPECT_EQ(test, rs->map_err, c->map_err);
}

#else /* !CONFIG_FAILSLAB */

static void fault_injection_c(struct kunit *test)
{
	kunit_skip(test, "needs CONFIG_FAILSLAB (the test kernel)");
}

static void fault_injection_rust(struct kunit *test)
{
	kunit_skip(test, "needs CONFIG_FAILSLAB (the test kernel)");
}

#endif

static struct kunit_case fi_c_cases[] = {
	KUNIT_CASE_PARAM_ATTR(fault_injection_c, fi_entry_gen_params,
			      { .speed = KUNIT_SPEED_SLOW }),
	{}
};

static struct kunit_case fi_rust_cases[] = {
	KUNIT_CASE_PARAM_ATTR(fault_injection_rust, fi_entry_gen_params,
			      { .speed = KUNIT_SPEED_SLOW }),
	{}
};

static struct kunit_suite fi_c_suite = {
	.name = "fault_injection_c",
	.suite_init = umem_mock_suite_init,
	.suite_exit = umem_mock_suite_exit,
	.init = umem_test_init,
	.exit = umem_test_exit,
	.test_cases = fi_c_cases,
};

static struct kunit_suite fi_rust_suite = {
	.name = "fault_injection_rust",
	.suite_init = umem_mock_suite_init,
	.suite_exit = umem_mock_suite_exit,
	.init = umem_test_init,
	.exit = umem_test_exit,
	.test_cases = fi_rust_cases,
};

kunit_test_suites(&fi_c_suite, &fi_rust_suite);
