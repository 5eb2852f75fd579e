// SPDX-License-Identifier: GPL-2.0

//! dma-buf exporting: buffers whose callbacks are Rust code.
//!
//! C header: [`include/linux/dma-buf.h`](srctree/include/linux/dma-buf.h)
//!
//! Locking rules of the dma-buf core, as types: the [`Exporter`] callbacks
//! that the core calls with the buffer's reservation lock held (map, unmap,
//! pin, unpin) are documented so; [`BufGuard::move_notify`] needs the lock,
//! which only [`DmaBuf::lock`] makes.

use super::dma_resv::{ResvGuard, ResvLocked};
use super::{Attachment, DmaBuf, DynAttachment, Importer, ImporterOps};
use crate::bindings;
use crate::device::Device;
use crate::dma::DataDirection;
use crate::error::from_err_ptr;
use crate::prelude::*;
use crate::sync::Arc;
use crate::types::{ARef, AlwaysRefCounted};
use crate::ThisModule;
use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr::NonNull;

/// Holds the reservation lock of a buffer ([`DmaBuf::lock`]); unlocks it when
/// dropped. Dereferences to the lock proof, for fences.
///
/// # Invariants
///
/// `guard` holds the lock of `dmabuf`'s own reservation object.
#[must_use = "the reservation lock is released when the guard is dropped"]
pub struct BufGuard<'a> {
    dmabuf: &'a DmaBuf,
    guard: ResvGuard<'a>,
}

impl<'a> Deref for BufGuard<'a> {
    type Target = ResvLocked<'a>;

    fn deref(&self) -> &ResvLocked<'a> {
        &self.guard
    }
}

impl BufGuard<'_> {
    /// Tells every dynamic importer that the buffer is about to move
    /// (`dma_buf_move_notify`); they drop their mappings before this returns.
    pub fn move_notify(&self) {
        // SAFETY: the buffer is live and its reservation lock is held (type
        // invariant).
        unsafe { bindings::dma_buf_move_notify(self.dmabuf.as_raw()) };
    }
}

impl DmaBuf {
    /// Takes the buffer's reservation lock.
    pub fn lock(&self) -> BufGuard<'_> {
        // INVARIANT: the lock of this buffer's own object.
        BufGuard {
            dmabuf: self,
            guard: self.resv().lock(),
        }
    }

    /// Zaps every CPU mapping of the buffer (`mmap`s of the dma-buf file), so
    /// the next access faults and sees the current backing store.
    pub fn zap_cpu_mappings(&self) {
        // SAFETY: the buffer and its file are live; `unmap_mapping_range` may be
        // called on any address space at any time.
        unsafe {
            let file = (*self.as_raw()).file;
            bindings::unmap_mapping_range((*file).f_mapping, 0, 0, 1);
        }
    }

    /// Installs a new file descriptor for the buffer in the current process
    /// (`O_CLOEXEC`), holding a reference of its own.
    pub fn new_fd(&self) -> Result<i32> {
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
    pub fn close_fd(fd: i32) {
        // CAST: a descriptor from `new_fd` is non-negative.
        // SAFETY: `close_fd` accepts any descriptor number of the current process.
        let _ = unsafe { bindings::close_fd(fd as u32) };
    }

    /// The exporter's private data, if this buffer was exported by
    /// [`export`] with exporter type `T`.
    pub fn exporter<T: Exporter>(&self) -> Option<&T> {
        // SAFETY: the buffer is live; `ops` and `priv` are set at export time.
        let (ops, priv_) = unsafe { ((*self.as_raw()).ops, (*self.as_raw()).priv_) };
        if !core::ptr::eq(ops, &ExporterOps::<T>::OPS) {
            return None;
        }
        // SAFETY: buffers with these ops were exported by `export::<T>`, whose
        // `priv` is an `Arc<T>` released only when the buffer is.
        Some(unsafe { &*priv_.cast::<T>() })
    }

    /// `dma_buf_is_dynamic()`: whether the exporter can move the buffer (its
    /// ops have `pin`).
    pub fn is_dynamic(&self) -> bool {
        // SAFETY: the buffer is live; `ops` is set at export time to a static
        // table.
        unsafe { (*(*self.as_raw()).ops).pin.is_some() }
    }
}

impl Attachment {
    /// The importing device.
    pub fn dev(&self) -> &Device {
        // SAFETY: the attachment is live and holds its device; `dev` is never null
        // (`dma_buf_dynamic_attach` refuses a null device).
        unsafe { Device::as_ref((*self.as_raw()).dev) }
    }
}

/// An exporter: the callbacks of `struct dma_buf_ops` for buffers whose
/// private data is a `T`.
///
/// Map, unmap, pin and unpin are called by the dma-buf core with the buffer's
/// reservation lock held. The optional callbacks are found by `#[vtable]`:
/// an exporter that implements [`Exporter::pin`] and [`Exporter::unpin`] is
/// dynamic (it can move the buffer; its importers get `move_notify`); one
/// that implements [`Exporter::fault`] supports `mmap` of the dma-buf.
#[vtable]
pub trait Exporter: Send + Sync + Sized {
    /// The tables [`Exporter::map`] returns.
    type Table: ExportedTable;

