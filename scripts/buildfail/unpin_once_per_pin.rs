// One pin, one unpin: the token is consumed by the unpin it pays for, so a
// second unpin of the same pin does not compile (the twin unpins once, and
// builds).
// expect: E0382 use of moved value: `pin`
use kernel::dma_buf::Attachment;
use kernel::error::code::EINVAL;

pub(crate) fn case(attach: &Attachment) -> kernel::error::Result {
    let guard = attach.lock()?;
    let pin = guard.view().pin()?;
    guard.view().unpin(pin).map_err(|_| EINVAL)?;
    guard.view().unpin(pin).map_err(|_| EINVAL)?; //~twin:
    Ok(())
}
