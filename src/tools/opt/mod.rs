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
    pass::PassManager,
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
use crate::tools::suggest::{is_registered_upstream_pass, pass_names, suggest};

/// Command-line options, as `mlir-opt` spells them.
#[derive(Debug, Clone)]
pub struct Options {
    /// Paths as given (not necessarily UTF-8).
    pub input: Option<OsString>,
    pub output: Option<OsString>,
    pub split_input_file: bool,
    pub verify_diagnostics: bool,
    pub pipeline: Vec<PipelineElement>,
    pub print_generic: bool,
    pub print_debug_info: bool,
    pub pretty_debug_info: bool,
    pub print_local_scope: bool,
    /// `--mlir-elide-elementsattrs-if-larger=N`.
    pub elide_elements_larger: Option<usize>,
    pub print_ir_after_all: bool,
    pub print_ir_before_all: bool,
    /// `--mlir-print-ir-before=<pass>` / `--mlir-print-ir-after=<pass>`.
    pub print_ir_before: Vec<String>,
    pub print_ir_after: Vec<String>,
    pub print_ir_after_change: bool,
    pub print_ir_after_failure: bool,
    pub timing: bool,
    /// `--mlir-pass-statistics` and `--mlir-pass-statistics-display`.
    pub pass_statistics: bool,
    pub statistics_display: StatisticsDisplay,
    pub disable_threading: bool,
    pub dump_pass_pipeline: bool,
    /// `--verify-each` (default on): MLIR's and Blueprint's verifiers after
    /// every pass that may change the IR.
    pub verify_each: bool,
    pub emit_bytecode: bool,
    /// `--emit-bytecode-version=N`.
    pub bytecode_version: Option<i64>,
    pub show_dialects: bool,
    pub list_passes: bool,
    pub allow_unregistered: bool,
    pub print_irdl: bool,
    pub help: bool,
    pub version: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            input: None,
            output: None,
            split_input_file: false,
            verify_diagnostics: false,
            pipeline: Vec::new(),
            print_generic: false,
            print_debug_info: false,
            pretty_debug_info: false,
            print_local_scope: false,
            elide_elements_larger: None,
            print_ir_after_all: false,
            print_ir_before_all: false,
            print_ir_before: Vec::new(),
            print_ir_after: Vec::new(),
            print_ir_after_change: false,
            print_ir_after_failure: false,
            timing: false,
            pass_statistics: false,
            statistics_display: StatisticsDisplay::Pipeline,
            disable_threading: false,
            dump_pass_pipeline: false,
            verify_each: true,
            emit_bytecode: false,
            bytecode_version: None,
            show_dialects: false,
            list_passes: false,
            allow_unregistered: false,
            print_irdl: false,
            help: false,
            version: false,
        }
    }
}

/// `--mlir-pass-statistics-display`: MLIR's `PassDisplayMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatisticsDisplay {
    /// Statistics merged per pass kind (MLIR's `list`).
    List,
    /// Statistics in the pipeline's structure (MLIR's default).
    Pipeline,
}

const SPLIT_MARKER: &str = "// -----";

/// The driver's own options (without dashes), for suggestions.
const OPTION_NAMES: &[&str] = &[
    "help",
    "version",
    "o",
    "split-input-file",
    "verify-diagnostics",
    "pass-pipeline",
    "mlir-print-op-generic",
    "mlir-print-debuginfo",
    "mlir-pretty-debuginfo",
    "mlir-print-local-scope",
    "mlir-elide-elementsattrs-if-larger",
    "mlir-print-ir-after-all",
    "mlir-print-ir-before-all",
    "mlir-print-ir-before",
    "mlir-print-ir-after",
    "mlir-print-ir-after-change",
    "mlir-print-ir-after-failure",
    "mlir-print-ir-module-scope",
    "mlir-timing",
    "mlir-pass-statistics",
    "mlir-pass-statistics-display",
    "mlir-disable-threading",
    "dump-pass-pipeline",
    "verify-each",
    "emit-bytecode",
    "emit-bytecode-version",
    "show-dialects",
    "list-passes",
    "allow-unregistered-dialect",
    "print-irdl",
];

