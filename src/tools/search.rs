//! `blueprint-search`: the fastest way to train a model on N processors of
//! a system, and whether it fits (see [`crate::analysis::search`]). The search is
//! plain Rust; only `--emit-plan` builds MLIR, once, for the best
//! configuration, through the import → distribute → plan pipeline.
//!
//! It prints a ranked table on stdout (`--format csv` or `json` for
//! machines), also when `-o` writes the JSON report to a file. `--all`
//! also writes every configuration, one line each in the canonical order,
//! while the search runs ([`crate::analysis::search::listing`]);
//! `--validate DIR` compares the estimate with the Megatron-LM
//! measurements Calculon validates against ([`crate::tools::validate`]).
//!
//! Bad input gets a diagnostic naming the file or option and exit code 1,
//! and nothing is written; outputs are written atomically, after the search
//! and the plan have both succeeded (the `--all` listing, streamed while
//! the search runs, is renamed into place as soon as the search has). When
//! no configuration fits, the reasons go to stderr (exit code 1) and `-o`
//! and `--all` are left as they were. Ctrl-C stops the search and prints the
//! best configurations found so far (exit code 130); a second Ctrl-C exits
//! at once.

use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use melior::ir::operation::{OperationLike, OperationPrintingFlags};

use crate::{
    analysis::{
        search::{self, listing::ListingFormat, output, table, Control, Headroom, Listing, SearchError, SearchOptions},
        system::SystemProfile,
        workload::{Datatype, ModelSpec, TrainingSpec},
    },
    dialect::verify::verify_blueprint,
    ir::{context::create_context, diagnostics::DiagnosticSink},
    tools::cli::{is_dash, print_info, report},
    transforms::transformer::import::import_training,
};

const HELP: &str = "OVERVIEW: the fastest way to train a model on N processors of a system, and whether it fits\n\n\
USAGE: blueprint-search MODEL.json --system S.json --procs N --max-batch B [options]\n\
\x20      blueprint-search --validate DIR [--format table|json]\n\n\
MODEL.json is Blueprint's model JSON, a training spec (its model is used), a Calculon model file as it is,\n\
or a Hugging Face config.json of a Llama, Mistral or Qwen2 model (RMS norms, GQA, RoPE, SwiGLU).\n\
S.json is a Calculon system file as it is.\n\n\
OPTIONS:\n\
\x20 --datatype T            float8, float16 (default), bfloat16 or float32\n\
\x20 --seq-len N             Sequence length (default: the model's; a Hugging Face config's max_position_embeddings)\n\
\x20 --top K                 Configurations to report (default 10; Calculon's -t)\n\
\x20 --no-dp-overlap         Do not explore DP overlap\n\
\x20 --no-tp-overlap         Do not explore TP overlap (ring / pipe tiling of the TP collectives)\n\
\x20 --no-offload            Do not explore offload to the second memory tier (explored when the system has one)\n\
\x20 --fused-activation F    true (default, as Calculon), false or all\n\
\x20 --calculon-dp-overlap   Rank by Calculon's DP-overlap figure (with its recompute defect)\n\
\x20 --threads T             Worker threads (default: every core; Calculon's -c)\n\
\x20 --sample N              Also report N configurations spread evenly over the space (in the JSON)\n\
\x20 --headroom H            Memory per processor kept free of the first tier: GiB (4, 4GiB) or a share (10%)\n\
\x20 --format F              What stdout gets: table (default; ranked, the fields that differ, MFU, GiB), csv or json;\n\
\x20                         with --all -, csv (default) or jsonl\n\
\x20 -o <file>               Also write the JSON report to <file> (- for stdout, instead of the table)\n\
\x20 --all <file>            Also write every configuration, one line each in the canonical order, as the search\n\
\x20                         evaluates them (Calculon's llm-all-executions, pruned ones too, with the reason):\n\
\x20                         CSV with a header, or JSON lines when <file> ends in .jsonl (- for stdout, instead of\n\
\x20                         the table); the file appears complete or not at all\n\
\x20 --none-ok               No configuration fitting is not an error (Calculon's -n): the reasons on stderr, exit 0,\n\
\x20                         the outputs written with no ranked rows\n\
\x20 --emit-plan <file>      Write the best configuration's whole-step plan as MLIR\n\
\x20 --validate DIR          Instead of searching: the estimate against the Megatron-LM measurements of Korthikanti\n\
\x20                         et al. 2022 (Figure 1 memory, Figure 7 activation ratios, Table 5 step times), the\n\
\x20                         error of each configuration in Calculon's llm-validation tables (--format json: every\n\
\x20                         figure at full precision); DIR as Calculon's repository (models/, systems/,\n\
\x20                         validation/seqsel/): a Calculon checkout or Blueprint's test/oracles/calculon\n\
\x20 -h, --help              This text\n\
\x20 --version               Print the version and exit\n\n\
Calculon's -m (--mbs-break) is left out on purpose: it skips larger microbatches after one that fits nowhere,\n\
which can miss configurations, and this search costs about a microsecond a configuration.\n";

