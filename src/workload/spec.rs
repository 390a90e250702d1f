//! Typed training specifications: model, workload and mapping.
//!
//! The JSON field names are those of the Calculon oracle cases
//! (`/work/shared/oracles/calculon/seqsel-table5.json`), so each case's
//! `model`, `workload` and `mapping` objects deserialize directly. Unknown,
//! missing or mistyped fields are rejected by serde; semantic rules are
//! checked by [`TrainingSpec::validate`], one [`SpecError`] variant per rule.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Largest value allowed for `batch·seq·hidden·max(hidden, ffn_hidden, seq)`.
///
/// Every per-invocation quantity of the derivation is at most 14× that
/// product times 4 bytes, and a phase sums fewer than 32 invocations, so
/// 2^54 keeps every sum below 2^64 with room to spare. The largest oracle
/// case (megatron-1T) is about 2^42.3.
pub(super) const MAX_WORK_SCALE: u128 = 1 << 54;

/// Dimensions and semantics of a decoder-only Transformer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Human-readable model name (not used by the derivation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Model width `h`.
    pub hidden: u64,
    /// MLP inner width `f`.
    pub ffn_hidden: u64,
    /// Sequence length `s`; for inference, the longest servable context
    /// (defaulted by [`super::inference_spec`] when absent there).
    pub seq_len: u64,
    /// Query heads `a`.
    pub heads: u64,
    /// Per-head width `d`; `a·d` must equal `h`.
    pub head_dim: u64,
    /// Decoder blocks in the whole model.
    pub blocks: u64,
    /// Vocabulary size; embeddings are not part of a block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocab: Option<u64>,
    /// Key/value heads for grouped-query attention; `None` means `heads`.
    /// Used by inference; training rejects `kv_heads != heads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_heads: Option<u64>,
    /// SwiGLU-style gated MLP. Used by inference; training rejects `true`.
    #[serde(default)]
    pub gated_mlp: bool,
}

impl ModelSpec {
    /// Key/value heads, defaulting to the query heads (multi-head attention).
    #[must_use]
    pub fn kv_heads(&self) -> u64 {
        self.kv_heads.unwrap_or(self.heads)
    }
}

/// Element type of activations, weights and gradients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Datatype {
    Float8,
    Float16,
    Bfloat16,
    Float32,
}

impl Datatype {
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingWorkloadSpec {
    /// Sequences per optimizer step over all data-parallel replicas.
    pub global_batch: u64,
    /// Sequences per microbatch on one pipeline.
    pub microbatch: u64,
    pub datatype: Datatype,
}

/// Activation recomputation policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TpComm {
    /// Megatron tensor parallelism: all-reduce after each row-parallel linear.
    Ar,
    /// Sequence parallelism: all-gather before / reduce-scatter after.
    RsAg,
}

/// Logical mapping of the model onto TP × PP × DP ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingMappingSpec {
    pub tp: u64,
    pub pp: u64,
    pub dp: u64,
    /// Virtual pipeline stages per rank (1 = plain 1F1B).
    pub pipeline_interleaving: u64,
    pub recompute: Recompute,
    pub tp_comm: TpComm,
    /// Redo the sequence-parallel all-gathers in the backward pass instead of
    /// storing their full-size outputs.
    pub seq_par_ag_redo: bool,
    /// `GeLU` fused into the preceding linear (no stored `GeLU` activation).
    pub fused_activation: bool,
    /// Shard optimizer state and weight gradients over DP (ZeRO-1 style).
    pub optimizer_sharding: bool,
}

/// Pipeline schedule implied by the mapping; closed so consumers must
/// handle every schedule explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PipelineSchedule {
    /// One forward / one backward, one model chunk per rank.
    OneFOneB,
    /// Interleaved 1F1B with `virtual_stages` model chunks per rank.
    Interleaved { virtual_stages: u64 },
}

