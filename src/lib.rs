//! Blueprint: MLIR dialects, verifiers and passes that turn a Transformer
//! workload into a target-neutral distributed plan (`model` -> `dist` ->
//! `plan`) and then into runtime calls.
//!
//! The dialects are defined in ODS (`dialects/*.td`); `build.rs` runs
//! `mlir-tblgen` and compiles them into C++ dialects registered through the
//! C API in [`context::create_context`], with their custom syntax, traits and
//! typed builders ([`dialects`]). What ODS cannot say is checked by the Rust
//! verifiers in [`verify`], which run after parsing and after every pass.

pub mod abi;
pub mod capi;
pub mod checks;
pub mod context;
pub mod diagnostics;
pub mod dialects;
pub mod digest;
pub mod error;
pub mod estimate;
pub mod estimate_cli;
pub mod execution;
pub mod intern;
pub mod ir;
pub mod lineage;
pub mod lowering;
pub mod mesh;
pub mod ods;
pub mod opt;
pub mod parse;
pub mod pass_macro;
pub mod passes;
pub mod pictures;
pub mod pipeline;
pub mod registry;
pub mod run;
pub mod runtime;
pub mod schedule;
pub mod search;
pub mod search_cli;
pub mod simulate;
pub mod summary;
pub mod system;
pub mod tool;
pub mod transformer;
pub mod translate;
pub mod verify;
pub mod workload;

pub use error::{Error, Result};
