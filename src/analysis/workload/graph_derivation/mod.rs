//! The distributed work of a decoder block derived from its ModelIR (read
//! into a [`BlockGraph`]) and a strategy: what `distribute-transformer-training`
//! emits. Every count comes from the shared op rules ([`super::rules`])
//! applied to the sizes the IR's tensor types and the sharding give, so an
//! edit of the IR (another activation, a dropout removed, a wider MLP)
//! changes the derived work; the workload algebra derives Calculon's block
//! from a spec through the same rules, and a test holds the two equal.
//!
//! Sharding follows Megatron-LM, found from the dataflow rather than from
//! op names:
//!
//! - outside tensor-parallel regions an activation is whole, or split along
//!   the sequence under sequence parallelism (the *boundary* layout);
//! - a linear whose input is whole (or sequence-split) is column-parallel:
//!   its weight's columns and its output's last dimension split over `tp`;
//!   the value entering it (through forks) is a TP *entry* (Megatron's `f`:
//!   identity forward / all-reduce backward, or all-gather / reduce-scatter
//!   under sequence parallelism);
//! - a linear whose input's last dimension is split is row-parallel: its
//!   weight's rows split, its output a partial sum; the first op that needs
//!   the sum is preceded by a TP *exit* (Megatron's `g`: all-reduce forward,
//!   or reduce-scatter / all-gather);
//! - attention reads queries, keys and values split by heads (`heads`
//!   divisible by `tp`); its scores and probabilities are split along their
//!   heads dimension; element-wise ops keep their input's split;
//! - key/value heads split over `tp` when it divides them; when there are
//!   fewer (`tp` a multiple of `kv_heads`, multi-query attention at
//!   `kv_heads = 1`), the linears producing keys and values are
//!   *replicated*: each rank computes the one KV head its query heads read,
//!   whole, from the gathered input (Calculon's multi-query attention,
//!   which keeps the single KV head on every TP rank).
//!
//! A parameter held whole on every TP rank whose gradient each rank
//! computes from its part of the work only is a *partial gradient*: the
//! norms' (and biases') under sequence parallelism, which see a rank's
//! part of the sequence, and the replicated key/value linears', which see
//! a rank's query heads. Megatron-LM all-reduces the first over the TP
//! ranks once per step (`finalize_model_grads`); the same is needed for
//! the second. They are listed in [`GraphDerivation::partial_gradients`]
//! and the dist program reduces them once per step, before the data-
//! parallel reduction; the block's work (the invocations) leaves them out,
//! as Calculon does, so the block facts stay Calculon's.
//!
//! Recompute (`mapping.recompute`) clones every forward op (`full`) or the
//! attention core (`attn_only`: the scores and what runs on them before the
//! context product); the gathered input of the column-parallel linears is
//! dropped and gathered again when Calculon's `recompute_ag_flag` says so.
//! Backward work comes from the ModelIR's gradient ops: an op without an
//! activation gradient cannot be distributed, and a parameter without a
//! weight gradient gets no gradient or optimizer work.

mod dataflow;
pub mod served;
mod shapes;

use std::collections::{HashMap, HashSet};

use thiserror::Error;

use super::graph::{BlockGraph, GraphOpKind, ValueRole};
use super::invocation::{BlockDerivation, Phase};
use super::rules::{Activation, Residency, RuleBuilder, Runs, Strategy, OWNED_STORED, SHARED_UNSTORED};
use super::spec::{OptimizerKind, Recompute, TrainingSpec, MAX_WORK_SCALE};

/// Why a block cannot be distributed, and the op (by id) at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct GraphError {
    /// The ModelIR id of the op at fault, when one is.
    pub op: Option<String>,
    pub message: String,
}

fn at(op: &str, message: impl Into<String>) -> GraphError {
    GraphError { op: Some(op.to_string()), message: message.into() }
}

/// How a value is split over the `tp` axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    Whole,
    /// Along dimension 1 of `[b, s, h]` (sequence parallelism).
    Seq,
    /// Along the last dimension (a column-parallel output).
    Last,
    /// Along dimension 1 of `[b, heads, s, s]` (attention scores).
    Heads,
    /// Keys or values `[b, s, kv x d]` of `kv` heads, fewer than `tp`: each
    /// rank holds one head (the last dimension divided by `kv`), replicated
    /// on `tp / kv` ranks.
    KvGroups(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    split: Split,
    /// A partial sum over the `tp` ranks (a row-parallel output).
    partial: bool,
}

const WHOLE: Layout = Layout { split: Split::Whole, partial: false };

/// A value entering tensor-parallel regions: the column-parallel linears
/// that read it (through forks).
struct Entry {
    value: usize,
    /// The first op reading the value (where the entry's collectives go).
    first_consumer: usize,
    linears: Vec<usize>,
    name: String,
    /// The regions compute attention (Calculon's attention entry).
    attention: bool,
}

/// A partial sum leaving a tensor-parallel region.
struct Exit {
    value: usize,
    first_consumer: usize,
    /// The row-parallel linear producing it.
    linear: usize,
    name: String,
}

#[derive(Clone, Copy)]
enum Mode {
    Column {
        entry: usize,
    },
    Row,
    /// A key or value projection of `groups` KV heads, fewer than `tp`:
    /// not split; each rank computes the one head its queries read.
    Replicated {
        entry: usize,
        groups: u64,
    },
}

