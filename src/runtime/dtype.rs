//! Element types and the element-wise reductions over packed byte buffers.
//!
//! Data moves through the runtime as packed row-major bytes in native byte
//! order; only the reductions need to know the element type.
//!
//! Semantics of the reductions:
//! - integers (`i8`..`i64`, `index`) wrap on overflow (like `arith.addi`);
//! - floats propagate NaN in `max`/`min` (like `arith.maximumf`); `f16` and
//!   `bf16` are combined in `f32` and rounded back after every step;
//! - `i1` is stored as one byte 0/1 (any non-zero input byte counts as 1):
//!   `sum` is addition modulo 2, `prod` is AND, `max` is OR, `min` is AND.
//!
//! Every rank folds the contributions in participant order, so all ranks
//! compute bitwise identical results.

use half::{bf16, f16, slice::HalfFloatSliceExt};

use super::error::{RtError, RtResult};

pub use crate::runtime::interface::{ElementType, ReduceOp};

impl ReduceOp {
    /// Decodes the C value, or says what it expected.
    pub fn from_i32(op: i32) -> RtResult<Self> {
        Self::from_code(op).ok_or_else(|| RtError::InvalidArgument(format!("reduction op {op} (expected 0=sum, 1=max, 2=min, 3=prod)")))
    }
}

/// One element type's storage and combination rule.
trait Elem: Copy {
    const SIZE: usize;
    fn load(bytes: &[u8]) -> Self;
    fn store(self, bytes: &mut [u8]);
    fn combine(a: Self, b: Self, op: ReduceOp) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn load(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                <$t>::from_ne_bytes(raw)
            }
            fn store(self, bytes: &mut [u8]) {
                bytes.copy_from_slice(&self.to_ne_bytes());
            }
            fn combine(a: Self, b: Self, op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
        }
    )*};
}
int_elem!(i64, i32, i16, i8);

fn combine_f64(a: f64, b: f64, op: ReduceOp) -> f64 {
    match op {
        ReduceOp::Sum => a + b,
        ReduceOp::Prod => a * b,
        _ if a.is_nan() || b.is_nan() => f64::NAN,
        ReduceOp::Max => a.max(b),
        ReduceOp::Min => a.min(b),
    }
}

fn combine_f32(a: f32, b: f32, op: ReduceOp) -> f32 {
    match op {
        ReduceOp::Sum => a + b,
        ReduceOp::Prod => a * b,
        _ if a.is_nan() || b.is_nan() => f32::NAN,
        ReduceOp::Max => a.max(b),
        ReduceOp::Min => a.min(b),
    }
}

macro_rules! float_elem {
    ($t:ty, $combine:ident) => {
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn load(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                <$t>::from_ne_bytes(raw)
            }
            fn store(self, bytes: &mut [u8]) {
                bytes.copy_from_slice(&self.to_ne_bytes());
            }
            fn combine(a: Self, b: Self, op: ReduceOp) -> Self {
                $combine(a, b, op)
            }
        }
    };
}
float_elem!(f64, combine_f64);
float_elem!(f32, combine_f32);

macro_rules! half_elem {
    ($t:ty) => {
        impl Elem for $t {
            const SIZE: usize = 2;
            fn load(bytes: &[u8]) -> Self {
                <$t>::from_ne_bytes([bytes[0], bytes[1]])
            }
            fn store(self, bytes: &mut [u8]) {
                bytes.copy_from_slice(&self.to_ne_bytes());
            }
            fn combine(a: Self, b: Self, op: ReduceOp) -> Self {
                <$t>::from_f32(combine_f32(a.to_f32(), b.to_f32(), op))
            }
        }
    };
}
half_elem!(f16);
half_elem!(bf16);

/// `i1` stored as one byte 0/1.
#[derive(Clone, Copy)]
struct Bit(bool);

