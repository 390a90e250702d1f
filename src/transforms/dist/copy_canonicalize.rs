//! `dist-canonicalize`: canonicalization patterns of the two
//! redistribution copies, applied with MLIR's greedy rewrite driver (so
//! constants and casts fold as under `canonicalize`) until a fixpoint:
//!
//! - refine dynamic result dims from constant `nl_shape` operands, casting
//!   the refined result back to the original type for existing users;
//! - fold a producer `tensor.cast` that only erases static information into
//!   the copy's `l_array` operand.
//!
//! Neither pattern rebuilds an identical op, so the driver converges.

use melior::{
    create_op_rewrite_pattern,
    ir::{
        operation::{OperationBuilder, OperationLike},
        OperationRef, Type, ValueLike,
    },
    pass::ExternalPass,
    GreedyRewriteDriverConfig, PatternRewriter,
};

use crate::ir::rewrite::{attributes_of, known_type};
use crate::ir::{
    diagnostics::emit_error,
    read::{defining_op, i32_array_attr, int_value, name_of, tensor_element, tensor_shape, type_string, users},
};

/// The redistribution copies (ODS class `Dist_CopyOp`).
fn copies() -> impl Iterator<Item = &'static str> {
    crate::ir::ods::OpKind::ALL.into_iter().filter(|k| k.is_copy()).map(crate::ir::ods::OpKind::name)
}

crate::ir::pass_macro::external_pass!(
    "DistCanonicalize",
    "dist-canonicalize",
    "Refine redistribution copy result types and fold producer casts (greedy, to a fixpoint)",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    let context_ref = module.context();
    // SAFETY: `context_ref` lives until the end of this function and every
    // use of `context` below ends before it.
    let context = unsafe { context_ref.to_ref() };
    // MLIR's C API leaves both the pattern set (freezing moves its
    // patterns out) and the frozen set (the driver only borrows it) to the
    // caller, which melior's wrappers forget; own both here.
    // SAFETY: a live context; the set is destroyed once, after freezing.
    let set = unsafe { mlir_sys::mlirRewritePatternSetCreate(context.to_raw()) };
    for name in copies() {
        let refine = create_op_rewrite_pattern(
            name,
            1,
            context,
            |_, op, rewriter| {
                // SAFETY: the driver hands over a live op and rewriter.
                let (op, rewriter) = unsafe { (OperationRef::from_raw(op), PatternRewriter::from_raw(rewriter)) };
                refine_result_type(op, &rewriter)
            },
            &[name, "tensor.cast"],
        );
        let fold = create_op_rewrite_pattern(
            name,
            1,
            context,
            |_, op, rewriter| {
                // SAFETY: as above.
                let (op, rewriter) = unsafe { (OperationRef::from_raw(op), PatternRewriter::from_raw(rewriter)) };
                fold_producer_cast(op, &rewriter)
            },
            &[],
        );
        // SAFETY: the set takes ownership of each pattern.
        unsafe {
            mlir_sys::mlirRewritePatternSetAdd(set, refine.into_raw());
            mlir_sys::mlirRewritePatternSetAdd(set, fold.into_raw());
        }
    }
    let config = GreedyRewriteDriverConfig::new();
    // SAFETY: `set`, `frozen` and `config` are live for these calls; each of
    // `set` and `frozen` is destroyed exactly once, after its last use.
    let converged = unsafe {
        let frozen = mlir_sys::mlirFreezeRewritePattern(set);
        mlir_sys::mlirRewritePatternSetDestroy(set);
        let result = mlir_sys::mlirApplyPatternsAndFoldGreedilyWithOp(module.to_raw(), frozen, config.to_raw());
        mlir_sys::mlirFrozenRewritePatternSetDestroy(frozen);
        result.value != 0
    };
    if !converged {
        emit_error(module.location(), "dist-canonicalize did not reach a fixpoint");
        pass.signal_failure();
    }
}

