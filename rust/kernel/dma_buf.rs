// SPDX-License-Identifier: GPL-2.0

//! dma-buf: buffers shared between devices and drivers.
//!
//! C header: [`include/linux/dma-buf.h`](srctree/include/linux/dma-buf.h)
//!
//! A [`DmaBuf`] is a buffer one driver (the exporter, see [`export`]) shares
//! with others (importers), which attach their device to it and map it for
//! DMA. Its [`dma_resv::DmaResv`] serialises attachments and carries the
//! exporter's [`dma_fence`]s.
//!
//! Locking rules of the dma-buf core, as types:
//! - pin, unpin, map and unmap are methods of [`LockedAttachment`], an
//!   attachment together with the proof that its own buffer's reservation
//!   lock is held. It is made only from that lock ([`Attachment::lock`], or
//!   [`Attachment::with_assumed_lock`] on paths entered with it held), so a
//!   proof for another buffer cannot be passed and nothing is checked at run
//!   time.
//! - `move_notify` is called by the core with that lock held; the trampoline
//!   hands the [`Importer`] callback the attachment locked that way.
//! - A [`Mapping`] carries the window applied to its table and is undone by
//!   [`LockedAttachment::unmap`] before the table goes back to the exporter.
//!
//! An importer never sees the pages of a table it maps: the exporter's
//! memory may have no `struct page` (device memory), so [`SGTable`] gives
//! the DMA side only.

pub mod dma_fence;
pub mod dma_resv;
pub mod export;

use crate::bindings;
use crate::device::Device;
use crate::error::{from_err_ptr, to_result};
use crate::prelude::*;
use crate::scatterlist::{DmaWindow, SGTable};
use crate::types::{ARef, AlwaysRefCounted, Opaque};
use core::marker::PhantomData;
use core::ptr::NonNull;
use dma_resv::{DmaResv, ResvGuard, ResvLocked};

/// A `struct dma_buf`.
///
/// # Invariants
///
/// The wrapped buffer is live; references to it are backed by a reference
/// count (an [`ARef`]) or by an attachment that holds one.
#[repr(transparent)]
pub struct DmaBuf(Opaque<bindings::dma_buf>);

// SAFETY: The reference count of a dma-buf is its file's, which is atomic and
// may be dropped from any thread.
unsafe impl AlwaysRefCounted for DmaBuf {
    #[inline]
    fn inc_ref(&self) {
        // SAFETY: the buffer is live by the type invariant.
        unsafe { bindings::get_dma_buf(self.as_raw()) };
    }

    #[inline]
    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller gives up one reference, which `dma_buf_put` drops.
        unsafe { bindings::dma_buf_put(obj.as_ptr().cast()) };
    }
}

// SAFETY: A dma-buf is shared between processes and drivers by design; its
// mutable state is protected by its reservation lock.
unsafe impl Send for DmaBuf {}
// SAFETY: As above.
unsafe impl Sync for DmaBuf {}

impl DmaBuf {
    /// Looks up the dma-buf of a file descriptor of the current process
    /// (`dma_buf_get`): `EBADF` for a descriptor that is not open, `EINVAL`
    /// for one that is not a dma-buf.
    #[inline]
    pub fn from_fd(fd: i32) -> Result<ARef<Self>> {
        // SAFETY: `dma_buf_get` accepts any value and returns a counted reference
        // or an error pointer.
        let ptr = from_err_ptr(unsafe { bindings::dma_buf_get(fd) })?;
        // SAFETY: `ptr` is a live dma-buf with one reference that we now own.
        Ok(unsafe { ARef::from_raw(NonNull::new_unchecked(ptr.cast::<Self>())) })
    }

    /// Borrows the buffer at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a live dma-buf that stays live for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::dma_buf) -> &'a Self {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C `struct dma_buf`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::dma_buf {
        self.0.get()
    }

    /// Size of the buffer in bytes.
    #[inline]
    pub fn size(&self) -> usize {
        // SAFETY: the buffer is live (type invariant); `size` never changes.
        unsafe { (*self.as_raw()).size }
    }

    /// The reservation object that serialises this buffer's attachments.
    #[inline]
    pub fn resv(&self) -> &DmaResv {
        // SAFETY: `resv` is set at export and lives as long as the buffer.
        unsafe { DmaResv::from_raw((*self.as_raw()).resv) }
    }
}

