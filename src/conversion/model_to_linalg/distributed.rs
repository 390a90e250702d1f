//! `convert-dist-step-to-linalg`: the whole training step a derived
//! program (`distribute-transformer-training`) describes, as one rank of
//! its mesh runs it, on `linalg` and tensor collectives.
//!
//! The derived program's block template says what each rank computes: one
//! compute task per ModelIR op instance with the shard type of its result
//! (lineage names the op), the collectives where a value's sharding
//! changes, recompute clones, and the data-parallel gradient reduction.
//! This pass reads that template and lowers each task's ModelIR op with
//! the op's own rule from `convert-model-to-linalg` at the shard types (one
//! implementation of what an op computes), checks that the rule computes
//! the type the task states, and runs each collective on the tensor its
//! input task computed (a `dist` collective on tensors, which
//! `lower-dist-to-runtime` turns into runtime calls). The step is the
//! one-rank `@train_step` of `convert-model-to-linalg` with a rank's
//! shards: its arguments and results carry `dist.split = {dim, axis}`
//! where a rank holds a slice (parameters split by tensor parallelism, the
//! batch's rows by data parallelism), so a runner can hand each rank its
//! slices and gather the results.
//!
//! Executes tensor, sequence and data parallelism (with a sharded optimizer
//! too), every recompute policy and pipelines (one function per stage, see
//! `pipelined`; interleaved chunks too). What it cannot read is a located
//! error, and the module is left unchanged.

use std::collections::HashMap;

use melior::{
    ir::{
        operation::{OperationBuilder, OperationLike},
        BlockRef, Identifier, Module, OperationRef, Type, Value, ValueLike,
    },
    pass::ExternalPass,
};

use super::{
    is_model, linalg::Lin, read_trained, rules::Outliner, train_step, validate, Chunk, Distribution, Failure, Item, Pipeline, Split, Stage,
    Template, Trained,
};
use crate::{
    analysis::workload::TrainingSpec,
    dialect::{dist::mesh::Mesh, model::binding::read_spec, model::binding::TRAINING_SPEC},
    ir::{
        ods::{OpKind, Phase},
        read::{defining_op, enum_attr, int_attr, name_of, region_ops, str_attr, type_string},
    },
};

crate::ir::pass_macro::external_pass!(
    "ConvertDistStepToLinalg",
    "convert-dist-step-to-linalg",
    "Lower the training step a derived program describes to one rank's @train_step on linalg and tensor collectives",
    run,
    &super::lowering_dialects()
);

fn run(module: OperationRef, pass: ExternalPass) {
    super::replace_module(module, pass, build);
}

const PASS: &str = "convert-dist-step-to-linalg";

/// Builds the rank's step into `generated`; returns the ops to erase
/// (ModelIR, the derived program's structure; the mesh and header stay,
/// the collectives name them).
fn build<'c, 'm>(module: OperationRef<'c, 'm>, generated: &Module<'c>) -> Result<Vec<OperationRef<'c, 'm>>, Failure<'c, 'm>> {
    let top = region_ops(module, 0);
    let functions: Vec<OperationRef> =
        top.iter().copied().filter(|op| name_of(*op) == "func.func" && region_ops(*op, 0).iter().any(|o| is_model(*o))).collect();
    let [function] = functions[..] else {
        return Err((module, format!("{PASS}: the module needs exactly one ModelIR block function, found {}", functions.len())));
    };
    validate(function)?;
    let pipeline = top.iter().copied().find(|op| OpKind::of(*op) == Some(OpKind::DistPipeline)).ok_or((
        module,
        format!("{PASS}: the module holds no derived program (dist.pipeline): run distribute-transformer-training first"),
    ))?;
    let spec: TrainingSpec = read_spec(module, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string()))
        .map_err(|e| (module, format!("{PASS}: {e}")))?;
    let context_ref = module.context();
    // SAFETY: as in `convert-model-to-linalg`: the reference lives until
    // `build` returns and nothing built keeps it.
    let context = unsafe { context_ref.to_ref() };
    let lin = Lin::new(context, module.location()).map_err(|e| (module, e.to_string()))?;
    let t = read_trained(function)?;
    let distribution = read(&top, pipeline, function, &t, &spec)?;
    let outliner = Outliner::new(generated.body());
    train_step(lin, &spec, &t, &distribution, function, generated, &outliner)?;
    // The block function, ModelIR's header and the derived program's
    // structure go; the mesh and the dist header stay (the collectives
    // name the mesh).
    let kept = |op: &OperationRef| matches!(OpKind::of(*op), Some(OpKind::DistHeader | OpKind::DistMesh));
    let dist = |op: &OperationRef| crate::ir::read::dialect_of(&name_of(*op)) == "dist";
    Ok(top.into_iter().filter(|op| *op == function || is_model(*op) || (dist(op) && !kept(op))).collect())
}

