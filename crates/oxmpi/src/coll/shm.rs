//! Intra-host collectives through shared memory (`transport::shm::node`): barrier, and
//! small allreduce, reduce and broadcast through per-rank arrival counters and data slots.
//! Blocking forms only: each is one arrival and one wait, not a program of messages.
//!
//! The world meets in its own counter; any other intracommunicator whose members all share
//! this host takes one of the per-communicator channels on its first such collective: the
//! members agree on the lowest channel free in all of them with one allreduce (over
//! messages), and the communicator keeps it until its last handle is dropped. Channels are
//! few ([`CHANNELS`]); a communicator that finds none falls back to message algorithms.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use super::{bytes, bytes_mut};
use crate::comm::Communicator;
use crate::error::{Error, ErrorClass, Result};
use crate::op::{Op, Reducible};
use crate::p2p::engine::Engine;
use crate::threading::ThreadLevel;
use crate::transport::shm::node::{Meet, Node, CHANNELS, CHAN_BUSY};
use crate::transport::shm::COLL_SLOT_BYTES;

/// Largest communicator whose collectives go through shared-memory counters (each rank reads
/// every other rank's counter, so the cost grows with p).
const SHM_MAX_RANKS: usize = 64;

/// Channels given back by dropped communicators, to release under the engine lock at the
/// next shared-memory collective (a communicator's drop cannot reach the engine).
static RELEASED: Mutex<Vec<(usize, Vec<u32>)>> = Mutex::new(Vec::new());
/// Whether [`RELEASED`] may be non-empty (checked on every shared-memory collective).
static PENDING: AtomicBool = AtomicBool::new(false);

/// A communicator's claim on a shared-memory channel, kept in its shared state.
#[derive(Debug, Default)]
pub(crate) struct ShmChannel {
    /// Whether the communicator may take a channel: an intracommunicator with contexts of
    /// its own (not the world, nor a scratch communicator borrowing its parent's contexts).
    eligible: bool,
    /// The channel and the members' world ranks, once agreed (`None`: messages only).
    chan: OnceLock<Option<(usize, Vec<u32>)>>,
}

/// `OXMPI_SHM_COLL_COMMS`, read once (an unreadable configuration failed `init` already).
fn channels_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| crate::config::Config::from_env().map_or(true, |c| c.shm_coll_comms))
}

impl ShmChannel {
    /// The claim of a new communicator; `eligible` as for the field.
    pub(crate) fn new(eligible: bool) -> Self {
        ShmChannel {
            eligible,
            chan: OnceLock::new(),
        }
    }
}

impl Drop for ShmChannel {
    fn drop(&mut self) {
        if let Some(Some(claim)) = self.chan.take() {
            RELEASED
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(claim);
            PENDING.store(true, Ordering::Release);
        }
    }
}

/// The engine's intra-host collective helpers, which `shm_meet` found.
fn node_of(e: &mut Engine) -> Result<&mut dyn Node> {
    e.node()
        .ok_or_else(|| Error::new(ErrorClass::Intern, "no shared-memory transport"))
}

/// The node with every channel given back since the last call released.
fn node_released(e: &mut Engine) -> Result<&mut dyn Node> {
    let n = node_of(e)?;
    // A plain load first: no read-modify-write of a shared line on every collective.
    if PENDING.load(Ordering::Relaxed) && PENDING.swap(false, Ordering::Acquire) {
        let gone = std::mem::take(&mut *RELEASED.lock().unwrap_or_else(|p| p.into_inner()));
        for (k, members) in gone {
            n.chan_release(k, members);
        }
    }
    Ok(n)
}

/// The error of a shared-memory collective whose ranks passed different counts, with the
/// classes the message algorithms report (more data than expected truncates).
fn count_mismatch(call: &str, rank: u32, sent: usize, expect: usize) -> Error {
    if sent > expect {
        Error::new(
            ErrorClass::Truncate,
            format!("{call}: rank {rank} sent more data than this rank expects (counts differ between ranks)"),
        )
    } else {
        Error::new(
            ErrorClass::Count,
            format!("{call}: rank {rank} sent {sent} bytes where this rank expects {expect} (counts differ between ranks)"),
        )
    }
}

impl<L: ThreadLevel> Communicator<L> {
    /// The shared-memory channel this communicator's small collectives use, if it has taken
    /// one (on its first barrier or small reduction); for tests and diagnostics.
    #[doc(hidden)]
    pub fn shared_memory_channel(&self) -> Option<usize> {
        self.state.shm.chan.get()?.as_ref().map(|(k, _)| *k)
    }

