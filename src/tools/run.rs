//! `blueprint-run`: lowers a `dist` module with the standard pipeline
//! ([`crate::tools::execution::TO_LLVM_PIPELINE`]), JIT-compiles it and calls one
//! function on every rank, in-process (one thread per rank) or on MPI (one
//! rank per process, under `mpirun`), then prints every rank's results.

use std::ffi::OsString;
use std::io::Write;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use half::{bf16, f16};
use melior::ir::{attribute::AttributeLike, operation::OperationLike, RegionLike};

use crate::ir::context::create_context;
use crate::ir::diagnostics::DiagnosticSink;
use crate::ir::read::{attribute_text, collect_ops, name_of, str_attr};
use crate::runtime::interface::ElementType;
use crate::runtime::{mpi, set_stop_hook, symbols, RtError, StridedView, World};
use crate::tools::cli::{print_info, report};
use crate::tools::execution::{run_pipeline, Jit, TO_LLVM_PIPELINE, TO_LLVM_VIA_MPI_PIPELINE};

const USAGE: &str = "usage: blueprint-run FILE -e FUNC [--ranks N] [--timeout S] [--mpi] [--lower-to-mpi]
       blueprint-run STEP.mlir --train-step --params P.safetensors --inputs I.safetensors -o OUT.safetensors";

/// Options of `blueprint-run`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Paths as given (not necessarily UTF-8).
    pub input: OsString,
    pub entry: String,
    pub ranks: usize,
    /// Whether `--ranks` was given (a derived step defaults to its mesh).
    pub ranks_given: bool,
    pub timeout: Duration,
    pub mpi: bool,
    /// Lower with `lower-dist-to-mpi` (MLIR's `mpi` dialect) instead of the runtime.
    pub lower_to_mpi: bool,
    pub help: bool,
    pub version: bool,
    /// `--train-step`: run one training step of ModelIR instead of `-e`.
    pub train_step: bool,
    pub params: Option<OsString>,
    pub inputs: Option<OsString>,
    pub output: Option<OsString>,
    /// `--comm-report`: print what the runtime communicated.
    pub comm_report: bool,
}

/// The help text.
#[must_use]
pub fn help_text() -> String {
    format!(
        "{USAGE}

Lowers FILE (a module at the `dist` level, or `-` for stdin) with the
standard pipeline, JIT-compiles it and calls FUNC, which takes no
arguments and returns zero or more memrefs (or tensors) of static shape,
on every rank. Each rank prints each result as
  rank R: result I = [v0, v1, ...]
(row-major; floats in their shortest round-trip form).

Options:
  -e, --entry FUNC   the function to call (required)
  --ranks N          in-process ranks (threads); default 1
  --timeout S        seconds a wait may take before it fails; default 30
  --mpi              run on MPI (one rank per process) even when no MPI
                     launcher is detected (PMI_RANK, PMI_SIZE, OMPI_COMM_WORLD_SIZE,
                     MPI_LOCALNRANKS, HYDRA_*)
  --lower-to-mpi     lower with lower-dist-to-mpi (the upstream mpi dialect:
                     synchronous all-reduce and p2p, rank queries) instead
                     of the runtime; implies --mpi
  -h, --help         this text
  --version          print the version and exit

A runtime error (mismatched collectives, participants, handles, a timeout)
prints the rank, the op's id and location and the reason, and the run exits
with status 1 on every rank (under MPI through MPI_Abort).

--train-step runs one training step of STEP.mlir, ModelIR of a float32
training spec (blueprint-translate --import-transformer-training; coarse or
decomposed), on one rank: convert-model-to-linalg makes it @train_step, the
JIT runs it, and OUT.safetensors receives EXECUTION.md's tensors
(block.out, block.in.grad, blocks.<i>.<id>.grad, blocks.<i>.<id> after the
optimizer, and .adam_m/.adam_v under Adam).
  --params P         the parameters, blocks.<i>.<id> (safetensors, F32)
  --inputs I         block.in and block.out.grad (safetensors, F32)
  -o OUT             the output file (written only when the step ran)
  --ranks N          a derived program's ranks (default and only: its mesh's)
  --comm-report      print what the runtime communicated: per rank and op,
                     its phase, kind, group size, calls and bytes
STEP.mlir may also be a derived program (distribute-transformer-training
of decomposed ModelIR): every rank of its mesh runs (threads, or one
process each under mpirun), each on its slices of the files; the outputs
are gathered whole.
A missing or extra tensor, a wrong shape or dtype, a non-float32 step or
dropout with p > 0 is an error naming it; nothing is written.
"
    )
}

