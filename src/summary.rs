//! Work summaries of `dist` and `plan` programs: per-phase and per-engine
//! totals read from the tasks themselves, and the block facts under the
//! Calculon oracle's field names. The checks and `--export-work-summary`
//! use the same reading, so a layer's totals are computed one way only.

use std::collections::{BTreeMap, HashMap};

use melior::ir::{
    block::BlockLike,
    operation::{OperationLike, WalkOrder, WalkResult},
    OperationRef, RegionLike,
};
use serde::Serialize;
use thiserror::Error;

use crate::{
    ir::{collect_ops, dialect_of, enum_attr, int_attr, name_of, str_attr, string_list, symbol_attr, Attrs},
    ods::{self, OpKind},
    schedule::ProcessorMemory,
    workload::BlockFacts,
};

#[derive(Debug, Error)]
pub enum SummaryError {
    #[error("the module holds no 'plan', 'dist' or 'model' program to summarize")]
    Empty,
    #[error("{0}")]
    Binding(#[from] crate::transformer::binding::BindingError),
    #[error("the strategy binding does not derive: {0}")]
    Derivation(#[from] crate::workload::SpecError),
    #[error("the model's invocation '{0}' is attributable to no ModelIR op (expected an op with id '{1}')")]
    Unattributed(String, String),
}

/// What a task contributes to, beyond its phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskClass {
    Compute,
    /// Tensor-parallel collective (the block's own communication).
    TensorParallel,
    /// Transfer between pipeline stages.
    Pipeline,
    /// Data-parallel gradient communication.
    DataParallel,
}

/// Where a task sits in a whole-step program, which says how often it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// A task of its own: it runs once (a flat or unrolled program).
    Flat,
    /// In a chunk's block template: once per block of the chunk and per
    /// microbatch (per block for the once-per-step optimizer phase).
    Template { stage: u64, chunk: u64 },
    /// In a chunk's boundary: once per microbatch.
    Boundary { stage: u64, chunk: u64 },
}

/// One task as the summaries see it, from either layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskWork {
    pub id: String,
    pub phase: String,
    /// Engine class (`matrix`, `vector`) or communication kind.
    pub engine: String,
    pub class: TaskClass,
    /// The primitive of a compute task, when the layer states it.
    pub primitive: Option<String>,
    pub ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub message_bytes: u64,
    /// Ranks that split the task's work evenly (1 when unshared).
    pub shared_by: u64,
    /// A collective tiled with a linear: the linear's task id, the tiles
    /// and the schedule.
    pub tiling: Option<(String, u64, ods::TileOverlap)>,
    pub site: Site,
    /// How many times the task runs in the step (on each rank of its slice).
    pub runs: u64,
    /// Whether the task is part of the representative block (block 0,
    /// microbatch 0): the block facts are read from these.
    pub representative: bool,
}

/// Totals over a set of tasks, each counted as often as it runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub tasks: u64,
    pub ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub message_bytes: u64,
}

impl Totals {
    fn add(&mut self, task: &TaskWork) {
        let runs = task.runs;
        self.tasks = self.tasks.saturating_add(runs);
        self.ops = self.ops.saturating_add(task.ops.saturating_mul(runs));
        self.read_bytes = self.read_bytes.saturating_add(task.read_bytes.saturating_mul(runs));
        self.write_bytes = self.write_bytes.saturating_add(task.write_bytes.saturating_mul(runs));
        self.message_bytes = self.message_bytes.saturating_add(task.message_bytes.saturating_mul(runs));
    }

    /// (ops, read, write, message bytes).
    #[must_use]
    pub fn facts(&self) -> (u64, u64, u64, u64) {
        (self.ops, self.read_bytes, self.write_bytes, self.message_bytes)
    }
}

/// The pipeline of a whole step, as `dist.pipeline` / `plan.pipeline` state it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepShape {
    pub schedule: String,
    pub stages: u64,
    pub chunks: u64,
    pub microbatches: u64,
    pub blocks: u64,
}

