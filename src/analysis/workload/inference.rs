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

pub use super::serving::InferencePass;

use super::facts::WorkTotals;
use super::inference_spec::{InferencePhase, InferenceSpec};
use super::invocation::{BlockDerivation, Phase, Primitive};
use super::rules::Activation;
use super::serving::{AttentionDims, Output, ServedBuilder};
use super::spec::SpecError;

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

/// Derivation proper; `spec` must be valid and the lengths in range. The
/// sizes are one rank's; products stay below 2^64 because validation
/// bounds `b·seq_len·h·max(h, f, seq_len)`.
fn derive_validated(spec: &InferenceSpec, pass: InferencePhase, new: u64, context: u64) -> InferencePass {
    let (m, map) = (&spec.model, &spec.mapping);
    let tokens = spec.workload.batch * new;
    let act = tokens * m.hidden;
    let hidden = m.hidden;
    let heads = m.heads / map.tp;
    let kv_heads = spec.kv_heads_per_rank();
    let q_width = heads * m.head_dim;
    let kv_width = kv_heads * m.head_dim;
    let ffn = m.ffn_hidden / map.tp;
    let attention = AttentionDims { batch: spec.workload.batch, heads, kv_heads, head_dim: m.head_dim, new, context };
    let scores = attention.scores();
    let elem = spec.workload.datatype.bytes();
    let mut b = ServedBuilder::new(invocation_phase(pass), map.tp, elem, spec.workload.kv_datatype().bytes());

    // Attention half. The TP entry (`f`) is the identity in the forward pass.
    b.fork(act);
    b.layer_norm("attn.ln", act, 2 * hidden, false);
    b.fork(act); // the Q/K/V input, shared by the three projections
    b.linear("attn.q", (tokens, hidden, q_width), false, Output::Activation);
    b.linear("attn.k", (tokens, hidden, kv_width), false, Output::KvCache);
    b.linear("attn.v", (tokens, hidden, kv_width), false, Output::KvCache);
    b.scores("attn.scores", attention, true);
    b.softmax("attn.softmax", scores, true);
    b.dropout("attn.prob_dropout", scores);
    b.context("attn.context", attention, true);
    b.linear("attn.proj", (tokens, q_width, hidden), true, Output::Activation);
    b.tp_exit("attn.tp_exit", act);
    b.dropout("attn.dropout", act);
    b.residual("attn.residual", act);

    // MLP half.
    b.fork(act);
    b.layer_norm("mlp.ln", act, 2 * hidden, false);
    if m.gated_mlp {
        b.linear("mlp.gate", (tokens, hidden, ffn), true, Output::Activation);
        b.linear("mlp.up", (tokens, hidden, ffn), false, Output::Activation);
        b.swiglu("mlp.swiglu", tokens * ffn, 2);
        b.linear("mlp.down", (tokens, ffn, hidden), true, Output::Activation);
    } else {
        b.linear("mlp.fc1", (tokens, hidden, ffn), true, Output::Activation);
        b.activation("mlp.gelu", Activation::Gelu, tokens * ffn, true);
        b.linear("mlp.fc2", (tokens, ffn, hidden), true, Output::Activation);
    }
    b.tp_exit("mlp.tp_exit", act);
    b.dropout("mlp.dropout", act);
    b.residual("mlp.residual", act);
    b.finish(pass, new, context)
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
    /// Blocks on the fullest pipeline rank, `ceil(blocks / pp)` (the first
    /// `blocks mod pp` ranks of an uneven pipeline hold one more): multiply
    /// per-block facts by it for that rank.
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
