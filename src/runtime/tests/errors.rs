//! Error cases: every one is reported (code + message), never a hang or UB.

use std::collections::HashSet;
use std::ffi::c_void;
use std::time::{Duration, Instant};

use super::super::abi::*;
use super::super::error::{last_error, ErrorCode, RtError};
use super::super::memref::OwnedMemRef;
use super::super::world::World;
use super::copies::{extract, reshape_call, reshape_index, Block};
use super::{collective, ints, iota, last_message, wait, Failure, U};

const NOT_IN_WORLD: i64 = ErrorCode::NotInWorld as i64;
const INVALID_ARGUMENT: i64 = ErrorCode::InvalidArgument as i64;
const INVALID_MEMREF: i64 = ErrorCode::InvalidMemRef as i64;
const INVALID_RANK: i64 = ErrorCode::InvalidRank as i64;
const NOT_PARTICIPANT: i64 = ErrorCode::NotParticipant as i64;
const SHAPE_MISMATCH: i64 = ErrorCode::ShapeMismatch as i64;
const MISMATCH: i64 = ErrorCode::Mismatch as i64;
const PEER_FAILED: i64 = ErrorCode::PeerFailed as i64;
const UNKNOWN_HANDLE: i64 = ErrorCode::UnknownHandle as i64;
const ALREADY_WAITED: i64 = ErrorCode::AlreadyWaited as i64;
const TIMEOUT: i64 = ErrorCode::Timeout as i64;
const INTERNAL: i64 = ErrorCode::Internal as i64;

fn all_reduce_f32(participants: &[i64], input: Vec<f32>, op: i32) -> Result<Vec<f32>, Failure> {
    let n = input.len() as i64;
    collective(
        participants,
        OwnedMemRef::new(&[n], input),
        OwnedMemRef::filled(&[n], 0.0f32),
        // SAFETY: the descriptors live until the wait in `collective`.
        |p, i, o| unsafe { _bprt_all_reduce_f32(0, p.0, p.1, i.0, i.1, o.0, o.1, op) },
    )
}

fn code(r: Result<impl Sized, Failure>) -> i64 {
    match r {
        Ok(_) => 0,
        Err((c, _)) => c,
    }
}

/// A world with a short timeout, so that a bug shows as a failure, not a hang.
fn world(n: usize) -> std::sync::Arc<World> {
    World::with_timeout(n, Duration::from_secs(5))
}

#[test]
fn mismatched_sizes_fail_on_every_rank_and_later_calls_still_match() {
    let w = world(2);
    let results = w.run(|r| {
        let bad = all_reduce_f32(&[0, 1], vec![1.0; 4 - r], 0);
        let kind = last_error();
        let good = all_reduce_f32(&[0, 1], vec![r as f32; 2], 0);
        (bad, kind, good)
    });
    for (bad, kind, good) in results {
        let (c, msg) = bad.unwrap_err();
        assert_eq!(c, MISMATCH);
        assert!(msg.contains("input shape [4]") || msg.contains("input shape [3]"), "{msg}");
        assert!(matches!(kind, Some(RtError::Mismatch(_))), "{kind:?}");
        assert_eq!(good.unwrap(), vec![1.0, 1.0]);
    }
    let errors = w.errors();
    assert_eq!(errors.len(), 2);
    assert!(errors.iter().all(|e| e.error.code() == ErrorCode::Mismatch));
    assert_eq!(errors.iter().map(|e| e.rank).collect::<HashSet<_>>(), HashSet::from([0, 1]));
    assert_eq!(w.open_exchanges(), 0);
}