/// Parses the arguments (without the program name).
///
/// # Errors
/// A message naming the bad argument.
pub fn parse_args(args: &[OsString]) -> Result<Options, String> {
    let mut options = Options {
        input: OsString::new(),
        entry: String::new(),
        ranks: 1,
        ranks_given: false,
        timeout: Duration::from_secs(30),
        mpi: false,
        lower_to_mpi: false,
        help: false,
        version: false,
        train_step: false,
        comm_report: false,
        params: None,
        inputs: None,
        output: None,
    };
    let mut input = None;
    let mut entry = None;
    let mut i = 0;
    let value = |i: &mut usize, name: &str| -> Result<OsString, String> {
        *i += 1;
        args.get(*i).cloned().ok_or_else(|| format!("option '{name}' needs a value"))
    };
    while i < args.len() {
        let raw = &args[i];
        // Options are ASCII: an argument that is not UTF-8 is the input path.
        let Some(arg) = raw.to_str() else {
            if input.replace(raw.clone()).is_some() {
                return Err(format!("more than one input file ('{}')", raw.to_string_lossy()));
            }
            i += 1;
            continue;
        };
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(OsString::from(v))),
            _ => (arg.to_string(), None),
        };
        // A path (kept as given), or text.
        let take = |i: &mut usize| inline.clone().map_or_else(|| value(i, &flag), Ok);
        let take_text =
            |i: &mut usize| take(i).and_then(|v| v.into_string().map_err(|v| format!("{flag} '{}' is not UTF-8", v.to_string_lossy())));
        match flag.as_str() {
            "-h" | "--help" => options.help = true,
            "--version" => options.version = true,
            "--mpi" => options.mpi = true,
            "--lower-to-mpi" => {
                options.lower_to_mpi = true;
                options.mpi = true;
            }
            "-e" | "--entry" | "--entry-point" => entry = Some(take_text(&mut i)?),
            "--train-step" => options.train_step = true,
            "--comm-report" => options.comm_report = true,
            "--params" => options.params = Some(take(&mut i)?),
            "--inputs" => options.inputs = Some(take(&mut i)?),
            "-o" | "--output" => options.output = Some(take(&mut i)?),
            "--ranks" | "-n" => {
                let v = take_text(&mut i)?;
                options.ranks = v
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| (1..=4096).contains(&n))
                    .ok_or_else(|| format!("--ranks '{v}' is not a number of ranks (1 to 4096)"))?;
                options.ranks_given = true;
            }
            "--timeout" => {
                let v = take_text(&mut i)?;
                let seconds = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1e6)
                    .ok_or_else(|| format!("--timeout '{v}' is not a positive number of seconds"))?;
                options.timeout = Duration::from_secs_f64(seconds);
            }
            f if f.starts_with('-') && f != "-" => {
                return Err(format!("unknown option '{f}'{}", crate::tools::cli::did_you_mean(f, &help_text())))
            }
            _ => {
                if input.replace(raw.clone()).is_some() {
                    return Err(format!("more than one input file ('{arg}')"));
                }
            }
        }
        i += 1;
    }
    if options.help || options.version {
        return Ok(options);
    }
    options.input = input.ok_or("no input file")?;
    if options.train_step {
        if entry.is_some() {
            return Err("--train-step runs @train_step; it takes no -e".into());
        }
        for (flag, value) in [("--params", &options.params), ("--inputs", &options.inputs), ("-o", &options.output)] {
            if value.is_none() {
                return Err(format!("--train-step needs {flag}"));
            }
        }
        return Ok(options);
    }
    if options.comm_report {
        return Err("--comm-report applies to --train-step only".into());
    }
    if let Some(flag) =
        [("--params", &options.params), ("--inputs", &options.inputs), ("-o", &options.output)].iter().find(|(_, v)| v.is_some())
    {
        return Err(format!("{} applies to --train-step only", flag.0));
    }
    options.entry = entry.ok_or("no function to run (-e FUNC)")?;
    Ok(options)
}

pub use crate::runtime::mpi::under_launcher as under_mpi_launcher;

