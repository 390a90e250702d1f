//! `distribute-transformer-training`: ModelIR + strategy -> DistributedTaskIR
//! for one decoder block.
//!
//! The block is derived by the workload algebra ([`crate::workload`]) and
//! each primitive invocation becomes one task on a logical `dp x pp x tp`
//! mesh, in stage order forward -> recompute -> re-communication -> backward
//! -> optimizer, serial within a stage (a token chain). Collectives are
//! explicit (all-reduce under AR; all-gather / reduce-scatter under sequence
//! parallelism; none at TP = 1); pipeline transfers and the data-parallel
//! gradient reduction appear when PP or DP > 1. Boundary values carry their
//! sharding (sequence dimension split under sequence parallelism), memory
//! facts are `dist.memory` ops, the block output comes from the forward
//! terminal, and the header records the ModelIR digest. Every task's
//! `lineage` names the ModelIR op it came from.
//!
//! The pass validates everything first and builds the program into a
//! detached module, which is moved in only on success: on any error it
//! changes nothing.

use std::collections::HashSet;

use melior::{
    ir::{block::BlockLike, operation::OperationLike, Location, Module, OperationRef, RegionLike},
    pass::ExternalPass,
};

use super::{
    binding::{read_spec, TRAINING_SPEC},
    emit::{emit_invocation, phase_case, token, Emitter, Placement},
    import::{block_parameters, element, tensor_type},
    Failure,
};
use crate::{
    dialects::{dist, result, BuildError, Builder},
    digest::layer_digest,
    ir::{collect_ops, dialect_of, name_of, str_attr},
    ods::{self, MemoryKind, OpKind, Reduction},
    workload::{
        derive_training_block, pipeline_message_bytes, BlockDerivation, BlockFacts, Phase, Primitive,
        PrimitiveInvocation, TrainingSpec,
    },
};

crate::pass_macro::external_pass!(
    "DistributeTransformerTraining",
    "distribute-transformer-training",
    "Derive the tensor-parallel dist program of one decoder training block from ModelIR and its strategy",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    super::run_building(module, pass, build);
}

/// Checks the input and builds the program into `generated`; nothing in
/// `module` is changed here.
fn build<'c, 'a>(module: OperationRef<'c, 'a>, generated: &Module<'c>) -> Result<(), Failure<'c, 'a>> {
    let ops = collect_ops(module);
    super::ensure_no_dist_program(&ops, "distribute-transformer-training")?;
    // The block: the coarse op, or a decomposed block (its `attn.q` matmul).
    let coarse: Vec<OperationRef> = ops.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderTraining)).collect();
    let decomposed = ops.iter().copied().find(|op| OpKind::of(*op) == Some(OpKind::ModelMatmul) && str_attr(*op, "id") == Some("attn.q"));
    let block = match (coarse.as_slice(), decomposed) {
        ([block], _) => *block,
        ([], Some(anchor)) => anchor,
        ([], None) => return Err((module, "distribute-transformer-training: no 'model.decoder_training' op (or decomposed block) to distribute".into())),
        ([_, second, ..], _) => {
            return Err((*second, "distribute-transformer-training: expected one 'model.decoder_training' op (one block), found several".into()))
        }
    };
    let spec: TrainingSpec = read_spec(module, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string()))
        .map_err(|e| (block, format!("distribute-transformer-training: {e}")))?;
    if OpKind::of(block) == Some(OpKind::ModelDecoderTraining) {
        check_dimensions(block, &spec)?;
    }
    let derivation = derive_training_block(&spec).map_err(|e| (block, e.to_string()))?;
    let model_ids: HashSet<String> = ops
        .iter()
        .filter(|op| dialect_of(&name_of(**op)) == "model")
        .filter_map(|op| str_attr(*op, "id").map(str::to_string))
        .collect();
    let block_id = str_attr(block, "id").unwrap_or("block").to_string();
    let lineage = |inv: &PrimitiveInvocation| {
        let own = model_op_id(inv);
        if model_ids.contains(&own) { own } else { block_id.clone() }
    };
    let digest = layer_digest(module, "model");
    program(generated, &spec, &derivation, &digest, &lineage, block.location()).map_err(|e| (block, e.to_string()))
}