/// Index of the first `nl_shape` operand, from the operand segments.
fn nl_shape_start(op: OperationRef) -> Option<usize> {
    let segments = i32_array_attr(op, "operandSegmentSizes")?;
    let before = segments.len().checked_sub(1)?;
    usize::try_from(segments[..before].iter().sum::<i64>()).ok()
}

fn constant_index(op: OperationRef, operand: usize) -> Option<i64> {
    let producer = defining_op(op.operand(operand).ok()?)?;
    if name_of(producer) != "arith.constant" {
        return None;
    }
    int_value(producer.attribute("value").ok()?)
}

fn refine_result_type(op: OperationRef, rewriter: &PatternRewriter) -> bool {
    let Ok(result) = op.result(1) else { return false };
    let original = result.r#type();
    // A refined type would drop the encoding, which a cast cannot bridge.
    if crate::ir::read::tensor_has_encoding(original) {
        return false;
    }
    let (Some(shape), Some(element), Some(start)) = (tensor_shape(original), tensor_element(original), nl_shape_start(op)) else {
        return false;
    };
    let mut refined = shape.clone();
    for (dim, extent) in refined.iter_mut().enumerate() {
        if extent.is_none() {
            *extent = constant_index(op, start + dim).filter(|v| *v >= 0);
        }
    }
    if refined == shape {
        return false;
    }
    let spelled: Vec<String> = refined.iter().map(|d| d.map_or("?".into(), |v| v.to_string())).collect();
    let refined_type: Type = known_type(op, &format!("tensor<{}x{}>", spelled.join("x"), type_string(element)));
    let Ok(handle) = op.result(0) else { return false };
    // The cast back to the original type reads the copy's result, so it
    // goes right after the wait on the handle (the result is not usable
    // before it).
    let waits: Vec<OperationRef> =
        users(handle).into_iter().filter(|u| crate::ir::ods::OpKind::of(*u) == Some(crate::ir::ods::OpKind::DistWait)).collect();
    let [wait] = waits.as_slice() else { return false };
    let base = rewriter.as_rewriter_base();
    let operands: Vec<_> = op.operands().collect();
    let Ok(new_op) = OperationBuilder::new(&name_of(op), op.location())
        .add_operands(&operands)
        .add_results(&[handle.r#type(), refined_type])
        .add_attributes(&attributes_of(op))
        .build()
    else {
        return false;
    };
    base.set_insertion_point_before(op);
    let new_op = base.insert(new_op);
    let (Ok(new_handle), Ok(new_value)) = (new_op.result(0), new_op.result(1)) else { return false };
    let Ok(cast) = OperationBuilder::new("tensor.cast", op.location()).add_operands(&[new_value.into()]).add_results(&[original]).build()
    else {
        return false;
    };
    base.set_insertion_point_after(*wait);
    let cast = base.insert(cast);
    let Ok(cast_value) = cast.result(0) else { return false };
    base.replace_op_with_values(op, &[new_handle.into(), cast_value.into()]);
    true
}

/// `tensor.cast` from a type at least as static as its result, same rank
/// and element type, can feed the copy directly.
fn fold_producer_cast(op: OperationRef, rewriter: &PatternRewriter) -> bool {
    let Ok(operand) = op.operand(0) else { return false };
    let Some(cast) = defining_op(operand) else { return false };
    if name_of(cast) != "tensor.cast" {
        return false;
    }
    let Ok(source) = cast.operand(0) else { return false };
    let (Some(from), Some(to)) = (tensor_shape(source.r#type()), tensor_shape(operand.r#type())) else {
        return false;
    };
    let foldable = from.len() == to.len()
        && tensor_element(source.r#type()) == tensor_element(operand.r#type())
        && from.iter().zip(&to).all(|(f, t)| t.is_none() || f == t);
    if !foldable {
        return false;
    }
    let base = rewriter.as_rewriter_base();
    base.start_op_modification(op);
    // SAFETY: both the op and the new operand value are live.
    unsafe { mlir_sys::mlirOperationSetOperand(op.to_raw(), 0, source.to_raw()) };
    base.finalize_op_modification(op);
    true
}
