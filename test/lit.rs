//! Runs the lit/FileCheck suite under `cargo test`, against the tools this
//! build just produced.
//!
//! It first builds `libblueprint.so` for the embedding tests (the first
//! time several minutes: a second build of the crate against the shared
//! MLIR); what it does is written to stderr as it goes, and the build's
//! own output streams there, so `cargo test` is not silent meanwhile.

use std::{io::Write, path::Path, process::Command, time::Instant};

const LLVM_BIN: &str = "/usr/lib/llvm-22/bin";

/// A progress line straight to stderr (libtest captures `eprintln!` until
/// the test ends).
fn progress(line: &str) {
    let _ = writeln!(std::io::stderr(), "lit_suite: {line}");
}

#[test]
fn lit_suite() {
    let tool = Path::new(env!("CARGO_BIN_EXE_blueprint-opt"));
    let bin_dir = tool.parent().expect("tool has a parent directory");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("test");
    let lit = Path::new(LLVM_BIN).join("lit");
    // libblueprint.so for the embedding tests, in this build's profile.
    let mut build = Command::new("bash");
    build.arg(suite.join("../tools/build-shared.sh"));
    let profile = if bin_dir.ends_with("release") { "release" } else { "debug" };
    if profile == "release" {
        build.arg("--release");
    }
    progress(&format!(
        "building the {profile} shared library for the C, Python and mlir-opt tests (tools/build-shared.sh; the first build takes several minutes, cargo's output follows)"
    ));
    let started = Instant::now();
    // stderr inherited: the build's progress streams to the terminal.
    let built = build.stderr(std::process::Stdio::inherit()).output().unwrap_or_else(|e| panic!("cannot run tools/build-shared.sh: {e}"));
    assert!(built.status.success(), "tools/build-shared.sh failed (its output is above)");
    let shared = String::from_utf8_lossy(&built.stdout).trim().to_string();
    progress(&format!("built {shared} in {:.0} s; running the lit suite (about 2.5 minutes)", started.elapsed().as_secs_f64()));
    let started = Instant::now();
    let status = Command::new(&lit)
        .arg("-sv")
        .arg(&suite)
        .env("BLUEPRINT_BIN_DIR", bin_dir)
        .env("LLVM_BIN_DIR", LLVM_BIN)
        .env("BLUEPRINT_SHARED_LIB", shared)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e} (run tools/setup.sh)", lit.display()));
    progress(&format!("the lit suite took {:.0} s", started.elapsed().as_secs_f64()));
    assert!(status.success(), "lit suite failed");
}
