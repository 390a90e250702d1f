//! System profiles: Calculon's system JSON files (`systems/*.json`) read as
//! they are, validated, and the rate lookups an estimate needs.
//!
//! A file states a `matrix` and a `vector` unit (peak `tflops` per datatype
//! with a `gflops_efficiency` table), two memory tiers (`mem1`, `mem2`:
//! `GiB`, `GBps`, `MB_efficiency`), the `processing_mode` (`no_overlap`:
//! compute + memory time; `roofline`: the larger) and the network tiers.
//! An efficiency table is a list of `[threshold, efficiency]` rows with
//! descending thresholds ending at 0; an operation of size `x` gets the
//! efficiency of the first row whose threshold (GFLOP · 1e9, MB · 1e6) is
//! ≤ `x`, as in Calculon (calculon-ai/calculon @ caa4b11, `processor.py`,
//! `memory.py`, `network.py`). The rates are computed in Calculon's
//! evaluation order so times agree with it to the last bits.
//!
//! A [`NetworkBinding`] says which tier the TP, PP and DP groups use; it is
//! an estimate input, never part of a plan, and is checked against the
//! tiers' sizes the way Calculon's `_check_network_assignments` does.
//!
//! Every figure must be finite and lie within the physical bounds of
//! [`bounds`] (each orders of magnitude around any machine built), which
//! keep every time and capacity an estimate derives from the file finite:
//! an extreme value is an error naming its field, never an overflowing
//! estimate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::analysis::workload::Datatype;

/// The physical bounds of a system file's figures (per processor). Each is
/// far beyond any machine built, and together they keep every derived
/// figure finite: a task's work and bytes are below 2^64 (the spec's
/// bounds), so its time is below 2^64 / (1 FLOP/s) ≈ 1.8e19 s even at the
/// slowest rate times the lowest efficiency, and sums over blocks and
/// microbatches (each below 2^53) stay below 1e52, far from `f64`'s 1.8e308.
pub mod bounds {
    /// Peak compute of a unit for a datatype, TFLOP/s: 1 MFLOP/s .. 1 EFLOP/s.
    pub const TFLOPS: (f64, f64) = (1e-6, 1e6);
    /// Memory and network bandwidth, GB/s: 1 kB/s .. 1 EB/s.
    pub const GBPS: (f64, f64) = (1e-6, 1e9);
    /// Memory capacity of a tier, GiB: 0 (no tier) .. 1e12 GiB. Calculon's
    /// `a100_80e` states 8e10 GiB to mean memory without limit.
    pub const GIB_MAX: f64 = 1e12;
    /// Lowest efficiency of a table row or a network: a millionth of peak.
    pub const EFFICIENCY_MIN: f64 = 1e-6;
    /// Largest threshold of an efficiency table, GFLOP or MB (1e21 FLOP, 1e18 bytes).
    pub const THRESHOLD_MAX: f64 = 1e12;
    /// Network latency, seconds: 0 .. one hour.
    pub const LATENCY_MAX: f64 = 3600.0;
    /// A network op's factors `[a, b]` (`S·a·(1 + b/n)` bytes on the wire):
    /// `a` in 1e-3 .. 1e3; `b` in -1 .. 1e3, so no collective moves
    /// fewer than zero bytes (`n ≥ 1`).
    pub const OP_SCALAR: (f64, f64) = (1e-3, 1e3);
    pub const OP_OFFSET: (f64, f64) = (-1.0, 1e3);
    /// Network tiers: more levels than any machine's hierarchy (link, node,
    /// rack, pod, cluster). The search enumerates every assignment of the
    /// TP, PP and DP groups to tiers, `tiers³` per block key and
    /// interleaving, so this also bounds its work per key (4,096).
    pub const MAX_NETWORK_TIERS: usize = 16;
}

/// A figure in messages: plain decimals for ordinary magnitudes, scientific
/// notation for extreme ones (`1e308`, not 309 digits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure(pub f64);

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let magnitude = self.0.abs();
        if magnitude == 0.0 || !magnitude.is_finite() || (1e-4..1e15).contains(&magnitude) {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:e}", self.0)
        }
    }
}

