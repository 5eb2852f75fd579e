// SPDX-License-Identifier: GPL-2.0

//! dma-buf importing: buffers, dynamic attachments and their mappings.
//!
//! C header: [`include/linux/dma-buf.h`](srctree/include/linux/dma-buf.h)
//!
//! Locking rules of the dma-buf core, as types:
//! - [`Attachment::pin`], [`Attachment::unpin`], [`Attachment::map`] and
//!   [`Attachment::unmap`] take a [`ResvLocked`] proof for the buffer's
//!   reservation object (a proof for another object is refused with `EINVAL`).
//! - `move_notify` is called by the core with that lock held; the trampoline
//!   hands the [`Importer`] callback a proof built for exactly that lock.
//! - A [`Mapping`] carries the window applied to its table and is undone by
//!   [`Attachment::unmap`] before the table goes back to the exporter.

use super::device::Device;
use super::dma_resv::{DmaResv, ResvLocked};
use super::scatterlist::{DmaWindow, SgTable};
use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::bindings;
use kernel::error::from_err_ptr;
use kernel::prelude::*;
#[cfg(umem_exporter)]
use kernel::sync::Arc;
use kernel::types::{ARef, AlwaysRefCounted, Opaque};
#[cfg(umem_exporter)]
use kernel::ThisModule;

/// A `struct dma_buf`.
///
/// # Invariants
///
/// The wrapped buffer is live; references to it are backed by a reference
/// count (an [`ARef`]) or by an attachment that holds one.
#[repr(transparent)]
pub(crate) struct DmaBuf(Opaque<bindings::dma_buf>);

// SAFETY: The reference count of a dma-buf is its file's, which is atomic and
// may be dropped from any thread.
unsafe impl AlwaysRefCounted for DmaBuf {
    fn inc_ref(&self) {
        // SAFETY: the buffer is live by the type invariant.
        unsafe { bindings::get_dma_buf(self.as_raw()) };
    }

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
    pub(crate) fn from_fd(fd: i32) -> Result<ARef<Self>> {
        // SAFETY: `dma_buf_get` accepts any value and returns a counted reference
        // or an error pointer.
        let ptr = from_err_ptr(unsafe { bindings::dma_buf_get(fd) })?;
        // SAFETY: `ptr` is a live dma-buf with one reference that we now own.
        Ok(unsafe { ARef::from_raw(NonNull::new_unchecked(ptr.cast::<Self>())) })
    }

