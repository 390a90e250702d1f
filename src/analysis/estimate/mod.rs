//! Closed-form estimate of one training step, Calculon-exact.
//!
//! Input is what a portable plan states per task of the representative
//! block (one block, one microbatch): [`TaskFacts`]. The MLIR path reads
//! them from plan tasks; the search path converts the algebra's
//! invocations ([`block_tasks`]). Both call [`estimate`] with the block
//! facts, the spec, a [`SystemProfile`] and a [`NetworkBinding`]; the
//! strategy search (`crate::analysis::search`) calls its two halves,
//! [`price_block`] once per block and TP tier and [`compose_estimate`] per
//! configuration, which is the same computation.
//!
//! ```text
//! tasks ──layer_time──> BlockTimes (per-layer times summed as Calculon sums layers)
//!        (edge block: edge::edge_tp_tasks under p2p_rs_ag)
//! BlockTimes + spec ──step──> TimingSeconds, stage busy/idle, DP overlap
//! BlockFacts + spec ──schedule::ProcessorMemory::calculon──> memory check
//! ```
//!
//! Conventions are Calculon's (calculon-ai/calculon @ caa4b11,
//! `calculon/llm/llm.py`, `layers.py`), see
//! `test/oracles/calculon/FULL-MODEL.md`: every task is one Calculon
//! layer in one stage, priced alone (efficiency by its own size); a TP
//! collective's exposed time is its network time plus its own processing;
//! a re-issued collective costs only network time; every stage is taken as
//! equal. Where Calculon is wrong (the recompute prefix sum that only its
//! DP-overlap path reads) the estimate is correct and reports Calculon's
//! figure beside it ([`DpOverlapFigures`]).

pub mod calculon_stats;
pub mod edge;
mod layer_time;
pub mod serving;
pub mod step;
#[cfg(test)]
pub(crate) mod tests;

use serde::Serialize;
use thiserror::Error;

use crate::analysis::schedule::ProcessorMemory;
use crate::analysis::system::{datatype_name, NetworkBinding, NetworkBindingError, NetworkOp, SystemProfile};
pub use crate::analysis::workload::TpOverlap;
use crate::analysis::workload::{
    BlockDerivation, BlockFacts, CollectiveKind, Datatype, Engine, Phase, PrimitiveInvocation, SpecError, TrainingSpec,
};

pub use crate::analysis::schedule::Offload;
pub use layer_time::BlockTimes;

/// What a task needs of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    MatrixMultiply,
    VectorElementwise,
    AllReduce,
    ReduceScatter,
    AllGather,
    PointToPoint,
}

impl Capability {
    /// The plan's spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::MatrixMultiply => "matrix_multiply",
            Self::VectorElementwise => "vector_elementwise",
            Self::AllReduce => "all_reduce",
            Self::ReduceScatter => "reduce_scatter",
            Self::AllGather => "all_gather",
            Self::PointToPoint => "point_to_point",
        }
    }

    /// Reads the plan's capability or the dist layer's engine name
    /// (`matrix`, `vector`).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "matrix_multiply" | "matrix" => Some(Self::MatrixMultiply),
            "vector_elementwise" | "vector" => Some(Self::VectorElementwise),
            "all_reduce" => Some(Self::AllReduce),
            "reduce_scatter" => Some(Self::ReduceScatter),
            "all_gather" => Some(Self::AllGather),
            "point_to_point" | "p2p" => Some(Self::PointToPoint),
            _ => None,
        }
    }

    /// The network op of a communication capability.
    #[must_use]
    pub const fn network_op(self) -> Option<NetworkOp> {
        match self {
            Self::AllReduce => Some(NetworkOp::AllReduce),
            Self::ReduceScatter => Some(NetworkOp::ReduceScatter),
            Self::AllGather => Some(NetworkOp::AllGather),
            Self::PointToPoint => Some(NetworkOp::P2p),
            Self::MatrixMultiply | Self::VectorElementwise => None,
        }
    }
}

