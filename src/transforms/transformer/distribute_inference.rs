//! `distribute-transformer-inference`: ModelIR of a served block + its
//! inference strategy -> DistributedTaskIR with the prefill and the decode
//! step as separate phases.
//!
//! The block is derived from the ModelIR it is given (a coarse op is
//! decomposed first): [`crate::analysis::workload::derive_served_pass`]
//! shards its ops and counts them with the served-pass rules, the same
//! rules the inference algebra applies to a spec, so an edit of the
//! decomposed block (another activation, a dropout removed, a wider MLP)
//! is the program's. The decode step is at the coarse decode op's
//! `context_tokens`, or, decomposed, at the final context
//! (`prompt_tokens + generated_tokens`).
//!
//! The tensor-parallel group is a logical `tp_kv x tp_rep` sub-mesh (under a
//! `pp` axis for the pipeline degree): key/value heads are split over
//! `tp_kv` (`min(kv_heads, tp)` ranks) and replicated over `tp_rep`, so with
//! fewer KV heads than TP ranks each head lives on `tp / kv_heads` ranks.
//! Query heads, projections and the MLP are split over both axes. The KV
//! cache is a boundary value sharded that way, its capacity a memory fact;
//! the all-reduce after each row-parallel linear is explicit (none at
//! TP = 1). Each task returns its result's shard and waits for the tasks
//! whose results its ModelIR op reads (through forks, the fused weight's
//! split and the KV cache: a decode step's attention waits for the
//! prefill's key and value projections), so the program is the block's
//! dataflow; the prompt and the generated token are boundary values.

use std::collections::HashSet;

use melior::{
    ir::{operation::OperationLike, Location, Module, OperationRef, RegionLike, Type, Value},
    pass::ExternalPass,
};

use super::{
    distribute::MESH,
    emit::{emit_invocation, token, Emitter, Placement},
    import::{element, tensor_type},
    Failure,
};
use crate::dialect::model::{
    binding::{read_spec, INFERENCE_SPEC},
    graph::derive_served,
};
use crate::{
    analysis::workload::{InferenceSpec, ParameterSplit, ServedDep, ServedDerivation},
    dialect::{
        builder::{result, BuildError, Builder},
        dist,
    },
    ir::{
        digest::layer_digest,
        ods::{InferencePhase, MemoryKind, OpKind},
        read::{collect_ops, dialect_of, enum_attr, int_attr, name_of, str_attr},
    },
};

crate::ir::pass_macro::external_pass!(
    "DistributeTransformerInference",
    "distribute-transformer-inference",
    "Derive the tensor-parallel dist program of one served block (prefill and decode) from ModelIR and its strategy",
    run
);

const PASS: &str = "distribute-transformer-inference";

fn run(module: OperationRef, pass: ExternalPass) {
    super::run_building(module, pass, build);
}

fn build<'c, 'a>(module: OperationRef<'c, 'a>, generated: &Module<'c>) -> Result<(), Failure<'c, 'a>> {
    let ops = collect_ops(module);
    super::ensure_no_dist_program(&ops, PASS)?;
    let phases: Vec<OperationRef> = ops.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderInference)).collect();
    let phase_of = |op: OperationRef| enum_attr::<InferencePhase>(op, "phase");
    let coarse = phases.iter().copied().find(|op| phase_of(*op) == Some(InferencePhase::Prefill));
    // A decomposed served block is found by its KV-cache append.
    let decomposed = ops.iter().copied().find(|op| OpKind::of(*op) == Some(OpKind::ModelKvAppend));
    let Some(anchor) = coarse.or(decomposed) else {
        return Err((module, format!("{PASS}: no prefill 'model.decoder_inference' op (or decomposed served block) to distribute")));
    };
    let spec: InferenceSpec = read_spec(module, INFERENCE_SPEC, |s: &InferenceSpec| s.validate().map_err(|e| e.to_string()))
        .map_err(|e| (anchor, format!("{PASS}: {e}")))?;
    for &op in &phases {
        check_dimensions(op, &spec)?;
    }
    let decode = phases.iter().copied().find(|op| phase_of(*op) == Some(InferencePhase::Decode));
    let decode_context = match decode {
        Some(op) => int_attr(op, "context_tokens").and_then(|c| u64::try_from(c).ok()).unwrap_or(0),
        None => spec.workload.final_context(),
    };
    // A coarse block is decomposed first, into a scratch module; the
    // derivation reads the primitive ops either way.
    let passes = if coarse.is_some() {
        let scratch = Module::new(anchor.location());
        let function = super::decompose::decompose_into(module, anchor, &scratch)?;
        derive_served(function, &spec, decode_context).map_err(|(_, e)| (anchor, format!("{PASS}: {e}")))?
    } else {
        let function = anchor
            .parent_operation()
            .filter(|f| name_of(*f) == "func.func")
            .ok_or_else(|| (anchor, format!("{PASS}: the decomposed served block must be the body of a 'func.func'")))?;
        derive_served(function, &spec, decode_context).map_err(|(op, e)| (op, format!("{PASS}: {e}")))?
    };
    let model_ids: HashSet<String> =
        ops.iter().filter(|op| dialect_of(&name_of(**op)) == "model").filter_map(|op| str_attr(*op, "id").map(str::to_string)).collect();
    let digest = layer_digest(module, "model");
    let program = || -> Result<(), BuildError> {
        let (e, inputs) = header(generated, &spec, &passes, &digest, anchor.location())?;
        let mut cache_writers: Vec<Value> = Vec::new();
        for (index, (pass, input)) in passes.iter().zip(inputs).enumerate() {
            // The coarse op of the phase owns what the module does not
            // hold decomposed.
            let coarse_op = if index == 0 { coarse } else { decode };
            let coarse_id = coarse_op.and_then(|op| str_attr(op, "id")).unwrap_or(if index == 0 { "prefill" } else { "decode" });
            let location = coarse_op.map_or(anchor.location(), |op| op.location());
            let e = Emitter::new(e.b, e.block, location);
            let owner = |name: &str| -> String {
                match pass.lineage.get(name) {
                    Some(id) if model_ids.contains(id) => id.clone(),
                    _ => coarse_id.to_string(),
                }
            };
            cache_writers = emit_pass(&e, &spec, pass, &owner, input, &cache_writers)?;
        }
        e.push(e.b.func_return(&[], anchor.location()))?;
        Ok(())
    };
    program().map_err(|e| (anchor, e.to_string()))
}

