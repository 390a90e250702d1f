//! The in-process all-reduce's data movement, once every member deposited.
//!
//! All ranks share one address space, so there is no message passing: the
//! elements are cut into chunks that the waiting members claim one at a
//! time; a chunk is reduced from every member's input (read where it lies,
//! see `Contribution::source`) in participant order, a cache line at a
//! time in registers (`f16`, `bf16`, `i1`: an L1-sized block at a time),
//! and stored straight into every member's output.
//! Every input byte is read once and every output byte written once, with
//! no staging copy: the whole all-reduce moves what `n` memcpys of the
//! message move, spread over whichever ranks the OS is running (with 4
//! ranks on 2 cores, a descheduled rank holds no share of the work; the
//! members that run out of chunks sleep on a condition variable).
//!
//! Every chunk is folded in participant order whoever reduces it, so every
//! member gets bitwise the same result as the sequential fold.

use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::contribution::Contribution;
use super::dtype::{reduce_into, reduce_lines, store_fence, ElementType, ReduceOp};
use super::error::{RtError, RtResult};
use super::memref::StridedView;

/// Bytes of a claimed chunk (large enough that claiming costs nothing,
/// small enough that the members share even a few MiB).
const CHUNK_BYTES: usize = 256 << 10;
/// Bytes reduced at a time (the accumulator stays in L1).
const BLOCK_BYTES: usize = 8 << 10;
/// From this many output bytes in all (the L3 of the machine the figures
/// were taken on: with the inputs, twice what it holds), the outputs are
/// written with non-temporal stores: they would not stay in the cache
/// anyway, and ordinary stores first read every output line in (a third
/// more memory traffic). Measured there (2 threads, f32, 4 ranks): 8 MiB
/// messages 2.9 -> 1.6 ms, 4 MiB ones no better (they fit the L3).
pub(crate) const STREAM_MIN_BYTES: usize = 32 << 20;

/// Where the members of one all-reduce meet.
#[derive(Default)]
pub(crate) struct Gate {
    /// Next chunk to claim.
    next: AtomicUsize,
    /// Chunks reduced and stored.
    finished: AtomicUsize,
    /// Set (by whoever finishes the last chunk) once every chunk is stored.
    done: Mutex<bool>,
    all: Condvar,
}

enum Outputs<'a> {
    /// Every output is packed row-major: its first byte.
    Direct(Vec<*mut u8>),
    /// Some output is strided: written through the views.
    Views(Vec<&'a StridedView>),
}

