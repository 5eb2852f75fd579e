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

use super::device::{self, IbDevice};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::bindings;
use kernel::device::Device;
use kernel::dma_buf::dma_resv::{DmaResv, ResvLocked};
use kernel::dma_buf::{
    AttachOps, Attachment, AttachmentGuard, DmaBuf, DynAttachment, Importer, ImporterOps,
    LockedAttachment, Mapping, MappingParts,
};
use kernel::prelude::*;
use kernel::scatterlist::WindowParts;
use kernel::sync::aref::ARef;
use kernel::types::Opaque;

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
///   `importer_priv` pointing to this structure. It is written once,
///   atomically, either by `OwnedUmem::new` or by a notification that
///   arrives while `new` is still running
///   ([`UmemDmabuf::adopt_attachment`]); both write the same value.
/// - `sgt` is null, or it and `first_sg`, `first_sg_offset`, `last_sg`,
///   `last_sg_trim` and `umem.sgt_append.sgt.nents` are the parts of one
///   [`Mapping`] of `attach` with its window, owned by the umem.
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
        // Written once, atomically (`store_attachment`); a non-null value is a
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

    /// Takes the buffer's reservation lock (`EINVAL` while the umem is still
    /// being created).
    #[inline]
    pub(crate) fn lock(&self) -> Result<UmemGuard<'_>> {
        // INVARIANT: the lock of the umem's own attachment.
        Ok(UmemGuard {
            guard: self.attachment()?.lock(),
            umem: self,
        })
    }

    /// Runs `f` with the umem's locked view, for entry points that C calls
    /// with the buffer's reservation lock held (`EINVAL`, and `f` not run,
    /// while the umem is still being created).
    ///
    /// # Safety
    ///
    /// The current thread holds the reservation lock of the umem's buffer
    /// until `f` returns.
    #[inline]
    pub(crate) unsafe fn with_assumed_lock<R>(
        &self,
        f: impl FnOnce(&UmemLocked<'_>) -> R,
    ) -> Result<R> {
        let attach = self.attachment()?;
        // SAFETY: the caller holds this lock, the buffer's, until `f` returns.
        Ok(unsafe {
            // INVARIANT: `attach` is the umem's own attachment.
            attach.with_assumed_lock(|attach| f(&UmemLocked { umem: self, attach }))
        })
    }

    /// Records `attach`, the attachment a notification came through, as the
    /// umem's own if creation has not stored it yet.
    ///
    /// `dma_buf_dynamic_attach()` makes the attachment visible to the
    /// exporter before it returns it, so a move may be notified before
    /// [`OwnedUmem::new`] has stored it; without this the notification would
    /// find no attachment and be dropped. Only an attachment whose
    /// `importer_priv` is this umem is taken.
    pub(crate) fn adopt_attachment(&self, attach: LockedAttachment<'_>) {
        let attach = attach.attachment();
        if attach.importer_priv().cast::<bindings::ib_umem_dmabuf>() != self.raw() {
            return;
        }
        // `attach` is the attachment `OwnedUmem::new` is creating for this
        // umem (its `importer_priv`), and `new` stores the same pointer, so
        // ownership is unchanged.
        self.store_attachment(attach.as_raw());
    }

    /// The `attach` field, for atomic access: it is written once, by
    /// creation or by a notification that runs concurrently with it.
    #[inline]
    fn attach_field(&self) -> &AtomicPtr<bindings::dma_buf_attachment> {
        // SAFETY: the field is a valid, aligned pointer-sized location for as
        // long as the umem lives; every access to it during creation, the only
        // time two parties may touch it, goes through this atomic view
        // (`store_attachment`, `attachment`).
        unsafe { AtomicPtr::from_ptr(ptr::addr_of_mut!((*self.raw()).attach)) }
    }

    /// Sets `attach` to `attach` unless it is set already (to the same value).
    fn store_attachment(&self, attach: *mut bindings::dma_buf_attachment) {
        let _ = self.attach_field().compare_exchange(
            ptr::null_mut(),
            attach,
            Ordering::Release,
            Ordering::Relaxed,
        );
    }
}

/// The reservation lock of a umem's buffer, taken by [`UmemDmabuf::lock`]
/// and released when this is dropped.
///
/// # Invariants
///
/// `guard` locks `umem`'s own attachment.
#[must_use = "the reservation lock is released when the guard is dropped"]
pub(crate) struct UmemGuard<'a> {
    guard: AttachmentGuard<'a>,
    umem: &'a UmemDmabuf,
}

