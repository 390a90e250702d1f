//! `blueprint-search --all`: every configuration of the space, one line
//! each, in the canonical order (Calculon's `llm-all-executions`, which
//! lists the configurations that fit; this lists the pruned ones too, with
//! the reason). CSV with a header line, or JSON lines with the same keys.
//!
//! Columns: `index`, the strategy in the table's names (`tp` … `dp_net`,
//! `dp_overlap`, the three offload flags), `fits` (empty / `null` when
//! the configuration has no estimate), `pruned` (the reason, as in the
//! report's `totals.pruned`), `sample_rate`, `mfu`, the ten times of
//! `timing_seconds` (Calculon's names, `total_time` the step), the seven
//! memory fields of `per_processor` and `proc_mem_tier2_cap_req` (bytes).
//! Numbers are written in full (the shortest text that reads back as the
//! same `f64`).

use std::fmt::Write as _;

use super::evaluate::{Verdict, Visit};
use super::output::ModelFlops;
use super::space::Config;
use crate::analysis::workload::{Recompute, TpComm, TpOverlap};

/// How the listing is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingFormat {
    Csv,
    JsonLines,
}

/// The strategy columns.
const STRATEGY: [&str; 19] = [
    "tp",
    "pp",
    "dp",
    "pipeline_interleaving",
    "global_batch",
    "microbatch",
    "recompute",
    "tp_comm",
    "seq_par_ag_redo",
    "fused_activation",
    "optimizer_sharding",
    "tp_overlap",
    "tp_net",
    "pp_net",
    "dp_net",
    "dp_overlap",
    "weight_offload",
    "activations_offload",
    "optimizer_offload",
];

/// The estimate columns after `fits` and `pruned`.
const NUMBERS: [&str; 20] = [
    "sample_rate",
    "mfu",
    "fw_time",
    "bw_time",
    "optim_step_time",
    "recompute_time",
    "recomm_exposed_time",
    "bubble_time",
    "tp_comm_exposed_time",
    "pp_comm_exposed_time",
    "dp_comm_exposed_time",
    "total_time",
    "weight_space",
    "act_space",
    "act_checkpoint_size",
    "act_grad_space",
    "weight_grad_space",
    "optimizer_space",
    "proc_mem_tier1_cap_req",
    "proc_mem_tier2_cap_req",
];

/// Every column, in order.
pub fn columns() -> impl Iterator<Item = &'static str> {
    std::iter::once("index").chain(STRATEGY).chain(["fits", "pruned"]).chain(NUMBERS)
}

/// The CSV header line (nothing for JSON lines).
#[must_use]
pub fn header(format: ListingFormat) -> String {
    match format {
        ListingFormat::Csv => columns().collect::<Vec<_>>().join(",") + "\n",
        ListingFormat::JsonLines => String::new(),
    }
}

fn recompute_name(r: Recompute) -> &'static str {
    match r {
        Recompute::None => "none",
        Recompute::AttnOnly => "attn_only",
        Recompute::Full => "full",
    }
}

fn tp_comm_name(c: TpComm) -> &'static str {
    match c {
        TpComm::Ar => "ar",
        TpComm::P2pRsAg => "p2p_rs_ag",
        TpComm::RsAg => "rs_ag",
    }
}

fn tp_overlap_name(o: TpOverlap) -> &'static str {
    match o {
        TpOverlap::None => "none",
        TpOverlap::Ring => "ring",
        TpOverlap::Pipe => "pipe",
    }
}

/// Formats the lines of the configurations it is shown into `buffer`.
pub struct LineWriter<'a> {
    pub format: ListingFormat,
    pub flops: &'a ModelFlops,
    pub buffer: String,
}

