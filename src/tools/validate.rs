//! `blueprint-search --validate DIR`: Blueprint's estimate against the
//! Megatron-LM measurements of Korthikanti et al. 2022 that Calculon's
//! `llm-validation` compares with — Figure 1 (parameter and optimizer
//! memory, activation memory), Figure 7 (activation memory relative to no
//! recompute or sequence parallelism) and Table 5 (step time) — printing
//! the error of each configuration in Calculon's own tables, or as JSON.
//!
//! `DIR` is laid out as Calculon's repository: `models/<model>.json`,
//! `systems/<system>.json` and `validation/seqsel/{fig1,fig7,tab5}/
//! <model>_<mode>.json` (Calculon's execution files); a Calculon checkout
//! or Blueprint's `test/oracles/calculon`. The measurements are built in
//! (`test/oracles/calculon/validation/korthikanti-2022.json`). Each
//! configuration is estimated with the plain-Rust estimate the search runs
//! (no MLIR): the numbers are those of `blueprint-translate --estimate
//! --calculon` on the same files.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::analysis::estimate::{block_tasks, calculon_binding, estimate, EstimateOptions};
use crate::analysis::system::SystemProfile;
use crate::analysis::workload::{derive_training_block, spec_from_calculon, BlockFacts};

/// The measurements, with their provenance.
pub const MEASURED: &str = include_str!("../../test/oracles/calculon/validation/korthikanti-2022.json");

const GIB: f64 = 1_073_741_824.0;

#[derive(Debug, Deserialize)]
struct ParOpt {
    par_opt: f64,
    act: f64,
}

#[derive(Debug, Deserialize)]
struct Figure<T> {
    system: String,
    modes: Vec<String>,
    #[serde(alias = "measured_gib", alias = "measured_percent", alias = "measured_seconds")]
    measured: BTreeMap<String, BTreeMap<String, T>>,
}

#[derive(Debug, Deserialize)]
struct Measured {
    models: Vec<String>,
    fig1: Figure<ParOpt>,
    fig7: Figure<f64>,
    tab5: Figure<f64>,
}

/// What Calculon's validation reads of one configuration's statistics.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Stats {
    pub weight_space: f64,
    pub weight_grad_space: f64,
    pub optimizer_space: f64,
    pub act_space: f64,
    pub act_checkpoint_size: f64,
    pub total_time: f64,
    pub proc_mem_tier1_cap_req: f64,
}

/// One compared figure.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `fig1`, `fig7` or `tab5`.
    pub figure: &'static str,
    /// `par_opt_gib`, `act_gib`, `act_percent` or `step_seconds`.
    pub quantity: &'static str,
    pub model: String,
    pub mode: String,
    pub measured: f64,
    pub estimated: f64,
    /// Calculon's `100 (1 − estimated / measured)`.
    pub error_percent: f64,
    /// The configuration's statistics.
    pub stats: Stats,
}

/// Python's `str(float)` for the measured numbers Calculon prints as they
/// are (`100.0`, `1.1`, `45.5625`).
fn python_float(x: f64) -> String {
    let text = format!("{x}");
    if text.contains(['.', 'e', 'i', 'N']) {
        text
    } else {
        text + ".0"
    }
}

fn error_percent(measured: f64, estimated: f64) -> f64 {
    100.0 * (1.0 - estimated / measured)
}

/// The statistics of `validation/seqsel/<figure>/<model>_<mode>.json` on `system`.
fn stats_of(dir: &Path, figure: &str, model: &str, mode: &str, system: &SystemProfile) -> Result<Stats, String> {
    let read = |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("cannot read '{}': {e}", path.display()));
    let model_path = dir.join("models").join(format!("{model}.json"));
    let execution_path = dir.join("validation").join("seqsel").join(figure).join(format!("{model}_{mode}.json"));
    let (spec, run) = spec_from_calculon(&read(&model_path)?, Some(model), &read(&execution_path)?)
        .map_err(|e| format!("{}: error: {e}", execution_path.display()))?;
    let derivation = derive_training_block(&spec).map_err(|e| format!("{}: error: {e}", execution_path.display()))?;
    let block = BlockFacts::from_derivation(&derivation, &spec);
    let tasks = block_tasks(&derivation);
    let (binding, options) = (calculon_binding(&run), EstimateOptions::of_calculon(&run));
    let e = estimate(&tasks, &block, &spec, system, &binding, &options).map_err(|e| format!("{}: error: {e}", execution_path.display()))?;
    let m = &e.memory.per_processor;
    Ok(Stats {
        weight_space: m.weight_space,
        weight_grad_space: m.weight_grad_space,
        optimizer_space: m.optimizer_space,
        act_space: m.act_space,
        act_checkpoint_size: m.act_checkpoint_size,
        total_time: e.timing_seconds.total_time,
        proc_mem_tier1_cap_req: m.proc_mem_tier1_cap_req,
    })
}

