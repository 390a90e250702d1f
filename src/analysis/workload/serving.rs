//! What one op kind costs in a served (forward-only) pass, written once:
//! the work of each op on one tensor-parallel rank, the KV-cache traffic
//! and the pass's memory ledger, as functions of local (per-rank) sizes.
//!
//! Both derivations of a served block call these rules: the inference
//! algebra ([`super::inference`]), which reads the sizes off a spec, and
//! the derivation from a decomposed ModelIR block
//! ([`super::graph_derivation::served`]), which reads them off the IR's
//! tensor types and sharding. Every op's work is the forward work of the
//! training rules ([`super::rules`]); what differs is the ledger:
//!
//! - working space follows Calculon's forward ledger: an op's input
//!   counts unless it is a fork's tensor (the fork owns it) or another op
//!   counted it already (the gate and up projections share their input);
//!   a residual add counts nothing (its operands are the fork's); a
//!   dropout counts its one-byte-per-element mask;
//! - the attention products count their queries / probabilities and only
//!   the K (resp. V) entries this pass appends: the cached history is
//!   KV-cache capacity, not working space;
//! - a linear writing keys or values writes them into the cache, in the
//!   KV datatype (its write bytes); the attention products read the K and
//!   V of every cached token from the cache.

use serde::{Deserialize, Serialize};

use super::inference_spec::InferencePhase;
use super::invocation::{BlockDerivation, BlockMemory, CollectiveFacts, CollectiveKind, Phase, Primitive, PrimitiveInvocation};
use super::rules::{self, Activation, Work};

/// One derived inference pass: the block's invocations plus the KV-cache
/// and weight traffic that the invocation bytes contain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InferencePass {
    pub derivation: BlockDerivation,
    /// Which pass this is.
    pub pass: InferencePhase,
    /// Tokens per sequence computed by the pass (prompt, or 1).
    pub new_tokens: u64,
    /// Tokens per sequence attended over (prompt, or the decode context).
    pub context_tokens: u64,
    /// Bytes of matmul weights read (part of the matmuls' read bytes).
    pub matmul_weight_bytes: u64,
    /// K and V cache bytes read by the attention matmuls.
    pub kv_read_bytes: u64,
    /// K and V cache bytes appended by the K and V projections.
    pub kv_write_bytes: u64,
}

/// Where a linear's output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    Activation,
    /// Appended to the KV cache, in the KV datatype.
    KvCache,
}

/// Local sizes of one attention product: `batch` sequences of `heads`
/// query heads of `head_dim`, `new` query tokens over `context` cached
/// tokens; `kv_heads` cached K/V heads on this rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AttentionDims {
    pub batch: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub new: u64,
    pub context: u64,
}

impl AttentionDims {
    /// Score (probability) elements `b·heads·new·context`.
    pub const fn scores(&self) -> u64 {
        self.batch * self.heads * self.new * self.context
    }

    /// Elements of one of K or V for `tokens` tokens.
    pub const fn kv_elems(&self, tokens: u64) -> u64 {
        self.batch * self.kv_heads * tokens * self.head_dim
    }

    /// Query (context output) elements `b·heads·new·head_dim`.
    pub const fn queries(&self) -> u64 {
        self.batch * self.heads * self.new * self.head_dim
    }
}

/// A pass's invocations, memory and traffic, accumulated op by op.
pub(crate) struct ServedBuilder {
    phase: Phase,
    tp: u64,
    /// Bytes per element of activations and weights.
    elem: u64,
    /// Bytes per element of the KV cache.
    kv_elem: u64,
    invocations: Vec<PrimitiveInvocation>,
    weights: u64,
    matmul_weights: u64,
    act_working: u64,
    kv_read: u64,
    kv_write: u64,
}

impl ServedBuilder {
    pub const fn new(phase: Phase, tp: u64, elem: u64, kv_elem: u64) -> Self {
        Self { phase, tp, elem, kv_elem, invocations: Vec::new(), weights: 0, matmul_weights: 0, act_working: 0, kv_read: 0, kv_write: 0 }
    }

    /// Invocations so far.
    pub fn len(&self) -> usize {
        self.invocations.len()
    }

    /// The name of the last invocation.
    pub fn last_name(&self) -> String {
        self.invocations.last().map(|inv| inv.name.clone()).unwrap_or_default()
    }

    fn push(&mut self, source: &str, primitive: Primitive, work: Work, collective: Option<CollectiveFacts>) {
        self.invocations.push(rules::invocation(source, primitive, self.phase, work, collective));
    }

    /// An input of `elems` elements counted in working space unless it is
    /// held elsewhere (`owned == false`).
    fn input(&mut self, elems: u64, owned: bool) {
        if owned {
            self.act_working += elems * self.elem;
        }
    }

    /// A branch point: no work; it owns the branched `elems` tensor.
    pub fn fork(&mut self, elems: u64) {
        self.input(elems, true);
    }

    /// Layer norm over `elems` elements with `params` replicated parameters.
    pub fn layer_norm(&mut self, source: &str, elems: u64, params: u64, owned_input: bool) {
        self.push(source, Primitive::LayerNorm, rules::layer_norm_forward(elems, params, self.elem), None);
        self.weights += params * self.elem;
        self.input(elems, owned_input);
    }

    /// RMS norm over `elems` elements with `params` replicated parameters.
    pub fn rms_norm(&mut self, source: &str, elems: u64, params: u64, owned_input: bool) {
        self.push(source, Primitive::RmsNorm, rules::rms_norm_forward(elems, params, self.elem), None);
        self.weights += params * self.elem;
        self.input(elems, owned_input);
    }

