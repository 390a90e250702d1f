//! Rust verifiers for what IRDL cannot say.
//!
//! The C++ dialects generated from the ODS check operand and result types,
//! attribute kinds, enums and traits when IR is parsed or built. The rules
//! here need more than one op or more than one attribute at a time: unique
//! ids, headers, forbidden fields per layer, mesh and rank membership,
//! sharding, collective legality, async waits, effects, and the whole step
//! (pipeline, chunks, schedules). They run after parsing and after every
//! pass, and report MLIR diagnostics at the offending op's location.

mod dist;
mod layering;
mod model;
mod ods_rules;
mod plan;
mod step;
mod tiling;

use melior::ir::{operation::OperationLike, OperationRef};

use crate::{
    diagnostics::{emit_error, source_position},
    ir::{collect_ops, name_of},
};

/// Records whether any rule failed; every failure is emitted as an MLIR
/// error at the op it is about.
#[derive(Default)]
pub struct Checker {
    failed: bool,
}

impl Checker {
    /// Emits `'<op name>' op <message>` at the op's location.
    pub fn error(&mut self, op: OperationRef, message: impl AsRef<str>) {
        emit_error(op.location(), &format!("'{}' op {}", name_of(op), message.as_ref()));
        self.failed = true;
    }

    #[must_use]
    pub fn failed(&self) -> bool {
        self.failed
    }
}

/// `file:line:col` of an op, for messages that point at a second op.
#[must_use]
pub fn position_of(op: OperationRef) -> String {
    match source_position(op.location()) {
        Some(p) => format!("{}:{}:{}", p.file, p.line, p.column),
        None => "an unknown location".to_string(),
    }
}

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
    let mut memo = crate::ir::KindMemo::default();
    let kinds: Vec<(crate::ods::OpKind, OperationRef)> = ops.iter().filter_map(|op| memo.of(*op).map(|k| (k, *op))).collect();
    if kinds.is_empty() {
        return true;
    }
    ods_rules::check(&mut checker, &kinds);
    layering::check(&mut checker, ops, &kinds);
    model::check(&mut checker, &kinds);
    dist::check(&mut checker, &kinds);
    plan::check(&mut checker, &kinds);
    tiling::check(&mut checker, &kinds);
    step::check(&mut checker, &kinds);
    !checker.failed()
}
