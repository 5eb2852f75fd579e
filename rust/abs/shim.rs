// SPDX-License-Identifier: GPL-2.0

//! The module's own C shim.
//!
//! C header: [`include/umem_dmabuf_rs.h`](../../include/umem_dmabuf_rs.h)

#[cfg(not(umem_v7))]
use super::device::IbDevice;

// `struct ib_device` embeds empty arch structs, which rustc flags as not
// FFI-safe; only pointers to it cross the boundary.
#[allow(improper_ctypes)]
extern "C" {
    fn umem_shim_init();
    fn umem_shim_exit();
    fn umem_shim_is_registered() -> bool;
    #[cfg(not(umem_v7))]
    fn umem_shim_warn_pinned_move(device: *mut kernel::bindings::ib_device);
}

/// Whether the module parameter `register` asks for the importer to be
/// registered with ib_core at load (default: yes).
pub(crate) fn register_at_load() -> bool {
    // SAFETY: reads a module parameter; no preconditions.
    unsafe { umem_shim_is_registered() }
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

/// Logs (rate-limited, `ibdev_warn`) that an exporter tried to move a buffer
/// that a pinned umem of `device` uses, as the C implementation of 6.12 does
/// (since 7.1 pinned umems have no callback a move could reach).
#[cfg(not(umem_v7))]
pub(crate) fn warn_pinned_move(device: &IbDevice) {
    // SAFETY: `device` is a live ib_device.
    unsafe { umem_shim_warn_pinned_move(device.as_raw()) }
}
