//! An event simulation of one training step: every stage runs its slots in
//! the schedule's order on a compute stream, pipeline transfers and the DP
//! gradient reduction run either on that stream or on their own streams,
//! and a slot waits for the transfer it consumes.
//!
//! The closed form ([`crate::analysis::estimate`]) assumes what [`Communication::Serialized`]
//! simulates: every transfer on the sender's compute stream, every chunk slot
//! paying a forward and a backward transfer (the last stage's forward and the
//! first stage's backward too), stages identical, the DP reduction and the
//! optimizer step after the last backward. Under those assumptions the
//! simulated step equals the closed form wherever the closed form's bubble
//! term, `(p − 1)` chunk slots (plus the empty slots of an interleaved
//! schedule with `m mod p ≠ 0`), is what the schedule really leaves idle.
//!
//! [`Communication::Overlapped`] drops the assumptions a real runtime does
//! not need: a transfer runs on the sender's point-to-point stream while
//! the next slot computes, only transfers with a receiver happen, and each
//! chunk's DP reduction starts on a DP stream as soon as its last backward
//! is done (its optimizer step follows on the compute stream). Compute is
//! not slowed while communication runs (Calculon's `processor_usage` is not
//! applied) and links are not shared between streams.

use serde::Serialize;
use thiserror::Error;

use crate::analysis::{
    estimate::{step::BlockSlots, BlockTimes},
    schedule::{Direction, Slot},
};

/// Where the simulation puts communication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Communication {
    /// The closed form's assumptions (see the module documentation).
    Serialized,
    /// Transfers and the DP reduction on their own streams.
    Overlapped,
}

impl Communication {
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Serialized => "serialized",
            Self::Overlapped => "overlapped",
        }
    }
}

/// A stream of one stage's processors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Compute,
    /// The exposed part of a slot's TP collectives. It is time the compute
    /// stream spends waiting, so these events sit inside the compute
    /// stream's slots: each slot's exposed TP time is its last part (the
    /// collectives really interleave with the layers' compute).
    TensorParallel,
    PointToPoint,
    DataParallel,
}

/// What an event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Activity {
    Forward,
    Recompute,
    Backward,
    /// The activation transfer to the next virtual stage.
    SendForward,
    /// The activation-gradient transfer to the previous virtual stage.
    SendBackward,
    /// The chunk's DP gradient reduction.
    DataParallel,
    /// The chunk's optimizer step.
    Optimizer,
    /// Exposed TP communication of a forward slot.
    TpForward,
    /// Exposed TP re-communication of a recompute.
    TpRecompute,
    /// Exposed TP communication of a backward slot.
    TpBackward,
}

impl Activity {
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Forward => "forward",
            Self::Recompute => "recompute",
            Self::Backward => "backward",
            Self::SendForward => "send forward",
            Self::SendBackward => "send backward",
            Self::DataParallel => "DP reduction",
            Self::Optimizer => "optimizer step",
            Self::TpForward => "TP forward",
            Self::TpRecompute => "TP recompute",
            Self::TpBackward => "TP backward",
        }
    }
}

/// One interval on one stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Event {
    pub stage: u64,
    pub stream: Stream,
    pub activity: Activity,
    pub chunk: u64,
    /// `None` for the per-step DP reduction and optimizer step.
    pub microbatch: Option<u64>,
    pub start: f64,
    pub end: f64,
}

/// The durations the simulation composes, per chunk slot of `blocks_per_chunk`
/// blocks (base blocks and one edge block, as the closed form counts them).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChunkDurations {
    /// Forward compute with its exposed TP communication, no transfer.
    pub forward: f64,
    /// Recompute and its re-communication at the start of the backward.
    pub recompute: f64,
    /// The rest of the backward with its exposed TP communication, no transfer.
    pub backward: f64,
    /// The exposed TP communication inside `forward`, `recompute` and
    /// `backward` (drawn on its own track; the slots' lengths include it).
    pub forward_tp: f64,
    pub recompute_tp: f64,
    pub backward_tp: f64,
    pub send_forward: f64,
    pub send_backward: f64,
    /// The chunk's DP reduction (0 without DP).
    pub data_parallel: f64,
    pub optimizer: f64,
}

