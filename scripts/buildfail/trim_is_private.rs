// Only the dma-buf importer's Mapping may trim a borrowed table (the twin
// reads the same table through its public API, and builds).
// expect: E0624 method `trim` is private
use kernel::scatterlist::SGTable;

pub(crate) fn case(table: &SGTable) -> usize {
    // SAFETY: not run; only compiled.
    let _window = unsafe { table.trim(0, 4096) }; //~twin: let _window = table.iter().count();
    0
}
