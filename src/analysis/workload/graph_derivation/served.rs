//! The distributed work of a served block derived from its decomposed
//! ModelIR (read into a [`BlockGraph`]): what `distribute-transformer-inference`
//! emits for the prefill and for a decode step. Every count comes from the
//! served-pass rules ([`crate::analysis::workload::serving`], the same rules
//! the inference algebra applies to a spec) on the sizes the IR's tensor
//! types and the sharding give, so an edit of the IR (another activation, a
//! dropout removed, a wider MLP, a norm or a bias added) changes the
//! derived work; a test holds the two derivations equal on the spec's own
//! block.
//!
//! The block's passes are found from its dataflow: its first
//! `model.value ... input` is the prompt (the prefill reads it), its second
//! the generated token (the decode step); an op belongs to the latest pass
//! whose input it reads, and ops reading only parameters (a `model.split`
//! of the fused gate/up weight) serve every pass. A dynamic dimension (the
//! tokens of the KV cache and of the scores computed from it) is the
//! pass's context: the prompt for the prefill, the decode step's context
//! for the decode.
//!
//! Sharding is Megatron-LM's tensor parallelism over the `tp` ranks,
//! found from the dataflow as training's ([`super`]): a linear reading a
//! whole activation is column-parallel (its output split along the last
//! dimension), one reading a split activation row-parallel (its output a
//! partial sum, all-reduced before the first op that needs the sum: the TP
//! exit); attention reads queries split by heads and a KV cache split by
//! KV heads, or, with fewer KV heads than ranks, one KV head per rank
//! replicated over `tp / kv_heads` ranks (the linears producing keys and
//! values then compute that head whole). Norms need whole rows; the
//! forward pass of a TP entry is the identity, so it has no task.

use std::collections::{HashMap, HashSet};

use super::super::graph::{BlockGraph, GraphOpKind, ValueRole, DYNAMIC};
use super::super::inference::invocation_phase;
use super::super::inference::InferencePass;
use super::super::inference_spec::{InferencePhase, InferenceSpec};
use super::super::rules::Activation;
use super::super::serving::{AttentionDims, Output, ServedBuilder};
use super::super::spec::MAX_WORK_SCALE;
use super::{at, scope, unique, GraphError, Layout, Split, WHOLE};

/// What a served task waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServedDep {
    /// An earlier invocation of the pass (by position).
    Invocation(usize),
    /// The pass's input (the prompt, or the generated token).
    Input,
    /// The KV cache an earlier pass filled.
    Cache,
}

/// How a parameter is split over the tensor-parallel group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParameterSplit {
    Whole,
    /// Columns (the last dimension) over every TP rank.
    Columns,
    /// Rows (the first dimension) over every TP rank.
    Rows,
    /// Columns by KV head: split over the KV heads, each replicated on
    /// `tp / kv_heads` ranks when there are fewer heads than ranks.
    KvColumns,
}

/// A parameter of the block and its split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedParameter {
    /// Its ModelIR id.
    pub id: String,
    /// Its logical (whole) shape.
    pub shape: Vec<u64>,
    pub elem_bytes: u64,
    pub split: ParameterSplit,
}

/// One pass of a served block derived from its ModelIR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedDerivation {
    /// The invocations, memory and KV traffic, as the algebra states them.
    pub pass: InferencePass,
    /// For each invocation (by name), the ModelIR op it does the work of
    /// (an exit: the first op reading its sum).
    pub lineage: HashMap<String, String>,
    /// For each invocation (by position), what it waits for: the block's
    /// dataflow through forks, splits and the KV cache.
    pub deps: Vec<Vec<ServedDep>>,
    /// For each invocation (by position), its result's shape on one rank
    /// (`None` for a collective: its input's).
    pub outputs: Vec<Option<Vec<u64>>>,
    /// The pass's output: the id of its `model.output` and what produces
    /// the value it returns.
    pub result: Option<(String, Vec<ServedDep>)>,
    /// The block's parameters (every pass reads the same ones).
    pub parameters: Vec<ServedParameter>,
    /// The KV cache after the pass: its logical shape (the context
    /// resolved), element bytes, and its bytes on one rank.
    pub cache: Option<(Vec<u64>, u64, u64)>,
    /// The invocations whose results the pass appends to the cache.
    pub cache_writers: Vec<usize>,
    /// The pass's input: its ModelIR id and logical shape.
    pub input: (String, Vec<u64>),
}

/// The inputs of a served block's passes (`model.value` of role input),
/// in program order: the prompt's, then the generated token's.
#[must_use]
pub fn served_inputs(graph: &BlockGraph) -> Vec<usize> {
    (0..graph.ops.len()).filter(|&op| graph.ops[op].kind == GraphOpKind::Value(ValueRole::Input)).collect()
}