impl From<CollectiveKind> for Capability {
    fn from(kind: CollectiveKind) -> Self {
        match kind {
            CollectiveKind::AllReduce => Self::AllReduce,
            CollectiveKind::ReduceScatter => Self::ReduceScatter,
            CollectiveKind::AllGather => Self::AllGather,
        }
    }
}

/// What a task contributes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskClass {
    Compute,
    /// The block's own tensor-parallel collectives.
    TensorParallel,
    /// Transfers between stages (priced from the block facts instead).
    Pipeline,
    /// Gradient synchronisation (priced from the block facts instead).
    DataParallel,
}

/// The phase names plans use.
#[must_use]
pub fn phase_from_name(name: &str) -> Option<Phase> {
    match name {
        "forward" => Some(Phase::Forward),
        "recompute" => Some(Phase::Recompute),
        "activation_gradient" => Some(Phase::ActivationGradient),
        "weight_gradient" => Some(Phase::WeightGradient),
        "optimizer" => Some(Phase::Optimizer),
        "recommunication" => Some(Phase::Recommunication),
        "prefill" => Some(Phase::Prefill),
        "decode" => Some(Phase::Decode),
        _ => None,
    }
}

/// One task of the representative block, as a plan states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskFacts {
    /// Base id `<source>.<phase suffix>`, e.g. `attn.q.fwd`.
    pub id: String,
    pub phase: Phase,
    pub capability: Capability,
    pub class: TaskClass,
    /// Operations of the task (the group's total when `shared_by > 1`).
    pub ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Logical message bytes of a collective (0 for compute).
    pub message_bytes: u64,
    /// Ranks that split the work evenly (1 when unshared).
    pub shared_by: u64,
    /// Ranks of the collective's group when the task states them; else the
    /// strategy's group for the task's class (TP for the block's collectives).
    pub group_size: Option<u64>,
    /// A TP collective tiled with a linear.
    pub tiling: Option<TaskTiling>,
}

/// How a collective task is tiled with a linear (the plan's `tiled_with`,
/// `tiles`, `overlap`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskTiling {
    /// Base id of the linear's task it overlaps (its weight gradient for a
    /// re-communication), e.g. `attn.proj.fwd`.
    pub with: String,
    pub tiles: u64,
    pub overlap: TpOverlap,
}

impl TaskFacts {
    /// The model-level source of the task: its id without the phase suffix.
    #[must_use]
    pub fn source(&self) -> &str {
        self.id.rsplit_once('.').map_or(self.id.as_str(), |(source, _)| source)
    }
}

impl From<&PrimitiveInvocation> for TaskFacts {
    fn from(inv: &PrimitiveInvocation) -> Self {
        let (capability, class) = match (inv.collective, inv.engine) {
            (Some(c), _) => (Capability::from(c.kind), TaskClass::TensorParallel),
            (None, Engine::Matrix) => (Capability::MatrixMultiply, TaskClass::Compute),
            (None, Engine::Vector | Engine::Collective) => (Capability::VectorElementwise, TaskClass::Compute),
        };
        Self {
            id: inv.name.clone(),
            phase: inv.phase,
            capability,
            class,
            ops: inv.ops,
            read_bytes: inv.read_bytes,
            write_bytes: inv.write_bytes,
            message_bytes: inv.message_bytes(),
            shared_by: inv.shared_by,
            group_size: None,
            tiling: inv.tiling.as_ref().map(|t| TaskTiling { with: t.linear_task(inv.phase), tiles: t.tiles, overlap: t.overlap }),
        }
    }
}

/// The tasks of a derived block, in the derivation's order.
#[must_use]
pub fn block_tasks(derivation: &BlockDerivation) -> Vec<TaskFacts> {
    derivation.invocations.iter().map(TaskFacts::from).collect()
}

