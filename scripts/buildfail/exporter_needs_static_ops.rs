// An exporter type names its own static callback table
// (dma_buf_exporter_ops!), by which its buffers are recognised.
// expect: E0046
use kernel::dma::DataDirection;
use kernel::dma_buf::export::{BufLocked, ExportedTable, Exporter};
use kernel::dma_buf::Attachment;
use kernel::prelude::*;

#[repr(C)]
struct Table(kernel::types::Opaque<kernel::bindings::sg_table>);
// SAFETY: not run; only compiled.
unsafe impl ExportedTable for Table {}
// SAFETY: as above.
unsafe impl Send for Table {}

struct Exp;

#[vtable]
impl Exporter for Exp {
    type Table = Table;

    fn map(
        &self,
        _attach: &Attachment,
        _locked: &BufLocked<'_>,
        _dir: DataDirection,
    ) -> Result<KBox<Table>> {
        Err(EINVAL)
    }

    fn unmap(&self, _attach: &Attachment, _locked: &BufLocked<'_>, _table: KBox<Table>) {}
}
