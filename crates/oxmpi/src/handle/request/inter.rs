//! Nonblocking and persistent collectives on intercommunicators, on raw buffers, for the
//! C layer: the intercommunicator forms of the `*_init` functions of the parent module,
//! under the same contract (see there). Each group's data goes to the other group; a
//! rooted call names its root with [`InterRoot`], and a process of the root's group other
//! than the root ([`InterRoot::Null`]) passes no buffers. `MPI_IN_PLACE` is not defined on
//! intercommunicators, so a null buffer is one with no elements.

use super::{ro, rw, RequestId, Requests};
use crate::coll::{InterRoot, Planned};
use crate::comm::InterCommunicator;
use crate::datatype::Equivalence;
use crate::error::Result;
use crate::op::Reducible;
use crate::threading::ThreadLevel;

impl<L: ThreadLevel> Requests<L> {
    /// Starts `p` at once (inside [`immediately`](Self::immediately)) or keeps it for
    /// restarts. Intercommunicator collectives run as programs, never through a
    /// shared-memory channel.
    fn add_inter(&mut self, p: Planned<'static>, ic: &InterCommunicator<L>) -> Result<RequestId> {
        if self.immediate {
            // SAFETY: the caller of the `*_init` function (inside `immediately`) vouched
            // for the buffers until the request completes.
            let start = unsafe { p.start_unbound(&self.rt, &ic.state) }?;
            return Ok(self.id_of(start));
        }
        // SAFETY: the caller of the `*_init` function vouched for the buffers while active.
        let kept = unsafe { p.persist_unbound(&ic.state, None) }?;
        Ok(self.add_persistent(super::PersistentOp::Coll(kept)))
    }

    /// `MPI_Barrier_init` on an intercommunicator.
    ///
    /// # Safety
    /// None beyond the block's contract (no buffers).
    pub unsafe fn inter_barrier_init(&mut self, ic: &InterCommunicator<L>) -> Result<RequestId> {
        self.add_inter(ic.barrier_plan("intercomm barrier_init"), ic)
    }

