// SPDX-License-Identifier: GPL-2.0

//! Device memory: a PCI BAR made peer-to-peer DMA memory, allocations from
//! it, and the dma-buf tables of those allocations for importers that reach
//! the BAR peer-to-peer.
//!
//! C headers: [`include/linux/pci-p2pdma.h`](srctree/include/linux/pci-p2pdma.h),
//! [`include/linux/dma-buf-mapping.h`](srctree/include/linux/dma-buf-mapping.h)
//!
//! The BAR is registered with `pci_p2pdma_add_resource()`, which gives it a
//! pool and (ZONE_DEVICE) pages in the kernel's direct map, so the exporter
//! can copy in and out with the CPU. Importers never get those pages: the
//! table of a peer-to-peer importer is built by `dma_buf_phys_vec_to_sgt()`
//! from physical ranges, with bus addresses only (no page in any entry), as
//! vfio-pci builds its tables.
//!
//! The registration is managed by the device (devres): it goes away when the
//! driver is unbound. The unbind stops new allocations ([`Vram::stop`]), has
//! the exporter revoke and move every buffer it can out of the memory, then
//! waits until every allocation is freed ([`Vram::released_within`]): what
//! is left is memory an importer that cannot be revoked pinned there, which
//! only its unpin gives back.

use super::page::{Backing, ChunkSet};
use super::workqueue::msleep;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::bindings;
use kernel::device::Core;
use kernel::dma::DataDirection;
use kernel::dma_buf::export::{BufLocked, Fault};
use kernel::dma_buf::Attachment;
use kernel::page::PAGE_SIZE;
use kernel::pci;
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, CondVarTimeoutResult, Mutex};
use kernel::time::msecs_to_jiffies;

/// What the unbind and the allocations share.
struct VramState {
    /// The driver is bound: new allocations may be made.
    bound: bool,
    /// Live allocations.
    chunks: usize,
}

/// A BAR of a bound PCI device, registered as peer-to-peer DMA memory.
///
/// # Invariants
///
/// `raw` is the `struct pci_dev` of `pdev`. While `state.bound` is set or
/// `state.chunks` is not zero, the driver that made this value is bound to
/// `pdev`, BAR `bar` is registered as peer-to-peer memory (its pool and
/// pages exist) and `provider` is its live `struct p2pdma_provider`;
/// `[start, start + len)` is the BAR's CPU physical range and `bus_offset`
/// what the bus addresses of peer-to-peer mappings add to it.
#[pin_data]
pub(crate) struct Vram {
    pdev: ARef<pci::Device>,
    raw: NonNull<bindings::pci_dev>,
    provider: NonNull<bindings::p2pdma_provider>,
    start: u64,
    len: u64,
    bus_offset: u64,
    #[pin]
    state: Mutex<VramState>,
    #[pin]
    freed: CondVar,
}

// SAFETY: The raw pointers are to the device (held by `pdev`) and to its
// provider, which the P2P code only reads; the state is behind a mutex.
unsafe impl Send for Vram {}
// SAFETY: As above; every method may be called from any thread.
unsafe impl Sync for Vram {}

impl Vram {
    /// Registers BAR `bar` of `pdev` as peer-to-peer memory, all of it.
    pub(crate) fn new(pdev: &pci::Device<Core<'_>>, bar: u32) -> Result<Arc<Self>> {
        let start = pdev.resource_start(bar)?;
        let len = pdev.resource_len(bar)?;
        let pdev: &pci::Device = pdev;
        // CAST: `pci::Device` is a transparent wrapper of `struct pci_dev`.
        let raw = NonNull::from(pdev).cast::<bindings::pci_dev>();
        let ibar = i32::try_from(bar).map_err(|_| EINVAL)?;
        // SAFETY: `raw` is a device being probed (`Core`), which managed
        // resources may be added to.
        kernel::error::to_result(unsafe {
            bindings::pci_p2pdma_add_resource(raw.as_ptr(), ibar, 0, 0)
        })?;
        // SAFETY: as above; `pci_p2pdma_add_resource` set up the device's P2P
        // state, so this returns the BAR's provider (or NULL).
        let provider = unsafe { bindings::pcim_p2pdma_provider(raw.as_ptr(), ibar) };
        let provider = NonNull::new(provider).ok_or(EINVAL)?;
        // SAFETY: the provider is live (just looked up); `bus_offset` is set
        // once by `pcim_p2pdma_init`.
        let bus_offset = unsafe { (*provider.as_ptr()).bus_offset };
        // INVARIANT: bound (probing), the BAR registered above.
        Arc::pin_init(
            try_pin_init!(Self {
                pdev: pdev.into(),
                raw,
                provider,
                start,
                len,
                bus_offset,
                state <- new_mutex!(VramState { bound: true, chunks: 0 }),
                freed <- new_condvar!(),
            }),
            GFP_KERNEL,
        )
    }

