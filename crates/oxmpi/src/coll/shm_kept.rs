//! Persistent collectives through shared memory: a small barrier, broadcast, reduce or
//! allreduce kept on a channel of its own, and large broadcasts and reductions by single
//! copies between buffers the members exchanged at init.
//!
//! The slot protocol of `shm` assumes one shared-memory collective in flight per channel,
//! which overlapping nonblocking collectives would break; a persistent collective is
//! initialised collectively, so at init the members agree on a channel for it alone
//! (`Communicator::shm_persist_claim`), and its runs cannot meet any other collective's
//! arrivals. A request is active at most once at a time, so its runs on the channel come
//! one after another on every member, as the blocking collectives' do on theirs.
//!
//! A start publishes this rank's data and announces its arrival, unless some member has not
//! yet entered the previous run (a rank that left a rooted run early may be one ahead):
//! then the first progress pass that finds them there does. Progress passes (the request's
//! wait or test, or any other progress) then complete the run once the arrivals it needs
//! are in. Nothing here blocks, and the only user code a run could call (a user operation)
//! never comes here: such plans keep their message program.
//!
//! # Standard sections
//! MPI-5.0 §6.13 (persistent collective operations).

use std::sync::Arc;

use super::schedule::{Combine, In, Out, Raw};
use super::shm::{bcast_copies, count_mismatch, node_of, reduce_slice, ChanClaim, SliceScratch};
use crate::comm::CommState;
use crate::error::{Error, ErrorClass, Result};
use crate::op::Kernel;
use crate::p2p::engine::{Advance, Engine};
use crate::transport::shm::node::{Meet, Node};
use crate::transport::shm::COLL_SLOT_BYTES;

/// The collectives a persistent request can run through a channel's slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShmKind {
    /// Every member arrives and waits for all.
    Barrier,
    /// The root publishes its buffer; the others copy it.
    Bcast { root: u32 },
    /// A broadcast larger than a slot, by single copies between the buffers the members
    /// showed each other at init: arrive, copy (the receivers pull the head of the root's
    /// buffer, the root writes the tail into theirs), arrive again.
    BcastLarge { root: u32 },
    /// Every member publishes its input; `root` (every member for `None`) combines them.
    /// Elements have `elem` bytes.
    Reduce { root: Option<u32>, elem: usize },
    /// A reduction larger than a slot, as a reduce-scatter by single copies between the
    /// buffers the members showed each other at init (`Communicator::shm_persist_claim`):
    /// arrive, combine this rank's slice of every input into every receiver, arrive again.
    ReduceLarge { root: Option<u32>, elem: usize },
}

impl ShmKind {
    /// The form a plan over `send` and `recv` bytes with `combine` takes, if any: data of
    /// 1 byte to a slot; a reduction above the slots from the size where the blocking one
    /// goes by single copies; never a user operation (which may call MPI and so cannot run
    /// inside the engine, where runs complete).
    /// `p` is the communicator's size.
    pub(crate) fn fit(
        self,
        send: usize,
        recv: usize,
        combine: Option<&Combine>,
        p: usize,
    ) -> Option<Self> {
        let slot = |n: usize| (1..=COLL_SLOT_BYTES).contains(&n);
        match self {
            ShmKind::Barrier => Some(self),
            ShmKind::Bcast { root } | ShmKind::BcastLarge { root } => {
                if slot(recv) {
                    return Some(ShmKind::Bcast { root });
                }
                let min =
                    super::select::crossovers().shm_bcast_min(crate::runtime::oversubscribed(), p);
                (recv >= min && recv > COLL_SLOT_BYTES).then_some(ShmKind::BcastLarge { root })
            }
            ShmKind::Reduce { root, elem } | ShmKind::ReduceLarge { root, elem } => {
                if combine.is_none_or(|c| c.kernel.is_user()) {
                    return None;
                }
                let len = if send > 0 { send } else { recv };
                if super::shm::reduce_fits(len, p, root.is_none()) {
                    return Some(ShmKind::Reduce { root, elem });
                }
                let c = super::select::crossovers();
                let min = if root.is_some() {
                    c.shm_reduce_long
                } else {
                    c.shm_allreduce_min(crate::runtime::oversubscribed())
                };
                (len >= min && len > COLL_SLOT_BYTES).then_some(ShmKind::ReduceLarge { root, elem })
            }
        }
    }
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not arrived yet: waiting for every member to have entered the previous run.
    Enter,
    /// Arrived with number `n`; waiting for the arrivals this rank needs.
    Wait(u64),
    /// A large reduction's copies are done and announced with arrival `n` (with whether
    /// they succeeded); waiting for every member's, so no buffer is released early.
    Finish(u64),
}

