//! ModelIR rules: dataflow closure, required effects, phase consistency and
//! the shape relations of primitives that are cheap to state exactly.

use melior::ir::{operation::OperationLike, OperationRef, TypeLike, ValueLike};

use crate::dialect::verify::checker::Checker;
use crate::ir::{
    ods::{InferencePhase, OpKind, OptimizerKind},
    read::{defining_op, dialect_of, enum_attr, int_attr, name_of, str_attr, tensor_element, tensor_shape, type_string},
};

/// Forward ops a gradient may name: the primitives with a derivative.
fn is_differentiable(kind: OpKind) -> bool {
    matches!(
        kind,
        OpKind::ModelMatmul
            | OpKind::ModelAdd
            | OpKind::ModelFork
            | OpKind::ModelLayerNorm
            | OpKind::ModelRmsNorm
            | OpKind::ModelAttentionScores
            | OpKind::ModelAttentionContext
            | OpKind::ModelRope
            | OpKind::ModelSoftmax
            | OpKind::ModelGelu
            | OpKind::ModelRelu
            | OpKind::ModelSilu
            | OpKind::ModelBiasAdd
            | OpKind::ModelSwiglu
            | OpKind::ModelDropout
            | OpKind::ModelBatchMatmul
            | OpKind::ModelSplit
    )
}

/// A float attribute of `op`, if it has one.
fn real_attr(op: OperationRef, name: &str) -> Option<f64> {
    op.attribute(name).ok().and_then(|a| melior::ir::attribute::FloatAttribute::try_from(a).ok()).map(|f| f.value())
}

/// An optional float attribute, when present, is finite and obeys `ok`.
fn check_real(checker: &mut Checker, op: OperationRef, name: &str, rule: &str, ok: impl Fn(f64) -> bool) {
    if let Some(value) = real_attr(op, name) {
        if !(value.is_finite() && ok(value)) {
            checker.error(op, format!("{name} must be {rule}, but got {value}"));
        }
    }
}

/// A gradient names a differentiable forward op of the module and one of
/// that op's operands.
fn check_gradient(checker: &mut Checker, op: OperationRef, forward: &std::collections::HashMap<&str, OperationRef>) {
    let Some(of) = str_attr(op, "of") else { return };
    let Some(source) = forward.get(of) else {
        checker.error(op, format!("names '{of}' in 'of', which is no differentiable forward op of the module"));
        return;
    };
    let wrt_index = op.operand_count().saturating_sub(1);
    let Ok(wrt) = op.operand(wrt_index) else { return };
    if !source.operands().any(|operand| operand == wrt) {
        checker.error(op, format!("differentiates '{of}' with respect to a value that is not one of its operands"));
    }
}

