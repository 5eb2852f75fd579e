// One pin, one unpin: the token is consumed by the unpin it pays for, so a
// second unpin of the same pin does not compile (the twin unpins once, and
// builds).
// expect: E0382 use of moved value: `pin`
use kernel::dma_buf::Attachment;

pub(crate) fn case(attach: &Attachment) -> kernel::error::Result {
    let guard = attach.lock();
    let pin = guard.view().pin()?;
    guard.view().unpin(pin);
    guard.view().unpin(pin); //~twin:
    Ok(())
}
