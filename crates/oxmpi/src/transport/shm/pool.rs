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

/// The owner's allocator over its pool.
///
/// Hands out the most recently returned block first, so a run keeps its working set to the
/// few blocks in flight: handing blocks out in turn made a short run touch every block (2 MiB
/// at the defaults) cold, once each. The owner's private bookkeeping knows which blocks it
/// handed out; the shared flags only say which of those came back.
#[derive(Debug)]
pub struct PoolOwner {
    pool: PoolRef,
    /// Blocks known to be free; the last is handed out next.
    free: Vec<u32>,
    /// Blocks handed out and not seen back yet, oldest first.
    inflight: VecDeque<u32>,
}

impl PoolOwner {
    /// The allocator of `pool`; exactly one per pool. All blocks must be free.
    pub fn new(pool: PoolRef) -> PoolOwner {
        let n = pool.blocks;
        PoolOwner {
            pool,
            // Block 0 on top, so blocks are first taken in index order.
            free: (0..n).rev().collect(),
            inflight: VecDeque::with_capacity(n as usize),
        }
    }

    /// Whether the receiver has handed `block` back.
    #[inline]
    fn returned(&self, block: u32) -> bool {
        // Acquire: the receiver finished reading the block before it stored FREE.
        self.pool.flag(block).load(Ordering::Acquire) == FREE
    }

    /// Takes a free block, the most recently returned one first; `None` when every block is
    /// in flight (back-pressure: the caller retries after progress).
    #[inline]
    pub fn alloc(&mut self) -> Option<u32> {
        // Receivers return blocks in the order they were sent, so the returned blocks are at the
        // ends of `inflight`: the newest (a ping-pong's single block comes back before the reply
        // that lets us send again) and the oldest (a stream's window). Each block is taken off
        // once, so this costs at most two flag loads beyond the blocks it finds.
        while let Some(&b) = self.inflight.back() {
            if !self.returned(b) {
                break;
            }
            self.inflight.pop_back();
            self.free.push(b);
        }
        while let Some(&b) = self.inflight.front() {
            if !self.returned(b) {
                break;
            }
            self.inflight.pop_front();
            self.free.push(b);
        }
        if self.free.is_empty() {
            self.reclaim_all();
        }
        let b = self.free.pop()?;
        self.pool.flag(b).store(BUSY, Ordering::Relaxed);
        // Within capacity: every block is in exactly one of `free` and `inflight`.
        self.inflight.push_back(b);
        Some(b)
    }

