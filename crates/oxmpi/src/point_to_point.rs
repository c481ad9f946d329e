//! Point-to-point operations on communicators: blocking, nonblocking, probes.
//!
//! Nonblocking operations borrow their buffers for the life of a [`Request`], and every
//! request belongs to a [`Scope`]: when the scope ends it completes whatever is still
//! outstanding, so even a leaked request cannot outlive its buffer.
//!
//! # Standard sections
//! MPI-5.0 §3 (point-to-point communication).

use std::sync::Arc;

use crate::comm::Communicator;
use crate::datatype::elements::{checked_values, Element};
use crate::datatype::{Buffer, BufferMut, Checked, Equivalence};
use crate::error::{Error, ErrorClass, Result};
use crate::handle::request::{self as h, check, PersistentOp, SendMode as Mode};
use crate::p2p::engine::{RecvStart, SendMode};
use crate::p2p::matching::{Unexpected, ANY_SOURCE, ANY_TAG, PROC_NULL};
use crate::p2p::request::ReqId;
use crate::p2p::wire::Envelope;
use crate::request::{
    block_on, finish_checked, CheckedPersistent, CheckedRequest, Persistent, Request, Scope,
};
use crate::runtime::Runtime;
use crate::threading::ThreadLevel;

/// Largest tag value (`MPI_TAG_UB`): `i32::MAX - 2`, so that partitioned communication's
/// tags, mapped below zero (`i32::MIN + tag`), never reach the wildcard `ANY_TAG` (-2).
pub const TAG_UB: i32 = i32::MAX - 2;

pub use crate::p2p::request::Status;

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

/// The error for a tag outside `0..=TAG_UB`.
#[cold]
fn bad_tag(call: &str, tag: i32) -> Error {
    Error::new(
        ErrorClass::Tag,
        format!("{call}: tag {tag} is outside 0..={TAG_UB}"),
    )
}

impl<L: ThreadLevel> Communicator<L> {
    pub(crate) fn check_finalized(&self, call: &str) -> Result<()> {
        if crate::runtime::is_finalized() {
            return Err(Error::new(
                ErrorClass::Other,
                format!("{call}: MPI is finalized"),
            ));
        }
        Ok(())
    }

    /// World rank of communicator rank `dest` (of the remote group, on the point-to-point
    /// view of an intercommunicator), or `None` for `PROC_NULL`.
    pub(crate) fn dest(&self, call: &str, dest: i32) -> Result<Option<u32>> {
        if dest == PROC_NULL {
            return Ok(None);
        }
        let peers = self.state.peers();
        usize::try_from(dest)
            .ok()
            .and_then(|d| peers.get(d))
            .copied()
            .map(Some)
            .ok_or_else(|| bad_rank(call, dest, peers.len() as i32))
    }

    /// World rank of a validated communicator rank (`None` for wildcards and `PROC_NULL`).
    pub(crate) fn world_rank_of(&self, src: i32) -> Option<u32> {
        usize::try_from(src)
            .ok()
            .and_then(|s| self.state.peers().get(s).copied())
    }

    pub(crate) fn envelope(&self, call: &str, tag: i32) -> Result<Envelope> {
        if !(0..=TAG_UB).contains(&tag) {
            return Err(bad_tag(call, tag));
        }
        Ok(Envelope {
            ctx: self.state.context,
            src: self.state.rank,
            tag,
        })
    }

    pub(crate) fn recv_args(&self, call: &str, source: Source, tag: Tag) -> Result<(i32, i32)> {
        let src = match source {
            Source::Any => ANY_SOURCE,
            Source::Null => PROC_NULL,
            Source::Rank(r) if r >= 0 && (r as usize) < self.state.peers().len() => r,
            Source::Rank(r) => return Err(bad_rank(call, r, self.state.peers().len() as i32)),
        };
        let tag = match tag {
            Tag::Any => ANY_TAG,
            Tag::Is(t) if (0..=TAG_UB).contains(&t) => t,
            Tag::Is(t) => return Err(bad_tag(call, t)),
        };
        Ok((src, tag))
    }

    fn start_send<B: Buffer + ?Sized>(
        &self,
        call: &'static str,
        mode: SendMode,
        buf: &B,
        dest: i32,
        tag: i32,
    ) -> Result<Option<Option<ReqId>>> {
        let bytes = buf.bytes();
        // SAFETY: `bytes` is borrowed for the whole operation: blocking sends wait before
        // returning, nonblocking ones tie the borrow to their Request, which waits on drop,
        // and the Request's Scope waits even for leaked requests.
        unsafe { self.start_send_raw(call, mode, bytes.as_ptr(), bytes.len(), dest, tag) }
    }

    /// [`start_send`](Self::start_send) of the `len` bytes at `ptr`: `None` for a send to
    /// `PROC_NULL`, otherwise the engine's request if the send has not completed.
    ///
    /// # Safety
    /// `ptr` is valid for reads of `len` bytes until the send completes.
    #[inline]
    pub(crate) unsafe fn start_send_raw(
        &self,
        call: &'static str,
        mode: SendMode,
        ptr: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
    ) -> Result<Option<Option<ReqId>>> {
        self.check_finalized(call)?;
        let env = self.envelope(call, tag)?;
        let Some(to) = self.dest(call, dest)? else {
            return Ok(None);
        };
        // SAFETY: forwarded from our caller.
        let r = unsafe { self.isend_raw(call, mode, ptr, len, to, env) }?;
        Ok(Some(r))
    }

