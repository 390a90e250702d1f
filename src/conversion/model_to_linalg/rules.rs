//! What each `model` op computes, as `linalg` on tensors: one rule per op
//! kind, forward and backward each written out from EXECUTION.md's math.
//! A gradient op reads the forward op it names (`of`): its operands and
//! results are already lowered (the forward ops come first), so a rule
//! finds them in the environment.

use std::collections::HashMap;

use melior::ir::{operation::OperationLike, BlockRef, OperationRef, Value, ValueLike};

use super::linalg::{dims, identity, real, shape_of, Combine, Iter, Lin, Scalar, R};
use crate::ir::{
    ods::{OpKind, OptimizerKind},
    read::{enum_attr, int_attr, name_of, str_attr},
};

/// The norms' default epsilon (EXECUTION.md).
const NORM_EPS: f64 = 1e-5;

/// Lowered values of the ModelIR values they stand for (by handle).
#[derive(Default)]
pub(super) struct Env<'c, 'a> {
    values: HashMap<usize, Value<'c, 'a>>,
}

impl<'c, 'a> Env<'c, 'a> {
    pub fn set(&mut self, model: Value, lowered: Value<'c, 'a>) {
        self.values.insert(model.to_raw().ptr as usize, lowered);
    }

    pub fn get(&self, model: Value) -> Result<Value<'c, 'a>, String> {
        self.values.get(&(model.to_raw().ptr as usize)).copied().ok_or_else(|| "uses a value that was not lowered before it".to_string())
    }
}

/// Where one op's lowering goes: the block, the environment, the forward
/// ops by id (for gradients).
pub(super) struct Cx<'x, 'c, 'a, 'm> {
    pub lin: Lin<'c>,
    pub block: BlockRef<'c, 'a>,
    pub env: &'x mut Env<'c, 'a>,
    pub forward: &'x HashMap<String, OperationRef<'c, 'm>>,
    /// Where outlined lowerings go; `None` lowers in place.
    pub outliner: Option<&'x Outliner<'c, 'a>>,
}

/// Outlined lowerings: one private function per distinct op (kind,
/// attributes, types; a gradient also by its forward op's), so a block's
/// ops compile once however often the step calls them, and every function
/// stays small for LLVM (whose loop passes are superlinear in a function's
/// loops). Marked `noinline` so LLVM keeps them apart.
pub(super) struct Outliner<'c, 'g> {
    pub module: BlockRef<'c, 'g>,
    built: std::cell::RefCell<HashMap<String, (String, Vec<melior::ir::Type<'c>>)>>,
}

impl<'c, 'g> Outliner<'c, 'g> {
    pub fn new(module: BlockRef<'c, 'g>) -> Self {
        Self { module, built: std::cell::RefCell::default() }
    }
}

/// The ModelIR values an op's lowering reads: its operands, and for a
/// gradient the operands and results of the forward op it names.
fn inputs<'c, 'm>(cx: &Cx<'_, 'c, '_, 'm>, op: OperationRef<'c, 'm>) -> Result<Vec<Value<'c, 'm>>, String> {
    let mut values: Vec<Value<'c, 'm>> = op.operands().collect();
    if matches!(OpKind::of(op), Some(OpKind::ModelActivationGradient | OpKind::ModelWeightGradient)) {
        let (forward, _) = source(cx, op)?;
        values.extend(forward.operands());
        values.extend(forward.results().map(Value::from));
    }
    Ok(values)
}

/// What makes two ops' lowerings the same function.
fn key(cx: &Cx, op: OperationRef, inputs: &[Value]) -> Result<String, String> {
    let attributes = |op: OperationRef| -> String {
        let mut parts: Vec<String> = (0..op.attribute_count())
            .filter_map(|i| op.attribute_at(i).ok())
            .filter(|(name, _)| !["id", "of", "effects"].contains(&crate::ir::raw::identifier_str(*name)))
            .map(|(name, value)| format!("{}={}", crate::ir::raw::identifier_str(name), crate::ir::read::attribute_text(value)))
            .collect();
        parts.sort();
        parts.join(",")
    };
    let mut key = format!("{}[{}]", name_of(op), attributes(op));
    if matches!(OpKind::of(op), Some(OpKind::ModelActivationGradient | OpKind::ModelWeightGradient)) {
        let (forward, wrt) = source(cx, op)?;
        key.push_str(&format!(" of {}[{}] wrt {wrt} grads {}", name_of(forward), attributes(forward), op.operand_count() - 1));
    }
    // The lowered types: a rank's shards differ from the ModelIR's types.
    for v in inputs {
        key.push(' ');
        key.push_str(&crate::ir::read::type_string(cx.env.get(*v)?.r#type()));
    }
    Ok(key)
}

/// Whether an op's lowering is a value passed through (nothing to outline).
fn passes_through(cx: &Cx, op: OperationRef) -> bool {
    match OpKind::of(op) {
        Some(OpKind::ModelFork | OpKind::ModelDropout) => true,
        Some(OpKind::ModelActivationGradient) => {
            source(cx, op).is_ok_and(|(f, _)| matches!(OpKind::of(f), Some(OpKind::ModelAdd | OpKind::ModelDropout | OpKind::ModelBiasAdd)))
                && op.operand_count() == 2
        }
        _ => false,
    }
}

/// Lowers one ModelIR compute op (not `model.value`/`model.output`, which
/// the caller binds) and records its results in the environment: as a call
/// of its outlined function when `cx` has an outliner, in place otherwise.
pub(super) fn lower<'c, 'g, 'm>(cx: &mut Cx<'_, 'c, 'g, 'm>, op: OperationRef<'c, 'm>) -> Result<(), String> {
    let Some(outliner) = cx.outliner else { return lower_inline(cx, op) };
    if passes_through(cx, op) {
        return lower_inline(cx, op);
    }
    let values = inputs(cx, op)?;
    let key = key(cx, op, &values)?;
    let known = outliner.built.borrow().get(&key).cloned();
    let (name, result_types) = match known {
        Some(built) => built,
        None => {
            let name = format!("__model.{}.{}", name_of(op).trim_start_matches("model."), outliner.built.borrow().len());
            let result_types = outline(cx, outliner, op, &values, &name)?;
            outliner.built.borrow_mut().insert(key, (name.clone(), result_types.clone()));
            (name, result_types)
        }
    };
    let mut args = Vec::new();
    for v in &values {
        args.push(cx.env.get(*v)?);
    }
    let call = melior::ir::operation::OperationBuilder::new("func.call", cx.lin.loc)
        .add_operands(&args)
        .add_results(&result_types)
        .add_attributes(&[(melior::ir::Identifier::new(cx.lin.ctx, "callee"), cx.lin.b.symbol(&name))])
        .build()
        .map_err(|_| "cannot call its lowering".to_string())?;
    let results = cx.lin.push(&cx.block, Ok(call), "func.call")?;
    for (model, lowered) in op.results().zip(results) {
        cx.env.set(model.into(), lowered);
    }
    Ok(())
}

/// `func.func private @name(inputs) -> results` holding `op`'s lowering;
/// returns the result types, those of the lowering (the op's own, or a
/// shard's when the operands are shards).
fn outline<'c, 'g, 'm>(
    cx: &Cx<'_, 'c, 'g, 'm>,
    outliner: &Outliner<'c, 'g>,
    op: OperationRef<'c, 'm>,
    values: &[Value<'c, 'm>],
    name: &str,
) -> Result<Vec<melior::ir::Type<'c>>, String> {
    use melior::ir::{block::BlockLike, RegionLike};
    let lin = cx.lin;
    let b = &lin.b;
    // The lowered types (a rank's shards are not the ModelIR's types).
    let inputs: Vec<melior::ir::Type<'c>> = values.iter().map(|v| cx.env.get(*v).map(|l| l.r#type())).collect::<Result<_, _>>()?;
    let region = melior::ir::Region::new();
    let body = region.append_block(melior::ir::Block::new(&inputs.iter().map(|t| (*t, lin.loc)).collect::<Vec<_>>()));
    let mut env = Env::default();
    for (i, v) in values.iter().enumerate() {
        env.set(*v, body.argument(i).map_err(|_| "cannot outline its lowering")?.into());
    }
    let mut inner = Cx { lin, block: body, env: &mut env, forward: cx.forward, outliner: None };
    lower_inline(&mut inner, op)?;
    let mut returned = Vec::new();
    for r in op.results() {
        returned.push(env.get(r.into())?);
    }
    let results: Vec<melior::ir::Type<'c>> = returned.iter().map(|v| v.r#type()).collect();
    body.append_operation(b.func_return(&returned, lin.loc)?);
    let function = lin.private_function(name, &inputs, &results, region, true).map_err(|_| "cannot outline its lowering".to_string())?;
    outliner.module.append_operation(function);
    Ok(results)
}

