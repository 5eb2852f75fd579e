// An importer written against the static-import shape of the upstream
// drafts (DmaBuf::get, attach for a bound device, a mapping that owns the
// attachment and reads as an SGTable of DMA addresses, vmap with a CPU
// access guard whose accessors return errors, into_fd) builds unchanged
// against kernel::dma_buf: the API is a superset of that shape.
// expect: ok
use kernel::device::{Bound, Device};
use kernel::dma::DataDirection;
use kernel::dma_buf::DmaBuf;
use kernel::prelude::*;
use kernel::scatterlist::SGTable;

fn program(_addr: u64, _len: u64) {}

pub(crate) fn case(fd: i32, dev: &Device<Bound>) -> Result<i32> {
    let buf = DmaBuf::get(fd)?;
    if buf.size() == 0 {
        return Err(EINVAL);
    }
    let attach = buf.attach(dev)?;
    let mapping = attach.map(DataDirection::Bidirectional)?;
    let table: &SGTable = &mapping;
    for sg in table.iter() {
        program(sg.dma_address(), sg.dma_len());
    }
    drop(mapping);
    let mut vmap = buf.vmap()?;
    let cpu = vmap.cpu_access(DataDirection::FromDevice)?;
    let mut header = [0u8; 16];
    cpu.read(0, &mut header)?;
    drop(cpu);
    drop(vmap);
    DmaBuf::into_fd(buf)
}
