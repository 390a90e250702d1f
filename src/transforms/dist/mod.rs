//! The generic passes over `dist`: async communication, wait sinking,
//! copy canonicalization and unrolling a whole-step schedule.

pub(crate) mod copy_canonicalize;
pub(crate) mod dist_async;
pub(crate) mod sink_waits;
pub(crate) mod unroll_schedule;
