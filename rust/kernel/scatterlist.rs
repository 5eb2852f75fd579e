// SPDX-License-Identifier: GPL-2.0

//! The DMA side of scatter-gather tables.
//!
//! C header: [`include/linux/scatterlist.h`](srctree/include/linux/scatterlist.h)
//!
//! An importer of a dma-buf sees a table mapped by the exporter. It may read the
//! DMA address and length of each mapped entry and nothing else: the page link
//! of an exporter's entry is not the importer's to follow (`CONFIG_DMABUF_DEBUG`
//! mangles it to catch that), so this module has no accessor for it.

use crate::bindings;
use crate::dma::DmaAddress;
use crate::prelude::*;
use crate::types::Opaque;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// One entry of a mapped table, seen through its DMA fields only.
///
/// # Invariants
///
/// The wrapped entry belongs to a table that stays mapped while the reference lives.
#[repr(transparent)]
pub struct SGEntry(Opaque<bindings::scatterlist>);

impl SGEntry {
    /// # Safety
    ///
    /// `ptr` is a valid entry of a table that stays mapped for `'a`.
    #[inline]
    unsafe fn from_raw<'a>(ptr: *mut bindings::scatterlist) -> &'a Self {
        // SAFETY: `repr(transparent)` over the C struct; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    #[inline]
    fn as_raw(&self) -> *mut bindings::scatterlist {
        self.0.get()
    }

    // The fields `sg_dma_address()` and `sg_dma_len()` name, read and written
    // directly rather than through the `rust_helper_` functions: those are
    // calls the C macros do not make, once per entry of every table walked
    // (measured: 12 ns of an entry's 82 in `make bench`).

    /// The bus address of this entry (`sg_dma_address`).
    #[inline]
    pub fn dma_address(&self) -> DmaAddress {
        // SAFETY: the entry is valid by the type invariant.
        unsafe { (*self.as_raw()).dma_address }
    }

    /// The DMA length of this entry (`sg_dma_len`).
    #[inline]
    pub fn dma_len(&self) -> u32 {
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
    /// changes) and tables owned by the caller ([`OwnedSGTable`]) write them.
    #[inline]
    fn set_dma(&self, address: DmaAddress, len: u32) {
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
pub struct SGTable(Opaque<bindings::sg_table>);

impl SGTable {
    /// Creates a reference from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` is a mapped table that stays mapped, and is not freed, for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::sg_table) -> &'a Self {
        // SAFETY: `repr(transparent)` over the C struct; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the raw pointer to the C table.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::sg_table {
        self.0.get()
    }

    /// Number of mapped DMA entries.
    #[inline]
    pub fn nents(&self) -> u32 {
        // SAFETY: the table is valid by the type invariant.
        unsafe { (*self.as_raw()).nents }
    }

    /// Iterates over the mapped DMA entries, like `for_each_sgtable_dma_sg`.
    #[inline]
    pub fn dma_entries(&self) -> DmaEntries<'_> {
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
    #[inline]
    pub fn trim(&self, start: u64, end: u64) -> DmaWindow {
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

/// Iterator over the mapped entries of an [`SGTable`] ([`SGTable::dma_entries`]).
pub struct DmaEntries<'a> {
    next: *mut bindings::scatterlist,
    left: u32,
    _table: PhantomData<&'a SGTable>,
}

impl<'a> Iterator for DmaEntries<'a> {
    type Item = &'a SGEntry;

    #[inline]
    fn next(&mut self) -> Option<&'a SGEntry> {
        if self.left == 0 || self.next.is_null() {
            return None;
        }
        self.left -= 1;
        let cur = self.next;
        // SAFETY: `cur` is one of the first `nents` entries of a table that stays
        // mapped for `'a` (invariant of `SGTable`); `sg_next` follows chain links.
        self.next = unsafe { bindings::sg_next(cur) };
        // SAFETY: as above.
        Some(unsafe { SGEntry::from_raw(cur) })
    }
}

/// The changes [`SGTable::trim`] made to a table, to be undone before unmap.
///
/// # Invariants
///
/// `first` and `last`, when set, are entries of the table at `table`; the first
/// one's DMA address was advanced and its length shortened by its offset, the
/// last one's length shortened by its trim, and nothing else was changed.
pub struct DmaWindow {
    table: *mut bindings::sg_table,
    first: Option<(NonNull<SGEntry>, u64)>,
    last: Option<(NonNull<SGEntry>, u64)>,
    nents: u32,
}

impl DmaWindow {
    /// Number of entries that overlap the window.
    #[inline]
    pub fn nents(&self) -> u32 {
        self.nents
    }

    /// The first overlapping entry (null if none), for `sgt_append.sgt.sgl`.
    #[inline]
    pub fn first_raw(&self) -> *mut bindings::scatterlist {
        self.first
            .map_or(core::ptr::null_mut(), |(sg, _)| sg.as_ptr().cast())
    }

    /// The last overlapping entry (null if the window was not closed).
    #[inline]
    pub fn last_raw(&self) -> *mut bindings::scatterlist {
        self.last
            .map_or(core::ptr::null_mut(), |(sg, _)| sg.as_ptr().cast())
    }

    /// Bytes skipped at the start of the first entry.
    #[inline]
    pub fn first_offset(&self) -> u64 {
        self.first.map_or(0, |(_, off)| off)
    }

    /// Bytes cut from the end of the last entry.
    #[inline]
    pub fn last_trim(&self) -> u64 {
        self.last.map_or(0, |(_, trim)| trim)
    }

    /// Puts the trimmed entries back as the exporter mapped them.
    ///
    /// Fails with `EINVAL`, changing nothing, if `table` is not the table the
    /// window was made on.
    #[inline]
    pub fn restore(self, table: &SGTable) -> Result {
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

/// A [`DmaWindow`] as a C structure stores it (`struct ib_umem_dmabuf`:
/// `first_sg`, `first_sg_offset`, `last_sg`, `last_sg_trim`, and `nents` of
/// the umem's table).
pub struct WindowParts {
    /// The first overlapping entry, or null.
    pub first: *mut bindings::scatterlist,
    /// Bytes skipped at the start of `first`.
    pub first_offset: u64,
    /// The last overlapping entry, or null.
    pub last: *mut bindings::scatterlist,
    /// Bytes cut from the end of `last`.
    pub last_trim: u64,
    /// Number of overlapping entries.
    pub nents: u32,
}

impl DmaWindow {
    /// Splits into the table it was made on and its parts.
    #[inline]
    pub fn into_parts(self) -> (*mut bindings::sg_table, WindowParts) {
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
    #[inline]
    pub unsafe fn from_parts(table: *mut bindings::sg_table, parts: WindowParts) -> Self {
        // INVARIANT: the parts describe the changes made by `trim` on `table`.
        Self {
            table,
            first: NonNull::new(parts.first.cast::<SGEntry>()).map(|sg| (sg, parts.first_offset)),
            last: NonNull::new(parts.last.cast::<SGEntry>()).map(|sg| (sg, parts.last_trim)),
            nents: parts.nents,
        }
    }
}

/// A `struct sg_table` allocated by Rust code (`sg_alloc_table`), freed on
/// drop: an exporter's table, or a test's with settable DMA entries.
///
/// # Invariants
///
/// `table` was set up by a successful `sg_alloc_table` and is freed once, on
/// drop. (The C struct holds no pointer to itself, so the value may move.)
#[repr(transparent)]
pub struct OwnedSGTable {
    table: Opaque<bindings::sg_table>,
}

impl OwnedSGTable {
    /// Allocates a table of `n` zeroed entries, all counted as mapped.
    pub fn new(n: u32) -> Result<Self> {
        let table = Opaque::<bindings::sg_table>::uninit();
        // SAFETY: `table.get()` is valid for writes; `sg_alloc_table` initialises it
        // (on failure it frees what it allocated and leaves nothing to free, and
        // no `OwnedSGTable` is made).
        crate::error::to_result(unsafe {
            bindings::sg_alloc_table(table.get(), n, bindings::GFP_KERNEL)
        })?;
        // INVARIANT: allocated just above.
        Ok(Self { table })
    }

    /// The C table.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::sg_table {
        self.table.get()
    }

    /// Sets the DMA address and length of entry `i`.
    pub fn set(&self, i: u32, address: DmaAddress, len: u32) -> Result {
        let sg = self.dma_entries().nth(i as usize).ok_or(EINVAL)?;
        sg.set_dma(address, len);
        Ok(())
    }
}

impl core::ops::Deref for OwnedSGTable {
    type Target = SGTable;

    fn deref(&self) -> &SGTable {
        // SAFETY: the table is allocated and lives as long as `self` (type invariant);
        // its entries are plain memory with DMA fields this crate set.
        unsafe { SGTable::from_raw(self.as_raw()) }
    }
}

impl Drop for OwnedSGTable {
    fn drop(&mut self) {
        // SAFETY: allocated by `sg_alloc_table` (type invariant), freed once.
        unsafe { bindings::sg_free_table(self.as_raw()) };
    }
}
