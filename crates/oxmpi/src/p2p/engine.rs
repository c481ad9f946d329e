//! The progress engine: point-to-point protocols over the transports, top to bottom.
//!
//! Path of a small message: [`Engine::isend`] picks the route by array index, encodes the
//! envelope and hands header + data to `ShmTransport::send` (inline cells or one pool block).
//! The receiver's [`Engine::progress`] polls its ring, and `Core::on_frag` matches the
//! envelope against posted receives and copies the data into the user's buffer.
//!
//! Messages above the eager limit use rendezvous: `RTS` carries the sender's address; the
//! receiver pulls the data with one `process_vm_readv` and answers `FIN`. If the kernel refuses
//! the single copy (or `OXMPI_SINGLE_COPY=0`), the receiver answers `CTS` and the sender
//! streams `DATA` chunks through its pool, which the receiver drains as they arrive.
//! Messages to oneself are matched in place (the `self` path) and never touch a transport.

use std::collections::VecDeque;

use super::matching::{Body, Matcher, Posted, Stored, Unexpected, PROC_NULL};
use super::protocol::{Protocol, Thresholds};
use super::recv_write::{Advert, SeqCounters};
use super::request::{ReqId, Slab, State, Status};
use super::wire::{am, CtrlHdr, Envelope, MatchHdr, CTRL_HDR_LEN, FLAG_ARENA, HDR_MAX};
use crate::error::{Error, ErrorClass, Result};
use crate::transport::shm::{cma, Payload, SendError, ShmTransport};

/// How a send completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    /// Standard (and ready) mode: complete once the buffer may be reused.
    Standard,
    /// Synchronous mode: complete once the receive has matched.
    Synchronous,
}

/// How a pair of ranks is connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Ourselves.
    SelfLoop,
    /// Same host: shared memory.
    Shm,
    /// No transport reaches the rank.
    Unreachable,
}

/// The result of starting a receive.
#[derive(Debug)]
pub enum RecvStart {
    /// Completed at once.
    Done(Status),
    /// In flight.
    Pending(ReqId),
}

/// Payload bytes handed to the protocol: in shared memory, or in this process.
enum Data<'a> {
    Shm(&'a Payload<'a>),
    Local(&'a [u8]),
}

impl Data<'_> {
    #[inline]
    fn len(&self) -> usize {
        match self {
            Data::Shm(p) => p.len(),
            Data::Local(s) => s.len(),
        }
    }

    #[inline]
    fn copy_to(&self, dst: &mut [u8]) {
        match self {
            Data::Shm(p) => p.copy_to(dst),
            Data::Local(s) => {
                let n = dst.len().min(s.len());
                dst[..n].copy_from_slice(&s[..n]);
            }
        }
    }
}

/// How often each protocol path ran in this process (for tests and tuning).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages written straight into an advertised receive buffer.
    pub recv_writes: u64,
    /// Rendezvous messages pulled with one copy.
    pub single_copy_pulls: u64,
    /// Rendezvous messages pushed in chunks.
    pub pushed: u64,
    /// Rendezvous messages copied straight out of the sender's shared arena.
    pub arena_pulls: u64,
}

/// A fragment waiting for transport room, in send order.
#[derive(Debug)]
struct Pending {
    to: u32,
    am: u8,
    hdr: [u8; HDR_MAX],
    hdr_len: u8,
    data: *const u8,
    len: usize,
    /// Request to complete once sent (eager standard sends).
    complete: Option<ReqId>,
}

/// Where the chunks of a chunked eager message go.
#[derive(Debug)]
enum Target {
    /// Straight into a posted receive.
    Posted { req: u32, buf: *mut u8, cap: usize },
    /// Into a buffer, matched once complete.
    Buffer(Vec<u8>),
}

/// A chunked eager message in the middle of arriving.
#[derive(Debug)]
struct Assembly {
    env: Envelope,
    total: u64,
    got: u64,
    /// Sender's request to acknowledge (synchronous sends).
    sync: Option<u32>,
    target: Target,
}

/// Matching and protocol state: everything a fragment handler touches (never the transport).
#[derive(Debug)]
struct Core {
    me: u32,
    matcher: Matcher,
    reqs: Slab,
    /// Control fragments to send: (destination, am, header).
    outbox: VecDeque<(u32, u8, CtrlHdr)>,
    single_copy: bool,
    /// Rendezvous messages pulled with one copy.
    pulls: u64,
    /// Matched rendezvous messages whose data is in the sender's arena, to copy after the poll.
    arena_pulls: Vec<(u32, u32, MatchHdr, *mut u8, usize)>,
    /// Matching messages seen per (sender, context): the receiver side of recv_write.
    arrived: SeqCounters,
    /// Adverts received from peers, waiting for our next large send to them.
    adverts: Vec<Advert>,
    /// Our posted receives that a peer may write into (they cannot be cancelled).
    advertised: Vec<u32>,
    /// Chunked eager messages being assembled, by sender world rank.
    assembling: Vec<Option<Assembly>>,
    /// Sends whose receiver asked for pushed chunks (CTS); the engine starts them after the poll.
    start_push: Vec<u32>,
    /// A fatal protocol error found while handling a fragment.
    fault: Option<Error>,
}

/// A multi-step operation (a collective) that the engine advances on every progress call, so
/// that several can be in flight at once and complete in any order of waits.
pub trait Schedule: std::fmt::Debug {
    /// Advances as far as possible without blocking, using the engine's point-to-point
    /// operations (never [`Engine::progress`]); returns `Ok(true)` once finished.
    fn advance(&mut self, e: &mut Engine) -> Result<bool>;
}

