// SPDX-License-Identifier: GPL-2.0

//! The `struct ib_umem_dmabuf_ops` of an implementation: its trampolines,
//! the table and its registration with ib_core.

use super::lock::ReturnLocked;
use super::{Entry, OwnedUmem, RevokeCallback, UmemAttachOps, UmemDmabuf, UmemLocked, UmemRequest};
use crate::abs::device::{DmaDevice, IbDevice};
use core::ptr;
use kernel::bindings;
use kernel::dma_buf::AttachOps;
use kernel::prelude::*;

/// An implementation of the `ib_umem_dmabuf_*` entry points in safe Rust.
///
/// `revoke_lock`/`revoke_unlock` have no logic beyond taking and releasing
/// the buffer's reservation lock and are provided by [`UmemOps`].
pub(crate) trait UmemImpl {
    /// Called first on every call from ib_core, with the entry point reached
    /// (for instance, to count calls). Does nothing unless implemented.
    #[inline]
    fn entered(_entry: Entry) {}
    /// `ib_umem_dmabuf_get_with_dma_device()`.
    fn get<'d>(
        device: &'d IbDevice,
        dma_device: Option<DmaDevice<'d>>,
        req: UmemRequest,
        ops: Option<UmemAttachOps>,
    ) -> Result<OwnedUmem<'d>>;
    /// `ib_umem_dmabuf_get_pinned_with_dma_device()`.
    fn get_pinned<'d>(
        device: &'d IbDevice,
        dma_device: Option<DmaDevice<'d>>,
        req: UmemRequest,
    ) -> Result<OwnedUmem<'d>>;
    /// `ib_umem_dmabuf_get_pinned_revocable_with_dma_device_and_lock()`: on
    /// success, returns with the reservation lock held, kept with `locked`
    /// ([`ReturnLocked::keep`]).
    fn get_pinned_revocable_and_lock<'d>(
        device: &'d IbDevice,
        dma_device: Option<DmaDevice<'d>>,
        req: UmemRequest,
        locked: ReturnLocked,
    ) -> Result<OwnedUmem<'d>>;
    /// `ib_umem_dmabuf_set_revoke_locked()`.
    fn set_revoke_locked(umem: &UmemLocked<'_>, cb: RevokeCallback);
    /// `ib_umem_dmabuf_map_pages()`.
    fn map_pages(umem: &UmemLocked<'_>) -> Result;
    /// `ib_umem_dmabuf_unmap_pages()`.
    fn unmap_pages(umem: &UmemLocked<'_>);
    /// `ib_umem_dmabuf_revoke()`.
    fn revoke(umem: &UmemDmabuf);
    /// `ib_umem_dmabuf_release()`.
    fn release(umem: OwnedUmem<'_>);
}

/// Converts a creation result for C.
///
/// # Safety
///
/// As [`OwnedUmem::into_raw`]: the umem's devices stay live until it is
/// released (ib_core's contract with the importer).
unsafe fn umem_result(r: Result<OwnedUmem<'_>>) -> *mut bindings::ib_umem_dmabuf {
    match r {
        // SAFETY: the caller's contract.
        Ok(umem) => unsafe { umem.into_raw() },
        Err(e) => e.to_ptr(),
    }
}

/// The `struct ib_umem_dmabuf_ops` whose callbacks call the [`UmemImpl`] `T`,
/// converting the C arguments into the safe types.
struct Trampolines<T: UmemImpl>(core::marker::PhantomData<T>);

impl<T: UmemImpl> Trampolines<T> {
    /// # Safety
    ///
    /// `device` is a live ib_device, `dma_device` null or a live device that
    /// outlives the umems made for it (ib_core's contract), `ops`
    /// null or a static table whose callbacks expect the umem as
    /// `importer_priv` (the contract of `ib_umem_dmabuf_get()`).
    unsafe extern "C" fn get(
        device: *mut bindings::ib_device,
        dma_device: *mut bindings::device,
        offset: kernel::ffi::c_ulong,
        size: usize,
        fd: kernel::ffi::c_int,
        access: kernel::ffi::c_int,
        ops: *const bindings::dma_buf_attach_ops,
    ) -> *mut bindings::ib_umem_dmabuf {
        T::entered(Entry::Get);
        // SAFETY: see the function's contract.
        let (device, dma_device, ops) = unsafe {
            (
                IbDevice::from_raw(device),
                DmaDevice::from_raw(dma_device),
                AttachOps::from_raw(ops),
            )
        };
        // SAFETY: the driver's ops expect the umem as `importer_priv`.
        let ops = ops.map(|ops| unsafe { UmemAttachOps::foreign(ops) });
        let req = UmemRequest::new(offset, size, fd, access);
        // SAFETY: ib_core releases the umem before either device goes.
        unsafe { umem_result(T::get(device, dma_device, req, ops)) }
    }

    /// # Safety
    ///
    /// `device` is a live ib_device, `dma_device` null or a live device that
    /// outlives the umems made for it (ib_core's contract).
    unsafe extern "C" fn get_pinned(
        device: *mut bindings::ib_device,
        dma_device: *mut bindings::device,
        offset: kernel::ffi::c_ulong,
        size: usize,
        fd: kernel::ffi::c_int,
        access: kernel::ffi::c_int,
    ) -> *mut bindings::ib_umem_dmabuf {
        T::entered(Entry::GetPinned);
        // SAFETY: see the function's contract.
        let (device, dma_device) =
            unsafe { (IbDevice::from_raw(device), DmaDevice::from_raw(dma_device)) };
        let req = UmemRequest::new(offset, size, fd, access);
        // SAFETY: as in `get`.
        unsafe { umem_result(T::get_pinned(device, dma_device, req)) }
    }

    /// # Safety
    ///
    /// As for `get_pinned`.
    unsafe extern "C" fn get_pinned_revocable_and_lock(
        device: *mut bindings::ib_device,
        dma_device: *mut bindings::device,
        offset: kernel::ffi::c_ulong,
        size: usize,
        fd: kernel::ffi::c_int,
        access: kernel::ffi::c_int,
    ) -> *mut bindings::ib_umem_dmabuf {
        T::entered(Entry::GetPinnedRevocable);
        // SAFETY: see the function's contract.
        let (device, dma_device) =
            unsafe { (IbDevice::from_raw(device), DmaDevice::from_raw(dma_device)) };
        let req = UmemRequest::new(offset, size, fd, access);
        // The caller unlocks the umem before it releases it (ib_core's
        // contract for this entry point).
        let locked = ReturnLocked::new();
        // SAFETY: as in `get`.
        unsafe {
            umem_result(T::get_pinned_revocable_and_lock(
                device, dma_device, req, locked,
            ))
        }
    }

    /// # Safety
    ///
    /// `umem` was created by `T` (ib_core dispatches on the creator), is live
    /// and its reservation lock is held; `revoke` may be called with `data`
    /// while the umem lives.
    unsafe extern "C" fn set_revoke_locked(
        umem: *mut bindings::ib_umem_dmabuf,
        revoke: Option<unsafe extern "C" fn(*mut kernel::ffi::c_void)>,
        data: *mut kernel::ffi::c_void,
    ) {
        T::entered(Entry::SetRevokeLocked);
        // SAFETY: see the function's contract.
        let (umem, cb) = unsafe {
            (
                UmemDmabuf::from_raw(umem),
                RevokeCallback::new(revoke, data),
            )
        };
        // SAFETY: the lock is held (the function's contract).
        let _ = unsafe { umem.with_assumed_lock(|umem| T::set_revoke_locked(umem, cb)) };
    }

    /// # Safety
    ///
    /// `umem` was created by `T`, is live and its reservation lock is held.
    unsafe extern "C" fn map_pages(umem: *mut bindings::ib_umem_dmabuf) -> kernel::ffi::c_int {
        T::entered(Entry::MapPages);
        // SAFETY: see the function's contract.
        let umem = unsafe { UmemDmabuf::from_raw(umem) };
        // SAFETY: the lock is held (the function's contract).
        match unsafe { umem.with_assumed_lock(|umem| T::map_pages(umem)) } {
            Ok(Ok(())) => 0,
            Ok(Err(e)) | Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `umem` was created by `T`, is live and its reservation lock is held.
    unsafe extern "C" fn unmap_pages(umem: *mut bindings::ib_umem_dmabuf) {
        T::entered(Entry::UnmapPages);
        // SAFETY: see the function's contract.
        let umem = unsafe { UmemDmabuf::from_raw(umem) };
        // SAFETY: the lock is held (the function's contract).
        let _ = unsafe { umem.with_assumed_lock(|umem| T::unmap_pages(umem)) };
    }

    /// # Safety
    ///
    /// `umem` was created by `T` and is live.
    unsafe extern "C" fn revoke_lock(umem: *mut bindings::ib_umem_dmabuf) {
        T::entered(Entry::RevokeLock);
        // SAFETY: see the function's contract.
        let umem = unsafe { UmemDmabuf::from_raw(umem) };
        if let Ok(guard) = umem.lock() {
            // SAFETY: the caller releases it with
            // `ib_umem_dmabuf_revoke_unlock()` before it releases the umem
            // (ib_core's contract).
            unsafe { guard.leak() };
        }
    }

    /// # Safety
    ///
    /// `umem` was created by `T` and is live; the caller holds its lock, taken
    /// by `ib_umem_dmabuf_revoke_lock()`.
    unsafe extern "C" fn revoke_unlock(umem: *mut bindings::ib_umem_dmabuf) {
        T::entered(Entry::RevokeUnlock);
        // SAFETY: see the function's contract.
        let umem = unsafe { UmemDmabuf::from_raw(umem) };
        if let Ok(resv) = umem.resv() {
            // SAFETY: the caller holds the lock (the function's contract), and
            // no Rust proof for it is alive.
            unsafe { resv.unlock_leaked() };
        }
    }

    /// # Safety
    ///
    /// `umem` was created by `T` and is live.
    unsafe extern "C" fn revoke(umem: *mut bindings::ib_umem_dmabuf) {
        T::entered(Entry::Revoke);
        // SAFETY: see the function's contract.
        T::revoke(unsafe { UmemDmabuf::from_raw(umem) })
    }

    /// # Safety
    ///
    /// `umem` was created by `T`; the caller gives it up.
    unsafe extern "C" fn release(umem: *mut bindings::ib_umem_dmabuf) {
        T::entered(Entry::Release);
        // SAFETY: see the function's contract; the umem's devices are live until
        // it is released (ib_core's contract), here.
        T::release(unsafe { OwnedUmem::from_raw(umem) })
    }

    const TABLE: bindings::ib_umem_dmabuf_ops = bindings::ib_umem_dmabuf_ops {
        owner: ptr::null_mut(),
        get: Some(Self::get),
        get_pinned: Some(Self::get_pinned),
        get_pinned_revocable_and_lock: Some(Self::get_pinned_revocable_and_lock),
        set_revoke_locked: Some(Self::set_revoke_locked),
        map_pages: Some(Self::map_pages),
        unmap_pages: Some(Self::unmap_pages),
        revoke_lock: Some(Self::revoke_lock),
        revoke_unlock: Some(Self::revoke_unlock),
        revoke: Some(Self::revoke),
        release: Some(Self::release),
    };
}

/// A `struct ib_umem_dmabuf_ops` built from a [`UmemImpl`]: what
/// [`Registration`] gives ib_core. Build it with [`umem_ops!`].
///
/// # Invariants
///
/// Each callback calls the same [`UmemImpl`], with the contracts ib_core
/// keeps (`include/rdma/ib_umem.h`); `owner` is the module containing that
/// code (or null for code built into the kernel).
#[repr(transparent)]
pub(crate) struct UmemOps(bindings::ib_umem_dmabuf_ops);

// SAFETY: an immutable table of function pointers and a module pointer.
unsafe impl Sync for UmemOps {}

impl UmemOps {
    /// The table of `T`, owned by `owner`.
    ///
    /// # Safety
    ///
    /// `owner` is the module whose code `T` is, or null if it is built in.
    pub(crate) const unsafe fn new<T: UmemImpl>(owner: *mut bindings::module) -> Self {
        let mut table = Trampolines::<T>::TABLE;
        table.owner = owner;
        Self(table)
    }

    /// The C table.
    #[inline]
    pub(crate) fn as_raw(&self) -> *const bindings::ib_umem_dmabuf_ops {
        &self.0
    }
}

/// The [`UmemOps`] of the [`UmemImpl`] `$t`, owned by the module being built
/// (for a `static`).
#[macro_export]
macro_rules! umem_ops {
    ($t:ty) => {{
        // `struct module` embeds empty arch structs, which rustc flags as not
        // FFI-safe; only its address is taken.
        #[allow(improper_ctypes)]
        extern "C" {
            static __this_module: kernel::types::Opaque<kernel::bindings::module>;
        }
        // SAFETY: `__this_module` is the module this code is linked into,
        // which is where `$t` is implemented.
        unsafe { $crate::abs::umem::UmemOps::new::<$t>(__this_module.get()) }
    }};
}

/// An importer registered with ib_core: umems are created with its
/// [`UmemOps`] until the registration is dropped.
///
/// # Invariants
///
/// `ops` is registered with ib_core (`ib_umem_dmabuf_register_ops()`
/// succeeded and has not been undone by this value).
pub(crate) struct Registration {
    ops: &'static UmemOps,
}

impl Registration {
    /// Makes `ops` the importer of ib_core; fails with `EBUSY` if another is
    /// registered.
    pub(crate) fn new(ops: &'static UmemOps) -> Result<Self> {
        // SAFETY: `ops` is a valid table for as long as ib_core may use it: it
        // is static, and ib_core holds a reference on its owner while a umem
        // of it lives.
        kernel::error::to_result(unsafe { bindings::ib_umem_dmabuf_register_ops(ops.as_raw()) })?;
        // INVARIANT: registered just above.
        Ok(Self { ops })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: `ops` is registered (type invariant); umems it created keep
        // working (ib_core keeps a reference on the owner).
        unsafe { bindings::ib_umem_dmabuf_unregister_ops(self.ops.as_raw()) };
    }
}
