//! The in-process world: one thread per logical rank, a rendezvous table
//! where ranks deposit their contributions, and per-rank handle tables.
//!
//! Matching: the k-th exchange a rank starts on a given `(team, participant
//! set)` meets the k-th exchange of every other participant on the same
//! key. A start call deposits the rank's contribution into the slot of that
//! key and sequence number and returns a handle; `wait` blocks (on a
//! condition variable, with a timeout) until every participant has
//! deposited, then computes this rank's output. A slot is freed once every
//! participant has consumed it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::resume_unwind;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::collective::{agree, check, complete};
use super::contribution::{Contribution, Deposit, OpKind, StartFailure};
use super::error::{RtError, RtResult};
use super::memref::StridedView;
use super::shared_reduce::{self, Gate};

/// Default wait timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Environment variable overriding the default timeout (milliseconds).
pub const TIMEOUT_ENV: &str = "BPRT_TIMEOUT_MS";

/// An error recorded by an entry point on some rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedError {
    pub rank: usize,
    pub error: RtError,
}

/// Exchanges are matched per team and participant set (sorted world ranks).
type GroupKey = (i64, Vec<usize>);
/// One exchange: its group and the per-rank sequence number in that group.
type SlotKey = (GroupKey, u64);

struct Slot {
    /// Deposits indexed like the group's sorted member list.
    deposits: Vec<Option<Arc<Deposit>>>,
    /// Members that have consumed (or abandoned) the slot.
    consumed: usize,
    /// Where the members of an all-reduce meet once every chunk is written.
    gate: Arc<Gate>,
}

enum Pending {
    /// Completes immediately (a send/recv this rank is not part of).
    Noop,
    Exchange {
        key: SlotKey,
        /// Where this rank's output goes (`None`: it receives nothing).
        output: Option<StridedView>,
    },
}

#[derive(Default)]
struct RankState {
    /// Handles given out so far are `1..next_handle`.
    next_handle: i64,
    pending: HashMap<i64, Pending>,
    seq: HashMap<GroupKey, u64>,
}

/// A set of in-process ranks that exchange data through the runtime.
pub struct World {
    nranks: usize,
    timeout_ms: AtomicU64,
    ranks: Vec<Mutex<RankState>>,
    slots: Mutex<HashMap<SlotKey, Slot>>,
    arrived: Condvar,
    errors: Mutex<Vec<RecordedError>>,
    /// Ranks the program stopped (a failed assert, `abort()`, `exit()`),
    /// with why: a wait for one of them fails at once instead of at the
    /// timeout.
    failed: Mutex<HashMap<usize, String>>,
}

/// Locks a mutex, ignoring poisoning: every critical section leaves the
/// state consistent before anything that could panic.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    static BINDING: RefCell<Option<(Arc<World>, usize)>> = const { RefCell::new(None) };
}

/// Restores the thread's previous binding when dropped.
pub struct BindGuard {
    previous: Option<(Arc<World>, usize)>,
}

impl Drop for BindGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        BINDING.with(|b| *b.borrow_mut() = previous);
    }
}

/// The world and rank the calling thread is bound to.
pub fn current() -> RtResult<(Arc<World>, usize)> {
    BINDING.with(|b| b.borrow().clone()).ok_or(RtError::NotInWorld)
}

impl World {
    /// A world of `nranks` ranks, with the default timeout (or the one in
    /// `BPRT_TIMEOUT_MS`).
    ///
    /// # Panics
    /// If `nranks` is 0.
    pub fn new(nranks: usize) -> Arc<World> {
        let timeout = std::env::var(TIMEOUT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_TIMEOUT);
        Self::with_timeout(nranks, timeout)
    }

    /// A world of `nranks` ranks whose waits time out after `timeout`.
    ///
    /// # Panics
    /// If `nranks` is 0.
    pub fn with_timeout(nranks: usize, timeout: Duration) -> Arc<World> {
        assert!(nranks > 0, "a world needs at least one rank");
        Arc::new(World {
            nranks,
            timeout_ms: AtomicU64::new(duration_ms(timeout)),
            ranks: (0..nranks).map(|_| Mutex::new(RankState { next_handle: 1, ..RankState::default() })).collect(),
            slots: Mutex::new(HashMap::new()),
            arrived: Condvar::new(),
            errors: Mutex::new(Vec::new()),
            failed: Mutex::new(HashMap::new()),
        })
    }

    /// Number of ranks.
    pub fn nranks(&self) -> usize {
        self.nranks
    }