    /// `MPI_Bcast_init` on an intercommunicator: `len` bytes at `buf` from the root to
    /// every process of the other group.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_bcast_init(
        &mut self,
        ic: &InterCommunicator<L>,
        buf: *mut u8,
        len: usize,
        root: InterRoot,
    ) -> Result<RequestId> {
        let call = "intercomm bcast_init";
        // SAFETY: forwarded from our caller.
        let b = unsafe { rw(call, buf, len)? };
        self.add_inter(ic.broadcast_plan(call, root, b)?, ic)
    }

    /// `MPI_Gather_init` (`scatter` false) or `MPI_Scatter_init` on an intercommunicator:
    /// the root's buffer (`recv`, or `send` to scatter) holds a block per remote process;
    /// each of those sends (receives) one.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_rooted_init<T: Equivalence>(
        &mut self,
        ic: &InterCommunicator<L>,
        scatter: bool,
        (send, send_len): (*const T, usize),
        (recv, recv_len): (*mut T, usize),
        root: InterRoot,
    ) -> Result<RequestId> {
        let call = if scatter {
            "intercomm scatter_init"
        } else {
            "intercomm gather_init"
        };
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        let p = if scatter {
            ic.scatter_plan(call, root, s, r)?
        } else {
            ic.gather_plan(call, root, s, r)?
        };
        self.add_inter(p, ic)
    }

    /// `MPI_Allgather_init` (`all_to_all` false) or `MPI_Alltoall_init` on an
    /// intercommunicator: `recv` holds remote-size blocks (and, all-to-all, `send` too).
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_allgather_init<T: Equivalence>(
        &mut self,
        ic: &InterCommunicator<L>,
        all_to_all: bool,
        (send, send_len): (*const T, usize),
        (recv, recv_len): (*mut T, usize),
    ) -> Result<RequestId> {
        let call = if all_to_all {
            "intercomm alltoall_init"
        } else {
            "intercomm allgather_init"
        };
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        let p = if all_to_all {
            ic.all_to_all_plan(call, s, r)?
        } else {
            ic.all_gather_plan(call, s, r)?
        };
        self.add_inter(p, ic)
    }

    /// `MPI_Gatherv_init` on an intercommunicator: remote rank i's `send` lands at the
    /// root's `recv[displs[i]..][..counts[i]]`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_gatherv_init<T: Equivalence>(
        &mut self,
        ic: &InterCommunicator<L>,
        (send, send_len): (*const T, usize),
        (recv, recv_len): (*mut T, usize),
        (counts, displs): (&[usize], &[usize]),
        root: InterRoot,
    ) -> Result<RequestId> {
        let call = "intercomm gatherv_init";
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        self.add_inter(
            ic.gather_varcount_plan(call, root, s, r, counts, displs)?,
            ic,
        )
    }

    /// `MPI_Scatterv_init` on an intercommunicator: remote rank i gets the root's
    /// `send[displs[i]..][..counts[i]]`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_scatterv_init<T: Equivalence>(
        &mut self,
        ic: &InterCommunicator<L>,
        (send, send_len): (*const T, usize),
        (counts, displs): (&[usize], &[usize]),
        (recv, recv_len): (*mut T, usize),
        root: InterRoot,
    ) -> Result<RequestId> {
        let call = "intercomm scatterv_init";
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        self.add_inter(
            ic.scatter_varcount_plan(call, root, s, counts, displs, r)?,
            ic,
        )
    }

    /// `MPI_Allgatherv_init` on an intercommunicator: remote rank i's `send` lands at
    /// `recv[displs[i]..][..counts[i]]` on every process.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_allgatherv_init<T: Equivalence>(
        &mut self,
        ic: &InterCommunicator<L>,
        (send, send_len): (*const T, usize),
        (recv, recv_len): (*mut T, usize),
        (counts, displs): (&[usize], &[usize]),
    ) -> Result<RequestId> {
        let call = "intercomm allgatherv_init";
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        self.add_inter(ic.all_gather_varcount_plan(call, s, r, counts, displs)?, ic)
    }

    /// `MPI_Alltoallv_init` (and, over bytes, `MPI_Alltoallw_init`) on an
    /// intercommunicator: `send[sdispls[j]..][..scounts[j]]` to remote rank j, whose block
    /// lands at `recv[rdispls[j]..][..rcounts[j]]`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_alltoallv_init<T: Equivalence>(
        &mut self,
        ic: &InterCommunicator<L>,
        (send, send_len): (*const T, usize),
        (scounts, sdispls): (&[usize], &[usize]),
        (recv, recv_len): (*mut T, usize),
        (rcounts, rdispls): (&[usize], &[usize]),
    ) -> Result<RequestId> {
        let call = "intercomm alltoallv_init";
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, send_len)?, rw(call, recv, recv_len)?) };
        let p = ic.all_to_all_varcount_plan(call, s, scounts, sdispls, r, rcounts, rdispls)?;
        self.add_inter(p, ic)
    }

    /// `MPI_Reduce_init` on an intercommunicator: the other group's `count` elements
    /// combined with `op` into the root's `recv`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_reduce_init<T: Reducible>(
        &mut self,
        ic: &InterCommunicator<L>,
        (send, recv, count): (*const T, *mut T, usize),
        op: crate::handle::op::OpHandle,
        root: InterRoot,
    ) -> Result<RequestId> {
        let call = "intercomm reduce_init";
        let op = crate::handle::op::op_get(op)?;
        let (scount, rcount) = match root {
            InterRoot::Root => (0, count),
            InterRoot::Null => (0, 0),
            InterRoot::Remote(_) => (count, 0),
        };
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, scount)?, rw(call, recv, rcount)?) };
        self.add_inter(ic.reduce_plan(call, root, s, r, &op)?, ic)
    }

    /// `MPI_Allreduce_init` on an intercommunicator: the other group's `count` elements
    /// combined with `op` into every `recv`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_allreduce_init<T: Reducible>(
        &mut self,
        ic: &InterCommunicator<L>,
        (send, recv, count): (*const T, *mut T, usize),
        op: crate::handle::op::OpHandle,
    ) -> Result<RequestId> {
        let call = "intercomm allreduce_init";
        let op = crate::handle::op::op_get(op)?;
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, count)?, rw(call, recv, count)?) };
        self.add_inter(ic.all_reduce_plan(call, s, r, &op)?, ic)
    }

    /// `MPI_Reduce_scatter_init` (and, with equal counts, `_block_init`) on an
    /// intercommunicator: `send` holds the sum of `counts` (one per process of this group)
    /// elements; this process's block of the other group's combined `send`s lands in `recv`.
    ///
    /// # Safety
    /// See the block's contract.
    pub unsafe fn inter_reduce_scatter_init<T: Reducible>(
        &mut self,
        ic: &InterCommunicator<L>,
        (send, recv): (*const T, *mut T),
        counts: &[usize],
        op: crate::handle::op::OpHandle,
    ) -> Result<RequestId> {
        let call = "intercomm reduce_scatter_init";
        let op = crate::handle::op::op_get(op)?;
        let total: usize = counts.iter().sum();
        let mine = counts.get(ic.rank() as usize).copied().unwrap_or(0);
        // SAFETY: forwarded from our caller.
        let (s, r) = unsafe { (ro(call, send, total)?, rw(call, recv, mine)?) };
        self.add_inter(ic.reduce_scatter_plan(call, s, r, counts, &op)?, ic)
    }
}
