//! The simulated step as Chrome trace-event JSON, which Perfetto
//! (ui.perfetto.dev) and `chrome://tracing` open: one process per
//! pipeline stage, one thread per stream of the simulation, one complete
//! (`"ph": "X"`) event per simulated interval with `ts` and `dur` in
//! microseconds, and metadata (`"ph": "M"`) events naming and ordering the
//! processes and threads.
//!
//! Every event's `args` carry its `task_id` (stage, chunk, microbatch and
//! phase, spelled like the plan's task ids: `s3.c1.mb5.fwd`), the pattern
//! of the plan's tasks it stands for (`plan_tasks`, e.g. `s3.c1.*.fwd`),
//! `stage`, `chunk`, `microbatch` (`null` for the per-chunk DP reduction
//! and optimizer step) and `phase` (the plan's phase names).

use serde::Serialize;
use serde_json::{json, Value};

use crate::analysis::simulate::{Activity, Event, Simulation, Stream};

/// What the trace says besides the events (`otherData`).
#[derive(Debug, Clone, Serialize)]
pub struct TraceLabels {
    pub title: String,
    pub closed_form_seconds: f64,
}

const STREAMS: [Stream; 4] = [Stream::Compute, Stream::TensorParallel, Stream::PointToPoint, Stream::DataParallel];

/// The thread id of a stream (1-based: some viewers hide thread 0).
#[must_use]
pub fn thread_id(stream: Stream) -> u64 {
    match stream {
        Stream::Compute => 1,
        Stream::TensorParallel => 2,
        Stream::PointToPoint => 3,
        Stream::DataParallel => 4,
    }
}

/// The thread name of a stream.
#[must_use]
pub const fn thread_name(stream: Stream) -> &'static str {
    match stream {
        Stream::Compute => "compute",
        Stream::TensorParallel => "TP exposed",
        Stream::PointToPoint => "PP transfers",
        Stream::DataParallel => "DP reduction",
    }
}

/// The process id of a stage (1-based, as for threads).
#[must_use]
pub fn process_id(stage: u64) -> u64 {
    stage + 1
}

/// The phase (the plan's name), the task-id suffix and the plan's task
/// pattern of an activity.
fn naming(activity: Activity) -> (&'static str, &'static str, &'static str) {
    match activity {
        Activity::Forward => ("forward", "fwd", "*.fwd"),
        Activity::Recompute => ("recompute", "recompute", "*.recompute"),
        Activity::Backward => ("activation_gradient+weight_gradient", "bwd", "*.agrad|*.wgrad"),
        Activity::Optimizer => ("optimizer", "optim", "*.optim"),
        Activity::TpForward => ("forward", "tp.fwd", "*.tp_*.fwd"),
        Activity::TpRecompute => ("recommunication", "tp.recomm", "*.tp_*.recomm"),
        Activity::TpBackward => ("activation_gradient", "tp.agrad", "*.tp_*.agrad"),
        Activity::SendForward => ("forward", "send_activation", "send_activation"),
        Activity::SendBackward => ("activation_gradient", "send_gradient", "send_gradient"),
        Activity::DataParallel => ("optimizer", "dp", "dp.*"),
    }
}

fn category(activity: Activity) -> &'static str {
    match activity {
        Activity::Forward | Activity::Recompute | Activity::Backward | Activity::Optimizer => "compute",
        Activity::TpForward | Activity::TpRecompute | Activity::TpBackward => "tp",
        Activity::SendForward | Activity::SendBackward => "pp",
        Activity::DataParallel => "dp",
    }
}

fn event_json(e: &Event) -> Value {
    let (phase, suffix, pattern) = naming(e.activity);
    let task_id = match e.microbatch {
        Some(mb) => format!("s{}.c{}.mb{mb}.{suffix}", e.stage, e.chunk),
        None => format!("s{}.c{}.{suffix}", e.stage, e.chunk),
    };
    let name = match e.microbatch {
        Some(mb) => format!("{} mb {mb} c {}", e.activity.name(), e.chunk),
        None => format!("{} c {}", e.activity.name(), e.chunk),
    };
    json!({
        "name": name,
        "cat": category(e.activity),
        "ph": "X",
        // Scaled before subtracting, so that an event ends where the next
        // on its thread starts (viewers nest overlapping slices).
        "ts": e.start * 1e6,
        "dur": e.end * 1e6 - e.start * 1e6,
        "pid": process_id(e.stage),
        "tid": thread_id(e.stream),
        "args": {
            "task_id": task_id,
            "plan_tasks": format!("s{}.c{}.{pattern}", e.stage, e.chunk),
            "stage": e.stage,
            "chunk": e.chunk,
            "microbatch": e.microbatch,
            "phase": phase,
        },
    })
}

fn metadata(name: &str, pid: u64, tid: u64, args: Value) -> Value {
    json!({ "name": name, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args })
}

/// Most events a trace holds (about 250 bytes of JSON each): beyond,
/// Perfetto's and Chrome's JSON importers no longer load it.
pub const MAX_EVENTS: usize = 2_000_000;

