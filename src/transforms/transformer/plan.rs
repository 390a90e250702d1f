//! `plan-transformer-training`: DistributedTaskIR -> PortablePlanIR.
//!
//! Each distributed task becomes one plan task with its work facts copied
//! exactly, abstract per-rank resource demand (compute operations, memory
//! traffic, network bytes), a capability requirement (matrix-multiply,
//! vector-elementwise or the communication kind) and a concurrency group
//! (`compute` or `network`). Dependencies follow the distributed token
//! graph. Memory facts and boundary values become buffers; the plan states
//! its objectives and the digest of the dist program it came from. No
//! kernel, device, queue or duration appears.
//!
//! Validation comes first; on any error the module is left unchanged.

use melior::{
    ir::{block::BlockLike, operation::OperationLike, Block, Module, OperationRef, Region, RegionLike, Value, ValueLike},
    pass::ExternalPass,
};

use super::{emit::Emitter, Failure};
use crate::{
    dialect::{
        builder::{result, BuildError, Builder},
        dist::mesh::Meshes,
        plan,
    },
    ir::{
        digest::layer_digest_visiting,
        ods::{
            ComputeCapability, ConcurrencyGroup, Engine, MemoryKind, MemorySpace, ObjectiveKind, OpKind, Phase, PipelineSchedule,
            TileOverlap,
        },
        read::{
            defining_op, dialect_of, enum_attr, i64_array_attr, int_attr, name_of, str_attr, string_list, string_list_list, symbol_attr,
            tensor_element, tensor_shape, type_string, Attrs, KindMemo,
        },
    },
};

/// Alignment of every planned buffer (a power of two; abstract, not a bank).
const BUFFER_ALIGNMENT: u64 = 256;

/// `plan-transformer-training`.
pub mod training {
    use super::*;
    crate::ir::pass_macro::external_pass!(
        "PlanTransformerTraining",
        "plan-transformer-training",
        "Turn the dist program into a portable plan with exact work facts and abstract resources",
        |module: OperationRef, pass: ExternalPass| super::super::run_building(module, pass, |m, g| build(
            m,
            g,
            "plan-transformer-training"
        ))
    );
}

/// `plan-transformer-inference`: the same planning, under its own name.
pub mod inference {
    use super::*;
    crate::ir::pass_macro::external_pass!(
        "PlanTransformerInference",
        "plan-transformer-inference",
        "Same planning for an inference dist program (prefill and decode tasks, KV-cache buffers)",
        |module: OperationRef, pass: ExternalPass| super::super::run_building(module, pass, |m, g| build(
            m,
            g,
            "plan-transformer-inference"
        ))
    );
}

