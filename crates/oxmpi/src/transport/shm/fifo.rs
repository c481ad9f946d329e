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

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Bytes in a cell.
pub const CELL_SIZE: usize = 64;
/// Bytes of a cell after its sequence word.
pub const CELL_BODY: usize = CELL_SIZE - 4;

/// One cache line of the ring.
#[repr(C, align(64))]
pub struct Cell {
    seq: AtomicU32,
    body: [u8; CELL_BODY],
}

/// Head and tail, each on its own cache line.
#[repr(C, align(64))]
pub struct FifoCtl {
    head: AtomicU64,
    _pad0: [u8; 56],
    tail: AtomicU64,
    _pad1: [u8; 56],
}

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

    /// Cells in the ring.
    pub fn capacity(&self) -> usize {
        self.cap as usize
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

impl Claim {
    /// Number of cells claimed.
    pub fn len(&self) -> u32 {
        self.n
    }

    /// Whether no cell was claimed (never true for a successful claim).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
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
        let ctl = self.fifo.ctl();
        let n64 = n as u64;
        debug_assert!(n >= 1 && n64 <= self.fifo.cap);
        let mut head = ctl.head.load(Ordering::Relaxed);
        loop {
            if head + n64 - self.cached_tail > self.fifo.cap {
                // Acquire: the receiver released these cells after it finished reading them.
                self.cached_tail = ctl.tail.load(Ordering::Acquire);
                if head + n64 - self.cached_tail > self.fifo.cap {
                    return None;
                }
            }
            match ctl.head.compare_exchange_weak(
                head,
                head + n64,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(Claim { pos: head, n }),
                Err(h) => head = h,
            }
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
        unsafe { std::ptr::addr_of_mut!((*cell).body) }
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
        // SAFETY: `cell` is inside the ring; the acquire load pairs with the producer's release.
        let seq = unsafe { (*cell).seq.load(Ordering::Acquire) };
        // SAFETY: as above; after the acquire, the body is stable until we release the cell.
        (seq == (self.pos + 1) as u32).then(|| unsafe { std::ptr::addr_of!((*cell).body) })
    }

    /// Body of the `i`-th cell of the message at the head (0 is the first cell).
    #[inline]
    pub fn body(&self, i: u32) -> *const [u8; CELL_BODY] {
        let cell = self.fifo.cell(self.pos + i as u64);
        // SAFETY: inside the ring; covered by the first cell's acquire (see `publish`).
        unsafe { std::ptr::addr_of!((*cell).body) }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A ring in ordinary memory, for single-process tests.
    struct Ring {
        mem: Vec<Cell>,
        ctl: Box<FifoCtl>,
    }

    fn ring(cap: usize) -> (Arc<Ring>, FifoRef) {
        let mut mem = Vec::with_capacity(cap);
        for _ in 0..cap {
            mem.push(Cell {
                seq: AtomicU32::new(0),
                body: [0; CELL_BODY],
            });
        }
        let ctl = Box::new(FifoCtl {
            head: AtomicU64::new(0),
            _pad0: [0; 56],
            tail: AtomicU64::new(0),
            _pad1: [0; 56],
        });
        let r = Arc::new(Ring { mem, ctl });
        // SAFETY: the Arc keeps both allocations alive for the test; alignment comes from the
        // types' repr(align(64)).
        let f = unsafe {
            FifoRef::new(
                (&*r.ctl as *const FifoCtl).cast_mut().cast(),
                r.mem.as_ptr().cast_mut().cast(),
                cap,
            )
        };
        (r, f)
    }

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

    #[test]
    fn fills_then_refuses_then_frees() {
        let (_r, f) = ring(8);
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
        let (_r, f) = ring(64);
        let producers = 3;
        let per = 20_000u32;
        let handles: Vec<_> = (0..producers)
            .map(|id| {
                let mut p = Producer::new(f);
                let keep = _r.clone();
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
