//! Nonblocking operations: requests, the scope that bounds their buffers, completion of many
//! at once, and persistent requests (point-to-point and collective).
//!
//! Every request borrows its buffer for `'a` and belongs to a [`Scope`]: when the scope ends it
//! completes whatever is still outstanding, so even a leaked request cannot outlive its buffer,
//! also when a panic unwinds through it. Waiting goes through the
//! [handle layer](crate::handle::request)'s one wait loop; each request reports its own error.
//!
//! # Standard sections
//! MPI-5.0 §3.7 (nonblocking communication), §3.9 (persistent requests).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::datatype::elements::{store_checked, Element, Stage};
use crate::error::{Error, ErrorClass, Result};
use crate::handle::request::PersistentOp;
use crate::handle::request::{self as h, check, empty_status};
use crate::p2p::engine::RecvStart;
use crate::p2p::request::ReqId;
pub use crate::p2p::request::Status;
use crate::runtime::Runtime;
use crate::threading::{AnyThread, PinnedToThread};

/// Entries the scope's list of requests takes at its first request (a typical window).
const SCOPE_FIRST_ROOM: usize = 64;

/// Where outstanding nonblocking operations live; see [`scope`].
pub struct Scope<'a> {
    /// The process's runtime, recorded with the first request.
    rt: std::cell::OnceCell<Arc<Runtime>>,
    /// Requests started in the scope. Completed ones are not removed one by one (that would
    /// cost a scan per completion); stale entries are skipped at the end and pruned in bulk.
    outstanding: RefCell<Vec<ReqId>>,
    /// Length from which `outstanding` is pruned, when it is next full.
    prune_at: std::cell::Cell<usize>,
    _buffers: PhantomData<&'a mut &'a ()>,
}

impl Scope<'_> {
    /// The process's runtime, kept once per scope so that requests need not count references.
    fn runtime(&self, rt: &Arc<Runtime>) -> &Arc<Runtime> {
        self.rt.get_or_init(|| rt.clone())
    }

    /// Records request `id`, so that the scope waits for it if nobody else does.
    #[inline]
    pub(crate) fn register(&self, rt: &Runtime, id: ReqId) {
        let mut v = self.outstanding.borrow_mut();
        if v.len() == v.capacity() {
            self.make_room(rt, &mut v);
        }
        v.push(id);
    }

    /// Room for one more entry in `v` (the scope's `outstanding`): prunes at the threshold,
    /// and grows to a window's worth at once (doubling from empty cost a window of 64
    /// receives five reallocations).
    #[cold]
    #[inline(never)]
    fn make_room(&self, rt: &Runtime, v: &mut Vec<ReqId>) {
        if v.len() >= self.prune_at.get() {
            rt.engine.with(|e| v.retain(|r| e.is_live(*r)));
            self.prune_at.set((2 * v.len()).max(1024));
        }
        v.reserve(v.len().max(SCOPE_FIRST_ROOM));
    }

    /// Completes every request still outstanding.
    fn finish(&self) {
        let Some(rt) = self.rt.get() else {
            return;
        };
        let ids = self.outstanding.take();
        // The usual end: everything was waited for. One look at the engine instead of one
        // per request (a window of receives paid a scan entry each).
        if ids.is_empty() || rt.engine.with(|e| e.live_requests() == 0) {
            return;
        }
        for id in ids {
            // Entries of requests already collected (their slot may serve another request
            // now) are skipped: only live ones can still touch a buffer.
            if rt.engine.with(|e| e.is_live(id)) {
                if let Some(c) = drop_wait(rt, id, "scope end").error {
                    eprintln!(
                        "oxmpi: rank {}: a request left at scope end failed ({c:?})",
                        rt.rank
                    );
                }
            }
        }
    }
}

/// Completes the scope's requests when dropped, on return and on unwinding alike.
struct FinishOnDrop<'x, 'a>(&'x Scope<'a>);

impl Drop for FinishOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// Runs `f` with a scope for nonblocking operations; when `f` returns, or unwinds, every
/// request started in the scope and not yet completed is waited for.
///
/// Like `std::thread::scope`, a panic in `f` is resumed only after that wait, so even a
/// leaked request cannot write into a buffer the unwinding freed.
pub fn scope<'a, R>(f: impl FnOnce(&Scope<'a>) -> R) -> R {
    let s = Scope {
        rt: std::cell::OnceCell::new(),
        outstanding: RefCell::new(Vec::new()),
        prune_at: std::cell::Cell::new(1024),
        _buffers: PhantomData,
    };
    let guard = FinishOnDrop(&s);
    let r = f(&s);
    drop(guard);
    r
}

