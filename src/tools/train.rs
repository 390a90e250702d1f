//! `blueprint-run STEP.mlir --train-step --params P --inputs I -o OUT`:
//! one training step of ModelIR, run on one rank.
//!
//! The step is ModelIR of a float32 training spec (coarse or decomposed;
//! coarse ops are decomposed first). `convert-model-to-linalg` makes it
//! `@train_step`, whose arguments and results carry EXECUTION.md's tensor
//! names; the standard bufferization + LLVM pipeline lowers it and the JIT
//! runs it. Every argument is read from the parameter or input file by
//! name, checked (present once, float32, the shape the step says) before
//! anything runs; the outputs are written to one safetensors file, or
//! nothing at all on an error.

use std::{ffi::c_void, path::Path};

use melior::ir::{
    attribute::{ArrayAttribute, DictionaryAttribute, StringAttribute, TypeAttribute},
    operation::OperationLike,
    r#type::FunctionType,
    Module, OperationRef, Type,
};
use safetensors::{tensor::TensorView, Dtype, SafeTensors};

use crate::{
    analysis::workload::{Datatype, TrainingSpec},
    conversion::model_to_linalg::{Split, NAME_ATTRIBUTE, SPLIT_ATTRIBUTE, TRAIN_STEP},
    dialect::model::binding::{read_spec, TRAINING_SPEC},
    ir::{
        context::create_context,
        diagnostics::DiagnosticSink,
        ods::OpKind,
        read::{collect_ops, name_of, str_attr, tensor_shape},
    },
    runtime::OwnedMemRef,
    tools::execution::{run_pipeline, Jit, TRAIN_STEP_TO_LLVM_PIPELINE},
};

/// What `--train-step` reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrainOptions {
    /// Paths as given (not necessarily UTF-8).
    pub step: std::ffi::OsString,
    pub params: std::ffi::OsString,
    pub inputs: std::ffi::OsString,
    pub output: std::ffi::OsString,
    /// In-process ranks of a derived program's step (default: its mesh's).
    pub ranks: Option<usize>,
    /// Print what the runtime communicated (`--comm-report`).
    pub comm_report: bool,
}

/// One argument or result of `@train_step`: its tensor name and shape
/// (a rank's), and how the whole tensor is split over the mesh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    pub name: String,
    pub shape: Vec<i64>,
    /// The dimensions split over mesh axes (none: whole on every rank).
    pub splits: Vec<Split>,
}

impl Tensor {
    /// Elements of the tensor.
    #[must_use]
    pub fn len(&self) -> usize {
        self.shape.iter().map(|d| usize::try_from(*d).unwrap_or(0)).product()
    }

    /// Whether the tensor has no elements (a zero dimension).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The signature of `@train_step`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
    /// The mesh a derived program's step runs on (axes, shape); `None`:
    /// the one-rank step of ModelIR.
    pub mesh: Option<(Vec<String>, Vec<i64>)>,
    /// A pipelined step's functions, one per stage in stage order (the
    /// inputs and outputs above are their union); empty: one `@train_step`.
    pub stages: Vec<Stage>,
    /// The phase of each communication op of the step, by the name the
    /// runtime knows it by (its `id`, or the transfer a `dist.p2p` end
    /// makes).
    pub phases: std::collections::BTreeMap<String, String>,
}

/// One pipeline stage's step function and its tensors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    pub function: String,
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
}

/// Runs one step; returns the messages to print on success.
///
/// # Errors
/// A message naming the file, tensor or op at fault; `options.output` is
/// not written.
pub fn run_train_step(options: &TrainOptions) -> Result<(), String> {
    let result = train_step(options);
    // Under MPI an error ends every process of the job (the others may be
    // waiting for this one), with this message once.
    if let (Err(message), Some(world)) = (&result, crate::runtime::mpi::active()) {
        crate::tools::cli::report(&format!("blueprint-run: rank {}: {message}", world.rank()));
        world.abort(1);
    }
    result
}

/// Reads a safetensors file whose header is checked before its data is
/// read: the header length the first 8 bytes state fits the file (and the
/// format's 100 MB bound), and the header names no tensor twice (a JSON
/// object read into a map would silently keep the last entry).
fn read_safetensors(path: &std::path::Path, name: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    const MAX_HEADER: u64 = 100_000_000;
    let not_st = |why: String| format!("'{name}' is not a safetensors file: {why}");
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot read '{name}': {e}"))?;
    let len = file.metadata().map_err(|e| format!("cannot read '{name}': {e}"))?.len();
    let mut prefix = [0u8; 8];
    file.read_exact(&mut prefix).map_err(|_| not_st(format!("{len} bytes, shorter than the 8-byte header length")))?;
    let header_len = u64::from_le_bytes(prefix);
    if header_len > MAX_HEADER || header_len > len - 8 {
        return Err(not_st(format!("its header length {header_len} exceeds the file ({len} bytes) or the format's {MAX_HEADER}")));
    }
    #[allow(clippy::cast_possible_truncation)] // at most MAX_HEADER
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header).map_err(|e| format!("cannot read '{name}': {e}"))?;
    if let Some(twice) = first_repeated_key(&header) {
        return Err(format!("'{name}' names tensor '{twice}' twice in its header"));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    bytes.extend_from_slice(&prefix);
    bytes.extend_from_slice(&header);
    file.read_to_end(&mut bytes).map_err(|e| format!("cannot read '{name}': {e}"))?;
    Ok(bytes)
}