/// What one rank runs, read from the derived program's block template.
fn read<'c, 'm>(
    top: &[OperationRef<'c, 'm>],
    pipeline: OperationRef<'c, 'm>,
    function: OperationRef<'c, 'm>,
    t: &Trained<'c, 'm>,
    spec: &TrainingSpec,
) -> Result<Distribution<'c, 'm>, Failure<'c, 'm>> {
    let chunks: Vec<OperationRef> = top.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::DistChunk)).collect();
    let Some(chunk) = chunks.first().copied() else {
        return Err((pipeline, format!("{PASS}: the step has no dist.chunk")));
    };
    let pipelined = read_pipeline(top, pipeline, &chunks)?;
    let mesh_name = crate::ir::read::symbol_attr(pipeline, "mesh").unwrap_or_default();
    let mesh = top
        .iter()
        .filter(|op| OpKind::of(**op) == Some(OpKind::DistMesh))
        .filter_map(|op| Mesh::read(*op))
        .find(|(name, _)| name == mesh_name)
        .map(|(_, mesh)| mesh)
        .ok_or((pipeline, format!("{PASS}: the pipeline's mesh @{mesh_name} is not in the module")))?;
    let model_ops: HashMap<&str, OperationRef> =
        region_ops(function, 0).into_iter().filter_map(|op| Some((str_attr(op, "id")?, op))).collect();
    let op_of = |task: OperationRef<'c, 'm>| -> Result<OperationRef<'c, 'm>, Failure<'c, 'm>> {
        let lineage = str_attr(task, "lineage").unwrap_or_default();
        model_ops.get(lineage).copied().ok_or_else(|| {
            (
                task,
                format!(
                    "{PASS}: task '{}' names '{lineage}', which is not an op of the ModelIR block",
                    str_attr(task, "id").unwrap_or("?")
                ),
            )
        })
    };
    // The ranks of a collective's groups: the product of its axes' sizes.
    let group_size = |c: OperationRef| -> i64 {
        crate::ir::read::attr_string_list(c, "mesh_axes").unwrap_or_default().iter().map(|a| mesh.axis_size(a).unwrap_or(1)).product()
    };
    // The stride of a one-axis collective's axis in the row-major rank
    // numbering: the product of the later axes' sizes.
    let axis_stride = |c: OperationRef| -> i64 {
        let axes = crate::ir::read::attr_string_list(c, "mesh_axes").unwrap_or_default();
        let at = axes.first().and_then(|a| mesh.axes.iter().position(|x| x == a)).unwrap_or(mesh.axes.len());
        mesh.shape.iter().skip(at + 1).product()
    };
    let mut distribution = Distribution {
        forward: Vec::new(),
        backward: Vec::new(),
        local: HashMap::new(),
        splits: HashMap::new(),
        data_parallel: mesh.axis_size("dp").and_then(|n| u64::try_from(n).ok()).unwrap_or(1),
        gradient_reduction: None,
        pipeline: pipelined,
        parameter_gather: None,
        partial_sums: Vec::new(),
        mesh: (mesh_name.to_string(), mesh.axes.clone(), mesh.shape.clone()),
    };
    let key = |v: Value| v.to_raw().ptr as usize;
    // Each chunk's template; stage 0's first chunk's is the distribution's.
    let mut templates = Vec::new();
    for chunk in &chunks {
        let at = (int_attr(*chunk, "stage").unwrap_or(0), int_attr(*chunk, "chunk").unwrap_or(0));
        templates.push((at, read_template(*chunk, t, &op_of, &group_size, &axis_stride, &mut distribution.local)?));
    }
    templates.sort_by_key(|(at, _)| *at);
    let mut templates = templates.into_iter();
    let (_, first) = templates.next().ok_or((chunk, format!("{PASS}: the step has no block template")))?;
    (
        distribution.forward,
        distribution.backward,
        distribution.gradient_reduction,
        distribution.parameter_gather,
        distribution.partial_sums,
    ) = (first.forward, first.backward, first.gradient_reduction, first.parameter_gather, first.partial_sums);
    if let Some(pipeline) = &mut distribution.pipeline {
        for ((stage, c), template) in templates {
            let place = usize::try_from(stage)
                .ok()
                .and_then(|s| pipeline.stages.get_mut(s))
                .and_then(|s| usize::try_from(c).ok().and_then(|c| s.chunks.get_mut(c)));
            if let Some(place) = place {
                place.template = Some(template);
            }
        }
    }
    // A parameter whose step has no task of its own shares its task with
    // the parameters of the same forward op (a norm's scale and bias are
    // one task): its shard type is theirs when its type is.
    for step in &t.optimizer {
        let (Ok(param), Ok(gradient)) = (step.operand(0), step.operand(1)) else { continue };
        if distribution.local.contains_key(&key(param)) {
            continue;
        }
        let wgrad = defining_op(gradient);
        let sibling = t.optimizer.iter().filter(|s| *s != step).find_map(|s| {
            let (p, g) = (s.operand(0).ok()?, s.operand(1).ok()?);
            let local = distribution.local.get(&key(p)).copied()?;
            (defining_op(g) == wgrad && p.r#type() == param.r#type()).then_some(local)
        });
        if let Some(local) = sibling {
            distribution.local.insert(key(param), local);
            for state in step.operands().skip(2) {
                distribution.local.insert(key(state), local);
            }
        }
    }
    // The block input's (and its output gradient's) rank type: the block
    // output's task type (a block keeps its activation shape).
    let block_out_op = defining_op(t.block_out).ok_or((function, format!("{PASS}: the block output has no defining op")))?;
    let out_type = distribution
        .forward
        .iter()
        .find_map(|i| match i {
            Item::Op(op, declared) if *op == block_out_op => *declared,
            _ => None,
        })
        .ok_or((block_out_op, format!("{PASS}: the op computing the block output has no forward task in the derived program")))?;
    for v in [t.input, t.output_grad] {
        if let Ok(r) = v.result(0) {
            distribution.local.insert(key(r.into()), out_type);
        }
    }
    // Splits: rows over data parallelism; the sequence over tensor
    // parallelism under sequence parallelism; parameters over tensor
    // parallelism.
    let dp = distribution.data_parallel;
    let tp = mesh.axis_size("tp").unwrap_or(1);
    let activations = ["block.in", "block.out.grad", "block.out", "block.in.grad"];
    if dp > 1 {
        for name in activations {
            distribution.splits.entry(name.into()).or_default().push(Split { dim: 0, axis: "dp".into(), flat: None });
        }
    }
    let input_type = t.input.result(0).map(|r| r.r#type()).map_err(|_| (t.input, "has no result".to_string()))?;
    let sequence = split_of(input_type, out_type, tp).map_err(|m| (t.input, format!("{PASS}: the block input {m}")))?;
    for name in activations {
        if let Some(split) = &sequence {
            distribution.splits.entry(name.into()).or_default().push(split.clone());
        }
    }
    for (p, step) in t.params.iter().filter_map(|p| Some((*p, optimizer_of(t, *p)?))) {
        let Ok(value) = p.result(0) else { continue };
        let Some(local) = distribution.local.get(&key(value.into())).copied() else {
            return Err((
                p,
                format!("{PASS}: parameter '{}' has no optimizer task in the derived program", str_attr(p, "id").unwrap_or("?")),
            ));
        };
        let Some(split) = split_of(value.r#type(), local, tp)
            .map_err(|m| (p, format!("{PASS}: parameter '{}' {m}", str_attr(p, "id").unwrap_or("?"))))?
        else {
            continue;
        };
        let id = |op: OperationRef| str_attr(op, "id").unwrap_or_default().to_string();
        for block in 0..spec.model.blocks {
            let mut names = vec![format!("blocks.{block}.{}", id(p)), format!("blocks.{block}.{}.grad", id(p))];
            for s in step.operands().skip(2).filter_map(defining_op) {
                names.push(format!("blocks.{block}.{}", id(s)));
            }
            for name in names {
                distribution.splits.entry(name).or_default().push(split.clone());
            }
        }
    }
    // A sharded optimizer: each rank keeps its contiguous part of every
    // flattened summed gradient and optimizer state.
    if distribution.parameter_gather.is_some() {
        for (p, step) in t.params.iter().filter_map(|p| Some((*p, optimizer_of(t, *p)?))) {
            let Some(local) = p.result(0).ok().and_then(|v| distribution.local.get(&key(v.into())).copied()) else { continue };
            let shape = super::linalg::type_dims(local);
            let flat = Split { dim: -1, axis: "dp".into(), flat: Some(shape) };
            let id = |op: OperationRef| str_attr(op, "id").unwrap_or_default().to_string();
            for block in 0..spec.model.blocks {
                let mut names = vec![format!("blocks.{block}.{}.grad", id(p))];
                for s in step.operands().skip(2).filter_map(defining_op) {
                    names.push(format!("blocks.{block}.{}", id(s)));
                }
                for name in names {
                    distribution.splits.entry(name).or_default().push(flat.clone());
                }
            }
        }
    }
    Ok(distribution)
}

/// One chunk's block template as the rank's step runs it: every ModelIR op
/// in the block's order with its task's type and the collectives after it
/// (forward; recompute clones then gradients), the data-parallel gradient
/// reduction; records each parameter's (and its state's) shard type in
/// `local`.
fn read_template<'c, 'm>(
    chunk: OperationRef<'c, 'm>,
    t: &Trained<'c, 'm>,
    op_of: &dyn Fn(OperationRef<'c, 'm>) -> Result<OperationRef<'c, 'm>, Failure<'c, 'm>>,
    group_size: &dyn Fn(OperationRef) -> i64,
    axis_stride: &dyn Fn(OperationRef) -> i64,
    local: &mut HashMap<usize, Type<'c>>,
) -> Result<Template<'c, 'm>, Failure<'c, 'm>> {
    // Re-gathers of the forward's gathered inputs, first in the backward.
    let mut regathers: Vec<Item<'c, 'm>> = Vec::new();
    let key = |v: Value| v.to_raw().ptr as usize;
    let op_key = |op: OperationRef| op.to_raw().ptr as usize;
    // Each task by (ModelIR op, whether it recomputes); the collectives
    // after each task; the recompute clones in the template's order.
    let mut tasks: HashMap<(usize, bool), OperationRef<'c, 'm>> = HashMap::new();
    let mut after: HashMap<usize, Vec<OperationRef<'c, 'm>>> = HashMap::new();
    let mut recomputed: Vec<OperationRef<'c, 'm>> = Vec::new();
    let mut template =
        Template { forward: Vec::new(), backward: Vec::new(), gradient_reduction: None, parameter_gather: None, partial_sums: Vec::new() };
    for task in region_ops(chunk, 0) {
        let kind = OpKind::of(task);
        let phase = enum_attr::<Phase>(task, "phase");
        match kind {
            Some(OpKind::DistCompute) => {
                let op = op_of(task)?;
                let declared = task.result(1).ok().map(|r| r.r#type());
                match phase {
                    Some(Phase::Forward | Phase::ActivationGradient | Phase::WeightGradient) => {
                        tasks.insert((op_key(op), false), task);
                    }
                    Some(Phase::Recompute) => {
                        tasks.insert((op_key(op), true), task);
                        recomputed.push(op);
                    }
                    Some(Phase::Optimizer) => {
                        // The rank's parameter shard: the step's result type.
                        let (Some(declared), Ok(param)) = (declared, op.operand(0)) else {
                            return Err((task, format!("{PASS}: optimizer task has no parameter or result")));
                        };
                        local.insert(key(param), declared);
                        for state in op.operands().skip(2) {
                            local.insert(key(state), declared);
                        }
                    }
                    _ => return Err((task, format!("{PASS}: a compute task of phase {phase:?} has no place in a training step"))),
                }
            }
            Some(OpKind::DistAllReduce | OpKind::DistReduceScatter | OpKind::DistAllGather) => {
                let axes = crate::ir::read::attr_string_list(task, "mesh_axes").unwrap_or_default();
                let input = task.operand(0).map_err(|_| (task, "has no input".to_string()))?;
                if axes != ["dp"] && phase == Some(Phase::Optimizer) {
                    // A partial weight gradient's sum over its axes, once
                    // per step: for the steps of its op's parameters.
                    let op = op_of(task)?;
                    let params: Vec<usize> =
                        op.operands().filter(|v| defining_op(*v).is_some_and(|d| t.params.contains(&d))).map(key).collect();
                    let steps: Vec<OperationRef> =
                        t.optimizer.iter().copied().filter(|s| s.operand(0).is_ok_and(|p| params.contains(&key(p)))).collect();
                    if steps.is_empty() {
                        return Err((
                            task,
                            format!(
                                "{PASS}: '{}' sums the weight gradients of '{}', which has no parameter with an optimizer step",
                                str_attr(task, "id").unwrap_or("?"),
                                str_attr(op, "id").unwrap_or("?")
                            ),
                        ));
                    }
                    for step in steps {
                        template.partial_sums.push((str_attr(step, "id").unwrap_or_default().to_string(), task));
                    }
                    continue;
                }
                if axes == ["dp"] {
                    // All-reduce, or (a sharded optimizer) reduce-scatter
                    // of the gradients, then all-gather of the parameters.
                    match kind {
                        Some(OpKind::DistAllGather) => template.parameter_gather = Some(task),
                        _ => template.gradient_reduction = Some(task),
                    }
                    continue;
                }
                if let Some(with) = str_attr(task, "tiled_with") {
                    return Err((
                        task,
                        format!(
                            "{PASS}: '{}' is tiled with '{with}' (mapping.tp_overlap): a collective run in pieces inside its linear is not executable yet; derive the step with tp_overlap = none to run it (the step computes the same)",
                            str_attr(task, "id").unwrap_or("?")
                        ),
                    ));
                }
                let source = defining_op(input)
                    .filter(|d| OpKind::of(*d) == Some(OpKind::DistCompute))
                    .ok_or((task, format!("{PASS}: the collective's input is not a compute task's")))?;
                if phase == Some(Phase::Recommunication) && enum_attr::<Phase>(source, "phase") == Some(Phase::Forward) {
                    // The forward's gathered input, dropped and gathered
                    // again before the backward (after a recompute clone
                    // it follows the clone instead, as any collective).
                    if kind != Some(OpKind::DistAllGather) {
                        return Err((task, format!("{PASS}: a re-communication after a forward task must be an all-gather")));
                    }
                    regathers.push(Item::Regather(op_of(source)?, task, group_size(task), axis_stride(task)));
                    continue;
                }
                after.entry(op_key(source)).or_default().push(task);
            }
            Some(OpKind::DistYield) => {}
            _ => return Err((task, format!("{PASS}: '{}' in a block template is not executable", name_of(task)))),
        }
    }
    // Every ModelIR op in the block's order (ops without work, such as a
    // fork, have no task), each with its task's type and the collectives
    // after it; the backward recomputes the clones first.
    let items = |op: OperationRef<'c, 'm>, recompute: bool| -> Vec<Item<'c, 'm>> {
        let task = tasks.get(&(op_key(op), recompute)).copied();
        let declared = task.and_then(|t| t.result(1).ok()).map(|r| r.r#type());
        let mut items = vec![Item::Op(op, declared)];
        if let Some(task) = task {
            items.extend(after.get(&op_key(task)).into_iter().flatten().map(|c| Item::Collective(op, *c, group_size(*c))));
        }
        items
    };
    template.forward = t.forward.iter().flat_map(|op| items(*op, false)).collect();
    // The clones in the block's order, with the ops that have no task
    // (a fork: no work) recomputed where everything they read is.
    let mut clones: Vec<OperationRef<'c, 'm>> = Vec::new();
    if !recomputed.is_empty() {
        for op in &t.forward {
            let taskless = !tasks.contains_key(&(op_key(*op), false));
            let reads_recomputed =
                op.operands().all(|v| defining_op(v).is_some_and(|d| clones.contains(&d) || d == t.input || t.params.contains(&d)));
            if recomputed.contains(op) || (taskless && reads_recomputed) {
                clones.push(*op);
            }
        }
    }
    let recompute_items = clones.iter().flat_map(|op| if recomputed.contains(op) { items(*op, true) } else { vec![Item::Op(*op, None)] });
    template.backward = regathers.into_iter().chain(recompute_items).chain(t.backward.iter().flat_map(|op| items(*op, false))).collect();
    Ok(template)
}

/// The stages of a pipelined step (`None` at one stage): each stage's
/// chunks (blocks, boundary transfers), its schedule's slots.
fn read_pipeline<'c, 'm>(
    top: &[OperationRef<'c, 'm>],
    pipeline: OperationRef<'c, 'm>,
    chunks: &[OperationRef<'c, 'm>],
) -> Result<Option<Pipeline<'c, 'm>>, Failure<'c, 'm>> {
    let count = |op: OperationRef, name: &str| int_attr(op, name).and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
    let (stages, per_stage) = (count(pipeline, "stages").max(1), count(pipeline, "chunks").max(1));
    if stages <= 1 && per_stage <= 1 {
        return Ok(None);
    }
    let mut read: Vec<Stage> = (0..stages).map(|stage| Stage { stage, chunks: Vec::new(), slots: Vec::new() }).collect();
    let mut placed: Vec<(u64, u64, Chunk)> = Vec::new();
    for chunk in chunks {
        let (mut send_forward, mut send_backward) = (None, None);
        for op in region_ops(*chunk, 1) {
            match (OpKind::of(op), enum_attr::<Phase>(op, "phase")) {
                (Some(OpKind::DistP2P), Some(Phase::Forward)) => send_forward = Some(op),
                (Some(OpKind::DistP2P), Some(_)) => send_backward = Some(op),
                (Some(OpKind::DistYield), _) => {}
                _ => return Err((op, format!("{PASS}: '{}' at a stage boundary is not executable", name_of(op)))),
            }
        }
        let entry = Chunk {
            first_block: count(*chunk, "first_block"),
            blocks: count(*chunk, "blocks"),
            send_forward,
            send_backward,
            template: None,
        };
        placed.push((count(*chunk, "stage"), count(*chunk, "chunk"), entry));
    }
    placed.sort_by_key(|(s, c, _)| (*s, *c));
    for (stage, c, chunk) in placed {
        let Some(entry) = usize::try_from(stage).ok().and_then(|s| read.get_mut(s)) else {
            return Err((pipeline, format!("{PASS}: a chunk of stage {stage}, which the step has not")));
        };
        if entry.chunks.len() as u64 != c {
            return Err((pipeline, format!("{PASS}: stage {stage}'s chunks are not numbered 0, 1, ...")));
        }
        entry.chunks.push(chunk);
    }
    if let Some(s) = read.iter().find(|s| s.chunks.len() as u64 != per_stage) {
        return Err((pipeline, format!("{PASS}: stage {} has {} chunks, not the pipeline's {per_stage}", s.stage, s.chunks.len())));
    }
    for schedule in top.iter().filter(|op| OpKind::of(**op) == Some(OpKind::DistSchedule)) {
        let stage = count(*schedule, "stage");
        let slots = crate::ir::read::i64_array_attr(*schedule, "slots").unwrap_or_default();
        let Some(entry) = read.get_mut(usize::try_from(stage).unwrap_or(usize::MAX)) else {
            return Err((*schedule, format!("{PASS}: a schedule of stage {stage}, which the step has not")));
        };
        entry.slots = slots
            .chunks_exact(3)
            .map(|s| (u64::try_from(s[0]).unwrap_or(0), usize::try_from(s[1]).unwrap_or(usize::MAX), s[2] != 0))
            .collect();
        if entry.slots.iter().any(|(_, c, _)| *c >= entry.chunks.len()) {
            return Err((*schedule, format!("{PASS}: stage {stage}'s schedule names a chunk it has not")));
        }
    }
    if let Some(s) = read.iter().find(|s| s.slots.is_empty()) {
        return Err((pipeline, format!("{PASS}: stage {} has no dist.schedule", s.stage)));
    }
    Ok(Some(Pipeline { stages: read }))
}

/// The optimizer step updating parameter `p`.
fn optimizer_of<'c, 'm>(t: &Trained<'c, 'm>, p: OperationRef<'c, 'm>) -> Option<OperationRef<'c, 'm>> {
    t.optimizer.iter().copied().find(|s| s.operand(0).ok().and_then(defining_op) == Some(p))
}

/// How a rank's `local` slice of a tensor of type `whole` is split over
/// the `tp` ranks of tensor parallelism (`None`: whole on every rank).
fn split_of(whole: Type, local: Type, tp: i64) -> Result<Option<Split>, String> {
    let dims = super::linalg::type_dims;
    let (w, l) = (dims(whole), dims(local));
    let differ: Vec<usize> = (0..w.len().min(l.len())).filter(|i| w[*i] != l[*i]).collect();
    match differ[..] {
        [] if w.len() == l.len() => Ok(None),
        [d] if w.len() == l.len() && l[d] * tp == w[d] => Ok(Some(Split { dim: d as i64, axis: "tp".into(), flat: None })),
        // Held in fewer parts than ranks: key/value heads replicated in
        // groups (tp a multiple of kv_heads > 1).
        [d] if w.len() == l.len() && l[d] > 0 && w[d] % l[d] == 0 && tp % (w[d] / l[d]) == 0 => Err(format!(
            "is {} but a rank's shard is {}: {} parts, each held by {} of the {tp} tensor-parallel ranks (key/value heads replicated in groups, tp > kv_heads > 1), which the lowering does not run yet; derive the step with tp dividing kv_heads, or kv_heads = 1",
            type_string(whole),
            type_string(local),
            w[d] / l[d],
            tp / (w[d] / l[d])
        )),
        _ => Err(format!(
            "is {} but a rank's shard is {}: not one dimension split over the {tp} tensor-parallel ranks",
            type_string(whole),
            type_string(local)
        )),
    }
}

/// The derived collective `template` run on `input` in groups of `group`
/// ranks: a `dist` op of the same kind and attributes, on the tensor. An
/// all-gather or reduce-scatter of tensor parallelism is sequence
/// parallelism's: it gathers or scatters the sequence, dimension 1 of a
/// `[batch, sequence, hidden]` activation. The template's bytes must be the
/// logical tensor's (the reduced or gathered one).
pub(super) fn collective<'c, 'a>(
    lin: Lin<'c>,
    block: &BlockRef<'c, 'a>,
    template: OperationRef,
    input: Value<'c, 'a>,
    group: i64,
) -> Result<Value<'c, 'a>, String> {
    const SEQUENCE: usize = 1;
    let mut shape = super::linalg::type_dims(input.r#type());
    let bytes = |shape: &[i64]| Some(shape.iter().product::<i64>() * 4);
    let kind = OpKind::of(template);
    if !matches!(kind, Some(OpKind::DistAllGather | OpKind::DistReduceScatter)) {
        check_bytes(template, input, bytes(&shape))?;
        return clone_on(lin, block, template, input, &[], None);
    }
    if shape.len() != 3 || group < 1 {
        return Err(format!(
            "'{}' splits the sequence of {}, which is not a [batch, sequence, hidden] activation",
            name_of(template),
            type_string(input.r#type())
        ));
    }
    let logical = if kind == Some(OpKind::DistAllGather) {
        shape[SEQUENCE] *= group;
        shape.clone()
    } else {
        let whole = shape.clone();
        if shape[SEQUENCE] % group != 0 {
            return Err(format!("'{}' scatters a sequence of {} over {group} ranks", name_of(template), shape[SEQUENCE]));
        }
        shape[SEQUENCE] /= group;
        whole
    };
    check_bytes(template, input, bytes(&logical))?;
    let result = lin.tensor(&shape);
    clone_on(lin, block, template, input, &[("axis", lin.b.i64(SEQUENCE as i64))], Some(result))
}

/// The rank's part of the sequence (dimension 1 of `[b, s, h]`) of the
/// gathered `whole`: the `group` ranks along `template`'s axis (coordinate
/// `(rank / stride) % group`) each hold `s / group` rows.
pub(super) fn rank_part<'c, 'a>(
    lin: Lin<'c>,
    block: &BlockRef<'c, 'a>,
    template: OperationRef,
    whole: Value<'c, 'a>,
    group: i64,
    stride: i64,
) -> Result<Value<'c, 'a>, String> {
    const SEQUENCE: usize = 1;
    let shape = super::linalg::type_dims(whole.r#type());
    if shape.len() != 3 || group < 1 || shape[SEQUENCE] % group != 0 {
        return Err(format!(
            "'{}' gathers again a sequence that {} does not split over {group} ranks",
            name_of(template),
            type_string(whole.r#type())
        ));
    }
    let built = |e: crate::dialect::builder::BuildError| e.to_string();
    let mesh = crate::ir::read::symbol_attr(template, "mesh").ok_or_else(|| format!("'{}' names no mesh", name_of(template)))?;
    let coordinate = axis_coordinate(lin, block, mesh, stride, group)?;
    let rows = shape[SEQUENCE] / group;
    let offset = lin.index_mul(block, coordinate, lin.index_constant(block, rows).map_err(built)?).map_err(built)?;
    let sizes = [shape[0], rows, shape[2]];
    lin.extract_at(block, whole, &[0, 0, 0], &sizes, Some((SEQUENCE, offset))).map_err(built)
}

/// The running rank's coordinate along a mesh axis of `size` ranks whose
/// stride in the row-major rank numbering is `stride`:
/// `(dist.rank / stride) % size`, as an index.
fn axis_coordinate<'c, 'a>(lin: Lin<'c>, block: &BlockRef<'c, 'a>, mesh: &str, stride: i64, size: i64) -> Result<Value<'c, 'a>, String> {
    let index = lin.index;
    let op = |name: &str, operands: &[Value<'c, 'a>], attributes: &[(&str, melior::ir::Attribute<'c>)]| -> Result<Value<'c, 'a>, String> {
        let named: Vec<(Identifier<'c>, melior::ir::Attribute<'c>)> =
            attributes.iter().map(|(n, a)| (Identifier::new(lin.ctx, n), *a)).collect();
        let built = OperationBuilder::new(name, lin.loc).add_operands(operands).add_results(&[index]).add_attributes(&named).build();
        lin.push(block, built, "index arithmetic")
            .map_err(|e| e.to_string())
            .and_then(|r| r.into_iter().next().ok_or_else(|| "no result".to_string()))
    };
    let built = |e: crate::dialect::builder::BuildError| e.to_string();
    let rank = op("dist.rank", &[], &[("mesh", lin.b.symbol(mesh))])?;
    let stride = lin.index_constant(block, stride).map_err(built)?;
    let size = lin.index_constant(block, size).map_err(built)?;
    let coordinate = op("arith.divui", &[rank, stride], &[])?;
    op("arith.remui", &[coordinate, size], &[])
}

/// The bytes a communication `template` states are `bytes`, those of the
/// logical tensor of `input` (the rank's tensor, or what it is gathered
/// into or scattered from).
fn check_bytes(template: OperationRef, input: Value, bytes: Option<i64>) -> Result<(), String> {
    let stated = int_attr(template, "message_bytes");
    if stated != bytes {
        return Err(format!(
            "'{}' '{}' states {} bytes, but a rank's tensor {} is {} bytes",
            name_of(template),
            str_attr(template, "id").unwrap_or("?"),
            stated.unwrap_or(0),
            type_string(input.r#type()),
            bytes.unwrap_or(0)
        ));
    }
    Ok(())
}

/// The derived transfer `template` (a `dist.p2p` at a stage boundary) for
/// microbatch `microbatch`, as one of its ends runs it on `input` (the
/// receiver's is an empty tensor of the same type), on `mesh` when given
/// (the gradients' twin of the program's mesh). Each end is its own op
/// (`<id>@mb<m>.send` / `.recv`, at the template's location) naming the
/// transfer they make together in [`TRANSFER_ATTRIBUTE`], which is what the
/// runtime lowering announces, so both ends check they run the same one.
/// The template's bytes must be the tensor's.
pub(super) fn transfer<'c, 'a>(
    lin: Lin<'c>,
    block: &BlockRef<'c, 'a>,
    template: OperationRef<'c, '_>,
    input: Value<'c, 'a>,
    mesh: Option<&str>,
    microbatch: u64,
    sends: bool,
) -> Result<Value<'c, 'a>, String> {
    let bytes = Some(super::linalg::type_dims(input.r#type()).iter().product::<i64>() * 4);
    check_bytes(template, input, bytes)?;
    let pair = format!("{}@mb{microbatch}", str_attr(template, "id").unwrap_or("p2p"));
    let id = format!("{pair}.{}", if sends { "send" } else { "recv" });
    let b = &lin.b;
    let mut replaced: Vec<(&str, melior::ir::Attribute<'c>)> = vec![("id", b.string(&id)), (TRANSFER_ATTRIBUTE, b.string(&pair))];
    if let Some(mesh) = mesh {
        replaced.push(("mesh", b.symbol(mesh)));
    }
    clone_on(lin.at(template.location()), block, template, input, &replaced, None)
}

/// The optimizer sharded over the data-parallel ranks (the derived
/// program's `optimizer_sharding`): each summed gradient flattened and
/// reduce-scattered (`scatter`, per gradient: its id gains `.b<block>.<step>`,
/// its bytes the gradient's), the optimizer on the rank's contiguous part of
/// each flattened parameter (at its data-parallel coordinate) with zero
/// state, the parts all-gathered (`gather`) into the updated parameters.
/// Returns per block each step's gradient part, new parameter and state
/// parts.
#[allow(clippy::too_many_arguments)]
pub(super) fn optimize_sharded<'c, 'g, 'm>(
    l: Lin<'c>,
    entry: &BlockRef<'c, 'g>,
    (scatter, gather): (OperationRef<'c, 'm>, OperationRef<'c, 'm>),
    distribution: &Distribution<'c, 'm>,
    phases: &super::Phases<'c>,
    blocks: &[usize],
    params: &[Vec<Value<'c, 'g>>],
    grads: Vec<Vec<Value<'c, 'g>>>,
) -> Result<Vec<Value<'c, 'g>>, (Option<OperationRef<'c, 'm>>, String)> {
    let fail = |m: String| (Some(scatter), m);
    let built = |e: crate::dialect::builder::BuildError| (Some(scatter), e.to_string());
    let (mesh, axes, shape) = &distribution.mesh;
    let dp = i64::try_from(distribution.data_parallel).unwrap_or(1);
    let (name, types) = phases.optimizer_shard.as_ref().ok_or_else(|| fail("the sharded optimizer was not built".into()))?;
    // The rank's data-parallel coordinate: (rank / stride) % dp.
    let at = axes.iter().position(|a| a == "dp").ok_or_else(|| fail(format!("mesh @{mesh} has no dp axis")))?;
    let stride: i64 = shape[at + 1..].iter().product();
    let coordinate = axis_coordinate(l, entry, mesh, stride, dp).map_err(fail)?;
    let dims = |v: Value| super::linalg::type_dims(v.r#type());
    let flatten = |v: Value<'c, 'g>| -> Result<Value<'c, 'g>, crate::dialect::builder::BuildError> {
        let d = dims(v);
        if d.len() == 1 {
            return Ok(v);
        }
        let all: Vec<usize> = (0..d.len()).collect();
        l.collapse(entry, v, &[&all], &[d.iter().product()])
    };
    let mut returned = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let mut args = Vec::new();
        for p in &params[i] {
            let n: i64 = dims(*p).iter().product();
            let flat = flatten(*p).map_err(built)?;
            let offset = l.index_mul(entry, coordinate, l.index_constant(entry, n / dp).map_err(built)?).map_err(built)?;
            args.push(l.extract(entry, flat, &[0], &[n / dp], Some(offset)).map_err(built)?);
        }
        let mut parts = Vec::new();
        for (k, g) in grads[i].iter().enumerate() {
            let n: i64 = dims(*g).iter().product();
            let id = format!("{}.b{block}.{}", str_attr(scatter, "id").unwrap_or("grad_reduce"), phases.steps[k].0);
            let b = &l.b;
            let replaced = [("id", b.string(&id)), ("message_bytes", b.count(u64::try_from(n * 4).unwrap_or(0))), ("axis", b.i64(0))];
            let part =
                clone_on(l.at(scatter.location()), entry, scatter, flatten(*g).map_err(built)?, &replaced, Some(l.tensor(&[n / dp])))
                    .map_err(fail)?;
            parts.push(part);
        }
        args.extend(parts.iter().copied());
        for (k, (_, results)) in phases.steps.iter().enumerate() {
            let n: i64 = dims(grads[i][k]).iter().product();
            for _ in 1..*results {
                args.push(l.full(entry, &[n / dp], 0.0).map_err(built)?);
            }
        }
        let updated = super::call(l, entry, name, &args, types).map_err(built)?;
        let mut at = 0;
        for (k, (step, results)) in phases.steps.iter().enumerate() {
            let param = params[i][phases.step_params[k]];
            let shape = dims(param);
            let n: i64 = shape.iter().product();
            let id = format!("{}.b{block}.{step}", str_attr(gather, "id").unwrap_or("param_gather"));
            let b = &l.b;
            let replaced = [("id", b.string(&id)), ("message_bytes", b.count(u64::try_from(n * 4).unwrap_or(0))), ("axis", b.i64(0))];
            let whole = clone_on(l.at(gather.location()), entry, gather, updated[at], &replaced, Some(l.tensor(&[n]))).map_err(fail)?;
            let whole = if shape.len() == 1 {
                whole
            } else {
                let all: Vec<usize> = (0..shape.len()).collect();
                l.expand(entry, whole, &[&all], &shape).map_err(built)?
            };
            returned.push(parts[k]);
            returned.push(whole);
            returned.extend(updated[at + 1..at + results].iter().copied());
            at += results;
        }
    }
    Ok(returned)
}

/// The attribute naming the transfer a `dist.p2p` is one end of.
pub const TRANSFER_ATTRIBUTE: &str = "dist.transfer";

/// The data-parallel gradient reduction `template` (one op for the whole
/// block's gradients) run on one summed gradient: its id gains `suffix`
/// and its bytes are the gradient's.
pub(super) fn gradient_reduction<'c, 'a>(
    lin: Lin<'c>,
    block: &BlockRef<'c, 'a>,
    template: OperationRef<'c, '_>,
    gradient: Value<'c, 'a>,
    bytes: Option<i64>,
    suffix: &str,
) -> Result<Value<'c, 'a>, String> {
    let id = format!("{}.{suffix}", str_attr(template, "id").unwrap_or("grad_reduce"));
    let b = &lin.b;
    let bytes = u64::try_from(bytes.unwrap_or(0)).map_err(|_| "has a negative size".to_string())?;
    clone_on(lin.at(template.location()), block, template, gradient, &[("id", b.string(&id)), ("message_bytes", b.count(bytes))], None)
}

/// `template` (a collective on tokens) rebuilt on the tensor `input`, with
/// `result`'s type (default: the input's), its attributes kept but for
/// `replaced` (set or added) and its stage's slice.
fn clone_on<'c, 'a>(
    lin: Lin<'c>,
    block: &BlockRef<'c, 'a>,
    template: OperationRef,
    input: Value<'c, 'a>,
    replaced: &[(&str, melior::ir::Attribute<'c>)],
    result: Option<Type<'c>>,
) -> Result<Value<'c, 'a>, String> {
    let mut attributes = Vec::new();
    for i in 0..template.attribute_count() {
        let Ok((name, value)) = template.attribute_at(i) else { continue };
        let name = crate::ir::raw::identifier_str(name);
        // The placement is the step's: every rank running it (one stage's
        // ranks, the whole mesh at pp = 1) runs the collective, in the
        // group its axes name from the rank's coordinates.
        if name == "slice" {
            continue;
        }
        if replaced.iter().any(|(n, _)| *n == name) {
            continue;
        }
        // SAFETY: the attribute lives in the same context as the builder.
        let value = unsafe { melior::ir::Attribute::from_raw(melior::ir::AttributeLike::to_raw(&value)) };
        attributes.push((Identifier::new(lin.ctx, name), value));
    }
    for (name, value) in replaced {
        attributes.push((Identifier::new(lin.ctx, name), *value));
    }
    let op = OperationBuilder::new(name_of(template).as_str(), lin.loc)
        .add_operands(&[input])
        .add_results(&[result.unwrap_or_else(|| input.r#type())])
        .add_attributes(&attributes)
        .build();
    let name = "dist collective";
    lin.push(block, op, name).map_err(|e| e.to_string())?.into_iter().next().ok_or_else(|| format!("cannot build {name}"))
}
