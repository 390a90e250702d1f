//! ModelIR rules: dataflow closure, required effects, phase consistency and
//! the shape relations of primitives that are cheap to state exactly.

use melior::ir::{operation::OperationLike, OperationRef, ValueLike};

use crate::dialect::verify::checker::Checker;
use crate::ir::{
    ods::{InferencePhase, OpKind},
    read::{defining_op, dialect_of, enum_attr, int_attr, name_of, tensor_shape, type_string},
};

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
            OpKind::ModelMatmul => check_matmul(checker, op),
            OpKind::ModelOptimizerStep => check_optimizer_step(checker, op),
            OpKind::ModelSplit => check_split(checker, op),
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