#[test]
fn mismatched_kinds_types_and_ops_fail_on_every_rank() {
    let w = world(2);
    let results = w.run(|r| {
        let kind = if r == 0 {
            all_reduce_f32(&[0, 1], vec![1.0; 2], 0)
        } else {
            collective(
                &[0, 1],
                OwnedMemRef::new(&[2], vec![1.0f32; 2]),
                OwnedMemRef::filled(&[4], 0.0f32),
                // SAFETY: the descriptors live until the wait in `collective`.
                |p, i, o| unsafe { _bprt_all_gather_f32(0, p.0, p.1, i.0, i.1, o.0, o.1, 0) },
            )
        };
        let dtype = if r == 0 {
            code(all_reduce_f32(&[0, 1], vec![1.0; 2], 0))
        } else {
            code(collective(
                &[0, 1],
                OwnedMemRef::new(&[2], vec![1i32; 2]),
                OwnedMemRef::filled(&[2], 0i32),
                // SAFETY: the descriptors live until the wait in `collective`.
                |p, i, o| unsafe { _bprt_all_reduce_i32(0, p.0, p.1, i.0, i.1, o.0, o.1, 0) },
            ))
        };
        let op = code(all_reduce_f32(&[0, 1], vec![1.0; 2], r as i32));
        let order = code(all_reduce_f32(if r == 0 { &[0, 1] } else { &[1, 0] }, vec![1.0; 2], 0));
        (code(kind), dtype, op, order)
    });
    for got in results {
        assert_eq!(got, (MISMATCH, MISMATCH, MISMATCH, MISMATCH));
    }
}

#[test]
fn unknown_and_double_waited_handles() {
    let w = world(1);
    w.run(|_| {
        assert_eq!(_bprt_wait(12345), UNKNOWN_HANDLE);
        assert!(last_message().contains("unknown handle 12345"));
        assert_eq!(_bprt_wait(0), UNKNOWN_HANDLE);
        assert_eq!(_bprt_wait(-4), UNKNOWN_HANDLE);

        let mut p = ints(&[0]);
        let mut i = OwnedMemRef::new(&[1], vec![2.0f64]);
        let mut o = OwnedMemRef::filled(&[1], 0.0f64);
        let (pp, ii, oo) = (p.arg(), i.arg(), o.arg());
        // SAFETY: the descriptors live until the wait below.
        let h = unsafe { _bprt_all_reduce_f64(0, pp.0, pp.1, ii.0, ii.1, oo.0, oo.1, 0) };
        assert!(h > 0);
        assert_eq!(_bprt_wait(h), 0);
        assert_eq!(o.to_vec(), vec![2.0]);
        assert_eq!(_bprt_wait(h), ALREADY_WAITED);
        assert!(last_message().contains("already waited"));
    });
    assert_eq!(w.errors().len(), 4);
}

#[test]
fn calls_outside_a_world_thread_fail() {
    assert_eq!(_bprt_nprocs(0), NOT_IN_WORLD);
    assert_eq!(_bprt_prank(0), NOT_IN_WORLD);
    assert_eq!(_bprt_wait(1), NOT_IN_WORLD);
    assert_eq!(code(all_reduce_f32(&[0], vec![1.0], 0)), NOT_IN_WORLD);
    assert_eq!(last_error(), Some(RtError::NotInWorld));
    assert!(last_message().contains("not called from a thread bound"));

    // A harness thread can bind itself explicitly.
    let w = world(2);
    assert!(w.bind(2).is_err());
    {
        let _guard = w.bind(1).unwrap();
        assert_eq!(_bprt_prank(0), 1);
        assert_eq!(_bprt_nprocs(0), 2);
    }
    assert_eq!(_bprt_prank(0), NOT_IN_WORLD);
}

