//! Collectives in which every rank receives: allgather(v), all-to-all (v, w), allreduce and
//! reduce-scatter (block). Each is one plan (validation, program, regions) behind its
//! blocking, nonblocking and persistent forms; blocking allreduces of a few bytes on one host
//! go through shared memory instead (`shm`), in place or not.

use super::algorithms::{allgather, allreduce, alltoall, misc};
use super::schedule::{Program, Region, Span};
use super::shm_kept::ShmKind;
use super::{bytes, bytes_mut, check_len, combine, hier, select, v_spans, Ctx, Planned};
use crate::comm::Communicator;
use crate::datatype::elements::{check_op, with_raw_mut};
use crate::datatype::{Element, Elements, ElementsMut, Equivalence};
use crate::error::{Error, ErrorClass, Result};
use crate::op::{Op, Reducible};
use crate::request::{Persistent, Request, Scope};
use crate::threading::ThreadLevel;

fn plan_allreduce(x: Ctx<'_>, n: usize, elem: usize, commutative: bool, in_place: bool) -> Program {
    let mut pr = Program::new();
    let output = Span::new(Region::Recv, 0, n);
    let input = if in_place {
        output
    } else {
        Span::new(Region::Send, 0, n)
    };
    let count = n / elem;
    match x.lay {
        Some(l) if commutative => {
            hier::allreduce(&mut pr, l, x.me, input, output, count, elem, x.c)
        }
        _ => match select::allreduce(x.c, n, count, x.p, commutative) {
            select::Allreduce::RecursiveDoubling => {
                allreduce::recursive_doubling(&mut pr, x.grp(), input, output, commutative)
            }
            select::Allreduce::Rabenseifner => {
                allreduce::rabenseifner(&mut pr, x.grp(), input, output, count, elem, commutative)
            }
            select::Allreduce::Ring => {
                allreduce::ring(&mut pr, x.grp(), input, output, count, elem)
            }
        },
    }
    pr
}

fn plan_allgather(x: Ctx<'_>, n: usize, in_place: bool) -> Program {
    let mut pr = Program::new();
    let pn = x.p as usize * n;
    let output = Span::new(Region::Recv, 0, pn);
    let input = if in_place {
        output.sub(x.me as usize * n, n)
    } else {
        Span::new(Region::Send, 0, n)
    };
    match select::allgather(x.c, pn, x.p) {
        select::Allgather::RecursiveDoubling => {
            allgather::recursive_doubling(&mut pr, x.grp(), input, output)
        }
        select::Allgather::Bruck => allgather::bruck(&mut pr, x.grp(), input, output),
        select::Allgather::Ring => {
            let offs: Vec<usize> = (0..=x.p as usize).map(|i| i * n).collect();
            allgather::ring(&mut pr, x.grp(), input, output, &offs)
        }
    }
    pr
}

fn plan_allgatherv(x: Ctx<'_>, input: Span, slots: &[Span], recv_len: usize) -> Program {
    let mut pr = Program::new();
    // The ring needs blocks laid out in rank order, back to back.
    let mut offs = Vec::with_capacity(slots.len() + 1);
    offs.push(slots[0].off);
    let in_order = slots.iter().all(|s| {
        let ok = s.off == *offs.last().unwrap_or(&0);
        offs.push(s.off + s.len);
        ok
    });
    if in_order {
        let base = slots[0].off;
        let rel: Vec<usize> = offs.iter().map(|o| o - base).collect();
        let output = Span::new(Region::Recv, base, rel[rel.len() - 1]);
        debug_assert!(output.off + output.len <= recv_len);
        allgather::ring(&mut pr, x.grp(), input, output, &rel);
    } else {
        allgather::linear_v(&mut pr, x.grp(), input, slots);
    }
    pr
}