    /// Starts sending `len` bytes at `ptr` (or, for a staged operation, its key) to world
    /// rank `to`.
    ///
    /// # Safety
    /// `ptr` is valid for reads of `len` bytes (or a live staged operation's key) until the
    /// send completes.
    unsafe fn isend_raw(
        &self,
        call: &'static str,
        mode: SendMode,
        ptr: *const u8,
        len: usize,
        to: u32,
        env: Envelope,
    ) -> Result<Option<ReqId>> {
        self.rt.engine.with(|e| {
            // A fault while this call waits names it.
            e.enter(call);
            // SAFETY: forwarded from our caller.
            unsafe { e.isend(mode, ptr, len, to, env) }
        })
    }

    /// Sends the operation `s` stages and waits (`MPI_Send`, or with `synchronous`
    /// `MPI_Ssend`, through a derived datatype; see
    /// [`Staged::send_pieces`](crate::handle::typed::Staged::send_pieces)).
    ///
    /// # Safety
    /// The data bytes `s` was staged from are still readable.
    pub unsafe fn send_staged(
        &self,
        s: &mut crate::handle::typed::Staged,
        synchronous: bool,
        dest: i32,
        tag: i32,
    ) -> Result<()> {
        let call = if synchronous {
            "synchronous_send"
        } else {
            "send"
        };
        let mode = if synchronous {
            SendMode::Synchronous
        } else {
            SendMode::Standard
        };
        self.check_finalized(call)?;
        let env = self.envelope(call, tag)?;
        let Some(to) = self.dest(call, dest)? else {
            return Ok(());
        };
        // SAFETY: `s` (its staged bytes or registered pieces) outlives this blocking send,
        // and its data is readable by our caller's guarantee.
        if let Some(id) = unsafe { self.isend_raw(call, mode, s.ptr(), s.len(), to, env) }? {
            check(call, h::wait_id(&self.rt, id, call))?;
        }
        Ok(())
    }

    /// Receives into the operation `s` stages, waits, and unpacks into the user's memory
    /// (`MPI_Recv` through a derived datatype; see
    /// [`Staged::recv_pieces`](crate::handle::typed::Staged::recv_pieces)). The status
    /// counts bytes; a longer message is [`ErrorClass::Truncate`].
    ///
    /// # Safety
    /// The data bytes `s` was staged for are writable and not otherwise accessed.
    pub unsafe fn receive_staged(
        &self,
        s: &mut crate::handle::typed::Staged,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        // SAFETY: `s` outlives this blocking receive; its pieces are writable by our
        // caller's guarantee.
        let start = unsafe {
            self.start_receive_raw("receive", s.ptr(), s.len(), source.into(), tag.into())?
        };
        let st = finish(&self.rt, "receive", start, 1)?;
        // SAFETY: as above; the receive has completed.
        unsafe { s.unpack(st.bytes()) };
        Ok(st)
    }

    /// Stages a point-to-point send of `count` elements of `ty` at `user` (`len` packed
    /// bytes) for the C layer: offered as pieces when large with large blocks (see
    /// [`Staged::send_pieces`](crate::handle::typed::Staged::send_pieces)).
    ///
    /// # Safety
    /// The elements' data bytes are readable until the send completes.
    pub unsafe fn stage_send(
        &self,
        ty: crate::datatype::Type,
        user: *const std::ffi::c_void,
        count: u64,
        len: usize,
    ) -> crate::handle::typed::Staged {
        // SAFETY: forwarded from our caller.
        unsafe { crate::handle::typed::Staged::send_pieces(ty, user, count, len, &self.rt.engine) }
    }

    /// Stages a point-to-point receive into `count` elements of `ty` at `user`, offered as
    /// pieces when large with large blocks (see
    /// [`Staged::recv_pieces`](crate::handle::typed::Staged::recv_pieces)).
    pub fn stage_recv(
        &self,
        ty: crate::datatype::Type,
        user: *mut std::ffi::c_void,
        count: u64,
        len: usize,
    ) -> crate::handle::typed::Staged {
        crate::handle::typed::Staged::recv_pieces(ty, user, count, len, &self.rt.engine)
    }

    /// Sends `buf` to rank `dest` with `tag` (`MPI_Send`; also serves `MPI_Rsend`).
    #[inline]
    pub fn send<B: Buffer + ?Sized>(&self, buf: &B, dest: i32, tag: i32) -> Result<()> {
        if let Some(Some(id)) = self.start_send("send", SendMode::Standard, buf, dest, tag)? {
            check("send", h::wait_id(&self.rt, id, "send"))?;
        }
        Ok(())
    }

