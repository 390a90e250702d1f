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

use std::fmt::Write as _;

use melior::{
    ir::{operation::OperationLike, OperationRef, ValueLike},
    pass::ExternalPass,
};

use super::{binding::quote, import::tensor, Generated};
use crate::{
    diagnostics::emit_error,
    ir::{defining_op, int_attr, name_of, str_attr, tensor_element, type_string, users},
    passes::rewrite::erase,
};

crate::passes::external_pass!(
    "ModelDecomposeTransformer",
    "model-decompose-transformer",
    "Expand coarse decoder training and inference ops into primitive ModelIR ops with explicit dataflow",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    let ops = crate::ir::collect_ops(module);
    let blocks: Vec<OperationRef> = ops.iter().copied().filter(|op| name_of(*op) == "model.decoder_training").collect();
    // Served blocks: one function per prefill (with its decode steps).
    let served: Vec<OperationRef> = ops
        .iter()
        .copied()
        .filter(|op| name_of(*op) == "model.decoder_inference" && str_attr(*op, "phase") == Some("prefill"))
        .collect();
    // Validate and generate everything before touching the module.
    let mut plans = Vec::new();
    for block in blocks {
        match plan(block) {
            Ok(plan) => plans.push(plan),
            Err(message) => {
                emit_error(block.location(), &format!("'model.decoder_training' op {message}"));
                pass.signal_failure();
                return;
            }
        }
    }
    for prefill in served {
        match plan_inference(prefill) {
            Ok(plan) => plans.push(plan),
            Err(message) => {
                emit_error(prefill.location(), &format!("'model.decoder_inference' op {message}"));
                pass.signal_failure();
                return;
            }
        }
    }
    let mut parsed = Vec::new();
    for (function, text) in &plans {
        match Generated::parse(*function, text) {
            Some(generated) => parsed.push(generated),
            None => {
                pass.signal_failure();
                return;
            }
        }
    }
    for ((function, _), generated) in plans.into_iter().zip(parsed) {
        erase(function);
        generated.move_into(module);
    }
}

