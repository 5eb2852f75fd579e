// SPDX-License-Identifier: GPL-2.0

//! Fixtures of the module's Rust KUnit suite ([`crate::tests`]): a buffer of
//! the C suites' mock exporter, their test ib_device, and the misuses the
//! suite must stage with `unsafe`: a mapping of another attachment, offered
//! to a umem and to an attachment's unmap.
//!
//! C headers: [`include/umem_mock_exporter.h`](../../include/umem_mock_exporter.h),
//! [`include/umem_test.h`](../../include/umem_test.h)

use super::device::{DmaDevice, IbDevice};
use super::umem::UmemLocked;
use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::bindings;
use kernel::device::{Bound, Device};
use kernel::dma_buf::{Attachment, DmaBuf, Mapping, MappingParts};
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
    fn umem_mock_unmapped(exp: *mut MockExp) -> u32;
    fn umem_mock_destroy(test: *mut bindings::kunit, exp: *mut MockExp);
    fn umem_test_ibdev(test: *mut bindings::kunit) -> *mut c_void;
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

    /// How many tables the exporter has had back so far.
    pub(crate) fn unmapped(&self) -> u32 {
        // SAFETY: the buffer lives until `self` is dropped (type invariant).
        unsafe { umem_mock_unmapped(self.exp.as_ptr()) }
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

/// Where the warning of a refused unmap comes from: the source file of
/// [`kernel::dma_buf::LockedAttachment::unmap`].
const UNMAP_WARNING_SITE: &str = "rust/kernel/dma_buf.rs";

/// Maps `other`, another attachment of the buffer `umem` is attached to,
/// under the lock `umem` holds, trims it to the umem's range as the importer
/// does, and offers it to [`UmemLocked::install_mapping`], which must refuse
/// a mapping that is not of the umem's own attachment.
///
/// `Ok(true)`: refused, as it must be. `Ok(false)`: installed; it is taken
/// back out. Either way it is then unmapped through `other`, leaving `umem`
/// unmapped. `EINVAL` if `other` belongs to another buffer; `EBUSY` if
/// `umem` holds a mapping already.
pub(crate) fn install_foreign<'a>(umem: &UmemLocked<'a>, other: &'a Attachment) -> Result<bool> {
    let other = umem.attachment().sibling(other).ok_or(EINVAL)?;
    if umem.is_mapped() {
        return Err(EBUSY);
    }
    // SAFETY: `other` is an attachment of the case's own, which maps it only
    // here and in `unmap_foreign`, each time unmapped before returning.
    let mut mapping = unsafe { other.map() }?;
    let start = umem.umem().address();
    mapping.set_window(start, start.wrapping_add(umem.umem().length()));
    let (mapping, refused) = match umem.install_mapping(mapping) {
        Err(refused) => (refused, true),
        // Taken back as the umem's, but made for `other`, window included.
        Ok(()) => (umem.take_mapping().ok_or(EINVAL)?, false),
    };
    other.unmap(mapping);
    Ok(refused)
}

/// Maps `other`, another attachment of the buffer `umem` is attached to,
/// under the lock `umem` holds, and gives that mapping to the unmap of
/// `umem`'s own attachment ([`kernel::dma_buf::LockedAttachment::unmap`]),
/// which must refuse it: warn, and neither unmap it nor give it to the
/// exporter. `between` runs after that call (to read the exporter's
/// counts); then the mapping is unmapped through `other`, as it must be.
/// The warning is expected: it is printed between the kernel log lines
/// `umem-expect-warnings-begin NAME SITE` and `-end NAME`, which the host's
/// verdict reads; SITE is the source file the warning comes from, and a
/// warning from anywhere else inside the window still fails the run.
///
/// `EINVAL` if `other` belongs to another buffer; `EBUSY` if `umem` holds
/// a mapping already.
pub(crate) fn unmap_foreign<'a>(
    umem: &UmemLocked<'a>,
    other: &'a Attachment,
    name: &str,
    between: impl FnOnce(),
) -> Result {
    let other = umem.attachment().sibling(other).ok_or(EINVAL)?;
    if umem.is_mapped() {
        return Err(EBUSY);
    }
    // SAFETY: as in `install_foreign`; the parts are taken back at once.
    let parts = unsafe { other.map()?.into_raw_parts() };
    let sgt = parts.sgt;
    // SAFETY: the parts of the mapping of `other` made just now, given up once.
    let mapping = unsafe { Mapping::from_raw_parts(other, parts) };
    pr_err!("umem-expect-warnings-begin {name} {UNMAP_WARNING_SITE}\n");
    umem.attachment().unmap(mapping);
    pr_err!("umem-expect-warnings-end {name}\n");
    between();
    // A refused mapping is leaked, not unmapped: its table is still the one
    // live mapping of `other` (had it been unmapped, this second unmap would
    // unbalance the exporter's counts, which the buffer checks when it goes).
    let parts = MappingParts { sgt, window: None };
    // SAFETY: the parts of the mapping of `other` made above, which had no
    // window and which the refused unmap gave up without undoing.
    let mapping = unsafe { Mapping::from_raw_parts(other, parts) };
    other.unmap(mapping);
    Ok(())
}

/// The reference count of `dev` (its kobject's), for cases that check who
/// holds the device.
pub(crate) fn device_refs(dev: DmaDevice<'_>) -> i32 {
    // SAFETY: the device is live (invariant of `DmaDevice`); its kobject's
    // count is an atomic, read as `kref_read()` reads it.
    unsafe { bindings::atomic_read(&raw const (*dev.as_raw()).kobj.kref.refcount.refs) }
}
