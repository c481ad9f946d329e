//! The point-to-point protocols, top to bottom, over any transport's [`Link`].
//!
//! Path of a small message: [`Proto::isend`] chooses the protocol from the route's transport
//! [`Limits`] and hands header + data to [`Link::send`] (inline, or copied into the transport's
//! buffers). The receiver's transport calls [`Handler::frag`]; the handler matches the envelope
//! against posted receives and copies the data into the user's buffer, or stores it as
//! unexpected.
//!
//! Messages above the transport's eager limit use rendezvous: `RTS` carries where the data is
//! ([`Link::expose`]); the receiver pulls it with one [`Link::get`] and answers `FIN`. If the
//! get is refused, the receiver answers `CTS` and the sender streams `DATA` chunks, which the
//! receiver drains as they arrive. A large posted receive that names its source may advertise
//! its buffer, so the sender writes straight into it ([`Link::put`], see `recv_write`).
//!
//! Everything a handler must send goes out at once through the link it was given; what does
//! not fit waits in [`Proto`]'s pending queue, in send order per peer. An error of one
//! operation lands in that operation's status; a fault that breaks communication with a peer
//! (a corrupt header) is recorded as a [`Fault`] for the engine to act on.

use std::collections::VecDeque;

use std::sync::Arc;

use super::iov::{self, Chunked, IovDesc, Seg};
use super::matching::{Body, Matcher, Stored, Unexpected};
use super::protocol::Protocol;
use super::recv_write::{Advert, SeqCounters};
use super::request::{ReqId, Slab, State, Status};
use super::stored::StoreCache;
use super::wire::{am, CtrlHdr, Envelope, MatchHdr, CTRL_HDR_LEN, HDR_MAX};
use crate::error::{Error, ErrorClass, Result};
use crate::transport::{Frag, Handler, Limits, Link, Payload, Remote, SendError};

/// How a send completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    /// Standard (and ready) mode: complete once the buffer may be reused.
    Standard,
    /// Synchronous mode: complete once the receive has matched.
    Synchronous,
    /// A collective schedule's step: standard, and eager up to the transport's
    /// [`coll_eager_limit`](crate::transport::Limits::coll_eager_limit).
    Collective,
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
    /// Pushed rendezvous bytes a transport read straight into the receive buffer.
    pub placed_bytes: u64,
    /// Rendezvous messages moved in one copy as pieces (a derived datatype on either side).
    pub iov_pulls: u64,
    /// Rendezvous receives unpacked chunk by chunk as the sender packed and pushed them.
    pub packed_pushes: u64,
}

/// A fault that breaks communication with a peer (or with everyone, `peer: None`).
#[derive(Debug)]
pub struct Fault {
    /// The peer whose fragments or link broke, if known.
    pub peer: Option<u32>,
    /// What went wrong.
    pub error: Error,
}

/// A fragment waiting for transport room, in send order.
#[derive(Debug)]
pub(super) struct Pending {
    pub to: u32,
    pub am: u8,
    pub hdr: [u8; HDR_MAX],
    pub hdr_len: u8,
    pub data: *const u8,
    pub len: usize,
    /// Request to complete once sent (eager standard sends).
    pub complete: Option<ReqId>,
}

/// Where the chunks of a chunked eager message go.
#[derive(Debug)]
enum Target {
    /// Straight into a posted receive (through its datatype's unpacker, if it has one).
    Posted {
        req: u32,
        buf: *mut u8,
        cap: usize,
        unpack: Option<Arc<IovDesc>>,
    },
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

/// Matching and protocol state: everything a fragment handler touches (never the transport
/// itself, which it reaches through the [`Link`] it is given).
#[derive(Debug)]
pub struct Proto {
    pub(super) me: u32,
    pub(super) matcher: Matcher,
    /// Buffers of early eager messages, given back by the receives that take them.
    stored: StoreCache,
    pub(super) reqs: Slab,
    /// Fragments waiting for transport room, in send order.
    pub(super) pending: VecDeque<Pending>,
    /// Entries of `pending` per destination (a send to a peer with queued fragments queues
    /// behind them, keeping per-pair order).
    pub(super) pending_to: Vec<u32>,
    /// Rendezvous sends pushing chunks after a `CTS`.
    pub(super) pushing: Vec<ReqId>,
    /// Our receives being pushed to us after a `CTS` we sent (only a lone one is pushed below
    /// the single-copy crossover: several at once share one sender's pool, and pulls win).
    pushed_recvs: u32,
    /// Peer world rank of each request slot with one (`u32::MAX`: none or any).
    pub(super) peer_of: Vec<u32>,
    /// Matching messages seen per (sender, context): the receiver side of recv_write.
    arrived: SeqCounters,
    /// Matching messages we sent per (receiver, context): the sender side of recv_write.
    sent: SeqCounters,
    /// Adverts received from peers, waiting for our next large send to them; each is for
    /// our next message to its peer on its context, and dropped with that message.
    pub(super) adverts: Vec<Advert>,
    /// Our posted receives that a peer may write into (they cannot be cancelled).
    pub(super) advertised: Vec<u32>,
    /// Chunked eager messages being assembled, by sender world rank.
    assembling: Vec<Option<Assembly>>,
    /// Faults found while handling fragments, for the engine.
    pub(super) faults: Vec<Fault>,
    pub(super) stats: Stats,
    /// Operations whose data is in pieces (see `iov`), by their packed bytes' address; empty
    /// unless a large derived-datatype operation is pending.
    pub(super) iov: Vec<Arc<IovDesc>>,
    /// Which derived-datatype operations the layer above registers; `None` (the default):
    /// none.
    pub(super) iov_policy: Option<super::iov::IovPolicy>,
    /// Pushed sends packing, and pushed receives unpacking, chunk by chunk (see `iov`).
    packed: Vec<(ReqId, Arc<IovDesc>)>,
    /// One chunk's packed bytes, reused.
    scratch: Vec<u8>,
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

/// Reads `n` bytes at `buf`.
///
/// # Safety
/// `buf` is valid for `n` bytes of reads: the API layer keeps the send buffer borrowed until
/// the request completes.
#[inline]
unsafe fn user_data<'a>(buf: *const u8, n: usize) -> &'a [u8] {
    if n == 0 {
        return &[];
    }
    // SAFETY: caller contract.
    unsafe { std::slice::from_raw_parts(buf, n) }
}

/// Sends one fragment `kind` of `k` packed-stream bytes from `start`, which `p` packs:
/// straight into the transport's block where it takes a fill, else into `scratch` (grown
/// once, then reused) and sent from there. The self transport fills its own queued buffer;
/// shm cells and TCP take no fill (TCP writes a payload with one `writev` from wherever it
/// lies, so the scratch is its one copy, as a frame buffer would be; a cell holds at most
/// `inline_max` bytes).
///
/// # Safety
/// The operation `p` packs is pending: its data is readable.
#[allow(clippy::too_many_arguments)]
unsafe fn send_packed<L: Link>(
    link: &mut L,
    scratch: &mut Vec<u8>,
    to: u32,
    kind: u8,
    hdr: &[u8],
    p: &dyn Chunked,
    start: u64,
    k: usize,
) -> std::result::Result<(), SendError> {
    // SAFETY: forwarded from our caller; `out` is the transport's own.
    let mut fill = |out: &mut [u8]| unsafe { p.pack(start, out) };
    match link.send_fill(to, kind, hdr, k, &mut fill) {
        Ok(true) => Ok(()),
        Ok(false) => {
            if scratch.len() < k {
                scratch.resize(k, 0);
            }
            // SAFETY: as above; the scratch is ours.
            unsafe { p.pack(start, &mut scratch[..k]) };
            link.send(to, kind, hdr, &scratch[..k])
        }
        Err(e) => Err(e),
    }
}

/// Unpacks the first `n` payload bytes as packed-stream bytes from `start` through `u`:
/// straight out of the fragment where it lies in one place (a pool block, stored bytes),
/// else (a few shm cells) through `scratch`.
///
/// # Safety
/// The operation `u` unpacks into is pending: its memory is writable.
unsafe fn unpack_payload(
    scratch: &mut Vec<u8>,
    u: &dyn Chunked,
    start: u64,
    data: &Payload<'_>,
    n: usize,
) {
    let n = n.min(data.len());
    if n == 0 {
        return;
    }
    if let Some(b) = data.contiguous() {
        // SAFETY: forwarded from our caller.
        return unsafe { u.unpack(start, &b[..n]) };
    }
    if scratch.len() < n {
        scratch.resize(n, 0);
    }
    data.copy_to(&mut scratch[..n]);
    // SAFETY: as above.
    unsafe { u.unpack(start, &scratch[..n]) };
}

/// No peer recorded for a request slot.
const NO_PEER: u32 = u32::MAX;

impl Handler for Proto {
    #[inline]
    fn frag<L: Link>(&mut self, link: &mut L, f: Frag<'_>) {
        self.on_frag(link, f.from, f.am, f.hdr, &f.payload);
    }

