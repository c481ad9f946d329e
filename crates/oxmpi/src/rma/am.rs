//! Windows whose members span hosts: operations on a member of another host travel as
//! active messages, handled by that member's progress engine.
//!
//! # Design
//! - **Memory.** Each host keeps one window segment, created by the host's lowest window rank
//!   and mapped by that host's members; it holds the control words of every window rank (only
//!   those of the host's own members are used) and, for `allocate`, the memory of the host's
//!   members. Targets on the host are reached as on a one-host window (loads, stores,
//!   atomics, `process_vm_readv`/`writev`); targets elsewhere ([`super::Loc::Off`]) by an
//!   active message. `allocate_shared` needs one host and is refused across hosts.
//! - **Channels.** Two private communicators split from the window's own (so their contexts
//!   are the window's alone and never match a user message): requests travel on `req`,
//!   replies on `rep`. An origin sends one request (a [`HDR`]-byte header: kind, flags, op,
//!   datatype, byte address, length; then the data) with a tag of its own choosing and
//!   receives the reply with that tag from that target, so threads of one origin never take
//!   each other's replies. Operations of more than [`CHUNK`] bytes go as several requests
//!   (accumulates split on element boundaries, so every element stays atomic).
//! - **Completion.** Every request is answered once the target applied it (an ack, the data
//!   of a get, the old values of a get_accumulate/fetch_and_op/compare_and_swap, or the error
//!   class and message of a failed one); an origin waits for the answer before its call
//!   returns, so, as on one host, an operation is complete when its call returns and flush,
//!   fence and unlock only order what is already done.
//! - **Server.** Each member of such a window runs a [`Server`]: an engine schedule (advanced
//!   by every progress pass of the engine, so by any MPI call that waits or polls) keeping one
//!   receive of any source and tag posted on `req`. It applies the request to its own memory
//!   with the same code and the same per-element rule as an origin on its host (atomics under
//!   the accumulate lock held shared for few 4- and 8-byte elements of allocated memory,
//!   read-combine-write under it held exclusively otherwise), so accumulates from both kinds
//!   of origin to one location stay atomic with respect to each other. Inside the engine
//!   nothing may wait: a request whose lock is busy (accumulate lock, or a passive-target
//!   lock the target host's lock word grants on the origin's behalf) is kept and retried on
//!   the next pass, in arrival order.
//! - **Synchronization.** lock/unlock: a request taking or releasing the target's lock word
//!   for the origin; lock_all asks each target on another host in turn. PSCW: `post`
//!   increments the counter on the origin's host (a `Post` request to the origin's server),
//!   `complete` the one on the target's host (`Done`), after every operation was answered.
//!   Fence: every operation was answered, so the barrier suffices. `free` stops the server
//!   after its barrier (nothing is in flight then); dropping the window stops it too.
//! - **Progress without MPI calls.** A target computing outside MPI answers nothing. With
//!   `OXMPI_RMA_PROGRESS_THREAD=1` one thread per process drives the engine while any window
//!   spanning hosts exists (backing off to short sleeps when idle). It needs the locked
//!   engine (`MPI_THREAD_SERIALIZED` or `MULTIPLE`); below that the thread is not started and
//!   one line on stderr says so, and targets answer in their own MPI calls as without it.
//!
//! The p2p engine is untouched: the server is an ordinary schedule, and processes without
//! such windows run none.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::{ctl, err, Core, Flavor, Loc, LockType};
use crate::comm::{Comm, Communicator};
use crate::datatype::predefined::Predefined;
use crate::error::{Error, ErrorClass, Result};
use crate::op::Op;
use crate::p2p::engine::{Advance, Engine, RecvStart, Schedule, SendMode};
use crate::p2p::matching::{ANY_SOURCE, ANY_TAG};
use crate::p2p::request::ReqId;
use crate::p2p::wire::Envelope;
use crate::runtime::Runtime;
use crate::threading::Multiple;

/// Bytes of a request header; a multiple of 16, so the data after it is aligned for every
/// element type in the server's buffer.
pub(crate) const HDR: usize = 32;
/// Most data bytes one request carries (or one get reply returns).
pub(crate) const CHUNK: usize = 256 * 1024;
/// Bytes of a reply header: status (0 or an error class index + 1) and length.
const REPLY_HDR: usize = 8;
/// Longest error message a reply carries.
const MSG_MAX: usize = 240;
/// Tags an origin cycles through (each thread waits for its own).
const TAG_MASK: u32 = 0x7fff;