/// A boolean option's value as LLVM's command line takes it (absent: on).
fn boolean(flag: &str, value: Option<&str>) -> Result<bool> {
    match value {
        None | Some("1" | "true" | "TRUE" | "True") => Ok(true),
        Some("0" | "false" | "FALSE" | "False") => Ok(false),
        Some(other) => Err(Error::Usage(format!("'{other}' is not a boolean value for '{flag}' (use 1, 0, true or false)"))),
    }
}

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
        if arg == "-" || !arg.starts_with('-') {
            set_input(&mut options, raw)?;
            continue;
        }
        let (flag, value) = match arg.split_once('=') {
            Some((f, v)) => (f, Some(v)),
            None => (arg, None),
        };
        // `-name` and `--name` alike, as LLVM's command line takes them.
        let name = flag.strip_prefix("--").or_else(|| flag.strip_prefix('-')).unwrap_or(flag);
        let mut next_value = |what: &str| -> Result<String> {
            match value {
                Some(v) => Ok(v.to_string()),
                None => {
                    let next = iter.next().ok_or_else(|| Error::Usage(format!("{flag} needs {what}")))?;
                    Ok(crate::tools::cli::text(next, flag).map_err(Error::Usage)?.to_string())
                }
            }
        };
        match name {
            "h" | "help" => options.help = boolean(flag, value)?,
            "version" => options.version = boolean(flag, value)?,
            "o" => {
                let path = match value {
                    Some(v) => OsString::from(v),
                    None => iter.next().ok_or_else(|| Error::Usage("-o needs a file name".into()))?.clone(),
                };
                options.output = Some(path);
            }
            "split-input-file" => options.split_input_file = boolean(flag, value)?,
            "verify-diagnostics" => options.verify_diagnostics = boolean(flag, value)?,
            "mlir-print-op-generic" => options.print_generic = boolean(flag, value)?,
            "mlir-print-debuginfo" => options.print_debug_info = boolean(flag, value)?,
            "mlir-pretty-debuginfo" => options.pretty_debug_info = boolean(flag, value)?,
            "mlir-print-local-scope" => options.print_local_scope = boolean(flag, value)?,
            "mlir-elide-elementsattrs-if-larger" => {
                let text = next_value("a number of elements")?;
                let limit = text.parse::<usize>().map_err(|_| Error::Usage(format!("{flag}: '{text}' is not a number of elements")))?;
                options.elide_elements_larger = Some(limit);
            }
            "mlir-print-ir-after-all" => options.print_ir_after_all = boolean(flag, value)?,
            "mlir-print-ir-before-all" => options.print_ir_before_all = boolean(flag, value)?,
            "mlir-print-ir-before" | "mlir-print-ir-after" => {
                let list = next_value("a pass name")?;
                for pass in list.split(',').map(str::trim) {
                    check_pass_name(flag, pass)?;
                    if name == "mlir-print-ir-before" {
                        options.print_ir_before.push(pass.to_string());
                    } else {
                        options.print_ir_after.push(pass.to_string());
                    }
                }
            }
            "mlir-print-ir-after-change" => options.print_ir_after_change = boolean(flag, value)?,
            "mlir-print-ir-after-failure" => options.print_ir_after_failure = boolean(flag, value)?,
            // The IR is always printed at module scope (threading is off).
            "mlir-print-ir-module-scope" => {
                boolean(flag, value)?;
            }
            "mlir-timing" => options.timing = boolean(flag, value)?,
            "mlir-pass-statistics" => options.pass_statistics = boolean(flag, value)?,
            "mlir-pass-statistics-display" => {
                let mode = match next_value("'list' or 'pipeline'")?.as_str() {
                    "list" => StatisticsDisplay::List,
                    "pipeline" => StatisticsDisplay::Pipeline,
                    other => return Err(Error::Usage(format!("{flag}: '{other}' is not a display mode (use 'list' or 'pipeline')"))),
                };
                // As in mlir-opt, the mode alone does not turn statistics on.
                options.statistics_display = mode;
            }
            "mlir-disable-threading" => options.disable_threading = boolean(flag, value)?,
            "dump-pass-pipeline" => options.dump_pass_pipeline = boolean(flag, value)?,
            "verify-each" => options.verify_each = boolean(flag, value)?,
            "emit-bytecode" => options.emit_bytecode = boolean(flag, value)?,
            "emit-bytecode-version" => {
                let text = next_value("a bytecode version")?;
                let version = text
                    .parse::<i64>()
                    .ok()
                    .filter(|v| *v >= 0)
                    .ok_or_else(|| Error::Usage(format!("{flag}: '{text}' is not a bytecode version (a non-negative integer)")))?;
                options.bytecode_version = Some(version);
            }
            "show-dialects" => options.show_dialects = boolean(flag, value)?,
            "list-passes" => options.list_passes = boolean(flag, value)?,
            "allow-unregistered-dialect" => options.allow_unregistered = boolean(flag, value)?,
            "print-irdl" => options.print_irdl = boolean(flag, value)?,
            "pass-pipeline" => pipeline_text = Some(next_value("a pipeline")?),
            "" => return Err(Error::Usage(format!("unknown option '{arg}'"))),
            _ => {
                // One flag per pass, Blueprint's or upstream's, as in mlir-opt:
                // `--canonicalize`, `--cse`, `--name=option=value`.
                if passes::find(name).is_some() {
                    if value.is_some() {
                        return Err(Error::Usage(format!("pass '{name}' takes no options")));
                    }
                    pass_flags.push(PipelineElement::Blueprint(name.to_string()));
                } else if is_registered_upstream_pass(name) {
                    let element = match value {
                        Some(v) => format!("{name}{{{}}}", v.trim_matches('"')),
                        None => name.to_string(),
                    };
                    pass_flags.push(PipelineElement::Upstream(element));
                } else {
                    return Err(Error::Usage(unknown_option_message(flag, name)));
                }
            }
        }
    }
    match (pipeline_text, pass_flags.is_empty()) {
        (Some(_), false) => return Err(Error::Usage("'--pass-pipeline' cannot be combined with individual pass flags".into())),
        (Some(text), true) => options.pipeline = parse_pipeline(&text)?,
        (None, _) => options.pipeline = pass_flags,
    }
    if options.emit_bytecode && options.split_input_file {
        return Err(Error::Usage("'--emit-bytecode' cannot be combined with '--split-input-file' (one module per output)".into()));
    }
    Ok(options)
}

