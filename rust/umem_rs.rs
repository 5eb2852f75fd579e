// SPDX-License-Identifier: GPL-2.0

//! Rust implementation of the RDMA `ib_umem` dma-buf importer.
//!
//! Layers, with dependencies pointing down only:
//! - this file: the module, its ops table ([`umem_rs_ops`]), its registration
//!   with ib_core and the call counters behind `<debugfs>/umem_dmabuf_rs/calls`
//!   (counting only while the module parameter `count_calls` is set).
//! - [`tests`]: the Rust KUnit suite, what the safe layer refuses at run time.
//! - [`importer`]: the importer logic, with exact C parity and no `unsafe`.
//! - [`abs`]: safe abstractions over the RDMA objects (umem, ib_device, the
//!   ops table's trampolines); all of the module's `unsafe` lives there.
//! - the kernel crate: 7.3's DMA, scatterlist and KUnit abstractions, and
//!   `kernel::dma_buf`, added by the patch series (patches/linux-7.3/).

mod abs;
mod importer;
#[cfg(umem_kunit)]
mod tests;

use abs::umem::{Entry, Registration, UmemOps};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::prelude::*;

module! {
    type: UmemDmabufRs,
    name: "umem_dmabuf_rs",
    authors: ["umem-dmabuf-rs developers"],
    description: "Rust ib_umem dma-buf importer",
    license: "GPL",
    imports_ns: ["DMA_BUF"],
}

/// The Rust importer's `struct ib_umem_dmabuf_ops`, owned by this module. The
/// C KUnit suites (kunit/) call it directly, register and unregister it,
/// by this name.
#[no_mangle]
#[allow(non_upper_case_globals)]
static umem_rs_ops: UmemOps = umem_ops!(importer::RustImporter);

/// Calls of each entry point while counting was on (index: [`Entry`]).
static CALLS: [AtomicU64; Entry::ALL.len()] = [const { AtomicU64::new(0) }; Entry::ALL.len()];

/// Whether [`count`] counts: the module parameter `count_calls`, off by
/// default. An atomic increment per entry point is a few percent of a
/// one-entry registration (Documentation/performance.rst), a cost the C
/// importer does not have; a relaxed load is what every call pays instead.
static COUNTING: AtomicBool = AtomicBool::new(false);

/// Counts one call of `entry` if counting is on
/// ([`abs::umem::UmemImpl::entered`]).
#[inline]
pub(crate) fn count(entry: Entry) {
    if COUNTING.load(Ordering::Relaxed) {
        // CAST: an `Entry` is an index of `Entry::ALL`, which sizes `CALLS`;
        // `get` states it without a panic path.
        if let Some(calls) = CALLS.get(entry as usize) {
            calls.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Turns counting on or off (the C shim's `count_calls` parameter, and the C
/// KUnit suites that check the counts). The counts are kept either way.
#[no_mangle]
extern "C" fn umem_rs_set_counting(on: bool) {
    COUNTING.store(on, Ordering::Relaxed);
}

/// Whether counting is on.
#[no_mangle]
extern "C" fn umem_rs_counting() -> bool {
    COUNTING.load(Ordering::Relaxed)
}

/// Calls of the entry point with index `entry`, 0 past the last (for the C
/// shim's debugfs file and the C KUnit suites).
#[no_mangle]
extern "C" fn umem_rs_calls(entry: u32) -> u64 {
    CALLS
        .get(entry as usize)
        .map_or(0, |c| c.load(Ordering::Relaxed))
}

/// The name of the entry point with index `entry`; null past the last.
#[no_mangle]
extern "C" fn umem_rs_entry_name(entry: u32) -> *const kernel::ffi::c_char {
    Entry::ALL
        .get(entry as usize)
        .map_or(core::ptr::null(), |e| e.name().as_char_ptr())
}

struct UmemDmabufRs {
    /// `None` when loaded with `register=0`; dropped (unregistered) at unload.
    _registration: Option<Registration>,
}

impl kernel::Module for UmemDmabufRs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let registration = if abs::shim::register_at_load() {
            Some(Registration::new(&umem_rs_ops)?)
        } else {
            None
        };
        abs::shim::init();
        pr_info!("loaded\n");
        Ok(UmemDmabufRs {
            _registration: registration,
        })
    }
}

impl Drop for UmemDmabufRs {
    fn drop(&mut self) {
        abs::shim::exit();
        pr_info!("unloaded\n");
    }
}
