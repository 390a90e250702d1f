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

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::{Capability, EstimateError, TaskClass, TaskFacts, TaskTiling};
use crate::analysis::system::{ComputeRate, MemoryTier, NetworkTier, ProcessingMode};
use crate::analysis::workload::{share, Phase, Recompute, TpOverlap, TrainingSpec};

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

/// Calculon's per-block, per-microbatch time fields (seconds). The
/// `*_tp_time` and `*_recomm_time` fields are link times (what the
/// collectives take); `*_exposed` what of them the block waits for. Without
/// tiling they are equal; a tiled linear hides part of its collective.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BlockTimes {
    pub block_fw_flops_time: f64,
    pub block_fw_mem_time: f64,
    pub block_fw_time: f64,
    pub baseblock_fw_tp_time: f64,
    pub edgeblock_fw_tp_time: f64,
    pub baseblock_fw_tp_time_exposed: f64,
    pub edgeblock_fw_tp_time_exposed: f64,
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
    pub baseblock_recomm_time_exposed: f64,
    pub edgeblock_recomm_time_exposed: f64,
    pub block_agrad_flops_time: f64,
    pub block_agrad_mem_time: f64,
    pub block_agrad_time: f64,
    pub baseblock_agrad_tp_time: f64,
    pub edgeblock_agrad_tp_time: f64,
    pub baseblock_agrad_tp_time_exposed: f64,
    pub edgeblock_agrad_tp_time_exposed: f64,
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
        op: crate::analysis::system::NetworkOp,
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
            if task.phase == Phase::Optimizer && task.capability == Capability::AllReduce {
                // The once-per-step sum of the weight gradients that are
                // partial over TP (norms under sequence parallelism,
                // replicated key/value heads): Calculon does not count it,
                // and the estimate follows Calculon (the plan states its
                // bytes).
                return Ok(Kind::Skip);
            }
            if !matches!(task.phase, Phase::Forward | Phase::ActivationGradient | Phase::Recommunication) {
                return Err(fail("tensor-parallel collectives run in the forward, activation_gradient or recommunication phase, or (an all-reduce of partial weight gradients) once per step in the optimizer phase"));
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

/// TP sums of one task list, per (forward, activation gradient,
/// recommunication): the link times of every collective, and those of the
/// collectives not tiled with a linear (what is exposed of them).
struct TpSums {
    link: [f64; 3],
    untiled: [f64; 3],
}

fn tp_slot(phase: Phase) -> Option<usize> {
    match phase {
        Phase::Forward => Some(0),
        Phase::ActivationGradient => Some(1),
        Phase::Recommunication => Some(2),
        _ => None,
    }
}

/// A TP collective's link time: its network time plus its own processing
/// (a re-issued collective: the network time only, as Calculon prices it).
fn link_time(task: &TaskFacts, op: crate::analysis::system::NetworkOp, group: u64, rates: &Rates) -> f64 {
    let net = rates.tp_net.time(op, task.message_bytes as f64, group);
    if task.phase == Phase::Recommunication {
        net
    } else {
        net + price(task, rates).processing
    }
}

fn tp_sums(tasks: &[TaskFacts], rates: &Rates) -> Result<TpSums, EstimateError> {
    let mut sums = TpSums { link: [0.0; 3], untiled: [0.0; 3] };
    let mut one = |task: &TaskFacts| -> Result<(), EstimateError> {
        if let (Kind::Collective { op, group }, Some(slot)) = (kind(task, rates)?, tp_slot(task.phase)) {
            let link = link_time(task, op, group, rates);
            add(&mut sums.link[slot], link);
            if task.tiling.is_none() {
                add(&mut sums.untiled[slot], link);
            }
        }
        Ok(())
    };
    // Backward tasks come in reverse model order; Calculon sums in model order.
    for task in tasks.iter().filter(|t| t.phase != Phase::ActivationGradient) {
        one(task)?;
    }
    for task in tasks.iter().rev().filter(|t| t.phase == Phase::ActivationGradient) {
        one(task)?;
    }
    Ok(sums)
}

/// Calculon's `LinearOverlapped.compute_processing_time`: the linear runs
/// as `tiles` pieces, each piece's transfer (`net / tiles`) against the
/// next piece's compute, slowed by the share of the processor the
/// collective uses. Returns (processing time, exposed network time).
fn tiled_processing(priced: Priced, net: f64, tiling: &TaskTiling, rates: &Rates) -> (f64, f64) {
    if net == 0.0 {
        return (priced.processing, 0.0);
    }
    let usage = rates.tp_net.processor_usage();
    let tiles = tiling.tiles as f64;
    let slowed = rates.mode.combine(priced.flops / (1.0 - usage), priced.mem);
    let (flop_tile_slowed, net_tile) = (priced.flops / (1.0 - usage) / tiles, net / tiles);
    let (compute_tile, compute_tile_slowed) = (priced.processing / tiles, slowed / tiles);
    let inflection = net_tile - flop_tile_slowed;
    let (mut time, mut exposed) = if inflection > 0.0 {
        // The transfer is longer than a piece's compute: the excess shows.
        (compute_tile + (tiles - 1.0) * compute_tile_slowed, (tiles - 1.0) * inflection)
    } else {
        // Hidden, but driving it takes a share of the processor.
        (compute_tile + (tiles - 1.0) * compute_tile + (tiles - 1.0) * net_tile * usage, 0.0)
    };
    if tiling.overlap == TpOverlap::Pipe {
        // The pipe's first transfer has nothing to hide behind (Calculon
        // adds it to both).
        exposed += net_tile;
        time += net_tile;
    }
    (time, exposed)
}

/// The block times of `tasks`; `edge` holds the edge block's TP tasks when
/// they differ from the base block's.
pub(super) fn block_times(tasks: &[TaskFacts], edge: Option<&[TaskFacts]>, rates: &Rates) -> Result<BlockTimes, EstimateError> {
    let mut t = BlockTimes::default();
    // The collectives tiled with a linear, by the linear task they overlap:
    // their link time (a re-communication: network only) and tiling.
    let mut tiled: HashMap<&str, (f64, &TaskTiling)> = HashMap::new();
    for task in tasks {
        if let (Some(tiling), Kind::Collective { op, group }) = (&task.tiling, kind(task, rates)?) {
            tiled.insert(tiling.with.as_str(), (link_time(task, op, group, rates), tiling));
        }
    }
    // A tiled linear's forward exposure, by source: what its
    // re-communication exposes (Calculon reads the forward's state).
    let mut forward_exposed: HashMap<&str, f64> = HashMap::new();
    // The tiled re-communications, by their linear's source.
    let mut tiled_recomms: Vec<&str> = Vec::new();
    // What the tiled linears expose, per (forward, activation gradient,
    // recommunication).
    let mut tiled_exposed = [0.0; 3];
    // A compute task's processing (tiled when a collective overlaps it) and
    // exposed network time; a recomputed linear overlaps as in its forward.
    let processing = |task: &TaskFacts, priced: Priced| -> (f64, f64) {
        // Untiled blocks (the common case) look nothing up.
        let found = if tiled.is_empty() {
            None
        } else if task.phase == Phase::Recompute {
            tiled.get(format!("{}.{}", task.source(), Phase::Forward.suffix()).as_str())
        } else {
            tiled.get(task.id.as_str())
        };
        match found {
            Some((net, tiling)) => tiled_processing(priced, *net, tiling, rates),
            // Not tiled, or tiled in another phase: nothing to overlap.
            None => (priced.processing, 0.0),
        }
    };
    for task in tasks {
        let kind = kind(task, rates)?;
        if matches!(kind, Kind::Skip) || matches!(task.phase, Phase::ActivationGradient | Phase::WeightGradient) {
            continue;
        }
        let priced = price(task, rates);
        if let Kind::Collective { op, group } = kind {
            let link = link_time(task, op, group, rates);
            let untiled = task.tiling.is_none();
            match task.phase {
                Phase::Forward => {
                    // A tiled collective is part of its linear, whose
                    // flops and memory time Calculon counts instead.
                    if untiled {
                        add(&mut t.block_fw_flops_time, priced.flops);
                        add(&mut t.block_fw_mem_time, priced.mem);
                        add(&mut t.baseblock_fw_tp_time_exposed, link);
                    }
                    add(&mut t.baseblock_fw_tp_time, link);
                }
                Phase::Recommunication => {
                    add(&mut t.baseblock_recomm_time, link);
                    match &task.tiling {
                        None => add(&mut t.baseblock_recomm_time_exposed, link),
                        Some(tiling) => tiled_recomms.push(tiling.with.rsplit_once('.').map_or(tiling.with.as_str(), |(s, _)| s)),
                    }
                }
                _ => {}
            }
            continue;
        }
        let (time, exposed) = processing(task, priced);
        match task.phase {
            Phase::Forward => {
                add(&mut t.block_fw_flops_time, priced.flops);
                add(&mut t.block_fw_mem_time, priced.mem);
                add(&mut t.block_fw_time, time);
                add(&mut tiled_exposed[0], exposed);
                forward_exposed.insert(task.source(), exposed);
            }
            Phase::Recompute => {
                add(&mut t.block_re_flops_time, priced.flops);
                add(&mut t.block_re_mem_time, priced.mem);
                add(&mut t.block_re_time, time);
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
                let link = link_time(task, op, group, rates);
                if task.tiling.is_none() {
                    add(&mut t.block_agrad_flops_time, priced.flops);
                    add(&mut t.block_agrad_mem_time, priced.mem);
                    add(&mut t.baseblock_agrad_tp_time_exposed, link);
                }
                add(&mut t.baseblock_agrad_tp_time, link);
            }
            _ if task.phase == Phase::ActivationGradient => {
                let (time, exposed) = processing(task, priced);
                add(&mut t.block_agrad_flops_time, priced.flops);
                add(&mut t.block_agrad_mem_time, priced.mem);
                add(&mut t.block_agrad_time, time);
                add(&mut tiled_exposed[1], exposed);
            }
            _ => {
                // A weight gradient overlaps its linear's re-communication;
                // Calculon keeps no exposed time of it.
                let (time, _) = processing(task, priced);
                add(&mut t.block_wgrad_flops_time, priced.flops);
                add(&mut t.block_wgrad_mem_time, priced.mem);
                add(&mut t.block_wgrad_time, time);
            }
        }
    }
    // A tiled re-communication exposes what its linear's forward did
    // (Calculon reads the state its forward left).
    for source in tiled_recomms {
        add(&mut tiled_exposed[2], forward_exposed.get(source).copied().unwrap_or(0.0));
    }
    add(&mut t.baseblock_fw_tp_time_exposed, tiled_exposed[0]);
    add(&mut t.baseblock_agrad_tp_time_exposed, tiled_exposed[1]);
    add(&mut t.baseblock_recomm_time_exposed, tiled_exposed[2]);
    match edge {
        Some(edge) => {
            // Calculon prices a tiled linear once, as a base block: the
            // edge block's exposure is the base block's tiled exposure plus
            // its own untiled collectives.
            let edge = tp_sums(edge, rates)?;
            (t.edgeblock_fw_tp_time, t.edgeblock_agrad_tp_time, t.edgeblock_recomm_time) = (edge.link[0], edge.link[1], edge.link[2]);
            t.edgeblock_fw_tp_time_exposed = edge.untiled[0] + tiled_exposed[0];
            t.edgeblock_agrad_tp_time_exposed = edge.untiled[1] + tiled_exposed[1];
            t.edgeblock_recomm_time_exposed = edge.untiled[2] + tiled_exposed[2];
        }
        None => {
            (t.edgeblock_fw_tp_time, t.edgeblock_agrad_tp_time, t.edgeblock_recomm_time) =
                (t.baseblock_fw_tp_time, t.baseblock_agrad_tp_time, t.baseblock_recomm_time);
            (t.edgeblock_fw_tp_time_exposed, t.edgeblock_agrad_tp_time_exposed, t.edgeblock_recomm_time_exposed) =
                (t.baseblock_fw_tp_time_exposed, t.baseblock_agrad_tp_time_exposed, t.baseblock_recomm_time_exposed);
        }
    }
    Ok(t)
}

/// Calculon's `block_re_flops_time` and `block_re_mem_time`: walking its
/// layers in model order, each layer with the recompute flag adds the
/// running sums of the forward flop and memory times (its own included)
/// instead of its own times. The forks, which have no tasks, carry flags
/// too: the attention and MLP forks under full recompute, the Q/K/V fork
/// whenever the attention input is re-gathered (`attn_only`, `full`,
/// `seq_par_ag_redo`) and the block is not tiled (tiled, the K/V fork of
/// multi-query attention, after the tiled queries); a fork adds the sums up
/// to the layer before it.
pub(super) fn calculon_recompute_prefix(tasks: &[TaskFacts], rates: &Rates, spec: &TrainingSpec) -> Result<(f64, f64), EstimateError> {
    calculon_recompute_sums(tasks, rates, spec).map(|r| (r.flops_time, r.mem_time))
}

/// Calculon's four recompute prefix sums (`block_re_flops`,
/// `block_re_mem_accessed`, `block_re_flops_time`, `block_re_mem_time`),
/// all with its defect (see [`calculon_recompute_prefix`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct RecomputeSums {
    pub flops: f64,
    pub mem_accessed: f64,
    pub flops_time: f64,
    pub mem_time: f64,
}

