//! Work summaries of `dist` and `plan` programs: per-phase and per-engine
//! totals read from the tasks themselves, and the block facts under the
//! Calculon oracle's field names. The checks and `--export-work-summary`
//! use the same reading, so a layer's totals are computed one way only.

use std::{
    borrow::Cow,
    collections::{BTreeMap, HashMap},
};

use melior::ir::{
    block::BlockLike,
    operation::{OperationLike, WalkOrder, WalkResult},
    Attribute, OperationRef, RegionLike,
};
use serde::Serialize;
use thiserror::Error;

use crate::{
    analysis::{
        schedule::ProcessorMemory,
        workload::{derive_decode_block, derive_prefill_block, kv_cache_bytes, BlockFacts, InferenceSpec, PrimitiveInvocation},
    },
    dialect::model::binding::{read_spec, INFERENCE_SPEC},
    ir::{
        ods::{self, InferencePhase, OpKind},
        read::{
            collect_ops, dialect_of, enum_attr, int_attr, int_value, kinds_in, kinds_of, sole_string, str_attr, string_value, symbol_attr,
            AttrName,
        },
    },
};

#[derive(Debug, Error)]
pub enum SummaryError {
    #[error("the module holds no 'plan', 'dist' or 'model' program to summarize")]
    Empty,
    #[error("{0}")]
    Binding(#[from] crate::dialect::model::binding::BindingError),
    #[error("the strategy binding does not derive: {0}")]
    Derivation(#[from] crate::analysis::workload::SpecError),
    #[error("the model's invocation '{0}' is attributable to no ModelIR op (expected an op with id '{1}')")]
    Unattributed(String, String),
    #[error("the ModelIR block does not derive: {0}")]
    Block(String),
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

/// One task as the summaries see it, from either layer. Read from IR, its
/// strings borrow the module's attributes (they live as long as the
/// context); the model's work owns its ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskWork<'c> {
    pub id: Cow<'c, str>,
    pub phase: &'static str,
    /// Engine class (`matrix`, `vector`) or communication kind.
    pub engine: Cow<'static, str>,
    pub class: TaskClass,
    /// The primitive of a compute task, when the layer states it.
    pub primitive: Option<&'static str>,
    pub ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub message_bytes: u64,
    /// Ranks that split the task's work evenly (1 when unshared).
    pub shared_by: u64,
    /// A collective tiled with a linear: the linear's task id, the tiles
    /// and the schedule.
    pub tiling: Option<(Cow<'c, str>, u64, ods::TileOverlap)>,
    pub site: Site,
    /// How many times the task runs in the step (on each rank of its slice).
    pub runs: u64,
    /// Whether the task is part of the representative block (block 0,
    /// microbatch 0): the block facts are read from these.
    pub representative: bool,
    /// The dist task a plan task derives from, when stated (none for the
    /// other layers).
    pub lineage: Option<&'c str>,
}

impl TaskWork<'_> {
    /// Whether [`LayerWork::block_facts`] reads this task: the
    /// representative block's tasks, and every pipeline and data-parallel
    /// transfer (the facts take their largest message). A reader that
    /// keeps only these tasks gets the same block facts.
    #[must_use]
    pub fn feeds_block_facts(&self) -> bool {
        self.representative || matches!(self.class, TaskClass::Pipeline | TaskClass::DataParallel)
    }
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
        self.add_runs(task, task.runs);
    }

    fn add_runs(&mut self, task: &TaskWork, runs: u64) {
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

/// Totals of every phase, accumulated task by task (for callers that read
/// a layer's tasks without keeping them).
#[derive(Debug, Default)]
pub struct PhaseTotals {
    // Few phases, named by static strings: a scan that compares addresses
    // first beats a map per task.
    totals: Vec<(&'static str, Totals)>,
}

impl PhaseTotals {
    pub fn add(&mut self, task: &TaskWork) {
        let same = |p: &&'static str| std::ptr::eq(p.as_ptr(), task.phase.as_ptr()) && p.len() == task.phase.len();
        let totals = &mut self.totals;
        let slot = match totals.iter().position(|(p, _)| same(p)).or_else(|| totals.iter().position(|(p, _)| *p == task.phase)) {
            Some(slot) => slot,
            None => {
                totals.push((task.phase, Totals::default()));
                totals.len() - 1
            }
        };
        totals[slot].1.add(task);
    }

    /// By phase name (one slot per distinct name: the compare by text saw to that).
    #[must_use]
    pub fn into_map(self) -> BTreeMap<&'static str, Totals> {
        self.totals.into_iter().collect()
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
        crate::analysis::workload::share(self.bytes, self.shared_by)
    }
}

/// Memory facts by kind (`weight`, `optimizer_state`, ...).
pub type MemoryFacts = BTreeMap<String, MemoryFact>;

/// The tasks and memory facts of one layer of `module`.
pub struct LayerWork<'c, 'a> {
    pub tasks: Vec<TaskWork<'c>>,
    /// The op of each task, index-aligned with `tasks` when read from IR
    /// (empty for the model's work, which has no ops).
    pub task_ops: Vec<OperationRef<'c, 'a>>,
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
    crate::ir::read::u64_attr(op, name).unwrap_or(0)
}

fn class_of(mesh_axes: Option<Attribute>, along: Option<&str>, kind: &str) -> TaskClass {
    if kind == "point_to_point" {
        return TaskClass::Pipeline;
    }
    // The mesh axes when they are a string list, else the axis it is along.
    let axis = match mesh_axes.and_then(sole_string) {
        Some(sole) => sole,
        None => along,
    };
    match axis {
        Some("dp") => TaskClass::DataParallel,
        Some("pp") => TaskClass::Pipeline,
        _ => TaskClass::TensorParallel,
    }
}

/// The attributes the summary reads of a task, found in one pass over the
/// op's attributes (each by-name lookup would scan them again).
/// (Raw handles, null when absent: an array of options of pointers would
/// be twice the size to clear for every task.)
struct TaskAttrs<'c>([mlir_sys::MlirAttribute; TaskAttrs::SLOTS], std::marker::PhantomData<Attribute<'c>>);

/// The slot of each attribute name seen (`TaskAttrs::NONE` for a name
/// the summary does not read), by the name's uniqued address and its
/// position in ops of one kind.
type NameSlots = crate::ir::read::NameFacts<u8>;

impl<'c> TaskAttrs<'c> {
    const ID: usize = 0;
    const PHASE: usize = 1;
    const PRIMITIVE: usize = 2;
    const OPS: usize = 3;
    const READ_BYTES: usize = 4;
    const WRITE_BYTES: usize = 5;
    const MESSAGE_BYTES: usize = 6;
    const SHARED_BY: usize = 7;
    const TILED_WITH: usize = 8;
    const TILES: usize = 9;
    const OVERLAP: usize = 10;
    const ENGINE: usize = 11;
    const CAPABILITY: usize = 12;
    const BLOCK: usize = 13;
    const MICROBATCH: usize = 14;
    const MESH_AXES: usize = 15;
    const ALONG: usize = 16;
    const LINEAGE: usize = 17;
    const SLOTS: usize = 18;
    const NONE: u8 = u8::MAX;

    fn slot_of(name: &[u8]) -> usize {
        match name {
            b"id" => Self::ID,
            b"phase" => Self::PHASE,
            b"primitive" => Self::PRIMITIVE,
            b"ops" => Self::OPS,
            b"read_bytes" => Self::READ_BYTES,
            b"write_bytes" => Self::WRITE_BYTES,
            b"message_bytes" => Self::MESSAGE_BYTES,
            b"shared_by" => Self::SHARED_BY,
            b"tiled_with" => Self::TILED_WITH,
            b"tiles" => Self::TILES,
            b"overlap" => Self::OVERLAP,
            b"engine" => Self::ENGINE,
            b"capability" => Self::CAPABILITY,
            b"block" => Self::BLOCK,
            b"microbatch" => Self::MICROBATCH,
            b"mesh_axes" => Self::MESH_AXES,
            b"along" => Self::ALONG,
            b"lineage" => Self::LINEAGE,
            _ => Self::NONE as usize,
        }
    }

    fn of(op: OperationRef<'c, '_>, kind: OpKind, names: &mut NameSlots) -> Self {
        let mut attrs = Self([mlir_sys::MlirAttribute { ptr: std::ptr::null() }; Self::SLOTS], std::marker::PhantomData);
        let raw = op.to_raw();
        let mut names = names.group(kind as usize);
        // SAFETY: a live op; names and attributes live as long as its context.
        for (position, &named) in unsafe { crate::ir::read::named_attributes(raw) }.iter().enumerate() {
            let slot = names.get(position, named.name, |name| Self::slot_of(name.as_bytes()) as u8);
            if slot != Self::NONE {
                // The first of a name, as a by-name lookup finds it.
                let entry = &mut attrs.0[usize::from(slot)];
                if entry.ptr.is_null() {
                    *entry = named.attribute;
                }
            }
        }
        attrs
    }

    fn get(&self, slot: usize) -> Option<Attribute<'c>> {
        let raw = self.0[slot];
        // SAFETY: an attribute of the op read, alive as long as its context.
        (!raw.ptr.is_null()).then(|| unsafe { Attribute::from_raw(raw) })
    }
}

fn int_of(attribute: Option<Attribute>) -> Option<i64> {
    attribute.and_then(int_value)
}

fn count_of(attribute: Option<Attribute>) -> u64 {
    int_of(attribute).and_then(|v| u64::try_from(v).ok()).unwrap_or(0)
}

fn enum_of<E: ods::OdsEnum>(attribute: Option<Attribute>) -> Option<E> {
    E::from_value(int_of(attribute)?)
}

fn str_of<'c>(attribute: Option<Attribute<'c>>) -> Option<&'c str> {
    attribute.and_then(string_value)
}