fn check_dimensions<'c, 'a>(op: OperationRef<'c, 'a>, spec: &InferenceSpec) -> Result<(), Failure<'c, 'a>> {
    let m = &spec.model;
    super::check_bound_dimensions(
        op,
        INFERENCE_SPEC,
        &[
            ("hidden", m.hidden),
            ("ffn_hidden", m.ffn_hidden),
            ("heads", m.heads),
            ("kv_heads", m.kv_heads()),
            ("head_dim", m.head_dim),
            ("batch", spec.workload.batch),
        ],
    )
}

/// Mesh axes of the tensor-parallel group: KV-head split, then replication.
const TP_AXES: [&str; 2] = ["tp_kv", "tp_rep"];

/// The split axes of a parameter of `rank` dimensions.
fn parameter_axes<'c>(b: &Builder<'c>, split: ParameterSplit, rank: usize) -> melior::ir::Attribute<'c> {
    let mut axes: Vec<Vec<&str>> = vec![vec![]; rank];
    let last = rank.saturating_sub(1);
    match split {
        ParameterSplit::Whole => {}
        ParameterSplit::Columns => axes[last] = TP_AXES.to_vec(),
        ParameterSplit::Rows => axes[0] = TP_AXES.to_vec(),
        ParameterSplit::KvColumns => axes[last] = vec!["tp_kv"],
    }
    b.split_axes(&axes)
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The header, mesh, memory facts and the function's boundary values
/// (parameters, KV cache, each pass's input); returns the emitter of the
/// function body and the inputs of the passes.
fn header<'c, 'g>(
    generated: &'g Module<'c>,
    spec: &InferenceSpec,
    passes: &[ServedDerivation],
    model_digest: &str,
    anchor: Location<'c>,
) -> Result<(Emitter<'c, 'g>, Vec<Value<'c, 'g>>), BuildError> {
    let b = Builder::of(generated.as_operation());
    let m = &spec.model;
    let w = &spec.workload;
    let tp = spec.mapping.tp;
    let kv_split = m.kv_heads().min(tp);
    let dt = element(&b, w.datatype);
    let top = Emitter::new(b, generated.body(), anchor);
    top.push(
        dist::Header { schema_name: "blueprint.dist", schema_version: "1.0", model_digest, optional: Default::default() }
            .build(&b, top.at("dist.header")),
    )?;
    let shape: Vec<i64> = [spec.mapping.pp, kv_split, tp / kv_split].iter().map(|v| to_i64(*v)).collect();
    top.push(
        dist::Mesh { sym_name: MESH, axes: b.strings(&["pp", "tp_kv", "tp_rep"]), shape: &shape, optional: Default::default() }
            .build(&b, top.at(MESH)),
    )?;
    let prefill = passes.first().ok_or(BuildError { op: "dist.memory" })?;
    // The cache at its capacity: after the last pass.
    let cache = passes.last().and_then(|p| p.cache.clone());
    let memory = &prefill.pass.derivation.memory;
    for (kind, bytes) in [
        (MemoryKind::Weight, memory.weights),
        (MemoryKind::ActivationWorking, memory.act_working_space),
        (MemoryKind::KvCache, cache.as_ref().map_or(0, |c| c.2)),
    ] {
        let id = format!("mem.{}", kind.name());
        top.push(
            dist::Memory { id: &id, mesh: MESH, kind, bytes, lineage: "prefill", optional: Default::default() }.build(&b, top.at(&id)),
        )?;
    }
    let function = top.push(b.func("decoder_block_inference_dist", &[], &[], anchor))?;
    let body = function.region(0).ok().and_then(|r| r.first_block()).ok_or(BuildError { op: "func.func" })?;
    let e = Emitter::new(b, body, anchor);
    let value = |id: &str, split: melior::ir::Attribute<'c>, lineage: &str, ty: Type<'c>| -> Result<Value<'c, 'g>, BuildError> {
        Ok(result(
            e.push(
                dist::Value { id, mesh: MESH, split_axes: split, lineage, results: &[ty], optional: Default::default() }
                    .build(&b, e.at(id)),
            )?,
            0,
        ))
    };
    let whole3 = || b.split_axes::<&str>(&[vec![], vec![], vec![]]);
    let mut inputs = vec![value(&prefill.input.0, whole3(), &prefill.input.0, tensor_type(&b, &prefill.input.1, dt))?];
    for parameter in &prefill.parameters {
        let split = parameter_axes(&b, parameter.split, parameter.shape.len());
        value(&parameter.id, split, &parameter.id, tensor_type(&b, &parameter.shape, dt))?;
    }
    // The KV cache at its capacity (end of generation): K/V heads split
    // over `tp_kv`, replicated over `tp_rep`.
    if let Some((shape, _, _)) = &cache {
        let ty = b.tensor(&shape.iter().map(|d| to_i64(*d)).collect::<Vec<_>>(), element(&b, w.kv_datatype()));
        value("kv.cache", b.split_axes(&[vec![], vec![], vec![], vec!["tp_kv"]]), "prefill", ty)?;
    }
    for pass in passes.iter().skip(1) {
        inputs.push(value(&pass.input.0, whole3(), &pass.input.0, tensor_type(&b, &pass.input.1, dt))?);
    }
    Ok((e, inputs))
}

