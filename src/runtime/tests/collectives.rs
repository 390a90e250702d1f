//! Collectives and send/recv, compared with the same computation done here.

use half::{bf16, f16};

use super::super::abi::*;
use super::super::memref::OwnedMemRef;
use super::super::world::World;
use super::{collective, concat_axis, ints, iota, slice_axis, wait, U};

fn fold<T: Copy>(inputs: &[Vec<T>], order: &[usize], f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = inputs[order[0]].clone();
    for &r in &order[1..] {
        for (a, &b) in acc.iter_mut().zip(&inputs[r]) {
            *a = f(*a, b);
        }
    }
    acc
}

#[test]
fn nprocs_prank_and_results_in_rank_order() {
    let world = World::new(3);
    let got = world.run(|r| (_bprt_nprocs(0), _bprt_prank(5), r));
    assert_eq!(got, vec![(3, 0, 0), (3, 1, 1), (3, 2, 2)]);
}

#[test]
fn all_reduce_f64_all_four_ops() {
    let shape = [2i64, 3];
    let input = |r: usize| iota(&shape, |i| (r as f64 + 1.0) * 0.5 + i as f64 * [1.0, -1.0][r % 2]);
    let inputs: Vec<Vec<f64>> = (0..4).map(input).collect();
    let order = [0, 1, 2, 3];
    let expected = [
        fold(&inputs, &order, |a, b| a + b),
        fold(&inputs, &order, f64::max),
        fold(&inputs, &order, f64::min),
        fold(&inputs, &order, |a, b| a * b),
    ];
    let world = World::new(4);
    let results = world.run(|r| {
        (0..4)
            .map(|op| {
                collective(
                    &[0, 1, 2, 3],
                    OwnedMemRef::new(&shape, input(r)),
                    OwnedMemRef::filled(&shape, 0.0f64),
                    // SAFETY: the descriptors live until the wait in `collective`.
                    |p, i, o| unsafe { _bprt_all_reduce_f64(7, p.0, p.1, i.0, i.1, o.0, o.1, op) },
                )
                .unwrap()
            })
            .collect::<Vec<_>>()
    });
    for per_rank in results {
        for (op, got) in per_rank.iter().enumerate() {
            assert_eq!(got, &expected[op], "op {op}");
        }
    }
    assert!(world.errors().is_empty());
    assert_eq!(world.open_exchanges(), 0, "every slot is freed");
}

#[test]
fn all_reduce_i32_over_a_subset_in_given_order() {
    // Participants [3, 1]; ranks 0 and 2 take no part.
    let input = |r: usize| vec![r as i32 + 2, -(r as i32), 1000];
    let inputs: Vec<Vec<i32>> = (0..4).map(input).collect();
    let world = World::new(4);
    let results = world.run(|r| {
        if r % 2 == 0 {
            return None;
        }
        let run = |op: i32| {
            collective(
                &[3, 1],
                OwnedMemRef::new(&[3], input(r)),
                OwnedMemRef::filled(&[3], 0i32),
                // SAFETY: the descriptors live until the wait in `collective`.
                |p, i, o| unsafe { _bprt_all_reduce_i32(1, p.0, p.1, i.0, i.1, o.0, o.1, op) },
            )
            .unwrap()
        };
        Some((run(0), run(3)))
    });
    let sum = fold(&inputs, &[3, 1], i32::wrapping_add);
    let prod = fold(&inputs, &[3, 1], i32::wrapping_mul);
    for (r, got) in results.into_iter().enumerate() {
        match got {
            Some((s, p)) => {
                assert_eq!(s, sum, "rank {r}");
                assert_eq!(p, prod, "rank {r}");
            }
            None => assert!(r % 2 == 0),
        }
    }
}

