// An attachment has one live mapping at a time: exporters such as the
// system heap hand every map of an attachment the same table, which a
// second mapping would DMA-map again and alias. Only the attachment's owner
// knows whether it holds one, so mapping through a bare LockedAttachment is
// unsafe (the twin states the owner's promise in an unsafe block, and
// builds); a safe importer maps through its Import, which refuses a second
// mapping with EBUSY.
// expect: E0133 is unsafe and requires unsafe
use kernel::dma_buf::Attachment;

pub(crate) fn case(attach: &Attachment) -> kernel::error::Result {
    let guard = attach.lock()?;
    let first = guard.view().map()?; //~twin: let first = unsafe { guard.view().map() }?;
    first.unmap();
    Ok(())
}
