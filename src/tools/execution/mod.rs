//! Running lowered programs: the standard pipeline from runtime calls to the
//! LLVM dialect, and a JIT that refuses to exist for a module it cannot run
//! (melior's `ExecutionEngine::new` hands back a null engine instead).

use melior::{ir::Module, Context};
use thiserror::Error;

/// From `dist` with async ops to the LLVM dialect: Blueprint's async and
/// runtime lowering, then bufferization with ownership-based deallocation
/// (so nothing allocated for a call leaks; clones of results that are not
/// owned, such as constants, become copies) and the standard conversions.
pub const TO_LLVM_PIPELINE: &str = "builtin.module(\
    dist-async, dist-sink-waits, dist-canonicalize, lower-dist-to-runtime, \
    func.func(convert-elementwise-to-linalg), \
    one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}, \
    buffer-results-to-out-params, ownership-based-buffer-deallocation, canonicalize, \
    buffer-deallocation-simplification, bufferization-lower-deallocations, convert-bufferization-to-memref, \
    convert-linalg-to-loops, expand-strided-metadata, lower-affine, convert-scf-to-cf, \
    finalize-memref-to-llvm, convert-arith-to-llvm, convert-index-to-llvm, convert-func-to-llvm, \
    convert-cf-to-llvm, reconcile-unrealized-casts)";

/// The same program on MLIR's own MPI path: `lower-dist-to-mpi` (what the
/// upstream `mpi` dialect covers), bufferization, and `convert-to-llvm`,
/// which lowers the `mpi` ops to MPICH calls. Without deallocation: the
/// upstream `mpi` ops declare no memory effects, which
/// `ownership-based-buffer-deallocation` refuses, so buffers are not freed.
pub const TO_LLVM_VIA_MPI_PIPELINE: &str = "builtin.module(\
    lower-dist-to-mpi, func.func(convert-elementwise-to-linalg), \
    one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}, \
    buffer-results-to-out-params, canonicalize, convert-bufferization-to-memref, \
    convert-linalg-to-loops, expand-strided-metadata, lower-affine, convert-scf-to-cf, \
    finalize-memref-to-llvm, convert-arith-to-llvm, convert-index-to-llvm, convert-func-to-llvm, \
    convert-cf-to-llvm, convert-to-llvm, reconcile-unrealized-casts)";

/// From `@train_step` on tensors (`convert-model-to-linalg`) to the LLVM
/// dialect: bufferization with every result an out-param (public
/// signatures included, so the caller owns every buffer), deallocation,
/// `linalg` matmuls as calls of the runtime's kernels
/// (`convert-linalg-matmul-to-kernels`), the rest to loops, and the
/// standard conversions.
pub const TRAIN_STEP_TO_LLVM_PIPELINE: &str = "builtin.module(\
    symbol-dce, one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}, \
    buffer-results-to-out-params{modify-public-functions hoist-static-allocs}, ownership-based-buffer-deallocation, canonicalize, \
    buffer-deallocation-simplification, bufferization-lower-deallocations, convert-bufferization-to-memref, \
    convert-linalg-matmul-to-kernels, convert-linalg-to-loops, expand-strided-metadata, lower-affine, convert-scf-to-cf, math-expand-ops, convert-math-to-llvm, \
    finalize-memref-to-llvm, convert-arith-to-llvm, convert-index-to-llvm, convert-func-to-llvm, \
    convert-cf-to-llvm, reconcile-unrealized-casts)";

#[derive(Debug, Error)]
pub enum ExecutionError {
    #[error("invalid pipeline: {0}")]
    Pipeline(String),
    #[error("lowering to the LLVM dialect failed (see the diagnostics)")]
    Lowering,
    #[error("the module could not be JIT-compiled (is it fully lowered to the LLVM dialect?)")]
    Jit,
    #[error("function '{0}' is not in the compiled module")]
    MissingFunction(String),
}

