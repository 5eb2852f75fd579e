// SPDX-License-Identifier: GPL-2.0

//! A movable dma-buf exporter: the stand-in for GPU memory that migrates.
//!
//! Layers, dependencies pointing down:
//! - [`tests`]: KUnit bodies (suite `dmabuf_exporter_rs`).
//! - [`exporter`]: the exporter logic, no `unsafe`.
//! - [`abs`]: the project's abstraction layer (`rust/abs/`), shared with
//!   `umem_dmabuf_rs.ko` by path: all `unsafe` lives there.

// Shared with the importer module; what only one of the two uses is compiled
// only there (see rust/umem_rs.rs).
#[path = "../../rust/abs"]
mod abs {
    pub(crate) mod bug;
    pub(crate) mod device;
    pub(crate) mod dma_buf;
    pub(crate) mod dma_buf_export;
    pub(crate) mod errno;
    pub(crate) mod kunit;
    pub(crate) mod miscdev;
    pub(crate) mod page;
    pub(crate) mod workqueue;
}
mod exporter;
mod tests;
mod uapi;

use kernel::prelude::*;

module! {
    type: DmabufExporterRs,
    name: "dmabuf_exporter_rs",
    author: "umem-dmabuf-rs developers",
    description: "Movable dma-buf exporter (sample and test fixture)",
    license: "GPL",
}

struct DmabufExporterRs {
    _dev: Pin<KBox<abs::miscdev::MiscDevice<uapi::ExporterIoctl>>>,
}

impl kernel::Module for DmabufExporterRs {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let dev = abs::miscdev::MiscDevice::register(module, kernel::c_str!("dmabuf_exporter_rs"))?;
        Ok(DmabufExporterRs { _dev: dev })
    }
}
