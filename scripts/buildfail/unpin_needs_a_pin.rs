// The dma-buf core does not count pins per importer: an unpin that no pin
// of this attachment stands for would take another importer's pin away.
// Unpin takes the token its pin returned, so it cannot be called without
// one (the twin gives it the token, and builds).
// expect: E0061 this method takes 1 argument but 0 arguments were supplied
use kernel::dma_buf::Attachment;
use kernel::error::code::EINVAL;

pub(crate) fn case(attach: &Attachment) -> kernel::error::Result {
    let guard = attach.lock()?;
    let _pin = guard.view().pin()?; //~twin: let pin = guard.view().pin()?;
    guard.view().unpin(); //~twin: guard.view().unpin(pin).map_err(|_| EINVAL)?;
    Ok(())
}
