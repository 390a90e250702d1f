//! Oracle gate and structural tests of the workload algebra.

use std::collections::HashSet;

use serde_json::Value;

use super::*;

const ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/seqsel-table5.json");
/// Cases recorded from Calculon for this project (see the README beside it).
const RECORDED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/calculon/recorded-cases.json");
/// The 24 random whole-step cases (DP > 1, optimizer sharding,
/// interleaving, attention width ≠ hidden, `seq_par_ag_redo` at TP = 1).
const RANDOM_ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/fullmodel-random.json");

struct OracleCase {
    name: String,
    spec: TrainingSpec,
    block: BlockFacts,
}

/// Every Calculon case: Table 5 and the random whole-step cases.
fn all_oracle_cases() -> Vec<OracleCase> {
    let mut cases = cases_of(ORACLE);
    cases.extend(cases_of(RANDOM_ORACLE));
    cases.extend(cases_of(RECORDED));
    cases
}

fn cases_of(path: &str) -> Vec<OracleCase> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("cannot read oracle {path}: {err}"));
    let doc: Value = serde_json::from_str(&text).expect("oracle is JSON");
    let cases = doc["cases"].as_array().expect("oracle has a cases array");
    cases
        .iter()
        .map(|case| {
            let name = case["name"].as_str().expect("case name").to_owned();
            let part = |key: &str| case[key].clone();
            let spec = TrainingSpec {
                name: Some(name.clone()),
                model: serde_json::from_value(part("model")).expect("model spec"),
                workload: serde_json::from_value(part("workload")).expect("workload spec"),
                mapping: serde_json::from_value(part("mapping")).expect("mapping spec"),
            };
            // deny_unknown_fields: the oracle block has exactly our field set.
            let block = serde_json::from_value(part("block")).expect("block facts");
            OracleCase { name, spec, block }
        })
        .collect()
}

fn derive(spec: &TrainingSpec) -> BlockDerivation {
    derive_training_block(spec).expect("valid spec derives")
}

/// megatron-22B with full recompute, the first oracle case.
fn base_spec() -> TrainingSpec {
    TrainingSpec {
        name: None,
        model: ModelSpec {
            name: Some("megatron-22B".into()),
            hidden: 6144,
            ffn_hidden: 24576,
            seq_len: 2048,
            heads: 64,
            head_dim: 96,
            blocks: 48,
            vocab: None,
            kv_heads: None,
            gated_mlp: false,
            norm: Default::default(),
            rope: false,
            rope_theta: None,
            dropout: None,
        },
        workload: TrainingWorkloadSpec { global_batch: 4, microbatch: 4, datatype: Datatype::Float16, optimizer: None },
        mapping: TrainingMappingSpec {
            tp: 8,
            pp: 1,
            dp: 1,
            pipeline_interleaving: 1,
            recompute: Recompute::Full,
            tp_comm: TpComm::Ar,
            seq_par_ag_redo: false,
            fused_activation: false,
            optimizer_sharding: false,
            tp_overlap: crate::analysis::workload::TpOverlap::None,
            pipeline_schedule: None,
        },
    }
}

fn with(edit: impl FnOnce(&mut TrainingSpec)) -> TrainingSpec {
    let mut spec = base_spec();
    edit(&mut spec);
    spec
}

fn error_of(edit: impl FnOnce(&mut TrainingSpec)) -> SpecError {
    with(edit).validate().expect_err("spec must be rejected")
}

/// Specs covering every recompute × comm × TP × sharding combination.
fn variant_specs() -> Vec<TrainingSpec> {
    let mut specs = Vec::new();
    for recompute in [Recompute::None, Recompute::AttnOnly, Recompute::Full] {
        for tp_comm in [TpComm::Ar, TpComm::RsAg] {
            for tp in [1, 8] {
                for redo in [false, true] {
                    for fused in [false, true] {
                        let spec = with(|s| {
                            s.mapping.recompute = recompute;
                            s.mapping.tp_comm = tp_comm;
                            s.mapping.tp = tp;
                            s.mapping.seq_par_ag_redo = redo;
                            s.mapping.fused_activation = fused;
                            s.mapping.dp = 2;
                            s.mapping.pp = 4;
                            s.mapping.pipeline_interleaving = 2;
                            s.mapping.optimizer_sharding = fused;
                            s.workload.global_batch = 16;
                            s.workload.microbatch = 2;
                        });
                        if spec.validate().is_ok() {
                            specs.push(spec);
                        }
                    }
                }
            }
        }
    }
    specs
}

// ---------------------------------------------------------------- oracle gate

#[test]
fn oracle_block_facts_match_exactly() {
    let cases = all_oracle_cases();
    assert!(cases.len() > 32, "8 Table 5 cases, 24 random cases and the recorded ones");
    let mut report = Vec::new();
    for case in &cases {
        let derivation = derive(&case.spec);
        let facts = BlockFacts::from_derivation(&derivation, &case.spec);
        let wrong = facts.mismatches(&case.block);
        if !wrong.is_empty() {
            let fields: Vec<String> = wrong.iter().map(|(field, got, want)| format!("{field}: derived {got}, oracle {want}")).collect();
            report.push(format!("{}:\n  {}", case.name, fields.join("\n  ")));
        }
    }
    assert!(report.is_empty(), "oracle mismatches:\n{}", report.join("\n"));
}

