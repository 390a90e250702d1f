//! `cargo bench`: how long the algebra, the import, the whole-step
//! pipeline and the known formerly-quadratic cases take, and whether the
//! cost grows linearly with the IR.
//!
//! Reports wall-clock medians over repeated runs (not a timed test: nothing
//! here asserts a duration). `cargo bench -- quick` runs fewer repetitions.
//! Parse + verify + print against stock `mlir-opt` is measured by
//! `tools/bench-parse.py` (it needs a second process for peak memory).

use std::time::{Duration, Instant};

use blueprint::{
    analysis::{
        estimate::{estimate, EstimateOptions},
        pictures::timeline::{timeline_svg, TimelineLabels},
        schedule::Schedule,
        simulate::{simulate, ChunkDurations, Communication, StepInput},
        system::{NetworkBinding, SystemProfile},
        workload::{derive_training_block, TrainingSpec},
    },
    dialect::summary::{estimate_work, summarize},
    ir::{context::create_context, diagnostics::DiagnosticSink, parse::parse_module, read::collect_ops},
    tools::{estimate::estimate_tasks, pipeline::run_pipeline},
    transforms::transformer::import::import_training,
};
use melior::{
    ir::{Location, Module},
    Context,
};

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
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/seqsel-table5.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let json: serde_json::Value = serde_json::from_str(&text).expect("oracle JSON");
    let case =
        json["cases"].as_array().and_then(|cases| cases.iter().find(|c| c["name"] == name)).unwrap_or_else(|| panic!("no case {name}"));
    let spec = serde_json::json!({"model": case["model"], "workload": case["workload"], "mapping": case["mapping"]});
    TrainingSpec::from_json(&spec.to_string()).expect("valid spec")
}

/// GPT-3 175B at TP 8, PP 8, DP 16, interleaving 3, microbatch 1 and `m`
/// microbatches per step (the planning question).
fn gpt3_step(m: u64) -> TrainingSpec {
    let mut spec = oracle_spec("gpt3-175B-seqsel");
    spec.mapping.tp = 8;
    spec.mapping.pp = 8;
    spec.mapping.dp = 16;
    spec.mapping.pipeline_interleaving = 3;
    spec.workload.microbatch = 1;
    spec.workload.global_batch = m * 16;
    spec.validate().expect("valid GPT-3 step");
    spec
}

fn imported<'c>(context: &'c Context, spec: &TrainingSpec) -> Module<'c> {
    import_training(context, spec, Location::unknown(context)).expect("imports")
}

fn parsed<'c>(context: &'c Context, sink: &DiagnosticSink, text: &str) -> Module<'c> {
    parse_module(context, sink, text.as_bytes(), "bench").unwrap_or_else(|| panic!("bench input does not parse: {:?}", sink.take()))
}

const HEADER: &str = "dist.header schema \"blueprint.dist\" version \"1.0\" model \"sha256:1111111111111111111111111111111111111111111111111111111111111111\"\n";

/// One function with `n` synchronous all-reduces and independent local work.
fn collectives_function(n: usize) -> String {
    let mut text = format!("{HEADER}dist.mesh @tp(axes = [\"tp\"], shape = [4])\nfunc.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {{\n  %v0 = arith.addf %x, %x : tensor<8x16xf32>\n");
    for i in 0..n {
        text.push_str(&format!(
            "  %y{i} = dist.all_reduce %v{i} on @tp over [0, 1, 2, 3] reduction = sum phase = forward bytes = 512 {{id = \"ar{i}\", lineage = \"l\"}} : tensor<8x16xf32>\n  %w{i} = arith.mulf %x, %x : tensor<8x16xf32>\n  %v{} = arith.addf %y{i}, %w{i} : tensor<8x16xf32>\n",
            i + 1
        ));
    }
    text.push_str(&format!("  return %v{n} : tensor<8x16xf32>\n}}\n"));
    text
}

/// One collective over `n` explicit participants.
fn wide_collective(n: usize) -> String {
    let ranks: Vec<String> = (0..n).map(|r| r.to_string()).collect();
    format!(
        "{HEADER}dist.mesh @all(axes = [\"r\"], shape = [{n}])\nfunc.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {{\n  %y = dist.all_reduce %x on @all over [{}] reduction = sum phase = forward bytes = 32 {{id = \"ar\", lineage = \"l\"}} : tensor<8xf32>\n  return %y : tensor<8xf32>\n}}\n",
        ranks.join(", ")
    )
}