impl Elem for Bit {
    const SIZE: usize = 1;
    fn load(bytes: &[u8]) -> Self {
        Bit(bytes[0] != 0)
    }
    fn store(self, bytes: &mut [u8]) {
        bytes[0] = u8::from(self.0);
    }
    fn combine(a: Self, b: Self, op: ReduceOp) -> Self {
        Bit(match op {
            ReduceOp::Sum => a.0 ^ b.0,
            ReduceOp::Prod | ReduceOp::Min => a.0 && b.0,
            ReduceOp::Max => a.0 || b.0,
        })
    }
}

/// Numeric types for which every bit pattern is a value, so byte buffers
/// can be viewed as slices of them.
trait Plain: Elem {}
impl Plain for f64 {}
impl Plain for f32 {}
impl Plain for i64 {}
impl Plain for i32 {}
impl Plain for i16 {}
impl Plain for i8 {}

/// `acc[i] = acc[i] op other[i]` on typed slices when both buffers are
/// aligned for `E` (the common case: heap buffers), so the loop vectorizes;
/// false (nothing done) otherwise.
fn combine_aligned<E: Plain>(acc: &mut [u8], other: &[u8], op: ReduceOp) -> bool {
    // SAFETY: `E` is a plain numeric type (every bit pattern is valid) and
    // `align_to` only returns correctly aligned, in-bounds middle slices.
    let ((pa, a, sa), (pb, b, sb)) = unsafe { (acc.align_to_mut::<E>(), other.align_to::<E>()) };
    if !(pa.is_empty() && sa.is_empty() && pb.is_empty() && sb.is_empty()) {
        return false;
    }
    macro_rules! each {
        ($op:expr) => {
            for (x, y) in a.iter_mut().zip(b) {
                *x = E::combine(*x, *y, $op);
            }
        };
    }
    match op {
        ReduceOp::Sum => each!(ReduceOp::Sum),
        ReduceOp::Prod => each!(ReduceOp::Prod),
        ReduceOp::Max => each!(ReduceOp::Max),
        ReduceOp::Min => each!(ReduceOp::Min),
    }
    true
}

fn combine_plain<E: Plain>(acc: &mut [u8], other: &[u8], op: ReduceOp) {
    if !combine_aligned::<E>(acc, other, op) {
        combine_slices::<E>(acc, other, op);
    }
}

fn combine_slices<E: Elem>(acc: &mut [u8], other: &[u8], op: ReduceOp) {
    for (a, b) in acc.chunks_exact_mut(E::SIZE).zip(other.chunks_exact(E::SIZE)) {
        E::combine(E::load(a), E::load(b), op).store(a);
    }
}

/// Bytes of a line of the fused reduction (and of a cache line).
const LINE: usize = 64;

/// Stores one line, 64-byte aligned, with non-temporal stores (no read for
/// ownership; the line goes to memory through the write-combining buffers).
///
/// # Safety
/// `dst` is 64-byte aligned and valid for 64 bytes of writes; with `AVX`,
/// the CPU has AVX.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn stream_line<T, const AVX: bool>(dst: *mut u8, line: &T) {
    use std::arch::x86_64::{__m128i, __m256i, _mm256_loadu_si256, _mm256_stream_si256, _mm_loadu_si128, _mm_stream_si128};
    const { assert!(std::mem::size_of::<T>() == LINE) };
    let src = (line as *const T).cast::<u8>();
    // SAFETY: 64 bytes of `line` and of `dst` (aligned), per the contract.
    unsafe {
        if AVX {
            for k in 0..2 {
                _mm256_stream_si256(dst.add(32 * k).cast::<__m256i>(), _mm256_loadu_si256(src.add(32 * k).cast::<__m256i>()));
            }
        } else {
            for k in 0..4 {
                _mm_stream_si128(dst.add(16 * k).cast::<__m128i>(), _mm_loadu_si128(src.add(16 * k).cast::<__m128i>()));
            }
        }
    }
}

