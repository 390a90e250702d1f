//! `blueprint-verify`: the Rust verifiers as a pass, so any pipeline can
//! check Blueprint IR at any point (the driver also runs it after every pass).

use melior::{
    ir::{operation::OperationLike, OperationRef},
    pass::ExternalPass,
};

use crate::dialect::verify::verify_blueprint;

crate::ir::pass_macro::external_pass!(
    "BlueprintVerify",
    "blueprint-verify",
    "Run Blueprint's layer verifiers",
    |op: OperationRef, pass: ExternalPass| {
        if !verify_blueprint(op) {
            pass.signal_failure();
        }
    }
);

/// The description of the drivers' verifier passes ([`after_pass`]), by
/// which `blueprint-opt` leaves them out of `--mlir-print-ir-*` (mlir-opt's
/// verifier is not a pass; this one is an implementation detail).
pub const AFTER_PASS_DESCRIPTION: &str = "Run MLIR's verifier, then Blueprint's layer verifiers";

/// The drivers' verifier after a pass that may change the IR: MLIR's own
/// verifier, then Blueprint's. The drivers turn the pass manager's
/// verifier off and run this instead, so passes that only read the IR
/// (the checks, `blueprint-verify` itself) are not followed by a second
/// full verification.
///
/// After a Blueprint pass that only appended a new layer (distribution,
/// planning: [`appended`]) it verifies that layer alone; the ops before it
/// were verified when parsed or built, and the pass did not touch them.
pub mod after_pass {
    use melior::{
        ir::{operation::OperationLike, OperationRef},
        pass::ExternalPass,
    };

    use crate::dialect::verify::verify_blueprint;

    crate::ir::pass_macro::external_pass!(
        "BlueprintVerify",
        "blueprint-verify",
        "Run MLIR's verifier, then Blueprint's layer verifiers",
        |op: OperationRef, pass: ExternalPass| {
            let ok = match super::take_appended(op) {
                Some(first) => super::verify_appended(first),
                None => verify_module(op),
            };
            if !ok {
                pass.signal_failure();
            }
        }
    );

    /// MLIR's verifier, then Blueprint's over the whole module (MLIR
    /// reports its own errors; Blueprint's rules assume valid IR).
    fn verify_module(op: OperationRef) -> bool {
        op.verify() && verify_blueprint(op)
    }

    /// The same verifier after an upstream pass: always the whole module
    /// (a layer appended earlier is no longer the last pass's doing; its
    /// record is stale by then, see [`super::take_appended`]).
    pub mod whole {
        use super::*;

        crate::ir::pass_macro::external_pass!(
            "BlueprintVerify",
            "blueprint-verify",
            "Run MLIR's verifier, then Blueprint's layer verifiers",
            |op: OperationRef, pass: ExternalPass| {
                if !verify_module(op) {
                    pass.signal_failure();
                }
            }
        );
    }
}

/// Which ops the last Blueprint pass appended to which module, and which
/// pass run that was (see [`crate::ir::pass_macro::next_run`]).
#[derive(Clone, Copy)]
struct Appended {
    module: usize,
    first: mlir_sys::MlirOperation,
    run: u64,
}

thread_local! {
    static APPENDED: std::cell::Cell<Option<Appended>> = const { std::cell::Cell::new(None) };
}

/// A building pass appended `first` and every op after it to `module`,
/// changing nothing before them.
pub(crate) fn appended(module: OperationRef, first: OperationRef) {
    let run = crate::ir::pass_macro::current_run();
    APPENDED.with(|a| a.set(Some(Appended { module: module.to_raw().ptr as usize, first: first.to_raw(), run })));
}

/// The first appended op, if the pass run just before this one (this
/// verifier's own run is the current one) appended to `module`.
fn take_appended<'c, 'a>(module: OperationRef<'c, 'a>) -> Option<OperationRef<'c, 'a>> {
    let record = APPENDED.with(std::cell::Cell::take)?;
    let current = crate::ir::pass_macro::current_run();
    (record.module == module.to_raw().ptr as usize && record.run + 1 == current)
        // SAFETY: appended by the previous pass and not removed since
        // (nothing ran in between).
        .then(|| unsafe { OperationRef::from_raw(record.first) })
}

fn verify_appended(first: OperationRef) -> bool {
    // SAFETY: a live op of the module.
    if !unsafe { blueprintVerifyAppended(first.to_raw()) } {
        return false;
    }
    let mut ops = Vec::new();
    let mut next = Some(first);
    while let Some(op) = next {
        ops.extend(crate::ir::read::collect_ops(op));
        next = op.next_in_block();
    }
    crate::dialect::verify::verify_ops(&ops)
}

extern "C" {
    fn blueprintVerifyAppended(first: mlir_sys::MlirOperation) -> bool;
}

#[cfg(test)]
mod tests {
    use melior::{
        ir::{block::BlockLike, Module, RegionLike},
        Context,
    };