    /// The wait timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.load(Ordering::Relaxed))
    }

    /// Changes the wait timeout (for waits started afterwards).
    pub fn set_timeout(&self, timeout: Duration) {
        self.timeout_ms.store(duration_ms(timeout), Ordering::Relaxed);
    }

    /// Binds the calling thread to `rank` of this world until the guard is
    /// dropped (for harnesses that manage their own threads).
    pub fn bind(self: &Arc<Self>, rank: usize) -> RtResult<BindGuard> {
        if rank >= self.nranks {
            return Err(RtError::InvalidRank { what: "rank".into(), rank: rank as i64, nranks: self.nranks });
        }
        let previous = BINDING.with(|b| b.borrow_mut().replace((Arc::clone(self), rank)));
        Ok(BindGuard { previous })
    }

    /// Runs `f(rank)` on one thread per rank, each bound to this world and
    /// its rank, and returns the results in rank order. A panic in any rank
    /// is propagated after every thread has finished.
    pub fn run<F, R>(self: &Arc<Self>, f: F) -> Vec<R>
    where
        F: Fn(usize) -> R + Sync,
        R: Send,
    {
        std::thread::scope(|scope| {
            let f = &f;
            let threads: Vec<_> = (0..self.nranks)
                .map(|rank| {
                    let world = Arc::clone(self);
                    std::thread::Builder::new()
                        .name(format!("bprt-rank-{rank}"))
                        .spawn_scoped(scope, move || {
                            let _guard = world.bind(rank).expect("rank is in range");
                            f(rank)
                        })
                        .expect("cannot spawn a rank thread")
                })
                .collect();
            let results: Vec<_> = threads.into_iter().map(std::thread::ScopedJoinHandle::join).collect();
            results.into_iter().map(|r| r.unwrap_or_else(|p| resume_unwind(p))).collect()
        })
    }

    /// Every error recorded by an entry point on a rank of this world.
    pub fn errors(&self) -> Vec<RecordedError> {
        lock(&self.errors).clone()
    }

    /// Returns and forgets the recorded errors.
    pub fn take_errors(&self) -> Vec<RecordedError> {
        std::mem::take(&mut *lock(&self.errors))
    }

    pub(crate) fn record_error(&self, rank: usize, error: RtError) {
        lock(&self.errors).push(RecordedError { rank, error });
    }

    /// Marks `rank` as stopped (it will start and wait on nothing more):
    /// waits for it fail at once with `message`.
    pub fn fail_rank(&self, rank: usize, message: &str) {
        lock(&self.failed).insert(rank, message.to_string());
        // Under the slots' lock, so no waiter misses the news between its
        // check and its sleep.
        let _slots = lock(&self.slots);
        self.arrived.notify_all();
    }

    /// Number of exchanges not yet consumed by every participant.
    pub fn open_exchanges(&self) -> usize {
        lock(&self.slots).len()
    }

    fn new_handle(state: &mut RankState, pending: Pending) -> i64 {
        let handle = state.next_handle;
        state.next_handle += 1;
        state.pending.insert(handle, pending);
        handle
    }

    /// A handle that completes immediately.
    pub(crate) fn start_noop(&self, me: usize) -> i64 {
        Self::new_handle(&mut lock(&self.ranks[me]), Pending::Noop)
    }

    /// Starts an exchange of rank `me` among `participants` (world ranks in
    /// call order, which must include `me`): assigns the sequence number,
    /// runs `build` to read this rank's contribution and output target, and
    /// deposits it. If `build` fails, the failure is deposited instead (so
    /// the other participants fail fast at their wait) and returned.
    pub(crate) fn start_exchange(
        &self,
        me: usize,
        team: i64,
        participants: Vec<usize>,
        build: impl FnOnce(&[usize]) -> RtResult<(Contribution, Option<StridedView>)>,
    ) -> RtResult<i64> {
        let mut members = participants.clone();
        members.sort_unstable();
        members.dedup();
        if members.len() != participants.len() {
            return Err(RtError::InvalidArgument(format!("participants {participants:?} contain duplicates")));
        }
        if members.is_empty() {
            return Err(RtError::InvalidArgument("empty participant list".into()));
        }
        if let Some(&bad) = members.iter().find(|&&p| p >= self.nranks) {
            return Err(RtError::InvalidRank { what: "participant".into(), rank: bad as i64, nranks: self.nranks });
        }
        let Ok(position) = members.binary_search(&me) else {
            return Err(RtError::NotParticipant { rank: me, participants });
        };
        let group: GroupKey = (team, members);
        let seq = {
            let mut state = lock(&self.ranks[me]);
            let counter = state.seq.entry(group.clone()).or_insert(0);
            *counter += 1;
            *counter - 1
        };
        let n = group.1.len();
        let key: SlotKey = (group, seq);
        let built = build(&participants);
        let (deposit, result) = match built {
            Ok((contribution, output)) => (Ok(contribution), Ok(output)),
            Err(e) => (Err(StartFailure { rank: me, message: e.to_string() }), Err(e)),
        };
        {
            let mut slots = lock(&self.slots);
            let slot = slots.entry(key.clone()).or_insert_with(|| Slot { deposits: vec![None; n], consumed: 0, gate: Arc::default() });
            slot.deposits[position] = Some(Arc::new(deposit));
            if result.is_err() {
                // A failed start never waits: it consumes its share now.
                slot.consumed += 1;
                if slot.consumed == n {
                    slots.remove(&key);
                }
            }
        }
        self.arrived.notify_all();
        let output = result?;
        Ok(Self::new_handle(&mut lock(&self.ranks[me]), Pending::Exchange { key, output }))
    }

    /// Completes the operation of `handle` on rank `me`.
    pub(crate) fn wait(&self, me: usize, handle: i64) -> RtResult<()> {
        let pending = {
            let mut state = lock(&self.ranks[me]);
            match state.pending.remove(&handle) {
                Some(p) => p,
                None if handle >= 1 && handle < state.next_handle => return Err(RtError::AlreadyWaited(handle)),
                None => return Err(RtError::UnknownHandle(handle)),
            }
        };
        let Pending::Exchange { key, output } = pending else {
            return Ok(());
        };
        let (deposits, gate) = self.collect(&key)?;
        if let Some(first) = deposits.first().and_then(|d| d.as_ref().as_ref().ok()) {
            if matches!(first.kind, OpKind::AllReduce { .. }) {
                return self.all_reduce(&deposits, me, &gate);
            }
        }
        if let Some(data) = complete(&deposits, me)? {
            let out = output.ok_or_else(|| RtError::Internal(format!("rank {me} has data to receive but no output")))?;
            out.write(&data)?;
        }
        Ok(())
    }

    /// Blocks until every member of `key`'s group has deposited (or the
    /// timeout passes), consumes this rank's share and returns the deposits.
    fn collect(&self, key: &SlotKey) -> RtResult<(Vec<Arc<Deposit>>, Arc<Gate>)> {
        let timeout = self.timeout();
        let deadline = Instant::now() + timeout;
        let mut slots = lock(&self.slots);
        loop {
            let slot = slots.get_mut(key).ok_or_else(|| RtError::Internal("exchange slot vanished before wait".into()))?;
            let complete = slot.deposits.iter().all(Option::is_some);
            let now = Instant::now();
            let stopped = if complete {
                None
            } else {
                let failed = lock(&self.failed);
                key.0 .1.iter().zip(&slot.deposits).find_map(|(r, d)| d.is_none().then(|| failed.get(r).map(|m| (*r, m.clone()))).flatten())
            };
            if let Some((rank, message)) = stopped {
                slot.consumed += 1;
                if slot.consumed == slot.deposits.len() {
                    slots.remove(key);
                }
                return Err(RtError::PeerStopped { rank, message });
            }
            if complete || now >= deadline {
                slot.consumed += 1;
                let done = slot.consumed == slot.deposits.len();
                let result = if complete {
                    Ok((slot.deposits.iter().flatten().cloned().collect(), Arc::clone(&slot.gate)))
                } else {
                    let missing = key.0 .1.iter().zip(&slot.deposits).filter(|(_, d)| d.is_none()).map(|(&r, _)| r).collect();
                    Err(RtError::Timeout { timeout, missing })
                };
                if done {
                    slots.remove(key);
                }
                return result;
            }
            slots = self.arrived.wait_timeout(slots, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

impl World {
    /// The all-reduce at wait, after every member deposited: the members
    /// reduce chunks of the elements from the inputs where they lie into
    /// every member's output ([`shared_reduce`]).
    fn all_reduce(&self, deposits: &[Arc<Deposit>], me: usize, gate: &Gate) -> RtResult<()> {
        let ordered = agree(deposits)?;
        check(&ordered)?;
        let first = ordered[0];
        let OpKind::AllReduce { op } = first.kind else {
            return Err(RtError::Internal("not an all-reduce".into()));
        };
        if !first.participants.contains(&me) {
            return Err(RtError::Internal(format!("rank {me} is not a participant")));
        }
        shared_reduce::all_reduce(&ordered, op, gate, self.timeout())
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}
