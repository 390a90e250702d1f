//! The C ABI of Blueprint's distributed runtime, shared by the lowering
//! that calls it and the runtimes that implement it: the element types, the
//! reduction codes and one table of entry points with their symbol names and
//! MLIR signatures. `lower-dist-to-runtime` declares each one it uses
//! exactly once; the runtime exports every one (a test checks both).

use std::fmt;

/// Element types the runtime has typed entry points for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    F64,
    F32,
    F16,
    BF16,
    I64,
    I32,
    I16,
    I8,
    I1,
    Index,
}

impl ElementType {
    /// Storage size of one element in bytes (`i1` is one byte 0/1).
    #[must_use]
    pub const fn size(self) -> usize {
        match self {
            Self::F64 | Self::I64 | Self::Index => 8,
            Self::F32 | Self::I32 => 4,
            Self::F16 | Self::BF16 | Self::I16 => 2,
            Self::I8 | Self::I1 => 1,
        }
    }

    /// The entry-point suffix (`f64`, ..., `index`), the MLIR spelling.
    #[must_use]
    pub fn suffix(self) -> &'static str {
        self.mlir()
    }

    /// Brings freshly read data into canonical form (`i1`: bytes 0/1).
    pub fn canonicalize(self, data: &mut [u8]) {
        if self == Self::I1 {
            for b in data.iter_mut() {
                *b = u8::from(*b != 0);
            }
        }
    }

    pub const ALL: [ElementType; 10] =
        [Self::F64, Self::F32, Self::F16, Self::BF16, Self::I64, Self::I32, Self::I16, Self::I8, Self::I1, Self::Index];

    /// The element type as MLIR spells it (also the symbol suffix).
    #[must_use]
    pub fn mlir(self) -> &'static str {
        match self {
            Self::F64 => "f64",
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::I64 => "i64",
            Self::I32 => "i32",
            Self::I16 => "i16",
            Self::I8 => "i8",
            Self::I1 => "i1",
            Self::Index => "index",
        }
    }

    /// The element type of an MLIR type spelling, if the runtime has it.
    #[must_use]
    pub fn from_mlir(spelling: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.mlir() == spelling)
    }
}

/// One runtime entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuntimeFunction {
    AllReduce(ElementType),
    ReduceScatter(ElementType),
    AllGather(ElementType),
    AllToAll(ElementType),
    Broadcast(ElementType),
    SendRecv(ElementType),
    CopyReshape(ElementType),
    CopyPermute(ElementType),
    Wait,
    NProcs,
    PRank,
    /// `_bprt_mesh_group(team, shape, axes, out)`: the calling rank's group
    /// along mesh axes (a collective named by axes).
    MeshGroup,
    /// `_bprt_mesh_peer(team, shape, axis, coordinate)`: the rank that
    /// shares every other coordinate with the caller, at `coordinate` on
    /// `axis` (a transfer along a mesh axis).
    MeshPeer,
    /// `_bprt_op(memref<*xi8>)`: names the op whose calls follow.
    Op,
    /// `_bprt_assert(i64, memref<*xi8>)`: `cf.assert`, the condition and
    /// the message with its location.
    Assert,
    /// `_bprt_matmul_<e>(A, B, C)`: `C += A B` (rank 2, or batched rank 3).
    Matmul(ElementType),
}

impl RuntimeFunction {
    /// The C symbol, e.g. `_bprt_copy_reshape_i64`.
    #[must_use]
    pub fn symbol(self) -> String {
        let typed = |base: &str, e: ElementType| format!("_bprt_{base}_{}", e.mlir());
        match self {
            Self::AllReduce(e) => typed("all_reduce", e),
            Self::ReduceScatter(e) => typed("reduce_scatter", e),
            Self::AllGather(e) => typed("all_gather", e),
            Self::AllToAll(e) => typed("all_to_all", e),
            Self::Broadcast(e) => typed("broadcast", e),
            Self::SendRecv(e) => typed("send_recv", e),
            Self::CopyReshape(e) => typed("copy_reshape", e),
            Self::CopyPermute(e) => typed("copy_permute", e),
            Self::Wait => "_bprt_wait".into(),
            Self::NProcs => "_bprt_nprocs".into(),
            Self::PRank => "_bprt_prank".into(),
            Self::MeshGroup => "_bprt_mesh_group".into(),
            Self::MeshPeer => "_bprt_mesh_peer".into(),
            Self::Op => "_bprt_op".into(),
            Self::Assert => "_bprt_assert".into(),
            Self::Matmul(e) => typed("matmul", e),
        }
    }

