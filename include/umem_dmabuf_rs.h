/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C-visible ABI of umem_dmabuf_rs.ko: what the Rust crate exports to the
 * C shim and the C KUnit suites, and the shim functions Rust calls. Rust types
 * stay opaque to C.
 */
#ifndef UMEM_DMABUF_RS_H
#define UMEM_DMABUF_RS_H

#include <rdma/ib_umem.h>

/* C shim, called from the Rust module init/exit. */
void umem_shim_init(void);
void umem_shim_exit(void);
void umem_shim_warn_pinned_move(struct ib_device *device);
/* Whether the Rust importer was registered with ib_core at load. */
bool umem_shim_is_registered(void);

/*
 * The Rust importer (rust/umem_rs.rs): its ops table, as registered with
 * ib_core at load unless register=0.
 */
extern const struct ib_umem_dmabuf_ops umem_rs_ops;
/* Calls of entry point @entry (table order), counted since load. */
u64 umem_rs_calls(u32 entry);
/* The name of entry point @entry; NULL past the last. */
const char *umem_rs_entry_name(u32 entry);

#endif /* UMEM_DMABUF_RS_H */
