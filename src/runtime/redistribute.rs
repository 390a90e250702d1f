//! The redistribution copies (`copy_reshape`, `copy_permute`), with the
//! semantics of IMEX's distruntime.
//!
//! A global array of shape `g_shape` is distributed over the team: each rank
//! holds a block starting at global index `l_offsets`. The new global array
//! (reshaped, or with permuted dimensions) is distributed the same way; each
//! rank computes its new block (`nl_offsets`, output shape) by mapping every
//! element of every rank's old block to its new global index and keeping
//! those inside its new block. Blocks may be empty; where blocks overlap,
//! the first participant (in rank order) wins. An element of the new block
//! held by no rank is an error.

use super::contribution::{BlockLayout, Contribution};
use super::error::{RtError, RtResult};
use super::memref::{row_major_strides, shape_numel};

fn layout(c: &Contribution) -> RtResult<(&BlockLayout, &[i64], &[i64])> {
    match (&c.layout, &c.in_shape, &c.out_shape) {
        (Some(l), Some(i), Some(o)) => Ok((l, i, o)),
        _ => Err(RtError::Internal(format!("rank {} deposited no block layout", c.rank))),
    }
}

/// Checks that every rank agrees on the old and new global shapes.
pub(crate) fn check_global_shapes(ordered: &[&Contribution]) -> RtResult<()> {
    let (base, _, _) = layout(ordered[0])?;
    for c in &ordered[1..] {
        let (l, _, _) = layout(c)?;
        if l.g_shape != base.g_shape || l.ng_shape != base.ng_shape {
            return Err(RtError::Mismatch(format!(
                "rank {} has global shapes {:?} -> {:?}, rank {} has {:?} -> {:?}",
                c.rank, l.g_shape, l.ng_shape, ordered[0].rank, base.g_shape, base.ng_shape
            )));
        }
    }
    Ok(())
}

