// SPDX-License-Identifier: GPL-2.0

//! The DMA side of scatter-gather tables.
//!
//! C header: [`include/linux/scatterlist.h`](srctree/include/linux/scatterlist.h)
//!
//! An importer of a dma-buf sees a table mapped by the exporter. It may read the
//! DMA address and length of each mapped entry and nothing else: the page link
//! of an exporter's entry is not the importer's to follow (`CONFIG_DMABUF_DEBUG`
//! mangles it to catch that), so this module has no accessor for it.

use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::bindings;
use kernel::prelude::*;
#[cfg(umem_exporter)]
use kernel::sync::Arc;
use kernel::types::Opaque;

#[cfg(umem_exporter)]
use super::device::Device;
#[cfg(umem_exporter)]
use super::dma_buf_export::DmaDirection;
#[cfg(umem_exporter)]
use super::page::ChunkSet;
#[cfg(umem_exporter)]
use kernel::page::PAGE_SIZE;
#[cfg(umem_exporter)]
use kernel::types::ARef;

/// One entry of a mapped table, seen through its DMA fields only.
///
/// # Invariants
///
/// The wrapped entry belongs to a table that stays mapped while the reference lives.
#[repr(transparent)]
pub(crate) struct SgEntry(Opaque<bindings::scatterlist>);

impl SgEntry {
    /// # Safety
    ///
    /// `ptr` is a valid entry of a table that stays mapped for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::scatterlist) -> &'a Self {
        // SAFETY: `repr(transparent)` over the C struct; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn as_raw(&self) -> *mut bindings::scatterlist {
        self.0.get()
    }

    // The fields `sg_dma_address()` and `sg_dma_len()` name, read and written
    // directly rather than through the `rust_helper_` functions: those are
    // calls the C macros do not make, once per entry of every table walked
    // (measured: 12 ns of an entry's 82 in `make bench`).

    /// The bus address of this entry (`sg_dma_address`).
    pub(crate) fn dma_address(&self) -> u64 {
        // SAFETY: the entry is valid by the type invariant.
        unsafe { (*self.as_raw()).dma_address }
    }

    /// The DMA length of this entry (`sg_dma_len`).
    pub(crate) fn dma_len(&self) -> u32 {
        // SAFETY: the entry is valid by the type invariant.
        #[cfg(CONFIG_NEED_SG_DMA_LENGTH)]
        unsafe {
            (*self.as_raw()).dma_length
        }
        // SAFETY: as above; without a separate DMA length, `length` is it.
        #[cfg(not(CONFIG_NEED_SG_DMA_LENGTH))]
        unsafe {
            (*self.as_raw()).length
        }
    }

    /// Changes the DMA fields. Private: only [`DmaWindow`] (which undoes its
    /// changes) and tables owned by this crate write them.
    fn set_dma(&self, address: u64, len: u32) {
        let sg = self.as_raw();
        // SAFETY: the entry is valid by the type invariant; the fields are plain
        // integers that the exporter does not read while the table is mapped.
        unsafe {
            (*sg).dma_address = address;
            #[cfg(CONFIG_NEED_SG_DMA_LENGTH)]
            {
                (*sg).dma_length = len;
            }
            #[cfg(not(CONFIG_NEED_SG_DMA_LENGTH))]
            {
                (*sg).length = len;
            }
        }
    }
}

/// A borrowed `struct sg_table` whose DMA entries are mapped.
///
/// # Invariants
///
/// The wrapped table is valid and its first `nents` entries carry DMA addresses
/// for as long as the reference lives.
#[repr(transparent)]
pub(crate) struct SgTable(Opaque<bindings::sg_table>);

impl SgTable {
    /// Creates a reference from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` is a mapped table that stays mapped, and is not freed, for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::sg_table) -> &'a Self {
        // SAFETY: `repr(transparent)` over the C struct; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the raw pointer to the C table.
    pub(crate) fn as_raw(&self) -> *mut bindings::sg_table {
        self.0.get()
    }

    /// Number of mapped DMA entries.
    pub(crate) fn nents(&self) -> u32 {
        // SAFETY: the table is valid by the type invariant.
        unsafe { (*self.as_raw()).nents }
    }