#[test]
fn invalid_descriptors_fail_locally_and_peers_fail_fast() {
    let w = world(2);
    let results = w.run(|r| {
        let mut p = ints(&[0, 1]);
        let mut i = OwnedMemRef::new(&[2], vec![1.0f32; 2]);
        let mut o = OwnedMemRef::filled(&[2], 0.0f32);
        let (pp, ii, oo) = (p.arg(), i.arg(), o.arg());
        let in_rank = if r == 0 { -1 } else { ii.0 };
        let start = Instant::now();
        // SAFETY: the descriptors live until the wait; rank -1 is rejected
        // before the descriptor is read.
        let h = unsafe { _bprt_all_reduce_f32(0, pp.0, pp.1, in_rank, ii.1, oo.0, oo.1, 0) };
        let first = wait(h).unwrap_err();
        // A null descriptor, then a null data pointer with elements.
        // SAFETY: null descriptors are rejected before any read.
        let null_desc = unsafe { _bprt_all_reduce_f32(0, pp.0, pp.1, 1, std::ptr::null_mut(), oo.0, oo.1, 0) };
        let null_desc = (null_desc, last_message());
        let mut words = [0u64, 0, 0, 2, 1];
        // SAFETY: `words` is a rank-1 descriptor with null data pointers,
        // rejected before any data access.
        let null_data = unsafe { _bprt_all_reduce_f32(0, pp.0, pp.1, ii.0, words.as_mut_ptr().cast::<c_void>(), oo.0, oo.1, 0) };
        // Negative memref rank of the participants list.
        // SAFETY: rank -1 is rejected before the descriptor is read.
        let bad_parts = unsafe { _bprt_all_reduce_f32(0, -1, pp.1, ii.0, ii.1, oo.0, oo.1, 0) };
        (first, null_desc, null_data, bad_parts, start.elapsed())
    });
    let (first0, ..) = &results[0];
    assert_eq!(first0.0, INVALID_MEMREF);
    assert!(first0.1.contains("negative rank -1"), "{}", first0.1);
    let (first1, ..) = &results[1];
    assert_eq!(first1.0, PEER_FAILED);
    assert!(first1.1.contains("rank 0") && first1.1.contains("negative rank"), "{}", first1.1);
    for (_, null_desc, null_data, bad_parts, elapsed) in &results {
        assert_eq!(null_desc.0, INVALID_MEMREF);
        assert!(null_desc.1.contains("null descriptor"), "{}", null_desc.1);
        assert_eq!(*null_data, INVALID_MEMREF);
        assert_eq!(*bad_parts, INVALID_MEMREF);
        assert!(*elapsed < Duration::from_secs(4), "no waiting for a timeout");
    }
    // The failed starts freed their slots once the peers consumed them.
    assert_eq!(w.open_exchanges(), 0);
}

#[test]
fn ranks_outside_the_world_and_non_participants() {
    let w = world(2);
    let results = w.run(|r| {
        let outside = code(all_reduce_f32(&[0, 5], vec![1.0], 0));
        let negative = code(all_reduce_f32(&[-1, 0], vec![1.0], 0));
        let duplicate = code(all_reduce_f32(&[0, 0, 1], vec![1.0], 0));
        // Rank 1 claims a group it is not in; rank 0 runs alone.
        let not_in = code(all_reduce_f32(&[0], vec![1.0], 0));
        let mut i = OwnedMemRef::new(&[1], vec![1i8]);
        let mut o = OwnedMemRef::filled(&[1], 0i8);
        let (ii, oo) = (i.arg(), o.arg());
        // SAFETY: rank checks fail before any descriptor is used.
        let bad_source = unsafe { _bprt_send_recv_i8(0, ii.0, ii.1, oo.0, oo.1, -1, 1) };
        // SAFETY: as above.
        let bad_dest = unsafe { _bprt_send_recv_i8(0, ii.0, ii.1, oo.0, oo.1, 0, 2) };
        (r, outside, negative, duplicate, not_in, bad_source, bad_dest)
    });
    for (r, outside, negative, duplicate, not_in, bad_source, bad_dest) in results {
        assert_eq!(outside, INVALID_RANK);
        assert_eq!(negative, INVALID_RANK);
        assert_eq!(duplicate, INVALID_ARGUMENT);
        assert_eq!(not_in, if r == 0 { 0 } else { NOT_PARTICIPANT });
        assert_eq!(bad_source, INVALID_RANK);
        assert_eq!(bad_dest, INVALID_RANK);
    }
}

#[test]
fn missing_participant_times_out() {
    let w = World::with_timeout(2, Duration::from_millis(150));
    let results = w.run(|r| {
        if r == 1 {
            return None;
        }
        let start = Instant::now();
        let got = all_reduce_f32(&[0, 1], vec![1.0], 0);
        Some((got, start.elapsed()))
    });
    let (got, elapsed) = results[0].clone().unwrap();
    let (c, msg) = got.unwrap_err();
    assert_eq!(c, TIMEOUT);
    assert!(msg.contains("[1]"), "{msg}");
    assert!(elapsed >= Duration::from_millis(150) && elapsed < Duration::from_secs(5));
    assert_eq!(w.errors()[0].error.code(), ErrorCode::Timeout);
}