    use super::*;
    use crate::ir::{context::create_context, diagnostics::DiagnosticSink, parse::parse_module, rewrite::move_into};

    const HEADER: &str = "plan.header schema \"blueprint.plan\" version \"1.0\" source \"sha256:2222222222222222222222222222222222222222222222222222222222222222\"\n";

    fn module<'c>(context: &'c Context, sink: &DiagnosticSink, text: &str) -> Module<'c> {
        parse_module(context, sink, text.as_bytes(), "test").unwrap_or_else(|| panic!("parses: {:?}", sink.take()))
    }

    fn task(group: &str) -> String {
        format!(
            "func.func @plan() {{\n  %a = plan.collective_task \"t\" all_reduce bytes = 64 phase = forward ops = 100 read = 40 write = 20 \
             demand(100, 60, 0) ranks = 8 group = {group} {{lineage = \"t\"}}\n  return\n}}\n"
        )
    }

    /// `base` with the ops of `layer` appended, as a building pass leaves it.
    fn appended_to<'c>(context: &'c Context, sink: &DiagnosticSink, base: &str, layer: &str) -> (Module<'c>, bool) {
        let module = module(context, sink, base);
        let generated = self::module(context, sink, layer);
        let first = move_into(&generated, module.as_operation()).expect("something appended");
        let ok = verify_appended(first);
        (module, ok)
    }

    fn messages(sink: &DiagnosticSink) -> Vec<String> {
        sink.take().into_iter().map(|d| d.message).collect()
    }

    #[test]
    fn appended_ops_may_not_redefine_a_symbol() {
        let context = create_context();
        let sink = DiagnosticSink::attach(&context);
        let buffer = "plan.buffer @staging boundary_value size = 0 align = 1 in host {lineage = \"x\"}\n";
        let (_module, ok) = appended_to(&context, &sink, buffer, &format!("{HEADER}{buffer}"));
        assert!(!ok);
        assert!(messages(&sink).iter().any(|m| m.contains("redefinition of symbol named 'staging'")));
    }

    #[test]
    fn appended_ops_are_checked_by_mlir_and_blueprint_rules() {
        let context = create_context();
        let sink = DiagnosticSink::attach(&context);
        let (_module, ok) = appended_to(&context, &sink, "", &format!("{HEADER}{}", task("compute")));
        assert!(!ok);
        let found = messages(&sink);
        assert!(found.iter().any(|m| m.contains("must be in concurrency group 'network', but is in 'compute'")), "{found:?}");
        // A symbol use MLIR checks: a call to a function nobody defines
        // (built, since the parser would refuse it).
        let module = module(&context, &sink, HEADER);
        let generated = Module::new(melior::ir::Location::unknown(&context));
        let b = crate::dialect::builder::Builder::new(&context);
        let location = melior::ir::Location::unknown(&context);
        let call = melior::ir::operation::OperationBuilder::new("func.call", location)
            .add_attributes(&[(b.identifier("callee"), b.symbol("missing"))])
            .build()
            .expect("builds");
        let function = b.func("g", &[], &[], location).expect("builds");
        let body = function.region(0).ok().and_then(|r| r.first_block()).expect("a body");
        body.append_operation(call);
        body.append_operation(b.func_return(&[], location).expect("builds"));
        generated.body().append_operation(function);
        let first = move_into(&generated, module.as_operation()).expect("appended");
        assert!(!verify_appended(first));
        let found = messages(&sink);
        assert!(found.iter().any(|m| m.contains("'missing'")), "{found:?}");
    }

    #[test]
    fn only_the_appended_ops_are_verified_again() {
        let context = create_context();
        let sink = DiagnosticSink::attach(&context);
        // The op before the appended layer breaks a Blueprint rule; the
        // whole-module verifier sees it, the appended one does not.
        let before = format!("{HEADER}{}", task("compute"));
        let (module, ok) = appended_to(&context, &sink, &before, "func.func @other() {\n  return\n}\n");
        assert!(ok, "{:?}", sink.take());
        assert!(!crate::dialect::verify::verify_blueprint(module.as_operation()));
    }

    #[test]
    fn a_record_counts_only_for_the_next_pass_run_on_its_module() {
        let context = create_context();
        let sink = DiagnosticSink::attach(&context);
        let module = module(&context, &sink, HEADER);
        let other = self::module(&context, &sink, HEADER);
        let op = module.as_operation();
        let first = crate::ir::read::region_ops(op, 0)[0];
        crate::ir::pass_macro::next_run();
        appended(op, first);
        crate::ir::pass_macro::next_run();
        assert!(take_appended(op).is_some());
        // Taken once.
        assert!(take_appended(op).is_none());
        // Another module's verifier does not use it.
        appended(op, first);
        crate::ir::pass_macro::next_run();
        assert!(take_appended(other.as_operation()).is_none());
        // Nor does a verifier two Blueprint runs later.
        appended(op, first);
        crate::ir::pass_macro::next_run();
        crate::ir::pass_macro::next_run();
        assert!(take_appended(op).is_none());
    }
}