/// What a request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// Store the data.
    Put = 1,
    /// Reply with `len` bytes.
    Get = 2,
    /// Accumulate the data (reply with the old values if [`RESULT`] is set).
    Acc = 3,
    /// Compare-and-swap one element: origin then compare value follow.
    Cas = 4,
    /// Take the target's lock word for the origin (shared unless [`EXCLUSIVE`]).
    Lock = 5,
    /// Release it.
    Unlock = 6,
    /// The origin (here the target of a PSCW epoch) posted an exposure epoch to the server.
    Post = 7,
    /// The origin completed an access epoch at the server.
    Done = 8,
}

impl Kind {
    fn from_u8(k: u8) -> Option<Kind> {
        Some(match k {
            1 => Kind::Put,
            2 => Kind::Get,
            3 => Kind::Acc,
            4 => Kind::Cas,
            5 => Kind::Lock,
            6 => Kind::Unlock,
            7 => Kind::Post,
            8 => Kind::Done,
            _ => return None,
        })
    }
}

/// Flag: an exclusive lock.
const EXCLUSIVE: u8 = 1;
/// Flag: reply with the old values (get_accumulate, fetch_and_op).
const RESULT: u8 = 2;
/// Flag: no origin data (`MPI_NO_OP`).
const NO_ORIGIN: u8 = 4;

/// The flags of a lock request.
pub(crate) fn lock_flags(kind: LockType) -> u8 {
    match kind {
        LockType::Exclusive => EXCLUSIVE,
        LockType::Shared => 0,
    }
}

/// Error classes a reply may carry, by index.
const CLASSES: [ErrorClass; 8] = [
    ErrorClass::Other,
    ErrorClass::RmaRange,
    ErrorClass::Op,
    ErrorClass::Type,
    ErrorClass::Count,
    ErrorClass::Intern,
    ErrorClass::RmaSync,
    ErrorClass::RmaAttach,
];

/// Predefined operations by wire index (user operations are refused before sending).
fn op_index(op: &Op) -> u8 {
    // User operations never travel (refused before); they would decode as MPI_NO_OP.
    op.predefined_index().map_or(13, |i| i as u8)
}

fn op_from(i: u8) -> Option<Op> {
    Op::PREDEFINED.get(usize::from(i)).cloned()
}

/// A decoded request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    kind: Kind,
    flags: u8,
    op: u8,
    base: u16,
    addr: u64,
    len: u64,
}

impl Header {
    fn encode(&self) -> [u8; HDR] {
        let mut h = [0u8; HDR];
        h[0] = self.kind as u8;
        h[1] = self.flags;
        h[2] = self.op;
        h[4..6].copy_from_slice(&self.base.to_le_bytes());
        h[8..16].copy_from_slice(&self.addr.to_le_bytes());
        h[16..24].copy_from_slice(&self.len.to_le_bytes());
        h
    }

    fn decode(b: &[u8]) -> Option<Header> {
        if b.len() < HDR {
            return None;
        }
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(w)
        };
        Some(Header {
            kind: Kind::from_u8(b[0])?,
            flags: b[1],
            op: b[2],
            base: u16::from_le_bytes([b[4], b[5]]),
            addr: u64_at(8),
            len: u64_at(16),
        })
    }
}

/// An internal error: an off-host location reached a path for memory on this host.
pub(crate) fn misrouted(call: &str) -> Error {
    err(
        ErrorClass::Intern,
        format!("{call}: a target on another host reached the on-host path"),
    )
}

/// A window's active-message channels and its server's stop flag.
pub(crate) struct Am {
    req: Comm,
    rep: Comm,
    tag: AtomicU32,
    stop: Arc<AtomicBool>,
    /// Whether this window counts towards the progress thread.
    driven: AtomicBool,
}

impl Am {
    /// Splits the channels off the window's communicator `wcomm` (collective).
    pub(crate) fn new(wcomm: &Comm, call: &str) -> Result<Am> {
        let split = || {
            wcomm
                .split(0, wcomm.rank())?
                .ok_or_else(|| err(ErrorClass::Intern, format!("{call}: split gave nothing")))
        };
        Ok(Am {
            req: split()?,
            rep: split()?,
            tag: AtomicU32::new(0),
            stop: Arc::new(AtomicBool::new(false)),
            driven: AtomicBool::new(false),
        })
    }

