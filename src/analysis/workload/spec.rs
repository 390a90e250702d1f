//! Typed training specifications: model, workload and mapping.
//!
//! The JSON field names are those of the Calculon oracle cases
//! (`test/oracles/calculon/seqsel-table5.json`), so each case's
//! `model`, `workload` and `mapping` objects deserialize directly. Unknown,
//! missing or mistyped fields are rejected by serde; semantic rules are
//! checked by [`TrainingSpec::validate`], one [`SpecError`] variant per rule.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Largest value allowed for
/// `batch·seq·hidden·max(hidden, ffn_hidden, seq, heads·head_dim)`.
///
/// Every per-invocation quantity of the derivation is at most 14× that
/// product times 4 bytes, and a phase sums fewer than 32 invocations, so
/// 2^54 keeps every sum below 2^64 with room to spare. The largest oracle
/// case (megatron-1T) is about 2^42.3.
pub const MAX_WORK_SCALE: u128 = 1 << 54;

/// Largest value any integer field of a spec may hold: 2^53, the largest
/// integer every consumer (JSON readers, `f64` estimates, MLIR's `i64`
/// attributes) represents exactly. One rule for every field and command.
pub const MAX_SPEC_INTEGER: u64 = 1 << 53;

/// Largest logical world (`tp × pp × dp`, or `tp × pp` for inference) a
/// spec may ask for: 2^24 ranks, far beyond any machine built, and small
/// enough that per-rank tables stay cheap.
pub const MAX_WORLD_SIZE: u64 = 1 << 24;

/// Dimensions and semantics of a decoder-only Transformer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Human-readable model name (not used by the derivation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Model width `h`; `mapping.tp` divides it.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub hidden: u64,
    /// MLP inner width `f`; `mapping.tp` divides it.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub ffn_hidden: u64,
    /// Sequence length `s` in tokens; for inference, the longest context
    /// served. Required for training. Absent (inference only):
    /// `workload.prompt_tokens + workload.generated_tokens`.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub seq_len: u64,
    /// Query heads `a`; `mapping.tp` divides it.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub heads: u64,
    /// Per-head width `d` (Megatron's `kv_channels`, Calculon's
    /// `attn_size`); the attention width `a·d` may differ from `h`.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub head_dim: u64,
    /// Decoder blocks in the whole model, at least `mapping.pp`; when
    /// `mapping.pp` does not divide it, the first `blocks mod pp` stages
    /// hold one block more (Calculon's and Megatron-LM's uneven
    /// pipeline).
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub blocks: u64,
    /// Vocabulary size, recorded; embeddings and the LM head are not part
    /// of a block and are not counted. Absent: unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub vocab: Option<u64>,
    /// Key/value heads for grouped-query attention (1: multi-query); it
    /// divides `heads`. Training splits them over the TP ranks when TP
    /// divides them and replicates them (one head per rank) when TP is a
    /// multiple of them; inference replicates KV heads when there are fewer
    /// than TP ranks. Absent: `heads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub kv_heads: Option<u64>,
    /// SwiGLU-style gated MLP: `silu(x·gate) ⊙ (x·up) · down`, gate and up
    /// `ffn_hidden` wide.
    #[serde(default)]
    pub gated_mlp: bool,
    /// The block's normalisation (`layer_norm`, Calculon's and GPT's, or
    /// `rms_norm`, Llama's).
    #[serde(default, skip_serializing_if = "Norm::is_layer_norm")]
    #[schemars(extend("default" = "layer_norm"))]
    pub norm: Norm,
    /// Rotary position embeddings of queries and keys (rotate-half pairs;
    /// `head_dim` must be even).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(extend("default" = false))]
    pub rope: bool,
    /// RoPE's base, finite and greater than 1; only with `rope`. Absent:
    /// 10000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_theta: Option<Real>,
    /// Dropout probability in `[0, 1)`, or `false` for no dropout ops.
    /// Absent: Calculon's GPT block's three dropouts at `p = 0` for a
    /// layer-norm, ungated block; none for any other (Llama and its kin
    /// train without dropout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropout: Option<Dropout>,
}

impl ModelSpec {
    /// Key/value heads, defaulting to the query heads (multi-head attention).
    #[must_use]
    pub fn kv_heads(&self) -> u64 {
        self.kv_heads.unwrap_or(self.heads)
    }

    /// The dropout probability of the block's dropout ops, or `None` when
    /// the block has none (see [`ModelSpec::dropout`]).
    #[must_use]
    pub fn dropout_probability(&self) -> Option<f64> {
        match self.dropout {
            Some(Dropout::Probability(p)) => Some(p.0),
            Some(Dropout::Off(_)) => None,
            None if self.norm == Norm::LayerNorm && !self.gated_mlp => Some(0.0),
            None => None,
        }
    }

    /// RoPE's base when the block has rotary embeddings.
    #[must_use]
    pub fn rope_base(&self) -> Option<f64> {
        self.rope.then(|| self.rope_theta.map_or(DEFAULT_ROPE_THETA, |t| t.0))
    }
}

/// RoPE's base when a spec gives none (Llama's and EXECUTION.md's).
pub const DEFAULT_ROPE_THETA: f64 = 10000.0;

/// A finite real number of a spec (a probability, a rate, a base). Specs
/// hold no NaN (validation rejects non-finite values), so equality is
/// total.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Real(pub f64);

impl Eq for Real {}

