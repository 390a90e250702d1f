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

use std::collections::HashMap;

use melior::{ir::OperationRef, pass::ExternalPass};

use crate::{
    ir::{attr_string_list, collect_ops, i64_array_attr, name_of, str_attr},
    lineage::base_id,
    mesh::Meshes,
    ods::OpKind,
    summary::{layer_work, LayerWork, TaskClass, TaskWork},
    transformer::binding::{read_spec, INFERENCE_SPEC, TRAINING_SPEC},
    verify::Checker,
    workload::{derive_training_block, BlockFacts, InferenceSpec, Phase, TrainingSpec},
};

/// A check pass: runs `$body` with a [`Checker`] and fails if it reported.
macro_rules! check_pass {
    ($name:literal, $argument:literal, $summary:literal, $body:path) => {
        crate::pass_macro::external_pass!($name, $argument, $summary, |module: OperationRef, pass: ExternalPass| {
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
        let ops = collect_ops(module);
        let meshes = Meshes::of(&ops);
        for op in ops {
            match OpKind::of(op) {
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
            let Some(axes) = attr_string_list(op, "mesh_axes") else { continue };
            let (want, what) = match axes.as_slice() {
                [a] if a == "tp" => (tp, "tp"),
                [a, b] if a == "tp_kv" && b == "tp_rep" => (tp, "tp"),
                [a] if a == "dp" => (dp, "dp"),
                _ => continue,
            };
            // Dist collectives list their participants or span mesh axes;
            // plan tasks count ranks.
            let n = i64_array_attr(op, "participants")
                .map(|p| p.len() as u64)
                .or_else(|| crate::ir::int_attr(op, "ranks").and_then(|r| u64::try_from(r).ok()))
                .or_else(|| meshes.of_op(op).and_then(|m| m.group_size(&axes)))
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
        let schedule = crate::schedule::Schedule::of(spec);
        let want = [
            ("stages", schedule.stages, "pp"),
            ("chunks", schedule.chunks, "pipeline_interleaving"),
            ("microbatches", schedule.microbatches, "batch / (microbatch x dp)"),
            ("blocks", spec.model.blocks, "blocks"),
        ];
        for (attribute, value, source) in want {
            let found = crate::ir::u64_attr(op, attribute);
            if found != Some(value) {
                let found = found.map_or_else(|| "none".to_string(), |f| f.to_string());
                checker.error(op, format!("'{}' has {attribute} = {found}, but the strategy has {source} = {value}", kind.name()));
            }
        }
        let named = crate::ir::enum_attr::<crate::ods::PipelineSchedule>(op, "schedule");
        let expected = crate::transformer::distribute::schedule_case(schedule.kind);
        if named != Some(expected) {
            let found = named.map_or("(none)", crate::ods::PipelineSchedule::name);
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
        let meshes: HashMap<String, (Vec<String>, Vec<i64>)> = ops
            .iter()
            .filter(|op| OpKind::of(**op) == Some(OpKind::DistMesh))
            .filter_map(|op| {
                Some((str_attr(*op, "sym_name")?.to_string(), (attr_string_list(*op, "axes")?, i64_array_attr(*op, "shape")?)))
            })
            .collect();
        for op in ops {
            let (Some(claimed), Some(participants)) = (attr_string_list(op, "mesh_axes"), i64_array_attr(op, "participants")) else {
                continue;
            };
            let Some((axes, shape)) = crate::ir::symbol_attr(op, "mesh").and_then(|m| meshes.get(m)) else { continue };
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
    /// increasing order (row-major numbering).
    pub(super) fn group_of<'s>(shape: &'s [i64], varying: &'s [usize], rank: i64) -> impl Iterator<Item = i64> + 's {
        let mut coords = vec![0i64; shape.len()];
        let mut rest = rank;
        for d in (0..shape.len()).rev() {
            coords[d] = rest % shape[d].max(1);
            rest /= shape[d].max(1);
        }
        let total: i64 = varying.iter().map(|&d| shape[d]).product();
        (0..total).map(move |mut k| {
            let mut c = coords.clone();
            for &d in varying.iter().rev() {
                c[d] = k % shape[d];
                k /= shape[d];
            }
            c.iter().zip(shape).fold(0, |acc, (x, s)| acc * s + x)
        })
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
        let ops = collect_ops(module);
        let dist = layer_work(module, "dist");
        let plan = layer_work(module, "plan");
        let located: HashMap<String, OperationRef> =
            ops.iter().filter_map(|op| Some((format!("{}:{}", crate::ir::dialect_of(&name_of(*op)), str_attr(*op, "id")?), *op))).collect();
        let at = |layer: &str, id: &str| located.get(&format!("{layer}:{id}")).copied().unwrap_or(module);

        // Model -> dist: each invocation of the model's derivation under the
        // bound strategy is one dist task with the same facts.
        let has_model = ops
            .iter()
            .any(|op| matches!(OpKind::of(*op), Some(OpKind::ModelDecoderTraining | OpKind::ModelDecoderInference | OpKind::ModelMatmul)));
        if has_model && !dist.tasks.is_empty() {
            match crate::summary::model_work(module) {
                Err(e) => checker.error(module, e.to_string()),
                Ok((model, facts)) => {
                    compare_tasks(checker, &model.tasks, &dist.tasks, "model", &|id| at("dist", id), module);
                    compare_phases(checker, module, "model", &model, "dist", &dist);
                    if let Some(facts) = facts {
                        compare_facts(checker, module, "model", &facts, "dist", &dist.block_facts());
                    }
                }
            }
        }
        // Dist -> plan, per task (by lineage) and in total.
        if !plan.tasks.is_empty() {
            let by_id: HashMap<&str, &TaskWork> = dist.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
            let planned_by_id: HashMap<&str, &TaskWork> = plan.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
            for op in &ops {
                if !matches!(OpKind::of(*op), Some(OpKind::PlanComputeTask | OpKind::PlanCollectiveTask)) {
                    continue;
                }
                let lineage = str_attr(*op, "lineage").unwrap_or_default();
                let Some(planned) = str_attr(*op, "id").and_then(|id| planned_by_id.get(id)) else { continue };
                match by_id.get(lineage) {
                    None => checker.error(*op, format!("has lineage '{lineage}', which is no task of the dist program")),
                    Some(source) => {
                        let got = (planned.ops, planned.read_bytes, planned.write_bytes, planned.message_bytes, planned.phase.as_str());
                        let want = (source.ops, source.read_bytes, source.write_bytes, source.message_bytes, source.phase.as_str());
                        if got != want {
                            checker.error(*op, format!("facts disagree with its source dist task '{lineage}': (ops, read, write, message bytes, phase) = {got:?}, source {want:?}"));
                        } else if planned.runs != source.runs {
                            checker.error(
                                *op,
                                format!(
                                    "runs {} times in the step, but its source dist task '{lineage}' runs {} times",
                                    planned.runs, source.runs
                                ),
                            );
                        }
                    }
                }
            }
            if plan.tasks.len() != dist.tasks.len() {
                checker.error(module, format!("the plan has {} tasks but the dist program has {}", plan.tasks.len(), dist.tasks.len()));
            }
            compare_phases(checker, module, "dist", &dist, "plan", &plan);
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
            if !dist.is_inference() {
                compare_facts(checker, module, "dist", &dist.block_facts(), "plan", &plan.block_facts());
            }
        }
    }

    /// Each expected task (by id) has dist tasks (by their base id: the id
    /// without chunk prefix or instance suffix) with the same facts per run,
    /// running as often in total; every compute or tensor-parallel task
    /// found is expected.
    fn compare_tasks<'c, 'a>(
        checker: &mut Checker,
        expected: &[TaskWork],
        found: &[TaskWork],
        source: &str,
        at: &dyn Fn(&str) -> OperationRef<'c, 'a>,
        module: OperationRef<'c, 'a>,
    ) {
        let mut by_base: HashMap<&str, Vec<&TaskWork>> = HashMap::new();
        for task in found {
            by_base.entry(base_id(&task.id)).or_default().push(task);
        }
        for want in expected {
            let w = (want.ops, want.read_bytes, want.write_bytes, want.message_bytes);
            let Some(tasks) = by_base.get(want.id.as_str()) else {
                checker.error(module, format!("the {source}'s invocation '{}' has no dist task", want.id));
                continue;
            };
            for task in tasks {
                let got = (task.ops, task.read_bytes, task.write_bytes, task.message_bytes);
                if got != w || task.phase != want.phase {
                    checker.error(at(&task.id), format!(
                        "does not conserve the {source}'s work for '{}': (ops, read, write, message bytes, phase) = {got:?} {}, derived {w:?} {}",
                        want.id, task.phase, want.phase
                    ));
                }
            }
            let runs: u64 = tasks.iter().map(|t| t.runs).fold(0, u64::saturating_add);
            if runs != want.runs {
                checker.error(
                    at(&tasks[0].id),
                    format!(
                        "'{}' runs {runs} times in the step, but the {source} runs it {} times (every block, every microbatch)",
                        want.id, want.runs
                    ),
                );
            }
        }
        let known: std::collections::HashSet<&str> = expected.iter().map(|t| t.id.as_str()).collect();
        for task in found {
            if matches!(task.class, TaskClass::Compute | TaskClass::TensorParallel) && !known.contains(base_id(&task.id)) {
                checker.error(at(&task.id), "is not an invocation of the model's derivation (unattributable work)");
            }
        }
    }

    /// Per-phase operations, bytes and message volume are equal.
    fn compare_phases(checker: &mut Checker, module: OperationRef, a: &str, left: &LayerWork, b: &str, right: &LayerWork) {
        let phases: std::collections::BTreeSet<&str> = left.tasks.iter().chain(&right.tasks).map(|t| t.phase.as_str()).collect();
        for phase in phases {
            let (l, r) = (left.phase(phase), right.phase(phase));
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
        let dist = layer_work(module, "dist");
        let expected: Vec<&str> = derivation.phase(Phase::Recompute).map(|i| i.name.as_str()).collect();
        let found: Vec<&TaskWork> = dist.tasks.iter().filter(|t| t.phase == "recompute").collect();
        // (Chunks repeat the block template: ids compare by base id.)
        let ids: HashMap<&str, &TaskWork> = dist.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
        let dist_ops: HashMap<&str, OperationRef> = collect_ops(module)
            .into_iter()
            .filter(|op| crate::ir::dialect_of(&name_of(*op)) == "dist")
            .filter_map(|op| Some((str_attr(op, "id")?, op)))
            .collect();
        let at = |id: &str| dist_ops.get(id).copied().unwrap_or(module);
        for task in &found {
            if !expected.contains(&base_id(&task.id)) {
                checker.error(
                    at(&task.id),
                    format!("is a recompute task, but the '{:?}' recompute policy does not clone it", spec.mapping.recompute),
                );
                continue;
            }
            let forward_id = task.id.replace(".recompute", ".fwd");
            match ids.get(forward_id.as_str()) {
                None => checker.error(at(&task.id), format!("clones '{forward_id}', which is not a forward task")),
                Some(fw) if (fw.ops, fw.read_bytes, fw.write_bytes) != (task.ops, task.read_bytes, task.write_bytes) => {
                    checker.error(at(&task.id), format!("does not repeat the work of '{forward_id}' exactly"))
                }
                Some(_) => {}
            }
        }
        for id in expected {
            if !found.iter().any(|t| base_id(&t.id) == id) {
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