    /// Stops the server (at its next pass) and releases the progress thread; idempotent.
    pub(crate) fn stop(&self) {
        if !self.stop.swap(true, Ordering::AcqRel) && self.driven.swap(false, Ordering::AcqRel) {
            driver_release();
        }
    }
}

/// Starts `core`'s server in the engine (and the progress thread if asked for).
pub(crate) fn serve(core: &Arc<Core>) -> Result<()> {
    let Some(am) = core.am.as_ref() else {
        return Ok(());
    };
    let server = Server {
        core: core.clone(),
        stop: am.stop.clone(),
        ctx: am.req.state.context,
        rep_ctx: am.rep.state.context,
        rep_members: am.rep.state.members.clone(),
        rank: am.rep.state.rank,
        buf: vec![0u128; (HDR + CHUNK) / 16],
        posted: None,
        deferred: VecDeque::new(),
        sending: Vec::new(),
    };
    core.comm.rt.engine.with(|e| -> Result<()> {
        let id = e.start_schedule(Box::new(server))?;
        // Nobody waits for it: freed when it finishes.
        e.detach(id);
        Ok(())
    })?;
    if driver_acquire(&core.comm.rt) {
        am.driven.store(true, Ordering::Release);
    }
    Ok(())
}

/// A request the server could not apply yet (its lock was busy).
struct Deferred {
    msg: Vec<u8>,
    src: u32,
    tag: i32,
}

/// The engine schedule that answers a window's active messages at this member.
struct Server {
    core: Arc<Core>,
    stop: Arc<AtomicBool>,
    ctx: u32,
    rep_ctx: u32,
    rep_members: Vec<u32>,
    rank: u32,
    /// The posted receive's buffer (u128: aligned for every element type).
    buf: Vec<u128>,
    posted: Option<ReqId>,
    deferred: VecDeque<Deferred>,
    /// Replies still being sent, with their bytes.
    sending: Vec<(ReqId, Vec<u8>)>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("rma::Server")
            .field("rank", &self.rank)
            .field("deferred", &self.deferred.len())
            .field("sending", &self.sending.len())
            .finish_non_exhaustive()
    }
}

/// Requests answered per pass at most, so one busy window cannot hold the engine.
const PER_PASS: usize = 64;

impl Schedule for Server {
    fn advance(&mut self, e: &mut Engine) -> Result<Advance> {
        self.sending.retain(|&(id, _)| e.test(id).is_none());
        if self.stop.load(Ordering::Acquire) {
            if let Some(id) = self.posted {
                if e.cancel(id) {
                    e.detach(id);
                    self.posted = None;
                } else if e.test(id).is_some() {
                    // Matched before the stop: a stray request of a freed window, dropped.
                    self.posted = None;
                }
            }
            return Ok(if self.posted.is_none() && self.sending.is_empty() {
                Advance::Done
            } else {
                Advance::Running
            });
        }
        // Retried in arrival order; an origin's later request waits behind its earlier one.
        let mut blocked: Vec<u32> = Vec::new();
        let mut i = 0;
        while i < self.deferred.len() {
            let d = &self.deferred[i];
            if !blocked.contains(&d.src)
                && handle(
                    &self.core,
                    e,
                    &d.msg,
                    d.src,
                    d.tag,
                    (self.rep_ctx, self.rank, &self.rep_members),
                    &mut self.sending,
                )
            {
                self.deferred.remove(i);
            } else {
                blocked.push(d.src);
                i += 1;
            }
        }
        for _ in 0..PER_PASS {
            let st = match self.posted {
                Some(id) => match e.test(id) {
                    Some(st) => {
                        self.posted = None;
                        st
                    }
                    None => break,
                },
                None => {
                    let bytes = bytemuck::cast_slice_mut::<u128, u8>(&mut self.buf);
                    // SAFETY: the buffer belongs to this schedule, which neither reads nor
                    // moves it (a Vec's heap block stays put) until the receive completes or
                    // is cancelled; a schedule is only dropped after it returned `Done`,
                    // which it returns only once `posted` is empty.
                    match unsafe {
                        e.irecv(
                            bytes.as_mut_ptr(),
                            bytes.len(),
                            self.ctx,
                            ANY_SOURCE,
                            ANY_TAG,
                        )
                    }? {
                        RecvStart::Done(st) => st,
                        RecvStart::Pending(id) => {
                            self.posted = Some(id);
                            break;
                        }
                    }
                }
            };
            if st.error.is_some() || st.cancelled {
                continue;
            }
            let bytes = bytemuck::cast_slice::<u128, u8>(&self.buf);
            let msg = &bytes[..(st.bytes as usize).min(bytes.len())];
            let src = st.source as u32;
            // A request behind a deferred one of the same origin waits its turn.
            let behind = self.deferred.iter().any(|d| d.src == src);
            if behind
                || !handle(
                    &self.core,
                    e,
                    msg,
                    src,
                    st.tag,
                    (self.rep_ctx, self.rank, &self.rep_members),
                    &mut self.sending,
                )
            {
                self.deferred.push_back(Deferred {
                    msg: msg.to_vec(),
                    src,
                    tag: st.tag,
                });
            }
        }
        Ok(Advance::Running)
    }