    /// Where this communicator's small collectives meet in shared memory, if they can: the
    /// world's counter when every rank of the job is on this host, or the communicator's
    /// channel (agreed on first use, collectively) when every member is.
    pub(super) fn shm_meet(&self) -> Result<Option<Meet>> {
        let st = &self.state;
        if st.context == crate::comm::WORLD_CONTEXT {
            // Only the one communicator every rank calls in the same order may use the world
            // counter: the world itself (not a scratch communicator that borrows its
            // context for a subset of ranks).
            let world = st.members.len() == self.rt.size as usize
                && st.members.len() <= SHM_MAX_RANKS
                && self.rt.coll_single_host
                && self
                    .rt
                    .engine
                    .with(|e| e.node().is_some_and(|n| n.spans_world()));
            return Ok(world.then_some(Meet::World));
        }
        if let Some(c) = st.shm.chan.get() {
            return Ok(c.as_ref().map(|(k, _)| Meet::Chan(*k)));
        }
        let chan = if self.shm_chan_possible() {
            self.shm_chan_agree()?
        } else {
            None
        };
        let meet = chan.map(Meet::Chan);
        if let Err(Some((k, members))) = st.shm.chan.set(chan.map(|k| (k, st.members.clone()))) {
            // Another thread agreed first (only an erroneous program gets here): give ours
            // back as a freed communicator would.
            self.rt.engine.with(|e| {
                node_of(e)?.chan_release(k, members);
                Ok::<_, Error>(())
            })?;
        }
        Ok(meet)
    }

    /// Whether this communicator may take a channel: eligible, 2 to [`SHM_MAX_RANKS`]
    /// members, all on one host by the collective placement and reachable through the
    /// shared-memory transport. Every member computes the same answer.
    fn shm_chan_possible(&self) -> bool {
        let st = &self.state;
        let m = &st.members;
        st.shm.eligible
            && st.remote.is_none()
            && channels_enabled()
            && (2..=SHM_MAX_RANKS).contains(&m.len())
            && m.iter()
                .all(|&r| self.rt.coll_locality.host_of(r) == self.rt.coll_locality.host_of(m[0]))
            && self
                .rt
                .engine
                .with(|e| e.node().is_some_and(|n| m.iter().all(|&r| n.is_local(r))))
    }

    /// Agrees with the other members on a channel: each offers the channels it can take,
    /// an allreduce (maximum; busy is the largest value) finds those free in all, and each
    /// takes the lowest of them.
    fn shm_chan_agree(&self) -> Result<Option<usize>> {
        let offer = self
            .rt
            .engine
            .with(|e| Ok::<_, Error>(node_released(e)?.chan_offer()))?;
        let mut agreed = [0u64; CHANNELS];
        let r = self
            .allreduce_plan("allreduce", Some(&offer[..]), &mut agreed[..], &Op::Max)
            .and_then(|p| self.coll_run(p));
        if r.is_err() {
            agreed = [CHAN_BUSY; CHANNELS];
        }
        let k = self
            .rt
            .engine
            .with(|e| Ok::<_, Error>(node_of(e)?.chan_settle(&agreed)))?;
        r.map(|()| k)
    }

    /// Where an exchange of `len` bytes per rank can meet, if it fits the slots.
    pub(super) fn shm_fits(&self, len: usize) -> Result<Option<Meet>> {
        if len == 0 || len > COLL_SLOT_BYTES {
            return Ok(None);
        }
        self.shm_meet()
    }

    /// Enters collective `at` with `data`, returning the arrival number.
    fn shm_arrive(&self, at: Meet, data: &[u8]) -> Result<u64> {
        self.rt
            .engine
            .with(|e| Ok::<_, Error>(node_released(e)?.arrive(at, data)))
    }

    /// Waits until every member has arrived at shared-memory collective `n`.
    fn shm_coll_wait(&self, at: Meet, n: u64) -> Result<()> {
        let members = &self.state.members;
        crate::request::block_on(&self.rt, || {
            self.rt.engine.with(|e| {
                for _ in 0..self.rt.wait.inner_spin {
                    if node_of(e)?.arrived(at, members, n)? {
                        return Ok(Some(()));
                    }
                }
                // Peers may need our FINs or ACKs to reach the collective.
                e.progress();
                Ok(node_of(e)?.arrived(at, members, n)?.then_some(()))
            })
        })
    }

