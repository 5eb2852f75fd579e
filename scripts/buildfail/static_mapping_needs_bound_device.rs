// A static attachment, and a mapping that owns one, borrow the bound device
// they were made for: neither can be stored where the borrow ends (a
// driver's 'static state), so neither is used, mapped or detached after the
// driver unbound. A long-lived import goes through OwnedImport's Devres
// instead (the twin keeps the mapping within the borrow, and builds).
// expect: error lifetime may not live long enough
use kernel::device::{Bound, Device};
use kernel::dma::DataDirection;
use kernel::dma_buf::{DmaBuf, StaticMapping};
use kernel::prelude::*;

pub(crate) struct Driver {
    mapping: Option<StaticMapping<'static>>,
}

pub(crate) fn case(state: &mut Driver, buf: &DmaBuf, dev: &Device<Bound>) -> Result {
    let mapping = buf.attach(dev)?.map(DataDirection::ToDevice)?;
    state.mapping = Some(mapping); //~twin: drop(mapping);
    Ok(())
}