/// Lowers `op` into `cx.block`.
fn lower_inline(cx: &mut Cx, op: OperationRef) -> Result<(), String> {
    let kind = OpKind::of(op).ok_or_else(|| format!("'{}' is not a model op", name_of(op)))?;
    let operand = |i: usize| op.operand(i).map_err(|_| format!("has no operand #{i}"));
    let mut args = Vec::new();
    for i in 0..op.operand_count() {
        args.push(cx.env.get(operand(i)?)?);
    }
    let results: Vec<Value> = match kind {
        OpKind::ModelFork => vec![args[0]; op.result_count()],
        OpKind::ModelAdd => vec![elementwise(cx, &args, |s, a| s.add(a[0], a[1]))?],
        OpKind::ModelGelu => vec![elementwise(cx, &args, |s, a| gelu(s, a[0]))?],
        OpKind::ModelRelu => vec![elementwise(cx, &args, |s, a| s.max(a[0], s.constant(0.0)?))?],
        OpKind::ModelSilu => vec![elementwise(cx, &args, |s, a| silu(s, a[0]))?],
        OpKind::ModelBiasAdd => {
            let shape = shape_of(args[0]);
            let r = shape.len();
            vec![cx.lin.map_n(&cx.block, &[(args[0], identity(r)), (args[1], last_map(r))], &shape, |s, a| s.add(a[0], a[1]))?]
        }
        OpKind::ModelSwiglu => vec![elementwise(cx, &args, |s, a| s.mul(silu(s, a[0])?, a[1]))?],
        OpKind::ModelDropout => vec![args[0]],
        OpKind::ModelMatmul => vec![matmul(cx, args[0], args[1], false)?],
        OpKind::ModelLayerNorm => vec![layer_norm(cx, args[0], args[1], args[2], eps(op))?],
        OpKind::ModelRmsNorm => vec![rms_norm(cx, args[0], args[1], eps(op))?],
        OpKind::ModelSoftmax => {
            let rank = shape_of(args[0]).len();
            if int_attr(op, "dim") != Some(rank as i64 - 1) {
                return Err(format!("lowers softmax over the last dimension ({}) only", rank - 1));
            }
            vec![softmax(cx, args[0])?]
        }
        OpKind::ModelAttentionScores => {
            vec![scores(
                cx,
                &heads(op, args[0], args[1], false)?,
                args[0],
                args[1],
                real_attr(op, "scale")?,
                op.attribute("causal").is_ok(),
            )?]
        }
        OpKind::ModelAttentionContext => vec![context(cx, &heads(op, args[0], args[1], true)?, args[0], args[1])?],
        OpKind::ModelRope => vec![rope(cx, op, args[0], false)?],
        OpKind::ModelActivationGradient => vec![activation_gradient(cx, op, &args)?],
        OpKind::ModelWeightGradient => weight_gradient(cx, op, &args)?,
        OpKind::ModelOptimizerStep => optimizer_step(cx, op, &args)?,
        _ => return Err(format!("'{}' has no lowering to linalg", name_of(op))),
    };
    if results.len() != op.result_count() {
        return Err(format!("lowered to {} results, but the op has {}", results.len(), op.result_count()));
    }
    for (model, lowered) in op.results().zip(results) {
        cx.env.set(model.into(), lowered);
    }
    Ok(())
}

