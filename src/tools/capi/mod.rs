//! The C API (`include/blueprint-c/Blueprint.h`) and the entry points of
//! the `mlir-opt` plugin (`mlirGetDialectPluginInfo`,
//! `mlirGetPassPluginInfo`). Built into `libblueprint.so` by
//! `tools/build-shared.sh` against the host's shared MLIR.
//!
//! Nothing here may unwind into C: every entry point catches panics and
//! turns them, like every other failure, into a failure result and a
//! message.
//!
//! Errors have their own channel: the `...WithStatus` entry points return a
//! [`BlueprintStatus`] and send the reason to a separate error callback
//! (and keep it for [`blueprintGetLastErrorMessage`]); results go to the
//! result callback only. The older entry points, which send both through
//! one callback, are these with one callback for both.

use std::{
    ffi::{c_char, c_void},
    mem::ManuallyDrop,
    panic::{catch_unwind, AssertUnwindSafe},
    sync::atomic::{AtomicBool, Ordering},
};

use melior::{
    ir::{operation::OperationLike, Location, Module, OperationRef},
    Context, ContextRef,
};
use mlir_sys::{
    mlirDialectHandleInsertDialect, mlirDialectHandleLoadDialect, MlirContext, MlirDialectRegistry, MlirLogicalResult, MlirModule,
    MlirOperation, MlirPass, MlirStringCallback, MlirStringRef,
};

use crate::{
    analysis::workload::TrainingSpec,
    tools::{estimate::EstimateArgs, registry::PASSES},
};

extern "C" {
    /// `src/capi/pass_registration.cpp`.
    fn blueprint_register_pass_by_index(index: isize);
}

const SUCCESS: MlirLogicalResult = MlirLogicalResult { value: 1 };
const FAILURE: MlirLogicalResult = MlirLogicalResult { value: 0 };

/// `BlueprintStatus` of `Blueprint.h`: what a `...WithStatus` entry point
/// returns.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlueprintStatus {
    Success = 0,
    /// A null handle or an out-of-range argument.
    InvalidArgument = 1,
    /// A spec that does not parse or breaks a rule.
    InvalidSpec = 2,
    /// A module that does not verify.
    InvalidIr = 3,
    /// The computation could not be done (a system file that cannot be
    /// read or is invalid, a plan that does not fit, ...).
    Failed = 4,
    /// A bug in Blueprint (a caught panic).
    InternalError = 5,
}

/// Why an entry point failed, with its status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapiError {
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    InvalidSpec(String),
    #[error("{0}")]
    InvalidIr(String),
    #[error("{0}")]
    Failed(String),
}

impl CapiError {
    #[must_use]
    pub const fn status(&self) -> BlueprintStatus {
        match self {
            Self::InvalidArgument(_) => BlueprintStatus::InvalidArgument,
            Self::InvalidSpec(_) => BlueprintStatus::InvalidSpec,
            Self::InvalidIr(_) => BlueprintStatus::InvalidIr,
            Self::Failed(_) => BlueprintStatus::Failed,
        }
    }
}

const INTERNAL_ERROR: &str = "blueprint: internal error; please report this with the input";

thread_local! {
    /// The message of this thread's last failed `...WithStatus` call.
    static LAST_ERROR: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// The message of the calling thread's last failed `...WithStatus` call
/// (empty after a success); valid until that thread's next Blueprint call.
#[no_mangle]
pub extern "C" fn blueprintGetLastErrorMessage() -> MlirStringRef {
    LAST_ERROR.with(|last| {
        let last = last.borrow();
        MlirStringRef { data: last.as_ptr().cast::<c_char>(), length: last.len() }
    })
}

/// The name of a status (`"BLUEPRINT_STATUS_INVALID_SPEC"`), a static
/// NUL-terminated string; `"BLUEPRINT_STATUS_UNKNOWN"` for other values.
#[no_mangle]
pub extern "C" fn blueprintStatusGetName(status: i32) -> *const c_char {
    let name: &'static [u8] = match status {
        0 => b"BLUEPRINT_STATUS_SUCCESS\0",
        1 => b"BLUEPRINT_STATUS_INVALID_ARGUMENT\0",
        2 => b"BLUEPRINT_STATUS_INVALID_SPEC\0",
        3 => b"BLUEPRINT_STATUS_INVALID_IR\0",
        4 => b"BLUEPRINT_STATUS_FAILED\0",
        5 => b"BLUEPRINT_STATUS_INTERNAL_ERROR\0",
        _ => b"BLUEPRINT_STATUS_UNKNOWN\0",
    };
    name.as_ptr().cast()
}