/// One pass's tasks, each waiting for what its op reads (`input` for the
/// pass's input, `cache` for the KV cache an earlier pass filled); the
/// task returning the pass's output feeds a `dist.output`. Returns the
/// tasks that appended to the cache.
fn emit_pass<'c, 'g>(
    e: &Emitter<'c, 'g>,
    spec: &InferenceSpec,
    pass: &ServedDerivation,
    owner: &dyn Fn(&str) -> String,
    input: Value<'c, 'g>,
    cache: &[Value<'c, 'g>],
) -> Result<Vec<Value<'c, 'g>>, BuildError> {
    let b = e.b;
    let tp = spec.mapping.tp;
    let group: Vec<i64> = (0..to_i64(tp)).collect();
    let dt = element(&b, spec.workload.datatype);
    let place = Placement {
        mesh: MESH,
        slice: None,
        ranks: (spec.mapping.pp > 1).then_some(group.as_slice()),
        participants: Some(&group),
        axes: &TP_AXES,
        id_prefix: "",
    };
    // Each task's result: its tensor (a compute task's second result, a
    // collective's only one) and its token.
    let mut results: Vec<(Value<'c, 'g>, Value<'c, 'g>)> = Vec::new();
    let values = |deps: &[ServedDep], results: &[(Value<'c, 'g>, Value<'c, 'g>)]| -> Vec<Value<'c, 'g>> {
        let mut out = Vec::new();
        for dep in deps {
            match dep {
                ServedDep::Invocation(i) => out.extend(results.get(*i).map(|r| r.0)),
                ServedDep::Input => out.push(input),
                ServedDep::Cache => out.extend_from_slice(cache),
            }
        }
        if out.is_empty() {
            out.push(input);
        }
        out
    };
    for (index, inv) in pass.pass.derivation.invocations.iter().enumerate() {
        let deps = values(pass.deps.get(index).map_or(&[][..], Vec::as_slice), &results);
        let place = if inv.collective.is_some() { Placement { ranks: None, ..place } } else { place };
        let ty = pass.outputs.get(index).cloned().flatten().map(|shape| tensor_type(&b, &shape, dt));
        let op = emit_invocation(e, inv, place, &owner(&inv.name), &deps, ty)?;
        let tensor = if inv.collective.is_some() { result(op, 0) } else { result(op, 1) };
        results.push((tensor, token(op)));
    }
    if let Some((id, deps)) = &pass.result {
        let value = *values(deps, &results).first().ok_or(BuildError { op: "dist.output" })?;
        let none: [Vec<&str>; 3] = [vec![], vec![], vec![]];
        e.push(
            dist::Output { value, id, mesh: MESH, split_axes: b.split_axes(&none), lineage: id, optional: Default::default() }
                .build(&b, e.at(id)),
        )?;
    }
    Ok(pass.cache_writers.iter().filter_map(|&i| results.get(i).map(|r| r.1)).collect())
}
