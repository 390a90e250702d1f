//! Import of a Transformer spec into ModelIR: one function holding the
//! block's typed values (input activation, parameters, optimizer state) and
//! the coarse decoder op, plus the strategy binding as a module attribute.
//! Built with the typed builders; every op is located at the spec (named
//! after its id), so diagnostics point at the file the user gave.

use melior::{
    ir::{
        block::BlockLike,
        operation::{OperationLike, OperationMutLike},
        Location, Module, RegionLike, Type, Value,
    },
    Context,
};

use super::block::TrainingBlock;
use crate::dialect::model::binding::{INFERENCE_SPEC, TRAINING_SPEC};
use crate::{
    analysis::workload::{Datatype, InferenceSpec, Norm, OptimizerKind, TrainingSpec},
    dialect::{
        builder::{result, BuildError, Builder},
        model,
    },
    ir::ods::{self, Role},
};

/// The MLIR element type of a datatype.
#[must_use]
pub fn element_type(datatype: Datatype) -> &'static str {
    match datatype {
        Datatype::Float8 => "f8E4M3FN",
        Datatype::Float16 => "f16",
        Datatype::Bfloat16 => "bf16",
        Datatype::Float32 => "f32",
    }
}

/// The ODS enum case of a datatype (also the spec's spelling).
#[must_use]
pub fn datatype_case(datatype: Datatype) -> ods::Datatype {
    match datatype {
        Datatype::Float8 => ods::Datatype::Float8,
        Datatype::Float16 => ods::Datatype::Float16,
        Datatype::Bfloat16 => ods::Datatype::Bfloat16,
        Datatype::Float32 => ods::Datatype::Float32,
    }
}

/// The spec's spelling of a datatype.
#[must_use]
pub fn datatype_name(datatype: Datatype) -> &'static str {
    datatype_case(datatype).name()
}

/// One named parameter of the block: (id, shape). The order is that of the
/// coarse op's operands.
#[must_use]
pub fn block_parameters(hidden: u64, attention_width: u64, kv_width: u64, ffn_in: u64, ffn_hidden: u64) -> [(&'static str, Vec<u64>); 10] {
    [
        ("attn.ln.scale", vec![hidden]),
        ("attn.ln.bias", vec![hidden]),
        ("attn.q.weight", vec![hidden, attention_width]),
        ("attn.k.weight", vec![hidden, kv_width]),
        ("attn.v.weight", vec![hidden, kv_width]),
        ("attn.proj.weight", vec![attention_width, hidden]),
        ("mlp.ln.scale", vec![hidden]),
        ("mlp.ln.bias", vec![hidden]),
        ("mlp.fc1.weight", vec![hidden, ffn_in]),
        ("mlp.fc2.weight", vec![ffn_hidden, hidden]),
    ]
}

/// A static tensor type; validation bounds every extent far below 2^63.
#[must_use]
pub fn tensor_type<'c>(b: &Builder<'c>, shape: &[u64], element: Type<'c>) -> Type<'c> {
    let dims: Vec<i64> = shape.iter().map(|d| i64::try_from(*d).unwrap_or(i64::MAX)).collect();
    b.tensor(&dims, element)
}

/// The element type of a datatype in `b`'s context.
#[must_use]
pub fn element<'c>(b: &Builder<'c>, datatype: Datatype) -> Type<'c> {
    match b.parse_type(element_type(datatype)) {
        Some(ty) => ty,
        None => unreachable!("builtin element types always parse"),
    }
}

fn header<'c>(b: &Builder<'c>, module: &Module<'c>, location: Location<'c>) -> Result<(), BuildError> {
    let op = model::Header { schema_name: "blueprint.model", schema_version: "1.0", optional: Default::default() }.build(b, location)?;
    module.body().append_operation(op);
    Ok(())
}

/// A `model.value` appended to `block`.
fn value<'c, 'a>(
    b: &Builder<'c>,
    block: &'a melior::ir::BlockRef<'c, 'a>,
    id: &str,
    role: Role,
    ty: Type<'c>,
    at: Location<'c>,
) -> Result<Value<'c, 'a>, BuildError> {
    let op = model::Value { id, role, results: &[ty], optional: Default::default() }.build(b, b.named_location(id, at))?;
    Ok(result(block.append_operation(op), 0))
}

/// `model.output value id [as role]`.
fn output<'c>(
    b: &Builder<'c>,
    block: &melior::ir::BlockRef<'c, '_>,
    value: Value<'c, '_>,
    id: &str,
    role: Option<Role>,
    at: Location<'c>,
) -> Result<(), BuildError> {
    let op =
        model::Output { value, id, optional: model::OutputOptional { role, ..Default::default() } }.build(b, b.named_location(id, at))?;
    block.append_operation(op);
    Ok(())
}