impl UmemGuard<'_> {
    /// The umem's locked view.
    #[inline]
    pub(crate) fn view(&self) -> UmemLocked<'_> {
        // INVARIANT: by the type invariant.
        UmemLocked {
            umem: self.umem,
            attach: self.guard.view(),
        }
    }

    /// Keeps the lock held after the guard is gone (see [`ResvGuard::leak`]).
    pub(crate) fn leak(self) {
        self.guard.leak();
    }
}

/// A umem whose buffer's reservation lock the current thread holds: the
/// fields that change after creation are read and written only through it.
///
/// It is made only from the lock of the umem's own attachment
/// ([`UmemGuard::view`], [`UmemDmabuf::with_assumed_lock`],
/// [`UmemLocked::notified`]), and a [`LockedAttachment`] can only be made
/// from its own buffer's lock, so no accessor checks the lock at run time.
///
/// # Invariants
///
/// `attach` is `umem`'s attachment, locked for `'a`.
pub(crate) struct UmemLocked<'a> {
    umem: &'a UmemDmabuf,
    attach: LockedAttachment<'a>,
}

impl<'a> UmemLocked<'a> {
    /// The view of a notification that came through `attach`: `None` (and a
    /// WARNING) unless `attach` is the umem's attachment. Call
    /// [`UmemDmabuf::adopt_attachment`] first, so a notification that arrives
    /// during creation finds the attachment.
    pub(crate) fn notified(umem: &'a UmemDmabuf, attach: LockedAttachment<'a>) -> Option<Self> {
        let ours = matches!(umem.attachment(), Ok(a) if ptr::eq(a, attach.attachment()));
        let warned = kernel::warn_on!(!ours);
        if warned {
            return None;
        }
        // INVARIANT: checked above.
        Some(Self { umem, attach })
    }