/// The first key a JSON object's text repeats (None for anything else: a
/// malformed header is the safetensors parser's to report).
fn first_repeated_key(json: &[u8]) -> Option<String> {
    struct Keys;
    impl<'de> serde::de::Visitor<'de> for Keys {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut seen = std::collections::HashSet::new();
            let mut repeated = None;
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<serde::de::IgnoredAny>()?;
                if repeated.is_none() && !seen.insert(key.clone()) {
                    repeated = Some(key);
                }
            }
            Ok(repeated)
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    serde::Deserializer::deserialize_map(&mut deserializer, Keys).ok().flatten()
}

fn train_step(options: &TrainOptions) -> Result<(), String> {
    let (name, bytes) = crate::tools::cli::read_input(Some(options.step.as_os_str())).map_err(|e| e.to_string())?;
    let context = create_context();
    let sink = DiagnosticSink::attach(&context);
    let report = |sink: &DiagnosticSink| sink.take().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    let mut module = crate::tools::opt::parse_module(&context, &sink, &bytes, &name)
        .ok_or_else(|| format!("cannot parse the step\n{}", report(&sink)))?;
    let signature = prepare(&context, &mut module).map_err(|e| with_diagnostics(e, &report(&sink)))?;
    // Every input, read and checked before anything runs.
    let (params_name, inputs_name) = (options.params.to_string_lossy(), options.inputs.to_string_lossy());
    let params = read_safetensors(std::path::Path::new(&options.params), &params_name)?;
    let inputs = read_safetensors(std::path::Path::new(&options.inputs), &inputs_name)?;
    let params = SafeTensors::deserialize(&params).map_err(|e| format!("'{params_name}' is not a safetensors file: {e}"))?;
    let inputs = SafeTensors::deserialize(&inputs).map_err(|e| format!("'{inputs_name}' is not a safetensors file: {e}"))?;
    let files = [(params_name.as_ref(), &params), (inputs_name.as_ref(), &inputs)];
    // A derived program's step takes a rank's slices: the files hold the
    // whole tensors, checked whole; the world must be the mesh.
    let mesh = signature.mesh.clone();
    // Under an MPI launcher each process is one rank of the mesh.
    let mpi = if mesh.is_some() && crate::runtime::mpi::under_launcher() {
        Some(crate::runtime::mpi::init(crate::runtime::DEFAULT_TIMEOUT).map_err(|e| format!("cannot start MPI: {e}"))?)
    } else {
        None
    };
    if let Some((axes, shape)) = &mesh {
        let size: i64 = shape.iter().product();
        let (ranks, flag) = match mpi {
            Some(world) => (world.nranks(), "MPI_COMM_WORLD has"),
            None => (options.ranks.unwrap_or(usize::try_from(size).unwrap_or(0)), "--ranks"),
        };
        if i64::try_from(ranks).ok() != Some(size) {
            let message = format!(
                "{flag} {ranks}, but the step's mesh ({}) has {size} ranks: a derived program runs on its whole mesh",
                mesh_text(axes, shape)
            );
            // Under MPI every process finds it; one says so.
            if let Some(world) = mpi {
                if world.rank() == 0 {
                    crate::tools::cli::report(&format!("blueprint-run: {message}"));
                }
                world.finalize();
                std::process::exit(1);
            }
            return Err(message);
        }
    } else if let Some(ranks) = options.ranks.filter(|r| *r != 1) {
        return Err(format!(
            "--ranks {ranks}: a ModelIR step runs on one rank; distribute it (distribute-transformer-training) to run it on more"
        ));
    }
    let whole_inputs: Vec<Tensor> = signature.inputs.iter().map(|t| whole(t, mesh.as_ref())).collect::<Result<_, _>>()?;
    let whole_outputs: Vec<Tensor> = signature.outputs.iter().map(|t| whole(t, mesh.as_ref())).collect::<Result<_, _>>()?;
    let mut arguments = Vec::new();
    for tensor in &whole_inputs {
        arguments.push(read_tensor(&files, tensor)?);
    }
    for (file, tensors) in files {
        let known: Vec<&str> = signature.inputs.iter().map(|t| t.name.as_str()).collect();
        let mut extra: Vec<&str> = tensors.names().into_iter().filter(|n| !known.contains(n)).collect();
        extra.sort_unstable();
        if let Some(name) = extra.first() {
            return Err(format!("'{file}' holds tensor '{name}', which the step does not take ({} such tensors)", extra.len()));
        }
    }
    let phases = signature.phases.clone();
    let step = CompiledStep::compile(&context, module, signature).map_err(|e| with_diagnostics(e, &report(&sink)))?;
    let outputs = match &mesh {
        None => step.run(arguments)?,
        Some((_, shape)) => match step.run_ranks(&whole_inputs, arguments, shape, &whole_outputs, mpi)? {
            Some(outputs) => outputs,
            // Another MPI rank than 0: rank 0 writes the outputs.
            None => {
                if options.comm_report {
                    print_comm_report(&crate::runtime::comm_count::take(), &phases);
                }
                if let Some(world) = mpi {
                    world.barrier();
                    world.finalize();
                }
                return Ok(());
            }
        },
    };
    let signature = Signature { inputs: whole_inputs, outputs: whole_outputs, mesh, stages: Vec::new(), phases: Default::default() };
    let signature = &signature;
    let views: Vec<(String, TensorView)> = signature
        .outputs
        .iter()
        .zip(&outputs)
        .map(|(t, data)| {
            let shape = t.shape.iter().map(|d| usize::try_from(*d).unwrap_or(0)).collect();
            TensorView::new(Dtype::F32, shape, bytemuck_f32(data))
                .map(|v| (t.name.clone(), v))
                .map_err(|e| format!("cannot store '{}': {e}", t.name))
        })
        .collect::<Result<_, _>>()?;
    let bytes = safetensors::serialize(views, None).map_err(|e| format!("cannot serialize the outputs: {e}"))?;
    let written = crate::tools::cli::write_file_atomically(Path::new(&options.output), &bytes)
        .map_err(|e| format!("cannot write '{}': {e}", options.output.to_string_lossy()));
    if options.comm_report && written.is_ok() {
        print_comm_report(&crate::runtime::comm_count::take(), &phases);
    }
    if let Some(world) = mpi {
        world.barrier();
        world.finalize();
    }
    written
}

