// SPDX-License-Identifier: GPL-2.0

//! The views of a umem that hold its buffer's reservation lock.

use super::{RevokeCallback, UmemDmabuf, UmemMapping};
use core::ptr::{self, NonNull};
use kernel::bindings;
use kernel::dma_buf::dma_resv::ResvLocked;
use kernel::dma_buf::{AttachmentGuard, LockedAttachment, Mapping, MappingParts, Pinned};
use kernel::prelude::*;
use kernel::scatterlist::WindowParts;

/// The ways into a umem's locked view.
impl UmemDmabuf {
    /// Takes the buffer's reservation lock (`EINVAL` while the umem is still
    /// being created).
    #[inline]
    pub(crate) fn lock(&self) -> Result<UmemGuard<'_>> {
        // INVARIANT: the lock of the umem's own attachment.
        Ok(UmemGuard {
            guard: self.attachment()?.lock()?,
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

    /// Keeps the lock held after the guard is gone, for the entry points that
    /// return to C with it held (see [`ResvGuard::leak`]).
    ///
    /// # Safety
    ///
    /// Whoever the lock is left to unlocks it before the umem is released
    /// (the callers of `get_pinned_revocable_and_lock` and `revoke_lock`,
    /// by ib_core's contract: `revoke_unlock`, or the driver).
    pub(crate) unsafe fn leak(self) {
        // SAFETY: the reservation object is the buffer's, which the umem keeps
        // (through its attachment) until it is released; the lock is released
        // before that (the caller's contract).
        unsafe { self.guard.leak() };
    }
}

/// The promise of the caller of `get_pinned_revocable_and_lock` (ib_core's
/// contract): it unlocks the new umem's reservation lock before it releases
/// the umem. Only that entry point's trampoline makes one, and hands it to
/// [`super::UmemImpl::get_pinned_revocable_and_lock`], which returns the
/// umem locked through it ([`ReturnLocked::keep`]) without `unsafe`.
pub(crate) struct ReturnLocked(());

impl ReturnLocked {
    /// The promise, made by the trampoline of the one entry point whose
    /// caller gives it.
    pub(super) fn new() -> Self {
        Self(())
    }

    /// Leaves `guard`'s lock held when the entry point returns.
    pub(crate) fn keep(self, guard: UmemGuard<'_>) {
        // SAFETY: the caller of the entry point unlocks it before it releases
        // the umem (the promise this value stands for).
        unsafe { guard.leak() };
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
    attach: LockedAttachment<'a, 'a>,
}

impl<'a> UmemLocked<'a> {
    /// The view of a notification that came through `attach`: `None` (and a
    /// WARNING) unless `attach` is the umem's attachment. Call
    /// [`UmemDmabuf::adopt_attachment`] first, so a notification that arrives
    /// during creation finds the attachment.
    pub(crate) fn notified(umem: &'a UmemDmabuf, attach: LockedAttachment<'a, 'a>) -> Option<Self> {
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
    pub(crate) fn attachment(&self) -> LockedAttachment<'a, 'a> {
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

    /// Revokes the umem's access to the buffer: unmaps its mapping, undoes
    /// its pin, and marks it revoked (`revoked`), after which it takes
    /// neither again ([`UmemLocked::map_window`] and
    /// [`UmemLocked::keep_pin`] refuse). A revoked umem holds nothing to
    /// undo, so its release only detaches.
    #[inline]
    pub(crate) fn revoke(&self) {
        self.unmap();
        self.unpin_kept();
        // SAFETY: the lock is held, which serialises the field.
        unsafe { (*self.raw()).set_revoked(1) };
    }

    /// Keeps `pin`, a pin of the umem's attachment, in the C field
    /// `pinned` until [`UmemLocked::take_pin`].
    ///
    /// Refused (the pin is given back) if the umem holds a pin already or
    /// `pin` is of another attachment, since the field records one pin of its
    /// own, or if the umem was revoked ([`UmemLocked::revoke`]).
    #[inline]
    pub(crate) fn keep_pin<'p>(&self, pin: Pinned<'p>) -> Result<(), Pinned<'p>> {
        if self.holds_pin() || self.revoked() || !pin.is_of(self.attach.attachment()) {
            return Err(pin);
        }
        pin.into_raw();
        // SAFETY: the lock is held, which serialises the field; setting it
        // hands the pin given up above to the umem (type invariant of
        // `UmemDmabuf`).
        unsafe { (*self.raw()).set_pinned(1) };
        Ok(())
    }

    /// Whether the umem holds a pin on its attachment.
    #[inline]
    fn holds_pin(&self) -> bool {
        // SAFETY: the lock is held, which serialises the field.
        unsafe { (*self.raw()).pinned() != 0 }
    }

    /// Emits the `revoke` trace event of the umem, which is being revoked,
    /// if the event is on.
    #[inline(always)]
    pub(crate) fn trace_revoke(&self) {
        if super::trace::revoke_on() {
            self.umem().trace_revoke(self.holds_pin());
        }
    }

    /// Takes back the pin [`UmemLocked::keep_pin`] kept, if any.
    #[inline]
    pub(crate) fn take_pin(&self) -> Option<Pinned<'a>> {
        if !self.holds_pin() {
            return None;
        }
        // SAFETY: the lock is held, which serialises the field. The set flag
        // is one pin of the umem's attachment given up by `keep_pin` (type
        // invariant of `UmemDmabuf`); clearing it takes that pin back, once.
        unsafe {
            (*self.raw()).set_pinned(0);
            Some(Pinned::from_raw(self.attach.attachment()))
        }
    }

    /// Undoes the pin [`UmemLocked::keep_pin`] kept, if any; returns whether
    /// there was one.
    #[inline]
    pub(crate) fn unpin_kept(&self) -> bool {
        let Some(pin) = self.take_pin() else {
            return false;
        };
        if let Err(pin) = self.attach.unpin(pin) {
            // Not reached: a pin of the umem's own attachment, under its own
            // buffer's lock, is never refused.
            pin.into_raw();
        }
        true
    }

    /// Maps the umem's attachment, trims the table to the byte range
    /// `[start, end)` of the buffer ([`Mapping::set_window`]) and installs it
    /// in the C fields drivers read: `sgt`, the first/last entry bookkeeping
    /// and `umem.sgt_append.sgt` (`sgl` the first entry of the window,
    /// `nents` the number of entries in it).
    ///
    /// Refused, the exporter not called, with `EINVAL` once the umem was
    /// revoked ([`UmemLocked::revoke`]), and with `EBUSY` while it holds a
    /// mapping: an attachment has one live mapping at a time (see
    /// [`LockedAttachment::map`]; exporters such as the system heap hand
    /// every map of an attachment the same table). A mapping never leaves
    /// the umem: it is made and installed here and unmapped by
    /// [`UmemLocked::unmap`] (or when the umem goes), so `sgt` says whether
    /// one is live, and the table installed is always the umem's own
    /// attachment's, with a window.
    #[inline]
    pub(crate) fn map_window(&self, start: u64, end: u64) -> Result {
        if self.revoked() {
            return Err(EINVAL);
        }
        if self.is_mapped() {
            return Err(EBUSY);
        }
        // SAFETY: every mapping of the umem's attachment is made here and
        // installed before this returns, until `take_mapping` takes it out to
        // unmap it; none is installed (checked above), so none is live. The
        // attachment is the umem's alone: it is reached only through the umem.
        let mut mapping: UmemMapping<'a> = unsafe { self.attach.map() }?;
        let p = mapping.set_window(start, end);
        // SAFETY: stored in the umem's fields below and taken back by
        // `take_mapping`, which unmaps.
        let parts = unsafe { mapping.into_raw_parts() };
        let raw = self.raw();
        // SAFETY: the lock is held, which serialises these fields; storing the
        // parts here transfers their ownership to the umem (type invariant of
        // `UmemDmabuf`; `attach` is the umem's own already, and `p` is the
        // window of `parts`).
        unsafe {
            (*raw).sgt = parts.sgt.as_ptr();
            (*raw).first_sg = p.first;
            // CAST: offsets are below an entry's `u32` length.
            (*raw).first_sg_offset = p.first_offset as usize;
            (*raw).last_sg = p.last;
            (*raw).last_sg_trim = p.last_trim as usize;
            (*raw).umem.sgt_append.sgt.sgl = p.first;
            (*raw).umem.sgt_append.sgt.nents = p.nents;
        }
        Ok(())
    }

    /// Whether a mapping is installed (`sgt` set).
    #[inline]
    pub(crate) fn is_mapped(&self) -> bool {
        // SAFETY: the lock is held, which serialises the field.
        unsafe { !(*self.raw()).sgt.is_null() }
    }

    /// Unmaps the umem's mapping, restoring the exporter's table; `false`
    /// if it holds none.
    #[inline]
    pub(crate) fn unmap(&self) -> bool {
        match self.take_mapping() {
            Some(mapping) => {
                mapping.unmap();
                true
            }
            None => false,
        }
    }

    /// Takes the installed mapping back out of the C fields, clearing `sgt` and
    /// the first/last entry bookkeeping (`umem.sgt_append.sgt` is left as is,
    /// as the C implementation does).
    #[inline]
    fn take_mapping(&self) -> Option<UmemMapping<'a>> {
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
            let mapping = Mapping::from_raw_parts(self.attach, parts);
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
