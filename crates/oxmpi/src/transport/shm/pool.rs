//! The sender-owned pool: fixed-size blocks in the sender's own segment that carry payloads too
//! large for cells (seed 000's buffer pools).
//!
//! Only the owner allocates, so allocation takes no lock; a receiver returns a block by storing
//! `FREE` into its flag (the "small acknowledgement") once it has copied the data out. One pool
//! per rank serves every destination, so shared memory grows linearly with ranks per host.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};

const FREE: u32 = 0;
const BUSY: u32 = 1;

/// One block's state word, alone on its cache line so receivers releasing different blocks do
/// not contend.
#[repr(C, align(64))]
pub struct BlockFlag {
    state: AtomicU32,
    _pad: [u8; 60],
}

/// Bytes the flags of `blocks` blocks take.
pub const fn flags_bytes(blocks: usize) -> usize {
    blocks * std::mem::size_of::<BlockFlag>()
}

/// Where a pool lives.
#[derive(Debug, Clone, Copy)]
pub struct PoolRef {
    flags: *const BlockFlag,
    data: *mut u8,
    blocks: u32,
    block_size: u32,
}

// SAFETY: points into a shared mapping; blocks are handed between owner and receiver through
// the flag protocol above.
unsafe impl Send for PoolRef {}

impl PoolRef {
    /// Views a pool.
    ///
    /// # Safety
    /// `flags` (64-byte aligned, `blocks` flags, zero-initialized at creation) and `data`
    /// (`blocks * block_size` bytes) must lie in a live mapping that outlives every use.
    pub unsafe fn new(flags: *mut u8, data: *mut u8, blocks: u32, block_size: u32) -> PoolRef {
        debug_assert_eq!(flags as usize % 64, 0);
        PoolRef {
            flags: flags.cast(),
            data,
            blocks,
            block_size,
        }
    }

    /// Size of each block.
    pub fn block_size(&self) -> usize {
        self.block_size as usize
    }

    fn flag(&self, i: u32) -> &AtomicU32 {
        // SAFETY: callers pass i < blocks; the flag array is live (constructor contract).
        unsafe { &(*self.flags.add(i as usize)).state }
    }

    fn data(&self, i: u32) -> *mut u8 {
        // SAFETY: i < blocks, so the block lies inside the data area.
        unsafe { self.data.add(i as usize * self.block_size as usize) }
    }
}

/// Blocks a run of adjacent blocks may take in a pool of `blocks` blocks when `wanted` are
/// asked for: at least 1, and at most a quarter of the blocks outside the hot set, so that a
/// run of free blocks is usually there to be found.
pub fn run_blocks(blocks: u32, wanted: u32) -> u32 {
    wanted.min((blocks - blocks / 8) / 4).max(1)
}

/// Largest fragment that takes a block of the hot set (see [`PoolOwner`]). Payloads this
/// small normally travel inline in ring cells (`OXMPI_SHM_INLINE_MAX`, 512 B by default); the
/// hot set serves them where a host's calibration set that lower.
pub const HOT_MAX: usize = 512;

/// The owner's allocator over its pool.
///
/// The first eighth of the blocks is a hot set for small fragments (up to [`HOT_MAX`] bytes):
/// there a returned block is reused before one not used yet, so a run's small messages keep to
/// the few blocks they have had in flight at once. Handing every block out in turn made a short
/// run touch all of them (2 MiB at the defaults) cold, once each: 128 B latency over 200
/// iterations 0.45-0.72 us against 0.21-0.27 with reuse (np 2, interleaved). Larger fragments
/// take the other blocks in turn: there reuse was slower, the sender rewriting lines the
/// receiver still caches (4 KiB latency 0.92 against 0.65 us, 1 MiB up to 1.5x). That held
/// from 1 KiB on when the hot set took fragments up to 2 KiB (np 2, 3 interleaved rounds, in
/// turn against reuse: msgrate 1 KiB 3.3-3.7 against 2.1-2.4 M/s, 2 KiB 2.8-3.0 against
/// 1.3-1.6; bw 2 KiB 5.3-6.4 against 3.0-3.4 GB/s; latency 1 KiB 0.55 against 0.75-0.91 us),
/// and a stream's window of more messages than hot blocks rescanned every in-flight flag on
/// each allocation. Each set lends to the other when it runs out. The owner's private
/// bookkeeping knows which hot blocks it handed out; the shared flags say which came back.
#[derive(Debug)]
pub struct PoolOwner {
    pool: PoolRef,
    /// Blocks `0..hot` form the hot set.
    hot: u32,
    /// Hot blocks seen back from their receiver, in the order seen.
    returned: VecDeque<u32>,
    /// Hot blocks never handed out; the last goes next.
    fresh: Vec<u32>,
    /// Hot blocks handed out and not seen back yet, oldest first.
    inflight: VecDeque<u32>,
    /// Where the next scan of the other blocks starts.
    cursor: u32,
}