/// Estimate inputs beyond the plan: they never change a plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub struct EstimateOptions {
    /// Overlap the DP gradient communication with the backward pass (no
    /// effect without DP: there is nothing to synchronise).
    pub data_par_overlap: bool,
    /// Report Calculon's DP-overlap figure (with its recompute prefix-sum
    /// defect) in `timing_seconds` instead of the correct one. Both are in
    /// [`Estimate::dp_overlap`] either way.
    pub calculon_compat_dp_overlap: bool,
    /// Calculon's inference step (`training = false`): the step's forward
    /// pass alone, every microbatch through every stage, with no gradients,
    /// optimizer step, recompute or DP synchronisation; memory is the
    /// weights and one block's working activations. The forward tasks and
    /// the pipeline shape are the plan's, so it is an estimate of part of
    /// the planned program, not a different plan.
    pub forward_only: bool,
    /// Calculon's offload to the system's second memory tier (`mem2`).
    pub offload: Offload,
}

impl EstimateOptions {
    /// What a Calculon execution file asks of the estimate: its DP overlap,
    /// its inference step (`training = false`) and its offload.
    #[must_use]
    pub const fn of_calculon(run: &crate::analysis::workload::CalculonRun) -> Self {
        Self {
            data_par_overlap: run.data_par_overlap,
            calculon_compat_dp_overlap: false,
            forward_only: !run.training,
            offload: Offload { weights: run.weight_offload, activations: run.activations_offload, optimizer: run.optimizer_offload },
        }
    }
}

/// The network tiers a Calculon execution file binds TP, PP and DP to.
#[must_use]
pub const fn calculon_binding(run: &crate::analysis::workload::CalculonRun) -> NetworkBinding {
    NetworkBinding { tp: run.tp_net, pp: run.pp_net, dp: run.dp_net }
}

/// Calculon's ten time fields of one step, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TimingSeconds {
    pub fw_time: f64,
    pub bw_time: f64,
    pub optim_step_time: f64,
    pub recompute_time: f64,
    pub recomm_exposed_time: f64,
    pub bubble_time: f64,
    pub tp_comm_exposed_time: f64,
    pub pp_comm_exposed_time: f64,
    pub dp_comm_exposed_time: f64,
    pub total_time: f64,
}

impl TimingSeconds {
    /// Every field with its oracle name, in Calculon's order.
    #[must_use]
    pub fn fields(&self) -> [(&'static str, f64); 10] {
        [
            ("fw_time", self.fw_time),
            ("bw_time", self.bw_time),
            ("optim_step_time", self.optim_step_time),
            ("recompute_time", self.recompute_time),
            ("recomm_exposed_time", self.recomm_exposed_time),
            ("bubble_time", self.bubble_time),
            ("tp_comm_exposed_time", self.tp_comm_exposed_time),
            ("pp_comm_exposed_time", self.pp_comm_exposed_time),
            ("dp_comm_exposed_time", self.dp_comm_exposed_time),
            ("total_time", self.total_time),
        ]
    }
}

/// One stage's time in the step: working (compute and exposed
/// communication) and idle in the pipeline bubble.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StageTime {
    pub busy: f64,
    pub idle: f64,
}

/// The DP-overlap exposed time both ways.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DpOverlapFigures {
    /// With the recompute flop and memory times of the recomputed layers.
    pub blueprint: f64,
    /// Calculon's: each recomputed layer adds the running prefix sum of the
    /// forward times, so recompute inflates compute and memory time. `None`
    /// when the tasks lack Calculon's layer layout (the algebra's ids).
    pub calculon: Option<f64>,
}

/// Memory per processor against the first memory tier.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryCheck {
    /// Calculon's convention: stage 0, its in-flight factor.
    pub per_processor: ProcessorMemory,
    /// `mem1` capacity, bytes.
    pub capacity_bytes: f64,
    pub fits: bool,
    /// How far the requirement exceeds the capacity (0 when it fits).
    pub over_by_bytes: f64,
    /// What is offloaded to the second tier (0 without offload), and that
    /// tier's capacity.
    pub proc_mem_tier2_cap_req: f64,
    pub tier2_capacity_bytes: f64,
}