    fn run_unlocked(&mut self) -> std::thread::Result<()> {
        Ok(())
    }
}

/// Applies one request from window rank `src` and sends its reply; `false` if a lock it
/// needs is busy (nothing done, nothing sent).
fn handle(
    core: &Core,
    e: &mut Engine,
    msg: &[u8],
    src: u32,
    tag: i32,
    (rep_ctx, rank, rep_members): (u32, u32, &[u32]),
    sending: &mut Vec<(ReqId, Vec<u8>)>,
) -> bool {
    let mut out = vec![0u8; REPLY_HDR];
    let r = apply(core, msg, src, &mut out);
    match r {
        Ok(false) => return false,
        Ok(true) => {
            let len = (out.len() - REPLY_HDR) as u32;
            out[4..8].copy_from_slice(&len.to_le_bytes());
        }
        Err(error) => {
            let idx = CLASSES
                .iter()
                .position(|&c| c == error.class())
                .unwrap_or(0);
            let text = error.message().as_bytes();
            let text = &text[..text.len().min(MSG_MAX)];
            out.truncate(REPLY_HDR);
            out[0] = idx as u8 + 1;
            out[4..8].copy_from_slice(&(text.len() as u32).to_le_bytes());
            out.extend_from_slice(text);
        }
    }
    let Some(&world) = rep_members.get(src as usize) else {
        return true;
    };
    let env = Envelope {
        ctx: rep_ctx,
        src: rank,
        tag,
    };
    // SAFETY: `out`'s heap block stays valid and unchanged until the send completes: it is
    // kept in `sending` (moving the Vec does not move its block) until `test` says so, and
    // the server finishes only once `sending` is empty.
    let sent = unsafe { e.isend(SendMode::Standard, out.as_ptr(), out.len(), world, env) };
    // Otherwise sent already, or the peer is gone (its fault reaches whoever waits on it).
    if let Ok(Some(id)) = sent {
        sending.push((id, out));
    }
    true
}

