//! Evaluating the configurations of one block key: derive the block once,
//! price it once per TP tier, then compose the step for every interleaving,
//! PP / DP tier pair and DP overlap — the same functions
//! [`crate::analysis::estimate::estimate`] runs, so a configuration's numbers are
//! exactly those of the estimate of its spec.
//!
//! A configuration is pruned, in this order, when its network binding does
//! not fit the system (Calculon's `_check_network_assignments`), when
//! Blueprint's spec rules reject it, or when its memory per processor
//! (Calculon's stage-0 convention) exceeds the first memory tier, or what
//! is left of it with the memory kept free (`--headroom`), or its
//! offloaded state the second tier.
//!
//! For the memory reasons the search keeps the nearest miss, the pruned
//! configuration that came closest to fitting (least excess, then fastest,
//! then first): what more memory, or less headroom, would buy. The memory
//! does not depend on the step's times, so a configuration that misses by
//! more than the nearest miss so far is pruned without composing its times
//! (it cannot be the nearest; a validated system keeps every time finite).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use super::rank::{Candidate, TopK};
use super::space::{Config, KeySpace};
use crate::analysis::estimate::{
    block_tasks, compose_estimate, compose_estimate_with_memory, price_block, Estimate, EstimateError, EstimateOptions, Offload,
};
use crate::analysis::schedule::ProcessorMemory;
use crate::analysis::system::{NetworkBinding, NetworkBindingError, SystemProfile};
use crate::analysis::workload::{derive_training_block, BlockFacts, Datatype, ModelSpec, SpecError};

/// Why configurations were pruned: how many, the message of the first
/// (in the canonical order) and, for memory, the nearest miss.
#[derive(Debug, Clone, PartialEq)]
pub struct Pruned {
    pub count: u64,
    pub first_index: u64,
    pub example: String,
    pub nearest: Option<NearMiss>,
}

/// A configuration pruned for memory, with its estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct NearMiss {
    pub index: u64,
    pub config: Config,
    pub estimate: Estimate,
    /// Bytes per processor above the limit it missed.
    pub over_by_bytes: f64,
    /// The limit: the first memory tier, less the headroom.
    pub limit_bytes: f64,
}

impl NearMiss {
    /// Whether `self` is nearer than `other`: less excess, then a higher
    /// sample rate, then the canonical order (a total order, so merging
    /// in any order keeps the same one).
    #[must_use]
    pub fn nearer_than(&self, other: &Self) -> bool {
        self.over_by_bytes
            .total_cmp(&other.over_by_bytes)
            .then(other.estimate.sample_rate.total_cmp(&self.estimate.sample_rate))
            .then(self.index.cmp(&other.index))
            .is_lt()
    }
}

/// The nearer of two misses.
fn nearer(a: Option<NearMiss>, b: Option<NearMiss>) -> Option<NearMiss> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.nearer_than(&a) { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// The prune reason of a configuration above the first memory tier.
pub const MEMORY_TIER1: &str = "memory_tier1";
/// The prune reason of one within the tier but not its headroom.
pub const MEMORY_HEADROOM: &str = "memory_headroom";
/// Offloaded state above the second memory tier.
pub const MEMORY_TIER2: &str = "memory_tier2";
/// Offload with fewer than 3 blocks per processor (Calculon's rule).
pub const OFFLOAD_BLOCKS: &str = "offload_blocks";

/// A sampled configuration: its estimate, or why it has none.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub index: u64,
    pub config: Config,
    pub outcome: Result<Estimate, (&'static str, String)>,
}

/// What evaluating some keys gave.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Configurations looked at (evaluated or pruned).
    pub evaluated: u64,
    /// Configurations that fit (ranked).
    pub fit: u64,
    pub pruned: BTreeMap<&'static str, Pruned>,
    pub top: TopK,
    pub samples: Vec<Sample>,
    /// Fitting configurations under DP overlap whose Calculon DP-overlap
    /// figure differs from Blueprint's (recompute; see the notes).
    pub dp_overlap_differs: u64,
    /// Stopped early (interrupted).
    pub partial: bool,
}

impl Outcome {
    #[must_use]
    pub fn new(top: usize) -> Self {
        Self { top: TopK::new(top), ..Self::default() }
    }

