// SPDX-License-Identifier: GPL-2.0

//! Physically contiguous page allocations, for exporters that back a buffer
//! with pages of their own, and the DMA-mapped tables of those pages.
//!
//! C header: [`include/linux/gfp.h`](srctree/include/linux/gfp.h)

use core::ptr::NonNull;
use kernel::bindings;
use kernel::device::Device;
use kernel::dma::{attrs, Attrs, DataDirection};
use kernel::dma_buf::export::Fault;
use kernel::dma_buf::{Attachment, AttachmentInfo};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::Arc;
use kernel::types::Opaque;

/// Largest order accepted by [`PageChunk::new`] (2 MiB with 4 KiB pages).
pub(crate) const MAX_CHUNK_ORDER: u32 = 9;

/// Memory of a buffer that the CPU reaches page by page: a chunk of system
/// pages ([`PageChunk`]) or of device memory
/// ([`super::p2p::VramChunk`]).
///
/// The memory is the buffer's: devices DMA into it, processes map it, other
/// threads copy in and out. No reference to its bytes is ever made (it would
/// claim they do not change under it), and Rust code never reads or writes
/// them: the copies are C's `memcpy()` and `memmove()`, as
/// `kernel::dma_buf::CpuAccess` copies with `iosys_map_memcpy_*()`, so a
/// concurrent writer may leave a copy torn, as in C, but is no Rust data
/// race.
///
/// # Safety
///
/// Implementors guarantee that [`Backing::with_page`] runs its closure with
/// the kernel address of a mapping of page `i` that is valid for reads and
/// writes of [`PAGE_SIZE`] bytes for the whole call, for every
/// `i < bytes() / PAGE_SIZE`, and that `bytes()` is a whole number of pages
/// that does not change. The provided methods copy through those addresses
/// and rely on nothing else.
pub(crate) unsafe trait Backing {
    /// Size in bytes, a whole number of pages.
    fn bytes(&self) -> usize;

    /// Runs `f` with the kernel address of page `i`, mapped for the call.
    fn with_page<R>(&self, i: usize, f: impl FnOnce(*mut u8) -> R) -> Result<R>;

    /// Copies `src` (of the same size) into this memory. `src` may be this
    /// very memory, or another view of it: the copy is a `memmove`.
    fn copy_from(&self, src: &impl Backing) -> Result {
        if src.bytes() != self.bytes() {
            return Err(EINVAL);
        }
        for i in 0..self.bytes() / PAGE_SIZE {
            src.with_page(i, |from| {
                self.with_page(i, |to| {
                    // SAFETY: both addresses are mappings of a whole page,
                    // valid for the calls (the trait's contract); `memmove`
                    // allows the two ranges to overlap.
                    unsafe { bindings::memmove(to.cast(), from.cast(), PAGE_SIZE) };
                })
            })??;
        }
        Ok(())
    }

    /// Copies bytes at `offset` into `buf`.
    fn read(&self, offset: usize, buf: &mut [u8]) -> Result {
        let out = buf.as_mut_ptr();
        self.access(offset, buf.len(), |page, at, done, n| {
            // SAFETY: `access` keeps `[at, at + n)` inside the mapped page (the
            // trait's contract) and `[done, done + n)` inside `buf`; `buf` is a
            // caller's exclusive slice, so the buffer's memory is not in it.
            unsafe { bindings::memcpy(out.add(done).cast(), page.add(at).cast(), n) };
        })
    }

    /// Copies `data` to `offset`.
    fn write(&self, offset: usize, data: &[u8]) -> Result {
        let src = data.as_ptr();
        self.access(offset, data.len(), |page, at, done, n| {
            // SAFETY: as in `read`, with the roles swapped (`data` is borrowed
            // shared, and the buffer's memory is never a Rust slice).
            unsafe { bindings::memcpy(page.add(at).cast(), src.add(done).cast(), n) };
        })
    }

