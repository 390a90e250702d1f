//! Calculon's input files as they are: a model file (`models/*.json` of its
//! repository) and an execution file (`examples/*.json`: the strategy, the
//! network tier of each axis and the step options) make one [`TrainingSpec`]
//! and what an estimate needs besides it ([`CalculonRun`]).
//!
//! Field by field: `tensor_par`, `pipeline_par`, `data_par` are
//! `mapping.tp`, `pp`, `dp` (`num_procs` must be their product);
//! `pipeline_interleaving`, `optimizer_sharding`, `seq_par_ag_redo`,
//! `fused_activation` keep their names; `activation_recompute` is
//! `mapping.recompute`, `tensor_par_comm_type` `mapping.tp_comm`,
//! `tensor_par_overlap` `mapping.tp_overlap`; `batch_size` and
//! `microbatch_size` are `workload.global_batch` and `microbatch`,
//! `datatype` is `workload.datatype`; `attention_type = multiquery` is one
//! KV head (`model.kv_heads = 1`); `*_par_net` bind the axes to network
//! tiers; `data_par_overlap` and `training = false` are estimate options
//! (they price the same program differently), and so are the three
//! `*_offload` flags.

use serde::Deserialize;
use thiserror::Error;

use super::spec::{ModelSpec, SpecError, TrainingSpec};

/// A Calculon execution file (`Llm.Execution`'s fields).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct CalculonExecution {
    num_procs: u64,
    tensor_par: u64,
    pipeline_par: u64,
    data_par: u64,
    tensor_par_net: usize,
    pipeline_par_net: usize,
    data_par_net: usize,
    batch_size: u64,
    microbatch_size: u64,
    datatype: String,
    fused_activation: bool,
    attention_type: String,
    activation_recompute: String,
    pipeline_interleaving: u64,
    optimizer_sharding: bool,
    tensor_par_comm_type: String,
    tensor_par_overlap: String,
    seq_par_ag_redo: bool,
    data_par_overlap: bool,
    weight_offload: bool,
    activations_offload: bool,
    optimizer_offload: bool,
    training: bool,
}

/// What a Calculon execution says beyond the spec: where each axis
/// communicates and how the step is priced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalculonRun {
    /// Network tiers of TP, PP and DP (`tensor_par_net`, ...).
    pub tp_net: usize,
    pub pp_net: usize,
    pub dp_net: usize,
    /// `data_par_overlap`.
    pub data_par_overlap: bool,
    /// `training` (false: the forward-only inference step).
    pub training: bool,
    /// `weight_offload`, `activations_offload`, `optimizer_offload`.
    pub weight_offload: bool,
    pub activations_offload: bool,
    pub optimizer_offload: bool,
}

/// Why Calculon's files do not make a spec.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CalculonError {
    #[error("{0}")]
    Model(SpecError),
    #[error("not a Calculon execution file: {0}")]
    Parse(String),
    #[error("num_procs = {num_procs} must be tensor_par x pipeline_par x data_par = {product}")]
    NumProcs { num_procs: u64, product: u128 },
    #[error("attention_type '{0}' is neither multihead nor multiquery")]
    AttentionType(String),
    #[error("the execution makes no valid spec: {0}")]
    Spec(SpecError),
}

/// The spec and run options of Calculon's model file `model_json` (named
/// `model_name`) and execution file `execution_json`, each read as it is.
///
/// # Errors
/// A file that is not what it should be (unknown or missing fields name
/// themselves), `num_procs` not the product of the
/// parallelisms, or a strategy the spec rules reject (naming the spec
/// field).
pub fn spec_from_calculon(
    model_json: &str,
    model_name: Option<&str>,
    execution_json: &str,
) -> Result<(TrainingSpec, CalculonRun), CalculonError> {
    let mut model = ModelSpec::from_any_json(model_json, model_name).map_err(CalculonError::Model)?;
    let exe: CalculonExecution = serde_json::from_str(execution_json).map_err(|e| CalculonError::Parse(e.to_string()))?;
    let product = u128::from(exe.tensor_par) * u128::from(exe.pipeline_par) * u128::from(exe.data_par);
    if u128::from(exe.num_procs) != product {
        return Err(CalculonError::NumProcs { num_procs: exe.num_procs, product });
    }
    match exe.attention_type.as_str() {
        "multihead" => {}
        "multiquery" => model.kv_heads = Some(1),
        other => return Err(CalculonError::AttentionType(other.to_string())),
    }
    let json = serde_json::json!({
        "model": model,
        "workload": {"global_batch": exe.batch_size, "microbatch": exe.microbatch_size, "datatype": exe.datatype},
        "mapping": {
            "tp": exe.tensor_par, "pp": exe.pipeline_par, "dp": exe.data_par,
            "pipeline_interleaving": exe.pipeline_interleaving, "recompute": exe.activation_recompute,
            "tp_comm": exe.tensor_par_comm_type, "tp_overlap": exe.tensor_par_overlap,
            "seq_par_ag_redo": exe.seq_par_ag_redo, "fused_activation": exe.fused_activation,
            "optimizer_sharding": exe.optimizer_sharding
        }
    });
    let spec = TrainingSpec::from_json(&json.to_string()).map_err(CalculonError::Spec)?;
    let run = CalculonRun {
        tp_net: exe.tensor_par_net,
        pp_net: exe.pipeline_par_net,
        dp_net: exe.data_par_net,
        data_par_overlap: exe.data_par_overlap,
        training: exe.training,
        weight_offload: exe.weight_offload,
        activations_offload: exe.activations_offload,
        optimizer_offload: exe.optimizer_offload,
    };
    Ok((spec, run))
}
