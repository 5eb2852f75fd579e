// SPDX-License-Identifier: GPL-2.0

//! Physically contiguous page allocations, for exporters that back a buffer
//! with pages of their own, and the DMA-mapped tables of those pages.
//!
//! C header: [`include/linux/gfp.h`](srctree/include/linux/gfp.h)

use core::ptr::NonNull;
use kernel::bindings;
use kernel::device::Device;
use kernel::dma::DataDirection;
use kernel::dma_buf::export::{ExportedTable, Fault};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::scatterlist::OwnedSGTable;
use kernel::sync::Arc;
use kernel::types::ARef;

/// Largest order accepted by [`PageChunk::new`] (2 MiB with 4 KiB pages).
pub(crate) const MAX_CHUNK_ORDER: u32 = 9;

/// `2^order` physically contiguous, zeroed pages.
///
/// # Invariants
///
/// `page` is the first page of an `alloc_pages(GFP_KERNEL | __GFP_ZERO, order)`
/// allocation owned by this value and freed on drop. The `struct page`s of the
/// allocation are consecutive (`SPARSEMEM_VMEMMAP`/`FLATMEM`, as on x86_64).
pub(crate) struct PageChunk {
    page: NonNull<bindings::page>,
    order: u32,
}

// SAFETY: The chunk is plain memory owned by this value; pages may be used and
// freed from any thread.
unsafe impl Send for PageChunk {}
// SAFETY: Shared access only reads page pointers or copies through temporary
// kernel mappings; concurrent writers are the caller's business, as for any
// DMA-able memory.
unsafe impl Sync for PageChunk {}

impl PageChunk {
    /// Allocates `2^order` zeroed pages (`EINVAL` above [`MAX_CHUNK_ORDER`]).
    pub(crate) fn new(order: u32) -> Result<Self> {
        if order > MAX_CHUNK_ORDER {
            return Err(EINVAL);
        }
        // SAFETY: `alloc_pages` may be called with any flags and order.
        let page =
            unsafe { bindings::alloc_pages(bindings::GFP_KERNEL | bindings::__GFP_ZERO, order) };
        // INVARIANT: a successful allocation of `order` is owned from here.
        Ok(Self {
            page: NonNull::new(page).ok_or(ENOMEM)?,
            order,
        })
    }

    /// Size in bytes.
    pub(crate) fn len(&self) -> usize {
        PAGE_SIZE << self.order
    }

    /// Number of pages.
    pub(crate) fn pages(&self) -> usize {
        1 << self.order
    }

    /// The `struct page` of page `i` of the chunk (for sg tables and faults).
    pub(crate) fn page_raw(&self, i: usize) -> Option<*mut bindings::page> {
        if i >= self.pages() {
            return None;
        }
        // SAFETY: `i` is within the allocation, whose `struct page`s are
        // consecutive (type invariant).
        Some(unsafe { self.page.as_ptr().add(i) })
    }

    /// Runs `f` on a temporary kernel mapping of page `i`.
    fn with_page<R>(&self, i: usize, f: impl FnOnce(&mut [u8; PAGE_SIZE]) -> R) -> Result<R> {
        let page = self.page_raw(i).ok_or(EINVAL)?;
        // SAFETY: `page` is a page of this allocation; `kmap_local_page` maps it
        // until the matching `kunmap_local` below, on this thread.
        let addr = unsafe { bindings::kmap_local_page(page) };
        // SAFETY: the mapping covers one page; this function is the only user of
        // the mapping while `f` runs. Concurrent DMA or CPU writers of the same
        // page are allowed to race, as with any DMA buffer; bytes are plain data.
        let r = f(unsafe { &mut *addr.cast::<[u8; PAGE_SIZE]>() });
        // SAFETY: unmaps the mapping made above, in LIFO order.
        unsafe { bindings::kunmap_local(addr) };
        Ok(r)
    }

    /// Copies `src` (a chunk of the same order) into this chunk.
    pub(crate) fn copy_from(&self, src: &PageChunk) -> Result {
        if src.order != self.order {
            return Err(EINVAL);
        }
        for i in 0..self.pages() {
            src.with_page(i, |from| self.with_page(i, |to| to.copy_from_slice(from)))??;
        }
        Ok(())
    }

    /// Copies bytes at `offset` into `buf`.
    pub(crate) fn read(&self, offset: usize, buf: &mut [u8]) -> Result {
        self.access(offset, buf.len(), |page, at, done, n| {
            buf[done..done + n].copy_from_slice(&page[at..at + n]);
        })
    }

    /// Copies `data` to `offset`.
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.access(offset, data.len(), |page, at, done, n| {
            page[at..at + n].copy_from_slice(&data[done..done + n]);
        })
    }

    /// Walks `[offset, offset + len)` page by page: `f(page, offset in page,
    /// bytes done, bytes in this page)`.
    fn access(
        &self,
        offset: usize,
        len: usize,
        mut f: impl FnMut(&mut [u8; PAGE_SIZE], usize, usize, usize),
    ) -> Result {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        let mut done = 0;
        while done < len {
            let pos = offset + done;
            let at = pos % PAGE_SIZE;
            let n = core::cmp::min(PAGE_SIZE - at, len - done);
            self.with_page(pos / PAGE_SIZE, |page| f(page, at, done, n))?;
            done += n;
        }
        Ok(())
    }
}

