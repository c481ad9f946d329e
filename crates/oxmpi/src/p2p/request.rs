//! Requests: the engine's record of an operation in flight, kept in a slab so that starting
//! and completing operations allocates nothing once the slab has grown.

use crate::error::ErrorClass;

/// What a completed operation reports (`MPI_Status`).
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
}

/// Handle to a request: slot index plus generation, so a stale handle is detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReqId {
    pub(crate) idx: u32,
    pub(crate) gen: u32,
}

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
}

#[derive(Debug)]
struct Slot {
    gen: u32,
    state: State,
    status: Status,
}

/// The request slab.
#[derive(Debug, Default)]
pub struct Slab {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Slab {
    /// Takes a slot for an operation in `state`.
    #[inline]
    pub fn alloc(&mut self, state: State) -> ReqId {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    gen: 0,
                    state: State::Free,
                    status: Status::default(),
                });
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[idx as usize];
        s.gen = s.gen.wrapping_add(1);
        s.state = state;
        s.status = Status::default();
        ReqId { idx, gen: s.gen }
    }

    /// The live slot `id` names, if the handle is current.
    #[inline]
    fn slot(&mut self, id: ReqId) -> Option<&mut Slot> {
        self.slots
            .get_mut(id.idx as usize)
            .filter(|s| s.gen == id.gen && !matches!(s.state, State::Free))
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
        ReqId {
            idx,
            gen: self.slots[idx as usize].gen,
        }
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
            s.state = State::Done;
            s.status = status;
        }
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
        self.free.push(id.idx);
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
            .map(|(i, s)| ReqId {
                idx: i as u32,
                gen: s.gen,
            })
            .collect()
    }

    /// Requests not yet freed.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_stale_ids_rejected() {
        let mut s = Slab::default();
        let a = s.alloc(State::SendQueued);
        assert!(s.take_if_done(a).is_none(), "pending");
        s.complete(
            a.idx,
            Status {
                bytes: 8,
                ..Status::default()
            },
        );
        assert!(s.is_done(a));
        assert_eq!(s.take_if_done(a).unwrap().bytes, 8);
        assert!(s.take_if_done(a).is_none(), "already collected");
        let b = s.alloc(State::SendQueued);
        assert_eq!(b.idx, a.idx, "slot reused");
        assert_ne!(b.gen, a.gen);
        assert!(!s.is_live(a), "stale handle");
        assert!(s.is_live(b));
        assert_eq!(s.live(), 1);
    }
}
