// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions that only this sample uses, over C objects the kernel
//! crate of 7.3 does not wrap the way an exporter needs: the module's only
//! `unsafe` code.

pub(crate) mod bufs;
pub(crate) mod p2p;
pub(crate) mod page;
#[cfg(umem_kunit)]
pub(crate) mod probe;
pub(crate) mod table;
pub(crate) mod user;
pub(crate) mod workqueue;
