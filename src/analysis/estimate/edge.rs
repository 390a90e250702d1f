//! The edge block's TP collectives (the block next to a stage boundary).
//!
//! Calculon models a chunk as `bpc − 1` base blocks and one edge block.
//! Under `ar` and `rs_ag` the two are the same. Under `p2p_rs_ag` the
//! pipeline carries only the `1/tp` sequence slice, so the edge block
//! communicates as sequence parallelism does (Calculon's TP layers switch
//! to `split_comm` when `baseblock = false`): every all-reduce becomes a
//! reduce-scatter, and the identity directions of the TP entry (forward)
//! and exit (backward) become all-gathers; an entry whose output is
//! dropped after the forward (attention under `attn_only` or `full`, the
//! MLP under `full`) re-gathers it. The local work stays the block's own:
//! Calculon builds one set of layers, so an edge collective does the
//! processing of the base-block layer it replaces, and the new all-gathers
//! (identity directions there) do none.

use super::{Capability, EstimateError, TaskClass, TaskFacts};
use crate::analysis::workload::{Phase, Recompute, TrainingSpec};

/// `task` as a zero-work all-gather in `phase`, id `<source>.<suffix>`.
fn gather(task: &TaskFacts, phase: Phase) -> TaskFacts {
    TaskFacts {
        id: format!("{}.{}", task.source(), phase.suffix()),
        phase,
        capability: Capability::AllGather,
        class: TaskClass::TensorParallel,
        ops: 0,
        read_bytes: 0,
        write_bytes: 0,
        message_bytes: task.message_bytes,
        shared_by: 1,
        group_size: task.group_size,
        // The linear it overlaps, in its own phase.
        tiling: task.tiling.as_ref().map(|t| super::TaskTiling {
            with: format!(
                "{}.{}",
                t.with.rsplit_once('.').map_or(t.with.as_str(), |(s, _)| s),
                crate::analysis::workload::tiled_phase(phase).suffix()
            ),
            ..t.clone()
        }),
    }
}

/// The edge block's TP tasks under `p2p_rs_ag`, derived from the base
/// block's (`tasks`, any order); other tasks are left out.
///
/// # Errors
/// A TP entry (the activation-gradient all-reduce) outside the attention
/// (`attn.*`) or MLP (`mlp.*`) half: whether it re-gathers depends on the half.
pub fn edge_tp_tasks(tasks: &[TaskFacts], spec: &TrainingSpec) -> Result<Vec<TaskFacts>, EstimateError> {
    let recompute = spec.mapping.recompute;
    let mut edge = Vec::new();
    // (The once-per-step sums of partial weight gradients are not the
    // block's TP communication: the estimate leaves them out.)
    for task in tasks.iter().filter(|t| t.class == TaskClass::TensorParallel && t.phase != Phase::Optimizer) {
        if task.capability != Capability::AllReduce {
            edge.push(task.clone());
            continue;
        }
        let split = TaskFacts { capability: Capability::ReduceScatter, ..task.clone() };
        match task.phase {
            // The exit: reduce-scatter forward, all-gather backward.
            Phase::Forward => {
                edge.push(split);
                edge.push(gather(task, Phase::ActivationGradient));
            }
            // The entry: all-gather forward, reduce-scatter backward, and
            // the all-gather again when its output is not kept.
            Phase::ActivationGradient => {
                let regather = if task.id.starts_with("attn.") {
                    matches!(recompute, Recompute::AttnOnly | Recompute::Full)
                } else if task.id.starts_with("mlp.") {
                    recompute == Recompute::Full
                } else {
                    return Err(EstimateError::Task {
                        id: task.id.clone(),
                        reason: "an edge-block TP entry must belong to the attention (attn.*) or MLP (mlp.*) half",
                    });
                };
                edge.push(gather(task, Phase::Forward));
                edge.push(split);
                if regather {
                    edge.push(gather(task, Phase::Recommunication));
                }
            }
            _ => edge.push(split),
        }
    }
    Ok(edge)
}
