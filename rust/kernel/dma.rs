// SPDX-License-Identifier: GPL-2.0

//! Direct memory access (DMA): the types shared by mapping APIs, and a
//! device's DMA parameters.
//!
//! C header: [`include/linux/dma-mapping.h`](srctree/include/linux/dma-mapping.h)

use crate::{bindings, device::Device, error::Result};

/// A bus address, as a device sees memory (`dma_addr_t`).
pub type DmaAddress = bindings::dma_addr_t;

/// The direction of a DMA mapping (`enum dma_data_direction`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DataDirection {
    /// `DMA_BIDIRECTIONAL`: the device reads and writes.
    Bidirectional,
    /// `DMA_TO_DEVICE`: the device reads.
    ToDevice,
    /// `DMA_FROM_DEVICE`: the device writes.
    FromDevice,
}

impl DataDirection {
    /// The direction of a C value; `None` for `DMA_NONE` or an unknown value.
    #[inline]
    pub fn from_raw(dir: bindings::dma_data_direction) -> Option<Self> {
        match dir {
            bindings::dma_data_direction_DMA_BIDIRECTIONAL => Some(Self::Bidirectional),
            bindings::dma_data_direction_DMA_TO_DEVICE => Some(Self::ToDevice),
            bindings::dma_data_direction_DMA_FROM_DEVICE => Some(Self::FromDevice),
            _ => None,
        }
    }

    /// The C value.
    #[inline]
    pub fn as_raw(self) -> bindings::dma_data_direction {
        match self {
            Self::Bidirectional => bindings::dma_data_direction_DMA_BIDIRECTIONAL,
            Self::ToDevice => bindings::dma_data_direction_DMA_TO_DEVICE,
            Self::FromDevice => bindings::dma_data_direction_DMA_FROM_DEVICE,
        }
    }
}

impl Device {
    /// The longest DMA segment the device supports (`dma_get_max_seg_size()`):
    /// the limit of its DMA parameters, 64 KiB if it has none.
    #[inline]
    pub fn dma_max_seg_size(&self) -> u32 {
        // SAFETY: the device is live (type invariant); `dma_parms` is null or
        // points to parameters that live as long as the device.
        let limit = unsafe {
            let parms = (*self.as_raw()).dma_parms;
            if parms.is_null() {
                0
            } else {
                (*parms).max_segment_size
            }
        };
        if limit == 0 {
            64 * 1024
        } else {
            limit
        }
    }

    /// Sets the streaming and coherent DMA masks to `bits` bits, making the
    /// device DMA-capable if it was not (`dma_coerce_mask_and_coherent()`).
    pub fn dma_coerce_mask_and_coherent(&self, bits: u32) -> Result {
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        // SAFETY: the device is live (type invariant).
        crate::error::to_result(unsafe {
            bindings::dma_coerce_mask_and_coherent(self.as_raw(), mask)
        })
    }
}
