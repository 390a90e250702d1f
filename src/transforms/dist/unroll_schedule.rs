//! `dist-unroll-schedule`: expands a whole-step program (one block
//! template per chunk, one slot order per stage) into every task instance
//! of the step, in `func.func @step_tasks`.
//!
//! Each stage's instances follow its `dist.schedule`: a forward slot runs
//! the template's forward tasks for each block of the chunk (ascending),
//! then the chunk's `send_activation`; a backward slot runs recompute,
//! re-communication and gradient tasks for each block (descending), then
//! `send_gradient`; after its last slot the stage runs each block's
//! once-per-step tasks (data-parallel reduction, optimizer). Instances are
//! named `<template id>@b<block>.mb<microbatch>` (`@b<block>` once per
//! step, `@mb<microbatch>` for transfers) and carry `block`, `stage`,
//! `chunk` and `microbatch`. Dependencies: each stage's instances form one
//! token chain, and the first task of a slot also waits for the transfer
//! that brings its input from the neighbouring chunk.
//!
//! Instances are emitted in an order in which every use follows its
//! definition (the stages advance as their inputs arrive), which also
//! proves the schedules free of deadlock; a schedule that deadlocks is an
//! error naming the stage and what it waits for. The pass is linear in the
//! number of instances; on any error it changes nothing.

use std::collections::{HashMap, VecDeque};

use melior::{
    ir::{
        block::BlockLike,
        operation::{OperationLike, OperationMutLike},
        BlockRef, Location, Module, Operation, OperationRef, RegionLike, Value,
    },
    pass::ExternalPass,
};

use crate::{
    dialect::builder::Builder,
    ir::{
        ods::{OpKind, Phase},
        read::{collect_ops, enum_attr, i64_array_attr, str_attr, symbol_attr},
    },
};

crate::ir::pass_macro::external_pass!(
    "DistUnrollSchedule",
    "dist-unroll-schedule",
    "Expand a whole-step dist program (chunks and schedules) into every task instance of the step, in schedule order",
    run
);

type Failure<'c, 'a> = (OperationRef<'c, 'a>, String);

/// Most task instances an unrolled step may have.
pub const MAX_INSTANCES: u64 = 1 << 24;

fn run(module: OperationRef, pass: ExternalPass) {
    let generated = Module::new(module.location());
    match unroll(module, &generated) {
        Ok(replaced) => {
            let _ = crate::ir::rewrite::move_into(&generated, module);
            for op in replaced.erase {
                // SAFETY: each op is a live top-level op of `module`, erased once.
                unsafe { mlir_sys::mlirOperationDestroy(op.to_raw()) };
            }
            let b = Builder::of(module);
            let mut pipeline = replaced.pipeline;
            pipeline.set_attribute("unrolled", b.unit());
        }
        Err((op, message)) => {
            crate::ir::diagnostics::emit_error(op.location(), &format!("dist-unroll-schedule: {message}"));
            pass.signal_failure();
        }
    }
}

/// The function holding the instances of pipeline `pipeline`.
#[must_use]
pub fn instances_function(pipeline: &str) -> String {
    format!("{pipeline}_tasks")
}

/// What the pass replaces once the instances are built.
struct Replaced<'c, 'a> {
    pipeline: melior::ir::operation::OperationRefMut<'c, 'a>,
    erase: Vec<OperationRef<'c, 'a>>,
}

/// The tasks of one chunk, by where they run.
struct ChunkTasks<'c, 'a> {
    first_block: u64,
    blocks: u64,
    forward: Vec<OperationRef<'c, 'a>>,
    backward: Vec<OperationRef<'c, 'a>>,
    per_step: Vec<OperationRef<'c, 'a>>,
    send_forward: Option<OperationRef<'c, 'a>>,
    send_backward: Option<OperationRef<'c, 'a>>,
}

fn count(op: OperationRef, name: &str) -> u64 {
    crate::ir::read::u64_attr(op, name).unwrap_or(0)
}

/// A chunk region's ops without its terminator.
fn region_ops<'c, 'a>(op: OperationRef<'c, 'a>, index: usize) -> Vec<OperationRef<'c, 'a>> {
    let mut ops = crate::ir::read::region_ops(op, index);
    ops.retain(|o| OpKind::of(*o) != Some(OpKind::DistYield));
    ops
}

fn is_task(op: OperationRef) -> bool {
    OpKind::of(op).is_some_and(|k| k == OpKind::DistCompute || k.is_communication() || k == OpKind::DistControl)
}

