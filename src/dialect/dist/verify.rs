//! DistributedTaskIR rules: meshes, rank membership, shardings, collective
//! legality, redistribution copies and async waits.

use std::collections::HashMap;

use melior::ir::{attribute::AttributeLike, operation::OperationLike, Attribute, OperationRef, Type, ValueLike};

use crate::dialect::verify::checker::Checker;
use crate::{
    dialect::dist::mesh::Mesh,
    ir::{
        ods::OpKind,
        read::{
            i64_array_attr, i64_array_value, int_attr, name_of, str_attr, string_list_list, string_value, symbol_attr, symbol_value,
            tensor_element, tensor_shape, type_string, users, AttrName,
        },
    },
};

/// Largest mesh the verifier accepts: the largest world a spec may ask for.
const MAX_MESH_RANKS: i64 = crate::analysis::workload::MAX_WORLD_SIZE as i64;

pub fn check(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) {
    let in_dist = crate::ir::read::kinds_in("dist");
    let dist_ops: Vec<(OpKind, OperationRef)> = ops.iter().copied().filter(|(k, _)| in_dist[*k as usize]).collect();
    if dist_ops.is_empty() {
        return;
    }
    let meshes = collect_meshes(checker, &dist_ops);
    // The four attributes every op may have, found by name handle in one
    // pass over its attributes (ops are many, names few); the mesh of the
    // last mesh attribute is remembered (most ops name one mesh).
    let (_, first) = dist_ops[0];
    let names =
        [AttrName::new(first, "mesh"), AttrName::new(first, "lineage"), AttrName::new(first, "slice"), AttrName::new(first, "ranks")];
    // (Only a mesh found is remembered: each op naming none is reported.)
    let mut last_mesh: Option<(usize, &Mesh)> = None;
    for &(kind, op) in &dist_ops {
        let mut found: [Option<Attribute>; 4] = [None; 4];
        // SAFETY: a live op; its attributes live as long as its context.
        for named in unsafe { crate::ir::read::named_attributes(op.to_raw()) } {
            if let Some(slot) = names.iter().position(|n| n.is(named.name)) {
                found[slot].get_or_insert(unsafe { Attribute::from_raw(named.attribute) });
            }
        }
        let [mesh_attr, lineage, slice, ranks] = found;
        let mesh = match (mesh_attr, last_mesh) {
            (None, _) => None,
            (Some(a), Some((ptr, mesh))) if a.to_raw().ptr as usize == ptr => Some(mesh),
            (Some(a), _) => {
                let mesh = mesh_named(checker, op, &meshes, "mesh", a);
                if let Some(mesh) = mesh {
                    last_mesh = Some((a.to_raw().ptr as usize, mesh));
                }
                mesh
            }
        };
        if let Some(lineage) = lineage.and_then(string_value) {
            if lineage.is_empty() {
                checker.error(op, "lineage must name the ModelIR op or value this comes from");
            }
        }
        if let Some(mesh) = mesh {
            if let Some(slice) = slice.and_then(i64_array_value) {
                check_slice(checker, op, mesh, &slice);
            }
        }
        match kind.sync_form().unwrap_or(kind) {
            OpKind::DistValue | OpKind::DistOutput => {
                let ty =
                    if kind == OpKind::DistValue { op.result(0).ok().map(|r| r.r#type()) } else { op.operand(0).ok().map(|v| v.r#type()) };
                if let (Some(mesh), Some(ty)) = (mesh, ty) {
                    check_sharding(checker, op, mesh, "split_axes", ty);
                    if let Some(owners) = i64_array_attr(op, "owners") {
                        check_rank_set(checker, op, mesh, "owners", &owners);
                    }
                }
            }
            OpKind::DistCompute => {
                if let (Some(mesh), Some(ranks)) = (mesh, ranks.and_then(i64_array_value)) {
                    check_rank_set(checker, op, mesh, "ranks", &ranks);
                }
            }
            OpKind::DistReshard => check_reshard(checker, op, mesh),
            k @ (OpKind::DistAllReduce
            | OpKind::DistReduceScatter
            | OpKind::DistAllGather
            | OpKind::DistAllToAll
            | OpKind::DistBroadcast) => {
                check_collective(checker, op, k, kind.is_async(), mesh);
            }
            OpKind::DistP2P => check_p2p(checker, op, kind.is_async(), mesh),
            k @ (OpKind::DistCopyReshape | OpKind::DistCopyPermute) => check_copy(checker, op, k, &meshes),
            _ => {}
        }
        if kind.is_async() {
            check_async(checker, op);
        }
    }
}

/// A slice names one coordinate (or `-1`, every coordinate) per mesh axis.
fn check_slice(checker: &mut Checker, op: OperationRef, mesh: &Mesh, slice: &[i64]) {
    if slice.len() != mesh.axes.len() {
        checker.error(op, format!("'slice' has {} coordinates, but the mesh has {} axes", slice.len(), mesh.axes.len()));
        return;
    }
    for ((axis, size), coordinate) in mesh.axes.iter().zip(&mesh.shape).zip(slice) {
        if *coordinate < -1 || *coordinate >= *size {
            checker.error(
                op,
                format!("'slice' coordinate {coordinate} on axis '{axis}' is outside 0..{} (or -1 for every coordinate)", size - 1),
            );
        }
    }
}

fn collect_meshes(checker: &mut Checker, ops: &[(OpKind, OperationRef)]) -> HashMap<String, Mesh> {
    let mut meshes = HashMap::new();
    for &(kind, op) in ops {
        if kind != OpKind::DistMesh {
            continue;
        }
        let (Some(name), Some(axes), Some(shape)) =
            (str_attr(op, "sym_name"), op.attribute("axes").ok().and_then(crate::ir::read::string_list), i64_array_attr(op, "shape"))
        else {
            continue;
        };
        let mut ok = true;
        if axes.is_empty() {
            checker.error(op, "must have at least one axis");
            ok = false;
        }
        if shape.len() != axes.len() {
            checker.error(op, format!("expected {} axis sizes (one per axis), but got {}", axes.len(), shape.len()));
            ok = false;
        }
        let mut names = std::collections::HashSet::with_capacity(axes.len());
        for (i, axis) in axes.iter().enumerate() {
            if axis.is_empty() {
                checker.error(op, format!("axis #{i} has an empty name"));
                ok = false;
            } else if !names.insert(axis.as_str()) {
                checker.error(op, format!("axis '{axis}' is named twice"));
                ok = false;
            }
        }
        for (i, size) in shape.iter().enumerate() {
            if *size <= 0 {
                checker.error(op, format!("axis #{i} must have a positive size, but got {size}"));
                ok = false;
            }
        }
        match shape.iter().try_fold(1i64, |acc, s| acc.checked_mul(*s)) {
            None => {
                checker.error(op, "has more ranks than fit in 64 bits");
                ok = false;
            }
            Some(ranks) if ok && ranks > MAX_MESH_RANKS => {
                checker.error(op, format!("has {ranks} ranks, but at most 2^24 = {MAX_MESH_RANKS} are supported"));
                ok = false;
            }
            Some(_) => {}
        }
        if ok {
            meshes.insert(name.to_string(), Mesh { axes, shape });
        }
    }
    meshes
}

fn mesh_of<'m>(checker: &mut Checker, op: OperationRef, meshes: &'m HashMap<String, Mesh>, attribute: &str) -> Option<&'m Mesh> {
    mesh_named(checker, op, meshes, attribute, op.attribute(attribute).ok()?)
}

