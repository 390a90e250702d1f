//! Start calls: read and check this rank's arguments, then deposit its
//! contribution through [`World::start_exchange`].
//!
//! Checks that need only this rank's arguments happen here (a failure is
//! returned to the caller and deposited for the other participants); checks
//! across ranks happen at wait, in [`super::collective::complete`].

use std::ffi::c_void;

use super::backend::Backend;
use super::collective::numel_of;
use super::contribution::{BlockLayout, Contribution, OpKind};
use super::dtype::{ElementType, ReduceOp};
use super::error::{RtError, RtResult};
use super::memref::{read_i64s, StridedView};

/// An unranked memref argument: `(rank, desc)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unranked {
    pub rank: i64,
    pub desc: *mut c_void,
}

impl Unranked {
    pub(crate) fn new(rank: i64, desc: *mut c_void) -> Self {
        Unranked { rank, desc }
    }

    /// # Safety
    /// As for [`StridedView::from_unranked`].
    unsafe fn view(self, what: &str, ty: ElementType) -> RtResult<StridedView> {
        // SAFETY: forwarded contract.
        unsafe { StridedView::from_unranked(what, self.rank, self.desc, ty.size()) }
    }

    /// Reads the memref as `(shape, packed data)`.
    ///
    /// # Safety
    /// As for [`StridedView::from_unranked`] (reads only).
    unsafe fn read(self, what: &str, ty: ElementType) -> RtResult<(Vec<i64>, Vec<u8>)> {
        // SAFETY: forwarded contract.
        let view = unsafe { self.view(what, ty) }?;
        let mut data = view.read();
        ty.canonicalize(&mut data);
        Ok((view.sizes().to_vec(), data))
    }

    /// Reads a rank-1 memref of `i64`/`index` values.
    ///
    /// # Safety
    /// As for [`StridedView::from_unranked`] (reads only).
    unsafe fn read_i64s(self, what: &str) -> RtResult<Vec<i64>> {
        // SAFETY: forwarded contract.
        unsafe { read_i64s(what, self.rank, self.desc) }
    }
}

/// Reads the participants list (world ranks, in call order).
///
/// # Safety
/// As for [`StridedView::from_unranked`] (reads only).
unsafe fn participants(world: &Backend, u: Unranked) -> RtResult<Vec<usize>> {
    // SAFETY: forwarded contract.
    let raw = unsafe { u.read_i64s("participants") }?;
    raw.into_iter().map(|p| world.check_rank("participant", p)).collect()
}

fn check_axis(axis: i64, shape: &[i64]) -> RtResult<usize> {
    usize::try_from(axis)
        .ok()
        .filter(|&a| a < shape.len())
        .ok_or_else(|| RtError::InvalidArgument(format!("axis {axis} is out of range for shape {shape:?}")))
}

fn check_shape(what: &str, got: &[i64], expected: &[i64]) -> RtResult<()> {
    if got == expected {
        Ok(())
    } else {
        Err(RtError::ShapeMismatch(format!("{what} has shape {got:?}, expected {expected:?}")))
    }
}

fn check_divisible(shape: &[i64], axis: usize, n: usize) -> RtResult<()> {
    if shape[axis] % n as i64 == 0 {
        Ok(())
    } else {
        Err(RtError::ShapeMismatch(format!("input dimension {axis} of shape {shape:?} is not divisible by {n} participants")))
    }
}

/// The signature shared by the collectives' start calls.
struct Collective {
    ty: ElementType,
    /// Read the input in place at wait instead of copying it at start
    /// (in-process only, where the peers can read it; see `Contribution`).
    in_place: bool,
    team: i64,
    participants: Unranked,
    input: Unranked,
    output: Unranked,
}