fn unroll<'c, 'a>(module: OperationRef<'c, 'a>, generated: &Module<'c>) -> Result<Replaced<'c, 'a>, Failure<'c, 'a>> {
    let ops = collect_ops(module);
    let pipelines: Vec<OperationRef> = ops.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::DistPipeline)).collect();
    let pipeline = match pipelines.as_slice() {
        [] => return Err((module, "no 'dist.pipeline' to unroll (run distribute-transformer-training first)".into())),
        [one] => *one,
        [_, second, ..] => return Err((*second, "expected one 'dist.pipeline', found several".into())),
    };
    if pipeline.has_attribute("unrolled") {
        return Err((pipeline, "the pipeline is already unrolled".into()));
    }
    let name = str_attr(pipeline, "sym_name").unwrap_or_default();
    let (stages, chunks, microbatches) = (count(pipeline, "stages"), count(pipeline, "chunks"), count(pipeline, "microbatches"));
    let mut chunk_tasks: HashMap<(u64, u64), ChunkTasks> = HashMap::new();
    let mut schedules: HashMap<u64, Vec<i64>> = HashMap::new();
    let mut erase = Vec::new();
    for &op in &ops {
        let kind = OpKind::of(op);
        if !matches!(kind, Some(OpKind::DistChunk | OpKind::DistSchedule)) || symbol_attr(op, "pipeline") != Some(name) {
            continue;
        }
        erase.push(op);
        let stage = count(op, "stage");
        if kind == Some(OpKind::DistSchedule) {
            schedules.insert(stage, i64_array_attr(op, "slots").unwrap_or_default());
            continue;
        }
        let mut tasks = ChunkTasks {
            first_block: count(op, "first_block"),
            blocks: count(op, "blocks"),
            forward: Vec::new(),
            backward: Vec::new(),
            per_step: Vec::new(),
            send_forward: None,
            send_backward: None,
        };
        for task in region_ops(op, 0) {
            if !is_task(task) {
                return Err((task, "only task ops can be unrolled from a chunk template".into()));
            }
            match enum_attr::<Phase>(task, "phase") {
                Some(Phase::Forward) => tasks.forward.push(task),
                Some(Phase::Optimizer) => tasks.per_step.push(task),
                _ => tasks.backward.push(task),
            }
        }
        for task in region_ops(op, 1) {
            match (OpKind::of(task), enum_attr::<Phase>(task, "phase")) {
                (Some(OpKind::DistP2P), Some(Phase::Forward)) => tasks.send_forward = Some(task),
                (Some(OpKind::DistP2P), Some(_)) => tasks.send_backward = Some(task),
                _ => return Err((task, "a chunk boundary holds only its 'dist.p2p' transfers".into())),
            }
        }
        chunk_tasks.insert((stage, count(op, "chunk")), tasks);
    }
    for stage in 0..stages {
        if !schedules.contains_key(&stage) {
            return Err((pipeline, format!("stage {stage} has no 'dist.schedule'")));
        }
        for chunk in 0..chunks {
            if !chunk_tasks.contains_key(&(stage, chunk)) {
                return Err((pipeline, format!("stage {stage} has no chunk {chunk}")));
            }
        }
    }
    // The instances the step will have, bounded before anything is built.
    let instances = chunk_tasks.values().try_fold(0u64, |total, t| {
        let per_microbatch = (t.forward.len() + t.backward.len()) as u64 * t.blocks
            + u64::from(t.send_forward.is_some())
            + u64::from(t.send_backward.is_some());
        total.checked_add(per_microbatch.checked_mul(microbatches)?)?.checked_add(t.per_step.len() as u64 * t.blocks)
    });
    if instances.is_none_or(|n| n > MAX_INSTANCES) {
        return Err((pipeline, format!("the step would have more than {MAX_INSTANCES} (2^24) task instances; keep it structured")));
    }
    let b = Builder::of(module);
    let token = b.dist_token();
    let location = pipeline.location();
    let function = generated
        .body()
        .append_operation(b.func(&instances_function(name), &[token], &[], location).map_err(|e| (pipeline, e.to_string()))?);
    let body = function.region(0).ok().and_then(|r| r.first_block()).ok_or((pipeline, "cannot build func.func".to_string()))?;
    let entry: Value = body.argument(0).map(Into::into).map_err(|_| (pipeline, "cannot build func.func".to_string()))?;
    let mut unroller = Unroller {
        b,
        body,
        stages,
        chunks,
        microbatches,
        chunk_tasks: &chunk_tasks,
        schedules: &schedules,
        previous: vec![entry; usize::try_from(stages).unwrap_or(0)],
        cursor: vec![0; usize::try_from(stages).unwrap_or(0)],
        arrived: HashMap::new(),
        waiting: HashMap::new(),
        woken: Vec::new(),
    };
    unroller.run().map_err(|e| (pipeline, e))?;
    body.append_operation(b.func_return(&[], location).map_err(|e| (pipeline, e.to_string()))?);
    // Safe to take a mutable handle: the pipeline is a top-level op of `module`.
    let pipeline_mut = unsafe { melior::ir::operation::OperationRefMut::from_raw(pipeline.to_raw()) };
    Ok(Replaced { pipeline: pipeline_mut, erase })
}