fn with_diagnostics(message: String, diagnostics: &str) -> String {
    if diagnostics.is_empty() {
        message
    } else {
        format!("{diagnostics}\n{message}")
    }
}

/// Decomposes coarse ops, checks the spec, lowers to `@train_step` on
/// tensors; returns its signature (the module is left at tensors).
///
/// # Errors
/// A message naming what is missing or not executable.
pub fn prepare(context: &melior::Context, module: &mut Module) -> Result<Signature, String> {
    let top = module.as_operation();
    if top.attribute(TRAINING_SPEC).is_err() {
        return Err(format!(
            "the step has no training spec ('{TRAINING_SPEC}'): import one with blueprint-translate --import-transformer-training"
        ));
    }
    let spec: TrainingSpec =
        read_spec(top, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string())).map_err(|e| e.to_string())?;
    if spec.workload.datatype != Datatype::Float32 {
        let found = crate::transforms::transformer::import::datatype_name(spec.workload.datatype);
        return Err(format!("the step's datatype is {found} (workload.datatype): --train-step executes float32 steps only"));
    }
    let ops = collect_ops(top);
    let mesh = ops
        .iter()
        .find(|op| OpKind::of(**op) == Some(OpKind::DistPipeline))
        .map(|pipeline| {
            let name = crate::ir::read::symbol_attr(*pipeline, "mesh").unwrap_or_default();
            ops.iter()
                .filter_map(|op| crate::dialect::dist::mesh::Mesh::read(*op))
                .find(|(n, _)| n == name)
                .map(|(_, m)| (m.axes, m.shape))
                .ok_or_else(|| format!("the step's pipeline names mesh @{name}, which is not in the module"))
        })
        .transpose()?;
    if mesh.is_some() {
        // A derived program (distribute-transformer-training): one rank's step.
        run_pipeline(context, module, "builtin.module(convert-dist-step-to-linalg)").map_err(|e| e.to_string())?;
    } else {
        if ops.iter().any(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderTraining)) {
            run_pipeline(context, module, "builtin.module(model-decompose-transformer)").map_err(|e| e.to_string())?;
        }
        run_pipeline(context, module, "builtin.module(convert-model-to-linalg)").map_err(|e| e.to_string())?;
    }
    // The step: @train_step, or one @train_step_s<k> per pipeline stage.
    let is_step = |name: Option<&str>| {
        name.is_some_and(|n| {
            n == TRAIN_STEP || n.strip_prefix(TRAIN_STEP).and_then(|r| r.strip_prefix("_s")).is_some_and(|k| k.parse::<u64>().is_ok())
        })
    };
    let functions: Vec<OperationRef> = collect_ops(module.as_operation())
        .into_iter()
        .filter(|op| name_of(*op) == "func.func" && is_step(str_attr(*op, "sym_name")))
        .collect();
    if functions.is_empty() {
        return Err("the lowering made no @train_step".into());
    }
    // Only the step runs: the block functions as written are dropped
    // (private, then `symbol-dce` at the start of the lowering).
    let private = melior::ir::attribute::StringAttribute::new(context, "private");
    for op in collect_ops(module.as_operation()) {
        if name_of(op) == "func.func" && !is_step(str_attr(op, "sym_name")) && op.attribute("sym_visibility").is_err() {
            // SAFETY: a live op and attribute of `context`.
            unsafe {
                let key = "sym_visibility";
                mlir_sys::mlirOperationSetAttributeByName(
                    op.to_raw(),
                    mlir_sys::MlirStringRef { data: key.as_ptr().cast(), length: key.len() },
                    melior::ir::AttributeLike::to_raw(&private),
                );
            }
        }
    }
    if let [function] = functions[..] {
        if str_attr(function, "sym_name") == Some(TRAIN_STEP) {
            let mut signature = signature(function)?;
            signature.mesh = mesh;
            signature.phases = communication_phases(module);
            return Ok(signature);
        }
    }
    // A pipelined step: the union of the stages' tensors, by name.
    let mut stages: Vec<(u64, Stage)> = Vec::new();
    for function in functions {
        let name = str_attr(function, "sym_name").unwrap_or_default().to_string();
        let k = name.rsplit("_s").next().and_then(|k| k.parse::<u64>().ok()).unwrap_or(0);
        let s = signature(function)?;
        stages.push((k, Stage { function: name, inputs: s.inputs, outputs: s.outputs }));
    }
    stages.sort_by_key(|(k, _)| *k);
    let mut all = Signature { inputs: Vec::new(), outputs: Vec::new(), mesh, stages: Vec::new(), phases: communication_phases(module) };
    for (_, stage) in &stages {
        for t in &stage.inputs {
            if !all.inputs.iter().any(|u| u.name == t.name) {
                all.inputs.push(t.clone());
            }
        }
        all.outputs.extend(stage.outputs.iter().cloned());
    }
    all.stages = stages.into_iter().map(|(_, s)| s).collect();
    Ok(all)
}

