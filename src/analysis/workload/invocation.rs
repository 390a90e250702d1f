//! The record every derivation produces: a block's primitive invocations
//! (one primitive in one phase, with its exact work and, for a collective,
//! its logical message) and its memory.

use serde::{Deserialize, Serialize};

use super::spec::TpOverlap;

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
    RmsNorm,
    Softmax,
    Gelu,
    Relu,
    Silu,
    /// Gated activation of a gated (`SwiGLU`) MLP: `silu(gate) ⊙ up`.
    Swiglu,
    /// Rotary position embedding of queries or keys.
    Rope,
    /// A bias broadcast along the rows.
    BiasAdd,
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
            | Self::RmsNorm
            | Self::Softmax
            | Self::Gelu
            | Self::Relu
            | Self::Silu
            | Self::Swiglu
            | Self::Rope
            | Self::BiasAdd
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
    /// Every op's input activations, whether another op's tensor, kept for
    /// the backward pass or not: Calculon's activation storage of an
    /// inference step (`training = false`, where it subtracts nothing).
    #[serde(default)]
    pub act_all: u64,
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