/// The fused n-way reduction of elements `lo..hi`: one line (64 bytes) of
/// every input folded in registers in input order, then stored into every
/// output; no pass over an accumulator in memory. With `STREAM`, every
/// output is at the same offset within a cache line (the caller checks):
/// the elements up to the first line boundary of the outputs and those
/// after the last one are done one at a time with ordinary stores, the
/// whole lines between with non-temporal ones (`AVX`: 32 bytes at a time).
/// With `DOWN`, the whole lines go from the last to the first (see
/// [`stream_down`]).
///
/// # Safety
/// As for [`reduce_lines`]; with `AVX`, the CPU has AVX.
#[inline(always)]
unsafe fn fused_lines<E: Plain, const L: usize, const STREAM: bool, const AVX: bool, const DOWN: bool>(
    op: ReduceOp,
    inputs: &[*const u8],
    outputs: &[*mut u8],
    lo: usize,
    hi: usize,
) {
    let load = |p: *const u8, i: usize| -> [E; L] {
        // SAFETY: elements i..i+L of an input (forwarded contract).
        unsafe { std::ptr::read_unaligned(p.cast::<E>().add(i).cast::<[E; L]>()) }
    };
    // Elements before the first line boundary of the outputs.
    let head = if STREAM {
        let offset = outputs[0].cast::<E>().wrapping_add(lo) as usize % LINE;
        ((LINE - offset) % LINE / E::SIZE).min(hi - lo)
    } else {
        0
    };
    macro_rules! one {
        ($op:expr, $i:expr) => {
            // SAFETY: element i of every input and output (forwarded contract).
            unsafe {
                let i = $i;
                let mut x = inputs[0].cast::<E>().add(i).read();
                for &p in &inputs[1..] {
                    x = E::combine(x, p.cast::<E>().add(i).read(), $op);
                }
                for &o in outputs {
                    o.cast::<E>().add(i).write(x);
                }
            }
        };
    }
    macro_rules! run {
        ($op:expr) => {{
            for i in lo..lo + head {
                one!($op, i);
            }
            let first = lo + head;
            let count = (hi - first) / L;
            for n in 0..count {
                let i = first + L * if DOWN { count - 1 - n } else { n };
                let mut v = load(inputs[0], i);
                for &p in &inputs[1..] {
                    let w = load(p, i);
                    for j in 0..L {
                        v[j] = E::combine(v[j], w[j], $op);
                    }
                }
                for &o in outputs {
                    let dst = o.cast::<E>().wrapping_add(i);
                    #[cfg(target_arch = "x86_64")]
                    if STREAM {
                        // SAFETY: a whole line of the output, 64-byte
                        // aligned past the head (forwarded contract).
                        unsafe { stream_line::<_, AVX>(dst.cast::<u8>(), &v) };
                        continue;
                    }
                    // SAFETY: elements i..i+L of an output (forwarded contract).
                    unsafe { std::ptr::write_unaligned(dst.cast::<[E; L]>(), v) };
                }
            }
            for i in first + count * L..hi {
                one!($op, i);
            }
        }};
    }
    match op {
        ReduceOp::Sum => run!(ReduceOp::Sum),
        ReduceOp::Prod => run!(ReduceOp::Prod),
        ReduceOp::Max => run!(ReduceOp::Max),
        ReduceOp::Min => run!(ReduceOp::Min),
    }
}

/// [`fused_lines`] compiled for AVX2 (chosen at run time).
///
/// # Safety
/// As for [`reduce_lines`], on a CPU with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fused_lines_avx2<E: Plain, const L: usize, const STREAM: bool, const DOWN: bool>(
    op: ReduceOp,
    inputs: &[*const u8],
    outputs: &[*mut u8],
    lo: usize,
    hi: usize,
) {
    // SAFETY: forwarded contract; AVX2 implies AVX.
    unsafe { fused_lines::<E, L, STREAM, true, DOWN>(op, inputs, outputs, lo, hi) }
}

