//! Transformer training workload algebra.
//!
//! A typed training specification ([`spec`]) is derived into one decoder
//! block's ordered list of primitive invocations ([`training`]); summing those
//! invocations per phase gives the per-block, per-microbatch, per-rank facts
//! ([`facts`]) that Calculon reports. Nothing here knows about MLIR or about a
//! target: the numbers are exact integer work, bytes and message sizes.
//!
//! ```text
//! TrainingSpec --validate--> derive_training_block --> BlockDerivation
//!                                                          |
//!                                   BlockFacts::from_derivation / facts_from_work
//! ```

pub mod facts;
pub mod spec;
pub mod training;

#[cfg(test)]
mod tests;

pub use facts::{
    facts_from_work, pipeline_message_bytes, BlockFacts, PhaseSum, WorkItem, WorkTotals,
};
pub use spec::{
    Datatype, ModelSpec, PipelineSchedule, Recompute, SpecError, TpComm, TrainingMappingSpec,
    TrainingSpec, TrainingWorkloadSpec,
};
pub use training::{
    derive_training_block, BlockDerivation, BlockMemory, CollectiveFacts, CollectiveKind, Engine,
    Phase, Primitive, PrimitiveInvocation,
};
