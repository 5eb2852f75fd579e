// SPDX-License-Identifier: GPL-2.0

//! Fixtures of the module's Rust KUnit suite ([`crate::tests`]): a buffer of
//! the C suites' mock exporter, the system heap's, their test ib_device, a
//! device's reference count and a look at a move fence.
//!
//! C headers: [`include/umem_mock_exporter.h`](../../include/umem_mock_exporter.h),
//! [`include/umem_test.h`](../../include/umem_test.h)

use super::device::{DmaDevice, IbDevice};
use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::bindings;
use kernel::device::{Bound, Device};
use kernel::dma_buf::export::MoveFence;
use kernel::dma_buf::DmaBuf;
use kernel::ffi::c_void;
use kernel::kunit::Test;
use kernel::prelude::*;
use kernel::sync::aref::ARef;

/// `struct umem_mock_exp`, opaque here.
#[repr(C)]
struct MockExp {
    _opaque: [u8; 0],
}

extern "C" {
    fn umem_mock_create(
        test: *mut bindings::kunit,
        lens: *const u32,
        nents: u32,
        dynamic: bool,
    ) -> *mut MockExp;
    // `struct dma_buf` and `struct ib_device`, untyped here: their bindings
    // end in flexible arrays, which the FFI lint rejects in a signature.
    fn umem_mock_dmabuf(exp: *mut MockExp) -> *mut c_void;
    fn umem_mock_unpinned(exp: *mut MockExp) -> u32;
    fn umem_mock_mapped(exp: *mut MockExp) -> u32;
    fn umem_mock_destroy(test: *mut bindings::kunit, exp: *mut MockExp);
    fn umem_test_ibdev(test: *mut bindings::kunit) -> *mut c_void;
    fn umem_kunit_heap_buf(test: *mut bindings::kunit) -> *mut c_void;
}

/// The running case's `struct kunit`.
fn current(_case: &Test) -> *mut bindings::kunit {
    // SAFETY: FFI call without preconditions; `_case` shows that a case runs
    // on this thread, so the result is its live `struct kunit`.
    unsafe { bindings::kunit_get_current_test() }
}

/// A dynamic buffer of the mock exporter (pin, move notifications) for one
/// case; dropping it checks that every attach, pin and map was undone and
/// that the buffer was released.
///
/// # Invariants
///
/// `exp` was made by `umem_mock_create` for the case whose `struct kunit` is
/// `test`, which outlives `'t`; it is destroyed once, in `drop`.
pub(crate) struct MockBuffer<'t> {
    exp: NonNull<MockExp>,
    test: *mut bindings::kunit,
    _case: PhantomData<&'t Test>,
}

impl<'t> MockBuffer<'t> {
    /// Exports a buffer whose table has entries of the lengths `lens` (the
    /// exporter keeps the slice, hence `'static`).
    pub(crate) fn new(case: &'t Test, lens: &'static [u32]) -> Result<Self> {
        let nents = u32::try_from(lens.len())?;
        let test = current(case);
        // SAFETY: `test` is the running case; `lens` has `nents` entries and
        // outlives the buffer. On failure the call ends the case, as
        // KUNIT_ASSERT does, so a null return is not expected.
        let exp = unsafe { umem_mock_create(test, lens.as_ptr(), nents, true) };
        // INVARIANT: made for the running case just now.
        Ok(Self {
            exp: NonNull::new(exp).ok_or(ENOMEM)?,
            test,
            _case: PhantomData,
        })
    }

    /// How many pins the exporter has had undone so far.
    pub(crate) fn unpinned(&self) -> u32 {
        // SAFETY: the buffer lives until `self` is dropped (type invariant).
        unsafe { umem_mock_unpinned(self.exp.as_ptr()) }
    }

    /// How many tables the exporter has handed out so far.
    pub(crate) fn mapped(&self) -> u32 {
        // SAFETY: the buffer lives until `self` is dropped (type invariant).
        unsafe { umem_mock_mapped(self.exp.as_ptr()) }
    }

    /// A new reference to the buffer.
    pub(crate) fn dmabuf(&self) -> ARef<DmaBuf> {
        // SAFETY: the buffer lives until `self` is dropped (type invariant),
        // and the reference taken here keeps it alive after.
        let buf = unsafe { DmaBuf::from_raw(umem_mock_dmabuf(self.exp.as_ptr()).cast()) };
        buf.into()
    }
}