/// An importer's callback table, `struct dma_buf_attach_ops`.
///
/// # Invariants
///
/// The table is immutable and lives for the rest of the kernel's (or the
/// owning module's) life, as the dma-buf core requires of importer ops.
#[repr(transparent)]
pub struct AttachOps(bindings::dma_buf_attach_ops);

impl AttachOps {
    /// The table at `ptr` (for example an attachment's `importer_ops`).
    ///
    /// # Safety
    ///
    /// `ptr` is null or a table that stays valid and unchanged as long as any
    /// attachment made with it exists.
    #[inline]
    pub unsafe fn from_raw(ptr: *const bindings::dma_buf_attach_ops) -> Option<&'static Self> {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { ptr.cast::<Self>().as_ref() }
    }

    /// Whether the importer supports invalidation (`move_notify` is set).
    #[inline]
    pub fn has_move_notify(&self) -> bool {
        self.0.move_notify.is_some()
    }
}

/// What an attachment's `importer_priv` points to: any object, passed by
/// address.
///
/// # Safety
///
/// [`ImporterPriv::from_priv`] of a pointer from [`ImporterPriv::priv_ptr`]
/// must give back the same object; the blanket implementation below is the
/// only one.
pub unsafe trait ImporterPriv: Sync {
    /// The address passed as `importer_priv`.
    fn priv_ptr(&self) -> *mut crate::ffi::c_void;

    /// # Safety
    ///
    /// `ptr` came from [`Self::priv_ptr`] of an object that is still live for `'a`.
    unsafe fn from_priv<'a>(ptr: *mut crate::ffi::c_void) -> &'a Self;
}

// SAFETY: the address of the object round-trips to the same object.
unsafe impl<T: Sync> ImporterPriv for T {
    fn priv_ptr(&self) -> *mut crate::ffi::c_void {
        (self as *const T).cast_mut().cast()
    }

    unsafe fn from_priv<'a>(ptr: *mut crate::ffi::c_void) -> &'a Self {
        // SAFETY: `ptr` is the address of a live `T` (caller's contract).
        unsafe { &*ptr.cast::<T>() }
    }
}

/// An importer whose `move_notify` is Rust code.
pub trait Importer {
    /// What `importer_priv` of its attachments points to.
    type Priv: ImporterPriv;
    /// Whether the importer accepts peer-to-peer (non struct page) memory.
    const ALLOW_PEER2PEER: bool;
    /// The exporter is about to move the buffer: stop using the mapping.
    fn move_notify(priv_: &Self::Priv, attach: LockedAttachment<'_>);
}

/// The C callback table of an [`Importer`].
pub struct ImporterOps<T: Importer>(PhantomData<T>);

impl<T: Importer> ImporterOps<T> {
    const OPS: bindings::dma_buf_attach_ops = bindings::dma_buf_attach_ops {
        allow_peer2peer: T::ALLOW_PEER2PEER,
        move_notify: Some(Self::move_notify),
    };

    /// The table, for [`DynAttachment::new`].
    pub fn table() -> &'static AttachOps {
        // INVARIANT: a promoted constant is immutable and lives forever.
        let ops: &'static bindings::dma_buf_attach_ops = &Self::OPS;
        // SAFETY: `AttachOps` is `repr(transparent)` over the C table.
        unsafe { &*(ops as *const bindings::dma_buf_attach_ops).cast::<AttachOps>() }
    }

    /// # Safety
    ///
    /// Called by the dma-buf core only, for an attachment made with
    /// [`Self::table`], with the buffer's reservation lock held.
    unsafe extern "C" fn move_notify(attach: *mut bindings::dma_buf_attachment) {
        // SAFETY: the core passes a live attachment.
        let attach = unsafe { Attachment::from_raw(attach) };
        // SAFETY: attachments made with this table get an `importer_priv` from
        // `T::Priv::priv_ptr` (see `DynAttachment::new`), and the owner keeps the
        // object live until the attachment is detached.
        let priv_ = unsafe { T::Priv::from_priv(attach.importer_priv()) };
        // SAFETY: the core calls `move_notify` with the buffer's lock held, and
        // keeps it for the duration of the call; no other proof exists in this
        // call chain.
        unsafe { attach.with_assumed_lock(|attach| T::move_notify(priv_, attach)) }
    }
}