pub(super) fn calculon_recompute_sums(tasks: &[TaskFacts], rates: &Rates, spec: &TrainingSpec) -> Result<RecomputeSums, EstimateError> {
    let map = &spec.mapping;
    let full = map.recompute == Recompute::Full;
    // Tiled, Calculon fuses Q, K and V into one linear: there is no fork,
    // but under multi-query attention (replicated, untiled K and V) the
    // queries alone are tiled and K and V read a fork after them.
    let tiled = tasks.iter().any(|t| t.tiling.is_some());
    let replicated_kv = tiled && tasks.iter().any(|t| t.id == "attn.k.fwd");
    let fork_before = if tiled { "attn.k.fwd" } else { "attn.q.fwd" };
    let qkv_fork = (!tiled || replicated_kv) && (full || map.recompute == Recompute::AttnOnly || map.seq_par_ag_redo);
    let recomputed: HashSet<&str> = tasks.iter().filter(|t| t.phase == Phase::Recompute).map(TaskFacts::source).collect();
    let (mut prefix_flops, mut prefix_mem) = (0.0, 0.0);
    let (mut re_flops, mut re_mem) = (0.0, 0.0);
    // The same sums of the work itself (operations and bytes).
    let (mut prefix_ops, mut prefix_bytes) = (0.0, 0.0);
    let (mut re_ops, mut re_bytes) = (0.0, 0.0);
    let (mut saw_qkv, mut saw_mlp) = (false, false);
    // The attention fork comes first: it adds the empty prefix (0).
    // A tiled collective is part of its linear, not a layer of its own.
    for task in tasks.iter().filter(|t| t.phase == Phase::Forward && t.tiling.is_none()) {
        if matches!(kind(task, rates)?, Kind::Skip) {
            continue;
        }
        let fork = if task.id == fork_before && !saw_qkv {
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
            add(&mut re_ops, prefix_ops);
            add(&mut re_bytes, prefix_bytes);
        }
        let priced = price(task, rates);
        add(&mut prefix_flops, priced.flops);
        add(&mut prefix_mem, priced.mem);
        add(&mut prefix_ops, share(task.ops, task.shared_by));
        add(&mut prefix_bytes, share(task.read_bytes.saturating_add(task.write_bytes), task.shared_by));
        if recomputed.contains(task.source()) {
            add(&mut re_flops, prefix_flops);
            add(&mut re_mem, prefix_mem);
            add(&mut re_ops, prefix_ops);
            add(&mut re_bytes, prefix_bytes);
        }
    }
    if qkv_fork && !saw_qkv {
        return Err(EstimateError::CompatLayout(fork_before));
    }
    if full && !saw_mlp {
        return Err(EstimateError::CompatLayout("mlp.*.fwd"));
    }
    Ok(RecomputeSums { flops: re_ops, mem_accessed: re_bytes, flops_time: re_flops, mem_time: re_mem })
}

/// Calculon's `tp_bw_overlap_req`: the largest TP bandwidth a tiled linear
/// needs to hide one tile's transfer behind one (slowed) tile of its
/// compute, over the forward and activation-gradient collectives of the
/// base block (`tasks`) and the edge block (`edge`); 0 without tiling.
pub(super) fn tp_bw_overlap_req(tasks: &[TaskFacts], edge: Option<&[TaskFacts]>, rates: &Rates) -> f64 {
    let by_id: HashMap<&str, &TaskFacts> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let usage = rates.tp_net.processor_usage();
    let mut req: f64 = 0.0;
    for task in tasks.iter().chain(edge.unwrap_or(&[])) {
        let Some(tiling) = &task.tiling else { continue };
        if !matches!(task.phase, Phase::Forward | Phase::ActivationGradient) {
            continue;
        }
        let Some(linear) = by_id.get(tiling.with.as_str()) else { continue };
        let tiles = tiling.tiles as f64;
        let flop_tile_slowed = price(linear, rates).flops / (1.0 - usage) / tiles;
        req = req.max(task.message_bytes as f64 / tiles / flop_tile_slowed);
    }
    req
}
