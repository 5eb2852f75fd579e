// SPDX-License-Identifier: GPL-2.0
//! A small owning layer over libibverbs, and dma-buf MR registration with
//! the uverbs ioctl `UVERBS_METHOD_REG_DMABUF_MR`.
//!
//! rdma-core's rxe provider has no `reg_dmabuf_mr`, so `ibv_reg_dmabuf_mr()`
//! fails with EOPNOTSUPP there; the kernel method is generic, so the client
//! sends it itself on the context's command file descriptor, then wraps the
//! result in the provider's MR object so that `ibv_dereg_mr()` (the normal
//! path) deregisters it.

use crate::error::{Error, Result};
use crate::sys;
use std::ffi::CStr;
use std::mem::{size_of, zeroed};
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

/// `RDMA_VERBS_IOCTL`, `_IOWR(RDMA_IOCTL_MAGIC, 1, struct ib_uverbs_ioctl_hdr)`
/// (a function-like macro, which bindgen cannot evaluate).
const RDMA_VERBS_IOCTL: u64 =
    (3 << 30) | ((size_of::<sys::ib_uverbs_ioctl_hdr>() as u64) << 16) | (0x1b << 8) | 1;

/// An open RDMA device with one protection domain and one completion queue.
pub struct Device {
    ctx: NonNull<sys::ibv_context>,
    pd: NonNull<sys::ibv_pd>,
    cq: NonNull<sys::ibv_cq>,
}

impl Device {
    /// Opens the device called `name`.
    pub fn open(name: &str) -> Result<Self> {
        let mut n = 0;
        // SAFETY: `n` is a valid out-parameter; the list is freed below.
        let list = unsafe { sys::ibv_get_device_list(&mut n) };
        if list.is_null() {
            return Err(Error::last("ibv_get_device_list"));
        }
        let mut ctx = ptr::null_mut();
        for i in 0..n.max(0) as usize {
            // SAFETY: the list has `n` valid entries.
            let dev = unsafe { *list.add(i) };
            // SAFETY: a valid device; the name is a NUL-terminated string.
            let dev_name = unsafe { CStr::from_ptr(sys::ibv_get_device_name(dev)) };
            if dev_name.to_bytes() == name.as_bytes() {
                // SAFETY: a valid device of the list.
                ctx = unsafe { sys::ibv_open_device(dev) };
                break;
            }
        }
        // SAFETY: the list came from `ibv_get_device_list`; opened contexts stay valid.
        unsafe { sys::ibv_free_device_list(list) };
        let ctx =
            NonNull::new(ctx).ok_or_else(|| Error::new(format!("open {name}"), libc::ENODEV))?;
        // SAFETY: `ctx` is an open context.
        let pd = NonNull::new(unsafe { sys::ibv_alloc_pd(ctx.as_ptr()) });
        let Some(pd) = pd else {
            // SAFETY: opened above, closed once.
            unsafe { sys::ibv_close_device(ctx.as_ptr()) };
            return Err(Error::last("ibv_alloc_pd"));
        };
        // SAFETY: as above.
        let cq = NonNull::new(unsafe {
            sys::ibv_create_cq(ctx.as_ptr(), 64, ptr::null_mut(), ptr::null_mut(), 0)
        });
        let Some(cq) = cq else {
            // SAFETY: allocated and opened above, freed once.
            unsafe {
                sys::ibv_dealloc_pd(pd.as_ptr());
                sys::ibv_close_device(ctx.as_ptr());
            }
            return Err(Error::last("ibv_create_cq"));
        };
        Ok(Device { ctx, pd, cq })
    }

    /// The GID at `index` of port 1.
    pub fn gid(&self, index: i32) -> Result<sys::ibv_gid> {
        // SAFETY: all-zero is a valid GID; the context is open.
        let mut gid: sys::ibv_gid = unsafe { zeroed() };
        // SAFETY: as above; `gid` is a valid out-parameter.
        if unsafe { sys::ibv_query_gid(self.ctx.as_ptr(), 1, index, &mut gid) } != 0 {
            return Err(Error::last("ibv_query_gid"));
        }
        Ok(gid)
    }

