//! Emitting dist tasks with the typed builders: the shared part of the
//! training and inference distribution passes. Tasks are appended to a
//! block of a detached module, so a failing pass changes nothing.

use melior::ir::{block::BlockLike, BlockRef, Location, Operation, OperationRef, Type, Value};

use crate::{
    analysis::workload::{CollectiveKind, PrimitiveInvocation},
    dialect::{
        builder::{result, BuildError, Builder},
        dist,
    },
    ir::ods::{self, engine_case, phase_case, primitive_case, tile_overlap, Reduction},
};

/// Where generated ops go and where they are located.
pub(crate) struct Emitter<'c, 'a> {
    pub b: Builder<'c>,
    pub block: BlockRef<'c, 'a>,
    /// The source op's location: generated ops are named inside it.
    pub anchor: Location<'c>,
    pub token: Type<'c>,
}

impl<'c, 'a> Emitter<'c, 'a> {
    pub fn new(b: Builder<'c>, block: BlockRef<'c, 'a>, anchor: Location<'c>) -> Self {
        Self { b, block, anchor, token: b.dist_token() }
    }

    /// A location named `id` inside the anchor.
    pub fn at(&self, id: &str) -> Location<'c> {
        self.b.named_location(id, self.anchor)
    }

    /// Appends a built op.
    pub fn push(&self, op: Result<Operation<'c>, BuildError>) -> Result<OperationRef<'c, 'a>, BuildError> {
        Ok(self.block.append_operation(op?))
    }
}

/// Which ranks run the tasks and which group each collective spans.
#[derive(Clone, Copy)]
pub(crate) struct Placement<'x> {
    pub mesh: &'x str,
    pub slice: Option<&'x [i64]>,
    pub ranks: Option<&'x [i64]>,
    /// Explicit participants of every collective, or none (then `axes`).
    pub participants: Option<&'x [i64]>,
    /// The mesh axes every collective spans.
    pub axes: &'x [&'x str],
    /// Prefix of every task id (the chunk's, so ids stay unique).
    pub id_prefix: &'x str,
}

/// One task for `inv` depending on `deps` (tokens of the tasks it waits
/// for, or their tensors, or the block input; at least one); returns its
/// op. A compute task returns a token and, with `value`, a tensor of that
/// type (its result on one rank). A collective takes the first dependency
/// as its input; with `value` (its input then the tensor of the task it
/// follows) it returns a tensor of that type, split or joined along the
/// sequence (`axis = 1`), else a token.
pub(crate) fn emit_invocation<'c, 'a>(
    e: &Emitter<'c, 'a>,
    inv: &PrimitiveInvocation,
    place: Placement,
    lineage: &str,
    deps: &[Value<'c, 'a>],
    value: Option<Type<'c>>,
) -> Result<OperationRef<'c, 'a>, BuildError> {
    let (&previous, rest) = deps.split_first().ok_or(BuildError { op: "dist task without a dependency" })?;
    let phase = phase_case(inv.phase);
    let id = format!("{}{}", place.id_prefix, inv.name);
    let location = e.at(&id);
    let axes = e.b.strings(place.axes);
    if let Some(collective) = inv.collective {
        let tiled_with = inv.tiling.as_ref().map(|t| format!("{}{}", place.id_prefix, t.linear_task(inv.phase)));
        let tiling = inv.tiling.as_ref().zip(tiled_with.as_deref()).map(|(t, with)| (with, t.tiles, tile_overlap(t.overlap)));
        let common = |reduction| CollectiveFields {
            inv,
            result: value.unwrap_or(e.token),
            axis: value.is_some().then_some(1),
            id: &id,
            place,
            lineage,
            previous,
            deps: rest,
            phase,
            axes,
            reduction,
            message_bytes: collective.message_bytes,
            tiling,
        };
        return e.push(match collective.kind {
            CollectiveKind::AllReduce => common(Some(Reduction::Sum)).all_reduce(e, location),
            CollectiveKind::ReduceScatter => common(Some(Reduction::Sum)).reduce_scatter(e, location),
            CollectiveKind::AllGather => common(None).all_gather(e, location),
        });
    }
    let results: Vec<Type<'c>> = std::iter::once(e.token).chain(value).collect();
    e.push(
        dist::Compute {
            deps,
            id: &id,
            mesh: place.mesh,
            phase,
            lineage,
            engine: engine_case(inv.engine),
            primitive: primitive_case(inv.primitive),
            ops: inv.ops,
            read_bytes: inv.read_bytes,
            write_bytes: inv.write_bytes,
            results: &results,
            optional: dist::ComputeOptional {
                shared_by: (inv.shared_by > 1).then_some(inv.shared_by),
                slice: place.slice,
                ranks: place.ranks,
                ..Default::default()
            },
        }
        .build(&e.b, location),
    )
}

