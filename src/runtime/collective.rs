//! What a rank deposits for an exchange, and how a rank computes its output
//! once every participant's contribution is there.
//!
//! [`complete`] runs on every participant over the same set of deposits, so
//! every cross-rank check fails identically on every rank.

use std::sync::Arc;

use super::contribution::{Contribution, Deposit, OpKind};
use super::dtype::reduce_into;
use super::error::{RtError, RtResult};
use super::memref::shape_numel;
use super::redistribute;

/// `(outer, dim, inner)` element counts around `axis` of `shape`.
pub(crate) fn axis_split(shape: &[i64], axis: usize) -> (usize, usize, usize) {
    let prod = |s: &[i64]| s.iter().map(|&d| d as usize).product::<usize>();
    (prod(&shape[..axis]), shape[axis] as usize, prod(&shape[axis + 1..]))
}

fn shape_of(c: &Contribution) -> RtResult<&[i64]> {
    c.in_shape.as_deref().ok_or_else(|| RtError::Internal(format!("rank {} deposited no input", c.rank)))
}

fn same_input_shapes(ordered: &[&Contribution]) -> RtResult<Vec<i64>> {
    let first = shape_of(ordered[0])?;
    for c in &ordered[1..] {
        let s = shape_of(c)?;
        if s != first {
            return Err(RtError::Mismatch(format!(
                "rank {} input shape {s:?} differs from rank {} input shape {first:?}",
                c.rank, ordered[0].rank
            )));
        }
    }
    Ok(first.to_vec())
}

/// Checks that every deposit is a contribution and that the participants
/// agree on the operation, the element type and the participant list;
/// returns the contributions in participant order.
pub(crate) fn agree(deposits: &[Arc<Deposit>]) -> RtResult<Vec<&Contribution>> {
    let mut contributions = Vec::with_capacity(deposits.len());
    for d in deposits {
        match d.as_ref() {
            Ok(c) => contributions.push(c),
            Err(f) => return Err(RtError::PeerFailed { rank: f.rank, message: f.message.clone() }),
        }
    }
    let first = *contributions.first().ok_or_else(|| RtError::Internal("an exchange without deposits".into()))?;
    // The same op on every participant, before anything else: exchanges
    // pair by call order, so a different op here means a rank issued its
    // collectives in another order or skipped one.
    let differs = |c: &&&Contribution| matches!((&first.op, &c.op), (Some(mine), Some(theirs)) if mine.hash != theirs.hash);
    if let Some(c) = contributions.iter().find(differs) {
        let name = |c: &Contribution| c.op.as_ref().map_or_else(String::new, |op| op.name.to_string());
        return Err(RtError::Mismatch(format!(
            "rank {} is at op {} ({} on {} with participants {:?}) but rank {} is at op {} ({} on {} with participants {:?}) \
             in the same exchange: every participant must issue its collectives in the same order",
            first.rank,
            name(first),
            first.kind,
            first.dtype,
            first.participants,
            c.rank,
            name(c),
            c.kind,
            c.dtype,
            c.participants
        )));
    }
    for c in &contributions[1..] {
        if c.kind != first.kind || c.dtype != first.dtype || c.participants != first.participants {
            return Err(RtError::Mismatch(format!(
                "rank {} called {} on {} with participants {:?}, but rank {} called {} on {} \
                 with participants {:?}",
                first.rank, first.kind, first.dtype, first.participants, c.rank, c.kind, c.dtype, c.participants
            )));
        }
    }
    first
        .participants
        .iter()
        .map(|&p| {
            contributions.iter().copied().find(|c| c.rank == p).ok_or_else(|| RtError::Internal(format!("no deposit of participant {p}")))
        })
        .collect()
}

/// The cross-rank shape checks of the operation, on contributions in
/// participant order (their data is not read: the MPI runtime runs them on
/// metadata alone before any data moves).
pub(crate) fn check(ordered: &[&Contribution]) -> RtResult<()> {
    let first = ordered[0];
    match &first.kind {
        OpKind::AllReduce { .. } | OpKind::ReduceScatter { .. } | OpKind::AllToAll { .. } => same_input_shapes(ordered).map(drop),
        OpKind::AllGather { axis } => {
            let axis = *axis;
            let base = shape_of(first)?;
            let mut total = 0i64;
            for c in ordered {
                let s = shape_of(c)?;
                let agrees = s.len() == base.len() && s.iter().zip(base).enumerate().all(|(d, (a, b))| d == axis || a == b);
                if !agrees {
                    return Err(RtError::Mismatch(format!(
                        "rank {} input shape {s:?} differs from rank {} input shape {base:?} \
                         outside axis {axis}",
                        c.rank, first.rank
                    )));
                }
                total += s[axis];
            }
            for c in ordered {
                let out = c.out_shape.as_deref().unwrap_or(&[]);
                if out.get(axis) != Some(&total) {
                    return Err(RtError::Mismatch(format!(
                        "rank {} output shape {out:?} must have {total} (the sum of the inputs) \
                         along axis {axis}",
                        c.rank
                    )));
                }
            }
            Ok(())
        }
        OpKind::Broadcast { root } => {
            let src = ordered
                .iter()
                .find(|c| c.rank == *root)
                .ok_or_else(|| RtError::Internal(format!("broadcast root {root} is not a participant")))?;
            let shape = shape_of(src)?;
            for c in ordered {
                if c.out_shape.as_deref() != Some(shape) {
                    return Err(RtError::Mismatch(format!(
                        "rank {} output shape {:?} differs from root {root} input shape {shape:?}",
                        c.rank, c.out_shape
                    )));
                }
            }
            Ok(())
        }
        OpKind::SendRecv { source, dest } => {
            let (src, dst) = (find(ordered, *source)?, find(ordered, *dest)?);
            let shape = shape_of(src)?;
            if dst.out_shape.as_deref() != Some(shape) {
                return Err(RtError::Mismatch(format!(
                    "dest rank {dest} output shape {:?} differs from source rank {source} input \
                     shape {shape:?}",
                    dst.out_shape
                )));
            }
            Ok(())
        }
        OpKind::CopyReshape | OpKind::CopyPermute { .. } => redistribute::check_global_shapes(ordered),
    }
}