    /// Waits (up to `timeout`) for one completion and checks its status.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        let end = Instant::now() + timeout;
        // SAFETY: all-zero is a valid work completion.
        let mut wc: sys::ibv_wc = unsafe { zeroed() };
        while Instant::now() < end {
            // SAFETY: the CQ is live; `wc` has room for one completion.
            let n = unsafe { sys::shim_poll_cq(self.cq.as_ptr(), 1, &mut wc) };
            if n < 0 {
                return Err(Error::new("ibv_poll_cq", libc::EIO));
            }
            if n == 1 {
                return if wc.status == sys::ibv_wc_status::IBV_WC_SUCCESS {
                    Ok(())
                } else {
                    // SAFETY: returns a static string for any status.
                    let s = unsafe { CStr::from_ptr(sys::ibv_wc_status_str(wc.status)) };
                    Err(Error::new(
                        format!("work completion: {}", s.to_string_lossy()),
                        libc::EIO,
                    ))
                };
            }
        }
        Err(Error::new("waiting for a completion", libc::ETIMEDOUT))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: created in `open`, destroyed once, children first.
        unsafe {
            sys::ibv_destroy_cq(self.cq.as_ptr());
            sys::ibv_dealloc_pd(self.pd.as_ptr());
            sys::ibv_close_device(self.ctx.as_ptr());
        }
    }
}

/// A reliable-connected queue pair.
pub struct Qp<'d> {
    dev: &'d Device,
    qp: NonNull<sys::ibv_qp>,
}

impl<'d> Qp<'d> {
    pub fn new(dev: &'d Device) -> Result<Self> {
        let mut attr = sys::ibv_qp_init_attr {
            send_cq: dev.cq.as_ptr(),
            recv_cq: dev.cq.as_ptr(),
            qp_type: sys::ibv_qp_type_IBV_QPT_RC,
            ..Default::default()
        };
        attr.cap.max_send_wr = 16;
        attr.cap.max_recv_wr = 16;
        attr.cap.max_send_sge = 1;
        attr.cap.max_recv_sge = 1;
        // SAFETY: the PD is live; `attr` is complete.
        let qp = NonNull::new(unsafe { sys::ibv_create_qp(dev.pd.as_ptr(), &mut attr) })
            .ok_or_else(|| Error::last("ibv_create_qp"))?;
        Ok(Qp { dev, qp })
    }

    pub fn num(&self) -> u32 {
        // SAFETY: the QP is live.
        unsafe { (*self.qp.as_ptr()).qp_num }
    }

    fn modify(&self, attr: &mut sys::ibv_qp_attr, mask: u32, what: &str) -> Result<()> {
        // CAST: the mask bits fit `c_int`.
        // SAFETY: the QP is live; `attr` is valid for the fields in `mask`.
        if unsafe { sys::ibv_modify_qp(self.qp.as_ptr(), attr, mask as i32) } != 0 {
            return Err(Error::last(what));
        }
        Ok(())
    }

