//! Collective operations on communicators: the public API.
//!
//! Every collective is one plan (`Planned`): validation of the arguments, the program
//! (`schedule::Program`, built by the algorithms in `algorithms`, chosen in [`select`],
//! node-aware ones in `hier`), the combining operation and this rank's send and receive
//! regions. The same plan serves every form of the call:
//! - blocking: `Planned::run` executes it in place on the calling thread (no request, no
//!   engine registration);
//! - nonblocking (`immediate_*`): `Planned::start` hands it to the progress engine as a
//!   schedule and returns a [`Request`] in a [`Scope`], so several can be outstanding on one
//!   communicator and complete in any order of waits (each call has its own tag on the
//!   communicator's collective context);
//! - persistent (`*_init`): `Planned::persist` keeps it (algorithm, scratch) for restarts
//!   with [`Persistent::start`](crate::request::Persistent::start).
//!
//! The families live in `barrier`, `rooted` (bcast, gather(v), scatter(v), reduce), `all`
//! (allgather(v), alltoall(v/w), allreduce, reduce-scatter) and `scan`; the intra-host
//! shared-memory paths in `shm`; intercommunicators in `inter`; the forms for `bool` and
//! `char` that the typed forms cannot take (`*_checked`) in `checked`.
//!
//! Reductions combine contributions in rank order unless the operation is commutative, and
//! allreduce gives bit-identical results on every rank (see `algorithms::allreduce`).
//!
//! Buffers are typed slices; counts are their lengths. In the rooted operations the root-only
//! arguments are ignored elsewhere (pass an empty slice). The `*_in_place` forms are
//! `MPI_IN_PLACE`.
//!
//! # Standard sections
//! MPI-5.0 §6 (collective communication), §6.12 (nonblocking collectives), §6.13
//! (persistent collectives).

pub(crate) mod algorithms;
mod all;
mod barrier;
pub mod checked;
pub(crate) mod hier;
mod inter;
mod neighbor;
pub(crate) mod persistent;
mod rooted;
mod scan;
pub(crate) mod schedule;
pub mod select;
pub(crate) mod shm;
mod shm_kept;

use std::marker::PhantomData;
use std::sync::Arc;

pub use inter::InterRoot;
pub use select::{algorithm_table, crossovers, AlgorithmChoice, Crossovers, COLL_TUNABLES};

use algorithms::Grp;
use schedule::{Combine, Exec, In, Out, Program, Raw, Region, Span};

use crate::comm::{CommState, Communicator};
use crate::datatype::Equivalence;
use crate::error::{Error, ErrorClass, Result};
use crate::handle::request::PersistentOp;
use crate::op::{Op, Reducible};
use crate::p2p::engine::RecvStart;
use crate::p2p::request::Status as RawStatus;
use crate::request::{Persistent, Request, Scope};
use crate::runtime::Runtime;
use crate::threading::ThreadLevel;

/// Where this rank stands, for planning.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'c> {
    pub me: u32,
    pub p: u32,
    pub lay: Option<&'c hier::HostLayout>,
    pub c: &'static Crossovers,
    /// Every member on one oversubscribed host ([`CommState::crowded`]).
    pub crowded: bool,
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
            crowded: st.crowded(rt),
        }
    }
    fn grp(&self) -> Grp<'static> {
        Grp::all(self.me, self.p)
    }
}

/// One collective call, planned over this rank's buffers, which it borrows for `'b`: the
/// program, the combining operation and the regions, checked and ready to run in any form.
pub(crate) struct Planned<'b> {
    name: &'static str,
    /// `None`: nothing to do (zero counts, a broadcast among one rank).
    prog: Option<Program>,
    combine: Option<Combine>,
    send: Raw<In>,
    recv: Raw<Out>,
    /// The shared-memory form a persistent start can take instead of the program.
    shm: Option<shm_kept::ShmKind>,
    _buffers: PhantomData<(&'b [u8], &'b mut [u8])>,
}

