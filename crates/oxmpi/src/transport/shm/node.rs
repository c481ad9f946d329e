//! What the shared-memory transport offers collectives beyond moving fragments: barriers and
//! small data exchanges through arrival counters and slots in each rank's segment, and
//! `alloc_mem` message memory that peers read with a plain copy.
//!
//! A collective meets either in the world's counter and slots in the header page
//! ([`Meet::World`]), or in one of [`CHANNELS`] per-communicator channels after the header
//! ([`Meet::Chan`]). A channel is one cache line holding its owner's arrival counter and two
//! data slots used alternately. Counters only grow, so a peer waiting for "arrival ≥ n" is
//! never fooled by a reuse: a communicator that takes channel `k` starts numbering above the
//! highest counter any member has on `k` (agreed by an allreduce of [`Node::chan_offer`]).
//! When a communicator is freed each member arrives once more on its channel; a rank reuses
//! the channel only after every old member has made that last arrival, by which time none
//! can still be reading its slots.
//!
//! Collectives reach these through this interface (`Engine::node`), never through the
//! point-to-point engine.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{ShmLink, BARRIER_OFFSET, COLL_SLOT_BYTES, HEADER_BYTES};
use crate::error::{Error, ErrorClass, Result};

/// Per-communicator collective channels in each rank's segment.
pub const CHANNELS: usize = 16;
/// Bytes of one channel: its counter's cache line and two slots.
const CHAN_STRIDE: usize = 64 + 2 * COLL_SLOT_BYTES;
/// Offset of the world's two slots: right after the header page (whose counter line they
/// go with).
const WORLD_SLOTS: usize = HEADER_BYTES;
/// Offset of the first channel: after the world's slots.
const CHAN_BASE: usize = WORLD_SLOTS + 2 * COLL_SLOT_BYTES;
/// Bytes reserved for the world's slots and the channels right after the header page.
pub(super) const CHAN_REGION: usize =
    (CHAN_BASE - HEADER_BYTES + CHANNELS * CHAN_STRIDE).next_multiple_of(4096);

// The channels fit their region, each counter on a cache line of its own.
const _: () = assert!(
    CHAN_BASE + CHANNELS * CHAN_STRIDE <= HEADER_BYTES + CHAN_REGION
        && CHAN_STRIDE.is_multiple_of(64)
        && CHAN_BASE.is_multiple_of(64)
);

/// What [`Node::chan_offer`] reports for a channel this rank cannot take now.
pub const CHAN_BUSY: u64 = u64::MAX;

/// Where a shared-memory collective meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meet {
    /// The world's counter and slots in the header page (every rank of the job).
    World,
    /// Channel `k`, held by one communicator among its members.
    Chan(usize),
}

/// Local bookkeeping of one channel.
#[derive(Debug, Default)]
enum ChanState {
    #[default]
    Free,
    /// Offered to the agreement in progress with this number; not free for another. The
    /// number keeps two threads agreeing channels for two communicators at once (MULTIPLE)
    /// from settling or returning each other's offers, which made members disagree.
    Offered(u64),
    /// Held by a communicator.
    InUse,
    /// Released; free again once every one of `members` has arrived at `target`.
    Draining { members: Vec<u32>, target: u64 },
}

/// This rank's channels: state and arrival numbers.
#[derive(Debug, Default)]
pub struct Channels {
    state: [ChanState; CHANNELS],
    epoch: [u64; CHANNELS],
    /// Per channel, an arrival every member of its current holder is known to have reached
    /// (0: none seen yet). Saves a small collective's entry check a read of lines the peers
    /// are writing, as `barrier_seen` does for the world.
    seen: [u64; CHANNELS],
    /// Number of the next agreement's offer.
    next_offer: u64,
}

/// One agreement's reservations: its number and, per channel, the arrival number offered or
/// [`CHAN_BUSY`].
#[derive(Debug, Clone, Copy)]
pub struct ChanOffer {
    id: u64,
    /// What this rank contributes to the agreement's allreduce (maximum).
    pub offer: [u64; CHANNELS],
}

/// Intra-host helpers of a shared-memory transport.
pub trait Node {
    /// Whether every rank of the job is on this host (world collectives can use the segment).
    fn spans_world(&self) -> bool;

    /// Whether world rank `rank` is this process or shares its host (and can be mapped).
    fn is_local(&self, rank: u32) -> bool;

