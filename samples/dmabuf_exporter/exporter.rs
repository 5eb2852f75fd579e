// SPDX-License-Identifier: GPL-2.0

//! The exporter: a buffer of page chunks that can move to new pages.
//!
//! The exported table has one entry per chunk (a chunk is `2^order`
//! physically contiguous pages), so a layout of chunk sizes gives importers
//! single-page entries, large entries or a mix. A dynamic buffer can migrate:
//! under its reservation lock it gets new pages, a `DMA_RESV_USAGE_KERNEL`
//! fence and an invalidation to every importer; a work item copies the old
//! contents and then signals the fence, so importers that re-map must wait
//! for it. A pinned buffer refuses to migrate.
//!
//! A dynamic buffer may also live in device memory (a PCI BAR made
//! peer-to-peer memory, [`crate::devmem`]), as GPU VRAM does. An importer
//! whose device reaches the BAR peer-to-peer gets a table of bus addresses
//! in it; for any other importer the buffer first moves to system memory,
//! inside its map (or pin) callback, with every other importer told, as
//! amdgpu and xe do; a buffer pinned in device memory refuses such an
//! importer with `EBUSY`.
//!
//! A revocable buffer follows vfio-pci's rules for the dma-bufs of a BAR:
//! only importers that can be revoked may attach, and [`revoke`] takes the
//! memory away from all of them, waiting until each has unmapped. Every
//! dynamic buffer measures how fast its importers follow an invalidation
//! ([`latency`]).

#![forbid(unsafe_code)]

use crate::abs::bufs::{self, ListSlot};
use crate::abs::p2p::{self, P2pTable, Vram, VramSet};
use crate::abs::page::{ChunkSet, PageTable, MAX_CHUNK_ORDER};
use crate::abs::table::BufTable;
use crate::abs::workqueue::{msleep, OwnedQueue};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::dma::DataDirection;
use kernel::dma_buf::export::MoveFence as Fence;
use kernel::dma_buf::export::{self, BufLocked, Exported, Exporter, Fault};
use kernel::dma_buf::{Attachment, DmaBuf};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, CondVarTimeoutResult, Mutex, UniqueArc};
use kernel::time::{msecs_to_jiffies, Instant, Monotonic};

/// Largest buffer (1 GiB).
pub(crate) const MAX_SIZE: usize = 1 << 30;
/// Most chunks in a layout.
pub(crate) const MAX_CHUNKS: usize = 65536;
/// Longest fence delay of a migration, in milliseconds.
pub(crate) const MAX_DELAY_MS: u32 = 10_000;

const NAME: &kernel::str::CStr = kernel::c_str!("dmabuf_exporter_rs");

/// Counters of a buffer (the STATS ioctl).
#[derive(Default)]
struct Stats {
    attachments: AtomicU64,
    pins: AtomicU64,
    mappings: AtomicU64,
    maps: AtomicU64,
    migrations: AtomicU64,
    move_notifies: AtomicU64,
    p2p_maps: AtomicU64,
    unrestored: AtomicU64,
}

/// A snapshot of a buffer's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatsSnapshot {
    /// Live attachments.
    pub(crate) attachments: u64,
    /// Live pins.
    pub(crate) pins: u64,
    /// Live mappings.
    pub(crate) mappings: u64,
    /// Mappings made so far.
    pub(crate) maps: u64,
    /// Migrations so far.
    pub(crate) migrations: u64,
    /// Attachments notified of a move so far.
    pub(crate) move_notifies: u64,
    /// Mappings of device memory (peer-to-peer) made so far.
    pub(crate) p2p_maps: u64,
    /// Tables given back changed (an importer that trimmed one and did not
    /// restore it); only tables of device memory are checked.
    pub(crate) unrestored: u64,
    /// Where the buffer is now.
    pub(crate) placement: Placement,
    /// In device memory as one range of the BAR: the offset of its first
    /// byte there.
    pub(crate) bar_offset: Option<u64>,
}

/// Where a buffer's memory is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Placement {
    /// System pages.
    #[default]
    System,
    /// Device memory, reached peer-to-peer.
    Device,
}