/// ModelIR of one decoder block trained under `spec` (validated by the
/// caller), in a new module of `context`. The strategy is a module
/// attribute, not part of ModelIR.
///
/// # Errors
/// When MLIR refuses an op (a defect of the builders).
pub fn import_training<'c>(context: &'c Context, spec: &TrainingSpec, location: Location<'c>) -> Result<Module<'c>, BuildError> {
    let b = Builder::new(context);
    let w = &spec.workload;
    let block_of = TrainingBlock::of_spec(spec);
    let m = &block_of;
    let dt = element(&b, w.datatype);
    let params = m.parameters();
    let activation = tensor_type(&b, &[w.microbatch, m.seq_len, m.hidden], dt);

    let mut module = Module::new(location);
    module.as_operation_mut().set_attribute(TRAINING_SPEC, b.json(&serde_json::to_value(spec).unwrap_or_default()));
    header(&b, &module, location)?;
    let function = module.body().append_operation(b.func("decoder_block", &[], &[], location)?);
    let block = function.region(0).ok().and_then(|r| r.first_block()).ok_or(BuildError { op: "func.func" })?;

    let x = value(&b, &block, "block.in", Role::Activation, activation, location)?;
    let mut p = std::collections::HashMap::new();
    for param in &params {
        p.insert(param.operand, value(&b, &block, param.id, Role::Parameter, tensor_type(&b, &param.shape, dt), location)?);
    }
    let f32_type = element(&b, Datatype::Float32);
    let state =
        value(&b, &block, "optimizer.state", Role::OptimizerState, tensor_type(&b, &[m.flat_state_elements()], f32_type), location)?;
    let named = |operand: &str| p.get(operand).copied().ok_or(BuildError { op: "model.decoder_training" });
    // Only what differs from the defaults (Calculon's block, Adam) is said.
    let explicit = w.optimizer.as_ref().map(|_| m.optimizer);
    let op = model::DecoderTraining {
        input: x,
        ln1_scale: named("ln1_scale")?,
        q_weight: named("q_weight")?,
        k_weight: named("k_weight")?,
        v_weight: named("v_weight")?,
        proj_weight: named("proj_weight")?,
        ln2_scale: named("ln2_scale")?,
        fc1_weight: named("fc1_weight")?,
        fc2_weight: named("fc2_weight")?,
        optimizer_state: state,
        id: "block",
        hidden: m.hidden,
        ffn_hidden: m.ffn_hidden,
        seq_len: m.seq_len,
        heads: m.heads,
        head_dim: m.head_dim,
        microbatch: w.microbatch,
        datatype: datatype_case(w.datatype),
        results: &[activation],
        optional: model::DecoderTrainingOptional {
            ln1_bias: p.get("ln1_bias").copied(),
            ln2_bias: p.get("ln2_bias").copied(),
            gate_weight: p.get("gate_weight").copied(),
            kv_heads: (m.kv_heads != m.heads).then_some(m.kv_heads),
            norm: (m.norm == Norm::RmsNorm).then_some(ods::Norm::RmsNorm),
            rope_theta: m.rope_theta,
            dropout: m.dropout,
            optimizer: explicit.map(|o| optimizer_case(o.kind)),
            lr: explicit.map(|o| o.lr),
            beta1: explicit.filter(|o| o.kind == OptimizerKind::Adam).map(|o| o.beta1),
            beta2: explicit.filter(|o| o.kind == OptimizerKind::Adam).map(|o| o.beta2),
            eps: explicit.filter(|o| o.kind == OptimizerKind::Adam).map(|o| o.eps),
            // Dropout consumes random state; a block without it does not.
            effects: Some(effects(if m.dropout.is_some() { &["parameter_update", "random_state"] } else { &["parameter_update"] })),
            ..Default::default()
        },
    }
    .build(&b, b.named_location("block", location))?;
    let y = result(block.append_operation(op), 0);
    output(&b, &block, y, "block.out", None, location)?;
    block.append_operation(b.func_return(&[], location)?);
    Ok(module)
}

/// The ODS case of an optimizer rule.
#[must_use]
pub fn optimizer_case(kind: OptimizerKind) -> ods::OptimizerKind {
    match kind {
        OptimizerKind::Sgd => ods::OptimizerKind::Sgd,
        OptimizerKind::Adam => ods::OptimizerKind::Adam,
    }
}

/// The flag value of a set of ODS effects (spellings from the ODS).
#[must_use]
pub fn effects(names: &[&str]) -> i64 {
    ods::EFFECTS_FLAGS.iter().filter(|(name, _)| names.contains(name)).fold(0, |acc, (_, bit)| acc | bit)
}

