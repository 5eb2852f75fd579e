// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `dmabuf_exporter_rs`: the exporter on its own. The C suite
//! `dmabuf_exporter_rs_ib` (`exp_kunit.c`) runs it with ib_core's importer.

#![forbid(unsafe_code)]

use crate::abs::page::{max_seg_size, Backing, ChunkSet};
use crate::abs::probe::{case_device, entries, Stamp};
use crate::abs::workqueue::msleep;
use crate::exporter::{self, Kind, Placement, StatsSnapshot, MAX_DELAY_MS, MAX_SIZE};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::device::{Bound, Device};
use kernel::dma_buf::import::{flush_delayed_releases, Import, OwnedImport};
use kernel::dma_buf::{DmaBuf, Importer, LockedAttachment};
use kernel::kunit::Test;
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::{kunit_expect, kunit_expect_eq};

const P: usize = PAGE_SIZE;

/// A dynamic importer that counts the moves it is told of; its import
/// unmaps its mapping after each, as an RDMA driver does.
#[pin_data]
struct Probe {
    notified: AtomicU32,
}

struct ProbeImporter;

#[vtable]
impl Importer for ProbeImporter {
    type Priv = Probe;
    const ALLOW_PEER2PEER: bool = false;

    fn invalidate_mappings(probe: &Probe, _attach: LockedAttachment<'_, '_>) {
        probe.notified.fetch_add(1, Ordering::Relaxed);
    }
}

/// An importer that cannot be revoked: it has no `invalidate_mappings`.
struct Unrevocable;

#[vtable]
impl Importer for Unrevocable {
    type Priv = Probe;
    const ALLOW_PEER2PEER: bool = false;
}

fn probe() -> impl PinInit<Probe, Error> {
    try_pin_init!(Probe {
        notified: AtomicU32::new(0),
    })
}

/// Maps unless the import holds a mapping already (under the lock, and
/// waiting for kernel fences, as an importer must: `ImportGuard::map`) and
/// returns the DMA entries of the import's mapping.
fn map(import: &Import<ProbeImporter>) -> Result<KVec<(u64, u32)>> {
    let mut guard = import.lock()?;
    if !guard.is_mapped() {
        guard.map()?;
    }
    guard.with_mapping(|m| entries(m)).ok_or(EINVAL)?
}

/// Unmaps what the import holds (a refused lock leaves it mapped, which the
/// callers' counts of mappings then show).
fn unmap(import: &Import<ProbeImporter>) {
    if let Ok(mut guard) = import.lock() {
        guard.unmap();
    }
}

fn pattern(len: usize, seed: u8) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
    for i in 0..len {
        // CAST: deliberately keeps the low byte.
        v.push((i as u8).wrapping_mul(31).wrapping_add(seed), GFP_KERNEL)?;
    }
    Ok(v)
}

fn setup(t: &Test, size: usize, chunks: &[u32], dynamic: bool) -> Option<ARef<DmaBuf>> {
    match exporter::create(size, chunks, dynamic) {
        Ok(b) => Some(b),
        Err(e) => {
            t.fail(format_args!(
                "create({size}, {chunks:?}, {dynamic}) failed: {e:?}"
            ));
            None
        }
    }
}

/// The importing device of a case (one per case: KUnit names a driver after it).
fn device(t: &Test) -> Option<&Device<Bound>> {
    match case_device(t, kernel::c_str!("dmabuf_exporter_rs_test")) {
        Ok(dev) => Some(dev),
        Err(e) => {
            t.fail(format_args!("no DMA-capable KUnit device: {e:?}"));
            None
        }
    }
}

fn import(
    t: &Test,
    dev: &Device<Bound>,
    dmabuf: &ARef<DmaBuf>,
) -> Option<OwnedImport<ProbeImporter>> {
    match OwnedImport::new(dmabuf.clone(), dev, probe()) {
        Ok(i) => Some(i),
        Err(e) => {
            t.fail(format_args!("attach failed: {e:?}"));
            None
        }
    }
}

