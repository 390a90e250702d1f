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
//! planning pass and conservation checks apply.

use std::{collections::HashSet, fmt::Write as _};

use melior::{
    ir::{operation::OperationLike, OperationRef},
    pass::ExternalPass,
};

use super::{
    Failure,
    binding::{read_spec, INFERENCE_SPEC},
    distribute::{model_op_id, phase_name, primitive_name, ranks, Chain, MESH},
    import::{element_type, kv_cache_type, tensor},
};
use crate::{
    digest::layer_digest,
    ir::{collect_ops, dialect_of, int_attr, name_of, str_attr},
    workload::{
        derive_decode_block, derive_prefill_block, kv_cache_bytes, BlockDerivation, BlockMemory, Engine,
        InferenceSpec, PrimitiveInvocation,
    },
};

crate::passes::external_pass!(
    "DistributeTransformerInference",
    "distribute-transformer-inference",
    "Derive the tensor-parallel dist program of one served block (prefill and decode) from ModelIR and its strategy",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    super::run_generating(module, pass, prepare);
}

fn prepare<'c, 'a>(module: OperationRef<'c, 'a>) -> Result<String, Failure<'c, 'a>> {
    let ops = collect_ops(module);
    super::ensure_no_dist_program(&ops, "distribute-transformer-inference")?;
    let phases: Vec<OperationRef> = ops.iter().copied().filter(|op| name_of(*op) == "model.decoder_inference").collect();
    // A decomposed served block is found by its prefill query projection.
    let by_id = |id: &str| ops.iter().copied().find(|op| dialect_of(&name_of(*op)) == "model" && str_attr(*op, "id") == Some(id));
    let Some(prefill) = phases.iter().copied().find(|op| str_attr(*op, "phase") == Some("prefill")).or_else(|| by_id("prefill.attn.q")) else {
        return Err((module, "distribute-transformer-inference: no prefill 'model.decoder_inference' op (or decomposed served block) to distribute".into()));
    };
    let spec: InferenceSpec = read_spec(module, INFERENCE_SPEC, |s: &InferenceSpec| s.validate().map_err(|e| e.to_string()))
        .map_err(|e| (prefill, format!("distribute-transformer-inference: {e}")))?;
    for &op in &phases {
        check_dimensions(op, &spec)?;
    }
    let prefill_work = derive_prefill_block(&spec).map_err(|e| (prefill, e.to_string()))?;
    let decode = phases.iter().copied().find(|op| str_attr(*op, "phase") == Some("decode"));
    let decode_work = match (decode, by_id("decode.attn.q")) {
        (Some(op), _) => {
            let context = int_attr(op, "context_tokens").and_then(|c| u64::try_from(c).ok()).unwrap_or(0);
            Some((op, derive_decode_block(&spec, context).map_err(|e| (op, e.to_string()))?))
        }
        // Decomposed: the decode step at the final context, as imported.
        (None, Some(op)) => Some((op, derive_decode_block(&spec, spec.workload.final_context()).map_err(|e| (op, e.to_string()))?)),
        (None, None) => None,
    };
    let model_ids: HashSet<String> = ops
        .iter()
        .filter(|op| dialect_of(&name_of(**op)) == "model")
        .filter_map(|op| str_attr(*op, "id").map(str::to_string))
        .collect();
    let mut text = header(&spec, &prefill_work.memory, &layer_digest(module, "model"), prefill);
    let mut chain = Chain { text: String::new(), counter: 0, previous: "%prompt".into(), previous_type: String::new() };
    let m = &spec.model;
    let dt = element_type(spec.workload.datatype);
    chain.previous_type = tensor(&[spec.workload.batch, spec.workload.prompt_tokens, m.hidden], dt);
    let prefill_id = str_attr(prefill, "id").unwrap_or("prefill").to_string();
    emit_phase(&mut chain, &spec, &prefill_work, &|inv| owner(&model_ids, inv, &prefill_id), prefill, "prompt");
    if let Some((op, work)) = &decode_work {
        let decode_id = str_attr(*op, "id").unwrap_or("decode").to_string();
        emit_phase(&mut chain, &spec, work, &|inv| owner(&model_ids, inv, &decode_id), *op, "token");
    }
    text.push_str(&chain.text);
    let _ = writeln!(text, "    return\n  }}\n}}");
    Ok(text)
}