/// A block's distributed work derived from its ModelIR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphDerivation {
    pub derivation: BlockDerivation,
    /// For each invocation (by name), the ModelIR op it does the work of:
    /// the forward op (forward, recompute), its gradient ops, the Adam step
    /// of its parameters; a TP collective the op it sits next to (the
    /// producer of an entry's value, the first reader of an exit's sum, or
    /// their gradients).
    pub lineage: HashMap<String, String>,
    /// For each invocation (by position), the earlier invocations it
    /// depends on: the block's dataflow (see [`dataflow`]).
    pub deps: Vec<Vec<usize>>,
    /// For each invocation (by position), the shape of its primary result
    /// on one rank (see [`Derivation::output_shapes`]); `None` for
    /// collectives.
    pub outputs: Vec<Option<Vec<u64>>>,
    /// The parameters whose gradients are partial sums over the `tp` ranks
    /// (see the module documentation), one entry per forward op, in the
    /// block's order.
    pub partial_gradients: Vec<PartialGradient>,
}

/// The parameters of one forward op whose weight gradients each TP rank
/// computes from its part of the work only; the step sums them over the
/// ranks holding the same parameter before the optimizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialGradient {
    /// The forward op (its ModelIR id) whose weight gradient they are.
    pub source: String,
    /// The parameters (their ModelIR ids).
    pub params: Vec<String>,
    /// The gradients' elements on one rank.
    pub elems: u64,
    /// How many distinct parts of the parameter the `tp` ranks hold: 1
    /// (every rank holds it whole), or the KV heads when `tp / groups`
    /// ranks share each. The reduction is one all-reduce over the `tp`
    /// axis of `groups × elems` elements, each rank's part in its place
    /// and zeros elsewhere.
    pub groups: u64,
}

impl PartialGradient {
    /// The reduction's task name: `<source>.tp_grad_reduce`.
    #[must_use]
    pub fn name(&self) -> String {
        format!("{}.tp_grad_reduce", self.source)
    }

    /// The all-reduce's message: `groups × elems` elements of `elem_bytes`.
    #[must_use]
    pub fn message_bytes(&self, elem_bytes: u64) -> u64 {
        self.elems.saturating_mul(self.groups).saturating_mul(elem_bytes)
    }
}

impl GraphDerivation {
    /// The ModelIR op the invocation `name` does the work of.
    #[must_use]
    pub fn lineage_of(&self, name: &str) -> Option<&str> {
        self.lineage.get(name).map(String::as_str)
    }
}

/// Derives the distributed work of one block and one microbatch of `graph`
/// under the strategy of `spec` (its mapping and datatype; the model's
/// sizes are the IR's).
///
/// # Errors
/// A [`GraphError`] naming the op whose sharding or counting is not
/// defined (a dimension `tp` does not divide, an op without a rule, a
/// forward op without its activation gradient, an optimizer other than
/// Adam).
pub fn derive_from_graph(graph: &BlockGraph, spec: &TrainingSpec) -> Result<GraphDerivation, GraphError> {
    spec.validate().map_err(|e| GraphError { op: None, message: e.to_string() })?;
    Derivation::new(graph, spec).run()
}

struct Derivation<'g> {
    g: &'g BlockGraph,
    spec: &'g TrainingSpec,
    s: Strategy,
    /// Every op reading each value, `(op, operand position)`.
    all_consumers: Vec<Vec<(usize, usize)>>,
    /// The forward ops reading each value (gradient ops, optimizer steps
    /// and outputs left out: they do not shape the forward pass).
    consumers: Vec<Vec<(usize, usize)>>,
    /// The forward ops (by id) that have a weight gradient op.
    with_wgrad: HashSet<&'g str>,
    layout: Vec<Option<Layout>>,
    entries: Vec<Entry>,
    exits: Vec<Exit>,
    /// Entry of a value (by value index).
    entry_of: HashMap<usize, usize>,
    /// Forks whose results are a gathered entry (by op index -> entry).
    entry_forks: HashMap<usize, usize>,
    modes: HashMap<usize, Mode>,
    recomputed: HashSet<usize>,
    names: HashSet<String>,
}

impl<'g> Derivation<'g> {
    fn new(g: &'g BlockGraph, spec: &'g TrainingSpec) -> Self {
        let all_consumers = g.consumers();
        let mut consumers = all_consumers.clone();
        for list in &mut consumers {
            list.retain(|&(user, _)| g.ops[user].kind.is_forward());
        }
        let with_wgrad = g
            .ops
            .iter()
            .filter_map(|n| match &n.kind {
                GraphOpKind::WeightGradient { of } => Some(of.as_str()),
                _ => None,
            })
            .collect();
        Self {
            g,
            spec,
            s: Strategy::of(spec),
            all_consumers,
            consumers,
            with_wgrad,
            layout: vec![None; g.values.len()],
            entries: Vec::new(),
            exits: Vec::new(),
            entry_of: HashMap::new(),
            entry_forks: HashMap::new(),
            modes: HashMap::new(),
            recomputed: HashSet::new(),
            names: HashSet::new(),
        }
    }

    fn boundary(&self) -> Layout {
        Layout { split: if self.s.sequence_parallel { Split::Seq } else { Split::Whole }, partial: false }
    }

