// SPDX-License-Identifier: GPL-2.0
//! Generates bindings to libibverbs, the uverbs ioctl ABI and the exporter's
//! UAPI with bindgen, and builds the C shim for libibverbs' inline functions.

use std::env;
use std::error::Error;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    let uapi = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?).join("../../include/uapi");
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=shim.h");
    println!("cargo:rerun-if-changed=shim.c");
    println!(
        "cargo:rerun-if-changed={}",
        uapi.join("dmabuf_exporter_rs.h").display()
    );

    cc::Build::new()
        .file("shim.c")
        .warnings(true)
        .compile("shim");
    println!("cargo:rustc-link-lib=ibverbs");

    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_arg(format!("-I{}", uapi.display()))
        .allowlist_function("ibv_.*|shim_.*")
        .allowlist_type("ibv_.*|ib_uverbs_.*|uverbs_.*|rdma_driver_id|dmabuf_exp_.*|shim_.*")
        .allowlist_var("IBV_.*|UVERBS_.*|RDMA_.*|IB_UVERBS_.*|DMABUF_EXP_.*|SHIM_.*")
        .rustified_enum("ibv_wc_status|ibv_qp_state|ibv_wr_opcode|ibv_mtu")
        .derive_default(true)
        .layout_tests(false)
        .generate()?;
    let out = PathBuf::from(env::var("OUT_DIR")?);
    bindings.write_to_file(out.join("bindings.rs"))?;
    Ok(())
}
