//! Operations through a non-contiguous datatype at the C boundary: the core's staging
//! ([`oxmpi::handle::typed`]) for every request of the process. Sends are packed into a
//! buffer the operation owns before they start; receives land in one and are unpacked when
//! the request completes (every wait/test call, every completion of a persistent request,
//! `MPI_Request_get_status`), on whichever thread completes it.
//!
//! Contiguous datatypes never come here: while nothing is staged each hook returns after
//! one relaxed atomic load, so the byte path takes no lock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use oxmpi::handle::request::RequestId;
pub use oxmpi::handle::typed::Staged;
use oxmpi::handle::typed::StagedOps;
use oxmpi::Status;

/// The staged operations (`None` until the first).
static OPS: Mutex<Option<StagedOps>> = Mutex::new(None);
/// How many operations are staged: the lock-free fast-path check.
static LIVE: AtomicUsize = AtomicUsize::new(0);

fn with<R>(f: impl FnOnce(&mut StagedOps) -> R) -> R {
    let mut g: MutexGuard<'_, Option<StagedOps>> = OPS.lock().unwrap_or_else(|p| p.into_inner());
    let ops = g.get_or_insert_with(StagedOps::new);
    let r = f(ops);
    LIVE.store(ops.len(), Ordering::Relaxed);
    r
}

/// Whether no operation is staged.
#[inline]
pub fn is_empty() -> bool {
    LIVE.load(Ordering::Relaxed) == 0
}

/// The ids of a request array before a completion call (empty when nothing is staged).
pub fn snapshot(ids: &[RequestId]) -> Vec<RequestId> {
    if is_empty() {
        Vec::new()
    } else {
        ids.to_vec()
    }
}

/// Keeps `s` with request `id` until it completes (is freed, if persistent).
pub fn hold(id: RequestId, s: Staged) {
    with(|o| o.hold(id, s));
}

/// Request `id` completed with `st` (`keep`: the request stays, as in `MPI_Request_get_status`).
pub fn completed(id: RequestId, st: &Status, keep: bool) {
    if !is_empty() {
        with(|o| o.completed(id, st, keep));
    }
}

/// Persistent request `id` is about to start.
pub fn starting(id: RequestId) {
    if !is_empty() {
        with(|o| o.starting(id));
    }
}

/// Request `id` was freed; `done` if its operation is no longer in flight.
pub fn freed(id: RequestId, done: bool) {
    if !is_empty() {
        with(|o| o.freed(id, done));
    }
}