/// The function to replace and the text of its decomposed replacement.
fn plan<'c, 'a>(block: OperationRef<'c, 'a>) -> Result<(OperationRef<'c, 'a>, String), String> {
    let function = block.parent_operation().filter(|f| name_of(*f) == "func.func").ok_or("must be directly in a 'func.func' to be decomposed")?;
    let name = str_attr(function, "sym_name").ok_or("is in a function without a name")?;
    // The function may hold only this block.
    for op in crate::ir::collect_ops(function).into_iter().skip(1) {
        let op_name = name_of(op);
        let belongs = match op_name.as_str() {
            "model.value" => users(op.result(0).map_err(|e| e.to_string())?).iter().all(|u| name_of(*u) == "model.decoder_training"),
            "model.output" => op.operand(0).ok().and_then(defining_op).is_some_and(|d| d.to_raw().ptr == block.to_raw().ptr),
            "model.decoder_training" | "func.return" => true,
            _ => false,
        };
        if !belongs {
            return Err(format!("cannot be decomposed: its function also holds '{op_name}' (it must hold only the block's values, the op and its outputs)"));
        }
    }
    let dim = |n: &str| int_attr(block, n).and_then(|v| u64::try_from(v).ok()).ok_or_else(|| format!("has no valid '{n}'"));
    let (h, f, s, a, d, b) = (dim("hidden")?, dim("ffn_hidden")?, dim("seq_len")?, dim("heads")?, dim("head_dim")?, dim("microbatch")?);
    let input = block.operand(0).map_err(|e| e.to_string())?;
    let element = tensor_element(input.r#type()).map(type_string).ok_or("has a non-tensor input")?;
    // Declared values, re-created with their ids, roles and types.
    let mut values = Vec::new();
    for operand in block.operands() {
        let def = defining_op(operand).filter(|d| name_of(*d) == "model.value").ok_or("has an operand that is not a 'model.value'")?;
        values.push((
            str_attr(def, "id").unwrap_or_default().to_string(),
            str_attr(def, "role").unwrap_or_default().to_string(),
            type_string(operand.r#type()),
        ));
    }
    if values.len() != 12 {
        return Err(format!("expected 12 operands (input, 10 parameters, optimizer state), got {}", values.len()));
    }
    let output_id = users(block.result(0).map_err(|e| e.to_string())?)
        .iter()
        .find_map(|u| str_attr(*u, "id").map(str::to_string))
        .unwrap_or_else(|| "block.out".into());
    Ok((function, decomposed_text(name, &values, &output_id, Dims { b, s, h, f, a, d }, &element, block)))
}

struct Dims {
    b: u64,
    s: u64,
    h: u64,
    f: u64,
    a: u64,
    d: u64,
}

/// Emits ModelIR lines with a fresh SSA name each.
struct Emitter {
    text: String,
    next: usize,
    location: String,
}

impl Emitter {
    /// `%vN = "op"(operands) {attrs} : (operand types) -> result`; returns `%vN`.
    fn op(&mut self, name: &str, operands: &[(&str, &str)], attrs: &str, results: &[&str]) -> Vec<String> {
        let names: Vec<String> = results.iter().map(|_| {
            let n = format!("%v{}", self.next);
            self.next += 1;
            n
        }).collect();
        let lhs = if names.is_empty() { String::new() } else { format!("{} = ", names.join(", ")) };
        let args: Vec<&str> = operands.iter().map(|(v, _)| *v).collect();
        let types: Vec<&str> = operands.iter().map(|(_, t)| *t).collect();
        let result_types = match results {
            [] => "()".to_string(),
            [one] => (*one).to_string(),
            many => format!("({})", many.join(", ")),
        };
        let _ = writeln!(
            self.text,
            "    {lhs}\"{name}\"({}) {{{attrs}}} : ({}) -> {result_types} {}",
            args.join(", "),
            types.join(", "),
            self.location
        );
        names
    }
}

fn decomposed_text(function: &str, values: &[(String, String, String)], output_id: &str, dims: Dims, dt: &str, block: OperationRef) -> String {
    let Dims { b, s, h, f, a, d } = dims;
    let act = tensor(&[b, s, h], dt);
    let attn_width = tensor(&[b, s, a * d], dt);
    let scores = tensor(&[b, a, s, s], dt);
    let ffn = tensor(&[b, s, f], dt);
    let id = |i: &str| format!("id = {}", quote(i));
    let mut e = Emitter { text: String::new(), next: 0, location: super::located("block", block.location()) };
    let _ = writeln!(e.text, "module {{\n  func.func @{function}() {{");
    // Values: input, parameters, optimizer state (in coarse operand order).
    let mut v = Vec::new();
    for (value_id, role, ty) in values {
        v.push(e.op("model.value", &[], &format!("{}, role = {}", id(value_id), quote(role)), &[ty])[0].clone());
    }
    let ty = |i: usize| values[i].2.as_str();
    let (x, ln1s, ln1b, wq, wk, wv, wo, ln2s, ln2b, w1, w2, state) =
        (&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11]);
    let norm = ty(1);

    // Forward.
    let fork1 = e.op("model.fork", &[(x, &act)], &id("attn.fork"), &[&act, &act]);
    let n1 = e.op("model.layer_norm", &[(&fork1[1], &act), (ln1s, norm), (ln1b, norm)], &id("attn.ln"), &[&act])[0].clone();
    let qkv = e.op("model.fork", &[(&n1, &act)], &id("attn.qkv_fork"), &[&act, &act, &act]);
    let q = e.op("model.matmul", &[(&qkv[0], &act), (wq, ty(3))], &id("attn.q"), &[&attn_width])[0].clone();
    let k = e.op("model.matmul", &[(&qkv[1], &act), (wk, ty(4))], &id("attn.k"), &[&attn_width])[0].clone();
    let vv = e.op("model.matmul", &[(&qkv[2], &act), (wv, ty(5))], &id("attn.v"), &[&attn_width])[0].clone();
    let sc = e.op("model.batch_matmul", &[(&q, &attn_width), (&k, &attn_width)], &id("attn.scores"), &[&scores])[0].clone();
    let sm = e.op("model.softmax", &[(&sc, &scores)], &format!("{}, dim = 3 : i64", id("attn.softmax")), &[&scores])[0].clone();
    let pd = e.op("model.dropout", &[(&sm, &scores)], &format!("{}, effects = [\"random_state\"]", id("attn.prob_dropout")), &[&scores])[0].clone();
    let ctx = e.op("model.batch_matmul", &[(&pd, &scores), (&vv, &attn_width)], &id("attn.context"), &[&attn_width])[0].clone();
    let pj = e.op("model.matmul", &[(&ctx, &attn_width), (wo, ty(6))], &id("attn.proj"), &[&act])[0].clone();
    let dr1 = e.op("model.dropout", &[(&pj, &act)], &format!("{}, effects = [\"random_state\"]", id("attn.dropout")), &[&act])[0].clone();
    let h1 = e.op("model.add", &[(&dr1, &act), (&fork1[0], &act)], &id("attn.residual"), &[&act])[0].clone();
    let fork2 = e.op("model.fork", &[(&h1, &act)], &id("mlp.fork"), &[&act, &act]);
    let n2 = e.op("model.layer_norm", &[(&fork2[1], &act), (ln2s, norm), (ln2b, norm)], &id("mlp.ln"), &[&act])[0].clone();
    let u = e.op("model.matmul", &[(&n2, &act), (w1, ty(9))], &id("mlp.fc1"), &[&ffn])[0].clone();
    let g = e.op("model.gelu", &[(&u, &ffn)], &id("mlp.gelu"), &[&ffn])[0].clone();
    let dn = e.op("model.matmul", &[(&g, &ffn), (w2, ty(10))], &id("mlp.fc2"), &[&act])[0].clone();
    let dr2 = e.op("model.dropout", &[(&dn, &act)], &format!("{}, effects = [\"random_state\"]", id("mlp.dropout")), &[&act])[0].clone();
    let y = e.op("model.add", &[(&dr2, &act), (&fork2[0], &act)], &id("mlp.residual"), &[&act])[0].clone();
    e.op("model.output", &[(&y, &act)], &id(output_id), &[]);

    // Backward, from the gradient of the block output.
    let grad = |e: &mut Emitter, of: &str, output_grads: &[(&str, &str)], input: (&str, &str)| -> String {
        let mut operands = output_grads.to_vec();
        operands.push(input);
        e.op("model.activation_gradient", &operands, &format!("{}, of = {}", id(&format!("{of}.agrad")), quote(of)), &[input.1])[0].clone()
    };
    let wgrad = |e: &mut Emitter, of: &str, output_grad: (&str, &str), input: (&str, &str), results: &[&str]| -> Vec<String> {
        e.op("model.weight_gradient", &[output_grad, input], &format!("{}, of = {}", id(&format!("{of}.wgrad")), quote(of)), results)
    };
    let dy = e.op("model.value", &[], &format!("{}, role = \"activation_gradient\"", id(&format!("{output_id}.grad"))), &[&act])[0].clone();
    let d_dr2 = grad(&mut e, "mlp.residual", &[(&dy, &act)], (&dr2, &act));
    let d_dn = grad(&mut e, "mlp.dropout", &[(&d_dr2, &act)], (&dn, &act));
    let d_g = grad(&mut e, "mlp.fc2", &[(&d_dn, &act)], (&g, &ffn));
    let d_w2 = wgrad(&mut e, "mlp.fc2", (&d_dn, &act), (&g, &ffn), &[ty(10)])[0].clone();
    let d_u = grad(&mut e, "mlp.gelu", &[(&d_g, &ffn)], (&u, &ffn));
    let d_n2 = grad(&mut e, "mlp.fc1", &[(&d_u, &ffn)], (&n2, &act));
    let d_w1 = wgrad(&mut e, "mlp.fc1", (&d_u, &ffn), (&n2, &act), &[ty(9)])[0].clone();
    let d_f2 = grad(&mut e, "mlp.ln", &[(&d_n2, &act)], (&fork2[1], &act));
    let d_ln2 = wgrad(&mut e, "mlp.ln", (&d_n2, &act), (&fork2[1], &act), &[norm, norm]);
    let d_h1 = grad(&mut e, "mlp.fork", &[(&d_f2, &act), (&dy, &act)], (&h1, &act));
    let d_dr1 = grad(&mut e, "attn.residual", &[(&d_h1, &act)], (&dr1, &act));
    let d_pj = grad(&mut e, "attn.dropout", &[(&d_dr1, &act)], (&pj, &act));
    let d_ctx = grad(&mut e, "attn.proj", &[(&d_pj, &act)], (&ctx, &attn_width));
    let d_wo = wgrad(&mut e, "attn.proj", (&d_pj, &act), (&ctx, &attn_width), &[ty(6)])[0].clone();
    let d_pd = grad(&mut e, "attn.context", &[(&d_ctx, &attn_width)], (&pd, &scores));
    // The context product's second input: same backward op, other operand.
    let d_v = e.op("model.activation_gradient", &[(&d_ctx, &attn_width), (&vv, &attn_width)], &format!("{}, of = \"attn.context\"", id("attn.context.agrad.v")), &[&attn_width])[0].clone();
    let d_sm = grad(&mut e, "attn.prob_dropout", &[(&d_pd, &scores)], (&sm, &scores));
    let d_sc = grad(&mut e, "attn.softmax", &[(&d_sm, &scores)], (&sc, &scores));
    let d_q = grad(&mut e, "attn.scores", &[(&d_sc, &scores)], (&q, &attn_width));
    let d_k = e.op("model.activation_gradient", &[(&d_sc, &scores), (&k, &attn_width)], &format!("{}, of = \"attn.scores\"", id("attn.scores.agrad.k")), &[&attn_width])[0].clone();
    let d_v_in = grad(&mut e, "attn.v", &[(&d_v, &attn_width)], (&qkv[2], &act));
    let d_wv = wgrad(&mut e, "attn.v", (&d_v, &attn_width), (&qkv[2], &act), &[ty(5)])[0].clone();
    let d_k_in = grad(&mut e, "attn.k", &[(&d_k, &attn_width)], (&qkv[1], &act));
    let d_wk = wgrad(&mut e, "attn.k", (&d_k, &attn_width), (&qkv[1], &act), &[ty(4)])[0].clone();
    let d_q_in = grad(&mut e, "attn.q", &[(&d_q, &attn_width)], (&qkv[0], &act));
    let d_wq = wgrad(&mut e, "attn.q", (&d_q, &attn_width), (&qkv[0], &act), &[ty(3)])[0].clone();
    let d_n1 = grad(&mut e, "attn.qkv_fork", &[(&d_q_in, &act), (&d_k_in, &act), (&d_v_in, &act)], (&n1, &act));
    let d_f1 = grad(&mut e, "attn.ln", &[(&d_n1, &act)], (&fork1[1], &act));
    let d_ln1 = wgrad(&mut e, "attn.ln", (&d_n1, &act), (&fork1[1], &act), &[norm, norm]);
    let dx = grad(&mut e, "attn.fork", &[(&d_f1, &act), (&d_h1, &act)], (x, &act));
    e.op("model.output", &[(&dx, &act)], &format!("{}, role = \"activation_gradient\"", id("block.in.grad")), &[]);

    // Optimizer: one step per parameter, threading the flat state.
    let state_ty = ty(11);
    let mut st = state.to_string();
    for (step_id, param, p_ty, grad_value) in [
        ("attn.ln.optim", ln1s, norm, &d_ln1[0]),
        ("attn.ln.bias.optim", ln1b, norm, &d_ln1[1]),
        ("attn.q.optim", wq, ty(3), &d_wq),
        ("attn.k.optim", wk, ty(4), &d_wk),
        ("attn.v.optim", wv, ty(5), &d_wv),
        ("attn.proj.optim", wo, ty(6), &d_wo),
        ("mlp.ln.optim", ln2s, norm, &d_ln2[0]),
        ("mlp.ln.bias.optim", ln2b, norm, &d_ln2[1]),
        ("mlp.fc1.optim", w1, ty(9), &d_w1),
        ("mlp.fc2.optim", w2, ty(10), &d_w2),
    ] {
        let out = e.op(
            "model.optimizer_step",
            &[(param, p_ty), (grad_value, p_ty), (&st, state_ty)],
            &format!("{}, effects = [\"parameter_update\"]", id(step_id)),
            &[p_ty, state_ty],
        );
        e.op("model.output", &[(&out[0], p_ty)], &format!("{}, role = \"parameter\"", id(&format!("{}.next", step_id.trim_end_matches(".optim")))), &[]);
        st = out[1].clone();
    }
    e.op("model.output", &[(&st, state_ty)], &format!("{}, role = \"optimizer_state\"", id("optimizer.state.next")), &[]);
    let _ = writeln!(e.text, "    return\n  }}\n}}");
    e.text
}

/// Plans the decomposition of a served block: the function holding the
/// prefill `op` (and its decode steps).
fn plan_inference<'c, 'a>(prefill: OperationRef<'c, 'a>) -> Result<(OperationRef<'c, 'a>, String), String> {
    let function = prefill.parent_operation().filter(|f| name_of(*f) == "func.func").ok_or("must be directly in a 'func.func' to be decomposed")?;
    let name = str_attr(function, "sym_name").ok_or("is in a function without a name")?;
    let mut phases = Vec::new();
    for op in crate::ir::collect_ops(function).into_iter().skip(1) {
        let op_name = name_of(op);
        let belongs = match op_name.as_str() {
            "model.value" => users(op.result(0).map_err(|e| e.to_string())?).iter().all(|u| name_of(*u) == "model.decoder_inference"),
            "model.output" => op.operand(0).ok().and_then(defining_op).is_some_and(|d| name_of(d) == "model.decoder_inference"),
            "model.decoder_inference" => {
                phases.push(op);
                true
            }
            "func.return" => true,
            _ => false,
        };
        if !belongs {
            return Err(format!("cannot be decomposed: its function also holds '{op_name}' (it must hold only the served block)"));
        }
    }
    let dim = |op: OperationRef, n: &str| int_attr(op, n).and_then(|v| u64::try_from(v).ok()).ok_or_else(|| format!("has no valid '{n}'"));
    let value_of = |op: OperationRef, i: usize| -> Result<(String, String, String), String> {
        let operand = op.operand(i).map_err(|e| e.to_string())?;
        let def = defining_op(operand).filter(|d| name_of(*d) == "model.value").ok_or("has an operand that is not a 'model.value'")?;
        Ok((str_attr(def, "id").unwrap_or_default().to_string(), str_attr(def, "role").unwrap_or_default().to_string(), type_string(operand.r#type())))
    };
    let mut e = Emitter { text: String::new(), next: 0, location: super::located("block", prefill.location()) };
    let _ = writeln!(e.text, "module {{\n  func.func @{name}() {{");
    // Parameters once, shared by every phase.
    let mut params = Vec::new();
    for i in 1..=10 {
        let (id, role, ty) = value_of(prefill, i)?;
        let ssa = e.op("model.value", &[], &format!("id = {}, role = {}", quote(&id), quote(&role)), &[&ty])[0].clone();
        params.push((ssa, ty));
    }
    let mut cache: Option<(String, String)> = None;
    for op in phases {
        let phase = str_attr(op, "phase").unwrap_or_default().to_string();
        let (input_id, input_role, input_ty) = value_of(op, 0)?;
        let input = e.op("model.value", &[], &format!("id = {}, role = {}", quote(&input_id), quote(&input_role)), &[&input_ty])[0].clone();
        let (h, f, a, d, b, q) = (dim(op, "hidden")?, dim(op, "ffn_hidden")?, dim(op, "heads")?, dim(op, "head_dim")?, dim(op, "batch")?, dim(op, "query_tokens")?);
        let kv = dim(op, "kv_heads")?;
        let element = tensor_element(op.operand(0).map_err(|e| e.to_string())?.r#type()).map(type_string).ok_or("has a non-tensor input")?;
        let cache_ty = type_string(op.result(1).map_err(|e| e.to_string())?.r#type());
        let gated = params[8].1 != tensor(&[h, f], &element);
        let result = serve_phase(&mut e, &phase, &input, &params, cache.as_ref(), &cache_ty, ServeDims { b, q, h, f, a, kv, d, gated }, &element);
        // Outputs keep the coarse op's output ids.
        for (index, value) in [&result.0, &result.1].into_iter().enumerate() {
            let out = op.result(index).map_err(|e| e.to_string())?;
            for user in users(out) {
                if let Some(id) = str_attr(user, "id") {
                    let ty = type_string(out.r#type());
                    let role = str_attr(user, "role").map_or_else(String::new, |r| format!(", role = {}", quote(r)));
                    e.op("model.output", &[(value, &ty)], &format!("id = {}{role}", quote(id)), &[]);
                }
            }
        }
        cache = Some((result.1, cache_ty));
    }
    let _ = writeln!(e.text, "    return\n  }}\n}}");
    Ok((function, e.text))
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
fn serve_phase(
    e: &mut Emitter,
    phase: &str,
    x: &str,
    params: &[(String, String)],
    cache: Option<&(String, String)>,
    cache_ty: &str,
    dims: ServeDims,
    dt: &str,
) -> (String, String) {
    let ServeDims { b, q, h, f, a, kv, d, gated } = dims;
    let id = |source: &str| format!("id = {}", quote(&format!("{phase}.{source}")));
    let act = tensor(&[b, q, h], dt);
    let width = tensor(&[b, q, a * d], dt);
    let kv_width = tensor(&[b, q, kv * d], dt);
    let ffn = tensor(&[b, q, f], dt);
    let scores_ty = format!("tensor<{b}x{a}x{q}x?x{dt}>");
    let p = |i: usize| (params[i].0.as_str(), params[i].1.as_str());
    let fork1 = e.op("model.fork", &[(x, &act)], &id("attn.fork"), &[&act, &act]);
    let n1 = e.op("model.layer_norm", &[(&fork1[1], &act), p(0), p(1)], &id("attn.ln"), &[&act])[0].clone();
    let qkv = e.op("model.fork", &[(&n1, &act)], &id("attn.qkv_fork"), &[&act, &act, &act]);
    let qq = e.op("model.matmul", &[(&qkv[0], &act), p(2)], &id("attn.q"), &[&width])[0].clone();
    let kk = e.op("model.matmul", &[(&qkv[1], &act), p(3)], &id("attn.k"), &[&kv_width])[0].clone();
    let vv = e.op("model.matmul", &[(&qkv[2], &act), p(4)], &id("attn.v"), &[&kv_width])[0].clone();
    let mut append_operands: Vec<(&str, &str)> = Vec::new();
    if let Some((previous, previous_ty)) = cache {
        append_operands.push((previous, previous_ty));
    }
    append_operands.push((&kk, &kv_width));
    append_operands.push((&vv, &kv_width));
    let new_cache = e.op("model.kv_append", &append_operands, &format!("{}, effects = [\"mutation\"]", id("attn.kv_append")), &[cache_ty])[0].clone();
    // Attention reads the whole cache: every cached key and value.
    let sc = e.op("model.batch_matmul", &[(&qq, &width), (&new_cache, cache_ty)], &id("attn.scores"), &[&scores_ty])[0].clone();
    let sm = e.op("model.softmax", &[(&sc, &scores_ty)], &format!("{}, dim = 3 : i64", id("attn.softmax")), &[&scores_ty])[0].clone();
    let pd = e.op("model.dropout", &[(&sm, &scores_ty)], &format!("{}, effects = [\"random_state\"]", id("attn.prob_dropout")), &[&scores_ty])[0].clone();
    let ctx = e.op("model.batch_matmul", &[(&pd, &scores_ty), (&new_cache, cache_ty)], &id("attn.context"), &[&width])[0].clone();
    let pj = e.op("model.matmul", &[(&ctx, &width), p(5)], &id("attn.proj"), &[&act])[0].clone();
    let dr1 = e.op("model.dropout", &[(&pj, &act)], &format!("{}, effects = [\"random_state\"]", id("attn.dropout")), &[&act])[0].clone();
    let h1 = e.op("model.add", &[(&dr1, &act), (&fork1[0], &act)], &id("attn.residual"), &[&act])[0].clone();
    let fork2 = e.op("model.fork", &[(&h1, &act)], &id("mlp.fork"), &[&act, &act]);
    let n2 = e.op("model.layer_norm", &[(&fork2[1], &act), p(6), p(7)], &id("mlp.ln"), &[&act])[0].clone();
    let down = if gated {
        let half = tensor(&[h, f], dt);
        let parts = e.op("model.split", &[p(8)], &format!("{}, dim = 1 : i64", id("mlp.fc1.split")), &[&half, &half]);
        let gate = e.op("model.matmul", &[(&n2, &act), (&parts[0], &half)], &id("mlp.gate"), &[&ffn])[0].clone();
        let up = e.op("model.matmul", &[(&n2, &act), (&parts[1], &half)], &id("mlp.up"), &[&ffn])[0].clone();
        let g = e.op("model.swiglu", &[(&gate, &ffn), (&up, &ffn)], &id("mlp.swiglu"), &[&ffn])[0].clone();
        e.op("model.matmul", &[(&g, &ffn), p(9)], &id("mlp.down"), &[&act])[0].clone()
    } else {
        let u = e.op("model.matmul", &[(&n2, &act), p(8)], &id("mlp.fc1"), &[&ffn])[0].clone();
        let g = e.op("model.gelu", &[(&u, &ffn)], &id("mlp.gelu"), &[&ffn])[0].clone();
        e.op("model.matmul", &[(&g, &ffn), p(9)], &id("mlp.fc2"), &[&act])[0].clone()
    };
    let dr2 = e.op("model.dropout", &[(&down, &act)], &format!("{}, effects = [\"random_state\"]", id("mlp.dropout")), &[&act])[0].clone();
    let y = e.op("model.add", &[(&dr2, &act), (&fork2[0], &act)], &id("mlp.residual"), &[&act])[0].clone();
    (y, new_cache)
}
