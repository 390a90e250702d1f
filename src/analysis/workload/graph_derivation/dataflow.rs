//! Which invocations of a derived block each invocation depends on: the
//! block's dataflow, read off the ModelIR (an op's forward reads its
//! operands' producers; its gradients read the gradients of its results'
//! readers and what its forward kept or recomputed; a collective sits on
//! the edge it converts; an optimizer step reads its weight gradient), so
//! the dist program is the block's DAG rather than one chain.

use std::collections::HashMap;

use super::{Derivation, Mode};
use crate::analysis::workload::graph::GraphOpKind;
use crate::analysis::workload::invocation::{BlockDerivation, Phase};

impl Derivation<'_> {
    /// Whether the TP collectives are emitted (not at TP 1).
    fn communicates(&self) -> bool {
        self.s.tp > 1
    }

    /// The name of the task doing `op`'s work, under tiling the fused
    /// linear's; `None` for ops without a task of their own (values,
    /// forks under tiling).
    fn task_base(&self, op: usize) -> Option<String> {
        let node = &self.g.ops[op];
        match (&node.kind, self.modes.get(&op)) {
            (GraphOpKind::Value(_) | GraphOpKind::Output, _) => None,
            (GraphOpKind::Fork, _) if self.tiled() && self.entry_forks.get(&op).is_some_and(|&e| self.replicated_linears(e) == 0) => None,
            (GraphOpKind::Matmul, Some(&Mode::Column { entry })) if self.tiled() => {
                Some(super::fused_name(self.column_linears(entry).map(|l| self.id(l))))
            }
            _ => Some(node.id.clone()),
        }
    }

    /// The exit converting `value`, if its collectives are emitted.
    fn exit_of(&self, value: usize) -> Option<&str> {
        self.exits.iter().find(|x| x.value == value).filter(|_| self.communicates()).map(|x| x.name.as_str())
    }

    /// The entry of `value`, if its collectives are emitted.
    fn entry_name(&self, value: usize) -> Option<&str> {
        self.entry_of.get(&value).filter(|_| self.communicates()).map(|&e| self.entries[e].name.as_str())
    }

    /// The tasks a forward (`recompute = false`) or recompute reading of
    /// `value` depends on: the task producing it (through forks), or the
    /// collective converting it on the way.
    fn producers(&self, value: usize, recompute: bool, out: &mut Vec<String>) {
        let seq = self.s.sequence_parallel;
        if let Some(exit) = self.exit_of(value) {
            out.push(format!("{exit}.{}", if recompute { "recomm" } else { "fwd" }));
            return;
        }
        if let Some(entry) = self.entry_name(value).filter(|_| seq) {
            let redone = recompute && self.entry_of.get(&value).is_some_and(|&e| self.dropped(e));
            out.push(format!("{entry}.{}", if redone { "recomm" } else { "fwd" }));
            return;
        }
        self.raw_producers(value, recompute, out);
    }

    /// [`Self::producers`] without the collective on the way.
    fn raw_producers(&self, value: usize, recompute: bool, out: &mut Vec<String>) {
        let producer = self.g.values[value].producer;
        match &self.g.ops[producer].kind {
            GraphOpKind::Value(_) => {}
            GraphOpKind::Fork => {
                if let Some(&input) = self.g.ops[producer].operands.first() {
                    self.producers(input, recompute, out);
                }
            }
            _ => {
                if let Some(base) = self.task_base(producer) {
                    let phase = if recompute && self.is_recomputed(producer) { "recompute" } else { "fwd" };
                    out.push(format!("{base}.{phase}"));
                }
            }
        }
    }

    /// The tasks producing the gradient of `value` (read by `op`'s
    /// backward): the backward collective on its edge, else its readers'
    /// input-gradient tasks (a fork's through the fork's, or under tiling
    /// its readers').
    fn gradient_producers(&self, value: usize, out: &mut Vec<String>) {
        if let Some(exit) = self.exit_of(value).filter(|_| self.s.sequence_parallel) {
            out.push(format!("{exit}.agrad"));
            return;
        }
        if let Some(entry) = self.entry_name(value) {
            out.push(format!("{entry}.agrad"));
            return;
        }
        self.reader_gradients(value, out);
    }

    fn reader_gradients(&self, value: usize, out: &mut Vec<String>) {
        for &(reader, _) in &self.consumers[value] {
            match self.task_base(reader) {
                Some(base) => out.push(format!("{base}.agrad")),
                // A fork without a task (tiled entry): its readers'.
                None => {
                    for &r in &self.g.ops[reader].results {
                        self.reader_gradients(r, out);
                    }
                }
            }
        }
    }

    /// What each invocation depends on (indices of earlier invocations).
    pub(super) fn dependencies(&self, derivation: &BlockDerivation) -> Vec<Vec<usize>> {
        let index: HashMap<&str, usize> = derivation.invocations.iter().enumerate().map(|(i, v)| (v.name.as_str(), i)).collect();
        // The forward op (or collective) behind each source.
        let by_source: HashMap<String, usize> = (0..self.g.ops.len())
            .filter(|&op| self.g.ops[op].kind.is_forward())
            .filter_map(|op| self.task_base(op).map(|base| (base, op)))
            .collect();
        let entries: HashMap<&str, usize> = self.entries.iter().enumerate().map(|(i, e)| (e.name.as_str(), i)).collect();
        let exits: HashMap<&str, usize> = self.exits.iter().enumerate().map(|(i, x)| (x.name.as_str(), i)).collect();
        let mut out = Vec::with_capacity(derivation.invocations.len());
        for (i, inv) in derivation.invocations.iter().enumerate() {
            let mut names = Vec::new();
            let source = inv.source.as_str();
            if let Some(&e) = entries.get(source) {
                let entry = &self.entries[e];
                match inv.phase {
                    Phase::Forward | Phase::Recommunication => {
                        self.raw_producers(entry.value, inv.phase == Phase::Recommunication, &mut names)
                    }
                    _ => {
                        // The gradient of the gathered value: its readers'.
                        self.reader_gradients(entry.value, &mut names);
                    }
                }
            } else if let Some(&x) = exits.get(source) {
                let exit = &self.exits[x];
                let linear = self.task_base(exit.linear).unwrap_or_default();
                match inv.phase {
                    Phase::Forward => names.push(format!("{linear}.fwd")),
                    Phase::Recommunication => names.push(format!("{linear}.recompute")),
                    _ => self.reader_gradients(exit.value, &mut names),
                }
            } else if let Some(&op) = by_source.get(source) {
                let node = &self.g.ops[op];
                let activations = || node.operands.iter().copied().filter(|&v| !self.is_parameter(v));
                match inv.phase {
                    Phase::Forward => activations().for_each(|v| self.producers(v, false, &mut names)),
                    Phase::Recompute => activations().for_each(|v| self.producers(v, true, &mut names)),
                    Phase::ActivationGradient | Phase::WeightGradient => {
                        for &r in &node.results {
                            self.gradient_producers(r, &mut names);
                        }
                        // What the backward reads of the forward: the inputs
                        // and the op's own (kept or recomputed) forward.
                        activations().for_each(|v| self.producers(v, true, &mut names));
                        let own = if self.is_recomputed(op) { "recompute" } else { "fwd" };
                        names.push(format!("{source}.{own}"));
                    }
                    Phase::Optimizer => names.push(format!("{source}.wgrad")),
                    Phase::Recommunication | Phase::Prefill | Phase::Decode => {}
                }
            }
            // A redo that the strategy does not issue reads the forward's.
            let find = |n: &String| {
                index.get(n.as_str()).copied().or_else(|| {
                    let base = n.strip_suffix(".recomm").or_else(|| n.strip_suffix(".recompute"))?;
                    index.get(format!("{base}.fwd").as_str()).copied()
                })
            };
            let mut deps: Vec<usize> = names.iter().filter_map(find).filter(|&d| d < i).collect();
            deps.sort_unstable();
            deps.dedup();
            out.push(deps);
        }
        out
    }

    /// `value`'s shape on one rank: its split dimension divided by `tp`.
    pub(super) fn local_shape(&self, value: usize) -> Vec<u64> {
        let mut shape = self.g.values[value].shape.clone();
        let split = self.layout[value].map_or(super::Split::Whole, |l| l.split);
        let (dim, parts) = match split {
            super::Split::Whole => (None, 1),
            super::Split::Seq | super::Split::Heads => (Some(1), self.s.tp),
            super::Split::Last => (shape.len().checked_sub(1), self.s.tp),
            super::Split::KvGroups(groups) => (shape.len().checked_sub(1), groups),
        };
        if let Some(d) = dim.filter(|&d| d < shape.len()) {
            shape[d] /= parts;
        }
        shape
    }

    /// A parameter's shape on one rank: a column-parallel weight's columns
    /// and a row-parallel one's rows split, a bias split like its input.
    pub(super) fn parameter_shape(&self, op: usize, param: usize) -> Vec<u64> {
        let mut shape = self.g.values[param].shape.clone();
        let t = self.s.tp;
        match (self.modes.get(&op), &self.g.ops[op].kind) {
            (Some(Mode::Column { .. }), _) if shape.len() == 2 => shape[1] /= t,
            (Some(&Mode::Replicated { groups, .. }), _) if shape.len() == 2 => shape[1] /= groups,
            (Some(Mode::Row), _) if shape.len() == 2 => shape[0] /= t,
            (_, GraphOpKind::BiasAdd) => {
                let input = self.g.ops[op].operands[0];
                match self.layout[input].map(|l| l.split) {
                    Some(super::Split::Last) => shape[0] /= t,
                    Some(super::Split::KvGroups(groups)) => shape[0] /= groups,
                    _ => {}
                }
            }
            _ => {}
        }
        shape
    }

    /// The shape on one rank of each invocation's primary result: a forward
    /// (or recompute) task's output, an input-gradient task's gradient of
    /// the op's first input, a weight-gradient or optimizer task's first
    /// parameter; `None` for collectives and fused tiled linears.
    pub(super) fn output_shapes(&self, derivation: &BlockDerivation) -> Vec<Option<Vec<u64>>> {
        let by_id: HashMap<&str, usize> =
            (0..self.g.ops.len()).filter(|&op| self.g.ops[op].kind.is_forward()).map(|op| (self.id(op), op)).collect();
        derivation
            .invocations
            .iter()
            .map(|inv| {
                let &op = by_id.get(inv.source.as_str())?;
                let node = &self.g.ops[op];
                let param = || node.operands.iter().copied().find(|&v| self.is_parameter(v));
                match inv.phase {
                    Phase::Forward | Phase::Recompute => node.results.first().map(|&r| {
                        // A row-parallel linear writes whole partial sums
                        // (its exit splits them after).
                        if self.exits.iter().any(|x| x.value == r) {
                            self.g.values[r].shape.clone()
                        } else {
                            self.local_shape(r)
                        }
                    }),
                    Phase::ActivationGradient => {
                        // A fork's gradient has its result's (gathered) split.
                        let of = if node.kind == GraphOpKind::Fork { node.results.first() } else { node.operands.first() };
                        of.map(|&v| {
                            let mut shape = self.local_shape(v);
                            if matches!(self.modes.get(&op), Some(Mode::Column { .. } | Mode::Replicated { .. })) {
                                // A column-parallel linear's input gradient is
                                // a whole partial sum.
                                shape = self.g.values[v].shape.clone();
                            }
                            shape
                        })
                    }
                    Phase::WeightGradient | Phase::Optimizer => param().map(|p| self.parameter_shape(op, p)),
                    _ => None,
                }
            })
            .collect()
    }

    pub(super) fn is_parameter(&self, value: usize) -> bool {
        let producer = self.g.values[value].producer;
        self.g.ops[producer].kind == GraphOpKind::Value(crate::analysis::workload::graph::ValueRole::Parameter)
    }
}
