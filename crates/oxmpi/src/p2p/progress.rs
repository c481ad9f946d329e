//! How callers reach the engine and how they wait for it.
//!
//! [`EngineCell`] takes a lock only at `THREAD_SERIALIZED`/`MULTIPLE`; at lower levels the
//! handle types are neither `Send` nor `Sync`, so only one thread can ever get here.
//! [`Backoff`] is the waiting policy: spin on the engine for a while, then yield the core,
//! then sleep in growing steps, so more ranks than cores still make progress; with more ranks
//! than cores it yields almost at once ([`WaitPolicy`]). A rank with TCP peers sleeps in the
//! kernel on the sockets instead ([`Wakeup`]), so data that arrives wakes it at once: only
//! that, after a short spin, when sockets are all it has; in place of the blind sleeps (each
//! bounded, shared memory checked between them) when it has shared-memory peers too.
//!
//! No user code runs inside [`EngineCell::with`] (it refuses re-entry): schedules stop before
//! user steps and the engine parks them ([`UnlockedWork`]); every wait loop calls
//! [`EngineCell::run_parked`], which runs those steps, and drops finished schedules holding
//! user code, with the engine unlocked.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::engine::{Engine, Retired, Running};
use super::request::ReqId;
use crate::transport::Wakeup;

/// A parked schedule and its request.
pub type Parked = (ReqId, Running);

/// Schedules that wait for a caller with the engine unlocked: parked before a step that runs
/// user code, or finished with user code to drop. Every wait loop hands them out through
/// [`EngineCell::run_parked`], so no user code runs inside [`EngineCell::with`].
#[derive(Debug, Default)]
pub struct UnlockedWork {
    parked: Vec<Parked>,
    retired: Vec<Retired>,
    /// Set under the lock when there is work here; read without it by `run_parked`, so that
    /// waiting costs one load while there is none.
    signal: Arc<AtomicBool>,
}

impl UnlockedWork {
    /// Parks schedule `id` until its user step has run.
    pub fn park(&mut self, id: ReqId, s: Running) {
        self.parked.push((id, s));
        self.signal.store(true, Ordering::Release);
    }

    /// Keeps a finished schedule until it can be dropped with the engine unlocked.
    pub fn retire(&mut self, s: Retired) {
        self.retired.push(s);
        self.signal.store(true, Ordering::Release);
    }

    /// Whether nothing is parked or retired.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.parked.is_empty() && self.retired.is_empty()
    }

    fn take(&mut self) -> (Vec<Parked>, Vec<Retired>) {
        self.signal.store(false, Ordering::Relaxed);
        (
            std::mem::take(&mut self.parked),
            std::mem::take(&mut self.retired),
        )
    }
}

/// The engine plus the lock its thread level needs.
pub struct EngineCell {
    lock: Option<Mutex<()>>,
    /// Who is inside [`with`](Self::with): 0 for nobody, else the thread's token (always 1
    /// without a lock, where only one thread gets here). Catches re-entry, which would
    /// deadlock on the lock or alias `&mut Engine` without one.
    inside: AtomicUsize,
    /// The engine's [`UnlockedWork::signal`].
    signal: Arc<AtomicBool>,
    engine: UnsafeCell<Engine>,
}

/// Clears [`EngineCell::inside`] when `with` returns or unwinds.
struct Leave<'a>(&'a AtomicUsize);

impl Drop for Leave<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// A token unique to the calling thread among live threads (never 0 or 1).
// Out of line: inlined, the compiler computes the TLS address before the branch that needs
// it, which in the C ABI's shared library is a `__tls_get_addr` call on every unlocked entry.
#[inline(never)]
fn thread_token() -> usize {
    thread_local!(static TOKEN: u16 = const { 0 });
    TOKEN.with(|t| t as *const u16 as usize)
}