impl LineWriter<'_> {
    /// One field: its separator (and key, for JSON), then `value`.
    fn field(&mut self, at: usize, name: &str, value: impl std::fmt::Display, quoted: bool) {
        let b = &mut self.buffer;
        match self.format {
            ListingFormat::Csv => {
                if at > 0 {
                    b.push(',');
                }
                let _ = write!(b, "{value}");
            }
            ListingFormat::JsonLines => {
                b.push_str(if at > 0 { ",\"" } else { "{\"" });
                b.push_str(name);
                b.push_str("\":");
                if quoted {
                    let _ = write!(b, "\"{value}\"");
                } else {
                    let _ = write!(b, "{value}");
                }
            }
        }
    }

    /// An absent value: empty in CSV, `null` in JSON.
    fn absent(&mut self, at: usize, name: &str) {
        match self.format {
            ListingFormat::Csv => self.field(at, name, "", false),
            ListingFormat::JsonLines => self.field(at, name, "null", false),
        }
    }

    fn number(&mut self, at: usize, name: &str, x: Option<f64>) {
        match x.filter(|x| x.is_finite()) {
            Some(x) => self.field(at, name, x, false),
            None => self.absent(at, name),
        }
    }

    /// The line of configuration `index`.
    pub fn line(&mut self, index: u64, config: &Config, verdict: Verdict<'_>) {
        let k = &config.key;
        let n = &config.networks;
        let mut at = 0;
        let mut next = || {
            at += 1;
            at - 1
        };
        self.field(next(), "index", index, false);
        let counts = [k.tp, k.pp, k.dp, config.pipeline_interleaving, k.global_batch, k.microbatch];
        for (i, value) in counts.into_iter().enumerate() {
            self.field(next(), STRATEGY[i], value, false);
        }
        self.field(next(), "recompute", recompute_name(k.recompute), true);
        self.field(next(), "tp_comm", tp_comm_name(k.tp_comm), true);
        self.field(next(), "seq_par_ag_redo", k.seq_par_ag_redo, false);
        self.field(next(), "fused_activation", k.fused_activation, false);
        self.field(next(), "optimizer_sharding", k.optimizer_sharding, false);
        self.field(next(), "tp_overlap", tp_overlap_name(k.tp_overlap), true);
        self.field(next(), "tp_net", n.tp, false);
        self.field(next(), "pp_net", n.pp, false);
        self.field(next(), "dp_net", n.dp, false);
        self.field(next(), "dp_overlap", config.data_par_overlap, false);
        self.field(next(), "weight_offload", config.offload.weights, false);
        self.field(next(), "activations_offload", config.offload.activations, false);
        self.field(next(), "optimizer_offload", config.offload.optimizer, false);
        let (estimate, reason) = match verdict {
            Verdict::Fits(e) => (Some(e), None),
            Verdict::Pruned { reason, estimate } => (estimate, Some(reason)),
        };
        match estimate {
            Some(_) => self.field(next(), "fits", reason.is_none(), false),
            None => self.absent(next(), "fits"),
        }
        match reason {
            Some(reason) => self.field(next(), "pruned", reason, true),
            None => self.absent(next(), "pruned"),
        }
        match estimate {
            Some(e) => {
                let t = &e.timing_seconds;
                self.number(next(), NUMBERS[0], Some(e.sample_rate));
                self.number(next(), NUMBERS[1], self.flops.mfu(config, t.total_time));
                for (name, value) in t.fields() {
                    self.number(next(), name, Some(value));
                }
                for (name, value) in e.memory.per_processor.fields() {
                    self.number(next(), name, Some(value));
                }
                self.number(next(), "proc_mem_tier2_cap_req", Some(e.memory.proc_mem_tier2_cap_req));
            }
            None => {
                for name in NUMBERS {
                    self.absent(next(), name);
                }
            }
        }
        self.buffer.push_str(match self.format {
            ListingFormat::Csv => "\n",
            ListingFormat::JsonLines => "}\n",
        });
    }
}

impl Visit for LineWriter<'_> {
    fn visit(&mut self, index: u64, config: &Config, verdict: Verdict<'_>) {
        self.line(index, config, verdict);
    }
}
