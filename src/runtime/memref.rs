//! Reading and writing MLIR memrefs passed as unranked memrefs.
//!
//! An unranked `memref<*xT>` argument of an external call arrives as two C
//! arguments, `rank: i64` and `desc: *mut c_void`; `desc` points to the ranked
//! descriptor
//!
//! ```text
//! { allocated: *mut T, aligned: *mut T, offset: i64,
//!   sizes: [i64; rank], strides: [i64; rank] }
//! ```
//!
//! and element `idx` lives at `aligned + offset + sum(idx[d] * strides[d])`
//! (in elements). [`StridedView`] copies the descriptor (MLIR usually puts it
//! on the caller's stack), validates it, and moves data between the strided
//! memory and packed row-major byte buffers. [`OwnedMemRef`] builds such
//! descriptors in Rust memory, for harnesses and tests.

use std::ffi::c_void;
use std::ptr;

use super::error::{RtError, RtResult};

#[cfg(not(target_pointer_width = "64"))]
compile_error!("the Blueprint runtime assumes 64-bit pointers (MLIR memref descriptor layout)");

/// Largest rank accepted in a descriptor (guards against reading a garbage
/// rank far past the descriptor).
pub const MAX_RANK: i64 = 64;

/// A validated copy of a ranked memref descriptor of `elem_size`-byte elements.
#[derive(Debug, Clone)]
pub struct StridedView {
    aligned: *mut u8,
    offset: i64,
    sizes: Vec<i64>,
    strides: Vec<i64>,
    elem_size: usize,
    numel: usize,
}

// SAFETY: a view is an address plus a copied shape; it never dereferences
// anything on its own. The contract of `from_unranked` makes the caller
// guarantee that the data stays valid while the view is used, and the
// runtime uses an output view only from the rank thread that created it
// (it is stored in the world between a start call and the matching wait).
unsafe impl Send for StridedView {}
// SAFETY: the view's methods only copy between the addressed memory and
// Rust buffers; the runtime shares a view (the in-process all-reduce's
// output) only for writes of disjoint element ranges by different ranks,
// while the owning rank waits and does not touch the memory.
unsafe impl Sync for StridedView {}

impl StridedView {
    /// Reads and validates the descriptor of an unranked memref argument.
    ///
    /// Checks: `0 <= rank <= MAX_RANK`, non-null descriptor, non-negative
    /// sizes, non-null `allocated`/`aligned` pointers when the memref has
    /// elements, no addressed element before `aligned`, and no overflow in
    /// the address computation. `what` names the argument in errors.
    ///
    /// # Safety
    /// If `rank` is in range and `desc` is non-null, `desc` must point to a
    /// readable ranked descriptor of rank `rank` (`3 + 2 * rank` 8-byte
    /// words). Every element the descriptor addresses must stay valid for
    /// reads through [`read`](Self::read) and writes through
    /// [`write`](Self::write) for as long as the view is used.
    pub unsafe fn from_unranked(what: &str, rank: i64, desc: *const c_void, elem_size: usize) -> RtResult<Self> {
        if rank < 0 {
            return Err(RtError::memref(what, format!("negative rank {rank}")));
        }
        if rank > MAX_RANK {
            return Err(RtError::memref(what, format!("rank {rank} exceeds {MAX_RANK}")));
        }
        if desc.is_null() {
            return Err(RtError::memref(what, "null descriptor pointer"));
        }
        let r = rank as usize;
        let words = desc.cast::<i64>();
        let ptrs = desc.cast::<*mut u8>();
        // SAFETY: the caller guarantees `desc` is readable for 3 + 2 * rank
        // words; unaligned reads make no assumption about its alignment.
        let (allocated, aligned, offset, sizes, strides) = unsafe {
            let allocated = ptr::read_unaligned(ptrs);
            let aligned = ptr::read_unaligned(ptrs.add(1));
            let offset = ptr::read_unaligned(words.add(2));
            let sizes: Vec<i64> = (0..r).map(|d| ptr::read_unaligned(words.add(3 + d))).collect();
            let strides: Vec<i64> = (0..r).map(|d| ptr::read_unaligned(words.add(3 + r + d))).collect();
            (allocated, aligned, offset, sizes, strides)
        };
        if let Some(d) = sizes.iter().position(|&s| s < 0) {
            return Err(RtError::memref(what, format!("negative size {} in dim {d}", sizes[d])));
        }
        let numel = shape_numel(&sizes).ok_or_else(|| RtError::memref(what, format!("element count of {sizes:?} overflows")))?;
        if numel > 0 {
            if allocated.is_null() || aligned.is_null() {
                return Err(RtError::memref(what, format!("null data pointer for {numel} elements")));
            }
            // Lowest and highest addressed element, in i128 so nothing overflows.
            let mut lo = i128::from(offset);
            let mut hi = i128::from(offset);
            for (&s, &st) in sizes.iter().zip(&strides) {
                let span = i128::from(s - 1) * i128::from(st);
                if span < 0 {
                    lo += span;
                } else {
                    hi += span;
                }
            }
            if lo < 0 {
                return Err(RtError::memref(what, format!("addresses element {lo} before the aligned pointer")));
            }
            if (hi + 1) * elem_size as i128 > isize::MAX as i128 {
                return Err(RtError::memref(what, "addressed range overflows"));
            }
        }
        Ok(StridedView { aligned, offset, sizes, strides, elem_size, numel })
    }

