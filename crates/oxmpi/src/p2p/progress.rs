//! How callers reach the engine and how they wait for it.
//!
//! [`EngineCell`] takes a lock only at `THREAD_SERIALIZED`/`MULTIPLE`; at lower levels the
//! handle types are neither `Send` nor `Sync`, so only one thread can ever get here.
//! [`Backoff`] is the waiting policy: spin on the engine for a while, then yield the core,
//! then sleep in growing steps, so more ranks than cores still make progress; with more ranks
//! than cores it yields almost at once ([`WaitPolicy`]).

use std::cell::UnsafeCell;
use std::sync::Mutex;
use std::time::Duration;

use super::engine::Engine;

/// The engine plus the lock its thread level needs.
pub struct EngineCell {
    lock: Option<Mutex<()>>,
    engine: UnsafeCell<Engine>,
}

impl std::fmt::Debug for EngineCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineCell")
            .field("locked", &self.lock.is_some())
            .finish()
    }
}

// SAFETY: with `lock` present every access is serialized by the mutex. Without it, the thread
// level is SINGLE or FUNNELED and every handle that can reach this cell is `!Send + !Sync`
// (see `threading`), so all accesses come from the one thread that initialized MPI.
unsafe impl Sync for EngineCell {}
// SAFETY: as above; moving the cell itself happens only before handles exist or under the lock.
unsafe impl Send for EngineCell {}

impl EngineCell {
    /// Wraps `engine`, locking if `locked`.
    pub fn new(engine: Engine, locked: bool) -> Self {
        EngineCell {
            lock: locked.then(|| Mutex::new(())),
            engine: UnsafeCell::new(engine),
        }
    }

    /// Runs `f` with exclusive access to the engine. `f` must not call back into `with`.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        let _guard = self
            .lock
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()));
        // SAFETY: exclusive access: the guard (or the single-thread guarantee above) excludes
        // any other `with`, and `f` does not re-enter.
        f(unsafe { &mut *self.engine.get() })
    }
}

/// How a rank waits, fixed at start-up from the tunables and from whether ranks outnumber
/// cores on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Engine polls before the first yield.
    pub spin: u32,
    /// Checks of the arrival word per engine poll while spinning.
    pub inner_spin: u32,
    /// Yields before sleeping starts.
    pub yields: u32,
    /// Longest sleep between polls once sleeping (microseconds).
    pub max_sleep_us: u32,
}

impl WaitPolicy {
    /// The policy for a rank whose host runs `local_ranks` ranks on `cores` cores. With more
    /// ranks than cores a spinning rank steals the core a peer needs to make progress, so
    /// waiting yields almost at once (Open MPI's "degraded" mode).
    pub fn new(
        spin: u32,
        yields: u32,
        max_sleep_us: u32,
        local_ranks: usize,
        cores: usize,
    ) -> Self {
        let oversubscribed = local_ranks > cores.max(1);
        WaitPolicy {
            spin: if oversubscribed { spin.min(16) } else { spin },
            inner_spin: if oversubscribed { 1 } else { 64 },
            yields,
            max_sleep_us,
        }
    }
}

/// Escalating wait: spin, then yield, then sleep.
#[derive(Debug)]
pub struct Backoff {
    polls: u32,
    policy: WaitPolicy,
}

impl Backoff {
    /// A fresh wait under `policy`.
    #[inline]
    pub fn new(policy: WaitPolicy) -> Self {
        Backoff { polls: 0, policy }
    }

    /// Starts over after progress was made.
    #[inline]
    pub fn reset(&mut self) {
        self.polls = 0;
    }

    /// Waits a little before the next poll.
    #[inline]
    pub fn snooze(&mut self) {
        self.polls = self.polls.saturating_add(1);
        let p = &self.policy;
        if self.polls <= p.spin {
            // Poll again at once: a `pause` costs ~40 ns on recent x86, a large share of a
            // small message's latency, and the engine poll itself is the back-off here.
            std::hint::black_box(());
        } else if self.polls <= p.spin.saturating_add(p.yields) {
            std::thread::yield_now();
        } else {
            let step = (self.polls - p.spin - p.yields).min(p.max_sleep_us.max(1));
            std::thread::sleep(Duration::from_micros(step as u64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversubscribed_ranks_barely_spin() {
        let alone = WaitPolicy::new(2000, 100, 50, 2, 2);
        assert_eq!((alone.spin, alone.inner_spin), (2000, 64));
        let crowded = WaitPolicy::new(2000, 100, 50, 8, 2);
        assert_eq!((crowded.spin, crowded.inner_spin), (16, 1));
    }

    #[test]
    fn backoff_escalates_and_resets() {
        let mut b = Backoff::new(WaitPolicy {
            spin: 2,
            inner_spin: 1,
            yields: 64,
            max_sleep_us: 5,
        });
        for _ in 0..80 {
            b.snooze();
        }
        assert!(b.polls > 66);
        b.reset();
        assert_eq!(b.polls, 0);
    }
}
