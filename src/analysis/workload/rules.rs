//! What one op kind of a decoder block costs, written once: its work per
//! phase (forward, activation gradient, weight gradient, optimizer), its
//! recompute clone, its tensor-parallel collectives and its memory terms,
//! as functions of its local (per-rank) sizes.
//!
//! Both derivations of a block call these rules: the workload algebra
//! ([`super::training`]), which reads the sizes off a spec, and the
//! derivation from a ModelIR block ([`super::graph_derivation`]), which
//! reads them off the IR's tensor types and sharding. Counting conventions
//! (bytes per primitive, dropout masks, which tensors are stored) follow
//! Calculon `calculon/llm/layers.py` and `calculon/llm/llm.py` at caa4b11,
//! so the per-phase sums equal its block statistics exactly; see
//! `test/oracles/calculon/FULL-MODEL.md`.

use super::invocation::{BlockDerivation, BlockMemory, CollectiveFacts, CollectiveKind, Phase, Primitive, PrimitiveInvocation, Tiling};
use super::spec::{Recompute, TpComm, TpOverlap, TrainingSpec};

/// What the strategy says about how every rule counts: tensor
/// parallelism, datatype, optimizer sharding, TP communication.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Strategy {
    pub tp: u64,
    /// Bytes per element.
    pub elem: u64,
    /// DP shards of optimizer state / weight gradients (1 when unsharded).
    pub optim_shards: u64,
    pub sequence_parallel: bool,
    /// Calculon's `tensor_par_comm_type == 'rs_ag'` (the tiled linears
    /// size their buffers by it; `p2p_rs_ag` counts as all-reduce there).
    pub rs_ag: bool,
    pub overlap: TpOverlap,
    pub full_recompute: bool,
}

impl Strategy {
    pub fn of(spec: &TrainingSpec) -> Self {
        let map = &spec.mapping;
        Self {
            tp: map.tp,
            elem: spec.workload.datatype.bytes(),
            optim_shards: if map.optimizer_sharding { map.dp } else { 1 },
            sequence_parallel: map.sequence_parallel(),
            rs_ag: map.tp_comm == TpComm::RsAg,
            overlap: map.tp_overlap,
            full_recompute: map.recompute == Recompute::Full,
        }
    }
}

/// An element-wise activation function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    Gelu,
    Relu,
    Silu,
}

impl Activation {
    /// Operations per element, forward and backward: GeLU's are
    /// Calculon's (8 and 13); ReLU is a comparison each way (1, 1); SiLU
    /// `u·σ(u)` is the sigmoid `1 / (1 + e^(−u))` (a negation, an
    /// exponential, a sum, a reciprocal: 4) and a product (5), its gradient
    /// `dy·σ(u)·(1 + u·(1 − σ(u)))` the sigmoid's 4 and 5 more (9).
    pub const fn ops(self) -> (u64, u64) {
        match self {
            Self::Gelu => (8, 13),
            Self::Relu => (1, 1),
            Self::Silu => (5, 9),
        }
    }

    pub const fn primitive(self) -> Primitive {
        match self {
            Self::Gelu => Primitive::Gelu,
            Self::Relu => Primitive::Relu,
            Self::Silu => Primitive::Silu,
        }
    }
}

/// How a primitive's input activation is held in memory (Calculon's
/// `activation_reused` / `activation_stored` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Residency {
    /// The input is another operation's tensor already counted in working
    /// space (layer-norm and Q/K/V read the fork's tensor).
    pub shared: bool,
    /// The input is kept for the backward pass.
    pub stored: bool,
}

pub(crate) const OWNED_STORED: Residency = Residency { shared: false, stored: true };
pub(crate) const SHARED_UNSTORED: Residency = Residency { shared: true, stored: false };

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
    /// Every activation, shared or stored or not.
    act_all: u64,
}

impl MemoryLedger {
    fn activation(&mut self, bytes: u64, residency: Residency) {
        self.act_all += bytes;
        if !residency.shared {
            self.act_working += bytes;
        }
        if residency.stored {
            self.act_stored += bytes;
        }
    }
}

/// Ops and bytes of one primitive in one phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Work {
    pub ops: u64,
    pub read: u64,
    pub write: u64,
}