    /// Argument types as MLIR spells them; every entry point returns `i64`
    /// (a handle, a count or a status; negative means an error).
    #[must_use]
    pub fn arguments(self) -> Vec<String> {
        let data = |e: ElementType| format!("memref<*x{}>", e.mlir());
        let ranks = "memref<*xi64>".to_string();
        let index_list = "memref<*xindex>".to_string();
        let team = "i64".to_string();
        match self {
            Self::AllReduce(e) => vec![team, ranks, data(e), data(e), "i32".into()],
            Self::ReduceScatter(e) => vec![team, ranks, data(e), data(e), "i32".into(), "i64".into()],
            Self::AllGather(e) | Self::AllToAll(e) => vec![team, ranks, data(e), data(e), "i64".into()],
            Self::Broadcast(e) => vec![team, ranks, data(e), data(e), "i64".into()],
            Self::SendRecv(e) => vec![team, data(e), data(e), "i64".into(), "i64".into()],
            Self::CopyReshape(e) => {
                vec![team, data(e), index_list.clone(), index_list.clone(), index_list.clone(), index_list.clone(), index_list, data(e)]
            }
            Self::CopyPermute(e) => {
                vec![team, data(e), index_list.clone(), index_list.clone(), index_list.clone(), index_list, ranks, data(e)]
            }
            Self::Wait | Self::NProcs | Self::PRank => vec!["i64".into()],
            Self::MeshGroup => vec![team, ranks.clone(), ranks.clone(), ranks],
            Self::MeshPeer => vec![team, ranks, "i64".into(), "i64".into()],
            Self::Op => vec!["memref<*xi8>".into()],
            Self::Assert => vec!["i64".into(), "memref<*xi8>".into()],
            Self::Matmul(e) => vec![data(e), data(e), data(e)],
        }
    }

    /// The function type, e.g. `(i64) -> i64`.
    #[must_use]
    pub fn function_type(self) -> String {
        format!("({}) -> i64", self.arguments().join(", "))
    }
}

impl fmt::Display for RuntimeFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.symbol())
    }
}

/// Reduction operator, as passed in the `op: i32` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum = 0,
    Max = 1,
    Min = 2,
    Prod = 3,
}

impl ReduceOp {
    /// The C value.
    #[must_use]
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// Decodes the C value (0 = sum, 1 = max, 2 = min, 3 = prod).
    #[must_use]
    pub const fn from_code(op: i32) -> Option<Self> {
        match op {
            0 => Some(Self::Sum),
            1 => Some(Self::Max),
            2 => Some(Self::Min),
            3 => Some(Self::Prod),
            _ => None,
        }
    }
}

impl fmt::Display for ReduceOp {
    /// The spelling of `dist`'s `reduction = ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sum => "sum",
            Self::Max => "max",
            Self::Min => "min",
            Self::Prod => "prod",
        })
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_carry_the_element_type() {
        assert_eq!(RuntimeFunction::CopyReshape(ElementType::I64).symbol(), "_bprt_copy_reshape_i64");
        assert_eq!(RuntimeFunction::AllReduce(ElementType::BF16).symbol(), "_bprt_all_reduce_bf16");
        assert_eq!(RuntimeFunction::Wait.function_type(), "(i64) -> i64");
        for e in ElementType::ALL {
            assert_eq!(ElementType::from_mlir(e.mlir()), Some(e));
        }
        assert_eq!(ElementType::from_mlir("f8E4M3FN"), None);
    }

    /// The lowering's table and the runtime's exports are two sides of one
    /// ABI: every entry point the lowering can call exists in the runtime.
    #[test]
    fn every_lowered_entry_point_is_exported_by_the_runtime() {
        let exported: Vec<&str> = crate::runtime::symbols().into_iter().map(|(name, _)| name).collect();
        let mut functions = vec![
            RuntimeFunction::Wait,
            RuntimeFunction::NProcs,
            RuntimeFunction::PRank,
            RuntimeFunction::MeshGroup,
            RuntimeFunction::MeshPeer,
            RuntimeFunction::Op,
            RuntimeFunction::Assert,
            RuntimeFunction::Matmul(ElementType::F32),
        ];
        for e in ElementType::ALL {
            functions.extend([
                RuntimeFunction::AllReduce(e),
                RuntimeFunction::ReduceScatter(e),
                RuntimeFunction::AllGather(e),
                RuntimeFunction::AllToAll(e),
                RuntimeFunction::Broadcast(e),
                RuntimeFunction::SendRecv(e),
                RuntimeFunction::CopyReshape(e),
                RuntimeFunction::CopyPermute(e),
            ]);
        }
        for function in functions {
            assert!(exported.contains(&function.symbol().as_str()), "{function} is not exported by the runtime");
        }
    }
}
