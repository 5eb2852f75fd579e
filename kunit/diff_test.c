// SPDX-License-Identifier: GPL-2.0
/*
 * umem_dmabuf_rs_diff: the same pseudo-random (layout, offset, length, kind)
 * cases through the built-in C importer and the Rust one, comparing errnos,
 * the umem fields and every entry of the trimmed window. Any mismatch prints
 * the case, which the seed reproduces.
 *
 * umem_dmabuf_rs_hook: ib_core's exported entry points reach the Rust code
 * while it is registered and the C code when it is not, the module is held
 * by each umem it created, and (un)registration races with creation safely.
 */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/scatterlist.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "umem_dmabuf_rs.h"
#include "umem_mock_exporter.h"
#include "umem_test.h"

#define P PAGE_SIZE
#define DIFF_SEED 0x5eed0d1fULL
#define DIFF_CASES 1200
#define DIFF_MAX_ENTRIES 48

enum diff_kind { DIFF_DYNAMIC, DIFF_PINNED, DIFF_REVOCABLE, DIFF_KINDS };

struct diff_result {
	long err;		/* from get, 0 on success */
	int map_ret;		/* from map_pages (dynamic kind) */
	u32 nents;
	unsigned long address, first_off, last_trim;
	bool sgl_set;
	u32 pieces;
	u64 addr[DIFF_MAX_ENTRIES];
	u32 len[DIFF_MAX_ENTRIES];
};

static void diff_run(struct umem_test_ctx *ctx,
		     const struct ib_umem_dmabuf_ops *impl,
		     struct umem_mock_exp *exp, int fd, enum diff_kind kind,
		     unsigned long off, size_t size, struct diff_result *r)
{
	struct ib_umem_dmabuf *u;
	struct scatterlist *sg;
	u32 i;

	memset(r, 0, sizeof(*r));
	ctx->impl = impl;
	switch (kind) {
	case DIFF_DYNAMIC:
		u = impl->get(ctx->ibdev, ctx->dev, off, size, fd, 0,
			      &umem_test_drv_ops);
		break;
	case DIFF_PINNED:
		u = impl->get_pinned(ctx->ibdev, ctx->dev, off, size, fd, 0);
		break;
	default:
		u = impl->get_pinned_revocable_and_lock(ctx->ibdev, ctx->dev,
							off, size, fd, 0);
		if (!IS_ERR(u))
			dma_resv_unlock(u->attach->dmabuf->resv);
		break;
	}
	if (IS_ERR(u)) {
		r->err = PTR_ERR(u);
		return;
	}
	dma_resv_lock(exp->dmabuf->resv, NULL);
	if (kind == DIFF_DYNAMIC)
		r->map_ret = impl->map_pages(u);
	r->nents = u->umem.sgt_append.sgt.nents;
	r->address = u->umem.address;
	r->first_off = u->first_sg_offset;
	r->last_trim = u->last_sg_trim;
	r->sgl_set = u->umem.sgt_append.sgt.sgl;
	for (sg = u->umem.sgt_append.sgt.sgl, i = 0;
	     sg && i < r->nents && i < DIFF_MAX_ENTRIES; sg = sg_next(sg), i++) {
		r->addr[i] = sg_dma_address(sg);
		r->len[i] = sg_dma_len(sg);
	}
	r->pieces = i;
	impl->unmap_pages(u);
	dma_resv_unlock(exp->dmabuf->resv);
	impl->release(u);
}

static const char *const diff_kind_names[] = { "dynamic", "pinned", "revocable" };