/// Derives pass `pass` of the served block `graph` under `spec`'s tensor
/// parallelism, attending over `context` tokens (the prompt for the
/// prefill).
///
/// # Errors
/// A [`GraphError`] naming the op that cannot be sharded or counted: a
/// dimension `tp` does not divide, an op without a served rule, a pass
/// without its input.
pub fn derive_served_pass(
    graph: &BlockGraph,
    spec: &InferenceSpec,
    pass: InferencePhase,
    context: u64,
) -> Result<ServedDerivation, GraphError> {
    spec.validate().map_err(|e| GraphError { op: None, message: e.to_string() })?;
    Served::new(graph, spec, pass, context)?.run()
}

/// An all-reduce of a partial sum before the op first reading it.
struct Exit {
    value: usize,
    first_consumer: usize,
    name: String,
}

struct Served<'g> {
    g: &'g BlockGraph,
    tp: u64,
    elem: u64,
    kv_elem: u64,
    pass: InferencePhase,
    context: u64,
    /// The pass of each op: `Some(0)` prefill, `Some(1)` decode, `None`
    /// parameters only.
    op_pass: Vec<Option<usize>>,
    /// This pass's index.
    index: usize,
    consumers: Vec<Vec<(usize, usize)>>,
    layout: Vec<Option<Layout>>,
    exits: Vec<Exit>,
    /// Heads, KV heads and head size of the attention reading a KV cache,
    /// by the `kv_append` op.
    attention: HashMap<usize, (u64, u64, u64)>,
    /// Parameter splits, by the parameter's `model.value` op.
    splits: HashMap<usize, ParameterSplit>,
    names: HashSet<String>,
}

impl<'g> Served<'g> {
    fn new(g: &'g BlockGraph, spec: &InferenceSpec, pass: InferencePhase, context: u64) -> Result<Self, GraphError> {
        // Program order, so the walks below end.
        super::shapes::check_program_order(g)?;
        let inputs = served_inputs(g);
        let index = usize::from(pass == InferencePhase::Decode);
        if inputs.len() <= index {
            let which = if index == 0 { "a prompt" } else { "a generated token" };
            return Err(GraphError {
                op: None,
                message: format!(
                    "the served block has no {} pass: it needs {which} input (a 'model.value' of role input)",
                    pass_name(pass)
                ),
            });
        }
        if let Some(&third) = inputs.get(2) {
            return Err(at(&g.ops[third].id, "is a third input: a served block has a prompt and a generated token"));
        }
        let elem = spec.workload.datatype.bytes();
        for &input in &inputs {
            let got = g.ops[input].results.first().map_or(0, |&v| g.values[v].elem_bytes);
            if got != elem {
                return Err(at(
                    &g.ops[input].id,
                    format!("has {got}-byte elements, but the strategy binding's datatype '{}' has {elem}", spec.workload.datatype.name()),
                ));
            }
        }
        // Each op belongs to the latest pass whose input it reads.
        let mut value_pass: Vec<Option<usize>> = vec![None; g.values.len()];
        let mut op_pass = vec![None; g.ops.len()];
        for (op, node) in g.ops.iter().enumerate() {
            let own = inputs.iter().position(|&i| i == op);
            let read = node.operands.iter().filter_map(|&v| value_pass[v]).max();
            op_pass[op] = own.or(read);
            for &r in &node.results {
                value_pass[r] = op_pass[op];
            }
        }
        Ok(Self {
            g,
            tp: spec.mapping.tp,
            elem: spec.workload.datatype.bytes(),
            kv_elem: spec.workload.kv_datatype().bytes(),
            pass,
            context,
            op_pass,
            index,
            consumers: g.consumers(),
            layout: vec![None; g.values.len()],
            exits: Vec::new(),
            attention: HashMap::new(),
            splits: HashMap::new(),
            names: HashSet::new(),
        })
    }

