//! Per-block times: every task priced alone, summed per stage as Calculon
//! sums its layers (`Llm._compute_block_stats`).
//!
//! A task is one Calculon layer in one stage. Its flop time uses the
//! matrix unit for `matrix_multiply` outside the optimizer and the vector
//! unit otherwise; its memory time uses `mem1`; both get the efficiency of
//! the task's own size. `block_*_flops_time` and `block_*_mem_time` sum
//! every task, TP collectives included (their reduction work and traffic);
//! `block_*_time` sums the compute tasks' processing; a TP collective's
//! time is its network time plus its own processing; a re-issued
//! collective (recommunication) costs only its network time (Calculon's
//! TP layer has no weight-gradient work).

use std::collections::HashSet;

use serde::Serialize;

use super::{Capability, EstimateError, TaskClass, TaskFacts};
use crate::system::{ComputeRate, MemoryTier, NetworkTier, ProcessingMode};
use crate::workload::{share, Phase, Recompute, TrainingSpec};

/// The rates the block's tasks run at.
pub(super) struct Rates<'a> {
    pub matrix: &'a ComputeRate,
    pub vector: &'a ComputeRate,
    pub memory: &'a MemoryTier,
    pub mode: ProcessingMode,
    pub tp_net: &'a NetworkTier,
    /// The strategy's TP group, for tasks that do not state theirs.
    pub tp: u64,
}

/// Calculon's per-block, per-microbatch time fields (seconds). With TP
/// overlap `none` every TP time is fully exposed, so the `*_tp_time` and
/// `*_recomm_time` fields are both the link and the exposed time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BlockTimes {
    pub block_fw_flops_time: f64,
    pub block_fw_mem_time: f64,
    pub block_fw_time: f64,
    pub baseblock_fw_tp_time: f64,
    pub edgeblock_fw_tp_time: f64,
    /// Flop time of the recomputed tasks (correct; Calculon's differs, see
    /// [`BlockTimes::calculon_re_flops_time`]).
    pub block_re_flops_time: f64,
    pub block_re_mem_time: f64,
    pub block_re_time: f64,
    /// Calculon's `block_re_flops_time`: every recomputed layer adds the
    /// running prefix sum of the forward flop times. Computed only for DP
    /// overlap (the one place Calculon reads it).
    pub calculon_re_flops_time: Option<f64>,
    /// Calculon's `block_re_mem_time`, likewise.
    pub calculon_re_mem_time: Option<f64>,
    pub baseblock_recomm_time: f64,
    pub edgeblock_recomm_time: f64,
    pub block_agrad_flops_time: f64,
    pub block_agrad_mem_time: f64,
    pub block_agrad_time: f64,
    pub baseblock_agrad_tp_time: f64,
    pub edgeblock_agrad_tp_time: f64,
    pub block_wgrad_flops_time: f64,
    pub block_wgrad_mem_time: f64,
    pub block_wgrad_time: f64,
    pub block_optim_flops_time: f64,
    pub block_optim_mem_time: f64,
    pub block_optim_time: f64,
    /// One pipeline transfer forward / backward (a p2p on the PP tier; its
    /// latency alone when there is no pipeline, as in Calculon).
    pub block_fw_pp_time: f64,
    pub block_bw_pp_time: f64,
    /// The block's DP gradient synchronisation (0 without DP).
    pub block_dp_time: f64,
}

/// Flop, memory and processing time of one task.
#[derive(Clone, Copy)]
struct Priced {
    flops: f64,
    mem: f64,
    processing: f64,
}

fn price(task: &TaskFacts, rates: &Rates) -> Priced {
    let ops = share(task.ops, task.shared_by);
    let bytes = share(task.read_bytes.saturating_add(task.write_bytes), task.shared_by);
    // Calculon runs the optimizer step on the vector unit.
    let unit = if task.capability == Capability::MatrixMultiply && task.phase != Phase::Optimizer { rates.matrix } else { rates.vector };
    let flops = unit.time(ops);
    let mem = rates.memory.time(bytes);
    Priced { flops, mem, processing: rates.mode.combine(flops, mem) }
}

/// How a task enters the sums.
enum Kind {
    Compute,
    /// A TP collective over `group` ranks.
    Collective {
        op: crate::system::NetworkOp,
        group: u64,
    },
    Skip,
}