/// One process's point-to-point engine.
#[derive(Debug)]
pub struct Engine {
    core: Core,
    route: Vec<Route>,
    shm: Option<ShmTransport>,
    limits: Thresholds,
    pending: VecDeque<Pending>,
    pending_to: Vec<u32>,
    pushing: Vec<ReqId>,
    schedules: Vec<(ReqId, Box<dyn Schedule>)>,
    /// Our process id, for rendezvous headers (getpid is a system call).
    pid: u32,
    /// Every other rank is reached through shared memory (world barriers can use counters).
    all_local_shm: bool,
    /// Matching messages we sent per (receiver, context): the sender side of recv_write.
    sent: SeqCounters,
    /// Protocol counters.
    stats: Stats,
    pub(super) bsend: super::bsend::BsendBuffer,
}

/// Writes `n` bytes at `buf`.
///
/// # Safety
/// `buf` is valid for `n` bytes of writes: the API layer keeps the receive buffer borrowed
/// until the request completes.
#[inline]
unsafe fn user_buf<'a>(buf: *mut u8, n: usize) -> &'a mut [u8] {
    if n == 0 {
        return &mut [];
    }
    // SAFETY: caller contract.
    unsafe { std::slice::from_raw_parts_mut(buf, n) }
}

impl Core {
    fn fail(&mut self, msg: String) {
        self.fault
            .get_or_insert(Error::new(ErrorClass::Intern, msg));
    }

    /// Handles one arrived fragment.
    #[inline]
    fn on_frag(&mut self, from: u32, kind: u8, hdr: &[u8], data: Data<'_>) {
        match kind {
            am::EAGER | am::EAGER_SYNC | am::RTS => {
                let Some(h) = MatchHdr::decode(kind, hdr) else {
                    return self.fail(format!("short header from rank {from}"));
                };
                self.arrived.bump(from, h.env.ctx);
                match self.matcher.match_arrival(&h.env) {
                    Some(p) => self.deliver(p.req, from, kind, &h, &data),
                    None => {
                        let body = match kind {
                            am::EAGER => {
                                Body::Eager(Stored::with_len(data.len(), |b| data.copy_to(b)))
                            }
                            am::EAGER_SYNC => Body::EagerSync {
                                data: Stored::with_len(data.len(), |b| data.copy_to(b)),
                                sreq: h.sreq,
                            },
                            _ => Body::Rts {
                                sreq: h.sreq,
                                len: h.len,
                                addr: h.addr,
                                pid: h.pid,
                                flags: h.flags,
                            },
                        };
                        self.matcher.push_unexpected(Unexpected {
                            env: h.env,
                            from,
                            body,
                        });
                    }
                }
            }
            am::EAGER_HEAD => {
                let Some(h) = MatchHdr::decode(am::RTS, hdr) else {
                    return self.fail(format!("short header from rank {from}"));
                };
                self.arrived.bump(from, h.env.ctx);
                let n = data.len();
                let target = match self.matcher.match_arrival(&h.env) {
                    Some(p) => match self.reqs.state_at(p.req) {
                        Some(&mut State::Recv { buf, cap, .. }) => {
                            // SAFETY: at most `cap` bytes, the posted receive's capacity.
                            data.copy_to(unsafe { user_buf(buf, n.min(cap)) });
                            if !self.advertised.is_empty() {
                                self.advertised.retain(|&r| r != p.req);
                            }
                            Target::Posted {
                                req: p.req,
                                buf,
                                cap,
                            }
                        }
                        _ => return self.fail(format!("posted receive {} vanished", p.req)),
                    },
                    None => {
                        let mut v = Vec::with_capacity(h.len as usize);
                        v.resize(n, 0);
                        data.copy_to(&mut v);
                        Target::Buffer(v)
                    }
                };
                let a = Assembly {
                    env: h.env,
                    total: h.len,
                    got: n as u64,
                    sync: (h.addr == 1).then_some(h.sreq),
                    target,
                };
                if from as usize >= self.assembling.len() {
                    self.assembling.resize_with(from as usize + 1, || None);
                }
                self.assembling[from as usize] = Some(a);
            }
            am::EAGER_CONT => {
                let Some(a) = self
                    .assembling
                    .get_mut(from as usize)
                    .and_then(Option::as_mut)
                else {
                    return self.fail(format!("chunk without a message head from rank {from}"));
                };
                let n = data.len();
                match &mut a.target {
                    Target::Posted { buf, cap, .. } => {
                        let at = (a.got as usize).min(*cap);
                        let keep = n.min(*cap - at);
                        // SAFETY: at + keep ≤ cap, inside the posted receive's buffer.
                        data.copy_to(unsafe { user_buf(buf.add(at), keep) });
                    }
                    Target::Buffer(v) => {
                        let old = v.len();
                        v.resize(old + n, 0);
                        data.copy_to(&mut v[old..]);
                    }
                }
                a.got += n as u64;
                if a.got >= a.total {
                    if let Some(a) = self.assembling[from as usize].take() {
                        self.finish_assembly(from, a);
                    }
                }
            }
            am::ADVERT => match Advert::decode(from, hdr) {
                Some(a) => self.adverts.push(a),
                None => self.fail(format!("short advert from rank {from}")),
            },
            am::WRITTEN => {
                let Some(h) = MatchHdr::decode(am::RTS, hdr) else {
                    return self.fail(format!("short WRITTEN from rank {from}"));
                };
                self.arrived.bump(from, h.env.ctx);
                let req = h.sreq;
                let Some(i) = self.advertised.iter().position(|&r| r == req) else {
                    return self.fail(format!(
                        "rank {from} wrote into receive {req}, which was not advertised"
                    ));
                };
                self.advertised.swap_remove(i);
                match self.reqs.state_at(req) {
                    Some(&mut State::Recv { ctx, .. }) => {
                        self.matcher.cancel(ctx, req);
                        self.reqs.complete(
                            req,
                            Status {
                                source: h.env.src as i32,
                                tag: h.env.tag,
                                bytes: h.len,
                                ..Status::default()
                            },
                        );
                    }
                    _ => self.fail(format!(
                        "rank {from} wrote into receive {req}, which is gone"
                    )),
                }
            }
            am::ACK | am::FIN => match CtrlHdr::decode(hdr) {
                Some(c) => self.finish_send(c.sreq),
                None => self.fail(format!("short control header from rank {from}")),
            },
            am::CTS => {
                let Some(c) = CtrlHdr::decode(hdr) else {
                    return self.fail(format!("short CTS from rank {from}"));
                };
                match self.reqs.state_at(c.sreq) {
                    Some(st @ State::SendWait { .. }) => {
                        let State::SendWait { buf, len } = *st else {
                            unreachable!()
                        };
                        *st = State::SendPush {
                            buf,
                            len,
                            offset: 0,
                            to: from,
                            rreq: c.rreq,
                        };
                        self.start_push.push(c.sreq);
                    }
                    _ => self.fail(format!("CTS for unknown send {} from rank {from}", c.sreq)),
                }
            }
            am::DATA => {
                let Some(c) = CtrlHdr::decode(hdr) else {
                    return self.fail(format!("short DATA from rank {from}"));
                };
                match self.reqs.state_at(c.rreq) {
                    Some(State::RecvChunks {
                        buf,
                        expect,
                        total,
                        got,
                    }) => {
                        let n = data.len() as u64;
                        if c.offset < *expect {
                            let keep = (*expect - c.offset).min(n) as usize;
                            // SAFETY: offset + keep ≤ expect ≤ the receive buffer's capacity.
                            let dst = unsafe { user_buf(buf.add(c.offset as usize), keep) };
                            data.copy_to(dst);
                        }
                        *got += n;
                        if *got >= *total {
                            let st = Status {
                                bytes: *expect,
                                error: (*total > *expect).then_some(ErrorClass::Truncate),
                                ..Status::default()
                            };
                            self.complete_recv_chunks(c.rreq, st);
                        }
                    }
                    _ => self.fail(format!(
                        "DATA for unknown receive {} from rank {from}",
                        c.rreq
                    )),
                }
            }
            other => self.fail(format!("unknown fragment kind {other} from rank {from}")),
        }
    }