/// The import of `owned` while `dev`, its device, is bound.
fn access<'a>(
    t: &Test,
    owned: &'a OwnedImport<ProbeImporter>,
    dev: &'a Device<Bound>,
) -> Option<&'a Import<ProbeImporter>> {
    match owned.access(dev) {
        Ok(i) => Some(i),
        Err(e) => {
            t.fail(format_args!("import not accessible: {e:?}"));
            None
        }
    }
}

fn create_layouts(t: &Test) {
    let mixed = [1u32, 4, 1, 8, 2];
    // The KUnit device has no DMA parameters: 64 KiB segments at most, so a
    // 2 MiB chunk is mapped as 32 entries.
    let cases: [(usize, &[u32], usize); 3] = [
        (8 * P, &[], 8),             // one page per entry
        (1024 * P, &[512, 512], 64), // two 2 MiB chunks
        (16 * P, &mixed, 5),         // mixed
    ];
    let Some(dev) = device(t) else { return };
    let mut checked = 0;
    for dynamic in [false, true] {
        for (size, chunks, nents) in cases {
            let Some(buf) = setup(t, size, chunks, dynamic) else {
                return;
            };
            // The exporter's #[vtable]: pin/unpin only on dynamic buffers.
            kunit_expect_eq!(t, buf.is_dynamic(), dynamic);
            let Some(owned) = import(t, dev, &buf) else {
                return;
            };
            let Some(imp) = access(t, &owned, dev) else {
                return;
            };
            let Ok(entries) = map(imp) else {
                return t.fail(format_args!("map failed"));
            };
            kunit_expect_eq!(t, entries.len(), nents);
            let total: usize = entries.iter().map(|&(_, len)| len as usize).sum();
            kunit_expect_eq!(t, total, size);
            // Each chunk is mapped as pieces of at most the device's segment size.
            let seg = max_seg_size(imp.attachment());
            let pages: &[u32] = if chunks.is_empty() { &[1; 8] } else { chunks };
            let mut want = KVec::new();
            for &n in pages {
                let mut left = n as usize * P;
                while left > 0 {
                    let piece = core::cmp::min(left, seg);
                    if want.push(piece, GFP_KERNEL).is_err() {
                        return;
                    }
                    left -= piece;
                }
            }
            kunit_expect_eq!(t, entries.len(), want.len());
            for (&(addr, len), &w) in entries.iter().zip(want.iter()) {
                kunit_expect!(t, addr % P as u64 == 0);
                kunit_expect_eq!(t, len as usize, w);
            }
            unmap(imp);
            drop(owned);
            kunit_expect_eq!(
                t,
                exporter::stats(&buf).map(|s| (s.attachments, s.mappings)),
                Ok((0, 0))
            );
            checked += 1;
        }
    }
    // Every layout was really mapped (no early exit).
    kunit_expect_eq!(t, checked, 6);
}

fn create_rejects(t: &Test) {
    let bad: [(usize, &[u32]); 7] = [
        (0, &[]),
        (P - 1, &[]),
        (P + 1, &[]),
        (MAX_SIZE + P, &[]),
        (4 * P, &[1, 2]),    // chunks do not add up
        (3 * P, &[3]),       // not a power of two
        (1024 * P, &[1024]), // above 2 MiB
    ];
    for (size, chunks) in bad {
        kunit_expect_eq!(t, exporter::create(size, chunks, true).err(), Some(EINVAL));
    }
}

fn migrate_remaps(t: &Test) {
    let Some(dev) = device(t) else { return };
    let size = 16 * P;
    let Some(buf) = setup(t, size, &[1, 4, 1, 8, 2], true) else {
        return;
    };
    let Some(owned) = import(t, dev, &buf) else {
        return;
    };
    let Some(imp) = access(t, &owned, dev) else {
        return;
    };
    let Ok(data) = pattern(size, 7) else { return };
    kunit_expect!(t, exporter::write(&buf, 0, &data).is_ok());
    let Ok(before) = map(imp) else {
        return t.fail(format_args!("map failed"));
    };
    // The previous round's pages: a migration allocates the new pages while
    // it still holds those, so the first address must differ from theirs
    // (not from the first round's, which the allocator may hand out again).
    let mut prev = before.first().map(|e| e.0);
    for round in 1..=3u32 {
        kunit_expect!(t, exporter::migrate(&buf, 10, false).is_ok());
        kunit_expect_eq!(t, imp.data().notified.load(Ordering::Relaxed), round);
        kunit_expect!(t, imp.lock().is_ok_and(|mut g| !g.is_mapped()));
        let Ok(after) = map(imp) else {
            return t.fail(format_args!("re-map failed"));
        };
        kunit_expect_eq!(t, after.len(), before.len());
        kunit_expect!(t, after.first().map(|e| e.0) != prev);
        prev = after.first().map(|e| e.0);
        let Ok(mut back) = KVec::from_elem(0u8, size, GFP_KERNEL) else {
            return;
        };
        kunit_expect!(t, exporter::read(&buf, 0, &mut back).is_ok());
        kunit_expect!(t, back[..] == data[..]);
    }
    let s = exporter::stats(&buf).unwrap_or_default();
    kunit_expect_eq!(t, (s.migrations, s.move_notifies, s.maps), (3, 3, 4));
    unmap(imp);
}

