// DMA masks are set on a bus device being probed (unsafe, kernel::dma) or
// on a KUnit case's fresh device (kunit::Test::dma_device), not on any
// &Device (the twin sets it on a PCI device in its probe, and builds).
// expect: E0599 no method named `dma_set_mask_and_coherent` found
use kernel::dma::{Device as _, DmaMask};

pub(crate) fn case(dev: &kernel::device::Device) -> kernel::error::Result { //~twin: pub(crate) fn case(dev: &kernel::pci::Device<kernel::device::Core<'_>>) -> kernel::error::Result {
    // SAFETY: not run; only compiled.
    unsafe { dev.dma_set_mask_and_coherent(DmaMask::new::<64>()) }
}
