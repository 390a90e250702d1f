//! Static inference: prefill and decode passes of one decoder block with
//! KV-cache state.
//!
//! Each pass is the block's forward computation, derived per block and per
//! tensor-parallel rank into the same [`PrimitiveInvocation`] records and
//! primitive vocabulary as training, with phase [`Phase::Prefill`] or
//! [`Phase::Decode`] (see [`invocation_phase`]):
//!
//! ```text
//! attn: ln → q, k, v (k, v append to the KV cache) → scores → softmax
//!       → prob_dropout → context → proj → tp_exit → dropout → residual
//! mlp:  ln → fc1 → gelu → fc2                      (ungated)
//!       ln → gate, up → swiglu → down              (gated, SwiGLU)
//!       → tp_exit → dropout → residual
//! ```
//!
//! Conventions (pinned by `test/oracles/inference`):
//! - The prefill of a multi-head, ungated block *is* Calculon's forward pass
//!   with `training=False` (`calculon/llm/llm.py`, `_compute_block_stats`
//!   accumulates only the `fw` terms and the same `_llm_block`, dropout layers
//!   included; layer costs from `calculon/llm/layers.py`). Every primitive's
//!   ops and bytes therefore equal the training forward's, and the tests
//!   check that invocation by invocation. Decode steps use the same block.
//! - A pass over `new` tokens per sequence attending over `context` tokens
//!   (prefill: `new = context = prompt`; decode: `new = 1`) costs
//!   `2·b·(a/t)·new·d·context` FLOPs in each of the two attention batched
//!   matmuls — the full score square, no causal halving (`GenZ`
//!   `GenZ/Models/attention.py`, `mha_flash_attention_{prefill,decode}`).
//! - GQA/MQA: the K and V projections have `kv_local·d` outputs per rank with
//!   `kv_local = max(kv_heads/t, 1)` (KV heads replicated when fewer than
//!   ranks, `GenZ`'s `per_node_Hkv`). The attention matmuls read each cached
//!   K/V head once for its whole query group, so they read
//!   `b·kv_local·context·d` K (resp. V) elements of the cache.
//! - KV cache: the K and V projections write their outputs into the cache in
//!   the KV datatype (`kv_bytes_written`); the attention matmuls read the K
//!   and V of all `context` tokens from it (`kv_bytes_read`, `GenZ`'s
//!   `kv_bytes_read`). Capacity per block per rank after `tokens` tokens is
//!   `2·b·tokens·d·kv_local` elements of the KV datatype.
//! - Working space follows Calculon's ledger (a primitive's input counts
//!   unless it is another primitive's tensor), except that only the K/V
//!   entries produced by this pass count for the attention matmuls: the
//!   cached history is KV-cache capacity, not working space. In a prefill the
//!   pass produces the whole context, so this is exactly Calculon's count.
//! - TP: Megatron all-reduce after the attention output projection and after
//!   the MLP down projection (2 per block, whole `b·new·h` tensor, none at
//!   t = 1), as in the training convention.
//! - `SwiGLU` gating `silu(g)·u` costs 6 ops per element (`−x`, `exp`, `+1`,
//!   `÷`, `·g`, `·u`), reads `g` and `u` and writes one tensor; no oracle
//!   counts vector work of a gated MLP ([`Primitive::Swiglu`], source
//!   `mlp.swiglu`).
//! - A decode step at context `c` processes the token at position `c` (its
//!   K/V appended, then attending over all `c` cached tokens). Generation is
//!   steps `c = prompt+1 ..= prompt+generated`; `GenZ`'s "decode at final
//!   context" is the last one.

use serde::{Deserialize, Serialize};

use super::facts::WorkTotals;
use super::inference_spec::{InferencePhase, InferenceSpec};
use super::invocation::{BlockDerivation, BlockMemory, CollectiveFacts, CollectiveKind, Phase, Primitive, PrimitiveInvocation};
use super::rules::{self, Activation, Work};
use super::spec::SpecError;

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

/// Derives the prefill of one block per TP rank (`spec` validated first).
///
/// # Errors
/// The first rule of [`InferenceSpec::validate`] that `spec` violates.
pub fn derive_prefill_pass(spec: &InferenceSpec) -> Result<InferencePass, SpecError> {
    spec.validate()?;
    let prompt = spec.workload.prompt_tokens;
    Ok(derive_validated(spec, InferencePhase::Prefill, prompt, prompt))
}

