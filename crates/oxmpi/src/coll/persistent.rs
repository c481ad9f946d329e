//! Persistent collectives (`MPI_Bcast_init` and friends): a planned collective kept with its
//! program, algorithm choice and scratch space, started any number of times.
//!
//! Each start takes the communicator's next collective tag (persistent collectives start in
//! the same order on every rank, like any collective) and lends the executor to the engine
//! as a schedule; the request completes when that run ends. The executor is shared with the
//! engine while a run is active and comes back untouched for the next start, so a restart
//! reuses every buffer the plan made; the only allocation is the engine's box for the
//! schedule handle (one pointer), which `Engine::start_schedule` takes by value.
//!
//! # Standard sections
//! MPI-5.0 §6.13 (persistent collective operations).

use std::sync::{Arc, Mutex, MutexGuard};

use super::schedule::Exec;
use crate::comm::CommState;
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::engine::{Advance, Engine, RecvStart, Schedule};
use crate::p2p::request::Status;
use crate::runtime::Runtime;

/// An executor shared between a persistent request and the engine running it.
///
/// `Exec` holds raw pointers into the caller's buffers and so is not `Send`; neither is the
/// engine's `Box<dyn Schedule>`, which holds it the same way for nonblocking collectives.
/// The mutex orders the request's restarts after the engine's last step of a run.
type Shared = Arc<Mutex<Exec>>;

fn lock(x: &Mutex<Exec>) -> MutexGuard<'_, Exec> {
    // A user step that panicked was caught inside `Exec` (recorded as its error), so a
    // poisoned lock still guards a consistent executor.
    x.lock().unwrap_or_else(|p| p.into_inner())
}

/// A planned collective kept for restarts (`None`: a call with nothing to do).
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    exec: Option<Shared>,
    state: Arc<CommState>,
}

impl Kept {
    pub(crate) fn new(exec: Option<Exec>, state: Arc<CommState>) -> Kept {
        #[allow(clippy::arc_with_non_send_sync)] // see `Shared`
        let exec = exec.map(|x| Arc::new(Mutex::new(x)));
        Kept { exec, state }
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
        let Some(exec) = &self.exec else {
            return Ok(RecvStart::Done(Status::default()));
        };
        lock(exec).restart(self.state.next_tag())?;
        let run = Box::new(Lent(exec.clone()));
        Ok(RecvStart::Pending(
            rt.engine.with(|e| e.start_schedule(run))?,
        ))
    }
}

/// The engine's handle on a run of a kept executor.
#[derive(Debug)]
struct Lent(Shared);

impl Schedule for Lent {
    fn advance(&mut self, e: &mut Engine) -> Result<Advance> {
        lock(&self.0).step(e)
    }

    fn run_unlocked(&mut self) -> std::thread::Result<()> {
        lock(&self.0).run_unlocked()
    }

    /// Dropping the handle usually drops a reference only, but the last one when the request
    /// was freed while active (handle layer): then a user operation goes with it, outside the
    /// engine like any schedule's.
    fn drops_user_code(&self) -> bool {
        lock(&self.0).user_op()
    }
}
