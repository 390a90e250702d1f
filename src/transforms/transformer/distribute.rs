//! `distribute-transformer-training`: ModelIR + strategy -> the whole
//! training step in DistributedTaskIR.
//!
//! The block is derived from the ModelIR it is given (a coarse op is
//! decomposed first): [`crate::analysis::workload::derive_from_graph`] shards
//! its ops and counts them with the shared op rules; the step is laid out
//! by the schedule ([`crate::analysis::schedule`]) on a logical `dp x pp x
//! tp` mesh:
//!
//! - `dist.pipeline @step`: stages along `pp`, chunks per stage, the
//!   microbatch count and the schedule kind;
//! - one `dist.chunk` per (stage, chunk), Megatron's interleaved assignment
//!   (chunk `c` of stage `s` holds blocks from `(c·p + s)·L/(p·v)`), with
//!   the block template once: one task per primitive invocation of one
//!   block and one microbatch on the stage's slice (forward, recompute,
//!   re-communication, backward), each waiting for the tasks whose results
//!   its ModelIR op reads and returning its result's shard, TP collectives
//!   over the `tp` axis on the shard of the task they follow (an
//!   all-reduce keeps its type, an all-gather / reduce-scatter joins or
//!   splits the sequence, `axis = 1`; the tasks after them read their
//!   result), the sums over `tp` of the weight gradients that are partial
//!   there (norms under sequence parallelism, replicated key/value heads:
//!   `<op>.tp_grad_reduce`), the block's data-parallel gradient reduction
//!   over the `dp` axis (all-reduce; reduce-scatter of gradients and
//!   all-gather of parameters under optimizer sharding) and its optimizer
//!   step (these once per step, phase `optimizer`, on tokens: each covers
//!   several gradients), and the block's memory facts; its
//!   `boundary` holds the cross-stage `dist.p2p`s of one microbatch along
//!   `pp` (activation forward, activation gradient backward) with exact
//!   message bytes;
//! - one `dist.schedule` per stage: the ordered (microbatch, chunk,
//!   direction) slots;
//! - per-stage `dist.memory` facts from the schedule (activations of the
//!   microbatches each stage holds in flight, weights, gradients and
//!   optimizer state of its blocks).
//!
//! The program grows with L + p·v·m, not L·m; `dist-unroll-schedule`
//! expands it into every task instance. Every task's lineage names its
//! ModelIR op; its chunk names the stage, chunk and blocks, the schedule
//! the microbatches.
//!
//! The pass validates everything first and builds the program into a
//! detached module, which is moved in only on success: on any error it
//! changes nothing.

use std::collections::HashSet;

use melior::{
    ir::{block::BlockLike, operation::OperationLike, Block, Location, Module, OperationRef, Region, RegionLike, Value},
    pass::ExternalPass,
};

use super::{
    emit::{emit_invocation, token, Emitter, Placement},
    Failure,
};
use crate::dialect::model::{
    binding::{read_spec, TRAINING_SPEC},
    graph::read_block,
};
use crate::{
    analysis::{
        schedule::{Direction, Schedule},
        workload::{
            derive_from_graph, pipeline_message_bytes, BlockDerivation, BlockFacts, CollectiveKind, GraphDerivation, PartialGradient,
            Phase, PipelineSchedule, PrimitiveInvocation, Recompute, TrainingSpec,
        },
    },
    dialect::{
        builder::{BuildError, Builder},
        dist,
    },
    ir::{
        digest::layer_digest,
        ods::{self, MemoryKind, OpKind, Reduction},
        read::{collect_ops, dialect_of, name_of, str_attr},
    },
};

crate::ir::pass_macro::external_pass!(
    "DistributeTransformerTraining",
    "distribute-transformer-training",
    "Derive the dist program of the whole training step (every block over the pipeline stages, its schedule, data parallelism, memory per stage) from ModelIR and its strategy",
    run
);

fn run(module: OperationRef, pass: ExternalPass) {
    super::run_building(module, pass, build);
}

