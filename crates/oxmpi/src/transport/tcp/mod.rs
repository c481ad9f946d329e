//! The TCP transport: ranks on different hosts (or, forced, on one host) over any Ethernet.
//!
//! - Connections are made on first use (seed 000's deferred connections): the first fragment
//!   to a peer reads its business card and connects every rail; fragments wait in the rail's
//!   queue until the peer accepts. Each connection proves it belongs to the job before anything
//!   else is accepted ([`handshake`]); a stranger gets nothing and is logged once.
//! - One epoll set ([`poll`]) for the listener and every connection, asked without waiting by
//!   the progress engine; in a job that also has shared-memory peers it is asked only every
//!   `OXMPI_TCP_POLL_EVERY` progress calls, so idle waiting on shm stays one load. A rank
//!   with only TCP peers and at most [`DIRECT_MAX`] connections up reads them directly
//!   (a nonblocking recv each: one system call per arrival, not epoll_wait and recv) and
//!   asks epoll every [`DIRECT_POLLS`]th poll only, for the listener and the rest.
//! - [`conn`]: nonblocking sockets, TCP_NODELAY, frames written with one `send` (small) or
//!   `writev` when nothing is queued, partial writes and `EAGAIN` queued in a bounded send
//!   queue ([`SendError::Busy`] beyond it).
//! - [`rails`]: `OXMPI_TCP_RAILS` connections per peer (or one per pair of interfaces that reach
//!   it); large fragments are striped round-robin, sequence numbers restore the order, and
//!   a rail that dies has its unacknowledged fragments sent again over the others.
//! - Limits of its own: no one-copy `get`/`put`, so messages above the eager limit use the
//!   rendezvous with pushed chunks of `OXMPI_TCP_FRAG_SIZE`.
//! - `OXMPI_TCP_LOG_ROUTES=1` (config.rs) prints each rail's local and remote address when it
//!   connects, and ([`affinity`]) the CPU its packets are processed on, the rank's CPUs and
//!   the interface's NUMA node.

pub mod affinity;
pub mod conn;
pub mod frame;
pub mod handshake;
pub mod iface;
pub mod poll;
pub mod rails;

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::{Frag, Handler, Limits, Link, Payload, Remote, SendError, Transport, Wakeup, MAX_HDR};
use crate::error::{Error, ErrorClass, Result};
use conn::{parse_frame, Conn, Fill, Landing};
use frame::{FrameHdr, FRAME_HDR, KIND_ACK, KIND_MSG};
use handshake::{Hello, Ours, ACCEPT, HELLO_LEN, REJECT, TOKEN_LEN};
use iface::IfAddr;
use rails::{Offer, Reorder, SendWindow};

/// Most rails per peer.
pub const MAX_RAILS: usize = 16;
/// Fragments at least this large are striped over rails; smaller ones take the first rail.
const STRIPE_MIN: usize = 8192;
const LISTEN: u64 = u64::MAX;
const STRANGER: u64 = 1 << 62;
/// How long a connect may take before the rail is given up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The TCP transport's tunables.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// Largest payload reported as inline (one frame either way).
    pub inline_max: usize,
    /// Largest payload of one frame.
    pub max_frag: usize,
    /// Largest message sent eagerly.
    pub eager_limit: usize,
    /// Bytes queued (or kept for retransmission) per peer before sends answer `Busy`.
    pub send_queue: usize,
    /// Rails per peer (at least; one per interface pair when several reach the peer).
    pub rails: usize,
    /// Interfaces to use (`OXMPI_TCP_IF`).
    pub ifaces: String,
    /// First listening port (rank `r` listens on `port + r`); 0 for any free port.
    pub port: u16,
    /// Progress calls per socket poll in a job that also has shared-memory peers.
    pub poll_every: u32,
    /// How long a connection may take to prove itself.
    pub handshake: Duration,
    /// Testing: after this many fragments, rank 0 shuts rail `.0` down.
    pub cut_rail: Option<(usize, u64)>,
    /// Testing: after this many fragments, rank 0 writes garbage into its streams.
    pub garbage_after: Option<u64>,
    /// Print each rail's addresses as it connects (`OXMPI_TCP_LOG_ROUTES`).
    pub log_routes: bool,
}

impl TcpConfig {
    /// The TCP settings of `c`.
    pub fn from_config(c: &crate::config::Config) -> Result<Self> {
        let cut_rail = match c.tcp_cut_rail.trim() {
            "" => None,
            s => {
                let parsed = s
                    .split_once(':')
                    .and_then(|(r, n)| Some((r.trim().parse().ok()?, n.trim().parse().ok()?)));
                Some(parsed.ok_or_else(|| {
                    Error::new(
                        ErrorClass::Arg,
                        format!("OXMPI_TCP_CUT_RAIL={s:?} is not RAIL:FRAGMENTS"),
                    )
                })?)
            }
        };
        if c.tcp_rails == 0 || c.tcp_rails > MAX_RAILS {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "OXMPI_TCP_RAILS={} is not between 1 and {MAX_RAILS}",
                    c.tcp_rails
                ),
            ));
        }
        if c.tcp_frag_size < 1024 || c.tcp_frag_size > 16 << 20 {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "OXMPI_TCP_FRAG_SIZE={} is not between 1 KiB and 16 MiB",
                    c.tcp_frag_size
                ),
            ));
        }
        let port = u16::try_from(c.tcp_port).map_err(|_| {
            Error::new(
                ErrorClass::Arg,
                format!("OXMPI_TCP_PORT={} is not a port", c.tcp_port),
            )
        })?;
        Ok(TcpConfig {
            inline_max: 1024.min(c.tcp_frag_size),
            max_frag: c.tcp_frag_size,
            eager_limit: c.tcp_eager_limit,
            send_queue: c.tcp_send_queue.max(c.tcp_frag_size),
            rails: c.tcp_rails,
            ifaces: c.tcp_if.clone(),
            port,
            poll_every: c.tcp_poll_every.max(1),
            handshake: Duration::from_millis(c.tcp_handshake_ms as u64),
            cut_rail,
            garbage_after: (c.tcp_garbage_after > 0).then_some(c.tcp_garbage_after as u64),
            log_routes: c.tcp_log_routes,
        })
    }

    /// The limits the protocol layer sees.
    pub fn limits(&self) -> Limits {
        Limits {
            inline_max: self.inline_max,
            max_frag: self.max_frag,
            push_frag: self.max_frag,
            eager_limit: self.eager_limit,
            coll_eager_limit: self.eager_limit,
            get: false,
            put: false,
            push_min: 0,
            single_copy_min: usize::MAX,
            iov_max: 0,
        }
    }

    /// Four whole frames: fewer reads, and a partial frame is rarely moved to the front.
    fn rx_bytes(&self) -> usize {
        (4 * (FRAME_HDR + MAX_HDR + self.max_frag)).max(1 << 16)
    }
}

/// Where a rank listens, as published in its business card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Addresses, one per interface.
    pub addrs: Vec<Ipv4Addr>,
    /// The port (the same on every address).
    pub port: u16,
    /// The secret a connection to this rank must show.
    pub token: [u8; TOKEN_LEN],
}

impl Endpoint {
    /// The card fields: `tcp` (`port,addr,addr…`) and `tcptok`.
    pub fn fields(&self) -> [(&'static str, String); 2] {
        let mut s = self.port.to_string();
        for a in &self.addrs {
            s.push(',');
            s.push_str(&a.to_string());
        }
        [("tcp", s), ("tcptok", handshake::token_hex(&self.token))]
    }

    /// Parses [`fields`](Self::fields).
    pub fn parse(tcp: &str, token: &str) -> Option<Endpoint> {
        let mut it = tcp.split(',');
        let port = it.next()?.parse().ok()?;
        let addrs = it.map(|a| a.parse().ok()).collect::<Option<Vec<_>>>()?;
        (!addrs.is_empty()).then_some(())?;
        Some(Endpoint {
            addrs,
            port,
            token: handshake::parse_token(token)?,
        })
    }
}

/// Reads a peer's [`Endpoint`] (from its business card).
pub type Resolver = Box<dyn FnMut(u32) -> Result<Endpoint>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Connecting,
    Refused,
    Up,
    Dead,
}

/// One connection to a peer and what waits for it.
#[derive(Debug)]
struct Rail {
    state: State,
    conn: Option<Conn>,
    /// Frames sent before the rail was up.
    early: Vec<u8>,
    /// Bumped whenever `conn` is replaced or dropped.
    gen: u32,
}

impl Rail {
    fn new() -> Rail {
        Rail {
            state: State::Idle,
            conn: None,
            early: Vec::new(),
            gen: 0,
        }
    }

    fn queued(&self) -> usize {
        self.early.len() + self.conn.as_ref().map_or(0, Conn::queued)
    }

    /// Sends `parts` now if up, else keeps them for when it is.
    #[inline]
    fn send(&mut self, parts: &[&[u8]]) -> std::io::Result<()> {
        match (&mut self.conn, self.state) {
            (Some(c), State::Up) => c.send(parts),
            _ => {
                for p in parts {
                    self.early.extend_from_slice(p);
                }
                Ok(())
            }
        }
    }

