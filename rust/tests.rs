// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `umem_dmabuf_rs_abs`: what the safe layer of [`crate::abs`]
//! refuses at run time, on a buffer of the C suites' mock exporter. The C
//! suites (kunit/) test the importer through ib_core's entry points.

#![forbid(unsafe_code)]

use crate::abs::device::{DmaDevice, IbDevice};
use crate::abs::testing::{device_refs, heap_buffer, ib_device, FenceWatch, MockBuffer, HEAP_SIZE};
use crate::abs::umem::{OwnedUmem, UmemAttachOps, UmemDmabuf, UmemImpl, UmemLocked};
use crate::importer::RustImporter;
use kernel::device::{Bound, Device};
use kernel::dma_buf::export::MoveFence;
use kernel::dma_buf::import::OwnedImport;
use kernel::dma_buf::{Importer, LockedAttachment};
use kernel::kunit::Test;
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::{kunit_expect, kunit_expect_eq};

/// Four entries of one, two, one and four pages.
static LENS: [u32; 4] = [PAGE, 2 * PAGE, PAGE, 4 * PAGE];
// CAST: a page is far below `u32::MAX`.
const PAGE: u32 = PAGE_SIZE as u32;
const SIZE: usize = 8 * PAGE_SIZE;

/// Attach ops of the case's umem: a driver that is never told of a move
/// (the case moves nothing).
struct CaseOps;

#[vtable]
impl Importer for CaseOps {
    type Priv = UmemDmabuf;
    const ALLOW_PEER2PEER: bool = true;

    fn invalidate_mappings(_umem: &UmemDmabuf, _attach: LockedAttachment<'_, '_>) {}
}

/// A second importer of the same buffer, with no state.
struct Sibling;

#[vtable]
impl Importer for Sibling {
    type Priv = ();
    const ALLOW_PEER2PEER: bool = true;

    fn invalidate_mappings(_priv: &(), _attach: LockedAttachment<'_, '_>) {}
}

/// The case's buffer (`LENS`), RDMA device and its DMA device; `None` once
/// the case has failed for want of one.
fn setup(t: &Test) -> Option<(MockBuffer<'_>, &IbDevice, DmaDevice<'_>, &Device<Bound>)> {
    let (buf, (ibdev, bound)) = match (MockBuffer::new(t, &LENS), ib_device(t)) {
        (Ok(buf), Ok(devs)) => (buf, devs),
        _ => {
            t.fail(format_args!("no buffer or device for the case"));
            return None;
        }
    };
    let Some(dev) = ibdev.dma_device() else {
        t.fail(format_args!("the case's ib_device has no DMA device"));
        return None;
    };
    Some((buf, ibdev, dev, bound))
}

/// Runs `f` with a umem over the case's buffer, locked, and the buffer.
fn with_umem(t: &Test, f: impl for<'a> FnOnce(&UmemLocked<'a>, &MockBuffer<'_>)) {
    let Some((buf, ibdev, dev, _bound)) = setup(t) else {
        return;
    };
    let ops = Some(UmemAttachOps::of::<CaseOps>());
    let umem = match OwnedUmem::new(ibdev, 0, SIZE, true, buf.dmabuf(), dev, ops) {
        Ok(umem) => umem,
        Err(e) => return t.fail(format_args!("umem: {e:?}")),
    };
    let Ok(guard) = umem.get().lock() else {
        return t.fail(format_args!("umem not locked"));
    };
    f(&guard.view(), &buf);
}

/// A pin is undone under its own buffer's lock: the lock of one attachment
/// undoes the pin of another attachment of the same buffer (through that
/// attachment, with no warning), and gives back the pin of an attachment of
/// another buffer, which that buffer's own lock then undoes. The exporters'
/// counts are checked again when the buffers go.
fn unpin_by_buffer(t: &Test) {
    let Some((buf, ibdev, dev, _bound)) = setup(t) else {
        return;
    };
    let other_buf = match MockBuffer::new(t, &LENS) {
        Ok(other_buf) => other_buf,
        Err(e) => return t.fail(format_args!("second buffer: {e:?}")),
    };
    let ops = Some(UmemAttachOps::of::<CaseOps>());
    let owned = [buf.dmabuf(), buf.dmabuf(), other_buf.dmabuf()]
        .map(|dmabuf| OwnedUmem::new(ibdev, 0, SIZE, true, dmabuf, dev, ops));
    let [Ok(a), Ok(b), Ok(c)] = &owned else {
        return t.fail(format_args!("an attachment could not be made"));
    };
    let (Ok(a), Ok(b), Ok(c)) = (
        a.get().attachment(),
        b.get().attachment(),
        c.get().attachment(),
    ) else {
        return t.fail(format_args!("a umem has no attachment"));
    };
    let before = (buf.unpinned(), other_buf.unpinned());
    {
        let Ok(guard) = a.lock() else {
            return t.fail(format_args!("the attachment's lock was refused"));
        };
        let locked = guard.view();
        match locked.sibling(b).map(|b| b.pin()) {
            Some(Ok(pin)) => kunit_expect!(t, locked.unpin(pin).is_ok()),
            _ => t.fail(format_args!("no pin of the sibling attachment")),
        }
    }
    kunit_expect_eq!(t, buf.unpinned(), before.0 + 1);
    let pin = match c.lock().and_then(|g| g.view().pin()) {
        Ok(pin) => pin,
        Err(e) => return t.fail(format_args!("pin of the other buffer: {e:?}")),
    };
    let back = match a.lock() {
        Ok(g) => g.view().unpin(pin),
        Err(_) => Err(pin),
    };
    kunit_expect_eq!(t, buf.unpinned(), before.0 + 1);
    kunit_expect_eq!(t, other_buf.unpinned(), before.1);
    match back {
        Err(pin) => kunit_expect!(t, c.lock().is_ok_and(|g| g.view().unpin(pin).is_ok())),
        Ok(()) => t.fail(format_args!(
            "another buffer's pin was undone under this lock"
        )),
    }
    kunit_expect_eq!(t, other_buf.unpinned(), before.1 + 1);
}