impl ChunkDurations {
    /// From the estimate's block times (pipeline and DP times set).
    #[must_use]
    pub fn of(t: &BlockTimes, blocks_per_chunk: u64) -> Self {
        if blocks_per_chunk == 0 {
            // An empty chunk (a short stage's last, in an uneven pipeline)
            // only passes its input on.
            return Self {
                forward: 0.0,
                recompute: 0.0,
                backward: 0.0,
                forward_tp: 0.0,
                recompute_tp: 0.0,
                backward_tp: 0.0,
                send_forward: t.block_fw_pp_time,
                send_backward: t.block_bw_pp_time,
                data_parallel: 0.0,
                optimizer: 0.0,
            };
        }
        let s = BlockSlots::of(t);
        let base = blocks_per_chunk.saturating_sub(1) as f64;
        let blocks = blocks_per_chunk as f64;
        let chunk_fw = base * s.bfw + s.efw;
        let chunk_bw = base * s.bbw + s.ebw;
        let recompute_tp = base * t.baseblock_recomm_time_exposed + t.edgeblock_recomm_time_exposed;
        let recompute = blocks * t.block_re_time + recompute_tp;
        Self {
            forward: chunk_fw - t.block_fw_pp_time,
            recompute,
            backward: chunk_bw - t.block_bw_pp_time - recompute,
            send_forward: t.block_fw_pp_time,
            send_backward: t.block_bw_pp_time,
            data_parallel: blocks * t.block_dp_time,
            optimizer: blocks * t.block_optim_time,
            forward_tp: base * t.baseblock_fw_tp_time_exposed + t.edgeblock_fw_tp_time_exposed,
            recompute_tp,
            backward_tp: base * t.baseblock_agrad_tp_time_exposed + t.edgeblock_agrad_tp_time_exposed,
        }
    }
}

/// The step to simulate.
#[derive(Debug, Clone)]
pub struct StepInput<'a> {
    pub stages: u64,
    pub chunks: u64,
    pub microbatches: u64,
    /// Each stage's slots in order (all `2 · microbatches · chunks` of them).
    pub slots: &'a [Vec<Slot>],
    pub durations: ChunkDurations,
    /// Each (stage, chunk)'s own durations, at `stage · chunks + chunk`,
    /// when the chunks differ (an uneven pipeline); else `durations` for
    /// every chunk.
    pub per_chunk: Option<&'a [ChunkDurations]>,
}

impl StepInput<'_> {
    /// The durations of chunk `chunk` of stage `stage`.
    fn durations_of(&self, stage: u64, chunk: u64) -> ChunkDurations {
        self.per_chunk.and_then(|all| all.get((stage * self.chunks + chunk) as usize).copied()).unwrap_or(self.durations)
    }
}

/// One stage's share of the simulated step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StageActivity {
    pub stage: u64,
    /// Time its compute stream works (transfers included when serialized).
    pub busy_seconds: f64,
    /// The rest of the step: pipeline bubble and waiting for transfers or
    /// the DP reduction.
    pub idle_seconds: f64,
}

/// The simulated step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Simulation {
    pub communication: Communication,
    pub total_time: f64,
    pub stages: Vec<StageActivity>,
    #[serde(skip)]
    pub events: Vec<Event>,
}

/// Why a step cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SimulationError {
    #[error("the schedule has {found} stages, the pipeline {expected}")]
    StageCount { expected: u64, found: usize },
    #[error("stage {stage} has {found} slots; a step of {microbatches} microbatches over {chunks} chunks needs {expected}")]
    SlotCount { stage: u64, found: usize, expected: u64, microbatches: u64, chunks: u64 },
    #[error("stage {stage} slot {index} (microbatch {microbatch}, chunk {chunk}) is outside the step or repeats an earlier slot")]
    BadSlot { stage: u64, index: usize, microbatch: u64, chunk: u64 },
    #[error("the schedule deadlocks: stage {stage} waits forever at slot {index} (microbatch {microbatch}, chunk {chunk}, {direction:?})")]
    Deadlock { stage: u64, index: usize, microbatch: u64, chunk: u64, direction: Direction },
    #[error("the step is too large to simulate ({0} slots; at most 2^24)")]
    TooLarge(u128),
}

/// The most slots a simulation holds (the unroll pass's bound).
pub const MAX_SLOTS: u128 = 1 << 24;

