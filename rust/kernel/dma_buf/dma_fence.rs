// SPDX-License-Identifier: GPL-2.0

//! Fences created by Rust code: completion events that importers wait for.
//!
//! C header: [`include/linux/dma-fence.h`](srctree/include/linux/dma-fence.h)

use crate::bindings;
use crate::prelude::*;
use crate::types::{ARef, AlwaysRefCounted, Opaque};
use core::ptr::NonNull;

/// The memory of a fence made by [`Fence::new`]: the fence first, so the
/// dma-fence core's default release (`kfree_rcu()` of the fence) frees it all.
#[repr(C)]
struct FenceAlloc {
    fence: bindings::dma_fence,
    lock: bindings::spinlock_t,
}

/// A `struct dma_fence` created by Rust code, signalled by its owner.
///
/// # Invariants
///
/// The fence is live while a reference is held (`dma_fence_get`/`put`); it
/// was initialised by [`Fence::new`] inside a [`FenceAlloc`].
#[repr(transparent)]
pub struct Fence(Opaque<bindings::dma_fence>);

// SAFETY: dma-fence reference counts are atomic; the last put may happen on
// any thread.
unsafe impl AlwaysRefCounted for Fence {
    #[inline]
    fn inc_ref(&self) {
        // SAFETY: live by the type invariant.
        unsafe { bindings::dma_fence_get(self.0.get()) };
    }

    #[inline]
    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller gives up one reference.
        unsafe { bindings::dma_fence_put(obj.as_ptr().cast()) };
    }
}

// SAFETY: Fences are signalled and waited for from any thread; their state is
// protected by their own lock.
unsafe impl Send for Fence {}
// SAFETY: As above.
unsafe impl Sync for Fence {}

/// The lockdep class of the locks of [`Fence`]s.
#[repr(transparent)]
struct FenceLockClass(Opaque<bindings::lock_class_key>);

// SAFETY: lockdep keys are used concurrently by design.
unsafe impl Sync for FenceLockClass {}

static FENCE_LOCK_CLASS: FenceLockClass = FenceLockClass(Opaque::uninit());

const FENCE_NAME: &crate::str::CStr = crate::c_str!("rust_dma_fence");

extern "C" fn fence_name(_fence: *mut bindings::dma_fence) -> *const crate::ffi::c_char {
    FENCE_NAME.as_char_ptr()
}

static FENCE_OPS: bindings::dma_fence_ops = bindings::dma_fence_ops {
    get_driver_name: Some(fence_name),
    get_timeline_name: Some(fence_name),
    // SAFETY: all-zero is a valid `dma_fence_ops` (every other callback unset).
    ..unsafe { core::mem::zeroed() }
};

impl Fence {
    /// Creates an unsignalled fence on a context of its own.
    pub fn new() -> Result<ARef<Self>> {
        // SAFETY: all-zero is a valid initial state for both members, which are
        // initialised below before use.
        let alloc = KBox::new(unsafe { core::mem::zeroed::<FenceAlloc>() }, GFP_KERNEL)?;
        let alloc = KBox::into_raw(alloc);
        // SAFETY: `alloc` is a fresh allocation that nobody else sees. The fence's
        // lock is initialised before the fence; `FENCE_OPS` is static. From here on
        // the fence's reference count owns the memory: the last `dma_fence_put`
        // frees it with `kfree_rcu()` (the fence is at offset 0 of a kmalloc'ed
        // block).
        unsafe {
            bindings::__spin_lock_init(
                &raw mut (*alloc).lock,
                FENCE_NAME.as_char_ptr(),
                FENCE_LOCK_CLASS.0.get(),
            );
            bindings::dma_fence_init(
                &raw mut (*alloc).fence,
                &FENCE_OPS,
                &raw mut (*alloc).lock,
                bindings::dma_fence_context_alloc(1),
                1,
            );
        }
        // INVARIANT: initialised above; the initial reference becomes the `ARef`'s.
        // SAFETY: non-null (from `KBox::into_raw`), live, one reference owned.
        Ok(unsafe { ARef::from_raw(NonNull::new_unchecked(alloc.cast::<Self>())) })
    }

    /// The C object.
    pub fn as_raw(&self) -> *mut bindings::dma_fence {
        self.0.get()
    }

    /// Signals the fence (a second call is a no-op).
    pub fn signal(&self) {
        // SAFETY: live by the type invariant.
        let _ = unsafe { bindings::dma_fence_signal(self.as_raw()) };
    }
}