impl std::fmt::Display for Real {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Normalisation of a decoder block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Norm {
    #[default]
    LayerNorm,
    RmsNorm,
}

impl Norm {
    fn is_layer_norm(&self) -> bool {
        *self == Self::LayerNorm
    }
}

/// `model.dropout`: a probability, or `false` for no dropout ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Dropout {
    Probability(Real),
    /// Only `false` is valid (validation rejects `true`).
    Off(bool),
}

/// The optimizer's update rule (`workload.optimizer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OptimizerKind {
    Sgd,
    Adam,
}

impl OptimizerKind {
    /// The spec's spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Sgd => "sgd",
            Self::Adam => "adam",
        }
    }
}

/// `workload.optimizer`: `{"kind": "sgd", "lr": η}` or `{"kind": "adam",
/// "lr": η, "beta1": β1, "beta2": β2, "eps": ε}` (the betas and `eps`
/// default to `torch.optim.Adam`'s 0.9, 0.999 and 1e-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptimizerSpec {
    /// The update rule.
    pub kind: OptimizerKind,
    /// Learning rate η, finite and positive.
    pub lr: Real,
    /// Adam's first-moment decay β1 in `[0, 1)`; Adam only. Absent: 0.9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta1: Option<Real>,
    /// Adam's second-moment decay β2 in `[0, 1)`; Adam only. Absent: 0.999.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta2: Option<Real>,
    /// Adam's ε, finite and positive; Adam only. Absent: 1e-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eps: Option<Real>,
}

/// An optimizer with every hyperparameter resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Optimizer {
    pub kind: OptimizerKind,
    pub lr: f64,
    /// Adam's (unused by SGD).
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
}

impl Optimizer {
    /// Adam as Blueprint counts it when a spec names no optimizer.
    pub const DEFAULT: Self = Self { kind: OptimizerKind::Adam, lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8 };
}

/// A Calculon model file (`models/*.json` of its repository) as it is:
/// Calculon's field names for the same dimensions.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct CalculonModel {
    hidden: u64,
    feedforward: u64,
    seq_size: u64,
    attn_heads: u64,
    attn_size: u64,
    num_blocks: u64,
}

/// The fields of a Hugging Face `config.json` of a Llama-family decoder
/// (Llama, Mistral, Qwen2) that state its blocks; the rest of the file is
/// read past.
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct HuggingFaceConfig {
    model_type: Option<String>,
    hidden_size: u64,
    intermediate_size: u64,
    num_attention_heads: u64,
    num_key_value_heads: Option<u64>,
    num_hidden_layers: u64,
    max_position_embeddings: Option<u64>,
    rope_theta: Option<f64>,
    head_dim: Option<u64>,
    hidden_act: Option<String>,
    vocab_size: Option<u64>,
}

/// The `model_type`s of Hugging Face configs read as Llama-family blocks.
pub const HUGGING_FACE_MODEL_TYPES: [&str; 3] = ["llama", "mistral", "qwen2"];

impl HuggingFaceConfig {
    /// The block: RMS norms, grouped-query attention with RoPE, a SwiGLU
    /// MLP, no dropout; the sequence is `seq_len`, else the config's
    /// `max_position_embeddings`.
    fn model(self, seq_len: Option<u64>) -> Result<ModelSpec, SpecError> {
        let bad = |message: String| Err(SpecError::HuggingFace(message));
        match self.model_type.as_deref() {
            Some(t) if HUGGING_FACE_MODEL_TYPES.contains(&t) => {}
            other => {
                return bad(format!(
                    "model_type {} is not a decoder Blueprint reads from a Hugging Face config (it reads {})",
                    other.map_or("(none)".to_string(), |t| format!("'{t}'")),
                    HUGGING_FACE_MODEL_TYPES.join(", ")
                ))
            }
        }
        if let Some(act) = self.hidden_act.as_deref().filter(|a| !["silu", "swish"].contains(a)) {
            return bad(format!("hidden_act '{act}' is not SiLU: the Llama family's MLP is SwiGLU"));
        }
        let head_dim = match self.head_dim {
            Some(d) => d,
            None if self.num_attention_heads > 0 && self.hidden_size.is_multiple_of(self.num_attention_heads) => {
                self.hidden_size / self.num_attention_heads
            }
            None => {
                return bad(format!(
                    "hidden_size {} is not a multiple of num_attention_heads {} and the config has no head_dim",
                    self.hidden_size, self.num_attention_heads
                ))
            }
        };
        let Some(seq_len) = seq_len.or(self.max_position_embeddings) else {
            return bad("the config has no max_position_embeddings: give the sequence length (--seq-len)".into());
        };
        Ok(ModelSpec {
            name: None,
            hidden: self.hidden_size,
            ffn_hidden: self.intermediate_size,
            seq_len,
            heads: self.num_attention_heads,
            head_dim,
            blocks: self.num_hidden_layers,
            vocab: self.vocab_size,
            kv_heads: self.num_key_value_heads,
            gated_mlp: true,
            norm: Norm::RmsNorm,
            rope: true,
            rope_theta: self.rope_theta.map(Real),
            dropout: None,
        })
    }
}

