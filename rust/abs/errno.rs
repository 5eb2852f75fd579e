// SPDX-License-Identifier: GPL-2.0

//! Error codes that 6.12's `kernel::error::code` does not define.
//!
//! C header: [`include/uapi/asm-generic/errno.h`](srctree/include/uapi/asm-generic/errno.h)

use kernel::bindings;
use kernel::error::Error;

/// `-ETIMEDOUT`
pub(crate) fn etimedout() -> Error {
    // CAST: errno values are small positive integers.
    Error::from_errno(-(bindings::ETIMEDOUT as i32))
}

/// `-EOPNOTSUPP`
#[cfg(umem_exporter)]
pub(crate) fn eopnotsupp() -> Error {
    // CAST: as above.
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}