/// Checks the input and builds the program into `generated`; nothing in
/// `module` is changed here.
fn build<'c, 'a>(module: OperationRef<'c, 'a>, generated: &Module<'c>) -> Result<(), Failure<'c, 'a>> {
    let ops = collect_ops(module);
    super::ensure_no_dist_program(&ops, "distribute-transformer-training")?;
    // The block: the coarse op, or a decomposed block (the function of its
    // first matmul).
    let coarse: Vec<OperationRef> = ops.iter().copied().filter(|op| OpKind::of(*op) == Some(OpKind::ModelDecoderTraining)).collect();
    let decomposed = ops.iter().copied().find(|op| OpKind::of(*op) == Some(OpKind::ModelMatmul));
    let block = match (coarse.as_slice(), decomposed) {
        ([block], _) => *block,
        ([], Some(anchor)) => anchor,
        ([], None) => {
            return Err((
                module,
                "distribute-transformer-training: no 'model.decoder_training' op (or decomposed block) to distribute".into(),
            ))
        }
        ([_, second, ..], _) => {
            return Err((
                *second,
                "distribute-transformer-training: expected one 'model.decoder_training' op (one block), found several".into(),
            ))
        }
    };
    let spec: TrainingSpec = read_spec(module, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string()))
        .map_err(|e| (block, format!("distribute-transformer-training: {e}")))?;
    let is_coarse = OpKind::of(block) == Some(OpKind::ModelDecoderTraining);
    if is_coarse {
        check_dimensions(block, &spec)?;
    }
    // A coarse block is decomposed first, into a scratch module; the
    // derivation reads the primitive ops either way.
    let derived = if is_coarse {
        let scratch = Module::new(block.location());
        let function = super::decompose::decompose_into(module, block, &scratch)?;
        derive_block(function, &spec).map_err(|(_, e)| (block, e))?
    } else {
        let function = block.parent_operation().filter(|f| name_of(*f) == "func.func").ok_or_else(|| {
            (block, "distribute-transformer-training: the decomposed block must be the body of a 'func.func'".to_string())
        })?;
        derive_block(function, &spec)?
    };
    let derivation = &derived.derivation;
    check_step_size(&spec, derivation).map_err(|e| (block, format!("distribute-transformer-training: {e}")))?;
    let model_ids: HashSet<String> =
        ops.iter().filter(|op| dialect_of(&name_of(**op)) == "model").filter_map(|op| str_attr(*op, "id").map(str::to_string)).collect();
    let block_id = str_attr(block, "id").unwrap_or("block").to_string();
    let owner = |own: String| if model_ids.contains(&own) { own } else { block_id.clone() };
    let lineage = |inv: &PrimitiveInvocation| {
        owner(derived.lineage_of(&inv.name).map_or_else(|| crate::ir::lineage::model_op_id(inv), str::to_string))
    };
    // Cross-stage values: the block output forward (the last residual of a
    // decomposed block), its input gradient backward.
    let boundary_lineage = [owner("mlp.residual".to_string()), owner("attn.fork.agrad".to_string())];
    let digest = layer_digest(module, "model");
    // The partial gradients' reductions sit next to the op whose weight
    // gradients they sum.
    let partial: Vec<(PartialGradient, String)> = derived.partial_gradients.iter().map(|p| (p.clone(), owner(p.source.clone()))).collect();
    let step = Step {
        spec: &spec,
        derivation,
        partial_gradients: &partial,
        deps: &derived.deps,
        outputs: &derived.outputs,
        lineage: &lineage,
        boundary_lineage: &boundary_lineage,
    };
    step.program(generated, &digest, block.location()).map_err(|e| (block, e.to_string()))
}

