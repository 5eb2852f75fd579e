// SPDX-License-Identifier: GPL-2.0

//! The module's own C shim.
//!
//! C header: `umem_dmabuf_rs.h`, beside the C shim.

use kernel::bindings;

/// The layout of a C `struct static_key_false` seen as the one-field structure
/// `static_branch_unlikely!` expects.
#[repr(C)]
struct CountingKey {
    key: bindings::static_key_false,
}

extern "C" {
    /// Set while the entry points count their calls (`umem_rs_set_counting()`).
    static umem_rs_counting_key: CountingKey;
    fn umem_shim_init();
    fn umem_shim_exit();
    fn umem_shim_is_registered() -> bool;
    // The C prototype returns `struct ib_umem_dmabuf *`: bindgen's struct
    // holds zero-sized members `improper_ctypes` refuses, hence the void.
    fn umem_shim_alloc_umem() -> *mut kernel::ffi::c_void;
}

/// Whether the module parameter `register` asks for the importer to be
/// registered with ib_core at load (default: yes).
pub(crate) fn register_at_load() -> bool {
    // SAFETY: reads a module parameter; no preconditions.
    unsafe { umem_shim_is_registered() }
}

/// Whether the entry points count their calls (module parameter
/// `count_calls`): a static key of the shim, a no-op while counting is off.
#[inline(always)]
pub(crate) fn counting() -> bool {
    super::static_key_on!(umem_rs_counting_key, CountingKey, key)
}

/// A zeroed `struct ib_umem_dmabuf` from kmalloc(), or null: `kzalloc()` of
/// its constant size, as `ib_umem_dmabuf_get()` allocates one (the slab cache
/// chosen at compile time, not looked up by size per call).
pub(crate) fn alloc_umem() -> *mut bindings::ib_umem_dmabuf {
    // SAFETY: a plain allocation; no preconditions.
    unsafe { umem_shim_alloc_umem() }.cast()
}

/// Runs the C part of module initialisation (debugfs; the `provoke_warning`
/// parameter).
pub(crate) fn init() {
    // SAFETY: `umem_shim_init` has no preconditions; it is called once from module init.
    unsafe { umem_shim_init() }
}

/// Undoes [`init`].
pub(crate) fn exit() {
    // SAFETY: `umem_shim_exit` has no preconditions; it is called once from module exit,
    // after `init`.
    unsafe { umem_shim_exit() }
}