/// The forward work of a layer norm over `elems` elements with `params`
/// parameters (Calculon's): 9 operations per element, reading the input and
/// the parameters, writing the output. Training and inference count it so.
pub(crate) const fn layer_norm_forward(elems: u64, params: u64, e: u64) -> Work {
    Work { ops: 9 * elems, read: (elems + params) * e, write: elems * e }
}

/// A softmax's forward work (Calculon's): 5 operations per element, one
/// tensor read and one written.
pub(crate) const fn softmax_forward(elems: u64, e: u64) -> Work {
    Work { ops: 5 * elems, read: elems * e, write: elems * e }
}

/// A dropout's forward work (Calculon's): one operation per element, the
/// tensor read, the tensor and its one-byte-per-element mask written.
pub(crate) const fn dropout_forward(elems: u64, e: u64) -> Work {
    Work { ops: elems, read: elems * e, write: elems * e + elems }
}

/// A residual add's forward work: one operation per element, both operands
/// read, one tensor written.
pub(crate) const fn residual_forward(elems: u64, e: u64) -> Work {
    Work { ops: elems, read: 2 * elems * e, write: elems * e }
}

/// An element-wise activation's forward work: [`Activation::ops`] per
/// element, one tensor read and one written.
pub(crate) const fn activation_forward(kind: Activation, elems: u64, e: u64) -> Work {
    Work { ops: kind.ops().0 * elems, read: elems * e, write: elems * e }
}

/// SwiGLU's forward work `silu(g)·u`: 6 operations per element (`−g`,
/// `exp`, `+1`, the reciprocal, `·g`, `·u`), both inputs read, one tensor
/// written. Training and inference count it so.
pub(crate) const fn swiglu_forward(elems: u64, e: u64) -> Work {
    Work { ops: 6 * elems, read: 2 * elems * e, write: elems * e }
}

/// An RMS norm's forward work: 4 operations per element (square, sum, the
/// reciprocal root's product, the scale), reading the input and the
/// scale, writing the output. Training and inference count it so.
pub(crate) const fn rms_norm_forward(elems: u64, params: u64, e: u64) -> Work {
    Work { ops: 4 * elems, read: (elems + params) * e, write: elems * e }
}

/// A rotary embedding's forward work: 3 operations per element (two
/// products and a sum), one tensor read and one written; the angles'
/// tables are not counted.
pub(crate) const fn rope_forward(elems: u64, e: u64) -> Work {
    Work { ops: 3 * elems, read: elems * e, write: elems * e }
}

/// A bias add's forward work over `elems` elements with a `width`-element
/// bias: one operation per element, the input and the bias read.
pub(crate) const fn bias_add_forward(elems: u64, width: u64, e: u64) -> Work {
    Work { ops: elems, read: (elems + width) * e, write: elems * e }
}

/// The reduction work of an all-reduce or reduce-scatter of `elems`
/// elements over `tp` ranks: `(tp − 1)/tp` of the elements are added (`tp`
/// divides them).
pub(crate) const fn reduction_ops(elems: u64, tp: u64) -> u64 {
    elems / tp * (tp - 1)
}

/// The record of `source`'s `phase` work (named `<source>.<phase suffix>`).
pub(crate) fn invocation(
    source: &str,
    primitive: Primitive,
    phase: Phase,
    work: Work,
    collective: Option<CollectiveFacts>,
) -> PrimitiveInvocation {
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

/// Which phases of an op a block runs: its forward is recomputed before
/// the backward pass; `wgrad` is false for an op whose parameters get no
/// gradient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Runs {
    pub recompute: bool,
    pub wgrad: bool,
}

impl Runs {
    pub const fn recomputed(recompute: bool) -> Self {
        Self { recompute, wgrad: true }
    }
}

/// Collects a block's invocations per stage so the final list is
/// stage-ordered: forward (call order), recompute clones,
/// re-communication, backward (reverse call order, activation gradient
/// before weight gradient per operation), optimizer.
pub(crate) struct RuleBuilder {
    s: Strategy,
    forward: Vec<PrimitiveInvocation>,
    recompute: Vec<PrimitiveInvocation>,
    recomm: Vec<PrimitiveInvocation>,
    /// Backward invocations grouped per operation, reversed at the end.
    backward: Vec<Vec<PrimitiveInvocation>>,
    optimizer: Vec<PrimitiveInvocation>,
    memory: MemoryLedger,
}