fn find<'a>(ordered: &[&'a Contribution], rank: usize) -> RtResult<&'a Contribution> {
    ordered.iter().copied().find(|c| c.rank == rank).ok_or_else(|| RtError::Internal(format!("no deposit of rank {rank}")))
}

/// Computes the packed output of world rank `me` from the deposits of
/// every participant (in any order). `Ok(None)`: this rank receives nothing.
pub(crate) fn complete(deposits: &[Arc<Deposit>], me: usize) -> RtResult<Option<Vec<u8>>> {
    let ordered = agree(deposits)?;
    check(&ordered)?;
    let first = ordered[0];
    let k = first
        .participants
        .iter()
        .position(|&p| p == me)
        .ok_or_else(|| RtError::Internal(format!("rank {me} completes an exchange it is not in")))?;
    let n = ordered.len();
    let es = first.dtype.size();
    let dtype = first.dtype;

    match &first.kind {
        OpKind::AllReduce { op } => {
            // SAFETY: inputs read in place stay valid and unmodified until
            // their ranks' waits return, which is after this one reads them.
            let mut acc = unsafe { ordered[0].input() }.to_vec();
            for c in &ordered[1..] {
                // SAFETY: as above.
                reduce_into(dtype, *op, &mut acc, unsafe { c.input() });
            }
            Ok(Some(acc))
        }
        OpKind::ReduceScatter { op, axis } => {
            let shape = shape_of(first)?;
            let (outer, dim, inner) = axis_split(shape, *axis);
            let chunk = dim / n;
            let slice = |c: &Contribution| -> Vec<u8> {
                let mut out = Vec::with_capacity(outer * chunk * inner * es);
                for o in 0..outer {
                    let start = (o * dim + k * chunk) * inner * es;
                    out.extend_from_slice(&c.data[start..start + chunk * inner * es]);
                }
                out
            };
            let mut acc = slice(ordered[0]);
            for c in &ordered[1..] {
                reduce_into(dtype, *op, &mut acc, &slice(c));
            }
            Ok(Some(acc))
        }
        OpKind::AllGather { axis } => {
            let axis = *axis;
            let base = shape_of(first)?;
            let total: i64 = ordered.iter().map(|c| shape_of(c).map(|s| s[axis])).sum::<RtResult<i64>>()?;
            let (outer, _, inner) = axis_split(base, axis);
            let mut out = Vec::with_capacity(outer * total as usize * inner * es);
            for o in 0..outer {
                for c in &ordered {
                    let block = shape_of(c)?[axis] as usize * inner * es;
                    out.extend_from_slice(&c.data[o * block..(o + 1) * block]);
                }
            }
            Ok(Some(out))
        }
        OpKind::AllToAll { axis } => {
            let shape = shape_of(first)?;
            let (outer, dim, inner) = axis_split(shape, *axis);
            let chunk = dim / n * inner * es;
            let mut out = Vec::with_capacity(outer * dim * inner * es);
            for o in 0..outer {
                for c in &ordered {
                    let start = o * dim * inner * es + k * chunk;
                    out.extend_from_slice(&c.data[start..start + chunk]);
                }
            }
            Ok(Some(out))
        }
        OpKind::Broadcast { root } => Ok(Some(find(&ordered, *root)?.data.clone())),
        OpKind::SendRecv { source, dest } => Ok((me == *dest).then(|| find(&ordered, *source).map(|c| c.data.clone())).transpose()?),
        OpKind::CopyReshape => redistribute::copy_reshape(&ordered, k).map(Some),
        OpKind::CopyPermute { axes } => redistribute::copy_permute(&ordered, k, axes).map(Some),
    }
}

/// Checks that `shape` has the element count the caller claims (helper for
/// start-time validation).
pub(crate) fn numel_of(what: &str, shape: &[i64]) -> RtResult<usize> {
    shape_numel(shape).ok_or_else(|| RtError::InvalidArgument(format!("{what} {shape:?} is not a valid shape")))
}