impl ModelSpec {
    /// Reads a model: Blueprint's model JSON (this struct's fields), the
    /// `model` of a training spec (`{model, workload, mapping}`), a
    /// Calculon model file as it is (`hidden`, `feedforward`, `seq_size`,
    /// `attn_heads`, `attn_size`, `num_blocks`), recognised by its
    /// `num_blocks` field, or a Hugging Face `config.json` of a Llama,
    /// Mistral or Qwen2 model, recognised by its `num_hidden_layers`.
    /// `name` names a model that states none. The model is validated
    /// ([`ModelSpec::validate`]).
    ///
    /// # Errors
    /// [`SpecError::Parse`] naming the offending field (serde's path, line
    /// and column), or the first rule the model violates.
    pub fn from_any_json(json: &str, name: Option<&str>) -> Result<Self, SpecError> {
        Self::from_any_json_with(json, name, None)
    }

    /// [`ModelSpec::from_any_json`] with the sequence length `seq_len`
    /// instead of the file's (required for a Hugging Face config without
    /// `max_position_embeddings`).
    ///
    /// # Errors
    /// As [`ModelSpec::from_any_json`].
    pub fn from_any_json_with(json: &str, name: Option<&str>, seq_len: Option<u64>) -> Result<Self, SpecError> {
        Self::read_any_json(json, name, seq_len).map_err(|error| match error {
            SpecError::Parse(message) => SpecError::ModelParse(message),
            other => other,
        })
    }

    fn read_any_json(json: &str, name: Option<&str>, seq_len: Option<u64>) -> Result<Self, SpecError> {
        let value: serde_json::Value = serde_json::from_str(json)?;
        let mut model = if value.get("num_hidden_layers").is_some() {
            parse_json::<HuggingFaceConfig>(json)?.model(seq_len)?
        } else if value.get("num_blocks").is_some() {
            let c: CalculonModel = parse_json(json)?;
            Self {
                name: None,
                hidden: c.hidden,
                ffn_hidden: c.feedforward,
                seq_len: c.seq_size,
                heads: c.attn_heads,
                head_dim: c.attn_size,
                blocks: c.num_blocks,
                vocab: None,
                kv_heads: None,
                gated_mlp: false,
                norm: Norm::LayerNorm,
                rope: false,
                rope_theta: None,
                dropout: None,
            }
        } else if value.get("model").is_some() {
            parse_json::<TrainingSpec>(json)?.model
        } else {
            parse_json(json)?
        };
        if model.name.is_none() {
            model.name = name.map(str::to_string);
        }
        if let Some(seq_len) = seq_len {
            model.seq_len = seq_len;
        }
        model.validate()?;
        Ok(model)
    }
}

/// Element type of activations, weights and gradients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Datatype {
    /// One byte per element.
    Float8,
    /// IEEE half precision, two bytes.
    Float16,
    /// bfloat16, two bytes.
    Bfloat16,
    /// IEEE single precision, four bytes (what `blueprint-run --train-step` executes).
    Float32,
}

impl Datatype {
    /// The spec's spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Float8 => "float8",
            Self::Float16 => "float16",
            Self::Bfloat16 => "bfloat16",
            Self::Float32 => "float32",
        }
    }

    /// Bytes per element (Calculon's `System.TypeSizes`).
    #[must_use]
    pub const fn bytes(self) -> u64 {
        match self {
            Self::Float8 => 1,
            Self::Float16 | Self::Bfloat16 => 2,
            Self::Float32 => 4,
        }
    }
}

/// Batch sizes and datatype of one training step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainingWorkloadSpec {
    /// Sequences per optimizer step over all data-parallel replicas;
    /// `mapping.dp × microbatch` divides it.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub global_batch: u64,
    /// Sequences per microbatch on one pipeline.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub microbatch: u64,
    /// Element type of activations, weights and gradients.
    pub datatype: Datatype,
    /// The update rule (the training derivation counts Adam; SGD steps
    /// import and run). Absent: Adam, lr 1e-3, betas 0.9 and 0.999, eps
    /// 1e-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimizer: Option<OptimizerSpec>,
}

impl TrainingWorkloadSpec {
    /// The optimizer with its defaults filled in.
    #[must_use]
    pub fn optimizer(&self) -> Optimizer {
        match &self.optimizer {
            None => Optimizer::DEFAULT,
            Some(o) => Optimizer {
                kind: o.kind,
                lr: o.lr.0,
                beta1: o.beta1.map_or(Optimizer::DEFAULT.beta1, |b| b.0),
                beta2: o.beta2.map_or(Optimizer::DEFAULT.beta2, |b| b.0),
                eps: o.eps.map_or(Optimizer::DEFAULT.eps, |e| e.0),
            },
        }
    }
}

/// Activation recomputation policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Recompute {
    /// Store every activation the backward pass needs.
    None,
    /// Selective recomputation: recompute the attention score path.
    AttnOnly,
    /// Keep only the block input; recompute the whole forward pass.
    Full,
}

/// Tensor-parallel communication scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TpComm {
    /// Megatron tensor parallelism: all-reduce after each row-parallel linear.
    Ar,
    /// Sequence parallelism: all-gather before / reduce-scatter after.
    RsAg,
    /// All-reduce inside the block, but pipeline transfers send only the
    /// `1/tp` sequence slice and re-gather it on the next stage
    /// (Calculon's `p2p_rs_ag`).
    P2pRsAg,
}

/// Tensor-parallel communication overlapped with the linears it belongs to
/// (Calculon's `tensor_par_overlap`): the linear is split into `tp` tiles
/// whose communication runs while the next tile computes. The block changes
/// with it, as in Calculon: Q, K and V become one fused linear, and each TP
/// collective belongs to its linear instead of standing alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TpOverlap {
    /// Separate TP collectives, fully exposed.
    #[default]
    None,
    /// Ring-scheduled tiles: every tile's transfer hides behind a tile's compute.
    Ring,
    /// Pipelined tiles: as `ring`, plus one exposed transfer tile to fill the pipe.
    Pipe,
}

