//! Per-stage memory per processor as stacked bars, each labelled with its
//! total, on an axis scaled to the data: the first memory tier's capacity
//! is drawn as a line when it is on the scale (the stages need at least
//! [`CAPACITY_ON_SCALE`] of it) and stated above the plot when it is not,
//! so a 1 GiB model on an 80 GiB device is not a sliver.
//!
//! The estimate models no offload, so there is one memory tier to draw.

use std::fmt::Write;

use super::{escape, legend, open, short, tick_step};
use crate::analysis::schedule::ProcessorMemory;

/// The parts of a stage's requirement, bottom to top, with their colours.
const PARTS: [(&str, &str, &str); 6] = [
    ("weight_space", "weights", "#4e79a7"),
    ("weight_grad_space", "weight gradients", "#76b7b2"),
    ("optimizer_space", "optimizer state", "#59a14f"),
    ("act_space", "activations", "#f28e2b"),
    ("act_checkpoint_size", "activation checkpoints", "#edc948"),
    ("act_grad_space", "activation gradients", "#e15759"),
];

/// The capacity is drawn on the axis when the largest stage needs at
/// least this share of it; below, the axis follows the stages alone.
pub const CAPACITY_ON_SCALE: f64 = 0.4;

fn part(memory: &ProcessorMemory, field: &str) -> f64 {
    memory.fields().iter().find(|(name, _)| *name == field).map_or(0.0, |(_, v)| *v)
}

const GIB: f64 = (1u64 << 30) as f64;

/// A total in GiB with three significant digits (1,234 / 79.6 / 1.23 / 0.0123).
fn gib_text(bytes: f64) -> String {
    let gib = bytes / GIB;
    let digits = if gib >= 100.0 {
        0
    } else if gib >= 10.0 {
        1
    } else if gib >= 1.0 {
        2
    } else if gib > 0.0 {
        // Three significant digits below 1 GiB.
        (2.0 - gib.log10().floor()).clamp(2.0, 12.0) as usize
    } else {
        0
    };
    short(gib, digits)
}

/// The SVG of `stages` (stage order) against `capacity_bytes`.
#[must_use]
pub fn memory_svg(stages: &[ProcessorMemory], capacity_bytes: f64, title: &str) -> String {
    memory_svg_of_tier(stages, capacity_bytes, title, "first memory tier")
}

/// With offload: the first tier's panel (what it keeps of each field) above
/// the second tier's (what is offloaded), each against its own capacity.
/// `tiers[s]` is stage `s`'s (first-tier, second-tier) split, each a
/// [`ProcessorMemory`] whose `proc_mem_tier1_cap_req` holds the tier's total.
#[must_use]
pub fn memory_svg_two_tiers(tiers: &[(ProcessorMemory, ProcessorMemory)], capacities: (f64, f64), title: &str) -> String {
    let first: Vec<ProcessorMemory> = tiers.iter().map(|t| t.0).collect();
    let second: Vec<ProcessorMemory> = tiers.iter().map(|t| t.1).collect();
    let panels = [
        memory_svg_of_tier(&first, capacities.0, &format!("{title} (first tier)"), "first memory tier"),
        memory_svg_of_tier(&second, capacities.1, &format!("{title} (offloaded to the second tier)"), "second memory tier"),
    ];
    super::stack_vertically(&panels, title)
}