/// Entry point of the `blueprint-run` binary; returns the exit code.
pub fn main_with_args(args: &[OsString]) -> i32 {
    let options = match parse_args(args) {
        Ok(o) => o,
        Err(e) => {
            report(&format!("blueprint-run: {e}\n{USAGE}"));
            return 1;
        }
    };
    if options.help {
        return print_info("blueprint-run", &help_text());
    }
    if options.version {
        return print_info("blueprint-run", &crate::tools::cli::version_text("blueprint-run"));
    }
    if options.train_step {
        let train = crate::tools::train::TrainOptions {
            step: options.input.clone(),
            params: options.params.clone().unwrap_or_default(),
            inputs: options.inputs.clone().unwrap_or_default(),
            output: options.output.clone().unwrap_or_default(),
            ranks: options.ranks_given.then_some(options.ranks),
            comm_report: options.comm_report,
        };
        return match crate::tools::train::run_train_step(&train) {
            Ok(()) => 0,
            Err(e) => {
                report(&format!("blueprint-run: {e}"));
                1
            }
        };
    }
    match run(&options) {
        Ok(()) => 0,
        Err(e) => {
            report(&format!("blueprint-run: {e}"));
            1
        }
    }
}

/// A result of the entry function: its element type and static shape.
#[derive(Debug, Clone, PartialEq)]
struct ResultType {
    element: ElementType,
    shape: Vec<i64>,
}

/// `tensor<2x3xf32>` / `memref<2x3xf32>` / `tensor<f32>` -> its element
/// type and static shape.
fn result_type(spelling: &str) -> Result<ResultType, String> {
    let inner = spelling
        .strip_prefix("tensor<")
        .or_else(|| spelling.strip_prefix("memref<"))
        .and_then(|s| s.strip_suffix('>'))
        .ok_or_else(|| format!("returns {spelling}; blueprint-run prints only tensors and memrefs"))?;
    if inner.contains(',') || inner.contains('<') {
        return Err(format!("returns {spelling}, which has an encoding or layout blueprint-run does not print"));
    }
    // Leading `<digits>x` / `?x` are dimensions, the rest the element type.
    let mut rest = inner;
    let mut shape = Vec::new();
    loop {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '?').len();
        if digits == 0 || !rest[digits..].starts_with('x') {
            break;
        }
        let dim = rest[..digits].parse::<i64>().map_err(|_| format!("returns {spelling}, which has no static shape"))?;
        shape.push(dim);
        rest = &rest[digits + 1..];
    }
    let element =
        ElementType::from_mlir(rest).ok_or_else(|| format!("returns {spelling}, whose element type blueprint-run does not print"))?;
    Ok(ResultType { element, shape })
}

/// Most characters an element takes with its separator (`-2.2250738585072014e-308, `).
const ELEMENT_TEXT: usize = 26;

/// `rank R: result I = [v0, v1, ...]` for a result's view. A result too
/// large to copy or to format in the memory there is is an error naming
/// it, not an abort.
fn result_line(rank: usize, index: usize, element: ElementType, view: &StridedView) -> Result<String, String> {
    let cannot = |what: &str, bytes: usize, error: std::collections::TryReserveError| {
        format!("result {index}: cannot {what}: {bytes} bytes do not fit in memory ({error})")
    };
    let bytes = view.try_read().map_err(|e| cannot("copy its elements to print them", view.packed_len(), e))?;
    let text = view.numel().saturating_mul(ELEMENT_TEXT).saturating_add(64);
    let mut line = String::new();
    line.try_reserve(text).map_err(|e| cannot("format its elements", text, e))?;
    line.push_str(&format!("rank {rank}: result {index} = ["));
    for (k, b) in bytes.chunks_exact(element.size()).enumerate() {
        if k > 0 {
            line.push_str(", ");
        }
        push_value(&mut line, element, b);
    }
    line.push(']');
    Ok(line)
}

