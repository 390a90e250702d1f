//! A model's parameters, counted two ways:
//!
//! - Blueprint's: a block's weights as the plan counts them (the linears,
//!   the norms' scales and biases; no linear biases), times the blocks; with
//!   the vocabulary known, the token embedding (`vocab x hidden`), and the
//!   total of a model whose output head is not tied to it (embedding, head
//!   and the final norm's scale) — what Hugging Face reports for Llama and
//!   Mistral checkpoints.
//! - Calculon's (`calculon llm-parameter-calculator`, Megatron-LM's
//!   equation 2): weights, linear biases and layer norms per block, plus a
//!   51,200-token and a positional embedding; only for the GPT block
//!   Calculon models (layer norms, an ungated MLP, every head its own keys
//!   and values).

use serde::Serialize;

use super::spec::{ModelSpec, Norm};

/// The counts of one model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Parameters {
    pub model: Option<String>,
    /// One block's weights.
    pub block: u64,
    pub blocks: u64,
    /// Every block's weights.
    pub in_blocks: u64,
    /// `vocab x hidden`, when the vocabulary is known.
    pub embedding: Option<u64>,
    /// Blocks, embedding, an untied output head and the final norm's scale.
    pub total_untied_head: Option<u64>,
    /// Calculon's count, for its GPT block.
    pub calculon: Option<u64>,
}

/// Counts `model`'s parameters.
///
/// # Errors
/// A count beyond 64 bits, naming what overflows.
pub fn count(model: &ModelSpec) -> Result<Parameters, String> {
    let overflow = |what: &str| format!("the {what} of {} overflow 64 bits", model.name.as_deref().unwrap_or("the model"));
    let mul = |a: u64, b: u64, what: &str| a.checked_mul(b).ok_or_else(|| overflow(what));
    let add = |parts: &[u64], what: &str| parts.iter().try_fold(0u64, |s, p| s.checked_add(*p)).ok_or_else(|| overflow(what));
    let (h, f, a, d, b) = (model.hidden, model.ffn_hidden, model.heads, model.head_dim, model.blocks);
    let kv = model.kv_heads.unwrap_or(a);
    let attention_width = mul(a, d, "attention width")?;
    let kv_width = mul(kv, d, "key/value width")?;
    let q_and_proj = mul(2, mul(h, attention_width, "attention weights")?, "attention weights")?;
    let k_and_v = mul(2, mul(h, kv_width, "key/value weights")?, "key/value weights")?;
    let mlp = mul(if model.gated_mlp { 3 } else { 2 }, mul(h, f, "MLP weights")?, "MLP weights")?;
    let norms = mul(h, if model.norm == Norm::LayerNorm { 4 } else { 2 }, "norm weights")?;
    let block = add(&[q_and_proj, k_and_v, mlp, norms], "block weights")?;
    let in_blocks = mul(block, b, "blocks' weights")?;
    let embedding = model.vocab.map(|v| mul(v, h, "embedding")).transpose()?;
    let total_untied_head = embedding.map(|e| add(&[in_blocks, e, e, h], "parameters")).transpose()?;
    let gpt = model.norm == Norm::LayerNorm && !model.gated_mlp && kv == a;
    let calculon = if gpt {
        // Megatron-LM's equation 2, as Calculon writes it.
        let per_block = add(
            &[
                mul(2, mul(h, f, "MLP")?, "MLP")?,
                mul(4, mul(h, attention_width, "attention")?, "attention")?,
                h,
                f,
                mul(3, attention_width, "biases")?,
                h,
                mul(4, h, "norms")?,
            ],
            "Calculon's block",
        )?;
        let embeddings = mul(add(&[51_200, model.seq_len], "embeddings")?, h, "embeddings")?;
        Some(add(&[mul(per_block, b, "Calculon's blocks")?, embeddings], "Calculon's count")?)
    } else {
        None
    };
    Ok(Parameters { model: model.name.clone(), block, blocks: b, in_blocks, embedding, total_untied_head, calculon })
}

#[cfg(test)]
mod tests {
    use super::count;
    use crate::analysis::workload::{derive_training_block, BlockFacts, TrainingSpec};

    fn spec(path: &str) -> TrainingSpec {
        let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).expect("spec");
        serde_json::from_str(&text).expect("a training spec")
    }

    /// The block's weights are what the plan counts (the algebra's weight
    /// space at one tensor-parallel rank, in elements).
    #[test]
    fn a_block_is_the_weights_the_plan_counts() {
        for path in ["test/Execution/Inputs/gpt-2blocks-adam.json", "test/Execution/Inputs/llama-1block-gqa2-adam.json"] {
            let spec = spec(path);
            let facts = BlockFacts::from_derivation(&derive_training_block(&spec).expect("derives"), &spec);
            let counted = count(&spec.model).expect("counts");
            assert_eq!(counted.block * spec.workload.datatype.bytes(), facts.block_weight_space, "{path}");
            assert_eq!(counted.in_blocks, counted.block * spec.model.blocks);
        }
    }

    #[test]
    fn absurd_sizes_are_an_error_not_a_wrap() {
        let mut model = spec("test/Execution/Inputs/gpt-2blocks-adam.json").model;
        model.hidden = u64::MAX / 2;
        assert!(count(&model).unwrap_err().contains("overflow 64 bits"));
    }
}
