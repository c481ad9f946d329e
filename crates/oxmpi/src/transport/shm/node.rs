//! What the shared-memory transport offers collectives beyond moving fragments: world
//! barriers and small allreduces through counters and slots in each rank's segment header,
//! and `alloc_mem` message memory that peers read with a plain copy.
//!
//! Collectives reach these through this interface (`Engine::node`), never through the
//! point-to-point engine.

use crate::error::Result;

/// Intra-host helpers of a shared-memory transport.
pub trait Node {
    /// Whether every rank of the job is on this host (world collectives can use the segment).
    fn spans_world(&self) -> bool;

    /// Enters a world collective with `data` (at most [`COLL_SLOT_BYTES`](super::COLL_SLOT_BYTES)):
    /// publishes it in the slot of this arrival, announces arrival number `n` and returns `n`.
    /// Slots alternate, and arrival `n + 2` cannot begin before every peer has seen arrival
    /// `n + 1`, by which time all have finished reading slot `n`.
    fn barrier_arrive(&mut self, data: &[u8]) -> u64;

    /// Whether every other rank of this host has entered world barrier `n`.
    fn barrier_done(&mut self, n: u64) -> Result<bool>;

    /// The data `rank` (or we, if `rank` is ourselves) published with arrival `n`, which
    /// [`barrier_done`](Self::barrier_done) must have confirmed.
    fn coll_slot(&mut self, rank: u32, n: u64) -> Result<*const u8>;

    /// Allocates `len` bytes of message memory that peers can read directly.
    fn alloc_mem(&mut self, len: usize) -> Result<*mut u8>;

    /// Frees memory from [`alloc_mem`](Self::alloc_mem).
    fn free_mem(&mut self, ptr: *mut u8, len: usize);
}