/// A violated rule of a system file; the message names the field path.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SystemError {
    /// JSON syntax, an unknown / missing field or a mistyped value; the
    /// message names the path and serde's line and column.
    #[error("invalid system JSON: {0}")]
    Parse(String),
    #[error("{field} must be positive, got {v}", v = Figure(*.value))]
    NotPositive { field: String, value: f64 },
    #[error("{field} must be a finite number ≥ 0, got {v}", v = Figure(*.value))]
    Negative { field: String, value: f64 },
    #[error(
        "{field} is {v}, outside the physical bounds [{lo}, {hi}]{unit} (blueprint::analysis::system::bounds; the README's \"Estimating a plan on a system\")",
        v = Figure(*.value), lo = Figure(*.min), hi = Figure(*.max)
    )]
    OutOfBounds { field: String, value: f64, min: f64, max: f64, unit: &'static str },
    #[error("{field}: efficiency {v} must lie in [{min}, 1]", v = Figure(*.value), min = Figure(bounds::EFFICIENCY_MIN))]
    Efficiency { field: String, value: f64 },
    #[error("networks: {count} tiers, more than the {max} a system may state (blueprint::analysis::system::bounds::MAX_NETWORK_TIERS)", max = bounds::MAX_NETWORK_TIERS)]
    TooManyNetworks { count: usize },
    #[error("{field}: processor_usage {value} must lie in [0, 1)")]
    ProcessorUsage { field: String, value: f64 },
    #[error("{field} is empty")]
    Empty { field: String },
    #[error("{field}: threshold {value} must be below the previous threshold {previous} (thresholds descend)")]
    NotDescending { field: String, value: f64, previous: f64 },
    #[error("{field}: the last threshold is {value}; it must be 0 so that every size is covered")]
    NotEndingAtZero { field: String, value: f64 },
    #[error("{field}: unknown datatype (known: float8, float16, bfloat16, float32)")]
    UnknownDatatype { field: String },
    #[error("{field}: unknown network op (known: p2p, reduce_scatter, all_gather, all_reduce)")]
    UnknownOp { field: String },
    #[error("{field} is missing (every tier states p2p, reduce_scatter, all_gather and all_reduce)")]
    MissingOp { field: String },
    #[error("{field}: a collective needs an offset (the second entry), got null")]
    MissingOffset { field: String },
    #[error("{field}: p2p takes no offset (the second entry must be null), got {value}")]
    UnexpectedOffset { field: String, value: f64 },
}

/// A network binding that does not fit the system.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NetworkBindingError {
    #[error("networks.{axis} = {tier} names no tier: the system has {tiers} network tier(s)")]
    TierOutOfRange { axis: &'static str, tier: usize, tiers: usize },
    #[error("network tier {tier} isn't big enough: {axes} place {needed} processors on it, its size is {size}")]
    TierTooSmall { tier: usize, axes: String, needed: u128, size: u64 },
    #[error("network tier {tier} isn't fully used: it must be filled (must_be_filled), but its size {size} is not a multiple of the {used} processors {axes} place on it")]
    TierNotFilled { tier: usize, axes: String, used: u128, size: u64 },
}

/// How compute and memory time of one operation combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessingMode {
    /// Compute time plus memory time.
    NoOverlap,
    /// The larger of the two.
    Roofline,
}

impl ProcessingMode {
    /// Calculon's `System.get_processing_time`.
    #[must_use]
    pub fn combine(self, flops_time: f64, mem_time: f64) -> f64 {
        match self {
            Self::NoOverlap => flops_time + mem_time,
            // Python's max(a, b): a unless b is larger.
            Self::Roofline => {
                if mem_time > flops_time {
                    mem_time
                } else {
                    flops_time
                }
            }
        }
    }
}

/// Network operations a tier prices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NetworkOp {
    P2p,
    ReduceScatter,
    AllGather,
    AllReduce,
}

impl NetworkOp {
    pub const ALL: [Self; 4] = [Self::P2p, Self::ReduceScatter, Self::AllGather, Self::AllReduce];

    /// The system file's spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::P2p => "p2p",
            Self::ReduceScatter => "reduce_scatter",
            Self::AllGather => "all_gather",
            Self::AllReduce => "all_reduce",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    const fn index(self) -> usize {
        match self {
            Self::P2p => 0,
            Self::ReduceScatter => 1,
            Self::AllGather => 2,
            Self::AllReduce => 3,
        }
    }
}

/// The spelling Calculon (and the spec) use for a datatype.
#[must_use]
pub const fn datatype_name(datatype: Datatype) -> &'static str {
    match datatype {
        Datatype::Float8 => "float8",
        Datatype::Float16 => "float16",
        Datatype::Bfloat16 => "bfloat16",
        Datatype::Float32 => "float32",
    }
}

const DATATYPES: [Datatype; 4] = [Datatype::Float8, Datatype::Float16, Datatype::Bfloat16, Datatype::Float32];

/// Rows `(threshold, efficiency)` with thresholds in base units (FLOP or
/// bytes), strictly descending and ending at 0.
#[derive(Debug, Clone, PartialEq)]
pub struct EfficiencyTable {
    rows: Vec<(f64, f64)>,
}

