//! The rule that follows from the ODS table but that MLIR does not check:
//! no undeclared attributes. (Presence, kind, enum cases and numeric
//! confinement of declared attributes are checked by the generated C++
//! verifiers whenever IR is parsed or a pass ends.)

use melior::ir::OperationRef;

use super::Checker;
use crate::{ir::dialect_of, ods::OpKind};

/// Attributes MLIR itself may put on an op with variadic operand groups.
const STRUCTURAL_ATTRIBUTES: [&str; 2] = ["operandSegmentSizes", "resultSegmentSizes"];

pub fn check(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) {
    // Names already accepted for each op kind, as the context's uniqued
    // identifiers: after the first op of a kind, each attribute costs a
    // few pointer comparisons, not string work.
    let mut accepted: Vec<Vec<*const std::ffi::c_void>> = vec![Vec::new(); OpKind::ALL.len()];
    for &(kind, op) in ops {
        let known = &mut accepted[kind as usize];
        let raw = op.to_raw();
        // SAFETY: a live op; indices below its attribute count.
        let count = unsafe { mlir_sys::mlirOperationGetNumAttributes(raw) };
        for index in 0..count {
            let identifier = unsafe { mlir_sys::mlirOperationGetAttribute(raw, index) }.name;
            if known.contains(&identifier.ptr) {
                continue;
            }
            // SAFETY: an identifier of the op's live context.
            let name = crate::ir::identifier_str(unsafe { melior::ir::Identifier::from_raw(identifier) });
            if declared(kind, name) {
                known.push(identifier.ptr);
            } else {
                let spec = kind.spec();
                checker.error(op, unknown_attribute_message(spec.name, name));
            }
        }
    }
}

/// Whether `name` may be on an op of `kind` (forbidden fields are not
/// declared, but the layering rule reports them).
fn declared(kind: OpKind, name: &str) -> bool {
    // Dialect-prefixed names are discardable annotations; the
    // forbidden-field rules still apply to them (layering.rs).
    if name.contains('.') || STRUCTURAL_ATTRIBUTES.contains(&name) {
        return true;
    }
    let spec = kind.spec();
    spec.attribute(name).is_some() || super::layering::is_forbidden(dialect_of(spec.name), name)
}

fn unknown_attribute_message(op: &str, name: &str) -> String {
    match name {
        "reduction" => "does not take a reduction (only all_reduce and reduce_scatter do)".into(),
        "root" => "does not take a root (only broadcast does)".into(),
        _ => format!("has unknown attribute '{name}' (not declared by '{op}')"),
    }
}
