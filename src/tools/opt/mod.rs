//! `blueprint-opt`: the `mlir-opt` of Blueprint.
//!
//! Reads `.mlir` from a file or stdin, verifies it (MLIR's verifier with the
//! IRDL dialects, then Blueprint's Rust verifiers), runs a pipeline mixing
//! Blueprint's Rust passes with upstream passes, verifies after every pass
//! and prints the result. Diagnostics are `file:line:col: error: ...`; any
//! error makes the exit code 1 and nothing is written.

mod diagnostics_check;

use std::ffi::{OsStr, OsString};
use std::io::Write;

use melior::{
    ir::{operation::OperationPrintingFlags, Module},
    pass::{PassIrPrintingOptions, PassManager},
    Context,
};

use crate::{
    tools::registry as passes,
    {
        dialect::verify::verify_blueprint,
        error::{Error, Result},
        ir::{
            context::create_context,
            diagnostics::{Diagnostic, DiagnosticSink, Severity},
            ods,
        },
    },
};

pub use crate::ir::parse::parse_module;
use crate::tools::cli::{is_dash, print_info, report};
use crate::tools::pipeline::{parse_pipeline, PipelineElement};

/// Command-line options, as `mlir-opt` spells them.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// Paths as given (not necessarily UTF-8).
    pub input: Option<OsString>,
    pub output: Option<OsString>,
    pub split_input_file: bool,
    pub verify_diagnostics: bool,
    pub pipeline: Vec<PipelineElement>,
    pub print_generic: bool,
    pub print_debug_info: bool,
    pub print_ir_after_all: bool,
    pub print_ir_before_all: bool,
    pub timing: bool,
    pub allow_unregistered: bool,
    pub print_irdl: bool,
    pub help: bool,
    pub version: bool,
}

const SPLIT_MARKER: &str = "// -----";

/// Parses `args` (without the program name).
pub fn parse_args(args: &[OsString]) -> Result<Options> {
    let mut options = Options::default();
    let mut pipeline_text: Option<String> = None;
    let mut pass_flags: Vec<PipelineElement> = Vec::new();
    let mut iter = args.iter();
    while let Some(raw) = iter.next() {
        // Options are ASCII: an argument that is not UTF-8 is a path.
        let Some(arg) = raw.to_str() else {
            set_input(&mut options, raw)?;
            continue;
        };
        let (flag, value) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        let flag_name = flag.trim_start_matches('-');
        match flag {
            "-h" | "--help" | "-help" => options.help = true,
            "--version" => options.version = true,
            "-o" => {
                let path = iter.next().ok_or_else(|| Error::Usage("-o needs a file name".into()))?;
                options.output = Some(path.clone());
            }
            "--split-input-file" | "-split-input-file" => options.split_input_file = true,
            "--verify-diagnostics" | "-verify-diagnostics" => options.verify_diagnostics = true,
            "--mlir-print-op-generic" | "-mlir-print-op-generic" => options.print_generic = true,
            "--mlir-print-debuginfo" | "-mlir-print-debuginfo" => options.print_debug_info = true,
            "--mlir-print-ir-after-all" | "-mlir-print-ir-after-all" => options.print_ir_after_all = true,
            "--mlir-print-ir-before-all" | "-mlir-print-ir-before-all" => options.print_ir_before_all = true,
            "--mlir-timing" | "-mlir-timing" => options.timing = true,
            "--allow-unregistered-dialect" | "-allow-unregistered-dialect" => options.allow_unregistered = true,
            "--print-irdl" => options.print_irdl = true,
            "--pass-pipeline" | "-pass-pipeline" => {
                let text = match value {
                    Some(v) => v,
                    None => {
                        let next = iter.next().ok_or_else(|| Error::Usage("--pass-pipeline needs a pipeline".into()))?;
                        crate::tools::cli::text(next, "--pass-pipeline").map_err(Error::Usage)?.to_string()
                    }
                };
                pipeline_text = Some(text);
            }
            "-" => set_input(&mut options, raw)?,
            _ if flag.starts_with('-') && flag.len() > 1 => {
                // One flag per pass, Blueprint's or upstream's, as in mlir-opt:
                // `--canonicalize`, `--cse`, `--name=option=value`.
                if flag_name.is_empty() {
                    return Err(Error::Usage(format!("unknown option '{arg}'")));
                }
                if passes::find(flag_name).is_some() {
                    if value.is_some() {
                        return Err(Error::Usage(format!("pass '{flag_name}' takes no options")));
                    }
                    pass_flags.push(PipelineElement::Blueprint(flag_name.to_string()));
                } else {
                    let element = match value {
                        Some(v) => format!("{flag_name}{{{}}}", v.trim_matches('"')),
                        None => flag_name.to_string(),
                    };
                    pass_flags.push(PipelineElement::Upstream(element));
                }
            }
            _ => set_input(&mut options, raw)?,
        }
    }
    match (pipeline_text, pass_flags.is_empty()) {
        (Some(_), false) => return Err(Error::Usage("'--pass-pipeline' cannot be combined with individual pass flags".into())),
        (Some(text), true) => options.pipeline = parse_pipeline(&text)?,
        (None, _) => options.pipeline = pass_flags,
    }
    Ok(options)
}