    fn prune(&mut self, reason: &'static str, index: u64, count: u64, message: impl FnOnce() -> String) {
        self.evaluated += count;
        match self.pruned.get_mut(reason) {
            Some(p) => {
                p.count += count;
                if index < p.first_index {
                    p.first_index = index;
                    p.example = message();
                }
            }
            None => {
                self.pruned.insert(reason, Pruned { count, first_index: index, example: message(), nearest: None });
            }
        }
    }

    /// Prunes one configuration for memory, keeping the nearest miss.
    fn prune_memory(&mut self, reason: &'static str, miss: NearMiss, message: impl FnOnce() -> String) {
        let index = miss.index;
        self.prune(reason, index, 1, message);
        if let Some(p) = self.pruned.get_mut(reason) {
            p.nearest = nearer(p.nearest.take(), Some(miss));
        }
    }

    /// Adds `other` (any order of merging gives the same result).
    pub fn merge(&mut self, other: Self) {
        self.evaluated += other.evaluated;
        self.fit += other.fit;
        self.dp_overlap_differs += other.dp_overlap_differs;
        self.partial |= other.partial;
        for (reason, p) in other.pruned {
            match self.pruned.get_mut(reason) {
                Some(mine) => {
                    mine.count += p.count;
                    if p.first_index < mine.first_index {
                        mine.first_index = p.first_index;
                        mine.example = p.example;
                    }
                    mine.nearest = nearer(mine.nearest.take(), p.nearest);
                }
                None => {
                    self.pruned.insert(reason, p);
                }
            }
        }
        self.top.merge(other.top);
        self.samples.extend(other.samples);
    }
}

/// The prune reason of a configuration whose estimate is not finite: the
/// search fails with it instead of ranking ([`super::search`]).
pub const NOT_FINITE: &str = "non_finite_estimate";

fn tier1_message(need: f64, over: f64, capacity: f64) -> String {
    format!("needs {need} bytes per processor (Calculon's stage-0 convention), {over} more than the first memory tier's {capacity}")
}

fn tier2_message(tier2: f64, tier2_capacity: f64) -> String {
    format!("offloads {tier2} bytes per processor, {} more than the second memory tier's {tier2_capacity}", tier2 - tier2_capacity)
}

fn headroom_message(need: f64, capacity: f64, limit: f64) -> String {
    format!(
        "needs {need} bytes per processor (Calculon's stage-0 convention), within the first memory tier's {capacity} but {} more than the {limit} left with the headroom",
        need - limit
    )
}

/// A prune message, built only when it is the first of its reason.
type Message = Box<dyn FnOnce() -> String>;

/// A configuration that misses memory by more than the nearest miss so
/// far of its reason: the reason and its message, computed
/// from the memory alone (as [`compose_estimate`] computes it). `None`
/// when it fits, may be the nearest miss, or would fail otherwise (the
/// offload rule), so that its times must be composed.
fn farther_miss(
    cx: &Context,
    out: &Outcome,
    plain: &ProcessorMemory,
    block: &BlockFacts,
    spec: &crate::analysis::workload::TrainingSpec,
    options: &EstimateOptions,
) -> Option<(&'static str, Message)> {
    crate::analysis::estimate::check_forward_only(spec, options).ok()?;
    let (memory, tier2) = plain.offloaded(block, spec, options.offload, true);
    let need = memory.proc_mem_tier1_cap_req;
    let (capacity, tier2_capacity, limit) = (cx.system.mem1().capacity_bytes(), cx.system.mem2().capacity_bytes(), cx.memory_limit);
    let fits = need <= capacity && tier2 <= tier2_capacity;
    if fits && need <= limit {
        return None;
    }
    let (reason, over, message): (&'static str, f64, Message) = if need <= capacity && tier2 > tier2_capacity {
        (MEMORY_TIER2, tier2 - tier2_capacity, Box::new(move || tier2_message(tier2, tier2_capacity)))
    } else if !fits {
        (MEMORY_TIER1, need - capacity, Box::new(move || tier1_message(need, need - capacity, capacity)))
    } else {
        (MEMORY_HEADROOM, need - limit, Box::new(move || headroom_message(need, capacity, limit)))
    };
    let nearest = out.pruned.get(reason)?.nearest.as_ref()?;
    (over > nearest.over_by_bytes).then_some((reason, message))
}

