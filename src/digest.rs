//! Content digests of each layer of a module.
//!
//! A layer's digest is the SHA-256 of the generic-form text of the ops that
//! make up the layer (its header and every top-level op or function holding
//! its ops), in module order. Module attributes (strategy bindings, system
//! profiles, anything an estimate reads) are not part of any layer, so they
//! never change a digest.

use melior::ir::{operation::OperationLike, operation::OperationPrintingFlags, OperationRef};
use sha2::{Digest, Sha256};

use crate::ir::dialect_of;

/// `sha256:<64 hex>` of the ops of `dialect` (`model`, `dist` or `plan`)
/// at the top level of `module`.
#[must_use]
pub fn layer_digest(module: OperationRef, dialect: &str) -> String {
    let mut hasher = Sha256::new();
    // One printer state for the module: printing each top-level op on its
    // own would number every value of the module again for each of them
    // (only functions are isolated from above), quadratic in a whole step.
    let flags = OperationPrintingFlags::new().print_generic_operation_form();
    // SAFETY: the state is created for a live op, used while it lives and
    // destroyed once; `append_bytes` appends to the buffer it is given.
    unsafe {
        let state = mlir_sys::mlirAsmStateCreateForOperation(module.to_raw(), flags.to_raw());
        for op in top_level_ops(module) {
            if holds_dialect(op, dialect) {
                let mut buffer: Vec<u8> = Vec::new();
                mlir_sys::mlirOperationPrintWithState(op.to_raw(), state, Some(crate::diagnostics::append_bytes), (&raw mut buffer).cast());
                hasher.update(&buffer);
                hasher.update(b"\n");
            }
        }
        mlir_sys::mlirAsmStateDestroy(state);
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn top_level_ops<'c, 'a>(module: OperationRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    crate::ir::region_ops(module, 0)
}

fn holds_dialect(op: OperationRef, dialect: &str) -> bool {
    let mut found = false;
    op.walk(melior::ir::operation::WalkOrder::PreOrder, |inner| {
        found = dialect_of(crate::ir::identifier_str(inner.name())) == dialect;
        if found {
            melior::ir::operation::WalkResult::Interrupt
        } else {
            melior::ir::operation::WalkResult::Advance
        }
    });
    found
}
