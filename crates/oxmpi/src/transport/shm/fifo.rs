//! The receive queue: a multi-producer, single-consumer ring of 64-byte cells (seed 000's
//! postboxes) living in the receiver's segment.
//!
//! - A cell is one cache line. Its first word is a sequence number: the absolute position plus
//!   one, stored last with release ordering. The receiver polls only the word of the next cell,
//!   so an idle poll is one load, whatever the number of peers.
//! - Senders claim consecutive cells with one CAS on `head`, checking space against a cached
//!   copy of `tail`; they reread the real `tail` only when the ring looks full.
//! - The receiver publishes `tail` after draining, not per cell, so senders rarely touch its line.
//! - Every cell of a multi-cell message carries its own sequence word, so a stale cell can never
//!   look fresh: its word holds a position from an earlier lap.
//!
//! The atomics and cell bodies come from [`super::sync`], so `scripts/check-unsafe` can run this
//! very code under loom (every interleaving of two producers and the consumer) and Miri.

use super::sync::{AtomicU32, AtomicU64, Ordering, RacyCell};
use crate::bytecopy::prefetch_line;

/// Bytes in a cell.
pub const CELL_SIZE: usize = 64;
/// Bytes of a cell after its sequence word.
pub const CELL_BODY: usize = CELL_SIZE - 4;

/// One cache line of the ring.
#[repr(C, align(64))]
pub struct Cell {
    seq: AtomicU32,
    body: RacyCell<[u8; CELL_BODY]>,
}

/// Head and tail, each on its own cache line.
#[repr(C, align(64))]
pub struct FifoCtl {
    head: AtomicU64,
    _pad0: [u8; 56],
    tail: AtomicU64,
    _pad1: [u8; 56],
}

// The layout is shared between processes: a cell is one cache line, the control block two.
#[cfg(not(oxmpi_loom))]
const _: () = assert!(
    std::mem::size_of::<Cell>() == CELL_SIZE && std::mem::size_of::<FifoCtl>() == 2 * CELL_SIZE
);

/// Where a ring lives: its control block and `cap` cells (a power of two).
#[derive(Debug, Clone, Copy)]
pub struct FifoRef {
    ctl: *const FifoCtl,
    cells: *mut Cell,
    cap: u64,
}

// SAFETY: a FifoRef points into a shared mapping; all cross-thread/process access goes through
// the atomics and the claim/publish protocol documented above.
unsafe impl Send for FifoRef {}

impl FifoRef {
    /// Bytes a ring of `cap` cells needs after its control block.
    pub const fn cells_bytes(cap: usize) -> usize {
        cap * CELL_SIZE
    }

    /// Views a ring whose control block is at `ctl` and cells at `cells`.
    ///
    /// # Safety
    /// Both must point into a live shared mapping, aligned to 64 bytes, with room for one
    /// `FifoCtl` and `cap` cells, zero-initialized when the ring was created, and outlive every
    /// use of the returned value. `cap` must be a power of two.
    pub unsafe fn new(ctl: *mut u8, cells: *mut u8, cap: usize) -> FifoRef {
        debug_assert!(cap.is_power_of_two());
        debug_assert_eq!(ctl as usize % 64, 0);
        debug_assert_eq!(cells as usize % 64, 0);
        FifoRef {
            ctl: ctl.cast(),
            cells: cells.cast(),
            cap: cap as u64,
        }
    }

    fn ctl(&self) -> &FifoCtl {
        // SAFETY: `ctl` points to a live, aligned FifoCtl (constructor contract).
        unsafe { &*self.ctl }
    }

    fn cell(&self, pos: u64) -> *mut Cell {
        // SAFETY: the index is reduced modulo the capacity, so it stays inside the ring.
        unsafe { self.cells.add((pos & (self.cap - 1)) as usize) }
    }
}

/// Asks for the line of `cell` without waiting for it (see [`prefetch_line`]). The consumer
/// asks for the cell after the one it polls each time it polls: a message of two cells
/// (64-256 bytes) is published second cell first, so when the poll of the first misses, the
/// second is already on its way instead of missing after it (on a host whose two cores sit
/// far apart, a line takes 0.18 µs to cross). A cell not yet written is one this core still
/// holds from the ring's last lap: the request costs nothing then.
#[inline(always)]
fn prefetch(cell: *mut Cell) {
    prefetch_line(cell.cast_const().cast());
}