/// The distributed work of the block in `function`, or the op at fault
/// (the function when no op is) and why.
fn derive_block<'c, 'x>(function: OperationRef<'c, 'x>, spec: &TrainingSpec) -> Result<GraphDerivation, Failure<'c, 'x>> {
    let read = read_block(function).map_err(|(op, e)| {
        (op, format!("distribute-transformer-training: '{}' op '{}' {e}", name_of(op), str_attr(op, "id").unwrap_or("?")))
    })?;
    derive_from_graph(&read.graph, spec).map_err(|e| match &e.op {
        Some(id) => (read.op(id).unwrap_or(function), format!("distribute-transformer-training: '{id}': {}", e.message)),
        None => (function, format!("distribute-transformer-training: {}", e.message)),
    })
}

/// Most (microbatch, chunk) slots the schedules of one step may hold: the
/// program grows with them, so an absurd microbatch count is an error, not
/// an allocation the machine cannot make.
pub const MAX_STEP_SLOTS: u64 = 1 << 24;

/// The step's schedules and per-stage memory facts fit the IR.
fn check_step_size(spec: &TrainingSpec, derivation: &BlockDerivation) -> Result<(), String> {
    let (p, v, m) = (spec.mapping.pp, spec.mapping.pipeline_interleaving, spec.microbatch_count());
    let slots = p.checked_mul(v).and_then(|pv| pv.checked_mul(m)).filter(|s| *s <= MAX_STEP_SLOTS);
    if slots.is_none() {
        return Err(format!(
            "the step has mapping.pp x mapping.pipeline_interleaving x microbatches = {p} x {v} x {m} schedule slots, more than the {MAX_STEP_SLOTS} (2^24) Blueprint lays out"
        ));
    }
    let memory = &derivation.memory;
    let bpp = spec.blocks_per_rank();
    let limit = i64::MAX as u64;
    for (what, bytes) in [("weight", memory.weights), ("optimizer state", memory.optimizer), ("weight gradient", memory.weight_grads)] {
        if bytes.checked_mul(bpp).is_none_or(|b| b > limit) {
            return Err(format!("the {what} memory of one stage ({bytes} bytes x {bpp} blocks) exceeds 2^63 - 1 bytes"));
        }
    }
    let in_flight = Schedule::of(spec).peak_in_flight(0).saturating_mul(spec.blocks_per_virtual_chunk());
    for (what, bytes) in [("activation", memory.act_storage_space), ("checkpoint", memory.act_checkpoint)] {
        if bytes.checked_mul(in_flight).is_none_or(|b| b > limit) {
            return Err(format!("the {what} memory of stage 0 ({bytes} bytes x {in_flight} blocks in flight) exceeds 2^63 - 1 bytes"));
        }
    }
    Ok(())
}

/// The coarse op's dimensions must be the bound spec's.
fn check_dimensions<'c, 'a>(block: OperationRef<'c, 'a>, spec: &TrainingSpec) -> Result<(), Failure<'c, 'a>> {
    let m = &spec.model;
    super::check_bound_dimensions(
        block,
        TRAINING_SPEC,
        &[
            ("hidden", m.hidden),
            ("ffn_hidden", m.ffn_hidden),
            ("seq_len", m.seq_len),
            ("heads", m.heads),
            ("head_dim", m.head_dim),
            ("microbatch", spec.workload.microbatch),
        ],
    )?;
    let datatype = crate::ir::read::enum_attr::<ods::Datatype>(block, "datatype");
    let want = super::import::datatype_case(spec.workload.datatype);
    if datatype != Some(want) {
        let found = datatype.map_or("(none)", ods::Datatype::name);
        return Err((block, format!("'model.decoder_training' op datatype is '{found}', but the strategy binding says '{want}'")));
    }
    Ok(())
}

pub(crate) const MESH: &str = "block_mesh";

/// The mesh of the whole step and the symbol of its pipeline.
pub(crate) const WORLD: &str = "world";
pub(crate) const PIPELINE: &str = "step";

/// Megatron's assignment: the first block of chunk `chunk` of `stage`
/// (virtual stages in order `chunk · pp + stage`). In an uneven pipeline
/// the short stages' last chunks hold one block fewer
/// ([`TrainingSpec::chunk_blocks`]).
#[must_use]
pub fn first_block(spec: &TrainingSpec, stage: u64, chunk: u64) -> u64 {
    spec.chunk_first_block(stage, chunk)
}