    /// The BAR's bus address range for peer-to-peer importers: start, length.
    pub(crate) fn bus_range(&self) -> (u64, u64) {
        (self.start.wrapping_add(self.bus_offset), self.len)
    }

    /// Stops new allocations: from the driver's unbind callback, first.
    pub(crate) fn stop(&self) {
        self.state.lock().bound = false;
    }

    /// Waits up to `ms` milliseconds for every allocation to be freed, from
    /// the driver's unbind callback after [`Vram::stop`]; returns whether
    /// none is left. The caller waits in rounds and says why between them:
    /// the registration may go only when this returns `true`.
    pub(crate) fn released_within(&self, ms: u32) -> bool {
        let mut state = self.state.lock();
        if state.chunks == 0 {
            return true;
        }
        let woke = self
            .freed
            .wait_interruptible_timeout(&mut state, msecs_to_jiffies(ms));
        if let CondVarTimeoutResult::Signal { .. } = woke {
            // The unbinding task was signalled: an unbind cannot be given
            // up, so this round still takes its time, without spinning.
            drop(state);
            msleep(ms);
            state = self.state.lock();
        }
        state.chunks == 0
    }

    /// Live allocations (the unbind's messages).
    pub(crate) fn allocations(&self) -> usize {
        self.state.lock().chunks
    }

    /// Whether the device of `attach` reaches this memory peer-to-peer: the
    /// importer allows peer-to-peer, its device is a PCI function, and the
    /// PCI topology lets the two talk (`pci_p2pdma_distance_many()`: through
    /// a switch, or a host bridge known to forward peer-to-peer).
    pub(crate) fn reaches(&self, attach: &Attachment) -> bool {
        if !attach.peer2peer() {
            return false;
        }
        if <&pci::Device>::try_from(attach.dev()).is_err() {
            return false;
        }
        // SAFETY: the attachment is live and holds its device.
        let mut client = unsafe { (*attach.as_raw()).dev };
        // SAFETY: `raw` is live (held by `pdev`) and has P2P state (type
        // invariant: only while bound, which every caller is, holding an
        // allocation); `client` is a live device, the attachment's.
        let dist =
            unsafe { bindings::pci_p2pdma_distance_many(self.raw.as_ptr(), &mut client, 1, false) };
        dist >= 0
    }
}

/// An allocation of `2^order` pages of a [`Vram`] (`pci_alloc_p2pmem`),
/// zeroed.
///
/// # Invariants
///
/// `vaddr` is the kernel address of a live `pci_alloc_p2pmem` allocation of
/// `len` bytes from `vram`, owned by this value and freed on drop; it is
/// counted in `vram`'s live allocations, so the BAR stays registered while
/// the value exists. `bus` is its bus address for peer-to-peer importers.
pub(crate) struct VramChunk {
    vram: Arc<Vram>,
    vaddr: NonNull<u8>,
    len: usize,
    bus: u64,
}

// SAFETY: The chunk is memory of the device owned by this value; it may be
// copied and freed from any thread.
unsafe impl Send for VramChunk {}
// SAFETY: `&VramChunk` reads fields that never change and copies through raw
// pointers only (no reference to the bytes exists, so a concurrent copy or
// DMA tears a copy at worst). Needed: a buffer's chunks are shared (`Arc`)
// with its copy work and the fault handler.
unsafe impl Sync for VramChunk {}