/// Appends one element (`b`: its bytes) in its printed form.
fn push_value(line: &mut String, element: ElementType, b: &[u8]) {
    use std::fmt::Write as _;
    let _ = match element {
        ElementType::I1 => write!(line, "{}", u8::from(b[0] != 0)),
        ElementType::I8 => write!(line, "{}", b[0] as i8),
        ElementType::I16 => write!(line, "{}", i16::from_ne_bytes([b[0], b[1]])),
        ElementType::F16 => write!(line, "{}", format_f32(f16::from_ne_bytes([b[0], b[1]]).to_f32())),
        ElementType::BF16 => write!(line, "{}", format_f32(bf16::from_ne_bytes([b[0], b[1]]).to_f32())),
        ElementType::I32 => write!(line, "{}", i32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        ElementType::F32 => write!(line, "{}", format_f32(f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))),
        ElementType::I64 | ElementType::Index => write!(line, "{}", i64::from_ne_bytes(b.try_into().unwrap_or([0; 8]))),
        ElementType::F64 => write!(line, "{}", format_f64(f64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))),
    };
}

/// Shortest round-trip form (`2`, `0.1`, `-1.5e-7`, `nan`, `inf`).
fn format_f32(v: f32) -> String {
    format_float(format!("{v:?}"))
}

fn format_f64(v: f64) -> String {
    format_float(format!("{v:?}"))
}

fn format_float(text: String) -> String {
    match text.as_str() {
        "NaN" => "nan".into(),
        "inf" | "-inf" => text,
        _ => text.strip_suffix(".0").map(str::to_string).unwrap_or(text),
    }
}

/// The compiled entry function and its result types.
struct Program {
    _jit: Jit,
    address: usize,
    results: Vec<ResultType>,
    /// Every `dist.mesh` of the module: its name, ranks and position.
    meshes: Vec<(String, i64, String)>,
}

// SAFETY: the engine is not touched after compilation; every rank thread
// only calls the compiled code, which keeps no state outside its arguments
// and the runtime (which is thread-safe).
unsafe impl Send for Program {}
// SAFETY: as above.
unsafe impl Sync for Program {}

fn compile(options: &Options) -> Result<Program, String> {
    let (name, bytes) = crate::tools::cli::read_input(Some(options.input.as_os_str())).map_err(|e| e.to_string())?;
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let report = |sink: &DiagnosticSink| sink.take().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    let Some(mut module) = crate::tools::opt::parse_module(&context, &sink, &bytes, &name) else {
        return Err(format!("cannot parse the input\n{}", report(&sink)));
    };
    let functions: Vec<_> = collect_ops(module.as_operation()).into_iter().filter(|op| name_of(*op) == "func.func").collect();
    let function = functions.iter().copied().find(|op| str_attr(*op, "sym_name") == Some(options.entry.as_str())).ok_or_else(|| {
        // The nearest defined function (not a declaration), if one is near.
        let defined: Vec<&str> = functions
            .iter()
            .filter(|op| op.region(0).ok().and_then(|r| r.first_block()).is_some())
            .filter_map(|op| str_attr(*op, "sym_name"))
            .collect();
        let hint = crate::tools::suggest::suggest(&options.entry, &defined).map(|f| format!("; did you mean '@{f}'?")).unwrap_or_default();
        format!("{name}: no function '@{}' in the module{hint}", options.entry)
    })?;
    let location = crate::dialect::verify::checker::position_of(function);
    let function_type = function.attribute("function_type").map(attribute_text).unwrap_or_default();
    let (inputs, outputs) =
        split_function_type(&function_type).ok_or_else(|| format!("{location}: '@{}' has type {function_type}", options.entry))?;
    if !inputs.is_empty() {
        return Err(format!(
            "{location}: '@{}' takes arguments ({}); blueprint-run calls functions without arguments",
            options.entry,
            inputs.join(", ")
        ));
    }
    if function.region(0).ok().and_then(|r| r.first_block()).is_none() {
        return Err(format!("{location}: '@{}' is only declared", options.entry));
    }
    let results = outputs
        .iter()
        .map(|t| result_type(t).map_err(|e| format!("{location}: '@{}' {e}", options.entry)))
        .collect::<Result<Vec<_>, _>>()?;
    // The C interface takes the out-params as descriptor pointers.
    let unit = melior::ir::Attribute::unit(&context);
    let key = "llvm.emit_c_interface";
    // SAFETY: the op and attribute are live in `context`.
    unsafe {
        mlir_sys::mlirOperationSetAttributeByName(
            function.to_raw(),
            mlir_sys::MlirStringRef { data: key.as_ptr().cast(), length: key.len() },
            unit.to_raw(),
        )
    };
    let meshes = collect_ops(module.as_operation())
        .into_iter()
        .filter(|op| crate::ir::ods::OpKind::of(*op) == Some(crate::ir::ods::OpKind::DistMesh))
        .filter_map(|op| {
            let (name, mesh) = crate::dialect::dist::mesh::Mesh::read(op)?;
            Some((name, mesh.size(), crate::dialect::verify::checker::position_of(op)))
        })
        .collect();
    let pipeline = if options.lower_to_mpi { TO_LLVM_VIA_MPI_PIPELINE } else { TO_LLVM_PIPELINE };
    if let Err(e) = run_pipeline(&context, &mut module, pipeline) {
        return Err(format!("{e}\n{}", report(&sink)));
    }
    let jit = Jit::with_libraries(&module, &symbols(), &crate::tools::execution::runner_utils())
        .map_err(|e| format!("{e}\n{}", report(&sink)))?;
    let address = jit.lookup(&format!("_mlir_ciface_{}", options.entry)).map_err(|e| e.to_string())? as usize;
    Ok(Program { _jit: jit, address, results, meshes })
}

