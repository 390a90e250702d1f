//! The rule that follows from the ODS table but that MLIR does not check:
//! no undeclared attributes. (Presence, kind, enum cases and numeric
//! confinement of declared attributes are checked by the generated C++
//! verifiers whenever IR is parsed or a pass ends.)

use melior::ir::OperationRef;

use super::checker::Checker;
use crate::ir::{ods::OpKind, read::dialect_of};

/// Attributes MLIR itself may put on an op with variadic operand groups.
const STRUCTURAL_ATTRIBUTES: [&str; 2] = ["operandSegmentSizes", "resultSegmentSizes"];

pub fn check(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) {
    // Whether a name is declared by a kind, by the name's uniqued address:
    // a step has many ops of few kinds with few distinct names.
    let mut known: crate::ir::read::NameFacts<bool> = crate::ir::read::NameFacts::default();
    // The names of the last op of each kind whose names were all declared:
    // most ops of a kind list the same ones, compared by address at once.
    let mut declared: Vec<Vec<usize>> = vec![Vec::new(); OpKind::ALL.len()];
    for &(kind, op) in ops {
        let spec = kind.spec();
        let raw = op.to_raw();
        // SAFETY: a live op; its attribute names live as long as its context.
        let attributes = unsafe { crate::ir::read::named_attributes(raw) };
        let last = &mut declared[kind as usize];
        if last.len() == attributes.len() && attributes.iter().zip(last.iter()).all(|(named, &name)| named.name.ptr as usize == name) {
            continue;
        }
        let mut all_declared = true;
        let mut known = known.group(kind as usize);
        for (position, named) in attributes.iter().enumerate() {
            let allowed = known.get(position, named.name, |name| {
                // Dialect-prefixed names are discardable annotations; the
                // forbidden-field rules still apply to them (layering.rs).
                name.contains('.')
                    || STRUCTURAL_ATTRIBUTES.contains(&name)
                    || spec.attribute(name).is_some()
                    || super::layering::is_forbidden(dialect_of(spec.name), name)
            });
            if !allowed {
                all_declared = false;
                let identifier = unsafe { melior::ir::Identifier::from_raw(named.name) };
                checker.error(op, unknown_attribute_message(spec.name, crate::ir::raw::identifier_str(identifier)));
            }
        }
        if all_declared {
            last.clear();
            last.extend(attributes.iter().map(|named| named.name.ptr as usize));
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
