//! `blueprint-translate`: between Blueprint IR and other formats.
//!
//! - `--import-transformer-training SPEC.json`: a training spec (model,
//!   workload, mapping) to ModelIR with the strategy bound on the module;
//! - `--transformer-block-facts SPEC.json`: the derived per-block facts as
//!   JSON, keyed by the Calculon oracle's field names;
//! - `--export-work-summary [FILE.mlir]`: per-phase and per-engine totals and
//!   the block facts of a `plan` (or `dist`) program as JSON.
//!
//! Bad input gets a diagnostic naming the problem and exit code 1, and
//! nothing is written.

use std::ffi::{OsStr, OsString};

use melior::ir::operation::{OperationLike, OperationPrintingFlags};

use crate::{
    analysis::workload::{
        derive_training_block,
        schema::{self, SpecKind},
        BlockFacts, InferenceFacts, InferenceSpec, TrainingSpec,
    },
    dialect::{summary, verify::verify_blueprint},
    ir::{context::create_context, diagnostics::DiagnosticSink},
    tools::{
        cli::{is_dash, print_info, report},
        opt::parse_module,
    },
    transforms::transformer::import::{import_inference, import_training},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    ImportTraining,
    BlockFacts,
    ImportInference,
    InferenceFacts,
    ExportWorkSummary,
    Estimate,
    /// `--parameters MODEL.json`.
    Parameters,
    /// `--spec-schema training|inference`.
    SpecSchema(SpecKind),
    /// `--spec-reference`.
    SpecReference,
    /// `--kernel-profile-summary PROFILE.json`.
    KernelProfileSummary,
}

const HELP: &str = "OVERVIEW: Blueprint translation tool\n\n\
USAGE: blueprint-translate <mode> [input] [-o <file>]\n\n\
MODES:\n\
\x20 --import-transformer-training SPEC.json   Training spec -> ModelIR (strategy bound on the module)\n\
\x20 --transformer-block-facts SPEC.json       Derived per-block facts as JSON (Calculon field names)\n\
\x20 --import-transformer-inference SPEC.json  Inference spec -> ModelIR (prefill, decode, KV cache)\n\
\x20 --transformer-inference-facts SPEC.json   Prefill and decode facts as JSON (Calculon and GenZ names)\n\
\x20 --export-work-summary [FILE.mlir | -]     Work summary of a plan or dist program as JSON\n\
\x20 --estimate [FILE.mlir | -]                Step time and memory of a plan on a system, closed form and simulated\n\
\x20                                           (a served block's plan: prefill, decode step and memory; --tp-net, --pp-net)\n\
\x20 --estimate --calculon M.json E.json S.json  The same for Calculon's model, execution and system files as they are\n\
\x20 --parameters MODEL.json                  Parameters of a model (Calculon model file, Hugging Face config or spec) as JSON, also as Calculon counts them\n\
\x20 --spec-schema training|inference         The JSON Schema of a spec (docs/spec/*.schema.json)\n\
\x20 --spec-reference                          The spec field tables of docs/SPEC.md, as Markdown\n\
\x20 --kernel-profile-summary PROFILE.json     Validate a blueprint-calibrate kernel profile; its provenance, rows per section and dispatch cost as JSON\n\n\
OPTIONS:\n\
\x20 -o <file>                                 Output file (default: stdout)\n\
\x20 --mlir-print-op-generic                   Print imported IR in the generic form\n\
\x20 -h, --help                                This text\n\
\x20 --version                                 Print the version and exit\n\n\
ESTIMATE OPTIONS:\n\
\x20 --system S.json                           A Calculon system file (required)\n\
\x20 --tp-net N --pp-net N --dp-net N          Network tier (index into the system's networks) per parallel axis\n\
\x20 --dp-overlap                              Overlap the DP gradient reduction with the backward pass\n\
\x20 --forward-only                            The step's forward pass alone (Calculon's inference step, training = false)\n\
\x20 --weight-offload --activations-offload --optimizer-offload  Offload to the second memory tier (Calculon's)\n\
\x20 --format blueprint|calculon               Blueprint's report (default) or every statistic of `calculon llm`, its JSON\n\
\x20 --tp-overlap none|ring|pipe               The TP overlap the plan is expected to tile (checked against its strategy)\n\
\x20 --allow-over-capacity                     Print the estimate even when a stage does not fit\n\
\x20 --timeline OUT.svg                        Draw the simulated step (compute, TP, PP and DP tracks per stage)\n\
\x20 --timeline-width PX                       Its width (default 1560, a 1600 px window; 600 to 20000)\n\
\x20 --timeline-range START:END                Draw only START to END ms of the step\n\
\x20 --timeline-bands N                        Wrap the drawn time into N bands (default: as the bars need)\n\
\x20 --trace OUT.json                          Write the simulated step as Chrome-trace JSON (Perfetto, chrome://tracing)\n\
\x20 --simulate overlapped|serialized          Which simulation the timeline and the trace show (default overlapped)\n\
\x20 --memory OUT.svg                          Draw per-stage memory (axis scaled to the data) against the capacity\n";

