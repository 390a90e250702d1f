//! The estimate of a served block's plan on a system: how long the
//! prefill takes (time to the first token) and a decode step, and whether
//! the weights, the KV cache and the working activations fit a processor.
//!
//! Each pass's tasks are priced as Calculon prices a forward pass
//! (`layer_time`, the pricing its inference step uses): every task alone,
//! flop time on the matrix or vector unit and memory time on `mem1`, each
//! at the efficiency of its own size, a TP all-reduce at its network
//! time plus its own processing. A pass over one batch runs every block
//! in turn: on `pp` stages it is `blocks × (block + TP)` plus `pp − 1`
//! transfers of the pass's activation (`b × tokens × hidden`) on the PP
//! tier, no bubble to fill. A processor of the fullest stage holds its
//! blocks' weights and KV cache (at its capacity: the final context) and
//! one block's working activations.
//!
//! The plan states the decode step at the final context only, the
//! slowest; the figures derived from it (tokens per second, the whole
//! generation's time) are bounds, and say so.

use serde::Serialize;

use super::layer_time;
use super::{EstimateError, TaskFacts};
use crate::analysis::system::{NetworkBindingError, NetworkOp, SystemProfile};
use crate::analysis::workload::{InferenceSpec, Phase};

/// One pass priced on the system.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PassTime {
    /// Σ flop time of the block's tasks.
    pub block_flops_time: f64,
    /// Σ memory time of the block's tasks.
    pub block_mem_time: f64,
    /// The block's compute (Calculon's `block_fw_time`).
    pub block_time: f64,
    /// Its TP all-reduces (network time and their own processing).
    pub block_tp_time: f64,
    /// One transfer of the pass's activation between pipeline stages.
    pub pp_transfer_time: f64,
    /// The pass: `blocks × (block_time + block_tp_time) + (pp − 1) ×
    /// pp_transfer_time`.
    pub time: f64,
}

/// What a processor of the fullest pipeline stage holds (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServedMemory {
    pub blocks_per_rank: u64,
    pub weights: u64,
    /// The KV cache at its capacity (the final context).
    pub kv_cache: u64,
    pub activation_working: u64,
    pub total: u64,
    pub capacity: f64,
    pub fits: bool,
}

/// The served block's plan on a system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServedEstimate {
    pub prefill: PassTime,
    /// The decode step at the final context (`None` without generation).
    pub decode_at_final_context: Option<PassTime>,
    /// The prefill's time: the first token of every sequence.
    pub time_to_first_token: f64,
    /// `batch / decode step` at the final context: the slowest step's
    /// rate, a lower bound of the generation's.
    pub decode_tokens_per_second_at_least: Option<f64>,
    /// `prefill + generated × decode step at the final context`: an upper
    /// bound of the whole generation.
    pub generation_time_at_most: Option<f64>,
    pub memory: ServedMemory,
}

/// The memory facts of one block of a served plan (bytes on one rank).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServedBlockMemory {
    pub weights: u64,
    pub activation_working: u64,
    pub kv_cache: u64,
}

/// Prices the prefill and decode tasks of a served block's plan (`tasks`,
/// phases [`Phase::Prefill`] and [`Phase::Decode`]) on `system`, TP on
/// network tier `tp_net`, pipeline transfers on `pp_net`.
///
/// # Errors
/// A network tier the system has not, a datatype it does not rate, a task
/// the pricing cannot place, a figure that is not finite.
pub fn estimate_served(
    tasks: &[TaskFacts],
    memory: ServedBlockMemory,
    spec: &InferenceSpec,
    system: &SystemProfile,
    tp_net: usize,
    pp_net: usize,
) -> Result<ServedEstimate, EstimateError> {
    spec.validate()?;
    let datatype = spec.workload.datatype;
    let rates = super::rates_for(datatype, spec.mapping.tp, system, tp_net)?;
    let pp =
        system.network(pp_net).ok_or(NetworkBindingError::TierOutOfRange { axis: "pp", tier: pp_net, tiers: system.networks().len() })?;
    let (m, w, map) = (&spec.model, &spec.workload, &spec.mapping);
    let pass = |phase: Phase, tokens: u64| -> Result<Option<PassTime>, EstimateError> {
        // Priced as the forward pass it is.
        let forward: Vec<TaskFacts> =
            tasks.iter().filter(|t| t.phase == phase).map(|t| TaskFacts { phase: Phase::Forward, ..t.clone() }).collect();
        if forward.is_empty() {
            return Ok(None);
        }
        let t = layer_time::block_times(&forward, None, &rates)?;
        let activation = (w.batch * tokens * m.hidden * datatype.bytes()) as f64;
        let pp_transfer_time = if map.pp > 1 { pp.time(NetworkOp::P2p, activation, 2) } else { 0.0 };
        let block = t.block_fw_time + t.baseblock_fw_tp_time_exposed;
        Ok(Some(PassTime {
            block_flops_time: t.block_fw_flops_time,
            block_mem_time: t.block_fw_mem_time,
            block_time: t.block_fw_time,
            block_tp_time: t.baseblock_fw_tp_time_exposed,
            pp_transfer_time,
            time: m.blocks as f64 * block + (map.pp - 1) as f64 * pp_transfer_time,
        }))
    };
    let prefill = pass(Phase::Prefill, w.prompt_tokens)?.ok_or(EstimateError::Task {
        id: "prefill".into(),
        reason: "the plan has no prefill task: plan the served block with plan-transformer-inference",
    })?;
    let decode = pass(Phase::Decode, 1)?;
    let bpr = spec.blocks_per_rank();
    let total = bpr.saturating_mul(memory.weights.saturating_add(memory.kv_cache)).saturating_add(memory.activation_working);
    let capacity = system.mem1().capacity_bytes();
    let estimate = ServedEstimate {
        prefill,
        decode_at_final_context: decode,
        time_to_first_token: prefill.time,
        decode_tokens_per_second_at_least: decode.map(|d| w.batch as f64 / d.time),
        generation_time_at_most: decode.map(|d| prefill.time + w.generated_tokens as f64 * d.time),
        memory: ServedMemory {
            blocks_per_rank: bpr,
            weights: bpr.saturating_mul(memory.weights),
            kv_cache: bpr.saturating_mul(memory.kv_cache),
            activation_working: memory.activation_working,
            total,
            capacity,
            fits: (total as f64) <= capacity,
        },
    };
    let figures = [("prefill time", Some(estimate.prefill.time)), ("decode step time", decode.map(|d| d.time))];
    for (figure, value) in figures {
        if let Some(value) = value.filter(|v| !v.is_finite() || *v <= 0.0) {
            return Err(EstimateError::NotFinite {
                figure: figure.into(),
                value,
                what: "positive time",
                sources: "matrix, vector, mem1 and network rates".into(),
            });
        }
    }
    Ok(estimate)
}