fn kind(task: &TaskFacts, rates: &Rates) -> Result<Kind, EstimateError> {
    let fail = |reason| EstimateError::Task { id: task.id.clone(), reason };
    if matches!(task.phase, Phase::Prefill | Phase::Decode) {
        return Err(fail("inference phases have no training-step estimate"));
    }
    match task.class {
        TaskClass::Pipeline | TaskClass::DataParallel => Ok(Kind::Skip),
        TaskClass::Compute => match task.capability {
            Capability::MatrixMultiply | Capability::VectorElementwise if task.phase == Phase::Recommunication => {
                Err(fail("recommunication tasks are collectives"))
            }
            Capability::MatrixMultiply | Capability::VectorElementwise => Ok(Kind::Compute),
            _ => Err(fail("a compute task needs capability matrix_multiply or vector_elementwise")),
        },
        TaskClass::TensorParallel => {
            let op = match task.capability {
                Capability::AllReduce | Capability::ReduceScatter | Capability::AllGather => task.capability.network_op(),
                _ => None,
            };
            let Some(op) = op else {
                return Err(fail("a tensor-parallel task needs capability all_reduce, reduce_scatter or all_gather"));
            };
            if !matches!(task.phase, Phase::Forward | Phase::ActivationGradient | Phase::Recommunication) {
                return Err(fail("tensor-parallel collectives run in the forward, activation_gradient or recommunication phase"));
            }
            let group = task.group_size.unwrap_or(rates.tp);
            // Calculon: a TP layer over one peer moves and computes nothing.
            Ok(if group > 1 { Kind::Collective { op, group } } else { Kind::Skip })
        }
    }
}

/// Adds `x` to `acc` (named so the summation order reads like Calculon's).
fn add(acc: &mut f64, x: f64) {
    *acc += x;
}

/// Base-block TP sums of one task list: (forward, activation gradient,
/// recommunication) exposed times.
fn tp_sums(tasks: &[TaskFacts], rates: &Rates) -> Result<(f64, f64, f64), EstimateError> {
    let (mut fw, mut agrad, mut recomm) = (0.0, 0.0, 0.0);
    for task in tasks.iter() {
        if task.phase == Phase::ActivationGradient {
            continue;
        }
        if let Kind::Collective { op, group } = kind(task, rates)? {
            let net = rates.tp_net.time(op, task.message_bytes as f64, group);
            match task.phase {
                Phase::Forward => add(&mut fw, net + price(task, rates).processing),
                Phase::Recommunication => add(&mut recomm, net),
                _ => {}
            }
        }
    }
    // Backward tasks come in reverse model order; Calculon sums in model order.
    for task in tasks.iter().rev().filter(|t| t.phase == Phase::ActivationGradient) {
        if let Kind::Collective { op, group } = kind(task, rates)? {
            let net = rates.tp_net.time(op, task.message_bytes as f64, group);
            add(&mut agrad, net + price(task, rates).processing);
        }
    }
    Ok((fw, agrad, recomm))
}