fn eps(op: OperationRef) -> f64 {
    op.attribute("eps").ok().and_then(real).unwrap_or(NORM_EPS)
}

fn real_attr(op: OperationRef, name: &str) -> Result<f64, String> {
    op.attribute(name).ok().and_then(real).ok_or_else(|| format!("has no '{name}'"))
}

/// An attention op's head layout.
struct Heads {
    heads: i64,
    kv: i64,
    d: i64,
}

impl Heads {
    fn group(&self) -> i64 {
        self.heads / self.kv
    }
}

/// The head layout of the attention op `op` whose query-side operand
/// (`q`, or the probabilities `[b, heads, s, s]` when `probabilities`) and
/// key/value operand are lowered as `q` and `kv`: the head counts are read
/// from the lowered widths (`width / head_dim`), so the same rule lowers
/// the whole op and a tensor-parallel rank's share of its heads; the
/// counts the op states bound them (a share keeps the op's grouping).
fn heads(op: OperationRef, q: Value, kv: Value, probabilities: bool) -> Result<Heads, String> {
    let get = |name: &str| int_attr(op, name).filter(|v| *v > 0).ok_or_else(|| format!("has no valid '{name}'"));
    let (all, all_kv, d) = (get("heads")?, get("kv_heads")?, get("head_dim")?);
    if all % all_kv != 0 {
        return Err(format!("kv_heads ({all_kv}) must divide heads ({all})"));
    }
    let width = |v: Value| shape_of(v).last().copied().unwrap_or(0);
    let heads = if probabilities { shape_of(q).get(1).copied().unwrap_or(0) } else { width(q) / d };
    let h = Heads { heads, kv: width(kv) / d, d };
    // A share: some of the query heads, and the key/value heads they read
    // (a TP rank's part of them, or one replicated head).
    let share = h.kv > 0 && h.heads > 0 && all % h.heads == 0 && all_kv % h.kv == 0 && h.heads % h.kv == 0;
    if !share {
        return Err(format!(
            "has operands of {} query and {} key/value heads (of head_dim {d}), which are not a share of its {all} and {all_kv} heads",
            h.heads, h.kv
        ));
    }
    Ok(h)
}

// ---------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------

/// Element-wise over operands of one shape.
fn elementwise<'c, 'a, F>(cx: &Cx<'_, 'c, 'a, '_>, args: &[Value<'c, 'a>], f: F) -> R<Value<'c, 'a>>
where
    F: for<'b> FnOnce(&Scalar<'c, 'b>, &[Value<'c, 'b>]) -> R<Value<'c, 'b>>,
{
    let shape = shape_of(args[0]);
    let ins: Vec<_> = args.iter().map(|a| (*a, identity(shape.len()))).collect();
    cx.lin.map_n(&cx.block, &ins, &shape, f)
}

/// `[lead.., n] -> [prod(lead), n]`.
fn rows<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>) -> R<Value<'c, 'a>> {
    let shape = shape_of(x);
    if shape.len() == 2 {
        return Ok(x);
    }
    let lead: Vec<usize> = (0..shape.len() - 1).collect();
    let m: i64 = shape[..shape.len() - 1].iter().product();
    cx.lin.collapse(&cx.block, x, &[&lead, &[shape.len() - 1]], &[m, shape[shape.len() - 1]])
}

/// `[m, n] -> [lead.., n]`.
fn unrows<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, y: Value<'c, 'a>, lead: &[i64]) -> R<Value<'c, 'a>> {
    if lead.len() == 1 {
        return Ok(y);
    }
    let n = shape_of(y)[1];
    let mut out = lead.to_vec();
    out.push(n);
    let groups: Vec<usize> = (0..lead.len()).collect();
    cx.lin.expand(&cx.block, y, &[&groups, &[lead.len()]], &out)
}

/// Swaps the last two dims (a copy).
fn transpose<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>) -> R<Value<'c, 'a>> {
    let mut shape = shape_of(x);
    let r = shape.len();
    shape.swap(r - 2, r - 1);
    let mut read: Vec<usize> = (0..r).collect();
    read.swap(r - 2, r - 1);
    cx.lin.map_n(&cx.block, &[(x, dims(r, &read))], &shape, |_, a| Ok(a[0]))
}

/// `[b, s, n x d]` with `n` heads -> `[b x n, s, d]`.
fn heads_major<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>, n: i64, d: i64) -> R<Value<'c, 'a>> {
    let [b, s, _] = three(x);
    let split = cx.lin.expand(&cx.block, x, &[&[0], &[1], &[2, 3]], &[b, s, n, d])?;
    let moved = cx.lin.map_n(&cx.block, &[(split, dims(4, &[0, 2, 1, 3]))], &[b, n, s, d], |_, a| Ok(a[0]))?;
    cx.lin.collapse(&cx.block, moved, &[&[0, 1], &[2], &[3]], &[b * n, s, d])
}

/// `[b x n, s, d]` -> `[b, s, n x d]`.
fn from_heads_major<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, y: Value<'c, 'a>, b: i64, n: i64) -> R<Value<'c, 'a>> {
    let [_, s, d] = three(y);
    let split = cx.lin.expand(&cx.block, y, &[&[0, 1], &[2], &[3]], &[b, n, s, d])?;
    let moved = cx.lin.map_n(&cx.block, &[(split, dims(4, &[0, 2, 1, 3]))], &[b, s, n, d], |_, a| Ok(a[0]))?;
    cx.lin.collapse(&cx.block, moved, &[&[0], &[1], &[2, 3]], &[b, s, n * d])
}

