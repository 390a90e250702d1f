//! `distribute-transformer-inference`: ModelIR of a served block + its
//! inference strategy -> DistributedTaskIR with the prefill and the decode
//! step at the final context as separate phases.
//!
//! The tensor-parallel group is a logical `tp_kv x tp_rep` sub-mesh (under a
//! `pp` axis for the pipeline degree): key/value heads are split over
//! `tp_kv` (`min(kv_heads, tp)` ranks) and replicated over `tp_rep`, so with
//! fewer KV heads than TP ranks each head lives on `tp / kv_heads` ranks.
//! Query heads, projections and the MLP are split over both axes. The KV
//! cache is a boundary value sharded that way, its capacity a memory fact;
//! the two all-reduces per block and phase are explicit (none at TP = 1).
//! Tasks come from the same workload algebra as training, so the same
//! planning pass and conservation checks apply. The served block is
//! derived from the spec, not read from its ops: a decomposed block must be
//! the one the spec decomposes into (op kinds, ids and types), and an
//! edited one is an error at the first op that differs rather than a
//! program that ignores the edit.

use std::collections::HashSet;

use melior::{
    ir::{operation::OperationLike, Location, Module, OperationRef, RegionLike, Type, Value},
    pass::ExternalPass,
};

use super::{
    distribute::MESH,
    emit::{emit_invocation, token, Emitter, Placement},
    import::{block_parameters, element, kv_cache_shape, tensor_type},
    Failure,
};
use crate::dialect::model::binding::{read_spec, INFERENCE_SPEC};
use crate::{
    analysis::workload::{
        derive_decode_block, derive_prefill_block, kv_cache_bytes, BlockDerivation, BlockMemory, InferenceSpec, PrimitiveInvocation,
    },
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

fn run(module: OperationRef, pass: ExternalPass) {
    super::run_building(module, pass, build);
}

fn build<'c, 'a>(module: OperationRef<'c, 'a>, generated: &Module<'c>) -> Result<(), Failure<'c, 'a>> {
    let ops = collect_ops(module);
    super::ensure_no_dist_program(&ops, "distribute-transformer-inference")?;
    let phases: Vec<OperationRef> = ops.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderInference)).collect();
    let phase_of = |op: OperationRef| enum_attr::<InferencePhase>(op, "phase");
    // A decomposed served block is found by its prefill query projection.
    let by_id = |id: &str| ops.iter().copied().find(|op| dialect_of(&name_of(*op)) == "model" && str_attr(*op, "id") == Some(id));
    let Some(prefill) =
        phases.iter().copied().find(|op| phase_of(*op) == Some(InferencePhase::Prefill)).or_else(|| by_id("prefill.attn.q"))
    else {
        return Err((
            module,
            "distribute-transformer-inference: no prefill 'model.decoder_inference' op (or decomposed served block) to distribute".into(),
        ));
    };
    let spec: InferenceSpec = read_spec(module, INFERENCE_SPEC, |s: &InferenceSpec| s.validate().map_err(|e| e.to_string()))
        .map_err(|e| (prefill, format!("distribute-transformer-inference: {e}")))?;
    for &op in &phases {
        check_dimensions(op, &spec)?;
    }
    if phases.is_empty() {
        check_decomposed(prefill, &spec)?;
    }
    let prefill_work = derive_prefill_block(&spec).map_err(|e| (prefill, e.to_string()))?;
    let decode = phases.iter().copied().find(|op| phase_of(*op) == Some(InferencePhase::Decode));
    let decode_work = match (decode, by_id("decode.attn.q")) {
        (Some(op), _) => {
            let context = int_attr(op, "context_tokens").and_then(|c| u64::try_from(c).ok()).unwrap_or(0);
            Some((op, derive_decode_block(&spec, context).map_err(|e| (op, e.to_string()))?))
        }
        // Decomposed: the decode step at the final context, as imported.
        (None, Some(op)) => Some((op, derive_decode_block(&spec, spec.workload.final_context()).map_err(|e| (op, e.to_string()))?)),
        (None, None) => None,
    };
    let model_ids: HashSet<String> =
        ops.iter().filter(|op| dialect_of(&name_of(**op)) == "model").filter_map(|op| str_attr(*op, "id").map(str::to_string)).collect();
    let digest = layer_digest(module, "model");
    let program = || -> Result<(), BuildError> {
        let (e, prompt) = header(generated, &spec, &prefill_work.memory, &digest, prefill.location())?;
        let prefill_id = str_attr(prefill, "id").unwrap_or("prefill").to_string();
        let mut previous = emit_phase(&e, &spec, &prefill_work, &|inv| owner(&model_ids, inv, &prefill_id), prompt, "prompt")?;
        if let Some((op, work)) = &decode_work {
            let decode_id = str_attr(*op, "id").unwrap_or("decode").to_string();
            let e = Emitter::new(e.b, e.block, op.location());
            previous = emit_phase(&e, &spec, work, &|inv| owner(&model_ids, inv, &decode_id), previous, "token")?;
        }
        let _ = previous;
        e.push(e.b.func_return(&[], prefill.location()))?;
        Ok(())
    };
    program().map_err(|e| (prefill, e.to_string()))
}

