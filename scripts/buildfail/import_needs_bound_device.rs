// DMA for a device is done on behalf of the driver bound to it: an import
// is made only for a device proven bound (Device<Bound>), lives in a
// Devres of it and is reached only with that proof, so a plain device
// reference, which may outlive the binding, does not do (the twin passes
// the bound device, and builds).
// expect: E0308 mismatched types
use kernel::device::{Bound, Device};
use kernel::dma_buf::import::OwnedImport;
use kernel::dma_buf::{DmaBuf, Importer};
use kernel::prelude::*;
use kernel::sync::aref::ARef;

struct Probe;
#[vtable]
impl Importer for Probe {
    type Priv = u32;
    const ALLOW_PEER2PEER: bool = false;
}

pub(crate) fn case(buf: ARef<DmaBuf>, dev: &Device, bound: &Device<Bound>) -> Result {
    let _ = bound;
    let import = OwnedImport::<Probe>::new(buf, dev, 0)?; //~twin: let import = OwnedImport::<Probe>::new(buf, bound, 0)?;
    let mut guard = import.access(bound)?.lock()?;
    guard.map()?;
    Ok(())
}