impl Drop for MockBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: made for this case, which is still running (`'t`), and
        // destroyed once (type invariant).
        unsafe { umem_mock_destroy(self.test, self.exp.as_ptr()) };
    }
}

/// The system-heap buffer the module was loaded with (`kunit_heap_fd`,
/// kunit/heap_test.c, which checked its exporter and its `HEAP_SIZE`); `None`,
/// the case marked skipped, when there is none (every boot but the
/// real-tables one).
pub(crate) fn heap_buffer(case: &Test) -> Option<ARef<DmaBuf>> {
    // SAFETY: `current` is the running case.
    let raw = unsafe { umem_kunit_heap_buf(current(case)) }.cast::<bindings::dma_buf>();
    if raw.is_null() {
        return None;
    }
    // SAFETY: the module holds the buffer until it is unloaded, after its
    // suites ran; the reference taken here keeps it after that.
    let buf = unsafe { DmaBuf::from_raw(raw) };
    Some(buf.into())
}

/// The size of the heap buffer: 19 pages (kunit/heap_test.c, HEAP_PAGES).
pub(crate) const HEAP_SIZE: usize = 19 * kernel::page::PAGE_SIZE;

/// An RDMA device for the running case, never registered, and its DMA
/// device, a KUnit device with 64-bit DMA, bound to a KUnit driver; both
/// are freed when the case ends.
pub(crate) fn ib_device(case: &Test) -> Result<(&IbDevice, &Device<Bound>)> {
    // SAFETY: `current` is the running case.
    let ibdev = unsafe { umem_test_ibdev(current(case)) }.cast::<bindings::ib_device>();
    if ibdev.is_null() {
        return Err(ENOMEM);
    }
    // SAFETY: `umem_test_ibdev()` sets a KUnit device registered for the case,
    // which nothing else has seen yet.
    let dev = unsafe { (*ibdev).dma_device };
    // SAFETY: as above: if not null, a live device that nothing else uses yet.
    if dev.is_null() || unsafe { (*dev).driver }.is_null() {
        return Err(ENODEV);
    }
    // SAFETY: live until the case ends, which outlives the borrow of `case`;
    // the DMA device stays bound until then (KUnit unregisters it when the
    // case ends; the KUnit bus matches every driver, and
    // `kunit_device_register()` registers one first).
    Ok(unsafe { (IbDevice::from_raw(ibdev), Device::<Bound>::from_raw(dev)) })
}

/// A C reference to the `struct dma_fence` of a [`MoveFence`], kept past the
/// fence's own handle, to see what became of the fence after that handle is
/// dropped.
///
/// # Invariants
///
/// `fence` is live: this value owns one reference to it.
pub(crate) struct FenceWatch {
    fence: NonNull<bindings::dma_fence>,
}

impl FenceWatch {
    /// Takes a reference to `fence`'s C fence.
    pub(crate) fn new(fence: &MoveFence) -> Self {
        let raw = fence.as_raw();
        // SAFETY: `fence` holds a reference while this call takes another.
        unsafe { bindings::dma_fence_get(raw) };
        // INVARIANT: the reference taken above.
        Self {
            // SAFETY: `as_raw` of a live fence is not null.
            fence: unsafe { NonNull::new_unchecked(raw) },
        }
    }

    /// Whether the fence is signalled.
    pub(crate) fn is_signaled(&self) -> bool {
        // SAFETY: live by the type invariant.
        unsafe { bindings::dma_fence_is_signaled(self.fence.as_ptr()) }
    }
}

impl Drop for FenceWatch {
    fn drop(&mut self) {
        // SAFETY: the reference this value owns, given up once.
        unsafe { bindings::dma_fence_put(self.fence.as_ptr()) };
    }
}

/// The reference count of `dev` (its kobject's), for cases that check who
/// holds the device.
pub(crate) fn device_refs(dev: DmaDevice<'_>) -> i32 {
    // SAFETY: the device is live (invariant of `DmaDevice`); its kobject's
    // count is an atomic, read as `kref_read()` reads it.
    unsafe { bindings::atomic_read(&raw const (*dev.as_raw()).kobj.kref.refcount.refs) }
}