static bool diff_same(struct kunit *test, u32 idx, const struct diff_result *c,
		      const struct diff_result *rs)
{
	u32 i;

	if (c->err != rs->err || c->map_ret != rs->map_ret ||
	    c->nents != rs->nents || c->address != rs->address ||
	    c->first_off != rs->first_off || c->last_trim != rs->last_trim ||
	    c->sgl_set != rs->sgl_set || c->pieces != rs->pieces) {
		kunit_err(test, "case %u: C err %ld map %d nents %u off %lu trim %lu, Rust err %ld map %d nents %u off %lu trim %lu\n",
			  idx, c->err, c->map_ret, c->nents, c->first_off,
			  c->last_trim, rs->err, rs->map_ret, rs->nents,
			  rs->first_off, rs->last_trim);
		return false;
	}
	for (i = 0; i < c->pieces; i++) {
		if (c->addr[i] != rs->addr[i] || c->len[i] != rs->len[i]) {
			kunit_err(test, "case %u entry %u: C %#llx+%u, Rust %#llx+%u\n",
				  idx, i, c->addr[i], c->len[i], rs->addr[i],
				  rs->len[i]);
			return false;
		}
	}
	return true;
}

static void diff_random_cases(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct diff_result *c, *rs;
	struct rnd_state rnd;
	u32 idx, mismatches = 0, ok_cases = 0, err_cases = 0;

	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	rs = kunit_kzalloc(test, sizeof(*rs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	KUNIT_ASSERT_NOT_NULL(test, rs);
	prandom_seed_state(&rnd, DIFF_SEED);
	for (idx = 0; idx < DIFF_CASES; idx++) {
		u32 nents = 1 + prandom_u32_state(&rnd) % DIFF_MAX_ENTRIES;
		bool dynamic = prandom_u32_state(&rnd) & 1;
		enum diff_kind kind = prandom_u32_state(&rnd) % DIFF_KINDS;
		struct umem_mock_exp *exp;
		unsigned long off, total = 0;
		size_t size;
		u32 *lens, i, pick;
		int fd;

		lens = kcalloc(nents, sizeof(*lens), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, lens);
		for (i = 0; i < nents; i++) {
			/* Mostly small entries, some large coalesced ones. */
			if (prandom_u32_state(&rnd) % 10 == 0)
				lens[i] = (16 + prandom_u32_state(&rnd) % 49) * P;
			else
				lens[i] = (1 + prandom_u32_state(&rnd) % 4) * P;
			total += lens[i];
		}
		pick = prandom_u32_state(&rnd) % 16;
		if (pick == 0) {			/* zero length */
			off = prandom_u32_state(&rnd) % total;
			size = 0;
		} else if (pick == 1) {			/* beyond the end */
			off = total - prandom_u32_state(&rnd) % P;
			size = P + 1;
		} else if (pick == 2) {			/* offset + size overflows */
			off = ULONG_MAX - prandom_u32_state(&rnd) % P;
			size = 2 * P;
		} else if (pick == 3) {			/* whole buffer */
			off = 0;
			size = total;
		} else {
			off = prandom_u32_state(&rnd) % total;
			size = 1 + prandom_u32_state(&rnd) % (total - off);
		}
		if (kind == DIFF_REVOCABLE)
			dynamic = true;	/* revocation needs move_notify */

		exp = umem_mock_create(test, lens, nents, dynamic);
		fd = umem_mock_fd(test, exp);
		diff_run(ctx, &ib_umem_dmabuf_builtin_ops, exp, fd, kind, off, size, c);
		diff_run(ctx, &umem_rs_ops, exp, fd, kind, off, size, rs);
		close_fd(fd);
		if (!diff_same(test, idx, c, rs)) {
			mismatches++;
			kunit_err(test, "case %u (seed %#llx): %s importer, %s exporter, %u entries (first %u bytes), offset %lu, length %zu, buffer %lu bytes\n",
				  idx, DIFF_SEED, diff_kind_names[kind],
				  dynamic ? "dynamic" : "static", nents, lens[0],
				  off, size, total);
		}
		if (c->err)
			err_cases++;
		else
			ok_cases++;
		umem_mock_destroy(test, exp);
		kfree(lens);
		if (mismatches >= 10)
			break;
	}
	KUNIT_EXPECT_EQ(test, mismatches, 0U);
	/* The generator must exercise both outcomes substantially. */
	KUNIT_EXPECT_GE(test, ok_cases, DIFF_CASES / 2);
	KUNIT_EXPECT_GE(test, err_cases, DIFF_CASES / 20);
	kunit_info(test, "%u cases: %u mapped, %u refused, %u mismatches\n",
		   idx, ok_cases, err_cases, mismatches);
}

static struct kunit_case umem_diff_cases[] = {
	KUNIT_CASE_SLOW(diff_random_cases),
	{}
};

static struct kunit_suite umem_diff_suite = {
	.name = "umem_dmabuf_rs_diff",
	.suite_init = umem_mock_suite_init,
	.suite_exit = umem_mock_suite_exit,
	.init = umem_test_init,
	.exit = umem_test_exit,
	.test_cases = umem_diff_cases,
};

static void restore_counting(void *was_on)
{
	umem_rs_set_counting(!!was_on);
}

/* Turns the Rust entry points' counting on until the case ends. */
static void count_calls(struct kunit *test, bool on)
{
	bool was_on = umem_rs_counting();

	umem_rs_set_counting(on);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, restore_counting,
							was_on ? (void *)1 : NULL), 0);
}

