// SPDX-License-Identifier: GPL-2.0
//! Client of `/dev/dmabuf_exporter_rs` (include/uapi/dmabuf_exporter_rs.h).

use crate::error::{Error, Result};
use crate::sys;
use std::ptr::NonNull;

fn ioctl<T>(fd: i32, cmd: u64, arg: &mut T, what: &str) -> Result<()> {
    // SAFETY: `arg` is the structure the command expects, live for the call.
    if unsafe { libc::ioctl(fd, cmd as _, arg as *mut T) } != 0 {
        return Err(Error::last(what));
    }
    Ok(())
}

const fn iowr(nr: u64, size: usize) -> u64 {
    (3 << 30) | ((size as u64) << 16) | ((sys::DMABUF_EXP_IOC_MAGIC as u64) << 8) | nr
}

const fn iow(nr: u64, size: usize) -> u64 {
    (1 << 30) | ((size as u64) << 16) | ((sys::DMABUF_EXP_IOC_MAGIC as u64) << 8) | nr
}

const CREATE: u64 = iowr(1, std::mem::size_of::<sys::dmabuf_exp_create>());
const MIGRATE: u64 = iow(2, std::mem::size_of::<sys::dmabuf_exp_migrate>());
const STATS: u64 = iowr(3, std::mem::size_of::<sys::dmabuf_exp_stats>());

/// The exporter's device file.
pub struct Exporter {
    fd: i32,
}

/// A buffer of the exporter: its dma-buf descriptor and a CPU mapping.
pub struct Buffer {
    pub fd: i32,
    map: NonNull<u8>,
    len: usize,
}

impl Exporter {
    pub fn open() -> Result<Self> {
        // SAFETY: a NUL-terminated path.
        let fd = unsafe {
            libc::open(
                c"/dev/dmabuf_exporter_rs".as_ptr(),
                libc::O_RDWR | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(Error::last("open /dev/dmabuf_exporter_rs"));
        }
        Ok(Exporter { fd })
    }

    /// A movable buffer of `size` bytes, one page per table entry, mapped.
    pub fn create(&self, size: usize) -> Result<Buffer> {
        let mut c = sys::dmabuf_exp_create {
            version: sys::DMABUF_EXP_VERSION,
            flags: sys::DMABUF_EXP_F_DYNAMIC,
            size: size as u64,
            ..Default::default()
        };
        ioctl(self.fd, CREATE, &mut c, "DMABUF_EXP_IOC_CREATE")?;
        // SAFETY: maps the whole buffer, shared, as the exporter requires.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                c.fd,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            let e = Error::last("mmap of the dma-buf");
            // SAFETY: the descriptor from CREATE, closed once.
            unsafe { libc::close(c.fd) };
            return Err(e);
        }
        Ok(Buffer {
            fd: c.fd,
            // SAFETY: `mmap` succeeded, so the address is not null.
            map: unsafe { NonNull::new_unchecked(map.cast()) },
            len: size,
        })
    }

    pub fn migrate(&self, buf: &Buffer, delay_ms: u32) -> Result<()> {
        let mut m = sys::dmabuf_exp_migrate {
            version: sys::DMABUF_EXP_VERSION,
            fd: buf.fd,
            delay_ms,
            ..Default::default()
        };
        ioctl(self.fd, MIGRATE, &mut m, "DMABUF_EXP_IOC_MIGRATE")
    }

    pub fn stats(&self, buf: &Buffer) -> Result<sys::dmabuf_exp_stats> {
        let mut s = sys::dmabuf_exp_stats {
            version: sys::DMABUF_EXP_VERSION,
            fd: buf.fd,
            ..Default::default()
        };
        ioctl(self.fd, STATS, &mut s, "DMABUF_EXP_IOC_STATS")?;
        Ok(s)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        // SAFETY: opened in `open`, closed once.
        unsafe { libc::close(self.fd) };
    }
}

impl Buffer {
    /// The CPU mapping (the exporter's view of the bytes).
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: a live shared mapping of `len` bytes, borrowed through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_ptr(), self.len) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: mapped and opened in `create`, released once.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), self.len);
            libc::close(self.fd);
        }
    }
}