    /// The address of the first element (the aligned pointer plus the
    /// offset), for kernels that walk the strides themselves.
    pub fn first_element(&self) -> *mut u8 {
        self.aligned.wrapping_add(self.offset as usize * self.elem_size)
    }

    /// The bytes the view addresses, from its lowest to past its highest
    /// element (`None` for an empty view): two views whose spans are
    /// disjoint share no element.
    pub fn span(&self) -> Option<std::ops::Range<usize>> {
        if self.numel == 0 {
            return None;
        }
        let (mut lo, mut hi) = (self.offset, self.offset);
        for (&s, &st) in self.sizes.iter().zip(&self.strides) {
            let extent = (s - 1) * st;
            if extent < 0 {
                lo += extent;
            } else {
                hi += extent;
            }
        }
        // Validated: every addressed element lies at or after `aligned`
        // and the range does not overflow.
        let base = self.aligned as usize;
        Some(base + lo as usize * self.elem_size..base + (hi as usize + 1) * self.elem_size)
    }

    /// The memref's sizes.
    pub fn sizes(&self) -> &[i64] {
        &self.sizes
    }

    /// The memref's strides (in elements).
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// Number of bytes of the packed row-major form.
    pub fn packed_len(&self) -> usize {
        self.numel * self.elem_size
    }

    /// Address of the first element when the elements are packed row-major
    /// (strides those of the identity layout, ignoring size-1 dimensions),
    /// so packed position `i` is at `base + i * elem_size`; `None` for a
    /// strided or empty view.
    pub fn contiguous_base(&self) -> Option<*mut u8> {
        if self.numel == 0 {
            return None;
        }
        let mut expected = 1i64;
        for (&size, &stride) in self.sizes.iter().zip(&self.strides).rev() {
            if size != 1 && stride != expected {
                return None;
            }
            expected *= size;
        }
        // SAFETY: element offset `offset` is addressed (numel > 0).
        Some(unsafe { self.addr(self.offset) })
    }

    /// Length and stride of the innermost rows (a rank-0 memref is one row
    /// of one element).
    fn row(&self) -> (usize, i64) {
        match (self.sizes.last(), self.strides.last()) {
            (Some(&s), Some(&st)) => (s as usize, st),
            _ => (1, 1),
        }
    }

