//! A plain-Rust layer that reaches for MLIR and for a layer above it.
pub mod algebra;