    fn ours(&self) -> Ours {
        match self.state {
            State::Idle => Ours::Nothing,
            State::Connecting => Ours::Connecting,
            State::Refused => Ours::Refused,
            State::Up => Ours::Up,
            State::Dead => Ours::Dead,
        }
    }
}

/// Everything about one TCP peer.
#[derive(Debug)]
struct Peer {
    /// The engine's index of the peer (its world rank, or an index after the world for a
    /// process of another job).
    rank: u32,
    /// Its job id and rank in that job, as the handshake names it.
    id: (u64, u32),
    /// Its endpoint, when known before first use (another job's process); else read
    /// through the resolver.
    ep: Option<Endpoint>,
    rails: Vec<Rail>,
    connected: bool,
    broken: Option<Error>,
    next_seq: u64,
    reorder: Reorder<(FrameHdr, Vec<u8>, bool)>,
    /// Unacknowledged fragments (only with more than one rail).
    window: SendWindow,
    /// Delivered count last acknowledged, and bytes delivered since.
    acked: u64,
    unacked_in: usize,
    next_rail: usize,
}

impl Peer {
    fn new(rank: u32, id: (u64, u32)) -> Peer {
        Peer {
            rank,
            id,
            ep: None,
            rails: Vec::new(),
            connected: false,
            broken: None,
            next_seq: 0,
            reorder: Reorder::default(),
            window: SendWindow::default(),
            acked: 0,
            unacked_in: 0,
            next_rail: 0,
        }
    }

    fn striped(&self) -> bool {
        self.rails.len() > 1
    }

    fn alive(&self) -> usize {
        self.rails
            .iter()
            .filter(|r| r.state != State::Dead && r.state != State::Idle)
            .count()
    }

    /// The rail for a frame of `len` payload bytes: striped round-robin if large, else the
    /// first working rail; a rail still connecting if none works yet.
    fn pick(&mut self, len: usize) -> Option<usize> {
        let n = self.rails.len();
        if self.striped() && len >= STRIPE_MIN {
            for k in 0..n {
                let r = (self.next_rail + k) % n;
                if self.rails[r].state == State::Up {
                    self.next_rail = r + 1;
                    return Some(r);
                }
            }
        }
        (self.rails.iter().position(|r| r.state == State::Up)).or_else(|| {
            self.rails
                .iter()
                .position(|r| matches!(r.state, State::Connecting | State::Refused))
        })
    }
}

/// A connection that has not yet proven it belongs to the job.
#[derive(Debug)]
struct Stranger {
    sock: TcpStream,
    from: SocketAddr,
    hello: [u8; HELLO_LEN],
    got: usize,
    deadline: Instant,
}

/// The sending side (and all connection state) of the TCP transport.
#[derive(Debug)]
pub struct TcpLink {
    me: u32,
    /// This job's id (0 unless set: only spawns make several jobs talk).
    job: u64,
    size: u32,
    cfg: TcpConfig,
    limits: Limits,
    token: [u8; TOKEN_LEN],
    ours: Vec<IfAddr>,
    /// Index into `peers` per engine index (`u32::MAX`: not a TCP peer).
    slot: Vec<u32>,
    peers: Vec<Peer>,
    poller: poll::Poller,
    listener: TcpListener,
    strangers: Vec<Option<Stranger>>,
    /// Rails with bytes queued, as `(peer index, rail)`.
    dirty: Vec<(u32, u8)>,
    /// The up rails, read directly between epoll passes when there are at most
    /// [`DIRECT_MAX`] of them (else empty), as `(peer index, rail)`.
    direct: Vec<(u32, u8)>,
    /// A rail changed state since `direct` was listed.
    direct_stale: bool,
    /// The first fault not yet reported by `poll`.
    fault: Option<Error>,
    frames_sent: u64,
    /// Payload bytes read straight to their place.
    placed: u64,
    resolve: Cards,
}

/// The [`Resolver`], opaque in debug output.
struct Cards(Resolver);

impl std::fmt::Debug for Cards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cards")
    }
}

/// The error of a peer this rank can no longer reach.
fn lost(me: u32, rank: u32, what: &str) -> Error {
    Error::new(
        ErrorClass::Other,
        format!("TCP: rank {me} lost rank {rank}: {what}"),
    )
}

fn token_of(peer: usize, rail: usize) -> u64 {
    ((peer as u64) << 8) | rail as u64
}

impl TcpLink {
    /// Connects every rail to the peer at `idx` (its first use).
    #[cold]
    fn connect(&mut self, idx: usize) -> Result<()> {
        let rank = self.peers[idx].rank;
        let (to_job, to) = self.peers[idx].id;
        self.peers[idx].connected = true;
        let ep = match self.peers[idx].ep.clone() {
            Some(ep) => ep,
            // Another job's process whose endpoint we do not know yet but which connected
            // to us: its connections serve both ways.
            None if to_job != self.job
                && self.peers[idx].rails.iter().any(|r| r.state == State::Up) =>
            {
                return Ok(())
            }
            None => (self.resolve.0)(rank)?,
        };
        let targets = iface::paths(&self.ours, &ep.addrs);
        let n = self.cfg.rails.max(targets.len()).min(MAX_RAILS);
        let peer = &mut self.peers[idx];
        while peer.rails.len() < n {
            peer.rails.push(Rail::new());
        }
        // Tests read the routes to see which peers TCP carries (the others use shared memory).
        let log_routes = self.cfg.log_routes;
        let mut last_err = None;
        for r in 0..n {
            if self.peers[idx].rails[r].state != State::Idle {
                continue;
            }
            let addr = SocketAddr::V4(SocketAddrV4::new(targets[r % targets.len()], ep.port));
            let hello = Hello {
                token: ep.token,
                from: self.me,
                to,
                rail: r as u32,
                from_job: self.job,
                to_job,
            };
            let opened = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
                .and_then(|s| {
                    affinity::on_connect(&s, self.me, rank, r, log_routes);
                    if log_routes {
                        let from = s.local_addr()?;
                        eprintln!(
                            "oxmpi: rank {}: TCP route to rank {rank} rail {r}: {from} -> {addr}",
                            self.me
                        );
                    }
                    Conn::new(s, self.cfg.rx_bytes())
                })
                .and_then(|mut c| {
                    c.send(&[&hello.encode()])?;
                    self.poller.add(c.fd(), token_of(idx, r), false)?;
                    Ok(c)
                });
            let rail = &mut self.peers[idx].rails[r];
            match opened {
                Ok(c) => {
                    rail.conn = Some(c);
                    rail.state = State::Connecting;
                    rail.gen += 1;
                }
                Err(e) => {
                    rail.state = State::Dead;
                    last_err = Some(format!("connect to {addr} (rail {r}): {e}"));
                }
            }
        }
        if self.peers[idx].alive() == 0 {
            let e = lost(self.me, rank, last_err.as_deref().unwrap_or("no rail"));
            self.peers[idx].broken = Some(e.clone());
            return Err(e);
        }
        if let Some(why) = last_err {
            eprintln!(
                "oxmpi: rank {}: TCP to rank {rank}: {why}; using the other rails",
                self.me
            );
        }
        Ok(())
    }

    /// Notes that rail `r` of peer `idx` has bytes queued. An up rail is also watched for
    /// room to write, so a rank waiting on a full socket wakes as soon as it drains.
    fn mark_dirty(&mut self, idx: usize, r: usize) {
        let key = (idx as u32, r as u8);
        if !self.dirty.contains(&key) {
            self.dirty.push(key);
            let rail = &self.peers[idx].rails[r];
            if let (Some(c), State::Up) = (&rail.conn, rail.state) {
                // Failing to watch only costs the wake-up: the bounded wait polls anyway.
                let _ = self.poller.modify(c.fd(), token_of(idx, r), true);
            }
        }
    }

    /// The peer at `idx` closed rail `r`. A process of another job that closes with nothing
    /// owed either way has disconnected or finalized (jobs end apart, with no common fence):
    /// its rails are closed without a fault, and only a later send to it fails. Anything else
    /// is a rail failure.
    #[cold]
    fn peer_closed(&mut self, idx: usize, r: usize) {
        let peer = &mut self.peers[idx];
        let owed = peer.rails.iter().any(|x| x.queued() > 0) || peer.window.bytes() > 0;
        if peer.id.0 == self.job || owed {
            self.rail_died(idx, r, "the peer closed the connection".into());
            return;
        }
        self.direct_stale = true;
        for rail in &mut peer.rails {
            rail.state = State::Dead;
            rail.conn = None;
            rail.early = Vec::new();
            rail.gen += 1;
        }
        let e = lost(
            self.me,
            peer.rank,
            "it closed its connections (disconnected)",
        );
        peer.broken.get_or_insert(e);
    }

