//! Nonblocking operations: requests, the scope that bounds their buffers, completion of many
//! at once, and persistent requests.
//!
//! Every request borrows its buffer for `'a` and belongs to a [`Scope`]: when the scope ends it
//! completes whatever is still outstanding, so even a leaked request cannot outlive its buffer.
//!
//! # Standard sections
//! MPI-5.0 §3.7 (nonblocking communication), §3.9 (persistent requests).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::error::{Error, ErrorClass, Result};
use crate::p2p::engine::RecvStart;
use crate::p2p::progress::Backoff;
use crate::p2p::request::{ReqId, Status as RawStatus};
use crate::point_to_point::Status;
use crate::runtime::Runtime;

/// Where outstanding nonblocking operations live; see [`scope`].
pub struct Scope<'a> {
    /// The process's runtime, recorded with the first request.
    rt: std::cell::OnceCell<Arc<Runtime>>,
    /// Requests started in the scope. Completed ones are not removed one by one (that would
    /// cost a scan per completion); stale entries are skipped at the end and pruned in bulk.
    outstanding: RefCell<Vec<ReqId>>,
    /// Length at which `outstanding` is next pruned.
    prune_at: std::cell::Cell<usize>,
    _buffers: PhantomData<&'a mut &'a ()>,
}

impl Scope<'_> {
    /// The process's runtime, kept once per scope so that requests need not count references.
    fn runtime(&self, rt: &Arc<Runtime>) -> &Runtime {
        self.rt.get_or_init(|| rt.clone())
    }

    /// Records request `id`, so that the scope waits for it if nobody else does.
    pub(crate) fn register(&self, rt: &Runtime, id: ReqId) {
        let mut v = self.outstanding.borrow_mut();
        if v.len() >= self.prune_at.get() {
            rt.engine.with(|e| v.retain(|r| e.is_live(*r)));
            self.prune_at.set((2 * v.len()).max(1024));
        }
        v.push(id);
    }
}

/// Runs `f` with a scope for nonblocking operations; when `f` returns, every request started
/// in the scope and not yet completed is waited for.
pub fn scope<'a, R>(f: impl FnOnce(&Scope<'a>) -> R) -> R {
    let s = Scope {
        rt: std::cell::OnceCell::new(),
        outstanding: RefCell::new(Vec::new()),
        prune_at: std::cell::Cell::new(1024),
        _buffers: PhantomData,
    };
    let r = f(&s);
    if let Some(rt) = s.rt.get() {
        for id in s.outstanding.take() {
            // Entries of requests already collected (their slot may serve another request
            // now) are skipped: only live ones can still touch a buffer.
            if rt.engine.with(|e| e.is_live(id)) {
                if let Err(e) = wait_raw(rt, id) {
                    eprintln!(
                        "oxmpi: rank {}: request left at scope end failed: {e}",
                        rt.rank
                    );
                }
            }
        }
    }
    r
}

/// A nonblocking operation in flight, borrowing its buffer for `'a`.
#[must_use = "a request must be waited for or tested"]
pub struct Request<'a, 's> {
    rt: &'s Runtime,
    state: ReqState,
    elem: usize,
    /// Ties the request (and the buffer borrow `'a`) to its scope.
    _scope: &'s Scope<'a>,
}

enum ReqState {
    Pending(ReqId),
    Done(RawStatus),
    Collected,
}

impl<'a, 's> Request<'a, 's> {
    pub(crate) fn new(
        rt: &Arc<Runtime>,
        start: RecvStart,
        elem: usize,
        scope: &'s Scope<'a>,
    ) -> Self {
        let rt = scope.runtime(rt);
        let state = match start {
            RecvStart::Done(st) => ReqState::Done(st),
            RecvStart::Pending(id) => {
                scope.register(rt, id);
                ReqState::Pending(id)
            }
        };
        Request {
            rt,
            state,
            elem,
            _scope: scope,
        }
    }

    /// Blocks until the operation completes (`MPI_Wait`).
    pub fn wait(mut self) -> Result<Status> {
        let raw = match std::mem::replace(&mut self.state, ReqState::Collected) {
            ReqState::Pending(id) => {
                let st = wait_raw(self.rt, id);
                st?
            }
            ReqState::Done(st) => st,
            ReqState::Collected => {
                return Err(Error::new(
                    ErrorClass::Request,
                    "wait: request already completed",
                ))
            }
        };
        status_result(raw, self.elem)
    }

    /// Completes the operation if it is done (`MPI_Test`); `None` if still in flight.
    pub fn test(&mut self) -> Option<Result<Status>> {
        match self.state {
            ReqState::Pending(id) => {
                let r: Result<Option<RawStatus>> = self.rt.engine.with(|e| {
                    e.progress();
                    Ok(e.test(id))
                });
                // A parked user step may be what this request (or a peer) waits for.
                self.rt.engine.run_parked();
                match r {
                    Err(e) => Some(Err(e)),
                    Ok(None) => None,
                    Ok(Some(st)) => {
                        self.state = ReqState::Collected;
                        Some(status_result(st, self.elem))
                    }
                }
            }
            ReqState::Done(st) => {
                self.state = ReqState::Collected;
                Some(status_result(st, self.elem))
            }
            ReqState::Collected => Some(Err(Error::new(
                ErrorClass::Request,
                "test: request already completed",
            ))),
        }
    }

