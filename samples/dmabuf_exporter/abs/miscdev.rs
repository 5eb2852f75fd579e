// SPDX-License-Identifier: GPL-2.0

//! Misc character devices with an ioctl handler.
//!
//! C header: [`include/linux/miscdevice.h`](srctree/include/linux/miscdevice.h)

use core::marker::PhantomData;
use kernel::bindings;
use kernel::prelude::*;
/// The byte-conversion traits of UAPI structures (in `kernel::transmute`
/// since 6.13).
pub(crate) use kernel::transmute::{AsBytes, FromBytes};
use kernel::types::Opaque;
use kernel::uaccess::UserSlice;
use pin_init::pin_init_from_closure;

/// The ioctls of a misc device.
pub(crate) trait Ioctl: 'static {
    /// Handles `cmd` with argument `arg` (a user pointer or value) for the
    /// calling process.
    fn ioctl(cmd: u32, arg: usize) -> Result<i32>;
}

/// A registered misc device, `/dev/<name>`; deregistered when dropped.
///
/// # Invariants
///
/// `misc` is registered (`misc_register`) for the whole life of the value,
/// with `fops` pointing to the contents of `fops`, which stay in their box
/// until after the deregistration in `drop`. There is no unregistered state:
/// the value is only made by an initialiser that registers.
#[pin_data(PinnedDrop)]
pub(crate) struct MiscDevice<T: Ioctl> {
    fops: KBox<bindings::file_operations>,
    #[pin]
    misc: Opaque<bindings::miscdevice>,
    _t: PhantomData<T>,
}

// SAFETY: The value does not change after registration; the C device is used
// by the misc core under its own lock.
unsafe impl<T: Ioctl> Sync for MiscDevice<T> {}
// SAFETY: As above; it may be dropped on any thread.
unsafe impl<T: Ioctl> Send for MiscDevice<T> {}

impl<T: Ioctl> MiscDevice<T> {
    /// Registers `/dev/<name>`, owned by `module` (held while a file is open).
    pub(crate) fn register(
        module: &'static ThisModule,
        name: &'static kernel::str::CStr,
    ) -> Result<Pin<KBox<Self>>> {
        let fops = KBox::new(
            bindings::file_operations {
                owner: module.as_ptr(),
                unlocked_ioctl: Some(Self::ioctl),
                llseek: Some(bindings::noop_llseek),
                // SAFETY: all-zero is a valid `file_operations`.
                ..unsafe { core::mem::zeroed() }
            },
            GFP_KERNEL,
        )?;
        let misc = bindings::miscdevice {
            // CAST: `MISC_DYNAMIC_MINOR` is 255.
            minor: bindings::MISC_DYNAMIC_MINOR as i32,
            name: name.as_char_ptr(),
            // The box's contents do not move when the box moves into `Self`.
            fops: &*fops,
            ..Default::default()
        };
        // SAFETY: the closure writes the whole `miscdevice` into the pinned
        // slot, then registers it; if registration fails the slot holds plain
        // data that needs no drop, so giving up on it is fine. `fops` outlives
        // the registration (type invariant, upheld by `drop`).
        let misc = unsafe {
            pin_init_from_closure(move |slot: *mut Opaque<bindings::miscdevice>| {
                let slot = Opaque::cast_into(slot);
                slot.write(misc);
                kernel::error::to_result(bindings::misc_register(slot))
            })
        };
        // INVARIANT: the value exists only if `misc` registered.
        KBox::try_pin_init(
            try_pin_init!(Self {
                fops,
                misc <- misc,
                _t: PhantomData,
            }),
            GFP_KERNEL,
        )
    }

    /// # Safety
    ///
    /// Called by the VFS only, for a file of this device.
    unsafe extern "C" fn ioctl(
        _file: *mut bindings::file,
        cmd: kernel::ffi::c_uint,
        arg: kernel::ffi::c_ulong,
    ) -> kernel::ffi::c_long {
        // CAST: `i32` to `c_long` is lossless.
        match T::ioctl(cmd, arg) {
            Ok(r) => r as kernel::ffi::c_long,
            Err(e) => e.to_errno() as kernel::ffi::c_long,
        }
    }
}

#[pinned_drop]
impl<T: Ioctl> PinnedDrop for MiscDevice<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: registered (type invariant); deregistered once, here.
        unsafe { bindings::misc_deregister(self.misc.get()) };
        // `fops` is dropped after this, once no new open can find it; open files
        // pin the module, so their ioctls finish before the module (and this
        // value) goes away.
    }
}

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
            unsafe impl $crate::abs::miscdev::FromBytes for $t {}
            // SAFETY: as above.
            unsafe impl $crate::abs::miscdev::AsBytes for $t {}
        )*
    };
}

uapi_pod!(
    crate::uapi::Create,
    crate::uapi::Migrate,
    crate::uapi::Stats,
    crate::uapi::Rw,
    crate::uapi::Inject,
);
