//! The search's report for people: a ranked table with the fields that
//! differ between the rows (the ones that do not are said once above it),
//! sample rate, step time, MFU and memory per processor in GiB, then what
//! was pruned and the nearest miss of each memory reason; or the same rows
//! as CSV with every field.
//!
//! Rendered from the JSON [`Report`], so the table shows the numbers the
//! JSON holds.

use std::fmt::Write;

use serde_json::Value;

use super::output::{Entry, Report};

const GIB: f64 = 1_073_741_824.0;

/// A configuration field: column header, path in an entry's JSON, value
/// when the path is absent (fields left out at their default).
const FIELDS: [(&str, &str, &str); 19] = [
    ("tp", "mapping.tp", ""),
    ("pp", "mapping.pp", ""),
    ("dp", "mapping.dp", ""),
    ("pipeline_interleaving", "mapping.pipeline_interleaving", ""),
    ("global_batch", "workload.global_batch", ""),
    ("microbatch", "workload.microbatch", ""),
    ("recompute", "mapping.recompute", ""),
    ("tp_comm", "mapping.tp_comm", ""),
    ("seq_par_ag_redo", "mapping.seq_par_ag_redo", ""),
    ("fused_activation", "mapping.fused_activation", ""),
    ("optimizer_sharding", "mapping.optimizer_sharding", ""),
    ("tp_overlap", "mapping.tp_overlap", "none"),
    ("tp_net", "networks.tp", ""),
    ("pp_net", "networks.pp", ""),
    ("dp_net", "networks.dp", ""),
    ("dp_overlap", "estimate_options.data_par_overlap", ""),
    ("weight_offload", "estimate_options.weight_offload", ""),
    ("activations_offload", "estimate_options.activations_offload", ""),
    ("optimizer_offload", "estimate_options.optimizer_offload", ""),
];