/// The pipeline `--emit-plan` runs after the import.
pub const PLAN_PIPELINE: &str = "builtin.module(distribute-transformer-training, plan-transformer-training)";

static INTERRUPT: AtomicBool = AtomicBool::new(false);

#[derive(Debug, Default)]
struct Args {
    /// Paths as given (not necessarily UTF-8).
    model: Option<OsString>,
    system: Option<OsString>,
    procs: Option<u64>,
    max_batch: Option<u64>,
    seq_len: Option<u64>,
    datatype: Option<Datatype>,
    top: Option<usize>,
    no_dp_overlap: bool,
    no_tp_overlap: bool,
    no_offload: bool,
    fused: Option<Vec<bool>>,
    calculon_dp_overlap: bool,
    threads: Option<usize>,
    samples: u64,
    output: Option<OsString>,
    emit_plan: Option<OsString>,
    format: Option<Format>,
    headroom: Option<Headroom>,
    all: Option<OsString>,
    none_ok: bool,
    validate: Option<OsString>,
    help: bool,
    version: bool,
}

/// What stdout gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Table,
    Csv,
    Json,
    /// JSON lines: `--all -` only.
    Jsonl,
}

/// `4`, `4GiB`, `4 GiB` or `10%`.
fn parse_headroom(text: &str) -> Result<Headroom, String> {
    let bad = || {
        format!("blueprint-search: --headroom takes GiB per processor (4, 4GiB) or a share of the first memory tier (10%), got '{text}'")
    };
    let t = text.trim();
    if let Some(percent) = t.strip_suffix('%') {
        let p: f64 = percent.trim().parse().map_err(|_| bad())?;
        if !(0.0..100.0).contains(&p) {
            return Err(format!("blueprint-search: --headroom {text} is not a share from 0% to below 100%"));
        }
        return Ok(Headroom::Fraction(p / 100.0));
    }
    let number = t.strip_suffix("GiB").unwrap_or(t).trim();
    let gib: f64 = number.parse().map_err(|_| bad())?;
    if !gib.is_finite() || gib < 0.0 {
        return Err(bad());
    }
    Ok(Headroom::Gib(gib))
}

fn number<T: std::str::FromStr>(name: &str, text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("blueprint-search: {name} takes a positive integer, got '{text}'"))
}

