//! Typed inference specifications: model, serving workload and mapping.
//!
//! The model is the training [`ModelSpec`]; inference uses its grouped-query
//! (`kv_heads`) and gated-MLP (`gated_mlp`) fields, which training rejects.
//! For inference `model.seq_len` is the longest context the model serves
//! (its position limit). The oracle cases omit it, so when the JSON has no
//! `seq_len` it defaults to the run's final context,
//! `prompt_tokens + generated_tokens`.
//!
//! The JSON field names are those of the inference oracle cases
//! (`test/oracles/inference/{prefill-calculon,llama2-genz}.json`),
//! so each case's `model`, `workload` and `mapping` objects deserialize
//! directly. Unknown, missing or mistyped fields are rejected by serde;
//! semantic rules are checked by [`InferenceSpec::validate`], one
//! [`SpecError`] variant per rule.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::spec::{in_range, parse_json, positive, tp_divides, work_scale, Datatype, ModelSpec, SpecError, MAX_WORK_SCALE, MAX_WORLD_SIZE};

/// Which phases of a request a spec is about (the Calculon cases say
/// `"phase": "prefill"`). Absent means the whole request: the prefill, then
/// one decode step per generated token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InferencePhase {
    /// Only the prompt's forward pass; `generated_tokens` must be 0.
    Prefill,
    /// Only the generation steps (the prompt is already cached);
    /// `generated_tokens` must be positive.
    Decode,
}

/// Batch, lengths and datatypes of one inference request batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InferenceWorkloadSpec {
    /// Which phases of a request the spec is about. Absent: the whole
    /// request, the prefill and then one decode step per generated token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<InferencePhase>,
    /// Sequences served together `b` (every rank of a TP group sees all of them).
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub batch: u64,
    /// Prompt length per sequence, processed by the prefill.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub prompt_tokens: u64,
    /// Tokens generated per sequence after the prefill, one decode step
    /// each; 0 under `phase = prefill`, positive under `phase = decode`.
    #[serde(default)]
    #[schemars(range(max = 9_007_199_254_740_992_u64))]
    pub generated_tokens: u64,
    /// Element type of weights and activations.
    pub datatype: Datatype,
    /// Element type of the KV cache. Absent: `datatype`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_datatype: Option<Datatype>,
}

impl InferenceWorkloadSpec {
    /// Element type of the KV cache.
    #[must_use]
    pub fn kv_datatype(&self) -> Datatype {
        self.kv_datatype.unwrap_or(self.datatype)
    }

    /// Tokens per sequence at the end of generation,
    /// `prompt_tokens + generated_tokens` (saturating on an unvalidated spec).
    #[must_use]
    pub fn final_context(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.generated_tokens)
    }
}

const fn one() -> u64 {
    1
}

/// Logical mapping of one model replica onto TP × PP ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InferenceMappingSpec {
    /// Tensor-parallel degree; it divides `model.kv_heads` or is a multiple
    /// of it.
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub tp: u64,
    /// Pipeline stages, at most `model.blocks`; each holds consecutive
    /// blocks. When `pp` does not divide the blocks, the first
    /// `blocks mod pp` stages hold `⌈blocks / pp⌉`, the others one fewer
    /// (Calculon's and Megatron-LM's uneven pipeline).
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 9_007_199_254_740_992_u64))]
    pub pp: u64,
}

/// One inference job: which model, serving what, mapped how.
// Deserialization goes through a raw form so that `model.seq_len` may be
// omitted (it then defaults to `prompt_tokens + generated_tokens`);
// serialization always writes it, so a round trip is exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "RawInferenceSpec")]
pub struct InferenceSpec {
    /// A name for the job (not used by the derivation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What is served (`model.rope` and `model.dropout` are training only;
    /// `model.seq_len` may be omitted).
    pub model: ModelSpec,
    /// The request batch, its lengths and datatypes.
    pub workload: InferenceWorkloadSpec,
    /// How one model replica is mapped onto TP × PP ranks.
    pub mapping: InferenceMappingSpec,
}

