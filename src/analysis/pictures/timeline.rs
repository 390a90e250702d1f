//! The simulated step as a timeline: one row per stage and stream, a bar
//! per event, the compute stream's gaps drawn as bubble, a time axis in
//! milliseconds and a legend.

use std::fmt::Write;

use super::{escape, legend, open, short, tick_step};
use crate::analysis::simulate::{Activity, Simulation, Stream};

/// What the picture says besides the events.
#[derive(Debug, Clone)]
pub struct TimelineLabels {
    /// The first line of the title (model and strategy).
    pub title: String,
    /// The closed form's step time, shown beside the simulated one.
    pub closed_form_seconds: f64,
    pub chunks: u64,
}

const LEFT: f64 = 150.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 58.0;
const ROW: f64 = 20.0;
const ROW_GAP: f64 = 3.0;
const STAGE_GAP: f64 = 9.0;

/// The class and colour of an activity's bars.
#[must_use]
pub const fn style(activity: Activity) -> (&'static str, &'static str) {
    match activity {
        Activity::Forward => ("forward", "#4e79a7"),
        Activity::Recompute => ("recompute", "#e15759"),
        Activity::Backward => ("backward", "#f28e2b"),
        Activity::SendForward => ("send-forward", "#59a14f"),
        Activity::SendBackward => ("send-backward", "#8cd17d"),
        Activity::DataParallel => ("dp-reduction", "#b07aa1"),
        Activity::Optimizer => ("optimizer", "#9c755f"),
    }
}

const BUBBLE: &str = "#e8e8e8";