    fn finish_assembly(&mut self, from: u32, a: Assembly) {
        let kind = if a.sync.is_some() {
            am::EAGER_SYNC
        } else {
            am::EAGER
        };
        let h = MatchHdr {
            env: a.env,
            sreq: a.sync.unwrap_or(0),
            len: a.total,
            addr: 0,
            pid: 0,
            flags: 0,
        };
        match a.target {
            Target::Posted { req, cap, .. } => {
                self.reqs.complete(
                    req,
                    Status {
                        source: a.env.src as i32,
                        tag: a.env.tag,
                        bytes: a.total.min(cap as u64),
                        error: (a.total > cap as u64).then_some(ErrorClass::Truncate),
                        ..Status::default()
                    },
                );
                if let Some(sreq) = a.sync {
                    self.outbox.push_back((
                        from,
                        am::ACK,
                        CtrlHdr {
                            sreq,
                            rreq: 0,
                            offset: 0,
                        },
                    ));
                }
            }
            // Matched only now: a receive posted while the chunks arrived must still get it.
            Target::Buffer(v) => match self.matcher.match_arrival(&a.env) {
                Some(p) => self.deliver(p.req, from, kind, &h, &Data::Local(&v)),
                None => {
                    let body = match a.sync {
                        Some(sreq) => Body::EagerSync {
                            data: v.into(),
                            sreq,
                        },
                        None => Body::Eager(v.into()),
                    };
                    self.matcher.push_unexpected(Unexpected {
                        env: a.env,
                        from,
                        body,
                    });
                }
            },
        }
    }

    fn complete_recv_chunks(&mut self, idx: u32, mut st: Status) {
        // Source and tag were recorded in the slot's status when the rendezvous started.
        let id = self.reqs.id_at(idx);
        if let Some(prev) = self.reqs.peek_status(id) {
            st.source = prev.source;
            st.tag = prev.tag;
        }
        self.reqs.complete(idx, st);
    }

    fn finish_send(&mut self, sreq: u32) {
        match self.reqs.state_at(sreq) {
            Some(State::SendWait { len, .. }) => {
                let bytes = *len as u64;
                self.reqs.complete(
                    sreq,
                    Status {
                        bytes,
                        ..Status::default()
                    },
                );
            }
            _ => self.fail(format!("completion for unknown send {sreq}")),
        }
    }

    /// Delivers a matched message into posted receive `req`.
    #[inline]
    fn deliver(&mut self, req: u32, from: u32, kind: u8, h: &MatchHdr, data: &Data<'_>) {
        if !self.advertised.is_empty() {
            // The message came the ordinary way; the sender will find its advert stale.
            self.advertised.retain(|&r| r != req);
        }
        let Some(&mut State::Recv { buf, cap, .. }) = self.reqs.state_at(req) else {
            return self.fail(format!("posted receive {req} vanished"));
        };
        if kind == am::RTS {
            return self.start_rendezvous(req, from, h, buf, cap);
        }
        let len = data.len();
        let n = len.min(cap);
        // SAFETY: n ≤ cap, the posted receive's buffer capacity.
        data.copy_to(unsafe { user_buf(buf, n) });
        self.reqs.complete(
            req,
            Status {
                source: h.env.src as i32,
                tag: h.env.tag,
                bytes: n as u64,
                error: (len > cap).then_some(ErrorClass::Truncate),
                ..Status::default()
            },
        );
        if kind == am::EAGER_SYNC {
            self.outbox.push_back((
                from,
                am::ACK,
                CtrlHdr {
                    sreq: h.sreq,
                    rreq: 0,
                    offset: 0,
                },
            ));
        }
    }

    /// A rendezvous message matched receive `req`: pull it, or ask for it to be pushed.
    fn rendezvous_status(h: &MatchHdr, cap: usize) -> Status {
        let n = (h.len as usize).min(cap);
        Status {
            source: h.env.src as i32,
            tag: h.env.tag,
            bytes: n as u64,
            error: (h.len as usize > cap).then_some(ErrorClass::Truncate),
            ..Status::default()
        }
    }

