//! Sessions (MPI-4): init and finalize, process sets and their groups, session error
//! handlers. A session's errors go to its own error handler (the one given to
//! `MPI_Session_init`, or set later); `MPI_Session_init`'s own to the one it is given.
//!
//! A session buffer (`MPI_Session_attach_buffer`) is not provided: the functions are not
//! declared.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use oxmpi::handle::comm::CommHandle;
use oxmpi::handle::errhandler::ErrhandlerHandle;
use oxmpi::handle::group::GroupHandle;
use oxmpi::handle::info::{self as hi, InfoHandle};
use oxmpi::handle::session::{self as hs, SessionHandle};
use oxmpi::ErrorClass;

use crate::boundary::{
    err, get, handle_of, int_of, mpi_fn, mpi_fn_on_errhandler, put, str_arg, Handle,
};

/// `MPI_Session_errhandler_function` (variadic in C; only the two named arguments are
/// passed).
pub type SessionErrhandlerFunction = unsafe extern "C" fn(*mut Handle, *mut c_int);

fn session(h: Handle) -> SessionHandle {
    SessionHandle::from_int(int_of(h))
}

/// Where the errors of a call on session `h` go.
fn on_session(h: Handle) -> CommHandle {
    session(h).error_key()
}

/// Where errors of `MPI_Session_finalize(s)` go: the session's handler, or
/// `MPI_COMM_WORLD`'s.
fn finalize_errors(s: *mut Handle) -> CommHandle {
    if s.is_null() {
        return CommHandle::WORLD;
    }
    // SAFETY: a non-null `MPI_Session *` argument is valid for a read by
    // MPI_Session_finalize's contract.
    on_session(unsafe { s.read_unaligned() })
}

fn session_handle(s: SessionHandle) -> Handle {
    handle_of(s.to_int())
}

/// The thread level the `thread_level` key of info `h` asks for (`None` without one).
fn requested_level(h: Handle) -> oxmpi::Result<Option<oxmpi::Threading>> {
    let i = InfoHandle::from_int(int_of(h));
    if i == InfoHandle::NULL {
        return Ok(None);
    }
    match hi::info_get(i, "thread_level")? {
        None => Ok(None),
        Some(v) => hs::level_of_name(&v).map(Some).ok_or_else(|| {
            err(
                ErrorClass::InfoValue,
                "Session_init",
                format!("thread_level {v:?} is not one of MPI_THREAD_SINGLE, _FUNNELED, _SERIALIZED, _MULTIPLE"),
            )
        }),
    }
}

/// Checks an info argument that may only be `MPI_INFO_NULL` or a live info object.
fn info_arg(name: &str, h: Handle) -> oxmpi::Result<()> {
    let i = InfoHandle::from_int(int_of(h));
    if i != InfoHandle::NULL {
        hi::info_get_nkeys(i).map_err(|e| err(e.class(), name, e.message()))?;
    }
    Ok(())
}

mpi_fn_on_errhandler! {
    /// `MPI_Session_init`: a new session with error handler `eh` and the hints of `info`
    /// (`thread_level`). Starts MPI in this process if `MPI_Init` has not.
    fn Session_init = MPI_Session_init / PMPI_Session_init(info: Handle, eh: Handle, out: *mut Handle) raised on eh => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Session_init", "session is NULL"));
        }
        let level = requested_level(info)?;
        let s = hs::session_init(level, ErrhandlerHandle::from_int(int_of(eh)))?;
        put("Session_init", out, session_handle(s))
    }
}