/// A umem maps its attachment once: while it holds a mapping, a second one
/// is refused (`EBUSY`) and the exporter is not called, since exporters such
/// as the system heap hand every map of an attachment the same table. The
/// umem maps again once unmapped.
fn map_refused_while_mapped(t: &Test) {
    with_umem(t, |view, buf| {
        for round in 0..2 {
            kunit_expect_eq!(t, RustImporter::map_pages(view), Ok(()));
            let mapped = buf.mapped();
            kunit_expect_eq!(t, view.map_window(0, SIZE as u64), Err(EBUSY));
            if buf.mapped() != mapped {
                t.fail(format_args!(
                    "round {round}: a second map reached the exporter"
                ));
            }
            kunit_expect!(t, view.unmap());
            kunit_expect!(t, !view.is_mapped());
            kunit_expect!(t, !view.unmap());
        }
    });
}

/// A revoked umem holds nothing and takes nothing: revoking unmaps it and
/// undoes its pin, and from then on a map is refused (`EINVAL`, the exporter
/// not called) and a pin is given back, so that its release has nothing to
/// undo.
fn revoked_takes_nothing(t: &Test) {
    with_umem(t, |view, buf| {
        kunit_expect_eq!(t, RustImporter::map_pages(view), Ok(()));
        match view.attachment().pin() {
            Ok(pin) => {
                if let Err(pin) = view.keep_pin(pin) {
                    t.fail(format_args!("the umem's first pin was refused"));
                    kunit_expect!(t, view.attachment().unpin(pin).is_ok());
                }
            }
            Err(e) => return t.fail(format_args!("pin: {e:?}")),
        }
        let (mapped, unpinned) = (buf.mapped(), buf.unpinned());
        view.revoke();
        kunit_expect!(t, view.revoked());
        kunit_expect!(t, !view.is_mapped());
        kunit_expect_eq!(t, buf.unpinned(), unpinned + 1);
        kunit_expect_eq!(t, view.map_window(0, SIZE as u64), Err(EINVAL));
        kunit_expect_eq!(t, buf.mapped(), mapped);
        match view.attachment().pin() {
            Ok(pin) => match view.keep_pin(pin) {
                Err(pin) => kunit_expect!(t, view.attachment().unpin(pin).is_ok()),
                Ok(()) => t.fail(format_args!("a revoked umem kept a pin")),
            },
            Err(e) => t.fail(format_args!("second pin: {e:?}")),
        }
        kunit_expect_eq!(t, buf.unpinned(), unpinned + 2);
    });
}

/// Who holds the device: a umem's attachment takes no reference (ib_core
/// keeps the DMA device live, as for the C importer's attachments), the safe
/// owner of an attachment takes one for as long as it lives.
fn device_references(t: &Test) {
    let Some((buf, ibdev, dev, bound)) = setup(t) else {
        return;
    };
    let before = device_refs(dev);
    let ops = Some(UmemAttachOps::of::<CaseOps>());
    match OwnedUmem::new(ibdev, 0, SIZE, true, buf.dmabuf(), dev, ops) {
        Ok(umem) => {
            kunit_expect_eq!(t, device_refs(dev), before);
            RustImporter::release(umem);
        }
        Err(e) => return t.fail(format_args!("umem: {e:?}")),
    }
    match OwnedImport::<Sibling>::new(buf.dmabuf(), bound, ()) {
        Ok(other) => {
            kunit_expect_eq!(t, device_refs(dev), before + 1);
            kunit_expect!(t, core::ptr::eq(other.device(), dev.device()));
            drop(other);
        }
        Err(e) => return t.fail(format_args!("second attachment: {e:?}")),
    }
    kunit_expect_eq!(t, device_refs(dev), before);
}