    /// A rendezvous message matched receive `req`: pull it, or ask for it to be pushed.
    fn start_rendezvous(&mut self, req: u32, from: u32, h: &MatchHdr, buf: *mut u8, cap: usize) {
        if h.flags & FLAG_ARENA != 0 {
            // The data sits in the sender's shared arena: the engine copies it after the poll
            // (it needs the transport, which the poll is borrowing).
            self.arena_pulls.push((req, from, *h, buf, cap));
            return;
        }
        let st = Self::rendezvous_status(h, cap);
        if self.single_copy {
            // SAFETY: st.bytes ≤ cap, the receive buffer's capacity.
            match cma::read_from(h.pid as i32, h.addr, unsafe {
                user_buf(buf, st.bytes as usize)
            }) {
                Ok(()) => return self.finish_pull(req, from, h, st),
                Err(_) => {
                    // The kernel refuses cross-process copies here (ptrace policy, namespaces):
                    // use the two-copy path from now on.
                    self.single_copy = false;
                }
            }
        }
        self.ask_for_push(req, from, h, buf, cap);
    }

    /// The data of rendezvous `h` is in receive `req`: complete it and release the sender.
    fn finish_pull(&mut self, req: u32, from: u32, h: &MatchHdr, st: Status) {
        self.pulls += 1;
        self.reqs.complete(req, st);
        self.outbox.push_back((
            from,
            am::FIN,
            CtrlHdr {
                sreq: h.sreq,
                rreq: 0,
                offset: 0,
            },
        ));
    }

    /// Asks the sender of rendezvous `h` to push its data in chunks into receive `req`.
    fn ask_for_push(&mut self, req: u32, from: u32, h: &MatchHdr, buf: *mut u8, cap: usize) {
        let mut st = Self::rendezvous_status(h, cap);
        let n = st.bytes;
        st.bytes = 0;
        if let Some(s) = self.reqs.state_at(req) {
            *s = State::RecvChunks {
                buf,
                expect: n,
                total: h.len,
                got: 0,
            };
        }
        self.reqs.set_status(req, st);
        self.outbox.push_back((
            from,
            am::CTS,
            CtrlHdr {
                sreq: h.sreq,
                rreq: req,
                offset: 0,
            },
        ));
    }
}

impl Engine {
    /// An engine for world rank `me` of `size`, with routes per rank.
    pub fn new(
        me: u32,
        route: Vec<Route>,
        shm: Option<ShmTransport>,
        limits: Thresholds,
    ) -> Engine {
        let size = route.len();
        let all_local_shm = shm.is_some()
            && route
                .iter()
                .all(|r| matches!(r, Route::Shm | Route::SelfLoop));
        Engine {
            core: Core {
                me,
                matcher: Matcher::new(),
                reqs: Slab::default(),
                outbox: VecDeque::new(),
                single_copy: limits.single_copy,
                pulls: 0,
                arena_pulls: Vec::new(),
                arrived: SeqCounters::default(),
                adverts: Vec::new(),
                advertised: Vec::new(),
                assembling: Vec::new(),
                start_push: Vec::new(),
                fault: None,
            },
            route,
            shm,
            limits,
            pending: VecDeque::new(),
            pending_to: vec![0; size],
            pushing: Vec::new(),
            schedules: Vec::new(),
            pid: std::process::id(),
            all_local_shm,
            sent: SeqCounters::default(),
            stats: Stats::default(),
            bsend: Default::default(),
        }
    }

    /// The shared-memory transport, if this rank has local peers.
    pub fn shm(&self) -> Option<&ShmTransport> {
        self.shm.as_ref()
    }

    /// Removes this rank's shared-memory file (peers keep their mappings).
    pub fn unlink_shm(&mut self) {
        if let Some(s) = &mut self.shm {
            s.unlink();
        }
    }

    /// Protocol thresholds in force.
    pub fn limits(&self) -> Thresholds {
        self.limits
    }

    /// Starts sending `len` bytes at `buf` to world rank `to`. `Ok(None)`: already complete;
    /// `Ok(Some(id))`: wait on `id`.
    ///
    /// # Safety
    /// `buf` must be valid for reads of `len` bytes until the send completes.
    #[inline]
    pub unsafe fn isend(
        &mut self,
        mode: SendMode,
        buf: *const u8,
        len: usize,
        to: u32,
        env: Envelope,
    ) -> Result<Option<ReqId>> {
        let sync = mode == SendMode::Synchronous;
        match self.route[to as usize] {
            Route::SelfLoop => Ok(self.send_to_self(sync, buf, len, env)),
            Route::Shm => {
                let protocol = self.limits.choose(len);
                let seq = self.sent.bump(to, env.ctx);
                // Data in our arena is a plain copy for the receiver: better than any write.
                let arena = match protocol {
                    Protocol::Rendezvous => self.shm.as_ref().and_then(|s| s.arena_offset(buf as u64, len)),
                    _ => None,
                };
                if protocol == Protocol::Rendezvous && arena.is_none() && !self.core.adverts.is_empty() {
                    // SAFETY: forwarded from our caller.
                    if unsafe { self.try_recv_write(buf, len, to, env, seq)? } {
                        return Ok(None);
                    }
                }
                if protocol == Protocol::ChunkedEager {
                    // SAFETY: forwarded from our caller.
                    return unsafe { self.isend_chunked(sync, buf, len, to, env, self.limits.block_size) };
                }
                let mut h = MatchHdr { env, sreq: 0, len: len as u64, addr: buf as u64, pid: self.pid , flags: 0};
                if let Some(off) = arena {
                    h.flags = FLAG_ARENA;
                    h.addr = off as u64;
                }
                let (kind, wait) = if protocol == Protocol::Rendezvous {
                    (am::RTS, true)
                } else if sync {
                    (am::EAGER_SYNC, true)
                } else {
                    (am::EAGER, false)
                };
                let waiting = wait.then(|| self.core.reqs.alloc(State::SendWait { buf, len }));
                if let Some(id) = waiting {
                    h.sreq = id.idx;
                }
                let mut hdr = [0u8; HDR_MAX];
                let hdr_len = h.encode(kind, &mut hdr);
                let payload: &[u8] = if kind == am::RTS || len == 0 {
                    &[]
                } else {
                    // SAFETY: the caller guarantees `buf` is valid for `len` bytes.
                    unsafe { std::slice::from_raw_parts(buf, len) }
                };
                if self.pending_to[to as usize] == 0 {
                    match self.shm_send(to, kind, &hdr[..hdr_len], payload) {
                        Ok(()) => return Ok(waiting),
                        Err(SendError::Busy) => {}
                        Err(SendError::Fatal(e)) => return Err(e),
                    }
                }
                let complete = match waiting {
                    Some(_) => None,
                    None => Some(self.core.reqs.alloc(State::SendQueued)),
                };
                self.pending_to[to as usize] += 1;
                self.pending.push_back(Pending {
                    to,
                    am: kind,
                    hdr,
                    hdr_len: hdr_len as u8,
                    data: payload.as_ptr(),
                    len: payload.len(),
                    complete,
                });
                Ok(waiting.or(complete))
            }
            Route::Unreachable => Err(Error::new(
                ErrorClass::Rank,
                format!("no transport reaches world rank {to} from rank {} (it is on another host; the TCP transport is not built yet)", self.core.me),
            )),
        }
    }

