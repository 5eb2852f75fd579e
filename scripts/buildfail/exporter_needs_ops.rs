// An exporter type names its callback table, by which its buffers are
// recognised: an impl without OPS does not compile (the twin names the
// table dma_buf_exporter_ops! makes, and builds). That the table is a
// static is exporter_ops_is_static's case.
// expect: E0046 missing: `OPS`
use kernel::dma::DataDirection;
use kernel::dma_buf::export::{BufLocked, ExportedTable, Exporter, ExporterOps};
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
    //~twin: const OPS: &'static ExporterOps<Self> = kernel::dma_buf_exporter_ops!(Exp);

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
