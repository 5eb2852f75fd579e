// SPDX-License-Identifier: GPL-2.0

//! KUnit suites and cases written in Rust.
//!
//! C header: [`include/kunit/test.h`](srctree/include/kunit/test.h)
//!
//! [`kunit_suite!`](crate::kunit_suite) builds what C's
//! `kunit_test_suites()` builds: the case array, the `struct kunit_suite` and
//! a pointer to it in the `.kunit_test_suites` section, which the module
//! loader hands to KUnit (`mod->kunit_suites`); the suite runs when the module
//! is loaded. A case is a plain `fn(&Test)`; a failed check reports its file,
//! line and message to the running test and lets the case continue, like
//! `KUNIT_EXPECT_*`.

use crate::bindings;
use crate::device::Device;
use crate::str::CString;
use crate::types::Opaque;
use core::cell::UnsafeCell;
use core::fmt;

/// A running KUnit test case.
///
/// # Invariants
///
/// The wrapped `struct kunit` is the one of the case currently running on this
/// thread; it outlives every reference handed out for the case.
#[repr(transparent)]
pub struct Test(Opaque<bindings::kunit>);

impl Test {
    /// # Safety
    ///
    /// `ptr` is the `struct kunit` of the running case and outlives `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::kunit) -> &'a Self {
        // SAFETY: `repr(transparent)` over the C struct; validity from the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// A device that lives until the case ends (`kunit_device_register`).
    pub fn device(&self, name: &'static crate::str::CStr) -> crate::error::Result<&Device> {
        // SAFETY: the test is the running case (type invariant); the device is
        // released by KUnit when the case ends, which outlives `&self`.
        let dev = crate::error::from_err_ptr(unsafe {
            bindings::kunit_device_register(self.0.get(), name.as_char_ptr())
        })?;
        if dev.is_null() {
            return Err(crate::error::code::ENODEV);
        }
        // SAFETY: a live device, kept by KUnit until the end of the case.
        Ok(unsafe { Device::as_ref(dev) })
    }

    /// Marks the case failed with a message, at the caller's file and line,
    /// as `KUNIT_FAIL()` does; the case goes on.
    #[track_caller]
    pub fn fail(&self, args: fmt::Arguments<'_>) {
        let at = core::panic::Location::caller();
        let lost = crate::c_str!("(failure message lost: out of memory)");
        let msg = CString::try_from_fmt(args);
        let file = CString::try_from_fmt(format_args!("{}", at.file()));
        let loc = bindings::kunit_loc {
            line: i32::try_from(at.line()).unwrap_or(i32::MAX),
            file: file.as_deref().unwrap_or(lost).as_char_ptr(),
        };
        // SAFETY: all-zero is the (field-less) `struct kunit_fail_assert`.
        let assert: bindings::kunit_fail_assert = unsafe { core::mem::zeroed() };
        let text: &crate::str::CStr = msg.as_deref().unwrap_or(lost);
        // SAFETY: the test is the running case (type invariant); `loc`, `assert`
        // and the strings outlive the call, which formats them at once; the
        // format "%s" consumes the one NUL-terminated string passed.
        unsafe {
            bindings::__kunit_do_failed_assertion(
                self.0.get(),
                &loc,
                bindings::kunit_assert_type_KUNIT_EXPECTATION,
                &assert.assert,
                Some(bindings::kunit_fail_assert_format),
                crate::c_str!("%s").as_char_ptr(),
                text.as_char_ptr(),
            )
        };
    }
}

/// Memory KUnit writes while it runs a suite: the results of each case and
/// of the suite are stored in the C structs themselves.
///
/// # Invariants
///
/// The contents are only accessed through raw pointers by KUnit's runner
/// (which runs a module's suites one at a time, at load) and, before that,
/// by the const initialiser.
#[doc(hidden)]
#[repr(transparent)]
pub struct KunitCell<T>(UnsafeCell<T>);

// SAFETY: Rust code never reads or writes the contents (type invariant); KUnit
// serialises its own accesses.
unsafe impl<T> Sync for KunitCell<T> {}

impl<T> KunitCell<T> {
    /// Wraps `value`, for a `static`.
    pub const fn new(value: T) -> Self {
        Self(UnsafeCell::new(value))
    }

    /// The address to give KUnit.
    pub const fn get(&self) -> *mut T {
        self.0.get()
    }
}