    /// Cancels a pending receive (`MPI_Cancel`); returns whether it was cancelled before
    /// matching. The request must still be waited for.
    pub fn cancel(&self) -> bool {
        match self.state {
            ReqState::Pending(id) => self.rt.engine.with(|e| e.cancel(id)),
            _ => false,
        }
    }
}

impl Drop for Request<'_, '_> {
    fn drop(&mut self) {
        if let ReqState::Pending(id) = self.state {
            // Completing here keeps the borrowed buffer valid for as long as the engine uses it.
            let _ = wait_raw(self.rt, id);
        }
    }
}

pub(crate) fn status_result(raw: RawStatus, elem: usize) -> Result<Status> {
    match raw.error {
        Some(ErrorClass::Truncate) => Err(Error::new(
            ErrorClass::Truncate,
            format!("receive: message from rank {} (tag {}) is longer than the receive buffer ({} bytes kept)", raw.source, raw.tag, raw.bytes),
        )),
        Some(c) => Err(Error::new(c, "operation failed")),
        None => Ok(Status::new(raw, elem)),
    }
}

/// Calls `poll` until it yields a value, spinning then backing off between calls.
pub(crate) fn block_on<R>(rt: &Runtime, mut poll: impl FnMut() -> Result<Option<R>>) -> Result<R> {
    let mut backoff = Backoff::new(rt.wait);
    loop {
        if let Some(r) = poll()? {
            return Ok(r);
        }
        // Parked user steps (nonblocking user reductions) may be what we wait for.
        if rt.engine.run_parked() {
            backoff.reset();
        }
        backoff.snooze();
    }
}

/// Waits for request `id`, spinning then backing off.
pub(crate) fn wait_raw(rt: &Runtime, id: ReqId) -> Result<RawStatus> {
    let mut backoff = Backoff::new(rt.wait);
    loop {
        let (done, worked) = rt.engine.with(|e| -> Result<(Option<RawStatus>, bool)> {
            if let Some(st) = e.test(id) {
                return Ok((Some(st), true));
            }
            // Spin on the arrival word alone before paying for a full progress pass; bounded
            // so that, under a lock, other threads get their turn.
            let mut k = 0;
            while k < rt.wait.inner_spin && e.quiet() {
                k += 1;
            }
            let n = e.progress();
            Ok((e.test(id), n > 0))
        })?;
        // Run parked user steps (user reductions, with the engine unlocked): this request, or
        // a peer's, may depend on them. Also drops a finished one's user operation.
        let parked = rt.engine.run_parked();
        if let Some(st) = done {
            return Ok(st);
        }
        if parked || worked {
            backoff.reset();
        }
        backoff.snooze();
    }
}

/// Waits for every request (`MPI_Waitall`); returns their statuses in order, or the first error
/// after all have completed.
pub fn wait_all(requests: Vec<Request<'_, '_>>) -> Result<Vec<Status>> {
    let results: Vec<Result<Status>> = requests.into_iter().map(Request::wait).collect();
    results.into_iter().collect()
}

/// Completes one request that has finished, removing it from `requests` (`MPI_Waitany`).
/// Returns its index in `requests` before removal and its result; `None` if `requests` is
/// empty.
pub fn wait_any(requests: &mut Vec<Request<'_, '_>>) -> Option<(usize, Result<Status>)> {
    let rt = requests.first()?.rt;
    block_on(rt, || Ok(test_any(requests))).ok()
}

/// Completes one finished request if there is one, removing it from `requests`
/// (`MPI_Testany`).
pub fn test_any(requests: &mut Vec<Request<'_, '_>>) -> Option<(usize, Result<Status>)> {
    let i = requests.iter_mut().position(|r| r.poll_done())?;
    let mut r = requests.remove(i);
    let res = r.test().unwrap_or_else(|| {
        Err(Error::new(
            ErrorClass::Intern,
            "test_any: request lost its completion",
        ))
    });
    Some((i, res))
}

/// Waits until at least one request finished, then completes every finished one, removing them
/// from `requests` (`MPI_Waitsome`). Indices refer to positions before removal.
pub fn wait_some(requests: &mut Vec<Request<'_, '_>>) -> Vec<(usize, Result<Status>)> {
    let Some(rt) = requests.first().map(|r| r.rt) else {
        return Vec::new();
    };
    block_on(rt, || {
        let done = test_some(requests);
        Ok((!done.is_empty()).then_some(done))
    })
    .unwrap_or_default()
}