/// Keys or values `[b, s, kv x d]` for every query head: `[b x heads, s,
/// d]`, or `[b x heads, d, s]` when `transposed` (head `i` reads key head
/// `i / group`).
fn broadcast_kv<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>, h: &Heads, transposed: bool) -> R<Value<'c, 'a>> {
    let [b, s, _] = three(x);
    let (g, d, kv) = (h.group(), h.d, h.kv);
    let split = cx.lin.expand(&cx.block, x, &[&[0], &[1], &[2, 3]], &[b, s, kv, d])?;
    // Iteration (b, kv, g, ·, ·): the last two are (token, d) or (d, token).
    let (shape, read) = if transposed { ([b, kv, g, d, s], dims(5, &[0, 4, 1, 3])) } else { ([b, kv, g, s, d], dims(5, &[0, 3, 1, 4])) };
    let wide = cx.lin.map_n(&cx.block, &[(split, read)], &shape, |_, a| Ok(a[0]))?;
    cx.lin.collapse(&cx.block, wide, &[&[0, 1, 2], &[3], &[4]], &[b * h.heads, shape[3], shape[4]])
}

/// Per-query-head gradients `[b x heads, s, d]` summed over each key
/// head's group: `[b, s, kv x d]`.
fn reduce_kv<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, y: Value<'c, 'a>, b: i64, h: &Heads) -> R<Value<'c, 'a>> {
    let [_, s, d] = three(y);
    let (g, kv) = (h.group(), h.kv);
    let split = cx.lin.expand(&cx.block, y, &[&[0, 1, 2], &[3], &[4]], &[b, kv, g, s, d])?;
    let acc = cx.lin.full(&cx.block, &[b, s, kv, d], 0.0)?;
    // Iteration (b, t, kv, d, g), g reduced.
    let out = cx.lin.generic(
        &cx.block,
        &[split],
        &[acc],
        &[dims(5, &[0, 2, 4, 1, 3]), dims(5, &[0, 1, 2, 3])],
        &[Iter::P, Iter::P, Iter::P, Iter::P, Iter::R],
        |s, a| Ok(vec![s.add(a[1], a[0])?]),
    )?;
    cx.lin.collapse(&cx.block, out[0], &[&[0], &[1], &[2, 3]], &[b, s, kv * d])
}

fn three(x: Value) -> [i64; 3] {
    let s = shape_of(x);
    [s.first().copied().unwrap_or(0), s.get(1).copied().unwrap_or(0), s.get(2).copied().unwrap_or(0)]
}

/// Rows broadcast along the last dim (per-row statistics).
fn row_map(rank: usize) -> String {
    dims(rank, &(0..rank - 1).collect::<Vec<_>>())
}

/// A vector along the last dim (norm scales and biases).
fn last_map(rank: usize) -> String {
    dims(rank, &[rank - 1])
}

// ---------------------------------------------------------------------------
// Forward rules
// ---------------------------------------------------------------------------

/// `X[lead.., k] x W[k, n]` (or `x Wᵀ` when `transpose_w`).
fn matmul<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>, w: Value<'c, 'a>, transpose_w: bool) -> R<Value<'c, 'a>> {
    let shape = shape_of(x);
    let lead = &shape[..shape.len() - 1];
    let w = if transpose_w { transpose(cx, w)? } else { w };
    let n = shape_of(w)[1];
    let x2 = rows(cx, x)?;
    let m = shape_of(x2)[0];
    let y = cx.lin.matmul(&cx.block, x2, w, [m, n])?;
    unrows(cx, y, lead)
}

/// Mean and `1/sqrt(var + eps)` over the last dim, per row.
fn moments<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>, eps: f64) -> R<(Value<'c, 'a>, Value<'c, 'a>)> {
    let shape = shape_of(x);
    let (r, n) = (shape.len(), shape[shape.len() - 1] as f64);
    let rows_shape = &shape[..r - 1];
    let sum = cx.lin.reduce_last(&cx.block, &[(x, identity(r))], &shape, 0.0, Combine::Sum, |_, a| Ok(a[0]))?;
    let mean = cx.lin.map_n(&cx.block, &[(sum, identity(r - 1))], rows_shape, move |s, a| s.scale(a[0], 1.0 / n))?;
    let sq = cx.lin.reduce_last(&cx.block, &[(x, identity(r)), (mean, row_map(r))], &shape, 0.0, Combine::Sum, |s, a| {
        let c = s.sub(a[0], a[1])?;
        s.mul(c, c)
    })?;
    let rstd = cx.lin.map_n(&cx.block, &[(sq, identity(r - 1))], rows_shape, move |s, a| {
        let var = s.scale(a[0], 1.0 / n)?;
        let e = s.constant(eps)?;
        s.rsqrt(s.add(var, e)?)
    })?;
    Ok((mean, rstd))
}

/// `x̂ = (x - mean) * rstd`.
fn normalized<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>, mean: Value<'c, 'a>, rstd: Value<'c, 'a>) -> R<Value<'c, 'a>> {
    let shape = shape_of(x);
    let r = shape.len();
    cx.lin.map_n(&cx.block, &[(x, identity(r)), (mean, row_map(r)), (rstd, row_map(r))], &shape, |s, a| s.mul(s.sub(a[0], a[1])?, a[2]))
}

fn layer_norm<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>, scale: Value<'c, 'a>, bias: Value<'c, 'a>, eps: f64) -> R<Value<'c, 'a>> {
    let shape = shape_of(x);
    let r = shape.len();
    let (mean, rstd) = moments(cx, x, eps)?;
    let ins = [(x, identity(r)), (mean, row_map(r)), (rstd, row_map(r)), (scale, last_map(r)), (bias, last_map(r))];
    cx.lin.map_n(&cx.block, &ins, &shape, |s, a| {
        let xhat = s.mul(s.sub(a[0], a[1])?, a[2])?;
        s.add(s.mul(xhat, a[3])?, a[4])
    })
}

/// `1 / sqrt(mean(x²) + eps)` per row.
fn rms<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>, eps: f64) -> R<Value<'c, 'a>> {
    let shape = shape_of(x);
    let (r, n) = (shape.len(), shape[shape.len() - 1] as f64);
    let sq = cx.lin.reduce_last(&cx.block, &[(x, identity(r))], &shape, 0.0, Combine::Sum, |s, a| s.mul(a[0], a[0]))?;
    cx.lin.map_n(&cx.block, &[(sq, identity(r - 1))], &shape[..r - 1], move |s, a| {
        let ms = s.scale(a[0], 1.0 / n)?;
        let e = s.constant(eps)?;
        s.rsqrt(s.add(ms, e)?)
    })
}

