//! Kernels the lowered training step calls instead of loops: the f32
//! matrix products (`linalg.matmul`, `linalg.batch_matmul`).

/// The kernels by the symbol the lowering calls.
#[must_use]
pub fn symbols() -> Vec<(&'static str, *mut ())> {
    Vec::new()
}