/// Whether `n` more cells fit in a ring of `cap` cells, judged from a head and a released tail
/// that a producer loaded at different times.
///
/// No subtraction: the tail may be past the head. A producer loads the head, then (ring full by
/// its cached tail) reloads the tail; in between, other producers may claim and the consumer
/// release a whole lap. `head + n - tail` then underflowed (issue 8). Here such a stale head
/// simply "fits", and the claim's compare-exchange fails and retries from the real head. A head
/// never passes `tail + cap`, so neither side can overflow a u64 of positions.
#[inline(always)]
fn fits(head: u64, n: u64, tail: u64, cap: u64) -> bool {
    head + n <= tail + cap
}

/// The ring as a producer saw it when it found no room: its head and the tail it loaded after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full {
    pub(crate) head: u64,
    pub(crate) tail: u64,
}

/// The outcome of one claim attempt.
#[derive(Debug)]
enum Attempt {
    Claimed(Claim),
    Full(Full),
    /// The head was no longer where the producer loaded it; this is where it is now.
    Moved(u64),
}

/// A sender's handle on a peer's ring.
#[derive(Debug)]
pub struct Producer {
    fifo: FifoRef,
    cached_tail: u64,
}

/// Cells claimed by a producer, to be filled and then published.
#[derive(Debug)]
pub struct Claim {
    pos: u64,
    n: u32,
}

impl Producer {
    /// A producer on `fifo`.
    pub fn new(fifo: FifoRef) -> Producer {
        Producer {
            fifo,
            cached_tail: 0,
        }
    }

    /// Claims `n` consecutive cells, or returns `None` if the ring has no room now.
    #[inline]
    pub fn claim(&mut self, n: u32) -> Option<Claim> {
        self.try_claim(n).ok()
    }

    /// [`claim`](Self::claim), saying what the ring looked like when it was found full.
    #[inline]
    pub(crate) fn try_claim(&mut self, n: u32) -> Result<Claim, Full> {
        debug_assert!(n >= 1 && n as u64 <= self.fifo.cap);
        let mut head = self.fifo.ctl().head.load(Ordering::Relaxed);
        loop {
            match self.attempt(head, n) {
                Attempt::Claimed(c) => return Ok(c),
                Attempt::Full(f) => return Err(f),
                Attempt::Moved(h) => head = h,
            }
        }
    }

    /// One try at claiming `n` cells at `head`, a value of the ring's head loaded earlier by
    /// this producer: by now other producers may have moved the head on, and the consumer the
    /// tail past it.
    #[inline(always)]
    fn attempt(&mut self, head: u64, n: u32) -> Attempt {
        let ctl = self.fifo.ctl();
        let n64 = n as u64;
        if !fits(head, n64, self.cached_tail, self.fifo.cap) {
            // Acquire: the receiver released these cells after it finished reading them.
            self.cached_tail = ctl.tail.load(Ordering::Acquire);
            if !fits(head, n64, self.cached_tail, self.fifo.cap) {
                return Attempt::Full(Full {
                    head,
                    tail: self.cached_tail,
                });
            }
        }
        match ctl
            .head
            .compare_exchange_weak(head, head + n64, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => Attempt::Claimed(Claim { pos: head, n }),
            Err(h) => Attempt::Moved(h),
        }
    }

    /// Body of the `i`-th claimed cell, for writing.
    ///
    /// # Safety
    /// `i < claim.len()`, and the claim has not been published yet.
    #[inline]
    pub unsafe fn body(&self, claim: &Claim, i: u32) -> *mut [u8; CELL_BODY] {
        debug_assert!(i < claim.n);
        let cell = self.fifo.cell(claim.pos + i as u64);
        // SAFETY: `cell` is inside the ring; the claimed cell is ours until published.
        unsafe { (*cell).body.write_ptr() }
    }

