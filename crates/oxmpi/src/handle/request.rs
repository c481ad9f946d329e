//! Requests as plain ids (`MPI_Request`): start, test, wait, cancel, get the status without
//! freeing, free while active, persistent requests of every send mode and receives, and
//! completion of many at once with each request's own error.
//!
//! Two levels live here:
//! - engine-level functions on the engine's request ids (crate-private): the one blocking wait
//!   loop, the one call of `Engine::progress`, and starting a persistent operation. The typed
//!   Rust API ([`crate::request`], [`crate::point_to_point`]) waits through them.
//! - [`Requests`], the table a C layer drives: ids are [`RequestId`]s, `Copy` and 8 bytes.
//!
//! A status carries its operation's own error class ([`Status::error`]); calls that complete
//! several requests return [`ErrorClass::InStatus`] when any of them failed, as
//! `MPI_ERR_IN_STATUS` does, and the per-request class is in each entry's status.
//!
//! # Standard sections
//! MPI-5.0 §3.7 (nonblocking communication), §3.8.4 (cancel), §3.9 (persistent requests).

use std::sync::Arc;

use crate::comm::Communicator;
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::engine::{Engine, RecvStart, SendMode as EngineSendMode};
use crate::p2p::matching::{ANY_SOURCE, ANY_TAG};
use crate::p2p::progress::Backoff;
use crate::p2p::request::ReqId;
pub use crate::p2p::request::Status;
use crate::p2p::wire::Envelope;
use crate::point_to_point::{Source, Tag};
use crate::runtime::Runtime;
use crate::threading::ThreadLevel;

mod inter;

// ---------------------------------------------------------------------------------------------
// Engine level: progress, the fatal path, the wait loop.
// ---------------------------------------------------------------------------------------------

/// Advances the engine. The only call of `Engine::progress` in the request layer. Errors land
/// in the statuses of the requests they belong to; a fault that breaks communication is the
/// engine's to act on (it ends the job, or fails the affected requests).
#[inline]
fn progress(_rt: &Runtime, e: &mut Engine) -> usize {
    e.progress()
}

/// The blocking wait: calls `poll` until it yields, spinning first, then backing off so that
/// more ranks than cores still progress. `poll` reports whether it did any work. Between
/// polls, with the engine unlocked, it runs parked user steps (user reductions of nonblocking
/// collectives), which this wait or a peer's may depend on.
pub(crate) fn wait_loop<R>(rt: &Runtime, mut poll: impl FnMut() -> (Option<R>, bool)) -> R {
    // Most waits in a window of requests find theirs complete at the first poll: the back-off
    // (a copy of the wait policy) is built only once a wait really waits.
    let (done, _) = poll();
    // Also drops a finished schedule's user operation outside the engine.
    rt.engine.run_parked();
    if let Some(r) = done {
        return r;
    }
    let mut backoff = Backoff::new(rt.wait);
    loop {
        backoff.snooze();
        let (done, worked) = poll();
        let parked = rt.engine.run_parked();
        if let Some(r) = done {
            return r;
        }
        if worked || parked {
            backoff.reset();
        }
    }
}

/// Waits until `poll`, run under the engine between progress passes, yields.
pub(crate) fn wait_engine_until<R>(
    rt: &Runtime,
    mut poll: impl FnMut(&mut Engine) -> Option<R>,
) -> R {
    wait_loop(rt, || {
        rt.engine.with(|e| {
            if let Some(r) = poll(e) {
                return (Some(r), true);
            }
            // Spin on the arrival word alone before paying for a full progress pass; bounded
            // so that, under a lock, other threads get their turn. With only schedules in
            // flight, spin on them instead (a persistent shared-memory collective's peers
            // arrive in its channel, which the full pass would poll no sooner).
            let mut k = 0;
            while k < rt.wait.inner_spin {
                if !e.quiet() {
                    if !e.only_schedules() {
                        break;
                    }
                    if e.step_schedules() > 0 {
                        if let Some(r) = poll(e) {
                            return (Some(r), true);
                        }
                    }
                }
                k += 1;
            }
            let n = progress(rt, e);
            (poll(e), n > 0)
        })
    })
}

/// Waits for engine request `id` and frees it. `id` must be live and owned by the caller.
/// A fault found while waiting names `call` (the MPI call that waits).
pub(crate) fn wait_id(rt: &Runtime, id: ReqId, call: &'static str) -> Status {
    wait_engine_until(rt, |e| {
        e.enter(call);
        e.test(id)
    })
}

/// One progress pass, then frees and returns `id`'s status if it has completed.
pub(crate) fn test_id(rt: &Runtime, id: ReqId) -> Option<Status> {
    let st = rt.engine.with(|e| {
        if let Some(st) = e.test(id) {
            return Some(st);
        }
        progress(rt, e);
        e.test(id)
    });
    // A parked user step may be what this request (or a peer) waits for.
    rt.engine.run_parked();
    st
}

/// One progress pass, then runs `f` under the engine (completion checks of many requests).
pub(crate) fn progress_then<R>(rt: &Runtime, f: impl FnOnce(&mut Engine) -> R) -> R {
    let r = rt.engine.with(|e| {
        progress(rt, e);
        f(e)
    });
    rt.engine.run_parked();
    r
}

/// Cancels receive `id` if it has not matched, else waits for it: the caller's buffer is
/// free once this returns.
pub(crate) fn cancel_or_wait(rt: &Runtime, id: ReqId) -> Status {
    rt.engine.with(|e| e.cancel(id));
    wait_id(rt, id, "cancel")
}

/// How a send completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    /// `MPI_Send`: complete once the buffer may be reused.
    Standard,
    /// `MPI_Ssend`: complete once the receive has matched.
    Synchronous,
    /// `MPI_Rsend`: the receive must be posted; oxmpi uses the standard protocol.
    Ready,
    /// `MPI_Bsend`: copied into the attached buffer at once.
    Buffered,
}

/// What a persistent request does each time it starts (`MPI_*_init`).
#[derive(Debug, Clone)]
pub(crate) enum PersistentOp {
    /// Send `len` bytes at `buf` to world rank `to` (`None`: `PROC_NULL`).
    Send {
        mode: SendMode,
        buf: *const u8,
        len: usize,
        to: Option<u32>,
        env: Envelope,
    },
    /// Receive up to `cap` bytes into `buf` from `src` (communicator rank or wildcard;
    /// `world_src` its world rank when it names one).
    Recv {
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        world_src: Option<u32>,
    },
    /// Run a planned collective (`MPI_Bcast_init` and the other persistent collectives).
    Coll(crate::coll::persistent::Kept),
    /// A partitioned send or receive (`MPI_Psend_init`, `MPI_Precv_init`).
    Part(std::sync::Arc<super::partitioned::Partitioned>),
}

/// Starts `op`.
///
/// # Safety
/// The op's buffer must be valid (for reads of a send, for exclusive writes of a receive)
/// until the started operation completes.
pub(crate) unsafe fn start_op(rt: &Runtime, op: &PersistentOp) -> Result<RecvStart> {
    match *op {
        PersistentOp::Send { to: None, .. } => Ok(RecvStart::Done(Status::default())),
        PersistentOp::Send {
            mode: SendMode::Buffered,
            buf,
            len,
            to: Some(to),
            env,
        } => {
            // SAFETY: the caller guarantees `buf` is valid for `len` bytes; the data is copied
            // before this returns.
            let data = unsafe { bytes(buf, len) };
            rt.engine.with(|e| e.bsend(data, to, env))?;
            Ok(RecvStart::Done(sent(len)))
        }
        PersistentOp::Send {
            mode,
            buf,
            len,
            to: Some(to),
            env,
        } => {
            let mode = match mode {
                SendMode::Synchronous => EngineSendMode::Synchronous,
                _ => EngineSendMode::Standard,
            };
            // SAFETY: forwarded from our caller.
            match rt
                .engine
                .with(|e| unsafe { e.isend(mode, buf, len, to, env) })?
            {
                None => Ok(RecvStart::Done(sent(len))),
                Some(id) => Ok(RecvStart::Pending(id)),
            }
        }
        PersistentOp::Recv {
            buf,
            cap,
            ctx,
            src,
            tag,
            world_src,
        } => {
            // SAFETY: forwarded from our caller.
            rt.engine
                .with(|e| unsafe { e.irecv_from(buf, cap, ctx, src, tag, world_src) })
        }
        PersistentOp::Coll(ref c) => c.start(rt),
        // SAFETY: forwarded from our caller.
        PersistentOp::Part(ref p) => rt.engine.with(|e| unsafe { p.start(e) }),
    }
}

