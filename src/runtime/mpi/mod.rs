//! The runtime's C ABI on MPI (MPICH): one rank per process.
//!
//! A start call reads this rank's contribution exactly as in-process, then
//! sends a fixed-size *header* (the operation, element type, participants,
//! shapes and block layout; or why the start failed) to every other
//! participant, point to point on a duplicate of `MPI_COMM_WORLD` with a tag
//! naming the `(team, participant set)` group, and returns a handle. Headers
//! of one group are matched in order, like the in-process rendezvous. Once
//! every header of the oldest operation of a group has arrived (tested
//! without blocking at every later start and wait of the group), the
//! participants run the in-process cross-rank checks on them; only when they
//! agree is the data moved, with the nonblocking MPI operation the kind
//! implies on the group's cached communicator (`MPI_Iallreduce`,
//! `MPI_Ireduce_scatter_block`, `MPI_Iallgather(v)`, `MPI_Ialltoall`,
//! `MPI_Ibcast`, `MPI_Isend`/`MPI_Irecv`, and `MPI_Ialltoallv` of exactly the
//! elements each rank's new block takes from each other rank for the two
//! redistribution copies). So a mismatched call is reported on every
//! participant instead of corrupting memory or hanging, and `_bprt_wait`
//! gives up after the timeout naming the ranks whose headers are missing.
//!
//! Communicators: one per `(team, participants in call order)`, so the
//! communicator rank is the participant position (the order reductions,
//! gathers and scatters use); the whole world in rank order is an
//! `MPI_Comm_dup`, any other list an `MPI_Comm_create_group`. Reductions:
//! `sum`/`prod` of `f32`, `f64` and the integers use MPI's own ops; `max`/
//! `min` of floats (NaN propagation), `f16`, `bf16` and `i1` use user ops
//! that call the in-process reduction, so both runtimes agree element by
//! element.

pub mod ffi;

use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use self::ffi::{Api, Comm, Datatype, Request};
use super::collective::{agree, axis_split, check};
use super::contribution::{BlockLayout, Contribution, Deposit, OpIdentity, OpKind, StartFailure};
use super::dtype::{reduce_into, ElementType, ReduceOp};
use super::error::{RtError, RtResult};
use super::memref::{shape_numel, StridedView};
use super::redistribute::{permute_sources, reshape_sources};

/// Words (`i64`) in a header.
const HEADER_WORDS: usize = 512;
/// Most words of an op's name a header carries (256 bytes).
const OP_NAME_WORDS: usize = 32;
const MAGIC: i64 = 0x4250_5254;
/// Tag of the point-to-point data of `send_recv` (plus the team).
const P2P_TAG_BASE: i64 = 1;

static WORLD: OnceLock<MpiWorld> = OnceLock::new();

/// Whether an MPI launcher started this process.
#[must_use]
pub fn under_launcher() -> bool {
    ["PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// The process's MPI world, once [`init`] succeeded.
pub fn active() -> Option<&'static MpiWorld> {
    WORLD.get()
}

/// Starts MPI (`MPI_Init_thread`) and makes every entry point of this
/// process use it. Idempotent.
///
/// # Errors
/// MPICH cannot be loaded or initialized.
pub fn init(timeout: Duration) -> RtResult<&'static MpiWorld> {
    if let Some(world) = WORLD.get() {
        world.set_timeout(timeout);
        return Ok(world);
    }
    let world = MpiWorld::start(timeout)?;
    Ok(WORLD.get_or_init(|| world))
}

/// `(team, sorted members)`: the key headers are matched on.
type GroupKey = (i64, Vec<usize>);

enum Phase {
    /// Completes at once (a `send_recv` this rank is not part of).
    Noop,
    /// Headers in flight: this rank's sends and one receive per other member
    /// (`_sent` is the buffer the sends read).
    Header { requests: Vec<Request>, _sent: Vec<i64>, received: Vec<Vec<i64>> },
    /// Headers agreed; data in flight.
    Data { requests: Vec<Request>, buffers: Buffers, finish: Finish },
    /// The cross-rank checks failed (on every participant alike).
    Failed(RtError),
}

/// Buffers MPI reads or writes until the operation completes.
#[derive(Default)]
struct Buffers {
    send: Vec<u8>,
    recv: Vec<u8>,
    counts: Vec<Vec<c_int>>,
}

/// How the received bytes become this rank's output.
enum Finish {
    /// Nothing to write.
    Nothing,
    /// The receive buffer is the packed output.
    Packed,
    /// The receive buffer holds `n` blocks of `[outer, size_c, inner]` to
    /// interleave along the axis: `(outer, block bytes per outer index of each member, their offsets)`.
    Interleave { outer: usize, rows: Vec<usize>, offsets: Vec<usize> },
    /// Element `i` of the output is the next element from member
    /// `from[i]`, whose block starts at byte `offsets[from[i]]`.
    Scatter { from: Vec<usize>, offsets: Vec<usize>, es: usize },
}

struct Pending {
    group: GroupKey,
    team: i64,
    contribution: Option<Contribution>,
    output: Option<StridedView>,
    phase: Phase,
}

struct State {
    next_handle: i64,
    pending: HashMap<i64, Pending>,
    /// Handles whose headers are not yet checked, oldest first, per group.
    queues: HashMap<GroupKey, VecDeque<i64>>,
    /// Communicators by `(team, participants in call order)`.
    comms: HashMap<(i64, Vec<usize>), Comm>,
    /// Mesh-axis group sets already split off the world, by `(team, mesh
    /// shape, axes)`.
    axis_splits: std::collections::HashSet<(i64, Vec<i64>, Vec<usize>)>,
    /// Header sends of failed starts, kept alive until they complete.
    orphans: Vec<(Request, Vec<i64>)>,
}

/// One rank of an MPI world.
pub struct MpiWorld {
    api: Api,
    rank: usize,
    size: usize,
    tag_ub: i64,
    header_comm: Comm,
    p2p_comm: Comm,
    /// Contiguous byte types for user reductions, by element type.
    user_types: Vec<(ElementType, Datatype)>,
    /// User reduction ops by [`ReduceOp::code`].
    user_ops: [ffi::Op; 4],
    timeout_ms: AtomicU64,
    state: Mutex<State>,
}

