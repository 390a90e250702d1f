//! Textual pass pipelines: `builtin.module(a, b{opt=1}, func.func(cse))`.
//! Blueprint passes are added directly (MLIR has no C API to register a
//! Rust pass by name); everything else goes to MLIR's own pipeline parser.
//! The tools and the library build pass managers here, the same way.

use std::ffi::c_void;

use melior::{
    ir::Module,
    pass::{OperationPassManager, PassManager},
    Context,
};

use crate::{
    error::{Error, Result},
    tools::registry as passes,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineElement {
    /// A Blueprint pass by name.
    Blueprint(String),
    /// Upstream pipeline text, e.g. `canonicalize` or `func.func(cse)`.
    Upstream(String),
}

/// Splits a pipeline into elements on top-level commas.
pub fn parse_pipeline(text: &str) -> Result<Vec<PipelineElement>> {
    let error = |reason: &str| Error::Pipeline { pipeline: text.to_string(), reason: reason.to_string() };
    let trimmed = text.trim();
    let body = match trimmed.strip_prefix("builtin.module") {
        Some(rest) => {
            let rest = rest.trim_start();
            rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')).ok_or_else(|| error("expected 'builtin.module(...)'"))?
        }
        None if trimmed.contains('(') && !trimmed.starts_with("func.func") => {
            return Err(error("the pipeline must be anchored on 'builtin.module(...)'"));
        }
        None => trimmed,
    };
    let mut elements = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in body.chars() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => {
                depth -= 1;
                if depth < 0 {
                    return Err(error("unbalanced ')' or '}'"));
                }
            }
            ',' if depth == 0 => {
                push_element(&mut elements, &current, &error)?;
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if depth != 0 {
        return Err(error("unbalanced '(' or '{'"));
    }
    if !current.trim().is_empty() || !elements.is_empty() {
        push_element(&mut elements, &current, &error)?;
    }
    Ok(elements)
}

fn push_element(elements: &mut Vec<PipelineElement>, text: &str, error: &dyn Fn(&str) -> Error) -> Result<()> {
    let text = text.trim();
    if text.is_empty() {
        return Err(error("empty pipeline element"));
    }
    let name = text.split(['{', '(']).next().unwrap_or(text).trim();
    if passes::find(name).is_some() {
        if name != text {
            return Err(error(&format!("Blueprint pass '{name}' takes no options")));
        }
        elements.push(PipelineElement::Blueprint(name.to_string()));
    } else {
        elements.push(PipelineElement::Upstream(text.to_string()));
    }
    Ok(())
}

/// Adds `elements` to `top`; with `verify_each`, MLIR's and Blueprint's
/// verifiers run after every pass that may change the IR (turn the pass
/// manager's own verifier off: it would verify after every pass).
///
/// # Errors
/// An unknown Blueprint pass or upstream pipeline text MLIR rejects.
pub fn add_elements(top: &OperationPassManager, elements: &[PipelineElement], verify_each: bool) -> Result<()> {
    for element in elements {
        match element {
            PipelineElement::Blueprint(name) => {
                let info = passes::find(name)
                    .ok_or_else(|| Error::Pipeline { pipeline: name.clone(), reason: "unknown Blueprint pass".into() })?;
                top.add_pass((info.create)());
                if verify_each && info.changes_ir {
                    top.add_pass(passes::create_verify_pass());
                }
            }
            PipelineElement::Upstream(text) => {
                add_upstream(top, text)?;
                if verify_each {
                    top.add_pass(passes::create_whole_verify_pass());
                }
            }
        }
    }
    Ok(())
}

/// Runs pipeline `text` (Blueprint and upstream passes) over `module`, with
/// Blueprint's verifiers after every pass.
///
/// # Errors
/// A malformed pipeline, or a pass that failed (its diagnostics went to the
/// context's handler).
pub fn run_pipeline(context: &Context, module: &mut Module, text: &str) -> Result<()> {
    let elements = parse_pipeline(text)?;
    let pass_manager = PassManager::new(context);
    // `add_elements` verifies after every pass that may change the IR.
    pass_manager.enable_verifier(false);
    add_elements(&pass_manager.as_operation_pass_manager(), &elements, true)?;
    let failed = || Error::Pipeline { pipeline: text.to_string(), reason: "a pass failed (see the diagnostics)".into() };
    // Every element that may change the IR is followed by the verify pass,
    // so the result needs no second verification.
    pass_manager.run(module).map_err(|_| failed())
}

/// Appends upstream pipeline text (`canonicalize`, `func.func(cse)`) to `top`.
pub fn add_upstream(top: &OperationPassManager, text: &str) -> Result<()> {
    unsafe extern "C" fn collect(message: mlir_sys::MlirStringRef, user_data: *mut c_void) {
        let out = unsafe { &mut *(user_data as *mut String) };
        let bytes = unsafe { std::slice::from_raw_parts(message.data.cast::<u8>(), message.length) };
        out.push_str(&String::from_utf8_lossy(bytes));
    }
    let mut message = String::new();
    let result = unsafe {
        mlir_sys::mlirOpPassManagerAddPipeline(
            top.to_raw(),
            mlir_sys::MlirStringRef { data: text.as_ptr().cast(), length: text.len() },
            Some(collect),
            (&mut message as *mut String).cast(),
        )
    };
    if result.value == 0 {
        let mut reason = if message.is_empty() { "unknown pass or bad options".into() } else { message.trim().to_string() };
        // A misspelt pass name: the nearest registered one.
        let name = text.split(['{', '(']).next().unwrap_or(text).trim();
        if !text.contains('(') && !name.is_empty() {
            let names = crate::tools::suggest::pass_names();
            if !names.iter().any(|n| n == name) {
                if let Some(nearest) = crate::tools::suggest::suggest(name, &names) {
                    reason.push_str(&format!("\ndid you mean '{nearest}'?"));
                }
            }
        }
        return Err(Error::Pipeline { pipeline: text.to_string(), reason });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_top_level_elements_only() {
        let elements = parse_pipeline("builtin.module(blueprint-verify, canonicalize{max-iterations=2}, func.func(cse,canonicalize))")
            .expect("valid pipeline");
        assert_eq!(
            elements,
            vec![
                PipelineElement::Blueprint("blueprint-verify".into()),
                PipelineElement::Upstream("canonicalize{max-iterations=2}".into()),
                PipelineElement::Upstream("func.func(cse,canonicalize)".into()),
            ]
        );
    }

    #[test]
    fn rejects_malformed_pipelines() {
        assert!(parse_pipeline("builtin.module(cse").is_err());
        assert!(parse_pipeline("builtin.module(cse,,cse)").is_err());
        assert!(parse_pipeline("builtin.module(cse))").is_err());
        assert!(parse_pipeline("builtin.module(blueprint-verify{x=1})").is_err());
        assert_eq!(parse_pipeline("builtin.module()").expect("empty is fine"), vec![]);
    }
}
