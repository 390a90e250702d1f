//! `lower-dist-to-mpi`: rewrites what LLVM 22's upstream `mpi` dialect can
//! express of a `dist` program into `mpi` ops, for users who stay on MLIR's
//! own MPI path (`convert-to-llvm` then lowers them to MPICH calls):
//!
//! - `dist.all_reduce` (synchronous, over the whole mesh in rank order, on
//!   `f32`, `f64`, `i8` .. `i64` of static shape) -> `mpi.allreduce` on
//!   `MPI_COMM_WORLD` (MPI's own `MPI_SUM`/`MAX`/`MIN`/`PROD`: float
//!   `max`/`min` follow MPI, not the runtime's NaN propagation);
//! - `dist.p2p` (synchronous) -> `mpi.send` on the source and `mpi.recv` on
//!   the destination (tag 0); elsewhere the result is left unwritten, as
//!   with the runtime;
//! - `dist.rank` -> `mpi.comm_rank`; `dist.num_ranks` -> the mesh's size
//!   as a constant (LLVM 22's LLVM lowering has no `mpi.comm_size`, and the
//!   program runs on a world the size of the mesh).
//!
//! Not covered (a located diagnostic; the module is left untouched):
//! reduce-scatter, all-gather, all-to-all and broadcast (the dialect has no
//! such ops in LLVM 22), the async forms (its all-reduce is blocking),
//! participant subsets, `f16`/`bf16`/`i1`/`index` data, and the
//! redistribution copies. `lower-dist-to-runtime` covers all of them.
//! The program must run with `MPI_COMM_WORLD` the size of the mesh, after
//! `MPI_Init` (`blueprint-run --lower-to-mpi` under `mpirun` does both).

use std::collections::HashMap;

use melior::{
    dialect::DialectHandle,
    ir::{attribute::AttributeLike, operation::OperationLike, OperationRef, Value, ValueLike},
    pass::ExternalPass,
};

use super::dist_to_runtime::{drop_empty_program, memref_of, Emitter};
use crate::ir::{
    diagnostics::emit_error,
    ods::{OpKind, Reduction},
    read::{collect_ops, enum_attr, i64_array_attr, int_attr, name_of, str_attr, symbol_attr, tensor_element, tensor_shape, type_string},
    rewrite::{erase, known_attribute, replace_all_uses},
};

crate::ir::pass_macro::external_pass!(
    "LowerDistToMPI",
    "lower-dist-to-mpi",
    "Lower synchronous all-reduce, point-to-point transfers and rank queries to the upstream mpi dialect",
    run,
    &[
        DialectHandle::arith(),
        DialectHandle::scf(),
        DialectHandle::tensor(),
        // SAFETY: the handle getters have no preconditions.
        unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__bufferization__()) },
        // SAFETY: as above.
        unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__mpi__()) },
        // SAFETY: as above.
        unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__dlti__()) },
    ]
);

/// What one op becomes.
enum Rewrite {
    AllReduce { op: i64 },
    P2P { source: i64, dest: i64 },
    Rank,
    NumRanks(i64),
}

/// The upstream `mpi` op codes (`MPI_OpClassEnum`).
const fn mpi_op(reduction: Reduction) -> i64 {
    match reduction {
        Reduction::Max => 1,
        Reduction::Min => 2,
        Reduction::Sum => 3,
        Reduction::Prod => 4,
    }
}

const COVERED: &str =
    "lower-dist-to-mpi covers synchronous all-reduce and p2p and the rank queries (LLVM 22's mpi dialect); use lower-dist-to-runtime";

