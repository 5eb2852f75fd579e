// A mapping taken back from the parts a C structure stored lives within a
// hold of the buffer's reservation lock, as one made by map does: its
// window is written into the exporter's table, which the exporter changes
// only under that lock. from_raw_parts takes the locked attachment, not a
// bare one (the twin passes the locked view, and builds).
// expect: E0308 mismatched types
use kernel::dma_buf::{Attachment, Mapping};

pub(crate) fn case(attach: &Attachment) -> kernel::error::Result {
    let guard = attach.lock()?;
    // SAFETY: not run; only compiled.
    let parts = unsafe { guard.view().map()?.into_raw_parts() };
    // SAFETY: not run; only compiled.
    let mut mapping = unsafe { Mapping::from_raw_parts(attach, parts) }; //~twin: let mut mapping = unsafe { Mapping::from_raw_parts(guard.view(), parts) };
    mapping.set_window(0, 4096);
    mapping.unmap();
    Ok(())
}
