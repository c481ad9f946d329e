//! A window's control block: the words every member on the host reaches in the window's
//! shared segment. Pure layout and lock arithmetic over atomics, so it is tested in one
//! process.
//!
//! Layout for `n` members (all words 8 bytes, naturally aligned):
//! - per target `t`: its lock word and its accumulate mutex;
//! - `post[t][o]`: how many exposure epochs target `t` opened to origin `o` (PSCW);
//! - `done[t][o]`: how many access epochs origin `o` completed at target `t`;
//! - per target, [`MAX_REGIONS`] (address, length) pairs: memory attached to a dynamic
//!   window.

use std::sync::atomic::{AtomicU64, Ordering};

/// Regions a member may attach to one dynamic window at once.
pub const MAX_REGIONS: usize = 64;

/// Set in a lock word while a process holds the exclusive lock; the low bits count shared
/// holders.
const EXCLUSIVE: u64 = 1 << 63;

/// Byte offsets of the control words for a window of `n` members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    n: usize,
}

impl Layout {
    /// The layout for `n` members.
    pub fn new(n: usize) -> Layout {
        Layout { n }
    }

    /// Bytes the control block takes, rounded up to a cache line.
    pub fn len(&self) -> usize {
        let n = self.n;
        (16 * n + 16 * n * n + 16 * n * MAX_REGIONS).div_ceil(64) * 64
    }

    /// Target `t`'s lock word.
    pub fn lock(&self, t: usize) -> usize {
        16 * t
    }

    /// Target `t`'s accumulate mutex.
    pub fn acc_mutex(&self, t: usize) -> usize {
        16 * t + 8
    }

    /// Exposure epochs target `t` opened to origin `o`.
    pub fn post(&self, t: usize, o: usize) -> usize {
        16 * self.n + 8 * (t * self.n + o)
    }

    /// Access epochs origin `o` completed at target `t`.
    pub fn done(&self, t: usize, o: usize) -> usize {
        16 * self.n + 8 * self.n * self.n + 8 * (t * self.n + o)
    }

    /// Slot `i` of target `t`'s attached regions: the address word; the length follows.
    pub fn region(&self, t: usize, i: usize) -> usize {
        16 * self.n + 16 * self.n * self.n + 16 * (t * MAX_REGIONS + i)
    }
}

/// Takes the exclusive lock if nobody holds the word.
pub fn try_lock_exclusive(w: &AtomicU64) -> bool {
    w.compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
}

/// Takes a shared lock if no exclusive holder has the word.
pub fn try_lock_shared(w: &AtomicU64) -> bool {
    let v = w.load(Ordering::Relaxed);
    v & EXCLUSIVE == 0
        && w.compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
}

/// Releases the exclusive lock.
pub fn unlock_exclusive(w: &AtomicU64) {
    w.fetch_and(!EXCLUSIVE, Ordering::Release);
}

/// Releases one shared lock.
pub fn unlock_shared(w: &AtomicU64) {
    w.fetch_sub(1, Ordering::Release);
}

/// Set in an accumulate lock word while a bulk accumulate waits: no new shared holder enters,
/// so a stream of element-wise atomics cannot starve it.
const WAITING: u64 = 1 << 62;

/// Takes an accumulate lock word shared (element-wise atomics run side by side) unless a bulk
/// accumulate holds it or waits for it.
pub fn try_acc_shared(w: &AtomicU64) -> bool {
    // An increment never fails because other shared holders come and go (a compare-exchange
    // would, under contention); one that finds a writer is taken back.
    if w.fetch_add(1, Ordering::Acquire) & (EXCLUSIVE | WAITING) == 0 {
        return true;
    }
    w.fetch_sub(1, Ordering::Relaxed);
    false
}

/// Takes an accumulate lock word exclusively if it is free, otherwise announces the wait.
pub fn try_acc_exclusive(w: &AtomicU64) -> bool {
    let v = w.load(Ordering::Relaxed);
    if v & !WAITING == 0 {
        return w
            .compare_exchange(v, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
    }
    if v & WAITING == 0 {
        w.fetch_or(WAITING, Ordering::Relaxed);
    }
    false
}

/// Releases an exclusive accumulate lock (another waiter announces itself again). Shared
/// increments that found the writer and are about to be taken back stay counted.
pub fn unlock_acc_exclusive(w: &AtomicU64) {
    w.fetch_and(!(EXCLUSIVE | WAITING), Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_disjoint_aligned_and_inside() {
        for n in [1, 2, 3, 7] {
            let l = Layout::new(n);
            let mut all = Vec::new();
            for t in 0..n {
                all.push(l.lock(t));
                all.push(l.acc_mutex(t));
                for o in 0..n {
                    all.push(l.post(t, o));
                    all.push(l.done(t, o));
                }
                for i in 0..MAX_REGIONS {
                    all.push(l.region(t, i));
                    all.push(l.region(t, i) + 8);
                }
            }
            let count = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), count, "n = {n}: overlapping words");
            assert!(all.iter().all(|o| o % 8 == 0 && o + 8 <= l.len()));
            assert_eq!(l.len() % 64, 0);
        }
    }

    #[test]
    fn exclusive_excludes_everyone_shared_share() {
        let w = AtomicU64::new(0);
        assert!(try_lock_shared(&w));
        assert!(try_lock_shared(&w));
        assert!(!try_lock_exclusive(&w), "readers hold it");
        unlock_shared(&w);
        unlock_shared(&w);
        assert!(try_lock_exclusive(&w));
        assert!(!try_lock_exclusive(&w));
        assert!(!try_lock_shared(&w), "a writer holds it");
        unlock_exclusive(&w);
        assert_eq!(w.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_waiting_bulk_accumulate_holds_off_new_shared_holders() {
        let w = AtomicU64::new(0);
        assert!(try_acc_shared(&w));
        assert!(!try_acc_exclusive(&w), "a shared holder is in");
        assert!(!try_acc_shared(&w), "the waiting writer goes first");
        unlock_shared(&w);
        assert!(try_acc_exclusive(&w));
        assert!(!try_acc_shared(&w));
        assert!(!try_acc_exclusive(&w));
        unlock_acc_exclusive(&w);
        assert!(try_acc_shared(&w));
        unlock_shared(&w);
        assert_eq!(w.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn threads_counting_under_the_lock_lose_nothing() {
        let w = AtomicU64::new(0);
        let count = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        while !try_lock_exclusive(&w) {
                            std::hint::spin_loop();
                        }
                        // A non-atomic read-modify-write: only the lock keeps it whole.
                        let v = count.load(Ordering::Relaxed);
                        count.store(v + 1, Ordering::Relaxed);
                        unlock_exclusive(&w);
                    }
                });
            }
        });
        assert_eq!(count.load(Ordering::Relaxed), 4000);
    }
}
