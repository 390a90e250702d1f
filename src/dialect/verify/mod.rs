//! Rust verifiers for what IRDL cannot say.
//!
//! The C++ dialects generated from the ODS check operand and result types,
//! attribute kinds, enums and traits when IR is parsed or built. The rules
//! here need more than one op or more than one attribute at a time: unique
//! ids, headers, forbidden fields per layer, mesh and rank membership,
//! sharding, collective legality, async waits, effects, and the whole step
//! (pipeline, chunks, schedules). They run after parsing and after every
//! pass, and report MLIR diagnostics at the offending op's location.

pub mod checker;
pub(crate) mod layering;
mod ods_rules;
pub(crate) mod step;
pub(crate) mod tiling;

use melior::ir::OperationRef;

use self::checker::Checker;
use crate::{
    dialect::{dist, model, plan},
    ir::read::collect_ops,
};

/// Runs every Blueprint rule over `root` (normally a `builtin.module`).
/// Returns `true` when the IR is valid; errors have been emitted otherwise.
#[must_use]
pub fn verify_blueprint(root: OperationRef) -> bool {
    verify_ops(&collect_ops(root))
}

/// Runs every Blueprint rule over `ops` (each op once, nested ops
/// included): a whole module, or the whole layers a pass appended. Every
/// rule reads one layer at a time, so a complete layer verifies alone.
#[must_use]
pub fn verify_ops(ops: &[OperationRef]) -> bool {
    let mut checker = Checker::default();
    // Each op's kind is looked up once; the rules below read it from here.
    let mut memo = crate::ir::read::KindMemo::default();
    let kinds: Vec<(crate::ir::ods::OpKind, OperationRef)> = ops.iter().filter_map(|op| memo.of(*op).map(|k| (k, *op))).collect();
    if kinds.is_empty() {
        return true;
    }
    ods_rules::check(&mut checker, &kinds);
    layering::check(&mut checker, ops, &kinds);
    model::verify::check(&mut checker, &kinds);
    dist::verify::check(&mut checker, &kinds);
    plan::verify::check(&mut checker, &kinds);
    tiling::check(&mut checker, &kinds);
    step::check(&mut checker, &kinds);
    !checker.failed()
}
