//! `blueprint-translate --estimate`: a portable plan (or dist program) on a
//! system profile. The system and the network binding are read here, after
//! the plan, and never enter any IR: they cannot change a digest.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::Serialize;

use crate::{
    analysis::estimate::TaskClass as EstimateClass,
    {
        analysis::{
            estimate::{
                calculon_stats::calculon_stats, estimate, Capability, EstimateOptions, Offload, TaskFacts, TaskTiling, TimingSeconds,
                TpOverlap,
            },
            pictures::{
                memory::{memory_svg, memory_svg_two_tiers},
                timeline::{self, timeline_svg, TimelineLabels, TimelineView},
                trace::{trace_json, TraceLabels},
            },
            schedule::{ProcessorMemory, Schedule, Slot},
            simulate::{simulate, slots_from_triples, ChunkDurations, Communication, Simulation, StepInput},
            system::{NetworkBinding, SystemProfile},
            workload::{InferenceSpec, TrainingSpec},
        },
        dialect::summary::{LayerWork, TaskClass},
    },
};

/// What `--estimate` is given besides the plan.
#[derive(Debug, Clone, Default)]
pub struct EstimateArgs {
    /// Paths as given (not necessarily UTF-8).
    pub system: Option<PathBuf>,
    pub tp_net: Option<usize>,
    pub pp_net: Option<usize>,
    pub dp_net: Option<usize>,
    pub dp_overlap: bool,
    /// `--forward-only`: Calculon's inference step (`training = false`),
    /// the forward pass of the planned step alone.
    pub forward_only: bool,
    /// `--weight-offload`, `--activations-offload`, `--optimizer-offload`.
    pub offload: Offload,
    /// `--calculon MODEL EXECUTION SYSTEM`: Calculon's three files as they
    /// are, instead of a plan.
    pub calculon: Option<[PathBuf; 3]>,
    /// `--format calculon`: print `calculon llm`'s statistics (its JSON
    /// shape and names) instead of Blueprint's report.
    pub format_calculon: bool,
    /// What the user expects the plan to tile (`--tp-overlap`): checked
    /// against the plan's strategy, since tiling is part of the program.
    pub tp_overlap: Option<TpOverlap>,
    pub allow_over_capacity: bool,
    /// Where to draw the simulated step and the per-stage memory.
    pub timeline: Option<PathBuf>,
    pub memory: Option<PathBuf>,
    /// Where to write the simulated step as Chrome-trace / Perfetto JSON.
    pub trace: Option<PathBuf>,
    /// The simulation the timeline and the trace show.
    pub simulate: Option<Communication>,
    /// `--timeline-width`, `--timeline-range` (seconds), `--timeline-bands`.
    pub timeline_width: Option<f64>,
    pub timeline_range: Option<(f64, f64)>,
    pub timeline_bands: Option<u32>,
}

/// What `--estimate` produces: the report, a refusal (a stage that does
/// not fit), and the pictures to write with their paths.
#[derive(Debug)]
pub struct EstimateOutput {
    pub json: String,
    pub refusal: Option<String>,
    pub pictures: Vec<(PathBuf, String)>,
}