/// Runs `f`: its text goes to `on_result`, a failure (or a caught panic) to
/// `on_error` and the thread's last error; returns the status.
fn with_status(
    on_result: MlirStringCallback,
    result_data: *mut c_void,
    on_error: MlirStringCallback,
    error_data: *mut c_void,
    f: impl FnOnce() -> Result<String, CapiError>,
) -> BlueprintStatus {
    let (status, message) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(text)) => {
            LAST_ERROR.with(|last| last.borrow_mut().clear());
            send(on_result, result_data, &text);
            return BlueprintStatus::Success;
        }
        Ok(Err(error)) => (error.status(), error.to_string()),
        Err(_) => (BlueprintStatus::InternalError, INTERNAL_ERROR.to_string()),
    };
    send(on_error, error_data, &message);
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
    status
}

fn logical(status: BlueprintStatus) -> MlirLogicalResult {
    if status == BlueprintStatus::Success {
        SUCCESS
    } else {
        FAILURE
    }
}

fn string_ref(text: &str) -> MlirStringRef {
    MlirStringRef { data: text.as_ptr().cast::<c_char>(), length: text.len() }
}

/// The text of a caller's string reference (lossy: C strings need not be UTF-8).
///
/// # Safety
/// `text` points to `length` readable bytes (or is null with length 0).
unsafe fn text_of(text: MlirStringRef) -> String {
    if text.data.is_null() || text.length == 0 {
        return String::new();
    }
    // SAFETY: the caller's contract.
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(text.data.cast::<u8>(), text.length) }).into_owned()
}

fn send(callback: MlirStringCallback, user_data: *mut c_void, text: &str) {
    if let Some(callback) = callback {
        // SAFETY: the callback's contract is the caller's.
        unsafe { callback(string_ref(text), user_data) };
    }
}

/// Inserts Blueprint's dialects and `func` into `registry`.
#[no_mangle]
pub extern "C" fn blueprintRegisterDialects(registry: MlirDialectRegistry) -> MlirLogicalResult {
    if registry.ptr.is_null() {
        return FAILURE;
    }
    let ok = catch_unwind(|| {
        for handle in crate::ir::pass_macro::dependent_dialects(&[]) {
            // SAFETY: a live registry and a static handle.
            unsafe { mlirDialectHandleInsertDialect(handle.to_raw(), registry) };
        }
    });
    if ok.is_ok() {
        SUCCESS
    } else {
        FAILURE
    }
}

/// Loads Blueprint's dialects and `func` into `context`.
#[no_mangle]
pub extern "C" fn blueprintLoadDialects(context: MlirContext) -> MlirLogicalResult {
    if context.ptr.is_null() {
        return FAILURE;
    }
    let ok = catch_unwind(|| {
        for handle in crate::ir::pass_macro::dependent_dialects(&[]) {
            // SAFETY: a live context and a static handle.
            unsafe { mlirDialectHandleLoadDialect(handle.to_raw(), context) };
        }
    });
    if ok.is_ok() {
        SUCCESS
    } else {
        FAILURE
    }
}

static PASSES_REGISTERED: AtomicBool = AtomicBool::new(false);

/// Registers every pass by name, once.
#[no_mangle]
pub extern "C" fn blueprintRegisterPasses() -> MlirLogicalResult {
    if PASSES_REGISTERED.swap(true, Ordering::SeqCst) {
        return SUCCESS;
    }
    for index in 0..PASSES.len() {
        // SAFETY: the C++ registration calls back into `blueprintCreatePass`.
        unsafe { blueprint_register_pass_by_index(index as isize) };
    }
    SUCCESS
}

#[no_mangle]
pub extern "C" fn blueprintGetNumPasses() -> isize {
    PASSES.len() as isize
}

#[no_mangle]
pub extern "C" fn blueprintGetPassArgument(index: isize) -> MlirStringRef {
    usize::try_from(index).ok().and_then(|i| PASSES.get(i)).map_or_else(|| string_ref(""), |p| string_ref(p.name))
}