impl PoolOwner {
    /// The allocator of `pool`; exactly one per pool. All blocks must be free.
    pub fn new(pool: PoolRef) -> PoolOwner {
        let hot = pool.blocks / 8;
        PoolOwner {
            pool,
            hot,
            returned: VecDeque::with_capacity(hot as usize),
            // Block 0 last, so blocks are first taken in index order.
            fresh: (0..hot).rev().collect(),
            inflight: VecDeque::with_capacity(hot as usize),
            cursor: hot,
        }
    }

    /// Takes a free block for a fragment of `len` bytes; `None` when every block is in flight
    /// (back-pressure: the caller retries after progress).
    #[inline]
    pub fn alloc(&mut self, len: usize) -> Option<u32> {
        if len <= HOT_MAX {
            self.alloc_hot().or_else(|| self.alloc_cold())
        } else {
            self.alloc_cold().or_else(|| self.alloc_hot())
        }
    }

    /// Whether the receiver has handed `block` back.
    #[inline]
    fn is_back(&self, block: u32) -> bool {
        // Acquire: the receiver finished reading the block before it stored FREE.
        self.pool.flag(block).load(Ordering::Acquire) == FREE
    }

    /// A hot block: a returned one if any, else one not used yet.
    #[inline]
    fn alloc_hot(&mut self) -> Option<u32> {
        // Receivers return blocks in the order they were sent, so returned blocks sit at the
        // ends of `inflight`: the oldest (a stream's window) and the newest (a ping-pong's single
        // block comes back before the reply that lets us send again). Each block is taken off
        // once, so this costs at most two flag loads beyond the blocks it finds.
        while let Some(&b) = self.inflight.front() {
            if !self.is_back(b) {
                break;
            }
            self.inflight.pop_front();
            self.returned.push_back(b);
        }
        while let Some(&b) = self.inflight.back() {
            if !self.is_back(b) {
                break;
            }
            self.inflight.pop_back();
            self.returned.push_back(b);
        }
        let b = match self.returned.pop_front().or_else(|| self.fresh.pop()) {
            Some(b) => b,
            None => {
                self.reclaim_hot();
                self.returned.pop_front()?
            }
        };
        self.pool.flag(b).store(BUSY, Ordering::Relaxed);
        // Within capacity: every hot block is in exactly one of the three lists.
        self.inflight.push_back(b);
        Some(b)
    }

    /// Finds hot blocks returned out of order (several receivers, each returning in its own
    /// order), only when no hot block is known free.
    #[cold]
    fn reclaim_hot(&mut self) {
        let pool = self.pool;
        let returned = &mut self.returned;
        self.inflight.retain(|&b| {
            // Acquire: as in `is_back`.
            let back = pool.flag(b).load(Ordering::Acquire) == FREE;
            if back {
                returned.push_back(b);
            }
            !back
        });
    }

