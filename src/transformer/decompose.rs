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

use melior::{
    ir::{block::BlockLike, operation::OperationLike, BlockRef, Location, Module, OperationRef, RegionLike, Type, TypeLike, Value, ValueLike},
    pass::ExternalPass,
};

use super::{import::{effects, tensor_type}, move_into};
use crate::{
    diagnostics::emit_error,
    dialects::{model, result, BuildError, Builder},
    ir::{defining_op, enum_attr, int_attr, name_of, str_attr, tensor_element, users},
    ods::{InferencePhase, OpKind, Role},
    passes::rewrite::erase,
};

crate::pass_macro::external_pass!(
    "ModelDecomposeTransformer",
    "model-decompose-transformer",
    "Expand coarse decoder training and inference ops into primitive ModelIR ops with explicit dataflow",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    let ops = crate::ir::collect_ops(module);
    let blocks: Vec<OperationRef> = ops.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderTraining)).collect();
    // Served blocks: one function per prefill (with its decode steps).
    let served: Vec<OperationRef> = ops
        .iter()
        .copied()
        .filter(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderInference) && enum_attr::<InferencePhase>(*op, "phase") == Some(InferencePhase::Prefill))
        .collect();
    // Validate and build every replacement into a detached module before
    // touching the input.
    let generated = Module::new(module.location());
    let mut replaced = Vec::new();
    for block in blocks {
        match plan(block, &generated) {
            Ok(function) => replaced.push(function),
            Err(message) => {
                emit_error(block.location(), &format!("'model.decoder_training' op {message}"));
                pass.signal_failure();
                return;
            }
        }
    }
    for prefill in served {
        match plan_inference(prefill, &generated) {
            Ok(function) => replaced.push(function),
            Err(message) => {
                emit_error(prefill.location(), &format!("'model.decoder_inference' op {message}"));
                pass.signal_failure();
                return;
            }
        }
    }
    for function in replaced {
        erase(function);
    }
    move_into(&generated, module);
}

/// Appends ModelIR ops to a block with the typed builders; every op is
/// located inside the coarse op it comes from.
struct Emitter<'c, 'a> {
    b: Builder<'c>,
    block: BlockRef<'c, 'a>,
    at: Location<'c>,
}

