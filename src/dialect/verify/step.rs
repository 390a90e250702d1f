//! Whole-step rules, shared by `dist` and `plan`: a pipeline, its chunks
//! (Megatron's interleaved assignment of blocks) and its per-stage
//! schedules (every microbatch through every chunk, forward before
//! backward, once each).

use std::collections::HashMap;

use melior::ir::{block::BlockLike, operation::OperationLike, OperationRef, RegionLike, ValueLike};

use super::checker::{position_of, Checker};
use crate::{
    analysis::schedule::{chunk_assignment, fullest_stage_blocks},
    dialect::dist::mesh::Meshes,
    ir::{
        ods::{OpKind, PipelineSchedule},
        read::{enum_attr, i64_array_attr, int_attr, str_attr, symbol_attr, type_string},
    },
};

/// A pipeline as the rules need it.
struct Pipeline<'c, 'a> {
    op: OperationRef<'c, 'a>,
    stages: u64,
    chunks: u64,
    microbatches: u64,
    blocks: u64,
    /// The chunk and schedule ops seen for it, by (stage, chunk) / stage.
    chunk_ops: HashMap<(u64, u64), OperationRef<'c, 'a>>,
    schedule_ops: HashMap<u64, OperationRef<'c, 'a>>,
}

fn count(op: OperationRef, name: &str) -> u64 {
    int_attr(op, name).and_then(|v| u64::try_from(v).ok()).unwrap_or(0)
}

pub fn check(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) {
    // Only pipelines, chunks, schedules and meshes matter here: a few ops
    // of a step's many.
    let step_ops: Vec<(OpKind, OperationRef)> = ops
        .iter()
        .copied()
        .filter(|(kind, _)| {
            matches!(
                kind,
                OpKind::DistPipeline
                    | OpKind::DistChunk
                    | OpKind::DistSchedule
                    | OpKind::PlanPipeline
                    | OpKind::PlanChunk
                    | OpKind::PlanSchedule
                    | OpKind::DistMesh
            )
        })
        .collect();
    if step_ops.is_empty() {
        return;
    }
    let mesh_ops: Vec<OperationRef> = step_ops.iter().filter(|(kind, _)| *kind == OpKind::DistMesh).map(|(_, op)| *op).collect();
    let meshes = Meshes::of(&mesh_ops);
    for dialect in ["dist", "plan"] {
        check_layer(checker, &step_ops, &meshes, dialect);
    }
}

fn check_layer(checker: &mut Checker, ops: &[(OpKind, OperationRef)], meshes: &Meshes, dialect: &str) {
    let (pipeline_kind, chunk_kind, schedule_kind) = if dialect == "dist" {
        (OpKind::DistPipeline, OpKind::DistChunk, OpKind::DistSchedule)
    } else {
        (OpKind::PlanPipeline, OpKind::PlanChunk, OpKind::PlanSchedule)
    };
    let mut pipelines: HashMap<&str, Pipeline> = HashMap::new();
    for &(kind, op) in ops {
        if kind != pipeline_kind {
            continue;
        }
        let pipeline = Pipeline {
            op,
            stages: count(op, "stages"),
            chunks: count(op, "chunks"),
            microbatches: count(op, "microbatches"),
            blocks: count(op, "blocks"),
            chunk_ops: HashMap::new(),
            schedule_ops: HashMap::new(),
        };
        check_pipeline(checker, &pipeline, meshes);
        if let Some(name) = str_attr(op, "sym_name") {
            pipelines.insert(name, pipeline);
        }
    }
    for &(kind, op) in ops {
        if kind != chunk_kind && kind != schedule_kind {
            continue;
        }
        let Some(pipeline) = symbol_attr(op, "pipeline").and_then(|name| pipelines.get_mut(name)) else {
            let name = symbol_attr(op, "pipeline").unwrap_or_default();
            checker.error(op, format!("'pipeline' @{name} does not name a '{}' in this module", pipeline_kind.name()));
            continue;
        };
        if pipeline.op.has_attribute("unrolled") {
            checker.error(op, "belongs to an unrolled pipeline, whose tasks are instances (no chunks or schedules remain)");
            continue;
        }
        if kind == chunk_kind {
            check_chunk(checker, op, pipeline, dialect);
        } else {
            check_schedule(checker, op, pipeline);
        }
    }
    let mut names: Vec<&&str> = pipelines.keys().collect();
    names.sort();
    for name in names {
        let pipeline = &pipelines[*name];
        if pipeline.op.has_attribute("unrolled") {
            continue;
        }
        for stage in 0..pipeline.stages.min(1 << 20) {
            for chunk in 0..pipeline.chunks.min(1 << 20) {
                if !pipeline.chunk_ops.contains_key(&(stage, chunk)) {
                    checker.error(pipeline.op, format!("has no chunk for stage {stage} chunk {chunk}"));
                    return;
                }
            }
            if !pipeline.schedule_ops.contains_key(&stage) {
                checker.error(pipeline.op, format!("has no schedule for stage {stage}"));
                return;
            }
        }
    }
}

