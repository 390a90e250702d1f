//! Derivation of one decoder block into primitive invocations.
//!
//! The block is Megatron's pre-LN decoder as Calculon models it: an attention
//! half and an MLP half, each `fork → layer-norm → TP entry → … → TP exit →
//! dropout → residual`. Every model-level operation expands into explicit
//! primitives per phase (forward, activation gradient, weight gradient,
//! optimizer); recomputation clones forward primitives and re-communication
//! re-issues forward collectives, so every operation and byte has a named
//! cause. Counting conventions (bytes per primitive, dropout masks, which
//! tensors are stored) follow Calculon `calculon/llm/layers.py` and
//! `calculon/llm/llm.py` at caa4b11 so the per-phase sums equal its block
//! statistics exactly.

use serde::{Deserialize, Serialize};

use super::rules::{Residency, RuleBuilder, Runs, Strategy, OWNED_STORED, SHARED_UNSTORED};
use super::spec::{Recompute, SpecError, TpOverlap, TrainingSpec};

/// When, relative to one training step of a block, work happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Phase {
    Forward,
    /// Forward work repeated before the backward pass (not in Calculon's
    /// per-phase block statistics).
    Recompute,
    ActivationGradient,
    WeightGradient,
    Optimizer,
    /// Forward collectives re-issued in the backward pass (sequence-parallel
    /// all-gather redo, or forward collectives of a fully recomputed block).
    Recommunication,
    /// Inference: one forward pass over the prompt that fills the KV cache
    /// (derived by [`super::inference`], never by the training derivation).
    Prefill,
    /// Inference: one generation step of a single new token per sequence
    /// attending over the KV cache.
    Decode,
}

impl Phase {
    /// Every phase, in a fixed order usable as an index.
    pub const ALL: [Self; 8] = [
        Self::Forward,
        Self::Recompute,
        Self::ActivationGradient,
        Self::WeightGradient,
        Self::Optimizer,
        Self::Recommunication,
        Self::Prefill,
        Self::Decode,
    ];

    /// Position of the phase in [`Phase::ALL`].
    #[must_use]
    pub const fn index(self) -> usize {
        match self {
            Self::Forward => 0,
            Self::Recompute => 1,
            Self::ActivationGradient => 2,
            Self::WeightGradient => 3,
            Self::Optimizer => 4,
            Self::Recommunication => 5,
            Self::Prefill => 6,
            Self::Decode => 7,
        }
    }

    /// Short suffix used in invocation names.
    #[must_use]
    pub const fn suffix(self) -> &'static str {
        match self {
            Self::Forward => "fwd",
            Self::Recompute => "recompute",
            Self::ActivationGradient => "agrad",
            Self::WeightGradient => "wgrad",
            Self::Optimizer => "optim",
            Self::Recommunication => "recomm",
            Self::Prefill => "prefill",
            Self::Decode => "decode",
        }
    }
}

/// Abstract engine class a primitive needs (no target is named).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Engine {
    Matrix,
    Vector,
    Collective,
}

/// Closed set of primitives a block decomposes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Primitive {
    /// `Y[M,K] = X[M,N] · W[N,K]` or one of its two gradients.
    Matmul,
    /// Batched matmul of two activations (attention scores / context).
    BatchMatmul,
    LayerNorm,
    Softmax,
    Gelu,
    /// Gated activation of a gated (`SwiGLU`) MLP: `silu(gate) ⊙ up`.
    Swiglu,
    Dropout,
    ResidualAdd,
    /// Backward of a fork: sums the gradients of an activation's users.
    GradientSum,
    /// Adam update of one parameter tensor.
    Adam,
    /// Tensor-parallel collective; [`PrimitiveInvocation::collective`] is set.
    Collective,
}

impl Primitive {
    /// The engine class the primitive runs on (Calculon runs matmuls on the
    /// matrix unit and everything else, optimizer included, on the vector unit).
    #[must_use]
    pub const fn engine(self) -> Engine {
        match self {
            Self::Matmul | Self::BatchMatmul => Engine::Matrix,
            Self::Collective => Engine::Collective,
            Self::LayerNorm
            | Self::Softmax
            | Self::Gelu
            | Self::Swiglu
            | Self::Dropout
            | Self::ResidualAdd
            | Self::GradientSum
            | Self::Adam => Engine::Vector,
        }
    }
}