fn build<'c, 'a>(module: OperationRef<'c, 'a>, generated: &Module<'c>, pass: &str) -> Result<(), Failure<'c, 'a>> {
    let ops = ops_and_kinds(module);
    let is_plan =
        |(op, kind): &(OperationRef, Option<OpKind>)| kind.map_or_else(|| dialect_of(&name_of(*op)) == "plan", |k| k.dialect() == "plan");
    if let Some((existing, _)) = ops.iter().find(|entry| is_plan(entry)) {
        return Err((*existing, format!("{pass}: the module already holds a plan")));
    }
    if !ops.iter().any(|(_, kind)| *kind == Some(OpKind::DistHeader)) {
        return Err((
            module,
            format!(
                "{pass}: no 'dist' program to plan (run distribute-transformer-{} first)",
                pass.trim_start_matches("plan-transformer-")
            ),
        ));
    }
    let mesh_ops: Vec<OperationRef> = ops.iter().filter(|(_, k)| *k == Some(OpKind::DistMesh)).map(|(op, _)| *op).collect();
    let meshes = Meshes::of(&mesh_ops);
    // The digest reads every dist op; each task's facts are checked as it
    // does (while the op is in cache), the first failure kept for the
    // validation below, which reports failures in program order.
    let mut overflowing = None;
    let mut kinds = KindMemo::default();
    let digest = layer_digest_visiting(module, "dist", ops.len(), |raw| {
        // SAFETY: the encoder visits live ops of the module.
        let op = unsafe { OperationRef::from_raw(raw) };
        if overflowing.is_none()
            && kinds.of(op) == Some(OpKind::DistCompute)
            && count(op, "read_bytes").checked_add(count(op, "write_bytes")).is_none_or(|d| i64::try_from(d).is_err())
        {
            overflowing = Some(raw.ptr);
        }
    });
    // Validate every op first: nothing is built for an input that fails.
    for &(op, kind) in &ops {
        let Some(kind) = kind else { continue };
        if kind.dialect() != "dist" {
            continue;
        }
        match kind {
            OpKind::DistValue | OpKind::DistOutput => {
                let ty =
                    if kind == OpKind::DistValue { op.result(0).ok().map(|r| r.r#type()) } else { op.operand(0).ok().map(|v| v.r#type()) };
                if ty.and_then(|t| shard_bytes(op, t, &meshes)).is_none() {
                    return Err((
                        op,
                        format!("{pass}: boundary value needs a static shape, a known element type and a shard of at most 2^63 - 1 bytes"),
                    ));
                }
            }
            // Plan facts are i64 attributes: read + write must fit, exactly.
            OpKind::DistCompute if overflowing == Some(op.to_raw().ptr) => {
                let id = str_attr(op, "id").unwrap_or_default();
                return Err((op, format!("{pass}: memory demand of task '{id}' (read_bytes + write_bytes) exceeds 2^63 - 1 bytes")));
            }
            OpKind::DistHeader
            | OpKind::DistMesh
            | OpKind::DistMemory
            | OpKind::DistCompute
            | OpKind::DistPipeline
            | OpKind::DistChunk
            | OpKind::DistYield
            | OpKind::DistSchedule => {}
            k if k.is_communication() && !k.is_async() => {}
            other => {
                return Err((op, format!("{pass}: '{}' has no portable-plan form (plan before dist-async and lowering)", other.name())));
            }
        }
    }
    emit_plan(generated, module, &ops, &meshes, &digest).map_err(|e| (module, e.to_string()))
}

/// Every op of `module` (pre-order) with its kind, read in the one walk:
/// the later loops read this array, not the ops (touching 400k ops again
/// is a cache miss each).
fn ops_and_kinds<'c, 'a>(module: OperationRef<'c, 'a>) -> Vec<(OperationRef<'c, 'a>, Option<OpKind>)> {
    let (mut raw, mut kinds) = (Vec::new(), KindMemo::default());
    module.walk(melior::ir::operation::WalkOrder::PreOrder, |op| {
        raw.push((op.to_raw(), kinds.of(op)));
        melior::ir::operation::WalkResult::Advance
    });
    // SAFETY: ops of `module`, which outlives 'a.
    raw.into_iter().map(|(r, kind)| (unsafe { OperationRef::from_raw(r) }, kind)).collect()
}

fn emit_plan<'c>(
    generated: &Module<'c>,
    module: OperationRef,
    ops: &[(OperationRef, Option<OpKind>)],
    meshes: &Meshes,
    digest: &str,
) -> Result<(), BuildError> {
    let anchor = module.location();
    let b = Builder::of(generated.as_operation());
    let top = Emitter::new(b, generated.body(), anchor);
    top.push(
        plan::Header { schema_name: "blueprint.plan", schema_version: "1.0", source_digest: digest, optional: Default::default() }
            .build(&b, anchor),
    )?;
    for &(op, kind) in ops {
        if kind == Some(OpKind::DistPipeline) {
            // (Plan symbols live beside the dist program's: prefixed.)
            let name = planned_symbol(str_attr(op, "sym_name").unwrap_or_default());
            top.push(
                plan::Pipeline {
                    sym_name: &name,
                    schedule: enum_attr::<PipelineSchedule>(op, "schedule").unwrap_or(PipelineSchedule::OneFOneB),
                    stages: count(op, "stages"),
                    chunks: count(op, "chunks"),
                    microbatches: count(op, "microbatches"),
                    blocks: count(op, "blocks"),
                    optional: plan::PipelineOptional { unrolled: op.has_attribute("unrolled"), ..Default::default() },
                }
                .build(&b, op.location()),
            )?;
        }
    }
    let buffer = |name: &str, size: u64, contents: MemoryKind, lineage: &str, optional: plan::BufferOptional<'static, 'c>, at| {
        top.push(
            plan::Buffer {
                sym_name: name,
                size,
                alignment: BUFFER_ALIGNMENT,
                memory_space: MemorySpace::Local,
                contents,
                lineage,
                optional,
            }
            .build(&b, b.named_location(name, at)),
        )
    };
    let positive = |op: OperationRef, name: &str| int_attr(op, name).and_then(|v| u64::try_from(v).ok());
    for &(op, kind) in ops {
        match kind {
            Some(OpKind::DistMemory) => {
                let id = str_attr(op, "id").unwrap_or_default();
                let kind = enum_attr::<MemoryKind>(op, "kind").unwrap_or(MemoryKind::Weight);
                let optional = plan::BufferOptional {
                    shared_by: positive(op, "shared_by"),
                    stage: positive(op, "stage"),
                    block: positive(op, "block"),
                    ..Default::default()
                };
                buffer(&format!("buffer.{id}"), count(op, "bytes"), kind, id, optional, op.location())?;
            }
            Some(kind @ (OpKind::DistValue | OpKind::DistOutput)) => {
                let ty =
                    if kind == OpKind::DistValue { op.result(0).ok().map(|r| r.r#type()) } else { op.operand(0).ok().map(|v| v.r#type()) };
                let size = ty.and_then(|t| shard_bytes(op, t, meshes)).unwrap_or(0);
                let id = str_attr(op, "id").unwrap_or_default();
                let prefix = if kind == OpKind::DistValue { "in" } else { "out" };
                buffer(&format!("{prefix}.{id}"), size, MemoryKind::BoundaryValue, id, plan::BufferOptional::default(), op.location())?;
            }
            // A stage receives each cross-stage message into a buffer of its own.
            Some(OpKind::DistP2P) if str_attr(op, "along").is_some() => {
                let id = str_attr(op, "id").unwrap_or_default();
                let optional = plan::BufferOptional { stage: positive(op, "dest"), ..Default::default() };
                buffer(&format!("recv.{id}"), count(op, "message_bytes"), MemoryKind::BoundaryValue, id, optional, op.location())?;
            }
            _ => {}
        }
    }
    for kind in [ObjectiveKind::Latency, ObjectiveKind::PeakMemory] {
        top.push(plan::Objective { kind, optional: Default::default() }.build(&b, anchor))?;
    }
    let plan_token = b.plan_token();
    // Plan token of each dist token (keyed by the raw value).
    // (Sized once: a table of 400k tokens grown by doubling is copied
    // about as often as it is filled.)
    let mut tokens: TokenMap = TokenMap::with_capacity_and_hasher(ops.len(), Default::default());
    for &(op, kind) in ops {
        if kind != Some(OpKind::DistChunk) {
            continue;
        }
        let mut regions = Vec::with_capacity(2);
        for index in 0..2 {
            let region = Region::new();
            let block = region.append_block(Block::new(&[(plan_token, op.location())]));
            let source = op.region(index).ok().and_then(|r| r.first_block());
            if let Some(source) = source {
                if let Ok(argument) = source.argument(0) {
                    if let Ok(planned) = block.argument(0) {
                        tokens.insert(Value::from(argument).to_raw().ptr as usize, planned.into());
                    }
                }
                let e = Emitter::new(b, block, op.location());
                let mut last = block.argument(0).ok().map(Value::from);
                for task in block_ops(source) {
                    if let Some(token) = plan_task(&e, task, OpKind::of(task), meshes, plan_token, &mut tokens)? {
                        last = Some(token);
                    }
                }
                let values: Vec<Value> = last.into_iter().collect();
                e.push(plan::Yield { values: &values, optional: Default::default() }.build(&b, op.location()))?;
            }
            regions.push(region);
        }
        top.push(
            plan::Chunk {
                sym_name: &planned_symbol(str_attr(op, "sym_name").unwrap_or_default()),
                pipeline: &planned_symbol(symbol_attr(op, "pipeline").unwrap_or_default()),
                stage: count(op, "stage"),
                chunk: count(op, "chunk"),
                first_block: count(op, "first_block"),
                blocks: count(op, "blocks"),
                optional: Default::default(),
            }
            .build(&b, op.location(), regions),
        )?;
    }
    for &(op, kind) in ops {
        if kind == Some(OpKind::DistSchedule) {
            let slots = i64_array_attr(op, "slots").unwrap_or_default();
            top.push(
                plan::Schedule {
                    pipeline: &planned_symbol(symbol_attr(op, "pipeline").unwrap_or_default()),
                    stage: count(op, "stage"),
                    slots: &slots,
                    optional: Default::default(),
                }
                .build(&b, op.location()),
            )?;
        }
    }
    // Tasks outside chunks (a flat or unrolled program) go in one function.
    let flat: Vec<(OperationRef, Option<OpKind>)> = ops.iter().copied().filter(|(op, kind)| is_task(*kind) && !in_chunk(*op)).collect();
    if !flat.is_empty() || !ops.iter().any(|(_, kind)| *kind == Some(OpKind::DistChunk)) {
        let unrolled = ops.iter().any(|(_, kind)| *kind == Some(OpKind::DistPipeline));
        let function = top.push(b.func(if unrolled { "step_plan" } else { "decoder_block_plan" }, &[], &[], anchor))?;
        let body = function.region(0).ok().and_then(|r| r.first_block()).ok_or(BuildError { op: "func.func" })?;
        let e = Emitter::new(b, body, anchor);
        for (op, kind) in flat {
            plan_task(&e, op, kind, meshes, plan_token, &mut tokens)?;
        }
        e.push(b.func_return(&[], anchor))?;
    }
    Ok(())
}

/// Plan token of each dist token, keyed by the raw value.
type TokenMap<'c, 'a> = crate::ir::raw::PtrMap<Value<'c, 'a>>;

/// The plan's symbol for a dist symbol (both live in one module).
#[must_use]
pub fn planned_symbol(dist_symbol: &str) -> String {
    format!("plan.{dist_symbol}")
}

/// The ops of a block, in order.
fn block_ops<'c, 'a>(block: melior::ir::BlockRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut ops = Vec::new();
    let mut next = block.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        ops.push(op);
    }
    ops
}

fn is_task(kind: Option<OpKind>) -> bool {
    kind.is_some_and(|k| k == OpKind::DistCompute || (k.is_communication() && !k.is_async()))
}

fn in_chunk(op: OperationRef) -> bool {
    op.parent_operation().is_some_and(|p| OpKind::of(p) == Some(OpKind::DistChunk))
}

/// The plan task of one dist task, appended to `e`'s block; returns its
/// token (none for ops that are no tasks).
fn plan_task<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, '_>,
    kind: Option<OpKind>,
    meshes: &Meshes,
    plan_token: melior::ir::Type<'c>,
    tokens: &mut TokenMap<'c, 'a>,
) -> Result<Option<Value<'c, 'a>>, BuildError> {
    let Some(kind) = kind.filter(|k| is_task(Some(*k))) else { return Ok(None) };
    let b = e.b;
    // Each attribute is read from one pass over the op's attributes.
    let attrs = Attrs::of(op);
    let positive = |name: &str| attrs.u64(name);
    let (block, stage, chunk, microbatch) = (positive("block"), positive("stage"), positive("chunk"), positive("microbatch"));
    let deps = dep_tokens(op, tokens);
    let facts = Facts::of(&attrs);
    let id = attrs.str("id").unwrap_or_default();
    let phase = attrs.enumerated::<Phase>("phase").unwrap_or(Phase::Forward);
    let mesh = attrs.symbol("mesh").and_then(|m| meshes.get(m));
    // The task keeps its dist task's location (named by the same id when
    // the dist program was built here), as rewrites keep their source op's.
    let location = op.location();
    // The plan task's id and lineage are this attribute again.
    if let Some(name) = attrs.get("id") {
        b.reuse_string(name);
    }
    let built = if kind == OpKind::DistCompute {
        let capability = match attrs.enumerated::<Engine>("engine") {
            Some(Engine::Matrix) => ComputeCapability::MatrixMultiply,
            _ => ComputeCapability::VectorElementwise,
        };
        let ranks = attrs
            .i64_array("ranks")
            .map_or_else(|| mesh.map_or(1, |m| m.slice_size(attrs.i64_array("slice").as_deref())), |r| r.len() as u64);
        plan::ComputeTask {
            deps: &deps,
            id,
            lineage: id,
            phase,
            ops: facts.ops,
            read_bytes: facts.read,
            write_bytes: facts.write,
            compute_demand: facts.ops,
            memory_demand: facts.read.saturating_add(facts.write),
            network_demand: 0,
            ranks: ranks.max(1),
            group: ConcurrencyGroup::Compute,
            capability,
            results: &[plan_token],
            optional: plan::ComputeTaskOptional { shared_by: positive("shared_by"), block, stage, chunk, microbatch, ..Default::default() },
        }
        .build(&b, location)
    } else {
        let capability = crate::ir::ods::communication_capability(kind);
        let axes = attrs.get("mesh_axes").and_then(string_list);
        let ranks = match attrs.i64_array("participants") {
            Some(p) => p.len() as u64,
            None if kind == OpKind::DistP2P => 2,
            None => mesh.zip(axes.as_ref()).and_then(|(m, a)| m.group_size(a)).unwrap_or(1),
        };
        let message = attrs.count("message_bytes");
        let along = attrs.str("along").map(|a| b.strings(&[a]));
        plan::CollectiveTask {
            deps: &deps,
            id,
            lineage: id,
            phase,
            ops: facts.ops,
            read_bytes: facts.read,
            write_bytes: facts.write,
            compute_demand: 0,
            memory_demand: 0,
            network_demand: message,
            ranks: ranks.max(1),
            group: ConcurrencyGroup::Network,
            capability,
            message_bytes: message,
            results: &[plan_token],
            optional: plan::CollectiveTaskOptional {
                mesh_axes: attrs.get("mesh_axes").or(along),
                tiled_with: attrs.str("tiled_with"),
                tiles: positive("tiles"),
                overlap: attrs.enumerated::<TileOverlap>("overlap"),
                block,
                stage,
                chunk,
                microbatch,
                ..Default::default()
            },
        }
        .build(&b, location)
    };
    let token = result(e.push(built)?, 0);
    if let Ok(dist_token) = op.result(0) {
        tokens.insert(Value::from(dist_token).to_raw().ptr as usize, token);
    }
    Ok(Some(token))
}

fn count(op: OperationRef, name: &str) -> u64 {
    int_attr(op, name).and_then(|v| u64::try_from(v).ok()).unwrap_or(0)
}

/// The work facts of a task (0 where absent, as on communication).
struct Facts {
    ops: u64,
    read: u64,
    write: u64,
}

impl Facts {
    fn of(attrs: &Attrs) -> Self {
        Self { ops: attrs.count("ops"), read: attrs.count("read_bytes"), write: attrs.count("write_bytes") }
    }
}

/// Plan tokens of the dist tasks `op` depends on (directly, or through a
/// value result of a task; tensor dependencies on boundary values carry none).
fn dep_tokens<'c, 'a>(op: OperationRef, tokens: &TokenMap<'c, 'a>) -> Vec<Value<'c, 'a>> {
    let mut deps: Vec<Value> = Vec::new();
    let mut add = |token: Value<'c, 'a>| {
        if !deps.iter().any(|d| d.to_raw().ptr == token.to_raw().ptr) {
            deps.push(token);
        }
    };
    for operand in op.operands() {
        if let Some(token) = tokens.get(&(operand.to_raw().ptr as usize)) {
            add(*token);
        } else if let Some(producer) = defining_op(operand) {
            // A value result of a task (the forward terminal's output) orders
            // after that task.
            if let Ok(token_result) = producer.result(0) {
                if let Some(token) = tokens.get(&(token_result.to_raw().ptr as usize)) {
                    add(*token);
                }
            }
        }
    }
    deps
}
/// Bytes of one rank's shard of a boundary value: the logical tensor
/// divided by the sizes of the mesh axes that split it.
fn shard_bytes(op: OperationRef, ty: melior::ir::Type, meshes: &Meshes) -> Option<u64> {
    let shape = tensor_shape(ty)?;
    let element_bytes: u64 = match type_string(tensor_element(ty)?).as_str() {
        "f64" | "i64" | "index" => 8,
        "f32" | "i32" => 4,
        "f16" | "bf16" | "i16" => 2,
        "i8" | "i1" | "f8E4M3FN" | "f8E5M2" => 1,
        _ => return None,
    };
    let mesh = meshes.of_op(op)?;
    let split = op.attribute("split_axes").ok().and_then(string_list_list)?;
    let mut elements: u64 = 1;
    for extent in &shape {
        elements = elements.checked_mul(u64::try_from((*extent)?).ok()?)?;
    }
    let factor: u64 = split.iter().flatten().map(|axis| mesh.axis_size(axis).and_then(|s| u64::try_from(s).ok()).unwrap_or(1)).product();
    // At most 2^63 - 1: the size is an i64 fact.
    (elements / factor.max(1)).checked_mul(element_bytes).filter(|b| i64::try_from(*b).is_ok())
}
