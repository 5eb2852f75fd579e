// SPDX-License-Identifier: GPL-2.0
//! uverbs-dmabuf: registers a dma-buf memory region on an RDMA device through
//! the uverbs ioctl and moves data through it while the exporter migrates the
//! buffer; prints what happens. Exits non-zero if any step fails.
//!
//! Usage: `uverbs-dmabuf DEVICE GID_INDEX [--raw]` (two RC QPs of DEVICE,
//! connected to each other through the GID at GID_INDEX). The MR is
//! registered with `ibv_reg_dmabuf_mr()`, or with `--raw` through the ioctl
//! built here attribute by attribute; the output names the path taken.

mod error;
mod exporter;
mod sys;
mod verbs;

use error::{Error, Result};
use std::process::ExitCode;
use sys::ibv_wr_opcode::{IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE};
use verbs::{Device, DmabufMr, HostMr, Qp, RegPath};

const PAGE: usize = 4096;
const MESSAGE: &[u8] = b"RDMA wrote this into a dma-buf that moves";

fn stats_line(exp: &exporter::Exporter, buf: &exporter::Buffer) -> Result<String> {
    let s = exp.stats(buf)?;
    Ok(format!(
        "attachments {}, mappings {}, maps so far {}, migrations {}, move_notify sent {}",
        s.attachments, s.mappings, s.maps, s.migrations, s.move_notifies
    ))
}

fn run(device: &str, gid_index: u8, path: RegPath) -> Result<()> {
    let dev = Device::open(device)?;
    let gid = dev.gid(gid_index.into())?;
    let (qa, qb) = (Qp::new(&dev)?, Qp::new(&dev)?);
    qa.connect(qb.num(), gid, gid_index)?;
    qb.connect(qa.num(), gid, gid_index)?;
    println!(
        "  {device}: two RC QPs ({} <-> {}) connected",
        qa.num(),
        qb.num()
    );

    let exp = exporter::Exporter::open()?;
    let mut buf = exp.create(16 * PAGE)?;
    println!("  exporter: 64 KiB movable dma-buf, fd {}", buf.fd);

    let (offset, iova) = (PAGE as u64 + 100, 0x7000_0000_0064);
    let access = sys::ibv_access_flags_IBV_ACCESS_LOCAL_WRITE
        | sys::ibv_access_flags_IBV_ACCESS_REMOTE_WRITE
        | sys::ibv_access_flags_IBV_ACCESS_REMOTE_READ;
    let mr = DmabufMr::new(&dev, path, buf.fd, offset, 8 * PAGE as u64, iova, access)?;
    println!(
        "  {}: offset {offset}, length {}, iova {iova:#x}: lkey {:#x}, rkey {:#x}",
        path.describe(),
        8 * PAGE,
        mr.lkey(),
        mr.rkey()
    );

    let mut host = vec![0u8; PAGE];
    let hmr = HostMr::new(&dev, &mut host)?;
    host[..MESSAGE.len()].copy_from_slice(MESSAGE);
    let local = (host.as_ptr() as u64, MESSAGE.len() as u32, hmr.lkey());
    qa.rdma(IBV_WR_RDMA_WRITE, local, (iova, mr.rkey()))?;
    let at = offset as usize;
    let seen = buf.bytes()[at..at + MESSAGE.len()].to_vec();
    println!(
        "  RDMA WRITE -> exporter's mapping at offset {at}: \"{}\"",
        String::from_utf8_lossy(&seen)
    );
    if seen != MESSAGE {
        return Err(Error::new(
            "the bytes written are not in the buffer",
            libc::EIO,
        ));
    }
    println!("  exporter: {}", stats_line(&exp, &buf)?);

    exp.migrate(&buf, 100)?;
    println!("  MIGRATE: new pages, move_notify sent; rxe unmapped its MR");
    println!("  exporter: {}", stats_line(&exp, &buf)?);

    host.fill(0);
    qa.rdma(
        IBV_WR_RDMA_READ,
        (host.as_ptr() as u64, MESSAGE.len() as u32, hmr.lkey()),
        (iova, mr.rkey()),
    )?;
    println!(
        "  RDMA READ (rxe re-mapped, after the copy fence): \"{}\"",
        String::from_utf8_lossy(&host[..MESSAGE.len()])
    );
    if &host[..MESSAGE.len()] != MESSAGE {
        return Err(Error::new("the bytes read back differ", libc::EIO));
    }
    println!("  exporter: {}", stats_line(&exp, &buf)?);

    mr.dereg()?;
    drop(hmr);
    println!(
        "  ibv_dereg_mr: done; exporter: {}",
        stats_line(&exp, &buf)?
    );
    let s = exp.stats(&buf)?;
    if s.attachments != 0 || s.mappings != 0 || s.move_notifies == 0 || s.maps < 2 {
        return Err(Error::new(
            "the exporter's counters are not back to baseline",
            libc::EIO,
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let path = match args.get(3).map(String::as_str) {
        None => Some(RegPath::Libibverbs),
        Some("--raw") => Some(RegPath::RawIoctl),
        Some(_) => None,
    };
    let (Some(device), Some(gid), Some(path)) = (
        args.get(1),
        args.get(2).and_then(|g| g.parse::<u8>().ok()),
        path,
    ) else {
        eprintln!("usage: uverbs-dmabuf DEVICE GID_INDEX [--raw]");
        return ExitCode::from(2);
    };
    match run(device, gid, path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("  FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
