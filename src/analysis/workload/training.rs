//! The workload algebra: one decoder block of a spec derived into
//! primitive invocations, through the shared op rules ([`super::rules`]).
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

use super::invocation::BlockDerivation;
use super::rules::{Residency, RuleBuilder, Runs, Strategy, OWNED_STORED, SHARED_UNSTORED};
use super::spec::{Norm, Recompute, SpecError, TrainingSpec};

/// Derives one decoder block of `spec` (validated first).
///
/// # Errors
/// The first rule of [`TrainingSpec::validate`] that `spec` violates; a
/// valid spec always derives, without panicking or overflowing.
pub fn derive_training_block(spec: &TrainingSpec) -> Result<BlockDerivation, SpecError> {
    spec.validate_counted()?;
    Ok(derive_validated(spec))
}

/// The weight gradients of the spec's block that are partial sums over the
/// TP ranks (see [`super::PartialGradient`]), as the ModelIR derivation
/// finds them in the decomposed block: both norms' parameters under
/// sequence parallelism, and the key and value weights when their heads
/// are replicated over TP. Calculon counts neither reduction.
///
/// # Errors
/// When the spec is not valid.
pub fn partial_gradients(spec: &TrainingSpec) -> Result<Vec<super::PartialGradient>, SpecError> {
    spec.validate_counted()?;
    let dims = Dims::new(spec);
    let mut out = Vec::new();
    if dims.tp <= 1 {
        return Ok(out);
    }
    let partial = |source: &str, params: &[&str], elems: u64, groups: u64| super::PartialGradient {
        source: source.to_string(),
        params: params.iter().map(|p| format!("{source}.{p}")).collect(),
        elems,
        groups,
    };
    let layer_norm = spec.model.norm == Norm::LayerNorm;
    let norm = |source: &str| {
        if layer_norm {
            partial(source, &["scale", "bias"], 2 * dims.hidden, 1)
        } else {
            partial(source, &["scale"], dims.hidden, 1)
        }
    };
    let [attn_norm, mlp_norm] = norm_ids(layer_norm);
    if dims.sequence_parallel {
        out.push(norm(attn_norm));
    }
    if dims.kv_replicated() {
        let groups = dims.kv_heads;
        for source in ["attn.k", "attn.v"] {
            out.push(partial(source, &["weight"], dims.hidden * dims.kv_local_width(), groups));
        }
    }
    if dims.sequence_parallel {
        out.push(norm(mlp_norm));
    }
    Ok(out)
}

/// The block's two norms' op ids (as `model-decompose-transformer` names
/// them): `attn.ln` / `mlp.ln`, or `attn.norm` / `mlp.norm` for RMS norms.
const fn norm_ids(layer_norm: bool) -> [&'static str; 2] {
    if layer_norm {
        ["attn.ln", "mlp.ln"]
    } else {
        ["attn.norm", "mlp.norm"]
    }
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
    kv_heads: u64,
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
            kv_heads: m.kv_heads(),
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

    /// Query (and output projection) width `a·d`.
    fn query_width(&self) -> u64 {
        self.heads * self.head_dim
    }

    /// Key and value width `kv·d`.
    fn kv_width(&self) -> u64 {
        self.kv_heads * self.head_dim
    }

    /// Whether the KV heads are replicated over TP (fewer of them than
    /// ranks) rather than split.
    fn kv_replicated(&self) -> bool {
        !self.kv_heads.is_multiple_of(self.tp)
    }

    /// Key and value width on one rank: `kv/t` heads, or one whole head
    /// when they are replicated.
    fn kv_local_width(&self) -> u64 {
        if self.kv_replicated() {
            self.head_dim
        } else {
            self.kv_width() / self.tp
        }
    }
}