    /// A rendezvous chunk from the sender of a receive in progress goes to its offset in the
    /// receive buffer, when it fits there whole (a truncating chunk takes the copying path).
    #[inline]
    fn place(&mut self, from: u32, am: u8, hdr: &[u8], len: usize) -> Option<*mut u8> {
        if am != am::DATA {
            return None;
        }
        let c = CtrlHdr::decode(hdr)?;
        if self.peer_of.get(c.rreq as usize) != Some(&from) {
            return None;
        }
        if !self.packed.is_empty() && self.packed_of(self.reqs.id_at(c.rreq)).is_some() {
            // Unpacked chunk by chunk: its `buf` is only a key.
            return None;
        }
        match self.reqs.state_at(c.rreq) {
            Some(&mut State::RecvChunks { buf, expect, .. })
                if c.offset.checked_add(len as u64)? <= expect =>
            {
                // SAFETY: offset + len ≤ expect ≤ the receive buffer's capacity, so the
                // result stays inside the buffer the API layer keeps borrowed.
                Some(unsafe { buf.add(c.offset as usize) })
            }
            _ => None,
        }
    }
}

impl Proto {
    /// Protocol state for world rank `me` of `size`.
    pub fn new(me: u32, size: u32) -> Proto {
        Proto {
            me,
            matcher: Matcher::new(),
            stored: StoreCache::new(),
            reqs: Slab::default(),
            pending: VecDeque::new(),
            pending_to: vec![0; size as usize],
            pushing: Vec::new(),
            pushed_recvs: 0,
            peer_of: Vec::new(),
            arrived: SeqCounters::default(),
            sent: SeqCounters::default(),
            adverts: Vec::new(),
            advertised: Vec::new(),
            assembling: Vec::new(),
            faults: Vec::new(),
            stats: Stats::default(),
            iov: Vec::new(),
            iov_policy: None,
            packed: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Registers the pieces `d` of a pending operation; entries whose operation ended (only
    /// this list still holds them) are dropped.
    pub(super) fn register_iov(&mut self, d: Arc<IovDesc>) {
        self.iov.retain(|e| Arc::strong_count(e) > 1);
        self.iov.push(d);
    }

    /// The pieces standing in for the `len` bytes at `buf`, if a live operation registered
    /// them.
    fn find_iov(&mut self, buf: *const u8, len: usize) -> Option<Arc<IovDesc>> {
        if self.iov.is_empty() {
            return None;
        }
        self.iov.retain(|e| Arc::strong_count(e) > 1);
        self.iov
            .iter()
            .rev()
            .find(|d| d.stands_for(buf, len))
            .cloned()
    }

    /// Takes a request slot for an operation with `peer` (world rank, or [`NO_PEER`]).
    // On every receive's path: a call here measured 54 instructions more per message.
    #[inline(always)]
    pub(super) fn alloc(&mut self, state: State, peer: u32) -> ReqId {
        let id = self.reqs.alloc(state);
        let i = id.idx() as usize;
        if i >= self.peer_of.len() {
            self.peer_of.resize(i + 1, NO_PEER);
        }
        self.peer_of[i] = peer;
        id
    }

    /// Frees request `id` of an operation that never started.
    fn discard(&mut self, id: ReqId) {
        self.reqs.complete(id.idx(), Status::default());
        self.reqs.take_if_done(id);
    }

    fn fail(&mut self, peer: u32, msg: String) {
        self.faults.push(Fault {
            peer: Some(peer),
            error: Error::new(ErrorClass::Intern, msg),
        });
    }

    // ---- sending -------------------------------------------------------------------------

    /// Sends a standard-mode message small enough for the transport's inline cells at once,
    /// if nothing is queued to `to` and no derived-datatype key can be involved; returns
    /// whether it did. On `false` nothing happened, and [`isend`](Self::isend) does the send
    /// (and reports any error). The answer is one register: the general start's `Result`,
    /// reloaded through memory, waited for the ring stores of the message just written.
    ///
    /// # Safety
    /// `buf` must be valid for reads of `len` bytes during the call.
    #[inline]
    pub unsafe fn try_isend_inline<L: Link>(
        &mut self,
        link: &mut L,
        buf: *const u8,
        len: usize,
        to: u32,
        env: Envelope,
    ) -> bool {
        if Protocol::choose(&link.limits(), len) != Protocol::Inline
            || !self.iov.is_empty()
            || self.pending_to.get(to as usize) != Some(&0)
        {
            return false;
        }
        let h = MatchHdr::new(env, 0, len as u64);
        let mut hdr = [0u8; HDR_MAX];
        let hdr_len = h.encode(am::EAGER, &mut hdr);
        // SAFETY: the caller guarantees `buf` is valid for `len` bytes.
        let payload = unsafe { user_data(buf, len) };
        // A refusal (full ring) or an error changes nothing: `isend` then tries again.
        if link.send(to, am::EAGER, &hdr[..hdr_len], payload).is_err() {
            return false;
        }
        // As `isend` counts every message to (`to`, context), for advertised receives.
        let seq = self.sent.bump(to, env.ctx);
        self.take_advert(to, env, seq, len);
        true
    }

    /// Starts sending `len` bytes at `buf` to world rank `to` over `link`. `Ok(None)`: already
    /// complete; `Ok(Some(id))`: wait on `id`.
    ///
    /// # Safety
    /// `buf` must be valid for reads of `len` bytes until the send completes.
    #[inline]
    pub unsafe fn isend<L: Link>(
        &mut self,
        link: &mut L,
        mode: SendMode,
        buf: *const u8,
        len: usize,
        to: u32,
        env: Envelope,
    ) -> Result<Option<ReqId>> {
        let sync = mode == SendMode::Synchronous;
        let mut limits = link.limits();
        if mode == SendMode::Collective {
            limits.eager_limit = limits.coll_eager_limit;
        }
        let protocol = Protocol::choose(&limits, len);
        let seq = self.sent.bump(to, env.ctx);
        let advert = self.take_advert(to, env, seq, len);
        // Data in pieces travels as its list when the receiver can gather it in one copy;
        // every other path sends the packed bytes, gathered now (`buf` is only a key then).
        let mut buf = buf;
        let mut pieces = None;
        if !self.iov.is_empty() {
            if let Some(d) = self.find_iov(buf, len) {
                // Data packed as it goes cannot be copied once from the sender's memory: it
                // stays eager, packed straight into pool blocks, up to the larger limit.
                let packing = Protocol::choose(
                    &Limits {
                        eager_limit: limits.coll_eager_limit,
                        ..limits
                    },
                    len,
                );
                if packing != Protocol::Rendezvous && d.chunks().is_some() {
                    // SAFETY: forwarded from our caller; the layer above holds `d` until the
                    // send completes.
                    return unsafe {
                        self.isend_packing(link, sync, &d, len, to, env, packing, limits.max_frag)
                    };
                }
                let list = link.expose(d.segs().as_ptr().cast(), std::mem::size_of_val(d.segs()));
                if protocol == Protocol::Rendezvous && d.chunks().is_some() {
                    // Packed chunk by chunk as it is pushed.
                    pieces = Some((Remote::default(), 0));
                } else if protocol == Protocol::Rendezvous
                    && limits.iov_max > 0
                    && list.flags == 0
                    && u32::try_from(d.segs().len()).is_ok()
                {
                    pieces = Some((list, d.segs().len() as u32));
                } else {
                    // SAFETY: the send is pending, so the layer above keeps its data (and
                    // `d`, which owns the packed bytes, until the send completes).
                    buf = unsafe { d.gather() };
                }
            }
        }
        let exposed = match (protocol, pieces) {
            (Protocol::Rendezvous, Some((list, _))) => list,
            (Protocol::Rendezvous, None) => link.expose(buf, len),
            _ => Remote::default(),
        };
        // Memory the receiver reaches with a plain copy (flags set) beats any write.
        if let Some(a) = advert {
            if protocol == Protocol::Rendezvous && pieces.is_none() && exposed.flags == 0 {
                // SAFETY: forwarded from our caller.
                if unsafe { self.try_recv_write(link, buf, len, to, env, a)? } {
                    return Ok(None);
                }
            }
        }
        if protocol == Protocol::ChunkedEager {
            // SAFETY: forwarded from our caller.
            return unsafe {
                self.isend_chunked(link, sync, buf, len, to, env, limits.max_frag, None)
            };
        }
        let mut h = MatchHdr::new(env, 0, len as u64);
        let (kind, wait) = if let Some((_, nseg)) = pieces {
            (h.addr, h.pid, h.flags) = (exposed.addr, exposed.key, nseg);
            (
                if nseg == 0 {
                    am::RTS_PACKED
                } else {
                    am::RTS_IOV
                },
                true,
            )
        } else if protocol == Protocol::Rendezvous {
            (h.addr, h.pid, h.flags) = (exposed.addr, exposed.key, exposed.flags);
            // Nothing posted for us to receive: this rank's core will be free to copy the
            // data into its pool if the receiver asks for a push. Not on an oversubscribed
            // host, where that core is another rank's too.
            h.idle = self.pushed_recvs == 0
                && !self.matcher.any_posted()
                && !crate::runtime::oversubscribed();
            (am::RTS, true)
        } else if sync {
            (am::EAGER_SYNC, true)
        } else {
            (am::EAGER, false)
        };
        let waiting = wait.then(|| self.alloc(State::SendWait { buf, len }, to));
        if let Some(id) = waiting {
            h.sreq = id.idx();
        }
        let mut hdr = [0u8; HDR_MAX];
        let hdr_len = h.encode(kind, &mut hdr);
        let payload: &[u8] = if matches!(kind, am::RTS | am::RTS_IOV | am::RTS_PACKED) {
            &[]
        } else {
            // SAFETY: the caller guarantees `buf` is valid for `len` bytes.
            unsafe { user_data(buf, len) }
        };
        if self.pending_to[to as usize] == 0 {
            match link.send(to, kind, &hdr[..hdr_len], payload) {
                Ok(()) => return Ok(waiting),
                Err(SendError::Busy) => {}
                Err(SendError::Fatal(e)) => {
                    if let Some(id) = waiting {
                        self.discard(id);
                    }
                    return Err(e);
                }
            }
        }
        let complete = match waiting {
            Some(_) => None,
            None => Some(self.alloc(State::SendQueued, to)),
        };
        self.queue(Pending {
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

    /// Sends an eager-size message whose bytes `d`'s packer produces (a non-contiguous
    /// datatype's), packed straight into the transport's cells or pool block, one fragment or
    /// chunked eager as `protocol` says. Only a fragment that must wait for room needs the
    /// packed bytes: they are gathered then (allocated on that use) and queued.
    ///
    /// # Safety
    /// As for [`isend`](Self::isend): `d`'s data stays readable, and the layer above holds
    /// `d` (owning any packed bytes), until the send completes.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    unsafe fn isend_packing<L: Link>(
        &mut self,
        link: &mut L,
        sync: bool,
        d: &IovDesc,
        len: usize,
        to: u32,
        env: Envelope,
        protocol: Protocol,
        max_frag: usize,
    ) -> Result<Option<ReqId>> {
        if protocol == Protocol::ChunkedEager {
            // SAFETY: forwarded from our caller.
            return unsafe {
                self.isend_chunked(link, sync, d.key(), len, to, env, max_frag, Some(d))
            };
        }
        let Some(p) = d.chunks() else {
            return Err(Error::new(
                ErrorClass::Intern,
                "packed send without a packer",
            ));
        };
        let kind = if sync { am::EAGER_SYNC } else { am::EAGER };
        let waiting = sync.then(|| self.alloc(State::SendWait { buf: d.key(), len }, to));
        let h = MatchHdr::new(env, waiting.map_or(0, |w| w.idx()), len as u64);
        let mut hdr = [0u8; HDR_MAX];
        let hdr_len = h.encode(kind, &mut hdr);
        if self.pending_to[to as usize] == 0 {
            // SAFETY: the send is pending: its data is readable (our caller's contract).
            let sent = unsafe {
                send_packed(
                    link,
                    &mut self.scratch,
                    to,
                    kind,
                    &hdr[..hdr_len],
                    p,
                    0,
                    len,
                )
            };
            match sent {
                Ok(()) => return Ok(waiting),
                Err(SendError::Busy) => {}
                Err(SendError::Fatal(e)) => {
                    if let Some(id) = waiting {
                        self.discard(id);
                    }
                    return Err(e);
                }
            }
        }
        // SAFETY: as above; `d` owns the packed bytes until the send completes.
        let data = unsafe { d.gather() };
        let complete = match waiting {
            Some(_) => None,
            None => Some(self.alloc(State::SendQueued, to)),
        };
        self.queue(Pending {
            to,
            am: kind,
            hdr,
            hdr_len: hdr_len as u8,
            data,
            len,
            complete,
        });
        Ok(waiting.or(complete))
    }

    fn queue(&mut self, p: Pending) {
        self.pending_to[p.to as usize] += 1;
        self.pending.push_back(p);
    }

    /// Takes the advert from `to` that message `seq` (`len` bytes, `env`) may be written
    /// into, if any, and drops every other advert from `to` on that context: each was for
    /// this message, used now or stale after it, whatever path it takes (left behind, they
    /// would pile up: a large receive posted for small messages advertises each time).
    #[inline]
    fn take_advert(&mut self, to: u32, env: Envelope, seq: u64, len: usize) -> Option<Advert> {
        if self.adverts.is_empty() {
            return None;
        }
        let mut hit = None;
        self.adverts.retain(|a| {
            if a.from != to || a.ctx != env.ctx {
                return true;
            }
            if hit.is_none() && a.accepts(env.ctx, seq, env.tag, len) {
                hit = Some(*a);
            }
            false
        });
        hit
    }

    /// Writes a rendezvous-size message straight into the buffer that advert `a` (taken for
    /// this message) names; returns whether it did.
    ///
    /// # Safety
    /// As for [`isend`](Self::isend).
    unsafe fn try_recv_write<L: Link>(
        &mut self,
        link: &mut L,
        buf: *const u8,
        len: usize,
        to: u32,
        env: Envelope,
        a: Advert,
    ) -> Result<bool> {
        if !link.limits().put {
            return Ok(false);
        }
        // SAFETY: the caller guarantees `buf` is valid for `len` bytes.
        let data = unsafe { user_data(buf, len) };
        let dst = Remote {
            addr: a.addr,
            key: a.pid,
            flags: 0,
        };
        if link.put(to, dst, data).is_err() {
            // Refused: the ordinary rendezvous (and its own fallback) carries this message.
            return Ok(false);
        }
        let h = MatchHdr::new(env, a.rreq, len as u64);
        let mut hdr = [0u8; HDR_MAX];
        let n = h.encode(am::RTS, &mut hdr);
        self.send_ctrl(link, to, am::WRITTEN, hdr, n);
        self.stats.recv_writes += 1;
        Ok(true)
    }

    /// Sends a header-only fragment now, or queues it behind pending traffic to `to`. A link
    /// that cannot reach `to` at all is a fault of that peer.
    fn send_ctrl<L: Link>(
        &mut self,
        link: &mut L,
        to: u32,
        kind: u8,
        hdr: [u8; HDR_MAX],
        n: usize,
    ) {
        if self.pending_to[to as usize] == 0 {
            match link.send(to, kind, &hdr[..n], &[]) {
                Ok(()) => return,
                Err(SendError::Busy) => {}
                Err(SendError::Fatal(e)) => {
                    self.faults.push(Fault {
                        peer: Some(to),
                        error: e,
                    });
                    return;
                }
            }
        }
        self.queue(Pending {
            to,
            am: kind,
            hdr,
            hdr_len: n as u8,
            data: std::ptr::null(),
            len: 0,
            complete: None,
        });
    }

    /// Sends a control header (`ACK`, `FIN`, `CTS`).
    fn reply<L: Link>(&mut self, link: &mut L, to: u32, kind: u8, c: CtrlHdr) {
        let mut hdr = [0u8; HDR_MAX];
        hdr[..CTRL_HDR_LEN].copy_from_slice(&c.encode()[..CTRL_HDR_LEN]);
        self.send_ctrl(link, to, kind, hdr, CTRL_HDR_LEN);
    }

    /// Sends an eager message in chunks of at most `max` bytes: a head carrying the envelope,
    /// then the rest, queued behind anything already pending for `to` so chunks never
    /// interleave with other messages to the same peer. With `packer` (`buf` is its key) each
    /// chunk is packed straight into the transport as it goes, and the packed bytes are
    /// gathered only if some chunks must wait for room.
    ///
    /// # Safety
    /// As for [`isend`](Self::isend) (and [`isend_packing`](Self::isend_packing) for a
    /// `packer`).
    #[allow(clippy::too_many_arguments)]
    unsafe fn isend_chunked<L: Link>(
        &mut self,
        link: &mut L,
        sync: bool,
        buf: *const u8,
        len: usize,
        to: u32,
        env: Envelope,
        max: usize,
        packer: Option<&IovDesc>,
    ) -> Result<Option<ReqId>> {
        let waiting = sync.then(|| self.alloc(State::SendWait { buf, len }, to));
        let h = MatchHdr {
            addr: sync as u64,
            ..MatchHdr::new(env, waiting.map_or(0, |w| w.idx()), len as u64)
        };
        let mut hdr = [0u8; HDR_MAX];
        let head_len = h.encode(am::RTS, &mut hdr);
        let chunk = |off: usize| {
            let k = max.min(len - off);
            if off == 0 {
                (k, am::EAGER_HEAD, head_len)
            } else {
                (k, am::EAGER_CONT, 0)
            }
        };
        let mut off = 0;
        while off < len && self.pending_to[to as usize] == 0 {
            let (k, kind, hl) = chunk(off);
            let sent = match packer.and_then(IovDesc::chunks) {
                // SAFETY: the send is pending: its data is readable (our caller's contract).
                Some(p) => unsafe {
                    send_packed(
                        link,
                        &mut self.scratch,
                        to,
                        kind,
                        &hdr[..hl],
                        p,
                        off as u64,
                        k,
                    )
                },
                // SAFETY: off + k ≤ len, inside the caller's buffer.
                None => link.send(to, kind, &hdr[..hl], unsafe { user_data(buf.add(off), k) }),
            };
            match sent {
                Ok(()) => off += k,
                Err(SendError::Busy) => break,
                Err(SendError::Fatal(e)) if off == 0 => {
                    if let Some(id) = waiting {
                        self.discard(id);
                    }
                    return Err(e);
                }
                Err(SendError::Fatal(e)) => {
                    // Part of the message is out: the peer's stream is broken.
                    self.faults.push(Fault {
                        peer: Some(to),
                        error: e,
                    });
                    return Ok(waiting);
                }
            }
        }
        if off >= len {
            return Ok(waiting);
        }
        let buf = match packer {
            // The rest waits for room: the queued chunks point into the packed bytes.
            // SAFETY: the data is readable and `packer` owns the packed bytes until the send
            // completes (our caller's contract).
            Some(d) => unsafe { d.gather() },
            None => buf,
        };
        let last = waiting.is_none().then(|| self.alloc(State::SendQueued, to));
        while off < len {
            let (k, kind, hl) = chunk(off);
            self.queue(Pending {
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
        Ok(waiting.or(last))
    }

    /// Sends queued fragments to `to`'s route while its link has room (the engine calls this
    /// per destination at the head of the queue). Returns how many went out.
    pub(super) fn flush_head<L: Link>(&mut self, link: &mut L) -> usize {
        let mut n = 0;
        while let Some(p) = self.pending.front() {
            // SAFETY: the request owning this buffer is not complete, so the API layer still
            // holds the buffer borrowed.
            let payload = unsafe { user_data(p.data, p.len) };
            let (to, kind, hdr, hdr_len, complete) =
                (p.to, p.am, p.hdr, p.hdr_len as usize, p.complete);
            match link.send(to, kind, &hdr[..hdr_len], payload) {
                Ok(()) => {
                    self.pending.pop_front();
                    self.pending_to[to as usize] -= 1;
                    if let Some(id) = complete {
                        self.reqs.complete(
                            id.idx(),
                            Status {
                                bytes: payload.len() as u64,
                                ..Status::default()
                            },
                        );
                    }
                    n += 1;
                }
                Err(SendError::Busy) => break,
                Err(SendError::Fatal(e)) => {
                    // Dropped, so that the queue does not report the same fault forever.
                    self.pending.pop_front();
                    self.pending_to[to as usize] -= 1;
                    if let Some(id) = complete {
                        self.reqs.complete(
                            id.idx(),
                            Status {
                                error: Some(e.class()),
                                ..Status::default()
                            },
                        );
                    }
                    self.faults.push(Fault {
                        peer: Some(to),
                        error: e,
                    });
                    break;
                }
            }
            // The next entry may go to another route: the engine picks its link.
            if self.pending.front().is_some_and(|q| q.to != to) {
                break;
            }
        }
        n
    }

    /// Pushes chunks of rendezvous send `id` after a `CTS` while `link` has room; returns
    /// `(chunks sent, finished)`.
    pub(super) fn push<L: Link>(&mut self, link: &mut L, id: ReqId) -> (usize, bool) {
        let Some(&mut State::SendPush {
            buf,
            len,
            mut offset,
            to,
            rreq,
        }) = self.reqs.state(id)
        else {
            return (0, true);
        };
        let limits = link.limits();
        let mut n = 0;
        let mut fault = None;
        let chunked = self.packed_of(id);
        // Push-sized chunks while the transport has room for them, else fragment-sized ones.
        let mut max = limits.push_frag.max(limits.max_frag);
        while offset < len {
            let k = (len - offset).min(max);
            let c = CtrlHdr {
                sreq: id.idx(),
                rreq,
                offset: offset as u64,
            };
            let hdr = c.encode();
            let sent = match chunked.as_ref().and_then(|d| d.chunks()) {
                // SAFETY: the send is pending: its data is readable.
                Some(p) => unsafe {
                    send_packed(
                        link,
                        &mut self.scratch,
                        to,
                        am::DATA,
                        &hdr,
                        p,
                        offset as u64,
                        k,
                    )
                },
                // SAFETY: the send is incomplete, so its buffer is still borrowed by the API.
                None => link.send(to, am::DATA, &hdr, unsafe { user_data(buf.add(offset), k) }),
            };
            match sent {
                Ok(()) => {
                    offset += k;
                    n += 1;
                }
                Err(SendError::Busy) if k > limits.max_frag => max = limits.max_frag,
                Err(SendError::Busy) => break,
                Err(SendError::Fatal(e)) => {
                    fault = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = fault {
            self.faults.push(Fault {
                peer: Some(to),
                error: e,
            });
            return (n, false);
        }
        if offset >= len {
            if chunked.is_some() {
                self.packed.retain(|(r, _)| *r != id);
            }
            self.reqs.complete(
                id.idx(),
                Status {
                    bytes: len as u64,
                    ..Status::default()
                },
            );
            return (n, true);
        }
        if let Some(State::SendPush { offset: o, .. }) = self.reqs.state(id) {
            *o = offset;
        }
        (n, false)
    }

    /// The destination of pushing send `id`, if it is still pushing.
    pub(super) fn push_target(&mut self, id: ReqId) -> Option<u32> {
        match self.reqs.state(id) {
            Some(&mut State::SendPush { to, .. }) => Some(to),
            _ => None,
        }
    }

    // ---- receiving -----------------------------------------------------------------------

    /// Advertises posted receive `id` (`cap` bytes at `buf`, from world rank `w` on `ctx` with
    /// `tag`) to its sender, if the link can take a direct write and nothing posted earlier
    /// could take that sender's next message.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn maybe_advertise<L: Link>(
        &mut self,
        link: &mut L,
        id: ReqId,
        buf: *mut u8,
        cap: usize,
        ctx: u32,
        src: i32,
        tag: i32,
        w: u32,
    ) {
        let limits = link.limits();
        if !limits.put
            || cap <= limits.eager_limit
            || !limits.copied_once_when_lone(cap)
            || self.matcher.other_posted_from(ctx, src, id.idx())
        {
            return;
        }
        if self.find_iov(buf, cap).is_some() {
            // Pieces: the receiver gathers them itself in one copy (a write would land in
            // the packed bytes and need unpacking).
            return;
        }
        let r = link.expose(buf, cap);
        if r.flags != 0 {
            // Transport-specific memory (an arena): a plain rendezvous reads it as well.
            return;
        }
        let a = Advert {
            from: self.me,
            ctx,
            tag,
            rreq: id.idx(),
            seq: self.arrived.get(w, ctx) as u32,
            addr: r.addr,
            cap: cap as u64,
            pid: r.key,
        };
        self.advertised.push(id.idx());
        self.send_ctrl(
            link,
            w,
            am::ADVERT,
            a.encode(),
            super::recv_write::ADVERT_LEN,
        );
    }

    /// Receives a message already taken from the unexpected queue (also matched probe) into a
    /// new request; `link` is the route to its sender.
    ///
    /// # Safety
    /// `buf` must be valid for writes of `cap` bytes, and not otherwise accessed, until the
    /// receive completes.
    pub unsafe fn recv_unexpected<L: Link>(
        &mut self,
        link: &mut L,
        u: Unexpected,
        buf: *mut u8,
        cap: usize,
    ) -> ReqId {
        let id = self.alloc(
            State::Recv {
                buf,
                cap,
                ctx: u.env.ctx,
            },
            u.from,
        );
        let mut h = MatchHdr::new(u.env, 0, 0);
        let (kind, data) = match u.body {
            Body::Eager(d) => (am::EAGER, d),
            Body::EagerSync { data, sreq } => {
                h.sreq = sreq;
                (am::EAGER_SYNC, data)
            }
            Body::Rts {
                sreq,
                len,
                addr,
                pid,
                flags,
                idle,
                kind,
            } => {
                (h.sreq, h.len, h.addr, h.pid, h.flags, h.idle) =
                    (sreq, len, addr, pid, flags, idle);
                (kind, Stored::Heap(Vec::new()))
            }
        };
        self.deliver(
            link,
            id.idx(),
            u.from,
            kind,
            &h,
            &Payload::Bytes(data.as_slice()),
        );
        self.stored.recycle(data);
        id
    }

    /// Handles one arrived fragment.
    #[inline]
    fn on_frag<L: Link>(
        &mut self,
        link: &mut L,
        from: u32,
        kind: u8,
        hdr: &[u8],
        data: &Payload<'_>,
    ) {
        match kind {
            am::EAGER | am::EAGER_SYNC | am::RTS | am::RTS_IOV | am::RTS_PACKED => {
                let Some(h) = MatchHdr::decode(kind, hdr) else {
                    return self.fail(from, format!("short header from rank {from}"));
                };
                self.arrived.bump(from, h.env.ctx);
                match self.matcher.match_arrival(&h.env) {
                    Some(p) => self.deliver(link, p.req, from, kind, &h, data),
                    None => {
                        let body = match kind {
                            am::EAGER => {
                                Body::Eager(self.stored.store(data.len(), |b| data.copy_to(b)))
                            }
                            am::EAGER_SYNC => Body::EagerSync {
                                data: self.stored.store(data.len(), |b| data.copy_to(b)),
                                sreq: h.sreq,
                            },
                            _ => Body::Rts {
                                sreq: h.sreq,
                                len: h.len,
                                addr: h.addr,
                                pid: h.pid,
                                flags: h.flags,
                                idle: h.idle,
                                kind,
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
            am::EAGER_HEAD => self.on_head(from, hdr, data),
            am::EAGER_CONT => self.on_cont(link, from, data),
            am::ADVERT => match Advert::decode(from, hdr) {
                Some(a) => self.adverts.push(a),
                None => self.fail(from, format!("short advert from rank {from}")),
            },
            am::WRITTEN => self.on_written(from, hdr),
            am::ACK | am::FIN => match CtrlHdr::decode(hdr) {
                Some(c) => self.finish_send(from, c.sreq),
                None => self.fail(from, format!("short control header from rank {from}")),
            },
            am::CTS => self.on_cts(link, from, hdr),
            am::DATA => self.on_data(from, hdr, data),
            other => self.fail(
                from,
                format!("unknown fragment kind {other} from rank {from}"),
            ),
        }
    }

    #[cold]
    fn on_head(&mut self, from: u32, hdr: &[u8], data: &Payload<'_>) {
        let Some(h) = MatchHdr::decode(am::RTS, hdr) else {
            return self.fail(from, format!("short header from rank {from}"));
        };
        self.arrived.bump(from, h.env.ctx);
        let n = data.len();
        let target = match self.matcher.match_arrival(&h.env) {
            Some(p) => match self.reqs.state_at(p.req) {
                Some(&mut State::Recv { buf, cap, .. }) => {
                    let found = if self.iov.is_empty() {
                        None
                    } else {
                        self.find_iov(buf, cap)
                    };
                    let unpack = found.as_ref().filter(|d| d.chunks().is_some()).cloned();
                    let buf = match &found {
                        // Lands in the packed bytes, unpacked at completion.
                        Some(d) if unpack.is_none() => d.packed_ptr(),
                        _ => buf,
                    };
                    match unpack.as_deref().and_then(IovDesc::chunks) {
                        // Unpacked straight out of the fragment, chunk by chunk.
                        // SAFETY: the receive is pending: its memory is writable.
                        Some(u) => unsafe {
                            unpack_payload(&mut self.scratch, u, 0, data, n.min(cap))
                        },
                        // SAFETY: at most `cap` bytes, the posted receive's capacity.
                        None => data.copy_to(unsafe { user_buf(buf, n.min(cap)) }),
                    }
                    if !self.advertised.is_empty() {
                        self.advertised.retain(|&r| r != p.req);
                    }
                    Target::Posted {
                        req: p.req,
                        buf,
                        cap,
                        unpack,
                    }
                }
                _ => return self.fail(from, format!("posted receive {} vanished", p.req)),
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

    #[cold]
    fn on_cont<L: Link>(&mut self, link: &mut L, from: u32, data: &Payload<'_>) {
        let Some(a) = self
            .assembling
            .get_mut(from as usize)
            .and_then(Option::as_mut)
        else {
            return self.fail(
                from,
                format!("chunk without a message head from rank {from}"),
            );
        };
        let n = data.len();
        match &mut a.target {
            Target::Posted {
                buf, cap, unpack, ..
            } => {
                let at = (a.got as usize).min(*cap);
                let keep = n.min(*cap - at);
                match unpack.as_deref().and_then(IovDesc::chunks) {
                    // SAFETY: the receive is pending: its memory is writable.
                    Some(u) => unsafe {
                        unpack_payload(&mut self.scratch, u, at as u64, data, keep)
                    },
                    // SAFETY: at + keep ≤ cap, inside the posted receive's buffer.
                    None => data.copy_to(unsafe { user_buf(buf.add(at), keep) }),
                }
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
                self.finish_assembly(link, from, a);
            }
        }
    }

    #[cold]
    fn on_written(&mut self, from: u32, hdr: &[u8]) {
        let Some(h) = MatchHdr::decode(am::RTS, hdr) else {
            return self.fail(from, format!("short WRITTEN from rank {from}"));
        };
        self.arrived.bump(from, h.env.ctx);
        let req = h.sreq;
        let Some(i) = self.advertised.iter().position(|&r| r == req) else {
            return self.fail(
                from,
                format!("rank {from} wrote into receive {req}, which was not advertised"),
            );
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
            _ => self.fail(
                from,
                format!("rank {from} wrote into receive {req}, which is gone"),
            ),
        }
    }

    #[cold]
    fn on_cts<L: Link>(&mut self, link: &mut L, from: u32, hdr: &[u8]) {
        let Some(c) = CtrlHdr::decode(hdr) else {
            return self.fail(from, format!("short CTS from rank {from}"));
        };
        if let Some(&mut State::SendWait { buf, len }) = self.reqs.state_at(c.sreq) {
            if let Some(d) = self.find_iov(buf, len) {
                if d.chunks().is_some() {
                    // Packed chunk by chunk as it is pushed.
                    let id = self.reqs.id_at(c.sreq);
                    self.packed.retain(|(_, e)| Arc::strong_count(e) > 1);
                    self.packed.push((id, d));
                } else {
                    // SAFETY: the send is pending: its pieces are readable, and the layer
                    // above holds `d` (owning the packed bytes) until it completes.
                    let packed = unsafe { d.gather() };
                    if let Some(State::SendWait { buf, .. }) = self.reqs.state_at(c.sreq) {
                        *buf = packed;
                    }
                }
            }
        }
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
                self.stats.pushed += 1;
                let id = self.reqs.id_at(c.sreq);
                if !self.push(link, id).1 {
                    self.pushing.push(id);
                }
            }
            _ => self.fail(
                from,
                format!("CTS for unknown send {} from rank {from}", c.sreq),
            ),
        }
    }

    #[cold]
    fn on_data(&mut self, from: u32, hdr: &[u8], data: &Payload<'_>) {
        let Some(c) = CtrlHdr::decode(hdr) else {
            return self.fail(from, format!("short DATA from rank {from}"));
        };
        let chunked = if self.packed.is_empty() {
            None
        } else {
            let id = self.reqs.id_at(c.rreq);
            self.packed_of(id)
        };
        if let Some(d) = &chunked {
            return self.on_packed_data(from, c, data, d);
        }
        match self.reqs.state_at(c.rreq) {
            Some(State::RecvChunks {
                buf,
                expect,
                total,
                got,
            }) => {
                let n = data.len() as u64;
                if let Payload::Placed(k) = data {
                    self.stats.placed_bytes += *k as u64;
                } else if c.offset < *expect {
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
            _ => self.fail(
                from,
                format!("DATA for unknown receive {} from rank {from}", c.rreq),
            ),
        }
    }

    fn finish_assembly<L: Link>(&mut self, link: &mut L, from: u32, a: Assembly) {
        let kind = if a.sync.is_some() {
            am::EAGER_SYNC
        } else {
            am::EAGER
        };
        let h = MatchHdr::new(a.env, a.sync.unwrap_or(0), a.total);
        match a.target {
            Target::Posted {
                req, cap, unpack, ..
            } => {
                if let Some(d) = unpack {
                    d.set_direct();
                }
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
                    self.reply(
                        link,
                        from,
                        am::ACK,
                        CtrlHdr {
                            sreq,
                            rreq: 0,
                            offset: 0,
                        },
                    );
                }
            }
            // Matched only now: a receive posted while the chunks arrived must still get it.
            Target::Buffer(v) => match self.matcher.match_arrival(&a.env) {
                Some(p) => self.deliver(link, p.req, from, kind, &h, &Payload::Bytes(&v)),
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

    /// A pushed chunk of a receive that unpacks as it goes (`d`): unpacked straight into the
    /// receive's memory.
    #[cold]
    fn on_packed_data(&mut self, from: u32, c: CtrlHdr, data: &Payload<'_>, d: &Arc<IovDesc>) {
        // Its `buf` is a key: `place` never names it, so no chunk arrives `Placed`.
        let Some(State::RecvChunks {
            expect, total, got, ..
        }) = self.reqs.state_at(c.rreq)
        else {
            return self.fail(
                from,
                format!("DATA for unknown receive {} from rank {from}", c.rreq),
            );
        };
        let (expect, total) = (*expect, *total);
        let n = data.len() as u64;
        *got += n;
        let done = *got >= total;
        if c.offset < expect {
            let keep = (expect - c.offset).min(n) as usize;
            let Some(u) = d.chunks() else { return };
            // SAFETY: the receive is pending: its memory is writable.
            unsafe { unpack_payload(&mut self.scratch, u, c.offset, data, keep) };
        }
        if done {
            d.set_direct();
            self.stats.packed_pushes += 1;
            let id = self.reqs.id_at(c.rreq);
            self.packed.retain(|(r, _)| *r != id);
            let st = Status {
                bytes: expect,
                error: (total > expect).then_some(ErrorClass::Truncate),
                ..Status::default()
            };
            self.complete_recv_chunks(c.rreq, st);
        }
    }

    /// The chunk packer of pushed operation `id`, if it packs or unpacks as it goes.
    fn packed_of(&self, id: ReqId) -> Option<Arc<IovDesc>> {
        self.packed
            .iter()
            .find(|(r, _)| *r == id)
            .map(|(_, d)| d.clone())
    }

    fn complete_recv_chunks(&mut self, idx: u32, mut st: Status) {
        self.pushed_recvs = self.pushed_recvs.saturating_sub(1);
        // Source and tag were recorded in the slot's status when the rendezvous started.
        let id = self.reqs.id_at(idx);
        if let Some(prev) = self.reqs.peek_status(id) {
            st.source = prev.source;
            st.tag = prev.tag;
        }
        self.reqs.complete(idx, st);
    }

    fn finish_send(&mut self, from: u32, sreq: u32) {
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
            _ => self.fail(
                from,
                format!("completion for unknown send {sreq} from rank {from}"),
            ),
        }
    }

    /// Delivers a matched message into posted receive `req`.
    #[inline]
    fn deliver<L: Link>(
        &mut self,
        link: &mut L,
        req: u32,
        from: u32,
        kind: u8,
        h: &MatchHdr,
        data: &Payload<'_>,
    ) {
        if !self.advertised.is_empty() {
            // The message came the ordinary way; the sender will find its advert stale.
            self.advertised.retain(|&r| r != req);
        }
        let Some(&mut State::Recv { buf, cap, .. }) = self.reqs.state_at(req) else {
            return self.fail(from, format!("posted receive {req} vanished"));
        };
        if kind == am::RTS || kind == am::RTS_IOV || kind == am::RTS_PACKED {
            return self.start_rendezvous(link, req, from, kind, h, buf, cap);
        }
        let len = data.len();
        let n = len.min(cap);
        if self.iov.is_empty() {
            // SAFETY: n ≤ cap, the posted receive's buffer capacity.
            data.copy_to(unsafe { user_buf(buf, n) });
        } else {
            self.deliver_registered(buf, cap, data, n);
        }
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
            self.reply(
                link,
                from,
                am::ACK,
                CtrlHdr {
                    sreq: h.sreq,
                    rreq: 0,
                    offset: 0,
                },
            );
        }
    }

    /// Delivers the first `n` bytes of an eager message into a posted receive (`buf`, `cap`
    /// bytes) while derived-datatype operations are registered: a registered receive with an
    /// unpacker unpacks them straight out of the fragment into its memory, one without lands
    /// in its packed bytes (unpacked at completion), anything else in `buf`.
    #[inline(never)]
    fn deliver_registered(&mut self, buf: *mut u8, cap: usize, data: &Payload<'_>, n: usize) {
        let Some(d) = self.find_iov(buf, cap) else {
            // SAFETY: n ≤ cap, the posted receive's buffer capacity.
            return data.copy_to(unsafe { user_buf(buf, n) });
        };
        match d.chunks() {
            Some(u) => {
                // SAFETY: the receive is pending: its memory is writable.
                unsafe { unpack_payload(&mut self.scratch, u, 0, data, n) };
                d.set_direct();
            }
            // SAFETY: n ≤ cap = the packed bytes' length.
            None => data.copy_to(unsafe { user_buf(d.packed_ptr(), n) }),
        }
    }

    /// The status of rendezvous `h` received into `cap` bytes.
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

    /// Moves the first `n` bytes of rendezvous `h` from `from` in one copy, as pieces on
    /// either side: the sender's list (`RTS_IOV`) or its one range, into `local`'s pieces or
    /// the `n` bytes at `buf`. An error: this path is unavailable (or the list is corrupt).
    fn pull_pieces<L: Link>(
        link: &mut L,
        from: u32,
        h: &MatchHdr,
        sent_iov: bool,
        local: Option<&IovDesc>,
        buf: *mut u8,
        n: u64,
    ) -> Result<()> {
        let remote = if sent_iov {
            let mut list = vec![0u8; h.flags as usize * std::mem::size_of::<Seg>()];
            let src = Remote {
                addr: h.addr,
                key: h.pid,
                flags: 0,
            };
            link.get(from, src, &mut list)?;
            let segs = iov::decode(&list);
            if segs.iter().map(|s| s.len).sum::<u64>() != h.len {
                return Err(Error::new(
                    ErrorClass::Intern,
                    format!("rank {from}'s piece list does not add up to its message"),
                ));
            }
            iov::clip(&segs, n)
        } else {
            vec![Seg {
                addr: h.addr,
                len: n,
            }]
        };
        let here = match local {
            Some(d) => iov::clip(d.segs(), n),
            None => vec![Seg {
                addr: buf as u64,
                len: n,
            }],
        };
        // SAFETY: the receive is pending: its pieces (the datatype's map in the user's
        // buffer) or its `n ≤ cap` bytes at `buf` are writable and untouched meanwhile.
        unsafe { link.get_iov(from, &remote, &here) }
    }

    /// Completes receive `req` whose data one pull brought in and tells the sender (`sreq`)
    /// with `FIN` that its buffer is free.
    fn pulled<L: Link>(&mut self, link: &mut L, from: u32, req: u32, st: Status, sreq: u32) {
        self.reqs.complete(req, st);
        self.reply(
            link,
            from,
            am::FIN,
            CtrlHdr {
                sreq,
                rreq: 0,
                offset: 0,
            },
        );
    }

    /// A rendezvous message matched receive `req`: pull it, or ask for it to be pushed.
    #[allow(clippy::too_many_arguments)]
    fn start_rendezvous<L: Link>(
        &mut self,
        link: &mut L,
        req: u32,
        from: u32,
        kind: u8,
        h: &MatchHdr,
        buf: *mut u8,
        cap: usize,
    ) {
        let st = Self::rendezvous_status(h, cap);
        let limits = link.limits();
        let (sent_iov, packed) = (kind == am::RTS_IOV, kind == am::RTS_PACKED);
        // Pieces on either side: one gathering copy beats packing and unpacking (memory the
        // sender exposed in its arena is read the plain way below).
        let found = self.find_iov(buf, cap);
        // A chunk unpacker unpacks only chunks its sender packs (`RTS_PACKED`); any other
        // message lands in its packed bytes, unpacked at completion.
        let chunked = found
            .as_ref()
            .filter(|d| packed && d.chunks().is_some())
            .cloned();
        let local = found.as_ref().filter(|d| !d.segs().is_empty()).cloned();
        // Where the bytes land when not through pieces or chunk by chunk (allocated on use).
        let flat = |d: &Option<Arc<IovDesc>>| d.as_ref().map_or(buf, |d| d.packed_ptr());
        if !packed && limits.iov_max > 0 && (sent_iov || (local.is_some() && h.flags == 0)) {
            let n = st.bytes;
            let dst = if local.is_some() { buf } else { flat(&found) };
            if Self::pull_pieces(link, from, h, sent_iov, local.as_deref(), dst, n).is_ok() {
                if let Some(d) = &local {
                    d.set_direct();
                }
                self.stats.iov_pulls += 1;
                return self.pulled(link, from, req, st, h.sreq);
            }
        }
        let buf = if chunked.is_some() { buf } else { flat(&found) };
        // Memory the sender exposed for plain copies (flags set) is always pulled; otherwise a
        // lone message in the pushed band is pushed (see `Limits::copied_once_when_lone`): its
        // sender copies into its pool while we copy out, two cores at once. A message is
        // lone when its sender said it had nothing to receive (`idle`: a window of sends,
        // which then moves at about twice the bandwidth of pulling each message), or when
        // nothing else waits here: with more receives waiting (a halo) or more messages (a
        // window whose messages arrived before its receives were posted, found unexpected one
        // by one; a bidirectional window pushed every message then, at about half the
        // bandwidth of pulling them) pulls spread the copying better, its sender likely busy
        // too. Never while a rendezvous send of ours to the same peer is unfinished: that
        // peer is busy copying our data, so a push would wait for it where a pull goes on at
        // once (a bidirectional window).
        let ctx = h.env.ctx;
        let peer_of = &self.peer_of;
        let lone = (h.idle
            || (self.pushed_recvs == 0
                && self.matcher.posted_on(ctx) == 0
                && self.matcher.unexpected_on(ctx) == 0))
            && !self
                .reqs
                .sending_rendezvous(limits.eager_limit, |i| peer_of.get(i) == Some(&from));
        let pull = h.flags != 0 || limits.copied_once_when_lone(h.len as usize) || !lone;
        if limits.get && pull && !sent_iov && !packed {
            let src = Remote {
                addr: h.addr,
                key: h.pid,
                flags: h.flags,
            };
            // SAFETY: st.bytes ≤ cap, the receive buffer's capacity.
            let dst = unsafe { user_buf(buf, st.bytes as usize) };
            if link.get(from, src, dst).is_ok() {
                self.stats.single_copy_pulls += 1;
                return self.pulled(link, from, req, st, h.sreq);
            }
        }
        // The sender pushes chunks from its own buffer.
        self.pushed_recvs += 1;
        if let Some(d) = chunked {
            // Each chunk is unpacked as it arrives.
            let id = self.reqs.id_at(req);
            self.packed.retain(|(_, e)| Arc::strong_count(e) > 1);
            self.packed.push((id, d));
        }
        let mut st = st;
        let n = st.bytes;
        st.bytes = 0;
        if let Some(s) = self.reqs.state_at(req) {
            *s = State::RecvChunks {
                buf,
                expect: n,
                total: h.len,
                got: 0,
            };
            // A wildcard receive now waits on this sender alone (its chunks may be placed).
            if let Some(p) = self.peer_of.get_mut(req as usize) {
                *p = from;
            }
        }
        self.reqs.set_status(req, st);
        self.reply(
            link,
            from,
            am::CTS,
            CtrlHdr {
                sreq: h.sreq,
                rreq: req,
                offset: 0,
            },
        );
    }
}
