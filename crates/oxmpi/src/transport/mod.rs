//! Transports move fragments between ranks; they know nothing of MPI matching.
//!
//! This layer imports nothing from the protocol layer (`p2p`), collectives or the API. Every
//! transport offers the same small interface (in the spirit of Open MPI's BTL and UCX's UCT):
//!
//! - [`Link::send`]: one fragment, a protocol header plus a payload that fits
//!   [`Limits::max_frag`], sent inline or copied into the transport's own buffers. A full
//!   transport answers [`SendError::Busy`] having sent nothing: back-pressure is a value, and the
//!   protocol layer owns the queue of what waits for room.
//! - by reference: [`Link::expose`] names a buffer of ours so that a peer can [`Link::get`] it
//!   in one copy (rendezvous pull); [`Link::put`] writes into a buffer a peer exposed
//!   (receiver-initiated write). Whether a transport can do either is in its [`Limits`].
//!   [`Link::get_iov`] does the same for lists of pieces on both sides ([`Seg`]), for data
//!   laid out by a derived datatype ([`Limits::iov_max`] entries per call; 0: none).
//! - [`Transport::poll`] hands arrived fragments to a [`Handler`], together with the
//!   transport's [`Link`] so the handler can answer at once; [`Transport::has_arrival`] is the
//!   one-load "anything arriving?" check a waiting rank spins on.
//! - [`Limits`]: the transport's sizes as data; the protocol layer chooses eager or rendezvous
//!   per transport from them (seed 001: crossovers differ by locality).
//! - [`Transport::wakeup`]: a transport whose arrivals the kernel announces (sockets) hands out
//!   a [`Wakeup`], so a waiting rank blocks until something may have arrived instead of
//!   sleeping blind; transports polled in memory (shm) have none and cost nothing here.
//!
//! Dispatch is static: the engine keeps an [`AnyTransport`] per kind and each peer's route
//! names one; a send is one `match`, no `dyn`.
//!
//! - [`selfloop`]: messages to oneself.
//! - [`shm`]: ranks on the same host, through shared memory (cells, pools, single copy).
//! - [`tcp`]: ranks on other hosts (or, forced, on this one), over TCP sockets.

pub mod selfloop;
pub mod shm;
pub mod tcp;

use std::os::fd::RawFd;
use std::time::Duration;

use crate::error::Error;

/// A transport's sizes and abilities, read by the protocol layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest payload sent inline with its header (no buffer of the transport's pool).
    pub inline_max: usize,
    /// Largest payload one fragment carries.
    pub max_frag: usize,
    /// Largest payload one fragment of a pushed rendezvous message carries (at least
    /// `max_frag`; a transport may refuse one this large for want of room, and then takes
    /// `max_frag`): a push copies long runs, and each fragment costs a hand-over between
    /// the cores, which on cores far apart outweighs copying 8 KiB.
    pub push_frag: usize,
    /// Largest message sent eagerly; larger ones use rendezvous.
    pub eager_limit: usize,
    /// Largest message sent eagerly (at least `eager_limit`) of a collective's schedule,
    /// whose sender then goes on at once and back-to-back collectives overlap, and of data
    /// packed as it is sent (derived datatypes), which cannot be copied once from the sender.
    pub coll_eager_limit: usize,
    /// Whether [`Link::get`] can read a peer's exposed memory (single-copy rendezvous).
    pub get: bool,
    /// Whether [`Link::put`] can write a peer's exposed memory (receiver-initiated write).
    pub put: bool,
    /// Smallest lone rendezvous message (no other pushed receive in progress, no other
    /// message waiting) pushed in fragment-size chunks, whose two copies run on two cores at
    /// once; a smaller one is copied once (pulled, or written by its sender).
    pub push_min: usize,
    /// Smallest lone rendezvous message copied once again, above the pushed band
    /// `push_min..single_copy_min`.
    pub single_copy_min: usize,
    /// Most pieces per side that one system call of [`Link::get_iov`] moves (the transport
    /// batches longer lists itself); 0: no iovec copies on this transport.
    pub iov_max: usize,
}

impl Limits {
    /// Whether a lone rendezvous message of `len` bytes is copied once (pulled by its
    /// receiver, or written by its sender into a receive posted in time) rather than pushed.
    #[inline]
    pub fn copied_once_when_lone(&self, len: usize) -> bool {
        len < self.push_min || len >= self.single_copy_min
    }
}

/// One contiguous piece of a rank's memory (an address in that rank and a length), laid out
/// as the kernel's `iovec` on 64-bit Linux so lists go to `process_vm_readv` as they are.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Seg {
    /// Address in the owning process.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}

/// Why a send did not happen.
#[derive(Debug)]
pub enum SendError {
    /// No room right now (queue full or buffers exhausted): progress, then retry.
    Busy,
    /// The peer cannot be reached.
    Fatal(Error),
}