// SAFETY: the raw pointers inside (output views) are only used under the
// state mutex; MPI is called with MPI_THREAD_FUNNELED from the thread that
// runs the program.
unsafe impl Sync for MpiWorld {}
// SAFETY: as above.
unsafe impl Send for MpiWorld {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn to_int(what: &str, n: usize) -> RtResult<c_int> {
    c_int::try_from(n).map_err(|_| RtError::InvalidArgument(format!("{what} of {n} exceeds what one MPI call can move (2^31 - 1)")))
}

macro_rules! user_op {
    ($name:ident, $op:expr) => {
        unsafe extern "C" fn $name(input: *mut c_void, inout: *mut c_void, len: *mut c_int, datatype: *mut Datatype) {
            let result = std::panic::catch_unwind(|| {
                // SAFETY: MPI passes valid pointers for `len` and `datatype`.
                let (len, datatype) = unsafe { (*len, *datatype) };
                let Some(world) = WORLD.get() else { return };
                let Some(&(ty, _)) = world.user_types.iter().find(|(_, t)| *t == datatype) else { return };
                let bytes = usize::try_from(len).unwrap_or(0) * ty.size();
                // SAFETY: MPI passes `len` elements of `datatype` in both buffers.
                let (acc, other) = unsafe {
                    (std::slice::from_raw_parts_mut(inout.cast::<u8>(), bytes), std::slice::from_raw_parts(input.cast::<u8>(), bytes))
                };
                reduce_into(ty, $op, acc, other);
            });
            if result.is_err() {
                std::process::abort();
            }
        }
    };
}
user_op!(user_sum, ReduceOp::Sum);
user_op!(user_max, ReduceOp::Max);
user_op!(user_min, ReduceOp::Min);
user_op!(user_prod, ReduceOp::Prod);

impl MpiWorld {
    fn start(timeout: Duration) -> RtResult<MpiWorld> {
        let api = Api::load().map_err(RtError::Internal)?;
        let fail = |what: &str, code: c_int| RtError::Internal(format!("{what} failed: {}", api.error_text(code)));
        let mut initialized: c_int = 0;
        // SAFETY: plain out-parameters.
        unsafe { (api.initialized)(&mut initialized) };
        if initialized == 0 {
            let mut provided: c_int = 0;
            // SAFETY: MPI accepts null argc/argv.
            let rc = unsafe { (api.init_thread)(std::ptr::null_mut(), std::ptr::null_mut(), ffi::THREAD_FUNNELED, &mut provided) };
            if rc != ffi::SUCCESS {
                return Err(fail("MPI_Init_thread", rc));
            }
        }
        let (mut rank, mut size) = (0, 0);
        // SAFETY: out-parameters; the world communicator exists after init.
        unsafe {
            (api.comm_set_errhandler)(ffi::COMM_WORLD, ffi::ERRORS_RETURN);
            (api.comm_rank)(ffi::COMM_WORLD, &mut rank);
            (api.comm_size)(ffi::COMM_WORLD, &mut size);
        }
        let mut tag_ub_ptr: *mut c_int = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: MPI_TAG_UB's value is a pointer to an int owned by MPI.
        unsafe { (api.comm_get_attr)(ffi::COMM_WORLD, ffi::TAG_UB, (&raw mut tag_ub_ptr).cast(), &mut flag) };
        // SAFETY: with `flag` set, the pointer is valid.
        let tag_ub = if flag != 0 && !tag_ub_ptr.is_null() { i64::from(unsafe { *tag_ub_ptr }) } else { 32767 };
        let dup = |what: &str| -> RtResult<Comm> {
            let mut comm = ffi::COMM_NULL;
            // SAFETY: out-parameter.
            let rc = unsafe { (api.comm_dup)(ffi::COMM_WORLD, &mut comm) };
            if rc != ffi::SUCCESS {
                return Err(fail(what, rc));
            }
            // SAFETY: a valid communicator.
            unsafe { (api.comm_set_errhandler)(comm, ffi::ERRORS_RETURN) };
            Ok(comm)
        };
        let header_comm = dup("MPI_Comm_dup (headers)")?;
        let p2p_comm = dup("MPI_Comm_dup (send_recv)")?;
        let mut user_types = Vec::new();
        for ty in ElementType::ALL {
            let mut datatype = 0;
            // SAFETY: out-parameters.
            unsafe {
                (api.type_contiguous)(ty.size() as c_int, ffi::BYTE, &mut datatype);
                (api.type_commit)(&mut datatype);
            }
            user_types.push((ty, datatype));
        }
        let mut user_ops = [0; 4];
        let functions: [ffi::UserFunction; 4] = [user_sum, user_max, user_min, user_prod];
        for (slot, (op, function)) in
            user_ops.iter_mut().zip([ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod].into_iter().zip(functions))
        {
            debug_assert_eq!(op.code() as usize, slot_index(op));
            // SAFETY: the function has MPI's user function signature; commutative.
            unsafe { (api.op_create)(function, 1, slot) };
        }
        let world = MpiWorld {
            api,
            rank: usize::try_from(rank).unwrap_or(0),
            size: usize::try_from(size).unwrap_or(1).max(1),
            tag_ub,
            header_comm,
            p2p_comm,
            user_types,
            user_ops,
            timeout_ms: AtomicU64::new(duration_ms(timeout)),
            state: Mutex::new(State {
                next_handle: 1,
                pending: HashMap::new(),
                queues: HashMap::new(),
                comms: HashMap::new(),
                axis_splits: std::collections::HashSet::new(),
                orphans: Vec::new(),
            }),
        };
        let mut comms = HashMap::new();
        comms.insert((0, (0..world.size).collect::<Vec<_>>()), world.dup_world()?);
        lock(&world.state).comms = comms;
        Ok(world)
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of processes.
    pub fn nranks(&self) -> usize {
        self.size
    }

    /// The wait timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.load(Ordering::Relaxed))
    }

    /// Changes the wait timeout.
    pub fn set_timeout(&self, timeout: Duration) {
        self.timeout_ms.store(duration_ms(timeout), Ordering::Relaxed);
    }

    /// Synchronizes every process (`MPI_Ibarrier`, tested with the same
    /// backoff as waits, so a process that waits long does not spin).
    pub fn barrier(&self) {
        let mut request = ffi::REQUEST_NULL;
        // SAFETY: a valid communicator and out-parameter.
        if unsafe { (self.api.ibarrier)(self.header_comm, &mut request) } != ffi::SUCCESS {
            return;
        }
        let mut polls = 0u32;
        while matches!(self.test_all(std::slice::from_mut(&mut request)), Ok(false)) {
            backoff(&mut polls);
        }
    }

    /// Every process's `bytes`, at rank 0 in rank order (`None` on the
    /// others): on a communicator of its own, so nothing the program
    /// communicates can match it. Every process must call it.
    ///
    /// # Errors
    /// A failing MPI call, or more than `i32::MAX` bytes from one process.
    pub fn gather_bytes(&self, bytes: &[u8]) -> RtResult<Option<Vec<Vec<u8>>>> {
        let mut comm = self.dup_world()?;
        let result = self.gather_bytes_on(comm, bytes);
        // The duplicate is this call's alone: freed whether or not the
        // gather succeeded (a step may gather many times).
        // SAFETY: a communicator this call created; no request on it is
        // pending once the gather returned.
        let freed = self.mpi("MPI_Comm_free", unsafe { (self.api.comm_free)(&mut comm) });
        let gathered = result?;
        freed?;
        Ok(gathered)
    }