/// The exported summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkSummary {
    /// `plan`, `dist` or `model`.
    pub layer: String,
    /// The whole step's pipeline, when the program is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<StepShape>,
    /// Per-phase totals over the step: every task as often as it runs, on
    /// one rank of its slice.
    pub phases: BTreeMap<String, Totals>,
    pub engines: BTreeMap<String, Totals>,
    /// Training block facts (Calculon's field names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<BlockFacts>,
    /// Memory per processor under Calculon's convention (stage 0, its
    /// in-flight factor), from the block facts and the bound strategy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_processor: Option<ProcessorMemory>,
    /// Memory of each stage's processors, from the program's stage facts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<ProcessorMemory>,
    /// Inference facts: the prefill under Calculon's names, matmul FLOPs
    /// per phase, KV-cache capacity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<InferenceSummary>,
}

/// The prefill forward under Calculon's inference field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PrefillFacts {
    pub block_fw_flops: u64,
    pub block_fw_mem_accessed: u64,
    pub baseblock_fw_tp_size: u64,
    pub block_weight_space: u64,
    pub block_act_working_space: u64,
}

/// Matmul FLOPs of a phase, split as GenZ splits them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MatmulFlops {
    pub per_gpu_layer_flops: u64,
    pub per_gpu_layer_flops_gemm: u64,
    pub per_gpu_layer_flops_attn_bmm: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InferenceSummary {
    pub prefill: PrefillFacts,
    /// Per phase; present where the layer names primitives (model, dist).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub matmul_flops: BTreeMap<String, MatmulFlops>,
    pub kv_cache_bytes: u64,
}

/// Memory of one kind: the total bytes, held evenly by `shared_by` ranks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryFact {
    pub bytes: u64,
    pub shared_by: u64,
}

impl MemoryFact {
    /// One rank's bytes.
    #[must_use]
    pub fn per_rank(self) -> f64 {
        crate::workload::share(self.bytes, self.shared_by)
    }
}

/// Memory facts by kind (`weight`, `optimizer_state`, ...).
pub type MemoryFacts = BTreeMap<String, MemoryFact>;

/// The tasks and memory facts of one layer of `module`.
pub struct LayerWork {
    pub tasks: Vec<TaskWork>,
    /// Memory of one block (or of the whole program when it names no block).
    pub memory: MemoryFacts,
    /// Memory of each pipeline stage's processors.
    pub stage_memory: BTreeMap<u64, MemoryFacts>,
    pub step: Option<StepShape>,
    /// Each stage's slot triples from its `dist.schedule` / `plan.schedule`
    /// (none once the step is unrolled).
    pub schedules: BTreeMap<u64, Vec<i64>>,
}

fn count(op: OperationRef, name: &str) -> u64 {
    crate::ir::u64_attr(op, name).unwrap_or(0)
}

fn class_of(attrs: &Attrs, kind: &str) -> TaskClass {
    if kind == "point_to_point" {
        return TaskClass::Pipeline;
    }
    let axes = attrs.get("mesh_axes").and_then(string_list).or_else(|| attrs.str("along").map(|a| vec![a.to_string()]));
    match axes.as_deref() {
        Some([axis]) if axis == "dp" => TaskClass::DataParallel,
        Some([axis]) if axis == "pp" => TaskClass::Pipeline,
        _ => TaskClass::TensorParallel,
    }
}

/// The chunk op directly holding `op`, and whether in its template region.
fn enclosing_chunk<'c, 'a>(op: OperationRef<'c, 'a>) -> Option<(OperationRef<'c, 'a>, bool)> {
    let parent = op.parent_operation()?;
    if !matches!(OpKind::of(parent), Some(OpKind::DistChunk | OpKind::PlanChunk)) {
        return None;
    }
    let region = op.block()?.parent_region()?;
    let template = parent.region(0).ok().is_some_and(|r| r.to_raw().ptr == region.to_raw().ptr);
    Some((parent, template))
}

/// What the summary reads of a chunk, once per chunk.
#[derive(Clone, Copy)]
struct ChunkFacts {
    stage: u64,
    chunk: u64,
    microbatches: u64,
    blocks: u64,
}