    /// Writes a rendezvous-size message straight into the receiver's buffer if it advertised
    /// one that this message is sure to match; returns whether it did.
    ///
    /// # Safety
    /// As for [`isend`](Self::isend).
    unsafe fn try_recv_write(
        &mut self,
        buf: *const u8,
        len: usize,
        to: u32,
        env: Envelope,
        seq: u64,
    ) -> Result<bool> {
        let mut hit = None;
        // Every advert from `to` on this context is used now or stale after this message.
        self.core.adverts.retain(|a| {
            if a.from != to || a.ctx != env.ctx {
                return true;
            }
            if hit.is_none() && a.accepts(env.ctx, seq, env.tag, len) {
                hit = Some(*a);
            }
            false
        });
        let Some(a) = hit else {
            return Ok(false);
        };
        // SAFETY: the caller guarantees `buf` is valid for `len` bytes.
        let data = unsafe { std::slice::from_raw_parts(buf, len) };
        if cma::write_to(a.pid as i32, a.addr, data).is_err() {
            // The kernel refuses cross-process writes: stop advertising-based writes and let
            // the ordinary rendezvous (and its own fallback) carry this message.
            self.limits.recv_write = false;
            return Ok(false);
        }
        let h = MatchHdr {
            env,
            sreq: a.rreq,
            len: len as u64,
            addr: 0,
            pid: 0,
            flags: 0,
        };
        let mut hdr = [0u8; HDR_MAX];
        let n = h.encode(am::RTS, &mut hdr);
        self.send_ctrl(to, am::WRITTEN, hdr, n)?;
        self.stats.recv_writes += 1;
        Ok(true)
    }

    /// Sends a header-only fragment now, or queues it behind pending traffic to `to`.
    fn send_ctrl(&mut self, to: u32, kind: u8, hdr: [u8; HDR_MAX], hdr_len: usize) -> Result<()> {
        if self.pending_to[to as usize] == 0 {
            match self.shm_send(to, kind, &hdr[..hdr_len], &[]) {
                Ok(()) => return Ok(()),
                Err(SendError::Busy) => {}
                Err(SendError::Fatal(e)) => return Err(e),
            }
        }
        self.pending_to[to as usize] += 1;
        self.pending.push_back(Pending {
            to,
            am: kind,
            hdr,
            hdr_len: hdr_len as u8,
            data: std::ptr::null(),
            len: 0,
            complete: None,
        });
        Ok(())
    }

    /// Like [`irecv`](Self::irecv) for a receive naming its source (world rank `src_world`):
    /// a large receive that stays posted advertises its buffer to that source (recv_write).
    ///
    /// # Safety
    /// As for [`irecv`](Self::irecv).
    #[inline]
    pub unsafe fn irecv_from(
        &mut self,
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        src_world: Option<u32>,
    ) -> Result<RecvStart> {
        // SAFETY: forwarded from our caller.
        let start = unsafe { self.irecv(buf, cap, ctx, src, tag)? };
        if let (RecvStart::Pending(id), Some(w)) = (&start, src_world) {
            if self.limits.recv_write
                && cap > self.limits.eager_limit
                && self.route[w as usize] == Route::Shm
                && !self.core.matcher.other_posted_from(ctx, src, id.idx)
            {
                let a = Advert {
                    from: self.core.me,
                    ctx,
                    tag,
                    rreq: id.idx,
                    seq: self.core.arrived.get(w, ctx) as u32,
                    addr: buf as u64,
                    cap: cap as u64,
                    pid: self.pid,
                };
                self.core.advertised.push(id.idx);
                self.send_ctrl(w, am::ADVERT, a.encode(), super::recv_write::ADVERT_LEN)?;
            }
        }
        Ok(start)
    }

