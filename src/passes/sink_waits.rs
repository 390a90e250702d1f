//! `dist-sink-waits`: moves each `dist.wait` down to just before the first
//! op in its block that uses (directly or inside a nested region) a result
//! of the async op it waits on, so independent computation overlaps the
//! communication. A wait never moves past a use, never leaves its block,
//! and with no later use it stops before the block's terminator.

use melior::{
    ir::{block::BlockLike, operation::OperationLike, OperationRef},
    pass::ExternalPass,
};

use super::rewrite::move_before;
use crate::{
    ir::{collect_ops, defining_op, name_of, users},
    verify::is_async_op,
};

crate::passes::external_pass!(
    "DistSinkWaits",
    "dist-sink-waits",
    "Move each dist.wait down to just before the first use of its results",
    run
);

fn run(module: OperationRef, _pass: ExternalPass) {
    let waits: Vec<OperationRef> =
        collect_ops(module).into_iter().filter(|op| name_of(*op) == "dist.wait").collect();
    for wait in waits {
        if let Some(target) = sink_target(wait) {
            move_before(wait, target);
        }
    }
}

/// The op the wait should end up just before, if it should move.
fn sink_target<'c, 'a>(wait: OperationRef<'c, 'a>) -> Option<OperationRef<'c, 'a>> {
    let block = wait.block()?;
    let producer = defining_op(wait.operand(0).ok()?)?;
    if !is_async_op(&name_of(producer)) {
        return None;
    }
    // The first op after the wait that uses a non-handle result.
    let mut first_use: Option<OperationRef> = None;
    for result in producer.results().skip(1) {
        for user in users(result) {
            let Some(anchor) = ancestor_in_block(user, block.to_raw().ptr) else { continue };
            if !wait.is_before_in_block(anchor) {
                // A use before the wait is the verifier's business.
                continue;
            }
            if first_use.is_none_or(|f| anchor.is_before_in_block(f)) {
                first_use = Some(anchor);
            }
        }
    }
    let target = first_use.or_else(|| block.terminator())?;
    // Already right before its target: nothing to do.
    let next = wait.next_in_block()?;
    (next.to_raw().ptr != target.to_raw().ptr && wait.to_raw().ptr != target.to_raw().ptr).then_some(target)
}

fn ancestor_in_block<'c, 'a>(op: OperationRef<'c, 'a>, block: *mut std::ffi::c_void) -> Option<OperationRef<'c, 'a>> {
    let mut current = Some(op);
    while let Some(candidate) = current {
        if candidate.block().is_some_and(|b| b.to_raw().ptr == block) {
            return Some(candidate);
        }
        current = candidate.parent_operation();
    }
    None
}