/// Where `op` sits and how often it runs in a step of `microbatches`.
fn site_and_runs(
    op: OperationRef,
    attrs: &Attrs,
    phase: &str,
    microbatches: &HashMap<String, u64>,
    chunks: &mut crate::ir::PtrMap<ChunkFacts>,
) -> (Site, u64, bool) {
    match enclosing_chunk(op) {
        Some((chunk, template)) => {
            let facts = *chunks.entry(chunk.to_raw().ptr as usize).or_insert_with(|| ChunkFacts {
                stage: count(chunk, "stage"),
                chunk: count(chunk, "chunk"),
                microbatches: symbol_attr(chunk, "pipeline").and_then(|p| microbatches.get(p)).copied().unwrap_or(1),
                blocks: count(chunk, "blocks"),
            });
            let (stage, index, m) = (facts.stage, facts.chunk, facts.microbatches);
            if template {
                let blocks = facts.blocks;
                let runs = if phase == "optimizer" { blocks } else { blocks.saturating_mul(m) };
                (Site::Template { stage, chunk: index }, runs, stage == 0 && index == 0)
            } else {
                (Site::Boundary { stage, chunk: index }, m, false)
            }
        }
        None => {
            // An instance of an unrolled step is representative when it is
            // of block 0 and microbatch 0 (or of no microbatch).
            let first = |name: &str| attrs.int(name).is_none_or(|v| v == 0);
            (Site::Flat, 1, first("block") && first("microbatch"))
        }
    }
}

/// Reads the tasks of the `dialect` layer (`dist` or `plan`) of `module`.
#[must_use]
pub fn layer_work(module: OperationRef, dialect: &str) -> LayerWork {
    layer_work_of(collect_ops(module), dialect)
}

/// What the estimate reads of the `dialect` layer: like [`layer_work`], but
/// of the structured step's chunks only the representative one (stage 0,
/// chunk 0) contributes its template; every chunk's boundary transfers,
/// the memory and schedule facts are read. Totals over the step are not
/// meaningful on the result; the block facts and stages are the same.
#[must_use]
pub fn estimate_work(module: OperationRef, dialect: &str) -> LayerWork {
    let mut raw = Vec::new();
    module.walk(WalkOrder::PreOrder, |op| {
        raw.push(op.to_raw());
        let kind = OpKind::of(op);
        if matches!(kind, Some(OpKind::DistChunk | OpKind::PlanChunk)) && (count(op, "stage"), count(op, "chunk")) != (0, 0) {
            // The transfers of this chunk, not its template.
            for inner in crate::ir::region_ops(op, 1) {
                raw.extend(collect_ops(inner).into_iter().map(|o| o.to_raw()));
            }
            return WalkResult::Skip;
        }
        WalkResult::Advance
    });
    // SAFETY: every op is alive inside `module` for its lifetime.
    let ops = raw.into_iter().map(|r| unsafe { OperationRef::from_raw(r) }).collect();
    layer_work_of(ops, dialect)
}

