//! Intra-host collectives through shared memory: a barrier over per-rank arrival counters
//! and small allreduces through per-rank slots (`transport::shm::node`). Blocking forms only:
//! each is one arrival and one wait, not a program of messages.

use super::{bytes, bytes_mut};
use crate::comm::Communicator;
use crate::error::{Error, ErrorClass, Result};
use crate::op::{Op, Reducible};
use crate::p2p::engine::Engine;
use crate::threading::ThreadLevel;
use crate::transport::shm::node::Node;

/// Largest communicator whose barrier goes through shared-memory counters (each rank reads
/// every other rank's counter, so the cost grows with p).
const SHM_BARRIER_MAX_RANKS: i32 = 64;

/// The engine's intra-host collective helpers, which `shm_coll_possible` found.
fn node_of(e: &mut Engine) -> Result<&mut dyn Node> {
    e.node()
        .ok_or_else(|| Error::new(ErrorClass::Intern, "no shared-memory transport"))
}

impl<L: ThreadLevel> Communicator<L> {
    /// Whether this communicator's small collectives can meet in shared memory: it is the
    /// world, and every rank is on this host.
    pub(super) fn shm_coll_possible(&self) -> bool {
        // The arrival counters are per process, so only the one communicator every rank
        // calls in the same order may use them: the world itself (not a helper communicator
        // that borrows its context for a subset of ranks).
        self.state.context == crate::comm::WORLD_CONTEXT
            && self.state.members.len() == self.rt.size as usize
            && self.size() <= SHM_BARRIER_MAX_RANKS
            && self.rt.coll_single_host
            && self
                .rt
                .engine
                .with(|e| e.node().is_some_and(|n| n.spans_world()))
    }

    /// Whether an allreduce of `len` bytes fits the shared-memory slots.
    pub(super) fn shm_all_reduce_fits(&self, len: usize) -> bool {
        len > 0 && len <= crate::transport::shm::COLL_SLOT_BYTES && self.shm_coll_possible()
    }

    /// Waits until every rank has arrived at shared-memory collective `n`.
    fn shm_coll_wait(&self, n: u64) -> Result<()> {
        crate::request::block_on(&self.rt, || {
            self.rt.engine.with(|e| {
                for _ in 0..self.rt.wait.inner_spin {
                    if node_of(e)?.barrier_done(n)? {
                        return Ok(Some(()));
                    }
                }
                // Peers may need our FINs or ACKs to reach the collective.
                e.progress();
                Ok(node_of(e)?.barrier_done(n)?.then_some(()))
            })
        })
    }

    /// The barrier through arrival counters.
    pub(super) fn shm_barrier(&self) -> Result<()> {
        let n = self
            .rt
            .engine
            .with(|e| Ok::<_, Error>(node_of(e)?.barrier_arrive(&[])))?;
        self.shm_coll_wait(n)
    }

    /// Small allreduce through shared memory: every rank publishes its vector (`send`, or
    /// `recv` itself in place), then combines all of them in rank order itself, so every
    /// rank computes the same bits.
    pub(super) fn shm_all_reduce<T: Reducible>(
        &self,
        send: Option<&[T]>,
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let kernel = op.kernel_for::<T>()?;
        let len = recv.len();
        let n = self.rt.engine.with(|e| {
            let mine = send.unwrap_or(recv);
            Ok::<_, Error>(node_of(e)?.barrier_arrive(bytes(mine)))
        })?;
        self.shm_coll_wait(n)?;
        let p = self.size() as usize;
        if kernel.is_user() {
            // User code may call MPI: copy the contributions out (at most a slot each) and
            // combine them with the engine unlocked, in the same order as below.
            let mut all: Vec<T> = Vec::with_capacity(p * len);
            self.rt.engine.with(|e| -> Result<()> {
                for rank in &self.state.members {
                    let slot = node_of(e)?.coll_slot(*rank, n)?.cast::<T>();
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
                let slot = node_of(e)?.coll_slot(*rank, n)?.cast::<T>();
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
