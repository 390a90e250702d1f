//! The Transformer frontend and its passes: import into ModelIR,
//! decomposition, distribution into DistributedTaskIR and planning into
//! PortablePlanIR.

pub mod binding;
pub mod decompose;
pub mod distribute;
pub mod distribute_inference;
pub mod import;
pub mod plan;

use melior::ir::{block::BlockLike, operation::OperationLike, OperationRef, RegionLike};

use crate::diagnostics::emit_error;

/// A location for generated IR: `name` (the new op's id) wrapping the
/// location of the op it was derived from, so diagnostics on generated ops
/// point at the user's source.
#[must_use]
pub fn located(name: &str, from: melior::ir::Location) -> String {
    let printed = crate::ir::location_text(from);
    let inner = printed.strip_prefix("loc(").and_then(|s| s.strip_suffix(')')).unwrap_or("unknown");
    let name = binding::quote(name);
    if inner == "unknown" {
        format!("loc({name})")
    } else {
        format!("loc({name}({inner}))")
    }
}

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
        let found = crate::ir::int_attr(op, name).unwrap_or(-1);
        if u64::try_from(found).ok() != Some(want) {
            let op_name = crate::ir::name_of(op);
            return Err((op, format!("'{op_name}' op {name} is {found}, but the strategy binding '{binding}' says {want}")));
        }
    }
    Ok(())
}

/// Fails if `ops` already hold a `dist` program (`pass` names the pass).
pub(crate) fn ensure_no_dist_program<'c, 'a>(ops: &[OperationRef<'c, 'a>], pass: &str) -> Result<(), Failure<'c, 'a>> {
    match ops.iter().find(|op| crate::ir::dialect_of(&crate::ir::name_of(**op)) == "dist") {
        Some(existing) => Err((*existing, format!("{pass}: the module already holds a 'dist' program"))),
        None => Ok(()),
    }
}

/// Runs a pass that builds IR as text: `prepare` validates the input and
/// returns the text (or the op to blame and why); only then is the parsed
/// result appended, so a failing pass leaves the module unchanged.
pub(crate) fn run_generating<'c, 'a>(
    module: OperationRef<'c, 'a>,
    pass: melior::pass::ExternalPass,
    prepare: impl FnOnce(OperationRef<'c, 'a>) -> Result<String, Failure<'c, 'a>>,
) {
    match prepare(module) {
        Ok(text) => {
            if !append_parsed(module, &text) {
                pass.signal_failure();
            }
        }
        Err((op, message)) => {
            emit_error(op.location(), &message);
            pass.signal_failure();
        }
    }
}

/// Parses `text` (a `module { ... }` Blueprint generated) in the context of
/// `module` and moves its top-level ops to the end of `module`. Returns
/// false, with a diagnostic, if the text does not parse; `module` is then
/// unchanged.
pub(crate) fn append_parsed(module: OperationRef, text: &str) -> bool {
    match Generated::parse(module, text) {
        Some(generated) => {
            generated.move_into(module);
            true
        }
        None => false,
    }
}

/// A parsed, not yet attached, generated module.
pub(crate) struct Generated {
    raw: mlir_sys::MlirOperation,
}

impl Generated {
    /// Parses generated text in the context of `anchor`; `None` (with a
    /// diagnostic) if it does not parse.
    pub(crate) fn parse(anchor: OperationRef, text: &str) -> Option<Self> {
        let name = "<generated>";
        // SAFETY: the context of a live op is live; both strings outlive the call.
        let raw = unsafe {
            mlir_sys::mlirOperationCreateParse(
                mlir_sys::mlirOperationGetContext(anchor.to_raw()),
                mlir_sys::MlirStringRef { data: text.as_ptr().cast(), length: text.len() },
                mlir_sys::MlirStringRef { data: name.as_ptr().cast(), length: name.len() },
            )
        };
        if raw.ptr.is_null() {
            emit_error(anchor.location(), "internal error: generated IR failed to parse (see the diagnostics above)");
            return None;
        }
        Some(Self { raw })
    }

    /// Moves every top-level op to the end of `module`'s body.
    pub(crate) fn move_into(self, module: OperationRef) {
        // SAFETY: `self.raw` is a live builtin.module owned by `self`.
        let parsed = unsafe { OperationRef::from_raw(self.raw) };
        let (Ok(source), Ok(target)) = (parsed.region(0), module.region(0)) else { return };
        let (Some(source), Some(target)) = (source.first_block(), target.first_block()) else { return };
        let mut moved = Vec::new();
        let mut next = source.first_operation();
        while let Some(op) = next {
            moved.push(op.to_raw());
            next = op.next_in_block();
        }
        for raw in moved {
            // SAFETY: each op is live and owned by `source`; it moves to `target`.
            unsafe {
                mlir_sys::mlirOperationRemoveFromParent(raw);
                mlir_sys::mlirBlockAppendOwnedOperation(target.to_raw(), raw);
            }
        }
    }
}

impl Drop for Generated {
    fn drop(&mut self) {
        // SAFETY: owned here (parsed, never attached) and destroyed once.
        unsafe { mlir_sys::mlirOperationDestroy(self.raw) }
    }
}

#[cfg(test)]
mod tests;
