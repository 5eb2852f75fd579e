// SPDX-License-Identifier: GPL-2.0

//! Reservation objects: the lock that serialises dma-buf attachment mapping,
//! and the fences an exporter adds while it moves a buffer.
//!
//! C header: [`include/linux/dma-resv.h`](srctree/include/linux/dma-resv.h)
//!
//! The locking rule of the dma-buf importer API ("map, unmap, pin and unpin are
//! called with the reservation lock held") is expressed with [`ResvLocked`]: a
//! value that can only exist while the lock is held, which those operations
//! take by reference.

use super::dma_fence::Fence;
use crate::bindings;
use crate::prelude::*;
use crate::types::Opaque;
use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr;

/// A `struct dma_resv`.
///
/// # Invariants
///
/// The wrapped object is initialised (`dma_resv_init`) and not yet finalised.
#[repr(transparent)]
pub struct DmaResv(Opaque<bindings::dma_resv>);

// SAFETY: A reservation object is designed to be used from any thread; all
// state is protected by its own lock.
unsafe impl Send for DmaResv {}
// SAFETY: As above, `&DmaResv` only allows operations that take the lock or
// are documented as safe without it.
unsafe impl Sync for DmaResv {}

impl DmaResv {
    /// Creates a reference from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` points to an initialised `struct dma_resv` that stays valid for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::dma_resv) -> &'a Self {
        // SAFETY: `DmaResv` is `repr(transparent)` over the C struct, and the
        // caller guarantees validity for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the raw pointer to the C object.
    /// The C object.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::dma_resv {
        self.0.get()
    }

    /// Takes the reservation lock (uninterruptible, no acquire context).
    #[inline]
    pub fn lock(&self) -> ResvGuard<'_> {
        // SAFETY: `self.as_raw()` is an initialised reservation object by the type
        // invariant. Without an acquire context `ww_mutex_lock` cannot fail
        // (-EALREADY and -EDEADLK need a context), so the result is always 0.
        // `dma_resv_lock()` is `ww_mutex_lock()` on the object's lock; called
        // directly, without the out-of-line helper, on this per-umem path.
        let _ = unsafe {
            bindings::ww_mutex_lock(ptr::addr_of_mut!((*self.as_raw()).lock), ptr::null_mut())
        };
        // INVARIANT: the lock was just taken.
        ResvGuard {
            locked: ResvLocked {
                resv: self,
                _not_send: PhantomData,
            },
        }
    }

    /// Creates the proof of a lock that the caller's context already holds, for
    /// paths that are entered with the lock held (`move_notify`, and the
    /// `ib_umem_dmabuf` entry points documented as called under the lock).
    ///
    /// Under lockdep the claim is checked with `dma_resv_assert_held` (which
    /// is empty otherwise, so it is not called then).
    ///
    /// # Safety
    ///
    /// The current thread holds the lock of `self` for all of `'a`, and no
    /// other [`ResvLocked`] for it is in use meanwhile.
    #[inline]
    pub unsafe fn assume_locked<'a>(&'a self) -> ResvLocked<'a> {
        #[cfg(CONFIG_LOCKDEP)]
        // SAFETY: `self.as_raw()` is valid by the type invariant.
        unsafe {
            bindings::dma_resv_assert_held(self.as_raw())
        };
        // INVARIANT: the caller guarantees the lock is held for `'a`.
        ResvLocked {
            resv: self,
            _not_send: PhantomData,
        }
    }

    /// Releases a lock that was handed over by [`ResvGuard::leak`] (or taken
    /// by C code) and that the current thread holds.
    ///
    /// # Safety
    ///
    /// The current thread holds the lock, and no [`ResvLocked`] or
    /// [`ResvGuard`] for it is alive.
    #[inline]
    pub unsafe fn unlock_leaked(&self) {
        // SAFETY: valid by the type invariant; held by the caller's contract.
        unsafe { unlock(self.as_raw()) };
    }

    /// Returns whether some thread holds the lock (for tests and assertions).
    #[inline]
    pub fn is_locked(&self) -> bool {
        // SAFETY: `self.as_raw()` is valid by the type invariant.
        unsafe { bindings::dma_resv_is_locked(self.as_raw()) }
    }
}

/// Proof that the lock of a [`DmaResv`] is held by the current thread.
///
/// # Invariants
///
/// The lock of `resv` is held by the current thread for the whole lifetime `'a`.
pub struct ResvLocked<'a> {
    resv: &'a DmaResv,
    /// The lock belongs to the thread that took it.
    _not_send: PhantomData<*mut ()>,
}