/// One inference job: which model, serving what, mapped how.
// The JSON shape of [`InferenceSpec`] (and so its schema); the model stays
// an object until the workload is known.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "InferenceSpec")]
struct RawInferenceSpec {
    /// A name for the job (not used by the derivation).
    #[serde(default)]
    name: Option<String>,
    /// What is served (`model.rope` and `model.dropout` are training only;
    /// `model.seq_len` may be omitted).
    #[schemars(with = "ModelSpec")]
    model: Map<String, Value>,
    /// The request batch, its lengths and datatypes.
    workload: InferenceWorkloadSpec,
    /// How one model replica is mapped onto TP × PP ranks.
    mapping: InferenceMappingSpec,
}

impl TryFrom<RawInferenceSpec> for InferenceSpec {
    type Error = String;

    fn try_from(raw: RawInferenceSpec) -> Result<Self, String> {
        let mut model = raw.model;
        if !model.contains_key("seq_len") {
            // Saturating: an overflowing context is reported by `validate`
            // as `TooLarge`, not as a parse error.
            model.insert("seq_len".to_owned(), Value::from(raw.workload.final_context()));
        }
        // ModelSpec's own deserializer: unknown / missing / mistyped model
        // fields are rejected exactly as for training.
        let model: ModelSpec = serde_json::from_value(Value::Object(model)).map_err(|err| format!("model: {err}"))?;
        Ok(Self { name: raw.name, model, workload: raw.workload, mapping: raw.mapping })
    }
}

impl InferenceSpec {
    /// Parses the `{model, workload, mapping}` JSON document and validates it.
    ///
    /// # Errors
    /// [`SpecError::InferenceParse`] for malformed JSON or unknown / missing
    /// fields and enum values, otherwise the first rule
    /// [`InferenceSpec::validate`] rejects.
    pub fn from_json(json: &str) -> Result<Self, SpecError> {
        // Training's parser names the path of the offending field.
        let spec: Self = parse_json(json).map_err(|err| match err {
            SpecError::Parse(msg) => SpecError::InferenceParse(msg),
            other => other,
        })?;
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
        // The inference derivation counts layer norms and no rotary
        // embeddings; dropout does not run when serving.
        if model.norm != super::spec::Norm::LayerNorm {
            return Err(SpecError::NotCountedInference { feature: "model.norm = rms_norm" });
        }
        if model.rope || model.rope_theta.is_some() {
            return Err(SpecError::NotCountedInference { feature: "model.rope" });
        }
        if model.dropout.is_some() {
            return Err(SpecError::NotCountedInference { feature: "model.dropout (dropout does not run when serving)" });
        }
        // Workload first: a defaulted `model.seq_len` comes from it.
        in_range("workload.generated_tokens", work.generated_tokens)?;
        let counts = [
            ("workload.batch", work.batch),
            ("workload.prompt_tokens", work.prompt_tokens),
            ("mapping.tp", map.tp),
            ("mapping.pp", map.pp),
        ];
        for (field, value) in counts {
            in_range(field, value)?;
        }
        model.validate()?;
        for (field, value) in counts {
            positive(field, value)?;
        }

        let Some(context) = work.prompt_tokens.checked_add(work.generated_tokens) else {
            return Err(SpecError::TooLarge {
                what: "workload.prompt_tokens + workload.generated_tokens",
                value: u128::from(work.prompt_tokens) + u128::from(work.generated_tokens),
                limit: u128::from(u64::MAX),
            });
        };
        if context > model.seq_len {
            return Err(SpecError::ContextExceedsSeqLen { context, seq_len: model.seq_len });
        }
        match work.phase {
            Some(InferencePhase::Prefill) if work.generated_tokens != 0 => {
                return Err(SpecError::PrefillWithGeneratedTokens { generated_tokens: work.generated_tokens });
            }
            Some(InferencePhase::Decode) if work.generated_tokens == 0 => {
                return Err(SpecError::DecodeWithoutGeneratedTokens);
            }
            _ => {}
        }

        // Hidden, query heads and the MLP split over TP.
        tp_divides("model.hidden", model.hidden, map.tp)?;
        tp_divides("model.heads", model.heads, map.tp)?;
        // KV heads split evenly over TP, or each is replicated on tp/kv ranks
        // (GenZ: per-rank KV heads max(kv_heads/TP, 1)).
        let kv_heads = model.kv_heads();
        if !(kv_heads.is_multiple_of(map.tp) || map.tp.is_multiple_of(kv_heads)) {
            return Err(SpecError::KvHeadsTpMismatch { kv_heads, tp: map.tp });
        }
        tp_divides("model.ffn_hidden", model.ffn_hidden, map.tp)?;
        // Uneven pipelines are fine (the first `blocks mod pp` stages hold
        // one block more); every stage needs at least one block.
        if map.pp > model.blocks {
            return Err(SpecError::MoreStagesThanBlocks { blocks: model.blocks, pp: map.pp });
        }

        let world = u128::from(map.tp) * u128::from(map.pp);
        if world > u128::from(MAX_WORLD_SIZE) {
            return Err(SpecError::TooLarge { what: "mapping.tp × mapping.pp", value: world, limit: u128::from(MAX_WORLD_SIZE) });
        }
        // Same bound as training, with the longest servable context as the
        // sequence: every prefill / decode-step quantity, and every whole-run
        // decode total (at most seq_len steps of b·h·max(h, f, seq_len, a·d)-
        // sized work), stays far below 2^64.
        let scale = work_scale(work.batch, model);
        if scale > MAX_WORK_SCALE {
            return Err(SpecError::TooLarge {
                what: "workload.batch × model.seq_len × model.hidden × max(hidden, ffn_hidden, seq_len, heads × head_dim)",
                value: scale,
                limit: MAX_WORK_SCALE,
            });
        }
        Ok(())
    }

