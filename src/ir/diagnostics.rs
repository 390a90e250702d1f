//! Collecting, emitting and printing MLIR diagnostics.

use std::{cell::RefCell, ffi::c_void, ffi::CString, fmt, rc::Rc};

use super::raw::append_bytes;

use melior::{ir::Location, Context};

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
    /// Attaches a handler to `context` that records into this sink. The
    /// handler goes through the C API directly: it runs inside a callback
    /// from C, so nothing in it may panic (melior's `Display` of a
    /// diagnostic panics on text that is not UTF-8).
    #[must_use]
    pub fn attach(context: &Context) -> Self {
        let sink = Self::default();
        let data = Box::into_raw(Box::new(Rc::clone(&sink.collected)));
        // SAFETY: `data` is a leaked box that `drop_sink` frees when the
        // context drops the handler; `handle` only reads live diagnostics.
        unsafe {
            mlir_sys::mlirContextAttachDiagnosticHandler(context.to_raw(), Some(handle), data.cast(), Some(drop_sink));
        }
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

/// Runs `f` with a handler on `context` that records every diagnostic,
/// then detaches it (so a host's own handlers see later diagnostics
/// again); returns `f`'s result and what was reported meanwhile.
///
/// # Safety
/// `context` is a live context.
pub unsafe fn capture<R>(context: mlir_sys::MlirContext, f: impl FnOnce() -> R) -> (R, Vec<Diagnostic>) {
    let collected: Collected = Rc::default();
    let data = Box::into_raw(Box::new(Rc::clone(&collected)));
    // SAFETY: as in `DiagnosticSink::attach`; detached below, which frees `data`.
    let id = unsafe { mlir_sys::mlirContextAttachDiagnosticHandler(context, Some(handle), data.cast(), Some(drop_sink)) };
    /// Detaches the handler however `f` ends (a panic included).
    struct Detach(mlir_sys::MlirContext, mlir_sys::MlirDiagnosticHandlerID);
    impl Drop for Detach {
        fn drop(&mut self) {
            // SAFETY: the handler attached above, on a live context.
            unsafe { mlir_sys::mlirContextDetachDiagnosticHandler(self.0, self.1) };
        }
    }
    let detach = Detach(context, id);
    let result = f();
    drop(detach);
    let diagnostics = std::mem::take(&mut *collected.borrow_mut());
    (result, diagnostics)
}

type Collected = Rc<RefCell<Vec<Diagnostic>>>;

unsafe extern "C" fn handle(diagnostic: mlir_sys::MlirDiagnostic, data: *mut c_void) -> mlir_sys::MlirLogicalResult {
    let converted = std::panic::catch_unwind(|| convert(diagnostic));
    // SAFETY: `data` is the `Collected` box `attach` leaked for this handler.
    let collected = unsafe { &*data.cast::<Collected>() };
    if let (Ok(converted), Ok(mut collected)) = (converted, collected.try_borrow_mut()) {
        collected.push(converted);
    }
    mlir_sys::MlirLogicalResult { value: 1 }
}

unsafe extern "C" fn drop_sink(data: *mut c_void) {
    // SAFETY: called once by MLIR when the handler is detached.
    drop(unsafe { Box::from_raw(data.cast::<Collected>()) });
}

fn convert(diagnostic: mlir_sys::MlirDiagnostic) -> Diagnostic {
    // SAFETY: the diagnostic is live for the duration of the handler.
    let severity = match unsafe { mlir_sys::mlirDiagnosticGetSeverity(diagnostic) } {
        mlir_sys::MlirDiagnosticSeverity_MlirDiagnosticWarning => Severity::Warning,
        mlir_sys::MlirDiagnosticSeverity_MlirDiagnosticNote => Severity::Note,
        mlir_sys::MlirDiagnosticSeverity_MlirDiagnosticRemark => Severity::Remark,
        _ => Severity::Error,
    };
    let count = unsafe { mlir_sys::mlirDiagnosticGetNumNotes(diagnostic) };
    let notes = (0..count).map(|i| convert(unsafe { mlir_sys::mlirDiagnosticGetNote(diagnostic, i) })).collect();
    let location = unsafe { Location::from_raw(mlir_sys::mlirDiagnosticGetLocation(diagnostic)) };
    Diagnostic { severity, position: source_position(location), message: message_of(diagnostic), notes }
}

/// The diagnostic's text, converted lossily (user input, such as an op
/// name with a `\xff` byte, can make it invalid UTF-8).
fn message_of(diagnostic: mlir_sys::MlirDiagnostic) -> String {
    let mut buffer: Vec<u8> = Vec::new();
    // SAFETY: the diagnostic is live; `append_bytes` appends to `buffer`.
    unsafe { mlir_sys::mlirDiagnosticPrint(diagnostic, Some(append_bytes), (&raw mut buffer).cast()) };
    String::from_utf8_lossy(&buffer).into_owned()
}

/// The file position a location points at, looking through names, call
/// sites and fusions.
#[must_use]
pub fn source_position(location: Location) -> Option<SourcePosition> {
    if location.is_file_line_col_range() {
        return Some(SourcePosition {
            file: crate::ir::raw::identifier_str(location.file_line_col_range_filename()).to_string(),
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
        return (0..location.fused_num_locations()).find_map(|i| source_position(location.fused_location(i)));
    }
    None
}

/// Emits an error at `location` through the context's diagnostic engine.
pub fn emit_error(location: Location, message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    unsafe { mlir_sys::mlirEmitError(location.to_raw(), text.as_ptr()) };
}
