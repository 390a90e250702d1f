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

use std::{collections::HashMap, fmt::Write as _};

use melior::{
    ir::{operation::OperationLike, OperationRef, ValueLike},
    pass::ExternalPass,
};

use super::{binding::quote, Failure};
use crate::{
    digest::layer_digest,
    ir::{
        attr_string_list, collect_ops, defining_op, dialect_of, i64_array_attr, int_attr, name_of,
        str_attr, string_list_list, symbol_attr, tensor_element, tensor_shape, type_string,
    },
};

/// Alignment of every planned buffer (a power of two; abstract, not a bank).
const BUFFER_ALIGNMENT: u64 = 256;

/// `plan-transformer-training`.
pub mod training {
    use super::*;
    crate::passes::external_pass!(
        "PlanTransformerTraining",
        "plan-transformer-training",
        "Turn the dist program into a portable plan with exact work facts and abstract resources",
        |module: OperationRef, pass: ExternalPass| super::super::run_generating(module, pass, |m| plan_text(m, "plan-transformer-training"))
    );
}

/// `plan-transformer-inference`: the same planning, under its own name.
pub mod inference {
    use super::*;
    crate::passes::external_pass!(
        "PlanTransformerInference",
        "plan-transformer-inference",
        "Same planning for an inference dist program (prefill and decode tasks, KV-cache buffers)",
        |module: OperationRef, pass: ExternalPass| super::super::run_generating(module, pass, |m| plan_text(m, "plan-transformer-inference"))
    );
}

