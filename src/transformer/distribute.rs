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
//! The pass validates everything first and then appends the program to the
//! module; on any error it changes nothing.

use std::{collections::HashSet, fmt::Write as _};

use melior::{
    ir::{operation::OperationLike, OperationRef},
    pass::ExternalPass,
};

use super::{
    Failure,
    binding::{read_spec, TRAINING_SPEC},
    import::{element_type, tensor},
};
use crate::{
    digest::layer_digest,
    ir::{collect_ops, dialect_of, name_of, str_attr},
    workload::{
        derive_training_block, pipeline_message_bytes, BlockDerivation, BlockFacts, CollectiveKind,
        Engine, Phase, Primitive, PrimitiveInvocation, TrainingSpec,
    },
};

crate::passes::external_pass!(
    "DistributeTransformerTraining",
    "distribute-transformer-training",
    "Derive the tensor-parallel dist program of one decoder training block from ModelIR and its strategy",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    super::run_generating(module, pass, prepare);
}

/// Checks the input and builds the program text; nothing is changed here.
fn prepare<'c, 'a>(module: OperationRef<'c, 'a>) -> Result<String, Failure<'c, 'a>> {
    let ops = collect_ops(module);
    super::ensure_no_dist_program(&ops, "distribute-transformer-training")?;
    // The block: the coarse op, or a decomposed block (its `attn.q` matmul).
    let coarse: Vec<OperationRef> = ops.iter().copied().filter(|op| name_of(*op) == "model.decoder_training").collect();
    let decomposed = ops.iter().copied().find(|op| name_of(*op) == "model.matmul" && str_attr(*op, "id") == Some("attn.q"));
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
    if name_of(block) == "model.decoder_training" {
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
    let at = |id: &str| super::located(id, block.location());
    Ok(program_text(&spec, &derivation, &layer_digest(module, "model"), &lineage, &at))
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
    let datatype = str_attr(block, "datatype").unwrap_or("");
    let want = super::import::datatype_name(spec.workload.datatype);
    if datatype != want {
        return Err((block, format!("'model.decoder_training' op datatype is '{datatype}', but the strategy binding says '{want}'")));
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

/// The `phase` attribute of a workload phase.
#[must_use]
pub fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Forward => "forward",
        Phase::Recompute => "recompute",
        Phase::ActivationGradient => "activation_gradient",
        Phase::WeightGradient => "weight_gradient",
        Phase::Optimizer => "optimizer",
        Phase::Recommunication => "recommunication",
        Phase::Prefill => "prefill",
        Phase::Decode => "decode",
    }
}

/// The `primitive` attribute of a primitive.
#[must_use]
pub fn primitive_name(primitive: Primitive) -> &'static str {
    match primitive {
        Primitive::Matmul => "matmul",
        Primitive::BatchMatmul => "batch_matmul",
        Primitive::LayerNorm => "layer_norm",
        Primitive::Softmax => "softmax",
        Primitive::Gelu => "gelu",
        Primitive::Swiglu => "swiglu",
        Primitive::Dropout => "dropout",
        Primitive::ResidualAdd => "residual_add",
        Primitive::GradientSum => "gradient_sum",
        Primitive::Adam => "adam",
        Primitive::Collective => "collective",
    }
}

pub(crate) const MESH: &str = "block_mesh";

struct Mesh {
    dp: u64,
    pp: u64,
    tp: u64,
}

impl Mesh {
    fn rank(&self, d: u64, p: u64, t: u64) -> u64 {
        (d * self.pp + p) * self.tp + t
    }

    fn tp_group(&self) -> Vec<u64> {
        (0..self.tp).map(|t| self.rank(0, 0, t)).collect()
    }

    fn dp_group(&self) -> Vec<u64> {
        (0..self.dp).map(|d| self.rank(d, 0, 0)).collect()
    }
}

pub(crate) fn ranks(list: &[u64]) -> String {
    let items: Vec<String> = list.iter().map(u64::to_string).collect();
    format!("array<i64: {}>", items.join(", "))
}

