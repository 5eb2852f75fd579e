/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C-visible ABI of dmabuf_exporter_rs.ko: the Rust functions its KUnit
 * table calls (samples/dmabuf_exporter/tests.rs).
 */
#ifndef DMABUF_EXPORTER_RS_H
#define DMABUF_EXPORTER_RS_H

#include <kunit/test.h>

/* Reports a failed expectation of a Rust test body to KUnit. */
void umem_kunit_fail(struct kunit *test, const char *msg);

void dmabuf_exp_test_create_layouts(struct kunit *test);
void dmabuf_exp_test_create_rejects(struct kunit *test);
void dmabuf_exp_test_migrate_remaps(struct kunit *test);
void dmabuf_exp_test_migrate_refusals(struct kunit *test);
void dmabuf_exp_test_fence_orders_copy(struct kunit *test);
void dmabuf_exp_test_refcounts(struct kunit *test);
void dmabuf_exp_test_wrong_lock_refused(struct kunit *test);
void dmabuf_exp_test_two_attachments_same_pages(struct kunit *test);

/* A new dynamic buffer of @size bytes as a descriptor, or -errno. */
int dmabuf_exp_kunit_create_fd(size_t size);
/* Migrates the buffer of @fd: 0 or -errno. */
int dmabuf_exp_kunit_migrate_fd(int fd, u32 delay_ms);

#endif /* DMABUF_EXPORTER_RS_H */
