// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite table of dmabuf_exporter_rs.ko: each case calls a Rust body
 * (tests.rs), which reports failures through umem_kunit_fail().
 */
#include <kunit/test.h>
#include <linux/module.h>

MODULE_IMPORT_NS(DMA_BUF);

void umem_kunit_fail(struct kunit *test, const char *msg);
void dmabuf_exp_test_create_layouts(struct kunit *test);
void dmabuf_exp_test_create_rejects(struct kunit *test);
void dmabuf_exp_test_migrate_remaps(struct kunit *test);
void dmabuf_exp_test_migrate_refusals(struct kunit *test);
void dmabuf_exp_test_fence_orders_copy(struct kunit *test);
void dmabuf_exp_test_refcounts(struct kunit *test);

void umem_kunit_fail(struct kunit *test, const char *msg)
{
	KUNIT_FAIL(test, "%s", msg);
}

#define EXP_CASE(name)						\
	static void name(struct kunit *test)			\
	{							\
		dmabuf_exp_test_##name(test);			\
	}

EXP_CASE(create_layouts)
EXP_CASE(create_rejects)
EXP_CASE(migrate_remaps)
EXP_CASE(migrate_refusals)
EXP_CASE(fence_orders_copy)
EXP_CASE(refcounts)

static struct kunit_case dmabuf_exp_cases[] = {
	KUNIT_CASE(create_layouts),
	KUNIT_CASE(create_rejects),
	KUNIT_CASE(migrate_remaps),
	KUNIT_CASE(migrate_refusals),
	KUNIT_CASE(fence_orders_copy),
	KUNIT_CASE(refcounts),
	{}
};

static struct kunit_suite dmabuf_exp_suite = {
	.name = "dmabuf_exporter_rs",
	.test_cases = dmabuf_exp_cases,
};

kunit_test_suites(&dmabuf_exp_suite);
