// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `umem_dmabuf_rs_abs`: tests of the abstraction layer.

#![forbid(unsafe_code)]

use kernel::dma_buf::dma_resv::OwnedResv;
use kernel::kunit::Test;
use kernel::prelude::*;
use kernel::scatterlist::{OwnedSGTable, SGTable};
use kernel::{kunit_expect, kunit_expect_eq, kunit_suite};

const PAGE: u64 = 4096;

/// Builds a table whose entry `i` has DMA address `base + sum of earlier
/// lengths + gap * i` and length `lens[i]`.
fn table(t: &Test, base: u64, gap: u64, lens: &[u32]) -> Option<OwnedSGTable> {
    let n = u32::try_from(lens.len()).ok()?;
    let tbl = match OwnedSGTable::new(n) {
        Ok(tbl) => tbl,
        Err(e) => {
            t.fail(format_args!("OwnedSGTable::new({n}) failed: {e:?}"));
            return None;
        }
    };
    let mut addr = base;
    for (i, &len) in (0u32..).zip(lens.iter()) {
        if tbl.set(i, addr, len).is_err() {
            t.fail(format_args!("set entry {i} failed"));
            return None;
        }
        addr += u64::from(len) + gap;
    }
    Some(tbl)
}

/// `(address, length)` of every mapped entry.
fn entries(tbl: &SGTable) -> KVec<(u64, u32)> {
    let mut v = KVec::new();
    for sg in tbl.dma_entries() {
        if v.push((sg.dma_address(), sg.dma_len()), GFP_KERNEL)
            .is_err()
        {
            break;
        }
    }
    v
}

fn resv_guard_locks(t: &Test) {
    let resv = match KBox::pin_init(OwnedResv::new(), GFP_KERNEL) {
        Ok(r) => r,
        Err(e) => return t.fail(format_args!("alloc failed: {e:?}")),
    };
    kunit_expect!(t, !resv.is_locked());
    {
        let guard = resv.lock();
        kunit_expect!(t, resv.is_locked());
        kunit_expect!(t, guard.is_for(&resv));
    }
    kunit_expect!(t, !resv.is_locked());
}

fn resv_guard_identity(t: &Test) {
    let (a, b) = match (
        KBox::pin_init(OwnedResv::new(), GFP_KERNEL),
        KBox::pin_init(OwnedResv::new(), GFP_KERNEL),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return t.fail(format_args!("alloc failed")),
    };
    let guard = a.lock();
    kunit_expect!(t, guard.is_for(&a));
    kunit_expect!(t, !guard.is_for(&b));
    kunit_expect!(t, !b.is_locked());
    drop(guard);
    kunit_expect!(t, !a.is_locked());
}

fn resv_wait_no_fences(t: &Test) {
    let resv = match KBox::pin_init(OwnedResv::new(), GFP_KERNEL) {
        Ok(r) => r,
        Err(e) => return t.fail(format_args!("alloc failed: {e:?}")),
    };
    let guard = resv.lock();
    // No fences: the wait returns at once with success, not -ETIMEDOUT.
    kunit_expect!(t, guard.wait_kernel_fences().is_ok());
}

fn sg_view_entries(t: &Test) {
    let Some(tbl) = table(t, 0x1_0000_0000, PAGE, &[4096, 8192, 65536]) else {
        return;
    };
    kunit_expect_eq!(t, tbl.nents(), 3);
    let v = entries(&tbl);
    kunit_expect_eq!(
        t,
        &v[..],
        &[
            (0x1_0000_0000, 4096),
            (0x1_0000_2000, 8192),
            (0x1_0000_5000, 65536)
        ][..]
    );
}

fn window_inside_one(t: &Test) {
    let Some(tbl) = table(t, 0x10_0000, 0, &[16 * 4096]) else {
        return;
    };
    let w = tbl.trim(2 * PAGE, 5 * PAGE);
    kunit_expect_eq!(t, w.nents(), 1);
    kunit_expect_eq!(t, w.first_offset(), 2 * PAGE);
    kunit_expect_eq!(t, w.last_trim(), 11 * PAGE);
    kunit_expect!(t, w.first_raw() == w.last_raw());
    kunit_expect_eq!(
        t,
        &entries(&tbl)[..],
        &[(0x10_0000 + 2 * PAGE, 3 * 4096)][..]
    );
    kunit_expect!(t, w.restore(&tbl).is_ok());
}

