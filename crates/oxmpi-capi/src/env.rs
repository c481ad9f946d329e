//! Environment: init and finalize, thread levels, versions, processor name, time, memory,
//! `MPI_Abort`, `MPI_Abi_get_version`/`MPI_Abi_get_info` and `MPI_Pcontrol`.

use std::ffi::{c_char, c_int, c_void};

use oxmpi::handle::comm::CommHandle;
use oxmpi::handle::{env, info};
use oxmpi::{ErrorClass, Threading};

use crate::boundary::{comm, err, handle_of, mpi_fn, mpi_value_fn, put, put_str, Handle};

/// `MPI_MAX_PROCESSOR_NAME`.
const MAX_PROCESSOR_NAME: usize = 256;
/// `MPI_MAX_LIBRARY_VERSION_STRING`.
const MAX_LIBRARY_VERSION_STRING: usize = 8192;

const THREAD_LEVELS: [(c_int, Threading); 4] = [
    (0, Threading::Single),
    (1024, Threading::Funneled),
    (2048, Threading::Serialized),
    (4096, Threading::Multiple),
];

fn level_value(t: Threading) -> c_int {
    THREAD_LEVELS
        .iter()
        .find(|(_, l)| *l == t)
        .map_or(0, |(v, _)| *v)
}

/// Why the Fortran ABI setters refuse: the standard takes only the first setting.
const FORTRAN_FIXED: &str =
    "the Fortran ABI was set by the Fortran bindings built into this library (gfortran's kinds)";

