// SPDX-License-Identifier: GPL-2.0

//! Kernel warnings for bugs of the caller.
//!
//! C header: [`include/asm-generic/bug.h`](srctree/include/asm-generic/bug.h)
//!
//! A misuse that the types cannot rule out (for example a mapping given back
//! through another attachment than the one it was made for) is a kernel bug:
//! it is reported like one in C code, as a WARNING with a backtrace, which
//! test runs treat as a failure, and the operation refuses to go on.

/// Emits a kernel WARNING (`WARN_ON(1)`) with a backtrace of the current task.
///
/// Public but hidden: it is called by [`warn_on_once!`].
#[doc(hidden)]
#[cold]
pub fn warn() {
    // SAFETY: `WARN_ON` may be called from any context and only reports.
    unsafe { crate::bindings::WARN_ON(true) };
}

/// `WARN_ON_ONCE(cond)` with a message.
///
/// When `cond` is true, prints the message (with [`pr_err!`](crate::pr_err))
/// and a WARNING, the first time at this call site only; evaluates to `cond`.
/// The report is out of line and marked cold, so a check that passes costs a
/// branch (the message arguments cannot name local variables).
///
/// # Examples
///
/// ```
/// fn check(len: usize) -> bool {
///     !kernel::warn_on_once!(len > 4096, "length out of range\n")
/// }
/// assert!(check(16));
/// ```
#[macro_export]
macro_rules! warn_on_once {
    ($cond:expr, $($arg:tt)+) => {{
        static WARNED: ::core::sync::atomic::AtomicBool =
            ::core::sync::atomic::AtomicBool::new(false);
        #[cold]
        #[inline(never)]
        fn report() {
            if !WARNED.swap(true, ::core::sync::atomic::Ordering::Relaxed) {
                $crate::pr_err!($($arg)+);
                $crate::bug::warn();
            }
        }
        let cond: bool = $cond;
        if cond {
            report();
        }
        cond
    }};
}