fn rms_norm<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>, scale: Value<'c, 'a>, eps: f64) -> R<Value<'c, 'a>> {
    let shape = shape_of(x);
    let r = shape.len();
    let inv = rms(cx, x, eps)?;
    cx.lin.map_n(&cx.block, &[(x, identity(r)), (inv, row_map(r)), (scale, last_map(r))], &shape, |s, a| s.mul(s.mul(a[0], a[1])?, a[2]))
}

/// Softmax over the last dim, shifted by the row maximum.
fn softmax<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, x: Value<'c, 'a>) -> R<Value<'c, 'a>> {
    let shape = shape_of(x);
    let r = shape.len();
    let max = cx.lin.reduce_last(&cx.block, &[(x, identity(r))], &shape, f64::NEG_INFINITY, Combine::Max, |_, a| Ok(a[0]))?;
    let e = cx.lin.map_n(&cx.block, &[(x, identity(r)), (max, row_map(r))], &shape, |s, a| s.exp(s.sub(a[0], a[1])?))?;
    let z = cx.lin.reduce_last(&cx.block, &[(e, identity(r))], &shape, 0.0, Combine::Sum, |_, a| Ok(a[0]))?;
    cx.lin.map_n(&cx.block, &[(e, identity(r)), (z, row_map(r))], &shape, |s, a| s.div(a[0], a[1]))
}

/// `scale · q_i k_jᵀ` per head, `-inf` above the diagonal when `causal`.
fn scores<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, h: &Heads, q: Value<'c, 'a>, k: Value<'c, 'a>, scale: f64, causal: bool) -> R<Value<'c, 'a>> {
    let [b, s, _] = three(q);
    let qh = heads_major(cx, q, h.heads, h.d)?;
    let kt = broadcast_kv(cx, k, h, true)?;
    let raw = cx.lin.batch_matmul(&cx.block, qh, kt, [b * h.heads, s, s])?;
    let raw = cx.lin.expand(&cx.block, raw, &[&[0, 1], &[2], &[3]], &[b, h.heads, s, s])?;
    cx.lin.map_n(&cx.block, &[(raw, identity(4))], &[b, h.heads, s, s], move |sc, a| {
        let scaled = sc.scale(a[0], scale)?;
        if !causal {
            return Ok(scaled);
        }
        let (query, key) = (sc.index(2)?, sc.index(3)?);
        let masked = sc.constant(f64::NEG_INFINITY)?;
        sc.select_if_greater(key, query, masked, scaled)
    })
}

/// `P_i · v_j` per head, heads concatenated.
fn context<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, h: &Heads, p: Value<'c, 'a>, v: Value<'c, 'a>) -> R<Value<'c, 'a>> {
    let [b, n, s, _] = four(p);
    let p3 = cx.lin.collapse(&cx.block, p, &[&[0, 1], &[2], &[3]], &[b * n, s, s])?;
    let vb = broadcast_kv(cx, v, h, false)?;
    let ctx = cx.lin.batch_matmul(&cx.block, p3, vb, [b * n, s, h.d])?;
    from_heads_major(cx, ctx, b, n)
}

fn four(x: Value) -> [i64; 4] {
    let s = shape_of(x);
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    [at(0), at(1), at(2), at(3)]
}

/// `gelu_tanh(u) = 0.5 u (1 + tanh(sqrt(2/π) (u + 0.044715 u³)))`.
fn gelu<'c, 'b>(s: &Scalar<'c, 'b>, u: Value<'c, 'b>) -> R<Value<'c, 'b>> {
    let t = s.tanh(gelu_inner(s, u)?)?;
    let one = s.constant(1.0)?;
    s.mul(s.scale(u, 0.5)?, s.add(one, t)?)
}

const GELU_C: f64 = 0.797_884_560_802_865_4; // sqrt(2/π)
const GELU_A: f64 = 0.044_715;

fn gelu_inner<'c, 'b>(s: &Scalar<'c, 'b>, u: Value<'c, 'b>) -> R<Value<'c, 'b>> {
    let u3 = s.mul(s.mul(u, u)?, u)?;
    s.scale(s.add(u, s.scale(u3, GELU_A)?)?, GELU_C)
}

/// `gelu_tanh'(u)`.
fn gelu_grad<'c, 'b>(s: &Scalar<'c, 'b>, u: Value<'c, 'b>) -> R<Value<'c, 'b>> {
    let t = s.tanh(gelu_inner(s, u)?)?;
    let one = s.constant(1.0)?;
    // 0.5 (1 + t) + 0.5 u (1 - t²) c (1 + 3a u²)
    let first = s.scale(s.add(one, t)?, 0.5)?;
    let sech2 = s.sub(one, s.mul(t, t)?)?;
    let inner = s.add(one, s.scale(s.mul(u, u)?, 3.0 * GELU_A)?)?;
    let second = s.mul(s.mul(s.scale(u, 0.5 * GELU_C)?, sech2)?, inner)?;
    s.add(first, second)
}

/// `silu(g) = g σ(g)`.
fn silu<'c, 'b>(s: &Scalar<'c, 'b>, g: Value<'c, 'b>) -> R<Value<'c, 'b>> {
    s.mul(g, s.sigmoid(g)?)
}

/// `silu'(g) = σ(g) (1 + g (1 - σ(g)))`.
fn silu_grad<'c, 'b>(s: &Scalar<'c, 'b>, g: Value<'c, 'b>) -> R<Value<'c, 'b>> {
    let sig = s.sigmoid(g)?;
    let one = s.constant(1.0)?;
    s.mul(sig, s.add(one, s.mul(g, s.sub(one, sig)?)?)?)
}

