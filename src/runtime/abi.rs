//! The C ABI: `#[unsafe(no_mangle)] extern "C"` entry points called by the lowered
//! `dist` ops.
//!
//! Every unranked memref argument `U` is passed as two C arguments,
//! `rank: i64, desc: *mut c_void` (see [`super::memref`]). Every entry point
//! catches panics, returns a negative [`ErrorCode`](super::error::ErrorCode)
//! on failure, stores the error as the thread's last error and records it in
//! the world of the calling rank.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, OnceLock};

use super::backend::Backend;
use super::dtype::ElementType;
use super::error::{last_error, set_last_error, RtError, RtResult};
use super::memref::StridedView;
use super::ops::{self, Redistribution, Unranked};

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panic: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panic: {s}")
    } else {
        "panic with a non-string payload".to_string()
    }
}

/// What a harness does when an entry point fails: `(rank, op, error)`,
/// where `op` names the failing op (its `id` and location) when the program
/// announced it with `_bprt_op`. A hook that stops the program does not
/// return.
pub type StopHook = Box<dyn Fn(usize, Option<&str>, &RtError) + Send + Sync>;

static STOP_HOOK: OnceLock<StopHook> = OnceLock::new();

/// Installs the process's stop hook (once; later calls are ignored and
/// return false). Without one, a failing entry point only returns its code.
pub fn set_stop_hook(hook: StopHook) -> bool {
    STOP_HOOK.set(hook).is_ok()
}

thread_local! {
    /// The op of every handle the rank was given and has not completed.
    static HANDLE_OPS: RefCell<HashMap<i64, Arc<str>>> = RefCell::new(HashMap::new());
}

/// The name of the op the rank announced last with `_bprt_op`.
fn current_op() -> Option<Arc<str>> {
    super::op_identity::current().map(|op| op.name)
}

/// Reports `error`: last error of the thread, recorded in the world, and
/// handed to the stop hook with the op it belongs to.
fn report(error: RtError, op: Option<Arc<str>>) -> i64 {
    let code = error.code().value();
    let backend = Backend::current();
    if let Ok(backend) = &backend {
        backend.record_error(error.clone());
    }
    set_last_error(error.clone());
    if let (Some(hook), Ok(backend)) = (STOP_HOOK.get(), &backend) {
        hook(backend.rank(), op.as_deref(), &error);
    }
    code
}

/// Runs an entry point's body: no panic crosses the FFI boundary, and
/// errors become negative codes.
pub(crate) fn guard(body: impl FnOnce() -> RtResult<i64>) -> i64 {
    guard_op(body, current_op)
}

/// [`guard`] with the op an error belongs to.
fn guard_op(body: impl FnOnce() -> RtResult<i64>, op: impl FnOnce() -> Option<Arc<str>>) -> i64 {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => report(error, op()),
        Err(payload) => report(RtError::Internal(panic_message(payload.as_ref())), op()),
    }
}

/// Runs a start call: on success the handle remembers the announced op.
fn start(body: impl FnOnce() -> RtResult<i64>) -> i64 {
    let handle = guard(body);
    if handle > 0 {
        if let Some(op) = current_op() {
            HANDLE_OPS.with(|ops| ops.borrow_mut().insert(handle, op));
        }
    }
    handle
}

/// Announces the op whose runtime calls follow (its `id` and location, as
/// UTF-8 bytes in a rank-1 `i8` memref), so errors can name it and the
/// participants of its exchange can check that they run the same op
/// ([`super::op_identity`]). Returns 0.
///
/// # Safety
/// `(rank, desc)` is a valid unranked memref.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _bprt_op(rank: i64, desc: *mut c_void) -> i64 {
    guard(|| {
        // SAFETY: the caller's contract above. The lowering's descriptor
        // (a global, unit stride) is read without building a view: this
        // runs before every start call.
        super::op_identity::announce(&unsafe { memref_bytes(rank, desc, "op") }?);
        Ok(0)
    })
}

