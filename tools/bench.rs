//! `cargo bench`: how long the algebra, the import and the pipeline take,
//! and whether the pipeline's cost grows linearly with the IR.
//!
//! Reports wall-clock medians over repeated runs (not a timed test: nothing
//! here asserts a duration).

use std::time::{Duration, Instant};

use blueprint::{
    context::create_context,
    diagnostics::DiagnosticSink,
    execution::run_pipeline,
    ir::collect_ops,
    opt::parse_module,
    transformer::import::import_training,
    verify::verify_blueprint,
    workload::{derive_training_block, TrainingSpec},
};
use melior::ir::operation::OperationLike;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Median time of `f` over `runs` runs of `inner` calls each, per call.
fn time_per_call(runs: usize, inner: usize, mut f: impl FnMut()) -> Duration {
    let samples = (0..runs)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..inner {
                f();
            }
            start.elapsed() / inner as u32
        })
        .collect();
    median(samples)
}

fn oracle_spec(name: &str) -> TrainingSpec {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/oracles/calculon/seqsel-table5.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let json: serde_json::Value = serde_json::from_str(&text).expect("oracle JSON");
    let case = json["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no case {name}"));
    let spec = serde_json::json!({"model": case["model"], "workload": case["workload"], "mapping": case["mapping"]});
    TrainingSpec::from_json(&spec.to_string()).expect("valid spec")
}

/// The dist program of `spec` with its block function repeated `copies`
/// times (ids renamed), as text: a module `copies` times larger.
fn replicated_dist_program(spec: &TrainingSpec, copies: usize) -> String {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let mut module = parse_module(&context, &sink, import_training(spec).as_bytes(), "spec").expect("parses");
    run_pipeline(&context, &mut module, "builtin.module(distribute-transformer-training)").expect("distributes");
    let text = module.as_operation().to_string();
    let start = text.find("  func.func @decoder_block_dist").expect("dist function");
    let end = text[start..].find("\n  }\n").map(|i| start + i + 5).expect("function end");
    let function = &text[start..end];
    let model_start = text.find("  func.func @decoder_block()").expect("model function");
    let model_end = text[model_start..].find("\n  }\n").map(|i| model_start + i + 5).expect("end");
    let mut out = String::new();
    out.push_str(&text[..model_start]);
    out.push_str(&text[model_end..start]);
    for copy in 0..copies {
        out.push_str(
            &function
                .replace("@decoder_block_dist", &format!("@decoder_block_dist_{copy}"))
                .replace("id = \"", &format!("id = \"c{copy}.")),
        );
    }
    out.push_str(&text[end..]);
    // The ModelIR is gone, so the model-to-dist part of conservation does not
    // apply; the strategy binding stays for the other checks.
    out
}

fn main() {
    let spec = oracle_spec("gpt3-175B-seqsel");
    let json = serde_json::to_string(&spec).expect("serializes");

    let derive = time_per_call(21, 2000, || {
        std::hint::black_box(derive_training_block(std::hint::black_box(&spec)).expect("derives"));
    });
    let import_text = time_per_call(21, 2000, || {
        let parsed = TrainingSpec::from_json(std::hint::black_box(&json)).expect("valid");
        std::hint::black_box(import_training(&parsed));
    });
    println!("algebra  derive one gpt3-175B block:            {:>10.2?}", derive);
    println!("import   spec JSON -> ModelIR text:              {:>10.2?}", import_text);

    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let text = import_training(&spec);
    let import_mlir = time_per_call(11, 20, || {
        let module = parse_module(&context, &sink, text.as_bytes(), "spec").expect("parses");
        assert!(verify_blueprint(module.as_operation()));
    });
    println!("import   ... parsed and verified in MLIR:        {:>10.2?}", import_mlir);

    let pipeline = "builtin.module(distribute-transformer-training, plan-transformer-training, check-mesh-strategy, check-collective-groups, check-conservation, check-recompute)";
    for case in ["gpt3-175B-full", "gpt3-175B-seqsel"] {
        let spec = oracle_spec(case);
        let text = import_training(&spec);
        let mut ops = 0;
        let took = time_per_call(11, 5, || {
            let mut module = parse_module(&context, &sink, text.as_bytes(), "spec").expect("parses");
            run_pipeline(&context, &mut module, pipeline).expect("plans");
            ops = collect_ops(module.as_operation()).len();
        });
        println!(
            "pipeline {case:<18} distribute+plan+checks: {:>10.2?} for {ops} ops, {:>8.2?}/op",
            took,
            took / ops as u32
        );
    }

    // Linearity: plan + checks + verification on a dist program 1x, 10x and
    // 100x the size of one block.
    let plan_pipeline = "builtin.module(plan-transformer-training, check-collective-groups, check-conservation, blueprint-verify)";
    let mut per_op = Vec::new();
    for copies in [1usize, 10, 100] {
        let text = replicated_dist_program(&spec, copies);
        let mut ops = 0;
        let runs = if copies == 100 { 5 } else { 11 };
        let took = time_per_call(runs, 1, || {
            let mut module = parse_module(&context, &sink, text.as_bytes(), "synthetic").expect("parses");
            run_pipeline(&context, &mut module, plan_pipeline).expect("plans");
            ops = collect_ops(module.as_operation()).len();
        });
        let each = took / ops as u32;
        per_op.push(each);
        println!("scaling  {copies:>3}x block: parse+plan+checks+verify {:>10.2?} for {ops:>6} ops, {:>8.2?}/op", took, each);
    }
    let growth = per_op[2].as_secs_f64() / per_op[0].as_secs_f64();
    println!("scaling  cost per op at 100x / at 1x: {growth:.2} (1.0 = linear)");
    let _ = sink.take();
}