/// RoPE of `x [b, s, heads x d]` (or its transpose, the inverse rotation,
/// for the gradient): `cos`/`sin` tables of `t θ_j` computed in f64 at
/// lowering time, one row per position.
fn rope<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, op: OperationRef, x: Value<'c, 'a>, inverse: bool) -> Result<Value<'c, 'a>, String> {
    let get = |name: &str| int_attr(op, name).filter(|v| *v > 0).ok_or_else(|| format!("has no valid '{name}'"));
    let (all, d) = (get("heads")?, get("head_dim")?);
    let theta = real_attr(op, "theta")?;
    let [b, s, width] = three(x);
    // The heads present (all of them, or a tensor-parallel rank's share).
    let n = width / d;
    if width % d != 0 || n == 0 || all % n != 0 {
        return Err(format!("has an operand of width {width}, which is not a share of its {all} heads of head_dim {d}"));
    }
    let half = d / 2;
    let (mut cos, mut sin) = (Vec::new(), Vec::new());
    for t in 0..s {
        for j in 0..half {
            let angle = t as f64 * theta.powf(-2.0 * j as f64 / d as f64);
            cos.push(angle.cos() as f32);
            sin.push(angle.sin() as f32);
        }
    }
    let l = &cx.lin;
    let built = (|| {
        let cos = l.dense(&cx.block, &[s, half], &cos)?;
        let sin = l.dense(&cx.block, &[s, half], &sin)?;
        let x4 = l.expand(&cx.block, x, &[&[0], &[1], &[2, 3]], &[b, s, n, d])?;
        let halves = [
            l.extract(&cx.block, x4, &[0, 0, 0, 0], &[b, s, n, half], None)?,
            l.extract(&cx.block, x4, &[0, 0, 0, half], &[b, s, n, half], None)?,
        ];
        let table = dims(4, &[1, 3]);
        let ins = |a, c| [(halves[0], identity(4)), (halves[1], identity(4)), (a, table.clone()), (c, table.clone())];
        // out1 = x1 cos - x2 sin, out2 = x2 cos + x1 sin (inverse: sin negated).
        let sign = if inverse { -1.0 } else { 1.0 };
        let out1 = l.map_n(&cx.block, &ins(cos, sin), &[b, s, n, half], move |sc, a| {
            sc.sub(sc.mul(a[0], a[2])?, sc.scale(sc.mul(a[1], a[3])?, sign)?)
        })?;
        let out2 = l.map_n(&cx.block, &ins(cos, sin), &[b, s, n, half], move |sc, a| {
            sc.add(sc.mul(a[1], a[2])?, sc.scale(sc.mul(a[0], a[3])?, sign)?)
        })?;
        let out = l.empty(&cx.block, &[b, s, n, d])?;
        let out = l.insert(&cx.block, out1, out, &[0, 0, 0, 0], &[b, s, n, half], None)?;
        let out = l.insert(&cx.block, out2, out, &[0, 0, 0, half], &[b, s, n, half], None)?;
        l.collapse(&cx.block, out, &[&[0], &[1], &[2, 3]], &[b, s, n * d])
    })();
    built.map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------
// Backward rules
// ---------------------------------------------------------------------------

/// The forward op a gradient names, and which of its operands `wrt` is.
fn source<'m, 'c>(cx: &Cx<'_, 'c, '_, 'm>, op: OperationRef) -> Result<(OperationRef<'c, 'm>, usize), String> {
    let of = str_attr(op, "of").ok_or("has no 'of'")?;
    let forward = *cx.forward.get(of).ok_or_else(|| format!("names '{of}', which is not a forward op of the function"))?;
    let wrt = op.operand(op.operand_count() - 1).map_err(|_| "has no 'wrt'".to_string())?;
    let index = forward
        .operands()
        .position(|v| v == wrt)
        .ok_or_else(|| format!("differentiates '{of}' with respect to a value it does not read"))?;
    Ok((forward, index))
}

/// A lowered operand or result of the forward op.
fn forward_operand<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, forward: OperationRef, i: usize) -> Result<Value<'c, 'a>, String> {
    cx.env.get(forward.operand(i).map_err(|_| format!("the forward op has no operand #{i}"))?)
}

fn forward_result<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, forward: OperationRef, i: usize) -> Result<Value<'c, 'a>, String> {
    cx.env.get(forward.result(i).map_err(|_| format!("the forward op has no result #{i}"))?.into())
}

/// `d(of)/d(wrt)` applied to the output gradients (`args` minus `wrt`).
fn activation_gradient<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, op: OperationRef, args: &[Value<'c, 'a>]) -> Result<Value<'c, 'a>, String> {
    let (forward, wrt) = source(cx, op)?;
    let grads = &args[..args.len() - 1];
    let dy = grads[0];
    let x = |i| forward_operand(cx, forward, i);
    let e = |r: R<Value<'c, 'a>>| r.map_err(|e| e.to_string());
    match OpKind::of(forward) {
        Some(OpKind::ModelAdd | OpKind::ModelDropout | OpKind::ModelBiasAdd) => Ok(dy),
        Some(OpKind::ModelRelu) => {
            e(elementwise(cx, &[dy, x(0)?], |s, a| s.select_if_above(a[1], s.constant(0.0)?, a[0], s.constant(0.0)?)))
        }
        Some(OpKind::ModelSilu) => e(elementwise(cx, &[dy, x(0)?], |s, a| s.mul(a[0], silu_grad(s, a[1])?))),
        Some(OpKind::ModelFork) => {
            let mut sum = dy;
            for g in &grads[1..] {
                sum = e(elementwise(cx, &[sum, *g], |s, a| s.add(a[0], a[1])))?;
            }
            Ok(sum)
        }
        Some(OpKind::ModelMatmul) => e(matmul(cx, dy, x(1)?, true)),
        Some(OpKind::ModelGelu) => e(elementwise(cx, &[dy, x(0)?], |s, a| s.mul(a[0], gelu_grad(s, a[1])?))),
        Some(OpKind::ModelSwiglu) if wrt == 0 => {
            e(elementwise(cx, &[dy, x(0)?, x(1)?], |s, a| s.mul(s.mul(a[0], a[2])?, silu_grad(s, a[1])?)))
        }
        Some(OpKind::ModelSwiglu) => e(elementwise(cx, &[dy, x(0)?], |s, a| s.mul(a[0], silu(s, a[1])?))),
        Some(OpKind::ModelSoftmax) => e(softmax_grad(cx, dy, forward_result(cx, forward, 0)?)),
        Some(OpKind::ModelLayerNorm) => e(layer_norm_grad(cx, dy, x(0)?, x(1)?, eps(forward))),
        Some(OpKind::ModelRmsNorm) => e(rms_norm_grad(cx, dy, x(0)?, x(1)?, eps(forward))),
        Some(OpKind::ModelRope) => rope(cx, forward, dy, true),
        Some(OpKind::ModelAttentionScores) => {
            let h = heads(forward, x(0)?, x(1)?, false)?;
            e(scores_grad(cx, &h, dy, x(0)?, x(1)?, real_attr(forward, "scale")?, wrt))
        }
        Some(OpKind::ModelAttentionContext) => e(context_grad(cx, &heads(forward, x(0)?, x(1)?, true)?, dy, x(0)?, x(1)?, wrt)),
        _ => Err(format!("has no lowering: the derivative of '{}' is not written out", name_of(forward))),
    }
}

