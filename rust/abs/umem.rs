// SPDX-License-Identifier: GPL-2.0

//! RDMA dma-buf umems, `struct ib_umem_dmabuf`, and the entry points through
//! which ib_core calls an importer implementation.
//!
//! C header: [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h)
//!
//! The C structure keeps its layout because drivers read it (`attach`, `sgt`,
//! `umem.sgt_append`, `umem.address`...). It is also the only state: the Rust
//! owners ([`DynAttachment`], [`Mapping`]) are stored into its fields and taken
//! back from them, so there is nothing to keep in sync.
//!
//! This file has the wrapper and its owner ([`UmemDmabuf`], [`OwnedUmem`]);
//! [`lock`] the views that hold the buffer's reservation lock, [`request`]
//! the arguments and entry-point names, [`ops`] the ops table of the ib_core
//! hook, its trampolines and the registration, [`trace`] the trace events an
//! importer emits itself.

use super::device::{DmaDevice, IbDevice};
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::bindings;
use kernel::device::Device;
use kernel::dma_buf::dma_resv::DmaResv;
use kernel::dma_buf::{
    AttachOps, Attachment, DmaBuf, DynAttachment, Importer, ImporterOps, LockedAttachment, Mapping,
};
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::types::Opaque;

mod lock;
mod ops;
mod request;
mod trace;

pub(crate) use lock::{ReturnLocked, UmemLocked};
pub(crate) use ops::{Registration, UmemImpl, UmemOps};
pub(crate) use request::{Entry, UmemRequest};

/// A [`Mapping`] of the umem's attachment.
pub(crate) type UmemMapping<'a> = Mapping<'a>;

/// A `struct ib_umem_dmabuf` created by this crate.
///
/// # Invariants
///
/// - It was allocated by [`OwnedUmem::new`]; `umem.ibdev`, `umem.address`,
///   `umem.length`, `umem.writable` and `umem.is_dmabuf` do not change after.
/// - Its address is the `importer_priv` of its attachment (a `UmemDmabuf`
///   is `repr(transparent)` over the C structure).
/// - `attach` is null only until `OwnedUmem::new` returns; from then on it is
///   a [`DynAttachment`] owned by the umem (given up with `into_raw`), with
///   `importer_priv` pointing to this structure. It is written atomically,
///   by `OwnedUmem::new` and by a notification that arrives while `new` is
///   still running ([`UmemDmabuf::adopt_attachment`]); both write the same
///   value, so once set it never changes.
/// - `sgt` is null, or it and `first_sg`, `first_sg_offset`, `last_sg`,
///   `last_sg_trim` and `umem.sgt_append.sgt.nents` are the parts of one
///   [`Mapping`] of `attach` with its window, owned by the umem.
/// - `pinned` is set exactly while the umem owns one pin of `attach`, given
///   up by a [`kernel::dma_buf::Pinned`] token (`UmemLocked::keep_pin`).
/// - Once `revoked` is set, `sgt` is null and `pinned` clear, and they stay
///   so (`UmemLocked::revoke`).
/// - After creation, all fields but the fixed ones change only with the
///   reservation lock of the attachment's buffer held.
#[repr(transparent)]
pub(crate) struct UmemDmabuf(Opaque<bindings::ib_umem_dmabuf>);

// SAFETY: Shared access to a umem is what C drivers and the dma-buf core do
// concurrently; every field that changes after creation is only accessed with
// the reservation lock held (type invariant), the others are immutable.
unsafe impl Sync for UmemDmabuf {}

/// The callback a driver registered with `ib_umem_dmabuf_set_revoke_locked()`.
///
/// # Invariants
///
/// `func`, if set, may be called with `data` while the umem lives.
#[derive(Clone, Copy)]
pub(crate) struct RevokeCallback {
    func: Option<unsafe extern "C" fn(*mut kernel::ffi::c_void)>,
    data: *mut kernel::ffi::c_void,
}

