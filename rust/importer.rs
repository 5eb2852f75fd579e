// SPDX-License-Identifier: GPL-2.0

//! The ib_umem dma-buf importer: the behaviour of
//! `drivers/infiniband/core/umem_dmabuf.c` of Linux 7.3, in safe Rust.
//!
//! Everything here runs on the safe abstractions of [`crate::abs`]
//! (`#![forbid(unsafe_code)]` below). The reservation lock rules
//! are in the signatures: what the C code documents as "called with the lock
//! held" takes a [`UmemLocked`] (or a [`LockedAttachment`]), which can only be
//! made from the umem's own lock.

#![forbid(unsafe_code)]

use crate::abs::device::{DmaDevice, IbDevice};
use crate::abs::umem::{
    Entry, OwnedUmem, ReturnLocked, RevokeCallback, UmemAttachOps, UmemDmabuf, UmemImpl,
    UmemLocked, UmemRequest,
};
use kernel::dma_buf::{DmaBuf, Importer, LockedAttachment};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;

// CAST: `PAGE_SIZE` is a small power of two.
const PAGE: u64 = PAGE_SIZE as u64;

const fn align_down(x: u64) -> u64 {
    x & !(PAGE - 1)
}

/// `ALIGN(x, PAGE_SIZE)`, wrapping like C's unsigned arithmetic.
const fn align_up(x: u64) -> u64 {
    x.wrapping_add(PAGE - 1) & !(PAGE - 1)
}

/// `ib_umem_num_pages()` of a new umem: `iova` is still 0 when the C code
/// checks it, so only the length counts.
fn num_pages(length: usize) -> u64 {
    // CAST: `size_t` and `u64` have the same width here.
    align_up(length as u64) / PAGE
}

/// The Rust importer, registered with ib_core at module load.
pub(crate) struct RustImporter;

/// Attach ops of pinned umems: the exporter must not move a pinned buffer.
/// Since 7.1 they have no callback (a move does not reach the importer):
/// `invalidate_mappings` is not implemented.
struct PinnedOps;

#[vtable]
impl Importer for PinnedOps {
    type Priv = UmemDmabuf;
    const ALLOW_PEER2PEER: bool = true;
}

/// Attach ops of pinned revocable umems: a move revokes the umem.
struct RevocableOps;

#[vtable]
impl Importer for RevocableOps {
    type Priv = UmemDmabuf;
    const ALLOW_PEER2PEER: bool = true;

    fn invalidate_mappings(umem: &UmemDmabuf, attach: LockedAttachment<'_, '_>) {
        revocable_notified(umem, attach);
    }
}

/// A move (or revocation) of a revocable umem's buffer revokes it.
fn revocable_notified(umem: &UmemDmabuf, attach: LockedAttachment<'_, '_>) {
    // A move notified while the umem is still being created revokes it too
    // (creation then fails, as C's does): the umem must know its attachment
    // for that.
    umem.adopt_attachment(attach);
    if let Some(umem) = UmemLocked::notified(umem, attach) {
        revoke_locked(&umem);
    }
}

/// Revokes once: the driver's callback, unmap, unpin, mark revoked.
#[inline]
fn revoke_locked(umem: &UmemLocked<'_>) {
    if umem.revoked() {
        return;
    }
    umem.trace_revoke();
    umem.call_revoke_callback();
    // Unmaps, unpins, marks the umem revoked.
    umem.revoke();
}

/// Pins and maps a new umem; keeps the lock held on success if asked to.
fn pin_and_map(umem: &UmemDmabuf, keep_locked: Option<ReturnLocked>) -> Result {
    let guard = umem.lock()?;
    {
        let umem = guard.view();
        let pin = umem.attachment().pin()?;
        if let Err(pin) = umem.keep_pin(pin) {
            // A new umem holds no pin yet; keep the exporter's count balanced
            // all the same (the pin, of the umem's own attachment under its
            // own lock, is not refused).
            if let Err(pin) = umem.attachment().unpin(pin) {
                pin.into_raw();
            }
            return Err(EINVAL);
        }
        RustImporter::map_pages(&umem)?;
    }
    if let Some(locked) = keep_locked {
        locked.keep(guard);
    }
    Ok(())
}

