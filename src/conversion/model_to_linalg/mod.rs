//! `convert-model-to-linalg`: decomposed ModelIR to `linalg`, `tensor`,
//! `arith`, `math` and `scf` on tensors, so the workload computes.
//!
//! Every function holding ModelIR becomes a function on tensors of the
//! same name: each `model.value` an argument and each `model.output` a
//! result, in order, named by `model.id` argument and result attributes;
//! every op is lowered by its kind's rule ([`rules`]), forward and backward
//! written out as EXECUTION.md states them. When the module carries a
//! training spec (`blueprint.training_spec`), the pass also emits
//! `@train_step`, the whole step of that spec: the global batch in
//! microbatches (an `scf.for`), every block forward then backward (the
//! block's ops lowered once per block, so the step grows with the blocks,
//! not blocks x microbatches), gradients summed over the batch, then each
//! block's optimizer from zero state. Its arguments and results carry
//! EXECUTION.md's tensor names (`blocks.<i>.<id>`, `block.in`, ...).
//!
//! Lowers float32 ModelIR with static shapes; a coarse op (decompose it
//! first), dropout with `p > 0` (no mask yet), another datatype or an op
//! without a rule is a located error and the module is left unchanged.

pub mod distributed;
mod linalg;
mod pipelined;
mod rules;

use std::collections::HashMap;

use melior::{
    dialect::DialectHandle,
    ir::{
        block::BlockLike, operation::OperationBuilder, operation::OperationLike, Attribute, Block, BlockRef, Identifier, Location, Module,
        OperationRef, Region, RegionLike, Type, TypeLike, Value, ValueLike,
    },
    pass::ExternalPass,
};

use self::{
    linalg::{shape_of, Lin},
    rules::{Cx, Env, Outliner},
};
use crate::{
    analysis::workload::TrainingSpec,
    dialect::{builder::BuildError, model::binding::read_spec, model::binding::TRAINING_SPEC},
    ir::{
        diagnostics::emit_error,
        ods::{OpKind, Role},
        read::{collect_ops, enum_attr, name_of, region_ops, str_attr, tensor_element},
        rewrite::erase,
    },
};

crate::ir::pass_macro::external_pass!(
    "ConvertModelToLinalg",
    "convert-model-to-linalg",
    "Lower decomposed float32 ModelIR to linalg on tensors (and, under a training spec, the whole training step as @train_step)",
    run,
    &lowering_dialects()
);

/// The dialects the ModelIR lowerings emit.
fn lowering_dialects() -> [DialectHandle; 5] {
    [
        DialectHandle::linalg(),
        DialectHandle::tensor(),
        DialectHandle::arith(),
        DialectHandle::scf(),
        // SAFETY: the handle getter has no preconditions.
        unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__math__()) },
    ]
}

/// The name of the whole-step function.
pub const TRAIN_STEP: &str = "train_step";

/// The attribute naming each argument and result.
pub const NAME_ATTRIBUTE: &str = "model.id";

type Failure<'c, 'm> = (OperationRef<'c, 'm>, String);

fn run(module: OperationRef, pass: ExternalPass) {
    replace_module(module, pass, build);
}

/// Builds the lowering of `module` into a new module with `build`, then
/// erases the ops it returns and moves the lowering in; on an error the
/// module is unchanged and the error is emitted on its op.
pub(super) fn replace_module<'c, 'm>(
    module: OperationRef<'c, 'm>,
    pass: ExternalPass,
    build: impl FnOnce(OperationRef<'c, 'm>, &Module<'c>) -> Result<Vec<OperationRef<'c, 'm>>, Failure<'c, 'm>>,
) {
    let generated = Module::new(module.location());
    match build(module, &generated) {
        Ok(replaced) => {
            for op in replaced {
                erase(op);
            }
            let _ = crate::ir::rewrite::move_into(&generated, module);
        }
        Err((op, message)) => {
            emit_error(op.location(), &message);
            pass.signal_failure();
        }
    }
}

/// The ModelIR functions of `module`, validated; their lowering built
/// into `generated`; returns the ops to erase (the functions and the
/// header).
fn build<'c, 'm>(module: OperationRef<'c, 'm>, generated: &Module<'c>) -> Result<Vec<OperationRef<'c, 'm>>, Failure<'c, 'm>> {
    let mut functions = Vec::new();
    let mut replaced = Vec::new();
    for op in region_ops(module, 0) {
        match OpKind::of(op) {
            Some(OpKind::ModelHeader) => replaced.push(op),
            _ if name_of(op) == "func.func" && region_ops(op, 0).iter().any(|o| is_model(*o)) => {
                validate(op)?;
                functions.push(op);
                replaced.push(op);
            }
            _ => {}
        }
    }
    if functions.is_empty() {
        return Err((module, "convert-model-to-linalg: the module holds no ModelIR function".into()));
    }
    // SAFETY: `to_ref` reinterprets the `ContextRef` it is called on, so
    // that handle must outlive every use: it lives until `build` returns,
    // and nothing built keeps the reference.
    let context_ref = module.context();
    let context = unsafe { context_ref.to_ref() };
    let lin = Lin::new(context, module.location()).map_err(|e| (module, e.to_string()))?;
    let outliner = Outliner::new(generated.body());
    for function in &functions {
        block_function(lin, *function, generated, &outliner)?;
    }
    if module.attribute(TRAINING_SPEC).is_ok() {
        let spec: TrainingSpec = read_spec(module, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string()))
            .map_err(|e| (module, format!("convert-model-to-linalg: {e}")))?;
        let [block] = functions[..] else {
            return Err((
                module,
                format!("convert-model-to-linalg: a training step needs exactly one block function, found {}", functions.len()),
            ));
        };
        let t = read_trained(block)?;
        train_step(lin, &spec, &t, &Distribution::one_rank(&t), block, generated, &outliner)?;
    }
    Ok(replaced)
}

fn is_model(op: OperationRef) -> bool {
    crate::ir::read::dialect_of(&name_of(op)) == "model"
}

