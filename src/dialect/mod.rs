//! Blueprint's three dialects as Rust sees them: per dialect its typed
//! builders (generated from the ODS) and its Rust verifier; the builder
//! they share ([`builder`]); the cross-layer rules and the verifier's entry
//! point ([`verify`]); the work summaries that read `dist` and `plan`
//! ([`summary`]). May import [`crate::ir`] and [`crate::analysis`].

pub mod builder;
pub mod dist;
pub mod model;
pub mod plan;
pub mod summary;
pub mod verify;
