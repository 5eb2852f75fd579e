// A ResvSet holds its objects' reservation locks until it is dropped, and
// the proof of one of them (ResvSet::locked) borrows the set: a proof kept
// past the set, after the locks were released, does not compile (the twin
// uses the proof while the set holds the locks, and builds).
// expect: E0597 `set` does not live long enough
use kernel::dma_buf::dma_resv::ResvSet;
use kernel::dma_buf::DmaBuf;
use kernel::prelude::*;

pub(crate) fn case(a: &DmaBuf, b: &DmaBuf) -> kernel::error::Result {
    let proof = {
        let set = ResvSet::lock(&[a.resv(), b.resv()])?;
        set.locked(a.resv()).ok_or(EINVAL)? //~twin: set.locked(a.resv()).ok_or(EINVAL)?.wait_kernel_fences()?
    };
    proof.wait_kernel_fences() //~twin: Ok(proof)
}
