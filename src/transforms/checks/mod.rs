//! Checks as passes: cross-layer properties that no single op's verifier
//! can see. Each runs on any input file, reports at the op that breaks the
//! property and fails the pipeline; none changes the IR.
//!
//! - `check-mesh-strategy`: the mesh has `dp x pp x tp` ranks of the bound
//!   strategy and tensor-parallel collectives span `tp` ranks;
//! - `check-collective-groups`: a collective's participants are exactly the
//!   ranks of the mesh axes it claims (`mesh_axes`);
//! - `check-conservation`: work, bytes and message volume are conserved from
//!   the model (derived under the bound strategy) to the dist program and
//!   to the plan, per task and per phase, and memory facts match;
//! - `check-recompute`: recompute tasks are exactly the forward clones the
//!   recompute policy implies.

use std::collections::{BTreeMap, HashMap};

use melior::{ir::OperationRef, pass::ExternalPass};

use crate::{
    analysis::workload::{derive_training_block, BlockFacts, InferenceSpec, Phase, TrainingSpec},
    dialect::{
        dist::mesh::Meshes,
        model::binding::{read_spec, INFERENCE_SPEC, TRAINING_SPEC},
        summary::{layer_work_visiting, ops_and_kinds, task_count, task_facts, task_heads, PhaseTotals, TaskClass, TaskWork, Totals},
        verify::checker::Checker,
    },
    ir::{
        lineage::base_id,
        ods::OpKind,
        raw::FxMap,
        read::{attr_string_list, collect_ops, i64_array_attr, is_string_list, str_attr, AttrName},
    },
};

/// A check pass: runs `$body` with a [`Checker`] and fails if it reported.
macro_rules! check_pass {
    ($name:literal, $argument:literal, $summary:literal, $body:path) => {
        crate::ir::pass_macro::external_pass!($name, $argument, $summary, |module: OperationRef, pass: ExternalPass| {
            let mut checker = Checker::default();
            $body(&mut checker, module);
            if checker.failed() {
                pass.signal_failure();
            }
        });
    };
}

mod mesh_strategy {
    use super::*;
    check_pass!(
        "CheckMeshStrategy",
        "check-mesh-strategy",
        "Check that the mesh, the pipeline and the tensor- and data-parallel groups agree with the bound strategy",
        check
    );

    fn check(checker: &mut Checker, module: OperationRef) {
        let Some(bound) = bound_strategy(checker, module) else { return };
        let (world, tp, dp, formula) = match &bound {
            Bound::Training(spec) => {
                (spec.mapping.dp * spec.mapping.pp * spec.mapping.tp, spec.mapping.tp, spec.mapping.dp, "dp x pp x tp")
            }
            Bound::Inference(spec) => (spec.mapping.pp * spec.mapping.tp, spec.mapping.tp, 1, "pp x tp"),
        };
        let (ops, kinds) = ops_and_kinds(module);
        let mesh_ops: Vec<OperationRef> =
            ops.iter().zip(&kinds).filter(|(_, k)| **k == Some(OpKind::DistMesh)).map(|(op, _)| *op).collect();
        let meshes = Meshes::of(&mesh_ops);
        // Read of every op: names compared by handle (and an absent one
        // allocates no error).
        let names = ops.first().map(|op| {
            (AttrName::new(*op, "mesh_axes"), AttrName::new(*op, "participants"), AttrName::new(*op, "ranks"), AttrName::new(*op, "mesh"))
        });
        // Group sizes by the (uniqued) mesh attribute and the axes: many
        // collectives name one mesh.
        let mut group_sizes: FxMap<(usize, usize), Option<u64>> = FxMap::default();
        for (op, kind) in ops.into_iter().zip(kinds) {
            match kind {
                Some(OpKind::DistMesh) => {
                    let ranks: i64 = i64_array_attr(op, "shape").unwrap_or_default().iter().product();
                    if u64::try_from(ranks).ok() != Some(world) {
                        checker.error(op, format!("has {ranks} ranks, but the strategy needs {formula} = {world}"));
                    }
                    continue;
                }
                Some(kind @ (OpKind::DistPipeline | OpKind::PlanPipeline)) => {
                    if let Bound::Training(spec) = &bound {
                        check_pipeline(checker, op, kind, spec);
                    }
                    continue;
                }
                _ => {}
            }
            let Some((mesh_axes, participants, ranks, mesh)) = names else { continue };
            let Some(claimed) = mesh_axes.of(op) else { continue };
            // Compared in place: most ops are no collective of these axes.
            let (want, what, axes): (u64, &str, &[&str]) = if is_string_list(claimed, &["tp"]) {
                (tp, "tp", &["tp"])
            } else if is_string_list(claimed, &["tp_kv", "tp_rep"]) {
                (tp, "tp", &["tp_kv", "tp_rep"])
            } else if is_string_list(claimed, &["dp"]) {
                (dp, "dp", &["dp"])
            } else {
                continue;
            };
            // Dist collectives list their participants or span mesh axes;
            // plan tasks count ranks.
            let n = participants
                .of(op)
                .and_then(crate::ir::read::i64_array_value)
                .map(|p| p.len() as u64)
                .or_else(|| ranks.of(op).and_then(crate::ir::read::int_value).and_then(|r| u64::try_from(r).ok()))
                .or_else(|| {
                    let key = (mesh.of(op).map_or(0, |m| melior::ir::AttributeLike::to_raw(&m).ptr as usize), axes.as_ptr() as usize);
                    *group_sizes.entry(key).or_insert_with(|| meshes.of_op(op).and_then(|m| m.group_size(axes)))
                })
                .unwrap_or(0);
            if n != want {
                let kind = if what == "tp" { "tensor" } else { "data" };
                checker.error(op, format!("is a {kind}-parallel collective over {n} ranks, but the strategy has {what} = {want}"));
            }
        }
    }

