//! `dist-sink-waits`: moves each `dist.wait` down to just before the first
//! op in its block that uses (directly or inside a nested region) a result
//! of the async op it waits on, so independent computation overlaps the
//! communication. A wait never moves past a use, never leaves its block,
//! and with no later use it stops before the block's terminator.

use std::collections::HashMap;

use melior::{
    ir::{block::BlockLike, operation::OperationLike, OperationRef},
    pass::ExternalPass,
};

use crate::ir::rewrite::move_before;
use crate::ir::{
    ods::OpKind,
    read::{collect_ops, defining_op, users},
};

crate::ir::pass_macro::external_pass!(
    "DistSinkWaits",
    "dist-sink-waits",
    "Move each dist.wait down to just before the first use of its results",
    run
);

fn run(module: OperationRef, _pass: ExternalPass) {
    let waits: Vec<OperationRef> = collect_ops(module).into_iter().filter(|op| OpKind::of(*op) == Some(OpKind::DistWait)).collect();
    // Positions are numbered once per block, and every target is found on
    // the original order before anything moves: MLIR renumbers a block
    // after each move, so asking it again per wait would be quadratic.
    // Only waits move and a wait is never a target (it uses no data
    // result), so the original order decides every target.
    let mut positions = BlockPositions::default();
    let moves: Vec<(OperationRef, OperationRef)> =
        waits.iter().filter_map(|wait| Some((*wait, sink_target(*wait, &mut positions)?))).collect();
    for (wait, target) in moves {
        move_before(wait, target);
    }
}

/// The index of each op in its block, computed once per block.
#[derive(Default)]
struct BlockPositions {
    blocks: HashMap<usize, HashMap<usize, usize>>,
}

impl BlockPositions {
    fn index(&mut self, block: melior::ir::BlockRef, op: OperationRef) -> usize {
        let numbered = self.blocks.entry(block.to_raw().ptr as usize).or_insert_with(|| {
            let mut numbered = HashMap::new();
            let mut next = block.first_operation();
            while let Some(current) = next {
                numbered.insert(current.to_raw().ptr as usize, numbered.len());
                next = current.next_in_block();
            }
            numbered
        });
        numbered.get(&(op.to_raw().ptr as usize)).copied().unwrap_or(usize::MAX)
    }
}

/// The op the wait should end up just before, if it should move.
fn sink_target<'c, 'a>(wait: OperationRef<'c, 'a>, positions: &mut BlockPositions) -> Option<OperationRef<'c, 'a>> {
    let block = wait.block()?;
    let producer = defining_op(wait.operand(0).ok()?)?;
    if !OpKind::of(producer).is_some_and(OpKind::is_async) {
        return None;
    }
    let at = positions.index(block, wait);
    // The first op after the wait that uses a non-handle result.
    let mut first_use: Option<(usize, OperationRef)> = None;
    for result in producer.results().skip(1) {
        for user in users(result) {
            let Some(anchor) = ancestor_in_block(user, block.to_raw().ptr) else { continue };
            let index = positions.index(block, anchor);
            if index <= at {
                // A use before the wait is the verifier's business.
                continue;
            }
            if first_use.is_none_or(|(first, _)| index < first) {
                first_use = Some((index, anchor));
            }
        }
    }
    let (index, target) = match first_use {
        Some(found) => found,
        None => {
            let terminator = block.terminator()?;
            (positions.index(block, terminator), terminator)
        }
    };
    // Already right before its target (or the target itself): nothing to do.
    (index > at + 1).then_some(target)
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