    fn gather_bytes_on(&self, comm: Comm, bytes: &[u8]) -> RtResult<Option<Vec<Vec<u8>>>> {
        let count = |n: usize| c_int::try_from(n).map_err(|_| RtError::InvalidArgument(format!("{n} bytes do not fit one MPI message")));
        let wait = |requests: &mut [Request]| -> RtResult<()> {
            let mut polls = 0u32;
            while !self.test_all(requests)? {
                backoff(&mut polls);
            }
            Ok(())
        };
        let result = if self.rank != 0 {
            let length = [bytes.len() as u64];
            let mut requests = [ffi::REQUEST_NULL; 2];
            // SAFETY: the buffers outlive the requests, which complete below.
            unsafe {
                self.mpi("MPI_Isend", (self.api.isend)(length.as_ptr().cast(), 8, ffi::BYTE, 0, 0, comm, &mut requests[0]))?;
                self.mpi(
                    "MPI_Isend",
                    (self.api.isend)(bytes.as_ptr().cast(), count(bytes.len())?, ffi::BYTE, 0, 1, comm, &mut requests[1]),
                )?;
            }
            wait(&mut requests)?;
            None
        } else {
            let mut all = vec![bytes.to_vec()];
            for peer in 1..self.size {
                let mut length = [0u64];
                let mut request = [ffi::REQUEST_NULL];
                let peer = peer as c_int;
                // SAFETY: the buffer outlives the request, which completes below.
                self.mpi("MPI_Irecv", unsafe {
                    (self.api.irecv)(length.as_mut_ptr().cast(), 8, ffi::BYTE, peer, 0, comm, &mut request[0])
                })?;
                wait(&mut request)?;
                let mut data = vec![0u8; usize::try_from(length[0]).unwrap_or(0)];
                // SAFETY: as above.
                self.mpi("MPI_Irecv", unsafe {
                    (self.api.irecv)(data.as_mut_ptr().cast(), count(data.len())?, ffi::BYTE, peer, 1, comm, &mut request[0])
                })?;
                wait(&mut request)?;
                all.push(data);
            }
            Some(all)
        };
        Ok(result)
    }

    /// Ends every process of the job with `code` (`MPI_Abort`).
    pub fn abort(&self, code: i32) -> ! {
        // SAFETY: a valid communicator.
        unsafe { (self.api.abort)(ffi::COMM_WORLD, code) };
        std::process::exit(code)
    }

    /// Ends MPI (`MPI_Finalize`); no entry point may be called afterwards.
    pub fn finalize(&self) {
        // SAFETY: called once, at the end of the program; the types and
        // ops are not used afterwards.
        unsafe {
            for (_, datatype) in &self.user_types {
                let mut datatype = *datatype;
                (self.api.type_free)(&mut datatype);
            }
            for op in &self.user_ops {
                let mut op = *op;
                (self.api.op_free)(&mut op);
            }
            (self.api.finalize)();
        }
    }

    fn mpi(&self, what: &str, rc: c_int) -> RtResult<()> {
        if rc == ffi::SUCCESS {
            Ok(())
        } else {
            Err(RtError::Internal(format!("{what} failed: {}", self.api.error_text(rc))))
        }
    }

    fn dup_world(&self) -> RtResult<Comm> {
        let mut comm = ffi::COMM_NULL;
        // SAFETY: out-parameter.
        self.mpi("MPI_Comm_dup", unsafe { (self.api.comm_dup)(ffi::COMM_WORLD, &mut comm) })?;
        // SAFETY: a valid communicator.
        unsafe { (self.api.comm_set_errhandler)(comm, ffi::ERRORS_RETURN) };
        Ok(comm)
    }

    /// Creates the communicators of every group along `axes` of a mesh of
    /// `shape` in one `MPI_Comm_split` of the world (colour: the group's
    /// lowest rank), the first time the program names those axes; the
    /// calling rank's (`participants`) is then the one its collectives use.
    /// Every rank reaches this at the same point of the program (a
    /// collective named by mesh axes runs on every rank of the mesh), so the
    /// splits match; creating the groups lazily as their headers agree
    /// could leave ranks of overlapping groups waiting on each other in a
    /// cycle.
    pub(crate) fn prepare_axis_group(&self, team: i64, shape: &[i64], axes: &[usize], participants: &[usize]) -> RtResult<()> {
        let mut state = lock(&self.state);
        if !state.axis_splits.insert((team, shape.to_vec(), axes.to_vec())) {
            return Ok(());
        }
        let colour = participants.iter().copied().min().unwrap_or(self.rank) as c_int;
        let mut comm = ffi::COMM_NULL;
        // SAFETY: out-parameter; every rank of the world calls it (see above).
        unsafe {
            self.mpi("MPI_Comm_split", (self.api.comm_split)(ffi::COMM_WORLD, colour, self.rank as c_int, &mut comm))?;
            (self.api.comm_set_errhandler)(comm, ffi::ERRORS_RETURN);
        }
        // A communicator made earlier for the same ranks stays in use.
        state.comms.entry((team, participants.to_vec())).or_insert(comm);
        Ok(())
    }

    /// The communicator of `(team, participants)`, created on first use
    /// (collectively over the participants, who all reach this point once
    /// their headers agree).
    fn comm(&self, state: &mut State, team: i64, participants: &[usize]) -> RtResult<Comm> {
        let key = (team, participants.to_vec());
        if let Some(&comm) = state.comms.get(&key) {
            return Ok(comm);
        }
        let comm = if participants.iter().copied().eq(0..self.size) {
            self.dup_world()?
        } else {
            let ranks: Vec<c_int> = participants.iter().map(|&p| p as c_int).collect();
            let (mut world_group, mut group, mut comm) = (0, 0, ffi::COMM_NULL);
            // SAFETY: out-parameters; `ranks` holds `len` valid world ranks.
            unsafe {
                self.mpi("MPI_Comm_group", (self.api.comm_group)(ffi::COMM_WORLD, &mut world_group))?;
                self.mpi("MPI_Group_incl", (self.api.group_incl)(world_group, ranks.len() as c_int, ranks.as_ptr(), &mut group))?;
                let tag = self.group_tag(&(team, participants.to_vec())) as c_int;
                self.mpi("MPI_Comm_create_group", (self.api.comm_create_group)(ffi::COMM_WORLD, group, tag, &mut comm))?;
                (self.api.group_free)(&mut group);
                (self.api.group_free)(&mut world_group);
                (self.api.comm_set_errhandler)(comm, ffi::ERRORS_RETURN);
            }
            comm
        };
        state.comms.insert(key, comm);
        Ok(comm)
    }