fn field(entry: &Value, path: &str, absent: &str) -> String {
    let mut at = entry;
    for key in path.split('.') {
        match at.get(key) {
            Some(next) => at = next,
            None => return absent.to_string(),
        }
    }
    match at {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `x` with `digits` significant digits (at least one decimal below 1000).
fn significant(x: f64, digits: i32) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    let decimals = (digits - 1 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// [`significant`] without trailing zeros (80, not 80.00).
fn trimmed(x: f64, digits: i32) -> String {
    let text = significant(x, digits);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

fn values(entry: &Entry) -> Vec<String> {
    let json = serde_json::to_value(entry).unwrap_or(Value::Null);
    FIELDS.iter().map(|(_, path, absent)| field(&json, path, absent)).collect()
}

/// The fields of a report: the offload ones only when the space explores
/// offload.
fn shown(report: &Report) -> usize {
    if report.space.offload {
        FIELDS.len()
    } else {
        FIELDS.len() - 3
    }
}

fn memory_bytes(entry: &Entry) -> f64 {
    entry.per_processor.map_or(f64::NAN, |m| m.proc_mem_tier1_cap_req)
}

/// `name value` pairs of the fields at `columns` of `row`.
fn described(row: &[String], columns: impl Iterator<Item = usize>) -> String {
    columns.map(|i| format!("{} {}", FIELDS[i].0, row[i])).collect::<Vec<_>>().join(", ")
}

/// The ranked table.
#[must_use]
pub fn table(report: &Report) -> String {
    let mut out = String::new();
    let model = report.model.name.as_deref().unwrap_or("the model");
    let system = std::path::Path::new(&report.system).file_name().map_or(report.system.clone(), |f| f.to_string_lossy().into_owned());
    let space = &report.space;
    let capacity = space.memory_limit_bytes + space.headroom_bytes;
    let kept = if space.headroom_bytes > 0.0 {
        format!(", {} GiB kept free: {} GiB to use", trimmed(space.headroom_bytes / GIB, 3), trimmed(space.memory_limit_bytes / GIB, 4))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{model} on {} processors of {system}, {}, batch up to {}; first memory tier {} GiB{kept}",
        space.procs,
        space.datatype,
        space.max_batch,
        trimmed(capacity / GIB, 4)
    );
    let t = &report.totals;
    let pruned: Vec<String> = t.pruned.iter().map(|(reason, p)| format!("{reason} {}", p.count)).collect();
    let _ = writeln!(
        out,
        "{} configurations: {} fit, {} pruned{}; {:.3} s{}",
        t.configurations,
        t.fit,
        t.pruned_total,
        if pruned.is_empty() { String::new() } else { format!(" ({})", pruned.join(", ")) },
        t.wall_seconds,
        if t.interrupted { "; interrupted: the best of those evaluated so far" } else { "" }
    );

    let n = shown(report);
    let rows: Vec<Vec<String>> = report.top.iter().map(|e| values(e).into_iter().take(n).collect()).collect();
    let differs: Vec<bool> = (0..n).map(|i| rows.iter().any(|r| r[i] != rows[0][i])).collect();
    if let Some(first) = rows.first() {
        let same = described(first, (0..n).filter(|&i| !differs[i]));
        if !same.is_empty() {
            let _ = writeln!(out, "Same in every row: {same}");
        }
    }
    let _ = writeln!(out);

    let slowest = report.top.iter().filter_map(|e| e.total_time).fold(0.0, f64::max);
    let (step_header, step_scale) = if slowest < 10.0 { ("step ms", 1e3) } else { ("step s", 1.0) };
    let mut headers: Vec<&str> = vec!["rank", "index"];
    headers.extend(FIELDS.iter().zip(&differs).filter(|(_, d)| **d).map(|((h, _, _), _)| *h));
    let first_metric = headers.len();
    headers.extend(["samples/s", step_header, "MFU", "GiB/proc"]);
    let cells: Vec<Vec<String>> = report
        .top
        .iter()
        .zip(&rows)
        .enumerate()
        .map(|(rank, (entry, row))| {
            let mut cells = vec![(rank + 1).to_string(), entry.index.to_string()];
            cells.extend(row.iter().zip(&differs).filter(|(_, d)| **d).map(|(v, _)| v.clone()));
            cells.push(entry.sample_rate.map_or("-".into(), |r| significant(r, 5)));
            cells.push(entry.total_time.map_or("-".into(), |t| significant(t * step_scale, 5)));
            cells.push(entry.mfu.map_or("-".into(), |m| format!("{:.1}%", m * 100.0)));
            cells.push(format!("{:.2}", memory_bytes(entry) / GIB));
            cells
        })
        .collect();
    let widths: Vec<usize> =
        (0..headers.len()).map(|c| cells.iter().map(|r| r[c].chars().count()).chain([headers[c].len()]).max().unwrap_or(0)).collect();
    // Columns of numbers right-aligned, of words left-aligned.
    let numeric: Vec<bool> =
        (0..headers.len()).map(|c| c < 2 || c >= first_metric || cells.iter().all(|r| r[c].parse::<f64>().is_ok())).collect();
    let line = |texts: &[String]| {
        let mut s = String::new();
        for (c, text) in texts.iter().enumerate() {
            let w = widths[c];
            if c > 0 {
                s.push_str("  ");
            }
            if numeric[c] {
                let _ = write!(s, "{text:>w$}");
            } else {
                let _ = write!(s, "{text:<w$}");
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&headers.iter().map(|h| (*h).to_string()).collect::<Vec<_>>()));
    for row in &cells {
        let _ = writeln!(out, "{}", line(row));
    }

    for (reason, p) in &t.pruned {
        if let Some(near) = &p.nearest {
            let c = &near.configuration;
            // The second tier's miss: what it would offload there.
            let (need, tier) = if *reason == "memory_tier2" {
                (near.limit_bytes + near.over_by_bytes, " in the second tier")
            } else {
                (memory_bytes(c), "")
            };
            let _ = writeln!(
                out,
                "\nNearest miss ({reason}): index {} needs {} GiB per processor{tier}, {} GiB over the {} GiB limit; it would run at {} samples/s{}: {}",
                c.index,
                trimmed(need / GIB, 4),
                trimmed(near.over_by_bytes / GIB, 3),
                trimmed(near.limit_bytes / GIB, 4),
                c.sample_rate.map_or("-".into(), |r| significant(r, 5)),
                c.mfu.map_or(String::new(), |m| format!(" (MFU {:.1}%)", m * 100.0)),
                described(&values(c), 0..n)
            );
        }
    }
    let _ = writeln!(
        out,
        "\nMFU: model FLOPs (the decoder blocks' forward and backward ops, matmul and other, as derived for the plan at TP 1 without recompute) / (step time × processors × {} TFLOP/s {} matrix peak). Full report: --format json or -o FILE.",
        trimmed(report.model_flops.peak_flops_per_processor / 1e12, 4),
        space.datatype
    );
    out
}

/// The ranked rows as CSV, every field.
#[must_use]
pub fn csv(report: &Report) -> String {
    let n = shown(report);
    let mut out = String::from("rank,index,");
    for (header, _, _) in FIELDS.iter().take(n) {
        out.push_str(header);
        out.push(',');
    }
    out.push_str("sample_rate,step_seconds,mfu,memory_bytes_per_processor,memory_gib_per_processor\n");
    for (rank, entry) in report.top.iter().enumerate() {
        let _ = write!(out, "{},{},", rank + 1, entry.index);
        for value in values(entry).into_iter().take(n) {
            out.push_str(&value);
            out.push(',');
        }
        let number = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x}"));
        let bytes = memory_bytes(entry);
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            number(entry.sample_rate),
            number(entry.total_time),
            number(entry.mfu),
            number(Some(bytes).filter(|b| b.is_finite())),
            number(Some(bytes / GIB).filter(|b| b.is_finite()))
        );
    }
    out
}
