//! Tests of the C entry points, called through real MLIR-layout descriptors
//! ([`OwnedMemRef`]) from in-process ranks.

mod collectives;
mod copies;
mod errors;
mod kernels;

use std::ffi::c_void;

use super::abi::{_bprt_last_error, _bprt_wait};
use super::memref::OwnedMemRef;

/// An unranked memref argument `(rank, desc)`.
pub(super) type U = (i64, *mut c_void);

/// A rank-1 memref of `i64`/`index` values.
pub(super) fn ints(values: &[i64]) -> OwnedMemRef<i64> {
    OwnedMemRef::new(&[values.len() as i64], values.to_vec())
}

/// The calling thread's last error message, read through the C ABI.
pub(super) fn last_message() -> String {
    // SAFETY: a null buffer is allowed; nothing is written.
    let len = unsafe { _bprt_last_error(std::ptr::null_mut(), 0) };
    let mut buf = vec![0u8; len as usize + 1];
    // SAFETY: `buf` is valid for `buf.len()` bytes.
    let got = unsafe { _bprt_last_error(buf.as_mut_ptr(), buf.len() as i64) };
    assert_eq!(got, len);
    assert_eq!(buf[len as usize], 0, "NUL-terminated");
    String::from_utf8(buf[..len as usize].to_vec()).expect("UTF-8 message")
}

/// An error code with the message that came with it.
pub(super) type Failure = (i64, String);

/// Waits on the result of a start call.
pub(super) fn wait(handle: i64) -> Result<(), Failure> {
    if handle < 0 {
        return Err((handle, last_message()));
    }
    assert!(handle > 0, "handles are positive");
    match _bprt_wait(handle) {
        0 => Ok(()),
        rc => Err((rc, last_message())),
    }
}

/// Runs one collective on the calling rank: `start(participants, input,
/// output)` is the start call, then the handle is waited on and the output
/// read back.
pub(super) fn collective<T: Copy>(
    participants: &[i64],
    mut input: OwnedMemRef<T>,
    mut output: OwnedMemRef<T>,
    start: impl FnOnce(U, U, U) -> i64,
) -> Result<Vec<T>, Failure> {
    let mut p = ints(participants);
    let handle = start(p.arg(), input.arg(), output.arg());
    wait(handle)?;
    Ok(output.to_vec())
}

/// Row-major elements of a `shape` array whose value at linear index `i`
/// is `f(i)`.
pub(super) fn iota<T>(shape: &[i64], f: impl Fn(usize) -> T) -> Vec<T> {
    let n: i64 = shape.iter().product();
    (0..n as usize).map(f).collect()
}

/// The `[start, start + len)` slice along `axis` of a row-major array.
pub(super) fn slice_axis<T: Copy>(data: &[T], shape: &[i64], axis: usize, start: usize, len: usize) -> Vec<T> {
    let outer: i64 = shape[..axis].iter().product();
    let dim = shape[axis] as usize;
    let inner: i64 = shape[axis + 1..].iter().product();
    let inner = inner as usize;
    let mut out = Vec::new();
    for o in 0..outer as usize {
        let base = (o * dim + start) * inner;
        out.extend_from_slice(&data[base..base + len * inner]);
    }
    out
}

/// Concatenation along `axis` of row-major arrays `parts` of shapes `shapes`.
pub(super) fn concat_axis<T: Copy>(parts: &[Vec<T>], shapes: &[Vec<i64>], axis: usize) -> Vec<T> {
    let outer: i64 = shapes[0][..axis].iter().product();
    let inner: i64 = shapes[0][axis + 1..].iter().product();
    let mut out = Vec::new();
    for o in 0..outer as usize {
        for (p, s) in parts.iter().zip(shapes) {
            let block = s[axis] as usize * inner as usize;
            out.extend_from_slice(&p[o * block..(o + 1) * block]);
        }
    }
    out
}