/// `n` small functions of three tasks each.
fn small_functions(n: usize) -> String {
    let mut text = format!("{HEADER}dist.mesh @tp(axes = [\"dp\", \"pp\", \"tp\"], shape = [1, 1, 2])\n");
    for i in 0..n {
        text.push_str(&format!(
            "func.func @f{i}() {{\n  %a = dist.compute \"f{i}.a\" on @tp phase = forward matrix matmul ops = 8 read = 4 write = 2 {{lineage = \"l\"}} : !dist.token\n  %b = dist.all_reduce %a on @tp axes [\"tp\"] reduction = sum phase = forward bytes = 64 {{id = \"f{i}.b\", lineage = \"l\"}} : !dist.token\n  %c = dist.compute \"f{i}.c\" on @tp phase = forward vector gelu(%b : !dist.token) ops = 8 read = 4 write = 2 {{lineage = \"l\"}} : !dist.token\n  return\n}}\n"
        ));
    }
    text
}

/// Per-op cost of `pipeline` on the module `text` (parse, pipeline).
fn per_op(context: &Context, sink: &DiagnosticSink, text: &str, pipeline: &str, runs: usize) -> (Duration, usize) {
    let mut ops = 0;
    let took = time_per_call(runs, 1, || {
        let mut module = parsed(context, sink, text);
        ops = collect_ops(module.as_operation()).len();
        if !pipeline.is_empty() {
            run_pipeline(context, &mut module, pipeline).unwrap_or_else(|e| panic!("{e}: {:?}", sink.take()));
        }
    });
    (took, ops)
}

fn report_scaling(
    what: &str,
    sizes: &[usize],
    make: impl Fn(usize) -> String,
    pipeline: &str,
    context: &Context,
    sink: &DiagnosticSink,
    runs: usize,
) {
    // Linear means a constant cost per unit of n (n collectives, n
    // participants of one collective, n functions), not per op.
    let mut costs = Vec::new();
    for &n in sizes {
        let (took, ops) = per_op(context, sink, &make(n), pipeline, runs);
        let each = took.as_secs_f64() * 1e6 / n as f64;
        costs.push(each);
        println!("{what:<34} n = {n:>7}: {:>10.2?} for {ops:>8} ops, {each:>7.3} µs per n", took);
    }
    println!("{what:<34} cost per n, largest / smallest: {:.2} (1.0 = linear)", costs[costs.len() - 1] / costs[0]);
}

