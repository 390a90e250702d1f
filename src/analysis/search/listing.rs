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
//! Numbers are written in full: integral values as integers, others in
//! the shortest text that reads back as the same `f64`.

use super::evaluate::{Verdict, Visit};
use super::output::ModelFlops;
use super::space::{BlockKey, Config};
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
///
/// Fast, since a listing formats a line per configuration and the search
/// evaluates one in about a microsecond: the key's columns are formatted
/// once per block key, integers with `itoa`, other numbers with `zmij`
/// (the shortest text that reads back as the same `f64`, as the JSON
/// report's).
pub struct LineWriter<'a> {
    format: ListingFormat,
    flops: &'a ModelFlops,
    pub buffer: String,
    /// The key whose columns `before` and `after` hold (before and after
    /// `pipeline_interleaving`).
    key: Option<BlockKey>,
    before: String,
    after: String,
    floats: zmij::Buffer,
    integers: itoa::Buffer,
}

/// A value's text in a column.
enum Cell<'t> {
    /// Written as is (numbers, booleans).
    Bare(&'t str),
    /// Quoted in JSON.
    Text(&'t str),
    /// Empty in CSV, `null` in JSON.
    Absent,
}

impl<'a> LineWriter<'a> {
    #[must_use]
    pub fn new(format: ListingFormat, flops: &'a ModelFlops, capacity: usize) -> Self {
        Self {
            format,
            flops,
            buffer: String::with_capacity(capacity),
            key: None,
            before: String::new(),
            after: String::new(),
            floats: zmij::Buffer::new(),
            integers: itoa::Buffer::new(),
        }
    }

    /// Appends a column (its separator, and key in JSON) to `out`.
    fn push(format: ListingFormat, out: &mut String, first: bool, name: &str, cell: Cell<'_>) {
        match format {
            ListingFormat::Csv => {
                if !first {
                    out.push(',');
                }
                match cell {
                    Cell::Bare(t) | Cell::Text(t) => out.push_str(t),
                    Cell::Absent => {}
                }
            }
            ListingFormat::JsonLines => {
                out.push_str(if first { "{\"" } else { ",\"" });
                out.push_str(name);
                out.push_str("\":");
                match cell {
                    Cell::Bare(t) => out.push_str(t),
                    Cell::Text(t) => {
                        out.push('"');
                        out.push_str(t);
                        out.push('"');
                    }
                    Cell::Absent => out.push_str("null"),
                }
            }
        }
    }

    fn flag(b: bool) -> Cell<'static> {
        Cell::Bare(if b { "true" } else { "false" })
    }

    fn integer(&mut self, name: &str, x: u64) {
        let text = self.integers.format(x);
        Self::push(self.format, &mut self.buffer, false, name, Cell::Bare(text));
    }

    /// A number: integral values below 2^53 as integers, others in the
    /// shortest round-trip text; not finite or absent as absent.
    fn number(&mut self, name: &str, x: Option<f64>) {
        let cell = match x.filter(|x| x.is_finite()) {
            Some(x) if x == x.trunc() && x.abs() < 9_007_199_254_740_992.0 => Cell::Bare(self.integers.format(x as i64)),
            Some(x) => Cell::Bare(self.floats.format_finite(x)),
            None => Cell::Absent,
        };
        Self::push(self.format, &mut self.buffer, false, name, cell);
    }

    /// The key's columns: `tp`, `pp`, `dp`, then `global_batch` to `tp_overlap`.
    fn key_columns(&mut self, k: &BlockKey) {
        let (f, before, after) = (self.format, &mut self.before, &mut self.after);
        before.clear();
        after.clear();
        let mut n = itoa::Buffer::new();
        Self::push(f, before, false, "tp", Cell::Bare(n.format(k.tp)));
        Self::push(f, before, false, "pp", Cell::Bare(n.format(k.pp)));
        Self::push(f, before, false, "dp", Cell::Bare(n.format(k.dp)));
        Self::push(f, after, false, "global_batch", Cell::Bare(n.format(k.global_batch)));
        Self::push(f, after, false, "microbatch", Cell::Bare(n.format(k.microbatch)));
        Self::push(f, after, false, "recompute", Cell::Text(recompute_name(k.recompute)));
        Self::push(f, after, false, "tp_comm", Cell::Text(tp_comm_name(k.tp_comm)));
        Self::push(f, after, false, "seq_par_ag_redo", Self::flag(k.seq_par_ag_redo));
        Self::push(f, after, false, "fused_activation", Self::flag(k.fused_activation));
        Self::push(f, after, false, "optimizer_sharding", Self::flag(k.optimizer_sharding));
        Self::push(f, after, false, "tp_overlap", Cell::Text(tp_overlap_name(k.tp_overlap)));
        self.key = Some(*k);
    }

    /// The line of configuration `index`.
    pub fn line(&mut self, index: u64, config: &Config, verdict: Verdict<'_>) {
        let k = &config.key;
        if self.key.as_ref() != Some(k) {
            self.key_columns(k);
        }
        let f = self.format;
        let text = self.integers.format(index);
        Self::push(f, &mut self.buffer, true, "index", Cell::Bare(text));
        self.buffer.push_str(&self.before);
        self.integer("pipeline_interleaving", config.pipeline_interleaving);
        self.buffer.push_str(&self.after);
        let n = &config.networks;
        for (name, tier) in [("tp_net", n.tp), ("pp_net", n.pp), ("dp_net", n.dp)] {
            self.integer(name, tier as u64);
        }
        let o = &config.offload;
        for (name, on) in [
            ("dp_overlap", config.data_par_overlap),
            ("weight_offload", o.weights),
            ("activations_offload", o.activations),
            ("optimizer_offload", o.optimizer),
        ] {
            Self::push(f, &mut self.buffer, false, name, Self::flag(on));
        }
        let (estimate, reason) = match verdict {
            Verdict::Fits(e) => (Some(e), None),
            Verdict::Pruned { reason, estimate } => (estimate, Some(reason)),
        };
        let fits = if estimate.is_some() { Self::flag(reason.is_none()) } else { Cell::Absent };
        Self::push(f, &mut self.buffer, false, "fits", fits);
        Self::push(f, &mut self.buffer, false, "pruned", reason.map_or(Cell::Absent, Cell::Text));
        match estimate {
            Some(e) => {
                let t = &e.timing_seconds;
                self.number(NUMBERS[0], Some(e.sample_rate));
                self.number(NUMBERS[1], self.flops.mfu(config, t.total_time));
                for (name, value) in t.fields() {
                    self.number(name, Some(value));
                }
                for (name, value) in e.memory.per_processor.fields() {
                    self.number(name, Some(value));
                }
                self.number("proc_mem_tier2_cap_req", Some(e.memory.proc_mem_tier2_cap_req));
            }
            None => {
                for name in NUMBERS {
                    Self::push(f, &mut self.buffer, false, name, Cell::Absent);
                }
            }
        }
        self.buffer.push_str(match f {
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