    /// Calls `f(packed_index, element_offset)` for the first element of
    /// every innermost row, in row-major order.
    fn for_each_row(&self, mut f: impl FnMut(usize, i64)) {
        if self.numel == 0 {
            return;
        }
        let r = self.sizes.len();
        let (row_len, _) = self.row();
        let outer = r.saturating_sub(1);
        let mut idx = vec![0i64; outer];
        let mut packed = 0usize;
        loop {
            let start = self.offset + idx.iter().zip(&self.strides).map(|(&i, &st)| i * st).sum::<i64>();
            f(packed, start);
            packed += row_len;
            // Advance the odometer over the outer dimensions.
            let mut d = outer;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < self.sizes[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// Byte address of the element at element offset `elem_offset`.
    ///
    /// # Safety
    /// `elem_offset` must be an offset the view addresses (validated range).
    unsafe fn addr(&self, elem_offset: i64) -> *mut u8 {
        // SAFETY: the constructor checked that every addressed offset is in
        // 0..=hi with (hi + 1) * elem_size <= isize::MAX, and the caller
        // passes such an offset; the constructor's contract makes the
        // region part of one live allocation.
        unsafe { self.aligned.add(elem_offset as usize * self.elem_size) }
    }

    /// Copies the elements into a packed row-major byte buffer.
    pub fn read(&self) -> Vec<u8> {
        let mut out: Vec<u8> = super::pool::take(self.packed_len());
        self.fill(&mut out);
        out
    }

    /// [`Self::read`], or the allocation error when there is no memory for
    /// the copy (a caller that reports it instead of aborting).
    ///
    /// # Errors
    /// The buffer of [`Self::packed_len`] bytes cannot be allocated.
    pub fn try_read(&self) -> Result<Vec<u8>, std::collections::TryReserveError> {
        let mut out = Vec::new();
        out.try_reserve_exact(self.packed_len())?;
        self.fill(&mut out);
        Ok(out)
    }

    /// Writes the packed elements into `out`, which is empty with room for
    /// [`Self::packed_len`] bytes.
    fn fill(&self, out: &mut Vec<u8>) {
        let es = self.elem_size;
        let len = self.packed_len();
        debug_assert!(out.is_empty() && out.capacity() >= len);
        // Not zeroed first: every byte is written below (the rows cover
        // every element exactly once), so large reads skip a memset.
        let base = out.as_mut_ptr();
        let (row_len, stride) = self.row();
        self.for_each_row(|packed, start| {
            // SAFETY: packed..packed+row_len is inside the `len`-byte
            // capacity (the rows partition 0..numel).
            let dst = unsafe { base.add(packed * es) };
            if stride == 1 || row_len == 1 {
                // SAFETY: elements start..start+row_len are addressed by the
                // view (contiguous row), valid for reads per the constructor
                // contract; `dst` has room for row_len * es bytes.
                unsafe { ptr::copy_nonoverlapping(self.addr(start), dst, row_len * es) };
            } else {
                for k in 0..row_len {
                    // SAFETY: element start + k * stride is addressed by the
                    // view; `dst + k * es` has room for es bytes.
                    unsafe { ptr::copy_nonoverlapping(self.addr(start + k as i64 * stride), dst.add(k * es), es) };
                }
            }
        });
        // SAFETY: every one of the `len` bytes was written above.
        unsafe { out.set_len(len) };
    }

    /// Writes `data` (packed row-major) into the elements at packed
    /// positions `first .. first + data.len() / elem_size`.
    pub fn write_range(&self, first: usize, data: &[u8]) -> RtResult<()> {
        let es = self.elem_size;
        let count = data.len() / es;
        if !data.len().is_multiple_of(es) || first.checked_add(count).is_none_or(|end| end > self.numel) {
            return Err(RtError::Internal(format!("writing {count} elements at {first} into a memref of {} elements", self.numel)));
        }
        let end = first + count;
        let (row_len, stride) = self.row();
        self.for_each_row(|packed, start| {
            let (lo, hi) = (packed.max(first), (packed + row_len).min(end));
            if lo >= hi {
                return;
            }
            let src = &data[(lo - first) * es..(hi - first) * es];
            let row_start = start + (lo - packed) as i64 * stride;
            if stride == 1 || row_len == 1 {
                // SAFETY: as in `read`, with the memory valid for writes.
                unsafe { ptr::copy_nonoverlapping(src.as_ptr(), self.addr(row_start), src.len()) };
            } else {
                for (k, chunk) in src.chunks_exact(es).enumerate() {
                    // SAFETY: as in `read`, with the memory valid for writes.
                    unsafe { ptr::copy_nonoverlapping(chunk.as_ptr(), self.addr(row_start + k as i64 * stride), es) };
                }
            }
        });
        Ok(())
    }

    /// Scatters a packed row-major byte buffer into the elements.
    pub fn write(&self, data: &[u8]) -> RtResult<()> {
        if data.len() != self.packed_len() {
            return Err(RtError::Internal(format!("writing {} bytes into a memref of {} bytes", data.len(), self.packed_len())));
        }
        let es = self.elem_size;
        let (row_len, stride) = self.row();
        self.for_each_row(|packed, start| {
            let src = &data[packed * es..(packed + row_len) * es];
            if stride == 1 || row_len == 1 {
                // SAFETY: as in `read`, with the memory valid for writes.
                unsafe { ptr::copy_nonoverlapping(src.as_ptr(), self.addr(start), src.len()) };
            } else {
                for (k, chunk) in src.chunks_exact(es).enumerate() {
                    // SAFETY: as in `read`, with the memory valid for writes.
                    unsafe { ptr::copy_nonoverlapping(chunk.as_ptr(), self.addr(start + k as i64 * stride), es) };
                }
            }
        });
        Ok(())
    }
}

/// Product of `shape`, or `None` on a negative size or overflow.
pub(crate) fn shape_numel(shape: &[i64]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &s| acc.checked_mul(usize::try_from(s).ok()?))
}

/// Reads a rank-1 memref of 8-byte integers (`i64` or `index`).
///
/// # Safety
/// As for [`StridedView::from_unranked`] (reads only).
pub unsafe fn read_i64s(what: &str, rank: i64, desc: *const c_void) -> RtResult<Vec<i64>> {
    if rank != 1 {
        return Err(RtError::memref(what, format!("expected a rank-1 memref, got rank {rank}")));
    }
    // SAFETY: forwarded contract of this function.
    let view = unsafe { StridedView::from_unranked(what, rank, desc, 8) }?;
    Ok(view.read().chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().expect("8-byte chunk"))).collect())
}