fn layer_work_of<'c, 'a>(ops: Vec<OperationRef<'c, 'a>>, dialect: &str) -> LayerWork {
    let mut microbatches = HashMap::new();
    let mut step = None;
    for op in &ops {
        if matches!(OpKind::of(*op), Some(k @ (OpKind::DistPipeline | OpKind::PlanPipeline)) if k.dialect() == dialect) {
            let m = count(*op, "microbatches");
            microbatches.insert(str_attr(*op, "sym_name").unwrap_or_default().to_string(), m);
            step = Some(StepShape {
                schedule: enum_attr::<ods::PipelineSchedule>(*op, "schedule").map_or("", ods::PipelineSchedule::name).to_string(),
                stages: count(*op, "stages"),
                chunks: count(*op, "chunks"),
                microbatches: m,
                blocks: count(*op, "blocks"),
            });
        }
    }
    let mut tasks = Vec::new();
    let mut memory = MemoryFacts::new();
    let mut stage_memory: BTreeMap<u64, MemoryFacts> = BTreeMap::new();
    let mut schedules = BTreeMap::new();
    let mut chunks = crate::ir::PtrMap::default();
    for op in ops {
        let Some(kind) = OpKind::of(op) else { continue };
        if kind.dialect() != dialect {
            continue;
        }
        // One pass over the op's attributes; the facts below read from it.
        let attrs = Attrs::of(op);
        let id = attrs.str("id").unwrap_or_default().to_string();
        let phase = attrs.enumerated::<ods::Phase>("phase").map_or("", ods::Phase::name).to_string();
        let mut task = |engine: &str, class: TaskClass| {
            let (site, runs, representative) = site_and_runs(op, &attrs, &phase, &microbatches, &mut chunks);
            TaskWork {
                id: id.clone(),
                phase: phase.clone(),
                engine: engine.to_string(),
                class,
                primitive: attrs.enumerated::<ods::Primitive>("primitive").map(|p| p.name().to_string()),
                ops: attrs.count("ops"),
                read_bytes: attrs.count("read_bytes"),
                write_bytes: attrs.count("write_bytes"),
                message_bytes: attrs.count("message_bytes"),
                shared_by: attrs.count("shared_by").max(1),
                tiling: attrs.str("tiled_with").map(|with| {
                    (
                        with.to_string(),
                        attrs.count("tiles"),
                        attrs.enumerated::<ods::TileOverlap>("overlap").unwrap_or(ods::TileOverlap::Ring),
                    )
                }),
                site,
                runs,
                representative,
            }
        };
        match kind {
            OpKind::DistSchedule | OpKind::PlanSchedule => {
                schedules.insert(count(op, "stage"), crate::ir::i64_array_attr(op, "slots").unwrap_or_default());
            }
            OpKind::DistCompute => {
                tasks.push(task(attrs.enumerated::<ods::Engine>("engine").map_or("", ods::Engine::name), TaskClass::Compute))
            }
            k if k.is_communication() => {
                let capability = crate::transformer::plan::communication_capability(k).name();
                tasks.push(task(capability, class_of(&attrs, capability)));
            }
            OpKind::PlanComputeTask => {
                tasks.push(task(
                    attrs.enumerated::<ods::ComputeCapability>("capability").map_or("", ods::ComputeCapability::name),
                    TaskClass::Compute,
                ));
            }
            OpKind::PlanCollectiveTask => {
                let capability =
                    attrs.enumerated::<ods::CommunicationCapability>("capability").map_or("", ods::CommunicationCapability::name);
                tasks.push(task(capability, class_of(&attrs, capability)));
            }
            OpKind::DistMemory | OpKind::PlanBuffer => {
                let (kind_attr, size) = if kind == OpKind::DistMemory { ("kind", "bytes") } else { ("contents", "size") };
                let memory_kind = enum_attr::<ods::MemoryKind>(op, kind_attr).map_or("", ods::MemoryKind::name).to_string();
                let facts = match (int_attr(op, "stage").and_then(|s| u64::try_from(s).ok()), int_attr(op, "block")) {
                    (_, Some(0)) => &mut memory,
                    (_, Some(_)) => continue,
                    (Some(stage), None) => stage_memory.entry(stage).or_default(),
                    (None, None) => &mut memory,
                };
                let entry = facts.entry(memory_kind).or_insert(MemoryFact { bytes: 0, shared_by: 1 });
                entry.bytes = entry.bytes.saturating_add(count(op, size));
                entry.shared_by = count(op, "shared_by").max(1);
            }
            _ => {}
        }
    }
    LayerWork { tasks, memory, stage_memory, step, schedules }
}

impl LayerWork {
    /// Totals of the tasks of one phase over the step.
    #[must_use]
    pub fn phase(&self, phase: &str) -> Totals {
        let mut totals = Totals::default();
        for task in self.tasks.iter().filter(|t| t.phase == phase) {
            totals.add(task);
        }
        totals
    }

    /// The tasks of the representative block, each once.
    fn representative(&self) -> impl Iterator<Item = &TaskWork> {
        self.tasks.iter().filter(|t| t.representative)
    }

    /// Totals of one phase of the representative block.
    fn block_phase(&self, phase: &str) -> Totals {
        let mut totals = Totals::default();
        for task in self.representative().filter(|t| t.phase == phase) {
            totals.add(&TaskWork { runs: 1, ..task.clone() });
        }
        totals
    }

    /// The block's message bytes of one class (and phase): summed over the
    /// representative block's TP collectives; for a transfer between
    /// stages or a data-parallel reduction, the largest single message.
    fn message(&self, phase: Option<&str>, class: TaskClass) -> u64 {
        let matching = |t: &&TaskWork| t.class == class && phase.is_none_or(|p| t.phase == p);
        match class {
            TaskClass::Pipeline | TaskClass::DataParallel => self.tasks.iter().filter(matching).map(|t| t.message_bytes).max().unwrap_or(0),
            _ => self.representative().filter(matching).map(|t| t.message_bytes).sum(),
        }
    }