impl<'b> Planned<'b> {
    /// `prog` over `send` (read only) and `recv` (read and written).
    pub fn new(
        name: &'static str,
        prog: Program,
        combine: Option<Combine>,
        send: &'b [u8],
        recv: &'b mut [u8],
    ) -> Planned<'b> {
        Planned {
            name,
            prog: Some(prog),
            combine,
            send: Raw::read(send),
            recv: Raw::write(recv),
            shm: None,
            _buffers: PhantomData,
        }
    }

    /// The same plan, marked as one a persistent request may run through shared memory on a
    /// channel of its own (see `shm_kept`), if it fits there.
    pub(crate) fn on_shm(mut self, kind: shm_kept::ShmKind) -> Planned<'b> {
        self.shm = Some(kind);
        self
    }

    /// The shared-memory form of this plan if a persistent request can use one: every
    /// member of a correct program computes the same answer (same counts, same operation).
    /// `p` is the communicator's size.
    pub(crate) fn shm_kind(&self, p: usize) -> Option<shm_kept::ShmKind> {
        self.prog.as_ref()?;
        let kind = self.shm?;
        kind.fit(self.send.len, self.recv.len, self.combine.as_ref(), p)
    }

    /// A call with nothing to do: it completes at once in every form.
    pub fn nothing(name: &'static str) -> Planned<'b> {
        Planned {
            name,
            prog: None,
            combine: None,
            send: Raw::EMPTY,
            recv: Raw::EMPTY,
            shm: None,
            _buffers: PhantomData,
        }
    }

    /// The executor of the program with tag `tag`; `None` if there is nothing to do.
    ///
    /// This is the one place a program meets raw regions. Its callers keep the executor from
    /// outliving `'b`: [`run`](Self::run) drops it before returning, [`start`](Self::start)
    /// and [`persist`](Self::persist) hand it to a request of a `Scope<'b>`, which waits for
    /// it before `'b` ends, and [`persist_unbound`](Self::persist_unbound) passes the duty
    /// on to its caller.
    fn exec(self, state: &CommState, tag: i32) -> Result<Option<Exec>> {
        if crate::runtime::is_finalized() {
            return Err(Error::new(
                ErrorClass::Other,
                format!("{}: MPI is finalized", self.name),
            ));
        }
        let Some(prog) = self.prog else {
            return Ok(None);
        };
        // SAFETY: `send` and `recv` come from a shared and an exclusive borrow for `'b`
        // (`new`; `Raw::EMPTY` is valid for zero bytes), so they are readable (and `recv`
        // writable and not otherwise accessed) for `'b`; the executor does not outlive `'b`
        // (see above). They never alias: the in-place forms pass an empty `send`.
        let exec = unsafe {
            Exec::new(
                self.name,
                prog,
                self.send,
                self.recv,
                self.combine,
                state.core.clone(),
                tag,
            )
        }?;
        Ok(Some(exec))
    }

    /// Runs the call to completion on the calling thread (blocking forms).
    pub fn run(self, rt: &Runtime, state: &CommState) -> Result<()> {
        if self.prog.is_none() {
            return Ok(());
        }
        match self.exec(state, state.next_tag())? {
            Some(mut exec) => schedule::run(rt, &mut exec),
            None => Ok(()),
        }
    }

    /// Starts the call as a schedule in the engine, its request in `scope` (nonblocking
    /// forms).
    pub fn start<'s>(
        self,
        rt: &Arc<Runtime>,
        state: &CommState,
        scope: &'s Scope<'b>,
    ) -> Result<Request<'b, 's>> {
        if self.prog.is_none() {
            return Ok(done(rt, scope));
        }
        let start = match self.exec(state, state.next_tag())? {
            Some(exec) => RecvStart::Pending(rt.engine.with(|e| e.start_schedule(Box::new(exec)))?),
            None => RecvStart::Done(RawStatus::default()),
        };
        Ok(Request::new(rt, start, 1, scope))
    }

    /// Keeps the call for restarts, inactive until started (persistent forms); through
    /// shared memory when the members agreed on a channel for it (`claim`).
    pub fn persist<'s>(
        self,
        rt: &Arc<Runtime>,
        state: &Arc<CommState>,
        scope: &'s Scope<'b>,
        claim: Option<shm::ChanClaim>,
    ) -> Result<Persistent<'b, 's>> {
        let kept = self.keep(state, claim)?;
        Ok(Persistent::new(
            rt.clone(),
            PersistentOp::Coll(kept),
            1,
            scope,
        ))
    }

    /// As [`persist`](Self::persist), for the handle layer, which has no scope.
    ///
    /// # Safety
    /// The buffers must stay valid (and the receive buffer not otherwise accessed) whenever
    /// the returned collective is active, until it is dropped; `'b` does not enforce it.
    pub unsafe fn persist_unbound(
        self,
        state: &Arc<CommState>,
        claim: Option<shm::ChanClaim>,
    ) -> Result<persistent::Kept> {
        self.keep(state, claim)
    }

    /// The kept form: the shared-memory run on `claim`'s channel, else the program.
    /// Its callers keep the buffers valid whenever the result is active, as for
    /// [`exec`](Self::exec).
    fn keep(
        self,
        state: &Arc<CommState>,
        claim: Option<shm::ChanClaim>,
    ) -> Result<persistent::Kept> {
        if let (Some(claim), Some(kind)) = (claim, self.shm_kind(state.members.len())) {
            if crate::runtime::is_finalized() {
                return Err(Error::new(
                    ErrorClass::Other,
                    format!("{}: MPI is finalized", self.name),
                ));
            }
            // SAFETY: as in `exec`: `send` and `recv` come from a shared and an exclusive
            // borrow for `'b` (or are empty), never alias, and the run is only advanced while
            // its request is active, which the callers bound by `'b` (`persist`) or by the
            // contract of `persist_unbound`.
            let run = unsafe {
                shm_kept::ShmRun::new(kind, state, claim, self.send, self.recv, self.combine)
            };
            return Ok(persistent::Kept::shm(run, state.clone()));
        }
        Ok(persistent::Kept::new(self.exec(state, 0)?, state.clone()))
    }

    /// As [`start`](Self::start), for the handle layer, which has no scope: the started
    /// run, or its status if there was nothing to do.
    ///
    /// # Safety
    /// The buffers must stay valid (and the receive buffer not otherwise accessed) until the
    /// run completes; `'b` does not enforce it.
    pub unsafe fn start_unbound(self, rt: &Runtime, state: &CommState) -> Result<RecvStart> {
        if self.prog.is_none() {
            return Ok(RecvStart::Done(RawStatus::default()));
        }
        match self.exec(state, state.next_tag())? {
            Some(exec) => Ok(RecvStart::Pending(
                rt.engine.with(|e| e.start_schedule(Box::new(exec)))?,
            )),
            None => Ok(RecvStart::Done(RawStatus::default())),
        }
    }

    /// Blocking (`scope == None`) or nonblocking form, for callers that share one function
    /// between both (neighbourhood collectives).
    pub fn launch<'s>(
        self,
        rt: &Arc<Runtime>,
        state: &CommState,
        scope: Option<&'s Scope<'b>>,
    ) -> Result<Option<Request<'b, 's>>> {
        match scope {
            None => self.run(rt, state).map(|()| None),
            Some(s) => self.start(rt, state, s).map(Some),
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

impl<L: ThreadLevel> Communicator<L> {
    fn ctx(&self) -> Ctx<'_> {
        Ctx::new(&self.rt, &self.state)
    }

    /// The blocking form of a planned call.
    fn coll_run(&self, p: Planned<'_>) -> Result<()> {
        p.run(&self.rt, &self.state)
    }

    /// The nonblocking form of a planned call.
    fn coll_start<'a, 's>(&self, scope: &'s Scope<'a>, p: Planned<'a>) -> Result<Request<'a, 's>> {
        p.start(&self.rt, &self.state, scope)
    }

    /// The persistent form of a planned call: on a shared-memory channel of its own when
    /// it fits one and the members agree on one (collectively, here at init).
    fn coll_keep<'a, 's>(
        &self,
        scope: &'s Scope<'a>,
        p: Planned<'a>,
    ) -> Result<Persistent<'a, 's>> {
        let claim = self.shm_persist_claim(&p)?;
        p.persist(&self.rt, &self.state, scope, claim)
    }
}