    /// Sends and returns once the receiver has matched the message (`MPI_Ssend`).
    pub fn synchronous_send<B: Buffer + ?Sized>(&self, buf: &B, dest: i32, tag: i32) -> Result<()> {
        if let Some(Some(id)) =
            self.start_send("synchronous_send", SendMode::Synchronous, buf, dest, tag)?
        {
            check(
                "synchronous_send",
                h::wait_id(&self.rt, id, "synchronous_send"),
            )?;
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
        // SAFETY: `buf` stays exclusively borrowed until this blocking receive completes.
        let start =
            unsafe { self.start_receive("receive", buf.bytes_mut(), source.into(), tag.into())? };
        finish(&self.rt, "receive", start, buf.element_size())
    }

    /// Starts a receive into `bytes`.
    ///
    /// # Safety
    /// `bytes` must stay valid and otherwise untouched until the receive completes.
    pub(crate) unsafe fn start_receive(
        &self,
        call: &'static str,
        bytes: &mut [u8],
        source: Source,
        tag: Tag,
    ) -> Result<RecvStart> {
        // SAFETY: forwarded from our caller.
        unsafe { self.start_receive_raw(call, bytes.as_mut_ptr(), bytes.len(), source, tag) }
    }

    /// Starts a receive into `cap` bytes at `ptr` (or a staged operation's key).
    ///
    /// # Safety
    /// As for [`start_receive`](Self::start_receive), for the `cap` bytes at `ptr`.
    pub(crate) unsafe fn start_receive_raw(
        &self,
        call: &'static str,
        ptr: *mut u8,
        cap: usize,
        source: Source,
        tag: Tag,
    ) -> Result<RecvStart> {
        self.check_finalized(call)?;
        let (src, tag) = self.recv_args(call, source, tag)?;
        let ctx = self.state.context;
        let world_src = self.world_rank_of(src);
        self.rt.engine.with(|e| {
            e.enter(call);
            // SAFETY: forwarded from our caller.
            unsafe { e.irecv_from(ptr, cap, ctx, src, tag, world_src) }
        })
    }

    /// Receives into a slice of a [`Checked`] type (`bool`, `char`): the message lands in its
    /// raw form first, and a raw value that is no valid element is an [`ErrorClass::Type`]
    /// error (the slice is then left unchanged).
    pub fn receive_into_checked<T: Checked + Element>(
        &self,
        buf: &mut [T],
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        receive_checked("receive", buf, |raw| self.receive_into(raw, source, tag))
    }

    /// Receives a message of any length into a new vector of a [`Checked`] type (as
    /// [`receive_vec`](Self::receive_vec), on a matched probe); a raw value that is no valid
    /// element is an [`ErrorClass::Type`] error.
    pub fn receive_vec_checked<T: Checked + Element>(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<(Vec<T>, Status)> {
        let (msg, _) = self.matched_probe::<<T as Element>::Raw>(source, tag)?;
        msg.matched_receive_vec_checked()
    }

    /// [`send_receive_into`](Self::send_receive_into) receiving into a slice of a
    /// [`Checked`] type (`MPI_Sendrecv`): the received values are checked before any reaches
    /// `recv` (an invalid one is an [`ErrorClass::Type`] error, `recv` left unchanged).
    pub fn send_receive_into_checked<S: Buffer + ?Sized, T: Checked + Element>(
        &self,
        send: &S,
        dest: i32,
        send_tag: i32,
        recv: &mut [T],
        source: impl Into<Source>,
        recv_tag: impl Into<Tag>,
    ) -> Result<Status> {
        receive_checked("send_receive", recv, |raw| {
            self.send_receive_into(send, dest, send_tag, raw, source, recv_tag)
        })
    }

    /// [`send_receive_replace_into`](Self::send_receive_replace_into) on a slice of a
    /// [`Checked`] type (`MPI_Sendrecv_replace`): `buf` is sent, and replaced by the received
    /// values only once all are checked (an invalid one is an [`ErrorClass::Type`] error and
    /// `buf` keeps what was sent).
    pub fn send_receive_replace_into_checked<T: Checked + Element>(
        &self,
        buf: &mut [T],
        dest: i32,
        send_tag: i32,
        source: impl Into<Source>,
        recv_tag: impl Into<Tag>,
    ) -> Result<Status> {
        receive_checked("send_receive_replace", buf, |raw| {
            self.send_receive_replace_into(raw, dest, send_tag, source, recv_tag)
        })
    }

    /// Receives a message of any length into a new vector. Built on a matched probe, so that
    /// under [`Multiple`](crate::Multiple) no other thread can take the message between the
    /// probe and the receive.
    pub fn receive_vec<T: Equivalence>(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<(Vec<T>, Status)> {
        let (msg, _) = self.matched_probe::<T>(source, tag)?;
        msg.matched_receive_vec()
    }

    /// Waits for a matching message without receiving it (`MPI_Probe`); the status counts
    /// elements of `T`.
    pub fn probe<T: Equivalence>(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        let (source, tag) = (source.into(), tag.into());
        block_on(&self.rt, || self.immediate_probe::<T>(source, tag))
    }

    /// Checks for a matching message without receiving it (`MPI_Iprobe`); the status counts
    /// elements of `T`.
    pub fn immediate_probe<T: Equivalence>(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Option<Status>> {
        self.check_finalized("probe")?;
        let (src, tag) = self.recv_args("probe", source.into(), tag.into())?;
        let elem = std::mem::size_of::<T>();
        if src == PROC_NULL {
            return Ok(Some(Status::proc_null().with_elem(elem)));
        }
        let ctx = self.state.context;
        let st = h::progress_then(&self.rt, |e| e.iprobe(ctx, src, tag));
        Ok(st.map(|s| s.with_elem(elem)))
    }

    /// Starts a send (`MPI_Isend`).
    // Inlined with `immediate_send_mode` (see `Request::new`): the request is built where the
    // caller keeps it instead of being reloaded, once per send, from a returned copy.
    #[inline(always)]
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

    #[inline(always)]
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
            _ => RecvStart::Done(Status {
                bytes: buf.bytes().len() as u64,
                ..Status::default()
            }),
        };
        Ok(Request::new(&self.rt, start, buf.element_size(), scope))
    }

    /// Starts a receive into `buf` (`MPI_Irecv`).
    pub fn immediate_receive_into<'a, 's, B: BufferMut + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Request<'a, 's>> {
        // SAFETY: the exclusive borrow `'a` is held by the Request (which waits on drop) and
        // outlives its Scope (which waits for leaked requests).
        let start = unsafe {
            self.start_receive(
                "immediate_receive",
                buf.bytes_mut(),
                source.into(),
                tag.into(),
            )?
        };
        let elem = buf.element_size();
        Ok(Request::new(&self.rt, start, elem, scope))
    }

    /// Starts a receive of up to `len` bytes at `ptr` (`MPI_Irecv` on raw memory, as the C
    /// interface needs it). Several such receives may target the same memory: the engine writes
    /// them one after another on this process's progress thread.
    ///
    /// # Safety
    /// `ptr` must be valid for writes of `len` bytes, and not read or freed by anything else,
    /// until the request completes (the scope guarantees completion before it ends).
    #[inline(always)]
    pub unsafe fn immediate_receive_raw<'a, 's>(
        &self,
        scope: &'s Scope<'a>,
        ptr: *mut u8,
        len: usize,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Request<'a, 's>> {
        // SAFETY: forwarded from our caller (who vouches for `ptr`/`len` until completion).
        let start = unsafe {
            self.start_receive_raw("immediate_receive", ptr, len, source.into(), tag.into())?
        };
        Ok(Request::new(&self.rt, start, 1, scope))
    }

    /// Starts a ready-mode send (`MPI_Irsend`); oxmpi gives it the standard protocol.
    pub fn immediate_ready_send<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Request<'a, 's>> {
        self.immediate_send(scope, buf, dest, tag)
    }

    /// Starts a buffered send (`MPI_Ibsend`): the data is copied into the attached buffer at
    /// once, so the returned request is already complete.
    pub fn immediate_buffered_send<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Request<'a, 's>> {
        self.buffered_send(buf, dest, tag)?;
        let done = Status {
            bytes: buf.bytes().len() as u64,
            ..Status::default()
        };
        Ok(Request::new(
            &self.rt,
            RecvStart::Done(done),
            buf.element_size(),
            scope,
        ))
    }

    /// Sends `send` to `dest` and receives into `recv` from `source` at once (`MPI_Sendrecv`).
    /// Returns only once both halves are over, also when one of them fails.
    pub fn send_receive_into<S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        dest: i32,
        send_tag: i32,
        recv: &mut R,
        source: impl Into<Source>,
        recv_tag: impl Into<Tag>,
    ) -> Result<Status> {
        const CALL: &str = "send_receive";
        // Check the send's arguments first, so that few failures remain once the receive
        // is posted.
        self.check_finalized(CALL)?;
        let env = self.envelope(CALL, send_tag)?;
        let to = self.dest(CALL, dest)?;
        let elem = recv.element_size();
        // SAFETY: `recv` stays exclusively borrowed until this call returns, and every path
        // below completes (or cancels) the receive first.
        let rstart =
            unsafe { self.start_receive(CALL, recv.bytes_mut(), source.into(), recv_tag.into())? };
        let sent = match to {
            None => Ok(None),
            Some(to) => {
                let bytes = send.bytes();
                // SAFETY: `send` is borrowed until this call returns, after the send completed.
                self.rt.engine.with(|e| unsafe {
                    e.isend(SendMode::Standard, bytes.as_ptr(), bytes.len(), to, env)
                })
            }
        };
        let sid = match sent {
            Ok(sid) => sid,
            Err(e) => {
                if let RecvStart::Pending(id) = rstart {
                    h::cancel_or_wait(&self.rt, id);
                }
                return Err(e);
            }
        };
        let sst = sid.map(|id| h::wait_id(&self.rt, id, CALL));
        let rst = finish(&self.rt, CALL, rstart, elem);
        if let Some(st) = sst {
            check(CALL, st)?;
        }
        rst
    }

    /// Sends in ready mode (`MPI_Rsend`): the receive must already be posted. oxmpi gives it
    /// the standard-mode protocol, which the standard allows.
    pub fn ready_send<B: Buffer + ?Sized>(&self, buf: &B, dest: i32, tag: i32) -> Result<()> {
        self.send(buf, dest, tag)
    }

    /// Copies `buf` into the space attached with
    /// [`Universe::buffer_attach`](crate::Universe::buffer_attach) and returns at once
    /// (`MPI_Bsend`). Too little space is an [`ErrorClass::Buffer`] error.
    pub fn buffered_send<B: Buffer + ?Sized>(&self, buf: &B, dest: i32, tag: i32) -> Result<()> {
        self.check_finalized("buffered_send")?;
        let env = self.envelope("buffered_send", tag)?;
        let Some(to) = self.dest("buffered_send", dest)? else {
            return Ok(());
        };
        self.rt.engine.with(|e| e.bsend(buf.bytes(), to, env))
    }

    /// Sends `buf` and receives a message of the same size into it (`MPI_Sendrecv_replace`).
    pub fn send_receive_replace_into<B: BufferMut + ?Sized>(
        &self,
        buf: &mut B,
        dest: i32,
        send_tag: i32,
        source: impl Into<Source>,
        recv_tag: impl Into<Tag>,
    ) -> Result<Status> {
        let copy: Vec<u8> = buf.bytes_mut().to_vec();
        let elem = buf.element_size();
        let st =
            self.send_receive_into(&copy[..], dest, send_tag, buf.bytes_mut(), source, recv_tag)?;
        Ok(st.with_elem(elem))
    }

    /// Waits for a matching message and takes it out of the matching queues, so that only the
    /// returned [`Message`] can receive it (`MPI_Mprobe`); the status counts elements of `T`.
    pub fn matched_probe<T: Equivalence>(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<(Message<L>, Status)> {
        let (source, tag) = (source.into(), tag.into());
        block_on(&self.rt, || self.immediate_matched_probe::<T>(source, tag))
    }

    /// Like [`matched_probe`](Self::matched_probe) but returns `None` at once if no message
    /// matches (`MPI_Improbe`).
    pub fn immediate_matched_probe<T: Equivalence>(
        &self,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Option<(Message<L>, Status)>> {
        self.check_finalized("matched_probe")?;
        let (src, tag) = self.recv_args("matched_probe", source.into(), tag.into())?;
        let elem = std::mem::size_of::<T>();
        let message = |msg| Message {
            rt: self.rt.clone(),
            msg,
            _level: L::Marker::default(),
        };
        if src == PROC_NULL {
            return Ok(Some((message(None), Status::proc_null().with_elem(elem))));
        }
        let ctx = self.state.context;
        let found = h::progress_then(&self.rt, |e| e.improbe(ctx, src, tag));
        Ok(found.map(|u| {
            let st = Status {
                source: u.env.src as i32,
                tag: u.env.tag,
                bytes: u.body.len(),
                ..Status::default()
            };
            (message(Some(u)), st.with_elem(elem))
        }))
    }

    /// A persistent send (`MPI_Send_init`): [`Persistent::start`] sends `buf` each time.
    pub fn send_init<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Persistent<'a, 's>> {
        self.send_init_mode(scope, Mode::Standard, "send_init", buf, dest, tag)
    }

    /// A persistent synchronous send (`MPI_Ssend_init`).
    pub fn synchronous_send_init<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Persistent<'a, 's>> {
        self.send_init_mode(scope, Mode::Synchronous, "ssend_init", buf, dest, tag)
    }

    /// A persistent ready-mode send (`MPI_Rsend_init`): the receive must be posted whenever
    /// it starts.
    pub fn ready_send_init<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Persistent<'a, 's>> {
        self.send_init_mode(scope, Mode::Ready, "rsend_init", buf, dest, tag)
    }

    /// A persistent buffered send (`MPI_Bsend_init`): each start copies `buf` into the
    /// attached buffer, as [`buffered_send`](Self::buffered_send) does.
    pub fn buffered_send_init<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Persistent<'a, 's>> {
        self.send_init_mode(scope, Mode::Buffered, "bsend_init", buf, dest, tag)
    }

    fn send_init_mode<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        mode: Mode,
        call: &str,
        buf: &'a B,
        dest: i32,
        tag: i32,
    ) -> Result<Persistent<'a, 's>> {
        let env = self.envelope(call, tag)?;
        let to = self.dest(call, dest)?;
        let bytes = buf.bytes();
        let op = PersistentOp::Send {
            mode,
            buf: bytes.as_ptr(),
            len: bytes.len(),
            to,
            env,
        };
        Ok(Persistent::new(
            self.rt.clone(),
            op,
            buf.element_size(),
            scope,
        ))
    }

    /// A persistent receive (`MPI_Recv_init`): [`Persistent::start`] posts it each time.
    pub fn receive_init<'a, 's, B: BufferMut + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Persistent<'a, 's>> {
        let (src, tag) = self.recv_args("receive_init", source.into(), tag.into())?;
        let elem = buf.element_size();
        let bytes = buf.bytes_mut();
        let op = PersistentOp::Recv {
            buf: bytes.as_mut_ptr(),
            cap: bytes.len(),
            ctx: self.state.context,
            src,
            tag,
            world_src: self.world_rank_of(src),
        };
        Ok(Persistent::new(self.rt.clone(), op, elem, scope))
    }

    /// Starts a receive into a slice of a [`Checked`] type (`bool`, `char`; `MPI_Irecv`): the
    /// message lands in raw form in the request, and on completion a value that is no valid
    /// element is an [`ErrorClass::Type`] error leaving `buf` unchanged (as
    /// [`receive_into_checked`](Self::receive_into_checked)).
    pub fn immediate_receive_into_checked<'a, 's, T: Checked + Element>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<CheckedRequest<'a, 's, T>> {
        let (source, tag) = (source.into(), tag.into());
        CheckedRequest::start("immediate_receive", buf, true, |raw| {
            self.immediate_receive_into(scope, raw, source, tag)
        })
    }

    /// A persistent receive into a slice of a [`Checked`] type (`MPI_Recv_init`); every
    /// completion checks the values before they reach `buf`.
    pub fn receive_init_checked<'a, 's, T: Checked + Element>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<CheckedPersistent<'a, 's, T>> {
        let (source, tag) = (source.into(), tag.into());
        CheckedPersistent::make("receive_init", buf, true, |raw| {
            self.receive_init(scope, raw, source, tag)
        })
    }
}

/// Runs the blocking receive `f` into a raw copy of `buf`, then checks the values it
/// received (as many as its status counts) into `buf`: an invalid one is an
/// [`ErrorClass::Type`] error naming `call`, and `buf` is left unchanged.
pub(crate) fn receive_checked<T: Checked + Element>(
    call: &'static str,
    buf: &mut [T],
    f: impl FnOnce(&mut [<T as Element>::Raw]) -> Result<Status>,
) -> Result<Status> {
    let mut raw = T::raw(buf).to_vec();
    let st = f(&mut raw);
    finish_checked(call, true, &raw, buf, st)
}

/// Waits for a started operation and checks its status.
fn finish(rt: &Runtime, call: &'static str, start: RecvStart, elem: usize) -> Result<Status> {
    let st = match start {
        RecvStart::Done(st) => st,
        RecvStart::Pending(id) => h::wait_id(rt, id, call),
    };
    check(call, st.with_elem(elem))
}

/// A message taken by a matched probe; only it can receive the message (`MPI_Message`).
///
/// Dropping it without receiving it receives the message into a scratch buffer and throws it
/// away (a debug build says so on stderr), so that a rendezvous sender is not left waiting
/// and the loss is visible.
///
/// It carries the thread level of the communicator it came from: below
/// [`Serialized`](crate::Serialized) it cannot leave its thread, since receiving it drives
/// the engine, which is unlocked there.
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// let universe = oxmpi::init().unwrap(); // Threading::Single
/// let (m, _) = universe.world().matched_probe::<u8>(0, 0).unwrap();
/// needs_send(m); // error: a Single-level message cannot leave its thread
/// ```
/// ```compile_fail
/// fn needs_sync<T: Sync>(_: T) {}
/// let universe = oxmpi::init_with::<oxmpi::Funneled>().unwrap();
/// let (m, _) = universe.world().matched_probe::<u8>(0, 0).unwrap();
/// needs_sync(m); // error: nor be shared at Funneled
/// ```
/// ```no_run
/// fn needs_send_sync<T: Send + Sync>(_: T) {}
/// let universe = oxmpi::init_with::<oxmpi::Multiple>().unwrap();
/// let (m, _) = universe.world().matched_probe::<u8>(0, 0).unwrap();
/// needs_send_sync(m);
/// ```
#[derive(Debug)]
#[must_use = "a matched message is lost unless it is received (dropping it discards it)"]
pub struct Message<L: ThreadLevel = crate::Single> {
    rt: Arc<Runtime>,
    /// `None` for the message of a probe on `PROC_NULL` (`MPI_MESSAGE_NO_PROC`).
    msg: Option<Unexpected>,
    _level: L::Marker,
}

impl<L: ThreadLevel> Message<L> {
    pub(crate) fn start(mut self, bytes: &mut [u8]) -> (Arc<Runtime>, RecvStart) {
        let rt = self.rt.clone();
        let start = match self.msg.take() {
            None => RecvStart::Done(Status::proc_null()),
            // SAFETY: `bytes` is borrowed by the caller until the receive completes (blocking
            // receive waits; the immediate form ties it to a scoped Request).
            Some(u) => rt
                .engine
                .with(|e| unsafe { e.recv_unexpected(u, bytes.as_mut_ptr(), bytes.len()) }),
        };
        (rt, start)
    }

    /// Whether this is the message of a probe on `PROC_NULL` (`MPI_MESSAGE_NO_PROC`).
    pub fn is_no_proc(&self) -> bool {
        self.msg.is_none()
    }

    /// Receives the message into a new vector of as many `T` as it holds (rsmpi's
    /// `matched_receive_vec`).
    pub fn matched_receive_vec<T: Equivalence>(self) -> Result<(Vec<T>, Status)> {
        let bytes = self.msg.as_ref().map_or(0, |u| u.body.len());
        let size = std::mem::size_of::<T>().max(1) as u64;
        let mut v = vec![T::zeroed(); bytes.div_ceil(size) as usize];
        let st = self.matched_receive_into(&mut v[..])?;
        Ok((v, st))
    }

    /// Receives one value (rsmpi's `matched_receive`).
    pub fn matched_receive<T: Equivalence>(self) -> Result<(T, Status)> {
        let mut v = T::zeroed();
        let st = self.matched_receive_into(std::slice::from_mut(&mut v))?;
        Ok((v, st))
    }

    /// Receives the message into `buf` (`MPI_Mrecv`).
    pub fn matched_receive_into<B: BufferMut + ?Sized>(self, buf: &mut B) -> Result<Status> {
        let elem = buf.element_size();
        let (rt, start) = self.start(buf.bytes_mut());
        finish(&rt, "matched_receive", start, elem)
    }

    /// Receives the message into a slice of a [`Checked`] type (`MPI_Mrecv`): a raw value
    /// that is no valid element is an [`ErrorClass::Type`] error and leaves `buf` unchanged.
    pub fn matched_receive_into_checked<T: Checked + Element>(
        self,
        buf: &mut [T],
    ) -> Result<Status> {
        receive_checked("matched_receive", buf, |raw| self.matched_receive_into(raw))
    }

    /// Receives the message into a new vector of a [`Checked`] type, as many as it holds.
    pub fn matched_receive_vec_checked<T: Checked + Element>(self) -> Result<(Vec<T>, Status)> {
        let (raw, st) = self.matched_receive_vec::<<T as Element>::Raw>()?;
        Ok((checked_values("matched_receive", &raw)?, st))
    }

    /// Starts receiving the message into a slice of a [`Checked`] type (`MPI_Imrecv`): the
    /// values land in a stage the request owns and are checked on completion, as in
    /// [`Communicator::immediate_receive_into_checked`].
    pub fn immediate_matched_receive_into_checked<'a, 's, T: Checked + Element>(
        self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
    ) -> Result<CheckedRequest<'a, 's, T>> {
        CheckedRequest::start("immediate_matched_receive", buf, true, |raw| {
            Ok(self.immediate_matched_receive_into(scope, raw))
        })
    }

    /// Starts receiving the message into `buf` (`MPI_Imrecv`).
    pub fn immediate_matched_receive_into<'a, 's, B: BufferMut + ?Sized>(
        self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
    ) -> Request<'a, 's> {
        let elem = buf.element_size();
        let (rt, start) = self.start(buf.bytes_mut());
        Request::new(&rt, start, elem, scope)
    }
}

impl<L: ThreadLevel> Drop for Message<L> {
    fn drop(&mut self) {
        let Some(u) = self.msg.take() else {
            return;
        };
        let (src, tag, len) = (u.env.src, u.env.tag, u.body.len());
        if cfg!(debug_assertions) {
            eprintln!(
                "oxmpi: rank {}: a matched message (source {src}, tag {tag}, {len} bytes) was \
                 dropped without being received; it is discarded",
                self.rt.rank
            );
        }
        let mut scratch = vec![0u8; len as usize];
        // SAFETY: `scratch` lives until the receive below has completed.
        let start = self
            .rt
            .engine
            .with(|e| unsafe { e.recv_unexpected(u, scratch.as_mut_ptr(), scratch.len()) });
        if let RecvStart::Pending(id) = start {
            crate::request::drop_wait(&self.rt, id, "message drop");
        }
    }
}

fn bad_rank(call: &str, rank: i32, size: i32) -> Error {
    Error::new(
        ErrorClass::Rank,
        format!("{call}: rank {rank} is not in the communicator (size {size})"),
    )
}

/// `count` elements of a datatype in a borrowed buffer, checked to lie inside it: what
/// [`Communicator::send_view`] sends. Non-contiguous data is packed through the datatype
/// engine; padding and gaps are never read.
pub struct View<'a> {
    ptr: *const u8,
    ty: crate::datatype::Type,
    count: u64,
    _buf: std::marker::PhantomData<&'a [u8]>,
}

/// `count` elements of a datatype in a mutably borrowed buffer, checked to lie inside it:
/// what [`Communicator::receive_view`] fills. Bytes outside the type map are left untouched.
pub struct ViewMut<'a> {
    ptr: *mut u8,
    ty: crate::datatype::Type,
    count: u64,
    _buf: std::marker::PhantomData<&'a mut [u8]>,
}

/// Checks that `count` elements of `ty` with origin at the start of a `len`-byte buffer
/// stay inside it ([`ErrorClass::Buffer`] otherwise: never undefined behaviour).
fn check_view(call: &str, ty: &crate::datatype::Type, count: u64, len: usize) -> Result<()> {
    crate::datatype::pack::pack_size(ty, count)?;
    if let Some((lo, hi)) = crate::datatype::pack::span(ty, count) {
        if lo < 0 || hi > len as i64 {
            return Err(Error::new(
                ErrorClass::Buffer,
                format!("{call}: {count} elements touch bytes {lo}..{hi} of a {len}-byte buffer"),
            ));
        }
    }
    Ok(())
}

impl<'a> View<'a> {
    /// `count` elements of `ty` whose origin is the start of `buf`.
    pub fn new<T: Equivalence>(
        buf: &'a [T],
        ty: &crate::datatype::Type,
        count: u64,
    ) -> Result<View<'a>> {
        let bytes: &[u8] = bytemuck::cast_slice(buf);
        check_view("View::new", ty, count, bytes.len())?;
        Ok(View {
            ptr: bytes.as_ptr(),
            ty: ty.clone(),
            count,
            _buf: std::marker::PhantomData,
        })
    }

