// SPDX-License-Identifier: GPL-2.0

//! dma-buf: buffers shared between devices and drivers.
//!
//! C header: [`include/linux/dma-buf.h`](srctree/include/linux/dma-buf.h)
//!
//! So far the reservation objects that serialise access to a buffer and the
//! fences its exporter publishes; buffers and attachments follow.

pub mod dma_fence;
pub mod dma_resv;