impl EfficiencyTable {
    /// The efficiency of an operation of size `x`: the first row whose
    /// threshold is ≤ `x`. The last threshold is 0, so any `x ≥ 0` is
    /// covered; anything else (NaN) gets the last row.
    #[must_use]
    pub fn efficiency(&self, x: f64) -> f64 {
        self.rows.iter().find(|(threshold, _)| x >= *threshold).or(self.rows.last()).map_or(1.0, |&(_, eff)| eff)
    }

    /// The rows, thresholds in base units.
    #[must_use]
    pub fn rows(&self) -> &[(f64, f64)] {
        &self.rows
    }
}

/// Peak rate of one unit for one datatype.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputeRate {
    tflops: f64,
    /// `tflops · 1e12`, as Calculon stores it.
    peak: f64,
    efficiency: EfficiencyTable,
}

impl ComputeRate {
    #[must_use]
    pub fn tflops(&self) -> f64 {
        self.tflops
    }

    #[must_use]
    pub fn efficiency(&self) -> &EfficiencyTable {
        &self.efficiency
    }

    /// Seconds for `flops` operations: `flops / (peak · eff(flops))`.
    #[must_use]
    pub fn time(&self, flops: f64) -> f64 {
        flops / (self.peak * self.efficiency.efficiency(flops))
    }
}

/// A compute unit (`matrix` or `vector`): its rate per datatype.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputeUnit {
    rates: Vec<(Datatype, ComputeRate)>,
}

impl ComputeUnit {
    /// The rate for `datatype`, if the file states one.
    #[must_use]
    pub fn rate(&self, datatype: Datatype) -> Option<&ComputeRate> {
        self.rates.iter().find(|(dt, _)| *dt == datatype).map(|(_, rate)| rate)
    }

    /// Datatypes the unit states, in file order (sorted by name).
    pub fn datatypes(&self) -> impl Iterator<Item = Datatype> + '_ {
        self.rates.iter().map(|(dt, _)| *dt)
    }
}

/// One memory tier.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryTier {
    gib: f64,
    /// `GBps · 1e9`.
    bandwidth: f64,
    efficiency: EfficiencyTable,
}

impl MemoryTier {
    /// Capacity in bytes, `GiB · 1024³` (exact: a power-of-two scale).
    #[must_use]
    pub fn capacity_bytes(&self) -> f64 {
        self.gib * 1_073_741_824.0
    }

    #[must_use]
    pub fn gib(&self) -> f64 {
        self.gib
    }

    /// Bytes per second at full efficiency.
    #[must_use]
    pub fn bandwidth(&self) -> f64 {
        self.bandwidth
    }

    #[must_use]
    pub fn efficiency(&self) -> &EfficiencyTable {
        &self.efficiency
    }

    /// Seconds to move `bytes`: `bytes / (bandwidth · eff(bytes))`.
    #[must_use]
    pub fn time(&self, bytes: f64) -> f64 {
        bytes / (self.bandwidth * self.efficiency.efficiency(bytes))
    }
}

/// A tier's factors `[a, b]` for one op: `S · a · (1 + b / n)` bytes on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpFactors {
    pub scalar: f64,
    /// 0 for `p2p` (its file entry is `null`).
    pub offset: f64,
}

/// One network tier.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkTier {
    /// `bandwidth · 1e9` bytes per second.
    bandwidth: f64,
    efficiency: f64,
    size: u64,
    latency: f64,
    ops: [OpFactors; 4],
    must_be_filled: bool,
    processor_usage: f64,
}

impl NetworkTier {
    /// Processors the tier connects.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    #[must_use]
    pub fn must_be_filled(&self) -> bool {
        self.must_be_filled
    }

    /// Fraction of a processor's compute that communication on this tier
    /// takes while it overlaps compute.
    #[must_use]
    pub fn processor_usage(&self) -> f64 {
        self.processor_usage
    }

    #[must_use]
    pub fn latency(&self) -> f64 {
        self.latency
    }

    #[must_use]
    pub fn op(&self, op: NetworkOp) -> OpFactors {
        self.ops[op.index()]
    }

    /// Seconds for `op` on `bytes` among `peers` processors (2 for p2p):
    /// `latency + (S·a + (1/n)·(S·a)·b) / (bandwidth · efficiency)`, in
    /// Calculon's order (`Network.time`).
    #[must_use]
    pub fn time(&self, op: NetworkOp, bytes: f64, peers: u64) -> f64 {
        let factors = self.op(op);
        let mut size = bytes * factors.scalar;
        let chunk = 1.0 / peers as f64 * size;
        size += chunk * factors.offset;
        self.latency + size / (self.bandwidth * self.efficiency)
    }
}

/// A validated system file.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemProfile {
    matrix: ComputeUnit,
    vector: ComputeUnit,
    mem1: MemoryTier,
    mem2: MemoryTier,
    processing_mode: ProcessingMode,
    networks: Vec<NetworkTier>,
}