/// A dma-buf attachment, borrowed.
///
/// # Invariants
///
/// The wrapped attachment is live (attached) for the lifetime of the reference.
#[repr(transparent)]
pub struct Attachment(Opaque<bindings::dma_buf_attachment>);

impl Attachment {
    /// Borrows the attachment at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a live attachment that stays attached for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::dma_buf_attachment) -> &'a Self {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C `struct dma_buf_attachment`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::dma_buf_attachment {
        self.0.get()
    }

    /// The buffer this attachment belongs to.
    #[inline]
    pub fn dmabuf(&self) -> &DmaBuf {
        // SAFETY: an attachment holds its buffer live until detached.
        unsafe { DmaBuf::from_raw((*self.as_raw()).dmabuf) }
    }

    /// The importer's private pointer, as given at attach time.
    #[inline]
    pub fn importer_priv(&self) -> *mut crate::ffi::c_void {
        // SAFETY: the attachment is live; the field is set once at attach time.
        unsafe { (*self.as_raw()).importer_priv }
    }

    /// Takes the reservation lock of the attachment's buffer.
    #[inline]
    pub fn lock(&self) -> AttachmentGuard<'_> {
        AttachmentGuard {
            attach: self,
            guard: self.dmabuf().resv().lock(),
        }
    }

    /// Runs `f` with the attachment locked by a lock the caller's context
    /// already holds (see [`DmaResv::assume_locked`]).
    ///
    /// # Safety
    ///
    /// The current thread holds the reservation lock of the attachment's
    /// buffer for the whole call, and no other proof for it is in use
    /// meanwhile.
    #[inline]
    pub unsafe fn with_assumed_lock<R>(&self, f: impl FnOnce(LockedAttachment<'_>) -> R) -> R {
        // SAFETY: the lock is held for the call (the caller's contract).
        let locked = unsafe { self.dmabuf().resv().assume_locked() };
        // INVARIANT: the proof is for this attachment's own buffer.
        f(LockedAttachment {
            attach: self,
            locked: &locked,
        })
    }
}

/// Holds the reservation lock of an attachment's buffer
/// ([`Attachment::lock`]); unlocks it when dropped.
#[must_use = "the reservation lock is released when the guard is dropped"]
pub struct AttachmentGuard<'a> {
    attach: &'a Attachment,
    guard: ResvGuard<'a>,
}

impl AttachmentGuard<'_> {
    /// The attachment, locked.
    #[inline]
    pub fn view(&self) -> LockedAttachment<'_> {
        // INVARIANT: `guard` is the lock of `attach`'s buffer (made in
        // `Attachment::lock`).
        LockedAttachment {
            attach: self.attach,
            locked: &self.guard,
        }
    }

    /// Keeps the lock held after the guard is gone (see [`ResvGuard::leak`]).
    #[inline]
    pub fn leak(self) {
        self.guard.leak();
    }
}

/// An attachment whose buffer's reservation lock the current thread holds:
/// what the operations the dma-buf API runs "with the reservation lock held"
/// take.
///
/// # Invariants
///
/// `locked` is the proof for the reservation lock of `attach`'s own buffer.
#[derive(Clone, Copy)]
pub struct LockedAttachment<'a> {
    attach: &'a Attachment,
    locked: &'a ResvLocked<'a>,
}

