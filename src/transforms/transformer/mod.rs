//! The Transformer frontend and its passes: import into ModelIR,
//! decomposition, distribution into DistributedTaskIR and planning into
//! PortablePlanIR.

pub mod block;
pub mod decompose;
pub mod distribute;
pub mod distribute_inference;
pub(crate) mod emit;
pub mod import;
pub mod plan;

use melior::ir::{operation::OperationLike, Module, OperationRef};

use crate::ir::{diagnostics::emit_error, rewrite::move_into};

/// The op a pass blames and why.
pub(crate) type Failure<'c, 'a> = (OperationRef<'c, 'a>, String);

/// Fails unless each named integer attribute of `op` equals the bound
/// spec's value (the ModelIR op and the strategy binding must agree).
pub(crate) fn check_bound_dimensions<'c, 'a>(
    op: OperationRef<'c, 'a>,
    binding: &str,
    expected: &[(&str, u64)],
) -> Result<(), Failure<'c, 'a>> {
    for &(name, want) in expected {
        let found = crate::ir::read::int_attr(op, name).unwrap_or(-1);
        if u64::try_from(found).ok() != Some(want) {
            let op_name = crate::ir::read::name_of(op);
            return Err((op, format!("'{op_name}' op {name} is {found}, but the strategy binding '{binding}' says {want}")));
        }
    }
    Ok(())
}

/// Fails if `ops` already hold a `dist` program (`pass` names the pass).
pub(crate) fn ensure_no_dist_program<'c, 'a>(ops: &[OperationRef<'c, 'a>], pass: &str) -> Result<(), Failure<'c, 'a>> {
    match ops.iter().find(|op| crate::ir::read::dialect_of(&crate::ir::read::name_of(**op)) == "dist") {
        Some(existing) => Err((*existing, format!("{pass}: the module already holds a 'dist' program"))),
        None => Ok(()),
    }
}

/// Runs a pass that builds IR: `build` validates the input and builds the
/// new ops into a detached module (or names the op to blame and why); only
/// then are they moved to the end of `module`, so a failing pass leaves the
/// module unchanged.
pub(crate) fn run_building<'c, 'a>(
    module: OperationRef<'c, 'a>,
    pass: melior::pass::ExternalPass,
    build: impl FnOnce(OperationRef<'c, 'a>, &Module<'c>) -> Result<(), Failure<'c, 'a>>,
) {
    let generated = Module::new(module.location());
    match build(module, &generated) {
        Ok(()) => {
            // Only appended: the driver's verifier checks the new layer alone.
            if let Some(first) = move_into(&generated, module) {
                crate::transforms::verify_pass::appended(module, first);
            }
        }
        Err((op, message)) => {
            emit_error(op.location(), &message);
            pass.signal_failure();
        }
    }
}
