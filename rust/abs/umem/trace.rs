// SPDX-License-Identifier: GPL-2.0

//! The umem trace events an importer emits itself
//! (`include/trace/events/ib_umem_dmabuf.h`, from the series): a map's wait
//! for the buffer's kernel fences, and a revocation. ib_core's entry points
//! emit the others (get, map, unmap, release) whichever importer serves
//! them, so that both importers give the same events.

use super::UmemDmabuf;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::time::{Instant, Monotonic};

kernel::declare_trace! {
    /// `trace_ib_umem_dmabuf_fence_wait()`.
    ///
    /// # Safety
    ///
    /// Nothing beyond the types: the event copies its arguments and only
    /// prints the pointer.
    unsafe fn ib_umem_dmabuf_fence_wait(umem: *const c_void, ns: u64, err: c_int);

    /// `trace_ib_umem_dmabuf_revoke()`.
    ///
    /// # Safety
    ///
    /// As for `ib_umem_dmabuf_fence_wait`.
    unsafe fn ib_umem_dmabuf_revoke(umem: *const c_void, pinned: bool);
}

/// Whether the tracepoint `$tp` (a `bindings::__tracepoint_*` static) is on,
/// as C's `trace_*_enabled()` says ([`crate::abs::static_key_on`]).
macro_rules! tracepoint_on {
    ($tp:path) => {{
        #[cfg(CONFIG_TRACEPOINTS)]
        let on = crate::abs::static_key_on!($tp, kernel::bindings::tracepoint, key);
        #[cfg(not(CONFIG_TRACEPOINTS))]
        let on = false;
        on
    }};
}

/// Whether the `revoke` event is on.
#[inline(always)]
pub(crate) fn revoke_on() -> bool {
    tracepoint_on!(kernel::bindings::__tracepoint_ib_umem_dmabuf_revoke)
}

impl UmemDmabuf {
    /// Runs `wait`, a wait for the buffer's kernel fences, and emits the
    /// `fence_wait` event with its duration and result when the event is on
    /// (the clock is read only then). `wait` is inlined in both branches and
    /// only the event's emission is out of line: passed to a function of its
    /// own, the closure and what it borrows would be built in memory on
    /// every map, the event on or off (five instructions of a one-entry
    /// registration; with the whole timed path inline, the registration ran
    /// 1.6 % more instructions with the event off).
    #[inline(always)]
    pub(crate) fn traced_fence_wait(&self, wait: impl FnOnce() -> Result) -> Result {
        if tracepoint_on!(kernel::bindings::__tracepoint_ib_umem_dmabuf_fence_wait) {
            let start = Instant::<Monotonic>::now();
            let r = wait();
            self.trace_fence_wait(start, &r);
            return r;
        }
        wait()
    }

    /// Emits the `fence_wait` event of a wait that started at `start` and
    /// ended with `r`.
    #[cold]
    #[inline(never)]
    fn trace_fence_wait(&self, start: Instant<Monotonic>, r: &Result) {
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(0);
        let err = match r {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
        // SAFETY: the event copies its arguments; the pointer is only printed.
        unsafe { ib_umem_dmabuf_fence_wait(self.raw().cast_const().cast(), ns, err) };
    }

    /// Emits the `revoke` event of the umem, which is being revoked;
    /// `pinned`: it holds a pin. Callers check [`revoke_on`] first; out of
    /// their way, as `trace_fence_wait`.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_revoke(&self, pinned: bool) {
        // SAFETY: as in `traced_fence_wait`.
        unsafe { ib_umem_dmabuf_revoke(self.raw().cast_const().cast(), pinned) };
    }
}