/// The symbol of a chunk.
#[must_use]
pub fn chunk_symbol(stage: u64, chunk: u64) -> String {
    format!("s{stage}.c{chunk}")
}

/// The stage-level memory parts of stage `stage`, from the schedule:
/// (kind, bytes, shared by).
#[must_use]
pub fn stage_memory(spec: &TrainingSpec, derivation: &BlockDerivation, stage: u64) -> [(MemoryKind, u64, u64); 8] {
    let memory = &derivation.memory;
    let schedule = Schedule::of(spec);
    let bpp = spec.stage_blocks(stage);
    let in_flight = crate::analysis::schedule::stage_in_flight_blocks(spec, &schedule, stage);
    let full = spec.mapping.recompute == Recompute::Full;
    let shards = memory.shards.max(1);
    [
        (MemoryKind::Weight, memory.weights * bpp, 1),
        (MemoryKind::ActivationWorking, memory.act_working_space, 1),
        (MemoryKind::ActivationStorage, if full { 0 } else { memory.act_storage_space * in_flight.saturating_sub(1) }, 1),
        (MemoryKind::ActivationCheckpoint, if full { memory.act_checkpoint * in_flight } else { 0 }, 1),
        (MemoryKind::ActivationGradient, memory.act_grads, 1),
        (MemoryKind::WeightGradientUnsharded, memory.weight_grads_unsharded, 1),
        (MemoryKind::WeightGradient, memory.weight_grads * (bpp - 1), shards),
        (MemoryKind::OptimizerState, memory.optimizer * bpp, shards),
    ]
}

/// The memory facts of one block: (kind, bytes, shared by).
fn block_memory(derivation: &BlockDerivation) -> [(MemoryKind, u64, u64); 8] {
    let memory = &derivation.memory;
    let shards = memory.shards.max(1);
    [
        (MemoryKind::Weight, memory.weights, 1),
        (MemoryKind::ActivationWorking, memory.act_working_space, 1),
        (MemoryKind::ActivationStorage, memory.act_storage_space, 1),
        (MemoryKind::ActivationCheckpoint, memory.act_checkpoint, 1),
        (MemoryKind::WeightGradient, memory.weight_grads, shards),
        (MemoryKind::WeightGradientUnsharded, memory.weight_grads_unsharded, 1),
        (MemoryKind::ActivationGradient, memory.act_grads, 1),
        (MemoryKind::OptimizerState, memory.optimizer, shards),
    ]
}

/// The slots of a stage as `dist.schedule` spells them.
#[must_use]
pub fn slot_triples(schedule: &Schedule, stage: u64) -> Vec<i64> {
    let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    schedule
        .slots(stage)
        .iter()
        .flat_map(|slot| [to_i64(slot.microbatch), to_i64(slot.chunk), i64::from(slot.direction == Direction::Backward)])
        .collect()
}

/// The ODS schedule kind of a resolved schedule.
pub(crate) fn schedule_case(kind: PipelineSchedule) -> ods::PipelineSchedule {
    match kind {
        PipelineSchedule::OneFOneB => ods::PipelineSchedule::OneFOneB,
        PipelineSchedule::Interleaved { .. } => ods::PipelineSchedule::InterleavedOneFOneB,
        PipelineSchedule::GPipe => ods::PipelineSchedule::Gpipe,
    }
}

/// What the program of one step is built from.
struct Step<'s> {
    spec: &'s TrainingSpec,
    derivation: &'s BlockDerivation,
    /// The weight gradients that are partial sums over `tp`, each with the
    /// lineage of its reduction.
    partial_gradients: &'s [(PartialGradient, String)],
    /// What each invocation waits for (indices of earlier ones).
    deps: &'s [Vec<usize>],
    /// Each invocation's result shape on one rank (compute tasks).
    outputs: &'s [Option<Vec<u64>>],
    lineage: &'s dyn Fn(&PrimitiveInvocation) -> String,
    /// Lineage of the forward and the backward cross-stage value.
    boundary_lineage: &'s [String; 2],
}