    /// Finds blocks returned out of order (several receivers, each returning in its own order),
    /// only when no block is known free.
    #[cold]
    fn reclaim_all(&mut self) {
        let pool = self.pool;
        let free = &mut self.free;
        self.inflight.retain(|&b| {
            // Acquire: as in `returned`.
            let back = pool.flag(b).load(Ordering::Acquire) == FREE;
            if back {
                free.push(b);
            }
            !back
        });
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
        // The newest allocation goes straight back on top; any other is found by `alloc`.
        if self.inflight.back() == Some(&block) {
            self.inflight.pop_back();
            self.free.push(block);
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

    /// The announced bytes of `block`, or `None` if the peer named a block or length outside
    /// its pool (never trust indices that came through shared memory).
    #[inline]
    pub fn block(&self, block: u32, len: usize) -> Option<*const u8> {
        (block < self.pool.blocks && len <= self.pool.block_size())
            .then(|| self.pool.data(block).cast_const())
    }

    /// Hands `block` back to its owner; the caller has finished reading it.
    #[inline]
    pub fn release(&self, block: u32) {
        if block < self.pool.blocks {
            self.pool.flag(block).store(FREE, Ordering::Release);
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

    #[test]
    fn owner_allocates_receiver_releases() {
        let (_f, _d, p) = pool(3, 128);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        let a = o.alloc().unwrap();
        let b = o.alloc().unwrap();
        let c = o.alloc().unwrap();
        assert_eq!(o.alloc(), None, "exhausted");
        assert_eq!([a, b, c], [0, 1, 2]);
        // SAFETY: `b` is allocated and not announced.
        unsafe { o.block_mut(b).write(9) };
        // SAFETY: the view's pointer is inside the pool.
        assert_eq!(unsafe { v.block(b, 128).unwrap().read() }, 9);
        v.release(b);
        assert_eq!(o.alloc(), Some(b));
        o.unalloc(a);
        assert_eq!(o.alloc(), Some(a));
    }

    #[test]
    fn a_returned_block_is_handed_out_again_first() {
        let (_f, _d, p) = pool(8, 64);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        // A ping-pong: one block in flight, returned before the next send.
        for _ in 0..20 {
            let b = o.alloc().unwrap();
            assert_eq!(b, 0, "the working set stays one block");
            v.release(b);
        }
        // Two in flight, returned newest first and oldest first: both stay in {0, 1}.
        for k in 0..20 {
            let a = o.alloc().unwrap();
            let b = o.alloc().unwrap();
            assert_eq!([a.min(b), a.max(b)], [0, 1]);
            if k % 2 == 0 {
                v.release(b);
                v.release(a);
            } else {
                v.release(a);
                v.release(b);
            }
        }
    }

    #[test]
    fn a_stream_reuses_its_window_and_wraps() {
        let (_f, _d, p) = pool(16, 64);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        // A window of 4 in flight; the receiver returns the oldest as each new one goes out.
        let mut window = VecDeque::new();
        let mut seen = [false; 16];
        for _ in 0..200 {
            if window.len() == 4 {
                v.release(window.pop_front().unwrap());
            }
            let b = o.alloc().unwrap();
            assert!(!window.contains(&b), "block {b} handed out twice");
            seen[b as usize] = true;
            window.push_back(b);
        }
        let used = seen.iter().filter(|&&s| s).count();
        assert!(used <= 5, "a window of 4 touched {used} blocks");
        // Everything back: all 16 can be taken at once, then the pool is exhausted.
        for b in window.drain(..) {
            v.release(b);
        }
        let mut all: Vec<u32> = (0..16).map(|_| o.alloc().unwrap()).collect();
        assert_eq!(o.alloc(), None, "exhausted");
        all.sort_unstable();
        assert_eq!(all, (0..16).collect::<Vec<_>>());
    }

    #[test]
    fn blocks_returned_out_of_order_are_found() {
        let (_f, _d, p) = pool(6, 64);
        let mut o = PoolOwner::new(p);
        let v = PoolView::new(p);
        let taken: Vec<u32> = (0..6).map(|_| o.alloc().unwrap()).collect();
        assert_eq!(o.alloc(), None, "exhausted");
        // Two receivers: one returns its blocks from the middle, the other holds its blocks.
        v.release(taken[2]);
        v.release(taken[3]);
        let mut again = [o.alloc().unwrap(), o.alloc().unwrap()];
        again.sort_unstable();
        assert_eq!(again, [taken[2], taken[3]]);
        assert_eq!(o.alloc(), None, "the held blocks stay out");
        v.release(taken[0]);
        assert_eq!(o.alloc(), Some(taken[0]));
        // Returned after a block allocated later.
        v.release(taken[5]);
        v.release(again[1]);
        let mut last = [o.alloc().unwrap(), o.alloc().unwrap()];
        last.sort_unstable();
        let mut want = [taken[5], again[1]];
        want.sort_unstable();
        assert_eq!(last, want);
        assert_eq!(o.alloc(), None);
    }

    #[test]
    fn an_unannounced_block_goes_back_on_top() {
        let (_f, _d, p) = pool(4, 64);
        let mut o = PoolOwner::new(p);
        let a = o.alloc().unwrap();
        let b = o.alloc().unwrap();
        o.unalloc(b);
        assert_eq!(o.alloc(), Some(b));
        // Not the newest: found on a later allocation all the same.
        o.unalloc(a);
        let c = o.alloc().unwrap();
        assert_eq!(c, a);
        let rest: Vec<u32> = std::iter::from_fn(|| o.alloc()).collect();
        assert_eq!(rest.len(), 2, "a block was lost or handed out twice: {rest:?}");
    }

    /// The owner fills blocks and announces them through a ring; the receiver reads them and
    /// hands them back, on another thread. Under Miri the data-race detector checks that the
    /// flag's release/acquire orders every reuse of a block after the receiver's last read.
    #[test]
    fn blocks_cycle_between_owner_and_receiver_threads() {
        use super::super::fifo::{Consumer, HeapRing, Producer};
        let (_f, _d, p) = pool(2, 64);
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
                    match o.alloc() {
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
            v.release(block);
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
        assert!(v.block(0, 65).is_none());
        assert!(v.block(1, 64).is_some());
        v.release(7);
    }
}