impl SystemProfile {
    /// Reads and validates a Calculon system file.
    ///
    /// # Errors
    /// [`SystemError::Parse`] for malformed JSON, unknown or missing fields
    /// (with path, line and column); otherwise the first violated rule,
    /// naming its field path (e.g. `networks[1].ops.all_reduce`).
    pub fn from_json(json: &str) -> Result<Self, SystemError> {
        let raw: RawSystem = crate::analysis::json::from_json_located(json).map_err(SystemError::Parse)?;
        raw.validate()
    }

    #[must_use]
    pub fn matrix(&self) -> &ComputeUnit {
        &self.matrix
    }

    #[must_use]
    pub fn vector(&self) -> &ComputeUnit {
        &self.vector
    }

    #[must_use]
    pub fn mem1(&self) -> &MemoryTier {
        &self.mem1
    }

    #[must_use]
    pub fn mem2(&self) -> &MemoryTier {
        &self.mem2
    }

    #[must_use]
    pub fn processing_mode(&self) -> ProcessingMode {
        self.processing_mode
    }

    #[must_use]
    pub fn networks(&self) -> &[NetworkTier] {
        &self.networks
    }

    #[must_use]
    pub fn network(&self, tier: usize) -> Option<&NetworkTier> {
        self.networks.get(tier)
    }
}

/// Which network tier each parallel group uses (indices into `networks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkBinding {
    pub tp: usize,
    pub pp: usize,
    pub dp: usize,
}