/// On the kernel's own system heap, which hands every map of an attachment
/// the same table (its own, DMA-mapped again each time), with no
/// `CONFIG_DMABUF_DEBUG` copy in between: a umem's second map is refused
/// with `EBUSY` before the heap is called (a second call would map that
/// table again, leak the first mapping's IOVAs and alias it), and the umem
/// maps again once unmapped. Runs in the real-tables boot, which loads the
/// module with a heap buffer (scripts/guest/real_tables.sh); skipped
/// elsewhere.
fn heap_map_refused_while_mapped(t: &Test) {
    let Some(buf) = heap_buffer(t) else {
        return;
    };
    let ibdev = match ib_device(t) {
        Ok((ibdev, _)) => ibdev,
        Err(e) => return t.fail(format_args!("no device for the case: {e:?}")),
    };
    let Some(dev) = ibdev.dma_device() else {
        return t.fail(format_args!("the case's ib_device has no DMA device"));
    };
    // A window with a partial first and last page: trimmed in the heap's
    // own table while mapped.
    let (offset, size) = (PAGE_SIZE + 100, HEAP_SIZE - 2 * PAGE_SIZE - 200);
    let ops = Some(UmemAttachOps::of::<CaseOps>());
    let umem = match OwnedUmem::new(ibdev, offset, size, true, buf, dev, ops) {
        Ok(umem) => umem,
        Err(e) => return t.fail(format_args!("umem: {e:?}")),
    };
    let Ok(guard) = umem.get().lock() else {
        return t.fail(format_args!("umem not locked"));
    };
    let view = guard.view();
    for round in 0..2 {
        kunit_expect_eq!(t, RustImporter::map_pages(&view), Ok(()));
        if view.map_window(0, HEAP_SIZE as u64) != Err(EBUSY) {
            t.fail(format_args!(
                "round {round}: a second mapping of the heap's table"
            ));
        }
        kunit_expect!(t, view.is_mapped());
        RustImporter::unmap_pages(&view);
        kunit_expect!(t, !view.is_mapped());
    }
}

/// Where the warning of a move fence dropped unsignalled comes from.
const FENCE_WARNING_SITE: &str = "rust/kernel/dma_buf/export/fence.rs";

/// An exporter's move fence dropped unsignalled while another reference
/// holds it (here the watch's, as a buffer's reservation object would)
/// signals itself, and warns: left unsignalled in a buffer's reservation
/// object, it would make every later wait for the buffer's kernel fences
/// sleep forever. (One nobody else holds is dropped quietly: the example
/// of `MoveFence`, where a warning fails the run.) The warning is
/// expected: it is printed between the kernel log lines
/// `umem-expect-warnings-begin NAME SITE` and `-end NAME`, which the host's
/// verdict reads; a warning from anywhere else there still fails the run.
fn move_fence_dropped_unsignalled(t: &Test) {
    let fence = match MoveFence::new() {
        Ok(fence) => fence,
        Err(e) => return t.fail(format_args!("fence: {e:?}")),
    };
    let watch = FenceWatch::new(&fence);
    kunit_expect!(t, !watch.is_signaled());
    pr_err!("umem-expect-warnings-begin move_fence_dropped_unsignalled {FENCE_WARNING_SITE}\n");
    drop(fence);
    pr_err!("umem-expect-warnings-end move_fence_dropped_unsignalled\n");
    kunit_expect!(t, watch.is_signaled());
}

#[kunit_tests(umem_dmabuf_rs_abs)]
mod suite {
    use kernel::kunit::Test;

    #[test]
    fn unpin_by_buffer() {
        Test::with_current(super::unpin_by_buffer);
    }

    #[test]
    fn map_refused_while_mapped() {
        Test::with_current(super::map_refused_while_mapped);
    }

    #[test]
    fn revoked_takes_nothing() {
        Test::with_current(super::revoked_takes_nothing);
    }

    #[test]
    fn move_fence_dropped_unsignalled() {
        Test::with_current(super::move_fence_dropped_unsignalled);
    }

    #[test]
    fn device_references() {
        Test::with_current(super::device_references);
    }
}

/// `umem_dmabuf_rs_heap_rs`: the safe layer on the system heap's own tables
/// (the real-tables boot's filter, `umem_dmabuf_rs_heap*`, selects it with
/// the C heap suite).
#[kunit_tests(umem_dmabuf_rs_heap_rs)]
mod heap_suite {
    use kernel::kunit::Test;

    #[test]
    fn heap_map_refused_while_mapped() {
        Test::with_current(super::heap_map_refused_while_mapped);
    }
}
