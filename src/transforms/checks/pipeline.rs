//! `check-pipeline`: the whole step's pipeline, rule by rule from the IR.
//!
//! - Every cross-stage value is sent once and received by the adjacent
//!   stage: in the structured step, each chunk's boundary holds one forward
//!   `dist.p2p` to the next virtual stage (none on the last) and one
//!   activation-gradient `dist.p2p` to the previous (none on the first),
//!   from its stage to the adjacent one, with the block's message bytes; in
//!   the unrolled step, one of each per microbatch.
//! - Per-stage memory is the sum of its parts: each stage's memory facts are
//!   the block's facts over the blocks its chunks hold, and its stored
//!   activations those of the peak number of (microbatch, chunk) pairs its
//!   own `dist.schedule` keeps between forward and backward (counted here
//!   from the slots, not from the schedule formula).

use std::collections::{BTreeMap, HashMap};

use crate::ir::raw::FxMap;

use melior::ir::{operation::OperationLike, OperationRef};

use super::{bound_spec, Checker, ExternalPass};
use crate::{
    analysis::workload::{derive_training_block, BlockFacts, Recompute},
    ir::{
        ods::{self, OpKind},
        read::{collect_ops, enum_attr, i64_array_attr, str_attr, symbol_attr},
    },
};

check_pass!(
    "CheckPipeline",
    "check-pipeline",
    "Check that every cross-stage value is sent once to the adjacent stage and that per-stage memory is the sum of its parts",
    check
);

/// A pipeline as `dist.pipeline` states it.
struct Pipeline {
    stages: u64,
    chunks: u64,
    microbatches: u64,
    unrolled: bool,
}

fn count(op: OperationRef, name: &str) -> Option<u64> {
    crate::ir::read::u64_attr(op, name)
}

fn check(checker: &mut Checker, module: OperationRef) {
    // One walk, each op's kind read once: the rules below each scan it.
    let (all, kinds) = crate::dialect::summary::ops_and_kinds(module);
    let ops: Vec<(OperationRef, OpKind)> = all.into_iter().zip(kinds).filter_map(|(op, kind)| Some((op, kind?))).collect();
    let pipelines: Vec<(OperationRef, Pipeline)> = ops
        .iter()
        .filter(|(_, kind)| *kind == OpKind::DistPipeline)
        .map(|(op, _)| {
            let get = |name| count(*op, name).unwrap_or(0);
            let unrolled = op.attribute("unrolled").is_ok();
            (*op, Pipeline { stages: get("stages"), chunks: get("chunks"), microbatches: get("microbatches"), unrolled })
        })
        .collect();
    if pipelines.is_empty() {
        return;
    }
    let Some(spec) = bound_spec(checker, module) else { return };
    let facts = match derive_training_block(&spec) {
        Ok(derivation) => BlockFacts::from_derivation(&derivation, &spec),
        Err(e) => return checker.error(module, format!("the bound strategy cannot be derived: {e}")),
    };
    for (op, pipeline) in &pipelines {
        if pipeline.unrolled {
            unrolled_transfers(checker, *op, pipeline, &ops, &facts);
        } else {
            structured_transfers(checker, *op, pipeline, &ops, &facts);
            stage_memory(checker, *op, &ops, spec.mapping.recompute == Recompute::Full);
        }
    }
}

fn is_transfer(kind: OpKind) -> bool {
    matches!(kind, OpKind::DistP2P | OpKind::DistP2PStart)
}

/// What a transfer of virtual stage `c·p + s` must be.
struct Expected {
    phase: ods::Phase,
    from: u64,
    to: u64,
    bytes: u64,
}

fn expected(p: u64, v: u64, stage: u64, chunk: u64, forward: bool, facts: &BlockFacts) -> Option<Expected> {
    let virtual_stage = chunk * p + stage;
    if forward {
        (virtual_stage + 1 < p * v).then(|| Expected {
            phase: ods::Phase::Forward,
            from: stage,
            to: (stage + 1) % p,
            bytes: facts.block_fw_pp_size,
        })
    } else {
        (virtual_stage > 0).then(|| Expected {
            phase: ods::Phase::ActivationGradient,
            from: stage,
            to: (stage + p - 1) % p,
            bytes: facts.block_bw_pp_size,
        })
    }
}

