/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A mock dma-buf exporter for the importer's KUnit tests: configurable
 * scatter-gather layouts with synthetic DMA addresses, static or dynamic
 * (pin/unpin, move_notify), kernel fences that signal later from a work item,
 * failure injection in pin and map, and counters proving that every call is
 * balanced and that the importer gave back the table it was given.
 */
#ifndef UMEM_MOCK_EXPORTER_H
#define UMEM_MOCK_EXPORTER_H

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/dma-buf.h>
#include <linux/dma-fence.h>

struct umem_mock_exp {
	struct dma_buf *dmabuf;
	size_t size;
	u32 nents;
	const u32 *lens;	/* DMA length of each entry */
	u64 base;		/* DMA address of entry 0 */
	u64 gap;		/* bus gap between consecutive entries */
	bool dynamic;		/* has pin/unpin: move_notify capable */
	int fail_pin;		/* errno returned by pin, 0 for success */
	int fail_map;		/* errno returned by map, 0 for success */
	/*
	 * Notify each new attachment of a move from inside attach, standing in
	 * for a move by another thread right after the core made the
	 * attachment visible, before the importer got it back.
	 */
	bool notify_in_attach;
	/*
	 * Build each attachment's table once, at attach, and hand it out on
	 * every map of that attachment, as the dma-buf core of 6.x did with a
	 * static exporter's cached mapping: a map then costs the exporter
	 * nothing (the bench gate). Set before the first attach; no moves.
	 */
	bool prebuild;

	atomic_t attached, detached, pinned, unpinned, mapped, unmapped;
	atomic_t bad_restore;	/* unmaps whose table differed from the map */
	atomic_t map_calls;	/* includes failed ones */
	atomic_t pin_calls;	/* includes failed ones */
	bool released;
};

/*
 * Exports a buffer with the given entry lengths (the buffer size is their
 * sum). The test owns @exp (allocated with kunit_kzalloc); the buffer must be
 * dropped with umem_mock_destroy().
 */
struct umem_mock_exp *umem_mock_create(struct kunit *test, const u32 *lens,
				       u32 nents, bool dynamic);
/*
 * A suite's suite_init and suite_exit: where the dma-buf core hides the
 * importer's table from the exporter (7.x, CONFIG_DMABUF_DEBUG), they set
 * up and remove the check of the table the importer gives back.
 */
int umem_mock_suite_init(struct kunit_suite *suite);
void umem_mock_suite_exit(struct kunit_suite *suite);
/* The buffer (the test's reference, not a new one). */
struct dma_buf *umem_mock_dmabuf(struct umem_mock_exp *exp);
/* How many tables the exporter has handed out (its map callback's calls). */
unsigned int umem_mock_mapped(struct umem_mock_exp *exp);
/* How many tables the exporter has had back (its unmap callback's calls). */
unsigned int umem_mock_unmapped(struct umem_mock_exp *exp);
/* How many pins the exporter has had undone (its unpin callback's calls). */
unsigned int umem_mock_unpinned(struct umem_mock_exp *exp);
/* A new file descriptor for the buffer (holding its own reference). */
int umem_mock_fd(struct kunit *test, struct umem_mock_exp *exp);
/* DMA address of entry @i as the exporter maps it now. */
u64 umem_mock_addr(struct umem_mock_exp *exp, u32 i);
/*
 * Sends move_notify under the lock, then moves the buffer to new DMA
 * addresses unless an attachment still pins it.
 */
void umem_mock_move(struct umem_mock_exp *exp);
/*
 * Adds a DMA_RESV_USAGE_KERNEL fence that a work item signals after
 * @delay_ms; returns a reference to it.
 */
struct dma_fence *umem_mock_add_fence(struct umem_mock_exp *exp,
				      unsigned int delay_ms);
/* Drops the test's reference and checks that the buffer was released. */
void umem_mock_destroy(struct kunit *test, struct umem_mock_exp *exp);
/* Expects every attach/pin/map to have been undone and every table restored. */
void umem_mock_expect_balanced(struct kunit *test, struct umem_mock_exp *exp);

#endif /* UMEM_MOCK_EXPORTER_H */