/// Derives one decode step of one block per TP rank: a single new token per
/// sequence attending over `context_tokens` cached tokens (itself included).
///
/// # Errors
/// The first rule of [`InferenceSpec::validate`] that `spec` violates, or
/// [`SpecError::DecodeContextOutOfRange`] unless
/// `prompt_tokens < context_tokens ≤ model.seq_len`.
pub fn derive_decode_pass(spec: &InferenceSpec, context_tokens: u64) -> Result<InferencePass, SpecError> {
    spec.validate()?;
    let min = spec.workload.prompt_tokens + 1;
    let max = spec.model.seq_len;
    if !(min..=max).contains(&context_tokens) {
        return Err(SpecError::DecodeContextOutOfRange { context: context_tokens, min, max });
    }
    Ok(derive_validated(spec, InferencePhase::Decode, 1, context_tokens))
}

/// [`derive_prefill_pass`] without the KV / weight traffic summary.
///
/// # Errors
/// As [`derive_prefill_pass`].
pub fn derive_prefill_block(spec: &InferenceSpec) -> Result<BlockDerivation, SpecError> {
    derive_prefill_pass(spec).map(|pass| pass.derivation)
}

/// [`derive_decode_pass`] without the KV / weight traffic summary.
///
/// # Errors
/// As [`derive_decode_pass`].
pub fn derive_decode_block(spec: &InferenceSpec, context_tokens: u64) -> Result<BlockDerivation, SpecError> {
    derive_decode_pass(spec, context_tokens).map(|pass| pass.derivation)
}

/// KV-cache bytes of one block on one TP rank holding `tokens` tokens per
/// sequence: `2·b·tokens·d·max(kv_heads/t, 1)` elements of the KV datatype
/// (saturating on an unvalidated spec).
#[must_use]
pub fn kv_cache_bytes(spec: &InferenceSpec, tokens: u64) -> u64 {
    2u64.saturating_mul(spec.workload.batch)
        .saturating_mul(tokens)
        .saturating_mul(spec.model.head_dim)
        .saturating_mul(spec.kv_heads_per_rank())
        .saturating_mul(spec.workload.kv_datatype().bytes())
}

/// The [`Phase`] recorded on the invocations of a pass.
#[must_use]
pub const fn invocation_phase(pass: InferencePhase) -> Phase {
    match pass {
        InferencePhase::Prefill => Phase::Prefill,
        InferencePhase::Decode => Phase::Decode,
    }
}

/// Primitive of the gated MLP's `silu(gate)·up`.
pub const GATED_ACTIVATION: Primitive = Primitive::Swiglu;

/// Sizes of one pass on one rank. Products stay below 2^64 because
/// validation bounds `b·seq_len·h·max(h, f, seq_len)`.
struct Dims {
    batch: u64,
    /// Tokens per sequence computed by the pass.
    new: u64,
    /// Tokens per sequence attended over.
    context: u64,
    hidden: u64,
    ffn_local: u64,
    heads_local: u64,
    kv_local: u64,
    head_dim: u64,
    tp: u64,
    elem: u64,
    kv_elem: u64,
}

impl Dims {
    /// Rows of every linear, `b·new`.
    fn tokens(&self) -> u64 {
        self.batch * self.new
    }

    /// Block activation `b·new·h` elements.
    fn activation(&self) -> u64 {
        self.tokens() * self.hidden
    }

    /// Local score elements `b·(a/t)·new·context`.
    fn scores(&self) -> u64 {
        self.batch * self.heads_local * self.new * self.context
    }

    /// Elements of one of K or V for `tokens` tokens on this rank.
    fn kv_elems(&self, tokens: u64) -> u64 {
        self.batch * self.kv_local * tokens * self.head_dim
    }
}

/// Where a linear's output goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    Activation,
    /// Appended to the KV cache, in the KV datatype.
    KvCache,
}

/// Accumulates one pass's invocations, memory and traffic.
struct Builder<'a> {
    dims: &'a Dims,
    phase: Phase,
    invocations: Vec<PrimitiveInvocation>,
    weights: u64,
    matmul_weights: u64,
    act_working: u64,
    kv_read: u64,
    kv_write: u64,
}