#[test]
fn reduce_scatter_f32_along_axis_0_and_1() {
    let shape = [4i64, 6];
    let input = |r: usize| iota(&shape, |i| (i * (r + 1)) as f32 - r as f32);
    let inputs: Vec<Vec<f32>> = (0..4).map(input).collect();
    let world = World::new(4);
    let results = world.run(|r| {
        // Axis 0 over all four ranks: each gets one row.
        let rows = collective(
            &[0, 1, 2, 3],
            OwnedMemRef::new(&shape, input(r)),
            OwnedMemRef::filled(&[1, 6], 0.0f32),
            // SAFETY: the descriptors live until the wait in `collective`.
            |p, i, o| unsafe { _bprt_reduce_scatter_f32(0, p.0, p.1, i.0, i.1, o.0, o.1, 0, 0) },
        )
        .unwrap();
        // Axis 1 in two concurrent groups, participants listed out of order.
        let group: &[i64] = if r % 2 == 0 { &[2, 0] } else { &[3, 1] };
        let cols = collective(
            group,
            OwnedMemRef::new(&shape, input(r)),
            OwnedMemRef::filled(&[4, 3], 0.0f32),
            // SAFETY: the descriptors live until the wait in `collective`.
            |p, i, o| unsafe { _bprt_reduce_scatter_f32(0, p.0, p.1, i.0, i.1, o.0, o.1, 1, 1) },
        )
        .unwrap();
        (rows, cols)
    });
    let full = fold(&inputs, &[0, 1, 2, 3], |a, b| a + b);
    for (r, (rows, cols)) in results.into_iter().enumerate() {
        assert_eq!(rows, slice_axis(&full, &shape, 0, r, 1), "rank {r} axis 0");
        let (order, k) = match r {
            2 => ([2, 0], 0),
            0 => ([2, 0], 1),
            3 => ([3, 1], 0),
            _ => ([3, 1], 1),
        };
        let maxed = fold(&inputs, &order, f32::max);
        assert_eq!(cols, slice_axis(&maxed, &shape, 1, k * 3, 3), "rank {r} axis 1");
    }
}

#[test]
fn all_gather_i64_and_index_along_axis_0_and_1_with_uneven_blocks() {
    let world = World::new(4);
    let in0 = |r: usize| (vec![r as i64 + 1, 3], iota(&[r as i64 + 1, 3], |i| (r * 100 + i) as i64));
    let in1 = |r: usize| (vec![2, r as i64 + 1], iota(&[2, r as i64 + 1], |i| (r * 10 + i) as i64));
    let results = world.run(|r| {
        let (s0, d0) = in0(r);
        let a0 = collective(
            &[0, 1, 2, 3],
            OwnedMemRef::new(&s0, d0),
            OwnedMemRef::filled(&[10, 3], -1i64),
            // SAFETY: the descriptors live until the wait in `collective`.
            |p, i, o| unsafe { _bprt_all_gather_i64(0, p.0, p.1, i.0, i.1, o.0, o.1, 0) },
        )
        .unwrap();
        let (s1, d1) = in1(r);
        let a1 = collective(
            &[3, 2, 1, 0],
            OwnedMemRef::new(&s1, d1),
            OwnedMemRef::filled(&[2, 10], -1i64),
            // SAFETY: the descriptors live until the wait in `collective`.
            |p, i, o| unsafe { _bprt_all_gather_index(0, p.0, p.1, i.0, i.1, o.0, o.1, 1) },
        )
        .unwrap();
        (a0, a1)
    });
    let (shapes0, parts0): (Vec<_>, Vec<_>) = (0..4).map(in0).unzip();
    let exp0 = concat_axis(&parts0, &shapes0, 0);
    let (shapes1, parts1): (Vec<_>, Vec<_>) = [3, 2, 1, 0].into_iter().map(in1).unzip();
    let exp1 = concat_axis(&parts1, &shapes1, 1);
    for (a0, a1) in results {
        assert_eq!(a0, exp0);
        assert_eq!(a1, exp1);
    }
}

