//! The `model` dialect (ModelIR): its typed builders, its verifier and the
//! strategy binding stored beside it on the module.

pub mod binding;
pub mod graph;
pub mod verify;

include!(concat!(env!("OUT_DIR"), "/ods_builders_model.rs"));
