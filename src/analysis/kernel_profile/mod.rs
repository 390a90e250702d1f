//! Kernel profiles: what `blueprint-calibrate` measured on one device
//! (format `blueprint-kernel-profile/1`, `docs/kernel-profile.md`, schema
//! `docs/spec/kernel-profile.schema.json`), read, validated and queried by
//! shape.
//!
//! A profile holds, per datatype, the device time and the host (issue) time
//! of GEMMs by `(m, n, k)` and layout, batched GEMMs, fused attention by
//! batch, heads, sequence and head size, memory-bound kernels by element
//! count, a fused Adam step by parameter count, one tiny kernel (the
//! dispatch floor) and collective curves by message size. [`lookup`] prices
//! any shape from the measured ones (the interpolation is stated there).
//!
//! Every figure is checked: times are finite, positive and at most an hour,
//! sizes are whole numbers in `[1, 2^40]`; a violation is an error naming
//! its JSON path (`kernels.gemm.bfloat16.nt[12][3]`).

mod lookup;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::Deserialize;
use thiserror::Error;

use lookup::Table;
pub use lookup::{issue_queue_time, AttentionShape, Cost, LookupError};

use crate::analysis::workload::Datatype;

/// The format string a profile states.
pub const FORMAT: &str = "blueprint-kernel-profile/1";

/// Largest time a profile may state, seconds.
pub const MAX_SECONDS: f64 = 3600.0;
/// Largest size (elements, bytes, a GEMM dimension) a profile may state.
pub const MAX_SIZE: u64 = 1 << 40;

/// A malformed or out-of-range profile; the message names the JSON path.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ProfileError {
    /// JSON syntax, an unknown or missing field, a mistyped value.
    #[error("invalid kernel profile JSON: {0}")]
    Parse(String),
    #[error("format is '{0}', expected '{FORMAT}'")]
    Format(String),
    #[error("{field}: a time must be finite, positive and at most {MAX_SECONDS} s, got {value}")]
    Seconds { field: String, value: f64 },
    #[error("{field}: a size must be a whole number in [1, 2^40], got {value}")]
    Size { field: String, value: f64 },
    #[error("{field}: unknown {what} '{name}' (known: {known})")]
    Unknown { field: String, what: &'static str, name: String, known: String },
    #[error("{field}: a row has {got} entries, expected {expected} ({layout})")]
    Arity { field: String, got: usize, expected: usize, layout: &'static str },
    #[error("{field}: dropout {value} must lie in [0, 1)")]
    Dropout { field: String, value: f64 },
    #[error("{field}: heads {heads} is not a multiple of kv_heads {kv_heads}")]
    Heads { field: String, heads: u64, kv_heads: u64 },
    #[error("{field}: the shape {shape} appears twice")]
    Duplicate { field: String, shape: String },
}

/// GEMM layouts of a linear `Y[m,n] = X[m,k]·W[n,k]ᵀ`: the forward (`nt`),
/// the input gradient `dX = dY·W` (`nn`) and the weight gradient
/// `dW = dYᵀ·X` (`tn`), each indexed by the forward's `(m, n, k)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layout {
    Nt,
    Nn,
    Tn,
}

impl Layout {
    pub const ALL: [Self; 3] = [Self::Nt, Self::Nn, Self::Tn];

    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Nt => "nt",
            Self::Nn => "nn",
            Self::Tn => "tn",
        }
    }
}

/// Memory-bound kernels a profile times by element count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VectorOp {
    Copy,
    Add,
    Mul,
    Gelu,
    Silu,
    Swiglu,
    Dropout,
    LayerNorm,
    RmsNorm,
    Softmax,
    Rope,
    CrossEntropy,
}

impl VectorOp {
    pub const ALL: [Self; 12] = [
        Self::Copy,
        Self::Add,
        Self::Mul,
        Self::Gelu,
        Self::Silu,
        Self::Swiglu,
        Self::Dropout,
        Self::LayerNorm,
        Self::RmsNorm,
        Self::Softmax,
        Self::Rope,
        Self::CrossEntropy,
    ];

    /// The profile's spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Copy => "copy",
            Self::Add => "add",
            Self::Mul => "mul",
            Self::Gelu => "gelu",
            Self::Silu => "silu",
            Self::Swiglu => "swiglu",
            Self::Dropout => "dropout",
            Self::LayerNorm => "layernorm",
            Self::RmsNorm => "rmsnorm",
            Self::Softmax => "softmax",
            Self::Rope => "rope",
            Self::CrossEntropy => "cross_entropy",
        }
    }
}

