// A Mapping borrows the lock's view of its attachment: releasing the
// reservation lock while a mapping of it is still in use does not compile
// (the twin gives the mapping back first, and builds).
// expect: E0505 cannot move out of `guard` because it is borrowed
use kernel::dma_buf::Attachment;

pub(crate) fn case(attach: &Attachment) -> kernel::error::Result<usize> {
    let guard = attach.lock()?;
    // SAFETY: not run; only compiled.
    let mapping = unsafe { guard.view().map() }?;
    drop(guard); //~twin: let n = mapping.table().iter().count();
    let n = mapping.table().iter().count(); //~twin: mapping.unmap();
    Ok(n)
}