fn run(module: OperationRef, pass: ExternalPass) {
    let ops = collect_ops(module);
    let mesh_sizes: HashMap<String, i64> = ops
        .iter()
        .filter(|op| OpKind::of(**op) == Some(OpKind::DistMesh))
        .filter_map(|op| Some((str_attr(*op, "sym_name")?.to_string(), i64_array_attr(*op, "shape")?.iter().product())))
        .collect();
    let mut rewrites = Vec::new();
    let mut failures = Vec::new();
    for &op in &ops {
        let Some(kind) = OpKind::of(op).filter(|k| k.dialect() == "dist") else { continue };
        let planned = match kind {
            OpKind::DistHeader | OpKind::DistMesh => continue,
            OpKind::DistRank => Ok(Rewrite::Rank),
            OpKind::DistNumRanks => symbol_attr(op, "mesh")
                .and_then(|mesh| mesh_sizes.get(mesh))
                .map(|&size| Rewrite::NumRanks(size))
                .ok_or_else(|| "names no mesh of this module".to_string()),
            OpKind::DistAllReduce => plan_all_reduce(op, &mesh_sizes),
            OpKind::DistP2P => check_data(op).and_then(|()| {
                Ok(Rewrite::P2P {
                    source: int_attr(op, "source").ok_or("has no source")?,
                    dest: int_attr(op, "dest").ok_or("has no dest")?,
                })
            }),
            _ => Err(format!("is not covered: {COVERED}")),
        };
        match planned {
            Ok(rewrite) => rewrites.push((op, rewrite)),
            Err(message) => failures.push((op, message)),
        }
    }
    if !failures.is_empty() {
        for (op, message) in failures {
            emit_error(op.location(), &format!("'{}' op {message}", name_of(op)));
        }
        pass.signal_failure();
        return;
    }
    for (op, rewrite) in &rewrites {
        apply(*op, rewrite);
    }
    if !rewrites.is_empty() && module.attribute("dlti.map").is_err() {
        // The upstream lowering asks DLTI which MPI the handles are for.
        let name = "dlti.map";
        let value = known_attribute(module, r#"#dlti.map<"MPI:Implementation" = "MPICH">"#);
        // SAFETY: the module and the attribute are live in one context.
        unsafe {
            mlir_sys::mlirOperationSetAttributeByName(
                module.to_raw(),
                mlir_sys::MlirStringRef { data: name.as_ptr().cast(), length: name.len() },
                value.to_raw(),
            )
        };
    }
    drop_empty_program(module);
}

/// Element type and shape the upstream lowering handles.
fn check_data(op: OperationRef) -> Result<(), String> {
    let input = op.operand(0).map_err(|e| e.to_string())?;
    let ty = input.r#type();
    let element = tensor_element(ty).map(type_string).ok_or_else(|| format!("communicates {}, not a ranked tensor", type_string(ty)))?;
    if !matches!(element.as_str(), "f32" | "f64" | "i8" | "i16" | "i32" | "i64") {
        return Err(format!("communicates {element}, which the mpi dialect's lowering does not support (f32, f64, i8 .. i64); {COVERED}"));
    }
    let shape = tensor_shape(ty).unwrap_or_default();
    if tensor_shape(ty).is_none_or(|s| s.iter().any(Option::is_none)) || crate::ir::read::tensor_has_encoding(ty) {
        return Err(format!("communicates {}; lower-dist-to-mpi needs a static shape without encoding", type_string(ty)));
    }
    // Its 1-D view must be a memref MPI can count.
    if shape.iter().flatten().try_fold(1i64, |n, &d| n.checked_mul(d)).is_none_or(|n| n > i64::from(i32::MAX)) {
        return Err(format!("communicates {}, more elements than one MPI message counts (2^31 - 1); split the transfer", type_string(ty)));
    }
    Ok(())
}

fn plan_all_reduce(op: OperationRef, mesh_sizes: &HashMap<String, i64>) -> Result<Rewrite, String> {
    check_data(op)?;
    let mesh = symbol_attr(op, "mesh").ok_or("has no mesh")?;
    let size = *mesh_sizes.get(mesh).ok_or_else(|| format!("names mesh @{mesh}, which is not in this module"))?;
    let participants =
        i64_array_attr(op, "participants").ok_or("names its group by mesh axes; lower-dist-to-mpi needs 'over [0, 1, ...]'")?;
    if !participants.iter().copied().eq(0..size) || op.attribute("slice").is_ok() {
        return Err(format!(
            "runs over {participants:?}; lower-dist-to-mpi needs the whole mesh in rank order (0 .. {}) on MPI_COMM_WORLD",
            size - 1
        ));
    }
    let reduction = enum_attr::<Reduction>(op, "reduction").ok_or("has no valid reduction")?;
    Ok(Rewrite::AllReduce { op: mpi_op(reduction) })
}

/// `buffer` (of tensor type `ty`'s memref) as a 1-D memref.
fn flat<'c, 'a>(at: &Emitter<'c, 'a>, buffer: Value<'c, 'a>, ty: melior::ir::Type<'c>) -> Value<'c, 'a> {
    let shape: Vec<i64> = tensor_shape(ty).unwrap_or_default().into_iter().map(|d| d.unwrap_or(0)).collect();
    if shape.len() == 1 {
        return buffer;
    }
    let element = tensor_element(ty).map(type_string).unwrap_or_default();
    let flat_type = format!("memref<{}x{element}>", shape.iter().product::<i64>());
    if shape.is_empty() {
        return Emitter::value(at.op(
            "memref.expand_shape",
            &[buffer],
            &[&flat_type],
            &[("reassociation", "[]"), ("static_output_shape", "array<i64: 1>")],
        ));
    }
    let group: Vec<String> = (0..shape.len()).map(|d| d.to_string()).collect();
    Emitter::value(at.op("memref.collapse_shape", &[buffer], &[&flat_type], &[("reassociation", &format!("[[{}]]", group.join(", ")))]))
}

fn apply(op: OperationRef, rewrite: &Rewrite) {
    let Some(at) = Emitter::new(op) else { return };
    let Ok(result) = op.result(0) else { return };
    if let Rewrite::NumRanks(size) = rewrite {
        replace_all_uses(result.into(), at.constant(*size, "index"));
        erase(op);
        return;
    }
    let world = Emitter::value(at.op("mpi.comm_world", &[], &["!mpi.comm"], &[]));
    let replacement: Value = match rewrite {
        Rewrite::Rank | Rewrite::NumRanks(_) => {
            let value = Emitter::value(at.op("mpi.comm_rank", &[world], &["i32"], &[]));
            Emitter::value(at.op("arith.index_cast", &[value], &["index"], &[]))
        }
        Rewrite::AllReduce { .. } | Rewrite::P2P { .. } => {
            let Ok(input) = op.operand(0) else { return };
            let ty = type_string(input.r#type());
            let input_buffer = Emitter::value(at.op("bufferization.to_buffer", &[input], &[&memref_of(&ty)], &[]));
            let empty = Emitter::value(at.op("tensor.empty", &[], &[&ty], &[]));
            let output_buffer = Emitter::value(at.op("bufferization.to_buffer", &[empty], &[&memref_of(&ty)], &[]));
            // The upstream lowering counts only the first dimension's
            // elements: the mpi ops get 1-D views of the buffers.
            let (send, receive) = (flat(&at, input_buffer, input.r#type()), flat(&at, output_buffer, input.r#type()));
            match rewrite {
                Rewrite::AllReduce { op: code } => {
                    at.op("mpi.allreduce", &[send, receive, world], &[], &[("op", &format!("{code} : i32"))]);
                }
                Rewrite::P2P { source, dest } => {
                    let rank = Emitter::value(at.op("mpi.comm_rank", &[world], &["i32"], &[]));
                    let tag = at.constant(0, "i32");
                    let (source, dest) = (at.constant(*source, "i32"), at.constant(*dest, "i32"));
                    let is_source = Emitter::value(at.op("arith.cmpi", &[rank, source], &["i1"], &[("predicate", "0 : i64")]));
                    let on_source = at.if_then(is_source);
                    on_source.op("mpi.send", &[send, tag, dest, world], &[], &[]);
                    let is_dest = Emitter::value(at.op("arith.cmpi", &[rank, dest], &["i1"], &[("predicate", "0 : i64")]));
                    let on_dest = at.if_then(is_dest);
                    on_dest.op("mpi.recv", &[receive, tag, source, world], &[], &[]);
                }
                _ => {}
            }
            Emitter::value(at.op("bufferization.to_tensor", &[output_buffer], &[&ty], &[("restrict", "unit"), ("writable", "unit")]))
        }
    };
    replace_all_uses(result.into(), replacement);
    erase(op);
}