fn migrate_refusals(t: &Test) {
    let Some(dev) = device(t) else { return };
    let Some(buf) = setup(t, 4 * P, &[], true) else {
        return;
    };
    let Some(owned) = import(t, dev, &buf) else {
        return;
    };
    let Some(imp) = access(t, &owned, dev) else {
        return;
    };
    kunit_expect!(t, imp.lock().and_then(|mut g| g.pin()).is_ok());
    kunit_expect_eq!(t, exporter::migrate(&buf, 0, false), Err(EBUSY));
    kunit_expect!(t, imp.lock().is_ok_and(|mut g| g.unpin()));
    kunit_expect_eq!(
        t,
        exporter::migrate(&buf, MAX_DELAY_MS + 1, false),
        Err(EINVAL)
    );
    kunit_expect_eq!(t, exporter::migrate(&buf, 0, false), Ok(()));
    let Some(stat) = setup(t, 4 * P, &[], false) else {
        return;
    };
    kunit_expect_eq!(t, exporter::migrate(&stat, 0, false), Err(EOPNOTSUPP));
}

/// Two importers of one device map the same pages at once (two MRs of one
/// RDMA device on one buffer). Both see the same entries, and DMA-API
/// debugging has nothing to object to: the verdict fails on its error count.
fn two_attachments_same_pages(t: &Test) {
    let Some(dev) = device(t) else { return };
    for dynamic in [false, true] {
        let Some(buf) = setup(t, 8 * P, &[2, 1, 4, 1], dynamic) else {
            return;
        };
        let (Some(oa), Some(ob)) = (import(t, dev, &buf), import(t, dev, &buf)) else {
            return;
        };
        let (Some(a), Some(b)) = (access(t, &oa, dev), access(t, &ob, dev)) else {
            return;
        };
        let (ea, eb) = (map(a), map(b));
        kunit_expect!(t, ea.is_ok() && eb.is_ok());
        if let (Ok(ea), Ok(eb)) = (ea, eb) {
            kunit_expect_eq!(t, ea.len(), 4);
            kunit_expect!(t, ea[..] == eb[..]);
        }
        let s = exporter::stats(&buf).unwrap_or_default();
        kunit_expect_eq!(t, (s.attachments, s.mappings), (2, 2));
        unmap(a);
        unmap(b);
    }
}

/// An import's mapping is its own: another import of the same buffer, held
/// under the same reservation lock, neither holds nor unmaps it.
fn import_keeps_its_mapping(t: &Test) {
    let Some(dev) = device(t) else { return };
    let Some(buf) = setup(t, 4 * P, &[1, 2, 1], true) else {
        return;
    };
    let (Some(oa), Some(ob)) = (import(t, dev, &buf), import(t, dev, &buf)) else {
        return;
    };
    let (Some(a), Some(b)) = (access(t, &oa, dev), access(t, &ob, dev)) else {
        return;
    };
    kunit_expect!(t, map(a).is_ok());
    {
        let Ok(mut guard) = b.lock() else {
            return t.fail(format_args!("the import's lock was refused"));
        };
        kunit_expect!(t, !guard.is_mapped());
        kunit_expect!(t, guard.with_mapping(|_| ()).is_none());
        kunit_expect!(t, !guard.unmap());
    }
    kunit_expect!(t, a.lock().is_ok_and(|mut g| g.is_mapped()));
    kunit_expect_eq!(t, exporter::stats(&buf).map(|s| s.mappings), Ok(1));
    unmap(a);
    kunit_expect!(t, a.lock().is_ok_and(|mut g| !g.is_mapped()));
    kunit_expect_eq!(t, exporter::stats(&buf).map(|s| s.mappings), Ok(0));
}

