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

use std::collections::HashMap;

use melior::{
    ir::{block::BlockLike, operation::OperationLike, Module, OperationRef, RegionLike, Value, ValueLike},
    pass::ExternalPass,
};

use super::{emit::Emitter, Failure};
use crate::{
    dialects::{plan, result, BuildError, Builder},
    digest::layer_digest,
    ir::{
        attr_string_list, collect_ops, defining_op, dialect_of, enum_attr, i64_array_attr, int_attr, name_of,
        str_attr, string_list_list, symbol_attr, tensor_element, tensor_shape, type_string,
    },
    ods::{CommunicationCapability, ComputeCapability, ConcurrencyGroup, Engine, MemoryKind, MemorySpace, ObjectiveKind, OpKind, Phase},
};

/// Alignment of every planned buffer (a power of two; abstract, not a bank).
const BUFFER_ALIGNMENT: u64 = 256;

/// `plan-transformer-training`.
pub mod training {
    use super::*;
    crate::pass_macro::external_pass!(
        "PlanTransformerTraining",
        "plan-transformer-training",
        "Turn the dist program into a portable plan with exact work facts and abstract resources",
        |module: OperationRef, pass: ExternalPass| super::super::run_building(module, pass, |m, g| build(m, g, "plan-transformer-training"))
    );
}

/// `plan-transformer-inference`: the same planning, under its own name.
pub mod inference {
    use super::*;
    crate::pass_macro::external_pass!(
        "PlanTransformerInference",
        "plan-transformer-inference",
        "Same planning for an inference dist program (prefill and decode tasks, KV-cache buffers)",
        |module: OperationRef, pass: ExternalPass| super::super::run_building(module, pass, |m, g| build(m, g, "plan-transformer-inference"))
    );
}

/// A dist mesh: axis names and sizes.
type MeshAxes = Vec<(String, u64)>;