impl RevokeCallback {
    /// # Safety
    ///
    /// `func`, if set, may be called with `data` as long as the umem it is set
    /// on lives (the driver's contract with `ib_umem_dmabuf_set_revoke_locked`).
    pub(crate) unsafe fn new(
        func: Option<unsafe extern "C" fn(*mut kernel::ffi::c_void)>,
        data: *mut kernel::ffi::c_void,
    ) -> Self {
        Self { func, data }
    }
}

/// The attach ops a umem may be created with.
///
/// # Invariants
///
/// Every callback of the table expects `importer_priv` to be the
/// `ib_umem_dmabuf` the attachment belongs to: [`OwnedUmem::new`] attaches
/// with the umem as private data and relies on this.
#[derive(Clone, Copy)]
pub(crate) struct UmemAttachOps(&'static AttachOps);

impl UmemAttachOps {
    /// A driver's table, for the `ib_umem_dmabuf_get*()` calls of C drivers.
    ///
    /// # Safety
    ///
    /// Every callback of `ops` treats `importer_priv` as the umem being
    /// created (the contract of `ib_umem_dmabuf_get()` with its callers).
    pub(crate) unsafe fn foreign(ops: &'static AttachOps) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self(ops)
    }

    /// The table of a Rust importer whose private data is the umem.
    pub(crate) fn of<T: Importer<Priv = UmemDmabuf>>() -> Self {
        // INVARIANT: the trampolines of `ImporterOps<T>` read `importer_priv`
        // as `T::Priv`, which is `UmemDmabuf`.
        Self(ImporterOps::<T>::table())
    }
}

impl UmemDmabuf {
    /// # Safety
    ///
    /// `ptr` is a umem created by this crate ([`OwnedUmem::into_raw`]) and still
    /// live for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_umem_dmabuf) -> &'a Self {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    #[inline]
    fn raw(&self) -> *mut bindings::ib_umem_dmabuf {
        self.0.get()
    }

    /// Registered start offset in the buffer (`umem.address`).
    #[inline]
    pub(crate) fn address(&self) -> u64 {
        // SAFETY: fixed after creation (type invariant).
        // CAST: `unsigned long` is 64 bits on every architecture this builds for.
        unsafe { (*self.raw()).umem.address as u64 }
    }

    /// Registered length (`umem.length`).
    #[inline]
    pub(crate) fn length(&self) -> u64 {
        // SAFETY: fixed after creation (type invariant).
        // CAST: `size_t` is 64 bits on every architecture this module builds for.
        unsafe { (*self.raw()).umem.length as u64 }
    }

    /// The umem's attachment (`EINVAL` while it is still being created).
    #[inline]
    pub(crate) fn attachment(&self) -> Result<&Attachment> {
        // Set atomically, to one value (`store_attachment`); a non-null value is a
        // live attachment owned by the umem (type invariant).
        let attach = self.attach_field().load(Ordering::Acquire);
        if attach.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: as above; it stays attached as long as the umem lives.
        Ok(unsafe { Attachment::from_raw(attach) })
    }

    /// The reservation object of the umem's buffer.
    #[inline]
    pub(crate) fn resv(&self) -> Result<&DmaResv> {
        Ok(self.attachment()?.dmabuf().resv())
    }

    /// Records `attach`, the attachment a notification came through, as the
    /// umem's own if creation has not stored it yet.
    ///
    /// `dma_buf_dynamic_attach()` makes the attachment visible to the
    /// exporter before it returns it, so a move may be notified before
    /// [`OwnedUmem::new`] has stored it; without this the notification would
    /// find no attachment and be dropped. Only an attachment whose
    /// `importer_priv` is this umem is taken.
    pub(crate) fn adopt_attachment(&self, attach: LockedAttachment<'_, '_>) {
        let attach = attach.attachment();
        if attach.importer_priv().cast::<bindings::ib_umem_dmabuf>() != self.raw() {
            return;
        }
        // `attach` is the attachment `OwnedUmem::new` is creating for this
        // umem (its `importer_priv`), and `new` stores the same pointer, so
        // ownership is unchanged.
        self.store_attachment(attach.as_raw());
    }

    /// The `attach` field, for atomic access: it is set by creation and by a
    /// notification that may run concurrently with it.
    #[inline]
    fn attach_field(&self) -> &AtomicPtr<bindings::dma_buf_attachment> {
        // SAFETY: the field is a valid, aligned pointer-sized location for as
        // long as the umem lives; every access to it during creation, the only
        // time two parties may touch it, goes through this atomic view
        // (`store_attachment`, `attachment`).
        unsafe { AtomicPtr::from_ptr(ptr::addr_of_mut!((*self.raw()).attach)) }
    }

    /// Sets `attach` to `attach`, the umem's attachment.
    ///
    /// A plain store, not a compare-and-exchange: the two writers, creation
    /// and a notification that comes first, both store the pointer of the
    /// one attachment whose `importer_priv` is this umem, so whichever writes
    /// last writes what is there already. (A locked instruction per
    /// registration that the C importer does not execute.)
    #[inline]
    fn store_attachment(&self, attach: *mut bindings::dma_buf_attachment) {
        self.attach_field().store(attach, Ordering::Release);
    }
}

/// Ownership of a [`UmemDmabuf`]; dropping it detaches and frees the umem.
///
/// The umem's attachment holds no reference on its DMA device (as C's), so
/// the owner cannot outlive the devices it was made for, `'d`: only
/// [`OwnedUmem::into_raw`], whose caller answers for ib_core's lifecycle
/// (a device's umems are released before the device goes), hands a umem
/// on past them.
///
/// # Invariants
///
/// `ptr` is a umem allocated by [`OwnedUmem::new`] and owned by this value;
/// its RDMA device and the DMA device of its attachment are live for `'d`.
pub(crate) struct OwnedUmem<'d>(NonNull<UmemDmabuf>, PhantomData<&'d Device>);

