//! Tiled collectives (`mapping.tp_overlap`) in both task layers: a
//! collective tiled with a linear states `tiled_with`, `tiles` and
//! `overlap` together, and `tiled_with` names a matmul task of the same
//! phase (the weight gradient for a re-communication).

use std::collections::HashMap;

use melior::ir::{operation::OperationLike, OperationRef};

use super::checker::Checker;
use crate::ir::{
    ods::{ComputeCapability, OpKind, Phase, Primitive},
    read::{enum_attr, str_attr, AttrName},
};

const TILING: [&str; 3] = ["tiled_with", "tiles", "overlap"];

/// The phase of the linear a tiled collective of `phase` overlaps.
fn linear_phase(phase: Phase) -> Phase {
    if phase == Phase::Recommunication {
        Phase::WeightGradient
    } else {
        phase
    }
}

/// Whether `op` is a matmul task (a `dist.compute` running `matmul`, or a
/// `plan.compute_task` needing `matrix_multiply`).
fn is_matmul(kind: OpKind, op: OperationRef) -> bool {
    match kind {
        OpKind::DistCompute => enum_attr::<Primitive>(op, "primitive") == Some(Primitive::Matmul),
        OpKind::PlanComputeTask => enum_attr::<ComputeCapability>(op, "capability") == Some(ComputeCapability::MatrixMultiply),
        _ => false,
    }
}

pub fn check(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) {
    // Collectives are many: their names are compared by handle.
    let mut names: Option<[AttrName; 3]> = None;
    let tiled: Vec<(OpKind, OperationRef)> = ops
        .iter()
        .copied()
        .filter(|(k, op)| {
            (k.is_communication() || *k == OpKind::PlanCollectiveTask)
                && names.get_or_insert_with(|| TILING.map(|a| AttrName::new(*op, a))).iter().any(|a| a.on(*op))
        })
        .collect();
    if tiled.is_empty() {
        return;
    }
    // A plan keeps its ids from the dist program it was made from, and both
    // may share a module: look names up per layer.
    let compute: HashMap<(&str, &str), OperationRef> = ops
        .iter()
        .filter(|(k, _)| matches!(k, OpKind::DistCompute | OpKind::PlanComputeTask))
        .filter_map(|&(k, op)| str_attr(op, "id").map(|id| ((k.dialect(), id), op)))
        .collect();
    for (kind, op) in tiled {
        let missing: Vec<&str> = TILING.iter().copied().filter(|a| !op.has_attribute(a)).collect();
        if !missing.is_empty() {
            checker.error(
                op,
                format!(
                    "a tiled collective states 'tiled_with', 'tiles' and 'overlap' together, but '{}' is missing",
                    missing.join("', '")
                ),
            );
            continue;
        }
        let Some(with) = str_attr(op, "tiled_with") else { continue };
        let Some(&linear) = compute.get(&(kind.dialect(), with)) else {
            checker.error(op, format!("'tiled_with' names '{with}', which is no compute task of this program"));
            continue;
        };
        let linear_kind = if kind.dialect() == "plan" { OpKind::PlanComputeTask } else { OpKind::DistCompute };
        if !is_matmul(linear_kind, linear) {
            checker.error(op, format!("'tiled_with' must name a matmul task, but '{with}' is not one"));
            continue;
        }
        let (mine, theirs) = (enum_attr::<Phase>(op, "phase"), enum_attr::<Phase>(linear, "phase"));
        if let (Some(mine), Some(theirs)) = (mine, theirs) {
            if linear_phase(mine) != theirs {
                checker.error(
                    op,
                    format!(
                        "in phase '{mine}' it overlaps a linear in phase '{}', but '{with}' is in phase '{theirs}'",
                        linear_phase(mine)
                    ),
                );
            }
        }
    }
}