    /// Connects to `dest` (a QP of the same device, reached through `gid`).
    pub fn connect(&self, dest: u32, gid: sys::ibv_gid, gid_index: u8) -> Result<()> {
        let access = sys::ibv_access_flags_IBV_ACCESS_LOCAL_WRITE
            | sys::ibv_access_flags_IBV_ACCESS_REMOTE_WRITE
            | sys::ibv_access_flags_IBV_ACCESS_REMOTE_READ;
        let mut a = sys::ibv_qp_attr {
            qp_state: sys::ibv_qp_state::IBV_QPS_INIT,
            port_num: 1,
            qp_access_flags: access,
            ..Default::default()
        };
        self.modify(
            &mut a,
            sys::ibv_qp_attr_mask_IBV_QP_STATE
                | sys::ibv_qp_attr_mask_IBV_QP_PKEY_INDEX
                | sys::ibv_qp_attr_mask_IBV_QP_PORT
                | sys::ibv_qp_attr_mask_IBV_QP_ACCESS_FLAGS,
            "modify QP to INIT",
        )?;
        let mut a = sys::ibv_qp_attr {
            qp_state: sys::ibv_qp_state::IBV_QPS_RTR,
            path_mtu: sys::ibv_mtu::IBV_MTU_1024,
            dest_qp_num: dest,
            rq_psn: 1,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 1,
            ..Default::default()
        };
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = gid;
        a.ah_attr.grh.sgid_index = gid_index;
        a.ah_attr.grh.hop_limit = 1;
        a.ah_attr.port_num = 1;
        self.modify(
            &mut a,
            sys::ibv_qp_attr_mask_IBV_QP_STATE
                | sys::ibv_qp_attr_mask_IBV_QP_AV
                | sys::ibv_qp_attr_mask_IBV_QP_PATH_MTU
                | sys::ibv_qp_attr_mask_IBV_QP_DEST_QPN
                | sys::ibv_qp_attr_mask_IBV_QP_RQ_PSN
                | sys::ibv_qp_attr_mask_IBV_QP_MAX_DEST_RD_ATOMIC
                | sys::ibv_qp_attr_mask_IBV_QP_MIN_RNR_TIMER,
            "modify QP to RTR",
        )?;
        let mut a = sys::ibv_qp_attr {
            qp_state: sys::ibv_qp_state::IBV_QPS_RTS,
            // 4.3 s: a responder re-mapping a dma-buf MR waits for the
            // exporter's copy fence.
            timeout: 20,
            retry_cnt: 7,
            rnr_retry: 7,
            sq_psn: 1,
            max_rd_atomic: 1,
            ..Default::default()
        };
        self.modify(
            &mut a,
            sys::ibv_qp_attr_mask_IBV_QP_STATE
                | sys::ibv_qp_attr_mask_IBV_QP_TIMEOUT
                | sys::ibv_qp_attr_mask_IBV_QP_RETRY_CNT
                | sys::ibv_qp_attr_mask_IBV_QP_RNR_RETRY
                | sys::ibv_qp_attr_mask_IBV_QP_SQ_PSN
                | sys::ibv_qp_attr_mask_IBV_QP_MAX_QP_RD_ATOMIC,
            "modify QP to RTS",
        )
    }

    /// Posts one signalled RDMA WRITE or READ and waits for it.
    pub fn rdma(
        &self,
        opcode: sys::ibv_wr_opcode,
        local: (u64, u32, u32),
        remote: (u64, u32),
    ) -> Result<()> {
        let mut sge = sys::ibv_sge {
            addr: local.0,
            length: local.1,
            lkey: local.2,
        };
        let mut wr = sys::ibv_send_wr {
            sg_list: &mut sge,
            num_sge: 1,
            opcode,
            send_flags: sys::ibv_send_flags_IBV_SEND_SIGNALED,
            ..Default::default()
        };
        wr.wr.rdma.remote_addr = remote.0;
        wr.wr.rdma.rkey = remote.1;
        let mut bad = ptr::null_mut();
        // SAFETY: the QP is live; `wr` and `sge` outlive the call (the provider
        // copies them into its queue).
        let r = unsafe { sys::shim_post_send(self.qp.as_ptr(), &mut wr, &mut bad) };
        if r != 0 {
            return Err(Error::new("ibv_post_send", r));
        }
        self.dev.wait(Duration::from_secs(120))
    }
}

impl Drop for Qp<'_> {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe { sys::ibv_destroy_qp(self.qp.as_ptr()) };
    }
}

/// An ordinary (user memory) MR.
pub struct HostMr<'d> {
    mr: NonNull<sys::ibv_mr>,
    _dev: &'d Device,
}

impl<'d> HostMr<'d> {
    pub fn new(dev: &'d Device, buf: &mut [u8]) -> Result<Self> {
        let access = sys::ibv_access_flags_IBV_ACCESS_LOCAL_WRITE
            | sys::ibv_access_flags_IBV_ACCESS_REMOTE_WRITE
            | sys::ibv_access_flags_IBV_ACCESS_REMOTE_READ;
        // CAST: the flag bits fit `c_int`.
        // SAFETY: `buf` stays valid (and unmoved) while the MR exists: the caller
        // keeps it borrowed for the MR's lifetime.
        let mr = unsafe {
            sys::ibv_reg_mr(
                dev.pd.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                access as i32,
            )
        };
        Ok(HostMr {
            mr: NonNull::new(mr).ok_or_else(|| Error::last("ibv_reg_mr"))?,
            _dev: dev,
        })
    }

