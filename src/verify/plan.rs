//! PortablePlanIR rules: tasks sit in the concurrency group their kind
//! implies. Non-negative facts, power-of-two alignment, forbidden target
//! fields and the header digest are checked from the ODS and layering rules.

use melior::ir::OperationRef;

use super::Checker;
use crate::ir::{name_of, str_attr};

pub fn check(checker: &mut Checker, ops: &[OperationRef]) {
    for &op in ops {
        let expected = match name_of(op).as_str() {
            "plan.compute_task" => "compute",
            "plan.collective_task" => "network",
            _ => continue,
        };
        if let Some(group) = str_attr(op, "group") {
            if group != expected {
                checker.error(op, format!("must be in concurrency group '{expected}', but is in '{group}'"));
            }
        }
    }
}