    fn id(&self, op: usize) -> &'g str {
        &self.g.ops[op].id
    }

    fn run(mut self) -> Result<GraphDerivation, GraphError> {
        shapes::check_program_order(self.g)?;
        for op in 0..self.g.ops.len() {
            shapes::check_forward_op(self.g, op)?;
        }
        let input = self.block_input()?;
        self.check_datatype(input)?;
        for op in 0..self.g.ops.len() {
            self.shard(op)?;
        }
        self.find_recomputed();
        self.check_gradients()?;
        self.check_scale()?;
        let mut b = RuleBuilder::new(self.s);
        for op in 0..self.g.ops.len() {
            if self.g.ops[op].kind.is_forward() {
                self.emit(&mut b, op)?;
            }
        }
        let v = &self.g.values[input];
        let derivation = b.finish(v.elems() * v.elem_bytes);
        let lineage = self.lineage(&derivation);
        let deps = self.dependencies(&derivation);
        let outputs = self.output_shapes(&derivation);
        let partial_gradients = self.partial_gradients();
        Ok(GraphDerivation { derivation, lineage, deps, outputs, partial_gradients })
    }

    /// The ModelIR op behind each invocation (see [`GraphDerivation::lineage`]).
    fn lineage(&self, derivation: &BlockDerivation) -> HashMap<String, String> {
        let g = self.g;
        let all_consumers = &self.all_consumers;
        // Per forward op (and per collective's anchor): the first op of each
        // backward kind, and the Adam step of its first parameter.
        let mut gradient: HashMap<(&str, bool), &str> = HashMap::new();
        for node in &g.ops {
            match &node.kind {
                GraphOpKind::ActivationGradient { of } => gradient.entry((of.as_str(), false)).or_insert(node.id.as_str()),
                GraphOpKind::WeightGradient { of } => gradient.entry((of.as_str(), true)).or_insert(node.id.as_str()),
                _ => continue,
            };
        }
        let step_of = |op: usize| -> Option<&str> {
            g.ops[op].operands.iter().find_map(|&v| {
                all_consumers[v].iter().find_map(|&(user, position)| {
                    (position == 0 && matches!(g.ops[user].kind, GraphOpKind::OptimizerStep { .. })).then(|| g.ops[user].id.as_str())
                })
            })
        };
        let by_id: HashMap<&str, usize> = g.ops.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
        let anchors: HashMap<&str, &str> = self
            .entries
            .iter()
            .map(|e| (e.name.as_str(), self.id(g.values[e.value].producer)))
            .chain(self.exits.iter().map(|x| (x.name.as_str(), self.id(x.first_consumer))))
            .collect();
        let mut lineage = HashMap::new();
        for inv in &derivation.invocations {
            let base = anchors.get(inv.source.as_str()).copied().unwrap_or(inv.source.as_str());
            let op = match inv.phase {
                Phase::ActivationGradient => gradient.get(&(base, false)).copied(),
                Phase::WeightGradient => gradient.get(&(base, true)).copied(),
                Phase::Optimizer => by_id.get(base).and_then(|&op| step_of(op)),
                _ => Some(base),
            };
            if let Some(op) = op {
                lineage.insert(inv.name.clone(), op.to_string());
            }
        }
        lineage
    }

    /// The block input: the one forward `model.value` of role activation.
    fn block_input(&self) -> Result<usize, GraphError> {
        let inputs: Vec<usize> = (0..self.g.ops.len())
            .filter(|&op| self.g.ops[op].kind == GraphOpKind::Value(ValueRole::Activation))
            .filter_map(|op| self.g.ops[op].results.first().copied())
            .collect();
        match inputs.as_slice() {
            [one] => {
                if self.g.values[*one].shape.len() != 3 {
                    return Err(at(self.id(self.g.values[*one].producer), "the block input must be [microbatch, seq, hidden]"));
                }
                Ok(*one)
            }
            [] => Err(GraphError { op: None, message: "the block has no input (a 'model.value' of role activation)".into() }),
            [_, second, ..] => Err(at(self.id(self.g.values[*second].producer), "the block has a second input activation")),
        }
    }

    fn check_datatype(&self, input: usize) -> Result<(), GraphError> {
        let got = self.g.values[input].elem_bytes;
        if got != self.s.elem {
            return Err(at(
                self.id(self.g.values[input].producer),
                format!(
                    "the block's elements are {got} bytes, but the strategy binding's datatype '{}' has {}",
                    self.spec.workload.datatype.name(),
                    self.s.elem
                ),
            ));
        }
        Ok(())
    }

    fn shape(&self, value: usize) -> &'g [u64] {
        &self.g.values[value].shape
    }

    fn layout_of(&self, op: usize, value: usize) -> Result<Layout, GraphError> {
        self.layout[value].ok_or_else(|| at(self.id(op), "reads a value the block does not compute before it"))
    }

    /// `dim` of `value`'s shape is divisible by `tp` (so the split is even).
    fn divisible(&self, op: usize, value: usize, dim: usize, what: &str) -> Result<(), GraphError> {
        let size = self.shape(value).get(dim).copied().unwrap_or(0);
        if size % self.s.tp != 0 {
            return Err(at(self.id(op), format!("cannot split {what} ({size}) over mapping.tp = {}", self.s.tp)));
        }
        Ok(())
    }

    /// The op's operand `position` in a layout that is not a partial sum:
    /// a partial sum gets a TP exit before this op.
    fn summed(&mut self, op: usize, position: usize) -> Result<Layout, GraphError> {
        let value = self.g.ops[op].operands[position];
        let layout = self.layout_of(op, value)?;
        if !layout.partial {
            return Ok(layout);
        }
        let producer = self.g.values[value].producer;
        if !matches!(self.modes.get(&producer), Some(Mode::Row)) {
            return Err(at(self.id(op), "reads a partial sum that no row-parallel linear produced"));
        }
        if self.boundary().split == Split::Seq {
            self.divisible(op, value, 1, "the sequence")?;
        }
        let name = self.unique(&format!("{}.tp_exit", scope(self.id(producer))));
        self.exits.push(Exit { value, first_consumer: op, linear: producer, name });
        let boundary = self.boundary();
        self.layout[value] = Some(boundary);
        Ok(boundary)
    }

    fn unique(&mut self, name: &str) -> String {
        unique(&mut self.names, name)
    }

    /// Assigns the layouts of `op`'s results (forward ops only).
    fn shard(&mut self, op: usize) -> Result<(), GraphError> {
        let g = self.g;
        let node = &g.ops[op];
        let set = |this: &mut Self, layout: Layout| {
            for &r in &node.results {
                this.layout[r] = Some(layout);
            }
        };
        match &node.kind {
            GraphOpKind::Value(ValueRole::Activation) => {
                let b = self.boundary();
                if b.split == Split::Seq {
                    self.divisible(op, node.results[0], 1, "the sequence")?;
                }
                set(self, b);
            }
            GraphOpKind::Value(_) => set(self, WHOLE),
            GraphOpKind::Output
            | GraphOpKind::ActivationGradient { .. }
            | GraphOpKind::WeightGradient { .. }
            | GraphOpKind::OptimizerStep { .. } => {}
            GraphOpKind::Fork => {
                let layout = self.summed(op, 0)?;
                if self.feeds_only_linears(op) && matches!(layout.split, Split::Whole | Split::Seq) {
                    let entry = self.entry(op, node.operands[0]);
                    self.entry_forks.insert(op, entry);
                    set(self, WHOLE);
                } else {
                    set(self, layout);
                }
            }
            GraphOpKind::LayerNorm | GraphOpKind::RmsNorm => {
                let layout = self.summed(op, 0)?;
                if !matches!(layout.split, Split::Whole | Split::Seq) {
                    return Err(at(&node.id, "normalizes over a dimension split over tp (it needs its rows whole)"));
                }
                set(self, layout);
            }
            GraphOpKind::Matmul => self.linear(op)?,
            GraphOpKind::AttentionScores { heads, kv_heads, .. } | GraphOpKind::AttentionContext { heads, kv_heads, .. } => {
                let scores = matches!(node.kind, GraphOpKind::AttentionScores { .. });
                // Keys and values: split by heads, or one replicated head
                // per rank when there are fewer KV heads than ranks.
                let kv = if self.kv_replicated(*kv_heads) { Split::KvGroups(*kv_heads) } else { Split::Last };
                let want = if scores { [Split::Last, kv] } else { [Split::Heads, kv] };
                for (position, split) in want.into_iter().enumerate() {
                    let layout = self.summed(op, position)?;
                    if layout.split != split && self.s.tp > 1 {
                        return Err(at(
                            &node.id,
                            format!("reads operand #{position} split as {:?}, but attention needs it split by heads", layout.split),
                        ));
                    }
                }
                if heads % self.s.tp != 0 {
                    return Err(at(&node.id, format!("cannot split heads ({heads}) over mapping.tp = {}", self.s.tp)));
                }
                if !kv_heads.is_multiple_of(self.s.tp) && !self.s.tp.is_multiple_of(*kv_heads) {
                    return Err(at(
                        &node.id,
                        format!(
                            "cannot split kv_heads ({kv_heads}) over mapping.tp = {} nor replicate them (tp must divide them or be a multiple)",
                            self.s.tp
                        ),
                    ));
                }
                set(self, Layout { split: if scores { Split::Heads } else { Split::Last }, partial: false });
            }
            GraphOpKind::Softmax { dim } => {
                let layout = self.summed(op, 0)?;
                let rank = self.shape(node.operands[0]).len() as u64;
                let split_dim = match layout.split {
                    Split::Whole => None,
                    Split::Seq | Split::Heads => Some(1),
                    Split::Last | Split::KvGroups(_) => Some(rank.saturating_sub(1)),
                };
                if split_dim == Some(*dim) {
                    return Err(at(&node.id, format!("normalizes over dimension {dim}, which is split over tp")));
                }
                set(self, layout);
            }
            GraphOpKind::Dropout | GraphOpKind::Gelu | GraphOpKind::Relu | GraphOpKind::Silu => {
                let layout = self.summed(op, 0)?;
                set(self, layout);
            }
            GraphOpKind::Rope { heads } => {
                let layout = self.summed(op, 0)?;
                if layout.split == Split::Last && heads % self.s.tp != 0 {
                    return Err(at(&node.id, format!("cannot split its {heads} heads over mapping.tp = {}", self.s.tp)));
                }
                if let Split::KvGroups(groups) = layout.split {
                    if heads % groups != 0 {
                        return Err(at(&node.id, format!("cannot hold one of {groups} KV heads of its {heads} heads per rank")));
                    }
                }
                set(self, layout);
            }
            GraphOpKind::BiasAdd => {
                let layout = self.summed(op, 0)?;
                if matches!(layout.split, Split::Last) {
                    self.divisible(op, node.operands[1], 0, "the bias")?;
                } else if let Split::KvGroups(groups) = layout.split {
                    let width = self.shape(node.operands[1]).first().copied().unwrap_or(0);
                    if width % groups != 0 {
                        return Err(at(&node.id, format!("cannot hold one of {groups} KV heads of the bias ({width}) per rank")));
                    }
                } else if layout.split == Split::Heads {
                    return Err(at(&node.id, "adds a bias to attention scores split by heads"));
                }
                set(self, layout);
            }
            GraphOpKind::Add | GraphOpKind::Swiglu => {
                let first = self.summed(op, 0)?;
                let second = self.summed(op, 1)?;
                if first != second {
                    return Err(at(&node.id, format!("adds operands split differently ({:?} and {:?})", first.split, second.split)));
                }
                set(self, first);
            }
            GraphOpKind::Other(name) => {
                return Err(at(&node.id, format!("'{name}' has no distribution rule for training")));
            }
            GraphOpKind::BatchMatmul | GraphOpKind::KvAppend { .. } | GraphOpKind::Split { .. } => {
                return Err(at(&node.id, format!("'{}' has no distribution rule for training (it serves inference)", node.kind.op_name())));
            }
        }
        Ok(())
    }

    /// Whether every (transitive, through forks) reader of `fork`'s results
    /// is a linear.
    fn feeds_only_linears(&self, fork: usize) -> bool {
        self.g.ops[fork].results.iter().all(|&r| {
            !self.consumers[r].is_empty()
                && self.consumers[r].iter().all(|&(user, position)| match self.g.ops[user].kind {
                    GraphOpKind::Matmul => position == 0,
                    GraphOpKind::Fork => self.feeds_only_linears(user),
                    _ => false,
                })
        })
    }

    /// Whether `kv_heads` key/value heads are replicated over the TP ranks
    /// (fewer of them than ranks) rather than split.
    fn kv_replicated(&self, kv_heads: u64) -> bool {
        !kv_heads.is_multiple_of(self.s.tp)
    }

    /// The `kv_heads` of the attention reading `op`'s results as keys or
    /// values (its second operand), through element-wise ops and forks.
    fn kv_heads_fed(&self, op: usize) -> Option<u64> {
        self.g.ops[op].results.iter().find_map(|&r| {
            self.consumers[r].iter().find_map(|&(user, position)| match &self.g.ops[user].kind {
                GraphOpKind::AttentionScores { kv_heads, .. } | GraphOpKind::AttentionContext { kv_heads, .. } => {
                    (position == 1).then_some(*kv_heads)
                }
                GraphOpKind::Rope { .. } | GraphOpKind::Fork | GraphOpKind::Dropout | GraphOpKind::BiasAdd => self.kv_heads_fed(user),
                _ => None,
            })
        })
    }

    /// The column-parallel (split) linears of an entry, in program order:
    /// the ones a tiled entry fuses.
    fn column_linears(&self, entry: usize) -> impl Iterator<Item = usize> + '_ {
        self.entries[entry].linears.iter().copied().filter(|l| matches!(self.modes.get(l), Some(Mode::Column { .. })))
    }

    /// The replicated key/value linears an entry feeds.
    fn replicated_linears(&self, entry: usize) -> usize {
        self.entries[entry].linears.iter().filter(|l| matches!(self.modes.get(l), Some(Mode::Replicated { .. }))).count()
    }

    /// The entry of `value`, first read by `consumer` (made on first use).
    fn entry(&mut self, consumer: usize, value: usize) -> usize {
        if let Some(&entry) = self.entry_of.get(&value) {
            return entry;
        }
        let name = self.unique(&format!("{}.tp_entry", scope(self.id(consumer))));
        self.entries.push(Entry { value, first_consumer: consumer, linears: Vec::new(), name, attention: false });
        let entry = self.entries.len() - 1;
        self.entry_of.insert(value, entry);
        entry
    }

    fn linear(&mut self, op: usize) -> Result<(), GraphError> {
        let node = &self.g.ops[op];
        let (x, w) = (node.operands[0], node.operands[1]);
        let layout = self.summed(op, 0)?;
        let weight = self.shape(w);
        if weight.len() != 2 {
            return Err(at(&node.id, "multiplies by a weight that is not [in, out]"));
        }
        let x_producer = self.g.values[x].producer;
        let mode = match layout.split {
            Split::Last => {
                self.divisible(op, w, 0, "the weight's rows")?;
                Mode::Row
            }
            Split::Whole | Split::Seq => {
                let groups = self.kv_heads_fed(op).filter(|&kv| self.kv_replicated(kv));
                if let Some(groups) = groups {
                    if !weight[1].is_multiple_of(groups) {
                        return Err(at(
                            &node.id,
                            format!("cannot hold one of {groups} KV heads of the weight's columns ({}) per rank", weight[1]),
                        ));
                    }
                } else {
                    self.divisible(op, w, 1, "the weight's columns")?;
                }
                let entry = match self.entry_forks.get(&x_producer) {
                    Some(&entry) => entry,
                    None => self.entry(op, x),
                };
                self.entries[entry].linears.push(op);
                match groups {
                    Some(groups) => Mode::Replicated { entry, groups },
                    None => Mode::Column { entry },
                }
            }
            Split::Heads => return Err(at(&node.id, "multiplies attention scores split by heads")),
            Split::KvGroups(_) => return Err(at(&node.id, "multiplies keys or values replicated over tp")),
        };
        self.modes.insert(op, mode);
        let out = match mode {
            Mode::Row => Layout { split: Split::Whole, partial: true },
            Mode::Column { .. } => Layout { split: Split::Last, partial: false },
            Mode::Replicated { groups, .. } => Layout { split: Split::KvGroups(groups), partial: false },
        };
        for &r in &self.g.ops[op].results {
            self.layout[r] = Some(out);
        }
        Ok(())
    }

    /// Marks the recomputed forward ops and the attention entries.
    fn find_recomputed(&mut self) {
        let forward: Vec<usize> = (0..self.g.ops.len()).filter(|&op| self.g.ops[op].kind.is_forward()).collect();
        // The attention core: the scores and what runs on them before the
        // context product.
        let mut core = HashSet::new();
        let mut stack: Vec<usize> =
            forward.iter().copied().filter(|&op| matches!(self.g.ops[op].kind, GraphOpKind::AttentionScores { .. })).collect();
        while let Some(op) = stack.pop() {
            if !core.insert(op) {
                continue;
            }
            for &r in &self.g.ops[op].results {
                for &(user, _) in &self.consumers[r] {
                    let kind = &self.g.ops[user].kind;
                    if kind.is_forward() && !matches!(kind, GraphOpKind::AttentionContext { .. } | GraphOpKind::Output) {
                        stack.push(user);
                    }
                }
            }
        }
        self.recomputed = match self.spec.mapping.recompute {
            Recompute::Full => forward.into_iter().collect(),
            Recompute::AttnOnly => core,
            Recompute::None => HashSet::new(),
        };
        for e in 0..self.entries.len() {
            let attention = self.entries[e].linears.iter().any(|&linear| self.reaches_attention(linear));
            self.entries[e].attention = attention;
        }
    }

    /// Whether `op`'s results reach an attention op through element-wise
    /// ops and forks (not through another linear or a norm).
    fn reaches_attention(&self, op: usize) -> bool {
        self.g.ops[op].results.iter().any(|&r| {
            self.consumers[r].iter().any(|&(user, _)| match self.g.ops[user].kind {
                GraphOpKind::AttentionScores { .. } | GraphOpKind::AttentionContext { .. } => true,
                GraphOpKind::Rope { .. } | GraphOpKind::Fork | GraphOpKind::Dropout => self.reaches_attention(user),
                _ => false,
            })
        })
    }

    /// Whether the entry's gathered input is dropped after the forward
    /// pass and gathered again (Calculon's `recompute_ag_flag`).
    fn dropped(&self, entry: usize) -> bool {
        let map = &self.spec.mapping;
        let covered = if self.entries[entry].attention {
            matches!(map.recompute, Recompute::Full | Recompute::AttnOnly)
        } else {
            map.recompute == Recompute::Full
        };
        covered || map.seq_par_ag_redo
    }

    /// Every forward op the rules count has its activation gradient; every
    /// gradient op names a forward op of the block; every weight gradient
    /// feeds an Adam step.
    fn check_gradients(&self) -> Result<(), GraphError> {
        let consumers = &self.all_consumers;
        let forward: HashMap<&str, usize> =
            (0..self.g.ops.len()).filter(|&op| self.g.ops[op].kind.is_forward()).map(|op| (self.id(op), op)).collect();
        let mut agrad = HashSet::new();
        for node in &self.g.ops {
            let of = match &node.kind {
                GraphOpKind::ActivationGradient { of } => {
                    agrad.insert(of.as_str());
                    of
                }
                GraphOpKind::WeightGradient { of } => {
                    for &r in &node.results {
                        let steps: Vec<&GraphOpKind> = consumers[r].iter().map(|&(user, _)| &self.g.ops[user].kind).collect();
                        match steps.as_slice() {
                            [GraphOpKind::OptimizerStep { kind: OptimizerKind::Adam }] => {}
                            [GraphOpKind::OptimizerStep { kind }] => {
                                return Err(at(
                                    &node.id,
                                    format!("feeds a '{}' optimizer step; training work is counted for Adam only", kind.name()),
                                ));
                            }
                            _ => return Err(at(&node.id, "each weight gradient must feed one 'model.optimizer_step'")),
                        }
                    }
                    of
                }
                _ => continue,
            };
            if !forward.contains_key(of.as_str()) {
                return Err(at(&node.id, format!("differentiates '{of}', which is no forward op of the block")));
            }
        }
        for (&id, &op) in &forward {
            if !matches!(self.g.ops[op].kind, GraphOpKind::Value(_)) && !agrad.contains(id) {
                return Err(at(
                    id,
                    format!(
                        "has no activation gradient ('model.activation_gradient' of \"{id}\"): the backward pass cannot pass through it"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The block's work fits the exact counts: a linear's `m·n·k`, an
    /// attention product's `batch·heads·s·t·d` and every other op's tensor
    /// elements, summed over the block, at most [`MAX_WORK_SCALE`] (as the
    /// spec's `work_scale` bounds the algebra's), so no count overflows
    /// (the rules multiply these by at most 2^9).
    fn check_scale(&self) -> Result<(), GraphError> {
        let product = |dims: &[u64]| dims.iter().try_fold(1u128, |n, &d| n.checked_mul(u128::from(d))).unwrap_or(u128::MAX);
        let mut total = 0u128;
        for node in self.g.ops.iter().filter(|n| n.kind.is_forward()) {
            let shape = |i: usize| node.operands.get(i).map_or(&[][..], |&v| self.shape(v));
            let dim = |s: &[u64], i: usize| s.get(i).copied().unwrap_or(0);
            let scale = match &node.kind {
                GraphOpKind::Matmul => product(&[self.rows(node.operands[0]), dim(shape(1), 0), dim(shape(1), 1)]),
                GraphOpKind::AttentionScores { heads, head_dim, .. } | GraphOpKind::AttentionContext { heads, head_dim, .. } => {
                    let (lhs, rhs) = (shape(0), shape(1));
                    product(&[dim(rhs, 0), *heads, dim(lhs, 1), dim(rhs, 1), *head_dim])
                }
                _ => node.operands.iter().chain(&node.results).map(|&v| u128::from(self.g.values[v].elems())).sum(),
            };
            total = total.saturating_add(scale);
            if total > MAX_WORK_SCALE {
                return Err(at(
                    &node.id,
                    format!("brings the block's work to {total} multiply-adds and elements, more than Blueprint counts exactly (2^54)"),
                ));
            }
        }
        Ok(())
    }

    /// The partial gradients (see [`PartialGradient`]): under `tp > 1`,
    /// the whole parameters of a norm or bias add reading a sequence split
    /// activation, and the parameters of a replicated key/value linear (or
    /// of a bias add on its output).
    fn partial_gradients(&self) -> Vec<PartialGradient> {
        if self.s.tp <= 1 {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (op, node) in self.g.ops.iter().enumerate() {
            if !node.kind.is_forward() || !self.has_wgrad(op) {
                continue;
            }
            let input = node.operands.first().and_then(|&v| self.layout[v]).map(|l| l.split);
            let groups = match (&node.kind, self.modes.get(&op), input) {
                (GraphOpKind::LayerNorm | GraphOpKind::RmsNorm | GraphOpKind::BiasAdd, _, Some(Split::Seq)) => 1,
                (GraphOpKind::BiasAdd, _, Some(Split::KvGroups(groups))) => groups,
                (GraphOpKind::Matmul, Some(&Mode::Replicated { groups, .. }), _) => groups,
                _ => continue,
            };
            let params: Vec<usize> = node.operands.iter().copied().filter(|&v| self.is_parameter(v)).collect();
            if params.is_empty() {
                continue;
            }
            out.push(PartialGradient {
                source: node.id.clone(),
                params: params.iter().map(|&p| self.g.ops[self.g.values[p].producer].id.clone()).collect(),
                elems: params.iter().map(|&p| self.parameter_shape(op, p).iter().product::<u64>()).sum(),
                groups,
            });
        }
        out
    }

    fn has_wgrad(&self, op: usize) -> bool {
        self.with_wgrad.contains(self.id(op))
    }

    /// Elements of `value` on one rank.
    fn local(&self, value: usize) -> u64 {
        self.local_shape(value).iter().product()
    }

    /// Whether the TP collectives are tiled with their linears.
    fn tiled(&self) -> bool {
        self.s.overlap.is_overlapped()
    }

    /// How a rule's input is held: a fork's tensor is shared.
    fn residency(&self, value: usize, stored: bool) -> Residency {
        let producer = self.g.values[value].producer;
        if self.g.ops[producer].kind == GraphOpKind::Fork {
            SHARED_UNSTORED
        } else {
            Residency { shared: false, stored }
        }
    }

    fn is_recomputed(&self, op: usize) -> bool {
        self.recomputed.contains(&op)
    }

    /// Whether the op's output is kept for the backward pass: not when the
    /// op and every reader are recomputed.
    fn output_kept(&self, op: usize) -> bool {
        let all_readers_recomputed =
            self.g.ops[op].results.iter().all(|&r| self.consumers[r].iter().all(|&(user, _)| self.is_recomputed(user)));
        !(self.is_recomputed(op) && all_readers_recomputed)
    }

    /// `m` of a linear: its input's rows (all leading dimensions).
    fn rows(&self, x: usize) -> u64 {
        let shape = self.shape(x);
        shape[..shape.len().saturating_sub(1)].iter().product()
    }

    fn emit(&self, b: &mut RuleBuilder, op: usize) -> Result<(), GraphError> {
        let g = self.g;
        let node = &g.ops[op];
        let id = node.id.as_str();
        let full = self.spec.mapping.recompute == Recompute::Full;
        if !self.tiled() {
            for entry in self.entries.iter().enumerate().filter(|(_, e)| e.first_consumer == op) {
                let (e, entry) = entry;
                b.tp_entry(&entry.name, g.values[entry.value].elems(), self.dropped(e));
            }
            for exit in self.exits.iter().filter(|x| x.first_consumer == op) {
                b.tp_exit(&exit.name, g.values[exit.value].elems(), full);
            }
        }
        let recompute = self.is_recomputed(op);
        let runs = Runs { recompute, wgrad: self.has_wgrad(op) };
        let first = |i: usize| node.operands.get(i).copied().ok_or_else(|| at(id, format!("has no operand #{i}")));
        match &node.kind {
            GraphOpKind::Fork => {
                let entry = self.entry_forks.get(&op);
                let stored = entry.is_none_or(|&e| !self.dropped(e));
                let result = node.results.first().copied().ok_or_else(|| at(id, "has no result"))?;
                // Its backward sums the gradients of the results in use.
                let mut users = node.results.iter().filter(|&&r| !self.consumers[r].is_empty()).count() as u64;
                if let (true, Some(&e)) = (self.tiled(), entry) {
                    // The tiled linear gathers its own input; only the
                    // replicated key/value linears read the fork (as in
                    // Calculon's tiled multi-query attention).
                    users = self.replicated_linears(e) as u64;
                    if users == 0 {
                        return Ok(());
                    }
                }
                b.fork(id, self.local(result), users, stored);
            }
            GraphOpKind::LayerNorm => {
                let x = first(0)?;
                let params: u64 = node.operands[1..].iter().map(|&p| g.values[p].elems()).sum();
                b.layer_norm(id, self.local(x), params, runs, self.residency(x, false));
            }
            GraphOpKind::Matmul => self.emit_linear(b, op, runs)?,
            GraphOpKind::AttentionScores { heads, head_dim, .. } | GraphOpKind::AttentionContext { heads, head_dim, .. } => {
                let (lhs, rhs) = (first(0)?, first(1)?);
                let scores = matches!(node.kind, GraphOpKind::AttentionScores { .. });
                // Queries [b, s, heads x d] / probabilities [b, heads, s, t];
                // keys or values [b, t, kv x d].
                let batch = self.shape(rhs)[0] * heads / self.s.tp;
                let (s, t) = if scores { (self.shape(lhs)[1], self.shape(rhs)[1]) } else { (self.shape(lhs)[2], self.shape(lhs)[3]) };
                let dims = if scores { (batch, s, *head_dim, t) } else { (batch, s, t, *head_dim) };
                b.batch_matmul(id, dims, recompute, self.output_kept(op));
            }
            GraphOpKind::Softmax { .. } => b.softmax(id, self.local(first(0)?), recompute, self.output_kept(op)),
            GraphOpKind::Dropout => b.dropout(id, self.local(first(0)?), recompute, !recompute),
            GraphOpKind::Gelu | GraphOpKind::Relu | GraphOpKind::Silu => {
                let kind = match node.kind {
                    GraphOpKind::Gelu => Activation::Gelu,
                    GraphOpKind::Relu => Activation::Relu,
                    _ => Activation::Silu,
                };
                b.activation(id, kind, self.local(first(0)?), recompute, self.spec.mapping.fused_activation);
            }
            GraphOpKind::Swiglu => b.swiglu(id, self.local(first(0)?), recompute, self.spec.mapping.fused_activation),
            GraphOpKind::Add => b.residual(id, self.local(first(0)?), recompute),
            GraphOpKind::RmsNorm => {
                let x = first(0)?;
                let params: u64 = node.operands[1..].iter().map(|&p| g.values[p].elems()).sum();
                b.rms_norm(id, self.local(x), params, runs, self.residency(x, false));
            }
            GraphOpKind::Rope { .. } => b.rope(id, self.local(first(0)?), recompute),
            GraphOpKind::BiasAdd => {
                let (x, bias) = (first(0)?, first(1)?);
                let width = g.values[bias].elems()
                    / match self.layout[x].map(|l| l.split) {
                        Some(Split::Last) => self.s.tp,
                        Some(Split::KvGroups(groups)) => groups,
                        _ => 1,
                    };
                b.bias_add(id, self.local(x), width, runs);
            }
            GraphOpKind::Value(_) => {}
            _ => return Err(at(id, "has no counting rule")),
        }
        Ok(())
    }

    fn emit_linear(&self, b: &mut RuleBuilder, op: usize, runs: Runs) -> Result<(), GraphError> {
        let g = self.g;
        let node = &g.ops[op];
        let (x, w) = (node.operands[0], node.operands[1]);
        let (m, n, k) = (self.rows(x), self.shape(w)[0], self.shape(w)[1]);
        let t = self.s.tp;
        let tiled = self.tiled();
        let full = self.spec.mapping.recompute == Recompute::Full;
        match self.modes.get(&op) {
            Some(&Mode::Column { entry }) => {
                let e = &self.entries[entry];
                if tiled {
                    if self.column_linears(entry).next() != Some(op) {
                        return Ok(());
                    }
                    let width: u64 = self.column_linears(entry).map(|l| self.shape(g.ops[l].operands[1])[1]).sum();
                    let fused = fused_name(self.column_linears(entry).map(|l| self.id(l)));
                    b.tiled_linear(&fused, &e.name, (m, n, width), false, full, self.dropped(entry));
                } else {
                    b.linear(&node.id, (m, n, k / t), runs, self.residency(x, !self.dropped(entry)));
                }
            }
            Some(&Mode::Replicated { entry, groups }) => {
                // Untiled even under TP overlap: nothing to communicate.
                b.linear(&node.id, (m, n, k / groups), runs, self.residency(x, !self.dropped(entry)));
            }
            Some(Mode::Row) => {
                if tiled {
                    let exit = self.exits.iter().find(|e| e.linear == op).ok_or_else(|| at(&node.id, "has no TP exit after it"))?;
                    b.tiled_linear(&node.id, &exit.name, (m, n, k), true, full, full);
                } else {
                    b.linear(&node.id, (m, n / t, k), runs, self.residency(x, OWNED_STORED.stored));
                }
            }
            None => return Err(at(&node.id, "was not sharded")),
        }
        Ok(())
    }
}

/// `name`, or `name.2`, `name.3`, ... : the first not in `names` (added).
fn unique(names: &mut HashSet<String>, name: &str) -> String {
    let mut candidate = name.to_string();
    let mut n = 2;
    while !names.insert(candidate.clone()) {
        candidate = format!("{name}.{n}");
        n += 1;
    }
    candidate
}

/// The first dot-separated segment of an id (`attn` of `attn.qkv_fork`).
fn scope(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

/// The task of column-parallel linears fused into one tiled linear: their
/// scope and their last segments joined (`attn.q`, `attn.k`, `attn.v` ->
/// `attn.qkv`); one linear keeps its id.
fn fused_name<'a>(ids: impl Iterator<Item = &'a str>) -> String {
    let ids: Vec<&str> = ids.collect();
    if let [one] = ids.as_slice() {
        return (*one).to_string();
    }
    let first = ids.first().copied().unwrap_or_default();
    let prefix = first.rsplit_once('.').map_or("", |(p, _)| p);
    let tails: String = ids.iter().map(|id| id.rsplit_once('.').map_or(*id, |(_, t)| t)).collect();
    if prefix.is_empty() {
        tails
    } else {
        format!("{prefix}.{tails}")
    }
}
