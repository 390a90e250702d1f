//! `model-decompose-transformer`: expands the coarse `model.decoder_training`
//! op into primitive ModelIR ops with explicit dataflow: the forward pass
//! (forks, layer norms, Q/K/V projections, attention score and context
//! batched matmuls, softmax, dropouts, output projection, residual adds, MLP),
//! the backward pass as `model.activation_gradient` / `model.weight_gradient`
//! ops (weights, activations and gradients as SSA values), and one
//! `model.optimizer_step` per parameter threading the optimizer state.
//!
//! Op ids are the derivation's sources (`attn.q`, `mlp.fc1`, ...) with
//! `.agrad` / `.wgrad` / `.optim` for the backward and optimizer ops, so
//! every primitive invocation of the workload algebra is attributable to
//! exactly one decomposed op: the model's work totals do not change.
//!
//! The function holding the coarse op is replaced as a whole; it must hold
//! only the block (its `model.value`s, the coarse op, its outputs).
//!
//! Every type the decomposition builds follows from the coarse op's
//! attributes, so before building anything the op's operand and result
//! types must be the ones its attributes (and the bound strategy, when the
//! module has one) imply; extents are products checked against 2^63 - 1.

use melior::{
    ir::{block::BlockLike, operation::OperationLike, BlockRef, Location, Module, OperationRef, RegionLike, Type, Value, ValueLike},
    pass::ExternalPass,
};

use super::block::TrainingBlock;
use super::{
    import::{block_parameters, datatype_case, effects, element, optimizer_case, tensor_type},
    Failure,
};
use crate::dialect::model::binding::{read_spec, INFERENCE_SPEC, TRAINING_SPEC};
use crate::ir::rewrite::move_into;
use crate::{
    analysis::workload::{Datatype, InferenceSpec, Norm, Optimizer, OptimizerKind, TrainingSpec},
    dialect::{
        builder::{result, BuildError, Builder},
        model,
    },
    ir::{
        diagnostics::emit_error,
        ods::{self, InferencePhase, OpKind, Role},
        read::{defining_op, enum_attr, i32_array_attr, int_attr, is_same_type, name_of, str_attr, type_string, users},
        rewrite::erase,
    },
};

crate::ir::pass_macro::external_pass!(
    "ModelDecomposeTransformer",
    "model-decompose-transformer",
    "Expand coarse decoder training and inference ops into primitive ModelIR ops with explicit dataflow",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    let ops = crate::ir::read::collect_ops(module);
    let blocks: Vec<OperationRef> = ops.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderTraining)).collect();
    // Served blocks: one function per prefill (with its decode steps).
    let served: Vec<OperationRef> = ops
        .iter()
        .copied()
        .filter(|op| {
            OpKind::of(*op) == Some(OpKind::ModelDecoderInference)
                && enum_attr::<InferencePhase>(*op, "phase") == Some(InferencePhase::Prefill)
        })
        .collect();
    // Validate and build every replacement into a detached module before
    // touching the input.
    let generated = Module::new(module.location());
    let mut replaced = Vec::new();
    let planned = blocks
        .into_iter()
        .map(|block| plan(module, block, &generated))
        .chain(served.into_iter().map(|prefill| plan_inference(module, prefill, &generated)));
    for function in planned {
        match function {
            Ok(function) => replaced.push(function),
            Err((op, message)) => {
                emit_error(op.location(), &message);
                pass.signal_failure();
                return;
            }
        }
    }
    for function in replaced {
        erase(function);
    }
    let _ = move_into(&generated, module);
}

/// Appends ModelIR ops to a block with the typed builders; every op is
/// located inside the coarse op it comes from.
struct Emitter<'c, 'a> {
    b: Builder<'c>,
    block: BlockRef<'c, 'a>,
    at: Location<'c>,
}

type R<T> = Result<T, BuildError>;

/// The norms' epsilon (EXECUTION.md).
const NORM_EPS: f64 = 1e-5;