    /// The pipeline has the strategy's stages, chunks, microbatches, blocks
    /// and schedule.
    fn check_pipeline(checker: &mut Checker, op: OperationRef, kind: OpKind, spec: &TrainingSpec) {
        let schedule = crate::analysis::schedule::Schedule::of(spec);
        let want = [
            ("stages", schedule.stages, "pp"),
            ("chunks", schedule.chunks, "pipeline_interleaving"),
            ("microbatches", schedule.microbatches, "batch / (microbatch x dp)"),
            ("blocks", spec.model.blocks, "blocks"),
        ];
        for (attribute, value, source) in want {
            let found = crate::ir::read::u64_attr(op, attribute);
            if found != Some(value) {
                let found = found.map_or_else(|| "none".to_string(), |f| f.to_string());
                checker.error(op, format!("'{}' has {attribute} = {found}, but the strategy has {source} = {value}", kind.name()));
            }
        }
        let named = crate::ir::read::enum_attr::<crate::ir::ods::PipelineSchedule>(op, "schedule");
        let expected = crate::transforms::transformer::distribute::schedule_case(schedule.kind);
        if named != Some(expected) {
            let found = named.map_or("(none)", crate::ir::ods::PipelineSchedule::name);
            checker.error(op, format!("'{}' runs schedule '{found}', but the strategy's is '{}'", kind.name(), expected.name()));
        }
    }
}

mod collective_groups {
    use super::*;
    check_pass!(
        "CheckCollectiveGroups",
        "check-collective-groups",
        "Check that each collective's participants are the mesh group it claims",
        check
    );

    fn check(checker: &mut Checker, module: OperationRef) {
        let ops = collect_ops(module);
        let mut kinds = crate::ir::read::KindMemo::default();
        let meshes: HashMap<String, (Vec<String>, Vec<i64>)> = ops
            .iter()
            .filter(|op| kinds.of(**op) == Some(OpKind::DistMesh))
            .filter_map(|op| {
                Some((str_attr(*op, "sym_name")?.to_string(), (attr_string_list(*op, "axes")?, i64_array_attr(*op, "shape")?)))
            })
            .collect();
        let Some(listed) = ops.first().map(|op| AttrName::new(*op, "participants")) else { return };
        for op in ops {
            // Most ops list no participants: look (by the name's handle)
            // before reading lists.
            if !listed.on(op) {
                continue;
            }
            let (Some(claimed), Some(participants)) = (attr_string_list(op, "mesh_axes"), i64_array_attr(op, "participants")) else {
                continue;
            };
            let Some((axes, shape)) = crate::ir::read::symbol_attr(op, "mesh").and_then(|m| meshes.get(m)) else { continue };
            let through = participants.first().copied().unwrap_or(0);
            if let Err(message) = check_group(axes, shape, &claimed, &participants) {
                checker.error(op, format!("claims mesh axes {claimed:?}, whose group through rank {through} {message}"));
            }
        }
    }

