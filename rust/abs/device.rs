// SPDX-License-Identifier: GPL-2.0

//! The devices the importer deals with: the DMA device of an attachment and
//! the RDMA device of a umem.
//!
//! C headers: [`include/linux/device.h`](srctree/include/linux/device.h),
//! [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use core::ptr;
use kernel::bindings;
#[cfg(umem_exporter)]
use kernel::prelude::*;
use kernel::types::Opaque;

/// A `struct device` that DMA is done for, borrowed, or held as
/// `ARef<Device>` (`get_device`/`put_device`).
///
/// # Invariants
///
/// The device is live (its reference count is held by someone) while borrowed.
#[repr(transparent)]
pub(crate) struct Device(Opaque<bindings::device>);

impl Device {
    /// # Safety
    ///
    /// `ptr` is null or a live device that stays live for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::device) -> Option<&'a Self> {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { ptr.cast::<Self>().as_ref() }
    }

    #[inline]
    pub(crate) fn as_raw(&self) -> *mut bindings::device {
        // Not `Opaque::get`: the kernel crate's copy of it for `device` is not
        // inlined into modules. `repr(transparent)` down to the C struct.
        ptr::from_ref(self).cast_mut().cast()
    }

    /// The longest DMA segment the device supports (`dma_get_max_seg_size`):
    /// its DMA parameters' limit, 64 KiB if it has none.
    #[cfg(umem_exporter)]
    pub(crate) fn max_segment_size(&self) -> u32 {
        // SAFETY: the device is live; `dma_parms` is null or points to parameters
        // that live as long as the device.
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
    /// device DMA-capable if it was not (`dma_coerce_mask_and_coherent`).
    #[cfg(umem_exporter)]
    pub(crate) fn coerce_dma_mask(&self, bits: u32) -> Result {
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        // SAFETY: the device is live (type invariant).
        kernel::error::to_result(unsafe {
            bindings::dma_coerce_mask_and_coherent(self.as_raw(), mask)
        })
    }
}

// SAFETY: `get_device` and `put_device` keep the device live while a
// reference is held; the last `put_device` frees it through its release
// callback, on any thread.
#[cfg(umem_exporter)]
unsafe impl kernel::types::AlwaysRefCounted for Device {
    fn inc_ref(&self) {
        // SAFETY: the device is live (type invariant).
        unsafe { bindings::get_device(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: core::ptr::NonNull<Self>) {
        // SAFETY: the caller gives up one reference it held.
        unsafe { bindings::put_device(obj.cast().as_ptr()) }
    }
}

/// A `struct ib_device`, borrowed.
///
/// # Invariants
///
/// The device is live while borrowed.
#[cfg(umem_importer)]
#[repr(transparent)]
pub(crate) struct IbDevice(Opaque<bindings::ib_device>);

#[cfg(umem_importer)]
impl IbDevice {
    /// # Safety
    ///
    /// `ptr` is a live ib_device that stays live for `'a`.
    #[cfg(umem_importer)]
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    #[cfg(umem_importer)]
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The device that does DMA for this RDMA device, if it has one (software
    /// devices such as rxe have none).
    #[cfg(umem_importer)]
    pub(crate) fn dma_device(&self) -> Option<&Device> {
        // SAFETY: the ib_device is live (type invariant) and holds its DMA device
        // for its whole life.
        unsafe { Device::from_raw((*self.as_raw()).dma_device) }
    }
}