/// Applies `msg` to this member's memory, the reply's data appended to `out`.
fn apply(core: &Core, msg: &[u8], src: u32, out: &mut Vec<u8>) -> Result<bool> {
    let h = Header::decode(msg).ok_or_else(|| {
        err(
            ErrorClass::Intern,
            format!("window active message of {} bytes is malformed", msg.len()),
        )
    })?;
    let data = &msg[HDR..];
    let len = usize::try_from(h.len).unwrap_or(usize::MAX);
    let me = core.me;
    let src = src as usize;
    if src >= core.size() {
        return Err(err(
            ErrorClass::Intern,
            "window active message from no member",
        ));
    }
    match h.kind {
        Kind::Put => {
            let loc = core.own_loc("put", h.addr, data.len())?;
            Core::write("put", loc, data)?;
        }
        Kind::Get => {
            if len > CHUNK {
                return Err(err(ErrorClass::Intern, "get: request larger than a chunk"));
            }
            let loc = core.own_loc("get", h.addr, len)?;
            out.resize(REPLY_HDR + len, 0);
            Core::read("get", loc, &mut out[REPLY_HDR..])?;
        }
        Kind::Acc => {
            let call = if h.flags & RESULT != 0 {
                "get_accumulate"
            } else {
                "accumulate"
            };
            let base = Predefined::from_handle(u32::from(h.base))
                .ok_or_else(|| err(ErrorClass::Type, format!("{call}: unknown datatype")))?;
            let op = op_from(h.op)
                .ok_or_else(|| err(ErrorClass::Op, format!("{call}: unknown operation")))?;
            let origin = if h.flags & NO_ORIGIN != 0 {
                &[][..]
            } else {
                data
            };
            if origin.len() != len && h.flags & NO_ORIGIN == 0 {
                return Err(err(ErrorClass::Intern, format!("{call}: length mismatch")));
            }
            let loc = core.own_loc(call, h.addr, len)?;
            let result = if h.flags & RESULT != 0 {
                out.resize(REPLY_HDR + len, 0);
                Some(&mut out[REPLY_HDR..])
            } else {
                None
            };
            let k = super::combine::kernel(&op, base)?;
            return core.acc_apply(call, loc, origin, result, me, base, (&op, k), len, false);
        }
        Kind::Cas => {
            if data.len() != 2 * len {
                return Err(err(ErrorClass::Intern, "compare_and_swap: length mismatch"));
            }
            let loc = core.own_loc("compare_and_swap", h.addr, len)?;
            out.resize(REPLY_HDR + len, 0);
            let (origin, compare) = data.split_at(len);
            return core.cas_apply(
                "compare_and_swap",
                loc,
                origin,
                compare,
                &mut out[REPLY_HDR..],
                me,
                false,
            );
        }
        Kind::Lock => {
            let w = core.word(core.layout.lock(me));
            let got = if h.flags & EXCLUSIVE != 0 {
                ctl::try_lock_exclusive(w)
            } else {
                ctl::try_lock_shared(w)
            };
            return Ok(got);
        }
        Kind::Unlock => {
            let w = core.word(core.layout.lock(me));
            if h.flags & EXCLUSIVE != 0 {
                ctl::unlock_exclusive(w);
            } else {
                ctl::unlock_shared(w);
            }
        }
        Kind::Post => {
            core.word(core.layout.post(src, me))
                .fetch_add(1, Ordering::Release);
        }
        Kind::Done => {
            core.word(core.layout.done(me, src))
                .fetch_add(1, Ordering::Release);
        }
    }
    Ok(true)
}

impl Core {
    /// Where `len` bytes at byte address `addr` of this member's window are (a byte offset,
    /// or an absolute address in a dynamic window), checked against its size or its attached
    /// regions: the server's side of [`Self::resolve_at`].
    fn own_loc(&self, call: &str, addr: u64, len: usize) -> Result<Loc> {
        let me = self.me;
        let range = || {
            err(
                ErrorClass::RmaRange,
                format!("{call}: {len} bytes at {addr:#x} are outside rank {me}'s window"),
            )
        };
        let end = addr.checked_add(len as u64).ok_or_else(range)?;
        if self.flavor == Flavor::Dynamic {
            let inside = (0..ctl::MAX_REGIONS).any(|i| {
                let o = self.layout.region(me, i);
                let a = self.word(o).load(Ordering::Acquire);
                let l = self.word(o + 8).load(Ordering::Acquire);
                l > 0 && addr >= a && end <= a + l
            });
            if !inside {
                return Err(range());
            }
            return Ok(Loc::Mapped(addr as *mut u8));
        }
        let tg = &self.targets[me];
        if end > tg.size || tg.mapped.is_null() {
            return Err(range());
        }
        // SAFETY: `addr + len <= size`: inside this member's window memory.
        Ok(Loc::Mapped(unsafe { tg.mapped.add(addr as usize) }))
    }