/// The bytes of a rank-1 `i8` memref: the lowering's case (a global, unit
/// stride) read straight from the descriptor, anything else through a view.
///
/// # Safety
/// `(rank, desc)` is a valid unranked memref.
unsafe fn memref_bytes(rank: i64, desc: *mut c_void, what: &str) -> RtResult<std::borrow::Cow<'static, [u8]>> {
    if rank == 1 && !desc.is_null() {
        // SAFETY: the caller's contract: a rank-1 descriptor, five words
        // (allocated, aligned, offset, size, stride).
        let [_, aligned, offset, size, stride] = unsafe { ptr::read_unaligned(desc.cast::<[i64; 5]>()) };
        if aligned != 0 && offset >= 0 && size > 0 && stride == 1 {
            // SAFETY: the descriptor addresses `size` bytes from `aligned + offset`,
            // alive as long as the program (a global) or the call (the caller's).
            return Ok(std::borrow::Cow::Borrowed(unsafe {
                std::slice::from_raw_parts((aligned as *const u8).add(offset as usize), size as usize)
            }));
        }
    }
    // SAFETY: the caller's contract.
    let view = unsafe { StridedView::from_unranked(what, rank, desc, 1) }?;
    Ok(std::borrow::Cow::Owned(view.read()))
}

/// Stops the calling rank with `error` through the stop hook (which does
/// not return); without one (no harness, or no world), `fallback` ends the
/// process as the C function would have.
fn stop(error: RtError, fallback: fn() -> !) -> ! {
    let message = error.to_string();
    report(error, current_op());
    // The hook returned, or there is none: no harness stops this rank.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("error: {message}\n").as_bytes());
    fallback()
}

/// `cf.assert` lowered for the runtime (`lower-dist-to-runtime`): returns 0
/// when `cond` is non-zero; otherwise stops the rank, naming it with the
/// assert's message (UTF-8 bytes of a rank-1 `i8` memref, with its
/// location), which a harness prints per rank (the upstream lowering's
/// `printString` + `abort` lost it in a buffer and killed every rank).
///
/// # Safety
/// `(rank, desc)` is a valid unranked memref.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _bprt_assert(cond: i64, rank: i64, desc: *mut c_void) -> i64 {
    if cond != 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let message = match unsafe { memref_bytes(rank, desc, "message") } {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => format!("(unreadable message: {error})"),
    };
    stop(RtError::Stopped(format!("assertion failed: {message}")), std::process::abort)
}

/// `abort()` as the JIT binds it for lowered programs: stops the calling
/// rank by name instead of the whole process.
pub extern "C" fn _bprt_abort() -> ! {
    stop(RtError::Stopped("the program called abort()".into()), std::process::abort)
}

/// `exit(code)` as the JIT binds it for lowered programs: a rank that
/// exits stops the run (exit status 1 on every rank), by name.
pub extern "C" fn _bprt_exit(code: i32) -> ! {
    report(RtError::Stopped(format!("the program called exit({code})")), current_op());
    std::process::exit(code)
}

/// The group of the calling rank along mesh axes: on a mesh of `shape`
/// (row-major over the whole world), the ranks that differ from it only
/// along `axes` (indices into `shape`), written to `out` in increasing
/// order; what a collective named by mesh axes spans. Returns 0, or a
/// negative code (the mesh is not the world, an axis out of range or
/// repeated, `out` not the group's size) after recording the error. The
/// backends cache a group's communicator, so building its list per call is
/// all this costs.
///
/// # Safety
/// Each `(rank, desc)` pair is a valid unranked memref of `i64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _bprt_mesh_group(
    team: i64,
    shape_rank: i64,
    shape: *mut c_void,
    axes_rank: i64,
    axes: *mut c_void,
    out_rank: i64,
    out: *mut c_void,
) -> i64 {
    guard(|| {
        let backend = Backend::current()?;
        // SAFETY: the caller's contract.
        let read = |what, rank, desc| unsafe { super::memref::read_i64s(what, rank, desc) };
        let (shape, axes) = (read("mesh shape", shape_rank, shape.cast_const())?, read("mesh axes", axes_rank, axes.cast_const())?);
        check_mesh_is_world(&shape, backend.nranks())?;
        let mut varying = Vec::with_capacity(axes.len());
        for &axis in &axes {
            let index = usize::try_from(axis).ok().filter(|&a| a < shape.len() && !varying.contains(&a));
            varying.push(index.ok_or_else(|| RtError::InvalidArgument(format!("mesh axes {axes:?} are not distinct axes of {shape:?}")))?);
        }
        let group: Vec<i64> = super::mesh::axis_group(&shape, &varying, backend.rank() as i64).collect();
        let members: Vec<usize> = group.iter().map(|&r| r as usize).collect();
        backend.prepare_axis_group(team, &shape, &varying, &members)?;
        // SAFETY: the caller's contract.
        let view = unsafe { StridedView::from_unranked("group", out_rank, out, 8) }?;
        if view.sizes() != [group.len() as i64] {
            return Err(RtError::InvalidArgument(format!(
                "the group has {} ranks, but its buffer has shape {:?}",
                group.len(),
                view.sizes()
            )));
        }
        let bytes: Vec<u8> = group.iter().flat_map(|r| r.to_ne_bytes()).collect();
        view.write(&bytes)?;
        Ok(0)
    })
}