/// Kind of a logical collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CollectiveKind {
    AllReduce,
    ReduceScatter,
    AllGather,
}

/// Logical collective facts: the whole gathered/reduced tensor in bytes,
/// without ring factors (those belong to a time model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CollectiveFacts {
    pub kind: CollectiveKind,
    pub message_bytes: u64,
}

/// One primitive executed by one rank for one microbatch of one block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrimitiveInvocation {
    /// Stable name `<source>.<phase suffix>`, unique within a derivation.
    pub name: String,
    pub primitive: Primitive,
    pub phase: Phase,
    pub engine: Engine,
    /// Arithmetic operations (FLOPs; reduction adds for collectives).
    pub ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Present exactly when `primitive == Primitive::Collective`.
    pub collective: Option<CollectiveFacts>,
    /// The model-level operation this invocation comes from, e.g. `attn.q`.
    pub source: String,
    /// Ranks that split this work evenly (the data-parallel group of a
    /// sharded optimizer step), 1 otherwise. `ops` and the byte counts are
    /// the group's totals; one rank does `1/shared_by` of them, which need
    /// not be a whole number (as in Calculon's distributed optimizer).
    #[serde(default = "one")]
    pub shared_by: u64,
    /// For a TP collective tiled with its linear (`mapping.tp_overlap`):
    /// the linear and how the tiles overlap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiling: Option<Tiling>,
}

/// How a TP collective is tiled with the linear it feeds or drains
/// (Calculon's `LinearOverlapped`): the linear runs as `tiles` pieces and
/// each piece's communication overlaps the next piece's compute. The
/// collective's local work is its reduction only; its traffic is the
/// linear's. Calculon prices the pair as one layer, so the block's flops
/// leave the reduction out (it is in the network time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tiling {
    /// Source of the linear (`attn.qkv`, `attn.proj`, `mlp.fc1`, `mlp.fc2`).
    pub with: String,
    pub tiles: u64,
    pub overlap: TpOverlap,
}

impl Tiling {
    /// The base id of the linear's task a tiled collective of `phase`
    /// overlaps, e.g. `attn.proj.fwd`.
    #[must_use]
    pub fn linear_task(&self, phase: Phase) -> String {
        format!("{}.{}", self.with, tiled_phase(phase).suffix())
    }
}

/// The phase of the linear task a tiled collective of `phase` overlaps:
/// its own, except that a re-communication feeds the weight gradient.
#[must_use]
pub const fn tiled_phase(phase: Phase) -> Phase {
    match phase {
        Phase::Recommunication => Phase::WeightGradient,
        other => other,
    }
}

const fn one() -> u64 {
    1
}

impl PrimitiveInvocation {
    /// Bytes accessed (Calculon's `mem_accessed`): reads plus writes.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }

    /// Message bytes of the collective, 0 for local work.
    #[must_use]
    pub fn message_bytes(&self) -> u64 {
        self.collective.map_or(0, |c| c.message_bytes)
    }

    /// One rank's share of `value` (`value / shared_by`).
    #[must_use]
    pub fn per_rank(&self, value: u64) -> f64 {
        share(value, self.shared_by)
    }
}

/// `total / parts` as the per-rank share of evenly split state or work.
#[must_use]
pub fn share(total: u64, parts: u64) -> f64 {
    if parts <= 1 {
        total as f64
    } else {
        total as f64 / parts as f64
    }
}