/// Compares one transfer with what its virtual stage must send.
fn compare(checker: &mut Checker, op: OperationRef, want: &Expected) {
    let id = str_attr(op, "id").unwrap_or("?");
    let (from, to, bytes) = (count(op, "source"), count(op, "dest"), count(op, "message_bytes"));
    if str_attr(op, "along") != Some("pp") {
        checker.error(op, format!("transfer '{id}' is not along the pipeline axis \"pp\""));
    }
    if from != Some(want.from) || to != Some(want.to) {
        checker.error(
            op,
            format!(
                "transfer '{id}' goes from stage {} to stage {}; its value belongs from stage {} to the adjacent stage {}",
                from.map_or("?".into(), |v| v.to_string()),
                to.map_or("?".into(), |v| v.to_string()),
                want.from,
                want.to
            ),
        );
    }
    if bytes != Some(want.bytes) {
        checker.error(
            op,
            format!(
                "transfer '{id}' carries {} bytes; the block's {} message is {} bytes",
                bytes.map_or("?".into(), |v| v.to_string()),
                want.phase.name(),
                want.bytes
            ),
        );
    }
}

fn structured_transfers(
    checker: &mut Checker,
    pipeline_op: OperationRef,
    pipeline: &Pipeline,
    ops: &[(OperationRef, OpKind)],
    facts: &BlockFacts,
) {
    let name = str_attr(pipeline_op, "sym_name").unwrap_or_default();
    let (p, v) = (pipeline.stages, pipeline.chunks);
    for (chunk_op, _) in ops.iter().filter(|(op, kind)| *kind == OpKind::DistChunk && symbol_attr(*op, "pipeline") == Some(name)) {
        let (Some(stage), Some(chunk)) = (count(*chunk_op, "stage"), count(*chunk_op, "chunk")) else { continue };
        let transfers: Vec<OperationRef> = crate::ir::read::region_ops(*chunk_op, 1)
            .into_iter()
            .flat_map(collect_ops)
            .filter(|o| OpKind::of(*o).is_some_and(is_transfer))
            .collect();
        for forward in [true, false] {
            let want = expected(p, v, stage, chunk, forward, facts);
            let phase = if forward { ods::Phase::Forward } else { ods::Phase::ActivationGradient };
            let sent: Vec<&OperationRef> = transfers.iter().filter(|t| enum_attr::<ods::Phase>(**t, "phase") == Some(phase)).collect();
            match (&want, sent.as_slice()) {
                (Some(want), [one]) => compare(checker, **one, want),
                (Some(want), []) => {
                    checker.error(*chunk_op, format!("chunk {chunk} of stage {stage} sends no {} value to stage {}", phase.name(), want.to))
                }
                (Some(_), [_, second, ..]) => checker.error(
                    **second,
                    format!(
                        "transfer '{}' sends the {} value of chunk {chunk} of stage {stage} a second time",
                        str_attr(**second, "id").unwrap_or("?"),
                        phase.name()
                    ),
                ),
                (None, []) => {}
                (None, [extra, ..]) => checker.error(
                    **extra,
                    format!(
                        "transfer '{}': chunk {chunk} of stage {stage} is the {} virtual stage and has no {} value to send",
                        str_attr(**extra, "id").unwrap_or("?"),
                        if forward { "last" } else { "first" },
                        phase.name()
                    ),
                ),
            }
        }
    }
}

fn unrolled_transfers(
    checker: &mut Checker,
    pipeline_op: OperationRef,
    pipeline: &Pipeline,
    ops: &[(OperationRef, OpKind)],
    facts: &BlockFacts,
) {
    let (p, v, m) = (pipeline.stages, pipeline.chunks, pipeline.microbatches);
    // (forward?, stage, chunk, microbatch) -> the transfers found.
    let mut sent: FxMap<(bool, u64, u64, u64), OperationRef> = FxMap::default();
    for (op, _) in ops.iter().filter(|(_, kind)| is_transfer(*kind)) {
        let id = str_attr(*op, "id").unwrap_or("?");
        let forward = match enum_attr::<ods::Phase>(*op, "phase") {
            Some(ods::Phase::Forward) => true,
            Some(ods::Phase::ActivationGradient) => false,
            _ => continue,
        };
        let (Some(stage), Some(chunk), Some(mb)) = (count(*op, "stage"), count(*op, "chunk"), count(*op, "microbatch")) else {
            checker.error(*op, format!("transfer '{id}' of the unrolled step names no stage, chunk and microbatch"));
            continue;
        };
        let Some(want) = expected(p, v, stage, chunk, forward, facts).filter(|_| stage < p && chunk < v && mb < m) else {
            checker.error(
                *op,
                format!("transfer '{id}': chunk {chunk} of stage {stage} has no value to send for microbatch {mb} in this direction"),
            );
            continue;
        };
        compare(checker, *op, &want);
        if sent.insert((forward, stage, chunk, mb), *op).is_some() {
            checker.error(*op, format!("transfer '{id}' sends the value of microbatch {mb}, chunk {chunk}, stage {stage} a second time"));
        }
    }
    for stage in 0..p {
        for chunk in 0..v {
            for forward in [true, false] {
                if expected(p, v, stage, chunk, forward, facts).is_none() {
                    continue;
                }
                if let Some(mb) = (0..m).find(|mb| !sent.contains_key(&(forward, stage, chunk, *mb))) {
                    return checker.error(
                        pipeline_op,
                        format!(
                            "the unrolled step sends no {} value of microbatch {mb} from chunk {chunk} of stage {stage}",
                            if forward { "forward" } else { "activation_gradient" }
                        ),
                    );
                }
            }
        }
    }
}

