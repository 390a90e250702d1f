//! A pipelined derived program's step: one function per stage
//! (`@train_step_s<k>`), which the ranks of stage `k` run. Each runs its
//! stage's schedule slot by slot (1F1B, interleaved 1F1B, GPipe: the
//! derived program's `dist.schedule`), each slot one chunk's blocks: a forward slot takes its microbatch's rows of the
//! batch (first stage) or receives the previous stage's activation, runs
//! the stage's blocks forward, keeps what their backward reads, and sends
//! its output on (or, on the last stage, stores it); a backward slot takes
//! the output's gradient (last stage) or receives it from the next stage,
//! runs the blocks backward, sums their weight gradients, and sends the
//! input's gradient back (or stores it). Then each block's data-parallel
//! reduction and optimizer. The slots are unrolled, each a call of its
//! chunk's forward or backward function (which call each block's phase
//! once): a stage's code grows with its slots (2 x chunks x microbatches)
//! plus its blocks, not their product.
//!
//! Transfers are the derived program's `dist.p2p`s on tensors, which both
//! ends run (one op per end and microbatch; the receiver's input is an
//! empty tensor of the activation's type); they become asynchronous
//! (`dist-async`) and a sender waits only at the end of the step, so no
//! schedule deadlocks on a send. Each boundary transfer travels on its own
//! twin of the mesh (`@<mesh>.<transfer id>`, the same ranks as another
//! communicator), so its messages match in their own (microbatch) order
//! whatever order the two sides interleave a boundary's transfers in (a
//! 1F1B warm-up sends several activations before the first gradient comes
//! back; interleaved chunks cross a stage pair in both directions).

use melior::ir::{block::BlockLike, operation::OperationLike, Module, OperationRef, Type, Value};

use super::{
    arg, call, distributed, function_with_interface, linalg, linalg::Lin, optimize, shape_of, Distribution, Failure, Phases, Pipeline,
    Template,
};
use crate::dialect::builder::BuildError;

