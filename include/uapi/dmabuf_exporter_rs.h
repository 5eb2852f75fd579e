/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * UAPI of dmabuf_exporter_rs.ko, a movable dma-buf exporter for tests:
 * /dev/dmabuf_exporter_rs.
 *
 * Every structure starts with a version (DMABUF_EXP_VERSION) and has only
 * naturally aligned fields with explicit padding, so its layout is the same
 * for 32- and 64-bit userspace; reserved fields must be zero.
 */
#ifndef _UAPI_DMABUF_EXPORTER_RS_H
#define _UAPI_DMABUF_EXPORTER_RS_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define DMABUF_EXP_VERSION 1

/* CREATE flags */
#define DMABUF_EXP_F_DYNAMIC	(1U << 0)	/* pin/unpin, can migrate */
#define DMABUF_EXP_F_DEVMEM	(1U << 1)	/* in device memory; needs F_DYNAMIC */
#define DMABUF_EXP_F_REVOCABLE	(1U << 2)	/* vfio-pci's rules; needs F_DYNAMIC */
#define DMABUF_EXP_F_ALL	(DMABUF_EXP_F_DYNAMIC | DMABUF_EXP_F_DEVMEM | \
				 DMABUF_EXP_F_REVOCABLE)

#define DMABUF_EXP_MAX_SIZE	(1ULL << 30)	/* bytes */
#define DMABUF_EXP_MAX_CHUNKS	65536
#define DMABUF_EXP_MAX_CHUNK_PAGES 512
#define DMABUF_EXP_MAX_DELAY_MS	10000

/**
 * struct dmabuf_exp_create - export a new zeroed buffer
 * @version: DMABUF_EXP_VERSION
 * @flags: DMABUF_EXP_F_*
 * @size: bytes; a multiple of the page size, at most DMABUF_EXP_MAX_SIZE
 * @chunks: user pointer to @nchunks __u32 chunk sizes in pages, each a power
 *	of two up to DMABUF_EXP_MAX_CHUNK_PAGES, adding up to @size; each chunk
 *	is one entry of the exported table
 * @nchunks: 0 for one page per entry, else at most DMABUF_EXP_MAX_CHUNKS
 * @fd: out: the dma-buf file descriptor (O_RDWR | O_CLOEXEC)
 *
 * With DMABUF_EXP_F_DEVMEM the buffer starts in device memory (the BAR of an
 * ivshmem-plain device the module drives); errors: ENODEV without one,
 * ENOMEM when it is full, EINVAL without DMABUF_EXP_F_DYNAMIC.
 *
 * With DMABUF_EXP_F_REVOCABLE the buffer follows vfio-pci's rules for the
 * dma-bufs of a BAR: an importer that cannot be revoked (one without
 * invalidate_mappings, dma_buf_attach_revocable()) is refused with
 * EOPNOTSUPP, and DMABUF_EXP_IOC_REVOKE revokes and restores it; EINVAL
 * without DMABUF_EXP_F_DYNAMIC.
 */
struct dmabuf_exp_create {
	__u32 version;
	__u32 flags;
	__u64 size;
	__u64 chunks;
	__u32 nchunks;
	__s32 fd;
};

/**
 * struct dmabuf_exp_migrate - move a dynamic buffer to new pages
 * @version: DMABUF_EXP_VERSION
 * @fd: a dma-buf from CREATE
 * @delay_ms: the copy completes (and its DMA_RESV_USAGE_KERNEL fence
 *	signals) at least this long after the move, at most
 *	DMABUF_EXP_MAX_DELAY_MS
 * @flags: DMABUF_EXP_MIGRATE_F_*; unknown bits are refused
 *
 * The buffer moves to new memory of the same kind, or to device or system
 * memory with DMABUF_EXP_MIGRATE_F_TO_DEVMEM or DMABUF_EXP_MIGRATE_F_TO_SYSTEM.
 *
 * Errors: EBUSY if an importer pinned the buffer, EOPNOTSUPP for a static
 * buffer, EINVAL for a buffer of another exporter or unknown flags (or both
 * destinations), ENODEV without device memory.
 */
