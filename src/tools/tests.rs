//! End-to-end: spec -> ModelIR -> dist -> plan -> work summary, in process,
//! against the Calculon oracle (read from `test/oracles/calculon/`, not copied).

use serde_json::Value as Json;

use crate::transforms::transformer::import::{import_inference, import_training};
use crate::{
    analysis::workload::{BlockFacts, InferenceSpec, TrainingSpec},
    dialect::summary::summarize,
    ir::{context::create_context, diagnostics::DiagnosticSink, digest::layer_digest},
    tools::{execution::run_pipeline, opt::parse_module},
};

const PIPELINE: &str = "builtin.module(distribute-transformer-training, plan-transformer-training, check-mesh-strategy, check-collective-groups, check-conservation, check-recompute)";

/// The eight Table 5 cases.
fn oracle_cases() -> Vec<Json> {
    cases_of(concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/seqsel-table5.json"))
}

/// Table 5, the 24 random whole-step cases and the recorded ones.
fn all_oracle_cases() -> Vec<Json> {
    let mut cases = oracle_cases();
    cases.extend(cases_of(concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/fullmodel-random.json")));
    cases.extend(cases_of(concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/calculon/recorded-cases.json")));
    // Multi-query attention: one KV head, replicated over TP.
    cases.extend(cases_of(concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/multiquery-cases.json")));
    cases
}

fn cases_of(path: &str) -> Vec<Json> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let json: Json = serde_json::from_str(&text).expect("oracle is JSON");
    json["cases"].as_array().expect("cases array").clone()
}

fn spec_of(case: &Json) -> TrainingSpec {
    let spec = serde_json::json!({"model": case["model"], "workload": case["workload"], "mapping": case["mapping"]});
    TrainingSpec::from_json(&spec.to_string()).expect("oracle case is a valid spec")
}

/// The imported ModelIR of a training spec, as text.
fn training_text(spec: &TrainingSpec) -> String {
    let context = create_context();
    let module = import_training(&context, spec, melior::ir::Location::unknown(&context)).expect("imports");
    module.as_operation().to_string()
}

/// The imported ModelIR of an inference spec, as text.
fn inference_text(spec: &InferenceSpec) -> String {
    let context = create_context();
    let module = import_inference(&context, spec, melior::ir::Location::unknown(&context)).expect("imports");
    module.as_operation().to_string()
}

/// Runs the pipeline on `spec`; returns the summary's block facts and the
/// three layer digests.
fn plan(spec: &TrainingSpec) -> (BlockFacts, [String; 3]) {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let mut module = parse_module(&context, &sink, training_text(spec).as_bytes(), "spec").expect("import parses");
    if let Err(e) = run_pipeline(&context, &mut module, PIPELINE) {
        panic!("{e}: {:?}", sink.take());
    }
    let op = module.as_operation();
    assert!(crate::dialect::verify::verify_blueprint(op), "{:?}", sink.take());
    let summary = summarize(op).expect("plan present");
    assert_eq!(summary.layer, "plan");
    (summary.block.expect("a training plan states block facts"), ["model", "dist", "plan"].map(|layer| layer_digest(op, layer)))
}

#[test]
fn every_oracle_case_matches_through_the_mlir_pipeline() {
    let cases = all_oracle_cases();
    assert!(cases.len() > 32);
    let mut failures = Vec::new();
    for case in &cases {
        let expected: BlockFacts = serde_json::from_value(case["block"].clone()).expect("oracle block facts");
        let (facts, _) = plan(&spec_of(case));
        for (field, got, want) in facts.mismatches(&expected) {
            failures.push(format!("{}: {field} = {got}, oracle {want}", case["name"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn digests_are_deterministic_and_ignore_non_workload_attributes() {
    let case = &oracle_cases()[3];
    let spec = spec_of(case);
    let (_, first) = plan(&spec);
    let (_, second) = plan(&spec);
    assert_eq!(first, second);
    // A network tier handed to a later estimate is not part of any layer.
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let text =
        training_text(&spec).replacen("module attributes {", "module attributes {blueprint.system = {network_tier = \"tier-a\"}, ", 1);
    let mut module = parse_module(&context, &sink, text.as_bytes(), "spec").expect("parses");
    run_pipeline(&context, &mut module, PIPELINE).expect("plans");
    let with_tier = ["model", "dist", "plan"].map(|layer| layer_digest(module.as_operation(), layer));
    assert_eq!(first, with_tier);
    // A different strategy changes the dist and plan digests, not the model's.
    let mut other = spec.clone();
    other.mapping.tp = 4;
    let (_, changed) = plan(&other);
    assert_eq!(changed[0], first[0]);
    assert_ne!(changed[1], first[1]);
    assert_ne!(changed[2], first[2]);
}

fn inference_cases(file: &str) -> Vec<Json> {
    let path = format!("{}/test/oracles/inference/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let json: Json = serde_json::from_str(&text).expect("oracle is JSON");
    json["cases"].as_array().expect("cases array").clone()
}

fn serve(case: &Json, pipeline: &str) -> crate::dialect::summary::WorkSummary {
    let spec = serde_json::json!({"model": case["model"], "workload": case["workload"], "mapping": case["mapping"]});
    let spec = InferenceSpec::from_json(&spec.to_string()).expect("oracle case is a valid spec");
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let mut module = parse_module(&context, &sink, inference_text(&spec).as_bytes(), "spec").expect("import parses");
    if let Err(e) = run_pipeline(&context, &mut module, pipeline) {
        panic!("{e}: {:?}", sink.take());
    }
    summarize(module.as_operation()).expect("summary")
}

#[test]
fn inference_oracles_match_through_the_mlir_pipeline() {
    let mut failures = Vec::new();
    for case in inference_cases("prefill-calculon.json") {
        let summary = serve(&case, "builtin.module(distribute-transformer-inference, plan-transformer-inference, check-conservation)");
        let prefill = serde_json::to_value(summary.inference.expect("inference summary").prefill).expect("serializes");
        for (field, want) in case["block"].as_object().expect("block") {
            if &prefill[field] != want {
                failures.push(format!("{}: {field} = {}, oracle {want}", case["name"], prefill[field]));
            }
        }
    }
    for case in inference_cases("llama2-genz.json") {
        let summary = serve(&case, "builtin.module(distribute-transformer-inference, check-conservation)");
        let flops = summary.inference.expect("inference summary").matmul_flops;
        for (phase, key) in [("prefill", "prefill"), ("decode", "decode_at_final_context")] {
            let got = serde_json::to_value(flops.get(phase).copied().unwrap_or_default()).expect("serializes");
            for field in ["per_gpu_layer_flops", "per_gpu_layer_flops_gemm", "per_gpu_layer_flops_attn_bmm"] {
                if got[field] != case[key][field] {
                    failures.push(format!("{} {phase}: {field} = {}, oracle {}", case["name"], got[field], case[key][field]));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_failing_pass_leaves_the_module_unchanged() {
    // A strategy whose TP does not divide the heads: distribution must fail
    // after validation, before touching anything.
    let case = &oracle_cases()[0];
    let spec = spec_of(case);
    let text = training_text(&spec).replacen(" tp = 8 : i64", " tp = 7 : i64", 1);
    assert!(text.contains(" tp = 7 : i64"), "{text}");
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let mut module = parse_module(&context, &sink, text.as_bytes(), "spec").expect("parses");
    let before = module.as_operation().to_string();
    assert!(run_pipeline(&context, &mut module, PIPELINE).is_err());
    assert_eq!(module.as_operation().to_string(), before);
    let diagnostics = sink.take();
    assert!(diagnostics.iter().any(|d| d.message.contains("mapping.tp = 7 must divide model.hidden")), "{diagnostics:?}");
}

/// Every fourth random whole-step case (from `first`), planned structured
/// and unrolled: `check` gets the case's index, the pipeline and the module.
fn for_planned_steps(first: usize, mut check: impl FnMut(usize, &str, &melior::ir::Module)) {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let cases = cases_of(concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/fullmodel-random.json"));
    for (i, case) in cases.iter().enumerate().skip(first).step_by(4) {
        let spec = spec_of(case);
        for pipeline in [
            "builtin.module(distribute-transformer-training, plan-transformer-training)",
            "builtin.module(distribute-transformer-training, dist-unroll-schedule, plan-transformer-training)",
        ] {
            let mut module = parse_module(&context, &sink, training_text(&spec).as_bytes(), "spec").expect("import parses");
            if let Err(e) = run_pipeline(&context, &mut module, pipeline) {
                panic!("case {i}: {e}: {:?}", sink.take());
            }
            check(i, pipeline, &module);
        }
    }
}

/// check-conservation reads a layer's tasks one by one and keeps only the
/// representative block's and the pipeline and data-parallel transfers:
/// the facts it compares must be those of the whole reading.
#[test]
fn visiting_reading_equals_the_full_reading() {
    use crate::dialect::summary::{layer_work_in, layer_work_visiting, ops_and_kinds, PhaseTotals};
    for_planned_steps(1, |i, pipeline, module| {
        let (ops, kinds) = ops_and_kinds(module.as_operation());
        for layer in ["dist", "plan"] {
            let full = layer_work_in(&ops, &kinds, layer);
            let (mut totals, mut visited) = (PhaseTotals::default(), Vec::new());
            let kept = layer_work_visiting(&ops, &kinds, layer, |task, op| {
                totals.add(task);
                visited.push((task.id.to_string(), op.to_raw().ptr as usize));
                task.feeds_block_facts()
            });
            let context = format!("case {i} {layer} {pipeline}");
            assert_eq!(full.phase_totals(), totals.into_map(), "{context}");
            assert_eq!(full.block_facts(), kept.block_facts(), "{context}");
            assert_eq!(full.stages(), kept.stages(), "{context}");
            assert_eq!((&full.memory, &full.stage_memory, &full.step), (&kept.memory, &kept.stage_memory, &kept.step), "{context}");
            // Every task is visited, in order, each with its own op.
            let all: Vec<(String, usize)> =
                full.tasks.iter().map(|t| t.id.to_string()).zip(full.task_ops.iter().map(|op| op.to_raw().ptr as usize)).collect();
            assert_eq!(all, visited, "{context}");
            assert!(kept.tasks.len() < full.tasks.len(), "{context}");
        }
    });
}

/// The estimate's reading (the representative chunk's template, every
/// boundary) states the same block facts, stages and schedules as the full
/// reading, structured and unrolled.
#[test]
fn estimate_reading_equals_the_full_reading() {
    for_planned_steps(0, |i, pipeline, module| {
        for layer in ["dist", "plan"] {
            let full = crate::dialect::summary::layer_work(module.as_operation(), layer);
            let read = crate::dialect::summary::estimate_work(module.as_operation(), layer);
            assert_eq!(full.block_facts(), read.block_facts(), "case {i} {layer} {pipeline}");
            assert_eq!(full.stages(), read.stages(), "case {i} {layer} {pipeline}");
            assert_eq!(full.schedules, read.schedules, "case {i} {layer} {pipeline}");
            assert_eq!(full.step, read.step, "case {i} {layer} {pipeline}");
            assert!(read.tasks.len() <= full.tasks.len());
        }
    });
}

/// The block's decomposed ModelIR, read into a graph.
fn decomposed_graph(spec: &TrainingSpec) -> crate::analysis::workload::BlockGraph {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let mut module = parse_module(&context, &sink, training_text(spec).as_bytes(), "spec").expect("import parses");
    if let Err(e) = run_pipeline(&context, &mut module, "builtin.module(model-decompose-transformer)") {
        panic!("{e}: {:?}", sink.take());
    }
    crate::dialect::model::graph::read_block(block_function(&module)).map(|read| read.graph).unwrap_or_else(|(_, e)| panic!("reads: {e}"))
}

/// The block's function of a decomposed module.
fn block_function<'c, 'a>(module: &'a melior::ir::Module<'c>) -> melior::ir::OperationRef<'c, 'a> {
    crate::ir::read::collect_ops(module.as_operation())
        .into_iter()
        .find(|op| crate::ir::read::name_of(*op) == "func.func")
        .expect("the block's function")
}

/// The decomposed served block of an inference spec, read as the served
/// derivation reads it.
fn served_graph(spec: &InferenceSpec) -> crate::analysis::workload::BlockGraph {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let mut module = parse_module(&context, &sink, inference_text(spec).as_bytes(), "spec").expect("import parses");
    if let Err(e) = run_pipeline(&context, &mut module, "builtin.module(model-decompose-transformer)") {
        panic!("{e}: {:?}", sink.take());
    }
    crate::dialect::model::graph::read_served_block(block_function(&module)).unwrap_or_else(|(_, e)| panic!("reads: {e}")).graph
}

/// Specs over every strategy choice the block's derivation reads (TP
/// degree and communication, recompute, the sequence-parallel redo, fused
/// activation, optimizer sharding, TP overlap, datatype), on small models
/// whose sizes are not all powers of two, each as a GPT block and as a
/// Llama-family block.
fn strategy_sweep() -> Vec<TrainingSpec> {
    let mut specs = Vec::new();
    let mut next = crate::runtime::dtype::xorshift(0x5eed_1234_abcd_0001);
    let models = [(64, 256, 16, 4, 16), (96, 160, 24, 8, 12), (48, 192, 8, 4, 12)];
    for (i, (hidden, ffn, seq, heads, head_dim)) in models.into_iter().enumerate() {
        for tp in [1, 2, 4] {
            for tp_comm in ["ar", "rs_ag", "p2p_rs_ag"] {
                for recompute in ["none", "attn_only", "full"] {
                    let pick = |n: u64, next: &mut dyn FnMut() -> u64| next() % n;
                    let overlap = ["none", "ring", "pipe"][pick(3, &mut next) as usize];
                    let datatype = ["float16", "bfloat16", "float32", "float8"][pick(4, &mut next) as usize];
                    let json = serde_json::json!({
                        "model": {"name": format!("sweep{i}"), "hidden": hidden, "ffn_hidden": ffn, "seq_len": seq,
                                  "heads": heads, "head_dim": head_dim, "blocks": 4},
                        "workload": {"global_batch": 8, "microbatch": 2, "datatype": datatype},
                        "mapping": {"tp": tp, "pp": 2, "dp": 2, "pipeline_interleaving": 1, "recompute": recompute,
                                    "tp_comm": tp_comm,
                                    "seq_par_ag_redo": tp_comm == "rs_ag" && recompute != "full" && pick(2, &mut next) == 1,
                                    "fused_activation": pick(2, &mut next) == 1, "optimizer_sharding": pick(2, &mut next) == 1,
                                    "tp_overlap": if tp == 1 { "none" } else { overlap }}
                    });
                    let spec = TrainingSpec::from_json(&json.to_string()).expect("a spec");
                    spec.validate_counted().unwrap_or_else(|e| panic!("{json}: {e}"));
                    specs.push(spec.clone());
                    // The Llama family on the same strategy: RMS norms, a
                    // SwiGLU MLP, RoPE, grouped-query attention (as few KV
                    // heads as TP splits, or half the heads, or one
                    // replicated over TP), no dropout; and
                    // mixes of the two families' choices.
                    let mut llama = json.clone();
                    // (or one, replicated over TP: multi-query).
                    let kv = match pick(3, &mut next) {
                        0 => tp,
                        1 => 1,
                        _ => (heads / 2).max(tp),
                    };
                    llama["model"]["norm"] = "rms_norm".into();
                    llama["model"]["gated_mlp"] = true.into();
                    llama["model"]["kv_heads"] = kv.into();
                    llama["model"]["rope"] = true.into();
                    if pick(3, &mut next) == 0 {
                        llama["model"]["dropout"] = 0.1.into();
                        llama["model"]["norm"] = "layer_norm".into();
                    }
                    let llama = TrainingSpec::from_json(&llama.to_string()).expect("a spec");
                    llama.validate_counted().unwrap_or_else(|e| panic!("{json}: {e}"));
                    specs.push(llama);
                }
            }
        }
    }
    specs
}

/// Distribution reads the ModelIR: the block's work derived from its
/// decomposed IR (shapes from the types, sharding from the dataflow) is the
/// workload algebra's, invocation by invocation and in memory, on every
/// oracle case and over every strategy choice.
#[test]
fn the_derivation_from_modelir_equals_the_algebra() {
    use crate::analysis::workload::{derive_from_graph, derive_training_block, partial_gradients};
    let mut specs: Vec<TrainingSpec> = all_oracle_cases().iter().map(spec_of).collect();
    let oracle = specs.len();
    specs.extend(strategy_sweep());
    assert_eq!(specs.len(), oracle + 2 * 81, "the sweep covers the strategy space");
    for (i, spec) in specs.iter().enumerate() {
        let want = derive_training_block(spec).expect("the algebra derives");
        let derived = derive_from_graph(&decomposed_graph(spec), spec).unwrap_or_else(|e| panic!("spec {i}: {:?}: {e}", e.op));
        let want_partial = partial_gradients(spec).expect("the algebra derives");
        assert_eq!(derived.partial_gradients, want_partial, "spec {i} ({:?}): the partial gradients", spec.mapping);
        let got = derived.derivation;
        let names = |d: &crate::analysis::workload::BlockDerivation| d.invocations.iter().map(|v| v.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&got), names(&want), "spec {i} ({:?}): the tasks", spec.mapping);
        for (g, w) in got.invocations.iter().zip(&want.invocations) {
            assert_eq!(g, w, "spec {i} ({:?})", spec.mapping);
        }
        assert_eq!(got.memory, want.memory, "spec {i} ({:?}): memory", spec.mapping);
    }
}

/// The served block's passes derived from its decomposed ModelIR equal the
/// inference algebra's, invocation by invocation, in memory and in KV
/// traffic, on every inference oracle case and over a sweep of tensor
/// parallelism, attention kinds, gated MLPs and datatypes.
#[test]
fn the_served_derivation_from_modelir_equals_the_algebra() {
    use crate::analysis::workload::{derive_decode_pass, derive_prefill_pass, derive_served_pass, InferencePhase};
    let mut specs: Vec<InferenceSpec> = ["prefill-calculon.json", "llama2-genz.json"]
        .iter()
        .flat_map(|file| inference_cases(file))
        .map(|case| {
            let spec = serde_json::json!({"model": case["model"], "workload": case["workload"], "mapping": case["mapping"]});
            InferenceSpec::from_json(&spec.to_string()).expect("oracle case is a valid spec")
        })
        .collect();
    let oracle = specs.len();
    for (heads, kv_heads) in [(8, 8), (8, 2), (8, 1), (12, 4)] {
        for tp in [1, 2, 4] {
            for gated in [false, true] {
                for (datatype, kv) in [("float16", None), ("bfloat16", Some("float8")), ("float32", None)] {
                    let mut json = serde_json::json!({
                        "model": {"name": "sweep", "hidden": heads * 16, "ffn_hidden": 96, "heads": heads, "kv_heads": kv_heads,
                                  "head_dim": 16, "blocks": 2, "seq_len": 24, "gated_mlp": gated},
                        "workload": {"batch": 3, "prompt_tokens": 10, "generated_tokens": 5, "datatype": datatype},
                        "mapping": {"tp": tp, "pp": 1}
                    });
                    if let Some(kv) = kv {
                        json["workload"]["kv_datatype"] = kv.into();
                    }
                    specs.push(InferenceSpec::from_json(&json.to_string()).expect("a valid sweep spec"));
                }
            }
        }
    }
    assert_eq!(specs.len(), oracle + 72, "the sweep covers the strategies");
    for (i, spec) in specs.iter().enumerate() {
        let graph = served_graph(spec);
        let (prompt, last) = (spec.workload.prompt_tokens, spec.workload.final_context());
        let mut passes = vec![(InferencePhase::Prefill, prompt, derive_prefill_pass(spec).expect("derives"))];
        if spec.workload.generated_tokens > 0 {
            passes.push((InferencePhase::Decode, last, derive_decode_pass(spec, last).expect("derives")));
        }
        for (pass, context, want) in passes {
            let got = derive_served_pass(&graph, spec, pass, context).unwrap_or_else(|e| panic!("spec {i} {pass:?}: {:?}: {e}", e.op));
            let names =
                |p: &crate::analysis::workload::InferencePass| p.derivation.invocations.iter().map(|v| v.name.clone()).collect::<Vec<_>>();
            assert_eq!(names(&got.pass), names(&want), "spec {i} {pass:?} ({:?}): the tasks", spec.mapping);
            for (g, w) in got.pass.derivation.invocations.iter().zip(&want.derivation.invocations) {
                assert_eq!(g, w, "spec {i} {pass:?} ({:?})", spec.mapping);
            }
            assert_eq!(got.pass, want, "spec {i} {pass:?}: memory and traffic");
            let cache = got.cache.map(|c| c.2);
            assert_eq!(cache, Some(crate::analysis::workload::kv_cache_bytes(spec, context)), "spec {i} {pass:?}: the cache on one rank");
        }
    }
}

/// Random edits of a block graph: shapes of any rank and size, operands
/// dropped, added or redirected, op kinds swapped. `as_read`: only what a
/// block read off the IR can be (static shapes of at most 2^54 elements,
/// each op with its kind's operands, an operand defined before its reader).
fn edit_graph(
    graph: &crate::analysis::workload::BlockGraph,
    next: &mut impl FnMut() -> u64,
    as_read: bool,
) -> crate::analysis::workload::BlockGraph {
    use crate::analysis::workload::{graph::DYNAMIC, GraphOpKind, OptimizerKind, ValueRole};
    let kinds = [
        GraphOpKind::Fork,
        GraphOpKind::LayerNorm,
        GraphOpKind::RmsNorm,
        GraphOpKind::Matmul,
        GraphOpKind::BatchMatmul,
        GraphOpKind::AttentionScores { heads: 4, kv_heads: 2, head_dim: 16 },
        GraphOpKind::AttentionContext { heads: 4, kv_heads: 4, head_dim: 16 },
        GraphOpKind::Softmax { dim: 3 },
        GraphOpKind::Softmax { dim: 9 },
        GraphOpKind::Gelu,
        GraphOpKind::Swiglu,
        GraphOpKind::Dropout,
        GraphOpKind::Add,
        GraphOpKind::BiasAdd,
        GraphOpKind::Rope { heads: 3 },
        GraphOpKind::KvAppend { cached: true },
        GraphOpKind::KvAppend { cached: false },
        GraphOpKind::Split { dim: 1 },
        GraphOpKind::Output,
        GraphOpKind::Value(ValueRole::Input),
        GraphOpKind::Value(ValueRole::Activation),
        GraphOpKind::Value(ValueRole::Parameter),
        GraphOpKind::ActivationGradient { of: "attn.q".into() },
        GraphOpKind::WeightGradient { of: "mlp.fc1".into() },
        GraphOpKind::OptimizerStep { kind: OptimizerKind::Adam },
        GraphOpKind::Other("model.unknown".into()),
    ];
    let dims = [0, 1, 2, 3, 7, 16, 64, DYNAMIC, 1 << 40];
    let dims = if as_read { &dims[..7] } else { &dims[..] };
    let mut g = graph.clone();
    for _ in 0..1 + next() % 3 {
        match next() % 4 {
            0 => {
                let v = (next() as usize) % g.values.len();
                let rank = (next() % 6) as usize;
                g.values[v].shape = (0..rank).map(|_| dims[(next() as usize) % dims.len()]).collect();
            }
            _ if as_read => {
                // Redirect an operand to a value defined before its op.
                let op = (next() as usize) % g.ops.len();
                let earlier = g.values.iter().filter(|v| v.producer < op).count();
                if !g.ops[op].operands.is_empty() && earlier > 0 {
                    let at = (next() as usize) % g.ops[op].operands.len();
                    let pick = (next() as usize) % earlier;
                    let value = g.values.iter().enumerate().filter(|(_, v)| v.producer < op).nth(pick).map(|(i, _)| i);
                    g.ops[op].operands[at] = value.unwrap_or(0);
                }
            }
            1 => {
                let op = (next() as usize) % g.ops.len();
                if !g.ops[op].operands.is_empty() && next().is_multiple_of(2) {
                    let at = (next() as usize) % g.ops[op].operands.len();
                    g.ops[op].operands.remove(at);
                } else {
                    let v = (next() as usize) % g.values.len();
                    g.ops[op].operands.push(v);
                }
            }
            2 => {
                let op = (next() as usize) % g.ops.len();
                g.ops[op].kind = kinds[(next() as usize) % kinds.len()].clone();
            }
            _ => {
                let op = (next() as usize) % g.ops.len();
                if !g.ops[op].operands.is_empty() {
                    let at = (next() as usize) % g.ops[op].operands.len();
                    g.ops[op].operands[at] = (next() as usize) % g.values.len();
                }
            }
        }
    }
    g
}

/// Edits per block in the never-panics tests (`BLUEPRINT_FUZZ_EDITS`
/// overrides, for a longer run by hand).
fn fuzz_edits() -> usize {
    std::env::var("BLUEPRINT_FUZZ_EDITS").ok().and_then(|v| v.parse().ok()).unwrap_or(1500)
}

/// Whatever a served block's ops and types say, its derivation returns a
/// result or an error naming the op, never a panic.
#[test]
fn the_served_derivation_never_panics_on_edited_blocks() {
    use crate::analysis::workload::{derive_served_pass, InferencePhase};
    let files = ["tiny-inf-mha.json", "tiny-inf-gqa.json", "tiny-inf-mqa.json", "tiny-inf-tp1.json"];
    let mut next = crate::runtime::dtype::xorshift(0x005e_7ed0_fa11);
    let mut outcomes = [0usize; 2];
    for file in files {
        let path = format!("{}/test/Inputs/specs/{file}", env!("CARGO_MANIFEST_DIR"));
        let spec = InferenceSpec::from_json(&std::fs::read_to_string(&path).expect("spec")).expect("valid spec");
        let graph = served_graph(&spec);
        for _ in 0..fuzz_edits() {
            let g = edit_graph(&graph, &mut next, false);
            for (pass, context) in [(InferencePhase::Prefill, 8), (InferencePhase::Decode, 12)] {
                match std::panic::catch_unwind(|| derive_served_pass(&g, &spec, pass, context)) {
                    Ok(r) => outcomes[usize::from(r.is_ok())] += 1,
                    Err(_) => panic!("{file} {pass:?}: the derivation panicked on {g:#?}"),
                }
            }
        }
    }
    // Most edits are refused; some (a shape nothing reads) still derive.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

/// The same for a training block, edited as its IR can be (the reader
/// refuses dynamic shapes, oversized tensors and operands defined after
/// their op; ODS fixes each op's operands): the derivation from ModelIR
/// refuses what it cannot shard or count, never panics.
#[test]
fn the_training_derivation_never_panics_on_edited_blocks() {
    use crate::analysis::workload::derive_from_graph;
    let mut next = crate::runtime::dtype::xorshift(0x0007_a1e5_0f0b);
    let mut outcomes = [0usize; 2];
    let specs: Vec<TrainingSpec> = strategy_sweep().into_iter().step_by(20).collect();
    for spec in &specs {
        let graph = decomposed_graph(spec);
        for _ in 0..fuzz_edits() / 4 {
            let g = edit_graph(&graph, &mut next, true);
            match std::panic::catch_unwind(|| derive_from_graph(&g, spec)) {
                Ok(r) => outcomes[usize::from(r.is_ok())] += 1,
                Err(_) => panic!("{:?}: the derivation panicked on {g:#?}", spec.mapping),
            }
        }
    }
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