    /// `values` through their own datatype (structs with `#[derive(Equivalence)]`: the
    /// padding between fields is never read).
    pub fn of<T: crate::datatype::Datatyped>(values: &'a [T]) -> View<'a> {
        View {
            ptr: values.as_ptr().cast(),
            ty: T::datatype(),
            count: values.len() as u64,
            _buf: std::marker::PhantomData,
        }
    }
}

impl<'a> ViewMut<'a> {
    /// `count` elements of `ty` whose origin is the start of `buf`.
    pub fn new<T: Equivalence>(
        buf: &'a mut [T],
        ty: &crate::datatype::Type,
        count: u64,
    ) -> Result<ViewMut<'a>> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        check_view("ViewMut::new", ty, count, bytes.len())?;
        Ok(ViewMut {
            ptr: bytes.as_mut_ptr(),
            ty: ty.clone(),
            count,
            _buf: std::marker::PhantomData,
        })
    }

    /// `values` through their own datatype: the padding of each value is left untouched.
    pub fn of<T: crate::datatype::Datatyped>(values: &'a mut [T]) -> ViewMut<'a> {
        ViewMut {
            ptr: values.as_mut_ptr().cast(),
            ty: T::datatype(),
            count: values.len() as u64,
            _buf: std::marker::PhantomData,
        }
    }
}

impl View<'_> {
    /// The origin address, datatype and count (for the one-sided operations in `window.rs`).
    pub(crate) fn parts(&self) -> (*const u8, &crate::datatype::Type, u64) {
        (self.ptr, &self.ty, self.count)
    }
}