/// The estimate of one training step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    pub timing_seconds: TimingSeconds,
    /// `global_batch / total_time`, what a strategy search ranks by.
    pub sample_rate: f64,
    /// Per-block times (Calculon's `block_*` and `*block_*_tp_time` fields).
    pub block: BlockTimes,
    /// Every stage's time; stages are equal in the closed form.
    pub stage: StageTime,
    /// Number of pipeline stages the `stage` figure holds for.
    pub stages: u64,
    /// Present under DP overlap with DP > 1.
    pub dp_overlap: Option<DpOverlapFigures>,
    pub memory: MemoryCheck,
    /// Calculon's other step statistics (link times, offload overheads,
    /// overlap bandwidths).
    #[serde(skip)]
    pub extras: step::StepExtras,
}

impl Estimate {
    /// The time of stage `index`, `None` beyond the pipeline.
    #[must_use]
    pub fn stage_time(&self, index: u64) -> Option<StageTime> {
        (index < self.stages).then_some(self.stage)
    }
}

/// Why an estimate cannot be computed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum EstimateError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Binding(#[from] NetworkBindingError),
    #[error("the system states no {unit} throughput for the workload's datatype ({unit}.{datatype} is missing)")]
    MissingDatatype { unit: &'static str, datatype: &'static str },
    #[error("task '{id}': {reason}")]
    Task { id: String, reason: &'static str },
    #[error(
        "calculon_compat_dp_overlap: Calculon's DP-overlap figure follows its layer order, which needs the forward task '{0}'; the block has none"
    )]
    CompatLayout(&'static str),
    /// A forward-only (inference) estimate of a strategy that only makes
    /// sense in training (Calculon asserts the same).
    #[error("a forward-only (inference) step {0}")]
    ForwardOnly(&'static str),
    /// Offload the strategy cannot have.
    #[error("offload {0}")]
    Offload(&'static str),
    /// A derived time, rate or capacity that is not a finite number (or a
    /// step of no time): never reported, since it would print as `null`
    /// or compare as fitting.
    #[error("{figure} is {value}, not a finite {what}: it derives from the system's {sources}; check those fields")]
    NotFinite { figure: String, value: f64, what: &'static str, sources: String },
}

/// Estimates one training step of `spec` from its representative block.
///
/// `tasks` are the block's tasks (one block, one microbatch) in the
/// algebra's order: forward in model order, the backward phases in reverse
/// model order (only rounding depends on it); `block` gives the pipeline
/// message sizes, the weight bytes the DP group synchronises and the
/// memory. Pipeline and data-parallel tasks in `tasks` are ignored (their
/// sizes come from `block`).
///
/// # Errors
/// An invalid spec, a binding that does not fit the system, a datatype the
/// system does not rate, a task whose capability does not fit its class or
/// phase, or, in compat mode, a block
/// without Calculon's layer layout.
pub fn estimate(
    tasks: &[TaskFacts],
    block: &BlockFacts,
    spec: &TrainingSpec,
    system: &SystemProfile,
    binding: &NetworkBinding,
    options: &EstimateOptions,
) -> Result<Estimate, EstimateError> {
    spec.validate()?;
    let map = &spec.mapping;
    binding.validate(system, map.tp, map.pp, map.dp)?;
    check_forward_only(spec, options)?;
    let times = price_block(tasks, spec, system, binding.tp, options)?;
    compose_estimate(&times, block, spec, system, binding, options)
}

/// A forward-only step recomputes nothing and has no DP gradients to
/// overlap (Calculon asserts both for `training = false`).
///
/// # Errors
/// [`EstimateError::ForwardOnly`] naming the training-only choice.
pub fn check_forward_only(spec: &TrainingSpec, options: &EstimateOptions) -> Result<(), EstimateError> {
    if options.offload.any() && spec.blocks_per_rank() < 3 {
        // Calculon: "Offloading requires each processor to handle at least 3 blocks".
        return Err(EstimateError::Offload("needs at least 3 blocks per processor (one in use, one in flight each way)"));
    }
    if !options.forward_only {
        return Ok(());
    }
    if options.offload.optimizer {
        return Err(EstimateError::ForwardOnly("has no optimizer state to offload: drop the optimizer offload"));
    }
    if spec.mapping.recompute != crate::analysis::workload::Recompute::None {
        return Err(EstimateError::ForwardOnly("recomputes nothing: mapping.recompute must be none"));
    }
    if options.data_par_overlap {
        return Err(EstimateError::ForwardOnly("has no DP gradients to overlap: drop the DP overlap"));
    }
    Ok(())
}

/// The block's per-block times: every task of `tasks` priced on `system`
/// with the TP group on tier `tp_net` — the part of [`estimate`] that does
/// not depend on the pipeline interleaving, the PP and DP tiers or the DP
/// overlap. Calculon's recompute prefix times are computed when
/// `options.data_par_overlap` and DP > 1 (the only place they are read).
/// A search prices a block once and composes it many times with
/// [`compose_estimate`]; [`estimate`] is exactly the two in sequence.
///
/// `spec` must be valid ([`TrainingSpec::validate`]).
///
/// # Errors
/// A TP tier that does not exist, a
/// datatype the system does not rate, a task whose capability does not fit
/// its class or phase, or, in compat mode, a block without Calculon's layer
/// layout.
pub fn price_block(
    tasks: &[TaskFacts],
    spec: &TrainingSpec,
    system: &SystemProfile,
    tp_net: usize,
    options: &EstimateOptions,
) -> Result<BlockTimes, EstimateError> {
    let map = &spec.mapping;
    let rates = rates_of(spec, system, tp_net)?;
    let (tasks, edge) = step_tasks(tasks, spec, options)?;
    let tasks = &tasks[..];
    let mut times = layer_time::block_times(tasks, edge.as_deref(), &rates)?;
    // Calculon's defective recompute times matter only under DP overlap;
    // they need its layer layout, required only for the compatible figure.
    if options.data_par_overlap && map.dp > 1 && !options.forward_only {
        match layer_time::calculon_recompute_prefix(tasks, &rates, spec) {
            Ok((flops, mem)) => (times.calculon_re_flops_time, times.calculon_re_mem_time) = (Some(flops), Some(mem)),
            Err(error) if options.calculon_compat_dp_overlap => return Err(error),
            Err(_) => {}
        }
    }
    Ok(times)
}

/// The rates of `spec`'s datatype on `system`, TP on tier `tp_net`.
fn rates_of<'s>(spec: &TrainingSpec, system: &'s SystemProfile, tp_net: usize) -> Result<layer_time::Rates<'s>, EstimateError> {
    rates_for(spec.workload.datatype, spec.mapping.tp, system, tp_net)
}

/// The rates of `datatype` on `system`, a TP group of `tp` on tier `tp_net`
/// (training steps and served passes alike).
fn rates_for(datatype: Datatype, tp: u64, system: &SystemProfile, tp_net: usize) -> Result<layer_time::Rates<'_>, EstimateError> {
    let missing = |unit| EstimateError::MissingDatatype { unit, datatype: datatype_name(datatype) };
    let tp_tier =
        system.network(tp_net).ok_or(NetworkBindingError::TierOutOfRange { axis: "tp", tier: tp_net, tiers: system.networks().len() })?;
    Ok(layer_time::Rates {
        matrix: system.matrix().rate(datatype).ok_or_else(|| missing("matrix"))?,
        vector: system.vector().rate(datatype).ok_or_else(|| missing("vector"))?,
        memory: system.mem1(),
        mode: system.processing_mode(),
        tp_net: tp_tier,
        tp,
    })
}