/// The names and shapes of `@train_step`'s arguments and results.
fn signature(function: OperationRef) -> Result<Signature, String> {
    let ty = function
        .attribute("function_type")
        .ok()
        .and_then(|a| TypeAttribute::try_from(a).ok())
        .and_then(|t| FunctionType::try_from(t.value()).ok())
        .ok_or("@train_step has no function type")?;
    let names = |key: &str| -> Vec<String> {
        let Some(array) = function.attribute(key).ok().and_then(|a| ArrayAttribute::try_from(a).ok()) else { return Vec::new() };
        (0..array.len())
            .map(|i| {
                array
                    .element(i)
                    .ok()
                    .and_then(|d| DictionaryAttribute::try_from(d).ok())
                    .and_then(|d| d.element_by_name(NAME_ATTRIBUTE))
                    .and_then(|s| StringAttribute::try_from(s).ok())
                    .map(|s| s.value().to_string())
                    .unwrap_or_default()
            })
            .collect()
    };
    let splits = |key: &str| -> Vec<Vec<Split>> {
        let Some(array) = function.attribute(key).ok().and_then(|a| ArrayAttribute::try_from(a).ok()) else { return Vec::new() };
        (0..array.len())
            .map(|i| {
                let Some(list) = array
                    .element(i)
                    .ok()
                    .and_then(|d| DictionaryAttribute::try_from(d).ok())
                    .and_then(|d| d.element_by_name(SPLIT_ATTRIBUTE))
                    .and_then(|s| ArrayAttribute::try_from(s).ok())
                else {
                    return Vec::new();
                };
                (0..list.len())
                    .filter_map(|j| {
                        let split = list.element(j).ok().and_then(|d| DictionaryAttribute::try_from(d).ok())?;
                        let dim =
                            split.element_by_name("dim").and_then(|a| melior::ir::attribute::IntegerAttribute::try_from(a).ok())?.value();
                        let axis = split.element_by_name("axis").and_then(|a| StringAttribute::try_from(a).ok())?.value().to_string();
                        let flat = split.element_by_name("shape").and_then(crate::ir::read::i64_array_value);
                        Some(Split { dim, axis, flat })
                    })
                    .collect()
            })
            .collect()
    };
    let tensors = |types: Vec<Type>, names: Vec<String>, splits: Vec<Vec<Split>>| -> Vec<Tensor> {
        types
            .into_iter()
            .zip(names)
            .enumerate()
            .map(|(i, (t, name))| Tensor {
                name,
                shape: tensor_shape(t).unwrap_or_default().into_iter().map(|d| d.unwrap_or(0)).collect(),
                splits: splits.get(i).cloned().unwrap_or_default(),
            })
            .collect()
    };
    let inputs: Vec<Type> = (0..ty.input_count()).filter_map(|i| ty.input(i).ok()).collect();
    let outputs: Vec<Type> = (0..ty.result_count()).filter_map(|i| ty.result(i).ok()).collect();
    Ok(Signature {
        inputs: tensors(inputs, names("arg_attrs"), splits("arg_attrs")),
        outputs: tensors(outputs, names("res_attrs"), splits("res_attrs")),
        mesh: None,
        stages: Vec::new(),
        phases: std::collections::BTreeMap::new(),
    })
}