/// Per-block, per-microbatch memory of one rank, in bytes (Calculon's
/// `block_*` space fields).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockMemory {
    pub weights: u64,
    /// Activations live while the block's forward runs.
    pub act_working_space: u64,
    /// Activations kept for the backward pass (0 under full recompute).
    pub act_storage_space: u64,
    /// Block input kept under full recompute.
    pub act_checkpoint: u64,
    /// Low-precision weight gradients of the whole block; each rank of the
    /// optimizer-sharding group holds `1/shards` of them.
    pub weight_grads: u64,
    /// fp32 accumulation copy of the weight gradients, never sharded.
    pub weight_grads_unsharded: u64,
    pub act_grads: u64,
    /// fp32 master weights (for sub-fp32 datatypes) and Adam moments of the
    /// whole block; each rank holds `1/shards` of them.
    pub optimizer: u64,
    /// Ranks the weight gradients and optimizer state are sharded over
    /// (DP under optimizer sharding, else 1).
    pub shards: u64,
}

impl BlockMemory {
    /// One rank's weight gradients (Calculon's `block_weight_grad_space`).
    #[must_use]
    pub fn weight_grads_per_rank(&self) -> f64 {
        share(self.weight_grads, self.shards)
    }

    /// One rank's optimizer state (Calculon's `block_optimizer_space`).
    #[must_use]
    pub fn optimizer_per_rank(&self) -> f64 {
        share(self.optimizer, self.shards)
    }
}

/// Ordered primitive invocations of one block plus its memory.
///
/// Order is stage-serial: forward (model order), recompute clones,
/// re-communication, backward (reverse model order, activation gradient
/// before weight gradient per operation), optimizer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDerivation {
    pub invocations: Vec<PrimitiveInvocation>,
    pub memory: BlockMemory,
}

impl BlockDerivation {
    /// Invocations of one phase, in order.
    pub fn phase(&self, phase: Phase) -> impl Iterator<Item = &PrimitiveInvocation> + '_ {
        self.invocations.iter().filter(move |inv| inv.phase == phase)
    }

    /// Invocations coming from one model-level operation.
    pub fn from_source<'a>(&'a self, source: &'a str) -> impl Iterator<Item = &'a PrimitiveInvocation> + 'a {
        self.invocations.iter().filter(move |inv| inv.source == source)
    }
}

/// Derives one decoder block of `spec` (validated first).
///
/// # Errors
/// The first rule of [`TrainingSpec::validate`] that `spec` violates; a
/// valid spec always derives, without panicking or overflowing.
pub fn derive_training_block(spec: &TrainingSpec) -> Result<BlockDerivation, SpecError> {
    spec.validate_counted()?;
    Ok(derive_validated(spec))
}

/// Sizes shared by the whole block. Products stay below 2^64 because
/// validation bounds `b·s·h·max(h, f, s)`.
struct Dims {
    /// Microbatch `b`.
    batch: u64,
    seq: u64,
    hidden: u64,
    ffn: u64,
    heads: u64,
    head_dim: u64,
    tp: u64,
    sequence_parallel: bool,
}

impl Dims {
    fn new(spec: &TrainingSpec) -> Self {
        let m = &spec.model;
        Self {
            batch: spec.workload.microbatch,
            seq: m.seq_len,
            hidden: m.hidden,
            ffn: m.ffn_hidden,
            heads: m.heads,
            head_dim: m.head_dim,
            tp: spec.mapping.tp,
            sequence_parallel: spec.mapping.sequence_parallel(),
        }
    }

    /// Tokens in a microbatch, `b·s` (the `M` of every linear).
    fn tokens(&self) -> u64 {
        self.batch * self.seq
    }

    /// Full block activation `b·s·h` elements.
    fn activation(&self) -> u64 {
        self.tokens() * self.hidden
    }

    /// Activation outside the TP regions: split by TP under sequence parallelism.
    fn boundary_activation(&self) -> u64 {
        if self.sequence_parallel {
            self.tokens() / self.tp * self.hidden
        } else {
            self.activation()
        }
    }

    /// Local heads times batch: the batch of the attention batched matmuls.
    fn local_head_batch(&self) -> u64 {
        self.batch * self.heads / self.tp
    }

    /// Elements of the local attention score tensor `b·(a/t)·s²`.
    fn scores(&self) -> u64 {
        self.heads / self.tp * self.seq * self.seq * self.batch
    }

    /// Local attention width `a·d / t`.
    fn local_attn_width(&self) -> u64 {
        self.heads * self.head_dim / self.tp
    }
}