    /// Walks `[offset, offset + len)` page by page: `f(mapped page, offset in
    /// page, bytes done, bytes in this page)`, with `at + n <= PAGE_SIZE` and
    /// `done + n <= len`.
    fn access(
        &self,
        offset: usize,
        len: usize,
        mut f: impl FnMut(*mut u8, usize, usize, usize),
    ) -> Result {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > self.bytes() {
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
// SAFETY: `&PageChunk` reads the page pointer and order, which never change,
// and copies through temporary kernel mappings by raw pointer only (no
// reference to the bytes exists, so a concurrent copy or DMA tears a copy at
// worst). Needed: a buffer's chunks are shared (`Arc`) with its copy work and
// the fault handler.
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
}

// SAFETY: `with_page` maps page `i` of the allocation (`page_raw` refuses an
// `i` past it) with `kmap_local_page` for the closure's call; the size is the
// allocation's, fixed.
unsafe impl Backing for PageChunk {
    fn bytes(&self) -> usize {
        self.len()
    }

    fn with_page<R>(&self, i: usize, f: impl FnOnce(*mut u8) -> R) -> Result<R> {
        let page = self.page_raw(i).ok_or(EINVAL)?;
        // SAFETY: `page` is a page of this allocation; `kmap_local_page` maps it
        // until the matching `kunmap_local` below, on this thread.
        let addr = unsafe { bindings::kmap_local_page(page) };
        let r = f(addr.cast::<u8>());
        // SAFETY: unmaps the mapping made above, in LIFO order.
        unsafe { bindings::kunmap_local(addr) };
        Ok(r)
    }
}

impl Drop for PageChunk {
    fn drop(&mut self) {
        // SAFETY: allocated with this order and owned (type invariant); freed once.
        unsafe { bindings::__free_pages(self.page.as_ptr(), self.order) };
    }
}

/// The backing store of a buffer: chunks in buffer order, of system pages
/// (the default) or of device memory.
pub(crate) struct ChunkSet<C: Backing = PageChunk> {
    chunks: KVec<C>,
}

impl ChunkSet<PageChunk> {
    /// Allocates one zeroed chunk per order in `orders`.
    pub(crate) fn new(orders: &[u32]) -> Result<Self> {
        let mut chunks = KVec::with_capacity(orders.len(), GFP_KERNEL)?;
        for &order in orders {
            chunks.push(PageChunk::new(order)?, GFP_KERNEL)?;
        }
        Ok(Self { chunks })
    }

    /// Maps page `index` of the buffer into the CPU mapping that faulted.
    ///
    /// The caller keeps this set as the buffer's memory until the mapping is
    /// zapped ([`kernel::dma_buf::export::Exported::zap_cpu_mappings`]).
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

impl<C: Backing> ChunkSet<C> {
    /// A set of the given chunks.
    pub(crate) fn from_chunks(chunks: KVec<C>) -> Self {
        Self { chunks }
    }

    /// The chunks, in buffer order.
    pub(crate) fn chunks(&self) -> &[C] {
        &self.chunks
    }

    /// Copies `src` (same layout) into this set.
    pub(crate) fn copy_from<D: Backing>(&self, src: &ChunkSet<D>) -> Result {
        if src.chunks.len() != self.chunks.len() {
            return Err(EINVAL);
        }
        for (to, from) in self.chunks.iter().zip(src.chunks.iter()) {
            to.copy_from(from)?;
        }
        Ok(())
    }

    /// Finds the chunk holding byte `offset` and the offset inside it.
    pub(crate) fn locate(&self, offset: usize) -> Result<(&C, usize)> {
        let mut base = 0;
        for chunk in self.chunks.iter() {
            if offset < base + chunk.bytes() {
                return Ok((chunk, offset - base));
            }
            base += chunk.bytes();
        }
        Err(EINVAL)
    }

    /// Copies bytes at buffer offset `offset` into `buf`.
    pub(crate) fn read(&self, mut offset: usize, buf: &mut [u8]) -> Result {
        let mut done = 0;
        while done < buf.len() {
            let (chunk, at) = self.locate(offset)?;
            let n = core::cmp::min(chunk.bytes() - at, buf.len() - done);
            chunk.read(at, buf.get_mut(done..done + n).ok_or(EINVAL)?)?;
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
            let n = core::cmp::min(chunk.bytes() - at, data.len() - done);
            chunk.write(at, data.get(done..done + n).ok_or(EINVAL)?)?;
            done += n;
            offset += n;
        }
        Ok(())
    }
}

/// Attributes of an exporter's mappings: like DRM PRIME (`drm_gem_map_dma_buf`),
/// no CPU cache maintenance at map and unmap time. Several attachments map the
/// same pages at once (two MRs on one buffer); cache maintenance is the CPU
/// access path's business, and without this attribute DMA-API debugging rightly
/// refuses overlapping streaming mappings that each claim to own the cachelines.
const MAP_ATTRS: Attrs = attrs::DMA_ATTR_SKIP_CPU_SYNC;

/// A `struct sg_table` allocated by the exporter (`sg_alloc_table`), freed on
/// drop.
///
/// # Invariants
///
/// `0` was set up by a successful `sg_alloc_table` and is freed once, on drop.
/// (The C struct holds no pointer to itself, so the value may move.)
#[repr(transparent)]
struct RawTable(Opaque<bindings::sg_table>);

impl RawTable {
    /// Allocates a table of `n` entries.
    fn new(n: u32) -> Result<Self> {
        let table = Opaque::<bindings::sg_table>::uninit();
        // SAFETY: `table.get()` is valid for writes; `sg_alloc_table` initialises
        // it (on failure it frees what it allocated and leaves nothing to free).
        kernel::error::to_result(unsafe {
            bindings::sg_alloc_table(table.get(), n, bindings::GFP_KERNEL)
        })?;
        // INVARIANT: allocated just above.
        Ok(Self(table))
    }

    fn as_raw(&self) -> *mut bindings::sg_table {
        self.0.get()
    }
}

impl Drop for RawTable {
    fn drop(&mut self) {
        // SAFETY: allocated by `sg_alloc_table` (type invariant), freed once.
        unsafe { bindings::sg_free_table(self.as_raw()) };
    }
}

/// `dma_get_max_seg_size()` of the device of `attach`: its DMA parameters'
/// limit, or 64 KiB without any.
pub(crate) fn max_seg_size(attach: &AttachmentInfo) -> usize {
    // SAFETY: the attachment is live and holds its device.
    let dev = unsafe { (*attach.as_raw()).dev };
    // SAFETY: `dev` is live (above); `dma_parms` is set up by its
    // bus or driver before it maps anything and not changed while it is used.
    let parms = unsafe { (*dev).dma_parms };
    if parms.is_null() {
        return 1 << 16;
    }
    // SAFETY: non-null `dma_parms` point to the device's live parameters.
    // CAST: `unsigned int` to `usize` is lossless.
    unsafe { (*parms).max_segment_size as usize }
}

/// The C value of a DMA direction.
fn raw_dir(dir: DataDirection) -> bindings::dma_data_direction {
    bindings::dma_data_direction::from(dir)
}

/// A table of a [`ChunkSet`]'s pages, built by an exporter and DMA-mapped for
/// one device: one entry per chunk, or per piece of a chunk longer than the
/// device's maximum segment size.
///
/// # Invariants
///
/// `table` has one entry per segment of `_pages`, set to that segment, and is mapped
/// with `dma_map_sgtable(raw_dev, dir, MAP_ATTRS)`, where `raw_dev` is the
/// device `_dev` holds; `drop` unmaps it, then the fields go in their order,
/// which is the rest of the undo order: the table is freed, the device
/// reference put, the pages released. (Importers get a copy of its header,
/// [`super::table::BufTable`].)
pub(crate) struct PageTable {
    table: RawTable,
    raw_dev: *mut bindings::device,
    _dev: ARef<Device>,
    dir: DataDirection,
    _pages: Arc<ChunkSet>,
}

// SAFETY: The table is plain memory; it may be unmapped and freed on any thread
// (it holds a reference on its device).
unsafe impl Send for PageTable {}

impl PageTable {
    /// Builds the table of `pages` and maps it for the device of `attach`.
    pub(crate) fn new(
        pages: Arc<ChunkSet>,
        attach: &Attachment,
        dir: DataDirection,
    ) -> Result<Self> {
        let dev = attach.dev();
        // SAFETY: the attachment is live and holds its device.
        let raw_dev = unsafe { (*attach.as_raw()).dev };
        // Whole pages, at most the device's segment size (at least one page).
        let seg = core::cmp::max(max_seg_size(attach) & !(PAGE_SIZE - 1), PAGE_SIZE);
        let n: usize = pages.chunks().iter().map(|c| c.len().div_ceil(seg)).sum();
        let table = RawTable::new(u32::try_from(n).map_err(|_| EINVAL)?)?;
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
            bindings::dma_map_sgtable(raw_dev, sgt, raw_dir(dir), MAP_ATTRS.as_raw())
        })?;
        // INVARIANT: mapped just above for `raw_dev`, which `_dev` holds; from here
        // `drop` unmaps.
        Ok(Self {
            table,
            raw_dev,
            _dev: dev.into(),
            dir,
            _pages: pages,
        })
    }
}

impl PageTable {
    /// The mapped table.
    pub(crate) fn raw(&self) -> *mut bindings::sg_table {
        self.table.as_raw()
    }
}

impl Drop for PageTable {
    fn drop(&mut self) {
        // SAFETY: mapped for `raw_dev` with `dir` and `MAP_ATTRS` (type invariant),
        // unmapped once while `_dev` still holds the device; the fields are dropped
        // after this.
        unsafe {
            bindings::dma_unmap_sgtable(
                self.raw_dev,
                self.table.as_raw(),
                raw_dir(self.dir),
                MAP_ATTRS.as_raw(),
            )
        };
    }
}