/// A pointer to a suite, as stored in the `.kunit_test_suites` section.
#[doc(hidden)]
#[repr(transparent)]
pub struct SuiteEntry(pub *mut bindings::kunit_suite);

// SAFETY: the pointer is only read by the module loader and KUnit.
unsafe impl Sync for SuiteEntry {}

/// The C entry of a case named `name` whose body is `run`.
#[doc(hidden)]
pub const fn case(
    name: &'static crate::str::CStr,
    run: unsafe extern "C" fn(*mut bindings::kunit),
) -> bindings::kunit_case {
    // SAFETY: all-zero is a valid `kunit_case` (null pointers, no callbacks,
    // status 0, default attributes); the fields that matter are set below.
    let mut c: bindings::kunit_case = unsafe { core::mem::zeroed() };
    c.run_case = Some(run);
    c.name = name.as_char_ptr();
    c
}

/// The zeroed entry that ends a case array.
#[doc(hidden)]
pub const CASE_END: bindings::kunit_case =
    // SAFETY: all-zero is the terminator KUnit looks for.
    unsafe { core::mem::zeroed() };

/// The C suite named `name` running the `CASE_END`-terminated array `cases`.
///
/// A name that does not fit KUnit's 256 bytes (with its NUL) stops the build.
#[doc(hidden)]
pub const fn suite(name: &str, cases: *mut bindings::kunit_case) -> bindings::kunit_suite {
    // SAFETY: all-zero is a valid `kunit_suite` (no callbacks, no results yet).
    let mut s: bindings::kunit_suite = unsafe { core::mem::zeroed() };
    let bytes = name.as_bytes();
    assert!(bytes.len() < s.name.len(), "KUnit suite name too long");
    let mut i = 0;
    while i < bytes.len() {
        // CAST: a byte of the name, as C's `char`.
        s.name[i] = bytes[i] as crate::ffi::c_char;
        i += 1;
    }
    s.test_cases = cases;
    s
}

/// Runs a case body: what KUnit calls for each case of a [`kunit_suite!`].
///
/// # Safety
///
/// `test` is the `struct kunit` of the case now running on this thread.
#[doc(hidden)]
pub unsafe fn run(test: *mut bindings::kunit, body: fn(&Test)) {
    // SAFETY: the running case (the caller's contract), alive for the call.
    body(unsafe { Test::from_raw(test) })
}

/// Registers a KUnit suite named `$name` with the cases `fn $case(&Test)` in
/// this scope, run in the order given, when the module is loaded.
///
/// ```ignore
/// kunit_suite!("umem_dmabuf_rs_abs", [resv_guard_locks, window_restore]);
/// ```
#[macro_export]
macro_rules! kunit_suite {
    ($name:literal, [$($case:ident),+ $(,)?]) => {
        const _: () = {
            use $crate::bindings;
            use $crate::kunit::suite::{case, suite, KunitCell, SuiteEntry, CASE_END};

            const N: usize = [$(stringify!($case)),+].len();

            static CASES: KunitCell<[bindings::kunit_case; N + 1]> = KunitCell::new([
                $({
                    /// # Safety
                    ///
                    /// `test` is the `struct kunit` of this case, running.
                    unsafe extern "C" fn trampoline(test: *mut bindings::kunit) {
                        // SAFETY: KUnit calls a case with the running `test`.
                        unsafe { $crate::kunit::suite::run(test, $case) }
                    }
                    case($crate::c_str!(stringify!($case)), trampoline)
                },)+
                CASE_END,
            ]);

            static SUITE: KunitCell<bindings::kunit_suite> =
                KunitCell::new(suite($name, CASES.get().cast()));

            #[used]
            #[link_section = ".kunit_test_suites"]
            static ENTRY: SuiteEntry = SuiteEntry(SUITE.get());
        };
    };
}

/// Fails the case (and goes on) unless `cond` holds.
#[macro_export]
macro_rules! kunit_expect {
    ($t:expr, $cond:expr) => {
        if !$cond {
            $t.fail(format_args!("check failed: {}", stringify!($cond)));
        }
    };
}

/// Fails the case (and goes on) unless `left == right`; prints both values.
#[macro_export]
macro_rules! kunit_expect_eq {
    ($t:expr, $left:expr, $right:expr) => {
        match (&$left, &$right) {
            (l, r) => {
                if l != r {
                    $t.fail(format_args!(
                        "{} == {} failed: {:?} != {:?}",
                        stringify!($left),
                        stringify!($right),
                        l,
                        r
                    ));
                }
            }
        }
    };
}
