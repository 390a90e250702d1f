//! Every statistic `calculon llm` prints (`Llm.get_stats_json`), under its
//! name and in its order: the block's work, times and sizes, the step's
//! memory and times, link times, the bandwidths overlap and offload would
//! need, efficiencies and the sample rate.
//!
//! Calculon's own figures throughout, where Blueprint reports a corrected
//! one elsewhere: `block_re_flops`, `block_re_mem_accessed`,
//! `block_re_flops_time` and `block_re_mem_time` are its running prefix
//! sums, and under DP overlap with recompute the DP exposed time (and the
//! total, the sample rate, the efficiencies and the overlap bandwidths) is
//! its figure (see `test/oracles/calculon/FULL-MODEL.md`). Without offload
//! (Blueprint models none) the `*_with_offload` fields are Calculon's
//! minimum memory per tier-1 field (what it would keep with offload), the
//! offload exposed times are its `max(0, ·)` overheads and
//! `proc_mem_tier2_cap_req` is 0.

use serde_json::Value;

use super::{estimate, layer_time, rates_of, step_tasks, EstimateError, EstimateOptions, TaskFacts};
use crate::analysis::system::{NetworkBinding, SystemProfile};
use crate::analysis::workload::{BlockFacts, Phase, Recompute, TrainingSpec};