    /// One of the other blocks, scanning from where the last such allocation ended.
    #[inline]
    fn alloc_cold(&mut self) -> Option<u32> {
        let (hot, blocks) = (self.hot, self.pool.blocks);
        // Wraps from the last block to the first cold one by a compare, not a division (the
        // block count is no power of two: a division was on every allocation's path).
        let next = |i: u32| if i + 1 == blocks { hot } else { i + 1 };
        let mut i = self.cursor;
        for _ in hot..blocks {
            if self.is_back(i) {
                self.pool.flag(i).store(BUSY, Ordering::Relaxed);
                self.cursor = next(i);
                return Some(i);
            }
            i = next(i);
        }
        None
    }

    /// Takes `n` adjacent free blocks outside the hot set (the first one's index) for one
    /// fragment longer than a block; `None` when no such run is free now (the caller may
    /// send a block-sized fragment instead). Looks from where the last allocation of the other
    /// blocks ended, as [`alloc`](Self::alloc) does, skipping past each busy block it meets,
    /// over at most `4 n` starts: blocks come back in the order they went out, so a free run
    /// is found at once or not soon, and each flag looked at may be a line the receiver holds.
    pub fn alloc_run(&mut self, n: u32) -> Option<u32> {
        let cold = self.pool.blocks - self.hot;
        if n == 0 || n > cold {
            return None;
        }
        // Runs start at `hot..=blocks - n`; the scan wraps around those starts.
        let starts = cold - n + 1;
        let first = (self.cursor - self.hot) % starts;
        let mut k = 0;
        while k < starts.min(4 * n) {
            let i = self.hot + (first + k) % starts;
            match (0..n).find(|&j| !self.is_back(i + j)) {
                Some(j) => k += j + 1,
                None => {
                    for j in 0..n {
                        self.pool.flag(i + j).store(BUSY, Ordering::Relaxed);
                    }
                    self.cursor = self.hot + (i - self.hot + n) % cold;
                    return Some(i);
                }
            }
        }
        None
    }

    /// Returns `n` blocks from `first` that were allocated (one by [`alloc`](Self::alloc),
    /// a run by [`alloc_run`](Self::alloc_run)) but never announced.
    pub fn unalloc_run(&mut self, first: u32, n: u32) {
        if n <= 1 {
            return self.unalloc(first);
        }
        for j in 0..n {
            self.pool.flag(first + j).store(FREE, Ordering::Relaxed);
        }
    }

    /// The bytes of an allocated block, for filling before it is announced in a cell.
    ///
    /// # Safety
    /// `block` came from [`alloc`](Self::alloc) and has not been announced yet.
    #[inline]
    pub unsafe fn block_mut(&mut self, block: u32) -> *mut u8 {
        self.pool.data(block)
    }

    /// Returns a block that was allocated but never announced.
    pub fn unalloc(&mut self, block: u32) {
        self.pool.flag(block).store(FREE, Ordering::Relaxed);
        // The newest hot allocation goes straight back to the head of the line; any other is
        // found by a later allocation.
        if block < self.hot && self.inflight.back() == Some(&block) {
            self.inflight.pop_back();
            self.returned.push_front(block);
        }
    }
}

/// A receiver's view of a peer's pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolView {
    pool: PoolRef,
}

impl PoolView {
    /// A receiver's view of `pool`.
    pub fn new(pool: PoolRef) -> PoolView {
        PoolView { pool }
    }

    /// The announced bytes of the fragment that starts at `block` and fills `len` bytes of
    /// it and the blocks after it (a run), or `None` if the peer named a block or length
    /// outside its pool (never trust indices that came through shared memory).
    #[inline]
    pub fn block(&self, block: u32, len: usize) -> Option<*const u8> {
        (block < self.pool.blocks
            && len <= (self.pool.blocks - block) as usize * self.pool.block_size())
        .then(|| self.pool.data(block).cast_const())
    }

