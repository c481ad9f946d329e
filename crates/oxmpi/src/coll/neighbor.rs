//! Neighbourhood collectives (`MPI_Neighbor_allgather(v)`, `MPI_Neighbor_alltoall(v/w)` and
//! their nonblocking forms) over a communicator's topology: blocks go to the out-neighbours
//! and come from the in-neighbours in the topology's order (Cartesian: for each dimension the
//! negative, then the positive neighbour, [`PROC_NULL`](crate::PROC_NULL) past a
//! non-periodic edge, whose receive block is left untouched; graph: the node's neighbours;
//! distributed graph: sources and destinations).
//!
//! Each call is planned once into a [`NeighborPlan`] (validation, spans, the program of
//! `algorithms::neighbor`) and then launched; a plan can be launched again, which is what the
//! persistent forms will do.
//!
//! Buffers are typed slices: the block length of the regular forms is the send length over
//! the out-degree (or the receive length over the in-degree). A communicator without a
//! topology is [`ErrorClass::Topology`]; lengths that do not fit are [`ErrorClass::Count`],
//! counts/displacement arrays of the wrong length [`ErrorClass::Arg`], blocks outside their
//! buffer [`ErrorClass::Buffer`].
//!
//! # Standard sections
//! MPI-5.0 §8.6 (neighbourhood collective communication), §8.7 (nonblocking forms).

use std::sync::Arc;

use super::algorithms::neighbor::exchange;
use super::schedule::{Program, Region, Span};
use super::{bytes, bytes_mut, v_spans, Planned};
use crate::comm::{CommState, Communicator};
use crate::datatype::Equivalence;
use crate::error::{Error, ErrorClass, Result};
use crate::handle::topo::Neighbors;
use crate::request::{Persistent, Request, Scope};
use crate::runtime::Runtime;
use crate::threading::ThreadLevel;

/// A planned neighbourhood collective: which call, and its program over the send and
/// receive regions. Launching does not consume it, so it can be started again.
#[derive(Debug, Clone)]
pub(crate) struct NeighborPlan {
    name: &'static str,
    prog: Program,
}

impl NeighborPlan {
    /// Runs the plan over `send`/`recv`: to completion when `scope` is `None`, else as a
    /// request in `scope`, which keeps both buffers borrowed until it completes.
    fn start<'a, 's>(
        &self,
        rt: &Arc<Runtime>,
        state: &Arc<CommState>,
        scope: Option<&'s Scope<'a>>,
        send: &'a [u8],
        recv: &'a mut [u8],
    ) -> Result<Option<Request<'a, 's>>> {
        Planned::new(self.name, self.prog.clone(), None, send, recv).launch(rt, state, scope)
    }

    /// Keeps the plan over `send`/`recv` as a persistent request in `scope`, inactive until
    /// started; every start runs the same program.
    fn keep<'a, 's>(
        self,
        rt: &Arc<Runtime>,
        state: &Arc<CommState>,
        scope: &'s Scope<'a>,
        send: &'a [u8],
        recv: &'a mut [u8],
    ) -> Result<Persistent<'a, 's>> {
        Planned::new(self.name, self.prog, None, send, recv).persist(rt, state, scope, None)
    }
}

impl NeighborPlan {
    /// The plan over `send`/`recv` as a planned collective (the handle layer starts or
    /// keeps it).
    pub(crate) fn over<'b>(self, send: &'b [u8], recv: &'b mut [u8]) -> Planned<'b> {
        Planned::new(self.name, self.prog, None, send, recv)
    }
}

fn no_request(name: &str) -> Error {
    Error::new(
        ErrorClass::Intern,
        format!("{name}: the nonblocking collective returned no request"),
    )
}

/// Block length (in elements) of a regular neighbourhood collective: `len` elements over
/// `degree` blocks.
fn per_block(call: &str, what: &str, len: usize, degree: usize) -> Result<Option<usize>> {
    if degree == 0 {
        if len != 0 {
            return Err(Error::new(
                ErrorClass::Count,
                format!("{call}: {what} holds {len} elements but there are no neighbours"),
            ));
        }
        return Ok(None);
    }
    if !len.is_multiple_of(degree) {
        return Err(Error::new(
            ErrorClass::Count,
            format!(
                "{call}: {what} holds {len} elements, not a multiple of the {degree} neighbours"
            ),
        ));
    }
    Ok(Some(len / degree))
}

/// `degree` consecutive spans of `n` bytes in `region`.
fn blocks(region: Region, degree: usize, n: usize) -> Vec<Span> {
    (0..degree).map(|i| Span::new(region, i * n, n)).collect()
}