/* ib_core's public entry points reach the Rust code and hold the module. */
static void hook_reaches_rust(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, (const u32[]){ 4 * P }, 1, true);
	int fd = umem_mock_fd(test, exp);
	u64 gets, pinned, maps, releases;
	int refs = module_refcount(THIS_MODULE);
	struct ib_umem_dmabuf *u;

	count_calls(test, true);
	gets = umem_rs_calls(UMEM_RS_GET);
	pinned = umem_rs_calls(UMEM_RS_GET_PINNED);
	maps = umem_rs_calls(UMEM_RS_MAP_PAGES);
	releases = umem_rs_calls(UMEM_RS_RELEASE);

	/* The C indices name the same entry points as Rust's. */
	KUNIT_EXPECT_STREQ(test, umem_rs_entry_name(UMEM_RS_GET), "get");
	KUNIT_EXPECT_STREQ(test, umem_rs_entry_name(UMEM_RS_GET_PINNED), "get_pinned");
	KUNIT_EXPECT_STREQ(test, umem_rs_entry_name(UMEM_RS_MAP_PAGES), "map_pages");
	KUNIT_EXPECT_STREQ(test, umem_rs_entry_name(UMEM_RS_RELEASE), "release");
	KUNIT_EXPECT_NULL(test, umem_rs_entry_name(UMEM_RS_ENTRIES));
	if (!umem_shim_is_registered())
		kunit_skip(test, "loaded with register=0");
	u = ib_umem_dmabuf_get(ctx->ibdev, 0, 2 * P, fd, 0, &umem_test_drv_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(u));
	KUNIT_EXPECT_PTR_EQ(test, u->ops, &umem_rs_ops);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_GET), gets + 1);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), refs + 1);
	dma_resv_lock(exp->dmabuf->resv, NULL);
	KUNIT_EXPECT_EQ(test, ib_umem_dmabuf_map_pages(u), 0);
	dma_resv_unlock(exp->dmabuf->resv);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_MAP_PAGES), maps + 1);
	ib_umem_release(&u->umem);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_RELEASE), releases + 1);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), refs);

	u = ib_umem_dmabuf_get_pinned(ctx->ibdev, P, P, fd, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(u));
	KUNIT_EXPECT_PTR_EQ(test, u->ops, &umem_rs_ops);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_GET_PINNED), pinned + 1);
	ib_umem_release(&u->umem);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), refs);

	/* Errors come back through the hook and leave no reference behind. */
	u = ib_umem_dmabuf_get(ctx->ibdev, 0, 0, fd, 0, &umem_test_drv_ops);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(u), -EINVAL);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), refs);
	close_fd(fd);
	umem_mock_destroy(test, exp);
}

/*
 * ib_core's revoke entry points, which a driver that revokes its own MRs
 * calls (mlx5's dma-buf MRs; rxe has none), reach the Rust code too: the
 * driver's callback is set, the lock taken and dropped through ib_core,
 * and a revoke calls the callback, unmaps and unpins once.
 */