/// Whether an importer implements `invalidate_mappings` is what its
/// attachments tell the dma-buf core (`dma_buf_attach_revocable`).
fn fence_orders_copy(t: &Test) {
    let size = 64 * P;
    let Some(buf) = setup(t, size, &[16, 16, 32], true) else {
        return;
    };
    let Ok(data) = pattern(size, 3) else { return };
    kunit_expect!(t, exporter::write(&buf, 0, &data).is_ok());
    let start = Stamp::now();
    kunit_expect!(t, exporter::migrate(&buf, 200, false).is_ok());
    // A reader waits for the copy fence, then sees the old contents.
    let Ok(mut back) = KVec::from_elem(0u8, size, GFP_KERNEL) else {
        return;
    };
    kunit_expect!(t, exporter::read(&buf, 0, &mut back).is_ok());
    let waited = start.elapsed_ms();
    kunit_expect!(t, waited >= 150);
    kunit_expect!(t, back[..] == data[..]);
}

/// vfio-pci's rules (`Kind::Revocable`): an importer that cannot be revoked
/// is refused; a revocation returns once every mapping was unmapped, and
/// attachments and maps fail with `ENODEV` until the buffer is restored;
/// the latency samples hold that unmap and the next map.
fn revocable_rules(t: &Test) {
    let Some(dev) = device(t) else { return };
    let buf = match exporter::create_in(8 * P, &[], Kind::Revocable, Placement::System) {
        Ok(b) => b,
        Err(e) => return t.fail(format_args!("create failed: {e:?}")),
    };
    kunit_expect_eq!(
        t,
        OwnedImport::<Unrevocable>::new(buf.clone(), dev, probe()).err(),
        Some(EOPNOTSUPP)
    );
    let Some(owned) = import(t, dev, &buf) else {
        return;
    };
    let Some(imp) = access(t, &owned, dev) else {
        return;
    };
    kunit_expect!(t, map(imp).is_ok());
    let done = exporter::revoke_buffer(&buf, false);
    kunit_expect_eq!(t, done.as_ref().map(|r| r.unmapped), Ok(1));
    kunit_expect!(t, done.as_ref().is_ok_and(|r| r.wait_ns > 0));
    kunit_expect_eq!(t, imp.data().notified.load(Ordering::Relaxed), 1);
    kunit_expect_eq!(t, exporter::stats(&buf).map(|s| s.mappings), Ok(0));
    kunit_expect_eq!(t, map(imp).err(), Some(ENODEV));
    kunit_expect_eq!(
        t,
        OwnedImport::<ProbeImporter>::new(buf.clone(), dev, probe()).err(),
        Some(ENODEV)
    );
    kunit_expect_eq!(
        t,
        exporter::revoke_buffer(&buf, false).err(),
        Some(EALREADY)
    );
    kunit_expect!(t, exporter::revoke_buffer(&buf, true).is_ok());
    kunit_expect_eq!(t, exporter::revoke_buffer(&buf, true).err(), Some(EALREADY));
    kunit_expect!(t, map(imp).is_ok());
    kunit_expect_eq!(
        t,
        exporter::latency(&buf).map(|l| (l.unmap.len(), l.remap.len(), l.dropped)),
        Ok((1, 1, 0))
    );
    unmap(imp);
    // Only a revocable buffer can be revoked.
    let Some(dynamic) = setup(t, P, &[], true) else {
        return;
    };
    kunit_expect_eq!(
        t,
        exporter::revoke_buffer(&dynamic, false).err(),
        Some(EINVAL)
    );
}