fn count(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl Step<'_> {
    fn program<'c>(&self, generated: &Module<'c>, model_digest: &str, anchor: Location<'c>) -> Result<(), BuildError> {
        let b = Builder::of(generated.as_operation());
        let map = &self.spec.mapping;
        let schedule = Schedule::of(self.spec);
        let top = Emitter::new(b, generated.body(), anchor);
        top.push(
            dist::Header { schema_name: "blueprint.dist", schema_version: "1.0", model_digest, optional: Default::default() }
                .build(&b, top.at("dist.header")),
        )?;
        let shape = [count(map.dp), count(map.pp), count(map.tp)];
        top.push(
            dist::Mesh { sym_name: WORLD, axes: b.strings(&["dp", "pp", "tp"]), shape: &shape, optional: Default::default() }
                .build(&b, top.at(WORLD)),
        )?;
        top.push(
            dist::Pipeline {
                sym_name: PIPELINE,
                mesh: WORLD,
                along: "pp",
                schedule: schedule_case(schedule.kind),
                stages: schedule.stages,
                chunks: schedule.chunks,
                microbatches: schedule.microbatches,
                blocks: self.spec.model.blocks,
                optional: Default::default(),
            }
            .build(&b, top.at(PIPELINE)),
        )?;
        // One block's memory (every block is alike), then each stage's.
        let first_stage = [-1, 0, -1];
        for (kind, bytes, shared) in block_memory(self.derivation) {
            let id = format!("block.mem.{}", kind.name());
            top.push(
                dist::Memory {
                    id: &id,
                    mesh: WORLD,
                    kind,
                    bytes,
                    lineage: "block",
                    optional: dist::MemoryOptional {
                        shared_by: (shared > 1).then_some(shared),
                        slice: Some(&first_stage),
                        block: Some(0),
                        ..Default::default()
                    },
                }
                .build(&b, top.at(&id)),
            )?;
        }
        for stage in 0..schedule.stages {
            let slice = [-1, count(stage), -1];
            for (kind, bytes, shared) in stage_memory(self.spec, self.derivation, stage) {
                let id = format!("s{stage}.mem.{}", kind.name());
                top.push(
                    dist::Memory {
                        id: &id,
                        mesh: WORLD,
                        kind,
                        bytes,
                        lineage: "block",
                        optional: dist::MemoryOptional {
                            shared_by: (shared > 1).then_some(shared),
                            slice: Some(&slice),
                            stage: Some(stage),
                            ..Default::default()
                        },
                    }
                    .build(&b, top.at(&id)),
                )?;
            }
        }
        for stage in 0..schedule.stages {
            for chunk in 0..schedule.chunks {
                top.push(self.chunk(&b, stage, chunk, anchor))?;
            }
        }
        for stage in 0..schedule.stages {
            let slots = slot_triples(&schedule, stage);
            top.push(
                dist::Schedule { pipeline: PIPELINE, stage, slots: &slots, optional: Default::default() }
                    .build(&b, top.at(&format!("s{stage}.schedule"))),
            )?;
        }
        Ok(())
    }

    /// One chunk: the block template and the boundary transfers.
    fn chunk<'c>(&self, b: &Builder<'c>, stage: u64, chunk: u64, anchor: Location<'c>) -> Result<melior::ir::Operation<'c>, BuildError> {
        let symbol = chunk_symbol(stage, chunk);
        let location = b.named_location(&symbol, anchor);
        let template = Region::new();
        let template_block = template.append_block(Block::new(&[(b.dist_token(), location)]));
        self.template(&Emitter::new(*b, template_block, location), stage, &symbol)?;
        let boundary = Region::new();
        let boundary_block = boundary.append_block(Block::new(&[(b.dist_token(), location)]));
        self.boundary(&Emitter::new(*b, boundary_block, location), stage, chunk, &symbol)?;
        dist::Chunk {
            sym_name: &symbol,
            pipeline: PIPELINE,
            stage,
            chunk,
            first_block: first_block(self.spec, stage, chunk),
            blocks: self.spec.chunk_blocks(stage, chunk),
            optional: Default::default(),
        }
        .build(b, location, vec![template, boundary])
    }

    /// One block of the chunk for one microbatch, then its once-per-step
    /// tasks, on the stage's slice. Each task waits for the tasks its
    /// ModelIR op's dataflow reads (the block input when none); the data-
    /// parallel reduction waits for every weight gradient and the optimizer
    /// steps for it; the region yields the tokens no task of it waits for.
    fn template<'c>(&self, e: &Emitter<'c, '_>, stage: u64, symbol: &str) -> Result<(), BuildError> {
        let b = e.b;
        let slice = [-1, count(stage), -1];
        let prefix = format!("{symbol}.");
        let place = Placement { mesh: WORLD, slice: Some(&slice), ranks: None, participants: None, axes: &["tp"], id_prefix: &prefix };
        let map = &self.spec.mapping;
        let invocations = &self.derivation.invocations;
        let first_optimizer = invocations.iter().position(|inv| inv.phase == Phase::Optimizer);
        let dp_bytes = BlockFacts::from_derivation(self.derivation, self.spec).block_dp_size;
        let input: Value = e.block.argument(0).map(Into::into).map_err(|_| BuildError { op: "dist.chunk" })?;
        let element = super::import::element(&b, self.spec.workload.datatype);
        let mut tokens: Vec<Value> = Vec::with_capacity(invocations.len());
        // A compute task's result on one rank (a tensor of its local shard
        // type), which the tasks reading it take instead of its token.
        let mut values: Vec<Option<Value>> = Vec::with_capacity(invocations.len());
        // And its shape (a collective's: what it leaves on the rank).
        let mut shapes: Vec<Option<Vec<u64>>> = Vec::with_capacity(invocations.len());
        // Whether a task's token is waited for by a later one.
        let mut waited = vec![false; invocations.len()];
        let mut reduced = None;
        // The tensor-parallel sums of the partial weight gradients.
        let mut summed: Vec<(&str, Value)> = Vec::new();
        for (index, inv) in invocations.iter().enumerate() {
            if Some(index) == first_optimizer {
                let wgrads: Vec<usize> = (0..index).filter(|&i| invocations[i].phase == Phase::WeightGradient).collect();
                let elem = self.spec.workload.datatype.bytes();
                for (partial, lineage) in self.partial_gradients {
                    // Each waits for its op's weight gradients (all of the
                    // block's when they are fused into another task).
                    let own: Vec<usize> = wgrads.iter().copied().filter(|&i| invocations[i].source == partial.source).collect();
                    let deps = wait_for(if own.is_empty() { &wgrads } else { &own }, &tokens, None, &mut waited, input);
                    let id = format!("{prefix}{}", partial.name());
                    let collective = Collective { kind: CollectiveKind::AllReduce, axis: "tp", lineage, id: &id };
                    let sum = token(e.push(self.step_collective(e, collective, &deps, &slice, partial.message_bytes(elem)))?);
                    summed.push((partial.source.as_str(), sum));
                }
                if map.dp > 1 {
                    // The block's gradients (the partial ones summed),
                    // reduced over the data-parallel axis.
                    let mut deps = wait_for(&wgrads, &tokens, None, &mut waited, input);
                    deps.extend(summed.drain(..).map(|(_, sum)| sum));
                    let kind = if map.optimizer_sharding { CollectiveKind::ReduceScatter } else { CollectiveKind::AllReduce };
                    let id = format!("{prefix}dp.grad_reduce");
                    let collective = Collective { kind, axis: "dp", lineage: "block", id: &id };
                    reduced = Some(token(e.push(self.step_collective(e, collective, &deps, &slice, dp_bytes))?));
                }
            }
            let deps = match (inv.phase, reduced) {
                (Phase::Optimizer, Some(reduced)) => vec![reduced],
                _ => {
                    let own = self.deps.get(index).map_or(&[][..], Vec::as_slice);
                    // A collective reads the tensor of the one task it
                    // follows (a token when that task has none).
                    let mut deps = wait_for(own, &tokens, Some(&values[..]), &mut waited, input);
                    if inv.phase == Phase::Optimizer {
                        // (No data-parallel reduction: its op's sum.)
                        deps.extend(summed.iter().filter(|(source, _)| *source == inv.source).map(|(_, sum)| *sum));
                    }
                    deps
                }
            };
            let shard = match inv.collective {
                None => self.outputs.get(index).cloned().flatten(),
                // On the tensor of the task it follows: its shape after the
                // collective (see `collective_shape`).
                Some(c) => {
                    let own = self.deps.get(index).map_or(&[][..], Vec::as_slice);
                    match own {
                        [only] if values.get(*only).is_some_and(Option::is_some) => {
                            shapes.get(*only).cloned().flatten().and_then(|shape| collective_shape(c.kind, &shape, map.tp))
                        }
                        _ => None,
                    }
                }
            };
            let ty = shard.as_deref().map(|shape| super::import::tensor_type(&b, shape, element));
            let op = emit_invocation(e, inv, place, &(self.lineage)(inv), &deps, ty)?;
            tokens.push(token(op));
            let value = match inv.collective {
                None => ty.and_then(|_| op.result(1).ok()),
                Some(_) => ty.and_then(|_| op.result(0).ok()),
            };
            values.push(value.map(Into::into));
            shapes.push(shard);
        }
        let mut sinks: Vec<Value> = (0..tokens.len()).filter(|&i| !waited[i]).map(|i| tokens[i]).collect();
        if map.dp > 1 && map.optimizer_sharding {
            // The updated parameter shards, gathered back on every replica.
            let steps: Vec<Value> = (0..tokens.len()).filter(|&i| invocations[i].phase == Phase::Optimizer).map(|i| tokens[i]).collect();
            let deps = if steps.is_empty() { vec![input] } else { steps };
            sinks.retain(|t| !deps.contains(t));
            let id = format!("{prefix}dp.param_gather");
            let collective = Collective { kind: CollectiveKind::AllGather, axis: "dp", lineage: "block", id: &id };
            sinks.push(token(e.push(self.step_collective(e, collective, &deps, &slice, dp_bytes))?));
        }
        e.push(dist::Yield { optional: dist::YieldOptional { ..Default::default() }, values: &sinks }.build(&b, e.anchor))?;
        Ok(())
    }

    /// A once-per-step collective of the optimizer phase over one mesh axis.
    fn step_collective<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        Collective { kind, axis, lineage, id }: Collective,
        deps: &[Value<'c, 'a>],
        slice: &[i64],
        bytes: u64,
    ) -> Result<melior::ir::Operation<'c>, BuildError> {
        let (&previous, deps) = deps.split_first().ok_or(BuildError { op: "dist once-per-step collective" })?;
        let location = e.at(id);
        let axes = Some(e.b.strings(&[axis]));
        let phase = ods::Phase::Optimizer;
        match kind {
            CollectiveKind::AllReduce => dist::AllReduce {
                input: previous,
                deps,
                id,
                mesh: WORLD,
                phase,
                lineage,
                message_bytes: bytes,
                reduction: Reduction::Sum,
                optional: dist::AllReduceOptional { mesh_axes: axes, slice: Some(slice), ..Default::default() },
            }
            .build(&e.b, location),
            CollectiveKind::ReduceScatter => dist::ReduceScatter {
                input: previous,
                deps,
                id,
                mesh: WORLD,
                phase,
                lineage,
                message_bytes: bytes,
                reduction: Reduction::Sum,
                results: &[e.token],
                optional: dist::ReduceScatterOptional { mesh_axes: axes, slice: Some(slice), ..Default::default() },
            }
            .build(&e.b, location),
            CollectiveKind::AllGather => dist::AllGather {
                input: previous,
                deps,
                id,
                mesh: WORLD,
                phase,
                lineage,
                message_bytes: bytes,
                results: &[e.token],
                optional: dist::AllGatherOptional { mesh_axes: axes, slice: Some(slice), ..Default::default() },
            }
            .build(&e.b, location),
        }
    }

    /// The chunk's cross-stage transfers of one microbatch: its output to
    /// the next chunk in model order, its input gradient to the previous.
    fn boundary<'c>(&self, e: &Emitter<'c, '_>, stage: u64, chunk: u64, symbol: &str) -> Result<(), BuildError> {
        let (p, v) = (self.spec.mapping.pp, self.spec.mapping.pipeline_interleaving);
        let virtual_index = chunk * p + stage;
        let bytes = pipeline_message_bytes(self.spec);
        let mut previous: Value = e.block.argument(0).map(Into::into).map_err(|_| BuildError { op: "dist.chunk" })?;
        let sends = [
            (virtual_index + 1 < p * v, "send_activation", Phase::Forward, (stage + 1) % p, &self.boundary_lineage[0]),
            (virtual_index > 0, "send_gradient", Phase::ActivationGradient, (stage + p - 1) % p, &self.boundary_lineage[1]),
        ];
        for (exists, name, phase, dest, lineage) in sends {
            if !exists || p == 1 {
                continue;
            }
            let id = format!("{symbol}.{name}");
            previous = token(
                e.push(
                    dist::P2P {
                        input: previous,
                        deps: &[],
                        id: &id,
                        mesh: WORLD,
                        phase: crate::ir::ods::phase_case(phase),
                        lineage,
                        message_bytes: bytes,
                        source: count(stage),
                        dest: count(dest),
                        optional: dist::P2POptional { along: Some("pp"), ..Default::default() },
                    }
                    .build(&e.b, e.at(&id)),
                )?,
            );
        }
        e.push(dist::Yield { values: &[previous], optional: Default::default() }.build(&e.b, e.anchor))?;
        Ok(())
    }
}