#[no_mangle]
pub extern "C" fn blueprintCreatePass(index: isize) -> MlirPass {
    let create = usize::try_from(index).ok().and_then(|i| PASSES.get(i)).map(|p| p.create);
    create.and_then(|create| catch_unwind(create).ok()).map_or(MlirPass { ptr: std::ptr::null_mut() }, |pass| pass.to_raw())
}

fn create_by_name(name: &str) -> MlirPass {
    PASSES.iter().position(|p| p.name == name).map_or(MlirPass { ptr: std::ptr::null_mut() }, |i| blueprintCreatePass(i as isize))
}

/// One `mlirCreateBlueprint<Name>Pass` per pass, and the list of them.
macro_rules! pass_constructors {
    ($({ $function:ident = $argument:literal }),* $(,)?) => {
        $(
            #[doc = concat!("Creates `", $argument, "`.")]
            #[no_mangle]
            pub extern "C" fn $function() -> MlirPass {
                create_by_name($argument)
            }
        )*
        /// (C function, pass argument) of every constructor.
        pub const PASS_CONSTRUCTORS: &[(&str, &str)] = &[$((stringify!($function), $argument)),*];
    };
}

pass_constructors! {
    { mlirCreateBlueprintVerifyPass = "blueprint-verify" },
    { mlirCreateBlueprintModelDecomposeTransformerPass = "model-decompose-transformer" },
    { mlirCreateBlueprintDistributeTransformerTrainingPass = "distribute-transformer-training" },
    { mlirCreateBlueprintDistUnrollSchedulePass = "dist-unroll-schedule" },
    { mlirCreateBlueprintDistributeTransformerInferencePass = "distribute-transformer-inference" },
    { mlirCreateBlueprintPlanTransformerTrainingPass = "plan-transformer-training" },
    { mlirCreateBlueprintPlanTransformerInferencePass = "plan-transformer-inference" },
    { mlirCreateBlueprintCheckMeshStrategyPass = "check-mesh-strategy" },
    { mlirCreateBlueprintCheckCollectiveGroupsPass = "check-collective-groups" },
    { mlirCreateBlueprintCheckConservationPass = "check-conservation" },
    { mlirCreateBlueprintCheckPipelinePass = "check-pipeline" },
    { mlirCreateBlueprintCheckRecomputePass = "check-recompute" },
    { mlirCreateBlueprintDistAsyncPass = "dist-async" },
    { mlirCreateBlueprintDistCanonicalizePass = "dist-canonicalize" },
    { mlirCreateBlueprintLowerDistToRuntimePass = "lower-dist-to-runtime" },
    { mlirCreateBlueprintLowerDistToMpiPass = "lower-dist-to-mpi" },
    { mlirCreateBlueprintDistSinkWaitsPass = "dist-sink-waits" },
    { mlirCreateBlueprintConvertModelToLinalgPass = "convert-model-to-linalg" },
    { mlirCreateBlueprintConvertDistStepToLinalgPass = "convert-dist-step-to-linalg" },
    { mlirCreateBlueprintConvertLinalgMatmulToKernelsPass = "convert-linalg-matmul-to-kernels" }
}

/// Imports a training spec into `context`; the module (owned by the
/// caller) into `*module`, or the reason to `on_error`.
///
/// # Safety
/// `context` is a live context (or null), `spec_json` readable, `module`
/// writable (or null).
#[no_mangle]
pub unsafe extern "C" fn blueprintImportTrainingSpecWithStatus(
    context: MlirContext,
    spec_json: MlirStringRef,
    module: *mut MlirModule,
    on_error: MlirStringCallback,
    error_data: *mut c_void,
) -> BlueprintStatus {
    let null = MlirModule { ptr: std::ptr::null_mut() };
    if !module.is_null() {
        // SAFETY: the caller's contract.
        unsafe { *module = null };
    }
    // SAFETY: the caller's contract.
    let text = unsafe { text_of(spec_json) };
    let mut imported = null;
    let status = with_status(None, std::ptr::null_mut(), on_error, error_data, || {
        if module.is_null() {
            return Err(CapiError::InvalidArgument("blueprintImportTrainingSpec: null module out-parameter".into()));
        }
        if context.ptr.is_null() {
            return Err(CapiError::InvalidArgument("blueprintImportTrainingSpec: null context".into()));
        }
        let spec = TrainingSpec::from_json(&text).map_err(|e| {
            CapiError::InvalidSpec(format!("spec: error: {e}\nspec: note: {}", crate::analysis::workload::schema::REFERENCE_NOTE))
        })?;
        if blueprintLoadDialects(context).value == 0 {
            return Err(CapiError::Failed("blueprintImportTrainingSpec: cannot load the dialects".into()));
        }
        // A reference: the host owns the context.
        // SAFETY: a live context for the whole call.
        let context_ref = unsafe { ContextRef::from_raw(context) };
        // SAFETY: used only within this call.
        let context: &Context = unsafe { context_ref.to_ref() };
        let built: Module = crate::transforms::transformer::import::import_training(context, &spec, Location::new(context, "spec", 1, 1))
            .map_err(|e| CapiError::InvalidSpec(format!("spec: {e}")))?;
        // Ownership goes to the caller (mlirModuleDestroy).
        imported = ManuallyDrop::new(built).to_raw();
        Ok(String::new())
    });
    if status == BlueprintStatus::Success {
        // SAFETY: checked non-null above.
        unsafe { *module = imported };
    }
    status
}

