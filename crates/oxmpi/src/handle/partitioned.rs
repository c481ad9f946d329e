//! Partitioned communication (`MPI_Psend_init`, `MPI_Precv_init`, `MPI_Pready`,
//! `MPI_Parrived`; MPI-5.0 §4): a persistent send whose buffer is filled in partitions, each
//! marked ready (`MPI_Pready`, from any thread) once written, and a persistent receive that
//! tells which partitions have arrived.
//!
//! The message goes as one point-to-point message once the last partition is ready, and
//! every partition of the receive arrives with it. It travels on the communicator's
//! collective context with the tag mapped below zero (`i32::MIN + tag`, never a wildcard
//! since tags stop at [`TAG_UB`](crate::TAG_UB)), so partitioned operations match only each
//! other, in the order they start on each (communicator, peer, tag), as the standard's
//! initialization order asks when each side starts its requests in that order.
//!
//! Each start runs as an engine schedule (the request completes when it finishes): the send
//! waits for the last [`pready`] and then sends; the receive posts its receive at start and
//! records its arrival for [`Partitioned::arrived`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::request::{recv_op, send_op, PersistentOp, SendMode};
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::engine::{Advance, Engine, RecvStart, Schedule, SendMode as EngineSendMode};
use crate::p2p::matching::{ANY_SOURCE, ANY_TAG};
use crate::p2p::request::{ReqId, Status};
use crate::p2p::wire::Envelope;

/// Every live partitioned request by its id, for threads other than the one whose request
/// table holds it (requests tables are per thread in the C layer; the threads that fill or
/// read partitions are usually others).
static SHARED: Mutex<Vec<(u64, Weak<Partitioned>)>> = Mutex::new(Vec::new());

/// Makes `p`, whose request id is `raw`, reachable from other threads; entries of freed
/// requests are dropped.
pub(crate) fn share(raw: u64, p: &Arc<Partitioned>) {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    shared.retain(|(_, w)| w.strong_count() > 0);
    shared.push((raw, Arc::downgrade(p)));
}

/// The live partitioned request with id `raw`, if exactly one has it (ids are unique per
/// thread's table only: two tables' requests may share one, and then neither is guessed).
pub(crate) fn shared(raw: u64) -> Option<Arc<Partitioned>> {
    let shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let mut live = shared
        .iter()
        .filter(|(r, _)| *r == raw)
        .filter_map(|(_, w)| w.upgrade());
    let first = live.next()?;
    live.next().is_none().then_some(first)
}

/// The internal tag of user tag `tag` (`0..=TAG_UB`): below zero, never `ANY_TAG`.
fn wire_tag(tag: i32) -> i32 {
    i32::MIN + tag
}

/// One partitioned request: its operation and the state of its current start.
#[derive(Debug)]
pub(crate) struct Partitioned {
    /// A standard-mode [`PersistentOp::Send`] or a [`PersistentOp::Recv`], on the collective
    /// context with the tag mapped below zero.
    op: PersistentOp,
    /// The user's tag (statuses report it, not the wire's).
    tag: i32,
    /// Which partitions are marked ready in this start (sends).
    marks: Box<[AtomicBool]>,
    /// Partitions not yet ready in this start (sends).
    missing: AtomicUsize,
    /// Every partition is ready and the data may go (sends).
    go: AtomicBool,
    /// The message has arrived in this start (receives).
    done: AtomicBool,
    /// Its status, once arrived.
    status: Mutex<Status>,
    /// Started and not yet completed.
    active: AtomicBool,
}

// SAFETY: `op` is only ever a `Send` or a `Recv` (made by `Partitioned::send`/`recv`), whose
// raw buffer pointers are only addresses here; the operation reads or writes them through
// the engine, under the persistent-request contract (the buffer stays valid while the
// request lives), from whichever thread drives the engine.
unsafe impl Send for Partitioned {}
// SAFETY: as above; every field changed after creation is atomic.
unsafe impl Sync for Partitioned {}

impl Partitioned {
    /// A partitioned send of `len` bytes at `buf` in `partitions` partitions to rank `dest`
    /// of `comm` with tag `tag`.
    pub(crate) fn send<L: crate::ThreadLevel>(
        comm: &crate::Communicator<L>,
        call: &str,
        buf: *const u8,
        len: usize,
        partitions: usize,
        dest: i32,
        tag: i32,
    ) -> Result<Partitioned> {
        let mut op = send_op(comm, call, SendMode::Standard, buf, len, dest, tag)?;
        if let PersistentOp::Send { env, .. } = &mut op {
            env.ctx += 1;
            env.tag = wire_tag(tag);
        }
        Ok(Partitioned::new(op, tag, partitions))
    }

