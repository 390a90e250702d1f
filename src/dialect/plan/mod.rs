//! The `plan` dialect (PortablePlanIR): its typed builders and its
//! verifier.

pub mod verify;

include!(concat!(env!("OUT_DIR"), "/ods_builders_plan.rs"));
