//! `blueprint-verify`: the Rust verifiers as a pass, so any pipeline can
//! check Blueprint IR at any point (the driver also runs it after every pass).

use melior::{
    ir::{r#type::TypeId, OperationRef},
    pass::{create_external, ExternalPass, Pass},
};

use crate::verify::verify_blueprint;

#[repr(align(8))]
struct PassId;
static PASS_ID: PassId = PassId;

pub fn create() -> Pass {
    create_external(
        |op: OperationRef, pass: ExternalPass| {
            if !verify_blueprint(op) {
                pass.signal_failure();
            }
        },
        TypeId::create(&PASS_ID),
        "BlueprintVerify",
        "blueprint-verify",
        "Run Blueprint's layer verifiers",
        "builtin.module",
        &[],
    )
}