    /// Takes rail `r` of peer `idx` out of service; its unacknowledged fragments go again over
    /// the others. The last rail's death breaks the peer.
    #[cold]
    fn rail_died(&mut self, idx: usize, r: usize, why: String) {
        self.direct_stale = true;
        let mut work = vec![(r, why)];
        while let Some((r, why)) = work.pop() {
            let me = self.me;
            let peer = &mut self.peers[idx];
            let rail = &mut peer.rails[r];
            if rail.state == State::Dead {
                continue;
            }
            rail.state = State::Dead;
            rail.conn = None;
            rail.early = Vec::new();
            rail.gen += 1;
            let rank = peer.rank;
            let left = peer.alive();
            if left == 0 || !peer.striped() {
                let e = lost(me, rank, &format!("its last TCP rail ({r}) failed: {why}"));
                self.peers[idx].broken.get_or_insert(e.clone());
                self.fault.get_or_insert(e);
                return;
            }
            eprintln!(
                "oxmpi: rank {me}: TCP rail {r} to rank {rank} failed ({why}); continuing over {left} rail(s)"
            );
            let up: Vec<usize> = (0..peer.rails.len())
                .filter(|&i| {
                    matches!(
                        peer.rails[i].state,
                        State::Up | State::Connecting | State::Refused
                    )
                })
                .collect();
            let mut k = 0;
            let resend = peer.window.reroute(r, || {
                k += 1;
                up[k % up.len()]
            });
            let mut failed = Vec::new();
            for (to, frame) in resend {
                if let Err(e) = peer.rails[to].send(&[frame]) {
                    failed.push((to, e.to_string()));
                }
            }
            // The acknowledgement we sent last may have been lost with the rail.
            let ack = FrameHdr {
                kind: KIND_ACK,
                am: 0,
                hdr_len: 0,
                len: 0,
                seq: peer.reorder.delivered(),
            };
            if let Some(a) = up
                .iter()
                .copied()
                .find(|&i| peer.rails[i].state == State::Up)
            {
                if let Err(e) = peer.rails[a].send(&[&ack.encode()]) {
                    failed.push((a, e.to_string()));
                }
            }
            for &i in &up {
                if self.peers[idx].rails[i].queued() > 0 {
                    self.mark_dirty(idx, i);
                }
            }
            work.extend(failed);
        }
    }

    /// Sends an acknowledgement if enough was delivered since the last one (or `force`).
    fn maybe_ack(&mut self, idx: usize, force: bool) {
        let peer = &mut self.peers[idx];
        if !force && peer.unacked_in < self.cfg.send_queue / 4 {
            return;
        }
        peer.unacked_in = 0;
        peer.acked = peer.reorder.delivered();
        let Some(r) = peer.rails.iter().position(|r| r.state == State::Up) else {
            return;
        };
        let ack = FrameHdr {
            kind: KIND_ACK,
            am: 0,
            hdr_len: 0,
            len: 0,
            seq: peer.acked,
        };
        match peer.rails[r].send(&[&ack.encode()]) {
            Ok(()) => {
                if peer.rails[r].queued() > 0 {
                    self.mark_dirty(idx, r);
                }
            }
            Err(e) => self.rail_died(idx, r, e.to_string()),
        }
    }

    /// The testing hook: rank 0 cuts one rail to every peer once enough fragments went out.
    #[cold]
    fn cut_rail(&mut self, rail: usize) {
        for p in &mut self.peers {
            if let Some(c) = p.rails.get(rail).and_then(|r| r.conn.as_ref()) {
                eprintln!(
                    "oxmpi: rank {}: test hook: shutting TCP rail {rail} to rank {} down",
                    self.me, p.rank
                );
                c.shutdown();
            }
        }
    }

    /// The testing hook: rank 0 writes bytes that are no frame into its first working rail to
    /// every peer, as a broken or hostile peer that passed the handshake would.
    #[cold]
    fn send_garbage(&mut self) {
        for i in 0..self.peers.len() {
            let p = &mut self.peers[i];
            // A rail still connecting keeps the bytes in order after the frames it holds.
            let Some(r) = p
                .rails
                .iter()
                .position(|r| matches!(r.state, State::Up | State::Connecting | State::Refused))
            else {
                continue;
            };
            eprintln!(
                "oxmpi: rank {}: test hook: writing garbage to rank {} on TCP rail {r}",
                self.me, p.rank
            );
            if p.rails[r].send(&[&[0x47; 64]]).is_ok() && p.rails[r].queued() > 0 {
                self.mark_dirty(i, r);
            }
        }
    }
}

impl Link for TcpLink {
    #[inline]
    fn limits(&self) -> Limits {
        self.limits
    }

    #[inline]
    fn send(
        &mut self,
        to: u32,
        am: u8,
        hdr: &[u8],
        payload: &[u8],
    ) -> std::result::Result<(), SendError> {
        let idx = match self.slot.get(to as usize) {
            Some(&i) if i != u32::MAX => i as usize,
            _ => {
                return Err(SendError::Fatal(Error::new(
                    ErrorClass::Intern,
                    format!("TCP transport of rank {} does not serve rank {to}", self.me),
                )))
            }
        };
        if hdr.len() > MAX_HDR || payload.len() > self.cfg.max_frag {
            return Err(SendError::Fatal(Error::new(
                ErrorClass::Intern,
                format!(
                    "TCP: a {}-byte header and {}-byte payload exceed one frame",
                    hdr.len(),
                    payload.len()
                ),
            )));
        }
        if !self.peers[idx].connected {
            self.connect(idx).map_err(SendError::Fatal)?;
        }
        let peer = &mut self.peers[idx];
        if let Some(e) = &peer.broken {
            return Err(SendError::Fatal(e.clone()));
        }
        let total = FRAME_HDR + hdr.len() + payload.len();
        let striped = peer.striped();
        let Some(r) = peer.pick(payload.len()) else {
            return Err(SendError::Fatal(lost(self.me, to, "no TCP rail left")));
        };
        let held = if striped {
            peer.window.bytes()
        } else {
            peer.rails[r].queued()
        };
        // A large fragment waits for an empty queue rather than being copied into it: it then
        // goes from the caller's buffer to the socket in one writev.
        if held > 0
            && (held + total > self.cfg.send_queue || (!striped && payload.len() >= STRIPE_MIN))
        {
            return Err(SendError::Busy);
        }
        let fh = FrameHdr {
            kind: KIND_MSG,
            am,
            hdr_len: hdr.len() as u8,
            len: payload.len() as u32,
            seq: peer.next_seq,
        };
        peer.next_seq += 1;
        let sent = if striped {
            let mut frame = peer.window.buffer();
            frame.extend_from_slice(&fh.encode());
            frame.extend_from_slice(hdr);
            frame.extend_from_slice(payload);
            let res = peer.rails[r].send(&[&frame]);
            peer.window.push(fh.seq, r, frame);
            res
        } else {
            peer.rails[r].send(&[&fh.encode(), hdr, payload])
        };
        match sent {
            Ok(()) => {
                if self.peers[idx].rails[r].queued() > 0 {
                    self.mark_dirty(idx, r);
                }
            }
            Err(e) => {
                self.rail_died(idx, r, e.to_string());
                if let Some(e) = &self.peers[idx].broken {
                    return Err(SendError::Fatal(e.clone()));
                }
            }
        }
        self.frames_sent += 1;
        if let Some((rail, after)) = self.cfg.cut_rail {
            if self.me == 0 && self.frames_sent == after {
                self.cut_rail(rail);
            }
        }
        if self.cfg.garbage_after == Some(self.frames_sent) && self.me == 0 {
            self.send_garbage();
        }
        Ok(())
    }

    fn expose(&self, buf: *const u8, _len: usize) -> Remote {
        Remote {
            addr: buf as u64,
            ..Remote::default()
        }
    }

    fn get(&mut self, _from: u32, _src: Remote, _dst: &mut [u8]) -> Result<()> {
        Err(Error::new(
            ErrorClass::Intern,
            "the TCP transport has no one-copy get",
        ))
    }

    fn put(&mut self, _to: u32, _dst: Remote, _src: &[u8]) -> Result<()> {
        Err(Error::new(
            ErrorClass::Intern,
            "the TCP transport has no one-copy put",
        ))
    }
}

/// The TCP transport of one rank.
#[derive(Debug)]
pub struct TcpTransport {
    link: TcpLink,
    events: Vec<poll::Event>,
    /// Progress calls left before the sockets are asked again.
    skip: u32,
    every: u32,
    /// Polls left that read the direct rails without asking epoll.
    direct_left: u32,
}