impl<'d> OwnedUmem<'d> {
    /// Allocates a umem for `[offset, offset + size)` of `dmabuf` and attaches
    /// `dev` to the buffer dynamically with `ops`, `importer_priv` being the
    /// umem (as `ib_umem_dmabuf_get()` does).
    #[inline]
    pub(crate) fn new(
        ib_device: &'d IbDevice,
        offset: usize,
        size: usize,
        writable: bool,
        dmabuf: ARef<DmaBuf>,
        dev: DmaDevice<'d>,
        ops: Option<UmemAttachOps>,
    ) -> Result<Self> {
        // Since 7.1 a umem may be attached without callbacks.
        let ops = ops.map(|ops| ops.0);
        // kzalloc() in the C shim, as C allocates it: the kernel crate's
        // `KBox` goes through krealloc() and two out-of-line wrappers each
        // way, which made up a good part of the Rust importer's fixed cost
        // per umem, and a size passed at run
        // time has the allocator look its cache up on every call.
        let raw = super::shim::alloc_umem();
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // SAFETY: `raw` is a fresh, zeroed allocation that nobody else sees yet
        // (all zeroes is a valid `ib_umem_dmabuf`: integers, null pointers).
        unsafe {
            let u = raw.as_ptr();
            (*u).umem.ibdev = ib_device.as_raw();
            (*u).umem.length = size;
            (*u).umem.address = offset;
            (*u).umem.set_writable(u32::from(writable));
            (*u).umem.set_is_dmabuf(1);
        }
        // INVARIANT: allocated above; `attach` is still null, which `drop`
        // handles. Both devices are borrowed for `'d`.
        let owned = Self(raw.cast::<UmemDmabuf>(), PhantomData);
        // SAFETY: `importer_priv` is the umem, which outlives the attachment: it is
        // detached in `drop` before the memory is freed. The device outlives it
        // too: it is live for `'d`, which the owner cannot outlive, and
        // `into_raw`'s caller answers for it past `'d`. The
        // callbacks of `ops` expect the umem as `importer_priv` (invariant of
        // `UmemAttachOps`).
        let attach = match unsafe { DynAttachment::new(dmabuf, dev.device(), ops, owned.get()) } {
            Ok(attach) => attach,
            Err(e) => {
                // SAFETY: the attachment is gone, so nothing can notify (and
                // adopt) any more; `drop` must not detach it a second time.
                unsafe { (*raw.as_ptr()).attach = ptr::null_mut() };
                return Err(e);
            }
        };
        // The umem owns the attachment from here on: stored now, or already by
        // a notification that came first (`adopt_attachment`), the same pointer.
        owned.get().store_attachment(attach.into_raw());
        Ok(owned)
    }