impl<L: ThreadLevel> Communicator<L> {
    /// The in- and out-neighbours of this process; [`ErrorClass::Topology`] without a
    /// topology.
    fn neighborhood(&self, call: &str) -> Result<Neighbors> {
        match self.state.topo.get() {
            Some(t) => Ok(t.neighbors(self.rank())),
            None => Err(Error::new(
                ErrorClass::Topology,
                format!("{call}: the communicator has no process topology"),
            )),
        }
    }

    pub(crate) fn neighbor_allgather_plan(
        &self,
        name: &'static str,
        send_len: usize,
        recv_len: usize,
        elem: usize,
    ) -> Result<NeighborPlan> {
        let nb = self.neighborhood(name)?;
        let (indeg, outdeg) = (nb.sources.len(), nb.dests.len());
        if recv_len != indeg * send_len {
            return Err(Error::new(
                ErrorClass::Count,
                format!("{name}: the receive buffer holds {recv_len} elements, expected {indeg} blocks of {send_len}"),
            ));
        }
        let send = vec![Span::new(Region::Send, 0, send_len * elem); outdeg];
        let recv = blocks(Region::Recv, indeg, send_len * elem);
        Ok(self.neighbor_plan(name, &nb, &send, &recv))
    }

    fn neighbor_plan(
        &self,
        name: &'static str,
        nb: &Neighbors,
        send: &[Span],
        recv: &[Span],
    ) -> NeighborPlan {
        let mut prog = Program::new();
        exchange(&mut prog, &nb.sources, &nb.dests, send, recv, nb.crosswise);
        NeighborPlan { name, prog }
    }

    pub(crate) fn neighbor_alltoall_plan(
        &self,
        name: &'static str,
        send_len: usize,
        recv_len: usize,
        elem: usize,
    ) -> Result<NeighborPlan> {
        let nb = self.neighborhood(name)?;
        let (indeg, outdeg) = (nb.sources.len(), nb.dests.len());
        let s = per_block(name, "the send buffer", send_len, outdeg)?;
        let r = per_block(name, "the receive buffer", recv_len, indeg)?;
        let n = match (s, r) {
            (Some(s), Some(r)) if s != r => {
                return Err(Error::new(
                    ErrorClass::Count,
                    format!("{name}: send blocks of {s} elements but receive blocks of {r}"),
                ))
            }
            (Some(n), _) | (None, Some(n)) => n,
            (None, None) => 0,
        };
        let send = blocks(Region::Send, outdeg, n * elem);
        let recv = blocks(Region::Recv, indeg, n * elem);
        Ok(self.neighbor_plan(name, &nb, &send, &recv))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn neighbor_v_plan(
        &self,
        name: &'static str,
        send: Option<(usize, &[usize], &[usize])>,
        send_len: usize,
        recv_len: usize,
        rcounts: &[usize],
        rdispls: &[usize],
        elem: usize,
    ) -> Result<NeighborPlan> {
        let nb = self.neighborhood(name)?;
        let (indeg, outdeg) = (nb.sources.len() as u32, nb.dests.len() as u32);
        let recv = v_spans(name, Region::Recv, rcounts, rdispls, recv_len, indeg, elem)?;
        let send = match send {
            Some((len, sc, sd)) => v_spans(name, Region::Send, sc, sd, len, outdeg, elem)?,
            // allgatherv: the whole input to everyone.
            None => vec![Span::new(Region::Send, 0, send_len * elem); outdeg as usize],
        };
        Ok(self.neighbor_plan(name, &nb, &send, &recv))
    }

    /// `MPI_Neighbor_allgather`: `send` goes to every out-neighbour; block `i` of `recv`
    /// (`send.len()` elements) comes from in-neighbour `i`. Collective.
    pub fn neighbor_all_gather_into<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        let plan = self.neighbor_allgather_plan(
            "neighbor_allgather",
            send.len(),
            recv.len(),
            std::mem::size_of::<T>(),
        )?;
        plan.start(&self.rt, &self.state, None, bytes(send), bytes_mut(recv))
            .map(drop)
    }