impl TcpTransport {
    /// Listens for the job's connections: world rank `me` of `size`, reaching `peers` (read
    /// through `resolve` on first use). `mixed`: the rank also has shared-memory peers, so
    /// sockets are polled only every `poll_every` progress calls. `loopback`: every peer is
    /// on this host (listen on loopback).
    pub fn create(
        me: u32,
        size: u32,
        cfg: TcpConfig,
        peers: &[u32],
        resolve: Resolver,
        mixed: bool,
        loopback: bool,
    ) -> Result<TcpTransport> {
        let os = |what: &str, e: std::io::Error| {
            Error::new(
                ErrorClass::Other,
                format!("TCP transport of rank {me}: {what}: {e}"),
            )
        };
        let ours = iface::select(&iface::list(), &cfg.ifaces, loopback)?;
        let port = if cfg.port == 0 {
            0
        } else {
            u16::try_from(cfg.port as u32 + me).map_err(|_| {
                Error::new(
                    ErrorClass::Arg,
                    format!("OXMPI_TCP_PORT={} + rank {me} is not a port", cfg.port),
                )
            })?
        };
        let bind = if ours.iter().all(|a| a.addr.is_loopback()) {
            Ipv4Addr::LOCALHOST
        } else {
            Ipv4Addr::UNSPECIFIED
        };
        let listener = TcpListener::bind((bind, port))
            .map_err(|e| os(&format!("listen on port {port}"), e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| os("listener", e))?;
        let poller = poll::Poller::new(64).map_err(|e| os("epoll", e))?;
        poller
            .add(listener.as_raw_fd(), LISTEN, false)
            .map_err(|e| os("epoll", e))?;
        let mut token = [0u8; TOKEN_LEN];
        getrandom::getrandom(&mut token).map_err(|e| {
            Error::new(
                ErrorClass::Other,
                format!("TCP: no randomness for the job secret: {e}"),
            )
        })?;
        let mut slot = vec![u32::MAX; size as usize];
        let mut list = Vec::new();
        for &p in peers {
            if p != me && (p as usize) < slot.len() && slot[p as usize] == u32::MAX {
                slot[p as usize] = list.len() as u32;
                list.push(Peer::new(p, (0, p)));
            }
        }
        let every = if mixed { cfg.poll_every } else { 1 };
        Ok(TcpTransport {
            link: TcpLink {
                me,
                job: 0,
                size,
                limits: cfg.limits(),
                cfg,
                token,
                ours,
                slot,
                peers: list,
                poller,
                listener,
                strangers: Vec::new(),
                dirty: Vec::new(),
                direct: Vec::with_capacity(DIRECT_MAX),
                direct_stale: false,
                fault: None,
                frames_sent: 0,
                placed: 0,
                resolve: Cards(resolve),
            },
            events: Vec::with_capacity(64),
            skip: 0,
            every,
            direct_left: 0,
        })
    }

    /// Names this rank's job (`Hello::from_job`): every rank of a job must set the same id
    /// before its first connection. Peers of the job keep their world ranks as indices.
    pub fn set_job(&mut self, job: u64) {
        self.link.job = job;
        for p in &mut self.link.peers {
            if p.rank < self.link.size {
                p.id.0 = job;
            }
        }
    }

    /// Adds a process of another job (`MPI_Comm_spawn`) as the peer at engine index `index`
    /// (beyond the world): known to the handshake as rank `rank` of job `job`, reached at
    /// `ep` (`None`: not known yet, [`set_endpoint`](Self::set_endpoint) gives it before the
    /// first send; the peer may still connect to us meanwhile).
    pub fn add_foreign(&mut self, index: u32, (job, rank): (u64, u32), ep: Option<Endpoint>) {
        let l = &mut self.link;
        if l.slot.len() <= index as usize {
            l.slot.resize(index as usize + 1, u32::MAX);
        }
        if l.slot[index as usize] != u32::MAX {
            return;
        }
        l.slot[index as usize] = l.peers.len() as u32;
        let mut p = Peer::new(index, (job, rank));
        p.ep = ep;
        l.peers.push(p);
    }

    /// Gives the endpoint of a peer [`add_foreign`](Self::add_foreign) added without one.
    pub fn set_endpoint(&mut self, index: u32, ep: Endpoint) {
        if let Some(&i) = self
            .link
            .slot
            .get(index as usize)
            .filter(|&&i| i != u32::MAX)
        {
            self.link.peers[i as usize].ep = Some(ep);
        }
    }

    /// Where this rank listens, for its business card.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            addrs: self.link.ours.iter().map(|a| a.addr).collect(),
            port: self.link.listener.local_addr().map_or(0, |a| a.port()),
            token: self.link.token,
        }
    }

    /// Whether bytes wait to be written.
    pub fn has_outgoing(&self) -> bool {
        !self.link.dirty.is_empty()
    }

    fn flush_dirty(&mut self) {
        let mut i = 0;
        while i < self.link.dirty.len() {
            let (idx, r) = self.link.dirty[i];
            let (idx, r) = (idx as usize, r as usize);
            let rail = &mut self.link.peers[idx].rails[r];
            let res = match (&mut rail.conn, rail.state) {
                (Some(c), State::Up) => c.flush(),
                (_, State::Dead) => Ok(true),
                _ => Ok(false),
            };
            match res {
                Ok(true) => {
                    self.link.dirty.swap_remove(i);
                    if let Some(c) = &self.link.peers[idx].rails[r].conn {
                        // An empty queue needs no room: stop waking on a writable socket.
                        let _ = self.link.poller.modify(c.fd(), token_of(idx, r), false);
                    }
                }
                Ok(false) => i += 1,
                Err(e) => {
                    self.link.dirty.swap_remove(i);
                    self.link.rail_died(idx, r, e.to_string());
                }
            }
        }
    }

    #[cold]
    fn accept(&mut self) {
        loop {
            match self.link.listener.accept() {
                Ok((sock, from)) => {
                    if sock.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let slot = match self.link.strangers.iter().position(Option::is_none) {
                        Some(i) => i,
                        None => {
                            self.link.strangers.push(None);
                            self.link.strangers.len() - 1
                        }
                    };
                    if self
                        .link
                        .poller
                        .add(sock.as_raw_fd(), STRANGER | slot as u64, false)
                        .is_err()
                    {
                        continue;
                    }
                    self.link.strangers[slot] = Some(Stranger {
                        sock,
                        from,
                        hello: [0; HELLO_LEN],
                        got: 0,
                        deadline: Instant::now() + self.link.cfg.handshake,
                    });
                }
                Err(_) => return,
            }
        }
    }

    /// Reads a stranger's hello; once whole, accepts or refuses it.
    #[cold]
    fn prove(&mut self, slot: usize) {
        let l = &mut self.link;
        let Some(s) = l.strangers.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let read = s.sock.read(&mut s.hello[s.got..]);
        let why = match read {
            Ok(0) => Some("closed before proving it belongs to the job"),
            Ok(n) => {
                s.got += n;
                None
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(_) => Some("failed before proving it belongs to the job"),
        };
        if let Some(why) = why {
            let s = l.strangers[slot].take().expect("present");
            eprintln!(
                "oxmpi: rank {}: refused a TCP connection from {}: {why}",
                l.me, s.from
            );
            return;
        }
        if s.got < HELLO_LEN {
            return;
        }
        let s = l.strangers[slot].take().expect("present");
        let hello = Hello::check(&s.hello, &l.token, (l.job, l.me), l.size, MAX_RAILS as u32);
        // A rank of the job by its world rank; another job's process by its identity.
        let known = |h: &Hello| -> Option<usize> {
            if h.from_job == l.job {
                l.slot
                    .get(h.from as usize)
                    .filter(|&&i| i != u32::MAX)
                    .map(|&i| i as usize)
            } else {
                l.peers.iter().position(|p| p.id == (h.from_job, h.from))
            }
        };
        let (h, idx) = match hello {
            Ok(h) => match known(&h) {
                Some(idx) => (h, idx),
                None => {
                    eprintln!("oxmpi: rank {}: refused a TCP connection from {} claiming rank {} (job {:x}): not a TCP peer", l.me, s.from, h.from, h.from_job);
                    return;
                }
            },
            Err(why) => {
                eprintln!(
                    "oxmpi: rank {}: refused a TCP connection from {}: {why}",
                    l.me, s.from
                );
                return;
            }
        };
        let r = h.rail as usize;
        let peer = &mut l.peers[idx];
        while peer.rails.len() <= r {
            peer.rails.push(Rail::new());
        }
        let mut sock = s.sock;
        if !handshake::resolve((l.job, l.me), (h.from_job, h.from), peer.rails[r].ours()) {
            let _ = std::io::Write::write(&mut sock, &[REJECT]);
            return;
        }
        affinity::on_connect(&sock, l.me, h.from, r, l.cfg.log_routes);
        let conn = std::io::Write::write(&mut sock, &[ACCEPT])
            .and_then(|_| Conn::new(sock, l.cfg.rx_bytes()))
            .and_then(|c| {
                l.poller.modify(c.fd(), token_of(idx, r), false)?;
                Ok(c)
            });
        match conn {
            Ok(c) => {
                // The peer's connection may replace ours (the lower rank's wins).
                let rail = &mut l.peers[idx].rails[r];
                rail.conn = Some(c);
                rail.gen += 1;
                l.rail_up(idx, r);
            }
            Err(e) => eprintln!(
                "oxmpi: rank {}: TCP connection from rank {} failed: {e}",
                l.me, h.from
            ),
        }
    }

    /// At finalize: connections that never proved themselves are refused and logged (those
    /// still in the listen queue too), so that none goes unreported.
    pub fn close(&mut self) {
        self.accept();
        for i in 0..self.link.strangers.len() {
            self.prove(i);
        }
        self.expire_strangers(Instant::now() + Duration::from_secs(1 << 20));
    }

    /// Refuses strangers that have not proven themselves by `now`.
    #[cold]
    fn expire_strangers(&mut self, now: Instant) {
        let me = self.link.me;
        for s in &mut self.link.strangers {
            if s.as_ref().is_some_and(|x| x.deadline <= now) {
                let x = s.take().expect("present");
                eprintln!(
                    "oxmpi: rank {me}: refused a TCP connection from {}: it did not prove it belongs to the job in time",
                    x.from
                );
            }
        }
    }

    /// Reads what rail `r` of peer `idx` brought and hands whole fragments to `h`. A large
    /// payload whose place the protocol knows is read straight there (a [`Landing`]); a few
    /// rounds follow one, as the next chunk usually waits behind it.
    fn read_rail<H: Handler>(&mut self, idx: usize, r: usize, h: &mut H) -> usize {
        let mut n = 0;
        for _ in 0..LANDING_ROUNDS {
            let landing =
                (self.link.peers[idx].rails[r].conn.as_ref()).is_some_and(|c| c.landing.is_some());
            if landing {
                match self.land(idx, r, h) {
                    Some(k) => {
                        n += k;
                        continue;
                    }
                    None => return n,
                }
            }
            n += self.read_frames(idx, r, h);
            let landing =
                (self.link.peers[idx].rails[r].conn.as_ref()).is_some_and(|c| c.landing.is_some());
            if !landing {
                break;
            }
        }
        n
    }

    /// Reads once into rail `r`'s buffer and hands the whole frames to `h`.
    fn read_frames<H: Handler>(&mut self, idx: usize, r: usize, h: &mut H) -> usize {
        let fill = match self.link.peers[idx].rails[r].conn.as_mut().map(Conn::fill) {
            None => return 0,
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                self.link.rail_died(idx, r, e.to_string());
                return 0;
            }
        };
        let rail = &mut self.link.peers[idx].rails[r];
        if fill == Fill::Empty && rail.state == State::Up {
            // Every whole frame was handed over after the last read.
            return 0;
        }
        if rail.state == State::Connecting {
            let answer = rail
                .conn
                .as_mut()
                .and_then(|c| c.take_bytes(1).map(|b| b[0]));
            match answer {
                Some(ACCEPT) => self.link.rail_up(idx, r),
                Some(REJECT) => {
                    // The peer's own connection for this rail is on its way.
                    rail.state = State::Refused;
                    rail.conn = None;
                    rail.gen += 1;
                    self.link.direct_stale = true;
                    return 0;
                }
                Some(b) => {
                    self.link
                        .rail_died(idx, r, format!("answered the handshake with {b:#04x}"));
                    return 0;
                }
                None if fill == Fill::Closed => {
                    self.link
                        .rail_died(idx, r, "closed during the handshake".into());
                    return 0;
                }
                None => return 0,
            }
        }
        let n = self.deliver(idx, r, h);
        if fill == Fill::Closed && self.link.peers[idx].rails[r].state != State::Dead {
            self.link.peer_closed(idx, r);
        }
        n
    }

    /// Reads on the payload landing on rail `r`: `Some(fragments handed over)` while the
    /// socket gives bytes (the landing may be done), `None` once it has nothing more now.
    fn land<H: Handler>(&mut self, idx: usize, r: usize, h: &mut H) -> Option<usize> {
        let peer = &mut self.link.peers[idx];
        let (rank, broken) = (peer.rank, peer.broken.is_some());
        let c = peer.rails[r].conn.as_mut()?;
        let l = c.landing.as_mut()?;
        if !l.discard {
            // Asked again before every read: a receive that ended (a fault failed it) or a
            // copy delivered over another rail withdraws the place.
            let len = l.fh.len as usize;
            let hdr = &l.hdr[..l.fh.hdr_len as usize];
            l.discard = broken
                || !peer.reorder.is_new(l.fh.seq)
                || h.place(rank, l.fh.am, hdr, len) != Some(l.dst);
        }
        // SAFETY: unless discarding, the protocol's place answer was asked just now and still
        // stands: `dst .. dst + len` lies in a receive buffer that nothing else touches until
        // this fragment is handed over (the receive cannot end before it is).
        let read = unsafe { c.land() };
        match read {
            Err(e) => {
                self.link.rail_died(idx, r, e.to_string());
                None
            }
            Ok(Fill::Closed) => {
                self.link.peer_closed(idx, r);
                None
            }
            Ok(Fill::Empty) => None,
            Ok(Fill::Got(k)) => {
                if !c.landing.as_ref().is_some_and(|l| l.discard) {
                    self.link.placed += k as u64;
                }
                let c = self.link.peers[idx].rails[r].conn.as_mut()?;
                if c.landing
                    .as_ref()
                    .is_some_and(|l| l.got == l.fh.len as usize)
                {
                    let l = c.landing.take().expect("checked");
                    let hdr = &l.hdr[..l.fh.hdr_len as usize];
                    let n = hand(&mut self.link, idx, l.fh, hdr, Payload::Placed(l.got), h);
                    self.link.maybe_ack(idx, false);
                    return Some(n);
                }
                Some(0)
            }
        }
    }

    /// Hands the whole frames in rail `r`'s buffer to `h`, in sequence order.
    /// All of them: frames left in the buffer would wait for more bytes on the socket. A large
    /// frame cut short whose place the protocol knows starts a landing: its payload so far is
    /// copied there and the rest is read straight after it.
    #[inline]
    fn deliver<H: Handler>(&mut self, idx: usize, r: usize, h: &mut H) -> usize {
        let l = &mut self.link;
        let rank = l.peers[idx].rank;
        let max = l.cfg.max_frag;
        let rail = &mut l.peers[idx].rails[r];
        let gen = rail.gen;
        let Some(c) = rail.conn.as_mut() else {
            return 0;
        };
        let (rx, mut start, end) = c.take_rx();
        let mut n = 0;
        let mut bad = None;
        loop {
            let fh = match parse_frame(&rx, start, end, max) {
                Ok(Some(fh)) => fh,
                Ok(None) => break,
                Err(why) => {
                    bad = Some(why);
                    break;
                }
            };
            let body = start + FRAME_HDR;
            let hdr_end = body + fh.hdr_len as usize;
            let body_end = hdr_end + fh.len as usize;
            start = body_end;
            if fh.kind == KIND_ACK {
                l.peers[idx].window.ack(fh.seq);
                continue;
            }
            let payload = Payload::Bytes(&rx[hdr_end..body_end]);
            n += hand(l, idx, fh, &rx[body..hdr_end], payload, h);
        }
        if n > 0 {
            l.maybe_ack(idx, false);
        }
        let landing = if bad.is_none() {
            start_landing(l, idx, &rx, &mut start, end, h)
        } else {
            None
        };
        let rail = &mut l.peers[idx].rails[r];
        if rail.gen == gen {
            if let Some(c) = rail.conn.as_mut() {
                c.put_rx(rx, start);
                c.landing = landing;
            }
        }
        if let Some(why) = bad {
            let e = Error::new(
                ErrorClass::Intern,
                format!("TCP: rank {rank} sent a corrupt frame on rail {r}: {why}"),
            );
            l.peers[idx].broken.get_or_insert(e.clone());
            l.fault.get_or_insert(e);
            let rail = &mut l.peers[idx].rails[r];
            rail.state = State::Dead;
            rail.conn = None;
            rail.gen += 1;
            l.direct_stale = true;
        }
        n
    }
}

