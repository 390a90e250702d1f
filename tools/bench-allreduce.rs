//! `cargo bench --bench allreduce`: all-reduce bandwidth of the runtime on 4
//! ranks, in-process (threads) and on MPI (`mpirun -np 4`, one process per
//! rank), for 1 KiB .. 256 MiB of f32, against memcpy bandwidth on the same
//! machine. Not a timed test: nothing is asserted.
//!
//! Conventions (those of nccl-tests): the time is that of one all-reduce
//! through the C ABI (`_bprt_all_reduce_f32` + `_bprt_wait`, what lowered
//! programs call), best of several repetitions; `algbw` = message bytes /
//! time; `busbw` = algbw * 2(n-1)/n, the per-rank traffic of an optimal
//! all-reduce, the figure meant to be compared with hardware bandwidth.
//! The ratio is busbw over single-threaded memcpy bandwidth (message bytes
//! / time of one `copy_from_slice` of that size, best of several);
//! `memcpy x2` is two threads each copying their own message at once (sum
//! of bytes / time), what the machine's two cores can move together.
//!
//! Buffers: each rank allocates its own on its own thread, input then
//! output, 64-byte aligned as lowered programs get them (`memref.alloc`,
//! one-shot bufferization); the `Vec` columns repeat the in-process run
//! with plain `Vec`s, which malloc places at mixed offsets within a cache
//! line (at 16 MiB, from each thread's arena). Inputs hold `rank + 1`: a
//! zero-filled `Vec` is untouched calloc'd memory, whose reads (of the
//! kernel's zero page) cost no memory traffic.
//!
//! Each all-reduce is announced first (`_bprt_op`, as lowered code does),
//! so the participants' check that they run the same op is in every time;
//! `-- no-op-check` leaves the announcement out (nothing is compared), to
//! measure what the check costs.
//!
//! `cargo bench --bench allreduce -- quick` stops at 16 MiB; `-- no-mpi`
//! skips the MPI half (it re-runs this binary under `mpirun -np 4`).

use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicBool, Ordering};

use blueprint::runtime::abi::{_bprt_all_reduce_f32, _bprt_op, _bprt_wait};
use blueprint::runtime::{mpi, OwnedMemRef, World};

const RANKS: usize = 4;
const MPI_WORKER: &str = "--mpi-worker";
/// Announce each all-reduce's op (off with `no-op-check`).
static ANNOUNCE: AtomicBool = AtomicBool::new(true);
/// The op every all-reduce announces, as a lowered program's constant global.
static OP_NAME: [u8; 31] = *b"'bench.ar' at bench.mlir:1:1   ";

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

/// CPU time of the calling thread (Linux `CLOCK_THREAD_CPUTIME_ID`):
/// on a machine shared with other jobs, what the work cost while it ran.
fn thread_cpu() -> Duration {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: a valid out pointer; the clock exists on Linux.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.sec as u64, ts.nsec as u32)
}

/// Best wall time and best CPU time of one copy of `bytes` (small copies
/// timed in batches).
fn memcpy_time(bytes: usize) -> (Duration, Duration) {
    // Source and destination 1 KiB + 64 B apart modulo 4 KiB (no 4K aliasing).
    let src = vec![1u8; bytes + 4096];
    let mut dst = vec![0u8; bytes + 4096];
    let (src, dst) = (&src[..bytes], &mut dst[1088..1088 + bytes]);
    let batch = ((1usize << 20) / bytes).max(1);
    let (mut wall, mut cpu) = (Duration::MAX, Duration::MAX);
    for _ in 0..reps(bytes) {
        let (start, start_cpu) = (Instant::now(), thread_cpu());
        for _ in 0..batch {
            dst.copy_from_slice(std::hint::black_box(src));
            std::hint::black_box(&mut *dst);
        }
        wall = wall.min(start.elapsed() / batch as u32);
        cpu = cpu.min((thread_cpu() - start_cpu) / batch as u32);
    }
    (wall, cpu)
}