/// The chunk op directly holding `op`, and whether in its template region.
fn enclosing_chunk<'c, 'a>(op: OperationRef<'c, 'a>, parent: OperationRef<'c, 'a>) -> Option<(OperationRef<'c, 'a>, bool)> {
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

/// Where tasks sit: the chunk facts of each parent op (none for a parent
/// that is no chunk), read once per parent.
#[derive(Default)]
struct Sites {
    parents: crate::ir::raw::PtrMap<Option<ChunkFacts>>,
    /// The last parent asked about: runs of tasks share one.
    last: Option<(usize, Option<ChunkFacts>)>,
}

impl Sites {
    /// Where `op` sits and how often it runs in a step of `microbatches`.
    fn site_and_runs(
        &mut self,
        op: OperationRef,
        block: Option<Attribute>,
        microbatch: Option<Attribute>,
        phase: &str,
        microbatches: &HashMap<&str, u64>,
    ) -> (Site, u64, bool) {
        let parent = op.parent_operation();
        let key = parent.map_or(0, |p| p.to_raw().ptr as usize);
        let facts = match self.last {
            Some((last, facts)) if last == key => facts,
            _ => {
                let facts = *self.parents.entry(key).or_insert_with(|| {
                    let chunk = parent.filter(|p| matches!(OpKind::of(*p), Some(OpKind::DistChunk | OpKind::PlanChunk)))?;
                    Some(ChunkFacts {
                        stage: count(chunk, "stage"),
                        chunk: count(chunk, "chunk"),
                        microbatches: symbol_attr(chunk, "pipeline").and_then(|p| microbatches.get(p)).copied().unwrap_or(1),
                        blocks: count(chunk, "blocks"),
                    })
                });
                self.last = Some((key, facts));
                facts
            }
        };
        match facts.zip(parent).and_then(|(facts, parent)| Some((facts, enclosing_chunk(op, parent)?.1))) {
            Some((facts, template)) => {
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
                let first = |attribute: Option<Attribute>| int_of(attribute).is_none_or(|v| v == 0);
                (Site::Flat, 1, first(block) && first(microbatch))
            }
        }
    }
}

/// Reads the tasks of the `dialect` layer (`dist` or `plan`) of `module`.
#[must_use]
pub fn layer_work<'c, 'a>(module: OperationRef<'c, 'a>, dialect: &str) -> LayerWork<'c, 'a> {
    let ops = collect_ops(module);
    let kinds = kinds_of(&ops);
    layer_work_of(&ops, &kinds, dialect)
}

/// Every op of `module` in pre-order with its kind, for readers of
/// several layers ([`layer_work_in`]) from one walk.
#[must_use]
pub fn ops_and_kinds<'c, 'a>(module: OperationRef<'c, 'a>) -> (Vec<OperationRef<'c, 'a>>, Vec<Option<OpKind>>) {
    let ops = collect_ops(module);
    let kinds = kinds_of(&ops);
    (ops, kinds)
}

/// A task's id and phase, read without its other facts, and its op.
pub struct TaskHead<'c, 'a> {
    pub id: &'c str,
    pub phase: &'static str,
    pub op: OperationRef<'c, 'a>,
}

/// The id and phase of each task [`layer_work`] reads of the `dialect`
/// layer, in the same order: for a reader of a few tasks' facts
/// ([`task_facts`]), two attributes of each task instead of all.
#[must_use]
pub fn task_heads<'c, 'a>(ops: &[OperationRef<'c, 'a>], kinds: &[Option<OpKind>], dialect: &str) -> Vec<TaskHead<'c, 'a>> {
    // Two names of many: compared by handle.
    let mut names: Option<(AttrName, AttrName)> = None;
    let in_dialect = kinds_in(dialect);
    ops.iter()
        .zip(kinds)
        .filter(|(_, kind)| is_layer_task(&in_dialect, **kind))
        .map(|(&op, _)| {
            let (id, phase) = *names.get_or_insert_with(|| (AttrName::new(op, "id"), AttrName::new(op, "phase")));
            // Both in one pass over the attributes (the first of a name,
            // as a by-name look-up finds it).
            let (mut id_attr, mut phase_attr) = (None, None);
            // SAFETY: a live op; its attributes live as long as its context.
            for named in unsafe { crate::ir::read::named_attributes(op.to_raw()) } {
                if id.is(named.name) && id_attr.is_none() {
                    id_attr = Some(unsafe { Attribute::from_raw(named.attribute) });
                } else if phase.is(named.name) && phase_attr.is_none() {
                    phase_attr = Some(unsafe { Attribute::from_raw(named.attribute) });
                }
            }
            TaskHead { id: str_of(id_attr).unwrap_or_default(), phase: enum_of::<ods::Phase>(phase_attr).map_or("", ods::Phase::name), op }
        })
        .collect()
}

/// (ops, read, write bytes) of a task op, as its [`TaskWork`] states them.
#[must_use]
pub fn task_facts(op: OperationRef) -> (u64, u64, u64) {
    (count(op, "ops"), count(op, "read_bytes"), count(op, "write_bytes"))
}

/// How many tasks [`layer_work_in`] reads of the `dialect` layer.
#[must_use]
pub fn task_count(kinds: &[Option<OpKind>], dialect: &str) -> usize {
    let in_dialect = kinds_in(dialect);
    kinds.iter().filter(|k| is_layer_task(&in_dialect, **k)).count()
}

/// Whether an op of `kind` is a task of the layer `in_dialect` marks.
fn is_layer_task(in_dialect: &[bool], kind: Option<OpKind>) -> bool {
    kind.is_some_and(|k| in_dialect[k as usize] && is_summary_task(k))
}

/// The kinds whose ops are tasks of a layer's work.
fn is_summary_task(kind: OpKind) -> bool {
    matches!(kind, OpKind::DistCompute | OpKind::PlanComputeTask | OpKind::PlanCollectiveTask) || kind.is_communication()
}

/// [`layer_work`] of the ops [`ops_and_kinds`] read.
#[must_use]
pub fn layer_work_in<'c, 'a>(ops: &[OperationRef<'c, 'a>], kinds: &[Option<OpKind>], dialect: &str) -> LayerWork<'c, 'a> {
    layer_work_of(ops, kinds, dialect)
}

/// Like [`layer_work_in`], but each task goes to `visit` (with its op) as it
/// is read, and only those it returns `true` for are kept in the result:
/// a check that compares hundreds of thousands of tasks one by one need not
/// hold them all. The memory, stage, step and schedule facts are complete.
pub fn layer_work_visiting<'c, 'a>(
    ops: &[OperationRef<'c, 'a>],
    kinds: &[Option<OpKind>],
    dialect: &str,
    visit: impl FnMut(&TaskWork<'c>, OperationRef<'c, 'a>) -> bool,
) -> LayerWork<'c, 'a> {
    layer_work_with(ops, kinds, dialect, false, visit)
}

/// What the estimate reads of the `dialect` layer: like [`layer_work`], but
/// of the structured step's chunks only the representative one (stage 0,
/// chunk 0) contributes its template; every chunk's boundary transfers,
/// the memory and schedule facts are read. Totals over the step are not
/// meaningful on the result; the block facts and stages are the same.
#[must_use]
pub fn estimate_work<'c, 'a>(module: OperationRef<'c, 'a>, dialect: &str) -> LayerWork<'c, 'a> {
    let mut raw = Vec::new();
    module.walk(WalkOrder::PreOrder, |op| {
        raw.push(op.to_raw());
        let kind = OpKind::of(op);
        if matches!(kind, Some(OpKind::DistChunk | OpKind::PlanChunk)) && (count(op, "stage"), count(op, "chunk")) != (0, 0) {
            // The transfers of this chunk, not its template.
            for inner in crate::ir::read::region_ops(op, 1) {
                raw.extend(collect_ops(inner).into_iter().map(|o| o.to_raw()));
            }
            return WalkResult::Skip;
        }
        WalkResult::Advance
    });
    // SAFETY: every op is alive inside `module` for its lifetime.
    let ops: Vec<OperationRef> = raw.into_iter().map(|r| unsafe { OperationRef::from_raw(r) }).collect();
    let kinds = kinds_of(&ops);
    layer_work_of(&ops, &kinds, dialect)
}

fn layer_work_of<'c, 'a>(ops: &[OperationRef<'c, 'a>], kinds: &[Option<OpKind>], dialect: &str) -> LayerWork<'c, 'a> {
    layer_work_with(ops, kinds, dialect, true, |_, _| true)
}

fn layer_work_with<'c, 'a>(
    ops: &[OperationRef<'c, 'a>],
    kinds: &[Option<OpKind>],
    dialect: &str,
    keeps_all: bool,
    mut visit: impl FnMut(&TaskWork<'c>, OperationRef<'c, 'a>) -> bool,
) -> LayerWork<'c, 'a> {
    let mut microbatches = HashMap::new();
    let mut step = None;
    for (op, kind) in ops.iter().zip(kinds) {
        if matches!(kind, Some(k @ (OpKind::DistPipeline | OpKind::PlanPipeline)) if k.dialect() == dialect) {
            let m = count(*op, "microbatches");
            microbatches.insert(str_attr(*op, "sym_name").unwrap_or_default(), m);
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
    let mut task_ops = Vec::new();
    let mut memory = MemoryFacts::new();
    let mut stage_memory: BTreeMap<u64, MemoryFacts> = BTreeMap::new();
    let mut schedules = BTreeMap::new();
    let mut sites = Sites::default();
    let mut names = NameSlots::default();
    let is_plan = dialect == "plan";
    let in_dialect = kinds_in(dialect);
    if keeps_all {
        let count = task_count(kinds, dialect);
        tasks.reserve(count);
        task_ops.reserve(count);
    }
    for (&op, kind) in ops.iter().zip(kinds) {
        let Some(kind) = *kind else { continue };
        if !in_dialect[kind as usize] {
            continue;
        }
        let (engine, class) = match kind {
            OpKind::DistSchedule | OpKind::PlanSchedule => {
                schedules.insert(count(op, "stage"), crate::ir::read::i64_array_attr(op, "slots").unwrap_or_default());
                continue;
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
                continue;
            }
            OpKind::DistCompute | OpKind::PlanComputeTask => (None, TaskClass::Compute),
            k if k.is_communication() => (Some(crate::ir::ods::communication_capability(k).name()), TaskClass::TensorParallel),
            OpKind::PlanCollectiveTask => (None, TaskClass::TensorParallel),
            _ => continue,
        };
        // One pass over the op's attributes; the facts below read from it.
        let attrs = TaskAttrs::of(op, kind, &mut names);
        let engine = match kind {
            OpKind::DistCompute => enum_of::<ods::Engine>(attrs.get(TaskAttrs::ENGINE)).map_or("", ods::Engine::name),
            OpKind::PlanComputeTask => {
                enum_of::<ods::ComputeCapability>(attrs.get(TaskAttrs::CAPABILITY)).map_or("", ods::ComputeCapability::name)
            }
            OpKind::PlanCollectiveTask => {
                enum_of::<ods::CommunicationCapability>(attrs.get(TaskAttrs::CAPABILITY)).map_or("", ods::CommunicationCapability::name)
            }
            _ => engine.unwrap_or(""),
        };
        let class = if class == TaskClass::Compute {
            class
        } else {
            class_of(attrs.get(TaskAttrs::MESH_AXES), str_of(attrs.get(TaskAttrs::ALONG)), engine)
        };
        let phase = enum_of::<ods::Phase>(attrs.get(TaskAttrs::PHASE)).map_or("", ods::Phase::name);
        let (site, runs, representative) =
            sites.site_and_runs(op, attrs.get(TaskAttrs::BLOCK), attrs.get(TaskAttrs::MICROBATCH), phase, &microbatches);
        let task = TaskWork {
            id: Cow::Borrowed(str_of(attrs.get(TaskAttrs::ID)).unwrap_or_default()),
            phase,
            engine: Cow::Borrowed(engine),
            class,
            primitive: enum_of::<ods::Primitive>(attrs.get(TaskAttrs::PRIMITIVE)).map(ods::Primitive::name),
            ops: count_of(attrs.get(TaskAttrs::OPS)),
            read_bytes: count_of(attrs.get(TaskAttrs::READ_BYTES)),
            write_bytes: count_of(attrs.get(TaskAttrs::WRITE_BYTES)),
            message_bytes: count_of(attrs.get(TaskAttrs::MESSAGE_BYTES)),
            shared_by: count_of(attrs.get(TaskAttrs::SHARED_BY)).max(1),
            tiling: str_of(attrs.get(TaskAttrs::TILED_WITH)).map(|with| {
                (
                    Cow::Borrowed(with),
                    count_of(attrs.get(TaskAttrs::TILES)),
                    enum_of::<ods::TileOverlap>(attrs.get(TaskAttrs::OVERLAP)).unwrap_or(ods::TileOverlap::Ring),
                )
            }),
            site,
            runs,
            representative,
            // (Only a plan task's lineage names a task; skip the others' read.)
            lineage: if is_plan { str_of(attrs.get(TaskAttrs::LINEAGE)) } else { None },
        };
        if visit(&task, op) {
            tasks.push(task);
            task_ops.push(op);
        }
    }
    LayerWork { tasks, task_ops, memory, stage_memory, step, schedules }
}

impl LayerWork<'_, '_> {
    /// Totals of every phase over the step, in one pass, by phase name.
    #[must_use]
    pub fn phase_totals(&self) -> BTreeMap<&'static str, Totals> {
        let mut totals = PhaseTotals::default();
        for task in &self.tasks {
            totals.add(task);
        }
        totals.into_map()
    }

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
    fn representative(&self) -> impl Iterator<Item = &TaskWork<'_>> {
        self.tasks.iter().filter(|t| t.representative)
    }

    /// Totals of one phase of the representative block.
    fn block_phase(&self, phase: &str) -> Totals {
        let mut totals = Totals::default();
        for task in self.representative().filter(|t| t.phase == phase) {
            totals.add_runs(task, 1);
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
            let Some(primitive) = task.primitive else { continue };
            let entry = matmul_flops.entry(task.phase.to_string()).or_default();
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
            self.representative().filter(|t| t.phase == p).map(|t| crate::analysis::workload::share(value(t), t.shared_by)).sum()
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
            block_act_all_space: None,
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
pub fn model_work<'c, 'a>(module: OperationRef<'c, 'a>) -> Result<(LayerWork<'c, 'a>, Option<BlockFacts>), SummaryError> {
    let (ops, kinds) = ops_and_kinds(module);
    model_work_in(module, &ops, &kinds)
}

/// [`model_work`] given the ops of `module` and their kinds, as
/// [`ops_and_kinds`] reads them.
pub fn model_work_in<'c, 'a>(
    module: OperationRef<'c, 'a>,
    ops: &[OperationRef<'c, 'a>],
    kinds: &[Option<OpKind>],
) -> Result<(LayerWork<'c, 'a>, Option<BlockFacts>), SummaryError> {
    use crate::{
        analysis::workload::{derive_from_graph, derive_training_block, partial_gradients, pipeline_message_bytes, Engine, TrainingSpec},
        dialect::model::binding::{read_spec, TRAINING_SPEC},
        ir::lineage::{model_op_id, phase_name, primitive_name},
    };
    let served = module.attribute(crate::dialect::model::binding::INFERENCE_SPEC).is_ok();
    let mut lineage = std::collections::HashMap::new();
    // The weight gradients summed over TP once per step.
    let mut partial = Vec::new();
    let (invocations, memory, facts, coarse, spec) = if !served {
        let spec: TrainingSpec = read_spec(module, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string()))?;
        let coarse = kinds.contains(&Some(OpKind::ModelDecoderTraining));
        // A coarse block is Calculon's; a decomposed one is what its ops say.
        let derivation = match decomposed_function(ops, kinds).filter(|_| !coarse) {
            Some(function) => {
                let read = crate::dialect::model::graph::read_block(function)
                    .map_err(|(op, e)| SummaryError::Block(format!("'{}' {e}", str_attr(op, "id").unwrap_or("?"))))?;
                let derived = derive_from_graph(&read.graph, &spec).map_err(|e| match e.op {
                    Some(op) => SummaryError::Block(format!("'{op}': {}", e.message)),
                    None => SummaryError::Block(e.message),
                })?;
                lineage = derived.lineage;
                partial = derived.partial_gradients;
                derived.derivation
            }
            None => {
                partial = partial_gradients(&spec)?;
                derive_training_block(&spec)?
            }
        };
        let facts = BlockFacts::from_derivation(&derivation, &spec);
        (derivation.invocations, BTreeMap::new(), Some(facts), coarse, Some(spec))
    } else {
        let coarse = kinds.contains(&Some(OpKind::ModelDecoderInference));
        let (invocations, memory, served_lineage) = model_invocations(module)?;
        lineage = served_lineage;
        (invocations, memory, None, coarse, None)
    };
    // (An op of no known kind is judged by its name.)
    let is_model = |op: &OperationRef, kind: &Option<OpKind>| match kind {
        Some(kind) => kind.dialect() == "model",
        None => dialect_of(crate::ir::raw::identifier_str(op.name())) == "model",
    };
    let ids: std::collections::HashSet<&str> =
        ops.iter().zip(kinds).filter(|(op, kind)| is_model(op, kind)).filter_map(|(op, _)| str_attr(*op, "id")).collect();
    let (blocks, microbatches) = spec.as_ref().map_or((1, 1), |s| (s.model.blocks, s.microbatch_count()));
    let mut tasks = Vec::new();
    for inv in &invocations {
        let owner = lineage.get(&inv.name).cloned().unwrap_or_else(|| model_op_id(inv));
        if !coarse && !ids.contains(owner.as_str()) {
            return Err(SummaryError::Unattributed(inv.name.clone(), owner));
        }
        let engine = match (inv.collective, inv.engine) {
            (Some(c), _) => Cow::Owned(format!("{:?}", c.kind).to_lowercase()),
            (None, Engine::Matrix) => Cow::Borrowed("matrix"),
            (None, _) => Cow::Borrowed("vector"),
        };
        let phase = phase_name(inv.phase);
        tasks.push(TaskWork {
            id: Cow::Owned(inv.name.clone()),
            phase,
            engine,
            class: if inv.collective.is_some() { TaskClass::TensorParallel } else { TaskClass::Compute },
            primitive: Some(primitive_name(inv.primitive)),
            ops: inv.ops,
            read_bytes: inv.read_bytes,
            write_bytes: inv.write_bytes,
            message_bytes: inv.message_bytes(),
            shared_by: inv.shared_by,
            tiling: inv.tiling.as_ref().map(|t| (Cow::Owned(t.linear_task(inv.phase)), t.tiles, crate::ir::ods::tile_overlap(t.overlap))),
            site: Site::Flat,
            runs: if phase == "optimizer" { blocks } else { blocks.saturating_mul(microbatches) },
            representative: true,
            lineage: None,
        });
    }
    if let (Some(facts), Some(spec)) = (&facts, &spec) {
        let transfer =
            |id: Cow<'static, str>, phase: &'static str, engine: &'static str, class: TaskClass, bytes: u64, runs: u64| TaskWork {
                id,
                phase,
                engine: Cow::Borrowed(engine),
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
                lineage: None,
            };
        let map = &spec.mapping;
        let boundaries = (map.pp * map.pipeline_interleaving).saturating_sub(1).saturating_mul(microbatches);
        let bytes = pipeline_message_bytes(spec);
        if map.pp > 1 {
            tasks.push(transfer("send_activation".into(), "forward", "point_to_point", TaskClass::Pipeline, bytes, boundaries));
            tasks.push(transfer("send_gradient".into(), "activation_gradient", "point_to_point", TaskClass::Pipeline, bytes, boundaries));
        }
        let elem = spec.workload.datatype.bytes();
        for p in &partial {
            tasks.push(transfer(p.name().into(), "optimizer", "all_reduce", TaskClass::TensorParallel, p.message_bytes(elem), blocks));
        }
        if map.dp > 1 {
            let reduce = if map.optimizer_sharding { "reduce_scatter" } else { "all_reduce" };
            tasks.push(transfer("dp.grad_reduce".into(), "optimizer", reduce, TaskClass::DataParallel, facts.block_dp_size, blocks));
            if map.optimizer_sharding {
                tasks.push(transfer(
                    "dp.param_gather".into(),
                    "optimizer",
                    "all_gather",
                    TaskClass::DataParallel,
                    facts.block_dp_size,
                    blocks,
                ));
            }
        }
    }
    Ok((LayerWork { tasks, task_ops: Vec::new(), memory, stage_memory: BTreeMap::new(), step: None, schedules: BTreeMap::new() }, facts))
}

/// The function holding a decomposed training block (that of its first
/// `model.matmul`), if the module has one.
fn decomposed_function<'c, 'a>(ops: &[OperationRef<'c, 'a>], kinds: &[Option<OpKind>]) -> Option<OperationRef<'c, 'a>> {
    let matmul = ops.iter().zip(kinds).find(|(_, kind)| **kind == Some(OpKind::ModelMatmul)).map(|(op, _)| *op)?;
    matmul.parent_operation().filter(|f| crate::ir::raw::identifier_str(f.name()) == "func.func")
}

/// Summarizes the plan of `module`, or else its dist program, or else its
/// ModelIR under the bound strategy.
pub fn summarize(module: OperationRef) -> Result<WorkSummary, SummaryError> {
    // One walk serves the layer test and the layer's reading.
    let (ops, kinds) = ops_and_kinds(module);
    let has = |d: &str| {
        ops.iter().any(|op| {
            let name = crate::ir::raw::identifier_str(op.name());
            dialect_of(name) == d && name.strip_prefix(d) != Some(".header")
        })
    };
    let (layer, work, block) = if has("plan") {
        let work = layer_work_in(&ops, &kinds, "plan");
        let block = (!work.is_inference()).then(|| work.block_facts());
        ("plan", work, block)
    } else if has("dist") {
        let work = layer_work_in(&ops, &kinds, "dist");
        let block = (!work.is_inference()).then(|| work.block_facts());
        ("dist", work, block)
    } else if has("model") {
        let (work, block) = model_work_in(module, &ops, &kinds)?;
        ("model", work, block)
    } else {
        return Err(SummaryError::Empty);
    };
    let inference = work.is_inference().then(|| work.inference_summary());
    // Keyed by the tasks' own strings first: no allocation per task.
    let mut by_phase: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut by_engine: BTreeMap<&str, Totals> = BTreeMap::new();
    for task in &work.tasks {
        by_phase.entry(task.phase).or_default().add(task);
        by_engine.entry(&task.engine).or_default().add(task);
    }
    let phases: BTreeMap<String, Totals> = by_phase.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    let engines: BTreeMap<String, Totals> = by_engine.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    // Calculon's per-processor convention needs the strategy (its schedule
    // and recompute policy); a module without a binding has none.
    let spec = module.attribute(crate::dialect::model::binding::TRAINING_SPEC).ok().and_then(|_| {
        crate::dialect::model::binding::read_spec(
            module,
            crate::dialect::model::binding::TRAINING_SPEC,
            |s: &crate::analysis::workload::TrainingSpec| s.validate().map_err(|e| e.to_string()),
        )
        .ok()
    });
    let per_processor = match (&block, &spec) {
        (Some(block), Some(spec)) => Some(ProcessorMemory::calculon(block, spec)),
        _ => None,
    };
    let stages = work.stages();
    Ok(WorkSummary { layer: layer.to_string(), step: work.step.clone(), phases, engines, block, per_processor, stages, inference })
}

/// The model's inference work under its bound strategy: the prefill's and
/// each decode op's invocations, the memory facts (weights, working
/// activations, KV capacity at the end of generation) and the ModelIR op
/// of each invocation. A coarse block is the spec's; a decomposed one
/// (found by its KV-cache append) is what its ops say.
///
/// # Errors
/// When the strategy binding or the decomposed block does not derive.
// The three parts are named in the doc above; an alias would hide them.
#[allow(clippy::type_complexity)]
pub fn model_invocations(
    module: OperationRef,
) -> Result<
    (Vec<PrimitiveInvocation>, std::collections::BTreeMap<String, MemoryFact>, std::collections::HashMap<String, String>),
    SummaryError,
> {
    let spec: InferenceSpec = read_spec(module, INFERENCE_SPEC, |s: &InferenceSpec| s.validate().map_err(|e| e.to_string()))?;
    let ops = collect_ops(module);
    let coarse = ops.iter().any(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderInference));
    let decomposed = ops
        .iter()
        .find(|op| OpKind::of(**op) == Some(OpKind::ModelKvAppend))
        .and_then(|op| op.parent_operation())
        .filter(|f| crate::ir::raw::identifier_str(f.name()) == "func.func");
    let memory = |weights: u64, working: u64, cache: u64| {
        [("weight".to_string(), weights), ("activation_working".to_string(), working), ("kv_cache".to_string(), cache)]
            .into_iter()
            .map(|(kind, bytes)| (kind, MemoryFact { bytes, shared_by: 1 }))
            .collect()
    };
    if let (false, Some(function)) = (coarse, decomposed) {
        let passes = crate::dialect::model::graph::derive_served(function, &spec, spec.workload.final_context())
            .map_err(|(_, e)| SummaryError::Block(e))?;
        let prefill = passes.first().map(|p| p.pass.derivation.memory).unwrap_or_default();
        let cache = passes.last().and_then(|p| p.cache.as_ref()).map_or(0, |c| c.2);
        let mut lineage = std::collections::HashMap::new();
        let mut invocations = Vec::new();
        for pass in passes {
            lineage.extend(pass.lineage);
            invocations.extend(pass.pass.derivation.invocations);
        }
        return Ok((invocations, memory(prefill.weights, prefill.act_working_space, cache), lineage));
    }
    let prefill = derive_prefill_block(&spec)?;
    let memory_of = prefill.memory;
    let mut invocations = prefill.invocations;
    for op in ops {
        if OpKind::of(op) == Some(OpKind::ModelDecoderInference) && enum_attr::<InferencePhase>(op, "phase") == Some(InferencePhase::Decode)
        {
            let context = int_attr(op, "context_tokens").and_then(|c| u64::try_from(c).ok()).unwrap_or(0);
            invocations.extend(derive_decode_block(&spec, context)?.invocations);
        }
    }
    let cache = kv_cache_bytes(&spec, spec.workload.final_context());
    Ok((invocations, memory(memory_of.weights, memory_of.act_working_space, cache), std::collections::HashMap::new()))
}