/// The status of a send of `len` bytes that completed.
fn sent(len: usize) -> Status {
    Status {
        bytes: len as u64,
        ..Status::default()
    }
}

/// A request that is already complete (one-sided operations finish as they start).
pub(crate) fn completed(rt: &Runtime) -> RequestId {
    RequestId::engine(rt.engine.with(|e| e.completed(sent(0))))
}

/// `len` bytes at `buf` (an empty slice for `len == 0`, whatever `buf` is).
///
/// # Safety
/// `buf` valid for reads of `len` bytes for `'a`.
unsafe fn bytes<'a>(buf: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: caller contract.
    unsafe { std::slice::from_raw_parts(buf, len) }
}

/// The status of a null or inactive request (MPI's "empty status").
pub fn empty_status() -> Status {
    Status {
        source: ANY_SOURCE,
        tag: ANY_TAG,
        ..Status::default()
    }
}

/// Turns a completed operation's status into a result: its own error class stays, with a
/// message naming `call`.
#[inline]
pub(crate) fn check(call: &str, st: Status) -> Result<Status> {
    match st.error {
        None => Ok(st),
        Some(c) => Err(status_error(call, c, &st)),
    }
}

/// The error [`check`] returns for a failed status (out of line: waits inline the success).
#[cold]
#[inline(never)]
fn status_error(call: &str, class: ErrorClass, st: &Status) -> Error {
    match class {
        ErrorClass::Truncate => Error::new(
            ErrorClass::Truncate,
            format!(
                "{call}: message from rank {} (tag {}) is longer than the receive buffer ({} bytes kept)",
                st.source, st.tag, st.bytes
            ),
        ),
        c => Error::new(c, format!("{call}: the operation failed with class {c:?}")),
    }
}

// ---------------------------------------------------------------------------------------------
// Ids: the table a C layer drives.
// ---------------------------------------------------------------------------------------------

/// A request as a plain id (`MPI_Request`): `Copy`, 8 bytes, [`RequestId::NULL`] for
/// `MPI_REQUEST_NULL`. It means something only to the [`Requests`] that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId(u64);

const PERSISTENT: u64 = 1 << 63;

impl RequestId {
    /// `MPI_REQUEST_NULL`.
    pub const NULL: RequestId = RequestId(0);

    /// A send that completed as it started (an eager send whose data went out at once, a
    /// buffered send, a send to `MPI_PROC_NULL`): waiting for it returns at once with a send's
    /// status, and it holds nothing, so every such send shares this one id, as MPICH's
    /// lightweight requests do. The most common nonblocking send then costs no request slot,
    /// and waiting for it no pass through the engine (msgrate through the C ABI). No table
    /// makes an id below `2^32` (see [`slot`](Self::slot)), so it is no other request's.
    pub const SENT: RequestId = RequestId(u32::MAX as u64);

    /// Whether this is [`RequestId::NULL`].
    pub fn is_null(self) -> bool {
        self == Self::NULL
    }

    /// The id as an integer (what a C handle stores).
    pub fn to_raw(self) -> u64 {
        self.0
    }

    /// The id a [`to_raw`](Self::to_raw) value stands for.
    pub fn from_raw(raw: u64) -> RequestId {
        RequestId(raw)
    }

    /// The slot this id names, or `None` for [`RequestId::NULL`] and values no table makes.
    /// Engine slots are unique among the process's live requests that are not persistent;
    /// persistent slots only within one [`Requests`] table. Slots are reused once the
    /// request is gone, so a table keyed by them stays as small as the peak of live requests
    /// (the C layer numbers Fortran requests this way).
    pub fn slot(self) -> Option<IdSlot> {
        let hi = (self.0 >> 32) as u32;
        if self == Self::SENT {
            None
        } else if self.0 & PERSISTENT != 0 {
            Some(IdSlot::Persistent(hi & !(1 << 31)))
        } else {
            hi.checked_sub(1).map(IdSlot::Engine)
        }
    }

    pub(crate) fn engine(id: ReqId) -> RequestId {
        // `idx + 1` keeps every engine id distinct from NULL.
        RequestId(((id.idx() as u64 + 1) << 32) | id.gen() as u64)
    }

    fn persistent(idx: u32, gen: u32) -> RequestId {
        RequestId(PERSISTENT | ((idx as u64) << 32) | gen as u64)
    }

    fn kind(self) -> Kind {
        let (hi, lo) = ((self.0 >> 32) as u32, self.0 as u32);
        if self.0 == 0 {
            Kind::Null
        } else if self == Self::SENT {
            Kind::Sent
        } else if self.0 & PERSISTENT != 0 {
            Kind::Persistent {
                idx: hi & !(1 << 31),
                gen: lo,
            }
        } else {
            // An id below 2^32 no table made: slot `u32::MAX`, which no live request has.
            Kind::Engine(ReqId::new(hi.wrapping_sub(1), lo))
        }
    }
}

/// What [`RequestId::slot`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdSlot {
    /// A slot of the point-to-point engine (nonblocking operations).
    Engine(u32),
    /// A slot of the [`Requests`] table's persistent requests.
    Persistent(u32),
}

enum Kind {
    Null,
    /// [`RequestId::SENT`].
    Sent,
    Engine(ReqId),
    Persistent {
        idx: u32,
        gen: u32,
    },
}

/// Where a started persistent request stands.
#[derive(Debug, Clone, Copy)]
enum Active {
    Done(Status),
    Pending(ReqId),
}

#[derive(Debug)]
struct PSlot {
    gen: u32,
    op: Option<PersistentOp>,
    active: Option<Active>,
}

/// Starts a send of `len` bytes at `buf` to rank `dest` of `comm` (`MPI_Isend`, `MPI_Issend`,
/// `MPI_Irsend`, `MPI_Ibsend`), as [`Requests::isend`] does: a nonpersistent request lives in
/// the engine, so starting one needs no table.
///
/// # Safety
/// `buf` must be valid for reads of `len` bytes until the request completes.
pub unsafe fn isend<L: ThreadLevel>(
    comm: &Communicator<L>,
    mode: SendMode,
    buf: *const u8,
    len: usize,
    dest: i32,
    tag: i32,
) -> Result<RequestId> {
    let mode = match mode {
        SendMode::Standard | SendMode::Ready => EngineSendMode::Standard,
        SendMode::Synchronous => EngineSendMode::Synchronous,
        SendMode::Buffered => {
            let op = send_op(comm, "isend", mode, buf, len, dest, tag)?;
            // SAFETY: forwarded from our caller.
            unsafe { start_op(&comm.rt, &op)? };
            return Ok(RequestId::SENT);
        }
    };
    // The typed API's own start, with no operation record in between (msgrate's `MPI_Isend`).
    // SAFETY: forwarded from our caller.
    Ok(
        match unsafe { comm.start_send_raw("isend", mode, buf, len, dest, tag)? } {
            Some(Some(r)) => RequestId::engine(r),
            None | Some(None) => RequestId::SENT,
        },
    )
}

/// Starts a receive into `cap` bytes at `buf` (`MPI_Irecv`), as [`Requests::irecv`] does,
/// with no table (see [`isend`]).
///
/// # Safety
/// `buf` must be valid for writes of `cap` bytes, and not otherwise used, until the request
/// completes.
pub unsafe fn irecv<L: ThreadLevel>(
    comm: &Communicator<L>,
    buf: *mut u8,
    cap: usize,
    source: Source,
    tag: Tag,
) -> Result<RequestId> {
    // SAFETY: forwarded from our caller.
    let start = unsafe { comm.start_receive_raw("irecv", buf, cap, source, tag)? };
    Ok(id_of(&comm.rt, start))
}

