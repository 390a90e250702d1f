//! Kernels the lowered training step calls instead of loops: the f32
//! matrix product of `linalg.matmul` / `linalg.batch_matmul`
//! (`convert-linalg-matmul-to-kernels`), `C += A B` on strided operands
//! (any row and column strides, so transposed and sliced views need no
//! copy), with the `gemm` crate's packed, vectorized kernels (AVX2, or
//! AVX-512 where the CPU has it) on the calling thread.

use std::ffi::c_void;

use super::{error::RtResult, memref::StridedView, RtError};

/// `_bprt_matmul_f32(A, B, C)`: `C[m, n] += A[m, k] B[k, n]`, or per batch
/// for rank-3 operands. Returns 0, or a negative error code (mismatched
/// shapes, bad descriptors) after recording the error.
///
/// # Safety
/// Each `(rank, desc)` pair is an unranked memref descriptor of f32 data
/// valid for the call (what the lowering passes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _bprt_matmul_f32(
    rank_a: i64,
    a: *const c_void,
    rank_b: i64,
    b: *const c_void,
    rank_c: i64,
    c: *const c_void,
) -> i64 {
    // SAFETY: the caller's contract.
    super::abi::guard(|| unsafe { matmul(rank_a, a, rank_b, b, rank_c, c) })
}

unsafe fn matmul(rank_a: i64, a: *const c_void, rank_b: i64, b: *const c_void, rank_c: i64, c: *const c_void) -> RtResult<i64> {
    // SAFETY: the caller's contract.
    let (a, b, c) = unsafe {
        (
            StridedView::from_unranked("A", rank_a, a, 4)?,
            StridedView::from_unranked("B", rank_b, b, 4)?,
            StridedView::from_unranked("C", rank_c, c, 4)?,
        )
    };
    let rank = a.sizes().len();
    if !(rank == 2 || rank == 3) || b.sizes().len() != rank || c.sizes().len() != rank {
        return Err(RtError::memref(
            "matmul",
            format!("ranks {}, {}, {} (expected three of rank 2 or 3)", a.sizes().len(), b.sizes().len(), c.sizes().len()),
        ));
    }
    let lead = rank - 2;
    let (m, k, n) = (a.sizes()[lead], a.sizes()[lead + 1], b.sizes()[lead + 1]);
    let batch = if rank == 3 { a.sizes()[0] } else { 1 };
    let agrees = b.sizes()[lead] == k
        && c.sizes()[lead] == m
        && c.sizes()[lead + 1] == n
        && (rank == 2 || (b.sizes()[0] == batch && c.sizes()[0] == batch));
    if !agrees {
        return Err(RtError::memref("matmul", format!("shapes {:?} x {:?} -> {:?} do not multiply", a.sizes(), b.sizes(), c.sizes())));
    }
    if [&a, &b, &c].iter().any(|v| v.numel() > 0 && !(v.first_element() as usize).is_multiple_of(std::mem::align_of::<f32>())) {
        return Err(RtError::memref("matmul", "an operand's data is not aligned for f32"));
    }
    // An input that shares memory with C is read from a packed copy, so
    // the product sees the inputs as they were before the call.
    let overlaps = |v: &StridedView| match (v.span(), c.span()) {
        (Some(x), Some(y)) => x.start < y.end && y.start < x.end,
        _ => false,
    };
    let packed = |v: &StridedView| -> Vec<f32> { v.read().chunks_exact(4).map(|e| f32::from_ne_bytes([e[0], e[1], e[2], e[3]])).collect() };
    let a_copy = overlaps(&a).then(|| packed(&a));
    let b_copy = overlaps(&b).then(|| packed(&b));
    // (first element, row stride, column stride, batch stride) of an operand.
    let operand = |v: &StridedView, copy: &Option<Vec<f32>>| -> (*const f32, isize, isize, isize) {
        match copy {
            Some(data) => {
                let (rows, cols) = (v.sizes()[lead] as isize, v.sizes()[lead + 1] as isize);
                (data.as_ptr(), cols, 1, rows * cols)
            }
            None => {
                let st = |d: usize| v.strides()[d] as isize;
                (v.first_element().cast::<f32>(), st(lead), st(lead + 1), if rank == 3 { st(0) } else { 0 })
            }
        }
    };
    let (a_ptr, a_row, a_col, a_batch) = operand(&a, &a_copy);
    let (b_ptr, b_row, b_col, b_batch) = operand(&b, &b_copy);
    let (c_ptr, c_row, c_col, c_batch) = operand(&c, &None);
    for i in 0..batch as isize {
        // SAFETY: the views were validated (every addressed element lies in
        // the caller's buffers, aligned for f32); an input sharing memory
        // with C was replaced by a packed copy of the same shape, so C
        // aliases no input.
        unsafe {
            gemm::gemm(
                m as usize,
                n as usize,
                k as usize,
                c_ptr.cast_mut().wrapping_offset(i * c_batch),
                c_col,
                c_row,
                true,
                a_ptr.wrapping_offset(i * a_batch),
                a_col,
                a_row,
                b_ptr.wrapping_offset(i * b_batch),
                b_col,
                b_row,
                1.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
    }
    Ok(0)
}

/// The kernels by the symbol the lowering calls.
#[must_use]
pub fn symbols() -> Vec<(&'static str, *mut ())> {
    vec![("_bprt_matmul_f32", _bprt_matmul_f32 as *mut ())]
}