#[test]
fn all_to_all_i32_along_axis_0_and_1() {
    let world = World::new(4);
    let input0 = |r: usize| iota(&[4, 3], |i| (r * 100 + i) as i32);
    let input1 = |r: usize| iota(&[2, 8], |i| (r * 100 + i) as i32);
    let parts = [1usize, 0, 3, 2];
    let results = world.run(|r| {
        let pl: Vec<i64> = parts.iter().map(|&p| p as i64).collect();
        let a0 = collective(
            &pl,
            OwnedMemRef::new(&[4, 3], input0(r)),
            OwnedMemRef::filled(&[4, 3], 0i32),
            // SAFETY: the descriptors live until the wait in `collective`.
            |p, i, o| unsafe { _bprt_all_to_all_i32(0, p.0, p.1, i.0, i.1, o.0, o.1, 0) },
        )
        .unwrap();
        let a1 = collective(
            &pl,
            OwnedMemRef::new(&[2, 8], input1(r)),
            OwnedMemRef::filled(&[2, 8], 0i32),
            // SAFETY: the descriptors live until the wait in `collective`.
            |p, i, o| unsafe { _bprt_all_to_all_i32(0, p.0, p.1, i.0, i.1, o.0, o.1, 1) },
        )
        .unwrap();
        (a0, a1)
    });
    for (r, (a0, a1)) in results.into_iter().enumerate() {
        let k = parts.iter().position(|&p| p == r).unwrap();
        // Output slice j comes from participant j's slice k.
        let exp0: Vec<Vec<i32>> = parts.iter().map(|&p| slice_axis(&input0(p), &[4, 3], 0, k, 1)).collect();
        let exp0 = concat_axis(&exp0, &vec![vec![1, 3]; 4], 0);
        assert_eq!(a0, exp0, "rank {r} axis 0");
        let exp1: Vec<Vec<i32>> = parts.iter().map(|&p| slice_axis(&input1(p), &[2, 8], 1, 2 * k, 2)).collect();
        let exp1 = concat_axis(&exp1, &vec![vec![2, 2]; 4], 1);
        assert_eq!(a1, exp1, "rank {r} axis 1");
    }
}

#[test]
fn broadcast_f16_from_a_non_zero_root() {
    let world = World::new(4);
    let root_data = iota(&[3, 2], |i| f16::from_f32(i as f32 * 0.25 - 1.0));
    let results = world.run(|r| {
        // Only the root's input is read: the others pass a dummy.
        let input = if r == 2 { OwnedMemRef::new(&[3, 2], root_data.clone()) } else { OwnedMemRef::filled(&[1], f16::from_f32(9.0)) };
        collective(
            &[0, 1, 2, 3],
            input,
            OwnedMemRef::filled(&[3, 2], f16::ZERO),
            // SAFETY: the descriptors live until the wait in `collective`.
            |p, i, o| unsafe { _bprt_broadcast_f16(0, p.0, p.1, i.0, i.1, o.0, o.1, 2) },
        )
        .unwrap()
    });
    for got in results {
        assert_eq!(got, root_data);
    }
}

#[test]
fn send_recv_bf16_and_idle_ranks_complete_immediately() {
    let world = World::new(4);
    let data = iota(&[2, 2], |i| bf16::from_f32(i as f32 + 0.5));
    let results = world.run(|r| {
        let mut input = OwnedMemRef::new(&[2, 2], data.iter().map(|x| *x * bf16::from_f32(r as f32)).collect());
        let mut output = OwnedMemRef::filled(&[2, 2], bf16::from_f32(-7.0));
        let (i, o) = (input.arg(), output.arg());
        // SAFETY: the descriptors live until the wait below.
        let h = unsafe { _bprt_send_recv_bf16(0, i.0, i.1, o.0, o.1, 1, 3) };
        assert!(h > 0, "every rank gets a valid handle");
        wait(h).unwrap();
        output.to_vec()
    });
    let sent: Vec<bf16> = data.iter().map(|x| *x * bf16::from_f32(1.0)).collect();
    assert_eq!(results[3], sent);
    for r in [0, 1, 2] {
        assert_eq!(results[r], vec![bf16::from_f32(-7.0); 4], "rank {r} output untouched");
    }
    assert_eq!(world.open_exchanges(), 0);
}