impl ViewMut<'_> {
    /// As [`View::parts`], for writes.
    pub(crate) fn parts(&mut self) -> (*mut u8, &crate::datatype::Type, u64) {
        (self.ptr, &self.ty, self.count)
    }
}

impl<L: ThreadLevel> Communicator<L> {
    /// Sends the elements `view` shows (`MPI_Send` with a derived datatype): contiguous
    /// data goes as it is, anything else packed first.
    pub fn send_view(&self, view: &View<'_>, dest: i32, tag: i32) -> Result<()> {
        let len = (view.ty.size() * view.count) as usize;
        if view.ty.is_contiguous() {
            // SAFETY: `check_view` (or `Datatyped`'s contract) proved the `len` data bytes
            // from origin + lb lie in the borrowed buffer.
            let bytes = unsafe {
                std::slice::from_raw_parts(view.ptr.wrapping_offset(view.ty.lb() as isize), len)
            };
            return self.send(bytes, dest, tag);
        }
        // SAFETY: the elements' data bytes lie in the borrowed buffer (checked, or the
        // `Datatyped` contract), readable for this call.
        unsafe {
            let mut s = crate::handle::typed::Staged::send_pieces(
                view.ty.clone(),
                view.ptr.cast(),
                view.count,
                len,
                &self.rt.engine,
            );
            self.send_staged(&mut s, false, dest, tag)
        }
    }