mpi_fn! {
    /// `MPI_Init`: thread level `MPI_THREAD_SINGLE`; `argc`/`argv` are not needed.
    fn Init = MPI_Init / PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char)
        on CommHandle::WORLD => {
        env::init_thread(Threading::Single).map(drop)
    }

    /// `MPI_Init_thread`: every level is provided as asked.
    fn Init_thread = MPI_Init_thread / PMPI_Init_thread(
        _argc: *mut c_int,
        _argv: *mut *mut *mut c_char,
        required: c_int,
        provided: *mut c_int,
    ) on CommHandle::WORLD => {
        let level = THREAD_LEVELS
            .iter()
            .find(|(v, _)| *v == required)
            .map(|(_, l)| *l)
            .ok_or_else(|| err(ErrorClass::Arg, "Init_thread", format!("{required} is not a thread level")))?;
        if provided.is_null() {
            return Err(err(ErrorClass::Arg, "Init_thread", "provided is NULL"));
        }
        let got = env::init_thread(level)?;
        put("Init_thread", provided, level_value(got))
    }

    /// `MPI_Finalize`.
    fn Finalize = MPI_Finalize / PMPI_Finalize() on CommHandle::WORLD => {
        env::finalize()
    }

    /// `MPI_Initialized`: callable at any time; whether `MPI_Init` was called (a session
    /// alone does not count, MPI-5.0 §11.2.1).
    fn Initialized = MPI_Initialized / PMPI_Initialized(flag: *mut c_int) on CommHandle::WORLD => {
        put("Initialized", flag, env::world_initialized() as c_int)
    }

    /// `MPI_Finalized`: callable at any time; whether `MPI_Finalize` was called (sessions
    /// alone do not count).
    fn Finalized = MPI_Finalized / PMPI_Finalized(flag: *mut c_int) on CommHandle::WORLD => {
        let done = env::world_finalized() || (env::world_initialized() && oxmpi::is_finalized());
        put("Finalized", flag, done as c_int)
    }

    /// `MPI_Query_thread`.
    fn Query_thread = MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) on CommHandle::WORLD => {
        put("Query_thread", provided, level_value(env::query_thread()?))
    }

    /// `MPI_Is_thread_main`.
    fn Is_thread_main = MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) on CommHandle::WORLD => {
        env::query_thread()?;
        put("Is_thread_main", flag, env::is_thread_main() as c_int)
    }

    /// `MPI_Abort`: ends every rank of the job through the launcher.
    fn Abort = MPI_Abort / PMPI_Abort(c: Handle, code: c_int) on comm(c) => {
        let rank = env::world_rank().map_or_else(|| "?".to_string(), |r| r.to_string());
        env::abort(code, &format!("oxmpi: rank {rank}: MPI_Abort called with error code {code}"))
    }

    /// `MPI_Get_version`: MPI 5.0. Callable at any time.
    fn Get_version = MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int)
        on CommHandle::WORLD => {
        put("Get_version", version, 5)?;
        put("Get_version", subversion, 0)
    }

    /// `MPI_Get_library_version`. Callable at any time.
    fn Get_library_version = MPI_Get_library_version / PMPI_Get_library_version(
        version: *mut c_char,
        resultlen: *mut c_int,
    ) on CommHandle::WORLD => {
        let s = concat!("oxmpi ", env!("CARGO_PKG_VERSION"), " (MPI-5.0 standard ABI 1.0)");
        let n = put_str("Get_library_version", version, MAX_LIBRARY_VERSION_STRING, s)?;
        put("Get_library_version", resultlen, n)
    }

    /// `MPI_Get_processor_name`: the host name.
    fn Get_processor_name = MPI_Get_processor_name / PMPI_Get_processor_name(
        name: *mut c_char,
        resultlen: *mut c_int,
    ) on CommHandle::WORLD => {
        let n = put_str("Get_processor_name", name, MAX_PROCESSOR_NAME, &oxmpi::processor_name())?;
        put("Get_processor_name", resultlen, n)
    }

    /// `MPI_Alloc_mem`: memory from the C heap (any memory works with oxmpi's transports).
    fn Alloc_mem = MPI_Alloc_mem / PMPI_Alloc_mem(size: isize, _info: Handle, baseptr: *mut c_void)
        on CommHandle::WORLD => {
        let n = usize::try_from(size)
            .map_err(|_| err(ErrorClass::Arg, "Alloc_mem", format!("size {size} is negative")))?;
        // SAFETY (libc): malloc has no preconditions; a null result is handled below.
        let p = libc::malloc(n.max(1));
        if p.is_null() {
            return Err(err(ErrorClass::NoMem, "Alloc_mem", format!("{n} bytes are not available")));
        }
        put("Alloc_mem", baseptr.cast::<*mut c_void>(), p)
    }

    /// `MPI_Free_mem`.
    fn Free_mem = MPI_Free_mem / PMPI_Free_mem(base: *mut c_void) on CommHandle::WORLD => {
        // SAFETY (libc): `base` came from MPI_Alloc_mem (malloc) or is null, by contract.
        libc::free(base);
        Ok(())
    }

    /// `MPI_Abi_get_version`: standard ABI 1.0. Callable at any time.
    fn Abi_get_version = MPI_Abi_get_version / PMPI_Abi_get_version(
        version: *mut c_int,
        subversion: *mut c_int,
    ) on CommHandle::WORLD => {
        put("Abi_get_version", version, 1)?;
        put("Abi_get_version", subversion, 0)
    }

    /// `MPI_Abi_get_info`: the sizes of `MPI_Aint`, `MPI_Count` and `MPI_Offset`.
    fn Abi_get_info = MPI_Abi_get_info / PMPI_Abi_get_info(out: *mut Handle) on CommHandle::WORLD => {
        let h = info::info_from(&[
            ("mpi_aint_size", "8"),
            ("mpi_count_size", "8"),
            ("mpi_offset_size", "8"),
        ])?;
        put("Abi_get_info", out, handle_of(h.to_int()))
    }

    /// `MPI_Abi_get_fortran_info`: the sizes of the default Fortran types of the bindings
    /// built into this library, and which optional Fortran types it supports (every one).
    fn Abi_get_fortran_info = MPI_Abi_get_fortran_info / PMPI_Abi_get_fortran_info(out: *mut Handle) on CommHandle::WORLD => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Abi_get_fortran_info", "info is NULL"));
        }
        put("Abi_get_fortran_info", out, handle_of(info::fortran_abi_info()?.to_int()))
    }

    /// `MPI_Abi_set_fortran_info`: always `MPI_ERR_ABI`, as the standard has for every call
    /// after the first setting; the Fortran bindings built into this library made that one.
    fn Abi_set_fortran_info = MPI_Abi_set_fortran_info / PMPI_Abi_set_fortran_info(_info: Handle) on CommHandle::WORLD => {
        Err(err(ErrorClass::Abi, "Abi_set_fortran_info", FORTRAN_FIXED))
    }

    /// `MPI_Abi_get_fortran_booleans`: `.TRUE.` and `.FALSE.` of a Fortran `LOGICAL` of
    /// `size` bytes (1 and 0), set by the library's own Fortran bindings.
    fn Abi_get_fortran_booleans = MPI_Abi_get_fortran_booleans / PMPI_Abi_get_fortran_booleans(
        size: c_int,
        logical_true: *mut c_void,
        logical_false: *mut c_void,
        is_set: *mut c_int,
    ) on CommHandle::WORLD => {
        let call = "Abi_get_fortran_booleans";
        let n = usize::try_from(size).unwrap_or(0);
        let (t, f) = oxmpi::datatype::predefined::fortran_booleans(n)
            .ok_or_else(|| err(ErrorClass::Arg, call, format!("no Fortran LOGICAL has {size} bytes")))?;
        if logical_true.is_null() || logical_false.is_null() {
            return Err(err(ErrorClass::Arg, call, "logical_true or logical_false is NULL"));
        }
        // SAFETY: both are non-null and, by the caller's contract, valid for writes of a
        // LOGICAL of `size` (= n, at most 16) bytes; `t` and `f` are 16-byte locals.
        unsafe {
            std::ptr::copy_nonoverlapping(t.as_ptr(), logical_true.cast::<u8>(), n);
            std::ptr::copy_nonoverlapping(f.as_ptr(), logical_false.cast::<u8>(), n);
        }
        put(call, is_set, 1)
    }

    /// `MPI_Abi_set_fortran_booleans`: always `MPI_ERR_ABI`, as `MPI_Abi_set_fortran_info`.
    fn Abi_set_fortran_booleans = MPI_Abi_set_fortran_booleans / PMPI_Abi_set_fortran_booleans(
        _size: c_int,
        _logical_true: *mut c_void,
        _logical_false: *mut c_void,
    ) on CommHandle::WORLD => {
        Err(err(ErrorClass::Abi, "Abi_set_fortran_booleans", FORTRAN_FIXED))
    }
}

// `MPI_Pcontrol` is variadic in C (`int MPI_Pcontrol(const int level, ...)`), and stable Rust
// cannot define C-variadic functions. On the System V x86-64 and AArch64 Linux ABIs the fixed
// argument is passed in the same register either way and the callee ignores the rest, so a
// one-argument definition is what a variadic caller reaches.
mpi_value_fn! {
    /// `MPI_Pcontrol`: profiling control; the library itself has nothing to switch.
    fn MPI_Pcontrol / PMPI_Pcontrol(_level: c_int) -> c_int {
        0
    }
}

mpi_value_fn! {
    /// `MPI_Wtime`: seconds since an arbitrary moment in this process.
    fn MPI_Wtime / PMPI_Wtime() -> f64 {
        oxmpi::time()
    }

    /// `MPI_Wtick`: the resolution of `MPI_Wtime`.
    fn MPI_Wtick / PMPI_Wtick() -> f64 {
        oxmpi::time_resolution()
    }
}