#[cold]
#[inline(never)]
fn reentered() -> ! {
    panic!(
        "oxmpi: MPI was called from inside the progress engine (re-entry); \
         user code must not run inside EngineCell::with"
    )
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
// (see `threading`; a request becomes `Send` only through `Request::into_send`, which refuses
// these levels), so all accesses come from the one thread that initialized MPI.
unsafe impl Sync for EngineCell {}
// SAFETY: as above; moving the cell itself happens only before handles exist or under the lock.
unsafe impl Send for EngineCell {}

impl EngineCell {
    /// Wraps `engine`, locking if `locked`.
    pub fn new(mut engine: Engine, locked: bool) -> Self {
        let signal = engine.unlocked_work().signal.clone();
        EngineCell {
            lock: locked.then(|| Mutex::new(())),
            inside: AtomicUsize::new(0),
            signal,
            engine: UnsafeCell::new(engine),
        }
    }

    /// Runs `f` with exclusive access to the engine.
    ///
    /// # Panics
    /// If `f` calls back into `with` on this thread (re-entry): that would deadlock on the
    /// lock, or alias `&mut Engine` without one. Engine code never runs user code, so only a
    /// misuse of this (internal) interface gets here.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        let me = if self.lock.is_some() {
            thread_token()
        } else {
            1
        };
        if self.inside.load(Ordering::Relaxed) == me {
            reentered();
        }
        let _guard = self
            .lock
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()));
        self.inside.store(me, Ordering::Relaxed);
        // Declared after the guard, so dropped before it: cleared while still exclusive.
        let _leave = Leave(&self.inside);
        // SAFETY: exclusive access: the guard (or the single-thread guarantee above) excludes
        // any other thread, and `inside` excludes this thread's own re-entry (checked before
        // the lock, set after it, cleared on every exit including unwinding).
        f(unsafe { &mut *self.engine.get() })
    }

    /// Runs the user steps of parked schedules and drops finished schedules that hold user
    /// code, with the engine unlocked, so that user code may call MPI. Every wait loop calls
    /// it: a contribution parked here may be what a peer is waiting for. Costs one load when
    /// there is nothing to do; returns whether there was something.
    ///
    /// # Panics
    /// Resumes the panic of a user step, after its schedule is back in the engine with the
    /// panic recorded as its error.
    #[inline]
    pub fn run_parked(&self) -> bool {
        if !self.signal.load(Ordering::Acquire) {
            return false;
        }
        self.run_parked_slow();
        true
    }

    #[cold]
    fn run_parked_slow(&self) {
        let (mut parked, retired) = self.with(|e| e.unlocked_work().take());
        let mut panic = None;
        for (_, s) in &mut parked {
            if let Err(p) = s.run_unlocked() {
                panic.get_or_insert(p);
            }
        }
        if !parked.is_empty() {
            self.with(|e| e.resume_schedules(&mut parked));
        }
        // User `Drop`s run here, unlocked; the parked schedules are safe in the engine first.
        drop(retired);
        if let Some(p) = panic {
            std::panic::resume_unwind(p);
        }
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
    /// Blocks until a transport may have work, instead of sleeping blind (TCP).
    pub wakeup: Option<Wakeup>,
    /// Whether only the `wakeup` transport can bring work (no shared-memory peers): waiting
    /// then blocks on it right after the spin, and never yields or sleeps blind.
    pub wakeup_only: bool,
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
            wakeup: None,
            wakeup_only: false,
        }
    }

    /// The policy of a rank with a transport that can wake it (`wakeup`); `only`: it has no
    /// other peers than that transport's: it polls at once as many times as its own spin
    /// allows (at most `spin`; 16 or fewer when ranks outnumber cores), then `spin` times
    /// yielding the core before each, then blocks. Polling without the yield saves the
    /// latency of a `sched_yield` per arrival (1 B between namespace hosts: 11.2 → 9.7 µs);
    /// the yields keep a crowded host's peers running.
    pub fn with_wakeup(mut self, wakeup: Option<Wakeup>, only: bool, spin: u32) -> Self {
        self.wakeup = wakeup;
        self.wakeup_only = only && wakeup.is_some();
        if self.wakeup_only {
            self.spin = self.spin.min(spin);
            self.yields = spin;
            // The arrival word the inner spin watches never sees socket data: poll at once.
            self.inner_spin = 1;
        }
        self
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
        } else if let Some(w) = p.wakeup.filter(|_| p.wakeup_only) {
            // Only the sockets bring work: block on them (bounded, for the rare work that
            // comes from elsewhere: another thread, a stranger's deadline).
            w.wait(Duration::from_micros(p.max_sleep_us.max(1) as u64));
        } else {
            let step = (self.polls - p.spin - p.yields).min(p.max_sleep_us.max(1));
            let step = Duration::from_micros(step as u64);
            match p.wakeup {
                // Socket data ends the wait at once; shared memory is checked after it.
                Some(w) => {
                    w.wait(step);
                }
                None => std::thread::sleep(step),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(locked: bool) -> EngineCell {
        EngineCell::new(Engine::new(0, 1, None, &[]), locked)
    }

    #[test]
    fn reentering_the_engine_panics_instead_of_aliasing_or_deadlocking() {
        for locked in [false, true] {
            let c = cell(locked);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                c.with(|_| c.with(|e| e.live_requests()))
            }));
            let msg = r.expect_err("re-entry must be refused");
            let msg = (msg.downcast_ref::<&str>().copied())
                .or(msg.downcast_ref::<String>().map(|s| s.as_str()))
                .unwrap_or("");
            assert!(msg.contains("re-entry"), "locked {locked}: {msg}");
            // Unwinding left the cell usable: not marked as entered, lock released.
            assert_eq!(c.with(|e| e.live_requests()), 0, "locked {locked}");
            assert_eq!(c.with(|_| 1) + c.with(|_| 1), 2);
        }
    }

    #[test]
    fn other_threads_wait_for_the_lock_rather_than_counting_as_reentry() {
        let c = cell(true);
        let inside = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                c.with(|_| {
                    inside.wait();
                    std::thread::sleep(Duration::from_millis(20));
                })
            });
            inside.wait();
            // Blocks until the other thread leaves, then enters normally.
            assert_eq!(c.with(|e| e.live_requests()), 0);
        });
    }

    #[test]
    fn run_parked_with_nothing_parked_does_nothing() {
        let c = cell(false);
        assert!(!c.run_parked());
        assert!(c.with(|e| e.unlocked_work().is_empty()));
    }

    #[test]
    fn oversubscribed_ranks_barely_spin() {
        let alone = WaitPolicy::new(2000, 100, 50, 2, 2);
        assert_eq!((alone.spin, alone.inner_spin), (2000, 64));
        let crowded = WaitPolicy::new(2000, 100, 50, 8, 2);
        assert_eq!((crowded.spin, crowded.inner_spin), (16, 1));
    }

    #[test]
    fn ranks_with_only_tcp_peers_poll_then_yield_then_block_and_others_keep_their_spin() {
        let base = WaitPolicy::new(2000, 100, 50, 1, 2);
        assert_eq!(base.with_wakeup(None, true, 8), base);
        let fd = crate::transport::Wakeup::new(-1);
        let only = base.with_wakeup(Some(fd), true, 8);
        assert_eq!((only.spin, only.yields, only.wakeup_only), (8, 8, true));
        assert_eq!(only.inner_spin, 1);
        let crowded = WaitPolicy::new(2000, 100, 50, 8, 2).with_wakeup(Some(fd), true, 1000);
        assert_eq!((crowded.spin, crowded.yields), (16, 1000));
        let mixed = base.with_wakeup(Some(fd), false, 8);
        assert_eq!(
            (mixed.spin, mixed.yields, mixed.inner_spin),
            (2000, 100, 64)
        );
        assert!(!mixed.wakeup_only && mixed.wakeup.is_some());
    }

    #[test]
    fn a_blocking_backoff_returns_when_its_descriptor_is_ready() {
        let (mut a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        std::io::Write::write_all(&mut a, b"x").unwrap();
        use std::os::fd::AsRawFd;
        let w = crate::transport::Wakeup::new(b.as_raw_fd());
        // A long bound: only readiness can end these waits soon.
        let mut p = WaitPolicy::new(0, 0, 5_000_000, 1, 2).with_wakeup(Some(w), true, 2);
        let mut backoff = Backoff::new(p);
        for _ in 0..10 {
            backoff.snooze();
        }
        p.wakeup_only = false;
        let mut backoff = Backoff::new(p);
        for _ in 0..10 {
            backoff.snooze();
        }
        assert_eq!(backoff.polls, 10);
    }

    #[test]
    fn backoff_escalates_and_resets() {
        let mut b = Backoff::new(WaitPolicy {
            spin: 2,
            inner_spin: 1,
            yields: 64,
            max_sleep_us: 5,
            wakeup: None,
            wakeup_only: false,
        });
        for _ in 0..80 {
            b.snooze();
        }
        assert!(b.polls > 66);
        b.reset();
        assert_eq!(b.polls, 0);
    }
}