    /// Whether `participants` are exactly the ranks that differ from the
    /// first participant only along the `claimed` axes. Linear in the
    /// participants: the group is never materialized beyond their count.
    pub(super) fn check_group(axes: &[String], shape: &[i64], claimed: &[String], participants: &[i64]) -> Result<(), String> {
        let varying: Vec<usize> = claimed
            .iter()
            .map(|a| axes.iter().position(|x| x == a).ok_or_else(|| format!("does not exist: the mesh has no axis '{a}'")))
            .collect::<Result<_, _>>()?;
        let size = varying.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(shape[d]).ok()?));
        if size != Some(participants.len()) {
            let size = size.map_or_else(|| "more than 2^64".to_string(), |s| s.to_string());
            return Err(format!("has {size} ranks, but there are {} participants", participants.len()));
        }
        let Some(&first) = participants.first() else { return Ok(()) };
        let mut sorted = participants.to_vec();
        sorted.sort_unstable();
        let group = group_of(shape, &varying, first);
        for (k, (want, got)) in group.zip(&sorted).enumerate() {
            if want != *got {
                return Err(format!("has rank {want} at position {k} (in increasing order), but the participants have {got}"));
            }
        }
        Ok(())
    }

    /// The ranks that differ from `rank` only along the `varying` axes, in
    /// increasing order (row-major numbering), as the runtime builds them.
    pub(super) fn group_of<'s>(shape: &'s [i64], varying: &'s [usize], rank: i64) -> impl Iterator<Item = i64> + 's {
        crate::runtime::mesh::axis_group(shape, varying, rank)
    }
}

mod conservation {
    use super::*;
    check_pass!(
        "CheckConservation",
        "check-conservation",
        "Check that work, bytes, message volume and memory are conserved from model to dist to plan",
        check
    );

