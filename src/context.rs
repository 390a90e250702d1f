//! The one place that creates a fully set-up MLIR context.

use std::sync::Once;

use melior::{
    dialect::DialectRegistry,
    ir::Module,
    utility::{register_all_dialects, register_all_llvm_translations, register_all_passes},
    Context,
};

use crate::ods;

static REGISTER_PASSES: Once = Once::new();

/// Creates a context with every upstream dialect registered, Blueprint's
/// dialects loaded from the generated IRDL (once: loading twice aborts), and
/// multithreading off so output and diagnostics are deterministic.
///
/// Attach a [`crate::diagnostics::DiagnosticSink`] to see diagnostics.
#[must_use]
pub fn create_context() -> Context {
    REGISTER_PASSES.call_once(|| {
        register_all_passes();
    });
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    let context = Context::new_with_registry(&registry, false);
    register_all_llvm_translations(&context);
    context.get_or_load_dialect("irdl");
    load_blueprint_dialects(&context);
    context
}

fn load_blueprint_dialects(context: &Context) {
    // The IRDL is generated from our own ODS by build.rs and checked by the
    // test suite, so failing to parse it is a build defect, not user input.
    let Some(irdl) = Module::parse(context, ods::IRDL) else {
        panic!("generated IRDL failed to parse; this is a bug in build.rs");
    };
    unsafe { mlir_sys::mlirLoadIRDLDialects(irdl.to_raw()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blueprint_ops_are_registered() {
        let context = create_context();
        for dialect in ods::DIALECTS {
            for op in dialect.ops {
                assert!(context.is_registered_operation(op.name), "{} not registered", op.name);
            }
        }
        // A second context loads its own copy without aborting.
        let other = create_context();
        assert!(other.is_registered_operation("dist.wait"));
    }
}