fn set_input(options: &mut Options, path: &OsStr) -> Result<()> {
    if let Some(existing) = &options.input {
        return Err(Error::Usage(format!(
            "only one input file is accepted, got '{}' and '{}'",
            existing.to_string_lossy(),
            path.to_string_lossy()
        )));
    }
    options.input = Some(path.to_os_string());
    Ok(())
}

#[must_use]
pub fn help_text() -> String {
    let mut text = String::from(
        "OVERVIEW: Blueprint modular optimizer driver (model / dist / plan dialects)\n\n\
         USAGE: blueprint-opt [options] <input file | - >\n\n\
         OPTIONS:\n\
         \x20 -o <file>                        Output file (default: stdout)\n\
         \x20 --split-input-file               Split the input on '// -----' and process each chunk\n\
         \x20 --verify-diagnostics             Check diagnostics against expected-* comments\n\
         \x20 --pass-pipeline=<pipeline>       e.g. 'builtin.module(blueprint-verify,canonicalize)'\n\
         \x20 --<pass>[=<options>]             Add one pass (Blueprint's or any upstream pass)\n\
         \x20 --mlir-print-op-generic          Print the generic op form\n\
         \x20 --mlir-print-debuginfo           Print locations\n\
         \x20 --mlir-print-ir-before-all       Print the IR before every pass (to stderr)\n\
         \x20 --mlir-print-ir-after-all        Print the IR after every pass (to stderr)\n\
         \x20 --mlir-timing                    Report the time of each pass (to stderr)\n\
         \x20 --allow-unregistered-dialect     Accept ops of unknown dialects\n\
         \x20 --print-irdl                     Print the IRDL of Blueprint's dialects and exit\n\
         \x20 --version                        Print the version and exit\n\n\
         BLUEPRINT PASSES:\n",
    );
    for pass in passes::PASSES {
        text.push_str(&format!("  --{:<34} {}\n", pass.name, pass.summary));
    }
    text.push_str("\nDIALECTS:\n");
    for dialect in ods::DIALECTS {
        text.push_str(&format!("  {:<36} {}\n", dialect.name, dialect.summary));
    }
    text.push_str("\nUpstream MLIR passes are accepted by name in --pass-pipeline and as flags.\n");
    text
}

/// Runs the driver; returns the process exit code.
#[must_use]
pub fn main_with_args(args: &[OsString]) -> i32 {
    let options = match parse_args(args) {
        Ok(o) => o,
        Err(e) => {
            report(&format!("blueprint-opt: {e}\nTry 'blueprint-opt --help'."));
            return 1;
        }
    };
    if options.help {
        return print_info("blueprint-opt", &help_text());
    }
    if options.version {
        return print_info("blueprint-opt", &format!("blueprint-opt {} (MLIR 22)\n", env!("CARGO_PKG_VERSION")));
    }
    if options.print_irdl {
        return print_info("blueprint-opt", ods::IRDL);
    }
    match run(&options) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            report(&format!("blueprint-opt: {e}"));
            1
        }
    }
}