    /// Iterates over the mapped DMA entries, like `for_each_sgtable_dma_sg`.
    pub(crate) fn dma_entries(&self) -> DmaEntries<'_> {
        // SAFETY: the table is valid by the type invariant.
        let first = unsafe { (*self.as_raw()).sgl };
        DmaEntries {
            next: first,
            left: self.nents(),
            _table: PhantomData,
        }
    }

    /// Trims the table in place to the byte range `[start, end)` of the buffer,
    /// exactly as `ib_umem_dmabuf_map_pages()` does: the first overlapping
    /// entry is advanced to `start`, the last one shortened to end at `end`.
    ///
    /// The returned window must be given back to [`DmaWindow::restore`] before
    /// the table is unmapped, so that the exporter gets its own table back.
    #[cfg(umem_importer)]
    #[inline]
    pub(crate) fn trim(&self, start: u64, end: u64) -> DmaWindow {
        let mut window = DmaWindow {
            table: self.as_raw(),
            first: None,
            last: None,
            nents: 0,
        };
        // Unsigned arithmetic wraps as in C; the conditions keep it in range.
        let mut cur: u64 = 0;
        for sg in self.dma_entries() {
            let mut len = u64::from(sg.dma_len());
            if start < cur.wrapping_add(len) && cur < end {
                window.nents += 1;
            }
            if cur <= start && start < cur.wrapping_add(len) {
                let offset = start - cur;
                window.first = Some((NonNull::from(sg), offset));
                // CAST: `offset < len <= u32::MAX`, the truncation is lossless.
                let new_len = sg.dma_len().wrapping_sub(offset as u32);
                sg.set_dma(sg.dma_address().wrapping_add(offset), new_len);
                len = u64::from(new_len);
                cur += offset;
            }
            if cur < end && end <= cur.wrapping_add(len) {
                let trim = cur.wrapping_add(len) - end;
                window.last = Some((NonNull::from(sg), trim));
                // CAST: `trim <= len <= u32::MAX`.
                sg.set_dma(sg.dma_address(), sg.dma_len().wrapping_sub(trim as u32));
                break;
            }
            cur = cur.wrapping_add(len);
        }
        window
    }
}

/// Iterator over the mapped entries of an [`SgTable`].
pub(crate) struct DmaEntries<'a> {
    next: *mut bindings::scatterlist,
    left: u32,
    _table: PhantomData<&'a SgTable>,
}

impl<'a> Iterator for DmaEntries<'a> {
    type Item = &'a SgEntry;

    fn next(&mut self) -> Option<&'a SgEntry> {
        if self.left == 0 || self.next.is_null() {
            return None;
        }
        self.left -= 1;
        let cur = self.next;
        // SAFETY: `cur` is one of the first `nents` entries of a table that stays
        // mapped for `'a` (invariant of `SgTable`); `sg_next` follows chain links.
        self.next = unsafe { bindings::sg_next(cur) };
        // SAFETY: as above.
        Some(unsafe { SgEntry::from_raw(cur) })
    }
}

/// The changes [`SgTable::trim`] made to a table, to be undone before unmap.
///
/// # Invariants
///
/// `first` and `last`, when set, are entries of the table at `table`; the first
/// one's DMA address was advanced and its length shortened by its offset, the
/// last one's length shortened by its trim, and nothing else was changed.
pub(crate) struct DmaWindow {
    table: *mut bindings::sg_table,
    first: Option<(NonNull<SgEntry>, u64)>,
    last: Option<(NonNull<SgEntry>, u64)>,
    #[cfg(umem_importer)]
    nents: u32,
}

impl DmaWindow {
    /// Number of entries that overlap the window.
    #[cfg(umem_importer)]
    pub(crate) fn nents(&self) -> u32 {
        self.nents
    }

    /// The first overlapping entry (null if none), for `sgt_append.sgt.sgl`.
    #[cfg(umem_importer)]
    pub(crate) fn first_raw(&self) -> *mut bindings::scatterlist {
        self.first
            .map_or(core::ptr::null_mut(), |(sg, _)| sg.as_ptr().cast())
    }

    /// The last overlapping entry (null if the window was not closed).
    #[cfg(umem_importer)]
    pub(crate) fn last_raw(&self) -> *mut bindings::scatterlist {
        self.last
            .map_or(core::ptr::null_mut(), |(sg, _)| sg.as_ptr().cast())
    }

    /// Bytes skipped at the start of the first entry.
    #[cfg(umem_importer)]
    pub(crate) fn first_offset(&self) -> u64 {
        self.first.map_or(0, |(_, off)| off)
    }

    /// Bytes cut from the end of the last entry.
    #[cfg(umem_importer)]
    pub(crate) fn last_trim(&self) -> u64 {
        self.last.map_or(0, |(_, trim)| trim)
    }