    /// Enters collective number `n` at `at` with `data` (at most
    /// [`COLL_SLOT_BYTES`](super::COLL_SLOT_BYTES)): publishes it in the slot of this
    /// arrival, announces the arrival and returns `n`. Slots alternate: the caller must not
    /// enter `n` before every member has entered `n - 1` (see
    /// [`next_arrival`](Self::next_arrival)), by which time all have finished reading
    /// slot `n - 2`.
    fn arrive(&mut self, at: Meet, data: &[u8]) -> u64;

    /// The number the next [`arrive`](Self::arrive) at `at` will return.
    fn next_arrival(&self, at: Meet) -> u64;

    /// A world barrier in one visit: if every local rank has entered the previous world
    /// collective, enters the next one with no data and looks for everyone's arrival up to
    /// `spins` times. `None`: not entered (the caller takes the general way); `Some(Ok(()))`:
    /// everyone has arrived; `Some(Err(n))`: entered as `n`, the caller waits for the others.
    fn world_barrier(&mut self, spins: u32) -> Result<Option<std::result::Result<(), u64>>>;

    /// Whether world rank `rank` (this process or a mapped local peer) has entered
    /// collective `n` at `at`.
    fn arrived_rank(&mut self, at: Meet, rank: u32, n: u64) -> Result<bool>;

    /// Whether every one of `members` (world ranks; ignored for the world, which waits for
    /// every rank of this host) has entered collective `n` at `at`.
    fn arrived(&mut self, at: Meet, members: &[u32], n: u64) -> Result<bool>;

    /// The data `rank` (or we, if `rank` is ourselves) published with arrival `n` at `at`,
    /// which [`arrived`](Self::arrived) must have confirmed; 16-byte aligned (data of up to
    /// 16 bytes lies in the arrival counter's cache line, larger data in a 64-byte-aligned
    /// slot).
    fn slot(&mut self, at: Meet, rank: u32, n: u64) -> Result<*const u8>;

    /// How many bytes `rank` published with arrival `n` at `at` (confirmed as for
    /// [`slot`](Self::slot)), so a reader can tell when counts differ between ranks.
    fn slot_len(&mut self, at: Meet, rank: u32, n: u64) -> Result<usize>;

    /// Reserves every channel this rank can take now for one agreement and returns, per
    /// channel, its arrival number, or [`CHAN_BUSY`]. Must be followed by
    /// [`chan_settle`](Self::chan_settle) with the same offer.
    fn chan_offer(&mut self) -> ChanOffer;

    /// Takes the lowest channel that every member offered in this agreement (`agreed` is the
    /// elementwise maximum of the members' offers), numbering its arrivals from the agreed
    /// value, and returns this agreement's other reservations. `None` when no channel is free
    /// in every member, or when no more than `spare` are: a taker that may hold its channel
    /// for long (a persistent collective) leaves that many for communicators. Every member
    /// settles on the same channel whatever other agreements run meanwhile: a channel not
    /// busy in `agreed` was offered by every member to this one.
    fn chan_settle(
        &mut self,
        offer: &ChanOffer,
        agreed: &[u64; CHANNELS],
        spare: usize,
    ) -> Option<usize>;

    /// Gives back channel `k`, held by a communicator of `members`: arrives on it a last
    /// time and reuses it once every member has done the same.
    fn chan_release(&mut self, k: usize, members: Vec<u32>);

    /// Allocates `len` bytes of message memory that peers can read directly.
    fn alloc_mem(&mut self, len: usize) -> Result<*mut u8>;

    /// Frees memory from [`alloc_mem`](Self::alloc_mem).
    fn free_mem(&mut self, ptr: *mut u8, len: usize);

    /// Whether collectives may copy straight between processes (`process_vm_readv`/`writev`):
    /// on by configuration (`OXMPI_SINGLE_COPY`) and not refused by the kernel so far.
    fn single_copy(&self) -> bool;

    /// Records that the kernel refused a cross-process copy: neither collectives nor the
    /// protocol try one again.
    fn single_copy_refused(&mut self);

    /// The process id of `rank` (ourselves or a mapped local peer), read from its segment.
    fn pid_of(&mut self, rank: u32) -> Result<i32>;
}

/// Offset of the arrival counter of `at` in a segment.
fn counter_offset(at: Meet) -> usize {
    match at {
        Meet::World => BARRIER_OFFSET,
        Meet::Chan(k) => CHAN_BASE + k * CHAN_STRIDE,
    }
}

