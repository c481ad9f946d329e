//! Error handlers, error classes, codes and strings.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use oxmpi::handle::comm::CommHandle;
use oxmpi::handle::errhandler::{self as he, ErrhandlerHandle};
use oxmpi::ErrorClass;

use crate::boundary::{
    comm, comm_handle, err, get, handle_of, int_of, mpi_fn, put, put_str, str_arg, Handle,
};

/// `MPI_MAX_ERROR_STRING`.
const MAX_ERROR_STRING: usize = 512;

/// `MPI_Comm_errhandler_function` (variadic in C; only the two named arguments are passed).
pub type CommErrhandlerFunction = unsafe extern "C" fn(*mut Handle, *mut c_int);

/// The standard's name of error class `class` (`MPI_ERR_RANK`, ...).
pub fn class_name(class: c_int) -> String {
    const NAMES: [&str; 63] = [
        "MPI_SUCCESS",
        "MPI_ERR_BUFFER",
        "MPI_ERR_COUNT",
        "MPI_ERR_TYPE",
        "MPI_ERR_TAG",
        "MPI_ERR_COMM",
        "MPI_ERR_RANK",
        "MPI_ERR_REQUEST",
        "MPI_ERR_ROOT",
        "MPI_ERR_GROUP",
        "MPI_ERR_OP",
        "MPI_ERR_TOPOLOGY",
        "MPI_ERR_DIMS",
        "MPI_ERR_ARG",
        "MPI_ERR_UNKNOWN",
        "MPI_ERR_TRUNCATE",
        "MPI_ERR_OTHER",
        "MPI_ERR_INTERN",
        "MPI_ERR_PENDING",
        "MPI_ERR_IN_STATUS",
        "MPI_ERR_ACCESS",
        "MPI_ERR_AMODE",
        "MPI_ERR_ASSERT",
        "MPI_ERR_BAD_FILE",
        "MPI_ERR_BASE",
        "MPI_ERR_CONVERSION",
        "MPI_ERR_DISP",
        "MPI_ERR_DUP_DATAREP",
        "MPI_ERR_FILE_EXISTS",
        "MPI_ERR_FILE_IN_USE",
        "MPI_ERR_FILE",
        "MPI_ERR_INFO_KEY",
        "MPI_ERR_INFO_NOKEY",
        "MPI_ERR_INFO_VALUE",
        "MPI_ERR_INFO",
        "MPI_ERR_IO",
        "MPI_ERR_KEYVAL",
        "MPI_ERR_LOCKTYPE",
        "MPI_ERR_NAME",
        "MPI_ERR_NO_MEM",
        "MPI_ERR_NOT_SAME",
        "MPI_ERR_NO_SPACE",
        "MPI_ERR_NO_SUCH_FILE",
        "MPI_ERR_PORT",
        "MPI_ERR_QUOTA",
        "MPI_ERR_READ_ONLY",
        "MPI_ERR_RMA_ATTACH",
        "MPI_ERR_RMA_CONFLICT",
        "MPI_ERR_RMA_RANGE",
        "MPI_ERR_RMA_SHARED",
        "MPI_ERR_RMA_SYNC",
        "MPI_ERR_SERVICE",
        "MPI_ERR_SIZE",
        "MPI_ERR_SPAWN",
        "MPI_ERR_UNSUPPORTED_DATAREP",
        "MPI_ERR_UNSUPPORTED_OPERATION",
        "MPI_ERR_WIN",
        "MPI_ERR_RMA_FLAVOR",
        "MPI_ERR_PROC_ABORTED",
        "MPI_ERR_VALUE_TOO_LARGE",
        "MPI_ERR_SESSION",
        "MPI_ERR_ERRHANDLER",
        "MPI_ERR_ABI",
    ];
    usize::try_from(class)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("error class {class}"), |s| s.to_string())
}

fn errh(h: Handle) -> ErrhandlerHandle {
    ErrhandlerHandle::from_int(int_of(h))
}

