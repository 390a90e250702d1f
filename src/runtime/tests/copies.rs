//! Redistribution copies (`copy_reshape`, `copy_permute`).

use super::super::abi::*;
use super::super::memref::OwnedMemRef;
use super::super::world::World;
use super::{ints, iota, wait, Failure, U};

/// One rank's block: offsets and shape.
#[derive(Clone)]
pub(super) struct Block {
    pub offsets: Vec<i64>,
    pub shape: Vec<i64>,
}

fn block(offsets: &[i64], shape: &[i64]) -> Block {
    Block { offsets: offsets.to_vec(), shape: shape.to_vec() }
}

/// The elements of `b` in a row-major global array `global` of `g_shape`.
pub(super) fn extract<T: Copy>(global: &[T], g_shape: &[i64], b: &Block) -> Vec<T> {
    let strides = super::super::memref::row_major_strides(g_shape);
    let n: i64 = b.shape.iter().product();
    let mut out = Vec::with_capacity(n as usize);
    let mut idx = vec![0i64; b.shape.len()];
    for _ in 0..n {
        let lin: i64 = idx.iter().zip(&b.offsets).zip(&strides).map(|((i, o), s)| (i + o) * s).sum();
        out.push(global[lin as usize]);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < b.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Calls a `copy_reshape`-shaped entry point with `(input, g_shape,
/// l_offsets, ng_shape, nl_offsets, nl_shape, output)` and waits.
pub(super) fn reshape_call<T: Copy>(
    mut input: OwnedMemRef<T>,
    g_shape: &[i64],
    l_offsets: &[i64],
    ng_shape: &[i64],
    new: &Block,
    fill: T,
    start: impl FnOnce([U; 7]) -> i64,
) -> Result<Vec<T>, Failure> {
    let (mut g, mut lo, mut ng) = (ints(g_shape), ints(l_offsets), ints(ng_shape));
    let (mut nlo, mut nls) = (ints(&new.offsets), ints(&new.shape));
    let mut output = OwnedMemRef::filled(&new.shape, fill);
    let h = start([input.arg(), g.arg(), lo.arg(), ng.arg(), nlo.arg(), nls.arg(), output.arg()]);
    wait(h)?;
    Ok(output.to_vec())
}

/// Calls a `copy_permute`-shaped entry point and waits.
fn permute_call<T: Copy>(
    mut input: OwnedMemRef<T>,
    g_shape: &[i64],
    l_offsets: &[i64],
    new: &Block,
    axes: &[i64],
    fill: T,
    start: impl FnOnce([U; 7]) -> i64,
) -> Result<Vec<T>, Failure> {
    let (mut g, mut lo, mut ax) = (ints(g_shape), ints(l_offsets), ints(axes));
    let (mut nlo, mut nls) = (ints(&new.offsets), ints(&new.shape));
    let mut output = OwnedMemRef::filled(&new.shape, fill);
    let h = start([input.arg(), g.arg(), lo.arg(), nlo.arg(), nls.arg(), ax.arg(), output.arg()]);
    wait(h)?;
    Ok(output.to_vec())
}

/// `_bprt_copy_reshape_index` with the arguments in `a`.
pub(super) fn reshape_index(a: [U; 7]) -> i64 {
    // SAFETY: the descriptors live until the wait in `reshape_call`.
    unsafe {
        _bprt_copy_reshape_index(
            3, a[0].0, a[0].1, a[1].0, a[1].1, a[2].0, a[2].1, a[3].0, a[3].1, a[4].0, a[4].1, a[5].0, a[5].1, a[6].0, a[6].1,
        )
    }
}

fn permute_f32(a: [U; 7]) -> i64 {
    // SAFETY: the descriptors live until the wait in `permute_call`.
    unsafe {
        _bprt_copy_permute_f32(
            3, a[0].0, a[0].1, a[1].0, a[1].1, a[2].0, a[2].1, a[3].0, a[3].1, a[4].0, a[4].1, a[5].0, a[5].1, a[6].0, a[6].1,
        )
    }
}

#[test]
fn copy_reshape_2d_rows_to_uneven_1d_and_back() {
    let g_shape = [4i64, 6];
    let global: Vec<i64> = iota(&g_shape, |i| i as i64 * 3 - 5);
    // Uneven row blocks, rank 3 empty.
    let old = [block(&[0, 0], &[2, 6]), block(&[2, 0], &[1, 6]), block(&[3, 0], &[1, 6]), block(&[4, 0], &[0, 6])];
    let flat = [block(&[0], &[7]), block(&[7], &[5]), block(&[12], &[6]), block(&[18], &[6])];
    let back = [block(&[0, 0], &[1, 6]), block(&[1, 0], &[1, 6]), block(&[2, 0], &[2, 6]), block(&[4, 0], &[0, 6])];
    let world = World::new(4);
    let results = world.run(|r| {
        let local = extract(&global, &g_shape, &old[r]);
        let mine = OwnedMemRef::new(&old[r].shape, local);
        let flat_local = reshape_call(mine, &g_shape, &old[r].offsets, &[24], &flat[r], -1, reshape_index).unwrap();
        let again = reshape_call(
            OwnedMemRef::new(&flat[r].shape, flat_local.clone()),
            &[24],
            &flat[r].offsets,
            &g_shape,
            &back[r],
            -1,
            reshape_index,
        )
        .unwrap();
        (flat_local, again)
    });
    for (r, (flat_local, again)) in results.into_iter().enumerate() {
        assert_eq!(flat_local, extract(&global, &[24], &flat[r]), "rank {r} 1-D block");
        assert_eq!(again, extract(&global, &g_shape, &back[r]), "rank {r} 2-D block");
    }
    assert!(world.errors().is_empty());
}

#[test]
fn copy_reshape_row_blocks_to_column_blocks() {
    // 4x6 by rows over 4 ranks -> 3x8 by column pairs.
    let g_shape = [4i64, 6];
    let ng_shape = [3i64, 8];
    let global: Vec<i64> = iota(&g_shape, |i| 1000 + i as i64);
    let world = World::new(4);
    let results = world.run(|r| {
        let old = block(&[r as i64, 0], &[1, 6]);
        let new = block(&[0, 2 * r as i64], &[3, 2]);
        let input = OwnedMemRef::new(&old.shape, extract(&global, &g_shape, &old));
        reshape_call(input, &g_shape, &old.offsets, &ng_shape, &new, 0, reshape_index).unwrap()
    });
    for (r, got) in results.into_iter().enumerate() {
        // Linear order is preserved: the new array is the same buffer.
        assert_eq!(got, extract(&global, &ng_shape, &block(&[0, 2 * r as i64], &[3, 2])));
    }
}

#[test]
fn copy_permute_transpose_2d_with_axes_1_0() {
    let g_shape = [4i64, 6];
    let global: Vec<f32> = iota(&g_shape, |i| i as f32 + 0.5);
    let new_blocks = [block(&[0, 0], &[2, 4]), block(&[2, 0], &[2, 4]), block(&[4, 0], &[1, 4]), block(&[5, 0], &[1, 4])];
    let world = World::new(4);
    let results = world.run(|r| {
        let old = block(&[r as i64, 0], &[1, 6]);
        let input = OwnedMemRef::new(&old.shape, extract(&global, &g_shape, &old));
        permute_call(input, &g_shape, &old.offsets, &new_blocks[r], &[1, 0], f32::NAN, permute_f32).unwrap()
    });
    // Transposed global: T[j0, j1] = G[j1, j0].
    let transposed: Vec<f32> = iota(&[6, 4], |i| global[(i % 4) * 6 + i / 4]);
    for (r, got) in results.into_iter().enumerate() {
        assert_eq!(got, extract(&transposed, &[6, 4], &new_blocks[r]), "rank {r}");
    }
}

#[test]
fn copy_permute_3d_with_strided_input() {
    // Global 2x3x4 split along dim 1 over 3 ranks; axes [2, 0, 1] -> 4x2x3
    // split along dim 0 as [2, 1, 1]. Each rank's input is a strided view.
    let g_shape = [2i64, 3, 4];
    let global: Vec<f32> = iota(&g_shape, |i| i as f32);
    let new_blocks = [block(&[0, 0, 0], &[2, 2, 3]), block(&[2, 0, 0], &[1, 2, 3]), block(&[3, 0, 0], &[1, 2, 3])];
    let world = World::new(3);
    let results = world.run(|r| {
        let old = block(&[0, r as i64, 0], &[2, 1, 4]);
        let local = extract(&global, &g_shape, &old);
        // Same logical 2x1x4 block stored with padding: strides [12, 4, 1]
        // inside a storage of 2 * 12 elements, offset 3.
        let mut storage = vec![f32::NAN; 24];
        for (k, v) in local.iter().enumerate() {
            storage[3 + (k / 4) * 12 + k % 4] = *v;
        }
        let input = OwnedMemRef::strided(storage, 3, &[2, 1, 4], &[12, 4, 1]);
        assert_eq!(input.to_vec(), local);
        permute_call(input, &g_shape, &old.offsets, &new_blocks[r], &[2, 0, 1], f32::NAN, permute_f32).unwrap()
    });
    // N[j0, j1, j2] = G[j1, j2, j0].
    let permuted: Vec<f32> = iota(&[4, 2, 3], |i| {
        let (j0, j1, j2) = (i / 6, (i / 3) % 2, i % 3);
        global[j1 * 12 + j2 * 4 + j0]
    });
    for (r, got) in results.into_iter().enumerate() {
        assert_eq!(got, extract(&permuted, &[4, 2, 3], &new_blocks[r]), "rank {r}");
    }
}

#[test]
fn copy_reshape_from_replicated_blocks() {
    // Every rank holds the whole 2x4 array (overlapping blocks): the first
    // holder wins, every element is filled once.
    let g_shape = [2i64, 4];
    let global: Vec<i64> = iota(&g_shape, |i| 10 * i as i64);
    let new_blocks = [block(&[0], &[3]), block(&[3], &[0]), block(&[3], &[5])];
    let world = World::new(3);
    let results = world.run(|r| {
        let input = OwnedMemRef::new(&g_shape, global.clone());
        reshape_call(input, &g_shape, &[0, 0], &[8], &new_blocks[r], -1, reshape_index).unwrap()
    });
    for (r, got) in results.into_iter().enumerate() {
        assert_eq!(got, extract(&global, &[8], &new_blocks[r]), "rank {r}");
    }
}