fn plan_alltoall(x: Ctx<'_>, n: usize, in_place: bool) -> Program {
    let mut pr = Program::new();
    let pn = x.p as usize * n;
    let output = Span::new(Region::Recv, 0, pn);
    let input = if in_place {
        let s = pr.scratch(pn);
        pr.copy(output, s);
        s
    } else {
        Span::new(Region::Send, 0, pn)
    };
    let per = |s: Span| -> Vec<Span> { (0..x.p as usize).map(|i| s.sub(i * n, n)).collect() };
    match select::alltoall(x.c, n, x.p, x.crowded) {
        select::Alltoall::Bruck => alltoall::bruck(&mut pr, x.grp(), input, output, n),
        select::Alltoall::Linear => alltoall::linear(&mut pr, x.grp(), &per(input), &per(output)),
        select::Alltoall::Pairwise => {
            alltoall::pairwise(&mut pr, x.grp(), &per(input), &per(output))
        }
    }
    pr
}

fn plan_alltoallv(x: Ctx<'_>, send: &[Span], recv: &[Span]) -> Program {
    let mut pr = Program::new();
    let biggest = send.iter().chain(recv).map(|s| s.len).max().unwrap_or(0);
    if biggest >= x.c.alltoall_pairwise_min(x.crowded) {
        alltoall::pairwise(&mut pr, x.grp(), send, recv);
    } else {
        alltoall::linear(&mut pr, x.grp(), send, recv);
    }
    pr
}

/// Reduce-scatter: `offs` (bytes) splits the whole vector into each rank's block.
fn plan_reduce_scatter(x: Ctx<'_>, offs: &[usize], commutative: bool, in_place: bool) -> Program {
    let mut pr = Program::new();
    let total = offs[x.p as usize];
    let me = x.me as usize;
    let mine = offs[me + 1] - offs[me];
    let input = Span::new(if in_place { Region::Recv } else { Region::Send }, 0, total);
    let output = Span::new(Region::Recv, 0, mine);
    if select::reduce_scatter_ring(x.c, total, x.p, commutative) {
        let work = pr.scratch(total);
        pr.copy(input, work);
        allreduce::ring_reduce_scatter(&mut pr, x.grp(), work, offs);
        pr.copy(work.sub(offs[me], mine), output);
    } else if in_place {
        // The reduced block lands at the start of the buffer that holds the input: reduce
        // into scratch first.
        let out = pr.scratch(mine);
        misc::reduce_then_scatter(&mut pr, x.grp(), input, out, offs, commutative);
        pr.copy(out, output);
    } else {
        misc::reduce_then_scatter(&mut pr, x.grp(), input, output, offs, commutative);
    }
    pr
}

/// `send`'s bytes, or none in place.
fn input<T: Equivalence>(send: Option<&[T]>) -> &[u8] {
    send.map_or(&[][..], bytes)
}