/// Offset of the length word of the slot of arrival `n` at `at`: in the counter's cache line,
/// after the counter (one word per slot, as the slots alternate).
fn len_offset(at: Meet, n: u64) -> usize {
    counter_offset(at) + 8 + (n % 2) as usize * 8
}

/// Data of at most this many bytes travels in the counter's own cache line, in two
/// alternating halves after the length words: a reader of a small collective's data (an
/// 8-byte allreduce) then takes one cache-line transfer from the writer's core, not two.
const COLL_INLINE_BYTES: usize = 16;

/// Offset of the inline data of arrival `n` at `at`: 16-byte aligned in the counter's line.
fn inline_offset(at: Meet, n: u64) -> usize {
    counter_offset(at) + 32 + (n % 2) as usize * COLL_INLINE_BYTES
}

/// Offset of the data of arrival `n` at `at` that published `len` bytes.
fn data_offset(at: Meet, n: u64, len: usize) -> usize {
    if len <= COLL_INLINE_BYTES {
        inline_offset(at, n)
    } else {
        slot_offset(at, n)
    }
}

/// Offset of the slot of arrival `n` at `at` in a segment.
fn slot_offset(at: Meet, n: u64) -> usize {
    let half = (n % 2) as usize * COLL_SLOT_BYTES;
    match at {
        Meet::World => WORLD_SLOTS + half,
        Meet::Chan(k) => CHAN_BASE + k * CHAN_STRIDE + 64 + half,
    }
}

impl ShmLink {
    /// Base address of `rank`'s segment (ours or a mapped peer's).
    fn seg_base(&mut self, rank: u32) -> Result<*mut u8> {
        Ok(if rank == self.me {
            self.seg.base().as_ptr()
        } else {
            self.peer(rank)?._seg.base().as_ptr()
        })
    }

    /// Sets our arrival counter at `at` to `n`.
    fn announce(&mut self, at: Meet, n: u64) {
        let base = self.seg.base().as_ptr();
        // SAFETY: the counter lies in our own segment, 8-byte aligned.
        let own = unsafe { &*base.add(counter_offset(at)).cast::<AtomicU64>() };
        // Release: everything we did before the arrival is visible to whoever sees it.
        own.store(n, Ordering::Release);
    }

    /// `rank`'s arrival counter at `at`.
    fn counter(&mut self, rank: u32, at: Meet) -> Result<u64> {
        let base = self.seg_base(rank)?;
        // SAFETY: every segment (ours, or a peer's whose mapping `connect` checked to cover
        // the layout, which includes the header page and the channel region) holds the
        // counter 8-byte aligned at this offset; the mapping lives as long as `self`.
        let c = unsafe { &*base.add(counter_offset(at)).cast::<AtomicU64>() };
        Ok(c.load(Ordering::Acquire))
    }

    /// Asks for the first line of `rank`'s slot for arrival `n` at `at`, which a waiter for
    /// that arrival reads next when the data is more than 16 bytes (beyond the counter's
    /// line): it then crosses with the counter's line instead of after it. Only for waits on
    /// one rank (a bcast's root): where every member waits for every other (an allreduce),
    /// asking for a slot its owner is still writing cost 512 B-1 KiB allreduces 7-11%.
    fn prefetch_slot(&mut self, at: Meet, rank: u32, n: u64) -> Result<()> {
        let slot = self.seg_base(rank)?.wrapping_add(slot_offset(at, n));
        crate::bytecopy::prefetch_line(slot);
        Ok(())
    }

    /// Whether every one of `members` but us has arrived at `n` on channel `k`. While the
    /// channel is held, `members` are always its holder's (the communicator's, or the
    /// persistent collective's, members), so what was seen once stays true.
    fn chan_arrived(&mut self, k: usize, members: &[u32], n: u64) -> Result<bool> {
        let held = matches!(self.chans.state[k], ChanState::InUse);
        if held && n <= self.chans.seen[k] {
            return Ok(true);
        }
        for &r in members {
            if r != self.me && self.counter(r, Meet::Chan(k))? < n {
                return Ok(false);
            }
        }
        if held {
            self.chans.seen[k] = n;
        }
        Ok(true)
    }
}

impl Node for ShmLink {
    fn spans_world(&self) -> bool {
        self.local.len() + 1 == self.size as usize
    }

    fn is_local(&self, rank: u32) -> bool {
        rank == self.me || self.local.contains(&rank)
    }

