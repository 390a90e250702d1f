//! The generic passes over `dist`: async communication, wait sinking,
//! copy canonicalization, unrolling a whole-step schedule, and the
//! verifier as a pass.

pub(crate) mod copy_canonicalize;
pub(crate) mod dist_async;
pub(crate) mod rewrite;
pub(crate) mod sink_waits;
pub(crate) mod unroll_schedule;
pub(crate) mod verify_pass;