impl Collective {
    /// Starts the collective; `shape_rule(participants, in_shape)` checks
    /// the input and gives the kind and the expected output shape (`None`:
    /// checked across ranks at wait).
    ///
    /// # Safety
    /// The three memrefs satisfy [`StridedView::from_unranked`]'s contract,
    /// the output until the matching wait; with `in_place`, the input too,
    /// and it is not modified before that wait (MPI's rule for a
    /// nonblocking collective's send buffer).
    unsafe fn start(
        self,
        read_input: impl FnOnce(usize) -> bool,
        shape_rule: impl FnOnce(&[usize], Option<&[i64]>) -> RtResult<(OpKind, Option<Vec<i64>>)>,
    ) -> RtResult<i64> {
        let world = Backend::current()?;
        let me = world.rank();
        // SAFETY: forwarded contract.
        let parts = unsafe { participants(&world, self.participants) }?;
        // `i1` inputs are copied: the copy makes every byte 0 or 1.
        let in_place = self.in_place && matches!(world, Backend::Local(..)) && self.ty != ElementType::I1;
        world.start_exchange(self.team, parts, |parts| {
            let (in_shape, data, source) = if !read_input(me) {
                (None, Vec::new(), None)
            } else {
                // SAFETY: forwarded contract.
                let view = unsafe { self.input.view("input", self.ty) }?;
                if in_place && view.contiguous_base().is_some() {
                    (Some(view.sizes().to_vec()), Vec::new(), Some(view))
                } else {
                    // SAFETY: forwarded contract.
                    let (shape, data) = unsafe { self.input.read("input", self.ty) }?;
                    (Some(shape), data, None)
                }
            };
            let (kind, expected_out) = shape_rule(parts, in_shape.as_deref())?;
            // SAFETY: forwarded contract (valid until the wait).
            let out = unsafe { self.output.view("output", self.ty) }?;
            if let Some(expected) = expected_out {
                check_shape("output", out.sizes(), &expected)?;
            }
            let contribution = Contribution {
                rank: me,
                kind,
                dtype: self.ty,
                participants: parts.to_vec(),
                in_shape,
                data,
                source,
                out_shape: Some(out.sizes().to_vec()),
                layout: None,
                target: Some(out.clone()),
                op: super::op_identity::current(),
            };
            Ok((contribution, Some(out)))
        })
    }
}

fn input_shape(s: Option<&[i64]>) -> RtResult<&[i64]> {
    s.ok_or_else(|| RtError::Internal("input was not read".into()))
}

/// `_bprt_all_reduce_T`. In-process, a packed row-major input is not
/// copied: the peers read it at their waits.
///
/// # Safety
/// See [`Collective::start`] (with `in_place`).
pub(crate) unsafe fn all_reduce(
    ty: ElementType,
    team: i64,
    participants: Unranked,
    input: Unranked,
    output: Unranked,
    op: i32,
) -> RtResult<i64> {
    let c = Collective { ty, in_place: true, team, participants, input, output };
    // SAFETY: forwarded contract.
    unsafe {
        c.start(
            |_| true,
            |_, s| {
                let op = ReduceOp::from_i32(op)?;
                Ok((OpKind::AllReduce { op }, Some(input_shape(s)?.to_vec())))
            },
        )
    }
}

/// `_bprt_reduce_scatter_T`.
///
/// # Safety
/// See [`Collective::start`].
pub(crate) unsafe fn reduce_scatter(
    ty: ElementType,
    team: i64,
    participants: Unranked,
    input: Unranked,
    output: Unranked,
    op: i32,
    axis: i64,
) -> RtResult<i64> {
    let c = Collective { ty, in_place: false, team, participants, input, output };
    // SAFETY: forwarded contract.
    unsafe {
        c.start(
            |_| true,
            |parts, s| {
                let op = ReduceOp::from_i32(op)?;
                let shape = input_shape(s)?;
                let axis = check_axis(axis, shape)?;
                check_divisible(shape, axis, parts.len())?;
                let mut out = shape.to_vec();
                out[axis] /= parts.len() as i64;
                Ok((OpKind::ReduceScatter { op, axis }, Some(out)))
            },
        )
    }
}

/// `_bprt_all_gather_T`.
///
/// # Safety
/// See [`Collective::start`].
pub(crate) unsafe fn all_gather(
    ty: ElementType,
    team: i64,
    participants: Unranked,
    input: Unranked,
    output: Unranked,
    axis: i64,
) -> RtResult<i64> {
    let c = Collective { ty, in_place: false, team, participants, input, output };
    // SAFETY: forwarded contract.
    unsafe {
        c.start(
            |_| true,
            |_, s| {
                let axis = check_axis(axis, input_shape(s)?)?;
                // The output size along `axis` depends on the other ranks.
                Ok((OpKind::AllGather { axis }, None))
            },
        )
    }
}

