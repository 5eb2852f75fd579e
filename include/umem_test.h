/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared fixture of the importer's KUnit suites: the test plays the RDMA
 * driver, with an ib_device (never registered) whose DMA device is a KUnit
 * device, and driver attach ops whose move_notify unmaps, as mlx5's does.
 */
#ifndef UMEM_TEST_H
#define UMEM_TEST_H

#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <rdma/ib_umem.h>

struct umem_test_ctx {
	struct device *dev;
	struct ib_device *ibdev;
	/* Implementation under test: the case's parameter, else Rust. */
	const struct ib_umem_dmabuf_ops *impl;
	int notified;		/* move_notify calls of the test "driver" */
	int revoked;		/* revoke callback calls */
};

extern const struct dma_buf_attach_ops umem_test_drv_ops;
extern const struct dma_buf_attach_ops umem_test_drv_ops_no_move;
void umem_test_drv_revoke(void *priv);
int umem_test_init(struct kunit *test);
void umem_test_exit(struct kunit *test);
/*
 * For the Rust suite (rust/tests.rs): an ib_device (never registered) with a
 * KUnit device of 64-bit DMA as its DMA device, both freed when the case
 * ends; NULL on failure.
 */
struct ib_device *umem_test_ibdev(struct kunit *test);
/*
 * For the Rust heap suite: the system-heap buffer given at load
 * (kunit/heap_test.c), held by the module until it is unloaded, or NULL with
 * @test marked skipped.
 */
struct dma_buf *umem_kunit_heap_buf(struct kunit *test);

#endif /* UMEM_TEST_H */
