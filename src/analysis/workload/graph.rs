//! A decoder block as ModelIR states it, read into plain data: its ops in
//! program order, each with its kind, the attributes its rules read and
//! its operand and result values, and every value's (logical, unsharded)
//! shape. `dialect::model::graph` reads it off the IR; the derivation of
//! the block's distributed work ([`super::graph_derivation`]) walks it.

use super::spec::OptimizerKind;

/// The extent of a dynamic dimension (`?` in the type), read only where
/// the caller allows it: the token dimension of a KV cache and of what
/// attention computes from it, which the served derivation resolves to
/// the pass's context.
pub const DYNAMIC: u64 = u64::MAX;

/// A value of the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphValue {
    /// The logical shape (static, or [`DYNAMIC`] where the reader allowed).
    pub shape: Vec<u64>,
    /// Bytes per element.
    pub elem_bytes: u64,
    /// The op defining it (index into [`BlockGraph::ops`]).
    pub producer: usize,
}

impl GraphValue {
    /// Elements of the logical tensor.
    #[must_use]
    pub fn elems(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// The state role a `model.value` introduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueRole {
    Parameter,
    Activation,
    ActivationGradient,
    OptimizerState,
    /// The input of a served pass (the prompt, then each generated token).
    Input,
    KvCache,
    Other,
}

/// What an op is, with the attributes its rules read.
#[derive(Debug, Clone, PartialEq)]
pub enum GraphOpKind {
    /// `model.value`: introduces a value with a role.
    Value(ValueRole),
    /// `model.output`.
    Output,
    Fork,
    LayerNorm,
    RmsNorm,
    Matmul,
    AttentionScores {
        heads: u64,
        kv_heads: u64,
        head_dim: u64,
    },
    AttentionContext {
        heads: u64,
        kv_heads: u64,
        head_dim: u64,
    },
    Softmax {
        dim: u64,
    },
    Gelu,
    Relu,
    Silu,
    Swiglu,
    Dropout,
    Add,
    /// A bias (the second operand) added to every row.
    BiasAdd,
    /// `model.batch_matmul`: attention in a served block, reading the KV
    /// cache as its second operand.
    BatchMatmul,
    /// `model.kv_append`: operands `[cache?, keys, values]`; `cached` when
    /// it appends to an earlier pass's cache.
    KvAppend {
        cached: bool,
    },
    /// `model.split` along `dim` into equal parts.
    Split {
        dim: u64,
    },
    Rope {
        heads: u64,
    },
    /// `model.activation_gradient` of the forward op `of`.
    ActivationGradient {
        of: String,
    },
    /// `model.weight_gradient` of the forward op `of`.
    WeightGradient {
        of: String,
    },
    OptimizerStep {
        kind: OptimizerKind,
    },
    /// An op no training rule covers (its name).
    Other(String),
}

impl GraphOpKind {
    /// The ModelIR op name of a kind without attributes of its own
    /// (`model.batch_matmul`), for diagnostics.
    #[must_use]
    pub fn op_name(&self) -> String {
        let name = match self {
            Self::Value(_) => "value",
            Self::Output => "output",
            Self::Fork => "fork",
            Self::LayerNorm => "layer_norm",
            Self::RmsNorm => "rms_norm",
            Self::Matmul => "matmul",
            Self::AttentionScores { .. } => "attention_scores",
            Self::AttentionContext { .. } => "attention_context",
            Self::Softmax { .. } => "softmax",
            Self::Gelu => "gelu",
            Self::Relu => "relu",
            Self::Silu => "silu",
            Self::Swiglu => "swiglu",
            Self::Dropout => "dropout",
            Self::Add => "add",
            Self::BiasAdd => "bias_add",
            Self::BatchMatmul => "batch_matmul",
            Self::KvAppend { .. } => "kv_append",
            Self::Split { .. } => "split",
            Self::Rope { .. } => "rope",
            Self::ActivationGradient { .. } => "activation_gradient",
            Self::WeightGradient { .. } => "weight_gradient",
            Self::OptimizerStep { .. } => "optimizer_step",
            Self::Other(name) => return name.clone(),
        };
        format!("model.{name}")
    }

    /// Whether the op is forward computation (not a value, an output, a
    /// gradient or an optimizer step).
    #[must_use]
    pub fn is_forward(&self) -> bool {
        !matches!(
            self,
            Self::Value(_) | Self::Output | Self::ActivationGradient { .. } | Self::WeightGradient { .. } | Self::OptimizerStep { .. }
        )
    }
}

/// One op of the block.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphOp {
    /// The op's ModelIR id.
    pub id: String,
    pub kind: GraphOpKind,
    /// Values read, in operand order (indices into [`BlockGraph::values`]).
    pub operands: Vec<usize>,
    /// Values defined, in result order.
    pub results: Vec<usize>,
}

/// The ops of one block in program order and the values they exchange.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockGraph {
    pub values: Vec<GraphValue>,
    pub ops: Vec<GraphOp>,
}

impl BlockGraph {
    /// Appends an op defining values of the given `(shape, element bytes)`;
    /// returns its result values.
    pub fn push(&mut self, id: &str, kind: GraphOpKind, operands: &[usize], results: &[(Vec<u64>, u64)]) -> Vec<usize> {
        let producer = self.ops.len();
        let first = self.values.len();
        self.values.extend(results.iter().map(|(shape, elem_bytes)| GraphValue {
            shape: shape.clone(),
            elem_bytes: *elem_bytes,
            producer,
        }));
        let results: Vec<usize> = (first..self.values.len()).collect();
        self.ops.push(GraphOp { id: id.to_string(), kind, operands: operands.to_vec(), results: results.clone() });
        results
    }

    /// The ops reading each value, `(op, operand position)`, in program order.
    #[must_use]
    pub fn consumers(&self) -> Vec<Vec<(usize, usize)>> {
        let mut users = vec![Vec::new(); self.values.len()];
        for (index, op) in self.ops.iter().enumerate() {
            for (position, &value) in op.operands.iter().enumerate() {
                if let Some(list) = users.get_mut(value) {
                    list.push((index, position));
                }
            }
        }
        users
    }
}
