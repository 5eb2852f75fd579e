// A Mapping borrows its attachment: detaching (dropping the attachment)
// while the mapping lives does not compile.
// expect: E0505
use kernel::device::Device;
use kernel::dma_buf::{DmaBuf, DynAttachment, Importer, ImporterOps};
use kernel::sync::aref::ARef;

struct Probe;
impl Importer for Probe {
    type Priv = u32;
    const ALLOW_PEER2PEER: bool = false;
}

pub(crate) fn case(buf: ARef<DmaBuf>, dev: &Device, data: &u32) -> kernel::error::Result {
    // SAFETY: not run; only compiled.
    let attach =
        unsafe { DynAttachment::new(buf, dev, Some(ImporterOps::<Probe>::table()), data)? };
    let guard = attach.attachment().lock();
    let mapping = guard.view().map()?;
    drop(attach);
    guard.view().unmap(mapping);
    Ok(())
}