/// The direction of a slot or of a transfer.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Direction {
    Forward,
    Backward,
}

struct Unroller<'u, 'c, 'a, 'g> {
    b: Builder<'c>,
    body: BlockRef<'c, 'g>,
    stages: u64,
    chunks: u64,
    microbatches: u64,
    chunk_tasks: &'u HashMap<(u64, u64), ChunkTasks<'c, 'a>>,
    schedules: &'u HashMap<u64, Vec<i64>>,
    /// Last token of each stage's chain.
    previous: Vec<Value<'c, 'g>>,
    /// Next slot of each stage.
    cursor: Vec<usize>,
    /// Transfers emitted: (direction, microbatch, receiving virtual chunk).
    arrived: HashMap<(Direction, u64, u64), Value<'c, 'g>>,
    /// Stages blocked on a transfer not yet emitted, and those it woke.
    waiting: HashMap<(Direction, u64, u64), u64>,
    woken: Vec<u64>,
}

impl<'c, 'g> Unroller<'_, 'c, '_, 'g> {
    fn run(&mut self) -> Result<(), String> {
        let mut ready: VecDeque<u64> = (0..self.stages).collect();
        let mut finished = 0;
        while let Some(stage) = ready.pop_front() {
            match self.advance(stage)? {
                Some(awaited) => {
                    self.waiting.insert(awaited, stage);
                }
                None => {
                    self.per_step(stage)?;
                    finished += 1;
                }
            }
            // Stages whose input has now arrived go again.
            ready.extend(self.woken.drain(..));
        }
        if finished < self.stages {
            let mut blocked: Vec<_> = self.waiting.iter().map(|(k, s)| (*s, *k)).collect();
            blocked.sort_by_key(|(s, _)| *s);
            let (stage, (direction, mb, _)) = blocked.first().copied().unwrap_or((0, (Direction::Forward, 0, 0)));
            let what = if direction == Direction::Forward { "activation" } else { "gradient" };
            return Err(format!(
                "the schedules deadlock: stage {stage} waits for the {what} of microbatch {mb}, which no stage sends before it is needed"
            ));
        }
        Ok(())
    }

    /// Runs `stage`'s slots until one waits for a transfer not yet sent
    /// (returned) or all ran (`None`).
    fn advance(&mut self, stage: u64) -> Result<Option<(Direction, u64, u64)>, String> {
        let s = usize::try_from(stage).unwrap_or(0);
        let slots = &self.schedules[&stage];
        let virtual_chunks = self.stages * self.chunks;
        while self.cursor[s] * 3 + 2 < slots.len() {
            let slot = &slots[self.cursor[s] * 3..self.cursor[s] * 3 + 3];
            let (mb, chunk) = (u64::try_from(slot[0]).unwrap_or(0), u64::try_from(slot[1]).unwrap_or(0));
            let direction = if slot[2] == 0 { Direction::Forward } else { Direction::Backward };
            if mb >= self.microbatches || chunk >= self.chunks {
                return Err(format!("stage {stage} slot #{} is outside the pipeline", self.cursor[s]));
            }
            let k = chunk * self.stages + stage;
            let needs_input = match direction {
                Direction::Forward => k > 0,
                Direction::Backward => k + 1 < virtual_chunks,
            };
            let key = (direction, mb, k);
            let incoming = if needs_input && self.stages > 1 {
                match self.arrived.get(&key) {
                    Some(token) => Some(*token),
                    None => return Ok(Some(key)),
                }
            } else {
                None
            };
            self.slot(stage, chunk, mb, direction, incoming)?;
            self.cursor[s] += 1;
        }
        Ok(None)
    }