/// One persistent shared-memory collective of this rank: its channel, its buffers and the
/// state of the current run.
pub(crate) struct ShmRun {
    kind: ShmKind,
    at: Meet,
    /// The channel, given back when the last handle on the collective goes.
    claim: ChanClaim,
    /// This rank's number in the communicator.
    me: u32,
    /// Whether the ranks of a rooted run that need nothing leave once arrived.
    early: bool,
    /// Input (empty in place: then `recv` holds it).
    send: Raw<In>,
    recv: Raw<Out>,
    kernel: Option<Kernel>,
    commutative: bool,
    phase: Phase,
    /// A large reduction's piece buffers, kept between runs.
    scratch: SliceScratch,
    /// This rank's copies of the current large-reduction run failed with this.
    failed: Option<Error>,
}

impl std::fmt::Debug for ShmRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmRun")
            .field("kind", &self.kind)
            .field("at", &self.at)
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}

impl ShmRun {
    /// The run of `kind` over `send` and `recv` on `claim`'s channel.
    ///
    /// # Safety
    /// `send` must stay readable, and `recv` readable, writable and not otherwise accessed,
    /// whenever a run is in progress (from [`restart`](Self::restart) until
    /// [`step`](Self::step) returns `Done` or an error), and they must not overlap.
    pub(crate) unsafe fn new(
        kind: ShmKind,
        state: &Arc<CommState>,
        claim: ChanClaim,
        send: Raw<In>,
        recv: Raw<Out>,
        combine: Option<Combine>,
    ) -> ShmRun {
        ShmRun {
            kind,
            at: Meet::Chan(claim.chan),
            claim,
            me: state.rank,
            early: super::select::crossovers().shm_rooted_early != 0,
            send,
            recv,
            commutative: combine.as_ref().is_some_and(|c| c.commutative),
            kernel: combine.map(|c| c.kernel),
            phase: Phase::Enter,
            scratch: SliceScratch::default(),
            failed: None,
        }
    }

    /// Prepares a new run (the request checks that the previous one completed).
    pub(crate) fn restart(&mut self) {
        self.phase = Phase::Enter;
        self.failed = None;
    }

    /// The bytes this rank publishes with its arrival.
    fn published(&self) -> &[u8] {
        let data = match self.kind {
            ShmKind::Barrier => return &[],
            ShmKind::Bcast { root } if root != self.me => return &[],
            ShmKind::Bcast { .. } => self.recv.as_read(),
            ShmKind::Reduce { .. } if self.send.len > 0 => self.send,
            ShmKind::Reduce { .. } => self.recv.as_read(),
            // Its buffers were shown at init; an arrival says they are ready.
            ShmKind::ReduceLarge { .. } | ShmKind::BcastLarge { .. } => return &[],
        };
        // SAFETY: a run is in progress (the only time `step` calls this), so the region is
        // readable for its length (contract of `new`); the slice lives only for the arrival,
        // which copies it, and nothing writes `recv` meanwhile.
        unsafe { data.bytes() }
    }

