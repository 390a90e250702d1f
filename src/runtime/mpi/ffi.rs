//! The part of MPICH's C API the runtime uses, loaded at run time with
//! `dlopen` (so nothing links against MPI and the crate builds without it).
//!
//! MPICH's handles are `int`s and its constants are fixed by its ABI (see
//! `mpi.h`: `MPI_COMM_WORLD` is `0x44000000` and so on); the library is
//! `libmpich.so.12` (also the ABI of Intel MPI and of the MPICH ABI
//! initiative). OpenMPI, whose handles are pointers, is not supported.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

pub type Comm = c_int;
pub type Datatype = c_int;
pub type Op = c_int;
pub type Request = c_int;
pub type Group = c_int;

pub const COMM_WORLD: Comm = 0x4400_0000;
pub const COMM_NULL: Comm = 0x0400_0000;
pub const REQUEST_NULL: Request = 0x2c00_0000;
pub const BYTE: Datatype = 0x4c00_010d;
pub const FLOAT: Datatype = 0x4c00_040a;
pub const DOUBLE: Datatype = 0x4c00_080b;
pub const INT8: Datatype = 0x4c00_0137;
pub const INT16: Datatype = 0x4c00_0238;
pub const INT32: Datatype = 0x4c00_0439;
pub const INT64: Datatype = 0x4c00_083a;
pub const MAX: Op = 0x5800_0001;
pub const MIN: Op = 0x5800_0002;
pub const SUM: Op = 0x5800_0003;
pub const PROD: Op = 0x5800_0004;
pub const TAG_UB: c_int = 0x6440_0001;
pub const ERRORS_RETURN: c_int = 0x5400_0001;
pub const THREAD_FUNNELED: c_int = 1;
pub const SUCCESS: c_int = 0;
pub const MAX_ERROR_STRING: usize = 512;

/// `MPI_Status` of MPICH (5 ints).
#[repr(C)]
#[derive(Default)]
pub struct Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
}

/// `void (*)(void *invec, void *inoutvec, int *len, MPI_Datatype *type)`.
pub type UserFunction = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut Datatype);

const RTLD_NOW: c_int = 2;
const RTLD_GLOBAL: c_int = 0x100;

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

macro_rules! api {
    ($($field:ident = $symbol:literal : fn($($arg:ty),*);)*) => {
        /// The MPI functions, resolved from the library.
        #[allow(non_snake_case)]
        pub struct Api {
            $(pub $field: unsafe extern "C" fn($($arg),*) -> c_int,)*
        }

        impl Api {
            /// Loads MPICH (`BPRT_MPI_LIBRARY`, else `libmpich.so.12`,
            /// else `libmpi.so.12`) and resolves every function.
            pub fn load() -> Result<Api, String> {
                let candidates: Vec<String> = match std::env::var("BPRT_MPI_LIBRARY") {
                    Ok(path) if !path.is_empty() => vec![path],
                    _ => vec!["libmpich.so.12".into(), "libmpi.so.12".into()],
                };
                let mut handle = std::ptr::null_mut();
                let mut errors = Vec::new();
                for name in &candidates {
                    let c_name = CString::new(name.as_str()).map_err(|e| e.to_string())?;
                    // SAFETY: a NUL-terminated name; dlopen has no other precondition.
                    handle = unsafe { dlopen(c_name.as_ptr(), RTLD_NOW | RTLD_GLOBAL) };
                    if !handle.is_null() {
                        break;
                    }
                    // SAFETY: dlerror returns null or a NUL-terminated message.
                    let message = unsafe { dlerror() };
                    let message = if message.is_null() { String::new() } else { unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned() };
                    errors.push(format!("{name}: {message}"));
                }
                if handle.is_null() {
                    return Err(format!("cannot load MPICH ({}); install the 'mpich' package or set BPRT_MPI_LIBRARY", errors.join("; ")));
                }
                Ok(Api {
                    $($field: {
                        // SAFETY: a NUL-terminated literal.
                        let address = unsafe { dlsym(handle, concat!($symbol, "\0").as_ptr().cast()) };
                        if address.is_null() {
                            return Err(format!("the MPI library has no {}", $symbol));
                        }
                        // SAFETY: MPICH's function of this name has this C signature.
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> c_int>(address) }
                    },)*
                })
            }
        }
    };
}