/// `(inputs, results)` of a function type's text `(a, b) -> (c, d)`.
fn split_function_type(text: &str) -> Option<(Vec<String>, Vec<String>)> {
    let (inputs, results) = split_top(text, "->")?;
    let list = |s: &str| -> Vec<String> {
        let s = s.trim();
        let s = s.strip_prefix('(').and_then(|s| s.strip_suffix(')')).unwrap_or(s);
        let mut out = Vec::new();
        let mut depth = 0i32;
        let mut current = String::new();
        for c in s.chars() {
            match c {
                '<' | '(' | '[' | '{' => depth += 1,
                '>' | ')' | ']' | '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(current.trim().to_string());
                    current.clear();
                    continue;
                }
                _ => {}
            }
            current.push(c);
        }
        if !current.trim().is_empty() {
            out.push(current.trim().to_string());
        }
        out
    };
    Some((list(&inputs), list(&results)))
}

/// Splits at the first `sep` outside brackets.
fn split_top(text: &str, sep: &str) -> Option<(String, String)> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' => depth -= 1,
            _ if depth == 0 && text[i..].starts_with(sep) => return Some((text[..i].to_string(), text[i + sep.len()..].to_string())),
            _ => {}
        }
    }
    None
}

/// Calls the entry function once on the calling rank; returns the
/// formatted result lines.
///
/// A public function keeps its memref results (buffer-results-to-out-params
/// leaves public signatures alone), so `_mlir_ciface_FUNC` takes one pointer
/// to where it stores the struct of result descriptors (none without
/// results); the descriptors point to buffers the program allocated.
fn call(program: &Program, rank: usize) -> Result<Vec<String>, String> {
    let words: usize = program.results.iter().map(|t| 3 + 2 * t.shape.len()).sum();
    let mut descriptors = vec![0i64; words.max(1)];
    // SAFETY: the function was compiled from a signature without arguments
    // whose results are these memrefs.
    unsafe {
        if program.results.is_empty() {
            std::mem::transmute::<usize, unsafe extern "C" fn()>(program.address)();
        } else {
            std::mem::transmute::<usize, unsafe extern "C" fn(*mut i64)>(program.address)(descriptors.as_mut_ptr());
        }
    }
    let mut lines = Vec::new();
    let mut at = 0;
    for (i, t) in program.results.iter().enumerate() {
        let rank_of = t.shape.len() as i64;
        // SAFETY: `at` starts the i-th descriptor the call stored, of this rank.
        let view = unsafe { StridedView::from_unranked("result", rank_of, descriptors[at..].as_ptr().cast(), t.element.size()) }
            .map_err(|e| format!("result {i}: {e}"))?;
        at += 3 + 2 * t.shape.len();
        lines.push(result_line(rank, i, t.element, &view)?);
    }
    Ok(lines)
}

/// How a failing rank's error is printed.
fn error_line(rank: usize, op: Option<&str>, error: &RtError) -> String {
    match op {
        Some(op) => format!("rank {rank}: error: op {op}: {error}"),
        None => format!("rank {rank}: error: {error}"),
    }
}

enum Event {
    Done(usize, Vec<String>),
    Failed(usize),
}