    /// A device attaches.
    fn attach(&self, _attach: &Attachment) -> Result {
        Ok(())
    }
    /// A device detaches.
    fn detach(&self, _attach: &Attachment) {}
    /// The importer needs the buffer to stay in place (optional; with
    /// [`Exporter::unpin`]).
    fn pin(&self, _attach: &Attachment) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }
    /// Undoes one [`Exporter::pin`] (optional; with [`Exporter::pin`]).
    fn unpin(&self, _attach: &Attachment) {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }
    /// Maps the buffer for the attachment's device.
    fn map(&self, attach: &Attachment, dir: DataDirection) -> Result<KBox<Self::Table>>;
    /// Unmaps a table returned by [`Exporter::map`].
    fn unmap(&self, attach: &Attachment, table: KBox<Self::Table>);

    /// Provides page `index` of the buffer for a CPU mapping: calls
    /// [`Fault::insert_page`] with the current backing store (optional:
    /// without it, `mmap` of the dma-buf fails).
    fn fault(&self, _dmabuf: &DmaBuf, _index: usize, _fault: &mut Fault<'_>) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
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
pub struct Fault<'a> {
    vmf: *mut bindings::vm_fault,
    result: Option<bindings::vm_fault_t>,
    _p: PhantomData<&'a ()>,
}

impl Fault<'_> {
    /// Maps `page` at the faulting address.
    ///
    /// At most once per fault: a second call fails with `EINVAL`.
    ///
    /// # Safety
    ///
    /// `page` is live memory of the buffer, page `index` of the fault (see
    /// [`Exporter::fault`]), and the caller keeps it as the buffer's memory
    /// until the CPU mappings are zapped ([`DmaBuf::zap_cpu_mappings`]).
    pub unsafe fn insert_page(&mut self, page: *mut bindings::page) -> Result {
        if self.result.is_some() {
            return Err(EINVAL);
        }
        // SAFETY: the fault and its VMA are live; the VMA is `VM_PFNMAP` and
        // shared (checked in `mmap`); `page` is live memory of the buffer, which
        // the caller keeps until the entry is zapped (the caller's contract).
        let r = unsafe {
            let vma = (*self.vmf).__bindgen_anon_1.vma;
            let address = (*self.vmf).__bindgen_anon_1.address;
            bindings::vmf_insert_pfn(vma, address, bindings::page_to_pfn(page))
        };
        self.result = Some(r);
        Ok(())
    }
}

/// A table an exporter hands to the dma-buf core from [`Exporter::map`]:
/// a `struct sg_table` mapped for the attachment's device, followed by
/// whatever the exporter keeps with it; the core gives it back to
/// [`Exporter::unmap`].
///
/// # Safety
///
/// The type is `repr(C)` and starts with a `struct sg_table` (for example an
/// [`OwnedSGTable`](crate::scatterlist::OwnedSGTable) as its first field), so
/// the address of a value is that of its table; while the value exists the
/// table is mapped for the device of the attachment it was made for.
pub unsafe trait ExportedTable: Send {}

/// The `struct dma_buf_ops` of an [`Exporter`].
pub struct ExporterOps<T: Exporter>(PhantomData<T>);

impl<T: Exporter> ExporterOps<T> {
    /// Pin and unpin come together: one without the other stops the build.
    const DYNAMIC: bool = {
        assert!(
            T::HAS_PIN == T::HAS_UNPIN,
            "an exporter implements both pin and unpin, or neither"
        );
        T::HAS_PIN
    };

    const OPS: bindings::dma_buf_ops = bindings::dma_buf_ops {
        attach: Some(Self::attach),
        detach: Some(Self::detach),
        pin: if Self::DYNAMIC { Some(Self::pin) } else { None },
        unpin: if Self::DYNAMIC {
            Some(Self::unpin)
        } else {
            None
        },
        map_dma_buf: Some(Self::map),
        unmap_dma_buf: Some(Self::unmap),
        release: Some(Self::release),
        mmap: if T::HAS_FAULT { Some(Self::mmap) } else { None },
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
    ) -> crate::ffi::c_int {
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
    unsafe extern "C" fn pin(attach: *mut bindings::dma_buf_attachment) -> crate::ffi::c_int {
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
        let Some(dir) = DataDirection::from_raw(dir) else {
            return EINVAL.to_ptr();
        };
        match data.map(attach, dir) {
            Ok(table) => KBox::into_raw(table).cast(),
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
        // SAFETY: the core gives back, once, a table that our `map` returned:
        // the address of a `KBox<T::Table>`, whose table is at its start
        // (`ExportedTable`).
        let table = unsafe { KBox::from_raw(sgt.cast::<T::Table>()) };
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
    ) -> crate::ffi::c_int {
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
    ) -> crate::ffi::c_int {
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
pub fn export<T: Exporter>(
    module: &'static ThisModule,
    name: &'static crate::str::CStr,
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
pub struct OwnedImport<T: Importer> {
    attach: DynAttachment,
    data: Pin<KBox<T::Priv>>,
}

impl<T: Importer> OwnedImport<T> {
    /// Attaches `dev` to `dmabuf` as importer `T` with private data `data`.
    pub fn new(
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
    pub fn attachment(&self) -> &Attachment {
        // SAFETY: live while `self.attach` is (its invariant).
        unsafe { Attachment::from_raw(self.attach.attach.as_ptr()) }
    }

    /// The importer's private data.
    pub fn data(&self) -> &T::Priv {
        &self.data
    }
}

/// Runs the file releases that kernel threads deferred (`flush_delayed_fput`),
/// so that a dma-buf whose last reference a kernel thread dropped is released
/// when this returns.
pub fn flush_delayed_releases() {
    // SAFETY: `flush_delayed_fput` has no preconditions; it may sleep, as the
    // callers (process or kthread context) may.
    unsafe { bindings::flush_delayed_fput() };
}
