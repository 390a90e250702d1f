//! Pricing any shape from the measured ones.
//!
//! **Interpolation.** Each table is a set of measured points over `D`
//! size coordinates (GEMM `(m, n, k)`, batched GEMM `(batch, m, n, k)`,
//! attention `(seq, batch·heads, head_dim)`, a vector kernel's element count,
//! Adam's parameter count, a collective's bytes). A query is priced by
//! multilinear interpolation in `log2` of every coordinate, of the log of
//! the *throughput* (work per device second, work being the shape's FLOPs,
//! elements or bytes) over the `2^D` grid points that bracket the query
//! (the grid's axes are the distinct measured values of each coordinate).
//! Coordinates outside the measured range are clamped to it, so beyond the
//! largest shape the throughput stays that of the largest (time grows with
//! the work), and below the smallest the time does not fall below the
//! table's smallest measured time. Bracketing points that were not measured
//! drop out and the others' weights are renormalised; when none of them was
//! measured, the nearest measured point (in `log2` distance) gives the
//! throughput. The host (issue) time is interpolated the same way in log.
//!
//! **Eager issue.** [`issue_queue_time`] turns a sequence of kernels into
//! wall time the way an eager framework runs them: the host issues kernel
//! `i` after spending `host_s` on it, the device runs kernels in order, each
//! starting when both the previous one has finished and it has been issued.

use std::collections::HashMap;

use serde::Serialize;
use thiserror::Error;

use super::{CollectiveOp, KernelProfile, Layout, Point, VectorOp};
use crate::analysis::workload::Datatype;

/// Device time and host issue time of one kernel (or one eager op), seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Cost {
    pub device_s: f64,
    pub host_s: f64,
}

/// A fused attention call: queries `[batch, heads, seq, head_dim]`, keys and
/// values `[batch, kv_heads, seq, head_dim]`. The kernels' time does not
/// depend on `kv_heads` (grouped heads are read in place), so the lookup
/// interpolates over `(seq, batch·heads, head_dim)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    pub batch: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub seq: u64,
    pub head_dim: u64,
    pub causal: bool,
    pub dropout: bool,
}

/// A query the profile has no table for.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LookupError {
    #[error("the kernel profile measured no {what} (re-run blueprint-calibrate with that section, or use a profile that has it)")]
    NoTable { what: String },
}

fn log2(x: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    (x as f64).log2()
}

/// A table's measured points with what every query needs, built once:
/// the grid's axes (the distinct measured values of each coordinate), the
/// points by coordinates and the smallest measured time.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Table {
    points: Vec<Point>,
    axes: Vec<Vec<u64>>,
    index: HashMap<Vec<u64>, usize>,
    floor: f64,
}

impl Table {
    /// `points` all have the same number of coordinates.
    pub fn new(points: Vec<Point>) -> Self {
        let dims = points.first().map_or(0, |p| p.coords.len());
        let mut axes: Vec<Vec<u64>> = (0..dims).map(|d| points.iter().map(|p| p.coords[d]).collect()).collect();
        for axis in &mut axes {
            axis.sort_unstable();
            axis.dedup();
        }
        let index = points.iter().enumerate().map(|(i, p)| (p.coords.clone(), i)).collect();
        let floor = points.iter().map(|p| p.cost.device_s).fold(f64::INFINITY, f64::min);
        Self { points, axes, index, floor }
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Prices `query` (see the module documentation); `work` gives a
    /// shape's work in any unit proportional to what the kernel does. None
    /// for an empty table or a query of another dimension.
    pub fn price(&self, query: &[u64], work: impl Fn(&[u64]) -> f64) -> Option<Cost> {
        let dims = query.len();
        if self.points.is_empty() || self.axes.len() != dims {
            return None;
        }
        let throughput = |p: &Point| work(&p.coords) / p.cost.device_s;
        let host_log = |p: &Point| p.cost.host_s.max(1e-15).ln();

        // Bracketing indices and weights per dimension.
        let mut brackets = Vec::with_capacity(dims);
        for (d, axis) in self.axes.iter().enumerate() {
            let q = log2(query[d]).clamp(log2(axis[0]), log2(axis[axis.len() - 1]));
            let hi = axis.iter().position(|&v| log2(v) >= q).unwrap_or(axis.len() - 1);
            let lo = if hi > 0 && log2(axis[hi]) > q { hi - 1 } else { hi };
            let t = if lo == hi { 0.0 } else { (q - log2(axis[lo])) / (log2(axis[hi]) - log2(axis[lo])) };
            brackets.push((axis[lo], axis[hi], t));
        }
        let (mut weight, mut log_tp, mut log_host) = (0.0, 0.0, 0.0);
        let mut corner = vec![0u64; dims];
        for mask in 0..(1usize << dims) {
            let mut w = 1.0;
            for (d, &(lo, hi, t)) in brackets.iter().enumerate() {
                let upper = mask >> d & 1 == 1;
                corner[d] = if upper { hi } else { lo };
                w *= if upper { t } else { 1.0 - t };
            }
            if w <= 0.0 {
                continue;
            }
            if let Some(&i) = self.index.get(corner.as_slice()) {
                let p = &self.points[i];
                weight += w;
                log_tp += w * throughput(p).ln();
                log_host += w * host_log(p);
            }
        }
        let (tp, host) = if weight > 1e-9 {
            ((log_tp / weight).exp(), (log_host / weight).exp())
        } else {
            let distance = |p: &Point| -> f64 { p.coords.iter().zip(query).map(|(&a, &b)| (log2(a) - log2(b)).powi(2)).sum() };
            let nearest = self.points.iter().min_by(|a, b| distance(a).total_cmp(&distance(b)))?;
            (throughput(nearest), nearest.cost.host_s)
        };
        Some(Cost { device_s: (work(query) / tp).max(self.floor), host_s: host })
    }
}

#[allow(clippy::cast_precision_loss)]
fn product(c: &[u64]) -> f64 {
    c.iter().map(|&v| v as f64).product()
}

/// Attention work over `(seq, batch·heads, head_dim)`: `seq²·batch·heads·head_dim`.
#[allow(clippy::cast_precision_loss)]
fn attention_work(c: &[u64]) -> f64 {
    (c[0] as f64) * product(c)
}

impl KernelProfile {
    /// A GEMM of a linear with forward shape `(m, n, k)` in `layout`.
    ///
    /// # Errors
    /// [`LookupError::NoTable`] when the profile measured no such GEMMs.
    pub fn gemm(&self, datatype: Datatype, layout: Layout, m: u64, n: u64, k: u64) -> Result<Cost, LookupError> {
        let points = self
            .gemm
            .get(&(datatype, layout))
            .ok_or_else(|| LookupError::NoTable { what: format!("{} GEMMs of layout {}", datatype.name(), layout.name()) })?;
        points.price(&[m, n, k], product).ok_or_else(|| LookupError::NoTable { what: format!("{} GEMMs", datatype.name()) })
    }