    /// Hands the blocks of the fragment of `len` bytes at `block` back to their owner (one
    /// block, or a run); the caller has finished reading them. Call only after
    /// [`block`](Self::block) accepted the pair.
    #[inline]
    pub fn release(&self, block: u32, len: usize) {
        let n = len.div_ceil(self.pool.block_size()).max(1) as u32;
        for j in block..(block + n).min(self.pool.blocks) {
            self.pool.flag(j).store(FREE, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(blocks: u32, size: u32) -> (Vec<BlockFlag>, Vec<u8>, PoolRef) {
        let flags: Vec<BlockFlag> = (0..blocks)
            .map(|_| BlockFlag {
                state: AtomicU32::new(FREE),
                _pad: [0; 60],
            })
            .collect();
        let mut data = vec![0u8; (blocks * size) as usize];
        // SAFETY: both vectors outlive the PoolRef within each test.
        let p = unsafe {
            PoolRef::new(
                flags.as_ptr().cast_mut().cast(),
                data.as_mut_ptr(),
                blocks,
                size,
            )
        };
        (flags, data, p)
    }

    /// A small fragment (takes the hot set) and a large one (the other blocks).
    const SMALL: usize = 64;
    const LARGE: usize = HOT_MAX + 1;

    #[test]
    fn owner_allocates_receiver_releases() {
        // Three blocks: no hot set, every block handed out in turn.
        let (_f, _d, p) = pool(3, 128);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        let a = o.alloc(SMALL).unwrap();
        let b = o.alloc(LARGE).unwrap();
        let c = o.alloc(SMALL).unwrap();
        assert_eq!(o.alloc(SMALL), None, "exhausted");
        assert_eq!([a, b, c], [0, 1, 2]);
        // SAFETY: `b` is allocated and not announced.
        unsafe { o.block_mut(b).write(9) };
        // SAFETY: the view's pointer is inside the pool.
        assert_eq!(unsafe { v.block(b, 128).unwrap().read() }, 9);
        v.release(b, SMALL);
        assert_eq!(o.alloc(LARGE), Some(b));
        o.unalloc(a);
        assert_eq!(o.alloc(LARGE), Some(a));
    }

    #[test]
    fn small_fragments_reuse_returned_hot_blocks() {
        let (_f, _d, p) = pool(64, 64);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        // A ping-pong: one block in flight, returned before the next send.
        for _ in 0..20 {
            let b = o.alloc(SMALL).unwrap();
            assert_eq!(b, 0, "the working set stays one block");
            v.release(b, SMALL);
        }
        // Two in flight, returned newest first and oldest first: both stay in {0, 1}.
        for k in 0..20 {
            let a = o.alloc(SMALL).unwrap();
            let b = o.alloc(SMALL).unwrap();
            assert_eq!([a.min(b), a.max(b)], [0, 1]);
            if k % 2 == 0 {
                v.release(b, SMALL);
                v.release(a, SMALL);
            } else {
                v.release(a, SMALL);
                v.release(b, SMALL);
            }
        }
    }

    #[test]
    fn large_fragments_take_the_other_blocks_in_turn_and_wrap() {
        let (_f, _d, p) = pool(16, 64);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        // Two hot blocks (0, 1); large fragments go round 2..16 even when each comes back.
        for k in 0..40u32 {
            let b = o.alloc(LARGE).unwrap();
            assert_eq!(b, 2 + k % 14);
            v.release(b, SMALL);
        }
    }

    #[test]
    fn a_stream_reuses_its_window_and_each_set_lends_to_the_other() {
        let (_f, _d, p) = pool(64, 64);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        // A window of 4 in flight; the receiver returns the oldest as each new one goes out.
        let mut window = VecDeque::new();
        let mut seen = [false; 64];
        for _ in 0..200 {
            if window.len() == 4 {
                v.release(window.pop_front().unwrap(), SMALL);
            }
            let b = o.alloc(SMALL).unwrap();
            assert!(!window.contains(&b), "block {b} handed out twice");
            seen[b as usize] = true;
            window.push_back(b);
        }
        let used = seen.iter().filter(|&&s| s).count();
        assert_eq!(used, 4, "a window of 4 touched {used} blocks");
        for b in window.drain(..) {
            v.release(b, SMALL);
        }
        // Everything back: all 64 can be taken at once by either size, then the pool is
        // exhausted for both.
        let mut all: Vec<u32> = (0..64)
            .map(|k| o.alloc(if k % 3 == 0 { LARGE } else { SMALL }).unwrap())
            .collect();
        assert_eq!(o.alloc(SMALL), None, "exhausted");
        assert_eq!(o.alloc(LARGE), None, "exhausted");
        all.sort_unstable();
        assert_eq!(all, (0..64).collect::<Vec<_>>());
    }

    #[test]
    fn hot_blocks_returned_out_of_order_are_found() {
        // 48 blocks: hot set 0..6. The other blocks all in flight, so only hot ones are left.
        let (_f, _d, p) = pool(48, 64);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        let cold: Vec<u32> = (0..42).map(|_| o.alloc(LARGE).unwrap()).collect();
        assert!(cold.iter().all(|&b| b >= 6));
        let taken: Vec<u32> = (0..6).map(|_| o.alloc(SMALL).unwrap()).collect();
        assert_eq!(taken, [0, 1, 2, 3, 4, 5]);
        assert_eq!(o.alloc(SMALL), None, "exhausted");
        // Two receivers: one returns its blocks from the middle, the other holds its blocks.
        v.release(taken[2], SMALL);
        v.release(taken[3], SMALL);
        let mut again = [o.alloc(SMALL).unwrap(), o.alloc(SMALL).unwrap()];
        again.sort_unstable();
        assert_eq!(again, [taken[2], taken[3]]);
        assert_eq!(o.alloc(SMALL), None, "the held blocks stay out");
        v.release(taken[0], SMALL);
        assert_eq!(
            o.alloc(LARGE),
            Some(taken[0]),
            "large ones borrow a hot block"
        );
        // Returned after a block allocated later.
        v.release(taken[5], SMALL);
        v.release(again[1], SMALL);
        let mut last = [o.alloc(SMALL).unwrap(), o.alloc(SMALL).unwrap()];
        last.sort_unstable();
        let mut want = [taken[5], again[1]];
        want.sort_unstable();
        assert_eq!(last, want);
        assert_eq!(o.alloc(SMALL), None);
        // A cold block returned serves a small fragment when the hot set is out.
        v.release(cold[7], SMALL);
        assert_eq!(o.alloc(SMALL), Some(cold[7]));
    }

    #[test]
    fn an_unannounced_block_is_handed_out_next() {
        let (_f, _d, p) = pool(32, 64);
        let mut o = PoolOwner::new(p);
        let a = o.alloc(SMALL).unwrap();
        let b = o.alloc(SMALL).unwrap();
        o.unalloc(b);
        assert_eq!(o.alloc(SMALL), Some(b));
        // Not the newest: found on a later allocation all the same.
        o.unalloc(a);
        assert_eq!(o.alloc(SMALL), Some(a));
        let c = o.alloc(LARGE).unwrap();
        o.unalloc(c);
        assert_eq!(o.alloc(LARGE), Some(c + 1), "the other blocks keep turning");
        let rest: Vec<u32> = std::iter::from_fn(|| o.alloc(SMALL)).collect();
        assert_eq!(
            rest.len(),
            29,
            "a block was lost or handed out twice: {rest:?}"
        );
    }

    /// The owner fills blocks and announces them through a ring; the receiver reads them and
    /// hands them back, on another thread. Under Miri the data-race detector checks that the
    /// flag's release/acquire orders every reuse of a block after the receiver's last read.
    #[test]
    fn blocks_cycle_between_owner_and_receiver_threads() {
        use super::super::fifo::{Consumer, HeapRing, Producer};
        // One hot block and seven others; small and large fragments alternate.
        let (_f, _d, p) = pool(8, 64);
        let ring = std::sync::Arc::new(HeapRing::new(4));
        let fifo = ring.fifo();
        let msgs: u32 = if cfg!(miri) { 40 } else { 2000 };
        let keep = ring.clone();
        let owner = std::thread::spawn(move || {
            let _keep = keep;
            let mut o = PoolOwner::new(p);
            let mut tx = Producer::new(fifo);
            for k in 0..msgs {
                let block = loop {
                    match o.alloc(if k % 2 == 0 { SMALL } else { LARGE }) {
                        Some(b) => break b,
                        None => std::thread::yield_now(),
                    }
                };
                // SAFETY: allocated, not yet announced; 64 bytes fit the block.
                unsafe { std::ptr::write_bytes(o.block_mut(block), k as u8, 64) };
                let claim = loop {
                    match tx.claim(1) {
                        Some(c) => break c,
                        None => std::thread::yield_now(),
                    }
                };
                // SAFETY: cell 0 of an unpublished claim.
                unsafe { (&mut *tx.body(&claim, 0))[..4].copy_from_slice(&block.to_le_bytes()) };
                tx.publish(claim);
            }
        });
        let v = PoolView::new(p);
        let mut rx = Consumer::new(fifo);
        for k in 0..msgs {
            let cell = loop {
                match rx.peek() {
                    Some(c) => break c,
                    None => {
                        rx.release();
                        std::thread::yield_now();
                    }
                }
            };
            // SAFETY: a published cell.
            let block = u32::from_le_bytes(unsafe { (&*cell)[..4].try_into().unwrap() });
            let data = v.block(block, 64).expect("announced block is in the pool");
            // SAFETY: the announced block holds 64 bytes until we release it.
            let bytes = unsafe { std::slice::from_raw_parts(data, 64) };
            assert!(bytes.iter().all(|&b| b == k as u8), "message {k} intact");
            v.release(block, SMALL);
            rx.advance(1);
            rx.release();
        }
        owner.join().unwrap();
    }

    #[test]
    fn untrusted_indices_are_refused() {
        let (_f, _d, p) = pool(2, 64);
        let v = PoolView::new(p);
        assert!(v.block(2, 1).is_none());
        assert!(v.block(0, 129).is_none());
        assert!(v.block(1, 65).is_none());
        assert!(v.block(1, 64).is_some());
        assert!(v.block(0, 65).is_some(), "a run of both blocks");
        v.release(7, SMALL);
    }

    #[test]
    fn runs_take_adjacent_free_blocks_outside_the_hot_set() {
        // 16 blocks: hot 0..2, runs of 3 start at 2..=13.
        let (_f, _d, p) = pool(16, 64);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        assert_eq!(run_blocks(16, 3), 3);
        assert_eq!(
            run_blocks(16, 8),
            3,
            "at most a quarter of the 14 other blocks"
        );
        assert_eq!(run_blocks(2, 4), 1);
        let a = o.alloc_run(3).unwrap();
        assert_eq!(a, 2);
        // The view accepts the run's length from its first block, and nothing past the pool.
        assert!(v.block(a, 3 * 64).is_some());
        assert!(v.block(13, 3 * 64).is_some());
        assert!(v.block(14, 3 * 64).is_none());
        // A block taken in the middle of the next candidate run is skipped over.
        let b = o.alloc(LARGE).unwrap();
        assert_eq!(b, 5);
        let c = o.alloc_run(3).unwrap();
        assert_eq!(c, 6);
        // A returned run frees each of its blocks, a partial last block included.
        v.release(a, 2 * 64 + 1);
        let mut got: Vec<u32> = (0..3).map(|_| o.alloc_run(1).unwrap()).collect();
        got.sort_unstable();
        assert_eq!(got, [9, 10, 11], "the scan goes on from the last run");
        for g in got {
            v.release(g, LARGE);
        }
        // Busy blocks everywhere but one gap of 2: no run of 3.
        o.unalloc_run(c, 3);
        let held: Vec<u32> = (2..16)
            .filter(|&i| i != 5)
            .map(|_| o.alloc(LARGE).unwrap())
            .collect();
        assert_eq!(o.alloc_run(3), None);
        assert_eq!(held.len(), 13);
        v.release(3, 2 * 64);
        assert_eq!(o.alloc_run(3), None, "two free blocks next to busy ones");
        v.release(b, LARGE);
        assert_eq!(
            o.alloc_run(3),
            Some(3),
            "three adjacent free blocks make a run"
        );
    }
}