/// What the three TP collectives of the derivation share.
struct CollectiveFields<'x, 'c, 'a> {
    inv: &'x PrimitiveInvocation,
    /// The result type: the input's for an all-reduce (inferred).
    result: Type<'c>,
    /// The dimension an all-gather joins or a reduce-scatter splits.
    axis: Option<i64>,
    id: &'x str,
    place: Placement<'x>,
    lineage: &'x str,
    previous: Value<'c, 'a>,
    /// What the collective waits for besides its input.
    deps: &'x [Value<'c, 'a>],
    phase: ods::Phase,
    axes: melior::ir::Attribute<'c>,
    reduction: Option<Reduction>,
    message_bytes: u64,
    /// The linear's task id, tiles and schedule of a tiled collective.
    tiling: Option<(&'x str, u64, ods::TileOverlap)>,
}

impl<'c, 'a> CollectiveFields<'_, 'c, 'a> {
    fn all_reduce(&self, e: &Emitter<'c, 'a>, location: Location<'c>) -> Result<Operation<'c>, BuildError> {
        dist::AllReduce {
            input: self.previous,
            deps: self.deps,
            id: self.id,
            mesh: self.place.mesh,
            phase: self.phase,
            lineage: self.lineage,
            message_bytes: self.message_bytes,
            reduction: self.reduction.unwrap_or(Reduction::Sum),
            optional: dist::AllReduceOptional {
                participants: self.place.participants,
                mesh_axes: Some(self.axes),
                slice: self.place.slice,
                ops: Some(self.inv.ops),
                read_bytes: Some(self.inv.read_bytes),
                write_bytes: Some(self.inv.write_bytes),
                tiled_with: self.tiling.map(|t| t.0),
                tiles: self.tiling.map(|t| t.1),
                overlap: self.tiling.map(|t| t.2),
                ..Default::default()
            },
        }
        .build(&e.b, location)
    }

    fn reduce_scatter(&self, e: &Emitter<'c, 'a>, location: Location<'c>) -> Result<Operation<'c>, BuildError> {
        dist::ReduceScatter {
            input: self.previous,
            deps: self.deps,
            id: self.id,
            mesh: self.place.mesh,
            phase: self.phase,
            lineage: self.lineage,
            message_bytes: self.message_bytes,
            reduction: self.reduction.unwrap_or(Reduction::Sum),
            results: &[self.result],
            optional: dist::ReduceScatterOptional {
                axis: self.axis,
                participants: self.place.participants,
                mesh_axes: Some(self.axes),
                slice: self.place.slice,
                ops: Some(self.inv.ops),
                read_bytes: Some(self.inv.read_bytes),
                write_bytes: Some(self.inv.write_bytes),
                tiled_with: self.tiling.map(|t| t.0),
                tiles: self.tiling.map(|t| t.1),
                overlap: self.tiling.map(|t| t.2),
                ..Default::default()
            },
        }
        .build(&e.b, location)
    }

    fn all_gather(&self, e: &Emitter<'c, 'a>, location: Location<'c>) -> Result<Operation<'c>, BuildError> {
        dist::AllGather {
            input: self.previous,
            deps: self.deps,
            id: self.id,
            mesh: self.place.mesh,
            phase: self.phase,
            lineage: self.lineage,
            message_bytes: self.message_bytes,
            results: &[self.result],
            optional: dist::AllGatherOptional {
                axis: self.axis,
                participants: self.place.participants,
                mesh_axes: Some(self.axes),
                slice: self.place.slice,
                ops: Some(self.inv.ops),
                read_bytes: Some(self.inv.read_bytes),
                write_bytes: Some(self.inv.write_bytes),
                tiled_with: self.tiling.map(|t| t.0),
                tiles: self.tiling.map(|t| t.1),
                overlap: self.tiling.map(|t| t.2),
                ..Default::default()
            },
        }
        .build(&e.b, location)
    }
}

/// `token`, the first result of a task op.
pub(crate) fn token<'c, 'a>(op: OperationRef<'c, 'a>) -> Value<'c, 'a> {
    result(op, 0)
}