/// Most up rails a rank with only TCP peers reads directly (a recv each) instead of asking
/// epoll which are ready. An empty recv costs more than an empty epoll_wait (about 0.40 vs
/// 0.17 us here), so beyond two sockets the spin would find a message later.
pub const DIRECT_MAX: usize = 2;
/// Polls that read the `direct` rails between two epoll passes.
pub const DIRECT_POLLS: u32 = 16;

/// Payloads at least this large are read straight to their place when the protocol knows it.
const PLACE_MIN: usize = 8192;
/// Reads per poll of a rail with a landing (a few chunks' worth).
const LANDING_ROUNDS: usize = 8;

/// Hands fragment `fh` (protocol header `hdr`, `payload`) of peer `idx` to `h` in sequence
/// order: held if ahead of a gap, dropped if a copy came first, and followed by the held ones
/// it unblocks. Returns how many were handed over.
#[inline]
fn hand<H: Handler>(
    l: &mut TcpLink,
    idx: usize,
    fh: FrameHdr,
    hdr: &[u8],
    payload: Payload<'_>,
    h: &mut H,
) -> usize {
    let rank = l.peers[idx].rank;
    match l.peers[idx].reorder.offer(fh.seq) {
        Offer::Deliver => {}
        Offer::Hold => {
            // A placed payload is where it goes already: only its header waits.
            let placed = matches!(payload, Payload::Placed(_));
            let mut v = hdr.to_vec();
            if let Payload::Bytes(b) = payload {
                v.extend_from_slice(b);
            }
            l.peers[idx].reorder.hold(fh.seq, (fh, v, placed));
            return 0;
        }
        Offer::Duplicate => return 0,
    }
    h.frag(
        l,
        Frag {
            from: rank,
            am: fh.am,
            hdr,
            payload,
        },
    );
    let mut n = 1;
    l.peers[idx].unacked_in += fh.total();
    while let Some((f2, v, placed)) = l.peers[idx].reorder.next_held() {
        let hl = f2.hdr_len as usize;
        let payload = if placed {
            Payload::Placed(f2.len as usize)
        } else {
            Payload::Bytes(&v[hl..])
        };
        h.frag(
            l,
            Frag {
                from: rank,
                am: f2.am,
                hdr: &v[..hl],
                payload,
            },
        );
        n += 1;
        l.peers[idx].unacked_in += f2.total();
    }
    n
}