    /// Whether these are the tasks of a served (inference) block.
    #[must_use]
    pub fn is_inference(&self) -> bool {
        self.tasks.iter().any(|t| t.phase == "prefill" || t.phase == "decode")
    }

    /// Inference facts of these tasks and memory facts.
    #[must_use]
    pub fn inference_summary(&self) -> InferenceSummary {
        let prefill = self.block_phase("prefill");
        let memory = |k: &str| self.memory.get(k).map_or(0, |m| m.bytes);
        let mut matmul_flops: BTreeMap<String, MatmulFlops> = BTreeMap::new();
        for task in self.representative() {
            let Some(primitive) = task.primitive.as_deref() else { continue };
            let entry = matmul_flops.entry(task.phase.clone()).or_default();
            match primitive {
                "matmul" => entry.per_gpu_layer_flops_gemm += task.ops,
                "batch_matmul" => entry.per_gpu_layer_flops_attn_bmm += task.ops,
                _ => continue,
            }
            entry.per_gpu_layer_flops = entry.per_gpu_layer_flops_gemm + entry.per_gpu_layer_flops_attn_bmm;
        }
        InferenceSummary {
            prefill: PrefillFacts {
                block_fw_flops: prefill.ops,
                block_fw_mem_accessed: prefill.read_bytes + prefill.write_bytes,
                baseblock_fw_tp_size: self.message(Some("prefill"), TaskClass::TensorParallel),
                block_weight_space: memory("weight"),
                block_act_working_space: memory("activation_working"),
            },
            matmul_flops,
            kv_cache_bytes: memory("kv_cache"),
        }
    }

    /// The block facts these tasks and memory facts state.
    #[must_use]
    pub fn block_facts(&self) -> BlockFacts {
        // Calculon's flops of a tiled linear leave its collective's reduction out.
        let flops = |p: &str| {
            let tiled: u64 = self.representative().filter(|t| t.phase == p && t.tiling.is_some()).map(|t| t.ops).sum();
            self.block_phase(p).ops.saturating_sub(tiled)
        };
        let bytes = |p: &str| {
            let t = self.block_phase(p);
            t.read_bytes + t.write_bytes
        };
        // One rank's share of work a group splits (the sharded optimizer).
        let per_rank = |p: &str, value: fn(&TaskWork) -> u64| -> f64 {
            self.representative().filter(|t| t.phase == p).map(|t| crate::workload::share(value(t), t.shared_by)).sum()
        };
        let memory = |k: &str| self.memory.get(k).map_or(0, |m| m.bytes);
        let memory_per_rank = |k: &str| self.memory.get(k).map_or(0.0, |m| m.per_rank());
        BlockFacts {
            block_fw_flops: flops("forward"),
            block_agrad_flops: flops("activation_gradient"),
            block_wgrad_flops: flops("weight_gradient"),
            block_optim_flops: per_rank("optimizer", |t| t.ops),
            block_fw_mem_accessed: bytes("forward"),
            block_agrad_mem_accessed: bytes("activation_gradient"),
            block_wgrad_mem_accessed: bytes("weight_gradient"),
            block_optim_mem_accessed: per_rank("optimizer", |t| t.read_bytes + t.write_bytes),
            baseblock_fw_tp_size: self.message(Some("forward"), TaskClass::TensorParallel),
            baseblock_bw_tp_size: self.message(Some("activation_gradient"), TaskClass::TensorParallel),
            baseblock_recomm_size: self.message(Some("recommunication"), TaskClass::TensorParallel),
            block_fw_pp_size: self.message(Some("forward"), TaskClass::Pipeline),
            block_bw_pp_size: self.message(Some("activation_gradient"), TaskClass::Pipeline),
            block_dp_size: self.message(None, TaskClass::DataParallel),
            block_weight_space: memory("weight"),
            block_act_working_space: memory("activation_working"),
            block_act_storage_space: memory("activation_storage"),
            block_act_checkpoint_size: memory("activation_checkpoint"),
            block_weight_grad_space: memory_per_rank("weight_gradient"),
            block_weight_grad_space_no_sharding: memory("weight_gradient_unsharded"),
            block_act_grad_space: memory("activation_gradient"),
            block_optimizer_space: memory_per_rank("optimizer_state"),
        }
    }

