//! Content digests of each layer of a module.
//!
//! A layer's digest is the SHA-256 of the generic-form text of the ops that
//! make up the layer (its header and every top-level op or function holding
//! its ops), in module order. Module attributes (strategy bindings, system
//! profiles, anything an estimate reads) are not part of any layer, so they
//! never change a digest.

use melior::ir::{
    block::BlockLike, operation::OperationLike, operation::OperationPrintingFlags, OperationRef,
    RegionLike,
};
use sha2::{Digest, Sha256};

use crate::ir::{collect_ops, dialect_of, name_of};

/// `sha256:<64 hex>` of the ops of `dialect` (`model`, `dist` or `plan`)
/// at the top level of `module`.
#[must_use]
pub fn layer_digest(module: OperationRef, dialect: &str) -> String {
    let mut hasher = Sha256::new();
    for op in top_level_ops(module) {
        if holds_dialect(op, dialect) {
            // Local scope: printing a nested op otherwise numbers the whole
            // module each time, which is quadratic over many functions.
            let flags = OperationPrintingFlags::new().print_generic_operation_form().use_local_scope();
            hasher.update(crate::ir::op_bytes(op, &flags));
            hasher.update(b"\n");
        }
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn top_level_ops<'c, 'a>(module: OperationRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut ops = Vec::new();
    let Ok(region) = module.region(0) else { return ops };
    let Some(block) = region.first_block() else { return ops };
    let mut next = block.first_operation();
    while let Some(op) = next {
        ops.push(op);
        next = op.next_in_block();
    }
    ops
}

fn holds_dialect(op: OperationRef, dialect: &str) -> bool {
    collect_ops(op).into_iter().any(|inner| dialect_of(&name_of(inner)) == dialect)
}