fn build<'c, 'a>(module: OperationRef<'c, 'a>, generated: &Module<'c>, pass: &str) -> Result<(), Failure<'c, 'a>> {
    let ops = collect_ops(module);
    if let Some(existing) = ops.iter().find(|op| dialect_of(&name_of(**op)) == "plan") {
        return Err((*existing, format!("{pass}: the module already holds a plan")));
    }
    if !ops.iter().any(|op| OpKind::of(*op) == Some(OpKind::DistHeader)) {
        return Err((module, format!("{pass}: no 'dist' program to plan (run distribute-transformer-{} first)", pass.trim_start_matches("plan-transformer-"))));
    }
    let meshes: HashMap<String, MeshAxes> = ops
        .iter()
        .filter(|op| OpKind::of(**op) == Some(OpKind::DistMesh))
        .filter_map(|op| {
            let axes = attr_string_list(*op, "axes")?;
            let shape = i64_array_attr(*op, "shape")?;
            let sizes = axes.into_iter().zip(shape.into_iter().map(|s| u64::try_from(s).unwrap_or(0))).collect();
            Some((str_attr(*op, "sym_name")?.to_string(), sizes))
        })
        .collect();
    // Validate every op first: nothing is built for an input that fails.
    for &op in &ops {
        let Some(kind) = OpKind::of(op) else { continue };
        if kind.dialect() != "dist" {
            continue;
        }
        match kind {
            OpKind::DistValue | OpKind::DistOutput => {
                let ty = if kind == OpKind::DistValue { op.result(0).ok().map(|r| r.r#type()) } else { op.operand(0).ok().map(|v| v.r#type()) };
                if ty.and_then(|t| shard_bytes(op, t, &meshes)).is_none() {
                    return Err((op, format!("{pass}: boundary value needs a static shape and a known element type")));
                }
            }
            OpKind::DistHeader | OpKind::DistMesh | OpKind::DistMemory | OpKind::DistCompute => {}
            k if k.is_communication() && !k.is_async() => {}
            other => {
                return Err((op, format!("{pass}: '{}' has no portable-plan form (plan before dist-async and lowering)", other.name())));
            }
        }
    }
    let digest = layer_digest(module, "dist");
    emit_plan(generated, &ops, &meshes, &digest, module.location()).map_err(|e| (module, e.to_string()))
}

fn emit_plan<'c>(generated: &Module<'c>, ops: &[OperationRef], meshes: &HashMap<String, MeshAxes>, digest: &str, anchor: melior::ir::Location<'c>) -> Result<(), BuildError> {
    let b = Builder::of(generated.as_operation());
    let top = Emitter::new(b, generated.body(), anchor);
    top.push(plan::Header { schema_name: "blueprint.plan", schema_version: "1.0", source_digest: digest, optional: Default::default() }.build(&b, anchor))?;
    let buffer = |name: &str, size: u64, contents: MemoryKind, lineage: &str, shared_by: Option<u64>, at| {
        top.push(
            plan::Buffer { sym_name: name, size, alignment: BUFFER_ALIGNMENT, memory_space: MemorySpace::Local, contents, lineage, optional: plan::BufferOptional { shared_by, ..Default::default() } }
            .build(&b, b.named_location(name, at)),
        )
    };
    for &op in ops {
        match OpKind::of(op) {
            Some(OpKind::DistMemory) => {
                let id = str_attr(op, "id").unwrap_or_default();
                let kind = enum_attr::<MemoryKind>(op, "kind").unwrap_or(MemoryKind::Weight);
                let bytes = count(op, "bytes");
                buffer(&format!("buffer.{id}"), bytes, kind, id, int_attr(op, "shared_by").and_then(|v| u64::try_from(v).ok()), op.location())?;
            }
            Some(kind @ (OpKind::DistValue | OpKind::DistOutput)) => {
                let ty = if kind == OpKind::DistValue { op.result(0).ok().map(|r| r.r#type()) } else { op.operand(0).ok().map(|v| v.r#type()) };
                let size = ty.and_then(|t| shard_bytes(op, t, meshes)).unwrap_or(0);
                let id = str_attr(op, "id").unwrap_or_default();
                let prefix = if kind == OpKind::DistValue { "in" } else { "out" };
                buffer(&format!("{prefix}.{id}"), size, MemoryKind::BoundaryValue, id, None, op.location())?;
            }
            _ => {}
        }
    }
    for kind in [ObjectiveKind::Latency, ObjectiveKind::PeakMemory] {
        top.push(plan::Objective { kind, optional: Default::default() }.build(&b, anchor))?;
    }
    let function = top.push(b.func("decoder_block_plan", &[], &[], anchor))?;
    let body = function.region(0).ok().and_then(|r| r.first_block()).ok_or(BuildError { op: "func.func" })?;
    let e = Emitter::new(b, body, anchor);
    let plan_token = b.plan_token();
    // Plan token of each dist task token (keyed by the raw value).
    let mut tokens: HashMap<usize, Value> = HashMap::new();
    for &op in ops {
        let Some(kind) = OpKind::of(op) else { continue };
        let token = if kind == OpKind::DistCompute {
            let capability = match enum_attr::<Engine>(op, "engine") {
                Some(Engine::Matrix) => ComputeCapability::MatrixMultiply,
                _ => ComputeCapability::VectorElementwise,
            };
            let ranks = i64_array_attr(op, "ranks").map_or_else(|| placement_size(op, meshes), |r| r.len() as u64);
            let deps = dep_tokens(op, &tokens);
            let facts = Facts::of(op);
            let id = str_attr(op, "id").unwrap_or_default();
            result(
                e.push(
                    plan::ComputeTask { deps: &deps, id, lineage: id, phase: enum_attr::<Phase>(op, "phase").unwrap_or(Phase::Forward), ops: facts.ops, read_bytes: facts.read, write_bytes: facts.write, compute_demand: facts.ops, memory_demand: facts.read.saturating_add(facts.write), network_demand: 0, ranks: ranks.max(1), group: ConcurrencyGroup::Compute, capability, results: &[plan_token], optional: plan::ComputeTaskOptional { shared_by: int_attr(op, "shared_by").and_then(|v| u64::try_from(v).ok()), ..Default::default() } }
                    .build(&b, b.named_location(id, op.location())),
                )?,
                0,
            )
        } else if kind.is_communication() && !kind.is_async() {
            let capability = communication_capability(kind);
            let ranks = match i64_array_attr(op, "participants") {
                Some(p) => p.len() as u64,
                None if kind == OpKind::DistP2P => 2,
                None => group_size(op, meshes),
            };
            let deps = dep_tokens(op, &tokens);
            let facts = Facts::of(op);
            let id = str_attr(op, "id").unwrap_or_default();
            let message = count(op, "message_bytes");
            let axes = op.attribute("mesh_axes").ok();
            let along = str_attr(op, "along").map(|a| b.strings(&[a]));
            result(
                e.push(
                    plan::CollectiveTask { deps: &deps, id, lineage: id, phase: enum_attr::<Phase>(op, "phase").unwrap_or(Phase::Forward), ops: facts.ops, read_bytes: facts.read, write_bytes: facts.write, compute_demand: 0, memory_demand: 0, network_demand: message, ranks: ranks.max(1), group: ConcurrencyGroup::Network, capability, message_bytes: message, results: &[plan_token], optional: plan::CollectiveTaskOptional { mesh_axes: axes.or(along), ..Default::default() } }
                    .build(&b, b.named_location(id, op.location())),
                )?,
                0,
            )
        } else {
            continue;
        };
        if let Ok(dist_token) = op.result(0) {
            tokens.insert(dist_token.to_raw().ptr as usize, token);
        }
    }
    e.push(b.func_return(&[], anchor))?;
    Ok(())
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
    fn of(op: OperationRef) -> Self {
        Self { ops: count(op, "ops"), read: count(op, "read_bytes"), write: count(op, "write_bytes") }
    }
}

/// The capability a communication op needs (exhaustive over the ops).
pub(crate) fn communication_capability(kind: OpKind) -> CommunicationCapability {
    match kind.sync_form().unwrap_or(kind) {
        OpKind::DistAllReduce => CommunicationCapability::AllReduce,
        OpKind::DistReduceScatter => CommunicationCapability::ReduceScatter,
        OpKind::DistAllGather => CommunicationCapability::AllGather,
        OpKind::DistAllToAll => CommunicationCapability::AllToAll,
        OpKind::DistBroadcast => CommunicationCapability::Broadcast,
        _ => CommunicationCapability::PointToPoint,
    }
}

/// Ranks of a task's placement: its slice of the mesh, or the whole mesh.
fn placement_size(op: OperationRef, meshes: &HashMap<String, MeshAxes>) -> u64 {
    let Some(axes) = symbol_attr(op, "mesh").and_then(|m| meshes.get(m)) else { return 1 };
    let slice = i64_array_attr(op, "slice");
    axes.iter()
        .enumerate()
        .map(|(i, (_, size))| if slice.as_ref().and_then(|s| s.get(i)).is_some_and(|c| *c >= 0) { 1 } else { *size })
        .product()
}

/// Ranks of one group of a collective over mesh axes.
fn group_size(op: OperationRef, meshes: &HashMap<String, MeshAxes>) -> u64 {
    let Some(axes) = symbol_attr(op, "mesh").and_then(|m| meshes.get(m)) else { return 1 };
    let claimed = attr_string_list(op, "mesh_axes").unwrap_or_default();
    axes.iter().filter(|(name, _)| claimed.contains(name)).map(|(_, size)| *size).product()
}

/// Plan tokens of the dist tasks `op` depends on (directly, or through a
/// value result of a task; tensor dependencies on boundary values carry none).
fn dep_tokens<'c, 'a>(op: OperationRef, tokens: &HashMap<usize, Value<'c, 'a>>) -> Vec<Value<'c, 'a>> {
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
fn shard_bytes(op: OperationRef, ty: melior::ir::Type, meshes: &HashMap<String, MeshAxes>) -> Option<u64> {
    let shape = tensor_shape(ty)?;
    let element_bytes: u64 = match type_string(tensor_element(ty)?).as_str() {
        "f64" | "i64" | "index" => 8,
        "f32" | "i32" => 4,
        "f16" | "bf16" | "i16" => 2,
        "i8" | "i1" | "f8E4M3FN" | "f8E5M2" => 1,
        _ => return None,
    };
    let axes = meshes.get(symbol_attr(op, "mesh")?)?;
    let split = op.attribute("split_axes").ok().and_then(string_list_list)?;
    let mut elements: u64 = 1;
    for extent in &shape {
        elements = elements.checked_mul(u64::try_from((*extent)?).ok()?)?;
    }
    let factor: u64 = split
        .iter()
        .flatten()
        .map(|axis| axes.iter().find(|(name, _)| name == axis).map_or(1, |(_, size)| *size))
        .product();
    Some(elements / factor.max(1) * element_bytes)
}
