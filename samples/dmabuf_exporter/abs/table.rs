// SPDX-License-Identifier: GPL-2.0

//! The tables of a buffer that lives in system or in device memory.

use super::p2p::P2pTable;
use super::page::PageTable;
use kernel::bindings;
use kernel::dma_buf::export::{BufLocked, ExportedTable};
use kernel::dma_buf::Attachment;
use kernel::prelude::*;
use kernel::types::Opaque;

/// What a [`BufTable`] is a view of.
enum Inner {
    /// System pages, mapped for the device.
    Pages(PageTable),
    /// Device memory, by bus address.
    P2p(P2pTable),
}

/// A table handed to importers: the header of the table of system pages or
/// of device memory it holds (the same entries), so one exporter type can
/// give either.
///
/// A table of device memory must be given back with [`BufTable::free`], under
/// the buffer's lock; one dropped instead is leaked, with a warning.
///
/// # Invariants
///
/// `header` is a copy of the header of `inner`'s table (the same entries,
/// which are mapped while `inner` is live), and is first.
#[repr(C)]
pub(crate) struct BufTable {
    header: Opaque<bindings::sg_table>,
    inner: Inner,
}

// SAFETY: Both kinds of tables may be unmapped on any thread.
unsafe impl Send for BufTable {}

// SAFETY: `repr(C)` with a `struct sg_table` first, whose entries are those of
// `inner`'s table, mapped for the attachment's device while the value exists
// (type invariant).
unsafe impl ExportedTable for BufTable {}

impl BufTable {
    /// A table of system pages.
    pub(crate) fn pages(table: PageTable) -> Result<KBox<Self>> {
        // The header is copied while `table` is still where `raw()` points:
        // a pointer taken before the move below would point into the
        // moved-from local.
        let header = Opaque::<bindings::sg_table>::uninit();
        // SAFETY: the table of `table` is live; its header is plain data.
        unsafe { header.get().write(table.raw().read()) };
        // INVARIANT: a copy of the header of `table`, which goes in with it.
        Ok(KBox::new(
            Self {
                header,
                inner: Inner::Pages(table),
            },
            GFP_KERNEL,
        )?)
    }

    /// A table of device memory, for `attach` (freed again if this fails).
    pub(crate) fn p2p(
        table: P2pTable,
        attach: &Attachment,
        locked: &BufLocked<'_>,
    ) -> Result<KBox<Self>> {
        // The allocation is made before the table is moved in, so that a
        // failure can still free the table under the lock.
        let slot = match KBox::<Self>::new_uninit(GFP_KERNEL) {
            Ok(slot) => slot,
            Err(e) => {
                table.free(attach, locked);
                return Err(e.into());
            }
        };
        let header = Opaque::<bindings::sg_table>::uninit();
        // SAFETY: the table of `table` is live; its header is plain data.
        unsafe { header.get().write(table.raw().read()) };
        // INVARIANT: a copy of the header of `table`, which goes in with it.
        Ok(KBox::write(
            slot,
            Self {
                header,
                inner: Inner::P2p(table),
            },
        ))
    }

    /// Whether the importer gave the table back as it was made (a table of
    /// device memory is checked entry by entry).
    pub(crate) fn intact(&self) -> bool {
        match &self.inner {
            Inner::Pages(_) => true,
            Inner::P2p(t) => t.intact(),
        }
    }

    /// Gives the table back: unmaps it.
    pub(crate) fn free(self: KBox<Self>, attach: &Attachment, locked: &BufLocked<'_>) {
        match KBox::into_inner(self).inner {
            Inner::Pages(t) => drop(t),
            Inner::P2p(t) => t.free(attach, locked),
        }
    }
}