fn parse_args(args: &[OsString]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut iter = args.iter();
    while let Some(raw) = iter.next() {
        // Options are ASCII: an argument that is not UTF-8 is the model's path.
        let Some(arg) = raw.to_str() else {
            if a.model.replace(raw.clone()).is_some() {
                return Err("blueprint-search: only one MODEL.json is accepted".into());
            }
            continue;
        };
        // The next argument: a path kept as given, or text.
        let mut path = |name: &str| iter.next().cloned().ok_or_else(|| format!("blueprint-search: {name} needs a value"));
        let text = |name: &str, value: OsString| {
            value.into_string().map_err(|v| format!("blueprint-search: {name} '{}' is not UTF-8", v.to_string_lossy()))
        };
        let mut value = |name: &str| path(name).and_then(|v| text(name, v));
        match arg {
            "-h" | "--help" => a.help = true,
            "--version" => a.version = true,
            "--procs" => a.procs = Some(number("--procs", &value("--procs")?)?),
            "--max-batch" => a.max_batch = Some(number("--max-batch", &value("--max-batch")?)?),
            "--seq-len" => a.seq_len = Some(number("--seq-len", &value("--seq-len")?)?),
            "--top" => a.top = Some(number("--top", &value("--top")?)?),
            "--threads" => {
                let text = value("--threads")?;
                a.threads = Some(number("--threads", &text)?).filter(|t| *t > 0);
                if a.threads.is_none() {
                    return Err(format!("blueprint-search: --threads takes a positive integer, got '{text}'"));
                }
            }
            "--sample" => a.samples = number("--sample", &value("--sample")?)?,
            "--datatype" => {
                let text = value("--datatype")?;
                a.datatype = Some(
                    serde_json::from_value(serde_json::Value::String(text.clone()))
                        .map_err(|_| format!("blueprint-search: --datatype takes float8, float16, bfloat16 or float32, got '{text}'"))?,
                );
            }
            "--fused-activation" => {
                a.fused = Some(match value("--fused-activation")?.as_str() {
                    "true" => vec![true],
                    "false" => vec![false],
                    "all" => vec![false, true],
                    other => return Err(format!("blueprint-search: --fused-activation takes true, false or all, got '{other}'")),
                });
            }
            "--format" => {
                a.format = Some(match value("--format")?.as_str() {
                    "table" => Format::Table,
                    "csv" => Format::Csv,
                    "json" => Format::Json,
                    "jsonl" => Format::Jsonl,
                    other => return Err(format!("blueprint-search: --format takes table, csv, json or jsonl, got '{other}'")),
                });
            }
            "--headroom" => a.headroom = Some(parse_headroom(&value("--headroom")?)?),
            "--no-dp-overlap" => a.no_dp_overlap = true,
            "--no-tp-overlap" => a.no_tp_overlap = true,
            "--no-offload" => a.no_offload = true,
            "--calculon-dp-overlap" => a.calculon_dp_overlap = true,
            "--none-ok" => a.none_ok = true,
            "--all" => a.all = Some(path("--all")?),
            "--validate" => a.validate = Some(path("--validate")?),
            "--system" => a.system = Some(path("--system")?),
            "-o" => a.output = Some(path("-o")?),
            "--emit-plan" => a.emit_plan = Some(path("--emit-plan")?),
            other if other.starts_with('-') && other != "-" => {
                return Err(format!(
                    "blueprint-search: unknown option '{other}'{}\nTry 'blueprint-search --help'.",
                    crate::tools::cli::did_you_mean(other, HELP)
                ))
            }
            _ => {
                if a.model.replace(raw.clone()).is_some() {
                    return Err("blueprint-search: only one MODEL.json is accepted".into());
                }
            }
        }
    }
    Ok(a)
}

fn read(path: &OsStr) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("blueprint-search: cannot read '{}': {e}", path.to_string_lossy()))
}

/// The best configuration's whole-step plan as MLIR text, with a header
/// comment saying how to estimate it.
///
/// # Errors
/// The import or a pass failed (the diagnostics).
pub fn emit_plan(spec: &TrainingSpec, header: &str) -> Result<String, String> {
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let render = |sink: &DiagnosticSink| sink.take().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    let location = melior::ir::Location::new(&context, "blueprint-search", 1, 1);
    let mut module = import_training(&context, spec, location).map_err(|e| format!("blueprint-search: --emit-plan: {e}"))?;
    if !(module.as_operation().verify() && verify_blueprint(module.as_operation())) {
        return Err(format!("blueprint-search: --emit-plan: the import does not verify\n{}", render(&sink)));
    }
    crate::tools::pipeline::run_pipeline(&context, &mut module, PLAN_PIPELINE)
        .map_err(|e| format!("blueprint-search: --emit-plan: {e}\n{}", render(&sink)))?;
    let text = String::from_utf8_lossy(&crate::ir::read::op_bytes(module.as_operation(), &OperationPrintingFlags::new())).into_owned();
    Ok(format!("{header}{text}\n"))
}