struct dmabuf_exp_migrate {
	__u32 version;
	__s32 fd;
	__u32 delay_ms;
	__u32 flags;
};

/*
 * Test aid: every map of the buffer fails with -EIO from this migration on
 * (until a migration without the flag), so importers meet a buffer they
 * cannot map again.
 */
#define DMABUF_EXP_MIGRATE_F_FAIL_MAPS	(1U << 0)
#define DMABUF_EXP_MIGRATE_F_TO_DEVMEM	(1U << 1)
#define DMABUF_EXP_MIGRATE_F_TO_SYSTEM	(1U << 2)

/**
 * struct dmabuf_exp_stats - counters of a buffer
 * @version: DMABUF_EXP_VERSION
 * @fd: a dma-buf from CREATE
 * @attachments: live attachments
 * @pins: live pins
 * @mappings: live mappings
 * @maps: mappings made so far
 * @migrations: migrations so far
 * @move_notifies: attachments notified of a move so far
 * @p2p_maps: mappings of device memory (peer-to-peer tables) made so far
 * @unrestored: tables of device memory given back changed (an importer
 *	trimmed one and did not restore it)
 * @placement: DMABUF_EXP_PLACEMENT_*: where the buffer is now
 * @reserved: zero
 * @devmem_offset: in device memory as one range of the BAR: the offset there
 *	of its first byte (what the host sees at that offset of the BAR's
 *	backing file); DMABUF_EXP_NO_OFFSET otherwise
 */
struct dmabuf_exp_stats {
	__u32 version;
	__s32 fd;
	__u64 attachments;
	__u64 pins;
	__u64 mappings;
	__u64 maps;
	__u64 migrations;
	__u64 move_notifies;
	__u64 p2p_maps;
	__u64 unrestored;
	__u32 placement;
	__u32 reserved;
	__u64 devmem_offset;
};

#define DMABUF_EXP_PLACEMENT_SYSTEM	0
#define DMABUF_EXP_PLACEMENT_DEVMEM	1
#define DMABUF_EXP_NO_OFFSET		(~0ULL)

/**
 * struct dmabuf_exp_inject - make later pins or maps of a buffer fail
 * @version: DMABUF_EXP_VERSION
 * @fd: a dma-buf from CREATE
 * @pin_errno: 0, or the (positive) errno every later pin fails with
 * @map_errno: 0, or the (positive) errno every later map fails with
 *
 * A test aid, for importers' error paths; 0 switches the failure off again
 * (a migration also sets @map_errno: EIO with DMABUF_EXP_MIGRATE_F_FAIL_MAPS,
 * else 0). Errors: EINVAL for an errno above 4095, a bad version or a buffer
 * of another exporter.
 */
struct dmabuf_exp_inject {
	__u32 version;
	__s32 fd;
	__u32 pin_errno;
	__u32 map_errno;
};

/**
 * struct dmabuf_exp_rw - read or write bytes of a buffer
 * @version: DMABUF_EXP_VERSION
 * @fd: a dma-buf from CREATE
 * @offset: first byte in the buffer
 * @len: bytes
 * @data: user address of @len bytes to fill (read) or to copy (write)
 * @flags: DMABUF_EXP_RW_F_WRITE, or 0 to read
 * @reserved: zero
 *
 * Copies through the exporter's own CPU mapping of the buffer's memory, once
 * a pending migration copy is done: a view of the contents that does not
 * depend on a CPU mapping of the dma-buf, to compare what RDMA and mmap()
 * see with. Errors: EINVAL for a range outside the buffer, unknown
 * flags, a bad version or a buffer of another exporter; EFAULT.
 */
struct dmabuf_exp_rw {
	__u32 version;
	__s32 fd;
	__u64 offset;
	__u64 len;
	__u64 data;
	__u32 flags;
	__u32 reserved;
};

#define DMABUF_EXP_RW_F_WRITE	(1U << 0)