/// The model op an invocation is attributed to: its decomposed op if the
/// module has one, else the coarse phase op.
fn owner(ids: &HashSet<String>, inv: &PrimitiveInvocation, coarse: &str) -> String {
    let own = model_op_id(inv);
    if ids.contains(&own) { own } else { coarse.to_string() }
}

fn check_dimensions<'c, 'a>(op: OperationRef<'c, 'a>, spec: &InferenceSpec) -> Result<(), Failure<'c, 'a>> {
    let m = &spec.model;
    super::check_bound_dimensions(op, INFERENCE_SPEC, &[
        ("hidden", m.hidden),
        ("ffn_hidden", m.ffn_hidden),
        ("heads", m.heads),
        ("kv_heads", m.kv_heads()),
        ("head_dim", m.head_dim),
        ("batch", spec.workload.batch),
    ])
}

/// Mesh axes of the tensor-parallel group: KV-head split, then replication.
const TP_AXES: &str = "[\"tp_kv\", \"tp_rep\"]";

fn header(spec: &InferenceSpec, prefill_memory: &BlockMemory, model_digest: &str, anchor: OperationRef) -> String {
    let m = &spec.model;
    let w = &spec.workload;
    let tp = spec.mapping.tp;
    let kv_split = m.kv_heads().min(tp);
    let at = |id: &str| super::located(id, anchor.location());
    let dt = element_type(w.datatype);
    let mut t = String::new();
    let _ = writeln!(t, "module {{");
    let _ = writeln!(t, "  \"dist.header\"() {{schema_name = \"blueprint.dist\", schema_version = \"1.0\", model_digest = \"{model_digest}\"}} : () -> () {}", at("dist.header"));
    let _ = writeln!(t, "  \"dist.mesh\"() {{sym_name = \"{MESH}\", axes = [\"pp\", \"tp_kv\", \"tp_rep\"], shape = array<i64: {}, {kv_split}, {}>}} : () -> () {}", spec.mapping.pp, tp / kv_split, at(MESH));
    for (kind, bytes) in [
        ("weight", prefill_memory.weights),
        ("activation_working", prefill_memory.act_working_space),
        ("kv_cache", kv_cache_bytes(spec, w.final_context())),
    ] {
        let _ = writeln!(t, "  \"dist.memory\"() {{id = \"mem.{kind}\", mesh = @{MESH}, kind = \"{kind}\", bytes = {bytes} : i64, lineage = \"prefill\"}} : () -> () {}", at(&format!("mem.{kind}")));
    }
    let _ = writeln!(t, "  func.func @decoder_block_inference_dist() {{");
    let all = "[\"tp_kv\", \"tp_rep\"]";
    let _ = writeln!(t, "    %prompt = \"dist.value\"() {{id = \"prompt.in\", mesh = @{MESH}, split_axes = [[], [], []], lineage = \"prompt.in\"}} : () -> {} {}", tensor(&[w.batch, w.prompt_tokens, m.hidden], dt), at("prompt.in"));
    let width = m.heads * m.head_dim;
    let kv_width = m.kv_heads() * m.head_dim;
    let ffn_in = if m.gated_mlp { 2 * m.ffn_hidden } else { m.ffn_hidden };
    for (id, shape) in super::import::block_parameters(m.hidden, width, kv_width, ffn_in, m.ffn_hidden) {
        let split = match id {
            "attn.q.weight" | "mlp.fc1.weight" => format!("[[], {all}]"),
            "attn.k.weight" | "attn.v.weight" => "[[], [\"tp_kv\"]]".to_string(),
            "attn.proj.weight" | "mlp.fc2.weight" => format!("[{all}, []]"),
            _ => "[[]]".to_string(),
        };
        let _ = writeln!(t, "    %{} = \"dist.value\"() {{id = \"{id}\", mesh = @{MESH}, split_axes = {split}, lineage = \"{id}\"}} : () -> {} {}", id.replace('.', "_"), tensor(&shape, dt), at(id));
    }
    // The KV cache at its capacity (end of generation): K/V heads split over
    // `tp_kv`, replicated over `tp_rep`.
    let _ = writeln!(t, "    %kv = \"dist.value\"() {{id = \"kv.cache\", mesh = @{MESH}, split_axes = [[], [], [], [\"tp_kv\"]], lineage = \"prefill\"}} : () -> {} {}", kv_cache_type(spec, Some(w.final_context())), at("kv.cache"));
    t
}