    /// Makes the claimed cells visible to the receiver. The first cell's sequence word is
    /// stored last, with release ordering, so the receiver sees every byte of every cell.
    #[inline]
    pub fn publish(&self, claim: Claim) {
        for i in 1..claim.n as u64 {
            let cell = self.fifo.cell(claim.pos + i);
            // SAFETY: claimed cell inside the ring; the receiver never polls continuation cells.
            unsafe {
                (*cell)
                    .seq
                    .store((claim.pos + i + 1) as u32, Ordering::Relaxed)
            };
        }
        let first = self.fifo.cell(claim.pos);
        // SAFETY: claimed cell inside the ring.
        unsafe {
            (*first)
                .seq
                .store((claim.pos + 1) as u32, Ordering::Release)
        };
    }
}

/// The receiver's handle on its own ring.
#[derive(Debug)]
pub struct Consumer {
    fifo: FifoRef,
    pos: u64,
    published: u64,
}

impl Consumer {
    /// The consumer of `fifo` (one per ring).
    pub fn new(fifo: FifoRef) -> Consumer {
        Consumer {
            fifo,
            pos: 0,
            published: 0,
        }
    }

    /// The next message's first cell body, if it has arrived.
    #[inline]
    pub fn peek(&self) -> Option<*const [u8; CELL_BODY]> {
        let cell = self.fifo.cell(self.pos);
        prefetch(self.fifo.cell(self.pos + 1));
        // SAFETY: `cell` is inside the ring; the acquire load pairs with the producer's release.
        let seq = unsafe { (*cell).seq.load(Ordering::Acquire) };
        // SAFETY: as above; after the acquire, the body is stable until we release the cell.
        (seq == (self.pos + 1) as u32).then(|| unsafe { (*cell).body.read_ptr() })
    }

    /// Body of the `i`-th cell of the message at the head (0 is the first cell).
    #[inline]
    pub fn body(&self, i: u32) -> *const [u8; CELL_BODY] {
        let cell = self.fifo.cell(self.pos + i as u64);
        // SAFETY: inside the ring; covered by the first cell's acquire (see `publish`).
        unsafe { (*cell).body.read_ptr() }
    }

    /// Asks for the lines of cells `2..n` of the message at the head (the poll asked for
    /// the second), so that they cross together rather than one after another as the
    /// message is copied out.
    #[inline]
    pub fn prefetch_rest(&self, n: u32) {
        for i in 2..n as u64 {
            prefetch(self.fifo.cell(self.pos + i));
        }
    }

    /// Whether cells `1..n` after the head carry their sequence words, as every continuation
    /// cell of a message the head's sender published does (a check of a count read from the
    /// head's body, which the sender controls).
    #[inline]
    pub fn continuation_published(&self, n: u32) -> bool {
        (1..n as u64).all(|i| {
            let cell = self.fifo.cell(self.pos + i);
            // SAFETY: `cell` is inside the ring. Acquire: if another sender published this cell,
            // its body is complete before we read it.
            let seq = unsafe { (*cell).seq.load(Ordering::Acquire) };
            seq == (self.pos + i + 1) as u32
        })
    }

    /// Consumes `n` cells (the whole message at the head).
    #[inline]
    pub fn advance(&mut self, n: u32) {
        self.pos += n as u64;
    }

    /// Returns consumed cells to the senders.
    #[inline]
    pub fn release(&mut self) {
        if self.pos != self.published {
            self.fifo.ctl().tail.store(self.pos, Ordering::Release);
            self.published = self.pos;
        }
    }
}

/// A ring in ordinary memory, for the unit tests, Miri and the loom model.
#[cfg(test)]
pub(crate) struct HeapRing {
    ctl: *mut FifoCtl,
    cells: *mut [Cell],
}

// SAFETY: the allocations are only reached through `FifoRef`s (whose accesses follow the ring's
// protocol) and freed on drop, when no thread holds the ring any more.
#[cfg(test)]
unsafe impl Send for HeapRing {}
// SAFETY: as above; `&HeapRing` only hands out `FifoRef`s.
#[cfg(test)]
unsafe impl Sync for HeapRing {}

