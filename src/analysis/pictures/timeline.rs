//! The simulated step as a timeline: per stage a compute track and, when
//! the step has them, tracks for the exposed TP communication, the
//! pipeline transfers and the DP reduction; the compute stream's gaps drawn
//! as bubble, a time axis in milliseconds and a legend for every colour.
//!
//! Made to be read at the size of a real model (GPT-3 175B: 8 stages × 3
//! chunks × 64 microbatches, ~3,000 slots a stage with recompute and TP):
//! the picture is as wide as asked (1,560 px by default, a 1,600 px
//! window) and wraps the step into bands when one line would make its
//! forwards too narrow to carry a microbatch number; every bar is at least
//! [`MIN_BAR`] px wide, and runs of bars of one kind that would overlap at
//! that width are merged into one bar whose tooltip gives their count.

use std::fmt::Write;

use super::{escape, legend, open, short, tick_step};
use crate::analysis::simulate::{Activity, Event, Simulation, Stream};

/// What the picture says besides the events.
#[derive(Debug, Clone)]
pub struct TimelineLabels {
    /// The first line of the title (model and strategy).
    pub title: String,
    /// The closed form's step time, shown beside the simulated one.
    pub closed_form_seconds: f64,
    pub chunks: u64,
}

/// How the step is laid out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimelineView {
    /// Width of the picture in px.
    pub width: f64,
    /// The part of the step to draw, seconds from its start (whole step
    /// when `None`).
    pub range: Option<(f64, f64)>,
    /// Bands the drawn time is wrapped into (chosen from the bars' widths
    /// when `None`).
    pub bands: Option<u32>,
}

impl Default for TimelineView {
    fn default() -> Self {
        Self { width: DEFAULT_WIDTH, range: None, bands: None }
    }
}

/// Fits a 1,600 px browser window with its scroll bar.
pub const DEFAULT_WIDTH: f64 = 1560.0;
/// Narrowest and widest picture `--timeline-width` accepts.
pub const MIN_WIDTH: f64 = 600.0;
pub const MAX_WIDTH: f64 = 20_000.0;
/// Most bands a step is wrapped into.
pub const MAX_BANDS: u32 = 16;
/// Most bands chosen without `--timeline-bands`.
pub const AUTO_BANDS: u32 = 8;
/// The narrowest bar drawn, px.
pub const MIN_BAR: f64 = 2.0;

const LEFT: f64 = 96.0;
const RIGHT: f64 = 24.0;
const COMPUTE_ROW: f64 = 18.0;
const COMM_ROW: f64 = 10.0;
const ROW_GAP: f64 = 2.0;
const STAGE_GAP: f64 = 6.0;
const BAND_HEAD: f64 = 18.0;
const BAND_AXIS: f64 = 40.0;
/// Width of one digit of the 10 px microbatch labels, px (DejaVu Sans).
const DIGIT: f64 = 6.4;

/// The tracks of one stage, top to bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Track {
    Compute,
    TensorParallel,
    Pipeline,
    DataParallel,
}

impl Track {
    /// The track an activity is drawn on: communication on its own track
    /// whichever stream the simulation ran it on (serialized transfers
    /// hold up the compute stream, and the bubble shows no gap for them).
    #[must_use]
    pub const fn of(activity: Activity) -> Self {
        match activity {
            Activity::Forward | Activity::Recompute | Activity::Backward | Activity::Optimizer => Self::Compute,
            Activity::TpForward | Activity::TpRecompute | Activity::TpBackward => Self::TensorParallel,
            Activity::SendForward | Activity::SendBackward => Self::Pipeline,
            Activity::DataParallel => Self::DataParallel,
        }
    }

    /// The track's name (the trace's thread names too).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Compute => "compute",
            Self::TensorParallel => "TP exposed",
            Self::Pipeline => "PP transfers",
            Self::DataParallel => "DP reduction",
        }
    }

    const fn short_name(self) -> &'static str {
        match self {
            Self::Compute => "compute",
            Self::TensorParallel => "tp",
            Self::Pipeline => "pp",
            Self::DataParallel => "dp",
        }
    }

    const fn height(self) -> f64 {
        match self {
            Self::Compute => COMPUTE_ROW,
            _ => COMM_ROW,
        }
    }
}