    /// This run's arrival number, arriving now if it has not yet: once every member has
    /// entered the previous run (so finished reading the slot this arrival reuses; the
    /// channel starts with every member there). `None` while some member has not.
    fn entered(&mut self, node: &mut dyn Node) -> Result<Option<u64>> {
        match self.phase {
            Phase::Wait(n) | Phase::Finish(n) => Ok(Some(n)),
            Phase::Enter => {
                let prev = node.next_arrival(self.at) - 1;
                if !node.arrived(self.at, &self.claim.members, prev)? {
                    return Ok(None);
                }
                let n = node.arrive(self.at, self.published());
                self.phase = Phase::Wait(n);
                Ok(Some(n))
            }
        }
    }

    /// Advances the run as far as it can without waiting.
    pub(crate) fn step(&mut self, e: &mut Engine) -> Result<Advance> {
        let node = node_of(e)?;
        if let ShmKind::ReduceLarge { .. } | ShmKind::BcastLarge { .. } = self.kind {
            return self.step_large(node);
        }
        let Some(n) = self.entered(node)? else {
            return Ok(Advance::Running);
        };
        let members = &self.claim.members;
        match self.kind {
            ShmKind::Barrier => Ok(if node.arrived(self.at, members, n)? {
                Advance::Done
            } else {
                Advance::Running
            }),
            ShmKind::Bcast { root } => {
                let owner = members[root as usize];
                if root == self.me {
                    if self.early || node.arrived(self.at, members, n)? {
                        return Ok(Advance::Done);
                    }
                    return Ok(Advance::Running);
                }
                let there = if self.early {
                    node.arrived_rank(self.at, owner, n)?
                } else {
                    node.arrived(self.at, members, n)?
                };
                if !there {
                    return Ok(Advance::Running);
                }
                let len = self.recv.len;
                let sent = node.slot_len(self.at, owner, n)?;
                if sent != len {
                    return Err(count_mismatch("broadcast", root, sent, len));
                }
                let slot = node.slot(self.at, owner, n)?;
                // SAFETY: the root's slot holds the `len` bytes it published before arrival
                // `n` (checked just above) in a live mapping, and it does not rewrite it
                // before we have entered the next run. `recv` is ours to write while the run
                // is in progress (contract of `new`) and lies in our own memory, not in the
                // slot.
                unsafe { std::ptr::copy_nonoverlapping(slot, self.recv.get_mut(), len) };
                Ok(Advance::Done)
            }
            ShmKind::Reduce { root, .. } => {
                let leaf = root.is_some_and(|r| r != self.me);
                if leaf && self.early {
                    // Our slot stays until everyone has entered the next run.
                    return Ok(Advance::Done);
                }
                if !node.arrived(self.at, members, n)? {
                    return Ok(Advance::Running);
                }
                if leaf {
                    return Ok(Advance::Done);
                }
                let len = if self.send.len > 0 {
                    self.send.len
                } else {
                    self.recv.len
                };
                for (r, &w) in members.iter().enumerate() {
                    let sent = node.slot_len(self.at, w, n)?;
                    if sent != len {
                        return Err(count_mismatch("reduce", r as u32, sent, len));
                    }
                }
                let kernel = self.kernel.as_ref().expect("a reduction has an operation");
                // SAFETY: `recv` holds `len` bytes (the plan checked the receive buffer
                // against the count) that are ours to write while the run is in progress
                // (contract of `new`); our own input was copied into our slot when we
                // arrived, so in place it may be overwritten now.
                let out = unsafe { std::slice::from_raw_parts_mut(self.recv.get_mut(), len) };
                // x_{p-1} first, then x_k ⊕ acc downwards: rank order, and the same bits on
                // every receiver.
                for (k, &w) in members.iter().enumerate().rev() {
                    let slot = node.slot(self.at, w, n)?;
                    // SAFETY: `w`'s slot holds the `len` bytes it published before arrival
                    // `n` (checked above) in a live mapping, not rewritten before we have
                    // entered the next run; it does not overlap `out`, which is ours.
                    let theirs = unsafe { std::slice::from_raw_parts(slot, len) };
                    if k == members.len() - 1 {
                        out.copy_from_slice(theirs);
                    } else {
                        kernel.call(theirs, out);
                    }
                }
                Ok(Advance::Done)
            }
            ShmKind::ReduceLarge { .. } | ShmKind::BcastLarge { .. } => {
                unreachable!("taken by step_large above")
            }
        }
    }