/// Runs the tool; returns the exit code.
#[must_use]
pub fn main_with_args(args: &[OsString]) -> i32 {
    match run(args) {
        Ok(Printed::Done) => 0,
        Ok(Printed::Info(text)) => print_info("blueprint-translate", &text),
        Err(message) => {
            report(&message);
            1
        }
    }
}

/// What a successful run leaves to print.
enum Printed {
    Done,
    /// Help text for stdout.
    Info(String),
}

fn run(args: &[OsString]) -> Result<Printed, String> {
    let mut mode = None;
    let mut input: Option<OsString> = None;
    let mut output: Option<OsString> = None;
    let mut generic = false;
    let mut estimate = crate::tools::estimate::EstimateArgs::default();
    let mut iter = args.iter();
    while let Some(raw) = iter.next() {
        // Options are ASCII: an argument that is not UTF-8 is the input path.
        let Some(arg) = raw.to_str() else {
            if input.replace(raw.clone()).is_some() {
                return Err("blueprint-translate: only one input is accepted".into());
            }
            continue;
        };
        if estimate.take(arg, &mut iter.by_ref().cloned())? {
            continue;
        }
        let set = |m: Mode, mode: &mut Option<Mode>| -> Result<(), String> {
            if mode.is_some() {
                return Err("blueprint-translate: give exactly one mode".into());
            }
            *mode = Some(m);
            Ok(())
        };
        match arg {
            "-h" | "--help" => return Ok(Printed::Info(HELP.to_string())),
            "--version" => return Ok(Printed::Info(crate::tools::cli::version_text("blueprint-translate"))),
            "--import-transformer-training" => set(Mode::ImportTraining, &mut mode)?,
            "--transformer-block-facts" => set(Mode::BlockFacts, &mut mode)?,
            "--import-transformer-inference" => set(Mode::ImportInference, &mut mode)?,
            "--transformer-inference-facts" => set(Mode::InferenceFacts, &mut mode)?,
            "--export-work-summary" => set(Mode::ExportWorkSummary, &mut mode)?,
            "--estimate" => set(Mode::Estimate, &mut mode)?,
            "--parameters" => set(Mode::Parameters, &mut mode)?,
            "--spec-schema" => {
                let kind = iter
                    .next()
                    .and_then(|k| k.to_str())
                    .and_then(SpecKind::from_name)
                    .ok_or("blueprint-translate: --spec-schema needs 'training' or 'inference'")?;
                set(Mode::SpecSchema(kind), &mut mode)?;
            }
            "--spec-reference" => set(Mode::SpecReference, &mut mode)?,
            "--kernel-profile-summary" => set(Mode::KernelProfileSummary, &mut mode)?,
            "--mlir-print-op-generic" => generic = true,
            "-o" => output = Some(iter.next().ok_or("blueprint-translate: -o needs a file name")?.clone()),
            other if other.starts_with('-') && other != "-" => {
                return Err(format!(
                    "blueprint-translate: unknown option '{other}'{}\nTry 'blueprint-translate --help'.",
                    crate::tools::cli::did_you_mean(other, HELP)
                ))
            }
            _ => {
                if input.replace(raw.clone()).is_some() {
                    return Err("blueprint-translate: only one input is accepted".into());
                }
            }
        }
    }
    let mode = mode.ok_or("blueprint-translate: no mode given\nTry 'blueprint-translate --help'.")?;
    if let Mode::SpecSchema(_) | Mode::SpecReference = mode {
        if input.is_some() {
            return Err("blueprint-translate: --spec-schema and --spec-reference take no input".into());
        }
        let text = match mode {
            Mode::SpecSchema(kind) => schema::schema_text(kind),
            _ => schema::reference_markdown(),
        };
        return write_output(output.as_deref(), &text).map(|()| Printed::Done);
    }
    if estimate.calculon.is_some() {
        if !matches!(mode, Mode::Estimate) {
            return Err("blueprint-translate: --calculon is an input of --estimate".into());
        }
        if input.is_some() {
            return Err("blueprint-translate: --estimate --calculon reads Calculon's three files, not a plan: drop the input".into());
        }
        let result = crate::tools::estimate::estimate_calculon(&estimate)?;
        return finish_estimate(result, output.as_deref());
    }
    let (name, bytes) = read_input(input.as_deref())?;
    let text = match mode {
        Mode::ImportTraining => {
            let spec = training_spec(&name, &bytes)?;
            print_imported(&name, generic, |context, at| import_training(context, &spec, at))?
        }
        Mode::BlockFacts => {
            let spec = training_spec(&name, &bytes)?;
            let derivation = derive_training_block(&spec).map_err(|e| format!("{name}: error: {e}"))?;
            let facts = BlockFacts::from_derivation(&derivation, &spec);
            serde_json::to_string_pretty(&facts).map_err(|e| e.to_string())? + "\n"
        }
        Mode::ImportInference => {
            let spec = inference_spec(&name, &bytes)?;
            print_imported(&name, generic, |context, at| import_inference(context, &spec, at))?
        }
        Mode::InferenceFacts => {
            let spec = inference_spec(&name, &bytes)?;
            let facts = InferenceFacts::from_spec(&spec).map_err(|e| format!("{name}: error: {e}"))?;
            serde_json::to_string_pretty(&facts).map_err(|e| e.to_string())? + "\n"
        }
        Mode::ExportWorkSummary => export_summary(&name, &bytes)?,
        Mode::Parameters => {
            let text = std::str::from_utf8(&bytes).map_err(|e| format!("{name}: error: not UTF-8 text: {e}"))?;
            let stem = std::path::Path::new(&name).file_stem().map(|s| s.to_string_lossy().trim_end_matches(".config").to_string());
            let model =
                crate::analysis::workload::ModelSpec::from_any_json(text, stem.as_deref()).map_err(|e| format!("{name}: error: {e}"))?;
            let counted = crate::analysis::workload::parameters::count(&model).map_err(|e| format!("{name}: error: {e}"))?;
            serde_json::to_string_pretty(&counted).map_err(|e| e.to_string())? + "\n"
        }
        Mode::KernelProfileSummary => kernel_profile_summary(&name, &bytes)?,
        Mode::SpecSchema(_) | Mode::SpecReference => unreachable!("handled before reading input"),
        Mode::Estimate => return finish_estimate(estimate_plan(&name, &bytes, &estimate)?, output.as_deref()),
    };
    write_output(output.as_deref(), &text).map(|()| Printed::Done)
}

