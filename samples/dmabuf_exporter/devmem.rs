// SPDX-License-Identifier: GPL-2.0

//! Device memory for the exporter: a PCI driver for QEMU's `ivshmem-plain`
//! device, whose BAR 2 is RAM of the host (a `memory-backend-file`), made
//! peer-to-peer DMA memory, the stand-in for a GPU's VRAM.
//!
//! One device at a time is the device memory new buffers go to
//! ([`crate::abs::p2p::current`]). Unbinding it revokes its memory: every
//! buffer there moves to system memory, its importers told to stop using it
//! first (as amdgpu and xe evict VRAM, and vfio-pci revokes a BAR); a
//! pinned buffer's revocable importers are revoked (they unpin), then it
//! moves too. The unbind then waits only for buffers pinned by importers
//! that cannot be revoked, saying so every [`WAIT_REPORT_MS`], and moves
//! each out as soon as its last pin goes.

#![forbid(unsafe_code)]

use crate::abs::p2p::{self, Vram};
use crate::exporter;
use kernel::device::Core;
use kernel::pci;
use kernel::prelude::*;
use kernel::sync::Arc;

/// The BAR of `ivshmem-plain` that holds the shared memory.
const IVSHMEM_BAR: u32 = 2;

/// The PCI driver.
pub(crate) struct IvshmemDriver;

/// A bound device: its memory.
pub(crate) struct DevmemData {
    vram: Arc<Vram>,
}

kernel::pci_device_table!(
    PCI_TABLE,
    <IvshmemDriver as pci::Driver>::IdInfo,
    [(
        pci::DeviceId::from_id(pci::Vendor::REDHAT_QUMRANET, 0x1110),
        ()
    )]
);

impl pci::Driver for IvshmemDriver {
    type IdInfo = ();
    type Data<'bound> = DevmemData;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        pdev.enable_device_mem()?;
        let vram = Vram::new(pdev, IVSHMEM_BAR)?;
        p2p::publish(&vram)?;
        let (bus, len) = vram.bus_range();
        dev_info!(
            pdev,
            "device memory: {} MiB at bus address {:#x}\n",
            len >> 20,
            bus
        );
        Ok(DevmemData { vram })
    }

    fn unbind<'bound>(pdev: &'bound pci::Device<Core<'_>>, this: Pin<&Self::Data<'bound>>) {
        p2p::withdraw(&this.vram);
        this.vram.stop();
        let done = exporter::revoke(&this.vram, true);
        dev_info!(
            pdev,
            "unbind: {} buffers moved to system memory ({} of them pinned by importers now revoked), {} pinned in device memory\n",
            done.moved,
            done.revoked,
            done.pinned
        );
        if let Some(e) = done.error {
            dev_warn!(
                pdev,
                "unbind: {} buffers could not move to system memory ({:?})\n",
                done.failed,
                e
            );
        }
        let mut waited = 0;
        while !this.vram.released_within(WAIT_ROUND_MS) {
            // A buffer whose last pin went since moves out now.
            let done = exporter::revoke(&this.vram, false);
            waited += WAIT_ROUND_MS;
            if waited % WAIT_REPORT_MS == 0 {
                dev_warn!(
                    pdev,
                    "unbind: waited {} s for {} device-memory allocations: {} buffers pinned by importers that cannot be revoked; each moves out when they unpin it\n",
                    waited / 1000,
                    this.vram.allocations(),
                    done.pinned
                );
            }
        }
    }
}

/// How long the unbind waits for allocations before it tries to move
/// buffers again, in milliseconds.
const WAIT_ROUND_MS: u32 = 200;

/// How often a waiting unbind says what it waits for, in milliseconds.
pub(crate) const WAIT_REPORT_MS: u32 = 10_000;