impl ResvLocked<'_> {
    /// Returns whether this proof is for `resv` (for tests: the dma-buf
    /// abstractions tie each proof to its object by construction).
    #[inline]
    pub fn is_for(&self, resv: &DmaResv) -> bool {
        ptr::eq(self.resv, resv)
    }

    /// Adds `fence` with usage `DMA_RESV_USAGE_KERNEL` (memory management:
    /// importers wait for it before touching the buffer).
    pub fn add_kernel_fence(&self, fence: &Fence) -> Result {
        // SAFETY: the object is valid and its lock is held, as both calls require.
        crate::error::to_result(unsafe {
            bindings::dma_resv_reserve_fences(self.resv.as_raw(), 1)
        })?;
        // SAFETY: as above; a slot was reserved; the object takes its own reference.
        unsafe {
            bindings::dma_resv_add_fence(
                self.resv.as_raw(),
                fence.as_raw(),
                bindings::dma_resv_usage_DMA_RESV_USAGE_KERNEL,
            )
        };
        Ok(())
    }

    /// Waits for every fence of usage `DMA_RESV_USAGE_KERNEL` (the exporter's
    /// memory management, e.g. a migration copy), uninterruptibly and without
    /// timeout.
    ///
    /// Returns `ETIMEDOUT` if the wait reports that it timed out, and passes
    /// any other error through.
    #[inline]
    pub fn wait_kernel_fences(&self) -> Result {
        // SAFETY: the object is valid by the invariant of `DmaResv`; the lock is
        // held, which the wait does not require but does not mind either.
        let ret = unsafe {
            bindings::dma_resv_wait_timeout(
                self.resv.as_raw(),
                bindings::dma_resv_usage_DMA_RESV_USAGE_KERNEL,
                false,
                // CAST: `MAX_SCHEDULE_TIMEOUT` is `LONG_MAX`, which fits `c_ulong`.
                bindings::MAX_SCHEDULE_TIMEOUT as crate::ffi::c_ulong,
            )
        };
        match ret {
            // CAST: errno values are small positive integers.
            0 => Err(Error::from_errno(-(bindings::ETIMEDOUT as i32))),
            // CAST: a negative return is an errno, which fits `i32`.
            r if r < 0 => Err(Error::from_errno(r as i32)),
            _ => Ok(()),
        }
    }
}

/// Holds the lock of a [`DmaResv`]; unlocks it when dropped.
///
/// # Invariants
///
/// `locked` is the proof for a lock that this guard took and must release.
#[must_use = "the reservation lock is released when the guard is dropped"]
pub struct ResvGuard<'a> {
    locked: ResvLocked<'a>,
}

impl<'a> Deref for ResvGuard<'a> {
    type Target = ResvLocked<'a>;

    #[inline]
    fn deref(&self) -> &ResvLocked<'a> {
        &self.locked
    }
}

impl ResvGuard<'_> {
    /// Keeps the lock held after the guard is gone: for entry points that
    /// return to C with the lock held (it is released by C, or by
    /// [`DmaResv::unlock_leaked`]).
    #[inline]
    pub fn leak(self) {
        core::mem::forget(self);
    }
}

impl Drop for ResvGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: by the type invariant this guard holds the lock, so releasing it
        // once here is balanced.
        unsafe { unlock(self.locked.resv.as_raw()) };
    }
}

/// `dma_resv_unlock()`. With `CONFIG_DEBUG_MUTEXES` it also resets a debug
/// count of reserved fences, so it is called then; otherwise it is
/// `ww_mutex_unlock()` on the object's lock, called directly, without the
/// out-of-line helper.
///
/// # Safety
///
/// `resv` is an initialised reservation object whose lock the current thread
/// holds.
#[inline]
unsafe fn unlock(resv: *mut bindings::dma_resv) {
    #[cfg(CONFIG_DEBUG_MUTEXES)]
    // SAFETY: by the function's contract.
    unsafe {
        bindings::dma_resv_unlock(resv)
    };
    #[cfg(not(CONFIG_DEBUG_MUTEXES))]
    // SAFETY: by the function's contract: `lock` is the object's ww_mutex.
    unsafe {
        bindings::ww_mutex_unlock(ptr::addr_of_mut!((*resv).lock))
    };
}

/// A reservation object owned by Rust (tests, and exporters that embed one).
///
/// # Invariants
///
/// `inner` was initialised with `dma_resv_init` and is finalised on drop.
#[pin_data(PinnedDrop)]
pub struct OwnedResv {
    #[pin]
    inner: Opaque<bindings::dma_resv>,
}

impl OwnedResv {
    /// Returns an initialiser for a new, unlocked reservation object.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `slot` is valid, pinned memory for a `struct dma_resv`,
            // which `dma_resv_init` fully initialises.
            inner <- Opaque::ffi_init(|slot| unsafe { bindings::dma_resv_init(slot) }),
        })
    }
}

impl Deref for OwnedResv {
    type Target = DmaResv;

    fn deref(&self) -> &DmaResv {
        // SAFETY: `inner` is initialised and lives as long as `self` (type invariant).
        unsafe { DmaResv::from_raw(self.inner.get()) }
    }
}

#[pinned_drop]
impl PinnedDrop for OwnedResv {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `inner` was initialised (type invariant) and no guard can be alive
        // because guards borrow `self`.
        unsafe { bindings::dma_resv_fini(self.inner.get()) };
    }
}