/// Whether every output starts at the same offset within a cache line, so
/// that their line boundaries fall at the same elements (what the
/// non-temporal path needs).
fn same_line_offset(outputs: &[*mut u8]) -> bool {
    outputs.iter().all(|&o| (o as usize) % LINE == (outputs[0] as usize) % LINE)
}

/// Bytes within which a load that follows a non-temporal store to the same
/// address modulo 4 KiB (another buffer) waits for that store to drain:
/// x86 cores compare only the low 12 address bits at first. Measured on the
/// 2-core AMD EPYC (one thread, 16 MiB f32, 4 inputs, 4 outputs each the
/// same distance d ahead of the inputs): d = 64 bytes 5.9 -> 33 ms, 128: 19
/// ms, 192-256: up to 2x, from 512 on none; ordinary stores none at any d.
const ALIAS_WINDOW: usize = 512;

/// Which way the streamed fused kernel walks the lines so that no input
/// load follows a pending store to an output line at the same address
/// modulo 4 KiB within [`ALIAS_WINDOW`] (`Some(false)`: up, `Some(true)`:
/// down; `None`: neither). Walking up, a load `t` bytes after a store
/// overlaps it when the output is `t` (mod 4 KiB, give or take a line)
/// after the input; walking down, before. Buffers allocated one after the
/// other (an output right after its input: the usual heap order, and what
/// each rank's arena repeats) are a few lines apart modulo 4 KiB: up
/// stalls on every line, down never.
fn stream_down(inputs: &[*const u8], outputs: &[*mut u8]) -> Option<bool> {
    const PAGE: usize = 4096;
    let clear = |down: bool| {
        inputs.iter().all(|&x| {
            outputs.iter().all(|&y| {
                let (x, y) = (x as usize, y as usize);
                let ahead = if down { x.wrapping_sub(y) } else { y.wrapping_sub(x) } % PAGE;
                // Loads of a line read it before it is stored: none behind.
                ahead == 0 || ahead >= ALIAS_WINDOW + LINE
            })
        })
    };
    [false, true].into_iter().find(|&down| clear(down))
}

fn lines<E: Plain, const L: usize>(op: ReduceOp, inputs: &[*const u8], outputs: &[*mut u8], lo: usize, hi: usize, stream: bool) -> bool {
    let align = std::mem::align_of::<E>();
    if inputs.iter().any(|&p| !(p as usize).is_multiple_of(align)) || outputs.iter().any(|&p| !(p as usize).is_multiple_of(align)) {
        return false;
    }
    // Outputs at different offsets within a line would take partial-line
    // non-temporal stores, which the write-combining buffers flush one at
    // a time (4-7x slower than ordinary stores here; composing whole lines
    // from two reduced ones measured no better than ordinary stores): the
    // caller's block path streams each output's whole lines instead.
    if stream && !same_line_offset(outputs) {
        return false;
    }
    // Non-temporal stores exist on x86-64 only (SSE2 is baseline there).
    let stream = stream && cfg!(target_arch = "x86_64");
    // Streamed lines whose loads would stall behind the stores either way:
    // the caller's block path (its stores follow the loads of a whole
    // block, from L1).
    let down = match stream.then(|| stream_down(inputs, outputs)) {
        Some(None) => return false,
        Some(Some(down)) => down,
        None => false,
    };
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: forwarded contract of `reduce_lines`; the CPU has AVX2.
        unsafe {
            match (stream, down) {
                (true, false) => fused_lines_avx2::<E, L, true, false>(op, inputs, outputs, lo, hi),
                (true, true) => fused_lines_avx2::<E, L, true, true>(op, inputs, outputs, lo, hi),
                (false, _) => fused_lines_avx2::<E, L, false, false>(op, inputs, outputs, lo, hi),
            }
        };
        return true;
    }
    // SAFETY: forwarded contract of `reduce_lines`.
    unsafe {
        match (stream, down) {
            (true, false) => fused_lines::<E, L, true, false, false>(op, inputs, outputs, lo, hi),
            (true, true) => fused_lines::<E, L, true, false, true>(op, inputs, outputs, lo, hi),
            (false, _) => fused_lines::<E, L, false, false, false>(op, inputs, outputs, lo, hi),
        }
    };
    true
}