fn run(options: &Options) -> Result<(), String> {
    let mpi_mode = options.mpi || under_mpi_launcher();
    if mpi_mode {
        // Before compiling: MPICH is then loaded (globally) for code that
        // calls MPI itself (--lower-to-mpi).
        mpi::init(options.timeout).map_err(|e| format!("cannot start MPI: {e}"))?;
    }
    let program = compile(options)?;
    if mpi_mode {
        return run_mpi(options, &program);
    }
    let world = World::with_timeout(options.ranks, options.timeout);
    let (events, receive) = mpsc::channel::<Event>();
    let hook_events = Mutex::new(events.clone());
    let hook_world = Arc::clone(&world);
    set_stop_hook(Box::new(move |rank, op, error| {
        report(&error_line(rank, op, error));
        // Its peers stop waiting for it at once, instead of at the timeout.
        hook_world.fail_rank(rank, &error.to_string());
        if let Ok(events) = hook_events.lock() {
            let _ = events.send(Event::Failed(rank));
        }
        // This rank stops here; the driver ends the process.
        loop {
            std::thread::park();
        }
    }));
    crash::install();
    let program = Arc::new(program);
    let mut threads = Vec::with_capacity(options.ranks);
    for rank in 0..options.ranks {
        let (world, program, events) = (Arc::clone(&world), Arc::clone(&program), events.clone());
        let thread = std::thread::Builder::new()
            .name(format!("bprt-rank-{rank}"))
            .stack_size(64 << 20)
            .spawn(move || {
                crash::register_rank_thread(rank);
                let Ok(_guard) = world.bind(rank) else { return };
                let event = match call(&program, rank) {
                    Ok(lines) => Event::Done(rank, lines),
                    Err(e) => {
                        report(&format!("rank {rank}: error: {e}"));
                        Event::Failed(rank)
                    }
                };
                let _ = events.send(event);
            })
            .map_err(|e| format!("cannot start rank {rank}: {e}"))?;
        threads.push(thread);
    }
    drop(events);
    let mut lines: Vec<Option<Vec<String>>> = vec![None; options.ranks];
    let mut failed: Vec<usize> = Vec::new();
    let mut settled = 0;
    // After a failure the others get until their own waits time out to
    // report (a peer's failure reaches them at once when they wait for it).
    let mut deadline: Option<Instant> = None;
    while settled < options.ranks {
        let event = match deadline {
            None => receive.recv().map_err(|_| "a rank thread ended without a result".to_string())?,
            Some(d) => match receive.recv_timeout(d.saturating_duration_since(Instant::now())) {
                Ok(e) => e,
                Err(_) => break,
            },
        };
        settled += 1;
        match event {
            Event::Done(rank, l) => lines[rank] = Some(l),
            Event::Failed(rank) => {
                failed.push(rank);
                deadline.get_or_insert_with(|| Instant::now() + options.timeout + Duration::from_millis(500));
            }
        }
    }
    if !failed.is_empty() {
        let mut stdout = std::io::stdout().lock();
        for (rank, l) in lines.iter().enumerate() {
            if let Some(l) = l {
                for line in l {
                    let _ = writeln!(stdout, "{line}");
                }
            } else if !failed.contains(&rank) {
                report(&format!("rank {rank}: stopped: rank {} failed", failed[0]));
            }
        }
        let _ = stdout.flush();
        std::process::exit(1);
    }
    // Every rank thread ends before the compiled code goes.
    for thread in threads {
        let _ = thread.join();
    }
    let mut stdout = std::io::stdout().lock();
    for line in lines.into_iter().flatten().flatten() {
        writeln!(stdout, "{line}").map_err(|e| format!("cannot write the results: {e}"))?;
    }
    Ok(())
}

/// Why a `--lower-to-mpi` program cannot run on a world of `ranks`
/// processes: a mesh of another size.
fn world_mismatch(meshes: &[(String, i64, String)], ranks: usize) -> Option<String> {
    let (name, size, at) = meshes.iter().find(|(_, size, _)| usize::try_from(*size).ok() != Some(ranks))?;
    let launcher = if under_mpi_launcher() { "" } else { " (no MPI launcher detected)" };
    Some(format!(
        "{at}: mesh @{name} has {size} ranks, but MPI_COMM_WORLD has {ranks}{launcher}: --lower-to-mpi runs every collective on MPI_COMM_WORLD, so the world must be the mesh; run it with mpirun -np {size}"
    ))
}

