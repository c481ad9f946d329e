//! Requests: the engine's record of an operation in flight, kept in a slab so that starting
//! and completing operations allocates nothing once the slab has grown.

use crate::error::ErrorClass;

/// What a completed operation reports (`MPI_Status`): the one status type of every layer.
///
/// `error` is this operation's own error class (the C layer's `MPI_ERROR` field, which
/// `MPI_ERR_IN_STATUS` points to); [`count`](Status::count) counts elements of the type the
/// operation was given, not bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Status {
    /// Rank of the sender in the communicator.
    pub source: i32,
    /// Tag of the message.
    pub tag: i32,
    /// Bytes received (or sent).
    pub bytes: u64,
    /// Error of this operation, if any (e.g. truncation).
    pub error: Option<ErrorClass>,
    /// Whether the operation was cancelled.
    pub cancelled: bool,
    /// Size of one element of the operation's buffer (0 counts as 1: bytes).
    pub(crate) elem: usize,
}

impl Status {
    /// The status of an operation with `MPI_PROC_NULL`: source `PROC_NULL`, tag `ANY_TAG`,
    /// no data.
    pub fn proc_null() -> Status {
        Status {
            source: super::matching::PROC_NULL,
            tag: super::matching::ANY_TAG,
            ..Status::default()
        }
    }

    /// This status, counting in elements of `elem` bytes.
    #[inline]
    pub(crate) fn with_elem(self, elem: usize) -> Status {
        Status { elem, ..self }
    }

    /// Rank of the sender (`MPI_SOURCE`), or `PROC_NULL`.
    pub fn source(&self) -> i32 {
        self.source
    }

    /// Tag of the message (`MPI_TAG`).
    pub fn tag(&self) -> i32 {
        self.tag
    }

    /// Bytes in the message (as received).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Number of elements received (`MPI_Get_count`), or `None` if the byte count is not a
    /// whole number of elements (`MPI_UNDEFINED`).
    pub fn count(&self) -> Option<u64> {
        let elem = self.elem.max(1) as u64;
        self.bytes.is_multiple_of(elem).then_some(self.bytes / elem)
    }

    /// Whether the operation was cancelled (`MPI_Test_cancelled`).
    pub fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// This operation's own error class (`MPI_ERROR`), `None` if it succeeded.
    pub fn error(&self) -> Option<ErrorClass> {
        self.error
    }
}

/// Handle to a request: slot index plus generation, so a stale handle is detected.
///
/// One `u64` (generation high, index low), not two `u32` fields: a pair is stored as two
/// narrow stores and reloaded as one wide load where a receive's start returns through
/// memory, and that failed store forward waited for the ring stores of the message just
/// sent, once per message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReqId(u64);

impl ReqId {
    /// The id of slot `idx` in generation `gen`.
    #[inline(always)]
    pub(crate) const fn new(idx: u32, gen: u32) -> ReqId {
        ReqId(((gen as u64) << 32) | idx as u64)
    }

    /// The slot index.
    #[inline(always)]
    pub(crate) const fn idx(self) -> u32 {
        self.0 as u32
    }

