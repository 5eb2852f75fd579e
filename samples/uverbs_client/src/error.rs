// SPDX-License-Identifier: GPL-2.0
//! Errors that name their errno.

use std::fmt;

/// A failed call: what was attempted and the errno it returned.
#[derive(Debug)]
pub struct Error {
    pub what: String,
    pub errno: i32,
}

impl Error {
    pub fn new(what: impl Into<String>, errno: i32) -> Self {
        Error {
            what: what.into(),
            errno,
        }
    }

    /// The errno of the last failed libc or libibverbs call.
    pub fn last(what: impl Into<String>) -> Self {
        Self::new(
            what,
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        )
    }
}

/// The symbolic name of an errno, e.g. `EINVAL`.
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENOTTY => "ENOTTY",
        libc::ENOSPC => "ENOSPC",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        _ => "E?",
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({})",
            self.what,
            errno_name(self.errno),
            std::io::Error::from_raw_os_error(self.errno)
        )
    }
}

pub type Result<T> = std::result::Result<T, Error>;
