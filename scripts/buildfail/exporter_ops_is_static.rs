// DmaBuf::exporter recognises an exporter type by the address of its table,
// so the table must be a static of its own: ExporterOps::new takes a
// reference to the static it initialises, and a constant, which would have
// to refer to itself, does not compile (the twin uses the static that
// dma_buf_exporter_ops! defines, and builds).
// expect: E0391 cycle detected when
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
    const OPS: &'static ExporterOps<Self> = &unsafe { ExporterOps::new(Self::OPS) }; //~twin: const OPS: &'static ExporterOps<Self> = kernel::dma_buf_exporter_ops!(Exp);

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

pub(crate) fn case(buf: &kernel::dma_buf::DmaBuf) -> bool {
    buf.exporter::<Exp>().is_some()
}