/// The tasks the step prices and the edge block's TP tasks (under
/// `p2p_rs_ag` with TP > 1): all of them, or, forward only, the forward
/// ones (the edge block's derived from the whole block's first, since its
/// forward all-gather comes from an entry's backward all-reduce).
/// The step's tasks (borrowed when all of them) and the edge block's TP
/// tasks, if it has its own.
type StepTasks<'t> = (std::borrow::Cow<'t, [TaskFacts]>, Option<Vec<TaskFacts>>);

fn step_tasks<'t>(tasks: &'t [TaskFacts], spec: &TrainingSpec, options: &EstimateOptions) -> Result<StepTasks<'t>, EstimateError> {
    let map = &spec.mapping;
    let mut edge = if map.tp_comm == crate::analysis::workload::TpComm::P2pRsAg && map.tp > 1 {
        Some(edge::edge_tp_tasks(tasks, spec)?)
    } else {
        None
    };
    if !options.forward_only {
        return Ok((std::borrow::Cow::Borrowed(tasks), edge));
    }
    if let Some(edge) = edge.as_mut() {
        edge.retain(|t| t.phase == Phase::Forward);
    }
    Ok((std::borrow::Cow::Owned(tasks.iter().filter(|t| t.phase == Phase::Forward).cloned().collect()), edge))
}