/// The rank that shares every coordinate with the calling rank but
/// `axis`, where it has `coordinate` (a mesh of `shape`, row-major over the
/// whole world): a transfer along a mesh axis sends from and to such ranks.
/// Returns the rank, or a negative code (the mesh is not the world, the
/// axis or coordinate out of range) after recording the error.
///
/// # Safety
/// `(shape_rank, shape)` is a valid unranked memref of `i64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _bprt_mesh_peer(team: i64, shape_rank: i64, shape: *mut c_void, axis: i64, coordinate: i64) -> i64 {
    let _ = team;
    guard(|| {
        let backend = Backend::current()?;
        // SAFETY: the caller's contract.
        let shape = unsafe { super::memref::read_i64s("mesh shape", shape_rank, shape.cast_const()) }?;
        check_mesh_is_world(&shape, backend.nranks())?;
        let index = usize::try_from(axis).ok().filter(|&a| shape.get(a).is_some_and(|&s| (0..s).contains(&coordinate)));
        let Some(index) = index else {
            return Err(RtError::InvalidArgument(format!("coordinate {coordinate} on axis {axis} is outside the mesh {shape:?}")));
        };
        let mut coords = super::mesh::coordinates(&shape, backend.rank() as i64);
        coords[index] = coordinate;
        Ok(coords.iter().zip(&shape).fold(0, |acc, (c, s)| acc * s + c))
    })
}

/// The mesh of `shape` numbers every rank of a world of `nranks`.
fn check_mesh_is_world(shape: &[i64], nranks: usize) -> RtResult<()> {
    let ranks = shape.iter().try_fold(1i64, |n, &d| if d > 0 { n.checked_mul(d) } else { None });
    if ranks == i64::try_from(nranks).ok() {
        return Ok(());
    }
    Err(RtError::InvalidArgument(format!(
        "the mesh {shape:?} has {} ranks, but the world has {nranks}",
        ranks.map_or_else(|| "too many".to_string(), |n| n.to_string())
    )))
}

/// Number of ranks of the world (every team spans the whole world).
#[unsafe(no_mangle)]
pub extern "C" fn _bprt_nprocs(team: i64) -> i64 {
    let _ = team;
    guard(|| Ok(Backend::current()?.nranks() as i64))
}

/// Rank of the calling thread.
#[unsafe(no_mangle)]
pub extern "C" fn _bprt_prank(team: i64) -> i64 {
    let _ = team;
    guard(|| Ok(Backend::current()?.rank() as i64))
}

/// Completes the operation of `handle`: 0 on success, a negative code on
/// error. Every handle is waited exactly once.
#[unsafe(no_mangle)]
pub extern "C" fn _bprt_wait(handle: i64) -> i64 {
    // A handle's op is forgotten once it completes; a wait on an unknown or
    // finished handle is named by the op the rank announced last.
    let op = || HANDLE_OPS.with(|ops| ops.borrow().get(&handle).cloned()).or_else(current_op);
    let status = guard_op(
        || {
            Backend::current()?.wait(handle)?;
            Ok(0)
        },
        op,
    );
    if status == 0 {
        HANDLE_OPS.with(|ops| ops.borrow_mut().remove(&handle));
    }
    status
}

/// Copies the calling thread's last error message (UTF-8) into `buf`,
/// truncated to `len - 1` bytes and NUL-terminated, and returns the full
/// message length in bytes (0 when there is no error). With a null `buf` or
/// `len <= 0` nothing is written.
///
/// # Safety
/// `buf` must be null or valid for writes of `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _bprt_last_error(buf: *mut u8, len: i64) -> i64 {
    let body = || {
        let message = last_error().map(|e| e.to_string()).unwrap_or_default();
        let bytes = message.as_bytes();
        if !buf.is_null() && len > 0 {
            let n = bytes.len().min(len as usize - 1);
            // SAFETY: the caller guarantees `buf` is valid for `len` bytes,
            // and `n + 1 <= len`.
            unsafe {
                ptr::copy_nonoverlapping(bytes.as_ptr(), buf, n);
                buf.add(n).write(0);
            }
        }
        bytes.len() as i64
    };
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| super::error::ErrorCode::Internal.value())
}