/// The coarse op's dimensions must be the bound spec's.
fn check_dimensions<'c, 'a>(block: OperationRef<'c, 'a>, spec: &TrainingSpec) -> Result<(), Failure<'c, 'a>> {
    let m = &spec.model;
    super::check_bound_dimensions(block, TRAINING_SPEC, &[
        ("hidden", m.hidden),
        ("ffn_hidden", m.ffn_hidden),
        ("seq_len", m.seq_len),
        ("heads", m.heads),
        ("head_dim", m.head_dim),
        ("microbatch", spec.workload.microbatch),
    ])?;
    let datatype = crate::ir::enum_attr::<ods::Datatype>(block, "datatype");
    let want = super::import::datatype_case(spec.workload.datatype);
    if datatype != Some(want) {
        let found = datatype.map_or("(none)", ods::Datatype::name);
        return Err((block, format!("'model.decoder_training' op datatype is '{found}', but the strategy binding says '{want}'")));
    }
    Ok(())
}

/// The id a decomposed ModelIR gives the op an invocation comes from:
/// the forward op itself, or its `.agrad` / `.wgrad` / `.optim` companion.
/// Collectives belong to the op next to them: the layer norm before a TP
/// entry, the dropout after a TP exit (present in every MLP variant).
#[must_use]
pub fn model_op_id(inv: &PrimitiveInvocation) -> String {
    let base = match inv.source.as_str() {
        "attn.tp_entry" => "attn.ln",
        "attn.tp_exit" => "attn.dropout",
        "mlp.tp_entry" => "mlp.ln",
        "mlp.tp_exit" => "mlp.dropout",
        other => other,
    };
    match inv.phase {
        Phase::ActivationGradient => format!("{base}.agrad"),
        Phase::WeightGradient => format!("{base}.wgrad"),
        Phase::Optimizer => format!("{base}.optim"),
        Phase::Prefill => format!("prefill.{base}"),
        Phase::Decode => format!("decode.{base}"),
        _ => base.to_string(),
    }
}

pub(crate) const MESH: &str = "block_mesh";

struct Mesh {
    dp: u64,
    pp: u64,
    tp: u64,
}

impl Mesh {
    fn rank(&self, d: u64, p: u64, t: u64) -> i64 {
        i64::try_from((d * self.pp + p) * self.tp + t).unwrap_or(i64::MAX)
    }

    fn tp_group(&self) -> Vec<i64> {
        (0..self.tp).map(|t| self.rank(0, 0, t)).collect()
    }

    fn dp_group(&self) -> Vec<i64> {
        (0..self.dp).map(|d| self.rank(d, 0, 0)).collect()
    }
}

/// The memory facts of a block: (kind, bytes, shared by).
fn memory_facts(derivation: &BlockDerivation) -> [(MemoryKind, u64, u64); 8] {
    let memory = &derivation.memory;
    let shards = memory.shards.max(1);
    [
        (MemoryKind::Weight, memory.weights, 1),
        (MemoryKind::ActivationWorking, memory.act_working_space, 1),
        (MemoryKind::ActivationStorage, memory.act_storage_space, 1),
        (MemoryKind::ActivationCheckpoint, memory.act_checkpoint, 1),
        (MemoryKind::WeightGradient, memory.weight_grads, shards),
        (MemoryKind::WeightGradientUnsharded, memory.weight_grads_unsharded, 1),
        (MemoryKind::ActivationGradient, memory.act_grads, 1),
        (MemoryKind::OptimizerState, memory.optimizer, shards),
    ]
}

