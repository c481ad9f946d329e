//! The progress engine: routes, transports, the protocol state and the schedules, and the
//! loop that advances them.
//!
//! Each peer's route names one of the engine's transports (`self` for ourselves, `shm` for
//! ranks on this host; an array index, no hashing). A send picks the route and hands the
//! route's [`Link`] to the protocol layer ([`Proto`]); [`Engine::progress`] polls every
//! transport with the protocol layer as the fragment handler, sends what waits for room,
//! pushes rendezvous chunks and advances collective schedules.
//!
//! Errors belong to operations: a failed operation completes with the error in its status,
//! and a wait returns only its own request's status. A fault that breaks communication (a
//! corrupt fragment, an unreachable peer) is, by default, fatal: the engine calls the
//! runtime's abort hook, which ends the job with one message naming the rank, the call and the
//! cause. In [`FaultMode::Return`] every operation with the broken peer completes with the
//! error instead, later operations with it fail at once, and everything else goes on.

use super::matching::{Posted, Unexpected, PROC_NULL};
use super::proto::{Fault, Proto};
use super::request::{ReqId, State, Status};
use super::wire::Envelope;
use crate::error::{Error, ErrorClass, Result};
use crate::transport::shm::{node::Node, ShmTransport};
use crate::transport::{with_transport, AnyTransport, Transport};
use std::sync::Arc;

pub use super::proto::{SendMode, Stats};

/// The result of starting a receive.
#[derive(Debug)]
pub enum RecvStart {
    /// Completed at once.
    Done(Status),
    /// In flight.
    Pending(ReqId),
}

/// What the engine does when a fault breaks communication with a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultMode {
    /// End the job (the default, like `MPI_ERRORS_ARE_FATAL`).
    Abort,
    /// Complete every affected operation with the error and go on (`MPI_ERRORS_RETURN`).
    Return,
}

/// How far a [`Schedule::advance`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    /// Transfers are in flight: advance again later.
    Running,
    /// The schedule has finished.
    Done,
    /// The schedule stopped before a step that runs user code (a user reduction), which may
    /// call MPI and so must not run inside the engine: the engine parks the schedule until a
    /// waiting caller runs [`Schedule::run_unlocked`] with the engine unlocked.
    Unlocked,
}

/// A multi-step operation (a collective) that the engine advances on every progress call, so
/// that several can be in flight at once and complete in any order of waits.
pub trait Schedule: std::fmt::Debug {
    /// Advances as far as possible without blocking, using the engine's point-to-point
    /// operations (never [`Engine::progress`]). Never runs user code. An error ends the
    /// schedule and completes its request with the error.
    fn advance(&mut self, e: &mut Engine) -> Result<Advance>;
    /// Runs the steps that [`advance`](Self::advance) stopped at with [`Advance::Unlocked`].
    /// Called with the engine unlocked, never from inside `EngineCell::with`. A panic of the
    /// user code is returned after the schedule has recorded it as its error (so the
    /// schedule stays safe to advance, which cancels its receives, and to drop).
    fn run_unlocked(&mut self) -> std::thread::Result<()>;
    /// Whether dropping the schedule may run user code (values a user operation captured):
    /// the engine then hands it to a waiting caller to drop with the engine unlocked.
    fn drops_user_code(&self) -> bool {
        false
    }
    /// The status its request completes with once done: empty for a collective, the
    /// receive's for a send-receive pair (`MPI_Isendrecv`).
    fn status(&self) -> Status {
        Status::default()
    }
    /// Prepares the next run of a schedule a persistent request keeps ([`Lent`]), on
    /// collective tag `tag`. Schedules made for one run are never restarted.
    fn restart(&mut self, tag: i32) -> Result<()> {
        let _ = tag;
        Ok(())
    }
}

/// A schedule a persistent request keeps and lends to the engine for each run
/// ([`Engine::start_lent`]).
pub type Lent = Arc<parking_lot::Mutex<dyn Schedule>>;

/// A lent schedule locked for one run.
pub type LentRun = parking_lot::ArcMutexGuard<parking_lot::RawMutex, dyn Schedule>;

/// A schedule as the engine holds it while it runs.
pub enum Running {
    /// Made for this run (a nonblocking collective), dropped when it ends.
    Owned(Box<dyn Schedule>),
    /// Kept by a persistent request and locked by it for this run, until the engine
    /// unlocks it when the run ends: a restart clones a handle and allocates nothing, polls
    /// take no lock, and the request's next start, which must lock it again, comes after the
    /// engine's last step of this run.
    Lent(LentRun),
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Running::Owned(s) => f.debug_tuple("Owned").field(s).finish(),
            Running::Lent(s) => f.debug_tuple("Lent").field(&&**s).finish(),
        }
    }
}

/// A finished schedule whose drop may run user code, kept until a caller drops it with the
/// engine unlocked (see [`UnlockedWork`](super::progress::UnlockedWork)).
#[derive(Debug)]
pub enum Retired {
    /// A nonblocking collective's schedule.
    Owned(Box<dyn Schedule>),
    /// A persistent request's, unlocked: what is left to drop is this reference, the last
    /// one if the request was freed while the run was active.
    Lent(Lent),
}

/// How a step of a running schedule ended ([`Running::advance`]).
#[derive(Debug, Clone, Copy)]
pub enum Stepped {
    /// Still running.
    Running,
    /// Stopped at a step to run with the engine unlocked ([`Advance::Unlocked`]).
    Unlocked,
    /// Finished: its request's status, and whether dropping it may run user code.
    Done(Status, bool),
}

impl Running {
    /// [`Schedule::advance`] of the schedule; once done, also its [`Schedule::status`] and
    /// [`Schedule::drops_user_code`].
    pub fn advance(&mut self, e: &mut Engine) -> Result<Stepped> {
        let s: &mut dyn Schedule = match self {
            Running::Owned(s) => &mut **s,
            Running::Lent(s) => &mut **s,
        };
        Ok(match s.advance(e)? {
            Advance::Running => Stepped::Running,
            Advance::Unlocked => Stepped::Unlocked,
            Advance::Done => Stepped::Done(s.status(), s.drops_user_code()),
        })
    }

    /// [`Schedule::drops_user_code`] of the schedule. For a lent one it answers for the
    /// last reference too, which the owner may drop on another thread at any time.
    pub fn drops_user_code(&self) -> bool {
        match self {
            Running::Owned(s) => s.drops_user_code(),
            Running::Lent(s) => s.drops_user_code(),
        }
    }

    /// [`Schedule::run_unlocked`] of the schedule.
    pub fn run_unlocked(&mut self) -> std::thread::Result<()> {
        match self {
            Running::Owned(s) => s.run_unlocked(),
            Running::Lent(s) => s.run_unlocked(),
        }
    }

    /// Ends the run, unlocking a lent schedule, and keeps what remains to be dropped.
    pub fn retire(self) -> Retired {
        match self {
            Running::Owned(s) => Retired::Owned(s),
            Running::Lent(s) => Retired::Lent(parking_lot::ArcMutexGuard::into_arc(s)),
        }
    }
}