mpi_fn! {
    /// `MPI_Comm_create_errhandler`.
    fn Comm_create_errhandler = MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(
        f: Option<CommErrhandlerFunction>,
        out: *mut Handle,
    ) on CommHandle::WORLD => {
        let f = f.ok_or_else(|| err(ErrorClass::Arg, "Comm_create_errhandler", "the function is NULL"))?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Comm_create_errhandler", "errhandler is NULL"));
        }
        let h = he::errhandler_create(Arc::new(move |c: CommHandle, code: i32| {
            let mut ch = comm_handle(c);
            let mut code = code;
            // SAFETY: FFI call of the user's handler with pointers to two live locals.
            unsafe { f(&mut ch, &mut code) };
        }))?;
        put("Comm_create_errhandler", out, handle_of(h.to_int()))
    }

    /// `MPI_Comm_set_errhandler`.
    fn Comm_set_errhandler = MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(c: Handle, h: Handle) on comm(c) => {
        he::comm_set_errhandler(comm(c), errh(h))
    }

    /// `MPI_Comm_get_errhandler`.
    fn Comm_get_errhandler = MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(c: Handle, out: *mut Handle) on comm(c) => {
        put("Comm_get_errhandler", out, handle_of(he::comm_get_errhandler(comm(c))?.to_int()))
    }

    /// `MPI_Errhandler_free`.
    fn Errhandler_free = MPI_Errhandler_free / PMPI_Errhandler_free(h: *mut Handle) on CommHandle::WORLD => {
        let mut e = errh(get("Errhandler_free", h)?);
        he::errhandler_free(&mut e)?;
        put("Errhandler_free", h, handle_of(e.to_int()))
    }

    /// `MPI_Error_class`.
    fn Error_class = MPI_Error_class / PMPI_Error_class(code: c_int, class: *mut c_int) on CommHandle::WORLD => {
        put("Error_class", class, he::error_class(code)?)
    }

    /// `MPI_Error_string`.
    fn Error_string = MPI_Error_string / PMPI_Error_string(code: c_int, s: *mut c_char, len: *mut c_int) on CommHandle::WORLD => {
        let text = he::error_string(code)?;
        let n = put_str("Error_string", s, MAX_ERROR_STRING, &text)?;
        put("Error_string", len, n)
    }

    /// `MPI_Add_error_class`.
    fn Add_error_class = MPI_Add_error_class / PMPI_Add_error_class(class: *mut c_int) on CommHandle::WORLD => {
        put("Add_error_class", class, he::add_error_class()?)
    }

    /// `MPI_Add_error_code`.
    fn Add_error_code = MPI_Add_error_code / PMPI_Add_error_code(class: c_int, code: *mut c_int) on CommHandle::WORLD => {
        put("Add_error_code", code, he::add_error_code(class)?)
    }

    /// `MPI_Add_error_string`.
    fn Add_error_string = MPI_Add_error_string / PMPI_Add_error_string(code: c_int, s: *const c_char) on CommHandle::WORLD => {
        he::add_error_string(code, str_arg("Add_error_string", s)?)
    }

    /// `MPI_Remove_error_class`.
    fn Remove_error_class = MPI_Remove_error_class / PMPI_Remove_error_class(class: c_int) on CommHandle::WORLD => {
        he::remove_error_class(class)
    }

    /// `MPI_Remove_error_code`.
    fn Remove_error_code = MPI_Remove_error_code / PMPI_Remove_error_code(code: c_int) on CommHandle::WORLD => {
        he::remove_error_code(code)
    }

    /// `MPI_Remove_error_string`.
    fn Remove_error_string = MPI_Remove_error_string / PMPI_Remove_error_string(code: c_int) on CommHandle::WORLD => {
        he::remove_error_string(code)
    }
}

/// `MPI_Comm_call_errhandler`: invokes the error handler of `c` with `code`; returns
/// `MPI_SUCCESS` when the handler returns.
///
/// # Safety
/// None beyond the MPI contract (no pointer arguments).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_call_errhandler(c: Handle, code: c_int) -> c_int {
    let on = comm(c);
    let check = || oxmpi::handle::comm::comm_size(on).map(drop);
    crate::boundary::call_errhandler("Comm_call_errhandler", on, check, code)
}

/// `MPI_Comm_call_errhandler`.
///
/// # Safety
/// As the `PMPI_` function.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_call_errhandler(c: Handle, code: c_int) -> c_int {
    // SAFETY: same contract, forwarded.
    unsafe { PMPI_Comm_call_errhandler(c, code) }
}