impl VramChunk {
    /// Allocates `2^order` pages: `ENODEV` once the driver is unbinding,
    /// `ENOMEM` when the BAR is full.
    pub(crate) fn new(vram: &Arc<Vram>, order: u32) -> Result<Self> {
        let len = PAGE_SIZE.checked_shl(order).ok_or(EINVAL)?;
        let mut state = vram.state.lock();
        if !state.bound {
            return Err(ENODEV);
        }
        // SAFETY: the BAR is registered while bound (type invariant of `Vram`),
        // which the lock keeps so until the count below is raised.
        let vaddr = unsafe { bindings::pci_alloc_p2pmem(vram.raw.as_ptr(), len) };
        let vaddr = NonNull::new(vaddr.cast::<u8>()).ok_or(ENOMEM)?;
        state.chunks += 1;
        drop(state);
        // SAFETY: `vaddr` is an allocation of the pool just made.
        let bus =
            unsafe { bindings::pci_p2pmem_virt_to_bus(vram.raw.as_ptr(), vaddr.as_ptr().cast()) };
        // SAFETY: `len` bytes at `vaddr` are ours and mapped (direct map).
        unsafe { core::ptr::write_bytes(vaddr.as_ptr(), 0, len) };
        // INVARIANT: allocated and counted above.
        Ok(Self {
            vram: vram.clone(),
            vaddr,
            len,
            bus,
        })
    }

    /// Size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The CPU physical address of the allocation.
    pub(crate) fn phys(&self) -> u64 {
        self.bus.wrapping_sub(self.vram.bus_offset)
    }

    /// The bus address peer-to-peer importers see.
    pub(crate) fn bus(&self) -> u64 {
        self.bus
    }
}

// SAFETY: the allocation is mapped at `vaddr` while the value exists (type
// invariant) and `with_page` refuses a page past its `len`, a whole number of
// pages that never changes.
unsafe impl Backing for VramChunk {
    fn bytes(&self) -> usize {
        self.len
    }

    fn with_page<R>(&self, i: usize, f: impl FnOnce(*mut u8) -> R) -> Result<R> {
        if i >= self.len / PAGE_SIZE {
            return Err(EINVAL);
        }
        // SAFETY: page `i` is inside the allocation (checked), which is mapped
        // while the value exists (type invariant).
        Ok(f(unsafe { self.vaddr.as_ptr().add(i * PAGE_SIZE) }))
    }
}

impl Drop for VramChunk {
    fn drop(&mut self) {
        let mut state = self.vram.state.lock();
        // SAFETY: allocated from this pool with this length (type invariant),
        // freed once; the BAR is still registered (this allocation counts).
        unsafe {
            bindings::pci_free_p2pmem(self.vram.raw.as_ptr(), self.vaddr.as_ptr().cast(), self.len)
        };
        state.chunks -= 1;
        if state.chunks == 0 {
            self.vram.freed.notify_all();
        }
    }
}

/// A buffer's memory in a [`Vram`]: chunks in buffer order.
pub(crate) type VramSet = ChunkSet<VramChunk>;

impl ChunkSet<VramChunk> {
    /// Allocates one zeroed chunk of `vram` per order in `orders`.
    pub(crate) fn new_in(vram: &Arc<Vram>, orders: &[u32]) -> Result<Self> {
        let mut chunks = KVec::with_capacity(orders.len(), GFP_KERNEL)?;
        for &order in orders {
            chunks.push(VramChunk::new(vram, order)?, GFP_KERNEL)?;
        }
        Ok(Self::from_chunks(chunks))
    }

    /// The offset in the BAR of the first byte, when the chunks are one
    /// range of the BAR in buffer order; `None` otherwise.
    pub(crate) fn bar_offset(&self) -> Option<u64> {
        let first = self.chunks().first()?;
        let mut next = first.phys();
        for c in self.chunks().iter() {
            if c.phys() != next {
                return None;
            }
            next = next.checked_add(u64::try_from(c.len()).ok()?)?;
        }
        first.phys().checked_sub(first.vram.start)
    }