/// The SVG of `simulation`.
#[must_use]
pub fn timeline_svg(simulation: &Simulation, labels: &TimelineLabels) -> String {
    let total = simulation.total_time;
    let stages = simulation.stages.len() as u64;
    // Rows: every stage's compute stream, then the streams it uses.
    let mut rows: Vec<(u64, Stream)> = Vec::new();
    for stage in 0..stages {
        rows.push((stage, Stream::Compute));
        for stream in [Stream::PointToPoint, Stream::DataParallel] {
            if simulation.events.iter().any(|e| e.stage == stage && e.stream == stream) {
                rows.push((stage, stream));
            }
        }
    }
    let slots_per_stage = simulation.events.iter().filter(|e| e.stage == 0 && e.stream == Stream::Compute).count() as f64;
    let plot = (slots_per_stage * 9.0).clamp(900.0, 2400.0);
    let width = LEFT + plot + RIGHT;
    let mut y = TOP;
    let mut row_y = Vec::with_capacity(rows.len());
    for (i, &(stage, _)) in rows.iter().enumerate() {
        if i > 0 && rows[i - 1].0 != stage {
            y += STAGE_GAP;
        }
        row_y.push(y);
        y += ROW + ROW_GAP;
    }
    let axis_y = y + 4.0;
    let height = axis_y + 88.0;
    let scale = if total > 0.0 { plot / total } else { 0.0 };
    let x_of = |t: f64| LEFT + t * scale;
    let ms = |t: f64| short(t * 1e3, 3);

    let mut out = String::new();
    let title = format!(
        "{}: simulated step {} ms ({} communication), closed form {} ms",
        labels.title,
        ms(total),
        simulation.communication.name(),
        ms(labels.closed_form_seconds)
    );
    open(&mut out, width, height, &title);
    let _ = writeln!(out, r#"<text class="title" x="{LEFT}" y="22" font-size="15" font-weight="bold">{}</text>"#, escape(&labels.title));
    let _ = writeln!(
        out,
        r#"<text class="subtitle" x="{LEFT}" y="42">simulated step {} ms with {} communication · closed form {} ms · bubble in grey</text>"#,
        ms(total),
        simulation.communication.name(),
        ms(labels.closed_form_seconds)
    );

    // Grid and axis first, so the bars sit on top.
    let step = tick_step(total, 10.0);
    let _ = writeln!(out, r#"<g class="axis">"#);
    let mut tick = 0.0;
    let mut k = 0u32;
    while tick <= total * (1.0 + 1e-9) && k < 1000 {
        let x = short(x_of(tick), 2);
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{TOP}" x2="{x}" y2="{}" stroke="#dddddd" stroke-width="0.5"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
            short(axis_y, 1),
            short(axis_y + 16.0, 1),
            ms(tick)
        );
        k += 1;
        tick = f64::from(k) * step;
    }
    let _ = writeln!(
        out,
        r##"<line x1="{LEFT}" y1="{a}" x2="{}" y2="{a}" stroke="#333333"/><text x="{}" y="{}" text-anchor="middle">time (ms)</text></g>"##,
        short(LEFT + plot, 1),
        short(LEFT + plot / 2.0, 1),
        short(axis_y + 34.0, 1),
        a = short(axis_y, 1)
    );

    for (&(stage, stream), &top) in rows.iter().zip(&row_y) {
        let name = match stream {
            Stream::Compute => format!("stage {stage}"),
            Stream::PointToPoint => format!("stage {stage} p2p"),
            Stream::DataParallel => format!("stage {stage} DP"),
        };
        let _ = writeln!(
            out,
            r#"<text class="row-label" x="{}" y="{}" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            short(top + 14.0, 1),
            escape(&name)
        );
        let mut events: Vec<_> = simulation.events.iter().filter(|e| e.stage == stage && e.stream == stream).collect();
        events.sort_by(|a, b| a.start.total_cmp(&b.start));
        let _ = writeln!(out, r#"<g class="row" data-stage="{stage}" data-stream="{}">"#, stream_name(stream));
        if stream == Stream::Compute {
            // The gaps of the compute stream are the stage's bubble.
            let mut at = 0.0f64;
            let tiny = total * 1e-9;
            let ends = events.iter().map(|e| (e.start, e.end)).chain(std::iter::once((total, total)));
            for (start, end) in ends {
                if start - at > tiny {
                    let _ = writeln!(
                        out,
                        r#"<rect class="bubble" x="{}" y="{}" width="{}" height="{ROW}" fill="{BUBBLE}"><title>stage {stage} idle {}–{} ms</title></rect>"#,
                        short(x_of(at), 2),
                        short(top, 1),
                        short((start - at) * scale, 2),
                        ms(at),
                        ms(start)
                    );
                }
                at = at.max(end);
            }
        }
        for event in events {
            let (class, colour) = style(event.activity);
            let x = x_of(event.start);
            let w = (event.end - event.start) * scale;
            // Later chunks of an interleaved stage are drawn lighter.
            let opacity = if labels.chunks > 1 { 1.0 - 0.45 * event.chunk as f64 / (labels.chunks - 1) as f64 } else { 1.0 };
            let what = match event.microbatch {
                Some(mb) => format!("microbatch {mb}, chunk {}", event.chunk),
                None => format!("chunk {}", event.chunk),
            };
            let _ = write!(
                out,
                r##"<rect class="{class}" x="{}" y="{}" width="{}" height="{ROW}" fill="{colour}" fill-opacity="{}" stroke="#ffffff" stroke-width="0.4" data-chunk="{}"{}><title>stage {stage}: {} of {what}, {}–{} ms</title></rect>"##,
                short(x, 2),
                short(top, 1),
                short(w, 3),
                short(opacity, 2),
                event.chunk,
                event.microbatch.map(|mb| format!(r#" data-microbatch="{mb}""#)).unwrap_or_default(),
                event.activity.name(),
                ms(event.start),
                ms(event.end)
            );
            let _ = writeln!(out);
            if let Some(mb) = event.microbatch {
                let text = mb.to_string();
                if matches!(event.activity, Activity::Forward | Activity::Backward) && w >= 6.5 * text.len() as f64 + 3.0 {
                    let _ = writeln!(
                        out,
                        r#"<text class="microbatch" x="{}" y="{}" text-anchor="middle" font-size="10" fill="{}">{text}</text>"#,
                        short(x + w / 2.0, 2),
                        short(top + 14.0, 1),
                        if opacity < 0.7 { "#222222" } else { "#ffffff" }
                    );
                }
            }
        }
        let _ = writeln!(out, "</g>");
    }

    let mut entries = vec![("forward", style(Activity::Forward).1), ("backward", style(Activity::Backward).1)];
    let present = |a: Activity| simulation.events.iter().any(|e| e.activity == a);
    for activity in [Activity::Recompute, Activity::SendForward, Activity::SendBackward, Activity::DataParallel, Activity::Optimizer] {
        if present(activity) {
            entries.push((activity.name(), style(activity).1));
        }
    }
    entries.push(("bubble (idle)", BUBBLE));
    legend(&mut out, LEFT, axis_y + 46.0, &entries);
    if labels.chunks > 1 {
        let _ = writeln!(
            out,
            r#"<text class="note" x="{LEFT}" y="{}">lighter bars: later chunks (interleaved, {} per stage)</text>"#,
            short(axis_y + 78.0, 1),
            labels.chunks
        );
    }
    out.push_str("</svg>\n");
    out
}

const fn stream_name(stream: Stream) -> &'static str {
    match stream {
        Stream::Compute => "compute",
        Stream::PointToPoint => "p2p",
        Stream::DataParallel => "dp",
    }
}
