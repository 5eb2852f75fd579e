// SPDX-License-Identifier: GPL-2.0

//! The ioctls of `/dev/dmabuf_exporter_rs`, as defined by
//! `include/uapi/dmabuf_exporter_rs.h` (the structures below mirror it).

#![forbid(unsafe_code)]

use crate::abs::user::user_slice;
use crate::exporter::{self, Kind, Placement};
#[cfg(umem_kunit)]
use core::mem::offset_of;
use core::mem::size_of;
use kernel::dma_buf::DmaBuf;
use kernel::fs::File;
use kernel::ioctl::{_IOW, _IOWR};
use kernel::miscdevice::{MiscDevice, MiscDeviceRegistration};
use kernel::prelude::*;

const VERSION: u32 = 1;
const F_DYNAMIC: u32 = 1 << 0;
const F_DEVMEM: u32 = 1 << 1;
const F_REVOCABLE: u32 = 1 << 2;
const F_ALL: u32 = F_DYNAMIC | F_DEVMEM | F_REVOCABLE;
const MIGRATE_F_FAIL_MAPS: u32 = 1 << 0;
const MIGRATE_F_TO_DEVMEM: u32 = 1 << 1;
const MIGRATE_F_TO_SYSTEM: u32 = 1 << 2;
const MIGRATE_F_ALL: u32 = MIGRATE_F_FAIL_MAPS | MIGRATE_F_TO_DEVMEM | MIGRATE_F_TO_SYSTEM;
const PLACEMENT_SYSTEM: u32 = 0;
const PLACEMENT_DEVMEM: u32 = 1;
const NO_OFFSET: u64 = u64::MAX;
const RW_F_WRITE: u32 = 1 << 0;
const REVOKE_F_RESTORE: u32 = 1 << 0;
/// Bytes a read or write moves through the kernel at a time.
const RW_STEP: usize = 64 * 1024;
const MAGIC: u32 = 0xDE;

/// `struct dmabuf_exp_create`
#[repr(C)]
#[derive(Default)]
pub(crate) struct Create {
    version: u32,
    flags: u32,
    size: u64,
    chunks: u64,
    nchunks: u32,
    fd: i32,
}

/// `struct dmabuf_exp_migrate`
#[repr(C)]
#[derive(Default)]
pub(crate) struct Migrate {
    version: u32,
    fd: i32,
    delay_ms: u32,
    flags: u32,
}

/// `struct dmabuf_exp_stats`
#[repr(C)]
#[derive(Default)]
pub(crate) struct Stats {
    version: u32,
    fd: i32,
    attachments: u64,
    pins: u64,
    mappings: u64,
    maps: u64,
    migrations: u64,
    move_notifies: u64,
    p2p_maps: u64,
    unrestored: u64,
    placement: u32,
    reserved: u32,
    devmem_offset: u64,
}

/// `struct dmabuf_exp_inject`
#[repr(C)]
#[derive(Default)]
pub(crate) struct Inject {
    version: u32,
    fd: i32,
    pin_errno: u32,
    map_errno: u32,
}

/// `struct dmabuf_exp_rw`
#[repr(C)]
#[derive(Default)]
pub(crate) struct Rw {
    version: u32,
    fd: i32,
    offset: u64,
    len: u64,
    data: u64,
    flags: u32,
    reserved: u32,
}

/// `struct dmabuf_exp_revoke`
#[repr(C)]
#[derive(Default)]
pub(crate) struct Revoke {
    version: u32,
    fd: i32,
    flags: u32,
    reserved: u32,
    wait_ns: u64,
    unmapped: u64,
}

/// `struct dmabuf_exp_latency`
#[repr(C)]
#[derive(Default)]
pub(crate) struct Latency {
    version: u32,
    fd: i32,
    count: u32,
    reserved: u32,
    unmap_ns: u64,
    remap_ns: u64,
    unmaps: u32,
    remaps: u32,
    dropped: u64,
}