/// The id of an operation as it started.
fn id_of(rt: &Runtime, start: RecvStart) -> RequestId {
    match start {
        RecvStart::Pending(r) => RequestId::engine(r),
        // Every operation gets an id, even one that finished as it started, so that its
        // status waits in the engine's slab like any other.
        RecvStart::Done(st) => RequestId::engine(rt.engine.with(|e| e.completed(st))),
    }
}

/// What [`Requests::test_any`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnyDone {
    /// Every request is null or inactive (`MPI_UNDEFINED`).
    Inactive,
    /// Request `index` completed with this status (its own error in [`Status::error`]).
    Done(usize, Status),
    /// None has completed yet.
    Pending,
}

/// The requests of the handle layer, driven through [`RequestId`]s: the C layer keeps one.
/// It carries the thread level `L`, so that below `Serialized` it cannot leave its thread.
///
/// ```no_run
/// use oxmpi::handle::request::{RequestId, Requests, SendMode};
/// let universe = oxmpi::init()?;
/// let world = universe.world();
/// let mut reqs = Requests::new(&world);
/// let data = [1u8, 2, 3];
/// let mut got = [0u8; 3];
/// // SAFETY: both buffers outlive the requests, which are waited for below.
/// let mut ids = unsafe {
///     [
///         reqs.irecv(&world, got.as_mut_ptr(), 3, world.rank().into(), 7.into())?,
///         reqs.isend(&world, SendMode::Standard, data.as_ptr(), 3, world.rank(), 7)?,
///     ]
/// };
/// let mut st = [oxmpi::Status::default(); 2];
/// reqs.wait_all(&mut ids, &mut st)?;
/// assert!(ids.iter().all(|id| id.is_null()) && got == data);
/// # Ok::<(), oxmpi::Error>(())
/// ```
/// At `Single` the table drives an unlocked engine, so it cannot leave its thread:
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// let universe = oxmpi::init().unwrap();
/// needs_send(oxmpi::handle::request::Requests::new(&universe.world()));
/// ```
#[derive(Debug)]
pub struct Requests<L: ThreadLevel> {
    rt: Arc<Runtime>,
    persistent: Vec<PSlot>,
    free: Vec<u32>,
    /// First generation of this table's slots: each table starts its own range, so that the
    /// ids of two tables' live requests rarely coincide (a partitioned request is found by
    /// its id from other threads, see `partitioned::shared`).
    gen_base: u32,
    /// Inside [`immediately`](Self::immediately): collectives start now instead of persisting.
    immediate: bool,
    _level: L::Marker,
}

impl<L: ThreadLevel> Requests<L> {
    /// A table for requests on the communicators of `comm`'s process.
    pub fn new(comm: &Communicator<L>) -> Self {
        static TABLES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        Requests {
            rt: comm.rt.clone(),
            persistent: Vec::new(),
            free: Vec::new(),
            gen_base: TABLES
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                .wrapping_mul(1 << 20),
            immediate: false,
            _level: L::Marker::default(),
        }
    }

    /// Starts a send of `len` bytes at `buf` to rank `dest` of `comm` (`MPI_Isend`,
    /// `MPI_Issend`, `MPI_Irsend`, `MPI_Ibsend`).
    ///
    /// # Safety
    /// `buf` must be valid for reads of `len` bytes until the request completes.
    pub unsafe fn isend(
        &mut self,
        comm: &Communicator<L>,
        mode: SendMode,
        buf: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
    ) -> Result<RequestId> {
        // SAFETY: forwarded from our caller.
        unsafe { isend(comm, mode, buf, len, dest, tag) }
    }

    /// Starts a receive into `cap` bytes at `buf` (`MPI_Irecv`).
    ///
    /// # Safety
    /// `buf` must be valid for writes of `cap` bytes, and not otherwise used, until the
    /// request completes.
    pub unsafe fn irecv(
        &mut self,
        comm: &Communicator<L>,
        buf: *mut u8,
        cap: usize,
        source: Source,
        tag: Tag,
    ) -> Result<RequestId> {
        // SAFETY: forwarded from our caller.
        unsafe { irecv(comm, buf, cap, source, tag) }
    }

    /// A request already complete with `st` (an operation with nothing to do, such as the
    /// receive of the message of a probe on `PROC_NULL`).
    pub fn completed(&mut self, st: Status) -> RequestId {
        self.id_of(RecvStart::Done(st))
    }

    /// Starts receiving matched message `m` into `cap` bytes at `buf` (`MPI_Imrecv`).
    ///
    /// # Safety
    /// `buf` must be valid for writes of `cap` bytes, and not otherwise used, until the
    /// request completes.
    pub unsafe fn imrecv(
        &mut self,
        m: crate::point_to_point::Message<L>,
        buf: *mut u8,
        cap: usize,
    ) -> Result<RequestId> {
        // SAFETY: forwarded from our caller.
        let into = unsafe { rw("imrecv", buf, cap)? };
        let (_, start) = m.start(into);
        Ok(self.id_of(start))
    }

