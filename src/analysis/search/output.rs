//! The search's JSON report: the top K (every knob in Blueprint's spec
//! field names, the network binding, the estimate options, `sample_rate`,
//! `total_time`, `timing_seconds`, `per_processor`, `mfu`), optional
//! samples, the totals with the nearest miss of each memory reason, and
//! the notes. [`super::table`] renders it for people.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Candidate, Config, Headroom, NearMiss, SearchOptions, SearchResult};
use crate::analysis::estimate::{DpOverlapFigures, Estimate, TimingSeconds};
use crate::analysis::schedule::ProcessorMemory;
use crate::analysis::system::{datatype_name, NetworkBinding, SystemProfile};
use crate::analysis::workload::{
    derive_training_block, BlockFacts, Datatype, ModelSpec, Recompute, TpComm, TpOverlap, TrainingMappingSpec, TrainingSpec,
    TrainingWorkloadSpec,
};

/// How MFU is counted, for the report and the table.
pub const MFU_COUNTING: &str = "MFU = model FLOPs per step / (step time × processors × the matrix unit's peak for the datatype); model FLOPs = the decoder blocks' forward, activation-gradient and weight-gradient operations (matmul and other ops, as the block derivation counts them for the plan), derived at TP 1 without recompute, times blocks and samples; embedding and LM head are not counted (the block is the model, as in Calculon)";

/// The model FLOPs of a sample and the peak they are measured against.
#[derive(Debug, Clone, Serialize)]
pub struct ModelFlops {
    /// Per sample, by fused activation (`[unfused, fused]`); `None` where the
    /// TP-1 block does not derive.
    #[serde(skip)]
    per_sample: [Option<f64>; 2],
    /// Per sample with the fused activation of the best configuration.
    pub per_sample_flops: Option<f64>,
    /// The matrix unit's peak for the datatype, per processor.
    pub peak_flops_per_processor: f64,
    pub counting: &'static str,
}

impl ModelFlops {
    /// Derives the TP-1 block of `model` (one sample, no recompute).
    #[must_use]
    pub fn of(model: &ModelSpec, system: &SystemProfile, datatype: Datatype) -> Self {
        let per_sample = [false, true].map(|fused| {
            let spec = TrainingSpec {
                name: None,
                model: model.clone(),
                workload: TrainingWorkloadSpec { global_batch: 1, microbatch: 1, datatype, optimizer: None },
                mapping: TrainingMappingSpec {
                    tp: 1,
                    pp: 1,
                    dp: 1,
                    pipeline_interleaving: 1,
                    recompute: Recompute::None,
                    tp_comm: TpComm::Ar,
                    seq_par_ag_redo: false,
                    fused_activation: fused,
                    optimizer_sharding: false,
                    tp_overlap: TpOverlap::None,
                    pipeline_schedule: None,
                },
            };
            let derivation = derive_training_block(&spec).ok()?;
            let facts = BlockFacts::from_derivation(&derivation, &spec);
            let block = facts.block_fw_flops as f64 + facts.block_agrad_flops as f64 + facts.block_wgrad_flops as f64;
            Some(block * model.blocks as f64)
        });
        let peak = system.matrix().rate(datatype).map_or(0.0, |r| r.tflops() * 1e12);
        Self { per_sample, per_sample_flops: None, peak_flops_per_processor: peak, counting: MFU_COUNTING }
    }

    /// The model FLOPs utilization of `config` taking `step_seconds`.
    #[must_use]
    pub fn mfu(&self, config: &Config, step_seconds: f64) -> Option<f64> {
        let k = &config.key;
        let per_sample = self.per_sample[usize::from(k.fused_activation)]?;
        let procs = (k.tp * k.pp * k.dp) as f64;
        let mfu = per_sample * k.global_batch as f64 / (step_seconds * procs * self.peak_flops_per_processor);
        mfu.is_finite().then_some(mfu)
    }
}

/// The estimate options of a configuration (`blueprint-translate
/// --estimate`'s; TP overlap is the mapping's `tp_overlap`).
#[derive(Debug, Clone, Serialize)]
pub struct EstimateOptionsOut {
    pub data_par_overlap: bool,
    pub weight_offload: bool,
    pub activations_offload: bool,
    pub optimizer_offload: bool,
}

/// One reported configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// Canonical configuration number (the tie-breaker).
    pub index: u64,
    pub workload: TrainingWorkloadSpec,
    pub mapping: TrainingMappingSpec,
    pub networks: NetworkBinding,
    pub estimate_options: EstimateOptionsOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_time: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing_seconds: Option<TimingSeconds>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_processor: Option<ProcessorMemory>,
    /// Model FLOPs utilization (see `model_flops.counting`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mfu: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fits: Option<bool>,
    /// Both DP-overlap figures when they differ (recompute under DP overlap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dp_overlap: Option<DpOverlapFigures>,
    /// Why a sampled configuration has no estimate or was pruned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pruned: Option<String>,
    /// The `blueprint-translate --estimate` options that price its plan.
    pub estimate_args: String,
}