    /// The header tag of a group: `team * 2^size + member mask` when that
    /// fits MPI's tag range (distinct groups, distinct tags), else a hash.
    fn group_tag(&self, group: &GroupKey) -> i64 {
        let mask: i64 = group.1.iter().fold(0, |m, &r| if r < 62 { m | (1 << r) } else { m });
        if self.size < 40 {
            if let Some(tag) = group.0.checked_shl(self.size as u32).and_then(|t| t.checked_add(mask)) {
                if (0..=self.tag_ub).contains(&tag) && group.0 >= 0 {
                    return tag;
                }
            }
        }
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for v in std::iter::once(group.0).chain(group.1.iter().map(|&r| r as i64)) {
            h = (h ^ v as u64).wrapping_mul(0x1000_0000_01b3);
        }
        (h % (self.tag_ub.max(1) as u64)) as i64
    }

    fn new_handle(state: &mut State, pending: Pending) -> i64 {
        let handle = state.next_handle;
        state.next_handle += 1;
        state.pending.insert(handle, pending);
        handle
    }

    /// A handle that completes immediately.
    pub(crate) fn start_noop(&self) -> i64 {
        let mut state = lock(&self.state);
        let pending = Pending { group: (0, vec![]), team: 0, contribution: None, output: None, phase: Phase::Noop };
        Self::new_handle(&mut state, pending)
    }

    /// Starts an exchange (see the module documentation).
    pub(crate) fn start_exchange(
        &self,
        team: i64,
        participants: Vec<usize>,
        build: impl FnOnce(&[usize]) -> RtResult<(Contribution, Option<StridedView>)>,
    ) -> RtResult<i64> {
        let me = self.rank;
        let mut members = participants.clone();
        members.sort_unstable();
        members.dedup();
        if members.len() != participants.len() {
            return Err(RtError::InvalidArgument(format!("participants {participants:?} contain duplicates")));
        }
        if members.is_empty() {
            return Err(RtError::InvalidArgument("empty participant list".into()));
        }
        if let Some(&bad) = members.iter().find(|&&p| p >= self.size) {
            return Err(RtError::InvalidRank { what: "participant".into(), rank: bad as i64, nranks: self.size });
        }
        if members.binary_search(&me).is_err() {
            return Err(RtError::NotParticipant { rank: me, participants });
        }
        let group: GroupKey = (team, members);
        let built = build(&participants);
        let header = match &built {
            Ok((contribution, _)) => encode(contribution),
            Err(e) => Ok(encode_failure(me, &e.to_string())),
        };
        let header = match header {
            Ok(h) => h,
            Err(e) => encode_failure(me, &e.to_string()),
        };
        let tag = self.group_tag(&group) as c_int;
        let mut state = lock(&self.state);
        let mut requests = Vec::new();
        let mut received = Vec::new();
        for &peer in group.1.iter().filter(|&&p| p != me) {
            let mut request = ffi::REQUEST_NULL;
            // SAFETY: `header` lives in the pending op (or the orphans) until the send completes.
            self.mpi("MPI_Isend", unsafe {
                (self.api.isend)(
                    header.as_ptr().cast(),
                    (HEADER_WORDS * 8) as c_int,
                    ffi::BYTE,
                    peer as c_int,
                    tag,
                    self.header_comm,
                    &mut request,
                )
            })?;
            requests.push(request);
        }
        let (contribution, output) = match built {
            Ok(ok) => ok,
            Err(e) => {
                for request in requests {
                    state.orphans.push((request, header.clone()));
                }
                self.reap_orphans(&mut state);
                return Err(e);
            }
        };
        for &peer in group.1.iter().filter(|&&p| p != me) {
            let mut buffer = vec![0i64; HEADER_WORDS];
            let mut request = ffi::REQUEST_NULL;
            // SAFETY: the buffer is moved into the pending op, its heap storage stays put.
            self.mpi("MPI_Irecv", unsafe {
                (self.api.irecv)(
                    buffer.as_mut_ptr().cast(),
                    (HEADER_WORDS * 8) as c_int,
                    ffi::BYTE,
                    peer as c_int,
                    tag,
                    self.header_comm,
                    &mut request,
                )
            })?;
            requests.push(request);
            received.push(buffer);
        }
        let phase = Phase::Header { requests, _sent: header, received };
        let pending = Pending { group: group.clone(), team, contribution: Some(contribution), output, phase };
        let handle = Self::new_handle(&mut state, pending);
        state.queues.entry(group.clone()).or_default().push_back(handle);
        self.progress(&mut state, &group)?;
        Ok(handle)
    }

    fn reap_orphans(&self, state: &mut State) {
        state.orphans.retain_mut(|(request, _)| {
            let mut flag = 0;
            // SAFETY: a request of this process.
            unsafe { (self.api.test)(request, &mut flag, &mut ffi::Status::default()) };
            flag == 0
        });
    }

    /// Tests `requests`; true when all completed.
    fn test_all(&self, requests: &mut [Request]) -> RtResult<bool> {
        let mut all = true;
        for request in requests.iter_mut() {
            if *request == ffi::REQUEST_NULL {
                continue;
            }
            let mut flag = 0;
            // SAFETY: a request of this process (MPI sets it to null when done).
            self.mpi("MPI_Test", unsafe { (self.api.test)(request, &mut flag, &mut ffi::Status::default()) })?;
            all &= flag != 0;
        }
        Ok(all)
    }

    /// Moves the oldest operations of `group` past their headers, in order:
    /// checks them and posts their data.
    fn progress(&self, state: &mut State, group: &GroupKey) -> RtResult<()> {
        self.reap_orphans(state);
        loop {
            let Some(&handle) = state.queues.get(group).and_then(VecDeque::front) else { return Ok(()) };
            let Some(mut pending) = state.pending.remove(&handle) else {
                return Err(RtError::Internal(format!("handle {handle} queued but not pending")));
            };
            let Phase::Header { requests, received, .. } = &mut pending.phase else {
                return Err(RtError::Internal(format!("handle {handle} queued after its headers")));
            };
            let done = match self.test_all(requests) {
                Ok(done) => done,
                Err(e) => {
                    state.pending.insert(handle, pending);
                    return Err(e);
                }
            };
            if !done {
                state.pending.insert(handle, pending);
                return Ok(());
            }
            let received = std::mem::take(received);
            pending.phase = match self.post(state, &mut pending, received) {
                Ok(phase) => phase,
                Err(e) => Phase::Failed(e),
            };
            state.pending.insert(handle, pending);
            if let Some(queue) = state.queues.get_mut(group) {
                queue.pop_front();
                if queue.is_empty() {
                    state.queues.remove(group);
                }
            }
        }
    }