/// Ends the job with a message; installed by the runtime.
pub type AbortHook = Box<dyn Fn(&str) + Send + Sync>;

/// Index of the `self` transport in [`Engine::transports`].
const SELF: u8 = 0;
/// A route that no transport serves.
const UNREACHABLE: u8 = u8::MAX;
/// The route of a peer whose communication broke ([`FaultMode::Return`]): one load tells a
/// send both where to go and whether it may.
const BROKEN: u8 = u8::MAX - 1;

/// One process's point-to-point engine.
pub struct Engine {
    proto: Proto,
    /// Transport index per world rank.
    route: Vec<u8>,
    /// `self` first, then whichever others this rank has.
    transports: Vec<AnyTransport>,
    /// Index of the shared-memory transport, if any.
    shm: Option<u8>,
    /// Transports whose receive side broke (polled no more).
    dead: Vec<bool>,
    /// The smallest eager limit of a transport that can take a direct write: receives up to
    /// this size never advertise their buffer, which spares them a route lookup.
    advert_min: usize,
    /// Smallest and largest derived-datatype message packed straight into the transport (see
    /// `wants_chunks`).
    ddt_direct: (usize, usize),
    schedules: Vec<(ReqId, Running)>,
    /// Schedules waiting for a caller with the engine unlocked (user steps, user drops).
    unlocked: super::progress::UnlockedWork,
    mode: FaultMode,
    abort: Option<AbortHook>,
    /// The call a blocking wait is serving, for fault messages.
    call: &'static str,
    /// The first fault seen.
    fault: Option<Error>,
    pub(super) bsend: super::bsend::Buffers,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("me", &self.proto.me)
            .field("transports", &self.transports)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine for world rank `me` of `size`: the `self` transport, plus `shm` if given,
    /// which reaches the ranks in `shm_peers`. Other ranks are unreachable.
    pub fn new(me: u32, size: u32, shm: Option<ShmTransport>, shm_peers: &[u32]) -> Engine {
        let mut transports = vec![AnyTransport::SelfLoop(
            crate::transport::selfloop::SelfLoop::new(me),
        )];
        let mut route = vec![UNREACHABLE; size as usize];
        route[me as usize] = SELF;
        let shm_idx = shm.map(|s| {
            transports.push(AnyTransport::Shm(s));
            (transports.len() - 1) as u8
        });
        if let Some(i) = shm_idx {
            for &p in shm_peers {
                if p != me && (p as usize) < route.len() {
                    route[p as usize] = i;
                }
            }
        }
        let n = transports.len();
        let advert_min = transports[1..]
            .iter_mut()
            .map(AnyTransport::limits)
            .filter(|l| l.put)
            // Only receives larger than the eager limit may be advertised (where a lone
            // message is pushed, `maybe_advertise` declines too).
            .map(|l| l.eager_limit)
            .min()
            .unwrap_or(usize::MAX);
        Engine {
            proto: Proto::new(me, size),
            route,
            transports,
            shm: shm_idx,
            dead: vec![false; n],
            advert_min,
            ddt_direct: (1, 0),
            schedules: Vec::new(),
            unlocked: Default::default(),
            mode: FaultMode::Abort,
            abort: None,
            call: "progress",
            fault: None,
            bsend: Default::default(),
        }
    }

    /// Adds the TCP transport, which reaches the ranks in `peers` (those on other hosts, or
    /// every other rank when TCP is forced).
    pub fn add_tcp(&mut self, t: crate::transport::tcp::TcpTransport, peers: &[u32]) {
        self.transports.push(AnyTransport::Tcp(t));
        self.dead.push(false);
        let i = (self.transports.len() - 1) as u8;
        for &p in peers {
            if p != self.proto.me && (p as usize) < self.route.len() {
                self.route[p as usize] = i;
            }
        }
        // TCP has no direct write: receives keep their adverts for the transports that do.
    }

    /// Whether the engine has a TCP transport.
    pub fn has_tcp(&self) -> bool {
        self.transports
            .iter()
            .any(|t| matches!(t, AnyTransport::Tcp(_)))
    }

    /// The TCP transport, if the engine has one.
    pub fn tcp_mut(&mut self) -> Option<&mut crate::transport::tcp::TcpTransport> {
        self.transports.iter_mut().find_map(|t| match t {
            AnyTransport::Tcp(t) => Some(t),
            _ => None,
        })
    }

    /// Makes room for `n` processes of another job (`MPI_Comm_spawn`) at the indices after
    /// every process known so far, and returns the first. They are unreachable until
    /// [`route_over_tcp`](Self::route_over_tcp) names them; communicators address them by
    /// these indices as they address the world by world rank.
    pub fn add_foreign(&mut self, n: u32) -> u32 {
        let base = self.route.len() as u32;
        let end = base as usize + n as usize;
        self.route.resize(end, UNREACHABLE);
        self.proto.pending_to.resize(end, 0);
        base
    }

    /// Routes the processes at `indices` (made by [`add_foreign`](Self::add_foreign)) over
    /// the TCP transport, which must be there.
    pub fn route_over_tcp(&mut self, indices: &[u32]) {
        let Some(t) = self
            .transports
            .iter()
            .position(|t| matches!(t, AnyTransport::Tcp(_)))
        else {
            return;
        };
        for &i in indices {
            if let Some(r) = self.route.get_mut(i as usize) {
                if *r == UNREACHABLE {
                    *r = t as u8;
                }
            }
        }
    }

    /// Installs the hook that ends the job on a fatal fault.
    pub fn set_abort_hook(&mut self, hook: AbortHook) {
        self.abort = Some(hook);
    }

    /// Chooses what a fault does (default [`FaultMode::Abort`]).
    pub fn set_fault_mode(&mut self, mode: FaultMode) {
        self.mode = mode;
    }

    /// Names the call a blocking wait serves, for fault messages.
    #[inline]
    pub fn enter(&mut self, call: &'static str) {
        self.call = call;
    }

    /// The first fault seen, if any.
    #[cfg(test)]
    pub fn fault(&self) -> Option<&Error> {
        self.fault.as_ref()
    }

    /// The shared-memory transport, if this rank has local peers.
    pub fn shm(&self) -> Option<&ShmTransport> {
        match self.transports.get(self.shm? as usize)? {
            AnyTransport::Shm(s) => Some(s),
            _ => None,
        }
    }

    fn shm_mut(&mut self) -> Option<&mut ShmTransport> {
        match self.transports.get_mut(self.shm? as usize)? {
            AnyTransport::Shm(s) => Some(s),
            _ => None,
        }
    }

    /// The intra-host collective helpers (barrier counters, data slots, `alloc_mem` arena) of
    /// the shared-memory transport, if this rank has local peers.
    pub fn node(&mut self) -> Option<&mut dyn Node> {
        Some(self.shm_mut()?.node())
    }

    /// Removes this rank's shared-memory files (peers keep their mappings).
    pub fn unlink_shm(&mut self) {
        if let Some(s) = self.shm_mut() {
            s.unlink();
        }
    }