    /// The memory of each stage's processors, composed from its facts the
    /// way Calculon composes a processor's memory.
    #[must_use]
    pub fn stages(&self) -> Vec<ProcessorMemory> {
        self.stage_memory.values().map(stage_processor_memory).collect()
    }
}

/// One processor's memory from a stage's facts.
#[must_use]
pub fn stage_processor_memory(facts: &MemoryFacts) -> ProcessorMemory {
    let bytes = |k: &str| facts.get(k).map_or(0.0, |m| m.bytes as f64);
    let per_rank = |k: &str| facts.get(k).map_or(0.0, |m| m.per_rank());
    let weight_space = bytes("weight");
    let act_space = bytes("activation_working") + bytes("activation_storage");
    let act_checkpoint_size = bytes("activation_checkpoint");
    let act_grad_space = bytes("activation_gradient");
    let weight_grad_space = bytes("weight_gradient_unsharded") + per_rank("weight_gradient");
    let optimizer_space = per_rank("optimizer_state");
    ProcessorMemory {
        weight_space,
        act_space,
        act_checkpoint_size,
        act_grad_space,
        weight_grad_space,
        optimizer_space,
        proc_mem_tier1_cap_req: weight_space + act_space + act_checkpoint_size + (weight_grad_space + optimizer_space) + act_grad_space,
    }
}

/// The model's work: the derivation of the bound strategy, each invocation
/// attributed to the ModelIR op it comes from (the coarse op, or the
/// decomposed op `model_op_id` names), running once per block and
/// microbatch of the step (once per block in the optimizer phase), plus the
/// transfers the strategy implies: each microbatch's activation and
/// gradient across every chunk boundary, and each block's data-parallel
/// gradient reduction (and parameter gather under optimizer sharding).
/// Block facts come from the algebra.
pub fn model_work(module: OperationRef) -> Result<(LayerWork, Option<BlockFacts>), SummaryError> {
    use crate::{
        lineage::{model_op_id, phase_name, primitive_name},
        transformer::binding::{read_spec, TRAINING_SPEC},
        workload::{derive_training_block, pipeline_message_bytes, Engine, TrainingSpec},
    };
    let ops = collect_ops(module);
    let served = module.attribute(crate::transformer::binding::INFERENCE_SPEC).is_ok();
    let (invocations, memory, facts, coarse, spec) = if !served {
        let spec: TrainingSpec = read_spec(module, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string()))?;
        let derivation = derive_training_block(&spec)?;
        let facts = BlockFacts::from_derivation(&derivation, &spec);
        let coarse = ops.iter().any(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderTraining));
        (derivation.invocations, BTreeMap::new(), Some(facts), coarse, Some(spec))
    } else {
        let (invocations, memory) = crate::transformer::distribute_inference::model_invocations(module)?;
        let coarse = ops.iter().any(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderInference));
        (invocations, memory, None, coarse, None)
    };
    let ids: std::collections::HashSet<&str> =
        ops.iter().filter(|op| dialect_of(&name_of(**op)) == "model").filter_map(|op| str_attr(*op, "id")).collect();
    let (blocks, microbatches) = spec.as_ref().map_or((1, 1), |s| (s.model.blocks, s.microbatch_count()));
    let mut tasks = Vec::new();
    for inv in &invocations {
        let owner = model_op_id(inv);
        if !coarse && !ids.contains(owner.as_str()) {
            return Err(SummaryError::Unattributed(inv.name.clone(), owner));
        }
        let engine = match (inv.collective, inv.engine) {
            (Some(c), _) => format!("{:?}", c.kind).to_lowercase(),
            (None, Engine::Matrix) => "matrix".into(),
            (None, _) => "vector".into(),
        };
        let phase = phase_name(inv.phase);
        tasks.push(TaskWork {
            id: inv.name.clone(),
            phase: phase.to_string(),
            engine,
            class: if inv.collective.is_some() { TaskClass::TensorParallel } else { TaskClass::Compute },
            primitive: Some(primitive_name(inv.primitive).to_string()),
            ops: inv.ops,
            read_bytes: inv.read_bytes,
            write_bytes: inv.write_bytes,
            message_bytes: inv.message_bytes(),
            shared_by: inv.shared_by,
            tiling: inv.tiling.as_ref().map(|t| (t.linear_task(inv.phase), t.tiles, crate::transformer::emit::tile_overlap(t.overlap))),
            site: Site::Flat,
            runs: if phase == "optimizer" { blocks } else { blocks.saturating_mul(microbatches) },
            representative: true,
        });
    }
    if let (Some(facts), Some(spec)) = (&facts, &spec) {
        let transfer = |id: &str, phase: &str, engine: &str, class: TaskClass, bytes: u64, runs: u64| TaskWork {
            id: id.to_string(),
            phase: phase.to_string(),
            engine: engine.to_string(),
            class,
            primitive: None,
            ops: 0,
            read_bytes: 0,
            write_bytes: 0,
            message_bytes: bytes,
            shared_by: 1,
            tiling: None,
            site: Site::Flat,
            runs,
            representative: false,
        };
        let map = &spec.mapping;
        let boundaries = (map.pp * map.pipeline_interleaving).saturating_sub(1).saturating_mul(microbatches);
        let bytes = pipeline_message_bytes(spec);
        if map.pp > 1 {
            tasks.push(transfer("send_activation", "forward", "point_to_point", TaskClass::Pipeline, bytes, boundaries));
            tasks.push(transfer("send_gradient", "activation_gradient", "point_to_point", TaskClass::Pipeline, bytes, boundaries));
        }
        if map.dp > 1 {
            let reduce = if map.optimizer_sharding { "reduce_scatter" } else { "all_reduce" };
            tasks.push(transfer("dp.grad_reduce", "optimizer", reduce, TaskClass::DataParallel, facts.block_dp_size, blocks));
            if map.optimizer_sharding {
                tasks.push(transfer("dp.param_gather", "optimizer", "all_gather", TaskClass::DataParallel, facts.block_dp_size, blocks));
            }
        }
    }
    Ok((LayerWork { tasks, memory, stage_memory: BTreeMap::new(), step: None, schedules: BTreeMap::new() }, facts))
}