    /// Maps page `index` of the buffer (a page of the BAR) at the faulting
    /// address of `fault`.
    ///
    /// The caller keeps this set as the buffer's memory until the mapping is
    /// zapped ([`kernel::dma_buf::export::Exported::zap_cpu_mappings`]).
    pub(crate) fn install(&self, fault: &mut Fault<'_>, index: usize) -> Result {
        let (chunk, at) = self.locate(index.checked_mul(PAGE_SIZE).ok_or(EINVAL)?)?;
        let phys = chunk
            .phys()
            .checked_add(u64::try_from(at).map_err(|_| EINVAL)?)
            .ok_or(EINVAL)?;
        let pfn = usize::try_from(phys >> kernel::page::PAGE_SHIFT).map_err(|_| EINVAL)?;
        // SAFETY: `pfn` is page `index` of this set, memory of the BAR that
        // the allocation keeps registered while the chunk lives; its
        // registration reserved its cache mode (uncached), which
        // `vmf_insert_pfn()` applies; the caller keeps the set as the
        // buffer's memory until the CPU mappings are zapped.
        unsafe { fault.insert_pfn(pfn) }
    }

    /// Whether this set was allocated from `vram`.
    pub(crate) fn is_in(&self, vram: &Arc<Vram>) -> bool {
        self.chunks()
            .first()
            .is_some_and(|c| Arc::ptr_eq(&c.vram, vram))
    }

    /// Whether the device of `attach` reaches this memory ([`Vram::reaches`]).
    pub(crate) fn reaches(&self, attach: &Attachment) -> bool {
        self.chunks()
            .first()
            .is_some_and(|c| c.vram.reaches(attach))
    }
}

/// The peer-to-peer table of a [`VramSet`] for one attachment: bus
/// addresses, one entry per chunk, built by `dma_buf_phys_vec_to_sgt()`.
///
/// It is freed with [`P2pTable::free`], under the buffer's reservation lock
/// (`dma_buf_free_sgt()` needs it); one that is dropped instead is leaked,
/// with a warning, together with the memory it maps.
///
/// # Invariants
///
/// `sgt`, while set, was returned by `dma_buf_phys_vec_to_sgt` for `attach`
/// on the ranges of `set`'s chunks (in order) with `dir`, and is not yet
/// freed; `set` keeps that memory allocated.
pub(crate) struct P2pTable {
    sgt: Option<NonNull<bindings::sg_table>>,
    attach: *mut bindings::dma_buf_attachment,
    dir: DataDirection,
    set: Option<Arc<VramSet>>,
}

// SAFETY: The table is plain memory; it may be freed on any thread (under the
// buffer's lock).
unsafe impl Send for P2pTable {}

impl P2pTable {
    /// Builds the table of `set` for `attach`, whose device must reach its
    /// memory ([`Vram::reaches`]; `dma_buf_phys_vec_to_sgt()` refuses it
    /// otherwise).
    pub(crate) fn new(
        set: Arc<VramSet>,
        attach: &Attachment,
        locked: &BufLocked<'_>,
        dir: DataDirection,
    ) -> Result<Self> {
        if !core::ptr::eq(locked.dmabuf(), attach.dmabuf()) {
            return Err(EINVAL);
        }
        let list = set.chunks();
        let first = list.first().ok_or(EINVAL)?;
        let vram = first.vram.clone();
        let mut ranges = KVec::with_capacity(list.len(), GFP_KERNEL)?;
        let mut size: usize = 0;
        for chunk in list {
            if !Arc::ptr_eq(&chunk.vram, &vram) {
                return Err(EINVAL);
            }
            ranges.push(
                bindings::phys_vec {
                    paddr: chunk.phys(),
                    len: chunk.len(),
                },
                GFP_KERNEL,
            )?;
            size = size.checked_add(chunk.len()).ok_or(EINVAL)?;
        }
        // SAFETY: the attachment is live and its buffer's lock is held
        // (`locked`, checked to be its buffer's); the provider is live while
        // the chunks are (type invariant of `Vram`); `ranges` holds
        // `ranges.len()` entries adding up to `size`.
        let sgt = kernel::error::from_err_ptr(unsafe {
            bindings::dma_buf_phys_vec_to_sgt(
                attach.as_raw(),
                vram.provider.as_ptr(),
                ranges.as_mut_ptr(),
                ranges.len(),
                size,
                bindings::dma_data_direction::from(dir),
            )
        })?;
        // INVARIANT: just built for `attach` on `set`.
        Ok(Self {
            sgt: Some(NonNull::new(sgt).ok_or(EINVAL)?),
            attach: attach.as_raw(),
            dir,
            set: Some(set),
        })
    }