/// A memref owned by Rust, with a descriptor laid out exactly as MLIR lays
/// out a ranked descriptor, to pass to the C entry points as `(rank, desc)`.
///
/// `T` is the storage type: `f64`, `f32`, `half::f16`, `half::bf16`, `i64`,
/// `i32`, `i16`, `i8`, `u8` (for `i1`), `i64` (for `index`).
#[derive(Debug, Clone)]
pub struct OwnedMemRef<T: Copy> {
    storage: Vec<T>,
    offset: i64,
    sizes: Vec<i64>,
    strides: Vec<i64>,
    /// `[allocated, aligned, offset, sizes.., strides..]` as 8-byte words.
    desc: Vec<u64>,
}

impl<T: Copy> OwnedMemRef<T> {
    /// A contiguous row-major memref of shape `shape` holding `data`.
    ///
    /// # Panics
    /// If `data.len()` is not the product of `shape`.
    pub fn new(shape: &[i64], data: Vec<T>) -> Self {
        assert_eq!(shape_numel(shape), Some(data.len()), "shape {shape:?} does not hold {} elements", data.len());
        Self::strided(data, 0, shape, &row_major_strides(shape))
    }

    /// A memref of shape `shape` filled with `value`.
    pub fn filled(shape: &[i64], value: T) -> Self {
        let n = shape_numel(shape).expect("valid shape");
        Self::new(shape, vec![value; n])
    }

    /// A memref over `storage` with an arbitrary offset, sizes and strides.
    /// Nothing is validated, so invalid descriptors can be built for tests.
    ///
    /// # Panics
    /// If `sizes` and `strides` differ in length.
    pub fn strided(storage: Vec<T>, offset: i64, sizes: &[i64], strides: &[i64]) -> Self {
        assert_eq!(sizes.len(), strides.len(), "sizes and strides differ in rank");
        let mut desc = vec![0u64; 3 + 2 * sizes.len()];
        desc[2] = offset as u64;
        for (d, (&s, &st)) in sizes.iter().zip(strides).enumerate() {
            desc[3 + d] = s as u64;
            desc[3 + sizes.len() + d] = st as u64;
        }
        OwnedMemRef { storage, offset, sizes: sizes.to_vec(), strides: strides.to_vec(), desc }
    }

    /// The `rank` C argument.
    pub fn rank(&self) -> i64 {
        self.sizes.len() as i64
    }

    /// The `desc` C argument, valid until `self` is dropped (descriptor and
    /// storage live on the heap; the data pointers are re-filled on every
    /// call).
    pub fn desc(&mut self) -> *mut c_void {
        let data = self.storage.as_mut_ptr();
        let words = self.desc.as_mut_ptr();
        // SAFETY: `desc` has at least 3 words, 8-byte aligned; pointers are
        // 8 bytes (checked at compile time above), so words 0 and 1 can hold
        // the allocated and aligned pointers.
        unsafe {
            words.cast::<*mut T>().write(data);
            words.add(1).cast::<*mut T>().write(data);
        }
        words.cast()
    }

    /// The `(rank, desc)` pair of C arguments.
    pub fn arg(&mut self) -> (i64, *mut c_void) {
        (self.rank(), self.desc())
    }

