//! Collecting, emitting and printing MLIR diagnostics.

use std::{cell::RefCell, ffi::CString, fmt, rc::Rc};

use melior::{
    diagnostic::{Diagnostic as MlirDiagnostic, DiagnosticSeverity},
    ir::Location,
    Context,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Note,
    Remark,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
            Severity::Remark => "remark",
        })
    }
}

/// A source position, when the diagnostic's location has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePosition {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

/// One diagnostic, copied out of MLIR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub position: Option<SourcePosition>,
    pub message: String,
    pub notes: Vec<Diagnostic>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.position {
            Some(p) => write!(f, "{}:{}:{}: ", p.file, p.line, p.column)?,
            None => f.write_str("<unknown>: ")?,
        }
        write!(f, "{}: {}", self.severity, self.message)?;
        for note in &self.notes {
            write!(f, "\n{note}")?;
        }
        Ok(())
    }
}

/// Collects every diagnostic the context reports instead of printing it.
#[derive(Clone, Default)]
pub struct DiagnosticSink {
    collected: Rc<RefCell<Vec<Diagnostic>>>,
}

impl DiagnosticSink {
    /// Attaches a handler to `context` that records into this sink.
    #[must_use]
    pub fn attach(context: &Context) -> Self {
        let sink = Self::default();
        let collected = Rc::clone(&sink.collected);
        context.attach_diagnostic_handler(move |diagnostic| {
            collected.borrow_mut().push(convert(&diagnostic));
            true
        });
        sink
    }

    /// Takes every diagnostic collected so far.
    #[must_use]
    pub fn take(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut *self.collected.borrow_mut())
    }

    /// Puts diagnostics back (after a caller inspected them).
    pub fn extend(&self, diagnostics: Vec<Diagnostic>) {
        self.collected.borrow_mut().extend(diagnostics);
    }

    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.collected.borrow().iter().any(|d| d.severity == Severity::Error)
    }
}

fn convert(diagnostic: &MlirDiagnostic) -> Diagnostic {
    let severity = match diagnostic.severity() {
        DiagnosticSeverity::Error => Severity::Error,
        DiagnosticSeverity::Warning => Severity::Warning,
        DiagnosticSeverity::Note => Severity::Note,
        DiagnosticSeverity::Remark => Severity::Remark,
    };
    let notes = (0..diagnostic.note_count())
        .filter_map(|i| diagnostic.note(i).ok())
        .map(|n| convert(&n))
        .collect();
    Diagnostic {
        severity,
        position: source_position(diagnostic.location()),
        message: diagnostic.to_string(),
        notes,
    }
}

/// The file position a location points at, looking through names, call
/// sites and fusions.
#[must_use]
pub fn source_position(location: Location) -> Option<SourcePosition> {
    if location.is_file_line_col_range() {
        return Some(SourcePosition {
            file: crate::ir::identifier_str(location.file_line_col_range_filename()).to_string(),
            line: location.file_line_col_range_start_line(),
            column: location.file_line_col_range_start_column(),
        });
    }
    if location.is_name() {
        return source_position(location.name_child_location());
    }
    if location.is_call_site() {
        return source_position(location.call_site_caller());
    }
    if location.is_fused() {
        return (0..location.fused_num_locations())
            .find_map(|i| source_position(location.fused_location(i)));
    }
    None
}

/// Emits an error at `location` through the context's diagnostic engine.
pub fn emit_error(location: Location, message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    unsafe { mlir_sys::mlirEmitError(location.to_raw(), text.as_ptr()) };
}