/// Imports a training spec into `context` (the reasons of a failure to
/// `on_error`, a null module returned).
///
/// # Safety
/// `context` is a live context (or null), `spec_json` readable.
#[no_mangle]
pub unsafe extern "C" fn blueprintImportTrainingSpec(
    context: MlirContext,
    spec_json: MlirStringRef,
    on_error: MlirStringCallback,
    user_data: *mut c_void,
) -> MlirModule {
    let mut module = MlirModule { ptr: std::ptr::null_mut() };
    // SAFETY: the caller's contract; `module` is writable.
    let _ = unsafe { blueprintImportTrainingSpecWithStatus(context, spec_json, &raw mut module, on_error, user_data) };
    module
}

/// A verified module's op, or why not (with the verifiers' diagnostics).
fn verified<'c>(module: MlirOperation) -> Result<OperationRef<'c, 'c>, CapiError> {
    if module.ptr.is_null() {
        return Err(CapiError::InvalidArgument("blueprint: null operation".into()));
    }
    // SAFETY: a live operation, the caller's contract.
    let op = unsafe { OperationRef::from_raw(module) };
    // SAFETY: the op's live context.
    let context = unsafe { mlir_sys::mlirOperationGetContext(module) };
    // SAFETY: a live context.
    let (ok, diagnostics) =
        unsafe { crate::ir::diagnostics::capture(context, || op.verify() && crate::dialect::verify::verify_blueprint(op)) };
    if !ok {
        let mut message = String::from("blueprint: the module does not verify");
        for diagnostic in &diagnostics {
            message.push('\n');
            message.push_str(&diagnostic.to_string());
        }
        return Err(CapiError::InvalidIr(message));
    }
    Ok(op)
}

/// The work summary of `module` as JSON to `on_result`; the reason of a
/// failure to `on_error`.
#[no_mangle]
pub extern "C" fn blueprintExportWorkSummaryWithStatus(
    module: MlirOperation,
    on_result: MlirStringCallback,
    result_data: *mut c_void,
    on_error: MlirStringCallback,
    error_data: *mut c_void,
) -> BlueprintStatus {
    with_status(on_result, result_data, on_error, error_data, || {
        let op = verified(module)?;
        let summary = crate::dialect::summary::summarize(op).map_err(|e| CapiError::Failed(format!("blueprint: error: {e}")))?;
        serde_json::to_string_pretty(&summary).map(|t| t + "\n").map_err(|e| CapiError::Failed(e.to_string()))
    })
}

/// The work summary of `module` as JSON (result and reason of a failure
/// both to `callback`).
#[no_mangle]
pub extern "C" fn blueprintExportWorkSummary(
    module: MlirOperation,
    callback: MlirStringCallback,
    user_data: *mut c_void,
) -> MlirLogicalResult {
    logical(blueprintExportWorkSummaryWithStatus(module, callback, user_data, callback, user_data))
}