    /// Closes what transports keep open for strangers (at finalize), logging each.
    pub fn close_transports(&mut self) {
        for t in &mut self.transports {
            if let AnyTransport::Tcp(t) = t {
                t.close();
            }
        }
    }

    /// The name of the transport that reaches world rank `rank` (`None`: unreachable).
    #[cfg(test)]
    pub fn transport_of(&self, rank: u32) -> Option<&'static str> {
        let t = *self.route.get(rank as usize)?;
        self.transports.get(t as usize).map(AnyTransport::name)
    }

    /// The transport index for a send to world rank `to`, or why there is none.
    #[inline]
    fn route_to(&self, to: u32) -> Result<usize> {
        match self.route.get(to as usize) {
            Some(&t) if t < BROKEN => Ok(t as usize),
            Some(&BROKEN) => Err(self.broken_error(to)),
            Some(_) => Err(Error::new(
                ErrorClass::Rank,
                format!(
                    "no transport reaches world rank {to} from rank {}",
                    self.proto.me
                ),
            )),
            None => Err(Error::new(
                ErrorClass::Rank,
                format!("world rank {to} is not in this job"),
            )),
        }
    }

    #[cold]
    fn broken_error(&self, peer: u32) -> Error {
        let cause = self
            .fault
            .as_ref()
            .map_or_else(String::new, |e| format!(": {e}"));
        Error::new(
            ErrorClass::Other,
            format!("communication with world rank {peer} broke earlier{cause}"),
        )
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
        // The common small send: one register back, no request, no `Result` through memory.
        if mode != SendMode::Synchronous {
            if let Some(&t) = self.route.get(to as usize).filter(|&&t| t < BROKEN) {
                if let Some(AnyTransport::Shm(tr)) = self.transports.get_mut(t as usize) {
                    // SAFETY: forwarded from our caller.
                    if unsafe { self.proto.try_isend_inline(tr.link(), buf, len, to, env) } {
                        return Ok(None);
                    }
                }
            }
        }
        // SAFETY: forwarded from our caller.
        unsafe { self.isend_general(mode, buf, len, to, env) }
    }

    /// [`isend`](Self::isend) of everything but the common small send: every protocol, every
    /// transport, every error.
    ///
    /// # Safety
    /// As for [`isend`](Self::isend).
    #[inline(never)]
    unsafe fn isend_general(
        &mut self,
        mode: SendMode,
        buf: *const u8,
        len: usize,
        to: u32,
        env: Envelope,
    ) -> Result<Option<ReqId>> {
        let t = self.route_to(to)?;
        let proto = &mut self.proto;
        // One transport's protocol code inlined here; messages to oneself take a call.
        let r = match &mut self.transports[t] {
            // SAFETY: forwarded from our caller.
            AnyTransport::Shm(tr) => unsafe { proto.isend(tr.link(), mode, buf, len, to, env) },
            // SAFETY: forwarded from our caller.
            AnyTransport::Tcp(tr) => unsafe { proto.isend(tr.link(), mode, buf, len, to, env) },
            // SAFETY: forwarded from our caller.
            AnyTransport::SelfLoop(_) => return unsafe { self.isend_self(mode, buf, len, env) },
        };
        self.after_start();
        if let Ok(Some(id)) = &r {
            // Only a send still in flight: an eager one done at once skips this.
            self.proto.reqs.set_ctx(id.idx(), env.ctx);
        }
        r
    }

    /// [`isend`](Self::isend) to ourselves: through the self transport, delivered at once.
    ///
    /// # Safety
    /// As for [`isend`](Self::isend).
    #[inline(never)]
    unsafe fn isend_self(
        &mut self,
        mode: SendMode,
        buf: *const u8,
        len: usize,
        env: Envelope,
    ) -> Result<Option<ReqId>> {
        let me = self.proto.me;
        let AnyTransport::SelfLoop(tr) = &mut self.transports[SELF as usize] else {
            unreachable!("the self transport comes first");
        };
        // SAFETY: forwarded from our caller.
        let r = unsafe { self.proto.isend(tr.link(), mode, buf, len, me, env) };
        self.drain_self();
        self.after_start();
        if let Ok(Some(id)) = &r {
            self.proto.reqs.set_ctx(id.idx(), env.ctx);
        }
        r
    }

    /// Delivers what we sent ourselves at once, as if it had been matched in place.
    fn drain_self(&mut self) {
        let AnyTransport::SelfLoop(s) = &mut self.transports[SELF as usize] else {
            return;
        };
        while s.has_arrival() {
            // The self transport cannot fail to poll.
            let _ = s.poll(usize::MAX, &mut self.proto);
        }
    }

    /// Acts on faults a start found (a send that could not reach its peer midway).
    #[inline]
    fn after_start(&mut self) {
        if !self.proto.faults.is_empty() {
            self.handle_faults();
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
        // SAFETY: forwarded from our caller.
        unsafe { self.irecv_from(buf, cap, ctx, src, tag, None) }
    }

    /// Like [`irecv`](Self::irecv) for a receive naming its source (world rank `src_world`):
    /// a large receive that stays posted may advertise its buffer to that source.
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
        if src == PROC_NULL {
            return Ok(RecvStart::Done(Status::proc_null()));
        }
        if let Some(u) = self.proto.matcher.take_unexpected(ctx, src, tag) {
            // SAFETY: forwarded from our caller.
            let r = unsafe { self.recv_unexpected(u, buf, cap) };
            if let RecvStart::Pending(id) = &r {
                self.proto.reqs.set_ctx(id.idx(), ctx);
            }
            return Ok(r);
        }
        let peer = match src_world {
            Some(w) => {
                // Only after a fault can a reachable peer have become unreachable.
                if self.fault.is_some() {
                    self.route_to(w)?;
                }
                w
            }
            None => u32::MAX,
        };
        // A posted receive carries its context in its state: nothing to record here.
        let id = self.proto.alloc(State::Recv { buf, cap, ctx }, peer);
        self.proto.matcher.post(
            ctx,
            Posted {
                src,
                tag,
                req: id.idx(),
            },
        );
        if let (Some(w), true) = (src_world, cap > self.advert_min) {
            if let Some(tr) = self
                .route
                .get(w as usize)
                .and_then(|&t| self.transports.get_mut(t as usize))
            {
                let proto = &mut self.proto;
                with_transport!(tr, tr => {
                    proto.maybe_advertise(tr.link(), id, buf, cap, ctx, src, tag, w)
                });
                self.after_start();
            }
        }
        Ok(RecvStart::Pending(id))
    }

    /// Receives a message already taken from the unexpected queue (also matched probe).
    ///
    /// # Safety
    /// As for [`irecv`](Self::irecv).
    pub unsafe fn recv_unexpected(&mut self, u: Unexpected, buf: *mut u8, cap: usize) -> RecvStart {
        let from = u.from;
        let t = self
            .route
            .get(from as usize)
            .copied()
            .unwrap_or(UNREACHABLE);
        let proto = &mut self.proto;
        let id = if t >= BROKEN {
            // Cannot happen (the message came from somewhere); keep the request failable.
            let id = proto.alloc(
                State::Recv {
                    buf,
                    cap,
                    ctx: u.env.ctx,
                },
                from,
            );
            proto.reqs.complete(
                id.idx(),
                Status {
                    error: Some(ErrorClass::Intern),
                    ..Status::default()
                },
            );
            id
        } else {
            // SAFETY: forwarded from our caller.
            with_transport!(&mut self.transports[t as usize], tr => unsafe {
                proto.recv_unexpected(tr.link(), u, buf, cap)
            })
        };
        if t == SELF {
            self.drain_self();
        }
        self.after_start();
        match self.proto.reqs.take_if_done(id) {
            Some(st) => RecvStart::Done(st),
            None => RecvStart::Pending(id),
        }
    }

    /// The envelope and length of the earliest unexpected message a receive would match.
    pub fn iprobe(&mut self, ctx: u32, src: i32, tag: i32) -> Option<Status> {
        self.proto
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
        self.proto.matcher.take_unexpected(ctx, src, tag)
    }

    /// If request `id` is complete, frees it and returns its status.
    #[inline]
    pub fn test(&mut self, id: ReqId) -> Option<Status> {
        self.proto.reqs.take_if_done(id)
    }

    /// The status of request `id` if it is complete, without freeing it
    /// (`MPI_Request_get_status`).
    pub fn peek(&mut self, id: ReqId) -> Option<Status> {
        self.proto.reqs.peek_done(id)
    }

    /// Frees request `id` now if complete, else as soon as it completes (`MPI_Request_free`);
    /// false if `id` names no live request.
    pub fn detach(&mut self, id: ReqId) -> bool {
        self.proto.reqs.detach(id)
    }

    /// A request already complete with `status`, for an operation that finished as it started.
    pub fn completed(&mut self, status: Status) -> ReqId {
        self.proto.reqs.alloc_done(status)
    }

    /// A request for an operation outside the library (`MPI_Grequest_start`): pending until
    /// [`complete_external`](Self::complete_external).
    pub fn start_external(&mut self) -> ReqId {
        self.proto.reqs.alloc(State::External)
    }

    /// Completes external request `id` with an empty status; false if `id` is no pending
    /// external request.
    pub fn complete_external(&mut self, id: ReqId) -> bool {
        if !matches!(self.proto.reqs.state(id), Some(State::External)) {
            return false;
        }
        self.proto.reqs.complete(id.idx(), Status::default());
        true
    }

    /// Whether `id` names a request not yet collected.
    pub fn is_live(&mut self, id: ReqId) -> bool {
        self.proto.reqs.is_live(id)
    }

    /// Whether `id` is complete (not freed).
    pub fn is_done(&mut self, id: ReqId) -> bool {
        self.proto.reqs.is_done(id)
    }

    /// Cancels a pending receive. Returns false if it already matched (it then completes
    /// normally). Sends cannot be cancelled once started.
    pub fn cancel(&mut self, id: ReqId) -> bool {
        let Some(&mut State::Recv { ctx, .. }) = self.proto.reqs.state(id) else {
            return false;
        };
        if self.proto.advertised.contains(&id.idx()) {
            // The sender may be writing into the buffer right now.
            return false;
        }
        if self.proto.matcher.cancel(ctx, id.idx()) {
            self.proto.reqs.complete(
                id.idx(),
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
        self.start_running(Running::Owned(s))
    }

    /// Starts a run of schedule `s`, kept by its owner for later runs and locked by it for
    /// this one (see [`Running::Lent`]); the returned request completes when the run
    /// finishes, and the lock is released then.
    ///
    /// A run that completes in its first step (a small shared-memory collective whose peers
    /// have all arrived) takes no request.
    pub fn start_lent(&mut self, s: LentRun) -> RecvStart {
        let mut s = Running::Lent(s);
        let parked = match self.step_one(&mut s) {
            Stepped::Running => false,
            Stepped::Unlocked => true,
            Stepped::Done(status, user_drop) => {
                if user_drop {
                    self.unlocked.retire(s.retire());
                }
                return RecvStart::Done(status);
            }
        };
        let id = self.proto.alloc(State::Schedule, u32::MAX);
        if parked {
            self.unlocked.park(id, s);
        } else {
            self.schedules.push((id, s));
        }
        RecvStart::Pending(id)
    }

    fn start_running(&mut self, s: Running) -> Result<ReqId> {
        let id = self.proto.alloc(State::Schedule, u32::MAX);
        self.schedules.push((id, s));
        self.advance_schedules();
        Ok(id)
    }

    /// Advances schedule `s`, turning an error into the end of its run with the error in
    /// its status.
    fn step_one(&mut self, s: &mut Running) -> Stepped {
        match s.advance(self) {
            Ok(st) => st,
            Err(e) => Stepped::Done(
                Status {
                    error: Some(e.class()),
                    ..Status::default()
                },
                // A failed schedule is dropped as a finished one is.
                s.drops_user_code(),
            ),
        }
    }

    /// Advances every schedule; one that fails completes its own request with the error.
    fn advance_schedules(&mut self) -> usize {
        let mut list = std::mem::take(&mut self.schedules);
        let mut done = 0;
        let mut i = 0;
        while i < list.len() {
            let (status, user_drop) = match self.step_one(&mut list[i].1) {
                Stepped::Running => {
                    i += 1;
                    continue;
                }
                Stepped::Unlocked => {
                    let (id, s) = list.swap_remove(i);
                    self.unlocked.park(id, s);
                    continue;
                }
                Stepped::Done(status, user_drop) => (status, user_drop),
            };
            let (id, s) = list.swap_remove(i);
            self.proto.reqs.complete(id.idx(), status);
            done += 1;
            if user_drop {
                self.unlocked.retire(s.retire());
            }
        }
        // Schedules started from inside `advance` landed in the (emptied) field.
        list.append(&mut self.schedules);
        self.schedules = list;
        done
    }

    /// The schedules waiting for a caller with the engine unlocked (see
    /// `EngineCell::run_parked`).
    pub fn unlocked_work(&mut self) -> &mut super::progress::UnlockedWork {
        &mut self.unlocked
    }

    /// Takes back parked schedules whose user steps have run; the next progress call
    /// advances them.
    pub fn resume_schedules(&mut self, parked: &mut Vec<(ReqId, Running)>) {
        self.schedules.append(parked);
    }

    /// Whether a point-to-point operation on a context `on` accepts still has to complete
    /// inside the library (see [`Slab::pending_on`](super::request::Slab::pending_on)).
    pub fn pending_on(&self, on: impl Fn(u32) -> bool) -> bool {
        self.proto.reqs.pending_on(on)
    }

    /// Whether fragments this rank owes its peers are still queued.
    pub fn has_outgoing(&self) -> bool {
        !self.proto.pending.is_empty()
            || !self.proto.pushing.is_empty()
            || self.transports.iter().any(AnyTransport::has_outgoing)
    }

    /// Which derived-datatype operations are registered as pieces or chunks (see `iov`);
    /// `None` turns it off.
    pub fn set_iov_policy(&mut self, p: Option<super::iov::IovPolicy>) {
        self.proto.iov_policy = p;
    }

    /// Whether a `len`-byte message in `pieces` pieces should be registered as pieces: a
    /// receive (`send` false) from the policy's smallest message on, as the place a
    /// contiguous or gathered sender's data lands in one copy; a send too, except in the
    /// policy's band of packed sends.
    pub fn wants_iov(&self, len: usize, pieces: u64, send: bool) -> bool {
        self.proto.iov_policy.as_ref().is_some_and(|p| {
            len >= p.min_len
                && !(send && p.packed_sends.contains(&len))
                && pieces > 0
                && (len as u64) / pieces >= p.min_block
        })
    }

    /// Whether a `len`-byte message through a non-contiguous datatype should be registered
    /// as a chunk packer (see `iov`): an eager-size one (in the range given to
    /// [`set_ddt_direct`](Self::set_ddt_direct)) is packed straight into the transport's
    /// cells or block and unpacked straight out of them; a larger one, where the policy
    /// allows, is packed and unpacked chunk by chunk as it is pushed.
    pub fn wants_chunks(&self, len: usize) -> bool {
        (len >= self.ddt_direct.0 && len <= self.ddt_direct.1)
            || self
                .proto
                .iov_policy
                .as_ref()
                .is_some_and(|p| len >= p.min_len)
    }

    /// Messages through non-contiguous datatypes of `min..=max` bytes are registered to be
    /// packed straight into the transport and unpacked straight out of it (none by default;
    /// others are packed whole into a buffer of their own first).
    pub fn set_ddt_direct(&mut self, min: usize, max: usize) {
        self.ddt_direct = (min.max(1), max);
    }

    /// Registers the pieces of a pending operation (see `iov`): the protocol finds them by
    /// the operation's packed bytes, for as long as the caller holds `d`.
    pub fn register_iov(&mut self, d: std::sync::Arc<super::iov::IovDesc>) {
        self.proto.register_iov(d);
    }

    /// Protocol counters so far.
    pub fn stats(&self) -> Stats {
        Stats {
            arena_pulls: self.shm().map_or(0, ShmTransport::arena_reads),
            ..self.proto.stats
        }
    }

    /// Requests not yet collected.
    #[inline]
    pub fn live_requests(&self) -> usize {
        self.proto.reqs.live()
    }

    /// Whether a progress pass would find nothing to do: no arrival, nothing queued to send,
    /// no schedule running. Cheap enough to spin on.
    #[inline]
    pub fn quiet(&self) -> bool {
        // The self transport is drained by the call that feeds it: never polled here.
        !self.transports[1..].iter().any(AnyTransport::has_arrival)
            && self.proto.pending.is_empty()
            && self.proto.pushing.is_empty()
            && self.schedules.is_empty()
    }

    /// Whether schedules are the only work in flight: no transport has an arrival and no
    /// protocol is pending. A waiter may then advance the schedules alone (a shared-memory
    /// collective completes on its peers' arrivals, which no transport poll would show).
    pub fn only_schedules(&self) -> bool {
        !self.schedules.is_empty()
            && !self.transports[1..].iter().any(AnyTransport::has_arrival)
            && self.proto.pending.is_empty()
            && self.proto.pushing.is_empty()
    }

    /// Advances every schedule once, without polling transports; how many completed.
    pub fn step_schedules(&mut self) -> usize {
        self.advance_schedules()
    }

    /// Polls transports and advances every protocol; returns how much work it did. Errors
    /// land in the statuses of the operations they belong to.
    #[inline]
    pub fn progress(&mut self) -> usize {
        let mut n = 0;
        // The self transport is drained by the call that feeds it (`drain_self`).
        for (i, t) in self.transports.iter_mut().enumerate().skip(1) {
            if self.dead[i] {
                continue;
            }
            let proto = &mut self.proto;
            match with_transport!(t, tr => tr.poll(64, proto)) {
                Ok(k) => n += k,
                Err(error) => {
                    // The receive queue itself is corrupt: nothing more arrives through it.
                    self.dead[i] = true;
                    proto.faults.push(Fault { peer: None, error });
                }
            }
        }
        if !self.proto.pending.is_empty() {
            n += self.flush_pending();
        }
        if !self.proto.pushing.is_empty() {
            n += self.push_chunks();
        }
        if !self.schedules.is_empty() {
            n += self.advance_schedules();
        }
        if !self.proto.faults.is_empty() {
            self.handle_faults();
        }
        n
    }

    #[cold]
    fn flush_pending(&mut self) -> usize {
        let mut n = 0;
        while let Some(to) = self.proto.pending.front().map(|p| p.to) {
            let t = self.route[to as usize];
            if t >= BROKEN {
                // Queued (a reply) after its peer broke: it goes nowhere.
                self.drop_pending_head();
                continue;
            }
            let t = t as usize;
            let proto = &mut self.proto;
            let k = with_transport!(&mut self.transports[t], tr => proto.flush_head(tr.link()));
            n += k;
            if k == 0 || !self.proto.faults.is_empty() {
                break;
            }
        }
        n
    }

    /// Drops the first queued fragment, failing the send it completes, if any.
    #[cold]
    fn drop_pending_head(&mut self) {
        if let Some(p) = self.proto.pending.pop_front() {
            self.proto.pending_to[p.to as usize] -= 1;
            if let Some(id) = p.complete {
                self.proto.reqs.complete(
                    id.idx(),
                    Status {
                        error: Some(ErrorClass::Other),
                        ..Status::default()
                    },
                );
            }
        }
    }

    #[cold]
    fn push_chunks(&mut self) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < self.proto.pushing.len() {
            let id = self.proto.pushing[i];
            let Some(to) = self.proto.push_target(id) else {
                self.proto.pushing.swap_remove(i);
                continue;
            };
            let t = self.route[to as usize];
            if t >= BROKEN {
                self.proto.pushing.swap_remove(i);
                self.proto.reqs.complete(
                    id.idx(),
                    Status {
                        error: Some(ErrorClass::Other),
                        ..Status::default()
                    },
                );
                continue;
            }
            let t = t as usize;
            let proto = &mut self.proto;
            let (k, finished) =
                with_transport!(&mut self.transports[t], tr => proto.push(tr.link(), id));
            n += k;
            if finished {
                self.proto.pushing.swap_remove(i);
            } else {
                i += 1;
            }
        }
        n
    }

    /// Acts on faults: ends the job, or fails every operation they affect.
    #[cold]
    fn handle_faults(&mut self) {
        let faults = std::mem::take(&mut self.proto.faults);
        for f in faults {
            if self.fault.is_none() {
                self.fault = Some(f.error.clone());
            }
            if self.mode == FaultMode::Abort {
                let msg = format!(
                    "rank {}: fatal communication fault in {}: {}",
                    self.proto.me, self.call, f.error
                );
                match &self.abort {
                    Some(hook) => hook(&msg),
                    None => {
                        eprintln!("oxmpi: {msg}");
                        std::process::abort();
                    }
                }
            }
            self.fail_peer(f.peer, &f.error);
        }
    }

    /// Completes every operation with `peer` (every remote operation if `None`) with `error`,
    /// and refuses new ones.
    fn fail_peer(&mut self, peer: Option<u32>, error: &Error) {
        let me = self.proto.me;
        let hit = |p: u32| p != me && peer.is_none_or(|q| q == p);
        for (r, t) in self.route.iter_mut().enumerate() {
            if hit(r as u32) && *t != UNREACHABLE {
                *t = BROKEN;
            }
        }
        let class = Some(error.class());
        let proto = &mut self.proto;
        // Queued fragments to the peer go nowhere now.
        let mut kept = std::collections::VecDeque::with_capacity(proto.pending.len());
        for p in std::mem::take(&mut proto.pending) {
            if hit(p.to) {
                proto.pending_to[p.to as usize] -= 1;
                if let Some(id) = p.complete {
                    proto.reqs.complete(
                        id.idx(),
                        Status {
                            error: class,
                            ..Status::default()
                        },
                    );
                }
            } else {
                kept.push_back(p);
            }
        }
        proto.pending = kept;
        for id in proto.reqs.live_ids() {
            let p = proto
                .peer_of
                .get(id.idx() as usize)
                .copied()
                .unwrap_or(u32::MAX);
            // Wildcard receives cannot tell whether the broken peer was to send to them.
            let affected = if p == u32::MAX {
                matches!(proto.reqs.state(id), Some(State::Recv { .. }))
            } else {
                hit(p)
            };
            if !affected {
                continue;
            }
            match proto.reqs.state(id) {
                Some(&mut State::Recv { ctx, .. }) => {
                    proto.matcher.cancel(ctx, id.idx());
                    proto.advertised.retain(|&r| r != id.idx());
                }
                Some(State::Done | State::Free | State::Schedule | State::External) | None => {
                    continue
                }
                _ => {}
            }
            proto.pushing.retain(|&r| r != id);
            proto.reqs.complete(
                id.idx(),
                Status {
                    error: class,
                    ..Status::default()
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::p2p::matching::ANY_TAG;
    use crate::transport::shm::{Resolver, ShmConfig, ShmLayout};
    use crate::transport::Link;

    fn envelope(tag: i32) -> Envelope {
        Envelope {
            ctx: 0,
            src: 0,
            tag,
        }
    }

    fn wait(e: &mut Engine, id: ReqId) -> Status {
        for _ in 0..1_000_000 {
            if let Some(st) = e.test(id) {
                return st;
            }
            e.progress();
        }
        panic!("request {id:?} never completed");
    }

    #[test]
    fn messages_to_oneself_match_in_order_in_every_mode() {
        let mut e = Engine::new(0, 1, None, &[]);
        e.set_fault_mode(FaultMode::Return);
        let a = [1u8, 2, 3];
        let b = vec![9u8; 300_000];
        // SAFETY: the buffers outlive the requests, which complete below.
        unsafe {
            assert!(e
                .isend(SendMode::Standard, a.as_ptr(), 3, 0, envelope(5))
                .unwrap()
                .is_none());
            let s = e
                .isend(SendMode::Synchronous, b.as_ptr(), b.len(), 0, envelope(5))
                .unwrap()
                .expect("a synchronous send waits for its match");
            assert!(!e.is_done(s));
            let mut got = [0u8; 3];
            let RecvStart::Done(st) = e.irecv(got.as_mut_ptr(), 3, 0, -1, -2).unwrap() else {
                panic!("the first message is there already");
            };
            assert_eq!((st.tag, st.bytes, got), (5, 3, a));
            let mut big = vec![0u8; b.len()];
            let RecvStart::Done(st) = e.irecv(big.as_mut_ptr(), big.len(), 0, 0, 5).unwrap() else {
                panic!("the second message is there already");
            };
            assert_eq!(st.bytes as usize, b.len());
            assert_eq!(big, b);
            assert_eq!(wait(&mut e, s).bytes as usize, b.len(), "acknowledged");
        }
        assert_eq!(e.live_requests(), 0);
        assert_eq!(e.transport_of(0), Some("self"));
    }

    #[test]
    fn an_unreachable_rank_fails_only_the_operation_naming_it() {
        let mut e = Engine::new(0, 2, None, &[]);
        let x = [0u8; 4];
        // SAFETY: nothing is sent.
        let err =
            unsafe { e.isend(SendMode::Standard, x.as_ptr(), 4, 1, envelope(0)) }.unwrap_err();
        assert_eq!(err.class(), ErrorClass::Rank);
        assert!(err.to_string().contains("world rank 1"), "{err}");
        assert_eq!(e.transport_of(1), None);
        assert_eq!(e.progress(), 0);
        assert!(e.fault().is_none(), "a refused start is not a fault");
    }

    fn shm_pair(tag: &str) -> (Engine, Engine) {
        shm_pair_with(tag, 0, 0)
    }

    /// A pair whose lone rendezvous messages of `push_min..single_copy_min` bytes are pushed.
    fn shm_pair_with(tag: &str, push_min: usize, single_copy_min: usize) -> (Engine, Engine) {
        let layout = ShmLayout {
            fifo_cells: 256,
            pool_blocks: 8,
            block_size: 4096,
        };
        let config = ShmConfig {
            layout,
            inline_max: 256,
            eager_limit: 16384,
            coll_eager_limit: 16384,
            single_copy: true,
            recv_write: true,
            push_min,
            push_blocks: 2,
            single_copy_min,
            arena_bytes: 1 << 20,
        };
        let path = |tag: &str, r: u32| format!("/dev/shm/oxmpi.e{}{tag}.{r}", std::process::id());
        let make = |r: u32| {
            let owned = tag.to_owned();
            let resolve: Resolver = Box::new(move |x| Ok(path(&owned, x)));
            let t =
                ShmTransport::create(r, 2, &path(tag, r), config, vec![1 - r], resolve).unwrap();
            let mut e = Engine::new(r, 2, Some(t), &[1 - r]);
            e.set_fault_mode(FaultMode::Return);
            e
        };
        (make(0), make(1))
    }

    /// The small-send fast path must not overtake sends queued behind a full ring, and is
    /// taken again once the queue has drained.
    #[test]
    fn small_sends_stay_behind_queued_ones_and_go_inline_again_after() {
        let (mut a, mut b) = shm_pair("order");
        let data: Vec<u8> = (0..=255u8).collect();
        let mut queued = Vec::new();
        let mut sent = 0i32;
        // Fill the 256-cell ring (nobody polls it) until sends queue.
        while queued.len() < 3 {
            // SAFETY: `data` outlives the request, completed below.
            let r = unsafe {
                a.isend(
                    SendMode::Standard,
                    &data[sent as usize % 256],
                    1,
                    1,
                    envelope(sent),
                )
            };
            queued.extend(r.unwrap());
            sent += 1;
        }
        // The receiver drains the ring: room again, but the queue must go first.
        assert!(b.progress() > 0);
        // SAFETY: `data` outlives the request, completed below.
        let r = unsafe {
            a.isend(
                SendMode::Standard,
                &data[sent as usize % 256],
                1,
                1,
                envelope(sent),
            )
        };
        queued.extend(r.unwrap());
        assert_eq!(queued.len(), 4, "a send behind queued ones is queued too");
        sent += 1;
        while queued.iter().any(|&id| !a.is_done(id)) {
            a.progress();
            b.progress();
        }
        for id in queued {
            assert_eq!(a.test(id).map(|st| st.error), Some(None));
        }
        // SAFETY: `data` outlives the request, completed below.
        let r = unsafe {
            a.isend(
                SendMode::Standard,
                &data[sent as usize % 256],
                1,
                1,
                envelope(sent),
            )
        };
        assert!(r.unwrap().is_none(), "inline again once the queue is empty");
        sent += 1;
        for tag in 0..sent {
            let mut got = [0u8; 1];
            // SAFETY: `got` outlives the request, waited for here.
            let st = match unsafe { b.irecv(got.as_mut_ptr(), 1, 0, 0, ANY_TAG).unwrap() } {
                RecvStart::Done(st) => st,
                RecvStart::Pending(id) => wait(&mut b, id),
            };
            assert_eq!(
                (st.tag, got[0]),
                (tag, data[tag as usize % 256]),
                "in order"
            );
        }
        assert_eq!(a.live_requests(), 0);
        assert_eq!(b.live_requests(), 0);
    }

    #[test]
    fn every_protocol_delivers_every_byte_over_shm() {
        let (mut a, mut b) = shm_pair("proto");
        for (i, len) in [0usize, 1, 200, 3000, 4096, 10_000, 16384, 16385, 100_000]
            .into_iter()
            .enumerate()
        {
            let data: Vec<u8> = (0..len).map(|k| (k * 13 + i) as u8).collect();
            let mut got = vec![0u8; len];
            // SAFETY: both buffers outlive their requests, waited for below.
            unsafe {
                let s = a
                    .isend(
                        SendMode::Standard,
                        data.as_ptr(),
                        len,
                        1,
                        envelope(i as i32),
                    )
                    .unwrap();
                let r = match b
                    .irecv_from(got.as_mut_ptr(), len, 0, 0, i as i32, Some(0))
                    .unwrap()
                {
                    RecvStart::Done(st) => st,
                    RecvStart::Pending(id) => {
                        let mut st = None;
                        for _ in 0..1_000_000 {
                            a.progress();
                            b.progress();
                            if let Some(x) = b.test(id) {
                                st = Some(x);
                                break;
                            }
                        }
                        st.expect("receive completes")
                    }
                };
                if let Some(s) = s {
                    while a.test(s).is_none() {
                        a.progress();
                        b.progress();
                    }
                }
                assert_eq!(r.bytes as usize, len);
                assert_eq!(r.error, None);
            }
            assert_eq!(got, data, "size {len}");
        }
        assert!(
            a.stats().single_copy_pulls + a.stats().pushed + b.stats().single_copy_pulls > 0
                || b.stats().recv_writes + a.stats().recv_writes > 0
        );
    }

    /// Four 20 000-byte rendezvous messages from `a` announced before `b` posts their
    /// receives, each received and completed before the next is posted; `a` has a receive
    /// of its own posted while it sends if `sender_busy`. Returns `b`'s single-copy pulls
    /// and `a`'s pushed messages.
    fn window_announced_before_its_receives(tag: &str, sender_busy: bool) -> (u64, u64) {
        let (mut a, mut b) = shm_pair_with(tag, 0, 1 << 20);
        let len = 20_000;
        let data: Vec<Vec<u8>> = (0..4)
            .map(|m| (0..len).map(|k| (k * 7 + m * 31) as u8).collect())
            .collect();
        let mut got = vec![vec![0u8; len]; 4];
        let mut other = [0u8; 8];
        // SAFETY: every buffer outlives its request, each waited for (or cancelled) below.
        unsafe {
            let busy = sender_busy.then(|| {
                match a
                    .irecv_from(other.as_mut_ptr(), 8, 0, 1, 99, Some(1))
                    .unwrap()
                {
                    RecvStart::Pending(id) => id,
                    RecvStart::Done(_) => panic!("nothing was sent with tag 99"),
                }
            });
            let sends: Vec<_> = data
                .iter()
                .map(|d| {
                    a.isend(SendMode::Standard, d.as_ptr(), len, 1, envelope(5))
                        .unwrap()
                })
                .collect();
            // Every announcement arrives before any receive is posted.
            for _ in 0..100 {
                a.progress();
                b.progress();
            }
            // Each receive completes before the next is posted: a finished push leaves no
            // trace, so only the messages still waiting tell the receiver it is not alone.
            let done = |e: &mut Engine, id: ReqId, a: &mut Engine| {
                for _ in 0..1_000_000 {
                    a.progress();
                    e.progress();
                    if e.test(id).is_some() {
                        return true;
                    }
                }
                false
            };
            for g in got.iter_mut() {
                if let RecvStart::Pending(id) =
                    b.irecv_from(g.as_mut_ptr(), len, 0, 0, 5, Some(0)).unwrap()
                {
                    assert!(done(&mut b, id, &mut a), "receive completes");
                }
            }
            for id in sends.into_iter().flatten() {
                assert!(done(&mut a, id, &mut b), "send completes");
            }
            if let Some(id) = busy {
                assert!(a.cancel(id), "the unmatched receive is cancelled");
                assert!(done(&mut a, id, &mut b), "the cancelled receive completes");
            }
        }
        assert_eq!(got, data);
        (b.stats().single_copy_pulls, a.stats().pushed)
    }

    /// A rendezvous message from a sender with a receive of its own posted is pushed only
    /// when it is alone: messages that arrived before their receives were posted (a window,
    /// found unexpected one after another) are pulled while others wait behind them, and
    /// only the last, alone by then, is pushed.
    #[test]
    fn messages_from_a_busy_sender_waiting_behind_one_another_are_pulled() {
        assert_eq!(window_announced_before_its_receives("busy", true), (3, 1));
    }

    /// A sender with nothing posted to receive says so in its `RTS`: its core is free to
    /// copy, so every message of its window is pushed.
    #[test]
    fn messages_from_an_idle_sender_are_pushed() {
        assert_eq!(window_announced_before_its_receives("idle", false), (0, 4));
    }

    /// A large receive posted for each of many small messages advertises every time; the
    /// sender drops each advert with the message it was for (eager, never written), so they
    /// do not pile up, and a large message after them is still written into its receive.
    #[test]
    fn adverts_for_small_messages_do_not_pile_up() {
        let (mut a, mut b) = shm_pair("adverts");
        let cap = 100_000;
        let mut got = vec![0u8; cap];
        for i in 0..200u8 {
            let x = [i; 8];
            assert_eq!(advertised_exchange(&mut a, &mut b, &x, &mut got), 8);
            assert_eq!(got[..8], x);
            assert!(
                a.proto.adverts.len() <= 1,
                "{} adverts held",
                a.proto.adverts.len()
            );
        }
        assert_eq!(a.stats().recv_writes, 0, "small messages go eager");
        let big: Vec<u8> = (0..cap).map(|k| (k * 7) as u8).collect();
        assert_eq!(advertised_exchange(&mut a, &mut b, &big, &mut got), cap);
        assert_eq!(got, big);
        assert_eq!(a.stats().recv_writes, 1, "{:?}", a.stats());
    }

    /// `b` posts a receive of all of `got` from rank 0 (tag 7), which advertises it; once the
    /// advert has reached `a`, `a` sends `data`. Returns the bytes received.
    fn advertised_exchange(a: &mut Engine, b: &mut Engine, data: &[u8], got: &mut [u8]) -> usize {
        // SAFETY: `got` and `data` outlive both requests, each waited for here.
        unsafe {
            let id = match b
                .irecv_from(got.as_mut_ptr(), got.len(), 0, 0, 7, Some(0))
                .unwrap()
            {
                RecvStart::Pending(id) => id,
                RecvStart::Done(_) => panic!("nothing was sent yet"),
            };
            for _ in 0..10 {
                a.progress();
            }
            let s = a
                .isend(
                    SendMode::Standard,
                    data.as_ptr(),
                    data.len(),
                    1,
                    envelope(7),
                )
                .unwrap();
            let st = wait_both(b, id, a);
            if let Some(s) = s {
                wait_both(a, s, b);
            }
            st.bytes as usize
        }
    }

    /// Progresses `e` and `other` until `id` of `e` completes.
    fn wait_both(e: &mut Engine, id: ReqId, other: &mut Engine) -> Status {
        for _ in 0..1_000_000 {
            if let Some(st) = e.test(id) {
                return st;
            }
            e.progress();
            other.progress();
        }
        panic!("request {id:?} never completed");
    }

    /// A lone rendezvous message is copied once below `push_min` and from `single_copy_min`
    /// on, and pushed in between.
    #[test]
    fn lone_messages_are_pushed_only_in_the_pushed_band() {
        let (mut a, mut b) = shm_pair_with("band", 32_768, 65_536);
        for (i, (len, pushed)) in [(20_000usize, false), (40_000, true), (100_000, false)]
            .into_iter()
            .enumerate()
        {
            let data: Vec<u8> = (0..len).map(|k| (k * 13 + i) as u8).collect();
            let mut got = vec![0u8; len];
            let before = (b.stats().single_copy_pulls, a.stats().pushed);
            // SAFETY: both buffers outlive their requests, waited for below.
            unsafe {
                let s = a
                    .isend(SendMode::Standard, data.as_ptr(), len, 1, envelope(7))
                    .unwrap();
                // The announcement arrives before the receive is posted: no advert.
                for _ in 0..100 {
                    a.progress();
                    b.progress();
                }
                // Both sides progress until `id` completes on `on` (bounded).
                let both = |a: &mut Engine, b: &mut Engine, on_b: bool, id: ReqId| {
                    for _ in 0..1_000_000 {
                        a.progress();
                        b.progress();
                        if let Some(st) = if on_b { b.test(id) } else { a.test(id) } {
                            return st;
                        }
                    }
                    panic!("{len} bytes: request {id:?} never completed");
                };
                if let RecvStart::Pending(id) = b
                    .irecv_from(got.as_mut_ptr(), len, 0, 0, 7, Some(0))
                    .unwrap()
                {
                    let st = both(&mut a, &mut b, true, id);
                    assert_eq!((st.bytes as usize, st.error), (len, None));
                }
                if let Some(id) = s {
                    assert_eq!(both(&mut a, &mut b, false, id).error, None);
                }
            }
            assert_eq!(got, data, "{len} bytes");
            let after = (b.stats().single_copy_pulls, a.stats().pushed);
            assert_eq!(
                (after.0 > before.0, after.1 > before.1),
                (!pushed, pushed),
                "{len} bytes: {:?} {:?}",
                a.stats(),
                b.stats()
            );
        }
    }

    #[test]
    fn by_default_a_fault_calls_the_abort_hook_naming_rank_call_and_cause() {
        let (mut a, mut b) = shm_pair("abort");
        b.set_fault_mode(FaultMode::Abort);
        let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let log = said.clone();
        b.set_abort_hook(Box::new(move |m| log.lock().unwrap().push(m.to_owned())));
        b.enter("MPI_Recv");
        let AnyTransport::Shm(t) = &mut a.transports[1] else {
            unreachable!()
        };
        // A fragment kind no protocol knows.
        t.link().send(1, 200, &[0; 16], &[]).unwrap();
        b.progress();
        let said = said.lock().unwrap();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("rank 1: fatal communication fault in MPI_Recv: ")
                && said[0].contains("unknown fragment kind 200 from rank 0"),
            "{said:?}"
        );
    }

    #[test]
    fn a_corrupt_fragment_fails_the_peer_operations_and_nothing_else() {
        let (mut a, mut b) = shm_pair("fault");
        let mut from_a = [0u8; 8];
        let mut from_self = [0u8; 8];
        let mine = [7u8; 8];
        // SAFETY: the buffers outlive the requests, collected below.
        unsafe {
            let RecvStart::Pending(r) = b
                .irecv_from(from_a.as_mut_ptr(), 8, 0, 0, 1, Some(0))
                .unwrap()
            else {
                panic!("nothing sent yet");
            };
            let RecvStart::Pending(r_self) = b
                .irecv_from(from_self.as_mut_ptr(), 8, 0, 1, 2, Some(1))
                .unwrap()
            else {
                panic!("nothing sent yet");
            };
            // An ACK for a send that does not exist: a protocol fault of rank 0.
            let mut hdr = [0u8; 16];
            hdr[0..4].copy_from_slice(&999u32.to_le_bytes());
            let AnyTransport::Shm(t) = &mut a.transports[1] else {
                unreachable!()
            };
            t.link()
                .send(1, super::super::wire::am::ACK, &hdr, &[])
                .unwrap();
            b.progress();
            let st = b.test(r).expect("the receive from the faulty peer failed");
            assert_eq!(st.error, Some(ErrorClass::Intern));
            assert!(b.fault().unwrap().to_string().contains("unknown send 999"));
            assert!(
                !b.is_done(r_self),
                "the receive from ourselves is untouched"
            );
            let err = b
                .isend(SendMode::Standard, mine.as_ptr(), 8, 0, envelope(1))
                .unwrap_err();
            assert!(err.to_string().contains("broke"), "{err}");
            assert!(b
                .isend(
                    SendMode::Standard,
                    mine.as_ptr(),
                    8,
                    1,
                    Envelope {
                        src: 1,
                        ..envelope(2)
                    }
                )
                .unwrap()
                .is_none());
            assert_eq!(b.test(r_self).unwrap().bytes, 8);
        }
        assert_eq!(from_self, mine);
    }
}