/// A trace too large to load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the trace would hold {0} events, more than the {MAX_EVENTS} a trace viewer loads from JSON")]
pub struct TooManyEvents(pub usize);

/// The trace of `simulation` as a JSON value.
///
/// # Errors
/// More than [`MAX_EVENTS`] events.
pub fn trace_json(simulation: &Simulation, labels: &TraceLabels) -> Result<Value, TooManyEvents> {
    if simulation.events.len() > MAX_EVENTS {
        return Err(TooManyEvents(simulation.events.len()));
    }
    let mut events = Vec::with_capacity(simulation.events.len() + 8 * simulation.stages.len());
    for stage in simulation.stages.iter().map(|s| s.stage) {
        let pid = process_id(stage);
        events.push(metadata("process_name", pid, 0, json!({ "name": format!("stage {stage}") })));
        events.push(metadata("process_sort_index", pid, 0, json!({ "sort_index": stage })));
        for stream in STREAMS {
            if simulation.events.iter().any(|e| e.stage == stage && e.stream == stream && e.end > e.start) {
                let tid = thread_id(stream);
                events.push(metadata("thread_name", pid, tid, json!({ "name": thread_name(stream) })));
                events.push(metadata("thread_sort_index", pid, tid, json!({ "sort_index": tid })));
            }
        }
    }
    let mut sorted: Vec<&Event> = simulation.events.iter().filter(|e| e.end > e.start).collect();
    sorted.sort_by(|a, b| a.stage.cmp(&b.stage).then(a.stream.cmp(&b.stream)).then(a.start.total_cmp(&b.start)));
    events.extend(sorted.into_iter().map(event_json));
    Ok(json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "title": labels.title,
            "communication": simulation.communication.name(),
            "simulated_step_seconds": simulation.total_time,
            "closed_form_seconds": labels.closed_form_seconds,
            "time_unit": "ts and dur in microseconds from the start of the step",
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::simulate::{Communication, StageActivity};

    #[test]
    fn events_carry_their_slot() {
        let e = |stream, activity, microbatch, start, end| Event { stage: 1, stream, activity, chunk: 2, microbatch, start, end };
        let simulation = Simulation {
            communication: Communication::Overlapped,
            total_time: 1.0,
            stages: vec![
                StageActivity { stage: 0, busy_seconds: 0.0, idle_seconds: 1.0 },
                StageActivity { stage: 1, busy_seconds: 0.5, idle_seconds: 0.5 },
            ],
            events: vec![
                e(Stream::Compute, Activity::Forward, Some(5), 0.25, 0.5),
                e(Stream::TensorParallel, Activity::TpForward, Some(5), 0.5, 0.5),
                e(Stream::DataParallel, Activity::DataParallel, None, 0.5, 0.75),
            ],
        };
        let trace = trace_json(&simulation, &TraceLabels { title: "t".into(), closed_form_seconds: 1.0 }).expect("small");
        let events = trace["traceEvents"].as_array().expect("an array");
        let complete: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        // The empty TP event is left out.
        assert_eq!(complete.len(), 2);
        assert_eq!(complete[0]["ts"], 250000.0);
        assert_eq!(complete[0]["dur"], 250000.0);
        assert_eq!(complete[0]["pid"], 2);
        assert_eq!(complete[0]["args"]["task_id"], "s1.c2.mb5.fwd");
        assert_eq!(complete[1]["args"]["microbatch"], Value::Null);
        assert_eq!(complete[1]["tid"], thread_id(Stream::DataParallel));
        let names: Vec<&Value> = events.iter().filter(|e| e["name"] == "process_name").map(|e| &e["args"]["name"]).collect();
        assert_eq!(names, ["stage 0", "stage 1"]);
    }

    #[test]
    fn too_many_events_is_an_error_for_both_pictures() {
        let event =
            Event { stage: 0, stream: Stream::Compute, activity: Activity::Forward, chunk: 0, microbatch: Some(0), start: 0.0, end: 1.0 };
        let simulation = Simulation {
            communication: Communication::Overlapped,
            total_time: 1.0,
            stages: vec![StageActivity { stage: 0, busy_seconds: 1.0, idle_seconds: 0.0 }],
            events: vec![event; MAX_EVENTS + 1],
        };
        let labels = TraceLabels { title: "t".into(), closed_form_seconds: 1.0 };
        assert_eq!(trace_json(&simulation, &labels), Err(TooManyEvents(MAX_EVENTS + 1)));
        let timeline = crate::analysis::pictures::timeline::timeline_svg(
            &simulation,
            &crate::analysis::pictures::timeline::TimelineLabels { title: "t".into(), closed_form_seconds: 1.0, chunks: 1 },
            &crate::analysis::pictures::timeline::TimelineView::default(),
        );
        assert!(matches!(timeline, Err(crate::analysis::pictures::timeline::ViewError::TooManyEvents { .. })));
    }
}
