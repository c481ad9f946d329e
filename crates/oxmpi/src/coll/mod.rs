//! Collective operations on communicators: the public API.
//!
//! Every collective is planned as a program (`schedule::Program`) by the algorithms in
//! `algorithms` (chosen in [`select`], node-aware ones in `hier`) and then run:
//! blocking calls drive the program from the calling thread; `immediate_*` calls hand it
//! to the progress engine as a schedule and return a [`Request`] in a [`Scope`], so several
//! can be outstanding on one communicator and complete in any order of waits (each collective
//! call has its own tag on the communicator's collective context).
//!
//! Reductions combine contributions in rank order unless the operation is commutative, and
//! allreduce gives bit-identical results on every rank (see `algorithms::allreduce`).
//!
//! Buffers are typed slices; counts are their lengths. In the rooted operations the root-only
//! arguments are ignored elsewhere (pass an empty slice). The `*_in_place` forms are
//! `MPI_IN_PLACE`.
//!
//! # Standard sections
//! MPI-5.0 §6 (collective communication), §6.12 (nonblocking collectives).

pub(crate) mod algorithms;
pub(crate) mod hier;
mod inter;
mod neighbor;
pub(crate) mod schedule;
pub mod select;

use std::sync::Arc;

pub use inter::InterRoot;
pub use select::{algorithm_table, crossovers, AlgorithmChoice, Crossovers, COLL_TUNABLES};

use algorithms::{allgather, allreduce, alltoall, misc, tree, Grp};
use schedule::{Combine, Exec, In, Out, Program, Raw, Region, Span};

use crate::comm::{CommState, Communicator};
use crate::datatype::{BufferMut, Equivalence};
use crate::error::{Error, ErrorClass, Result};
use crate::op::{Op, Reducible};
use crate::p2p::engine::RecvStart;
use crate::p2p::request::Status as RawStatus;
use crate::request::{Request, Scope};
use crate::runtime::Runtime;
use crate::threading::ThreadLevel;

/// A planned collective call.
pub(crate) struct Plan {
    pub name: &'static str,
    pub prog: Program,
    pub combine: Option<Combine>,
}

/// Where this rank stands, for planning.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'c> {
    pub me: u32,
    pub p: u32,
    pub lay: Option<&'c hier::HostLayout>,
    pub c: &'static Crossovers,
}

impl<'c> Ctx<'c> {
    pub fn new(rt: &Runtime, st: &'c CommState) -> Ctx<'c> {
        let c = crossovers();
        let lay = if c.hierarchical != 0 {
            st.layout(rt)
        } else {
            None
        };
        Ctx {
            me: st.rank,
            p: st.members.len() as u32,
            lay,
            c,
        }
    }
    fn grp(&self) -> Grp<'static> {
        Grp::all(self.me, self.p)
    }
}

/// Runs `plan` over `state`: to completion if `scope` is `None`, else as a schedule whose
/// request is registered in `scope`.
///
/// # Safety
/// `send` must be readable and `recv` readable and writable for their lengths, and `recv`
/// not otherwise accessed, until the operation completes: for the whole call when `scope` is
/// `None`; otherwise for `'a` (the request and its scope wait before `'a` ends).
pub(crate) unsafe fn launch<'a, 's>(
    rt: &Arc<Runtime>,
    state: &Arc<CommState>,
    scope: Option<&'s Scope<'a>>,
    plan: Plan,
    send: Raw<In>,
    recv: Raw<Out>,
) -> Result<Option<Request<'a, 's>>> {
    if crate::runtime::is_finalized() {
        return Err(Error::new(
            ErrorClass::Other,
            format!("{}: MPI is finalized", plan.name),
        ));
    }
    let tag = state.next_tag();
    // SAFETY: forwarded from our caller.
    let mut exec = unsafe {
        Exec::new(
            plan.name,
            plan.prog,
            send,
            recv,
            plan.combine,
            state.core.clone(),
            tag,
        )
    }?;
    match scope {
        None => schedule::run(rt, &mut exec).map(|()| None),
        Some(s) => {
            let id = rt.engine.with(|e| e.start_schedule(Box::new(exec)))?;
            Ok(Some(Request::new(rt, RecvStart::Pending(id), 1, s)))
        }
    }
}

/// A request that is already complete (collectives with nothing to do).
pub(crate) fn done<'a, 's>(rt: &Arc<Runtime>, scope: &'s Scope<'a>) -> Request<'a, 's> {
    Request::new(rt, RecvStart::Done(RawStatus::default()), 1, scope)
}

pub(crate) fn bytes<T: Equivalence>(s: &[T]) -> &[u8] {
    bytemuck::cast_slice(s)
}

pub(crate) fn bytes_mut<T: Equivalence>(s: &mut [T]) -> &mut [u8] {
    bytemuck::cast_slice_mut(s)
}

pub(crate) fn check_root(call: &str, root: i32, p: u32) -> Result<u32> {
    u32::try_from(root).ok().filter(|&r| r < p).ok_or_else(|| {
        Error::new(
            ErrorClass::Root,
            format!("{call}: root {root} is not a rank (size {p})"),
        )
    })
}

pub(crate) fn check_len(call: &str, what: &str, got: usize, want: usize) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::new(
            ErrorClass::Count,
            format!("{call}: {what} holds {got} elements, expected {want}"),
        ))
    }
}

pub(crate) fn combine<T: Reducible>(op: &Op) -> Result<Combine> {
    Ok(Combine {
        kernel: op.kernel_for::<T>()?,
        commutative: op.is_commutative(),
    })
}

/// Byte spans of blocks given by element `counts` and `displs` inside a buffer of `len`
/// elements (v-variants). Errors: wrong array lengths ([`ErrorClass::Arg`]), blocks outside
/// the buffer ([`ErrorClass::Buffer`]).
pub(crate) fn v_spans(
    call: &str,
    region: Region,
    counts: &[usize],
    displs: &[usize],
    len: usize,
    p: u32,
    elem: usize,
) -> Result<Vec<Span>> {
    if counts.len() != p as usize || displs.len() != p as usize {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "{call}: {} counts and {} displacements for {p} ranks",
                counts.len(),
                displs.len()
            ),
        ));
    }
    counts
        .iter()
        .zip(displs)
        .enumerate()
        .map(|(i, (&c, &d))| {
            if d.checked_add(c).is_none_or(|end| end > len) {
                return Err(Error::new(
                    ErrorClass::Buffer,
                    format!("{call}: block {i} ({c} elements at {d}) lies outside the {len}-element buffer"),
                ));
            }
            Ok(Span::new(region, d * elem, c * elem))
        })
        .collect()
}

