//! Plain Rust, no MLIR: the workload algebra, pipeline schedules, system
//! profiles, the step estimate and its event simulation, the strategy
//! search and the pictures. Imports nothing else of the crate (nor
//! `melior`), so estimate and search run without a context.

pub mod estimate;
pub(crate) mod json;
pub mod kernel_profile;
pub mod pictures;
pub mod schedule;
pub mod search;
pub mod simulate;
pub mod system;
pub mod workload;