    /// A batched GEMM (`batch` products of the linear shape `(m, n, k)`).
    ///
    /// # Errors
    /// [`LookupError::NoTable`] when the profile measured no such products.
    pub fn bmm(&self, datatype: Datatype, layout: Layout, batch: u64, m: u64, n: u64, k: u64) -> Result<Cost, LookupError> {
        let points = self
            .bmm
            .get(&(datatype, layout))
            .ok_or_else(|| LookupError::NoTable { what: format!("{} batched GEMMs of layout {}", datatype.name(), layout.name()) })?;
        points.price(&[batch, m, n, k], product).ok_or_else(|| LookupError::NoTable { what: format!("{} batched GEMMs", datatype.name()) })
    }

    /// Fused attention's forward and backward.
    ///
    /// # Errors
    /// [`LookupError::NoTable`] when the profile measured no fused attention
    /// of this datatype, causality and dropout, or no backward of it.
    pub fn attention(&self, datatype: Datatype, shape: &AttentionShape) -> Result<(Cost, Cost), LookupError> {
        let what = || {
            format!(
                "{} fused attention ({}causal, {} dropout)",
                datatype.name(),
                if shape.causal { "" } else { "non-" },
                if shape.dropout { "with" } else { "without" }
            )
        };
        let (fwd, bwd) =
            self.attention.get(&(datatype, shape.causal, shape.dropout)).ok_or_else(|| LookupError::NoTable { what: what() })?;
        let query = [shape.seq, shape.batch * shape.heads, shape.head_dim];
        let f = fwd.price(&query, attention_work).ok_or_else(|| LookupError::NoTable { what: what() })?;
        let b = bwd.price(&query, attention_work).ok_or_else(|| LookupError::NoTable { what: format!("{} backward", what()) })?;
        Ok((f, b))
    }

    /// A memory-bound kernel over `elems` elements: forward, and backward
    /// when the profile measured it.
    ///
    /// # Errors
    /// [`LookupError::NoTable`] when the profile measured no such kernel.
    pub fn vector(&self, datatype: Datatype, op: VectorOp, elems: u64) -> Result<(Cost, Option<Cost>), LookupError> {
        let (fwd, bwd) = self
            .vector
            .get(&(datatype, op))
            .ok_or_else(|| LookupError::NoTable { what: format!("{} {} kernels", datatype.name(), op.name()) })?;
        let f = fwd
            .price(&[elems], product)
            .ok_or_else(|| LookupError::NoTable { what: format!("{} {} kernels", datatype.name(), op.name()) })?;
        Ok((f, bwd.price(&[elems], product)))
    }

    /// One fused Adam step over `params` parameters.
    ///
    /// # Errors
    /// [`LookupError::NoTable`] when the profile measured no Adam step.
    pub fn adam(&self, params: u64) -> Result<Cost, LookupError> {
        self.adam.price(&[params], product).ok_or_else(|| LookupError::NoTable { what: "Adam steps".into() })
    }

    /// Seconds of one collective over `bytes` on the profile's ranks.
    ///
    /// # Errors
    /// [`LookupError::NoTable`] when the profile has no curve for `op`.
    pub fn collective(&self, op: CollectiveOp, bytes: u64) -> Result<f64, LookupError> {
        let points = self.collectives.get(&op).ok_or_else(|| LookupError::NoTable { what: format!("{} curve", op.name()) })?;
        points.price(&[bytes], product).map(|c| c.device_s).ok_or_else(|| LookupError::NoTable { what: format!("{} curve", op.name()) })
    }
}

/// Wall seconds of `kernels` issued eagerly in order by one host thread to
/// one in-order device queue, both idle at the start (see the module
/// documentation).
#[must_use]
pub fn issue_queue_time(kernels: &[Cost]) -> f64 {
    let (mut host, mut device) = (0.0f64, 0.0f64);
    for k in kernels {
        host += k.host_s;
        device = device.max(host) + k.device_s;
    }
    device
}