/// Writes an estimate: its refusal as the error, else the pictures and
/// then the report.
fn finish_estimate(result: crate::tools::estimate::EstimateOutput, output: Option<&OsStr>) -> Result<Printed, String> {
    if let Some(message) = result.refusal {
        return Err(message);
    }
    // Every picture's folder first, so that a bad path leaves none
    // of them written; then the pictures, before the report.
    for (path, _) in &result.pictures {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(format!(
                    "blueprint-translate: cannot write '{}': no directory '{}'",
                    path.to_string_lossy(),
                    dir.to_string_lossy()
                ));
            }
        }
    }
    for (path, svg) in &result.pictures {
        crate::tools::cli::write_file_atomically(path, svg.as_bytes())
            .map_err(|e| format!("blueprint-translate: cannot write '{}': {e}", path.to_string_lossy()))?;
    }
    write_output(output, &result.json).map(|()| Printed::Done)
}

fn read_input(path: Option<&OsStr>) -> Result<(String, Vec<u8>), String> {
    crate::tools::cli::read_input(path).map_err(|e| format!("blueprint-translate: {e}"))
}

fn write_output(path: Option<&OsStr>, text: &str) -> Result<(), String> {
    match path.filter(|p| !is_dash(p)) {
        None => crate::tools::cli::print(text.as_bytes()).map_err(|e| format!("blueprint-translate: cannot write <stdout>: {e}")),
        Some(path) => crate::tools::cli::write_file_atomically(std::path::Path::new(path), text.as_bytes())
            .map_err(|e| format!("blueprint-translate: cannot write '{}': {e}", path.to_string_lossy())),
    }
}

