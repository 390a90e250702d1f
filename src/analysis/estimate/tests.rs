//! Oracle gate of the closed-form estimate: every Calculon case, every
//! time field, relative error ≤ 1e-9. Expected values come from the
//! oracle files only.

use serde_json::Value;

use super::*;
use crate::analysis::system::{NetworkBinding, SystemProfile};
use crate::analysis::workload::{derive_training_block, Datatype, Recompute, TpComm};

pub(crate) const ORACLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon");
/// Cases recorded from Calculon for these tests (see the README beside it).
const RECORDED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/calculon/estimate-cases.json");
const TOLERANCE: f64 = 1e-9;

pub(crate) struct Case {
    pub name: String,
    pub spec: TrainingSpec,
    pub system: String,
    pub binding: NetworkBinding,
    pub dp_overlap: bool,
    /// Calculon's `training = false` (its inference step).
    pub forward_only: bool,
    /// Calculon's `*_offload`.
    pub offload: Offload,
    pub timing: Value,
    pub sample_rate: Option<f64>,
    /// Calculon's composition with the recompute defect fixed (DP overlap).
    pub fixed: Option<Value>,
}

pub(crate) fn cases_of(path: &str) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc: Value = serde_json::from_str(&text).expect("oracle JSON");
    doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let name = case["name"].as_str().expect("name").to_owned();
            let spec = TrainingSpec {
                name: Some(name.clone()),
                model: serde_json::from_value(case["model"].clone()).expect("model"),
                workload: serde_json::from_value(case["workload"].clone()).expect("workload"),
                mapping: serde_json::from_value(case["mapping"].clone()).expect("mapping"),
            };
            // The Table 5 cases state no binding: TP on tier 0, PP and DP on tier 1.
            let binding = match case.get("networks") {
                Some(networks) => serde_json::from_value(networks.clone()).expect("networks"),
                None => NetworkBinding { tp: 0, pp: 1, dp: 1 },
            };
            Case {
                name,
                spec,
                system: case["system"].as_str().expect("system").to_owned(),
                binding,
                dp_overlap: case["overlap"]["dp"].as_bool().unwrap_or(false),
                forward_only: case["training"].as_bool() == Some(false),
                offload: Offload {
                    weights: case["offload"]["weight"].as_bool().unwrap_or(false),
                    activations: case["offload"]["activations"].as_bool().unwrap_or(false),
                    optimizer: case["offload"]["optimizer"].as_bool().unwrap_or(false),
                },
                timing: case["timing_seconds"].clone(),
                sample_rate: case.get("sample_rate").and_then(Value::as_f64),
                fixed: case.get("dp_overlap_fixed").cloned(),
            }
        })
        .collect()
}

