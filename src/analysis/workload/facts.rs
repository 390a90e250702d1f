//! Per-block facts: Calculon's block statistics recomputed from invocations.
//!
//! Phase mapping (Calculon stage → [`Phase`]): `fw` → `Forward`, `agrad` →
//! `ActivationGradient`, `wgrad` → `WeightGradient`, `optim` → `Optimizer`;
//! TP message sizes are the collective message bytes of `Forward`
//! (`baseblock_fw_tp_size`), `ActivationGradient` (`baseblock_bw_tp_size`)
//! and `Recommunication` (`baseblock_recomm_size`). `Recompute` work is not
//! part of any oracle field (Calculon's `block_re_*` are wrong upstream).
//! Pipeline and data-parallel sizes are transfers between blocks / replicas,
//! outside the one-block derivation, so they come from the spec and memory.

use serde::{Deserialize, Serialize};

use super::invocation::{share, BlockDerivation, BlockMemory, CollectiveKind, Phase, PrimitiveInvocation};
use super::spec::TrainingSpec;

/// Relative tolerance for the per-rank shares of sharded state and work,
/// which are quotients (Calculon computes them in floating point).
pub const SHARE_TOLERANCE: f64 = 1e-9;

/// Calculon's per-block, per-microbatch, per-rank quantities; field names
/// are the oracle's `block` keys. Everything is an exact integer except the
/// optimizer work and the sharded gradient and optimizer state, which are a
/// rank's share (`total / dp` under optimizer sharding) and need not be
/// whole numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockFacts {
    pub block_fw_flops: u64,
    pub block_agrad_flops: u64,
    pub block_wgrad_flops: u64,
    pub block_optim_flops: f64,
    pub block_fw_mem_accessed: u64,
    pub block_agrad_mem_accessed: u64,
    pub block_wgrad_mem_accessed: u64,
    pub block_optim_mem_accessed: f64,
    pub baseblock_fw_tp_size: u64,
    pub baseblock_bw_tp_size: u64,
    pub baseblock_recomm_size: u64,
    pub block_fw_pp_size: u64,
    pub block_bw_pp_size: u64,
    pub block_dp_size: u64,
    pub block_weight_space: u64,
    pub block_act_working_space: u64,
    pub block_act_storage_space: u64,
    pub block_act_checkpoint_size: u64,
    pub block_weight_grad_space: f64,
    pub block_weight_grad_space_no_sharding: u64,
    pub block_act_grad_space: u64,
    pub block_optimizer_space: f64,
    /// Every op's input activations (Calculon's activation storage of an
    /// inference step, which subtracts nothing); not one of the oracle's
    /// fields, and `None` where the source states none (a plan's facts).
    #[serde(skip)]
    pub block_act_all_space: Option<u64>,
}

/// One fact: an exact count, or a share that may be fractional.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FactValue {
    Count(u64),
    Share(f64),
}

impl FactValue {
    #[must_use]
    pub fn as_f64(self) -> f64 {
        match self {
            Self::Count(v) => v as f64,
            Self::Share(v) => v,
        }
    }

    /// Counts must be equal; shares agree to [`SHARE_TOLERANCE`].
    #[must_use]
    pub fn agrees_with(self, other: Self) -> bool {
        match (self, other) {
            (Self::Count(a), Self::Count(b)) => a == b,
            (a, b) => {
                let (a, b) = (a.as_f64(), b.as_f64());
                a == b || (a - b).abs() <= SHARE_TOLERANCE * a.abs().max(b.abs())
            }
        }
    }
}

impl std::fmt::Display for FactValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Count(v) => write!(f, "{v}"),
            Self::Share(v) => write!(f, "{v}"),
        }
    }
}

impl BlockFacts {
    /// Facts of a derivation: per-phase sums of its invocations plus memory.
    #[must_use]
    pub fn from_derivation(derivation: &BlockDerivation, spec: &TrainingSpec) -> Self {
        facts_from_work(derivation.invocations.iter().map(WorkItem::from), &derivation.memory, spec)
    }