#[test]
fn oracle_specs_validate_and_compose() {
    for case in all_oracle_cases() {
        case.spec.validate().unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let spec = &case.spec;
        assert_eq!(spec.world_size(), spec.mapping.tp * spec.mapping.pp * spec.mapping.dp);
        assert_eq!(spec.microbatch_count() * spec.workload.microbatch * spec.mapping.dp, spec.workload.global_batch);
        assert_eq!(spec.blocks_per_virtual_chunk() * spec.mapping.pp * spec.mapping.pipeline_interleaving, spec.model.blocks);
    }
}

#[test]
fn oracle_case_objects_are_not_whole_specs() {
    // Whole case objects carry system/block/per_processor/timing fields,
    // which a training spec must refuse rather than silently ignore.
    let text = std::fs::read_to_string(ORACLE).expect("oracle readable");
    let doc: Value = serde_json::from_str(&text).expect("oracle is JSON");
    let whole = doc["cases"][0].to_string();
    match TrainingSpec::from_json(&whole) {
        Err(SpecError::Parse(msg)) => assert!(msg.contains("unknown field"), "{msg}"),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

// ------------------------------------------------------------ phase sums

#[test]
fn per_phase_sums_of_invocations_equal_facts() {
    let mut specs: Vec<TrainingSpec> = all_oracle_cases().into_iter().map(|c| c.spec).collect();
    specs.extend(variant_specs());
    for spec in &specs {
        let d = derive(spec);
        let facts = BlockFacts::from_derivation(&d, spec);
        let sum = |phase: Phase, f: fn(&PrimitiveInvocation) -> u64| -> u64 { d.phase(phase).map(f).sum() };
        let per_rank = |phase: Phase, f: fn(&PrimitiveInvocation) -> u64| -> f64 { d.phase(phase).map(|i| i.per_rank(f(i))).sum() };
        let ops = |i: &PrimitiveInvocation| i.ops;
        let bytes = |i: &PrimitiveInvocation| i.read_bytes + i.write_bytes;
        let msg = |i: &PrimitiveInvocation| i.message_bytes();
        assert_eq!(facts.block_fw_flops, sum(Phase::Forward, ops));
        assert_eq!(facts.block_agrad_flops, sum(Phase::ActivationGradient, ops));
        assert_eq!(facts.block_wgrad_flops, sum(Phase::WeightGradient, ops));
        assert_eq!(facts.block_optim_flops, per_rank(Phase::Optimizer, ops));
        assert_eq!(facts.block_fw_mem_accessed, sum(Phase::Forward, bytes));
        assert_eq!(facts.block_agrad_mem_accessed, sum(Phase::ActivationGradient, bytes));
        assert_eq!(facts.block_wgrad_mem_accessed, sum(Phase::WeightGradient, bytes));
        assert_eq!(facts.block_optim_mem_accessed, per_rank(Phase::Optimizer, bytes));
        assert_eq!(facts.baseblock_fw_tp_size, sum(Phase::Forward, msg));
        assert_eq!(facts.baseblock_bw_tp_size, sum(Phase::ActivationGradient, msg));
        assert_eq!(facts.baseblock_recomm_size, sum(Phase::Recommunication, msg));
        // Collectives only carry messages in phases that have TP traffic.
        assert_eq!(sum(Phase::WeightGradient, msg), 0);
        assert_eq!(sum(Phase::Optimizer, msg), 0);
        assert_eq!(sum(Phase::Recompute, msg), 0);
    }
}

#[test]
fn facts_from_foreign_work_items_match_derivation() {
    // A consumer that rebuilds the totals from its own task list (here: the
    // same invocations reversed and mapped to WorkItem) gets the same facts.
    for case in all_oracle_cases() {
        let d = derive(&case.spec);
        let items: Vec<WorkItem> = d.invocations.iter().rev().map(WorkItem::from).collect();
        let facts = facts_from_work(items, &d.memory, &case.spec);
        // Shares are summed in another order: equal to rounding.
        let differ = facts.mismatches(&BlockFacts::from_derivation(&d, &case.spec));
        assert!(differ.is_empty(), "{}: {differ:?}", case.name);
    }
}

#[test]
fn recompute_and_recommunication_are_excluded_from_facts() {
    let spec = base_spec();
    let d = derive(&spec);
    let kept: Vec<WorkItem> = d.invocations.iter().filter(|i| i.phase != Phase::Recompute).map(WorkItem::from).collect();
    let facts = BlockFacts::from_derivation(&d, &spec);
    let without = facts_from_work(kept, &d.memory, &spec);
    assert_eq!(facts, without);
    let totals: WorkTotals = d.invocations.iter().map(WorkItem::from).collect();
    assert!(totals.phase(Phase::Recompute).ops > 0);
}

// -------------------------------------------------------------- structure

#[test]
fn recompute_clone_counts() {
    let forward_compute = |d: &BlockDerivation| d.phase(Phase::Forward).filter(|i| i.primitive != Primitive::Collective).count();
    let none = derive(&with(|s| s.mapping.recompute = Recompute::None));
    assert_eq!(none.phase(Phase::Recompute).count(), 0);

    let attn = derive(&with(|s| s.mapping.recompute = Recompute::AttnOnly));
    let sources: Vec<&str> = attn.phase(Phase::Recompute).map(|i| i.source.as_str()).collect();
    assert_eq!(sources, ["attn.scores", "attn.softmax", "attn.prob_dropout"]);

    let full = derive(&base_spec());
    assert_eq!(forward_compute(&full), 17);
    assert_eq!(full.phase(Phase::Recompute).count(), forward_compute(&full));

    // A clone repeats its forward invocation's work exactly.
    for d in [&attn, &full] {
        for clone in d.phase(Phase::Recompute) {
            let original = d.phase(Phase::Forward).find(|i| i.source == clone.source).expect("clone has a forward original");
            assert_eq!(
                (clone.primitive, clone.ops, clone.read_bytes, clone.write_bytes),
                (original.primitive, original.ops, original.read_bytes, original.write_bytes)
            );
        }
    }
}

#[test]
fn tp_one_has_no_collectives() {
    for tp_comm in [TpComm::Ar, TpComm::RsAg] {
        for recompute in [Recompute::None, Recompute::AttnOnly, Recompute::Full] {
            let spec = with(|s| {
                s.mapping.tp = 1;
                s.mapping.tp_comm = tp_comm;
                s.mapping.recompute = recompute;
            });
            let d = derive(&spec);
            assert!(d
                .invocations
                .iter()
                .all(|i| i.collective.is_none() && i.primitive != Primitive::Collective && i.engine != Engine::Collective));
            let f = BlockFacts::from_derivation(&d, &spec);
            assert_eq!((f.baseblock_fw_tp_size, f.baseblock_bw_tp_size, f.baseblock_recomm_size), (0, 0, 0));
        }
    }
}

#[test]
fn rs_ag_and_ar_are_identical_at_tp_one() {
    for recompute in [Recompute::None, Recompute::AttnOnly, Recompute::Full] {
        let ar = with(|s| {
            s.mapping.tp = 1;
            s.mapping.recompute = recompute;
            s.mapping.pp = 2;
        });
        let rs_ag = with(|s| {
            s.mapping.tp = 1;
            s.mapping.recompute = recompute;
            s.mapping.pp = 2;
            s.mapping.tp_comm = TpComm::RsAg;
        });
        let (a, b) = (derive(&ar), derive(&rs_ag));
        assert_eq!(a, b, "{recompute:?}");
        assert_eq!(BlockFacts::from_derivation(&a, &ar), BlockFacts::from_derivation(&b, &rs_ag));
    }
}

#[test]
fn tp_collectives_per_direction() {
    use CollectiveKind::{AllGather as Ag, AllReduce as Ar, ReduceScatter as Rs};
    let kinds =
        |d: &BlockDerivation, phase| -> Vec<CollectiveKind> { d.phase(phase).filter_map(|i| i.collective.map(|c| c.kind)).collect() };
    let ar = derive(&with(|s| s.mapping.recompute = Recompute::None));
    assert_eq!(kinds(&ar, Phase::Forward), [Ar, Ar]);
    assert_eq!(kinds(&ar, Phase::ActivationGradient), [Ar, Ar]);
    assert!(kinds(&ar, Phase::Recommunication).is_empty());

    let sp = derive(&with(|s| {
        s.mapping.recompute = Recompute::None;
        s.mapping.tp_comm = TpComm::RsAg;
    }));
    assert_eq!(kinds(&sp, Phase::Forward), [Ag, Rs, Ag, Rs]);
    // Backward runs in reverse model order: MLP exit first.
    assert_eq!(kinds(&sp, Phase::ActivationGradient), [Ag, Rs, Ag, Rs]);
    assert!(kinds(&sp, Phase::Recommunication).is_empty());

    // Full recompute re-issues the forward collectives that move data.
    let full_ar = derive(&base_spec());
    assert_eq!(kinds(&full_ar, Phase::Recommunication), [Ar, Ar]);
    let full_sp = derive(&with(|s| s.mapping.tp_comm = TpComm::RsAg));
    assert_eq!(kinds(&full_sp, Phase::Recommunication), [Ag, Rs, Ag, Rs]);

    // Selective recompute with AG redo re-gathers both column-parallel inputs.
    let redo = derive(&with(|s| {
        s.mapping.recompute = Recompute::AttnOnly;
        s.mapping.tp_comm = TpComm::RsAg;
        s.mapping.seq_par_ag_redo = true;
    }));
    let sources: Vec<&str> = redo.phase(Phase::Recommunication).map(|i| i.source.as_str()).collect();
    assert_eq!(sources, ["attn.tp_entry", "mlp.tp_entry"]);
    assert_eq!(kinds(&redo, Phase::Recommunication), [Ag, Ag]);
}

#[test]
fn invocations_are_well_formed() {
    for spec in variant_specs() {
        let d = derive(&spec);
        let mut names = HashSet::new();
        for inv in &d.invocations {
            assert!(names.insert(inv.name.clone()), "duplicate name {}", inv.name);
            assert_eq!(inv.name, format!("{}.{}", inv.source, inv.phase.suffix()));
            assert_eq!(inv.engine, inv.primitive.engine());
            assert_eq!(inv.collective.is_some(), inv.primitive == Primitive::Collective, "{}", inv.name);
            assert!(inv.ops > 0 || inv.read_bytes + inv.write_bytes > 0, "{} is empty", inv.name);
        }
        // Stage order: forward, recompute, recommunication, backward, optimizer.
        let rank = |p: Phase| match p {
            Phase::Forward => 0,
            Phase::Recompute => 1,
            Phase::Recommunication => 2,
            Phase::ActivationGradient | Phase::WeightGradient => 3,
            Phase::Optimizer => 4,
            Phase::Prefill | Phase::Decode => unreachable!("training derives no inference phase"),
        };
        assert!(d.invocations.windows(2).all(|w| rank(w[0].phase) <= rank(w[1].phase)));
    }
}

#[test]
fn linear_layers_are_three_matmuls_split_by_tp() {
    let spec = base_spec();
    let d = derive(&spec);
    let (m, n, k, t) = (4 * 2048u64, 6144u64, 24576u64, 8u64);
    let fc1: Vec<&PrimitiveInvocation> =
        d.from_source("mlp.fc1").filter(|i| i.phase != Phase::Recompute && i.phase != Phase::Optimizer).collect();
    let phases: Vec<Phase> = fc1.iter().map(|i| i.phase).collect();
    assert_eq!(phases, [Phase::Forward, Phase::ActivationGradient, Phase::WeightGradient]);
    for inv in fc1 {
        assert_eq!(inv.primitive, Primitive::Matmul);
        assert_eq!(inv.ops, 2 * m * n * k / t);
    }
}

#[test]
fn fused_activation_changes_memory_not_work() {
    let plain = with(|s| s.mapping.recompute = Recompute::None);
    let fused = with(|s| {
        s.mapping.recompute = Recompute::None;
        s.mapping.fused_activation = true;
    });
    let (a, b) = (derive(&plain), derive(&fused));
    assert_eq!(a.invocations, b.invocations);
    let gelu = 4 * 2048 * 24576 / 8 * 2;
    assert_eq!(a.memory.act_working_space - b.memory.act_working_space, gelu);
    assert_eq!(a.memory.act_grads - b.memory.act_grads, gelu);
}

#[test]
fn optimizer_sharding_divides_state_by_dp() {
    let plain = with(|s| {
        s.mapping.dp = 4;
        s.workload.global_batch = 16;
    });
    let sharded = with(|s| {
        s.mapping.dp = 4;
        s.workload.global_batch = 16;
        s.mapping.optimizer_sharding = true;
    });
    let (a, b) = (derive(&plain), derive(&sharded));
    let (fa, fb) = (BlockFacts::from_derivation(&a, &plain), BlockFacts::from_derivation(&b, &sharded));
    assert_eq!(fa.block_optimizer_space, 4.0 * fb.block_optimizer_space);
    assert_eq!(fa.block_optim_flops, 4.0 * fb.block_optim_flops);
    assert_eq!(fa.block_weight_grad_space, 4.0 * fb.block_weight_grad_space);
    assert_eq!(fa.block_weight_grad_space_no_sharding, fb.block_weight_grad_space_no_sharding);
    assert_eq!(fa.block_dp_size, fa.block_weight_space);
    assert_eq!(fb.block_dp_size, fb.block_weight_space);
}

#[test]
fn float32_has_no_master_copy() {
    let spec = with(|s| s.workload.datatype = Datatype::Float32);
    let d = derive(&spec);
    // Adam moments only: 2 × 4 bytes per parameter, weights are 4 bytes each.
    assert_eq!(d.memory.optimizer, 2 * d.memory.weights);
    let half = derive(&base_spec());
    // fp32 master copy + two moments: 12 bytes per 2-byte weight.
    assert_eq!(half.memory.optimizer, 6 * half.memory.weights);
}

#[test]
fn pipeline_boundary_is_sequence_split_under_rs_ag() {
    let ar = with(|s| s.mapping.pp = 2);
    let sp = with(|s| {
        s.mapping.pp = 2;
        s.mapping.tp_comm = TpComm::RsAg;
    });
    assert_eq!(pipeline_message_bytes(&ar), 4 * 2048 * 6144 * 2);
    assert_eq!(pipeline_message_bytes(&sp), 4 * 2048 * 6144 * 2 / 8);
    assert_eq!(pipeline_message_bytes(&base_spec()), 0);
}

#[test]
fn largest_oracle_case_is_far_from_overflow() {
    let spec = with(|s| {
        s.model.hidden = 25600;
        s.model.heads = 160;
        s.model.head_dim = 160;
        s.model.ffn_hidden = 102_400;
        s.workload.microbatch = 16;
        s.workload.global_batch = 16;
    });
    let d = derive(&spec);
    let f = BlockFacts::from_derivation(&d, &spec);
    assert!(f.block_agrad_flops < u64::MAX / 1024);
}

// ------------------------------------------------------------- spec / JSON

#[test]
fn schedule_and_composition() {
    assert_eq!(base_spec().mapping.schedule(), PipelineSchedule::OneFOneB);
    let spec = with(|s| {
        s.mapping.pp = 8;
        s.mapping.pipeline_interleaving = 3;
        s.mapping.dp = 2;
        s.model.blocks = 96;
        s.workload.global_batch = 64;
        s.workload.microbatch = 2;
    });
    assert_eq!(spec.mapping.schedule(), PipelineSchedule::Interleaved { virtual_stages: 3 });
    assert_eq!(spec.world_size(), 128);
    assert_eq!(spec.local_batch(), 32);
    assert_eq!(spec.microbatch_count(), 16);
    assert_eq!(spec.blocks_per_virtual_chunk(), 4);
    assert_eq!(spec.blocks_per_rank(), 12);
}

#[test]
fn json_round_trip() {
    let spec = with(|s| {
        s.mapping.tp_comm = TpComm::RsAg;
        s.mapping.recompute = Recompute::AttnOnly;
        s.mapping.seq_par_ag_redo = true;
        s.workload.datatype = Datatype::Bfloat16;
    });
    let json = serde_json::to_string_pretty(&spec).expect("serialize");
    assert!(json.contains("\"rs_ag\"") && json.contains("\"attn_only\"") && json.contains("\"bfloat16\""));
    assert_eq!(TrainingSpec::from_json(&json), Ok(spec));
}

#[test]
fn block_facts_use_oracle_field_names() {
    let facts = BlockFacts::default();
    let value = serde_json::to_value(facts).expect("serialize");
    let keys: Vec<&str> = value.as_object().expect("object").keys().map(String::as_str).collect();
    let names: HashSet<&str> = facts.fields().iter().map(|(n, _)| *n).collect();
    assert_eq!(keys.len(), 22);
    assert!(keys.iter().all(|k| names.contains(k)));
}

#[test]
fn inference_fields_default_and_do_not_change_training() {
    let json = serde_json::to_string(&base_spec()).expect("serialize");
    let parsed = TrainingSpec::from_json(&json).expect("parse");
    assert_eq!(parsed.model.kv_heads(), parsed.model.heads);
    assert!(!parsed.model.gated_mlp);
    let explicit = with(|s| {
        s.model.kv_heads = Some(64);
        s.model.vocab = Some(51200);
    });
    assert_eq!(derive(&explicit), derive(&base_spec()));
}

fn parse_error(json: &str) -> String {
    match TrainingSpec::from_json(json) {
        Err(SpecError::Parse(msg)) => msg,
        other => panic!("expected parse error, got {other:?}"),
    }
}

fn base_json() -> Value {
    serde_json::to_value(base_spec()).expect("serialize")
}

#[test]
fn parse_rejects_unknown_missing_and_mistyped_fields() {
    let mut extra = base_json();
    extra["mapping"]["tensor_par"] = 8.into();
    let msg = parse_error(&serde_json::to_string_pretty(&extra).expect("json"));
    assert!(msg.contains("unknown field `tensor_par`") && msg.contains("line"), "{msg}");

    let mut missing = base_json();
    missing["workload"].as_object_mut().expect("object").remove("microbatch");
    let msg = parse_error(&missing.to_string());
    assert!(msg.contains("missing field `microbatch`"), "{msg}");

    let mut bad_enum = base_json();
    bad_enum["mapping"]["recompute"] = "selective".into();
    let msg = parse_error(&bad_enum.to_string());
    assert!(msg.contains("unknown variant `selective`"), "{msg}");

    let mut bad_type = base_json();
    bad_type["workload"]["datatype"] = "int4".into();
    let msg = parse_error(&bad_type.to_string());
    assert!(msg.contains("int4"), "{msg}");

    let mut negative = base_json();
    negative["model"]["hidden"] = (-1).into();
    let msg = parse_error(&negative.to_string());
    assert!(msg.contains("-1"), "{msg}");

    let mut top = base_json();
    top["system"] = "a100_80g".into();
    let msg = parse_error(&top.to_string());
    assert!(msg.contains("unknown field `system`"), "{msg}");
}

// ----------------------------------------------------------- validation rules

#[test]
fn rule_non_positive() {
    type Edit = fn(&mut TrainingSpec);
    let cases: [(&str, Edit); 14] = [
        ("model.hidden", |s| s.model.hidden = 0),
        ("model.ffn_hidden", |s| s.model.ffn_hidden = 0),
        ("model.seq_len", |s| s.model.seq_len = 0),
        ("model.heads", |s| s.model.heads = 0),
        ("model.head_dim", |s| s.model.head_dim = 0),
        ("model.blocks", |s| s.model.blocks = 0),
        ("model.vocab", |s| s.model.vocab = Some(0)),
        ("model.kv_heads", |s| s.model.kv_heads = Some(0)),
        ("workload.global_batch", |s| s.workload.global_batch = 0),
        ("workload.microbatch", |s| s.workload.microbatch = 0),
        ("mapping.tp", |s| s.mapping.tp = 0),
        ("mapping.pp", |s| s.mapping.pp = 0),
        ("mapping.dp", |s| s.mapping.dp = 0),
        ("mapping.pipeline_interleaving", |s| {
            s.mapping.pipeline_interleaving = 0;
        }),
    ];
    for (field, edit) in cases {
        let err = error_of(edit);
        assert_eq!(err, SpecError::NonPositive { field });
        assert_eq!(err.to_string(), format!("{field} must be positive, got 0"));
    }
}

#[test]
fn attention_width_may_differ_from_hidden() {
    // LaMDA-style: 64 heads of 128 on hidden 6144 (a·d = 8192 ≠ h).
    let spec = with(|s| s.model.head_dim = 128);
    let d = derive(&spec);
    let (b, s, h, t) = (4u64, 2048u64, 6144u64, 8u64);
    let width = 64 * 128 / t;
    let q = d.invocations.iter().find(|i| i.name == "attn.q.fwd").expect("q projection");
    assert_eq!(q.ops, 2 * b * s * h * width);
    let proj = d.invocations.iter().find(|i| i.name == "attn.proj.fwd").expect("output projection");
    assert_eq!(proj.ops, 2 * b * s * width * h);
}

#[test]
fn rule_integer_fields_are_in_range() {
    let err = error_of(|s| s.model.blocks = 1 << 63);
    assert_eq!(err, SpecError::IntegerOutOfRange { field: "model.blocks", value: 1 << 63, limit: MAX_SPEC_INTEGER });
    assert!(err.to_string().contains("model.blocks"));
    let err = error_of(|s| s.workload.global_batch = (1 << 53) + 1);
    assert!(matches!(err, SpecError::IntegerOutOfRange { field: "workload.global_batch", .. }));
}

#[test]
fn rule_tp_divides_hidden() {
    let err = error_of(|s| {
        s.model.hidden = 6148;
    });
    assert_eq!(err, SpecError::TpNotDivisor { field: "model.hidden", value: 6148, tp: 8 });
}

#[test]
fn rule_kv_heads_divide_heads() {
    let err = error_of(|s| s.model.kv_heads = Some(5));
    assert_eq!(err, SpecError::KvHeadsNotDivisor { kv_heads: 5, heads: 64 });
    assert!(err.to_string().contains("model.kv_heads must divide model.heads"));
}

/// The Llama family and SGD validate (they import, decompose and run), but
/// the derivation, which counts Calculon's block trained with Adam, refuses
/// them by name instead of counting something else.
#[test]
fn derivation_refuses_what_it_does_not_count() {
    use super::spec::{Dropout, OptimizerKind, OptimizerSpec, Real};
    // An (edit, feature) table; the annotation makes the closures fn pointers.
    #[allow(clippy::type_complexity)]
    let cases: [(fn(&mut TrainingSpec), &str); 1] = [(
        |s| s.workload.optimizer = Some(OptimizerSpec { kind: OptimizerKind::Sgd, lr: Real(0.1), beta1: None, beta2: None, eps: None }),
        "workload.optimizer.kind = sgd",
    )];
    for (edit, feature) in cases {
        let mut spec = base_spec();
        edit(&mut spec);
        assert_eq!(spec.validate(), Ok(()), "{feature} validates");
        assert_eq!(derive_training_block(&spec).err(), Some(SpecError::NotCounted { feature: feature.into() }));
    }
    // A dropout probability and an explicit Adam are counted as today.
    let mut spec = base_spec();
    spec.model.dropout = Some(Dropout::Probability(Real(0.1)));
    spec.workload.optimizer =
        Some(OptimizerSpec { kind: OptimizerKind::Adam, lr: Real(3e-4), beta1: Some(Real(0.9)), beta2: Some(Real(0.95)), eps: None });
    assert_eq!(
        derive_training_block(&spec).map(|d| (d.invocations, d.memory)),
        derive_training_block(&base_spec()).map(|d| (d.invocations, d.memory))
    );
}

#[test]
fn rule_tp_divides_heads() {
    let err = error_of(|s| s.mapping.tp = 3);
    assert_eq!(err, SpecError::TpNotDivisor { field: "model.heads", value: 64, tp: 3 });
    assert_eq!(err.to_string(), "mapping.tp = 3 must divide model.heads = 64");
}

#[test]
fn rule_tp_divides_ffn_hidden() {
    let err = error_of(|s| s.model.ffn_hidden = 24580);
    assert_eq!(err, SpecError::TpNotDivisor { field: "model.ffn_hidden", value: 24580, tp: 8 });
}

#[test]
fn rule_sequence_splits_under_rs_ag() {
    let err = error_of(|s| {
        s.mapping.tp_comm = TpComm::RsAg;
        s.model.seq_len = 2045;
    });
    assert_eq!(err, SpecError::SequenceNotSplittable { tokens: 4 * 2045, tp: 8, tp_comm: "rs_ag" });
    assert!(err.to_string().contains("workload.microbatch × model.seq_len"));
    // p2p_rs_ag splits the pipeline transfers the same way.
    let err = error_of(|s| {
        s.mapping.tp_comm = TpComm::P2pRsAg;
        s.model.seq_len = 2045;
    });
    assert!(matches!(err, SpecError::SequenceNotSplittable { tp_comm: "p2p_rs_ag", .. }));
    // As in Calculon, the microbatch's tokens need to split, not the
    // sequence itself: 4 × 2046 tokens split over 8 ranks.
    assert!(with(|s| {
        s.mapping.tp_comm = TpComm::RsAg;
        s.model.seq_len = 2046;
    })
    .validate()
    .is_ok());
    // The same sequence is fine without sequence parallelism.
    assert!(with(|s| s.model.seq_len = 2045).validate().is_ok());
}

#[test]
fn rule_global_batch_divisible() {
    let err = error_of(|s| {
        s.mapping.dp = 3;
        s.workload.global_batch = 8;
        s.workload.microbatch = 2;
    });
    assert_eq!(err, SpecError::BatchNotDivisible { global_batch: 8, dp: 3, microbatch: 2 });
    assert!(err.to_string().contains("workload.global_batch"));
}

#[test]
fn rule_blocks_per_stage() {
    // Calculon's uneven pipeline: 48 blocks over 5 stages is valid, the
    // fullest stage holds 10; the interleaving must divide 10.
    let mut spec = base_spec();
    spec.mapping.pp = 5;
    assert_eq!(spec.validate(), Ok(()));
    assert_eq!((spec.blocks_per_rank(), spec.short_stages()), (10, 2));
    assert_eq!((0..5).map(|s| spec.stage_blocks(s)).collect::<Vec<_>>(), vec![10, 10, 10, 9, 9]);
    let err = error_of(|s| {
        s.mapping.pp = 5;
        s.mapping.pipeline_interleaving = 3;
    });
    assert_eq!(err, SpecError::InterleavingNotDivisor { blocks: 48, pp: 5, interleaving: 3, per_stage: 10 });
    assert!(err.to_string().contains("mapping.pipeline_interleaving"));
    let err = error_of(|s| s.mapping.pp = 49);
    assert_eq!(err, SpecError::MoreStagesThanBlocks { blocks: 48, pp: 49 });
}

#[test]
fn rule_interleaving_needs_pipeline() {
    let err = error_of(|s| s.mapping.pipeline_interleaving = 2);
    assert_eq!(err, SpecError::InterleavingWithoutPipeline { interleaving: 2 });
    assert!(err.to_string().contains("mapping.pipeline_interleaving"));
}

#[test]
fn rule_ag_redo_needs_rs_ag() {
    let err = error_of(|s| {
        s.mapping.recompute = Recompute::AttnOnly;
        s.mapping.seq_par_ag_redo = true;
    });
    assert_eq!(err, SpecError::AgRedoWithoutSequenceParallel);
    assert!(err.to_string().contains("mapping.seq_par_ag_redo"));
}

#[test]
fn rule_ag_redo_excludes_full_recompute() {
    let err = error_of(|s| {
        s.mapping.tp_comm = TpComm::RsAg;
        s.mapping.seq_par_ag_redo = true;
    });
    assert_eq!(err, SpecError::AgRedoWithFullRecompute);
}

#[test]
fn ag_redo_at_tp_one_moves_no_data() {
    // Accepted, as in Calculon; no collective exists to redo.
    let spec = with(|s| {
        s.mapping.tp = 1;
        s.mapping.tp_comm = TpComm::RsAg;
        s.mapping.recompute = Recompute::None;
        s.mapping.seq_par_ag_redo = true;
    });
    let d = derive(&spec);
    assert!(d.invocations.iter().all(|i| i.collective.is_none()));
    let plain = derive(&with(|s| {
        s.mapping.tp = 1;
        s.mapping.recompute = Recompute::None;
    }));
    let work = |d: &BlockDerivation| d.invocations.iter().map(|i| (i.name.clone(), i.ops, i.read_bytes, i.write_bytes)).collect::<Vec<_>>();
    assert_eq!(work(&d), work(&plain));
}

#[test]
fn rule_optimizer_sharding_needs_dp() {
    let err = error_of(|s| s.mapping.optimizer_sharding = true);
    assert_eq!(err, SpecError::ShardingWithoutDataParallel);
    assert!(err.to_string().contains("mapping.optimizer_sharding"));
}

#[test]
fn optimizer_shares_may_be_fractional() {
    // DP 5 does not divide the 6144-wide tensors: a rank's share of the
    // flat optimizer buffer is the total divided by 5.
    let spec = with(|s| {
        s.mapping.optimizer_sharding = true;
        s.mapping.dp = 7;
        s.workload.global_batch = 28;
    });
    let d = derive(&spec);
    let facts = BlockFacts::from_derivation(&d, &spec);
    assert_eq!(d.memory.shards, 7);
    assert_eq!(facts.block_optimizer_space, d.memory.optimizer as f64 / 7.0);
    assert_eq!(facts.block_weight_grad_space, d.memory.weight_grads as f64 / 7.0);
    assert!(facts.block_weight_grad_space.fract() != 0.0, "{}", facts.block_weight_grad_space);
    let total: u64 = d.phase(Phase::Optimizer).map(|i| i.ops).sum();
    assert!(FactValue::Share(facts.block_optim_flops).agrees_with(FactValue::Share(total as f64 / 7.0)));
}

#[test]
fn rule_work_scale_fits() {
    let err = error_of(|s| {
        s.workload.microbatch = 1 << 20;
        s.workload.global_batch = 1 << 20;
    });
    assert!(matches!(err, SpecError::TooLarge { .. }), "{err:?}");
    let err = error_of(|s| {
        // A world beyond MAX_WORLD_SIZE although every divisibility rule holds.
        s.mapping.dp = 1 << 22;
        s.workload.global_batch = 1 << 22;
        s.workload.microbatch = 1;
    });
    assert!(matches!(err, SpecError::TooLarge { .. }), "{err:?}");
}

#[test]
fn derive_rejects_invalid_spec() {
    let spec = with(|s| s.mapping.tp = 0);
    assert_eq!(derive_training_block(&spec), Err(SpecError::NonPositive { field: "mapping.tp" }));
}

/// Megatron-LM's `num_floating_point_operations` (megatron/training/training.py,
/// the version with `query_projection_to_hidden_size_ratio`) restricted to
/// one block (`num_layers = 1`, no logit term, no MoE), for one microbatch:
///
/// ```text
/// 12 · batch_size · seq_length · hidden_size² · (
///     (1 + num_query_groups / num_attention_heads + seq_length / hidden_size)
///         · (kv_channels · num_attention_heads / hidden_size)      # attention
///   + (ffn_hidden_size / hidden_size) · (3/2 if swiglu else 1) )   # MLP
/// ```
///
/// evaluated exactly: every term over the common denominator
/// `2 · hidden² · heads` (so the rational formula's value is an integer
/// here, as it must be).
// One parameter per term of Megatron's formula, named as in it.
#[allow(clippy::too_many_arguments)]
fn megatron_block_flops(b: u64, s: u64, h: u64, ffn: u64, heads: u64, query_groups: u64, kv_channels: u64, swiglu: bool) -> u128 {
    let [b, s, h, f, a, g, d] = [b, s, h, ffn, heads, query_groups, kv_channels].map(u128::from);
    // Attention: (1 + g/a + s/h) · (d·a/h) = (a·h + g·h + s·a) · d·a / (a·h²).
    let attention_num = (a * h + g * h + s * a) * d * a * 2;
    // MLP: (f/h) · (3/2 or 1) = f·(3 or 2)·a·h / (2·a·h²).
    let mlp_num = f * if swiglu { 3 } else { 2 } * a * h;
    let denominator = 2 * a * h * h;
    let numerator = 12 * b * s * h * h * (attention_num + mlp_num);
    assert_eq!(numerator % denominator, 0, "Megatron's count is an integer here");
    numerator / denominator
}

/// The block's matrix-product work (forward, input and weight gradients;
/// recompute is not model work), summed over the TP ranks.
fn matmul_flops(spec: &TrainingSpec) -> u128 {
    let derivation = derive(spec);
    let phases = [Phase::Forward, Phase::ActivationGradient, Phase::WeightGradient];
    let per_rank: u128 =
        derivation.invocations.iter().filter(|v| v.engine == Engine::Matrix && phases.contains(&v.phase)).map(|v| u128::from(v.ops)).sum();
    per_rank * u128::from(spec.mapping.tp)
}

/// The Llama family's (and Calculon's GPT block's) per-block matmul FLOPs
/// equal Megatron-LM's count: the five example specs (Llama-2-7B and 70B,
/// Llama-3-8B and 70B, Mistral-7B), every oracle case, and variants of
/// them over grouped-query attention, the gated MLP, recompute and TP.
#[test]
fn matmul_flops_equal_megatrons() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/llama");
    let mut specs: Vec<(String, TrainingSpec)> = ["llama2-7b", "llama2-70b", "llama3-8b", "llama3-70b", "mistral-7b"]
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(format!("{dir}/{name}.json")).expect("example spec");
            ((*name).to_string(), TrainingSpec::from_json(&text).expect("valid spec"))
        })
        .collect();
    assert!(specs.iter().all(|(_, s)| s.model.gated_mlp && s.model.norm == Norm::RmsNorm && s.model.rope));
    specs.extend(all_oracle_cases().into_iter().map(|c| (c.name, c.spec)));
    for (name, base) in specs.clone() {
        for (kv, gated, recompute, tp) in [(1, true, Recompute::Full, 1), (2, false, Recompute::AttnOnly, 2), (8, true, Recompute::None, 8)]
        {
            let mut spec = base.clone();
            spec.model.kv_heads = Some(kv * spec.mapping.tp.max(tp)).filter(|k| spec.model.heads % k == 0);
            spec.model.gated_mlp = gated;
            spec.mapping.recompute = recompute;
            spec.mapping.seq_par_ag_redo = false;
            if spec.validate().is_ok() {
                specs.push((format!("{name} (kv {:?}, gated {gated}, {recompute:?})", spec.model.kv_heads), spec));
            }
        }
    }
    assert!(specs.len() > 100, "{} specs", specs.len());
    for (name, spec) in &specs {
        let m = &spec.model;
        let want = megatron_block_flops(
            spec.workload.microbatch,
            m.seq_len,
            m.hidden,
            m.ffn_hidden,
            m.heads,
            m.kv_heads(),
            m.head_dim,
            m.gated_mlp,
        );
        assert_eq!(matmul_flops(spec), want, "{name}");
    }
}