/// Completes every finished request, removing them from `requests` (`MPI_Testsome`).
pub fn test_some(requests: &mut Vec<Request<'_, '_>>) -> Vec<(usize, Result<Status>)> {
    let mut out = Vec::new();
    let mut kept = Vec::with_capacity(requests.len());
    for (i, mut r) in std::mem::take(requests).into_iter().enumerate() {
        if r.poll_done() {
            let res = r.test().unwrap_or_else(|| {
                Err(Error::new(
                    ErrorClass::Intern,
                    "test_some: request lost its completion",
                ))
            });
            out.push((i, res));
        } else {
            kept.push(r);
        }
    }
    *requests = kept;
    out
}

/// Completes all requests if all have finished (`MPI_Testall`); otherwise leaves them alone
/// and returns `None`.
pub fn test_all<'a, 's>(requests: &mut Vec<Request<'a, 's>>) -> Option<Result<Vec<Status>>> {
    if !requests.iter_mut().all(|r| r.poll_done()) {
        return None;
    }
    Some(wait_all(std::mem::take(requests)))
}

impl Request<'_, '_> {
    /// Advances progress and reports whether this request has finished, without collecting it.
    fn poll_done(&mut self) -> bool {
        match self.state {
            ReqState::Pending(id) => {
                let done = self.rt.engine.with(|e| {
                    e.progress();
                    e.is_done(id)
                });
                self.rt.engine.run_parked();
                done
            }
            ReqState::Done(_) => true,
            ReqState::Collected => false,
        }
    }
}

/// What a persistent request does each time it is started.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PersistentOp {
    /// Send `len` bytes at `buf` to world rank `to` (`None`: `PROC_NULL`).
    Send {
        buf: *const u8,
        len: usize,
        to: Option<u32>,
        env: crate::p2p::wire::Envelope,
    },
    /// Receive up to `cap` bytes into `buf`.
    Recv {
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
    },
}

/// A persistent request (`MPI_Send_init`/`MPI_Recv_init`): started any number of times, each
/// start followed by a wait or successful test, with the buffer borrowed for `'a`.
pub struct Persistent<'a, 's> {
    rt: Arc<Runtime>,
    op: PersistentOp,
    elem: usize,
    active: Option<ReqState>,
    scope: &'s Scope<'a>,
    _buf: PhantomData<&'a mut [u8]>,
}

impl<'a, 's> Persistent<'a, 's> {
    pub(crate) fn new(
        rt: Arc<Runtime>,
        op: PersistentOp,
        elem: usize,
        scope: &'s Scope<'a>,
    ) -> Self {
        Persistent {
            rt,
            op,
            elem,
            active: None,
            scope,
            _buf: PhantomData,
        }
    }

    /// Starts the operation (`MPI_Start`). Starting an active request is an error.
    pub fn start(&mut self) -> Result<()> {
        if self.active.is_some() {
            return Err(Error::new(
                ErrorClass::Request,
                "start: the persistent request is still active",
            ));
        }
        let start = match self.op {
            PersistentOp::Send { to: None, .. } => RecvStart::Done(RawStatus::default()),
            PersistentOp::Send {
                buf,
                len,
                to: Some(to),
                env,
            } => {
                // SAFETY: the buffer is borrowed for `'a`, which outlives this request and its
                // scope (which waits for anything left active).
                match self.rt.engine.with(|e| unsafe {
                    e.isend(crate::p2p::engine::SendMode::Standard, buf, len, to, env)
                })? {
                    None => RecvStart::Done(RawStatus {
                        bytes: len as u64,
                        ..RawStatus::default()
                    }),
                    Some(id) => RecvStart::Pending(id),
                }
            }
            // SAFETY: as above, for the exclusively borrowed receive buffer.
            PersistentOp::Recv {
                buf,
                cap,
                ctx,
                src,
                tag,
            } => self
                .rt
                .engine
                .with(|e| unsafe { e.irecv(buf, cap, ctx, src, tag) })?,
        };
        self.active = Some(match start {
            RecvStart::Done(st) => ReqState::Done(st),
            RecvStart::Pending(id) => {
                self.scope.register(&self.rt, id);
                ReqState::Pending(id)
            }
        });
        Ok(())
    }

    /// Waits for the started operation (`MPI_Wait`); the request becomes inactive.
    pub fn wait(&mut self) -> Result<Status> {
        let raw = match self.active.take() {
            None => {
                return Err(Error::new(
                    ErrorClass::Request,
                    "wait: the persistent request was not started",
                ))
            }
            Some(ReqState::Done(st)) => st,
            Some(ReqState::Pending(id)) => wait_raw(&self.rt, id)?,
            Some(ReqState::Collected) => {
                return Err(Error::new(
                    ErrorClass::Intern,
                    "persistent request in a bad state",
                ))
            }
        };
        status_result(raw, self.elem)
    }

    /// Whether a started operation is still active.
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }
}

impl Drop for Persistent<'_, '_> {
    fn drop(&mut self) {
        if matches!(self.active, Some(ReqState::Pending(_))) {
            let _ = self.wait();
        }
    }
}