/// Starts a landing for the frame cut short at `rx[*start..end]` if it is large, new, and
/// the protocol names its place: the payload bytes already read are copied there and
/// `*start` moves past them.
#[inline]
fn start_landing<H: Handler>(
    l: &mut TcpLink,
    idx: usize,
    rx: &[u8],
    start: &mut usize,
    end: usize,
    h: &mut H,
) -> Option<Landing> {
    let s = *start;
    if end - s < FRAME_HDR {
        return None;
    }
    let fh = FrameHdr::decode(&rx[s..s + FRAME_HDR], l.cfg.max_frag).ok()?;
    let body = s + FRAME_HDR;
    let hdr_end = body + fh.hdr_len as usize;
    let len = fh.len as usize;
    let peer = &l.peers[idx];
    if fh.kind != KIND_MSG
        || len < PLACE_MIN
        || end < hdr_end
        || end - s >= fh.total()
        || peer.broken.is_some()
        || !peer.reorder.is_new(fh.seq)
    {
        return None;
    }
    let dst = h.place(peer.rank, fh.am, &rx[body..hdr_end], len)?;
    let have = end - hdr_end;
    // SAFETY: the place answer stands (asked just now): `dst` is valid for `len` > `have`
    // bytes of writes in a receive buffer nothing else touches; `rx` is this transport's own
    // buffer, so the two cannot overlap.
    unsafe { std::ptr::copy_nonoverlapping(rx[hdr_end..end].as_ptr(), dst, have) };
    l.placed += have as u64;
    let mut hdr = [0u8; MAX_HDR];
    hdr[..fh.hdr_len as usize].copy_from_slice(&rx[body..hdr_end]);
    *start = end;
    Some(Landing {
        fh,
        hdr,
        dst,
        got: have,
        discard: false,
    })
}

impl TcpLink {
    /// Lists the up rails for direct reads if `enabled` and there are at most [`DIRECT_MAX`].
    fn list_direct(&mut self, enabled: bool) {
        self.direct_stale = false;
        self.direct.clear();
        if !enabled {
            return;
        }
        for (i, p) in self.peers.iter().enumerate() {
            for (r, rail) in p.rails.iter().enumerate() {
                if rail.state == State::Up && rail.conn.is_some() {
                    if self.direct.len() == DIRECT_MAX {
                        // Many sockets: one epoll_wait is cheaper than a recv on each.
                        self.direct.clear();
                        return;
                    }
                    self.direct.push((i as u32, r as u8));
                }
            }
        }
    }

    /// Rail `r` of peer `idx` was accepted: what waited for it goes out.
    fn rail_up(&mut self, idx: usize, r: usize) {
        self.direct_stale = true;
        let rail = &mut self.peers[idx].rails[r];
        rail.state = State::Up;
        let early = std::mem::take(&mut rail.early);
        if early.is_empty() {
            return;
        }
        let c = rail.conn.as_mut().expect("an up rail has a connection");
        c.push(&[&early]);
        match c.flush() {
            Ok(true) => {}
            Ok(false) => {
                // Possibly already listed while connecting, so watched for room only now.
                let _ = self.poller.modify(c.fd(), token_of(idx, r), true);
                self.mark_dirty(idx, r);
            }
            Err(e) => self.rail_died(idx, r, e.to_string()),
        }
    }
}

impl Transport for TcpTransport {
    type Link = TcpLink;

    #[inline]
    fn link(&mut self) -> &mut TcpLink {
        &mut self.link
    }

    #[inline]
    fn has_arrival(&self) -> bool {
        !self.link.dirty.is_empty() || self.link.fault.is_some()
    }

    fn wakeup(&self) -> Option<Wakeup> {
        Some(Wakeup::new(self.link.poller.fd()))
    }