    /// Sizes of the memref.
    pub fn sizes(&self) -> &[i64] {
        &self.sizes
    }

    /// The underlying storage (including elements outside the view).
    pub fn storage(&self) -> &[T] {
        &self.storage
    }

    /// The memref's elements in row-major order.
    ///
    /// # Panics
    /// If the descriptor addresses elements outside the storage.
    pub fn to_vec(&self) -> Vec<T> {
        let n = shape_numel(&self.sizes).expect("valid sizes");
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0i64; self.sizes.len()];
        for _ in 0..n {
            let off = self.offset + idx.iter().zip(&self.strides).map(|(&i, &st)| i * st).sum::<i64>();
            out.push(self.storage[usize::try_from(off).expect("non-negative offset")]);
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.sizes[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    }
}

/// Row-major strides of `shape`.
pub fn row_major_strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1].max(1);
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_strided_views() {
        // A 2x3 view with column stride 2 and row stride 7, offset 1.
        let mut m = OwnedMemRef::strided((0..20i32).collect(), 1, &[2, 3], &[7, 2]);
        let (rank, desc) = m.arg();
        // SAFETY: `m` outlives the view and is not otherwise accessed.
        let view = unsafe { StridedView::from_unranked("m", rank, desc, 4) }.unwrap();
        let got: Vec<i32> = view.read().chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, vec![1, 3, 5, 8, 10, 12]);
        assert_eq!(got, m.to_vec());
        let new: Vec<u8> = (100..106i32).flat_map(i32::to_ne_bytes).collect();
        view.write(&new).unwrap();
        assert_eq!(m.to_vec(), vec![100, 101, 102, 103, 104, 105]);
        assert_eq!(m.storage()[2], 2, "elements outside the view are untouched");
    }

    #[test]
    fn negative_strides_and_rank0() {
        let mut m = OwnedMemRef::strided(vec![1i64, 2, 3, 4], 3, &[4], &[-1]);
        let (rank, desc) = m.arg();
        // SAFETY: `m` outlives the view.
        let view = unsafe { StridedView::from_unranked("m", rank, desc, 8) }.unwrap();
        assert_eq!(view.read(), [4i64, 3, 2, 1].iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<_>>());

        let mut s = OwnedMemRef::new(&[], vec![7i8]);
        let (rank, desc) = s.arg();
        // SAFETY: `s` outlives the view.
        let view = unsafe { StridedView::from_unranked("s", rank, desc, 1) }.unwrap();
        assert_eq!(view.read(), vec![7u8]);
    }

    #[test]
    fn rejects_invalid_descriptors() {
        let mut words = [0u64; 5];
        words[3] = 4;
        words[4] = 1;
        let desc = words.as_mut_ptr().cast::<c_void>();
        // SAFETY: `words` is a readable rank-1 descriptor; validation fails
        // before any data access.
        let err = unsafe { StridedView::from_unranked("x", 1, desc, 4) }.unwrap_err();
        assert!(err.to_string().contains("null data pointer"), "{err}");
        // SAFETY: negative rank is rejected before reading the descriptor.
        assert!(unsafe { StridedView::from_unranked("x", -1, desc, 4) }.is_err());
        // SAFETY: null descriptor is rejected before reading.
        assert!(unsafe { StridedView::from_unranked("x", 0, ptr::null(), 4) }.is_err());
        // Empty memref with null pointers is fine.
        words[3] = 0;
        let desc = words.as_mut_ptr().cast::<c_void>();
        // SAFETY: `words` is a readable rank-1 descriptor of 0 elements.
        let empty = unsafe { StridedView::from_unranked("x", 1, desc, 4) };
        assert_eq!(empty.unwrap().numel(), 0);

        let mut neg = OwnedMemRef::strided(vec![0f32; 4], 0, &[2, -1], &[1, 1]);
        let (rank, desc) = neg.arg();
        // SAFETY: `neg` is a valid descriptor; validation fails.
        assert!(unsafe { StridedView::from_unranked("x", rank, desc, 4) }.is_err());
        let mut before = OwnedMemRef::strided(vec![0f32; 4], 0, &[2], &[-1]);
        let (rank, desc) = before.arg();
        // SAFETY: `before` is a valid descriptor; validation fails.
        assert!(unsafe { StridedView::from_unranked("x", rank, desc, 4) }.is_err());
    }
}