api! {
    init_thread = "MPI_Init_thread": fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int);
    initialized = "MPI_Initialized": fn(*mut c_int);
    finalize = "MPI_Finalize": fn();
    abort = "MPI_Abort": fn(Comm, c_int);
    comm_rank = "MPI_Comm_rank": fn(Comm, *mut c_int);
    comm_size = "MPI_Comm_size": fn(Comm, *mut c_int);
    comm_dup = "MPI_Comm_dup": fn(Comm, *mut Comm);
    comm_free = "MPI_Comm_free": fn(*mut Comm);
    comm_group = "MPI_Comm_group": fn(Comm, *mut Group);
    group_incl = "MPI_Group_incl": fn(Group, c_int, *const c_int, *mut Group);
    group_free = "MPI_Group_free": fn(*mut Group);
    comm_create_group = "MPI_Comm_create_group": fn(Comm, Group, c_int, *mut Comm);
    comm_split = "MPI_Comm_split": fn(Comm, c_int, c_int, *mut Comm);
    comm_set_errhandler = "MPI_Comm_set_errhandler": fn(Comm, c_int);
    comm_get_attr = "MPI_Comm_get_attr": fn(Comm, c_int, *mut c_void, *mut c_int);
    error_string = "MPI_Error_string": fn(c_int, *mut c_char, *mut c_int);
    type_contiguous = "MPI_Type_contiguous": fn(c_int, Datatype, *mut Datatype);
    type_commit = "MPI_Type_commit": fn(*mut Datatype);
    type_free = "MPI_Type_free": fn(*mut Datatype);
    op_free = "MPI_Op_free": fn(*mut Op);
    op_create = "MPI_Op_create": fn(UserFunction, c_int, *mut Op);
    test = "MPI_Test": fn(*mut Request, *mut c_int, *mut Status);
    ibarrier = "MPI_Ibarrier": fn(Comm, *mut Request);
    isend = "MPI_Isend": fn(*const c_void, c_int, Datatype, c_int, c_int, Comm, *mut Request);
    irecv = "MPI_Irecv": fn(*mut c_void, c_int, Datatype, c_int, c_int, Comm, *mut Request);
    iallreduce = "MPI_Iallreduce": fn(*const c_void, *mut c_void, c_int, Datatype, Op, Comm, *mut Request);
    ireduce_scatter_block = "MPI_Ireduce_scatter_block": fn(*const c_void, *mut c_void, c_int, Datatype, Op, Comm, *mut Request);
    iallgather = "MPI_Iallgather": fn(*const c_void, c_int, Datatype, *mut c_void, c_int, Datatype, Comm, *mut Request);
    iallgatherv = "MPI_Iallgatherv": fn(*const c_void, c_int, Datatype, *mut c_void, *const c_int, *const c_int, Datatype, Comm, *mut Request);
    ialltoall = "MPI_Ialltoall": fn(*const c_void, c_int, Datatype, *mut c_void, c_int, Datatype, Comm, *mut Request);
    ialltoallv = "MPI_Ialltoallv": fn(*const c_void, *const c_int, *const c_int, Datatype, *mut c_void, *const c_int, *const c_int, Datatype, Comm, *mut Request);
    ibcast = "MPI_Ibcast": fn(*mut c_void, c_int, Datatype, c_int, Comm, *mut Request);
}

impl Api {
    /// The text of an MPI error code.
    pub fn error_text(&self, code: c_int) -> String {
        let mut buf = [0 as c_char; MAX_ERROR_STRING];
        let mut len: c_int = 0;
        // SAFETY: the buffer holds MPI_MAX_ERROR_STRING characters.
        if unsafe { (self.error_string)(code, buf.as_mut_ptr(), &mut len) } != SUCCESS {
            return format!("MPI error {code}");
        }
        let len = usize::try_from(len).unwrap_or(0).min(MAX_ERROR_STRING);
        String::from_utf8_lossy(&buf[..len].iter().map(|&c| c as u8).collect::<Vec<u8>>()).into_owned()
    }
}
