//! Operations through a non-contiguous datatype at the C boundary: the core's staging
//! ([`oxmpi::handle::typed`]) for every request of the process. Sends are packed into a
//! buffer the operation owns before they start; receives land in one and are unpacked when
//! the request completes (every wait/test call, every completion of a persistent request,
//! `MPI_Request_get_status`), on whichever thread completes it.
//!
//! Nonblocking collectives keep their buffers here too ([`keep`]): packed send copies
//! (derived datatypes, the caller's own block of an in-place v-collective), dropped when the
//! request completes, and staged receives, unpacked whole at each completion.
//!
//! Contiguous datatypes never come here: while nothing is staged each hook returns after
//! one relaxed atomic load, so the byte path takes no lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use oxmpi::handle::request::RequestId;
pub use oxmpi::handle::typed::Staged;
use oxmpi::handle::typed::StagedOps;
use oxmpi::Status;

/// The staged operations (`None` until the first).
static OPS: Mutex<Option<StagedOps>> = Mutex::new(None);
/// The buffers of collectives by request id, and those of collectives freed while active
/// (kept for good: the operation may still use them).
static COLL: Mutex<Option<CollTable>> = Mutex::new(None);

/// Live collectives' buffers by request id, and orphans.
type CollTable = (HashMap<u64, Kept>, Vec<Kept>);
/// How many operations are staged: the lock-free fast-path check.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Buffers a collective request owns.
#[derive(Default)]
pub struct Kept {
    /// Copies the operation reads (dropped with it).
    pub sends: Vec<Vec<u8>>,
    /// Receives through a derived datatype, unpacked whole when the request completes.
    pub recvs: Vec<Staged>,
    /// A persistent request keeps its buffers over completions, until freed.
    pub persistent: bool,
}

impl Kept {
    fn is_empty(&self) -> bool {
        self.sends.is_empty() && self.recvs.is_empty()
    }
}

fn with<R>(f: impl FnOnce(&mut StagedOps) -> R) -> R {
    let mut g: MutexGuard<'_, Option<StagedOps>> = OPS.lock().unwrap_or_else(|p| p.into_inner());
    let ops = g.get_or_insert_with(StagedOps::new);
    let r = f(ops);
    LIVE.store(ops.len() + coll_len(), Ordering::Relaxed);
    r
}

fn coll_len() -> usize {
    COLL.lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map_or(0, |c| c.0.len())
}

/// Runs `f` on the collectives' table, then updates the fast-path count.
fn with_coll<R>(f: impl FnOnce(&mut HashMap<u64, Kept>, &mut Vec<Kept>) -> R) -> R {
    let (r, n) = {
        let mut g = COLL.lock().unwrap_or_else(|p| p.into_inner());
        let (live, orphans) = g.get_or_insert_with(Default::default);
        let r = f(live, orphans);
        (r, live.len())
    };
    let ops = OPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map_or(0, |o| o.len());
    LIVE.store(ops + n, Ordering::Relaxed);
    r
}

/// Keeps `k` with collective request `id` until it completes (is freed, if persistent).
pub fn keep(id: RequestId, k: Kept) {
    if !id.is_null() && !k.is_empty() {
        with_coll(|live, _| live.insert(id.to_raw(), k));
    }
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
        with_coll(|live, _| {
            let raw = id.to_raw();
            if let Some(k) = live.get(&raw) {
                if st.error().is_none() {
                    for r in &k.recvs {
                        // SAFETY: the receive buffer stays valid and writable until the
                        // request completes (the MPI contract); the staged bytes are ours.
                        unsafe { r.unpack(u64::MAX) };
                    }
                }
                if !k.persistent && !keep {
                    live.remove(&raw);
                }
            }
        });
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
        with_coll(|live, orphans| {
            if let (Some(k), false) = (live.remove(&id.to_raw()), done) {
                orphans.push(k);
            }
        });
    }
}
