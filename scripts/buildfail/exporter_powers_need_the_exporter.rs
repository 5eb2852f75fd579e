// Telling every importer a buffer moves, adding a fence they wait for and
// zapping userspace's mmaps are the exporter's to do: a buffer of another
// driver (DmaBuf::get) has no lock() that could invalidate its importers;
// only the exporter's own view, DmaBuf::exported::<T>() for the type T
// that exported it, has (the twin asks for that view, and builds).
// expect: E0599 no method named `lock` found
use kernel::dma_buf::testing::TestExporter;
use kernel::dma_buf::DmaBuf;
use kernel::prelude::*;

pub(crate) fn case(fd: i32) -> Result {
    let buf = DmaBuf::get(fd)?;
    let guard = buf.lock()?; //~twin: let guard = buf.exported::<TestExporter>().ok_or(EINVAL)?.lock()?;
    guard.invalidate_mappings();
    Ok(())
}
