//! Rules that follow from the ODS table alone: attribute presence and kind
//! (also for optional attributes, which IRDL does not see), enum cases,
//! numeric confinement, and no undeclared inherent attributes.

use melior::ir::{
    operation::OperationLike, Attribute, AttributeLike, OperationRef,
};

use super::Checker;
use crate::{
    ir::{dialect_of, i64_array_value, int_value, name_of, string_list, string_value},
    ods::{op_spec, AttrKind},
};

/// Attributes MLIR itself may put on an op with variadic operand groups.
const STRUCTURAL_ATTRIBUTES: [&str; 2] = ["operandSegmentSizes", "resultSegmentSizes"];

pub fn check(checker: &mut Checker, ops: &[OperationRef]) {
    for &op in ops {
        let Some(spec) = op_spec(&name_of(op)) else { continue };
        for attr in spec.attributes {
            match op.attribute(attr.name) {
                Ok(value) => check_kind(checker, op, attr.name, attr.kind, value),
                Err(_) if !attr.optional => {
                    checker.error(op, format!("requires attribute '{}'", attr.name));
                }
                Err(_) => {}
            }
        }
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

fn check_kind(checker: &mut Checker, op: OperationRef, name: &str, kind: AttrKind, attribute: Attribute) {
    let integer = || int_value(attribute);
    let value = crate::ir::attribute_text(attribute);
    match kind {
        AttrKind::String if !attribute.is_string() => {
            checker.error(op, format!("attribute '{name}' must be a string, but got {value}"));
        }
        AttrKind::Integer | AttrKind::NonNegativeInteger | AttrKind::PositiveInteger
        | AttrKind::PowerOfTwoInteger => {
            let Some(v) = integer() else {
                checker.error(op, format!("attribute '{name}' must be an integer, but got {value}"));
                return;
            };
            let bad = match kind {
                AttrKind::NonNegativeInteger if v < 0 => Some("non-negative"),
                AttrKind::PositiveInteger if v <= 0 => Some("positive"),
                AttrKind::PowerOfTwoInteger if v <= 0 || (v & (v - 1)) != 0 => {
                    Some("a positive power of two")
                }
                _ => None,
            };
            if let Some(rule) = bad {
                checker.error(op, format!("attribute '{name}' must be {rule}, but got {v}"));
            }
        }
        AttrKind::DenseI64Array if i64_array_value(attribute).is_none() => {
            checker.error(op, format!("attribute '{name}' must be an array<i64: ...>, but got {value}"));
        }
        AttrKind::SymbolRef if !attribute.is_flat_symbol_ref() => {
            checker.error(op, format!("attribute '{name}' must be a flat symbol reference, but got {value}"));
        }
        AttrKind::Array if !attribute.is_array() => {
            checker.error(op, format!("attribute '{name}' must be an array, but got {value}"));
        }
        AttrKind::Unit if !attribute.is_unit() => {
            checker.error(op, format!("attribute '{name}' must be a unit attribute, but got {value}"));
        }
        AttrKind::Float if !attribute.is_float() => {
            checker.error(op, format!("attribute '{name}' must be a float, but got {value}"));
        }
        AttrKind::IntegerOrSymbolRef if integer().is_none() && !attribute.is_flat_symbol_ref() => {
            checker.error(op, format!("attribute '{name}' must be an integer team or a mesh symbol, but got {value}"));
        }
        AttrKind::Enum(spec) => match integer() {
            Some(v) if spec.accepts(v) => {}
            _ => {
                let cases: Vec<&str> = spec.cases.iter().map(|(name, _)| *name).filter(|n| *n != "none").collect();
                checker.error(op, format!("attribute '{name}' must be one of {} ({}), but got {value}", quoted(&cases), spec.name));
            }
        },
        _ => {}
    }
}

fn quoted(cases: &[&str]) -> String {
    cases.iter().map(|c| format!("'{c}'")).collect::<Vec<_>>().join(", ")
}