/// Collectives a profile's curves cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CollectiveOp {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    P2p,
}

impl CollectiveOp {
    pub const ALL: [Self; 5] = [Self::AllReduce, Self::AllGather, Self::ReduceScatter, Self::AllToAll, Self::P2p];

    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::AllReduce => "all_reduce",
            Self::AllGather => "all_gather",
            Self::ReduceScatter => "reduce_scatter",
            Self::AllToAll => "all_to_all",
            Self::P2p => "p2p",
        }
    }
}

/// Who measured the profile, where and when (the fields Blueprint reads;
/// the file may say more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    pub device: String,
    pub device_type: String,
    pub backend: String,
    pub date: String,
    pub dtype: Datatype,
    /// Sections the calibration run cut short.
    pub incomplete: Vec<String>,
}

/// One measured shape: its coordinates, device seconds and host seconds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    pub coords: Vec<u64>,
    pub cost: Cost,
}

/// Forward and backward tables of one kernel.
type Passes = (Table, Table);
/// Forward and backward points, before their tables are built.
type PassPoints = (Vec<Point>, Vec<Point>);

/// A validated kernel profile.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelProfile {
    provenance: Provenance,
    dispatch: Cost,
    gemm: BTreeMap<(Datatype, Layout), Table>,
    bmm: BTreeMap<(Datatype, Layout), Table>,
    /// Per datatype, causal and whether dropout is applied: forward and
    /// backward points over `(seq, batch·heads, head_dim)`.
    attention: BTreeMap<(Datatype, bool, bool), Passes>,
    vector: BTreeMap<(Datatype, VectorOp), Passes>,
    adam: Table,
    collectives: BTreeMap<CollectiveOp, Table>,
    collective_ranks: Option<u64>,
}

// ---- raw JSON ------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    format: String,
    provenance: RawProvenance,
    kernels: RawKernels,
}