impl<L: ThreadLevel> Communicator<L> {
    /// The plan of an allgather; `send` is `None` in place.
    pub(crate) fn allgather_plan<'b, T: Equivalence>(
        &self,
        call: &'static str,
        send: Option<&'b [T]>,
        recv: &'b mut [T],
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let n = send.map_or(recv.len() / x.p.max(1) as usize, <[T]>::len);
        check_len(call, "the receive buffer", recv.len(), n * x.p as usize)?;
        let prog = plan_allgather(x, n * size_of::<T>(), send.is_none());
        Ok(Planned::new(call, prog, None, input(send), bytes_mut(recv)))
    }

    /// The blocking allgather: through shared memory when every rank is on this host (the
    /// slots for blocks that fit them, single copies for long ones), else the plan.
    fn all_gather_blocking<T: Equivalence>(
        &self,
        send: Option<&[T]>,
        recv: &mut [T],
    ) -> Result<()> {
        let p = self.size() as usize;
        let e = size_of::<T>();
        let n = send.map_or(recv.len() / p, <[T]>::len) * e;
        // Shapes the plan rejects go to it for their error.
        if p > 1 && n > 0 && size_of_val(recv) == n * p {
            let place: Vec<(usize, usize)> = (0..p).map(|k| (k * n, n)).collect();
            if let Some(at) = self.shm_fits(n)? {
                return self.shm_allgather(at, send.map(bytes), bytes_mut(recv), &place);
            }
            let min = select::crossovers().shm_allgather_min(crate::runtime::oversubscribed());
            if let Some(at) = self.shm_large(n * p, min)? {
                if self.shm_gather_large(at, None, send.map(bytes), bytes_mut(recv), &place)? {
                    return Ok(());
                }
            }
        }
        self.coll_run(self.allgather_plan("allgather", send, recv)?)
    }

    /// The blocking allgatherv: through shared memory as the allgather, else the plan.
    fn all_gather_varcount_blocking<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let (p, e) = (self.size() as u32, size_of::<T>());
        let spans = v_spans("allgatherv", Region::Recv, counts, displs, recv.len(), p, e);
        if let Ok(spans) = spans {
            let place: Vec<(usize, usize)> = spans.iter().map(|s| (s.off, s.len)).collect();
            let total: usize = place.iter().map(|b| b.1).sum();
            let biggest = place.iter().map(|b| b.1).max().unwrap_or(0);
            if p > 1 && size_of_val(send) == place[self.rank() as usize].1 {
                if let Some(at) = self.shm_fits(biggest)? {
                    return self.shm_allgather(at, Some(bytes(send)), bytes_mut(recv), &place);
                }
                let min = select::crossovers().shm_allgather_min(crate::runtime::oversubscribed());
                if let Some(at) = self.shm_large(total, min)? {
                    if self.shm_gather_large(
                        at,
                        None,
                        Some(bytes(send)),
                        bytes_mut(recv),
                        &place,
                    )? {
                        return Ok(());
                    }
                }
            }
        }
        self.coll_run(self.allgatherv_plan("allgatherv", send, recv, counts, displs)?)
    }

    /// Gathers every rank's `send` into every rank's `recv`, in rank order (`MPI_Allgather`).
    pub fn all_gather_into<T: Element, S: Elements<T> + ?Sized, R: ElementsMut<T> + ?Sized>(
        &self,
        send: &S,
        recv: &mut R,
    ) -> Result<()> {
        let send = T::raw(send.elements());
        with_raw_mut("allgather", recv.elements_mut(), |recv| {
            self.all_gather_blocking(Some(send), recv)
        })
    }

    /// Allgather with each rank's block already in place in `buf` (`MPI_IN_PLACE`).
    pub fn all_gather_in_place<T: Element, B: ElementsMut<T> + ?Sized>(
        &self,
        buf: &mut B,
    ) -> Result<()> {
        with_raw_mut("allgather", buf.elements_mut(), |buf| {
            self.all_gather_blocking(None, buf)
        })
    }

    /// Starts an allgather with each rank's block already in place in `buf`
    /// (`MPI_Iallgather` with `MPI_IN_PLACE`).
    pub fn immediate_all_gather_in_place<'a, 's, T: Equivalence, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
    ) -> Result<Request<'a, 's>> {
        self.coll_start(
            scope,
            self.allgather_plan("immediate_allgather", None, buf.elements_mut())?,
        )
    }

    /// Starts an allgather (`MPI_Iallgather`).
    pub fn immediate_all_gather_into<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, 's>> {
        let p = self.allgather_plan(
            "immediate_allgather",
            Some(send.elements()),
            recv.elements_mut(),
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent allgather (`MPI_Allgather_init`), inactive until started.
    pub fn all_gather_init<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.allgather_plan("allgather_init", Some(send.elements()), recv.elements_mut())?,
        )
    }

    /// A persistent allgather with each rank's block in place in `buf`
    /// (`MPI_Allgather_init` with `MPI_IN_PLACE`).
    pub fn all_gather_in_place_init<'a, 's, T: Equivalence, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.allgather_plan("allgather_init", None, buf.elements_mut())?,
        )
    }

    /// The plan of an allgatherv.
    pub(crate) fn allgatherv_plan<'b, T: Equivalence>(
        &self,
        call: &'static str,
        send: &'b [T],
        recv: &'b mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let e = size_of::<T>();
        let slots = v_spans(call, Region::Recv, counts, displs, recv.len(), x.p, e)?;
        check_len(call, "the send buffer", send.len(), counts[x.me as usize])?;
        let input = Span::new(Region::Send, 0, size_of_val(send));
        let prog = plan_allgatherv(x, input, &slots, size_of_val(recv));
        Ok(Planned::new(call, prog, None, bytes(send), bytes_mut(recv)))
    }

    /// Allgather of blocks of different lengths (`MPI_Allgatherv`): rank i's `send` lands at
    /// `recv[displs[i]..][..counts[i]]` on every rank.
    pub fn all_gather_varcount_into<
        T: Element,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        send: &S,
        recv: &mut R,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let send = T::raw(send.elements());
        with_raw_mut("allgatherv", recv.elements_mut(), |recv| {
            self.all_gather_varcount_blocking(send, recv, counts, displs)
        })
    }

    /// Starts an allgatherv (`MPI_Iallgatherv`).
    pub fn immediate_all_gather_varcount_into<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'a, 's>> {
        let p = self.allgatherv_plan(
            "immediate_allgatherv",
            send.elements(),
            recv.elements_mut(),
            counts,
            displs,
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent allgatherv (`MPI_Allgatherv_init`), inactive until started.
    pub fn all_gather_varcount_init<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Persistent<'a, 's>> {
        let p = self.allgatherv_plan(
            "allgatherv_init",
            send.elements(),
            recv.elements_mut(),
            counts,
            displs,
        )?;
        self.coll_keep(scope, p)
    }

    /// The plan of an all-to-all; `send` is `None` in place.
    pub(crate) fn alltoall_plan<'b, T: Equivalence>(
        &self,
        call: &'static str,
        send: Option<&'b [T]>,
        recv: &'b mut [T],
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let send_len = send.map_or(recv.len(), <[T]>::len);
        check_len(call, "the send buffer", send_len, recv.len())?;
        if !recv.len().is_multiple_of(x.p as usize) {
            return Err(Error::new(
                ErrorClass::Count,
                format!(
                    "{call}: {} elements do not split into {} equal blocks",
                    recv.len(),
                    x.p
                ),
            ));
        }
        let n = recv.len() / x.p as usize * size_of::<T>();
        let prog = plan_alltoall(x, n, send.is_none());
        Ok(Planned::new(call, prog, None, input(send), bytes_mut(recv)))
    }

    /// Sends block j of `send` to rank j and receives rank j's block into block j of `recv`
    /// (`MPI_Alltoall`); both hold p equal blocks.
    pub fn all_to_all_into<T: Element, S: Elements<T> + ?Sized, R: ElementsMut<T> + ?Sized>(
        &self,
        send: &S,
        recv: &mut R,
    ) -> Result<()> {
        let send = T::raw(send.elements());
        with_raw_mut("alltoall", recv.elements_mut(), |recv| {
            let p = self.size() as usize;
            let len = size_of_val(recv);
            // Shapes the plan rejects go to it for their error.
            if p > 1 && recv.len() == send.len() && recv.len().is_multiple_of(p) {
                if let Some(at) = self.shm_fits(len / p * (p - 1))? {
                    return self.shm_alltoall(at, Some(bytes(send)), bytes_mut(recv), len / p);
                }
                let min = select::crossovers().shm_alltoall_long;
                if let Some(at) = self.shm_large(len, min)? {
                    if self.shm_alltoall_large(at, bytes(send), bytes_mut(recv), len / p)? {
                        return Ok(());
                    }
                }
            }
            self.coll_run(self.alltoall_plan("alltoall", Some(send), recv)?)
        })
    }

    /// All-to-all in one buffer (`MPI_IN_PLACE`).
    pub fn all_to_all_in_place<T: Element, B: ElementsMut<T> + ?Sized>(
        &self,
        buf: &mut B,
    ) -> Result<()> {
        with_raw_mut("alltoall", buf.elements_mut(), |buf| {
            let p = self.size() as usize;
            // Shapes the plan rejects go to it for their error.
            if p > 1 && buf.len().is_multiple_of(p) {
                let block = size_of_val(buf) / p;
                if let Some(at) = self.shm_fits(block * (p - 1))? {
                    return self.shm_alltoall(at, None, bytes_mut(buf), block);
                }
            }
            self.coll_run(self.alltoall_plan("alltoall", None, buf)?)
        })
    }

    /// Starts an all-to-all in one buffer (`MPI_Ialltoall` with `MPI_IN_PLACE`).
    pub fn immediate_all_to_all_in_place<'a, 's, T: Equivalence, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
    ) -> Result<Request<'a, 's>> {
        self.coll_start(
            scope,
            self.alltoall_plan("immediate_alltoall", None, buf.elements_mut())?,
        )
    }

    /// Starts an all-to-all (`MPI_Ialltoall`).
    pub fn immediate_all_to_all_into<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, 's>> {
        let p = self.alltoall_plan(
            "immediate_alltoall",
            Some(send.elements()),
            recv.elements_mut(),
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent all-to-all (`MPI_Alltoall_init`), inactive until started.
    pub fn all_to_all_init<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.alltoall_plan("alltoall_init", Some(send.elements()), recv.elements_mut())?,
        )
    }

    /// A persistent all-to-all in one buffer (`MPI_Alltoall_init` with `MPI_IN_PLACE`).
    pub fn all_to_all_in_place_init<'a, 's, T: Equivalence, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.alltoall_plan("alltoall_init", None, buf.elements_mut())?,
        )
    }

    /// The plan of an alltoallv over elements of `T`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alltoallv_plan<'b, T: Equivalence>(
        &self,
        call: &'static str,
        send: &'b [T],
        sc: &[usize],
        sd: &[usize],
        recv: &'b mut [T],
        rc: &[usize],
        rd: &[usize],
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let e = size_of::<T>();
        let s = v_spans(call, Region::Send, sc, sd, send.len(), x.p, e)?;
        let r = v_spans(call, Region::Recv, rc, rd, recv.len(), x.p, e)?;
        let me = x.me as usize;
        check_len(call, "the block to self", sc[me], rc[me])?;
        let prog = plan_alltoallv(x, &s, &r);
        Ok(Planned::new(call, prog, None, bytes(send), bytes_mut(recv)))
    }

    /// The plan of an alltoallw over bytes: blocks as (displacement, length).
    fn alltoallw_plan<'b>(
        &self,
        call: &'static str,
        send: &'b [u8],
        sblocks: &[(usize, usize)],
        recv: &'b mut [u8],
        rblocks: &[(usize, usize)],
    ) -> Result<Planned<'b>> {
        let (sd, sc): (Vec<usize>, Vec<usize>) = sblocks.iter().copied().unzip();
        let (rd, rc): (Vec<usize>, Vec<usize>) = rblocks.iter().copied().unzip();
        self.alltoallv_plan(call, send, &sc, &sd, recv, &rc, &rd)
    }

    /// All-to-all with blocks of different lengths (`MPI_Alltoallv`): block j of `send` is
    /// `send[sdispls[j]..][..scounts[j]]`, and rank j's block lands at
    /// `recv[rdispls[j]..][..rcounts[j]]`.
    pub fn all_to_all_varcount_into<
        T: Element,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        send: &S,
        scounts: &[usize],
        sdispls: &[usize],
        recv: &mut R,
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<()> {
        let send = T::raw(send.elements());
        with_raw_mut("alltoallv", recv.elements_mut(), |recv| {
            let p =
                self.alltoallv_plan("alltoallv", send, scounts, sdispls, recv, rcounts, rdispls)?;
            self.coll_run(p)
        })
    }

    /// Starts an alltoallv (`MPI_Ialltoallv`).
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_all_to_all_varcount_into<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        scounts: &[usize],
        sdispls: &[usize],
        recv: &'a mut R,
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<Request<'a, 's>> {
        let p = self.alltoallv_plan(
            "immediate_alltoallv",
            send.elements(),
            scounts,
            sdispls,
            recv.elements_mut(),
            rcounts,
            rdispls,
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent alltoallv (`MPI_Alltoallv_init`), inactive until started.
    #[allow(clippy::too_many_arguments)]
    pub fn all_to_all_varcount_init<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        scounts: &[usize],
        sdispls: &[usize],
        recv: &'a mut R,
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<Persistent<'a, 's>> {
        let p = self.alltoallv_plan(
            "alltoallv_init",
            send.elements(),
            scounts,
            sdispls,
            recv.elements_mut(),
            rcounts,
            rdispls,
        )?;
        self.coll_keep(scope, p)
    }

    /// The most general all-to-all (`MPI_Alltoallw`), over bytes: block j of `send` is the
    /// byte range `sblocks[j]` = (displacement, length), and rank j's block lands in
    /// `rblocks[j]` of `recv` (with derived datatypes each block is one peer's layout; here
    /// every block is contiguous bytes).
    pub fn all_to_all_w_into(
        &self,
        send: &[u8],
        sblocks: &[(usize, usize)],
        recv: &mut [u8],
        rblocks: &[(usize, usize)],
    ) -> Result<()> {
        self.coll_run(self.alltoallw_plan("alltoallw", send, sblocks, recv, rblocks)?)
    }

    /// Starts an alltoallw over bytes (`MPI_Ialltoallw`); see
    /// [`all_to_all_w_into`](Self::all_to_all_w_into).
    pub fn immediate_all_to_all_w_into<'a, 's>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [u8],
        sblocks: &[(usize, usize)],
        recv: &'a mut [u8],
        rblocks: &[(usize, usize)],
    ) -> Result<Request<'a, 's>> {
        let p = self.alltoallw_plan("immediate_alltoallw", send, sblocks, recv, rblocks)?;
        self.coll_start(scope, p)
    }

    /// A persistent alltoallw over bytes (`MPI_Alltoallw_init`); see
    /// [`all_to_all_w_into`](Self::all_to_all_w_into).
    pub fn all_to_all_w_init<'a, 's>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [u8],
        sblocks: &[(usize, usize)],
        recv: &'a mut [u8],
        rblocks: &[(usize, usize)],
    ) -> Result<Persistent<'a, 's>> {
        let p = self.alltoallw_plan("alltoallw_init", send, sblocks, recv, rblocks)?;
        self.coll_keep(scope, p)
    }

    /// The plan of an allreduce; `send` is `None` in place.
    pub(crate) fn allreduce_plan<'b, T: Reducible>(
        &self,
        call: &'static str,
        send: Option<&'b [T]>,
        recv: &'b mut [T],
        op: &Op,
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let c = combine::<T>(op)?;
        let n = send.map_or(recv.len(), <[T]>::len);
        check_len(call, "the receive buffer", recv.len(), n)?;
        let e = size_of::<T>();
        if n == 0 || e == 0 {
            return Ok(Planned::nothing(call));
        }
        let prog = plan_allreduce(x, n * e, e, c.commutative, send.is_none());
        Ok(
            Planned::new(call, prog, Some(c), input(send), bytes_mut(recv)).on_shm(
                ShmKind::Reduce {
                    root: None,
                    elem: e,
                },
            ),
        )
    }

    /// The blocking allreduce: through shared memory when it fits, else the plan.
    fn all_reduce_blocking<T: Reducible>(
        &self,
        send: Option<&[T]>,
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let same = send.is_none_or(|s| s.len() == recv.len());
        if same {
            if let Some(at) = self.shm_fits_reduce(size_of_val(recv), true)? {
                return self.shm_reduce(at, None, send, recv, op);
            }
            let min =
                super::select::crossovers().shm_allreduce_min(crate::runtime::oversubscribed());
            if let Some(at) = self.shm_large(size_of_val(recv), min)? {
                if self.shm_reduce_large(at, None, send, recv, op)? {
                    return Ok(());
                }
            }
            if !recv.is_empty() && size_of::<T>() > 0 && op.is_commutative() {
                if let Some(t) = self.two_level()? {
                    return self.two_level_allreduce(t, send, recv, op);
                }
            }
        }
        self.coll_run(self.allreduce_plan("allreduce", send, recv, op)?)
    }

    /// Combines every rank's `send` with `op` into every rank's `recv`
    /// (`MPI_Allreduce`). The result is bit-identical on every rank.
    pub fn all_reduce_into<T, S, R>(&self, send: &S, recv: &mut R, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    {
        check_op::<T>("allreduce", &op)?;
        let send = T::raw(send.elements());
        with_raw_mut("allreduce", recv.elements_mut(), |recv| {
            self.all_reduce_blocking(Some(send), recv, &op)
        })
    }

    /// Allreduce of `buf` into itself (`MPI_IN_PLACE`).
    pub fn all_reduce_in_place<T, B>(&self, buf: &mut B, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        B: ElementsMut<T> + ?Sized,
    {
        check_op::<T>("allreduce", &op)?;
        with_raw_mut("allreduce", buf.elements_mut(), |buf| {
            self.all_reduce_blocking(None, buf, &op)
        })
    }

    /// Starts an allreduce (`MPI_Iallreduce`).
    pub fn immediate_all_reduce_into<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.allreduce_plan(
            "immediate_allreduce",
            Some(send.elements()),
            recv.elements_mut(),
            &op,
        )?;
        self.coll_start(scope, p)
    }

    /// Starts an in-place allreduce (`MPI_Iallreduce` with `MPI_IN_PLACE`).
    pub fn immediate_all_reduce_in_place<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.allreduce_plan("immediate_allreduce", None, buf.elements_mut(), &op)?;
        self.coll_start(scope, p)
    }

    /// A persistent allreduce (`MPI_Allreduce_init`), inactive until started.
    pub fn all_reduce_init<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        let p = self.allreduce_plan(
            "allreduce_init",
            Some(send.elements()),
            recv.elements_mut(),
            &op,
        )?;
        self.coll_keep(scope, p)
    }

    /// A persistent in-place allreduce (`MPI_Allreduce_init` with `MPI_IN_PLACE`).
    pub fn all_reduce_in_place_init<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.allreduce_plan("allreduce_init", None, buf.elements_mut(), &op)?,
        )
    }

    /// The plan of a reduce-scatter; `send` is `None` in place (then `recv` holds the whole
    /// input and receives this rank's block at its start).
    pub(crate) fn reduce_scatter_plan<'b, T: Reducible>(
        &self,
        call: &'static str,
        send: Option<&'b [T]>,
        recv: &'b mut [T],
        counts: &[usize],
        op: &Op,
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let c = combine::<T>(op)?;
        if counts.len() != x.p as usize {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{call}: {} counts for {} ranks", counts.len(), x.p),
            ));
        }
        let total: usize = counts.iter().sum();
        let send_len = send.map_or(recv.len(), <[T]>::len);
        check_len(call, "the send buffer", send_len, total)?;
        if send.is_some() {
            check_len(
                call,
                "the receive buffer",
                recv.len(),
                counts[x.me as usize],
            )?;
        }
        let e = size_of::<T>();
        let mut offs = Vec::with_capacity(counts.len() + 1);
        offs.push(0);
        for &k in counts {
            offs.push(offs[offs.len() - 1] + k * e);
        }
        let prog = plan_reduce_scatter(x, &offs, c.commutative, send.is_none());
        Ok(Planned::new(
            call,
            prog,
            Some(c),
            input(send),
            bytes_mut(recv),
        ))
    }

    /// Reduces `send` (the concatenation of p blocks, block i of `counts[i]` elements) over
    /// all ranks and leaves block i of the result in rank i's `recv` (`MPI_Reduce_scatter`).
    pub fn reduce_scatter_into<T, S, R>(
        &self,
        send: &S,
        recv: &mut R,
        counts: &[usize],
        op: Op,
    ) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    {
        check_op::<T>("reduce_scatter", &op)?;
        let send = T::raw(send.elements());
        with_raw_mut("reduce_scatter", recv.elements_mut(), |recv| {
            let p = self.reduce_scatter_plan("reduce_scatter", Some(send), recv, counts, &op)?;
            self.coll_run(p)
        })
    }

    /// Reduce-scatter in place (`MPI_IN_PLACE`): `buf` holds the whole input and receives
    /// this rank's block at its start.
    pub fn reduce_scatter_in_place<T, B>(&self, buf: &mut B, counts: &[usize], op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        B: ElementsMut<T> + ?Sized,
    {
        check_op::<T>("reduce_scatter", &op)?;
        with_raw_mut("reduce_scatter", buf.elements_mut(), |buf| {
            self.coll_run(self.reduce_scatter_plan("reduce_scatter", None, buf, counts, &op)?)
        })
    }

    /// Starts a reduce-scatter in place (`MPI_Ireduce_scatter` with `MPI_IN_PLACE`): `buf`
    /// holds the whole input and receives this rank's block at its start.
    pub fn immediate_reduce_scatter_in_place<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        counts: &[usize],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.reduce_scatter_plan(
            "immediate_reduce_scatter",
            None,
            buf.elements_mut(),
            counts,
            &op,
        )?;
        self.coll_start(scope, p)
    }

    /// Starts a reduce-scatter (`MPI_Ireduce_scatter`).
    pub fn immediate_reduce_scatter_into<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        counts: &[usize],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.reduce_scatter_plan(
            "immediate_reduce_scatter",
            Some(send.elements()),
            recv.elements_mut(),
            counts,
            &op,
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent reduce-scatter (`MPI_Reduce_scatter_init`), inactive until started.
    pub fn reduce_scatter_init<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        counts: &[usize],
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        let p = self.reduce_scatter_plan(
            "reduce_scatter_init",
            Some(send.elements()),
            recv.elements_mut(),
            counts,
            &op,
        )?;
        self.coll_keep(scope, p)
    }

    /// A persistent reduce-scatter in place (`MPI_Reduce_scatter_init` with `MPI_IN_PLACE`).
    pub fn reduce_scatter_in_place_init<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        counts: &[usize],
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        let p =
            self.reduce_scatter_plan("reduce_scatter_init", None, buf.elements_mut(), counts, &op)?;
        self.coll_keep(scope, p)
    }

    /// The plan of a reduce-scatter with equal blocks of `recv.len()` elements.
    pub(crate) fn reduce_scatter_block_plan<'b, T: Reducible>(
        &self,
        call: &'static str,
        send: &'b [T],
        recv: &'b mut [T],
        op: &Op,
    ) -> Result<Planned<'b>> {
        let counts = vec![recv.len(); self.size() as usize];
        self.reduce_scatter_plan(call, Some(send), recv, &counts, op)
    }

    /// Reduce-scatter with equal blocks of `recv.len()` elements
    /// (`MPI_Reduce_scatter_block`).
    pub fn reduce_scatter_block_into<T, S, R>(&self, send: &S, recv: &mut R, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    {
        check_op::<T>("reduce_scatter_block", &op)?;
        let send = T::raw(send.elements());
        with_raw_mut("reduce_scatter_block", recv.elements_mut(), |recv| {
            let p = self.reduce_scatter_block_plan("reduce_scatter_block", send, recv, &op)?;
            self.coll_run(p)
        })
    }

    /// Starts a reduce-scatter with equal blocks (`MPI_Ireduce_scatter_block`).
    pub fn immediate_reduce_scatter_block_into<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.reduce_scatter_block_plan(
            "immediate_reduce_scatter_block",
            send.elements(),
            recv.elements_mut(),
            &op,
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent reduce-scatter with equal blocks (`MPI_Reduce_scatter_block_init`).
    pub fn reduce_scatter_block_init<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        let p = self.reduce_scatter_block_plan(
            "reduce_scatter_block_init",
            send.elements(),
            recv.elements_mut(),
            &op,
        )?;
        self.coll_keep(scope, p)
    }
}
