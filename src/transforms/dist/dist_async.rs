//! `dist-async`: turns each synchronous collective or point-to-point op into
//! its start form (async handle + result) followed immediately by a
//! `dist.wait`. `dist-sink-waits` then moves the waits down so independent
//! work overlaps communication.

use melior::{
    ir::{block::BlockLike, operation::OperationBuilder, operation::OperationLike, OperationRef, ValueLike},
    pass::ExternalPass,
};

use crate::ir::rewrite::{attributes_of, erase, known_type, replace_all_uses};
use crate::ir::{
    diagnostics::emit_error,
    ods::OpKind,
    read::{collect_ops, name_of},
};

crate::ir::pass_macro::external_pass!(
    "DistAsync",
    "dist-async",
    "Turn synchronous collectives and point-to-point transfers into start + wait",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    // Every synchronous communication op with a `_start` form (the pairs
    // come from the ODS).
    let targets: Vec<(OperationRef, OpKind)> =
        collect_ops(module).into_iter().filter_map(|op| Some((op, OpKind::of(op)?.async_form()?))).collect();
    // Validate everything before changing anything.
    for &(op, _) in &targets {
        if op.block().is_none() || op.result_count() != 1 {
            emit_error(op.location(), &format!("'{}' op cannot be made asynchronous: expected one result in a block", name_of(op)));
            pass.signal_failure();
            return;
        }
    }
    for (op, start) in targets {
        if let Err(message) = make_async(op, start) {
            emit_error(op.location(), &message);
            pass.signal_failure();
            return;
        }
    }
}

fn make_async(op: OperationRef, start_kind: OpKind) -> Result<(), String> {
    let name = name_of(op);
    let location = op.location();
    let block = op.block().ok_or("op has no block")?;
    let result = op.result(0).map_err(|e| e.to_string())?;
    let operands: Vec<_> = op.operands().collect();
    let start = OperationBuilder::new(start_kind.name(), location)
        .add_operands(&operands)
        .add_results(&[known_type(op, "!dist.async_handle"), result.r#type()])
        .add_attributes(&attributes_of(op))
        .build()
        .map_err(|e| format!("'{name}' op: cannot build its start form: {e}"))?;
    let start = block.insert_operation_before(op, start);
    let handle = start.result(0).map_err(|e| e.to_string())?;
    let value = start.result(1).map_err(|e| e.to_string())?;
    let b = crate::dialect::builder::Builder::of(op);
    let wait = crate::dialect::dist::Wait { handle: handle.into(), optional: Default::default() }
        .build(&b, location)
        .map_err(|e| format!("'{name}' op: cannot build its wait: {e}"))?;
    block.insert_operation_after(start, wait);
    replace_all_uses(result.into(), value.into());
    erase(op);
    Ok(())
}
