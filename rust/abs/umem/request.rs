// SPDX-License-Identifier: GPL-2.0

//! The arguments of the `ib_umem_dmabuf_get*()` entry points and their names.

use kernel::bindings;

/// The MR access flags a driver passes (`enum ib_access_flags` bits in an
/// `int`, unchecked: C passes them on as they come).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access(i32);

impl Access {
    /// The flags as C passed them.
    #[inline]
    pub(crate) const fn from_c(raw: i32) -> Self {
        Self(raw)
    }

    /// `ib_access_writable()`: whether the flags let the MR's memory be
    /// written (local or remote write, remote atomic, memory-window bind).
    #[inline]
    pub(crate) fn writable(self) -> bool {
        let writable = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
            | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
            | bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC
            | bindings::ib_access_flags_IB_ACCESS_MW_BIND;
        // CAST: the flags are a bit mask; C tests the same bits of the `int`.
        (self.0 as u32) & writable != 0
    }
}

/// The arguments every `ib_umem_dmabuf_get*()` takes: the byte range of the
/// buffer (`offset`, `size`), its file descriptor and the MR access flags.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UmemRequest {
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) fd: i32,
    pub(crate) access: Access,
}

impl UmemRequest {
    /// The arguments as C passes them.
    #[inline]
    pub(super) fn new(offset: kernel::ffi::c_ulong, size: usize, fd: i32, access: i32) -> Self {
        Self {
            offset,
            size,
            fd,
            access: Access::from_c(access),
        }
    }
}

/// The entry points of `struct ib_umem_dmabuf_ops`, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Entry {
    Get = 0,
    GetPinned,
    GetPinnedRevocable,
    SetRevokeLocked,
    MapPages,
    UnmapPages,
    RevokeLock,
    RevokeUnlock,
    Revoke,
    Release,
}

impl Entry {
    /// Every entry point, in table order (`ALL[e as usize] == e`).
    pub(crate) const ALL: [Entry; 10] = [
        Entry::Get,
        Entry::GetPinned,
        Entry::GetPinnedRevocable,
        Entry::SetRevokeLocked,
        Entry::MapPages,
        Entry::UnmapPages,
        Entry::RevokeLock,
        Entry::RevokeUnlock,
        Entry::Revoke,
        Entry::Release,
    ];

    /// The name of the `struct ib_umem_dmabuf_ops` member.
    pub(crate) const fn name(self) -> &'static kernel::str::CStr {
        match self {
            Entry::Get => kernel::c_str!("get"),
            Entry::GetPinned => kernel::c_str!("get_pinned"),
            Entry::GetPinnedRevocable => kernel::c_str!("get_pinned_revocable_and_lock"),
            Entry::SetRevokeLocked => kernel::c_str!("set_revoke_locked"),
            Entry::MapPages => kernel::c_str!("map_pages"),
            Entry::UnmapPages => kernel::c_str!("unmap_pages"),
            Entry::RevokeLock => kernel::c_str!("revoke_lock"),
            Entry::RevokeUnlock => kernel::c_str!("revoke_unlock"),
            Entry::Revoke => kernel::c_str!("revoke"),
            Entry::Release => kernel::c_str!("release"),
        }
    }
}
