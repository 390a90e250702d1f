//! The rule that follows from the ODS table but that MLIR does not check:
//! no undeclared attributes. (Presence, kind, enum cases and numeric
//! confinement of declared attributes are checked by the generated C++
//! verifiers whenever IR is parsed or a pass ends.)

use melior::ir::{operation::OperationLike, OperationRef};

use super::Checker;
use crate::{ir::dialect_of, ods::OpKind};

/// Attributes MLIR itself may put on an op with variadic operand groups.
const STRUCTURAL_ATTRIBUTES: [&str; 2] = ["operandSegmentSizes", "resultSegmentSizes"];

pub fn check(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) {
    for &(kind, op) in ops {
        let spec = kind.spec();
        for (name, _) in op.attributes() {
            let name = crate::ir::identifier_str(name);
            // Dialect-prefixed names are discardable annotations; the
            // forbidden-field rules still apply to them (layering.rs).
            if name.contains('.') || STRUCTURAL_ATTRIBUTES.contains(&name) {
                continue;
            }
            if spec.attribute(name).is_none() && !super::layering::is_forbidden(dialect_of(spec.name), name) {
                checker.error(op, unknown_attribute_message(spec.name, name));
            }
        }
    }
}

fn unknown_attribute_message(op: &str, name: &str) -> String {
    match name {
        "reduction" => "does not take a reduction (only all_reduce and reduce_scatter do)".into(),
        "root" => "does not take a root (only broadcast does)".into(),
        _ => format!("has unknown attribute '{name}' (not declared by '{op}')"),
    }
}