/// [`memory_svg`] against the capacity of `tier` (named in the texts).
fn memory_svg_of_tier(stages: &[ProcessorMemory], capacity_bytes: f64, title: &str, tier: &str) -> String {
    let (left, top, plot_h) = (80.0, 76.0, 360.0);
    let n = stages.len().max(1) as f64;
    let bar = 56.0f64.min(1100.0 / n * 0.7).max(3.0);
    // A few stages spread over the plot rather than bunched at its left.
    let plot_w = (bar / 0.7 * n).max(360.0);
    let pitch = plot_w / n;
    // Wide enough for the title and the legend.
    let width = (left + plot_w + 170.0).max(left + 8.5 * title.chars().count() as f64 + 20.0).max(760.0);
    let height = top + plot_h + 110.0;
    let peak = stages.iter().map(|m| m.proc_mem_tier1_cap_req).fold(0.0, f64::max);
    let capacity_on_scale = capacity_bytes > 0.0 && peak >= CAPACITY_ON_SCALE * capacity_bytes;
    let data_top = if capacity_on_scale { peak.max(capacity_bytes) } else { peak };
    let top_gib = nice_top(data_top / GIB * 1.06);
    let y_of = |bytes: f64| top + plot_h - bytes / GIB / top_gib * plot_h;
    let over = stages.iter().filter(|m| m.proc_mem_tier1_cap_req > capacity_bytes).count();

    let mut out = String::new();
    let subtitle = format!(
        "per processor, GiB · {tier} {} GiB · the largest stage needs {} GiB ({}% of it) · {}",
        gib_text(capacity_bytes),
        gib_text(peak),
        percent(peak, capacity_bytes),
        if over == 0 { "every stage fits".to_string() } else { format!("{over} of {} stages do not fit", stages.len()) }
    );
    open(&mut out, width, height, &format!("{title}: {subtitle}"));
    let _ = writeln!(out, r#"<text class="title" x="{left}" y="22" font-size="15" font-weight="bold">{}</text>"#, escape(title));
    let _ = writeln!(out, r#"<text class="subtitle" x="{left}" y="42">{}</text>"#, escape(&subtitle));

    let step = tick_step(top_gib, 8.0);
    let _ = writeln!(out, r#"<g class="axis">"#);
    let mut k = 0u32;
    while f64::from(k) * step <= top_gib * (1.0 + 1e-9) && k < 1000 {
        let gib = f64::from(k) * step;
        let y = short(y_of(gib * GIB), 2);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{y}" x2="{}" y2="{y}" stroke="#dddddd" stroke-width="0.5"/><text x="{}" y="{y}" dy="4" text-anchor="end">{}</text>"##,
            short(left + plot_w, 1),
            left - 6.0,
            short(gib, 6)
        );
        k += 1;
    }
    let _ = writeln!(
        out,
        r##"<line x1="{left}" y1="{b}" x2="{}" y2="{b}" stroke="#333333"/><text x="18" y="{}" transform="rotate(-90 18 {})" text-anchor="middle">GiB per processor</text></g>"##,
        short(left + plot_w, 1),
        short(top + plot_h / 2.0, 1),
        short(top + plot_h / 2.0, 1),
        b = short(top + plot_h, 1)
    );

    // Totals above the stacks, turned when the bars are too narrow for them.
    let widest_total = stages.iter().map(|m| gib_text(m.proc_mem_tier1_cap_req).len()).max().unwrap_or(1) as f64 * 6.6;
    let turned = widest_total > pitch - 2.0;
    for (stage, memory) in stages.iter().enumerate() {
        let x = left + pitch * stage as f64 + (pitch - bar) / 2.0;
        let mut base = 0.0;
        let total = memory.proc_mem_tier1_cap_req;
        let _ = writeln!(out, r#"<g class="stage" data-stage="{stage}" data-total-bytes="{total}">"#);
        for (field, label, colour) in PARTS {
            let bytes = part(memory, field);
            if bytes <= 0.0 {
                continue;
            }
            let (y0, y1) = (y_of(base), y_of(base + bytes));
            let _ = writeln!(
                out,
                r#"<rect class="{field}" x="{}" y="{}" width="{}" height="{}" fill="{colour}"><title>stage {stage}: {label} {} GiB ({bytes} bytes)</title></rect>"#,
                short(x, 2),
                short(y1, 2),
                short(bar, 2),
                short(y0 - y1, 3),
                gib_text(bytes)
            );
            base += bytes;
        }
        let fits = if total <= capacity_bytes { "fits" } else { "does not fit" };
        let (cx, ty) = (x + bar / 2.0, y_of(total) - 5.0);
        let rotate = if turned { format!(r#" transform="rotate(-90 {} {})""#, short(cx + 3.5, 2), short(ty, 2)) } else { String::new() };
        let _ = writeln!(
            out,
            r#"<text class="total" x="{}" y="{}" text-anchor="{}" font-size="11"{rotate}>{}<title>stage {stage}: {} GiB in all ({total} bytes, {}% of the {tier}; {fits})</title></text>"#,
            short(if turned { cx + 3.5 } else { cx }, 2),
            short(ty, 2),
            if turned { "start" } else { "middle" },
            gib_text(total),
            gib_text(total),
            percent(total, capacity_bytes)
        );
        let _ = writeln!(
            out,
            r#"<text class="stage-label" x="{}" y="{}" text-anchor="middle">{stage}</text></g>"#,
            short(cx, 2),
            short(top + plot_h + 16.0, 1)
        );
    }
    if capacity_on_scale {
        let cy = short(y_of(capacity_bytes), 2);
        let _ = writeln!(
            out,
            r##"<g class="capacity" data-on-scale="true"><line x1="{left}" y1="{cy}" x2="{}" y2="{cy}" stroke="#c00000" stroke-width="1.5" stroke-dasharray="6 3"/><text x="{}" y="{cy}" dy="4" fill="#c00000">capacity {} GiB</text></g>"##,
            short(left + plot_w, 1),
            short(left + plot_w + 6.0, 1),
            gib_text(capacity_bytes)
        );
    } else {
        let _ = writeln!(
            out,
            r##"<g class="capacity" data-on-scale="false"><text x="{left}" y="{}" fill="#c00000">↑ capacity {} GiB is off this scale: the largest stage needs {}% of it</text></g>"##,
            short(top - 14.0, 1),
            gib_text(capacity_bytes),
            percent(peak, capacity_bytes)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">pipeline stage</text>"#,
        short(left + plot_w / 2.0, 1),
        short(top + plot_h + 34.0, 1)
    );
    // Only the parts some stage has: a colour in the legend is on the chart.
    let entries: Vec<(&str, &str)> = PARTS
        .iter()
        .filter(|(field, _, _)| stages.iter().any(|m| part(m, field) > 0.0))
        .map(|(_, label, colour)| (*label, *colour))
        .collect();
    legend(&mut out, left, top + plot_h + 50.0, &entries, width - left - 20.0);
    out.push_str("</svg>\n");
    out
}

/// `part` as a percentage of `whole`, one decimal (two below 1%).
fn percent(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        let p = part / whole * 100.0;
        short(p, if p < 1.0 { 2 } else { 1 })
    } else {
        "-".into()
    }
}

/// The axis top: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k at or above `gib`.
fn nice_top(gib: f64) -> f64 {
    if gib.is_nan() || gib <= 0.0 || gib.is_infinite() {
        return 1.0;
    }
    let exponent = gib.log10().floor() as i32;
    let normalized = gib / 10f64.powi(exponent);
    let nice = [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0].into_iter().find(|n| *n >= normalized - 1e-12).unwrap_or(10.0);
    // Divide for negative exponents: 6 / 10 is 0.6, 6 · 0.1 is not.
    if exponent < 0 {
        nice / 10f64.powi(-exponent)
    } else {
        nice * 10f64.powi(exponent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(gib: f64) -> ProcessorMemory {
        let bytes = gib * GIB;
        ProcessorMemory { weight_space: bytes / 2.0, act_space: bytes / 2.0, proc_mem_tier1_cap_req: bytes, ..ProcessorMemory::default() }
    }

    #[test]
    fn axis_follows_the_data() {
        // 1 GiB against 80: the axis ends at 1.2 GiB and the capacity is stated, not drawn.
        let svg = memory_svg(&[stage(1.0), stage(0.5)], 80.0 * GIB, "small");
        assert!(svg.contains(r#"data-on-scale="false""#));
        assert!(svg.contains("capacity 80 GiB is off this scale"));
        assert!(svg.contains(">1.2</text>"), "top tick at 1.2 GiB");
        assert!(!svg.contains(">80</text>"));
        // 72 GiB against 80: the line is on the scale.
        let svg = memory_svg(&[stage(72.0)], 80.0 * GIB, "large");
        assert!(svg.contains(r#"data-on-scale="true""#));
        assert!(svg.contains(">72<title>"), "the stack's total above it");
        assert!(!svg.contains("activation checkpoints"), "no legend entry for a part no stage has");
    }

    #[test]
    fn offload_draws_both_tiers() {
        // Two panels in one picture, each against its own tier.
        let tiers = [(stage(60.0), stage(300.0)), (stage(40.0), stage(100.0))];
        let svg = memory_svg_two_tiers(&tiers, (80.0 * GIB, 512.0 * GIB), "offload");
        assert_eq!(svg.matches("<svg ").count(), 3, "an outer picture and two nested panels");
        assert!(svg.contains(r#"<svg x="0" y="0" "#) && svg.contains(r#"<svg x="0" y="5"#), "the second panel below the first");
        assert!(svg.contains("first memory tier 80 GiB") && svg.contains("second memory tier 512 GiB"));
        assert!(svg.contains("(offloaded to the second tier)"));
        assert!(svg.contains(">300<title>") && svg.contains(">60<title>"), "each panel's totals");
        assert!(svg.trim_end().ends_with("</svg>\n</svg>") || svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn totals_have_three_digits() {
        assert_eq!(gib_text(79.56 * GIB), "79.6");
        assert_eq!(gib_text(1.234 * GIB), "1.23");
        assert_eq!(gib_text(0.01234 * GIB), "0.0123");
        assert_eq!(gib_text(1234.4 * GIB), "1234");
        assert_eq!(nice_top(1.06), 1.2);
        assert_eq!(nice_top(84.8), 100.0);
        assert_eq!(nice_top(0.53), 0.6);
    }
}