/// The named tensor from whichever file holds it, checked.
fn read_tensor(files: &[(&str, &SafeTensors); 2], tensor: &Tensor) -> Result<Vec<f32>, String> {
    let found: Vec<(&str, TensorView)> = files.iter().filter_map(|(file, t)| t.tensor(&tensor.name).ok().map(|v| (*file, v))).collect();
    let (file, view) = match found.as_slice() {
        [] => return Err(format!("no tensor '{}' (shape {:?}) in '{}' or '{}'", tensor.name, tensor.shape, files[0].0, files[1].0)),
        [one] => one,
        _ => return Err(format!("tensor '{}' is in both '{}' and '{}'", tensor.name, files[0].0, files[1].0)),
    };
    if view.dtype() != Dtype::F32 {
        return Err(format!("tensor '{}' in '{file}' is {:?}, but the step takes F32", tensor.name, view.dtype()));
    }
    let shape: Vec<i64> = view.shape().iter().map(|d| i64::try_from(*d).unwrap_or(-1)).collect();
    if shape != tensor.shape {
        return Err(format!("tensor '{}' in '{file}' has shape {shape:?}, but the step takes {:?}", tensor.name, tensor.shape));
    }
    Ok(view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// The f32 elements as little-endian bytes (the safetensors layout).
fn bytemuck_f32(data: &[f32]) -> &[u8] {
    // SAFETY: any f32 slice is a valid byte slice of 4x its length; the
    // machines Blueprint runs on are little-endian (checked below).
    const _: () = assert!(cfg!(target_endian = "little"));
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// A training step lowered and JIT-compiled, ready to run.
pub struct CompiledStep {
    jit: Jit,
    pub signature: Signature,
}

impl CompiledStep {
    /// Lowers `module` (prepared: `@train_step` on tensors) to LLVM and
    /// compiles it.
    ///
    /// # Errors
    /// A failing lowering or JIT.
    pub fn compile(context: &melior::Context, mut module: Module, signature: Signature) -> Result<Self, String> {
        let (pipeline, symbols) = if signature.mesh.is_some() {
            // The rank's collectives become runtime calls first. Without
            // hoist-static-allocs: LLVM 22's buffer-results-to-out-params
            // erases an allocation once per result it is returned as, and
            // crashes on the second when a function returns one twice — as
            // a phase function does when an op passing its input through
            // (a dropout) follows a collective, whose result is allocated
            // in place rather than by a call.
            let pipeline = TRAIN_STEP_TO_LLVM_PIPELINE
                .replacen("builtin.module(", "builtin.module(dist-async, dist-sink-waits, dist-canonicalize, lower-dist-to-runtime, ", 1)
                .replacen(
                    "buffer-results-to-out-params{modify-public-functions hoist-static-allocs}",
                    "buffer-results-to-out-params{modify-public-functions}",
                    1,
                );
            (pipeline, crate::runtime::symbols())
        } else {
            (TRAIN_STEP_TO_LLVM_PIPELINE.to_string(), crate::runtime::kernels::symbols())
        };
        run_pipeline(context, &mut module, &pipeline).map_err(|e| e.to_string())?;
        codegen_options();
        keep_freed_memory();
        let jit = Jit::with_libraries(&module, &symbols, &crate::tools::execution::runner_utils()).map_err(|e| e.to_string())?;
        Ok(Self { jit, signature })
    }

    /// Runs a derived program's step on every rank of `mesh` (one thread
    /// each, or, under MPI, this process's rank): each rank takes its
    /// slices of the whole `arguments` (of `inputs`), and the whole
    /// `outputs` are gathered (under MPI at rank 0; the others return
    /// `None`) from the ranks holding each slice; replicas must agree (a
    /// missing reduction shows here).
    ///
    /// # Errors
    /// A rank's failure (the run stops at once on every rank), or ranks
    /// that disagree.
    pub fn run_ranks(
        &self,
        inputs: &[Tensor],
        arguments: Vec<Vec<f32>>,
        mesh: &[i64],
        outputs: &[Tensor],
        mpi: Option<&crate::runtime::mpi::MpiWorld>,
    ) -> Result<Option<Vec<Vec<f32>>>, String> {
        // Each function a rank may run: the step, or one per stage.
        let functions: Vec<(usize, Signature)> = if self.signature.stages.is_empty() {
            let address = self.jit.lookup(&format!("_mlir__mlir_ciface_{TRAIN_STEP}")).map_err(|e| e.to_string())? as usize;
            vec![(address, self.signature.clone())]
        } else {
            let mut functions = Vec::new();
            for stage in &self.signature.stages {
                let address = self.jit.lookup(&format!("_mlir__mlir_ciface_{}", stage.function)).map_err(|e| e.to_string())? as usize;
                let signature = Signature {
                    inputs: stage.inputs.clone(),
                    outputs: stage.outputs.clone(),
                    mesh: None,
                    stages: Vec::new(),
                    phases: Default::default(),
                };
                functions.push((address, signature));
            }
            functions
        };
        let axes: Vec<String> = self.signature.mesh.as_ref().map(|(a, _)| a.clone()).unwrap_or_default();
        let size = usize::try_from(mesh.iter().product::<i64>()).map_err(|_| "the mesh has no ranks".to_string())?;
        let coordinate = |rank: usize, axis: &str| -> (i64, i64) {
            let at = axes.iter().position(|a| a == axis).unwrap_or(0);
            (crate::runtime::mesh::coordinates(mesh, rank as i64)[at], mesh.get(at).copied().unwrap_or(1))
        };
        // The function rank `r` runs: its pipeline stage's.
        let stage_of = |rank: usize| if functions.len() > 1 { usize::try_from(coordinate(rank, "pp").0).unwrap_or(0) } else { 0 };
        // What rank `r` runs: its stage's function on its slices of the
        // whole arguments, each sliced along its split dimensions in turn.
        let run_rank = |rank: usize| -> Result<Vec<Vec<f32>>, String> {
            let (address, signature) = functions.get(stage_of(rank)).ok_or_else(|| format!("rank {rank}: no step for its stage"))?;
            let mut args = Vec::new();
            for local in &signature.inputs {
                let at =
                    inputs.iter().position(|t| t.name == local.name).ok_or_else(|| format!("rank {rank}: no input '{}'", local.name))?;
                let (whole, data) = (&inputs[at], &arguments[at]);
                let (mut data, mut shape) = (data.clone(), whole.shape.clone());
                for split in &whole.splits {
                    let (c, n) = coordinate(rank, &split.axis);
                    data = slice(&data, &shape, split.dim, c, n);
                    if let Some(d) = usize::try_from(split.dim).ok().and_then(|d| shape.get_mut(d)) {
                        *d /= n.max(1);
                    }
                }
                args.push(data);
            }
            call(*address, signature, args).map_err(|e| format!("rank {rank}: {e}"))
        };
        let per_rank: Vec<Vec<Vec<f32>>> = match mpi {
            None => {
                // A failing rank ends the run (every rank is a thread of
                // this process); nothing has been written yet.
                crate::runtime::set_stop_hook(Box::new(|rank, op, error| {
                    let at = op.map(|op| format!("op {op}: ")).unwrap_or_default();
                    crate::tools::cli::report(&format!("blueprint-run: rank {rank}: error: {at}{error}"));
                    std::process::exit(1);
                }));
                let world = crate::runtime::World::new(size);
                world.run(run_rank).into_iter().collect::<Result<_, _>>()?
            }
            Some(world) => {
                // A failing rank ends the job, with its message.
                crate::runtime::set_stop_hook(Box::new(|rank, op, error| {
                    let at = op.map(|op| format!("op {op}: ")).unwrap_or_default();
                    crate::tools::cli::report(&format!("blueprint-run: rank {rank}: error: {at}{error}"));
                    if let Some(world) = crate::runtime::mpi::active() {
                        world.abort(1);
                    }
                    std::process::exit(1);
                }));
                let rank = world.rank();
                let mine = run_rank(rank)?;
                let bytes: Vec<u8> = mine.iter().flat_map(|v| v.iter().flat_map(|f| f.to_le_bytes())).collect();
                // Rank 0 gathers every rank's outputs; the others are done.
                let Some(all) = world.gather_bytes(&bytes).map_err(|e| format!("rank {rank}: cannot gather the outputs: {e}"))? else {
                    return Ok(None);
                };
                let mut per_rank = Vec::with_capacity(all.len());
                for (r, bytes) in all.iter().enumerate() {
                    let (_, signature) = &functions[stage_of(r)];
                    let floats: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
                    let mut outputs = Vec::new();
                    let mut at = 0;
                    for t in &signature.outputs {
                        let end = (at + t.len()).min(floats.len());
                        outputs.push(floats[at..end].to_vec());
                        at = end;
                    }
                    per_rank.push(outputs);
                }
                per_rank
            }
        };
        let mut gathered = Vec::with_capacity(outputs.len());
        for t in outputs {
            // The stage computing it, and its position among that stage's results.
            let (stage, k) = functions
                .iter()
                .enumerate()
                .find_map(|(st, (_, f))| f.outputs.iter().position(|o| o.name == t.name).map(|k| (st, k)))
                .ok_or_else(|| format!("no stage computes '{}'", t.name))?;
            let holders: Vec<usize> = (0..size).filter(|r| stage_of(*r) == stage).collect();
            // The stage's rank with coordinates `fixed` on the split axes
            // and 0 on every other axis but the pipeline's.
            let holder = |fixed: &[(String, i64)]| -> usize {
                holders
                    .iter()
                    .copied()
                    .find(|r| {
                        axes.iter().all(|a| a == "pp" || coordinate(*r, a).0 == fixed.iter().find(|(f, _)| f == a).map_or(0, |(_, c)| *c))
                    })
                    .unwrap_or(0)
            };
            // Replicas (ranks that differ only on axes the tensor is not
            // split over) must agree: a missing reduction shows here.
            for &rank in &holders {
                let fixed: Vec<(String, i64)> = t.splits.iter().map(|s| (s.axis.clone(), coordinate(rank, &s.axis).0)).collect();
                let canonical = holder(&fixed);
                let (mine, theirs) = (&per_rank[canonical][k], &per_rank[rank][k]);
                if let Some(i) = disagreement(mine, theirs) {
                    return Err(format!(
                        "'{}' should be the same on every rank holding it, but rank {rank} has {} at element {i} where rank {canonical} has {}",
                        t.name, theirs[i], mine[i]
                    ));
                }
            }
            gathered.push(assemble(t, &mut Vec::new(), &|fixed| per_rank[holder(fixed)][k].clone(), &|axis| {
                mesh.get(axes.iter().position(|a| a == axis).unwrap_or(0)).copied().unwrap_or(1)
            }));
        }
        Ok(Some(gathered))
    }

    /// Runs the step on `arguments` (one row-major f32 buffer per input,
    /// in signature order, each of its shape); returns the outputs.
    ///
    /// # Errors
    /// A buffer whose length is not its input's size.
    pub fn run(&self, arguments: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>, String> {
        for (t, data) in self.signature.inputs.iter().zip(&arguments) {
            if data.len() != t.len() {
                return Err(format!("'{}' has {} elements, but the step takes {:?}", t.name, data.len(), t.shape));
            }
        }
        if arguments.len() != self.signature.inputs.len() {
            return Err(format!("{} inputs given, the step takes {}", arguments.len(), self.signature.inputs.len()));
        }
        let address = self.jit.lookup(&format!("_mlir__mlir_ciface_{TRAIN_STEP}")).map_err(|e| e.to_string())? as usize;
        call(address, &self.signature, arguments)
    }
}

/// Calls the compiled step: inputs, then outputs as out-params (the
/// lowering makes every result an out-param), through the packed C
/// interface (one pointer per argument).
fn call(address: usize, signature: &Signature, arguments: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>, String> {
    let mut memrefs: Vec<OwnedMemRef<f32>> =
        signature.inputs.iter().zip(arguments).map(|(t, data)| OwnedMemRef::new(&t.shape, data)).collect();
    for t in &signature.outputs {
        memrefs.push(OwnedMemRef::new(&t.shape, vec![0.0; t.len()]));
    }
    let mut descriptors: Vec<*mut c_void> = memrefs.iter_mut().map(OwnedMemRef::desc).collect();
    let mut packed: Vec<*mut c_void> = descriptors.iter_mut().map(|d| (d as *mut *mut c_void).cast()).collect();
    // SAFETY: the packed wrapper of `_mlir_ciface_train_step` reads one
    // pointer per argument; each points at a descriptor of the memref type
    // the lowered signature has (inputs, then out-params), alive until the
    // call returns.
    unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut *mut c_void)>(address)(packed.as_mut_ptr()) };

    Ok(memrefs.split_off(signature.inputs.len()).iter().map(OwnedMemRef::to_vec).collect())
}

/// LLVM's code generation options for the step, set once per process:
/// the DAG combiner's store merging is quadratic in the stores of a block
/// and was more than half of compiling a step (3.6 of 7 s on a 3-block
/// step); the code it would merge is memref descriptor traffic.
fn codegen_options() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let args: [&[u8]; 2] = [b"blueprint-run\0", b"-combiner-store-merging=false\0"];
        let pointers: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr().cast()).collect();
        // SAFETY: NUL-terminated strings that outlive the call; LLVM copies
        // what it keeps. Called once, before any code is generated.
        unsafe { mlir_sys::LLVMParseCommandLineOptions(pointers.len() as i32, pointers.as_ptr(), std::ptr::null()) };
    });
}