impl Drop for PageChunk {
    fn drop(&mut self) {
        // SAFETY: allocated with this order and owned (type invariant); freed once.
        unsafe { bindings::__free_pages(self.page.as_ptr(), self.order) };
    }
}

/// The backing store of a buffer: chunks in buffer order.
pub(crate) struct ChunkSet {
    chunks: KVec<PageChunk>,
}

impl ChunkSet {
    /// Allocates one zeroed chunk per order in `orders`.
    pub(crate) fn new(orders: &[u32]) -> Result<Self> {
        let mut chunks = KVec::with_capacity(orders.len(), GFP_KERNEL)?;
        for &order in orders {
            chunks.push(PageChunk::new(order)?, GFP_KERNEL)?;
        }
        Ok(Self { chunks })
    }

    /// The chunks, in buffer order.
    pub(crate) fn chunks(&self) -> &[PageChunk] {
        &self.chunks
    }

    /// Copies `src` (same layout) into this set.
    pub(crate) fn copy_from(&self, src: &ChunkSet) -> Result {
        if src.chunks.len() != self.chunks.len() {
            return Err(EINVAL);
        }
        for (to, from) in self.chunks.iter().zip(src.chunks.iter()) {
            to.copy_from(from)?;
        }
        Ok(())
    }

    /// Finds the chunk holding byte `offset` and the offset inside it.
    fn locate(&self, offset: usize) -> Result<(&PageChunk, usize)> {
        let mut base = 0;
        for chunk in self.chunks.iter() {
            if offset < base + chunk.len() {
                return Ok((chunk, offset - base));
            }
            base += chunk.len();
        }
        Err(EINVAL)
    }

    /// Copies bytes at buffer offset `offset` into `buf`.
    pub(crate) fn read(&self, mut offset: usize, buf: &mut [u8]) -> Result {
        let mut done = 0;
        while done < buf.len() {
            let (chunk, at) = self.locate(offset)?;
            let n = core::cmp::min(chunk.len() - at, buf.len() - done);
            chunk.read(at, &mut buf[done..done + n])?;
            done += n;
            offset += n;
        }
        Ok(())
    }

    /// Copies `data` to buffer offset `offset`.
    pub(crate) fn write(&self, mut offset: usize, data: &[u8]) -> Result {
        let mut done = 0;
        while done < data.len() {
            let (chunk, at) = self.locate(offset)?;
            let n = core::cmp::min(chunk.len() - at, data.len() - done);
            chunk.write(at, &data[done..done + n])?;
            done += n;
            offset += n;
        }
        Ok(())
    }

    /// Maps page `index` of the buffer into the CPU mapping that faulted.
    ///
    /// The caller keeps this set as the buffer's memory until the mapping is
    /// zapped ([`kernel::dma_buf::DmaBuf::zap_cpu_mappings`]).
    pub(crate) fn install(&self, fault: &mut Fault<'_>, index: usize) -> Result {
        let page = self.page_raw(index).ok_or(EINVAL)?;
        // SAFETY: `page` is live memory of this set, which the caller keeps as
        // the buffer's memory until the CPU mappings are zapped.
        unsafe { fault.insert_page(page) }
    }

    /// The `struct page` of page `index` of the buffer.
    pub(crate) fn page_raw(&self, index: usize) -> Option<*mut bindings::page> {
        let (chunk, at) = self.locate(index.checked_mul(PAGE_SIZE)?).ok()?;
        chunk.page_raw(at / PAGE_SIZE)
    }
}

/// Attributes of an exporter's mappings: like DRM PRIME (`drm_gem_map_dma_buf`),
/// no CPU cache maintenance at map and unmap time. Several attachments map the
/// same pages at once (two MRs on one buffer); cache maintenance is the CPU
/// access path's business, and without this attribute DMA-API debugging rightly
/// refuses overlapping streaming mappings that each claim to own the cachelines.
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
#[repr(C)]
pub(crate) struct PageTable {
    table: OwnedSGTable,
    dev: ARef<Device>,
    dir: DataDirection,
    pages: Arc<ChunkSet>,
}

// SAFETY: The table is plain memory; it may be unmapped and freed on any thread
// (it holds a reference on its device).
unsafe impl Send for PageTable {}

// SAFETY: `repr(C)` with the `struct sg_table` first (`OwnedSGTable` is
// `repr(transparent)` over it), mapped for the device while the value exists
// (type invariant).
unsafe impl ExportedTable for PageTable {}

impl PageTable {
    /// Builds the table of `pages` and maps it for `dev`.
    pub(crate) fn new(
        pages: Arc<ChunkSet>,
        dev: &Device,
        dir: DataDirection,
    ) -> Result<KBox<Self>> {
        // Whole pages, at most the device's segment size (at least one page).
        let seg = core::cmp::max(
            dev.dma_max_seg_size() as usize & !(PAGE_SIZE - 1),
            PAGE_SIZE,
        );
        let n: usize = pages.chunks().iter().map(|c| c.len().div_ceil(seg)).sum();
        let table = OwnedSGTable::new(u32::try_from(n).map_err(|_| EINVAL)?)?;
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
}

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
