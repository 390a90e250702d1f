//! The one place that creates a fully set-up MLIR context.

use std::sync::Once;

use melior::{
    dialect::{DialectHandle, DialectRegistry},
    utility::{register_all_dialects, register_all_llvm_translations, register_all_passes},
    Context,
};

static REGISTER_PASSES: Once = Once::new();

// C API registration of the C++ dialects compiled from the ODS by build.rs.
extern "C" {
    fn mlirGetDialectHandle__model__() -> mlir_sys::MlirDialectHandle;
    fn mlirGetDialectHandle__dist__() -> mlir_sys::MlirDialectHandle;
    fn mlirGetDialectHandle__plan__() -> mlir_sys::MlirDialectHandle;
}

/// Handles of Blueprint's dialects (`model`, `dist`, `plan`), for C API
/// users and for inserting them into any registry.
#[must_use]
pub fn blueprint_dialect_handles() -> [DialectHandle; 3] {
    // SAFETY: the registration functions only return static handles.
    unsafe {
        [
            DialectHandle::from_raw(mlirGetDialectHandle__model__()),
            DialectHandle::from_raw(mlirGetDialectHandle__dist__()),
            DialectHandle::from_raw(mlirGetDialectHandle__plan__()),
        ]
    }
}

/// Inserts Blueprint's dialects into `registry`.
pub fn register_blueprint_dialects(registry: &DialectRegistry) {
    for handle in blueprint_dialect_handles() {
        handle.insert_dialect(registry);
    }
}

/// Registers every upstream pass in MLIR's global registry, once.
pub fn register_upstream_passes() {
    REGISTER_PASSES.call_once(|| {
        register_all_passes();
    });
}

/// Creates a context with every upstream dialect and Blueprint's dialects
/// registered and loaded, and multithreading off so output and diagnostics
/// are deterministic.
///
/// Attach a [`crate::ir::diagnostics::DiagnosticSink`] to see diagnostics.
#[must_use]
pub fn create_context() -> Context {
    register_upstream_passes();
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    register_blueprint_dialects(&registry);
    let context = Context::new_with_registry(&registry, false);
    register_all_llvm_translations(&context);
    for handle in blueprint_dialect_handles() {
        handle.load_dialect(&context);
    }
    // Blueprint's passes and imports build functions.
    context.get_or_load_dialect("func");
    context
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ods;

    #[test]
    fn blueprint_ops_are_registered() {
        let context = create_context();
        for dialect in ods::DIALECTS {
            for op in dialect.ops {
                assert!(context.is_registered_operation(op.name), "{} not registered", op.name);
            }
        }
        // A second context has its own dialects.
        let other = create_context();
        assert!(other.is_registered_operation("dist.wait"));
    }
}