/// `@train_step_s<k>` for every stage `k` of `pipeline`.
#[allow(clippy::too_many_arguments)]
pub(super) fn stage_steps<'c, 'g, 'm>(
    lin: Lin<'c>,
    distribution: &Distribution<'c, 'm>,
    pipeline: &Pipeline<'c, 'm>,
    phases: &Phases<'c>,
    stage_phases: &dyn Fn(&str, &Template<'c, 'm>) -> Result<Phases<'c>, Failure<'c, 'm>>,
    block_args: &[Vec<(String, Type<'c>)>],
    block_results: &[Vec<(String, Type<'c>)>],
    function: OperationRef<'c, 'm>,
    generated: &'g Module<'c>,
) -> Result<(), Failure<'c, 'm>> {
    let built = |e: BuildError| (function, e.to_string());
    let loc = function.location();
    let l = lin.at(loc);
    let last = pipeline.stages.len() - 1;
    let chunks = pipeline.stages.first().map_or(1, |s| s.chunks.len());
    let channels = channels(pipeline, generated).map_err(|m| (function, m))?;
    let whole_ty = l.tensor(&phases.whole);
    // Where chunk `c` of stage `k` gets its input, and where its input's
    // gradient comes back from: the previous (stage, chunk) in block order.
    let previous = |k: usize, c: usize| if k > 0 { Some((k - 1, c)) } else { c.checked_sub(1).map(|c| (last, c)) };
    let next = |k: usize, c: usize| if k < last { Some((k + 1, c)) } else { (c + 1 < chunks).then_some((0, c + 1)) };
    for (k, stage) in pipeline.stages.iter().enumerate() {
        // Each chunk's phases (its template) and gradient reduction.
        let mut own = Vec::new();
        for (c, chunk) in stage.chunks.iter().enumerate() {
            own.push(match &chunk.template {
                Some(template) => (stage_phases(&format!("s{k}.c{c}"), template)?, template.reductions()),
                None => (phases.clone(), distribution.reductions()),
            });
        }
        let chunk_blocks: Vec<Vec<usize>> = stage
            .chunks
            .iter()
            .map(|c| (c.first_block..c.first_block + c.blocks).filter_map(|b| usize::try_from(b).ok()).collect())
            .collect();
        let blocks: Vec<usize> = chunk_blocks.concat();
        if blocks.iter().any(|b| *b >= block_args.len()) {
            return Err((function, format!("stage {k} holds blocks {blocks:?}, beyond the spec's {}", block_args.len())));
        }
        let mut args: Vec<(String, Type<'c>)> = blocks.iter().flat_map(|b| block_args[*b].clone()).collect();
        args.push(("block.in".to_string(), whole_ty));
        args.push(("block.out.grad".to_string(), whole_ty));
        let mut results = Vec::new();
        if k == last {
            results.push(("block.out".to_string(), whole_ty));
        }
        if k == 0 {
            results.push(("block.in.grad".to_string(), whole_ty));
        }
        results.extend(blocks.iter().flat_map(|b| block_results[*b].clone()));
        let name = format!("{}_s{k}", super::TRAIN_STEP);
        let entry = function_with_interface(l, generated, &name, &args, &results, &distribution.splits, loc).map_err(built)?;
        let n_params = block_args.first().map_or(0, Vec::len);
        let params: Vec<Vec<Value<'c, 'g>>> = (0..blocks.len())
            .map(|i| (0..n_params).map(|j| arg(&entry, i * n_params + j)).collect::<Result<_, _>>())
            .collect::<Result<_, _>>()
            .map_err(built)?;
        // The stage's blocks of chunk `c`, as indices into `params`.
        let local_blocks = |c: usize| -> Vec<usize> {
            let before: usize = chunk_blocks[..c].iter().map(Vec::len).sum();
            (before..before + chunk_blocks[c].len()).collect()
        };
        let x_all = arg(&entry, blocks.len() * n_params).map_err(built)?;
        let dy_all = arg(&entry, blocks.len() * n_params + 1).map_err(built)?;
        let offsets = vec![0i64; phases.rows.len()];
        let grad_types = &phases.backward.1[1..];
        let mut grads: Vec<Vec<Value<'c, 'g>>> = blocks
            .iter()
            .map(|_| grad_types.iter().map(|t| l.full(&entry, &linalg::type_dims(*t), 0.0)).collect::<Result<_, _>>())
            .collect::<Result<_, _>>()
            .map_err(built)?;
        let (mut out_acc, mut in_grad_acc) =
            (l.empty(&entry, &phases.whole).map_err(built)?, l.empty(&entry, &phases.whole).map_err(built)?);
        let mut kept: std::collections::HashMap<(u64, usize), Vec<Value<'c, 'g>>> = std::collections::HashMap::new();
        // A transfer end: the (stage, chunk) whose boundary sends it.
        let transfer = |from: (usize, usize), forward: bool, input: Value<'c, 'g>, microbatch: u64, sends: bool| {
            let chunk = &pipeline.stages[from.0].chunks[from.1];
            let what = if forward { "activation" } else { "gradient" };
            let template = if forward { chunk.send_forward } else { chunk.send_backward };
            let template =
                template.ok_or_else(|| (function, format!("stage {} chunk {}: the derived program sends no {what}", from.0, from.1)))?;
            let mesh = channels.iter().find(|(t, _)| *t == template).map(|(_, m)| m.as_str());
            distributed::transfer(l, &entry, template, input, mesh, microbatch, sends).map_err(|m| (template, m))
        };
        // Each chunk's blocks forward and backward, once, as functions the
        // slots call: a stage's code grows with its blocks plus its slots.
        let mut chunk_functions = Vec::new();
        for (c, (chunk_phases, _)) in own.iter().enumerate() {
            chunk_functions.push(
                chunk_pair(l, generated, &format!("{name}.c{c}"), chunk_phases, n_params, &block_args[blocks[0]], chunk_blocks[c].len())
                    .map_err(built)?,
            );
        }
        for &(microbatch, c, backward) in &stage.slots {
            let rows = i64::try_from(microbatch)
                .ok()
                .and_then(|m| m.checked_mul(phases.rows[0]))
                .ok_or((function, "too many rows".to_string()))?;
            let rows_at = l.index_constant(&entry, rows).map_err(built)?;
            if !backward {
                let mut x = match previous(k, c) {
                    None => l.extract(&entry, x_all, &offsets, &phases.rows, Some(rows_at)).map_err(built)?,
                    Some(from) => {
                        let empty = l.empty(&entry, &phases.rows).map_err(built)?;
                        transfer(from, true, empty, microbatch, false)?
                    }
                };
                let mut call_args: Vec<Value<'c, 'g>> = local_blocks(c).iter().flat_map(|i| params[*i].clone()).collect();
                call_args.push(x);
                let (name, types) = &chunk_functions[c].0;
                let out = call(l, &entry, name, &call_args, types).map_err(built)?;
                x = out[0];
                kept.insert((microbatch, c), out[1..].to_vec());
                match next(k, c) {
                    None => out_acc = l.insert(&entry, x, out_acc, &offsets, &phases.rows, Some(rows_at)).map_err(built)?,
                    Some(_) => {
                        transfer((k, c), true, x, microbatch, true)?;
                    }
                }
            } else {
                let mut dy = match next(k, c) {
                    None => l.extract(&entry, dy_all, &offsets, &phases.rows, Some(rows_at)).map_err(built)?,
                    Some(from) => {
                        let empty = l.empty(&entry, &phases.rows).map_err(built)?;
                        transfer(from, false, empty, microbatch, false)?
                    }
                };
                let saved = kept.remove(&(microbatch, c)).ok_or_else(|| {
                    (function, format!("stage {k}: the schedule runs microbatch {microbatch} of chunk {c} backward before forward"))
                })?;
                // The chunk's summed gradients go in and come back with
                // this microbatch's added.
                let mut call_args: Vec<Value<'c, 'g>> = local_blocks(c).iter().flat_map(|i| params[*i].clone()).collect();
                call_args.extend(saved);
                call_args.extend(local_blocks(c).iter().flat_map(|i| grads[*i].clone()));
                call_args.push(dy);
                let (name, types) = &chunk_functions[c].1;
                let out = call(l, &entry, name, &call_args, types).map_err(built)?;
                dy = out[0];
                let per_block = grad_types.len();
                for (j, i) in local_blocks(c).into_iter().enumerate() {
                    grads[i] = out[1 + j * per_block..1 + (j + 1) * per_block].to_vec();
                }
                match previous(k, c) {
                    None => in_grad_acc = l.insert(&entry, dy, in_grad_acc, &offsets, &phases.rows, Some(rows_at)).map_err(built)?,
                    Some(_) => {
                        transfer((k, c), false, dy, microbatch, true)?;
                    }
                }
            }
        }
        if let Some((microbatch, c)) = kept.keys().min() {
            return Err((function, format!("stage {k}: the schedule never runs microbatch {microbatch} of chunk {c} backward")));
        }
        let mut returned = Vec::new();
        if k == last {
            returned.push(out_acc);
        }
        if k == 0 {
            returned.push(in_grad_acc);
        }
        // Each chunk's blocks through its own gradient reduction.
        let mut grads = grads.into_iter();
        for (c, (chunk_phases, reduction)) in own.iter().enumerate() {
            let indices = local_blocks(c);
            let chunk_params: Vec<Vec<Value<'c, 'g>>> = indices.iter().map(|i| params[*i].clone()).collect();
            let chunk_grads: Vec<Vec<Value<'c, 'g>>> = grads.by_ref().take(indices.len()).collect();
            returned.extend(
                optimize(l, &entry, *reduction, distribution, chunk_phases, &chunk_blocks[c], &chunk_params, chunk_grads)
                    .map_err(|(op, m)| (op.unwrap_or(function), m))?,
            );
        }
        entry.append_operation(lin.b.func_return(&returned, loc).map_err(built)?);
    }
    Ok(())
}

/// The chunk's `blocks` forward and backward as two private functions,
/// `@<name>.forward(params..., x) -> (y, saved...)` and
/// `@<name>.backward(params..., saved..., sums..., dy) -> (dx, sums...)`
/// (each block's gradients added to its running sums), each calling the
/// block's phase once per block (backward in reverse); returns each one's
/// name and result types.
#[allow(clippy::type_complexity)]
fn chunk_pair<'c>(
    l: Lin<'c>,
    generated: &Module<'c>,
    name: &str,
    phases: &Phases<'c>,
    n_params: usize,
    param_args: &[(String, Type<'c>)],
    blocks: usize,
) -> Result<((String, Vec<Type<'c>>), (String, Vec<Type<'c>>)), BuildError> {
    let act = l.tensor(&phases.rows);
    let param_types: Vec<Type<'c>> = param_args.iter().map(|(_, t)| *t).collect();
    let saved_types = &phases.forward.1[1..];
    let grad_types = &phases.backward.1[1..];
    let repeat = |types: &[Type<'c>]| -> Vec<Type<'c>> { (0..blocks).flat_map(|_| types.iter().copied()).collect() };
    // Forward.
    let mut inputs = repeat(&param_types);
    inputs.push(act);
    let mut outputs = vec![act];
    outputs.extend(repeat(saved_types));
    let forward = format!("{name}.forward");
    private_function(l, generated, &forward, &inputs, &outputs, |body| {
        let mut x = arg(body, blocks * n_params)?;
        let mut returned = vec![];
        let mut saved = Vec::new();
        for b in 0..blocks {
            let mut args: Vec<Value> = (0..n_params).map(|j| arg(body, b * n_params + j)).collect::<Result<_, _>>()?;
            args.push(x);
            let out = call(l, body, &phases.forward.0, &args, &phases.forward.1)?;
            x = out[0];
            saved.extend(out[1..].iter().copied());
        }
        returned.push(x);
        returned.extend(saved);
        Ok(returned)
    })?;
    let forward_types = outputs;
    // Backward, adding each block's gradients to the sums passed in.
    let mut inputs = repeat(&param_types);
    inputs.extend(repeat(saved_types));
    inputs.extend(repeat(grad_types));
    inputs.push(act);
    let mut outputs = vec![act];
    outputs.extend(repeat(grad_types));
    let backward = format!("{name}.backward");
    let (per_block, per_grads) = (saved_types.len(), grad_types.len());
    private_function(l, generated, &backward, &inputs, &outputs, |body| {
        let sums_at = blocks * (n_params + per_block);
        let mut dy = arg(body, sums_at + blocks * per_grads)?;
        let mut grads = vec![Vec::new(); blocks];
        for b in (0..blocks).rev() {
            let mut args: Vec<Value> = (0..n_params).map(|j| arg(body, b * n_params + j)).collect::<Result<_, _>>()?;
            for j in 0..per_block {
                args.push(arg(body, blocks * n_params + b * per_block + j)?);
            }
            args.push(dy);
            let out = call(l, body, &phases.backward.0, &args, &phases.backward.1)?;
            dy = out[0];
            for (j, this) in out[1..].iter().enumerate() {
                // In place into the sum, so bufferization reuses it.
                let sum = arg(body, sums_at + b * per_grads + j)?;
                let rank = shape_of(*this).len();
                let maps = [linalg::identity(rank), linalg::identity(rank)];
                let added = l.generic(body, &[*this], &[sum], &maps, &vec![linalg::Iter::P; rank], |s, a| Ok(vec![s.add(a[1], a[0])?]))?;
                grads[b].push(added[0]);
            }
        }
        let mut returned = vec![dy];
        returned.extend(grads.into_iter().flatten());
        Ok(returned)
    })?;
    Ok(((forward, forward_types), (backward, outputs)))
}

/// `func.func private @name(inputs) -> outputs` whose body `build` writes
/// (returning the values to return), appended to `generated`.
fn private_function<'c>(
    l: Lin<'c>,
    generated: &Module<'c>,
    name: &str,
    inputs: &[Type<'c>],
    outputs: &[Type<'c>],
    build: impl for<'a> FnOnce(&melior::ir::BlockRef<'c, 'a>) -> Result<Vec<Value<'c, 'a>>, BuildError>,
) -> Result<(), BuildError> {
    use melior::ir::{Block, Region, RegionLike};
    let b = &l.b;
    let region = Region::new();
    let body = region.append_block(Block::new(&inputs.iter().map(|t| (*t, l.loc)).collect::<Vec<_>>()));
    let returned = build(&body)?;
    body.append_operation(b.func_return(&returned, l.loc)?);
    generated.body().append_operation(l.private_function(name, inputs, outputs, region, false)?);
    Ok(())
}

/// A channel per boundary transfer: a twin of the transfers' mesh (same
/// axes and shape, another communicator) named `@<mesh>.<transfer id>`,
/// added to `generated`. Each transfer's messages then match in their own
/// order (its microbatches'), whatever order the stages interleave the
/// transfers of a boundary in (a 1F1B warm-up sends several activations
/// before the first gradient comes back; interleaved chunks cross the same
/// stage pair in both directions).
fn channels<'c, 'm>(pipeline: &Pipeline<'c, 'm>, generated: &Module<'c>) -> Result<Vec<(OperationRef<'c, 'm>, String)>, String> {
    let transfers: Vec<OperationRef<'c, 'm>> =
        pipeline.stages.iter().flat_map(|s| s.chunks.iter()).flat_map(|c| [c.send_forward, c.send_backward]).flatten().collect();
    let Some(first) = transfers.first() else { return Ok(Vec::new()) };
    let mesh = crate::ir::read::symbol_attr(*first, "mesh").ok_or("a transfer names no mesh")?;
    let module = first.parent_operation().and_then(|c| c.parent_operation()).ok_or("a transfer outside the module")?;
    let original = crate::ir::read::region_ops(module, 0)
        .into_iter()
        .find(|op| {
            crate::ir::ods::OpKind::of(*op) == Some(crate::ir::ods::OpKind::DistMesh)
                && crate::ir::read::str_attr(*op, "sym_name") == Some(mesh)
        })
        .ok_or_else(|| format!("mesh @{mesh} is not in the module"))?;
    let body = generated.body();
    let mut named = Vec::new();
    // In the transfers' order: each inserted first, so the last goes first.
    for transfer in transfers.into_iter().rev() {
        let twin = format!("{mesh}.{}", crate::ir::read::str_attr(transfer, "id").unwrap_or("p2p"));
        // SAFETY: cloning a live op gives an owned op of the same context.
        let copy = unsafe { melior::ir::Operation::from_raw(mlir_sys::mlirOperationClone(original.to_raw())) };
        let key = "sym_name";
        // SAFETY: a live op and a string attribute of its context.
        unsafe {
            let name = mlir_sys::mlirStringAttrGet(
                mlir_sys::mlirOperationGetContext(copy.to_raw()),
                mlir_sys::MlirStringRef { data: twin.as_ptr().cast(), length: twin.len() },
            );
            mlir_sys::mlirOperationSetAttributeByName(
                copy.to_raw(),
                mlir_sys::MlirStringRef { data: key.as_ptr().cast(), length: key.len() },
                name,
            );
        }
        match body.first_operation() {
            Some(first) => body.insert_operation_before(first, copy),
            None => body.append_operation(copy),
        };
        named.push((transfer, twin));
    }
    named.reverse();
    Ok(named)
}