fn window_spanning(t: &Test) {
    // Four 2-page entries, discontiguous in bus space.
    let Some(tbl) = table(t, 0x20_0000, 16 * PAGE, &[8192; 4]) else {
        return;
    };
    // Bytes [1 page, 7 pages): from the middle of entry 0 to the middle of entry 3.
    let w = tbl.trim(PAGE, 7 * PAGE);
    kunit_expect_eq!(t, w.nents(), 4);
    kunit_expect_eq!(t, w.first_offset(), PAGE);
    kunit_expect_eq!(t, w.last_trim(), PAGE);
    let v = entries(&tbl);
    kunit_expect_eq!(t, v.first(), Some(&(0x20_0000 + PAGE, 4096)));
    kunit_expect_eq!(t, v.get(1), Some(&(0x20_0000 + 18 * PAGE, 8192)));
    kunit_expect_eq!(t, v.get(3), Some(&(0x20_0000 + 54 * PAGE, 4096)));
    kunit_expect!(t, w.restore(&tbl).is_ok());
}

fn window_boundaries(t: &Test) {
    let Some(tbl) = table(t, 0x40_0000, 0, &[4096, 8192, 4096, 16384]) else {
        return;
    };
    // Starts exactly at entry 1 and ends exactly at the end of entry 2.
    let w = tbl.trim(PAGE, 4 * PAGE);
    kunit_expect_eq!(t, w.nents(), 2);
    kunit_expect_eq!(t, w.first_offset(), 0);
    kunit_expect_eq!(t, w.last_trim(), 0);
    let v = entries(&tbl);
    kunit_expect_eq!(t, v.get(1), Some(&(0x40_0000 + PAGE, 8192)));
    kunit_expect_eq!(t, v.get(2), Some(&(0x40_0000 + 3 * PAGE, 4096)));
    kunit_expect!(t, w.restore(&tbl).is_ok());
    // Last page of the buffer.
    let w = tbl.trim(7 * PAGE, 8 * PAGE);
    kunit_expect_eq!(t, w.nents(), 1);
    kunit_expect_eq!(t, w.first_offset(), 3 * PAGE);
    kunit_expect_eq!(t, w.last_trim(), 0);
    kunit_expect_eq!(t, entries(&tbl).get(3), Some(&(0x40_0000 + 7 * PAGE, 4096)));
    kunit_expect!(t, w.restore(&tbl).is_ok());
}

fn window_restore(t: &Test) {
    let lens = [4096, 3 * 4096, 4096, 65536, 8192];
    let (Some(tbl), Some(other)) = (table(t, 0x80_0000, PAGE, &lens), table(t, 0, 0, &[4096]))
    else {
        return;
    };
    let before = entries(&tbl);
    // Entries cover pages [0,1) [1,4) [4,5) [5,21) [21,23). A window whose ends
    // fall on entry boundaries changes nothing; one cutting an entry does.
    let cases = [
        (0, PAGE, false),
        (PAGE, 20 * PAGE, true),
        (2 * PAGE, 3 * PAGE, true),
        (0, 23 * PAGE, false),
        (4 * PAGE, 21 * PAGE, false),
    ];
    for (start, end, changes) in cases {
        let w = tbl.trim(start, end);
        kunit_expect_eq!(t, entries(&tbl)[..] != before[..], changes);
        kunit_expect!(t, w.restore(&tbl).is_ok());
        kunit_expect_eq!(t, &entries(&tbl)[..], &before[..]);
    }
    // A window is only ever restored onto the table it was made on.
    let w = tbl.trim(PAGE, 2 * PAGE);
    kunit_expect_eq!(t, w.restore(&other), Err(EINVAL));
}

kunit_suite!(
    "umem_dmabuf_rs_abs",
    [
        resv_guard_locks,
        resv_guard_identity,
        resv_wait_no_fences,
        sg_view_entries,
        window_inside_one,
        window_spanning,
        window_boundaries,
        window_restore,
    ]
);
