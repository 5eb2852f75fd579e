// SPDX-License-Identifier: GPL-2.0

//! The devices the importer deals with: the DMA device of an attachment
//! (`kernel::device::Device`) and the RDMA device of a umem.
//!
//! C headers: [`include/linux/device.h`](srctree/include/linux/device.h),
//! [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use kernel::bindings;
use kernel::device::Device;
use kernel::types::Opaque;

/// The DMA device ib_core passes to an importer (an RDMA device's
/// `dma_device`, or the one a driver names for a registration), borrowed.
///
/// The attachment of a umem takes no reference on its device, as the C
/// importer's takes none (`kernel::dma_buf::DynAttachment`): the umem's
/// owner borrows the device for `'a` (`OwnedUmem<'a>`), and handing the
/// umem to C past `'a` is the one step that relies on ib_core's lifecycle
/// (`OwnedUmem::into_raw`).
///
/// # Invariants
///
/// The device is live for `'a`.
#[derive(Clone, Copy)]
pub(crate) struct DmaDevice<'a>(&'a Device);

impl<'a> DmaDevice<'a> {
    /// The DMA device at `ptr`, or `None` for a null pointer (a driver
    /// without one, such as rxe).
    ///
    /// # Safety
    ///
    /// `ptr` is null or a live device that stays live for `'a`.
    #[inline]
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::device) -> Option<Self> {
        if ptr.is_null() {
            return None;
        }
        // SAFETY: a live device for `'a` (the caller's contract).
        let dev = unsafe { Device::from_raw(ptr) };
        // INVARIANT: the caller's contract.
        Some(Self(dev))
    }

    /// The device.
    #[inline]
    pub(crate) fn device(self) -> &'a Device {
        self.0
    }

    /// The `struct device` (`Device` is `repr(transparent)` over it; the
    /// kernel crate keeps its own accessor private; for the KUnit suites).
    #[cfg(umem_kunit)]
    #[inline]
    pub(crate) fn as_raw(self) -> *mut bindings::device {
        core::ptr::from_ref(self.0).cast_mut().cast()
    }
}

/// A `struct ib_device`, borrowed.
///
/// # Invariants
///
/// The device is live while borrowed.
#[repr(transparent)]
pub(crate) struct IbDevice(Opaque<bindings::ib_device>);

impl IbDevice {
    /// # Safety
    ///
    /// `ptr` is a live ib_device that stays live for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `repr(transparent)`; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The device that does DMA for this RDMA device, if it has one (software
    /// devices such as rxe have none), for as long as this one is borrowed.
    ///
    /// For the KUnit cases only: every entry point of the importer is given
    /// its DMA device by ib_core, which keeps it for the umem's life.
    #[cfg(umem_kunit)]
    pub(crate) fn dma_device(&self) -> Option<DmaDevice<'_>> {
        // SAFETY: the ib_device is live while borrowed (type invariant) and keeps
        // its DMA device (its parent, or a device its driver holds) for its
        // whole life.
        unsafe { DmaDevice::from_raw((*self.as_raw()).dma_device) }
    }
}
