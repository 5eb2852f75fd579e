/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C-visible ABI of dmabuf_exporter_rs.ko: the Rust functions its C KUnit
 * cases call (samples/dmabuf_exporter/dmabuf_exp.rs).
 */
#ifndef DMABUF_EXPORTER_RS_H
#define DMABUF_EXPORTER_RS_H

#include <linux/types.h>

/* A new dynamic buffer of @size bytes as a descriptor, or -errno. */
int dmabuf_exp_kunit_create_fd(size_t size);
/* Migrates the buffer of @fd: 0 or -errno. */
int dmabuf_exp_kunit_migrate_fd(int fd, u32 delay_ms);
/* Entry @i of the Rust side's UAPI layout (offsets and sizes), -1 past the end. */
s64 dmabuf_exp_uapi_layout(u32 i);

/*
 * Device memory (samples/dmabuf_exporter/devmem_kunit.c).
 * A new dynamic buffer in device memory, @layout 0 (one page per entry) or
 * 1 (chunks of 4, 8 and 4 pages): a descriptor, or -errno.
 */
int dmabuf_exp_kunit_create_devmem_fd(size_t size, u32 layout);
/* The device memory's bus address (@len false) or length; 0 without one. */
u64 dmabuf_exp_kunit_devmem_range(bool len);
/*
 * Counter @which of the buffer of @fd: 0 placement (1: device memory),
 * 1 peer-to-peer maps, 2 tables given back changed, 3 migrations,
 * 4 live mappings; or -errno.
 */
s64 dmabuf_exp_kunit_stat(int fd, u32 which);
/* Moves the buffer of @fd to device (@to_device) or system memory: 0 or -errno. */
int dmabuf_exp_kunit_place_fd(int fd, bool to_device);
/*
 * Writes (@check false) or checks the pattern of @seed over the first @len
 * bytes of the buffer of @fd: 0, 1 for a mismatch, or -errno.
 */
int dmabuf_exp_kunit_pattern(int fd, u32 seed, size_t len, bool check);

#endif /* DMABUF_EXPORTER_RS_H */