impl Entry {
    fn new(
        index: u64,
        config: &Config,
        model: &ModelSpec,
        options: &SearchOptions,
        flops: &ModelFlops,
        estimate: Option<&Estimate>,
    ) -> Self {
        let spec = config.spec(model, options.datatype);
        let n = config.networks;
        let mut args = format!("--tp-net {} --pp-net {} --dp-net {}", n.tp, n.pp, n.dp);
        if config.data_par_overlap {
            args.push_str(" --dp-overlap");
        }
        for (on, flag) in [
            (config.offload.weights, " --weight-offload"),
            (config.offload.activations, " --activations-offload"),
            (config.offload.optimizer, " --optimizer-offload"),
        ] {
            if on {
                args.push_str(flag);
            }
        }
        Self {
            index,
            workload: spec.workload,
            mapping: spec.mapping,
            networks: n,
            estimate_options: EstimateOptionsOut {
                data_par_overlap: config.data_par_overlap,
                weight_offload: config.offload.weights,
                activations_offload: config.offload.activations,
                optimizer_offload: config.offload.optimizer,
            },
            sample_rate: estimate.map(|e| e.sample_rate),
            total_time: estimate.map(|e| e.timing_seconds.total_time),
            timing_seconds: estimate.map(|e| e.timing_seconds),
            per_processor: estimate.map(|e| e.memory.per_processor),
            mfu: estimate.and_then(|e| flops.mfu(config, e.timing_seconds.total_time)),
            fits: None,
            dp_overlap: estimate.and_then(|e| e.dp_overlap).filter(|f| f.calculon.is_some_and(|c| c != f.blueprint)),
            pruned: None,
            estimate_args: args,
        }
    }

    fn of(c: &Candidate, model: &ModelSpec, options: &SearchOptions, flops: &ModelFlops) -> Self {
        Self::new(c.index, &c.config, model, options, flops, Some(&c.estimate))
    }
}

/// Configurations pruned for one reason.
#[derive(Debug, Clone, Serialize)]
pub struct PrunedOut {
    pub count: u64,
    /// The message of the first such configuration in the canonical order.
    pub example: String,
    /// For memory: the configuration that came closest to fitting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nearest: Option<NearestOut>,
}

/// The nearest miss of a memory reason.
#[derive(Debug, Clone, Serialize)]
pub struct NearestOut {
    /// Bytes per processor above the limit.
    pub over_by_bytes: f64,
    /// The limit it missed: the first memory tier, less the headroom.
    pub limit_bytes: f64,
    pub configuration: Entry,
}

#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// Configurations in the space (Calculon's `configurations_evaluated`
    /// for the same space).
    pub configurations: u64,
    /// Configurations looked at: evaluated or pruned (less than
    /// `configurations` only when interrupted).
    pub evaluated: u64,
    /// Configurations that fit and were ranked.
    pub fit: u64,
    pub pruned: BTreeMap<&'static str, PrunedOut>,
    pub pruned_total: u64,
    /// Block keys: one block derivation each.
    pub block_keys: u64,
    /// What Calculon would count for the same model, system and options
    /// (with offload on a system with a second memory tier, which
    /// `--no-offload` leaves out of this space).
    pub calculon_configurations: u64,
    /// Fitting DP-overlap configurations whose Calculon figure differs.
    pub dp_overlap_differs_from_calculon: u64,
    pub interrupted: bool,
    pub threads: usize,
    pub wall_seconds: f64,
    pub configurations_per_second: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Space {
    pub procs: u64,
    pub max_batch: u64,
    pub datatype: &'static str,
    pub dp_overlap: bool,
    pub tp_overlap: bool,
    pub fused_activation: Vec<bool>,
    pub offload: bool,
    pub ranking: &'static str,
    /// Memory per processor kept free of the first tier, bytes.
    pub headroom_bytes: f64,
    /// What a configuration may need: the first tier less the headroom.
    pub memory_limit_bytes: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub model: ModelSpec,
    pub system: String,
    pub space: Space,
    pub top: Vec<Entry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sample: Vec<Entry>,
    pub totals: Totals,
    pub model_flops: ModelFlops,
    pub notes: Vec<String>,
}