/// The short name of a spec rule a configuration violates.
#[must_use]
pub fn spec_reason(error: &SpecError) -> &'static str {
    match error {
        SpecError::SequenceNotSplittable { .. } => "sequence_not_splittable",
        SpecError::MoreStagesThanBlocks { .. } => "more_stages_than_blocks",
        SpecError::InterleavingNotDivisor { .. } => "interleaving_not_divisor",
        SpecError::TooLarge { .. } => "too_large",
        _ => "spec_rule",
    }
}

fn binding_reason(error: &NetworkBindingError) -> &'static str {
    match error {
        NetworkBindingError::TierTooSmall { .. } => "network_tier_too_small",
        NetworkBindingError::TierNotFilled { .. } => "network_tier_not_filled",
        NetworkBindingError::TierOutOfRange { .. } => "network_tier_out_of_range",
    }
}

/// The fixed inputs of an evaluation.
pub struct Context<'a> {
    pub model: &'a ModelSpec,
    pub datatype: Datatype,
    pub system: &'a SystemProfile,
    /// Rank by Calculon's DP-overlap figure instead of Blueprint's.
    pub calculon_dp_overlap: bool,
    /// Canonical numbers of the configurations to sample, ascending.
    pub samples: &'a [u64],
    /// Memory per processor a configuration may need: the first tier less
    /// the headroom (the tier itself without one).
    pub memory_limit: f64,
    pub interrupt: Option<&'a AtomicBool>,
}

impl Context<'_> {
    fn interrupted(&self) -> bool {
        self.interrupt.is_some_and(|flag| flag.load(Ordering::Relaxed))
    }

    fn sampled(&self, index: u64) -> bool {
        !self.samples.is_empty() && self.samples.binary_search(&index).is_ok()
    }
}

/// What became of one configuration, for a [`Visit`]or.
#[derive(Debug, Clone, Copy)]
pub enum Verdict<'a> {
    /// Estimated, and it fits (ranked).
    Fits(&'a Estimate),
    /// Pruned for `reason` (a short name such as `memory_tier1`), with its
    /// estimate when it has one (the memory reasons).
    Pruned { reason: &'static str, estimate: Option<&'a Estimate> },
}

