//! The `dist` dialect (DistributedTaskIR): its typed builders, its
//! verifier and logical meshes as every reader sees them.

pub mod mesh;
pub mod verify;

include!(concat!(env!("OUT_DIR"), "/ods_builders_dist.rs"));