    /// KV heads held by one TP rank: `kv_heads / tp`, or 1 when there are
    /// fewer KV heads than ranks (each is then replicated on `tp / kv_heads`
    /// ranks). 0 on an unvalidated spec with `tp = 0`.
    #[must_use]
    pub fn kv_heads_per_rank(&self) -> u64 {
        match self.model.kv_heads().checked_div(self.mapping.tp) {
            Some(0) => 1,
            Some(heads) => heads,
            None => 0,
        }
    }

    /// Blocks held by the fullest pipeline rank, `⌈blocks / pp⌉` (`blocks /
    /// pp` when `pp` divides the blocks): the rank whose weights and KV
    /// cache are largest, so per-rank facts are that rank's. 0 on an
    /// unvalidated spec with `pp = 0`.
    #[must_use]
    pub fn blocks_per_rank(&self) -> u64 {
        crate::analysis::schedule::fullest_stage_blocks(self.model.blocks, self.mapping.pp)
    }

    /// Blocks held by pipeline stage `stage` (`0 .. pp`): the first
    /// `blocks mod pp` stages hold `⌈blocks / pp⌉`, the others
    /// `⌊blocks / pp⌋` (all `blocks / pp` when `pp` divides the blocks).
    /// 0 on an unvalidated spec with `pp = 0`.
    #[must_use]
    pub fn stage_blocks(&self, stage: u64) -> u64 {
        let (blocks, pp) = (self.model.blocks, self.mapping.pp);
        blocks.checked_div(pp).map_or(0, |fewer| fewer + u64::from(stage < blocks % pp))
    }

    /// `tp × pp` (saturating).
    #[must_use]
    pub fn world_size(&self) -> u64 {
        self.mapping.tp.saturating_mul(self.mapping.pp)
    }
}
