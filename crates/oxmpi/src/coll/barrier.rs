//! Barrier: dissemination (or the node-aware two-level barrier), and through shared-memory
//! arrival counters when the blocking call can use them.

use super::algorithms::misc;
use super::schedule::Program;
use super::{hier, Ctx, Planned};
use crate::comm::Communicator;
use crate::error::Result;
use crate::request::{Persistent, Request, Scope};
use crate::threading::ThreadLevel;

fn plan_barrier(x: Ctx<'_>) -> Program {
    let mut pr = Program::new();
    match x.lay {
        Some(l) => hier::barrier(&mut pr, l, x.me),
        None => misc::barrier_dissemination(&mut pr, x.grp()),
    }
    pr
}

impl<L: ThreadLevel> Communicator<L> {
    pub(crate) fn barrier_plan(&self, call: &'static str) -> Planned<'static> {
        Planned::new(call, plan_barrier(self.ctx()), None, &[], &mut [])
            .on_shm(super::shm_kept::ShmKind::Barrier)
    }

    /// Blocks until every rank has called it (`MPI_Barrier`).
    ///
    /// With every rank of the communicator on this host, each rank announces its arrival in
    /// its own cache line of shared memory and waits until it sees everyone's: one cache-line
    /// transfer per peer instead of ⌈log₂ p⌉ rounds of messages.
    pub fn barrier(&self) -> Result<()> {
        if let Some(at) = self.shm_meet()? {
            return self.shm_barrier(at);
        }
        if let Some(t) = self.two_level()? {
            return self.two_level_barrier(t);
        }
        self.coll_run(self.barrier_plan("barrier"))
    }

    /// Starts a barrier (`MPI_Ibarrier`).
    pub fn immediate_barrier<'a, 's>(&self, scope: &'s Scope<'a>) -> Result<Request<'a, 's>> {
        self.coll_start(scope, self.barrier_plan("immediate_barrier"))
    }

    /// A persistent barrier (`MPI_Barrier_init`), inactive until started.
    pub fn barrier_init<'a, 's>(&self, scope: &'s Scope<'a>) -> Result<Persistent<'a, 's>> {
        self.coll_keep(scope, self.barrier_plan("barrier_init"))
    }
}