/// Best time of two threads each copying their own `bytes` at once.
fn memcpy2_time(bytes: usize) -> Duration {
    let barrier = std::sync::Barrier::new(2);
    let times: Vec<Vec<Duration>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let src = vec![1u8; bytes + 4096];
                    let mut dst = vec![0u8; bytes + 4096];
                    let (src, dst) = (&src[..bytes], &mut dst[1088..1088 + bytes]);
                    let batch = ((1usize << 20) / bytes).max(1);
                    (0..reps(bytes))
                        .map(|_| {
                            barrier.wait();
                            let start = Instant::now();
                            for _ in 0..batch {
                                dst.copy_from_slice(std::hint::black_box(src));
                                std::hint::black_box(&mut *dst);
                            }
                            start.elapsed() / batch as u32
                        })
                        .collect()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("memcpy thread")).collect()
    });
    (0..times[0].len()).map(|i| times[0][i].max(times[1][i])).min().unwrap_or_default()
}

/// busbw of an all-reduce of `bytes` on `RANKS` ranks in `t`.
fn busbw(bytes: usize, t: Duration) -> f64 {
    gbps(bytes, t) * 2.0 * (RANKS - 1) as f64 / RANKS as f64
}

/// One all-reduce of `x` into `y` on the calling rank, announced first
/// (a memref over the one static name, as lowered code passes its global).
fn all_reduce(parts: &mut OwnedMemRef<i64>, x: &mut OwnedMemRef<f32>, y: &mut OwnedMemRef<f32>) {
    if ANNOUNCE.load(Ordering::Relaxed) {
        // rank-1 memref descriptor: allocated, aligned, offset, size, stride.
        let mut desc: [i64; 5] = [OP_NAME.as_ptr() as i64, OP_NAME.as_ptr() as i64, 0, OP_NAME.len() as i64, 1];
        // SAFETY: a valid descriptor of the static bytes.
        assert_eq!(unsafe { _bprt_op(1, desc.as_mut_ptr().cast()) }, 0, "announce");
    }
    let (pr, pd) = parts.arg();
    let (xr, xd) = x.arg();
    let (yr, yd) = y.arg();
    // SAFETY: three valid descriptors that outlive the wait.
    let handle = unsafe { _bprt_all_reduce_f32(0, pr, pd, xr, xd, yr, yd, 0) };
    assert!(handle > 0, "all-reduce failed to start");
    assert_eq!(_bprt_wait(handle), 0, "all-reduce failed");
}

/// A rank's participant list, input and output; `aligned`: 64-byte aligned
/// (as `memref.alloc` aligns: 64 bytes more allocated, the data from the
/// first aligned address), else plain `Vec`s.
fn buffers(bytes: usize, rank: usize, aligned: bool) -> (OwnedMemRef<i64>, OwnedMemRef<f32>, OwnedMemRef<f32>) {
    let n = bytes / 4;
    let memref = |value: f32| {
        if !aligned {
            return OwnedMemRef::filled(&[n as i64], value);
        }
        let storage = vec![value; n + 16];
        let offset = storage.as_ptr().align_offset(64) as i64;
        OwnedMemRef::strided(storage, offset, &[n as i64], &[1])
    };
    let input = memref(rank as f32 + 1.0);
    (OwnedMemRef::new(&[RANKS as i64], (0..RANKS as i64).collect()), input, memref(0.0))
}

/// Whether all `bytes / 4` elements of `y` hold the sum of `rank + 1` (the
/// storage's padding holds 0).
fn summed(y: &OwnedMemRef<f32>, bytes: usize) -> bool {
    let expected = (1..=RANKS).sum::<usize>() as f32;
    y.storage().iter().filter(|&&v| v == expected).count() == bytes / 4
}