#[test]
fn i1_reductions_treat_non_zero_as_true() {
    let world = World::new(3);
    let input = |r: usize| -> Vec<u8> {
        match r {
            0 => vec![1, 0, 1, 0, 2],
            1 => vec![1, 1, 0, 0, 0],
            _ => vec![1, 0, 0, 0, 1],
        }
    };
    let results = world.run(|r| {
        (0..4)
            .map(|op| {
                collective(
                    &[0, 1, 2],
                    OwnedMemRef::new(&[5], input(r)),
                    OwnedMemRef::filled(&[5], 9u8),
                    // SAFETY: the descriptors live until the wait in `collective`.
                    |p, i, o| unsafe { _bprt_all_reduce_i1(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
                )
                .unwrap()
            })
            .collect::<Vec<_>>()
    });
    let bits: Vec<Vec<bool>> = (0..3).map(|r| input(r).iter().map(|&b| b != 0).collect()).collect();
    let to_u8 = |v: Vec<bool>| v.into_iter().map(u8::from).collect::<Vec<_>>();
    let expected = [
        to_u8(fold(&bits, &[0, 1, 2], |a, b| a ^ b)),
        to_u8(fold(&bits, &[0, 1, 2], |a, b| a || b)),
        to_u8(fold(&bits, &[0, 1, 2], |a, b| a && b)),
        to_u8(fold(&bits, &[0, 1, 2], |a, b| a && b)),
    ];
    for got in results {
        assert_eq!(got, expected);
    }
}

#[test]
fn strided_input_and_output() {
    // Input: a 4x2 view of a 4x5 buffer (every other column, from column 1).
    // Output: a 4x2 column-major view inside a larger buffer of sentinels.
    let world = World::new(2);
    let storage = |r: usize| iota(&[4, 5], |i| (i + 100 * r) as f32);
    let results = world.run(|r| {
        let input = OwnedMemRef::strided(storage(r), 1, &[4, 2], &[5, 2]);
        let output = OwnedMemRef::strided(vec![-1.0f32; 12], 2, &[4, 2], &[1, 4]);
        let mut p = ints(&[0, 1]);
        let (mut input, mut output) = (input, output);
        let (pp, i, o) = (p.arg(), input.arg(), output.arg());
        // SAFETY: the descriptors live until the wait below.
        let h = unsafe { _bprt_all_reduce_f32(0, pp.0, pp.1, i.0, i.1, o.0, o.1, 0) };
        wait(h).unwrap();
        (output.to_vec(), output.storage().to_vec())
    });
    let logical = |r: usize| -> Vec<f32> {
        let s = storage(r);
        (0..4).flat_map(|row| [s[row * 5 + 1], s[row * 5 + 3]]).collect()
    };
    let expected: Vec<f32> = logical(0).iter().zip(logical(1)).map(|(a, b)| a + b).collect();
    for (got, storage) in results {
        assert_eq!(got, expected);
        assert_eq!(&storage[..2], &[-1.0, -1.0]);
        assert_eq!(&storage[10..], &[-1.0, -1.0]);
        // Column-major: storage[2 + row + 4 * col].
        assert_eq!(storage[2 + 1], expected[2]); // (row 1, col 0)
        assert_eq!(storage[2 + 4], expected[1]); // (row 0, col 1)
    }
}

#[test]
fn outstanding_handles_wait_in_any_order_and_slots_are_freed() {
    let world = World::new(3);
    world.run(|r| {
        for round in 0..20 {
            let mut p = ints(&[0, 1, 2]);
            let mut a_in = OwnedMemRef::new(&[2], vec![r as i64, round]);
            let mut a_out = OwnedMemRef::filled(&[2], 0i64);
            let mut g_in = OwnedMemRef::new(&[1], vec![(r as i16) * 10 + round as i16]);
            let mut g_out = OwnedMemRef::filled(&[3], 0i16);
            let (pp, ai, ao) = (p.arg(), a_in.arg(), a_out.arg());
            // SAFETY: the descriptors live until the waits below.
            let h1 = unsafe { _bprt_all_reduce_i64(0, pp.0, pp.1, ai.0, ai.1, ao.0, ao.1, 0) };
            let (gi, go) = (g_in.arg(), g_out.arg());
            // SAFETY: the descriptors live until the waits below.
            let h2 = unsafe { _bprt_all_gather_i16(0, pp.0, pp.1, gi.0, gi.1, go.0, go.1, 0) };
            assert_ne!(h1, h2);
            if r == 1 {
                wait(h1).unwrap();
                wait(h2).unwrap();
            } else {
                wait(h2).unwrap();
                wait(h1).unwrap();
            }
            assert_eq!(a_out.to_vec(), vec![3, 3 * round]);
            let r16 = round as i16;
            assert_eq!(g_out.to_vec(), vec![r16, 10 + r16, 20 + r16]);
        }
    });
    assert!(world.errors().is_empty());
    assert_eq!(world.open_exchanges(), 0);
}

#[test]
fn all_reduce_integers_all_ops_wrap_on_overflow() {
    let input = |r: usize| -> Vec<i8> { vec![100, -100, r as i8 * 7 - 10, 3 - r as i8, 2] };
    let inputs: Vec<Vec<i8>> = (0..3).map(input).collect();
    let order = [0, 1, 2];
    let expected = [
        fold(&inputs, &order, i8::wrapping_add),
        fold(&inputs, &order, std::cmp::max),
        fold(&inputs, &order, std::cmp::min),
        fold(&inputs, &order, i8::wrapping_mul),
    ];
    let world = World::new(3);
    let results = world.run(|r| {
        (0..4)
            .map(|op| {
                let small = collective(
                    &[0, 1, 2],
                    OwnedMemRef::new(&[5], input(r)),
                    OwnedMemRef::filled(&[5], 0i8),
                    // SAFETY: the descriptors live until the wait in `collective`.
                    |p, i, o| unsafe { _bprt_all_reduce_i8(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
                )
                .unwrap();
                let wide = collective(
                    &[0, 1, 2],
                    OwnedMemRef::new(&[5], input(r).into_iter().map(i64::from).collect()),
                    OwnedMemRef::filled(&[5], 0i64),
                    // SAFETY: the descriptors live until the wait in `collective`.
                    |p, i, o| unsafe { _bprt_all_reduce_index(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
                )
                .unwrap();
                (small, wide)
            })
            .collect::<Vec<_>>()
    });
    let wide_inputs: Vec<Vec<i64>> = inputs.iter().map(|v| v.iter().map(|&x| i64::from(x)).collect()).collect();
    let wide_expected = [
        fold(&wide_inputs, &order, |a, b| a + b),
        fold(&wide_inputs, &order, std::cmp::max),
        fold(&wide_inputs, &order, std::cmp::min),
        fold(&wide_inputs, &order, |a, b| a * b),
    ];
    for per_rank in results {
        for (op, (small, wide)) in per_rank.into_iter().enumerate() {
            assert_eq!(small, expected[op], "i8 op {op}");
            assert_eq!(wide, wide_expected[op], "index op {op}");
        }
    }
}

#[test]
fn self_send_and_in_place_all_reduce() {
    let world = World::new(2);
    let results = world.run(|r| {
        // Source == dest: a local copy.
        let mut input = OwnedMemRef::new(&[3], vec![r as i64, 5, 6]);
        let mut output = OwnedMemRef::filled(&[3], 0i64);
        let (i, o) = (input.arg(), output.arg());
        // SAFETY: the descriptors live until the wait below.
        let h = unsafe { _bprt_send_recv_i64(0, i.0, i.1, o.0, o.1, r as i64, r as i64) };
        wait(h).unwrap();
        let copied = output.to_vec();
        // In place: input and output are the same buffer.
        let mut p = ints(&[0, 1]);
        let mut buf = OwnedMemRef::new(&[2], vec![r as f32 + 1.0, 10.0]);
        let (pp, b) = (p.arg(), buf.arg());
        // SAFETY: the descriptors live until the wait below.
        let h = unsafe { _bprt_all_reduce_f32(0, pp.0, pp.1, b.0, b.1, b.0, b.1, 3) };
        wait(h).unwrap();
        (copied, buf.to_vec())
    });
    for (r, (copied, reduced)) in results.into_iter().enumerate() {
        assert_eq!(copied, vec![r as i64, 5, 6]);
        assert_eq!(reduced, vec![2.0, 100.0]);
    }
}

/// A reduction op code and the element rule it stands for.
type OpRule<'a, T> = (i32, &'a (dyn Fn(T, T) -> T + Sync));

/// A value of rank `r` at index `i` (a hash, so neighbouring lanes differ).
fn noise(r: usize, i: usize) -> u64 {
    let mut x = (r as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 31;
    x.wrapping_mul(0x94d0_49bb_1331_11eb) >> 16
}

/// All-reduces of `n` elements (several chunks, whole cache lines and a
/// tail) over participants out of order, against the fold in that order,
/// bit for bit; `start(p, i, o, op)` calls the typed entry point.
fn large_all_reduce<T: Copy + Send + Sync>(
    n: usize,
    value: impl Fn(usize, usize) -> T + Sync,
    ops: &[OpRule<'_, T>],
    bits: impl Fn(T) -> u64,
    start: impl Fn(U, U, U, i32) -> i64 + Sync,
) {
    let order = [2usize, 0, 3, 1];
    let inputs: Vec<Vec<T>> = (0..4).map(|r| (0..n).map(|i| value(r, i)).collect()).collect();
    let world = World::new(4);
    let results = world.run(|r| {
        ops.iter()
            .map(|&(op, _)| {
                let input = OwnedMemRef::new(&[n as i64], inputs[r].clone());
                let output = OwnedMemRef::new(&[n as i64], inputs[r].clone());
                collective(&[2, 0, 3, 1], input, output, |p, i, o| start(p, i, o, op)).unwrap()
            })
            .collect::<Vec<_>>()
    });
    for (k, &(op, f)) in ops.iter().enumerate() {
        let expected: Vec<u64> = fold(&inputs, &order, f).into_iter().map(&bits).collect();
        for (r, per_rank) in results.iter().enumerate() {
            let got: Vec<u64> = per_rank[k].iter().map(|&v| bits(v)).collect();
            assert!(got == expected, "op {op} rank {r}: first difference at {:?}", got.iter().zip(&expected).position(|(a, b)| a != b));
        }
    }
    assert!(world.errors().is_empty());
}

#[test]
fn large_all_reduces_are_the_ordered_fold_bit_for_bit() {
    // Floats with NaNs and signed zeros among them (max/min propagate NaN).
    let f = |r: usize, i: usize| match noise(r, i) % 1000 {
        0 => f32::NAN,
        1 => -0.0,
        n => (n as f32 - 500.0) * 0.37 + r as f32 * 1e-3,
    };
    let nan_max = |a: f32, b: f32| if a.is_nan() || b.is_nan() { f32::NAN } else { a.max(b) };
    let nan_min = |a: f32, b: f32| if a.is_nan() || b.is_nan() { f32::NAN } else { a.min(b) };
    large_all_reduce(
        70_001,
        f,
        &[(0, &|a, b| a + b), (1, &nan_max), (2, &nan_min), (3, &|a, b| a * b)],
        |v: f32| u64::from(v.to_bits()),
        // SAFETY: the descriptors live until the wait in `collective`.
        |p, i, o, op| unsafe { _bprt_all_reduce_f32(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    );
    large_all_reduce(
        70_001,
        |r, i| (noise(r, i) % 100_000) as f64 * 1e-3 - 50.0,
        &[(0, &|a, b| a + b), (3, &|a, b| a * b)],
        f64::to_bits,
        // SAFETY: as above.
        |p, i, o, op| unsafe { _bprt_all_reduce_f64(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    );
    large_all_reduce(
        70_001,
        |r, i| noise(r, i) as i8,
        &[(0, &i8::wrapping_add), (1, &std::cmp::max), (3, &i8::wrapping_mul)],
        |v: i8| v as u8 as u64,
        // SAFETY: as above.
        |p, i, o, op| unsafe { _bprt_all_reduce_i8(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    );
    large_all_reduce(
        70_001,
        |r, i| noise(r, i) as i64,
        &[(0, &i64::wrapping_add), (2, &std::cmp::min)],
        |v: i64| v as u64,
        // SAFETY: as above.
        |p, i, o, op| unsafe { _bprt_all_reduce_i64(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    );
    // Half precision: combined in f32, rounded back after every step.
    let h = |a: f16, b: f16| f16::from_f32(a.to_f32() + b.to_f32());
    large_all_reduce(
        70_001,
        |r, i| f16::from_f32(f(r, i)),
        &[(0, &h)],
        |v: f16| u64::from(v.to_bits()),
        // SAFETY: as above.
        |p, i, o, op| unsafe { _bprt_all_reduce_f16(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    );
    let b = |a: bf16, b: bf16| bf16::from_f32(a.to_f32() * b.to_f32());
    large_all_reduce(
        70_001,
        |r, i| bf16::from_f32(f(r, i)),
        &[(3, &b)],
        |v: bf16| u64::from(v.to_bits()),
        // SAFETY: as above.
        |p, i, o, op| unsafe { _bprt_all_reduce_bf16(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    );
}

/// Messages large enough for the non-temporal stores
/// (`STREAM_MIN_BYTES` of outputs in all), ending mid-line: the fused
/// path (f32, i16) and the block path (bf16).
#[test]
fn streamed_all_reduces_are_the_ordered_fold_bit_for_bit() {
    let elements = |size: usize| crate::runtime::shared_reduce::STREAM_MIN_BYTES / 4 / size + 13;
    let f = |r: usize, i: usize| (noise(r, i) % 100_000) as f32 * 1e-2 - 500.0;
    large_all_reduce(
        elements(4),
        f,
        &[(0, &|a, b| a + b)],
        |v: f32| u64::from(v.to_bits()),
        // SAFETY: the descriptors live until the wait in `collective`.
        |p, i, o, op| unsafe { _bprt_all_reduce_f32(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    );
    large_all_reduce(
        elements(2),
        |r, i| noise(r, i) as i16,
        &[(1, &std::cmp::max)],
        |v: i16| v as u16 as u64,
        // SAFETY: as above.
        |p, i, o, op| unsafe { _bprt_all_reduce_i16(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    );
    let b = |a: bf16, b: bf16| bf16::from_f32(a.to_f32() + b.to_f32());
    large_all_reduce(
        elements(2),
        |r, i| bf16::from_f32(f(r, i)),
        &[(0, &b)],
        |v: bf16| u64::from(v.to_bits()),
        // SAFETY: as above.
        |p, i, o, op| unsafe { _bprt_all_reduce_bf16(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    );
}

#[test]
fn large_in_place_all_reduce() {
    const N: usize = 100_003;
    let value = |r: usize, i: usize| (noise(r, i) % 4096) as f32 - 2048.0;
    let inputs: Vec<Vec<f32>> = (0..4).map(|r| (0..N).map(|i| value(r, i)).collect()).collect();
    let expected = fold(&inputs, &[0, 1, 2, 3], |a, b| a + b);
    let world = World::new(4);
    let results = world.run(|r| {
        let mut p = ints(&[0, 1, 2, 3]);
        let mut buf = OwnedMemRef::new(&[N as i64], inputs[r].clone());
        let (pp, b) = (p.arg(), buf.arg());
        // SAFETY: the descriptors live until the wait below.
        let h = unsafe { _bprt_all_reduce_f32(0, pp.0, pp.1, b.0, b.1, b.0, b.1, 0) };
        wait(h).unwrap();
        buf.to_vec()
    });
    for got in results {
        assert!(got == expected);
    }
}
