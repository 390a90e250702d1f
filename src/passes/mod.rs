//! Blueprint's Rust passes and the table the driver reads them from.

mod verify_pass;

use melior::pass::Pass;

/// One Blueprint pass: its command-line name, a one-line summary, and how
/// to create it.
pub struct PassInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub create: fn() -> Pass,
}

/// Every Blueprint pass, in the order `--help` lists them.
pub static PASSES: &[PassInfo] = &[PassInfo {
    name: "blueprint-verify",
    summary: "Run Blueprint's layer verifiers (also run after every pass)",
    create: verify_pass::create,
}];

#[must_use]
pub fn find(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}