/// Best wall time of one in-process all-reduce of `bytes` (the slowest
/// rank of each repetition, which starts together with the others), and
/// best CPU time summed over the ranks.
fn in_process_time(world: &std::sync::Arc<World>, bytes: usize, aligned: bool) -> (Duration, Duration) {
    let barrier = std::sync::Barrier::new(RANKS);
    let times = world.run(|rank| {
        let (mut p, mut x, mut y) = buffers(bytes, rank, aligned);
        all_reduce(&mut p, &mut x, &mut y); // warm-up (page faults)
        assert!(summed(&y, bytes), "wrong sum");
        (0..reps(bytes))
            .map(|_| {
                barrier.wait();
                let (start, start_cpu) = (Instant::now(), thread_cpu());
                all_reduce(&mut p, &mut x, &mut y);
                let t = (start.elapsed(), thread_cpu() - start_cpu);
                barrier.wait();
                t
            })
            .collect::<Vec<_>>()
    });
    let reps = 0..times[0].len();
    let wall = reps.clone().map(|i| times.iter().map(|t| t[i].0).max().unwrap_or_default()).min().unwrap_or_default();
    let cpu = reps.map(|i| times.iter().map(|t| t[i].1).sum::<Duration>()).min().unwrap_or_default();
    (wall, cpu)
}

