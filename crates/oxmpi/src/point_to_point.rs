//! Point-to-point operations on communicators: blocking, nonblocking, probes.
//!
//! Nonblocking operations borrow their buffers for the life of a [`Request`], and every
//! request belongs to a [`Scope`]: when the scope ends it completes whatever is still
//! outstanding, so even a leaked request cannot outlive its buffer.
//!
//! # Standard sections
//! MPI-5.0 §3 (point-to-point communication).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::comm::Communicator;
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::engine::{RecvStart, SendMode};
use crate::p2p::matching::{ANY_SOURCE, ANY_TAG, PROC_NULL};
use crate::p2p::progress::Backoff;
use crate::p2p::request::{ReqId, Status as RawStatus};
use crate::p2p::wire::Envelope;
use crate::runtime::Runtime;
use crate::threading::ThreadLevel;

/// Largest tag value (`MPI_TAG_UB`).
pub const TAG_UB: i32 = i32::MAX;

/// What a completed receive reports (`MPI_Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    raw: RawStatus,
    elem: usize,
}

impl Status {
    fn new(raw: RawStatus, elem: usize) -> Self {
        Status {
            raw,
            elem: elem.max(1),
        }
    }

    /// Rank of the sender (`MPI_SOURCE`), or `PROC_NULL`.
    pub fn source(&self) -> i32 {
        self.raw.source
    }

    /// Tag of the message (`MPI_TAG`).
    pub fn tag(&self) -> i32 {
        self.raw.tag
    }

    /// Bytes in the message (as received).
    pub fn bytes(&self) -> u64 {
        self.raw.bytes
    }

    /// Number of elements received (`MPI_Get_count`), or `None` if the byte count is not a
    /// whole number of elements (`MPI_UNDEFINED`).
    pub fn count(&self) -> Option<u64> {
        self.raw
            .bytes
            .is_multiple_of(self.elem as u64)
            .then_some(self.raw.bytes / self.elem as u64)
    }

    /// Whether the operation was cancelled (`MPI_Test_cancelled`).
    pub fn cancelled(&self) -> bool {
        self.raw.cancelled
    }
}

/// Who a receive accepts messages from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One rank of the communicator.
    Rank(i32),
    /// Any rank (`MPI_ANY_SOURCE`).
    Any,
    /// Nobody: the receive completes at once, empty (`MPI_PROC_NULL`).
    Null,
}

/// Which tags a receive accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// One tag.
    Is(i32),
    /// Any tag (`MPI_ANY_TAG`).
    Any,
}

impl From<i32> for Source {
    fn from(r: i32) -> Self {
        match r {
            ANY_SOURCE => Source::Any,
            PROC_NULL => Source::Null,
            r => Source::Rank(r),
        }
    }
}

impl From<i32> for Tag {
    fn from(t: i32) -> Self {
        if t == ANY_TAG {
            Tag::Any
        } else {
            Tag::Is(t)
        }
    }
}

/// Where outstanding nonblocking operations live; see [`scope`].
pub struct Scope<'a> {
    outstanding: RefCell<Vec<(Arc<Runtime>, ReqId)>>,
    _buffers: PhantomData<&'a mut &'a ()>,
}

/// Runs `f` with a scope for nonblocking operations; when `f` returns, every request started
/// in the scope and not yet completed is waited for.
pub fn scope<'a, R>(f: impl FnOnce(&Scope<'a>) -> R) -> R {
    let s = Scope {
        outstanding: RefCell::new(Vec::new()),
        _buffers: PhantomData,
    };
    let r = f(&s);
    for (rt, id) in s.outstanding.take() {
        if let Err(e) = wait_raw(&rt, id) {
            eprintln!(
                "oxmpi: rank {}: request left at scope end failed: {e}",
                rt.rank
            );
        }
    }
    r
}