    /// The table.
    pub(crate) fn raw(&self) -> *mut bindings::sg_table {
        self.sgt.map_or(core::ptr::null_mut(), NonNull::as_ptr)
    }

    /// Whether the table still holds the bus ranges of its chunks, entry by
    /// entry (an importer that trimmed it restored it).
    pub(crate) fn intact(&self) -> bool {
        let (Some(sgt), Some(set)) = (self.sgt, self.set.as_ref()) else {
            return false;
        };
        // SAFETY: the table is live until freed (type invariant) and only read.
        let (mut sg, nents) = unsafe { ((*sgt.as_ptr()).sgl, (*sgt.as_ptr()).nents) };
        if nents as usize != set.chunks().len() {
            return false;
        }
        for chunk in set.chunks() {
            // SAFETY: one of the `nents` entries (counted above); reading the
            // DMA fields of a live table.
            let (addr, len) = unsafe { ((*sg).dma_address, (*sg).dma_length) };
            if addr != chunk.bus() || len as usize != chunk.len() {
                return false;
            }
            // SAFETY: as above; the last `sg_next` may return NULL, never read.
            sg = unsafe { bindings::sg_next(sg) };
        }
        true
    }

    /// Frees the table: `attach` must be the attachment it was built for,
    /// `locked` its buffer's lock (otherwise the table is leaked, with a
    /// warning).
    pub(crate) fn free(mut self, attach: &Attachment, locked: &BufLocked<'_>) {
        let ours = core::ptr::eq(attach.as_raw(), self.attach)
            && core::ptr::eq(locked.dmabuf(), attach.dmabuf());
        if kernel::warn_on!(!ours) {
            return;
        }
        if let Some(sgt) = self.sgt.take() {
            // SAFETY: built for this live attachment with `dir` and not yet
            // freed (type invariant); its buffer's lock is held (checked).
            unsafe {
                bindings::dma_buf_free_sgt(
                    attach.as_raw(),
                    sgt.as_ptr(),
                    bindings::dma_data_direction::from(self.dir),
                )
            };
        }
    }
}

impl Drop for P2pTable {
    fn drop(&mut self) {
        if kernel::warn_on!(self.sgt.is_some()) {
            // Still mapped for an importer: keep the memory it maps.
            core::mem::forget(self.set.take());
        }
    }
}

kernel::sync::global_lock! {
    // SAFETY: initialised once, by `registry_init` (guarded by
    // `REGISTRY_READY`), before any other use, which checks `REGISTRY_READY`.
    unsafe(uninit) static DEVMEM: Mutex<Option<Arc<Vram>>> = None;
}

/// Whether [`DEVMEM`] is initialised.
static REGISTRY_READY: AtomicBool = AtomicBool::new(false);

/// Sets up the registry of the device memory in use (from module init;
/// further calls do nothing).
pub(crate) fn registry_init() {
    static INIT: AtomicBool = AtomicBool::new(false);
    if INIT.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: the first and only call (`INIT` above); nothing uses the lock
    // before `REGISTRY_READY` is set below.
    unsafe { DEVMEM.init() };
    REGISTRY_READY.store(true, Ordering::Release);
}

/// The device memory new buffers are placed in (`ENODEV`: none bound).
pub(crate) fn current() -> Result<Arc<Vram>> {
    if !REGISTRY_READY.load(Ordering::Acquire) {
        return Err(ENODEV);
    }
    DEVMEM.lock().as_ref().cloned().ok_or(ENODEV)
}

/// Makes `vram` the device memory new buffers go to (`EBUSY` if another is).
pub(crate) fn publish(vram: &Arc<Vram>) -> Result {
    if !REGISTRY_READY.load(Ordering::Acquire) {
        return Err(ENODEV);
    }
    let mut slot = DEVMEM.lock();
    if slot.is_some() {
        return Err(EBUSY);
    }
    *slot = Some(vram.clone());
    Ok(())
}

/// Withdraws `vram`, if it is the published one.
pub(crate) fn withdraw(vram: &Arc<Vram>) {
    if !REGISTRY_READY.load(Ordering::Acquire) {
        return;
    }
    let mut slot = DEVMEM.lock();
    if matches!(slot.as_ref(), Some(v) if Arc::ptr_eq(v, vram)) {
        *slot = None;
    }
}