/// The calling thread's scope for operations whose buffers are `'static` (rsmpi's
/// `StaticScope`): such a request needs no [`scope`] block, since even a leaked one cannot
/// outlive its buffer. The scope itself lives as long as the thread's first call made it
/// (it is never ended).
///
/// ```no_run
/// let universe = oxmpi::init()?;
/// let world = universe.world();
/// world.immediate_barrier(oxmpi::static_scope())?.wait()?;
/// static PING: [u8; 4] = [1, 2, 3, 4];
/// let r = world.immediate_send(oxmpi::static_scope(), &PING, 0, 0)?;
/// # drop(r);
/// # Ok::<(), oxmpi::Error>(())
/// ```
pub fn static_scope() -> &'static Scope<'static> {
    thread_local! {
        static STATIC: &'static Scope<'static> = Box::leak(Box::new(Scope {
            rt: std::cell::OnceCell::new(),
            outstanding: RefCell::new(Vec::new()),
            prune_at: std::cell::Cell::new(1024),
            _buffers: PhantomData,
        }));
    }
    STATIC.with(|s| *s)
}

/// A nonblocking operation in flight, borrowing its buffer for `'a`.
///
/// A request stays on the thread that started it (`M` is [`PinnedToThread`]) unless
/// [`into_send`](Request::into_send) made it a [`SendRequest`], which needs a thread level
/// at which the engine is locked.
#[must_use = "a request must be waited for or tested"]
pub struct Request<'a, 's, M = PinnedToThread> {
    rt: &'s Arc<Runtime>,
    state: ReqState,
    elem: usize,
    /// Polled as a future: dropped early, it cancels a receive that has not matched.
    polled: bool,
    /// Its entry in the async progress source's waiter list, while it has one.
    waker: Option<u64>,
    /// Ties the request (and the buffer borrow `'a`) to its scope, whose state it never
    /// touches after [`new`](Request::new); `M` says which threads may hold it.
    _scope: PhantomData<(ScopeTie<'a, 's>, M)>,
}

/// A request's tie to its scope: covariant in `'s`, invariant in `'a` (as `&'s Scope<'a>`),
/// without holding a `!Sync` reference.
type ScopeTie<'a, 's> = fn() -> &'s Scope<'a>;

/// A [`Request`] that may move to another thread, e.g. awaited inside `tokio::spawn` (with
/// [`static_scope`] and `'static` buffers); see [`Request::into_send`].
///
/// ```no_run
/// fn needs_send<T: Send>(_: T) {}
/// let universe = oxmpi::init_with::<oxmpi::Multiple>()?;
/// let world = universe.world();
/// needs_send(world.immediate_barrier(oxmpi::static_scope())?.into_send()?);
/// # Ok::<(), oxmpi::Error>(())
/// ```
/// A plain [`Request`] stays on its thread:
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// let universe = oxmpi::init_with::<oxmpi::Multiple>().unwrap();
/// let world = universe.world();
/// needs_send(world.immediate_barrier(oxmpi::static_scope()).unwrap());
/// ```
pub type SendRequest<'a, 's> = Request<'a, 's, AnyThread>;

#[derive(Clone, Copy)]
enum ReqState {
    Pending(ReqId),
    Done(Status),
    /// Completed and collected: inactive, like `MPI_REQUEST_NULL`.
    Collected,
}

impl<'a, 's> Request<'a, 's> {
    // Always inlined: built out of line, the request (~80 bytes) came back through memory and
    // its wide reload waited for the narrow stores that wrote it (a failed store forward per
    // request started, behind a send's ring stores on the sending side).
    #[inline(always)]
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
            polled: false,
            waker: None,
            _scope: PhantomData,
        }
    }

    /// This request as one that may be moved to (and completed on) another thread, e.g. a
    /// future given to `tokio::spawn`. Errors ([`ErrorClass::Other`]): below
    /// [`Serialized`](crate::Serialized), where the engine has no lock and must stay on the
    /// thread that initialized MPI.
    pub fn into_send(mut self) -> Result<SendRequest<'a, 's>> {
        if !self.rt.level.needs_lock() {
            return Err(Error::new(
                ErrorClass::Other,
                format!(
                    "into_send: a request cannot leave its thread at thread level {:?}",
                    self.rt.level
                ),
            ));
        }
        // The fields move to the new request; this one is left collected, so its drop does
        // nothing.
        let state = std::mem::replace(&mut self.state, ReqState::Collected);
        Ok(Request {
            rt: self.rt,
            state,
            elem: self.elem,
            polled: self.polled,
            waker: self.waker.take(),
            _scope: PhantomData,
        })
    }

    /// A guard that cancels the operation when dropped, then waits for it: a receive that
    /// never matches does not hold up the end of a scope (rsmpi's `CancelGuard`).
    pub fn cancel_guard(self) -> CancelGuard<'a, 's> {
        CancelGuard(Some(self))
    }
}

impl<M> Request<'_, '_, M> {
    /// Drops the async waiter entry once the request is collected.
    fn unregister(&mut self) {
        if let Some(token) = self.waker.take() {
            crate::future::unregister(token);
        }
    }