// No padding: the sizes are the sums of the fields.
const _: () = assert!(size_of::<Create>() == 32);
const _: () = assert!(size_of::<Migrate>() == 16);
const _: () = assert!(size_of::<Stats>() == 88);
const _: () = assert!(size_of::<Inject>() == 16);
const _: () = assert!(size_of::<Rw>() == 40);
const _: () = assert!(size_of::<Revoke>() == 32);
const _: () = assert!(size_of::<Latency>() == 48);
// `FromBytes`/`AsBytes` for them: abs/user.rs, the one place that may
// assert such things.

/// The offset of every field and the size of every structure, in the order
/// of `include/uapi/dmabuf_exporter_rs.h`: the C suite compares them with the
/// header's (`uapi_layout_matches_c`), so neither copy can drift.
#[cfg(umem_kunit)]
pub(crate) const LAYOUT: [usize; 56] = [
    offset_of!(Create, version),
    offset_of!(Create, flags),
    offset_of!(Create, size),
    offset_of!(Create, chunks),
    offset_of!(Create, nchunks),
    offset_of!(Create, fd),
    size_of::<Create>(),
    offset_of!(Migrate, version),
    offset_of!(Migrate, fd),
    offset_of!(Migrate, delay_ms),
    offset_of!(Migrate, flags),
    size_of::<Migrate>(),
    offset_of!(Stats, version),
    offset_of!(Stats, fd),
    offset_of!(Stats, attachments),
    offset_of!(Stats, pins),
    offset_of!(Stats, mappings),
    offset_of!(Stats, maps),
    offset_of!(Stats, migrations),
    offset_of!(Stats, move_notifies),
    offset_of!(Stats, p2p_maps),
    offset_of!(Stats, unrestored),
    offset_of!(Stats, placement),
    offset_of!(Stats, reserved),
    offset_of!(Stats, devmem_offset),
    size_of::<Stats>(),
    offset_of!(Inject, version),
    offset_of!(Inject, fd),
    offset_of!(Inject, pin_errno),
    offset_of!(Inject, map_errno),
    size_of::<Inject>(),
    offset_of!(Rw, version),
    offset_of!(Rw, fd),
    offset_of!(Rw, offset),
    offset_of!(Rw, len),
    offset_of!(Rw, data),
    offset_of!(Rw, flags),
    offset_of!(Rw, reserved),
    size_of::<Rw>(),
    offset_of!(Revoke, version),
    offset_of!(Revoke, fd),
    offset_of!(Revoke, flags),
    offset_of!(Revoke, reserved),
    offset_of!(Revoke, wait_ns),
    offset_of!(Revoke, unmapped),
    size_of::<Revoke>(),
    offset_of!(Latency, version),
    offset_of!(Latency, fd),
    offset_of!(Latency, count),
    offset_of!(Latency, reserved),
    offset_of!(Latency, unmap_ns),
    offset_of!(Latency, remap_ns),
    offset_of!(Latency, unmaps),
    offset_of!(Latency, remaps),
    offset_of!(Latency, dropped),
    size_of::<Latency>(),
];

const IOC_CREATE: u32 = _IOWR::<Create>(MAGIC, 1);
const IOC_MIGRATE: u32 = _IOW::<Migrate>(MAGIC, 2);
const IOC_STATS: u32 = _IOWR::<Stats>(MAGIC, 3);
const IOC_INJECT: u32 = _IOW::<Inject>(MAGIC, 4);
const IOC_RW: u32 = _IOW::<Rw>(MAGIC, 5);
const IOC_REVOKE: u32 = _IOWR::<Revoke>(MAGIC, 6);
const IOC_LATENCY: u32 = _IOWR::<Latency>(MAGIC, 7);

/// The misc device `/dev/dmabuf_exporter_rs`: no per-file state, the
/// ioctls below.
pub(crate) struct ExporterIoctl;

#[vtable]
impl MiscDevice for ExporterIoctl {
    type Ptr = ();

    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<()> {
        Ok(())
    }