/// The class and colour of an activity's bars.
#[must_use]
pub const fn style(activity: Activity) -> (&'static str, &'static str) {
    match activity {
        Activity::Forward => ("forward", "#4e79a7"),
        Activity::Recompute => ("recompute", "#e15759"),
        Activity::Backward => ("backward", "#f28e2b"),
        Activity::Optimizer => ("optimizer", "#9c755f"),
        Activity::TpForward => ("tp-forward", "#17becf"),
        Activity::TpRecompute => ("tp-recompute", "#ff9da7"),
        Activity::TpBackward => ("tp-backward", "#bcbd22"),
        Activity::SendForward => ("send-forward", "#59a14f"),
        Activity::SendBackward => ("send-backward", "#8cd17d"),
        Activity::DataParallel => ("dp-reduction", "#b07aa1"),
    }
}

/// Every activity, in legend order.
const ACTIVITIES: [Activity; 10] = [
    Activity::Forward,
    Activity::Recompute,
    Activity::Backward,
    Activity::Optimizer,
    Activity::TpForward,
    Activity::TpRecompute,
    Activity::TpBackward,
    Activity::SendForward,
    Activity::SendBackward,
    Activity::DataParallel,
];

const BUBBLE: &str = "#e4e4e4";

/// Most events a picture draws (about 300 bytes of SVG each): beyond, a
/// browser no longer opens it.
pub const MAX_EVENTS: usize = 2_000_000;

/// Why a view cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ViewError {
    #[error("--timeline-range {start_ms}:{end_ms} ms is outside the simulated step (0 to {total_ms} ms)")]
    OutsideStep { start_ms: f64, end_ms: f64, total_ms: f64 },
    #[error(
        "the timeline would draw {events} events, more than the {MAX_EVENTS} a browser opens: draw part of the step with --timeline-range"
    )]
    TooManyEvents { events: usize },
}

/// One bar: an event, or a run of events of one activity merged because
/// they would overlap at [`MIN_BAR`].
struct Bar<'a> {
    first: &'a Event,
    last: &'a Event,
    start: f64,
    end: f64,
    count: usize,
    busy: f64,
}

