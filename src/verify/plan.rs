//! PortablePlanIR rules: tasks sit in the concurrency group their kind
//! implies. Non-negative facts, power-of-two alignment, forbidden target
//! fields and the header digest are checked from the ODS and layering rules.

use melior::ir::OperationRef;

use super::Checker;
use crate::{
    ir::enum_attr,
    ods::{ConcurrencyGroup, OpKind},
};

pub fn check(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) {
    for &(kind, op) in ops {
        let expected = match kind {
            OpKind::PlanComputeTask => ConcurrencyGroup::Compute,
            OpKind::PlanCollectiveTask => ConcurrencyGroup::Network,
            _ => continue,
        };
        if let Some(group) = enum_attr::<ConcurrencyGroup>(op, "group") {
            if group != expected {
                checker.error(op, format!("must be in concurrency group '{expected}', but is in '{group}'"));
            }
        }
    }
}
