//! Strategy search: the fastest way to train a model on N processors of a
//! system, and whether it fits — Calculon's `llm-optimal-execution` space
//! ([`space`]) evaluated with Blueprint's plain-Rust algebra, schedule and
//! estimate ([`evaluate`]), never building MLIR per configuration, ranked
//! by sample rate with a documented total order ([`rank`]) and reported as
//! JSON ([`output`]).
//!
//! ```text
//! Space::keys ──(rayon, one task per block key)──> evaluate_key
//!     derive the block once ─> price it once per TP tier ─> compose per
//!     (interleaving, PP tier, DP tier, DP overlap) ─> prune or rank
//! Outcome::merge (order-independent) ─> Report
//! ```
//!
//! No MLIR here: `blueprint-search --emit-plan` runs the best configuration
//! through the import → distribute → plan pipeline in [`crate::tools::search`].

pub mod evaluate;
pub mod listing;
pub mod output;
pub mod rank;
pub mod space;
pub mod table;
#[cfg(test)]
mod tests;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use thiserror::Error;

pub use evaluate::{NearMiss, Outcome, Pruned, Sample, MEMORY_HEADROOM, MEMORY_TIER1};
pub use rank::{Candidate, TopK};
pub use space::{BlockKey, Config, KeySpace, Space};

use crate::analysis::system::{datatype_name, SystemProfile};
use crate::analysis::workload::{Datatype, ModelSpec, MAX_WORLD_SIZE};

/// What to search.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    pub procs: u64,
    pub max_batch: u64,
    pub datatype: Datatype,
    /// Configurations to report.
    pub top: usize,
    /// Explore DP overlap (on unless `--no-dp-overlap`).
    pub dp_overlap: bool,
    /// Explore TP overlap ring / pipe (on unless `--no-tp-overlap`).
    pub tp_overlap: bool,
    /// Fused-activation choices (Calculon's default: fused only).
    pub fused_activation: Vec<bool>,
    /// Rank by Calculon's DP-overlap figure (with its recompute defect).
    pub calculon_dp_overlap: bool,
    /// Also report this many configurations spread evenly over the
    /// canonical order (for checking against the MLIR pipeline).
    pub samples: u64,
    /// Worker threads; `None` for every core.
    pub threads: Option<usize>,
    /// Memory per processor kept free of the first tier (`--headroom`).
    pub headroom: Option<Headroom>,
    /// Explore offload on a system with a second memory tier (on unless
    /// `--no-offload`).
    pub offload: bool,
}

/// Memory kept free: a size, or a share of the first memory tier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Headroom {
    Gib(f64),
    /// A fraction in [0, 1).
    Fraction(f64),
}

impl Headroom {
    /// The bytes kept free of a tier of `capacity_bytes`.
    #[must_use]
    pub fn bytes(self, capacity_bytes: f64) -> f64 {
        match self {
            Self::Gib(gib) => gib * 1_073_741_824.0,
            Self::Fraction(f) => f * capacity_bytes,
        }
    }
}

/// Largest `--max-batch`: 2^24 sequences, far beyond any training batch
/// (GPT-3's was 1,536). The microbatch choices are the divisors of each
/// local batch, so the batch bounds the block keys per (TP, PP).
pub const MAX_SEARCH_BATCH: u64 = 1 << 24;
/// Most configurations `--top` reports (each insertion into the ranking
/// costs up to K).
pub const MAX_TOP: usize = 1000;
/// Most configurations `--sample` reports.
pub const MAX_SAMPLES: u64 = 10_000;
/// Most worker threads `--threads` starts.
pub const MAX_THREADS: usize = 1024;

