//! PortablePlanIR rules: tasks sit in the concurrency group their kind
//! implies. Non-negative facts, power-of-two alignment, forbidden target
//! fields and the header digest are checked from the ODS and layering rules.

use melior::ir::OperationRef;

use crate::dialect::verify::checker::Checker;
use crate::ir::{
    ods::{ConcurrencyGroup, OpKind},
    read::{int_value, AttrName},
};

pub fn check(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) {
    let mut name = None;
    for &(kind, op) in ops {
        let expected = match kind {
            OpKind::PlanComputeTask => ConcurrencyGroup::Compute,
            OpKind::PlanCollectiveTask => ConcurrencyGroup::Network,
            _ => continue,
        };
        // Found by the name's handle: every task has many attributes.
        let group_name = *name.get_or_insert_with(|| AttrName::new(op, "group"));
        if let Some(group) = group_name.of(op).and_then(int_value).and_then(ConcurrencyGroup::from_value) {
            if group != expected {
                checker.error(op, format!("must be in concurrency group '{expected}', but is in '{group}'"));
            }
        }
    }
}
