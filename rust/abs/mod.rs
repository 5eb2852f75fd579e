// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the C objects the importer uses.
//!
//! The only place where `unsafe` code appears in this crate. The generic
//! dma-buf, DMA, scatterlist and KUnit abstractions are modules of the kernel
//! crate (7.3's own, and `kernel::dma_buf` from the patch series); what is
//! left here wraps the RDMA side: the `ib_device` and `ib_umem_dmabuf` of
//! ib_core and the hook through which ib_core calls this module (the
//! series' "RDMA/umem: allow a module to provide the dma-buf importer"),
//! plus the C shim's parameters and the fixtures of the Rust KUnit suite.

pub(crate) mod device;
pub(crate) mod shim;
#[cfg(umem_kunit)]
pub(crate) mod testing;
pub(crate) mod umem;
