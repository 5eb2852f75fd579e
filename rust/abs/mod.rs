// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the C objects the importer uses.
//!
//! The only place where `unsafe` code appears in this crate. The generic
//! dma-buf, DMA, scatterlist and KUnit abstractions are modules of the kernel
//! crate (7.3's own, and `kernel::dma_buf` from the patch series); what is
//! left here wraps the RDMA side: the `ib_device` and `ib_umem_dmabuf` of
//! ib_core and the hook through which ib_core calls this module (the
//! series' "RDMA/umem: allow a module to provide the dma-buf importer"),
//! plus the C shim's parameters and the fixtures of the Rust KUnit suite.

/// Whether the `struct static_key_false` in field `$field` of `$key`, a static
/// of type `$ty` defined in C, is on, as C's `static_branch_unlikely()` says:
/// a static branch with jump labels (the fast kernel); without them (the test
/// kernel) the key's count, read inline as C reads it
/// (`static_branch_unlikely!` would call the `static_key_count()` helper on
/// every check instead). Used for tracepoints and the call counters.
macro_rules! static_key_on {
    ($key:path, $ty:ty, $field:ident) => {{
        #[cfg(CONFIG_JUMP_LABEL)]
        // SAFETY: `$key` is a static defined in C whose `$field` is a static
        // key (the macro's contract), live while this code can run.
        let on = unsafe { kernel::jump_label::static_branch_unlikely!($key, $ty, $field) };
        #[cfg(not(CONFIG_JUMP_LABEL))]
        let on = {
            // SAFETY: `$key` is a static; only the address of its key's count
            // is taken.
            let count = unsafe { core::ptr::addr_of!($key.$field.key.enabled.counter) };
            // SAFETY: the count is an `atomic_t`'s, aligned, live while this
            // code can run, and only changed atomically (`static_key_enable()`
            // and friends).
            let count = unsafe { core::sync::atomic::AtomicI32::from_ptr(count.cast_mut()) };
            count.load(core::sync::atomic::Ordering::Relaxed) > 0
        };
        on
    }};
}
pub(crate) use static_key_on;

pub(crate) mod device;
pub(crate) mod shim;
#[cfg(umem_kunit)]
pub(crate) mod testing;
pub(crate) mod umem;