/**
 * struct dmabuf_exp_revoke - revoke a buffer, or restore it
 * @version: DMABUF_EXP_VERSION
 * @fd: a dma-buf from CREATE with DMABUF_EXP_F_REVOCABLE
 * @flags: DMABUF_EXP_REVOKE_F_RESTORE to restore, 0 to revoke
 * @reserved: zero
 * @wait_ns: out: from the invalidation until the last mapping was unmapped
 *	(0 if there was none)
 * @unmapped: out: the mappings the importers unmapped in that time
 *
 * Revoking does what vfio-pci does when a device's memory goes away (reset,
 * memory decoding off, unbind; vfio_pci_dma_buf_move()): under the
 * reservation lock it marks the buffer revoked and invalidates every
 * importer's mappings, then waits until each one has been unmapped. While
 * revoked, new attachments fail with ENODEV and so do maps. Restoring lets
 * importers map it again. Waiting can be interrupted by a signal (EINTR: the
 * buffer stays revoked). Errors: EINVAL for a buffer without
 * DMABUF_EXP_F_REVOCABLE, unknown flags or a bad version; EALREADY to revoke
 * a revoked buffer or restore one that is not.
 */
struct dmabuf_exp_revoke {
	__u32 version;
	__s32 fd;
	__u32 flags;
	__u32 reserved;
	__u64 wait_ns;
	__u64 unmapped;
};

#define DMABUF_EXP_REVOKE_F_RESTORE	(1U << 0)

/*
 * Samples of one kind that a buffer keeps until they are read; later ones
 * are dropped (and counted).
 */
#define DMABUF_EXP_LATENCY_SAMPLES	256

/**
 * struct dmabuf_exp_latency - how fast importers follow an invalidation
 * @version: DMABUF_EXP_VERSION
 * @fd: a dma-buf from CREATE with DMABUF_EXP_F_DYNAMIC
 * @count: room in each array
 * @reserved: zero
 * @unmap_ns: user pointer to @count __u64: per mapping live at an
 *	invalidation (a migration or a revocation), the time from the
 *	invalidation until the importer unmapped it
 * @remap_ns: user pointer to @count __u64: per invalidation of a mapped
 *	buffer, the time until the next map (for rxe: the next access served)
 * @unmaps: out: samples written to @unmap_ns
 * @remaps: out: samples written to @remap_ns
 * @dropped: out: samples lost because DMABUF_EXP_LATENCY_SAMPLES were kept
 *	already, or @count had no room for them
 *
 * Returns the samples taken since the last call and forgets them. A new
 * invalidation before every mapping of the last one was unmapped ends that
 * one's samples. Errors: EINVAL for a static buffer or a bad version; EFAULT.
 */
struct dmabuf_exp_latency {
	__u32 version;
	__s32 fd;
	__u32 count;
	__u32 reserved;
	__u64 unmap_ns;
	__u64 remap_ns;
	__u32 unmaps;
	__u32 remaps;
	__u64 dropped;
};

#define DMABUF_EXP_IOC_MAGIC	0xDE
#define DMABUF_EXP_IOC_CREATE	_IOWR(DMABUF_EXP_IOC_MAGIC, 1, struct dmabuf_exp_create)
#define DMABUF_EXP_IOC_MIGRATE	_IOW(DMABUF_EXP_IOC_MAGIC, 2, struct dmabuf_exp_migrate)
#define DMABUF_EXP_IOC_STATS	_IOWR(DMABUF_EXP_IOC_MAGIC, 3, struct dmabuf_exp_stats)
#define DMABUF_EXP_IOC_INJECT	_IOW(DMABUF_EXP_IOC_MAGIC, 4, struct dmabuf_exp_inject)
#define DMABUF_EXP_IOC_RW	_IOW(DMABUF_EXP_IOC_MAGIC, 5, struct dmabuf_exp_rw)
#define DMABUF_EXP_IOC_REVOKE	_IOWR(DMABUF_EXP_IOC_MAGIC, 6, struct dmabuf_exp_revoke)
#define DMABUF_EXP_IOC_LATENCY	_IOWR(DMABUF_EXP_IOC_MAGIC, 7, struct dmabuf_exp_latency)

#endif /* _UAPI_DMABUF_EXPORTER_RS_H */