impl<'a> LockedAttachment<'a> {
    /// The attachment.
    #[inline]
    pub fn attachment(&self) -> &'a Attachment {
        self.attach
    }

    /// The proof of the buffer's lock (to wait for its fences).
    #[inline]
    pub fn resv(&self) -> &'a ResvLocked<'a> {
        self.locked
    }

    /// Pins the buffer in place for this attachment (`dma_buf_pin`).
    #[inline]
    pub fn pin(&self) -> Result {
        // SAFETY: the attachment is live and its buffer's lock is held (type
        // invariant).
        to_result(unsafe { bindings::dma_buf_pin(self.attach.as_raw()) })
    }

    /// Undoes one [`LockedAttachment::pin`] (`dma_buf_unpin`).
    #[inline]
    pub fn unpin(&self) {
        // SAFETY: the attachment is live and its buffer's lock is held (type
        // invariant).
        unsafe { bindings::dma_buf_unpin(self.attach.as_raw()) };
    }

    /// Maps the buffer for the attachment's device, bidirectionally.
    #[inline]
    pub fn map(&self) -> Result<Mapping> {
        // SAFETY: the attachment is live and its buffer's lock is held (type
        // invariant).
        let sgt = from_err_ptr(unsafe {
            bindings::dma_buf_map_attachment(
                self.attach.as_raw(),
                bindings::dma_data_direction_DMA_BIDIRECTIONAL,
            )
        })?;
        let sgt = NonNull::new(sgt).ok_or(EINVAL)?;
        // INVARIANT: `sgt` was just mapped for this attachment.
        Ok(Mapping {
            sgt,
            attach: self.attach.as_raw(),
            window: None,
        })
    }

    /// Restores the mapping's window, then unmaps it.
    ///
    /// A mapping of another attachment is refused (and leaked rather than
    /// unmapped through the wrong attachment).
    #[inline]
    pub fn unmap(&self, mapping: Mapping) {
        if crate::warn_on_once!(
            mapping.attach != self.attach.as_raw(),
            "dma-buf mapping unmapped through the wrong attachment\n"
        ) {
            return;
        }
        let Mapping { sgt, window, .. } = mapping;
        if let Some(window) = window {
            // SAFETY: `sgt` stays mapped until the unmap below (invariant of `Mapping`).
            let table = unsafe { SGTable::from_raw(sgt.as_ptr()) };
            crate::warn_on_once!(
                window.restore(table).is_err(),
                "dma-buf window does not belong to its table\n"
            );
        }
        // SAFETY: `mapping` was mapped for this live attachment (its invariant)
        // and is consumed here, so it is unmapped once; the lock is held (type
        // invariant).
        unsafe {
            bindings::dma_buf_unmap_attachment(
                self.attach.as_raw(),
                sgt.as_ptr(),
                bindings::dma_data_direction_DMA_BIDIRECTIONAL,
            )
        };
    }
}

/// A table mapped for an attachment, with the importer's window applied.
///
/// # Invariants
///
/// `sgt` was returned by `dma_buf_map_attachment` for `attach` and is not yet
/// unmapped; `window`, if set, was made on `sgt`.
#[must_use = "a mapping must be given back with LockedAttachment::unmap"]
pub struct Mapping {
    sgt: NonNull<bindings::sg_table>,
    attach: *mut bindings::dma_buf_attachment,
    window: Option<DmaWindow>,
}

impl Mapping {
    /// The mapped table.
    #[inline]
    pub fn table(&self) -> &SGTable {
        // SAFETY: the table stays mapped while `self` exists (type invariant).
        unsafe { SGTable::from_raw(self.sgt.as_ptr()) }
    }

    /// Trims the table to `[start, end)` (see [`SGTable::trim`]). A mapping has
    /// at most one window: a second call restores the first one before.
    #[inline]
    pub fn set_window(&mut self, start: u64, end: u64) -> &DmaWindow {
        if let Some(old) = self.window.take() {
            // Cannot fail: the window was made on this table.
            let _ = old.restore(self.table());
        }
        let window = self.table().trim(start, end);
        self.window.insert(window)
    }

    /// Gives the mapping up as the raw parts a C structure stores.
    #[inline]
    pub fn into_raw_parts(self) -> MappingParts {
        MappingParts {
            sgt: self.sgt,
            attach: self.attach,
            window: self.window.map(|w| w.into_parts().1),
        }
    }

    /// Takes back a mapping given up by [`Mapping::into_raw_parts`].
    ///
    /// # Safety
    ///
    /// `parts` are those of one `into_raw_parts` call (as stored, unchanged),
    /// and no mapping was made of them since.
    #[inline]
    pub unsafe fn from_raw_parts(parts: MappingParts) -> Self {
        let MappingParts {
            sgt,
            attach,
            window,
        } = parts;
        // INVARIANT: the parts of one mapping, which owned them (the caller's
        // contract).
        Self {
            sgt,
            attach,
            // SAFETY: the window parts were made on `sgt` (the caller's contract).
            window: window.map(|w| unsafe { DmaWindow::from_parts(sgt.as_ptr(), w) }),
        }
    }
}