/// The gradients of the forward op's parameters.
fn weight_gradient<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, op: OperationRef, args: &[Value<'c, 'a>]) -> Result<Vec<Value<'c, 'a>>, String> {
    let (forward, _) = source(cx, op)?;
    let dy = args[0];
    let x = forward_operand(cx, forward, 0)?;
    let e = |r: R<Value<'c, 'a>>| r.map_err(|e| e.to_string());
    let shape = shape_of(x);
    let r = shape.len();
    match OpKind::of(forward) {
        // dW = Xᵀ dY over the flattened rows.
        Some(OpKind::ModelMatmul) => {
            let xt = e(transpose(cx, e(rows(cx, x))?))?;
            let dy2 = e(rows(cx, dy))?;
            let (k, n) = (shape_of(xt)[0], shape_of(dy2)[1]);
            Ok(vec![e(cx.lin.matmul(&cx.block, xt, dy2, [k, n]))?])
        }
        Some(OpKind::ModelLayerNorm) => {
            let (mean, rstd) = moments(cx, x, eps(forward))?;
            let xhat = e(normalized(cx, x, mean, rstd))?;
            let d_scale = e(cx.lin.reduce_rows(&cx.block, &[(dy, identity(r)), (xhat, identity(r))], &shape, |s, a| s.mul(a[0], a[1])))?;
            let d_bias = e(cx.lin.reduce_rows(&cx.block, &[(dy, identity(r))], &shape, |_, a| Ok(a[0])))?;
            Ok(vec![d_scale, d_bias])
        }
        // d(bias) = Σ over the rows of dY.
        Some(OpKind::ModelBiasAdd) => Ok(vec![e(cx.lin.reduce_rows(&cx.block, &[(dy, identity(r))], &shape, |_, a| Ok(a[0])))?]),
        Some(OpKind::ModelRmsNorm) => {
            let inv = e(rms(cx, x, eps(forward)))?;
            let ins = [(dy, identity(r)), (x, identity(r)), (inv, row_map(r))];
            Ok(vec![e(cx.lin.reduce_rows(&cx.block, &ins, &shape, |s, a| s.mul(s.mul(a[0], a[1])?, a[2])))?])
        }
        _ => Err(format!("has no lowering: '{}' has no parameters whose gradient is written out", name_of(forward))),
    }
}

/// `dx = y (dy - Σ dy y)`.
fn softmax_grad<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, dy: Value<'c, 'a>, y: Value<'c, 'a>) -> R<Value<'c, 'a>> {
    let shape = shape_of(y);
    let r = shape.len();
    let dot = cx.lin.reduce_last(&cx.block, &[(dy, identity(r)), (y, identity(r))], &shape, 0.0, Combine::Sum, |s, a| s.mul(a[0], a[1]))?;
    cx.lin.map_n(&cx.block, &[(dy, identity(r)), (y, identity(r)), (dot, row_map(r))], &shape, |s, a| s.mul(a[1], s.sub(a[0], a[2])?))
}

/// `dx = rstd (g - mean(g) - x̂ mean(g x̂))` with `g = dy scale`.
fn layer_norm_grad<'c, 'a>(
    cx: &Cx<'_, 'c, 'a, '_>,
    dy: Value<'c, 'a>,
    x: Value<'c, 'a>,
    scale: Value<'c, 'a>,
    eps: f64,
) -> R<Value<'c, 'a>> {
    let shape = shape_of(x);
    let (r, n) = (shape.len(), shape[shape.len() - 1] as f64);
    let (mean, rstd) = moments(cx, x, eps)?;
    let xhat = normalized(cx, x, mean, rstd)?;
    let g = cx.lin.map_n(&cx.block, &[(dy, identity(r)), (scale, last_map(r))], &shape, |s, a| s.mul(a[0], a[1]))?;
    let sum_g = cx.lin.reduce_last(&cx.block, &[(g, identity(r))], &shape, 0.0, Combine::Sum, |_, a| Ok(a[0]))?;
    let sum_gx =
        cx.lin.reduce_last(&cx.block, &[(g, identity(r)), (xhat, identity(r))], &shape, 0.0, Combine::Sum, |s, a| s.mul(a[0], a[1]))?;
    let ins = [(g, identity(r)), (xhat, identity(r)), (sum_g, row_map(r)), (sum_gx, row_map(r)), (rstd, row_map(r))];
    cx.lin.map_n(&cx.block, &ins, &shape, move |s, a| {
        let mg = s.scale(a[2], 1.0 / n)?;
        let mgx = s.scale(a[3], 1.0 / n)?;
        let centered = s.sub(s.sub(a[0], mg)?, s.mul(a[1], mgx)?)?;
        s.mul(a[4], centered)
    })
}

