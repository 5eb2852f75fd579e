// CPU access through a Vmap is one guard at a time: the guard borrows the
// mapping mutably, so a second guard while the first lives (two copies that
// could race) does not compile; the twin ends the first access before it
// begins the second, and builds.
// expect: E0499 cannot borrow `vmap` as mutable more than once at a time
use kernel::dma::DataDirection;
use kernel::dma_buf::DmaBuf;
use kernel::prelude::*;

pub(crate) fn case(buf: &DmaBuf) -> Result {
    let mut vmap = buf.vmap()?;
    let mut first = vmap.cpu_access(DataDirection::ToDevice)?;
    first.write(0, b"a")?; //~twin: first.write(0, b"a")?; drop(first);
    let second = vmap.cpu_access(DataDirection::FromDevice)?;
    let mut back = [0u8; 1];
    second.read(0, &mut back)?;
    Ok(())
}