/// Derivation proper; `spec` must have passed [`TrainingSpec::validate`].
/// The block the spec's model decomposes into (`model-decompose-transformer`),
/// op by op in its program order, through the rules every derivation
/// shares: Calculon's GPT block (layer norms, GeLU MLP, dropouts), or the
/// Llama family's (RMS norms, grouped-query attention with RoPE, a SwiGLU
/// MLP, no dropout), or any mix the spec states.
fn derive_validated(spec: &TrainingSpec) -> BlockDerivation {
    let dims = Dims::new(spec);
    let (model, map) = (&spec.model, &spec.mapping);
    let full = map.recompute == Recompute::Full;
    let attn_core = matches!(map.recompute, Recompute::Full | Recompute::AttnOnly);
    // Whether the full-size input of the column-parallel linears is dropped
    // after the forward pass (Calculon's `recompute_ag_flag`): it is then
    // re-gathered, and the fork/linear stop storing it.
    let drop_attn_input = attn_core || map.seq_par_ag_redo;
    let drop_mlp_input = full || map.seq_par_ag_redo;
    let dropout = model.dropout_probability().is_some();
    let layer_norm = model.norm == Norm::LayerNorm;

    let (t, tokens, hidden) = (dims.tp, dims.tokens(), dims.hidden);
    let boundary = dims.boundary_activation();
    let activation = dims.activation();
    let runs = Runs::recomputed(full);
    let tiled = map.tp_overlap.is_overlapped();
    let (q_width, kv_width) = (dims.query_width(), dims.kv_width());

    let mut b = RuleBuilder::new(Strategy::of(spec));
    let norm = |b: &mut RuleBuilder, id: &str| {
        if layer_norm {
            b.layer_norm(id, boundary, 2 * hidden, runs, SHARED_UNSTORED);
        } else {
            b.rms_norm(id, boundary, hidden, runs, SHARED_UNSTORED);
        }
    };
    let [attn_norm, mlp_norm] = norm_ids(layer_norm);

    // Attention half.
    b.fork("attn.fork", boundary, 2, true);
    norm(&mut b, attn_norm);
    let kv_local = dims.kv_local_width();
    if tiled && dims.kv_replicated() {
        // Calculon's tiled multi-query attention: the queries are one tiled
        // linear; the replicated keys and values read its gathered input
        // through a fork of their own and are not tiled (no TP split).
        b.fork("attn.qkv_fork", activation, 2, !drop_attn_input);
        b.tiled_linear("attn.q", "attn.tp_entry", (tokens, hidden, q_width), false, full, drop_attn_input);
        for source in ["attn.k", "attn.v"] {
            b.linear(source, (tokens, hidden, kv_local), runs, SHARED_UNSTORED);
        }
    } else if tiled {
        // Calculon fuses Q, K and V into one tiled linear.
        b.tiled_linear("attn.qkv", "attn.tp_entry", (tokens, hidden, q_width + 2 * kv_width), false, full, drop_attn_input);
    } else {
        b.tp_entry("attn.tp_entry", activation, drop_attn_input);
        b.fork("attn.qkv_fork", activation, 3, !drop_attn_input);
        for (source, width) in [("attn.q", q_width / t), ("attn.k", kv_local), ("attn.v", kv_local)] {
            b.linear(source, (tokens, hidden, width), runs, SHARED_UNSTORED);
        }
    }
    if model.rope {
        b.rope("attn.q.rope", tokens * q_width / t, full);
        b.rope("attn.k.rope", tokens * kv_local, full);
    }
    let (head_batch, s, hd) = (dims.local_head_batch(), dims.seq, dims.head_dim);
    b.batch_matmul("attn.scores", (head_batch, s, hd, s), attn_core, !attn_core);
    // The probabilities are dropped when their reader is recomputed too
    // (the probability dropout, or without it the context product).
    let probs_reader_recomputed = if dropout { attn_core } else { full };
    b.softmax("attn.softmax", dims.scores(), attn_core, !(attn_core && probs_reader_recomputed));
    if dropout {
        b.dropout("attn.prob_dropout", dims.scores(), attn_core, !attn_core);
    }
    b.batch_matmul("attn.context", (head_batch, s, s, hd), full, true);
    if tiled {
        b.tiled_linear("attn.proj", "attn.tp_exit", (tokens, q_width, hidden), true, full, full);
    } else {
        b.linear("attn.proj", (tokens, q_width / t, hidden), runs, OWNED_STORED);
        b.tp_exit("attn.tp_exit", activation, full);
    }
    if dropout {
        b.dropout("attn.dropout", boundary, full, true);
    }
    b.residual("attn.residual", boundary, full);

    // MLP half.
    b.fork("mlp.fork", boundary, 2, true);
    norm(&mut b, mlp_norm);
    let ffn_local = dims.ffn / t;
    let down = if model.gated_mlp {
        if tiled {
            b.tiled_linear("mlp.gateup", "mlp.tp_entry", (tokens, hidden, 2 * dims.ffn), false, full, drop_mlp_input);
        } else {
            b.tp_entry("mlp.tp_entry", activation, drop_mlp_input);
            b.fork("mlp.gate_up_fork", activation, 2, !drop_mlp_input);
            for source in ["mlp.gate", "mlp.up"] {
                b.linear(source, (tokens, hidden, ffn_local), runs, SHARED_UNSTORED);
            }
        }
        b.swiglu("mlp.swiglu", tokens * ffn_local, full, map.fused_activation);
        "mlp.down"
    } else {
        if tiled {
            b.tiled_linear("mlp.fc1", "mlp.tp_entry", (tokens, hidden, dims.ffn), false, full, drop_mlp_input);
        } else {
            b.tp_entry("mlp.tp_entry", activation, drop_mlp_input);
            let fc1_input = Residency { shared: false, stored: !drop_mlp_input };
            b.linear("mlp.fc1", (tokens, hidden, ffn_local), runs, fc1_input);
        }
        b.gelu("mlp.gelu", tokens * ffn_local, full, map.fused_activation);
        "mlp.fc2"
    };
    if tiled {
        b.tiled_linear(down, "mlp.tp_exit", (tokens, dims.ffn, hidden), true, full, full);
    } else {
        b.linear(down, (tokens, ffn_local, hidden), runs, OWNED_STORED);
        b.tp_exit("mlp.tp_exit", activation, full);
    }
    if dropout {
        b.dropout("mlp.dropout", boundary, full, true);
    }
    b.residual("mlp.residual", boundary, full);

    b.finish(activation * spec.workload.datatype.bytes())
}