    fn ioctl(_device: (), _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let r = match cmd {
            IOC_CREATE => create(arg),
            IOC_MIGRATE => migrate(arg),
            IOC_STATS => stats(arg),
            IOC_INJECT => inject(arg),
            IOC_RW => rw(arg),
            IOC_REVOKE => revoke(arg),
            IOC_LATENCY => latency(arg),
            _ => Err(ENOTTY),
        }?;
        Ok(r.try_into()?)
    }
}

fn create(arg: usize) -> Result<i32> {
    let (mut reader, mut writer) = user_slice(arg, size_of::<Create>()).reader_writer();
    let mut req: Create = reader.read()?;
    if req.version != VERSION || req.flags & !F_ALL != 0 {
        return Err(EINVAL);
    }
    let size = usize::try_from(req.size).map_err(|_| EINVAL)?;
    let n = req.nchunks as usize;
    if n > exporter::MAX_CHUNKS {
        return Err(EINVAL);
    }
    let mut chunks = KVec::with_capacity(n, GFP_KERNEL)?;
    let ptr = usize::try_from(req.chunks).map_err(|_| EFAULT)?;
    let mut list = user_slice(ptr, n * size_of::<u32>()).reader();
    for _ in 0..n {
        chunks.push(list.read::<u32>()?, GFP_KERNEL)?;
    }
    let placement = if req.flags & F_DEVMEM != 0 {
        Placement::Device
    } else {
        Placement::System
    };
    let kind = match (req.flags & F_DYNAMIC != 0, req.flags & F_REVOCABLE != 0) {
        (false, false) => Kind::Static,
        (true, false) => Kind::Dynamic,
        (true, true) => Kind::Revocable,
        (false, true) => return Err(EINVAL),
    };
    let dmabuf = exporter::create_in(size, &chunks, kind, placement)?;
    // The descriptor is installed only once the caller has learnt it.
    dmabuf.install_fd(|fd| {
        req.fd = fd;
        writer.write(&req)
    })?;
    Ok(0)
}

fn migrate(arg: usize) -> Result<i32> {
    let req: Migrate = user_slice(arg, size_of::<Migrate>()).reader().read()?;
    if req.version != VERSION || req.flags & !MIGRATE_F_ALL != 0 {
        return Err(EINVAL);
    }
    let to = match (
        req.flags & MIGRATE_F_TO_DEVMEM != 0,
        req.flags & MIGRATE_F_TO_SYSTEM != 0,
    ) {
        (false, false) => None,
        (true, false) => Some(Placement::Device),
        (false, true) => Some(Placement::System),
        (true, true) => return Err(EINVAL),
    };
    let dmabuf = DmaBuf::get(req.fd)?;
    let fail_maps = req.flags & MIGRATE_F_FAIL_MAPS != 0;
    exporter::migrate_to(&dmabuf, req.delay_ms, fail_maps, to)?;
    Ok(0)
}

fn inject(arg: usize) -> Result<i32> {
    let req: Inject = user_slice(arg, size_of::<Inject>()).reader().read()?;
    if req.version != VERSION {
        return Err(EINVAL);
    }
    let dmabuf = DmaBuf::get(req.fd)?;
    exporter::inject(&dmabuf, req.pin_errno, req.map_errno)?;
    Ok(0)
}

fn stats(arg: usize) -> Result<i32> {
    let (mut reader, mut writer) = user_slice(arg, size_of::<Stats>()).reader_writer();
    let req: Stats = reader.read()?;
    if req.version != VERSION {
        return Err(EINVAL);
    }
    let dmabuf = DmaBuf::get(req.fd)?;
    let s = exporter::stats(&dmabuf)?;
    writer.write(&Stats {
        version: VERSION,
        fd: req.fd,
        attachments: s.attachments,
        pins: s.pins,
        mappings: s.mappings,
        maps: s.maps,
        migrations: s.migrations,
        move_notifies: s.move_notifies,
        p2p_maps: s.p2p_maps,
        unrestored: s.unrestored,
        placement: match s.placement {
            Placement::System => PLACEMENT_SYSTEM,
            Placement::Device => PLACEMENT_DEVMEM,
        },
        reserved: 0,
        devmem_offset: s.bar_offset.unwrap_or(NO_OFFSET),
    })?;
    Ok(0)
}

