//! Reads a decomposed ModelIR block (the body of one `func.func`) into
//! plain data, a [`BlockGraph`], for the derivations of
//! [`crate::analysis::workload`]: every op with its kind and the attributes
//! the rules read, every value with its static shape and element size.

use melior::ir::{block::BlockLike, operation::OperationLike, OperationRef, RegionLike, Type, TypeLike, Value, ValueLike};

use crate::{
    analysis::workload::{
        derive_served_pass, graph::DYNAMIC, served_inputs, BlockGraph, GraphOpKind, InferencePhase, InferenceSpec, OptimizerKind,
        ServedDerivation, ValueRole, MAX_WORK_SCALE,
    },
    ir::{
        ods::{self, OpKind, Role},
        read::{enum_attr, int_attr, name_of, str_attr, tensor_element, tensor_shape, type_string},
    },
};

/// A block read off the IR: the graph, and the op behind each graph op
/// (to locate diagnostics).
pub struct ReadBlock<'c, 'a> {
    pub graph: BlockGraph,
    pub ops: Vec<OperationRef<'c, 'a>>,
}

impl<'c, 'a> ReadBlock<'c, 'a> {
    /// The op with ModelIR id `id`, if the block holds it.
    #[must_use]
    pub fn op(&self, id: &str) -> Option<OperationRef<'c, 'a>> {
        self.graph.ops.iter().position(|op| op.id == id).map(|i| self.ops[i])
    }
}

/// Bytes per element of a float tensor type (`None` for other types).
fn element_bytes(ty: Type) -> Option<u64> {
    let element = tensor_element(ty)?;
    // SAFETY: `element` is a live type; the width is read only from floats.
    unsafe {
        if !mlir_sys::mlirTypeIsAFloat(element.to_raw()) {
            return None;
        }
        let bits = mlir_sys::mlirFloatTypeGetWidth(element.to_raw());
        Some(u64::from(bits).div_ceil(8))
    }
}

fn count(op: OperationRef, name: &str) -> Result<u64, String> {
    int_attr(op, name).and_then(|v| u64::try_from(v).ok()).filter(|v| *v > 0).ok_or_else(|| format!("has no positive '{name}'"))
}

/// What the rules need to know of `op`.
fn kind_of(op: OperationRef) -> Result<GraphOpKind, String> {
    let heads = |op| -> Result<(u64, u64, u64), String> { Ok((count(op, "heads")?, count(op, "kv_heads")?, count(op, "head_dim")?)) };
    Ok(match OpKind::of(op) {
        Some(OpKind::ModelValue) => GraphOpKind::Value(match enum_attr::<Role>(op, "role") {
            Some(Role::Parameter) => ValueRole::Parameter,
            Some(Role::Activation) => ValueRole::Activation,
            Some(Role::ActivationGradient) => ValueRole::ActivationGradient,
            Some(Role::OptimizerState) => ValueRole::OptimizerState,
            Some(Role::Input) => ValueRole::Input,
            Some(Role::KvCache) => ValueRole::KvCache,
            _ => ValueRole::Other,
        }),
        Some(OpKind::ModelOutput) => GraphOpKind::Output,
        Some(OpKind::ModelFork) => GraphOpKind::Fork,
        Some(OpKind::ModelLayerNorm) => GraphOpKind::LayerNorm,
        Some(OpKind::ModelRmsNorm) => GraphOpKind::RmsNorm,
        Some(OpKind::ModelMatmul) => GraphOpKind::Matmul,
        Some(OpKind::ModelAttentionScores) => {
            let (heads, kv_heads, head_dim) = heads(op)?;
            GraphOpKind::AttentionScores { heads, kv_heads, head_dim }
        }
        Some(OpKind::ModelAttentionContext) => {
            let (heads, kv_heads, head_dim) = heads(op)?;
            GraphOpKind::AttentionContext { heads, kv_heads, head_dim }
        }
        Some(OpKind::ModelSoftmax) => GraphOpKind::Softmax { dim: int_attr(op, "dim").and_then(|d| u64::try_from(d).ok()).unwrap_or(0) },
        Some(OpKind::ModelGelu) => GraphOpKind::Gelu,
        Some(OpKind::ModelRelu) => GraphOpKind::Relu,
        Some(OpKind::ModelSilu) => GraphOpKind::Silu,
        Some(OpKind::ModelBiasAdd) => GraphOpKind::BiasAdd,
        Some(OpKind::ModelSwiglu) => GraphOpKind::Swiglu,
        Some(OpKind::ModelDropout) => GraphOpKind::Dropout,
        Some(OpKind::ModelAdd) => GraphOpKind::Add,
        Some(OpKind::ModelBatchMatmul) => GraphOpKind::BatchMatmul,
        Some(OpKind::ModelKvAppend) => GraphOpKind::KvAppend { cached: op.operand_count() == 3 },
        Some(OpKind::ModelSplit) => GraphOpKind::Split { dim: int_attr(op, "dim").and_then(|d| u64::try_from(d).ok()).unwrap_or(0) },
        Some(OpKind::ModelRope) => GraphOpKind::Rope { heads: count(op, "heads")? },
        Some(OpKind::ModelActivationGradient) => GraphOpKind::ActivationGradient { of: str_attr(op, "of").unwrap_or_default().to_string() },
        Some(OpKind::ModelWeightGradient) => GraphOpKind::WeightGradient { of: str_attr(op, "of").unwrap_or_default().to_string() },
        Some(OpKind::ModelOptimizerStep) => GraphOpKind::OptimizerStep {
            kind: match enum_attr::<ods::OptimizerKind>(op, "kind") {
                Some(ods::OptimizerKind::Sgd) => OptimizerKind::Sgd,
                _ => OptimizerKind::Adam,
            },
        },
        _ => GraphOpKind::Other(name_of(op)),
    })
}

