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
    ] {
        assert!(HEADER.contains(&format!(" {function}(")), "{function} is not declared");
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