/// The block times of `tasks`; `edge` holds the edge block's TP tasks when
/// they differ from the base block's.
pub(super) fn block_times(tasks: &[TaskFacts], edge: Option<&[TaskFacts]>, rates: &Rates) -> Result<BlockTimes, EstimateError> {
    let mut t = BlockTimes::default();
    for task in tasks {
        let kind = kind(task, rates)?;
        if matches!(kind, Kind::Skip) || matches!(task.phase, Phase::ActivationGradient | Phase::WeightGradient) {
            continue;
        }
        let priced = price(task, rates);
        let net = match kind {
            Kind::Collective { op, group } => Some(rates.tp_net.time(op, task.message_bytes as f64, group)),
            _ => None,
        };
        match task.phase {
            Phase::Forward => {
                add(&mut t.block_fw_flops_time, priced.flops);
                add(&mut t.block_fw_mem_time, priced.mem);
                match net {
                    Some(net) => add(&mut t.baseblock_fw_tp_time, net + priced.processing),
                    None => add(&mut t.block_fw_time, priced.processing),
                }
            }
            Phase::Recompute => {
                add(&mut t.block_re_flops_time, priced.flops);
                add(&mut t.block_re_mem_time, priced.mem);
                add(&mut t.block_re_time, priced.processing);
            }
            Phase::Recommunication => {
                if let Some(net) = net {
                    add(&mut t.baseblock_recomm_time, net);
                }
            }
            Phase::Optimizer => {
                add(&mut t.block_optim_flops_time, priced.flops);
                add(&mut t.block_optim_mem_time, priced.mem);
                add(&mut t.block_optim_time, priced.processing);
            }
            _ => {}
        }
    }
    // Backward tasks come in reverse model order; Calculon sums in model order.
    for task in tasks.iter().rev() {
        if !matches!(task.phase, Phase::ActivationGradient | Phase::WeightGradient) {
            continue;
        }
        let kind = kind(task, rates)?;
        if matches!(kind, Kind::Skip) {
            continue;
        }
        let priced = price(task, rates);
        match kind {
            // `kind` admits collectives only in the forward, activation
            // gradient and recommunication phases.
            Kind::Collective { op, group } => {
                add(&mut t.block_agrad_flops_time, priced.flops);
                add(&mut t.block_agrad_mem_time, priced.mem);
                add(&mut t.baseblock_agrad_tp_time, rates.tp_net.time(op, task.message_bytes as f64, group) + priced.processing);
            }
            _ if task.phase == Phase::ActivationGradient => {
                add(&mut t.block_agrad_flops_time, priced.flops);
                add(&mut t.block_agrad_mem_time, priced.mem);
                add(&mut t.block_agrad_time, priced.processing);
            }
            _ => {
                add(&mut t.block_wgrad_flops_time, priced.flops);
                add(&mut t.block_wgrad_mem_time, priced.mem);
                add(&mut t.block_wgrad_time, priced.processing);
            }
        }
    }
    (t.edgeblock_fw_tp_time, t.edgeblock_agrad_tp_time, t.edgeblock_recomm_time) = match edge {
        Some(edge) => tp_sums(edge, rates)?,
        None => (t.baseblock_fw_tp_time, t.baseblock_agrad_tp_time, t.baseblock_recomm_time),
    };
    Ok(t)
}

/// Calculon's `block_re_flops_time` and `block_re_mem_time`: walking its
/// layers in model order, each layer with the recompute flag adds the
/// running sums of the forward flop and memory times (its own included)
/// instead of its own times. The forks, which have no tasks, carry flags
/// too: the attention and MLP forks under full recompute, the Q/K/V fork
/// whenever the attention input is re-gathered (`attn_only`, `full`,
/// `seq_par_ag_redo`); a fork adds the sums up to the layer before it.
pub(super) fn calculon_recompute_prefix(tasks: &[TaskFacts], rates: &Rates, spec: &TrainingSpec) -> Result<(f64, f64), EstimateError> {
    let map = &spec.mapping;
    let full = map.recompute == Recompute::Full;
    let qkv_fork = full || map.recompute == Recompute::AttnOnly || map.seq_par_ag_redo;
    let recomputed: HashSet<&str> = tasks.iter().filter(|t| t.phase == Phase::Recompute).map(TaskFacts::source).collect();
    let (mut prefix_flops, mut prefix_mem) = (0.0, 0.0);
    let (mut re_flops, mut re_mem) = (0.0, 0.0);
    let (mut saw_qkv, mut saw_mlp) = (false, false);
    // The attention fork comes first: it adds the empty prefix.
    if full {
        add(&mut re_flops, prefix_flops);
        add(&mut re_mem, prefix_mem);
    }
    for task in tasks.iter().filter(|t| t.phase == Phase::Forward) {
        if matches!(kind(task, rates)?, Kind::Skip) {
            continue;
        }
        let fork = if task.id == "attn.q.fwd" && !saw_qkv {
            saw_qkv = true;
            qkv_fork
        } else if task.id.starts_with("mlp.") && !saw_mlp {
            saw_mlp = true;
            full
        } else {
            false
        };
        if fork {
            add(&mut re_flops, prefix_flops);
            add(&mut re_mem, prefix_mem);
        }
        let priced = price(task, rates);
        add(&mut prefix_flops, priced.flops);
        add(&mut prefix_mem, priced.mem);
        if recomputed.contains(task.source()) {
            add(&mut re_flops, prefix_flops);
            add(&mut re_mem, prefix_mem);
        }
    }
    if qkv_fork && !saw_qkv {
        return Err(EstimateError::CompatLayout("attn.q.fwd"));
    }
    if full && !saw_mlp {
        return Err(EstimateError::CompatLayout("mlp.*.fwd"));
    }
    Ok((re_flops, re_mem))
}