    /// Every field with its oracle name, in declaration order.
    #[must_use]
    pub fn fields(&self) -> [(&'static str, FactValue); 22] {
        use FactValue::{Count as C, Share as S};
        [
            ("block_fw_flops", C(self.block_fw_flops)),
            ("block_agrad_flops", C(self.block_agrad_flops)),
            ("block_wgrad_flops", C(self.block_wgrad_flops)),
            ("block_optim_flops", S(self.block_optim_flops)),
            ("block_fw_mem_accessed", C(self.block_fw_mem_accessed)),
            ("block_agrad_mem_accessed", C(self.block_agrad_mem_accessed)),
            ("block_wgrad_mem_accessed", C(self.block_wgrad_mem_accessed)),
            ("block_optim_mem_accessed", S(self.block_optim_mem_accessed)),
            ("baseblock_fw_tp_size", C(self.baseblock_fw_tp_size)),
            ("baseblock_bw_tp_size", C(self.baseblock_bw_tp_size)),
            ("baseblock_recomm_size", C(self.baseblock_recomm_size)),
            ("block_fw_pp_size", C(self.block_fw_pp_size)),
            ("block_bw_pp_size", C(self.block_bw_pp_size)),
            ("block_dp_size", C(self.block_dp_size)),
            ("block_weight_space", C(self.block_weight_space)),
            ("block_act_working_space", C(self.block_act_working_space)),
            ("block_act_storage_space", C(self.block_act_storage_space)),
            ("block_act_checkpoint_size", C(self.block_act_checkpoint_size)),
            ("block_weight_grad_space", S(self.block_weight_grad_space)),
            ("block_weight_grad_space_no_sharding", C(self.block_weight_grad_space_no_sharding)),
            ("block_act_grad_space", C(self.block_act_grad_space)),
            ("block_optimizer_space", S(self.block_optimizer_space)),
        ]
    }

    /// Fields that differ from `expected`, as `(name, self, expected)`:
    /// counts exactly, shares beyond [`SHARE_TOLERANCE`].
    #[must_use]
    pub fn mismatches(&self, expected: &Self) -> Vec<(&'static str, FactValue, FactValue)> {
        self.fields()
            .into_iter()
            .zip(expected.fields())
            .filter(|((_, got), (_, want))| !got.agrees_with(*want))
            .map(|((name, got), (_, want))| (name, got, want))
            .collect()
    }
}

/// The part of an invocation (or of any task derived from one) that the
/// facts depend on, so other layers can recompute the totals from their own
/// task lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkItem {
    pub phase: Phase,
    pub ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Collective kind and logical message bytes, for collectives.
    pub collective: Option<(CollectiveKind, u64)>,
    /// Ranks that split the work evenly (see [`PrimitiveInvocation::shared_by`]).
    pub shared_by: u64,
    /// A collective tiled with its linear ([`PrimitiveInvocation::tiling`]):
    /// Calculon prices its reduction inside the linear's network time, so
    /// the block's flops leave it out.
    pub tiled: bool,
}

impl From<&PrimitiveInvocation> for WorkItem {
    fn from(inv: &PrimitiveInvocation) -> Self {
        Self {
            phase: inv.phase,
            ops: inv.ops,
            read_bytes: inv.read_bytes,
            write_bytes: inv.write_bytes,
            collective: inv.collective.map(|c| (c.kind, c.message_bytes)),
            shared_by: inv.shared_by,
            tiled: inv.tiling.is_some(),
        }
    }
}

/// Totals of one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseSum {
    pub ops: u64,
    /// The part of `ops` done by collectives tiled with their linears.
    pub tiled_ops: u64,
    /// Read plus write bytes.
    pub bytes: u64,
    pub message_bytes: u64,
    pub items: u64,
    pub collectives: u64,
    /// One rank's operations: `ops` with shared work divided by its group.
    pub ops_per_rank: f64,
    /// One rank's bytes, likewise.
    pub bytes_per_rank: f64,
}

/// Per-phase totals of a set of work items.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WorkTotals {
    sums: [PhaseSum; Phase::ALL.len()],
}