/// The model op an invocation is attributed to: its decomposed op if the
/// module has one, else the coarse phase op.
fn owner(ids: &HashSet<String>, inv: &PrimitiveInvocation, coarse: &str) -> String {
    let own = crate::ir::lineage::model_op_id(inv);
    if ids.contains(&own) {
        own
    } else {
        coarse.to_string()
    }
}

/// What [`check_decomposed`] compares of a model op: name, id, result types.
type Signature = (String, String, Vec<String>);

/// The served block is derived from the spec, not read from its ops (the
/// training distribution reads them; inference does not yet): a
/// decomposed block must be the one the spec decomposes into, op for op
/// (kind, id and result types), or the derived program would not be its
/// program. An edited op is an error at that op.
fn check_decomposed<'c, 'a>(prefill: OperationRef<'c, 'a>, spec: &InferenceSpec) -> Result<(), Failure<'c, 'a>> {
    const PASS: &str = "distribute-transformer-inference";
    let function = prefill
        .parent_operation()
        .filter(|f| name_of(*f) == "func.func")
        .ok_or_else(|| (prefill, format!("{PASS}: the decomposed served block must be the body of a 'func.func'")))?;
    // SAFETY: the op's context outlives this pass.
    let context = unsafe { prefill.context().to_ref() };
    let location = Location::unknown(context);
    let coarse = super::import::import_inference(context, spec, location).map_err(|e| (prefill, format!("{PASS}: {e}")))?;
    let coarse_ops = collect_ops(coarse.as_operation());
    let coarse_prefill = coarse_ops
        .iter()
        .copied()
        .find(|op| {
            OpKind::of(*op) == Some(OpKind::ModelDecoderInference)
                && enum_attr::<InferencePhase>(*op, "phase") == Some(InferencePhase::Prefill)
        })
        .ok_or_else(|| (prefill, format!("{PASS}: the spec imports no prefill")))?;
    let scratch = Module::new(location);
    let expected = super::decompose::decompose_into(coarse.as_operation(), coarse_prefill, &scratch)
        .map_err(|(_, e)| (prefill, format!("{PASS}: the spec's served block does not decompose: {e}")))?;
    // Each model op with what is compared of it: name, id, result types.
    let signature = |op: &OperationRef| -> Signature {
        let types = op.results().map(|r| crate::ir::read::type_string(melior::ir::ValueLike::r#type(&r))).collect();
        (name_of(*op), str_attr(*op, "id").unwrap_or_default().to_string(), types)
    };
    let is_model = |op: &OperationRef| dialect_of(&name_of(*op)) == "model";
    let found: Vec<(OperationRef<'c, 'a>, Signature)> =
        collect_ops(function).into_iter().filter(is_model).map(|op| (op, signature(&op))).collect();
    let want: Vec<Signature> = collect_ops(expected).into_iter().filter(is_model).map(|op| signature(&op)).collect();
    let edited = |at: OperationRef<'c, 'a>, what: String| {
        (at, format!("{PASS}: {what}; a served block is derived from the spec (its decomposed ops are not read yet), so an edit of them would be ignored: state the change in the spec"))
    };
    for (i, ((op, got), expect)) in found.iter().zip(&want).enumerate() {
        if got != expect {
            let describe = |(name, id, types): &Signature| format!("'{name}' \"{id}\" -> ({})", types.join(", "));
            return Err(edited(*op, format!("op #{i} is {}, but the spec's block has {}", describe(got), describe(expect))));
        }
    }
    match (found.get(want.len()), want.get(found.len())) {
        (Some((op, (name, id, _))), _) => Err(edited(*op, format!("'{name}' \"{id}\" is not in the spec's block"))),
        (None, Some((name, id, _))) => Err(edited(
            found.last().map_or(prefill, |(op, _)| *op),
            format!("the spec's block goes on with '{name}' \"{id}\", which this block lacks"),
        )),
        (None, None) => Ok(()),
    }
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

/// The header, mesh, memory facts and the function's boundary values;
/// returns the emitter of the function body and the prompt value.
fn header<'c, 'g>(
    generated: &'g Module<'c>,
    spec: &InferenceSpec,
    prefill_memory: &BlockMemory,
    model_digest: &str,
    anchor: Location<'c>,
) -> Result<(Emitter<'c, 'g>, Value<'c, 'g>), BuildError> {
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
    let shape: Vec<i64> = [spec.mapping.pp, kv_split, tp / kv_split].iter().map(|v| i64::try_from(*v).unwrap_or(i64::MAX)).collect();
    top.push(
        dist::Mesh { sym_name: MESH, axes: b.strings(&["pp", "tp_kv", "tp_rep"]), shape: &shape, optional: Default::default() }
            .build(&b, top.at(MESH)),
    )?;
    for (kind, bytes) in [
        (MemoryKind::Weight, prefill_memory.weights),
        (MemoryKind::ActivationWorking, prefill_memory.act_working_space),
        (MemoryKind::KvCache, kv_cache_bytes(spec, w.final_context())),
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
    let prompt = value(
        "prompt.in",
        b.split_axes::<&str>(&[vec![], vec![], vec![]]),
        "prompt.in",
        tensor_type(&b, &[w.batch, w.prompt_tokens, m.hidden], dt),
    )?;
    let width = m.heads * m.head_dim;
    let kv_width = m.kv_heads() * m.head_dim;
    let ffn_in = if m.gated_mlp { 2 * m.ffn_hidden } else { m.ffn_hidden };
    for (id, shape) in block_parameters(m.hidden, width, kv_width, ffn_in, m.ffn_hidden) {
        let split = match id {
            "attn.q.weight" | "mlp.fc1.weight" => b.split_axes(&[vec![], TP_AXES.to_vec()]),
            "attn.k.weight" | "attn.v.weight" => b.split_axes(&[vec![], vec!["tp_kv"]]),
            "attn.proj.weight" | "mlp.fc2.weight" => b.split_axes(&[TP_AXES.to_vec(), vec![]]),
            _ => b.split_axes::<&str>(&[vec![]]),
        };
        value(id, split, id, tensor_type(&b, &shape, dt))?;
    }
    // The KV cache at its capacity (end of generation): K/V heads split over
    // `tp_kv`, replicated over `tp_rep`.
    let cache = b.tensor(&kv_cache_shape(spec, Some(w.final_context())), element(&b, w.kv_datatype()));
    value("kv.cache", b.split_axes(&[vec![], vec![], vec![], vec!["tp_kv"]]), "prefill", cache)?;
    Ok((e, prompt))
}

/// One phase's tasks on the token chain; its last compute task returns the
/// phase output (`<output>.out`). Returns the last token.
fn emit_phase<'c, 'g>(
    e: &Emitter<'c, 'g>,
    spec: &InferenceSpec,
    derivation: &BlockDerivation,
    lineage: &dyn Fn(&PrimitiveInvocation) -> String,
    previous: Value<'c, 'g>,
    output: &str,
) -> Result<Value<'c, 'g>, BuildError> {
    let b = e.b;
    let tp = spec.mapping.tp;
    let group: Vec<i64> = (0..i64::try_from(tp).unwrap_or(i64::MAX)).collect();
    let dt = element(&b, spec.workload.datatype);
    let tokens = if output == "prompt" { spec.workload.prompt_tokens } else { 1 };
    let value_type = tensor_type(&b, &[spec.workload.batch, tokens, spec.model.hidden], dt);
    let place = Placement {
        mesh: MESH,
        slice: None,
        ranks: (spec.mapping.pp > 1).then_some(group.as_slice()),
        participants: Some(&group),
        axes: &TP_AXES,
        id_prefix: "",
    };
    let terminal = derivation.invocations.iter().rposition(|inv| inv.collective.is_none());
    let mut previous = previous;
    for (index, inv) in derivation.invocations.iter().enumerate() {
        let lineage = lineage(inv);
        let place = if inv.collective.is_some() { Placement { ranks: None, ..place } } else { place };
        let is_terminal = Some(index) == terminal;
        let op = emit_invocation(e, inv, place, &lineage, &[previous], is_terminal.then_some(value_type))?;
        previous = token(op);
        if is_terminal {
            let id = format!("{output}.out");
            let none: [Vec<&str>; 3] = [vec![], vec![], vec![]];
            e.push(
                dist::Output {
                    value: result(op, 1),
                    id: &id,
                    mesh: MESH,
                    split_axes: b.split_axes(&none),
                    lineage: &id,
                    optional: Default::default(),
                }
                .build(&b, e.at(&id)),
            )?;
        }
    }
    Ok(previous)
}