/// The mesh `value` (the op's `attribute`) names, if it is a symbol.
fn mesh_named<'m>(
    checker: &mut Checker,
    op: OperationRef,
    meshes: &'m HashMap<String, Mesh>,
    attribute: &str,
    value: Attribute,
) -> Option<&'m Mesh> {
    let symbol = symbol_value(value)?;
    let mesh = meshes.get(symbol);
    if mesh.is_none() {
        checker.error(op, format!("'{attribute}' @{symbol} does not name a valid 'dist.mesh' in this module"));
    }
    mesh
}

fn describe_ranks(mesh: &Mesh) -> String {
    format!("ranks 0..{}", mesh.size() - 1)
}

fn check_rank(checker: &mut Checker, op: OperationRef, mesh: &Mesh, what: &str, rank: i64) -> bool {
    if rank < 0 || rank >= mesh.size() {
        checker.error(op, format!("{what} {rank} is outside the mesh ({})", describe_ranks(mesh)));
        return false;
    }
    true
}

fn check_rank_set(checker: &mut Checker, op: OperationRef, mesh: &Mesh, attribute: &str, ranks: &[i64]) {
    if ranks.is_empty() {
        checker.error(op, format!("'{attribute}' must not be empty"));
    }
    let singular = attribute.trim_end_matches('s');
    // Rank sets are most often written in increasing order: then none repeats.
    if ranks.windows(2).all(|w| w[0] < w[1]) {
        for &rank in ranks {
            check_rank(checker, op, mesh, singular, rank);
        }
        return;
    }
    let mut seen = std::collections::HashSet::with_capacity(ranks.len());
    for &rank in ranks {
        if check_rank(checker, op, mesh, singular, rank) && !seen.insert(rank) {
            checker.error(op, format!("{singular} {rank} appears more than once in '{attribute}'"));
        }
    }
}