impl TpOverlap {
    /// The spec's spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Ring => "ring",
            Self::Pipe => "pipe",
        }
    }

    /// Whether the collectives are tiled with their linears.
    #[must_use]
    pub const fn is_overlapped(self) -> bool {
        !matches!(self, Self::None)
    }

    fn is_none(&self) -> bool {
        !self.is_overlapped()
    }
}

/// Logical mapping of the model onto TP × PP × DP ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainingMappingSpec {
    /// Tensor-parallel degree; `tp × pp × dp` is at most 2^24.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub tp: u64,
    /// Pipeline-parallel stages.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub pp: u64,
    /// Data-parallel replicas.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub dp: u64,
    /// Model chunks per pipeline stage (virtual stages; 1 = one chunk per
    /// stage); more than 1 needs `pp > 1` and must divide the blocks of the
    /// fullest stage, `⌈model.blocks / pp⌉` (Calculon's rule).
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub pipeline_interleaving: u64,
    /// Activation recomputation policy.
    pub recompute: Recompute,
    /// Tensor-parallel communication scheme (Calculon's names).
    pub tp_comm: TpComm,
    /// Redo the sequence-parallel all-gathers in the backward pass instead
    /// of storing their full-size outputs; needs `tp_comm = rs_ag` and not
    /// `recompute = full`.
    pub seq_par_ag_redo: bool,
    /// The activation fused into the preceding linear (its input is not
    /// stored).
    pub fused_activation: bool,
    /// Shard optimizer state and weight gradients over DP (ZeRO-1 style);
    /// needs `dp > 1`.
    pub optimizer_sharding: bool,
    /// TP communication tiled with its linears (Calculon's
    /// `tensor_par_overlap`); needs `tp > 1`.
    #[serde(default, skip_serializing_if = "TpOverlap::is_none")]
    #[schemars(extend("default" = "none"))]
    pub tp_overlap: TpOverlap,
    /// The pipeline schedule; when absent, `1f1b` for one chunk per stage
    /// and `interleaved_1f1b` for `pipeline_interleaving > 1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_schedule: Option<ScheduleKind>,
}

/// The closed choice of pipeline schedule, as a spec spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ScheduleKind {
    /// PipeDream-flush: warm up with forwards, then one forward / one
    /// backward, then drain.
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// Megatron's interleaved 1F1B over `pipeline_interleaving` chunks.
    #[serde(rename = "interleaved_1f1b")]
    Interleaved1F1B,
    /// Every forward, then every backward.
    #[serde(rename = "gpipe")]
    GPipe,
}

impl ScheduleKind {
    /// The spec's spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::OneFOneB => "1f1b",
            Self::Interleaved1F1B => "interleaved_1f1b",
            Self::GPipe => "gpipe",
        }
    }
}

/// Pipeline schedule of the mapping, resolved; closed so consumers must
/// handle every schedule explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PipelineSchedule {
    /// One forward / one backward, one model chunk per rank.
    OneFOneB,
    /// Interleaved 1F1B with `virtual_stages` model chunks per rank.
    Interleaved { virtual_stages: u64 },
    /// All forwards, then all backwards, one model chunk per rank.
    GPipe,
}

impl TpComm {
    /// The spec's spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Ar => "ar",
            Self::RsAg => "rs_ag",
            Self::P2pRsAg => "p2p_rs_ag",
        }
    }
}

/// `batch·seq·hidden·max(hidden, ffn_hidden, seq, heads·head_dim)`, the
/// quantity [`MAX_WORK_SCALE`] bounds (saturating in `u128`).
pub(super) fn work_scale(batch: u64, model: &ModelSpec) -> u128 {
    let widest =
        u128::from(model.hidden.max(model.ffn_hidden).max(model.seq_len)).max(u128::from(model.heads) * u128::from(model.head_dim));
    u128::from(batch).saturating_mul(u128::from(model.seq_len)).saturating_mul(u128::from(model.hidden)).saturating_mul(widest)
}

impl TrainingMappingSpec {
    /// The schedule kind: the one the spec names, else the default for
    /// its interleaving.
    #[must_use]
    pub fn schedule_kind(&self) -> ScheduleKind {
        self.pipeline_schedule.unwrap_or(if self.pipeline_interleaving > 1 {
            ScheduleKind::Interleaved1F1B
        } else {
            ScheduleKind::OneFOneB
        })
    }

    /// The pipeline schedule (valid after [`TrainingSpec::validate`]).
    #[must_use]
    pub fn schedule(&self) -> PipelineSchedule {
        match self.schedule_kind() {
            ScheduleKind::OneFOneB => PipelineSchedule::OneFOneB,
            ScheduleKind::Interleaved1F1B => PipelineSchedule::Interleaved { virtual_stages: self.pipeline_interleaving },
            ScheduleKind::GPipe => PipelineSchedule::GPipe,
        }
    }

    /// Whether activations are sequence-parallel (split by TP) outside the
    /// tensor-parallel regions.
    #[must_use]
    pub fn sequence_parallel(&self) -> bool {
        self.tp_comm == TpComm::RsAg
    }

