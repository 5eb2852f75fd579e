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
use core::sync::atomic::{AtomicU64, Ordering};
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

/// Counts one call of `entry` if counting is on (the module parameter
/// `count_calls`, off by default: [`abs::shim::counting`], a static key,
/// because an atomic increment per entry point is a few percent of a
/// one-entry registration)
/// ([`abs::umem::UmemImpl::entered`]).
#[inline]
pub(crate) fn count(entry: Entry) {
    if abs::shim::counting() {
        // CAST: an `Entry` is an index of `Entry::ALL`, which sizes `CALLS`;
        // `get` states it without a panic path.
        if let Some(calls) = CALLS.get(entry as usize) {
            calls.fetch_add(1, Ordering::Relaxed);
        }
    }
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