    /// The umem.
    #[inline]
    pub(crate) fn umem(&self) -> &'a UmemDmabuf {
        self.umem
    }

    /// The umem's attachment, locked: pin, unpin, map and unmap.
    #[inline]
    pub(crate) fn attachment(&self) -> LockedAttachment<'a> {
        self.attach
    }

    /// The proof of the buffer's lock, to wait for its fences.
    #[inline]
    pub(crate) fn locked(&self) -> &'a ResvLocked<'a> {
        self.attach.resv()
    }

    #[inline]
    fn raw(&self) -> *mut bindings::ib_umem_dmabuf {
        self.umem.raw()
    }

    /// Whether the umem was revoked.
    #[inline]
    pub(crate) fn revoked(&self) -> bool {
        // SAFETY: the lock is held (type invariant), which serialises the field.
        unsafe { (*self.raw()).revoked() != 0 }
    }

    /// Marks the umem revoked.
    #[inline]
    pub(crate) fn set_revoked(&self) {
        // SAFETY: the lock is held, which serialises the field.
        unsafe { (*self.raw()).set_revoked(1) };
    }

    /// Whether the umem holds a pin on its attachment.
    #[inline]
    pub(crate) fn pinned(&self) -> bool {
        // SAFETY: the lock is held, which serialises the field.
        unsafe { (*self.raw()).pinned() != 0 }
    }

    /// Records whether the umem holds a pin.
    #[inline]
    pub(crate) fn set_pinned(&self, pinned: bool) {
        // SAFETY: the lock is held, which serialises the field.
        unsafe { (*self.raw()).set_pinned(u8::from(pinned)) };
    }

    /// Whether a mapping is installed (`sgt` set).
    #[inline]
    pub(crate) fn is_mapped(&self) -> bool {
        // SAFETY: the lock is held, which serialises the field.
        unsafe { !(*self.raw()).sgt.is_null() }
    }

    /// Stores `mapping` and its window in the C fields drivers read: `sgt`,
    /// the first/last entry bookkeeping, and `umem.sgt_append.sgt` (`sgl` is
    /// the first entry of the window, `nents` the number of entries in it).
    ///
    /// Refused (the mapping is given back) if a mapping is already installed,
    /// or if it is a mapping of another attachment.
    #[inline]
    pub(crate) fn install_mapping(&self, mapping: UmemMapping<'a>) -> Result<(), UmemMapping<'a>> {
        if self.is_mapped() {
            return Err(mapping);
        }
        if !ptr::eq(mapping.attachment(), self.attach.attachment()) {
            return Err(mapping);
        }
        let parts = mapping.into_raw_parts();
        let raw = self.raw();
        // SAFETY: the lock is held, which serialises these fields; storing the
        // parts here transfers their ownership to the umem (type invariant of
        // `UmemDmabuf`; `attach` is the umem's own already).
        unsafe {
            (*raw).sgt = parts.sgt.as_ptr();
            if let Some(p) = parts.window {
                (*raw).first_sg = p.first;
                // CAST: offsets are below an entry's `u32` length.
                (*raw).first_sg_offset = p.first_offset as usize;
                (*raw).last_sg = p.last;
                (*raw).last_sg_trim = p.last_trim as usize;
                (*raw).umem.sgt_append.sgt.sgl = p.first;
                (*raw).umem.sgt_append.sgt.nents = p.nents;
            }
        }
        Ok(())
    }

    /// Takes the installed mapping back out of the C fields, clearing `sgt` and
    /// the first/last entry bookkeeping (`umem.sgt_append.sgt` is left as is,
    /// as the C implementation does).
    #[inline]
    pub(crate) fn take_mapping(&self) -> Option<UmemMapping<'a>> {
        if !self.is_mapped() {
            return None;
        }
        let raw = self.raw();
        // SAFETY: the lock is held; by the type invariant of `UmemDmabuf` the
        // fields are the parts of one mapping owned by the umem, reassembled
        // once since they are cleared here.
        unsafe {
            let parts = MappingParts {
                sgt: NonNull::new((*raw).sgt)?,
                window: Some(WindowParts {
                    first: (*raw).first_sg,
                    // CAST: `unsigned long` to `u64` is lossless here.
                    first_offset: (*raw).first_sg_offset as u64,
                    last: (*raw).last_sg,
                    last_trim: (*raw).last_sg_trim as u64,
                    nents: (*raw).umem.sgt_append.sgt.nents,
                }),
            };
            (*raw).sgt = ptr::null_mut();
            (*raw).first_sg = ptr::null_mut();
            (*raw).first_sg_offset = 0;
            (*raw).last_sg = ptr::null_mut();
            (*raw).last_sg_trim = 0;
            // The umem's own attachment, which the mapping was made for.
            let mapping = Mapping::from_raw_parts(self.attach.attachment(), parts);
            Some(mapping)
        }
    }

    /// Records the driver's revoke callback.
    pub(crate) fn set_revoke_callback(&self, cb: RevokeCallback) {
        // SAFETY: the lock is held, which serialises the fields.
        unsafe {
            (*self.raw()).pinned_revoke = cb.func;
            (*self.raw()).private = cb.data;
        }
    }

    /// Calls the driver's revoke callback, if one is set.
    #[inline]
    pub(crate) fn call_revoke_callback(&self) {
        // SAFETY: the lock is held, which serialises the fields.
        let (func, data) = unsafe { ((*self.raw()).pinned_revoke, (*self.raw()).private) };
        if let Some(func) = func {
            // SAFETY: the callback was stored from a `RevokeCallback`, whose
            // invariant allows this call while the umem lives.
            unsafe { func(data) };
        }
    }
}

/// Ownership of a [`UmemDmabuf`]; dropping it detaches and frees the umem.
///
/// # Invariants
///
/// `ptr` is a umem allocated by [`OwnedUmem::new`] and owned by this value.
pub(crate) struct OwnedUmem(NonNull<UmemDmabuf>);

