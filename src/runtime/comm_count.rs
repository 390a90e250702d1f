//! What the runtime communicated: every exchange a rank starts, counted by
//! the op it announced (`_bprt_op`), its kind and group size — calls and
//! bytes — so a runner can set what ran beside what a plan counted
//! (`blueprint-run --comm-report`). The bytes are the logical tensor's, as
//! the `dist` ops state them: the reduced tensor of an all-reduce or a
//! reduce-scatter, the gathered one of an all-gather, the transferred one
//! of a point-to-point transfer (counted at both ends).

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::contribution::{Contribution, OpKind};

/// One line of the count.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CommCount {
    pub rank: usize,
    /// The announced op (`'id' at file:line:col`), or `-`.
    pub op: String,
    /// `all_reduce`, `reduce_scatter`, `all_gather`, `all_to_all`,
    /// `broadcast`, `p2p`, `copy`.
    pub kind: &'static str,
    pub group: usize,
    pub calls: u64,
    pub bytes: u64,
}

type Key = (usize, String, &'static str, usize);

static COUNTS: Mutex<BTreeMap<Key, (u64, u64)>> = Mutex::new(BTreeMap::new());

fn lock() -> std::sync::MutexGuard<'static, BTreeMap<Key, (u64, u64)>> {
    COUNTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The kind's name in the `dist` dialect.
fn kind_name(kind: &OpKind) -> &'static str {
    match kind {
        OpKind::AllReduce { .. } => "all_reduce",
        OpKind::ReduceScatter { .. } => "reduce_scatter",
        OpKind::AllGather { .. } => "all_gather",
        OpKind::AllToAll { .. } => "all_to_all",
        OpKind::Broadcast { .. } => "broadcast",
        OpKind::SendRecv { .. } => "p2p",
        OpKind::CopyReshape | OpKind::CopyPermute { .. } => "copy",
    }
}

/// Counts a contribution a rank has started.
pub(crate) fn record(c: &Contribution) {
    let size = c.dtype.size() as u64;
    let numel = |shape: &Option<Vec<i64>>| shape.as_ref().map_or(0, |s| s.iter().map(|d| (*d).max(0) as u64).product::<u64>());
    let bytes = match c.kind {
        OpKind::AllGather { .. } => numel(&c.out_shape),
        _ => numel(&c.in_shape).max(numel(&c.out_shape)),
    } * size;
    let op = c.op.as_ref().map_or_else(|| "-".to_string(), |op| op.name.to_string());
    let mut counts = lock();
    let entry = counts.entry((c.rank, op, kind_name(&c.kind), c.participants.len())).or_default();
    entry.0 += 1;
    entry.1 += bytes;
}

/// The counts so far, in (rank, op, kind, group) order, and forgets them.
#[must_use]
pub fn take() -> Vec<CommCount> {
    std::mem::take(&mut *lock())
        .into_iter()
        .map(|((rank, op, kind, group), (calls, bytes))| CommCount { rank, op, kind, group, calls, bytes })
        .collect()
}