impl RuleBuilder {
    pub fn new(strategy: Strategy) -> Self {
        Self {
            s: strategy,
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

    /// Parameters of an operation (`count` elements on this rank): weights,
    /// gradients, Adam state and step.
    pub fn parameters(&mut self, source: &str, count: u64) {
        let e = self.s.elem;
        // Master fp32 copy only when training below fp32; two fp32 moments.
        let master = if e < 4 { 4 * count } else { 0 };
        let moments = 4 * (2 * count);
        let state = master + moments;
        self.memory.weights += count * e;
        self.memory.weight_grads += count * e;
        self.memory.weight_grads_unsharded += 4 * count;
        self.memory.optimizer += state;
        // Calculon: 11 ops per gradient element, and the state is touched
        // once; the in-place write-back is not counted separately, so the
        // whole state is recorded as read. Under optimizer sharding the DP
        // group splits the step evenly.
        let step = Work { ops: 11 * count, read: state, write: 0 };
        let mut step = invocation(source, Primitive::Adam, Phase::Optimizer, step, None);
        step.shared_by = self.s.optim_shards;
        self.optimizer.push(step);
    }

    /// A branch point over `elems` elements used `users` times: no forward
    /// work; its backward sums the users' gradients.
    pub fn fork(&mut self, source: &str, elems: u64, users: u64, stored: bool) {
        let e = self.s.elem;
        let agrad = Work { ops: users * elems, read: users * elems * e, write: elems * e };
        self.backward(source, Primitive::GradientSum, agrad, None);
        // The fork owns the branched tensor; its gradient buffer is counted
        // by the users (Calculon sets the fork's activation_grads to 0).
        self.memory.activation(elems * e, Residency { shared: false, stored });
    }

    /// Layer-norm over `elems` elements with `params` replicated parameters
    /// (scale and bias); `input` is how its input is held (the preceding
    /// fork's tensor in Calculon's block).
    pub fn layer_norm(&mut self, source: &str, elems: u64, params: u64, runs: Runs, input: Residency) {
        let e = self.s.elem;
        let fwd = layer_norm_forward(elems, params, e);
        let agrad = Work { ops: 14 * elems, read: (params + elems) * e, write: elems * e };
        let wgrad = Work { ops: 7 * elems, read: 2 * elems * e, write: params * e };
        self.forward(source, Primitive::LayerNorm, fwd, runs.recompute);
        self.backward(source, Primitive::LayerNorm, agrad, runs.wgrad.then_some(wgrad));
        if runs.wgrad {
            self.parameters(source, params);
        } else {
            self.memory.weights += params * e;
        }
        self.memory.activation(elems * e, Residency { stored: false, ..input });
        self.memory.act_grads += elems * e;
    }

    /// `Y[m,k] = X[m,n]·W[n,k]` (already TP-local): three matmuls of `2mnk`.
    pub fn linear(&mut self, source: &str, (m, n, k): (u64, u64, u64), runs: Runs, input: Residency) {
        let e = self.s.elem;
        let ops = 2 * m * n * k;
        let (x, w, y) = (m * n * e, n * k * e, m * k * e);
        let fwd = Work { ops, read: x + w, write: y };
        // dX = dY·Wᵀ reads W and dY, writes dX; dW = Xᵀ·dY reads X and dY.
        let agrad = Work { ops, read: w + y, write: x };
        let wgrad = Work { ops, read: x + y, write: w };
        self.forward(source, Primitive::Matmul, fwd, runs.recompute);
        self.backward(source, Primitive::Matmul, agrad, runs.wgrad.then_some(wgrad));
        if runs.wgrad {
            self.parameters(source, n * k);
        } else {
            self.memory.weights += n * k * e;
        }
        self.memory.activation(x, input);
        self.memory.act_grads += y;
    }

    /// `batch` products `[m,n]·[n,k]` of two activations; backward produces
    /// both operand gradients (twice the forward FLOPs).
    pub fn batch_matmul(&mut self, source: &str, (batch, m, n, k): (u64, u64, u64, u64), recompute: bool, output_kept: bool) {
        let e = self.s.elem;
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

    pub fn softmax(&mut self, source: &str, elems: u64, recompute: bool, output_kept: bool) {
        let bytes = elems * self.s.elem;
        let fwd = softmax_forward(elems, self.s.elem);
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
    pub fn dropout(&mut self, source: &str, elems: u64, recompute: bool, mask_kept: bool) {
        let bytes = elems * self.s.elem;
        let mask = elems;
        let fwd = dropout_forward(elems, self.s.elem);
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
    pub fn gelu(&mut self, source: &str, elems: u64, recompute: bool, fused: bool) {
        self.activation(source, Activation::Gelu, elems, recompute, fused);
    }

    /// An element-wise activation over `elems` elements (its input kept for
    /// the backward pass, as Calculon's GeLU), counted per element as
    /// [`Activation::ops`] says; when fused into the preceding linear it
    /// keeps no activation or gradient buffer of its own.
    pub fn activation(&mut self, source: &str, kind: Activation, elems: u64, recompute: bool, fused: bool) {
        let bytes = elems * self.s.elem;
        let fwd = activation_forward(kind, elems, self.s.elem);
        let agrad = Work { ops: kind.ops().1 * elems, read: bytes, write: bytes };
        self.forward(source, kind.primitive(), fwd, recompute);
        self.backward(source, kind.primitive(), agrad, None);
        if !fused {
            self.memory.activation(bytes, OWNED_STORED);
            self.memory.act_grads += bytes;
        }
    }

    /// `silu(gate) ⊙ up` over `elems` elements of each input, forward as
    /// [`swiglu_forward`] counts it; backward 16 operations per element
    /// (the gate's gradient `dy·up·silu'(gate)`: SiLU's 9 and the product
    /// with `up`, 10; the up projection's `dy·silu(gate)`: 6), reading the
    /// output gradient and both inputs and writing both gradients. Both
    /// inputs are kept for the backward pass (unless fused, as a fused
    /// activation).
    pub fn swiglu(&mut self, source: &str, elems: u64, recompute: bool, fused: bool) {
        let bytes = elems * self.s.elem;
        let fwd = swiglu_forward(elems, self.s.elem);
        let agrad = Work { ops: 16 * elems, read: 3 * bytes, write: 2 * bytes };
        self.forward(source, Primitive::Swiglu, fwd, recompute);
        self.backward(source, Primitive::Swiglu, agrad, None);
        if !fused {
            self.memory.activation(2 * bytes, OWNED_STORED);
            self.memory.act_grads += 2 * bytes;
        }
    }

    /// RMS norm over `elems` elements with `params` (the scale) replicated
    /// parameters, counted as the layer norm's traffic with its own
    /// arithmetic: 4 operations per element forward (square, sum, the
    /// reciprocal root's product, the scale), 7 for the input gradient
    /// (`g = dy·scale`, the row's `Σ g·x`, and `rstd·(g − x·rstd²·Σ g·x / n)`),
    /// 3 for the scale's (`Σ dy·x·rstd`).
    pub fn rms_norm(&mut self, source: &str, elems: u64, params: u64, runs: Runs, input: Residency) {
        let e = self.s.elem;
        let fwd = rms_norm_forward(elems, params, e);
        let agrad = Work { ops: 7 * elems, read: (params + elems) * e, write: elems * e };
        let wgrad = Work { ops: 3 * elems, read: 2 * elems * e, write: params * e };
        self.forward(source, Primitive::RmsNorm, fwd, runs.recompute);
        self.backward(source, Primitive::RmsNorm, agrad, runs.wgrad.then_some(wgrad));
        if runs.wgrad {
            self.parameters(source, params);
        } else {
            self.memory.weights += params * e;
        }
        self.memory.activation(elems * e, Residency { stored: false, ..input });
        self.memory.act_grads += elems * e;
    }

    /// Rotary embedding of `elems` elements: 3 operations per element each
    /// way (two products and a sum: the rotation forward, its transpose
    /// backward); the angles' tables are not counted. It keeps no
    /// activation (the backward needs only the positions).
    pub fn rope(&mut self, source: &str, elems: u64, recompute: bool) {
        let bytes = elems * self.s.elem;
        let work = rope_forward(elems, self.s.elem);
        self.forward(source, Primitive::Rope, work, recompute);
        self.backward(source, Primitive::Rope, work, None);
        self.memory.act_grads += bytes;
    }

    /// `y = x + bias` over `elems` elements with a `width`-element bias: one
    /// operation per element forward; the input's gradient is the
    /// output's, passed through (read and written, no arithmetic); the
    /// bias's sums the rows (one operation per element). It keeps no
    /// activation.
    pub fn bias_add(&mut self, source: &str, elems: u64, width: u64, runs: Runs) {
        let e = self.s.elem;
        let fwd = bias_add_forward(elems, width, e);
        let agrad = Work { ops: 0, read: elems * e, write: elems * e };
        let wgrad = Work { ops: elems, read: elems * e, write: width * e };
        self.forward(source, Primitive::BiasAdd, fwd, runs.recompute);
        self.backward(source, Primitive::BiasAdd, agrad, runs.wgrad.then_some(wgrad));
        if runs.wgrad {
            self.parameters(source, width);
        } else {
            self.memory.weights += width * e;
        }
        self.memory.act_grads += elems * e;
    }

    /// `y = x + r`; both operands are tensors owned elsewhere (the fork).
    pub fn residual(&mut self, source: &str, elems: u64, recompute: bool) {
        let bytes = elems * self.s.elem;
        let fwd = residual_forward(elems, self.s.elem);
        let agrad = Work { ops: 2 * elems, read: bytes, write: 2 * bytes };
        self.forward(source, Primitive::ResidualAdd, fwd, recompute);
        self.backward(source, Primitive::ResidualAdd, agrad, None);
        self.memory.activation(2 * bytes, SHARED_UNSTORED);
        self.memory.act_grads += bytes;
    }

    /// One collective over the whole `elems`-element tensor: it reads and
    /// writes the tensor once; reductions add `(t-1)/t` of its elements.
    fn collective_work(&self, kind: CollectiveKind, elems: u64) -> (Work, CollectiveFacts) {
        let (e, t) = (self.s.elem, self.s.tp);
        let bytes = elems * e;
        let ops = match kind {
            CollectiveKind::AllGather => 0,
            // t divides the sharded dimension (validated), so this is exact.
            CollectiveKind::AllReduce | CollectiveKind::ReduceScatter => reduction_ops(elems, t),
        };
        (Work { ops, read: bytes, write: bytes }, CollectiveFacts { kind, message_bytes: bytes })
    }

    fn collective(&mut self, source: &str, phase: Phase, kind: CollectiveKind, elems: u64) {
        let (work, facts) = self.collective_work(kind, elems);
        let inv = invocation(source, Primitive::Collective, phase, work, Some(facts));
        self.push_collective(inv);
    }

    fn push_collective(&mut self, inv: PrimitiveInvocation) {
        match inv.phase {
            Phase::Forward => self.forward.push(inv),
            Phase::Recommunication => self.recomm.push(inv),
            _ => self.backward.push(vec![inv]),
        }
    }

    /// Megatron's `f` operator before a column-parallel linear, on the
    /// whole `elems`-element activation: identity forward / all-reduce
    /// backward, or all-gather / reduce-scatter under sequence parallelism.
    /// `recommunicate` redoes the all-gather in the backward pass (nothing
    /// to redo for the AR identity).
    pub fn tp_entry(&mut self, source: &str, elems: u64, recommunicate: bool) {
        let s = self.s;
        if s.tp == 1 {
            return;
        }
        let full = elems * s.elem;
        if s.sequence_parallel {
            self.collective(source, Phase::Forward, CollectiveKind::AllGather, elems);
            if recommunicate {
                self.collective(source, Phase::Recommunication, CollectiveKind::AllGather, elems);
            }
            self.collective(source, Phase::ActivationGradient, CollectiveKind::ReduceScatter, elems);
            // Only the sequence shard is held (Calculon TPComm.get_activation).
            self.memory.activation(full / s.tp, OWNED_STORED);
            self.memory.act_grads += full / s.tp;
        } else {
            self.collective(source, Phase::ActivationGradient, CollectiveKind::AllReduce, elems);
            // Identity forward holds nothing; the backward all-reduce buffer
            // is a full-size gradient.
            self.memory.act_grads += full;
        }
    }

    /// Megatron's `g` operator after a row-parallel linear, on the whole
    /// `elems`-element activation: all-reduce forward / identity backward,
    /// or reduce-scatter / all-gather under sequence parallelism. Its input
    /// is not kept for the backward pass.
    pub fn tp_exit(&mut self, source: &str, elems: u64, recommunicate: bool) {
        let s = self.s;
        if s.tp == 1 {
            return;
        }
        let full = elems * s.elem;
        let not_stored = Residency { shared: false, stored: false };
        let forward_kind = if s.sequence_parallel { CollectiveKind::ReduceScatter } else { CollectiveKind::AllReduce };
        self.collective(source, Phase::Forward, forward_kind, elems);
        if recommunicate {
            self.collective(source, Phase::Recommunication, forward_kind, elems);
        }
        if s.sequence_parallel {
            self.collective(source, Phase::ActivationGradient, CollectiveKind::AllGather, elems);
            self.memory.activation(full / s.tp, not_stored);
            self.memory.act_grads += full / s.tp;
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
    /// collective for the weight gradient. The collectives carry the whole
    /// activation, `m` times the hidden side of the linear.
    pub fn tiled_linear(&mut self, source: &str, comm: &str, (m, n, k): (u64, u64, u64), exit: bool, recompute: bool, regather: bool) {
        let s = self.s;
        let (e, t) = (s.elem, s.tp);
        let activation = m * if exit { k } else { n };
        let (n, k) = if exit { (n / t, k) } else { (n, k / t) };
        let ops = 2 * m * n * k;
        // Calculon's activation (`act_space`) and gradient (`act_grads` plus
        // the network buffer) elements of the tiled linear.
        let (act, act_grads) = match (exit, s.rs_ag) {
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

        let tiling = Tiling { with: source.to_owned(), tiles: t, overlap: s.overlap };
        let (forward, backward) = match (exit, s.rs_ag) {
            (false, true) => (Some(CollectiveKind::AllGather), Some(CollectiveKind::ReduceScatter)),
            (false, false) => (None, Some(CollectiveKind::AllReduce)),
            (true, true) => (Some(CollectiveKind::ReduceScatter), Some(CollectiveKind::AllGather)),
            (true, false) => (Some(CollectiveKind::AllReduce), None),
        };
        let mut tiled = |phase, kind| {
            let (mut work, facts) = self.collective_work(kind, activation);
            (work.read, work.write) = (0, 0);
            let mut inv = invocation(comm, Primitive::Collective, phase, work, Some(facts));
            inv.tiling = Some(tiling.clone());
            self.push_collective(inv);
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

    /// The block's invocations in stage order and its memory; `checkpoint`
    /// is the bytes of the (whole, not sequence-split) block input, which
    /// full recompute keeps, as Calculon counts it.
    pub fn finish(self, checkpoint: u64) -> BlockDerivation {
        let s = self.s;
        let ledger = self.memory;
        let memory = BlockMemory {
            weights: ledger.weights,
            act_working_space: ledger.act_working,
            // Under full recompute only the checkpoint survives the forward.
            // Otherwise released outputs are always among the stored inputs
            // (the score / probability tensors are also inputs of the next
            // primitive), so the difference never saturates.
            act_storage_space: if s.full_recompute { 0 } else { ledger.act_stored.saturating_sub(ledger.act_released) },
            act_checkpoint: if s.full_recompute { checkpoint } else { 0 },
            weight_grads: ledger.weight_grads,
            weight_grads_unsharded: ledger.weight_grads_unsharded,
            act_grads: ledger.act_grads,
            optimizer: ledger.optimizer,
            shards: s.optim_shards,
            act_all: ledger.act_all,
        };
        let mut invocations = self.forward;
        invocations.extend(self.recompute);
        invocations.extend(self.recomm);
        invocations.extend(self.backward.into_iter().rev().flatten());
        invocations.extend(self.optimizer);
        BlockDerivation { invocations, memory }
    }
}