/// Configurations per second of `blueprint-search`'s evaluation (the
/// library call, no I/O) on one thread and on every core, against
/// Calculon's rate on the same space where it was measured.
fn bench_search(quick: bool) {
    use blueprint::analysis::search::{search, Control, SearchOptions};
    use blueprint::analysis::{
        system::SystemProfile,
        workload::{Datatype, ModelSpec},
    };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon");
    let read = |path: String| std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    // Calculon's rate: the oracle's (2 cores) and the recorded case's (one
    // core, test/Inputs/calculon/search-gpt3-13B-4.json); for GPT-3 the
    // oracle's figure.
    // The last column: whether TP overlap is explored (the recorded
    // gpt3-13B search with it ran at 8.5 a second on a busy core).
    let spaces = [
        ("megatron-126M  8 procs batch  8 a100_nomem2", "megatron-126M", "a100_nomem2", 8, 8, vec![true], 24.3, false),
        ("gpt3-13B       4 procs batch  4 a100_nomem2", "gpt3-13B", "a100_nomem2", 4, 4, vec![true], 18.6, false),
        ("gpt3-13B       4 procs batch  4 a100_nomem2, TP overlap", "gpt3-13B", "a100_nomem2", 4, 4, vec![true], 8.5, true),
        ("gpt3-175B     64 procs batch 64 a100_80g", "gpt3-175B", "a100_80g", 64, 64, vec![true], 24.3, false),
        ("gpt3-175B     64 procs batch 64 a100_80g, TP overlap", "gpt3-175B", "a100_80g", 64, 64, vec![true], 24.3, true),
        ("gpt3-175B     64 procs batch 64 a100_80g, TP overlap, fused all", "gpt3-175B", "a100_80g", 64, 64, vec![false, true], 24.3, true),
    ];
    for (label, model, system, procs, max_batch, fused, calculon_rate, tp_overlap) in spaces {
        let model = ModelSpec::from_any_json(&read(format!("{root}/models/{model}.json")), Some(model)).expect("model");
        let system = SystemProfile::from_json(&read(format!("{root}/systems/{system}.json"))).expect("system");
        for threads in [Some(1), None] {
            let options = SearchOptions {
                procs,
                max_batch,
                datatype: Datatype::Float16,
                top: 10,
                dp_overlap: true,
                tp_overlap,
                fused_activation: fused.clone(),
                calculon_dp_overlap: false,
                samples: 0,
                threads,
                headroom: None,
                // The spaces as the README's figures state them (--no-offload).
                offload: false,
            };
            let runs = if quick { 1 } else { 5 };
            let mut results: Vec<(Duration, u64, usize)> = (0..runs)
                .map(|_| {
                    let r = search(&model, &system, &options, Control::default()).expect("search");
                    (r.wall, r.configurations, r.threads)
                })
                .collect();
            results.sort();
            let (wall, configurations, used) = results[results.len() / 2];
            let rate = configurations as f64 / wall.as_secs_f64();
            println!(
                "search   {label}, {used} thread(s): {configurations:>7} configurations in {wall:>9.2?}: {rate:>10.0} a second ({:.0}x Calculon's {calculon_rate})",
                rate / calculon_rate
            );
        }
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    // `step` runs only the whole-step rows (issue 11), for profiling them.
    let step_only = std::env::args().any(|a| a == "step");
    if !step_only {
        bench_search(quick);
    }
    if std::env::args().any(|a| a == "search") {
        return;
    }
    // `once`: one run of each row (for callgrind).
    let runs = if std::env::args().any(|a| a == "once") {
        1
    } else if quick {
        3
    } else {
        11
    };
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);

    // The algebra and the import.
    let spec = oracle_spec("gpt3-175B-seqsel");
    // `m=<n>` keeps one microbatch count: `step m=64 structured` is the
    // structured pipeline once, for callgrind.
    let only_m: Option<u64> = std::env::args().find_map(|a| a.strip_prefix("m=").and_then(|v| v.parse().ok()));
    let structured_only = std::env::args().any(|a| a == "structured");
    let unrolled_only = std::env::args().any(|a| a == "unrolled");
    let keep = |m: u64| only_m.is_none_or(|o| o == m);
    if !step_only {
        let derive = time_per_call(runs, 200, || {
            std::hint::black_box(derive_training_block(std::hint::black_box(&spec)).expect("derives"));
        });
        println!("algebra  derive one gpt3-175B block:             {derive:>10.2?}");
        let import = time_per_call(runs, 20, || {
            std::hint::black_box(imported(&context, &spec));
        });
        println!("import   spec -> ModelIR (builders):              {import:>10.2?}");
    }

    // Issue 11: the whole GPT-3 step, structured and unrolled, over m.
    let step = "builtin.module(distribute-transformer-training, plan-transformer-training, check-mesh-strategy, check-collective-groups, check-conservation, check-recompute)";
    for m in [8u64, 64, 512].into_iter().filter(|m| keep(*m) && !unrolled_only) {
        let spec = gpt3_step(m);
        let mut ops = 0;
        let took = time_per_call(runs, 1, || {
            let mut module = imported(&context, &spec);
            run_pipeline(&context, &mut module, step).unwrap_or_else(|e| panic!("{e}: {:?}", sink.take()));
            std::hint::black_box(summarize(module.as_operation()).expect("summary"));
            ops = collect_ops(module.as_operation()).len();
        });
        println!("step     gpt3-175B t8 p8 d16 v3 m = {m:>3} structured, import..summary: {took:>10.2?} ({ops} ops)");
    }
    let unrolled =
        "builtin.module(plan-transformer-training, check-mesh-strategy, check-collective-groups, check-conservation, check-recompute)";
    let mut unrolled_costs = Vec::new();
    // (m = 512 unrolled, 2.9M tasks and minutes, only when asked: `step unrolled m=512`.)
    let unrolled_ms: &[u64] = if only_m == Some(512) { &[512] } else { &[8, 64] };
    for m in unrolled_ms.iter().copied().filter(|m| keep(*m) && !structured_only) {
        let spec = gpt3_step(m);
        let mut base = imported(&context, &spec);
        run_pipeline(&context, &mut base, "builtin.module(distribute-transformer-training, dist-unroll-schedule)").expect("unrolls");
        let text = base.as_operation().to_string();
        let tasks = text.matches("dist.compute \"").count() + text.matches(" = dist.").count() - text.matches(" = dist.compute").count();
        let unroll_runs = if m > 64 {
            1
        } else if m > 8 {
            3.min(runs)
        } else {
            runs
        };
        // Parsing (with MLIR's verification) and the pipeline (Blueprint's
        // verifiers, the plan, MLIR's verification of it and the checks)
        // are timed apart: the target is the latter per task.
        let mut samples = Vec::new();
        for _ in 0..unroll_runs {
            let start = Instant::now();
            let mut module = parsed(&context, &sink, &text);
            let parse = start.elapsed();
            run_pipeline(&context, &mut module, unrolled).unwrap_or_else(|e| panic!("{e}: {:?}", sink.take()));
            samples.push((start.elapsed(), parse));
        }
        samples.sort();
        let (took, parse) = samples[samples.len() / 2];
        let per_task = |d: Duration| d.as_secs_f64() * 1e6 / tasks as f64;
        let each = per_task(took - parse);
        unrolled_costs.push(each);
        println!(
            "step     gpt3-175B m = {m:>3} unrolled: parse {parse:>10.2?} ({:.2} µs/task), verify+plan+checks {:>10.2?} for {tasks} tasks, {each:.2} µs/task",
            per_task(parse),
            took - parse
        );
    }
    if let [eight, sixty_four] = unrolled_costs[..] {
        println!("step     unrolled verify+plan+checks per task, m = 64 / m = 8: {:.2} (1.0 = linear)", sixty_four / eight);
    }
    if step_only {
        return;
    }

    // Issue 12: the estimate of a parsed plan, and the simulation.
    let system_path = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/systems/a100_80g.json");
    let system = SystemProfile::from_json(&std::fs::read_to_string(system_path).expect("system file")).expect("valid system");
    let binding = NetworkBinding { tp: 0, pp: 1, dp: 1 };
    let spec = gpt3_step(64);
    let mut module = imported(&context, &spec);
    run_pipeline(&context, &mut module, "builtin.module(distribute-transformer-training, plan-transformer-training)").expect("plans");
    let plan = parsed(&context, &sink, &module.as_operation().to_string());
    let options = EstimateOptions::default();
    let mut closed = None;
    let took = time_per_call(runs, 20, || {
        let work = estimate_work(plan.as_operation(), "plan");
        let tasks = estimate_tasks(&work);
        closed = Some(estimate(&tasks, &work.block_facts(), &spec, &system, &binding, &options).expect("estimates"));
    });
    println!("estimate gpt3-175B t8 p8 d16 v3 m = 64, parsed plan -> closed form:      {took:>10.2?}");
    let work = estimate_work(plan.as_operation(), "plan");
    let read = time_per_call(runs, 20, || {
        std::hint::black_box(estimate_work(plan.as_operation(), "plan"));
    });
    let (tasks, block) = (estimate_tasks(&work), work.block_facts());
    let priced = time_per_call(runs, 200, || {
        std::hint::black_box(estimate(&tasks, &block, &spec, &system, &binding, &options).expect("estimates"));
    });
    println!("estimate   of which reading the plan's tasks {read:>10.2?}, pricing and composing {priced:>10.2?}");
    let closed = closed.expect("ran");
    let schedule = Schedule::of(&spec);
    let slots: Vec<_> = (0..schedule.stages).map(|s| schedule.slots(s)).collect();
    let input = StepInput {
        stages: schedule.stages,
        chunks: schedule.chunks,
        microbatches: schedule.microbatches,
        slots: &slots,
        durations: ChunkDurations::of(&closed.block, spec.blocks_per_virtual_chunk()),
        per_chunk: None,
    };
    for mode in [Communication::Serialized, Communication::Overlapped] {
        let mut events = 0;
        let took = time_per_call(runs, 5, || {
            let sim = simulate(&input, mode).expect("simulates");
            events = sim.events.len();
            std::hint::black_box(sim);
        });
        println!("simulate gpt3-175B t8 p8 d16 v3 m = 64, {:<10} ({events} events):  {took:>10.2?}", mode.name());
    }
    let sim = simulate(&input, Communication::Overlapped).expect("simulates");
    let labels = TimelineLabels { title: "gpt3".into(), closed_form_seconds: closed.timing_seconds.total_time, chunks: schedule.chunks };
    let view = blueprint::analysis::pictures::timeline::TimelineView::default();
    let took = time_per_call(runs, 2, || {
        let _ = std::hint::black_box(timeline_svg(&sim, &labels, &view));
    });
    println!("picture  gpt3-175B m = 64 timeline SVG:                                  {took:>10.2?}");

    // Issue 9: the formerly quadratic cases.
    let sizes: &[usize] = if quick { &[3_000, 10_000] } else { &[3_000, 10_000, 30_000] };
    report_scaling(
        "dist-async + dist-sink-waits",
        sizes,
        collectives_function,
        "builtin.module(dist-async, dist-sink-waits)",
        &context,
        &sink,
        runs.min(5),
    );
    let sizes: &[usize] = if quick { &[30_000, 100_000] } else { &[30_000, 100_000, 300_000] };
    report_scaling(
        "parse one collective, participants",
        sizes,
        wide_collective,
        "builtin.module(check-collective-groups)",
        &context,
        &sink,
        runs.min(5),
    );
    report_scaling(
        "plan-transformer-training, functions",
        &[5_000, 10_000],
        small_functions,
        "builtin.module(plan-transformer-training)",
        &context,
        &sink,
        runs.min(5),
    );
    let _ = sink.take();
}