// ---- planners: pure functions of (rank, size, sizes) -----------------------------------

fn plan_barrier(x: Ctx<'_>) -> Program {
    let mut pr = Program::new();
    match x.lay {
        Some(l) => hier::barrier(&mut pr, l, x.me),
        None => misc::barrier_dissemination(&mut pr, x.grp()),
    }
    pr
}

fn plan_bcast(x: Ctx<'_>, root: u32, n: usize, elem: usize) -> Program {
    let mut pr = Program::new();
    let buf = Span::new(Region::Recv, 0, n);
    let count = n / elem.max(1);
    match x.lay {
        Some(l) => hier::bcast(&mut pr, l, x.me, root, buf, count, elem.max(1), x.c),
        None => match select::bcast(x.c, n, x.p) {
            select::Bcast::Binomial => tree::bcast_binomial(&mut pr, x.grp(), root, buf),
            select::Bcast::ScatterAllgather => {
                tree::bcast_scatter_allgather(&mut pr, x.grp(), root, buf, count, elem.max(1))
            }
        },
    }
    pr
}

fn plan_reduce(x: Ctx<'_>, root: u32, n: usize, commutative: bool, in_place: bool) -> Program {
    let mut pr = Program::new();
    let is_root = x.me == root;
    let output = Span::new(Region::Recv, 0, if is_root { n } else { 0 });
    let input = if in_place && is_root {
        output
    } else {
        Span::new(Region::Send, 0, n)
    };
    match x.lay {
        Some(l) if commutative => hier::reduce(&mut pr, l, x.me, root, input, output),
        _ => tree::reduce_binomial(&mut pr, x.grp(), root, input, output, commutative),
    }
    pr
}

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
                allreduce::recursive_doubling(&mut pr, x.grp(), input, output)
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

fn plan_gather(x: Ctx<'_>, root: u32, n: usize, in_place: bool) -> Program {
    let mut pr = Program::new();
    let pn = x.p as usize * n;
    let output = Span::new(Region::Recv, 0, if x.me == root { pn } else { 0 });
    let input = if in_place && x.me == root {
        output.sub(root as usize * n, n)
    } else {
        Span::new(Region::Send, 0, n)
    };
    if select::gather_tree(x.c, pn) {
        tree::gather_binomial(&mut pr, x.grp(), root, input, output);
    } else {
        let slots: Vec<Span> = (0..x.p as usize)
            .map(|i| {
                if x.me == root {
                    output.sub(i * n, n)
                } else {
                    output
                }
            })
            .collect();
        tree::gather_linear(&mut pr, x.grp(), root, input, &slots);
    }
    pr
}

