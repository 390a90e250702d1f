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
    // libblueprint.so for the embedding tests, in this build's profile.
    let mut build = Command::new("bash");
    build.arg(suite.join("../tools/build-shared.sh"));
    if bin_dir.ends_with("release") {
        build.arg("--release");
    }
    let built = build.output().unwrap_or_else(|e| panic!("cannot run tools/build-shared.sh: {e}"));
    assert!(built.status.success(), "tools/build-shared.sh failed:\n{}", String::from_utf8_lossy(&built.stderr));
    let shared = String::from_utf8_lossy(&built.stdout).trim().to_string();
    let status = Command::new(&lit)
        .arg("-sv")
        .arg(&suite)
        .env("BLUEPRINT_BIN_DIR", bin_dir)
        .env("LLVM_BIN_DIR", LLVM_BIN)
        .env("BLUEPRINT_SHARED_LIB", shared)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e} (run scripts/setup.sh)", lit.display()));
    assert!(status.success(), "lit suite failed");
}