/// Summarizes the plan of `module`, or else its dist program, or else its
/// ModelIR under the bound strategy.
pub fn summarize(module: OperationRef) -> Result<WorkSummary, SummaryError> {
    let ops = collect_ops(module);
    let has = |d: &str| ops.iter().any(|op| dialect_of(&name_of(*op)) == d && name_of(*op) != format!("{d}.header"));
    let (layer, work, block) = if has("plan") {
        let work = layer_work(module, "plan");
        let block = (!work.is_inference()).then(|| work.block_facts());
        ("plan", work, block)
    } else if has("dist") {
        let work = layer_work(module, "dist");
        let block = (!work.is_inference()).then(|| work.block_facts());
        ("dist", work, block)
    } else if has("model") {
        let (work, block) = model_work(module)?;
        ("model", work, block)
    } else {
        return Err(SummaryError::Empty);
    };
    let inference = work.is_inference().then(|| work.inference_summary());
    let mut phases: BTreeMap<String, Totals> = BTreeMap::new();
    let mut engines: BTreeMap<String, Totals> = BTreeMap::new();
    for task in &work.tasks {
        phases.entry(task.phase.clone()).or_default().add(task);
        engines.entry(task.engine.clone()).or_default().add(task);
    }
    // Calculon's per-processor convention needs the strategy (its schedule
    // and recompute policy); a module without a binding has none.
    let spec = module.attribute(crate::transformer::binding::TRAINING_SPEC).ok().and_then(|_| {
        crate::transformer::binding::read_spec(module, crate::transformer::binding::TRAINING_SPEC, |s: &crate::workload::TrainingSpec| {
            s.validate().map_err(|e| e.to_string())
        })
        .ok()
    });
    let per_processor = match (&block, &spec) {
        (Some(block), Some(spec)) => Some(ProcessorMemory::calculon(block, spec)),
        _ => None,
    };
    let stages = work.stages();
    Ok(WorkSummary { layer: layer.to_string(), step: work.step.clone(), phases, engines, block, per_processor, stages, inference })
}