    /// Blocks until the operation completes (`MPI_Wait`).
    pub fn wait(mut self) -> Result<Status> {
        self.wait_in("wait")
    }

    // Always inlined into the waits for many (`wait_all`): as for `new`, a status returned
    // through memory stalled on its reload once per request.
    #[inline(always)]
    fn wait_in(&mut self, call: &'static str) -> Result<Status> {
        self.unregister();
        let st = match std::mem::replace(&mut self.state, ReqState::Collected) {
            ReqState::Pending(id) => h::wait_id(self.rt, id, call),
            ReqState::Done(st) => st,
            ReqState::Collected => return Err(collected(call)),
        };
        check(call, st.with_elem(self.elem))
    }

    /// Completes the operation if it is done (`MPI_Test`); `None` if still in flight. Once
    /// it has returned `Some`, the request is inactive: testing it again is an error, and
    /// [`wait_any`] and friends pass over it.
    pub fn test(&mut self) -> Option<Result<Status>> {
        let st = match self.state {
            ReqState::Pending(id) => h::test_id(self.rt, id)?,
            ReqState::Done(st) => st,
            ReqState::Collected => return Some(Err(collected("test"))),
        };
        self.unregister();
        self.state = ReqState::Collected;
        Some(check("test", st.with_elem(self.elem)))
    }

    /// Whether the request was completed and collected (by [`test`](Self::test)).
    pub fn is_inactive(&self) -> bool {
        matches!(self.state, ReqState::Collected)
    }

    /// Asks to cancel the operation (`MPI_Cancel`); returns whether a pending receive was
    /// cancelled before matching. The request must still be waited for.
    pub fn cancel(&self) -> bool {
        match self.state {
            ReqState::Pending(id) => self.rt.engine.with(|e| e.cancel(id)),
            _ => false,
        }
    }

    /// Whether it has finished, without collecting it (call after a progress pass).
    fn done_in(&self, e: &mut crate::p2p::engine::Engine) -> bool {
        match self.state {
            ReqState::Pending(id) => e.is_done(id),
            ReqState::Done(_) => true,
            ReqState::Collected => false,
        }
    }
}

impl<M> Drop for Request<'_, '_, M> {
    fn drop(&mut self) {
        if let Some(token) = self.waker.take() {
            crate::future::unregister(token);
        }
        if let ReqState::Pending(id) = self.state {
            if self.polled {
                // A future dropped before it finished (a lost `select!` branch): a receive that
                // has not matched is cancelled rather than waited for.
                self.rt.engine.with(|e| e.cancel(id));
            }
            // Completing here keeps the borrowed buffer valid for as long as the engine uses it.
            drop_wait(self.rt, id, "request drop");
        }
    }
}

/// How long a thread that panics waits for its outstanding operations before it cancels
/// them or ends the job: the launcher's grace time.
const PANIC_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Completes engine request `id` for a drop or a scope end. While the thread panics, an
/// operation that never completes (a receive nobody sends to) would hang the unwinding, and
/// returning early would free a buffer the engine may still write: so the request gets
/// [`PANIC_GRACE`] to complete, then a receive that has not matched is cancelled (the panic
/// goes on), and anything else ends the job, as it ends for a rank that dies of its panic.
pub(crate) fn drop_wait(rt: &Runtime, id: ReqId, call: &'static str) -> Status {
    if !std::thread::panicking() {
        return h::wait_id(rt, id, call);
    }
    let deadline = std::time::Instant::now() + PANIC_GRACE;
    let st = h::wait_engine_until(rt, |e| match e.test(id) {
        Some(st) => Some(Some(st)),
        None if std::time::Instant::now() >= deadline => {
            // A cancelled receive completes at once; anything else stays pending.
            e.cancel(id);
            Some(e.test(id))
        }
        None => None,
    });
    match st {
        Some(st) => st,
        None => rt.abort(
            1,
            &format!(
                "rank {}: panicked with an operation still in flight ({call}); ending the job \
                 rather than waiting for it forever",
                rt.rank
            ),
        ),
    }
}

/// Awaiting a request completes it: the output is what [`Request::wait`] returns. Progress
/// happens without the task spinning (see [`crate::future`]). A request dropped before it
/// completes cancels a receive that has not matched and waits for anything else, so its
/// buffer stays borrowed until the engine is done with it.
// Both thread markers are `PhantomData`, hence `Unpin`.
impl<M: Unpin> std::future::Future for Request<'_, '_, M> {
    type Output = Result<Status>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Status>> {
        use std::task::Poll;
        // `Request` is `Unpin`: it holds references and plain data.
        let this = self.get_mut();
        this.polled = true;
        let id = match this.state {
            ReqState::Pending(id) => id,
            ReqState::Done(_) | ReqState::Collected => return Poll::Ready(this.wait_in("await")),
        };
        match crate::future::poll_request(this.rt, id, &mut this.waker, cx) {
            Some(st) => {
                this.unregister();
                this.state = ReqState::Collected;
                Poll::Ready(check("await", st.with_elem(this.elem)))
            }
            None => Poll::Pending,
        }
    }
}