/// The SVG of `simulation` laid out as `view` says.
///
/// # Errors
/// A range that does not overlap the step.
pub fn timeline_svg(simulation: &Simulation, labels: &TimelineLabels, view: &TimelineView) -> Result<String, ViewError> {
    let total = simulation.total_time;
    let (w0, w1) = match view.range {
        None => (0.0, total),
        Some((a, b)) => {
            if !(a < total && b > 0.0 && a < b) {
                return Err(ViewError::OutsideStep { start_ms: a * 1e3, end_ms: b * 1e3, total_ms: total * 1e3 });
            }
            (a.max(0.0), b.min(total))
        }
    };
    let span = w1 - w0;
    let drawn = simulation.events.iter().filter(|e| e.end > w0 && e.start < w1).count();
    if drawn > MAX_EVENTS {
        return Err(ViewError::TooManyEvents { events: drawn });
    }
    let width = view.width.clamp(MIN_WIDTH, MAX_WIDTH);
    let plot = width - LEFT - RIGHT;
    let stages = simulation.stages.len() as u64;

    // Tracks: every stage's compute, then the communication it has.
    let mut rows: Vec<(u64, Track)> = Vec::new();
    for stage in 0..stages {
        rows.push((stage, Track::Compute));
        for track in [Track::TensorParallel, Track::Pipeline, Track::DataParallel] {
            if simulation.events.iter().any(|e| e.stage == stage && Track::of(e.activity) == track && e.end > e.start) {
                rows.push((stage, track));
            }
        }
    }
    let microbatches = simulation.events.iter().filter_map(|e| e.microbatch).max().map_or(1, |m| m + 1);
    let label_width = DIGIT * (microbatches.saturating_sub(1)).to_string().len() as f64 + 4.0;
    let bands = view.bands.unwrap_or_else(|| auto_bands(simulation, w0, w1, plot, label_width)).clamp(1, MAX_BANDS);
    let band_span = span / f64::from(bands);
    let scale = if band_span > 0.0 { plot / band_span } else { 0.0 };

    // Vertical layout of one band.
    let mut offsets = Vec::with_capacity(rows.len());
    let mut y = BAND_HEAD;
    for (i, &(stage, track)) in rows.iter().enumerate() {
        if i > 0 && rows[i - 1].0 != stage {
            y += STAGE_GAP;
        }
        offsets.push(y);
        y += track.height() + ROW_GAP;
    }
    let band_height = y + BAND_AXIS;
    // Legend and notes under the title, where a tall picture's reader starts.
    let entries = legend_entries(simulation);
    let legend_rows = legend_row_count(&entries, width - LEFT - RIGHT);
    let legend_y = 54.0;
    let notes_y = legend_y + 24.0 * legend_rows as f64 + 8.0;
    let mut notes = vec![format!(
        "bars shorter than {MIN_BAR} px are drawn {MIN_BAR} px wide, and runs of them that would overlap are merged (the tooltip gives the count); exposed TP time is drawn at the end of its slot (it interleaves with the layers' compute)"
    )];
    if labels.chunks > 1 {
        notes.push(format!(
            "numbers in bars: microbatches (where they fit) · lighter bars: later chunks (interleaved, {} per stage)",
            labels.chunks
        ));
    } else {
        notes.push("numbers in bars: microbatches (where they fit)".to_string());
    }
    let top_of_bands = notes_y + 16.0 * notes.len() as f64 + 4.0;
    let height = top_of_bands + band_height * f64::from(bands) + 8.0;
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
    let mut subtitle = format!(
        "simulated step {} ms with {} communication · closed form {} ms · exposed TP, PP and DP communication on their own tracks",
        ms(total),
        simulation.communication.name(),
        ms(labels.closed_form_seconds)
    );
    if view.range.is_some() {
        let _ = write!(subtitle, " · showing {}–{} ms", ms(w0), ms(w1));
    }
    if bands > 1 {
        let _ = write!(subtitle, " · wrapped into {bands} bands of {} ms", ms(band_span));
    }
    let _ = writeln!(out, r#"<text class="subtitle" x="{LEFT}" y="40">{}</text>"#, escape(&subtitle));
    legend(&mut out, LEFT, legend_y, &entries, width - LEFT - RIGHT);
    for (i, note) in notes.iter().enumerate() {
        let _ = writeln!(
            out,
            r##"<text class="note" x="{LEFT}" y="{}" font-size="11" fill="#444444">{}</text>"##,
            short(notes_y + 11.0 + 16.0 * i as f64, 1),
            escape(note)
        );
    }

    for band in 0..bands {
        let b0 = w0 + band_span * f64::from(band);
        let b1 = if band + 1 == bands { w1 } else { b0 + band_span };
        let top = top_of_bands + band_height * f64::from(band);
        let x_of = |t: f64| LEFT + (t - b0) * scale;
        let _ = writeln!(out, r#"<g class="band" data-band="{band}" data-start-ms="{}" data-end-ms="{}">"#, ms(b0), ms(b1));
        if bands > 1 {
            let _ = writeln!(
                out,
                r##"<text class="band-label" x="{LEFT}" y="{}" fill="#555555">{}–{} ms</text>"##,
                short(top + 12.0, 1),
                ms(b0),
                ms(b1)
            );
        }
        axis(&mut out, b0, b1, top + BAND_HEAD, top + band_height - BAND_AXIS + 2.0, x_of);
        for (&(stage, track), &dy) in rows.iter().zip(&offsets) {
            let row_top = top + dy;
            let (label, size, fill) = match track {
                Track::Compute => (format!("stage {stage}"), 12, "#000000"),
                other => (other.name().to_string(), 9, "#555555"),
            };
            let _ = writeln!(
                out,
                r#"<text class="row-label" x="{}" y="{}" text-anchor="end" font-size="{size}" fill="{fill}">{}</text>"#,
                LEFT - 6.0,
                short(row_top + track.height() / 2.0 + f64::from(size) * 0.35, 1),
                escape(&label)
            );
            let _ = writeln!(out, r#"<g class="row" data-stage="{stage}" data-track="{}">"#, track.short_name());
            let mut events: Vec<&Event> = simulation
                .events
                .iter()
                .filter(|e| e.stage == stage && Track::of(e.activity) == track && e.end > b0 && e.start < b1 && e.end > e.start)
                .collect();
            events.sort_by(|a, b| a.start.total_cmp(&b.start));
            if track == Track::Compute {
                bubbles(&mut out, simulation, stage, b0, b1, row_top, scale, x_of);
            }
            for bar in merge(&events, b0, b1, scale) {
                draw_bar(&mut out, &bar, stage, track, row_top, labels.chunks, x_of);
            }
            let _ = writeln!(out, "</g>");
        }
        let _ = writeln!(out, "</g>");
    }

    out.push_str("</svg>\n");
    Ok(out)
}

/// The legend: every colour the picture uses.
fn legend_entries(simulation: &Simulation) -> Vec<(&'static str, &'static str)> {
    let mut entries: Vec<(&str, &str)> = ACTIVITIES
        .iter()
        .filter(|&&a| {
            matches!(a, Activity::Forward | Activity::Backward) || simulation.events.iter().any(|e| e.activity == a && e.end > e.start)
        })
        .map(|&a| (a.name(), style(a).1))
        .collect();
    entries.push(("bubble (idle)", BUBBLE));
    entries
}

fn legend_row_count(entries: &[(&str, &str)], width: f64) -> usize {
    let mut rows = 1;
    let mut at = 0.0;
    for (label, _) in entries {
        let w = super::legend_entry_width(label);
        if at > 0.0 && at + w > width {
            rows += 1;
            at = 0.0;
        }
        at += w;
    }
    rows
}

/// Bands such that the median backward bar (the widest kind of slot) is
/// wide enough for its microbatch number, at most [`AUTO_BANDS`].
fn auto_bands(simulation: &Simulation, w0: f64, w1: f64, plot: f64, label_width: f64) -> u32 {
    let mut forwards: Vec<f64> = simulation
        .events
        .iter()
        .filter(|e| e.activity == Activity::Backward && e.end > w0 && e.start < w1)
        .map(|e| e.end - e.start)
        .collect();
    if forwards.is_empty() || plot <= 0.0 {
        return 1;
    }
    forwards.sort_by(f64::total_cmp);
    let median = forwards[forwards.len() / 2];
    if median.is_nan() || median <= 0.0 {
        return 1;
    }
    let needed = (label_width * (w1 - w0) / (median * plot)).ceil();
    if needed.is_finite() && needed >= 1.0 {
        (needed as u32).min(AUTO_BANDS)
    } else {
        1
    }
}

/// Grid lines and the time axis of one band.
fn axis(out: &mut String, b0: f64, b1: f64, top: f64, bottom: f64, x_of: impl Fn(f64) -> f64) {
    let step = tick_step(b1 - b0, 10.0);
    let _ = writeln!(out, r#"<g class="axis">"#);
    let first = (b0 / step).ceil() as i64;
    let mut k = first;
    while (k as f64) * step <= b1 * (1.0 + 1e-12) && k - first < 1000 {
        let t = k as f64 * step;
        let x = short(x_of(t), 2);
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#dddddd" stroke-width="0.5"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
            short(top, 1),
            short(bottom, 1),
            short(bottom + 15.0, 1),
            short(t * 1e3, 3)
        );
        k += 1;
    }
    let _ = writeln!(
        out,
        r##"<line x1="{}" y1="{b}" x2="{}" y2="{b}" stroke="#333333"/><text x="{}" y="{}" text-anchor="end" fill="#555555">ms</text></g>"##,
        short(x_of(b0), 1),
        short(x_of(b1), 1),
        // Clear of the first tick's label, centred on the axis' start.
        short(LEFT - 28.0, 1),
        short(bottom + 15.0, 1),
        b = short(bottom, 1)
    );
}

/// The gaps of a stage's compute stream (TP waits included) within
/// `[b0, b1]`: the stage's bubble and waits.
#[allow(clippy::too_many_arguments)]
fn bubbles(out: &mut String, simulation: &Simulation, stage: u64, b0: f64, b1: f64, top: f64, scale: f64, x_of: impl Fn(f64) -> f64) {
    let mut busy: Vec<(f64, f64)> = simulation
        .events
        .iter()
        .filter(|e| e.stage == stage && matches!(e.stream, Stream::Compute | Stream::TensorParallel))
        .map(|e| (e.start, e.end))
        .collect();
    busy.sort_by(|a, b| a.0.total_cmp(&b.0));
    busy.push((simulation.total_time, simulation.total_time));
    let mut at = 0.0f64;
    for (start, end) in busy {
        let (g0, g1) = (at.max(b0), start.min(b1));
        // Gaps under half a pixel are waits, not bubble, at this scale.
        if (g1 - g0) * scale >= 0.5 {
            let _ = writeln!(
                out,
                r#"<rect class="bubble" x="{}" y="{}" width="{}" height="{COMPUTE_ROW}" fill="{BUBBLE}"><title>stage {stage} idle {}–{} ms</title></rect>"#,
                short(x_of(g0), 2),
                short(top, 1),
                short((g1 - g0) * scale, 2),
                short(at * 1e3, 3),
                short(start * 1e3, 3)
            );
        }
        at = at.max(end);
    }
}

/// The bars of one track in `[b0, b1]`: events of one activity merged
/// while they would overlap at [`MIN_BAR`].
fn merge<'a>(events: &[&'a Event], b0: f64, b1: f64, scale: f64) -> Vec<Bar<'a>> {
    let mut bars: Vec<Bar<'a>> = Vec::new();
    for &e in events {
        let (start, end) = (e.start.max(b0), e.end.min(b1));
        if let Some(bar) = bars.last_mut() {
            let drawn_end = bar.start + ((bar.end - bar.start) * scale).max(MIN_BAR) / scale.max(f64::MIN_POSITIVE);
            let tiny = (bar.end - bar.start) * scale < MIN_BAR || (end - start) * scale < MIN_BAR;
            // A bar continued from the band before stays alone, so every
            // event is counted once, in the band where it starts.
            let continued = bar.first.start < b0 || e.start < b0;
            if !continued && bar.last.activity == e.activity && tiny && start < drawn_end + 0.5 / scale.max(f64::MIN_POSITIVE) {
                bar.end = bar.end.max(end);
                bar.last = e;
                bar.count += 1;
                bar.busy += e.end - e.start;
                continue;
            }
        }
        bars.push(Bar { first: e, last: e, start, end, count: 1, busy: e.end - e.start });
    }
    bars
}