    /// Whether pipeline transfers carry only the `1/tp` sequence slice
    /// (sequence parallelism, or `p2p_rs_ag`).
    #[must_use]
    pub fn pipeline_sequence_split(&self) -> bool {
        matches!(self.tp_comm, TpComm::RsAg | TpComm::P2pRsAg)
    }
}

/// One training job: what is trained, with which batch, mapped how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainingSpec {
    /// A name for the job (not used by the derivation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What is trained.
    pub model: ModelSpec,
    /// The batch, datatype and optimizer of one step.
    pub workload: TrainingWorkloadSpec,
    /// How the model is mapped onto TP × PP × DP ranks.
    pub mapping: TrainingMappingSpec,
}

/// A violated specification rule. Messages name the field and the rule.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// JSON syntax, unknown / missing field or unknown enum value; serde's
    /// message names the field, line and column.
    #[error("invalid training spec JSON: {0}")]
    Parse(String),
    /// Like [`SpecError::Parse`], for a model file (Blueprint's or Calculon's).
    #[error("invalid model JSON: {0}")]
    ModelParse(String),
    #[error("Hugging Face config: {0}")]
    HuggingFace(String),
    #[error("{field} must be positive, got 0")]
    NonPositive { field: &'static str },
    #[error("{field} = {value} exceeds the largest accepted integer 2^53 = {limit}")]
    IntegerOutOfRange { field: &'static str, value: u64, limit: u64 },
    #[error("model.kv_heads must divide model.heads, got kv_heads = {kv_heads}, heads = {heads}")]
    KvHeadsNotDivisor { kv_heads: u64, heads: u64 },
    #[error("{feature} is not counted by the training derivation yet: such a step imports, decomposes and runs (blueprint-run --train-step), but is not distributed, planned, estimated or searched")]
    NotCounted { feature: String },
    #[error("{feature} is not supported by the inference derivation")]
    NotCountedInference { feature: &'static str },
    #[error("{field} = {value} must be {rule}")]
    BadReal { field: &'static str, value: Real, rule: &'static str },
    #[error("model.dropout must be a probability in [0, 1) or false, got true")]
    DropoutTrue,
    #[error("model.rope_theta is given but model.rope is not true")]
    RopeThetaWithoutRope,
    #[error("model.rope = true needs an even model.head_dim (rotate-half pairs j and j + head_dim/2), got {head_dim}")]
    OddRopeHeadDim { head_dim: u64 },
    #[error("workload.optimizer.{field} applies to adam only, but workload.optimizer.kind = sgd")]
    SgdWithAdamField { field: &'static str },
    #[error("mapping.tp = {tp} must divide {field} = {value}")]
    TpNotDivisor { field: &'static str, value: u64, tp: u64 },
    #[error("workload.microbatch × model.seq_len = {tokens} must be divisible by mapping.tp = {tp} under mapping.tp_comm = {tp_comm} (the tokens of a microbatch are split over the TP ranks)")]
    SequenceNotSplittable { tokens: u128, tp: u64, tp_comm: &'static str },
    #[error("workload.global_batch = {global_batch} must be divisible by mapping.dp × workload.microbatch = {dp} × {microbatch}")]
    BatchNotDivisible { global_batch: u64, dp: u64, microbatch: u64 },
    #[error("mapping.pp = {pp} exceeds model.blocks = {blocks}: every pipeline stage holds at least one block")]
    MoreStagesThanBlocks { blocks: u64, pp: u64 },
    #[error("mapping.pipeline_interleaving = {interleaving} must divide the blocks of the fullest stage, ⌈model.blocks / mapping.pp⌉ = ⌈{blocks} / {pp}⌉ = {per_stage} (Calculon's rule)")]
    InterleavingNotDivisor { blocks: u64, pp: u64, interleaving: u64, per_stage: u64 },
    #[error("mapping.pipeline_interleaving = {interleaving} requires mapping.pp > 1")]
    InterleavingWithoutPipeline { interleaving: u64 },
    #[error("mapping.pipeline_schedule = {schedule} runs one model chunk per stage, but mapping.pipeline_interleaving = {interleaving} (use interleaved_1f1b)")]
    ScheduleWithoutChunks { schedule: &'static str, interleaving: u64 },
    #[error("mapping.pipeline_schedule = interleaved_1f1b needs mapping.pipeline_interleaving > 1 (with one chunk per stage it is 1f1b)")]
    InterleavedWithoutChunks,
    #[error("mapping.seq_par_ag_redo = true requires mapping.tp_comm = rs_ag (only sequence-parallel all-gathers can be redone)")]
    AgRedoWithoutSequenceParallel,
    #[error("mapping.seq_par_ag_redo = true is incompatible with mapping.recompute = full (full recompute already re-communicates)")]
    AgRedoWithFullRecompute,
    #[error("mapping.optimizer_sharding = true requires mapping.dp > 1")]
    ShardingWithoutDataParallel,
    #[error("mapping.tp_overlap = {0} requires mapping.tp > 1 (there is no TP communication to overlap)")]
    OverlapWithoutTensorParallel(&'static str),
    #[error("{what} = {value} exceeds the supported limit {limit}")]
    TooLarge { what: &'static str, value: u128, limit: u128 },
    // ------------------------------------------------ inference-only rules
    /// Like [`SpecError::Parse`], for an inference spec.
    #[error("invalid inference spec JSON: {0}")]
    InferenceParse(String),
    #[error("mapping.tp = {tp} must divide model.kv_heads = {kv_heads} or be a multiple of it (KV heads are split over TP ranks, or replicated when there are fewer KV heads than ranks)")]
    KvHeadsTpMismatch { kv_heads: u64, tp: u64 },
    #[error("workload.prompt_tokens + workload.generated_tokens = {context} must not exceed model.seq_len = {seq_len}")]
    ContextExceedsSeqLen { context: u64, seq_len: u64 },
    #[error("workload.phase = prefill requires workload.generated_tokens = 0, got {generated_tokens}")]
    PrefillWithGeneratedTokens { generated_tokens: u64 },
    #[error("workload.phase = decode requires workload.generated_tokens > 0")]
    DecodeWithoutGeneratedTokens,
    #[error("decode context_tokens = {context} must lie in workload.prompt_tokens + 1 = {min} ..= model.seq_len = {max} (a decode step follows the prefill of the prompt)")]
    DecodeContextOutOfRange { context: u64, min: u64, max: u64 },
}

impl From<serde_json::Error> for SpecError {
    fn from(err: serde_json::Error) -> Self {
        Self::Parse(err.to_string())
    }
}

pub(super) fn positive(field: &'static str, value: u64) -> Result<(), SpecError> {
    if value == 0 {
        Err(SpecError::NonPositive { field })
    } else {
        Ok(())
    }
}

/// The one range rule every integer field of every spec obeys.
pub(super) fn in_range(field: &'static str, value: u64) -> Result<(), SpecError> {
    if value > MAX_SPEC_INTEGER {
        Err(SpecError::IntegerOutOfRange { field, value, limit: MAX_SPEC_INTEGER })
    } else {
        Ok(())
    }
}

pub(super) fn tp_divides(field: &'static str, value: u64, tp: u64) -> Result<(), SpecError> {
    if value.is_multiple_of(tp) {
        Ok(())
    } else {
        Err(SpecError::TpNotDivisor { field, value, tp })
    }
}

impl ModelSpec {
    /// Rules that hold for any use of the model (training or inference).
    ///
    /// # Errors
    /// The first violated rule: a field above [`MAX_SPEC_INTEGER`], a zero
    /// dimension, or `kv_heads` not dividing `heads`. The attention width
    /// `heads × head_dim` may differ from `hidden` (Megatron's
    /// `kv_channels`; LaMDA, PaLM).
    pub fn validate(&self) -> Result<(), SpecError> {
        in_range("model.hidden", self.hidden)?;
        in_range("model.ffn_hidden", self.ffn_hidden)?;
        in_range("model.seq_len", self.seq_len)?;
        in_range("model.heads", self.heads)?;
        in_range("model.head_dim", self.head_dim)?;
        in_range("model.blocks", self.blocks)?;
        if let Some(vocab) = self.vocab {
            in_range("model.vocab", vocab)?;
        }
        if let Some(kv_heads) = self.kv_heads {
            in_range("model.kv_heads", kv_heads)?;
        }
        positive("model.hidden", self.hidden)?;
        positive("model.ffn_hidden", self.ffn_hidden)?;
        positive("model.seq_len", self.seq_len)?;
        positive("model.heads", self.heads)?;
        positive("model.head_dim", self.head_dim)?;
        positive("model.blocks", self.blocks)?;
        if let Some(vocab) = self.vocab {
            positive("model.vocab", vocab)?;
        }
        if let Some(kv_heads) = self.kv_heads {
            positive("model.kv_heads", kv_heads)?;
            if !self.heads.is_multiple_of(kv_heads) {
                return Err(SpecError::KvHeadsNotDivisor { kv_heads, heads: self.heads });
            }
        }
        match self.dropout {
            Some(Dropout::Off(true)) => return Err(SpecError::DropoutTrue),
            Some(Dropout::Probability(p)) if !(p.0.is_finite() && (0.0..1.0).contains(&p.0)) => {
                return Err(SpecError::BadReal { field: "model.dropout", value: p, rule: "a probability in [0, 1) (or false)" });
            }
            _ => {}
        }
        if let Some(theta) = self.rope_theta {
            if !self.rope {
                return Err(SpecError::RopeThetaWithoutRope);
            }
            real_in("model.rope_theta", theta.0, "finite and greater than 1", |v| v > 1.0)?;
        }
        if self.rope && !self.head_dim.is_multiple_of(2) {
            return Err(SpecError::OddRopeHeadDim { head_dim: self.head_dim });
        }
        Ok(())
    }
}

/// A finite real satisfying `rule`.
pub(super) fn real_in(field: &'static str, value: f64, rule: &'static str, ok: impl Fn(f64) -> bool) -> Result<(), SpecError> {
    if value.is_finite() && ok(value) {
        Ok(())
    } else {
        Err(SpecError::BadReal { field, value: Real(value), rule })
    }
}

impl OptimizerSpec {
    /// Finite positive rates, betas in `[0, 1)`; SGD has no betas or `eps`.
    ///
    /// # Errors
    /// The first violated rule, naming the field.
    pub fn validate(&self) -> Result<(), SpecError> {
        real_in("workload.optimizer.lr", self.lr.0, "finite and positive", |v| v > 0.0)?;
        let adam_fields = [("beta1", self.beta1), ("beta2", self.beta2), ("eps", self.eps)];
        if self.kind == OptimizerKind::Sgd {
            if let Some((field, _)) = adam_fields.iter().find(|(_, v)| v.is_some()) {
                return Err(SpecError::SgdWithAdamField { field });
            }
        }
        if let Some(b) = self.beta1 {
            real_in("workload.optimizer.beta1", b.0, "in [0, 1)", |v| (0.0..1.0).contains(&v))?;
        }
        if let Some(b) = self.beta2 {
            real_in("workload.optimizer.beta2", b.0, "in [0, 1)", |v| (0.0..1.0).contains(&v))?;
        }
        if let Some(e) = self.eps {
            real_in("workload.optimizer.eps", e.0, "finite and positive", |v| v > 0.0)?;
        }
        Ok(())
    }
}

/// Deserializes `json`, naming the path of the offending field in the
/// error (`crate::analysis::json::from_json_located`).
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, SpecError> {
    crate::analysis::json::from_json_located(json).map_err(SpecError::Parse)
}

impl TrainingSpec {
    /// Parses the `{model, workload, mapping}` JSON document and validates it.
    ///
    /// # Errors
    /// [`SpecError::Parse`] for malformed JSON or unknown / missing fields and
    /// enum values, otherwise the first rule [`TrainingSpec::validate`] rejects.
    pub fn from_json(json: &str) -> Result<Self, SpecError> {
        let spec: Self = parse_json(json)?;
        spec.validate()?;
        Ok(spec)
    }

    /// Checks every rule; returns the first violation.
    ///
    /// Zero checks come first so the divisibility rules never divide by zero.
    ///
    /// # Errors
    /// The first violated rule, as a [`SpecError`] naming the field.
    pub fn validate(&self) -> Result<(), SpecError> {
        let (model, work, map) = (&self.model, &self.workload, &self.mapping);
        model.validate()?;
        for (field, value) in [
            ("workload.global_batch", work.global_batch),
            ("workload.microbatch", work.microbatch),
            ("mapping.tp", map.tp),
            ("mapping.pp", map.pp),
            ("mapping.dp", map.dp),
            ("mapping.pipeline_interleaving", map.pipeline_interleaving),
        ] {
            in_range(field, value)?;
            positive(field, value)?;
        }

        if let Some(optimizer) = &work.optimizer {
            optimizer.validate()?;
        }

        // Calculon asserts hidden, ffn and heads divisible by TP. Key/value
        // heads split over TP as Megatron-LM's query groups do, or, when
        // there are fewer of them than ranks, each rank holds one whole,
        // replicated on tp / kv_heads ranks (Calculon's multi-query
        // attention keeps its single KV head on every TP rank).
        tp_divides("model.hidden", model.hidden, map.tp)?;
        tp_divides("model.heads", model.heads, map.tp)?;
        let kv_heads = model.kv_heads();
        if !(kv_heads.is_multiple_of(map.tp) || map.tp.is_multiple_of(kv_heads)) {
            return Err(SpecError::KvHeadsTpMismatch { kv_heads, tp: map.tp });
        }
        tp_divides("model.ffn_hidden", model.ffn_hidden, map.tp)?;
        let tokens = u128::from(work.microbatch) * u128::from(model.seq_len);
        if map.pipeline_sequence_split() && !tokens.is_multiple_of(u128::from(map.tp)) {
            // Calculon needs the microbatch's b·s tokens to split over TP.
            return Err(SpecError::SequenceNotSplittable { tokens, tp: map.tp, tp_comm: map.tp_comm.name() });
        }

        let replica_batch = u128::from(map.dp) * u128::from(work.microbatch);
        if !u128::from(work.global_batch).is_multiple_of(replica_batch) {
            return Err(SpecError::BatchNotDivisible { global_batch: work.global_batch, dp: map.dp, microbatch: work.microbatch });
        }
        if map.pp == 1 && map.pipeline_interleaving > 1 {
            return Err(SpecError::InterleavingWithoutPipeline { interleaving: map.pipeline_interleaving });
        }
        // Calculon's uneven pipeline: the first `blocks mod pp` stages hold
        // one block more; the interleaving splits the fullest stage evenly.
        if map.pp > model.blocks {
            return Err(SpecError::MoreStagesThanBlocks { blocks: model.blocks, pp: map.pp });
        }
        let per_stage = self.blocks_per_rank();
        if !per_stage.is_multiple_of(map.pipeline_interleaving) {
            return Err(SpecError::InterleavingNotDivisor {
                blocks: model.blocks,
                pp: map.pp,
                interleaving: map.pipeline_interleaving,
                per_stage,
            });
        }

        match map.schedule_kind() {
            kind @ (ScheduleKind::OneFOneB | ScheduleKind::GPipe) if map.pipeline_interleaving > 1 => {
                return Err(SpecError::ScheduleWithoutChunks { schedule: kind.name(), interleaving: map.pipeline_interleaving });
            }
            ScheduleKind::Interleaved1F1B if map.pipeline_interleaving == 1 => {
                return Err(SpecError::InterleavedWithoutChunks);
            }
            _ => {}
        }

        // Calculon's Execution asserts it too.
        if map.tp_overlap.is_overlapped() && map.tp == 1 {
            return Err(SpecError::OverlapWithoutTensorParallel(map.tp_overlap.name()));
        }

        // Calculon's Execution asserts both for seq_par_ag_redo. At TP = 1
        // the flag moves no data; as in Calculon, the full-size input of
        // the Q/K/V fork is still not kept for the backward pass.
        if map.seq_par_ag_redo {
            if !map.sequence_parallel() {
                return Err(SpecError::AgRedoWithoutSequenceParallel);
            }
            if map.recompute == Recompute::Full {
                return Err(SpecError::AgRedoWithFullRecompute);
            }
        }
        // The distributed optimizer shards the flat buffer: a rank's share
        // is the total divided by DP, integral or not (as in Calculon).
        if map.optimizer_sharding && map.dp == 1 {
            return Err(SpecError::ShardingWithoutDataParallel);
        }

        let world = u128::from(map.tp) * u128::from(map.pp) * u128::from(map.dp);
        if world > u128::from(MAX_WORLD_SIZE) {
            return Err(SpecError::TooLarge {
                what: "mapping.tp × mapping.pp × mapping.dp",
                value: world,
                limit: u128::from(MAX_WORLD_SIZE),
            });
        }
        let scale = work_scale(work.microbatch, model);
        if scale > MAX_WORK_SCALE {
            return Err(SpecError::TooLarge {
                what: "workload.microbatch × model.seq_len × model.hidden × max(hidden, ffn_hidden, seq_len, heads × head_dim)",
                value: scale,
                limit: MAX_WORK_SCALE,
            });
        }
        Ok(())
    }

    /// [`TrainingSpec::validate`], and the rule that the training derivation
    /// counts what the spec asks for: a block of the GPT or Llama family
    /// (every model field) trained with Adam, the optimizer whose work and
    /// state Calculon counts.
    ///
    /// # Errors
    /// The first violated rule, or [`SpecError::NotCounted`].
    pub fn validate_counted(&self) -> Result<(), SpecError> {
        self.validate()?;
        if self.workload.optimizer().kind != OptimizerKind::Adam {
            return Err(SpecError::NotCounted { feature: "workload.optimizer.kind = sgd".into() });
        }
        Ok(())
    }

    /// `tp × pp × dp`. Saturates instead of overflowing on an unvalidated spec.
    #[must_use]
    pub fn world_size(&self) -> u64 {
        self.mapping.tp.saturating_mul(self.mapping.pp).saturating_mul(self.mapping.dp)
    }

    /// Sequences per data-parallel replica: `global_batch / dp`
    /// (0 on an unvalidated spec with `dp = 0`).
    #[must_use]
    pub fn local_batch(&self) -> u64 {
        self.workload.global_batch.checked_div(self.mapping.dp).unwrap_or(0)
    }

    /// Microbatches per step per pipeline: `global_batch / (dp × microbatch)`.
    #[must_use]
    pub fn microbatch_count(&self) -> u64 {
        self.local_batch().checked_div(self.workload.microbatch).unwrap_or(0)
    }

    /// Blocks in one virtual pipeline chunk of the fullest stage:
    /// `⌈blocks / pp⌉ / interleaving` (`blocks / (pp × interleaving)` when
    /// the pipeline is even).
    #[must_use]
    pub fn blocks_per_virtual_chunk(&self) -> u64 {
        self.blocks_per_rank().checked_div(self.mapping.pipeline_interleaving).unwrap_or(0)
    }

    /// Blocks held by the fullest pipeline rank: `⌈blocks / pp⌉` (Calculon's
    /// `blocks_per_proc`, the stage it reports; `blocks / pp` when even).
    #[must_use]
    pub fn blocks_per_rank(&self) -> u64 {
        crate::analysis::schedule::fullest_stage_blocks(self.model.blocks, self.mapping.pp)
    }

    /// Whether the stages hold different block counts (`pp` does not
    /// divide `blocks`).
    #[must_use]
    pub fn uneven_blocks(&self) -> bool {
        self.mapping.pp > 0 && !self.model.blocks.is_multiple_of(self.mapping.pp)
    }

    /// Stages holding one block fewer than the fullest: Calculon's
    /// `bubble_reduction_blocks`, `pp − blocks mod pp` when uneven, else 0.
    #[must_use]
    pub fn short_stages(&self) -> u64 {
        if self.uneven_blocks() {
            self.mapping.pp - self.model.blocks % self.mapping.pp
        } else {
            0
        }
    }

    /// Blocks held by stage `stage`: the first `blocks mod pp` stages hold
    /// `⌈blocks / pp⌉`, the others one fewer.
    #[must_use]
    pub fn stage_blocks(&self, stage: u64) -> u64 {
        let full = self.blocks_per_rank();
        if stage >= self.mapping.pp.saturating_sub(self.short_stages()) {
            full.saturating_sub(1)
        } else {
            full
        }
    }

    /// Blocks in chunk `chunk` of stage `stage`: a short stage's block is
    /// missing from its last chunk (Calculon cuts the chunk's edge block),
    /// which may leave that chunk empty.
    #[must_use]
    pub fn chunk_blocks(&self, stage: u64, chunk: u64) -> u64 {
        let (blocks, pp, v) = (self.model.blocks, self.mapping.pp, self.mapping.pipeline_interleaving);
        crate::analysis::schedule::chunk_assignment(blocks, pp, v, stage, chunk).map_or(0, |(_, size)| size)
    }

    /// The first block of chunk `chunk` of stage `stage` (Megatron's
    /// interleaved order; see [`crate::analysis::schedule::chunk_assignment`]).
    #[must_use]
    pub fn chunk_first_block(&self, stage: u64, chunk: u64) -> u64 {
        let (blocks, pp, v) = (self.model.blocks, self.mapping.pp, self.mapping.pipeline_interleaving);
        crate::analysis::schedule::chunk_assignment(blocks, pp, v, stage, chunk).map_or(0, |(first, _)| first)
    }
}