    /// A partitioned receive of up to `cap` bytes into `buf` in `partitions` partitions
    /// from rank `source` of `comm` with tag `tag` (no wildcards: the standard has none).
    pub(crate) fn recv<L: crate::ThreadLevel>(
        comm: &crate::Communicator<L>,
        call: &str,
        buf: *mut u8,
        cap: usize,
        partitions: usize,
        source: i32,
        tag: i32,
    ) -> Result<Partitioned> {
        let mut op = recv_op(comm, call, buf, cap, source.into(), tag.into())?;
        if let PersistentOp::Recv { ctx, src, tag, .. } = &mut op {
            let wildcard = if *src == ANY_SOURCE {
                Some((ErrorClass::Rank, "source (no MPI_ANY_SOURCE)"))
            } else if *tag == ANY_TAG {
                Some((ErrorClass::Tag, "tag (no MPI_ANY_TAG)"))
            } else {
                None
            };
            if let Some((class, what)) = wildcard {
                return Err(Error::new(
                    class,
                    format!("{call}: a partitioned receive names its {what}"),
                ));
            }
            *ctx += 1;
            *tag = wire_tag(*tag);
        }
        Ok(Partitioned::new(op, tag, partitions))
    }

    fn new(op: PersistentOp, tag: i32, partitions: usize) -> Partitioned {
        Partitioned {
            op,
            tag,
            marks: (0..partitions).map(|_| AtomicBool::new(false)).collect(),
            missing: AtomicUsize::new(partitions),
            go: AtomicBool::new(false),
            done: AtomicBool::new(false),
            status: Mutex::new(Status::default()),
            active: AtomicBool::new(false),
        }
    }

    /// Whether this is a partitioned send.
    pub(crate) fn is_send(&self) -> bool {
        matches!(self.op, PersistentOp::Send { .. })
    }

    /// Starts it: clears the marks and runs its schedule, whose request completes when the
    /// message has gone (send) or arrived (receive).
    ///
    /// # Safety
    /// The buffer must be valid (for reads of a send, for exclusive writes of a receive)
    /// until the started operation completes.
    pub(crate) unsafe fn start(self: &Arc<Self>, e: &mut Engine) -> Result<RecvStart> {
        for m in self.marks.iter() {
            m.store(false, Ordering::Relaxed);
        }
        self.missing.store(self.marks.len(), Ordering::Relaxed);
        self.done.store(false, Ordering::Relaxed);
        self.go.store(self.marks.is_empty(), Ordering::Release);
        self.active.store(true, Ordering::Release);
        let s: Box<dyn Schedule> = match self.op {
            PersistentOp::Send {
                buf, len, to, env, ..
            } => Box::new(SendSchedule {
                p: self.clone(),
                buf,
                len,
                to,
                env,
                sent: None,
            }),
            PersistentOp::Recv {
                buf,
                cap,
                ctx,
                src,
                tag,
                world_src,
            } => {
                // SAFETY: forwarded from our caller.
                let posted = unsafe { e.irecv_from(buf, cap, ctx, src, tag, world_src) };
                let posted = match posted {
                    Ok(p) => p,
                    Err(err) => {
                        self.active.store(false, Ordering::Release);
                        return Err(err);
                    }
                };
                Box::new(RecvSchedule {
                    p: self.clone(),
                    posted,
                    status: Status::default(),
                })
            }
            PersistentOp::Coll(_) | PersistentOp::Part(_) => {
                self.active.store(false, Ordering::Release);
                return Err(Error::new(
                    ErrorClass::Intern,
                    "partitioned start: not a send or a receive",
                ));
            }
        };
        let id = e.start_schedule(s);
        if id.is_err() {
            self.active.store(false, Ordering::Release);
        }
        Ok(RecvStart::Pending(id?))
    }