    /// Starts a neighbour allgather (`MPI_Ineighbor_allgather`).
    pub fn immediate_neighbor_all_gather_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        const NAME: &str = "immediate_neighbor_allgather";
        let plan =
            self.neighbor_allgather_plan(NAME, send.len(), recv.len(), std::mem::size_of::<T>())?;
        plan.start(
            &self.rt,
            &self.state,
            Some(scope),
            bytes(send),
            bytes_mut(recv),
        )?
        .ok_or_else(|| no_request(NAME))
    }

    /// `MPI_Neighbor_allgatherv`: `send` goes to every out-neighbour; in-neighbour `i`'s
    /// block lands at `recv[displs[i]..][..counts[i]]`. Collective.
    pub fn neighbor_all_gather_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let e = std::mem::size_of::<T>();
        let plan = self.neighbor_v_plan(
            "neighbor_allgatherv",
            None,
            send.len(),
            recv.len(),
            counts,
            displs,
            e,
        )?;
        plan.start(&self.rt, &self.state, None, bytes(send), bytes_mut(recv))
            .map(drop)
    }

    /// Starts a neighbour allgatherv (`MPI_Ineighbor_allgatherv`).
    pub fn immediate_neighbor_all_gather_varcount_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'a, 's>> {
        const NAME: &str = "immediate_neighbor_allgatherv";
        let e = std::mem::size_of::<T>();
        let plan = self.neighbor_v_plan(NAME, None, send.len(), recv.len(), counts, displs, e)?;
        plan.start(
            &self.rt,
            &self.state,
            Some(scope),
            bytes(send),
            bytes_mut(recv),
        )?
        .ok_or_else(|| no_request(NAME))
    }

    /// `MPI_Neighbor_alltoall`: block `i` of `send` goes to out-neighbour `i`, block `i` of
    /// `recv` comes from in-neighbour `i` (blocks of equal length). Collective.
    pub fn neighbor_all_to_all_into<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        let plan = self.neighbor_alltoall_plan(
            "neighbor_alltoall",
            send.len(),
            recv.len(),
            std::mem::size_of::<T>(),
        )?;
        plan.start(&self.rt, &self.state, None, bytes(send), bytes_mut(recv))
            .map(drop)
    }

    /// Starts a neighbour alltoall (`MPI_Ineighbor_alltoall`).
    pub fn immediate_neighbor_all_to_all_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        const NAME: &str = "immediate_neighbor_alltoall";
        let plan =
            self.neighbor_alltoall_plan(NAME, send.len(), recv.len(), std::mem::size_of::<T>())?;
        plan.start(
            &self.rt,
            &self.state,
            Some(scope),
            bytes(send),
            bytes_mut(recv),
        )?
        .ok_or_else(|| no_request(NAME))
    }

    /// `MPI_Neighbor_alltoallv`: `send[sdispls[i]..][..scounts[i]]` goes to out-neighbour
    /// `i`; in-neighbour `i`'s block lands at `recv[rdispls[i]..][..rcounts[i]]`. Collective.
    #[allow(clippy::too_many_arguments)]
    pub fn neighbor_all_to_all_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<()> {
        let e = std::mem::size_of::<T>();
        let plan = self.neighbor_v_plan(
            "neighbor_alltoallv",
            Some((send.len(), scounts, sdispls)),
            send.len(),
            recv.len(),
            rcounts,
            rdispls,
            e,
        )?;
        plan.start(&self.rt, &self.state, None, bytes(send), bytes_mut(recv))
            .map(drop)
    }

    /// Starts a neighbour alltoallv (`MPI_Ineighbor_alltoallv`).
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_neighbor_all_to_all_varcount_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &'a mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<Request<'a, 's>> {
        const NAME: &str = "immediate_neighbor_alltoallv";
        let e = std::mem::size_of::<T>();
        let plan = self.neighbor_v_plan(
            NAME,
            Some((send.len(), scounts, sdispls)),
            send.len(),
            recv.len(),
            rcounts,
            rdispls,
            e,
        )?;
        plan.start(
            &self.rt,
            &self.state,
            Some(scope),
            bytes(send),
            bytes_mut(recv),
        )?
        .ok_or_else(|| no_request(NAME))
    }

    /// `MPI_Neighbor_alltoallw` over bytes: the byte range `sblocks[i]` = (displacement,
    /// length) of `send` goes to out-neighbour `i`, in-neighbour `i`'s block lands in
    /// `rblocks[i]` of `recv` (with derived datatypes each block is one neighbour's layout;
    /// here every block is contiguous bytes). Collective.
    pub fn neighbor_all_to_all_w_into(
        &self,
        send: &[u8],
        sblocks: &[(usize, usize)],
        recv: &mut [u8],
        rblocks: &[(usize, usize)],
    ) -> Result<()> {
        let (sd, sc): (Vec<usize>, Vec<usize>) = sblocks.iter().copied().unzip();
        let (rd, rc): (Vec<usize>, Vec<usize>) = rblocks.iter().copied().unzip();
        let plan = self.neighbor_v_plan(
            "neighbor_alltoallw",
            Some((send.len(), &sc, &sd)),
            send.len(),
            recv.len(),
            &rc,
            &rd,
            1,
        )?;
        plan.start(&self.rt, &self.state, None, send, recv)
            .map(drop)
    }

    /// Starts a neighbour alltoallw over bytes (`MPI_Ineighbor_alltoallw`); see
    /// [`neighbor_all_to_all_w_into`](Self::neighbor_all_to_all_w_into).
    pub fn immediate_neighbor_all_to_all_w_into<'a, 's>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [u8],
        sblocks: &[(usize, usize)],
        recv: &'a mut [u8],
        rblocks: &[(usize, usize)],
    ) -> Result<Request<'a, 's>> {
        const NAME: &str = "immediate_neighbor_alltoallw";
        let (sd, sc): (Vec<usize>, Vec<usize>) = sblocks.iter().copied().unzip();
        let (rd, rc): (Vec<usize>, Vec<usize>) = rblocks.iter().copied().unzip();
        let plan = self.neighbor_v_plan(
            NAME,
            Some((send.len(), &sc, &sd)),
            send.len(),
            recv.len(),
            &rc,
            &rd,
            1,
        )?;
        plan.start(&self.rt, &self.state, Some(scope), send, recv)?
            .ok_or_else(|| no_request(NAME))
    }
    /// A persistent neighbour allgather (`MPI_Neighbor_allgather_init`), inactive until
    /// started.
    pub fn neighbor_all_gather_init<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Persistent<'a, 's>> {
        let e = std::mem::size_of::<T>();
        let plan =
            self.neighbor_allgather_plan("neighbor_allgather_init", send.len(), recv.len(), e)?;
        plan.keep(&self.rt, &self.state, scope, bytes(send), bytes_mut(recv))
    }

    /// A persistent neighbour allgatherv (`MPI_Neighbor_allgatherv_init`).
    pub fn neighbor_all_gather_varcount_init<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Persistent<'a, 's>> {
        let e = std::mem::size_of::<T>();
        let plan = self.neighbor_v_plan(
            "neighbor_allgatherv_init",
            None,
            send.len(),
            recv.len(),
            counts,
            displs,
            e,
        )?;
        plan.keep(&self.rt, &self.state, scope, bytes(send), bytes_mut(recv))
    }

    /// A persistent neighbour alltoall (`MPI_Neighbor_alltoall_init`).
    pub fn neighbor_all_to_all_init<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Persistent<'a, 's>> {
        let e = std::mem::size_of::<T>();
        let plan =
            self.neighbor_alltoall_plan("neighbor_alltoall_init", send.len(), recv.len(), e)?;
        plan.keep(&self.rt, &self.state, scope, bytes(send), bytes_mut(recv))
    }

    /// A persistent neighbour alltoallv (`MPI_Neighbor_alltoallv_init`).
    #[allow(clippy::too_many_arguments)]
    pub fn neighbor_all_to_all_varcount_init<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &'a mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<Persistent<'a, 's>> {
        let e = std::mem::size_of::<T>();
        let plan = self.neighbor_v_plan(
            "neighbor_alltoallv_init",
            Some((send.len(), scounts, sdispls)),
            send.len(),
            recv.len(),
            rcounts,
            rdispls,
            e,
        )?;
        plan.keep(&self.rt, &self.state, scope, bytes(send), bytes_mut(recv))
    }

    /// A persistent neighbour alltoallw over bytes (`MPI_Neighbor_alltoallw_init`); see
    /// [`neighbor_all_to_all_w_into`](Self::neighbor_all_to_all_w_into).
    pub fn neighbor_all_to_all_w_init<'a, 's>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [u8],
        sblocks: &[(usize, usize)],
        recv: &'a mut [u8],
        rblocks: &[(usize, usize)],
    ) -> Result<Persistent<'a, 's>> {
        let (sd, sc): (Vec<usize>, Vec<usize>) = sblocks.iter().copied().unzip();
        let (rd, rc): (Vec<usize>, Vec<usize>) = rblocks.iter().copied().unzip();
        let plan = self.neighbor_v_plan(
            "neighbor_alltoallw_init",
            Some((send.len(), &sc, &sd)),
            send.len(),
            recv.len(),
            &rc,
            &rd,
            1,
        )?;
        plan.keep(&self.rt, &self.state, scope, send, recv)
    }
}