/// Derivation proper; `spec` must have passed [`TrainingSpec::validate`].
/// Calculon's block, op by op, through the rules every derivation shares.
fn derive_validated(spec: &TrainingSpec) -> BlockDerivation {
    let dims = Dims::new(spec);
    let map = &spec.mapping;
    let full = map.recompute == Recompute::Full;
    let attn_core = matches!(map.recompute, Recompute::Full | Recompute::AttnOnly);
    // Whether the full-size input of the column-parallel linears is dropped
    // after the forward pass (Calculon's `recompute_ag_flag`): it is then
    // re-gathered, and the fork/linear stop storing it.
    let drop_attn_input = attn_core || map.seq_par_ag_redo;
    let drop_mlp_input = full || map.seq_par_ag_redo;

    let tokens = dims.tokens();
    let boundary = dims.boundary_activation();
    let activation = dims.activation();
    let hidden = dims.hidden;
    let attn_width = dims.local_attn_width();
    let params = 2 * hidden;
    let runs = Runs::recomputed(full);

    let mut b = RuleBuilder::new(Strategy::of(spec));

    let tiled = map.tp_overlap.is_overlapped();
    let attn_full_width = dims.heads * dims.head_dim;

    // Attention half.
    b.fork("attn.fork", boundary, 2, true);
    b.layer_norm("attn.ln", boundary, params, runs, SHARED_UNSTORED);
    if tiled {
        // Calculon fuses Q, K and V into one tiled linear.
        b.tiled_linear("attn.qkv", "attn.tp_entry", (tokens, hidden, 3 * attn_full_width), false, full, drop_attn_input);
    } else {
        b.tp_entry("attn.tp_entry", activation, drop_attn_input);
        b.fork("attn.qkv_fork", activation, 3, !drop_attn_input);
        for source in ["attn.q", "attn.k", "attn.v"] {
            b.linear(source, (tokens, hidden, attn_width), runs, SHARED_UNSTORED);
        }
    }
    let (head_batch, s, hd) = (dims.local_head_batch(), dims.seq, dims.head_dim);
    b.batch_matmul("attn.scores", (head_batch, s, hd, s), attn_core, !attn_core);
    b.softmax("attn.softmax", dims.scores(), attn_core, !attn_core);
    b.dropout("attn.prob_dropout", dims.scores(), attn_core, !attn_core);
    b.batch_matmul("attn.context", (head_batch, s, s, hd), full, true);
    if tiled {
        b.tiled_linear("attn.proj", "attn.tp_exit", (tokens, attn_full_width, hidden), true, full, full);
    } else {
        b.linear("attn.proj", (tokens, attn_width, hidden), runs, OWNED_STORED);
        b.tp_exit("attn.tp_exit", activation, full);
    }
    b.dropout("attn.dropout", boundary, full, true);
    b.residual("attn.residual", boundary, full);

    // MLP half.
    b.fork("mlp.fork", boundary, 2, true);
    b.layer_norm("mlp.ln", boundary, params, runs, SHARED_UNSTORED);
    let ffn_local = dims.ffn / dims.tp;
    if tiled {
        b.tiled_linear("mlp.fc1", "mlp.tp_entry", (tokens, hidden, dims.ffn), false, full, drop_mlp_input);
    } else {
        b.tp_entry("mlp.tp_entry", activation, drop_mlp_input);
        let fc1_input = Residency { shared: false, stored: !drop_mlp_input };
        b.linear("mlp.fc1", (tokens, hidden, ffn_local), runs, fc1_input);
    }
    b.gelu("mlp.gelu", tokens * ffn_local, full, map.fused_activation);
    if tiled {
        b.tiled_linear("mlp.fc2", "mlp.tp_exit", (tokens, dims.ffn, hidden), true, full, full);
    } else {
        b.linear("mlp.fc2", (tokens, ffn_local, hidden), runs, OWNED_STORED);
        b.tp_exit("mlp.tp_exit", activation, full);
    }
    b.dropout("mlp.dropout", boundary, full, true);
    b.residual("mlp.residual", boundary, full);

    b.finish(activation * spec.workload.datatype.bytes())
}