/// Why a search cannot run.
#[derive(Debug, Error)]
pub enum SearchError {
    #[error("--procs must be positive")]
    NoProcessors,
    #[error("--procs {0} is more than the {MAX_WORLD_SIZE} (2^24) processors Blueprint plans for (blueprint-translate's limit on mapping.tp × mapping.pp × mapping.dp)")]
    TooManyProcessors(u64),
    #[error("--max-batch must be positive")]
    NoBatch,
    #[error("--max-batch {0} is more than the {MAX_SEARCH_BATCH} (2^24) sequences the search explores")]
    BatchTooLarge(u64),
    #[error("--top must be positive")]
    NoTop,
    #[error("--top {0} is more than the {MAX_TOP} configurations the search reports")]
    TopTooLarge(usize),
    #[error("--sample {0} is more than the {MAX_SAMPLES} configurations the search samples")]
    TooManySamples(u64),
    #[error("--threads {0} is more than the {MAX_THREADS} worker threads the search starts")]
    TooManyThreads(usize),
    #[error("{0}")]
    NotFinite(String),
    #[error("the system states no {unit} throughput for {datatype} ({unit}.{datatype} is missing)")]
    MissingDatatype { unit: &'static str, datatype: &'static str },
    #[error("cannot start {threads} worker threads: {reason}")]
    Threads { threads: usize, reason: String },
    #[error("--headroom must be a finite size in GiB at least 0, or a percentage from 0 to below 100")]
    BadHeadroom,
    #[error("--headroom keeps {headroom_gib} GiB free, all of the first memory tier's {capacity_gib} GiB: no configuration could fit")]
    HeadroomTooLarge { headroom_gib: f64, capacity_gib: f64 },
    #[error("cannot write the listing: {0}")]
    Listing(std::io::Error),
}

/// Where `--all` writes every configuration, one line each, in the
/// canonical order, as the search evaluates them ([`listing`]).
pub struct Listing<'a> {
    pub format: listing::ListingFormat,
    pub out: &'a mut dyn std::io::Write,
}

/// Configurations evaluated between two writes of the listing (its lines
/// are held in memory meanwhile, about 400 bytes each).
pub const LISTING_CHUNK: u64 = 1 << 15;

/// How a caller follows and stops a search.
#[derive(Default, Clone, Copy)]
pub struct Control<'a> {
    /// Set to stop: the search returns what it found so far.
    pub interrupt: Option<&'a AtomicBool>,
    /// Called with the number of configurations done after each block key.
    pub progress: Option<&'a (dyn Fn(u64) + Sync)>,
    /// Called once, before evaluating, with the configurations in the space.
    pub total: Option<&'a (dyn Fn(u64) + Sync)>,
}

/// A finished (or interrupted) search.
#[derive(Debug, Clone)]
pub struct SearchResult {
    /// Configurations in the space.
    pub configurations: u64,
    /// Block keys (one derivation each).
    pub block_keys: u64,
    /// What Calculon's `llm-optimal-execution` would count on the same
    /// model, system and options (it also counts offload configurations on
    /// a system with a second memory tier, which Blueprint does not model).
    pub calculon_configurations: u64,
    pub outcome: Outcome,
    pub wall: Duration,
    pub threads: usize,
}

impl SearchResult {
    /// The ranked configurations.
    #[must_use]
    pub fn top(&self) -> &[Candidate] {
        self.outcome.top.best()
    }
}