    /// Puts the trimmed entries back as the exporter mapped them.
    ///
    /// Fails with `EINVAL`, changing nothing, if `table` is not the table the
    /// window was made on.
    pub(crate) fn restore(self, table: &SgTable) -> Result {
        if table.as_raw() != self.table {
            return Err(EINVAL);
        }
        if let Some((sg, offset)) = self.first {
            // SAFETY: by the type invariant `sg` is an entry of `table`, which is
            // still mapped because the caller holds a reference to it.
            let sg = unsafe { sg.as_ref() };
            // CAST: `offset` was below the entry's `u32` length.
            let len = sg.dma_len().wrapping_add(offset as u32);
            sg.set_dma(sg.dma_address().wrapping_sub(offset), len);
        }
        if let Some((sg, trim)) = self.last {
            // SAFETY: as above.
            let sg = unsafe { sg.as_ref() };
            // CAST: `trim` was at most the entry's `u32` length.
            sg.set_dma(sg.dma_address(), sg.dma_len().wrapping_add(trim as u32));
        }
        Ok(())
    }
}

/// A [`DmaWindow`] as `struct ib_umem_dmabuf` stores it (`first_sg`,
/// `first_sg_offset`, `last_sg`, `last_sg_trim`, and `nents` of the umem's
/// table).
#[cfg(umem_importer)]
pub(crate) struct WindowParts {
    pub(crate) first: *mut bindings::scatterlist,
    pub(crate) first_offset: u64,
    pub(crate) last: *mut bindings::scatterlist,
    pub(crate) last_trim: u64,
    pub(crate) nents: u32,
}

impl DmaWindow {
    /// Splits into the table it was made on and its parts.
    #[cfg(umem_importer)]
    pub(crate) fn into_parts(self) -> (*mut bindings::sg_table, WindowParts) {
        let parts = WindowParts {
            first: self.first_raw(),
            first_offset: self.first_offset(),
            last: self.last_raw(),
            last_trim: self.last_trim(),
            nents: self.nents,
        };
        (self.table, parts)
    }

    /// Reassembles a window split by [`DmaWindow::into_parts`].
    ///
    /// # Safety
    ///
    /// `table` and `parts` come from one `into_parts` call, unchanged, and the
    /// window was not reassembled since.
    #[cfg(umem_importer)]
    pub(crate) unsafe fn from_parts(table: *mut bindings::sg_table, parts: WindowParts) -> Self {
        // INVARIANT: the parts describe the changes made by `trim` on `table`.
        Self {
            table,
            first: NonNull::new(parts.first.cast::<SgEntry>()).map(|sg| (sg, parts.first_offset)),
            last: NonNull::new(parts.last.cast::<SgEntry>()).map(|sg| (sg, parts.last_trim)),
            nents: parts.nents,
        }
    }
}

/// A `struct sg_table` allocated by this crate (`sg_alloc_table`), freed on
/// drop: an exporter's table, or a test's with settable DMA entries.
///
/// # Invariants
///
/// `table` was set up by a successful `sg_alloc_table` and is freed once, on
/// drop. (The C struct holds no pointer to itself, so the value may move.)
#[repr(transparent)]
pub(crate) struct OwnedSgTable {
    table: Opaque<bindings::sg_table>,
}

impl OwnedSgTable {
    /// Allocates a table of `n` zeroed entries, all counted as mapped.
    pub(crate) fn new(n: u32) -> Result<Self> {
        let table = Opaque::<bindings::sg_table>::uninit();
        // SAFETY: `table.get()` is valid for writes; `sg_alloc_table` initialises it
        // (on failure it frees what it allocated and leaves nothing to free, and
        // no `OwnedSgTable` is made).
        kernel::error::to_result(unsafe {
            bindings::sg_alloc_table(table.get(), n, bindings::GFP_KERNEL)
        })?;
        // INVARIANT: allocated just above.
        Ok(Self { table })
    }

    #[inline]
    fn as_raw(&self) -> *mut bindings::sg_table {
        self.table.get()
    }

    /// Sets the DMA address and length of entry `i`.
    #[cfg(umem_importer)]
    pub(crate) fn set(&self, i: u32, address: u64, len: u32) -> Result {
        let sg = self.dma_entries().nth(i as usize).ok_or(EINVAL)?;
        sg.set_dma(address, len);
        Ok(())
    }
}

#[cfg(umem_importer)]
impl core::ops::Deref for OwnedSgTable {
    type Target = SgTable;

    fn deref(&self) -> &SgTable {
        // SAFETY: the table is allocated and lives as long as `self` (type invariant);
        // its entries are plain memory with DMA fields this crate set.
        unsafe { SgTable::from_raw(self.as_raw()) }
    }
}

impl Drop for OwnedSgTable {
    fn drop(&mut self) {
        // SAFETY: allocated by `sg_alloc_table` (type invariant), freed once.
        unsafe { bindings::sg_free_table(self.as_raw()) };
    }
}