/// Under `mpirun -np 4`: rank 0 prints `bytes seconds` per size.
fn mpi_worker(quick: bool) {
    let world = mpi::init(Duration::from_secs(120)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(world.nranks(), RANKS, "run with mpirun -np {RANKS}");
    for bytes in sizes(quick) {
        let (mut p, mut x, mut y) = buffers(bytes, world.rank(), true);
        all_reduce(&mut p, &mut x, &mut y);
        assert!(summed(&y, bytes), "wrong sum");
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

/// What one call costs the runtime itself: a 16-byte all-reduce on a
/// world of one rank (no peer to wait for), thread CPU time per call,
/// announced (`_bprt_op`, the participants' op check) and not.
fn call_cost() {
    const CALLS: u32 = 200_000;
    let world = World::with_timeout(1, Duration::from_secs(120));
    let cost = |announce: bool| {
        ANNOUNCE.store(announce, Ordering::Relaxed);
        let times = world.run(|_| {
            let (_, mut x, mut y) = buffers(16, 0, true);
            let mut p = OwnedMemRef::new(&[1], vec![0i64]);
            (0..5)
                .map(|_| {
                    let start = thread_cpu();
                    for _ in 0..CALLS {
                        all_reduce(&mut p, &mut x, &mut y);
                    }
                    (thread_cpu() - start) / CALLS
                })
                .min()
                .unwrap_or_default()
        });
        times[0]
    };
    let restore = ANNOUNCE.load(Ordering::Relaxed);
    let (plain, announced) = (cost(false), cost(true));
    ANNOUNCE.store(restore, Ordering::Relaxed);
    println!(
        "per call on one rank (16 B all-reduce + wait, thread CPU, best of 5 x {CALLS}): {plain:.2?} without the op announcement, \
         {announced:.2?} with it (the participants' op check): +{:.2?}\n",
        announced.saturating_sub(plain)
    );
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
    let op_check = !args.iter().any(|a| a == "no-op-check");
    ANNOUNCE.store(op_check, Ordering::Relaxed);
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
        if !op_check {
            command.arg("no-op-check");
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
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    call_cost();
    println!(
        "all-reduce f32 sum on {RANKS} ranks; GB/s; algbw = bytes / time, busbw = algbw * 2(n-1)/n; \
         ratio = busbw / memcpy (one thread); time per all-reduce (best of N); buffers 64-byte aligned, \
         Vec: in-process on plain Vecs; {}",
        if op_check { "each announced (_bprt_op): the ranks check they run the same op" } else { "not announced (no-op-check)" }
    );
    println!(
        "{:>8} {:>7} {:>9} | {:>8} {:>7} {:>6} {:>9} | {:>7} {:>6} {:>9} | {:>8} {:>7} {:>6} {:>9}",
        "size", "memcpy", "memcpy x2", "in-proc", "busbw", "ratio", "time", "Vec bus", "ratio", "time", "MPI", "busbw", "ratio", "time"
    );
    let mut cpu_rows = Vec::new();
    let mut traffic_rows = Vec::new();
    for (i, bytes) in sizes(quick).into_iter().enumerate() {
        let (copy_time, copy_cpu) = memcpy_time(bytes);
        let copy = gbps(bytes, copy_time);
        let copy2 = gbps(2 * bytes, memcpy2_time(bytes));
        let cells = |t: Duration| {
            let bus = busbw(bytes, t);
            (format!("{:.2}", gbps(bytes, t)), format!("{bus:.2}"), format!("{:.0}%", 100.0 * bus / copy), format!("{t:.2?}"))
        };
        let (local_time, local_cpu) = in_process_time(&world, bytes, true);
        let local = cells(local_time);
        let vec = cells(in_process_time(&world, bytes, false).0);
        let mpi = mpi_times.as_ref().and_then(|t| t.get(i)).map(|&s| cells(Duration::from_secs_f64(s)));
        let mpi = mpi.unwrap_or_else(|| ("-".into(), "-".into(), "-".into(), "-".into()));
        println!(
            "{:>8} {copy:>7.2} {copy2:>9.2} | {:>8} {:>7} {:>6} {:>9} | {:>7} {:>6} {:>9} | {:>8} {:>7} {:>6} {:>9}",
            label(bytes),
            local.0,
            local.1,
            local.2,
            local.3,
            vec.1,
            vec.2,
            vec.3,
            mpi.0,
            mpi.1,
            mpi.2,
            mpi.3
        );
        cpu_rows.push((bytes, copy_cpu, local_cpu));
        traffic_rows.push((bytes, copy, copy2, local_time));
    }
    // Wall time on a shared machine counts other jobs' turns on the cores;
    // CPU time counts only this work (memory stalls included).
    println!(
        "\nCPU time (best of N): memcpy on one thread; in-process all-reduce summed over the {RANKS} ranks; \
         busbw and ratio if the {cores} cores ran only this (time = CPU sum / {cores})"
    );
    println!("{:>8} {:>10} {:>7} | {:>12} {:>7} {:>6}", "size", "memcpy", "GB/s", "all-reduce", "busbw", "ratio");
    for (bytes, copy_cpu, local_cpu) in cpu_rows {
        let copy = gbps(bytes, copy_cpu);
        let bus = busbw(bytes, local_cpu / cores as u32);
        println!(
            "{:>8} {:>10} {copy:>7.2} | {:>12} {bus:>7.2} {:>5.0}%",
            label(bytes),
            format!("{copy_cpu:.2?}"),
            format!("{local_cpu:.2?}"),
            100.0 * bus / copy
        );
    }
    // What the memory system moves: the ratio above is fixed by it
    // whatever the kernel does (every input read, every output written).
    println!(
        "\nMemory traffic (GB/s of bytes read + written): memcpy moves 2 bytes per message byte; the in-process \
         all-reduce reads every rank's input and writes every rank's output once, {} per message byte, so \
         ratio = {:.3} * all-reduce traffic / memcpy traffic. vs x2 = all-reduce traffic / memcpy x2 traffic \
         (what both cores move when both copy)",
        2 * RANKS,
        ratio_at_equal_traffic()
    );
    println!("{:>8} {:>7} {:>9} | {:>10} {:>6}", "size", "memcpy", "memcpy x2", "all-reduce", "vs x2");
    for (bytes, copy, copy2, local_time) in traffic_rows {
        let moved = gbps(2 * RANKS * bytes, local_time);
        println!("{:>8} {:>7.2} {:>9.2} | {moved:>10.2} {:>5.0}%", label(bytes), 2.0 * copy, 2.0 * copy2, 100.0 * moved / (2.0 * copy2));
    }
}

/// busbw / memcpy bandwidth of an all-reduce that moves memory exactly as
/// fast as memcpy: 2(n-1)/n credited per message byte for 2n bytes moved,
/// against memcpy's one credited per two moved.
fn ratio_at_equal_traffic() -> f64 {
    let n = RANKS as f64;
    2.0 * (n - 1.0) / n * 2.0 / (2.0 * n)
}