/// Memory of one rank named for a peer's one-copy access, as carried in protocol headers.
/// What the fields mean is the transport's business.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Remote {
    /// Address or offset.
    pub addr: u64,
    /// Key of the address space (a process id for `shm`).
    pub key: u32,
    /// Transport-defined flags (which kind of memory `addr` lies in). Non-zero means memory
    /// the peer reads with a plain copy, no system call: protocols prefer a get of it to a put.
    pub flags: u32,
}

/// Payload bytes of an arrived fragment, wherever the transport keeps them.
pub enum Payload<'a> {
    /// Contiguous bytes in this process.
    Bytes(&'a [u8]),
    /// Still in shared memory.
    Shm(shm::Payload<'a>),
    /// `n` bytes the transport already wrote where [`Handler::place`] said they go.
    Placed(usize),
}

impl Payload<'_> {
    /// Payload length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Payload::Bytes(b) => b.len(),
            Payload::Shm(p) => p.len(),
            Payload::Placed(n) => *n,
        }
    }

    /// The payload as one slice where it lies in one place already (bytes, or one pool
    /// block), so a handler can read it in place; `None` for cells and placed bytes.
    #[inline]
    pub fn contiguous(&self) -> Option<&[u8]> {
        match self {
            Payload::Bytes(b) => Some(b),
            Payload::Shm(p) => p.contiguous(),
            Payload::Placed(_) => None,
        }
    }

    /// Copies the first `dst.len()` payload bytes (at most [`len`](Self::len)) into `dst`.
    /// Placed bytes are already at the place the handler named, which is the only `dst` a
    /// handler passes for them: nothing to copy.
    #[inline(always)]
    pub fn copy_to(&self, dst: &mut [u8]) {
        match self {
            Payload::Bytes(s) => {
                let n = dst.len().min(s.len());
                crate::bytecopy::copy_slice(&mut dst[..n], &s[..n]);
            }
            Payload::Shm(p) => p.copy_to(dst),
            Payload::Placed(_) => {}
        }
    }
}

/// A fragment as delivered to the protocol layer; valid only during the handler call.
pub struct Frag<'a> {
    /// World rank of the sender.
    pub from: u32,
    /// Active-message id chosen by the sender's protocol layer.
    pub am: u8,
    /// The fragment header (protocol-defined, at most [`MAX_HDR`] bytes).
    pub hdr: &'a [u8],
    /// The payload.
    pub payload: Payload<'a>,
}

/// Largest fragment header every transport carries.
pub const MAX_HDR: usize = shm::MAX_HDR;

/// The sending side of a transport: what the protocol layer may call at any time, including
/// while it handles an arrival.
pub trait Link {
    /// The transport's limits now (a transport may turn `get`/`put` off when the kernel
    /// refuses them).
    fn limits(&self) -> Limits;

    /// Sends one fragment to world rank `to`: `hdr` (at most [`MAX_HDR`] bytes) and `payload`
    /// (at most [`Limits::max_frag`] bytes) are copied before this returns. `Busy`: nothing was
    /// sent; retry after progress.
    fn send(&mut self, to: u32, am: u8, hdr: &[u8], payload: &[u8]) -> Result<(), SendError>;

    /// Sends one fragment whose `len`-byte payload `fill` writes straight into the
    /// transport's own buffer (a pool block), sparing a staging copy of data packed on the
    /// fly. `Ok(false)`: this transport or size cannot (nothing sent, `fill` not called; the
    /// caller uses [`send`](Self::send)); otherwise as for `send`.
    fn send_fill(
        &mut self,
        to: u32,
        am: u8,
        hdr: &[u8],
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<bool, SendError> {
        let _ = (to, am, hdr, len, fill);
        Ok(false)
    }

    /// Names `len` bytes at `buf` for a peer's [`get`](Self::get) (the caller keeps them
    /// unchanged until the peer says it is done).
    fn expose(&self, buf: *const u8, len: usize) -> Remote;

    /// Copies `dst.len()` bytes that rank `from` exposed as `src` into `dst`. An error means
    /// this path is unavailable (the caller falls back to pushed chunks); it is not fatal.
    fn get(&mut self, from: u32, src: Remote, dst: &mut [u8]) -> Result<(), Error>;

    /// Writes `src` into the buffer rank `to` exposed as `dst`. Errors as for `get`.
    fn put(&mut self, to: u32, dst: Remote, src: &[u8]) -> Result<(), Error>;

    /// Copies the pieces `src` of rank `from`'s memory, in order, into our pieces `dst` (both
    /// lists cover the same number of bytes): a gather and scatter in one copy, for data laid
    /// out by a derived datatype. Only when [`Limits::iov_max`] is non-zero; an error means
    /// the path is unavailable, as for [`get`](Self::get).
    ///
    /// # Safety
    /// Every piece of `dst` is memory of ours valid for writes and not otherwise accessed
    /// during the call.
    unsafe fn get_iov(&mut self, from: u32, src: &[Seg], dst: &[Seg]) -> Result<(), Error> {
        let _ = (from, src, dst);
        Err(Error::new(
            crate::error::ErrorClass::Other,
            "this transport has no iovec copies",
        ))
    }
}

/// Receives arrived fragments: the protocol layer.
pub trait Handler {
    /// Handles fragment `f`; `link` is the transport it arrived on, for immediate replies.
    fn frag<L: Link>(&mut self, link: &mut L, f: Frag<'_>);

    /// Where the `len` payload bytes of a fragment `am` from `from` with header `hdr` go, if
    /// the protocol knows before it arrives (a rendezvous chunk of a matched receive): a
    /// transport reading a byte stream then reads them straight there and hands the fragment
    /// over with [`Payload::Placed`]. Changes nothing; the transport asks again before each
    /// read and stops writing there once the answer changes (the receive ended), so the
    /// memory need only be valid, and not otherwise accessed, while the answer stands.
    fn place(&mut self, from: u32, am: u8, hdr: &[u8], len: usize) -> Option<*mut u8> {
        let _ = (from, am, hdr, len);
        None
    }
}

/// A transport: a [`Link`] for sending plus a receive side to poll.
pub trait Transport {
    /// The sending side.
    type Link: Link;

