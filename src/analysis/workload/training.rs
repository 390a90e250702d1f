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
use super::spec::{Recompute, SpecError, TrainingSpec};

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
