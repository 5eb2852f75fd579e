// SPDX-License-Identifier: GPL-2.0

//! Direct memory access (DMA): the types shared by mapping APIs.
//!
//! C header: [`include/linux/dma-mapping.h`](srctree/include/linux/dma-mapping.h)

use crate::bindings;

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