    /// [`step`](Self::step) of a large reduction or broadcast: enter (every member's buffers
    /// are then ready to be read and written), make this rank's single copies, arrive with
    /// the outcome, and complete once every member has.
    fn step_large(&mut self, node: &mut dyn Node) -> Result<Advance> {
        let call = match self.kind {
            ShmKind::BcastLarge { .. } => "broadcast",
            _ => "reduce",
        };
        if let Phase::Finish(n) = self.phase {
            let members = &self.claim.members;
            return finish_large(node, self.at, members, n, call, &mut self.failed);
        }
        let Some(n) = self.entered(node)? else {
            return Ok(Advance::Running);
        };
        let members = &self.claim.members;
        if !node.arrived(self.at, members, n)? {
            return Ok(Advance::Running);
        }
        // SAFETY: a run is in progress (every member has entered it), so `send` is readable
        // and `recv` ours to read and write (contract of `new`); they do not overlap. In a
        // reduction peers write into `recv` only their own slices of the result, which this
        // rank neither reads nor writes, and read only `send` (or, in place, their slices of
        // `recv`); in a broadcast the root writes only the tail of a receiver's `recv`, which
        // the receiver does not touch, and receivers only read the root's.
        let (input, out) = unsafe {
            (
                (self.send.len > 0).then(|| self.send.bytes()),
                std::slice::from_raw_parts_mut(self.recv.get_mut(), self.recv.len),
            )
        };
        let (peers, me) = (&self.claim.peers, self.me as usize);
        let work = match self.kind {
            ShmKind::ReduceLarge { root, elem } => reduce_slice(
                self.kernel.as_ref().expect("a reduction has an operation"),
                self.commutative,
                peers,
                me,
                root.map(|r| r as usize),
                elem,
                input,
                out,
                &mut self.scratch,
            ),
            ShmKind::BcastLarge { root } => bcast_copies(peers, root as usize, me, out),
            _ => unreachable!("step_large runs the large kinds only"),
        };
        if work.is_err() {
            node.single_copy_refused();
        }
        let m = node.arrive(self.at, &[u8::from(work.is_ok())]);
        self.failed = work.err();
        self.phase = Phase::Finish(m);
        finish_large(node, self.at, members, m, call, &mut self.failed)
    }
}

/// Completes a large collective (`call`) once every member has announced its copies with
/// arrival `n`: with this rank's own error (`failed`), or an error if another member's copies
/// failed.
fn finish_large(
    node: &mut dyn Node,
    at: Meet,
    members: &[u32],
    n: u64,
    call: &str,
    failed: &mut Option<Error>,
) -> Result<Advance> {
    if !node.arrived(at, members, n)? {
        return Ok(Advance::Running);
    }
    if let Some(e) = failed.take() {
        return Err(e);
    }
    for &w in members {
        if node.slot_len(at, w, n)? != 1 {
            return Err(Error::new(
                ErrorClass::Intern,
                "shared-memory collective: members out of step",
            ));
        }
        // SAFETY: `w` published one byte with arrival `n`, which we saw; it does not rewrite
        // that slot before we have entered the next run.
        if unsafe { node.slot(at, w, n)?.read() } != 1 {
            return Err(Error::new(
                ErrorClass::Other,
                format!("{call}: a cross-process copy of another rank failed"),
            ));
        }
    }
    Ok(Advance::Done)
}
