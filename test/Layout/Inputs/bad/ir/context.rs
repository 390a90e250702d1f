use crate::ir::read::{self, helper};
/// `crate::dialect::x` in a comment is not an import.
pub fn create() { let _ = "crate::tools::run"; }