/// Builds the dist program; `lineage` maps an invocation to its ModelIR op.
fn program_text(
    spec: &TrainingSpec,
    derivation: &BlockDerivation,
    model_digest: &str,
    lineage: &dyn Fn(&PrimitiveInvocation) -> String,
    at: &dyn Fn(&str) -> String,
) -> String {
    let m = &spec.model;
    let map = &spec.mapping;
    let mesh = Mesh { dp: map.dp, pp: map.pp, tp: map.tp };
    let dt = element_type(spec.workload.datatype);
    let activation = tensor(&[spec.workload.microbatch, m.seq_len, m.hidden], dt);
    let seq_split = if map.sequence_parallel() { "[\"tp\"]" } else { "[]" };
    let activation_split = format!("[[], {seq_split}, []]");
    let tp_group = ranks(&mesh.tp_group());
    let whole_mesh = mesh.dp * mesh.pp * mesh.tp != mesh.tp;
    let compute_ranks = if whole_mesh { format!(", ranks = {tp_group}") } else { String::new() };

    let mut t = String::new();
    let _ = writeln!(t, "module {{");
    let _ = writeln!(t, "  \"dist.header\"() {{schema_name = \"blueprint.dist\", schema_version = \"1.0\", model_digest = \"{model_digest}\"}} : () -> () {}", at("dist.header"));
    let _ = writeln!(t, "  \"dist.mesh\"() {{sym_name = \"{MESH}\", axes = [\"dp\", \"pp\", \"tp\"], shape = array<i64: {}, {}, {}>}} : () -> () {}", mesh.dp, mesh.pp, mesh.tp, at(MESH));
    let memory = &derivation.memory;
    let sharded = if memory.shards > 1 { format!(", shared_by = {} : i64", memory.shards) } else { String::new() };
    for (kind, bytes, shared) in [
        ("weight", memory.weights, ""),
        ("activation_working", memory.act_working_space, ""),
        ("activation_storage", memory.act_storage_space, ""),
        ("activation_checkpoint", memory.act_checkpoint, ""),
        ("weight_gradient", memory.weight_grads, sharded.as_str()),
        ("weight_gradient_unsharded", memory.weight_grads_unsharded, ""),
        ("activation_gradient", memory.act_grads, ""),
        ("optimizer_state", memory.optimizer, sharded.as_str()),
    ] {
        let _ = writeln!(t, "  \"dist.memory\"() {{id = \"mem.{kind}\", mesh = @{MESH}, kind = \"{kind}\", bytes = {bytes} : i64, lineage = \"block\"{shared}}} : () -> () {}", at(&format!("mem.{kind}")));
    }
    let _ = writeln!(t, "  func.func @decoder_block_dist() {{");
    let _ = writeln!(t, "    %in = \"dist.value\"() {{id = \"block.in\", mesh = @{MESH}, split_axes = {activation_split}, lineage = \"block.in\"}} : () -> {activation} {}", at("block.in"));
    let width = m.heads * m.head_dim;
    let params = super::import::block_parameters(m.hidden, width, width, m.ffn_hidden, m.ffn_hidden);
    for (id, shape) in &params {
        let split = match *id {
            "attn.q.weight" | "attn.k.weight" | "attn.v.weight" | "mlp.fc1.weight" => "[[], [\"tp\"]]",
            "attn.proj.weight" | "mlp.fc2.weight" => "[[\"tp\"], []]",
            _ => "[[]]",
        };
        let _ = writeln!(t, "    %{} = \"dist.value\"() {{id = \"{id}\", mesh = @{MESH}, split_axes = {split}, lineage = \"{id}\"}} : () -> {} {}", id.replace('.', "_"), tensor(shape, dt), at(id));
    }

    let invocations = &derivation.invocations;
    let last_forward_compute = invocations
        .iter()
        .rposition(|inv| inv.phase == Phase::Forward && inv.collective.is_none());
    let first_backward = invocations.iter().position(|inv| inv.phase == Phase::ActivationGradient);
    let first_optimizer = invocations.iter().position(|inv| inv.phase == Phase::Optimizer);
    let pp_bytes = pipeline_message_bytes(spec);
    let dp_bytes = BlockFacts::from_derivation(derivation, spec).block_dp_size;
    let next_stage = mesh.rank(0, 1.min(mesh.pp - 1), 0);

    let mut chain = Chain { text: t, counter: 0, previous: "%in".into(), previous_type: activation.clone() };
    let mut output = false;
    for (index, inv) in invocations.iter().enumerate() {
        if Some(index) == first_backward && mesh.pp > 1 {
            chain.push(&format!(
                "\"dist.p2p\"($DEPS) {{id = \"pp.recv_grad\", mesh = @{MESH}, phase = \"activation_gradient\", source = {next_stage} : i64, dest = 0 : i64, message_bytes = {pp_bytes} : i64, lineage = \"block.out\"}} : ($DEP_TYPE) -> !dist.token {}", at("pp.recv_grad")
            ));
        }
        if Some(index) == first_optimizer && mesh.dp > 1 {
            let kind = if map.optimizer_sharding { "reduce_scatter" } else { "all_reduce" };
            chain.push(&format!(
                "\"dist.{kind}\"($DEPS) {{id = \"dp.grad_reduce\", mesh = @{MESH}, phase = \"weight_gradient\", participants = {}, reduction = \"sum\", mesh_axes = [\"dp\"], message_bytes = {dp_bytes} : i64, lineage = \"block\"}} : ($DEP_TYPE) -> !dist.token {}",
                ranks(&mesh.dp_group()), at("dp.grad_reduce")
            ));
        }
        let phase = phase_name(inv.phase);
        let lineage = lineage(inv);
        if let Some(collective) = inv.collective {
            let (op, reduction) = match collective.kind {
                CollectiveKind::AllReduce => ("all_reduce", ", reduction = \"sum\""),
                CollectiveKind::ReduceScatter => ("reduce_scatter", ", reduction = \"sum\""),
                CollectiveKind::AllGather => ("all_gather", ""),
            };
            chain.push(&format!(
                "\"dist.{op}\"($DEPS) {{id = \"{}\", mesh = @{MESH}, phase = \"{phase}\", participants = {tp_group}{reduction}, mesh_axes = [\"tp\"], message_bytes = {} : i64, ops = {} : i64, read_bytes = {} : i64, write_bytes = {} : i64, lineage = \"{lineage}\"}} : ($DEP_TYPE) -> !dist.token {}",
                inv.name, collective.message_bytes, inv.ops, inv.read_bytes, inv.write_bytes, at(&inv.name)
            ));
            continue;
        }
        let engine = if inv.engine == Engine::Matrix { "matrix" } else { "vector" };
        let shared = if inv.shared_by > 1 { format!(", shared_by = {} : i64", inv.shared_by) } else { String::new() };
        let attrs = format!(
            "{{id = \"{}\", mesh = @{MESH}, phase = \"{phase}\", engine = \"{engine}\", primitive = \"{}\", ops = {} : i64, read_bytes = {} : i64, write_bytes = {} : i64, lineage = \"{lineage}\"{compute_ranks}{shared}}}",
            inv.name, primitive_name(inv.primitive), inv.ops, inv.read_bytes, inv.write_bytes
        );
        if Some(index) != last_forward_compute {
            chain.push(&format!("\"dist.compute\"($DEPS) {attrs} : ($DEP_TYPE) -> !dist.token {}", at(&inv.name)));
            continue;
        }
        // The forward terminal produces the block output.
        chain.push_named(&format!("\"dist.compute\"($DEPS) {attrs} : ($DEP_TYPE) -> (!dist.token, {activation}) {}", at(&inv.name)), "%out");
        output = true;
        if mesh.pp > 1 {
            let token = chain.previous.clone();
            let _ = writeln!(chain.text, "    %sent = \"dist.p2p\"(%out, {token}) {{id = \"pp.send_activation\", mesh = @{MESH}, phase = \"forward\", source = 0 : i64, dest = {next_stage} : i64, message_bytes = {pp_bytes} : i64, lineage = \"block.out\"}} : ({activation}, !dist.token) -> {activation} {}", at("pp.send_activation"));
        }
    }
    let mut t = chain.text;
    if output {
        let _ = writeln!(t, "    \"dist.output\"(%out) {{id = \"block.out\", mesh = @{MESH}, split_axes = {activation_split}, lineage = \"block.out\"}} : ({activation}) -> () {}", at("block.out"));
    }
    let _ = writeln!(t, "    return\n  }}\n}}");
    t
}

/// A serial token chain: each task depends on the one before it.
pub(crate) struct Chain {
    pub(crate) text: String,
    pub(crate) counter: usize,
    pub(crate) previous: String,
    pub(crate) previous_type: String,
}

impl Chain {
    /// Appends a task whose only result is its token; `$DEPS` and
    /// `$DEP_TYPE` in `line` stand for the previous task's value and type.
    pub(crate) fn push(&mut self, line: &str) {
        let token = format!("%t{}", self.counter);
        self.counter += 1;
        let line = line.replace("$DEPS", &self.previous).replace("$DEP_TYPE", &self.previous_type);
        let _ = writeln!(self.text, "    {token} = {line}");
        self.previous = token;
        self.previous_type = "!dist.token".into();
    }

    /// Like [`Chain::push`] for a task that also returns a value named `value`.
    pub(crate) fn push_named(&mut self, line: &str, value: &str) {
        let token = format!("%t{}", self.counter);
        self.counter += 1;
        let line = line.replace("$DEPS", &self.previous).replace("$DEP_TYPE", &self.previous_type);
        let _ = writeln!(self.text, "    {token}, {value} = {line}");
        self.previous = token;
        self.previous_type = "!dist.token".into();
    }
}