    /// Checks the headers of an operation and posts its data movement.
    fn post(&self, state: &mut State, pending: &mut Pending, received: Vec<Vec<i64>>) -> RtResult<Phase> {
        let mut mine = pending.contribution.take().ok_or_else(|| RtError::Internal("contribution already used".into()))?;
        let mut deposits: Vec<Arc<Deposit>> = Vec::with_capacity(received.len() + 1);
        for words in &received {
            deposits.push(Arc::new(decode(words)?));
        }
        let data = std::mem::take(&mut mine.data);
        mine.target = None;
        deposits.push(Arc::new(Ok(mine)));
        let ordered = agree(&deposits)?;
        check(&ordered)?;
        let first = ordered[0];
        let participants = first.participants.clone();
        let n = participants.len();
        let k = participants.iter().position(|&p| p == self.rank).ok_or_else(|| RtError::Internal("not a participant".into()))?;
        let es = first.dtype.size();
        let dtype = first.dtype;
        let mut buffers = Buffers::default();
        let mut requests = Vec::new();
        let mut request = ffi::REQUEST_NULL;
        let shape = |c: &Contribution| c.in_shape.clone().ok_or_else(|| RtError::Internal(format!("rank {} sent no input shape", c.rank)));
        let finish = match &first.kind {
            OpKind::AllReduce { op } => {
                let comm = self.comm(state, pending.team, &participants)?;
                let (datatype, mpi_op, count) = self.reduction(dtype, *op, data.len() / es)?;
                buffers.recv = zeroed(data.len());
                buffers.send = data;
                // SAFETY: both buffers live in `buffers` until completion.
                self.mpi("MPI_Iallreduce", unsafe {
                    (self.api.iallreduce)(
                        buffers.send.as_ptr().cast(),
                        buffers.recv.as_mut_ptr().cast(),
                        count,
                        datatype,
                        mpi_op,
                        comm,
                        &mut request,
                    )
                })?;
                Finish::Packed
            }
            OpKind::ReduceScatter { op, axis } => {
                let comm = self.comm(state, pending.team, &participants)?;
                let (outer, dim, inner) = axis_split(&shape(first)?, *axis);
                let chunk = dim / n * inner * es;
                buffers.send = Vec::with_capacity(data.len());
                for j in 0..n {
                    for o in 0..outer {
                        let start = o * dim * inner * es + j * chunk;
                        buffers.send.extend_from_slice(&data[start..start + chunk]);
                    }
                }
                let block = outer * chunk;
                let (datatype, mpi_op, count) = self.reduction(dtype, *op, block / es)?;
                buffers.recv = zeroed(block);
                // SAFETY: both buffers live in `buffers` until completion.
                self.mpi("MPI_Ireduce_scatter_block", unsafe {
                    (self.api.ireduce_scatter_block)(
                        buffers.send.as_ptr().cast(),
                        buffers.recv.as_mut_ptr().cast(),
                        count,
                        datatype,
                        mpi_op,
                        comm,
                        &mut request,
                    )
                })?;
                Finish::Packed
            }
            OpKind::AllGather { axis } => {
                let comm = self.comm(state, pending.team, &participants)?;
                let base = shape(first)?;
                let (outer, _, inner) = axis_split(&base, *axis);
                let rows: Vec<usize> = ordered.iter().map(|c| shape(c).map(|s| s[*axis] as usize * inner * es)).collect::<RtResult<_>>()?;
                let blocks: Vec<usize> = rows.iter().map(|r| r * outer).collect();
                let mut offsets = Vec::with_capacity(n);
                let mut total = 0;
                for b in &blocks {
                    offsets.push(total);
                    total += b;
                }
                buffers.recv = zeroed(total);
                buffers.send = data;
                let send_count = to_int("all-gather block bytes", buffers.send.len())?;
                if blocks.iter().all(|&b| b == blocks[0]) {
                    // SAFETY: both buffers live in `buffers` until completion.
                    self.mpi("MPI_Iallgather", unsafe {
                        (self.api.iallgather)(
                            buffers.send.as_ptr().cast(),
                            send_count,
                            ffi::BYTE,
                            buffers.recv.as_mut_ptr().cast(),
                            send_count,
                            ffi::BYTE,
                            comm,
                            &mut request,
                        )
                    })?;
                } else {
                    let counts = blocks.iter().map(|&b| to_int("all-gather block bytes", b)).collect::<RtResult<Vec<_>>>()?;
                    let displs = offsets.iter().map(|&o| to_int("all-gather bytes", o)).collect::<RtResult<Vec<_>>>()?;
                    to_int("all-gather bytes", total)?;
                    buffers.counts = vec![counts, displs];
                    // SAFETY: buffers and count arrays live in `buffers` until completion.
                    self.mpi("MPI_Iallgatherv", unsafe {
                        (self.api.iallgatherv)(
                            buffers.send.as_ptr().cast(),
                            send_count,
                            ffi::BYTE,
                            buffers.recv.as_mut_ptr().cast(),
                            buffers.counts[0].as_ptr(),
                            buffers.counts[1].as_ptr(),
                            ffi::BYTE,
                            comm,
                            &mut request,
                        )
                    })?;
                }
                Finish::Interleave { outer, rows, offsets }
            }
            OpKind::AllToAll { axis } => {
                let comm = self.comm(state, pending.team, &participants)?;
                let (outer, dim, inner) = axis_split(&shape(first)?, *axis);
                let chunk = dim / n * inner * es;
                buffers.send = Vec::with_capacity(data.len());
                for j in 0..n {
                    for o in 0..outer {
                        let start = o * dim * inner * es + j * chunk;
                        buffers.send.extend_from_slice(&data[start..start + chunk]);
                    }
                }
                buffers.recv = zeroed(data.len());
                let count = to_int("all-to-all block bytes", outer * chunk)?;
                // SAFETY: both buffers live in `buffers` until completion.
                self.mpi("MPI_Ialltoall", unsafe {
                    (self.api.ialltoall)(
                        buffers.send.as_ptr().cast(),
                        count,
                        ffi::BYTE,
                        buffers.recv.as_mut_ptr().cast(),
                        count,
                        ffi::BYTE,
                        comm,
                        &mut request,
                    )
                })?;
                Finish::Interleave { outer, rows: vec![chunk; n], offsets: (0..n).map(|c| c * outer * chunk).collect() }
            }
            OpKind::Broadcast { root } => {
                let comm = self.comm(state, pending.team, &participants)?;
                let root_position =
                    participants.iter().position(|p| p == root).ok_or_else(|| RtError::Internal("root is not a participant".into()))?;
                let root_shape = shape(ordered[root_position])?;
                let bytes = shape_numel(&root_shape).unwrap_or(0) * es;
                buffers.recv = if k == root_position { data } else { zeroed(bytes) };
                let count = to_int("broadcast bytes", bytes)?;
                // SAFETY: the buffer lives in `buffers` until completion.
                self.mpi("MPI_Ibcast", unsafe {
                    (self.api.ibcast)(buffers.recv.as_mut_ptr().cast(), count, ffi::BYTE, root_position as c_int, comm, &mut request)
                })?;
                Finish::Packed
            }
            OpKind::SendRecv { source, dest } => {
                let tag = ((P2P_TAG_BASE + pending.team).rem_euclid(self.tag_ub.max(1))) as c_int;
                if source == dest {
                    buffers.recv = data;
                    Finish::Packed
                } else if self.rank == *source {
                    buffers.send = data;
                    let count = to_int("send bytes", buffers.send.len())?;
                    // SAFETY: the buffer lives in `buffers` until completion.
                    self.mpi("MPI_Isend", unsafe {
                        (self.api.isend)(buffers.send.as_ptr().cast(), count, ffi::BYTE, *dest as c_int, tag, self.p2p_comm, &mut request)
                    })?;
                    Finish::Nothing
                } else {
                    let src = ordered.iter().find(|c| c.rank == *source).ok_or_else(|| RtError::Internal("no source header".into()))?;
                    let bytes = shape_numel(&shape(src)?).unwrap_or(0) * es;
                    buffers.recv = zeroed(bytes);
                    let count = to_int("receive bytes", bytes)?;
                    // SAFETY: the buffer lives in `buffers` until completion.
                    self.mpi("MPI_Irecv", unsafe {
                        (self.api.irecv)(
                            buffers.recv.as_mut_ptr().cast(),
                            count,
                            ffi::BYTE,
                            *source as c_int,
                            tag,
                            self.p2p_comm,
                            &mut request,
                        )
                    })?;
                    Finish::Packed
                }
            }
            kind @ (OpKind::CopyReshape | OpKind::CopyPermute { .. }) => {
                let comm = self.comm(state, pending.team, &participants)?;
                let sources = |target: usize| match kind {
                    OpKind::CopyPermute { axes } => permute_sources(&ordered, target, axes),
                    _ => reshape_sources(&ordered, target),
                };
                // What every member's new block takes from this rank, in its order.
                let mut send_counts = vec![0 as c_int; n];
                for (target, count) in send_counts.iter_mut().enumerate() {
                    let from = sources(target)?;
                    let mut taken = 0usize;
                    for &(c, src) in &from {
                        if c == k {
                            buffers.send.extend_from_slice(&data[src * es..(src + 1) * es]);
                            taken += 1;
                        }
                    }
                    *count = to_int("redistribution bytes", taken * es)?;
                }
                let from = sources(k)?;
                let mut recv_counts = vec![0usize; n];
                for &(c, _) in &from {
                    recv_counts[c] += es;
                }
                let mut offsets = Vec::with_capacity(n);
                let mut total = 0usize;
                for c in &recv_counts {
                    offsets.push(total);
                    total += c;
                }
                to_int("redistribution bytes", total.max(buffers.send.len()))?;
                buffers.recv = zeroed(total);
                let send_displs = send_counts
                    .iter()
                    .scan(0 as c_int, |acc, &c| {
                        let d = *acc;
                        *acc += c;
                        Some(d)
                    })
                    .collect();
                buffers.counts = vec![
                    send_counts,
                    send_displs,
                    recv_counts.iter().map(|&c| c as c_int).collect(),
                    offsets.iter().map(|&o| o as c_int).collect(),
                ];
                // SAFETY: buffers and count arrays live in `buffers` until completion.
                self.mpi("MPI_Ialltoallv", unsafe {
                    (self.api.ialltoallv)(
                        buffers.send.as_ptr().cast(),
                        buffers.counts[0].as_ptr(),
                        buffers.counts[1].as_ptr(),
                        ffi::BYTE,
                        buffers.recv.as_mut_ptr().cast(),
                        buffers.counts[2].as_ptr(),
                        buffers.counts[3].as_ptr(),
                        ffi::BYTE,
                        comm,
                        &mut request,
                    )
                })?;
                Finish::Scatter { from: from.into_iter().map(|(c, _)| c).collect(), offsets, es }
            }
        };
        requests.push(request);
        Ok(Phase::Data { requests, buffers, finish })
    }

