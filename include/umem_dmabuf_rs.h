/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C-visible ABI of umem_dmabuf_rs.ko: functions the Rust crate exports
 * to the C shim and the KUnit tables, and the shim functions Rust calls.
 * Rust types stay opaque to C.
 */
#ifndef UMEM_DMABUF_RS_H
#define UMEM_DMABUF_RS_H

#include <kunit/test.h>

/* C shim, called from the Rust module init/exit. */
int umem_shim_init(void);
void umem_shim_exit(void);

/* Reports a failed expectation of a Rust test body to KUnit. */
void umem_kunit_fail(struct kunit *test, const char *msg);

/* Rust KUnit test bodies (rust/tests.rs). */
void umem_rs_test_resv_guard_locks(struct kunit *test);
void umem_rs_test_resv_guard_identity(struct kunit *test);
void umem_rs_test_resv_wait_no_fences(struct kunit *test);
void umem_rs_test_sg_view_entries(struct kunit *test);
void umem_rs_test_window_inside_one(struct kunit *test);
void umem_rs_test_window_spanning(struct kunit *test);
void umem_rs_test_window_boundaries(struct kunit *test);
void umem_rs_test_window_restore(struct kunit *test);

#endif /* UMEM_DMABUF_RS_H */