/// One statistic: Calculon's name and its value (a JSON number; `null`
/// where Calculon has none, as its `act_checkpoint_size_with_offload` of
/// an inference step).
pub type Statistic = (&'static str, Value);

/// Calculon's statistics of one step of `spec` (its `calculon llm` JSON,
/// in its order), from the block's tasks and facts as [`estimate`] takes
/// them. An inference step's `block_act_storage_space` is every op's
/// activation ([`BlockFacts::block_act_all_space`], which the facts must
/// then state; else their training storage is printed).
///
/// # Errors
/// As [`estimate`] in Calculon-compatible DP-overlap mode.
pub fn calculon_stats(
    tasks: &[TaskFacts],
    block: &BlockFacts,
    spec: &TrainingSpec,
    system: &SystemProfile,
    binding: &NetworkBinding,
    options: &EstimateOptions,
) -> Result<Vec<Statistic>, EstimateError> {
    let options = EstimateOptions { calculon_compat_dp_overlap: true, ..*options };
    let est = estimate(tasks, block, spec, system, binding, &options)?;
    let training = !options.forward_only;
    let map = &spec.mapping;
    let rates = rates_of(spec, system, binding.tp)?;
    let (step, edge) = step_tasks(tasks, spec, &options)?;
    let recompute = if training && (map.recompute != Recompute::None || map.seq_par_ag_redo) {
        layer_time::calculon_recompute_sums(&step, &rates, spec)?
    } else {
        layer_time::RecomputeSums::default()
    };
    let tp_bw_overlap_req = layer_time::tp_bw_overlap_req(&step, edge.as_deref(), &rates);
    // The edge block's TP bytes (different under p2p_rs_ag).
    let phase_bytes = |phase: Phase| edge.as_ref().map(|e| e.iter().filter(|t| t.phase == phase).map(|t| t.message_bytes).sum::<u64>());
    let facts = serde_json::to_value(block).map_err(|_| EstimateError::Task { id: "block".into(), reason: "unserializable facts" })?;
    let fact = |name: &str| facts[name].clone();
    let zero_unless = |keep: bool, name: &str| if keep { fact(name) } else { Value::from(0) };
    let num = |x: f64| number(x);
    let t = &est.block;
    let x = &est.extras;
    let ts = &est.timing_seconds;
    let mem = &est.memory.per_processor;
    let bpp = spec.blocks_per_rank();
    let m = spec.microbatch_count();
    let full = map.recompute == Recompute::Full;

    let storage = if training { block.block_act_storage_space } else { block.block_act_all_space.unwrap_or(block.block_act_storage_space) };
    let checkpoint = if training { block.block_act_checkpoint_size } else { 0 };
    let (wg, wg_ns, act_grad, optim) = if training {
        (block.block_weight_grad_space, block.block_weight_grad_space_no_sharding, block.block_act_grad_space, block.block_optimizer_space)
    } else {
        (0.0, 0, 0, 0.0)
    };
    let dp_size = if training && map.dp > 1 { block.block_dp_size } else { 0 };
    let bw_pp = if training { block.block_bw_pp_size } else { 0 };

    // Minimum tier-1 memory with offload (Calculon's `*_min`).
    let act_min = if full { block.block_act_working_space } else { block.block_act_working_space + storage };
    let checkpoint_min = match (training, full) {
        (false, _) => Value::Null,
        (true, false) => Value::from(0),
        (true, true) => Value::from(2 * checkpoint),
    };

    // Bandwidths offload would need (computed whatever is offloaded).
    let [bfw, efw, bbw, ebw] = x.slots_no_offload;
    let fw_window = (bfw - t.block_fw_mem_time).min(efw - t.block_fw_mem_time);
    let bw_mem = t.block_agrad_mem_time + t.block_wgrad_mem_time;
    let bw_window = (bbw - bw_mem).min(ebw - bw_mem);
    let act_offload = if full { checkpoint } else { storage } as f64;
    let optim_offload_bw_req = if training { (wg + optim) / bw_window } else { 0.0 };
    let (fw_size, bw_size) = (x.fw_offload_size, x.bw_offload_size);
    let offload_mem_bw_req = if training { (fw_size / fw_window).max(bw_size / bw_window) } else { fw_size / fw_window };

    let useful_flops = if training {
        block.block_fw_flops as f64 + (block.block_agrad_flops as f64 + block.block_wgrad_flops as f64 + block.block_optim_flops)
    } else {
        block.block_fw_flops as f64
    };
    let peak = rates.matrix.tflops() * 1e12;
    let compute_time = ts.fw_time + ts.bw_time + ts.optim_step_time;
    let perfect_time = (bpp * m) as f64 * useful_flops / peak;

    let stats: Vec<Statistic> = vec![
        ("block_fw_flops", fact("block_fw_flops")),
        ("block_fw_flops_time", num(t.block_fw_flops_time)),
        ("block_fw_mem_accessed", fact("block_fw_mem_accessed")),
        ("block_fw_mem_time", num(t.block_fw_mem_time)),
        ("block_fw_time", num(t.block_fw_time)),
        ("baseblock_fw_tp_time", num(t.baseblock_fw_tp_time)),
        ("edgeblock_fw_tp_time", num(t.edgeblock_fw_tp_time)),
        ("baseblock_fw_tp_time_exposed", num(t.baseblock_fw_tp_time_exposed)),
        ("edgeblock_fw_tp_time_exposed", num(t.edgeblock_fw_tp_time_exposed)),
        ("block_re_flops", num(recompute.flops)),
        ("block_re_flops_time", num(recompute.flops_time)),
        ("block_re_mem_accessed", num(recompute.mem_accessed)),
        ("block_re_mem_time", num(recompute.mem_time)),
        ("block_re_time", num(t.block_re_time)),
        ("baseblock_recomm_time", num(t.baseblock_recomm_time)),
        ("edgeblock_recomm_time", num(t.edgeblock_recomm_time)),
        ("baseblock_recomm_time_exposed", num(t.baseblock_recomm_time_exposed)),
        ("edgeblock_recomm_time_exposed", num(t.edgeblock_recomm_time_exposed)),
        ("block_agrad_flops", zero_unless(training, "block_agrad_flops")),
        ("block_agrad_flops_time", num(t.block_agrad_flops_time)),
        ("block_agrad_mem_accessed", zero_unless(training, "block_agrad_mem_accessed")),
        ("block_agrad_mem_time", num(t.block_agrad_mem_time)),
        ("block_agrad_time", num(t.block_agrad_time)),
        ("baseblock_agrad_tp_time", num(t.baseblock_agrad_tp_time)),
        ("edgeblock_agrad_tp_time", num(t.edgeblock_agrad_tp_time)),
        ("baseblock_agrad_tp_time_exposed", num(t.baseblock_agrad_tp_time_exposed)),
        ("edgeblock_agrad_tp_time_exposed", num(t.edgeblock_agrad_tp_time_exposed)),
        ("block_wgrad_flops", zero_unless(training, "block_wgrad_flops")),
        ("block_wgrad_flops_time", num(t.block_wgrad_flops_time)),
        ("block_wgrad_mem_accessed", zero_unless(training, "block_wgrad_mem_accessed")),
        ("block_wgrad_mem_time", num(t.block_wgrad_mem_time)),
        ("block_wgrad_time", num(t.block_wgrad_time)),
        ("block_optim_flops", zero_unless(training, "block_optim_flops")),
        ("block_optim_flops_time", num(t.block_optim_flops_time)),
        ("block_optim_mem_accessed", zero_unless(training, "block_optim_mem_accessed")),
        ("block_optim_mem_time", num(t.block_optim_mem_time)),
        ("block_optim_time", num(t.block_optim_time)),
        ("baseblock_fw_tp_size", fact("baseblock_fw_tp_size")),
        ("edgeblock_fw_tp_size", phase_bytes(Phase::Forward).map_or_else(|| fact("baseblock_fw_tp_size"), Value::from)),
        ("baseblock_bw_tp_size", zero_unless(training, "baseblock_bw_tp_size")),
        (
            "edgeblock_bw_tp_size",
            if training {
                phase_bytes(Phase::ActivationGradient).map_or_else(|| fact("baseblock_bw_tp_size"), Value::from)
            } else {
                0.into()
            },
        ),
        ("baseblock_recomm_size", zero_unless(training, "baseblock_recomm_size")),
        (
            "edgeblock_recomm_size",
            if training {
                phase_bytes(Phase::Recommunication).map_or_else(|| fact("baseblock_recomm_size"), Value::from)
            } else {
                0.into()
            },
        ),
        ("block_fw_pp_size", fact("block_fw_pp_size")),
        ("block_bw_pp_size", Value::from(bw_pp)),
        ("block_dp_size", Value::from(dp_size)),
        ("tp_bw_overlap_req", num(tp_bw_overlap_req)),
        ("dp_bw_overlap_req_chunk", num(x.dp_bw_overlap_req_chunk)),
        ("dp_bw_overlap_req_tail", num(x.dp_bw_overlap_req_tail)),
        ("block_weight_space", fact("block_weight_space")),
        ("block_act_working_space", fact("block_act_working_space")),
        ("block_act_storage_space", Value::from(storage)),
        ("block_act_checkpoint_size", Value::from(checkpoint)),
        ("block_weight_grad_space", num(wg)),
        ("block_weight_grad_space_no_sharding", Value::from(wg_ns)),
        ("block_act_grad_space", Value::from(act_grad)),
        ("block_optimizer_space", num(optim)),
        ("weight_space_with_offload", Value::from(2 * block.block_weight_space)),
        ("act_space_with_offload", Value::from(act_min)),
        ("act_checkpoint_size_with_offload", checkpoint_min),
        ("act_grad_space_with_offload", num(mem.act_grad_space)),
        ("weight_grad_space_with_offload", num(if training { wg_ns as f64 + wg } else { 0.0 })),
        ("optimizer_space_with_offload", num(if training { optim * 2.0 } else { 0.0 })),
        ("weight_space", num(mem.weight_space)),
        ("act_space", num(mem.act_space)),
        ("act_checkpoint_size", num(mem.act_checkpoint_size)),
        ("act_grad_space", num(mem.act_grad_space)),
        ("weight_grad_space", num(mem.weight_grad_space)),
        ("optimizer_space", num(mem.optimizer_space)),
        ("fw_time", num(ts.fw_time)),
        ("bw_time", num(ts.bw_time)),
        ("optim_step_time", num(ts.optim_step_time)),
        ("recompute_time", num(ts.recompute_time)),
        ("recomm_link_time", num(x.recomm_link_time)),
        ("recomm_exposed_time", num(ts.recomm_exposed_time)),
        ("bubble_time", num(ts.bubble_time)),
        ("tp_comm_link_time", num(x.tp_comm_link_time)),
        ("pp_comm_link_time", num(x.pp_comm_link_time)),
        ("dp_comm_link_time", num(x.dp_comm_link_time)),
        ("tp_comm_exposed_time", num(ts.tp_comm_exposed_time)),
        ("pp_comm_exposed_time", num(ts.pp_comm_exposed_time)),
        ("dp_comm_exposed_time", num(ts.dp_comm_exposed_time)),
        ("fw_offload_exposed_time", num(x.fw_offload_exposed_time)),
        ("bw_offload_exposed_time", num(x.bw_offload_exposed_time)),
        ("total_time", num(ts.total_time)),
        ("act_offload_bw_req", num(act_offload / fw_window)),
        ("weight_offload_bw_req", num(block.block_weight_space as f64 / fw_window)),
        ("optim_offload_bw_req", num(optim_offload_bw_req)),
        ("offload_mem_bw_req", num(offload_mem_bw_req)),
        ("proc_mem_tier1_cap_req", num(mem.proc_mem_tier1_cap_req)),
        ("proc_mem_tier2_cap_req", num(est.memory.proc_mem_tier2_cap_req)),
        ("useful_flops", num(useful_flops)),
        ("compute_efficiency", num(perfect_time / compute_time)),
        ("system_efficiency", num(compute_time / ts.total_time)),
        ("total_efficiency", num(perfect_time / ts.total_time)),
        ("sample_rate", num(est.sample_rate)),
    ];
    Ok(stats)
}

/// A JSON number: integral values below 2^53 as integers (Calculon's
/// counts print so), others as floats; a non-finite value (a division by
/// a zero window) as `null`.
fn number(x: f64) -> Value {
    if !x.is_finite() {
        return Value::Null;
    }
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// The statistics as one JSON object, in Calculon's order.
#[must_use]
pub fn to_json(stats: &[Statistic]) -> String {
    let mut out = String::from("{\n");
    for (i, (name, value)) in stats.iter().enumerate() {
        let sep = if i + 1 == stats.len() { "" } else { "," };
        out.push_str(&format!("  \"{name}\": {value}{sep}\n"));
    }
    out.push_str("}\n");
    out
}
