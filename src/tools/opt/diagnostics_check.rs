//! `--verify-diagnostics`: the `expected-error @+N {{...}}` convention of
//! `mlir-opt`, checked against the diagnostics a chunk produced.

use crate::ir::diagnostics::{Diagnostic, Severity};

#[derive(Debug)]
struct Expected {
    severity: Severity,
    line: usize,
    message: String,
    /// Line of the comment, for reporting.
    at: usize,
    matched: bool,
}

/// Returns one message per mismatch; empty means every expected diagnostic
/// was produced and every produced error or warning was expected. Notes and
/// remarks that were not asked for are ignored.
#[must_use]
pub fn check(file: &str, text: &str, diagnostics: &[Diagnostic]) -> Vec<String> {
    let (mut expected, mut problems) = parse_expectations(file, text);
    let mut all: Vec<&Diagnostic> = Vec::new();
    for d in diagnostics {
        all.push(d);
        all.extend(d.notes.iter());
    }
    for diagnostic in all {
        let line = diagnostic.position.as_ref().map(|p| p.line);
        let found = expected
            .iter_mut()
            .find(|e| !e.matched && e.severity == diagnostic.severity && Some(e.line) == line && diagnostic.message.contains(&e.message));
        match found {
            Some(e) => e.matched = true,
            None if matches!(diagnostic.severity, Severity::Error | Severity::Warning) => {
                problems.push(format!("{diagnostic}\n  (unexpected {})", diagnostic.severity));
            }
            None => {}
        }
    }
    for e in expected.iter().filter(|e| !e.matched) {
        problems.push(format!("{file}:{}: error: expected {} \"{}\" was not produced (at line {})", e.at, e.severity, e.message, e.line));
    }
    problems
}

fn parse_expectations(file: &str, text: &str) -> (Vec<Expected>, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut expected = Vec::new();
    let mut problems = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let line_no = index + 1;
        let mut rest = *line;
        while let Some(start) = rest.find("expected-") {
            rest = &rest[start + "expected-".len()..];
            let (severity, after) = if let Some(r) = rest.strip_prefix("error") {
                (Severity::Error, r)
            } else if let Some(r) = rest.strip_prefix("warning") {
                (Severity::Warning, r)
            } else if let Some(r) = rest.strip_prefix("note") {
                (Severity::Note, r)
            } else if let Some(r) = rest.strip_prefix("remark") {
                (Severity::Remark, r)
            } else {
                continue;
            };
            let after = after.trim_start();
            let (target, after) = match after.strip_prefix('@') {
                Some(spec) => {
                    let end = spec.find(|c: char| c.is_whitespace() || c == '{').unwrap_or(spec.len());
                    let (spec, tail) = spec.split_at(end);
                    match target_line(spec, line_no, &lines) {
                        Some(t) => (t, tail.trim_start()),
                        None => {
                            problems.push(format!("{file}:{line_no}: error: bad expected-* line designator '@{spec}'"));
                            continue;
                        }
                    }
                }
                None => (line_no, after),
            };
            let Some(body) = after.strip_prefix("{{") else {
                problems.push(format!("{file}:{line_no}: error: expected '{{{{' after expected-{severity}"));
                continue;
            };
            let Some(end) = body.find("}}") else {
                problems.push(format!("{file}:{line_no}: error: expected '}}}}' closing the expected-{severity} message"));
                continue;
            };
            expected.push(Expected { severity, line: target, message: body[..end].to_string(), at: line_no, matched: false });
            rest = &body[end..];
        }
    }
    (expected, problems)
}

/// `+N`, `-N`, `above` (previous line without a designator comment) and
/// `below` (next such line).
fn target_line(spec: &str, line_no: usize, lines: &[&str]) -> Option<usize> {
    if let Some(n) = spec.strip_prefix('+') {
        return n.parse::<usize>().ok().map(|n| line_no + n);
    }
    if let Some(n) = spec.strip_prefix('-') {
        return n.parse::<usize>().ok().and_then(|n| line_no.checked_sub(n)).filter(|l| *l > 0);
    }
    let is_code = |l: &str| !l.trim_start().starts_with("//") && !l.trim().is_empty();
    match spec {
        "above" => (1..line_no).rev().find(|l| is_code(lines[l - 1])),
        "below" => (line_no + 1..=lines.len()).find(|l| is_code(lines[l - 1])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::diagnostics::SourcePosition;

    fn error_at(line: usize, message: &str) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            position: Some(SourcePosition { file: "f.mlir".into(), line, column: 1 }),
            message: message.into(),
            notes: vec![],
        }
    }

    #[test]
    fn matches_relative_and_same_line_expectations() {
        let text = "// expected-error @+1 {{bad thing}}\nop\nop // expected-error {{other}}\n";
        assert!(check("f.mlir", text, &[error_at(2, "a bad thing here"), error_at(3, "other")]).is_empty());
    }

    #[test]
    fn reports_missing_and_unexpected() {
        let text = "// expected-error @+1 {{bad thing}}\nop\n";
        let problems = check("f.mlir", text, &[error_at(1, "surprise")]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("was not produced")));
        assert!(problems.iter().any(|p| p.contains("unexpected error")));
    }
}
