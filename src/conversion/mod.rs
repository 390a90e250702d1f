//! Lowerings out of Blueprint's dialects.

pub mod dist_to_mpi;
pub mod dist_to_runtime;
pub mod linalg_to_kernels;
pub mod model_to_linalg;