/// glibc returns large freed blocks to the kernel (mmap'ed above 128 KiB,
/// trimmed at the top of the heap), so every step faulted in fresh zeroed
/// pages for its activations (a seventh of a step's time at hidden 256);
/// kept in the heap, a step reuses the previous step's pages.
fn keep_freed_memory() {
    unsafe extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    const M_TRIM_THRESHOLD: i32 = -1;
    const M_MMAP_THRESHOLD: i32 = -3;
    // SAFETY: glibc's documented tuning calls; they take effect for later
    // allocations and fail harmlessly (returning 0) elsewhere.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 1 << 30);
        mallopt(M_TRIM_THRESHOLD, i32::MAX);
    }
}

/// `axes = [..], shape = [..]` of a mesh, for messages.
fn mesh_text(axes: &[String], shape: &[i64]) -> String {
    let parts: Vec<String> = axes.iter().zip(shape).map(|(a, n)| format!("{a} = {n}")).collect();
    parts.join(", ")
}

/// The whole tensor of which `t` is a rank's slice.
fn whole(t: &Tensor, mesh: Option<&(Vec<String>, Vec<i64>)>) -> Result<Tensor, String> {
    let mut whole = t.clone();
    // A flattened part: the whole is its rank shape, gathered.
    if let Some(shape) = t.splits.iter().find_map(|s| s.flat.clone()) {
        whole.shape = shape;
    }
    for split in t.splits.iter().filter(|s| s.flat.is_none()) {
        let (axes, shape) = mesh.ok_or_else(|| format!("'{}' is split over a mesh, but the step has none", t.name))?;
        let n = axes
            .iter()
            .position(|a| a == &split.axis)
            .map(|i| shape[i])
            .ok_or_else(|| format!("'{}' is split over axis '{}', which the mesh has not", t.name, split.axis))?;
        let dim = usize::try_from(split.dim)
            .ok()
            .filter(|d| *d < whole.shape.len())
            .ok_or_else(|| format!("'{}' is split along dimension {}, which it has not", t.name, split.dim))?;
        whole.shape[dim] *= n;
    }
    Ok(whole)
}

