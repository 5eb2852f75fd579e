// SPDX-License-Identifier: GPL-2.0

//! The module's own C shim.
//!
//! C header: [`include/umem_dmabuf_rs.h`](../../include/umem_dmabuf_rs.h)

use kernel::error::to_result;
use kernel::prelude::*;

use super::device::IbDevice;

// `struct ib_device` embeds empty arch structs, which rustc flags as not
// FFI-safe; only pointers to it cross the boundary.
#[allow(improper_ctypes)]
extern "C" {
    fn umem_shim_init() -> kernel::ffi::c_int;
    fn umem_shim_exit();
    fn umem_shim_warn_pinned_move(device: *mut kernel::bindings::ib_device);
}

/// Runs the C part of module initialisation.
pub(crate) fn init() -> Result {
    // SAFETY: `umem_shim_init` has no preconditions; it is called once from module init.
    to_result(unsafe { umem_shim_init() })
}

/// Undoes [`init`].
pub(crate) fn exit() {
    // SAFETY: `umem_shim_exit` has no preconditions; it is called once from module exit,
    // after a successful `init`.
    unsafe { umem_shim_exit() }
}

/// Logs (rate-limited, `ibdev_warn`) that an exporter tried to move a buffer
/// that a pinned umem of `device` uses, as the C implementation does.
pub(crate) fn warn_pinned_move(device: &IbDevice) {
    // SAFETY: `device` is a live ib_device.
    unsafe { umem_shim_warn_pinned_move(device.as_raw()) }
}
