// SPDX-License-Identifier: GPL-2.0

//! A movable dma-buf exporter: the stand-in for GPU memory that migrates.
//!
//! Layers, dependencies pointing down:
//! - [`tests`]: KUnit bodies (suite `dmabuf_exporter_rs`).
//! - [`exporter`]: the exporter logic, no `unsafe`.
//! - [`abs`]: what the sample needs beyond the kernel crate (misc device,
//!   page chunks and their DMA tables, an owned workqueue): all of the
//!   module's `unsafe` lives there. The dma-buf abstractions themselves
//!   (`kernel::dma_buf`, `kernel::dma_buf::export`) are the kernel crate's,
//!   added by the patch series.

mod abs;
mod exporter;
mod tests;
mod uapi;

use kernel::dma_buf::DmaBuf;
use kernel::prelude::*;

module! {
    type: DmabufExporterRs,
    name: "dmabuf_exporter_rs",
    authors: ["umem-dmabuf-rs developers"],
    description: "Movable dma-buf exporter (sample and test fixture)",
    license: "GPL",
    imports_ns: ["DMA_BUF"],
}

/// This module, for what it exports (the buffers hold it).
pub(crate) fn this_module() -> &'static ThisModule {
    &<DmabufExporterRs as kernel::ModuleMetadata>::THIS_MODULE
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

/// For the C case `importers_follow_migration`: a new dynamic buffer of
/// `size` bytes, as a file descriptor, or a negative errno.
#[no_mangle]
extern "C" fn dmabuf_exp_kunit_create_fd(size: usize) -> i32 {
    let fd = exporter::create(size, &[], true).and_then(|b| b.install_fd(|_| Ok(())));
    match fd {
        Ok(fd) => fd,
        Err(e) => e.to_errno(),
    }
}

/// For the C case `uapi_layout_matches_c`: entry `i` of [`uapi::LAYOUT`],
/// -1 past the last.
#[no_mangle]
extern "C" fn dmabuf_exp_uapi_layout(i: u32) -> i64 {
    uapi::LAYOUT
        .get(i as usize)
        .and_then(|&v| i64::try_from(v).ok())
        .unwrap_or(-1)
}

/// For the C case: migrates the buffer of `fd`; 0 or a negative errno.
#[no_mangle]
extern "C" fn dmabuf_exp_kunit_migrate_fd(fd: i32, delay_ms: u32) -> i32 {
    match DmaBuf::from_fd(fd).and_then(|b| exporter::migrate(&b, delay_ms, false)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
