// A static attachment is mapped only by StaticAttachment::map, which
// consumes it: it hands out no Attachment, whose lock would give a
// LockedAttachment with pin and unpin (which the core refuses, with a
// WARNING, on a static attachment) and a second mapping beside the
// StaticMapping (the twin reads the buffer instead, and builds).
// expect: E0599 no method named `attachment` found
use kernel::device::{Bound, Device};
use kernel::dma_buf::DmaBuf;

pub(crate) fn case(buf: &DmaBuf, dev: &Device<Bound>) -> kernel::error::Result {
    let attach = buf.attach(dev)?;
    let _pin = attach.attachment().lock()?.view().pin()?; //~twin: let _size = attach.dmabuf().size();
    Ok(())
}
