//! Requests as futures: what wakes a task that awaits an MPI operation.
//!
//! Every nonblocking [`Request`](crate::Request) (point-to-point, matched receives and the
//! nonblocking collectives) implements [`std::future::Future`], and
//! [`Persistent::completion`](crate::Persistent::completion) awaits a started persistent
//! request. Awaiting never makes the task spin:
//!
//! 1. A poll first runs up to `OXMPI_ASYNC_SPIN` progress passes, as a blocking wait spins
//!    before it backs off, so a message that is about to arrive costs no thread hand-off.
//! 2. If the operation is still in flight, the task's waker is put on a list and the
//!    process's **progress thread** (started on first use) takes over: it drives the engine,
//!    backing off (spin, yield, sleep) while nothing happens, runs parked user reduction steps,
//!    and wakes each task whose request has finished. With no waiter it sleeps on a condition
//!    variable and costs nothing.
//!
//! The progress thread needs an engine that other threads may lock, so it runs at
//! [`Serialized`](crate::Serialized) and [`Multiple`](crate::Multiple). Below that, or with
//! `OXMPI_ASYNC_THREAD=0`, a poll that finds the operation unfinished asks its executor to
//! poll it again (the task then keeps its thread busy, as a blocking wait would).
//!
//! A future dropped before it finishes cancels a receive that has not matched and otherwise
//! waits for the operation, so the buffer it borrows is never released while the engine can
//! still write it.
//!
//! # Futures on other threads (`tokio::spawn`)
//! A [`Request`](crate::Request) stays on its thread; [`Request::into_send`](crate::Request::into_send)
//! makes it a [`SendRequest`](crate::SendRequest) at [`Serialized`](crate::Serialized) and
//! [`Multiple`](crate::Multiple). A spawned task must be `'static`, so its requests live in
//! [`static_scope`](crate::static_scope): sends can borrow `'static` data, and
//! [`Communicator::immediate_receive_owned`] receives into a vector the future owns and
//! hands back.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::task::{Context, Waker};

use crate::comm::Communicator;
use crate::datatype::Equivalence;
use crate::error::{Error, ErrorClass, Result};
use crate::handle::request as h;
use crate::p2p::progress::{Backoff, WaitPolicy};
use crate::p2p::request::{ReqId, Status};
use crate::point_to_point::{Source, Tag};
use crate::request::{Request, SendRequest};
use crate::runtime::Runtime;
use crate::threading::ThreadLevel;
use crate::threading::Threading;

/// The async tunables, read once.
struct Settings {
    spin: u32,
    thread: bool,
}

fn settings() -> &'static Settings {
    static S: OnceLock<Settings> = OnceLock::new();
    S.get_or_init(|| {
        // `init` already refused a malformed environment, so the defaults are only a fallback.
        let c = crate::config::Config::from_env().unwrap_or_default();
        Settings {
            spin: c.async_spin,
            thread: c.async_thread,
        }
    })
}

/// One awaiting task: its token, its request, its waker.
type Waiter = (u64, ReqId, Waker);

#[derive(Default)]
struct Waiters {
    next: u64,
    list: Vec<Waiter>,
    /// Whether the progress thread is running.
    running: bool,
}

/// The waiter list and the condition variable the idle progress thread sleeps on.
struct ProgressSource {
    waiters: Mutex<Waiters>,
    wake: Condvar,
}

fn source() -> &'static ProgressSource {
    static S: OnceLock<ProgressSource> = OnceLock::new();
    S.get_or_init(|| ProgressSource {
        waiters: Mutex::new(Waiters::default()),
        wake: Condvar::new(),
    })
}

fn lock(s: &ProgressSource) -> MutexGuard<'_, Waiters> {
    // A panic while the list was held leaves it consistent (every update is one push or one
    // retain), so a poisoned lock is still usable.
    s.waiters.lock().unwrap_or_else(|p| p.into_inner())
}

/// Polls engine request `id` for a future: its status if it has finished (the request is
/// then freed), otherwise `None` with the task's waker registered (in `slot`) with the
/// progress thread, or, without one, a request to be polled again.
pub(crate) fn poll_request(
    rt: &Arc<Runtime>,
    id: ReqId,
    slot: &mut Option<u64>,
    cx: &mut Context<'_>,
) -> Option<Status> {
    let s = settings();
    for _ in 0..s.spin.max(1) {
        if let Some(st) = h::test_id(rt, id) {
            return Some(st);
        }
    }
    let shared_engine = matches!(rt.level, Threading::Serialized | Threading::Multiple);
    if !(s.thread && shared_engine) {
        cx.waker().wake_by_ref();
        return None;
    }
    register(rt, id, slot, cx.waker());
    // The progress thread may have finished the request between the last test and the
    // registration; it wakes the task in that case too, since it checks every waiter on each
    // pass rather than waiting for a transition.
    None
}

fn register(rt: &Arc<Runtime>, id: ReqId, slot: &mut Option<u64>, waker: &Waker) {
    let src = source();
    let mut w = lock(src);
    let entry = slot.and_then(|t| w.list.iter_mut().find(|e| e.0 == t));
    match entry {
        Some(e) => {
            if !e.2.will_wake(waker) {
                e.2 = waker.clone();
            }
        }
        None => {
            let token = w.next;
            w.next += 1;
            w.list.push((token, id, waker.clone()));
            *slot = Some(token);
        }
    }
    if !w.running {
        w.running = true;
        let weak = Arc::downgrade(rt);
        let spawned = std::thread::Builder::new()
            .name("oxmpi-progress".into())
            .spawn(move || progress_thread(weak));
        if spawned.is_err() {
            // No thread to be had: fall back to being polled again.
            w.running = false;
            waker.wake_by_ref();
        }
    }
    drop(w);
    src.wake.notify_one();
}