macro_rules! typed_entry_points {
    ($(
        $ty:expr => [$all_reduce:ident, $reduce_scatter:ident, $all_gather:ident,
                     $all_to_all:ident, $broadcast:ident, $send_recv:ident,
                     $copy_reshape:ident, $copy_permute:ident]
    ),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($all_reduce), "(team, participants: U, input: U, output: U, op: i32) -> i64`.")]
            ///
            /// # Safety
            /// Every `(rank, desc)` pair is a valid unranked memref; the output
            /// stays valid until the matching `_bprt_wait`.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "C" fn $all_reduce(
                team: i64,
                p_rank: i64, p_desc: *mut c_void,
                in_rank: i64, in_desc: *mut c_void,
                out_rank: i64, out_desc: *mut c_void,
                op: i32,
            ) -> i64 {
                start(|| {
                    // SAFETY: the caller's contract above.
                    unsafe {
                        ops::all_reduce(
                            $ty, team, Unranked::new(p_rank, p_desc),
                            Unranked::new(in_rank, in_desc), Unranked::new(out_rank, out_desc), op,
                        )
                    }
                })
            }

            #[doc = concat!("`", stringify!($reduce_scatter), "(team, participants: U, input: U, output: U, op: i32, axis: i64) -> i64`.")]
            ///
            /// # Safety
            /// Every `(rank, desc)` pair is a valid unranked memref; the output
            /// stays valid until the matching `_bprt_wait`.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "C" fn $reduce_scatter(
                team: i64,
                p_rank: i64, p_desc: *mut c_void,
                in_rank: i64, in_desc: *mut c_void,
                out_rank: i64, out_desc: *mut c_void,
                op: i32,
                axis: i64,
            ) -> i64 {
                start(|| {
                    // SAFETY: the caller's contract above.
                    unsafe {
                        ops::reduce_scatter(
                            $ty, team, Unranked::new(p_rank, p_desc),
                            Unranked::new(in_rank, in_desc), Unranked::new(out_rank, out_desc),
                            op, axis,
                        )
                    }
                })
            }

            #[doc = concat!("`", stringify!($all_gather), "(team, participants: U, input: U, output: U, axis: i64) -> i64`.")]
            ///
            /// # Safety
            /// Every `(rank, desc)` pair is a valid unranked memref; the output
            /// stays valid until the matching `_bprt_wait`.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "C" fn $all_gather(
                team: i64,
                p_rank: i64, p_desc: *mut c_void,
                in_rank: i64, in_desc: *mut c_void,
                out_rank: i64, out_desc: *mut c_void,
                axis: i64,
            ) -> i64 {
                start(|| {
                    // SAFETY: the caller's contract above.
                    unsafe {
                        ops::all_gather(
                            $ty, team, Unranked::new(p_rank, p_desc),
                            Unranked::new(in_rank, in_desc), Unranked::new(out_rank, out_desc),
                            axis,
                        )
                    }
                })
            }

            #[doc = concat!("`", stringify!($all_to_all), "(team, participants: U, input: U, output: U, axis: i64) -> i64`.")]
            ///
            /// # Safety
            /// Every `(rank, desc)` pair is a valid unranked memref; the output
            /// stays valid until the matching `_bprt_wait`.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "C" fn $all_to_all(
                team: i64,
                p_rank: i64, p_desc: *mut c_void,
                in_rank: i64, in_desc: *mut c_void,
                out_rank: i64, out_desc: *mut c_void,
                axis: i64,
            ) -> i64 {
                start(|| {
                    // SAFETY: the caller's contract above.
                    unsafe {
                        ops::all_to_all(
                            $ty, team, Unranked::new(p_rank, p_desc),
                            Unranked::new(in_rank, in_desc), Unranked::new(out_rank, out_desc),
                            axis,
                        )
                    }
                })
            }

            #[doc = concat!("`", stringify!($broadcast), "(team, participants: U, input: U, output: U, root: i64) -> i64`.")]
            ///
            /// # Safety
            /// Every `(rank, desc)` pair is a valid unranked memref; the output
            /// stays valid until the matching `_bprt_wait`.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "C" fn $broadcast(
                team: i64,
                p_rank: i64, p_desc: *mut c_void,
                in_rank: i64, in_desc: *mut c_void,
                out_rank: i64, out_desc: *mut c_void,
                root: i64,
            ) -> i64 {
                start(|| {
                    // SAFETY: the caller's contract above.
                    unsafe {
                        ops::broadcast(
                            $ty, team, Unranked::new(p_rank, p_desc),
                            Unranked::new(in_rank, in_desc), Unranked::new(out_rank, out_desc),
                            root,
                        )
                    }
                })
            }

            #[doc = concat!("`", stringify!($send_recv), "(team, input: U, output: U, source: i64, dest: i64) -> i64`.")]
            ///
            /// # Safety
            /// Every `(rank, desc)` pair is a valid unranked memref; the output
            /// stays valid until the matching `_bprt_wait`.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $send_recv(
                team: i64,
                in_rank: i64, in_desc: *mut c_void,
                out_rank: i64, out_desc: *mut c_void,
                source: i64,
                dest: i64,
            ) -> i64 {
                start(|| {
                    // SAFETY: the caller's contract above.
                    unsafe {
                        ops::send_recv(
                            $ty, team, Unranked::new(in_rank, in_desc),
                            Unranked::new(out_rank, out_desc), source, dest,
                        )
                    }
                })
            }

            #[doc = concat!("`", stringify!($copy_reshape), "(team, input: U, g_shape: U, l_offsets: U, ng_shape: U, nl_offsets: U, nl_shape: U, output: U) -> i64`.")]
            ///
            /// # Safety
            /// Every `(rank, desc)` pair is a valid unranked memref; the output
            /// stays valid until the matching `_bprt_wait`.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "C" fn $copy_reshape(
                team: i64,
                in_rank: i64, in_desc: *mut c_void,
                gs_rank: i64, gs_desc: *mut c_void,
                lo_rank: i64, lo_desc: *mut c_void,
                ngs_rank: i64, ngs_desc: *mut c_void,
                nlo_rank: i64, nlo_desc: *mut c_void,
                nls_rank: i64, nls_desc: *mut c_void,
                out_rank: i64, out_desc: *mut c_void,
            ) -> i64 {
                start(|| {
                    let args = Redistribution {
                        input: Unranked::new(in_rank, in_desc),
                        g_shape: Unranked::new(gs_rank, gs_desc),
                        l_offsets: Unranked::new(lo_rank, lo_desc),
                        nl_offsets: Unranked::new(nlo_rank, nlo_desc),
                        nl_shape: Unranked::new(nls_rank, nls_desc),
                        output: Unranked::new(out_rank, out_desc),
                    };
                    // SAFETY: the caller's contract above.
                    unsafe { ops::copy_reshape($ty, team, args, Unranked::new(ngs_rank, ngs_desc)) }
                })
            }

            #[doc = concat!("`", stringify!($copy_permute), "(team, input: U, g_shape: U, l_offsets: U, nl_offsets: U, nl_shape: U, axes: U, output: U) -> i64`.")]
            ///
            /// # Safety
            /// Every `(rank, desc)` pair is a valid unranked memref; the output
            /// stays valid until the matching `_bprt_wait`.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "C" fn $copy_permute(
                team: i64,
                in_rank: i64, in_desc: *mut c_void,
                gs_rank: i64, gs_desc: *mut c_void,
                lo_rank: i64, lo_desc: *mut c_void,
                nlo_rank: i64, nlo_desc: *mut c_void,
                nls_rank: i64, nls_desc: *mut c_void,
                ax_rank: i64, ax_desc: *mut c_void,
                out_rank: i64, out_desc: *mut c_void,
            ) -> i64 {
                start(|| {
                    let args = Redistribution {
                        input: Unranked::new(in_rank, in_desc),
                        g_shape: Unranked::new(gs_rank, gs_desc),
                        l_offsets: Unranked::new(lo_rank, lo_desc),
                        nl_offsets: Unranked::new(nlo_rank, nlo_desc),
                        nl_shape: Unranked::new(nls_rank, nls_desc),
                        output: Unranked::new(out_rank, out_desc),
                    };
                    // SAFETY: the caller's contract above.
                    unsafe { ops::copy_permute($ty, team, args, Unranked::new(ax_rank, ax_desc)) }
                })
            }
        )*

        /// Name and address of every typed entry point.
        pub(crate) fn typed_symbols() -> Vec<(&'static str, *mut ())> {
            vec![$(
                (stringify!($all_reduce), $all_reduce as *mut ()),
                (stringify!($reduce_scatter), $reduce_scatter as *mut ()),
                (stringify!($all_gather), $all_gather as *mut ()),
                (stringify!($all_to_all), $all_to_all as *mut ()),
                (stringify!($broadcast), $broadcast as *mut ()),
                (stringify!($send_recv), $send_recv as *mut ()),
                (stringify!($copy_reshape), $copy_reshape as *mut ()),
                (stringify!($copy_permute), $copy_permute as *mut ()),
            )*]
        }
    };
}