#[cfg(test)]
impl HeapRing {
    /// A zeroed ring of `cap` cells (a power of two).
    pub(crate) fn new(cap: usize) -> HeapRing {
        let cells: Box<[Cell]> = (0..cap)
            .map(|_| Cell {
                seq: AtomicU32::new(0),
                body: RacyCell::new([0; CELL_BODY]),
            })
            .collect();
        let ctl = Box::new(FifoCtl {
            head: AtomicU64::new(0),
            _pad0: [0; 56],
            tail: AtomicU64::new(0),
            _pad1: [0; 56],
        });
        HeapRing {
            ctl: Box::into_raw(ctl),
            cells: Box::into_raw(cells),
        }
    }

    /// A view of the ring; valid while `self` lives.
    pub(crate) fn fifo(&self) -> FifoRef {
        // SAFETY: both allocations live until `self` drops; alignment comes from the types'
        // repr(align(64)); `new` initialized every cell and the control block to zero.
        unsafe { FifoRef::new(self.ctl.cast(), self.cells.cast(), self.cells.len()) }
    }
}

#[cfg(test)]
impl Drop for HeapRing {
    fn drop(&mut self) {
        // SAFETY: both pointers came from `Box::into_raw` in `new` and are freed only here.
        unsafe {
            drop(Box::from_raw(self.ctl));
            drop(Box::from_raw(self.cells));
        }
    }
}

