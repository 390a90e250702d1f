//! Runs the lit/FileCheck suite under `cargo test`, against the tools this
//! build just produced.

use std::{path::Path, process::Command};

const LLVM_BIN: &str = "/usr/lib/llvm-22/bin";

#[test]
fn lit_suite() {
    let tool = Path::new(env!("CARGO_BIN_EXE_blueprint-opt"));
    let bin_dir = tool.parent().expect("tool has a parent directory");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("test");
    let lit = Path::new(LLVM_BIN).join("lit");
    let status = Command::new(&lit)
        .arg("-sv")
        .arg(&suite)
        .env("BLUEPRINT_BIN_DIR", bin_dir)
        .env("LLVM_BIN_DIR", LLVM_BIN)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e} (run scripts/setup.sh)", lit.display()));
    assert!(status.success(), "lit suite failed");
}