    /// `Y[m,k] = X[m,n]·W[n,k]`, already TP-local.
    pub fn linear(&mut self, source: &str, (m, n, k): (u64, u64, u64), owned_input: bool, out: Output) {
        let (x, w) = (m * n * self.elem, n * k * self.elem);
        let y = m * k * if out == Output::KvCache { self.kv_elem } else { self.elem };
        self.push(source, Primitive::Matmul, Work { ops: 2 * m * n * k, read: x + w, write: y }, None);
        self.weights += w;
        self.matmul_weights += w;
        self.input(m * n, owned_input);
        if out == Output::KvCache {
            self.kv_write += y;
        }
    }

    /// `Q·Kᵀ` for every local query head, `[new, d]·[d, context]`, each KV
    /// head's cached K read once for its query group.
    pub fn scores(&mut self, source: &str, d: AttentionDims, owned_queries: bool) {
        let q = d.queries() * self.elem;
        let k_cache = d.kv_elems(d.context) * self.kv_elem;
        let ops = 2 * d.batch * d.heads * d.new * d.head_dim * d.context;
        self.push(source, Primitive::BatchMatmul, Work { ops, read: q + k_cache, write: d.scores() * self.elem }, None);
        self.kv_read += k_cache;
        self.input(d.queries(), owned_queries);
        self.act_working += d.kv_elems(d.new) * self.kv_elem;
    }

    /// `P·V` for every local query head, `[new, context]·[context, d]`.
    pub fn context(&mut self, source: &str, d: AttentionDims, owned_probs: bool) {
        let p = d.scores() * self.elem;
        let v_cache = d.kv_elems(d.context) * self.kv_elem;
        let ops = 2 * d.batch * d.heads * d.new * d.context * d.head_dim;
        self.push(source, Primitive::BatchMatmul, Work { ops, read: p + v_cache, write: d.queries() * self.elem }, None);
        self.kv_read += v_cache;
        self.input(d.scores(), owned_probs);
        self.act_working += d.kv_elems(d.new) * self.kv_elem;
    }

    pub fn softmax(&mut self, source: &str, elems: u64, owned_input: bool) {
        self.push(source, Primitive::Softmax, rules::softmax_forward(elems, self.elem), None);
        self.input(elems, owned_input);
    }

    /// An element-wise activation function.
    pub fn activation(&mut self, source: &str, kind: Activation, elems: u64, owned_input: bool) {
        self.push(source, kind.primitive(), rules::activation_forward(kind, elems, self.elem), None);
        self.input(elems, owned_input);
    }

    /// `silu(gate)·up`; `owned_inputs` of its two inputs are counted here.
    pub fn swiglu(&mut self, source: &str, elems: u64, owned_inputs: u64) {
        self.push(source, Primitive::Swiglu, rules::swiglu_forward(elems, self.elem), None);
        self.act_working += owned_inputs * elems * self.elem;
    }

    /// Rotary embedding of `elems` elements.
    pub fn rope(&mut self, source: &str, elems: u64, owned_input: bool) {
        self.push(source, Primitive::Rope, rules::rope_forward(elems, self.elem), None);
        self.input(elems, owned_input);
    }

    /// `y = x + bias` with a `width`-element (local) bias.
    pub fn bias_add(&mut self, source: &str, elems: u64, width: u64, owned_input: bool) {
        self.push(source, Primitive::BiasAdd, rules::bias_add_forward(elems, width, self.elem), None);
        self.weights += width * self.elem;
        self.input(elems, owned_input);
    }

    /// Dropout as Calculon keeps it in inference: one op per element and a
    /// one-byte-per-element mask written and held.
    pub fn dropout(&mut self, source: &str, elems: u64) {
        self.push(source, Primitive::Dropout, rules::dropout_forward(elems, self.elem), None);
        self.act_working += elems;
    }

    /// `y = x + r` over tensors owned by the fork.
    pub fn residual(&mut self, source: &str, elems: u64) {
        self.push(source, Primitive::ResidualAdd, rules::residual_forward(elems, self.elem), None);
    }

    /// Megatron's `g` after a row-parallel linear: all-reduce of the whole
    /// `elems`-element tensor, reading and writing it once and adding
    /// `(t-1)/t` of its elements; its input buffer is working space.
    /// Nothing at t = 1.
    pub fn tp_exit(&mut self, source: &str, elems: u64) {
        if self.tp == 1 {
            return;
        }
        let bytes = elems * self.elem;
        let work = Work { ops: rules::reduction_ops(elems, self.tp), read: bytes, write: bytes };
        let facts = CollectiveFacts { kind: CollectiveKind::AllReduce, message_bytes: bytes };
        self.push(source, Primitive::Collective, work, Some(facts));
        self.act_working += bytes;
    }

    /// The pass: its invocations, memory (weights, working activations)
    /// and traffic.
    pub fn finish(self, pass: InferencePhase, new_tokens: u64, context_tokens: u64) -> InferencePass {
        InferencePass {
            derivation: BlockDerivation {
                invocations: self.invocations,
                memory: BlockMemory { weights: self.weights, act_working_space: self.act_working, ..BlockMemory::default() },
            },
            pass,
            new_tokens,
            context_tokens,
            matmul_weight_bytes: self.matmul_weights,
            kv_read_bytes: self.kv_read,
            kv_write_bytes: self.kv_write,
        }
    }
}