fn plan_text<'c, 'a>(module: OperationRef<'c, 'a>, pass: &str) -> Result<String, Failure<'c, 'a>> {
    let ops = collect_ops(module);
    if let Some(existing) = ops.iter().find(|op| dialect_of(&name_of(**op)) == "plan") {
        return Err((*existing, format!("{pass}: the module already holds a plan")));
    }
    if !ops.iter().any(|op| name_of(*op) == "dist.header") {
        return Err((module, format!("{pass}: no 'dist' program to plan (run distribute-transformer-{} first)", pass.trim_start_matches("plan-transformer-"))));
    }
    let meshes: HashMap<String, Vec<(String, u64)>> = ops
        .iter()
        .filter(|op| name_of(**op) == "dist.mesh")
        .filter_map(|op| {
            let axes = attr_string_list(*op, "axes")?;
            let shape = i64_array_attr(*op, "shape")?;
            let sizes = axes.into_iter().zip(shape.into_iter().map(|s| u64::try_from(s).unwrap_or(0))).collect();
            Some((str_attr(*op, "sym_name")?.to_string(), sizes))
        })
        .collect();
    let mesh_size = |op: OperationRef| -> u64 {
        symbol_attr(op, "mesh")
            .and_then(|m| meshes.get(m))
            .map_or(1, |axes| axes.iter().map(|(_, s)| *s).product())
    };

    let mut buffers = String::new();
    let mut tasks = String::new();
    // Plan token of each dist task token (keyed by the raw value).
    let mut tokens: HashMap<usize, String> = HashMap::new();
    let mut next = 0usize;
    for &op in &ops {
        let name = name_of(op);
        if dialect_of(&name) != "dist" {
            continue;
        }
        match name.as_str() {
            "dist.header" | "dist.mesh" => {}
            "dist.memory" => {
                let id = str_attr(op, "id").unwrap_or_default();
                let kind = str_attr(op, "kind").unwrap_or_default();
                let bytes = int_attr(op, "bytes").unwrap_or(0);
                let _ = writeln!(
                    buffers,
                    "  \"plan.buffer\"() {{sym_name = {}, size = {bytes} : i64, alignment = {BUFFER_ALIGNMENT} : i64, memory_space = \"local\", contents = \"{kind}\", lineage = {}{}}} : () -> () {}",
                    quote(&format!("buffer.{id}")), quote(id), shared_by(op), super::located(&format!("buffer.{id}"), op.location())
                );
            }
            "dist.value" | "dist.output" => {
                let ty = if name == "dist.value" { op.result(0).ok().map(|r| r.r#type()) } else { op.operand(0).ok().map(|v| v.r#type()) };
                let id = str_attr(op, "id").unwrap_or_default();
                let size = ty.and_then(|t| shard_bytes(op, t, &meshes)).ok_or_else(|| {
                    (op, format!("{pass}: boundary value needs a static shape and a known element type"))
                })?;
                let prefix = if name == "dist.value" { "in" } else { "out" };
                let _ = writeln!(
                    buffers,
                    "  \"plan.buffer\"() {{sym_name = {}, size = {size} : i64, alignment = {BUFFER_ALIGNMENT} : i64, memory_space = \"local\", contents = \"boundary_value\", lineage = {}}} : () -> () {}",
                    quote(&format!("{prefix}.{id}")), quote(id), super::located(&format!("{prefix}.{id}"), op.location())
                );
            }
            "dist.compute" => {
                let capability = if str_attr(op, "engine") == Some("matrix") { "matrix_multiply" } else { "vector_elementwise" };
                let ranks = i64_array_attr(op, "ranks").map_or_else(|| mesh_size(op), |r| r.len() as u64);
                let token = plan_task(op, &tokens, &mut tasks, next, PlanTask { kind: "compute_task", capability, ranks, message_bytes: None, extra: shared_by(op) });
                next += 1;
                if let Ok(result) = op.result(0) {
                    tokens.insert(result.to_raw().ptr as usize, token);
                }
            }
            "dist.all_reduce" | "dist.reduce_scatter" | "dist.all_gather" | "dist.all_to_all" | "dist.broadcast" | "dist.p2p" => {
                let capability = match name.as_str() {
                    "dist.p2p" => "point_to_point",
                    "dist.all_reduce" => "all_reduce",
                    "dist.reduce_scatter" => "reduce_scatter",
                    "dist.all_gather" => "all_gather",
                    "dist.all_to_all" => "all_to_all",
                    _ => "broadcast",
                };
                let ranks = i64_array_attr(op, "participants").map_or(2, |p| p.len() as u64);
                let extra = attr_string_list(op, "mesh_axes").map_or_else(String::new, |axes| {
                    format!(", mesh_axes = [{}]", axes.iter().map(|a| quote(a)).collect::<Vec<_>>().join(", "))
                });
                let message_bytes = Some(int_attr(op, "message_bytes").unwrap_or(0));
                let token = plan_task(op, &tokens, &mut tasks, next, PlanTask { kind: "collective_task", capability, ranks, message_bytes, extra });
                next += 1;
                if let Ok(result) = op.result(0) {
                    tokens.insert(result.to_raw().ptr as usize, token);
                }
            }
            other => {
                return Err((op, format!("{pass}: '{other}' has no portable-plan form (plan before dist-async and lowering)")));
            }
        }
    }
    let mut text = String::new();
    let _ = writeln!(text, "module {{");
    let _ = writeln!(text, "  \"plan.header\"() {{schema_name = \"blueprint.plan\", schema_version = \"1.0\", source_digest = \"{}\"}} : () -> ()", layer_digest(module, "dist"));
    text.push_str(&buffers);
    let _ = writeln!(text, "  \"plan.objective\"() {{kind = \"latency\"}} : () -> ()");
    let _ = writeln!(text, "  \"plan.objective\"() {{kind = \"peak_memory\"}} : () -> ()");
    let _ = writeln!(text, "  func.func @decoder_block_plan() {{");
    text.push_str(&tasks);
    let _ = writeln!(text, "    return\n  }}\n}}");
    Ok(text)
}

/// `, shared_by = N` when `op` states a sharing group, else nothing.
fn shared_by(op: OperationRef) -> String {
    int_attr(op, "shared_by").map_or_else(String::new, |n| format!(", shared_by = {n} : i64"))
}

/// What distinguishes a compute task from a collective task in the plan.
struct PlanTask {
    kind: &'static str,
    capability: &'static str,
    ranks: u64,
    /// Present for communication: copied exactly, and the network demand.
    message_bytes: Option<i64>,
    /// Further attributes, already spelled (`, mesh_axes = [...]`).
    extra: String,
}

/// Appends the plan task for dist task `op` to `tasks` as `%p<index>`, with
/// its facts copied and its abstract demand; returns its token name.
fn plan_task(op: OperationRef, tokens: &HashMap<usize, String>, tasks: &mut String, index: usize, task: PlanTask) -> String {
    let deps = dep_tokens(op, tokens);
    let count = |name: &str| int_attr(op, name).unwrap_or(0);
    let (ops, read, write) = (count("ops"), count("read_bytes"), count("write_bytes"));
    let id = str_attr(op, "id").unwrap_or_default();
    let (group, network, message) = match task.message_bytes {
        Some(bytes) => ("network", bytes, format!("message_bytes = {bytes} : i64, ")),
        None => ("compute", 0, String::new()),
    };
    let token = format!("%p{index}");
    let _ = writeln!(
        tasks,
        "    {token} = \"plan.{kind}\"({}) {{id = {qid}, lineage = {qid}, phase = {phase}, capability = \"{capability}\", {message}ops = {ops} : i64, read_bytes = {read} : i64, write_bytes = {write} : i64, compute_demand = {ops} : i64, memory_demand = {} : i64, network_demand = {network} : i64, ranks = {ranks} : i64, group = \"{group}\"{extra}}} : ({}) -> !plan.token {}",
        deps.join(", "),
        read + write,
        vec!["!plan.token"; deps.len()].join(", "),
        super::located(id, op.location()),
        kind = task.kind,
        qid = quote(id),
        phase = quote(str_attr(op, "phase").unwrap_or_default()),
        capability = task.capability,
        ranks = task.ranks,
        extra = task.extra,
    );
    token
}

/// Plan tokens of the dist tasks `op` depends on (directly, or through a
/// token-typed value; tensor dependencies on boundary values carry none).
fn dep_tokens(op: OperationRef, tokens: &HashMap<usize, String>) -> Vec<String> {
    let mut deps = Vec::new();
    for operand in op.operands() {
        if let Some(token) = tokens.get(&(operand.to_raw().ptr as usize)) {
            if !deps.contains(token) {
                deps.push(token.clone());
            }
        } else if let Some(producer) = defining_op(operand) {
            // A value result of a task (the forward terminal's output) orders
            // after that task.
            if let Ok(token_result) = producer.result(0) {
                if let Some(token) = tokens.get(&(token_result.to_raw().ptr as usize)) {
                    if !deps.contains(token) {
                        deps.push(token.clone());
                    }
                }
            }
        }
    }
    deps
}

/// Bytes of one rank's shard of a boundary value: the logical tensor
/// divided by the sizes of the mesh axes that split it.
fn shard_bytes(op: OperationRef, ty: melior::ir::Type, meshes: &HashMap<String, Vec<(String, u64)>>) -> Option<u64> {
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