/// Simulates the step.
///
/// # Errors
/// A schedule that does not cover the step exactly once per stage, one that
/// deadlocks, or one beyond [`MAX_SLOTS`].
pub fn simulate(input: &StepInput, communication: Communication) -> Result<Simulation, SimulationError> {
    let (p, v, m) = (input.stages, input.chunks, input.microbatches);
    let per_stage = 2 * u128::from(m) * u128::from(v);
    let total = per_stage * u128::from(p);
    if total > MAX_SLOTS {
        return Err(SimulationError::TooLarge(total));
    }
    if input.slots.len() as u64 != p {
        return Err(SimulationError::StageCount { expected: p, found: input.slots.len() });
    }
    // (stage, chunk, microbatch) tables: when the output of a slot is
    // available to its consumer; NaN while it has not run.
    let cells = (p * v * m) as usize;
    let index = |stage: u64, chunk: u64, mb: u64| ((stage * v + chunk) * m + mb) as usize;
    for (stage, slots) in input.slots.iter().enumerate() {
        let stage = stage as u64;
        if slots.len() as u128 != per_stage {
            return Err(SimulationError::SlotCount { stage, found: slots.len(), expected: per_stage as u64, microbatches: m, chunks: v });
        }
        let mut seen = vec![[false; 2]; (v * m) as usize];
        for (i, slot) in slots.iter().enumerate() {
            let bad = || SimulationError::BadSlot { stage, index: i, microbatch: slot.microbatch, chunk: slot.chunk };
            if slot.microbatch >= m || slot.chunk >= v {
                return Err(bad());
            }
            let cell = &mut seen[(slot.chunk * m + slot.microbatch) as usize][usize::from(slot.direction == Direction::Backward)];
            if std::mem::replace(cell, true) {
                return Err(bad());
            }
        }
    }

    let serialized = communication == Communication::Serialized;
    let mut forward_out = vec![f64::NAN; cells];
    let mut backward_out = vec![f64::NAN; cells];
    let mut next = vec![0usize; p as usize];
    let mut compute_free = vec![0.0f64; p as usize];
    let mut link_free = vec![0.0f64; p as usize];
    let mut busy = vec![0.0f64; p as usize];
    // When each (stage, chunk)'s last backward ends.
    let mut last_backward = vec![0.0f64; (p * v) as usize];
    let mut events = Vec::with_capacity(usize::try_from(total * 2).unwrap_or(0));
    let mut queue: Vec<u64> = (0..p).rev().collect();
    let mut queued = vec![true; p as usize];

    while let Some(stage) = queue.pop() {
        let s = stage as usize;
        queued[s] = false;
        while let Some(&slot) = input.slots[s].get(next[s]) {
            let Slot { microbatch: mb, chunk: c, direction } = slot;
            let d = input.durations_of(stage, c);
            // The producer of this slot's input, if on another virtual stage.
            let ready = match direction {
                Direction::Forward if stage > 0 => Some(forward_out[index(stage - 1, c, mb)]),
                Direction::Forward if c > 0 => Some(forward_out[index(p - 1, c - 1, mb)]),
                Direction::Forward => None,
                Direction::Backward if stage + 1 < p => Some(backward_out[index(stage + 1, c, mb)]),
                Direction::Backward if c + 1 < v => Some(backward_out[index(0, c + 1, mb)]),
                // The last virtual stage starts the backward from its own forward.
                Direction::Backward => Some(forward_out[index(stage, c, mb)]),
            };
            let ready = match ready {
                Some(t) if t.is_nan() => break,
                Some(t) => t,
                None => 0.0,
            };
            let mut t = compute_free[s].max(ready);
            let (send, activity, receiver) = match direction {
                Direction::Forward => {
                    t = push_compute(
                        &mut events,
                        Event {
                            stage,
                            stream: Stream::Compute,
                            activity: Activity::Forward,
                            chunk: c,
                            microbatch: Some(mb),
                            start: t,
                            end: t + d.forward,
                        },
                        Activity::TpForward,
                        d.forward_tp,
                    );
                    busy[s] += d.forward;
                    let receiver = if stage + 1 < p || c + 1 < v { Some(stage_after(stage, p)) } else { None };
                    (d.send_forward, Activity::SendForward, receiver)
                }
                Direction::Backward => {
                    if d.recompute > 0.0 {
                        t = push_compute(
                            &mut events,
                            Event {
                                stage,
                                stream: Stream::Compute,
                                activity: Activity::Recompute,
                                chunk: c,
                                microbatch: Some(mb),
                                start: t,
                                end: t + d.recompute,
                            },
                            Activity::TpRecompute,
                            d.recompute_tp,
                        );
                    }
                    t = push_compute(
                        &mut events,
                        Event {
                            stage,
                            stream: Stream::Compute,
                            activity: Activity::Backward,
                            chunk: c,
                            microbatch: Some(mb),
                            start: t,
                            end: t + d.backward,
                        },
                        Activity::TpBackward,
                        d.backward_tp,
                    );
                    busy[s] += d.recompute + d.backward;
                    let receiver = if stage > 0 || c > 0 { Some(stage_before(stage, p)) } else { None };
                    (d.send_backward, Activity::SendBackward, receiver)
                }
            };
            let mut push = |stream: Stream, activity: Activity, start: f64, length: f64| {
                events.push(Event { stage, stream, activity, chunk: c, microbatch: Some(mb), start, end: start + length });
                start + length
            };
            // Without a pipeline nothing is sent, even in the closed form.
            let out = if p == 1 {
                t
            } else if serialized {
                t = push(Stream::Compute, activity, t, send);
                busy[s] += send;
                t
            } else if receiver.is_some() {
                let start = link_free[s].max(t);
                link_free[s] = push(Stream::PointToPoint, activity, start, send);
                link_free[s]
            } else {
                t
            };
            compute_free[s] = t;
            match direction {
                Direction::Forward => forward_out[index(stage, c, mb)] = if receiver.is_some() { out } else { t },
                Direction::Backward => {
                    backward_out[index(stage, c, mb)] = out;
                    let last = &mut last_backward[(stage * v + c) as usize];
                    *last = last.max(t);
                }
            }
            if let Some(r) = receiver.filter(|&r| r != stage) {
                if !std::mem::replace(&mut queued[r as usize], true) {
                    queue.push(r);
                }
            }
            next[s] += 1;
        }
    }
    for (stage, slots) in input.slots.iter().enumerate() {
        if let Some(&slot) = slots.get(next[stage]) {
            return Err(SimulationError::Deadlock {
                stage: stage as u64,
                index: next[stage],
                microbatch: slot.microbatch,
                chunk: slot.chunk,
                direction: slot.direction,
            });
        }
    }

    // The DP reduction and the optimizer step of every chunk.
    let mut total_time = 0.0f64;
    for stage in 0..p {
        let s = stage as usize;
        let mut t = compute_free[s];
        let mut dp_free = 0.0f64;
        // Chunks finish their backwards in reverse order.
        let mut order: Vec<u64> = (0..v).collect();
        order.sort_by(|a, b| last_backward[(stage * v + a) as usize].total_cmp(&last_backward[(stage * v + b) as usize]).then(a.cmp(b)));
        let mut reduced = Vec::with_capacity(order.len());
        for &c in &order {
            let d = input.durations_of(stage, c);
            let mut push = |stream: Stream, activity: Activity, start: f64, length: f64| {
                events.push(Event { stage, stream, activity, chunk: c, microbatch: None, start, end: start + length });
                start + length
            };
            if d.data_parallel > 0.0 {
                if serialized {
                    t = push(Stream::Compute, Activity::DataParallel, t, d.data_parallel);
                    busy[s] += d.data_parallel;
                } else {
                    let start = dp_free.max(last_backward[(stage * v + c) as usize]);
                    dp_free = push(Stream::DataParallel, Activity::DataParallel, start, d.data_parallel);
                }
            }
            reduced.push((c, if serialized { t } else { dp_free }));
        }
        for (c, ready) in reduced {
            let d = input.durations_of(stage, c);
            let start = t.max(ready);
            events.push(Event {
                stage,
                stream: Stream::Compute,
                activity: Activity::Optimizer,
                chunk: c,
                microbatch: None,
                start,
                end: start + d.optimizer,
            });
            t = start + d.optimizer;
            busy[s] += d.optimizer;
        }
        total_time = total_time.max(t).max(link_free[s]);
    }
    let stages = (0..p)
        .map(|stage| StageActivity { stage, busy_seconds: busy[stage as usize], idle_seconds: total_time - busy[stage as usize] })
        .collect();
    Ok(Simulation { communication, total_time, stages, events })
}