/// Sees every configuration of a key in the canonical order, as it is
/// evaluated (`blueprint-search --all`).
pub trait Visit {
    /// Whether the visitor lists what it sees: then every configuration is
    /// estimated (no shortcut prunes one without its times).
    const LISTS: bool = true;
    fn visit(&mut self, index: u64, config: &Config, verdict: Verdict<'_>);
}

/// The search without a listing: sees nothing (compiled away).
impl Visit for () {
    const LISTS: bool = false;
    #[inline(always)]
    fn visit(&mut self, _: u64, _: &Config, _: Verdict<'_>) {}
}

/// Evaluates the configurations of `space`, numbered from `offset`.
pub fn evaluate_key(cx: &Context, space: &KeySpace, offset: u64, out: &mut Outcome) {
    evaluate_key_with(cx, space, offset, out, &mut ());
}

/// [`evaluate_key`], showing `visit` every configuration in the canonical
/// order (not when interrupted: then the key stops where it is).
pub fn evaluate_key_with<V: Visit>(cx: &Context, space: &KeySpace, offset: u64, out: &mut Outcome, visit: &mut V) {
    if cx.interrupted() {
        out.partial = true;
        return;
    }
    let key = space.key;
    let first = Config {
        key,
        pipeline_interleaving: space.interleavings[0],
        networks: NetworkBinding { tp: 0, pp: 0, dp: 0 },
        data_par_overlap: false,
        offload: Offload::default(),
    };
    let mut spec = first.spec(cx.model, cx.datatype);
    let count = space.count();
    // A rule of the key itself prunes every configuration of it.
    let derivation = match derive_training_block(&spec) {
        Ok(d) => d,
        Err(error) => {
            out.prune(spec_reason(&error), offset, count, || error.to_string());
            for (i, config) in space.configs().enumerate() {
                visit.visit(offset + i as u64, &config, Verdict::Pruned { reason: spec_reason(&error), estimate: None });
            }
            return;
        }
    };
    let block = BlockFacts::from_derivation(&derivation, &spec);
    let tasks = block_tasks(&derivation);
    let overlap_any = space.overlaps.contains(&true);
    let per_tier = count / space.tp_nets.len() as u64;
    let mut index = offset;
    for (tier, &tp_net) in space.tp_nets.iter().enumerate() {
        let price_options = EstimateOptions {
            data_par_overlap: overlap_any,
            calculon_compat_dp_overlap: cx.calculon_dp_overlap,
            ..EstimateOptions::default()
        };
        let with_prefix = match price_block(&tasks, &spec, cx.system, tp_net, &price_options) {
            Ok(t) => t,
            Err(error) => {
                out.prune("estimate_error", index, per_tier, || error.to_string());
                let skip = tier * per_tier as usize;
                for (i, config) in space.configs().skip(skip).take(per_tier as usize).enumerate() {
                    visit.visit(index + i as u64, &config, Verdict::Pruned { reason: "estimate_error", estimate: None });
                }
                index += per_tier;
                continue;
            }
        };
        let mut plain = with_prefix;
        (plain.calculon_re_flops_time, plain.calculon_re_mem_time) = (None, None);
        for &v in space.interleavings.iter() {
            if cx.interrupted() {
                out.partial = true;
                return;
            }
            spec.mapping.pipeline_interleaving = v;
            let rule = spec.validate();
            // The memory of this interleaving before offload (the binding
            // and DP overlap do not change it).
            let plain_memory = rule.is_ok().then(|| ProcessorMemory::calculon(&block, &spec));
            for &pp_net in &space.pp_nets {
                for &dp_net in &space.dp_nets {
                    let networks = NetworkBinding { tp: tp_net, pp: pp_net, dp: dp_net };
                    let config = |data_par_overlap, offload| Config { key, pipeline_interleaving: v, networks, data_par_overlap, offload };
                    let n = space.per_binding();
                    if let Err(error) = networks.validate(cx.system, key.tp, key.pp, key.dp) {
                        out.prune(binding_reason(&error), index, n, || error.to_string());
                        for (i, (ov, off)) in space.binding_choices().enumerate() {
                            let reason = binding_reason(&error);
                            visit.visit(index + i as u64, &config(ov, off), Verdict::Pruned { reason, estimate: None });
                            if cx.sampled(index + i as u64) {
                                let outcome = Err((binding_reason(&error), error.to_string()));
                                out.samples.push(Sample { index: index + i as u64, config: config(ov, off), outcome });
                            }
                        }
                        index += n;
                        continue;
                    }
                    if let Err(error) = &rule {
                        out.prune(spec_reason(error), index, n, || error.to_string());
                        for (i, (ov, off)) in space.binding_choices().enumerate() {
                            let reason = spec_reason(error);
                            visit.visit(index + i as u64, &config(ov, off), Verdict::Pruned { reason, estimate: None });
                            if cx.sampled(index + i as u64) {
                                let outcome = Err((spec_reason(error), error.to_string()));
                                out.samples.push(Sample { index: index + i as u64, config: config(ov, off), outcome });
                            }
                        }
                        index += n;
                        continue;
                    }
                    // Without a memory miss yet there is nothing to be farther from.
                    // (A listing shows every configuration's estimate.)
                    let gate = plain_memory.as_ref().filter(|_| !V::LISTS && out.pruned.values().any(|p| p.nearest.is_some()));
                    for (data_par_overlap, offload) in space.binding_choices() {
                        let options = EstimateOptions { data_par_overlap, offload, ..price_options };
                        if let Some(plain) = gate.filter(|_| !cx.sampled(index)) {
                            if let Some((reason, message)) = farther_miss(cx, out, plain, &block, &spec, &options) {
                                out.prune(reason, index, 1, message);
                                index += 1;
                                continue;
                            }
                        }
                        let times = if data_par_overlap { &with_prefix } else { &plain };
                        let composed = match &plain_memory {
                            Some(plain) => compose_estimate_with_memory(times, &block, &spec, cx.system, &networks, &options, plain),
                            None => compose_estimate(times, &block, &spec, cx.system, &networks, &options),
                        };
                        match composed {
                            Err(error @ EstimateError::NotFinite { .. }) => {
                                visit.visit(
                                    index,
                                    &config(data_par_overlap, offload),
                                    Verdict::Pruned { reason: NOT_FINITE, estimate: None },
                                );
                                out.prune(NOT_FINITE, index, 1, || error.to_string());
                            }
                            Err(error @ EstimateError::Offload(_)) => {
                                let verdict = Verdict::Pruned { reason: OFFLOAD_BLOCKS, estimate: None };
                                visit.visit(index, &config(data_par_overlap, offload), verdict);
                                if cx.sampled(index) {
                                    let outcome = Err((OFFLOAD_BLOCKS, error.to_string()));
                                    out.samples.push(Sample { index, config: config(data_par_overlap, offload), outcome });
                                }
                                out.prune(OFFLOAD_BLOCKS, index, 1, || error.to_string());
                            }
                            Err(error) => {
                                let verdict = Verdict::Pruned { reason: "estimate_error", estimate: None };
                                visit.visit(index, &config(data_par_overlap, offload), verdict);
                                out.prune("estimate_error", index, 1, || error.to_string());
                            }
                            Ok(estimate) => {
                                if cx.sampled(index) {
                                    let config = config(data_par_overlap, offload);
                                    out.samples.push(Sample { index, config, outcome: Ok(estimate.clone()) });
                                }
                                let m = &estimate.memory;
                                let (need, fits, capacity, over) =
                                    (m.per_processor.proc_mem_tier1_cap_req, m.fits, m.capacity_bytes, m.over_by_bytes);
                                let (tier2, tier2_capacity) = (m.proc_mem_tier2_cap_req, m.tier2_capacity_bytes);
                                let limit = cx.memory_limit;
                                let verdict = if fits && need <= limit {
                                    Verdict::Fits(&estimate)
                                } else if need <= capacity && tier2 > tier2_capacity {
                                    Verdict::Pruned { reason: MEMORY_TIER2, estimate: Some(&estimate) }
                                } else if !fits {
                                    Verdict::Pruned { reason: MEMORY_TIER1, estimate: Some(&estimate) }
                                } else {
                                    Verdict::Pruned { reason: MEMORY_HEADROOM, estimate: Some(&estimate) }
                                };
                                visit.visit(index, &config(data_par_overlap, offload), verdict);
                                if fits && need <= limit {
                                    out.evaluated += 1;
                                    out.fit += 1;
                                    if estimate.dp_overlap.is_some_and(|f| f.calculon.is_some_and(|c| c != f.blueprint)) {
                                        out.dp_overlap_differs += 1;
                                    }
                                    if out.top.admits(estimate.sample_rate, index) {
                                        out.top.insert(Candidate { index, config: config(data_par_overlap, offload), estimate });
                                    }
                                } else if need <= capacity && tier2 > tier2_capacity {
                                    let miss = NearMiss {
                                        index,
                                        config: config(data_par_overlap, offload),
                                        estimate,
                                        over_by_bytes: tier2 - tier2_capacity,
                                        limit_bytes: tier2_capacity,
                                    };
                                    out.prune_memory(MEMORY_TIER2, miss, move || tier2_message(tier2, tier2_capacity));
                                } else if !fits {
                                    let miss = NearMiss {
                                        index,
                                        config: config(data_par_overlap, offload),
                                        estimate,
                                        over_by_bytes: over,
                                        limit_bytes: capacity,
                                    };
                                    out.prune_memory(MEMORY_TIER1, miss, move || tier1_message(need, over, capacity));
                                } else {
                                    let miss = NearMiss {
                                        index,
                                        config: config(data_par_overlap, offload),
                                        estimate,
                                        over_by_bytes: need - limit,
                                        limit_bytes: limit,
                                    };
                                    out.prune_memory(MEMORY_HEADROOM, miss, move || headroom_message(need, capacity, limit));
                                }
                            }
                        }
                        index += 1;
                    }
                }
            }
        }
    }
}
