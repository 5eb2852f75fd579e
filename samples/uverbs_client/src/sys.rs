// SPDX-License-Identifier: GPL-2.0
//! Generated bindings (build.rs): libibverbs, the uverbs ioctl ABI, the
//! exporter's UAPI and the C shim.
#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code
)]
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
