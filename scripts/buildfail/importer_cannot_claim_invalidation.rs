// An importer tells the exporter it will stop DMA when asked only by
// implementing invalidate_mappings (#[vtable]): there is no flag with which
// to claim it without the callback (the twin implements the callback, and
// builds).
// expect: E0438 const `INVALIDATES` is not a member of trait `Importer`
use kernel::dma_buf::{Importer, LockedAttachment};
use kernel::prelude::*;

struct Probe;

#[vtable]
impl Importer for Probe {
    type Priv = u32;
    const ALLOW_PEER2PEER: bool = false;
    const INVALIDATES: bool = true; //~twin: fn invalidate_mappings(_p: &u32, _a: LockedAttachment<'_, '_>) {}
}
