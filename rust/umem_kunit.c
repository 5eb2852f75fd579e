// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite tables. On 6.12 there is no Rust #[kunit_tests], so each case
 * here calls a Rust extern "C" body, which reports failures through
 * umem_kunit_fail(). The suites run when the module is loaded.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "umem_dmabuf_rs.h"

void umem_kunit_fail(struct kunit *test, const char *msg)
{
	KUNIT_FAIL(test, "%s", msg);
}

#define UMEM_RS_CASE(name)					\
	static void name(struct kunit *test)			\
	{							\
		umem_rs_test_##name(test);			\
	}

UMEM_RS_CASE(resv_guard_locks)
UMEM_RS_CASE(resv_guard_identity)
UMEM_RS_CASE(resv_wait_no_fences)
UMEM_RS_CASE(sg_view_entries)
UMEM_RS_CASE(window_inside_one)
UMEM_RS_CASE(window_spanning)
UMEM_RS_CASE(window_boundaries)
UMEM_RS_CASE(window_restore)

static struct kunit_case umem_rs_abs_cases[] = {
	KUNIT_CASE(resv_guard_locks),
	KUNIT_CASE(resv_guard_identity),
	KUNIT_CASE(resv_wait_no_fences),
	KUNIT_CASE(sg_view_entries),
	KUNIT_CASE(window_inside_one),
	KUNIT_CASE(window_spanning),
	KUNIT_CASE(window_boundaries),
	KUNIT_CASE(window_restore),
	{}
};

static struct kunit_suite umem_rs_abs_suite = {
	.name = "umem_dmabuf_rs_abs",
	.test_cases = umem_rs_abs_cases,
};

kunit_test_suites(&umem_rs_abs_suite);
