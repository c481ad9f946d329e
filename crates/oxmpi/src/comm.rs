//! Communicators: a group of ranks plus a private context for their messages.
//!
//! # Standard sections
//! MPI-5.0 §7 (groups, contexts, communicators).

use std::sync::Arc;

use crate::runtime::Runtime;
use crate::threading::{Single, ThreadLevel};

/// Context id of `MPI_COMM_WORLD`; each communicator has its own, so their messages never mix.
/// Ids come in pairs: `2k` carries point-to-point traffic, `2k + 1` the communicator's
/// collectives, so a collective can never match a user's receive.
pub const WORLD_CONTEXT: u32 = 0;
/// Context id of `MPI_COMM_SELF`.
pub const SELF_CONTEXT: u32 = 2;

/// What every handle to one communicator shares.
#[derive(Debug)]
pub(crate) struct CommState {
    pub(crate) context: u32,
    pub(crate) rank: u32,
    /// World rank of each member, in communicator rank order.
    pub(crate) members: Vec<u32>,
}

/// A communicator (`MPI_Comm`). Cloning gives another handle to the same communicator.
#[derive(Debug, Clone)]
pub struct Communicator<L: ThreadLevel = Single> {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) state: Arc<CommState>,
    _level: L::Marker,
}

impl<L: ThreadLevel> Communicator<L> {
    pub(crate) fn world(rt: Arc<Runtime>) -> Self {
        let state = CommState {
            context: WORLD_CONTEXT,
            rank: rt.rank,
            members: (0..rt.size).collect(),
        };
        Communicator::from_state(rt, state)
    }

    pub(crate) fn self_comm(rt: Arc<Runtime>) -> Self {
        let state = CommState {
            context: SELF_CONTEXT,
            rank: 0,
            members: vec![rt.rank],
        };
        Communicator::from_state(rt, state)
    }

    fn from_state(rt: Arc<Runtime>, state: CommState) -> Self {
        Communicator {
            rt,
            state: Arc::new(state),
            _level: L::Marker::default(),
        }
    }

    /// This process's rank in the communicator (`MPI_Comm_rank`).
    pub fn rank(&self) -> i32 {
        self.state.rank as i32
    }

    /// Number of ranks (`MPI_Comm_size`).
    pub fn size(&self) -> i32 {
        self.state.members.len() as i32
    }

    /// Ends every rank of the job with `code` (`MPI_Abort`). Does not return.
    pub fn abort(&self, code: i32) -> ! {
        self.rt.abort(code, "")
    }
}
