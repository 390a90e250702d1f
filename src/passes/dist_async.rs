//! `dist-async`: turns each synchronous collective or point-to-point op into
//! its start form (async handle + result) followed immediately by a
//! `dist.wait`. `dist-sink-waits` then moves the waits down so independent
//! work overlaps communication.

use melior::{
    ir::{
        block::BlockLike, operation::OperationLike, operation::OperationBuilder,
        OperationRef, ValueLike,
    },
    pass::ExternalPass,
};

use super::rewrite::{attributes_of, erase, known_type, replace_all_uses};
use crate::{diagnostics::emit_error, ir::collect_ops, ir::name_of};

/// The synchronous communication ops that have a `_start` form.
pub const SYNC_COMMUNICATION: [&str; 6] = [
    "dist.all_reduce",
    "dist.reduce_scatter",
    "dist.all_gather",
    "dist.all_to_all",
    "dist.broadcast",
    "dist.p2p",
];

crate::passes::external_pass!(
    "DistAsync",
    "dist-async",
    "Turn synchronous collectives and point-to-point transfers into start + wait",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    let targets: Vec<OperationRef> = collect_ops(module)
        .into_iter()
        .filter(|op| SYNC_COMMUNICATION.contains(&name_of(*op).as_str()))
        .collect();
    // Validate everything before changing anything.
    for &op in &targets {
        if op.block().is_none() || op.result_count() != 1 {
            emit_error(op.location(), &format!("'{}' op cannot be made asynchronous: expected one result in a block", name_of(op)));
            pass.signal_failure();
            return;
        }
    }
    for op in targets {
        if let Err(message) = make_async(op) {
            emit_error(op.location(), &message);
            pass.signal_failure();
            return;
        }
    }
}

fn make_async(op: OperationRef) -> Result<(), String> {
    let name = name_of(op);
    let location = op.location();
    let block = op.block().ok_or("op has no block")?;
    let result = op.result(0).map_err(|e| e.to_string())?;
    let operands: Vec<_> = op.operands().collect();
    let start = OperationBuilder::new(&format!("{name}_start"), location)
        .add_operands(&operands)
        .add_results(&[known_type(op, "!dist.async_handle"), result.r#type()])
        .add_attributes(&attributes_of(op))
        .build()
        .map_err(|e| format!("'{name}' op: cannot build its start form: {e}"))?;
    let start = block.insert_operation_before(op, start);
    let handle = start.result(0).map_err(|e| e.to_string())?;
    let value = start.result(1).map_err(|e| e.to_string())?;
    let wait = OperationBuilder::new("dist.wait", location)
        .add_operands(&[handle.into()])
        .build()
        .map_err(|e| format!("'{name}' op: cannot build its wait: {e}"))?;
    block.insert_operation_after(start, wait);
    replace_all_uses(result.into(), value.into());
    erase(op);
    Ok(())
}