fn inference_spec(name: &str, bytes: &[u8]) -> Result<InferenceSpec, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("{name}: error: not UTF-8 text: {e}"))?;
    InferenceSpec::from_json(text).map_err(|e| format!("{name}: error: {e}\n{name}: note: {}", schema::REFERENCE_NOTE))
}

fn training_spec(name: &str, bytes: &[u8]) -> Result<TrainingSpec, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("{name}: error: not UTF-8 text: {e}"))?;
    TrainingSpec::from_json(text).map_err(|e| format!("{name}: error: {e}\n{name}: note: {}", schema::REFERENCE_NOTE))
}

/// Builds the import (located at the spec file), verifies it with MLIR's
/// and Blueprint's verifiers, and prints it.
fn print_imported(
    name: &str,
    generic: bool,
    import: impl for<'c> FnOnce(
        &'c melior::Context,
        melior::ir::Location<'c>,
    ) -> Result<melior::ir::Module<'c>, crate::dialect::builder::BuildError>,
) -> Result<String, String> {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let location = melior::ir::Location::new(&context, name, 1, 1);
    let module = import(&context, location).map_err(|e| format!("{name}: {e}"))?;
    let ok = module.as_operation().verify() && verify_blueprint(module.as_operation());
    if !ok {
        return Err(sink.take().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
    }
    let mut flags = OperationPrintingFlags::new();
    if generic {
        flags = flags.print_generic_operation_form();
    }
    Ok(String::from_utf8_lossy(&crate::ir::read::op_bytes(module.as_operation(), &flags)).into_owned() + "\n")
}

/// The estimate of the plan (or dist program) in `bytes`, bound to a
/// training strategy.
fn estimate_plan(
    name: &str,
    bytes: &[u8],
    args: &crate::tools::estimate::EstimateArgs,
) -> Result<crate::tools::estimate::EstimateOutput, String> {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let module = parse_module(&context, &sink, bytes, name);
    let ok = module.as_ref().is_some_and(|m| m.as_operation().verify() && verify_blueprint(m.as_operation()));
    let Some(module) = module.filter(|_| ok) else {
        return Err(sink.take().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
    };
    crate::tools::estimate::estimate_module(module.as_operation(), name, args)
}

/// A validated kernel profile's provenance, rows per section and dispatch
/// cost.
fn kernel_profile_summary(name: &str, bytes: &[u8]) -> Result<String, String> {
    use crate::analysis::kernel_profile::KernelProfile;
    let text = std::str::from_utf8(bytes).map_err(|e| format!("{name}: error: not UTF-8 text: {e}"))?;
    let profile = KernelProfile::from_json(text).map_err(|e| format!("{name}: error: {e}"))?;
    let p = profile.provenance();
    let c = profile.counts();
    let d = profile.dispatch();
    let summary = serde_json::json!({
        "format": crate::analysis::kernel_profile::FORMAT,
        "device": p.device,
        "device_type": p.device_type,
        "backend": p.backend,
        "dtype": p.dtype.name(),
        "date": p.date,
        "incomplete": p.incomplete,
        "rows": {"gemm": c.gemm, "bmm": c.bmm, "attention": c.attention, "vector": c.vector, "adam": c.adam, "collectives": c.collectives},
        "collective_ranks": profile.collective_ranks(),
        "dispatch": {"device_s": d.device_s, "host_s": d.host_s},
    });
    serde_json::to_string_pretty(&summary).map(|t| t + "\n").map_err(|e| e.to_string())
}

fn export_summary(name: &str, bytes: &[u8]) -> Result<String, String> {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let module = parse_module(&context, &sink, bytes, name);
    let ok = module.as_ref().is_some_and(|m| m.as_operation().verify() && verify_blueprint(m.as_operation()));
    let render = |sink: &DiagnosticSink| sink.take().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    let Some(module) = module.filter(|_| ok) else {
        return Err(render(&sink));
    };
    let summary = summary::summarize(module.as_operation()).map_err(|e| format!("{name}: error: {e}"))?;
    serde_json::to_string_pretty(&summary).map(|t| t + "\n").map_err(|e| e.to_string())
}