/// Reads or writes bytes of a buffer through the exporter's own mapping of
/// its memory, after any pending migration copy: a view of the contents that
/// does not depend on a CPU mapping of the dma-buf.
fn rw(arg: usize) -> Result<i32> {
    let req: Rw = user_slice(arg, size_of::<Rw>()).reader().read()?;
    if req.version != VERSION || req.flags & !RW_F_WRITE != 0 || req.reserved != 0 {
        return Err(EINVAL);
    }
    let offset = usize::try_from(req.offset).map_err(|_| EINVAL)?;
    let len = usize::try_from(req.len).map_err(|_| EINVAL)?;
    let data = usize::try_from(req.data).map_err(|_| EFAULT)?;
    data.checked_add(len).ok_or(EFAULT)?;
    let dmabuf = DmaBuf::get(req.fd)?;
    // Range first: a request is done whole or not at all (but EFAULT).
    if offset.checked_add(len).ok_or(EINVAL)? > dmabuf.size() {
        return Err(EINVAL);
    }
    let mut bounce = KVec::from_elem(0u8, core::cmp::min(len, RW_STEP), GFP_KERNEL)?;
    let mut done = 0;
    while done < len {
        let n = core::cmp::min(len - done, RW_STEP);
        let step = bounce.get_mut(..n).ok_or(EINVAL)?;
        let user = user_slice(data + done, n);
        if req.flags & RW_F_WRITE != 0 {
            user.reader().read_slice(step)?;
            exporter::write(&dmabuf, offset + done, step)?;
        } else {
            exporter::read(&dmabuf, offset + done, step)?;
            user.writer().write_slice(step)?;
        }
        done += n;
    }
    Ok(0)
}

/// Revokes a revocable buffer, or restores it (`DMABUF_EXP_REVOKE_F_RESTORE`).
fn revoke(arg: usize) -> Result<i32> {
    let (mut reader, mut writer) = user_slice(arg, size_of::<Revoke>()).reader_writer();
    let mut req: Revoke = reader.read()?;
    if req.version != VERSION || req.flags & !REVOKE_F_RESTORE != 0 || req.reserved != 0 {
        return Err(EINVAL);
    }
    let dmabuf = DmaBuf::get(req.fd)?;
    let done = exporter::revoke_buffer(&dmabuf, req.flags & REVOKE_F_RESTORE != 0)?;
    req.wait_ns = done.wait_ns;
    req.unmapped = done.unmapped;
    writer.write(&req)?;
    Ok(0)
}

/// Copies out and forgets a dynamic buffer's invalidation latency samples.
fn latency(arg: usize) -> Result<i32> {
    let (mut reader, mut writer) = user_slice(arg, size_of::<Latency>()).reader_writer();
    let mut req: Latency = reader.read()?;
    if req.version != VERSION || req.reserved != 0 {
        return Err(EINVAL);
    }
    let dmabuf = DmaBuf::get(req.fd)?;
    let got = exporter::latency(&dmabuf)?;
    let room = req.count as usize;
    let mut dropped = got.dropped;
    let mut copy_out = |ptr: u64, samples: &[u64]| -> Result<u32> {
        let n = core::cmp::min(room, samples.len());
        // CAST: at most `LATENCY_SAMPLES` samples lost here.
        dropped += (samples.len() - n) as u64;
        let addr = usize::try_from(ptr).map_err(|_| EFAULT)?;
        let mut out = user_slice(addr, n * size_of::<u64>()).writer();
        for v in samples.iter().take(n) {
            out.write(v)?;
        }
        // CAST: at most `LATENCY_SAMPLES`.
        Ok(n as u32)
    };
    req.unmaps = copy_out(req.unmap_ns, &got.unmap)?;
    req.remaps = copy_out(req.remap_ns, &got.remap)?;
    req.dropped = dropped;
    writer.write(&req)?;
    Ok(0)
}
