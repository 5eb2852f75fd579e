// The harness itself: a module that uses the same abstractions correctly
// builds.
// expect: ok
use kernel::device::Device;
use kernel::dma_buf::{DmaBuf, DynAttachment, Importer, ImporterOps};
use kernel::prelude::*;
use kernel::sync::aref::ARef;

struct Probe;
#[vtable]
impl Importer for Probe {
    type Priv = u32;
    const ALLOW_PEER2PEER: bool = false;
}

pub(crate) fn case(buf: ARef<DmaBuf>, dev: &Device, data: &u32) -> kernel::error::Result {
    // SAFETY: not run; only compiled.
    let attach =
        unsafe { DynAttachment::new(buf, dev, Some(ImporterOps::<Probe>::table()), data)? };
    let guard = attach.attachment().lock()?;
    // SAFETY: not run; only compiled.
    let mapping = unsafe { guard.view().map() }?;
    let _ = mapping.table().iter().count();
    mapping.unmap();
    drop(guard);
    drop(attach);
    Ok(())
}