    /// Starts a send of `send_len` bytes to `dest` and a receive into `cap` bytes at `recv`
    /// as one request (`MPI_Isendrecv`), which completes with the receive's status once
    /// both have completed.
    ///
    /// # Safety
    /// `send` must be valid for reads of `send_len` bytes, `recv` for writes of `cap` bytes
    /// (and not otherwise used), until the request completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn isendrecv(
        &mut self,
        comm: &Communicator<L>,
        send: *const u8,
        send_len: usize,
        dest: i32,
        send_tag: i32,
        recv: *mut u8,
        cap: usize,
        source: Source,
        recv_tag: Tag,
    ) -> Result<RequestId> {
        const CALL: &str = "isendrecv";
        let sop = send_op(
            comm,
            CALL,
            SendMode::Standard,
            send,
            send_len,
            dest,
            send_tag,
        )?;
        let rop = recv_op(comm, CALL, recv, cap, source, recv_tag)?;
        // SAFETY: forwarded from our caller.
        let r = unsafe { start_op(&self.rt, &rop)? };
        // SAFETY: forwarded from our caller.
        let s = match unsafe { start_op(&self.rt, &sop) } {
            Ok(s) => s,
            Err(e) => {
                // The receive must not outlive this call's failure: the buffer is the
                // caller's again once we return.
                if let RecvStart::Pending(id) = r {
                    cancel_or_wait(&self.rt, id);
                }
                return Err(e);
            }
        };
        let pair = SendRecv {
            send: Part::of(s),
            recv: Part::of(r),
        };
        let id = self.rt.engine.with(|e| e.start_schedule(Box::new(pair)))?;
        Ok(RequestId::engine(id))
    }

    /// A persistent send (`MPI_Send_init`, `MPI_Ssend_init`, `MPI_Rsend_init`,
    /// `MPI_Bsend_init`), inactive until [`start`](Self::start).
    ///
    /// # Safety
    /// `buf` must be valid for reads of `len` bytes whenever the request is active, until it
    /// is freed.
    pub unsafe fn send_init(
        &mut self,
        comm: &Communicator<L>,
        mode: SendMode,
        buf: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
    ) -> Result<RequestId> {
        let op = send_op(comm, "send_init", mode, buf, len, dest, tag)?;
        Ok(self.add_persistent(op))
    }

    /// A persistent receive (`MPI_Recv_init`), inactive until [`start`](Self::start).
    ///
    /// # Safety
    /// `buf` must be valid for writes of `cap` bytes, and not otherwise used, whenever the
    /// request is active, until it is freed.
    pub unsafe fn recv_init(
        &mut self,
        comm: &Communicator<L>,
        buf: *mut u8,
        cap: usize,
        source: Source,
        tag: Tag,
    ) -> Result<RequestId> {
        let op = recv_op(comm, "recv_init", buf, cap, source, tag)?;
        Ok(self.add_persistent(op))
    }

    /// A persistent partitioned send (`MPI_Psend_init`) of `len` bytes at `buf`, in
    /// `partitions` equal partitions, to rank `dest` with tag `tag`: inactive until
    /// [`start`](Self::start), then sent once every partition is marked ready
    /// ([`pready`](Self::pready)).
    ///
    /// # Safety
    /// `buf` must be valid for reads of `len` bytes whenever the request is active, until it
    /// is freed.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn psend_init(
        &mut self,
        comm: &Communicator<L>,
        buf: *const u8,
        len: usize,
        partitions: usize,
        dest: i32,
        tag: i32,
    ) -> Result<RequestId> {
        let p = super::partitioned::Partitioned::send(
            comm,
            "psend_init",
            buf,
            len,
            partitions,
            dest,
            tag,
        )?;
        Ok(self.add_partitioned(p))
    }

    /// A persistent partitioned receive (`MPI_Precv_init`) of up to `cap` bytes into `buf`,
    /// in `partitions` partitions, from rank `source` with tag `tag` (no wildcards).
    ///
    /// # Safety
    /// `buf` must be valid for writes of `cap` bytes, and not otherwise used, whenever the
    /// request is active, until it is freed.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn precv_init(
        &mut self,
        comm: &Communicator<L>,
        buf: *mut u8,
        cap: usize,
        partitions: usize,
        source: i32,
        tag: i32,
    ) -> Result<RequestId> {
        let p = super::partitioned::Partitioned::recv(
            comm,
            "precv_init",
            buf,
            cap,
            partitions,
            source,
            tag,
        )?;
        Ok(self.add_partitioned(p))
    }

    /// Adds partitioned request `p`, also where other threads find it by id.
    fn add_partitioned(&mut self, p: super::partitioned::Partitioned) -> RequestId {
        let p = std::sync::Arc::new(p);
        let id = self.add_persistent(PersistentOp::Part(p.clone()));
        super::partitioned::share(id.to_raw(), &p);
        id
    }

    /// The partitioned operation behind `id`: one of this table's, or else one another
    /// thread's table made (`MPI_Pready` and `MPI_Parrived` from the threads that fill and
    /// read the partitions).
    fn partitioned(
        &self,
        call: &str,
        id: RequestId,
    ) -> Result<std::sync::Arc<super::partitioned::Partitioned>> {
        match self.pslot(call, id).map(|slot| &self.persistent[slot].op) {
            Ok(Some(PersistentOp::Part(p))) => Ok(p.clone()),
            Ok(_) => Err(Error::new(
                ErrorClass::Request,
                format!("{call}: the request is not a partitioned one"),
            )),
            Err(e) => super::partitioned::shared(id.to_raw()).ok_or(e),
        }
    }

    /// Marks partitions `parts` of started partitioned send `id` ready (`MPI_Pready`,
    /// `MPI_Pready_range`, `MPI_Pready_list`); `before_last` runs once, before the data may
    /// go, in the call that marks the last one.
    pub fn pready(
        &mut self,
        call: &str,
        id: RequestId,
        parts: impl IntoIterator<Item = i64>,
        before_last: &mut dyn FnMut(),
    ) -> Result<()> {
        self.partitioned(call, id)?
            .pready(call, parts, before_last)?;
        // Let the message go now rather than at the next call that progresses.
        self.rt.engine.with(|e| e.progress());
        Ok(())
    }

    /// Whether partition `part` of partitioned receive `id` has arrived (`MPI_Parrived`),
    /// after making progress: the message's status if it has.
    pub fn parrived(&mut self, call: &str, id: RequestId, part: i64) -> Result<Option<Status>> {
        let p = self.partitioned(call, id)?;
        self.rt.engine.with(|e| e.progress());
        p.arrived(call, part)
    }

    /// Starts persistent request `id` (`MPI_Start`). Starting an active one is an error.
    pub fn start(&mut self, id: RequestId) -> Result<()> {
        let slot = self.pslot("start", id)?;
        let p = &mut self.persistent[slot];
        if p.active.is_some() {
            return Err(Error::new(
                ErrorClass::Request,
                "start: the persistent request is still active",
            ));
        }
        let op = p.op.as_ref().expect("live persistent slot holds its op");
        // SAFETY: the creator of the request vouched for its buffer while active.
        let start = unsafe { start_op(&self.rt, op)? };
        self.persistent[slot].active = Some(match start {
            RecvStart::Done(st) => Active::Done(st),
            RecvStart::Pending(r) => Active::Pending(r),
        });
        Ok(())
    }

    /// Starts every request of `ids` (`MPI_Startall`); stops at the first that fails.
    pub fn start_all(&mut self, ids: &[RequestId]) -> Result<()> {
        ids.iter().try_for_each(|&id| self.start(id))
    }

    /// Completes `id` if it has finished (`MPI_Test`): a nonpersistent request is freed and
    /// `id` becomes NULL, a persistent one becomes inactive. A null or inactive request gives
    /// the empty status at once. `Err` only for an id naming no request.
    pub fn test(&mut self, id: &mut RequestId) -> Result<Option<Status>> {
        self.complete(id, "test", test_id)
    }

    /// Blocks until `id` completes (`MPI_Wait`); as [`test`](Self::test) otherwise.
    pub fn wait(&mut self, id: &mut RequestId) -> Result<Status> {
        self.complete(id, "wait", |rt, r| Some(wait_id(rt, r, "wait")))
            .map(|st| st.expect("wait completes"))
    }

    /// Whether `id` is active: neither null nor an inactive persistent request (the ones
    /// `MPI_Request_get_status_any` and `_some` skip).
    pub fn is_active(&mut self, id: RequestId) -> Result<bool> {
        Ok(!matches!(self.engine_id("is_active", id)?, Target::Empty))
    }

    /// The status of `id` if it has completed, without freeing it
    /// (`MPI_Request_get_status`).
    pub fn get_status(&mut self, id: RequestId) -> Result<Option<Status>> {
        let r = match self.engine_id("get_status", id)? {
            Target::Empty => return Ok(Some(empty_status())),
            Target::Done(st) => return Ok(Some(st)),
            Target::Engine(r) => r,
        };
        let live = progress_then(&self.rt, |e| e.is_live(r).then(|| e.peek(r)));
        live.ok_or_else(|| stale("get_status"))
    }

    /// A generalized request (`MPI_Grequest_start`): an operation the program carries out
    /// itself, pending until [`grequest_complete`](Self::grequest_complete), then waited for,
    /// tested and freed like any other.
    pub fn grequest_start(&mut self) -> RequestId {
        RequestId::engine(self.rt.engine.with(|e| e.start_external()))
    }

    /// Completes generalized request `id` (`MPI_Grequest_complete`); [`ErrorClass::Request`]
    /// if it is no generalized request still pending.
    pub fn grequest_complete(&mut self, id: RequestId) -> Result<()> {
        let done = match id.kind() {
            Kind::Engine(r) => self.rt.engine.with(|e| e.complete_external(r)),
            _ => false,
        };
        if !done {
            return Err(Error::new(
                ErrorClass::Request,
                "grequest_complete: not a generalized request still pending",
            ));
        }
        Ok(())
    }

    /// Asks to cancel `id` (`MPI_Cancel`): a receive not yet matched completes as cancelled
    /// ([`Status::cancelled`]); anything else completes normally. Either way it must still be
    /// completed or freed. `MPI_REQUEST_NULL` is [`ErrorClass::Request`].
    pub fn cancel(&mut self, id: RequestId) -> Result<()> {
        if id.is_null() {
            return Err(Error::new(
                ErrorClass::Request,
                "cancel: the request is MPI_REQUEST_NULL",
            ));
        }
        if let Target::Engine(r) = self.engine_id("cancel", id)? {
            let live = self.rt.engine.with(|e| {
                let live = e.is_live(r);
                if live {
                    e.cancel(r);
                }
                live
            });
            if !live {
                return Err(stale("cancel"));
            }
        }
        Ok(())
    }

    /// Frees `id` and sets it to NULL (`MPI_Request_free`). An active operation goes on and
    /// is freed by the engine when it completes; its buffer must stay valid until then.
    pub fn free(&mut self, id: &mut RequestId) -> Result<()> {
        match id.kind() {
            Kind::Null => {
                return Err(Error::new(
                    ErrorClass::Request,
                    "request_free: the request is MPI_REQUEST_NULL",
                ))
            }
            Kind::Sent => {}
            Kind::Engine(r) => {
                if !self.rt.engine.with(|e| e.detach(r)) {
                    return Err(stale("request_free"));
                }
            }
            Kind::Persistent { .. } => {
                let slot = self.pslot("request_free", *id)?;
                let p = &mut self.persistent[slot];
                if let Some(Active::Pending(r)) = p.active.take() {
                    self.rt.engine.with(|e| e.detach(r));
                }
                p.op = None;
                self.free.push(slot as u32);
            }
        }
        *id = RequestId::NULL;
        Ok(())
    }

    /// Waits for every request (`MPI_Waitall`), writing each one's status to `statuses`.
    /// Returns [`ErrorClass::InStatus`] if any failed; each status then holds its own error
    /// class (an id naming no request gets [`ErrorClass::Request`]).
    pub fn wait_all(&mut self, ids: &mut [RequestId], statuses: &mut [Status]) -> Result<()> {
        check_lengths("wait_all", ids, statuses)?;
        for (id, st) in ids.iter_mut().zip(statuses.iter_mut()) {
            *st = self.wait(id).unwrap_or_else(|e| failed(e.class()));
        }
        in_status("wait_all", statuses)
    }

    /// Completes every request if all have finished (`MPI_Testall`) and returns true;
    /// otherwise completes none and returns false. Errors as [`wait_all`](Self::wait_all).
    pub fn test_all(&mut self, ids: &mut [RequestId], statuses: &mut [Status]) -> Result<bool> {
        check_lengths("test_all", ids, statuses)?;
        let rt = self.rt.clone();
        progress_then(&rt, |_| ());
        let all = ids.iter().all(|&id| match self.engine_id("test_all", id) {
            Ok(Target::Engine(r)) => rt.engine.with(|e| e.is_done(r) || !e.is_live(r)),
            _ => true,
        });
        if !all {
            return Ok(false);
        }
        self.wait_all(ids, statuses).map(|()| true)
    }

    /// Completes one finished request if there is one (`MPI_Testany`).
    pub fn test_any(&mut self, ids: &mut [RequestId]) -> AnyDone {
        let rt = self.rt.clone();
        progress_then(&rt, |_| ());
        let mut active = false;
        let mut found = None;
        for (i, &id) in ids.iter().enumerate() {
            let finished = match self.engine_id("test_any", id) {
                Ok(Target::Empty) => false,
                Ok(Target::Engine(r)) => {
                    active = true;
                    rt.engine.with(|e| e.is_done(r) || !e.is_live(r))
                }
                Ok(Target::Done(_)) | Err(_) => true,
            };
            if finished {
                found = Some(i);
                break;
            }
        }
        match found {
            Some(i) => AnyDone::Done(
                i,
                self.wait(&mut ids[i]).unwrap_or_else(|e| failed(e.class())),
            ),
            None if active => AnyDone::Pending,
            None => AnyDone::Inactive,
        }
    }

    /// Blocks until one request completes (`MPI_Waitany`); `None` if every request is null
    /// or inactive.
    pub fn wait_any(&mut self, ids: &mut [RequestId]) -> Option<(usize, Status)> {
        let rt = self.rt.clone();
        wait_loop(&rt, || match self.test_any(ids) {
            AnyDone::Inactive => (Some(None), true),
            AnyDone::Done(i, st) => (Some(Some((i, st))), true),
            AnyDone::Pending => (None, false),
        })
    }

    /// Completes every finished request (`MPI_Testsome`), appending `(index, status)` to
    /// `done`. Returns false if every request is null or inactive (`MPI_UNDEFINED`), and
    /// [`ErrorClass::InStatus`] if a completed one failed.
    pub fn test_some(
        &mut self,
        ids: &mut [RequestId],
        done: &mut Vec<(usize, Status)>,
    ) -> Result<bool> {
        let start = done.len();
        let mut active = false;
        let rt = self.rt.clone();
        progress_then(&rt, |_| ());
        for (i, id) in ids.iter_mut().enumerate() {
            let finished = match self.engine_id("test_some", *id) {
                Ok(Target::Empty) => false,
                Ok(Target::Engine(r)) => {
                    active = true;
                    rt.engine.with(|e| e.is_done(r) || !e.is_live(r))
                }
                Ok(Target::Done(_)) | Err(_) => true,
            };
            if finished {
                active = true;
                let st = self.wait(id).unwrap_or_else(|e| failed(e.class()));
                done.push((i, st));
            }
        }
        if done[start..].iter().any(|(_, st)| st.error.is_some()) {
            return Err(Error::new(
                ErrorClass::InStatus,
                "test_some: a request failed; see the error in its status",
            ));
        }
        Ok(active)
    }

    /// Blocks until at least one request completes, then completes every finished one
    /// (`MPI_Waitsome`); as [`test_some`](Self::test_some) otherwise.
    pub fn wait_some(
        &mut self,
        ids: &mut [RequestId],
        done: &mut Vec<(usize, Status)>,
    ) -> Result<bool> {
        let rt = self.rt.clone();
        let start = done.len();
        wait_loop(&rt, || match self.test_some(ids, done) {
            Ok(false) => (Some(Ok(false)), true),
            r if done.len() > start || r.is_err() => (Some(r), true),
            _ => (None, false),
        })
    }

    /// Whether `id` is a persistent request.
    pub fn is_persistent(&self, id: RequestId) -> bool {
        matches!(id.kind(), Kind::Persistent { .. })
    }

    /// Whether `id` is a persistent collective that runs through shared memory on a channel
    /// of its own; for tests and diagnostics.
    #[doc(hidden)]
    pub fn runs_on_shared_memory(&self, id: RequestId) -> bool {
        self.pslot("runs_on_shared_memory", id).is_ok_and(
            |i| matches!(&self.persistent[i].op, Some(PersistentOp::Coll(k)) if k.on_shm()),
        )
    }

    fn id_of(&mut self, start: RecvStart) -> RequestId {
        id_of(&self.rt, start)
    }

    fn add_persistent(&mut self, op: PersistentOp) -> RequestId {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.persistent.push(PSlot {
                    gen: self.gen_base,
                    op: None,
                    active: None,
                });
                (self.persistent.len() - 1) as u32
            }
        };
        let p = &mut self.persistent[idx as usize];
        p.gen = p.gen.wrapping_add(1);
        p.op = Some(op);
        p.active = None;
        RequestId::persistent(idx, p.gen)
    }

    /// The slot of live persistent request `id`.
    fn pslot(&self, call: &str, id: RequestId) -> Result<usize> {
        match id.kind() {
            Kind::Persistent { idx, gen } => self
                .persistent
                .get(idx as usize)
                .filter(|p| p.gen == gen && p.op.is_some())
                .map(|_| idx as usize)
                .ok_or_else(|| {
                    // Each table numbers its slots' generations from its own base.
                    if gen.wrapping_sub(self.gen_base) >= 1 << 20 {
                        elsewhere(call)
                    } else {
                        stale(call)
                    }
                }),
            _ => Err(Error::new(
                ErrorClass::Request,
                format!("{call}: not a persistent request"),
            )),
        }
    }

    /// What completing `id` waits on.
    fn engine_id(&self, call: &str, id: RequestId) -> Result<Target> {
        match id.kind() {
            Kind::Null => Ok(Target::Empty),
            Kind::Sent => Ok(Target::Done(Status::default())),
            Kind::Engine(r) => Ok(Target::Engine(r)),
            Kind::Persistent { .. } => {
                let p = &self.persistent[self.pslot(call, id)?];
                Ok(match p.active {
                    None => Target::Empty,
                    Some(Active::Done(st)) => Target::Done(st),
                    Some(Active::Pending(r)) => Target::Engine(r),
                })
            }
        }
    }

    /// Completes `id` through `finish` (which frees the engine request and returns its status,
    /// or `None` while it runs). `finish` borrows the table's runtime: no reference count
    /// changes hands per completion (this is `MPI_Wait`'s and `MPI_Waitall`'s per-request path).
    fn complete(
        &mut self,
        id: &mut RequestId,
        call: &str,
        finish: impl FnOnce(&Runtime, ReqId) -> Option<Status>,
    ) -> Result<Option<Status>> {
        let st = match self.engine_id(call, *id)? {
            Target::Empty => return Ok(Some(empty_status())),
            Target::Done(st) => st,
            Target::Engine(r) => {
                // One pass through the engine when the request has already completed (most of
                // a window's receives by the time `MPI_Waitall` reaches them).
                let now = self.rt.engine.with(|e| e.is_live(r).then(|| e.test(r)));
                match now {
                    None => return Err(stale(call)),
                    Some(Some(st)) => {
                        // As every wait and test does: a finished schedule's user operation is
                        // dropped, and parked user steps run, outside the engine.
                        self.rt.engine.run_parked();
                        st
                    }
                    Some(None) => match finish(&self.rt, r) {
                        None => return Ok(None),
                        Some(st) => st,
                    },
                }
            }
        };
        match id.kind() {
            Kind::Persistent { .. } => {
                let slot = self.pslot(call, *id)?;
                self.persistent[slot].active = None;
            }
            _ => *id = RequestId::NULL,
        }
        Ok(Some(st))
    }
}