    /// Sends an eager message in pool-block chunks: a head carrying the envelope, then the
    /// rest, queued behind anything already pending for `to` so chunks never interleave with
    /// other messages to the same peer.
    ///
    /// # Safety
    /// As for [`isend`](Self::isend).
    unsafe fn isend_chunked(
        &mut self,
        sync: bool,
        buf: *const u8,
        len: usize,
        to: u32,
        env: Envelope,
        max: usize,
    ) -> Result<Option<ReqId>> {
        let waiting = sync.then(|| self.core.reqs.alloc(State::SendWait { buf, len }));
        let h = MatchHdr {
            env,
            sreq: waiting.map_or(0, |w| w.idx),
            len: len as u64,
            addr: sync as u64,
            pid: 0,
            flags: 0,
        };
        let mut hdr = [0u8; HDR_MAX];
        let head_len = h.encode(am::RTS, &mut hdr);
        let mut off = 0;
        while off < len {
            let k = max.min(len - off);
            let (kind, hl) = if off == 0 {
                (am::EAGER_HEAD, head_len)
            } else {
                (am::EAGER_CONT, 0)
            };
            if self.pending_to[to as usize] == 0 {
                // SAFETY: off + k ≤ len, inside the caller's buffer.
                let chunk = unsafe { std::slice::from_raw_parts(buf.add(off), k) };
                match self.shm_send(to, kind, &hdr[..hl], chunk) {
                    Ok(()) => {
                        off += k;
                        continue;
                    }
                    Err(SendError::Busy) => {}
                    Err(SendError::Fatal(e)) => return Err(e),
                }
            }
            let last = waiting
                .is_none()
                .then(|| self.core.reqs.alloc(State::SendQueued));
            while off < len {
                let k = max.min(len - off);
                let (kind, hl) = if off == 0 {
                    (am::EAGER_HEAD, head_len)
                } else {
                    (am::EAGER_CONT, 0)
                };
                self.pending_to[to as usize] += 1;
                self.pending.push_back(Pending {
                    to,
                    am: kind,
                    hdr,
                    hdr_len: hl as u8,
                    // SAFETY: off < len, inside the caller's buffer.
                    data: unsafe { buf.add(off) },
                    len: k,
                    complete: if off + k >= len { last } else { None },
                });
                off += k;
            }
            return Ok(waiting.or(last));
        }
        Ok(waiting)
    }

    #[inline]
    fn shm_send(
        &mut self,
        to: u32,
        kind: u8,
        hdr: &[u8],
        payload: &[u8],
    ) -> std::result::Result<(), SendError> {
        match &mut self.shm {
            Some(s) => s.send(to, kind, hdr, payload),
            None => Err(SendError::Fatal(Error::new(
                ErrorClass::Intern,
                "no shared-memory transport",
            ))),
        }
    }