/// What waiting for the tasks `indices` takes: each one's local result
/// where it has one and `values` are taken, else its token (the block
/// input when none); each is marked as waited for.
fn wait_for<'c, 'a>(
    indices: &[usize],
    tokens: &[Value<'c, 'a>],
    values: Option<&[Option<Value<'c, 'a>>]>,
    waited: &mut [bool],
    input: Value<'c, 'a>,
) -> Vec<Value<'c, 'a>> {
    let value = |i: usize| values.and_then(|v| v.get(i).copied().flatten());
    let deps: Vec<Value> = indices.iter().filter_map(|&i| value(i).or_else(|| tokens.get(i).copied())).collect();
    for &i in indices {
        if let Some(w) = waited.get_mut(i) {
            *w = true;
        }
    }
    if deps.is_empty() {
        vec![input]
    } else {
        deps
    }
}

/// The shape a tensor-parallel collective leaves on a rank, given the
/// rank's input: an all-reduce keeps it; an all-gather joins the `tp`
/// ranks' parts of the sequence (dimension 1 of `[b, s, h]`), a
/// reduce-scatter leaves each its part. `None` when the input is not an
/// activation the collective can split.
fn collective_shape(kind: CollectiveKind, input: &[u64], tp: u64) -> Option<Vec<u64>> {
    const SEQUENCE: usize = 1;
    let mut shape = input.to_vec();
    match kind {
        CollectiveKind::AllReduce => {}
        CollectiveKind::AllGather if shape.len() == 3 => shape[SEQUENCE] = shape[SEQUENCE].checked_mul(tp)?,
        CollectiveKind::ReduceScatter if shape.len() == 3 && tp > 0 && shape[SEQUENCE].is_multiple_of(tp) => shape[SEQUENCE] /= tp,
        _ => return None,
    }
    Some(shape)
}

/// A once-per-step collective: its kind, mesh axis, lineage and id.
struct Collective<'s> {
    kind: CollectiveKind,
    axis: &'s str,
    lineage: &'s str,
    id: &'s str,
}