fn write(path: Option<&OsStr>, text: &str) -> Result<(), String> {
    match path.filter(|p| !is_dash(p)) {
        None => crate::tools::cli::print(text.as_bytes()).map_err(|e| format!("blueprint-search: cannot write <stdout>: {e}")),
        Some(path) => crate::tools::cli::write_file_atomically(Path::new(path), text.as_bytes())
            .map_err(|e| format!("blueprint-search: cannot write '{}': {e}", path.to_string_lossy())),
    }
}

/// `--validate DIR`.
fn validate(a: &Args, dir: &OsStr) -> Result<i32, String> {
    let searching = [
        (a.model.is_some(), "MODEL.json"),
        (a.system.is_some(), "--system"),
        (a.procs.is_some(), "--procs"),
        (a.max_batch.is_some(), "--max-batch"),
        (a.all.is_some(), "--all"),
        (a.output.is_some(), "-o"),
        (a.emit_plan.is_some(), "--emit-plan"),
    ];
    if let Some((_, name)) = searching.iter().find(|(given, _)| *given) {
        return Err(format!("blueprint-search: --validate runs Calculon's validation configurations, not a search: drop {name}"));
    }
    let rows = crate::tools::validate::validate(Path::new(dir)).map_err(|e| format!("blueprint-search: --validate: {e}"))?;
    let text = match a.format {
        None | Some(Format::Table) => crate::tools::validate::tables(&rows),
        Some(Format::Json) => crate::tools::validate::json(&rows)?,
        Some(_) => return Err("blueprint-search: --validate prints a table (default) or json: --format takes table or json with it".into()),
    };
    write(None, &text)?;
    Ok(0)
}

/// Runs the tool; returns the exit code.
#[must_use]
pub fn main_with_args(args: &[OsString]) -> i32 {
    match run(args) {
        Ok(code) => code,
        Err(message) => {
            report(&message);
            1
        }
    }
}