/// One half of a send-receive pair.
#[derive(Debug, Clone, Copy)]
enum Part {
    Pending(ReqId),
    Done(Status),
}

impl Part {
    fn of(s: RecvStart) -> Part {
        match s {
            RecvStart::Pending(id) => Part::Pending(id),
            RecvStart::Done(st) => Part::Done(st),
        }
    }

    /// Collects the engine request once it completes.
    fn poll(&mut self, e: &mut Engine) -> Option<Status> {
        if let Part::Pending(id) = *self {
            if let Some(st) = e.test(id) {
                *self = Part::Done(st);
            }
        }
        match *self {
            Part::Done(st) => Some(st),
            Part::Pending(_) => None,
        }
    }
}

/// `MPI_Isendrecv`: a send and a receive completing as one request, advanced by the engine
/// like a collective's schedule. It runs no user code.
#[derive(Debug)]
struct SendRecv {
    send: Part,
    recv: Part,
}

impl crate::p2p::engine::Schedule for SendRecv {
    fn advance(&mut self, e: &mut Engine) -> Result<crate::p2p::engine::Advance> {
        use crate::p2p::engine::Advance;
        let (s, r) = (self.send.poll(e), self.recv.poll(e));
        match (s, r) {
            (Some(s), Some(_)) => match s.error {
                Some(c) => Err(Error::new(c, "isendrecv: the send failed")),
                None => Ok(Advance::Done),
            },
            _ => Ok(Advance::Running),
        }
    }