impl NetworkBinding {
    /// Checks the binding of groups of `tp`, `pp` and `dp` processors as
    /// Calculon does: every index names a tier (even for a group of one);
    /// groups larger than one multiply on their tier, which must be at
    /// least that large, and a `must_be_filled` tier's size must be a
    /// multiple of what is placed on it.
    ///
    /// # Errors
    /// The first index out of range, else the first tier too small or not
    /// filled.
    pub fn validate(&self, system: &SystemProfile, tp: u64, pp: u64, dp: u64) -> Result<(), NetworkBindingError> {
        let tiers = system.networks.len();
        let axes = [("tp", self.tp, tp), ("pp", self.pp, pp), ("dp", self.dp, dp)];
        for (axis, tier, _) in axes {
            if tier >= tiers {
                return Err(NetworkBindingError::TierOutOfRange { axis, tier, tiers });
            }
        }
        // Only the (at most three) tiers a group is placed on, in tier order:
        // the search checks a binding per configuration, so this costs the
        // same whatever the number of tiers.
        let mut placed_tiers = axes.map(|(_, tier, group)| if group > 1 { tier } else { usize::MAX });
        placed_tiers.sort_unstable();
        for (k, &index) in placed_tiers.iter().enumerate() {
            if k > 0 && placed_tiers[k - 1] == index {
                continue;
            }
            let Some(network) = system.networks.get(index) else { continue };
            let placed: Vec<(&str, u64)> =
                axes.iter().filter(|(_, tier, group)| *tier == index && *group > 1).map(|(axis, _, group)| (*axis, *group)).collect();
            let used: u128 = placed.iter().map(|(_, group)| u128::from(*group)).product();
            let names = || placed.iter().map(|(axis, group)| format!("{axis} = {group}")).collect::<Vec<_>>().join(" × ");
            if used > u128::from(network.size) {
                return Err(NetworkBindingError::TierTooSmall { tier: index, axes: names(), needed: used, size: network.size });
            }
            if network.must_be_filled && u128::from(network.size) % used != 0 {
                return Err(NetworkBindingError::TierNotFilled { tier: index, axes: names(), used, size: network.size });
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------ raw file form

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRate {
    tflops: f64,
    gflops_efficiency: Vec<(f64, f64)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMemory {
    #[serde(rename = "GiB")]
    gib: f64,
    #[serde(rename = "GBps")]
    gbps: f64,
    #[serde(rename = "MB_efficiency")]
    mb_efficiency: Vec<(f64, f64)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    bandwidth: f64,
    efficiency: f64,
    size: u64,
    latency: f64,
    ops: BTreeMap<String, (f64, Option<f64>)>,
    must_be_filled: bool,
    processor_usage: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSystem {
    matrix: BTreeMap<String, RawRate>,
    vector: BTreeMap<String, RawRate>,
    mem1: RawMemory,
    mem2: RawMemory,
    processing_mode: ProcessingMode,
    networks: Vec<RawNetwork>,
}

fn positive(field: impl FnOnce() -> String, value: f64) -> Result<f64, SystemError> {
    if value > 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(SystemError::NotPositive { field: field(), value })
    }
}

fn non_negative(field: impl FnOnce() -> String, value: f64) -> Result<f64, SystemError> {
    if value >= 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(SystemError::Negative { field: field(), value })
    }
}

/// `value` (already finite) within `[min, max]` of [`bounds`].
fn within(field: impl FnOnce() -> String, value: f64, (min, max): (f64, f64), unit: &'static str) -> Result<f64, SystemError> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(SystemError::OutOfBounds { field: field(), value, min, max, unit })
    }
}

fn efficiency(field: impl FnOnce() -> String, value: f64) -> Result<f64, SystemError> {
    if (bounds::EFFICIENCY_MIN..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(SystemError::Efficiency { field: field(), value })
    }
}

/// Validates a table whose thresholds are in units of `scale` base units.
fn table(field: &str, rows: &[(f64, f64)], scale: f64) -> Result<EfficiencyTable, SystemError> {
    let Some(&(last, _)) = rows.last() else {
        return Err(SystemError::Empty { field: field.to_owned() });
    };
    let mut previous: Option<f64> = None;
    for (index, &(threshold, eff)) in rows.iter().enumerate() {
        let row = || format!("{field}[{index}]");
        non_negative(row, threshold)?;
        within(|| format!("{}[0]", row()), threshold, (0.0, bounds::THRESHOLD_MAX), "")?;
        efficiency(row, eff)?;
        if let Some(previous) = previous.filter(|p| threshold >= *p) {
            return Err(SystemError::NotDescending { field: row(), value: threshold, previous });
        }
        previous = Some(threshold);
    }
    if last != 0.0 {
        return Err(SystemError::NotEndingAtZero { field: field.to_owned(), value: last });
    }
    Ok(EfficiencyTable { rows: rows.iter().map(|&(threshold, eff)| (threshold * scale, eff)).collect() })
}

fn unit(field: &str, raw: &BTreeMap<String, RawRate>) -> Result<ComputeUnit, SystemError> {
    if raw.is_empty() {
        return Err(SystemError::Empty { field: field.to_owned() });
    }
    let mut rates = Vec::with_capacity(raw.len());
    for (name, rate) in raw {
        let path = format!("{field}.{name}");
        let Some(datatype) = DATATYPES.into_iter().find(|dt| datatype_name(*dt) == name) else {
            return Err(SystemError::UnknownDatatype { field: path });
        };
        let tflops = positive(|| format!("{path}.tflops"), rate.tflops)?;
        within(|| format!("{path}.tflops"), tflops, bounds::TFLOPS, " TFLOP/s")?;
        let efficiency = table(&format!("{path}.gflops_efficiency"), &rate.gflops_efficiency, 1e9)?;
        rates.push((datatype, ComputeRate { tflops, peak: tflops * 1e12, efficiency }));
    }
    Ok(ComputeUnit { rates })
}

fn memory(field: &str, raw: &RawMemory) -> Result<MemoryTier, SystemError> {
    let gib = non_negative(|| format!("{field}.GiB"), raw.gib)?;
    within(|| format!("{field}.GiB"), gib, (0.0, bounds::GIB_MAX), " GiB")?;
    let gbps = positive(|| format!("{field}.GBps"), raw.gbps)?;
    within(|| format!("{field}.GBps"), gbps, bounds::GBPS, " GB/s")?;
    let efficiency = table(&format!("{field}.MB_efficiency"), &raw.mb_efficiency, 1e6)?;
    Ok(MemoryTier { gib, bandwidth: gbps * 1e9, efficiency })
}

fn network(index: usize, raw: &RawNetwork) -> Result<NetworkTier, SystemError> {
    let field = |name: &str| format!("networks[{index}].{name}");
    let bandwidth = positive(|| field("bandwidth"), raw.bandwidth)?;
    within(|| field("bandwidth"), bandwidth, bounds::GBPS, " GB/s")?;
    efficiency(|| field("efficiency"), raw.efficiency)?;
    let latency = non_negative(|| field("latency"), raw.latency)?;
    within(|| field("latency"), latency, (0.0, bounds::LATENCY_MAX), " s")?;
    if !(raw.processor_usage >= 0.0 && raw.processor_usage < 1.0) {
        return Err(SystemError::ProcessorUsage { field: field("processor_usage"), value: raw.processor_usage });
    }
    let mut ops: [Option<OpFactors>; 4] = [None; 4];
    for (name, &(scalar, offset)) in &raw.ops {
        let path = field(&format!("ops.{name}"));
        let Some(op) = NetworkOp::from_name(name) else {
            return Err(SystemError::UnknownOp { field: path });
        };
        let scalar = positive(|| format!("{path}[0]"), scalar)?;
        within(|| format!("{path}[0]"), scalar, bounds::OP_SCALAR, "")?;
        let offset = match (op, offset) {
            (NetworkOp::P2p, None) => 0.0,
            (NetworkOp::P2p, Some(value)) => return Err(SystemError::UnexpectedOffset { field: path, value }),
            (_, None) => return Err(SystemError::MissingOffset { field: path }),
            (_, Some(value)) => within(|| format!("{path}[1]"), value, bounds::OP_OFFSET, "")?,
        };
        ops[op.index()] = Some(OpFactors { scalar, offset });
    }
    let mut factors = [OpFactors { scalar: 1.0, offset: 0.0 }; 4];
    for op in NetworkOp::ALL {
        factors[op.index()] = ops[op.index()].ok_or_else(|| SystemError::MissingOp { field: field(&format!("ops.{}", op.name())) })?;
    }
    Ok(NetworkTier {
        bandwidth: bandwidth * 1e9,
        efficiency: raw.efficiency,
        size: raw.size,
        latency,
        ops: factors,
        must_be_filled: raw.must_be_filled,
        processor_usage: raw.processor_usage,
    })
}

impl RawSystem {
    fn validate(self) -> Result<SystemProfile, SystemError> {
        let matrix = unit("matrix", &self.matrix)?;
        let vector = unit("vector", &self.vector)?;
        let mem1 = memory("mem1", &self.mem1)?;
        let mem2 = memory("mem2", &self.mem2)?;
        if self.networks.is_empty() {
            return Err(SystemError::Empty { field: "networks".to_owned() });
        }
        if self.networks.len() > bounds::MAX_NETWORK_TIERS {
            return Err(SystemError::TooManyNetworks { count: self.networks.len() });
        }
        let networks = self.networks.iter().enumerate().map(|(index, raw)| network(index, raw)).collect::<Result<_, _>>()?;
        Ok(SystemProfile { matrix, vector, mem1, mem2, processing_mode: self.processing_mode, networks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSTEMS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/test/oracles/calculon/systems");

    fn read(name: &str) -> String {
        std::fs::read_to_string(format!("{SYSTEMS}/{name}.json")).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn a100() -> serde_json::Value {
        serde_json::from_str(&read("a100_80g")).expect("system JSON")
    }

    /// The error of `a100_80g` after `edit`.
    fn error_of(edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let mut json = a100();
        edit(&mut json);
        match SystemProfile::from_json(&json.to_string()) {
            Ok(_) => panic!("the edited system must be rejected"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn reads_every_shared_system_file() {
        for name in ["a100_80g", "a100_80e", "a100_nomem2", "h100_80g_nvl8"] {
            let system = SystemProfile::from_json(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(system.networks().len(), 2, "{name}");
            assert!(system.matrix().rate(Datatype::Float16).is_some(), "{name}");
        }
        let h100 = SystemProfile::from_json(&read("h100_80g_nvl8")).expect("h100");
        assert_eq!(h100.matrix().datatypes().collect::<Vec<_>>(), [Datatype::Float16, Datatype::Float8]);
        let nomem2 = SystemProfile::from_json(&read("a100_nomem2")).expect("nomem2");
        assert_eq!(nomem2.mem2().capacity_bytes(), 0.0);
    }

    #[test]
    fn rates_follow_calculon() {
        let system = SystemProfile::from_json(&read("a100_80g")).expect("a100");
        let matrix = system.matrix().rate(Datatype::Float16).expect("fp16");
        // 16 GFLOP falls in the [16, 0.9] row (threshold ≤ size).
        assert_eq!(matrix.time(16e9), 16e9 / (312e12 * 0.9));
        assert_eq!(matrix.time(15.9e9), 15.9e9 / (312e12 * 0.6));
        assert_eq!(matrix.time(0.0), 0.0);
        assert_eq!(system.mem1().time(100e6), 100e6 / (2048e9 * 0.9));
        assert_eq!(system.mem1().capacity_bytes(), 80.0 * 1024.0 * 1024.0 * 1024.0);
        let tier0 = &system.networks()[0];
        // all_reduce [2.0, -1] over 8: S·2·(1 − 1/8) bytes.
        let (s, offset) = (1e8, -1.0);
        assert_eq!(tier0.time(NetworkOp::AllReduce, s, 8), 1e-5 + (s * 2.0 + 1.0 / 8.0 * (s * 2.0) * offset) / (300e9 * 0.65));
        assert_eq!(tier0.time(NetworkOp::P2p, s, 2), 1e-5 + s / (300e9 * 0.65));
        assert_eq!(ProcessingMode::Roofline.combine(1.0, 2.0), 2.0);
        assert_eq!(ProcessingMode::NoOverlap.combine(1.0, 2.0), 3.0);
    }

    type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;

    #[test]
    fn malformed_files_name_the_field() {
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|j| j["matrix"]["float16"]["tflops"] = 0.into()), "matrix.float16.tflops must be positive"),
            (Box::new(|j| j["vector"]["float16"]["tflops"] = (-1).into()), "vector.float16.tflops must be positive"),
            (
                Box::new(|j| j["matrix"]["float16"]["gflops_efficiency"][1] = serde_json::json!([200, 0.9])),
                "matrix.float16.gflops_efficiency[1]: threshold 200 must be below the previous threshold 128",
            ),
            (
                Box::new(|j| j["matrix"]["float16"]["gflops_efficiency"][3] = serde_json::json!([0.5, 0.1])),
                "matrix.float16.gflops_efficiency: the last threshold is 0.5; it must be 0",
            ),
            (
                Box::new(|j| j["vector"]["float16"]["gflops_efficiency"][0] = serde_json::json!([16, 1.5])),
                "vector.float16.gflops_efficiency[0]: efficiency 1.5 must lie in [1e-6, 1]",
            ),
            (
                Box::new(|j| j["vector"]["float16"]["gflops_efficiency"] = serde_json::json!([])),
                "vector.float16.gflops_efficiency is empty",
            ),
            (Box::new(|j| j["matrix"]["float64"] = j["matrix"]["float16"].clone()), "matrix.float64: unknown datatype"),
            (Box::new(|j| j["matrix"] = serde_json::json!({})), "matrix is empty"),
            (Box::new(|j| j["mem1"]["GBps"] = 0.into()), "mem1.GBps must be positive"),
            (Box::new(|j| j["mem2"]["GiB"] = (-1).into()), "mem2.GiB must be a finite number ≥ 0"),
            (
                Box::new(|j| j["mem1"]["MB_efficiency"][2] = serde_json::json!([10, 0.6])),
                "mem1.MB_efficiency[2]: threshold 10 must be below the previous threshold 10",
            ),
            (
                Box::new(|j| j["mem2"]["MB_efficiency"][3] = serde_json::json!([0, 0])),
                "mem2.MB_efficiency[3]: efficiency 0 must lie in [1e-6, 1]",
            ),
            (Box::new(|j| j["networks"][1]["bandwidth"] = 0.into()), "networks[1].bandwidth must be positive"),
            (Box::new(|j| j["networks"][0]["efficiency"] = 1.2.into()), "networks[0].efficiency: efficiency 1.2 must lie in [1e-6, 1]"),
            (Box::new(|j| j["networks"][0]["latency"] = (-1e-6).into()), "networks[0].latency must be a finite number ≥ 0"),
            (
                Box::new(|j| j["networks"][1]["processor_usage"] = 1.0.into()),
                "networks[1].processor_usage: processor_usage 1 must lie in [0, 1)",
            ),
            (
                Box::new(|j| j["networks"][1]["ops"]["broadcast"] = serde_json::json!([1.0, 0])),
                "networks[1].ops.broadcast: unknown network op",
            ),
            (
                Box::new(|j| {
                    j["networks"][1]["ops"].as_object_mut().map(|o| o.remove("all_reduce"));
                }),
                "networks[1].ops.all_reduce is missing",
            ),
            (
                Box::new(|j| j["networks"][1]["ops"]["all_reduce"] = serde_json::json!([1.0, null])),
                "networks[1].ops.all_reduce: a collective needs an offset",
            ),
            (Box::new(|j| j["networks"][0]["ops"]["p2p"] = serde_json::json!([1.0, 0])), "networks[0].ops.p2p: p2p takes no offset"),
            (
                Box::new(|j| j["networks"][0]["ops"]["all_gather"] = serde_json::json!([0, -1])),
                "networks[0].ops.all_gather[0] must be positive",
            ),
            (Box::new(|j| j["networks"] = serde_json::json!([])), "networks is empty"),
            (Box::new(|j| j["processing_mode"] = "overlap".into()), "processing_mode: unknown variant `overlap`"),
            (Box::new(|j| j["networks"][0]["colour"] = "red".into()), "networks[0].colour: unknown field `colour`"),
            (
                Box::new(|j| {
                    j.as_object_mut().map(|o| o.remove("mem2"));
                }),
                "missing field `mem2`",
            ),
            (Box::new(|j| j["networks"][0]["size"] = (-8).into()), "networks[0].size: invalid value"),
            // Extreme but finite figures (issue 28): each outside the physical bounds, named.
            (
                Box::new(|j| j["matrix"]["float16"]["tflops"] = 1e-308.into()),
                "matrix.float16.tflops is 1e-308, outside the physical bounds [1e-6, 1000000] TFLOP/s",
            ),
            (
                Box::new(|j| j["vector"]["float16"]["tflops"] = 1e308.into()),
                "vector.float16.tflops is 1e308, outside the physical bounds [1e-6, 1000000] TFLOP/s",
            ),
            (Box::new(|j| j["mem1"]["GiB"] = 1e308.into()), "mem1.GiB is 1e308, outside the physical bounds [0, 1000000000000] GiB"),
            (Box::new(|j| j["mem2"]["GBps"] = 1e-308.into()), "mem2.GBps is 1e-308, outside the physical bounds [1e-6, 1000000000] GB/s"),
            (
                Box::new(|j| j["networks"][1]["bandwidth"] = 1e308.into()),
                "networks[1].bandwidth is 1e308, outside the physical bounds [1e-6, 1000000000] GB/s",
            ),
            (
                Box::new(|j| j["networks"][0]["latency"] = 1e308.into()),
                "networks[0].latency is 1e308, outside the physical bounds [0, 3600] s",
            ),
            (
                Box::new(|j| j["networks"][0]["efficiency"] = 1e-308.into()),
                "networks[0].efficiency: efficiency 1e-308 must lie in [1e-6, 1]",
            ),
            (
                Box::new(|j| j["matrix"]["float16"]["gflops_efficiency"][3] = serde_json::json!([0, 1e-300])),
                "matrix.float16.gflops_efficiency[3]: efficiency 1e-300 must lie in [1e-6, 1]",
            ),
            (
                Box::new(|j| j["mem1"]["MB_efficiency"][0] = serde_json::json!([1e308, 0.9])),
                "mem1.MB_efficiency[0][0] is 1e308, outside the physical bounds [0, 1000000000000]",
            ),
            (
                Box::new(|j| j["networks"][0]["ops"]["all_reduce"] = serde_json::json!([1e308, -1])),
                "networks[0].ops.all_reduce[0] is 1e308, outside the physical bounds [0.001, 1000]",
            ),
            (
                Box::new(|j| j["networks"][0]["ops"]["all_gather"] = serde_json::json!([1.0, -2])),
                "networks[0].ops.all_gather[1] is -2, outside the physical bounds [-1, 1000]",
            ),
            (
                Box::new(|j| {
                    let tier = j["networks"][1].clone();
                    j["networks"] = serde_json::Value::Array(vec![tier; 17]);
                }),
                "networks: 17 tiers, more than the 16 a system may state",
            ),
        ];
        for (edit, expected) in cases {
            let message = error_of(edit);
            assert!(message.contains(expected), "expected {expected:?} in {message:?}");
        }
    }

    #[test]
    fn syntax_errors_give_line_and_column() {
        let message = SystemProfile::from_json("{\n  \"matrix\": {,\n}").map(|_| ()).expect_err("bad JSON").to_string();
        assert!(message.contains("line 2"), "{message}");
        assert!(message.contains("column"), "{message}");
    }

    #[test]
    fn bindings_are_checked_like_calculon() {
        let system = SystemProfile::from_json(&read("a100_80g")).expect("a100");
        let binding = NetworkBinding { tp: 0, pp: 1, dp: 1 };
        assert_eq!(binding.validate(&system, 8, 48, 1), Ok(()));
        // Groups of one are not placed, but their index must still exist.
        assert_eq!(
            NetworkBinding { tp: 0, pp: 1, dp: 2 }.validate(&system, 8, 1, 1),
            Err(NetworkBindingError::TierOutOfRange { axis: "dp", tier: 2, tiers: 2 })
        );
        let message = NetworkBinding { tp: 5, pp: 1, dp: 1 }.validate(&system, 8, 1, 1).expect_err("out of range").to_string();
        assert!(message.contains("networks.tp = 5 names no tier"), "{message}");
        // Tier 0 holds 8 processors: TP 4 × DP 4 do not fit.
        let too_small = NetworkBinding { tp: 0, pp: 1, dp: 0 }.validate(&system, 4, 2, 4).expect_err("too small").to_string();
        assert!(too_small.contains("tier 0 isn't big enough: tp = 4 × dp = 4 place 16 processors"), "{too_small}");
        // must_be_filled: 8 is not a multiple of 3.
        let unfilled = NetworkBinding { tp: 0, pp: 1, dp: 1 }.validate(&system, 3, 2, 2).expect_err("not filled").to_string();
        assert!(unfilled.contains("tier 0 isn't fully used"), "{unfilled}");
        // TP 2 × DP 4 = 8 fills tier 0 exactly.
        assert_eq!(NetworkBinding { tp: 0, pp: 1, dp: 0 }.validate(&system, 2, 3, 4), Ok(()));
        // Tier 1 need not be filled.
        assert_eq!(NetworkBinding { tp: 0, pp: 1, dp: 1 }.validate(&system, 1, 3, 7), Ok(()));
    }
}