#[allow(clippy::too_many_arguments)]
fn draw_bar(out: &mut String, bar: &Bar, stage: u64, track: Track, top: f64, chunks: u64, x_of: impl Fn(f64) -> f64) {
    let e = bar.first;
    let (class, colour) = style(e.activity);
    let x = x_of(bar.start);
    let real = x_of(bar.end) - x;
    let w = real.max(MIN_BAR);
    let h = track.height();
    // Later chunks of an interleaved stage are drawn lighter.
    let opacity = if chunks > 1 && bar.count == 1 { 1.0 - 0.45 * e.chunk as f64 / (chunks - 1) as f64 } else { 1.0 };
    let ms = |t: f64| short(t * 1e3, 3);
    let what = match e.microbatch {
        Some(mb) => format!("microbatch {mb}, chunk {}", e.chunk),
        None => format!("chunk {}", e.chunk),
    };
    let stroke = if w >= 4.0 { r##" stroke="#ffffff" stroke-width="0.5""## } else { "" };
    // The rest of an event drawn in an earlier band counts there.
    let continued = if bar.first.start < bar.start { r#" data-continued="true""# } else { "" };
    if bar.count == 1 {
        let _ = write!(
            out,
            r#"<rect class="{class}" x="{}" y="{}" width="{}" height="{h}" fill="{colour}" fill-opacity="{}"{stroke}{continued} data-chunk="{}"{} data-count="1"><title>stage {stage}: {} of {what}, {}–{} ms ({} ms)</title></rect>"#,
            short(x, 2),
            short(top, 1),
            short(w, 3),
            short(opacity, 2),
            e.chunk,
            e.microbatch.map(|mb| format!(r#" data-microbatch="{mb}""#)).unwrap_or_default(),
            e.activity.name(),
            ms(e.start),
            ms(e.end),
            ms(e.end - e.start)
        );
    } else {
        let range = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) if a != b => format!(", microbatches {a} to {b}"),
            (Some(a), _) => format!(", microbatch {a}"),
            _ => String::new(),
        };
        let _ = write!(
            out,
            r#"<rect class="{class}" x="{}" y="{}" width="{}" height="{h}" fill="{colour}"{stroke} data-count="{}"><title>stage {stage}: {} {} (merged: each under {MIN_BAR} px at this scale){}, {}–{} ms, {} ms in all</title></rect>"#,
            short(x, 2),
            short(top, 1),
            short(w, 3),
            bar.count,
            bar.count,
            e.activity.name(),
            range(bar.first.microbatch, bar.last.microbatch),
            ms(bar.first.start),
            ms(bar.last.end),
            ms(bar.busy)
        );
    }
    let _ = writeln!(out);
    if let (1, Some(mb), Activity::Forward | Activity::Backward) = (bar.count, e.microbatch, e.activity) {
        let text = mb.to_string();
        if real >= DIGIT * text.len() as f64 + 3.0 {
            let _ = writeln!(
                out,
                r#"<text class="microbatch" x="{}" y="{}" text-anchor="middle" font-size="10" fill="{}">{text}</text>"#,
                short(x + real / 2.0, 2),
                short(top + h / 2.0 + 3.5, 1),
                if opacity < 0.7 { "#222222" } else { "#ffffff" }
            );
        }
    }
}