impl TrainingMappingSpec {
    /// The pipeline schedule selected by `pipeline_interleaving`.
    #[must_use]
    pub fn schedule(&self) -> PipelineSchedule {
        match self.pipeline_interleaving {
            1 => PipelineSchedule::OneFOneB,
            virtual_stages => PipelineSchedule::Interleaved { virtual_stages },
        }
    }

    /// Whether activations are sequence-parallel (split by TP) outside the
    /// tensor-parallel regions.
    #[must_use]
    pub fn sequence_parallel(&self) -> bool {
        self.tp_comm == TpComm::RsAg
    }
}

/// One training job: what is trained, with which batch, mapped how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub model: ModelSpec,
    pub workload: TrainingWorkloadSpec,
    pub mapping: TrainingMappingSpec,
}

/// A violated specification rule. Messages name the field and the rule.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// JSON syntax, unknown / missing field or unknown enum value; serde's
    /// message names the field, line and column.
    #[error("invalid training spec JSON: {0}")]
    Parse(String),
    #[error("{field} must be positive, got 0")]
    NonPositive { field: &'static str },
    #[error(
        "model.heads × model.head_dim must equal model.hidden, got {heads} × {head_dim} = {product} ≠ {hidden}"
    )]
    HeadWidthMismatch {
        heads: u64,
        head_dim: u64,
        product: u128,
        hidden: u64,
    },
    #[error("model.kv_heads must divide model.heads, got kv_heads = {kv_heads}, heads = {heads}")]
    KvHeadsNotDivisor { kv_heads: u64, heads: u64 },
    #[error("model.kv_heads = {kv_heads} ≠ model.heads = {heads}: grouped-query attention is not supported by the training derivation")]
    GroupedQueryTraining { kv_heads: u64, heads: u64 },
    #[error("model.gated_mlp = true is not supported by the training derivation")]
    GatedMlpTraining,
    #[error("mapping.tp = {tp} must divide {field} = {value}")]
    TpNotDivisor {
        field: &'static str,
        value: u64,
        tp: u64,
    },
    #[error("model.seq_len = {seq_len} must be divisible by mapping.tp = {tp} under mapping.tp_comm = rs_ag (sequence parallelism splits the sequence)")]
    SequenceNotSplittable { seq_len: u64, tp: u64 },
    #[error("workload.global_batch = {global_batch} must be divisible by mapping.dp × workload.microbatch = {dp} × {microbatch}")]
    BatchNotDivisible {
        global_batch: u64,
        dp: u64,
        microbatch: u64,
    },
    #[error("model.blocks = {blocks} must be divisible by mapping.pp × mapping.pipeline_interleaving = {pp} × {interleaving}")]
    BlocksNotDivisible {
        blocks: u64,
        pp: u64,
        interleaving: u64,
    },
    #[error("mapping.pipeline_interleaving = {interleaving} requires mapping.pp > 1")]
    InterleavingWithoutPipeline { interleaving: u64 },
    #[error("mapping.seq_par_ag_redo = true requires mapping.tp_comm = rs_ag (only sequence-parallel all-gathers can be redone)")]
    AgRedoWithoutSequenceParallel,
    #[error("mapping.seq_par_ag_redo = true is incompatible with mapping.recompute = full (full recompute already re-communicates)")]
    AgRedoWithFullRecompute,
    #[error("mapping.seq_par_ag_redo = true requires mapping.tp > 1 (there is no all-gather to redo at tp = 1)")]
    AgRedoWithoutTensorParallel,
    #[error("mapping.optimizer_sharding = true requires mapping.dp > 1")]
    ShardingWithoutDataParallel,
    #[error("mapping.dp = {dp} must divide model.hidden = {hidden} under mapping.optimizer_sharding so every parameter tensor shards into whole elements")]
    ShardNotIntegral { dp: u64, hidden: u64 },
    #[error("{what} = {value} exceeds the supported limit {limit}")]
    TooLarge {
        what: &'static str,
        value: u128,
        limit: u128,
    },
    // ------------------------------------------------ inference-only rules
    /// Like [`SpecError::Parse`], for an inference spec.
    #[error("invalid inference spec JSON: {0}")]
    InferenceParse(String),
    #[error("mapping.tp = {tp} must divide model.kv_heads = {kv_heads} or be a multiple of it (KV heads are split over TP ranks, or replicated when there are fewer KV heads than ranks)")]
    KvHeadsTpMismatch { kv_heads: u64, tp: u64 },
    #[error("model.blocks = {blocks} must be divisible by mapping.pp = {pp}")]
    PipelineBlocksNotDivisible { blocks: u64, pp: u64 },
    #[error("workload.prompt_tokens + workload.generated_tokens = {context} must not exceed model.seq_len = {seq_len}")]
    ContextExceedsSeqLen { context: u64, seq_len: u64 },
    #[error(
        "workload.phase = prefill requires workload.generated_tokens = 0, got {generated_tokens}"
    )]
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
    /// The first violated rule: a zero dimension, `kv_heads` not dividing
    /// `heads`, or `heads × head_dim ≠ hidden`.
    pub fn validate(&self) -> Result<(), SpecError> {
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
                return Err(SpecError::KvHeadsNotDivisor {
                    kv_heads,
                    heads: self.heads,
                });
            }
        }
        // Calculon carries attn_size separately from hidden, but every oracle
        // case (and every Megatron/GPT configuration it models) has a·d = h;
        // the output projection is sized h × a·d, so a mismatch would mean a
        // non-square attention we do not model.
        let product = u128::from(self.heads) * u128::from(self.head_dim);
        if product != u128::from(self.hidden) {
            return Err(SpecError::HeadWidthMismatch {
                heads: self.heads,
                head_dim: self.head_dim,
                product,
                hidden: self.hidden,
            });
        }
        Ok(())
    }
}