impl EstimateArgs {
    /// Consumes one option of the mode; `Ok(false)` if `arg` is not one.
    ///
    /// # Errors
    /// A missing or malformed value.
    pub fn take(&mut self, arg: &str, next: &mut dyn Iterator<Item = OsString>) -> Result<bool, String> {
        let mut path = |name: &str| next.next().map(PathBuf::from).ok_or_else(|| format!("blueprint-translate: {name} needs a value"));
        let mut value = |name: &str| {
            path(name).and_then(|v| {
                v.into_os_string().into_string().map_err(|v| format!("blueprint-translate: {name} '{}' is not UTF-8", v.to_string_lossy()))
            })
        };
        let index = |name: &str, text: String| {
            text.parse::<usize>().map_err(|_| format!("blueprint-translate: {name} takes a network tier index, got '{text}'"))
        };
        match arg {
            "--system" => self.system = Some(path("--system")?),
            "--tp-net" => self.tp_net = Some(index("--tp-net", value("--tp-net")?)?),
            "--pp-net" => self.pp_net = Some(index("--pp-net", value("--pp-net")?)?),
            "--dp-net" => self.dp_net = Some(index("--dp-net", value("--dp-net")?)?),
            "--dp-overlap" => self.dp_overlap = true,
            "--forward-only" => self.forward_only = true,
            "--weight-offload" => self.offload.weights = true,
            "--activations-offload" => self.offload.activations = true,
            "--optimizer-offload" => self.offload.optimizer = true,
            "--format" => {
                self.format_calculon = match value("--format")?.as_str() {
                    "calculon" => true,
                    "blueprint" => false,
                    other => return Err(format!("blueprint-translate: --format takes blueprint or calculon, got '{other}'")),
                }
            }
            "--calculon" => {
                let mut file = |what: &str| {
                    next.next().filter(|p| p.to_str().is_none_or(|s| !s.starts_with("--"))).map(PathBuf::from).ok_or_else(|| {
                        format!("blueprint-translate: --calculon needs three files, MODEL.json EXECUTION.json SYSTEM.json (no {what})")
                    })
                };
                self.calculon = Some([file("MODEL.json")?, file("EXECUTION.json")?, file("SYSTEM.json")?]);
            }
            "--allow-over-capacity" => self.allow_over_capacity = true,
            "--timeline" => self.timeline = Some(path("--timeline")?),
            "--memory" => self.memory = Some(path("--memory")?),
            "--trace" => self.trace = Some(path("--trace")?),
            "--timeline-width" => {
                let text = value("--timeline-width")?;
                let width =
                    text.parse::<f64>().ok().filter(|w| (timeline::MIN_WIDTH..=timeline::MAX_WIDTH).contains(w)).ok_or_else(|| {
                        format!(
                            "blueprint-translate: --timeline-width takes a width in px from {} to {}, got '{text}'",
                            timeline::MIN_WIDTH,
                            timeline::MAX_WIDTH
                        )
                    })?;
                self.timeline_width = Some(width);
            }
            "--timeline-bands" => {
                let text = value("--timeline-bands")?;
                let bands = text.parse::<u32>().ok().filter(|b| (1..=timeline::MAX_BANDS).contains(b)).ok_or_else(|| {
                    format!("blueprint-translate: --timeline-bands takes a count from 1 to {}, got '{text}'", timeline::MAX_BANDS)
                })?;
                self.timeline_bands = Some(bands);
            }
            "--timeline-range" => {
                let text = value("--timeline-range")?;
                self.timeline_range = Some(parse_range(&text)?);
            }
            "--simulate" => {
                self.simulate = Some(match value("--simulate")?.as_str() {
                    "overlapped" => Communication::Overlapped,
                    "serialized" => Communication::Serialized,
                    other => return Err(format!("blueprint-translate: --simulate takes overlapped or serialized, got '{other}'")),
                })
            }
            "--tp-overlap" => {
                self.tp_overlap = Some(match value("--tp-overlap")?.as_str() {
                    "none" => TpOverlap::None,
                    "ring" => TpOverlap::Ring,
                    "pipe" => TpOverlap::Pipe,
                    other => return Err(format!("blueprint-translate: --tp-overlap takes none, ring or pipe, got '{other}'")),
                })
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// `START:END` in milliseconds, as seconds.
fn parse_range(text: &str) -> Result<(f64, f64), String> {
    let bad = || {
        format!("blueprint-translate: --timeline-range takes START:END in milliseconds from the start of the step, START < END (e.g. 0:250), got '{text}'")
    };
    let (a, b) = text.split_once(':').ok_or_else(bad)?;
    let parse = |v: &str| v.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) if a < b => Ok((a / 1e3, b / 1e3)),
        _ => Err(bad()),
    }
}

impl EstimateArgs {
    /// The layout options need the picture they lay out.
    fn check(&self) -> Result<(), String> {
        if self.timeline.is_none() {
            for (given, name) in [
                (self.timeline_width.is_some(), "--timeline-width"),
                (self.timeline_range.is_some(), "--timeline-range"),
                (self.timeline_bands.is_some(), "--timeline-bands"),
            ] {
                if given {
                    return Err(format!("blueprint-translate: {name} lays out the timeline: give --timeline OUT.svg too"));
                }
            }
        }
        if self.simulate.is_some() && self.timeline.is_none() && self.trace.is_none() {
            return Err("blueprint-translate: --simulate chooses what --timeline or --trace shows: give one of them too".into());
        }
        Ok(())
    }
}

#[derive(Debug, Serialize)]
struct OffloadReport {
    weights: bool,
    activations: bool,
    optimizer: bool,
    /// Per processor (stage 0), bytes; `per_processor.proc_mem_tier1_cap_req`
    /// is what the first tier keeps.
    proc_mem_tier2_cap_req: f64,
    tier2_capacity_bytes: f64,
}

/// One stage's time and memory.
#[derive(Debug, Serialize)]
struct StageReport {
    stage: u64,
    busy_seconds: f64,
    idle_seconds: f64,
    memory: ProcessorMemory,
    fits: bool,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    system: &'a str,
    networks: Networks,
    /// Calculon's `training`: false for the forward-only (inference) step.
    training: bool,
    /// What is offloaded to the second memory tier, and what that needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    offload: Option<OffloadReport>,
    timing_seconds: TimingSeconds,
    sample_rate: f64,
    /// Calculon's stage-0 convention.
    per_processor: ProcessorMemory,
    capacity_bytes: f64,
    fits: bool,
    stages: Vec<StageReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dp_overlap_calculon_total_time: Option<f64>,
    /// The simulated training step (absent for a forward-only step: the
    /// simulation runs the plan's training schedule).
    #[serde(skip_serializing_if = "Option::is_none")]
    simulation: Option<SimulationReport>,
    notes: Vec<String>,
}

/// The simulated step both ways, beside the closed form.
#[derive(Debug, Serialize)]
struct SimulationReport {
    /// `plan.schedule` / `dist.schedule` of the input, or `strategy` when
    /// the step is unrolled (the schedule the strategy names).
    schedule_source: &'static str,
    serialized: Simulation,
    overlapped: Simulation,
}

#[derive(Debug, Serialize)]
struct Networks {
    tp: usize,
    pp: usize,
    dp: usize,
}

/// The representative block's tasks as the estimate reads them.
#[must_use]
pub fn estimate_tasks(work: &LayerWork) -> Vec<TaskFacts> {
    work.tasks
        .iter()
        .filter(|t| t.representative && matches!(t.class, TaskClass::Compute | TaskClass::TensorParallel))
        .filter_map(|t| {
            Some(TaskFacts {
                id: crate::ir::lineage::base_id(&t.id).to_string(),
                phase: crate::analysis::estimate::phase_from_name(t.phase)?,
                capability: Capability::from_name(&t.engine)?,
                class: if t.class == TaskClass::Compute { EstimateClass::Compute } else { EstimateClass::TensorParallel },
                ops: t.ops,
                read_bytes: t.read_bytes,
                write_bytes: t.write_bytes,
                message_bytes: t.message_bytes,
                shared_by: t.shared_by,
                group_size: None,
                tiling: t.tiling.as_ref().map(|(with, tiles, overlap)| TaskTiling {
                    with: crate::ir::lineage::base_id(with).to_string(),
                    tiles: *tiles,
                    overlap: match overlap {
                        crate::ir::ods::TileOverlap::Ring => TpOverlap::Ring,
                        crate::ir::ods::TileOverlap::Pipe => TpOverlap::Pipe,
                    },
                }),
            })
        })
        .collect()
}

/// The estimate of a verified module holding a plan (or dist program)
/// bound to a training strategy; `name` names it in diagnostics.
///
/// # Errors
/// No strategy or no plan on the module, and as [`run`].
pub fn estimate_module(op: melior::ir::OperationRef, name: &str, args: &EstimateArgs) -> Result<EstimateOutput, String> {
    use crate::dialect::model::binding::{read_spec, INFERENCE_SPEC, TRAINING_SPEC};
    use melior::ir::operation::OperationLike;
    if op.attribute(INFERENCE_SPEC).is_ok() && op.attribute(TRAINING_SPEC).is_err() {
        let spec: InferenceSpec = read_spec(op, INFERENCE_SPEC, |s: &InferenceSpec| s.validate().map_err(|e| e.to_string()))
            .map_err(|e| format!("{name}: error: {e}"))?;
        return served(op, name, args, &spec);
    }
    let spec: TrainingSpec = read_spec(op, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string()))
        .map_err(|e| format!("{name}: error: {e}"))?;
    let work = crate::dialect::summary::estimate_work(op, estimated_layer(op, name, "training")?);
    run(args, &work, &spec)
}

/// The layer of `op` an estimate reads: its plan, else its dist program
/// (`kind` names the passes that make them in the error).
fn estimated_layer(op: melior::ir::OperationRef, name: &str, kind: &str) -> Result<&'static str, String> {
    let ops = crate::ir::read::collect_ops(op);
    let has = |dialect: &str| ops.iter().any(|o| crate::ir::ods::OpKind::of(*o).is_some_and(|k| k.dialect() == dialect && k.is_task()));
    if has("plan") {
        Ok("plan")
    } else if has("dist") {
        Ok("dist")
    } else {
        Err(format!(
            "{name}: error: no plan or dist program to estimate (run distribute-transformer-{kind} and plan-transformer-{kind} first)"
        ))
    }
}

