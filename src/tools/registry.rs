//! Every Blueprint pass: its command-line name, a one-line summary and how
//! to create it. The drivers read passes from here; no pass reads it.

use melior::pass::Pass;

/// One Blueprint pass: its command-line name, a one-line summary, and how
/// to create it.
pub struct PassInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub create: fn() -> Pass,
    /// Whether the pass may change the IR. Read-only passes (the checks)
    /// are not followed by the verifier, as MLIR skips verification after
    /// a pass that preserves everything.
    pub changes_ir: bool,
}

/// Every Blueprint pass, in the order `--help` lists them.
pub static PASSES: &[PassInfo] = &[
    PassInfo {
        name: "blueprint-verify",
        summary: "Run Blueprint's layer verifiers (also run after every pass)",
        create: crate::transforms::verify_pass::create,
        changes_ir: false,
    },
    PassInfo {
        name: "model-decompose-transformer",
        summary: "Expand coarse decoder training and inference ops into primitive ModelIR ops with explicit dataflow",
        create: crate::transforms::transformer::decompose::create,
        changes_ir: true,
    },
    PassInfo {
        name: "distribute-transformer-training",
        summary: "Derive the dist program of the whole training step (every block over the pipeline stages, its schedule, data parallelism, memory per stage) from ModelIR and its strategy",
        create: crate::transforms::transformer::distribute::create,
        changes_ir: true,
    },
    PassInfo {
        name: "dist-unroll-schedule",
        summary: "Expand a whole-step dist program (chunks and schedules) into every task instance of the step, in schedule order",
        create: crate::transforms::dist::unroll_schedule::create,
        changes_ir: true,
    },
    PassInfo {
        name: "distribute-transformer-inference",
        summary: "Derive the tensor-parallel dist program of one served block (prefill and decode) from ModelIR and its strategy",
        create: crate::transforms::transformer::distribute_inference::create,
        changes_ir: true,
    },
    PassInfo {
        name: "plan-transformer-training",
        summary: "Turn the dist program into a portable plan with exact work facts and abstract resources",
        create: crate::transforms::transformer::plan::training::create,
        changes_ir: true,
    },
    PassInfo {
        name: "plan-transformer-inference",
        summary: "Same planning for an inference dist program (prefill and decode tasks, KV-cache buffers)",
        create: crate::transforms::transformer::plan::inference::create,
        changes_ir: true,
    },
    PassInfo {
        name: "check-mesh-strategy",
        summary: "Check that the mesh and tensor-parallel groups agree with the bound strategy",
        create: crate::transforms::checks::create_mesh_strategy,
        changes_ir: false,
    },
    PassInfo {
        name: "check-collective-groups",
        summary: "Check that each collective's participants are the mesh group it claims",
        create: crate::transforms::checks::create_collective_groups,
        changes_ir: false,
    },
    PassInfo {
        name: "check-conservation",
        summary: "Check that work, bytes, message volume and memory are conserved from model to dist to plan",
        create: crate::transforms::checks::create_conservation,
        changes_ir: false,
    },
    PassInfo {
        name: "check-pipeline",
        summary: "Check that every cross-stage value is sent once to the adjacent stage and that per-stage memory is the sum of its parts",
        create: crate::transforms::checks::create_pipeline,
        changes_ir: false,
    },
    PassInfo {
        name: "check-recompute",
        summary: "Check that recompute tasks are exactly the forward clones the recompute policy implies",
        create: crate::transforms::checks::create_recompute,
        changes_ir: false,
    },
    PassInfo {
        name: "dist-async",
        summary: "Turn synchronous collectives and point-to-point transfers into start + wait",
        create: crate::transforms::dist::dist_async::create,
        changes_ir: true,
    },
    PassInfo {
        name: "dist-canonicalize",
        summary: "Refine redistribution copy result types and fold producer casts (greedy, to a fixpoint)",
        create: crate::transforms::dist::copy_canonicalize::create,
        changes_ir: true,
    },
    PassInfo {
        name: "lower-dist-to-runtime",
        summary: "Lower async dist communication, redistribution copies, waits and cf.assert to runtime calls",
        create: crate::conversion::dist_to_runtime::create,
        changes_ir: true,
    },
    PassInfo {
        name: "lower-dist-to-mpi",
        summary: "Lower synchronous all-reduce, point-to-point transfers and rank queries to the upstream mpi dialect",
        create: crate::conversion::dist_to_mpi::create,
        changes_ir: true,
    },
    PassInfo {
        name: "dist-sink-waits",
        summary: "Move each dist.wait down to just before the first use of its results",
        create: crate::transforms::dist::sink_waits::create,
        changes_ir: true,
    },
    PassInfo {
        name: "convert-model-to-linalg",
        summary: "Lower decomposed float32 ModelIR to linalg on tensors (and, under a training spec, the whole training step as @train_step)",
        create: crate::conversion::model_to_linalg::create,
        changes_ir: true,
    },
    PassInfo {
        name: "convert-dist-step-to-linalg",
        summary: "Lower the training step a derived program describes to one rank's @train_step on linalg and tensor collectives",
        create: crate::conversion::model_to_linalg::distributed::create,
        changes_ir: true,
    },
    PassInfo {
        name: "convert-linalg-matmul-to-kernels",
        summary: "Replace f32 linalg.matmul / linalg.batch_matmul on memrefs by calls of the runtime's strided matrix-product kernel",
        create: crate::conversion::linalg_to_kernels::create,
        changes_ir: true,
    },
];

/// The verifier the drivers run after every pass that may change the IR:
/// MLIR's verifier and Blueprint's (the pass manager's own verifier is off).
#[must_use]
pub fn create_verify_pass() -> Pass {
    crate::transforms::verify_pass::after_pass::create()
}

/// The drivers' verifier after an upstream pass (whole module).
#[must_use]
pub fn create_whole_verify_pass() -> Pass {
    crate::transforms::verify_pass::after_pass::whole::create()
}

#[must_use]
pub fn find(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}