static void revoke_hooks_reach_rust(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, (const u32[]){ 4 * P }, 1, true);
	int fd = umem_mock_fd(test, exp);
	struct dma_resv *resv = exp->dmabuf->resv;
	u64 locks, unlocks, revokes, sets;
	struct ib_umem_dmabuf *u;

	if (!umem_shim_is_registered())
		kunit_skip(test, "loaded with register=0");
	count_calls(test, true);
	sets = umem_rs_calls(UMEM_RS_SET_REVOKE_LOCKED);
	locks = umem_rs_calls(UMEM_RS_REVOKE_LOCK);
	unlocks = umem_rs_calls(UMEM_RS_REVOKE_UNLOCK);
	revokes = umem_rs_calls(UMEM_RS_REVOKE);
	u = ib_umem_dmabuf_get_pinned_revocable_and_lock(ctx->ibdev, 0, 4 * P, fd, 0);
	close_fd(fd);
	KUNIT_ASSERT_FALSE(test, IS_ERR(u));
	KUNIT_EXPECT_PTR_EQ(test, u->ops, &umem_rs_ops);
	ib_umem_dmabuf_set_revoke_locked(u, umem_test_drv_revoke, ctx);
	dma_resv_unlock(resv);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_SET_REVOKE_LOCKED), sets + 1);

	ib_umem_dmabuf_revoke_lock(u);
	KUNIT_EXPECT_TRUE(test, dma_resv_is_locked(resv));
	ib_umem_dmabuf_revoke_unlock(u);
	KUNIT_EXPECT_FALSE(test, dma_resv_is_locked(resv));
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_REVOKE_LOCK), locks + 1);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_REVOKE_UNLOCK), unlocks + 1);

	ib_umem_dmabuf_revoke(u);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_REVOKE), revokes + 1);
	KUNIT_EXPECT_EQ(test, ctx->revoked, 1);
	KUNIT_EXPECT_EQ(test, (u32)u->revoked, 1U);
	KUNIT_EXPECT_NULL(test, u->sgt);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unpinned), 1);
	ib_umem_dmabuf_revoke(u);	/* once only */
	KUNIT_EXPECT_EQ(test, ctx->revoked, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&exp->unpinned), 1);
	ib_umem_release(&u->umem);
	KUNIT_EXPECT_EQ(test, ctx->revoked, 1);
	umem_mock_destroy(test, exp);
}

/*
 * The entry points count only while asked to (count_calls): counting is a
 * cost the C importer does not have, so a production load does not pay it.
 */
static void hook_counts_only_when_asked(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, (const u32[]){ 4 * P }, 1, true);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *u;
	u64 gets, releases;

	if (!umem_shim_is_registered())
		kunit_skip(test, "loaded with register=0");
	count_calls(test, false);
	gets = umem_rs_calls(UMEM_RS_GET);
	releases = umem_rs_calls(UMEM_RS_RELEASE);
	u = ib_umem_dmabuf_get(ctx->ibdev, 0, P, fd, 0, &umem_test_drv_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(u));
	KUNIT_EXPECT_PTR_EQ(test, u->ops, &umem_rs_ops);
	ib_umem_release(&u->umem);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_GET), gets);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_RELEASE), releases);

	umem_rs_set_counting(true);
	KUNIT_EXPECT_TRUE(test, umem_rs_counting());
	u = ib_umem_dmabuf_get(ctx->ibdev, 0, P, fd, 0, &umem_test_drv_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(u));
	ib_umem_release(&u->umem);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_GET), gets + 1);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_RELEASE), releases + 1);
	close_fd(fd);
	umem_mock_destroy(test, exp);
}