    /// `(datatype, op, count)` of a reduction over `numel` elements.
    fn reduction(&self, ty: ElementType, op: ReduceOp, numel: usize) -> RtResult<(Datatype, ffi::Op, c_int)> {
        let count = to_int("reduction element count", numel)?;
        let native = match ty {
            ElementType::F32 => Some(ffi::FLOAT),
            ElementType::F64 => Some(ffi::DOUBLE),
            ElementType::I64 | ElementType::Index => Some(ffi::INT64),
            ElementType::I32 => Some(ffi::INT32),
            ElementType::I16 => Some(ffi::INT16),
            ElementType::I8 => Some(ffi::INT8),
            ElementType::F16 | ElementType::BF16 | ElementType::I1 => None,
        };
        let is_float = matches!(ty, ElementType::F32 | ElementType::F64);
        let native_op = match op {
            ReduceOp::Sum => Some(ffi::SUM),
            ReduceOp::Prod => Some(ffi::PROD),
            ReduceOp::Max if !is_float => Some(ffi::MAX),
            ReduceOp::Min if !is_float => Some(ffi::MIN),
            _ => None,
        };
        if let (Some(datatype), Some(mpi_op)) = (native, native_op) {
            return Ok((datatype, mpi_op, count));
        }
        let datatype = self
            .user_types
            .iter()
            .find(|(t, _)| *t == ty)
            .map(|(_, d)| *d)
            .ok_or_else(|| RtError::Internal(format!("no MPI type for {ty}")))?;
        Ok((datatype, self.user_ops[slot_index(op)], count))
    }

