//! The matrix-product kernel (`_bprt_matmul_f32`) against the naive
//! triple loop: strided and transposed views, batches, an output that
//! shares memory with an input, and the errors it reports.

use std::ffi::c_void;

use super::super::dtype::xorshift;
use super::super::kernels::_bprt_matmul_f32;
use super::super::memref::OwnedMemRef;
use super::last_message;

/// A ranked descriptor over `data` (which must outlive its use).
fn descriptor(data: *mut f32, offset: i64, sizes: &[i64], strides: &[i64]) -> Vec<u64> {
    let mut words = vec![data as u64, data as u64, offset as u64];
    words.extend(sizes.iter().map(|&s| s as u64));
    words.extend(strides.iter().map(|&s| s as u64));
    words
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut next = xorshift(seed);
    (0..n).map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5).collect()
}

/// Element `idx` of a strided view of `storage`.
fn at(storage: &[f32], offset: i64, strides: &[i64], idx: &[i64]) -> f32 {
    let pos = offset + idx.iter().zip(strides).map(|(i, s)| i * s).sum::<i64>();
    storage[pos as usize]
}

fn call(a: &mut OwnedMemRef<f32>, b: &mut OwnedMemRef<f32>, c: &mut OwnedMemRef<f32>) -> i64 {
    let ((ra, da), (rb, db), (rc, dc)) = (a.arg(), b.arg(), c.arg());
    // SAFETY: the descriptors address the owned storages, alive for the call.
    unsafe { _bprt_matmul_f32(ra, da, rb, db, rc, dc) }
}

fn close(got: f32, want: f32) -> bool {
    (got - want).abs() <= 1e-5 * want.abs().max(1.0)
}

#[test]
fn products_of_strided_and_transposed_views_accumulate_into_c() {
    let (m, k, n) = (5i64, 7i64, 3i64);
    // A: a transposed view (column-major storage) with an offset.
    let a_store = random((1 + m * k) as usize, 1);
    let (a_off, a_strides) = (1, [1, m]);
    // B: every other column of a wider row-major matrix.
    let b_store = random((k * 2 * n) as usize, 2);
    let (b_off, b_strides) = (0, [2 * n, 2]);
    let c_init = random((m * n) as usize, 3);
    let mut a = OwnedMemRef::strided(a_store.clone(), a_off, &[m, k], &a_strides);
    let mut b = OwnedMemRef::strided(b_store.clone(), b_off, &[k, n], &b_strides);
    let mut c = OwnedMemRef::new(&[m, n], c_init.clone());
    assert_eq!(call(&mut a, &mut b, &mut c), 0, "{}", last_message());
    for i in 0..m {
        for j in 0..n {
            let want = c_init[(i * n + j) as usize]
                + (0..k).map(|l| at(&a_store, a_off, &a_strides, &[i, l]) * at(&b_store, b_off, &b_strides, &[l, j])).sum::<f32>();
            let got = c.to_vec()[(i * n + j) as usize];
            assert!(close(got, want), "C[{i},{j}] = {got}, want {want}");
        }
    }
}

#[test]
fn batched_products() {
    let (batch, m, k, n) = (3i64, 4i64, 6i64, 5i64);
    let a_data = random((batch * m * k) as usize, 4);
    let b_data = random((batch * k * n) as usize, 5);
    let mut a = OwnedMemRef::new(&[batch, m, k], a_data.clone());
    let mut b = OwnedMemRef::new(&[batch, k, n], b_data.clone());
    let mut c = OwnedMemRef::filled(&[batch, m, n], 0.0f32);
    assert_eq!(call(&mut a, &mut b, &mut c), 0, "{}", last_message());
    let got = c.to_vec();
    for p in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let want: f32 = (0..k).map(|l| a_data[(p * m * k + i * k + l) as usize] * b_data[(p * k * n + l * n + j) as usize]).sum();
                assert!(close(got[(p * m * n + i * n + j) as usize], want));
            }
        }
    }
}

#[test]
fn an_output_sharing_memory_with_an_input_sees_the_input_as_it_was() {
    // C += A B with C the very buffer A (then B) reads: square, so shapes
    // agree, and large enough that the product writes C before it has read
    // all of its inputs.
    let n = 300i64;
    let strides = [n, 1];
    for shared_is_a in [true, false] {
        let mut storage = random((n * n) as usize, 6);
        let original = storage.clone();
        let other_data = random((n * n) as usize, 7);
        let mut other = OwnedMemRef::new(&[n, n], other_data.clone());
        let mut shared = descriptor(storage.as_mut_ptr(), 0, &[n, n], &strides);
        let mut c_desc = descriptor(storage.as_mut_ptr(), 0, &[n, n], &strides);
        let (ro, dother) = other.arg();
        let dshared = shared.as_mut_ptr().cast::<c_void>();
        let ((ra, da), (rb, db)) = if shared_is_a { ((2, dshared), (ro, dother)) } else { ((ro, dother), (2, dshared)) };
        // SAFETY: the descriptors address `storage` and `other`, alive for the call.
        let code = unsafe { _bprt_matmul_f32(ra, da, rb, db, 2, c_desc.as_mut_ptr().cast::<c_void>()) };
        assert_eq!(code, 0, "{}", last_message());
        let (a, b) = if shared_is_a { (&original, &other_data) } else { (&other_data, &original) };
        for i in 0..n {
            for j in 0..n {
                let want = original[(i * n + j) as usize] + (0..n).map(|l| a[(i * n + l) as usize] * b[(l * n + j) as usize]).sum::<f32>();
                let got = storage[(i * n + j) as usize];
                assert!((got - want).abs() <= 1e-4 * want.abs().max(1.0), "C[{i},{j}] = {got}, want {want} (C shares A: {shared_is_a})");
            }
        }
    }
}

#[test]
fn mismatched_shapes_and_ranks_are_errors() {
    let mut a = OwnedMemRef::filled(&[2, 3], 1.0f32);
    let mut b = OwnedMemRef::filled(&[4, 2], 1.0f32);
    let mut c = OwnedMemRef::filled(&[2, 2], 0.0f32);
    assert!(call(&mut a, &mut b, &mut c) < 0);
    assert!(last_message().contains("do not multiply"), "{}", last_message());
    let mut v = OwnedMemRef::filled(&[3], 1.0f32);
    let mut b = OwnedMemRef::filled(&[3, 2], 1.0f32);
    assert!(call(&mut v, &mut b, &mut c) < 0);
    assert!(last_message().contains("expected three of rank 2 or 3"), "{}", last_message());
    assert_eq!(c.to_vec(), vec![0.0; 4], "nothing written on an error");
}

#[test]
fn misaligned_data_is_an_error() {
    let mut storage = vec![0u8; 64];
    let misaligned = storage.as_mut_ptr().wrapping_add(if (storage.as_ptr() as usize).is_multiple_of(4) { 1 } else { 0 }).cast::<f32>();
    let mut a_desc = descriptor(misaligned, 0, &[2, 2], &[2, 1]);
    let mut b = OwnedMemRef::filled(&[2, 2], 1.0f32);
    let mut c = OwnedMemRef::filled(&[2, 2], 0.0f32);
    let ((rb, db), (rc, dc)) = (b.arg(), c.arg());
    // SAFETY: the descriptor addresses bytes inside `storage`; the kernel
    // refuses it before reading.
    let code = unsafe { _bprt_matmul_f32(2, a_desc.as_mut_ptr().cast::<c_void>(), rb, db, rc, dc) };
    assert!(code < 0);
    assert!(last_message().contains("not aligned"), "{}", last_message());
}
