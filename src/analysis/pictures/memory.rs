//! Per-stage memory per processor as stacked bars against the first
//! memory tier's capacity.

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

fn part(memory: &ProcessorMemory, field: &str) -> f64 {
    memory.fields().iter().find(|(name, _)| *name == field).map_or(0.0, |(_, v)| *v)
}

const GIB: f64 = (1u64 << 30) as f64;

/// The SVG of `stages` (stage order) against `capacity_bytes`.
#[must_use]
pub fn memory_svg(stages: &[ProcessorMemory], capacity_bytes: f64, title: &str) -> String {
    let (left, top, plot_h) = (80.0, 56.0, 360.0);
    let bar = 46.0f64.min(760.0 / stages.len().max(1) as f64 * 0.7).max(3.0);
    let pitch = bar / 0.7;
    let plot_w = (pitch * stages.len() as f64).max(320.0);
    // Wide enough for the title too.
    let width = (left + plot_w + 40.0).max(left + 8.5 * title.chars().count() as f64 + 20.0);
    let height = top + plot_h + 100.0;
    let peak = stages.iter().map(|m| m.proc_mem_tier1_cap_req).fold(capacity_bytes, f64::max);
    let top_gib = (peak / GIB * 1.08).max(1e-9);
    let y_of = |bytes: f64| top + plot_h - bytes / GIB / top_gib * plot_h;
    let over = stages.iter().filter(|m| m.proc_mem_tier1_cap_req > capacity_bytes).count();

    let mut out = String::new();
    let subtitle = format!(
        "per processor, GiB · first memory tier {} GiB · {}",
        short(capacity_bytes / GIB, 2),
        if over == 0 { "every stage fits".to_string() } else { format!("{over} of {} stages do not fit", stages.len()) }
    );
    open(&mut out, width, height, &format!("{title}: {subtitle}"));
    let _ = writeln!(out, r#"<text class="title" x="{left}" y="22" font-size="15" font-weight="bold">{}</text>"#, escape(title));
    let _ = writeln!(out, r#"<text class="subtitle" x="{left}" y="42">{}</text>"#, escape(&subtitle));

    let step = tick_step(top_gib, 8.0);
    let _ = writeln!(out, r#"<g class="axis">"#);
    let mut k = 0u32;
    while f64::from(k) * step <= top_gib && k < 1000 {
        let gib = f64::from(k) * step;
        let y = short(y_of(gib * GIB), 2);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{y}" x2="{}" y2="{y}" stroke="#dddddd" stroke-width="0.5"/><text x="{}" y="{y}" dy="4" text-anchor="end">{}</text>"##,
            short(left + plot_w, 1),
            left - 6.0,
            short(gib, 3)
        );
        k += 1;
    }
    let _ = writeln!(
        out,
        r##"<text x="18" y="{}" transform="rotate(-90 18 {})" text-anchor="middle">GiB per processor</text></g>"##,
        short(top + plot_h / 2.0, 1),
        short(top + plot_h / 2.0, 1)
    );

    for (stage, memory) in stages.iter().enumerate() {
        let x = left + pitch * stage as f64 + (pitch - bar) / 2.0;
        let mut base = 0.0;
        let _ = writeln!(out, r#"<g class="stage" data-stage="{stage}">"#);
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
                short(bytes / GIB, 3)
            );
            base += bytes;
        }
        let total = memory.proc_mem_tier1_cap_req;
        let _ = writeln!(
            out,
            r#"<text class="stage-label" x="{}" y="{}" text-anchor="middle">{stage}</text><title>stage {stage}: {} GiB in all</title></g>"#,
            short(x + bar / 2.0, 2),
            short(top + plot_h + 16.0, 1),
            short(total / GIB, 3)
        );
    }
    let cy = short(y_of(capacity_bytes), 2);
    let _ = writeln!(
        out,
        r##"<g class="capacity"><line x1="{left}" y1="{cy}" x2="{}" y2="{cy}" stroke="#c00000" stroke-width="1.5" stroke-dasharray="6 3"/><text x="{}" y="{cy}" dy="-5" text-anchor="end" fill="#c00000">capacity {} GiB</text></g>"##,
        short(left + plot_w, 1),
        short(left + plot_w, 1),
        short(capacity_bytes / GIB, 2)
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">pipeline stage</text>"#,
        short(left + plot_w / 2.0, 1),
        short(top + plot_h + 34.0, 1)
    );
    let entries: Vec<(&str, &str)> = PARTS.iter().map(|(_, label, colour)| (*label, *colour)).collect();
    legend(&mut out, left, top + plot_h + 50.0, &entries[..3]);
    legend(&mut out, left, top + plot_h + 72.0, &entries[3..]);
    out.push_str("</svg>\n");
    out
}