#[test]
fn local_argument_and_shape_errors() {
    let w = world(2);
    let results = w.run(|r| {
        let run = |input: OwnedMemRef<f64>, out: &[i64], start: &dyn Fn(U, U, U) -> i64| {
            code(collective(&[0, 1], input, OwnedMemRef::filled(out, 0.0f64), start))
        };
        let m = |shape: &[i64]| OwnedMemRef::new(shape, iota(shape, |i| i as f64));
        let bad_op = run(m(&[2]), &[2], &|p, i, o| {
            // SAFETY: the descriptors live until the wait in `collective`.
            unsafe { _bprt_all_reduce_f64(0, p.0, p.1, i.0, i.1, o.0, o.1, 9) }
        });
        let bad_out = run(m(&[2]), &[3], &|p, i, o| {
            // SAFETY: the descriptors live until the wait in `collective`.
            unsafe { _bprt_all_reduce_f64(0, p.0, p.1, i.0, i.1, o.0, o.1, 0) }
        });
        let bad_axis = run(m(&[2, 2]), &[2, 1], &|p, i, o| {
            // SAFETY: the descriptors live until the wait in `collective`.
            unsafe { _bprt_reduce_scatter_f64(0, p.0, p.1, i.0, i.1, o.0, o.1, 0, 2) }
        });
        let indivisible = run(m(&[3, 2]), &[1, 2], &|p, i, o| {
            // SAFETY: the descriptors live until the wait in `collective`.
            unsafe { _bprt_reduce_scatter_f64(0, p.0, p.1, i.0, i.1, o.0, o.1, 0, 0) }
        });
        let bad_root = run(m(&[2]), &[2], &|p, i, o| {
            // SAFETY: the descriptors live until the wait in `collective`.
            unsafe { _bprt_broadcast_f64(0, p.0, p.1, i.0, i.1, o.0, o.1, 3) }
        });
        let negative_axis = run(m(&[4]), &[4], &|p, i, o| {
            // SAFETY: the descriptors live until the wait in `collective`.
            unsafe { _bprt_all_to_all_f64(0, p.0, p.1, i.0, i.1, o.0, o.1, -1) }
        });
        // Only rank 1 passes a wrong output shape: it fails at start, rank 0
        // learns it at wait.
        let one_bad = run(m(&[2]), if r == 1 { &[5] } else { &[2] }, &|p, i, o| {
            // SAFETY: the descriptors live until the wait in `collective`.
            unsafe { _bprt_all_reduce_f64(0, p.0, p.1, i.0, i.1, o.0, o.1, 0) }
        });
        (r, bad_op, bad_out, bad_axis, indivisible, bad_root, negative_axis, one_bad)
    });
    for (r, bad_op, bad_out, bad_axis, indivisible, bad_root, negative_axis, one_bad) in results {
        assert_eq!(bad_op, INVALID_ARGUMENT);
        assert_eq!(bad_out, SHAPE_MISMATCH);
        assert_eq!(bad_axis, INVALID_ARGUMENT);
        assert_eq!(indivisible, SHAPE_MISMATCH);
        assert_eq!(bad_root, INVALID_ARGUMENT);
        assert_eq!(negative_axis, INVALID_ARGUMENT);
        assert_eq!(one_bad, if r == 1 { SHAPE_MISMATCH } else { PEER_FAILED });
    }
    assert_eq!(w.open_exchanges(), 0);
}

#[test]
fn cross_rank_shape_disagreements_fail_on_every_rank() {
    let w = world(2);
    let results = w.run(|r| {
        // all_gather: rank 1's output is too small along the axis.
        let gather = code(collective(
            &[0, 1],
            OwnedMemRef::new(&[2], vec![1i16, 2]),
            OwnedMemRef::filled(&[if r == 1 { 3 } else { 4 }], 0i16),
            // SAFETY: the descriptors live until the wait in `collective`.
            |p, i, o| unsafe { _bprt_all_gather_i16(0, p.0, p.1, i.0, i.1, o.0, o.1, 0) },
        ));
        // broadcast: rank 0's output differs from the root's input.
        let bcast = code(collective(
            &[0, 1],
            OwnedMemRef::new(&[2], vec![1i16, 2]),
            OwnedMemRef::filled(&[if r == 0 { 3 } else { 2 }], 0i16),
            // SAFETY: the descriptors live until the wait in `collective`.
            |p, i, o| unsafe { _bprt_broadcast_i16(0, p.0, p.1, i.0, i.1, o.0, o.1, 1) },
        ));
        // send/recv: the receiver's output has the wrong shape.
        let mut i = OwnedMemRef::new(&[2], vec![1i16, 2]);
        let mut o = OwnedMemRef::filled(&[3], 0i16);
        let (ii, oo) = (i.arg(), o.arg());
        // SAFETY: the descriptors live until the wait below.
        let h = unsafe { _bprt_send_recv_i16(0, ii.0, ii.1, oo.0, oo.1, 0, 1) };
        let p2p = code(wait(h));
        (gather, bcast, p2p)
    });
    for got in results {
        assert_eq!(got, (MISMATCH, MISMATCH, MISMATCH));
    }
}