#[derive(Deserialize)]
struct RawProvenance {
    device: String,
    device_type: String,
    backend: String,
    date: String,
    dtype: String,
    #[serde(default)]
    incomplete: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKernels {
    dispatch: RawDispatch,
    #[serde(default)]
    gemm: BTreeMap<String, RawLayouts>,
    #[serde(default)]
    bmm: BTreeMap<String, RawLayouts>,
    #[serde(default)]
    attention: BTreeMap<String, Vec<RawAttention>>,
    #[serde(default)]
    vector: BTreeMap<String, BTreeMap<String, Vec<RawVector>>>,
    #[serde(default)]
    optimizer: Option<RawOptimizer>,
    #[serde(default)]
    collectives: Option<RawCollectives>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDispatch {
    tiny_kernel_s: f64,
    host_s: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLayouts {
    #[serde(default)]
    nt: Vec<Vec<f64>>,
    #[serde(default)]
    nn: Vec<Vec<f64>>,
    #[serde(default)]
    tn: Vec<Vec<f64>>,
    #[serde(default)]
    #[allow(dead_code)] // why a datatype could not be measured: no rows
    unsupported: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAttention {
    batch: f64,
    heads: f64,
    kv_heads: f64,
    seq: f64,
    head_dim: f64,
    causal: bool,
    dropout: f64,
    fwd_s: Option<f64>,
    fwd_host_s: Option<f64>,
    bwd_s: Option<f64>,
    bwd_host_s: Option<f64>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVector {
    elems: f64,
    #[allow(dead_code)] // descriptive: what the kernel must move
    bytes: f64,
    fwd_s: f64,
    fwd_host_s: f64,
    bwd_s: Option<f64>,
    bwd_host_s: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOptimizer {
    adam: Option<RawAdam>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdam {
    #[serde(rename = "impl")]
    #[allow(dead_code)] // descriptive
    implementation: Option<String>,
    rows: Vec<RawAdamRow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdamRow {
    params: f64,
    s: f64,
    host_s: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCollectives {
    #[allow(dead_code)] // descriptive
    library: String,
    ranks: f64,
    curves: BTreeMap<String, Vec<Vec<f64>>>,
}

// ---- validation ------------------------------------------------------------

fn seconds(field: impl FnOnce() -> String, value: f64) -> Result<f64, ProfileError> {
    if value.is_finite() && value > 0.0 && value <= MAX_SECONDS {
        Ok(value)
    } else {
        Err(ProfileError::Seconds { field: field(), value })
    }
}

fn size(field: impl FnOnce() -> String, value: f64) -> Result<u64, ProfileError> {
    #[allow(clippy::cast_precision_loss)]
    let max = MAX_SIZE as f64;
    if value.is_finite() && value >= 1.0 && value <= max && value.fract() == 0.0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(value as u64)
    } else {
        Err(ProfileError::Size { field: field(), value })
    }
}

fn datatype(field: &str, name: &str, fp8: bool) -> Result<Datatype, ProfileError> {
    let known: &[Datatype] = if fp8 {
        &[Datatype::Bfloat16, Datatype::Float16, Datatype::Float32, Datatype::Float8]
    } else {
        &[Datatype::Bfloat16, Datatype::Float16, Datatype::Float32]
    };
    known.iter().copied().find(|d| d.name() == name).ok_or_else(|| ProfileError::Unknown {
        field: field.to_owned(),
        what: "datatype",
        name: name.to_owned(),
        known: known.iter().map(|d| d.name()).collect::<Vec<_>>().join(", "),
    })
}

/// A measured point of `coords` whose device and host seconds are the
/// fields `device_key` and `host_key` of the row at `at`.
fn measured(
    coords: Vec<u64>,
    at: &str,
    (device_key, device_s): (&str, f64),
    (host_key, host_s): (&str, f64),
) -> Result<Point, ProfileError> {
    Ok(Point {
        coords,
        cost: Cost {
            device_s: seconds(|| format!("{at}.{device_key}"), device_s)?,
            host_s: seconds(|| format!("{at}.{host_key}"), host_s)?,
        },
    })
}

/// Rows of `sizes` sizes followed by device and host seconds.
fn rows(field: &str, raw: &[Vec<f64>], sizes: usize, layout: &'static str) -> Result<Vec<Point>, ProfileError> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(raw.len());
    for (i, row) in raw.iter().enumerate() {
        if row.len() != sizes + 2 {
            return Err(ProfileError::Arity { field: format!("{field}[{i}]"), got: row.len(), expected: sizes + 2, layout });
        }
        let coords = (0..sizes).map(|j| size(|| format!("{field}[{i}][{j}]"), row[j])).collect::<Result<Vec<_>, _>>()?;
        let device_s = seconds(|| format!("{field}[{i}][{sizes}]"), row[sizes])?;
        let host_s = seconds(|| format!("{field}[{i}][{}]", sizes + 1), row[sizes + 1])?;
        if !seen.insert(coords.clone()) {
            return Err(ProfileError::Duplicate { field: format!("{field}[{i}]"), shape: format!("{coords:?}") });
        }
        out.push(Point { coords, cost: Cost { device_s, host_s } });
    }
    Ok(out)
}

fn layouts(
    section: &str,
    raw: BTreeMap<String, RawLayouts>,
    sizes: usize,
    layout: &'static str,
    fp8: bool,
) -> Result<BTreeMap<(Datatype, Layout), Table>, ProfileError> {
    let mut out = BTreeMap::new();
    for (name, tables) in raw {
        let field = format!("kernels.{section}.{name}");
        let dt = datatype(&field, &name, fp8)?;
        for (l, rowset) in [(Layout::Nt, &tables.nt), (Layout::Nn, &tables.nn), (Layout::Tn, &tables.tn)] {
            let points = rows(&format!("{field}.{}", l.name()), rowset, sizes, layout)?;
            if !points.is_empty() {
                out.insert((dt, l), Table::new(points));
            }
        }
    }
    Ok(out)
}

/// Attention rows of one `(seq, batch·heads, head_dim)` (batch and heads
/// traded, or grouped KV heads) price the same coordinates: they become one
/// point at the geometric mean of their times.
fn merge_equal_coordinates(mut points: Vec<Point>) -> Vec<Point> {
    points.sort_by(|a, b| a.coords.cmp(&b.coords));
    let mut merged: Vec<(Point, usize, f64, f64)> = Vec::with_capacity(points.len());
    for p in points {
        match merged.last_mut() {
            Some((q, count, log_device, log_host)) if q.coords == p.coords => {
                *count += 1;
                *log_device += p.cost.device_s.ln();
                *log_host += p.cost.host_s.ln();
            }
            _ => {
                let (d, h) = (p.cost.device_s.ln(), p.cost.host_s.ln());
                merged.push((p, 1, d, h));
            }
        }
    }
    #[allow(clippy::cast_precision_loss)]
    merged
        .into_iter()
        .map(|(mut p, count, d, h)| {
            p.cost = Cost { device_s: (d / count as f64).exp(), host_s: (h / count as f64).exp() };
            p
        })
        .collect()
}

impl RawProfile {
    fn validate(self) -> Result<KernelProfile, ProfileError> {
        if self.format != FORMAT {
            return Err(ProfileError::Format(self.format));
        }
        let p = self.provenance;
        let provenance = Provenance {
            dtype: datatype("provenance.dtype", &p.dtype, false)?,
            device: p.device,
            device_type: p.device_type,
            backend: p.backend,
            date: p.date,
            incomplete: p.incomplete,
        };
        let k = self.kernels;
        let dispatch = Cost {
            device_s: seconds(|| "kernels.dispatch.tiny_kernel_s".into(), k.dispatch.tiny_kernel_s)?,
            host_s: seconds(|| "kernels.dispatch.host_s".into(), k.dispatch.host_s)?,
        };
        let gemm = layouts("gemm", k.gemm, 3, "[m, n, k, device_s, host_s]", true)?;
        let bmm = layouts("bmm", k.bmm, 4, "[batch, m, n, k, device_s, host_s]", false)?;

        let mut attention: BTreeMap<(Datatype, bool, bool), PassPoints> = BTreeMap::new();
        for (name, list) in k.attention {
            let field = format!("kernels.attention.{name}");
            let dt = datatype(&field, &name, false)?;
            for (i, row) in list.into_iter().enumerate() {
                let f = format!("{field}[{i}]");
                let batch = size(|| format!("{f}.batch"), row.batch)?;
                let heads = size(|| format!("{f}.heads"), row.heads)?;
                let kv_heads = size(|| format!("{f}.kv_heads"), row.kv_heads)?;
                let seq = size(|| format!("{f}.seq"), row.seq)?;
                let head_dim = size(|| format!("{f}.head_dim"), row.head_dim)?;
                if !heads.is_multiple_of(kv_heads) {
                    return Err(ProfileError::Heads { field: f, heads, kv_heads });
                }
                if !(row.dropout.is_finite() && (0.0..1.0).contains(&row.dropout)) {
                    return Err(ProfileError::Dropout { field: format!("{f}.dropout"), value: row.dropout });
                }
                if row.error.is_some() {
                    continue; // the shape could not be run: no times
                }
                let (Some(fs), Some(fh)) = (row.fwd_s, row.fwd_host_s) else {
                    return Err(ProfileError::Parse(format!("{f}: fwd_s and fwd_host_s are required unless the row states an error")));
                };
                let coords = vec![seq, batch * heads, head_dim];
                let fwd = measured(coords.clone(), &f, ("fwd_s", fs), ("fwd_host_s", fh))?;
                let entry = attention.entry((dt, row.causal, row.dropout > 0.0)).or_default();
                if let (Some(bs), Some(bh)) = (row.bwd_s, row.bwd_host_s) {
                    entry.1.push(measured(coords, &f, ("bwd_s", bs), ("bwd_host_s", bh))?);
                }
                entry.0.push(fwd);
            }
        }

        let attention: BTreeMap<(Datatype, bool, bool), Passes> = attention
            .into_iter()
            .map(|(key, (fwd, bwd))| (key, (Table::new(merge_equal_coordinates(fwd)), Table::new(merge_equal_coordinates(bwd)))))
            .collect();

        let mut vector = BTreeMap::new();
        for (name, ops) in k.vector {
            let field = format!("kernels.vector.{name}");
            let dt = datatype(&field, &name, false)?;
            for (op_name, list) in ops {
                let f = format!("{field}.{op_name}");
                let op = VectorOp::ALL.into_iter().find(|o| o.name() == op_name).ok_or_else(|| ProfileError::Unknown {
                    field: f.clone(),
                    what: "vector op",
                    name: op_name.clone(),
                    known: VectorOp::ALL.map(VectorOp::name).join(", "),
                })?;
                let (mut fwd, mut bwd) = (Vec::new(), Vec::new());
                for (i, row) in list.into_iter().enumerate() {
                    let g = format!("{f}[{i}]");
                    let elems = size(|| format!("{g}.elems"), row.elems)?;
                    fwd.push(measured(vec![elems], &g, ("fwd_s", row.fwd_s), ("fwd_host_s", row.fwd_host_s))?);
                    if let (Some(bs), Some(bh)) = (row.bwd_s, row.bwd_host_s) {
                        bwd.push(measured(vec![elems], &g, ("bwd_s", bs), ("bwd_host_s", bh))?);
                    }
                }
                if !fwd.is_empty() {
                    vector.insert((dt, op), (Table::new(fwd), Table::new(bwd)));
                }
            }
        }

        let mut adam = Vec::new();
        if let Some(RawOptimizer { adam: Some(a) }) = k.optimizer {
            for (i, row) in a.rows.into_iter().enumerate() {
                let f = format!("kernels.optimizer.adam.rows[{i}]");
                adam.push(measured(vec![size(|| format!("{f}.params"), row.params)?], &f, ("s", row.s), ("host_s", row.host_s))?);
            }
        }

        let mut collectives = BTreeMap::new();
        let mut collective_ranks = None;
        if let Some(c) = k.collectives {
            collective_ranks = Some(size(|| "kernels.collectives.ranks".into(), c.ranks)?);
            for (name, list) in c.curves {
                let f = format!("kernels.collectives.curves.{name}");
                let op = CollectiveOp::ALL.into_iter().find(|o| o.name() == name).ok_or_else(|| ProfileError::Unknown {
                    field: f.clone(),
                    what: "collective",
                    name: name.clone(),
                    known: CollectiveOp::ALL.map(CollectiveOp::name).join(", "),
                })?;
                let mut points = Vec::new();
                for (i, row) in list.iter().enumerate() {
                    if row.len() != 2 {
                        return Err(ProfileError::Arity {
                            field: format!("{f}[{i}]"),
                            got: row.len(),
                            expected: 2,
                            layout: "[bytes, seconds]",
                        });
                    }
                    let bytes = size(|| format!("{f}[{i}][0]"), row[0])?;
                    let s = seconds(|| format!("{f}[{i}][1]"), row[1])?;
                    points.push(Point { coords: vec![bytes], cost: Cost { device_s: s, host_s: 0.0 } });
                }
                collectives.insert(op, Table::new(points));
            }
        }
        Ok(KernelProfile { provenance, dispatch, gemm, bmm, attention, vector, adam: Table::new(adam), collectives, collective_ranks })
    }
}

impl KernelProfile {
    /// Reads and validates a profile.
    ///
    /// # Errors
    /// [`ProfileError::Parse`] for malformed JSON or an unknown / missing
    /// field (with its path, line and column); otherwise the first figure
    /// out of range, named by its JSON path.
    pub fn from_json(json: &str) -> Result<Self, ProfileError> {
        let raw: RawProfile = crate::analysis::json::from_json_located(json).map_err(ProfileError::Parse)?;
        raw.validate()
    }

    #[must_use]
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// One tiny kernel: the floor of any kernel's device and host time.
    #[must_use]
    pub fn dispatch(&self) -> Cost {
        self.dispatch
    }

    /// Ranks the collective curves were measured over, if any.
    #[must_use]
    pub fn collective_ranks(&self) -> Option<u64> {
        self.collective_ranks
    }

    /// How many shapes each section holds, for summaries.
    #[must_use]
    pub fn counts(&self) -> ProfileCounts {
        ProfileCounts {
            gemm: self.gemm.values().map(Table::len).sum(),
            bmm: self.bmm.values().map(Table::len).sum(),
            attention: self.attention.values().map(|(f, b)| f.len() + b.len()).sum(),
            vector: self.vector.values().map(|(f, b)| f.len() + b.len()).sum(),
            adam: self.adam.len(),
            collectives: self.collectives.values().map(Table::len).sum(),
        }
    }
}

/// Measured shapes per section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileCounts {
    pub gemm: usize,
    pub bmm: usize,
    pub attention: usize,
    pub vector: usize,
    pub adam: usize,
    pub collectives: usize,
}