    fn run_unlocked(&mut self) -> std::thread::Result<()> {
        Ok(())
    }

    fn status(&self) -> Status {
        match self.recv {
            Part::Done(st) => st,
            Part::Pending(_) => Status::default(),
        }
    }
}

/// Persistent collectives (`MPI_Barrier_init`, `MPI_Bcast_init`, …) on raw buffers, for the
/// C layer. Counts are in elements of `T` (bytes for `u8`); a null `send` is `MPI_IN_PLACE`
/// where the operation has an in-place form. Algorithm and scratch are fixed here; the
/// request then starts, completes and frees like any persistent request.
///
/// Every function is `unsafe` with one contract: each non-null buffer must be valid for its
/// count (reads of `send`, exclusive reads and writes of `recv`) whenever the request is
/// active, until it is freed (`'static` below stands for that: nothing else bounds it).
impl<L: ThreadLevel> Requests<L> {
    fn add_collective(
        &mut self,
        p: crate::coll::Planned<'static>,
        comm: &Communicator<L>,
    ) -> Result<RequestId> {
        if self.immediate {
            // SAFETY: the caller of the `*_init` function (inside `immediately`) vouched
            // for the buffers until the request completes.
            let start = unsafe { p.start_unbound(&self.rt, &comm.state) }?;
            return Ok(self.id_of(start));
        }
        // A channel of its own when the plan fits one: agreed collectively, here at init.
        let claim = comm.shm_persist_claim(&p)?;
        // SAFETY: the caller of the `*_init` function vouched for the buffers while active.
        let kept = unsafe { p.persist_unbound(&comm.state, claim) }?;
        Ok(self.add_persistent(PersistentOp::Coll(kept)))
    }

