// SPDX-License-Identifier: GPL-2.0

//! What the sample's KUnit cases need beside `kernel::dma_buf`: the DMA
//! entries of a mapping, a device of the case's own and a clock.

use kernel::device::{Bound, Device};
use kernel::dma_buf::Mapping;
use kernel::kunit::Test;
use kernel::prelude::*;

/// The `(address, length)` of each DMA entry of `mapping`.
pub(crate) fn entries(mapping: &Mapping<'_>) -> Result<KVec<(u64, u32)>> {
    let mut v = KVec::new();
    for sg in mapping.table().iter() {
        v.push((sg.dma_address(), u32::try_from(sg.dma_len())?), GFP_KERNEL)?;
    }
    Ok(v)
}

/// A device of the running case that can address 64 bits of DMA (KUnit
/// releases it when the case ends).
pub(crate) fn case_device<'a>(t: &'a Test, name: &'static CStr) -> Result<&'a Device<Bound>> {
    let dev = t.dma_device(name, kernel::dma::DmaMask::new::<64>())?;
    Ok(dev)
}

/// A point in time of the monotonic clock.
pub(crate) struct Stamp(kernel::time::Instant<kernel::time::Monotonic>);

impl Stamp {
    /// Now.
    pub(crate) fn now() -> Self {
        let now = kernel::time::Instant::now();
        Self(now)
    }

    /// Milliseconds since the stamp.
    pub(crate) fn elapsed_ms(&self) -> i64 {
        self.0.elapsed().as_millis()
    }
}
