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

use super::spec::{Recompute, SpecError, TpComm, TpOverlap, TrainingSpec};

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
    /// Bytes per element.
    elem: u64,
    /// DP shards of optimizer state / weight gradients (1 when unsharded).
    optim_shards: u64,
    sequence_parallel: bool,
    /// Calculon's `tensor_par_comm_type == 'rs_ag'` (the tiled linears
    /// size their buffers by it; `p2p_rs_ag` counts as all-reduce there).
    rs_ag: bool,
    overlap: TpOverlap,
}

impl Dims {
    fn new(spec: &TrainingSpec) -> Self {
        let (m, map) = (&spec.model, &spec.mapping);
        Self {
            batch: spec.workload.microbatch,
            seq: m.seq_len,
            hidden: m.hidden,
            ffn: m.ffn_hidden,
            heads: m.heads,
            head_dim: m.head_dim,
            tp: map.tp,
            elem: spec.workload.datatype.bytes(),
            optim_shards: if map.optimizer_sharding { map.dp } else { 1 },
            sequence_parallel: map.sequence_parallel(),
            rs_ag: map.tp_comm == TpComm::RsAg,
            overlap: map.tp_overlap,
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

/// How a primitive's input activation is held in memory (Calculon's
/// `activation_reused` / `activation_stored` flags).
#[derive(Clone, Copy)]
struct Residency {
    /// The input is another operation's tensor already counted in working
    /// space (layer-norm and Q/K/V read the fork's tensor).
    shared: bool,
    /// The input is kept for the backward pass.
    stored: bool,
}

const OWNED_STORED: Residency = Residency { shared: false, stored: true };

/// Accumulates memory terms; stored and released activations are summed
/// separately so no intermediate goes negative.
#[derive(Default)]
struct MemoryLedger {
    weights: u64,
    weight_grads: u64,
    weight_grads_unsharded: u64,
    optimizer: u64,
    act_working: u64,
    act_stored: u64,
    /// Outputs a recomputed operation does not keep; Calculon subtracts them
    /// from storage (`output_stored=False`).
    act_released: u64,
    act_grads: u64,
}

impl MemoryLedger {
    fn activation(&mut self, bytes: u64, residency: Residency) {
        if !residency.shared {
            self.act_working += bytes;
        }
        if residency.stored {
            self.act_stored += bytes;
        }
    }
}

/// Collects invocations per stage so the final list is stage-ordered.
struct Builder<'a> {
    dims: &'a Dims,
    forward: Vec<PrimitiveInvocation>,
    recompute: Vec<PrimitiveInvocation>,
    recomm: Vec<PrimitiveInvocation>,
    /// Backward invocations grouped per operation, reversed at the end.
    backward: Vec<Vec<PrimitiveInvocation>>,
    optimizer: Vec<PrimitiveInvocation>,
    memory: MemoryLedger,
}

/// Ops and bytes of one primitive in one phase.
#[derive(Clone, Copy)]
struct Work {
    ops: u64,
    read: u64,
    write: u64,
}

fn invocation(source: &str, primitive: Primitive, phase: Phase, work: Work, collective: Option<CollectiveFacts>) -> PrimitiveInvocation {
    PrimitiveInvocation {
        name: format!("{source}.{}", phase.suffix()),
        primitive,
        phase,
        engine: primitive.engine(),
        ops: work.ops,
        read_bytes: work.read,
        write_bytes: work.write,
        collective,
        source: source.to_owned(),
        shared_by: 1,
        tiling: None,
    }
}

impl<'a> Builder<'a> {
    fn new(dims: &'a Dims) -> Self {
        Self {
            dims,
            forward: Vec::new(),
            recompute: Vec::new(),
            recomm: Vec::new(),
            backward: Vec::new(),
            optimizer: Vec::new(),
            memory: MemoryLedger::default(),
        }
    }

    /// Forward invocation, cloned with phase `Recompute` when the operation
    /// is recomputed before the backward pass.
    fn forward(&mut self, source: &str, primitive: Primitive, work: Work, recompute: bool) {
        if recompute {
            self.recompute.push(invocation(source, primitive, Phase::Recompute, work, None));
        }
        self.forward.push(invocation(source, primitive, Phase::Forward, work, None));
    }

    fn backward(&mut self, source: &str, primitive: Primitive, agrad: Work, wgrad: Option<Work>) {
        let mut group = vec![invocation(source, primitive, Phase::ActivationGradient, agrad, None)];
        if let Some(wgrad) = wgrad {
            group.push(invocation(source, primitive, Phase::WeightGradient, wgrad, None));
        }
        self.backward.push(group);
    }

    /// Parameters of an operation: weights, gradients, Adam state and step.
    fn parameters(&mut self, source: &str, count: u64) {
        let d = self.dims;
        // Master fp32 copy only when training below fp32; two fp32 moments.
        let master = if d.elem < 4 { 4 * count } else { 0 };
        let moments = 4 * (2 * count);
        let state = master + moments;
        self.memory.weights += count * d.elem;
        self.memory.weight_grads += count * d.elem;
        self.memory.weight_grads_unsharded += 4 * count;
        self.memory.optimizer += state;
        // Calculon: 11 ops per gradient element, and the state is touched
        // once; the in-place write-back is not counted separately, so the
        // whole state is recorded as read. Under optimizer sharding the DP
        // group splits the step evenly.
        let step = Work { ops: 11 * count, read: state, write: 0 };
        let mut step = invocation(source, Primitive::Adam, Phase::Optimizer, step, None);
        step.shared_by = d.optim_shards;
        self.optimizer.push(step);
    }

    /// A branch point: no forward work; its backward sums `users` gradients.
    fn fork(&mut self, source: &str, elems: u64, users: u64, stored: bool) {
        let e = self.dims.elem;
        let agrad = Work { ops: users * elems, read: users * elems * e, write: elems * e };
        self.backward(source, Primitive::GradientSum, agrad, None);
        // The fork owns the branched tensor; its gradient buffer is counted
        // by the users (Calculon sets the fork's activation_grads to 0).
        self.memory.activation(elems * e, Residency { shared: false, stored });
    }

    /// Layer-norm over `elems` with replicated `2h` parameters; its input is
    /// the preceding fork's tensor.
    fn layer_norm(&mut self, source: &str, elems: u64, recompute: bool) {
        let e = self.dims.elem;
        let params = 2 * self.dims.hidden;
        let fwd = Work { ops: 9 * elems, read: (elems + params) * e, write: elems * e };
        let agrad = Work { ops: 14 * elems, read: (params + elems) * e, write: elems * e };
        let wgrad = Work { ops: 7 * elems, read: 2 * elems * e, write: params * e };
        self.forward(source, Primitive::LayerNorm, fwd, recompute);
        self.backward(source, Primitive::LayerNorm, agrad, Some(wgrad));
        self.parameters(source, params);
        self.memory.activation(elems * e, Residency { shared: true, stored: false });
        self.memory.act_grads += elems * e;
    }

    /// `Y[m,k] = X[m,n]·W[n,k]` (already TP-local): three matmuls of `2mnk`.
    fn linear(&mut self, source: &str, (m, n, k): (u64, u64, u64), recompute: bool, input: Residency) {
        let e = self.dims.elem;
        let ops = 2 * m * n * k;
        let (x, w, y) = (m * n * e, n * k * e, m * k * e);
        let fwd = Work { ops, read: x + w, write: y };
        // dX = dY·Wᵀ reads W and dY, writes dX; dW = Xᵀ·dY reads X and dY.
        let agrad = Work { ops, read: w + y, write: x };
        let wgrad = Work { ops, read: x + y, write: w };
        self.forward(source, Primitive::Matmul, fwd, recompute);
        self.backward(source, Primitive::Matmul, agrad, Some(wgrad));
        self.parameters(source, n * k);
        self.memory.activation(x, input);
        self.memory.act_grads += y;
    }

    /// `batch` products `[m,n]·[n,k]` of two activations; backward produces
    /// both operand gradients (twice the forward FLOPs).
    fn batch_matmul(&mut self, source: &str, (batch, m, n, k): (u64, u64, u64, u64), recompute: bool, output_kept: bool) {
        let e = self.dims.elem;
        let ops = batch * 2 * m * n * k;
        let inputs = batch * (m * n + n * k) * e;
        let output = batch * m * k * e;
        let fwd = Work { ops, read: inputs, write: output };
        let agrad = Work { ops: 2 * ops, read: output, write: inputs };
        self.forward(source, Primitive::BatchMatmul, fwd, recompute);
        self.backward(source, Primitive::BatchMatmul, agrad, None);
        self.memory.activation(inputs, OWNED_STORED);
        if !output_kept {
            self.memory.act_released += output;
        }
        self.memory.act_grads += output;
    }

    fn softmax(&mut self, source: &str, elems: u64, recompute: bool, output_kept: bool) {
        let bytes = elems * self.dims.elem;
        let fwd = Work { ops: 5 * elems, read: bytes, write: bytes };
        let agrad = Work { ops: 8 * elems, read: bytes, write: bytes };
        self.forward(source, Primitive::Softmax, fwd, recompute);
        self.backward(source, Primitive::Softmax, agrad, None);
        self.memory.activation(bytes, OWNED_STORED);
        if !output_kept {
            self.memory.act_released += bytes;
        }
        self.memory.act_grads += bytes;
    }

    /// Dropout keeps a one-byte-per-element mask as its only activation.
    fn dropout(&mut self, source: &str, elems: u64, recompute: bool, mask_kept: bool) {
        let bytes = elems * self.dims.elem;
        let mask = elems;
        let fwd = Work { ops: elems, read: bytes, write: bytes + mask };
        let agrad = Work { ops: elems, read: bytes + mask, write: bytes };
        self.forward(source, Primitive::Dropout, fwd, recompute);
        self.backward(source, Primitive::Dropout, agrad, None);
        self.memory.activation(mask, Residency { shared: false, stored: mask_kept });
        // Calculon sizes the dropout gradient buffer like the mask (one byte
        // per element, `DropOut.get_activation_grad`); kept for agreement.
        self.memory.act_grads += mask;
    }

    /// `GeLU`; when fused into the preceding linear it keeps no activation or
    /// gradient buffer of its own but still does the same work.
    fn gelu(&mut self, source: &str, elems: u64, recompute: bool, fused: bool) {
        let bytes = elems * self.dims.elem;
        let fwd = Work { ops: 8 * elems, read: bytes, write: bytes };
        let agrad = Work { ops: 13 * elems, read: bytes, write: bytes };
        self.forward(source, Primitive::Gelu, fwd, recompute);
        self.backward(source, Primitive::Gelu, agrad, None);
        if !fused {
            self.memory.activation(bytes, OWNED_STORED);
            self.memory.act_grads += bytes;
        }
    }

    /// `y = x + r`; both operands are tensors owned elsewhere (the fork).
    fn residual(&mut self, source: &str, elems: u64, recompute: bool) {
        let bytes = elems * self.dims.elem;
        let fwd = Work { ops: elems, read: 2 * bytes, write: bytes };
        let agrad = Work { ops: 2 * elems, read: bytes, write: 2 * bytes };
        self.forward(source, Primitive::ResidualAdd, fwd, recompute);
        self.backward(source, Primitive::ResidualAdd, agrad, None);
        self.memory.activation(2 * bytes, Residency { shared: true, stored: false });
        self.memory.act_grads += bytes;
    }

    /// One collective over the full `b·s·h` tensor: it reads and writes the
    /// tensor once; reductions add `(t-1)/t` of its elements.
    fn collective_work(&self, kind: CollectiveKind) -> (Work, CollectiveFacts) {
        let d = self.dims;
        let elems = d.activation();
        let bytes = elems * d.elem;
        let ops = match kind {
            CollectiveKind::AllGather => 0,
            // t | h (validated), so this is exact.
            CollectiveKind::AllReduce | CollectiveKind::ReduceScatter => elems / d.tp * (d.tp - 1),
        };
        let work = Work { ops, read: bytes, write: bytes };
        let facts = CollectiveFacts { kind, message_bytes: bytes };
        (work, facts)
    }

    fn collective(&mut self, source: &str, phase: Phase, kind: CollectiveKind) {
        let (work, facts) = self.collective_work(kind);
        let inv = invocation(source, Primitive::Collective, phase, work, Some(facts));
        match phase {
            Phase::Forward => self.forward.push(inv),
            Phase::Recommunication => self.recomm.push(inv),
            _ => self.backward.push(vec![inv]),
        }
    }

    /// Megatron's `f` operator before a column-parallel linear: identity
    /// forward / all-reduce backward, or all-gather / reduce-scatter under
    /// sequence parallelism. `recommunicate` redoes the all-gather in the
    /// backward pass (nothing to redo for the AR identity).
    fn tp_entry(&mut self, source: &str, recommunicate: bool) {
        let d = self.dims;
        if d.tp == 1 {
            return;
        }
        let full = d.activation() * d.elem;
        if d.sequence_parallel {
            self.collective(source, Phase::Forward, CollectiveKind::AllGather);
            if recommunicate {
                self.collective(source, Phase::Recommunication, CollectiveKind::AllGather);
            }
            self.collective(source, Phase::ActivationGradient, CollectiveKind::ReduceScatter);
            // Only the sequence shard is held (Calculon TPComm.get_activation).
            self.memory.activation(full / d.tp, OWNED_STORED);
            self.memory.act_grads += full / d.tp;
        } else {
            self.collective(source, Phase::ActivationGradient, CollectiveKind::AllReduce);
            // Identity forward holds nothing; the backward all-reduce buffer
            // is a full-size gradient.
            self.memory.act_grads += full;
        }
    }

    /// Megatron's `g` operator after a row-parallel linear: all-reduce
    /// forward / identity backward, or reduce-scatter / all-gather under
    /// sequence parallelism. Its input is not kept for the backward pass.
    fn tp_exit(&mut self, source: &str, recommunicate: bool) {
        let d = self.dims;
        if d.tp == 1 {
            return;
        }
        let full = d.activation() * d.elem;
        let not_stored = Residency { shared: false, stored: false };
        let forward_kind = if d.sequence_parallel { CollectiveKind::ReduceScatter } else { CollectiveKind::AllReduce };
        self.collective(source, Phase::Forward, forward_kind);
        if recommunicate {
            self.collective(source, Phase::Recommunication, forward_kind);
        }
        if d.sequence_parallel {
            self.collective(source, Phase::ActivationGradient, CollectiveKind::AllGather);
            self.memory.activation(full / d.tp, not_stored);
            self.memory.act_grads += full / d.tp;
        } else {
            self.memory.activation(full, not_stored);
        }
    }

    /// A linear tiled with its TP collectives (`mapping.tp_overlap`), sized
    /// as Calculon's `LinearOverlapped`: `(m, n, k)` are the full sizes; an
    /// entry (`exit == false`, column-parallel) splits `k` by TP and gathers
    /// its input (all-gather forward under `rs_ag`, identity otherwise;
    /// reduce-scatter or all-reduce backward), an exit (row-parallel) splits
    /// `n` and reduces its output (reduce-scatter or all-reduce forward,
    /// all-gather or identity backward). `regather` re-issues the forward
    /// collective for the weight gradient.
    fn tiled_linear(&mut self, source: &str, comm: &str, (m, n, k): (u64, u64, u64), exit: bool, recompute: bool, regather: bool) {
        let d = self.dims;
        let (e, t) = (d.elem, d.tp);
        let (n, k) = if exit { (n / t, k) } else { (n, k / t) };
        let ops = 2 * m * n * k;
        // Calculon's activation (`act_space`) and gradient (`act_grads` plus
        // the network buffer) elements of the tiled linear.
        let (act, act_grads) = match (exit, d.rs_ag) {
            (false, true) => (m * n / t, m * k),
            (false, false) => (m * n, 0),
            (true, true) => (m * n, 2 * (m * k / t)),
            (true, false) => (0, 2 * m * k),
        };
        let (x, w, y) = (m * n * e, n * k * e, m * k * e);
        let fwd = Work { ops, read: x + w, write: y };
        // Calculon counts the weights plus its activation and gradient
        // buffers for both gradients (`Layer.get_agrad_mem_accessed`).
        let agrad = Work { ops, read: w + act_grads * e, write: act * e };
        let wgrad = Work { ops, read: (act + act_grads) * e, write: w };
        self.forward(source, Primitive::Matmul, fwd, recompute);
        self.backward(source, Primitive::Matmul, agrad, Some(wgrad));
        self.parameters(source, n * k);
        self.memory.activation(act * e, OWNED_STORED);
        self.memory.act_grads += act_grads * e;

        let tiling = Tiling { with: source.to_owned(), tiles: t, overlap: d.overlap };
        let (forward, backward) = match (exit, d.rs_ag) {
            (false, true) => (Some(CollectiveKind::AllGather), Some(CollectiveKind::ReduceScatter)),
            (false, false) => (None, Some(CollectiveKind::AllReduce)),
            (true, true) => (Some(CollectiveKind::ReduceScatter), Some(CollectiveKind::AllGather)),
            (true, false) => (Some(CollectiveKind::AllReduce), None),
        };
        let mut tiled = |phase, kind| {
            let (mut work, facts) = self.collective_work(kind);
            (work.read, work.write) = (0, 0);
            let mut inv = invocation(comm, Primitive::Collective, phase, work, Some(facts));
            inv.tiling = Some(tiling.clone());
            match phase {
                Phase::Forward => self.forward.push(inv),
                Phase::Recommunication => self.recomm.push(inv),
                _ => self.backward.push(vec![inv]),
            }
        };
        if let Some(kind) = forward {
            tiled(Phase::Forward, kind);
            if regather {
                tiled(Phase::Recommunication, kind);
            }
        }
        if let Some(kind) = backward {
            tiled(Phase::ActivationGradient, kind);
        }
    }

    fn finish(self, spec: &TrainingSpec) -> BlockDerivation {
        let d = self.dims;
        let full_recompute = spec.mapping.recompute == Recompute::Full;
        let ledger = self.memory;
        let memory = BlockMemory {
            weights: ledger.weights,
            act_working_space: ledger.act_working,
            // Under full recompute only the checkpoint survives the forward.
            // Otherwise released outputs are always among the stored inputs
            // (the score / probability tensors are also inputs of the next
            // primitive), so the difference never saturates.
            act_storage_space: if full_recompute { 0 } else { ledger.act_stored.saturating_sub(ledger.act_released) },
            // The full (not sequence-split) block input, as Calculon counts it.
            act_checkpoint: if full_recompute { d.activation() * d.elem } else { 0 },
            weight_grads: ledger.weight_grads,
            weight_grads_unsharded: ledger.weight_grads_unsharded,
            act_grads: ledger.act_grads,
            optimizer: ledger.optimizer,
            shards: d.optim_shards,
        };
        let mut invocations = self.forward;
        invocations.extend(self.recompute);
        invocations.extend(self.recomm);
        invocations.extend(self.backward.into_iter().rev().flatten());
        invocations.extend(self.optimizer);
        BlockDerivation { invocations, memory }
    }
}

/// Derivation proper; `spec` must have passed [`TrainingSpec::validate`].
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
    let hidden = dims.hidden;
    let attn_width = dims.local_attn_width();
    let shared_unstored = Residency { shared: true, stored: false };

    let mut b = Builder::new(&dims);

    let tiled = map.tp_overlap.is_overlapped();
    let attn_full_width = dims.heads * dims.head_dim;

    // Attention half.
    b.fork("attn.fork", boundary, 2, true);
    b.layer_norm("attn.ln", boundary, full);
    if tiled {
        // Calculon fuses Q, K and V into one tiled linear.
        b.tiled_linear("attn.qkv", "attn.tp_entry", (tokens, hidden, 3 * attn_full_width), false, full, drop_attn_input);
    } else {
        b.tp_entry("attn.tp_entry", drop_attn_input);
        b.fork("attn.qkv_fork", dims.activation(), 3, !drop_attn_input);
        for source in ["attn.q", "attn.k", "attn.v"] {
            b.linear(source, (tokens, hidden, attn_width), full, shared_unstored);
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
        b.linear("attn.proj", (tokens, attn_width, hidden), full, OWNED_STORED);
        b.tp_exit("attn.tp_exit", full);
    }
    b.dropout("attn.dropout", boundary, full, true);
    b.residual("attn.residual", boundary, full);

    // MLP half.
    b.fork("mlp.fork", boundary, 2, true);
    b.layer_norm("mlp.ln", boundary, full);
    let ffn_local = dims.ffn / dims.tp;
    if tiled {
        b.tiled_linear("mlp.fc1", "mlp.tp_entry", (tokens, hidden, dims.ffn), false, full, drop_mlp_input);
    } else {
        b.tp_entry("mlp.tp_entry", drop_mlp_input);
        let fc1_input = Residency { shared: false, stored: !drop_mlp_input };
        b.linear("mlp.fc1", (tokens, hidden, ffn_local), full, fc1_input);
    }
    b.gelu("mlp.gelu", tokens * ffn_local, full, map.fused_activation);
    if tiled {
        b.tiled_linear("mlp.fc2", "mlp.tp_exit", (tokens, dims.ffn, hidden), true, full, full);
    } else {
        b.linear("mlp.fc2", (tokens, ffn_local, hidden), full, OWNED_STORED);
        b.tp_exit("mlp.tp_exit", full);
    }
    b.dropout("mlp.dropout", boundary, full, true);
    b.residual("mlp.residual", boundary, full);

    b.finish(spec)
}
