// Nothing closes an arbitrary descriptor of the process: install_fd()
// installs a descriptor only after it was published.
// expect: E0599
use kernel::dma_buf::DmaBuf;

pub(crate) fn case() {
    DmaBuf::close_fd(0);
}
