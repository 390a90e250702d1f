//! A pipelined derived program's step: one function per stage
//! (`@train_step_s<k>`), which the ranks of stage `k` run. Each runs its
//! stage's schedule slot by slot (1F1B, GPipe: the derived program's
//! `dist.schedule`): a forward slot takes its microbatch's rows of the
//! batch (first stage) or receives the previous stage's activation, runs
//! the stage's blocks forward, keeps what their backward reads, and sends
//! its output on (or, on the last stage, stores it); a backward slot takes
//! the output's gradient (last stage) or receives it from the next stage,
//! runs the blocks backward, sums their weight gradients, and sends the
//! input's gradient back (or stores it). Then each block's data-parallel
//! reduction and optimizer. The slots are unrolled: a stage's function
//! grows with its slots (2 x microbatches) and its blocks, not their
//! product, since each block's phases are functions it calls.
//!
//! Transfers are the derived program's `dist.p2p`s on tensors, which both
//! ends run (the receiver's input is an empty tensor of the activation's
//! type); they become asynchronous (`dist-async`) and a sender waits only
//! at the end of the step, so no schedule deadlocks on a send. The two
//! directions of a stage boundary interleave differently on its two sides
//! (a 1F1B warm-up sends several activations before the first gradient
//! comes back), so gradients travel on a twin of the mesh (`@<mesh>.backward`,
//! the same ranks as another communicator) and each direction is matched
//! in its own order.

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
    stage_phases: &dyn Fn(usize, &Template<'c, 'm>) -> Result<Phases<'c>, Failure<'c, 'm>>,
    block_args: &[Vec<(String, Type<'c>)>],
    block_results: &[Vec<(String, Type<'c>)>],
    function: OperationRef<'c, 'm>,
    generated: &'g Module<'c>,
) -> Result<(), Failure<'c, 'm>> {
    let built = |e: BuildError| (function, e.to_string());
    let loc = function.location();
    let l = lin.at(loc);
    let last = pipeline.stages.len() - 1;
    let backward_mesh = twin_mesh(pipeline, generated).map_err(|m| (function, m))?;
    let whole_ty = l.tensor(&phases.whole);
    for (k, stage) in pipeline.stages.iter().enumerate() {
        let (own, reduction) = match &stage.template {
            Some(template) => (stage_phases(k, template)?, template.gradient_reduction),
            None => (phases.clone(), distribution.gradient_reduction),
        };
        let phases = &own;
        let blocks: Vec<usize> = (stage.first_block..stage.first_block + stage.blocks).filter_map(|b| usize::try_from(b).ok()).collect();
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
        let x_all = arg(&entry, blocks.len() * n_params).map_err(built)?;
        let dy_all = arg(&entry, blocks.len() * n_params + 1).map_err(built)?;
        let offsets = vec![0i64; phases.rows.len()];
        let grad_types = &phases.backward.1[1..];
        let mut grads: Vec<Vec<Value<'c, 'g>>> = blocks
            .iter()
            .map(|_| grad_types.iter().map(|t| l.full(&entry, &dims(*t), 0.0)).collect::<Result<_, _>>())
            .collect::<Result<_, _>>()
            .map_err(built)?;
        let (mut out_acc, mut in_grad_acc) =
            (l.empty(&entry, &phases.whole).map_err(built)?, l.empty(&entry, &phases.whole).map_err(built)?);
        let mut kept: std::collections::HashMap<u64, Vec<Vec<Value<'c, 'g>>>> = std::collections::HashMap::new();
        let transfer = |template: Option<OperationRef<'c, 'm>>, input: Value<'c, 'g>, mesh: Option<&str>, microbatch: u64, sends: bool| {
            let what = if mesh.is_some() { "gradient" } else { "activation" };
            let template = template.ok_or_else(|| (function, format!("stage {k}: the derived program has no transfer of the {what}")))?;
            distributed::transfer(l, &entry, template, input, mesh, microbatch, sends).map_err(|m| (template, m))
        };
        for &(microbatch, backward) in &stage.slots {
            let rows = i64::try_from(microbatch)
                .ok()
                .and_then(|m| m.checked_mul(phases.rows[0]))
                .ok_or((function, "too many rows".to_string()))?;
            let rows_at = l.index_constant(&entry, rows).map_err(built)?;
            if !backward {
                let mut x = if k == 0 {
                    l.extract(&entry, x_all, &offsets, &phases.rows, Some(rows_at)).map_err(built)?
                } else {
                    let empty = l.empty(&entry, &phases.rows).map_err(built)?;
                    transfer(pipeline.stages[k - 1].send_forward, empty, None, microbatch, false)?
                };
                let mut saved = Vec::new();
                for p in &params {
                    let mut call_args = p.clone();
                    call_args.push(x);
                    let out = call(l, &entry, &phases.forward.0, &call_args, &phases.forward.1).map_err(built)?;
                    x = out[0];
                    saved.push(out[1..].to_vec());
                }
                kept.insert(microbatch, saved);
                if k == last {
                    out_acc = l.insert(&entry, x, out_acc, &offsets, &phases.rows, Some(rows_at)).map_err(built)?;
                } else {
                    transfer(stage.send_forward, x, None, microbatch, true)?;
                }
            } else {
                let mut dy = if k == last {
                    l.extract(&entry, dy_all, &offsets, &phases.rows, Some(rows_at)).map_err(built)?
                } else {
                    let empty = l.empty(&entry, &phases.rows).map_err(built)?;
                    transfer(pipeline.stages[k + 1].send_backward, empty, Some(&backward_mesh), microbatch, false)?
                };
                let saved = kept
                    .remove(&microbatch)
                    .ok_or_else(|| (function, format!("stage {k}: the schedule runs microbatch {microbatch} backward before forward")))?;
                for (i, p) in params.iter().enumerate().rev() {
                    let mut call_args = p.clone();
                    call_args.extend(saved[i].iter().copied());
                    call_args.push(dy);
                    let out = call(l, &entry, &phases.backward.0, &call_args, &phases.backward.1).map_err(built)?;
                    dy = out[0];
                    for (sum, this) in grads[i].iter_mut().zip(&out[1..]) {
                        let rank = shape_of(*this).len();
                        let maps = [linalg::identity(rank), linalg::identity(rank)];
                        let added =
                            l.generic(&entry, &[*this], &[*sum], &maps, &vec![linalg::Iter::P; rank], |s, a| Ok(vec![s.add(a[1], a[0])?]));
                        *sum = added.map_err(built)?[0];
                    }
                }
                if k == 0 {
                    in_grad_acc = l.insert(&entry, dy, in_grad_acc, &offsets, &phases.rows, Some(rows_at)).map_err(built)?;
                } else {
                    transfer(stage.send_backward, dy, Some(&backward_mesh), microbatch, true)?;
                }
            }
        }
        if let Some(microbatch) = kept.keys().min() {
            return Err((function, format!("stage {k}: the schedule never runs microbatch {microbatch} backward")));
        }
        let mut returned = Vec::new();
        if k == last {
            returned.push(out_acc);
        }
        if k == 0 {
            returned.push(in_grad_acc);
        }
        returned.extend(optimize(l, &entry, reduction, phases, &blocks, &params, grads).map_err(|(op, m)| (op.unwrap_or(function), m))?);
        entry.append_operation(lin.b.func_return(&returned, loc).map_err(built)?);
    }
    Ok(())
}

fn dims(t: Type) -> Vec<i64> {
    crate::ir::read::tensor_shape(t).unwrap_or_default().into_iter().map(|d| d.unwrap_or(0)).collect()
}

/// The mesh the gradients travel on: a twin of the transfers' mesh (same
/// axes and shape, another communicator), added to `generated`.
fn twin_mesh<'c>(pipeline: &Pipeline<'c, '_>, generated: &Module<'c>) -> Result<String, String> {
    let transfer = pipeline
        .stages
        .iter()
        .find_map(|s| s.send_forward.or(s.send_backward))
        .ok_or("the pipelined step has no transfers between its stages")?;
    let mesh = crate::ir::read::symbol_attr(transfer, "mesh").ok_or("a transfer names no mesh")?;
    let module = transfer.parent_operation().ok_or("a transfer outside the module")?;
    let module = module.parent_operation().ok_or("a transfer outside the module")?;
    let original = crate::ir::read::region_ops(module, 0)
        .into_iter()
        .find(|op| {
            crate::ir::ods::OpKind::of(*op) == Some(crate::ir::ods::OpKind::DistMesh)
                && crate::ir::read::str_attr(*op, "sym_name") == Some(mesh)
        })
        .ok_or_else(|| format!("mesh @{mesh} is not in the module"))?;
    let twin = format!("{mesh}.backward");
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
    let body = generated.body();
    match body.first_operation() {
        Some(first) => body.insert_operation_before(first, copy),
        None => body.append_operation(copy),
    };
    Ok(twin)
}