    /// The barrier through arrival counters.
    pub(super) fn shm_barrier(&self, at: Meet) -> Result<()> {
        let n = self.shm_arrive(at, &[])?;
        self.shm_coll_wait(at, n)
    }

    /// Small broadcast: the root publishes `buf` with its arrival; after everyone has
    /// arrived the others copy it from the root's slot.
    pub(super) fn shm_bcast(&self, at: Meet, root: u32, buf: &mut [u8]) -> Result<()> {
        let is_root = self.state.rank == root;
        let n = self.shm_arrive(at, if is_root { buf } else { &[] })?;
        self.shm_coll_wait(at, n)?;
        if is_root {
            return Ok(());
        }
        let owner = self.state.members[root as usize];
        self.rt.engine.with(|e| -> Result<()> {
            let sent = node_of(e)?.slot_len(at, owner, n)?;
            if sent != buf.len() {
                return Err(count_mismatch("broadcast", root, sent, buf.len()));
            }
            let slot = node_of(e)?.slot(at, owner, n)?;
            // SAFETY: the root's slot holds the `buf.len()` bytes it published before arrival
            // `n` (the same count on every rank) in a live mapping; the root does not rewrite
            // it until we have arrived at `n + 1`.
            let theirs = unsafe { std::slice::from_raw_parts(slot, buf.len()) };
            buf.copy_from_slice(theirs);
            Ok(())
        })
    }

    /// Small reduction through shared memory: every rank publishes its vector (`send`, or
    /// `recv` itself in place); then `root` (every rank for an allreduce) combines all of
    /// them in rank order itself, so every rank that computes gets the same bits.
    pub(super) fn shm_reduce<T: Reducible>(
        &self,
        at: Meet,
        root: Option<u32>,
        send: Option<&[T]>,
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let kernel = op.kernel_for::<T>()?;
        let mine = send.unwrap_or(recv);
        let len = mine.len();
        let n = self.shm_arrive(at, bytes(mine))?;
        self.shm_coll_wait(at, n)?;
        if root.is_some_and(|r| r != self.state.rank) {
            return Ok(());
        }
        let recv = &mut recv[..len];
        let p = self.size() as usize;
        self.rt.engine.with(|e| -> Result<()> {
            for (r, &w) in self.state.members.iter().enumerate() {
                let sent = node_of(e)?.slot_len(at, w, n)?;
                if sent != size_of_val(recv) {
                    return Err(count_mismatch("reduce", r as u32, sent, size_of_val(recv)));
                }
            }
            Ok(())
        })?;
        if kernel.is_user() {
            // User code may call MPI: copy the contributions out (at most a slot each) and
            // combine them with the engine unlocked, in the same order as below.
            let mut all: Vec<T> = Vec::with_capacity(p * len);
            self.rt.engine.with(|e| -> Result<()> {
                for rank in &self.state.members {
                    let slot = node_of(e)?.slot(at, *rank, n)?.cast::<T>();
                    // SAFETY: the slot is aligned for `T` (64 bytes) in a live mapping and
                    // holds `len` values published before arrival `n`; its owner does not
                    // rewrite it until we have arrived at `n + 1`. Copied out under the lock.
                    all.extend_from_slice(unsafe { std::slice::from_raw_parts(slot, len) });
                }
                Ok(())
            })?;
            recv.copy_from_slice(&all[(p - 1) * len..]);
            for theirs in all.chunks_exact(len).rev().skip(1) {
                kernel.call(bytes(theirs), bytes_mut(recv));
            }
            return Ok(());
        }
        self.rt.engine.with(|e| -> Result<()> {
            let members = &self.state.members;
            for (k, rank) in members.iter().enumerate().rev() {
                let slot = node_of(e)?.slot(at, *rank, n)?.cast::<T>();
                // SAFETY: the slot is 64-byte aligned in a live mapping and holds `len`
                // values published before arrival `n`; its owner does not rewrite it until
                // we have arrived at `n + 1`. Our own slot was copied when we arrived, so
                // `recv` (our input in place) may be overwritten now.
                let theirs = unsafe { std::slice::from_raw_parts(slot, len) };
                if k == p - 1 {
                    recv.copy_from_slice(theirs);
                } else {
                    kernel.call(bytes(theirs), bytes_mut(recv));
                }
            }
            Ok(())
        })
    }
}