    pub fn lkey(&self) -> u32 {
        // SAFETY: the MR is live.
        unsafe { (*self.mr.as_ptr()).lkey }
    }
}

impl Drop for HostMr<'_> {
    fn drop(&mut self) {
        // SAFETY: registered in `new`, deregistered once.
        unsafe { sys::ibv_dereg_mr(self.mr.as_ptr()) };
    }
}

/// How a dma-buf MR is registered; both end in `UVERBS_METHOD_REG_DMABUF_MR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegPath {
    /// `ibv_reg_dmabuf_mr()`: libibverbs and its rxe provider, as every
    /// application does (needs the rxe provider of patches/rdma-core).
    Libibverbs,
    /// The ioctl built here attribute by attribute, bypassing the provider.
    RawIoctl,
}

impl RegPath {
    pub fn describe(self) -> &'static str {
        match self {
            RegPath::Libibverbs => "ibv_reg_dmabuf_mr() (libibverbs + rxe provider)",
            RegPath::RawIoctl => "raw UVERBS_METHOD_REG_DMABUF_MR ioctl",
        }
    }
}

/// A dma-buf MR registered with `UVERBS_METHOD_REG_DMABUF_MR`.
pub struct DmabufMr<'d> {
    /// The `ibv_mr` inside the provider's `verbs_mr` (its first member).
    mr: NonNull<sys::ibv_mr>,
    _dev: &'d Device,
}

impl<'d> DmabufMr<'d> {
    /// Registers `[offset, offset + length)` of the dma-buf `fd` at `iova`.
    pub fn new(
        dev: &'d Device,
        path: RegPath,
        fd: i32,
        offset: u64,
        length: u64,
        iova: u64,
        access: u32,
    ) -> Result<Self> {
        match path {
            RegPath::Libibverbs => Self::reg_libibverbs(dev, fd, offset, length, iova, access),
            RegPath::RawIoctl => Self::reg_raw(dev, fd, offset, length, iova, access),
        }
    }

    fn reg_libibverbs(
        dev: &'d Device,
        fd: i32,
        offset: u64,
        length: u64,
        iova: u64,
        access: u32,
    ) -> Result<Self> {
        let len = usize::try_from(length).map_err(|_| Error::new("length", libc::EINVAL))?;
        // CAST: the access flags are the C API's int.
        // SAFETY: the PD is live for `'d`; the MR returned (if any) is ours
        // until ibv_dereg_mr().
        let mr = unsafe {
            sys::ibv_reg_dmabuf_mr(dev.pd.as_ptr(), offset, len, iova, fd, access as i32)
        };
        let Some(mr) = NonNull::new(mr) else {
            return Err(Error::last("ibv_reg_dmabuf_mr"));
        };
        Ok(DmabufMr { mr, _dev: dev })
    }