/// One step of `spec` from its priced block ([`price_block`] with the same
/// TP tier and options): the pipeline and DP composition and the memory
/// check against the first memory tier.
///
/// `spec` must be valid and `binding` must fit the system
/// ([`NetworkBinding::validate`]); `times` must not carry Calculon's
/// recompute prefix times without DP overlap (as [`price_block`] leaves them).
///
/// # Errors
/// A PP or DP tier that does not exist.
pub fn compose_estimate(
    times: &BlockTimes,
    block: &BlockFacts,
    spec: &TrainingSpec,
    system: &SystemProfile,
    binding: &NetworkBinding,
    options: &EstimateOptions,
) -> Result<Estimate, EstimateError> {
    let plain = if options.forward_only {
        ProcessorMemory::forward_only(block, spec.blocks_per_rank())
    } else {
        ProcessorMemory::calculon(block, spec)
    };
    compose_estimate_with_memory(times, block, spec, system, binding, options, &plain)
}

/// [`compose_estimate`] with the memory before offload given (a search
/// computes it once per interleaving): `plain` must be
/// [`ProcessorMemory::calculon`] of `block` and `spec`, or
/// [`ProcessorMemory::forward_only`] forward only.
///
/// # Errors
/// As [`compose_estimate`].
pub fn compose_estimate_with_memory(
    times: &BlockTimes,
    block: &BlockFacts,
    spec: &TrainingSpec,
    system: &SystemProfile,
    binding: &NetworkBinding,
    options: &EstimateOptions,
    plain: &ProcessorMemory,
) -> Result<Estimate, EstimateError> {
    check_forward_only(spec, options)?;
    let map = &spec.mapping;
    let tier =
        |axis, tier: usize| system.network(tier).ok_or(NetworkBindingError::TierOutOfRange { axis, tier, tiers: system.networks().len() });
    let tiers = step::Tiers { pp: tier("pp", binding.pp)?, dp: tier("dp", binding.dp)?, mem2: system.mem2() };
    let outcome = step::compose(times, block, spec, &tiers, binding, options);

    let (per_processor, tier2) = plain.offloaded(block, spec, options.offload, !options.forward_only);
    let capacity_bytes = system.mem1().capacity_bytes();
    let tier2_capacity_bytes = system.mem2().capacity_bytes();
    let required = per_processor.proc_mem_tier1_cap_req;
    // Calculon rejects a requirement above either tier's capacity.
    let fits = required <= capacity_bytes && tier2 <= tier2_capacity_bytes;
    let memory = MemoryCheck {
        per_processor,
        capacity_bytes,
        fits,
        over_by_bytes: if required <= capacity_bytes { 0.0 } else { required - capacity_bytes },
        proc_mem_tier2_cap_req: tier2,
        tier2_capacity_bytes,
    };

    let estimate = Estimate {
        sample_rate: spec.workload.global_batch as f64 / outcome.timing.total_time,
        timing_seconds: outcome.timing,
        block: outcome.block,
        stage: outcome.stage,
        stages: map.pp,
        dp_overlap: outcome.dp_overlap,
        memory,
        extras: outcome.extras,
    };
    check_finite(&estimate, spec, binding)?;
    Ok(estimate)
}

