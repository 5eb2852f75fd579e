// Only the dma-buf importer's Mapping may trim a borrowed table.
// expect: E0624
use kernel::scatterlist::SGTable;

pub(crate) fn case(table: &SGTable) {
    // SAFETY: not run; only compiled.
    let _window = unsafe { table.trim(0, 4096) };
}