impl OwnedUmem {
    /// Allocates a umem for `[offset, offset + size)` of `dmabuf` and attaches
    /// `dev` to the buffer dynamically with `ops`, `importer_priv` being the
    /// umem (as `ib_umem_dmabuf_get()` does).
    #[inline]
    pub(crate) fn new(
        ib_device: &IbDevice,
        offset: usize,
        size: usize,
        writable: bool,
        dmabuf: ARef<DmaBuf>,
        dev: &Device,
        ops: Option<UmemAttachOps>,
    ) -> Result<Self> {
        // Since 7.1 a umem may be attached without callbacks.
        let ops = ops.map(|ops| ops.0);
        // kzalloc(), as C allocates it: the kernel crate's `KBox` goes through
        // krealloc() and two out-of-line wrappers each way, which made up a
        // good part of the Rust importer's fixed cost per umem
        // (Documentation/performance.rst); the C structure needs nothing of it.
        // SAFETY: a plain allocation; kmalloc() aligns it for any C structure
        // of this size.
        let raw = unsafe {
            bindings::__kmalloc_noprof(
                core::mem::size_of::<bindings::ib_umem_dmabuf>(),
                bindings::GFP_KERNEL | bindings::__GFP_ZERO,
            )
        }
        .cast::<bindings::ib_umem_dmabuf>();
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
        // INVARIANT: allocated above; `attach` is still null, which `drop` handles.
        let owned = Self(raw.cast::<UmemDmabuf>());
        // SAFETY: `importer_priv` is the umem, which outlives the attachment: it is
        // detached in `drop` before the memory is freed. The callbacks of `ops`
        // expect the umem as `importer_priv` (invariant of `UmemAttachOps`).
        let attach = match unsafe { DynAttachment::new(dmabuf, dev, ops, owned.get()) } {
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
    #[inline]
    pub(crate) fn into_raw(self) -> *mut bindings::ib_umem_dmabuf {
        let me = core::mem::ManuallyDrop::new(self);
        me.0.as_ptr().cast()
    }

    /// Takes back a umem handed to C with [`OwnedUmem::into_raw`].
    ///
    /// # Safety
    ///
    /// `ptr` came from `into_raw`, and C gives up every use of it.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::ib_umem_dmabuf) -> Self {
        // SAFETY: non-null as it came from `into_raw`.
        Self(unsafe { NonNull::new_unchecked(ptr.cast::<UmemDmabuf>()) })
    }
}

impl OwnedUmem {
    /// Releases the umem: runs `last` (the importer's revoke) with the
    /// buffer's reservation lock held, undoes in the same hold whatever is
    /// still mapped or pinned, then detaches and frees. One lock and unlock,
    /// as C's release takes; dropping the umem instead takes the lock itself.
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
        if let Some(mapping) = umem.take_mapping() {
            umem.attachment().unmap(mapping);
        }
        if umem.pinned() {
            umem.attachment().unpin();
            umem.set_pinned(false);
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

impl Drop for OwnedUmem {
    fn drop(&mut self) {
        // Release revokes first (`release_with`); a umem dropped on an error
        // path of creation may still hold a mapping or a pin: undo it rather
        // than leak it.
        self.undo(|_| {});
        // SAFETY: dropped once; nothing uses the umem after this.
        unsafe { self.free() };
    }
}

/// The MR access flags a driver passes (`enum ib_access_flags` bits in an
/// `int`, unchecked: C passes them on as they come).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access(i32);

impl Access {
    /// The flags as C passed them.
    #[inline]
    pub(crate) const fn from_c(raw: i32) -> Self {
        Self(raw)
    }

    /// `ib_access_writable()`: whether the flags let the MR's memory be
    /// written (local or remote write, remote atomic, memory-window bind).
    #[inline]
    pub(crate) fn writable(self) -> bool {
        let writable = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
            | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
            | bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC
            | bindings::ib_access_flags_IB_ACCESS_MW_BIND;
        // CAST: the flags are a bit mask; C tests the same bits of the `int`.
        (self.0 as u32) & writable != 0
    }
}

/// The arguments every `ib_umem_dmabuf_get*()` takes: the byte range of the
/// buffer (`offset`, `size`), its file descriptor and the MR access flags.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UmemRequest {
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) fd: i32,
    pub(crate) access: Access,
}

impl UmemRequest {
    /// The arguments as C passes them.
    #[inline]
    fn new(offset: kernel::ffi::c_ulong, size: usize, fd: i32, access: i32) -> Self {
        Self {
            offset,
            size,
            fd,
            access: Access::from_c(access),
        }
    }
}

/// The entry points of `struct ib_umem_dmabuf_ops`, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Entry {
    Get = 0,
    GetPinned,
    GetPinnedRevocable,
    SetRevokeLocked,
    MapPages,
    UnmapPages,
    RevokeLock,
    RevokeUnlock,
    Revoke,
    Release,
}

impl Entry {
    /// Every entry point, in table order (`ALL[e as usize] == e`).
    pub(crate) const ALL: [Entry; 10] = [
        Entry::Get,
        Entry::GetPinned,
        Entry::GetPinnedRevocable,
        Entry::SetRevokeLocked,
        Entry::MapPages,
        Entry::UnmapPages,
        Entry::RevokeLock,
        Entry::RevokeUnlock,
        Entry::Revoke,
        Entry::Release,
    ];

