//! The one way a Rust pass is defined: `external_pass!` gives a module
//! `pub fn create() -> Pass` for an external MLIR pass on `builtin.module`.
//! It depends on nothing Blueprint defines, so passes use it without
//! depending on the registry that lists them.

/// Defines `pub fn create() -> Pass` for an external pass on
/// `builtin.module`: its name, command-line argument, summary, the function
/// that runs it, and optionally the dialects it creates ops of.
/// The dialects a pass may create ops of: Blueprint's three and `func`
/// (every pass may), then `extra`; with no `extra`, what a host must load
/// to hold Blueprint IR (the C API's registration). A host that has not loaded them (stock
/// `mlir-opt` on ModelIR) loads them before the pass runs.
#[must_use]
pub fn dependent_dialects(extra: &[melior::dialect::DialectHandle]) -> Vec<melior::dialect::DialectHandle> {
    let mut all = crate::ir::context::blueprint_dialect_handles().to_vec();
    all.push(melior::dialect::DialectHandle::func());
    all.extend_from_slice(extra);
    all
}

macro_rules! external_pass {
    ($name:literal, $argument:literal, $summary:literal, $run:expr $(,)?) => {
        crate::ir::pass_macro::external_pass!($name, $argument, $summary, $run, &[]);
    };
    ($name:literal, $argument:literal, $summary:literal, $run:expr, $dialects:expr $(,)?) => {
        #[must_use]
        pub fn create() -> melior::pass::Pass {
            #[repr(align(8))]
            struct PassId;
            static PASS_ID: PassId = PassId;
            melior::pass::create_external(
                |module: melior::ir::OperationRef, pass: melior::pass::ExternalPass| {
                    crate::ir::pass_macro::next_run();
                    // Handles made while the pass builds are looked up once.
                    // SAFETY: the pass's op is live.
                    let _interned = crate::ir::intern::Scope::begin(unsafe {
                        mlir_sys::mlirOperationGetContext(melior::ir::operation::OperationLike::to_raw(&module))
                    });
                    // A pass runs inside a callback from C, where a panic
                    // aborts the process: report it as a failure instead.
                    let run = std::panic::AssertUnwindSafe(|| ($run)(module, pass));
                    if std::panic::catch_unwind(run).is_err() {
                        crate::ir::diagnostics::emit_error(
                            melior::ir::operation::OperationLike::location(&module),
                            concat!("internal error: pass '", $argument, "' failed unexpectedly; please report this with the input"),
                        );
                        pass.signal_failure();
                    }
                },
                melior::ir::r#type::TypeId::create(&PASS_ID),
                $name,
                $argument,
                $summary,
                "builtin.module",
                &crate::ir::pass_macro::dependent_dialects($dialects),
            )
        }
    };
}
pub(crate) use external_pass;

thread_local! {
    static RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts a Blueprint pass run on this thread (every `external_pass!`).
pub fn next_run() {
    RUNS.with(|r| r.set(r.get().wrapping_add(1)));
}

/// The number of the Blueprint pass run in progress (or last run).
#[must_use]
pub fn current_run() -> u64 {
    RUNS.with(std::cell::Cell::get)
}
