//! `cargo bench --bench allreduce`: all-reduce bandwidth of the runtime on 4
//! ranks, in-process (threads) and on MPI (`mpirun -np 4`, one process per
//! rank), for 1 KiB .. 256 MiB of f32, against memcpy bandwidth on the same
//! machine. Bandwidth is the message size over the time of one all-reduce
//! through the C ABI (`_bprt_all_reduce_f32` + `_bprt_wait`, what lowered
//! programs call), best of several repetitions; memcpy is the size over the
//! time of one copy of that size. Not a timed test: nothing is asserted.
//!
//! `cargo bench --bench allreduce -- quick` stops at 16 MiB; `-- no-mpi`
//! skips the MPI half (it re-runs this binary under `mpirun -np 4`).

use std::time::{Duration, Instant};

use blueprint::runtime::abi::{_bprt_all_reduce_f32, _bprt_wait};
use blueprint::runtime::{mpi, OwnedMemRef, World};

const RANKS: usize = 4;
const MPI_WORKER: &str = "--mpi-worker";

fn sizes(quick: bool) -> Vec<usize> {
    let top = if quick { 16 << 20 } else { 256 << 20 };
    std::iter::successors(Some(1usize << 10), |&s| (s < top).then_some(s * 4)).collect()
}

/// Repetitions for a message of `bytes`: about 256 MiB moved, 3 to 200.
fn reps(bytes: usize) -> usize {
    ((256usize << 20) / bytes).clamp(3, 200)
}

fn gbps(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

/// Best time of one copy of `bytes` (small copies timed in batches).
fn memcpy_time(bytes: usize) -> Duration {
    // Source and destination 1 KiB + 64 B apart modulo 4 KiB (no 4K aliasing).
    let src = vec![1u8; bytes + 4096];
    let mut dst = vec![0u8; bytes + 4096];
    let (src, dst) = (&src[..bytes], &mut dst[1088..1088 + bytes]);
    let batch = ((1usize << 20) / bytes).max(1);
    (0..reps(bytes))
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                dst.copy_from_slice(std::hint::black_box(src));
                std::hint::black_box(&mut *dst);
            }
            start.elapsed() / batch as u32
        })
        .min()
        .unwrap_or_default()
}

/// One all-reduce of `x` into `y` on the calling rank.
fn all_reduce(parts: &mut OwnedMemRef<i64>, x: &mut OwnedMemRef<f32>, y: &mut OwnedMemRef<f32>) {
    let (pr, pd) = parts.arg();
    let (xr, xd) = x.arg();
    let (yr, yd) = y.arg();
    // SAFETY: three valid descriptors that outlive the wait.
    let handle = unsafe { _bprt_all_reduce_f32(0, pr, pd, xr, xd, yr, yd, 0) };
    assert!(handle > 0, "all-reduce failed to start");
    assert_eq!(_bprt_wait(handle), 0, "all-reduce failed");
}

fn buffers(bytes: usize, rank: usize) -> (OwnedMemRef<i64>, OwnedMemRef<f32>, OwnedMemRef<f32>) {
    let n = (bytes / 4) as i64;
    (OwnedMemRef::new(&[RANKS as i64], (0..RANKS as i64).collect()), OwnedMemRef::filled(&[n], rank as f32), OwnedMemRef::filled(&[n], 0.0))
}

/// Best time of one in-process all-reduce of `bytes` (the slowest rank of
/// each repetition, which starts together with the others).
fn in_process_time(world: &std::sync::Arc<World>, bytes: usize) -> Duration {
    let barrier = std::sync::Barrier::new(RANKS);
    let times = world.run(|rank| {
        let (mut p, mut x, mut y) = buffers(bytes, rank);
        all_reduce(&mut p, &mut x, &mut y); // warm-up (page faults)
        let expected = (0..RANKS).sum::<usize>() as f32;
        assert!(y.storage().iter().all(|&v| v == expected), "wrong sum");
        (0..reps(bytes))
            .map(|_| {
                barrier.wait();
                let start = Instant::now();
                all_reduce(&mut p, &mut x, &mut y);
                let t = start.elapsed();
                barrier.wait();
                t
            })
            .collect::<Vec<_>>()
    });
    (0..times[0].len()).map(|i| times.iter().map(|t| t[i]).max().unwrap_or_default()).min().unwrap_or_default()
}

/// Under `mpirun -np 4`: rank 0 prints `bytes seconds` per size.
fn mpi_worker(quick: bool) {
    let world = mpi::init(Duration::from_secs(120)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(world.nranks(), RANKS, "run with mpirun -np {RANKS}");
    for bytes in sizes(quick) {
        let (mut p, mut x, mut y) = buffers(bytes, world.rank());
        all_reduce(&mut p, &mut x, &mut y);
        let expected = (0..RANKS).sum::<usize>() as f32;
        assert!(y.storage().iter().all(|&v| v == expected), "wrong sum");
        let mut best = Duration::MAX;
        for _ in 0..reps(bytes) {
            world.barrier();
            let start = Instant::now();
            all_reduce(&mut p, &mut x, &mut y);
            world.barrier();
            best = best.min(start.elapsed());
        }
        if world.rank() == 0 {
            println!("{bytes} {}", best.as_secs_f64());
        }
    }
    world.finalize();
}

fn label(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "quick");
    if args.iter().any(|a| a == MPI_WORKER) {
        mpi_worker(quick);
        return;
    }
    let mpi_times: Option<Vec<f64>> = if args.iter().any(|a| a == "no-mpi") {
        None
    } else {
        let exe = std::env::current_exe().expect("own path");
        let mut command = std::process::Command::new("mpirun");
        command.args(["-np", &RANKS.to_string()]).arg(exe).arg(MPI_WORKER);
        if quick {
            command.arg("quick");
        }
        match command.output() {
            Ok(out) if out.status.success() => {
                Some(String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().nth(1)?.parse().ok()).collect())
            }
            Ok(out) => {
                eprintln!("MPI half skipped: mpirun failed: {}", String::from_utf8_lossy(&out.stderr).trim());
                None
            }
            Err(e) => {
                eprintln!("MPI half skipped: cannot run mpirun: {e}");
                None
            }
        }
    };
    let world = World::with_timeout(RANKS, Duration::from_secs(120));
    println!("all-reduce f32 sum on {RANKS} ranks; GB/s = message bytes / time of one all-reduce (best of N); time per all-reduce");
    println!(
        "{:>8} {:>10} {:>12} {:>7} {:>11} {:>12} {:>7} {:>11}",
        "size", "memcpy", "in-process", "ratio", "time", "MPI", "ratio", "time"
    );
    for (i, bytes) in sizes(quick).into_iter().enumerate() {
        let copy = gbps(bytes, memcpy_time(bytes));
        let local_time = in_process_time(&world, bytes);
        let local = gbps(bytes, local_time);
        let mpi = mpi_times.as_ref().and_then(|t| t.get(i)).copied();
        let (mpi_text, mpi_ratio, mpi_time) = match mpi {
            Some(s) => {
                let m = bytes as f64 / s / 1e9;
                (format!("{m:.2}"), format!("{:.0}%", 100.0 * m / copy), format!("{:.2?}", Duration::from_secs_f64(s)))
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "{:>8} {copy:>10.2} {local:>12.2} {:>6.0}% {:>11} {mpi_text:>12} {mpi_ratio:>7} {mpi_time:>11}",
            label(bytes),
            100.0 * local / copy,
            format!("{local_time:.2?}")
        );
    }
}