impl<'a> Builder<'a> {
    fn new(dims: &'a Dims, phase: Phase) -> Self {
        Self { dims, phase, invocations: Vec::new(), weights: 0, matmul_weights: 0, act_working: 0, kv_read: 0, kv_write: 0 }
    }

    fn push(&mut self, source: &str, primitive: Primitive, work: Work, collective: Option<CollectiveFacts>) {
        self.invocations.push(rules::invocation(source, primitive, self.phase, work, collective));
    }

    /// A branch point: no work; it owns the branched `elems` tensor.
    fn fork(&mut self, elems: u64) {
        self.act_working += elems * self.dims.elem;
    }

    /// Layer-norm with replicated `2h` parameters over the fork's tensor.
    fn layer_norm(&mut self, source: &str, elems: u64) {
        let e = self.dims.elem;
        let params = 2 * self.dims.hidden;
        let work = rules::layer_norm_forward(elems, params, e);
        self.push(source, Primitive::LayerNorm, work, None);
        self.weights += params * e;
    }

    /// `Y[m,k] = X[m,n]·W[n,k]`, already TP-local. `owned_input`: the input
    /// tensor is counted here rather than by a fork or a sibling linear.
    fn linear(&mut self, source: &str, (m, n, k): (u64, u64, u64), owned_input: bool, out: Output) {
        let d = self.dims;
        let (x, w) = (m * n * d.elem, n * k * d.elem);
        let y = match out {
            Output::Activation => m * k * d.elem,
            Output::KvCache => m * k * d.kv_elem,
        };
        let work = Work { ops: 2 * m * n * k, read: x + w, write: y };
        self.push(source, Primitive::Matmul, work, None);
        self.weights += w;
        self.matmul_weights += w;
        if owned_input {
            self.act_working += x;
        }
        if out == Output::KvCache {
            self.kv_write += y;
        }
    }

    /// `Q·Kᵀ` for every local query head: `[new, d]·[d, context]`, each KV
    /// head's cached K read once for its query group.
    fn scores(&mut self, source: &str) {
        let d = self.dims;
        let q = d.batch * d.heads_local * d.new * d.head_dim * d.elem;
        let k_cache = d.kv_elems(d.context) * d.kv_elem;
        let work =
            Work { ops: 2 * d.batch * d.heads_local * d.new * d.head_dim * d.context, read: q + k_cache, write: d.scores() * d.elem };
        self.push(source, Primitive::BatchMatmul, work, None);
        self.kv_read += k_cache;
        self.act_working += q + d.kv_elems(d.new) * d.kv_elem;
    }

    /// `P·V` for every local query head: `[new, context]·[context, d]`.
    fn context(&mut self, source: &str) {
        let d = self.dims;
        let p = d.scores() * d.elem;
        let v_cache = d.kv_elems(d.context) * d.kv_elem;
        let work = Work {
            ops: 2 * d.batch * d.heads_local * d.new * d.context * d.head_dim,
            read: p + v_cache,
            write: d.batch * d.heads_local * d.new * d.head_dim * d.elem,
        };
        self.push(source, Primitive::BatchMatmul, work, None);
        self.kv_read += v_cache;
        self.act_working += p + d.kv_elems(d.new) * d.kv_elem;
    }

    /// Elementwise primitive doing `work` on `inputs` tensors of `elems`
    /// elements, owning its inputs.
    fn elementwise(&mut self, source: &str, primitive: Primitive, work: Work, elems: u64, inputs: u64) {
        self.push(source, primitive, work, None);
        self.act_working += inputs * elems * self.dims.elem;
    }

    /// Dropout as Calculon keeps it in inference: one op per element and a
    /// one-byte-per-element mask written and held.
    fn dropout(&mut self, source: &str, elems: u64) {
        let work = rules::dropout_forward(elems, self.dims.elem);
        self.push(source, Primitive::Dropout, work, None);
        self.act_working += elems;
    }

    /// `y = x + r` over tensors owned by the fork.
    fn residual(&mut self, source: &str, elems: u64) {
        let work = rules::residual_forward(elems, self.dims.elem);
        self.push(source, Primitive::ResidualAdd, work, None);
    }