    /// Marks partitions `parts` of a started send ready (`MPI_Pready`, `_range`, `_list`).
    /// `before_last` runs once, by the call that marks the last partition, before the data
    /// may go (a staged send packs its buffer there). Errors: not a started send
    /// ([`ErrorClass::Request`]), a partition out of range or marked twice
    /// ([`ErrorClass::Arg`]); partitions before the bad one stay marked.
    pub(crate) fn pready(
        &self,
        call: &str,
        parts: impl IntoIterator<Item = i64>,
        before_last: &mut dyn FnMut(),
    ) -> Result<()> {
        if !self.is_send() || !self.active.load(Ordering::Acquire) {
            return Err(Error::new(
                ErrorClass::Request,
                format!("{call}: the request is not an active partitioned send"),
            ));
        }
        for part in parts {
            let mark = usize::try_from(part)
                .ok()
                .and_then(|i| self.marks.get(i))
                .ok_or_else(|| {
                    Error::new(
                        ErrorClass::Arg,
                        format!(
                            "{call}: partition {part} is not one of the request's {}",
                            self.marks.len()
                        ),
                    )
                })?;
            if mark.swap(true, Ordering::AcqRel) {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("{call}: partition {part} is already marked ready"),
                ));
            }
            if self.missing.fetch_sub(1, Ordering::AcqRel) == 1 {
                before_last();
                self.go.store(true, Ordering::Release);
            }
        }
        Ok(())
    }

    /// Whether partition `part` of this receive has arrived (`MPI_Parrived`), with the
    /// message's status if it has: an inactive request's have (with an empty status). The
    /// caller makes progress first.
    pub(crate) fn arrived(&self, call: &str, part: i64) -> Result<Option<Status>> {
        if self.is_send() {
            return Err(Error::new(
                ErrorClass::Request,
                format!("{call}: the request is a partitioned send, not a receive"),
            ));
        }
        if usize::try_from(part).map_or(true, |i| i >= self.marks.len()) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "{call}: partition {part} is not one of the request's {}",
                    self.marks.len()
                ),
            ));
        }
        if self.done.load(Ordering::Acquire) {
            return Ok(Some(*self.status.lock().unwrap_or_else(|p| p.into_inner())));
        }
        Ok((!self.active.load(Ordering::Acquire)).then(Status::default))
    }
}

/// A started partitioned send: waits for the last partition, then sends `len` bytes at
/// `buf` to world rank `to` (`None`: `MPI_PROC_NULL`).
#[derive(Debug)]
struct SendSchedule {
    p: Arc<Partitioned>,
    buf: *const u8,
    len: usize,
    to: Option<u32>,
    env: Envelope,
    /// The send, once started (`Some(None)`: it completed as it started).
    sent: Option<Option<ReqId>>,
}

impl Schedule for SendSchedule {
    fn advance(&mut self, e: &mut Engine) -> Result<Advance> {
        if self.sent.is_none() {
            if !self.p.go.load(Ordering::Acquire) {
                return Ok(Advance::Running);
            }
            self.sent = Some(match self.to {
                None => None,
                // SAFETY: the persistent-request contract keeps `buf` readable until the
                // operation completes, which is after this send does.
                Some(to) => unsafe {
                    e.isend(EngineSendMode::Standard, self.buf, self.len, to, self.env)?
                },
            });
        }
        match self.sent {
            Some(Some(id)) => match e.test(id) {
                None => Ok(Advance::Running),
                Some(st) => finish(&self.p, st.error),
            },
            _ => finish(&self.p, None),
        }
    }

    fn run_unlocked(&mut self) -> std::thread::Result<()> {
        Ok(())
    }
}

/// A started partitioned receive: its posted receive, then its status.
#[derive(Debug)]
struct RecvSchedule {
    p: Arc<Partitioned>,
    posted: RecvStart,
    status: Status,
}

impl Schedule for RecvSchedule {
    fn advance(&mut self, e: &mut Engine) -> Result<Advance> {
        let st = match self.posted {
            RecvStart::Done(st) => st,
            RecvStart::Pending(id) => match e.test(id) {
                None => return Ok(Advance::Running),
                Some(st) => st,
            },
        };
        self.posted = RecvStart::Done(st);
        self.status = Status {
            tag: self.p.tag,
            ..st
        };
        *self.p.status.lock().unwrap_or_else(|p| p.into_inner()) = self.status;
        self.p.done.store(true, Ordering::Release);
        finish(&self.p, st.error)
    }

    fn run_unlocked(&mut self) -> std::thread::Result<()> {
        Ok(())
    }

    fn status(&self) -> Status {
        self.status
    }
}

/// Ends a start: inactive again, failed with `error` if there is one.
fn finish(p: &Partitioned, error: Option<ErrorClass>) -> Result<Advance> {
    p.active.store(false, Ordering::Release);
    match error {
        None => Ok(Advance::Done),
        Some(c) => Err(Error::new(
            c,
            "partitioned communication: the transfer failed",
        )),
    }
}