    fn slot(&mut self, stage: u64, chunk: u64, mb: u64, direction: Direction, incoming: Option<Value<'c, 'g>>) -> Result<(), String> {
        let tasks = &self.chunk_tasks[&(stage, chunk)];
        let blocks: Vec<u64> = match direction {
            Direction::Forward => (tasks.first_block..tasks.first_block + tasks.blocks).collect(),
            Direction::Backward => (tasks.first_block..tasks.first_block + tasks.blocks).rev().collect(),
        };
        let template = if direction == Direction::Forward { &tasks.forward } else { &tasks.backward };
        let mut extra = incoming;
        for block in blocks {
            for task in template {
                let id = format!("{}@b{block}.mb{mb}", str_attr(*task, "id").unwrap_or_default());
                self.instance(*task, stage, &id, Instance { block: Some(block), chunk, microbatch: Some(mb) }, extra.take())?;
            }
        }
        let (send, receiver) = match direction {
            Direction::Forward => (tasks.send_forward, chunk * self.stages + stage + 1),
            Direction::Backward => (tasks.send_backward, (chunk * self.stages + stage).wrapping_sub(1)),
        };
        if let Some(send) = send {
            let id = format!("{}@mb{mb}", str_attr(send, "id").unwrap_or_default());
            let token = self.instance(send, stage, &id, Instance { block: None, chunk, microbatch: Some(mb) }, extra.take())?;
            self.arrived.insert((direction, mb, receiver), token);
            if let Some(waiting) = self.waiting.remove(&(direction, mb, receiver)) {
                self.woken.push(waiting);
            }
        }
        Ok(())
    }

    /// The once-per-step tasks of every block of `stage`.
    fn per_step(&mut self, stage: u64) -> Result<(), String> {
        for chunk in 0..self.chunks {
            let tasks = &self.chunk_tasks[&(stage, chunk)];
            for block in tasks.first_block..tasks.first_block + tasks.blocks {
                for task in &tasks.per_step {
                    let id = format!("{}@b{block}", str_attr(*task, "id").unwrap_or_default());
                    self.instance(*task, stage, &id, Instance { block: Some(block), chunk, microbatch: None }, None)?;
                }
            }
        }
        Ok(())
    }

    /// Appends a copy of `task` after the stage's last instance (and after
    /// `incoming`), named `id`; returns its token.
    fn instance(
        &mut self,
        task: OperationRef<'c, '_>,
        stage: u64,
        id: &str,
        at: Instance,
        incoming: Option<Value<'c, 'g>>,
    ) -> Result<Value<'c, 'g>, String> {
        let s = usize::try_from(stage).unwrap_or(0);
        let b = self.b;
        let token_type = b.dist_token();
        let mut op = match task.result(0) {
            // A collective on a tensor: its instance is on the stage's token
            // chain, so it takes and gives a token (its attributes kept).
            Ok(result) if melior::ir::ValueLike::r#type(&result) != token_type => {
                melior::ir::operation::OperationBuilder::new(&crate::ir::read::name_of(task), task.location())
                    .add_operands(&[self.previous[s]])
                    .add_results(&[token_type])
                    .add_attributes(&crate::ir::rewrite::attributes_of(task))
                    .build()
                    .map_err(|_| format!("cannot rebuild '{}' on tokens", str_attr(task, "id").unwrap_or_default()))?
            }
            // SAFETY: cloning a live op gives a new, unparented op we own.
            _ => unsafe { Operation::from_raw(mlir_sys::mlirOperationClone(task.to_raw())) },
        };
        // A tiled collective names its linear's instance: the same suffix.
        if let Some(with) = str_attr(task, "tiled_with") {
            let suffix = id.get(str_attr(task, "id").unwrap_or_default().len()..).unwrap_or_default();
            op.set_attribute("tiled_with", b.string(&format!("{with}{suffix}")));
        }
        op.set_attribute("id", b.string(id));
        op.set_attribute("stage", b.count(stage));
        op.set_attribute("chunk", b.count(at.chunk));
        if let Some(block) = at.block {
            op.set_attribute("block", b.count(block));
        }
        if let Some(mb) = at.microbatch {
            op.set_attribute("microbatch", b.count(mb));
        }
        op.set_location(self.location(task, id));
        let previous = self.previous[s];
        let operands: Vec<Value> = std::iter::once(previous).chain(incoming).collect();
        op.set_operands(&operands);
        let op = self.body.append_operation(op);
        let token: Value = op.result(0).map(Into::into).map_err(|_| format!("task '{id}' has no token result"))?;
        self.previous[s] = token;
        Ok(token)
    }

    /// The template task's location, renamed to the instance.
    fn location(&self, task: OperationRef<'c, '_>, id: &str) -> Location<'c> {
        let location = task.location();
        // SAFETY: both calls take and return live locations of this context.
        let child = unsafe {
            if mlir_sys::mlirLocationIsAName(location.to_raw()) {
                Location::from_raw(mlir_sys::mlirLocationNameGetChildLoc(location.to_raw()))
            } else {
                location
            }
        };
        self.b.named_location(id, child)
    }
}

#[derive(Clone, Copy)]
struct Instance {
    block: Option<u64>,
    chunk: u64,
    microbatch: Option<u64>,
}