#[test]
fn copy_errors_holes_disagreements_and_bad_axes() {
    let g_shape = [2i64, 4];
    let global: Vec<i64> = iota(&g_shape, |i| i as i64);
    let w = world(2);
    let results = w.run(|r| {
        let old = Block { offsets: vec![r as i64, 0], shape: vec![1, 4] };
        let input = || OwnedMemRef::new(&old.shape, extract(&global, &g_shape, &old));
        // Rank 1 claims to hold nothing: rank 0's new block has a hole...
        // but here both new blocks need rank 1's data.
        let hole_old = if r == 1 { Block { offsets: vec![2, 0], shape: vec![0, 4] } } else { old.clone() };
        let hole_in = OwnedMemRef::new(&hole_old.shape, extract(&global, &g_shape, &hole_old));
        let new = Block { offsets: vec![0, 2 * r as i64], shape: vec![2, 2] };
        let hole = code(reshape_call(hole_in, &g_shape, &hole_old.offsets, &g_shape, &new, 0, reshape_index));
        // The ranks disagree on the new global shape.
        let ng: &[i64] = if r == 0 { &[8] } else { &[4, 2] };
        let nb = if r == 0 { Block { offsets: vec![0], shape: vec![4] } } else { Block { offsets: vec![2, 0], shape: vec![2, 2] } };
        let disagree = code(reshape_call(input(), &g_shape, &old.offsets, ng, &nb, 0, reshape_index));
        // Element counts differ.
        let count =
            code(reshape_call(input(), &g_shape, &old.offsets, &[9], &Block { offsets: vec![0], shape: vec![1] }, 0, reshape_index));
        // A block outside the global array.
        let outside = code(reshape_call(
            input(),
            &g_shape,
            &[r as i64, r as i64],
            &[8],
            &Block { offsets: vec![4 * r as i64], shape: vec![4] },
            0,
            reshape_index,
        ));
        // Not a permutation.
        let (mut i, mut g, mut lo) = (input(), ints(&g_shape), ints(&old.offsets));
        let (mut nlo, mut nls, mut ax) = (ints(&[0, 0]), ints(&[4, 1]), ints(&[0, 0]));
        let mut out = OwnedMemRef::filled(&[4, 1], 0i64);
        let a = [i.arg(), g.arg(), lo.arg(), nlo.arg(), nls.arg(), ax.arg(), out.arg()];
        // SAFETY: the descriptors live until the wait below.
        let h = unsafe {
            _bprt_copy_permute_i64(
                0, a[0].0, a[0].1, a[1].0, a[1].1, a[2].0, a[2].1, a[3].0, a[3].1, a[4].0, a[4].1, a[5].0, a[5].1, a[6].0, a[6].1,
            )
        };
        let axes = code(wait(h));
        (r, hole, disagree, count, outside, axes)
    });
    for (r, hole, disagree, count, outside, axes) in results {
        assert_eq!(hole, MISMATCH, "rank {r}");
        assert_eq!(disagree, MISMATCH, "rank {r}");
        assert_eq!(count, SHAPE_MISMATCH);
        assert_eq!(outside, if r == 1 { SHAPE_MISMATCH } else { PEER_FAILED });
        assert_eq!(axes, INVALID_ARGUMENT);
    }
    assert_eq!(w.open_exchanges(), 0);
}