pub(crate) fn system(name: &str) -> SystemProfile {
    let oracle = format!("{ORACLES}/systems/{name}.json");
    let local = format!("{}/test/Inputs/calculon/systems/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let path = if std::path::Path::new(&local).exists() { local } else { oracle };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    SystemProfile::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub(crate) fn run(case: &Case, options: &EstimateOptions) -> Estimate {
    let derivation = derive_training_block(&case.spec).expect("derives");
    let block = BlockFacts::from_derivation(&derivation, &case.spec);
    estimate(&block_tasks(&derivation), &block, &case.spec, &system(&case.system), &case.binding, options)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

fn close(got: f64, want: f64) -> bool {
    if want == 0.0 {
        got == 0.0
    } else {
        (got - want).abs() <= TOLERANCE * want.abs()
    }
}

/// Mismatching fields of `got` against the oracle's `timing_seconds`.
fn mismatches(case: &Case, got: &Estimate) -> Vec<String> {
    let mut failures = Vec::new();
    for (field, value) in got.timing_seconds.fields() {
        let want = case.timing[field].as_f64().unwrap_or(f64::NAN);
        if !close(value, want) {
            failures.push(format!("{}: {field} = {value:e}, Calculon {want:e} (rel {:e})", case.name, (value - want) / want));
        }
    }
    let total = case.timing["total_time"].as_f64().unwrap_or(f64::NAN);
    let want_rate = case.sample_rate.unwrap_or(case.spec.workload.global_batch as f64 / total);
    if !close(got.sample_rate, want_rate) {
        failures.push(format!("{}: sample_rate = {}, Calculon {want_rate}", case.name, got.sample_rate));
    }
    failures
}

#[test]
fn every_oracle_case_matches_calculon() {
    let mut cases = cases_of(&format!("{ORACLES}/seqsel-table5.json"));
    assert_eq!(cases.len(), 8);
    cases.extend(cases_of(&format!("{ORACLES}/fullmodel-random.json")));
    assert_eq!(cases.len(), 32);
    let failures: Vec<String> = cases.iter().flat_map(|case| mismatches(case, &run(case, &EstimateOptions::default()))).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Calculon's uneven pipelines (see the oracle README).
const UNEVEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/uneven-cases.json");

#[test]
fn uneven_pipeline_cases_match_calculon() {
    // PP not dividing the blocks (the fullest stage's memory, the bubble
    // shortened by the short stages' missing blocks) and interleaving with
    // microbatches not a multiple of PP (extra bubbles): every time, the
    // sample rate and every memory field, from the algebra (whose task
    // order rounds differently in the last bit; through the plan they are
    // equal bit for bit: test/Pipeline/calculon-oracle.test).
    let cases = cases_of(UNEVEN);
    assert_eq!(cases.len(), 24);
    let interleaved_short =
        |c: &Case| c.spec.mapping.pipeline_interleaving > 1 && !c.spec.microbatch_count().is_multiple_of(c.spec.mapping.pp);
    assert!(cases.iter().filter(|c| c.spec.uneven_blocks()).count() >= 15);
    assert!(cases.iter().filter(|c| interleaved_short(c)).count() >= 10);
    assert!(cases.iter().any(|c| !c.spec.uneven_blocks() && interleaved_short(c)));
    assert!(cases.iter().any(|c| c.spec.uneven_blocks() && c.spec.blocks_per_virtual_chunk() == 1));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(UNEVEN).expect("recorded")).expect("JSON");
    let mut failures = Vec::new();
    for (case, recorded) in cases.iter().zip(doc["cases"].as_array().expect("cases")) {
        let options = EstimateOptions {
            data_par_overlap: case.dp_overlap,
            calculon_compat_dp_overlap: true,
            forward_only: false,
            offload: case.offload,
        };
        let got = run(case, &options);
        let mut check = |what: String, got: f64, want: Option<f64>| {
            if !want.is_some_and(|want| close(got, want)) {
                failures.push(format!("{}: {what} = {got}, Calculon {want:?}", case.name));
            }
        };
        for (field, value) in got.timing_seconds.fields() {
            check(format!("timing_seconds.{field}"), value, recorded["timing_seconds"][field].as_f64());
        }
        check("sample_rate".into(), got.sample_rate, recorded["sample_rate"].as_f64());
        let per = &recorded["per_processor"];
        let plain = crate::analysis::schedule::ProcessorMemory::calculon(
            &BlockFacts::from_derivation(&derive_training_block(&case.spec).expect("derives"), &case.spec),
            &case.spec,
        );
        for (field, value) in plain.fields() {
            // With offload Calculon's tier-1 total is the offloaded one.
            let value = if field == "proc_mem_tier1_cap_req" { got.memory.per_processor.proc_mem_tier1_cap_req } else { value };
            check(format!("per_processor.{field}"), value, per[field].as_f64());
        }
        if case.offload.any() {
            check("proc_mem_tier2_cap_req".into(), got.memory.proc_mem_tier2_cap_req, per["proc_mem_tier2_cap_req"].as_f64());
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn uneven_stages_hold_their_own_blocks() {
    // Blueprint's per-stage memory: each stage its own blocks and its own
    // schedule's peak; the short stages need less than the fullest.
    let case = cases_of(UNEVEN).into_iter().find(|c| c.name.starts_with("megatron-5B-t1p5d1v1")).expect("case");
    let spec = &case.spec;
    assert_eq!((0..5).map(|s| spec.stage_blocks(s)).collect::<Vec<_>>(), vec![5, 5, 5, 5, 4]);
    let block = BlockFacts::from_derivation(&derive_training_block(spec).expect("derives"), spec);
    let stages = crate::analysis::schedule::ProcessorMemory::per_stage(&block, spec);
    assert_eq!(stages[0].weight_space, 5.0 * block.block_weight_space as f64);
    assert_eq!(stages[4].weight_space, 4.0 * block.block_weight_space as f64);
    // 3 microbatches: stage 0 holds all 3 (15 blocks), stage 4 one (4 blocks).
    assert_eq!(stages[0].act_space, block.block_act_working_space as f64 + block.block_act_storage_space as f64 * 14.0);
    assert_eq!(stages[4].act_space, block.block_act_working_space as f64 + block.block_act_storage_space as f64 * 3.0);
}

/// Calculon with `tensor_par_overlap` ring and pipe (see the README beside it).
const TP_OVERLAP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/calculon/tp-overlap-cases.json");

#[test]
fn tp_overlap_cases_match_calculon() {
    // Every oracle case with TP > 1 under ring and pipe, and the recorded
    // p2p_rs_ag, roofline and DP-overlap cases under ring: block facts,
    // memory per processor and step time.
    let cases = cases_of(TP_OVERLAP);
    assert_eq!(cases.len(), 66);
    assert!(cases.iter().any(|c| c.spec.mapping.tp_overlap == TpOverlap::Pipe));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(TP_OVERLAP).expect("recorded")).expect("JSON");
    let mut failures = Vec::new();
    for (case, recorded) in cases.iter().zip(doc["cases"].as_array().expect("cases")) {
        let derivation = derive_training_block(&case.spec).expect("derives");
        let facts = BlockFacts::from_derivation(&derivation, &case.spec);
        let want: BlockFacts = serde_json::from_value(recorded["block"].clone()).expect("block facts");
        for (field, got, want) in facts.mismatches(&want) {
            failures.push(format!("{}: {field} = {got}, Calculon {want}", case.name));
        }
        let memory = crate::analysis::schedule::ProcessorMemory::calculon(&facts, &case.spec);
        for (field, got) in memory.fields() {
            let want = recorded["per_processor"][field].as_f64().unwrap_or(f64::NAN);
            if !close(got, want) {
                failures.push(format!("{}: per_processor.{field} = {got}, Calculon {want}", case.name));
            }
        }
        let options = EstimateOptions { data_par_overlap: case.dp_overlap, calculon_compat_dp_overlap: true, ..EstimateOptions::default() };
        failures.extend(mismatches(case, &run(case, &options)));
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

/// Calculon's multi-query attention (`attention_type = multiquery`,
/// `kv_heads = 1` in the spec) recorded from Calculon (see the oracle README).
const MULTIQUERY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/multiquery-cases.json");

/// Block facts, memory per processor and step time of `file`'s cases
/// against Calculon's; the mismatches.
fn whole_step_mismatches(file: &str) -> Vec<String> {
    let cases = cases_of(file);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).expect("recorded")).expect("JSON");
    let mut failures = Vec::new();
    for (case, recorded) in cases.iter().zip(doc["cases"].as_array().expect("cases")) {
        let derivation = derive_training_block(&case.spec).expect("derives");
        let facts = BlockFacts::from_derivation(&derivation, &case.spec);
        let want: BlockFacts = serde_json::from_value(recorded["block"].clone()).expect("block facts");
        for (field, got, want) in facts.mismatches(&want) {
            failures.push(format!("{}: {field} = {got}, Calculon {want}", case.name));
        }
        let memory = crate::analysis::schedule::ProcessorMemory::calculon(&facts, &case.spec);
        for (field, got) in memory.fields() {
            let want = recorded["per_processor"][field].as_f64().unwrap_or(f64::NAN);
            if !close(got, want) {
                failures.push(format!("{}: per_processor.{field} = {got}, Calculon {want}", case.name));
            }
        }
        let options = EstimateOptions { data_par_overlap: case.dp_overlap, calculon_compat_dp_overlap: true, ..EstimateOptions::default() };
        failures.extend(mismatches(case, &run(case, &options)));
    }
    failures
}

#[test]
fn multiquery_cases_match_calculon() {
    // One KV head replicated over TP (1 to 8), untiled and tiled (ring,
    // pipe), every recompute mode and TP communication, DP overlap with
    // Calculon's composition, roofline processing, float8, interleaving.
    let cases = cases_of(MULTIQUERY);
    assert_eq!(cases.len(), 36);
    assert!(cases.iter().all(|c| c.spec.model.kv_heads == Some(1)));
    for tp in [1, 2, 4, 8] {
        assert!(cases.iter().any(|c| c.spec.mapping.tp == tp), "TP {tp}");
    }
    for overlap in [TpOverlap::None, TpOverlap::Ring, TpOverlap::Pipe] {
        assert!(cases.iter().any(|c| c.spec.mapping.tp > 1 && c.spec.mapping.tp_overlap == overlap), "{overlap:?}");
    }
    assert!(cases.iter().any(|c| c.dp_overlap && c.spec.mapping.recompute != Recompute::None && c.spec.mapping.tp_overlap.is_overlapped()));
    let failures = whole_step_mismatches(MULTIQUERY);
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

/// Calculon's inference step (`training = false`), recorded from Calculon
/// (see the oracle README).
const INFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/inference-cases.json");

#[test]
fn inference_steps_match_calculon() {
    // The forward pass of the step alone: forward times and TP exposure,
    // forward pipeline transfers, the bubble (with Calculon's 0-byte
    // backward transfer), no DP; weights and one block's working space.
    let cases = cases_of(INFERENCE);
    assert_eq!(cases.len(), 32);
    assert!(cases.iter().all(|c| c.forward_only));
    assert!(cases.iter().any(|c| c.spec.mapping.pp > 1 && c.spec.mapping.pipeline_interleaving > 1));
    assert!(cases.iter().any(|c| c.spec.mapping.tp_comm == TpComm::P2pRsAg && c.spec.mapping.tp > 1));
    assert!(cases.iter().any(|c| c.spec.mapping.tp_overlap.is_overlapped()));
    assert!(cases.iter().any(|c| c.spec.model.kv_heads == Some(1) && c.spec.mapping.tp > 1));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(INFERENCE).expect("recorded")).expect("JSON");
    let mut failures = Vec::new();
    for (case, recorded) in cases.iter().zip(doc["cases"].as_array().expect("cases")) {
        let got = run(case, &EstimateOptions { forward_only: true, ..EstimateOptions::default() });
        failures.extend(mismatches(case, &got));
        for (field, value) in got.memory.per_processor.fields() {
            let want = recorded["per_processor"][field].as_f64().unwrap_or(f64::NAN);
            if !close(value, want) {
                failures.push(format!("{}: per_processor.{field} = {value}, Calculon {want}", case.name));
            }
        }
        // The forward block facts are the training block's.
        let derivation = derive_training_block(&case.spec).expect("derives");
        let facts = serde_json::to_value(BlockFacts::from_derivation(&derivation, &case.spec)).expect("facts");
        for field in [
            "block_fw_flops",
            "block_fw_mem_accessed",
            "baseblock_fw_tp_size",
            "block_fw_pp_size",
            "block_weight_space",
            "block_act_working_space",
        ] {
            if facts[field].as_f64() != recorded["block"][field].as_f64() {
                failures.push(format!("{}: {field} = {}, Calculon {}", case.name, facts[field], recorded["block"][field]));
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
    // The same cases as training steps are slower and need more memory.
    for case in &cases {
        let (train, infer) =
            (run(case, &EstimateOptions::default()), run(case, &EstimateOptions { forward_only: true, ..EstimateOptions::default() }));
        assert!(infer.timing_seconds.total_time < train.timing_seconds.total_time, "{}", case.name);
        assert!(infer.memory.per_processor.proc_mem_tier1_cap_req < train.memory.per_processor.proc_mem_tier1_cap_req, "{}", case.name);
    }
}

/// Calculon's offload to the second memory tier (see the oracle README).
const OFFLOAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/offload-cases.json");

#[test]
fn offload_cases_match_calculon() {
    // Weights, activations and optimizer state, alone and together, in
    // training (every recompute mode, tiled TP, DP overlap) and in
    // inference: the ten times (offload overheads in the slots), the
    // first tier's requirement (two blocks of what is offloaded) and the
    // second tier's.
    let cases = cases_of(OFFLOAD);
    assert_eq!(cases.len(), 27);
    assert!(cases.iter().all(|c| c.offload.any()));
    assert!(cases.iter().any(|c| c.offload.weights && c.offload.activations && c.offload.optimizer));
    assert!(cases.iter().any(|c| c.forward_only));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(OFFLOAD).expect("recorded")).expect("JSON");
    let mut failures = Vec::new();
    let mut exposed = 0;
    for (case, recorded) in cases.iter().zip(doc["cases"].as_array().expect("cases")) {
        let options = EstimateOptions {
            data_par_overlap: case.dp_overlap,
            calculon_compat_dp_overlap: true,
            forward_only: case.forward_only,
            offload: case.offload,
        };
        let got = run(case, &options);
        failures.extend(mismatches(case, &got));
        let per = &recorded["per_processor"];
        for (field, value) in got.memory.per_processor.fields() {
            let want = per[field].as_f64().unwrap_or(f64::NAN);
            if !close(value, want) {
                failures.push(format!("{}: per_processor.{field} = {value}, Calculon {want}", case.name));
            }
        }
        let want = per["proc_mem_tier2_cap_req"].as_f64().unwrap_or(f64::NAN);
        if !close(got.memory.proc_mem_tier2_cap_req, want) {
            failures.push(format!("{}: proc_mem_tier2_cap_req = {}, Calculon {want}", case.name, got.memory.proc_mem_tier2_cap_req));
        }
        let plain = run(case, &EstimateOptions { offload: Offload::default(), ..options });
        // (In inference, Calculon's first tier with activation offload
        // keeps every activation of two blocks: more than without.)
        if !case.forward_only {
            assert!(got.memory.per_processor.proc_mem_tier1_cap_req <= plain.memory.per_processor.proc_mem_tier1_cap_req, "{}", case.name);
        }
        assert!(got.timing_seconds.total_time >= plain.timing_seconds.total_time, "{}", case.name);
        exposed += usize::from(got.timing_seconds.total_time > plain.timing_seconds.total_time);
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
    // Some cases expose offload time (the transfer outlasts the block).
    assert!(exposed > 0);
    // Calculon's rule: offload needs 3 blocks per processor.
    let mut case = cases_of(OFFLOAD).swap_remove(0);
    case.spec.mapping.pp = case.spec.model.blocks / 2;
    case.spec.mapping.pipeline_interleaving = 1;
    let derivation = derive_training_block(&case.spec).expect("derives");
    let block = BlockFacts::from_derivation(&derivation, &case.spec);
    let options = EstimateOptions { offload: case.offload, ..EstimateOptions::default() };
    let binding = NetworkBinding { tp: 0, pp: 1, dp: 1 };
    let err = estimate(&block_tasks(&derivation), &block, &case.spec, &system("a100_80e"), &binding, &options).expect_err("2 blocks");
    assert!(matches!(err, EstimateError::Offload(_)), "{err}");
}

#[test]
fn inference_steps_refuse_training_choices() {
    let mut case = cases_of(INFERENCE).swap_remove(0);
    let forward = EstimateOptions { forward_only: true, ..EstimateOptions::default() };
    case.spec.mapping.recompute = Recompute::Full;
    let derivation = derive_training_block(&case.spec).expect("derives");
    let block = BlockFacts::from_derivation(&derivation, &case.spec);
    let err =
        estimate(&block_tasks(&derivation), &block, &case.spec, &system(&case.system), &case.binding, &forward).expect_err("recompute");
    assert!(matches!(err, EstimateError::ForwardOnly(_)), "{err}");
    assert!(err.to_string().contains("mapping.recompute must be none"), "{err}");
    case.spec.mapping.recompute = Recompute::None;
    let overlapped = EstimateOptions { data_par_overlap: true, ..forward };
    let err =
        estimate(&block_tasks(&derivation), &block, &case.spec, &system(&case.system), &case.binding, &overlapped).expect_err("DP overlap");
    assert!(err.to_string().contains("no DP gradients"), "{err}");
}

#[test]
fn multiquery_replicates_the_kv_head_over_tp() {
    // The same strategy at TP 4 with 4, 2 and 1 KV heads: K and V split
    // over the ranks (one head each), then replicated (one head each, on 2
    // and 4 ranks): every rank's K/V projections and weights stay one
    // head wide, so the block's work and weights are the same.
    let mut case = cases_of(MULTIQUERY)
        .into_iter()
        .find(|c| c.spec.mapping.tp == 4 && !c.spec.mapping.tp_overlap.is_overlapped())
        .expect("a TP 4 case");
    let mut facts = Vec::new();
    for kv in [4, 2, 1] {
        case.spec.model.kv_heads = Some(kv);
        let derivation = derive_training_block(&case.spec).expect("derives");
        let k = derivation.invocations.iter().find(|v| v.name == "attn.k.fwd").expect("the K projection");
        facts.push((k.ops, BlockFacts::from_derivation(&derivation, &case.spec)));
    }
    assert!(facts.windows(2).all(|w| w[0] == w[1]), "{facts:?}");
    // With 8 KV heads at TP 4 each rank holds two: twice the K work.
    case.spec.model.kv_heads = Some(8);
    let derivation = derive_training_block(&case.spec).expect("derives");
    let k = derivation.invocations.iter().find(|v| v.name == "attn.k.fwd").expect("the K projection");
    assert_eq!(k.ops, 2 * facts[0].0);
    // Neither a divisor nor a multiple of TP: an error naming both.
    (case.spec.model.heads, case.spec.model.kv_heads) = (12, Some(6));
    let err = derive_training_block(&case.spec).expect_err("6 KV heads at TP 4");
    assert_eq!(err, crate::analysis::workload::SpecError::KvHeadsTpMismatch { kv_heads: 6, tp: 4 });
}

#[test]
fn tiled_linears_hide_communication() {
    // The same strategy with and without tiling: ring hides TP time, pipe
    // exposes one tile more than ring; the plain block exposes all of it.
    let case = &cases_of(&format!("{ORACLES}/fullmodel-random.json"))[0];
    let with = |overlap| {
        let mut c =
            Case { spec: case.spec.clone(), name: case.name.clone(), ..cases_of(&format!("{ORACLES}/fullmodel-random.json")).remove(0) };
        c.spec.mapping.tp_overlap = overlap;
        run(&c, &EstimateOptions::default()).timing_seconds.tp_comm_exposed_time
    };
    let (none, ring, pipe) = (with(TpOverlap::None), with(TpOverlap::Ring), with(TpOverlap::Pipe));
    assert!(ring < none && ring < pipe, "none {none}, ring {ring}, pipe {pipe}");
}

#[test]
fn recorded_cases_match_calculon() {
    // p2p_rs_ag edge blocks, roofline processing, DP overlap (Calculon's
    // figure through the compatible option).
    let cases = cases_of(RECORDED);
    assert!(cases.iter().any(|c| c.spec.mapping.tp_comm == TpComm::P2pRsAg));
    assert!(cases.iter().filter(|c| c.dp_overlap).count() >= 6);
    let failures: Vec<String> = cases
        .iter()
        .flat_map(|case| {
            let options =
                EstimateOptions { data_par_overlap: case.dp_overlap, calculon_compat_dp_overlap: true, ..EstimateOptions::default() };
            mismatches(case, &run(case, &options))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn dp_overlap_with_recompute_differs_from_calculon() {
    let mut differing = 0;
    for case in cases_of(RECORDED).iter().filter(|c| c.dp_overlap) {
        let fixed = case.fixed.as_ref().expect("recorded with the fixed composition");
        let blueprint = run(case, &EstimateOptions { data_par_overlap: true, ..EstimateOptions::default() });
        let compat = run(case, &EstimateOptions { data_par_overlap: true, calculon_compat_dp_overlap: true, ..EstimateOptions::default() });
        let figures = blueprint.dp_overlap.expect("DP overlap figures");
        assert_eq!(Some(figures), compat.dp_overlap, "{}", case.name);
        // Calculon's figure is the recorded one; Blueprint's is Calculon's
        // own composition re-run with correct recompute times.
        let calculon = case.timing["dp_comm_exposed_time"].as_f64().expect("recorded");
        let correct = fixed["dp_comm_exposed_time"].as_f64().expect("recorded");
        let figure = figures.calculon.expect("the algebra's tasks have Calculon's layout");
        assert!(close(figure, calculon), "{}: {figure} vs Calculon {calculon}", case.name);
        assert!(close(figures.blueprint, correct), "{}: {} vs fixed Calculon {correct}", case.name, figures.blueprint);
        assert!(close(blueprint.timing_seconds.dp_comm_exposed_time, correct), "{}", case.name);
        assert!(close(blueprint.timing_seconds.total_time, fixed["total_time"].as_f64().expect("recorded")), "{}", case.name);
        assert!(close(blueprint.block.block_re_flops_time, fixed["block_re_flops_time"].as_f64().expect("recorded")), "{}", case.name);
        if case.spec.mapping.recompute == Recompute::None && !case.spec.mapping.seq_par_ag_redo {
            assert_eq!(figures.blueprint, figure, "{}: nothing is recomputed", case.name);
        }
        if (figures.blueprint - figure).abs() > 1e-6 * figure {
            // The prefix sum only ever inflates Calculon's exposure.
            assert!(figure > figures.blueprint, "{}", case.name);
            differing += 1;
        }
    }
    assert!(differing >= 4, "only {differing} recorded cases show the defect");
}

#[test]
fn no_dp_overlap_figures_without_overlap() {
    let cases = cases_of(&format!("{ORACLES}/fullmodel-random.json"));
    let case = cases.iter().find(|c| c.spec.mapping.dp > 1).expect("a DP case");
    assert_eq!(run(case, &EstimateOptions::default()).dp_overlap, None);
    assert!(run(case, &EstimateOptions { data_par_overlap: true, ..EstimateOptions::default() }).dp_overlap.is_some());
}

#[test]
fn p2p_rs_ag_edge_blocks_communicate_sequence_parallel() {
    let cases = cases_of(RECORDED);
    let case = cases
        .iter()
        .find(|c| c.spec.mapping.tp_comm == TpComm::P2pRsAg && c.spec.mapping.recompute == Recompute::AttnOnly)
        .expect("p2p_rs_ag attn_only case");
    let got = run(case, &EstimateOptions::default());
    assert_ne!(got.block.baseblock_fw_tp_time, got.block.edgeblock_fw_tp_time);
    // The base block re-gathers nothing under all-reduce; the edge block
    // re-gathers the attention input.
    assert_eq!(got.block.baseblock_recomm_time, 0.0);
    assert!(got.block.edgeblock_recomm_time > 0.0);
    let derivation = derive_training_block(&case.spec).expect("derives");
    let edge = edge::edge_tp_tasks(&block_tasks(&derivation), &case.spec).expect("edge tasks");
    let ids: Vec<(&str, Capability)> = edge.iter().map(|t| (t.id.as_str(), t.capability)).collect();
    for expected in [
        ("attn.tp_entry.fwd", Capability::AllGather),
        ("attn.tp_entry.agrad", Capability::ReduceScatter),
        ("attn.tp_entry.recomm", Capability::AllGather),
        ("attn.tp_exit.fwd", Capability::ReduceScatter),
        ("attn.tp_exit.agrad", Capability::AllGather),
        ("mlp.tp_entry.fwd", Capability::AllGather),
        ("mlp.tp_exit.agrad", Capability::AllGather),
    ] {
        assert!(ids.contains(&expected), "{expected:?} not in {ids:?}");
    }
    assert!(!ids.iter().any(|(id, _)| *id == "mlp.tp_entry.recomm"));
}

#[test]
fn stages_are_equal_and_add_up() {
    for case in cases_of(&format!("{ORACLES}/fullmodel-random.json")) {
        let got = run(&case, &EstimateOptions::default());
        assert_eq!(got.stages, case.spec.mapping.pp);
        assert_eq!(got.stage.idle, got.timing_seconds.bubble_time);
        assert!(close(got.stage.busy + got.stage.idle, got.timing_seconds.total_time), "{}", case.name);
        assert_eq!(got.stage_time(got.stages - 1), Some(got.stage));
        assert_eq!(got.stage_time(got.stages), None);
    }
}

#[test]
fn memory_is_checked_against_mem1() {
    let cases = cases_of(&format!("{ORACLES}/fullmodel-random.json"));
    let case = &cases[0];
    let per_processor =
        serde_json::from_str::<Value>(&std::fs::read_to_string(format!("{ORACLES}/fullmodel-random.json")).expect("oracle")).expect("json")
            ["cases"][0]["per_processor"]["proc_mem_tier1_cap_req"]
            .as_f64()
            .expect("recorded");
    let got = run(case, &EstimateOptions::default());
    assert!(got.memory.fits);
    assert_eq!(got.memory.over_by_bytes, 0.0);
    assert!(close(got.memory.per_processor.proc_mem_tier1_cap_req, per_processor));
    // The same case on a 40 GiB processor does not fit: reported, not an error.
    let mut json: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{ORACLES}/systems/{}.json", case.system)).expect("system")).expect("json");
    json["mem1"]["GiB"] = 40.into();
    let small = SystemProfile::from_json(&json.to_string()).expect("valid");
    let derivation = derive_training_block(&case.spec).expect("derives");
    let block = BlockFacts::from_derivation(&derivation, &case.spec);
    let got =
        estimate(&block_tasks(&derivation), &block, &case.spec, &small, &case.binding, &EstimateOptions::default()).expect("estimates");
    assert!(!got.memory.fits);
    assert_eq!(got.memory.capacity_bytes, 40.0 * 1024.0 * 1024.0 * 1024.0);
    assert!(close(got.memory.over_by_bytes, per_processor - got.memory.capacity_bytes));
}

/// The first Table 5 case with an edited binding, system or options.
fn error_of(binding: NetworkBinding, system: &SystemProfile, spec: &TrainingSpec, options: &EstimateOptions) -> String {
    let derivation = derive_training_block(&cases_of(&format!("{ORACLES}/seqsel-table5.json"))[0].spec).expect("derives");
    let block = BlockFacts::from_derivation(&derivation, spec);
    match estimate(&block_tasks(&derivation), &block, spec, system, &binding, options) {
        Ok(_) => panic!("the estimate must fail"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn bad_inputs_are_errors() {
    let case = cases_of(&format!("{ORACLES}/seqsel-table5.json")).swap_remove(0);
    let a100 = system("a100_80g");
    let ok = NetworkBinding { tp: 0, pp: 1, dp: 1 };
    let message = error_of(NetworkBinding { tp: 0, pp: 2, dp: 1 }, &a100, &case.spec, &EstimateOptions::default());
    assert!(message.contains("networks.pp = 2 names no tier"), "{message}");
    // TP 8 on tier 1 is fine; TP 8 × DP 2 on tier 0 (size 8) is not.
    let mut dp2 = case.spec.clone();
    dp2.mapping.dp = 2;
    dp2.workload.global_batch *= 2;
    let message = error_of(NetworkBinding { tp: 0, pp: 1, dp: 0 }, &a100, &dp2, &EstimateOptions::default());
    assert!(message.contains("tier 0 isn't big enough"), "{message}");
    let mut bf16 = case.spec.clone();
    bf16.workload.datatype = Datatype::Bfloat16;
    let message = error_of(ok, &a100, &bf16, &EstimateOptions::default());
    assert!(message.contains("matrix.bfloat16 is missing"), "{message}");
    // TP overlap needs TP communication to overlap (Calculon asserts it).
    let mut untiled = case.spec.clone();
    (untiled.mapping.tp, untiled.mapping.pp, untiled.mapping.tp_overlap) = (1, 1, TpOverlap::Ring);
    let message = error_of(ok, &a100, &untiled, &EstimateOptions::default());
    assert!(message.contains("mapping.tp_overlap = ring requires mapping.tp > 1"), "{message}");
    let mut invalid = case.spec.clone();
    invalid.mapping.tp = 0;
    let message = error_of(ok, &a100, &invalid, &EstimateOptions::default());
    assert!(message.contains("mapping.tp must be positive"), "{message}");

    // Tasks whose capability does not fit their class or phase.
    let derivation = derive_training_block(&case.spec).expect("derives");
    let block = BlockFacts::from_derivation(&derivation, &case.spec);
    let tasks = block_tasks(&derivation);
    let broken = |edit: &dyn Fn(&mut TaskFacts) -> bool| {
        let mut tasks = tasks.clone();
        let mut id = None;
        for task in &mut tasks {
            if edit(task) {
                id = Some(task.id.clone());
                break;
            }
        }
        let id = id.expect("a task to break");
        let error =
            estimate(&tasks, &block, &case.spec, &a100, &ok, &EstimateOptions::default()).map(|_| ()).expect_err("rejected").to_string();
        assert!(error.contains(&format!("task '{id}'")), "{error}");
        error
    };
    let error = broken(&|t| {
        let hit = t.class == TaskClass::TensorParallel;
        if hit {
            t.capability = Capability::VectorElementwise;
        }
        hit
    });
    assert!(error.contains("needs capability all_reduce"), "{error}");
    let error = broken(&|t| {
        let hit = t.class == TaskClass::Compute;
        if hit {
            t.capability = Capability::AllReduce;
        }
        hit
    });
    assert!(error.contains("needs capability matrix_multiply"), "{error}");
    let error = broken(&|t| {
        let hit = t.phase == Phase::WeightGradient;
        if hit {
            t.class = TaskClass::TensorParallel;
            t.capability = Capability::AllReduce;
        }
        hit
    });
    assert!(error.contains("forward, activation_gradient or recommunication"), "{error}");
    let error = broken(&|t| {
        let hit = t.phase == Phase::Forward;
        if hit {
            t.phase = Phase::Decode;
        }
        hit
    });
    assert!(error.contains("inference"), "{error}");
}

#[test]
fn pipeline_and_data_parallel_tasks_are_priced_from_the_block_facts() {
    let case = cases_of(&format!("{ORACLES}/fullmodel-random.json")).swap_remove(0);
    let derivation = derive_training_block(&case.spec).expect("derives");
    let block = BlockFacts::from_derivation(&derivation, &case.spec);
    let mut tasks = block_tasks(&derivation);
    let plain = estimate(&tasks, &block, &case.spec, &system(&case.system), &case.binding, &EstimateOptions::default()).expect("estimates");
    tasks.push(TaskFacts {
        id: "pipeline.send.fwd".into(),
        phase: Phase::Forward,
        capability: Capability::PointToPoint,
        class: TaskClass::Pipeline,
        ops: 0,
        read_bytes: 0,
        write_bytes: 0,
        message_bytes: block.block_fw_pp_size,
        shared_by: 1,
        group_size: Some(2),
        tiling: None,
    });
    let with_transfer =
        estimate(&tasks, &block, &case.spec, &system(&case.system), &case.binding, &EstimateOptions::default()).expect("estimates");
    assert_eq!(plain, with_transfer);
    // A plan's stated TP group equal to the strategy's changes nothing.
    for task in tasks.iter_mut().filter(|t| t.class == TaskClass::TensorParallel) {
        task.group_size = Some(case.spec.mapping.tp);
    }
    assert_eq!(
        estimate(&tasks, &block, &case.spec, &system(&case.system), &case.binding, &EstimateOptions::default()).expect("estimates"),
        plain
    );
}

#[test]
fn plan_names_map_to_task_facts() {
    for capability in [
        Capability::MatrixMultiply,
        Capability::VectorElementwise,
        Capability::AllReduce,
        Capability::ReduceScatter,
        Capability::AllGather,
        Capability::PointToPoint,
    ] {
        assert_eq!(Capability::from_name(capability.name()), Some(capability));
    }
    assert_eq!(Capability::from_name("matrix"), Some(Capability::MatrixMultiply));
    assert_eq!(Capability::from_name("tensor_core"), None);
    for (name, phase) in [
        ("forward", Phase::Forward),
        ("recompute", Phase::Recompute),
        ("activation_gradient", Phase::ActivationGradient),
        ("weight_gradient", Phase::WeightGradient),
        ("optimizer", Phase::Optimizer),
        ("recommunication", Phase::Recommunication),
        ("prefill", Phase::Prefill),
        ("decode", Phase::Decode),
    ] {
        assert_eq!(phase_from_name(name), Some(phase), "{name}");
    }
    assert_eq!(phase_from_name("backward"), None);
    let derivation = derive_training_block(&cases_of(&format!("{ORACLES}/seqsel-table5.json"))[0].spec).expect("derives");
    let tasks = block_tasks(&derivation);
    let q = tasks.iter().find(|t| t.id == "attn.q.fwd").expect("attn.q.fwd");
    assert_eq!((q.capability, q.class, q.source()), (Capability::MatrixMultiply, TaskClass::Compute, "attn.q"));
    let exit = tasks.iter().find(|t| t.id == "attn.tp_exit.fwd").expect("attn.tp_exit.fwd");
    assert_eq!((exit.capability, exit.class), (Capability::AllReduce, TaskClass::TensorParallel));
    assert!(exit.message_bytes > 0);
}

#[test]
fn calculon_figure_needs_calculons_layer_layout() {
    let cases = cases_of(RECORDED);
    let case = cases.iter().find(|c| c.dp_overlap && c.spec.mapping.recompute == Recompute::Full).expect("DP overlap + full recompute");
    let derivation = derive_training_block(&case.spec).expect("derives");
    let block = BlockFacts::from_derivation(&derivation, &case.spec);
    // Tasks of a plan that names its operations differently.
    let tasks: Vec<TaskFacts> = block_tasks(&derivation).into_iter().map(|t| TaskFacts { id: format!("layer0.{}", t.id), ..t }).collect();
    let sys = system(&case.system);
    let options = EstimateOptions { data_par_overlap: true, ..EstimateOptions::default() };
    let got = estimate(&tasks, &block, &case.spec, &sys, &case.binding, &options).expect("Blueprint's figure needs no layout");
    let figures = got.dp_overlap.expect("figures");
    assert_eq!(figures.calculon, None);
    assert_eq!(got.timing_seconds.dp_comm_exposed_time, figures.blueprint);
    let compat = EstimateOptions { calculon_compat_dp_overlap: true, ..options };
    let error = estimate(&tasks, &block, &case.spec, &sys, &case.binding, &compat).map(|_| ()).expect_err("compat needs the layout");
    assert_eq!(error, EstimateError::CompatLayout("attn.q.fwd"));
}

/// A system file with every figure at one end of the physical bounds.
fn system_at_bounds(slowest: bool) -> SystemProfile {
    use crate::analysis::system::bounds;
    let mut json: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{ORACLES}/systems/a100_80g.json")).expect("a100")).expect("JSON");
    let efficiency = if slowest { bounds::EFFICIENCY_MIN } else { 1.0 };
    for unit in ["matrix", "vector"] {
        for rate in json[unit].as_object_mut().expect("unit").values_mut() {
            rate["tflops"] = (if slowest { bounds::TFLOPS.0 } else { bounds::TFLOPS.1 }).into();
            for row in rate["gflops_efficiency"].as_array_mut().expect("table") {
                row[1] = efficiency.into();
            }
        }
    }
    for tier in ["mem1", "mem2"] {
        json[tier]["GBps"] = (if slowest { bounds::GBPS.0 } else { bounds::GBPS.1 }).into();
        json[tier]["GiB"] = (if slowest { 0.0 } else { bounds::GIB_MAX }).into();
        for row in json[tier]["MB_efficiency"].as_array_mut().expect("table") {
            row[1] = efficiency.into();
        }
    }
    for network in json["networks"].as_array_mut().expect("networks") {
        network["bandwidth"] = (if slowest { bounds::GBPS.0 } else { bounds::GBPS.1 }).into();
        network["efficiency"] = efficiency.into();
        network["latency"] = (if slowest { bounds::LATENCY_MAX } else { 0.0 }).into();
        for (name, factors) in network["ops"].as_object_mut().expect("ops") {
            factors[0] = (if slowest { bounds::OP_SCALAR.1 } else { bounds::OP_SCALAR.0 }).into();
            if name != "p2p" {
                factors[1] = (if slowest { bounds::OP_OFFSET.1 } else { bounds::OP_OFFSET.0 }).into();
            }
        }
    }
    SystemProfile::from_json(&json.to_string()).expect("a system at the bounds is valid")
}

/// The bounds of a system file keep every figure of every oracle case
/// finite, at both ends (issue 28: extreme values printed `null` times and
/// `"fits": true`).
#[test]
fn figures_stay_finite_at_the_physical_bounds() {
    for slowest in [true, false] {
        let system = system_at_bounds(slowest);
        for case in cases_of(&format!("{ORACLES}/seqsel-table5.json")) {
            for dp_overlap in [false, true] {
                let options = EstimateOptions { data_par_overlap: dp_overlap, ..EstimateOptions::default() };
                let derivation = derive_training_block(&case.spec).expect("derives");
                let block = BlockFacts::from_derivation(&derivation, &case.spec);
                let got = estimate(&block_tasks(&derivation), &block, &case.spec, &system, &case.binding, &options)
                    .unwrap_or_else(|e| panic!("{} (slowest {slowest}): {e}", case.name));
                for (name, value) in got.timing_seconds.fields() {
                    assert!(value.is_finite() && value >= 0.0, "{}: {name} = {value}", case.name);
                }
                assert!(got.sample_rate.is_finite() && got.sample_rate > 0.0, "{}: {}", case.name, got.sample_rate);
                assert!(got.memory.capacity_bytes.is_finite());
                // Nothing fits in no memory; everything fits in the most.
                assert_eq!(got.memory.fits, !slowest, "{}", case.name);
            }
        }
    }
}

/// A figure that is not finite is an error naming it and the system
/// fields it derives from.
#[test]
fn non_finite_figures_name_the_system_fields() {
    let case = cases_of(&format!("{ORACLES}/seqsel-table5.json")).into_iter().next().expect("a case");
    let good = run(&case, &EstimateOptions::default());
    let datatype = crate::analysis::system::datatype_name(case.spec.workload.datatype);
    let check = |edit: &dyn Fn(&mut Estimate)| {
        let mut bad = good.clone();
        edit(&mut bad);
        check_finite(&bad, &case.spec, &case.binding).expect_err("not finite").to_string()
    };
    let message = check(&|e| e.timing_seconds.fw_time = f64::INFINITY);
    assert!(message.starts_with("timing_seconds.fw_time is inf, not a finite time"), "{message}");
    assert!(message.contains(&format!("matrix.{datatype}, vector.{datatype} and mem1")), "{message}");
    let message = check(&|e| e.timing_seconds.dp_comm_exposed_time = f64::NAN);
    assert!(message.contains(&format!("networks[{}] (the DP tier)", case.binding.dp)), "{message}");
    let message = check(&|e| e.memory.capacity_bytes = f64::INFINITY);
    assert!(message.contains("capacity_bytes is inf") && message.contains("mem1.GiB"), "{message}");
    let message = check(&|e| {
        e.timing_seconds.total_time = 0.0;
        e.sample_rate = f64::INFINITY;
    });
    assert!(message.starts_with("sample_rate is inf"), "{message}");
    assert_eq!(check_finite(&good, &case.spec, &case.binding), Ok(()));
}

/// Every statistic of `calculon llm` (the 60 runs of Calculon's own
/// command in `test/oracles/calculon/llm/`), from the algebra's block.
#[test]
fn every_calculon_statistic_matches_calculon_llm() {
    use crate::analysis::workload::spec_from_calculon;
    let root = env!("CARGO_MANIFEST_DIR");
    let index: Value = serde_json::from_str(&std::fs::read_to_string(format!("{ORACLES}/llm/index.json")).expect("index")).expect("JSON");
    let runs = index["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 60);
    let mut failures = Vec::new();
    let mut fields = 0;
    for run in runs {
        let name = run["name"].as_str().expect("name");
        let model = std::fs::read_to_string(format!("{ORACLES}/models/{}.json", run["model"].as_str().expect("model"))).expect("model");
        let exe = std::fs::read_to_string(format!("{root}/test/Inputs/calculon/executions/{name}.json")).expect("execution");
        let text = std::fs::read_to_string(format!("{ORACLES}/llm/{name}.json")).expect("llm");
        let want: Value = serde_json::from_str(&text).expect("JSON");
        // The keys in the file's order (serde_json's map sorts them).
        let keys: Vec<&str> = text.lines().filter_map(|l| l.trim_start().strip_prefix('"')?.split_once('"').map(|(k, _)| k)).collect();
        let (spec, calc) = spec_from_calculon(&model, None, &exe).expect("spec");
        let derivation = derive_training_block(&spec).expect("derives");
        let block = BlockFacts::from_derivation(&derivation, &spec);
        let (binding, options) = (super::calculon_binding(&calc), EstimateOptions::of_calculon(&calc));
        let stats = calculon_stats::calculon_stats(
            &block_tasks(&derivation),
            &block,
            &spec,
            &system(run["system"].as_str().expect("system")),
            &binding,
            &options,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let got_keys: Vec<&str> = stats.iter().map(|(k, _)| *k).collect();
        assert_eq!(got_keys, keys, "{name}: Calculon's fields in its order");
        for (field, got) in &stats {
            fields += 1;
            let ok = match (got.as_f64(), want[field].as_f64()) {
                (Some(g), Some(w)) => close(g, w),
                (None, None) => got.is_null() && want[field].is_null(),
                _ => false,
            };
            if !ok {
                failures.push(format!("{name}: {field} = {got}, Calculon {}", want[field]));
            }
        }
    }
    assert_eq!(fields, 60 * 96);
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

/// A served plan's prefill is priced as Calculon prices the forward pass
/// of the training step with the same block (its inference step, exact
/// against Calculon's recorded cases): the same block and TP times, bit
/// for bit; the decode step is priced the same way; the pass runs every
/// block in turn, plus its pipeline transfers.
#[test]
fn served_prefill_is_priced_as_calculons_forward_pass() {
    use crate::analysis::workload::{derive_decode_pass, derive_prefill_pass, InferenceSpec};
    let a100 = system("a100_80g");
    for (tp, pp, batch, prompt, generated) in [(1, 1, 1, 512, 64), (4, 2, 8, 512, 128), (8, 4, 2, 300, 1), (2, 1, 3, 2048, 0)] {
        let json = serde_json::json!({
            "model": {"name": "served", "hidden": 4096, "ffn_hidden": 16384, "heads": 32, "head_dim": 128, "blocks": 32,
                      "seq_len": prompt + generated},
            "workload": {"batch": batch, "prompt_tokens": prompt, "generated_tokens": generated, "datatype": "float16"},
            "mapping": {"tp": tp, "pp": pp}
        });
        let spec = InferenceSpec::from_json(&json.to_string()).expect("valid");
        let prefill = derive_prefill_pass(&spec).expect("derives");
        let mut tasks: Vec<TaskFacts> = prefill.derivation.invocations.iter().map(TaskFacts::from).collect();
        if generated > 0 {
            let decode = derive_decode_pass(&spec, prompt + generated).expect("derives");
            tasks.extend(decode.derivation.invocations.iter().map(TaskFacts::from));
        }
        let memory = serving::ServedBlockMemory {
            weights: prefill.derivation.memory.weights,
            activation_working: prefill.derivation.memory.act_working_space,
            kv_cache: crate::analysis::workload::kv_cache_bytes(&spec, prompt + generated),
        };
        let got = serving::estimate_served(&tasks, memory, &spec, &a100, 0, 1).expect("estimates");
        // Its training twin: the same block over the prompt's tokens.
        let mut twin = crate::analysis::workload::inference_tests::training_twin(&spec);
        twin.model.seq_len = prompt;
        let options = EstimateOptions { forward_only: true, ..EstimateOptions::default() };
        let forward = price_block(&block_tasks(&derive_training_block(&twin).expect("twin")), &twin, &a100, 0, &options).expect("prices");
        assert_eq!(got.prefill.block_time, forward.block_fw_time, "tp {tp}");
        assert_eq!(got.prefill.block_tp_time, forward.baseblock_fw_tp_time_exposed, "tp {tp}");
        assert!(tp == 1 || got.prefill.block_tp_time > 0.0);
        let transfer = if pp > 1 { got.prefill.pp_transfer_time } else { 0.0 };
        let want = 32.0 * (forward.block_fw_time + forward.baseblock_fw_tp_time_exposed) + (pp - 1) as f64 * transfer;
        assert_eq!(got.prefill.time, want);
        assert_eq!(got.time_to_first_token, got.prefill.time);
        match got.decode_at_final_context {
            Some(decode) => {
                assert!(decode.time > 0.0 && decode.time < got.prefill.time, "one token is quicker than {prompt}");
                assert_eq!(got.generation_time_at_most, Some(got.prefill.time + generated as f64 * decode.time));
                assert_eq!(got.decode_tokens_per_second_at_least, Some(batch as f64 / decode.time));
            }
            None => assert_eq!(generated, 0),
        }
        // The fullest stage's processor: its blocks' weights and cache.
        let bpr = 32 / pp;
        assert_eq!(got.memory.total, bpr * (memory.weights + memory.kv_cache) + memory.activation_working);
        assert!(got.memory.fits);
    }
}