fn check_pipeline(checker: &mut Checker, p: &Pipeline, meshes: &Meshes) {
    let op = p.op;
    if let (Some(mesh), Some(along)) = (meshes.of_op(op), str_attr(op, "along")) {
        match mesh.axis_size(along) {
            None => {
                checker.error(op, format!("'along' axis '{along}' is not an axis of mesh @{}", symbol_attr(op, "mesh").unwrap_or_default()))
            }
            Some(size) if u64::try_from(size).ok() != Some(p.stages) => {
                checker.error(op, format!("has {} stages, but mesh axis '{along}' has size {size}", p.stages));
            }
            Some(_) => {}
        }
    }
    if p.stages > 0 && p.chunks > 0 && chunk_assignment(p.blocks, p.stages, p.chunks, 0, 0).is_none() {
        checker.error(
            op,
            format!(
                "has {} blocks over {} stages x {} chunks: every stage needs a block and the fullest stage's {} blocks must split evenly into the chunks",
                p.blocks,
                p.stages,
                p.chunks,
                fullest_stage_blocks(p.blocks, p.stages)
            ),
        );
    }
    match enum_attr::<PipelineSchedule>(op, "schedule") {
        Some(kind @ (PipelineSchedule::OneFOneB | PipelineSchedule::Gpipe)) if p.chunks != 1 => {
            checker.error(op, format!("schedule '{}' runs one chunk per stage, but chunks = {}", kind.name(), p.chunks));
        }
        Some(PipelineSchedule::InterleavedOneFOneB) if p.chunks < 2 => {
            checker.error(op, "schedule 'interleaved_one_f_one_b' needs at least 2 chunks per stage");
        }
        _ => {}
    }
}

fn check_chunk<'c, 'a>(checker: &mut Checker, op: OperationRef<'c, 'a>, p: &mut Pipeline<'c, 'a>, dialect: &str) {
    let (stage, chunk) = (count(op, "stage"), count(op, "chunk"));
    if stage >= p.stages || chunk >= p.chunks {
        checker.error(
            op,
            format!(
                "is stage {stage} chunk {chunk}, but the pipeline has stages 0..{} and chunks 0..{}",
                p.stages.saturating_sub(1),
                p.chunks.saturating_sub(1)
            ),
        );
        return;
    }
    if let Some(first) = p.chunk_ops.get(&(stage, chunk)) {
        checker.error(op, format!("is a second chunk for stage {stage} chunk {chunk} (the first is at {})", position_of(*first)));
        return;
    }
    p.chunk_ops.insert((stage, chunk), op);
    // The pipeline's own check reports a block count with no assignment.
    if let Some((first, per_chunk)) = chunk_assignment(p.blocks, p.stages, p.chunks, stage, chunk) {
        let blocks = count(op, "blocks");
        if blocks != per_chunk {
            checker.error(op, format!("holds {blocks} blocks, but the pipeline gives chunk {chunk} of stage {stage} {per_chunk}"));
        }
        let first_block = count(op, "first_block");
        if first_block != first {
            checker.error(op, format!("has first_block = {first_block}, but chunk {chunk} of stage {stage} starts at block {first} (Megatron's interleaved assignment)"));
        }
    }
    let token = format!("!{dialect}.token");
    for (index, name) in ["template", "boundary"].iter().enumerate() {
        let arguments = op
            .region(index)
            .ok()
            .and_then(|r| r.first_block())
            .map(|b| (0..b.argument_count()).filter_map(|i| b.argument(i).ok()).map(|a| type_string(a.r#type())).collect::<Vec<_>>());
        if arguments.as_deref() != Some(std::slice::from_ref(&token)) {
            checker.error(op, format!("'{name}' region must take one {token} argument (the entry token)"));
        }
    }
}

fn check_schedule<'c, 'a>(checker: &mut Checker, op: OperationRef<'c, 'a>, p: &mut Pipeline<'c, 'a>) {
    let stage = count(op, "stage");
    if stage >= p.stages {
        checker.error(op, format!("is for stage {stage}, but the pipeline has stages 0..{}", p.stages.saturating_sub(1)));
        return;
    }
    if let Some(first) = p.schedule_ops.get(&stage) {
        checker.error(op, format!("is a second schedule for stage {stage} (the first is at {})", position_of(*first)));
        return;
    }
    p.schedule_ops.insert(stage, op);
    let slots = i64_array_attr(op, "slots").unwrap_or_default();
    if !slots.len().is_multiple_of(3) {
        checker.error(op, format!("'slots' must be (microbatch, chunk, direction) triples, but has {} values", slots.len()));
        return;
    }
    // State per (microbatch, chunk): 0 none, 1 forward run, 2 backward run.
    let pairs = p.microbatches.saturating_mul(p.chunks);
    let expected = usize::try_from(pairs.saturating_mul(2)).unwrap_or(usize::MAX);
    if slots.len() / 3 != expected {
        checker.error(
            op,
            format!(
                "has {} slots, but {} microbatches x {} chunks need {expected} (a forward and a backward each)",
                slots.len() / 3,
                p.microbatches,
                p.chunks
            ),
        );
        return;
    }
    let mut state = vec![0u8; expected / 2];
    for (k, slot) in slots.chunks_exact(3).enumerate() {
        let (mb, chunk, direction) = (slot[0], slot[1], slot[2]);
        let in_range = |v: i64, n: u64| u64::try_from(v).is_ok_and(|v| v < n);
        if !in_range(mb, p.microbatches) || !in_range(chunk, p.chunks) || !(direction == 0 || direction == 1) {
            checker.error(op, format!("slot #{k} ({mb}, {chunk}, {direction}) is outside microbatches 0..{}, chunks 0..{}, direction 0 (forward) or 1 (backward)", p.microbatches - 1, p.chunks - 1));
            return;
        }
        let index = usize::try_from(mb as u64 * p.chunks + chunk as u64).unwrap_or(0);
        let (want, what) = if direction == 0 { (0, "forward") } else { (1, "backward") };
        if state[index] != want {
            let why = if direction == 1 && state[index] == 0 { "before its forward" } else { "a second time" };
            checker.error(op, format!("slot #{k} runs the {what} of microbatch {mb} chunk {chunk} {why}"));
            return;
        }
        state[index] += 1;
    }
}