/// `ib_umem_dmabuf_get_pinned_and_lock()`.
fn get_pinned_and_lock<'d>(
    device: &'d IbDevice,
    dma_device: Option<DmaDevice<'d>>,
    req: UmemRequest,
    ops: UmemAttachOps,
    keep_locked: Option<ReturnLocked>,
) -> Result<OwnedUmem<'d>> {
    let umem = RustImporter::get(device, dma_device, req, Some(ops))?;
    match pin_and_map(umem.get(), keep_locked) {
        Ok(()) => Ok(umem),
        Err(e) => {
            RustImporter::release(umem);
            Err(e)
        }
    }
}

impl UmemImpl for RustImporter {
    #[inline]
    fn entered(entry: Entry) {
        crate::count(entry);
    }

    // `get` and `map_pages` are always inlined into their trampolines, the
    // functions ib_core calls: at opt-level "s" rustc kept them as functions
    // of their own, one more call and return per registration, which the
    // one-entry registration benchmark measured at about 3 %.
    #[inline(always)]
    fn get<'d>(
        device: &'d IbDevice,
        dma_device: Option<DmaDevice<'d>>,
        req: UmemRequest,
        ops: Option<UmemAttachOps>,
    ) -> Result<OwnedUmem<'d>> {
        let UmemRequest {
            offset,
            size,
            fd,
            access,
        } = req;
        let end = offset.checked_add(size).ok_or(EINVAL)?;
        // Since 7.1 the invalidate callback is optional: any ops, or none,
        // are attached with.
        let dmabuf = DmaBuf::get(fd)?;
        if dmabuf.size() < end {
            return Err(EINVAL);
        }
        if num_pages(size) == 0 {
            return Err(EINVAL);
        }
        // dma_buf_dynamic_attach() refuses a NULL device with -EINVAL (and a
        // WARN); refuse it before calling.
        let dev = dma_device.ok_or(EINVAL)?;
        OwnedUmem::new(device, offset, size, access.writable(), dmabuf, dev, ops)
    }

    #[inline]
    fn get_pinned<'d>(
        device: &'d IbDevice,
        dma_device: Option<DmaDevice<'d>>,
        req: UmemRequest,
    ) -> Result<OwnedUmem<'d>> {
        let ops = UmemAttachOps::of::<PinnedOps>();
        get_pinned_and_lock(device, dma_device, req, ops, None)
    }

    fn get_pinned_revocable_and_lock<'d>(
        device: &'d IbDevice,
        dma_device: Option<DmaDevice<'d>>,
        req: UmemRequest,
        locked: ReturnLocked,
    ) -> Result<OwnedUmem<'d>> {
        let ops = UmemAttachOps::of::<RevocableOps>();
        get_pinned_and_lock(device, dma_device, req, ops, Some(locked))
    }

    fn set_revoke_locked(umem: &UmemLocked<'_>, cb: RevokeCallback) {
        umem.set_revoke_callback(cb);
    }

    #[inline(always)]
    fn map_pages(umem: &UmemLocked<'_>) -> Result {
        if umem.revoked() {
            return Err(EINVAL);
        }
        if !umem.is_mapped() {
            let address = umem.umem().address();
            let start = align_down(address);
            let end = align_up(address.wrapping_add(umem.umem().length()));
            umem.map_window(start, end)?;
        }
        // The table is valid now, but the exporter may still be moving the
        // contents: wait for its kernel fences (the mapping stays if this fails).
        umem.umem()
            .traced_fence_wait(|| umem.locked().wait_kernel_fences())
    }

    #[inline]
    fn unmap_pages(umem: &UmemLocked<'_>) {
        umem.unmap();
    }

    fn revoke(umem: &UmemDmabuf) {
        if let Ok(guard) = umem.lock() {
            revoke_locked(&guard.view());
        }
    }

    #[inline]
    fn release(umem: OwnedUmem<'_>) {
        // Revokes, then detaches from the buffer, puts it and frees the umem.
        umem.release_with(revoke_locked);
    }
}
