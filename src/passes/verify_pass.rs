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
