//! Runtime errors, their C error codes, and the per-thread last error.
//!
//! Every entry point returns a negative [`ErrorCode`] on failure and stores
//! the full error in a thread-local slot, readable from C through
//! `_bprt_last_error` and from Rust through [`last_error`].

use std::cell::RefCell;
use std::time::Duration;

use thiserror::Error;

/// The negative codes returned by the C entry points.
#[repr(i64)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Called from a thread that is not bound to a world rank.
    NotInWorld = -1,
    /// A scalar argument is invalid (reduction op, axis, permutation, ...).
    InvalidArgument = -2,
    /// A memref descriptor is invalid (negative rank, null pointer, ...).
    InvalidMemRef = -3,
    /// A rank (participant, root, source, dest) is outside the world.
    InvalidRank = -4,
    /// The calling rank is not among the participants.
    NotParticipant = -5,
    /// This rank's own shapes are inconsistent (detected at start).
    ShapeMismatch = -6,
    /// The participants' calls do not match (detected at wait, on every rank).
    Mismatch = -7,
    /// Another participant failed to start the matching operation.
    PeerFailed = -8,
    /// `_bprt_wait` on a handle this rank never received.
    UnknownHandle = -9,
    /// `_bprt_wait` on a handle that was already waited on.
    AlreadyWaited = -10,
    /// Not every participant arrived before the wait timeout.
    Timeout = -11,
    /// A bug in the runtime (a caught panic).
    Internal = -12,
    /// The program stopped the rank: a failed `cf.assert`, `abort()` or
    /// `exit()`.
    Stopped = -13,
}

impl ErrorCode {
    /// Every code, in numeric order (-1, -2, ...).
    pub const ALL: [ErrorCode; 13] = [
        ErrorCode::NotInWorld,
        ErrorCode::InvalidArgument,
        ErrorCode::InvalidMemRef,
        ErrorCode::InvalidRank,
        ErrorCode::NotParticipant,
        ErrorCode::ShapeMismatch,
        ErrorCode::Mismatch,
        ErrorCode::PeerFailed,
        ErrorCode::UnknownHandle,
        ErrorCode::AlreadyWaited,
        ErrorCode::Timeout,
        ErrorCode::Internal,
        ErrorCode::Stopped,
    ];

    /// The numeric value returned through the C ABI.
    pub fn value(self) -> i64 {
        self as i64
    }

    /// The code with numeric value `value`, if any.
    pub fn from_value(value: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.value() == value)
    }
}

/// A runtime error.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RtError {
    #[error("not called from a thread bound to a world rank (use World::run or World::bind)")]
    NotInWorld,
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("invalid memref descriptor for {what}: {reason}")]
    InvalidMemRef { what: String, reason: String },
    #[error("{what} {rank} is outside the world of {nranks} ranks")]
    InvalidRank { what: String, rank: i64, nranks: usize },
    #[error("rank {rank} is not among the participants {participants:?}")]
    NotParticipant { rank: usize, participants: Vec<usize> },
    #[error("shape mismatch: {0}")]
    ShapeMismatch(String),
    #[error("participants disagree: {0}")]
    Mismatch(String),
    #[error("participant rank {rank} failed to start the operation: {message}")]
    PeerFailed { rank: usize, message: String },
    #[error("participant rank {rank} stopped: {message}")]
    PeerStopped { rank: usize, message: String },
    #[error("unknown handle {0} (no collective or transfer started on this rank returned it)")]
    UnknownHandle(i64),
    #[error("handle {0} was already waited on")]
    AlreadyWaited(i64),
    #[error("timed out after {} s waiting for participant ranks {missing:?}", timeout.as_secs_f64())]
    Timeout { timeout: Duration, missing: Vec<usize> },
    #[error("internal runtime error: {0}")]
    Internal(String),
    /// What stopped the rank (`assertion failed: ...`, `the program called abort()`).
    #[error("{0}")]
    Stopped(String),
}

impl RtError {
    /// The C error code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            RtError::NotInWorld => ErrorCode::NotInWorld,
            RtError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            RtError::InvalidMemRef { .. } => ErrorCode::InvalidMemRef,
            RtError::InvalidRank { .. } => ErrorCode::InvalidRank,
            RtError::NotParticipant { .. } => ErrorCode::NotParticipant,
            RtError::ShapeMismatch(_) => ErrorCode::ShapeMismatch,
            RtError::Mismatch(_) => ErrorCode::Mismatch,
            RtError::PeerFailed { .. } | RtError::PeerStopped { .. } => ErrorCode::PeerFailed,
            RtError::UnknownHandle(_) => ErrorCode::UnknownHandle,
            RtError::AlreadyWaited(_) => ErrorCode::AlreadyWaited,
            RtError::Timeout { .. } => ErrorCode::Timeout,
            RtError::Internal(_) => ErrorCode::Internal,
            RtError::Stopped(_) => ErrorCode::Stopped,
        }
    }

    pub(crate) fn memref(what: &str, reason: impl Into<String>) -> Self {
        RtError::InvalidMemRef { what: what.to_string(), reason: reason.into() }
    }
}

/// Result type of the runtime.
pub type RtResult<T> = Result<T, RtError>;

thread_local! {
    static LAST_ERROR: RefCell<Option<RtError>> = const { RefCell::new(None) };
}

/// The last error recorded on the calling thread (errno-like: successful
/// calls do not clear it).
pub fn last_error() -> Option<RtError> {
    LAST_ERROR.with(|slot| slot.borrow().clone())
}

/// Forgets the calling thread's last error.
pub fn clear_last_error() {
    LAST_ERROR.with(|slot| *slot.borrow_mut() = None);
}

pub(crate) fn set_last_error(error: RtError) {
    LAST_ERROR.with(|slot| *slot.borrow_mut() = Some(error));
}