fn refcounts(t: &Test) {
    // Buffers of earlier cases may still wait for their delayed release.
    flush_delayed_releases();
    for _ in 0..200 {
        if exporter::live_buffers() == 0 {
            break;
        }
        msleep(5);
    }
    let base = exporter::live_buffers();
    let Some(dev) = device(t) else { return };
    {
        let Some(buf) = setup(t, 8 * P, &[2, 2, 4], true) else {
            return;
        };
        let Some(owned) = import(t, dev, &buf) else {
            return;
        };
        let Some(imp) = access(t, &owned, dev) else {
            return;
        };
        let _ = map(imp);
        kunit_expect!(t, exporter::migrate(&buf, 0, false).is_ok());
        let _ = map(imp);
        unmap(imp);
        drop(owned);
        kunit_expect_eq!(
            t,
            exporter::stats(&buf),
            Ok(StatsSnapshot {
                attachments: 0,
                pins: 0,
                mappings: 0,
                maps: 2,
                migrations: 1,
                move_notifies: 1,
                ..StatsSnapshot::default()
            })
        );
        kunit_expect_eq!(t, exporter::live_buffers(), base + 1);
    }
    // The last reference of a kernel thread's file is put by a delayed work,
    // which a flush does not wait for if it already started: allow 1 s.
    flush_delayed_releases();
    for _ in 0..200 {
        if exporter::live_buffers() == base {
            break;
        }
        msleep(5);
    }
    kunit_expect_eq!(t, exporter::live_buffers(), base);
}

/// The cases, each run on the KUnit case of its own name.
/// Chunk sets copy into each other and into themselves (a migration copies
/// between two; `Backing::copy_from` is a `memmove`, so one copied onto
/// itself, or onto another view of its pages, keeps its bytes); a set of
/// another layout is refused with `EINVAL`.
fn chunk_copies(t: &Test) {
    let (Ok(a), Ok(b), Ok(other)) = (
        ChunkSet::new(&[0, 1, 0]),
        ChunkSet::new(&[0, 1, 0]),
        ChunkSet::new(&[2]),
    ) else {
        kunit_expect!(t, false);
        return;
    };
    let len = 4 * P;
    let (Ok(want), Ok(mut got)) = (pattern(len, 7), pattern(len, 0)) else {
        kunit_expect!(t, false);
        return;
    };
    kunit_expect!(t, a.write(0, &want).is_ok());
    kunit_expect!(t, b.copy_from(&a).is_ok());
    kunit_expect!(t, b.read(0, &mut got).is_ok() && got == want);
    kunit_expect!(t, a.copy_from(&a).is_ok());
    got.iter_mut().for_each(|x| *x = 0);
    kunit_expect!(t, a.read(0, &mut got).is_ok() && got == want);
    let (first, _) = match a.locate(0) {
        Ok(found) => found,
        Err(_) => {
            kunit_expect!(t, false);
            return;
        }
    };
    kunit_expect!(t, first.copy_from(first).is_ok());
    kunit_expect!(t, a.read(0, &mut got).is_ok() && got == want);
    kunit_expect_eq!(t, other.copy_from(&a), Err(EINVAL));
    if let Some(big) = other.chunks().first() {
        kunit_expect_eq!(t, first.copy_from(big), Err(EINVAL));
    }
}

#[kunit_tests(dmabuf_exporter_rs)]
mod suite {
    use kernel::kunit::Test;

    #[test]
    fn create_layouts() {
        Test::with_current(super::create_layouts);
    }

    #[test]
    fn chunk_copies() {
        Test::with_current(super::chunk_copies);
    }

    #[test]
    fn create_rejects() {
        Test::with_current(super::create_rejects);
    }

    #[test]
    fn migrate_remaps() {
        Test::with_current(super::migrate_remaps);
    }

    #[test]
    fn migrate_refusals() {
        Test::with_current(super::migrate_refusals);
    }

    #[test]
    fn two_attachments_same_pages() {
        Test::with_current(super::two_attachments_same_pages);
    }

    #[test]
    fn fence_orders_copy() {
        Test::with_current(super::fence_orders_copy);
    }

    #[test]
    fn revocable_rules() {
        Test::with_current(super::revocable_rules);
    }

    #[test]
    fn refcounts() {
        Test::with_current(super::refcounts);
    }

    #[test]
    fn import_keeps_its_mapping() {
        Test::with_current(super::import_keeps_its_mapping);
    }
}