    /// The sending side, for the protocol layer.
    fn link(&mut self) -> &mut Self::Link;

    /// Whether a fragment is waiting (one load; cheap enough to spin on).
    fn has_arrival(&self) -> bool;

    /// Hands up to `budget` arrived fragments to `h`; returns how many. An error is a fault of
    /// the job's communication (a corrupt fragment): the caller decides how to end.
    fn poll<H: Handler>(&mut self, budget: usize, h: &mut H) -> Result<usize, Error>;

    /// How a waiting rank can block until this transport may have something for it, if the
    /// kernel can tell (sockets); `None` for transports polled in memory.
    fn wakeup(&self) -> Option<Wakeup> {
        None
    }
}

/// A descriptor that polls readable when a transport may have work (an arrival, room to
/// write): held by value in the waiting policy, valid as long as the transport lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wakeup {
    fd: RawFd,
}

impl Wakeup {
    /// Wakes on `fd` (an epoll set, or any pollable descriptor).
    pub fn new(fd: RawFd) -> Wakeup {
        Wakeup { fd }
    }

    /// Blocks until the transport may have work or `timeout` has passed (a signal may end it
    /// early); returns whether it has. The caller polls the transports either way.
    pub fn wait(self, timeout: Duration) -> bool {
        let mut p = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `p` (one entry, as passed) and `ts` live on this frame across the call; a
        // null signal mask leaves the thread's mask alone. A closed or bad descriptor is a
        // POLLNVAL answer, not undefined behaviour.
        let n = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
        if n > 0 && p.revents & libc::POLLNVAL != 0 {
            // The transport is gone (after finalize): wait as if blind rather than spin.
            std::thread::sleep(timeout);
            return false;
        }
        n > 0
    }
}

/// Every transport, for static dispatch.
// One of each per process: boxing the large variant would only add a pointer chase to every
// send.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum AnyTransport {
    /// Messages to oneself.
    SelfLoop(selfloop::SelfLoop),
    /// Ranks on this host.
    Shm(shm::ShmTransport),
    /// Ranks on other hosts.
    Tcp(tcp::TcpTransport),
}

/// Runs `$body` with `$t` bound to the concrete transport inside a `&mut AnyTransport`: one
/// `match`, each arm monomorphised.
macro_rules! with_transport {
    ($any:expr, $t:ident => $body:expr) => {
        match $any {
            $crate::transport::AnyTransport::SelfLoop($t) => $body,
            $crate::transport::AnyTransport::Shm($t) => $body,
            $crate::transport::AnyTransport::Tcp($t) => $body,
        }
    };
}
pub(crate) use with_transport;

impl AnyTransport {
    /// Whether a fragment is waiting.
    #[inline]
    pub fn has_arrival(&self) -> bool {
        match self {
            AnyTransport::SelfLoop(t) => t.has_arrival(),
            AnyTransport::Shm(t) => t.has_arrival(),
            AnyTransport::Tcp(t) => t.has_arrival(),
        }
    }

    /// Whether the transport still holds bytes it must write (finalize waits for them).
    pub fn has_outgoing(&self) -> bool {
        match self {
            AnyTransport::Tcp(t) => t.has_outgoing(),
            AnyTransport::SelfLoop(_) | AnyTransport::Shm(_) => false,
        }
    }

    /// The transport's limits.
    pub fn limits(&mut self) -> Limits {
        with_transport!(self, t => t.link().limits())
    }

    /// The transport's name, for messages and `oxmpi-info`.
    #[cfg(test)]
    pub fn name(&self) -> &'static str {
        match self {
            AnyTransport::SelfLoop(_) => "self",
            AnyTransport::Shm(_) => "shm",
            AnyTransport::Tcp(_) => "tcp",
        }
    }
}