/// A pass named by `--mlir-print-ir-before/after` must exist.
fn check_pass_name(flag: &str, pass: &str) -> Result<()> {
    if passes::find(pass).is_some() || is_registered_upstream_pass(pass) {
        return Ok(());
    }
    let hint = suggest(pass, &pass_names()).map(|s| format!("; did you mean '{s}'?")).unwrap_or_default();
    Err(Error::Usage(format!("{flag}: '{pass}' is not a registered pass{hint}")))
}

/// `Unknown command line argument` as LLVM words it, with the nearest
/// option or pass.
fn unknown_option_message(flag: &str, name: &str) -> String {
    let dashes = if flag.starts_with("--") { "--" } else { "-" };
    let mut candidates: Vec<String> = OPTION_NAMES.iter().map(|s| (*s).to_string()).collect();
    candidates.extend(pass_names());
    let mut message = format!("unknown option or pass '{flag}' (not an option of blueprint-opt, nor a registered pass)");
    if let Some(nearest) = suggest(name, &candidates) {
        message.push_str(&format!("; did you mean '{dashes}{nearest}'?"));
    }
    message
}

extern "C" {
    /// `src/tools/capi/opt.cpp`.
    fn blueprintPrintRegisteredPasses() -> bool;
    fn blueprintAvailableDialects(context: mlir_sys::MlirContext, callback: mlir_sys::MlirStringCallback, user_data: *mut std::ffi::c_void);
    fn blueprintPassManagerDump(pass_manager: mlir_sys::MlirPassManager);
    #[allow(clippy::too_many_arguments)]
    fn blueprintPassManagerEnableIRPrinting(
        pass_manager: mlir_sys::MlirPassManager,
        before_all: bool,
        before: *const mlir_sys::MlirStringRef,
        num_before: isize,
        after_all: bool,
        after: *const mlir_sys::MlirStringRef,
        num_after: isize,
        after_change: bool,
        after_failure: bool,
        module_scope: bool,
        flags: mlir_sys::MlirOpPrintingFlags,
        hidden: mlir_sys::MlirStringRef,
    );
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
         \x20 --mlir-pretty-debuginfo          Print locations in a pretty form (with --mlir-print-debuginfo)\n\
         \x20 --mlir-print-local-scope         Print types and attributes inline, without aliases\n\
         \x20 --mlir-elide-elementsattrs-if-larger=<n>  Elide elements attributes of more than n elements\n\
         \x20 --mlir-print-ir-before-all       Print the IR before every pass (to stderr)\n\
         \x20 --mlir-print-ir-after-all        Print the IR after every pass (to stderr)\n\
         \x20 --mlir-print-ir-before=<pass>    Print the IR before the named passes (to stderr)\n\
         \x20 --mlir-print-ir-after=<pass>     Print the IR after the named passes (to stderr)\n\
         \x20 --mlir-print-ir-after-change     Print after a pass only if it changed the IR\n\
         \x20 --mlir-print-ir-after-failure    Print the IR after a pass that failed\n\
         \x20 --mlir-timing                    Report the time of each pass (to stderr)\n\
         \x20 --mlir-pass-statistics           Report the passes' statistics (to stderr)\n\
         \x20 --mlir-pass-statistics-display=<list|pipeline>  How to show them (default pipeline)\n\
         \x20 --mlir-disable-threading         Run on one thread (Blueprint always does: deterministic output)\n\
         \x20 --dump-pass-pipeline             Print the pass pipeline before running it (to stderr)\n\
         \x20 --verify-each=<bool>             Verify after every pass that may change the IR (default 1)\n\
         \x20 --emit-bytecode                  Write MLIR bytecode instead of text\n\
         \x20 --emit-bytecode-version=<n>      The bytecode version to write\n\
         \x20 --allow-unregistered-dialect     Accept ops of unknown dialects\n\
         \x20 --show-dialects                  Print the dialects the tool knows and exit\n\
         \x20 --list-passes                    Print every registered pass and exit\n\
         \x20 --print-irdl                     Print the IRDL of Blueprint's dialects and exit\n\
         \x20 -h, --help                       This text\n\
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
        return print_info("blueprint-opt", &crate::tools::cli::version_text("blueprint-opt"));
    }
    if options.print_irdl {
        return print_info("blueprint-opt", ods::IRDL);
    }
    if options.show_dialects {
        return print_info("blueprint-opt", &dialects_text());
    }
    if options.list_passes {
        crate::ir::context::register_upstream_passes();
        let _ = crate::tools::capi::blueprintRegisterPasses();
        // SAFETY: prints MLIR's pass registry to stdout.
        if unsafe { blueprintPrintRegisteredPasses() } {
            return 0;
        }
        report("blueprint-opt: cannot write <stdout>");
        return 1;
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

/// `--show-dialects`, as `mlir-opt` prints it.
fn dialects_text() -> String {
    unsafe extern "C" fn collect(name: mlir_sys::MlirStringRef, user_data: *mut std::ffi::c_void) {
        // SAFETY: `user_data` is the vector below, the name valid during the call.
        let names = unsafe { &mut *user_data.cast::<Vec<String>>() };
        names.push(String::from_utf8_lossy(unsafe { crate::ir::raw::string_ref_bytes(name) }).into_owned());
    }
    let context = create_context();
    let mut names: Vec<String> = Vec::new();
    // SAFETY: a live context; the callback only pushes into `names`.
    unsafe { blueprintAvailableDialects(context.to_raw(), Some(collect), (&mut names as *mut Vec<String>).cast()) };
    format!("Available Dialects: {}\n", names.join(","))
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
                if options.emit_bytecode {
                    return write_bytecode(module.as_operation(), options.bytecode_version, out);
                }
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

/// `--emit-bytecode`: MLIR's bytecode writer (`mlirOperationWriteBytecode`),
/// at `--emit-bytecode-version` when given.
fn write_bytecode(op: melior::ir::OperationRef, version: Option<i64>, out: &mut dyn Write) -> std::io::Result<()> {
    struct Sink<'a> {
        out: &'a mut dyn Write,
        error: Option<std::io::Error>,
    }
    unsafe extern "C" fn write(bytes: mlir_sys::MlirStringRef, user_data: *mut std::ffi::c_void) {
        // SAFETY: `user_data` is the sink below, the bytes valid during the call.
        let sink = unsafe { &mut *user_data.cast::<Sink>() };
        if sink.error.is_none() {
            if let Err(error) = sink.out.write_all(unsafe { crate::ir::raw::string_ref_bytes(bytes) }) {
                sink.error = Some(error);
            }
        }
    }
    let mut sink = Sink { out, error: None };
    let user_data = (&mut sink as *mut Sink).cast();
    // SAFETY: a live op; the callback writes into `sink` only.
    unsafe {
        let config = mlir_sys::mlirBytecodeWriterConfigCreate();
        if let Some(version) = version {
            mlir_sys::mlirBytecodeWriterConfigDesiredEmitVersion(config, version);
        }
        let result = mlir_sys::mlirOperationWriteBytecodeWithConfig(op.to_raw(), config, Some(write), user_data);
        mlir_sys::mlirBytecodeWriterConfigDestroy(config);
        if result.value == 0 {
            return Err(std::io::Error::other(format!(
                "MLIR's bytecode writer cannot write version {} (MLIR 22 writes versions up to its current one)",
                version.unwrap_or_default()
            )));
        }
    }
    sink.error.map_or(Ok(()), Err)
}

fn printing_flags(options: &Options) -> OperationPrintingFlags {
    let mut flags = OperationPrintingFlags::new();
    if options.print_generic {
        flags = flags.print_generic_operation_form();
    }
    if options.print_debug_info {
        flags = flags.enable_debug_info(true, options.pretty_debug_info);
    }
    if options.print_local_scope {
        flags = flags.use_local_scope();
    }
    if let Some(limit) = options.elide_elements_larger {
        flags = flags.elide_large_elements_attributes(limit);
    }
    // Only verified modules are printed (after parsing and after every pass
    // that may change the IR); otherwise MLIR's printer verifies the whole
    // module once more before printing the custom form. Under
    // `--verify-each=0` nothing verified the passes' output: the printer
    // does, and prints the generic form of IR that does not verify, as
    // mlir-opt does.
    if options.verify_each {
        // SAFETY: live flags.
        unsafe { mlir_sys::mlirOpPrintingFlagsAssumeVerified(flags.to_raw()) };
    }
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
    if options.dump_pass_pipeline {
        // The pipeline as given: the verifiers the driver runs between
        // passes are implicit, as in mlir-opt.
        // Anchored on `builtin.module`, as mlir-opt's is.
        let anchor = "builtin.module";
        // SAFETY: a live context; the pass manager is owned here.
        let shown = unsafe {
            PassManager::from_raw(mlir_sys::mlirPassManagerCreateOnOperation(
                context.to_raw(),
                mlir_sys::MlirStringRef { data: anchor.as_ptr().cast(), length: anchor.len() },
            ))
        };
        crate::tools::pipeline::add_elements(&shown.as_operation_pass_manager(), &options.pipeline, false)?;
        // SAFETY: a live pass manager.
        unsafe { blueprintPassManagerDump(shown.to_raw()) };
    }
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
    enable_ir_printing(&pass_manager, options);
    if options.pass_statistics {
        let mode = match options.statistics_display {
            StatisticsDisplay::List => mlir_sys::MlirPassDisplayMode_MLIR_PASS_DISPLAY_MODE_LIST,
            StatisticsDisplay::Pipeline => mlir_sys::MlirPassDisplayMode_MLIR_PASS_DISPLAY_MODE_PIPELINE,
        };
        // SAFETY: a live pass manager; the report goes to stderr after the run.
        unsafe { mlir_sys::mlirPassManagerEnableStatistics(pass_manager.to_raw(), mode) };
    }
    // Timing last, so that it does not time the other instrumentations.
    if options.timing {
        unsafe { mlir_sys::mlirPassManagerEnableTiming(pass_manager.to_raw()) };
    }
    crate::tools::pipeline::add_elements(&pass_manager.as_operation_pass_manager(), &options.pipeline, options.verify_each)?;
    Ok(pass_manager)
}

/// `--mlir-print-ir-*` with mlir-opt's semantics; the driver's verifier
/// passes (implicit in mlir-opt) are not printed around.
fn enable_ir_printing(pass_manager: &PassManager, options: &Options) {
    let any = options.print_ir_before_all
        || options.print_ir_after_all
        || options.print_ir_after_failure
        || !options.print_ir_before.is_empty()
        || !options.print_ir_after.is_empty();
    if !any {
        return;
    }
    let mut flags = OperationPrintingFlags::new();
    if options.print_generic {
        flags = flags.print_generic_operation_form();
    }
    if options.print_debug_info {
        flags = flags.enable_debug_info(true, options.pretty_debug_info);
    }
    if options.print_local_scope {
        flags = flags.use_local_scope();
    }
    let refs = |names: &[String]| -> Vec<mlir_sys::MlirStringRef> {
        names.iter().map(|n| mlir_sys::MlirStringRef { data: n.as_ptr().cast(), length: n.len() }).collect()
    };
    let before = refs(&options.print_ir_before);
    let after = refs(&options.print_ir_after);
    let hidden = crate::transforms::verify_pass::AFTER_PASS_DESCRIPTION;
    // SAFETY: a live pass manager; the names and flags are copied by the call.
    unsafe {
        blueprintPassManagerEnableIRPrinting(
            pass_manager.to_raw(),
            options.print_ir_before_all,
            before.as_ptr(),
            before.len() as isize,
            options.print_ir_after_all,
            after.as_ptr(),
            after.len() as isize,
            options.print_ir_after_change,
            options.print_ir_after_failure,
            true,
            flags.to_raw(),
            mlir_sys::MlirStringRef { data: hidden.as_ptr().cast(), length: hidden.len() },
        );
    }
}
