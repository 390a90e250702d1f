//! Blueprint runtime: the C ABI that lowered `dist` ops call, implemented
//! with in-process ranks (one thread per logical rank) that really move data,
//! and on MPI (one rank per process, [`mpi`]) once [`mpi::init`] ran in the
//! process; the entry points pick the backend ([`backend`]).
//!
//! - [`abi`]: the `#[no_mangle] extern "C"` `_bprt_*` entry points and
//!   [`symbols`], the table a JIT binds them from;
//! - [`world`]: [`World`], the ranks, matching and the async handles;
//! - [`memref`]: reading MLIR memref descriptors ([`StridedView`]) and
//!   building them in Rust ([`OwnedMemRef`]);
//! - [`dtype`]: element types and reductions;
//! - [`error`]: [`RtError`], the C [`ErrorCode`]s and the last error;
//! - [`mpi`]: the MPI world (MPICH loaded with `dlopen`): headers checked
//!   across ranks, then nonblocking MPI collectives on cached communicators;
//! - `ops` (start calls: local checks, deposit), `collective` (cross-rank
//!   checks and the collectives' data movement at wait), `shared_reduce`
//!   (the in-process all-reduce's), `redistribute` (`copy_reshape` /
//!   `copy_permute`).
//!
//! Semantics in short: a `team` is an opaque integer and every team spans
//! the whole world (it only separates sequence counters); participants,
//! `root`, `source` and `dest` are world ranks; results are folded in
//! participant order, so every rank gets bitwise identical reductions. A
//! start call returns a handle; `_bprt_wait` blocks until every participant
//! has started the matching call (or the world's timeout passes), checks
//! that the calls agree, and writes the output.
//!
//! Buffers (MPI's rule for nonblocking operations): the output belongs to
//! the runtime from the start call until its wait returns, and so may the
//! input, which the caller keeps alive and does not modify until then. The
//! in-process all-reduce relies on it: with a packed row-major input
//! (other than `i1`) it copies nothing at the start, and at the wait the
//! members reduce chunks of every member's input, where it lies, straight
//! into every member's output (`shared_reduce`). The other operations,
//! and MPI, copy the input at the start today; `lower-dist-to-runtime`
//! keeps the input's buffer unmodified until the wait.
//!
//! A harness runs a program on every rank with [`World::run`]; inside it,
//! the entry points see the calling thread's world and rank:
//!
//! ```text
//! let world = World::new(4);
//! let outputs = world.run(|rank| { /* call _bprt_* or JIT-compiled code */ });
//! assert!(world.errors().is_empty());
//! ```

pub mod abi;
pub(crate) mod backend;
mod collective;
pub mod comm_count;
mod contribution;
pub mod dtype;
pub mod error;
pub mod interface;
pub mod kernels;
pub mod memref;
pub mod mesh;
pub mod mpi;
mod op_identity;
mod ops;
mod pool;
mod redistribute;
mod shared_reduce;
pub mod world;

#[cfg(test)]
mod tests;

pub use abi::{set_stop_hook, StopHook};

/// Name and address of every `_bprt_*` entry point, for a JIT to bind
/// (e.g. MLIR `ExecutionEngine::register_symbol`): communication, queries
/// and the kernels.
#[must_use]
pub fn symbols() -> Vec<(&'static str, *mut ())> {
    let mut table = abi::symbols();
    table.extend(kernels::symbols());
    table
}
pub use dtype::{ElementType, ReduceOp};
pub use error::{clear_last_error, last_error, ErrorCode, RtError, RtResult};
pub use memref::{OwnedMemRef, StridedView};
pub use world::{BindGuard, RecordedError, World, DEFAULT_TIMEOUT};