#[test]
fn last_error_buffer_is_truncated_and_nul_terminated() {
    std::thread::spawn(|| {
        // SAFETY: null buffer, nothing written.
        let len = unsafe { _bprt_last_error(std::ptr::null_mut(), 0) };
        assert_eq!(len, 0, "no error yet");
        assert_eq!(_bprt_wait(1), NOT_IN_WORLD);
        let full = last_message();
        let mut buf = [0xffu8; 5];
        // SAFETY: `buf` is valid for 5 bytes.
        let len = unsafe { _bprt_last_error(buf.as_mut_ptr(), 5) };
        assert_eq!(len as usize, full.len());
        assert_eq!(&buf[..4], &full.as_bytes()[..4]);
        assert_eq!(buf[4], 0);
        super::super::error::clear_last_error();
        assert_eq!(last_error(), None);
    })
    .join()
    .unwrap();
}

#[test]
fn panics_become_internal_errors() {
    let w = world(1);
    w.run(|_| {
        let rc = super::super::abi::guard(|| panic!("boom"));
        assert_eq!(rc, INTERNAL);
        assert!(last_message().contains("boom"));
    });
    assert_eq!(w.errors()[0].error.code(), ErrorCode::Internal);
}

#[test]
fn error_codes_round_trip() {
    for c in ErrorCode::ALL {
        assert!(c.value() < 0);
        assert_eq!(ErrorCode::from_value(c.value()), Some(c));
    }
    assert_eq!(ErrorCode::from_value(0), None);
}

#[test]
fn symbol_table_lists_every_entry_point_once() {
    let table = super::super::symbols();
    // Seven queries and announcements (the mesh group and peer among
    // them), the assert, abort and exit, eight typed collectives and copies
    // per element type, the matmul kernel.
    assert_eq!(table.len(), 7 + 3 + 8 * 10 + 1);
    for name in ["_bprt_assert", "abort", "exit", "_bprt_mesh_group", "_bprt_mesh_peer"] {
        assert!(table.iter().any(|(n, _)| *n == name), "{name}");
    }
    let names: HashSet<&str> = table.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), table.len());
    for suffix in ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "i1", "index"] {
        for op in ["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "send_recv", "copy_reshape", "copy_permute"] {
            assert!(names.contains(format!("_bprt_{op}_{suffix}").as_str()), "{op}_{suffix}");
        }
    }
    assert!(names.contains("_bprt_matmul_f32"));
    assert!(table.iter().all(|(_, p)| !p.is_null()));
    // Call through the table as a JIT would.
    let (_, nprocs) = table.iter().find(|(n, _)| *n == "_bprt_nprocs").unwrap();
    // SAFETY: the table entry for `_bprt_nprocs` is that function.
    let nprocs: extern "C" fn(i64) -> i64 = unsafe { std::mem::transmute(*nprocs) };
    let w = world(3);
    assert_eq!(w.run(|_| nprocs(0)), vec![3, 3, 3]);
}

/// Announces `name` as lowered code does (`_bprt_op` on an `i8` memref).
fn announce(name: &OwnedMemRef<u8>) {
    let mut name = name.clone();
    let (rank, desc) = name.arg();
    // SAFETY: a valid rank-1 i8 memref.
    assert_eq!(unsafe { _bprt_op(rank, desc) }, 0);
}

fn op_name(text: &str) -> OwnedMemRef<u8> {
    OwnedMemRef::new(&[text.len() as i64], text.as_bytes().to_vec())
}

/// Two same-shape all-reduces in another order on rank 0: by call order
/// alone they pair the wrong inputs (each rank would get 1 + 100 and
/// 100 + 1); the announced ops disagree, so every rank fails, naming both
/// ops and ranks (issue 29).
#[test]
fn reordered_ops_fail_naming_both_ops() {
    let w = world(2);
    let (a, b) = (op_name("'ar_a' at f.mlir:3:5"), op_name("'ar_b' at f.mlir:4:5"));
    let results = w.run(|r| {
        let order = if r == 0 { [(&b, 100.0), (&a, 1.0)] } else { [(&a, 1.0), (&b, 100.0)] };
        order.map(|(name, value)| {
            announce(name);
            all_reduce_f32(&[0, 1], vec![value; 2], 0)
        })
    });
    for [first, second] in results {
        let (c, msg) = first.unwrap_err();
        assert_eq!(c, MISMATCH);
        assert!(msg.contains("is at op 'ar_a' at f.mlir:3:5") && msg.contains("is at op 'ar_b' at f.mlir:4:5"), "{msg}");
        assert!(msg.contains("rank 0") && msg.contains("rank 1"), "{msg}");
        // The second exchange pairs the other two calls: again two ops.
        assert_eq!(second.unwrap_err().0, MISMATCH);
    }
    assert_eq!(w.open_exchanges(), 0);

    // The same op on both ranks pairs as before (a call without a new
    // announcement carries the op announced last).
    let results = w.run(|r| {
        announce(&a);
        let same = all_reduce_f32(&[0, 1], vec![r as f32 + 1.0; 2], 0);
        (same, all_reduce_f32(&[0, 1], vec![1.0; 2], 0))
    });
    for (same, again) in results {
        assert_eq!(same.unwrap(), vec![3.0, 3.0]);
        assert_eq!(again.unwrap(), vec![2.0, 2.0]);
    }
}