/// Cancels its request when dropped, then waits for it (made by [`Request::cancel_guard`]).
#[must_use = "dropping the guard cancels the operation at once"]
pub struct CancelGuard<'a, 's>(Option<Request<'a, 's>>);

impl<'a, 's> CancelGuard<'a, 's> {
    /// Waits for the operation instead of cancelling it.
    pub fn wait(mut self) -> Result<Status> {
        self.0
            .take()
            .map_or_else(|| Err(collected("wait")), Request::wait)
    }

    /// The guarded request (to test it, or to put it back into a collection).
    pub fn into_inner(mut self) -> Request<'a, 's> {
        self.0
            .take()
            .expect("the guard holds its request until dropped")
    }
}

impl Drop for CancelGuard<'_, '_> {
    fn drop(&mut self) {
        if let Some(r) = self.0.take() {
            r.cancel();
            // The request's own drop waits for what could not be cancelled.
            drop(r);
        }
    }
}

fn collected(call: &str) -> Error {
    Error::new(
        ErrorClass::Request,
        format!("{call}: the request was already completed"),
    )
}

/// A status as a result: its operation's error, with the class kept (used by collectives).
pub(crate) fn status_result(raw: Status, elem: usize) -> Result<Status> {
    check("receive", raw.with_elem(elem))
}

/// Calls `poll` until it yields a value, spinning then backing off between calls.
pub(crate) fn block_on<R>(rt: &Runtime, mut poll: impl FnMut() -> Result<Option<R>>) -> Result<R> {
    h::wait_loop(rt, || match poll() {
        Ok(None) => (None, false),
        Ok(Some(r)) => (Some(Ok(r)), true),
        Err(e) => (Some(Err(e)), true),
    })
}

/// Waits for engine request `id`; the status carries the operation's own error.
pub(crate) fn wait_raw(rt: &Runtime, id: ReqId, call: &'static str) -> Result<Status> {
    Ok(h::wait_id(rt, id, call))
}

/// Some requests of a [`wait_all`] or [`test_all`] failed (`MPI_ERR_IN_STATUS`): each
/// request's own result, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InStatus {
    /// One entry per request: its status or its own error.
    pub results: Vec<Result<Status>>,
}

impl std::fmt::Display for InStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let failed: Vec<String> = self
            .results
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().err().map(|e| format!("request {i}: {e}")))
            .collect();
        write!(f, "wait_all: {}", failed.join("; "))
    }
}

impl std::error::Error for InStatus {}

impl From<InStatus> for Error {
    fn from(e: InStatus) -> Error {
        Error::new(ErrorClass::InStatus, e.to_string())
    }
}

/// Waits for every request (`MPI_Waitall`); returns their statuses in order, or, if any
/// failed, every request's own result.
pub fn wait_all(mut requests: Vec<Request<'_, '_>>) -> std::result::Result<Vec<Status>, InStatus> {
    finish_all(&mut requests);
    // Statuses go straight into the answer; only a failure builds the per-request results.
    let mut statuses = Vec::with_capacity(requests.len());
    let mut results: Option<Vec<Result<Status>>> = None;
    // Each request completes where it lies: moved out first, its ~80 bytes were copied and
    // reloaded at once, a failed store forward per request. Collected, they drop for free.
    for r in requests.iter_mut() {
        // A request that finished cleanly: its status copied from where it lies into the
        // answer. Taken through `wait_in`'s `Result<Status>`, it went through stack
        // temporaries whose narrow stores its wide reloads waited for (a failed store
        // forward or three per request; wait_all was 15% of the sending side of msgrate).
        if results.is_none() && r.waker.is_none() {
            if let ReqState::Done(st) = &r.state {
                if st.error.is_none() {
                    statuses.push(Status {
                        elem: r.elem,
                        ..*st
                    });
                    r.state = ReqState::Collected;
                    continue;
                }
            }
        }
        let res = r.wait_in("wait_all");
        match (&mut results, res) {
            (None, Ok(st)) => statuses.push(st),
            (None, Err(e)) => {
                let mut all: Vec<Result<Status>> = statuses.drain(..).map(Ok).collect();
                all.push(Err(e));
                results = Some(all);
            }
            (Some(all), res) => all.push(res),
        }
    }
    match results {
        None => Ok(statuses),
        Some(results) => Err(InStatus { results }),
    }
}