/* Unregistered, the same calls reach the built-in C code. */
static void hook_unregistered_reaches_c(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, (const u32[]){ 4 * P }, 1, true);
	int fd = umem_mock_fd(test, exp);
	struct ib_umem_dmabuf *u, *old;
	u64 gets;

	if (!umem_shim_is_registered())
		kunit_skip(test, "loaded with register=0");
	count_calls(test, true);
	gets = umem_rs_calls(UMEM_RS_GET);
	/* A umem created before unregistration keeps reaching its creator. */
	old = ib_umem_dmabuf_get(ctx->ibdev, 0, P, fd, 0, &umem_test_drv_ops);
	KUNIT_ASSERT_FALSE(test, IS_ERR(old));
	ib_umem_dmabuf_unregister_ops(&umem_rs_ops);

	u = ib_umem_dmabuf_get(ctx->ibdev, 0, 2 * P, fd, 0, &umem_test_drv_ops);
	KUNIT_EXPECT_FALSE(test, IS_ERR(u));
	if (!IS_ERR(u)) {
		KUNIT_EXPECT_NULL(test, u->ops);
		ib_umem_release(&u->umem);
	}
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_GET), gets + 1);

	KUNIT_EXPECT_PTR_EQ(test, old->ops, &umem_rs_ops);
	ib_umem_release(&old->umem);
	KUNIT_EXPECT_EQ(test, umem_rs_calls(UMEM_RS_RELEASE) > 0, true);

	KUNIT_EXPECT_EQ(test, ib_umem_dmabuf_register_ops(&umem_rs_ops), 0);
	KUNIT_EXPECT_EQ(test, ib_umem_dmabuf_register_ops(&umem_rs_ops), -EBUSY);
	close_fd(fd);
	umem_mock_destroy(test, exp);
}

static int hook_flipper(void *data)
{
	int i;

	for (i = 0; i < 40 && !kthread_should_stop(); i++) {
		ib_umem_dmabuf_unregister_ops(&umem_rs_ops);
		usleep_range(100, 200);
		WARN_ON(ib_umem_dmabuf_register_ops(&umem_rs_ops));
		usleep_range(100, 200);
	}
	while (!kthread_should_stop())
		usleep_range(500, 1000);
	return 0;
}

/* Creation racing with (un)registration: every umem is released by its creator. */
static void hook_registration_race(struct kunit *test)
{
	struct umem_test_ctx *ctx = test->priv;
	struct umem_mock_exp *exp = umem_mock_create(test, (const u32[]){ 4 * P }, 1, true);
	int fd = umem_mock_fd(test, exp);
	int refs = module_refcount(THIS_MODULE);
	struct task_struct *flipper;
	int i, rust = 0, c = 0;

	if (!umem_shim_is_registered())
		kunit_skip(test, "loaded with register=0");
	flipper = kthread_run(hook_flipper, NULL, "umem_rs_flipper");
	KUNIT_ASSERT_FALSE(test, IS_ERR(flipper));
	for (i = 0; i < 400; i++) {
		struct ib_umem_dmabuf *u;

		u = ib_umem_dmabuf_get(ctx->ibdev, 0, P, fd, 0, &umem_test_drv_ops);
		if (IS_ERR(u)) {
			KUNIT_FAIL(test, "get failed: %ld", PTR_ERR(u));
			break;
		}
		if (u->ops == &umem_rs_ops)
			rust++;
		else
			c++;
		ib_umem_release(&u->umem);
	}
	kthread_stop(flipper);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), refs);
	kunit_info(test, "%d umems by Rust, %d by C\n", rust, c);
	close_fd(fd);
	umem_mock_destroy(test, exp);
}

static struct kunit_case umem_hook_cases[] = {
	KUNIT_CASE(hook_reaches_rust),
	KUNIT_CASE(revoke_hooks_reach_rust),
	KUNIT_CASE(hook_counts_only_when_asked),
	KUNIT_CASE(hook_unregistered_reaches_c),
	KUNIT_CASE(hook_registration_race),
	{}
};

static struct kunit_suite umem_hook_suite = {
	.name = "umem_dmabuf_rs_hook",
	.suite_init = umem_mock_suite_init,
	.suite_exit = umem_mock_suite_exit,
	.init = umem_test_init,
	.exit = umem_test_exit,
	.test_cases = umem_hook_cases,
};

kunit_test_suites(&umem_diff_suite, &umem_hook_suite);