/// `split_axes` has one entry per tensor dimension, names only axes of the
/// mesh, uses each axis once, and splits static dims evenly.
fn check_sharding(checker: &mut Checker, op: OperationRef, mesh: &Mesh, attribute: &str, ty: Type) {
    let Some(split) = op.attribute(attribute).ok().and_then(string_list_list) else {
        checker.error(op, format!("'{attribute}' must be an array of arrays of mesh axis names"));
        return;
    };
    let Some(shape) = tensor_shape(ty) else { return };
    if split.len() != shape.len() {
        checker.error(op, format!("'{attribute}' has {} entries, but the value has rank {}", split.len(), shape.len()));
        return;
    }
    let mut used = std::collections::HashSet::new();
    for (dim, axes) in split.iter().enumerate() {
        let mut factor = 1i64;
        for axis in axes {
            match mesh.axis_size(axis) {
                None => checker.error(op, format!("'{attribute}' names '{axis}', which is not an axis of the mesh")),
                Some(size) => factor = factor.saturating_mul(size),
            }
            if !used.insert(axis.as_str()) {
                checker.error(op, format!("'{attribute}' uses mesh axis '{axis}' more than once"));
            }
        }
        if let Some(Some(extent)) = shape.get(dim) {
            if factor > 1 && extent % factor != 0 {
                checker.error(
                    op,
                    format!("dimension {dim} of size {extent} cannot be split evenly over {factor} ranks ('{attribute}' = {axes:?})"),
                );
            }
        }
    }
}