    /// Receives into the elements `view` shows (`MPI_Recv` with a derived datatype); the
    /// status counts bytes. A longer message is [`ErrorClass::Truncate`].
    pub fn receive_view(
        &self,
        view: &mut ViewMut<'_>,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        let len = (view.ty.size() * view.count) as usize;
        if view.ty.is_contiguous() {
            // SAFETY: as in `send_view`, and the buffer is exclusively borrowed.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(view.ptr.wrapping_offset(view.ty.lb() as isize), len)
            };
            return self.receive_into(bytes, source, tag);
        }
        let mut s = crate::handle::typed::Staged::recv_pieces(
            view.ty.clone(),
            view.ptr.cast(),
            view.count,
            len,
            &self.rt.engine,
        );
        // SAFETY: the elements' data bytes lie in the exclusively borrowed buffer.
        unsafe { self.receive_staged(&mut s, source, tag) }
    }
}

/// A nonblocking send or receive through a view ([`Communicator::immediate_send_view`],
/// [`Communicator::immediate_receive_view`]): its request and, for non-contiguous data, the
/// packed bytes it moves. A receive unpacks them into the viewed buffer when it completes
/// (by [`wait`](Self::wait), [`test`](Self::test) or drop).
#[must_use = "a request must be waited for or tested"]
pub struct ViewRequest<'a, 's> {
    /// `None` only once waited for.
    req: Option<Request<'a, 's>>,
    /// The packed bytes the request reads or writes; the request completes before they are
    /// dropped (see `Drop`), and a leaked `ViewRequest` leaks them too.
    staged: Option<crate::handle::typed::Staged>,
    recv: bool,
}