    /// Sends one request to target `t` and waits for its reply, whose data lands in `out`.
    fn am_call(
        &self,
        call: &str,
        t: usize,
        h: Header,
        data: &[&[u8]],
        out: &mut [u8],
    ) -> Result<()> {
        let am = self.am.as_ref().ok_or_else(|| misrouted(call))?;
        let tag = (am.tag.fetch_add(1, Ordering::Relaxed) & TAG_MASK) as i32;
        let mut msg = Vec::with_capacity(HDR + data.iter().map(|d| d.len()).sum::<usize>());
        msg.extend_from_slice(&h.encode());
        for d in data {
            msg.extend_from_slice(d);
        }
        let req = Communicator::<Multiple>::from_comm(am.req.clone());
        let rep = Communicator::<Multiple>::from_comm(am.rep.clone());
        let mut reply = vec![0u8; REPLY_HDR + out.len().max(MSG_MAX)];
        req.send(&msg[..], t as i32, tag)?;
        rep.receive_into(&mut reply[..], t as i32, tag)?;
        let len = u32::from_le_bytes([reply[4], reply[5], reply[6], reply[7]]) as usize;
        let body = &reply[REPLY_HDR..REPLY_HDR + len.min(reply.len() - REPLY_HDR)];
        if reply[0] != 0 {
            let class = CLASSES
                .get(usize::from(reply[0]) - 1)
                .copied()
                .unwrap_or(ErrorClass::Other);
            return Err(err(
                class,
                format!(
                    "{call} at rank {t} (another host): {}",
                    String::from_utf8_lossy(body)
                ),
            ));
        }
        if body.len() != out.len() {
            return Err(err(
                ErrorClass::Intern,
                format!(
                    "{call}: rank {t} answered {} bytes, {} expected",
                    body.len(),
                    out.len()
                ),
            ));
        }
        out.copy_from_slice(body);
        Ok(())
    }

    /// A synchronization request (lock, unlock, post, done) to window rank `t`.
    pub(super) fn am_sync(&self, t: usize, kind: Kind, flags: u8) -> Result<()> {
        let h = Header {
            kind,
            flags,
            op: 0,
            base: 0,
            addr: 0,
            len: 0,
        };
        self.am_call("window synchronization", t, h, &[], &mut [])
    }

    /// `put` of `data` to byte address `addr` of target `t` on another host.
    pub(super) fn am_put(&self, t: usize, addr: u64, data: &[u8]) -> Result<()> {
        for (i, c) in data.chunks(CHUNK).enumerate() {
            let h = Header {
                kind: Kind::Put,
                flags: 0,
                op: 0,
                base: 0,
                addr: addr + (i * CHUNK) as u64,
                len: c.len() as u64,
            };
            self.am_call("put", t, h, &[c], &mut [])?;
        }
        Ok(())
    }

    /// `get` into `out` from byte address `addr` of target `t` on another host.
    pub(super) fn am_get(&self, t: usize, addr: u64, out: &mut [u8]) -> Result<()> {
        for (i, c) in out.chunks_mut(CHUNK).enumerate() {
            let h = Header {
                kind: Kind::Get,
                flags: 0,
                op: 0,
                base: 0,
                addr: addr + (i * CHUNK) as u64,
                len: c.len() as u64,
            };
            self.am_call("get", t, h, &[], c)?;
        }
        Ok(())
    }

    /// An accumulate of `len` bytes (old values into `result`) at byte address `addr` of
    /// target `t` on another host, in chunks of whole elements.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn am_accumulate(
        &self,
        call: &str,
        t: usize,
        addr: u64,
        origin: &[u8],
        mut result: Option<&mut [u8]>,
        len: usize,
        base: Predefined,
        op: &Op,
    ) -> Result<()> {
        let elem = base.info().extent.max(1);
        let step = (CHUNK / elem).max(1) * elem;
        let no_origin = origin.is_empty();
        let mut flags = if no_origin { NO_ORIGIN } else { 0 };
        if result.is_some() {
            flags |= RESULT;
        }
        let mut at = 0;
        while at < len {
            let n = step.min(len - at);
            let h = Header {
                kind: Kind::Acc,
                flags,
                op: op_index(op),
                base: base.handle(),
                addr: addr + at as u64,
                len: n as u64,
            };
            let data: &[&[u8]] = if no_origin {
                &[]
            } else {
                &[&origin[at..at + n]]
            };
            match result.as_deref_mut() {
                Some(r) => self.am_call(call, t, h, data, &mut r[at..at + n])?,
                None => self.am_call(call, t, h, data, &mut [])?,
            }
            at += n;
        }
        Ok(())
    }

    /// `compare_and_swap` of one element at byte address `addr` of target `t` on another
    /// host.
    pub(super) fn am_cas(
        &self,
        t: usize,
        addr: u64,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        base: Predefined,
    ) -> Result<()> {
        let h = Header {
            kind: Kind::Cas,
            flags: 0,
            op: 0,
            base: base.handle(),
            addr,
            len: origin.len() as u64,
        };
        self.am_call("compare_and_swap", t, h, &[origin, compare], result)
    }
}

