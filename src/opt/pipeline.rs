//! Textual pass pipelines: `builtin.module(a, b{opt=1}, func.func(cse))`.
//! Blueprint passes are added directly (MLIR has no C API to register a
//! Rust pass by name); everything else goes to MLIR's own pipeline parser.

use crate::{
    error::{Error, Result},
    passes,
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
            rest.strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| error("expected 'builtin.module(...)'"))?
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

fn push_element(
    elements: &mut Vec<PipelineElement>,
    text: &str,
    error: &dyn Fn(&str) -> Error,
) -> Result<()> {
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