fn run_mpi(options: &Options, program: &Program) -> Result<(), String> {
    let world = mpi::init(options.timeout).map_err(|e| format!("cannot start MPI: {e}"))?;
    set_stop_hook(Box::new(move |rank, op, error| {
        report(&error_line(rank, op, error));
        // Give the other ranks a moment to report the same mismatch.
        std::thread::sleep(Duration::from_millis(500));
        if let Some(world) = mpi::active() {
            world.abort(1);
        }
        std::process::exit(1);
    }));
    let rank = world.rank();
    crash::install();
    crash::set_process_rank(rank);
    if options.lower_to_mpi {
        // Checked on every rank before any collective: the lowered program
        // runs them on MPI_COMM_WORLD and takes the mesh's size as a constant.
        if let Some(message) = world_mismatch(&program.meshes, world.nranks()) {
            world.finalize();
            if rank == 0 {
                return Err(message);
            }
            std::process::exit(1);
        }
    }
    let lines = call(program, rank).map_err(|e| format!("rank {rank}: {e}"))?;
    // Ranks print in turn (the launcher may still interleave its streams).
    for r in 0..world.nranks() {
        world.barrier();
        if r == rank {
            let mut stdout = std::io::stdout().lock();
            for line in &lines {
                let _ = writeln!(stdout, "{line}");
            }
            let _ = stdout.flush();
        }
    }
    world.barrier();
    world.finalize();
    Ok(())
}

/// A rank that crashes (a signal: invalid memory access, an abort outside
/// the program's own `abort()` call, ...) is named on stderr before the
/// process ends with status 1: in-process every rank is a thread of one
/// process, so the crash ends them all; under MPI the launcher then ends
/// the others. The handler only writes a preformatted line and exits
/// (async-signal-safe).
mod crash {
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

    /// `pthread_self()` of each in-process rank's thread (0: none).
    static RANK_THREADS: [AtomicU64; 4096] = [const { AtomicU64::new(0) }; 4096];
    /// This process's MPI rank (-1: in-process ranks).
    static PROCESS_RANK: AtomicI64 = AtomicI64::new(-1);

    const SIGNALS: [(libc::c_int, &str); 5] = [
        (libc::SIGSEGV, "SIGSEGV (invalid memory access)"),
        (libc::SIGBUS, "SIGBUS (invalid memory access)"),
        (libc::SIGFPE, "SIGFPE (arithmetic fault)"),
        (libc::SIGILL, "SIGILL (illegal instruction)"),
        (libc::SIGABRT, "SIGABRT (aborted)"),
    ];

    pub(super) fn register_rank_thread(rank: usize) {
        if let Some(slot) = RANK_THREADS.get(rank) {
            // SAFETY: no preconditions.
            slot.store(unsafe { libc::pthread_self() } as u64, Ordering::Relaxed);
        }
    }

    pub(super) fn set_process_rank(rank: usize) {
        PROCESS_RANK.store(rank as i64, Ordering::Relaxed);
    }

