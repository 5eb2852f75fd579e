// SPDX-License-Identifier: GPL-2.0

//! A movable dma-buf exporter: the stand-in for GPU memory that migrates.
//!
//! Layers, dependencies pointing down:
//! - [`tests`]: KUnit bodies (suite `dmabuf_exporter_rs`).
//! - [`exporter`]: the exporter logic, no `unsafe`; [`devmem`]: the PCI
//!   driver of the device memory buffers may live in.
//! - [`abs`]: what the sample needs beyond the kernel crate (user memory for
//!   the ioctls, page chunks and their DMA tables, peer-to-peer device memory
//!   and its tables, the list of exported buffers, an owned workqueue): all
//!   of the module's `unsafe` lives there. The misc device is 7.3's
//!   `kernel::miscdevice`. The dma-buf abstractions themselves
//!   (`kernel::dma_buf`, `kernel::dma_buf::export`) are the kernel crate's,
//!   added by the patch series.

mod abs;
mod devmem;
mod exporter;
#[cfg(umem_kunit)]
mod tests;
mod uapi;

use kernel::miscdevice::{MiscDeviceOptions, MiscDeviceRegistration};
use kernel::prelude::*;

module! {
    type: DmabufExporterRs,
    name: "dmabuf_exporter_rs",
    authors: ["umem-dmabuf-rs developers"],
    description: "Movable dma-buf exporter (sample and test fixture)",
    license: "GPL",
    imports_ns: ["DMA_BUF"],
}

/// Dropped in field order: the device memory's driver goes first (its
/// unbind moves the buffers out of device memory), then the misc device.
struct DmabufExporterRs {
    _pci: Pin<KBox<kernel::driver::Registration<kernel::pci::Adapter<devmem::IvshmemDriver>>>>,
    _dev: Pin<KBox<MiscDeviceRegistration<uapi::ExporterIoctl>>>,
}

impl kernel::Module for DmabufExporterRs {
    fn init(module: &'static ThisModule) -> Result<Self> {
        abs::p2p::registry_init();
        abs::bufs::init();
        let dev = KBox::pin_init(
            MiscDeviceRegistration::register(MiscDeviceOptions {
                name: kernel::c_str!("dmabuf_exporter_rs"),
            }),
            GFP_KERNEL,
        )?;
        let pci = KBox::pin_init(
            kernel::driver::Registration::new(kernel::c_str!("dmabuf_exporter_rs"), module),
            GFP_KERNEL,
        )?;
        Ok(DmabufExporterRs {
            _pci: pci,
            _dev: dev,
        })
    }
}

/// What the C KUnit suites (exp_kunit.c, devmem_kunit.c) call, built in
/// with them only (`UMEM_KUNIT=y`, see Kbuild).
#[cfg(umem_kunit)]
mod kunit_glue {
    use crate::exporter::{self, Placement};
    use crate::{abs, uapi};
    use kernel::dma_buf::DmaBuf;
    use kernel::prelude::*;

    /// The layouts the C device-memory cases use, in pages per chunk: 0, one
    /// page per entry; 1, 4 + 8 + 4 pages (16 pages).
    const KUNIT_LAYOUTS: [&[u32]; 2] = [&[], &[4, 8, 4]];

    /// An errno or a file descriptor, for C.
    fn fd_or_errno(fd: Result<i32>) -> i32 {
        match fd {
            Ok(fd) => fd,
            Err(e) => e.to_errno(),
        }
    }

    /// For the C device-memory cases: a new dynamic buffer in device memory of
    /// `size` bytes and layout `layout` ([`KUNIT_LAYOUTS`]), as a file
    /// descriptor, or a negative errno.
    #[no_mangle]
    extern "C" fn dmabuf_exp_kunit_create_devmem_fd(size: usize, layout: u32) -> i32 {
        let Some(chunks) = KUNIT_LAYOUTS.get(layout as usize) else {
            return EINVAL.to_errno();
        };
        fd_or_errno(
            exporter::create_in(size, chunks, exporter::Kind::Dynamic, Placement::Device)
                .and_then(|b| b.install_fd(|_| Ok(()))),
        )
    }