/// Evaluates `keys` in chunks of about [`LISTING_CHUNK`] configurations,
/// each chunk in parallel with its lines kept per key, and writes each
/// chunk's lines in the canonical order on the calling thread while the
/// pool evaluates the next one.
#[allow(clippy::too_many_arguments)]
fn list(
    pool: &rayon::ThreadPool,
    cx: &evaluate::Context,
    keys: &[KeySpace],
    offsets: &[u64],
    top: usize,
    control: Control,
    flops: &output::ModelFlops,
    listing: Listing,
) -> Result<Outcome, SearchError> {
    let Listing { format, out } = listing;
    out.write_all(listing::header(format).as_bytes()).map_err(SearchError::Listing)?;
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < keys.len() {
        let mut end = start;
        let mut configurations = 0;
        while end < keys.len() && (end == start || configurations + keys[end].count() <= LISTING_CHUNK) {
            configurations += keys[end].count();
            end += 1;
        }
        chunks.push(start..end);
        start = end;
    }
    // Each split of the chunk (a run of consecutive keys) fills one
    // outcome and one buffer; `collect` keeps the splits in order.
    let evaluate = |range: std::ops::Range<usize>| -> Vec<(Outcome, String)> {
        keys[range.clone()]
            .par_iter()
            .zip(&offsets[range])
            .fold(
                || (Outcome::new(top), listing::LineWriter::new(format, flops, 0)),
                |(mut out, mut lines), (key, &offset)| {
                    evaluate::evaluate_key_with(cx, key, offset, &mut out, &mut lines);
                    if let Some(progress) = control.progress {
                        progress(key.count());
                    }
                    (out, lines)
                },
            )
            .map(|(out, lines)| (out, lines.buffer))
            .collect()
    };
    let mut outcome = Outcome::new(top);
    // Writes a chunk's lines and adds its outcomes.
    let mut take = |chunk: Vec<(Outcome, String)>, outcome: &mut Outcome| -> std::io::Result<()> {
        for (key_outcome, lines) in chunk {
            out.write_all(lines.as_bytes())?;
            outcome.merge(key_outcome);
        }
        Ok(())
    };
    let mut ranges = chunks.into_iter();
    let mut pending = match ranges.next() {
        Some(range) => pool.install(|| evaluate(range)),
        None => Vec::new(),
    };
    for range in ranges {
        let mut next = None;
        let written = pool.in_place_scope(|scope| {
            scope.spawn(|_| next = Some(evaluate(range)));
            take(std::mem::take(&mut pending), &mut outcome)
        });
        written.map_err(SearchError::Listing)?;
        pending = next.unwrap_or_default();
        if outcome.partial {
            break;
        }
    }
    take(pending, &mut outcome).map_err(SearchError::Listing)?;
    out.flush().map_err(SearchError::Listing)?;
    Ok(outcome)
}

/// The canonical numbers of `samples` configurations spread evenly over
/// `total`.
#[must_use]
pub fn sample_indices(total: u64, samples: u64) -> Vec<u64> {
    let n = samples.min(total);
    let mut v: Vec<u64> = (0..n).map(|j| (u128::from(j) * u128::from(total) / u128::from(n)) as u64).collect();
    v.dedup();
    v
}

/// Runs the search.
///
/// # Errors
/// A zero count, a datatype the system does not rate, or a thread pool
/// that cannot start.
pub fn search(model: &ModelSpec, system: &SystemProfile, options: &SearchOptions, control: Control) -> Result<SearchResult, SearchError> {
    search_with(model, system, options, control, None)
}