/// What executes: static f32 tensors, decomposed ops, `p = 0` dropout.
fn validate<'c, 'm>(function: OperationRef<'c, 'm>) -> Result<(), Failure<'c, 'm>> {
    for op in collect_ops(function).into_iter().skip(1) {
        if !is_model(op) {
            if name_of(op) == "func.return" {
                continue;
            }
            return Err((op, format!("'{}' cannot be lowered with ModelIR: a ModelIR function holds only model ops", name_of(op))));
        }
        let kind = OpKind::of(op);
        if matches!(kind, Some(OpKind::ModelDecoderTraining | OpKind::ModelDecoderInference)) {
            return Err((op, format!("'{}' op is coarse: run model-decompose-transformer first", name_of(op))));
        }
        if kind == Some(OpKind::ModelDropout) {
            let p = op.attribute("p").ok().and_then(linalg::real).unwrap_or(0.0);
            if p != 0.0 {
                return Err((
                    op,
                    format!("'model.dropout' op has p = {p}: executing dropout needs a mask every rank regenerates, which Blueprint does not provide yet (only p = 0, the identity, executes)"),
                ));
            }
        }
        let types = op.operands().map(|v| v.r#type()).chain(op.results().map(|v| v.r#type()));
        for ty in types {
            let f32 = tensor_element(ty).is_some_and(|e| e.is_f32());
            let static_shape = crate::ir::read::tensor_shape(ty).is_some_and(|s| s.iter().all(Option::is_some));
            if !(f32 && static_shape) {
                return Err((
                    op,
                    format!(
                        "'{}' op has {}: convert-model-to-linalg lowers float32 ModelIR with static shapes (an executed step's datatype is float32)",
                        name_of(op),
                        crate::ir::read::type_string(ty)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The forward ops of a function by id, for the gradients that name them.
fn forward_ops<'c, 'm>(function: OperationRef<'c, 'm>) -> HashMap<String, OperationRef<'c, 'm>> {
    region_ops(function, 0)
        .into_iter()
        .filter(|op| is_model(*op) && phase(*op) == Phase::Forward)
        .filter_map(|op| Some((str_attr(op, "id")?.to_string(), op)))
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Forward,
    Backward,
    Optimizer,
    Other,
}

fn phase(op: OperationRef) -> Phase {
    match OpKind::of(op) {
        Some(OpKind::ModelActivationGradient | OpKind::ModelWeightGradient) => Phase::Backward,
        Some(OpKind::ModelOptimizerStep) => Phase::Optimizer,
        Some(OpKind::ModelValue | OpKind::ModelOutput | OpKind::ModelHeader) => Phase::Other,
        _ => Phase::Forward,
    }
}

/// `func.func @name(args) -> results` with `model.id` names, appended to
/// `generated`; returns its entry block.
#[allow(clippy::too_many_arguments)]
fn function<'c, 'g>(
    lin: Lin<'c>,
    generated: &'g Module<'c>,
    name: &str,
    args: &[(String, Type<'c>)],
    results: &[(String, Type<'c>)],
    splits: &HashMap<String, Vec<Split>>,
    location: Location<'c>,
    c_interface: bool,
) -> Result<BlockRef<'c, 'g>, BuildError> {
    let b = &lin.b;
    let names = |items: &[(String, Type<'c>)]| -> Attribute<'c> {
        let dicts: Vec<Attribute<'c>> = items
            .iter()
            .map(|(n, _)| match splits.get(n).filter(|s| !s.is_empty()) {
                Some(split) => {
                    let each: Vec<Attribute<'c>> = split
                        .iter()
                        .map(|s| match &s.flat {
                            None => b.dictionary(&[("dim", b.i64(s.dim)), ("axis", b.string(&s.axis))]),
                            Some(shape) => b.dictionary(&[("dim", b.i64(-1)), ("axis", b.string(&s.axis)), ("shape", b.i64_array(shape))]),
                        })
                        .collect();
                    b.dictionary(&[(NAME_ATTRIBUTE, b.string(n)), (SPLIT_ATTRIBUTE, b.array(&each))])
                }
                None => b.dictionary(&[(NAME_ATTRIBUTE, b.string(n))]),
            })
            .collect();
        b.array(&dicts)
    };
    let inputs: Vec<Type<'c>> = args.iter().map(|(_, t)| *t).collect();
    let outputs: Vec<Type<'c>> = results.iter().map(|(_, t)| *t).collect();
    let block = Block::new(&inputs.iter().map(|t| (*t, location)).collect::<Vec<_>>());
    let region = Region::new();
    region.append_block(block);
    let mut attributes = vec![
        (Identifier::new(lin.ctx, "sym_name"), b.string(name)),
        (Identifier::new(lin.ctx, "function_type"), b.type_attribute(b.function_type(&inputs, &outputs))),
        (Identifier::new(lin.ctx, "arg_attrs"), names(args)),
        (Identifier::new(lin.ctx, "res_attrs"), names(results)),
    ];
    if c_interface {
        attributes.push((Identifier::new(lin.ctx, "llvm.emit_c_interface"), b.unit()));
    }
    let op = OperationBuilder::new("func.func", location)
        .add_attributes(&attributes)
        .add_regions([region])
        .build()
        .map_err(|_| BuildError { op: "func.func" })?;
    let op = generated.body().append_operation(op);
    op.region(0).ok().and_then(|r| r.first_block()).ok_or(BuildError { op: "func.func" })
}

fn arg<'c, 'a>(block: &BlockRef<'c, 'a>, i: usize) -> Result<Value<'c, 'a>, BuildError> {
    block.argument(i).map(Into::into).map_err(|_| BuildError { op: "block argument" })
}

/// The function as written, on tensors: values in, outputs out.
fn block_function<'c, 'g, 'm>(
    lin: Lin<'c>,
    function: OperationRef<'c, 'm>,
    generated: &'g Module<'c>,
    outliner: &Outliner<'c, 'g>,
) -> Result<(), Failure<'c, 'm>> {
    let name = str_attr(function, "sym_name").unwrap_or("model").to_string();
    let ops = region_ops(function, 0);
    let id = |op: OperationRef| str_attr(op, "id").unwrap_or_default().to_string();
    let values: Vec<OperationRef> = ops.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::ModelValue)).collect();
    let outputs: Vec<OperationRef> = ops.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::ModelOutput)).collect();
    let mut args = Vec::new();
    for v in &values {
        args.push((id(*v), v.result(0).map(|r| r.r#type()).map_err(|_| (*v, "has no result".to_string()))?));
    }
    let mut results = Vec::new();
    for o in &outputs {
        results.push((id(*o), o.operand(0).map(|r| r.r#type()).map_err(|_| (*o, "has no operand".to_string()))?));
    }
    let built = |e: BuildError| (function, e.to_string());
    let block = function_block(lin, generated, &name, &args, &results, function.location()).map_err(built)?;
    let mut env = Env::default();
    for (i, v) in values.iter().enumerate() {
        env.set(v.result(0).map_err(|_| (*v, "has no result".to_string()))?.into(), arg(&block, i).map_err(built)?);
    }
    let forward = forward_ops(function);
    {
        let mut cx = Cx { lin, block, env: &mut env, forward: &forward, outliner: Some(outliner) };
        for op in &ops {
            if is_model(*op) && !matches!(OpKind::of(*op), Some(OpKind::ModelValue | OpKind::ModelOutput)) {
                cx.lin = lin.at(op.location());
                rules::lower(&mut cx, *op).map_err(|m| (*op, format!("'{}' op {m}", name_of(*op))))?;
            }
        }
    }
    let mut returned = Vec::new();
    for o in &outputs {
        returned.push(env.get(o.operand(0).map_err(|_| (*o, "has no operand".to_string()))?).map_err(|m| (*o, m))?);
    }
    block.append_operation(lin.b.func_return(&returned, function.location()).map_err(built)?);
    Ok(())
}

fn function_block<'c, 'g>(
    lin: Lin<'c>,
    generated: &'g Module<'c>,
    name: &str,
    args: &[(String, Type<'c>)],
    results: &[(String, Type<'c>)],
    location: Location<'c>,
) -> Result<BlockRef<'c, 'g>, BuildError> {
    function(lin, generated, name, args, results, &HashMap::new(), location, false)
}

/// One block function read as a trained block: where its inputs, its
/// parameters and its state enter, what each phase's ops are.
struct Trained<'c, 'm> {
    input: OperationRef<'c, 'm>,
    output_grad: OperationRef<'c, 'm>,
    params: Vec<OperationRef<'c, 'm>>,
    states: Vec<OperationRef<'c, 'm>>,
    /// The forward value that leaves the block, and the gradient of its input.
    block_out: Value<'c, 'm>,
    block_in_grad: Value<'c, 'm>,
    forward: Vec<OperationRef<'c, 'm>>,
    backward: Vec<OperationRef<'c, 'm>>,
    optimizer: Vec<OperationRef<'c, 'm>>,
}

fn read_trained<'c, 'm>(function: OperationRef<'c, 'm>) -> Result<Trained<'c, 'm>, Failure<'c, 'm>> {
    let ops = region_ops(function, 0);
    let (mut input, mut output_grad, mut params, mut states) = (None, None, Vec::new(), Vec::new());
    let (mut block_out, mut block_in_grad) = (None, None);
    let (mut forward, mut backward, mut optimizer) = (Vec::new(), Vec::new(), Vec::new());
    for op in ops.iter().copied().filter(|op| is_model(*op)) {
        match (OpKind::of(op), phase(op)) {
            (Some(OpKind::ModelValue), _) => match enum_attr::<Role>(op, "role") {
                Some(Role::Activation) if input.is_none() => input = Some(op),
                Some(Role::ActivationGradient) if output_grad.is_none() => output_grad = Some(op),
                Some(Role::Parameter) => params.push(op),
                Some(Role::OptimizerState) => states.push(op),
                _ => return Err((op, format!("'model.value' op '{}' has no place in a training step (one activation in, one activation gradient in, parameters and optimizer state)", str_attr(op, "id").unwrap_or("?")))),
            },
            (Some(OpKind::ModelOutput), _) => {
                let value = op.operand(0).map_err(|_| (op, "has no operand".to_string()))?;
                match enum_attr::<Role>(op, "role") {
                    None if block_out.is_none() => block_out = Some(value),
                    Some(Role::ActivationGradient) if block_in_grad.is_none() => block_in_grad = Some(value),
                    _ => {}
                }
            }
            (_, Phase::Forward) => forward.push(op),
            (_, Phase::Backward) => backward.push(op),
            (_, Phase::Optimizer) => optimizer.push(op),
            _ => {}
        }
    }
    let missing =
        |what: &str| (function, format!("convert-model-to-linalg: the block function has no {what}, so it is not a trained block"));
    Ok(Trained {
        input: input.ok_or_else(|| missing("activation 'model.value' (the block input)"))?,
        output_grad: output_grad.ok_or_else(|| missing("activation-gradient 'model.value' (the output's gradient)"))?,
        params,
        states,
        block_out: block_out.ok_or_else(|| missing("'model.output' of the block's output"))?,
        block_in_grad: block_in_grad.ok_or_else(|| missing("'model.output ... as activation_gradient' (the input's gradient)"))?,
        forward,
        backward,
        optimizer,
    })
}

/// One step of a phase function: a ModelIR op lowered by its rule, or a
/// collective of the derived program applied to an op's result.
#[derive(Clone, Copy)]
pub(super) enum Item<'c, 'm> {
    /// The op, and the local result type its task states (checked against
    /// what the rule computes), if it comes from a task.
    Op(OperationRef<'c, 'm>, Option<Type<'c>>),
    /// The collective `template` (a `dist` op of the derived program, on
    /// tokens), run in groups of the given ranks on the tensor `op`
    /// computed; later items read its result.
    Collective(OperationRef<'c, 'm>, OperationRef<'c, 'm>, i64),
    /// The all-gather `template` of the re-communication phase on the
    /// forward op `op`'s result, which the forward already gathered (the
    /// derived program drops the gathered tensor and gathers it again in
    /// the backward pass): the rank's part of the sequence is taken back
    /// out of the gathered tensor and gathered again, in groups of the
    /// given ranks whose coordinate along the axis has the given stride.
    Regather(OperationRef<'c, 'm>, OperationRef<'c, 'm>, i64, i64),
}

impl<'c, 'm> Item<'c, 'm> {
    fn op(self) -> OperationRef<'c, 'm> {
        match self {
            Item::Op(op, _) | Item::Collective(op, _, _) | Item::Regather(op, _, _, _) => op,
        }
    }
}

/// Lowers `items` into `cx`, in order.
fn lower_items<'c, 'g, 'm>(cx: &mut Cx<'_, 'c, 'g, 'm>, lin: Lin<'c>, items: &[Item<'c, 'm>]) -> Result<(), Failure<'c, 'm>> {
    for item in items {
        match *item {
            Item::Op(op, declared) => {
                cx.lin = lin.at(op.location());
                rules::lower(cx, op).map_err(|m| (op, format!("'{}' op {m}", name_of(op))))?;
                if let Some(declared) = declared {
                    let result = op.result(0).map_err(|_| (op, "has no result".to_string()))?;
                    let lowered = cx.env.get(result.into()).map_err(|m| (op, m))?.r#type();
                    if lowered != declared {
                        return Err((
                            op,
                            format!(
                                "'{}' op computes {} on a rank, but its task in the derived program states {}",
                                name_of(op),
                                crate::ir::read::type_string(lowered),
                                crate::ir::read::type_string(declared)
                            ),
                        ));
                    }
                }
            }
            Item::Collective(op, template, group) => {
                let result = op.result(0).map_err(|_| (op, "has no result".to_string()))?;
                let input = cx.env.get(result.into()).map_err(|m| (op, m))?;
                let reduced =
                    distributed::collective(lin.at(template.location()), &cx.block, template, input, group).map_err(|m| (template, m))?;
                cx.env.set(result.into(), reduced);
            }
            Item::Regather(op, template, group, stride) => {
                let result = op.result(0).map_err(|_| (op, "has no result".to_string()))?;
                let whole = cx.env.get(result.into()).map_err(|m| (op, m))?;
                let part = distributed::rank_part(lin.at(template.location()), &cx.block, template, whole, group, stride)
                    .map_err(|m| (template, m))?;
                let gathered =
                    distributed::collective(lin.at(template.location()), &cx.block, template, part, group).map_err(|m| (template, m))?;
                cx.env.set(result.into(), gathered);
            }
        }
    }
    Ok(())
}

/// A private function holding `items` lowered (as calls of their outlined
/// lowerings): arguments `args` of `arg_types`, results `results` (ModelIR
/// values). Returns its name and result types (the lowering's).
#[allow(clippy::too_many_arguments)]
fn phase_function<'c, 'g, 'm>(
    lin: Lin<'c>,
    generated: &'g Module<'c>,
    outliner: &Outliner<'c, 'g>,
    forward: &HashMap<String, OperationRef<'c, 'm>>,
    name: &str,
    args: &[(Value<'c, 'm>, Type<'c>)],
    items: &[Item<'c, 'm>],
    results: &[Value<'c, 'm>],
    at: OperationRef<'c, 'm>,
) -> Result<Vec<Type<'c>>, Failure<'c, 'm>> {
    let built = |e: BuildError| (at, e.to_string());
    let inputs: Vec<Type<'c>> = args.iter().map(|(_, t)| *t).collect();
    let loc = at.location();
    let region = Region::new();
    let body = region.append_block(Block::new(&inputs.iter().map(|t| (*t, loc)).collect::<Vec<_>>()));
    let mut env = Env::default();
    for (i, (v, _)) in args.iter().enumerate() {
        env.set(*v, arg(&body, i).map_err(built)?);
    }
    let mut returned = Vec::new();
    {
        let mut cx = Cx { lin, block: body, env: &mut env, forward, outliner: Some(outliner) };
        lower_items(&mut cx, lin, items)?;
        for v in results {
            returned.push(cx.env.get(*v).map_err(|m| (at, m))?);
        }
    }
    let outputs: Vec<Type<'c>> = returned.iter().map(|v| v.r#type()).collect();
    body.append_operation(lin.b.func_return(&returned, loc).map_err(built)?);
    generated.body().append_operation(lin.at(loc).private_function(name, &inputs, &outputs, region, true).map_err(built)?);
    Ok(outputs)
}

/// The forward values the backward reads: the operands of the backward
/// ops and, for each gradient, its forward op's operands and results,
/// when a forward op or the block input defines them (first use first) —
/// except those the backward recomputes itself (a recompute clone in
/// `backward` is the forward op again).
fn saved_values<'c, 'm>(
    t: &Trained<'c, 'm>,
    backward: &[Item<'c, 'm>],
    forward: &HashMap<String, OperationRef<'c, 'm>>,
) -> Vec<Value<'c, 'm>> {
    // (A re-gather reads its forward op's result, saved; it recomputes nothing.)
    let recomputed: Vec<OperationRef<'c, 'm>> =
        backward.iter().filter(|i| !matches!(i, Item::Regather(..))).map(|i| i.op()).filter(|op| phase(*op) == Phase::Forward).collect();
    let defined_forward = |v: &Value<'c, 'm>| match crate::ir::read::defining_op(*v) {
        Some(d) => (t.forward.contains(&d) && !recomputed.contains(&d)) || d == t.input,
        None => false,
    };
    let mut saved: Vec<Value<'c, 'm>> = Vec::new();
    for item in backward {
        let op = match item {
            Item::Op(op, _) => op,
            Item::Regather(op, ..) => {
                if let Ok(r) = op.result(0) {
                    let v = Value::from(r);
                    if defined_forward(&v) && !saved.contains(&v) {
                        saved.push(v);
                    }
                }
                continue;
            }
            Item::Collective(..) => continue,
        };
        let mut read: Vec<Value<'c, 'm>> = op.operands().collect();
        if let Some(source) = str_attr(*op, "of").and_then(|of| forward.get(of)) {
            read.extend(source.operands());
            read.extend(source.results().map(Value::from));
        }
        for v in read {
            if defined_forward(&v) && !saved.contains(&v) {
                saved.push(v);
            }
        }
    }
    saved
}

/// `func.call @name(args) -> results`.
fn call<'c, 'a>(
    lin: Lin<'c>,
    block: &BlockRef<'c, 'a>,
    name: &str,
    args: &[Value<'c, 'a>],
    results: &[Type<'c>],
) -> Result<Vec<Value<'c, 'a>>, BuildError> {
    let op = OperationBuilder::new("func.call", lin.loc)
        .add_operands(args)
        .add_results(results)
        .add_attributes(&[(Identifier::new(lin.ctx, "callee"), lin.b.symbol(name))])
        .build();
    lin.push(block, op, "func.call")
}

/// How `@train_step` is distributed: what one rank computes of it. The
/// one-rank step ([`Distribution::one_rank`]) has the ModelIR's types, its
/// ops in order and no collectives; a derived program's
/// ([`distributed::read`]) has each rank's shard types, the tasks' order
/// and the program's collectives.
pub(super) struct Distribution<'c, 'm> {
    pub forward: Vec<Item<'c, 'm>>,
    /// Recompute clones first, then the gradients, with their collectives.
    pub backward: Vec<Item<'c, 'm>>,
    /// A rank's type of a parameter, optimizer state, the block input or
    /// its output's gradient, where it is not the ModelIR's (by handle).
    pub local: HashMap<usize, Type<'c>>,
    /// How each argument and result of the step is split over the mesh
    /// (by tensor name; a tensor may be split along several dimensions);
    /// absent: whole on every rank.
    pub splits: HashMap<String, Vec<Split>>,
    /// Ranks of the data-parallel axis: a rank's rows are the global batch
    /// divided by it.
    pub data_parallel: u64,
    /// The derived program's data-parallel gradient reduction, run on each
    /// summed gradient before the optimizer.
    pub gradient_reduction: Option<OperationRef<'c, 'm>>,
    /// The stages, when the step is pipelined.
    pub pipeline: Option<Pipeline<'c, 'm>>,
    /// Under a sharded optimizer: the all-gather of the updated parameters.
    pub parameter_gather: Option<OperationRef<'c, 'm>>,
    /// The weight gradients that are partial sums over the tensor-parallel
    /// ranks: each one's optimizer step (by id) and the derived program's
    /// all-reduce summing it, run before the data-parallel reduction.
    pub partial_sums: Vec<(String, OperationRef<'c, 'm>)>,
    /// The mesh: its symbol, axes and shape.
    pub mesh: (String, Vec<String>, Vec<i64>),
}

/// A pipelined step's stages (more than one).
pub(super) struct Pipeline<'c, 'm> {
    pub stages: Vec<Stage<'c, 'm>>,
}

/// One pipeline stage: its chunks (one, or several when interleaved) and
/// its schedule's slots (microbatch, chunk, backward?).
pub(super) struct Stage<'c, 'm> {
    pub stage: u64,
    pub chunks: Vec<Chunk<'c, 'm>>,
    pub slots: Vec<(u64, usize, bool)>,
}

/// One chunk of a stage: its blocks, the transfers its boundary sends (the
/// derived program's `dist.p2p`s: the activation forward, its gradient
/// backward) and its own block template (its tasks' and collectives' ids;
/// `None` for stage 0's first chunk, whose template is the distribution's).
pub(super) struct Chunk<'c, 'm> {
    pub first_block: u64,
    pub blocks: u64,
    pub send_forward: Option<OperationRef<'c, 'm>>,
    pub send_backward: Option<OperationRef<'c, 'm>>,
    pub template: Option<Template<'c, 'm>>,
}

/// A block template as the step runs it: the forward's and backward's
/// items, and the data-parallel gradient reduction.
pub(super) struct Template<'c, 'm> {
    pub forward: Vec<Item<'c, 'm>>,
    pub backward: Vec<Item<'c, 'm>>,
    pub gradient_reduction: Option<OperationRef<'c, 'm>>,
    /// Under a sharded optimizer: the all-gather of the updated parameters.
    pub parameter_gather: Option<OperationRef<'c, 'm>>,
    /// The partial weight gradients' sums (see [`Distribution::partial_sums`]).
    pub partial_sums: Vec<(String, OperationRef<'c, 'm>)>,
}

impl<'c, 'm> Template<'c, 'm> {
    /// Its once-per-step reductions.
    fn reductions(&self) -> Reductions<'_, 'c, 'm> {
        Reductions { gradient: self.gradient_reduction, gather: self.parameter_gather, partial_sums: &self.partial_sums }
    }
}

/// A tensor split along `dim` over the mesh axis `axis`; or, with `flat`,
/// flattened (from that rank shape) and split into contiguous parts (a
/// sharded optimizer's state and summed gradient), always the last split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub dim: i64,
    pub axis: String,
    pub flat: Option<Vec<i64>>,
}

/// The attribute on `@train_step`'s arguments and results saying how a
/// tensor is split over the mesh (`[{dim, axis}, ...]`, one entry per split
/// dimension).
pub const SPLIT_ATTRIBUTE: &str = "dist.split";

impl<'c, 'm> Distribution<'c, 'm> {
    fn one_rank(t: &Trained<'c, 'm>) -> Self {
        Self {
            forward: t.forward.iter().map(|op| Item::Op(*op, None)).collect(),
            backward: t.backward.iter().map(|op| Item::Op(*op, None)).collect(),
            local: HashMap::new(),
            splits: HashMap::new(),
            data_parallel: 1,
            gradient_reduction: None,
            pipeline: None,
            parameter_gather: None,
            partial_sums: Vec::new(),
            mesh: (String::new(), Vec::new(), Vec::new()),
        }
    }

    /// Its (stage 0's first chunk's) once-per-step reductions.
    fn reductions(&self) -> Reductions<'_, 'c, 'm> {
        Reductions { gradient: self.gradient_reduction, gather: self.parameter_gather, partial_sums: &self.partial_sums }
    }

    /// A rank's type of `value`.
    fn type_of(&self, value: Value<'c, 'm>) -> Type<'c> {
        self.local.get(&(value.to_raw().ptr as usize)).copied().unwrap_or_else(|| value.r#type())
    }
}

/// `@train_step`: the whole training step of `spec` with `function` as
/// every block (EXECUTION.md "The step"), as one rank of `distribution`
/// runs it. The block's three phases are private functions (forward,
/// backward, optimizer) the step calls once per block and microbatch, so
/// the step's code grows with the blocks only by a few calls each.
fn train_step<'c, 'g, 'm>(
    lin: Lin<'c>,
    spec: &TrainingSpec,
    t: &Trained<'c, 'm>,
    distribution: &Distribution<'c, 'm>,
    function: OperationRef<'c, 'm>,
    generated: &'g Module<'c>,
    outliner: &Outliner<'c, 'g>,
) -> Result<(), Failure<'c, 'm>> {
    let id = |op: OperationRef| str_attr(op, "id").unwrap_or_default().to_string();
    let result_of = |op: OperationRef<'c, 'm>| op.result(0).map(Value::from).map_err(|_| (op, "has no result".to_string()));
    let input = result_of(t.input)?;
    let output_grad = result_of(t.output_grad)?;
    let act = crate::ir::read::tensor_shape(distribution.type_of(input))
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.unwrap_or(0))
        .collect::<Vec<i64>>();
    let (blocks, mb) = (spec.model.blocks, spec.workload.microbatch);
    let batch = spec.workload.global_batch / distribution.data_parallel.max(1);
    if act.first().copied() != Some(mb as i64) {
        return Err((t.input, format!("the block input's rows ({:?}) are not the spec's microbatch ({mb})", act.first())));
    }
    let whole: Vec<i64> = std::iter::once(batch as i64).chain(act[1..].iter().copied()).collect();
    let whole_ty = lin.tensor(&whole);
    let blocks = usize::try_from(blocks).map_err(|_| (function, "too many blocks".to_string()))?;
    let name = |i: usize, suffix: &str| format!("blocks.{i}.{suffix}");
    let params: Vec<Value<'c, 'm>> = t.params.iter().map(|p| result_of(*p)).collect::<Result<_, _>>()?;
    let grads_of: Vec<Value<'c, 'm>> = t.optimizer.iter().filter_map(|s| s.operand(1).ok()).collect();
    let states: Vec<Value<'c, 'm>> = t.states.iter().map(|s| result_of(*s)).collect::<Result<_, _>>()?;
    let forward = forward_ops(function);
    let saved = saved_values(t, &distribution.backward, &forward);
    let typed =
        |values: &[Value<'c, 'm>]| -> Vec<(Value<'c, 'm>, Type<'c>)> { values.iter().map(|v| (*v, distribution.type_of(*v))).collect() };

    // The block's phases, once.
    let base = str_attr(function, "sym_name").unwrap_or("block").to_string();
    let (fwd, bwd, opt) = (format!("{base}.forward"), format!("{base}.backward"), format!("{base}.optimizer"));
    let fwd_args = typed(&params.iter().copied().chain([input]).collect::<Vec<_>>());
    let fwd_results: Vec<Value<'c, 'm>> = std::iter::once(t.block_out).chain(saved.iter().copied()).collect();
    let fwd_types = phase_function(lin, generated, outliner, &forward, &fwd, &fwd_args, &distribution.forward, &fwd_results, function)?;
    // The saved values as the forward computed them (a rank's shards).
    let mut bwd_args = typed(&params);
    bwd_args.extend(saved.iter().copied().zip(fwd_types[1..].iter().copied()));
    bwd_args.push((output_grad, distribution.type_of(output_grad)));
    let bwd_results: Vec<Value<'c, 'm>> = std::iter::once(t.block_in_grad).chain(grads_of.iter().copied()).collect();
    let bwd_types = phase_function(lin, generated, outliner, &forward, &bwd, &bwd_args, &distribution.backward, &bwd_results, function)?;
    let grad_types = &bwd_types[1..];
    let mut opt_args = typed(&params);
    opt_args.extend(grads_of.iter().copied().zip(grad_types.iter().copied()));
    opt_args.extend(typed(&states));
    let opt_items: Vec<Item<'c, 'm>> = t.optimizer.iter().map(|op| Item::Op(*op, None)).collect();
    let opt_results: Vec<Value<'c, 'm>> = t.optimizer.iter().flat_map(|s| s.results().map(Value::from).collect::<Vec<_>>()).collect();
    let opt_types = phase_function(lin, generated, outliner, &forward, &opt, &opt_args, &opt_items, &opt_results, function)?;
    // The parameter each optimizer step updates.
    let step_params: Vec<usize> = t
        .optimizer
        .iter()
        .map(|s| {
            s.operand(0)
                .ok()
                .and_then(|v| params.iter().position(|p| *p == v))
                .ok_or((*s, "updates a value that is not a parameter of the block".to_string()))
        })
        .collect::<Result<_, _>>()?;
    // A sharded optimizer runs on each rank's contiguous part of every
    // flattened parameter, gradient and state.
    let dp = i64::try_from(distribution.data_parallel).unwrap_or(1);
    let optimizer_shard = if distribution.parameter_gather.is_some() {
        let part = |(v, ty): &(Value<'c, 'm>, Type<'c>)| -> Result<(Value<'c, 'm>, Type<'c>), Failure<'c, 'm>> {
            let n: i64 = linalg::type_dims(*ty).iter().product();
            if n % dp != 0 {
                return Err((
                    function,
                    format!("a sharded optimizer splits every parameter over the {dp} data-parallel ranks, but one has {n} elements"),
                ));
            }
            Ok((*v, lin.tensor(&[n / dp])))
        };
        let shard_args: Vec<(Value<'c, 'm>, Type<'c>)> = opt_args.iter().map(part).collect::<Result<_, _>>()?;
        let name = format!("{opt}.shard");
        let types = phase_function(lin, generated, outliner, &forward, &name, &shard_args, &opt_items, &opt_results, function)?;
        Some((name, types))
    } else {
        None
    };

    // Per block: its parameters (arguments), and each optimizer step's
    // gradient, new parameter and new state (results).
    let mut block_args = Vec::new();
    let mut block_results = Vec::new();
    for i in 0..blocks {
        block_args.push(t.params.iter().zip(&params).map(|(p, v)| (name(i, &id(*p)), distribution.type_of(*v))).collect::<Vec<_>>());
        let mut results = Vec::new();
        let mut at = 0;
        for (k, step) in t.optimizer.iter().enumerate() {
            let v = step.operand(0).map_err(|_| (*step, "has no parameter".to_string()))?;
            let p = crate::ir::read::defining_op(v)
                .filter(|d| t.params.contains(d))
                .ok_or_else(|| (*step, "updates a value that is not a parameter of the block".to_string()))?;
            // Sharded: a rank returns its part of the gradient and states.
            let part = |full: Type<'c>, j: usize| optimizer_shard.as_ref().map_or(full, |(_, types)| types[j]);
            results.push((name(i, &format!("{}.grad", id(p))), optimizer_shard.as_ref().map_or(grad_types[k], |(_, types)| types[at])));
            results.push((name(i, &id(p)), opt_types[at]));
            for (j, s) in step.operands().skip(2).enumerate() {
                let state = crate::ir::read::defining_op(s).ok_or((*step, "has a state that is not a value".to_string()))?;
                results.push((name(i, &id(state)), part(opt_types[at + 1 + j], at + 1 + j)));
            }
            at += step.result_count();
        }
        block_results.push(results);
    }
    let phases = Phases {
        forward: (fwd.clone(), fwd_types.clone()),
        backward: (bwd.clone(), bwd_types.clone()),
        optimizer: (opt.clone(), opt_types.clone()),
        states: opt_args[params.len() + grads_of.len()..].iter().map(|(_, t)| *t).collect(),
        steps: t.optimizer.iter().map(|s| (str_attr(*s, "id").unwrap_or("grad").to_string(), s.result_count())).collect(),
        rows: act.clone(),
        whole: whole.clone(),
        optimizer_shard: optimizer_shard.clone(),
        step_params: step_params.clone(),
    };
    if let Some(pipeline) = &distribution.pipeline {
        // A later stage's phases run its own template (its tasks' and
        // collectives' ids), with the same types.
        let stage_phases = |place: &str, template: &Template<'c, 'm>| -> Result<Phases<'c>, Failure<'c, 'm>> {
            let (f, b) = (format!("{base}.{place}.forward"), format!("{base}.{place}.backward"));
            phase_function(lin, generated, outliner, &forward, &f, &fwd_args, &template.forward, &fwd_results, function)?;
            phase_function(lin, generated, outliner, &forward, &b, &bwd_args, &template.backward, &bwd_results, function)?;
            Ok(Phases { forward: (f, phases.forward.1.clone()), backward: (b, phases.backward.1.clone()), ..phases.clone() })
        };
        return pipelined::stage_steps(
            lin,
            distribution,
            pipeline,
            &phases,
            &stage_phases,
            &block_args,
            &block_results,
            function,
            generated,
        );
    }
    // Arguments: every block's parameters, then the batch's input and the
    // gradient of the last block's output.
    let mut args: Vec<(String, Type<'c>)> = block_args.concat();
    args.push(("block.in".to_string(), whole_ty));
    args.push(("block.out.grad".to_string(), whole_ty));
    // Results: the batch's output and input gradient, then every block's.
    let mut results = vec![("block.out".to_string(), whole_ty), ("block.in.grad".to_string(), whole_ty)];
    results.extend(block_results.concat());
    let built = |e: BuildError| (function, e.to_string());
    let loc = function.location();
    let l = lin.at(loc);
    let entry = function_with_interface(l, generated, TRAIN_STEP, &args, &results, &distribution.splits, loc).map_err(built)?;
    let n_params = params.len();
    let block_params =
        |i: usize| -> Result<Vec<Value<'c, 'g>>, BuildError> { (0..n_params).map(|k| arg(&entry, i * n_params + k)).collect() };
    let x_all = arg(&entry, blocks * n_params).map_err(built)?;
    let dy_all = arg(&entry, blocks * n_params + 1).map_err(built)?;

    // Loop-carried: block.out, block.in.grad, every block's gradients.
    let shape = linalg::type_dims;
    let mut inits = vec![l.empty(&entry, &whole).map_err(built)?, l.empty(&entry, &whole).map_err(built)?];
    for _ in 0..blocks {
        for g in grad_types {
            inits.push(l.full(&entry, &shape(*g), 0.0).map_err(built)?);
        }
    }
    let count = i64::try_from(batch / mb).map_err(|_| (function, "too many microbatches".to_string()))?;
    let (lb, ub, one) = (
        l.index_constant(&entry, 0).map_err(built)?,
        l.index_constant(&entry, count).map_err(built)?,
        l.index_constant(&entry, 1).map_err(built)?,
    );
    let carried: Vec<Type<'c>> = inits.iter().map(|v| v.r#type()).collect();
    let mut body_args = vec![(l.index, loc)];
    body_args.extend(carried.iter().map(|t| (*t, loc)));
    let region = Region::new();
    region.append_block(Block::new(&body_args));
    let mut operands = vec![lb, ub, one];
    operands.extend(inits.iter().copied());
    let for_op = OperationBuilder::new("scf.for", loc)
        .add_operands(&operands)
        .add_results(&carried)
        .add_regions([region])
        .build()
        .map_err(|_| built(BuildError { op: "scf.for" }))?;
    let for_op = entry.append_operation(for_op);
    let body = for_op.region(0).ok().and_then(|r| r.first_block()).ok_or_else(|| built(BuildError { op: "scf.for" }))?;
    let iv = arg(&body, 0).map_err(built)?;
    let acc = |k: usize| arg(&body, 1 + k);

    let rows_at = l.index_mul(&body, iv, l.index_constant(&body, mb as i64).map_err(built)?).map_err(built)?;
    let offsets = vec![0i64; act.len()];
    let mut x = l.extract(&body, x_all, &offsets, &act, Some(rows_at)).map_err(built)?;
    let mut kept = Vec::new();
    for i in 0..blocks {
        let mut call_args = block_params(i).map_err(built)?;
        call_args.push(x);
        let out = call(l, &body, &fwd, &call_args, &fwd_types).map_err(built)?;
        x = out[0];
        kept.push(out[1..].to_vec());
    }
    let mut next = vec![l.insert(&body, x, acc(0).map_err(built)?, &offsets, &act, Some(rows_at)).map_err(built)?];
    let mut dy = l.extract(&body, dy_all, &offsets, &act, Some(rows_at)).map_err(built)?;
    let mut grads = vec![Vec::new(); blocks];
    for i in (0..blocks).rev() {
        let mut call_args = block_params(i).map_err(built)?;
        call_args.extend(kept[i].iter().copied());
        call_args.push(dy);
        let out = call(l, &body, &bwd, &call_args, &bwd_types).map_err(built)?;
        dy = out[0];
        grads[i] = out[1..].to_vec();
    }
    next.push(l.insert(&body, dy, acc(1).map_err(built)?, &offsets, &act, Some(rows_at)).map_err(built)?);
    for (i, block_grads) in grads.iter().enumerate() {
        for (k, this) in block_grads.iter().enumerate() {
            // In place into the carried sum, so bufferization reuses it.
            let sum = acc(2 + i * grads_of.len() + k).map_err(built)?;
            let rank = shape_of(*this).len();
            let maps = [linalg::identity(rank), linalg::identity(rank)];
            let added = l.generic(&body, &[*this], &[sum], &maps, &vec![linalg::Iter::P; rank], |s, a| Ok(vec![s.add(a[1], a[0])?]));
            next.push(added.map_err(built)?[0]);
        }
    }
    body.append_operation(
        OperationBuilder::new("scf.yield", loc).add_operands(&next).build().map_err(|_| built(BuildError { op: "scf.yield" }))?,
    );
    let summed: Vec<Value<'c, 'g>> = for_op.results().map(Into::into).collect();

    let per_block: Vec<Vec<Value<'c, 'g>>> =
        (0..blocks).map(|i| summed[2 + i * grads_of.len()..2 + (i + 1) * grads_of.len()].to_vec()).collect();
    let params_of: Vec<Vec<Value<'c, 'g>>> = (0..blocks).map(block_params).collect::<Result<_, _>>().map_err(built)?;
    let mut returned = vec![summed[0], summed[1]];
    returned.extend(
        optimize(l, &entry, distribution.reductions(), distribution, &phases, &(0..blocks).collect::<Vec<_>>(), &params_of, per_block)
            .map_err(|(op, m)| (op.unwrap_or(function), m))?,
    );
    entry.append_operation(lin.b.func_return(&returned, loc).map_err(built)?);
    Ok(())
}

/// What a step calls of the block: its three phase functions (name,
/// result types), the optimizer's state types and steps (id, results), a
/// microbatch's activation shape and the rank's rows of the batch.
#[derive(Clone)]
pub(super) struct Phases<'c> {
    pub forward: (String, Vec<Type<'c>>),
    pub backward: (String, Vec<Type<'c>>),
    pub optimizer: (String, Vec<Type<'c>>),
    pub states: Vec<Type<'c>>,
    pub steps: Vec<(String, usize)>,
    pub rows: Vec<i64>,
    pub whole: Vec<i64>,
    /// Under a sharded optimizer: the optimizer on a rank's parts (name,
    /// result types), and the parameter (index) each step updates.
    pub optimizer_shard: Option<(String, Vec<Type<'c>>)>,
    pub step_params: Vec<usize>,
}

/// A block template's once-per-step reductions of the summed gradients.
#[derive(Clone, Copy)]
pub(super) struct Reductions<'r, 'c, 'm> {
    /// The data-parallel reduction (all-reduce, or reduce-scatter under a
    /// sharded optimizer).
    pub gradient: Option<OperationRef<'c, 'm>>,
    /// Under a sharded optimizer: the parameters' all-gather.
    pub gather: Option<OperationRef<'c, 'm>>,
    /// The partial gradients' tensor-parallel sums, by optimizer step.
    pub partial_sums: &'r [(String, OperationRef<'c, 'm>)],
}

/// The tensor-parallel sums of the partial gradients, then the data-
/// parallel reduction of every summed gradient (when the program has
/// them), then each block's optimizer step on zero state; returns per
/// block each step's gradient, new parameter and new state.
#[allow(clippy::too_many_arguments)]
fn optimize<'c, 'g, 'm>(
    l: Lin<'c>,
    entry: &BlockRef<'c, 'g>,
    Reductions { gradient: reduction, gather, partial_sums }: Reductions<'_, 'c, 'm>,
    distribution: &Distribution<'c, 'm>,
    phases: &Phases<'c>,
    blocks: &[usize],
    params: &[Vec<Value<'c, 'g>>],
    mut grads: Vec<Vec<Value<'c, 'g>>>,
) -> Result<Vec<Value<'c, 'g>>, (Option<OperationRef<'c, 'm>>, String)> {
    let built = |e: BuildError| (None, e.to_string());
    // Runs on each block's summed gradient of each step the reduction
    // `pick` names for the step (if any).
    let reduce = |grads: &mut Vec<Vec<Value<'c, 'g>>>,
                  pick: &dyn Fn(&str) -> Option<OperationRef<'c, 'm>>|
     -> Result<(), (Option<OperationRef<'c, 'm>>, String)> {
        for (block, block_grads) in blocks.iter().zip(grads.iter_mut()) {
            for (k, g) in block_grads.iter_mut().enumerate() {
                let step = &phases.steps[k].0;
                let Some(template) = pick(step) else { continue };
                let bytes = Some(shape_of(*g).iter().product::<i64>() * 4);
                let suffix = format!("b{block}.{step}");
                *g = distributed::gradient_reduction(l, entry, template, *g, bytes, &suffix).map_err(|m| (Some(template), m))?;
            }
        }
        Ok(())
    };
    reduce(&mut grads, &|step| partial_sums.iter().find(|(s, _)| s == step).map(|(_, template)| *template))?;
    if let (Some(scatter), Some(gather)) = (reduction, gather) {
        return distributed::optimize_sharded(l, entry, (scatter, gather), distribution, phases, blocks, params, grads);
    }
    reduce(&mut grads, &|_| reduction)?;
    let shape = linalg::type_dims;
    let zeros: Vec<Value<'c, 'g>> =
        phases.states.iter().map(|ty| l.full(entry, &shape(*ty), 0.0)).collect::<Result<_, _>>().map_err(built)?;
    let mut returned = Vec::new();
    for (i, block_grads) in grads.iter().enumerate() {
        let mut call_args = params[i].clone();
        call_args.extend(block_grads.iter().copied());
        call_args.extend(zeros.iter().copied());
        let updated = call(l, entry, &phases.optimizer.0, &call_args, &phases.optimizer.1).map_err(built)?;
        let mut at = 0;
        for (k, (_, n)) in phases.steps.iter().enumerate() {
            returned.push(block_grads[k]);
            returned.extend(updated[at..at + n].iter().copied());
            at += n;
        }
    }
    Ok(returned)
}

fn function_with_interface<'c, 'g>(
    lin: Lin<'c>,
    generated: &'g Module<'c>,
    name: &str,
    args: &[(String, Type<'c>)],
    results: &[(String, Type<'c>)],
    splits: &HashMap<String, Vec<Split>>,
    location: Location<'c>,
) -> Result<BlockRef<'c, 'g>, BuildError> {
    function(lin, generated, name, args, results, splits, location, true)
}