    /// Megatron's `g` after a row-parallel linear: all-reduce of the whole
    /// `b·new·h` tensor, reading and writing it once and adding `(t-1)/t` of
    /// its elements; its input buffer is working space. Nothing at t = 1.
    fn tp_exit(&mut self, source: &str) {
        let d = self.dims;
        if d.tp == 1 {
            return;
        }
        let elems = d.activation();
        let bytes = elems * d.elem;
        let work = Work { ops: rules::reduction_ops(elems, d.tp), read: bytes, write: bytes };
        let facts = CollectiveFacts { kind: CollectiveKind::AllReduce, message_bytes: bytes };
        self.push(source, Primitive::Collective, work, Some(facts));
        self.act_working += bytes;
    }
}

/// Derivation proper; `spec` must be valid and the lengths in range.
fn derive_validated(spec: &InferenceSpec, pass: InferencePhase, new: u64, context: u64) -> InferencePass {
    let (m, map) = (&spec.model, &spec.mapping);
    let dims = Dims {
        batch: spec.workload.batch,
        new,
        context,
        hidden: m.hidden,
        ffn_local: m.ffn_hidden / map.tp,
        heads_local: m.heads / map.tp,
        kv_local: spec.kv_heads_per_rank(),
        head_dim: m.head_dim,
        tp: map.tp,
        elem: spec.workload.datatype.bytes(),
        kv_elem: spec.workload.kv_datatype().bytes(),
    };
    let tokens = dims.tokens();
    let act = dims.activation();
    let hidden = dims.hidden;
    let q_width = dims.heads_local * dims.head_dim;
    let kv_width = dims.kv_local * dims.head_dim;
    let ffn = dims.ffn_local;

    let mut b = Builder::new(&dims, invocation_phase(pass));

    // Attention half. The TP entry (`f`) is the identity in the forward pass.
    b.fork(act);
    b.layer_norm("attn.ln", act);
    b.fork(act); // the Q/K/V input, shared by the three projections
    b.linear("attn.q", (tokens, hidden, q_width), false, Output::Activation);
    b.linear("attn.k", (tokens, hidden, kv_width), false, Output::KvCache);
    b.linear("attn.v", (tokens, hidden, kv_width), false, Output::KvCache);
    b.scores("attn.scores");
    b.elementwise("attn.softmax", Primitive::Softmax, rules::softmax_forward(dims.scores(), dims.elem), dims.scores(), 1);
    b.dropout("attn.prob_dropout", dims.scores());
    b.context("attn.context");
    b.linear("attn.proj", (tokens, q_width, hidden), true, Output::Activation);
    b.tp_exit("attn.tp_exit");
    b.dropout("attn.dropout", act);
    b.residual("attn.residual", act);

    // MLP half.
    b.fork(act);
    b.layer_norm("mlp.ln", act);
    if m.gated_mlp {
        b.linear("mlp.gate", (tokens, hidden, ffn), true, Output::Activation);
        b.linear("mlp.up", (tokens, hidden, ffn), false, Output::Activation);
        b.elementwise("mlp.swiglu", GATED_ACTIVATION, rules::swiglu_forward(tokens * ffn, dims.elem), tokens * ffn, 2);
        b.linear("mlp.down", (tokens, ffn, hidden), true, Output::Activation);
    } else {
        b.linear("mlp.fc1", (tokens, hidden, ffn), true, Output::Activation);
        b.elementwise("mlp.gelu", Primitive::Gelu, rules::activation_forward(Activation::Gelu, tokens * ffn, dims.elem), tokens * ffn, 1);
        b.linear("mlp.fc2", (tokens, ffn, hidden), true, Output::Activation);
    }
    b.tp_exit("mlp.tp_exit");
    b.dropout("mlp.dropout", act);
    b.residual("mlp.residual", act);

    InferencePass {
        derivation: BlockDerivation {
            invocations: b.invocations,
            memory: BlockMemory { weights: b.weights, act_working_space: b.act_working, ..BlockMemory::default() },
        },
        pass,
        new_tokens: new,
        context_tokens: context,
        matmul_weight_bytes: b.matmul_weights,
        kv_read_bytes: b.kv_read,
        kv_write_bytes: b.kv_write,
    }
}

