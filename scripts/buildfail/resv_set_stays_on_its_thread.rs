// The locks of a ResvSet and its acquire context belong to the thread that
// took them (a ww_acquire_ctx is ended, and its locks released, by the same
// task): a set cannot be sent to another thread, for instance in a work
// item (the twin sends the buffers and locks them there, and builds).
// expect: E0277 cannot be sent between threads safely
use kernel::dma_buf::dma_resv::ResvSet;
use kernel::dma_buf::DmaBuf;
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::workqueue;

pub(crate) fn case(a: ARef<DmaBuf>) -> kernel::error::Result {
    let set = ResvSet::lock(&[a.resv()])?; //~twin:
    workqueue::system().try_spawn(GFP_KERNEL, move || {
        drop(set); //~twin: drop(ResvSet::lock(&[a.resv()]));
    })?;
    Ok(())
}
