//! Persistent collectives (`MPI_Bcast_init` and friends): a planned collective kept with its
//! program, algorithm choice and scratch space, started any number of times.
//!
//! Each start takes the communicator's next collective tag (persistent collectives start in
//! the same order on every rank, like any collective), locks the executor and lends it to
//! the engine as a schedule (`Engine::start_lent`); the request completes when that run
//! ends, and the engine unlocks the executor then. It comes back untouched for the next
//! start, so a restart reuses every buffer the plan made and allocates nothing.
//!
//! A small barrier, broadcast, reduce or allreduce whose members share a host runs instead
//! through shared memory on a channel agreed for it at init (`shm_kept`): a start publishes
//! and arrives, progress completes it; no tag, no message.
//!
//! # Standard sections
//! MPI-5.0 §6.13 (persistent collective operations).

use std::sync::Arc;

use super::schedule::Exec;
use super::shm_kept::ShmRun;
use crate::comm::CommState;
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::engine::{Advance, Engine, Lent, RecvStart, Schedule};
use crate::p2p::request::Status;
use crate::runtime::Runtime;

/// What a start runs. Either is shared between the persistent request and the engine
/// running it; `Exec` and `ShmRun` hold raw pointers into the caller's buffers and so are
/// not `Send`, as the engine's schedules for nonblocking collectives are not.
#[derive(Debug, Clone)]
enum Run {
    /// The message program.
    Msg(Lent),
    /// The shared-memory run on the collective's own channel.
    Shm(Lent),
}

/// A planned collective kept for restarts (`None`: a call with nothing to do).
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    run: Option<Run>,
    state: Arc<CommState>,
}

impl Kept {
    pub(crate) fn new(exec: Option<Exec>, state: Arc<CommState>) -> Kept {
        #[allow(clippy::arc_with_non_send_sync)] // see `Run`
        let run = exec.map(|mut x| {
            x.reserve_in_flight();
            Run::Msg(Arc::new(parking_lot::Mutex::new(x)))
        });
        Kept { run, state }
    }

    /// A collective kept as a shared-memory run.
    pub(crate) fn shm(run: ShmRun, state: Arc<CommState>) -> Kept {
        #[allow(clippy::arc_with_non_send_sync)] // see `Run`
        let run = Some(Run::Shm(Arc::new(parking_lot::Mutex::new(run))));
        Kept { run, state }
    }

    /// Whether the collective runs through shared memory; for tests and diagnostics.
    pub(crate) fn on_shm(&self) -> bool {
        matches!(self.run, Some(Run::Shm(_)))
    }

    /// Starts one run. The engine holds the plan locked until the run completes, so a start
    /// before then is refused (the persistent requests also check that they are inactive).
    pub(crate) fn start(&self, rt: &Runtime) -> Result<RecvStart> {
        if crate::runtime::is_finalized() {
            return Err(Error::new(
                ErrorClass::Other,
                "start: MPI is finalized (persistent collective)",
            ));
        }
        let (run, msg) = match &self.run {
            None => return Ok(RecvStart::Done(Status::default())),
            Some(Run::Msg(run)) => (run, true),
            Some(Run::Shm(run)) => (run, false),
        };
        let Some(mut locked) = run.try_lock_arc() else {
            return Err(Error::new(
                ErrorClass::Request,
                "start: the persistent collective is still active",
            ));
        };
        // A shared-memory run sends no message and takes no tag; every member keeps the
        // same form (agreed at init), so tags stay in step.
        locked.restart(if msg { self.state.next_tag() } else { 0 })?;
        Ok(rt.engine.with(|e| e.start_lent(locked)))
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

    fn restart(&mut self, _tag: i32) -> Result<()> {
        ShmRun::restart(self);
        Ok(())
    }
}