    fn reg_raw(
        dev: &'d Device,
        fd: i32,
        offset: u64,
        length: u64,
        iova: u64,
        access: u32,
    ) -> Result<Self> {
        #[repr(C)]
        struct Req {
            hdr: sys::ib_uverbs_ioctl_hdr,
            attrs: [sys::ib_uverbs_attr; 9],
        }
        let (mut lkey, mut rkey) = (0u32, 0u32);
        // SAFETY: all-zero is a valid request; every field used is set below.
        let mut req: Req = unsafe { zeroed() };
        req.hdr.length = size_of::<Req>() as u16;
        req.hdr.object_id = sys::uverbs_default_objects_UVERBS_OBJECT_MR as u16;
        req.hdr.method_id = sys::uverbs_methods_mr_UVERBS_METHOD_REG_DMABUF_MR as u16;
        req.hdr.num_attrs = 9;
        // ib_core checks it against the device's driver.
        req.hdr.driver_id = sys::rdma_driver_id_RDMA_DRIVER_RXE;
        // SAFETY: the PD is live.
        let pd_handle = unsafe { (*dev.pd.as_ptr()).handle };
        let attrs: [(u32, u16, u64); 9] = [
            (
                sys::uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids_UVERBS_ATTR_REG_DMABUF_MR_HANDLE,
                0,
                0,
            ),
            (
                sys::uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids_UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE,
                0,
                pd_handle.into(),
            ),
            (
                sys::uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids_UVERBS_ATTR_REG_DMABUF_MR_OFFSET,
                8,
                offset,
            ),
            (
                sys::uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids_UVERBS_ATTR_REG_DMABUF_MR_LENGTH,
                8,
                length,
            ),
            (
                sys::uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids_UVERBS_ATTR_REG_DMABUF_MR_IOVA,
                8,
                iova,
            ),
            // CAST: the descriptor travels as the u32 the method declares.
            (
                sys::uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids_UVERBS_ATTR_REG_DMABUF_MR_FD,
                4,
                fd as u32 as u64,
            ),
            (
                sys::uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids_UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS,
                4,
                access.into(),
            ),
            (
                sys::uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids_UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY,
                4,
                &mut lkey as *mut u32 as u64,
            ),
            (
                sys::uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids_UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY,
                4,
                &mut rkey as *mut u32 as u64,
            ),
        ];
        for (slot, &(id, len, data)) in req.attrs.iter_mut().zip(attrs.iter()) {
            slot.attr_id = id as u16;
            slot.len = len;
            slot.__bindgen_anon_1.data = data;
        }
        // SAFETY: the command fd of a live context; `req` is a complete request
        // whose output pointers (`lkey`, `rkey`) are live for the call.
        let r = unsafe {
            libc::ioctl(
                (*dev.ctx.as_ptr()).cmd_fd,
                RDMA_VERBS_IOCTL as _,
                &mut req as *mut Req,
            )
        };
        if r != 0 {
            return Err(Error::last("UVERBS_METHOD_REG_DMABUF_MR"));
        }
        // CAST: the kernel returns the new object's 32-bit handle.
        // SAFETY: `data` is the union member the kernel wrote.
        let handle = unsafe { req.attrs[0].__bindgen_anon_1.data } as u32;
        // The provider's MR object, so that ibv_dereg_mr() (which frees it with
        // free()) deregisters it like any other MR.
        // SAFETY: `calloc` returns zeroed memory or null.
        let vmr = unsafe { libc::calloc(1, size_of::<sys::shim_verbs_mr>()) }
            .cast::<sys::shim_verbs_mr>();
        let Some(vmr) = NonNull::new(vmr) else {
            return Err(Error::new("calloc", libc::ENOMEM));
        };
        // SAFETY: `vmr` is a fresh allocation of the right size.
        unsafe {
            let m = &mut (*vmr.as_ptr()).ibv_mr;
            m.context = dev.ctx.as_ptr();
            m.pd = dev.pd.as_ptr();
            m.addr = iova as usize as *mut _;
            m.length = length as usize;
            m.handle = handle;
            m.lkey = lkey;
            m.rkey = rkey;
            (*vmr.as_ptr()).mr_type = sys::SHIM_MR_TYPE_DMABUF_MR;
            (*vmr.as_ptr()).access = access as i32;
        }
        Ok(DmabufMr {
            mr: vmr.cast(),
            _dev: dev,
        })
    }

    pub fn lkey(&self) -> u32 {
        // SAFETY: live until drop.
        unsafe { (*self.mr.as_ptr()).lkey }
    }

    pub fn rkey(&self) -> u32 {
        // SAFETY: live until drop.
        unsafe { (*self.mr.as_ptr()).rkey }
    }

    /// Deregisters through `ibv_dereg_mr()`.
    pub fn dereg(self) -> Result<()> {
        let mr = self.mr;
        std::mem::forget(self);
        // SAFETY: a registered MR in the provider's object; on success the
        // provider frees the object.
        let r = unsafe { sys::ibv_dereg_mr(mr.as_ptr()) };
        if r != 0 {
            return Err(Error::new("ibv_dereg_mr", r));
        }
        Ok(())
    }
}

impl Drop for DmabufMr<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `dereg`.
        unsafe { sys::ibv_dereg_mr(self.mr.as_ptr()) };
    }
}