/// Every figure of `estimate` a report prints or a search ranks by is
/// finite (and the step takes time); else the first that is not, with the
/// system fields it derives from. A validated system file keeps them
/// finite ([`crate::analysis::system::bounds`]); this is the guarantee.
fn check_finite(estimate: &Estimate, spec: &TrainingSpec, binding: &NetworkBinding) -> Result<(), EstimateError> {
    let datatype = datatype_name(spec.workload.datatype);
    let compute = || format!("matrix.{datatype}, vector.{datatype} and mem1");
    let network = |axis: &str, tier: usize| format!("networks[{tier}] (the {axis} tier), matrix.{datatype}, vector.{datatype} and mem1");
    let everything = || {
        format!(
            "matrix.{datatype}, vector.{datatype}, mem1 and networks[{}], networks[{}], networks[{}] (TP, PP, DP)",
            binding.tp, binding.pp, binding.dp
        )
    };
    let fail =
        |figure: &str, value, what, sources: String| Err(EstimateError::NotFinite { figure: figure.to_owned(), value, what, sources });
    for (name, value) in estimate.timing_seconds.fields() {
        if value.is_finite() && value >= 0.0 {
            continue;
        }
        let sources = match name {
            "tp_comm_exposed_time" | "recomm_exposed_time" => network("TP", binding.tp),
            "pp_comm_exposed_time" => network("PP", binding.pp),
            "dp_comm_exposed_time" => network("DP", binding.dp),
            "total_time" => everything(),
            _ => compute(),
        };
        return fail(&format!("timing_seconds.{name}"), value, "time", sources);
    }
    let t = &estimate.timing_seconds;
    if t.total_time <= 0.0 || !estimate.sample_rate.is_finite() {
        return fail("sample_rate", estimate.sample_rate, "rate (the step takes no time)", everything());
    }
    for (figure, value) in [("stage busy_seconds", estimate.stage.busy), ("stage idle_seconds", estimate.stage.idle)] {
        if !value.is_finite() {
            return fail(figure, value, "time", everything());
        }
    }
    if let Some(f) = &estimate.dp_overlap {
        for value in [Some(f.blueprint), f.calculon].into_iter().flatten() {
            if !value.is_finite() {
                return fail("dp_overlap", value, "time", network("DP", binding.dp));
            }
        }
    }
    let capacity = estimate.memory.capacity_bytes;
    if !capacity.is_finite() {
        return fail("capacity_bytes", capacity, "capacity", "mem1.GiB".into());
    }
    Ok(())
}

/// Derives the block of `spec` with the algebra and estimates it (the
/// search path).
///
/// # Errors
/// As [`estimate`]; an invalid spec fails in the derivation.
pub fn estimate_spec(
    spec: &TrainingSpec,
    system: &SystemProfile,
    binding: &NetworkBinding,
    options: &EstimateOptions,
) -> Result<Estimate, EstimateError> {
    let derivation = crate::analysis::workload::derive_training_block(spec)?;
    let block = BlockFacts::from_derivation(&derivation, spec);
    estimate(&block_tasks(&derivation), &block, spec, system, binding, options)
}