/// One all-reduce over `ordered` (participant order): reduces the chunks
/// this rank claims, then waits until every chunk is stored (or `timeout`).
pub(crate) fn all_reduce(ordered: &[&Contribution], op: ReduceOp, gate: &Gate, timeout: Duration) -> RtResult<()> {
    let dtype = ordered[0].dtype;
    let es = dtype.size();
    let bytes = ordered[0].input_len();
    let numel = bytes / es;
    let mut views = Vec::with_capacity(ordered.len());
    for c in ordered {
        let out = c.target.as_ref().ok_or_else(|| RtError::Internal(format!("rank {} shared no output", c.rank)))?;
        if c.input_len() != bytes || out.packed_len() != bytes {
            return Err(RtError::Internal(format!("rank {} all-reduce buffers differ in size", c.rank)));
        }
        views.push(out);
    }
    let inputs: Vec<*const u8> = ordered.iter().map(|c| c.input_ptr()).collect();
    let outputs = match views.iter().map(|v| v.contiguous_base()).collect::<Option<Vec<_>>>() {
        Some(bases) => Outputs::Direct(bases),
        None => Outputs::Views(views),
    };
    // Strided outputs are written one chunk per member (each write walks
    // the view's rows).
    let chunk = match outputs {
        Outputs::Direct(_) => CHUNK_BYTES / es,
        Outputs::Views(_) => numel.div_ceil(ordered.len()),
    }
    .max(1);
    let chunks = numel.div_ceil(chunk);
    if chunks == 0 {
        return Ok(());
    }
    let stream = bytes * ordered.len() >= STREAM_MIN_BYTES;
    let mut result = Ok(());
    loop {
        let c = gate.next.fetch_add(1, Ordering::Relaxed);
        if c >= chunks {
            break;
        }
        let (lo, hi) = (c * chunk, ((c + 1) * chunk).min(numel));
        let reduced = match &outputs {
            // SAFETY: every input holds `numel` packed elements, valid and
            // unmodified until its rank's wait returns, which is after the
            // last chunk is stored; every output holds `numel` elements and
            // no one else touches elements lo..hi (this rank claimed them).
            Outputs::Direct(bases) => unsafe { reduce_direct(dtype, op, &inputs, bases, lo * es, hi * es, stream) },
            // SAFETY: as above.
            Outputs::Views(views) => unsafe { reduce_into_views(dtype, op, &inputs, views, lo, hi) },
        };
        if result.is_ok() {
            result = reduced;
        }
        if stream {
            store_fence();
        }
        // AcqRel: the last finisher sees every member's stores.
        if gate.finished.fetch_add(1, Ordering::AcqRel) + 1 == chunks {
            *gate.done.lock().unwrap_or_else(PoisonError::into_inner) = true;
            gate.all.notify_all();
        }
    }
    let deadline = Instant::now() + timeout;
    let mut done = gate.done.lock().unwrap_or_else(PoisonError::into_inner);
    while !*done {
        let now = Instant::now();
        if now >= deadline {
            return Err(RtError::Timeout { timeout, missing: Vec::new() });
        }
        done = gate.all.wait_timeout(done, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
    }
    result
}

/// Bytes `lo..hi` of every input's packed data.
///
/// # Safety
/// Every input is valid for reads of `hi` bytes and not written meanwhile.
unsafe fn input<'a>(p: *const u8, lo: usize, hi: usize) -> &'a [u8] {
    // SAFETY: forwarded contract.
    unsafe { std::slice::from_raw_parts(p.add(lo), hi - lo) }
}

/// Reduces bytes `lo..hi` into every output: a line at a time in registers
/// ([`reduce_lines`]), or block by block ([`reduce_blocks`]: the other
/// types, and streamed outputs the fused kernel declines; each block is
/// then stored into each output with its own line alignment).
///
/// # Safety
/// Every input and output is valid for `hi` bytes; nothing else accesses
/// bytes `lo..hi` of the outputs, or writes those of the inputs, meanwhile.
/// An output may be an input (an in-place all-reduce): each block is read
/// in full before it is stored.
unsafe fn reduce_direct(
    dtype: ElementType,
    op: ReduceOp,
    inputs: &[*const u8],
    outputs: &[*mut u8],
    lo: usize,
    hi: usize,
    stream: bool,
) -> RtResult<()> {
    let es = dtype.size();
    // SAFETY: forwarded contract.
    if unsafe { reduce_lines(dtype, op, inputs, outputs, lo / es, hi / es, stream) } {
        return Ok(());
    }
    // SAFETY: forwarded contract.
    unsafe { reduce_blocks(dtype, op, inputs, outputs, lo, hi, stream) };
    Ok(())
}

/// [`reduce_direct`] a block at a time: each block reduced into an L1
/// buffer (with the fused kernel where the type has one), then copied into
/// every output.
///
/// # Safety
/// As for [`reduce_direct`].
unsafe fn reduce_blocks(dtype: ElementType, op: ReduceOp, inputs: &[*const u8], outputs: &[*mut u8], lo: usize, hi: usize, stream: bool) {
    let es = dtype.size();
    // u64 words: aligned for every element type.
    let mut words = [0u64; BLOCK_BYTES / 8];
    let block = words.as_mut_ptr().cast::<u8>();
    let mut from = vec![std::ptr::null::<u8>(); inputs.len()];
    let step = BLOCK_BYTES / es * es;
    let mut at = lo;
    while at < hi {
        let end = (at + step).min(hi);
        for (f, &p) in from.iter_mut().zip(inputs) {
            // SAFETY: byte `at` of an input (forwarded contract).
            *f = unsafe { p.add(at) };
        }
        // The fused kernel into the block where the type has one (the
        // inputs from `at`, the block as the only output).
        // SAFETY: the inputs hold `end - at` bytes from `at`, the block
        // `BLOCK_BYTES`, and nothing else touches it.
        if !unsafe { reduce_lines(dtype, op, &from, &[block], 0, (end - at) / es, false) } {
            // SAFETY: plain bytes of the local array.
            let acc = unsafe { std::slice::from_raw_parts_mut(block, end - at) };
            // SAFETY: forwarded contract.
            acc.copy_from_slice(unsafe { input(inputs[0], at, end) });
            for &p in &inputs[1..] {
                // SAFETY: forwarded contract.
                reduce_into(dtype, op, acc, unsafe { input(p, at, end) });
            }
        }
        // SAFETY: the bytes just reduced.
        let acc = unsafe { std::slice::from_raw_parts(block.cast_const(), end - at) };
        for &out in outputs {
            // SAFETY: forwarded contract.
            unsafe { store(out.add(at), acc, stream) };
        }
        at = end;
    }
}

/// Reduces elements `lo..hi` into a buffer and writes it through the views.
///
/// # Safety
/// As for [`reduce_direct`] (byte offsets are element offsets times the
/// element size).
unsafe fn reduce_into_views(
    dtype: ElementType,
    op: ReduceOp,
    inputs: &[*const u8],
    views: &[&StridedView],
    lo: usize,
    hi: usize,
) -> RtResult<()> {
    let es = dtype.size();
    let mut acc = super::pool::take((hi - lo) * es);
    // SAFETY: forwarded contract.
    acc.extend_from_slice(unsafe { input(inputs[0], lo * es, hi * es) });
    for &p in &inputs[1..] {
        // SAFETY: forwarded contract.
        reduce_into(dtype, op, &mut acc, unsafe { input(p, lo * es, hi * es) });
    }
    let written = views.iter().try_for_each(|v| v.write_range(lo, &acc));
    super::pool::give(acc);
    written
}

/// Copies `src` to `dst`; with `stream` (x86-64), the whole 64-byte lines
/// of `dst` with non-temporal stores (a partial line streamed would be
/// flushed alone, a read-modify-write in memory), the ends before and after
/// them with ordinary stores.
///
/// # Safety
/// `dst` is valid for `src.len()` bytes of writes and does not overlap `src`.
unsafe fn store(dst: *mut u8, src: &[u8], stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        const LINE: usize = 64;
        let len = src.len();
        let head = dst.align_offset(LINE).min(len);
        let body_end = head + (len - head) / LINE * LINE;
        // SAFETY: every access is inside dst[..len] / src[..len]; the
        // streamed stores are 16-byte aligned (SSE2 is baseline x86-64).
        unsafe {
            ptr::copy_nonoverlapping(src.as_ptr(), dst, head);
            let mut i = head;
            while i < body_end {
                for k in (0..LINE).step_by(16) {
                    _mm_stream_si128(dst.add(i + k).cast::<__m128i>(), _mm_loadu_si128(src.as_ptr().add(i + k).cast::<__m128i>()));
                }
                i += LINE;
            }
            ptr::copy_nonoverlapping(src.as_ptr().add(body_end), dst.add(body_end), len - body_end);
        }
        return;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = stream;
    // SAFETY: forwarded contract.
    unsafe { ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
}

#[cfg(test)]
mod tests {
    use half::bf16;

    use super::*;

    /// The block path with streamed stores, outputs at different offsets
    /// within a cache line (what the fused kernel declines), called alone
    /// and through `reduce_direct`: the fold in order bit for bit, over two
    /// ranges split mid-line (two chunks), with nothing written outside
    /// them; the fused kernel into the block (f32, f64, i8) and the element
    /// rule (bf16).
    #[test]
    fn streamed_blocks_at_different_line_offsets_are_the_ordered_fold() {
        let mut next = crate::runtime::dtype::xorshift(0x9e37_79b9_7f4a_7c15);
        for dtype in [ElementType::F32, ElementType::F64, ElementType::I8, ElementType::BF16] {
            let es = dtype.size();
            // Finite values that round when added and multiplied.
            let mut value = || {
                let v = (next() % 2000) as f32 * 0.37 - 370.0;
                match dtype {
                    ElementType::F32 => v.to_ne_bytes().to_vec(),
                    ElementType::F64 => (f64::from(v) * 1.1).to_ne_bytes().to_vec(),
                    ElementType::BF16 => bf16::from_f32(v).to_ne_bytes().to_vec(),
                    _ => vec![v as i8 as u8],
                }
            };
            for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Prod] {
                let n = (3 * BLOCK_BYTES + 100) / es;
                let bytes = n * es;
                let (lo, mid, hi) = (es, (BLOCK_BYTES + 24) / es * es, bytes - es);
                let words = bytes / 8 + 32;
                let mut stores: Vec<Vec<u64>> = (0..8).map(|_| vec![0u64; words]).collect();
                let at = |store: &mut Vec<u64>, shift: usize| -> *mut u8 {
                    let p = store.as_mut_ptr().cast::<u8>();
                    p.wrapping_add(p.align_offset(64) + shift)
                };
                let ptrs: Vec<*mut u8> = [8, 0, 24, 48, 16, 32, 8, 0].iter().zip(&mut stores).map(|(&s, b)| at(b, s)).collect();
                for &p in &ptrs {
                    for i in 0..n {
                        // SAFETY: element i of a buffer of more than n elements.
                        unsafe { std::ptr::copy_nonoverlapping(value().as_ptr(), p.add(i * es), es) };
                    }
                }
                let (inputs, outputs): (Vec<*const u8>, Vec<*mut u8>) =
                    (ptrs[..4].iter().map(|&p| p.cast_const()).collect(), ptrs[4..].to_vec());
                // SAFETY: n elements of each buffer.
                let read = |p: *const u8| unsafe { std::slice::from_raw_parts(p, bytes) }.to_vec();
                let mut fold = read(inputs[0]);
                for &p in &inputs[1..] {
                    reduce_into(dtype, op, &mut fold, &read(p));
                }
                let before: Vec<Vec<u8>> = outputs.iter().map(|&p| read(p)).collect();
                // The block path, then whichever path `reduce_direct` takes.
                for direct in [false, true] {
                    for (&p, old) in outputs.iter().zip(&before) {
                        // SAFETY: `bytes` of each output.
                        unsafe { std::ptr::copy_nonoverlapping(old.as_ptr(), p, bytes) };
                    }
                    for (a, b) in [(lo, mid), (mid, hi)] {
                        // SAFETY: every buffer holds `bytes`; nothing else touches them.
                        unsafe {
                            if direct {
                                reduce_direct(dtype, op, &inputs, &outputs, a, b, true).unwrap();
                            } else {
                                reduce_blocks(dtype, op, &inputs, &outputs, a, b, true);
                            }
                        }
                    }
                    store_fence();
                    for (k, (&p, old)) in outputs.iter().zip(&before).enumerate() {
                        let mut expected = old.clone();
                        expected[lo..hi].copy_from_slice(&fold[lo..hi]);
                        let got = read(p);
                        assert!(
                            got == expected,
                            "{dtype:?} {op:?} direct {direct} output {k}: first difference at byte {:?}",
                            got.iter().zip(&expected).position(|(x, y)| x != y)
                        );
                    }
                }
            }
        }
    }
}