/// The estimate of `module` on the system file at `system_path`, as JSON
/// to `on_result`; the reason of a failure to `on_error`.
///
/// # Safety
/// `system_path` readable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn blueprintEstimateWithStatus(
    module: MlirOperation,
    system_path: MlirStringRef,
    tp_net: i32,
    pp_net: i32,
    dp_net: i32,
    dp_overlap: bool,
    allow_over_capacity: bool,
    on_result: MlirStringCallback,
    result_data: *mut c_void,
    on_error: MlirStringCallback,
    error_data: *mut c_void,
) -> BlueprintStatus {
    // SAFETY: the caller's contract. A path is bytes, kept as they are.
    let path = std::path::PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(unsafe {
        crate::ir::raw::string_ref_bytes(system_path)
    }));
    with_status(on_result, result_data, on_error, error_data, || {
        let tier = |name: &str, value: i32| {
            usize::try_from(value)
                .map_err(|_| CapiError::InvalidArgument(format!("blueprintEstimate: {name} = {value} is not a tier index")))
        };
        let args = EstimateArgs {
            system: Some(path),
            tp_net: Some(tier("tpNet", tp_net)?),
            pp_net: Some(tier("ppNet", pp_net)?),
            dp_net: Some(tier("dpNet", dp_net)?),
            dp_overlap,
            allow_over_capacity,
            ..EstimateArgs::default()
        };
        let op = verified(module)?;
        let output = crate::tools::estimate::estimate_module(op, "module", &args).map_err(CapiError::Failed)?;
        match output.refusal {
            Some(refusal) => Err(CapiError::Failed(refusal)),
            None => Ok(output.json),
        }
    })
}

/// The estimate of `module` (result and reason of a failure both to
/// `callback`).
///
/// # Safety
/// `system_path` readable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn blueprintEstimate(
    module: MlirOperation,
    system_path: MlirStringRef,
    tp_net: i32,
    pp_net: i32,
    dp_net: i32,
    dp_overlap: bool,
    allow_over_capacity: bool,
    callback: MlirStringCallback,
    user_data: *mut c_void,
) -> MlirLogicalResult {
    // SAFETY: the caller's contract.
    logical(unsafe {
        blueprintEstimateWithStatus(
            module,
            system_path,
            tp_net,
            pp_net,
            dp_net,
            dp_overlap,
            allow_over_capacity,
            callback,
            user_data,
            callback,
            user_data,
        )
    })
}

/// `mlir::PassPluginLibraryInfo` (mlir/Tools/Plugins/PassPlugin.h).
#[repr(C)]
pub struct PassPluginLibraryInfo {
    pub api_version: u32,
    pub plugin_name: *const c_char,
    pub plugin_version: *const c_char,
    pub register_pass_registry_callbacks: extern "C" fn(),
}

/// `mlir::DialectPluginLibraryInfo` (mlir/Tools/Plugins/DialectPlugin.h).
#[repr(C)]
pub struct DialectPluginLibraryInfo {
    pub api_version: u32,
    pub plugin_name: *const c_char,
    pub plugin_version: *const c_char,
    pub register_dialect_registry_callbacks: extern "C" fn(*mut c_void),
}

/// `MLIR_PLUGIN_API_VERSION` of LLVM 22.
const PLUGIN_API_VERSION: u32 = 1;
const PLUGIN_NAME: &[u8] = b"Blueprint\0";
const PLUGIN_VERSION: &[u8] = concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes();

extern "C" fn register_passes_callback() {
    let _ = blueprintRegisterPasses();
}

extern "C" fn register_dialects_callback(registry: *mut c_void) {
    // `wrap(DialectRegistry *)` is the pointer itself.
    let _ = blueprintRegisterDialects(MlirDialectRegistry { ptr: registry });
}

/// The pass plugin's entry point (`mlir-opt --load-pass-plugin`).
#[no_mangle]
pub extern "C" fn mlirGetPassPluginInfo() -> PassPluginLibraryInfo {
    PassPluginLibraryInfo {
        api_version: PLUGIN_API_VERSION,
        plugin_name: PLUGIN_NAME.as_ptr().cast(),
        plugin_version: PLUGIN_VERSION.as_ptr().cast(),
        register_pass_registry_callbacks: register_passes_callback,
    }
}

/// The dialect plugin's entry point (`mlir-opt --load-dialect-plugin`).
#[no_mangle]
pub extern "C" fn mlirGetDialectPluginInfo() -> DialectPluginLibraryInfo {
    DialectPluginLibraryInfo {
        api_version: PLUGIN_API_VERSION,
        plugin_name: PLUGIN_NAME.as_ptr().cast(),
        plugin_version: PLUGIN_VERSION.as_ptr().cast(),
        register_dialect_registry_callbacks: register_dialects_callback,
    }
}

#[cfg(test)]
mod tests;