/// The shape of one block's KV cache (K and V stacked) for `tokens` tokens;
/// the token dimension is dynamic (symbolic) when `tokens` is `None`.
#[must_use]
pub fn kv_cache_shape(spec: &InferenceSpec, tokens: Option<u64>) -> Vec<i64> {
    let kv_width = spec.model.kv_heads() * spec.model.head_dim;
    let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    vec![2, to_i64(spec.workload.batch), tokens.map_or(-1, to_i64), to_i64(kv_width)]
}

/// ModelIR of one decoder block served under `spec` (validated by the
/// caller): the prefill over the prompt, which writes the KV cache, and a
/// decode step at the final context, which reads the whole cache and
/// appends one token. The cache's token dimension is symbolic, so the
/// dataflow prefill -> decode is explicit at every context length.
///
/// # Errors
/// When MLIR refuses an op (a defect of the builders).
pub fn import_inference<'c>(context: &'c Context, spec: &InferenceSpec, location: Location<'c>) -> Result<Module<'c>, BuildError> {
    let b = Builder::new(context);
    let m = &spec.model;
    let w = &spec.workload;
    let dt = element(&b, w.datatype);
    let width = m.heads * m.head_dim;
    let kv_width = m.kv_heads() * m.head_dim;
    let ffn_in = if m.gated_mlp { 2 * m.ffn_hidden } else { m.ffn_hidden };
    let params = block_parameters(m.hidden, width, kv_width, ffn_in, m.ffn_hidden);
    let prompt = tensor_type(&b, &[w.batch, w.prompt_tokens, m.hidden], dt);
    let token = tensor_type(&b, &[w.batch, 1, m.hidden], dt);
    let cache = b.tensor(&kv_cache_shape(spec, None), element(&b, w.kv_datatype()));

    let mut module = Module::new(location);
    module.as_operation_mut().set_attribute(INFERENCE_SPEC, b.json(&serde_json::to_value(spec).unwrap_or_default()));
    header(&b, &module, location)?;
    let function = module.body().append_operation(b.func("decoder_block_inference", &[], &[], location)?);
    let block = function.region(0).ok().and_then(|r| r.first_block()).ok_or(BuildError { op: "func.func" })?;

    let x = value(&b, &block, "prompt.in", Role::Input, prompt, location)?;
    let mut p = Vec::new();
    for (id, shape) in &params {
        p.push(value(&b, &block, id, Role::Parameter, tensor_type(&b, shape, dt), location)?);
    }
    let phase = |id: &'static str, phase, input, kv_cache, query: u64, context: u64, results: &[Type<'c>]| {
        model::DecoderInference {
            input,
            ln1_scale: p[0],
            ln1_bias: p[1],
            q_weight: p[2],
            k_weight: p[3],
            v_weight: p[4],
            proj_weight: p[5],
            ln2_scale: p[6],
            ln2_bias: p[7],
            fc1_weight: p[8],
            fc2_weight: p[9],
            id,
            phase,
            hidden: m.hidden,
            ffn_hidden: m.ffn_hidden,
            heads: m.heads,
            kv_heads: m.kv_heads(),
            head_dim: m.head_dim,
            batch: w.batch,
            query_tokens: query,
            context_tokens: context,
            datatype: datatype_case(w.datatype),
            kv_datatype: datatype_case(w.kv_datatype()),
            results,
            optional: model::DecoderInferenceOptional { kv_cache, effects: Some(effects(&["mutation"])), ..Default::default() },
        }
        .build(&b, b.named_location(id, location))
    };
    let prefill = block.append_operation(phase(
        "prefill",
        ods::InferencePhase::Prefill,
        x,
        None,
        w.prompt_tokens,
        w.prompt_tokens,
        &[prompt, cache],
    )?);
    output(&b, &block, result(prefill, 0), "prompt.out", None, location)?;
    if w.generated_tokens > 0 {
        let next = value(&b, &block, "token.in", Role::Input, token, location)?;
        let context = w.final_context();
        let decode = block.append_operation(phase(
            "decode",
            ods::InferencePhase::Decode,
            next,
            Some(result(prefill, 1)),
            1,
            context,
            &[token, cache],
        )?);
        output(&b, &block, result(decode, 0), "token.out", None, location)?;
        output(&b, &block, result(decode, 1), "kv.out", Some(Role::KvCache), location)?;
    } else {
        output(&b, &block, result(prefill, 1), "kv.out", Some(Role::KvCache), location)?;
    }
    block.append_operation(b.func_return(&[], location)?);
    Ok(module)
}