/// Pushes a compute slot whose last `tp` seconds are exposed TP
/// communication, as two events (the TP part on its own stream); returns
/// the slot's end, computed as without the split so that the simulated
/// times do not depend on it.
fn push_compute(events: &mut Vec<Event>, slot: Event, tp_activity: Activity, tp: f64) -> f64 {
    let split = if tp > 0.0 { (slot.end - tp).max(slot.start) } else { slot.end };
    events.push(Event { end: split, ..slot });
    if split < slot.end {
        events.push(Event { stream: Stream::TensorParallel, activity: tp_activity, start: split, ..slot });
    }
    slot.end
}

/// The stage the next virtual stage runs on.
fn stage_after(stage: u64, stages: u64) -> u64 {
    (stage + 1) % stages
}

/// The stage the previous virtual stage runs on.
fn stage_before(stage: u64, stages: u64) -> u64 {
    (stage + stages - 1) % stages
}

/// Slots from the `(microbatch, chunk, direction)` triples of a
/// `dist.schedule` / `plan.schedule` op (direction 0 forward, 1 backward).
///
/// # Errors
/// A list whose length is not a multiple of three, or a negative or unknown
/// entry, naming its position.
pub fn slots_from_triples(values: &[i64]) -> Result<Vec<Slot>, String> {
    if !values.len().is_multiple_of(3) {
        return Err(format!("{} slot entries are not (microbatch, chunk, direction) triples", values.len()));
    }
    values
        .chunks_exact(3)
        .enumerate()
        .map(|(i, triple)| {
            let entry = |k: usize| u64::try_from(triple[k]).map_err(|_| format!("slot {i} has a negative entry {}", triple[k]));
            let direction = match triple[2] {
                0 => Direction::Forward,
                1 => Direction::Backward,
                other => return Err(format!("slot {i} has direction {other}; 0 is forward, 1 backward")),
            };
            Ok(Slot { microbatch: entry(0)?, chunk: entry(1)?, direction })
        })
        .collect()
}

#[cfg(test)]
mod tests;