/// `[b, s, heads x head_dim]` queries (or probabilities `[b, heads, s, s]`
/// for the context), `[b, s, kv_heads x head_dim]` keys or values.
fn check_attention(checker: &mut Checker, op: OperationRef, scores: bool) {
    let (Some(heads), Some(kv), Some(d)) = (int_attr(op, "heads"), int_attr(op, "kv_heads"), int_attr(op, "head_dim")) else { return };
    if kv <= 0 || heads <= 0 || d <= 0 {
        return; // the ODS rules report non-positive counts
    }
    if heads % kv != 0 {
        checker.error(op, format!("kv_heads ({kv}) must divide heads ({heads})"));
        return;
    }
    if scores {
        check_real(checker, op, "scale", "finite and positive", |s| s > 0.0);
    }
    let (Ok(lhs), Ok(rhs), Ok(result)) = (op.operand(0), op.operand(1), op.result(0)) else { return };
    let (Some(l), Some(r), Some(y)) = (tensor_shape(lhs.r#type()), tensor_shape(rhs.r#type()), tensor_shape(result.r#type())) else {
        return;
    };
    let dims = |shape: &[Option<i64>]| shape.iter().map(|d| d.unwrap_or(-1)).collect::<Vec<_>>();
    let (l, r, y) = (dims(&l), dims(&r), dims(&y));
    let fail = |checker: &mut Checker, what: &str, want: &str, got: &[i64]| {
        checker.error(op, format!("{what}: expected {want}, but got {got:?}"));
    };
    if r.len() != 3 || r[2] != kv * d {
        return fail(checker, if scores { "keys" } else { "values" }, &format!("[b, s, kv_heads x head_dim = {}]", kv * d), &r);
    }
    let (b, s) = (r[0], r[1]);
    let act = vec![b, s, heads * d];
    let probs = vec![b, heads, s, s];
    let (input, output) = if scores { (&act, &probs) } else { (&probs, &act) };
    if &l != input {
        fail(checker, if scores { "queries" } else { "probabilities" }, &format!("{input:?}"), &l);
    } else if &y != output {
        fail(checker, "result", &format!("{output:?}"), &y);
    }
}

/// `[b, s, heads x head_dim]` in and out, an even `head_dim`, a base > 1.
fn check_rope(checker: &mut Checker, op: OperationRef) {
    let (Some(heads), Some(d)) = (int_attr(op, "heads"), int_attr(op, "head_dim")) else { return };
    if d % 2 != 0 {
        checker.error(op, format!("head_dim must be even (rotate-half pairs j and j + head_dim/2), but got {d}"));
    }
    check_real(checker, op, "theta", "finite and greater than 1", |t| t > 1.0);
    let (Ok(input), Ok(result)) = (op.operand(0), op.result(0)) else { return };
    let shape = tensor_shape(input.r#type()).unwrap_or_default();
    if shape.len() != 3 || shape[2] != Some(heads * d) {
        checker.error(op, format!("expects an input [b, s, heads x head_dim = {}], but got {}", heads * d, type_string(input.r#type())));
    } else if result.r#type() != input.r#type() {
        checker.error(op, "result must have the input's type");
    }
}

/// Effects an op must declare because its meaning implies them.
const REQUIRED_EFFECTS: &[(OpKind, &str)] = &[
    (OpKind::ModelDropout, "random_state"),
    (OpKind::ModelOptimizerStep, "parameter_update"),
    (OpKind::ModelDecoderTraining, "parameter_update"),
    (OpKind::ModelDecoderInference, "mutation"),
    (OpKind::ModelKvAppend, "mutation"),
];

/// Whether the `effects` flags of `op` include `effect` (an ODS spelling).
fn has_effect(op: OperationRef, effect: &str) -> bool {
    let flags = int_attr(op, "effects").unwrap_or(0);
    crate::ir::ods::EFFECTS_FLAGS.iter().any(|(name, bit)| *name == effect && flags & bit != 0)
}

pub fn check(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) {
    let in_model = crate::ir::read::kinds_in("model");
    // Forward ops by id, for the gradients that name them (`of`).
    let mut forward: std::collections::HashMap<&str, OperationRef> = std::collections::HashMap::new();
    for &(kind, op) in ops {
        if in_model[kind as usize] && is_differentiable(kind) {
            if let Some(id) = str_attr(op, "id") {
                forward.insert(id, op);
            }
        }
    }
    for &(kind, op) in ops {
        if !in_model[kind as usize] {
            continue;
        }
        check_operands_are_model_values(checker, op);
        for &(required_by, effect) in REQUIRED_EFFECTS {
            if kind == required_by && !has_effect(op, effect) {
                checker.error(op, format!("must declare effect '{effect}' in 'effects'"));
            }
        }
        match kind {
            OpKind::ModelDecoderInference => check_inference(checker, op),
            OpKind::ModelFork => check_fork(checker, op),
            OpKind::ModelGelu | OpKind::ModelRelu | OpKind::ModelSilu => check_elementwise(checker, op),
            OpKind::ModelBiasAdd => check_bias_add(checker, op),
            OpKind::ModelMatmul => check_matmul(checker, op),
            OpKind::ModelOptimizerStep => check_optimizer_step(checker, op),
            OpKind::ModelSplit => check_split(checker, op),
            OpKind::ModelAttentionScores => check_attention(checker, op, true),
            OpKind::ModelAttentionContext => check_attention(checker, op, false),
            OpKind::ModelRope => check_rope(checker, op),
            OpKind::ModelDropout => check_real(checker, op, "p", "a probability in [0, 1)", |p| (0.0..1.0).contains(&p)),
            OpKind::ModelLayerNorm | OpKind::ModelRmsNorm => check_real(checker, op, "eps", "finite and positive", |e| e > 0.0),
            OpKind::ModelActivationGradient | OpKind::ModelWeightGradient => check_gradient(checker, op, &forward),
            _ => {}
        }
    }
}

/// Values enter ModelIR only through `model.value`; every operand must be
/// produced by a ModelIR op, so the graph is closed over its own values.
fn check_operands_are_model_values(checker: &mut Checker, op: OperationRef) {
    for (index, operand) in op.operands().enumerate() {
        let from_model = defining_op(operand).is_some_and(|def| dialect_of(&name_of(def)) == "model");
        if !from_model {
            checker.error(op, format!("operand #{index} is not defined by a ModelIR op (values enter ModelIR through 'model.value')"));
        }
    }
}

/// Operands of `model.decoder_inference` before the optional KV cache.
const INFERENCE_FIXED_OPERANDS: usize = 11;

fn check_inference(checker: &mut Checker, op: OperationRef) {
    let (Some(phase), Some(query), Some(context)) =
        (enum_attr::<InferencePhase>(op, "phase"), int_attr(op, "query_tokens"), int_attr(op, "context_tokens"))
    else {
        return;
    };
    if phase == InferencePhase::Prefill && context != query {
        checker.error(op, format!("prefill must have context_tokens equal to query_tokens ({query}), but got {context}"));
    }
    if phase == InferencePhase::Decode && context < query {
        checker.error(op, format!("decode must attend over at least its query_tokens ({query}), but context_tokens is {context}"));
    }
    if let (Some(heads), Some(kv_heads)) = (int_attr(op, "heads"), int_attr(op, "kv_heads")) {
        // Non-positive counts are reported by the ODS rules.
        if kv_heads > 0 && (kv_heads > heads || heads % kv_heads != 0) {
            checker.error(op, format!("kv_heads ({kv_heads}) must divide heads ({heads})"));
        }
    }
    let has_cache = op.operand_count() > INFERENCE_FIXED_OPERANDS;
    if phase == InferencePhase::Decode && !has_cache {
        checker.error(op, "decode reads the KV cache, so it must take the 'kv_cache' operand");
    }
    if phase == InferencePhase::Prefill && has_cache {
        checker.error(op, "prefill writes a fresh KV cache and must not take a 'kv_cache' operand");
    }
}

fn check_fork(checker: &mut Checker, op: OperationRef) {
    let Ok(input) = op.operand(0) else { return };
    for (index, result) in op.results().enumerate() {
        if result.r#type() != input.r#type() {
            checker.error(
                op,
                format!(
                    "result #{index} has type {}, but the input has type {}",
                    type_string(result.r#type()),
                    type_string(input.r#type())
                ),
            );
        }
    }
}

/// An element-wise activation's result has its input's type.
fn check_elementwise(checker: &mut Checker, op: OperationRef) {
    let (Ok(input), Ok(result)) = (op.operand(0), op.result(0)) else { return };
    if result.r#type() != input.r#type() {
        checker.error(op, format!("result type {} must be the input's type {}", type_string(result.r#type()), type_string(input.r#type())));
    }
}

/// `y[..., j] = x[..., j] + bias[j]`: the bias is as wide as the input's
/// last dimension; the result has the input's type.
fn check_bias_add(checker: &mut Checker, op: OperationRef) {
    let (Ok(input), Ok(bias)) = (op.operand(0), op.operand(1)) else { return };
    let (Some(x), Some(b)) = (tensor_shape(input.r#type()), tensor_shape(bias.r#type())) else { return };
    if b.len() != 1 || x.last() != b.first() {
        let width = x.last().copied().flatten().map_or("?".to_string(), |w| w.to_string());
        checker
            .error(op, format!("expects a bias of shape [{width}] (the input's last dimension), but got {}", type_string(bias.r#type())));
    }
    check_elementwise(checker, op);
}

/// `Y[..., K] = X[..., N] x W[N, K]` with static dims checked exactly.
fn check_matmul(checker: &mut Checker, op: OperationRef) {
    let (Ok(lhs), Ok(rhs), Ok(result)) = (op.operand(0), op.operand(1), op.result(0)) else { return };
    let (Some(x), Some(w), Some(y)) = (tensor_shape(lhs.r#type()), tensor_shape(rhs.r#type()), tensor_shape(result.r#type())) else {
        return;
    };
    if x.is_empty() || w.len() != 2 {
        checker.error(op, format!("expects a weight of rank 2 and an input of rank at least 1, but got ranks {} and {}", x.len(), w.len()));
        return;
    }
    if let (Some(n), Some(wn)) = (x[x.len() - 1], w[0]) {
        if n != wn {
            checker.error(op, format!("contraction dimension mismatch: input has {n}, weight has {wn}"));
        }
    }
    let mut expected = x[..x.len() - 1].to_vec();
    expected.push(w[1]);
    let compatible = expected.len() == y.len() && expected.iter().zip(&y).all(|(e, r)| e.is_none() || r.is_none() || e == r);
    if !compatible {
        checker.error(op, format!("result type {} does not match input and weight shapes", type_string(result.r#type())));
    }
}

fn check_optimizer_step(checker: &mut Checker, op: OperationRef) {
    // param, grad, state... -> new_param, new_state...
    let (Ok(param), Ok(new_param)) = (op.operand(0), op.result(0)) else { return };
    if param.r#type() != new_param.r#type() {
        checker.error(op, "new_param must have the parameter's type");
    }
    let states = op.operand_count().saturating_sub(2);
    let new_states = op.result_count().saturating_sub(1);
    if states != new_states {
        checker.error(op, format!("expected {states} new_state results (one per state operand), but got {new_states}"));
    }
    check_real(checker, op, "lr", "finite and positive", |v| v > 0.0);
    let adam = enum_attr::<OptimizerKind>(op, "kind") == Some(OptimizerKind::Adam);
    for name in ["beta1", "beta2", "eps"] {
        match (adam, real_attr(op, name).is_some()) {
            (true, false) => checker.error(op, format!("adam needs '{name}'")),
            (false, true) => checker.error(op, format!("'{name}' applies to adam only, but kind is sgd")),
            _ => {}
        }
    }
    check_real(checker, op, "beta1", "in [0, 1)", |v| (0.0..1.0).contains(&v));
    check_real(checker, op, "beta2", "in [0, 1)", |v| (0.0..1.0).contains(&v));
    check_real(checker, op, "eps", "finite and positive", |v| v > 0.0);
    // The state: an fp32 master copy below fp32, then Adam's moments, each
    // an fp32 tensor of the parameter's shape.
    let is_f32 = |ty| tensor_element(ty).is_some_and(|e| e.is_f32());
    let master = !is_f32(param.r#type());
    let want = usize::from(master) + if adam { 2 } else { 0 };
    if states != want {
        let kind = if adam { "adam" } else { "sgd" };
        let master = if master { " (a master copy below fp32" } else { " (no master copy at fp32" };
        checker.error(op, format!("{kind} keeps {want} state tensors{master}), but got {states}"));
        return;
    }
    let shape = tensor_shape(param.r#type());
    for (index, state) in op.operands().skip(2).enumerate() {
        if !is_f32(state.r#type()) || tensor_shape(state.r#type()) != shape {
            checker.error(
                op,
                format!("state #{index} must be an f32 tensor of the parameter's shape, but got {}", type_string(state.r#type())),
            );
        }
    }
}

/// Every result is the input with `dim` divided evenly by the result count.
fn check_split(checker: &mut Checker, op: OperationRef) {
    let (Ok(input), Some(dim)) = (op.operand(0), int_attr(op, "dim")) else { return };
    let Some(shape) = tensor_shape(input.r#type()) else { return };
    let Ok(dim) = usize::try_from(dim) else { return };
    if dim >= shape.len() {
        checker.error(op, format!("dim {dim} is not a dimension of the input (rank {})", shape.len()));
        return;
    }
    let parts = op.result_count() as i64;
    let Some(extent) = shape[dim] else { return };
    if parts == 0 || extent % parts != 0 {
        checker.error(op, format!("dimension {dim} of size {extent} cannot be split into {parts} equal parts"));
        return;
    }
    let mut expected = shape.clone();
    expected[dim] = Some(extent / parts);
    for (index, result) in op.results().enumerate() {
        if tensor_shape(result.r#type()).is_some_and(|s| s != expected) {
            checker.error(
                op,
                format!(
                    "result #{index} has type {}, but splitting gives dimension {dim} of size {}",
                    type_string(result.r#type()),
                    extent / parts
                ),
            );
        }
    }
}
