//! Crate-level errors of the tools (the layers' own errors live with them).

use thiserror::Error;

/// Errors of the command-line drivers that are not MLIR diagnostics.
#[derive(Debug, Error)]
pub enum Error {
    #[error("cannot read '{path}': {source}")]
    ReadInput {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write '{path}': {source}")]
    WriteOutput {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Usage(String),
    #[error("invalid pass pipeline '{pipeline}': {reason}")]
    Pipeline { pipeline: String, reason: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