/// A rank's part of a tensor, by its coordinates on the split axes.
type Part<'a> = &'a dyn Fn(&[(String, i64)]) -> Vec<f32>;

/// The whole tensor `t` from its slices: `part(fixed)` is the slice of the
/// rank at the coordinates `fixed` on every split axis, joined along each
/// split dimension in turn (`size(axis)` ranks each).
fn assemble(t: &Tensor, fixed: &mut Vec<(String, i64)>, part: Part, size: &dyn Fn(&str) -> i64) -> Vec<f32> {
    let level = fixed.len();
    let Some(split) = t.splits.get(level) else { return part(fixed) };
    let n = size(&split.axis);
    let parts: Vec<Vec<f32>> = (0..n)
        .map(|c| {
            fixed.push((split.axis.clone(), c));
            let p = assemble(t, fixed, part, size);
            fixed.pop();
            p
        })
        .collect();
    // A flattened tensor's parts are contiguous (always the last split).
    if split.flat.is_some() {
        return parts.concat();
    }
    // The shape joined at this level: the whole, less the splits before it.
    let mut shape = t.shape.clone();
    for s in t.splits[..level].iter().filter(|s| s.flat.is_none()) {
        if let Some(d) = usize::try_from(s.dim).ok().and_then(|d| shape.get_mut(d)) {
            *d /= size(&s.axis).max(1);
        }
    }
    concatenate(&parts.iter().collect::<Vec<_>>(), &shape, split.dim, n)
}

/// Part `c` of `n` equal parts along `dim` of a row-major tensor of `shape`.
fn slice(data: &[f32], shape: &[i64], dim: i64, c: i64, n: i64) -> Vec<f32> {
    let d = usize::try_from(dim).unwrap_or(0);
    let extent = |r: std::ops::Range<usize>| shape[r].iter().map(|x| usize::try_from(*x).unwrap_or(0)).product::<usize>();
    let (inner, along) = (extent(d + 1..shape.len()), usize::try_from(shape[d]).unwrap_or(0));
    let part = along / usize::try_from(n).unwrap_or(1).max(1) * inner;
    let at = usize::try_from(c).unwrap_or(0) * part;
    data.chunks_exact((along * inner).max(1)).flat_map(|block| block[at..at + part].iter().copied()).collect()
}

