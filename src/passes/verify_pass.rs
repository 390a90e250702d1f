//! `blueprint-verify`: the Rust verifiers as a pass, so any pipeline can
//! check Blueprint IR at any point (the driver also runs it after every pass).

use melior::{ir::OperationRef, pass::ExternalPass};

use crate::verify::verify_blueprint;

crate::pass_macro::external_pass!(
    "BlueprintVerify",
    "blueprint-verify",
    "Run Blueprint's layer verifiers",
    |op: OperationRef, pass: ExternalPass| {
        if !verify_blueprint(op) {
            pass.signal_failure();
        }
    }
);

/// The drivers' verifier after a pass that may change the IR: MLIR's own
/// verifier, then Blueprint's. The drivers turn the pass manager's
/// verifier off and run this instead, so passes that only read the IR
/// (the checks, `blueprint-verify` itself) are not followed by a second
/// full verification.
pub mod after_pass {
    use melior::{
        ir::{operation::OperationLike, OperationRef},
        pass::ExternalPass,
    };

    use crate::verify::verify_blueprint;

    crate::pass_macro::external_pass!(
        "BlueprintVerify",
        "blueprint-verify",
        "Run MLIR's verifier, then Blueprint's layer verifiers",
        |op: OperationRef, pass: ExternalPass| {
            // MLIR reports its own errors; Blueprint's rules assume valid IR.
            if !op.verify() || !verify_blueprint(op) {
                pass.signal_failure();
            }
        }
    );
}