    /// # Safety
    ///
    /// `ptr` is a live dma-buf that stays live for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::dma_buf) -> &'a Self {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::dma_buf {
        self.0.get()
    }

    /// Size of the buffer in bytes.
    #[cfg(umem_importer)]
    pub(crate) fn size(&self) -> usize {
        // SAFETY: the buffer is live (type invariant); `size` never changes.
        unsafe { (*self.as_raw()).size }
    }

    /// Tells every dynamic importer that the buffer is about to move
    /// (`dma_buf_move_notify`); they drop their mappings before this returns.
    #[cfg(umem_exporter)]
    pub(crate) fn move_notify(&self, locked: &ResvLocked<'_>) -> Result {
        if !locked.is_for(self.resv()) {
            return Err(EINVAL);
        }
        // SAFETY: the buffer is live and its reservation lock is held.
        unsafe { bindings::dma_buf_move_notify(self.as_raw()) };
        Ok(())
    }

    /// Zaps every CPU mapping of the buffer (`mmap`s of the dma-buf file), so
    /// the next access faults and sees the current backing store.
    #[cfg(umem_exporter)]
    pub(crate) fn zap_cpu_mappings(&self) {
        // SAFETY: the buffer and its file are live; `unmap_mapping_range` may be
        // called on any address space at any time.
        unsafe {
            let file = (*self.as_raw()).file;
            bindings::unmap_mapping_range((*file).f_mapping, 0, 0, 1);
        }
    }

    /// Installs a new file descriptor for the buffer in the current process
    /// (`O_CLOEXEC`), holding a reference of its own.
    #[cfg(umem_exporter)]
    pub(crate) fn new_fd(&self) -> Result<i32> {
        self.inc_ref();
        // SAFETY: the buffer is live; `dma_buf_fd` consumes the reference taken
        // above on success.
        let fd = unsafe { bindings::dma_buf_fd(self.as_raw(), bindings::O_CLOEXEC as i32) };
        if fd < 0 {
            // SAFETY: gives back the reference taken above.
            unsafe { <Self as AlwaysRefCounted>::dec_ref(NonNull::from(self)) };
            return Err(Error::from_errno(fd));
        }
        Ok(fd)
    }

    /// Closes a descriptor that [`DmaBuf::new_fd`] installed and that could not
    /// be handed to userspace.
    #[cfg(umem_exporter)]
    pub(crate) fn close_fd(fd: i32) {
        // CAST: a descriptor from `new_fd` is non-negative.
        // SAFETY: `close_fd` accepts any descriptor number of the current process.
        let _ = unsafe { close_fd(fd as u32) };
    }

    /// The exporter's private data, if this buffer was exported by
    /// [`export`] with exporter type `T`.
    #[cfg(umem_exporter)]
    pub(crate) fn exporter<T: Exporter>(&self) -> Option<&T> {
        // SAFETY: the buffer is live; `ops` and `priv` are set at export time.
        let (ops, priv_) = unsafe { ((*self.as_raw()).ops, (*self.as_raw()).priv_) };
        if !core::ptr::eq(ops, &ExporterOps::<T>::OPS) {
            return None;
        }
        // SAFETY: buffers with these ops were exported by `export::<T>`, whose
        // `priv` is an `Arc<T>` released only when the buffer is.
        Some(unsafe { &*priv_.cast::<T>() })
    }

    /// The reservation object that serialises this buffer's attachments.
    pub(crate) fn resv(&self) -> &DmaResv {
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
pub(crate) struct AttachOps(bindings::dma_buf_attach_ops);

impl AttachOps {
    /// # Safety
    ///
    /// `ptr` is null or a table that stays valid and unchanged as long as any
    /// attachment made with it exists.
    #[cfg(umem_importer)]
    pub(crate) unsafe fn from_raw(
        ptr: *const bindings::dma_buf_attach_ops,
    ) -> Option<&'static Self> {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { ptr.cast::<Self>().as_ref() }
    }

    /// Whether the importer supports invalidation (`move_notify` is set).
    #[cfg(umem_importer)]
    pub(crate) fn has_move_notify(&self) -> bool {
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
pub(crate) unsafe trait ImporterPriv: Sync {
    /// The address passed as `importer_priv`.
    fn priv_ptr(&self) -> *mut kernel::ffi::c_void;

    /// # Safety
    ///
    /// `ptr` came from [`Self::priv_ptr`] of an object that is still live for `'a`.
    unsafe fn from_priv<'a>(ptr: *mut kernel::ffi::c_void) -> &'a Self;
}

// SAFETY: the address of the object round-trips to the same object.
unsafe impl<T: Sync> ImporterPriv for T {
    fn priv_ptr(&self) -> *mut kernel::ffi::c_void {
        (self as *const T).cast_mut().cast()
    }

    unsafe fn from_priv<'a>(ptr: *mut kernel::ffi::c_void) -> &'a Self {
        // SAFETY: `ptr` is the address of a live `T` (caller's contract).
        unsafe { &*ptr.cast::<T>() }
    }
}

/// An importer whose `move_notify` is Rust code.
pub(crate) trait Importer {
    /// What `importer_priv` of its attachments points to.
    type Priv: ImporterPriv;
    /// Whether the importer accepts peer-to-peer (non struct page) memory.
    const ALLOW_PEER2PEER: bool;
    /// The exporter is about to move the buffer: stop using the mapping.
    fn move_notify(priv_: &Self::Priv, attach: &Attachment, locked: &ResvLocked<'_>);
}

/// The C callback table of an [`Importer`].
pub(crate) struct ImporterOps<T: Importer>(PhantomData<T>);

impl<T: Importer> ImporterOps<T> {
    const OPS: bindings::dma_buf_attach_ops = bindings::dma_buf_attach_ops {
        allow_peer2peer: T::ALLOW_PEER2PEER,
        move_notify: Some(Self::move_notify),
    };

    /// The table, for [`DynAttachment::new`].
    pub(crate) fn table() -> &'static AttachOps {
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
        let resv = attach.dmabuf().resv();
        // SAFETY: the core calls `move_notify` with this lock held, and keeps it
        // for the duration of the call; no other proof exists in this call chain.
        let locked = unsafe { resv.assume_locked() };
        T::move_notify(priv_, attach, &locked);
    }
}

/// A dma-buf attachment, borrowed.
///
/// # Invariants
///
/// The wrapped attachment is live (attached) for the lifetime of the reference.
#[repr(transparent)]
pub(crate) struct Attachment(Opaque<bindings::dma_buf_attachment>);

impl Attachment {
    /// # Safety
    ///
    /// `ptr` is a live attachment that stays attached for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::dma_buf_attachment) -> &'a Self {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::dma_buf_attachment {
        self.0.get()
    }

    /// The buffer this attachment belongs to.
    pub(crate) fn dmabuf(&self) -> &DmaBuf {
        // SAFETY: an attachment holds its buffer live until detached.
        unsafe { DmaBuf::from_raw((*self.as_raw()).dmabuf) }
    }

    /// The importing device.
    #[cfg(umem_exporter)]
    pub(crate) fn dev(&self) -> &Device {
        // SAFETY: the attachment is live and holds its device; `dev` is never null
        // (`dma_buf_dynamic_attach` refuses a null device).
        unsafe { &*(*self.as_raw()).dev.cast::<Device>() }
    }

    fn importer_priv(&self) -> *mut kernel::ffi::c_void {
        // SAFETY: the attachment is live; the field is set once at attach time.
        unsafe { (*self.as_raw()).importer_priv }
    }

    fn check(&self, locked: &ResvLocked<'_>) -> Result {
        if locked.is_for(self.dmabuf().resv()) {
            Ok(())
        } else {
            pr_err!("dma-buf attachment used with another buffer's lock\n");
            Err(EINVAL)
        }
    }

    /// Pins the buffer in place for this attachment (`dma_buf_pin`).
    pub(crate) fn pin(&self, locked: &ResvLocked<'_>) -> Result {
        self.check(locked)?;
        // SAFETY: the attachment is live and the reservation lock is held.
        kernel::error::to_result(unsafe { bindings::dma_buf_pin(self.as_raw()) })
    }

    /// Undoes one [`Attachment::pin`] (`dma_buf_unpin`).
    pub(crate) fn unpin(&self, locked: &ResvLocked<'_>) {
        if self.check(locked).is_ok() {
            // SAFETY: the attachment is live and the reservation lock is held.
            unsafe { bindings::dma_buf_unpin(self.as_raw()) };
        }
    }

    /// Maps the buffer for the attachment's device, bidirectionally.
    pub(crate) fn map(&self, locked: &ResvLocked<'_>) -> Result<Mapping> {
        self.check(locked)?;
        // SAFETY: the attachment is live and the reservation lock is held.
        let sgt = from_err_ptr(unsafe {
            bindings::dma_buf_map_attachment(
                self.as_raw(),
                bindings::dma_data_direction_DMA_BIDIRECTIONAL,
            )
        })?;
        let sgt = NonNull::new(sgt).ok_or(EINVAL)?;
        // INVARIANT: `sgt` was just mapped for this attachment.
        Ok(Mapping {
            sgt,
            attach: self.as_raw(),
            window: None,
        })
    }

    /// Restores the mapping's window, then unmaps it.
    ///
    /// A mapping of another attachment, or a wrong lock, is refused (and
    /// leaked rather than unmapped through the wrong attachment).
    pub(crate) fn unmap(&self, locked: &ResvLocked<'_>, mapping: Mapping) {
        if self.check(locked).is_err() || mapping.attach != self.as_raw() {
            pr_err!("dma-buf mapping unmapped through the wrong attachment\n");
            return;
        }
        let Mapping { sgt, window, .. } = mapping;
        if let Some(window) = window {
            // SAFETY: `sgt` stays mapped until the unmap below (invariant of `Mapping`).
            let table = unsafe { SgTable::from_raw(sgt.as_ptr()) };
            if window.restore(table).is_err() {
                pr_err!("dma-buf window does not belong to its table\n");
            }
        }
        // SAFETY: `mapping` was mapped for this live attachment (its invariant)
        // and is consumed here, so it is unmapped once; the lock is held.
        unsafe {
            bindings::dma_buf_unmap_attachment(
                self.as_raw(),
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
#[must_use = "a mapping must be given back with Attachment::unmap"]
pub(crate) struct Mapping {
    sgt: NonNull<bindings::sg_table>,
    attach: *mut bindings::dma_buf_attachment,
    window: Option<DmaWindow>,
}

impl Mapping {
    /// The mapped table.
    pub(crate) fn table(&self) -> &SgTable {
        // SAFETY: the table stays mapped while `self` exists (type invariant).
        unsafe { SgTable::from_raw(self.sgt.as_ptr()) }
    }

    /// Trims the table to `[start, end)` (see [`SgTable::trim`]). A mapping has
    /// at most one window: a second call restores the first one before.
    #[cfg(umem_importer)]
    pub(crate) fn set_window(&mut self, start: u64, end: u64) -> &DmaWindow {
        if let Some(old) = self.window.take() {
            // Cannot fail: the window was made on this table.
            let _ = old.restore(self.table());
        }
        let window = self.table().trim(start, end);
        self.window.insert(window)
    }

    /// Splits into raw parts, for storage in a C structure.
    #[cfg(umem_importer)]
    pub(crate) fn into_parts(
        self,
    ) -> (
        *mut bindings::sg_table,
        *mut bindings::dma_buf_attachment,
        Option<DmaWindow>,
    ) {
        (self.sgt.as_ptr(), self.attach, self.window)
    }

    /// Reassembles a mapping split by [`Mapping::into_parts`].
    ///
    /// # Safety
    ///
    /// The parts come from one `into_parts` call and were not reassembled since.
    #[cfg(umem_importer)]
    pub(crate) unsafe fn from_parts(
        sgt: NonNull<bindings::sg_table>,
        attach: *mut bindings::dma_buf_attachment,
        window: Option<DmaWindow>,
    ) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self {
            sgt,
            attach,
            window,
        }
    }
}

/// A dynamic attachment owned by the importer; detached when dropped.
///
/// # Invariants
///
/// `attach` is live, made by `dma_buf_dynamic_attach` on `dmabuf`, and owned
/// by this value. Drop order: the attachment is detached (in `drop`) before the
/// buffer reference (`dmabuf`, a field) is put.
pub(crate) struct DynAttachment {
    attach: NonNull<bindings::dma_buf_attachment>,
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
    pub(crate) unsafe fn new<P: ImporterPriv>(
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
    #[cfg(umem_importer)]
    pub(crate) fn into_raw(self) -> *mut bindings::dma_buf_attachment {
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
    #[cfg(umem_importer)]
    pub(crate) unsafe fn from_raw(raw: *mut bindings::dma_buf_attachment) -> Self {
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
    fn drop(&mut self) {
        // SAFETY: owned and live (type invariant); detached once, here, while the
        // buffer reference (dropped after this) keeps the buffer live.
        unsafe { bindings::dma_buf_detach(self.dmabuf.as_raw(), self.attach.as_ptr()) };
    }
}

// SAFETY: A mapping is a table pointer that may be unmapped from any thread
// holding the buffer's reservation lock (which `Attachment::unmap` requires).
unsafe impl Send for Mapping {}

/// An exporter: the callbacks of `struct dma_buf_ops` for buffers whose
/// private data is a `T`.
///
/// Map, unmap, pin and unpin are called by the dma-buf core with the buffer's
/// reservation lock held.
#[cfg(umem_exporter)]
pub(crate) trait Exporter: Send + Sync + Sized {
    /// Whether the exporter can move the buffer (implements pin/unpin);
    /// importers of a dynamic exporter get `move_notify`.
    const DYNAMIC: bool;

    /// A device attaches.
    fn attach(&self, _attach: &Attachment) -> Result {
        Ok(())
    }
    /// A device detaches.
    fn detach(&self, _attach: &Attachment) {}
    /// The importer needs the buffer to stay in place.
    fn pin(&self, _attach: &Attachment) -> Result {
        Ok(())
    }
    /// Undoes one [`Exporter::pin`].
    fn unpin(&self, _attach: &Attachment) {}
    /// Maps the buffer for the attachment's device.
    fn map(&self, attach: &Attachment, dir: DmaDirection) -> Result<ExportedTable>;
    /// Unmaps a table returned by [`Exporter::map`].
    fn unmap(&self, attach: &Attachment, table: ExportedTable);

    /// Whether `mmap` of the dma-buf is supported, with pages provided on
    /// fault by [`Exporter::fault`].
    const MMAP: bool = false;

    /// Provides page `index` of the buffer for a CPU mapping: calls
    /// `fault.install()` with the current backing store.
    fn fault(&self, _dmabuf: &DmaBuf, _index: usize, _fault: &mut Fault<'_>) -> Result {
        Err(EINVAL)
    }

    /// Userspace starts CPU access (`DMA_BUF_IOCTL_SYNC`).
    fn begin_cpu_access(&self, _dmabuf: &DmaBuf) -> Result {
        Ok(())
    }
}

/// A page fault in a CPU mapping of a dma-buf.
///
/// The exporter installs the page table entry itself, while it holds whatever
/// lock orders it against moving the buffer (and zapping CPU mappings), so a
/// mapping can never point to memory the buffer left.
///
/// # Invariants
///
/// `vmf` is the fault being handled, on a `VM_PFNMAP` VMA set up by the
/// exporter's `mmap`; `result` is what [`Fault::install`] returned, if called.
#[cfg(umem_exporter)]
pub(crate) struct Fault<'a> {
    vmf: *mut bindings::vm_fault,
    result: Option<bindings::vm_fault_t>,
    _p: PhantomData<&'a ()>,
}

#[cfg(umem_exporter)]
impl Fault<'_> {
    /// Maps page `index` of `pages` at the faulting address.
    ///
    /// The caller keeps `pages` as the buffer's memory until the mapping is
    /// zapped ([`DmaBuf::zap_cpu_mappings`]).
    pub(crate) fn install(&mut self, pages: &super::page::ChunkSet, index: usize) -> Result {
        if self.result.is_some() {
            return Err(EINVAL);
        }
        let page = pages.page_raw(index).ok_or(EINVAL)?;
        // SAFETY: the fault and its VMA are live; the VMA is `VM_PFNMAP` and
        // shared (checked in `mmap`); `page` is live memory of the buffer, which
        // the caller keeps until the entry is zapped.
        let r = unsafe {
            let vma = (*self.vmf).__bindgen_anon_1.vma;
            let address = (*self.vmf).__bindgen_anon_1.address;
            bindings::vmf_insert_pfn(vma, address, bindings::page_to_pfn(page))
        };
        self.result = Some(r);
        Ok(())
    }
}

/// The direction of a DMA mapping.
#[cfg(umem_exporter)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum DmaDirection {
    /// `DMA_BIDIRECTIONAL`
    Bidirectional,
    /// `DMA_TO_DEVICE`
    ToDevice,
    /// `DMA_FROM_DEVICE`
    FromDevice,
}

#[cfg(umem_exporter)]
impl DmaDirection {
    fn from_raw(dir: bindings::dma_data_direction) -> Option<Self> {
        match dir {
            bindings::dma_data_direction_DMA_BIDIRECTIONAL => Some(Self::Bidirectional),
            bindings::dma_data_direction_DMA_TO_DEVICE => Some(Self::ToDevice),
            bindings::dma_data_direction_DMA_FROM_DEVICE => Some(Self::FromDevice),
            _ => None,
        }
    }

    pub(crate) fn as_raw(self) -> bindings::dma_data_direction {
        match self {
            Self::Bidirectional => bindings::dma_data_direction_DMA_BIDIRECTIONAL,
            Self::ToDevice => bindings::dma_data_direction_DMA_TO_DEVICE,
            Self::FromDevice => bindings::dma_data_direction_DMA_FROM_DEVICE,
        }
    }
}

/// A table an exporter hands to the dma-buf core; see
/// [`super::scatterlist::PageTable`].
#[cfg(umem_exporter)]
pub(crate) type ExportedTable = KBox<super::scatterlist::PageTable>;

/// The `struct dma_buf_ops` of an [`Exporter`].
#[cfg(umem_exporter)]
pub(crate) struct ExporterOps<T: Exporter>(PhantomData<T>);

#[cfg(umem_exporter)]
impl<T: Exporter> ExporterOps<T> {
    const OPS: bindings::dma_buf_ops = bindings::dma_buf_ops {
        attach: Some(Self::attach),
        detach: Some(Self::detach),
        pin: if T::DYNAMIC { Some(Self::pin) } else { None },
        unpin: if T::DYNAMIC { Some(Self::unpin) } else { None },
        map_dma_buf: Some(Self::map),
        unmap_dma_buf: Some(Self::unmap),
        release: Some(Self::release),
        mmap: if T::MMAP { Some(Self::mmap) } else { None },
        begin_cpu_access: Some(Self::begin_cpu_access),
        // SAFETY: all-zero is a valid `dma_buf_ops` (the other callbacks unset).
        ..unsafe { core::mem::zeroed() }
    };

    /// # Safety
    ///
    /// `dmabuf` was exported by [`export`] for `T` and is live.
    unsafe fn data<'a>(dmabuf: *mut bindings::dma_buf) -> &'a T {
        // SAFETY: `priv` is the `Arc<T>` of `export`, live until `release`.
        unsafe { &*(*dmabuf).priv_.cast::<T>() }
    }

    /// # Safety
    ///
    /// Called by the dma-buf core only, for a live buffer (and attachment)
    /// exported by [`export`] for `T`.
    unsafe extern "C" fn attach(
        dmabuf: *mut bindings::dma_buf,
        attach: *mut bindings::dma_buf_attachment,
    ) -> kernel::ffi::c_int {
        // SAFETY: called by the core for a buffer of ours and a live attachment.
        let (data, attach) = unsafe { (Self::data(dmabuf), Attachment::from_raw(attach)) };
        match data.attach(attach) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the dma-buf core only, for a live buffer (and attachment)
    /// exported by [`export`] for `T`.
    unsafe extern "C" fn detach(
        dmabuf: *mut bindings::dma_buf,
        attach: *mut bindings::dma_buf_attachment,
    ) {
        // SAFETY: as in `attach`.
        let (data, attach) = unsafe { (Self::data(dmabuf), Attachment::from_raw(attach)) };
        data.detach(attach)
    }

    /// # Safety
    ///
    /// Called by the dma-buf core only, for a live buffer (and attachment)
    /// exported by [`export`] for `T`.
    unsafe extern "C" fn pin(attach: *mut bindings::dma_buf_attachment) -> kernel::ffi::c_int {
        // SAFETY: called for a live attachment of one of our buffers.
        let attach = unsafe { Attachment::from_raw(attach) };
        // SAFETY: as above.
        let data = unsafe { Self::data(attach.dmabuf().as_raw()) };
        match data.pin(attach) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the dma-buf core only, for a live buffer (and attachment)
    /// exported by [`export`] for `T`.
    unsafe extern "C" fn unpin(attach: *mut bindings::dma_buf_attachment) {
        // SAFETY: called for a live attachment of one of our buffers.
        let attach = unsafe { Attachment::from_raw(attach) };
        // SAFETY: as above.
        let data = unsafe { Self::data(attach.dmabuf().as_raw()) };
        data.unpin(attach)
    }

    /// # Safety
    ///
    /// Called by the dma-buf core only, for a live buffer (and attachment)
    /// exported by [`export`] for `T`.
    unsafe extern "C" fn map(
        attach: *mut bindings::dma_buf_attachment,
        dir: bindings::dma_data_direction,
    ) -> *mut bindings::sg_table {
        // SAFETY: called for a live attachment of one of our buffers.
        let attach = unsafe { Attachment::from_raw(attach) };
        // SAFETY: as above.
        let data = unsafe { Self::data(attach.dmabuf().as_raw()) };
        let Some(dir) = DmaDirection::from_raw(dir) else {
            return EINVAL.to_ptr();
        };
        match data.map(attach, dir) {
            Ok(table) => super::scatterlist::PageTable::into_raw(table),
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// Called by the dma-buf core only, for a live buffer (and attachment)
    /// exported by [`export`] for `T`.
    unsafe extern "C" fn unmap(
        attach: *mut bindings::dma_buf_attachment,
        sgt: *mut bindings::sg_table,
        _dir: bindings::dma_data_direction,
    ) {
        // SAFETY: called for a live attachment of one of our buffers.
        let attach = unsafe { Attachment::from_raw(attach) };
        // SAFETY: as above.
        let data = unsafe { Self::data(attach.dmabuf().as_raw()) };
        // SAFETY: the core gives back a table that our `map` returned, once.
        let table = unsafe { super::scatterlist::PageTable::from_raw(sgt) };
        data.unmap(attach, table)
    }

    const VM_OPS: bindings::vm_operations_struct = bindings::vm_operations_struct {
        fault: Some(Self::fault),
        // SAFETY: all-zero is a valid `vm_operations_struct`.
        ..unsafe { core::mem::zeroed() }
    };

    /// # Safety
    ///
    /// Called by the dma-buf core only, for a live buffer (and attachment)
    /// exported by [`export`] for `T`.
    unsafe extern "C" fn mmap(
        dmabuf: *mut bindings::dma_buf,
        vma: *mut bindings::vm_area_struct,
    ) -> kernel::ffi::c_int {
        // CAST: the flag values fit `vm_flags_t`.
        let shared = (bindings::VM_SHARED | bindings::VM_MAYSHARE) as bindings::vm_flags_t;
        // SAFETY: the core calls `mmap` with the mmap lock held for writing, for a
        // VMA whose `vm_file` is the dma-buf's file (so the buffer, and the data in
        // `priv`, outlive the VMA) and whose range it checked against the size.
        unsafe {
            if (*vma).__bindgen_anon_2.vm_flags & shared == 0 {
                return EINVAL.to_errno();
            }
            let _ = dmabuf;
            (*vma).vm_ops = &Self::VM_OPS;
            // CAST: as above.
            let flags = bindings::VM_PFNMAP | bindings::VM_DONTEXPAND | bindings::VM_DONTDUMP;
            bindings::vm_flags_set(vma, flags as bindings::vm_flags_t);
        }
        0
    }

    /// # Safety
    ///
    /// Called by the fault core only, for a VMA set up by [`Self::mmap`].
    unsafe extern "C" fn fault(vmf: *mut bindings::vm_fault) -> bindings::vm_fault_t {
        // SAFETY: the fault core passes a live fault on a VMA set up by `mmap`,
        // whose file is the dma-buf's (`private_data` is the `struct dma_buf`).
        let (dmabuf, index) = unsafe {
            let vma = (*vmf).__bindgen_anon_1.vma;
            let dmabuf = (*(*vma).vm_file).private_data.cast::<bindings::dma_buf>();
            (DmaBuf::from_raw(dmabuf), (*vmf).__bindgen_anon_1.pgoff)
        };
        // SAFETY: a buffer of ours (only our `mmap` installs this handler).
        let data = unsafe { Self::data(dmabuf.as_raw()) };
        // INVARIANT: nothing installed yet.
        let mut fault = Fault {
            vmf,
            result: None,
            _p: PhantomData,
        };
        match (data.fault(dmabuf, index, &mut fault), fault.result) {
            (Ok(()), Some(r)) => r,
            _ => bindings::vm_fault_reason_VM_FAULT_SIGBUS,
        }
    }

    /// # Safety
    ///
    /// Called by the dma-buf core only, for a live buffer (and attachment)
    /// exported by [`export`] for `T`.
    unsafe extern "C" fn begin_cpu_access(
        dmabuf: *mut bindings::dma_buf,
        _dir: bindings::dma_data_direction,
    ) -> kernel::ffi::c_int {
        // SAFETY: called by the core for a live buffer of ours.
        let (buf, data) = unsafe { (DmaBuf::from_raw(dmabuf), Self::data(dmabuf)) };
        match data.begin_cpu_access(buf) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the dma-buf core only, for a live buffer (and attachment)
    /// exported by [`export`] for `T`.
    unsafe extern "C" fn release(dmabuf: *mut bindings::dma_buf) {
        // SAFETY: the last reference is gone; `priv` is the `Arc<T>` from `export`,
        // given back once, here.
        drop(unsafe { Arc::from_raw((*dmabuf).priv_.cast::<T>()) });
    }
}

/// Exports a buffer of `size` bytes whose callbacks are `T`'s, owned by
/// `module` (which cannot be unloaded while the buffer lives).
#[cfg(umem_exporter)]
pub(crate) fn export<T: Exporter>(
    module: &'static ThisModule,
    name: &'static kernel::str::CStr,
    data: Arc<T>,
    size: usize,
) -> Result<ARef<DmaBuf>> {
    let priv_ = Arc::into_raw(data);
    // SAFETY: all-zero is a valid initial `dma_buf_export_info`; the fields the
    // core needs are set below.
    let mut info: bindings::dma_buf_export_info = unsafe { core::mem::zeroed() };
    info.exp_name = name.as_char_ptr();
    info.owner = module.as_ptr();
    info.ops = &ExporterOps::<T>::OPS;
    info.size = size;
    info.flags = bindings::O_RDWR as i32;
    info.priv_ = priv_.cast_mut().cast();
    // SAFETY: `info` is complete; on success the buffer owns `priv_` (given back
    // in `release`).
    match from_err_ptr(unsafe { bindings::dma_buf_export(&info) }) {
        // SAFETY: a new buffer with one reference, which the `ARef` takes.
        Ok(ptr) => Ok(unsafe { ARef::from_raw(NonNull::new_unchecked(ptr.cast::<DmaBuf>())) }),
        Err(e) => {
            // SAFETY: the export failed, so `priv_` is still ours.
            drop(unsafe { Arc::from_raw(priv_) });
            Err(e)
        }
    }
}

/// A dynamic attachment of a Rust [`Importer`] together with its private
/// data, which it keeps at a fixed address for as long as it is attached.
///
/// # Invariants
///
/// `attach` was made with `ImporterOps::<T>::table()` and `importer_priv`
/// pointing to `*data`. Drop order: `attach` (detached) before `data` (freed).
#[cfg(umem_exporter)]
pub(crate) struct OwnedImport<T: Importer> {
    attach: DynAttachment,
    data: Pin<KBox<T::Priv>>,
}

#[cfg(umem_exporter)]
impl<T: Importer> OwnedImport<T> {
    /// Attaches `dev` to `dmabuf` as importer `T` with private data `data`.
    pub(crate) fn new(
        dmabuf: ARef<DmaBuf>,
        dev: &Device,
        data: impl PinInit<T::Priv, Error>,
    ) -> Result<Self> {
        let data = KBox::pin_init(data, GFP_KERNEL)?;
        // SAFETY: `data` is pinned in its box and outlives the attachment (field
        // order); the ops are `T`'s, whose `Priv` is the type of `data`.
        let attach = unsafe { DynAttachment::new(dmabuf, dev, ImporterOps::<T>::table(), &*data)? };
        Ok(Self { attach, data })
    }

    /// The attachment.
    pub(crate) fn attachment(&self) -> &Attachment {
        // SAFETY: live while `self.attach` is (its invariant).
        unsafe { Attachment::from_raw(self.attach.attach.as_ptr()) }
    }

    /// The importer's private data.
    pub(crate) fn data(&self) -> &T::Priv {
        &self.data
    }
}

#[cfg(umem_exporter)]
extern "C" {
    // `include/linux/file.h` and `include/linux/fdtable.h`, not in the bindings.
    fn flush_delayed_fput();
    fn close_fd(fd: kernel::ffi::c_uint) -> kernel::ffi::c_int;
}

/// Runs the file releases that kernel threads deferred (`flush_delayed_fput`),
/// so that a dma-buf whose last reference a kernel thread dropped is released
/// when this returns.
#[cfg(umem_exporter)]
pub(crate) fn flush_delayed_releases() {
    // SAFETY: `flush_delayed_fput` has no preconditions; it may sleep, as the
    // callers (process or kthread context) may.
    unsafe { flush_delayed_fput() };
}