    /// The slot's generation when the id was made.
    #[inline(always)]
    pub(crate) const fn gen(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

// A send's start returns this in two registers (see `Error`): through memory, its reload
// waited for the ring stores of the message just sent, once per message.
const _: () = assert!(std::mem::size_of::<crate::Result<Option<ReqId>>>() <= 16);

/// Where a request stands.
#[derive(Debug, Clone, Copy)]
pub enum State {
    /// Slot unused.
    Free,
    /// Finished; waiting for the user to collect its status.
    Done,
    /// A receive posted in the matcher, writing to `buf`.
    Recv {
        /// Destination buffer.
        buf: *mut u8,
        /// Its capacity in bytes.
        cap: usize,
        /// Context id (for cancel).
        ctx: u32,
    },
    /// A receive being filled by pushed rendezvous chunks.
    RecvChunks {
        /// Destination buffer.
        buf: *mut u8,
        /// Bytes that will be written (message length capped at the buffer).
        expect: u64,
        /// Full message length (chunks beyond `expect` are dropped).
        total: u64,
        /// Bytes received so far.
        got: u64,
    },
    /// A send waiting for the receiver (ACK, FIN or CTS).
    SendWait {
        /// Data start (kept for a CTS fallback).
        buf: *const u8,
        /// Data length.
        len: usize,
    },
    /// A rendezvous send pushing its data in chunks.
    SendPush {
        /// Data start.
        buf: *const u8,
        /// Data length.
        len: usize,
        /// Next byte to push.
        offset: usize,
        /// Destination world rank.
        to: u32,
        /// Receiver's request id.
        rreq: u32,
    },
    /// An eager send waiting in the pending queue for transport room.
    SendQueued,
    /// A multi-step operation (collective) advanced by the engine's schedule list.
    Schedule,
    /// An operation outside the library (a generalized request, `MPI_Grequest_start`): only
    /// its owner completes it ([`Engine::complete_external`](super::engine::Engine::complete_external)).
    External,
}

#[derive(Debug)]
struct Slot {
    gen: u32,
    state: State,
    status: Status,
    /// Nobody will collect the status (`MPI_Request_free`): the slot is freed on completion.
    detached: bool,
    /// Context id of the point-to-point operation, or [`NO_CTX`] (untagged).
    ctx: u32,
}

/// [`Slot::ctx`] of an operation whose start did not record its context.
pub const NO_CTX: u32 = u32::MAX;

/// The request slab.
#[derive(Debug, Default)]
pub struct Slab {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Slab {
    /// Takes a slot for an operation in `state`.
    #[inline(always)]
    pub fn alloc(&mut self, state: State) -> ReqId {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    gen: 0,
                    state: State::Free,
                    status: Status::default(),
                    detached: false,
                    ctx: NO_CTX,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[idx as usize];
        s.gen = s.gen.wrapping_add(1);
        s.state = state;
        s.status = Status::default();
        s.detached = false;
        s.ctx = NO_CTX;
        ReqId::new(idx, s.gen)
    }

    /// Records that the operation at slot `idx` runs on context `ctx` (for
    /// [`pending_on`](Self::pending_on)).
    #[inline]
    pub fn set_ctx(&mut self, idx: u32, ctx: u32) {
        if let Some(s) = self.slots.get_mut(idx as usize) {
            s.ctx = ctx;
        }
    }

    /// Whether an operation on a context `on` accepts still has to complete inside the
    /// library: a send not yet finished (its peer may still need our data or answer), or a
    /// receive nobody will wait for (`MPI_Request_free`). Receives the caller still holds are
    /// the caller's to complete (`MPI_Comm_disconnect` requires it), so they do not count.
    pub fn pending_on(&self, on: impl Fn(u32) -> bool) -> bool {
        self.slots.iter().any(|s| match s.state {
            State::SendWait { .. } | State::SendPush { .. } | State::SendQueued => {
                s.ctx != NO_CTX && on(s.ctx)
            }
            // A posted receive keeps its context in its state (recording it in the slot
            // would cost every receive a store).
            State::Recv { ctx, .. } => s.detached && on(ctx),
            State::RecvChunks { .. } => s.detached && s.ctx != NO_CTX && on(s.ctx),
            State::Free | State::Done | State::Schedule | State::External => false,
        })
    }

    /// Whether some rendezvous send longer than `eager` to a peer `to_peer` accepts (by slot
    /// index) still waits for its receiver or is being pushed. Scans every slot: for callers
    /// that move far more bytes than there are slots.
    pub fn sending_rendezvous(&self, eager: usize, to_peer: impl Fn(usize) -> bool) -> bool {
        self.slots.iter().enumerate().any(|(i, s)| match s.state {
            State::SendWait { len, .. } => len > eager && to_peer(i),
            State::SendPush { .. } => to_peer(i),
            _ => false,
        })
    }

    /// Takes a slot for an operation that finished as it started, holding `status` until it
    /// is collected (the handle layer gives every operation an id).
    pub fn alloc_done(&mut self, status: Status) -> ReqId {
        let id = self.alloc(State::Done);
        self.slots[id.idx() as usize].status = status;
        id
    }

    /// The live slot `id` names, if the handle is current.
    #[inline]
    fn slot(&mut self, id: ReqId) -> Option<&mut Slot> {
        self.slots
            .get_mut(id.idx() as usize)
            .filter(|s| s.gen == id.gen() && !matches!(s.state, State::Free))
    }

    /// The state of the request at slot `idx` (ids carried in wire headers have no generation).
    #[inline]
    pub fn state_at(&mut self, idx: u32) -> Option<&mut State> {
        self.slots
            .get_mut(idx as usize)
            .map(|s| &mut s.state)
            .filter(|s| !matches!(s, State::Free))
    }

    /// The full id of slot `idx`.
    pub fn id_at(&self, idx: u32) -> ReqId {
        ReqId::new(idx, self.slots[idx as usize].gen)
    }

    /// The state of request `id`.
    #[inline]
    pub fn state(&mut self, id: ReqId) -> Option<&mut State> {
        self.slot(id).map(|s| &mut s.state)
    }

    /// Marks slot `idx` finished with `status`.
    #[inline]
    pub fn complete(&mut self, idx: u32, status: Status) {
        if let Some(s) = self.slots.get_mut(idx as usize) {
            if s.detached {
                if !matches!(s.state, State::Free) {
                    s.state = State::Free;
                    s.detached = false;
                    self.free.push(idx);
                }
                return;
            }
            s.state = State::Done;
            s.status = status;
        }
    }

    /// Gives up request `id` (`MPI_Request_free`): freed now if finished, else the moment it
    /// completes. Returns whether `id` named a live request.
    pub fn detach(&mut self, id: ReqId) -> bool {
        let Some(s) = self.slot(id) else {
            return false;
        };
        if matches!(s.state, State::Done) {
            s.state = State::Free;
            self.free.push(id.idx());
        } else {
            s.detached = true;
        }
        true
    }

    /// The status of `id` if it is finished, leaving it to be collected
    /// (`MPI_Request_get_status`).
    pub fn peek_done(&mut self, id: ReqId) -> Option<Status> {
        self.slot(id)
            .filter(|s| matches!(s.state, State::Done))
            .map(|s| s.status)
    }

    /// The status recorded so far for `id`.
    pub fn peek_status(&mut self, id: ReqId) -> Option<Status> {
        self.slot(id).map(|s| s.status)
    }

    /// Records a partial status (source and tag known before the data has arrived).
    pub fn set_status(&mut self, idx: u32, status: Status) {
        if let Some(s) = self.slots.get_mut(idx as usize) {
            s.status = status;
        }
    }

    /// If `id` is finished, frees it and returns its status.
    #[inline]
    pub fn take_if_done(&mut self, id: ReqId) -> Option<Status> {
        let s = self.slot(id)?;
        if !matches!(s.state, State::Done) {
            return None;
        }
        s.state = State::Free;
        let st = s.status;
        self.free.push(id.idx());
        Some(st)
    }

    /// Whether `id` is finished (without freeing it).
    pub fn is_done(&mut self, id: ReqId) -> bool {
        matches!(self.slot(id).map(|s| s.state), Some(State::Done))
    }

    /// Whether `id` names a live request.
    pub fn is_live(&mut self, id: ReqId) -> bool {
        self.slot(id).is_some()
    }

    /// Ids of every request not yet freed (for failing them after a fault; allocates).
    pub fn live_ids(&self) -> Vec<ReqId> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !matches!(s.state, State::Free))
            .map(|(i, s)| ReqId::new(i as u32, s.gen))
            .collect()
    }

    /// Requests not yet freed.
    #[inline]
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_on_counts_only_the_contexts_sends_and_freed_receives() {
        let mut s = Slab::default();
        let on4 = |c: u32| c >> 1 == 2;
        assert!(!s.pending_on(on4), "empty");
        // A send on context 6 (another communicator) and an untagged one: not ours.
        let other = s.alloc(State::SendQueued);
        s.set_ctx(other.idx(), 6);
        s.alloc(State::SendQueued);
        assert!(!s.pending_on(on4));
        // A send in flight on context 5 (the collective half of pair 2) is.
        let mine = s.alloc(State::SendWait {
            buf: std::ptr::null(),
            len: 0,
        });
        s.set_ctx(mine.idx(), 5);
        assert!(s.pending_on(on4));
        s.complete(mine.idx(), Status::default());
        assert!(!s.pending_on(on4), "done, uncollected");
        // A posted receive counts only once freed, by the context in its state.
        let r = s.alloc(State::Recv {
            buf: std::ptr::null_mut(),
            cap: 0,
            ctx: 4,
        });
        assert!(!s.pending_on(on4), "the caller still holds it");
        assert!(s.detach(r));
        assert!(s.pending_on(on4), "freed before it completed");
        s.complete(r.idx(), Status::default());
        assert!(!s.pending_on(on4), "freed on completion");
    }

    #[test]
    fn sending_rendezvous_sees_unfinished_long_sends_to_the_peer() {
        let mut s = Slab::default();
        // Slot i goes to peer i % 2 here.
        let to1 = |i: usize| i % 2 == 1;
        let eager = 100;
        let send = |len| State::SendWait {
            buf: std::ptr::null(),
            len,
        };
        let a = s.alloc(send(1000)); // slot 0: to peer 0
        assert!(!s.sending_rendezvous(eager, to1), "another peer");
        let b = s.alloc(send(100)); // slot 1: a synchronous eager send
        assert!(
            !s.sending_rendezvous(eager, to1),
            "not past the eager limit"
        );
        let c = s.alloc(State::Recv {
            buf: std::ptr::null_mut(),
            cap: 1000,
            ctx: 0,
        }); // slot 2
        let d = s.alloc(send(101)); // slot 3
        assert!(s.sending_rendezvous(eager, to1));
        s.complete(d.idx(), Status::default());
        assert!(!s.sending_rendezvous(eager, to1), "finished");
        if let Some(st) = s.state(b) {
            *st = State::SendPush {
                buf: std::ptr::null(),
                len: 100,
                offset: 0,
                to: 1,
                rreq: 0,
            };
        }
        assert!(s.sending_rendezvous(eager, to1), "being pushed");
        s.complete(b.idx(), Status::default());
        assert!(!s.sending_rendezvous(eager, to1));
        assert!(s.sending_rendezvous(eager, |i| i == 0), "{a:?} {c:?}");
    }

    #[test]
    fn slots_are_reused_and_stale_ids_rejected() {
        let mut s = Slab::default();
        let a = s.alloc(State::SendQueued);
        assert!(s.take_if_done(a).is_none(), "pending");
        s.complete(
            a.idx(),
            Status {
                bytes: 8,
                ..Status::default()
            },
        );
        assert!(s.is_done(a));
        assert_eq!(s.take_if_done(a).unwrap().bytes, 8);
        assert!(s.take_if_done(a).is_none(), "already collected");
        let b = s.alloc(State::SendQueued);
        assert_eq!(b.idx(), a.idx(), "slot reused");
        assert_ne!(b.gen(), a.gen());
        assert!(!s.is_live(a), "stale handle");
        assert!(s.is_live(b));
        assert_eq!(s.live(), 1);
    }
}
