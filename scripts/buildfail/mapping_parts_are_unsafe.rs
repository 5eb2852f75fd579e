// Giving a mapping up as raw parts leaves the exporter's table DMA-mapped,
// with the importer's window written into it, and owned by nobody until
// the parts are taken back and unmapped: into_raw_parts is unsafe (the
// twin makes that promise in an unsafe block, and builds).
// expect: E0133 is unsafe and requires unsafe
use kernel::dma_buf::{Attachment, Mapping};

pub(crate) fn case(attach: &Attachment) -> kernel::error::Result {
    let guard = attach.lock()?;
    // SAFETY: not run; only compiled.
    let mapping = unsafe { guard.view().map() }?;
    let parts = mapping.into_raw_parts(); //~twin: let parts = unsafe { mapping.into_raw_parts() };
    // SAFETY: not run; only compiled.
    let mapping = unsafe { Mapping::from_raw_parts(guard.view(), parts) };
    mapping.unmap();
    Ok(())
}