fn system_of(dir: &Path, name: &str) -> Result<SystemProfile, String> {
    let path = dir.join("systems").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    SystemProfile::from_json(&text).map_err(|e| format!("{}: error: {e}", path.display()))
}

/// Every compared figure, in Calculon's order (Figure 1, Figure 7, Table 5;
/// models, then modes, as its tables).
///
/// # Errors
/// A file of `dir` missing or invalid (named), or a configuration the
/// estimate rejects.
pub fn validate(dir: &Path) -> Result<Vec<Row>, String> {
    let measured: Measured = serde_json::from_str(MEASURED).map_err(|e| format!("the built-in measurements: {e}"))?;
    let missing = |figure: &str, model: &str, mode: &str| format!("the built-in measurements have no {figure} {model} {mode}");
    let mut rows = Vec::new();

    // Figure 1: parameters and optimizer state, then activations, GiB.
    let system = system_of(dir, &measured.fig1.system)?;
    let mut fig1 = Vec::new();
    for model in &measured.models {
        for mode in &measured.fig1.modes {
            let p = measured.fig1.measured.get(model).and_then(|m| m.get(mode)).ok_or_else(|| missing("fig1", model, mode))?;
            fig1.push((model, mode, p, stats_of(dir, "fig1", model, mode, &system)?));
        }
    }
    for (quantity, pick) in [
        (
            "par_opt_gib",
            (|p: &ParOpt, s: &Stats| (p.par_opt, (s.weight_space + s.weight_grad_space + s.optimizer_space) / GIB))
                as fn(&ParOpt, &Stats) -> (f64, f64),
        ),
        ("act_gib", |p: &ParOpt, s: &Stats| (p.act, s.act_space / GIB)),
    ] {
        for (model, mode, p, stats) in &fig1 {
            let (measured, estimated) = pick(p, stats);
            rows.push(Row {
                figure: "fig1",
                quantity,
                model: (*model).clone(),
                mode: (*mode).clone(),
                measured,
                estimated,
                error_percent: error_percent(measured, estimated),
                stats: *stats,
            });
        }
    }

    // Figure 7: activations (and checkpoints) relative to mode `none`.
    let system = system_of(dir, &measured.fig7.system)?;
    for model in &measured.models {
        let none = stats_of(dir, "fig7", model, "none", &system)?;
        let base = none.act_space + none.act_checkpoint_size;
        for mode in &measured.fig7.modes {
            let p = *measured.fig7.measured.get(model).and_then(|m| m.get(mode)).ok_or_else(|| missing("fig7", model, mode))?;
            let stats = stats_of(dir, "fig7", model, mode, &system)?;
            let estimated = (stats.act_space + stats.act_checkpoint_size) / base * 100.0;
            rows.push(Row {
                figure: "fig7",
                quantity: "act_percent",
                model: model.clone(),
                mode: mode.clone(),
                measured: p,
                estimated,
                error_percent: error_percent(p, estimated),
                stats,
            });
        }
    }

    // Table 5: step time.
    let system = system_of(dir, &measured.tab5.system)?;
    for model in &measured.models {
        for mode in &measured.tab5.modes {
            let p = *measured.tab5.measured.get(model).and_then(|m| m.get(mode)).ok_or_else(|| missing("tab5", model, mode))?;
            let stats = stats_of(dir, "tab5", model, mode, &system)?;
            rows.push(Row {
                figure: "tab5",
                quantity: "step_seconds",
                model: model.clone(),
                mode: mode.clone(),
                measured: p,
                estimated: stats.total_time,
                error_percent: error_percent(p, stats.total_time),
                stats,
            });
        }
    }
    Ok(rows)
}