    /// For the C device-memory cases: the bus address of the device memory in
    /// use (`len` false) or its length, 0 without one.
    #[no_mangle]
    extern "C" fn dmabuf_exp_kunit_devmem_range(len: bool) -> u64 {
        match abs::p2p::current() {
            Ok(vram) if len => vram.bus_range().1,
            Ok(vram) => vram.bus_range().0,
            Err(_) => 0,
        }
    }

    /// For the C cases: counter `which` of the buffer of `fd` (0: placement, 1
    /// for device memory; 1: peer-to-peer maps; 2: tables given back changed;
    /// 3: migrations; 4: live mappings), or a negative errno.
    #[no_mangle]
    extern "C" fn dmabuf_exp_kunit_stat(fd: i32, which: u32) -> i64 {
        let s = match DmaBuf::get(fd).and_then(|b| exporter::stats(&b)) {
            Ok(s) => s,
            Err(e) => return e.to_errno().into(),
        };
        let v = match which {
            0 => u64::from(s.placement == Placement::Device),
            1 => s.p2p_maps,
            2 => s.unrestored,
            3 => s.migrations,
            4 => s.mappings,
            _ => return EINVAL.to_errno().into(),
        };
        i64::try_from(v).unwrap_or(i64::MAX)
    }

    /// For the C cases: moves the buffer of `fd` to device memory (`to_device`)
    /// or system memory; 0 or a negative errno.
    #[no_mangle]
    extern "C" fn dmabuf_exp_kunit_place_fd(fd: i32, to_device: bool) -> i32 {
        let to = if to_device {
            Placement::Device
        } else {
            Placement::System
        };
        match DmaBuf::get(fd).and_then(|b| exporter::migrate_to(&b, 0, false, Some(to))) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// The byte at `offset` of the pattern of `seed`.
    fn pattern(seed: u32, offset: usize) -> u8 {
        // CAST: truncation to the low byte is the point.
        (offset as u32)
            .wrapping_mul(2_654_435_761)
            .wrapping_add(seed)
            .to_le_bytes()[3]
    }

    /// For the C cases: writes (`check` false) or checks the pattern of `seed`
    /// over the first `len` bytes of the buffer of `fd`; 0, 1 for a mismatch,
    /// or a negative errno.
    #[no_mangle]
    extern "C" fn dmabuf_exp_kunit_pattern(fd: i32, seed: u32, len: usize, check: bool) -> i32 {
        let run = || -> Result<i32> {
            let buf = DmaBuf::get(fd)?;
            let mut data = KVec::from_elem(0u8, len, GFP_KERNEL)?;
            if check {
                exporter::read(&buf, 0, &mut data)?;
                let same = data.iter().enumerate().all(|(i, &b)| b == pattern(seed, i));
                return Ok(i32::from(!same));
            }
            for (i, b) in data.iter_mut().enumerate() {
                *b = pattern(seed, i);
            }
            exporter::write(&buf, 0, &data)?;
            Ok(0)
        };
        fd_or_errno(run())
    }

    /// For the C case `importers_follow_migration`: a new dynamic buffer of
    /// `size` bytes, as a file descriptor, or a negative errno.
    #[no_mangle]
    extern "C" fn dmabuf_exp_kunit_create_fd(size: usize) -> i32 {
        let fd = exporter::create(size, &[], true).and_then(|b| b.install_fd(|_| Ok(())));
        match fd {
            Ok(fd) => fd,
            Err(e) => e.to_errno(),
        }
    }

    /// For the C case `uapi_layout_matches_c`: entry `i` of [`uapi::LAYOUT`],
    /// -1 past the last.
    #[no_mangle]
    extern "C" fn dmabuf_exp_uapi_layout(i: u32) -> i64 {
        uapi::LAYOUT
            .get(i as usize)
            .and_then(|&v| i64::try_from(v).ok())
            .unwrap_or(-1)
    }

    /// For the C case: migrates the buffer of `fd`; 0 or a negative errno.
    #[no_mangle]
    extern "C" fn dmabuf_exp_kunit_migrate_fd(fd: i32, delay_ms: u32) -> i32 {
        match DmaBuf::get(fd).and_then(|b| exporter::migrate(&b, delay_ms, false)) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}
