// SPDX-License-Identifier: GPL-2.0

//! Rust implementation of the RDMA `ib_umem` dma-buf importer.
//!
//! Layers, with dependencies pointing down only:
//! - [`tests`]: KUnit test bodies called from the C suite tables.
//! - [`importer`]: the importer logic, with exact C parity and no `unsafe`.
//! - the `extern "C"` entry points ib_core calls, generated below by
//!   [`umem_importer_ffi!`] from the abstraction layer.
//! - [`abs`]: safe abstractions over the C objects; all `unsafe` lives there.

// The abstraction layer is a library shared with the exporter sample
// (samples/dmabuf_exporter includes it by path). What only one of the two
// modules uses is compiled only there: `#[cfg(umem_importer)]` or
// `#[cfg(umem_exporter)]`, set per module by Kbuild.
mod abs;
mod importer;
mod tests;

umem_importer_ffi!(importer::RustImporter);

use kernel::prelude::*;

module! {
    type: UmemDmabufRs,
    name: "umem_dmabuf_rs",
    author: "umem-dmabuf-rs developers",
    description: "Rust ib_umem dma-buf importer",
    license: "GPL",
}

struct UmemDmabufRs;

impl kernel::Module for UmemDmabufRs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        abs::shim::init()?;
        pr_info!("loaded\n");
        Ok(UmemDmabufRs)
    }
}

impl Drop for UmemDmabufRs {
    fn drop(&mut self) {
        abs::shim::exit();
        pr_info!("unloaded\n");
    }
}