type R<T> = Result<T, BuildError>;

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
        self.push(model::Output { value, id, optional: model::OutputOptional { role, ..Default::default() } }.build(&self.b, self.loc(id)))?;
        Ok(())
    }

    fn fork(&self, id: &str, input: Value<'c, 'a>, n: usize) -> R<Vec<Value<'c, 'a>>> {
        let ty = input.r#type();
        self.all(model::Fork { input, id, results: &vec![ty; n], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn layer_norm(&self, id: &str, input: Value<'c, 'a>, scale: Value<'c, 'a>, bias: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        self.one(model::LayerNorm { input, scale, bias, id, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)))
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

    fn dropout(&self, id: &str, input: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        self.one(model::Dropout { input, id, results: &[ty], optional: model::DropoutOptional { effects: Some(effects(&["random_state"])), ..Default::default() } }.build(&self.b, self.loc(id)))
    }

    fn agrad(&self, of: &str, output_grads: &[Value<'c, 'a>], input: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        self.agrad_named(&format!("{of}.agrad"), of, output_grads, input)
    }

    fn agrad_named(&self, id: &str, of: &str, output_grads: &[Value<'c, 'a>], input: Value<'c, 'a>) -> R<Value<'c, 'a>> {
        let ty = input.r#type();
        self.one(model::ActivationGradient { output_grads, input, id, of, results: &[ty], optional: Default::default() }.build(&self.b, self.loc(id)))
    }

    fn wgrad(&self, of: &str, output_grad: Value<'c, 'a>, input: Value<'c, 'a>, results: &[Type<'c>]) -> R<Vec<Value<'c, 'a>>> {
        let id = format!("{of}.wgrad");
        self.all(model::WeightGradient { output_grad, input, id: &id, of, results, optional: Default::default() }.build(&self.b, self.loc(&id)))
    }
}

fn block_of<'c, 'g>(function: OperationRef<'c, 'g>) -> Result<BlockRef<'c, 'g>, String> {
    function.region(0).ok().and_then(|r| r.first_block()).ok_or_else(|| "internal error: a built function has no body".to_string())
}

/// Builds the decomposed replacement of the function holding `block` into
/// `generated`; returns the function to replace.
fn plan<'c, 'a>(block: OperationRef<'c, 'a>, generated: &Module<'c>) -> Result<OperationRef<'c, 'a>, String> {
    let function = block.parent_operation().filter(|f| name_of(*f) == "func.func").ok_or("must be directly in a 'func.func' to be decomposed")?;
    let name = str_attr(function, "sym_name").ok_or("is in a function without a name")?;
    // The function may hold only this block.
    for op in crate::ir::collect_ops(function).into_iter().skip(1) {
        let op_name = name_of(op);
        let belongs = match OpKind::of(op) {
            Some(OpKind::ModelValue) => users(op.result(0).map_err(|e| e.to_string())?).iter().all(|u| OpKind::of(*u) == Some(OpKind::ModelDecoderTraining)),
            Some(OpKind::ModelOutput) => op.operand(0).ok().and_then(defining_op).is_some_and(|d| d.to_raw().ptr == block.to_raw().ptr),
            Some(OpKind::ModelDecoderTraining) => true,
            _ => op_name == "func.return",
        };
        if !belongs {
            return Err(format!("cannot be decomposed: its function also holds '{op_name}' (it must hold only the block's values, the op and its outputs)"));
        }
    }
    let dim = |n: &str| int_attr(block, n).and_then(|v| u64::try_from(v).ok()).ok_or_else(|| format!("has no valid '{n}'"));
    let (h, f, s, a, d, b) = (dim("hidden")?, dim("ffn_hidden")?, dim("seq_len")?, dim("heads")?, dim("head_dim")?, dim("microbatch")?);
    let input = block.operand(0).map_err(|e| e.to_string())?;
    let element = tensor_element(input.r#type()).ok_or("has a non-tensor input")?;
    // Declared values, re-created with their ids, roles and types.
    let mut values = Vec::new();
    for operand in block.operands() {
        let def = defining_op(operand).filter(|d| OpKind::of(*d) == Some(OpKind::ModelValue)).ok_or("has an operand that is not a 'model.value'")?;
        values.push((str_attr(def, "id").unwrap_or_default().to_string(), enum_attr::<Role>(def, "role").unwrap_or(Role::Parameter), operand.r#type()));
    }
    if values.len() != 12 {
        return Err(format!("expected 12 operands (input, 10 parameters, optimizer state), got {}", values.len()));
    }
    let output_id = users(block.result(0).map_err(|e| e.to_string())?)
        .iter()
        .find_map(|u| str_attr(*u, "id").map(str::to_string))
        .unwrap_or_else(|| "block.out".into());
    let b_ = Builder::of(block);
    let new_function = generated.body().append_operation(b_.func(name, &[], &[], function.location()).map_err(|e| e.to_string())?);
    let e = Emitter { b: b_, block: block_of(new_function)?, at: block.location() };
    decomposed(&e, &values, &output_id, Dims { b, s, h, f, a, d }, element).map_err(|e| e.to_string())?;
    Ok(function)
}

struct Dims {
    b: u64,
    s: u64,
    h: u64,
    f: u64,
    a: u64,
    d: u64,
}

fn decomposed<'c, 'a>(e: &Emitter<'c, 'a>, values: &[(String, Role, Type<'c>)], output_id: &str, dims: Dims, dt: Type<'c>) -> R<()> {
    let Dims { b, s, h, f, a, d } = dims;
    let act = tensor_type(&e.b, &[b, s, h], dt);
    let attn_width = tensor_type(&e.b, &[b, s, a * d], dt);
    let scores = tensor_type(&e.b, &[b, a, s, s], dt);
    let ffn = tensor_type(&e.b, &[b, s, f], dt);
    // Values: input, parameters, optimizer state (in coarse operand order).
    let mut v = Vec::new();
    for (value_id, role, ty) in values {
        v.push(e.value(value_id, *role, *ty)?);
    }
    let ty = |i: usize| values[i].2;
    let (x, ln1s, ln1b, wq, wk, wv, wo, ln2s, ln2b, w1, w2, state) = (v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]);

    // Forward.
    let fork1 = e.fork("attn.fork", x, 2)?;
    let n1 = e.layer_norm("attn.ln", fork1[1], ln1s, ln1b)?;
    let qkv = e.fork("attn.qkv_fork", n1, 3)?;
    let q = e.matmul("attn.q", qkv[0], wq, attn_width)?;
    let k = e.matmul("attn.k", qkv[1], wk, attn_width)?;
    let vv = e.matmul("attn.v", qkv[2], wv, attn_width)?;
    let sc = e.batch_matmul("attn.scores", q, k, scores)?;
    let sm = e.softmax("attn.softmax", sc, 3)?;
    let pd = e.dropout("attn.prob_dropout", sm)?;
    let ctx = e.batch_matmul("attn.context", pd, vv, attn_width)?;
    let pj = e.matmul("attn.proj", ctx, wo, act)?;
    let dr1 = e.dropout("attn.dropout", pj)?;
    let h1 = e.add("attn.residual", dr1, fork1[0])?;
    let fork2 = e.fork("mlp.fork", h1, 2)?;
    let n2 = e.layer_norm("mlp.ln", fork2[1], ln2s, ln2b)?;
    let u = e.matmul("mlp.fc1", n2, w1, ffn)?;
    let g = e.gelu("mlp.gelu", u)?;
    let dn = e.matmul("mlp.fc2", g, w2, act)?;
    let dr2 = e.dropout("mlp.dropout", dn)?;
    let y = e.add("mlp.residual", dr2, fork2[0])?;
    e.output(y, output_id, None)?;

    // Backward, from the gradient of the block output.
    let norm = ty(1);
    let dy = e.value(&format!("{output_id}.grad"), Role::ActivationGradient, act)?;
    let d_dr2 = e.agrad("mlp.residual", &[dy], dr2)?;
    let d_dn = e.agrad("mlp.dropout", &[d_dr2], dn)?;
    let d_g = e.agrad("mlp.fc2", &[d_dn], g)?;
    let d_w2 = e.wgrad("mlp.fc2", d_dn, g, &[ty(10)])?[0];
    let d_u = e.agrad("mlp.gelu", &[d_g], u)?;
    let d_n2 = e.agrad("mlp.fc1", &[d_u], n2)?;
    let d_w1 = e.wgrad("mlp.fc1", d_u, n2, &[ty(9)])?[0];
    let d_f2 = e.agrad("mlp.ln", &[d_n2], fork2[1])?;
    let d_ln2 = e.wgrad("mlp.ln", d_n2, fork2[1], &[norm, norm])?;
    let d_h1 = e.agrad("mlp.fork", &[d_f2, dy], h1)?;
    let d_dr1 = e.agrad("attn.residual", &[d_h1], dr1)?;
    let d_pj = e.agrad("attn.dropout", &[d_dr1], pj)?;
    let d_ctx = e.agrad("attn.proj", &[d_pj], ctx)?;
    let d_wo = e.wgrad("attn.proj", d_pj, ctx, &[ty(6)])?[0];
    let d_pd = e.agrad("attn.context", &[d_ctx], pd)?;
    // The context product's second input: same backward op, other operand.
    let d_v = e.agrad_named("attn.context.agrad.v", "attn.context", &[d_ctx], vv)?;
    let d_sm = e.agrad("attn.prob_dropout", &[d_pd], sm)?;
    let d_sc = e.agrad("attn.softmax", &[d_sm], sc)?;
    let d_q = e.agrad("attn.scores", &[d_sc], q)?;
    let d_k = e.agrad_named("attn.scores.agrad.k", "attn.scores", &[d_sc], k)?;
    let d_v_in = e.agrad("attn.v", &[d_v], qkv[2])?;
    let d_wv = e.wgrad("attn.v", d_v, qkv[2], &[ty(5)])?[0];
    let d_k_in = e.agrad("attn.k", &[d_k], qkv[1])?;
    let d_wk = e.wgrad("attn.k", d_k, qkv[1], &[ty(4)])?[0];
    let d_q_in = e.agrad("attn.q", &[d_q], qkv[0])?;
    let d_wq = e.wgrad("attn.q", d_q, qkv[0], &[ty(3)])?[0];
    let d_n1 = e.agrad("attn.qkv_fork", &[d_q_in, d_k_in, d_v_in], n1)?;
    let d_f1 = e.agrad("attn.ln", &[d_n1], fork1[1])?;
    let d_ln1 = e.wgrad("attn.ln", d_n1, fork1[1], &[norm, norm])?;
    let dx = e.agrad("attn.fork", &[d_f1, d_h1], x)?;
    e.output(dx, "block.in.grad", Some(Role::ActivationGradient))?;

    // Optimizer: one step per parameter, threading the flat state.
    let state_ty = ty(11);
    let mut st = state;
    for (step_id, param, p_ty, grad_value) in [
        ("attn.ln.optim", ln1s, norm, d_ln1[0]),
        ("attn.ln.bias.optim", ln1b, norm, d_ln1[1]),
        ("attn.q.optim", wq, ty(3), d_wq),
        ("attn.k.optim", wk, ty(4), d_wk),
        ("attn.v.optim", wv, ty(5), d_wv),
        ("attn.proj.optim", wo, ty(6), d_wo),
        ("mlp.ln.optim", ln2s, norm, d_ln2[0]),
        ("mlp.ln.bias.optim", ln2b, norm, d_ln2[1]),
        ("mlp.fc1.optim", w1, ty(9), d_w1),
        ("mlp.fc2.optim", w2, ty(10), d_w2),
    ] {
        let out = e.all(
            model::OptimizerStep { param, grad: grad_value, state: &[st], id: step_id, results: &[p_ty, state_ty], optional: model::OptimizerStepOptional { effects: Some(effects(&["parameter_update"])), ..Default::default() } }
            .build(&e.b, e.loc(step_id)),
        )?;
        e.output(out[0], &format!("{}.next", step_id.trim_end_matches(".optim")), Some(Role::Parameter))?;
        st = out[1];
    }
    e.output(st, "optimizer.state.next", Some(Role::OptimizerState))?;
    e.push(e.b.func_return(&[], e.at))?;
    Ok(())
}

/// Builds the decomposition of a served block (the function holding the
/// prefill `op` and its decode steps) into `generated`; returns the
/// function to replace.
fn plan_inference<'c, 'a>(prefill: OperationRef<'c, 'a>, generated: &Module<'c>) -> Result<OperationRef<'c, 'a>, String> {
    let function = prefill.parent_operation().filter(|f| name_of(*f) == "func.func").ok_or("must be directly in a 'func.func' to be decomposed")?;
    let name = str_attr(function, "sym_name").ok_or("is in a function without a name")?;
    let mut phases = Vec::new();
    for op in crate::ir::collect_ops(function).into_iter().skip(1) {
        let op_name = name_of(op);
        let belongs = match OpKind::of(op) {
            Some(OpKind::ModelValue) => users(op.result(0).map_err(|e| e.to_string())?).iter().all(|u| OpKind::of(*u) == Some(OpKind::ModelDecoderInference)),
            Some(OpKind::ModelOutput) => op.operand(0).ok().and_then(defining_op).is_some_and(|d| OpKind::of(d) == Some(OpKind::ModelDecoderInference)),
            Some(OpKind::ModelDecoderInference) => {
                phases.push(op);
                true
            }
            _ => op_name == "func.return",
        };
        if !belongs {
            return Err(format!("cannot be decomposed: its function also holds '{op_name}' (it must hold only the served block)"));
        }
    }
    let dim = |op: OperationRef, n: &str| int_attr(op, n).and_then(|v| u64::try_from(v).ok()).ok_or_else(|| format!("has no valid '{n}'"));
    let value_of = |op: OperationRef<'c, 'a>, i: usize| -> Result<(String, Role, Type<'c>), String> {
        let operand = op.operand(i).map_err(|e| e.to_string())?;
        let def = defining_op(operand).filter(|d| OpKind::of(*d) == Some(OpKind::ModelValue)).ok_or("has an operand that is not a 'model.value'")?;
        Ok((str_attr(def, "id").unwrap_or_default().to_string(), enum_attr::<Role>(def, "role").unwrap_or(Role::Parameter), operand.r#type()))
    };
    let b = Builder::of(prefill);
    let new_function = generated.body().append_operation(b.func(name, &[], &[], function.location()).map_err(|e| e.to_string())?);
    let e = Emitter { b, block: block_of(new_function)?, at: prefill.location() };
    // Parameters once, shared by every phase.
    let mut params = Vec::new();
    for i in 1..=10 {
        let (id, role, ty) = value_of(prefill, i)?;
        params.push((e.value(&id, role, ty).map_err(|e| e.to_string())?, ty));
    }
    let mut cache: Option<Value> = None;
    for op in phases {
        let phase = enum_attr::<InferencePhase>(op, "phase").unwrap_or(InferencePhase::Prefill);
        let (input_id, input_role, input_ty) = value_of(op, 0)?;
        let input = e.value(&input_id, input_role, input_ty).map_err(|e| e.to_string())?;
        let (h, f, a, d, bt, q) = (dim(op, "hidden")?, dim(op, "ffn_hidden")?, dim(op, "heads")?, dim(op, "head_dim")?, dim(op, "batch")?, dim(op, "query_tokens")?);
        let kv = dim(op, "kv_heads")?;
        let element = tensor_element(op.operand(0).map_err(|e| e.to_string())?.r#type()).ok_or("has a non-tensor input")?;
        let cache_ty = op.result(1).map_err(|e| e.to_string())?.r#type();
        let gated = params[8].1 != tensor_type(&b, &[h, f], element);
        let e = Emitter { b, block: e.block, at: op.location() };
        let (y, new_cache) = serve_phase(&e, phase.name(), input, &params, cache, cache_ty, ServeDims { b: bt, q, h, f, a, kv, d, gated }, element).map_err(|e| e.to_string())?;
        // Outputs keep the coarse op's output ids.
        for (index, value) in [y, new_cache].into_iter().enumerate() {
            let out = op.result(index).map_err(|e| e.to_string())?;
            for user in users(out) {
                if let Some(id) = str_attr(user, "id") {
                    e.output(value, id, enum_attr::<Role>(user, "role")).map_err(|e| e.to_string())?;
                }
            }
        }
        cache = Some(new_cache);
    }
    e.push(b.func_return(&[], prefill.location())).map_err(|e| e.to_string())?;
    Ok(function)
}

struct ServeDims {
    b: u64,
    q: u64,
    h: u64,
    f: u64,
    a: u64,
    kv: u64,
    d: u64,
    gated: bool,
}

/// The forward primitives of one inference phase; returns (output, cache).
#[allow(clippy::too_many_arguments)]
fn serve_phase<'c, 'a>(
    e: &Emitter<'c, 'a>,
    phase: &str,
    x: Value<'c, 'a>,
    params: &[(Value<'c, 'a>, Type<'c>)],
    cache: Option<Value<'c, 'a>>,
    cache_ty: Type<'c>,
    dims: ServeDims,
    dt: Type<'c>,
) -> R<(Value<'c, 'a>, Value<'c, 'a>)> {
    let ServeDims { b, q, h, f, a, kv, d, gated } = dims;
    let id = |source: &str| format!("{phase}.{source}");
    let width = tensor_type(&e.b, &[b, q, a * d], dt);
    let kv_width = tensor_type(&e.b, &[b, q, kv * d], dt);
    let ffn = tensor_type(&e.b, &[b, q, f], dt);
    let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
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
        model::KvAppend { keys: kk, values: vv, id: &append_id, results: &[cache_ty], optional: model::KvAppendOptional { cache, effects: Some(effects(&["mutation"])), ..Default::default() } }
            .build(&e.b, e.loc(&append_id)),
    )?;
    // Attention reads the whole cache: every cached key and value.
    let sc = e.batch_matmul(&id("attn.scores"), qq, new_cache, scores)?;
    let sm = e.softmax(&id("attn.softmax"), sc, 3)?;
    let pd = e.dropout(&id("attn.prob_dropout"), sm)?;
    let ctx = e.batch_matmul(&id("attn.context"), pd, new_cache, width)?;
    let act = x.r#type();
    let pj = e.matmul(&id("attn.proj"), ctx, p(5), act)?;
    let dr1 = e.dropout(&id("attn.dropout"), pj)?;
    let h1 = e.add(&id("attn.residual"), dr1, fork1[0])?;
    let fork2 = e.fork(&id("mlp.fork"), h1, 2)?;
    let n2 = e.layer_norm(&id("mlp.ln"), fork2[1], p(6), p(7))?;
    let down = if gated {
        let half = tensor_type(&e.b, &[h, f], dt);
        let split_id = id("mlp.fc1.split");
        let parts = e.all(model::Split { input: p(8), id: &split_id, dim: 1, results: &[half, half], optional: Default::default() }.build(&e.b, e.loc(&split_id)))?;
        let gate = e.matmul(&id("mlp.gate"), n2, parts[0], ffn)?;
        let up = e.matmul(&id("mlp.up"), n2, parts[1], ffn)?;
        let swiglu_id = id("mlp.swiglu");
        let g = e.one(model::Swiglu { lhs: gate, rhs: up, id: &swiglu_id, results: &[ffn], optional: Default::default() }.build(&e.b, e.loc(&swiglu_id)))?;
        e.matmul(&id("mlp.down"), g, p(9), act)?
    } else {
        let u = e.matmul(&id("mlp.fc1"), n2, p(8), ffn)?;
        let g = e.gelu(&id("mlp.gelu"), u)?;
        e.matmul(&id("mlp.fc2"), g, p(9), act)?
    };
    let dr2 = e.dropout(&id("mlp.dropout"), down)?;
    let y = e.add(&id("mlp.residual"), dr2, fork2[0])?;
    Ok((y, new_cache))
}
