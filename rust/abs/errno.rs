// SPDX-License-Identifier: GPL-2.0

//! Error codes that 6.12's `kernel::error::code` does not define.
//!
//! C header: [`include/uapi/asm-generic/errno.h`](srctree/include/uapi/asm-generic/errno.h)

use kernel::bindings;
use kernel::error::Error;

/// `-EOPNOTSUPP`
#[cfg(umem_exporter)]
pub(crate) fn eopnotsupp() -> Error {
    // CAST: errno values are small positive integers.
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// `IS_ERR()` and `PTR_ERR()` of a pointer returned by C, as
/// [`kernel::error::from_err_ptr`] but inline: the kernel crate's version
/// calls the out-of-line `rust_helper_IS_ERR` and `rust_helper_PTR_ERR`, two
/// calls on every creation path that C compiles to one comparison.
#[inline]
pub(crate) fn from_err_ptr<T>(ptr: *mut T) -> kernel::error::Result<*mut T> {
    // CAST: C's `IS_ERR_VALUE` compares the address as a signed long; error
    // pointers are the last `MAX_ERRNO` addresses.
    let value = ptr as isize;
    // CAST: `MAX_ERRNO` is 4095.
    if value < 0 && value >= -(bindings::MAX_ERRNO as isize) {
        // CAST: in `[-MAX_ERRNO, -1]`, so it fits an `i32`.
        return Err(Error::from_errno(value as i32));
    }
    Ok(ptr)
}