fn plan_scatter(x: Ctx<'_>, root: u32, n: usize, in_place: bool) -> Program {
    let mut pr = Program::new();
    let pn = x.p as usize * n;
    let is_root = x.me == root;
    let input = Span::new(Region::Send, 0, if is_root { pn } else { 0 });
    let output = (!(in_place && is_root)).then_some(Span::new(Region::Recv, 0, n));
    if select::gather_tree(x.c, pn) {
        tree::scatter_binomial(&mut pr, x.grp(), root, input, output, n);
    } else {
        let slots: Vec<Span> = (0..x.p as usize)
            .map(|i| if is_root { input.sub(i * n, n) } else { input })
            .collect();
        tree::scatter_linear(&mut pr, x.grp(), root, &slots, output);
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
    match select::alltoall(x.c, n, x.p) {
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
    if biggest >= x.c.alltoall_pairwise {
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

fn plan_scan(x: Ctx<'_>, n: usize, exclusive: bool, in_place: bool) -> Program {
    let mut pr = Program::new();
    let output = Span::new(Region::Recv, 0, n);
    let input = if in_place {
        let s = pr.scratch(n);
        pr.copy(output, s);
        s
    } else {
        Span::new(Region::Send, 0, n)
    };
    if exclusive {
        misc::exscan(&mut pr, x.grp(), input, output);
    } else {
        misc::scan(&mut pr, x.grp(), input, output);
    }
    pr
}

// ---- the public API --------------------------------------------------------------------

/// Blocking (`scope == None`) or nonblocking (`Some`) call of a planned collective.
macro_rules! go {
    ($self:ident, $scope:expr, $name:literal, $prog:expr, $comb:expr, $send:expr, $recv:expr) => {{
        let plan = Plan {
            name: $name,
            prog: $prog,
            combine: $comb,
        };
        // SAFETY: `$send`/`$recv` come from slices borrowed by this call: for the whole call
        // (blocking) or for the request's `'a` (nonblocking; the request is in `scope`).
        unsafe { launch(&$self.rt, &$self.state, $scope, plan, $send, $recv) }
    }};
}

fn req<'a, 's>(r: Result<Option<Request<'a, 's>>>) -> Result<Request<'a, 's>> {
    r?.ok_or_else(|| {
        Error::new(
            ErrorClass::Intern,
            "nonblocking collective returned no request",
        )
    })
}

/// Largest world communicator whose barrier goes through shared-memory counters (each rank
/// reads every other rank's counter, so the cost grows with p).
const SHM_BARRIER_MAX_RANKS: i32 = 64;

impl<L: ThreadLevel> Communicator<L> {
    fn ctx(&self) -> Ctx<'_> {
        Ctx::new(&self.rt, &self.state)
    }

    /// Whether this communicator's small collectives can meet in shared memory: it is the
    /// world, and every rank is on this host.
    fn shm_coll_possible(&self) -> bool {
        // The arrival counters are per process, so only the one communicator every rank
        // calls in the same order may use them: the world itself (not a helper communicator
        // that borrows its context for a subset of ranks).
        self.state.context == crate::comm::WORLD_CONTEXT
            && self.state.members.len() == self.rt.size as usize
            && self.size() <= SHM_BARRIER_MAX_RANKS
            && self.rt.coll_single_host
            && self
                .rt
                .engine
                .with(|e| e.node().is_some_and(|n| n.spans_world()))
    }

    /// Waits until every rank has arrived at shared-memory collective `n`.
    fn shm_coll_wait(&self, n: u64) -> Result<()> {
        crate::request::block_on(&self.rt, || {
            self.rt.engine.with(|e| {
                for _ in 0..self.rt.wait.inner_spin {
                    if node_of(e)?.barrier_done(n)? {
                        return Ok(Some(()));
                    }
                }
                // Peers may need our FINs or ACKs to reach the collective.
                e.progress();
                Ok(node_of(e)?.barrier_done(n)?.then_some(()))
            })
        })
    }

    /// Small allreduce through shared memory: every rank publishes its vector, then combines
    /// all of them in rank order itself, so every rank computes the same bits.
    fn shm_all_reduce<T: Reducible>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        let kernel = op.kernel_for::<T>()?;
        let n = self
            .rt
            .engine
            .with(|e| Ok::<_, Error>(node_of(e)?.barrier_arrive(bytes(send))))?;
        self.shm_coll_wait(n)?;
        let p = self.size() as usize;
        if kernel.is_user() {
            // User code may call MPI: copy the contributions out (at most a slot each) and
            // combine them with the engine unlocked, in the same order as below.
            let len = send.len();
            let mut all: Vec<T> = Vec::with_capacity(p * len);
            self.rt.engine.with(|e| -> Result<()> {
                for rank in &self.state.members {
                    let slot = node_of(e)?.coll_slot(*rank, n)?.cast::<T>();
                    // SAFETY: the slot is aligned for `T` (64 bytes) in a live mapping and
                    // holds `len` values published before arrival `n`; its owner does not
                    // rewrite it until we have arrived at `n + 1`. Copied out under the lock.
                    all.extend_from_slice(unsafe { std::slice::from_raw_parts(slot, len) });
                }
                Ok(())
            })?;
            recv.copy_from_slice(&all[(p - 1) * len..]);
            for theirs in all.chunks_exact(len).rev().skip(1) {
                kernel.call(bytes(theirs), bytes_mut(recv));
            }
            return Ok(());
        }
        self.rt.engine.with(|e| -> Result<()> {
            let members = &self.state.members;
            for (k, rank) in members.iter().enumerate().rev() {
                let slot = node_of(e)?.coll_slot(*rank, n)?.cast::<T>();
                // SAFETY: the slot is 64-byte aligned in a live mapping and holds `send.len()`
                // values published before arrival `n`; its owner does not rewrite it until we
                // have arrived at `n + 1`.
                let theirs = unsafe { std::slice::from_raw_parts(slot, send.len()) };
                if k == p - 1 {
                    recv.copy_from_slice(theirs);
                } else {
                    crate::op::reduce_local(theirs, recv, op)?;
                }
            }
            Ok(())
        })
    }

    /// Blocks until every rank has called it (`MPI_Barrier`).
    ///
    /// On the world communicator with every rank on one host, each rank announces its arrival
    /// in its own cache line of shared memory and waits until it sees everyone's: one cache-line
    /// transfer per peer instead of ⌈log₂ p⌉ rounds of messages.
    pub fn barrier(&self) -> Result<()> {
        if self.shm_coll_possible() {
            let n = self
                .rt
                .engine
                .with(|e| Ok::<_, Error>(node_of(e)?.barrier_arrive(&[])))?;
            return self.shm_coll_wait(n);
        }
        go!(
            self,
            None,
            "barrier",
            plan_barrier(self.ctx()),
            None,
            Raw::EMPTY,
            Raw::EMPTY
        )
        .map(drop)
    }

    /// Starts a barrier (`MPI_Ibarrier`).
    pub fn immediate_barrier<'a, 's>(&self, scope: &'s Scope<'a>) -> Result<Request<'a, 's>> {
        req(go!(
            self,
            Some(scope),
            "immediate_barrier",
            plan_barrier(self.ctx()),
            None,
            Raw::EMPTY,
            Raw::EMPTY
        ))
    }

    fn bcast_plan(&self, call: &str, root: i32, n: usize, elem: usize) -> Result<Option<Program>> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        Ok((n > 0 && x.p > 1).then(|| plan_bcast(x, root, n, elem)))
    }

    /// Broadcasts `buf` from `root` to every rank (`MPI_Bcast`).
    pub fn broadcast_into<B: BufferMut + ?Sized>(&self, root: i32, buf: &mut B) -> Result<()> {
        let elem = buf.element_size();
        let b = buf.bytes_mut();
        match self.bcast_plan("broadcast", root, b.len(), elem)? {
            Some(prog) => go!(
                self,
                None,
                "broadcast",
                prog,
                None,
                Raw::EMPTY,
                Raw::write(b)
            )
            .map(drop),
            None => Ok(()),
        }
    }

    /// Starts a broadcast (`MPI_Ibcast`).
    pub fn immediate_broadcast_into<'a, 's, B: BufferMut + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a mut B,
    ) -> Result<Request<'a, 's>> {
        let elem = buf.element_size();
        let b = buf.bytes_mut();
        match self.bcast_plan("immediate_broadcast", root, b.len(), elem)? {
            Some(prog) => req(go!(
                self,
                Some(scope),
                "immediate_broadcast",
                prog,
                None,
                Raw::EMPTY,
                Raw::write(b)
            )),
            None => Ok(done(&self.rt, scope)),
        }
    }

    fn gather_plan<T>(
        &self,
        call: &str,
        root: i32,
        n: usize,
        recv_len: usize,
        in_place: bool,
    ) -> Result<Program> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        if x.me == root {
            check_len(call, "the receive buffer", recv_len, n * x.p as usize)?;
        }
        Ok(plan_gather(x, root, n * std::mem::size_of::<T>(), in_place))
    }

    /// Gathers every rank's `send` into `recv` at `root`, in rank order (`MPI_Gather`).
    /// `recv` (p × `send.len()` elements) is used at the root only.
    pub fn gather_into<T: Equivalence>(&self, root: i32, send: &[T], recv: &mut [T]) -> Result<()> {
        let prog = self.gather_plan::<T>("gather", root, send.len(), recv.len(), false)?;
        let recv = if self.rank() == root {
            Raw::write(bytes_mut(recv))
        } else {
            Raw::EMPTY
        };
        go!(
            self,
            None,
            "gather",
            prog,
            None,
            Raw::read(bytes(send)),
            recv
        )
        .map(drop)
    }

    /// Gather at the root with its own block already in place in `buf` (`MPI_IN_PLACE`);
    /// other ranks call [`gather_into`](Self::gather_into).
    pub fn gather_in_place<T: Equivalence>(&self, root: i32, buf: &mut [T]) -> Result<()> {
        let n = buf.len() / self.size().max(1) as usize;
        let prog = self.gather_plan::<T>("gather", root, n, buf.len(), true)?;
        go!(
            self,
            None,
            "gather",
            prog,
            None,
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        )
        .map(drop)
    }

    /// Starts a gather whose root has its own block already in place in `buf`
    /// (`MPI_Igather` with `MPI_IN_PLACE`); other ranks call
    /// [`immediate_gather_into`](Self::immediate_gather_into).
    pub fn immediate_gather_in_place<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let n = buf.len() / self.size().max(1) as usize;
        let prog = self.gather_plan::<T>("immediate_gather", root, n, buf.len(), true)?;
        req(go!(
            self,
            Some(scope),
            "immediate_gather",
            prog,
            None,
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        ))
    }

    /// Starts a gather (`MPI_Igather`).
    pub fn immediate_gather_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let prog =
            self.gather_plan::<T>("immediate_gather", root, send.len(), recv.len(), false)?;
        let recv = if self.rank() == root {
            Raw::write(bytes_mut(recv))
        } else {
            Raw::EMPTY
        };
        req(go!(
            self,
            Some(scope),
            "immediate_gather",
            prog,
            None,
            Raw::read(bytes(send)),
            recv
        ))
    }

    fn gatherv_plan<T>(
        &self,
        call: &str,
        root: i32,
        n: usize,
        recv_len: usize,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Program> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        let e = std::mem::size_of::<T>();
        let slots = if x.me == root {
            let s = v_spans(call, Region::Recv, counts, displs, recv_len, x.p, e)?;
            check_len(call, "the send buffer", n, counts[root as usize])?;
            s
        } else {
            vec![Span::new(Region::Recv, 0, 0); x.p as usize]
        };
        let mut pr = Program::new();
        tree::gather_linear(
            &mut pr,
            x.grp(),
            root,
            Span::new(Region::Send, 0, n * e),
            &slots,
        );
        Ok(pr)
    }

    /// Gathers blocks of different lengths (`MPI_Gatherv`): rank i's `send` lands at
    /// `recv[displs[i]..][..counts[i]]` at the root. `recv`, `counts` and `displs` are used
    /// at the root only.
    pub fn gather_varcount_into<T: Equivalence>(
        &self,
        root: i32,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let prog =
            self.gatherv_plan::<T>("gatherv", root, send.len(), recv.len(), counts, displs)?;
        let recv = if self.rank() == root {
            Raw::write(bytes_mut(recv))
        } else {
            Raw::EMPTY
        };
        go!(
            self,
            None,
            "gatherv",
            prog,
            None,
            Raw::read(bytes(send)),
            recv
        )
        .map(drop)
    }

    /// Starts a gatherv (`MPI_Igatherv`).
    pub fn immediate_gather_varcount_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'a, 's>> {
        let prog = self.gatherv_plan::<T>(
            "immediate_gatherv",
            root,
            send.len(),
            recv.len(),
            counts,
            displs,
        )?;
        let recv = if self.rank() == root {
            Raw::write(bytes_mut(recv))
        } else {
            Raw::EMPTY
        };
        req(go!(
            self,
            Some(scope),
            "immediate_gatherv",
            prog,
            None,
            Raw::read(bytes(send)),
            recv
        ))
    }

    fn scatter_plan<T>(
        &self,
        call: &str,
        root: i32,
        send_len: usize,
        n: usize,
        in_place: bool,
    ) -> Result<Program> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        if x.me == root {
            check_len(call, "the send buffer", send_len, n * x.p as usize)?;
        }
        Ok(plan_scatter(
            x,
            root,
            n * std::mem::size_of::<T>(),
            in_place,
        ))
    }

    /// Scatters the root's `send` (p blocks of `recv.len()` elements) so that rank i gets
    /// block i (`MPI_Scatter`). `send` is used at the root only.
    pub fn scatter_into<T: Equivalence>(
        &self,
        root: i32,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        let prog = self.scatter_plan::<T>("scatter", root, send.len(), recv.len(), false)?;
        let send = if self.rank() == root {
            Raw::read(bytes(send))
        } else {
            Raw::EMPTY
        };
        go!(
            self,
            None,
            "scatter",
            prog,
            None,
            send,
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Scatter from the root, which keeps its own block in place in `buf` (`MPI_IN_PLACE`);
    /// other ranks call [`scatter_into`](Self::scatter_into).
    pub fn scatter_in_place<T: Equivalence>(&self, root: i32, buf: &[T]) -> Result<()> {
        let n = buf.len() / self.size().max(1) as usize;
        let prog = self.scatter_plan::<T>("scatter", root, buf.len(), n, true)?;
        go!(
            self,
            None,
            "scatter",
            prog,
            None,
            Raw::read(bytes(buf)),
            Raw::EMPTY
        )
        .map(drop)
    }

    /// Starts a scatter whose root keeps its own block in place in `buf`
    /// (`MPI_Iscatter` with `MPI_IN_PLACE`); other ranks call
    /// [`immediate_scatter_into`](Self::immediate_scatter_into).
    pub fn immediate_scatter_in_place<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a [T],
    ) -> Result<Request<'a, 's>> {
        let n = buf.len() / self.size().max(1) as usize;
        let prog = self.scatter_plan::<T>("immediate_scatter", root, buf.len(), n, true)?;
        req(go!(
            self,
            Some(scope),
            "immediate_scatter",
            prog,
            None,
            Raw::read(bytes(buf)),
            Raw::EMPTY
        ))
    }

    /// Starts a scatter (`MPI_Iscatter`).
    pub fn immediate_scatter_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let prog =
            self.scatter_plan::<T>("immediate_scatter", root, send.len(), recv.len(), false)?;
        let send = if self.rank() == root {
            Raw::read(bytes(send))
        } else {
            Raw::EMPTY
        };
        req(go!(
            self,
            Some(scope),
            "immediate_scatter",
            prog,
            None,
            send,
            Raw::write(bytes_mut(recv))
        ))
    }

    fn scatterv_plan<T>(
        &self,
        call: &str,
        root: i32,
        send_len: usize,
        counts: &[usize],
        displs: &[usize],
        n: usize,
    ) -> Result<Program> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        let e = std::mem::size_of::<T>();
        let slots = if x.me == root {
            let s = v_spans(call, Region::Send, counts, displs, send_len, x.p, e)?;
            check_len(call, "the receive buffer", n, counts[root as usize])?;
            s
        } else {
            vec![Span::new(Region::Send, 0, 0); x.p as usize]
        };
        let mut pr = Program::new();
        tree::scatter_linear(
            &mut pr,
            x.grp(),
            root,
            &slots,
            Some(Span::new(Region::Recv, 0, n * e)),
        );
        Ok(pr)
    }

    /// Scatters blocks of different lengths (`MPI_Scatterv`): rank i receives
    /// `send[displs[i]..][..counts[i]]` into `recv`. `send`, `counts`, `displs` are used at
    /// the root only.
    pub fn scatter_varcount_into<T: Equivalence>(
        &self,
        root: i32,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
    ) -> Result<()> {
        let prog =
            self.scatterv_plan::<T>("scatterv", root, send.len(), counts, displs, recv.len())?;
        let send = if self.rank() == root {
            Raw::read(bytes(send))
        } else {
            Raw::EMPTY
        };
        go!(
            self,
            None,
            "scatterv",
            prog,
            None,
            send,
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Starts a scatterv (`MPI_Iscatterv`).
    pub fn immediate_scatter_varcount_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a [T],
        counts: &[usize],
        displs: &[usize],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let prog = self.scatterv_plan::<T>(
            "immediate_scatterv",
            root,
            send.len(),
            counts,
            displs,
            recv.len(),
        )?;
        let send = if self.rank() == root {
            Raw::read(bytes(send))
        } else {
            Raw::EMPTY
        };
        req(go!(
            self,
            Some(scope),
            "immediate_scatterv",
            prog,
            None,
            send,
            Raw::write(bytes_mut(recv))
        ))
    }

    fn allgather_plan<T>(
        &self,
        call: &str,
        n: usize,
        recv_len: usize,
        in_place: bool,
    ) -> Result<Program> {
        let x = self.ctx();
        check_len(call, "the receive buffer", recv_len, n * x.p as usize)?;
        Ok(plan_allgather(x, n * std::mem::size_of::<T>(), in_place))
    }

    /// Gathers every rank's `send` into every rank's `recv`, in rank order (`MPI_Allgather`).
    pub fn all_gather_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let prog = self.allgather_plan::<T>("allgather", send.len(), recv.len(), false)?;
        go!(
            self,
            None,
            "allgather",
            prog,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Allgather with each rank's block already in place in `buf` (`MPI_IN_PLACE`).
    pub fn all_gather_in_place<T: Equivalence>(&self, buf: &mut [T]) -> Result<()> {
        let n = buf.len() / self.size().max(1) as usize;
        let prog = self.allgather_plan::<T>("allgather", n, buf.len(), true)?;
        go!(
            self,
            None,
            "allgather",
            prog,
            None,
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        )
        .map(drop)
    }

    /// Starts an allgather with each rank's block already in place in `buf`
    /// (`MPI_Iallgather` with `MPI_IN_PLACE`).
    pub fn immediate_all_gather_in_place<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let n = buf.len() / self.size().max(1) as usize;
        let prog = self.allgather_plan::<T>("immediate_allgather", n, buf.len(), true)?;
        req(go!(
            self,
            Some(scope),
            "immediate_allgather",
            prog,
            None,
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        ))
    }

    /// Starts an allgather (`MPI_Iallgather`).
    pub fn immediate_all_gather_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let prog =
            self.allgather_plan::<T>("immediate_allgather", send.len(), recv.len(), false)?;
        req(go!(
            self,
            Some(scope),
            "immediate_allgather",
            prog,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        ))
    }

    fn allgatherv_plan<T>(
        &self,
        call: &str,
        n: usize,
        recv_len: usize,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Program> {
        let x = self.ctx();
        let e = std::mem::size_of::<T>();
        let slots = v_spans(call, Region::Recv, counts, displs, recv_len, x.p, e)?;
        check_len(call, "the send buffer", n, counts[x.me as usize])?;
        Ok(plan_allgatherv(
            x,
            Span::new(Region::Send, 0, n * e),
            &slots,
            recv_len * e,
        ))
    }

    /// Allgather of blocks of different lengths (`MPI_Allgatherv`): rank i's `send` lands at
    /// `recv[displs[i]..][..counts[i]]` on every rank.
    pub fn all_gather_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let prog =
            self.allgatherv_plan::<T>("allgatherv", send.len(), recv.len(), counts, displs)?;
        go!(
            self,
            None,
            "allgatherv",
            prog,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Starts an allgatherv (`MPI_Iallgatherv`).
    pub fn immediate_all_gather_varcount_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'a, 's>> {
        let prog = self.allgatherv_plan::<T>(
            "immediate_allgatherv",
            send.len(),
            recv.len(),
            counts,
            displs,
        )?;
        req(go!(
            self,
            Some(scope),
            "immediate_allgatherv",
            prog,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        ))
    }

    fn alltoall_plan<T>(
        &self,
        call: &str,
        send_len: usize,
        recv_len: usize,
        in_place: bool,
    ) -> Result<Program> {
        let x = self.ctx();
        check_len(call, "the send buffer", send_len, recv_len)?;
        if !recv_len.is_multiple_of(x.p as usize) {
            return Err(Error::new(
                ErrorClass::Count,
                format!(
                    "{call}: {recv_len} elements do not split into {} equal blocks",
                    x.p
                ),
            ));
        }
        Ok(plan_alltoall(
            x,
            recv_len / x.p as usize * std::mem::size_of::<T>(),
            in_place,
        ))
    }

    /// Sends block j of `send` to rank j and receives rank j's block into block j of `recv`
    /// (`MPI_Alltoall`); both hold p equal blocks.
    pub fn all_to_all_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let prog = self.alltoall_plan::<T>("alltoall", send.len(), recv.len(), false)?;
        go!(
            self,
            None,
            "alltoall",
            prog,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// All-to-all in one buffer (`MPI_IN_PLACE`).
    pub fn all_to_all_in_place<T: Equivalence>(&self, buf: &mut [T]) -> Result<()> {
        let prog = self.alltoall_plan::<T>("alltoall", buf.len(), buf.len(), true)?;
        go!(
            self,
            None,
            "alltoall",
            prog,
            None,
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        )
        .map(drop)
    }

    /// Starts an all-to-all in one buffer (`MPI_Ialltoall` with `MPI_IN_PLACE`).
    pub fn immediate_all_to_all_in_place<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let prog = self.alltoall_plan::<T>("immediate_alltoall", buf.len(), buf.len(), true)?;
        req(go!(
            self,
            Some(scope),
            "immediate_alltoall",
            prog,
            None,
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        ))
    }

    /// Starts an all-to-all (`MPI_Ialltoall`).
    pub fn immediate_all_to_all_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let prog = self.alltoall_plan::<T>("immediate_alltoall", send.len(), recv.len(), false)?;
        req(go!(
            self,
            Some(scope),
            "immediate_alltoall",
            prog,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn alltoallv_plan(
        &self,
        call: &str,
        send_len: usize,
        sc: &[usize],
        sd: &[usize],
        recv_len: usize,
        rc: &[usize],
        rd: &[usize],
        e: usize,
    ) -> Result<Program> {
        let x = self.ctx();
        let s = v_spans(call, Region::Send, sc, sd, send_len, x.p, e)?;
        let r = v_spans(call, Region::Recv, rc, rd, recv_len, x.p, e)?;
        check_len(
            call,
            "the block to self",
            sc[x.me as usize],
            rc[x.me as usize],
        )?;
        Ok(plan_alltoallv(x, &s, &r))
    }

    /// All-to-all with blocks of different lengths (`MPI_Alltoallv`): block j of `send` is
    /// `send[sdispls[j]..][..scounts[j]]`, and rank j's block lands at
    /// `recv[rdispls[j]..][..rcounts[j]]`.
    pub fn all_to_all_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<()> {
        let prog = self.alltoallv_plan(
            "alltoallv",
            send.len(),
            scounts,
            sdispls,
            recv.len(),
            rcounts,
            rdispls,
            std::mem::size_of::<T>(),
        )?;
        go!(
            self,
            None,
            "alltoallv",
            prog,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Starts an alltoallv (`MPI_Ialltoallv`).
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_all_to_all_varcount_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &'a mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<Request<'a, 's>> {
        let prog = self.alltoallv_plan(
            "immediate_alltoallv",
            send.len(),
            scounts,
            sdispls,
            recv.len(),
            rcounts,
            rdispls,
            std::mem::size_of::<T>(),
        )?;
        req(go!(
            self,
            Some(scope),
            "immediate_alltoallv",
            prog,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        ))
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
        let (sd, sc): (Vec<usize>, Vec<usize>) = sblocks.iter().copied().unzip();
        let (rd, rc): (Vec<usize>, Vec<usize>) = rblocks.iter().copied().unzip();
        self.all_to_all_varcount_into(send, &sc, &sd, recv, &rc, &rd)
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
        let (sd, sc): (Vec<usize>, Vec<usize>) = sblocks.iter().copied().unzip();
        let (rd, rc): (Vec<usize>, Vec<usize>) = rblocks.iter().copied().unzip();
        self.immediate_all_to_all_varcount_into(scope, send, &sc, &sd, recv, &rc, &rd)
    }

    fn reduce_plan<T: Reducible>(
        &self,
        call: &str,
        root: i32,
        n: usize,
        recv_len: usize,
        op: &Op,
        in_place: bool,
    ) -> Result<Option<(Program, Combine)>> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        let c = combine::<T>(op)?;
        if x.me == root {
            check_len(call, "the receive buffer", recv_len, n)?;
        }
        let e = std::mem::size_of::<T>();
        Ok((n > 0).then(|| (plan_reduce(x, root, n * e, c.commutative, in_place), c)))
    }

    /// Combines every rank's `send` with `op` into `recv` at `root` (`MPI_Reduce`); `recv`
    /// is used at the root only.
    pub fn reduce_into<T: Reducible>(
        &self,
        root: i32,
        send: &[T],
        recv: &mut [T],
        op: Op,
    ) -> Result<()> {
        let Some((prog, c)) =
            self.reduce_plan::<T>("reduce", root, send.len(), recv.len(), &op, false)?
        else {
            return Ok(());
        };
        let recv = if self.rank() == root {
            Raw::write(bytes_mut(recv))
        } else {
            Raw::EMPTY
        };
        go!(
            self,
            None,
            "reduce",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            recv
        )
        .map(drop)
    }

    /// Reduce at the root with its contribution in `buf`, which receives the result
    /// (`MPI_IN_PLACE`); other ranks call [`reduce_into`](Self::reduce_into).
    pub fn reduce_in_place<T: Reducible>(&self, root: i32, buf: &mut [T], op: Op) -> Result<()> {
        let Some((prog, c)) =
            self.reduce_plan::<T>("reduce", root, buf.len(), buf.len(), &op, true)?
        else {
            return Ok(());
        };
        go!(
            self,
            None,
            "reduce",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        )
        .map(drop)
    }

    /// Starts a reduce whose root contributes `buf` and receives the result in it
    /// (`MPI_Ireduce` with `MPI_IN_PLACE`); other ranks call
    /// [`immediate_reduce_into`](Self::immediate_reduce_into).
    pub fn immediate_reduce_in_place<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let Some((prog, c)) =
            self.reduce_plan::<T>("immediate_reduce", root, buf.len(), buf.len(), &op, true)?
        else {
            return Ok(done(&self.rt, scope));
        };
        req(go!(
            self,
            Some(scope),
            "immediate_reduce",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        ))
    }

    /// Starts a reduce (`MPI_Ireduce`).
    pub fn immediate_reduce_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let Some((prog, c)) =
            self.reduce_plan::<T>("immediate_reduce", root, send.len(), recv.len(), &op, false)?
        else {
            return Ok(done(&self.rt, scope));
        };
        let recv = if self.rank() == root {
            Raw::write(bytes_mut(recv))
        } else {
            Raw::EMPTY
        };
        req(go!(
            self,
            Some(scope),
            "immediate_reduce",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            recv
        ))
    }

    fn allreduce_plan<T: Reducible>(
        &self,
        call: &str,
        n: usize,
        recv_len: usize,
        op: &Op,
        in_place: bool,
    ) -> Result<Option<(Program, Combine)>> {
        let x = self.ctx();
        let c = combine::<T>(op)?;
        check_len(call, "the receive buffer", recv_len, n)?;
        let e = std::mem::size_of::<T>();
        Ok((n > 0 && e > 0).then(|| (plan_allreduce(x, n * e, e, c.commutative, in_place), c)))
    }

    /// Combines every rank's `send` with `op` into every rank's `recv`
    /// (`MPI_Allreduce`). The result is bit-identical on every rank.
    pub fn all_reduce_into<T: Reducible>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        if !send.is_empty()
            && send.len() == recv.len()
            && std::mem::size_of_val(send) <= crate::transport::shm::COLL_SLOT_BYTES
            && self.shm_coll_possible()
        {
            return self.shm_all_reduce(send, recv, &op);
        }
        let Some((prog, c)) =
            self.allreduce_plan::<T>("allreduce", send.len(), recv.len(), &op, false)?
        else {
            return Ok(());
        };
        go!(
            self,
            None,
            "allreduce",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Allreduce of `buf` into itself (`MPI_IN_PLACE`).
    pub fn all_reduce_in_place<T: Reducible>(&self, buf: &mut [T], op: Op) -> Result<()> {
        let Some((prog, c)) =
            self.allreduce_plan::<T>("allreduce", buf.len(), buf.len(), &op, true)?
        else {
            return Ok(());
        };
        go!(
            self,
            None,
            "allreduce",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        )
        .map(drop)
    }

    /// Starts an allreduce (`MPI_Iallreduce`).
    pub fn immediate_all_reduce_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let Some((prog, c)) =
            self.allreduce_plan::<T>("immediate_allreduce", send.len(), recv.len(), &op, false)?
        else {
            return Ok(done(&self.rt, scope));
        };
        req(go!(
            self,
            Some(scope),
            "immediate_allreduce",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        ))
    }

    /// Starts an in-place allreduce (`MPI_Iallreduce` with `MPI_IN_PLACE`).
    pub fn immediate_all_reduce_in_place<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let Some((prog, c)) =
            self.allreduce_plan::<T>("immediate_allreduce", buf.len(), buf.len(), &op, true)?
        else {
            return Ok(done(&self.rt, scope));
        };
        req(go!(
            self,
            Some(scope),
            "immediate_allreduce",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        ))
    }

    fn reduce_scatter_plan<T: Reducible>(
        &self,
        call: &str,
        send_len: usize,
        recv_len: usize,
        counts: &[usize],
        op: &Op,
        in_place: bool,
    ) -> Result<(Program, Combine)> {
        let x = self.ctx();
        let c = combine::<T>(op)?;
        if counts.len() != x.p as usize {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{call}: {} counts for {} ranks", counts.len(), x.p),
            ));
        }
        let total: usize = counts.iter().sum();
        check_len(call, "the send buffer", send_len, total)?;
        if !in_place {
            check_len(call, "the receive buffer", recv_len, counts[x.me as usize])?;
        }
        let e = std::mem::size_of::<T>();
        let mut offs = Vec::with_capacity(counts.len() + 1);
        offs.push(0);
        for &k in counts {
            offs.push(offs[offs.len() - 1] + k * e);
        }
        Ok((plan_reduce_scatter(x, &offs, c.commutative, in_place), c))
    }

    /// Reduces `send` (the concatenation of p blocks, block i of `counts[i]` elements) over
    /// all ranks and leaves block i of the result in rank i's `recv` (`MPI_Reduce_scatter`).
    pub fn reduce_scatter_into<T: Reducible>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: Op,
    ) -> Result<()> {
        let (prog, c) = self.reduce_scatter_plan::<T>(
            "reduce_scatter",
            send.len(),
            recv.len(),
            counts,
            &op,
            false,
        )?;
        go!(
            self,
            None,
            "reduce_scatter",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Reduce-scatter in place (`MPI_IN_PLACE`): `buf` holds the whole input and receives
    /// this rank's block at its start.
    pub fn reduce_scatter_in_place<T: Reducible>(
        &self,
        buf: &mut [T],
        counts: &[usize],
        op: Op,
    ) -> Result<()> {
        let (prog, c) = self.reduce_scatter_plan::<T>(
            "reduce_scatter",
            buf.len(),
            buf.len(),
            counts,
            &op,
            true,
        )?;
        go!(
            self,
            None,
            "reduce_scatter",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        )
        .map(drop)
    }

    /// Starts a reduce-scatter in place (`MPI_Ireduce_scatter` with `MPI_IN_PLACE`): `buf`
    /// holds the whole input and receives this rank's block at its start.
    pub fn immediate_reduce_scatter_in_place<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        counts: &[usize],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let (prog, c) = self.reduce_scatter_plan::<T>(
            "immediate_reduce_scatter",
            buf.len(),
            buf.len(),
            counts,
            &op,
            true,
        )?;
        req(go!(
            self,
            Some(scope),
            "immediate_reduce_scatter",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        ))
    }

    /// Starts a reduce-scatter (`MPI_Ireduce_scatter`).
    pub fn immediate_reduce_scatter_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let (prog, c) = self.reduce_scatter_plan::<T>(
            "immediate_reduce_scatter",
            send.len(),
            recv.len(),
            counts,
            &op,
            false,
        )?;
        req(go!(
            self,
            Some(scope),
            "immediate_reduce_scatter",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        ))
    }

    /// Reduce-scatter with equal blocks of `recv.len()` elements
    /// (`MPI_Reduce_scatter_block`).
    pub fn reduce_scatter_block_into<T: Reducible>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: Op,
    ) -> Result<()> {
        let counts = vec![recv.len(); self.size() as usize];
        let (prog, c) = self.reduce_scatter_plan::<T>(
            "reduce_scatter_block",
            send.len(),
            recv.len(),
            &counts,
            &op,
            false,
        )?;
        go!(
            self,
            None,
            "reduce_scatter_block",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Starts a reduce-scatter with equal blocks (`MPI_Ireduce_scatter_block`).
    pub fn immediate_reduce_scatter_block_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let counts = vec![recv.len(); self.size() as usize];
        let (prog, c) = self.reduce_scatter_plan::<T>(
            "immediate_reduce_scatter_block",
            send.len(),
            recv.len(),
            &counts,
            &op,
            false,
        )?;
        req(go!(
            self,
            Some(scope),
            "immediate_reduce_scatter_block",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        ))
    }

    fn scan_plan<T: Reducible>(
        &self,
        call: &str,
        n: usize,
        recv_len: usize,
        op: &Op,
        exclusive: bool,
        in_place: bool,
    ) -> Result<Option<(Program, Combine)>> {
        let x = self.ctx();
        let c = combine::<T>(op)?;
        check_len(call, "the receive buffer", recv_len, n)?;
        Ok((n > 0).then(|| {
            (
                plan_scan(x, n * std::mem::size_of::<T>(), exclusive, in_place),
                c,
            )
        }))
    }

    /// Inclusive prefix reduction: rank r's `recv` gets `send` of ranks 0..=r combined in
    /// rank order (`MPI_Scan`).
    pub fn scan_into<T: Reducible>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        let Some((prog, c)) =
            self.scan_plan::<T>("scan", send.len(), recv.len(), &op, false, false)?
        else {
            return Ok(());
        };
        go!(
            self,
            None,
            "scan",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Inclusive scan in place (`MPI_IN_PLACE`).
    pub fn scan_in_place<T: Reducible>(&self, buf: &mut [T], op: Op) -> Result<()> {
        let Some((prog, c)) =
            self.scan_plan::<T>("scan", buf.len(), buf.len(), &op, false, true)?
        else {
            return Ok(());
        };
        go!(
            self,
            None,
            "scan",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        )
        .map(drop)
    }

    /// Starts an inclusive scan in place (`MPI_Iscan` with `MPI_IN_PLACE`).
    pub fn immediate_scan_in_place<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let Some((prog, c)) =
            self.scan_plan::<T>("immediate_scan", buf.len(), buf.len(), &op, false, true)?
        else {
            return Ok(done(&self.rt, scope));
        };
        req(go!(
            self,
            Some(scope),
            "immediate_scan",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        ))
    }

    /// Starts an inclusive scan (`MPI_Iscan`).
    pub fn immediate_scan_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let Some((prog, c)) =
            self.scan_plan::<T>("immediate_scan", send.len(), recv.len(), &op, false, false)?
        else {
            return Ok(done(&self.rt, scope));
        };
        req(go!(
            self,
            Some(scope),
            "immediate_scan",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        ))
    }

    /// Exclusive prefix reduction: rank r's `recv` gets `send` of ranks 0..r combined in rank
    /// order; rank 0's `recv` is left unchanged (`MPI_Exscan`).
    pub fn exclusive_scan_into<T: Reducible>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: Op,
    ) -> Result<()> {
        let Some((prog, c)) =
            self.scan_plan::<T>("exscan", send.len(), recv.len(), &op, true, false)?
        else {
            return Ok(());
        };
        go!(
            self,
            None,
            "exscan",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        )
        .map(drop)
    }

    /// Exclusive scan in place (`MPI_IN_PLACE`).
    pub fn exclusive_scan_in_place<T: Reducible>(&self, buf: &mut [T], op: Op) -> Result<()> {
        let Some((prog, c)) =
            self.scan_plan::<T>("exscan", buf.len(), buf.len(), &op, true, true)?
        else {
            return Ok(());
        };
        go!(
            self,
            None,
            "exscan",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        )
        .map(drop)
    }

    /// Starts an exclusive scan in place (`MPI_Iexscan` with `MPI_IN_PLACE`); rank 0's `buf`
    /// is left unchanged.
    pub fn immediate_exclusive_scan_in_place<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let Some((prog, c)) =
            self.scan_plan::<T>("immediate_exscan", buf.len(), buf.len(), &op, true, true)?
        else {
            return Ok(done(&self.rt, scope));
        };
        req(go!(
            self,
            Some(scope),
            "immediate_exscan",
            prog,
            Some(c),
            Raw::EMPTY,
            Raw::write(bytes_mut(buf))
        ))
    }

    /// Starts an exclusive scan (`MPI_Iexscan`).
    pub fn immediate_exclusive_scan_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let Some((prog, c)) =
            self.scan_plan::<T>("immediate_exscan", send.len(), recv.len(), &op, true, false)?
        else {
            return Ok(done(&self.rt, scope));
        };
        req(go!(
            self,
            Some(scope),
            "immediate_exscan",
            prog,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv))
        ))
    }
}

/// The engine's intra-host collective helpers, which `shm_coll_possible` found.
fn node_of(
    e: &mut crate::p2p::engine::Engine,
) -> Result<&mut dyn crate::transport::shm::node::Node> {
    e.node()
        .ok_or_else(|| Error::new(ErrorClass::Intern, "no shared-memory transport"))
}