// ------------------------------------------------------------------- facts

/// Facts of one pass of one block on one TP rank, under both oracles'
/// names: Calculon's `block_*` for the whole forward, `GenZ`'s
/// `per_gpu_layer_*` for matmuls only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferencePassFacts {
    /// Every operation of the pass (matmul, vector, all-reduce additions).
    pub block_fw_flops: u64,
    /// Read plus write bytes of every invocation.
    pub block_fw_mem_accessed: u64,
    /// All-reduce message bytes (whole tensor per collective).
    pub baseblock_fw_tp_size: u64,
    /// Weights including the replicated layer-norm parameters.
    pub block_weight_space: u64,
    pub block_act_working_space: u64,
    /// `per_gpu_layer_flops_gemm + per_gpu_layer_flops_attn_bmm`.
    pub per_gpu_layer_flops: u64,
    /// Projection and MLP matmuls (`Primitive::Matmul`).
    pub per_gpu_layer_flops_gemm: u64,
    /// The two attention batched matmuls (`Primitive::BatchMatmul`).
    pub per_gpu_layer_flops_attn_bmm: u64,
    /// Matmul weights only (no layer-norm parameters).
    pub per_gpu_layer_weight_bytes: u64,
    /// K and V cache bytes read by the attention.
    pub per_gpu_layer_kv_bytes_read: u64,
    /// K and V cache bytes appended by the pass.
    pub kv_bytes_written: u64,
    /// All-reduces issued (2 per block at t > 1, else 0).
    pub collectives: u64,
    /// Tokens per sequence attended over.
    pub context_tokens: u64,
}

impl InferencePassFacts {
    /// Sums one derived pass.
    #[must_use]
    pub fn from_pass(pass: &InferencePass) -> Self {
        let derivation = &pass.derivation;
        let totals: WorkTotals = derivation.invocations.iter().map(Into::into).collect();
        let sum = totals.phase(invocation_phase(pass.pass));
        let matmul_ops = |primitive: Primitive| -> u64 {
            derivation.invocations.iter().filter(|inv| inv.primitive == primitive).map(|inv| inv.ops).sum()
        };
        let gemm = matmul_ops(Primitive::Matmul);
        let attn = matmul_ops(Primitive::BatchMatmul);
        Self {
            block_fw_flops: sum.ops,
            block_fw_mem_accessed: sum.bytes,
            baseblock_fw_tp_size: sum.message_bytes,
            block_weight_space: derivation.memory.weights,
            block_act_working_space: derivation.memory.act_working_space,
            per_gpu_layer_flops: gemm + attn,
            per_gpu_layer_flops_gemm: gemm,
            per_gpu_layer_flops_attn_bmm: attn,
            per_gpu_layer_weight_bytes: pass.matmul_weight_bytes,
            per_gpu_layer_kv_bytes_read: pass.kv_read_bytes,
            kv_bytes_written: pass.kv_write_bytes,
            collectives: sum.collectives,
            context_tokens: pass.context_tokens,
        }
    }

