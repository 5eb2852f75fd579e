// SPDX-License-Identifier: GPL-2.0

//! What the sample's KUnit cases need to play an importer that keeps one
//! mapping between calls, as an RDMA driver does: a slot for it in the
//! importer's private data, and a device of the case's own.
//!
//! Since 7.x a [`Mapping`] borrows its attachment and cannot be stored in
//! the attachment's private data; the slot keeps its raw parts with the
//! attachment they are of, and turns them back into a mapping only for that
//! attachment.

use core::ptr;
use kernel::device::{Bound, Device};
use kernel::dma_buf::MappingParts;
use kernel::dma_buf::{Attachment, LockedAttachment, Mapping};
use kernel::kunit::Test;
use kernel::prelude::*;
use kernel::sync::{new_mutex, Mutex};

/// The mapping an importer keeps for its one attachment.
///
/// # Invariants
///
/// A stored value is the parts of a mapping of the attachment stored with
/// them, given up by `into_raw_parts`.
#[pin_data]
pub(crate) struct MappingSlot {
    #[pin]
    parts: Mutex<Option<(*const Attachment, MappingParts)>>,
}

// SAFETY: the attachment's address is only compared, never dereferenced;
// the parts may be taken back on any thread (`MappingParts` is `Send`).
unsafe impl Send for MappingSlot {}
// SAFETY: the stored value is behind the mutex.
unsafe impl Sync for MappingSlot {}

impl MappingSlot {
    /// An empty slot.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            parts <- new_mutex!(None),
        })
    }

    /// Whether a mapping is kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.parts.lock().is_none()
    }

    /// Maps `attach` unless a mapping is kept already, then returns the
    /// `(address, length)` of each DMA entry of the kept mapping. `EBUSY` if
    /// the kept mapping is of another attachment.
    pub(crate) fn map_entries(&self, attach: LockedAttachment<'_, '_>) -> Result<KVec<(u64, u32)>> {
        let mut slot = self.parts.lock();
        let mapping = match slot.take() {
            Some((owner, parts)) if ptr::eq(owner, attach.attachment()) => {
                // SAFETY: the parts of a mapping of `attach` (type invariant),
                // taken back once.
                unsafe { Mapping::from_raw_parts(attach, parts) }
            }
            Some(kept) => {
                *slot = Some(kept);
                return Err(EBUSY);
            }
            // SAFETY: the slot lives in the importer data of its attachment and
            // makes every mapping of it; it keeps none (`None`), so none is live.
            None => unsafe { attach.map() }?,
        };
        let mut v = KVec::new();
        let r = entries(&mapping, &mut v);
        // INVARIANT: the parts of a mapping of `attach`, stored with it.
        // SAFETY: kept in the slot, taken back by `map_entries` or `unmap`.
        let parts = unsafe { mapping.into_raw_parts() };
        *slot = Some((ptr::from_ref(attach.attachment()), parts));
        r.map(|()| v)
    }

    /// Unmaps the kept mapping, if any and if it is of `attach`; returns
    /// whether it did.
    pub(crate) fn unmap(&self, attach: LockedAttachment<'_, '_>) -> bool {
        let mut slot = self.parts.lock();
        match slot.take() {
            Some((owner, parts)) if ptr::eq(owner, attach.attachment()) => {
                // SAFETY: as in `map_entries`.
                unsafe { Mapping::from_raw_parts(attach, parts) }.unmap();
                true
            }
            kept => {
                *slot = kept;
                false
            }
        }
    }
}

fn entries(mapping: &Mapping<'_>, v: &mut KVec<(u64, u32)>) -> Result {
    for sg in mapping.table().iter() {
        v.push((sg.dma_address(), u32::try_from(sg.dma_len())?), GFP_KERNEL)?;
    }
    Ok(())
}

/// A device of the running case that can address 64 bits of DMA (KUnit
/// releases it when the case ends).
pub(crate) fn case_device<'a>(t: &'a Test, name: &'static CStr) -> Result<&'a Device<Bound>> {
    let dev = t.dma_device(name, kernel::dma::DmaMask::new::<64>())?;
    Ok(dev)
}

/// A point in time of the monotonic clock.
pub(crate) struct Stamp(kernel::time::Instant<kernel::time::Monotonic>);

impl Stamp {
    /// Now.
    pub(crate) fn now() -> Self {
        let now = kernel::time::Instant::now();
        Self(now)
    }

    /// Milliseconds since the stamp.
    pub(crate) fn elapsed_ms(&self) -> i64 {
        self.0.elapsed().as_millis()
    }
}