mpi_fn! {
    /// `MPI_Session_finalize`: ends `*s` and sets it to `MPI_SESSION_NULL`; the last session
    /// ends MPI in this process (collectively) if the world model is not in use.
    fn Session_finalize = MPI_Session_finalize / PMPI_Session_finalize(s: *mut Handle) on finalize_errors(s) => {
        let mut h = session(get("Session_finalize", s)?);
        hs::session_finalize(&mut h)?;
        put("Session_finalize", s, session_handle(h))
    }

    /// `MPI_Session_get_info`: a new info object with the hints in use (`thread_level`).
    fn Session_get_info = MPI_Session_get_info / PMPI_Session_get_info(s: Handle, out: *mut Handle) on on_session(s) => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Session_get_info", "info_used is NULL"));
        }
        put("Session_get_info", out, handle_of(hs::session_get_info(session(s))?.to_int()))
    }

    /// `MPI_Session_get_num_psets`: how many process sets the session sees
    /// (`mpi://WORLD` and `mpi://SELF`).
    fn Session_get_num_psets = MPI_Session_get_num_psets / PMPI_Session_get_num_psets(s: Handle, info: Handle, n: *mut c_int) on on_session(s) => {
        info_arg("Session_get_num_psets", info)?;
        let k = hs::session_num_psets(session(s))?;
        put("Session_get_num_psets", n, k as c_int)
    }

    /// `MPI_Session_get_nth_pset`: the name of process set `n`. `*len` is the buffer's size;
    /// 0 leaves `name` untouched. Either way `*len` becomes the size the name needs, its
    /// NUL included; a shorter buffer gets the name truncated, NUL-terminated.
    fn Session_get_nth_pset = MPI_Session_get_nth_pset / PMPI_Session_get_nth_pset(s: Handle, info: Handle, n: c_int, len: *mut c_int, name: *mut c_char) on on_session(s) => {
        info_arg("Session_get_nth_pset", info)?;
        let pset = hs::session_nth_pset(session(s), n)?;
        let cap = get("Session_get_nth_pset", len)?;
        if cap < 0 {
            return Err(err(ErrorClass::Arg, "Session_get_nth_pset", format!("pset_len {cap} is negative")));
        }
        if cap > 0 {
            crate::boundary::put_str("Session_get_nth_pset", name, cap as usize, pset)?;
        }
        put("Session_get_nth_pset", len, pset.len() as c_int + 1)
    }

    /// `MPI_Session_get_pset_info`: a new info object describing process set `name`
    /// (`mpi_size`).
    fn Session_get_pset_info = MPI_Session_get_pset_info / PMPI_Session_get_pset_info(s: Handle, name: *const c_char, out: *mut Handle) on on_session(s) => {
        let pset = str_arg("Session_get_pset_info", name)?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Session_get_pset_info", "info is NULL"));
        }
        put("Session_get_pset_info", out, handle_of(hs::session_pset_info(session(s), pset)?.to_int()))
    }

    /// `MPI_Group_from_session_pset`: the group of process set `name`.
    fn Group_from_session_pset = MPI_Group_from_session_pset / PMPI_Group_from_session_pset(s: Handle, name: *const c_char, out: *mut Handle) on on_session(s) => {
        let pset = str_arg("Group_from_session_pset", name)?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Group_from_session_pset", "newgroup is NULL"));
        }
        let g: GroupHandle = hs::group_from_pset(session(s), pset)?;
        put("Group_from_session_pset", out, handle_of(g.to_int()))
    }

    /// `MPI_Session_create_errhandler`: the handler receives the session's handle; callable
    /// before the session (and MPI) exists.
    fn Session_create_errhandler = MPI_Session_create_errhandler / PMPI_Session_create_errhandler(
        f: Option<SessionErrhandlerFunction>,
        out: *mut Handle,
    ) on CommHandle::WORLD => {
        let f = f.ok_or_else(|| err(ErrorClass::Arg, "Session_create_errhandler", "the function is NULL"))?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Session_create_errhandler", "errhandler is NULL"));
        }
        let h = hs::session_create_errhandler(Arc::new(move |key: CommHandle, code: i32| {
            let mut sh = session_handle(SessionHandle::of_error_key(key).unwrap_or(SessionHandle::NULL));
            let mut code = code;
            // SAFETY: FFI call of the user's handler with pointers to two live locals.
            unsafe { f(&mut sh, &mut code) };
        }))?;
        put("Session_create_errhandler", out, handle_of(h.to_int()))
    }

    /// `MPI_Session_set_errhandler`.
    fn Session_set_errhandler = MPI_Session_set_errhandler / PMPI_Session_set_errhandler(s: Handle, h: Handle) on on_session(s) => {
        hs::session_set_errhandler(session(s), ErrhandlerHandle::from_int(int_of(h)))
    }

    /// `MPI_Session_get_errhandler`.
    fn Session_get_errhandler = MPI_Session_get_errhandler / PMPI_Session_get_errhandler(s: Handle, out: *mut Handle) on on_session(s) => {
        put("Session_get_errhandler", out, handle_of(hs::session_get_errhandler(session(s))?.to_int()))
    }
}

/// `MPI_Session_call_errhandler`: invokes the error handler of session `s` with `code`;
/// returns `MPI_SUCCESS` when the handler returns.
///
/// # Safety
/// None beyond the MPI contract (no pointer arguments).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_call_errhandler(s: Handle, code: c_int) -> c_int {
    let check = || hs::check("Session_call_errhandler", session(s));
    crate::boundary::call_errhandler("Session_call_errhandler", on_session(s), check, code)
}

/// `MPI_Session_call_errhandler`.
///
/// # Safety
/// As the `PMPI_` function.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_call_errhandler(s: Handle, code: c_int) -> c_int {
    // SAFETY: same contract, forwarded.
    unsafe { PMPI_Session_call_errhandler(s, code) }
}