/// One phase's tasks on the token chain; its last compute task returns the
/// phase output (`<output>.out`).
fn emit_phase(
    chain: &mut Chain,
    spec: &InferenceSpec,
    derivation: &BlockDerivation,
    lineage: &dyn Fn(&PrimitiveInvocation) -> String,
    anchor: OperationRef,
    output: &str,
) {
    let tp = spec.mapping.tp;
    let group = ranks(&(0..tp).collect::<Vec<_>>());
    let dt = element_type(spec.workload.datatype);
    let tokens = if output == "prompt" { spec.workload.prompt_tokens } else { 1 };
    let value_type = tensor(&[spec.workload.batch, tokens, spec.model.hidden], dt);
    let at = |id: &str| super::located(id, anchor.location());
    let compute_ranks = if spec.mapping.pp > 1 { format!(", ranks = {group}") } else { String::new() };
    let terminal = derivation.invocations.iter().rposition(|inv| inv.collective.is_none());
    for (index, inv) in derivation.invocations.iter().enumerate() {
        let phase = phase_name(inv.phase);
        let lineage = lineage(inv);
        if let Some(collective) = inv.collective {
            chain.push(&format!(
                "\"dist.all_reduce\"($DEPS) {{id = \"{}\", mesh = @{MESH}, phase = \"{phase}\", participants = {group}, reduction = \"sum\", mesh_axes = {TP_AXES}, message_bytes = {} : i64, ops = {} : i64, read_bytes = {} : i64, write_bytes = {} : i64, lineage = \"{lineage}\"}} : ($DEP_TYPE) -> !dist.token {}",
                inv.name, collective.message_bytes, inv.ops, inv.read_bytes, inv.write_bytes, at(&inv.name)
            ));
            continue;
        }
        let engine = if inv.engine == Engine::Matrix { "matrix" } else { "vector" };
        let attrs = format!(
            "{{id = \"{}\", mesh = @{MESH}, phase = \"{phase}\", engine = \"{engine}\", primitive = \"{}\", ops = {} : i64, read_bytes = {} : i64, write_bytes = {} : i64, lineage = \"{lineage}\"{compute_ranks}}}",
            inv.name, primitive_name(inv.primitive), inv.ops, inv.read_bytes, inv.write_bytes
        );
        if Some(index) == terminal {
            let name = format!("%{output}_out");
            chain.push_named(&format!("\"dist.compute\"($DEPS) {attrs} : ($DEP_TYPE) -> (!dist.token, {value_type}) {}", at(&inv.name)), &name);
            let _ = writeln!(chain.text, "    \"dist.output\"({name}) {{id = \"{output}.out\", mesh = @{MESH}, split_axes = [[], [], []], lineage = \"{output}.out\"}} : ({value_type}) -> () {}", at(&format!("{output}.out")));
        } else {
            chain.push(&format!("\"dist.compute\"($DEPS) {attrs} : ($DEP_TYPE) -> !dist.token {}", at(&inv.name)));
        }
    }
}

/// The model's inference work under its bound strategy: the prefill's and
/// each decode op's invocations, and the memory facts (weights, working
/// activations, KV capacity at the end of generation).
pub fn model_invocations(
    module: OperationRef,
) -> Result<(Vec<PrimitiveInvocation>, std::collections::BTreeMap<String, crate::summary::MemoryFact>), crate::summary::SummaryError> {
    let spec: InferenceSpec = read_spec(module, INFERENCE_SPEC, |s: &InferenceSpec| s.validate().map_err(|e| e.to_string()))?;
    let prefill = derive_prefill_block(&spec)?;
    let memory_of = prefill.memory;
    let mut invocations = prefill.invocations;
    for op in collect_ops(module) {
        if name_of(op) == "model.decoder_inference" && str_attr(op, "phase") == Some("decode") {
            let context = int_attr(op, "context_tokens").and_then(|c| u64::try_from(c).ok()).unwrap_or(0);
            invocations.extend(derive_decode_block(&spec, context)?.invocations);
        } else if name_of(op) == "model.matmul" && str_attr(op, "id") == Some("decode.attn.q") {
            invocations.extend(derive_decode_block(&spec, spec.workload.final_context())?.invocations);
        }
    }
    let memory = [
        ("weight".to_string(), memory_of.weights),
        ("activation_working".to_string(), memory_of.act_working_space),
        ("kv_cache".to_string(), kv_cache_bytes(&spec, spec.workload.final_context())),
    ]
    .into_iter()
    .map(|(kind, bytes)| (kind, crate::summary::MemoryFact { bytes, shared_by: 1 }))
    .collect();
    Ok((invocations, memory))
}