typed_entry_points! {
    ElementType::F64 => [_bprt_all_reduce_f64, _bprt_reduce_scatter_f64, _bprt_all_gather_f64,
        _bprt_all_to_all_f64, _bprt_broadcast_f64, _bprt_send_recv_f64,
        _bprt_copy_reshape_f64, _bprt_copy_permute_f64],
    ElementType::F32 => [_bprt_all_reduce_f32, _bprt_reduce_scatter_f32, _bprt_all_gather_f32,
        _bprt_all_to_all_f32, _bprt_broadcast_f32, _bprt_send_recv_f32,
        _bprt_copy_reshape_f32, _bprt_copy_permute_f32],
    ElementType::F16 => [_bprt_all_reduce_f16, _bprt_reduce_scatter_f16, _bprt_all_gather_f16,
        _bprt_all_to_all_f16, _bprt_broadcast_f16, _bprt_send_recv_f16,
        _bprt_copy_reshape_f16, _bprt_copy_permute_f16],
    ElementType::BF16 => [_bprt_all_reduce_bf16, _bprt_reduce_scatter_bf16, _bprt_all_gather_bf16,
        _bprt_all_to_all_bf16, _bprt_broadcast_bf16, _bprt_send_recv_bf16,
        _bprt_copy_reshape_bf16, _bprt_copy_permute_bf16],
    ElementType::I64 => [_bprt_all_reduce_i64, _bprt_reduce_scatter_i64, _bprt_all_gather_i64,
        _bprt_all_to_all_i64, _bprt_broadcast_i64, _bprt_send_recv_i64,
        _bprt_copy_reshape_i64, _bprt_copy_permute_i64],
    ElementType::I32 => [_bprt_all_reduce_i32, _bprt_reduce_scatter_i32, _bprt_all_gather_i32,
        _bprt_all_to_all_i32, _bprt_broadcast_i32, _bprt_send_recv_i32,
        _bprt_copy_reshape_i32, _bprt_copy_permute_i32],
    ElementType::I16 => [_bprt_all_reduce_i16, _bprt_reduce_scatter_i16, _bprt_all_gather_i16,
        _bprt_all_to_all_i16, _bprt_broadcast_i16, _bprt_send_recv_i16,
        _bprt_copy_reshape_i16, _bprt_copy_permute_i16],
    ElementType::I8 => [_bprt_all_reduce_i8, _bprt_reduce_scatter_i8, _bprt_all_gather_i8,
        _bprt_all_to_all_i8, _bprt_broadcast_i8, _bprt_send_recv_i8,
        _bprt_copy_reshape_i8, _bprt_copy_permute_i8],
    ElementType::I1 => [_bprt_all_reduce_i1, _bprt_reduce_scatter_i1, _bprt_all_gather_i1,
        _bprt_all_to_all_i1, _bprt_broadcast_i1, _bprt_send_recv_i1,
        _bprt_copy_reshape_i1, _bprt_copy_permute_i1],
    ElementType::Index => [_bprt_all_reduce_index, _bprt_reduce_scatter_index,
        _bprt_all_gather_index, _bprt_all_to_all_index, _bprt_broadcast_index,
        _bprt_send_recv_index, _bprt_copy_reshape_index, _bprt_copy_permute_index],
}

/// Name and address of every communication and query entry point (the
/// kernels add theirs in [`super::symbols`]).
pub(super) fn symbols() -> Vec<(&'static str, *mut ())> {
    let mut table: Vec<(&'static str, *mut ())> = vec![
        ("_bprt_nprocs", _bprt_nprocs as *mut ()),
        ("_bprt_prank", _bprt_prank as *mut ()),
        ("_bprt_mesh_group", _bprt_mesh_group as *mut ()),
        ("_bprt_mesh_peer", _bprt_mesh_peer as *mut ()),
        ("_bprt_wait", _bprt_wait as *mut ()),
        ("_bprt_last_error", _bprt_last_error as *mut ()),
        ("_bprt_op", _bprt_op as *mut ()),
        ("_bprt_assert", _bprt_assert as *mut ()),
        // The C library's ends of a program, bound by the JIT for lowered
        // code so a rank that calls them is reported by name.
        ("abort", _bprt_abort as *mut ()),
        ("exit", _bprt_exit as *mut ()),
    ];
    table.extend(typed_symbols());
    table
}