/// Builds the dist program into `generated`; `lineage` maps an invocation
/// to its ModelIR op.
fn program<'c>(
    generated: &Module<'c>,
    spec: &TrainingSpec,
    derivation: &BlockDerivation,
    model_digest: &str,
    lineage: &dyn Fn(&PrimitiveInvocation) -> String,
    anchor: Location<'c>,
) -> Result<(), BuildError> {
    let b = Builder::of(generated.as_operation());
    let m = &spec.model;
    let map = &spec.mapping;
    let mesh = Mesh { dp: map.dp, pp: map.pp, tp: map.tp };
    let dt = element(&b, spec.workload.datatype);
    let activation = tensor_type(&b, &[spec.workload.microbatch, m.seq_len, m.hidden], dt);
    let seq_split: Vec<&str> = if map.sequence_parallel() { vec!["tp"] } else { vec![] };
    let activation_split = b.split_axes(&[vec![], seq_split, vec![]]);
    let tp_group = mesh.tp_group();
    let whole_mesh = mesh.dp * mesh.pp * mesh.tp != mesh.tp;
    let top = Emitter::new(b, generated.body(), anchor);

    top.push(dist::Header { schema_name: "blueprint.dist", schema_version: "1.0", model_digest, optional: Default::default() }.build(&b, top.at("dist.header")))?;
    let shape: Vec<i64> = [mesh.dp, mesh.pp, mesh.tp].iter().map(|v| i64::try_from(*v).unwrap_or(i64::MAX)).collect();
    top.push(dist::Mesh { sym_name: MESH, axes: b.strings(&["dp", "pp", "tp"]), shape: &shape, optional: Default::default() }.build(&b, top.at(MESH)))?;
    for (kind, bytes, shared) in memory_facts(derivation) {
        let id = format!("mem.{}", kind.name());
        top.push(
            dist::Memory { id: &id, mesh: MESH, kind, bytes, lineage: "block", optional: dist::MemoryOptional { shared_by: (shared > 1).then_some(shared), ..Default::default() } }
                .build(&b, top.at(&id)),
        )?;
    }
    let function = top.push(b.func("decoder_block_dist", &[], &[], anchor))?;
    let body = function.region(0).ok().and_then(|r| r.first_block()).ok_or(BuildError { op: "func.func" })?;
    let e = Emitter::new(b, body, anchor);
    let input = result(
        e.push(dist::Value { id: "block.in", mesh: MESH, split_axes: activation_split, lineage: "block.in", results: &[activation], optional: Default::default() }.build(&b, e.at("block.in")))?,
        0,
    );
    let width = m.heads * m.head_dim;
    for (id, shape) in &block_parameters(m.hidden, width, width, m.ffn_hidden, m.ffn_hidden) {
        let split = match *id {
            "attn.q.weight" | "attn.k.weight" | "attn.v.weight" | "mlp.fc1.weight" => b.split_axes(&[vec![], vec!["tp"]]),
            "attn.proj.weight" | "mlp.fc2.weight" => b.split_axes(&[vec!["tp"], vec![]]),
            _ => b.split_axes::<&str>(&[vec![]]),
        };
        let ty = tensor_type(&b, shape, dt);
        e.push(dist::Value { id, mesh: MESH, split_axes: split, lineage: id, results: &[ty], optional: Default::default() }.build(&b, e.at(id)))?;
    }

    let invocations = &derivation.invocations;
    let last_forward_compute = invocations.iter().rposition(|inv| inv.phase == Phase::Forward && inv.collective.is_none());
    let first_backward = invocations.iter().position(|inv| inv.phase == Phase::ActivationGradient);
    let first_optimizer = invocations.iter().position(|inv| inv.phase == Phase::Optimizer);
    let pp_bytes = pipeline_message_bytes(spec);
    let dp_bytes = BlockFacts::from_derivation(derivation, spec).block_dp_size;
    let next_stage = mesh.rank(0, 1.min(mesh.pp - 1), 0);
    let place = Placement {
        mesh: MESH,
        slice: None,
        ranks: whole_mesh.then_some(tp_group.as_slice()),
        participants: Some(&tp_group),
        axes: &["tp"],
    };
    let collective_place = Placement { ranks: None, ..place };

    let mut previous = input;
    let mut output = None;
    for (index, inv) in invocations.iter().enumerate() {
        if Some(index) == first_backward && mesh.pp > 1 {
            let op = e.push(p2p(&e, "pp.recv_grad", Phase::ActivationGradient, previous, next_stage, 0, pp_bytes))?;
            previous = token(op);
        }
        if Some(index) == first_optimizer && mesh.dp > 1 {
            let op = e.push(dp_reduction(&e, map.optimizer_sharding, previous, &mesh.dp_group(), dp_bytes))?;
            previous = token(op);
        }
        let lineage = lineage(inv);
        let terminal = inv.collective.is_none() && Some(index) == last_forward_compute;
        let place = if inv.collective.is_some() { collective_place } else { place };
        let op = emit_invocation(&e, inv, place, &lineage, previous, terminal.then_some(activation))?;
        previous = token(op);
        if terminal {
            // The forward terminal produces the block output.
            let out = result(op, 1);
            output = Some(out);
            if mesh.pp > 1 {
                e.push(
                    dist::P2P { input: out, deps: &[previous], id: "pp.send_activation", mesh: MESH, phase: ods::Phase::Forward, lineage: "block.out", message_bytes: pp_bytes, source: 0, dest: next_stage, optional: Default::default() }
                    .build(&b, e.at("pp.send_activation")),
                )?;
            }
        }
    }
    if let Some(out) = output {
        e.push(dist::Output { value: out, id: "block.out", mesh: MESH, split_axes: activation_split, lineage: "block.out", optional: Default::default() }.build(&b, e.at("block.out")))?;
    }
    e.push(b.func_return(&[], anchor))?;
    Ok(())
}

