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

mod linalg;
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
    rules::{Cx, Env},
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
    &[
        DialectHandle::linalg(),
        DialectHandle::tensor(),
        DialectHandle::arith(),
        DialectHandle::scf(),
        // SAFETY: the handle getter has no preconditions.
        unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__math__()) },
    ]
);

/// The name of the whole-step function.
pub const TRAIN_STEP: &str = "train_step";

/// The attribute naming each argument and result.
pub const NAME_ATTRIBUTE: &str = "model.id";

type Failure<'c, 'm> = (OperationRef<'c, 'm>, String);

fn run(module: OperationRef, pass: ExternalPass) {
    let generated = Module::new(module.location());
    match build(module, &generated) {
        Ok(replaced) => {
            for op in replaced {
                erase(op);
            }
            let _ = crate::transforms::transformer::move_into(&generated, module);
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
    // SAFETY: the pass's module lives in its context for the whole pass.
    let context = unsafe { module.context().to_ref() };
    let lin = Lin::new(context, module.location()).map_err(|e| (module, e.to_string()))?;
    for function in &functions {
        block_function(lin, *function, generated).map_err(|(op, m)| (op, m))?;
    }
    if module.attribute(TRAINING_SPEC).is_ok() {
        let spec: TrainingSpec = read_spec(module, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string()))
            .map_err(|e| (module, format!("convert-model-to-linalg: {e}")))?;
        let [block] = functions[..] else {
            return Err((module, format!("convert-model-to-linalg: a training step needs exactly one block function, found {}", functions.len())));
        };
        train_step(lin, &spec, block, generated)?;
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
fn function<'c, 'g>(lin: Lin<'c>, generated: &'g Module<'c>, name: &str, args: &[(String, Type<'c>)], results: &[(String, Type<'c>)], location: Location<'c>, c_interface: bool) -> Result<BlockRef<'c, 'g>, BuildError> {
    let b = &lin.b;
    let names = |items: &[(String, Type<'c>)]| -> Attribute<'c> {
        let dicts: Vec<Attribute<'c>> = items.iter().map(|(n, _)| b.dictionary(&[(NAME_ATTRIBUTE, b.string(n))])).collect();
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
    let op = OperationBuilder::new("func.func", location).add_attributes(&attributes).add_regions([region]).build().map_err(|_| BuildError { op: "func.func" })?;
    let op = generated.body().append_operation(op);
    op.region(0).ok().and_then(|r| r.first_block()).ok_or(BuildError { op: "func.func" })
}

fn arg<'c, 'a>(block: &BlockRef<'c, 'a>, i: usize) -> Result<Value<'c, 'a>, BuildError> {
    block.argument(i).map(Into::into).map_err(|_| BuildError { op: "block argument" })
}

/// The function as written, on tensors: values in, outputs out.
fn block_function<'c, 'm>(lin: Lin<'c>, function: OperationRef<'c, 'm>, generated: &Module<'c>) -> Result<(), Failure<'c, 'm>> {
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
        let mut cx = Cx { lin, block, env: &mut env, forward: &forward };
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

fn function_block<'c, 'g>(lin: Lin<'c>, generated: &'g Module<'c>, name: &str, args: &[(String, Type<'c>)], results: &[(String, Type<'c>)], location: Location<'c>) -> Result<BlockRef<'c, 'g>, BuildError> {
    function(lin, generated, name, args, results, location, false)
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
    let missing = |what: &str| (function, format!("convert-model-to-linalg: the block function has no {what}, so it is not a trained block"));
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

/// `@train_step`: the whole training step of `spec` with `function` as
/// every block (EXECUTION.md "The step").
fn train_step<'c, 'm>(lin: Lin<'c>, spec: &TrainingSpec, function: OperationRef<'c, 'm>, generated: &Module<'c>) -> Result<(), Failure<'c, 'm>> {
    let t = read_trained(function)?;
    let id = |op: OperationRef| str_attr(op, "id").unwrap_or_default().to_string();
    let result_type = |op: OperationRef<'c, 'm>| op.result(0).map(|v| v.r#type()).map_err(|_| (op, "has no result".to_string()));
    let act = shape_of(t.input.result(0).map_err(|_| (t.input, "has no result".to_string()))?.into());
    let (blocks, batch, mb) = (spec.model.blocks, spec.workload.global_batch, spec.workload.microbatch);
    if act.first().copied() != Some(mb as i64) {
        return Err((t.input, format!("the block input's rows ({:?}) are not the spec's microbatch ({mb})", act.first())));
    }
    let whole: Vec<i64> = std::iter::once(batch as i64).chain(act[1..].iter().copied()).collect();
    let whole_ty = lin.tensor(&whole);
    let blocks = usize::try_from(blocks).map_err(|_| (function, "too many blocks".to_string()))?;
    let name = |i: usize, suffix: &str| format!("blocks.{i}.{suffix}");

    // Arguments: every block's parameters, then the batch's input and the
    // gradient of the last block's output.
    let mut args = Vec::new();
    for i in 0..blocks {
        for p in &t.params {
            args.push((name(i, &id(*p)), result_type(*p)?));
        }
    }
    args.push(("block.in".to_string(), whole_ty));
    args.push((format!("{}.grad", "block.out"), whole_ty));
    // Results: the batch's output and input gradient; per block, each
    // optimizer step's gradient, new parameter and new state.
    let mut results = vec![("block.out".to_string(), whole_ty), ("block.in.grad".to_string(), whole_ty)];
    let step_param = |step: OperationRef<'c, 'm>| -> Result<OperationRef<'c, 'm>, Failure<'c, 'm>> {
        let v = step.operand(0).map_err(|_| (step, "has no parameter".to_string()))?;
        crate::ir::read::defining_op(v).filter(|d| t.params.contains(d)).ok_or_else(|| (step, "updates a value that is not a parameter of the block".to_string()))
    };
    for i in 0..blocks {
        for step in &t.optimizer {
            let p = step_param(*step)?;
            let ty = result_type(p)?;
            results.push((name(i, &format!("{}.grad", id(p))), ty));
            results.push((name(i, &id(p)), ty));
            for s in step.operands().skip(2) {
                let state = crate::ir::read::defining_op(s).ok_or((*step, "has a state that is not a value".to_string()))?;
                results.push((name(i, &id(state)), s.r#type()));
            }
        }
    }
    let built = |e: BuildError| (function, e.to_string());
    let loc = function.location();
    let l = lin.at(loc);
    let entry = function_with_interface(l, generated, &args, &results, loc).map_err(built)?;
    let n_params = t.params.len();
    let x_all = arg(&entry, blocks * n_params).map_err(built)?;
    let dy_all = arg(&entry, blocks * n_params + 1).map_err(built)?;
    let grads_of: Vec<Value<'c, 'm>> = t.optimizer.iter().filter_map(|s| s.operand(1).ok()).collect();
    let forward = forward_ops(function);

    // Loop-carried: block.out, block.in.grad, every block's gradients.
    let mut inits = vec![l.empty(&entry, &whole).map_err(built)?, l.empty(&entry, &whole).map_err(built)?];
    for _ in 0..blocks {
        for g in &grads_of {
            inits.push(l.full(&entry, &shape_of(*g), 0.0).map_err(built)?);
        }
    }
    let count = i64::try_from(batch / mb).map_err(|_| (function, "too many microbatches".to_string()))?;
    let (lb, ub, one) = (l.index_constant(&entry, 0).map_err(built)?, l.index_constant(&entry, count).map_err(built)?, l.index_constant(&entry, 1).map_err(built)?);
    let carried: Vec<Type<'c>> = inits.iter().map(|v| v.r#type()).collect();
    let mut body_args = vec![(l.index, loc)];
    body_args.extend(carried.iter().map(|t| (*t, loc)));
    let region = Region::new();
    region.append_block(Block::new(&body_args));
    let mut operands = vec![lb, ub, one];
    operands.extend(inits.iter().copied());
    let for_op = OperationBuilder::new("scf.for", loc).add_operands(&operands).add_results(&carried).add_regions([region]).build().map_err(|_| built(BuildError { op: "scf.for" }))?;
    let for_op = entry.append_operation(for_op);
    let body = for_op.region(0).ok().and_then(|r| r.first_block()).ok_or_else(|| built(BuildError { op: "scf.for" }))?;
    let iv = arg(&body, 0).map_err(built)?;
    let acc = |k: usize| arg(&body, 1 + k);

    let rows_at = l.index_mul(&body, iv, l.index_constant(&body, mb as i64).map_err(built)?).map_err(built)?;
    let offsets = vec![0i64; act.len()];
    let mut x = l.extract(&body, x_all, &offsets, &act, Some(rows_at)).map_err(built)?;
    let mut envs: Vec<Env> = (0..blocks).map(|_| Env::default()).collect();
    let lower_all = |cx: &mut Cx<'_, 'c, '_, 'm>, ops: &[OperationRef<'c, 'm>]| -> Result<(), Failure<'c, 'm>> {
        for op in ops {
            cx.lin = lin.at(op.location());
            rules::lower(cx, *op).map_err(|m| (*op, format!("'{}' op {m}", name_of(*op))))?;
        }
        Ok(())
    };
    for (i, env) in envs.iter_mut().enumerate() {
        bind_params(env, &t.params, &entry, i * n_params)?;
        env.set(t.input.result(0).map_err(|_| (t.input, "has no result".to_string()))?.into(), x);
        let mut cx = Cx { lin: l, block: body, env, forward: &forward };
        lower_all(&mut cx, &t.forward)?;
        x = env.get(t.block_out).map_err(|m| (function, m))?;
    }
    let mut next = vec![l.insert(&body, x, acc(0).map_err(built)?, &offsets, &act, Some(rows_at)).map_err(built)?];
    let mut dy = l.extract(&body, dy_all, &offsets, &act, Some(rows_at)).map_err(built)?;
    for env in envs.iter_mut().rev() {
        env.set(t.output_grad.result(0).map_err(|_| (t.output_grad, "has no result".to_string()))?.into(), dy);
        let mut cx = Cx { lin: l, block: body, env, forward: &forward };
        lower_all(&mut cx, &t.backward)?;
        dy = env.get(t.block_in_grad).map_err(|m| (function, m))?;
    }
    next.push(l.insert(&body, dy, acc(1).map_err(built)?, &offsets, &act, Some(rows_at)).map_err(built)?);
    for (i, env) in envs.iter().enumerate() {
        for (k, g) in grads_of.iter().enumerate() {
            let sum = acc(2 + i * grads_of.len() + k).map_err(built)?;
            let this = env.get(*g).map_err(|m| (function, m))?;
            // In place into the carried sum, so bufferization reuses it.
            let rank = shape_of(this).len();
            let maps = [linalg::identity(rank), linalg::identity(rank)];
            let added = l.generic(&body, &[this], &[sum], &maps, &vec![linalg::Iter::P; rank], |s, a| Ok(vec![s.add(a[1], a[0])?]));
            next.push(added.map_err(built)?[0]);
        }
    }
    body.append_operation(OperationBuilder::new("scf.yield", loc).add_operands(&next).build().map_err(|_| built(BuildError { op: "scf.yield" }))?);
    let summed: Vec<Value<'c, '_>> = for_op.results().map(Into::into).collect();

    // The optimizer, once per block, on the summed gradients and zero state.
    let mut returned = vec![summed[0], summed[1]];
    for i in 0..blocks {
        let mut env = Env::default();
        bind_params(&mut env, &t.params, &entry, i * n_params)?;
        for (k, g) in grads_of.iter().enumerate() {
            env.set(*g, summed[2 + i * grads_of.len() + k]);
        }
        for s in &t.states {
            let v: Value = s.result(0).map_err(|_| (*s, "has no result".to_string()))?.into();
            env.set(v, l.full(&entry, &shape_of(v), 0.0).map_err(built)?);
        }
        let mut cx = Cx { lin: l, block: entry, env: &mut env, forward: &forward };
        lower_all(&mut cx, &t.optimizer)?;
        for (k, step) in t.optimizer.iter().enumerate() {
            returned.push(summed[2 + i * grads_of.len() + k]);
            for r in step.results() {
                returned.push(env.get(r.into()).map_err(|m| (*step, m))?);
            }
        }
    }
    entry.append_operation(lin.b.func_return(&returned, loc).map_err(built)?);
    Ok(())
}

/// Binds a block's parameters to the step's arguments from `first` on.
fn bind_params<'c, 'a, 'm>(env: &mut Env<'c, 'a>, params: &[OperationRef<'c, 'm>], entry: &BlockRef<'c, 'a>, first: usize) -> Result<(), Failure<'c, 'm>> {
    for (k, p) in params.iter().enumerate() {
        let model = p.result(0).map_err(|_| (*p, "has no result".to_string()))?;
        env.set(model.into(), arg(entry, first + k).map_err(|e| (*p, e.to_string()))?);
    }
    Ok(())
}

fn function_with_interface<'c, 'g>(lin: Lin<'c>, generated: &'g Module<'c>, args: &[(String, Type<'c>)], results: &[(String, Type<'c>)], location: Location<'c>) -> Result<BlockRef<'c, 'g>, BuildError> {
    function(lin, generated, TRAIN_STEP, args, results, location, true)
}
