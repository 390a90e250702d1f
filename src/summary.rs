//! Work summaries of `dist` and `plan` programs: per-phase and per-engine
//! totals read from the tasks themselves, and the block facts under the
//! Calculon oracle's field names. The checks and `--export-work-summary`
//! use the same reading, so a layer's totals are computed one way only.

use std::collections::BTreeMap;

use melior::ir::{operation::OperationLike, OperationRef};
use serde::Serialize;
use thiserror::Error;

use crate::{
    ir::{attr_string_list, collect_ops, dialect_of, enum_attr, int_attr, name_of, str_attr},
    ods::{self, OpKind},
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
}

/// Totals over a set of tasks.
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
        self.tasks += 1;
        self.ops = self.ops.saturating_add(task.ops);
        self.read_bytes = self.read_bytes.saturating_add(task.read_bytes);
        self.write_bytes = self.write_bytes.saturating_add(task.write_bytes);
        self.message_bytes = self.message_bytes.saturating_add(task.message_bytes);
    }
}

/// The exported summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkSummary {
    /// `plan`, `dist` or `model`.
    pub layer: String,
    pub phases: BTreeMap<String, Totals>,
    pub engines: BTreeMap<String, Totals>,
    /// Training block facts (Calculon's field names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<BlockFacts>,
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

/// The tasks and memory facts of one layer of `module`.
pub struct LayerWork {
    pub tasks: Vec<TaskWork>,
    /// Memory per kind (`weight`, `optimizer_state`, ...).
    pub memory: BTreeMap<String, MemoryFact>,
}

fn count(op: OperationRef, name: &str) -> u64 {
    int_attr(op, name).and_then(|v| u64::try_from(v).ok()).unwrap_or(0)
}

fn class_of(op: OperationRef, kind: &str) -> TaskClass {
    if kind == "point_to_point" {
        return TaskClass::Pipeline;
    }
    let axes = attr_string_list(op, "mesh_axes").or_else(|| str_attr(op, "along").map(|a| vec![a.to_string()]));
    match axes.as_deref() {
        Some([axis]) if axis == "dp" => TaskClass::DataParallel,
        Some([axis]) if axis == "pp" => TaskClass::Pipeline,
        _ => TaskClass::TensorParallel,
    }
}

/// Reads the tasks of the `dialect` layer (`dist` or `plan`) of `module`.
#[must_use]
pub fn layer_work(module: OperationRef, dialect: &str) -> LayerWork {
    let mut tasks = Vec::new();
    let mut memory = BTreeMap::new();
    for op in collect_ops(module) {
        let Some(kind) = OpKind::of(op) else { continue };
        if kind.dialect() != dialect {
            continue;
        }
        let id = str_attr(op, "id").unwrap_or_default().to_string();
        let phase = enum_attr::<ods::Phase>(op, "phase").map_or("", ods::Phase::name).to_string();
        let task = |engine: &str, class: TaskClass| TaskWork {
            id: id.clone(),
            phase: phase.clone(),
            engine: engine.to_string(),
            class,
            primitive: enum_attr::<ods::Primitive>(op, "primitive").map(|p| p.name().to_string()),
            ops: count(op, "ops"),
            read_bytes: count(op, "read_bytes"),
            write_bytes: count(op, "write_bytes"),
            message_bytes: count(op, "message_bytes"),
            shared_by: count(op, "shared_by").max(1),
        };
        match kind {
            OpKind::DistCompute => tasks.push(task(enum_attr::<ods::Engine>(op, "engine").map_or("", ods::Engine::name), TaskClass::Compute)),
            k if k.is_communication() => {
                let capability = crate::transformer::plan::communication_capability(k).name();
                let class = if capability == "point_to_point" { TaskClass::Pipeline } else { class_of(op, capability) };
                tasks.push(task(capability, class));
            }
            OpKind::PlanComputeTask => {
                tasks.push(task(enum_attr::<ods::ComputeCapability>(op, "capability").map_or("", ods::ComputeCapability::name), TaskClass::Compute));
            }
            OpKind::PlanCollectiveTask => {
                let capability = enum_attr::<ods::CommunicationCapability>(op, "capability").map_or("", ods::CommunicationCapability::name);
                tasks.push(task(capability, class_of(op, capability)));
            }
            OpKind::DistMemory | OpKind::PlanBuffer => {
                let (kind_attr, size) = if kind == OpKind::DistMemory { ("kind", "bytes") } else { ("contents", "size") };
                let memory_kind = enum_attr::<ods::MemoryKind>(op, kind_attr).map_or("", ods::MemoryKind::name).to_string();
                let entry = memory.entry(memory_kind).or_insert(MemoryFact { bytes: 0, shared_by: 1 });
                entry.bytes = entry.bytes.saturating_add(count(op, size));
                entry.shared_by = count(op, "shared_by").max(1);
            }
            _ => {}
        }
    }
    LayerWork { tasks, memory }
}

