//! Where the entry points send their work: the in-process [`World`] the
//! calling thread is bound to, or the process's MPI world when the runtime
//! was started on MPI ([`super::mpi::init`]).

use std::sync::Arc;

use super::contribution::Contribution;
use super::error::{RtError, RtResult};
use super::memref::StridedView;
use super::mpi::{self, MpiWorld};
use super::world::{current, World};

/// The runtime the calling thread talks to.
pub(crate) enum Backend {
    /// An in-process world and the calling thread's rank in it.
    Local(Arc<World>, usize),
    /// One rank per process on MPI.
    Mpi(&'static MpiWorld),
}

impl Backend {
    /// The MPI world if the process runs on MPI, else the thread's binding.
    pub(crate) fn current() -> RtResult<Backend> {
        if let Some(world) = mpi::active() {
            return Ok(Backend::Mpi(world));
        }
        let (world, rank) = current()?;
        Ok(Backend::Local(world, rank))
    }

    /// The calling rank.
    pub(crate) fn rank(&self) -> usize {
        match self {
            Backend::Local(_, rank) => *rank,
            Backend::Mpi(world) => world.rank(),
        }
    }

    /// Number of ranks.
    pub(crate) fn nranks(&self) -> usize {
        match self {
            Backend::Local(world, _) => world.nranks(),
            Backend::Mpi(world) => world.nranks(),
        }
    }

    /// Checks that `rank` (named `what` in errors) is a rank of the world.
    pub(crate) fn check_rank(&self, what: &str, rank: i64) -> RtResult<usize> {
        let nranks = self.nranks();
        usize::try_from(rank).ok().filter(|&r| r < nranks).ok_or_else(|| RtError::InvalidRank { what: what.to_string(), rank, nranks })
    }

    /// A handle that completes immediately.
    pub(crate) fn start_noop(&self) -> i64 {
        match self {
            Backend::Local(world, rank) => world.start_noop(*rank),
            Backend::Mpi(world) => world.start_noop(),
        }
    }

    /// Starts an exchange among `participants` (world ranks in call order);
    /// see [`World::start_exchange`].
    pub(crate) fn start_exchange(
        &self,
        team: i64,
        participants: Vec<usize>,
        build: impl FnOnce(&[usize]) -> RtResult<(Contribution, Option<StridedView>)>,
    ) -> RtResult<i64> {
        // Counted as built (what this rank starts), for --comm-report.
        let build = |parts: &[usize]| {
            let built = build(parts);
            if let Ok((contribution, _)) = &built {
                super::comm_count::record(contribution);
            }
            built
        };
        match self {
            Backend::Local(world, rank) => world.start_exchange(*rank, team, participants, build),
            Backend::Mpi(world) => world.start_exchange(team, participants, build),
        }
    }

    /// Completes the operation of `handle`.
    pub(crate) fn wait(&self, handle: i64) -> RtResult<()> {
        match self {
            Backend::Local(world, rank) => world.wait(*rank, handle),
            Backend::Mpi(world) => world.wait(handle),
        }
    }

    /// Prepares the calling rank's group along mesh axes for the
    /// collectives that name it (on MPI its communicator; in process, where
    /// exchanges are matched by their participants, nothing).
    pub(crate) fn prepare_axis_group(&self, team: i64, shape: &[i64], axes: &[usize], participants: &[usize]) -> RtResult<()> {
        match self {
            Backend::Local(..) => Ok(()),
            Backend::Mpi(world) => world.prepare_axis_group(team, shape, axes, participants),
        }
    }

    /// Records an error of the calling rank (in-process: in the world).
    pub(crate) fn record_error(&self, error: RtError) {
        if let Backend::Local(world, rank) = self {
            world.record_error(*rank, error);
        }
    }
}
