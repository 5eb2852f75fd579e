// A pin borrows its attachment: detaching an attachment (dropping its
// owner) while a pin of it is outstanding does not compile, so no token can
// outlive its attachment and later unpin another attachment that was put at
// the same address (the twin unpins first, then detaches, and builds).
// expect: E0505 cannot move out of `attach` because it is borrowed
use kernel::device::Device;
use kernel::dma_buf::{DmaBuf, DynAttachment, Importer, ImporterOps};
use kernel::error::code::EINVAL;
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
    let pin = attach.attachment().lock()?.view().pin()?;
    drop(attach); //~twin: attach.attachment().lock()?.view().unpin(pin).map_err(|_| EINVAL)?;
    pin.into_raw(); //~twin: drop(attach);
    Ok(())
}