/// Reads the ModelIR ops of `function`'s body (everything but its
/// terminator) into a graph.
///
/// # Errors
/// The op at fault and why: a value with a dynamic or non-float type, an
/// operand defined outside the body, an op without its attributes.
pub fn read_block<'c, 'a>(function: OperationRef<'c, 'a>) -> Result<ReadBlock<'c, 'a>, (OperationRef<'c, 'a>, String)> {
    read(function, false)
}

/// [`read_block`] for a served block: a dynamic dimension (the tokens of a
/// KV cache, and of the scores computed from it) is read as
/// [`DYNAMIC`], for the served derivation to resolve to each pass's
/// context.
///
/// # Errors
/// As [`read_block`], dynamic dimensions aside.
pub fn read_served_block<'c, 'a>(function: OperationRef<'c, 'a>) -> Result<ReadBlock<'c, 'a>, (OperationRef<'c, 'a>, String)> {
    read(function, true)
}

fn read<'c, 'a>(function: OperationRef<'c, 'a>, dynamic: bool) -> Result<ReadBlock<'c, 'a>, (OperationRef<'c, 'a>, String)> {
    let body = function.region(0).ok().and_then(|r| r.first_block()).ok_or((function, "has no body".to_string()))?;
    let mut graph = BlockGraph::default();
    let mut ops = Vec::new();
    let mut index: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let key = |v: Value| v.to_raw().ptr as usize;
    let mut next = body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if name_of(op) == "func.return" {
            continue;
        }
        let kind = kind_of(op).map_err(|e| (op, e))?;
        let mut operands = Vec::new();
        for (i, v) in op.operands().enumerate() {
            let value =
                index.get(&key(v)).copied().ok_or_else(|| (op, format!("operand #{i} is not defined by an op of the block before it")))?;
            operands.push(value);
        }
        let mut results = Vec::new();
        for (i, r) in op.results().enumerate() {
            let ty = r.r#type();
            let dims = tensor_shape(ty).ok_or_else(|| (op, format!("result #{i} is not a ranked tensor: {}", type_string(ty))))?;
            let shape: Option<Vec<u64>> = dims.iter().map(|d| d.map_or(dynamic.then_some(DYNAMIC), |d| u64::try_from(d).ok())).collect();
            let shape = shape.ok_or_else(|| (op, format!("result #{i} has a dynamic dimension: {}", type_string(ty))))?;
            let elem = element_bytes(ty).ok_or_else(|| (op, format!("result #{i} is not a float tensor: {}", type_string(ty))))?;
            let elems = shape.iter().filter(|&&d| d != DYNAMIC).try_fold(1u128, |n, &d| n.checked_mul(u128::from(d)));
            if elems.is_none_or(|n| n > MAX_WORK_SCALE) {
                return Err((op, format!("result #{i} ({}) has more elements than Blueprint counts exactly (2^54)", type_string(ty))));
            }
            results.push((shape, elem));
        }
        let id = str_attr(op, "id").unwrap_or_default();
        let defined = graph.push(id, kind, &operands, &results);
        for (r, value) in op.results().zip(defined) {
            index.insert(key(r.into()), value);
        }
        ops.push(op);
    }
    Ok(ReadBlock { graph, ops })
}

/// Both passes of the served block in `function`, derived from its ops
/// (see [`crate::analysis::workload::derive_served_pass`]): the prefill,
/// and the decode step at `decode_context` when the block has one.
///
/// # Errors
/// The op at fault (the function when no op is) and why.
pub fn derive_served<'c, 'a>(
    function: OperationRef<'c, 'a>,
    spec: &InferenceSpec,
    decode_context: u64,
) -> Result<Vec<ServedDerivation>, (OperationRef<'c, 'a>, String)> {
    let read =
        read_served_block(function).map_err(|(op, e)| (op, format!("'{}' op '{}' {e}", name_of(op), str_attr(op, "id").unwrap_or("?"))))?;
    // The prefill attends over what it appends: its prompt.
    let inputs = served_inputs(&read.graph);
    let prompt = inputs
        .first()
        .and_then(|&op| read.graph.ops[op].results.first())
        .and_then(|&v| read.graph.values[v].shape.get(1).copied())
        .unwrap_or(spec.workload.prompt_tokens);
    let mut passes = vec![(InferencePhase::Prefill, prompt)];
    if inputs.len() > 1 {
        passes.push((InferencePhase::Decode, decode_context));
    }
    passes
        .into_iter()
        .map(|(pass, context)| {
            derive_served_pass(&read.graph, spec, pass, context).map_err(|e| match &e.op {
                Some(id) => (read.op(id).unwrap_or(function), format!("'{id}': {}", e.message)),
                None => (function, e.message),
            })
        })
        .collect()
}
