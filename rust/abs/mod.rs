// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the C objects the importer uses.
//!
//! Written as if for `rust/kernel`: each submodule wraps one C subsystem and is
//! the only place where `unsafe` code appears in this crate. The kernel crate
//! of the patched kernel has the first of them already (`kernel::dma_buf::
//! {dma_resv, dma_fence}`, patch 6 of the series, sources in `rust/kernel/`);
//! the rest moves there the same way.
//!
//! The exporter sample (`samples/dmabuf_exporter`) compiles the same files
//! with its own list, which adds `dma_buf_export`, `dma_fence`, `miscdev`,
//! `page` and `workqueue` and leaves out `shim` and `umem`. Inside shared files, what
//! only one of the two modules uses is compiled only there:
//! `#[cfg(umem_importer)]` or `#[cfg(umem_exporter)]`, set per module by
//! Kbuild.

pub(crate) mod bug;
pub(crate) mod device;
pub(crate) mod dma_buf;
pub(crate) mod errno;
pub(crate) mod kunit;
pub(crate) mod shim;
pub(crate) mod umem;