/// The notes every report carries: where the search, or the estimate it
/// runs, deliberately differs from Calculon's `llm-optimal-execution`.
#[must_use]
pub fn notes(options: &SearchOptions, result: &SearchResult, system_has_mem2: bool) -> Vec<String> {
    let mut notes = vec![
        format!(
            "DP overlap with recompute: Blueprint's exposed DP time uses the recomputed layers' own flop and memory times; Calculon adds a running prefix sum of the forward times for every recomputed layer (a defect), so its figure is larger. {} (entries where the two differ show both under dp_overlap; {} fitting configurations differ)",
            if options.calculon_dp_overlap { "Ranked by Calculon's figure (--calculon-dp-overlap)" } else { "Ranked by Blueprint's figure" },
            result.outcome.dp_overlap_differs
        ),
        "Memory per processor is Calculon's stage-0 convention (every stage taken as equal); a configuration that exceeds the first memory tier is pruned (memory_tier1), one within it but above what --headroom leaves is pruned too (memory_headroom); each memory reason names its nearest miss: least excess, then fastest, then first".to_string(),
        "Interleaved 1F1B with a microbatch count PP does not divide is evaluated as Calculon evaluates it (the missing microbatches leave bubbles in every chunk but the last); PP is explored where it divides the blocks, as Calculon's search does (the estimate also takes uneven pipelines)".to_string(),
        "Ties in sample_rate are broken by the canonical configuration number (index): TP, PP, microbatch, recompute (none, attn_only, full), optimizer sharding (off, on), tp_comm (ar, p2p_rs_ag, rs_ag), seq_par_ag_redo (off, on), fused activation, TP overlap (none, ring, pipe), TP tier, interleaving, PP tier, DP tier, DP overlap (off, on), weight / activation / optimizer offload (off, on), each ascending".to_string(),
    ];
    if system_has_mem2 && options.offload {
        notes.push("The system has a second memory tier: weight, activation (not under full recompute) and optimizer offload are explored as Calculon does (estimate options: --weight-offload, --activations-offload, --optimizer-offload); offload needs 3 blocks per processor (offload_blocks) and the second tier's capacity (memory_tier2)".to_string());
    } else if system_has_mem2 {
        notes.push(format!(
            "The system has a second memory tier, but offload is not explored (--no-offload): Calculon would count {} configurations (totals.calculon_configurations)",
            result.calculon_configurations
        ));
    }
    if result.outcome.partial {
        notes.push("Interrupted: the top configurations are the best of those evaluated so far".to_string());
    }
    notes
}

/// The report of `result`.
#[must_use]
pub fn report(model: &ModelSpec, system_path: &str, system: &SystemProfile, options: &SearchOptions, result: &SearchResult) -> Report {
    let o = &result.outcome;
    let mut flops = ModelFlops::of(model, system, options.datatype);
    flops.per_sample_flops = o.top.best().first().and_then(|c| flops.per_sample[usize::from(c.config.key.fused_activation)]);
    let top = o.top.best().iter().map(|c| Entry::of(c, model, options, &flops)).collect();
    let sample = o
        .samples
        .iter()
        .map(|s| match &s.outcome {
            Ok(e) => Entry { fits: Some(e.memory.fits), ..Entry::new(s.index, &s.config, model, options, &flops, Some(e)) },
            Err((reason, message)) => {
                Entry { pruned: Some(format!("{reason}: {message}")), ..Entry::new(s.index, &s.config, model, options, &flops, None) }
            }
        })
        .collect();
    let nearest = |miss: &NearMiss| NearestOut {
        over_by_bytes: miss.over_by_bytes,
        limit_bytes: miss.limit_bytes,
        configuration: Entry::new(miss.index, &miss.config, model, options, &flops, Some(&miss.estimate)),
    };
    let wall = result.wall.as_secs_f64();
    let totals = Totals {
        configurations: result.configurations,
        evaluated: o.evaluated,
        fit: o.fit,
        pruned: o
            .pruned
            .iter()
            .map(|(k, p)| (*k, PrunedOut { count: p.count, example: p.example.clone(), nearest: p.nearest.as_ref().map(nearest) }))
            .collect(),
        pruned_total: o.pruned.values().map(|p| p.count).sum(),
        block_keys: result.block_keys,
        calculon_configurations: result.calculon_configurations,
        dp_overlap_differs_from_calculon: o.dp_overlap_differs,
        interrupted: o.partial,
        threads: result.threads,
        wall_seconds: wall,
        configurations_per_second: if wall > 0.0 { o.evaluated as f64 / wall } else { 0.0 },
    };
    let capacity = system.mem1().capacity_bytes();
    let headroom_bytes = options.headroom.map_or(0.0, |h: Headroom| h.bytes(capacity));
    Report {
        model: model.clone(),
        system: system_path.to_string(),
        space: Space {
            procs: options.procs,
            max_batch: options.max_batch,
            datatype: datatype_name(options.datatype),
            dp_overlap: options.dp_overlap,
            tp_overlap: options.tp_overlap,
            fused_activation: options.fused_activation.clone(),
            offload: options.offload && system.mem2().capacity_bytes() > 0.0,
            ranking: "sample_rate descending, then index ascending",
            headroom_bytes,
            memory_limit_bytes: capacity - headroom_bytes,
        },
        top,
        sample,
        totals,
        model_flops: flops,
        notes: notes(options, result, system.mem2().gib() > 0.0),
    }
}