    fn id(&self, op: usize) -> &'g str {
        &self.g.ops[op].id
    }

    /// Whether the op is shaped and counted by this pass (parameter-only
    /// ops are shaped by every pass, counted by none).
    fn in_pass(&self, op: usize) -> bool {
        self.op_pass[op].is_none_or(|p| p == self.index)
    }

    /// The invocation source of an op: its id without the pass's prefix.
    fn source(&self, op: usize) -> &'g str {
        let id = self.id(op);
        id.strip_prefix(pass_name(self.pass)).and_then(|rest| rest.strip_prefix('.')).unwrap_or(id)
    }

    /// The logical shape of a value in this pass (its context resolved).
    fn shape(&self, value: usize) -> Vec<u64> {
        self.g.values[value].shape.iter().map(|&d| if d == DYNAMIC { self.context } else { d }).collect()
    }

    /// The shape of `value` on one rank.
    fn local_shape(&self, value: usize) -> Vec<u64> {
        let mut shape = self.shape(value);
        let last = shape.len().saturating_sub(1);
        let (dim, parts) = match self.layout[value].map_or(Split::Whole, |l| l.split) {
            Split::Whole => return shape,
            Split::Last => (last, self.tp),
            Split::Heads | Split::Seq => (1, self.tp),
            Split::KvGroups(groups) => (last, groups),
        };
        if let Some(d) = shape.get_mut(dim) {
            *d /= parts.max(1);
        }
        shape
    }

    /// Elements of `value` on one rank (bounded by [`Self::check_scale`]).
    fn local(&self, value: usize) -> u64 {
        elems(&self.local_shape(value))
    }

    fn run(mut self) -> Result<ServedDerivation, GraphError> {
        self.check_structure()?;
        self.find_attention()?;
        self.check_scale()?;
        for op in 0..self.g.ops.len() {
            if self.in_pass(op) {
                self.shard(op)?;
            }
        }
        self.emit()
    }

    /// Heads, KV heads and head size of each attention over a KV cache,
    /// read off the scores' types: `[b, s, heads x d]` queries and a
    /// `[2, b, t, kv_heads x d]` cache give `[b, heads, s, t]` scores.
    fn find_attention(&mut self) -> Result<(), GraphError> {
        let g = self.g;
        let mut contexts = Vec::new();
        for (op, node) in g.ops.iter().enumerate() {
            if node.kind != GraphOpKind::BatchMatmul || !self.in_pass(op) {
                continue;
            }
            let (Some(&q), Some(&cache), Some(&out)) = (node.operands.first(), node.operands.get(1), node.results.first()) else {
                return Err(at(&node.id, "needs two operands and a result"));
            };
            let producer = g.values[cache].producer;
            if !matches!(g.ops[producer].kind, GraphOpKind::KvAppend { .. }) {
                return Err(at(
                    &node.id,
                    "multiplies by something other than a KV cache: a served block's batch matmuls are its attention",
                ));
            }
            let (qs, cs, os) = (self.shape(q), self.shape(cache), self.shape(out));
            let mismatch = |what: &str| Err(at(&node.id, format!("reads {qs:?} and a cache {cs:?} into {os:?}: {what} differ")));
            match (qs.len(), cs.len(), os.len()) {
                (3, 4, 4) => {
                    if qs[0] != cs[1] || os[0] != qs[0] {
                        return mismatch("the batches");
                    }
                    if os[2] != qs[1] || os[3] != cs[2] {
                        return mismatch("the query or cached tokens");
                    }
                }
                (4, 4, 3) => {
                    if qs[0] != cs[1] || os[0] != qs[0] {
                        return mismatch("the batches");
                    }
                    if os[1] != qs[2] || qs[3] != cs[2] {
                        return mismatch("the query or cached tokens");
                    }
                    contexts.push((op, producer, qs[1], os[2]));
                    continue; // sized by the scores (checked below)
                }
                _ => {
                    return Err(at(
                        &node.id,
                        format!("reads {qs:?} and a cache {cs:?} into {os:?}: attention reads [b, s, heads x d] queries into [b, heads, s, t] scores, or those into [b, s, heads x d], over a [2, b, t, kv_heads x d] cache"),
                    ))
                }
            }
            let heads = os[1];
            let head_dim = qs[2].checked_div(heads).unwrap_or(0);
            let kv_heads = cs[3].checked_div(head_dim).unwrap_or(0);
            if heads == 0 || head_dim * heads != qs[2] || kv_heads * head_dim != cs[3] || kv_heads == 0 || heads % kv_heads != 0 {
                return Err(at(
                    &node.id,
                    format!("cannot read heads from its types: queries {qs:?}, cache {cs:?}, scores {os:?} (want [b, s, heads x d], [2, b, t, kv_heads x d], [b, heads, s, t])"),
                ));
            }
            self.attention.insert(producer, (heads, kv_heads, head_dim));
        }
        // A context product reads probabilities over the scores' heads and
        // returns them concatenated.
        for (op, append, heads, width) in contexts {
            match self.attention.get(&append) {
                Some(&(h, _, d)) if h == heads && h * d == width => {}
                Some(_) => return Err(at(self.id(op), "reads probabilities or returns heads that differ from its scores'")),
                None => return Err(at(self.id(op), "reads a KV cache no attention scores read")),
            }
        }
        Ok(())
    }

    fn layout_of(&self, op: usize, value: usize) -> Result<Layout, GraphError> {
        self.layout[value].ok_or_else(|| at(self.id(op), "reads a value the pass does not compute before it"))
    }

    /// Operand `position` of `op`, summed: a partial sum gets a TP exit
    /// before `op`.
    fn summed(&mut self, op: usize, position: usize) -> Result<Layout, GraphError> {
        let value = self.g.ops[op].operands[position];
        let layout = self.layout_of(op, value)?;
        if !layout.partial {
            return Ok(layout);
        }
        let producer = self.g.values[value].producer;
        let base = format!("{}.tp_exit", scope(self.source(producer)));
        let name = unique(&mut self.names, &base);
        self.exits.push(Exit { value, first_consumer: op, name });
        self.layout[value] = Some(WHOLE);
        Ok(WHOLE)
    }

    fn set(&mut self, op: usize, layout: Layout) {
        for &r in &self.g.ops[op].results {
            self.layout[r] = Some(layout);
        }
    }

    fn divisible(&self, op: usize, size: u64, what: &str) -> Result<(), GraphError> {
        if !size.is_multiple_of(self.tp) {
            return Err(at(self.id(op), format!("cannot split {what} ({size}) over mapping.tp = {}", self.tp)));
        }
        Ok(())
    }

    /// The `model.value` parameter a weight operand is (through splits).
    fn parameter_of(&self, value: usize) -> Option<usize> {
        let producer = self.g.values[value].producer;
        match &self.g.ops[producer].kind {
            GraphOpKind::Value(ValueRole::Parameter) => Some(producer),
            GraphOpKind::Split { .. } => self.g.ops[producer].operands.first().and_then(|&v| self.parameter_of(v)),
            _ => None,
        }
    }

    fn split_parameter(&mut self, op: usize, value: usize, split: ParameterSplit) -> Result<(), GraphError> {
        let parameter = self.parameter_of(value).ok_or_else(|| at(self.id(op), "reads a weight that is not a parameter"))?;
        match self.splits.insert(parameter, split) {
            Some(before) if before != split && self.tp > 1 => Err(at(
                self.id(op),
                format!("reads parameter '{}' split as {split:?}, but another op reads it split as {before:?}", self.id(parameter)),
            )),
            _ => Ok(()),
        }
    }

    /// The KV heads of the cache a linear's result is appended to
    /// (through forks), if it produces keys or values.
    fn kv_heads_fed(&self, op: usize) -> Option<u64> {
        self.g.ops[op].results.iter().find_map(|&r| {
            self.consumers[r].iter().find_map(|&(user, _)| match &self.g.ops[user].kind {
                GraphOpKind::KvAppend { .. } => self.attention.get(&user).map(|a| a.1),
                GraphOpKind::Fork | GraphOpKind::Rope { .. } | GraphOpKind::BiasAdd => self.kv_heads_fed(user),
                _ => None,
            })
        })
    }

    fn shard(&mut self, op: usize) -> Result<(), GraphError> {
        let g = self.g;
        let node = &g.ops[op];
        match &node.kind {
            GraphOpKind::Value(_) | GraphOpKind::Split { .. } => {
                if node.kind != GraphOpKind::Value(ValueRole::Input) && self.op_pass[op].is_some() {
                    return Err(at(&node.id, "splits an activation: a served block splits only parameters (the fused gate/up weight)"));
                }
                self.set(op, WHOLE);
            }
            GraphOpKind::Output => {
                self.summed(op, 0)?;
            }
            GraphOpKind::Fork | GraphOpKind::Dropout | GraphOpKind::Gelu | GraphOpKind::Relu | GraphOpKind::Silu => {
                let layout = self.summed(op, 0)?;
                self.set(op, layout);
            }
            GraphOpKind::LayerNorm | GraphOpKind::RmsNorm => {
                if self.summed(op, 0)?.split != Split::Whole {
                    return Err(at(&node.id, "normalizes over a dimension split over tp (it needs its rows whole)"));
                }
                self.set(op, WHOLE);
            }
            GraphOpKind::Softmax { dim } => {
                let layout = self.summed(op, 0)?;
                let rank = self.shape(node.operands[0]).len() as u64;
                let split_dim = match layout.split {
                    Split::Whole => None,
                    Split::Heads | Split::Seq => Some(1),
                    Split::Last | Split::KvGroups(_) => Some(rank.saturating_sub(1)),
                };
                if split_dim == Some(*dim) {
                    return Err(at(&node.id, format!("normalizes over dimension {dim}, which is split over tp")));
                }
                self.set(op, layout);
            }
            GraphOpKind::Rope { heads } => {
                let layout = self.summed(op, 0)?;
                if layout.split == Split::Last && heads % self.tp != 0 {
                    return Err(at(&node.id, format!("cannot split its {heads} heads over mapping.tp = {}", self.tp)));
                }
                self.set(op, layout);
            }
            GraphOpKind::BiasAdd => {
                let layout = self.summed(op, 0)?;
                let bias = node.operands[1];
                let width = self.shape(bias).first().copied().unwrap_or(0);
                let split = match layout.split {
                    Split::Whole => ParameterSplit::Whole,
                    Split::Last => {
                        self.divisible(op, width, "the bias")?;
                        ParameterSplit::Columns
                    }
                    Split::KvGroups(_) => ParameterSplit::KvColumns,
                    Split::Heads | Split::Seq => return Err(at(&node.id, "adds a bias to attention scores split by heads")),
                };
                self.split_parameter(op, bias, split)?;
                self.set(op, layout);
            }
            GraphOpKind::Add | GraphOpKind::Swiglu => {
                let first = self.summed(op, 0)?;
                let second = self.summed(op, 1)?;
                if first != second {
                    return Err(at(&node.id, format!("combines operands split differently ({:?} and {:?})", first.split, second.split)));
                }
                self.set(op, first);
            }
            GraphOpKind::Matmul => self.linear(op)?,
            GraphOpKind::KvAppend { cached } => {
                let (heads, kv_heads, _) = *self.attention.get(&op).ok_or_else(|| at(&node.id, "is read by no attention scores"))?;
                let first = usize::from(*cached);
                let keys = self.summed(op, first)?;
                let values = self.summed(op, first + 1)?;
                let want = if self.tp > 1 && !kv_heads.is_multiple_of(self.tp) { Split::KvGroups(kv_heads) } else { Split::Last };
                if keys.split != values.split || (self.tp > 1 && keys.split != want) {
                    return Err(at(
                        &node.id,
                        format!("appends keys split as {:?} and values as {:?}; the cache of {kv_heads} KV heads over mapping.tp = {} needs {want:?}", keys.split, values.split, self.tp),
                    ));
                }
                if heads % self.tp != 0 {
                    return Err(at(&node.id, format!("cannot split heads ({heads}) over mapping.tp = {}", self.tp)));
                }
                if !kv_heads.is_multiple_of(self.tp) && !self.tp.is_multiple_of(kv_heads) {
                    return Err(at(
                        &node.id,
                        format!("cannot split kv_heads ({kv_heads}) over mapping.tp = {} nor replicate them (tp must divide them or be a multiple)", self.tp),
                    ));
                }
                self.set(op, Layout { split: keys.split, partial: false });
            }
            GraphOpKind::BatchMatmul => {
                let lhs = self.summed(op, 0)?;
                // The cache's split was checked where it was appended.
                self.summed(op, 1)?;
                let scores = self.shape(node.operands[0]).len() == 3;
                let want = if scores { Split::Last } else { Split::Heads };
                if self.tp > 1 && lhs.split != want {
                    return Err(at(&node.id, format!("reads operand #0 split as {:?}, but attention needs it split by heads", lhs.split)));
                }
                self.set(op, Layout { split: if scores { Split::Heads } else { Split::Last }, partial: false });
            }
            GraphOpKind::AttentionScores { .. }
            | GraphOpKind::AttentionContext { .. }
            | GraphOpKind::ActivationGradient { .. }
            | GraphOpKind::WeightGradient { .. }
            | GraphOpKind::OptimizerStep { .. }
            | GraphOpKind::Other(_) => {
                return Err(at(&node.id, format!("'{}' has no rule for a served block", node.kind.op_name())));
            }
        }
        Ok(())
    }

    fn linear(&mut self, op: usize) -> Result<(), GraphError> {
        let node = &self.g.ops[op];
        let w = node.operands[1];
        let weight = self.shape(w);
        if weight.len() != 2 {
            return Err(at(&node.id, "multiplies by a weight that is not [in, out]"));
        }
        let layout = match self.summed(op, 0)?.split {
            Split::Whole if self.tp == 1 => {
                self.split_parameter(op, w, ParameterSplit::Whole)?;
                WHOLE
            }
            Split::Whole => match self.kv_heads_fed(op) {
                Some(kv) if !kv.is_multiple_of(self.tp) => {
                    if !weight[1].is_multiple_of(kv) {
                        return Err(at(
                            &node.id,
                            format!("cannot hold one of {kv} KV heads of the weight's columns ({}) per rank", weight[1]),
                        ));
                    }
                    self.split_parameter(op, w, ParameterSplit::KvColumns)?;
                    Layout { split: Split::KvGroups(kv), partial: false }
                }
                kv => {
                    self.divisible(op, weight[1], "the weight's columns")?;
                    self.split_parameter(op, w, if kv.is_some() { ParameterSplit::KvColumns } else { ParameterSplit::Columns })?;
                    Layout { split: Split::Last, partial: false }
                }
            },
            Split::Last => {
                self.divisible(op, weight[0], "the weight's rows")?;
                self.split_parameter(op, w, ParameterSplit::Rows)?;
                Layout { split: Split::Whole, partial: true }
            }
            Split::Heads | Split::Seq => return Err(at(&node.id, "multiplies attention scores split by heads")),
            Split::KvGroups(_) => return Err(at(&node.id, "multiplies keys or values replicated over tp")),
        };
        self.set(op, layout);
        Ok(())
    }

    /// The pass's work fits the exact counts (as the spec's `work_scale`
    /// bounds the algebra's).
    fn check_scale(&self) -> Result<(), GraphError> {
        let mut total = 0u128;
        let product = |s: &[u64]| s.iter().try_fold(1u128, |n, &d| n.checked_mul(u128::from(d))).unwrap_or(u128::MAX);
        for (op, node) in self.g.ops.iter().enumerate() {
            if self.op_pass[op] != Some(self.index) {
                continue;
            }
            let shape = |i: usize| node.operands.get(i).map(|&v| self.shape(v)).unwrap_or_default();
            let last = |s: &[u64]| u128::from(s.last().copied().unwrap_or(0));
            // A product's multiply-adds (the context product's bounded by
            // its heads' width), and every tensor it reads and writes.
            let out = node.results.first().map(|&v| self.shape(v)).unwrap_or_default();
            let product_work = match node.kind {
                GraphOpKind::Matmul => product(&shape(0)).saturating_mul(last(&out)),
                GraphOpKind::BatchMatmul => {
                    // `b·heads·new·d·context`, as the attention rules count.
                    let (lhs, cache) = (shape(0), shape(1));
                    let append = node.operands.get(1).map(|&v| self.g.values[v].producer);
                    let (heads, _, head_dim) = append.and_then(|a| self.attention.get(&a)).copied().unwrap_or((0, 0, 0));
                    let new = lhs.get(if lhs.len() == 3 { 1 } else { 2 }).copied().unwrap_or(0);
                    let dims = [lhs.first().copied().unwrap_or(0), heads, new, head_dim, cache.get(2).copied().unwrap_or(0)];
                    product(&dims)
                }
                _ => 0,
            };
            let tensors: u128 = node.operands.iter().chain(&node.results).map(|&v| product(&self.shape(v))).fold(0, u128::saturating_add);
            total = total.saturating_add(product_work).saturating_add(tensors);
            if total > MAX_WORK_SCALE {
                return Err(at(
                    &node.id,
                    format!("brings the pass's work to {total} multiply-adds and elements, more than Blueprint counts exactly (2^54)"),
                ));
            }
        }
        Ok(())
    }

    /// Every op of the pass has the operands and results its kind takes,
    /// and the products and the cache the ranks their rules read.
    fn check_structure(&self) -> Result<(), GraphError> {
        for (op, node) in self.g.ops.iter().enumerate() {
            if !self.in_pass(op) {
                continue;
            }
            let shared = matches!(node.kind, GraphOpKind::Value(_) | GraphOpKind::Split { .. });
            if self.op_pass[op].is_none() && !shared {
                return Err(at(&node.id, "reads no pass's input, only parameters: a served pass computes from its prompt or token"));
            }
            super::shapes::check_forward_op(self.g, op)?;
            let (operands, results) = match &node.kind {
                GraphOpKind::Value(_) => (0, 1),
                GraphOpKind::Output => (1, 0),
                GraphOpKind::Split { .. } => (1, 1),
                GraphOpKind::BatchMatmul => (2, 1),
                GraphOpKind::KvAppend { cached } => (2 + usize::from(*cached), 1),
                _ => continue, // checked above, or refused where it is sharded
            };
            super::shapes::check_arity(node, operands, results)?;
            let rank = |v: usize| self.g.values[v].shape.len();
            let ranked = match &node.kind {
                GraphOpKind::KvAppend { .. } => rank(node.results[0]) == 4,
                GraphOpKind::Value(ValueRole::Input) => rank(node.results[0]) == 3,
                GraphOpKind::Value(_) | GraphOpKind::Output => true,
                _ => node.operands.iter().chain(&node.results).all(|&v| rank(v) >= 1),
            };
            if !ranked {
                return Err(at(&node.id, format!("has operand or result ranks its '{}' rule does not read", node.kind.op_name())));
            }
        }
        Ok(())
    }

    /// Counts the pass's ops in program order with the served rules.
    fn emit(self) -> Result<ServedDerivation, GraphError> {
        let g = self.g;
        let mut b = ServedBuilder::new(invocation_phase(self.pass), self.tp, self.elem, self.kv_elem);
        // Values whose working space some op counted already.
        let mut counted: HashSet<usize> = HashSet::new();
        // What each value's readers wait for.
        let mut sources: Vec<Vec<ServedDep>> = vec![Vec::new(); g.values.len()];
        let mut lineage = HashMap::new();
        let mut deps = Vec::new();
        let mut outputs = Vec::new();
        let mut result = None;
        let mut cache = None;
        let mut cache_writers = Vec::new();
        let mut new_tokens = 0;
        let mut input = (String::new(), Vec::new());
        let is_fork = |v: usize| g.ops[g.values[v].producer].kind == GraphOpKind::Fork;
        for (op, node) in g.ops.iter().enumerate() {
            match self.op_pass[op] {
                Some(p) if p < self.index => {
                    // An earlier pass's value (its cache) is there already.
                    for &r in &node.results {
                        sources[r] = vec![ServedDep::Cache];
                    }
                    continue;
                }
                Some(p) if p > self.index => continue,
                _ => {}
            }
            // The exits before this op: their all-reduce, then the sum.
            for exit in self.exits.iter().filter(|x| x.first_consumer == op) {
                let before = b.len();
                b.tp_exit(&exit.name, elems(&self.shape(exit.value)));
                if b.len() > before {
                    deps.push(sources[exit.value].clone());
                    outputs.push(None);
                    lineage.insert(b.last_name(), node.id.clone());
                    sources[exit.value] = vec![ServedDep::Invocation(before)];
                }
            }
            let reads: Vec<ServedDep> = {
                let mut all: Vec<ServedDep> = Vec::new();
                for &v in &node.operands {
                    for d in &sources[v] {
                        if !all.contains(d) {
                            all.push(*d);
                        }
                    }
                }
                all
            };
            let source = self.source(op);
            // An input's working space counts once, unless a fork owns it.
            let mut owned = |v: usize| !is_fork(v) && counted.insert(v);
            let first = node.operands.first().copied();
            let before = b.len();
            match &node.kind {
                GraphOpKind::Value(ValueRole::Input) => {
                    let shape = self.shape(node.results[0]);
                    new_tokens = shape.get(1).copied().unwrap_or(0);
                    input = (node.id.clone(), shape);
                    sources[node.results[0]] = vec![ServedDep::Input];
                    continue;
                }
                GraphOpKind::Value(_) => continue,
                GraphOpKind::Output => {
                    // The pass's activation output (not the cache's).
                    let value = node.operands[0];
                    if !matches!(g.ops[g.values[value].producer].kind, GraphOpKind::KvAppend { .. }) {
                        result = Some((node.id.clone(), sources[value].clone()));
                    }
                    continue;
                }
                GraphOpKind::Split { .. } => continue,
                GraphOpKind::Fork => {
                    let x = node.operands[0];
                    b.fork(self.local(x));
                    owned(x);
                    for &r in &node.results {
                        sources[r] = reads.clone();
                    }
                    continue;
                }
                GraphOpKind::KvAppend { .. } => {
                    let r = node.results[0];
                    let elem_bytes = g.values[r].elem_bytes;
                    if elem_bytes != self.kv_elem {
                        return Err(at(
                            &node.id,
                            format!("has a cache of {elem_bytes}-byte elements, but the strategy's KV datatype has {}", self.kv_elem),
                        ));
                    }
                    cache = Some((self.shape(r), elem_bytes, self.local(r) * elem_bytes));
                    cache_writers = reads.iter().filter_map(|d| if let ServedDep::Invocation(i) = d { Some(*i) } else { None }).collect();
                    sources[r] = reads.clone();
                    continue;
                }
                GraphOpKind::LayerNorm | GraphOpKind::RmsNorm => {
                    let x = node.operands[0];
                    let params = node.operands[1..].iter().map(|&p| elems(&self.shape(p))).fold(0, u64::saturating_add);
                    let own = owned(x);
                    if node.kind == GraphOpKind::LayerNorm {
                        b.layer_norm(source, self.local(x), params, own);
                    } else {
                        b.rms_norm(source, self.local(x), params, own);
                    }
                }
                GraphOpKind::Matmul => {
                    let (x, y) = (node.operands[0], node.results[0]);
                    let xs = self.local_shape(x);
                    let n = xs.last().copied().unwrap_or(0);
                    let m = elems(&xs[..xs.len().saturating_sub(1)]);
                    let k = self.local_shape(y).last().copied().unwrap_or(0);
                    let cached = self.consumers[y].iter().any(|&(user, _)| matches!(g.ops[user].kind, GraphOpKind::KvAppend { .. }));
                    let out = if cached { Output::KvCache } else { Output::Activation };
                    b.linear(source, (m, n, k), owned(x), out);
                }
                GraphOpKind::BatchMatmul => {
                    let (lhs, kv) = (node.operands[0], node.operands[1]);
                    let append = g.values[kv].producer;
                    let (heads, kv_heads, head_dim) = self.attention.get(&append).copied().unwrap_or((1, 1, 1));
                    let ls = self.shape(lhs);
                    let scores = ls.len() == 3;
                    let local_kv = if kv_heads.is_multiple_of(self.tp) { kv_heads / self.tp } else { 1 };
                    let new = if scores { ls[1] } else { ls[2] };
                    let context = self.shape(kv).get(2).copied().unwrap_or(0);
                    let dims = AttentionDims { batch: ls[0], heads: heads / self.tp, kv_heads: local_kv, head_dim, new, context };
                    let own = owned(lhs);
                    if scores {
                        b.scores(source, dims, own);
                    } else {
                        b.context(source, dims, own);
                    }
                }
                GraphOpKind::Softmax { .. } => {
                    let x = first.unwrap_or(0);
                    b.softmax(source, self.local(x), owned(x));
                }
                GraphOpKind::Dropout => b.dropout(source, self.local(node.operands[0])),
                GraphOpKind::Gelu | GraphOpKind::Relu | GraphOpKind::Silu => {
                    let kind = match node.kind {
                        GraphOpKind::Gelu => Activation::Gelu,
                        GraphOpKind::Relu => Activation::Relu,
                        _ => Activation::Silu,
                    };
                    let x = node.operands[0];
                    b.activation(source, kind, self.local(x), owned(x));
                }
                GraphOpKind::Swiglu => {
                    let (gate, up) = (node.operands[0], node.operands[1]);
                    let inputs = u64::from(owned(gate)) + u64::from(owned(up));
                    b.swiglu(source, self.local(gate), inputs);
                }
                GraphOpKind::Rope { .. } => {
                    let x = node.operands[0];
                    b.rope(source, self.local(x), owned(x));
                }
                GraphOpKind::BiasAdd => {
                    let x = node.operands[0];
                    let width = self.local_shape(x).last().copied().unwrap_or(0);
                    b.bias_add(source, self.local(x), width, owned(x));
                }
                GraphOpKind::Add => b.residual(source, self.local(node.operands[0])),
                _ => return Err(at(&node.id, format!("'{}' has no rule for a served block", node.kind.op_name()))),
            }
            if b.len() > before {
                lineage.insert(b.last_name(), node.id.clone());
                deps.push(if reads.is_empty() { vec![ServedDep::Input] } else { reads });
                outputs.push(node.results.first().map(|&r| self.local_shape(r)));
                for &r in &node.results {
                    sources[r] = vec![ServedDep::Invocation(before)];
                }
            }
        }
        let parameters = g
            .ops
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == GraphOpKind::Value(ValueRole::Parameter))
            .filter_map(|(op, n)| {
                let value = &g.values[*n.results.first()?];
                Some(ServedParameter {
                    id: n.id.clone(),
                    shape: value.shape.clone(),
                    elem_bytes: value.elem_bytes,
                    split: self.splits.get(&op).copied().unwrap_or(ParameterSplit::Whole),
                })
            })
            .collect();
        let pass = b.finish(self.pass, new_tokens, self.context);
        Ok(ServedDerivation { pass, lineage, deps, outputs, result, parameters, cache, cache_writers, input })
    }
}

/// Elements of a shape (saturating: [`Served::check_scale`] bounds what
/// the pass counts well below).
fn elems(shape: &[u64]) -> u64 {
    shape.iter().fold(1u64, |n, &d| n.saturating_mul(d))
}

/// `prefill` or `decode`: the prefix of a pass's op ids.
#[must_use]
pub fn pass_name(pass: InferencePhase) -> &'static str {
    match pass {
        InferencePhase::Prefill => "prefill",
        InferencePhase::Decode => "decode",
    }
}