/// The most (microbatch, chunk) pairs between their forward and backward
/// slot, walking the slot triples.
fn peak_from_slots(slots: &[i64]) -> u64 {
    let (mut live, mut peak) = (0i64, 0i64);
    for triple in slots.chunks_exact(3) {
        live += if triple[2] == 0 { 1 } else { -1 };
        peak = peak.max(live);
    }
    u64::try_from(peak).unwrap_or(0)
}

fn stage_memory(checker: &mut Checker, pipeline_op: OperationRef, ops: &[(OperationRef, OpKind)], full_recompute: bool) {
    let name = str_attr(pipeline_op, "sym_name").unwrap_or_default();
    let mut blocks: BTreeMap<u64, (u64, u64)> = BTreeMap::new(); // stage -> (blocks, blocks per chunk)
    let mut slots: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    let mut block_facts: HashMap<ods::MemoryKind, u64> = HashMap::new();
    let mut stage_facts: BTreeMap<u64, Vec<(OperationRef, ods::MemoryKind, u64)>> = BTreeMap::new();
    for (op, kind) in ops {
        match Some(*kind) {
            Some(OpKind::DistChunk) if symbol_attr(*op, "pipeline") == Some(name) => {
                let (Some(stage), Some(n)) = (count(*op, "stage"), count(*op, "blocks")) else { continue };
                let entry = blocks.entry(stage).or_default();
                entry.0 += n;
                entry.1 = n;
            }
            Some(OpKind::DistSchedule) if symbol_attr(*op, "pipeline") == Some(name) => {
                if let Some(stage) = count(*op, "stage") {
                    slots.insert(stage, i64_array_attr(*op, "slots").unwrap_or_default());
                }
            }
            Some(OpKind::DistMemory) => {
                let (Some(kind), Some(bytes)) = (enum_attr::<ods::MemoryKind>(*op, "kind"), count(*op, "bytes")) else { continue };
                match (count(*op, "stage"), count(*op, "block")) {
                    (_, Some(0)) => {
                        block_facts.insert(kind, bytes);
                    }
                    (Some(stage), None) => stage_facts.entry(stage).or_default().push((*op, kind, bytes)),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for (stage, facts) in &stage_facts {
        let Some(&(bpp, per_chunk)) = blocks.get(stage) else { continue };
        let peak = slots.get(stage).map_or(0, |s| peak_from_slots(s)) * per_chunk;
        let block = |kind| block_facts.get(&kind).copied().unwrap_or(0);
        use ods::MemoryKind as K;
        for &(op, kind, bytes) in facts {
            let (want, parts) = match kind {
                K::Weight => (block(K::Weight).saturating_mul(bpp), format!("{bpp} blocks of weights")),
                K::OptimizerState => (block(K::OptimizerState).saturating_mul(bpp), format!("{bpp} blocks of optimizer state")),
                K::WeightGradient => (
                    block(K::WeightGradient).saturating_mul(bpp.saturating_sub(1)),
                    format!("{} blocks of sharded gradients", bpp.saturating_sub(1)),
                ),
                K::ActivationStorage if full_recompute => (0, "no stored activations under full recompute".into()),
                K::ActivationStorage => (
                    block(K::ActivationStorage).saturating_mul(peak.saturating_sub(1)),
                    format!("{peak} blocks in flight at the schedule's peak, less the working one"),
                ),
                K::ActivationCheckpoint if full_recompute => {
                    (block(K::ActivationCheckpoint).saturating_mul(peak), format!("{peak} block checkpoints at the schedule's peak"))
                }
                K::ActivationCheckpoint => (0, "no checkpoints without full recompute".into()),
                other => (block(other), "one block's".into()),
            };
            if bytes != want {
                checker.error(op, format!("stage {stage} states {bytes} bytes of {}; its parts ({parts}) are {want} bytes", kind.name()));
            }
        }
    }
}
