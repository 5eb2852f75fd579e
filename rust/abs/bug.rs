// SPDX-License-Identifier: GPL-2.0

//! Kernel warnings for bugs of the caller.
//!
//! C header: [`include/asm-generic/bug.h`](srctree/include/asm-generic/bug.h)
//!
//! A misuse that the types cannot rule out (for example a reservation lock
//! proof for another buffer than the one passed) is a kernel bug: it is
//! reported like one in C code, as a WARNING with a backtrace, which test
//! runs treat as a failure, and the operation returns an error.

/// Emits a kernel WARNING (`WARN_ON(1)`) with a backtrace of the current task.
pub(crate) fn warn() {
    // SAFETY: `WARN_ON` may be called from any context and only reports.
    unsafe { kernel::bindings::WARN_ON(true) };
}

/// `WARN_ON_ONCE(cond)`: when `cond` is true, prints the message (with
/// `pr_err!`) and a WARNING, the first time at this call site only; returns
/// `cond`. The report is out of line and marked cold, so the check costs a
/// branch on the paths that pass it (`$arg` cannot name local variables).
macro_rules! warn_on_once {
    ($cond:expr, $($arg:tt)+) => {{
        static WARNED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
        #[cold]
        #[inline(never)]
        fn report() {
            if !WARNED.swap(true, core::sync::atomic::Ordering::Relaxed) {
                kernel::pr_err!($($arg)+);
                $crate::abs::bug::warn();
            }
        }
        let cond: bool = $cond;
        if cond {
            report();
        }
        cond
    }};
}
pub(crate) use warn_on_once;
