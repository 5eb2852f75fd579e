// SPDX-License-Identifier: GPL-2.0

//! A workqueue owned by a module, drained when dropped.
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)
//!
//! Work spawned on a shared queue may still run after the module that queued
//! it is gone; a module's own queue, destroyed at module exit, cannot.

use core::ptr::NonNull;
use kernel::bindings;
use kernel::prelude::*;
use kernel::workqueue::Queue;

/// A workqueue allocated by this module.
///
/// # Invariants
///
/// `wq` was returned by `alloc_workqueue` and is destroyed (after running
/// everything queued) on drop.
pub(crate) struct OwnedQueue {
    wq: NonNull<bindings::workqueue_struct>,
}

// SAFETY: A workqueue may be used and destroyed from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: Queueing is thread-safe.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// Allocates an unbound queue named `name`.
    pub(crate) fn new(name: &'static kernel::str::CStr) -> Result<Self> {
        // The function behind the C macro `alloc_workqueue()` since 6.16.
        let alloc = bindings::alloc_workqueue_noprof;
        // SAFETY: the format "%s" consumes the one NUL-terminated string passed,
        // `name`.
        let wq = unsafe {
            alloc(
                kernel::c_str!("%s").as_char_ptr(),
                bindings::wq_flags_WQ_UNBOUND,
                0,
                name.as_char_ptr(),
            )
        };
        // INVARIANT: allocated above.
        Ok(Self {
            wq: NonNull::new(wq).ok_or(ENOMEM)?,
        })
    }

    /// The queue, to spawn work on.
    pub(crate) fn queue(&self) -> &Queue {
        // SAFETY: the queue lives as long as `self` (type invariant).
        unsafe { Queue::from_raw(self.wq.as_ptr()) }
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc_workqueue` (type invariant); destroyed once.
        // `destroy_workqueue` runs every pending item first.
        unsafe { bindings::destroy_workqueue(self.wq.as_ptr()) };
    }
}

/// Sleeps for `ms` milliseconds (`msleep`).
pub(crate) fn msleep(ms: u32) {
    // SAFETY: `msleep` may be called from any sleepable context.
    unsafe { bindings::msleep(ms) };
}