fn run(args: &[OsString]) -> Result<i32, String> {
    let a = parse_args(args)?;
    if a.help {
        return Ok(print_info("blueprint-search", HELP));
    }
    if a.version {
        return Ok(print_info("blueprint-search", &crate::tools::cli::version_text("blueprint-search")));
    }
    if let Some(dir) = a.validate.as_deref() {
        return validate(&a, dir);
    }
    let model_file = a.model.as_deref().ok_or("blueprint-search: no MODEL.json given\nTry 'blueprint-search --help'.")?;
    let system_file = a.system.as_deref().ok_or("blueprint-search: --system S.json is required")?;
    let (model_shown, system_shown) = (model_file.to_string_lossy(), system_file.to_string_lossy());
    let (model_path, system_path): (&str, &str) = (&model_shown, &system_shown);
    let procs = a.procs.ok_or("blueprint-search: --procs N is required")?;
    let max_batch = a.max_batch.ok_or("blueprint-search: --max-batch B is required")?;
    let json_on_stdout = a.output.as_deref().is_some_and(is_dash);
    if json_on_stdout && a.format.is_some_and(|f| f != Format::Json) {
        return Err("blueprint-search: -o - writes the JSON report to stdout, where --format would print too: give one of them".into());
    }
    let all_on_stdout = a.all.as_deref().is_some_and(is_dash);
    if all_on_stdout && json_on_stdout {
        return Err("blueprint-search: --all - and -o - both write to stdout: give one of them a file".into());
    }
    if all_on_stdout && a.format.is_some_and(|f| !matches!(f, Format::Csv | Format::Jsonl)) {
        return Err(
            "blueprint-search: --all - writes the listing to stdout as CSV or JSON lines: --format takes csv or jsonl with it".into()
        );
    }
    if !all_on_stdout && a.format == Some(Format::Jsonl) {
        return Err("blueprint-search: --format jsonl is the listing's format on stdout: give it with --all -".into());
    }
    let listing_format = match a.all.as_deref() {
        None => None,
        Some(_) if all_on_stdout => Some(if a.format == Some(Format::Jsonl) { ListingFormat::JsonLines } else { ListingFormat::Csv }),
        Some(path) => {
            let name = path.to_string_lossy();
            if name.ends_with(".json") {
                return Err(format!(
                    "blueprint-search: --all '{name}': the listing is CSV or JSON lines, one configuration a line: name it .csv or .jsonl"
                ));
            }
            Some(if name.ends_with(".jsonl") || name.ends_with(".ndjson") { ListingFormat::JsonLines } else { ListingFormat::Csv })
        }
    };
    let format = if json_on_stdout { Format::Json } else { a.format.unwrap_or(Format::Table) };
    let stem = Path::new(model_file).file_stem().map(|s| s.to_string_lossy().into_owned());
    let model =
        ModelSpec::from_any_json_with(&read(model_file)?, stem.as_deref(), a.seq_len).map_err(|e| format!("{model_path}: error: {e}"))?;
    let system = SystemProfile::from_json(&read(system_file)?).map_err(|e| format!("{system_path}: error: {e}"))?;
    let options = SearchOptions {
        procs,
        max_batch,
        datatype: a.datatype.unwrap_or(Datatype::Float16),
        top: a.top.unwrap_or(10),
        dp_overlap: !a.no_dp_overlap,
        tp_overlap: !a.no_tp_overlap,
        offload: !a.no_offload,
        fused_activation: a.fused.unwrap_or_else(|| vec![true]),
        calculon_dp_overlap: a.calculon_dp_overlap,
        samples: a.samples,
        threads: a.threads,
        headroom: a.headroom,
    };

    // Ctrl-C: stop and report the best so far; a second one exits at once.
    // A handler may already be installed (a second run in one process).
    let _ = ctrlc::set_handler(|| {
        if INTERRUPT.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        report("blueprint-search: interrupted; reporting the best configurations found so far (Ctrl-C again to quit)");
    });

    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    let tty = std::io::stderr().is_terminal();
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {human_pos}/{human_len} configurations, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let progress = |n: u64| bar.inc(n);
    let total = |n: u64| bar.set_length(n);
    let done = AtomicBool::new(false);
    let run_search = |listing: Option<Listing>| {
        std::thread::scope(|scope| {
            let start = Instant::now();
            let (bar, done) = (&bar, &done);
            if tty {
                // Shown only for runs longer than a second.
                scope.spawn(move || {
                    while !done.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(50));
                        if start.elapsed() > Duration::from_secs(1) && !done.load(Ordering::Relaxed) {
                            bar.set_draw_target(ProgressDrawTarget::stderr());
                            break;
                        }
                    }
                });
            }
            let result = search::search_with(
                &model,
                &system,
                &options,
                Control { interrupt: Some(&INTERRUPT), progress: Some(&progress), total: Some(&total) },
                listing,
            );
            done.store(true, Ordering::Relaxed);
            result
        })
    };
    let search_error = |e: SearchError| format!("blueprint-search: error: {e}");
    // The listing's file is renamed into place only after a search that
    // succeeds (or fits nothing, under --none-ok) and is not interrupted.
    let mut listing_kept = true;
    let result = match (a.all.as_deref(), listing_format) {
        (Some(path), Some(format)) if !is_dash(path) => {
            let mut result = None;
            let written = crate::tools::cli::write_file_atomically_with(Path::new(path), |out| {
                let r = run_search(Some(Listing { format, out }));
                listing_kept =
                    matches!(&r, Ok(done) if !done.outcome.partial && done.configurations > 0 && (done.outcome.fit > 0 || a.none_ok));
                let error = match &r {
                    Err(SearchError::Listing(e)) => Some(std::io::Error::new(e.kind(), e.to_string())),
                    _ => None,
                };
                result = Some(r);
                match error {
                    Some(e) => Err(e),
                    None if listing_kept => Ok(()),
                    None => Err(std::io::Error::other("the search did not complete: the listing is discarded")),
                }
            });
            let cannot = |e: &dyn std::fmt::Display| format!("blueprint-search: cannot write '{}': {e}", path.to_string_lossy());
            match (result, written) {
                (Some(Err(SearchError::Listing(e))), _) => return Err(cannot(&e)),
                (Some(Err(e)), _) => return Err(search_error(e)),
                (Some(Ok(_)), Err(e)) if listing_kept => return Err(cannot(&e)),
                (Some(Ok(done)), _) => done,
                (None, Err(e)) => return Err(cannot(&e)),
                (None, Ok(())) => return Err("blueprint-search: internal error: the search did not run".into()),
            }
        }
        (Some(_), Some(format)) => {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            run_search(Some(Listing { format, out: &mut out })).map_err(|e| match e {
                SearchError::Listing(e) => format!("blueprint-search: cannot write <stdout>: {e}"),
                e => search_error(e),
            })?
        }
        _ => run_search(None).map_err(search_error)?,
    };
    bar.finish_and_clear();
    if a.all.is_some() && result.outcome.partial {
        report(if all_on_stdout {
            "blueprint-search: --all: interrupted; the listing on stdout stops short"
        } else {
            "blueprint-search: --all: interrupted; the listing is incomplete, so its file is not written"
        });
    }

    let best = result.top().first();
    if best.is_none() && result.outcome.partial {
        report("blueprint-search: interrupted before any configuration fitted; nothing is written");
        return Ok(130);
    }
    if result.configurations == 0 {
        return Err(format!(
            "blueprint-search: the space is empty, nothing is written: no TP × PP × DP = {procs} has TP dividing model.hidden and model.heads, PP dividing model.blocks, and DP at most --max-batch {max_batch}"
        ));
    }
    if best.is_none() {
        // A failed search writes nothing: the reasons go to stderr.
        let mut message = String::from("blueprint-search: no configuration fits; nothing is written. Pruned:");
        for (reason, pruned) in &result.outcome.pruned {
            match &pruned.nearest {
                Some(near) => message.push_str(&format!(
                    "\n  {reason}: {} configurations; the nearest miss (index {}) needs {} bytes per processor{}, {} more than the {} it may use",
                    pruned.count,
                    near.index,
                    if *reason == "memory_tier2" {
                        near.estimate.memory.proc_mem_tier2_cap_req
                    } else {
                        near.estimate.memory.per_processor.proc_mem_tier1_cap_req
                    },
                    if *reason == "memory_tier2" { " in the second memory tier" } else { "" },
                    near.over_by_bytes,
                    near.limit_bytes
                )),
                None => message.push_str(&format!(
                    "\n  {reason}: {} configurations, the first (index {}): {}",
                    pruned.count, pruned.first_index, pruned.example
                )),
            }
        }
        if a.emit_plan.is_some() {
            message.push_str("\n--emit-plan: no configuration fits, so there is no plan to emit");
        }
        if !a.none_ok {
            return Err(message);
        }
        report(&format!("{message}\n(--none-ok: not an error; the outputs are written with no ranked rows)"));
    }
    let report = output::report(&model, system_path, &system, &options, &result);
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())? + "\n";
    let plan = match (&a.emit_plan, best) {
        (Some(_), Some(best)) => {
            let spec = best.config.spec(&model, options.datatype);
            let entry = &report.top[0];
            let header = format!(
                "// blueprint-search: the best of {} configurations of {} on {procs} processors of {system_path}: sample_rate {} (index {})\n// estimate it with: blueprint-translate --estimate FILE --system {system_path} {}\n",
                result.configurations,
                model.name.as_deref().unwrap_or(model_path),
                best.estimate.sample_rate,
                best.index,
                entry.estimate_args
            );
            Some(emit_plan(&spec, &header)?)
        }
        (Some(_), None) if a.none_ok => None,
        (Some(_), None) => return Err("blueprint-search: --emit-plan: no configuration fits, so there is no plan to emit".into()),
        _ => None,
    };
    // Files first, then stdout, so that a failure leaves stdout empty.
    if let Some(path) = a.output.as_deref().filter(|p| !is_dash(p)) {
        write(Some(path), &json)?;
    }
    if let (Some(path), Some(plan)) = (&a.emit_plan, plan) {
        write(Some(path), &plan)?;
    }
    if !all_on_stdout {
        let shown = match format {
            Format::Json => json,
            Format::Table => table::table(&report),
            Format::Csv | Format::Jsonl => table::csv(&report),
        };
        write(None, &shown)?;
    }
    if result.outcome.partial {
        return Ok(130);
    }
    Ok(0)
}
