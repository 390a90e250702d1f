//! How a rule reports: the [`Checker`] every verifier writes to, and the
//! position of a second op for messages that point at one.

use melior::ir::{operation::OperationLike, OperationRef};

use crate::ir::{
    diagnostics::{emit_error, source_position},
    read::name_of,
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
