//! What a trained decoder block is made of, said once for the importer and
//! the decomposition: its dimensions and semantic choices (the coarse
//! `model.decoder_training`'s attributes, or a spec's model), its
//! parameters (ids of EXECUTION.md, shapes, the coarse op's operand each
//! one is) and the ids of the ops that depend on the choices.

use crate::analysis::workload::{Datatype, Norm, Optimizer, OptimizerKind, TrainingSpec};

/// A training block's dimensions and semantics.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainingBlock {
    pub hidden: u64,
    pub ffn_hidden: u64,
    pub seq_len: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub microbatch: u64,
    pub datatype: Datatype,
    pub norm: Norm,
    pub gated_mlp: bool,
    /// RoPE's base, when queries and keys are rotated.
    pub rope_theta: Option<f64>,
    /// Dropout probability, when the block has dropout ops.
    pub dropout: Option<f64>,
    pub optimizer: Optimizer,
}

/// One parameter of the block: its id (EXECUTION.md's name without the
/// `blocks.<i>.` prefix), shape, the coarse op's operand (ODS name) and
/// what the shape is made of (for diagnostics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameter {
    pub id: &'static str,
    pub shape: Vec<u64>,
    pub operand: &'static str,
    pub made_of: &'static str,
}

impl TrainingBlock {
    /// The block a (validated) spec trains.
    #[must_use]
    pub fn of_spec(spec: &TrainingSpec) -> Self {
        let m = &spec.model;
        Self {
            hidden: m.hidden,
            ffn_hidden: m.ffn_hidden,
            seq_len: m.seq_len,
            heads: m.heads,
            kv_heads: m.kv_heads(),
            head_dim: m.head_dim,
            microbatch: spec.workload.microbatch,
            datatype: spec.workload.datatype,
            norm: m.norm,
            gated_mlp: m.gated_mlp,
            rope_theta: m.rope_base(),
            dropout: m.dropout_probability(),
            optimizer: spec.workload.optimizer(),
        }
    }

    /// The two norms' op ids: `attn.ln`/`mlp.ln` (layer norm) or
    /// `attn.norm`/`mlp.norm` (RMS norm).
    #[must_use]
    pub fn norm_ids(&self) -> [&'static str; 2] {
        match self.norm {
            Norm::LayerNorm => ["attn.ln", "mlp.ln"],
            Norm::RmsNorm => ["attn.norm", "mlp.norm"],
        }
    }

    /// The parameters in the coarse op's operand order.
    #[must_use]
    pub fn parameters(&self) -> Vec<Parameter> {
        let (h, f) = (self.hidden, self.ffn_hidden);
        let (q, kv) = (self.heads * self.head_dim, self.kv_heads * self.head_dim);
        let p = |id, shape: &[u64], operand, made_of| Parameter { id, shape: shape.to_vec(), operand, made_of };
        let layer = self.norm == Norm::LayerNorm;
        let mut out = vec![p(if layer { "attn.ln.scale" } else { "attn.norm.scale" }, &[h], "ln1_scale", "hidden")];
        if layer {
            out.push(p("attn.ln.bias", &[h], "ln1_bias", "hidden"));
        }
        out.extend([
            p("attn.q.weight", &[h, q], "q_weight", "hidden x heads*head_dim"),
            p("attn.k.weight", &[h, kv], "k_weight", "hidden x kv_heads*head_dim"),
            p("attn.v.weight", &[h, kv], "v_weight", "hidden x kv_heads*head_dim"),
            p("attn.proj.weight", &[q, h], "proj_weight", "heads*head_dim x hidden"),
            p(if layer { "mlp.ln.scale" } else { "mlp.norm.scale" }, &[h], "ln2_scale", "hidden"),
        ]);
        if layer {
            out.push(p("mlp.ln.bias", &[h], "ln2_bias", "hidden"));
        }
        if self.gated_mlp {
            out.push(p("mlp.up.weight", &[h, f], "fc1_weight", "hidden x ffn_hidden"));
            out.push(p("mlp.down.weight", &[f, h], "fc2_weight", "ffn_hidden x hidden"));
            out.push(p("mlp.gate.weight", &[h, f], "gate_weight", "hidden x ffn_hidden"));
        } else {
            out.push(p("mlp.fc1.weight", &[h, f], "fc1_weight", "hidden x ffn_hidden"));
            out.push(p("mlp.fc2.weight", &[f, h], "fc2_weight", "ffn_hidden x hidden"));
        }
        out
    }

    /// The optimizer state each parameter keeps, in the order of
    /// `model.optimizer_step`'s `state`: the fp32 master copy below fp32,
    /// then Adam's two moments. Suffixes of the parameter's id.
    #[must_use]
    pub fn state_suffixes(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.datatype != Datatype::Float32 {
            out.push("master");
        }
        if self.optimizer.kind == OptimizerKind::Adam {
            out.extend(["adam_m", "adam_v"]);
        }
        out
    }

    /// fp32 elements of the flat optimizer state the coarse op carries.
    #[must_use]
    pub fn flat_state_elements(&self) -> u64 {
        let params: u64 = self.parameters().iter().map(|p| p.shape.iter().product::<u64>()).sum();
        params * self.state_suffixes().len() as u64
    }
}
