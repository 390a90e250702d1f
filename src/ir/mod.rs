//! MLIR plumbing every layer shares: the context, diagnostics, parsing,
//! reading IR through the C API, interning, the generated ODS tables (op
//! kinds, enums), digests, lineage names, erasing ops and the pass macro.
//! Knows no dialect's rules and no pass; may import [`crate::analysis`]
//! (the algebra's enums it names) and nothing else of the crate.

pub mod context;
pub mod diagnostics;
pub mod digest;
pub mod input_limits;
pub mod intern;
pub mod lineage;
pub mod ods;
pub mod parse;
pub mod pass_macro;
pub mod raw;
pub mod read;
pub mod rewrite;
