// SPDX-License-Identifier: GPL-2.0

//! The module's own C shim.
//!
//! C header: [`include/umem_dmabuf_rs.h`](../../include/umem_dmabuf_rs.h)

use kernel::error::to_result;
use kernel::prelude::*;

extern "C" {
    fn umem_shim_init() -> kernel::ffi::c_int;
    fn umem_shim_exit();
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
