//! Transformer workload algebra: training and static inference.
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
//!
//! InferenceSpec --validate--> derive_prefill_pass / derive_decode_pass
//!                                 --> InferencePass (BlockDerivation + KV traffic)
//!                                 --> InferencePassFacts / InferenceFacts
//! ```
//!
//! Inference ([`inference_spec`], [`inference`]) reuses the model spec, the
//! primitive vocabulary and the invocation record; its passes carry the
//! phases [`Phase::Prefill`] and [`Phase::Decode`].

pub mod calculon;
pub mod facts;
pub mod graph;
pub mod graph_derivation;
pub mod inference;
pub mod inference_spec;
pub mod invocation;
pub mod parameters;
pub(crate) mod rules;
pub mod schema;
pub(crate) mod serving;
pub mod spec;
pub mod training;

#[cfg(test)]
pub(crate) mod inference_tests;
#[cfg(test)]
mod tests;

pub use calculon::{spec_from_calculon, CalculonError, CalculonRun};
pub use facts::{facts_from_work, pipeline_message_bytes, BlockFacts, FactValue, PhaseSum, WorkItem, WorkTotals, SHARE_TOLERANCE};
pub use graph::{BlockGraph, GraphOp, GraphOpKind, GraphValue, ValueRole};
pub use graph_derivation::{
    derive_from_graph,
    served::{derive_served_pass, served_inputs, ParameterSplit, ServedDep, ServedDerivation, ServedParameter},
    GraphDerivation, GraphError, PartialGradient,
};
pub use inference::{
    derive_decode_block, derive_decode_pass, derive_prefill_block, derive_prefill_pass, invocation_phase, kv_cache_bytes, DecodeRunTotals,
    InferenceFacts, InferencePass, InferencePassFacts, GATED_ACTIVATION,
};
pub use inference_spec::{InferenceMappingSpec, InferencePhase, InferenceSpec, InferenceWorkloadSpec};
pub use invocation::{
    share, tiled_phase, BlockDerivation, BlockMemory, CollectiveFacts, CollectiveKind, Engine, Phase, Primitive, PrimitiveInvocation,
    Tiling,
};
pub use spec::{
    Datatype, Dropout, ModelSpec, Norm, Optimizer, OptimizerKind, OptimizerSpec, PipelineSchedule, Real, Recompute, ScheduleKind,
    SpecError, TpComm, TpOverlap, TrainingMappingSpec, TrainingSpec, TrainingWorkloadSpec, DEFAULT_ROPE_THETA, MAX_SPEC_INTEGER,
    MAX_WORK_SCALE, MAX_WORLD_SIZE,
};
pub use training::{derive_training_block, partial_gradients};