fn read_input(options: &Options) -> Result<(String, Vec<u8>)> {
    crate::tools::cli::read_input(options.input.as_deref()).map_err(|e| Error::ReadInput { path: e.name, source: e.source })
}

/// Splits the input on `// -----` lines; each chunk's text is padded with
/// newlines so that line numbers in diagnostics are those of the whole
/// file. Without splitting the input is the one chunk, not copied.
fn split_chunks(bytes: Vec<u8>, split: bool) -> Vec<Vec<u8>> {
    if !split {
        return vec![bytes];
    }
    let mut chunks = Vec::new();
    let mut current: Vec<u8> = Vec::new();
    let mut lines_before = 0usize;
    let mut line_no = 0usize;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let trimmed = String::from_utf8_lossy(line);
        if trimmed.trim_end().starts_with(SPLIT_MARKER) && trimmed.trim() == SPLIT_MARKER {
            let mut text = vec![b'\n'; lines_before];
            text.extend_from_slice(&current);
            chunks.push(text);
            current.clear();
            line_no += 1;
            lines_before = line_no;
            continue;
        }
        current.extend_from_slice(line);
        line_no += 1;
    }
    let mut text = vec![b'\n'; lines_before];
    text.extend_from_slice(&current);
    chunks.push(text);
    chunks
}

/// Processes every chunk; returns whether all succeeded (or, under
/// `--verify-diagnostics`, whether all diagnostics matched).
pub fn run(options: &Options) -> Result<bool> {
    let (name, bytes) = read_input(options)?;
    let chunks = split_chunks(bytes, options.split_input_file);
    let single = chunks.len() == 1;
    let mut outputs: Vec<Vec<u8>> = Vec::new();
    let mut all_ok = true;
    for mut chunk in chunks {
        let context = create_context();
        context.set_allow_unregistered_dialects(options.allow_unregistered);
        let sink = DiagnosticSink::attach(&context);
        let mut timings = Timings::default();
        let module = process_chunk(&context, &sink, options, &name, &mut chunk, &mut timings)?;
        let diagnostics = sink.take();
        if options.verify_diagnostics {
            let text = String::from_utf8_lossy(&chunk);
            let problems = diagnostics_check::check(&name, &text, &diagnostics);
            for problem in &problems {
                report(&problem.to_string());
            }
            all_ok &= problems.is_empty();
        } else {
            report_all(&diagnostics);
            all_ok &= module.is_some() && !diagnostics.iter().any(|d| d.severity == Severity::Error);
        }
        let Some(module) = module else { continue };
        let flags = printing_flags(options);
        if single {
            // One chunk: print straight into the output, never holding
            // the text (nothing is written if the chunk failed).
            if !all_ok {
                return Ok(false);
            }
            write_output(options, |out| {
                crate::ir::read::print_op_to(module.as_operation(), &flags, out).and_then(|()| out.write_all(b"\n"))
            })?;
            timings.report(options);
            return Ok(true);
        }
        let mut text = crate::ir::read::op_bytes(module.as_operation(), &flags);
        text.push(b'\n');
        timings.report(options);
        outputs.push(text);
    }
    if !all_ok {
        return Ok(false);
    }
    let marker = format!("{SPLIT_MARKER}\n");
    write_output(options, |out| {
        for (i, text) in outputs.iter().enumerate() {
            if i > 0 {
                out.write_all(marker.as_bytes())?;
            }
            out.write_all(text)?;
        }
        Ok(())
    })?;
    Ok(true)
}

fn report_all(diagnostics: &[Diagnostic]) {
    for diagnostic in diagnostics {
        report(&diagnostic.to_string());
    }
}

fn write_output(options: &Options, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    match options.output.as_deref().filter(|p| !is_dash(p)) {
        None => {
            let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            write(&mut stdout).and_then(|()| stdout.flush()).map_err(|source| Error::WriteOutput { path: "<stdout>".into(), source })
        }
        Some(path) => crate::tools::cli::write_file_atomically_with(std::path::Path::new(path), write)
            .map_err(|source| Error::WriteOutput { path: path.to_string_lossy().into_owned(), source }),
    }
}