    fn check(checker: &mut Checker, module: OperationRef) {
        // One walk serves both layers; each task's op locates its diagnostics.
        let (ops, kinds) = ops_and_kinds(module);
        // Of the dist tasks, what the comparisons read of each, and whole
        // only those the block facts read (a step has hundreds of
        // thousands of tasks; a whole record of each was most of the pass's
        // memory).
        let mut sources = Vec::with_capacity(task_count(&kinds, "dist"));
        let mut dist_totals = PhaseTotals::default();
        let dist = layer_work_visiting(&ops, &kinds, "dist", |task, op| {
            sources.push(Source::of(task, op));
            dist_totals.add(task);
            task.feeds_block_facts()
        });
        let dist_totals = dist_totals.into_map();
        let is_inference = dist_totals.contains_key("prefill") || dist_totals.contains_key("decode");
        // Compared with the model's and with the plan's: read once.
        let mut dist_facts = None;

        // Model -> dist: each invocation of the model's derivation under the
        // bound strategy is one dist task with the same facts.
        let has_model =
            kinds.iter().any(|k| matches!(k, Some(OpKind::ModelDecoderTraining | OpKind::ModelDecoderInference | OpKind::ModelMatmul)));
        if has_model && !sources.is_empty() {
            match crate::dialect::summary::model_work_in(module, &ops, &kinds) {
                Err(e) => checker.error(module, e.to_string()),
                Ok((model, facts)) => {
                    compare_tasks(checker, &model.tasks, &sources, "model", module);
                    compare_phases(checker, module, "model", &model.phase_totals(), "dist", &dist_totals);
                    if let Some(facts) = facts {
                        compare_facts(checker, module, "model", &facts, "dist", dist_facts.get_or_insert_with(|| dist.block_facts()));
                    }
                }
            }
        }
        // Dist -> plan, per task (by lineage) as the plan's tasks are read,
        // and in total; of the plan's tasks only those the block facts read
        // are kept. The source of a plan task is found by position while the plan
        // follows the dist program's order (as planning emits it): each
        // look-up then reads the next dist task, not a random slot of a
        // map of them all. On the first miss a map of ids is built (a later
        // task of the same id wins, as a map built in order; ids are
        // unique in a verified dist program, so both find the same task).
        let mut by_id: Option<FxMap<&str, usize>> = None;
        let mut next = 0usize;
        let mut planned_tasks = 0usize;
        let mut plan_totals = PhaseTotals::default();
        let plan = layer_work_visiting(&ops, &kinds, "plan", |planned, op| {
            planned_tasks += 1;
            plan_totals.add(planned);
            let lineage = planned.lineage.unwrap_or_default();
            let at = match sources.get(next) {
                Some(task) if task.id == lineage => Some(next),
                _ => {
                    let by_id = by_id.get_or_insert_with(|| {
                        let mut by_id = FxMap::default();
                        by_id.reserve(sources.len());
                        for (i, task) in sources.iter().enumerate() {
                            by_id.insert(&*task.id, i);
                        }
                        by_id
                    });
                    by_id.get(lineage).copied()
                }
            };
            if let Some(at) = at {
                next = at + 1;
            }
            match at.map(|at| &sources[at]) {
                None => checker.error(op, format!("has lineage '{lineage}', which is no task of the dist program")),
                Some(source) => {
                    let got = (planned.ops, planned.read_bytes, planned.write_bytes, planned.message_bytes, planned.phase);
                    let want = (source.ops, source.read_bytes, source.write_bytes, source.message_bytes, source.phase);
                    if got != want {
                        checker.error(op, format!("facts disagree with its source dist task '{lineage}': (ops, read, write, message bytes, phase) = {got:?}, source {want:?}"));
                    } else if planned.runs != source.runs {
                        checker.error(
                            op,
                            format!(
                                "runs {} times in the step, but its source dist task '{lineage}' runs {} times",
                                planned.runs, source.runs
                            ),
                        );
                    }
                }
            }
            planned.feeds_block_facts()
        });
        if planned_tasks > 0 {
            if planned_tasks != sources.len() {
                checker.error(module, format!("the plan has {planned_tasks} tasks but the dist program has {}", sources.len()));
            }
            compare_phases(checker, module, "dist", &dist_totals, "plan", &plan_totals.into_map());
            let stages = dist.stage_memory.iter().map(|(s, m)| (format!("stage {s} "), m, plan.stage_memory.get(s)));
            for (scope, facts, planned_facts) in std::iter::once((String::new(), &dist.memory, Some(&plan.memory))).chain(stages) {
                for (kind, fact) in facts {
                    let planned = planned_facts.and_then(|p| p.get(kind)).copied().unwrap_or_default();
                    if planned != *fact {
                        checker.error(
                            module,
                            format!(
                            "{scope}{kind} memory is {} bytes over {} ranks in the plan but {} over {} in the dist program (not conserved)",
                            planned.bytes, planned.shared_by, fact.bytes, fact.shared_by
                        ),
                        );
                    }
                }
            }
            if !is_inference {
                compare_facts(checker, module, "dist", dist_facts.get_or_insert_with(|| dist.block_facts()), "plan", &plan.block_facts());
            }
        }
    }

    /// What the comparisons read of one dist task.
    struct Source<'c, 'a> {
        id: std::borrow::Cow<'c, str>,
        op: OperationRef<'c, 'a>,
        ops: u64,
        read_bytes: u64,
        write_bytes: u64,
        message_bytes: u64,
        runs: u64,
        phase: &'static str,
        class: TaskClass,
        primitive: Option<&'static str>,
    }

    impl<'c, 'a> Source<'c, 'a> {
        fn of(task: &TaskWork<'c>, op: OperationRef<'c, 'a>) -> Self {
            Self {
                id: task.id.clone(),
                op,
                ops: task.ops,
                read_bytes: task.read_bytes,
                write_bytes: task.write_bytes,
                message_bytes: task.message_bytes,
                runs: task.runs,
                phase: task.phase,
                class: task.class,
                primitive: task.primitive,
            }
        }
    }

