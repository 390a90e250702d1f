//! What a rank deposits for an exchange: the operation it names, its
//! contribution (input, shapes, placement) or why its start call failed.
//! Read by the collectives, the redistribution copies and both backends.

use super::dtype::{ElementType, ReduceOp};
use super::memref::StridedView;
pub(crate) use super::op_identity::OpIdentity;

/// The operation and its scalar parameters, compared across participants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpKind {
    AllReduce { op: ReduceOp },
    ReduceScatter { op: ReduceOp, axis: usize },
    AllGather { axis: usize },
    AllToAll { axis: usize },
    Broadcast { root: usize },
    SendRecv { source: usize, dest: usize },
    CopyReshape,
    CopyPermute { axes: Vec<usize> },
}

impl std::fmt::Display for OpKind {
    /// As an error shows it: `all_reduce (sum)`, `p2p (from 0 to 1)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AllReduce { op } => write!(f, "all_reduce ({op})"),
            Self::ReduceScatter { op, axis } => write!(f, "reduce_scatter ({op} along axis {axis})"),
            Self::AllGather { axis } => write!(f, "all_gather (along axis {axis})"),
            Self::AllToAll { axis } => write!(f, "all_to_all (along axis {axis})"),
            Self::Broadcast { root } => write!(f, "broadcast (from root {root})"),
            Self::SendRecv { source, dest } => write!(f, "p2p (from {source} to {dest})"),
            Self::CopyReshape => f.write_str("copy_reshape"),
            Self::CopyPermute { axes } => {
                let axes: Vec<String> = axes.iter().map(ToString::to_string).collect();
                write!(f, "copy_permute (axes [{}])", axes.join(", "))
            }
        }
    }
}

/// Global placement of a rank's block for the redistribution copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlockLayout {
    pub g_shape: Vec<i64>,
    pub l_offsets: Vec<i64>,
    /// New global shape (`copy_reshape` only; derived for `copy_permute`).
    pub ng_shape: Vec<i64>,
    pub nl_offsets: Vec<i64>,
}

/// One rank's contribution to an exchange.
#[derive(Debug)]
pub(crate) struct Contribution {
    pub rank: usize,
    pub kind: OpKind,
    pub dtype: ElementType,
    /// Participants in call order (world ranks).
    pub participants: Vec<usize>,
    /// Shape of `data` (`None` when this rank's input is not used).
    pub in_shape: Option<Vec<i64>>,
    /// Packed row-major input (empty when `source` is set).
    pub data: Vec<u8>,
    /// The caller's input itself, packed row-major, when it is read in place
    /// at wait instead of copied at start (the in-process all-reduce): the
    /// caller must neither modify nor free it before its wait returns.
    pub source: Option<StridedView>,
    /// Shape of this rank's output (`None` when it receives nothing).
    pub out_shape: Option<Vec<i64>>,
    pub layout: Option<BlockLayout>,
    /// This rank's output, where the in-process all-reduce lets every
    /// participant write its reduced chunk (`None`: not shared).
    pub target: Option<StridedView>,
    /// The op the rank announced for this call (`None`: called directly,
    /// not from lowered code).
    pub op: Option<OpIdentity>,
}

impl Contribution {
    /// Start of the packed input: the caller's memory or the copy.
    pub(crate) fn input_ptr(&self) -> *const u8 {
        match self.source.as_ref().and_then(StridedView::contiguous_base) {
            Some(base) => base,
            None => self.data.as_ptr(),
        }
    }

    /// Bytes of the packed input.
    pub(crate) fn input_len(&self) -> usize {
        self.source.as_ref().map_or(self.data.len(), StridedView::packed_len)
    }

    /// The packed input.
    ///
    /// # Safety
    /// When the input is read in place, the caller's memory is valid and
    /// unmodified for the returned lifetime (the contract of `source`).
    pub(crate) unsafe fn input(&self) -> &[u8] {
        // SAFETY: `input_ptr` addresses `input_len` packed bytes, valid per
        // the contract above or owned by `data`.
        unsafe { std::slice::from_raw_parts(self.input_ptr(), self.input_len()) }
    }
}

impl Drop for Contribution {
    /// The data buffer goes back for reuse ([`super::pool`]).
    fn drop(&mut self) {
        super::pool::give(std::mem::take(&mut self.data));
    }
}

/// What a rank deposits: its contribution, or why its start call failed.
pub(crate) type Deposit = Result<Contribution, StartFailure>;

/// A start call that failed after the exchange was identified.
#[derive(Debug)]
pub(crate) struct StartFailure {
    pub rank: usize,
    pub message: String,
}