impl<'c, 'a> Emitter<'c, 'a> {
    fn loc(&self, id: &str) -> Location<'c> {
        self.b.named_location(id, self.at)
    }

    fn push(&self, op: R<melior::ir::Operation<'c>>) -> R<OperationRef<'c, 'a>> {
        Ok(self.block.append_operation(op?))
    }

    fn one(&self, op: R<melior::ir::Operation<'c>>) -> R<Value<'c, 'a>> {
        Ok(result(self.push(op)?, 0))
    }

    fn all(&self, op: R<melior::ir::Operation<'c>>) -> R<Vec<Value<'c, 'a>>> {
        let op = self.push(op)?;
        Ok(op.results().map(Into::into).collect())
    }

    fn value(&self, id: &str, role: Role, ty: Type<'c>) -> R<Value<'c, 'a>> {
        self.one(model::Value { id, role, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn output(&self, value: Value<'c, 'a>, id: &str, role: Option<Role>) -> R<()> {
        self.push(
            model::Output { value, id, optional: model::OutputOptional { role, ..Default::default() } }.build(&self.b, self.loc(id)),
        )?;
        Ok(())
    }

    fn fork(&self, id: &str, input: Value<'c, 'a>, n: usize) -> R<Vec<Value<'c, 'a>>> {
        let ty = input.r#type();
        self.all(model::Fork { input, id, results: &vec![ty; n], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn layer_norm(&self, id: &str, input: Value<'c, 'a>, scale: Value<'c, 'a>, bias: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        self.one(
            model::LayerNorm {
                input,
                scale,
                bias,
                id,
                results: &[ty],
                optional: model::LayerNormOptional { eps: Some(NORM_EPS), ..Default::default() },
            }
            .build(&self.b, self.loc(id)),
        )
    }

    /// A layer norm when there is a bias, an RMS norm otherwise.
    fn norm(&self, id: &str, input: Value<'c, 'a>, scale: Value<'c, 'a>, bias: Option<Value<'c, 'a>>) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        match bias {
            Some(bias) => self.layer_norm(id, input, scale, bias),
            None => self.one(
                model::RmsNorm {
                    input,
                    scale,
                    id,
                    results: &[ty],
                    optional: model::RmsNormOptional { eps: Some(NORM_EPS), ..Default::default() },
                }
                .build(&self.b, self.loc(id)),
            ),
        }
    }

    fn rope(&self, id: &str, input: Value<'c, 'a>, heads: u64, head_dim: u64, theta: f64) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        self.one(
            model::Rope { input, id, heads, head_dim, theta, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)),
        )
    }

    fn attention_scores(
        &self,
        id: &str,
        query: Value<'c, 'a>,
        key: Value<'c, 'a>,
        [heads, kv_heads, head_dim]: [u64; 3],
        scale: f64,
        ty: Type<'c>,
    ) -> R<Value<'c, 'a>> {
        self.one(
            model::AttentionScores {
                query,
                key,
                id,
                heads,
                kv_heads,
                head_dim,
                scale,
                results: &[ty],
                optional: model::AttentionScoresOptional { causal: true, ..Default::default() },
            }
            .build(&self.b, self.loc(id)),
        )
    }

    fn attention_context(
        &self,
        id: &str,
        probs: Value<'c, 'a>,
        value: Value<'c, 'a>,
        [heads, kv_heads, head_dim]: [u64; 3],
        ty: Type<'c>,
    ) -> R<Value<'c, 'a>> {
        self.one(
            model::AttentionContext { probs, value, id, heads, kv_heads, head_dim, results: &[ty], optional: Default::default() }
                .build(&self.b, self.loc(id)),
        )
    }

    fn swiglu(&self, id: &str, lhs: Value<'c, 'a>, rhs: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        let ty = lhs.r#type();
        self.one(model::Swiglu { lhs, rhs, id, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn matmul(&self, id: &str, lhs: Value<'c, 'a>, rhs: Value<'c, 'a>, ty: Type<'c>) -> R<Value<'c, 'a>> {
        self.one(model::Matmul { lhs, rhs, id, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn batch_matmul(&self, id: &str, lhs: Value<'c, 'a>, rhs: Value<'c, 'a>, ty: Type<'c>) -> R<Value<'c, 'a>> {
        self.one(model::BatchMatmul { lhs, rhs, id, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn add(&self, id: &str, lhs: Value<'c, 'a>, rhs: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        let ty = lhs.r#type();
        self.one(model::Add { lhs, rhs, id, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn softmax(&self, id: &str, input: Value<'c, 'a>, dim: u64) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        self.one(model::Softmax { input, id, dim, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn gelu(&self, id: &str, input: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        self.one(model::Gelu { input, id, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn dropout(&self, id: &str, input: Value<'c, 'a>, p: f64) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        self.one(
            model::Dropout {
                input,
                id,
                p,
                results: &[ty],
                optional: model::DropoutOptional { effects: Some(effects(&["random_state"])), ..Default::default() },
            }
            .build(&self.b, self.loc(id)),
        )
    }

    fn agrad(&self, of: &str, output_grads: &[Value<'c, 'a>], input: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        self.agrad_named(&format!("{of}.agrad"), of, output_grads, input)
    }

    fn agrad_named(&self, id: &str, of: &str, output_grads: &[Value<'c, 'a>], input: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        self.one(
            model::ActivationGradient { output_grads, input, id, of, results: &[ty], optional: Default::default() }
                .build(&self.b, self.loc(id)),
        )
    }

    fn wgrad(&self, of: &str, output_grad: Value<'c, 'a>, input: Value<'c, 'a>, results: &[Type<'c>]) -> R<Vec<Value<'c, 'a>>> {
        let id = format!("{of}.wgrad");
        self.all(
            model::WeightGradient { output_grad, input, id: &id, of, results, optional: Default::default() }.build(&self.b, self.loc(&id)),
        )
    }
}

fn block_of<'c, 'g>(function: OperationRef<'c, 'g>) -> Result<BlockRef<'c, 'g>, String> {
    function.region(0).ok().and_then(|r| r.first_block()).ok_or_else(|| "internal error: a built function has no body".to_string())
}

/// `'<op name>' op <message>`, blamed on `op`.
fn fail<'c, 'a>(op: OperationRef<'c, 'a>, message: impl std::fmt::Display) -> Failure<'c, 'a> {
    (op, format!("'{}' op {message}", name_of(op)))
}

/// A builder failure (a defect of the pass), blamed on the coarse op.
fn built<'c, 'a, T>(op: OperationRef<'c, 'a>, value: Result<T, impl std::fmt::Display>) -> Result<T, Failure<'c, 'a>> {
    value.map_err(|e| (op, e.to_string()))
}

/// A positive dimension attribute of `op` (at most 2^63 - 1: it is an i64).
fn dim<'c, 'a>(op: OperationRef<'c, 'a>, name: &str) -> Result<u64, Failure<'c, 'a>> {
    int_attr(op, name).and_then(|v| u64::try_from(v).ok()).filter(|v| *v > 0).ok_or_else(|| fail(op, format!("has no valid '{name}'")))
}

/// `a x b` as a tensor extent; MLIR's extents are i64, so the product must
/// not exceed 2^63 - 1 (unchecked, it would panic or wrap).
fn extent<'c, 'a>(op: OperationRef<'c, 'a>, what: &str, a: u64, b: u64) -> Result<u64, Failure<'c, 'a>> {
    a.checked_mul(b)
        .filter(|v| i64::try_from(*v).is_ok())
        .ok_or_else(|| fail(op, format!("{what} = {a} x {b} exceeds 2^63 - 1, the largest tensor extent")))
}

/// The element type the `datatype`-like attribute `name` of `op` names.
fn element_of<'c, 'a>(b: &Builder<'c>, op: OperationRef<'c, 'a>, name: &str) -> Result<Type<'c>, Failure<'c, 'a>> {
    let datatype = match enum_attr::<ods::Datatype>(op, name) {
        Some(ods::Datatype::Float8) => Datatype::Float8,
        Some(ods::Datatype::Float16) => Datatype::Float16,
        Some(ods::Datatype::Bfloat16) => Datatype::Bfloat16,
        Some(ods::Datatype::Float32) => Datatype::Float32,
        None => return Err(fail(op, format!("has no valid '{name}'"))),
    };
    Ok(element(b, datatype))
}

/// `operand #i (name)` / `result #i (name)`, with the ODS names.
fn label(op: OperationRef, result: bool, index: usize) -> String {
    let spec = OpKind::of(op).map(OpKind::spec);
    let values = spec.map_or(&[][..], |s| if result { s.results } else { s.operands });
    let name = values.get(index).map_or("?", |v| v.name);
    format!("{} #{index} ({name})", if result { "result" } else { "operand" })
}

/// Fails unless `got` is one of `want` (what the attributes named in
/// `from` imply).
fn expect_type<'c, 'a>(
    op: OperationRef<'c, 'a>,
    what: String,
    got: Type<'c>,
    want: &[Type<'c>],
    from: &str,
) -> Result<(), Failure<'c, 'a>> {
    if want.iter().any(|w| is_same_type(*w, got)) {
        return Ok(());
    }
    let want: Vec<String> = want.iter().map(|t| type_string(*t)).collect();
    Err(fail(op, format!("{what}: expected {} ({from}), got {}", want.join(" or "), type_string(got))))
}

fn operand_type<'c, 'a>(op: OperationRef<'c, 'a>, index: usize) -> Result<Type<'c>, Failure<'c, 'a>> {
    op.operand(index).map(|v| v.r#type()).map_err(|_| fail(op, format!("has no {}", label(op, false, index))))
}

fn result_type<'c, 'a>(op: OperationRef<'c, 'a>, index: usize) -> Result<Type<'c>, Failure<'c, 'a>> {
    op.result(index).map(|v| v.r#type()).map_err(|_| fail(op, format!("has no {}", label(op, true, index))))
}

/// What each parameter's shape is made of (the order of `block_parameters`).
const PARAMETER_SHAPES: [&str; 10] = [
    "hidden",
    "hidden",
    "hidden x heads*head_dim",
    "hidden x kv_heads*head_dim",
    "hidden x kv_heads*head_dim",
    "heads*head_dim x hidden",
    "hidden",
    "hidden",
    "hidden x ffn_hidden",
    "ffn_hidden x hidden",
];

/// A value of the coarse op re-created in the decomposition: its
/// `model.value` (id, role) and type.
struct Source<'c, 'a> {
    value: Value<'c, 'a>,
    id: String,
    role: Role,
    ty: Type<'c>,
}

fn source<'c, 'a>(op: OperationRef<'c, 'a>, index: usize) -> Result<Source<'c, 'a>, Failure<'c, 'a>> {
    let value = op.operand(index).map_err(|_| fail(op, format!("has no {}", label(op, false, index))))?;
    let def = defining_op(value)
        .filter(|d| OpKind::of(*d) == Some(OpKind::ModelValue))
        .ok_or_else(|| fail(op, format!("has an {} that is not a 'model.value'", label(op, false, index))))?;
    Ok(Source {
        value,
        id: str_attr(def, "id").unwrap_or_default().to_string(),
        role: enum_attr::<Role>(def, "role").unwrap_or(Role::Parameter),
        ty: value.r#type(),
    })
}

/// The re-created `model.value`s, one per original value (a value used as
/// several operands is declared once: ids stay unique).
#[derive(Default)]
struct Declared<'c, 'a, 'g> {
    values: Vec<(Value<'c, 'a>, Value<'c, 'g>)>,
}

impl<'c, 'a, 'g> Declared<'c, 'a, 'g> {
    fn get(&mut self, e: &Emitter<'c, 'g>, source: &Source<'c, 'a>) -> R<Value<'c, 'g>> {
        if let Some((_, declared)) = self.values.iter().find(|(original, _)| *original == source.value) {
            return Ok(*declared);
        }
        let declared = e.value(&source.id, source.role, source.ty)?;
        self.values.push((source.value, declared));
        Ok(declared)
    }
}

/// The `model.output`s of `value` (other users, such as the next phase,
/// are not workload outputs): (id, role).
fn outputs_of<'c>(value: impl ValueLike<'c>) -> Vec<(String, Option<Role>)> {
    users(value)
        .into_iter()
        .filter(|u| OpKind::of(*u) == Some(OpKind::ModelOutput))
        .filter_map(|u| Some((str_attr(u, "id")?.to_string(), enum_attr::<Role>(u, "role"))))
        .collect()
}

/// Decomposes the coarse `block` — a training block, or the prefill of a
/// served block with its decode steps — into a new function in `scratch`
/// (the input is not changed); returns that function.
///
/// # Errors
/// What [`model-decompose-transformer`](self) reports for the block.
pub(super) fn decompose_into<'c, 'a, 's>(
    module: OperationRef<'c, 'a>,
    block: OperationRef<'c, 'a>,
    scratch: &'s Module<'c>,
) -> Result<OperationRef<'c, 's>, Failure<'c, 'a>> {
    if OpKind::of(block) == Some(OpKind::ModelDecoderInference) {
        plan_inference(module, block, scratch)?;
    } else {
        plan(module, block, scratch)?;
    }
    scratch.body().first_operation().ok_or_else(|| fail(block, "decomposes to nothing"))
}

/// Builds the decomposed replacement of the function holding `block` into
/// `generated`; returns the function to replace.
fn plan<'c, 'a>(
    module: OperationRef<'c, 'a>,
    block: OperationRef<'c, 'a>,
    generated: &Module<'c>,
) -> Result<OperationRef<'c, 'a>, Failure<'c, 'a>> {
    let function = block
        .parent_operation()
        .filter(|f| name_of(*f) == "func.func")
        .ok_or_else(|| fail(block, "must be directly in a 'func.func' to be decomposed"))?;
    let name = str_attr(function, "sym_name").ok_or_else(|| fail(block, "is in a function without a name"))?;
    // The function may hold only this block (a second block would replace
    // the same function twice).
    for op in crate::ir::read::collect_ops(function).into_iter().skip(1) {
        let op_name = name_of(op);
        let belongs = match OpKind::of(op) {
            Some(OpKind::ModelValue) => {
                op.result(0).is_ok_and(|v| users(v).iter().all(|u| OpKind::of(*u) == Some(OpKind::ModelDecoderTraining)))
            }
            Some(OpKind::ModelOutput) => op.operand(0).ok().and_then(defining_op).is_some_and(|d| d == block),
            Some(OpKind::ModelDecoderTraining) => op == block,
            _ => op_name == "func.return",
        };
        if !belongs {
            return Err(fail(block, format!("cannot be decomposed: its function also holds '{op_name}' (it must hold only the block's values, the op and its outputs)")));
        }
    }
    let trained = check_training(module, block)?;
    let mut sources = Vec::new();
    for index in 0..block.operand_count() {
        sources.push(source(block, index)?);
    }
    let outputs = outputs_of(block.result(0).map_err(|_| fail(block, format!("has no {}", label(block, true, 0))))?);
    let b_ = Builder::of(block);
    let new_function = generated.body().append_operation(built(block, b_.func(name, &[], &[], function.location()))?);
    let e = Emitter { b: b_, block: built(block, block_of(new_function))?, at: block.location() };
    built(block, decomposed(&e, &sources, &outputs, &trained))?;
    Ok(function)
}

/// Fails unless the training op's attributes agree with the bound strategy
/// (when the module has a readable one) and its operands (which optional
/// ones are present, and every type) are the ones its attributes imply;
/// returns the block it trains.
fn check_training<'c, 'a>(module: OperationRef<'c, 'a>, block: OperationRef<'c, 'a>) -> Result<TrainingBlock, Failure<'c, 'a>> {
    // The distribution pass reports a spec that does not read; a readable
    // one must agree with the op.
    if let Ok(spec) = read_spec::<TrainingSpec>(module, TRAINING_SPEC, |_| Ok(())) {
        let m = &spec.model;
        super::check_bound_dimensions(
            block,
            TRAINING_SPEC,
            &[
                ("hidden", m.hidden),
                ("ffn_hidden", m.ffn_hidden),
                ("seq_len", m.seq_len),
                ("heads", m.heads),
                ("head_dim", m.head_dim),
                ("microbatch", spec.workload.microbatch),
            ],
        )?;
        let want = datatype_case(spec.workload.datatype);
        let found = enum_attr::<ods::Datatype>(block, "datatype");
        if found != Some(want) {
            let found = found.map_or("(none)", ods::Datatype::name);
            return Err(fail(block, format!("datatype is '{found}', but the strategy binding '{TRAINING_SPEC}' says '{want}'")));
        }
        let kv = int_attr(block, "kv_heads").and_then(|k| u64::try_from(k).ok()).unwrap_or(m.heads);
        if kv != m.kv_heads() {
            return Err(fail(block, format!("kv_heads is {kv}, but the strategy binding '{TRAINING_SPEC}' says {}", m.kv_heads())));
        }
    }
    let (h, f, s, a, d, b) = (
        dim(block, "hidden")?,
        dim(block, "ffn_hidden")?,
        dim(block, "seq_len")?,
        dim(block, "heads")?,
        dim(block, "head_dim")?,
        dim(block, "microbatch")?,
    );
    let kv = match int_attr(block, "kv_heads") {
        None => a,
        Some(_) => dim(block, "kv_heads")?,
    };
    if !a.is_multiple_of(kv) {
        return Err(fail(block, format!("kv_heads = {kv} must divide heads = {a}")));
    }
    extent(block, "heads x head_dim", a, d)?;
    let datatype = match enum_attr::<ods::Datatype>(block, "datatype") {
        Some(ods::Datatype::Float8) => Datatype::Float8,
        Some(ods::Datatype::Float16) => Datatype::Float16,
        Some(ods::Datatype::Bfloat16) => Datatype::Bfloat16,
        Some(ods::Datatype::Float32) => Datatype::Float32,
        None => return Err(fail(block, "has no valid 'datatype'")),
    };
    let real =
        |name: &str| block.attribute(name).ok().and_then(|a| melior::ir::attribute::FloatAttribute::try_from(a).ok()).map(|f| f.value());
    let kind = match enum_attr::<ods::OptimizerKind>(block, "optimizer") {
        Some(ods::OptimizerKind::Sgd) => OptimizerKind::Sgd,
        _ => OptimizerKind::Adam,
    };
    let default = Optimizer::DEFAULT;
    let optimizer = Optimizer {
        kind,
        lr: real("lr").unwrap_or(default.lr),
        beta1: real("beta1").unwrap_or(default.beta1),
        beta2: real("beta2").unwrap_or(default.beta2),
        eps: real("eps").unwrap_or(default.eps),
    };
    let segments = i32_array_attr(block, "operandSegmentSizes").unwrap_or_default();
    let present = |segment: usize| segments.get(segment).is_some_and(|n| *n > 0);
    let trained = TrainingBlock {
        hidden: h,
        ffn_hidden: f,
        seq_len: s,
        heads: a,
        kv_heads: kv,
        head_dim: d,
        microbatch: b,
        datatype,
        norm: if enum_attr::<ods::Norm>(block, "norm") == Some(ods::Norm::RmsNorm) { Norm::RmsNorm } else { Norm::LayerNorm },
        gated_mlp: present(11),
        rope_theta: real("rope_theta"),
        dropout: real("dropout"),
        optimizer,
    };
    if trained.rope_theta.is_some() && !d.is_multiple_of(2) {
        return Err(fail(block, format!("rope_theta needs an even head_dim (rotate-half), got {d}")));
    }
    // The norms' biases are there exactly for a layer norm.
    let layer = trained.norm == Norm::LayerNorm;
    for (segment, group) in [(2, "norm1"), (8, "norm2")] {
        if present(segment) != layer {
            let (norm, rule) = if layer { ("layer_norm", "needs a bias") } else { ("rms_norm", "takes no bias") };
            return Err(fail(block, format!("norm = {norm} {rule} in {group}(...)")));
        }
    }
    let builder = Builder::of(block);
    let dt = element(&builder, datatype);
    let params = trained.parameters();
    if block.operand_count() != params.len() + 2 || block.result_count() != 1 {
        return Err(fail(
            block,
            format!(
                "expected {} operands (input, {} parameters, optimizer state) and 1 result, got {} and {}",
                params.len() + 2,
                params.len(),
                block.operand_count(),
                block.result_count()
            ),
        ));
    }
    let act = tensor_type(&builder, &[b, s, h], dt);
    expect_type(block, "operand #0 (input)".into(), operand_type(block, 0)?, &[act], "microbatch x seq_len x hidden")?;
    // Multi-head attention's keys and values are heads*head_dim wide.
    let kv_name = |made_of: &str| if kv == a { made_of.replace("kv_heads", "heads") } else { made_of.to_string() };
    for (i, param) in params.iter().enumerate() {
        let what = format!("operand #{} ({})", i + 1, param.operand);
        expect_type(block, what, operand_type(block, i + 1)?, &[tensor_type(&builder, &param.shape, dt)], &kv_name(param.made_of))?;
    }
    // The last operand, the flat optimizer state, is replaced by one state
    // value per parameter: any ranked tensor.
    expect_type(block, label(block, true, 0), result_type(block, 0)?, &[act], "microbatch x seq_len x hidden")?;
    Ok(trained)
}

/// The id of a parameter's optimizer step: `attn.q.weight` -> `attn.q.optim`,
/// `attn.ln.scale` -> `attn.ln.optim`, `attn.ln.bias` -> `attn.ln.bias.optim`.
fn optimizer_id(param: &str) -> String {
    let base = param.strip_suffix(".weight").or_else(|| param.strip_suffix(".scale")).unwrap_or(param);
    format!("{base}.optim")
}

/// `sources` are the coarse op's operands and `outputs` the `model.output`s
/// of its result, both checked by [`check_training`].
fn decomposed<'c, 'a, 'g>(
    e: &Emitter<'c, 'g>,
    sources: &[Source<'c, 'a>],
    outputs: &[(String, Option<Role>)],
    blk: &TrainingBlock,
) -> R<()> {
    let (b, s, h, f) = (blk.microbatch, blk.seq_len, blk.hidden, blk.ffn_hidden);
    let (a, kv, d) = (blk.heads, blk.kv_heads, blk.head_dim);
    let dt = element(&e.b, blk.datatype);
    let f32_type = element(&e.b, Datatype::Float32);
    let act = tensor_type(&e.b, &[b, s, h], dt);
    let q_width = tensor_type(&e.b, &[b, s, a * d], dt);
    let kv_width = tensor_type(&e.b, &[b, s, kv * d], dt);
    let scores = tensor_type(&e.b, &[b, a, s, s], dt);
    let ffn = tensor_type(&e.b, &[b, s, f], dt);
    let params = blk.parameters();
    // Values: input and parameters, in coarse operand order (the flat
    // optimizer state becomes per-parameter state below).
    let mut declared = Declared::default();
    let mut v = Vec::new();
    for source in &sources[..sources.len() - 1] {
        v.push(declared.get(e, source)?);
    }
    let x = v[0];
    let param = |operand: &str| -> Value<'c, 'g> {
        let i = params.iter().position(|p| p.operand == operand).unwrap_or(0);
        v[i + 1]
    };
    let param_type = |operand: &str| -> Type<'c> {
        let i = params.iter().position(|p| p.operand == operand).unwrap_or(0);
        sources[i + 1].ty
    };
    let has = |operand: &str| params.iter().any(|p| p.operand == operand);
    let [norm1, norm2] = blk.norm_ids();
    let norm = |id: &str, input, scale: &str, bias: &str| {
        let bias = has(bias).then(|| param(bias));
        e.norm(id, input, param(scale), bias)
    };
    let dropout = |id: &str, input| match blk.dropout {
        Some(p) => e.dropout(id, input, p),
        None => Ok(input),
    };

    // Forward.
    let fork1 = e.fork("attn.fork", x, 2)?;
    let n1 = norm(norm1, fork1[1], "ln1_scale", "ln1_bias")?;
    let qkv = e.fork("attn.qkv_fork", n1, 3)?;
    let q = e.matmul("attn.q", qkv[0], param("q_weight"), q_width)?;
    let k = e.matmul("attn.k", qkv[1], param("k_weight"), kv_width)?;
    let vv = e.matmul("attn.v", qkv[2], param("v_weight"), kv_width)?;
    let (qr, kr) = match blk.rope_theta {
        Some(theta) => (e.rope("attn.q.rope", q, a, d, theta)?, e.rope("attn.k.rope", k, kv, d, theta)?),
        None => (q, k),
    };
    let scale = 1.0 / (d as f64).sqrt();
    let sc = e.attention_scores("attn.scores", qr, kr, [a, kv, d], scale, scores)?;
    let sm = e.softmax("attn.softmax", sc, 3)?;
    let pd = dropout("attn.prob_dropout", sm)?;
    let ctx = e.attention_context("attn.context", pd, vv, [a, kv, d], q_width)?;
    let pj = e.matmul("attn.proj", ctx, param("proj_weight"), act)?;
    let dr1 = dropout("attn.dropout", pj)?;
    let h1 = e.add("attn.residual", dr1, fork1[0])?;
    let fork2 = e.fork("mlp.fork", h1, 2)?;
    let n2 = norm(norm2, fork2[1], "ln2_scale", "ln2_bias")?;
    // The MLP: (input of the down/fc2 projection, its id, the way back).
    let (hidden_act, down_id, mlp) = if blk.gated_mlp {
        let gu = e.fork("mlp.gate_up_fork", n2, 2)?;
        let gate = e.matmul("mlp.gate", gu[0], param("gate_weight"), ffn)?;
        let up = e.matmul("mlp.up", gu[1], param("fc1_weight"), ffn)?;
        let act_ = e.swiglu("mlp.swiglu", gate, up)?;
        (act_, "mlp.down", Mlp::Gated { gate_up: [gu[0], gu[1]], gate, up })
    } else {
        let u = e.matmul("mlp.fc1", n2, param("fc1_weight"), ffn)?;
        (e.gelu("mlp.gelu", u)?, "mlp.fc2", Mlp::Gelu { u })
    };
    let dn = e.matmul(down_id, hidden_act, param("fc2_weight"), act)?;
    let dr2 = dropout("mlp.dropout", dn)?;
    let y = e.add("mlp.residual", dr2, fork2[0])?;
    // The block output keeps its output ids; its gradient is named after
    // the first.
    for (id, role) in outputs {
        e.output(y, id, *role)?;
    }
    if outputs.is_empty() {
        e.output(y, "block.out", None)?;
    }
    let output_id = outputs.first().map_or("block.out", |(id, _)| id.as_str());

    // Backward, from the gradient of the block output.
    let norm_ty = param_type("ln1_scale");
    let norm_grads = |layer: bool| if layer { vec![norm_ty, norm_ty] } else { vec![norm_ty] };
    let layer = blk.norm == Norm::LayerNorm;
    let through_dropout = |id: &str, grad, input| if blk.dropout.is_some() { e.agrad(id, &[grad], input) } else { Ok(grad) };
    let mut grads: Vec<(&str, Value<'c, 'g>)> = Vec::new();
    let dy = e.value(&format!("{output_id}.grad"), Role::ActivationGradient, act)?;
    let d_dr2 = e.agrad("mlp.residual", &[dy], dr2)?;
    let d_dn = through_dropout("mlp.dropout", d_dr2, dn)?;
    let d_act = e.agrad(down_id, &[d_dn], hidden_act)?;
    grads.push(("fc2_weight", e.wgrad(down_id, d_dn, hidden_act, &[param_type("fc2_weight")])?[0]));
    let d_n2 = match mlp {
        Mlp::Gated { gate_up: gu, gate, up } => {
            let d_gate = e.agrad("mlp.swiglu", &[d_act], gate)?;
            let d_up = e.agrad_named("mlp.swiglu.agrad.up", "mlp.swiglu", &[d_act], up)?;
            let d_up_in = e.agrad("mlp.up", &[d_up], gu[1])?;
            grads.push(("fc1_weight", e.wgrad("mlp.up", d_up, gu[1], &[param_type("fc1_weight")])?[0]));
            let d_gate_in = e.agrad("mlp.gate", &[d_gate], gu[0])?;
            grads.push(("gate_weight", e.wgrad("mlp.gate", d_gate, gu[0], &[param_type("gate_weight")])?[0]));
            e.agrad("mlp.gate_up_fork", &[d_gate_in, d_up_in], n2)?
        }
        Mlp::Gelu { u } => {
            let d_u = e.agrad("mlp.gelu", &[d_act], u)?;
            let d_n2 = e.agrad("mlp.fc1", &[d_u], n2)?;
            grads.push(("fc1_weight", e.wgrad("mlp.fc1", d_u, n2, &[param_type("fc1_weight")])?[0]));
            d_n2
        }
    };
    let d_f2 = e.agrad(norm2, &[d_n2], fork2[1])?;
    let d_ln2 = e.wgrad(norm2, d_n2, fork2[1], &norm_grads(layer))?;
    grads.push(("ln2_scale", d_ln2[0]));
    if layer {
        grads.push(("ln2_bias", d_ln2[1]));
    }
    let d_h1 = e.agrad("mlp.fork", &[d_f2, dy], h1)?;
    let d_dr1 = e.agrad("attn.residual", &[d_h1], dr1)?;
    let d_pj = through_dropout("attn.dropout", d_dr1, pj)?;
    let d_ctx = e.agrad("attn.proj", &[d_pj], ctx)?;
    grads.push(("proj_weight", e.wgrad("attn.proj", d_pj, ctx, &[param_type("proj_weight")])?[0]));
    let d_pd = e.agrad("attn.context", &[d_ctx], pd)?;
    // The context product's second input: same backward op, other operand.
    let d_v = e.agrad_named("attn.context.agrad.v", "attn.context", &[d_ctx], vv)?;
    let d_sm = through_dropout("attn.prob_dropout", d_pd, sm)?;
    let d_sc = e.agrad("attn.softmax", &[d_sm], sc)?;
    let d_qr = e.agrad("attn.scores", &[d_sc], qr)?;
    let d_kr = e.agrad_named("attn.scores.agrad.k", "attn.scores", &[d_sc], kr)?;
    let (d_q, d_k) = match blk.rope_theta {
        Some(_) => (e.agrad("attn.q.rope", &[d_qr], q)?, e.agrad("attn.k.rope", &[d_kr], k)?),
        None => (d_qr, d_kr),
    };
    let d_v_in = e.agrad("attn.v", &[d_v], qkv[2])?;
    grads.push(("v_weight", e.wgrad("attn.v", d_v, qkv[2], &[param_type("v_weight")])?[0]));
    let d_k_in = e.agrad("attn.k", &[d_k], qkv[1])?;
    grads.push(("k_weight", e.wgrad("attn.k", d_k, qkv[1], &[param_type("k_weight")])?[0]));
    let d_q_in = e.agrad("attn.q", &[d_q], qkv[0])?;
    grads.push(("q_weight", e.wgrad("attn.q", d_q, qkv[0], &[param_type("q_weight")])?[0]));
    let d_n1 = e.agrad("attn.qkv_fork", &[d_q_in, d_k_in, d_v_in], n1)?;
    let d_f1 = e.agrad(norm1, &[d_n1], fork1[1])?;
    let d_ln1 = e.wgrad(norm1, d_n1, fork1[1], &norm_grads(layer))?;
    grads.push(("ln1_scale", d_ln1[0]));
    if layer {
        grads.push(("ln1_bias", d_ln1[1]));
    }
    let dx = e.agrad("attn.fork", &[d_f1, d_h1], x)?;
    e.output(dx, "block.in.grad", Some(Role::ActivationGradient))?;

    // Optimizer: one step per parameter, each with its own state.
    let suffixes = blk.state_suffixes();
    for p in &params {
        let Some(&(_, grad)) = grads.iter().find(|(operand, _)| *operand == p.operand) else { continue };
        let p_ty = param_type(p.operand);
        let state_ty = tensor_type(&e.b, &p.shape, f32_type);
        let mut state = Vec::new();
        for suffix in &suffixes {
            state.push(e.value(&format!("{}.{suffix}", p.id), Role::OptimizerState, state_ty)?);
        }
        let step_id = optimizer_id(p.id);
        let mut results = vec![p_ty];
        results.extend(std::iter::repeat_n(state_ty, state.len()));
        let o = blk.optimizer;
        let adam = o.kind == OptimizerKind::Adam;
        let out = e.all(
            model::OptimizerStep {
                param: param(p.operand),
                grad,
                state: &state,
                id: &step_id,
                kind: optimizer_case(o.kind),
                lr: o.lr,
                results: &results,
                optional: model::OptimizerStepOptional {
                    beta1: adam.then_some(o.beta1),
                    beta2: adam.then_some(o.beta2),
                    eps: adam.then_some(o.eps),
                    effects: Some(effects(&["parameter_update"])),
                    ..Default::default()
                },
            }
            .build(&e.b, e.loc(&step_id)),
        )?;
        e.output(out[0], &format!("{}.next", step_id.trim_end_matches(".optim")), Some(Role::Parameter))?;
        for (suffix, next) in suffixes.iter().zip(&out[1..]) {
            e.output(*next, &format!("{}.{suffix}.next", p.id), Some(Role::OptimizerState))?;
        }
    }
    e.push(e.b.func_return(&[], e.at))?;
    Ok(())
}

/// The MLP's forward values the backward reads.
enum Mlp<'c, 'g> {
    /// `u`, the GeLU's input.
    Gelu { u: Value<'c, 'g> },
    /// The fork into gate and up, and the two projections.
    Gated { gate_up: [Value<'c, 'g>; 2], gate: Value<'c, 'g>, up: Value<'c, 'g> },
}

/// Builds the decomposition of a served block (the function holding the
/// prefill `op` and its decode steps) into `generated`; returns the
/// function to replace.
fn plan_inference<'c, 'a>(
    module: OperationRef<'c, 'a>,
    prefill: OperationRef<'c, 'a>,
    generated: &Module<'c>,
) -> Result<OperationRef<'c, 'a>, Failure<'c, 'a>> {
    let function = prefill
        .parent_operation()
        .filter(|f| name_of(*f) == "func.func")
        .ok_or_else(|| fail(prefill, "must be directly in a 'func.func' to be decomposed"))?;
    let name = str_attr(function, "sym_name").ok_or_else(|| fail(prefill, "is in a function without a name"))?;
    let mut phases = Vec::new();
    for op in crate::ir::read::collect_ops(function).into_iter().skip(1) {
        let op_name = name_of(op);
        let belongs = match OpKind::of(op) {
            Some(OpKind::ModelValue) => {
                op.result(0).is_ok_and(|v| users(v).iter().all(|u| OpKind::of(*u) == Some(OpKind::ModelDecoderInference)))
            }
            Some(OpKind::ModelOutput) => {
                op.operand(0).ok().and_then(defining_op).is_some_and(|d| OpKind::of(d) == Some(OpKind::ModelDecoderInference))
            }
            Some(OpKind::ModelDecoderInference) => {
                phases.push(op);
                true
            }
            _ => op_name == "func.return",
        };
        if !belongs {
            return Err(fail(
                prefill,
                format!("cannot be decomposed: its function also holds '{op_name}' (it must hold only the served block)"),
            ));
        }
    }
    // One served block per function: this prefill, then decode steps, each
    // reading the cache the phase before it wrote (the decomposition threads
    // that cache and shares the prefill's parameters).
    let mut checked = Vec::new();
    for (index, &op) in phases.iter().enumerate() {
        let previous = index.checked_sub(1).map(|i| phases[i]);
        checked.push((op, check_phase(module, op, prefill, previous)?));
    }
    let b = Builder::of(prefill);
    let new_function = generated.body().append_operation(built(prefill, b.func(name, &[], &[], function.location()))?);
    let e = Emitter { b, block: built(prefill, block_of(new_function))?, at: prefill.location() };
    let mut declared = Declared::default();
    // Parameters once, shared by every phase.
    let mut params = Vec::new();
    for i in 1..=10 {
        let source = source(prefill, i)?;
        params.push((built(prefill, declared.get(&e, &source))?, source.ty));
    }
    let mut cache: Option<Value> = None;
    for (op, dims) in checked {
        let phase = enum_attr::<InferencePhase>(op, "phase").unwrap_or(InferencePhase::Prefill);
        let input = built(op, declared.get(&e, &source(op, 0)?))?;
        let cache_ty = result_type(op, 1)?;
        let e = Emitter { b, block: e.block, at: op.location() };
        let (y, new_cache) = built(op, serve_phase(&e, phase.name(), input, &params, cache, cache_ty, dims))?;
        // Outputs keep the coarse op's output ids; the cache a decode step
        // reads is not an output.
        for (index, value) in [y, new_cache].into_iter().enumerate() {
            let out = op.result(index).map_err(|_| fail(op, format!("has no {}", label(op, true, index))))?;
            for (id, role) in outputs_of(out) {
                built(op, e.output(value, &id, role))?;
            }
        }
        cache = Some(new_cache);
    }
    built(prefill, e.push(b.func_return(&[], prefill.location())))?;
    Ok(function)
}

/// Fails unless `op`, phase `index` of the served block of `prefill`
/// (`previous` is the phase before it), is a prefill first and a decode
/// step after it reading the previous phase's cache, shares the prefill's
/// parameters, agrees with the bound strategy (when the module has a
/// readable one), and has the operand and result types its attributes
/// imply; returns its dimensions.
fn check_phase<'c, 'a>(
    module: OperationRef<'c, 'a>,
    op: OperationRef<'c, 'a>,
    prefill: OperationRef<'c, 'a>,
    previous: Option<OperationRef<'c, 'a>>,
) -> Result<ServeDims<'c>, Failure<'c, 'a>> {
    let phase = enum_attr::<InferencePhase>(op, "phase");
    match previous {
        None if op != prefill => {
            return Err(fail(
                prefill,
                "cannot be decomposed: its function holds another 'model.decoder_inference' before it (the prefill comes first)",
            ))
        }
        Some(_) if phase != Some(InferencePhase::Decode) => {
            return Err(fail(
                op,
                "cannot be decomposed: a second prefill in the function of a served block (one prefill and its decode steps per function)",
            ))
        }
        Some(previous) => {
            let cache = op.operand(11).ok();
            if cache.is_none() || cache != previous.result(1).ok().map(Into::into) {
                return Err(fail(
                    op,
                    format!(
                        "{} must be the cache the phase before it returns ('{}' result #1)",
                        label(op, false, 11),
                        str_attr(previous, "id").unwrap_or("?")
                    ),
                ));
            }
            for i in 1..=10 {
                if op.operand(i).ok() != prefill.operand(i).ok() {
                    return Err(fail(
                        op,
                        format!("{} must be the prefill's (the phases of a served block share its parameters)", label(op, false, i)),
                    ));
                }
            }
        }
        None => {}
    }
    if let Ok(spec) = read_spec::<InferenceSpec>(module, INFERENCE_SPEC, |_| Ok(())) {
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
        )?;
    }
    let (h, f, a, kv, d) = (dim(op, "hidden")?, dim(op, "ffn_hidden")?, dim(op, "heads")?, dim(op, "kv_heads")?, dim(op, "head_dim")?);
    let (b, q, context) = (dim(op, "batch")?, dim(op, "query_tokens")?, dim(op, "context_tokens")?);
    let width = extent(op, "heads x head_dim", a, d)?;
    let kv_width = extent(op, "kv_heads x head_dim", kv, d)?;
    let builder = Builder::of(op);
    let dt = element_of(&builder, op, "datatype")?;
    let kv_dt = element_of(&builder, op, "kv_datatype")?;
    let act = tensor_type(&builder, &[b, q, h], dt);
    expect_type(op, label(op, false, 0), operand_type(op, 0)?, &[act], "batch x query_tokens x hidden")?;
    // A gated MLP holds gate and up side by side in fc1 (2 x ffn_hidden wide).
    let gated_fc1 = extent(op, "2 x ffn_hidden", 2, f).ok().map(|f2| tensor_type(&builder, &[h, f2], dt));
    let mut gated = false;
    for (i, (_, shape)) in block_parameters(h, width, kv_width, f, f).iter().enumerate() {
        let got = operand_type(op, i + 1)?;
        let mut want = vec![tensor_type(&builder, shape, dt)];
        if i == 8 {
            want.extend(gated_fc1);
            gated = gated_fc1.is_some_and(|g| is_same_type(g, got));
        }
        let from = if i == 8 { "hidden x ffn_hidden, or hidden x 2*ffn_hidden for a gated MLP" } else { PARAMETER_SHAPES[i] };
        expect_type(op, label(op, false, i + 1), got, &want, from)?;
    }
    expect_type(op, label(op, true, 0), result_type(op, 0)?, &[act], "batch x query_tokens x hidden")?;
    // K and V stacked; the token extent is symbolic or the context.
    let cache = |tokens: i64| builder.tensor(&[2, to_i64(b), tokens, to_i64(kv_width)], kv_dt);
    expect_type(
        op,
        label(op, true, 1),
        result_type(op, 1)?,
        &[cache(-1), cache(to_i64(context))],
        "2 x batch x tokens x kv_heads*head_dim",
    )?;
    Ok(ServeDims { b, q, h, f, a, width, kv_width, gated, dt })
}

/// An extent already bounded by 2^63 - 1 (an i64 attribute or a checked
/// product).
fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

struct ServeDims<'c> {
    b: u64,
    q: u64,
    h: u64,
    f: u64,
    a: u64,
    /// heads x head_dim.
    width: u64,
    /// kv_heads x head_dim.
    kv_width: u64,
    gated: bool,
    dt: Type<'c>,
}

/// The forward primitives of one inference phase; returns (output, cache).
fn serve_phase<'c, 'a>(
    e: &Emitter<'c, 'a>,
    phase: &str,
    x: Value<'c, 'a>,
    params: &[(Value<'c, 'a>, Type<'c>)],
    cache: Option<Value<'c, 'a>>,
    cache_ty: Type<'c>,
    dims: ServeDims<'c>,
) -> R<(Value<'c, 'a>, Value<'c, 'a>)> {
    let ServeDims { b, q, h, f, a, width, kv_width, gated, dt } = dims;
    let id = |source: &str| format!("{phase}.{source}");
    let width = tensor_type(&e.b, &[b, q, width], dt);
    let kv_width = tensor_type(&e.b, &[b, q, kv_width], dt);
    let ffn = tensor_type(&e.b, &[b, q, f], dt);
    let scores = e.b.tensor(&[to_i64(b), to_i64(a), to_i64(q), -1], dt);
    let p = |i: usize| params[i].0;
    let fork1 = e.fork(&id("attn.fork"), x, 2)?;
    let n1 = e.layer_norm(&id("attn.ln"), fork1[1], p(0), p(1))?;
    let qkv = e.fork(&id("attn.qkv_fork"), n1, 3)?;
    let qq = e.matmul(&id("attn.q"), qkv[0], p(2), width)?;
    let kk = e.matmul(&id("attn.k"), qkv[1], p(3), kv_width)?;
    let vv = e.matmul(&id("attn.v"), qkv[2], p(4), kv_width)?;
    let append_id = id("attn.kv_append");
    let new_cache = e.one(
        model::KvAppend {
            keys: kk,
            values: vv,
            id: &append_id,
            results: &[cache_ty],
            optional: model::KvAppendOptional { cache, effects: Some(effects(&["mutation"])), ..Default::default() },
        }
        .build(&e.b, e.loc(&append_id)),
    )?;
    // Attention reads the whole cache: every cached key and value.
    let sc = e.batch_matmul(&id("attn.scores"), qq, new_cache, scores)?;
    let sm = e.softmax(&id("attn.softmax"), sc, 3)?;
    let pd = e.dropout(&id("attn.prob_dropout"), sm, 0.0)?;
    let ctx = e.batch_matmul(&id("attn.context"), pd, new_cache, width)?;
    let act = x.r#type();
    let pj = e.matmul(&id("attn.proj"), ctx, p(5), act)?;
    let dr1 = e.dropout(&id("attn.dropout"), pj, 0.0)?;
    let h1 = e.add(&id("attn.residual"), dr1, fork1[0])?;
    let fork2 = e.fork(&id("mlp.fork"), h1, 2)?;
    let n2 = e.layer_norm(&id("mlp.ln"), fork2[1], p(6), p(7))?;
    let down = if gated {
        let half = tensor_type(&e.b, &[h, f], dt);
        let split_id = id("mlp.fc1.split");
        let parts = e.all(
            model::Split { input: p(8), id: &split_id, dim: 1, results: &[half, half], optional: Default::default() }
                .build(&e.b, e.loc(&split_id)),
        )?;
        let gate = e.matmul(&id("mlp.gate"), n2, parts[0], ffn)?;
        let up = e.matmul(&id("mlp.up"), n2, parts[1], ffn)?;
        let swiglu_id = id("mlp.swiglu");
        let g = e.one(
            model::Swiglu { lhs: gate, rhs: up, id: &swiglu_id, results: &[ffn], optional: Default::default() }
                .build(&e.b, e.loc(&swiglu_id)),
        )?;
        e.matmul(&id("mlp.down"), g, p(9), act)?
    } else {
        let u = e.matmul(&id("mlp.fc1"), n2, p(8), ffn)?;
        let g = e.gelu(&id("mlp.gelu"), u)?;
        e.matmul(&id("mlp.fc2"), g, p(9), act)?
    };
    let dr2 = e.dropout(&id("mlp.dropout"), down, 0.0)?;
    let y = e.add(&id("mlp.residual"), dr2, fork2[0])?;
    Ok((y, new_cache))
}