/// The system file at `path` (as `--system` gives it) and its name as shown.
fn read_system(path: &std::path::Path) -> Result<(SystemProfile, String), String> {
    let shown = path.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).map_err(|e| format!("blueprint-translate: cannot read '{shown}': {e}"))?;
    let system = SystemProfile::from_json(&text).map_err(|e| format!("{shown}: error: {e}"))?;
    Ok((system, shown))
}

/// The network tier `flag` gives, or the error asking for it.
fn tier_of(value: Option<usize>, flag: &str, system: &str) -> Result<usize, String> {
    value.ok_or_else(|| format!("blueprint-translate: --estimate needs {flag} (a network tier index of {system})"))
}

/// The estimate of `work` (a layer of a module bound to `spec`) as JSON,
/// and whether every stage fits.
///
/// # Errors
/// A missing option, an unreadable or invalid system file, a binding that
/// does not fit, or a plan the estimate cannot price.
pub fn run(args: &EstimateArgs, work: &LayerWork, spec: &TrainingSpec) -> Result<EstimateOutput, String> {
    let system_path = args.system.as_deref().ok_or("blueprint-translate: --estimate needs --system S.json")?;
    args.check()?;
    let (system, shown) = read_system(system_path)?;
    let path: &str = &shown;
    let binding = NetworkBinding {
        tp: tier_of(args.tp_net, "--tp-net", path)?,
        pp: tier_of(args.pp_net, "--pp-net", path)?,
        dp: tier_of(args.dp_net, "--dp-net", path)?,
    };
    if let Some(asked) = args.tp_overlap.filter(|asked| *asked != spec.mapping.tp_overlap) {
        return Err(format!(
            "blueprint-translate: error: --tp-overlap {} does not match the plan, distributed with mapping.tp_overlap = {}: tiling the TP collectives with their linears changes the block's tasks and memory (Q, K and V fuse into one linear, as in Calculon), so it is a strategy choice; set mapping.tp_overlap = \"{}\" in the spec and distribute again",
            asked.name(),
            spec.mapping.tp_overlap.name(),
            asked.name()
        ));
    }
    if args.forward_only {
        for (given, name) in [(args.timeline.is_some(), "--timeline"), (args.trace.is_some(), "--trace")] {
            if given {
                return Err(format!(
                    "blueprint-translate: {name} draws the simulated training schedule; a forward-only (inference) step has no simulation"
                ));
            }
        }
    }
    let options = EstimateOptions {
        data_par_overlap: args.dp_overlap,
        calculon_compat_dp_overlap: false,
        forward_only: args.forward_only,
        offload: args.offload,
    };
    let tasks = estimate_tasks(work);
    let mut block = work.block_facts();
    if args.forward_only || args.format_calculon {
        // Calculon's inference activation storage counts every op's
        // activation, which the plan's memory facts do not state: the
        // algebra's block of the plan's strategy gives it (equal to the
        // plan's by the derivation-equals-algebra test).
        let derived = crate::analysis::workload::derive_training_block(spec).map_err(|e| format!("blueprint-translate: error: {e}"))?;
        block.block_act_all_space = Some(derived.memory.act_all);
    }
    let estimate = estimate(&tasks, &block, spec, &system, &binding, &options).map_err(|e| format!("blueprint-translate: error: {e}"))?;
    let capacity = estimate.memory.capacity_bytes;
    let mut stages: Vec<StageReport> = work
        .stages()
        .into_iter()
        .map(|memory| if args.forward_only { ProcessorMemory::forward_only_of(memory.weight_space, &block) } else { memory })
        .map(|memory| memory.offloaded(&block, spec, args.offload, !args.forward_only).0)
        .enumerate()
        .map(|(stage, memory)| {
            let time = estimate.stage_time(stage as u64).unwrap_or(estimate.stage);
            StageReport {
                stage: stage as u64,
                busy_seconds: time.busy,
                idle_seconds: time.idle,
                fits: memory.proc_mem_tier1_cap_req <= capacity,
                memory,
            }
        })
        .collect();
    let mut notes = Vec::new();
    let schedule = Schedule::of(spec);
    let (slots, schedule_source) = stage_slots(work, &schedule)?;
    // An uneven pipeline's short stages run their own (shorter) last chunk.
    let per_chunk: Option<Vec<ChunkDurations>> = spec.uneven_blocks().then(|| {
        (0..schedule.stages)
            .flat_map(|stage| (0..schedule.chunks).map(move |chunk| (stage, chunk)))
            .map(|(stage, chunk)| ChunkDurations::of(&estimate.block, spec.chunk_blocks(stage, chunk)))
            .collect()
    });
    let input = StepInput {
        stages: schedule.stages,
        chunks: schedule.chunks,
        microbatches: schedule.microbatches,
        slots: &slots,
        durations: ChunkDurations::of(&estimate.block, spec.blocks_per_virtual_chunk()),
        per_chunk: per_chunk.as_deref(),
    };
    let simulated = |mode| simulate(&input, mode).map_err(|e| format!("blueprint-translate: error: cannot simulate the step: {e}"));
    let simulation = if args.forward_only {
        notes.push("forward only (Calculon's training = false): the step's forward pass alone, no gradients, optimizer, recompute or DP synchronisation; memory is the weights and one block's working activations".into());
        None
    } else {
        Some(SimulationReport {
            schedule_source,
            serialized: simulated(Communication::Serialized)?,
            overlapped: simulated(Communication::Overlapped)?,
        })
    };
    if let (true, Some(simulation)) = (spec.uneven_blocks(), &simulation) {
        // Calculon prices the fullest stage for all; a short stage is busy
        // for its own blocks (the serialized simulation's busy time, whose
        // stage 0 is the closed form's).
        for (stage, simulated) in stages.iter_mut().zip(&simulation.serialized.stages) {
            stage.busy_seconds = simulated.busy_seconds;
            stage.idle_seconds = estimate.timing_seconds.total_time - simulated.busy_seconds;
        }
        notes.push(format!(
            "uneven pipeline: {} blocks over {} stages, the first {} of {} blocks, the others of {}; the figures above are Calculon's (its blocks_per_proc is the fullest stage's, its bubble shortened by the {} short stages' missing blocks); each stage's busy time, memory and simulation are its own",
            spec.model.blocks,
            spec.mapping.pp,
            spec.mapping.pp - spec.short_stages(),
            spec.blocks_per_rank(),
            spec.blocks_per_rank() - 1,
            spec.short_stages()
        ));
    }
    let dp_overlap_calculon_total_time = estimate.dp_overlap.as_ref().and_then(|f| {
        let calculon = f.calculon?;
        (calculon != f.blueprint).then(|| {
            notes.push(format!(
                "DP overlap: Calculon's exposed DP time would be {calculon} s (it adds a running prefix of the recompute times); Blueprint's is {} s",
                f.blueprint
            ));
            estimate.timing_seconds.total_time - f.blueprint + calculon
        })
    });
    // The first of the stages that need the most.
    let over = stages.iter().filter(|s| !s.fits).fold(None::<&StageReport>, |worst, s| match worst {
        Some(w) if w.memory.proc_mem_tier1_cap_req >= s.memory.proc_mem_tier1_cap_req => Some(w),
        _ => Some(s),
    });
    let over_count = stages.iter().filter(|s| !s.fits).count();
    let refusal = match over {
        Some(stage) if !args.allow_over_capacity => Some(format!(
            "blueprint-translate: error: {over_count} of {} stages do not fit: stage {} needs {} bytes per processor, {} bytes more than the {} bytes of the first memory tier of {path} (--allow-over-capacity prints the estimate anyway)",
            stages.len(),
            stage.stage,
            stage.memory.proc_mem_tier1_cap_req,
            stage.memory.proc_mem_tier1_cap_req - capacity,
            capacity
        )),
        _ => None,
    };
    let report = Report {
        system: path,
        networks: Networks { tp: binding.tp, pp: binding.pp, dp: binding.dp },
        training: !args.forward_only,
        offload: args.offload.any().then_some(OffloadReport {
            weights: args.offload.weights,
            activations: args.offload.activations,
            optimizer: args.offload.optimizer,
            proc_mem_tier2_cap_req: estimate.memory.proc_mem_tier2_cap_req,
            tier2_capacity_bytes: estimate.memory.tier2_capacity_bytes,
        }),
        timing_seconds: estimate.timing_seconds,
        sample_rate: estimate.sample_rate,
        per_processor: estimate.memory.per_processor,
        capacity_bytes: capacity,
        fits: estimate.memory.fits && over.is_none(),
        stages,
        dp_overlap_calculon_total_time,
        simulation,
        notes,
    };
    let json = if args.format_calculon {
        let stats =
            calculon_stats(&tasks, &block, spec, &system, &binding, &options).map_err(|e| format!("blueprint-translate: error: {e}"))?;
        crate::analysis::estimate::calculon_stats::to_json(&stats)
    } else {
        serde_json::to_string_pretty(&report).map_err(|e| e.to_string())? + "\n"
    };
    let mut pictures = Vec::new();
    let count = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let strategy = format!(
        "{} · TP {} · PP {} · DP {} · {} per stage · {} · {}",
        spec.model.name.as_deref().or(spec.name.as_deref()).unwrap_or("model"),
        spec.mapping.tp,
        spec.mapping.pp,
        spec.mapping.dp,
        count(schedule.chunks, "chunk", "chunks"),
        count(schedule.microbatches, "microbatch", "microbatches"),
        step_name(work)
    );
    let drawn = report.simulation.as_ref().map(|simulation| match args.simulate.unwrap_or(Communication::Overlapped) {
        Communication::Serialized => &simulation.serialized,
        Communication::Overlapped => &simulation.overlapped,
    });
    if let (Some(path), Some(drawn)) = (&args.timeline, drawn) {
        let labels =
            TimelineLabels { title: strategy.clone(), closed_form_seconds: report.timing_seconds.total_time, chunks: schedule.chunks };
        let view = TimelineView {
            width: args.timeline_width.unwrap_or(timeline::DEFAULT_WIDTH),
            range: args.timeline_range,
            bands: args.timeline_bands,
        };
        let svg = timeline_svg(drawn, &labels, &view).map_err(|e| format!("blueprint-translate: error: {e}"))?;
        pictures.push((path.clone(), svg));
    }
    if let (Some(path), Some(drawn)) = (&args.trace, drawn) {
        let labels = TraceLabels { title: strategy.clone(), closed_form_seconds: report.timing_seconds.total_time };
        let value = trace_json(drawn, &labels).map_err(|e| format!("blueprint-translate: error: --trace: {e}"))?;
        let trace = serde_json::to_string(&value).map_err(|e| e.to_string())? + "\n";
        pictures.push((path.clone(), trace));
    }
    if let Some(path) = &args.memory {
        let memory: Vec<ProcessorMemory> = report.stages.iter().map(|s| s.memory).collect();
        let title = format!("Memory per stage: {strategy}");
        let svg = if args.offload.any() {
            // Each stage's memory as the plan states it, split over the tiers.
            let tiers: Vec<_> = work
                .stages()
                .into_iter()
                .map(|m| if args.forward_only { ProcessorMemory::forward_only_of(m.weight_space, &block) } else { m })
                .map(|m| m.tiers(&block, spec, args.offload, !args.forward_only))
                .collect();
            memory_svg_two_tiers(&tiers, (capacity, estimate.memory.tier2_capacity_bytes), &title)
        } else {
            memory_svg(&memory, capacity, &title)
        };
        pictures.push((path.clone(), svg));
    }
    Ok(EstimateOutput { json, refusal, pictures })
}

