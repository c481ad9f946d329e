//! Generalized requests (`MPI_Grequest_start`, `MPI_Grequest_complete`): operations a program
//! carries out itself, completed by it and waited for, tested and freed like any request. The
//! core keeps a pending request for each ([`Requests::grequest_start`]); this module keeps its
//! callbacks and runs them where the standard says:
//! - `query_fn` when a wait, test or get-status call reports the request complete (it fills
//!   in the status; an error it returns becomes the request's error);
//! - `free_fn` when the request is freed: completed by a wait or test, or `MPI_Request_free`
//!   (after `MPI_Grequest_complete`, if that comes later);
//! - `cancel_fn` on `MPI_Cancel`, told whether the request has completed.
//!
//! The table is process-wide, so a request started on one thread may be completed and waited
//! for on another. No callback runs with the table locked: they may call MPI.
//!
//! [`Requests::grequest_start`]: oxmpi::handle::request::Requests::grequest_start

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use oxmpi::handle::comm::CommHandle;
use oxmpi::handle::errhandler;
use oxmpi::handle::request::RequestId;
use oxmpi::{ErrorClass, Result, Status};

use crate::boundary::{err, mpi_fn, put, Handle, MpiStatus};
use crate::p2p::{req, req_handle, with_requests};

/// `MPI_Grequest_query_function`.
type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MpiStatus) -> c_int;
/// `MPI_Grequest_free_function`.
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

#[derive(Clone, Copy)]
struct Greq {
    id: u64,
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    /// The program's `extra_state`, handed back to each callback.
    extra: usize,
    /// `MPI_Grequest_complete` was called.
    complete: bool,
    /// `MPI_Request_free` was called before it completed.
    freed: bool,
}

/// Live generalized requests; [`LIVE`] counts them so that every other request's completion
/// costs one load here.
static GREQS: Mutex<Vec<Greq>> = Mutex::new(Vec::new());
static LIVE: AtomicUsize = AtomicUsize::new(0);

fn table() -> std::sync::MutexGuard<'static, Vec<Greq>> {
    // Entries are whole values, so a poisoned lock is usable.
    GREQS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether any generalized request is live.
#[inline]
pub(crate) fn any() -> bool {
    LIVE.load(Ordering::Relaxed) > 0
}

fn find(id: RequestId) -> Option<Greq> {
    table().iter().find(|g| g.id == id.to_raw()).copied()
}

fn remove(id: RequestId) {
    let mut t = table();
    if let Some(i) = t.iter().position(|g| g.id == id.to_raw()) {
        t.swap_remove(i);
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The class of a callback's return code `rc` (a code added by the program counts as its
/// class; one oxmpi cannot name is `MPI_ERR_OTHER`).
fn class_of(rc: c_int) -> ErrorClass {
    let class = errhandler::error_class(rc).unwrap_or(rc);
    ErrorClass::from_code(class).unwrap_or(ErrorClass::Other)
}

/// Runs `free_fn` of `g`; its error, if any.
fn run_free(g: &Greq) -> Option<ErrorClass> {
    // SAFETY: the program's callback with its own state (the MPI contract for free_fn).
    let rc = g.free.map_or(0, |f| unsafe { f(g.extra as *mut c_void) });
    (rc != 0).then(|| class_of(rc))
}

/// Request `id` was reported complete with `st` by a wait, test (`freeing`: the request is
/// freed too) or get-status call: if it is a generalized request, its `query_fn` fills in
/// `st`, and `free_fn` runs when `freeing`. An error either returns becomes `st`'s.
pub(crate) fn reported(id: RequestId, st: &mut Status, freeing: bool) {
    if !any() {
        return;
    }
    let Some(g) = find(id) else {
        return;
    };
    let mut ms = MpiStatus::from_core(st);
    // SAFETY: the program's callback with its own state and a status to fill (the MPI
    // contract for query_fn).
    let rc = g
        .query
        .map_or(0, |q| unsafe { q(g.extra as *mut c_void, &mut ms) });
    st.source = ms.source;
    st.tag = ms.tag;
    st.bytes = ms.bytes();
    st.cancelled = ms.internal[2] != 0;
    if rc != 0 {
        st.error = Some(class_of(rc));
    }
    if freeing {
        remove(id);
        if let Some(e) = run_free(&g) {
            st.error.get_or_insert(e);
        }
    }
}

/// `MPI_Cancel` of `id`: for a generalized request, runs its `cancel_fn` and returns true.
pub(crate) fn cancel(id: RequestId) -> Result<bool> {
    if !any() {
        return Ok(false);
    }
    let Some(g) = find(id) else {
        return Ok(false);
    };
    // SAFETY: the program's callback with its own state (the MPI contract for cancel_fn).
    let rc = g.cancel.map_or(0, |c| unsafe {
        c(g.extra as *mut c_void, g.complete as c_int)
    });
    if rc != 0 {
        return Err(err(
            class_of(rc),
            "Cancel",
            "the generalized request's cancel_fn failed",
        ));
    }
    Ok(true)
}

/// `MPI_Request_free` of `id`: a completed generalized request's `free_fn` runs now, a pending
/// one's when it completes.
pub(crate) fn freed(id: RequestId) -> Result<()> {
    if !any() {
        return Ok(());
    }
    let now = {
        let mut t = table();
        let Some(g) = t.iter_mut().find(|g| g.id == id.to_raw()) else {
            return Ok(());
        };
        g.freed = true;
        g.complete.then_some(*g)
    };
    if let Some(g) = now {
        remove(id);
        if let Some(e) = run_free(&g) {
            return Err(err(
                e,
                "Request_free",
                "the generalized request's free_fn failed",
            ));
        }
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_Grequest_start`.
    fn Grequest_start = MPI_Grequest_start / PMPI_Grequest_start(
        query: Option<QueryFn>, free: Option<FreeFn>, cancel: Option<CancelFn>,
        extra: *mut c_void, out: *mut Handle,
    ) on CommHandle::WORLD => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Grequest_start", "request is NULL"));
        }
        let id = with_requests("Grequest_start", |t| Ok(t.grequest_start()))?;
        table().push(Greq {
            id: id.to_raw(),
            query,
            free,
            cancel,
            extra: extra as usize,
            complete: false,
            freed: false,
        });
        LIVE.fetch_add(1, Ordering::Relaxed);
        put("Grequest_start", out, req_handle(id))
    }

    /// `MPI_Grequest_complete`: the handle is passed by value; a request freed already runs
    /// its `free_fn` now.
    fn Grequest_complete = MPI_Grequest_complete / PMPI_Grequest_complete(r: Handle) on CommHandle::WORLD => {
        let id = req(r)?;
        let Some(g) = find(id) else {
            return Err(err(ErrorClass::Request, "Grequest_complete", "not a generalized request"));
        };
        with_requests("Grequest_complete", |t| t.grequest_complete(id))?;
        // Marked complete and read whether it was freed under one lock: a concurrent
        // `MPI_Request_free` then either sees it complete or leaves `free_fn` to us.
        let freed = {
            let mut t = table();
            t.iter_mut().find(|e| e.id == id.to_raw()).is_some_and(|e| {
                e.complete = true;
                e.freed
            })
        };
        if freed {
            remove(id);
            if let Some(e) = run_free(&g) {
                return Err(err(e, "Grequest_complete", "the generalized request's free_fn failed"));
            }
        }
        Ok(())
    }
}