    /// Each expected task (by id) has dist tasks (by their base id: the id
    /// without chunk prefix or instance suffix) with the same facts per run,
    /// running as often in total; every compute or tensor-parallel task
    /// found is expected.
    fn compare_tasks(checker: &mut Checker, expected: &[TaskWork], found: &[Source], source: &str, module: OperationRef) {
        // Expected ids are few; each found task's base id is looked up once
        // and grouped by the expected id it matches, in order.
        let mut group_of: FxMap<&str, usize> = FxMap::default();
        for want in expected {
            let next = group_of.len();
            group_of.entry(&want.id).or_insert(next);
        }
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); group_of.len()];
        let mut unattributable = Vec::new();
        for (i, task) in found.iter().enumerate() {
            match group_of.get(base_id(&task.id)) {
                Some(&group) => groups[group].push(i),
                None if matches!(task.class, TaskClass::Compute | TaskClass::TensorParallel) => unattributable.push(i),
                None => {}
            }
        }
        let at = |i: usize| found.get(i).map_or(module, |task| task.op);
        for want in expected {
            let w = (want.ops, want.read_bytes, want.write_bytes, want.message_bytes);
            let tasks = group_of.get(&*want.id).map_or(&[][..], |&g| &groups[g]);
            let Some(&first) = tasks.first() else {
                checker.error(module, format!("the {source}'s invocation '{}' has no dist task", want.id));
                continue;
            };
            for &i in tasks {
                let task = &found[i];
                if let (Some(got), Some(derived)) = (task.primitive, want.primitive.filter(|_| want.class == TaskClass::Compute)) {
                    if got != derived {
                        checker.error(at(i), format!("computes '{got}', but the {source}'s op for '{}' derives '{derived}'", want.id));
                        continue;
                    }
                }
                let got = (task.ops, task.read_bytes, task.write_bytes, task.message_bytes);
                if got != w || task.phase != want.phase {
                    checker.error(at(i), format!(
                        "does not conserve the {source}'s work for '{}': (ops, read, write, message bytes, phase) = {got:?} {}, derived {w:?} {}",
                        want.id, task.phase, want.phase
                    ));
                }
            }
            let runs: u64 = tasks.iter().map(|&i| found[i].runs).fold(0, u64::saturating_add);
            if runs != want.runs {
                checker.error(
                    at(first),
                    format!(
                        "'{}' runs {runs} times in the step, but the {source} runs it {} times (every block, every microbatch)",
                        want.id, want.runs
                    ),
                );
            }
        }
        for i in unattributable {
            checker.error(at(i), format!("'{}' is not an invocation of the model's derivation (unattributable work)", found[i].id));
        }
    }

    /// Per-phase operations, bytes and message volume are equal.
    fn compare_phases(
        checker: &mut Checker,
        module: OperationRef,
        a: &str,
        lefts: &BTreeMap<&'static str, Totals>,
        b: &str,
        rights: &BTreeMap<&'static str, Totals>,
    ) {
        let phases: std::collections::BTreeSet<&str> = lefts.keys().chain(rights.keys()).copied().collect();
        for phase in phases {
            let (l, r) = (lefts.get(phase).copied().unwrap_or_default(), rights.get(phase).copied().unwrap_or_default());
            let (l, r) = (l.facts(), r.facts());
            if l != r {
                checker.error(module, format!("phase '{phase}' totals (ops, read, write, message bytes) are {r:?} in the {b} layer but {l:?} in the {a} layer (not conserved)"));
            }
        }
    }

    fn compare_facts(checker: &mut Checker, module: OperationRef, a: &str, left: &BlockFacts, b: &str, right: &BlockFacts) {
        for (field, r, l) in right.mismatches(left) {
            checker.error(module, format!("{field} is {r} in the {b} layer but {l} in the {a} layer (not conserved)"));
        }
    }
}

mod recompute {
    use super::*;
    check_pass!(
        "CheckRecompute",
        "check-recompute",
        "Check that recompute tasks are exactly the forward clones the recompute policy implies",
        check
    );