/// `_bprt_all_to_all_T`.
///
/// # Safety
/// See [`Collective::start`].
pub(crate) unsafe fn all_to_all(
    ty: ElementType,
    team: i64,
    participants: Unranked,
    input: Unranked,
    output: Unranked,
    axis: i64,
) -> RtResult<i64> {
    let c = Collective { ty, in_place: false, team, participants, input, output };
    // SAFETY: forwarded contract.
    unsafe {
        c.start(
            |_| true,
            |parts, s| {
                let shape = input_shape(s)?;
                let axis = check_axis(axis, shape)?;
                check_divisible(shape, axis, parts.len())?;
                Ok((OpKind::AllToAll { axis }, Some(shape.to_vec())))
            },
        )
    }
}

/// `_bprt_broadcast_T`; only the root's input is read.
///
/// # Safety
/// See [`Collective::start`].
pub(crate) unsafe fn broadcast(
    ty: ElementType,
    team: i64,
    participants: Unranked,
    input: Unranked,
    output: Unranked,
    root: i64,
) -> RtResult<i64> {
    let c = Collective { ty, in_place: false, team, participants, input, output };
    // SAFETY: forwarded contract.
    unsafe {
        c.start(
            |me| root == me as i64,
            |parts, _| {
                let Some(root) = parts.iter().copied().find(|&p| p as i64 == root) else {
                    return Err(RtError::InvalidArgument(format!("broadcast root {root} is not among the participants {parts:?}")));
                };
                // The output shape is the root's input shape, checked at wait.
                Ok((OpKind::Broadcast { root }, None))
            },
        )
    }
}

/// `_bprt_send_recv_T`: `source` reads its input, `dest` receives into its
/// output; every other rank gets a handle that completes immediately.
///
/// # Safety
/// As for [`StridedView::from_unranked`]; `output` (on `dest`) until the wait.
pub(crate) unsafe fn send_recv(ty: ElementType, team: i64, input: Unranked, output: Unranked, source: i64, dest: i64) -> RtResult<i64> {
    let world = Backend::current()?;
    let me = world.rank();
    let source = world.check_rank("source", source)?;
    let dest = world.check_rank("dest", dest)?;
    if me != source && me != dest {
        return Ok(world.start_noop());
    }
    let parts = if source == dest { vec![source] } else { vec![source, dest] };
    world.start_exchange(team, parts, |parts| {
        let (in_shape, data) = if me == source {
            // SAFETY: forwarded contract.
            let (shape, data) = unsafe { input.read("input", ty) }?;
            (Some(shape), data)
        } else {
            (None, Vec::new())
        };
        let out = if me == dest {
            // SAFETY: forwarded contract (valid until the wait).
            Some(unsafe { output.view("output", ty) }?)
        } else {
            None
        };
        let contribution = Contribution {
            rank: me,
            kind: OpKind::SendRecv { source, dest },
            dtype: ty,
            participants: parts.to_vec(),
            in_shape,
            data,
            source: None,
            out_shape: out.as_ref().map(|o| o.sizes().to_vec()),
            layout: None,
            target: None,
            op: super::op_identity::current(),
        };
        Ok((contribution, out))
    })
}

/// Arguments shared by the redistribution copies.
pub(crate) struct Redistribution {
    pub input: Unranked,
    pub g_shape: Unranked,
    pub l_offsets: Unranked,
    pub nl_offsets: Unranked,
    pub nl_shape: Unranked,
    pub output: Unranked,
}

fn check_len(what: &str, v: &[i64], rank: usize) -> RtResult<()> {
    if v.len() == rank {
        Ok(())
    } else {
        Err(RtError::ShapeMismatch(format!("{what} {v:?} has {} entries, expected {rank}", v.len())))
    }
}

fn check_box(what: &str, offsets: &[i64], shape: &[i64], global: &[i64]) -> RtResult<()> {
    let fits = offsets.iter().zip(shape).zip(global).all(|((&o, &s), &g)| o >= 0 && s >= 0 && o.checked_add(s).is_some_and(|e| e <= g));
    if fits {
        Ok(())
    } else {
        Err(RtError::ShapeMismatch(format!("{what} at offsets {offsets:?} with shape {shape:?} exceeds the global shape {global:?}")))
    }
}

