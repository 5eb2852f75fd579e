// SPDX-License-Identifier: GPL-2.0

//! What the exporter's ioctls need of userspace memory: slices of it, and
//! the byte-conversion traits of the UAPI structures copied through them.
//! (The misc device itself is 7.3's `kernel::miscdevice`.)

/// The byte-conversion traits of UAPI structures (in `kernel::transmute`
/// since 6.13).
pub(crate) use kernel::transmute::{AsBytes, FromBytes};
use kernel::uaccess::UserSlice;

/// The `len` bytes of the calling process at address `addr`.
pub(crate) fn user_slice(addr: usize, len: usize) -> UserSlice {
    UserSlice::new(kernel::uaccess::UserPtr::from_addr(addr), len)
}

/// Implements `FromBytes` and `AsBytes` for UAPI structures.
///
/// Only for `repr(C)` structures of integer fields without padding (check
/// their size with a `const` assertion next to them).
#[macro_export]
macro_rules! uapi_pod {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: the type is a `repr(C)` structure of integers with no padding
            // (its definition says so and asserts its size): every bit pattern is
            // valid and every byte is initialised.
            unsafe impl $crate::abs::user::FromBytes for $t {}
            // SAFETY: as above.
            unsafe impl $crate::abs::user::AsBytes for $t {}
        )*
    };
}

uapi_pod!(
    crate::uapi::Create,
    crate::uapi::Migrate,
    crate::uapi::Stats,
    crate::uapi::Rw,
    crate::uapi::Inject,
    crate::uapi::Revoke,
    crate::uapi::Latency,
);