impl LayerWork {
    /// Totals of the tasks of one phase.
    #[must_use]
    pub fn phase(&self, phase: &str) -> Totals {
        let mut totals = Totals::default();
        for task in self.tasks.iter().filter(|t| t.phase == phase) {
            totals.add(task);
        }
        totals
    }

    fn message(&self, phase: Option<&str>, class: TaskClass) -> u64 {
        self.tasks
            .iter()
            .filter(|t| t.class == class && phase.is_none_or(|p| t.phase == p))
            .map(|t| t.message_bytes)
            .sum()
    }

    /// Whether these are the tasks of a served (inference) block.
    #[must_use]
    pub fn is_inference(&self) -> bool {
        self.tasks.iter().any(|t| t.phase == "prefill" || t.phase == "decode")
    }

    /// Inference facts of these tasks and memory facts.
    #[must_use]
    pub fn inference_summary(&self) -> InferenceSummary {
        let prefill = self.phase("prefill");
        let memory = |k: &str| self.memory.get(k).map_or(0, |m| m.bytes);
        let mut matmul_flops: BTreeMap<String, MatmulFlops> = BTreeMap::new();
        for task in &self.tasks {
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
        let flops = |p: &str| self.phase(p).ops;
        let bytes = |p: &str| {
            let t = self.phase(p);
            t.read_bytes + t.write_bytes
        };
        // One rank's share of work a group splits (the sharded optimizer).
        let per_rank = |p: &str, value: fn(&TaskWork) -> u64| -> f64 {
            self.tasks.iter().filter(|t| t.phase == p).map(|t| crate::workload::share(value(t), t.shared_by)).sum()
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
}

/// The model's work: the derivation of the bound strategy, each invocation
/// attributed to the ModelIR op it comes from (the coarse op, or the
/// decomposed op `model_op_id` names). Block facts come from the algebra.
pub fn model_work(module: OperationRef) -> Result<(LayerWork, Option<BlockFacts>), SummaryError> {
    use crate::transformer::{
        binding::{read_spec, TRAINING_SPEC},
        distribute::{model_op_id, phase_name},
    };
    use crate::workload::{derive_training_block, Engine, TrainingSpec};
    let ops = collect_ops(module);
    let served = module.attribute(crate::transformer::binding::INFERENCE_SPEC).is_ok();
    let (invocations, memory, facts, coarse) = if !served {
        let spec: TrainingSpec = read_spec(module, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string()))?;
        let derivation = derive_training_block(&spec)?;
        let facts = BlockFacts::from_derivation(&derivation, &spec);
        let coarse = ops.iter().any(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderTraining));
        (derivation.invocations, BTreeMap::new(), Some(facts), coarse)
    } else {
        let (invocations, memory) = crate::transformer::distribute_inference::model_invocations(module)?;
        let coarse = ops.iter().any(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderInference));
        (invocations, memory, None, coarse)
    };
    let ids: std::collections::HashSet<&str> = ops
        .iter()
        .filter(|op| dialect_of(&name_of(**op)) == "model")
        .filter_map(|op| str_attr(*op, "id"))
        .collect();
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
        tasks.push(TaskWork {
            id: inv.name.clone(),
            phase: phase_name(inv.phase).to_string(),
            engine,
            class: if inv.collective.is_some() { TaskClass::TensorParallel } else { TaskClass::Compute },
            primitive: Some(crate::transformer::distribute::primitive_name(inv.primitive).to_string()),
            ops: inv.ops,
            read_bytes: inv.read_bytes,
            write_bytes: inv.write_bytes,
            message_bytes: inv.message_bytes(),
            shared_by: inv.shared_by,
        });
    }
    // Transfers between pipeline stages and the data-parallel gradient
    // reduction are not block primitives; the strategy implies them.
    if let Some(facts) = &facts {
        let transfer = |id: &str, phase: &str, engine: &str, class: TaskClass, bytes: u64| TaskWork {
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
        };
        if facts.block_fw_pp_size > 0 {
            tasks.push(transfer("pp.send_activation", "forward", "point_to_point", TaskClass::Pipeline, facts.block_fw_pp_size));
        }
        if facts.block_bw_pp_size > 0 {
            tasks.push(transfer("pp.recv_grad", "activation_gradient", "point_to_point", TaskClass::Pipeline, facts.block_bw_pp_size));
        }
        if facts.block_dp_size > 0 {
            tasks.push(transfer("dp.grad_reduce", "weight_gradient", "all_reduce", TaskClass::DataParallel, facts.block_dp_size));
        }
    }
    Ok((LayerWork { tasks, memory }, facts))
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
    Ok(WorkSummary { layer: layer.to_string(), phases, engines, block, inference })
}