/// The inverse of [`slice`]: `parts` (in order) joined along `dim` into a
/// tensor of the whole `shape`.
fn concatenate(parts: &[&Vec<f32>], shape: &[i64], dim: i64, n: i64) -> Vec<f32> {
    let d = usize::try_from(dim).unwrap_or(0);
    let extent = |r: std::ops::Range<usize>| shape[r].iter().map(|x| usize::try_from(*x).unwrap_or(0)).product::<usize>();
    let (outer, inner, along) = (extent(0..d), extent(d + 1..shape.len()), usize::try_from(shape[d]).unwrap_or(0));
    let part = along / usize::try_from(n).unwrap_or(1).max(1) * inner;
    let mut out = Vec::with_capacity(outer * along * inner);
    for o in 0..outer {
        for p in parts {
            out.extend_from_slice(&p[o * part..(o + 1) * part]);
        }
    }
    out
}

/// The first element where two replicas of a tensor differ by more than
/// float32 rounding of a sum taken in another order.
fn disagreement(a: &[f32], b: &[f32]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(0);
    }
    a.iter().zip(b).position(|(x, y)| (x - y).abs() > 1e-5 * x.abs().max(y.abs()).max(1.0) || x.is_nan() != y.is_nan())
}

/// The phase of every communication op in `module`, by the name the
/// runtime announces it by (its transfer for a `dist.p2p` end, else its id).
fn communication_phases(module: &Module) -> std::collections::BTreeMap<String, String> {
    collect_ops(module.as_operation())
        .into_iter()
        .filter(|op| OpKind::of(*op).is_some_and(OpKind::is_communication))
        .filter_map(|op| {
            let name = str_attr(op, crate::conversion::model_to_linalg::distributed::TRANSFER_ATTRIBUTE).or_else(|| str_attr(op, "id"))?;
            let phase = crate::ir::read::enum_attr::<crate::ir::ods::Phase>(op, "phase")?;
            Some((name.to_string(), phase.name().to_string()))
        })
        .collect()
}

/// `--comm-report`: what the runtime communicated, one line per rank and
/// op (phase, kind, group size, calls, bytes, the op), then the totals per
/// (phase, kind, group size) over the ranks.
fn print_comm_report(counts: &[crate::runtime::comm_count::CommCount], phases: &std::collections::BTreeMap<String, String>) {
    use std::io::Write;
    let phase_of = |op: &str| {
        let id = op.strip_prefix('\'').and_then(|o| o.split('\'').next()).unwrap_or(op);
        phases.get(id).map_or("-", String::as_str).to_string()
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "comm-report: rank phase kind group calls bytes op");
    let mut totals: std::collections::BTreeMap<(String, &str, usize), (u64, u64)> = std::collections::BTreeMap::new();
    for c in counts {
        let phase = phase_of(&c.op);
        let _ = writeln!(out, "comm-report: {} {phase} {} {} {} {} {}", c.rank, c.kind, c.group, c.calls, c.bytes, c.op);
        let total = totals.entry((phase, c.kind, c.group)).or_default();
        total.0 += c.calls;
        total.1 += c.bytes;
    }
    let _ = writeln!(out, "comm-report total: phase kind group calls bytes");
    for ((phase, kind, group), (calls, bytes)) in totals {
        let _ = writeln!(out, "comm-report total: {phase} {kind} {group} {calls} {bytes}");
    }
}

#[cfg(test)]
mod tests {
    use super::{concatenate, disagreement, slice};

    /// A 2 x 3 x 4 tensor whose element is its row-major index.
    fn tensor() -> Vec<f32> {
        (0..24).map(|i| i as f32).collect()
    }

    #[test]
    fn slices_along_each_dimension_and_joins_back() {
        let shape = [2, 3, 4];
        // Along the last dimension in two: columns 2..4 of every row.
        assert_eq!(slice(&tensor(), &shape, 2, 1, 2), vec![2., 3., 6., 7., 10., 11., 14., 15., 18., 19., 22., 23.]);
        // Along the first in two: the second 3 x 4 block.
        assert_eq!(slice(&tensor(), &shape, 0, 1, 2), (12..24).map(|i| i as f32).collect::<Vec<_>>());
        // Along the middle in three: row 1 of each block.
        assert_eq!(slice(&tensor(), &shape, 1, 1, 3), vec![4., 5., 6., 7., 16., 17., 18., 19.]);
        for (dim, n) in [(0, 2), (1, 3), (2, 2), (2, 4)] {
            let parts: Vec<Vec<f32>> = (0..n).map(|c| slice(&tensor(), &shape, dim, c, n)).collect();
            let refs: Vec<&Vec<f32>> = parts.iter().collect();
            assert_eq!(concatenate(&refs, &shape, dim, n), tensor(), "dim {dim} in {n}");
        }
    }

    #[test]
    fn replicas_agree_up_to_rounding_only() {
        assert_eq!(disagreement(&[1.0, 2.0], &[1.0, 2.0 + 1e-6]), None);
        assert_eq!(disagreement(&[1.0, 2.0], &[1.0, 2.5]), Some(1));
        assert_eq!(disagreement(&[f32::NAN], &[0.0]), Some(0));
        assert_eq!(disagreement(&[1.0], &[1.0, 2.0]), Some(0));
    }
}