impl ViewRequest<'_, '_> {
    /// Blocks until the operation completes (`MPI_Wait`); a receive's data is then in the
    /// viewed buffer, and its status counts bytes.
    pub fn wait(mut self) -> Result<Status> {
        match self.req.take() {
            Some(r) => {
                let st = r.wait();
                self.finish(st)
            }
            None => Err(Error::new(
                ErrorClass::Request,
                "wait: the view request was already completed",
            )),
        }
    }

    /// Completes the operation if it is done (`MPI_Test`); `None` while in flight. Once it
    /// has returned `Some`, the request is inactive, as [`Request::test`] says.
    pub fn test(&mut self) -> Option<Result<Status>> {
        let st = self.req.as_mut()?.test()?;
        Some(self.finish(st))
    }

    /// Unpacks a completed receive into the viewed buffer.
    fn finish(&mut self, st: Result<Status>) -> Result<Status> {
        if let (Ok(s), Some(staged), true) = (&st, &self.staged, self.recv) {
            // SAFETY: the elements' data bytes lie in the buffer the view borrows
            // exclusively for `'a` (checked against the slice, or the `Datatyped` contract);
            // the staged bytes are ours and the request that wrote them has completed.
            unsafe { staged.unpack(s.bytes()) };
        }
        st
    }
}