    fn check(checker: &mut Checker, module: OperationRef) {
        // Served blocks recompute nothing.
        let Some(Bound::Training(spec)) = bound_strategy(checker, module) else { return };
        let Ok(derivation) = derive_training_block(&spec) else { return };
        // Ids and phases of every task; the work of the few recompute tasks
        // and of the forward tasks they clone.
        let (ops, kinds) = ops_and_kinds(module);
        let dist = task_heads(&ops, &kinds, "dist");
        let expected: Vec<&str> = derivation.phase(Phase::Recompute).map(|i| i.name.as_str()).collect();
        let found: Vec<usize> = (0..dist.len()).filter(|&i| dist[i].phase == "recompute").collect();
        let at = |i: usize| dist[i].op;
        // (Chunks repeat the block template: ids compare by base id.) The
        // forward tasks cloned are looked up in one pass over the tasks.
        let mut seen = vec![false; expected.len()];
        let mut clones: Vec<(usize, String)> = Vec::new();
        for &i in &found {
            let base = base_id(dist[i].id);
            let mut known = false;
            for (j, id) in expected.iter().enumerate() {
                if *id == base {
                    seen[j] = true;
                    known = true;
                }
            }
            clones.push((i, if known { dist[i].id.replace(".recompute", ".fwd") } else { String::new() }));
        }
        let mut forward: FxMap<&str, Option<usize>> =
            clones.iter().filter(|(_, f)| !f.is_empty()).map(|(_, f)| (f.as_str(), None)).collect();
        if !forward.is_empty() {
            for (i, task) in dist.iter().enumerate() {
                if let Some(slot) = forward.get_mut(task.id) {
                    *slot = Some(i);
                }
            }
        }
        for (i, forward_id) in &clones {
            if forward_id.is_empty() {
                checker.error(
                    at(*i),
                    format!("is a recompute task, but the '{:?}' recompute policy does not clone it", spec.mapping.recompute),
                );
                continue;
            }
            match forward.get(forward_id.as_str()).copied().flatten().map(|f| task_facts(dist[f].op)) {
                None => checker.error(at(*i), format!("clones '{forward_id}', which is not a forward task")),
                Some(fw) if fw != task_facts(dist[*i].op) => {
                    checker.error(at(*i), format!("does not repeat the work of '{forward_id}' exactly"))
                }
                Some(_) => {}
            }
        }
        for (id, seen) in expected.iter().zip(seen) {
            if !seen {
                checker.error(
                    module,
                    format!(
                        "the '{:?}' recompute policy clones '{id}', but the dist program has no such recompute task",
                        spec.mapping.recompute
                    ),
                );
            }
        }
    }
}

/// The strategy bound on the module, training or inference.
enum Bound {
    Training(TrainingSpec),
    Inference(InferenceSpec),
}

fn bound_strategy(checker: &mut Checker, module: OperationRef) -> Option<Bound> {
    use melior::ir::operation::OperationLike;
    if module.attribute(INFERENCE_SPEC).is_ok() {
        return match read_spec(module, INFERENCE_SPEC, |s: &InferenceSpec| s.validate().map_err(|e| e.to_string())) {
            Ok(spec) => Some(Bound::Inference(spec)),
            Err(e) => {
                checker.error(module, e.to_string());
                None
            }
        };
    }
    bound_spec(checker, module).map(Bound::Training)
}

fn bound_spec(checker: &mut Checker, module: OperationRef) -> Option<TrainingSpec> {
    match read_spec(module, TRAINING_SPEC, |s: &TrainingSpec| s.validate().map_err(|e| e.to_string())) {
        Ok(spec) => Some(spec),
        Err(e) => {
            checker.error(module, e.to_string());
            None
        }
    }
}

mod pipeline;

pub use collective_groups::create as create_collective_groups;
pub use conservation::create as create_conservation;
pub use mesh_strategy::create as create_mesh_strategy;
pub use pipeline::create as create_pipeline;
pub use recompute::create as create_recompute;

#[cfg(test)]
mod tests {
    use super::collective_groups::check_group;

    #[test]
    fn groups_follow_row_major_ranks() {
        let axes = ["dp".to_string(), "pp".to_string(), "tp".to_string()];
        let shape = [2, 2, 4];
        assert!(check_group(&axes, &shape, &["tp".into()], &[0, 1, 2, 3]).is_ok());
        assert!(check_group(&axes, &shape, &["tp".into()], &[5, 4, 7, 6]).is_ok());
        assert!(check_group(&axes, &shape, &["dp".into()], &[0, 8]).is_ok());
        assert!(check_group(&axes, &shape, &["pp".into(), "tp".into()], &(8..16).collect::<Vec<_>>()).is_ok());
        assert!(check_group(&axes, &shape, &["ep".into()], &[0]).is_err());
        assert!(check_group(&axes, &shape, &["tp".into()], &[0, 1, 2, 4]).is_err());
        assert!(check_group(&axes, &shape, &["dp".into()], &[0, 1]).is_err());
        // A huge claimed group is rejected from its size alone.
        let wide = [1 << 20, 1 << 20];
        let names = ["a".to_string(), "b".to_string()];
        let err = check_group(&names, &wide, &names, &[0, 1]).unwrap_err();
        assert!(err.contains("1099511627776 ranks"), "{err}");
    }
}
