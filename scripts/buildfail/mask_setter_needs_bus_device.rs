// DMA masks are set on a bus device being probed (unsafe, kernel::dma) or
// on a KUnit case's fresh device (kunit::Test::dma_device), not on any
// &Device.
// expect: E0599
use kernel::device::Device;

pub(crate) fn case(dev: &Device) {
    let _ = dev.dma_coerce_mask_and_coherent(64);
}