/// The progress thread's state: how many windows spanning hosts want it, and its stop flag
/// and handle while it runs.
struct Driver {
    windows: usize,
    running: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    warned: bool,
}

static DRIVER: Mutex<Driver> = Mutex::new(Driver {
    windows: 0,
    running: None,
    warned: false,
});

fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // `init` already refused a malformed environment, so the default is only a fallback.
    *ON.get_or_init(|| {
        crate::config::Config::from_env()
            .unwrap_or_default()
            .rma_progress_thread
    })
}

/// Counts one more window spanning hosts, starting the progress thread if it is enabled and
/// not running; whether the window counts (and must call [`driver_release`]).
fn driver_acquire(rt: &Arc<Runtime>) -> bool {
    if !enabled() {
        return false;
    }
    let mut d = DRIVER.lock().unwrap_or_else(|p| p.into_inner());
    if !rt.level.needs_lock() {
        if !d.warned {
            d.warned = true;
            eprintln!(
                "oxmpi: rank {}: OXMPI_RMA_PROGRESS_THREAD needs MPI_THREAD_SERIALIZED or \
                 MULTIPLE (the engine is unlocked below); no progress thread, targets on \
                 other hosts answer in their own MPI calls",
                rt.rank
            );
        }
        return false;
    }
    d.windows += 1;
    if d.running.is_none() {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let rt = rt.clone();
        let spawned = std::thread::Builder::new()
            .name("oxmpi-rma-progress".into())
            .spawn(move || drive(&rt, &flag));
        match spawned {
            Ok(h) => d.running = Some((stop, h)),
            Err(e) => eprintln!(
                "oxmpi: cannot start the RMA progress thread ({e}); targets answer in their \
                 own MPI calls"
            ),
        }
    }
    true
}

/// One window fewer; the last stops and joins the thread.
fn driver_release() {
    let running = {
        let mut d = DRIVER.lock().unwrap_or_else(|p| p.into_inner());
        d.windows = d.windows.saturating_sub(1);
        if d.windows > 0 {
            return;
        }
        d.running.take()
    };
    if let Some((stop, h)) = running {
        stop.store(true, Ordering::Release);
        // Joined with no lock held: the thread may be waiting for the engine.
        if h.thread().id() != std::thread::current().id() {
            let _ = h.join();
        }
    }
}

/// The progress thread: polls the engine until told to stop, yielding when idle and then
/// sleeping briefly, so a computing rank keeps most of its core.
fn drive(rt: &Runtime, stop: &AtomicBool) {
    let mut idle = 0u32;
    while !stop.load(Ordering::Acquire) {
        let n = rt.engine.with(|e| e.progress());
        if n > 0 {
            idle = 0;
        } else {
            idle = idle.saturating_add(1);
            if idle < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        for kind in [
            Kind::Put,
            Kind::Get,
            Kind::Acc,
            Kind::Cas,
            Kind::Lock,
            Kind::Unlock,
            Kind::Post,
            Kind::Done,
        ] {
            let h = Header {
                kind,
                flags: RESULT | NO_ORIGIN,
                op: 7,
                base: 0x1234,
                addr: u64::MAX - 3,
                len: 1 << 40,
            };
            assert_eq!(Header::decode(&h.encode()), Some(h));
        }
    }

    #[test]
    fn malformed_headers_are_refused() {
        assert_eq!(Header::decode(&[1u8; HDR - 1]), None, "too short");
        let mut b = [0u8; HDR];
        b[0] = 9;
        assert_eq!(Header::decode(&b), None, "unknown kind");
        b[0] = 0;
        assert_eq!(Header::decode(&b), None, "kind 0");
    }

    #[test]
    fn every_predefined_op_has_its_own_index() {
        for (i, op) in Op::PREDEFINED.iter().enumerate() {
            assert_eq!(op_index(op) as usize, i);
            let back = op_from(i as u8).expect("index decodes");
            assert_eq!(back.name(), op.name());
        }
        assert!(op_from(Op::PREDEFINED.len() as u8).is_none());
    }

    #[test]
    fn reply_classes_are_distinct() {
        for (i, a) in CLASSES.iter().enumerate() {
            assert!(CLASSES[i + 1..].iter().all(|b| b != a));
        }
    }
}