/// A buffer's memory.
#[derive(Clone)]
enum Store {
    System(Arc<ChunkSet>),
    Device(Arc<VramSet>),
}

impl Store {
    /// Allocates zeroed memory of layout `orders` in `placement`.
    fn new(orders: &[u32], placement: Placement) -> Result<Self> {
        Ok(match placement {
            Placement::System => Store::System(Arc::new(ChunkSet::new(orders)?, GFP_KERNEL)?),
            Placement::Device => {
                let set = VramSet::new_in(&p2p::current()?, orders)?;
                Store::Device(Arc::new(set, GFP_KERNEL)?)
            }
        })
    }

    fn placement(&self) -> Placement {
        match self {
            Store::System(_) => Placement::System,
            Store::Device(_) => Placement::Device,
        }
    }

    /// Copies the contents of `src` (same layout).
    fn copy_from(&self, src: &Store) -> Result {
        match (self, src) {
            (Store::System(to), Store::System(from)) => to.copy_from(&**from),
            (Store::System(to), Store::Device(from)) => to.copy_from(&**from),
            (Store::Device(to), Store::System(from)) => to.copy_from(&**from),
            (Store::Device(to), Store::Device(from)) => to.copy_from(&**from),
        }
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        match self {
            Store::System(s) => s.read(offset, out),
            Store::Device(s) => s.read(offset, out),
        }
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result {
        match self {
            Store::System(s) => s.write(offset, data),
            Store::Device(s) => s.write(offset, data),
        }
    }
}

/// Samples of one kind a buffer keeps until they are read
/// (`DMABUF_EXP_LATENCY_SAMPLES`).
pub(crate) const LATENCY_SAMPLES: usize = 256;

/// Up to [`LATENCY_SAMPLES`] durations in nanoseconds, allocated up front:
/// they are taken in the map and unmap callbacks, which do not allocate.
struct Samples(KVec<u64>);

impl Samples {
    /// Room for [`LATENCY_SAMPLES`], or none (`keep` false: a static buffer).
    fn new(keep: bool) -> Result<Self> {
        let room = if keep { LATENCY_SAMPLES } else { 0 };
        Ok(Self(KVec::with_capacity(room, GFP_KERNEL)?))
    }

    /// Keeps `ns`, or counts it in `dropped` when full.
    fn push(&mut self, ns: u64, dropped: &mut u64) {
        if self.0.len() >= LATENCY_SAMPLES || self.0.push_within_capacity(ns).is_err() {
            *dropped += 1;
        }
    }
}

/// How fast the importers of a buffer followed its invalidations.
///
/// # Invariants
///
/// Changed only with the buffer's reservation lock held (from the map and
/// unmap callbacks and from invalidations), so that an invalidation, the
/// unmaps it causes and the next map are seen in the order they happened.
struct Latency {
    /// The last invalidation of a mapped buffer, while it has mappings not
    /// yet unmapped or no map since.
    since: Option<Instant<Monotonic>>,
    /// Mappings live at that invalidation and not unmapped since.
    pending: u64,
    /// No map since that invalidation.
    remap_due: bool,
    unmap: Samples,
    remap: Samples,
    dropped: u64,
}

impl Latency {
    /// Keeping samples if `keep` (a dynamic buffer).
    fn new(keep: bool) -> Result<Self> {
        Ok(Self {
            since: None,
            pending: 0,
            remap_due: false,
            unmap: Samples::new(keep)?,
            remap: Samples::new(keep)?,
            dropped: 0,
        })
    }

    /// An invalidation with `mappings` live mappings.
    fn invalidated(&mut self, mappings: u64) {
        // Unmaps still due of an earlier one end its samples.
        self.dropped += self.pending;
        self.pending = mappings;
        self.remap_due = mappings > 0;
        self.since = (mappings > 0).then(Instant::now);
    }

    /// Nanoseconds since the last invalidation.
    fn elapsed_ns(&self) -> Option<u64> {
        let since = self.since?;
        u64::try_from(since.elapsed().as_nanos()).ok()
    }

    /// A mapping was unmapped.
    fn unmapped(&mut self) {
        if self.pending == 0 {
            return;
        }
        self.pending -= 1;
        if let Some(ns) = self.elapsed_ns() {
            self.unmap.push(ns, &mut self.dropped);
        }
    }

