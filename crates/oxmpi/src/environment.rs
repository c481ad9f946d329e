//! Entering and leaving MPI, and facts about the process: the [`Universe`], clocks, host name.
//!
//! # Standard sections
//! MPI-5.0 §11.2 (initialization), §11.6 (timers), §9.1 (processor name).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::comm::Communicator;
use crate::error::Result;
use crate::runtime::Runtime;
use crate::threading::{Single, ThreadLevel, Threading};

/// MPI, initialized. Dropping it finalizes MPI (a collective over all ranks).
#[derive(Debug)]
pub struct Universe<L: ThreadLevel = Single> {
    rt: Arc<Runtime>,
    finalized: bool,
    _level: L::Marker,
}

/// Initializes MPI at [`Threading::Single`]. Errors if MPI was initialized before in this
/// process or the launcher cannot be reached.
pub fn init() -> Result<Universe<Single>> {
    init_with::<Single>()
}

/// Initializes MPI at the thread level `L` ([`Single`](crate::Single),
/// [`Funneled`](crate::Funneled), [`Serialized`](crate::Serialized),
/// [`Multiple`](crate::Multiple)); the handles it returns are `Send`/`Sync` accordingly.
pub fn init_with<L: ThreadLevel>() -> Result<Universe<L>> {
    let rt = Runtime::init(L::LEVEL)?;
    Ok(Universe {
        rt: Arc::new(rt),
        finalized: false,
        _level: L::Marker::default(),
    })
}

impl<L: ThreadLevel> Universe<L> {
    /// All ranks of the job (`MPI_COMM_WORLD`).
    pub fn world(&self) -> Communicator<L> {
        Communicator::world(self.rt.clone())
    }

    /// Only this rank (`MPI_COMM_SELF`).
    pub fn self_comm(&self) -> Communicator<L> {
        Communicator::self_comm(self.rt.clone())
    }

    /// The thread level in force.
    pub fn threading(&self) -> Threading {
        self.rt.level
    }

    /// MPMD application index of this rank (0 for the first program given to the launcher).
    pub fn appnum(&self) -> i32 {
        self.rt.appnum
    }

    /// Ends every rank of the job with `code` (`MPI_Abort`). Does not return.
    pub fn abort(&self, code: i32) -> ! {
        self.rt.abort(code, "")
    }

    /// Attaches `bytes` of space for [`buffered_send`](crate::Communicator::buffered_send)
    /// (`MPI_Buffer_attach`); each message takes its size plus
    /// [`BSEND_OVERHEAD`](crate::p2p::bsend::BSEND_OVERHEAD).
    pub fn buffer_attach(&self, bytes: usize) -> Result<()> {
        self.rt.engine.with(|e| e.buffer_attach(bytes))
    }

    /// Waits until every buffered send has gone out, then detaches the space and returns its
    /// size (`MPI_Buffer_detach`).
    pub fn buffer_detach(&self) -> Result<usize> {
        crate::request::block_on(&self.rt, || {
            self.rt.engine.with(|e| {
                e.progress();
                Ok((!e.bsend_busy()).then_some(()))
            })
        })?;
        self.rt.engine.with(|e| e.buffer_detach())
    }

    /// Peers whose shared memory this rank has mapped so far (connections are deferred until a
    /// pair's first message).
    pub fn mapped_peers(&self) -> usize {
        self.rt
            .engine
            .with(|e| e.shm().map_or(0, |s| s.connected_peers()))
    }

    /// Allocates `len` zeroed values in message memory (`MPI_Alloc_mem`): large sends from
    /// such a buffer to ranks on this host are a single plain copy by the receiver.
    pub fn alloc_mem<T: crate::Equivalence>(
        &self,
        len: usize,
    ) -> Result<crate::memory::SharedBuffer<T>> {
        crate::memory::SharedBuffer::new(self.rt.clone(), len)
    }

    /// How often each point-to-point protocol path ran in this process so far.
    pub fn protocol_stats(&self) -> crate::p2p::engine::Stats {
        self.rt.engine.with(|e| e.stats())
    }

    /// Finalizes MPI, reporting errors that dropping would have to ignore.
    pub fn finalize(mut self) -> Result<()> {
        self.finalized = true;
        self.rt.finalize()
    }
}

impl<L: ThreadLevel> Drop for Universe<L> {
    fn drop(&mut self) {
        if !self.finalized && std::thread::panicking() {
            // Finalizing is collective: peers may wait forever for a rank that panicked. End
            // the job instead, as MPI_Abort would.
            self.rt.abort(101, "rank panicked");
        }
        if !self.finalized {
            if let Err(e) = self.rt.finalize() {
                eprintln!("oxmpi: rank {}: finalize failed: {e}", self.rt.rank);
            }
        }
    }
}

/// Seconds since an arbitrary fixed point in this process (`MPI_Wtime`); monotonic.
pub fn time() -> f64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// Resolution of [`time`] in seconds (`MPI_Wtick`).
pub fn time_resolution() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec into the valid, exclusively borrowed `ts`.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 1e-9;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// This host's name (`MPI_Get_processor_name`).
pub fn processor_name() -> String {
    crate::runtime::processor_name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_with_fine_resolution() {
        let a = time();
        let b = time();
        assert!(b >= a);
        let tick = time_resolution();
        assert!(tick > 0.0 && tick <= 1e-3, "{tick}");
    }

    #[test]
    fn processor_name_is_not_empty() {
        assert!(!processor_name().is_empty());
    }
}
