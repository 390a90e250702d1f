//! Blueprint: MLIR dialects, verifiers and passes that turn a Transformer
//! workload into a target-neutral distributed plan (`model` -> `dist` ->
//! `plan`) and then into runtime calls.
//!
//! The dialects are defined in ODS (`dialects/*.td`); `build.rs` runs
//! `mlir-tblgen` and compiles them into C++ dialects registered through the
//! C API in [`ir::context::create_context`], with their custom syntax,
//! traits and typed builders ([`dialect`]). What ODS cannot say is checked
//! by the Rust verifiers in [`dialect::verify`], which run after parsing and
//! after every pass.
//!
//! The folders are layers, as in MLIR's own tree; each imports only the
//! layers below it (`tools/check-layering.py` checks it):
//! [`tools`] -> [`conversion`], [`transforms`] -> [`dialect`] -> [`ir`];
//! [`analysis`] and [`runtime`] are plain Rust at the bottom.

pub mod analysis;
pub mod conversion;
pub mod dialect;
pub mod error;
pub mod ir;
pub mod runtime;
pub mod tools;
pub mod transforms;

pub use error::{Error, Result};
