//! Operations through a non-contiguous datatype at the C boundary: the core's staging
//! ([`oxmpi::handle::typed`]) kept per thread, beside this thread's request table (see
//! `p2p.rs`). Sends are packed into a buffer the operation owns before they start; receives
//! land in one and are unpacked when the request completes (every wait/test call, every
//! completion of a persistent request, `MPI_Request_get_status`). Contiguous datatypes never
//! come here: each hook returns after one thread-local `is_empty` check.

use std::cell::RefCell;

use oxmpi::handle::request::RequestId;
pub use oxmpi::handle::typed::Staged;
use oxmpi::handle::typed::StagedOps;
use oxmpi::Status;

thread_local! {
    static OPS: RefCell<StagedOps> = RefCell::new(StagedOps::new());
}

fn with<R>(f: impl FnOnce(&mut StagedOps) -> R) -> R {
    OPS.with(|o| f(&mut o.borrow_mut()))
}

/// Whether no operation of this thread is staged.
#[inline]
pub fn is_empty() -> bool {
    OPS.with(|o| o.borrow().is_empty())
}

/// The ids of a request array before a completion call (empty when nothing is staged).
pub fn snapshot(ids: &[RequestId]) -> Vec<RequestId> {
    OPS.with(|o| o.borrow().snapshot(ids))
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