    /// Runs `f` with every collective `*_init` function below starting its collective at
    /// once as a nonblocking one (`MPI_Ibcast`, `MPI_Iallreduce`, …): the id returned is an
    /// ordinary nonblocking request, freed when it completes, and the buffers need to stay
    /// valid only until then.
    ///
    /// ```no_run
    /// use oxmpi::handle::request::Requests;
    /// let universe = oxmpi::init()?;
    /// let world = universe.world();
    /// let mut reqs = Requests::new(&world);
    /// let mut x = [world.rank()];
    /// // SAFETY: `x` outlives the request, which is waited for below.
    /// let mut id = reqs.immediately(|r| unsafe { r.bcast_init(&world, x.as_mut_ptr(), 1, 0) })?;
    /// reqs.wait(&mut id)?;
    /// assert!(id.is_null() && x[0] == 0);
    /// # Ok::<(), oxmpi::Error>(())
    /// ```
    pub fn immediately<R>(&mut self, f: impl FnOnce(&mut Self) -> Result<R>) -> Result<R> {
        self.immediate = true;
        // Reset on every path, a panic included, so no later `*_init` starts at once.
        struct Reset<'r, L: ThreadLevel>(&'r mut Requests<L>);
        impl<L: ThreadLevel> Drop for Reset<'_, L> {
            fn drop(&mut self) {
                self.0.immediate = false;
            }
        }
        let r = Reset(self);
        f(r.0)
    }

    /// `MPI_Neighbor_allgather_init` over bytes: `send_len` bytes to every out-neighbour,
    /// in-neighbour i's block at `recv[i * send_len..]` (`recv_len` bytes in all).
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn neighbor_allgather_init(
        &mut self,
        comm: &Communicator<L>,
        send: *const u8,
        send_len: usize,
        recv: *mut u8,
        recv_len: usize,
    ) -> Result<RequestId> {
        let call = "neighbor_allgather_init";
        let plan = comm.neighbor_allgather_plan(call, send_len, recv_len, 1)?;
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        self.add_collective(plan.over(s, r), comm)
    }

    /// `MPI_Neighbor_alltoall_init` over bytes: equal blocks, one per neighbour.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn neighbor_alltoall_init(
        &mut self,
        comm: &Communicator<L>,
        send: *const u8,
        send_len: usize,
        recv: *mut u8,
        recv_len: usize,
    ) -> Result<RequestId> {
        let call = "neighbor_alltoall_init";
        let plan = comm.neighbor_alltoall_plan(call, send_len, recv_len, 1)?;
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        self.add_collective(plan.over(s, r), comm)
    }

    /// `MPI_Neighbor_allgatherv_init` (`sblocks` `None`) and `MPI_Neighbor_alltoallv_init`
    /// / `_alltoallw_init` over bytes: out-neighbour i gets `send[sdispls[i]..][..scounts[i]]`
    /// (allgatherv: all `send_len` bytes), in-neighbour i's block lands at
    /// `recv[rdispls[i]..][..rcounts[i]]`.
    ///
    /// # Safety
    /// See the block's contract.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn neighbor_v_init(
        &mut self,
        comm: &Communicator<L>,
        send: *const u8,
        send_len: usize,
        sblocks: Option<(&[usize], &[usize])>,
        recv: *mut u8,
        recv_len: usize,
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<RequestId> {
        let call = if sblocks.is_some() {
            "neighbor_alltoallv_init"
        } else {
            "neighbor_allgatherv_init"
        };
        let sb = sblocks.map(|(c, d)| (send_len, c, d));
        let plan = comm.neighbor_v_plan(call, sb, send_len, recv_len, rcounts, rdispls, 1)?;
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        self.add_collective(plan.over(s, r), comm)
    }

    /// `MPI_Barrier_init`.
    ///
    /// # Safety
    /// None beyond the block's contract (no buffers).
    pub unsafe fn barrier_init(&mut self, comm: &Communicator<L>) -> Result<RequestId> {
        self.add_collective(comm.barrier_plan("barrier_init"), comm)
    }

    /// `MPI_Bcast_init` of `count` elements of `T` at `buf`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn bcast_init<T: crate::datatype::Equivalence>(
        &mut self,
        comm: &Communicator<L>,
        buf: *mut T,
        count: usize,
        root: i32,
    ) -> Result<RequestId> {
        // SAFETY: forwarded from our caller.
        let b = unsafe { rw("bcast_init", buf, count)? };
        let elem = size_of::<T>();
        let p = comm.bcast_plan("bcast_init", root, bytemuck::cast_slice_mut(b), elem)?;
        self.add_collective(p, comm)
    }

    /// `MPI_Gather_init`: `count` elements from each rank into `recv` (p × `count`, root only).
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn gather_init<T: crate::datatype::Equivalence>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        count: usize,
        recv: *mut T,
        root: i32,
    ) -> Result<RequestId> {
        let call = "gather_init";
        let is_root = comm.rank() == root;
        let total = if is_root {
            count * comm.size() as usize
        } else {
            0
        };
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro_or_in_place(call, send, count)?, rw(call, recv, total)?) };
        self.add_collective(comm.gather_plan(call, root, s, r)?, comm)
    }

    /// `MPI_Scatter_init`: `count` elements to each rank from `send` (p × `count`, root
    /// only); a null `recv` at the root is `MPI_IN_PLACE`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn scatter_init<T: crate::datatype::Equivalence>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        recv: *mut T,
        count: usize,
        root: i32,
    ) -> Result<RequestId> {
        let call = "scatter_init";
        let is_root = comm.rank() == root;
        let total = if is_root {
            count * comm.size() as usize
        } else {
            0
        };
        // SAFETY: forwarded from our caller.
        let s = unsafe { ro(call, send, total)? };
        let r = if is_root && recv.is_null() {
            None
        } else {
            // SAFETY: forwarded from our caller.
            Some(unsafe { rw(call, recv, count)? })
        };
        self.add_collective(comm.scatter_plan(call, root, s, r)?, comm)
    }

    /// `MPI_Allgather_init`: `count` elements from each rank into every `recv` (p × `count`).
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn allgather_init<T: crate::datatype::Equivalence>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        count: usize,
        recv: *mut T,
    ) -> Result<RequestId> {
        let call = "allgather_init";
        let total = count * comm.size() as usize;
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro_or_in_place(call, send, count)?, rw(call, recv, total)?) };
        self.add_collective(comm.allgather_plan(call, s, r)?, comm)
    }

    /// `MPI_Alltoall_init`: blocks of `count` elements (both buffers p × `count`).
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn alltoall_init<T: crate::datatype::Equivalence>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        recv: *mut T,
        count: usize,
    ) -> Result<RequestId> {
        let call = "alltoall_init";
        let total = count * comm.size() as usize;
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro_or_in_place(call, send, total)?, rw(call, recv, total)?) };
        self.add_collective(comm.alltoall_plan(call, s, r)?, comm)
    }

    /// `MPI_Reduce_init` of `count` elements with `op` (`recv` at the root only).
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn reduce_init<T: crate::op::Reducible>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        recv: *mut T,
        count: usize,
        op: super::op::OpHandle,
        root: i32,
    ) -> Result<RequestId> {
        let call = "reduce_init";
        let op = super::op::op_get(op)?;
        let rcount = if comm.rank() == root { count } else { 0 };
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro_or_in_place(call, send, count)?, rw(call, recv, rcount)?) };
        self.add_collective(comm.reduce_plan(call, root, s, r, &op)?, comm)
    }

    /// `MPI_Allreduce_init` of `count` elements with `op`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn allreduce_init<T: crate::op::Reducible>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        recv: *mut T,
        count: usize,
        op: super::op::OpHandle,
    ) -> Result<RequestId> {
        let call = "allreduce_init";
        let op = super::op::op_get(op)?;
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro_or_in_place(call, send, count)?, rw(call, recv, count)?) };
        self.add_collective(comm.allreduce_plan(call, s, r, &op)?, comm)
    }

    /// `MPI_Reduce_scatter_block_init`: `send` holds p × `count` elements, `recv` `count`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn reduce_scatter_block_init<T: crate::op::Reducible>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        recv: *mut T,
        count: usize,
        op: super::op::OpHandle,
    ) -> Result<RequestId> {
        let call = "reduce_scatter_block_init";
        let op = super::op::op_get(op)?;
        let total = count * comm.size() as usize;
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, total)?, rw(call, recv, count)?) };
        self.add_collective(comm.reduce_scatter_block_plan(call, s, r, &op)?, comm)
    }

    /// `MPI_Scan_init` (or, with `exclusive`, `MPI_Exscan_init`) of `count` elements.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn scan_init<T: crate::op::Reducible>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        recv: *mut T,
        count: usize,
        op: super::op::OpHandle,
        exclusive: bool,
    ) -> Result<RequestId> {
        let call = if exclusive {
            "exscan_init"
        } else {
            "scan_init"
        };
        let op = super::op::op_get(op)?;
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro_or_in_place(call, send, count)?, rw(call, recv, count)?) };
        self.add_collective(comm.scan_plan(call, s, r, &op, exclusive)?, comm)
    }

    /// `MPI_Gatherv_init`: rank i's `count` elements land at `recv[displs[i]..][..counts[i]]`
    /// at the root, in a receive buffer of `recv_len` elements (root only).
    ///
    /// # Safety
    /// See the block's contract.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gatherv_init<T: crate::datatype::Equivalence>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        count: usize,
        recv: *mut T,
        recv_len: usize,
        counts: &[usize],
        displs: &[usize],
        root: i32,
    ) -> Result<RequestId> {
        let call = "gatherv_init";
        let rlen = if comm.rank() == root { recv_len } else { 0 };
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, count)?, rw(call, recv, rlen)?) };
        self.add_collective(comm.gatherv_plan(call, root, s, r, counts, displs)?, comm)
    }

    /// `MPI_Scatterv_init`: rank i receives `send[displs[i]..][..counts[i]]` (a send buffer
    /// of `send_len` elements at the root) into `count` elements at `recv`.
    ///
    /// # Safety
    /// See the block's contract.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn scatterv_init<T: crate::datatype::Equivalence>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        send_len: usize,
        counts: &[usize],
        displs: &[usize],
        recv: *mut T,
        count: usize,
        root: i32,
    ) -> Result<RequestId> {
        let call = "scatterv_init";
        let slen = if comm.rank() == root { send_len } else { 0 };
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, slen)?, rw(call, recv, count)?) };
        self.add_collective(comm.scatterv_plan(call, root, s, counts, displs, r)?, comm)
    }

    /// `MPI_Allgatherv_init`: rank i's `count` elements land at `recv[displs[i]..][..counts[i]]`
    /// on every rank (`recv_len` elements).
    ///
    /// # Safety
    /// See the block's contract.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn allgatherv_init<T: crate::datatype::Equivalence>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        count: usize,
        recv: *mut T,
        recv_len: usize,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<RequestId> {
        let call = "allgatherv_init";
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, count)?, rw(call, recv, recv_len)?) };
        self.add_collective(comm.allgatherv_plan(call, s, r, counts, displs)?, comm)
    }

    /// `MPI_Alltoallv_init` (and, over bytes, `MPI_Alltoallw_init`): block j of `send`
    /// (`send_len` elements) is `[sdispls[j]..][..scounts[j]]`, rank j's block lands at
    /// `[rdispls[j]..][..rcounts[j]]` of `recv` (`recv_len` elements).
    ///
    /// # Safety
    /// See the block's contract.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn alltoallv_init<T: crate::datatype::Equivalence>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        send_len: usize,
        scounts: &[usize],
        sdispls: &[usize],
        recv: *mut T,
        recv_len: usize,
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<RequestId> {
        let call = "alltoallv_init";
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        let p = comm.alltoallv_plan(call, s, scounts, sdispls, r, rcounts, rdispls)?;
        self.add_collective(p, comm)
    }

    /// `MPI_Reduce_scatter_init`: `send` holds the sum of `counts` elements, rank i's block
    /// of the result (`counts[i]` elements) lands in its `recv`; a null `send` is
    /// `MPI_IN_PLACE` (then `recv` holds the whole input).
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn reduce_scatter_init<T: crate::op::Reducible>(
        &mut self,
        comm: &Communicator<L>,
        send: *const T,
        recv: *mut T,
        counts: &[usize],
        op: super::op::OpHandle,
    ) -> Result<RequestId> {
        let call = "reduce_scatter_init";
        let op = super::op::op_get(op)?;
        let total: usize = counts.iter().sum();
        let mine = counts.get(comm.rank() as usize).copied().unwrap_or(0);
        let rlen = if send.is_null() { total } else { mine };
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro_or_in_place(call, send, total)?, rw(call, recv, rlen)?) };
        self.add_collective(comm.reduce_scatter_plan(call, s, r, counts, &op)?, comm)
    }
}