/// Completes every pending request of `requests` into its `Done` state, collecting each run
/// of finished ones in one engine visit: a window of receives that one progress pass
/// completed costs one visit, not a wait per request (about 150 instructions each before).
fn finish_all(requests: &mut [Request<'_, '_>]) {
    let Some(rt) = requests.first().map(|r| r.rt) else {
        return;
    };
    let mut i = 0;
    while i < requests.len() {
        i = rt.engine.with(|e| {
            e.enter("wait_all");
            let mut j = i;
            while let Some(r) = requests.get_mut(j) {
                if let ReqState::Pending(id) = r.state {
                    if !std::ptr::eq(r.rt, rt) {
                        break;
                    }
                    match e.test(id) {
                        Some(st) => r.state = ReqState::Done(st),
                        None => break,
                    }
                }
                j += 1;
            }
            j
        });
        rt.engine.run_parked();
        let Some(r) = requests.get_mut(i) else {
            break;
        };
        // The first that has not finished: waited for on its own, as `wait` does.
        if let ReqState::Pending(id) = r.state {
            r.state = ReqState::Done(h::wait_id(r.rt, id, "wait_all"));
        }
        i += 1;
    }
}

/// Completes all requests if all have finished (`MPI_Testall`); otherwise leaves them alone
/// and returns `None`.
pub fn test_all(
    requests: &mut Vec<Request<'_, '_>>,
) -> Option<std::result::Result<Vec<Status>, InStatus>> {
    if let Some(rt) = requests.first().map(|r| r.rt) {
        let all = h::progress_then(rt, |e| {
            requests.iter().all(|r| r.done_in(e) || r.is_inactive())
        });
        if !all {
            return None;
        }
    }
    Some(wait_all(std::mem::take(requests)))
}

/// Completes one request that has finished, removing it from `requests` (`MPI_Waitany`).
/// Returns its index in `requests` before removal and its result; `None` if no request is
/// active (the vector is empty or holds only requests already collected by `test`).
pub fn wait_any(requests: &mut Vec<Request<'_, '_>>) -> Option<(usize, Result<Status>)> {
    let rt = requests.first()?.rt;
    if requests.iter().all(Request::is_inactive) {
        return None;
    }
    let i = h::wait_engine_until(rt, |e| requests.iter().position(|r| r.done_in(e)));
    Some((i, requests.remove(i).wait_in("wait_any")))
}

/// Completes one finished request if there is one, removing it from `requests`
/// (`MPI_Testany`).
pub fn test_any(requests: &mut Vec<Request<'_, '_>>) -> Option<(usize, Result<Status>)> {
    let rt = requests.first()?.rt;
    let i = h::progress_then(rt, |e| requests.iter().position(|r| r.done_in(e)))?;
    Some((i, requests.remove(i).wait_in("test_any")))
}

/// Waits until at least one request finished, then completes every finished one, removing them
/// from `requests` (`MPI_Waitsome`). Indices refer to positions before removal; each entry has
/// its request's own result. Empty if no request is active.
pub fn wait_some(requests: &mut Vec<Request<'_, '_>>) -> Vec<(usize, Result<Status>)> {
    let Some(rt) = requests.first().map(|r| r.rt) else {
        return Vec::new();
    };
    if requests.iter().all(Request::is_inactive) {
        return Vec::new();
    }
    h::wait_engine_until(rt, |e| requests.iter().any(|r| r.done_in(e)).then_some(()));
    collect_done(requests, "wait_some")
}

/// Completes every finished request, removing them from `requests` (`MPI_Testsome`).
pub fn test_some(requests: &mut Vec<Request<'_, '_>>) -> Vec<(usize, Result<Status>)> {
    let Some(rt) = requests.first().map(|r| r.rt) else {
        return Vec::new();
    };
    h::progress_then(rt, |_| ());
    collect_done(requests, "test_some")
}

/// Removes and completes the requests that have finished.
fn collect_done(
    requests: &mut Vec<Request<'_, '_>>,
    call: &'static str,
) -> Vec<(usize, Result<Status>)> {
    let Some(rt) = requests.first().map(|r| r.rt) else {
        return Vec::new();
    };
    let done: Vec<bool> = rt
        .engine
        .with(|e| requests.iter().map(|r| r.done_in(e)).collect());
    let mut out = Vec::new();
    let mut kept = Vec::with_capacity(requests.len());
    for (i, (mut r, d)) in std::mem::take(requests).into_iter().zip(done).enumerate() {
        if d {
            out.push((i, r.wait_in(call)));
        } else {
            kept.push(r);
        }
    }
    *requests = kept;
    out
}

/// One request of a [`RequestCollection`] that finished.
#[derive(Debug)]
pub struct Finished<D> {
    /// Its index in the collection (the value [`RequestCollection::add`] returned).
    pub index: usize,
    /// Its status, or its own error.
    pub result: Result<Status>,
    /// What was attached to it ([`RequestCollection::add_with`]).
    pub data: D,
}