impl WorkTotals {
    /// Adds one item (saturating, so foreign task lists cannot panic).
    pub fn add(&mut self, item: WorkItem) {
        let sum = &mut self.sums[item.phase.index()];
        sum.ops = sum.ops.saturating_add(item.ops);
        if item.tiled {
            sum.tiled_ops = sum.tiled_ops.saturating_add(item.ops);
        }
        sum.bytes = sum.bytes.saturating_add(item.read_bytes.saturating_add(item.write_bytes));
        sum.items = sum.items.saturating_add(1);
        sum.ops_per_rank += share(item.ops, item.shared_by);
        sum.bytes_per_rank += share(item.read_bytes.saturating_add(item.write_bytes), item.shared_by);
        if let Some((_, message)) = item.collective {
            sum.message_bytes = sum.message_bytes.saturating_add(message);
            sum.collectives = sum.collectives.saturating_add(1);
        }
    }

    /// Totals of one phase.
    #[must_use]
    pub fn phase(&self, phase: Phase) -> PhaseSum {
        self.sums[phase.index()]
    }
}

impl FromIterator<WorkItem> for WorkTotals {
    fn from_iter<I: IntoIterator<Item = WorkItem>>(items: I) -> Self {
        let mut totals = Self::default();
        for item in items {
            totals.add(item);
        }
        totals
    }
}

/// Bytes of the activation one pipeline stage sends to the next per
/// microbatch and block boundary: sequence-split under RS+AG and
/// `p2p_rs_ag` (Calculon's `_block_fw_pp_size`), 0 without pipeline
/// parallelism.
#[must_use]
pub fn pipeline_message_bytes(spec: &TrainingSpec) -> u64 {
    let (model, map) = (&spec.model, &spec.mapping);
    if map.pp <= 1 {
        return 0;
    }
    let tokens = spec.workload.microbatch.saturating_mul(model.seq_len);
    let tokens = if map.pipeline_sequence_split() { tokens.checked_div(map.tp).unwrap_or(0) } else { tokens };
    tokens.saturating_mul(model.hidden).saturating_mul(spec.workload.datatype.bytes())
}

/// Builds the facts from any work items plus the block memory.
#[must_use]
pub fn facts_from_work(items: impl IntoIterator<Item = WorkItem>, memory: &BlockMemory, spec: &TrainingSpec) -> BlockFacts {
    let totals: WorkTotals = items.into_iter().collect();
    let fw = totals.phase(Phase::Forward);
    let agrad = totals.phase(Phase::ActivationGradient);
    let wgrad = totals.phase(Phase::WeightGradient);
    let optim = totals.phase(Phase::Optimizer);
    let recomm = totals.phase(Phase::Recommunication);
    let pp = pipeline_message_bytes(spec);
    BlockFacts {
        // Calculon's flops of a tiled linear leave its collective's reduction out.
        block_fw_flops: fw.ops - fw.tiled_ops,
        block_agrad_flops: agrad.ops - agrad.tiled_ops,
        block_wgrad_flops: wgrad.ops - wgrad.tiled_ops,
        block_optim_flops: optim.ops_per_rank,
        block_fw_mem_accessed: fw.bytes,
        block_agrad_mem_accessed: agrad.bytes,
        block_wgrad_mem_accessed: wgrad.bytes,
        block_optim_mem_accessed: optim.bytes_per_rank,
        baseblock_fw_tp_size: fw.message_bytes,
        baseblock_bw_tp_size: agrad.message_bytes,
        baseblock_recomm_size: recomm.message_bytes,
        block_fw_pp_size: pp,
        // Training sends the activation gradient back across the same boundary.
        block_bw_pp_size: pp,
        // The block's weight gradients are synchronised over DP (Calculon
        // sizes the message as the low-precision weights).
        block_dp_size: if spec.mapping.dp > 1 { memory.weights } else { 0 },
        block_weight_space: memory.weights,
        block_act_working_space: memory.act_working_space,
        block_act_storage_space: memory.act_storage_space,
        block_act_checkpoint_size: memory.act_checkpoint,
        block_weight_grad_space: memory.weight_grads_per_rank(),
        block_weight_grad_space_no_sharding: memory.weight_grads_unsharded,
        block_act_grad_space: memory.act_grads,
        block_optimizer_space: memory.optimizer_per_rank(),
        block_act_all_space: Some(memory.act_all),
    }
}