/// Calculon's execution files read as they are (`calculon.rs`).
#[test]
fn calculon_execution_files_make_specs() {
    use super::{spec_from_calculon, CalculonError};
    let root = env!("CARGO_MANIFEST_DIR");
    let model = std::fs::read_to_string(format!("{root}/test/oracles/calculon/models/megatron-1T.json")).expect("model");
    let example =
        std::fs::read_to_string(format!("{root}/test/Inputs/calculon/executions/3072_t4_p64_d12_mbs4_full.json")).expect("example");
    let (spec, run) = spec_from_calculon(&model, Some("megatron-1T"), &example).expect("Calculon's example");
    let map = &spec.mapping;
    assert_eq!((map.tp, map.pp, map.dp, map.pipeline_interleaving), (4, 64, 12, 1));
    assert_eq!((map.recompute, map.tp_comm, map.optimizer_sharding, map.fused_activation), (Recompute::Full, TpComm::RsAg, true, true));
    assert_eq!((spec.workload.global_batch, spec.workload.microbatch), (3072, 4));
    assert_eq!(spec.model.name.as_deref(), Some("megatron-1T"));
    assert_eq!(spec.model.kv_heads, None);
    assert_eq!((run.tp_net, run.pp_net, run.dp_net, run.data_par_overlap, run.training), (0, 1, 1, false, true));
    let edit = |field: &str, value: serde_json::Value| {
        let mut exe: serde_json::Value = serde_json::from_str(&example).expect("JSON");
        exe[field] = value;
        spec_from_calculon(&model, None, &exe.to_string())
    };
    let (mqa, _) = edit("attention_type", "multiquery".into()).expect("multi-query");
    assert_eq!(mqa.model.kv_heads, Some(1));
    let (_, inference) = edit("training", false.into()).expect("inference");
    assert!(!inference.training);
    let (_, offloaded) = edit("optimizer_offload", true.into()).expect("offload");
    assert!(offloaded.optimizer_offload && !offloaded.weight_offload && !offloaded.activations_offload);
    assert_eq!(edit("num_procs", 3000.into()), Err(CalculonError::NumProcs { num_procs: 3000, product: 3072 }));
    assert!(matches!(edit("attention_type", "grouped".into()), Err(CalculonError::AttentionType(_))));
    assert!(matches!(edit("tensor_par_comm_type", "ring".into()), Err(CalculonError::Spec(_))));
    assert!(matches!(edit("pipeline_par", 3.into()), Err(CalculonError::NumProcs { .. })));
    let mut missing: serde_json::Value = serde_json::from_str(&example).expect("JSON");
    missing.as_object_mut().expect("object").remove("training");
    let err = spec_from_calculon(&model, None, &missing.to_string()).expect_err("missing field");
    assert!(err.to_string().contains("missing field `training`"), "{err}");
}