/// Attributes of an exporter's mappings: like DRM PRIME (`drm_gem_map_dma_buf`),
/// no CPU cache maintenance at map and unmap time. Several attachments map the
/// same pages at once (two MRs on one buffer); cache maintenance is the CPU
/// access path's business, and without this attribute DMA-API debugging rightly
/// refuses overlapping streaming mappings that each claim to own the cachelines.
#[cfg(umem_exporter)]
// CAST: the attribute bits are small constants; bindgen gives `unsigned long` as `usize`.
const MAP_ATTRS: usize = bindings::DMA_ATTR_SKIP_CPU_SYNC as usize;

/// A table of a [`ChunkSet`]'s pages, built by an exporter and DMA-mapped for
/// one device: one entry per chunk, or per piece of a chunk longer than the
/// device's maximum segment size.
///
/// # Invariants
///
/// `table` is first, so the value's address is the `struct sg_table`'s. It
/// has one entry per segment of `pages`, set to that segment, and is mapped
/// with `dma_map_sgtable(dev, dir, MAP_ATTRS)`; `drop` unmaps it, then the
/// fields go in their order, which is the rest of the undo order: the table
/// is freed, the device reference put, the pages released.
#[cfg(umem_exporter)]
#[repr(C)]
pub(crate) struct PageTable {
    table: OwnedSgTable,
    dev: ARef<Device>,
    dir: DmaDirection,
    pages: Arc<ChunkSet>,
}

// SAFETY: The table is plain memory; it may be unmapped and freed on any thread
// (it holds a reference on its device).
#[cfg(umem_exporter)]
unsafe impl Send for PageTable {}

#[cfg(umem_exporter)]
impl PageTable {
    /// Builds the table of `pages` and maps it for `dev`.
    pub(crate) fn new(pages: Arc<ChunkSet>, dev: &Device, dir: DmaDirection) -> Result<KBox<Self>> {
        // Whole pages, at most the device's segment size (at least one page).
        let seg = core::cmp::max(
            dev.max_segment_size() as usize & !(PAGE_SIZE - 1),
            PAGE_SIZE,
        );
        let n: usize = pages.chunks().iter().map(|c| c.len().div_ceil(seg)).sum();
        let table = OwnedSgTable::new(u32::try_from(n).map_err(|_| EINVAL)?)?;
        let sgt = table.as_raw();
        // SAFETY: the table was just allocated with `n` entries.
        let mut sg = unsafe { (*sgt).sgl };
        for chunk in pages.chunks() {
            let mut off = 0;
            while off < chunk.len() {
                let len = core::cmp::min(seg, chunk.len() - off);
                let page = chunk.page_raw(off / PAGE_SIZE).ok_or(EINVAL)?;
                // SAFETY: `sg` is one of the `n` entries (one per segment, counted
                // above); the pages are in a chunk that `pages` keeps alive.
                unsafe {
                    // CAST: `len` is at most a chunk, 2 MiB.
                    bindings::sg_set_page(sg, page, len as u32, 0);
                    sg = bindings::sg_next(sg);
                }
                off += len;
            }
        }
        // SAFETY: the table describes live pages; the device is live. On
        // failure nothing is mapped and `table` is freed on return.
        kernel::error::to_result(unsafe {
            bindings::dma_map_sgtable(dev.as_raw(), sgt, dir.as_raw(), MAP_ATTRS)
        })?;
        // INVARIANT: mapped just above; from here `drop` unmaps (also if the
        // allocation below fails and the value is dropped).
        let table = Self {
            table,
            dev: dev.into(),
            dir,
            pages,
        };
        Ok(KBox::new(table, GFP_KERNEL)?)
    }
    /// Hands the table to the dma-buf core.
    pub(crate) fn into_raw(table: KBox<Self>) -> *mut bindings::sg_table {
        KBox::into_raw(table).cast()
    }

    /// Takes back a table handed over with [`PageTable::into_raw`].
    ///
    /// # Safety
    ///
    /// `sgt` came from `into_raw` and is given back once.
    pub(crate) unsafe fn from_raw(sgt: *mut bindings::sg_table) -> KBox<Self> {
        // SAFETY: `sgt` is the address of a `KBox<PageTable>` (`table` is its first
        // field, `repr(C)`, over the C struct), owned again from here.
        unsafe { KBox::from_raw(sgt.cast::<Self>()) }
    }
}

#[cfg(umem_exporter)]
impl Drop for PageTable {
    fn drop(&mut self) {
        // SAFETY: mapped for `dev` with `dir` and `MAP_ATTRS` (type invariant),
        // unmapped once; the fields are dropped after this.
        unsafe {
            bindings::dma_unmap_sgtable(
                self.dev.as_raw(),
                self.table.as_raw(),
                self.dir.as_raw(),
                MAP_ATTRS,
            )
        };
    }
}
