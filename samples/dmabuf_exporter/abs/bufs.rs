// SPDX-License-Identifier: GPL-2.0

//! The buffers this module exported, found again: what a device's unbind
//! needs to move every buffer out of the device's memory.
//!
//! C header: [`include/linux/file.h`](srctree/include/linux/file.h)
//!
//! The list holds no reference (it would keep every buffer alive for ever).
//! An entry is the address of a `struct dma_buf`, removed by the buffer's
//! exporter data when the core drops it in its release, before the
//! `struct dma_buf` is freed; [`next_after`] takes a reference to a listed
//! buffer whose file is not already on its way out (`get_file_active()`).

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::dma_buf::export::{self, Exporter};
use kernel::dma_buf::DmaBuf;
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::{Arc, UniqueArc};

kernel::sync::global_lock! {
    // SAFETY: initialised once, by `init` (guarded by `READY`), before any
    // other use, which checks `READY`.
    unsafe(uninit) static LISTED: Mutex<KVec<usize>> = KVec::new();
}

/// Whether [`LISTED`] is initialised.
static READY: AtomicBool = AtomicBool::new(false);

/// Sets up the list (from module init; further calls do nothing).
pub(crate) fn init() {
    static INIT: AtomicBool = AtomicBool::new(false);
    if INIT.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: the first and only call (`INIT` above); nothing uses the lock
    // before `READY` is set below.
    unsafe { LISTED.init() };
    READY.store(true, Ordering::Release);
}

/// A buffer's place in the list, part of its exporter data: the entry is
/// removed when this is dropped.
///
/// # Invariants
///
/// Not zero, the value is the address of a `struct dma_buf` whose exporter
/// data holds this slot, and it is listed until the slot is dropped.
pub(crate) struct ListSlot(AtomicUsize);

impl ListSlot {
    /// A slot whose buffer is not listed (yet).
    pub(crate) const fn new() -> Self {
        Self(AtomicUsize::new(0))
    }
}

impl Drop for ListSlot {
    fn drop(&mut self) {
        let addr = *self.0.get_mut();
        if addr == 0 {
            return;
        }
        let mut list = LISTED.lock();
        list.retain(|a| *a != addr);
        if list.is_empty() {
            // Its storage goes with the last buffer: the module (which every
            // buffer holds) can be unloaded only then, and the static's value
            // is never dropped.
            *list = KVec::new();
        }
    }
}

/// Exports `data` as [`export::export`] does, and lists the buffer in the
/// slot `slot` finds in the data.
///
/// `data` is unique, so the buffer holds the only reference to it, and the
/// core drops it, with the slot, in its release: before the `struct dma_buf`
/// is freed, as the list needs.
pub(crate) fn export_listed<T: Exporter>(
    name: &'static CStr,
    data: Pin<UniqueArc<T>>,
    size: usize,
    slot: impl Fn(&T) -> &ListSlot,
) -> Result<ARef<DmaBuf>> {
    if !READY.load(Ordering::Acquire) {
        return Err(ENODEV);
    }
    let data: Arc<T> = data.into();
    let buf = export::export(name, data, size)?;
    let listed = slot(buf.exporter::<T>().ok_or(EINVAL)?);
    // CAST: the address is what the list keeps, a plain integer.
    let addr = buf.as_raw() as usize;
    LISTED.lock().push(addr, GFP_KERNEL)?;
    // INVARIANT: listed just now; the slot lives in the buffer's data.
    listed.0.store(addr, Ordering::Relaxed);
    Ok(buf)
}

/// The listed buffer with the lowest address above `after` that is still
/// alive, with a reference; `None` when there is none. Walking with the
/// address of the buffer it returned visits every buffer listed before the
/// walk began and still alive, without allocating (an unbind that cannot
/// fail uses it) and without holding the list's lock while the caller works
/// on a buffer.
pub(crate) fn next_after(after: usize) -> Option<ARef<DmaBuf>> {
    if !READY.load(Ordering::Acquire) {
        return None;
    }
    let list = LISTED.lock();
    let mut floor = after;
    loop {
        let addr = list.iter().copied().filter(|&a| a > floor).min()?;
        // CAST: an address the list keeps (type invariant of `ListSlot`).
        let raw = addr as *mut bindings::dma_buf;
        // SAFETY: `raw` is listed, so its `struct dma_buf` is not freed before
        // its exporter data drops its slot, which needs the lock we hold.
        // `get_file_active()` reads the file pointer under RCU and takes a
        // reference unless the file's count already dropped to zero (files
        // are freed by RCU, so a file being released is still readable).
        let file = unsafe { bindings::get_file_active(core::ptr::addr_of_mut!((*raw).file)) };
        if file.is_null() {
            // Being released: its slot waits for the lock to unlist it.
            floor = addr;
            continue;
        }
        // SAFETY: the reference just taken on the buffer's file is a reference
        // to the buffer (`get_dma_buf()` takes the same), now owned here. If it
        // is the last one, it is put after the lock is released (the caller
        // drops it; the buffer's release takes the lock).
        return Some(unsafe { ARef::from_raw(NonNull::new_unchecked(raw.cast::<DmaBuf>())) });
    }
}