/// Deserializes `json`, naming the path of the offending field in the
/// error (`mapping.recompute: unknown variant ...`), which serde alone does
/// not for enum values.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, SpecError> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path.is_empty() || path == "." {
            SpecError::Parse(inner.to_string())
        } else {
            SpecError::Parse(format!("{path}: {inner}"))
        }
    })
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
        positive("workload.global_batch", work.global_batch)?;
        positive("workload.microbatch", work.microbatch)?;
        positive("mapping.tp", map.tp)?;
        positive("mapping.pp", map.pp)?;
        positive("mapping.dp", map.dp)?;
        positive("mapping.pipeline_interleaving", map.pipeline_interleaving)?;

        // The training derivation mirrors Calculon's multi-head, ungated
        // block; the inference-only model features must stay at their
        // defaults so they cannot silently change training numbers.
        if model.kv_heads() != model.heads {
            return Err(SpecError::GroupedQueryTraining {
                kv_heads: model.kv_heads(),
                heads: model.heads,
            });
        }
        if model.gated_mlp {
            return Err(SpecError::GatedMlpTraining);
        }

        // Calculon asserts hidden, ffn and heads divisible by TP; hidden
        // follows from heads because a·d = h.
        tp_divides("model.heads", model.heads, map.tp)?;
        tp_divides("model.ffn_hidden", model.ffn_hidden, map.tp)?;
        if map.sequence_parallel() && !model.seq_len.is_multiple_of(map.tp) {
            // Calculon only needs microbatch·seq divisible by TP; we require
            // the sequence itself to split, as Megatron sequence parallelism does.
            return Err(SpecError::SequenceNotSplittable {
                seq_len: model.seq_len,
                tp: map.tp,
            });
        }

        let replica_batch = u128::from(map.dp) * u128::from(work.microbatch);
        if !u128::from(work.global_batch).is_multiple_of(replica_batch) {
            return Err(SpecError::BatchNotDivisible {
                global_batch: work.global_batch,
                dp: map.dp,
                microbatch: work.microbatch,
            });
        }
        if map.pp == 1 && map.pipeline_interleaving > 1 {
            return Err(SpecError::InterleavingWithoutPipeline {
                interleaving: map.pipeline_interleaving,
            });
        }
        let chunks = u128::from(map.pp) * u128::from(map.pipeline_interleaving);
        if !u128::from(model.blocks).is_multiple_of(chunks) {
            return Err(SpecError::BlocksNotDivisible {
                blocks: model.blocks,
                pp: map.pp,
                interleaving: map.pipeline_interleaving,
            });
        }

        // Calculon's Execution asserts these three for seq_par_ag_redo except
        // tp > 1, which we add so that AR and RS+AG are identical at TP = 1.
        if map.seq_par_ag_redo {
            if !map.sequence_parallel() {
                return Err(SpecError::AgRedoWithoutSequenceParallel);
            }
            if map.recompute == Recompute::Full {
                return Err(SpecError::AgRedoWithFullRecompute);
            }
            if map.tp == 1 {
                return Err(SpecError::AgRedoWithoutTensorParallel);
            }
        }
        if map.optimizer_sharding {
            if map.dp == 1 {
                return Err(SpecError::ShardingWithoutDataParallel);
            }
            // Calculon divides each parameter tensor by DP in floating point;
            // dp | hidden makes every tensor (2h layer-norm, h·x linears)
            // divide exactly, so the integer accounting stays exact.
            if !model.hidden.is_multiple_of(map.dp) {
                return Err(SpecError::ShardNotIntegral {
                    dp: map.dp,
                    hidden: model.hidden,
                });
            }
        }

        let world = u128::from(map.tp) * u128::from(map.pp) * u128::from(map.dp);
        if world > u128::from(u64::MAX) {
            return Err(SpecError::TooLarge {
                what: "mapping.tp × mapping.pp × mapping.dp",
                value: world,
                limit: u128::from(u64::MAX),
            });
        }
        let widest = model.hidden.max(model.ffn_hidden).max(model.seq_len);
        let scale = u128::from(work.microbatch)
            .saturating_mul(u128::from(model.seq_len))
            .saturating_mul(u128::from(model.hidden))
            .saturating_mul(u128::from(widest));
        if scale > MAX_WORK_SCALE {
            return Err(SpecError::TooLarge {
                what: "workload.microbatch × model.seq_len × model.hidden × max(hidden, ffn_hidden, seq_len)",
                value: scale,
                limit: MAX_WORK_SCALE,
            });
        }
        Ok(())
    }

    /// `tp × pp × dp`. Saturates instead of overflowing on an unvalidated spec.
    #[must_use]
    pub fn world_size(&self) -> u64 {
        self.mapping
            .tp
            .saturating_mul(self.mapping.pp)
            .saturating_mul(self.mapping.dp)
    }

    /// Sequences per data-parallel replica: `global_batch / dp`
    /// (0 on an unvalidated spec with `dp = 0`).
    #[must_use]
    pub fn local_batch(&self) -> u64 {
        self.workload
            .global_batch
            .checked_div(self.mapping.dp)
            .unwrap_or(0)
    }

    /// Microbatches per step per pipeline: `global_batch / (dp × microbatch)`.
    #[must_use]
    pub fn microbatch_count(&self) -> u64 {
        self.local_batch()
            .checked_div(self.workload.microbatch)
            .unwrap_or(0)
    }

    /// Blocks in one virtual pipeline chunk: `blocks / (pp × interleaving)`.
    #[must_use]
    pub fn blocks_per_virtual_chunk(&self) -> u64 {
        let chunks = self
            .mapping
            .pp
            .saturating_mul(self.mapping.pipeline_interleaving);
        self.model.blocks.checked_div(chunks).unwrap_or(0)
    }

    /// Blocks held by one pipeline rank: `blocks / pp`.
    #[must_use]
    pub fn blocks_per_rank(&self) -> u64 {
        self.model.blocks.checked_div(self.mapping.pp).unwrap_or(0)
    }
}
