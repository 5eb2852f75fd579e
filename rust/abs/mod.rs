// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the C objects the importer uses.
//!
//! Written as if for `rust/kernel`: each submodule wraps one C subsystem and is
//! the only place where `unsafe` code appears in this crate.

pub(crate) mod device;
pub(crate) mod dma_buf;
pub(crate) mod dma_fence;
pub(crate) mod dma_resv;
pub(crate) mod errno;
pub(crate) mod kunit;
pub(crate) mod miscdev;
pub(crate) mod page;
pub(crate) mod scatterlist;
pub(crate) mod shim;
pub(crate) mod umem;
pub(crate) mod workqueue;