    fn send_to_self(
        &mut self,
        sync: bool,
        buf: *const u8,
        len: usize,
        env: Envelope,
    ) -> Option<ReqId> {
        let data: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: the caller guarantees `buf` is valid for `len` bytes.
            unsafe { std::slice::from_raw_parts(buf, len) }
        };
        let waiting = sync.then(|| self.core.reqs.alloc(State::SendWait { buf, len }));
        let h = MatchHdr {
            env,
            sreq: waiting.map_or(0, |w| w.idx),
            len: len as u64,
            addr: 0,
            pid: 0,
            flags: 0,
        };
        let mut hdr = [0u8; HDR_MAX];
        let kind = if sync { am::EAGER_SYNC } else { am::EAGER };
        let n = h.encode(kind, &mut hdr);
        let me = self.core.me;
        self.core.on_frag(me, kind, &hdr[..n], Data::Local(data));
        self.drain_local_outbox();
        waiting
    }

    /// Handles control fragments addressed to ourselves and pushing transitions at once.
    fn drain_local_outbox(&mut self) {
        let me = self.core.me;
        let mut i = 0;
        while i < self.core.outbox.len() {
            let (to, kind, c) = self.core.outbox[i];
            if to == me {
                self.core.outbox.remove(i);
                self.core.on_frag(me, kind, &c.encode(), Data::Local(&[]));
            } else {
                i += 1;
            }
        }
    }

    /// Starts a receive of up to `cap` bytes into `buf` on context `ctx` from communicator rank
    /// `src` (or a wildcard) with `tag` (or a wildcard).
    ///
    /// # Safety
    /// `buf` must be valid for writes of `cap` bytes, and not otherwise accessed, until the
    /// receive completes.
    #[inline]
    pub unsafe fn irecv(
        &mut self,
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
    ) -> Result<RecvStart> {
        if src == PROC_NULL {
            return Ok(RecvStart::Done(Status::proc_null()));
        }
        match self.core.matcher.take_unexpected(ctx, src, tag) {
            // SAFETY: forwarded from our caller.
            Some(u) => Ok(unsafe { self.recv_unexpected(u, buf, cap) }),
            None => {
                let id = self.core.reqs.alloc(State::Recv { buf, cap, ctx });
                self.core.matcher.post(
                    ctx,
                    Posted {
                        src,
                        tag,
                        req: id.idx,
                    },
                );
                Ok(RecvStart::Pending(id))
            }
        }
    }

    /// Receives a message already taken from the unexpected queue (also matched probe).
    ///
    /// # Safety
    /// As for [`irecv`](Self::irecv).
    pub unsafe fn recv_unexpected(&mut self, u: Unexpected, buf: *mut u8, cap: usize) -> RecvStart {
        let id = self.core.reqs.alloc(State::Recv {
            buf,
            cap,
            ctx: u.env.ctx,
        });
        let (kind, sreq, data, len, addr, pid, flags) = match u.body {
            Body::Eager(d) => (am::EAGER, 0, d, 0, 0, 0, 0),
            Body::EagerSync { data, sreq } => (am::EAGER_SYNC, sreq, data, 0, 0, 0, 0),
            Body::Rts {
                sreq,
                len,
                addr,
                pid,
                flags,
            } => (
                am::RTS,
                sreq,
                Stored::Heap(Vec::new()),
                len,
                addr,
                pid,
                flags,
            ),
        };
        let h = MatchHdr {
            env: u.env,
            sreq,
            len,
            addr,
            pid,
            flags,
        };
        self.core
            .deliver(id.idx, u.from, kind, &h, &Data::Local(data.as_slice()));
        self.drain_local_outbox();
        if !self.core.arena_pulls.is_empty() {
            self.arena_pulls();
        }
        match self.core.reqs.take_if_done(id) {
            Some(st) => RecvStart::Done(st),
            None => RecvStart::Pending(id),
        }
    }

    /// The envelope and length of the earliest unexpected message a receive would match.
    pub fn iprobe(&mut self, ctx: u32, src: i32, tag: i32) -> Option<Status> {
        self.core
            .matcher
            .peek_unexpected(ctx, src, tag)
            .map(|u| Status {
                source: u.env.src as i32,
                tag: u.env.tag,
                bytes: u.body.len(),
                ..Status::default()
            })
    }

    /// Removes and returns the earliest unexpected message a receive would match (mprobe).
    pub fn improbe(&mut self, ctx: u32, src: i32, tag: i32) -> Option<Unexpected> {
        self.core.matcher.take_unexpected(ctx, src, tag)
    }

    /// If request `id` is complete, frees it and returns its status.
    #[inline]
    pub fn test(&mut self, id: ReqId) -> Option<Status> {
        self.core.reqs.take_if_done(id)
    }

    /// The status of request `id` if it is complete, without freeing it
    /// (`MPI_Request_get_status`).
    pub fn peek(&mut self, id: ReqId) -> Option<Status> {
        self.core.reqs.peek_done(id)
    }

    /// Frees request `id` now if complete, else as soon as it completes (`MPI_Request_free`);
    /// false if `id` names no live request.
    pub fn detach(&mut self, id: ReqId) -> bool {
        self.core.reqs.detach(id)
    }

    /// A request already complete with `status`, for an operation that finished as it started.
    pub fn completed(&mut self, status: Status) -> ReqId {
        self.core.reqs.alloc_done(status)
    }

    /// Whether `id` names a request not yet collected.
    pub fn is_live(&mut self, id: ReqId) -> bool {
        self.core.reqs.is_live(id)
    }

    /// Whether `id` is complete (not freed).
    pub fn is_done(&mut self, id: ReqId) -> bool {
        self.core.reqs.is_done(id)
    }

    /// Cancels a pending receive. Returns false if it already matched (it then completes
    /// normally). Sends cannot be cancelled once started.
    pub fn cancel(&mut self, id: ReqId) -> bool {
        let Some(&mut State::Recv { ctx, .. }) = self.core.reqs.state(id) else {
            return false;
        };
        if self.core.advertised.contains(&id.idx) {
            // The sender may be writing into the buffer right now.
            return false;
        }
        if self.core.matcher.cancel(ctx, id.idx) {
            self.core.reqs.complete(
                id.idx,
                Status {
                    cancelled: true,
                    ..Status::default()
                },
            );
            true
        } else {
            false
        }
    }

    /// Starts a schedule; the returned request completes when it finishes.
    pub fn start_schedule(&mut self, s: Box<dyn Schedule>) -> Result<ReqId> {
        let id = self.core.reqs.alloc(State::Schedule);
        self.schedules.push((id, s));
        self.advance_schedules()?;
        Ok(id)
    }

    fn advance_schedules(&mut self) -> Result<usize> {
        let mut list = std::mem::take(&mut self.schedules);
        let mut done = 0;
        let mut i = 0;
        while i < list.len() {
            match list[i].1.advance(self) {
                Ok(true) => {
                    let (id, _) = list.swap_remove(i);
                    self.core.reqs.complete(id.idx, Status::default());
                    done += 1;
                }
                Ok(false) => i += 1,
                Err(e) => {
                    let (id, _) = list.swap_remove(i);
                    self.core.reqs.complete(
                        id.idx,
                        Status {
                            error: Some(e.class()),
                            ..Status::default()
                        },
                    );
                    // The error is that schedule's own: its request reports it.
                    drop(e);
                }
            }
        }
        // Schedules started from inside `advance` landed in the (emptied) field.
        list.append(&mut self.schedules);
        self.schedules = list;
        Ok(done)
    }

    /// Whether fragments this rank owes its peers are still queued.
    pub fn has_outgoing(&self) -> bool {
        !self.core.outbox.is_empty() || !self.pending.is_empty() || !self.pushing.is_empty()
    }

    /// Attaches `bytes` of space for buffered sends.
    pub fn buffer_attach(&mut self, bytes: usize) -> Result<()> {
        self.bsend.attach(bytes)
    }

    /// Whether buffered sends are still in flight (detach must wait for them).
    pub fn bsend_busy(&mut self) -> bool {
        self.reclaim_bsend();
        self.bsend.busy()
    }

    /// Detaches the buffered-send space; call once [`bsend_busy`](Self::bsend_busy) is false.
    pub fn buffer_detach(&mut self) -> Result<usize> {
        self.bsend.detach()
    }

    /// Protocol counters so far.
    pub fn stats(&self) -> Stats {
        Stats {
            single_copy_pulls: self.core.pulls,
            ..self.stats
        }
    }

    /// Requests not yet collected.
    pub fn live_requests(&self) -> usize {
        self.core.reqs.live()
    }

    /// Whether a progress pass would find nothing to do: no arrival, nothing queued to send,
    /// no schedule running. Cheap enough to spin on.
    #[inline]
    pub fn quiet(&self) -> bool {
        !self.shm.as_ref().is_some_and(|s| s.has_arrival())
            && self.core.outbox.is_empty()
            && self.pending.is_empty()
            && self.pushing.is_empty()
            && self.schedules.is_empty()
    }

    /// Polls transports and advances every protocol; returns how much work it did.
    #[inline]
    pub fn progress(&mut self) -> Result<usize> {
        let mut n = 0;
        if let Some(shm) = &mut self.shm {
            let core = &mut self.core;
            n += shm.poll(64, &mut |f| {
                core.on_frag(f.from, f.am, f.hdr, Data::Shm(&f.payload))
            })?;
        }
        if let Some(e) = self.core.fault.take() {
            return Err(e);
        }
        if !self.core.arena_pulls.is_empty() {
            n += self.arena_pulls();
        }
        if !self.core.outbox.is_empty() {
            n += self.flush_outbox()?;
        }
        while let Some(idx) = self.core.start_push.pop() {
            self.pushing.push(self.core.reqs.id_at(idx));
            self.stats.pushed += 1;
        }
        if !self.pending.is_empty() {
            n += self.flush_pending()?;
        }
        if !self.pushing.is_empty() {
            n += self.push_chunks()?;
        }
        if !self.schedules.is_empty() {
            n += self.advance_schedules()?;
        }
        Ok(n)
    }

    /// Copies matched rendezvous data out of senders' arenas (plain memcpy, no system call).
    #[cold]
    fn arena_pulls(&mut self) -> usize {
        let pulls = std::mem::take(&mut self.core.arena_pulls);
        let n = pulls.len();
        for (req, from, h, buf, cap) in pulls {
            let st = Core::rendezvous_status(&h, cap);
            // SAFETY: st.bytes ≤ cap, the posted receive's capacity.
            let dst = unsafe { user_buf(buf, st.bytes as usize) };
            let copied = self
                .shm
                .as_mut()
                .map(|s| s.read_peer_arena(from, h.addr, dst));
            match copied {
                Some(Ok(())) => {
                    self.stats.arena_pulls += 1;
                    self.core.finish_pull(req, from, &h, st);
                }
                // Cannot map the sender's arena: let it push from its own buffer instead.
                _ => self.core.ask_for_push(req, from, &h, buf, cap),
            }
        }
        n
    }

    /// Whether world barriers can go through shared memory: every other rank is on this host.
    pub fn shm_barrier_possible(&self) -> bool {
        self.all_local_shm
    }

    /// Enters a shared-memory world collective carrying `data`; returns the arrival number to
    /// wait for.
    pub fn shm_barrier_arrive(&mut self, data: &[u8]) -> u64 {
        self.shm.as_mut().map_or(0, |s| s.barrier_arrive(data))
    }

    /// Where world rank `rank` published its data for arrival `n`.
    pub fn shm_coll_slot(&mut self, rank: u32, n: u64) -> Result<*const u8> {
        match self.shm.as_mut() {
            Some(s) => s.coll_slot(rank, n),
            None => Err(Error::new(ErrorClass::Intern, "no shared-memory transport")),
        }
    }

    /// Whether every rank has entered world barrier `n`.
    pub fn shm_barrier_done(&mut self, n: u64) -> Result<bool> {
        let Some(shm) = self.shm.as_mut() else {
            return Ok(true);
        };
        for (r, route) in self.route.iter().enumerate() {
            if *route == Route::Shm && !shm.barrier_reached(r as u32, n)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Allocates `len` bytes of message memory in this rank's shared arena.
    pub fn alloc_mem(&mut self, len: usize) -> Result<*mut u8> {
        match &mut self.shm {
            Some(s) => s.alloc_mem(len),
            None => Err(Error::new(
                ErrorClass::NoMem,
                "alloc_mem: no shared-memory transport (no peer on this host)",
            )),
        }
    }

    /// Frees memory from [`alloc_mem`](Self::alloc_mem).
    pub fn free_mem(&mut self, ptr: *mut u8, len: usize) {
        if let Some(s) = &mut self.shm {
            s.free_mem(ptr, len);
        }
    }

    #[cold]
    fn flush_outbox(&mut self) -> Result<usize> {
        self.drain_local_outbox();
        let mut n = 0;
        while let Some(&(to, kind, c)) = self.core.outbox.front() {
            match self.shm_send(to, kind, &c.encode()[..CTRL_HDR_LEN], &[]) {
                Ok(()) => {
                    self.core.outbox.pop_front();
                    n += 1;
                }
                Err(SendError::Busy) => break,
                Err(SendError::Fatal(e)) => return Err(e),
            }
        }
        Ok(n)
    }

    #[cold]
    fn flush_pending(&mut self) -> Result<usize> {
        let mut n = 0;
        while let Some(p) = self.pending.front() {
            let payload: &[u8] = if p.len == 0 {
                &[]
            } else {
                // SAFETY: the request owning this buffer is not complete, so the API layer still
                // holds the buffer borrowed.
                unsafe { std::slice::from_raw_parts(p.data, p.len) }
            };
            let (to, kind, hdr, hdr_len, complete) =
                (p.to, p.am, p.hdr, p.hdr_len as usize, p.complete);
            match self.shm_send(to, kind, &hdr[..hdr_len], payload) {
                Ok(()) => {
                    self.pending.pop_front();
                    self.pending_to[to as usize] -= 1;
                    if let Some(id) = complete {
                        self.core.reqs.complete(
                            id.idx,
                            Status {
                                bytes: payload.len() as u64,
                                ..Status::default()
                            },
                        );
                    }
                    n += 1;
                }
                Err(SendError::Busy) => break,
                Err(SendError::Fatal(e)) => return Err(e),
            }
        }
        Ok(n)
    }

    #[cold]
    fn push_chunks(&mut self) -> Result<usize> {
        let max = self.shm.as_ref().map_or(0, |s| s.max_frag());
        let mut n = 0;
        let mut i = 0;
        while i < self.pushing.len() {
            let id = self.pushing[i];
            let Some(&mut State::SendPush {
                buf,
                len,
                mut offset,
                to,
                rreq,
            }) = self.core.reqs.state(id)
            else {
                self.pushing.swap_remove(i);
                continue;
            };
            let mut busy = false;
            while offset < len {
                let k = (len - offset).min(max);
                // SAFETY: the send is incomplete, so its buffer is still borrowed by the API.
                let chunk = unsafe { std::slice::from_raw_parts(buf.add(offset), k) };
                let c = CtrlHdr {
                    sreq: id.idx,
                    rreq,
                    offset: offset as u64,
                };
                match self.shm_send(to, am::DATA, &c.encode(), chunk) {
                    Ok(()) => {
                        offset += k;
                        n += 1;
                    }
                    Err(SendError::Busy) => {
                        busy = true;
                        break;
                    }
                    Err(SendError::Fatal(e)) => return Err(e),
                }
            }
            if let Some(State::SendPush { offset: o, .. }) = self.core.reqs.state(id) {
                *o = offset;
            }
            if !busy && offset >= len {
                self.core.reqs.complete(
                    id.idx,
                    Status {
                        bytes: len as u64,
                        ..Status::default()
                    },
                );
                self.pushing.swap_remove(i);
            } else {
                i += 1;
            }
        }
        Ok(n)
    }
}