/// Removes a waiter (its future completed or was dropped).
pub(crate) fn unregister(token: u64) {
    let src = source();
    lock(src).list.retain(|e| e.0 != token);
}

/// Drives the engine while tasks wait, waking each whose request finished.
fn progress_thread(rt: Weak<Runtime>) {
    let src = source();
    let mut ids: Vec<(u64, ReqId)> = Vec::new();
    let mut done: Vec<u64> = Vec::new();
    let mut wakers: Vec<Waker> = Vec::new();
    let mut backoff = None;
    loop {
        {
            let mut w = lock(src);
            while w.list.is_empty() {
                w = src.wake.wait(w).unwrap_or_else(|p| p.into_inner());
            }
            ids.clear();
            ids.extend(w.list.iter().map(|e| (e.0, e.1)));
        }
        let Some(rt) = rt.upgrade().filter(|_| !crate::runtime::is_finalized()) else {
            lock(src).running = false;
            return;
        };
        let backoff = backoff.get_or_insert_with(|| {
            Backoff::new(WaitPolicy {
                spin: 64,
                inner_spin: 1,
                yields: 64,
                max_sleep_us: rt.wait.max_sleep_us,
                // Socket data ends its sleeps early; it still spins and yields first.
                wakeup: rt.wait.wakeup,
                wakeup_only: false,
            })
        });
        done.clear();
        let worked = rt.engine.with(|e| {
            if crate::runtime::is_finalized() {
                return 0;
            }
            e.enter("await");
            let n = e.progress();
            done.extend(ids.iter().filter(|(_, id)| e.is_done(*id)).map(|(t, _)| *t));
            n
        });
        let parked = rt.engine.run_parked();
        drop(rt);
        if !done.is_empty() {
            let mut w = lock(src);
            w.list.retain_mut(|e| {
                if done.contains(&e.0) {
                    wakers.push(e.2.clone());
                    false
                } else {
                    true
                }
            });
            drop(w);
            // Woken outside the lock: a waker may poll the task at once.
            wakers.drain(..).for_each(Waker::wake);
        }
        if worked > 0 || parked || !done.is_empty() {
            backoff.reset();
        }
        backoff.snooze();
    }
}

/// A receive that owns its vector, for tasks that must be `Send + 'static` (`tokio::spawn`):
/// awaiting it gives the vector back with the status. Made by
/// [`Communicator::immediate_receive_owned`].
#[must_use = "a receive must be awaited"]
pub struct OwnedReceive<T: Equivalence> {
    /// Completed (by the await or by its drop) before `buf` is handed back or freed: fields
    /// drop in declaration order.
    req: Option<SendRequest<'static, 'static>>,
    buf: Vec<T>,
}

impl<L: ThreadLevel> Communicator<L> {
    /// Starts a receive into `buf` (`MPI_Irecv`) that owns it: the result is `Send` and
    /// `'static`, so it can be awaited in a spawned task, and yields `(buf, status)`. Dropped
    /// early, it cancels the receive if it has not matched (otherwise waits for it).
    /// Errors: as [`immediate_receive_into`](Self::immediate_receive_into), and
    /// [`ErrorClass::Other`] below [`Serialized`](crate::Serialized) (see
    /// [`Request::into_send`]).
    pub fn immediate_receive_owned<T: Equivalence>(
        &self,
        mut buf: Vec<T>,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<OwnedReceive<T>> {
        if !self.rt.level.needs_lock() {
            return Err(Error::new(
                ErrorClass::Other,
                format!(
                    "immediate_receive_owned: a request cannot leave its thread at thread level {:?}",
                    self.rt.level
                ),
            ));
        }
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut buf[..]);
        // SAFETY: the vector's heap memory stays allocated and untouched until the receive
        // completes: `OwnedReceive` never reads, resizes or frees `buf` before `req` has
        // completed (the await takes it back only after completion; on drop `req` goes first
        // and waits or cancels); moving the vector does not move its heap memory; and a
        // leaked `OwnedReceive` leaks the vector with it.
        let start = unsafe {
            self.start_receive("immediate_receive_owned", bytes, source.into(), tag.into())?
        };
        let req = Request::new(
            &self.rt,
            start,
            std::mem::size_of::<T>(),
            crate::static_scope(),
        );
        Ok(OwnedReceive {
            req: Some(req.into_send()?),
            buf,
        })
    }
}

// Nothing is pinned structurally: the vector is only moved out once complete.
impl<T: Equivalence> Unpin for OwnedReceive<T> {}

impl<T: Equivalence> std::future::Future for OwnedReceive<T> {
    type Output = Result<(Vec<T>, Status)>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        let this = self.get_mut();
        let Some(req) = this.req.as_mut() else {
            return Poll::Ready(Err(Error::new(
                ErrorClass::Request,
                "await: the owned receive was already awaited to completion",
            )));
        };
        match std::future::Future::poll(std::pin::Pin::new(req), cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(r) => {
                // Complete: the engine is done with the vector.
                this.req = None;
                Poll::Ready(r.map(|st| (std::mem::take(&mut this.buf), st)))
            }
        }
    }
}