fn printing_flags(options: &Options) -> OperationPrintingFlags {
    let mut flags = OperationPrintingFlags::new();
    if options.print_generic {
        flags = flags.print_generic_operation_form();
    }
    if options.print_debug_info {
        flags = flags.enable_debug_info(true, false);
    }
    // Only verified modules are printed (after parsing and after every pass
    // that may change the IR); otherwise MLIR's printer verifies the whole
    // module once more before printing the custom form.
    // SAFETY: live flags.
    unsafe { mlir_sys::mlirOpPrintingFlagsAssumeVerified(flags.to_raw()) };
    flags
}

/// When each phase of a chunk ended, for `--mlir-timing`.
#[derive(Default)]
struct Timings {
    started: Option<std::time::Instant>,
    parsed: Option<std::time::Instant>,
    verified: Option<std::time::Instant>,
    ran: Option<std::time::Instant>,
}

impl Timings {
    /// Reports the phases, the print ending now.
    fn report(&self, options: &Options) {
        let (Some(started), Some(parsed), Some(verified), Some(ran)) = (self.started, self.parsed, self.verified, self.ran) else {
            return;
        };
        if options.timing {
            let seconds = |from: std::time::Instant, to: std::time::Instant| (to - from).as_secs_f64();
            report(&format!(
                "blueprint-opt: parse (and MLIR verify) {:.4} s, Blueprint verify {:.4} s, pipeline {:.4} s, print {:.4} s",
                seconds(started, parsed),
                seconds(parsed, verified),
                seconds(verified, ran),
                seconds(ran, std::time::Instant::now())
            ));
        }
    }
}

/// Parses, verifies and runs the pipeline on one chunk. `Ok(None)` means
/// the chunk failed with diagnostics already emitted. The chunk's text is
/// released once parsed unless `--verify-diagnostics` needs it.
fn process_chunk<'c>(
    context: &'c Context,
    sink: &DiagnosticSink,
    options: &Options,
    name: &str,
    source: &mut Vec<u8>,
    timings: &mut Timings,
) -> Result<Option<Module<'c>>> {
    timings.started = Some(std::time::Instant::now());
    let parsed = parse_module(context, sink, source, name);
    if !options.verify_diagnostics {
        // The IR no longer needs the text: free it before verifying and
        // printing, which lowers the peak memory by the input's size.
        *source = Vec::new();
    }
    let Some(mut module) = parsed else {
        return Ok(None);
    };
    timings.parsed = Some(std::time::Instant::now());
    // The parser has already run MLIR's verifier (the generated C++ verifiers).
    if !verify_blueprint(module.as_operation()) {
        return Ok(None);
    }
    timings.verified = Some(std::time::Instant::now());
    if !options.pipeline.is_empty() {
        let pass_manager = build_pass_manager(context, options)?;
        if pass_manager.run(&mut module).is_err() {
            return Ok(None);
        }
    }
    timings.ran = Some(std::time::Instant::now());
    Ok(Some(module))
}

fn build_pass_manager<'c>(context: &'c Context, options: &Options) -> Result<PassManager<'c>> {
    let pass_manager = PassManager::new(context);
    // `add_elements` verifies after every pass that may change the IR.
    pass_manager.enable_verifier(false);
    if options.timing {
        unsafe { mlir_sys::mlirPassManagerEnableTiming(pass_manager.to_raw()) };
    }
    if options.print_ir_after_all || options.print_ir_before_all {
        let mut flags = OperationPrintingFlags::new();
        if options.print_generic {
            flags = flags.print_generic_operation_form();
        }
        pass_manager.enable_ir_printing(&PassIrPrintingOptions {
            before_all: options.print_ir_before_all,
            after_all: options.print_ir_after_all,
            module_scope: true,
            on_change: false,
            on_failure: false,
            flags,
            tree_printing_path: std::path::PathBuf::new(),
        });
    }
    crate::tools::pipeline::add_elements(&pass_manager.as_operation_pass_manager(), &options.pipeline, true)?;
    Ok(pass_manager)
}