/// Requests with stable indices (rsmpi's `RequestCollection`): completing one leaves the
/// others' indices as they were, and each completion says which request finished and hands
/// back what was attached to it (a buffer index, a peer, a tag). Dropping the collection
/// waits for what is left, as dropping each request would.
pub struct RequestCollection<'a, 's, D = ()> {
    slots: Vec<Option<(Request<'a, 's>, D)>>,
}

impl<D> Default for RequestCollection<'_, '_, D> {
    fn default() -> Self {
        RequestCollection { slots: Vec::new() }
    }
}

impl<'a, 's, D> RequestCollection<'a, 's, D> {
    /// An empty collection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `req` with `data` attached; returns its index.
    pub fn add_with(&mut self, req: Request<'a, 's>, data: D) -> usize {
        self.slots.push(Some((req, data)));
        self.slots.len() - 1
    }

    /// Adds `req`; returns its index.
    pub fn add(&mut self, req: Request<'a, 's>) -> usize
    where
        D: Default,
    {
        self.add_with(req, D::default())
    }

    /// Number of requests added so far (completed ones included).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no request was ever added.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Number of requests not yet completed.
    pub fn outstanding(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    fn runtime(&self) -> Option<&'s Runtime> {
        self.slots.iter().flatten().map(|(r, _)| &**r.rt).next()
    }

    fn finish(&mut self, index: usize, call: &'static str) -> Finished<D> {
        let (mut r, data) = self.slots[index].take().expect("a live slot");
        Finished {
            index,
            result: r.wait_in(call),
            data,
        }
    }

    /// Waits until one request finishes and completes it (`MPI_Waitany`); `None` once none
    /// is left.
    pub fn wait_any(&mut self) -> Option<Finished<D>> {
        let rt = self.runtime()?;
        let i = h::wait_engine_until(rt, |e| {
            self.slots
                .iter()
                .position(|s| s.as_ref().is_some_and(|(r, _)| r.done_in(e)))
        });
        Some(self.finish(i, "wait_any"))
    }

    /// Completes one finished request if there is one (`MPI_Testany`).
    pub fn test_any(&mut self) -> Option<Finished<D>> {
        let rt = self.runtime()?;
        let i = h::progress_then(rt, |e| {
            self.slots
                .iter()
                .position(|s| s.as_ref().is_some_and(|(r, _)| r.done_in(e)))
        })?;
        Some(self.finish(i, "test_any"))
    }

    /// Waits until at least one request finishes, then completes every finished one
    /// (`MPI_Waitsome`); empty once none is left.
    pub fn wait_some(&mut self) -> Vec<Finished<D>> {
        let Some(rt) = self.runtime() else {
            return Vec::new();
        };
        h::wait_engine_until(rt, |e| {
            self.slots
                .iter()
                .any(|s| s.as_ref().is_some_and(|(r, _)| r.done_in(e)))
                .then_some(())
        });
        self.collect("wait_some")
    }

    /// Completes every finished request (`MPI_Testsome`).
    pub fn test_some(&mut self) -> Vec<Finished<D>> {
        let Some(rt) = self.runtime() else {
            return Vec::new();
        };
        h::progress_then(rt, |_| ());
        self.collect("test_some")
    }

    /// Completes every request, in index order (`MPI_Waitall`).
    pub fn wait_all(&mut self) -> Vec<Finished<D>> {
        let live: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.slots[i].is_some())
            .collect();
        live.into_iter()
            .map(|i| self.finish(i, "wait_all"))
            .collect()
    }

    fn collect(&mut self, call: &'static str) -> Vec<Finished<D>> {
        let Some(rt) = self.runtime() else {
            return Vec::new();
        };
        let done: Vec<usize> = rt.engine.with(|e| {
            (0..self.slots.len())
                .filter(|&i| self.slots[i].as_ref().is_some_and(|(r, _)| r.done_in(e)))
                .collect()
        });
        done.into_iter().map(|i| self.finish(i, call)).collect()
    }
}

