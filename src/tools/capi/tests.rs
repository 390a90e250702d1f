//! The C API in process: the header declares what the library exports,
//! and the entry points fail cleanly on bad input.

use super::*;

const HEADER: &str = include_str!("../../../include/blueprint-c/Blueprint.h");

#[test]
fn every_pass_has_a_constructor_in_the_header() {
    let arguments: Vec<&str> = PASSES.iter().map(|p| p.name).collect();
    let constructed: Vec<&str> = PASS_CONSTRUCTORS.iter().map(|(_, a)| *a).collect();
    assert_eq!(arguments, constructed, "one constructor per registered pass, in registry order");
    for (function, argument) in PASS_CONSTRUCTORS {
        assert!(HEADER.contains(&format!("MlirPass {function}(void);")), "{function} ({argument}) is not declared");
    }
    for function in [
        "blueprintRegisterDialects",
        "blueprintLoadDialects",
        "blueprintRegisterPasses",
        "blueprintGetNumPasses",
        "blueprintGetPassArgument",
        "blueprintCreatePass",
        "blueprintImportTrainingSpec",
        "blueprintExportWorkSummary",
        "blueprintEstimate",
        "blueprintImportTrainingSpecWithStatus",
        "blueprintExportWorkSummaryWithStatus",
        "blueprintEstimateWithStatus",
        "blueprintGetLastErrorMessage",
        "blueprintStatusGetName",
    ] {
        let declared = HEADER.contains(&format!(" {function}(")) || HEADER.contains(&format!("*{function}("));
        assert!(declared, "{function} is not declared");
    }
}

#[test]
fn null_handles_and_bad_indices_fail() {
    assert_eq!(blueprintRegisterDialects(MlirDialectRegistry { ptr: std::ptr::null_mut() }).value, 0);
    assert_eq!(blueprintLoadDialects(MlirContext { ptr: std::ptr::null_mut() }).value, 0);
    assert!(blueprintCreatePass(-1).ptr.is_null());
    assert!(blueprintCreatePass(PASSES.len() as isize).ptr.is_null());
    assert_eq!(blueprintGetPassArgument(99).length, 0);
    let mut messages: Vec<String> = Vec::new();
    unsafe extern "C" fn collect(text: MlirStringRef, data: *mut c_void) {
        let messages = unsafe { &mut *data.cast::<Vec<String>>() };
        messages.push(unsafe { text_of(text) });
    }
    let data = (&raw mut messages).cast::<c_void>();
    assert_eq!(blueprintExportWorkSummary(MlirOperation { ptr: std::ptr::null_mut() }, Some(collect), data).value, 0);
    let module = unsafe { blueprintImportTrainingSpec(MlirContext { ptr: std::ptr::null_mut() }, string_ref("{}"), Some(collect), data) };
    assert!(module.ptr.is_null());
    assert_eq!(messages, ["blueprint: null operation", "blueprintImportTrainingSpec: null context"]);
}

#[test]
fn a_spec_imports_and_a_bad_one_is_reported() {
    let context = crate::ir::context::create_context();
    let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/specs/tiny-pp-dp.json")).expect("spec");
    let raw = context.to_raw();
    let module = unsafe { blueprintImportTrainingSpec(raw, string_ref(&spec), None, std::ptr::null_mut()) };
    assert!(!module.ptr.is_null());
    let module = unsafe { Module::from_raw(module) };
    assert!(module.as_operation().verify());
    let mut messages: Vec<String> = Vec::new();
    unsafe extern "C" fn collect(text: MlirStringRef, data: *mut c_void) {
        unsafe { &mut *data.cast::<Vec<String>>() }.push(unsafe { text_of(text) });
    }
    let bad = unsafe { blueprintImportTrainingSpec(raw, string_ref("{\"model\": 1}"), Some(collect), (&raw mut messages).cast()) };
    assert!(bad.ptr.is_null());
    assert_eq!(messages.len(), 1);
    assert!(messages[0].starts_with("spec: error:"), "{messages:?}");
}

#[test]
fn statuses_separate_results_from_errors() {
    unsafe extern "C" fn collect(text: MlirStringRef, data: *mut c_void) {
        unsafe { &mut *data.cast::<Vec<String>>() }.push(unsafe { text_of(text) });
    }
    let context = crate::ir::context::create_context();
    let raw = context.to_raw();
    let (mut results, mut errors): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let mut module = MlirModule { ptr: std::ptr::null_mut() };
    let status = unsafe {
        blueprintImportTrainingSpecWithStatus(raw, string_ref("{\"model\": 1}"), &raw mut module, Some(collect), (&raw mut errors).cast())
    };
    assert_eq!(status, BlueprintStatus::InvalidSpec);
    assert!(module.ptr.is_null());
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("docs/SPEC.md"), "{errors:?}");
    let last = unsafe { text_of(blueprintGetLastErrorMessage()) };
    assert_eq!(last, errors[0]);

    // Blueprint's verifier rejects what MLIR's accepts: the diagnostics are in the message.
    errors.clear();
    let parsed = Module::parse(&context, "plan.objective latency").expect("MLIR's verifier accepts it");
    let status = blueprintExportWorkSummaryWithStatus(
        parsed.as_operation().to_raw(),
        Some(collect),
        (&raw mut results).cast(),
        Some(collect),
        (&raw mut errors).cast(),
    );
    assert_eq!(status, BlueprintStatus::InvalidIr);
    assert!(results.is_empty());
    assert!(errors[0].starts_with("blueprint: the module does not verify\n"), "{errors:?}");
    assert!(errors[0].contains("'plan.objective' op is in a module without a 'plan.header'"), "{errors:?}");

    // A success clears the last error and sends nothing to the error callback.
    errors.clear();
    let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/test/Inputs/specs/tiny-pp-dp.json")).expect("spec");
    let status =
        unsafe { blueprintImportTrainingSpecWithStatus(raw, string_ref(&spec), &raw mut module, Some(collect), (&raw mut errors).cast()) };
    assert_eq!(status, BlueprintStatus::Success);
    assert!(!module.ptr.is_null() && errors.is_empty());
    assert_eq!(blueprintGetLastErrorMessage().length, 0);
    drop(unsafe { Module::from_raw(module) });
    let name = unsafe { std::ffi::CStr::from_ptr(blueprintStatusGetName(2)) };
    assert_eq!(name.to_str(), Ok("BLUEPRINT_STATUS_INVALID_SPEC"));
}