    fn arrive(&mut self, at: Meet, data: &[u8]) -> u64 {
        debug_assert!(data.len() <= COLL_SLOT_BYTES);
        let epoch = match at {
            Meet::World => &mut self.barrier_epoch,
            Meet::Chan(k) => &mut self.chans.epoch[k],
        };
        *epoch += 1;
        let n = *epoch;
        let base = self.seg.base().as_ptr();
        // SAFETY: the slot (or the inline half of the counter's line) lies in our own
        // segment (header page or channel region); peers read it only after our release
        // store below announces this arrival, and not after they have arrived at `n + 1`
        // (see the trait), which precedes our arrival `n + 2`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                base.add(data_offset(at, n, data.len())),
                data.len().min(COLL_SLOT_BYTES),
            );
            base.add(len_offset(at, n))
                .cast::<u64>()
                .write(data.len() as u64);
        }
        self.announce(at, n);
        n
    }

    fn world_barrier(&mut self, spins: u32) -> Result<Option<std::result::Result<(), u64>>> {
        let prev = self.barrier_epoch;
        if prev != 0 && !self.arrived(Meet::World, &[], prev)? {
            return Ok(None);
        }
        // As `arrive` with no data, without its copy: a barrier publishes nothing, and the
        // length word keeps a reader of this slot (there is none) from seeing stale data.
        self.barrier_epoch += 1;
        let n = self.barrier_epoch;
        let base = self.seg.base().as_ptr();
        // SAFETY: the length word lies 8-byte aligned in our own segment's counter line; peers
        // read it only after the release store of arrival `n` below.
        unsafe { base.add(len_offset(Meet::World, n)).cast::<u64>().write(0) };
        self.announce(Meet::World, n);
        for _ in 0..spins.max(1) {
            if self.arrived(Meet::World, &[], n)? {
                return Ok(Some(Ok(())));
            }
        }
        Ok(Some(Err(n)))
    }

    fn next_arrival(&self, at: Meet) -> u64 {
        match at {
            Meet::World => self.barrier_epoch + 1,
            Meet::Chan(k) => self.chans.epoch[k] + 1,
        }
    }

    fn arrived_rank(&mut self, at: Meet, rank: u32, n: u64) -> Result<bool> {
        if self.counter(rank, at)? >= n {
            return Ok(true);
        }
        self.prefetch_slot(at, rank, n)?;
        Ok(false)
    }

    fn arrived(&mut self, at: Meet, members: &[u32], n: u64) -> Result<bool> {
        match at {
            Meet::World => {
                if n <= self.barrier_seen {
                    return Ok(true);
                }
                for i in 0..self.local.len() {
                    let peer = self.peer(self.local[i])?;
                    // SAFETY: `barrier` points into the peer's mapping, which the peer entry
                    // keeps alive.
                    if unsafe { (*peer.barrier).load(Ordering::Acquire) } < n {
                        return Ok(false);
                    }
                }
                self.barrier_seen = self.barrier_seen.max(n);
                Ok(true)
            }
            Meet::Chan(k) => self.chan_arrived(k, members, n),
        }
    }

    fn slot(&mut self, at: Meet, rank: u32, n: u64) -> Result<*const u8> {
        let len = self.slot_len(at, rank, n)?;
        let base = self.seg_base(rank)?;
        // SAFETY: the data lies in the header page or channel region of a live mapping.
        Ok(unsafe { base.add(data_offset(at, n, len)) }.cast_const())
    }

    fn slot_len(&mut self, at: Meet, rank: u32, n: u64) -> Result<usize> {
        let base = self.seg_base(rank)?;
        // SAFETY: the word lies 8-byte aligned in the counter's cache line of a live mapping;
        // its owner wrote it before the release store of arrival `n`, which the caller saw
        // with acquire, and does not rewrite it before we arrive at `n + 1`.
        Ok(unsafe { base.add(len_offset(at, n)).cast::<u64>().read() } as usize)
    }

    fn chan_offer(&mut self) -> ChanOffer {
        let id = self.chans.next_offer;
        self.chans.next_offer += 1;
        let mut out = [CHAN_BUSY; CHANNELS];
        for (k, out) in out.iter_mut().enumerate() {
            if let ChanState::Draining { members, target } = &self.chans.state[k] {
                let (members, target) = (members.clone(), *target);
                // A peer we cannot map keeps the channel draining (it is only lost to reuse).
                if self.chan_arrived(k, &members, target).unwrap_or(false) {
                    self.chans.state[k] = ChanState::Free;
                }
            }
            if matches!(self.chans.state[k], ChanState::Free) {
                self.chans.state[k] = ChanState::Offered(id);
                *out = self.chans.epoch[k];
            }
        }
        ChanOffer { id, offer: out }
    }

    fn chan_settle(
        &mut self,
        offer: &ChanOffer,
        agreed: &[u64; CHANNELS],
        spare: usize,
    ) -> Option<usize> {
        // Every member sees the same `agreed`, so all make the same choice.
        let free = agreed.iter().filter(|&&m| m != CHAN_BUSY).count();
        let mut chosen = None;
        for (k, &max) in agreed.iter().enumerate() {
            if matches!(self.chans.state[k], ChanState::Offered(id) if id == offer.id) {
                if chosen.is_none() && max != CHAN_BUSY && free > spare {
                    chosen = Some(k);
                    self.chans.state[k] = ChanState::InUse;
                    self.chans.epoch[k] = max;
                    // A new holder, perhaps of other members: nothing seen yet.
                    self.chans.seen[k] = 0;
                    // Our counter says we are at the agreed start too: the next arrival
                    // waits for every member to be at the one before it.
                    self.announce(Meet::Chan(k), max);
                } else {
                    self.chans.state[k] = ChanState::Free;
                }
            }
        }
        chosen
    }

    fn chan_release(&mut self, k: usize, members: Vec<u32>) {
        if !matches!(self.chans.state[k], ChanState::InUse) {
            return;
        }
        // Only the counter: a member may still be reading our slot of the arrival before
        // last (collectives whose ranks leave early do not wait for everyone), and nobody
        // reads this arrival's slot.
        self.chans.epoch[k] += 1;
        let target = self.chans.epoch[k];
        self.announce(Meet::Chan(k), target);
        self.chans.state[k] = ChanState::Draining { members, target };
    }

    fn alloc_mem(&mut self, len: usize) -> Result<*mut u8> {
        if self.arena.is_none() {
            let path = format!("{}.mem", self.seg.path());
            let a = super::arena::Arena::create(&path, self.arena_bytes).map_err(|e| {
                Error::new(
                    ErrorClass::NoMem,
                    format!("alloc_mem: cannot create {path}: {e}"),
                )
            })?;
            self.arena = Some(a);
        }
        let a = self.arena.as_mut().expect("created above");
        a.alloc(len).ok_or_else(|| {
            Error::new(
                ErrorClass::NoMem,
                format!("alloc_mem: {len} bytes do not fit in the {}-byte arena (OXMPI_ALLOC_MEM_BYTES)", self.arena_bytes),
            )
        })
    }

    fn free_mem(&mut self, ptr: *mut u8, len: usize) {
        if let Some(a) = &mut self.arena {
            a.free(ptr, len);
        }
    }

    fn single_copy(&self) -> bool {
        self.cma
    }

    fn single_copy_refused(&mut self) {
        self.cma = false;
        self.limits.put = false;
    }

    fn pid_of(&mut self, rank: u32) -> Result<i32> {
        if rank == self.me {
            return Ok(self.pid as i32);
        }
        Ok(self.peer(rank)?.pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::shm::ShmTransport;

    /// Both ranks' offers combined as the agreement allreduce does (maximum).
    fn agree(a: &mut ShmTransport, b: &mut ShmTransport) -> (Option<usize>, Option<usize>) {
        let (oa, ob) = (a.node().chan_offer(), b.node().chan_offer());
        let agreed: [u64; CHANNELS] = std::array::from_fn(|k| oa.offer[k].max(ob.offer[k]));
        (
            a.node().chan_settle(&oa, &agreed, 0),
            b.node().chan_settle(&ob, &agreed, 0),
        )
    }

    #[test]
    fn world_barrier_enters_only_after_the_previous_world_collective_and_sees_every_arrival() {
        let (mut a, mut b) = super::super::tests::pair("wbar");
        let m = [0u32, 1];
        // a enters barrier 1 alone: entered, not complete.
        assert_eq!(a.node().world_barrier(3).unwrap(), Some(Err(1)));
        // Until b has entered 1, a may not enter 2: nothing happens.
        assert_eq!(a.node().world_barrier(3).unwrap(), None);
        assert_eq!(a.node().next_arrival(Meet::World), 2);
        // b enters 1 and finds a there; a now sees b.
        assert_eq!(b.node().world_barrier(1).unwrap(), Some(Ok(())));
        assert!(a.node().arrived(Meet::World, &m, 1).unwrap());
        // A data collective after the barrier still numbers on and reads its slot.
        let n = a.node().arrive(Meet::World, &[7, 8]);
        assert_eq!(n, 2);
        assert_eq!(b.node().world_barrier(1).unwrap(), Some(Ok(())));
        assert_eq!(b.node().slot_len(Meet::World, 0, 2).unwrap(), 2);
        // b's second barrier was its arrival 2; both enter 3.
        assert_eq!(b.node().next_arrival(Meet::World), 3);
        assert_eq!(a.node().world_barrier(2).unwrap(), Some(Err(3)));
        assert_eq!(b.node().world_barrier(2).unwrap(), Some(Ok(())));
        // The length word of a barrier's arrival is zero.
        assert_eq!(a.node().slot_len(Meet::World, 1, 3).unwrap(), 0);
    }

    #[test]
    fn channels_are_agreed_used_released_and_reused_after_every_member_left() {
        let (mut a, mut b) = super::super::tests::pair("chan");
        let m = [0u32, 1];
        assert_eq!(agree(&mut a, &mut b), (Some(0), Some(0)));
        let na = a.node().arrive(Meet::Chan(0), &[1, 2, 3]);
        assert!(
            !a.node().arrived(Meet::Chan(0), &m, na).unwrap(),
            "b has not arrived"
        );
        let nb = b.node().arrive(Meet::Chan(0), &[9]);
        assert_eq!((na, nb), (1, 1));
        assert!(a.node().arrived(Meet::Chan(0), &m, 1).unwrap());
        assert!(b.node().arrived(Meet::Chan(0), &m, 1).unwrap());
        assert_eq!(b.node().slot_len(Meet::Chan(0), 0, 1).unwrap(), 3);
        let p = b.node().slot(Meet::Chan(0), 0, 1).unwrap();
        // SAFETY: a published 3 bytes with arrival 1, which b saw; a is not arriving again.
        assert_eq!(unsafe { std::slice::from_raw_parts(p, 3) }, &[1, 2, 3]);
        // The world's counter is untouched by channel arrivals.
        assert!(!a.node().arrived(Meet::World, &m, 1).unwrap());

        // Channel 0 is held: a second communicator gets channel 1.
        assert_eq!(agree(&mut a, &mut b), (Some(1), Some(1)));
        // a leaves channel 0 first: it stays busy for a until b has left too.
        a.node().chan_release(0, m.to_vec());
        let o = a.node().chan_offer();
        assert_eq!(o.offer[0], CHAN_BUSY, "draining until every member left");
        assert_eq!(a.node().chan_settle(&o, &[CHAN_BUSY; CHANNELS], 0), None);
        b.node().chan_release(0, m.to_vec());
        // Both at arrival 2 on channel 0 now: it is reused, numbered from there.
        assert_eq!(agree(&mut a, &mut b), (Some(0), Some(0)));
        assert_eq!(a.node().arrive(Meet::Chan(0), &[]), 3);
        assert_eq!(b.node().arrive(Meet::Chan(0), &[]), 3);
        assert!(a.node().arrived(Meet::Chan(0), &m, 3).unwrap());
    }

    #[test]
    fn world_arrivals_seen_once_stay_seen_and_later_ones_are_awaited() {
        let (mut a, mut b) = super::super::tests::pair("world");
        let m = [0u32, 1];
        assert_eq!(a.node().arrive(Meet::World, &[]), 1);
        assert!(
            !a.node().arrived(Meet::World, &m, 1).unwrap(),
            "b not there"
        );
        assert_eq!(b.node().arrive(Meet::World, &[]), 1);
        assert!(b.node().arrived(Meet::World, &m, 1).unwrap());
        assert_eq!(b.node().arrive(Meet::World, &[]), 2);
        // b is at 2: a's checks of 1 and 2 pass, and stay passed; 3 is awaited, as is a at 2.
        assert!(a.node().arrived(Meet::World, &m, 1).unwrap());
        assert!(a.node().arrived(Meet::World, &m, 2).unwrap());
        assert!(a.node().arrived(Meet::World, &m, 1).unwrap());
        assert!(!a.node().arrived(Meet::World, &m, 3).unwrap(), "b not at 3");
        assert!(!b.node().arrived(Meet::World, &m, 2).unwrap(), "a not at 2");
        assert_eq!(a.node().arrive(Meet::World, &[]), 2);
        assert!(b.node().arrived(Meet::World, &m, 2).unwrap());
        assert!(b.node().arrived(Meet::World, &m, 1).unwrap());
    }

    #[test]
    fn channel_arrivals_seen_once_stay_seen_while_the_channel_is_held() {
        let (mut a, mut b) = super::super::tests::pair("chseen");
        let m = [0u32, 1];
        let at = Meet::Chan(0);
        assert_eq!(agree(&mut a, &mut b), (Some(0), Some(0)));
        let n = a.node().arrive(at, &[]);
        assert!(!a.node().arrived(at, &m, n).unwrap(), "b not there");
        assert_eq!(b.node().arrive(at, &[]), n);
        assert!(a.node().arrived(at, &m, n).unwrap());
        assert_eq!(b.node().arrive(at, &[]), n + 1);
        assert!(a.node().arrived(at, &m, n + 1).unwrap());
        // Seen stays seen; later arrivals are awaited.
        assert!(a.node().arrived(at, &m, n).unwrap());
        assert!(!a.node().arrived(at, &m, n + 2).unwrap(), "b not at n + 2");
        // Released and taken again: the new holder starts with nothing seen, and its
        // arrivals are judged from the counters.
        assert_eq!(a.node().arrive(at, &[]), n + 1);
        a.node().chan_release(0, m.to_vec());
        b.node().chan_release(0, m.to_vec());
        assert_eq!(agree(&mut a, &mut b), (Some(0), Some(0)));
        let n = a.node().arrive(at, &[]);
        assert!(!a.node().arrived(at, &m, n).unwrap(), "b not there");
        assert_eq!(b.node().arrive(at, &[]), n);
        assert!(a.node().arrived(at, &m, n).unwrap());
    }

    /// Two threads agree channels for two communicators at once (MULTIPLE), settling in
    /// different orders on the two ranks: each agreement settles only its own offers, so both
    /// ranks take the same channel for each communicator.
    #[test]
    fn overlapping_agreements_settle_only_their_own_offers() {
        let (mut a, mut b) = super::super::tests::pair("overlap");
        // x's offers come first on both ranks and reserve every channel; y's find none free.
        let (ax, ay) = (a.node().chan_offer(), a.node().chan_offer());
        let (bx, by) = (b.node().chan_offer(), b.node().chan_offer());
        assert!(ay.offer.iter().all(|&o| o == CHAN_BUSY));
        let max = |p: &ChanOffer, q: &ChanOffer| -> [u64; CHANNELS] {
            std::array::from_fn(|k| p.offer[k].max(q.offer[k]))
        };
        let (agreed_x, agreed_y) = (max(&ax, &bx), max(&ay, &by));
        // a settles y first, b settles x first.
        assert_eq!(a.node().chan_settle(&ay, &agreed_y, 0), None);
        assert_eq!(b.node().chan_settle(&bx, &agreed_x, 0), Some(0));
        assert_eq!(a.node().chan_settle(&ax, &agreed_x, 0), Some(0));
        assert_eq!(b.node().chan_settle(&by, &agreed_y, 0), None);
        // The rest went back: the next agreement takes channel 1 on both.
        assert_eq!(agree(&mut a, &mut b), (Some(1), Some(1)));
    }

    /// Taking a channel puts every member's counter at the agreed start (the first arrival
    /// waits for the members to be there), and releasing it leaves the slots alone: a member
    /// may still read the slot of the arrival before last.
    #[test]
    fn settling_announces_the_start_and_release_leaves_the_slots_alone() {
        let (mut a, mut b) = super::super::tests::pair("early");
        let m = [0u32, 1];
        let at = Meet::Chan(0);
        assert_eq!(agree(&mut a, &mut b), (Some(0), Some(0)));
        for _ in 0..5 {
            a.node().arrive(at, &[]);
        }
        a.node().chan_release(0, vec![0]);
        b.node().chan_release(0, vec![1]);
        assert_eq!(agree(&mut a, &mut b), (Some(0), Some(0)));
        let start = b.node().next_arrival(at) - 1;
        assert_eq!(start, a.node().next_arrival(at) - 1);
        assert!(
            a.node().arrived(at, &m, start).unwrap(),
            "b is at the start"
        );
        assert!(
            b.node().arrived(at, &m, start).unwrap(),
            "a is at the start"
        );
        let n = a.node().arrive(at, &[1, 2, 3]);
        assert_eq!(n, start + 1);
        assert!(b.node().arrived_rank(at, 0, n).unwrap());
        assert!(!a.node().arrived_rank(at, 1, n).unwrap());
        assert_eq!(b.node().arrive(at, &[]), n);
        // a leaves early from n + 1 and frees the communicator while b still reads slot n.
        a.node().arrive(at, &[7]);
        a.node().chan_release(0, m.to_vec());
        assert!(b.node().arrived_rank(at, 0, n + 2).unwrap());
        assert_eq!(b.node().slot_len(at, 0, n).unwrap(), 3);
        let p = b.node().slot(at, 0, n).unwrap();
        // SAFETY: a published 3 bytes with arrival n, which b saw; a arrives no more.
        assert_eq!(unsafe { std::slice::from_raw_parts(p, 3) }, &[1, 2, 3]);
    }

    /// A taker that leaves `spare` channels (a persistent collective) gets one only while
    /// more than `spare` are free in every member, and gives its offers back otherwise.
    #[test]
    fn a_spare_count_leaves_channels_for_others() {
        let (mut a, mut b) = super::super::tests::pair("spare");
        let take = |a: &mut ShmTransport, b: &mut ShmTransport, spare| {
            let (oa, ob) = (a.node().chan_offer(), b.node().chan_offer());
            let agreed: [u64; CHANNELS] = std::array::from_fn(|k| oa.offer[k].max(ob.offer[k]));
            (
                a.node().chan_settle(&oa, &agreed, spare),
                b.node().chan_settle(&ob, &agreed, spare),
            )
        };
        // Nothing taken yet: all CHANNELS free, so a spare of CHANNELS takes none.
        assert_eq!(take(&mut a, &mut b, CHANNELS), (None, None));
        for k in 0..CHANNELS - 4 {
            assert_eq!(take(&mut a, &mut b, 4), (Some(k), Some(k)), "channel {k}");
        }
        // Four free now: a spare of 4 takes none, and the offers went back for others.
        assert_eq!(take(&mut a, &mut b, 4), (None, None));
        assert_eq!(
            take(&mut a, &mut b, 0),
            (Some(CHANNELS - 4), Some(CHANNELS - 4))
        );
    }

    #[test]
    fn numbering_starts_above_every_members_counter() {
        let (mut a, mut b) = super::super::tests::pair("num");
        let m = [0u32, 1];
        // a used channel 0 alone with another rank (its counter runs ahead of b's).
        assert_eq!(agree(&mut a, &mut b), (Some(0), Some(0)));
        for _ in 0..5 {
            a.node().arrive(Meet::Chan(0), &[]);
        }
        a.node().chan_release(0, vec![0]);
        b.node().chan_release(0, vec![1]);
        assert_eq!(agree(&mut a, &mut b), (Some(0), Some(0)));
        let nb = b.node().arrive(Meet::Chan(0), &[]);
        assert_eq!(nb, 7, "above a's counter of 6");
        assert!(
            !b.node().arrived(Meet::Chan(0), &m, nb).unwrap(),
            "a's old counter must not look like an arrival"
        );
        assert_eq!(a.node().arrive(Meet::Chan(0), &[]), 7);
        assert!(b.node().arrived(Meet::Chan(0), &m, 7).unwrap());
    }

    #[test]
    fn channels_fit_their_region_and_do_not_overlap_the_header() {
        for k in 0..CHANNELS {
            let c = counter_offset(Meet::Chan(k));
            assert!(c >= HEADER_BYTES && c.is_multiple_of(64));
            assert!(len_offset(Meet::Chan(k), 1) + 8 <= c + 64);
            assert_eq!(slot_offset(Meet::Chan(k), 1), c + 64 + COLL_SLOT_BYTES);
            assert!(slot_offset(Meet::Chan(k), 1) + COLL_SLOT_BYTES <= HEADER_BYTES + CHAN_REGION);
        }
        assert!(slot_offset(Meet::World, 0) >= HEADER_BYTES);
        assert!(slot_offset(Meet::World, 1) + COLL_SLOT_BYTES <= counter_offset(Meet::Chan(0)));
        assert!(len_offset(Meet::World, 1) + 8 <= BARRIER_OFFSET + 64);
        // Inline data: 16-byte aligned, after the length words, inside the counter's line.
        for at in [Meet::World, Meet::Chan(0), Meet::Chan(CHANNELS - 1)] {
            let c = counter_offset(at);
            assert_eq!(inline_offset(at, 2), len_offset(at, 1) + 16);
            assert!(inline_offset(at, 1) + COLL_INLINE_BYTES <= c + 64);
            for n in [1, 2] {
                assert!(inline_offset(at, n).is_multiple_of(16));
            }
        }
    }
}