    /// Calculon's prefill-oracle fields, with their names.
    #[must_use]
    pub fn calculon_fields(&self) -> [(&'static str, u64); 5] {
        [
            ("block_fw_flops", self.block_fw_flops),
            ("block_fw_mem_accessed", self.block_fw_mem_accessed),
            ("baseblock_fw_tp_size", self.baseblock_fw_tp_size),
            ("block_weight_space", self.block_weight_space),
            ("block_act_working_space", self.block_act_working_space),
        ]
    }

    /// `GenZ`'s oracle fields, with their names.
    #[must_use]
    pub fn genz_fields(&self) -> [(&'static str, u64); 5] {
        [
            ("per_gpu_layer_flops", self.per_gpu_layer_flops),
            ("per_gpu_layer_flops_gemm", self.per_gpu_layer_flops_gemm),
            ("per_gpu_layer_flops_attn_bmm", self.per_gpu_layer_flops_attn_bmm),
            ("per_gpu_layer_weight_bytes", self.per_gpu_layer_weight_bytes),
            ("per_gpu_layer_kv_bytes_read", self.per_gpu_layer_kv_bytes_read),
        ]
    }
}

/// Sums over every decode step of the run, per block per TP rank: steps at
/// contexts `prompt+1 ..= prompt+generated`. All zero without generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecodeRunTotals {
    /// Decode steps, `generated_tokens`.
    pub steps: u64,
    pub flops: u64,
    pub flops_gemm: u64,
    pub flops_attn_bmm: u64,
    pub mem_accessed: u64,
    pub tp_message_bytes: u64,
    pub collectives: u64,
    pub weight_bytes_read: u64,
    pub kv_bytes_read: u64,
    pub kv_bytes_written: u64,
}

impl DecodeRunTotals {
    /// Σ of `steps` step facts whose every field is affine in the context:
    /// `steps·(first + last)/2`, exact because `steps·(first + last)` is even
    /// for an arithmetic sequence of integers.
    fn arithmetic(steps: u64, first: &InferencePassFacts, last: &InferencePassFacts) -> Self {
        let series = |a: u64, b: u64| -> u64 {
            let total = u128::from(steps) * (u128::from(a) + u128::from(b)) / 2;
            u64::try_from(total).unwrap_or(u64::MAX)
        };
        Self {
            steps,
            flops: series(first.block_fw_flops, last.block_fw_flops),
            flops_gemm: series(first.per_gpu_layer_flops_gemm, last.per_gpu_layer_flops_gemm),
            flops_attn_bmm: series(first.per_gpu_layer_flops_attn_bmm, last.per_gpu_layer_flops_attn_bmm),
            mem_accessed: series(first.block_fw_mem_accessed, last.block_fw_mem_accessed),
            tp_message_bytes: series(first.baseblock_fw_tp_size, last.baseblock_fw_tp_size),
            collectives: series(first.collectives, last.collectives),
            weight_bytes_read: series(first.per_gpu_layer_weight_bytes, last.per_gpu_layer_weight_bytes),
            kv_bytes_read: series(first.per_gpu_layer_kv_bytes_read, last.per_gpu_layer_kv_bytes_read),
            kv_bytes_written: series(first.kv_bytes_written, last.kv_bytes_written),
        }
    }
}

/// Static inference facts of one block on one TP rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferenceFacts {
    /// The prefill forward (Calculon's and `GenZ`'s `prefill`).
    pub prefill: InferencePassFacts,
    /// The last decode step, at context `prompt + generated` (`GenZ`'s
    /// `decode_at_final_context`); `None` without generated tokens.
    pub decode_at_final_context: Option<InferencePassFacts>,
    /// KV cache after the prefill (`prompt` tokens).
    pub kv_cache_bytes_after_prefill: u64,
    /// KV cache at the end of generation (`prompt + generated` tokens).
    pub kv_cache_bytes_end_of_generation: u64,
    /// All decode steps of the run.
    pub decode_run: DecodeRunTotals,
    /// Blocks per pipeline rank: multiply per-block facts by it for a rank.
    pub blocks_per_rank: u64,
}

impl InferenceFacts {
    /// Derives the prefill and the first and last decode steps of `spec`.
    ///
    /// # Errors
    /// The first rule of [`InferenceSpec::validate`] that `spec` violates.
    pub fn from_spec(spec: &InferenceSpec) -> Result<Self, SpecError> {
        let prefill = InferencePassFacts::from_pass(&derive_prefill_pass(spec)?);
        let (prompt, generated) = (spec.workload.prompt_tokens, spec.workload.generated_tokens);
        let final_context = prompt + generated;
        let (decode_at_final_context, decode_run) = if generated == 0 {
            (None, DecodeRunTotals::default())
        } else {
            let step = |context| derive_decode_pass(spec, context).map(|p| InferencePassFacts::from_pass(&p));
            let first = step(prompt + 1)?;
            let last = step(final_context)?;
            (Some(last), DecodeRunTotals::arithmetic(generated, &first, &last))
        };
        Ok(Self {
            prefill,
            decode_at_final_context,
            kv_cache_bytes_after_prefill: kv_cache_bytes(spec, prompt),
            kv_cache_bytes_end_of_generation: kv_cache_bytes(spec, final_context),
            decode_run,
            blocks_per_rank: spec.blocks_per_rank(),
        })
    }
}