/// Elements `lo..hi` of every output = the fold of the inputs (in order)
/// under `op`, a cache line at a time in registers. With `stream`, whole
/// output lines are written with non-temporal stores, which skip reading
/// each line in first (a third of the traffic of a large all-reduce); the
/// caller orders them with [`store_fence`] before publishing the result.
/// False (nothing done) for the types with their own paths (`f16`,
/// `bf16`, `i1`), buffers not aligned for the element type, or `stream`
/// with outputs at different offsets within a cache line or loads that
/// would stall behind the stores whichever way the lines go
/// ([`stream_down`]). Bitwise [`reduce_into`] folded in order.
///
/// # Safety
/// Every input and output holds at least `hi` packed elements of `ty`,
/// valid for reads (inputs) and writes (outputs), with no one else writing
/// the inputs' or touching the outputs' elements `lo..hi` meanwhile. An
/// output may be an input: each line is read in full before it is stored.
pub(crate) unsafe fn reduce_lines(
    ty: ElementType,
    op: ReduceOp,
    inputs: &[*const u8],
    outputs: &[*mut u8],
    lo: usize,
    hi: usize,
    stream: bool,
) -> bool {
    match ty {
        ElementType::F64 => lines::<f64, 8>(op, inputs, outputs, lo, hi, stream),
        ElementType::F32 => lines::<f32, 16>(op, inputs, outputs, lo, hi, stream),
        ElementType::I64 | ElementType::Index => lines::<i64, 8>(op, inputs, outputs, lo, hi, stream),
        ElementType::I32 => lines::<i32, 16>(op, inputs, outputs, lo, hi, stream),
        ElementType::I16 => lines::<i16, 32>(op, inputs, outputs, lo, hi, stream),
        ElementType::I8 => lines::<i8, 64>(op, inputs, outputs, lo, hi, stream),
        ElementType::F16 | ElementType::BF16 | ElementType::I1 => false,
    }
}

/// Orders this thread's non-temporal stores before what it does next (a
/// release store alone does not).
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is baseline x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

/// Elements converted to `f32` at a time by the half-precision path.
const HALF_RUN: usize = 256;

/// `f16` / `bf16`: the element-wise rule (combine in `f32`, round back
/// after every step) a run at a time, so the conversions go through the
/// slice routines (vectorized, with F16C where the CPU has it) and the
/// `f32` loop vectorizes; bitwise what [`combine_slices`] gives. False
/// (nothing done) when a buffer is not aligned for 2-byte elements.
fn combine_half<H>(acc: &mut [u8], other: &[u8], op: ReduceOp) -> bool
where
    H: Elem,
    [H]: HalfFloatSliceExt,
{
    // SAFETY: `f16` and `bf16` are plain 2-byte values (every bit pattern
    // is one) and `align_to` only returns aligned, in-bounds middle slices.
    let ((pa, a, sa), (pb, b, sb)) = unsafe { (acc.align_to_mut::<H>(), other.align_to::<H>()) };
    if !(pa.is_empty() && sa.is_empty() && pb.is_empty() && sb.is_empty()) {
        return false;
    }
    let (mut x, mut y) = ([0f32; HALF_RUN], [0f32; HALF_RUN]);
    for (ca, cb) in a.chunks_mut(HALF_RUN).zip(b.chunks(HALF_RUN)) {
        let (x, y) = (&mut x[..ca.len()], &mut y[..ca.len()]);
        ca.convert_to_f32_slice(x);
        cb.convert_to_f32_slice(y);
        macro_rules! each {
            ($op:expr) => {
                for (p, q) in x.iter_mut().zip(y.iter()) {
                    *p = combine_f32(*p, *q, $op);
                }
            };
        }
        match op {
            ReduceOp::Sum => each!(ReduceOp::Sum),
            ReduceOp::Prod => each!(ReduceOp::Prod),
            ReduceOp::Max => each!(ReduceOp::Max),
            ReduceOp::Min => each!(ReduceOp::Min),
        }
        ca.convert_from_f32_slice(x);
    }
    true
}

