//! Passes that rewrite within or between Blueprint's dialects: the
//! Transformer import, decomposition, distribution and planning
//! ([`transformer`]), the generic `dist` passes ([`dist`]), the cross-layer
//! checks ([`checks`]) and the verifier as a pass. May import
//! [`crate::dialect`], [`crate::ir`] and [`crate::analysis`].

pub mod checks;
pub mod dist;
pub mod transformer;
pub mod verify_pass;
