// An import's attachment is locked, mapped and pinned only through the
// import (Import::lock), which records what it holds and undoes it when it
// goes: Import::attachment() lends an AttachmentInfo, which has no lock,
// so no pin or mapping taken of it can outlive the import's record (the
// twin pins through the import instead, and builds).
// expect: E0599 no method named `lock` found
use kernel::device::{Bound, Device};
use kernel::dma_buf::import::OwnedImport;
use kernel::dma_buf::{DmaBuf, Importer};
use kernel::prelude::*;
use kernel::sync::aref::ARef;

struct Pinner;

#[vtable]
impl Importer for Pinner {
    type Priv = ();
    const ALLOW_PEER2PEER: bool = false;
}

pub(crate) fn case(buf: ARef<DmaBuf>, dev: &Device<Bound>) -> kernel::error::Result {
    let import = OwnedImport::<Pinner>::new(buf, dev, ())?;
    let import = import.access(dev)?;
    let _pin = import.attachment().lock()?.view().pin()?; //~twin: import.lock()?.pin()?;
    Ok(())
}
