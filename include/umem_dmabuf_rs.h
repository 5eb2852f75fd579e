/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C-visible ABI of umem_dmabuf_rs.ko: what the Rust crate exports to the
 * C shim and the C KUnit suites, and the shim functions Rust calls. Rust types
 * stay opaque to C.
 */
#ifndef UMEM_DMABUF_RS_H
#define UMEM_DMABUF_RS_H

#include <linux/jump_label.h>
#include <rdma/ib_umem.h>

/* C shim, called from the Rust module init/exit. */
void umem_shim_init(void);
void umem_shim_exit(void);
/* Whether the Rust importer was registered with ib_core at load. */
bool umem_shim_is_registered(void);
/* A zeroed umem, allocated as ib_umem_dmabuf_get() allocates one. */
struct ib_umem_dmabuf *umem_shim_alloc_umem(void);

/*
 * The Rust importer (umem_rs.rs): its ops table, as registered with
 * ib_core at load unless register=0.
 */
extern const struct ib_umem_dmabuf_ops umem_rs_ops;
/*
 * The entry points in struct ib_umem_dmabuf_ops order: the indices of
 * umem_rs_calls() and umem_rs_entry_name() (Rust's enum Entry; the hook
 * suite checks that the names match).
 */
enum umem_rs_entry {
	UMEM_RS_GET,
	UMEM_RS_GET_PINNED,
	UMEM_RS_GET_PINNED_REVOCABLE,
	UMEM_RS_SET_REVOKE_LOCKED,
	UMEM_RS_MAP_PAGES,
	UMEM_RS_UNMAP_PAGES,
	UMEM_RS_REVOKE_LOCK,
	UMEM_RS_REVOKE_UNLOCK,
	UMEM_RS_REVOKE,
	UMEM_RS_RELEASE,
	UMEM_RS_ENTRIES,
};

/*
 * Calls of entry point @entry since load, counted only while counting is on
 * (module parameter count_calls, default off; umem_rs_set_counting()).
 */
u64 umem_rs_calls(u32 entry);
void umem_rs_set_counting(bool on);
bool umem_rs_counting(void);
/* Set while counting is on; tested by the Rust entry points. */
DECLARE_STATIC_KEY_FALSE(umem_rs_counting_key);
/* The name of entry point @entry; NULL past the last. */
const char *umem_rs_entry_name(u32 entry);

#endif /* UMEM_DMABUF_RS_H */