/// `dx = r g - x r³ Σ(g x) / n` with `g = dy scale`, `r = rms⁻¹`.
fn rms_norm_grad<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, dy: Value<'c, 'a>, x: Value<'c, 'a>, scale: Value<'c, 'a>, eps: f64) -> R<Value<'c, 'a>> {
    let shape = shape_of(x);
    let (r, n) = (shape.len(), shape[shape.len() - 1] as f64);
    let inv = rms(cx, x, eps)?;
    let g = cx.lin.map_n(&cx.block, &[(dy, identity(r)), (scale, last_map(r))], &shape, |s, a| s.mul(a[0], a[1]))?;
    let sum_gx =
        cx.lin.reduce_last(&cx.block, &[(g, identity(r)), (x, identity(r))], &shape, 0.0, Combine::Sum, |s, a| s.mul(a[0], a[1]))?;
    let ins = [(g, identity(r)), (x, identity(r)), (inv, row_map(r)), (sum_gx, row_map(r))];
    cx.lin.map_n(&cx.block, &ins, &shape, move |s, a| {
        let r3 = s.mul(s.mul(a[2], a[2])?, a[2])?;
        let correction = s.scale(s.mul(s.mul(a[1], r3)?, a[3])?, 1.0 / n)?;
        s.sub(s.mul(a[2], a[0])?, correction)
    })
}

/// Gradients of the scores `S = scale q kᵀ`: `dq = scale dS k` (wrt 0),
/// `dk = scale dSᵀ q` summed over each key head's group (wrt 1).
fn scores_grad<'c, 'a>(
    cx: &Cx<'_, 'c, 'a, '_>,
    h: &Heads,
    ds: Value<'c, 'a>,
    q: Value<'c, 'a>,
    k: Value<'c, 'a>,
    scale: f64,
    wrt: usize,
) -> R<Value<'c, 'a>> {
    let [b, n, s, _] = four(ds);
    let ds = cx.lin.map_n(&cx.block, &[(ds, identity(4))], &[b, n, s, s], move |sc, a| sc.scale(a[0], scale))?;
    let ds3 = cx.lin.collapse(&cx.block, ds, &[&[0, 1], &[2], &[3]], &[b * n, s, s])?;
    if wrt == 0 {
        let kb = broadcast_kv(cx, k, h, false)?;
        let dq = cx.lin.batch_matmul(&cx.block, ds3, kb, [b * n, s, h.d])?;
        from_heads_major(cx, dq, b, n)
    } else {
        let qh = heads_major(cx, q, h.heads, h.d)?;
        let dst = transpose(cx, ds3)?;
        let dk = cx.lin.batch_matmul(&cx.block, dst, qh, [b * n, s, h.d])?;
        reduce_kv(cx, dk, b, h)
    }
}

/// Gradients of the context `C = P v`: `dP = dC vᵀ` (wrt 0), `dv = Pᵀ dC`
/// summed over each value head's group (wrt 1).
fn context_grad<'c, 'a>(
    cx: &Cx<'_, 'c, 'a, '_>,
    h: &Heads,
    dc: Value<'c, 'a>,
    p: Value<'c, 'a>,
    v: Value<'c, 'a>,
    wrt: usize,
) -> R<Value<'c, 'a>> {
    let [b, n, s, _] = four(p);
    let dch = heads_major(cx, dc, h.heads, h.d)?;
    if wrt == 0 {
        let vt = broadcast_kv(cx, v, h, true)?;
        let dp = cx.lin.batch_matmul(&cx.block, dch, vt, [b * n, s, s])?;
        cx.lin.expand(&cx.block, dp, &[&[0, 1], &[2], &[3]], &[b, n, s, s])
    } else {
        let p3 = cx.lin.collapse(&cx.block, p, &[&[0, 1], &[2], &[3]], &[b * n, s, s])?;
        let pt = transpose(cx, p3)?;
        let dv = cx.lin.batch_matmul(&cx.block, pt, dch, [b * n, s, h.d])?;
        reduce_kv(cx, dv, b, h)
    }
}

// ---------------------------------------------------------------------------
// Optimizer
// ---------------------------------------------------------------------------

/// SGD `w - lr g`; Adam (`torch.optim.Adam` without weight decay, at step
/// `step`): `m = β1 m + (1-β1) g`, `v = β2 v + (1-β2) g²`,
/// `w - lr (m / (1-β1^t)) / (sqrt(v / (1-β2^t)) + eps)`.
fn optimizer_step<'c, 'a>(cx: &Cx<'_, 'c, 'a, '_>, op: OperationRef, args: &[Value<'c, 'a>]) -> Result<Vec<Value<'c, 'a>>, String> {
    let e = |r: R<Value<'c, 'a>>| r.map_err(|e| e.to_string());
    let lr = real_attr(op, "lr")?;
    let (w, g) = (args[0], args[1]);
    match enum_attr::<OptimizerKind>(op, "kind") {
        Some(OptimizerKind::Sgd) if args.len() == 2 => Ok(vec![e(elementwise(cx, &[w, g], move |s, a| s.sub(a[0], s.scale(a[1], lr)?)))?]),
        Some(OptimizerKind::Adam) if args.len() == 4 => {
            let (b1, b2, epsilon) = (real_attr(op, "beta1")?, real_attr(op, "beta2")?, real_attr(op, "eps")?);
            let t = int_attr(op, "step").unwrap_or(1) as i32;
            let (c1, c2) = (1.0 - b1.powi(t), 1.0 - b2.powi(t));
            let (m, v) = (args[2], args[3]);
            let m1 = e(elementwise(cx, &[m, g], move |s, a| s.add(s.scale(a[0], b1)?, s.scale(a[1], 1.0 - b1)?)))?;
            let v1 = e(elementwise(cx, &[v, g], move |s, a| s.add(s.scale(a[0], b2)?, s.scale(s.mul(a[1], a[1])?, 1.0 - b2)?)))?;
            let w1 = e(elementwise(cx, &[w, m1, v1], move |s, a| {
                let mhat = s.scale(a[1], 1.0 / c1)?;
                let vhat = s.scale(a[2], 1.0 / c2)?;
                let denom = s.add(s.sqrt(vhat)?, s.constant(epsilon)?)?;
                s.sub(a[0], s.scale(s.div(mhat, denom)?, lr)?)
            }))?;
            Ok(vec![w1, m1, v1])
        }
        _ => Err("has no lowering for this optimizer state (an fp32 step keeps none for SGD, m and v for Adam)".into()),
    }
}
