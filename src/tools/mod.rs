//! What the command-line tools and embedders run: the pass registry and
//! textual pipelines (which name every pass), the lowering-to-LLVM
//! pipeline and JIT ([`execution`]), the drivers behind `tools/*.rs`
//! (`blueprint-opt`, `-translate`, `-run`, `-search`, the estimate) and the
//! C API / `mlir-opt` plugin ([`capi`]). The top layer: may import
//! everything.

pub mod capi;
pub mod cli;
pub mod estimate;
pub mod execution;
pub mod opt;
pub mod pipeline;
pub mod registry;
pub mod run;
pub mod search;
pub mod suggest;
pub mod train;
pub mod translate;
pub mod validate;

// The whole pipeline on the oracle cases, through the tools' pipeline.
#[cfg(test)]
mod tests;