/// `n` elements at `p` (none when `n` is 0); a null `p` with elements is an error.
///
/// # Safety
/// A non-null `p` must be valid for reads of `n` elements for `'x`.
unsafe fn ro<'x, T>(call: &str, p: *const T, n: usize) -> Result<&'x [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null_buffer(call));
    }
    // SAFETY: caller contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// As [`ro`], where null is `MPI_IN_PLACE` (`None`).
///
/// # Safety
/// As [`ro`].
unsafe fn ro_or_in_place<'x, T>(call: &str, p: *const T, n: usize) -> Result<Option<&'x [T]>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded from our caller.
    unsafe { ro(call, p, n) }.map(Some)
}

/// `n` elements at `p`, exclusively.
///
/// # Safety
/// A non-null `p` must be valid for reads and writes of `n` elements, and not otherwise
/// accessed, for `'x`.
unsafe fn rw<'x, T>(call: &str, p: *mut T, n: usize) -> Result<&'x mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(null_buffer(call));
    }
    // SAFETY: caller contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

fn null_buffer(call: &str) -> Error {
    Error::new(
        ErrorClass::Buffer,
        format!("{call}: a null buffer with a non-zero count"),
    )
}

enum Target {
    /// Null or inactive: completes at once with the empty status.
    Empty,
    /// Finished when started.
    Done(Status),
    /// In the engine.
    Engine(ReqId),
}

fn stale(call: &str) -> Error {
    Error::new(
        ErrorClass::Request,
        format!("{call}: the request id names no request (already completed or freed?)"),
    )
}

/// The error of a persistent request used through a table that did not make it.
#[cold]
fn elsewhere(call: &str) -> Error {
    Error::new(
        ErrorClass::Request,
        format!(
            "{call}: the persistent request belongs to another request table (in the C \
             interface: it was made on another thread, and a persistent request is started, \
             completed and freed on the thread that made it)"
        ),
    )
}

fn failed(class: ErrorClass) -> Status {
    Status {
        error: Some(class),
        ..empty_status()
    }
}

fn check_lengths(call: &str, ids: &[RequestId], statuses: &[Status]) -> Result<()> {
    if ids.len() != statuses.len() {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "{call}: {} requests but room for {} statuses",
                ids.len(),
                statuses.len()
            ),
        ));
    }
    Ok(())
}

fn in_status(call: &str, statuses: &[Status]) -> Result<()> {
    match statuses.iter().position(|s| s.error.is_some()) {
        None => Ok(()),
        Some(i) => Err(Error::new(
            ErrorClass::InStatus,
            format!(
                "{call}: request {i} failed ({:?}); see the error in each status",
                statuses[i].error.expect("error")
            ),
        )),
    }
}

pub(super) fn send_op<L: ThreadLevel>(
    comm: &Communicator<L>,
    call: &str,
    mode: SendMode,
    buf: *const u8,
    len: usize,
    dest: i32,
    tag: i32,
) -> Result<PersistentOp> {
    comm.check_finalized(call)?;
    let env = comm.envelope(call, tag)?;
    let to = comm.dest(call, dest)?;
    Ok(PersistentOp::Send {
        mode,
        buf,
        len,
        to,
        env,
    })
}

pub(super) fn recv_op<L: ThreadLevel>(
    comm: &Communicator<L>,
    call: &str,
    buf: *mut u8,
    cap: usize,
    source: Source,
    tag: Tag,
) -> Result<PersistentOp> {
    comm.check_finalized(call)?;
    let (src, tag) = comm.recv_args(call, source, tag)?;
    Ok(PersistentOp::Recv {
        buf,
        cap,
        ctx: comm.state.context,
        src,
        tag,
        world_src: comm.world_rank_of(src),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::p2p::request::{Slab, State};

    #[test]
    fn ids_round_trip_and_never_collide_with_null() {
        for (idx, gen) in [(0, 0), (0, 1), (7, u32::MAX), (1 << 30, 3)] {
            let id = RequestId::engine(ReqId::new(idx, gen));
            assert!(!id.is_null());
            assert!(matches!(id.kind(), Kind::Engine(r) if r == ReqId::new(idx, gen)));
            let p = RequestId::persistent(idx, gen);
            assert!(!p.is_null() && p != id);
            assert!(
                matches!(p.kind(), Kind::Persistent { idx: i, gen: g } if (i, g) == (idx, gen))
            );
            assert_eq!(RequestId::from_raw(p.to_raw()), p);
        }
        assert!(matches!(RequestId::NULL.kind(), Kind::Null));
        assert!(matches!(RequestId::SENT.kind(), Kind::Sent));
        assert_eq!(
            RequestId::from_raw(RequestId::SENT.to_raw()),
            RequestId::SENT
        );
    }

    #[test]
    fn slots_name_the_table_entry_and_nothing_for_null_or_junk() {
        for (idx, gen) in [(0, 0), (5, 9), (1 << 30, u32::MAX)] {
            assert_eq!(
                RequestId::engine(ReqId::new(idx, gen)).slot(),
                Some(IdSlot::Engine(idx))
            );
            assert_eq!(
                RequestId::persistent(idx, gen).slot(),
                Some(IdSlot::Persistent(idx))
            );
        }
        assert_eq!(RequestId::NULL.slot(), None);
        assert_eq!(
            RequestId::SENT.slot(),
            None,
            "a finished send holds no slot"
        );
        // Below 2^32 no table makes an id (engine ids start their slot at 1 << 32).
        assert_eq!(RequestId::from_raw(0x1234).slot(), None);
    }

    #[test]
    fn a_detached_request_is_freed_when_it_completes() {
        let mut s = Slab::default();
        let a = s.alloc(State::SendQueued);
        assert!(s.detach(a));
        assert_eq!(s.live(), 1, "still running");
        s.complete(
            a.idx(),
            Status {
                bytes: 4,
                ..Status::default()
            },
        );
        assert_eq!(s.live(), 0, "freed by completion");
        assert!(!s.is_live(a) && s.take_if_done(a).is_none());
        // A finished request is freed at once; a stale id is refused.
        let b = s.alloc(State::SendQueued);
        assert_eq!(b.idx(), a.idx());
        s.complete(b.idx(), Status::default());
        assert!(s.detach(b));
        assert_eq!(s.live(), 0);
        assert!(!s.detach(b) && !s.detach(a));
        // The next user of the slot is not detached.
        let c = s.alloc(State::SendQueued);
        s.complete(c.idx(), Status::default());
        assert!(s.is_done(c) && s.live() == 1);
    }

    #[test]
    fn peeking_leaves_the_status_to_collect() {
        let mut s = Slab::default();
        let a = s.alloc(State::SendQueued);
        assert_eq!(s.peek_done(a), None, "not finished");
        let st = Status {
            source: 3,
            bytes: 12,
            ..Status::default()
        };
        s.complete(a.idx(), st);
        assert_eq!(s.peek_done(a), Some(st));
        assert_eq!(s.peek_done(a), Some(st), "still there");
        assert_eq!(s.take_if_done(a), Some(st));
        assert_eq!(s.peek_done(a), None);
        let d = s.alloc_done(st);
        assert_eq!(s.take_if_done(d), Some(st), "pre-completed slot");
    }

    #[test]
    fn status_counts_elements_and_keeps_its_class() {
        let st = Status {
            bytes: 12,
            ..Status::default()
        };
        assert_eq!(st.count(), Some(12), "bytes without an element size");
        assert_eq!(st.with_elem(4).count(), Some(3));
        assert_eq!(st.with_elem(8).count(), None, "not whole elements");
        let e = check("wait", failed(ErrorClass::Op)).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Op);
        assert!(e.message().starts_with("wait: "), "{e}");
        let st = [Status::default(), failed(ErrorClass::Truncate)];
        let e = in_status("wait_all", &st).unwrap_err();
        assert_eq!(e.class(), ErrorClass::InStatus);
        assert!(e.message().contains("request 1"), "{e}");
        assert!(in_status("wait_all", &st[..1]).is_ok());
    }
}