/// A persistent request (`MPI_Send_init` and its modes, `MPI_Recv_init`, and the persistent
/// collectives such as `MPI_Bcast_init`, made by the communicators' `*_init` methods): started
/// any number of times, each start followed by a wait or successful test, with the buffers
/// borrowed for `'a`. A persistent collective's algorithm and scratch space are fixed when it
/// is made; every start is a new run of the same plan.
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
        // SAFETY: the buffer is borrowed for `'a`, which outlives this request and its scope;
        // both wait for an active operation before they end.
        let start = unsafe { h::start_op(&self.rt, &self.op)? };
        self.active = Some(match start {
            RecvStart::Done(st) => ReqState::Done(st),
            RecvStart::Pending(id) => {
                self.scope.register(&self.rt, id);
                ReqState::Pending(id)
            }
        });
        Ok(())
    }

    /// Starts every request (`MPI_Startall`); stops at the first that fails to start.
    pub fn start_all(requests: &mut [Persistent<'a, 's>]) -> Result<()> {
        requests.iter_mut().try_for_each(Persistent::start)
    }

    /// Waits for the started operation (`MPI_Wait`); the request becomes inactive.
    pub fn wait(&mut self) -> Result<Status> {
        let st = match self.active.take() {
            None => {
                return Err(Error::new(
                    ErrorClass::Request,
                    "wait: the persistent request was not started",
                ))
            }
            Some(ReqState::Done(st)) => st,
            Some(ReqState::Pending(id)) => h::wait_id(&self.rt, id, "wait"),
            Some(ReqState::Collected) => empty_status(),
        };
        check("wait", st.with_elem(self.elem))
    }

    /// Completes the started operation if it is done (`MPI_Test`); the request then becomes
    /// inactive. `None` while it runs or if it was not started.
    pub fn test(&mut self) -> Option<Result<Status>> {
        let st = match self.active? {
            ReqState::Pending(id) => h::test_id(&self.rt, id)?,
            ReqState::Done(st) => st,
            ReqState::Collected => empty_status(),
        };
        self.active = None;
        Some(check("test", st.with_elem(self.elem)))
    }

    /// Whether a started operation is still active.
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// Whether this persistent collective runs through shared memory on a channel of its
    /// own; for tests and diagnostics.
    #[doc(hidden)]
    pub fn runs_on_shared_memory(&self) -> bool {
        matches!(&self.op, PersistentOp::Coll(k) if k.on_shm())
    }

    /// A future that completes the started operation, as [`wait`](Self::wait) does; the
    /// request is inactive afterwards. Dropped early, it leaves the operation active (the
    /// request's own drop or the scope completes it).
    pub fn completion(&mut self) -> Completion<'_, 'a, 's> {
        Completion {
            req: self,
            waker: None,
        }
    }
}

/// Awaits a started [`Persistent`] request (made by [`Persistent::completion`]).
pub struct Completion<'p, 'a, 's> {
    req: &'p mut Persistent<'a, 's>,
    waker: Option<u64>,
}

impl std::future::Future for Completion<'_, '_, '_> {
    type Output = Result<Status>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Status>> {
        let this = self.get_mut();
        let Some(ReqState::Pending(id)) = this.req.active else {
            return std::task::Poll::Ready(this.req.wait());
        };
        match crate::future::poll_request(&this.req.rt, id, &mut this.waker, cx) {
            Some(st) => {
                this.req.active = None;
                if let Some(t) = this.waker.take() {
                    crate::future::unregister(t);
                }
                std::task::Poll::Ready(check("await", st.with_elem(this.req.elem)))
            }
            None => std::task::Poll::Pending,
        }
    }
}

impl Drop for Completion<'_, '_, '_> {
    fn drop(&mut self) {
        if let Some(t) = self.waker.take() {
            crate::future::unregister(t);
        }
    }
}

impl Drop for Persistent<'_, '_> {
    fn drop(&mut self) {
        if let Some(ReqState::Pending(id)) = self.active {
            drop_wait(&self.rt, id, "request drop");
        }
    }
}

/// A nonblocking receive (or collective) into a buffer of a [`Checked`] type (`bool`,
/// `char`), as [`Communicator::immediate_receive_into_checked`] and the `*_checked`
/// collectives make it. The data lands in raw form in a buffer the request owns; when the
/// request completes (by [`wait`](Self::wait), [`test`](Self::test) or drop) every received
/// value is checked and only then copied into the caller's buffer. A raw value that is no
/// valid element (a `bool` byte other than 0 or 1, a `u32` that is no Unicode scalar) is an
/// [`ErrorClass::Type`] error and leaves the caller's buffer unchanged.
///
/// [`Checked`]: crate::datatype::Checked
/// [`Communicator::immediate_receive_into_checked`]: crate::Communicator::immediate_receive_into_checked
#[must_use = "a request must be waited for or tested"]
pub struct CheckedRequest<'a, 's, T: Element> {
    /// `None` once completed. Declared before `stage`: the request ends before the stage.
    req: Option<Request<'a, 's>>,
    stage: Stage<T::Raw>,
    dest: &'a mut [T],
    call: &'static str,
    /// Whether the status counts the received elements (a receive) or the whole buffer is
    /// the result (a collective).
    counted: bool,
}