impl Drop for ViewRequest<'_, '_> {
    fn drop(&mut self) {
        if let Some(r) = self.req.take() {
            if !r.is_inactive() {
                // Completing here keeps the staged bytes alive for as long as the engine
                // uses them, and delivers a receive; its error has no caller to go to.
                let st = r.wait();
                let _ = self.finish(st);
            }
        }
    }
}

impl<L: ThreadLevel> Communicator<L> {
    /// Starts a send of the elements `view` shows (`MPI_Isend` with a derived datatype):
    /// contiguous data is sent from the borrowed buffer, anything else is packed now into
    /// bytes the request owns.
    pub fn immediate_send_view<'a, 's>(
        &self,
        scope: &'s Scope<'a>,
        view: View<'a>,
        dest: i32,
        tag: i32,
    ) -> Result<ViewRequest<'a, 's>> {
        let len = (view.ty.size() * view.count) as usize;
        if view.ty.is_contiguous() {
            // SAFETY: `check_view` (or `Datatyped`'s contract) proved the `len` data bytes
            // from origin + lb lie in the buffer borrowed for `'a`.
            let bytes: &'a [u8] = unsafe {
                std::slice::from_raw_parts(view.ptr.wrapping_offset(view.ty.lb() as isize), len)
            };
            let req = self.immediate_send(scope, bytes, dest, tag)?;
            return Ok(ViewRequest {
                req: Some(req),
                staged: None,
                recv: false,
            });
        }
        // SAFETY: the elements' data bytes lie in the buffer borrowed for `'a`, readable
        // until the request completes.
        let mut s = unsafe {
            crate::handle::typed::Staged::send_pieces(
                view.ty.clone(),
                view.ptr.cast(),
                view.count,
                len,
                &self.rt.engine,
            )
        };
        const CALL: &str = "immediate_send";
        self.check_finalized(CALL)?;
        let env = self.envelope(CALL, tag)?;
        let start = match self.dest(CALL, dest)? {
            // SAFETY: the staged bytes (or registered pieces) are owned by the returned
            // `ViewRequest`, which completes the request before dropping them (a leaked one
            // leaks them, its scope completing the request); the data is borrowed for `'a`.
            Some(to) => {
                match unsafe { self.isend_raw(CALL, SendMode::Standard, s.ptr(), len, to, env) }? {
                    Some(id) => RecvStart::Pending(id),
                    None => RecvStart::Done(Status {
                        bytes: len as u64,
                        ..Status::default()
                    }),
                }
            }
            None => RecvStart::Done(Status {
                bytes: len as u64,
                ..Status::default()
            }),
        };
        let req = Request::new(&self.rt, start, 1, scope);
        Ok(ViewRequest {
            req: Some(req),
            staged: Some(s),
            recv: false,
        })
    }

    /// Starts a receive into the elements `view` shows (`MPI_Irecv` with a derived
    /// datatype). Non-contiguous data lands in bytes the request owns and is unpacked into
    /// the viewed buffer when the request completes; bytes outside the type map are left
    /// untouched. A longer message is [`ErrorClass::Truncate`].
    pub fn immediate_receive_view<'a, 's>(
        &self,
        scope: &'s Scope<'a>,
        view: ViewMut<'a>,
        source: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<ViewRequest<'a, 's>> {
        let len = (view.ty.size() * view.count) as usize;
        let (ptr, staged) = if view.ty.is_contiguous() {
            (view.ptr.wrapping_offset(view.ty.lb() as isize), None)
        } else {
            let mut s = crate::handle::typed::Staged::recv_pieces(
                view.ty.clone(),
                view.ptr.cast(),
                view.count,
                len,
                &self.rt.engine,
            );
            (s.ptr(), Some(s))
        };
        // SAFETY: `ptr` is either the viewed data (`len` bytes from origin + lb inside the
        // buffer exclusively borrowed for `'a`, as `check_view` proved) or the staged heap
        // bytes the returned `ViewRequest` owns, which it completes the request before
        // dropping (and leaks with itself if leaked, the scope completing the request).
        let req = unsafe { self.immediate_receive_raw(scope, ptr, len, source, tag)? };
        Ok(ViewRequest {
            req: Some(req),
            staged,
            recv: true,
        })
    }
}