/// An announced name is interned: the same bytes at the same place give
/// the same string, whatever the number of calls; other bytes at that
/// place give their own.
#[test]
fn announced_names_are_interned() {
    let name = op_name("'ar' at f.mlir:1:1");
    let mut view = name.clone();
    let (rank, desc) = view.arg();
    // SAFETY: a valid rank-1 i8 memref, alive for both calls.
    unsafe {
        assert_eq!(_bprt_op(rank, desc), 0);
        let first = super::super::op_identity::current().expect("announced");
        assert_eq!(_bprt_op(rank, desc), 0);
        let second = super::super::op_identity::current().expect("announced");
        assert!(std::sync::Arc::ptr_eq(&first.name, &second.name));
        assert_eq!(&*first.name, "'ar' at f.mlir:1:1");
    }
    let mut other = op_name("'ar' at f.mlir:9:9");
    let (rank, desc) = other.arg();
    // SAFETY: as above.
    unsafe { _bprt_op(rank, desc) };
    assert_eq!(&*super::super::op_identity::current().expect("announced").name, "'ar' at f.mlir:9:9");
}

/// `_bprt_mesh_group` writes each rank's group along the named axes, and
/// refuses a mesh that is not the world, a repeated or unknown axis, and a
/// buffer of the wrong size, naming them.
#[test]
fn mesh_groups_follow_the_coordinates_and_refuse_what_does_not_fit() {
    use super::super::abi::_bprt_mesh_group;
    let w = world(6);
    // A 2 x 3 mesh: along axis 1 rank r's group is its row.
    let groups = w.run(|_| {
        let (mut shape, mut axes, mut out) = (ints(&[2, 3]), ints(&[1]), ints(&[-1, -1, -1]));
        let ((sr, sd), (ar, ad), (or, od)) = (shape.arg(), axes.arg(), out.arg());
        // SAFETY: the memrefs are alive for the call.
        let code = unsafe { _bprt_mesh_group(0, sr, sd, ar, ad, or, od) };
        (code, out.to_vec())
    });
    for (rank, (code, group)) in groups.into_iter().enumerate() {
        assert_eq!(code, 0);
        let row = (rank / 3) as i64 * 3;
        assert_eq!(group, vec![row, row + 1, row + 2], "rank {rank}");
    }
    let call = |shape: &[i64], axes: &[i64], size: usize| {
        let (shape, axes) = (shape.to_vec(), axes.to_vec());
        w.run(move |_| {
            let (mut s, mut a, mut o) = (ints(&shape), ints(&axes), ints(&vec![0; size]));
            let ((sr, sd), (ar, ad), (or, od)) = (s.arg(), a.arg(), o.arg());
            // SAFETY: the memrefs are alive for the call.
            let code = unsafe { _bprt_mesh_group(0, sr, sd, ar, ad, or, od) };
            (code, last_message())
        })
    };
    for (shape, axes, size, message) in [
        (vec![2, 2], vec![1], 2, "the mesh [2, 2] has 4 ranks, but the world has 6"),
        (vec![2, 3], vec![1, 1], 3, "mesh axes [1, 1] are not distinct axes of [2, 3]"),
        (vec![2, 3], vec![2], 3, "mesh axes [2] are not distinct axes of [2, 3]"),
        (vec![2, 3], vec![0], 3, "the group has 2 ranks, but its buffer has shape [3]"),
    ] {
        for (code, got) in call(&shape, &axes, size) {
            assert!(code < 0);
            assert!(got.contains(message), "{got}");
        }
    }
}