/// A [`Mapping`] as a C structure stores it (`struct ib_umem_dmabuf`: `sgt`,
/// `attach` and the window's fields).
pub struct MappingParts {
    /// The mapped table.
    pub sgt: NonNull<bindings::sg_table>,
    /// The attachment it was mapped for.
    pub attach: *mut bindings::dma_buf_attachment,
    /// The window applied to the table, if any.
    pub window: Option<crate::scatterlist::WindowParts>,
}

/// A dynamic attachment owned by the importer; detached when dropped.
///
/// # Invariants
///
/// `attach` is live, made by `dma_buf_dynamic_attach` on `dmabuf`, and owned
/// by this value. Drop order: the attachment is detached (in `drop`) before the
/// buffer reference (`dmabuf`, a field) is put.
pub struct DynAttachment {
    pub(crate) attach: NonNull<bindings::dma_buf_attachment>,
    dmabuf: ARef<DmaBuf>,
}

impl DynAttachment {
    /// Attaches `dev` to `dmabuf` as a dynamic importer with callbacks `ops`
    /// and `importer_priv` pointing to `priv_`.
    ///
    /// # Safety
    ///
    /// `priv_` stays live (at the same address) until this attachment is
    /// dropped, and if `ops` came from [`ImporterOps::table`] of some `T`, then
    /// `P` is `T::Priv`.
    #[inline]
    pub unsafe fn new<P: ImporterPriv>(
        dmabuf: ARef<DmaBuf>,
        dev: &Device,
        ops: &'static AttachOps,
        priv_: &P,
    ) -> Result<Self> {
        // SAFETY: the buffer is live (we hold a reference), `dev` is a live device,
        // `ops` is immutable and static (its invariant); the caller keeps `priv_`
        // live as long as the attachment.
        let attach = from_err_ptr(unsafe {
            bindings::dma_buf_dynamic_attach(
                dmabuf.as_raw(),
                dev.as_raw(),
                &ops.0,
                priv_.priv_ptr(),
            )
        })?;
        let attach = NonNull::new(attach).ok_or(EINVAL)?;
        // INVARIANT: just attached, owned by the new value.
        Ok(Self { attach, dmabuf })
    }

    /// Gives up ownership, for storage in a C structure.
    #[inline]
    pub fn into_raw(self) -> *mut bindings::dma_buf_attachment {
        let me = core::mem::ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so reading the reference out moves it;
        // it is then leaked, to be reclaimed by `from_raw`.
        let dmabuf = unsafe { core::ptr::read(&me.dmabuf) };
        let _ = ARef::into_raw(dmabuf);
        me.attach.as_ptr()
    }

    /// Takes back ownership given up by [`DynAttachment::into_raw`].
    ///
    /// # Safety
    ///
    /// `raw` came from `into_raw` and is not owned by anything else.
    #[inline]
    pub unsafe fn from_raw(raw: *mut bindings::dma_buf_attachment) -> Self {
        // SAFETY: the attachment is live; its buffer reference was kept by `into_raw`.
        let dmabuf = unsafe { NonNull::new_unchecked((*raw).dmabuf.cast::<DmaBuf>()) };
        Self {
            // SAFETY: `into_raw` returned a non-null pointer.
            attach: unsafe { NonNull::new_unchecked(raw) },
            // SAFETY: one reference was leaked by `into_raw`, reclaimed here.
            dmabuf: unsafe { ARef::from_raw(dmabuf) },
        }
    }
}

impl Drop for DynAttachment {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: owned and live (type invariant); detached once, here, while the
        // buffer reference (dropped after this) keeps the buffer live.
        unsafe { bindings::dma_buf_detach(self.dmabuf.as_raw(), self.attach.as_ptr()) };
    }
}

// SAFETY: A mapping is a table pointer that may be unmapped from any thread
// holding the buffer's reservation lock (which `LockedAttachment::unmap`
// requires).
unsafe impl Send for Mapping {}