/// [`search`], also writing every configuration to `listing`: the
/// header first, then one line per configuration in the canonical order,
/// written chunk by chunk while the search runs (never the whole space in
/// memory). An interrupted search leaves the listing short.
///
/// # Errors
/// As [`search`], and [`SearchError::Listing`] when a write fails.
pub fn search_with(
    model: &ModelSpec,
    system: &SystemProfile,
    options: &SearchOptions,
    control: Control,
    listing: Option<Listing>,
) -> Result<SearchResult, SearchError> {
    if options.procs == 0 {
        return Err(SearchError::NoProcessors);
    }
    if options.procs > MAX_WORLD_SIZE {
        return Err(SearchError::TooManyProcessors(options.procs));
    }
    if options.max_batch == 0 {
        return Err(SearchError::NoBatch);
    }
    if options.max_batch > MAX_SEARCH_BATCH {
        return Err(SearchError::BatchTooLarge(options.max_batch));
    }
    if options.top == 0 {
        return Err(SearchError::NoTop);
    }
    if options.top > MAX_TOP {
        return Err(SearchError::TopTooLarge(options.top));
    }
    if options.samples > MAX_SAMPLES {
        return Err(SearchError::TooManySamples(options.samples));
    }
    if let Some(threads) = options.threads.filter(|t| *t > MAX_THREADS) {
        return Err(SearchError::TooManyThreads(threads));
    }
    let capacity = system.mem1().capacity_bytes();
    let memory_limit = match options.headroom {
        None => capacity,
        Some(h) => {
            let valid = match h {
                Headroom::Gib(g) => g.is_finite() && g >= 0.0,
                Headroom::Fraction(f) => (0.0..1.0).contains(&f),
            };
            if !valid {
                return Err(SearchError::BadHeadroom);
            }
            let kept = h.bytes(capacity);
            if kept >= capacity {
                return Err(SearchError::HeadroomTooLarge { headroom_gib: kept / 1_073_741_824.0, capacity_gib: system.mem1().gib() });
            }
            capacity - kept
        }
    };
    let datatype = datatype_name(options.datatype);
    if system.matrix().rate(options.datatype).is_none() {
        return Err(SearchError::MissingDatatype { unit: "matrix", datatype });
    }
    if system.vector().rate(options.datatype).is_none() {
        return Err(SearchError::MissingDatatype { unit: "vector", datatype });
    }
    let start = Instant::now();
    let space = Space {
        model: ModelSpec { name: None, ..model.clone() },
        procs: options.procs,
        max_batch: options.max_batch,
        networks: system.networks().len(),
        dp_overlap: options.dp_overlap,
        fused_activation: options.fused_activation.clone(),
        tp_overlap: options.tp_overlap,
        offload: options.offload && system.mem2().capacity_bytes() > 0.0,
    };
    let keys = space.keys();
    let mut offsets = Vec::with_capacity(keys.len());
    let mut total = 0u64;
    for k in &keys {
        offsets.push(total);
        total += k.count();
    }
    if let Some(announce) = control.total {
        announce(total);
    }
    let has_mem2 = system.mem2().capacity_bytes() > 0.0;
    let calculon_configurations = keys.iter().map(|k| k.calculon_count(has_mem2)).sum();
    let samples = sample_indices(total, options.samples);
    let cx = evaluate::Context {
        model: &space.model,
        datatype: options.datatype,
        system,
        calculon_dp_overlap: options.calculon_dp_overlap,
        samples: &samples,
        memory_limit,
        interrupt: control.interrupt,
    };
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(threads) = options.threads {
        builder = builder.num_threads(threads);
    }
    let pool = builder.build().map_err(|e| SearchError::Threads { threads: options.threads.unwrap_or(0), reason: e.to_string() })?;
    let threads = pool.current_num_threads();
    let top = options.top;
    let mut outcome = match listing {
        Some(listing) => {
            let flops = output::ModelFlops::of(model, system, options.datatype);
            list(&pool, &cx, &keys, &offsets, top, control, &flops, listing)?
        }
        None => pool.install(|| {
            keys.par_iter()
                .zip(offsets.par_iter())
                .fold(
                    || Outcome::new(top),
                    |mut out, (key, &offset)| {
                        evaluate::evaluate_key(&cx, key, offset, &mut out);
                        if let Some(progress) = control.progress {
                            progress(key.count());
                        }
                        out
                    },
                )
                .reduce(
                    || Outcome::new(top),
                    |mut a, b| {
                        a.merge(b);
                        a
                    },
                )
        }),
    };
    if let Some(first) = outcome.pruned.get(evaluate::NOT_FINITE) {
        return Err(SearchError::NotFinite(format!("configuration {}: {}", first.first_index, first.example)));
    }
    outcome.samples.sort_by_key(|s| s.index);
    Ok(SearchResult {
        configurations: total,
        block_keys: keys.len() as u64,
        calculon_configurations,
        outcome,
        wall: start.elapsed(),
        threads,
    })
}