/// Visits every multi-index of `shape` in row-major order.
fn for_each_index(shape: &[i64], mut f: impl FnMut(&[i64])) {
    let Some(n) = shape_numel(shape) else { return };
    let mut idx = vec![0i64; shape.len()];
    for _ in 0..n {
        f(&idx);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn linearize(idx: &[i64], strides: &[i64]) -> i64 {
    idx.iter().zip(strides).map(|(&i, &s)| i * s).sum()
}

/// Where each element of `ordered[k]`'s new block comes from, in the
/// block's row-major order: `(participant position, element index in that
/// participant's block)`. `map(old_global, new_global)` gives the new global
/// index of an old global index; `skip(c)` tells that rank `c`'s block
/// cannot intersect the new block. The first participant holding an element
/// wins; an element held by no rank is an error.
fn sources(
    ordered: &[&Contribution],
    k: usize,
    mut map: impl FnMut(&[i64], &mut [i64]),
    skip: impl Fn(&Contribution) -> RtResult<bool>,
) -> RtResult<Vec<(usize, usize)>> {
    let (mine, _, out_shape) = layout(ordered[k])?;
    let out_n = shape_numel(out_shape).unwrap_or(0);
    let out_strides = row_major_strides(out_shape);
    let mut from = vec![(usize::MAX, 0usize); out_n];
    let mut left = out_n;
    let mut new_idx = vec![0i64; out_shape.len()];
    let mut old_idx = Vec::new();
    for (position, c) in ordered.iter().enumerate() {
        if left == 0 {
            break;
        }
        if skip(c)? {
            continue;
        }
        let (l, in_shape, _) = layout(c)?;
        let mut src = 0usize;
        for_each_index(in_shape, |local| {
            old_idx.clear();
            old_idx.extend(local.iter().zip(&l.l_offsets).map(|(&i, &o)| i + o));
            map(&old_idx, &mut new_idx);
            let inside = new_idx.iter().zip(&mine.nl_offsets).zip(out_shape).all(|((&j, &o), &s)| j >= o && j < o + s);
            if inside {
                let rel: Vec<i64> = new_idx.iter().zip(&mine.nl_offsets).map(|(&j, &o)| j - o).collect();
                let pos = linearize(&rel, &out_strides) as usize;
                if from[pos].0 == usize::MAX {
                    from[pos] = (position, src);
                    left -= 1;
                }
            }
            src += 1;
        });
    }
    if left > 0 {
        let missing = from.iter().position(|f| f.0 == usize::MAX).unwrap_or(0);
        return Err(RtError::Mismatch(format!(
            "{left} element(s) of rank {}'s new block (first at local position {missing}) are \
             held by no rank's block",
            ordered[k].rank
        )));
    }
    Ok(from)
}

/// Fills the new block of `ordered[k]` from the participants' data.
fn gather(ordered: &[&Contribution], from: &[(usize, usize)]) -> Vec<u8> {
    let es = ordered[0].dtype.size();
    let mut out = vec![0u8; from.len() * es];
    for (dst, &(c, src)) in out.chunks_exact_mut(es).zip(from) {
        dst.copy_from_slice(&ordered[c].data[src * es..(src + 1) * es]);
    }
    out
}

/// `copy_reshape`: row-major linear order is preserved from `g_shape` to
/// `ng_shape`.
pub(crate) fn copy_reshape(ordered: &[&Contribution], k: usize) -> RtResult<Vec<u8>> {
    check_global_shapes(ordered)?;
    Ok(gather(ordered, &reshape_sources(ordered, k)?))
}

/// [`sources`] of `ordered[k]`'s new block for `copy_reshape`.
pub(crate) fn reshape_sources(ordered: &[&Contribution], k: usize) -> RtResult<Vec<(usize, usize)>> {
    let (base, _, _) = layout(ordered[0])?;
    let g_strides = row_major_strides(&base.g_shape);
    let ng_shape = base.ng_shape.clone();
    let ng_strides = row_major_strides(&ng_shape);
    // Linear range (in the shared linear order) of a block, if non-empty.
    let range = |offsets: &[i64], shape: &[i64], strides: &[i64]| -> Option<(i64, i64)> {
        if shape.contains(&0) {
            return None;
        }
        let last: Vec<i64> = offsets.iter().zip(shape).map(|(&o, &s)| o + s - 1).collect();
        Some((linearize(offsets, strides), linearize(&last, strides)))
    };
    let (mine, _, my_shape) = layout(ordered[k])?;
    let my_range = range(&mine.nl_offsets, my_shape, &ng_strides);
    let skip = |c: &Contribution| -> RtResult<bool> {
        let (l, in_shape, _) = layout(c)?;
        Ok(match (range(&l.l_offsets, in_shape, &g_strides), my_range) {
            (Some((lo, hi)), Some((my_lo, my_hi))) => hi < my_lo || lo > my_hi,
            _ => true,
        })
    };
    let map = |old: &[i64], new: &mut [i64]| {
        let mut lin = linearize(old, &g_strides);
        for (j, &s) in new.iter_mut().zip(&ng_strides) {
            *j = lin / s;
            lin %= s;
        }
    };
    sources(ordered, k, map, skip)
}

/// `copy_permute`: new index `j` takes its value from old index `i` with
/// `i[axes[d]] = j[d]`.
pub(crate) fn copy_permute(ordered: &[&Contribution], k: usize, axes: &[usize]) -> RtResult<Vec<u8>> {
    check_global_shapes(ordered)?;
    Ok(gather(ordered, &permute_sources(ordered, k, axes)?))
}

/// [`sources`] of `ordered[k]`'s new block for `copy_permute`.
pub(crate) fn permute_sources(ordered: &[&Contribution], k: usize, axes: &[usize]) -> RtResult<Vec<(usize, usize)>> {
    let (mine, _, my_shape) = layout(ordered[k])?;
    let skip = |c: &Contribution| -> RtResult<bool> {
        let (l, in_shape, _) = layout(c)?;
        // Image of the old block in the new index space, intersected with mine.
        let disjoint = axes.iter().enumerate().any(|(d, &a)| {
            let (lo, hi) = (l.l_offsets[a], l.l_offsets[a] + in_shape[a]);
            let (my_lo, my_hi) = (mine.nl_offsets[d], mine.nl_offsets[d] + my_shape[d]);
            hi <= my_lo || lo >= my_hi
        });
        Ok(disjoint)
    };
    let map = |old: &[i64], new: &mut [i64]| {
        for (j, &a) in new.iter_mut().zip(axes) {
            *j = old[a];
        }
    };
    sources(ordered, k, map, skip)
}