fn step_name(work: &LayerWork) -> String {
    let name = work.step.as_ref().map_or("", |s| s.schedule.as_str());
    match name {
        "one_f_one_b" => "1F1B",
        "interleaved_one_f_one_b" => "interleaved 1F1B",
        "gpipe" => "GPipe",
        "" => "no pipeline",
        other => other,
    }
    .to_string()
}

/// Each stage's slots: the input's schedule ops, or the strategy's
/// schedule when the step is unrolled.
fn stage_slots(work: &LayerWork, schedule: &Schedule) -> Result<(Vec<Vec<Slot>>, &'static str), String> {
    if work.schedules.is_empty() {
        return Ok(((0..schedule.stages).map(|s| schedule.slots(s)).collect(), "strategy"));
    }
    let slots = work
        .schedules
        .iter()
        .map(|(stage, triples)| {
            slots_from_triples(triples).map_err(|e| format!("blueprint-translate: error: schedule of stage {stage}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((slots, "schedule ops"))
}

/// `--estimate --calculon MODEL.json EXECUTION.json SYSTEM.json`:
/// Calculon's three files as they are. The execution becomes a spec (see
/// [`crate::analysis::workload::calculon`]), which is imported, distributed
/// and planned in process; the plan is estimated on the system with the
/// execution's network tiers, DP overlap and `training`, exactly as a plan
/// given on the command line would be.
///
/// # Errors
/// An unreadable or invalid file (named), an option the files already
/// state, and as [`estimate_module`].
pub fn estimate_calculon(args: &EstimateArgs) -> Result<EstimateOutput, String> {
    use crate::analysis::workload::{spec_from_calculon, CalculonError};
    let [model_path, execution_path, system_path] = args.calculon.as_ref().ok_or("blueprint-translate: --calculon needs three files")?;
    for (given, name) in [
        (args.system.is_some(), "--system"),
        (args.tp_net.is_some(), "--tp-net"),
        (args.pp_net.is_some(), "--pp-net"),
        (args.dp_net.is_some(), "--dp-net"),
        (args.dp_overlap, "--dp-overlap"),
        (args.forward_only, "--forward-only"),
        (args.offload.any(), "--*-offload"),
    ] {
        if given {
            return Err(format!(
                "blueprint-translate: {name} is stated by Calculon's files under --calculon (the system file, the execution's *_par_net, data_par_overlap, training and *_offload): drop it"
            ));
        }
    }
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).map_err(|e| format!("blueprint-translate: cannot read '{}': {e}", path.to_string_lossy()))
    };
    let (model, execution) = (read(model_path)?, read(execution_path)?);
    let model_name = model_path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let (spec, run) = spec_from_calculon(&model, model_name.as_deref(), &execution).map_err(|e| match e {
        CalculonError::Model(e) => format!("{}: error: {e}", model_path.to_string_lossy()),
        other => format!("{}: error: {other}", execution_path.to_string_lossy()),
    })?;
    let (binding, options) = (crate::analysis::estimate::calculon_binding(&run), EstimateOptions::of_calculon(&run));
    let args = EstimateArgs {
        system: Some(system_path.clone()),
        tp_net: Some(binding.tp),
        pp_net: Some(binding.pp),
        dp_net: Some(binding.dp),
        dp_overlap: options.data_par_overlap,
        forward_only: options.forward_only,
        offload: options.offload,
        calculon: None,
        ..args.clone()
    };
    let name = execution_path.to_string_lossy().into_owned();
    let context = crate::ir::context::create_context();
    let sink = crate::ir::diagnostics::DiagnosticSink::attach(&context);
    let render = |sink: &crate::ir::diagnostics::DiagnosticSink| sink.take().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    let location = melior::ir::Location::new(&context, &name, 1, 1);
    let mut module =
        crate::transforms::transformer::import::import_training(&context, &spec, location).map_err(|e| format!("{name}: error: {e}"))?;
    crate::tools::pipeline::run_pipeline(&context, &mut module, crate::tools::search::PLAN_PIPELINE)
        .map_err(|e| format!("{name}: error: {e}\n{}", render(&sink)))?;
    estimate_module(module.as_operation(), &name, &args)
}

/// The estimate of a served block's plan (`distribute-transformer-inference`,
/// `plan-transformer-inference`): the prefill and the decode step on the
/// system, and the fullest stage's memory (see
/// [`crate::analysis::estimate::serving`]). Training-step options are
/// errors; a plan that does not fit is refused unless
/// `--allow-over-capacity`.
fn served(op: melior::ir::OperationRef, name: &str, args: &EstimateArgs, spec: &InferenceSpec) -> Result<EstimateOutput, String> {
    use crate::analysis::estimate::serving::{estimate_served, ServedBlockMemory};
    let training_only = [
        (args.dp_net.is_some(), "--dp-net"),
        (args.dp_overlap, "--dp-overlap"),
        (args.forward_only, "--forward-only"),
        (args.offload.any(), "an offload option"),
        (args.format_calculon, "--format calculon"),
        (args.tp_overlap.is_some(), "--tp-overlap"),
        (args.timeline.is_some(), "--timeline"),
        (args.memory.is_some(), "--memory"),
        (args.trace.is_some(), "--trace"),
        (args.simulate.is_some(), "--simulate"),
    ];
    if let Some((_, option)) = training_only.iter().find(|(given, _)| *given) {
        return Err(format!(
            "blueprint-translate: {option} prices a training step; {name} is a served block's plan (prefill and decode), estimated with --system, --tp-net and --pp-net"
        ));
    }
    let system_path = args.system.as_deref().ok_or("blueprint-translate: --estimate needs --system S.json")?;
    let (system, shown) = read_system(system_path)?;
    let path: &str = &shown;
    let (tp_net, pp_net) = (tier_of(args.tp_net, "--tp-net", path)?, tier_of(args.pp_net, "--pp-net", path)?);
    let work = crate::dialect::summary::estimate_work(op, estimated_layer(op, name, "inference")?);
    let fact = |kind: &str| work.memory.get(kind).map_or(0, |m| m.bytes);
    let memory = ServedBlockMemory { weights: fact("weight"), activation_working: fact("activation_working"), kv_cache: fact("kv_cache") };
    let estimate =
        estimate_served(&estimate_tasks(&work), memory, spec, &system, tp_net, pp_net).map_err(|e| format!("{name}: error: {e}"))?;
    let report = serde_json::json!({
        "system": path,
        "networks": {"tp": tp_net, "pp": pp_net},
        "served": estimate,
    });
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    let m = &estimate.memory;
    let refusal = (!m.fits && !args.allow_over_capacity).then(|| {
        format!(
            "{name}: error: a processor of the fullest stage needs {} bytes ({} blocks' weights {} and KV cache {}, working activations {}), more than the system's first memory tier ({} bytes); --allow-over-capacity prints the estimate anyway",
            m.total, m.blocks_per_rank, m.weights, m.kv_cache, m.activation_working, m.capacity
        )
    });
    Ok(EstimateOutput { json, refusal, pictures: Vec::new() })
}
