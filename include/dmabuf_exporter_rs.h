/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C-visible ABI of dmabuf_exporter_rs.ko: the Rust functions its C KUnit
 * case calls (samples/dmabuf_exporter/tests.rs).
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

#endif /* DMABUF_EXPORTER_RS_H */