/// `acc[i] = acc[i] op other[i]` element-wise; both buffers hold packed
/// elements of type `ty` and have the same length.
pub(crate) fn reduce_into(ty: ElementType, op: ReduceOp, acc: &mut [u8], other: &[u8]) {
    debug_assert_eq!(acc.len(), other.len());
    match ty {
        ElementType::F64 => combine_plain::<f64>(acc, other, op),
        ElementType::F32 => combine_plain::<f32>(acc, other, op),
        ElementType::F16 => {
            if !combine_half::<f16>(acc, other, op) {
                combine_slices::<f16>(acc, other, op);
            }
        }
        ElementType::BF16 => {
            if !combine_half::<bf16>(acc, other, op) {
                combine_slices::<bf16>(acc, other, op);
            }
        }
        ElementType::I64 | ElementType::Index => combine_plain::<i64>(acc, other, op),
        ElementType::I32 => combine_plain::<i32>(acc, other, op),
        ElementType::I16 => combine_plain::<i16>(acc, other, op),
        ElementType::I8 => combine_plain::<i8>(acc, other, op),
        ElementType::I1 => combine_slices::<Bit>(acc, other, op),
    }
}

/// A xorshift64 stream from `seed` (non-zero): the tests' reproducible
/// values.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_f32(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn float_max_propagates_nan_and_ints_wrap() {
        let mut acc = bytes_f32(&[1.0, f32::NAN]);
        reduce_into(ElementType::F32, ReduceOp::Max, &mut acc, &bytes_f32(&[2.0, 0.0]));
        let got: Vec<f32> = acc.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got[0], 2.0);
        assert!(got[1].is_nan());

        let mut acc = vec![127u8]; // i8 127
        reduce_into(ElementType::I8, ReduceOp::Sum, &mut acc, &[1u8]);
        assert_eq!(acc[0] as i8, -128);
    }

    /// The run-at-a-time half-precision path is bitwise the element-wise
    /// rule, for every op, on values that round, overflow, are subnormal,
    /// infinite or NaN, over lengths that end mid-run.
    #[test]
    fn half_runs_match_the_element_rule_bitwise() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut bits = || next() as u16;
        let len = HALF_RUN * 2 + 37;
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
            for ty in [ElementType::F16, ElementType::BF16] {
                let a: Vec<u8> = (0..len).flat_map(|_| bits().to_ne_bytes()).collect();
                let b: Vec<u8> = (0..len).flat_map(|_| bits().to_ne_bytes()).collect();
                // Vec<u16> storage: aligned, so the run path is taken.
                let words = |v: &[u8]| v.chunks_exact(2).map(|c| u16::from_ne_bytes([c[0], c[1]])).collect::<Vec<u16>>();
                let (mut fast, other) = (words(&a), words(&b));
                // SAFETY: u16 storage viewed as bytes.
                let (fast_bytes, other_bytes) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(fast.as_mut_ptr().cast::<u8>(), len * 2),
                        std::slice::from_raw_parts(other.as_ptr().cast::<u8>(), len * 2),
                    )
                };
                let taken = match ty {
                    ElementType::F16 => combine_half::<f16>(fast_bytes, other_bytes, op),
                    _ => combine_half::<bf16>(fast_bytes, other_bytes, op),
                };
                assert!(taken, "aligned buffers take the run path");
                let mut slow = a.clone();
                match ty {
                    ElementType::F16 => combine_slices::<f16>(&mut slow, &b, op),
                    _ => combine_slices::<bf16>(&mut slow, &b, op),
                }
                assert_eq!(fast_bytes, &slow[..], "{ty:?} {op:?}");
            }
        }
    }

    /// The non-temporal path of the fused reduction is bitwise the element
    /// rule folded in order, and writes only elements `lo..hi`: every plain
    /// type and op, every output offset within a line (a head of 0 .. 63
    /// bytes), ranges shorter than the head, ending mid-line or on a line,
    /// inputs at other offsets, an output that is an input; up and down;
    /// SSE2 stores and, where the CPU has it, AVX.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn streamed_lines_match_the_element_rule_bitwise() {
        fn check<E: Plain, const L: usize>(keep: u64, bits: &mut impl FnMut() -> u64) {
            let es = E::SIZE;
            // 64-byte aligned storage plus `shift` bytes.
            let at = |store: &mut Vec<u64>, shift: usize| -> *mut u8 {
                let p = store.as_mut_ptr().cast::<u8>();
                p.wrapping_add(p.align_offset(LINE) + shift)
            };
            for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
                for shift in (0..LINE).step_by(es) {
                    for (lo, len) in [(0, 0), (0, 1), (3, L - 1), (0, L), (1, L + 1), (0, 2 * L + 3), (5, 5 * L + 7)] {
                        for in_place in [false, true] {
                            let hi = lo + len;
                            let words = (hi * es + 2 * LINE) / 8 + 1;
                            let mut stores: Vec<Vec<u64>> = (0..5).map(|_| vec![0u64; words]).collect();
                            // Three inputs at other offsets than the outputs.
                            let ins: Vec<*mut u8> = (0..3).map(|k| at(&mut stores[k], (shift + (k + 1) * es) % LINE)).collect();
                            let mut outs: Vec<*mut u8> = (3..5).map(|k| at(&mut stores[k], shift)).collect();
                            for &p in ins.iter().chain(&outs) {
                                for i in 0..hi + 1 {
                                    let v = (bits() & keep).to_ne_bytes();
                                    // SAFETY: element i of a buffer of more than hi + 1 elements.
                                    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), p.add(i * es), es) };
                                }
                            }
                            if in_place {
                                // The first input is also an output (same line offset).
                                let p = at(&mut stores[0], shift);
                                // SAFETY: both hold hi + 1 elements.
                                unsafe { std::ptr::copy(ins[0], p, (hi + 1) * es) };
                                outs[0] = p;
                            }
                            let mut ins: Vec<*const u8> = ins.iter().map(|&p| p.cast_const()).collect();
                            if in_place {
                                ins[0] = outs[0];
                            }
                            // SAFETY: elements 0..=hi of every buffer.
                            let bytes = |p: *const u8| unsafe { std::slice::from_raw_parts(p, (hi + 1) * es) }.to_vec();
                            let mut expected: Vec<Vec<u8>> = outs.iter().map(|&p| bytes(p)).collect();
                            for i in lo..hi {
                                let r = i * es..(i + 1) * es;
                                let mut x = E::load(&bytes(ins[0])[r.clone()]);
                                for &p in &ins[1..] {
                                    x = E::combine(x, E::load(&bytes(p)[r.clone()]), op);
                                }
                                for e in &mut expected {
                                    x.store(&mut e[r.clone()]);
                                }
                            }
                            let backup: Vec<Vec<u8>> = outs.iter().map(|&p| bytes(p)).collect();
                            let restore = |outs: &[*mut u8]| {
                                for (&p, b) in outs.iter().zip(&backup) {
                                    // SAFETY: hi + 1 elements, as above.
                                    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), p, b.len()) };
                                }
                            };
                            let mut avx = vec![false];
                            if std::arch::is_x86_feature_detected!("avx2") {
                                avx.push(true);
                            }
                            for (with_avx, down) in avx.iter().flat_map(|&a| [(a, false), (a, true)]) {
                                restore(&outs);
                                // SAFETY: every buffer holds hi + 1 elements, aligned for E
                                // (LINE and the shifts are multiples of its size); the
                                // outputs share a line offset; AVX2 only where present.
                                unsafe {
                                    match (with_avx, down) {
                                        (true, false) => fused_lines_avx2::<E, L, true, false>(op, &ins, &outs, lo, hi),
                                        (true, true) => fused_lines_avx2::<E, L, true, true>(op, &ins, &outs, lo, hi),
                                        (false, false) => fused_lines::<E, L, true, false, false>(op, &ins, &outs, lo, hi),
                                        (false, true) => fused_lines::<E, L, true, false, true>(op, &ins, &outs, lo, hi),
                                    }
                                }
                                store_fence();
                                for (k, (&p, e)) in outs.iter().zip(&expected).enumerate() {
                                    assert_eq!(
                                        bytes(p),
                                        *e,
                                        "{} {op:?} shift {shift} lo {lo} len {len} in place {in_place} avx {with_avx} down {down} output {k}",
                                        std::any::type_name::<E>()
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        let mut bits = xorshift(0x2545_f491_4f6c_dd1d);
        // Floats: the top exponent bit cleared (finite values, so no NaN
        // payload question), products that round and underflow.
        check::<f32, 16>(0xbfff_ffff, &mut bits);
        check::<f64, 8>(!(1 << 62), &mut bits);
        check::<i64, 8>(!0, &mut bits);
        check::<i32, 16>(!0, &mut bits);
        check::<i16, 32>(!0, &mut bits);
        check::<i8, 64>(!0, &mut bits);
    }

    /// Which way the streamed kernel goes: outputs a line or two after the
    /// inputs modulo 4 KiB (allocated one after the other) stall walking
    /// up, not down; a line before, the other way round; both at once,
    /// neither (`reduce_lines` declines: the block path); in place or half a
    /// page apart, up.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn streamed_lines_walk_where_loads_do_not_follow_stores() {
        const N: usize = 4096;
        let mut store = vec![0f32; 16 * N];
        let base = store.as_mut_ptr().cast::<u8>();
        let base = base.wrapping_add(base.align_offset(4096));
        // Inputs at 0 and 4 pages (+ `skew` for the second); outputs 9 and
        // 11 pages on, `ahead` bytes further.
        let place = |ahead: isize, skew: isize| {
            let x = [base, base.wrapping_add(4 * 4096).wrapping_offset(skew)].map(|p| p.cast_const());
            let y = [9, 11].map(|p| base.wrapping_add(p * 4096).wrapping_offset(ahead));
            (x, y)
        };
        let way = |ahead: isize, skew: isize| {
            let (x, y) = place(ahead, skew);
            stream_down(&x, &y)
        };
        assert_eq!(way(64, 0), Some(true));
        assert_eq!(way(128, 0), Some(true));
        assert_eq!(way(-64, 0), Some(false));
        assert_eq!(way(0, 0), Some(false));
        assert_eq!(way(2048, 0), Some(false));
        assert_eq!(way(64, -128), Some(true));
        assert_eq!(way(64, 128), None);
        let (x, y) = place(64, 128);
        // SAFETY: N elements of every buffer, inside `store`.
        assert!(!unsafe { reduce_lines(ElementType::F32, ReduceOp::Sum, &x, &y, 0, N, true) });
        let (x, y) = place(64, 0);
        // SAFETY: as above.
        assert!(unsafe { reduce_lines(ElementType::F32, ReduceOp::Sum, &x, &y, 0, N, true) });
        drop(store);
    }

    #[test]
    fn i1_rules() {
        let mut acc = vec![1u8, 1, 0, 0];
        reduce_into(ElementType::I1, ReduceOp::Sum, &mut acc, &[1, 0, 1, 0]);
        assert_eq!(acc, [0, 1, 1, 0]);
        let mut acc = vec![1u8, 1, 0, 0];
        reduce_into(ElementType::I1, ReduceOp::Min, &mut acc, &[1, 0, 1, 0]);
        assert_eq!(acc, [1, 0, 0, 0]);
        assert!(ReduceOp::from_i32(4).is_err());
    }
}