    /// The umem.
    #[inline]
    pub(crate) fn get(&self) -> &UmemDmabuf {
        // SAFETY: owned and live (type invariant).
        unsafe { self.0.as_ref() }
    }

    /// Hands the umem to C (ib_core, a driver).
    ///
    /// # Safety
    ///
    /// The umem's RDMA device and DMA device stay live until it is released
    /// ([`OwnedUmem::from_raw`] and drop): ib_core's contract with the
    /// importer, which releases a device's umems before the device goes.
    #[inline]
    pub(crate) unsafe fn into_raw(self) -> *mut bindings::ib_umem_dmabuf {
        let me = core::mem::ManuallyDrop::new(self);
        me.0.as_ptr().cast()
    }

    /// Takes back a umem handed to C with [`OwnedUmem::into_raw`].
    ///
    /// # Safety
    ///
    /// `ptr` came from `into_raw`, C gives up every use of it, and its
    /// devices are live for `'d` (as `into_raw`'s caller promised).
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::ib_umem_dmabuf) -> Self {
        // SAFETY: non-null as it came from `into_raw`.
        let ptr = unsafe { NonNull::new_unchecked(ptr.cast::<UmemDmabuf>()) };
        // INVARIANT: owned from here on; the devices from the caller's contract.
        Self(ptr, PhantomData)
    }
}

impl OwnedUmem<'_> {
    /// Releases the umem: runs `last` (the importer's revoke) with the
    /// buffer's reservation lock held, undoes in the same hold whatever is
    /// still mapped or pinned, then detaches and frees. One lock and unlock,
    /// as C's release takes; dropping the umem instead takes the lock itself.
    /// Inline: the release entry point is this call alone.
    #[inline]
    pub(crate) fn release_with(self, last: impl FnOnce(&UmemLocked<'_>)) {
        let me = core::mem::ManuallyDrop::new(self);
        me.undo(last);
        // SAFETY: `me` is never dropped, so this is the only `free`.
        unsafe { me.free() };
    }

    /// Takes the lock once for `last` and for undoing a mapping or pin left.
    #[inline]
    fn undo(&self, last: impl FnOnce(&UmemLocked<'_>)) {
        let Ok(guard) = self.get().lock() else {
            return;
        };
        let umem = guard.view();
        last(&umem);
        // A revoked umem holds no mapping and no pin (`UmemLocked::revoke`).
        if !umem.revoked() {
            umem.unmap();
            umem.unpin_kept();
        }
    }

    /// Detaches from the buffer (putting it) and frees the umem.
    ///
    /// # Safety
    ///
    /// Called once, as the last use of the umem.
    #[inline]
    unsafe fn free(&self) {
        let raw = self.0.as_ptr().cast::<bindings::ib_umem_dmabuf>();
        // A notification may still run until the detach below, but it finds
        // the field set (or, on a failed creation, nothing to adopt), so it
        // writes nothing: a load is enough.
        let attach = self.get().attach_field().load(Ordering::Acquire);
        if !attach.is_null() {
            // SAFETY: we own the umem; `attach` is a `DynAttachment` given up with
            // `into_raw` (type invariant), reclaimed and dropped (detached, buffer
            // put) once, here.
            drop(unsafe { DynAttachment::from_raw(attach) });
        }
        // SAFETY: allocated with kmalloc() in `OwnedUmem::new` and owned; every
        // user is gone (the attachment was detached above); not used again
        // (the caller's contract).
        unsafe { bindings::kfree(raw.cast()) };
    }
}

impl Drop for OwnedUmem<'_> {
    fn drop(&mut self) {
        // Release revokes first (`release_with`); a umem dropped on an error
        // path of creation may still hold a mapping or a pin: undo it rather
        // than leak it.
        self.undo(|_| {});
        // SAFETY: dropped once; nothing uses the umem after this.
        unsafe { self.free() };
    }
}
