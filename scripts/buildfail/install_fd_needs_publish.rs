// A descriptor is installed only after the caller published it: the one
// way to give a process a descriptor for a buffer takes the step that
// publishes it (and that can still fail, leaving nothing to close), so
// installing one without it does not compile.
// expect: E0061 this method takes 1 argument but 0 arguments were supplied
use kernel::dma_buf::DmaBuf;

pub(crate) fn case(buf: &DmaBuf) -> kernel::error::Result<i32> {
    buf.install_fd() //~twin: buf.install_fd(|_fd| Ok(()))
}