/// The rows of one table, grouped by model in order of appearance.
fn by_model<'a>(selected: impl Iterator<Item = &'a Row>) -> Vec<(String, Vec<&'a Row>)> {
    let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in selected {
        match groups.last_mut() {
            Some((model, rows)) if *model == r.model => rows.push(r),
            _ => groups.push((r.model.clone(), vec![r])),
        }
    }
    groups
}

/// The rows as Calculon's `llm-validation` prints them (the same tables,
/// byte for byte when the numbers agree).
#[must_use]
pub fn tables(rows: &[Row]) -> String {
    let mut out = String::new();
    let summary = |out: &mut String, errors: &[f64]| {
        let max = errors.iter().fold(0.0_f64, |m, e| if e.abs() > m { e.abs() } else { m });
        let ave = errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64;
        let _ = writeln!(out, "Ave,,{ave:.2}%");
        let _ = writeln!(out, "Max,,{max:.2}%");
        let _ = writeln!(out, ",");
    };
    // One table: a title row (each mode over its columns), the column
    // names per mode, a row per model (each mode's cells), the summary.
    let mut table = |quantity: &str, title: &str, names: &[&str], cells: &dyn Fn(&Row) -> String| {
        let groups = by_model(rows.iter().filter(|r| r.quantity == quantity));
        // The mode's name over its first column, empty cells over the rest.
        let filler = ",".repeat(names.len() - 1);
        let columns = format!(",|,{}", names.join(","));
        let modes = groups.first().map_or(String::new(), |(_, rows)| rows.iter().map(|r| format!(",|,{}{filler}", r.mode)).collect());
        let _ = writeln!(out, "{title}{modes},");
        let _ = writeln!(out, "Model{}", columns.repeat(groups.first().map_or(0, |g| g.1.len())) + ",");
        let mut errors = Vec::new();
        for (model, rows) in &groups {
            let _ = write!(out, "{model},");
            for r in rows {
                let _ = write!(out, "|,{}", cells(r));
                errors.push(r.error_percent);
            }
            let _ = writeln!(out);
        }
        summary(&mut out, &errors);
    };
    let gib = |r: &Row| format!("{},{:.2},{:.2}%,", python_float(r.measured), r.estimated, r.error_percent);
    let columns = ["Profile", "Calc", "Delta"];
    table("par_opt_gib", "*Params & Opt", &columns, &gib);
    table("act_gib", "*Activations", &columns, &gib);
    table("act_percent", "Activations", &columns, &|r| {
        format!("{}%,{:.2}%,{:.2}%,", python_float(r.measured), r.estimated, r.error_percent)
    });
    table("step_seconds", "End-to-end", &["Profile", "Calc", "Delta", "GiB"], &|r| {
        let gib = r.stats.proc_mem_tier1_cap_req / GIB;
        format!("{},{:.2},{:.2}%,{gib:.2},", python_float(r.measured), r.estimated, r.error_percent)
    });
    out
}

/// The rows as a JSON report: the measurements' provenance, every row at
/// full precision.
///
/// # Errors
/// Serialization (not expected).
pub fn json(rows: &[Row]) -> Result<String, String> {
    let source = serde_json::from_str::<serde_json::Value>(MEASURED).ok().and_then(|v| v.get("source").cloned());
    let report = serde_json::json!({
        "measurements": source,
        "error_percent": "100 (1 - estimated / measured), as Calculon's llm-validation",
        "rows": rows,
    });
    serde_json::to_string_pretty(&report).map(|s| s + "\n").map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_numbers_print_as_python_does() {
        for (x, text) in [(100.0, "100.0"), (1.1, "1.1"), (45.5625, "45.5625"), (32.958984375, "32.958984375"), (94.42, "94.42")] {
            assert_eq!(python_float(x), text);
        }
    }

    #[test]
    fn measurements_cover_every_configuration() {
        let m: Measured = serde_json::from_str(MEASURED).expect("the built-in measurements");
        assert_eq!(m.models.len(), 4);
        for model in &m.models {
            assert!(m.fig1.modes.iter().all(|mode| m.fig1.measured[model].contains_key(mode)));
            assert!(m.fig7.modes.iter().all(|mode| m.fig7.measured[model].contains_key(mode)));
            assert!(m.tab5.modes.iter().all(|mode| m.tab5.measured[model].contains_key(mode)));
        }
    }
}