    fn poll<H: Handler>(&mut self, _budget: usize, h: &mut H) -> Result<usize> {
        // Sockets are asked every `every` calls (a countdown: no division on the hot path).
        if self.skip > 0 && self.link.dirty.is_empty() {
            self.skip -= 1;
            return Ok(0);
        }
        self.skip = self.every - 1;
        if !self.link.dirty.is_empty() {
            self.flush_dirty();
        }
        if self.direct_left > 0 && !self.link.direct_stale {
            // A few sockets: a recv on each finds a message one syscall sooner than
            // epoll_wait followed by recv (1 B between namespace hosts: about 1 us of 9).
            self.direct_left -= 1;
            let mut n = 0;
            for i in 0..self.link.direct.len() {
                let (idx, r) = self.link.direct[i];
                n += self.read_rail(idx as usize, r as usize, h);
            }
            return match self.link.fault.take() {
                Some(e) => Err(e),
                None => Ok(n),
            };
        }
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        if let Err(e) = self.link.poller.ready(&mut events) {
            return Err(Error::new(
                ErrorClass::Other,
                format!("TCP: epoll failed: {e}"),
            ));
        }
        let mut n = 0;
        for ev in &events {
            match ev.token {
                LISTEN => self.accept(),
                t if t & STRANGER != 0 => self.prove((t & !STRANGER) as usize),
                t => {
                    let (idx, r) = ((t >> 8) as usize, (t & 0xff) as usize);
                    if idx < self.link.peers.len() && r < self.link.peers[idx].rails.len() {
                        n += self.read_rail(idx, r, h);
                    }
                }
            }
        }
        self.events = events;
        let strangers = self.link.strangers.iter().any(Option::is_some);
        if strangers {
            self.expire_strangers(Instant::now());
        }
        if self.link.direct_stale {
            self.link.list_direct(self.every == 1);
        }
        // The listener, rails still connecting and sockets beyond `direct` are watched by
        // epoll alone: asked again after at most DIRECT_POLLS direct reads. While strangers
        // prove themselves (or run out of time) every poll asks epoll.
        self.direct_left = if self.link.direct.is_empty() || strangers {
            0
        } else {
            DIRECT_POLLS
        };
        match self.link.fault.take() {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    fn config(rails: usize, cut_rail: Option<(usize, u64)>) -> TcpConfig {
        TcpConfig {
            inline_max: 1024,
            max_frag: 32768,
            eager_limit: 16384,
            send_queue: 1 << 20,
            rails,
            ifaces: String::new(),
            port: 0,
            poll_every: 1,
            handshake: Duration::from_millis(100),
            cut_rail,
            garbage_after: None,
            log_routes: false,
        }
    }

    fn pair(cfg: TcpConfig) -> Vec<TcpTransport> {
        let cards = Arc::new(Mutex::new(vec![None::<Endpoint>; 2]));
        (0..2u32)
            .map(|r| {
                let c = cards.clone();
                let resolve: Resolver = Box::new(move |p| {
                    c.lock().unwrap()[p as usize]
                        .clone()
                        .ok_or_else(|| Error::new(ErrorClass::Intern, "no card"))
                });
                let t = TcpTransport::create(r, 2, cfg.clone(), &[1 - r], resolve, false, true)
                    .unwrap();
                cards.lock().unwrap()[r as usize] = Some(t.endpoint());
                t
            })
            .collect()
    }

    #[derive(Default)]
    struct Collect(Vec<(u32, u8, Vec<u8>, Vec<u8>)>);

    impl Handler for Collect {
        fn frag<L: Link>(&mut self, _link: &mut L, f: Frag<'_>) {
            let mut data = vec![0; f.payload.len()];
            f.payload.copy_to(&mut data);
            self.0.push((f.from, f.am, f.hdr.to_vec(), data));
        }
    }

    /// Polls both sides until `done` holds of what rank 1 (and rank 0) collected.
    fn pump(t: &mut [TcpTransport], c: &mut [Collect], done: impl Fn(&[Collect]) -> bool) {
        for _ in 0..200_000 {
            for (tr, col) in t.iter_mut().zip(c.iter_mut()) {
                tr.poll(64, col).expect("no fault");
            }
            if done(c) {
                return;
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        panic!("traffic never completed");
    }

    fn payload(i: u64, len: usize) -> Vec<u8> {
        (0..len).map(|k| (k as u64 * 7 + i * 13) as u8).collect()
    }

    /// Places fragments of kind 7 (header: offset u64) at that offset of `buf`, until
    /// `withdraw_after` place answers have been given; records what was handed over.
    struct Placer {
        buf: Vec<u8>,
        answers: usize,
        withdraw_after: usize,
        got: Vec<(u64, usize, bool)>,
    }

    impl Handler for Placer {
        fn frag<L: Link>(&mut self, _link: &mut L, f: Frag<'_>) {
            let off = u64::from_le_bytes(f.hdr.try_into().unwrap());
            let placed = matches!(f.payload, Payload::Placed(_));
            if !placed {
                let at = off as usize;
                f.payload.copy_to(&mut self.buf[at..at + f.payload.len()]);
            }
            self.got.push((off, f.payload.len(), placed));
        }

        fn place(&mut self, _from: u32, am: u8, hdr: &[u8], len: usize) -> Option<*mut u8> {
            let off = u64::from_le_bytes(hdr.try_into().ok()?) as usize;
            if am != 7 || self.answers >= self.withdraw_after || off + len > self.buf.len() {
                return None;
            }
            self.answers += 1;
            Some(self.buf[off..].as_mut_ptr())
        }
    }

    const GUARD: u8 = 0xEE;

    /// Sends `frames` (offset, length) of `payload(seed)` bytes to rank 1 of `t`, and polls
    /// until `p` has them all.
    fn land_frames(t: &mut [TcpTransport], p: &mut Placer, frames: &[(usize, usize)]) {
        let mut c = Collect::default();
        let mut i = 0;
        for _ in 0..1_000_000 {
            while i < frames.len() {
                let (off, len) = frames[i];
                let data = payload(off as u64, len);
                match t[0].link().send(1, 7, &(off as u64).to_le_bytes(), &data) {
                    Ok(()) => i += 1,
                    Err(SendError::Busy) => break,
                    Err(SendError::Fatal(e)) => panic!("{e}"),
                }
            }
            t[0].poll(64, &mut c).unwrap();
            t[1].poll(64, p).unwrap();
            if p.got.len() == frames.len() {
                return;
            }
        }
        panic!("frames never all arrived");
    }

    #[test]
    fn large_payloads_land_at_their_place_over_every_rail_and_nothing_around_it() {
        for rails in [1, 2, 3] {
            let mut cfg = config(rails, None);
            cfg.max_frag = 1 << 20;
            cfg.send_queue = 4 << 20;
            let mut t = pair(cfg);
            // Chunks of one large message, at their offsets, with a gap left untouched.
            let frames: Vec<(usize, usize)> = (0..12)
                .map(|k| (64 + k * 300_000, [300_000, 20_000, 131_072][k % 3]))
                .collect();
            let size = 64 + 12 * 300_000 + 64;
            let mut p = Placer {
                buf: vec![GUARD; size],
                answers: 0,
                withdraw_after: usize::MAX,
                got: Vec::new(),
            };
            land_frames(&mut t, &mut p, &frames);
            let mut expect = vec![GUARD; size];
            for &(off, len) in &frames {
                expect[off..off + len].copy_from_slice(&payload(off as u64, len));
            }
            assert!(
                p.buf == expect,
                "{rails} rails: a byte is wrong or a gap was written"
            );
            let order: Vec<u64> = p.got.iter().map(|g| g.0).collect();
            let sent: Vec<u64> = frames.iter().map(|f| f.0 as u64).collect();
            assert_eq!(order, sent, "handed over in order");
            let placed = p.got.iter().filter(|g| g.2).count();
            assert!(placed > 0, "{rails} rails: nothing landed: {:?}", p.got);
            let landed = t[1].link.placed;
            // A read takes at most 64 KiB: the rest of each placed payload lands directly.
            let floor: usize = (p.got.iter().filter(|g| g.2))
                .map(|g| g.1.saturating_sub(64 << 10))
                .sum();
            assert!(landed as usize >= floor, "{landed} < {floor}");
        }
    }

    #[test]
    fn a_withdrawn_place_gets_no_more_bytes_and_the_fragment_still_arrives() {
        let mut cfg = config(1, None);
        cfg.max_frag = 1 << 20;
        cfg.send_queue = 4 << 20;
        let mut t = pair(cfg);
        let len = 900_000;
        let mut p = Placer {
            buf: vec![GUARD; len],
            answers: 0,
            // Placed when its header arrives, withdrawn at the first read after.
            withdraw_after: 1,
            got: Vec::new(),
        };
        land_frames(&mut t, &mut p, &[(0, len)]);
        assert_eq!(p.got.len(), 1);
        let want = payload(0, len);
        let k = (0..len).find(|&i| p.buf[i] != want[i]).unwrap_or(len);
        assert!(k < len, "the withdrawn place was written to the end");
        assert!(
            p.buf[k..].iter().all(|&b| b == GUARD),
            "bytes written after the place was withdrawn"
        );
    }

    fn up_rails(t: &TcpTransport) -> usize {
        let p = &t.link.peers[0];
        p.rails.iter().filter(|r| r.state == State::Up).count()
    }

    #[test]
    fn few_rails_are_read_directly_and_many_through_epoll_alone() {
        for (rails, direct) in [(1, 1), (DIRECT_MAX, DIRECT_MAX), (DIRECT_MAX + 1, 0)] {
            let mut t = pair(config(rails, None));
            let mut c = [Collect::default(), Collect::default()];
            t[0].link().send(1, 1, b"up", &[]).unwrap();
            t[1].link().send(0, 1, b"up", &[]).unwrap();
            for _ in 0..200_000 {
                for (tr, col) in t.iter_mut().zip(c.iter_mut()) {
                    tr.poll(64, col).expect("no fault");
                }
                if t.iter()
                    .all(|t| up_rails(t) == rails && !t.link.direct_stale)
                {
                    break;
                }
                std::thread::sleep(Duration::from_micros(20));
            }
            for tr in &t {
                assert_eq!(up_rails(tr), rails, "every rail came up");
                assert_eq!(tr.link.direct.len(), direct, "{rails} rails");
            }
            // Small and large frames both ways while the rails are read directly (or not),
            // with the listener still answered: all arrive, in order.
            for i in 0..300u64 {
                let len = [1, 100, 20_000][i as usize % 3];
                t[0].link()
                    .send(1, 2, &i.to_le_bytes(), &payload(i, len))
                    .unwrap();
                t[1].link()
                    .send(0, 2, &i.to_le_bytes(), &payload(i, len))
                    .unwrap();
                pump(&mut t, &mut c, |c| {
                    c.iter().all(|c| c.0.len() > i as usize + 1)
                });
            }
            for col in &c {
                let got: Vec<_> = col.0.iter().filter(|m| m.1 == 2).collect();
                assert_eq!(got.len(), 300, "{rails} rails");
                for (i, m) in got.iter().enumerate() {
                    let len = [1, 100, 20_000][i % 3];
                    assert_eq!(m.2, (i as u64).to_le_bytes(), "{rails} rails: order");
                    assert_eq!(m.3, payload(i as u64, len), "{rails} rails: message {i}");
                }
            }
            // A rank that also has shared-memory peers polls through epoll alone.
            t[0].link.list_direct(false);
            assert!(t[0].link.direct.is_empty() && !t[0].link.direct_stale);
        }
    }

    #[test]
    fn simultaneous_connects_settle_on_one_connection_and_both_directions_work() {
        let mut t = pair(config(1, None));
        let mut c = [Collect::default(), Collect::default()];
        // Both send before either polls: each connects to the other at once.
        for i in 0..20u64 {
            t[0].link()
                .send(1, 5, &i.to_le_bytes(), &payload(i, 100))
                .unwrap();
            t[1].link()
                .send(0, 6, &i.to_le_bytes(), &payload(i, 3000))
                .unwrap();
        }
        pump(&mut t, &mut c, |c| c[0].0.len() == 20 && c[1].0.len() == 20);
        for i in 0..20u64 {
            assert_eq!(
                c[1].0[i as usize],
                (0, 5, i.to_le_bytes().to_vec(), payload(i, 100))
            );
            assert_eq!(
                c[0].0[i as usize],
                (1, 6, i.to_le_bytes().to_vec(), payload(i, 3000))
            );
        }
        for tr in &t {
            let up = tr.link.peers[0]
                .rails
                .iter()
                .filter(|r| r.state == State::Up)
                .count();
            assert_eq!(up, 1, "exactly one connection survives");
        }
    }

    #[test]
    fn a_full_socket_wakes_its_sender_when_it_drains_and_only_then() {
        let mut t = pair(config(1, None));
        let mut c = [Collect::default(), Collect::default()];
        t[0].link().send(1, 1, &[], b"hello").unwrap();
        pump(&mut t, &mut c, |c| c[1].0.len() == 1);
        let w = t[0].wakeup().expect("sockets can wake a rank");
        let big = payload(1, 32768);
        // Fill the socket and the send queue without letting rank 1 read.
        let mut sent = 1;
        while sent < 100_000 && !matches!(t[0].link().send(1, 1, &[], &big), Err(SendError::Busy)) {
            sent += 1;
        }
        assert!(t[0].has_outgoing(), "bytes wait for room");
        t[0].poll(64, &mut c[0]).unwrap();
        assert!(
            !w.wait(Duration::from_millis(5)),
            "no room yet, nothing arrived"
        );
        // Rank 1 drains: rank 0's wait ends on the room it gets.
        for _ in 0..10_000 {
            t[1].poll(64, &mut c[1]).unwrap();
            if w.wait(Duration::ZERO) {
                break;
            }
        }
        assert!(w.wait(Duration::from_secs(30)));
        pump(&mut t, &mut c, |c| c[1].0.len() == sent);
        for _ in 0..100 {
            t[0].poll(64, &mut c[0]).unwrap();
        }
        assert!(!t[0].has_outgoing());
        assert!(
            !w.wait(Duration::from_millis(5)),
            "an empty queue no longer wakes on a writable socket"
        );
    }

    /// Rank 0 of two one-rank jobs (ids 5 and 9), each knowing the other as its index 1.
    fn two_jobs(rails: usize, know_endpoint: [bool; 2]) -> Vec<TcpTransport> {
        let mut t: Vec<TcpTransport> = [5u64, 9]
            .iter()
            .map(|&job| {
                let resolve: Resolver =
                    Box::new(|_| Err(Error::new(ErrorClass::Intern, "no card")));
                let mut t =
                    TcpTransport::create(0, 1, config(rails, None), &[], resolve, false, true)
                        .unwrap();
                t.set_job(job);
                t
            })
            .collect();
        let eps = [t[0].endpoint(), t[1].endpoint()];
        for (i, known) in know_endpoint.iter().enumerate() {
            let other = 1 - i;
            let job = [5u64, 9][other];
            t[i].add_foreign(1, (job, 0), known.then(|| eps[other].clone()));
        }
        t
    }

    #[test]
    fn processes_of_two_jobs_connect_by_identity_even_at_once() {
        for rails in [1, 2] {
            let mut t = two_jobs(rails, [true, true]);
            let mut c = [Collect::default(), Collect::default()];
            // Both connect at once: one connection per rail survives, and both directions work.
            for i in 0..20u64 {
                t[0].link().send(1, 1, &[], &payload(i, 100)).unwrap();
                t[1].link().send(1, 1, &[], &payload(i + 100, 100)).unwrap();
            }
            pump(&mut t, &mut c, |c| c[0].0.len() == 20 && c[1].0.len() == 20);
            for i in 0..20usize {
                assert_eq!(c[1].0[i].0, 1, "the sender is known by its index here");
                assert_eq!(c[1].0[i].3, payload(i as u64, 100));
                assert_eq!(c[0].0[i].3, payload(i as u64 + 100, 100));
            }
        }
        // A peer whose endpoint is not known yet can still connect to us, and we answer on
        // its connection.
        let mut t = two_jobs(1, [false, true]);
        let mut c = [Collect::default(), Collect::default()];
        t[1].link().send(1, 1, &[], b"hello parent").unwrap();
        pump(&mut t, &mut c, |c| c[0].0.len() == 1);
        assert_eq!(c[0].0[0].3, b"hello parent");
        t[0].link().send(1, 1, &[], b"hello child").unwrap();
        pump(&mut t, &mut c, |c| c[1].0.len() == 1);
        assert_eq!(c[1].0[0].3, b"hello child");
    }

    #[test]
    fn a_process_of_an_unknown_job_is_refused() {
        let mut t = two_jobs(1, [true, true]);
        // Job 9's process as job 9 knows it, but job 5 expects rank 0 of job 9 at index 1:
        // a connection claiming rank 3 of job 9 is a stranger.
        let ep = t[0].endpoint();
        let mut fake = TcpStream::connect(SocketAddr::from((ep.addrs[0], ep.port))).unwrap();
        let h = Hello {
            token: ep.token,
            from: 3,
            to: 0,
            rail: 0,
            from_job: 9,
            to_job: 5,
        };
        fake.write_all(&h.encode()).unwrap();
        fake.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut c = [Collect::default(), Collect::default()];
        for _ in 0..200 {
            t[0].poll(64, &mut c[0]).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut buf = [0u8; 4];
        assert_eq!(
            fake.read(&mut buf).unwrap_or(0),
            0,
            "closed without an answer"
        );
        t[1].link().send(1, 1, &[], b"real").unwrap();
        pump(&mut t, &mut c, |c| c[0].0.len() == 1);
    }

    #[test]
    fn strangers_get_nothing_and_cannot_disturb_the_job() {
        let mut t = pair(config(1, None));
        let ep = t[1].endpoint();
        let addr = SocketAddr::from((ep.addrs[0], ep.port));
        let mut garbage = TcpStream::connect(addr).unwrap();
        garbage.write_all(&[0x41; 64]).unwrap();
        let mut wrong_secret = TcpStream::connect(addr).unwrap();
        let h = Hello {
            token: [0; TOKEN_LEN],
            from: 0,
            to: 1,
            rail: 0,
            from_job: 0,
            to_job: 0,
        };
        wrong_secret.write_all(&h.encode()).unwrap();
        let mut silent = TcpStream::connect(addr).unwrap();
        let mut c = [Collect::default(), Collect::default()];
        t[0].link().send(1, 1, &[], b"real traffic").unwrap();
        pump(&mut t, &mut c, |c| c[1].0.len() == 1);
        std::thread::sleep(Duration::from_millis(150));
        pump(&mut t, &mut c, |_| true);
        assert!(
            t[1].link.strangers.iter().all(Option::is_none),
            "every stranger was refused"
        );
        for s in [&mut garbage, &mut wrong_secret, &mut silent] {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = [0u8; 16];
            // Closed without a byte: a stranger learns nothing.
            assert_eq!(s.read(&mut buf).unwrap_or(0), 0);
        }
        assert_eq!(c[1].0[0].3, b"real traffic");
        t[0].link().send(1, 1, &[], b"still fine").unwrap();
        pump(&mut t, &mut c, |c| c[1].0.len() == 2);
    }

    #[test]
    fn a_peer_sending_garbage_after_the_handshake_is_a_fault_naming_it() {
        let mut t = pair(config(1, None));
        let ep = t[1].endpoint();
        let mut fake = TcpStream::connect(SocketAddr::from((ep.addrs[0], ep.port))).unwrap();
        let h = Hello {
            token: ep.token,
            from: 0,
            to: 1,
            rail: 0,
            from_job: 0,
            to_job: 0,
        };
        fake.write_all(&h.encode()).unwrap();
        let mut c = Collect::default();
        let mut answer = [0u8; 1];
        fake.set_nonblocking(true).unwrap();
        for _ in 0..100_000 {
            t[1].poll(64, &mut c).unwrap();
            if fake.read(&mut answer).is_ok() {
                break;
            }
        }
        assert_eq!(answer[0], ACCEPT);
        fake.set_nonblocking(false).unwrap();
        fake.write_all(&[0x5a; 40]).unwrap();
        let err = (0..100_000)
            .find_map(|_| t[1].poll(64, &mut c).err())
            .expect("the garbage is a fault");
        let msg = err.to_string();
        assert!(
            msg.contains("rank 0") && msg.contains("corrupt frame"),
            "{msg}"
        );
        assert!(c.0.is_empty());
        let e = t[1].link().send(0, 1, &[], b"x").unwrap_err();
        assert!(
            matches!(e, SendError::Fatal(ref e) if e.to_string().contains("rank 0")),
            "{e:?}"
        );
    }

    #[test]
    fn a_rail_cut_mid_stream_loses_duplicates_and_reorders_nothing() {
        let mut t = pair(config(3, Some((1, 40))));
        let mut c = [Collect::default(), Collect::default()];
        let n = 300u64;
        let mut i = 0u64;
        while (c[1].0.len() as u64) < n {
            while i < n {
                let len = [10usize, 32768, 20000, 9000][i as usize % 4];
                match t[0].link().send(1, 2, &i.to_le_bytes(), &payload(i, len)) {
                    Ok(()) => i += 1,
                    Err(SendError::Busy) => break,
                    Err(SendError::Fatal(e)) => panic!("{e}"),
                }
            }
            for (tr, col) in t.iter_mut().zip(c.iter_mut()) {
                tr.poll(64, col).expect("one rail down is no fault");
            }
        }
        for (k, got) in c[1].0.iter().enumerate() {
            let len = [10usize, 32768, 20000, 9000][k % 4];
            assert_eq!(got.2, (k as u64).to_le_bytes(), "fragment {k} in order");
            assert!(got.3 == payload(k as u64, len), "fragment {k} intact");
        }
        let rails = &t[0].link.peers[0].rails;
        assert_eq!(rails[1].state, State::Dead);
        assert_eq!(rails.iter().filter(|r| r.state == State::Up).count(), 2);
    }

    #[test]
    fn losing_the_last_rail_breaks_the_peer_with_an_error_naming_it() {
        let mut t = pair(config(1, Some((0, 5))));
        let mut c = [Collect::default(), Collect::default()];
        for i in 0..4u64 {
            t[0].link().send(1, 2, &[], &payload(i, 100)).unwrap();
        }
        pump(&mut t, &mut c, |c| c[1].0.len() == 4);
        // The fifth fragment triggers the cut.
        t[0].link().send(1, 2, &[], b"last").unwrap();
        let err = (0..100_000)
            .find_map(|_| {
                let _ = t[0].poll(64, &mut c[0]);
                t[1].poll(64, &mut c[1]).err()
            })
            .expect("rank 1 sees the peer gone");
        assert!(err.to_string().contains("lost rank 0"), "{err}");
        let refused = (0..1000).find_map(|_| match t[0].link().send(1, 2, &[], b"more") {
            Err(SendError::Fatal(e)) => Some(e),
            _ => {
                let _ = t[0].poll(64, &mut c[0]);
                None
            }
        });
        assert!(refused
            .expect("sends fail")
            .to_string()
            .contains("lost rank 1"));
    }

    #[test]
    fn endpoints_round_trip_and_bad_settings_are_errors() {
        let ep = Endpoint {
            addrs: vec![Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::LOCALHOST],
            port: 4000,
            token: [3; TOKEN_LEN],
        };
        let [(_, a), (_, t)] = ep.fields();
        assert_eq!(Endpoint::parse(&a, &t), Some(ep));
        assert_eq!(Endpoint::parse("4000", &t), None);
        assert_eq!(Endpoint::parse(&a, "xyz"), None);
        let base = crate::config::Config::default();
        assert!(TcpConfig::from_config(&base).is_ok());
        for c in [
            crate::config::Config {
                tcp_rails: 0,
                ..base.clone()
            },
            crate::config::Config {
                tcp_frag_size: 10,
                ..base.clone()
            },
            crate::config::Config {
                tcp_port: 70000,
                ..base.clone()
            },
            crate::config::Config {
                tcp_cut_rail: "x".into(),
                ..base.clone()
            },
        ] {
            assert_eq!(
                TcpConfig::from_config(&c).unwrap_err().class(),
                ErrorClass::Arg
            );
        }
    }
}