/// Runs `pipeline` (Blueprint and upstream passes, Blueprint's verifiers
/// after each) over `module`.
///
/// # Errors
/// A malformed pipeline, or a failing pass (diagnostics went to the
/// context's handler).
pub fn run_pipeline(context: &Context, module: &mut Module, pipeline: &str) -> Result<(), ExecutionError> {
    crate::tools::pipeline::run_pipeline(context, module, pipeline).map_err(|e| match e {
        crate::error::Error::Pipeline { reason, .. } if reason.starts_with("a pass failed") => ExecutionError::Lowering,
        other => ExecutionError::Pipeline(other.to_string()),
    })
}

/// The upstream runner utilities (`printMemrefF32`, `memrefCopy`, ...),
/// where installed: `$BLUEPRINT_RUNNER_UTILS_DIR`, else LLVM 22's lib/.
#[must_use]
pub fn runner_utils() -> Vec<String> {
    let mut dirs = Vec::new();
    if let Ok(dir) = std::env::var("BLUEPRINT_RUNNER_UTILS_DIR") {
        dirs.push(dir);
    }
    dirs.push("/usr/lib/llvm-22/lib".into());
    for dir in dirs {
        let libs: Vec<String> = ["libmlir_c_runner_utils.so", "libmlir_runner_utils.so"].iter().map(|l| format!("{dir}/{l}")).collect();
        if libs.iter().all(|l| std::path::Path::new(l).exists()) {
            return libs;
        }
    }
    Vec::new()
}

/// A JIT-compiled module.
pub struct Jit {
    raw: mlir_sys::MlirExecutionEngine,
}

impl Jit {
    /// Compiles a module lowered to the LLVM dialect; `symbols` are bound
    /// before anything is looked up (e.g. the runtime's entry points).
    pub fn new(module: &Module, symbols: &[(&str, *mut ())]) -> Result<Self, ExecutionError> {
        Self::with_libraries(module, symbols, &[])
    }

    /// [`Jit::new`], also loading the shared libraries at `libraries` (paths;
    /// e.g. MLIR's runner utilities for `printMemrefF32`).
    pub fn with_libraries(module: &Module, symbols: &[(&str, *mut ())], libraries: &[String]) -> Result<Self, ExecutionError> {
        // The engine reads the paths as C strings: NUL-terminated copies.
        let owned: Vec<String> = libraries.iter().map(|l| format!("{l}\0")).collect();
        let paths: Vec<mlir_sys::MlirStringRef> =
            owned.iter().map(|l| mlir_sys::MlirStringRef { data: l.as_ptr().cast(), length: l.len() - 1 }).collect();
        // SAFETY: the module is live; `paths` (and the strings) outlive the call.
        let raw = unsafe { mlir_sys::mlirExecutionEngineCreate(module.to_raw(), 2, paths.len() as i32, paths.as_ptr(), false, false) };
        if raw.ptr.is_null() {
            return Err(ExecutionError::Jit);
        }
        let jit = Self { raw };
        for (name, address) in symbols {
            let name_ref = mlir_sys::MlirStringRef { data: name.as_ptr().cast(), length: name.len() };
            // SAFETY: the engine is live; `address` is a function of the
            // signature the module declares for `name` (the runtime's table).
            unsafe { mlir_sys::mlirExecutionEngineRegisterSymbol(jit.raw, name_ref, address.cast()) };
        }
        Ok(jit)
    }

    /// The address of a compiled function (use `_mlir_ciface_<name>` for
    /// functions with `llvm.emit_c_interface`).
    pub fn lookup(&self, name: &str) -> Result<*mut (), ExecutionError> {
        let name_ref = mlir_sys::MlirStringRef { data: name.as_ptr().cast(), length: name.len() };
        // SAFETY: the engine is live.
        let address = unsafe { mlir_sys::mlirExecutionEngineLookup(self.raw, name_ref) };
        if address.is_null() {
            Err(ExecutionError::MissingFunction(name.to_string()))
        } else {
            Ok(address.cast())
        }
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        // SAFETY: created by `mlirExecutionEngineCreate`, destroyed once.
        unsafe { mlir_sys::mlirExecutionEngineDestroy(self.raw) }
    }
}

#[cfg(test)]
mod tests;
