//! A window's control block: the words every member on the host reaches in the window's
//! shared segment. Pure layout and lock arithmetic over atomics, so it is tested in one
//! process.
//!
//! Layout for `n` members (all words 8 bytes, naturally aligned):
//! - per target `t`: its lock word and its accumulate mutex;
//! - `post[t][o]`: how many exposure epochs target `t` opened to origin `o` (PSCW);
//! - `done[t][o]`: how many access epochs origin `o` completed at target `t`;
//! - per target, [`MAX_REGIONS`] (address, length) pairs: memory attached to a dynamic
//!   window;
//! - per member, on a cache line of its own, how many element-wise accumulates it has in
//!   progress on this host (its entry count): an element-wise accumulate touches only its
//!   own line besides the target element, so a contended counter moves one line between
//!   cores, not three. A bulk accumulate takes the target's accumulate word exclusively and
//!   then waits until every member's count is zero (a big-reader lock). An element-wise one
//!   pays two locked instructions and a plain store where its count has one writer
//!   ([`acc_leave_sole`]); the entry itself must stay a locked one, since it orders the
//!   count's store before the load of the word (the store-load order only a fence gives).
//!   That leaves three when several threads share the count.

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
        self.regions_end().div_ceil(64) * 64 + 64 * n
    }

    fn regions_end(&self) -> usize {
        let n = self.n;
        16 * n + 16 * n * n + 16 * n * MAX_REGIONS
    }

    /// Member `o`'s count of element-wise accumulates in progress, alone on its cache line.
    pub fn acc_entries(&self, o: usize) -> usize {
        self.regions_end().div_ceil(64) * 64 + 64 * o
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

/// Enters an element-wise accumulate on the target whose accumulate word is `w`, counted in
/// this member's `entries`, unless a bulk accumulate holds the word or waits for it.
///
/// The count is raised before the word is read and the bulk side sets the word before it
/// reads the counts, so either the bulk accumulate sees this entry and waits for it, or this
/// entry sees the bulk accumulate and backs out. Every access to the words and counts is
/// sequentially consistent (on x86 each is a locked instruction whatever its ordering), so
/// the argument needs no reasoning about mixed orderings.
pub fn try_acc_enter(w: &AtomicU64, entries: &AtomicU64) -> bool {
    entries.fetch_add(1, Ordering::SeqCst);
    if w.load(Ordering::SeqCst) & (EXCLUSIVE | WAITING) == 0 {
        return true;
    }
    entries.fetch_sub(1, Ordering::SeqCst);
    false
}

/// Leaves what [`try_acc_enter`] entered: the element updates before it are visible to the
/// bulk accumulate that next sees the count at zero.
pub fn acc_leave(entries: &AtomicU64) {
    entries.fetch_sub(1, Ordering::SeqCst);
}

/// [`acc_leave`] for a count that only one thread changes at a time (every change to it
/// ordered before the next by happens-before): a plain release store, no locked instruction.
///
/// Still sound for the bulk side: it reads the counts with sequentially consistent loads
/// after its own sequentially consistent update of the word. Such a load reads either the
/// last sequentially consistent change before it in the single total order (an entry, which
/// is a read-modify-write), or a store not ordered before that change by happens-before. Every
/// earlier leave of this count happens before every later entry (one writer), so the bulk side
/// cannot read a stale zero from an earlier leave past an entry that preceded its check; and
/// when it reads this store's zero, the release makes the element updates visible to it.
pub fn acc_leave_sole(entries: &AtomicU64) {
    let v = entries.load(Ordering::Relaxed);
    entries.store(v - 1, Ordering::Release);
}

/// Takes an accumulate word exclusively if it is free, otherwise announces the wait (so new
/// element-wise accumulates hold off and cannot starve the bulk one). The holder must then
/// wait until [`acc_drained`] before touching the target.
pub fn try_acc_exclusive(w: &AtomicU64) -> bool {
    let v = w.load(Ordering::Relaxed);
    if v & !WAITING == 0 {
        return w
            .compare_exchange(v, EXCLUSIVE, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok();
    }
    if v & WAITING == 0 {
        w.fetch_or(WAITING, Ordering::SeqCst);
    }
    false
}

/// Whether every element-wise accumulate that entered before the bulk one took its word has
/// left: all the members' entry counts are zero.
pub fn acc_drained<'a>(mut entries: impl Iterator<Item = &'a AtomicU64>) -> bool {
    entries.all(|e| e.load(Ordering::SeqCst) == 0)
}

/// Gives up an exclusive accumulate word taken by [`try_acc_exclusive`] before the entries
/// drained, still announcing the wait.
pub fn acc_exclusive_retreat(w: &AtomicU64) {
    w.store(WAITING, Ordering::SeqCst);
}

/// Releases an exclusive accumulate word (another waiter announces itself again).
///
/// A sequentially consistent read-modify-write, like every other access of the protocol: a
/// release store of zero here (one locked instruction less per bulk accumulate) mixes a
/// non-SC store into the words' SC order, and Miri's weak-memory run of
/// `element_wise_and_bulk_accumulates_lose_nothing` then loses increments (795 of 800).
/// Whether that is an execution C++20 allows or one Miri's emulation invents, the argument
/// for the protocol is the all-SC one.
pub fn unlock_acc_exclusive(w: &AtomicU64) {
    w.fetch_and(!(EXCLUSIVE | WAITING), Ordering::SeqCst);
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
                assert_eq!(l.acc_entries(t) % 64, 0, "a cache line of its own");
                // The window core computes them from member 0's.
                assert_eq!(l.acc_entries(t), l.acc_entries(0) + 64 * t);
                all.push(l.acc_entries(t));
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
    fn a_bulk_accumulate_waits_for_entered_ones_and_holds_off_new_ones() {
        let w = AtomicU64::new(0);
        let mine = AtomicU64::new(0);
        let other = AtomicU64::new(0);
        let entries = || [&mine, &other].into_iter();
        assert!(try_acc_enter(&w, &mine));
        assert!(
            try_acc_enter(&w, &mine),
            "element-wise ones run side by side"
        );
        assert!(try_acc_exclusive(&w), "the word is free");
        assert!(!acc_drained(entries()), "two entered before it");
        assert!(!try_acc_enter(&w, &other), "the bulk one goes first");
        assert_eq!(other.load(Ordering::Relaxed), 0, "backed out");
        acc_leave(&mine);
        acc_leave(&mine);
        assert!(acc_drained(entries()));
        assert!(!try_acc_exclusive(&w), "one bulk at a time");
        unlock_acc_exclusive(&w);
        assert!(try_acc_enter(&w, &other));
        acc_leave(&other);
        // A bulk one that gives up before draining keeps new entries out until it is back.
        assert!(try_acc_enter(&w, &mine));
        assert!(try_acc_exclusive(&w));
        assert!(!acc_drained(entries()));
        acc_exclusive_retreat(&w);
        assert!(
            !try_acc_enter(&w, &other),
            "the retreated bulk one still waits"
        );
        acc_leave(&mine);
        assert!(try_acc_exclusive(&w) && acc_drained(entries()));
        unlock_acc_exclusive(&w);
        assert_eq!(w.load(Ordering::Relaxed), 0);
    }

    /// Element-wise increments (atomic) and bulk ones (a plain read-modify-write, kept whole
    /// only by the protocol) from several threads on one counter, half the element-wise ones
    /// leaving by the one-writer store: none is lost.
    #[test]
    fn element_wise_and_bulk_accumulates_lose_nothing() {
        // Miri runs this too (scripts/check-unsafe), far slower.
        const ROUNDS: usize = if cfg!(miri) { 200 } else { 2000 };
        let w = AtomicU64::new(0);
        let entries: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
        let count = AtomicU64::new(0);
        std::thread::scope(|s| {
            for me in 0..4 {
                let (w, entries, count) = (&w, &entries, &count);
                s.spawn(move || {
                    for i in 0..ROUNDS {
                        if (i + me) % 3 == 0 {
                            while !try_acc_exclusive(w) {
                                std::thread::yield_now();
                            }
                            while !acc_drained(entries.iter()) {
                                std::thread::yield_now();
                            }
                            let v = count.load(Ordering::Relaxed);
                            count.store(v + 1, Ordering::Relaxed);
                            unlock_acc_exclusive(w);
                        } else {
                            while !try_acc_enter(w, &entries[me]) {
                                std::thread::yield_now();
                            }
                            count.fetch_add(1, Ordering::Relaxed);
                            // Each thread owns its count: half leave by the plain store.
                            if me < 2 {
                                acc_leave_sole(&entries[me]);
                            } else {
                                acc_leave(&entries[me]);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(count.load(Ordering::Relaxed), 4 * ROUNDS as u64);
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