#[cfg(all(test, not(oxmpi_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn push(p: &mut Producer, n: u32, tag: u8) -> bool {
        match p.claim(n) {
            None => false,
            Some(c) => {
                for i in 0..n {
                    // SAFETY: i < n, claim unpublished.
                    unsafe { (*p.body(&c, i))[0] = tag.wrapping_add(i as u8) };
                }
                p.publish(c);
                true
            }
        }
    }

    /// Takes the message at the head (`n` cells), returning its first byte.
    fn pop(c: &mut Consumer, n: u32) -> u8 {
        // SAFETY: peek returned a published cell; read before advancing.
        let b = unsafe { (*c.peek().expect("a message has arrived"))[0] };
        c.advance(n);
        b
    }

    #[test]
    fn fits_never_underflows() {
        assert!(fits(8, 1, 0, 9));
        assert!(!fits(8, 1, 0, 8), "full: 8 cells in use, 1 more wanted");
        assert!(fits(8, 8, 8, 8), "empty ring takes a whole lap");
        // A head loaded before other producers and the consumer moved on: stale, not full.
        assert!(fits(8, 1, 16, 8));
        assert!(fits(0, 1, u64::MAX - 8, 8));
    }

    /// Issue 8 §3: producer 1 loads the head (8) and finds the ring full by its cached tail
    /// (0). Before it reloads the tail, the consumer drains the ring, producer 2 fills a whole
    /// new lap and the consumer drains that too (tail 16). With `head + n - tail` the check then
    /// computed 8 + 1 - 16: an overflow panic in debug builds, a spurious "full" in release.
    #[test]
    fn producer_preempted_between_head_and_tail_loads_retries_instead_of_underflowing() {
        let ring = HeapRing::new(8);
        let f = ring.fifo();
        let mut p1 = Producer::new(f);
        let mut p2 = Producer::new(f);
        let mut c = Consumer::new(f);
        assert!(push(&mut p1, 8, 1), "p1 fills the first lap");
        // p1 begins a claim of one cell: the head load of `try_claim`...
        let head = f.ctl().head.load(Ordering::Relaxed);
        assert_eq!(head, 8);
        // ...then is preempted while the others run a whole lap.
        assert_eq!(pop(&mut c, 8), 1);
        c.release();
        assert!(push(&mut p2, 8, 2), "p2 fills the second lap");
        assert_eq!(pop(&mut c, 8), 2);
        c.release();
        // p1 resumes with its stale head: it must retry from the real head, not report full.
        match p1.attempt(head, 1) {
            Attempt::Moved(now) => assert_eq!(now, 16),
            other => panic!("stale head must be retried, got {other:?}"),
        }
        assert_eq!(p1.cached_tail, 16, "p1 did reload the tail");
        let claim = p1.try_claim(1).expect("the ring is empty");
        assert_eq!(claim.pos, 16);
        // SAFETY: cell 0 of an unpublished claim.
        unsafe { (*p1.body(&claim, 0))[0] = 3 };
        p1.publish(claim);
        assert_eq!(pop(&mut c, 1), 3);
    }

    #[test]
    fn full_is_reported_only_when_no_room_is_left() {
        let ring = HeapRing::new(8);
        let f = ring.fifo();
        let mut p = Producer::new(f);
        let mut c = Consumer::new(f);
        assert!(push(&mut p, 6, 0));
        assert_eq!(p.try_claim(3).unwrap_err(), Full { head: 6, tail: 0 });
        assert!(push(&mut p, 2, 0), "exactly the two cells left");
        pop(&mut c, 6);
        c.release();
        assert_eq!(p.try_claim(7).unwrap_err(), Full { head: 8, tail: 6 });
        assert_eq!(p.try_claim(6).map(|c| c.pos), Ok(8));
    }

    #[test]
    fn fills_then_refuses_then_frees() {
        let r = HeapRing::new(8);
        let f = r.fifo();
        let mut p = Producer::new(f);
        let mut c = Consumer::new(f);
        assert!(c.peek().is_none());
        assert!(push(&mut p, 3, 10));
        assert!(push(&mut p, 5, 20));
        assert!(!push(&mut p, 1, 30), "ring is full");
        // SAFETY: peek returned a published cell.
        assert_eq!(unsafe { (*c.peek().unwrap())[0] }, 10);
        // SAFETY: continuation cells of the published message.
        assert_eq!(unsafe { (*c.body(2))[0] }, 12);
        c.advance(3);
        assert!(!push(&mut p, 1, 30), "not released yet");
        c.release();
        assert!(push(&mut p, 3, 40), "wraps around");
        // SAFETY: published cell.
        assert_eq!(unsafe { (*c.peek().unwrap())[0] }, 20);
        c.advance(5);
        // SAFETY: published cell (wrapped).
        assert_eq!(unsafe { (*c.peek().unwrap())[0] }, 40);
        c.advance(3);
        assert!(
            c.peek().is_none(),
            "stale cells from the first lap do not look fresh"
        );
    }

    #[test]
    fn concurrent_producers_deliver_every_message_in_per_producer_order() {
        let ring = Arc::new(HeapRing::new(64));
        let f = ring.fifo();
        let producers = 3;
        // Miri interprets every instruction: fewer messages, still many laps of the ring.
        let per: u32 = if cfg!(miri) { 150 } else { 20_000 };
        let handles: Vec<_> = (0..producers)
            .map(|id| {
                let mut p = Producer::new(f);
                let keep = ring.clone();
                std::thread::spawn(move || {
                    let _keep = keep;
                    for k in 0..per {
                        let n = 1 + (k % 3);
                        loop {
                            if let Some(c) = p.claim(n) {
                                for i in 0..n {
                                    // SAFETY: i < n, unpublished claim.
                                    let b = unsafe { &mut *p.body(&c, i) };
                                    b[0] = id as u8;
                                    b[1..5].copy_from_slice(&k.to_le_bytes());
                                    b[5] = n as u8;
                                }
                                p.publish(c);
                                break;
                            }
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut c = Consumer::new(f);
        let mut next = vec![0u32; producers];
        let mut got = 0;
        while got < producers as u32 * per {
            let Some(first) = c.peek() else {
                c.release();
                std::thread::yield_now();
                continue;
            };
            // SAFETY: published message; read its cells before advancing.
            let (id, k, n) = unsafe {
                let b = &*first;
                (
                    b[0] as usize,
                    u32::from_le_bytes(b[1..5].try_into().unwrap()),
                    b[5] as u32,
                )
            };
            assert_eq!(k, next[id], "producer {id} out of order");
            for i in 1..n {
                // SAFETY: continuation cells of the published message.
                let b = unsafe { &*c.body(i) };
                assert_eq!((b[0] as usize, b[5] as u32), (id, n));
            }
            next[id] += 1;
            got += 1;
            c.advance(n);
            c.release();
        }
        for h in handles {
            h.join().unwrap();
        }
        assert!(next.iter().all(|&k| k == per));
    }
}

/// The ring's protocol under loom (`scripts/check-unsafe`): every interleaving of two producers
/// and the consumer, up to `LOOM_MAX_PREEMPTIONS` preemptions (default 3). Cell bodies are
/// loom cells there, so loom also fails any execution in which a body is read before its
/// writer's release or rewritten before the consumer's release of the cell.
#[cfg(all(test, oxmpi_loom))]
mod model {
    use super::*;
    use loom::sync::Arc;

    /// Two cells: every claim below either fills the ring or needs space the other producer
    /// and the consumer must free first.
    const CAP: u64 = 2;
    /// Cells of each message, per producer. Producer 0's second message is the claim that can
    /// load the head, be preempted while producer 1 and the consumer complete a lap, and then
    /// load a tail beyond that head.
    const MESSAGES: [&[u32]; 2] = [&[2, 1], &[2]];
    /// Failed polls or claims in a row after which a thread's waiting is no longer explored.
    const SPINS_EXPLORED: u32 = 2;

    /// Waits for another thread to make progress. After a yield, loom may schedule any thread
    /// without counting a preemption, so two waiting threads could take turns forever while the
    /// one they wait for never runs; past a few turns, loom stops branching in this execution
    /// and runs it to its end on its default schedule (least-yielded thread first), still
    /// checking every assertion and access on the way.
    fn wait(spins: &mut u32) {
        *spins += 1;
        if *spins > SPINS_EXPLORED {
            loom::skip_branch();
        }
        loom::thread::yield_now();
    }

    fn send(p: &mut Producer, id: u8, k: u8, n: u32) {
        let mut spins = 0;
        loop {
            match p.try_claim(n) {
                Ok(c) => {
                    for i in 0..n {
                        // SAFETY: i < n, unpublished claim.
                        unsafe {
                            (&mut *p.body(&c, i))[..4].copy_from_slice(&[id, k, n as u8, i as u8])
                        };
                    }
                    p.publish(c);
                    return;
                }
                Err(full) => {
                    // Full means: when the tail was loaded, `n` more cells after the head did
                    // not fit. A tail past the head means the head was stale, not the ring full.
                    assert!(
                        full.tail <= full.head,
                        "stale head taken for full: {full:?}"
                    );
                    assert!(
                        full.head + n as u64 > full.tail + CAP,
                        "room was left: {full:?}"
                    );
                    wait(&mut spins);
                }
            }
        }
    }

    fn model() {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(3);
        }
        builder.check(|| {
            let ring = Arc::new(HeapRing::new(CAP as usize));
            let f = ring.fifo();
            let producers: Vec<_> = (0..2u8)
                .map(|id| {
                    let keep = ring.clone();
                    loom::thread::spawn(move || {
                        let _keep = keep;
                        let mut p = Producer::new(f);
                        for (k, &n) in MESSAGES[id as usize].iter().enumerate() {
                            send(&mut p, id, k as u8, n);
                        }
                    })
                })
                .collect();
            let mut c = Consumer::new(f);
            let mut next = [0usize; 2];
            let total: usize = MESSAGES.iter().map(|m| m.len()).sum();
            for _ in 0..total {
                let mut spins = 0;
                let first = loop {
                    match c.peek() {
                        Some(first) => break first,
                        None => {
                            c.release();
                            wait(&mut spins);
                        }
                    }
                };
                // SAFETY: published message; its cells are read before advancing.
                let [id, k, n, i0] = unsafe { (&*first)[..4].try_into().unwrap() };
                let id = id as usize;
                assert_eq!(
                    (k as usize, i0),
                    (next[id], 0),
                    "producer {id} out of order"
                );
                let n = n as u32;
                assert_eq!(n, MESSAGES[id][k as usize], "cell count intact");
                for i in 1..n {
                    // SAFETY: continuation cells of the published message.
                    let b = unsafe { (&*c.body(i))[..4].to_vec() };
                    assert_eq!(b, [id as u8, k, n as u8, i as u8], "continuation intact");
                }
                next[id] += 1;
                c.advance(n);
                c.release();
            }
            for p in producers {
                p.join().unwrap();
            }
            assert_eq!(next, [MESSAGES[0].len(), MESSAGES[1].len()], "each once");
            assert!(c.peek().is_none(), "nothing beyond what was sent");
        });
    }

    #[test]
    fn two_producers_one_consumer_every_interleaving() {
        model();
    }
}
