//! Persistent collectives (`MPI_Bcast_init` and friends): a planned collective kept with its
//! program, algorithm choice and scratch space, started any number of times.
//!
//! Each start takes the communicator's next collective tag (persistent collectives start in
//! the same order on every rank, like any collective) and lends the executor to the engine
//! as a schedule (`Engine::start_lent`); the request completes when that run ends. The
//! executor is shared with the engine while a run is active and comes back untouched for the
//! next start, so a restart reuses every buffer the plan made and allocates nothing.
//!
//! A small barrier, broadcast, reduce or allreduce whose members share a host runs instead
//! through shared memory on a channel agreed for it at init (`shm_kept`): a start publishes
//! and arrives, progress completes it; no tag, no message.
//!
//! # Standard sections
//! MPI-5.0 §6.13 (persistent collective operations).

use std::sync::{Arc, Mutex, MutexGuard};

use super::schedule::Exec;
use super::shm_kept::ShmRun;
use crate::comm::CommState;
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::engine::{Advance, Engine, RecvStart, Schedule};
use crate::p2p::request::Status;
use crate::runtime::Runtime;

/// An executor shared between a persistent request and the engine running it.
///
/// `Exec` holds raw pointers into the caller's buffers and so is not `Send`; neither are the
/// engine's schedules, which hold it the same way for nonblocking collectives. The mutex
/// orders the request's restarts after the engine's last step of a run.
type Shared = Arc<Mutex<Exec>>;

fn lock<T>(x: &Mutex<T>) -> MutexGuard<'_, T> {
    // A user step that panicked was caught inside `Exec` (recorded as its error), so a
    // poisoned lock still guards a consistent executor.
    x.lock().unwrap_or_else(|p| p.into_inner())
}

/// A shared-memory run shared between a persistent request and the engine, as [`Shared`].
type SharedShm = Arc<Mutex<ShmRun>>;

/// What a start runs.
#[derive(Debug, Clone)]
enum Run {
    /// The message program.
    Msg(Shared),
    /// The shared-memory run on the collective's own channel.
    Shm(SharedShm),
}

/// A planned collective kept for restarts (`None`: a call with nothing to do).
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    run: Option<Run>,
    state: Arc<CommState>,
}

impl Kept {
    pub(crate) fn new(exec: Option<Exec>, state: Arc<CommState>) -> Kept {
        #[allow(clippy::arc_with_non_send_sync)] // see `Shared`
        let run = exec.map(|mut x| {
            x.reserve_in_flight();
            Run::Msg(Arc::new(Mutex::new(x)))
        });
        Kept { run, state }
    }

    /// A collective kept as a shared-memory run.
    pub(crate) fn shm(run: ShmRun, state: Arc<CommState>) -> Kept {
        #[allow(clippy::arc_with_non_send_sync)] // holds raw buffer pointers, as `Shared`
        let run = Some(Run::Shm(Arc::new(Mutex::new(run))));
        Kept { run, state }
    }

    /// Whether the collective runs through shared memory; for tests and diagnostics.
    pub(crate) fn on_shm(&self) -> bool {
        matches!(self.run, Some(Run::Shm(_)))
    }

    /// Starts one run. The caller must not start it again before the run completed (the
    /// persistent requests check that they are inactive).
    pub(crate) fn start(&self, rt: &Runtime) -> Result<RecvStart> {
        if crate::runtime::is_finalized() {
            return Err(Error::new(
                ErrorClass::Other,
                "start: MPI is finalized (persistent collective)",
            ));
        }
        let run: Arc<Mutex<dyn Schedule>> = match &self.run {
            None => return Ok(RecvStart::Done(Status::default())),
            Some(Run::Msg(exec)) => {
                lock(exec).restart(self.state.next_tag())?;
                exec.clone()
            }
            Some(Run::Shm(run)) => {
                lock(run).restart();
                run.clone()
            }
        };
        Ok(RecvStart::Pending(rt.engine.with(|e| e.start_lent(run))?))
    }
}

impl Schedule for ShmRun {
    fn advance(&mut self, e: &mut Engine) -> Result<Advance> {
        self.step(e)
    }

    /// Never reached: a shared-memory run never stops for user code.
    fn run_unlocked(&mut self) -> std::thread::Result<()> {
        Ok(())
    }
}