impl Redistribution {
    /// Starts a copy over the whole team. `new_global(g_shape)` gives the
    /// kind and the new global shape.
    ///
    /// # Safety
    /// Every memref satisfies [`StridedView::from_unranked`]'s contract,
    /// the output until the matching wait.
    unsafe fn start(self, ty: ElementType, team: i64, new_global: impl FnOnce(&[i64]) -> RtResult<(OpKind, Vec<i64>)>) -> RtResult<i64> {
        let world = Backend::current()?;
        let me = world.rank();
        let parts: Vec<usize> = (0..world.nranks()).collect();
        world.start_exchange(team, parts, |parts| {
            // SAFETY: forwarded contract (reads only).
            let (in_shape, data) = unsafe { self.input.read("input", ty) }?;
            // SAFETY: forwarded contract (reads only).
            let g_shape = unsafe { self.g_shape.read_i64s("g_shape") }?;
            // SAFETY: forwarded contract (reads only).
            let l_offsets = unsafe { self.l_offsets.read_i64s("l_offsets") }?;
            // SAFETY: forwarded contract (reads only).
            let nl_offsets = unsafe { self.nl_offsets.read_i64s("nl_offsets") }?;
            // SAFETY: forwarded contract (reads only).
            let nl_shape = unsafe { self.nl_shape.read_i64s("nl_shape") }?;
            // SAFETY: forwarded contract (valid until the wait).
            let out = unsafe { self.output.view("output", ty) }?;

            check_len("g_shape", &g_shape, in_shape.len())?;
            check_len("l_offsets", &l_offsets, in_shape.len())?;
            numel_of("g_shape", &g_shape)?;
            check_box("local block", &l_offsets, &in_shape, &g_shape)?;
            let (kind, ng_shape) = new_global(&g_shape)?;
            check_len("nl_offsets", &nl_offsets, ng_shape.len())?;
            check_len("nl_shape", &nl_shape, ng_shape.len())?;
            check_shape("output", out.sizes(), &nl_shape)?;
            check_box("new local block", &nl_offsets, &nl_shape, &ng_shape)?;
            let contribution = Contribution {
                rank: me,
                kind,
                dtype: ty,
                participants: parts.to_vec(),
                in_shape: Some(in_shape),
                data,
                source: None,
                out_shape: Some(nl_shape),
                layout: Some(BlockLayout { g_shape, l_offsets, ng_shape, nl_offsets }),
                target: None,
                op: super::op_identity::current(),
            };
            Ok((contribution, Some(out)))
        })
    }
}

/// `_bprt_copy_reshape_T`.
///
/// # Safety
/// See [`Redistribution::start`]; `ng_shape` as for reads.
pub(crate) unsafe fn copy_reshape(ty: ElementType, team: i64, args: Redistribution, ng_shape: Unranked) -> RtResult<i64> {
    let new_global = |g_shape: &[i64]| {
        // SAFETY: forwarded contract (reads only).
        let ng = unsafe { ng_shape.read_i64s("ng_shape") }?;
        let (old, new) = (numel_of("g_shape", g_shape)?, numel_of("ng_shape", &ng)?);
        if old != new {
            return Err(RtError::ShapeMismatch(format!("cannot reshape {g_shape:?} ({old} elements) to {ng:?} ({new} elements)")));
        }
        Ok((OpKind::CopyReshape, ng))
    };
    // SAFETY: forwarded contract.
    unsafe { args.start(ty, team, new_global) }
}

/// `_bprt_copy_permute_T`.
///
/// # Safety
/// See [`Redistribution::start`]; `axes` as for reads.
pub(crate) unsafe fn copy_permute(ty: ElementType, team: i64, args: Redistribution, axes: Unranked) -> RtResult<i64> {
    let new_global = |g_shape: &[i64]| {
        // SAFETY: forwarded contract (reads only).
        let raw = unsafe { axes.read_i64s("axes") }?;
        let r = g_shape.len();
        let mut seen = vec![false; r];
        let mut axes = Vec::with_capacity(r);
        for &a in &raw {
            match usize::try_from(a).ok().filter(|&a| a < r) {
                Some(a) if !seen[a] => {
                    seen[a] = true;
                    axes.push(a);
                }
                _ => return Err(RtError::InvalidArgument(format!("axes {raw:?} is not a permutation of 0..{r}"))),
            }
        }
        if axes.len() != r {
            return Err(RtError::InvalidArgument(format!("axes {raw:?} is not a permutation of 0..{r}")));
        }
        let ng = axes.iter().map(|&a| g_shape[a]).collect();
        Ok((OpKind::CopyPermute { axes }, ng))
    };
    // SAFETY: forwarded contract.
    unsafe { args.start(ty, team, new_global) }
}