/// A nonblocking operation in flight, borrowing its buffer for `'a`.
#[must_use = "a request must be waited for or tested"]
pub struct Request<'a, 's> {
    rt: Arc<Runtime>,
    state: ReqState,
    elem: usize,
    scope: &'s Scope<'a>,
}

enum ReqState {
    Pending(ReqId),
    Done(RawStatus),
    Collected,
}

impl<'a, 's> Request<'a, 's> {
    fn new(rt: Arc<Runtime>, start: RecvStart, elem: usize, scope: &'s Scope<'a>) -> Self {
        let state = match start {
            RecvStart::Done(st) => ReqState::Done(st),
            RecvStart::Pending(id) => {
                scope.outstanding.borrow_mut().push((rt.clone(), id));
                ReqState::Pending(id)
            }
        };
        Request {
            rt,
            state,
            elem,
            scope,
        }
    }

    fn forget_in_scope(&self, id: ReqId) {
        self.scope
            .outstanding
            .borrow_mut()
            .retain(|(_, r)| *r != id);
    }

    /// Blocks until the operation completes (`MPI_Wait`).
    pub fn wait(mut self) -> Result<Status> {
        let raw = match std::mem::replace(&mut self.state, ReqState::Collected) {
            ReqState::Pending(id) => {
                let st = wait_raw(&self.rt, id);
                self.forget_in_scope(id);
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
                let r = self.rt.engine.with(|e| e.progress().map(|_| e.test(id)));
                match r {
                    Err(e) => Some(Err(e)),
                    Ok(None) => None,
                    Ok(Some(st)) => {
                        self.forget_in_scope(id);
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
            let _ = wait_raw(&self.rt, id);
            self.forget_in_scope(id);
        }
    }
}

fn status_result(raw: RawStatus, elem: usize) -> Result<Status> {
    match raw.error {
        Some(ErrorClass::Truncate) => Err(Error::new(
            ErrorClass::Truncate,
            format!("receive: message from rank {} (tag {}) is longer than the receive buffer ({} bytes kept)", raw.source, raw.tag, raw.bytes),
        )),
        Some(c) => Err(Error::new(c, "operation failed")),
        None => Ok(Status::new(raw, elem)),
    }
}

/// Waits for request `id`, spinning then backing off.
pub(crate) fn wait_raw(rt: &Runtime, id: ReqId) -> Result<RawStatus> {
    let mut backoff = Backoff::new(rt.config.spin_count, rt.config.yield_sleep_us);
    loop {
        let (done, worked) = rt.engine.with(|e| -> Result<(Option<RawStatus>, bool)> {
            if let Some(st) = e.test(id) {
                return Ok((Some(st), true));
            }
            let n = e.progress()?;
            Ok((e.test(id), n > 0))
        })?;
        if let Some(st) = done {
            return Ok(st);
        }
        if worked {
            backoff.reset();
        }
        backoff.snooze();
    }
}

impl<L: ThreadLevel> Communicator<L> {
    fn check_finalized(&self, call: &str) -> Result<()> {
        if crate::runtime::is_finalized() {
            return Err(Error::new(
                ErrorClass::Other,
                format!("{call}: MPI is finalized"),
            ));
        }
        Ok(())
    }

    /// World rank of communicator rank `dest`, or `None` for `PROC_NULL`.
    fn dest(&self, call: &str, dest: i32) -> Result<Option<u32>> {
        if dest == PROC_NULL {
            return Ok(None);
        }
        self.state
            .members
            .get(usize::try_from(dest).map_err(|_| bad_rank(call, dest, self.size()))?)
            .copied()
            .map(Some)
            .ok_or_else(|| bad_rank(call, dest, self.size()))
    }

    fn envelope(&self, call: &str, tag: i32) -> Result<Envelope> {
        if tag < 0 {
            return Err(Error::new(
                ErrorClass::Tag,
                format!("{call}: tag {tag} is negative (valid tags are 0..={TAG_UB})"),
            ));
        }
        Ok(Envelope {
            ctx: self.state.context,
            src: self.state.rank,
            tag,
        })
    }

    fn recv_args(&self, call: &str, source: Source, tag: Tag) -> Result<(i32, i32)> {
        let src = match source {
            Source::Any => ANY_SOURCE,
            Source::Null => PROC_NULL,
            Source::Rank(r) if r >= 0 && r < self.size() => r,
            Source::Rank(r) => return Err(bad_rank(call, r, self.size())),
        };
        let tag = match tag {
            Tag::Any => ANY_TAG,
            Tag::Is(t) if t >= 0 => t,
            Tag::Is(t) => {
                return Err(Error::new(
                    ErrorClass::Tag,
                    format!("{call}: tag {t} is negative"),
                ))
            }
        };
        Ok((src, tag))
    }

    fn start_send<B: Buffer + ?Sized>(
        &self,
        call: &str,
        mode: SendMode,
        buf: &B,
        dest: i32,
        tag: i32,
    ) -> Result<Option<Option<ReqId>>> {
        self.check_finalized(call)?;
        let env = self.envelope(call, tag)?;
        let Some(to) = self.dest(call, dest)? else {
            return Ok(None);
        };
        let bytes = buf.bytes();
        // SAFETY: `bytes` is borrowed for the whole operation: blocking sends wait before
        // returning, nonblocking ones tie the borrow to their Request, which waits on drop, and
        // the Request's Scope waits even for leaked requests.
        let r = self
            .rt
            .engine
            .with(|e| unsafe { e.isend(mode, bytes.as_ptr(), bytes.len(), to, env) })?;
        Ok(Some(r))
    }

    /// Sends `buf` to rank `dest` with `tag` (`MPI_Send`; also serves `MPI_Rsend`).
    pub fn send<B: Buffer + ?Sized>(&self, buf: &B, dest: i32, tag: i32) -> Result<()> {
        if let Some(Some(id)) = self.start_send("send", SendMode::Standard, buf, dest, tag)? {
            wait_raw(&self.rt, id)?;
        }
        Ok(())
    }

    /// Sends and returns once the receiver has matched the message (`MPI_Ssend`).
    pub fn synchronous_send<B: Buffer + ?Sized>(&self, buf: &B, dest: i32, tag: i32) -> Result<()> {
        if let Some(Some(id)) =
            self.start_send("synchronous_send", SendMode::Synchronous, buf, dest, tag)?
        {
            wait_raw(&self.rt, id)?;
        }
        Ok(())
    }

    /// Receives into `buf` (`MPI_Recv`). A longer message is an [`ErrorClass::Truncate`]
    /// error; the buffer then holds its first bytes.
    pub fn receive_into<B: BufferMut + ?Sized>(
        &self,
        buf: &mut B,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        self.check_finalized("receive")?;
        let (src, tag) = self.recv_args("receive", source.into(), tag.into())?;
        let elem = buf.element_size();
        let bytes = buf.bytes_mut();
        let ctx = self.state.context;
        // SAFETY: `bytes` stays exclusively borrowed until this blocking receive completes.
        let start = self
            .rt
            .engine
            .with(|e| unsafe { e.irecv(bytes.as_mut_ptr(), bytes.len(), ctx, src, tag) })?;
        let raw = match start {
            RecvStart::Done(st) => st,
            RecvStart::Pending(id) => wait_raw(&self.rt, id)?,
        };
        status_result(raw, elem)
    }

    /// Receives a message of any length into a new vector (probe, then receive).
    pub fn receive_vec<T: Equivalence>(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<(Vec<T>, Status)> {
        let st = self.probe(source, tag)?;
        let size = std::mem::size_of::<T>().max(1);
        let n = st.bytes().div_ceil(size as u64) as usize;
        let mut v = vec![T::zeroed(); n];
        let st = self.receive_into(&mut v[..], Source::Rank(st.source()), Tag::Is(st.tag()))?;
        Ok((v, st))
    }

    /// Waits for a matching message without receiving it (`MPI_Probe`).
    pub fn probe(&self, source: impl Into<Source>, tag: impl Into<Tag>) -> Result<Status> {
        let (source, tag) = (source.into(), tag.into());
        let mut backoff = Backoff::new(self.rt.config.spin_count, self.rt.config.yield_sleep_us);
        loop {
            if let Some(st) = self.immediate_probe(source, tag)? {
                return Ok(st);
            }
            backoff.snooze();
        }
    }

    /// Checks for a matching message without receiving it (`MPI_Iprobe`).
    pub fn immediate_probe(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Option<Status>> {
        self.check_finalized("probe")?;
        let (src, tag) = self.recv_args("probe", source.into(), tag.into())?;
        if src == PROC_NULL {
            return Ok(Some(Status::new(
                RawStatus {
                    source: PROC_NULL,
                    tag: ANY_TAG,
                    ..RawStatus::default()
                },
                1,
            )));
        }
        let ctx = self.state.context;
        let st = self.rt.engine.with(|e| -> Result<Option<RawStatus>> {
            if let Some(st) = e.iprobe(ctx, src, tag) {
                return Ok(Some(st));
            }
            e.progress()?;
            Ok(e.iprobe(ctx, src, tag))
        })?;
        Ok(st.map(|s| Status::new(s, 1)))
    }

    /// Starts a send (`MPI_Isend`).
    pub fn immediate_send<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Request<'a, 's>> {
        self.immediate_send_mode(scope, SendMode::Standard, buf, dest, tag)
    }

    /// Starts a synchronous send (`MPI_Issend`).
    pub fn immediate_synchronous_send<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Request<'a, 's>> {
        self.immediate_send_mode(scope, SendMode::Synchronous, buf, dest, tag)
    }

    fn immediate_send_mode<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        mode: SendMode,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Request<'a, 's>> {
        let start = match self.start_send("immediate_send", mode, buf, dest, tag)? {
            Some(Some(id)) => RecvStart::Pending(id),
            _ => RecvStart::Done(RawStatus {
                bytes: buf.bytes().len() as u64,
                ..RawStatus::default()
            }),
        };
        Ok(Request::new(
            self.rt.clone(),
            start,
            buf.element_size(),
            scope,
        ))
    }

    /// Starts a receive into `buf` (`MPI_Irecv`).
    pub fn immediate_receive_into<'a, 's, B: BufferMut + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Request<'a, 's>> {
        self.check_finalized("immediate_receive")?;
        let (src, tag) = self.recv_args("immediate_receive", source.into(), tag.into())?;
        let elem = buf.element_size();
        let bytes = buf.bytes_mut();
        let ctx = self.state.context;
        // SAFETY: the exclusive borrow `'a` is held by the Request (which waits on drop) and
        // outlives its Scope (which waits for leaked requests).
        let start = self
            .rt
            .engine
            .with(|e| unsafe { e.irecv(bytes.as_mut_ptr(), bytes.len(), ctx, src, tag) })?;
        Ok(Request::new(self.rt.clone(), start, elem, scope))
    }

    /// Sends `send` to `dest` and receives into `recv` from `source` at once (`MPI_Sendrecv`).
    pub fn send_receive_into<S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        dest: i32,
        send_tag: i32,
        recv: &mut R,
        source: impl Into<Source>,
        recv_tag: impl Into<Tag>,
    ) -> Result<Status> {
        let (source, recv_tag) = (source.into(), recv_tag.into());
        scope(|s| {
            let r = self.immediate_receive_into(s, recv, source, recv_tag)?;
            self.send(send, dest, send_tag)?;
            r.wait()
        })
    }
}

fn bad_rank(call: &str, rank: i32, size: i32) -> Error {
    Error::new(
        ErrorClass::Rank,
        format!("{call}: rank {rank} is not in the communicator (size {size})"),
    )
}