    /// Completes the operation of `handle`.
    pub(crate) fn wait(&self, handle: i64) -> RtResult<()> {
        let deadline = Instant::now() + self.timeout();
        let mut state = lock(&self.state);
        let group = match state.pending.get(&handle) {
            Some(p) => p.group.clone(),
            None if handle >= 1 && handle < state.next_handle => return Err(RtError::AlreadyWaited(handle)),
            None => return Err(RtError::UnknownHandle(handle)),
        };
        // Headers first, then the data.
        let mut polls = 0u32;
        loop {
            self.progress(&mut state, &group)?;
            // Every other group's started operations move on too: a rank
            // waiting here may be what another rank waits for, through an
            // operation it started earlier and waits for later (a pipeline
            // stage's send, waited at the end of the step, while it waits
            // for the next stage's gradient). Their errors surface when
            // they are waited for.
            let others: Vec<GroupKey> =
                state.queues.iter().filter(|(g, q)| **g != group && !q.is_empty()).map(|(g, _)| g.clone()).collect();
            for other in &others {
                let _ = self.progress(&mut state, other);
            }
            let pending = state.pending.get_mut(&handle).ok_or_else(|| RtError::Internal("pending op vanished".into()))?;
            match &mut pending.phase {
                Phase::Header { requests, received, .. } => {
                    if Instant::now() >= deadline {
                        let others: Vec<usize> = group.1.iter().copied().filter(|&p| p != self.rank).collect();
                        let recvs = &requests[requests.len() - received.len()..];
                        let missing = others.iter().zip(recvs).filter(|(_, r)| **r != ffi::REQUEST_NULL).map(|(&p, _)| p).collect();
                        state.pending.remove(&handle);
                        return Err(RtError::Timeout { timeout: self.timeout(), missing });
                    }
                }
                Phase::Data { requests, .. } => {
                    if self.test_all(requests)? {
                        break;
                    }
                    if Instant::now() >= deadline {
                        state.pending.remove(&handle);
                        return Err(RtError::Timeout {
                            timeout: self.timeout(),
                            missing: group.1.iter().copied().filter(|&p| p != self.rank).collect(),
                        });
                    }
                }
                Phase::Failed(_) | Phase::Noop => break,
            }
            drop(state);
            backoff(&mut polls);
            state = lock(&self.state);
        }
        let pending = state.pending.remove(&handle).ok_or_else(|| RtError::Internal("pending op vanished".into()))?;
        drop(state);
        match pending.phase {
            Phase::Failed(e) => Err(e),
            Phase::Noop | Phase::Header { .. } => Ok(()),
            Phase::Data { mut buffers, finish, .. } => {
                super::pool::give(std::mem::take(&mut buffers.send));
                let packed = match finish {
                    Finish::Nothing => return Ok(()),
                    Finish::Packed => std::mem::take(&mut buffers.recv),
                    Finish::Interleave { outer, rows, offsets } => {
                        let mut out = super::pool::take(buffers.recv.len());
                        for o in 0..outer {
                            for (row, offset) in rows.iter().zip(&offsets) {
                                out.extend_from_slice(&buffers.recv[offset + o * row..offset + (o + 1) * row]);
                            }
                        }
                        out
                    }
                    Finish::Scatter { from, mut offsets, es } => {
                        let mut out = Vec::with_capacity(from.len() * es);
                        for c in from {
                            out.extend_from_slice(&buffers.recv[offsets[c]..offsets[c] + es]);
                            offsets[c] += es;
                        }
                        out
                    }
                };
                let out =
                    pending.output.ok_or_else(|| RtError::Internal(format!("rank {} has data to receive but no output", self.rank)))?;
                out.write(&packed)
            }
        }
    }
}

/// Between two tests of a pending operation: yield at first (MPI makes
/// progress only inside its calls), then sleep 100 us, so a long wait (a
/// peer that is late, or the timeout coming) does not keep a core busy.
fn backoff(polls: &mut u32) {
    *polls = polls.saturating_add(1);
    if *polls < 2000 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// A zeroed receive buffer of `len` bytes, reusing a kept one when large.
fn zeroed(len: usize) -> Vec<u8> {
    let mut buffer = super::pool::take(len);
    buffer.resize(len, 0);
    buffer
}

const fn slot_index(op: ReduceOp) -> usize {
    op.code() as usize
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn kind_words(kind: &OpKind) -> (i64, Vec<i64>) {
    match kind {
        OpKind::AllReduce { op } => (0, vec![i64::from(op.code())]),
        OpKind::ReduceScatter { op, axis } => (1, vec![i64::from(op.code()), *axis as i64]),
        OpKind::AllGather { axis } => (2, vec![*axis as i64]),
        OpKind::AllToAll { axis } => (3, vec![*axis as i64]),
        OpKind::Broadcast { root } => (4, vec![*root as i64]),
        OpKind::SendRecv { source, dest } => (5, vec![*source as i64, *dest as i64]),
        OpKind::CopyReshape => (6, vec![]),
        OpKind::CopyPermute { axes } => (7, axes.iter().map(|&a| a as i64).collect()),
    }
}

/// The header of a contribution (its data stays behind).
fn encode(c: &Contribution) -> RtResult<Vec<i64>> {
    let mut w = vec![MAGIC, 0, c.rank as i64];
    let (code, params) = kind_words(&c.kind);
    w.push(code);
    let list = |w: &mut Vec<i64>, v: &[i64]| {
        w.push(v.len() as i64);
        w.extend_from_slice(v);
    };
    let optional = |w: &mut Vec<i64>, v: Option<&[i64]>| match v {
        Some(v) => list(w, v),
        None => w.push(-1),
    };
    list(&mut w, &params);
    w.push(ElementType::ALL.iter().position(|&t| t == c.dtype).unwrap_or(0) as i64);
    list(&mut w, &c.participants.iter().map(|&p| p as i64).collect::<Vec<_>>());
    optional(&mut w, c.in_shape.as_deref());
    optional(&mut w, c.out_shape.as_deref());
    match &c.layout {
        Some(l) => {
            w.push(1);
            for v in [&l.g_shape, &l.l_offsets, &l.ng_shape, &l.nl_offsets] {
                list(&mut w, v);
            }
        }
        None => w.push(0),
    }
    // The op's identity: its hash, and as much of its name as fits (for
    // the message when the participants disagree).
    match &c.op {
        Some(op) => {
            w.push(1);
            w.push(op.hash as i64);
            let room = HEADER_WORDS.saturating_sub(w.len() + 1).min(OP_NAME_WORDS) * 8;
            let name = &op.name.as_bytes()[..op.name.len().min(room)];
            w.push(name.len() as i64);
            w.extend(name.chunks(8).map(|chunk| {
                let mut raw = [0u8; 8];
                raw[..chunk.len()].copy_from_slice(chunk);
                i64::from_le_bytes(raw)
            }));
        }
        None => w.push(0),
    }
    if w.len() > HEADER_WORDS {
        return Err(RtError::InvalidArgument(format!(
            "the operation needs a {}-word description (participants, shapes), more than the {HEADER_WORDS} the MPI runtime sends",
            w.len()
        )));
    }
    w.resize(HEADER_WORDS, 0);
    Ok(w)
}

fn encode_failure(rank: usize, message: &str) -> Vec<i64> {
    let mut w = vec![MAGIC, 1, rank as i64];
    let bytes: Vec<u8> = message.bytes().take((HEADER_WORDS - 4) * 8).collect();
    w.push(bytes.len() as i64);
    for chunk in bytes.chunks(8) {
        let mut raw = [0u8; 8];
        raw[..chunk.len()].copy_from_slice(chunk);
        w.push(i64::from_le_bytes(raw));
    }
    w.resize(HEADER_WORDS, 0);
    w
}

struct Reader<'a> {
    words: &'a [i64],
    at: usize,
}

impl Reader<'_> {
    fn next(&mut self) -> RtResult<i64> {
        let w = *self.words.get(self.at).ok_or_else(|| RtError::Internal("truncated MPI header".into()))?;
        self.at += 1;
        Ok(w)
    }
    fn list(&mut self) -> RtResult<Vec<i64>> {
        let n = usize::try_from(self.next()?).map_err(|_| RtError::Internal("malformed MPI header".into()))?;
        (0..n).map(|_| self.next()).collect()
    }
    fn optional(&mut self) -> RtResult<Option<Vec<i64>>> {
        if self.words.get(self.at) == Some(&-1) {
            self.at += 1;
            return Ok(None);
        }
        self.list().map(Some)
    }
    fn usizes(&mut self) -> RtResult<Vec<usize>> {
        self.list()?.into_iter().map(|v| usize::try_from(v).map_err(|_| RtError::Internal("malformed MPI header".into()))).collect()
    }
}

/// A peer's deposit from its header (without data).
fn decode(words: &[i64]) -> RtResult<Deposit> {
    let mut r = Reader { words, at: 0 };
    if r.next()? != MAGIC {
        return Err(RtError::Internal("a header that is not Blueprint's arrived".into()));
    }
    let status = r.next()?;
    let rank = usize::try_from(r.next()?).map_err(|_| RtError::Internal("malformed MPI header".into()))?;
    if status == 1 {
        let len = usize::try_from(r.next()?).unwrap_or(0).min((HEADER_WORDS - 4) * 8);
        let bytes: Vec<u8> = words[4..].iter().flat_map(|w| w.to_le_bytes()).take(len).collect();
        return Ok(Err(StartFailure { rank, message: String::from_utf8_lossy(&bytes).into_owned() }));
    }
    let code = r.next()?;
    let params = r.list()?;
    let p = |i: usize| params.get(i).copied().ok_or_else(|| RtError::Internal("malformed MPI header".into()));
    let op = |i: usize| p(i).and_then(|c| ReduceOp::from_i32(c as i32));
    let u = |i: usize| p(i).map(|v| v as usize);
    let kind = match code {
        0 => OpKind::AllReduce { op: op(0)? },
        1 => OpKind::ReduceScatter { op: op(0)?, axis: u(1)? },
        2 => OpKind::AllGather { axis: u(0)? },
        3 => OpKind::AllToAll { axis: u(0)? },
        4 => OpKind::Broadcast { root: u(0)? },
        5 => OpKind::SendRecv { source: u(0)?, dest: u(1)? },
        6 => OpKind::CopyReshape,
        7 => OpKind::CopyPermute { axes: params.iter().map(|&a| a as usize).collect() },
        other => return Err(RtError::Internal(format!("unknown operation {other} in an MPI header"))),
    };
    let dtype = *ElementType::ALL
        .get(usize::try_from(r.next()?).unwrap_or(usize::MAX))
        .ok_or_else(|| RtError::Internal("malformed MPI header".into()))?;
    let participants = r.usizes()?;
    let in_shape = r.optional()?;
    let out_shape = r.optional()?;
    let layout = if r.next()? == 1 {
        Some(BlockLayout { g_shape: r.list()?, l_offsets: r.list()?, ng_shape: r.list()?, nl_offsets: r.list()? })
    } else {
        None
    };
    let op = if r.next()? == 1 {
        let hash = r.next()? as u64;
        let len = usize::try_from(r.next()?).map_err(|_| RtError::Internal("malformed MPI header".into()))?.min(OP_NAME_WORDS * 8);
        let words = (0..len.div_ceil(8)).map(|_| r.next()).collect::<RtResult<Vec<i64>>>()?;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).take(len).collect();
        Some(OpIdentity { hash, name: String::from_utf8_lossy(&bytes).into() })
    } else {
        None
    };
    Ok(Ok(Contribution { rank, kind, dtype, participants, in_shape, data: Vec::new(), source: None, out_shape, layout, target: None, op }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let c = Contribution {
            rank: 2,
            kind: OpKind::CopyPermute { axes: vec![1, 0] },
            dtype: ElementType::BF16,
            participants: vec![3, 2, 1, 0],
            in_shape: Some(vec![2, 8]),
            data: vec![1, 2, 3],
            source: None,
            out_shape: None,
            layout: Some(BlockLayout { g_shape: vec![8, 8], l_offsets: vec![4, 0], ng_shape: vec![8, 8], nl_offsets: vec![0, 4] }),
            target: None,
            op: Some(OpIdentity::new("'permute' at f.mlir:3:5")),
        };
        let words = encode(&c).expect("fits");
        assert_eq!(words.len(), HEADER_WORDS);
        let back = decode(&words).expect("decodes").expect("a contribution");
        assert_eq!((back.rank, &back.kind, back.dtype, &back.participants), (2, &c.kind, c.dtype, &c.participants));
        assert_eq!((&back.in_shape, &back.out_shape, &back.layout), (&c.in_shape, &c.out_shape, &c.layout));
        assert_eq!(back.op, c.op);
        assert!(back.data.is_empty());
        // A long name travels truncated; its hash whole.
        let mut long = c;
        long.op = Some(OpIdentity::new(&"x".repeat(10_000)));
        long.layout = None;
        let back = decode(&encode(&long).expect("fits")).expect("decodes").expect("a contribution");
        let (sent, got) = (long.op.as_ref().expect("op"), back.op.as_ref().expect("op"));
        assert_eq!((got.hash, got.name.len()), (sent.hash, OP_NAME_WORDS * 8));
        let failed = decode(&encode_failure(1, "shape mismatch: x")).expect("decodes");
        assert!(matches!(failed, Err(StartFailure { rank: 1, ref message }) if message == "shape mismatch: x"));
        assert!(decode(&[7; HEADER_WORDS]).is_err());
    }

    #[test]
    fn a_description_too_large_for_a_header_is_an_error() {
        let c = Contribution {
            rank: 0,
            kind: OpKind::AllReduce { op: ReduceOp::Sum },
            dtype: ElementType::F32,
            participants: (0..600).collect(),
            in_shape: Some(vec![1]),
            data: vec![],
            source: None,
            out_shape: Some(vec![1]),
            layout: None,
            target: None,
            op: None,
        };
        assert!(matches!(encode(&c), Err(RtError::InvalidArgument(_))));
    }
}
