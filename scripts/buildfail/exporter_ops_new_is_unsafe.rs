// DmaBuf::exporter recognises an exporter type by the address of its table,
// which ExporterOps::new records from the reference it is given: that must
// be the static the table initialises, which the compiler cannot check, so
// the call is unsafe. dma_buf_exporter_ops! makes the one call that keeps
// the promise; the twin states it in an unsafe block, and builds.
// expect: E0133 is unsafe and requires unsafe
use kernel::dma_buf::export::ExporterOps;
use kernel::dma_buf::testing::TestExporter;

pub(crate) fn case() -> usize {
    static OTHER: ExporterOps<TestExporter> = ExporterOps::new(&OTHER); //~twin: static OTHER: ExporterOps<TestExporter> = unsafe { ExporterOps::new(&OTHER) };
    OTHER.as_raw() as usize
}