    /// The name of the `struct ib_umem_dmabuf_ops` member.
    pub(crate) const fn name(self) -> &'static kernel::str::CStr {
        match self {
            Entry::Get => kernel::c_str!("get"),
            Entry::GetPinned => kernel::c_str!("get_pinned"),
            Entry::GetPinnedRevocable => kernel::c_str!("get_pinned_revocable_and_lock"),
            Entry::SetRevokeLocked => kernel::c_str!("set_revoke_locked"),
            Entry::MapPages => kernel::c_str!("map_pages"),
            Entry::UnmapPages => kernel::c_str!("unmap_pages"),
            Entry::RevokeLock => kernel::c_str!("revoke_lock"),
            Entry::RevokeUnlock => kernel::c_str!("revoke_unlock"),
            Entry::Revoke => kernel::c_str!("revoke"),
            Entry::Release => kernel::c_str!("release"),
        }
    }
}

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
    fn get(
        device: &IbDevice,
        dma_device: Option<&Device>,
        req: UmemRequest,
        ops: Option<UmemAttachOps>,
    ) -> Result<OwnedUmem>;
    /// `ib_umem_dmabuf_get_pinned_with_dma_device()`.
    fn get_pinned(
        device: &IbDevice,
        dma_device: Option<&Device>,
        req: UmemRequest,
    ) -> Result<OwnedUmem>;
    /// `ib_umem_dmabuf_get_pinned_revocable_and_lock()`: on success, returns
    /// with the reservation lock held (see [`ResvGuard::leak`]).
    fn get_pinned_revocable_and_lock(device: &IbDevice, req: UmemRequest) -> Result<OwnedUmem>;
    /// `ib_umem_dmabuf_set_revoke_locked()`.
    fn set_revoke_locked(umem: &UmemLocked<'_>, cb: RevokeCallback);
    /// `ib_umem_dmabuf_map_pages()`.
    fn map_pages(umem: &UmemLocked<'_>) -> Result;
    /// `ib_umem_dmabuf_unmap_pages()`.
    fn unmap_pages(umem: &UmemLocked<'_>);
    /// `ib_umem_dmabuf_revoke()`.
    fn revoke(umem: &UmemDmabuf);
    /// `ib_umem_dmabuf_release()`.
    fn release(umem: OwnedUmem);
}

/// Converts a creation result for C.
fn umem_result(r: Result<OwnedUmem>) -> *mut bindings::ib_umem_dmabuf {
    match r {
        Ok(umem) => umem.into_raw(),
        Err(e) => e.to_ptr(),
    }
}

/// The `struct ib_umem_dmabuf_ops` whose callbacks call the [`UmemImpl`] `T`,
/// converting the C arguments into the safe types.
struct Trampolines<T: UmemImpl>(core::marker::PhantomData<T>);

impl<T: UmemImpl> Trampolines<T> {
    /// # Safety
    ///
    /// `device` is a live ib_device, `dma_device` a live device or null, `ops`
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
                device::from_raw(dma_device),
                AttachOps::from_raw(ops),
            )
        };
        // SAFETY: the driver's ops expect the umem as `importer_priv`.
        let ops = ops.map(|ops| unsafe { UmemAttachOps::foreign(ops) });
        let req = UmemRequest::new(offset, size, fd, access);
        umem_result(T::get(device, dma_device, req, ops))
    }

    /// # Safety
    ///
    /// `device` is a live ib_device, `dma_device` a live device or null.
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
            unsafe { (IbDevice::from_raw(device), device::from_raw(dma_device)) };
        let req = UmemRequest::new(offset, size, fd, access);
        umem_result(T::get_pinned(device, dma_device, req))
    }

    /// # Safety
    ///
    /// `device` is a live ib_device.
    unsafe extern "C" fn get_pinned_revocable_and_lock(
        device: *mut bindings::ib_device,
        offset: kernel::ffi::c_ulong,
        size: usize,
        fd: kernel::ffi::c_int,
        access: kernel::ffi::c_int,
    ) -> *mut bindings::ib_umem_dmabuf {
        T::entered(Entry::GetPinnedRevocable);
        // SAFETY: see the function's contract.
        let device = unsafe { IbDevice::from_raw(device) };
        let req = UmemRequest::new(offset, size, fd, access);
        umem_result(T::get_pinned_revocable_and_lock(device, req))
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
            // The caller releases it with `ib_umem_dmabuf_revoke_unlock()`.
            guard.leak();
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
        // SAFETY: see the function's contract.
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