fn check_reshard(checker: &mut Checker, op: OperationRef, mesh: Option<&Mesh>) {
    let (Ok(input), Ok(result)) = (op.operand(0), op.result(0)) else { return };
    if input.r#type() != result.r#type() {
        checker
            .error(op, format!("must keep the logical type, but {} becomes {}", type_string(input.r#type()), type_string(result.r#type())));
    }
    if let Some(mesh) = mesh {
        check_sharding(checker, op, mesh, "from_split_axes", input.r#type());
        check_sharding(checker, op, mesh, "to_split_axes", result.r#type());
    }
}

fn check_collective(checker: &mut Checker, op: OperationRef, kind: OpKind, asynchronous: bool, mesh: Option<&Mesh>) {
    let participants = i64_array_attr(op, "participants");
    let axes = crate::ir::read::attr_string_list(op, "mesh_axes");
    // The group size: the explicit participants, or the claimed mesh axes.
    let n = match (&participants, &axes, mesh) {
        (Some(participants), _, _) => {
            if let Some(mesh) = mesh {
                check_rank_set(checker, op, mesh, "participants", participants);
            } else if participants.is_empty() {
                checker.error(op, "'participants' must not be empty");
            }
            participants.len() as i64
        }
        (None, Some(axes), Some(mesh)) => {
            let mut size = 1i64;
            for axis in axes {
                match mesh.axis_size(axis) {
                    Some(s) => size = size.saturating_mul(s),
                    None => checker.error(op, format!("'axes' names '{axis}', which is not an axis of the mesh")),
                }
            }
            if axes.is_empty() {
                checker.error(op, "'axes' must name at least one mesh axis");
            }
            size
        }
        (None, Some(_), None) => return,
        (None, None, _) => {
            checker.error(op, "needs its group: explicit 'participants' (over [...]) or the mesh 'axes' it spans");
            return;
        }
    };
    if kind == OpKind::DistBroadcast {
        if let (Some(root), Some(participants)) = (int_attr(op, "root"), &participants) {
            if !participants.contains(&root) {
                checker.error(op, format!("root {root} is not one of the participants"));
            }
        }
    }
    let (Ok(input), Ok(result)) = (op.operand(0), op.result(usize::from(asynchronous))) else { return };
    let (input_ty, result_ty) = (input.r#type(), result.r#type());
    if n <= 0 {
        return;
    }
    match (kind, tensor_shape(input_ty), tensor_shape(result_ty)) {
        (OpKind::DistReduceScatter | OpKind::DistAllGather, Some(x), Some(y)) => {
            if tensor_element(input_ty) != tensor_element(result_ty) {
                checker.error(op, "result element type must match the input's");
            }
            let axis = int_attr(op, "axis").unwrap_or(0);
            if axis < 0 || axis as usize >= x.len() || x.len() != y.len() {
                checker.error(
                    op,
                    format!(
                        "axis {axis} is not a dimension of both input ({}) and result ({})",
                        type_string(input_ty),
                        type_string(result_ty)
                    ),
                );
                return;
            }
            let axis = axis as usize;
            for d in 0..x.len() {
                let (Some(a), Some(b)) = (x[d], y[d]) else { continue };
                let expected = match (d == axis, kind) {
                    (false, _) => a,
                    (true, OpKind::DistAllGather) => match a.checked_mul(n) {
                        Some(product) => product,
                        None => {
                            checker.error(op, format!("dimension {d} of size {a} gathered over {n} participants does not fit in 64 bits"));
                            return;
                        }
                    },
                    (true, _) => {
                        if a % n != 0 {
                            checker.error(op, format!("dimension {d} of size {a} cannot be scattered over {n} participants"));
                            return;
                        }
                        a / n
                    }
                };
                if b != expected {
                    checker.error(op, format!("expected result dimension {d} to be {expected}, but got {b}"));
                }
            }
        }
        (OpKind::DistReduceScatter | OpKind::DistAllGather, _, _)
            if input_ty != result_ty && (tensor_shape(input_ty).is_some() || tensor_shape(result_ty).is_some()) =>
        {
            checker.error(
                op,
                format!("result type {} must be the gathered or scattered input type {}", type_string(result_ty), type_string(input_ty)),
            );
        }
        _ => {}
    }
}

fn check_p2p(checker: &mut Checker, op: OperationRef, _asynchronous: bool, mesh: Option<&Mesh>) {
    let (Some(source), Some(dest)) = (int_attr(op, "source"), int_attr(op, "dest")) else { return };
    if let Some(mesh) = mesh {
        match str_attr(op, "along") {
            // Coordinates on one axis.
            Some(axis) => match mesh.axis_size(axis) {
                None => checker.error(op, format!("'along' names '{axis}', which is not an axis of the mesh")),
                Some(size) => {
                    for (what, coordinate) in [("source", source), ("dest", dest)] {
                        if coordinate < 0 || coordinate >= size {
                            checker.error(op, format!("{what} coordinate {coordinate} is outside axis '{axis}' (0..{})", size - 1));
                        }
                    }
                }
            },
            None => {
                check_rank(checker, op, mesh, "source", source);
                check_rank(checker, op, mesh, "dest", dest);
            }
        }
    }
    if source == dest {
        checker.error(op, format!("source and dest must differ, but both are {source}"));
    }
}

/// Operand segment lengths of the two redistribution copies agree with the
/// ranks of input and result; `axes` is a permutation.
fn check_copy(checker: &mut Checker, op: OperationRef, kind: OpKind, meshes: &HashMap<String, Mesh>) {
    if symbol_attr(op, "team").is_some() {
        let _ = mesh_of(checker, op, meshes, "team");
    }
    let Some(segments) = crate::ir::read::i32_array_attr(op, "operandSegmentSizes") else { return };
    let (Ok(input), Ok(result)) = (op.operand(0), op.result(1)) else { return };
    let (Some(in_shape), Some(out_shape)) = (tensor_shape(input.r#type()), tensor_shape(result.r#type())) else { return };
    if tensor_element(input.r#type()) != tensor_element(result.r#type()) {
        checker.error(op, "result element type must match the input's");
    }
    let (in_rank, out_rank) = (in_shape.len() as i64, out_shape.len() as i64);
    let names: &[(&str, bool)] = if kind == OpKind::DistCopyReshape {
        &[("g_shape", true), ("l_offsets", true), ("ng_shape", false), ("nl_offsets", false), ("nl_shape", false)]
    } else {
        &[("g_shape", true), ("l_offsets", true), ("nl_offsets", false), ("nl_shape", false)]
    };
    for (i, (segment, of_input)) in names.iter().enumerate() {
        let Some(&len) = segments.get(i + 1) else { continue };
        let expected = if *of_input { in_rank } else { out_rank };
        let which = if *of_input { "input" } else { "result" };
        if len != expected {
            checker.error(op, format!("expected {expected} '{segment}' operands (the {which} rank), but got {len}"));
        }
    }
    if kind == OpKind::DistCopyPermute {
        if in_rank != out_rank {
            checker.error(op, format!("a permutation keeps the rank, but input has rank {in_rank} and result {out_rank}"));
        }
        if let Some(axes) = i64_array_attr(op, "axes") {
            let mut sorted = axes.clone();
            sorted.sort_unstable();
            if sorted != (0..in_rank).collect::<Vec<_>>() {
                checker.error(op, format!("'axes' {axes:?} must be a permutation of 0..{in_rank}"));
            }
        }
    }
}

/// The handle is used only by waits and waited exactly once; every use of
/// the data result comes after that wait in the wait's block (so the wait
/// dominates it).
fn check_async(checker: &mut Checker, op: OperationRef) {
    let (Ok(handle), Ok(data)) = (op.result(0), op.result(1)) else { return };
    let mut waits = Vec::new();
    for user in users(handle) {
        if OpKind::of(user) == Some(OpKind::DistWait) {
            waits.push(user);
        } else {
            checker.error(op, format!("async handle may only be used by 'dist.wait', but is used by '{}'", name_of(user)));
        }
    }
    let wait = match waits.as_slice() {
        [] => {
            checker.error(op, "async handle is never waited on ('dist.wait' missing)");
            return;
        }
        [wait] => *wait,
        more => {
            checker.error(op, format!("async handle is waited {} times; it must be waited exactly once", more.len()));
            return;
        }
    };
    let Some(wait_block) = wait.block() else { return };
    for user in users(data) {
        let mut ancestor = Some(user);
        while let Some(candidate) = ancestor {
            if candidate.block().is_some_and(|b| b.to_raw().ptr == wait_block.to_raw().ptr) {
                break;
            }
            ancestor = candidate.parent_operation();
        }
        let after_wait = ancestor.is_some_and(|a| wait.is_before_in_block(a));
        if !after_wait {
            checker.error(user, format!("uses the result of '{}' before the 'dist.wait' on its handle", name_of(op)));
        }
    }
}