    /// A mapping was made.
    fn mapped(&mut self) {
        if !self.remap_due {
            return;
        }
        self.remap_due = false;
        if let Some(ns) = self.elapsed_ns() {
            self.remap.push(ns, &mut self.dropped);
        }
    }
}

/// Buffers exported and not yet released.
static LIVE: AtomicU64 = AtomicU64::new(0);

/// Number of buffers exported and not yet released (for leak tests).
#[cfg(umem_kunit)]
pub(crate) fn live_buffers() -> u64 {
    LIVE.load(Ordering::Relaxed)
}

/// One buffer in [`LIVE`], for as long as it exists.
struct Live;

impl Live {
    fn new() -> Self {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Live
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The private data of an exported buffer.
#[pin_data]
pub(crate) struct Buffer {
    size: usize,
    orders: KVec<u32>,
    dynamic: bool,
    /// The current backing store; mapped tables keep the one they map.
    #[pin]
    store: Mutex<Store>,
    stats: Stats,
    /// Test aids: the errno every pin, and every map, fails with (0: none);
    /// see [`inject`] and [`migrate`].
    fail_pin: AtomicU32,
    fail_map: AtomicU32,
    /// Follows vfio-pci's rules: revocable importers only, [`revoke`].
    revocable: bool,
    /// Revoked: attachments and maps fail with `ENODEV`. Changed under the
    /// reservation lock.
    revoked: AtomicBool,
    /// Invalidation latencies, under the reservation lock (see [`Latency`]).
    #[pin]
    latency: Mutex<Latency>,
    /// Notified, with `latency` locked, when a mapping is unmapped.
    #[pin]
    unmapped: CondVar,
    /// Runs the copies of migrations; drained before the buffer is freed.
    copies: OwnedQueue,
    /// Its entry in the list of buffers a device's unbind moves out of its
    /// memory (dynamic buffers only).
    listed: ListSlot,
    _live: Live,
}

/// A buffer as seen by the dma-buf core: `D` says whether it is dynamic.
#[pin_data]
pub(crate) struct Exp<const D: bool> {
    #[pin]
    buf: Buffer,
}

type DynamicExp = Exp<true>;
type StaticExp = Exp<false>;

/// The [`Exporter`] of a buffer kind, with `$extra` callbacks besides the
/// common ones. Written as one macro because `#[vtable]` sees which
/// callbacks an `impl` block has: a dynamic buffer has pin and unpin, a static
/// one has not.
macro_rules! exporter_impl {
    ($t:ty, $($extra:tt)*) => {
        #[vtable]
        impl Exporter for $t {
            type Table = BufTable;
            const OPS: &'static export::ExporterOps<Self> = kernel::dma_buf_exporter_ops!($t);

            fn attach(&self, attach: &Attachment) -> Result {
                // vfio-pci's order: revoked, then an importer that could
                // not be revoked.
                if self.buf.revocable {
                    if self.buf.revoked.load(Ordering::Relaxed) {
                        return Err(ENODEV);
                    }
                    if !attach.revocable() {
                        return Err(EOPNOTSUPP);
                    }
                }
                self.buf.stats.attachments.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }

            fn detach(&self, _attach: &Attachment) {
                self.buf.stats.attachments.fetch_sub(1, Ordering::Relaxed);
            }

            fn map(
                &self,
                attach: &Attachment,
                locked: &BufLocked<'_>,
                dir: DataDirection,
            ) -> Result<KBox<BufTable>> {
                injected(&self.buf.fail_map)?;
                if self.buf.revoked.load(Ordering::Relaxed) {
                    return Err(ENODEV);
                }
                let table = match self.buf.store_for(attach, locked)? {
                    Store::System(pages) => BufTable::pages(PageTable::new(pages, attach, dir)?)?,
                    Store::Device(set) => {
                        let table = P2pTable::new(set, attach, locked, dir)?;
                        let table = BufTable::p2p(table, attach, locked)?;
                        self.buf.stats.p2p_maps.fetch_add(1, Ordering::Relaxed);
                        table
                    }
                };
                self.buf.stats.mappings.fetch_add(1, Ordering::Relaxed);
                self.buf.stats.maps.fetch_add(1, Ordering::Relaxed);
                self.buf.latency.lock().mapped();
                Ok(table)
            }

            fn unmap(&self, attach: &Attachment, locked: &BufLocked<'_>, table: KBox<BufTable>) {
                if !table.intact() {
                    self.buf.stats.unrestored.fetch_add(1, Ordering::Relaxed);
                }
                table.free(attach, locked);
                let mut latency = self.buf.latency.lock();
                self.buf.stats.mappings.fetch_sub(1, Ordering::Relaxed);
                latency.unmapped();
                drop(latency);
                self.buf.unmapped.notify_all();
            }

            fn fault(&self, dmabuf: &DmaBuf, index: usize, fault: &mut Fault<'_>) -> Result {
                // Under the reservation lock a migration cannot switch the
                // store (and zap mappings) between choosing the page and
                // mapping it; after the fence wait the store's contents are
                // complete.
                let guard = dmabuf.resv().lock()?;
                guard.wait_kernel_fences()?;
                let store = self.buf.store.lock().clone();
                let r = match store {
                    Store::System(pages) => pages.install(fault, index),
                    Store::Device(vram) => vram.install(fault, index),
                };
                drop(guard);
                r
            }

            fn begin_cpu_access(&self, dmabuf: &DmaBuf) -> Result {
                // CPU access after a migration sees the copied contents.
                dmabuf.resv().lock()?.wait_kernel_fences()
            }

            $($extra)*
        }
    };
}

exporter_impl! { StaticExp, }

exporter_impl! {
    DynamicExp,
    fn pin(&self, attach: &Attachment, locked: &BufLocked<'_>) -> Result {
        injected(&self.buf.fail_pin)?;
        // Pinned where the importer reaches it: out of device memory first
        // for one that does not.
        self.buf.store_for(attach, locked)?;
        self.buf.stats.pins.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn unpin(&self, _attach: &Attachment, _locked: &BufLocked<'_>) {
        self.buf.stats.pins.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Converts chunk sizes in pages (powers of two up to 512) to orders; no
/// chunks means one page per chunk.
fn layout(size: usize, chunk_pages: &[u32]) -> Result<KVec<u32>> {
    if size == 0 || size % PAGE_SIZE != 0 || size > MAX_SIZE {
        return Err(EINVAL);
    }
    let pages = size / PAGE_SIZE;
    let mut orders = KVec::new();
    if chunk_pages.is_empty() {
        for _ in 0..pages {
            orders.push(0, GFP_KERNEL)?;
        }
        return Ok(orders);
    }
    if chunk_pages.len() > MAX_CHUNKS {
        return Err(EINVAL);
    }
    let mut total: usize = 0;
    for &n in chunk_pages {
        if n == 0 || !n.is_power_of_two() || n.trailing_zeros() > MAX_CHUNK_ORDER {
            return Err(EINVAL);
        }
        orders.push(n.trailing_zeros(), GFP_KERNEL)?;
        total = total.checked_add(n as usize).ok_or(EINVAL)?;
    }
    if total != pages {
        return Err(EINVAL);
    }
    Ok(orders)
}

/// What a buffer lets its importers do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// No pin, no migration: importers map it once.
    Static,
    /// Pins, migrations, invalidations.
    Dynamic,
    /// [`Kind::Dynamic`] under vfio-pci's rules: only importers that can be
    /// revoked may attach, and it can be revoked ([`revoke`]).
    Revocable,
}

/// Exports a new zeroed buffer of `size` bytes with the given chunk layout,
/// in system memory (for the KUnit suites).
#[cfg(umem_kunit)]
pub(crate) fn create(size: usize, chunk_pages: &[u32], dynamic: bool) -> Result<ARef<DmaBuf>> {
    let kind = if dynamic { Kind::Dynamic } else { Kind::Static };
    create_in(size, chunk_pages, kind, Placement::System)
}

/// Exports a new zeroed buffer in `placement`: `EINVAL` for a static buffer
/// in device memory (it could never leave it), `ENODEV` without device
/// memory, `ENOMEM` when it is full.
pub(crate) fn create_in(
    size: usize,
    chunk_pages: &[u32],
    kind: Kind,
    placement: Placement,
) -> Result<ARef<DmaBuf>> {
    let orders = layout(size, chunk_pages)?;
    let dynamic = kind != Kind::Static;
    if placement == Placement::Device && !dynamic {
        return Err(EINVAL);
    }
    let store = Store::new(&orders, placement)?;
    let buf = try_pin_init!(Buffer {
        size,
        orders,
        dynamic,
        store <- new_mutex!(store),
        stats: Stats::default(),
        fail_pin: AtomicU32::new(0),
        fail_map: AtomicU32::new(0),
        revocable: kind == Kind::Revocable,
        revoked: AtomicBool::new(false),
        latency <- new_mutex!(Latency::new(kind != Kind::Static)?),
        unmapped <- new_condvar!(),
        copies: OwnedQueue::new(NAME)?,
        listed: ListSlot::new(),
        _live: Live::new(),
    });
    if dynamic {
        let exp = UniqueArc::pin_init(try_pin_init!(DynamicExp { buf <- buf }), GFP_KERNEL)?;
        bufs::export_listed(NAME, exp, size, |exp: &DynamicExp| &exp.buf.listed)
    } else {
        let exp = Arc::pin_init(try_pin_init!(StaticExp { buf <- buf }), GFP_KERNEL)?;
        export::export(NAME, exp, size)
    }
}

/// The buffer behind `dmabuf`, if this module exported it.
/// The sample's own view of one of its buffers, with the exporter's powers
/// (`EINVAL` for a buffer of another exporter).
fn exported(dmabuf: &DmaBuf) -> Result<Exported<'_>> {
    dmabuf
        .exported::<DynamicExp>()
        .or_else(|| dmabuf.exported::<StaticExp>())
        .ok_or(EINVAL)
}

fn buffer(dmabuf: &DmaBuf) -> Result<&Buffer> {
    if let Some(exp) = dmabuf.exporter::<DynamicExp>() {
        return Ok(&exp.buf);
    }
    dmabuf
        .exporter::<StaticExp>()
        .map(|exp| &exp.buf)
        .ok_or(EINVAL)
}

/// The largest errno (`MAX_ERRNO`).
const MAX_ERRNO: u32 = 4095;
/// `EIO` as a positive number, what `DMABUF_EXP_MIGRATE_F_FAIL_MAPS` sets.
const EIO_ERRNO: u32 = kernel::bindings::EIO;

/// The injected failure `fail` holds, if any.
fn injected(fail: &AtomicU32) -> Result {
    match fail.load(Ordering::Relaxed) {
        0 => Ok(()),
        // CAST: at most `MAX_ERRNO` (checked by `inject`).
        e => Err(Error::from_errno(-(e as i32))),
    }
}

/// Makes every later pin of the buffer fail with `pin_errno`, every later
/// map with `map_errno` (0: succeed again). A test aid for importers' error
/// paths. `EINVAL`: not one of ours, or an errno above `MAX_ERRNO`.
pub(crate) fn inject(dmabuf: &DmaBuf, pin_errno: u32, map_errno: u32) -> Result {
    let buf = buffer(dmabuf)?;
    if pin_errno > MAX_ERRNO || map_errno > MAX_ERRNO {
        return Err(EINVAL);
    }
    buf.fail_pin.store(pin_errno, Ordering::Relaxed);
    buf.fail_map.store(map_errno, Ordering::Relaxed);
    Ok(())
}

/// Moves a dynamic buffer to new pages; the copy of the contents completes
/// `delay_ms` later (at least), signalled by a kernel fence.
///
/// `EINVAL`: not one of ours, or a delay above [`MAX_DELAY_MS`];
/// `EOPNOTSUPP`: a static buffer (importers cannot be told);
/// `EBUSY`: pinned by an importer. With `fail_maps`, every later map fails
/// with `EIO` until a migration without it (a test aid).
#[cfg(umem_kunit)]
pub(crate) fn migrate(dmabuf: &DmaBuf, delay_ms: u32, fail_maps: bool) -> Result {
    migrate_to(dmabuf, delay_ms, fail_maps, None)
}

/// [`migrate`], to `to` (`None`: where the buffer is now): `ENODEV` for
/// device memory when there is none.
pub(crate) fn migrate_to(
    dmabuf: &DmaBuf,
    delay_ms: u32,
    fail_maps: bool,
    to: Option<Placement>,
) -> Result {
    let buf = buffer(dmabuf)?;
    if delay_ms > MAX_DELAY_MS {
        return Err(EINVAL);
    }
    if !buf.dynamic {
        return Err(EOPNOTSUPP);
    }
    let guard = exported(dmabuf)?.lock()?;
    // The previous migration's copy must be complete before it is copied again.
    guard.wait_kernel_fences()?;
    if buf.stats.pins.load(Ordering::Relaxed) > 0 {
        return Err(EBUSY);
    }
    let placement = to.unwrap_or_else(|| buf.store.lock().placement());
    let new = Store::new(&buf.orders, placement)?;
    let fence = Fence::new()?;
    guard.add_kernel_fence(&fence)?;
    let old = core::mem::replace(&mut *buf.store.lock(), new.clone());
    let fail_map = if fail_maps { EIO_ERRNO } else { 0 };
    buf.fail_map.store(fail_map, Ordering::Relaxed);
    buf.moved(&guard);
    drop(guard);

    let copy = PendingCopy {
        new,
        old,
        fence,
        delay_ms,
    };
    // If the work cannot be queued, the closure is dropped unrun and
    // `PendingCopy::drop` copies and signals here instead.
    let _ = buf.copies.queue().try_spawn(GFP_KERNEL, move || drop(copy));
    Ok(())
}

impl Buffer {
    /// After a move: zaps CPU mappings, tells every importer
    /// (`dma_buf_invalidate_mappings`), counts.
    fn moved(&self, locked: &BufLocked<'_>) {
        locked.zap_cpu_mappings();
        let notified = self.stats.attachments.load(Ordering::Relaxed);
        self.invalidate(locked);
        self.stats
            .move_notifies
            .fetch_add(notified, Ordering::Relaxed);
        self.stats.migrations.fetch_add(1, Ordering::Relaxed);
    }

    /// Tells every importer to stop using its mappings
    /// (`dma_buf_invalidate_mappings`), timing how long they take to unmap.
    fn invalidate(&self, locked: &BufLocked<'_>) {
        let mappings = self.stats.mappings.load(Ordering::Relaxed);
        self.latency.lock().invalidated(mappings);
        locked.invalidate_mappings();
    }

    /// The memory to map or pin for `attach`: the current store, unless it is
    /// device memory the attachment's device does not reach; the buffer then
    /// moves to system memory first (`EBUSY` if it is pinned). The copy is
    /// made here, after every importer was told, while the lock keeps every
    /// access out.
    fn store_for(&self, attach: &Attachment, locked: &BufLocked<'_>) -> Result<Store> {
        let store = self.store.lock().clone();
        let Store::Device(set) = &store else {
            return Ok(store);
        };
        if set.reaches(attach) {
            return Ok(store);
        }
        self.to_system(&store, locked)
    }

    /// Moves the buffer from `store`, its device memory, to system memory,
    /// with every importer told (`EBUSY` if it is pinned). The copy is made
    /// after that, while the lock keeps every access out.
    fn to_system(&self, store: &Store, locked: &BufLocked<'_>) -> Result<Store> {
        if self.stats.pins.load(Ordering::Relaxed) > 0 {
            return Err(EBUSY);
        }
        // A pending copy into the device memory must be complete first.
        locked.wait_kernel_fences()?;
        let new = Store::new(&self.orders, Placement::System)?;
        *self.store.lock() = new.clone();
        self.moved(locked);
        new.copy_from(store)?;
        Ok(new)
    }
}

/// What [`revoke`] did to the buffers in a device's memory.
#[derive(Default)]
pub(crate) struct Revoked {
    /// Moved to system memory.
    pub(crate) moved: usize,
    /// Of those, buffers that were pinned by revocable importers only: they
    /// were revoked first.
    pub(crate) revoked: usize,
    /// Pinned there by an importer that cannot be revoked (`EBUSY`).
    pub(crate) pinned: usize,
    /// Could not move for another reason (no system memory for them).
    pub(crate) failed: usize,
    /// The last such reason.
    pub(crate) error: Option<Error>,
}

/// Revokes `vram`, whose device is being unbound: every buffer in it moves
/// to system memory, its importers told first, as a GPU driver evicts VRAM
/// (and vfio-pci revokes a BAR) instead of waiting for userspace. A pinned
/// buffer's importers are told first when `revoke_pinned` is set (the
/// unbind's first pass): a revocable pinned importer then unmaps and unpins
/// in its callback, under the lock, as vfio-pci's revocation has it do. The
/// buffer moves if no pin is left. Allocates nothing to find the buffers;
/// says how many moved and how many could not (the unbind waits for those).
pub(crate) fn revoke(vram: &Arc<Vram>, revoke_pinned: bool) -> Revoked {
    let mut done = Revoked::default();
    let mut cursor = 0;
    while let Some(dmabuf) = bufs::next_after(cursor) {
        // CAST: the walk's cursor is the buffer's address.
        cursor = dmabuf.as_raw() as usize;
        let (Some(exp), Some(exported)) = (
            dmabuf.exporter::<DynamicExp>(),
            dmabuf.exported::<DynamicExp>(),
        ) else {
            continue;
        };
        let buf = &exp.buf;
        let guard = match exported.lock() {
            Ok(guard) => guard,
            Err(e) => {
                done.failed += 1;
                done.error = Some(e);
                continue;
            }
        };
        let store = buf.store.lock().clone();
        if !matches!(&store, Store::Device(set) if set.is_in(vram)) {
            continue;
        }
        let pinned = buf.stats.pins.load(Ordering::Relaxed) > 0;
        if pinned && revoke_pinned {
            buf.invalidate(&guard);
        }
        match buf.to_system(&store, &guard) {
            Ok(_) => {
                done.moved += 1;
                done.revoked += usize::from(pinned);
            }
            Err(e) if e == EBUSY => done.pinned += 1,
            Err(e) => {
                done.failed += 1;
                done.error = Some(e);
            }
        }
    }
    done
}

/// What [`revoke_buffer`] measured.
pub(crate) struct Revocation {
    /// From the invalidation until the last mapping was unmapped, in
    /// nanoseconds (0 without mappings).
    pub(crate) wait_ns: u64,
    /// Mappings unmapped in that time.
    pub(crate) unmapped: u64,
}

/// Revokes a revocable buffer (`restore` false) as vfio-pci does when its
/// device's memory goes away, or restores it.
///
/// Revoking marks the buffer revoked and invalidates every mapping under the
/// reservation lock, waits for pending fences, then waits without the lock
/// until every mapping is unmapped, as `vfio_pci_dma_buf_move()` waits, but
/// interruptibly: `EINTR` on a signal, the buffer staying revoked.
/// `EINVAL`: not one of ours, or not revocable; `EALREADY`: already in
/// that state.
pub(crate) fn revoke_buffer(dmabuf: &DmaBuf, restore: bool) -> Result<Revocation> {
    let buf = buffer(dmabuf)?;
    if !buf.revocable {
        return Err(EINVAL);
    }
    let guard = exported(dmabuf)?.lock()?;
    if buf.revoked.load(Ordering::Relaxed) != restore {
        return Err(EALREADY);
    }
    buf.revoked.store(!restore, Ordering::Relaxed);
    if restore {
        return Ok(Revocation {
            wait_ns: 0,
            unmapped: 0,
        });
    }
    let start = Instant::<Monotonic>::now();
    let before = buf.stats.mappings.load(Ordering::Relaxed);
    buf.invalidate(&guard);
    let fenced = guard.wait_kernel_fences();
    drop(guard);
    fenced?;
    // Revoked, no new mapping can be made: the count only goes down.
    let mut latency = buf.latency.lock();
    while buf.stats.mappings.load(Ordering::Relaxed) > 0 {
        let woke = buf
            .unmapped
            .wait_interruptible_timeout(&mut latency, msecs_to_jiffies(100));
        if let CondVarTimeoutResult::Signal { .. } = woke {
            return Err(EINTR);
        }
    }
    drop(latency);
    let wait_ns = if before > 0 {
        u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    } else {
        0
    };
    Ok(Revocation {
        wait_ns,
        unmapped: before,
    })
}

/// Samples of [`latency`]: nanoseconds from an invalidation to each unmap
/// of a mapping it found, and to the next map.
pub(crate) struct LatencySamples {
    /// Invalidation to unmap.
    pub(crate) unmap: KVec<u64>,
    /// Invalidation to the next map.
    pub(crate) remap: KVec<u64>,
    /// Samples lost: more than [`LATENCY_SAMPLES`] of a kind, or the unmaps
    /// still due of an invalidation that a new one ended.
    pub(crate) dropped: u64,
}

/// The latency samples of a dynamic buffer taken since the last call, which
/// it forgets. `EINVAL`: not one of ours, or static.
pub(crate) fn latency(dmabuf: &DmaBuf) -> Result<LatencySamples> {
    let buf = buffer(dmabuf)?;
    if !buf.dynamic {
        return Err(EINVAL);
    }
    // Fresh vectors swapped in, allocated before the locks are taken.
    let mut unmap = Samples::new(true)?;
    let mut remap = Samples::new(true)?;
    let guard = exported(dmabuf)?.lock()?;
    let mut l = buf.latency.lock();
    core::mem::swap(&mut l.unmap, &mut unmap);
    core::mem::swap(&mut l.remap, &mut remap);
    let dropped = core::mem::take(&mut l.dropped);
    drop(l);
    drop(guard);
    let (unmap, remap) = (unmap.0, remap.0);
    Ok(LatencySamples {
        unmap,
        remap,
        dropped,
    })
}

/// The copy of a migration. It runs when dropped, so the fence is signalled
/// however the work ends (run by the queue, or dropped unqueued).
struct PendingCopy {
    new: Store,
    old: Store,
    fence: Fence,
    delay_ms: u32,
}

impl Drop for PendingCopy {
    fn drop(&mut self) {
        msleep(self.delay_ms);
        if self.new.copy_from(&self.old).is_err() {
            pr_err!("migration copy failed\n");
        }
        self.fence.signal();
    }
}

/// The counters of `dmabuf`.
pub(crate) fn stats(dmabuf: &DmaBuf) -> Result<StatsSnapshot> {
    let buf = buffer(dmabuf)?;
    let s = &buf.stats;
    let store = buf.store.lock().clone();
    Ok(StatsSnapshot {
        attachments: s.attachments.load(Ordering::Relaxed),
        pins: s.pins.load(Ordering::Relaxed),
        mappings: s.mappings.load(Ordering::Relaxed),
        maps: s.maps.load(Ordering::Relaxed),
        migrations: s.migrations.load(Ordering::Relaxed),
        move_notifies: s.move_notifies.load(Ordering::Relaxed),
        p2p_maps: s.p2p_maps.load(Ordering::Relaxed),
        unrestored: s.unrestored.load(Ordering::Relaxed),
        placement: store.placement(),
        bar_offset: match &store {
            Store::Device(set) => set.bar_offset(),
            Store::System(_) => None,
        },
    })
}

/// Reads the current contents (after any pending migration copy).
pub(crate) fn read(dmabuf: &DmaBuf, offset: usize, out: &mut [u8]) -> Result {
    let buf = buffer(dmabuf)?;
    let guard = dmabuf.resv().lock()?;
    guard.wait_kernel_fences()?;
    let store = buf.store.lock().clone();
    // Copied under the reservation lock, as `write` copies: a write or a
    // migration (both take it) cannot change the bytes halfway.
    let r = store.read(offset, out);
    drop(guard);
    r
}

/// Writes the current contents (after any pending migration copy).
pub(crate) fn write(dmabuf: &DmaBuf, offset: usize, data: &[u8]) -> Result {
    let buf = buffer(dmabuf)?;
    let guard = dmabuf.resv().lock()?;
    guard.wait_kernel_fences()?;
    let store = buf.store.lock().clone();
    let r = store.write(offset, data);
    drop(guard);
    r
}