/// A facts-only pipeline transfer on the token chain.
fn p2p<'c, 'a>(e: &Emitter<'c, 'a>, id: &str, phase: Phase, previous: melior::ir::Value<'c, 'a>, source: i64, dest: i64, bytes: u64) -> Result<melior::ir::Operation<'c>, BuildError> {
    dist::P2P { input: previous, deps: &[], id, mesh: MESH, phase: phase_case(phase), lineage: "block.out", message_bytes: bytes, source, dest, optional: Default::default() }
    .build(&e.b, e.at(id))
}

/// The data-parallel gradient reduction of the block (reduce-scatter under
/// optimizer sharding).
fn dp_reduction<'c, 'a>(e: &Emitter<'c, 'a>, sharded: bool, previous: melior::ir::Value<'c, 'a>, group: &[i64], bytes: u64) -> Result<melior::ir::Operation<'c>, BuildError> {
    let id = "dp.grad_reduce";
    let axes = e.b.strings(&["dp"]);
    if sharded {
        dist::ReduceScatter { input: previous, deps: &[], id, mesh: MESH, phase: ods::Phase::WeightGradient, lineage: "block", message_bytes: bytes, reduction: Reduction::Sum, results: &[e.token], optional: dist::ReduceScatterOptional { participants: Some(group), mesh_axes: Some(axes), ..Default::default() } }
        .build(&e.b, e.at(id))
    } else {
        dist::AllReduce { input: previous, deps: &[], id, mesh: MESH, phase: ods::Phase::WeightGradient, lineage: "block", message_bytes: bytes, reduction: Reduction::Sum, optional: dist::AllReduceOptional { participants: Some(group), mesh_axes: Some(axes), ..Default::default() } }
        .build(&e.b, e.at(id))
    }
}

/// The `phase` attribute spelling of a workload phase (from the ODS).
#[must_use]
pub fn phase_name(phase: Phase) -> &'static str {
    phase_case(phase).name()
}

/// The `primitive` attribute spelling of a primitive (from the ODS).
#[must_use]
pub fn primitive_name(primitive: Primitive) -> &'static str {
    match primitive {
        Primitive::Collective => "collective",
        other => super::emit::primitive_case(other).name(),
    }
}