impl<'a, 's, T: Element> CheckedRequest<'a, 's, T> {
    /// Starts `start` on a stage holding the raw form of `dest` (which a broadcast root sends).
    ///
    /// `start` gets the stage for `'a`: the returned request owns it, completes the operation
    /// before freeing it, and leaks it if leaked (the scope then completes the operation).
    pub(crate) fn start(
        call: &'static str,
        dest: &'a mut [T],
        counted: bool,
        start: impl FnOnce(&'a mut [T::Raw]) -> Result<Request<'a, 's>>,
    ) -> Result<Self> {
        let stage = Stage::new(T::raw(dest));
        // SAFETY: see above: the stage outlives every use of the lent slice, and nothing else
        // touches it until the request completes.
        let req = start(unsafe { stage.lend() })?;
        Ok(CheckedRequest {
            req: Some(req),
            stage,
            dest,
            call,
            counted,
        })
    }

    /// Blocks until the operation completes (`MPI_Wait`); its checked values are then in the
    /// caller's buffer.
    pub fn wait(mut self) -> Result<Status> {
        match self.req.take() {
            Some(r) => {
                let st = r.wait();
                self.finish(st)
            }
            None => Err(Error::new(
                ErrorClass::Request,
                "wait: the checked request was already completed",
            )),
        }
    }

    /// Completes the operation if it is done (`MPI_Test`); `None` while in flight.
    pub fn test(&mut self) -> Option<Result<Status>> {
        let st = self.req.as_mut()?.test()?;
        self.req = None;
        Some(self.finish(st))
    }

    fn finish(&mut self, st: Result<Status>) -> Result<Status> {
        finish_checked(self.call, self.counted, self.stage.get(), self.dest, st)
    }
}

impl<T: Element> Drop for CheckedRequest<'_, '_, T> {
    fn drop(&mut self) {
        if let Some(r) = self.req.take() {
            // Completing here keeps the stage alive as long as the engine writes it, and
            // delivers valid data; an error has no caller to go to.
            let st = r.wait();
            let _ = self.finish(st);
        }
    }
}

/// Checks a completed operation's staged values into `dest`: as many as the status counts
/// (`counted`: a receive) or the whole stage (a collective).
pub(crate) fn finish_checked<T: Element>(
    call: &'static str,
    counted: bool,
    raw: &[T::Raw],
    dest: &mut [T],
    st: Result<Status>,
) -> Result<Status> {
    let st = st?;
    let n = if counted {
        (st.bytes() as usize / std::mem::size_of::<T>()).min(raw.len())
    } else {
        raw.len()
    };
    store_checked(call, &raw[..n], dest)?;
    Ok(st)
}

/// A persistent receive (or collective) into a buffer of a [`Checked`] type, as
/// [`Communicator::receive_init_checked`] and the `*_init_checked` collectives make it:
/// each [`start`](Self::start) refreshes a raw stage from the caller's buffer, and each
/// completion checks the received values before copying them back (an invalid one is an
/// [`ErrorClass::Type`] error and leaves the caller's buffer unchanged).
///
/// [`Checked`]: crate::datatype::Checked
/// [`Communicator::receive_init_checked`]: crate::Communicator::receive_init_checked
pub struct CheckedPersistent<'a, 's, T: Element> {
    /// Declared before `stage`: its drop completes an active operation before the stage goes.
    inner: Persistent<'a, 's>,
    stage: Stage<T::Raw>,
    dest: &'a mut [T],
    call: &'static str,
    counted: bool,
}

impl<'a, 's, T: Element> CheckedPersistent<'a, 's, T> {
    /// Makes the persistent operation with `make` over a stage holding `dest`'s raw form.
    pub(crate) fn make(
        call: &'static str,
        dest: &'a mut [T],
        counted: bool,
        make: impl FnOnce(&'a mut [T::Raw]) -> Result<Persistent<'a, 's>>,
    ) -> Result<Self> {
        let stage = Stage::new(T::raw(dest));
        // SAFETY: the returned value owns the stage and drops `inner` (which completes an
        // active operation) before it; the stage is written only while an operation is
        // active, and read or refreshed only while none is.
        let inner = make(unsafe { stage.lend() })?;
        Ok(CheckedPersistent {
            inner,
            stage,
            dest,
            call,
            counted,
        })
    }

    /// Starts the operation (`MPI_Start`) on the buffer's current values.
    pub fn start(&mut self) -> Result<()> {
        if !self.inner.is_active() {
            self.stage.load(T::raw(self.dest));
        }
        self.inner.start()
    }

    /// Waits for the started operation (`MPI_Wait`); its checked values are then in the
    /// caller's buffer.
    pub fn wait(&mut self) -> Result<Status> {
        let st = self.inner.wait();
        self.finish(st)
    }

    /// Completes the started operation if it is done (`MPI_Test`).
    pub fn test(&mut self) -> Option<Result<Status>> {
        let st = self.inner.test()?;
        Some(self.finish(st))
    }

    /// Whether a started operation is still active.
    pub fn is_active(&self) -> bool {
        self.inner.is_active()
    }

    fn finish(&mut self, st: Result<Status>) -> Result<Status> {
        finish_checked(self.call, self.counted, self.stage.get(), self.dest, st)
    }
}