    /// Installs the handler for the crash signals (on the alternate signal
    /// stack Rust gives its threads, so a stack overflow is reported too).
    pub(super) fn install() {
        for (signal, _) in SIGNALS {
            // SAFETY: a zeroed sigaction with a valid handler and an empty mask.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_crash as extern "C" fn(libc::c_int) as usize;
                action.sa_flags = libc::SA_ONSTACK | libc::SA_RESETHAND;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    }

    fn rank_of_this_thread() -> Option<u64> {
        if let Ok(rank) = u64::try_from(PROCESS_RANK.load(Ordering::Relaxed)) {
            return Some(rank);
        }
        // SAFETY: async-signal-safe.
        let me = unsafe { libc::pthread_self() } as u64;
        RANK_THREADS.iter().position(|t| t.load(Ordering::Relaxed) == me).map(|r| r as u64)
    }

    extern "C" fn on_crash(signal: libc::c_int) {
        let mut line = [0u8; 160];
        let mut at = 0;
        let mut push = |bytes: &[u8]| {
            for &b in bytes {
                if at < line.len() {
                    line[at] = b;
                    at += 1;
                }
            }
        };
        if let Some(rank) = rank_of_this_thread() {
            push(b"rank ");
            let mut digits = [0u8; 20];
            let (mut n, mut k) = (rank, digits.len());
            loop {
                k -= 1;
                digits[k] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            push(&digits[k..]);
            push(b": ");
        }
        push(b"error: the program crashed: ");
        let name = SIGNALS.iter().find(|(s, _)| *s == signal).map_or("a signal", |(_, name)| name);
        push(name.as_bytes());
        push(b"\n");
        // SAFETY: write and _exit are async-signal-safe; `line[..at]` is initialized.
        unsafe {
            libc::write(2, line.as_ptr().cast(), at);
            libc::_exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments() {
        let o = parse_args(&args(&["f.mlir", "-e", "main", "--ranks", "4", "--timeout=2.5"])).expect("valid");
        assert_eq!(
            (o.input.to_str(), o.entry.as_str(), o.ranks, o.timeout, o.mpi),
            (Some("f.mlir"), "main", 4, Duration::from_millis(2500), false)
        );
        assert!(parse_args(&args(&["f.mlir"])).unwrap_err().contains("-e FUNC"));
        assert!(parse_args(&args(&["-e", "m"])).unwrap_err().contains("no input"));
        assert!(parse_args(&args(&["f", "-e", "m", "--ranks", "0"])).unwrap_err().contains("--ranks '0'"));
        assert!(parse_args(&args(&["f", "-e", "m", "--timeout", "-1"])).unwrap_err().contains("--timeout '-1'"));
        assert!(parse_args(&args(&["f", "-e"])).unwrap_err().contains("needs a value"));
        assert!(parse_args(&args(&["f", "-e", "m", "--bogus"])).unwrap_err().contains("'--bogus'"));
        assert!(parse_args(&args(&["--help"])).expect("help").help);
        // Paths keep their bytes; text options must be UTF-8.
        use std::os::unix::ffi::OsStringExt;
        let bytes = |b: &[u8]| OsString::from_vec(b.to_vec());
        let o = parse_args(&[
            bytes(b"in\xff.mlir"),
            "--train-step".into(),
            "--params".into(),
            bytes(b"p\xfe"),
            "--inputs".into(),
            "i".into(),
            "-o".into(),
            bytes(b"out\xff.safetensors"),
        ])
        .expect("valid");
        assert_eq!((o.input, o.params, o.output), (bytes(b"in\xff.mlir"), Some(bytes(b"p\xfe")), Some(bytes(b"out\xff.safetensors"))));
        assert!(parse_args(&[bytes(b"f"), "-e".into(), bytes(b"m\xff")]).unwrap_err().contains("-e 'm\u{fffd}' is not UTF-8"));
    }

    #[test]
    fn result_types() {
        assert_eq!(result_type("tensor<2x3xf32>"), Ok(ResultType { element: ElementType::F32, shape: vec![2, 3] }));
        assert_eq!(result_type("memref<4xindex>"), Ok(ResultType { element: ElementType::Index, shape: vec![4] }));
        assert_eq!(result_type("tensor<bf16>"), Ok(ResultType { element: ElementType::BF16, shape: vec![] }));
        assert!(result_type("tensor<?xf32>").unwrap_err().contains("static shape"));
        assert!(result_type("i32").unwrap_err().contains("only tensors and memrefs"));
        assert!(result_type("tensor<2xf8E4M3FN>").unwrap_err().contains("element type"));
        assert!(result_type("memref<2xf32, strided<[2]>>").unwrap_err().contains("layout"));
    }

    #[test]
    fn function_types_and_floats() {
        let (i, r) = split_function_type("() -> (tensor<2x2xf32>, memref<4xi64>)").expect("splits");
        assert!(i.is_empty());
        assert_eq!(r, vec!["tensor<2x2xf32>", "memref<4xi64>"]);
        let (i, r) = split_function_type("(i64) -> tensor<4xf32>").expect("splits");
        assert_eq!((i, r), (vec!["i64".to_string()], vec!["tensor<4xf32>".to_string()]));
        assert_eq!(format_f32(2.0), "2");
        assert_eq!(format_f32(0.1), "0.1");
        assert_eq!(format_f64(-1.5e-7), "-1.5e-7");
        assert_eq!(format_f32(f32::NAN), "nan");
        assert_eq!(format_f64(f64::NEG_INFINITY), "-inf");
        assert_eq!(format_f32(16_777_217.0), "16777216");
    }
}
