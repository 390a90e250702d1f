//! `cargo bench --bench train_step`: one training step of a GPT block at
//! hidden 256, seq 128, batch 4, fp32 (tools/bench-inputs/gpt-h256.json),
//! as `blueprint-run --train-step` runs it (convert-model-to-linalg, the
//! standard lowering with the matrix-product kernel, the JIT) on one
//! thread, against the same step in JAX on one thread
//! (tools/bench-train-step.py, in the venv tools/setup-python.sh makes).
//!
//! Reports medians (not a timed test: nothing asserts a duration), the
//! ratio, and the time to compile the step. `-- --spec FILE` and `-- --runs
//! N` choose another spec and repetition count.

use std::time::{Duration, Instant};

use blueprint::{
    analysis::workload::TrainingSpec,
    ir::{context::create_context, diagnostics::DiagnosticSink},
    tools::train::{prepare, CompiledStep},
    transforms::transformer::import::import_training,
};
use melior::ir::Location;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Deterministic data in [-0.5, 0.5), scaled as the reference scales it.
fn data(n: usize, seed: &mut u64, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            ((*seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let root = env!("CARGO_MANIFEST_DIR");
    let spec_path = value("--spec").unwrap_or_else(|| format!("{root}/tools/bench-inputs/gpt-h256.json"));
    let runs: usize = value("--runs").and_then(|r| r.parse().ok()).unwrap_or(20);
    let text = std::fs::read_to_string(&spec_path).unwrap_or_else(|e| panic!("cannot read {spec_path}: {e}"));
    let spec = TrainingSpec::from_json(&text).unwrap_or_else(|e| panic!("{spec_path}: {e}"));

    let context = create_context();
    let _sink = DiagnosticSink::attach(&context);
    let compile_start = Instant::now();
    let mut module = import_training(&context, &spec, Location::unknown(&context)).expect("the spec imports");
    let signature = prepare(&context, &mut module).expect("the step lowers to linalg");
    let step = CompiledStep::compile(&context, module, signature).expect("the step compiles");
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let arguments: Vec<Vec<f32>> = step
        .signature
        .inputs
        .iter()
        .map(|t| {
            let fan_in = t.shape.first().copied().unwrap_or(1).max(1) as f32;
            let scale = if t.name.ends_with(".weight") { 2.0 / fan_in.sqrt() } else { 1.0 };
            data(t.len(), &mut seed, scale)
        })
        .collect();
    step.run(arguments.clone()).expect("the step runs");
    let compile = compile_start.elapsed();
    let samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let outputs = step.run(arguments.clone()).expect("the step runs");
            std::hint::black_box(outputs);
            start.elapsed()
        })
        .collect();
    let blueprint = median(samples);
    println!("train step of {spec_path}");
    println!(
        "  blueprint  {:>9.2} ms per step (median of {runs}; compile and first run {:.2} s)",
        blueprint.as_secs_f64() * 1e3,
        compile.as_secs_f64()
    );

    let python = std::env::var("BLUEPRINT_REFERENCE_PYTHON").unwrap_or_else(|_| format!("{root}/target/venv/bin/python"));
    let reference = std::process::Command::new(&python)
        .args([format!("{root}/tools/bench-train-step.py"), spec_path.clone(), "--runs".into(), runs.to_string()])
        .output();
    match reference {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let seconds: Option<f64> = text.split_whitespace().nth(1).and_then(|s| s.parse().ok());
            if let Some(seconds) = seconds {
                println!("  JAX        {:>9.2} ms per step (jax.jit, one thread)", seconds * 1e3);
                println!("  ratio      {:>9.2}x (blueprint / JAX)", blueprint.as_secs_f64() / seconds);
            }
        }
        Ok(out) => println!("  JAX: the reference failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => println!("  JAX: cannot run {python} ({e}); bash tools/setup-python.sh makes the venv"),
    }
}
