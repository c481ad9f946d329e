//! Communicators: a group of ranks plus a private context for their messages; creating them
//! (dup, split, split by type, from groups), comparing them, attributes, and
//! intercommunicators.
//!
//! # Context ids
//! Ids come in pairs: `2k` carries a communicator's point-to-point traffic, `2k + 1` its
//! collectives. Each process keeps a bitmap of the pairs it uses; a new communicator's pair is
//! the lowest one free in every member, found by an allreduce (bitwise AND) of the members'
//! free masks over the parent. Pairs return to the bitmap when the last handle to a
//! communicator is dropped (or [`free`](Communicator::free)d).
//!
//! # From groups alone
//! `MPI_Comm_create_from_group` and `MPI_Intercomm_create_from_groups` have no parent
//! communicator, and only the groups' members call them. Every process reserves pair 2
//! ([`FROM_GROUP_PAIR`]) at init, so all know it without communicating: the members agree on
//! the new pair over the world on it, as `MPI_Comm_create_group` does over a parent, at a tag
//! hashed from the string tag and the groups (`string_tag`), and check that they all gave
//! the same string. Its traffic never meets a user communicator's, the world's included.
//!
//! # Standard sections
//! MPI-5.0 §7 (groups, contexts, communicators, intercommunicators, caching).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::coll::hier::HostLayout;
use crate::error::{Error, ErrorClass, Result};
use crate::group::{Group, Relation};
use crate::handle::attr::{Attrs, KeyDef, Predefined, Value, NO_COMM};
use crate::op::Op;
use crate::runtime::Runtime;
use crate::threading::{Multiple, Single, ThreadLevel, Threading};

/// Context id of `MPI_COMM_WORLD`; each communicator has its own, so their messages never mix.
/// Ids come in pairs: `2k` carries point-to-point traffic, `2k + 1` the communicator's
/// collectives, so a collective can never match a user's receive.
pub const WORLD_CONTEXT: u32 = 0;
/// Context id of `MPI_COMM_SELF`.
pub const SELF_CONTEXT: u32 = 2;

/// Context-id pairs a process can use at once (pair 0 is `WORLD`, pair 1 `SELF`, pair 2 the
/// constructions from groups).
pub const MAX_CONTEXT_PAIRS: usize = 4096;
const WORDS: usize = MAX_CONTEXT_PAIRS / 64;

/// Pairs in use in this process (MPI is initialized once per process).
static USED: Mutex<[u64; WORDS]> = Mutex::new({
    let mut m = [0u64; WORDS];
    m[0] = 0b111;
    m
});

/// Context pair reserved in every process (so known to all without communication) for the
/// constructions from groups (`MPI_Comm_create_from_group`,
/// `MPI_Intercomm_create_from_groups`): their agreements run over this job's world on it,
/// never on a context a user communicator can reach.
pub(crate) const FROM_GROUP_PAIR: u32 = 2;

fn used() -> std::sync::MutexGuard<'static, [u64; WORDS]> {
    USED.lock().unwrap_or_else(|p| p.into_inner())
}

fn free_mask() -> [u64; WORDS] {
    used().map(|w| !w)
}

/// Claims context pair `k` in this process; false if it was taken.
pub(crate) fn claim(k: u32) -> bool {
    let mut u = used();
    let (w, b) = (k as usize / 64, 1u64 << (k % 64));
    let free = u[w] & b == 0;
    u[w] |= b;
    free
}

/// Gives context pair `k` back.
pub(crate) fn release(k: u32) {
    let mut u = used();
    u[k as usize / 64] &= !(1u64 << (k % 64));
}

/// The lowest pairs set in `mask` (`n` of them), if there are enough.
fn lowest(mask: &[u64], n: usize) -> Option<Vec<u32>> {
    let mut out = Vec::with_capacity(n);
    for (i, &w) in mask.iter().enumerate() {
        let mut w = w;
        while w != 0 && out.len() < n {
            out.push(i as u32 * 64 + w.trailing_zeros());
            w &= w - 1;
        }
    }
    (out.len() == n).then_some(out)
}

fn out_of_contexts(call: &str) -> Error {
    Error::new(
        ErrorClass::Other,
        format!("{call}: no context id is free in every member ({MAX_CONTEXT_PAIRS} pairs per process); free unused communicators"),
    )
}

/// Who a communicator's members are and which contexts it uses: all that a collective in
/// flight needs. Schedules hold this part alone, never the [`CommState`] that owns the
/// attributes, so an attribute value's `Drop` (user code) never runs inside the progress
/// engine when a schedule finishes.
pub(crate) struct CommCore {
    /// Point-to-point context id (`2k`); the collective one is `context + 1`.
    pub(crate) context: u32,
    /// This process's rank (in the local group, for intercommunicators).
    pub(crate) rank: u32,
    /// World rank of each member (of the local group), in rank order.
    pub(crate) members: Vec<u32>,
    /// Intercommunicators: world rank of each member of the remote group.
    pub(crate) remote: Option<Vec<u32>>,
    /// Context pair for collectives among the local group: `context` for intracommunicators,
    /// a private pair for intercommunicators.
    pub(crate) local_context: u32,
    /// Context pairs to return to the bitmap when the last handle, and the last collective
    /// in flight, is gone.
    owned_pairs: Vec<u32>,
}

impl CommCore {
    /// World ranks of the processes that point-to-point ranks name, in rank order: the
    /// remote group of an intercommunicator, the members of an intracommunicator.
    #[inline]
    pub(crate) fn peers(&self) -> &[u32] {
        self.remote.as_deref().unwrap_or(&self.members)
    }
}

impl Drop for CommCore {
    fn drop(&mut self) {
        for &k in &self.owned_pairs {
            release(k);
        }
    }
}

/// What every handle to one communicator shares.
pub(crate) struct CommState {
    /// Members and contexts (shared with the collectives in flight).
    pub(crate) core: Arc<CommCore>,
    /// Collective calls started on this communicator: the tag of the next one.
    seq: AtomicU32,
    /// Added to every collective tag: 0, or [`TAG_SPLIT`] for the scratch communicator of a
    /// subgroup construction, whose messages share the parent's context with the parent's
    /// own collectives (which other members may be in at the same time).
    tag_base: u32,
    /// Host placement, computed on first use by a collective.
    layout: OnceLock<Option<HostLayout>>,
    /// Whether every member is on one host that runs more ranks than it has cores, computed
    /// on first use by a collective.
    crowded: OnceLock<bool>,
    /// Cached attributes (`MPI_Comm_set_attr`).
    pub(crate) attrs: Attrs,
    /// The process topology (Cartesian, graph, distributed graph), set once when the
    /// communicator is created with one and kept by [`Comm::dup`].
    pub(crate) topo: OnceLock<Arc<crate::handle::topo::Topology>>,
    /// The handle-layer id given out by `as_raw`, so that every call returns the same one.
    raw: OnceLock<crate::handle::comm::CommHandle>,
    /// The shared-memory collective channel, taken on first use and given back on drop.
    pub(crate) shm: crate::coll::shm::ShmChannel,
    /// The host sub-communicator of the node-aware collectives' intra-host stages, created
    /// collectively on first use and freed with this state.
    pub(crate) host_stage: crate::coll::hier::HostStage,
    /// The session id this communicator derives from (its buffered sends use that session's
    /// buffer), or 0 (the world model). Set once, before the communicator is handed out.
    session: AtomicU32,
}

impl std::ops::Deref for CommState {
    type Target = CommCore;
    fn deref(&self) -> &CommCore {
        &self.core
    }
}

impl std::fmt::Debug for CommState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommState")
            .field("context", &self.context)
            .field("rank", &self.rank)
            .field("members", &self.members)
            .field("remote", &self.remote)
            .finish_non_exhaustive()
    }
}

impl CommState {
    pub(crate) fn new(
        context: u32,
        rank: u32,
        members: Vec<u32>,
        owned_pairs: Vec<u32>,
    ) -> CommState {
        CommState::from_core(CommCore {
            context,
            rank,
            members,
            remote: None,
            local_context: context,
            owned_pairs,
        })
    }

    /// An intercommunicator's state: traffic between the groups on context pair `pair`, the
    /// local group's collectives on `local_pair`; this process is `rank` of `members`, the
    /// other group is `remote`. Both pairs return to the pool with the state.
    pub(crate) fn inter(
        pair: u32,
        local_pair: u32,
        rank: u32,
        members: Vec<u32>,
        remote: Vec<u32>,
    ) -> CommState {
        CommState::from_core(CommCore {
            context: 2 * pair,
            rank,
            members,
            remote: Some(remote),
            local_context: 2 * local_pair,
            owned_pairs: vec![pair, local_pair],
        })
    }

    fn from_core(core: CommCore) -> CommState {
        // Scratch communicators (no contexts of their own) and intercommunicators never
        // take a shared-memory channel.
        let shm_eligible = !core.owned_pairs.is_empty() && core.remote.is_none();
        CommState {
            core: Arc::new(core),
            seq: AtomicU32::new(0),
            tag_base: 0,
            layout: OnceLock::new(),
            crowded: OnceLock::new(),
            attrs: Attrs::default(),
            topo: OnceLock::new(),
            raw: OnceLock::new(),
            shm: crate::coll::shm::ShmChannel::new(shm_eligible),
            host_stage: Default::default(),
            session: AtomicU32::new(0),
        }
    }

    /// The tag of the next collective on this communicator. Every member calls collectives
    /// in the same order, so they agree on it; outstanding nonblocking collectives get
    /// distinct tags. Tags from 2³⁰ up are left for communicator construction.
    pub(crate) fn next_tag(&self) -> i32 {
        (self.tag_base | (self.seq.fetch_add(1, Ordering::Relaxed) & (TAG_SPLIT - 1))) as i32
    }

    /// How the (local group's) members spread over hosts, per the runtime's collective
    /// placement; `None` when a two-level algorithm cannot help.
    /// Whether every member shares one host that runs more ranks than it has cores: there a
    /// collective's ranks wait for the scheduler at every step, so fewer steps win (every
    /// member gives the same answer).
    pub(crate) fn crowded(&self, rt: &Runtime) -> bool {
        *self.crowded.get_or_init(|| {
            let loc = &rt.coll_locality;
            crate::runtime::oversubscribed()
                && loc.all_in_job(&self.members)
                && self.members.first().is_some_and(|&m0| {
                    let h = loc.host_of(m0);
                    self.members.iter().all(|&m| loc.host_of(m) == h)
                })
        })
    }

    pub(crate) fn layout(&self, rt: &Runtime) -> Option<&HostLayout> {
        self.layout
            .get_or_init(|| HostLayout::new(&self.members, &rt.coll_locality))
            .as_ref()
    }
}

/// Collective tags are below this; communicator construction over a subgroup uses the rest.
const TAG_SPLIT: u32 = 1 << 30;

/// A communicator (`MPI_Comm`). Cloning gives another handle to the same communicator.
#[derive(Debug, Clone)]
pub struct Communicator<L: ThreadLevel = Single> {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) state: Arc<CommState>,
    _level: L::Marker,
}

impl Comm {
    /// The handle-layer id if there is one already (predefined, or made by `raw`).
    pub(crate) fn raw_existing(&self) -> Option<crate::handle::comm::CommHandle> {
        use crate::handle::comm::CommHandle;
        match self.state.context {
            WORLD_CONTEXT if !self.is_inter() => Some(CommHandle::WORLD),
            SELF_CONTEXT if !self.is_inter() => Some(CommHandle::SELF),
            _ => self.state.raw.get().copied(),
        }
    }

    /// The handle-layer id of this communicator (`MPI_Comm`): the predefined ids for the
    /// world and self communicators, otherwise an id made on first use, which keeps the
    /// communicator alive until freed through [`crate::handle::comm::comm_free`].
    pub(crate) fn raw(&self) -> Result<crate::handle::comm::CommHandle> {
        use crate::handle::comm::CommHandle;
        if !self.is_inter() {
            match self.state.context {
                WORLD_CONTEXT => return Ok(CommHandle::WORLD),
                SELF_CONTEXT => return Ok(CommHandle::SELF),
                _ => {}
            }
        }
        if let Some(h) = self.state.raw.get() {
            return Ok(*h);
        }
        let h = crate::handle::comm::put("as_raw", self.clone())?;
        // Two threads racing here each made an id; the loser's stays valid (and names the
        // same communicator) but is not handed out again.
        Ok(*self.state.raw.get_or_init(|| h))
    }
}

/// What every kind of communicator offers, object-safe: code can take `&dyn AnyCommunicator`
/// or be generic over it. Implemented by [`Communicator`], [`InterCommunicator`] and (through
/// their communicator) the Cartesian and graph communicators. rsmpi calls this trait
/// `Communicator`; here that name is the intracommunicator type itself.
pub trait AnyCommunicator {
    /// This process's rank (in the local group of an intercommunicator).
    fn rank(&self) -> i32;
    /// Number of ranks (of the local group of an intercommunicator).
    fn size(&self) -> i32;
    /// The (local) group.
    fn group(&self) -> Group;
    /// Whether this is an intercommunicator (`MPI_Comm_test_inter`).
    fn is_inter(&self) -> bool;
    /// The communicator's handle-layer id, to hand it to C code built on oxmpi's `mpi.h`
    /// (`MPI_Comm`; see [`Communicator::as_raw`]).
    fn as_raw(&self) -> Result<crate::handle::comm::CommHandle>;
    /// The handle-layer id if the communicator has one already (the predefined ones, or one
    /// made by [`as_raw`](Self::as_raw) or [`set_name`](Self::set_name)); never makes one.
    fn raw_if_made(&self) -> Option<crate::handle::comm::CommHandle>;
    /// The communicator's name (`MPI_Comm_get_name`): empty if it was never named.
    fn name(&self) -> String {
        self.raw_if_made()
            .and_then(|h| crate::handle::name::comm_get_name(h).ok())
            .unwrap_or_default()
    }
    /// Names the communicator (`MPI_Comm_set_name`); up to 127 bytes. Names live in the
    /// handle layer, so this gives the communicator a handle id (see `as_raw`).
    fn set_name(&self, name: &str) -> Result<()> {
        crate::handle::name::comm_set_name(self.as_raw()?, name)
    }
    /// Ends every rank of the job with `code` (`MPI_Abort`).
    fn abort(&self, code: i32) -> !;
}

impl<L: ThreadLevel> AnyCommunicator for Communicator<L> {
    fn rank(&self) -> i32 {
        Communicator::rank(self)
    }
    fn size(&self) -> i32 {
        Communicator::size(self)
    }
    fn group(&self) -> Group {
        Communicator::group(self)
    }
    fn is_inter(&self) -> bool {
        false
    }
    fn as_raw(&self) -> Result<crate::handle::comm::CommHandle> {
        Communicator::as_raw(self)
    }
    fn raw_if_made(&self) -> Option<crate::handle::comm::CommHandle> {
        self.untyped().raw_existing()
    }
    fn abort(&self, code: i32) -> ! {
        Communicator::abort(self, code)
    }
}

impl<L: ThreadLevel> AnyCommunicator for InterCommunicator<L> {
    fn rank(&self) -> i32 {
        InterCommunicator::rank(self)
    }
    fn size(&self) -> i32 {
        InterCommunicator::size(self)
    }
    fn group(&self) -> Group {
        InterCommunicator::group(self)
    }
    fn is_inter(&self) -> bool {
        true
    }
    fn as_raw(&self) -> Result<crate::handle::comm::CommHandle> {
        Comm {
            rt: self.rt.clone(),
            state: self.state.clone(),
        }
        .raw()
    }
    fn raw_if_made(&self) -> Option<crate::handle::comm::CommHandle> {
        Comm {
            rt: self.rt.clone(),
            state: self.state.clone(),
        }
        .raw_existing()
    }
    fn abort(&self, code: i32) -> ! {
        self.rt.abort(code, "")
    }
}

macro_rules! any_via_deref {
    ($($t:ident),*) => {$(
        impl<L: ThreadLevel> AnyCommunicator for crate::topology::$t<L> {
            fn rank(&self) -> i32 {
                (**self).rank()
            }
            fn size(&self) -> i32 {
                (**self).size()
            }
            fn group(&self) -> Group {
                (**self).group()
            }
            fn is_inter(&self) -> bool {
                false
            }
            fn as_raw(&self) -> Result<crate::handle::comm::CommHandle> {
                (**self).as_raw()
            }
            fn raw_if_made(&self) -> Option<crate::handle::comm::CommHandle> {
                AnyCommunicator::raw_if_made(&**self)
            }
            fn abort(&self, code: i32) -> ! {
                (**self).abort(code)
            }
        }
    )*};
}
any_via_deref!(
    CartesianCommunicator,
    GraphCommunicator,
    DistGraphCommunicator
);

/// Value of `color` that leaves a process out of [`split`](Communicator::split)
/// (`MPI_UNDEFINED`).
pub const UNDEFINED: i32 = -32766;

/// Kinds of [`split_type`](Communicator::split_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitType {
    /// Processes that can share memory: those on one host (`MPI_COMM_TYPE_SHARED`).
    Shared,
}

/// A communicator without a thread-level parameter: what the handle layer stores and what
/// [`Communicator`] and [`InterCommunicator`] wrap. Creating, comparing and freeing
/// communicators is implemented here, once.
#[derive(Debug, Clone)]
pub(crate) struct Comm {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) state: Arc<CommState>,
}

impl Comm {
    pub(crate) fn new(rt: Arc<Runtime>, state: CommState) -> Comm {
        Comm {
            rt,
            state: Arc::new(state),
        }
    }

    /// `MPI_COMM_WORLD`, with the predefined attributes.
    pub(crate) fn world(rt: Arc<Runtime>) -> Comm {
        let state = CommState::new(WORLD_CONTEXT, rt.rank, (0..rt.size).collect(), Vec::new());
        crate::handle::attr::set_world_attrs(&state.attrs, &rt);
        Comm::new(rt, state)
    }

    /// `MPI_COMM_SELF`.
    pub(crate) fn self_comm(rt: Arc<Runtime>) -> Comm {
        let state = CommState::new(SELF_CONTEXT, 0, vec![rt.rank], Vec::new());
        Comm::new(rt, state)
    }

    /// The typed view collectives run on; the level marker only decides auto traits, and this
    /// view never leaves the calling function.
    pub(crate) fn view(&self) -> Communicator<Multiple> {
        Communicator {
            rt: self.rt.clone(),
            state: self.state.clone(),
            _level: Default::default(),
        }
    }

    /// Whether this is an intercommunicator.
    pub(crate) fn is_inter(&self) -> bool {
        self.state.remote.is_some()
    }

    pub(crate) fn rank(&self) -> i32 {
        self.state.rank as i32
    }

    pub(crate) fn size(&self) -> i32 {
        self.state.members.len() as i32
    }

    /// The (local) group.
    pub(crate) fn group(&self) -> Group {
        Group::in_session(self.state.members.clone(), self.rt.rank, self.session())
    }

    /// The remote group of an intercommunicator (empty otherwise).
    pub(crate) fn remote_group(&self) -> Group {
        Group::in_session(
            self.state.remote.clone().unwrap_or_default(),
            self.rt.rank,
            self.session(),
        )
    }

    /// The session this communicator derives from, or 0 (the world model).
    pub(crate) fn session(&self) -> u32 {
        self.state.session.load(Ordering::Relaxed)
    }

    /// `c`, just made and not handed out yet, derived from session `session` (0: none):
    /// its buffered sends use that session's buffer when it has none of its own.
    fn in_session(c: Comm, session: u32) -> Comm {
        if session != 0 {
            c.state.session.store(session, Ordering::Relaxed);
            let core: Arc<dyn std::any::Any + Send + Sync> = c.state.core.clone();
            let owner = Arc::downgrade(&core);
            c.rt.engine
                .with(|e| e.bsend_link_session(c.state.context, owner, session));
        }
        c
    }

    /// `c`, just made from this communicator, in this one's session.
    fn derived(&self, c: Comm) -> Comm {
        Comm::in_session(c, self.session())
    }

    /// `MPI_Comm_compare` for intra- and intercommunicators.
    pub(crate) fn compare(&self, other: &Comm) -> Relation {
        if Arc::ptr_eq(&self.state, &other.state) {
            return Relation::Identical;
        }
        if self.is_inter() != other.is_inter() {
            return Relation::Unequal;
        }
        let local = self.group().compare(&other.group());
        if !self.is_inter() {
            return match local {
                Relation::Identical => Relation::Congruent,
                r => r,
            };
        }
        match (local, self.remote_group().compare(&other.remote_group())) {
            (Relation::Identical, Relation::Identical) => Relation::Congruent,
            (Relation::Unequal, _) | (_, Relation::Unequal) => Relation::Unequal,
            _ => Relation::Similar,
        }
    }

    /// `MPI_Comm_free`: runs the delete callbacks of every attribute (returning the first
    /// error) and releases this handle; the context id returns to the pool when the last
    /// handle goes, after operations in flight.
    /// `id` is the front end's id of this communicator, for the callbacks.
    pub(crate) fn free(self, id: u32) -> Result<()> {
        self.state.attrs.clear(id)
    }

    /// Agrees with every member on `n` context pairs free in all of them, and claims them.
    /// Collective over this communicator.
    pub(crate) fn agree_pairs(&self, call: &str, n: usize) -> Result<Vec<u32>> {
        let v = self.view();
        loop {
            let mask = free_mask();
            let mut all = [0u64; WORDS];
            v.all_reduce_into(&mask[..], &mut all[..], Op::BitwiseAnd)?;
            let ks = lowest(&all, n).ok_or_else(|| out_of_contexts(call))?;
            if let Some(ks) = confirm(self.rt.level, ks, |ok| {
                let mut all_ok = [0u8];
                v.all_reduce_into(&[ok as u8][..], &mut all_ok[..], Op::LogicalAnd)?;
                Ok(all_ok[0] != 0)
            })? {
                return Ok(ks);
            }
        }
    }

    pub(crate) fn intra_only(&self, call: &str) -> Result<()> {
        if self.is_inter() {
            return Err(Error::new(
                ErrorClass::Comm,
                format!("{call}: not defined on an intercommunicator here"),
            ));
        }
        Ok(())
    }

    /// `MPI_Comm_dup`: same ranks, a new context; each attribute's copy callback decides
    /// whether the new communicator gets it, and one that fails fails the call (after the
    /// collective, so every member returns). `id` is the front end's id of this
    /// communicator, for the callbacks. Collective.
    pub(crate) fn dup(&self, id: u32) -> Result<Comm> {
        let mut st = if self.is_inter() {
            self.inter_view().dup_state()?
        } else {
            let ks = self.agree_pairs("duplicate", 1)?;
            CommState::new(2 * ks[0], self.state.rank, self.state.members.clone(), ks)
        };
        // On error `st` drops here and its context pair goes back to the pool.
        st.attrs = self.state.attrs.copy_for_dup(id)?;
        st.topo = self.state.topo.clone();
        Ok(self.derived(Comm::new(self.rt.clone(), st)))
    }

    /// `MPI_Comm_split`: one communicator per `color`, ranks ordered by `key` then by rank
    /// here; [`UNDEFINED`] gets `None`. Collective.
    pub(crate) fn split(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        Ok(self.split_any(color, key)?.map(|c| self.derived(c)))
    }

    fn split_any(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        if color < 0 && color != UNDEFINED {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("split: color {color} is negative"),
            ));
        }
        if self.is_inter() {
            return self.split_inter(color, key);
        }
        let p = self.size() as usize;
        let mut all = vec![[0i32; 2]; p];
        self.view().all_gather_into(
            &[color, key][..],
            bytemuck::cast_slice_mut::<[i32; 2], i32>(&mut all),
        )?;
        let ks = self.agree_pairs("split", 1)?;
        if color == UNDEFINED {
            release(ks[0]);
            return Ok(None);
        }
        let mut mine: Vec<(i32, usize)> = (0..p)
            .filter(|&r| all[r][0] == color)
            .map(|r| (all[r][1], r))
            .collect();
        mine.sort_unstable();
        let members: Vec<u32> = mine.iter().map(|&(_, r)| self.state.members[r]).collect();
        let rank = mine
            .iter()
            .position(|&(_, r)| r == self.state.rank as usize)
            .unwrap_or(0) as u32;
        Ok(Some(Comm::new(
            self.rt.clone(),
            CommState::new(2 * ks[0], rank, members, ks),
        )))
    }

    /// `MPI_Comm_split` of an intercommunicator: the processes of one color in each group
    /// form a new intercommunicator (local ranks by `key`, then by rank, in each group); a
    /// process whose color is [`UNDEFINED`] or absent from the other group gets `None`.
    fn split_inter(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        let ic = self.inter_view();
        // The local group's colors and keys through a scratch communicator of the local
        // group on its private context (tags above every collective's); the other group's
        // through the intercommunicator.
        let mut scratch = CommState::new(
            self.state.local_context,
            self.state.rank,
            self.state.members.clone(),
            Vec::new(),
        );
        scratch.tag_base = TAG_SPLIT;
        let scratch = Comm::new(self.rt.clone(), scratch);
        let mut local = vec![[0i32; 2]; self.state.members.len()];
        scratch.view().all_gather_into(
            &[color, key][..],
            bytemuck::cast_slice_mut::<[i32; 2], i32>(&mut local),
        )?;
        let mut remote = vec![[0i32; 2]; ic.remote().len()];
        ic.all_gather_into(
            &[color, key][..],
            bytemuck::cast_slice_mut::<[i32; 2], i32>(&mut remote),
        )?;
        // One pair for every color: their groups are disjoint.
        let ks = ic.agree_pairs_over_both("split", 2)?;
        let of_color = |all: &[[i32; 2]], world: &[u32]| -> Vec<(i32, usize, u32)> {
            let mut v: Vec<(i32, usize, u32)> = (all.iter().enumerate())
                .filter(|(_, ck)| ck[0] == color)
                .map(|(r, ck)| (ck[1], r, world[r]))
                .collect();
            v.sort_unstable();
            v
        };
        let mine = of_color(&local, &self.state.members);
        let theirs = of_color(&remote, ic.remote());
        if color == UNDEFINED || theirs.is_empty() {
            for &k in &ks {
                release(k);
            }
            return Ok(None);
        }
        let rank = mine
            .iter()
            .position(|&(_, r, _)| r == self.state.rank as usize)
            .unwrap_or(0) as u32;
        Ok(Some(Comm::new(
            self.rt.clone(),
            CommState::inter(
                ks[0],
                ks[1],
                rank,
                mine.iter().map(|m| m.2).collect(),
                theirs.iter().map(|t| t.2).collect(),
            ),
        )))
    }

    /// `MPI_Comm_split_type`; `None` for `kind == None` (`MPI_UNDEFINED`). Collective.
    pub(crate) fn split_type(&self, kind: Option<SplitType>, key: i32) -> Result<Option<Comm>> {
        let color = match kind {
            Some(SplitType::Shared) => self.rt.locality.host_of(self.rt.rank) as i32,
            None => UNDEFINED,
        };
        self.split(color, key)
    }

    /// `MPI_Comm_create`: members of `group` get a communicator, others `None`. Collective
    /// over this communicator.
    pub(crate) fn create(&self, group: &Group) -> Result<Option<Comm>> {
        self.intra_only("create")?;
        self.check_subgroup("create", group)?;
        let ks = self.agree_pairs("create", 1)?;
        match group.rank() {
            Some(r) => Ok(Some(self.derived(Comm::new(
                self.rt.clone(),
                CommState::new(2 * ks[0], r as u32, group.world_ranks().to_vec(), ks),
            )))),
            None => {
                release(ks[0]);
                Ok(None)
            }
        }
    }

    /// `MPI_Comm_create_group`: collective over `group` only; `tag` tells apart concurrent
    /// calls over overlapping groups.
    pub(crate) fn create_group(&self, group: &Group, tag: i32) -> Result<Comm> {
        self.intra_only("create_group")?;
        self.check_subgroup("create_group", group)?;
        if tag < 0 {
            return Err(Error::new(
                ErrorClass::Tag,
                format!("create_group: tag {tag} is negative"),
            ));
        }
        let Some(me) = group.rank() else {
            return Err(Error::new(
                ErrorClass::Group,
                "create_group: this process is not in the group",
            ));
        };
        self.create_over_group("create_group", group, me, tag, None)
    }

    /// The communicator of `group` (this process is its rank `me`), agreed over the group's
    /// members alone: a scratch communicator of them on this one's contexts, with tags above
    /// every collective's, at `tag`. With `same`, the members first check that every one of
    /// them gave those bytes ([`ErrorClass::Arg`] on all of them otherwise).
    fn create_over_group(
        &self,
        call: &str,
        group: &Group,
        me: i32,
        tag: i32,
        same: Option<&[u8]>,
    ) -> Result<Comm> {
        let mut scratch = CommState::new(
            self.state.context,
            me as u32,
            group.world_ranks().to_vec(),
            Vec::new(),
        );
        scratch.tag_base = TAG_SPLIT;
        scratch.seq = AtomicU32::new(tag as u32 % TAG_SPLIT);
        let scratch = Comm::new(self.rt.clone(), scratch);
        if let Some(bytes) = same {
            if !scratch.all_gave(bytes)? {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("{call}: the members of the group gave different string tags"),
                ));
            }
        }
        let ks = loop {
            let mask = free_mask();
            let mut all = [0u64; WORDS];
            scratch.fixed_tag_all_reduce(&mask[..], &mut all[..], Op::BitwiseAnd)?;
            let ks = lowest(&all, 1).ok_or_else(|| out_of_contexts(call))?;
            if let Some(ks) = confirm(self.rt.level, ks, |ok| {
                let mut all_ok = [0u8];
                scratch.fixed_tag_all_reduce(&[ok as u8][..], &mut all_ok[..], Op::LogicalAnd)?;
                Ok(all_ok[0] != 0)
            })? {
                break ks;
            }
        };
        // A group from a session's process set makes a communicator of that session.
        let session = match group.session() {
            0 => self.session(),
            s => s,
        };
        Ok(Comm::in_session(
            Comm::new(
                self.rt.clone(),
                CommState::new(2 * ks[0], me as u32, group.world_ranks().to_vec(), ks),
            ),
            session,
        ))
    }

    /// Whether every member gave `bytes` (the same answer on every member). Two bitwise-AND
    /// reductions at the fixed tag: of the length and its complement, then of the bytes (as
    /// words) and their complements. Where members differ in a bit, its AND is 0 in both the
    /// value and the complement, so every member sees its own value or complement changed.
    fn all_gave(&self, bytes: &[u8]) -> Result<bool> {
        let len = bytes.len() as u64;
        let mut got = [0u64; 2];
        self.fixed_tag_all_reduce(&[len, !len][..], &mut got[..], Op::BitwiseAnd)?;
        if got != [len, !len] {
            return Ok(false);
        }
        if bytes.is_empty() {
            return Ok(true);
        }
        let words: Vec<u64> = bytes
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        let mine: Vec<u64> = words
            .iter()
            .copied()
            .chain(words.iter().map(|w| !w))
            .collect();
        let mut all = vec![0u64; mine.len()];
        self.fixed_tag_all_reduce(&mine[..], &mut all[..], Op::BitwiseAnd)?;
        Ok(all == mine)
    }

    /// This job's world on the context pair reserved for the constructions from groups:
    /// what they agree over, and the peer communicator of
    /// [`intercomm_from_groups`](Self::intercomm_from_groups). Nothing runs on it but those.
    fn from_group_world(rt: &Arc<Runtime>) -> Comm {
        let state = CommState::new(
            2 * FROM_GROUP_PAIR,
            rt.rank,
            (0..rt.size).collect(),
            Vec::new(),
        );
        Comm::new(rt.clone(), state)
    }

    /// `group`'s members checked for a construction from groups: all in this job's world
    /// ([`ErrorClass::Group`] for a process of another job, one spawned or a parent), this
    /// process among them (its rank; [`ErrorClass::Group`] otherwise).
    fn member_of(rt: &Runtime, call: &str, what: &str, group: &Group) -> Result<i32> {
        if let Some(w) = group.world_ranks().iter().find(|&&w| w >= rt.size) {
            return Err(Error::new(
                ErrorClass::Group,
                format!(
                    "{call}: the {what} holds a process of another job (process {w}; this job's \
                     world has {}): only this job's processes form communicators from groups",
                    rt.size
                ),
            ));
        }
        group.rank().ok_or_else(|| {
            Error::new(
                ErrorClass::Group,
                format!("{call}: this process is not in the {what}"),
            )
        })
    }

    /// `MPI_Comm_create_from_group`: the communicator of `group`'s members, collective over
    /// them alone (every one gives the same group and string tag); `None` for an empty
    /// group, at once. Groups come from communicators of this job or a session's process
    /// sets (the communicator is then that session's), and a process of another job is
    /// [`ErrorClass::Group`], as is a caller outside the group.
    ///
    /// The members agree over the world on a context pair every process reserves at init,
    /// at a tag hashed from the string tag and the group ([`string_tag`]). Concurrent
    /// constructions over groups sharing processes are told apart by that tag (members
    /// giving different strings, which is erroneous, do not meet at all). Two strings can
    /// share a tag, so the members also check that they all gave the same string
    /// ([`ErrorClass::Arg`] otherwise; see [`string_tag`]).
    pub(crate) fn from_group(
        rt: &Arc<Runtime>,
        group: &Group,
        stringtag: &str,
    ) -> Result<Option<Comm>> {
        const CALL: &str = "comm_create_from_group";
        if group.size() == 0 {
            return Ok(None);
        }
        let me = Comm::member_of(rt, CALL, "group", group)?;
        let tag = string_tag("comm", stringtag, &[group.world_ranks()]);
        Comm::from_group_world(rt)
            .create_over_group(CALL, group, me, tag, Some(stringtag.as_bytes()))
            .map(Some)
    }

    /// `MPI_Intercomm_create_from_groups`: the intercommunicator between `local` (this
    /// process's group, led by its rank `local_leader`) and the disjoint group `remote` (led
    /// by its rank `remote_leader`), collective over both; both sides give the same string
    /// tag. Each side builds its local communicator from its group as
    /// [`from_group`](Self::from_group) does, then the leaders meet over the reserved world
    /// context as `MPI_Intercomm_create` over a peer communicator would, at a tag hashed
    /// from the string tag and both groups. Errors: an empty group, a process of another
    /// job, a caller outside `local`, or groups sharing a process are
    /// [`ErrorClass::Group`]; a leader outside its group [`ErrorClass::Rank`].
    pub(crate) fn intercomm_from_groups(
        rt: &Arc<Runtime>,
        local: &Group,
        local_leader: i32,
        remote: &Group,
        remote_leader: i32,
        stringtag: &str,
    ) -> Result<Comm> {
        const CALL: &str = "intercomm_create_from_groups";
        if local.size() == 0 || remote.size() == 0 {
            return Err(Error::new(
                ErrorClass::Group,
                format!("{CALL}: the local and the remote group must not be empty"),
            ));
        }
        let me = Comm::member_of(rt, CALL, "local group", local)?;
        if let Some(w) = remote.world_ranks().iter().find(|&&w| w >= rt.size) {
            return Err(Error::new(
                ErrorClass::Group,
                format!("{CALL}: the remote group holds a process of another job (process {w})"),
            ));
        }
        if let Some(w) = (remote.world_ranks().iter()).find(|w| local.world_ranks().contains(w)) {
            return Err(Error::new(
                ErrorClass::Group,
                format!("{CALL}: world rank {w} is in both groups (they must be disjoint)"),
            ));
        }
        for (what, leader, g) in [
            ("local", local_leader, local),
            ("remote", remote_leader, remote),
        ] {
            if leader < 0 || leader >= g.size() {
                return Err(Error::new(
                    ErrorClass::Rank,
                    format!(
                        "{CALL}: {what} leader {leader} is not a rank of the {what} group (size {})",
                        g.size()
                    ),
                ));
            }
        }
        let world = Comm::from_group_world(rt);
        let ltag = string_tag("intercomm-local", stringtag, &[local.world_ranks()]);
        let half = world.create_over_group(CALL, local, me, ltag, Some(stringtag.as_bytes()))?;
        // Both sides hash the two groups in the same order.
        let (a, b) = (local.world_ranks(), remote.world_ranks());
        let pair = if a <= b { [a, b] } else { [b, a] };
        let tag = string_tag("intercomm", stringtag, &pair);
        let peer_leader = remote.world_ranks()[remote_leader as usize] as i32;
        half.create_intercomm(local_leader, &world, peer_leader, tag)
        // `half` goes here, and its context pair with it.
    }

    /// An allreduce whose tag does not advance (communicator construction over subgroups).
    fn fixed_tag_all_reduce<T: crate::op::Reducible>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: Op,
    ) -> Result<()> {
        let r = self.view().all_reduce_into(send, recv, op);
        self.state.seq.fetch_sub(1, Ordering::Relaxed);
        r
    }

    fn check_subgroup(&self, call: &str, group: &Group) -> Result<()> {
        if group
            .world_ranks()
            .iter()
            .all(|w| self.state.members.contains(w))
        {
            Ok(())
        } else {
            Err(Error::new(
                ErrorClass::Group,
                format!("{call}: the group has processes outside the communicator"),
            ))
        }
    }

    /// `MPI_Intercomm_create`, with this communicator as the local one.
    pub(crate) fn create_intercomm(
        &self,
        local_leader: i32,
        peer: &Comm,
        remote_leader: i32,
        tag: i32,
    ) -> Result<Comm> {
        self.intra_only("create_intercomm")?;
        let inter = self
            .view()
            .create_intercomm(local_leader, &peer.view(), remote_leader, tag)?;
        Ok(self.derived(Comm {
            rt: inter.rt,
            state: inter.state,
        }))
    }

    /// `MPI_Intercomm_merge`.
    pub(crate) fn merge(&self, high: bool) -> Result<Comm> {
        if !self.is_inter() {
            return Err(Error::new(
                ErrorClass::Comm,
                "merge: not an intercommunicator",
            ));
        }
        let merged = self.inter_view().merge(high)?;
        Ok(self.derived(Comm {
            rt: merged.rt,
            state: merged.state,
        }))
    }

    /// This intercommunicator as the typed one, for its operations over both groups.
    fn inter_view(&self) -> InterCommunicator<Multiple> {
        InterCommunicator {
            rt: self.rt.clone(),
            state: self.state.clone(),
            _level: Default::default(),
        }
    }

    /// `MPI_Comm_get_attr` of a predefined attribute.
    pub(crate) fn predefined_attr(&self, p: Predefined) -> Option<i32> {
        self.state
            .attrs
            .get(p as u32)
            .and_then(|v| v.downcast_ref::<i32>().copied())
    }
}

impl<L: ThreadLevel> Communicator<L> {
    pub(crate) fn world(rt: Arc<Runtime>) -> Self {
        Communicator::wrap(Comm::world(rt))
    }

    pub(crate) fn self_comm(rt: Arc<Runtime>) -> Self {
        Communicator::wrap(Comm::self_comm(rt))
    }

    pub(crate) fn from_state(rt: Arc<Runtime>, state: CommState) -> Self {
        Communicator::wrap(Comm::new(rt, state))
    }

    pub(crate) fn from_comm(c: Comm) -> Self {
        Communicator::wrap(c)
    }

    fn wrap(c: Comm) -> Self {
        Communicator {
            rt: c.rt,
            state: c.state,
            _level: L::Marker::default(),
        }
    }

    fn core(&self) -> Comm {
        Comm {
            rt: self.rt.clone(),
            state: self.state.clone(),
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

    /// The handle-layer id of this communicator (`MPI_Comm` of oxmpi's `mpi.h`), to hand it
    /// to a C library: `MPI_COMM_WORLD`/`MPI_COMM_SELF` for those, otherwise an id made on
    /// first use (the same on every call) that keeps the communicator alive until freed
    /// with [`comm_free`](crate::handle::comm::comm_free).
    pub fn as_raw(&self) -> Result<crate::handle::comm::CommHandle> {
        self.untyped().raw()
    }

    fn untyped(&self) -> Comm {
        Comm {
            rt: self.rt.clone(),
            state: self.state.clone(),
        }
    }

    /// The communicator behind handle-layer id `raw` (from C code or [`as_raw`](Self::as_raw)).
    /// `L` may not promise more threading than the level in force, and `raw` must name an
    /// intracommunicator.
    pub fn from_raw(raw: crate::handle::comm::CommHandle) -> Result<Communicator<L>> {
        crate::handle::comm::comm_typed(raw)
    }

    /// The communicator's name (`MPI_Comm_get_name`): `MPI_COMM_WORLD` for the world until
    /// renamed, empty for a new communicator.
    pub fn name(&self) -> String {
        AnyCommunicator::name(self)
    }

    /// Names the communicator (`MPI_Comm_set_name`); [`ErrorClass::Arg`] above 127 bytes.
    pub fn set_name(&self, name: &str) -> Result<()> {
        AnyCommunicator::set_name(self, name)
    }

    /// The communicator's group (`MPI_Comm_group`).
    pub fn group(&self) -> Group {
        self.core().group()
    }

    /// The point-to-point context id (the collective one is one higher); for diagnostics.
    pub fn context_id(&self) -> u32 {
        self.state.context
    }

    /// How this communicator relates to `other` (`MPI_Comm_compare`): identical (the same
    /// communicator), congruent (same ranks in the same order), similar (same ranks), or
    /// unequal.
    pub fn compare(&self, other: &Communicator<L>) -> Relation {
        self.core().compare(&other.core())
    }

    /// Releases this handle (`MPI_Comm_free`). The communicator's context id returns to the
    /// pool when its last handle is freed or dropped; operations still in flight complete.
    pub fn free(self) {}

    /// A new communicator with the same ranks and a new context (`MPI_Comm_dup`); attributes
    /// whose keyval asks for it are copied. Collective.
    pub fn duplicate(&self) -> Result<Communicator<L>> {
        self.core().dup(NO_COMM).map(Communicator::wrap)
    }

    /// Splits into one communicator per `color`, ranks ordered by `key` then by rank here
    /// (`MPI_Comm_split`). A process giving [`UNDEFINED`] gets `None`. Collective.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Communicator<L>>> {
        Ok(self.core().split(color, key)?.map(Communicator::wrap))
    }

    /// Splits by a property of the processes (`MPI_Comm_split_type`): with
    /// [`SplitType::Shared`], one communicator per host (the launcher's real placement),
    /// ranks ordered by `key`. Collective.
    pub fn split_type(&self, kind: SplitType, key: i32) -> Result<Communicator<L>> {
        self.core()
            .split_type(Some(kind), key)?
            .map(Communicator::wrap)
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Intern,
                    "split_type: no communicator for this host",
                )
            })
    }

    /// The communicator of `group`'s processes (`MPI_Comm_create`): members get it, others
    /// `None`. `group` must be a subset of this communicator's group, the same on every
    /// rank. Collective over this communicator.
    pub fn create(&self, group: &Group) -> Result<Option<Communicator<L>>> {
        Ok(self.core().create(group)?.map(Communicator::wrap))
    }

    /// The communicator of `group`'s processes (`MPI_Comm_create_group`), collective over the
    /// group only; `tag` tells apart concurrent calls over overlapping groups. Call it only
    /// on members of `group` ([`ErrorClass::Group`] otherwise).
    pub fn create_group(&self, group: &Group, tag: i32) -> Result<Communicator<L>> {
        self.core().create_group(group, tag).map(Communicator::wrap)
    }

    /// Sets attribute `key` to `value` (`MPI_Comm_set_attr`), replacing (and dropping) a
    /// previous value.
    pub fn set_attr<T: Clone + Send + Sync + 'static>(&self, key: &Keyval<T>, value: T) {
        // A typed key has no delete callback (dropping the value is its delete), so
        // replacing cannot fail.
        let r = self.state.attrs.set(NO_COMM, &key.def, Arc::new(value));
        debug_assert!(r.is_ok(), "typed keyvals have no delete callback");
    }

    /// The value of attribute `key`, if set (`MPI_Comm_get_attr`).
    pub fn attr<T: Clone + Send + Sync + 'static>(&self, key: &Keyval<T>) -> Option<T> {
        self.state
            .attrs
            .get(key.def.id)
            .and_then(|v| v.downcast_ref::<T>().cloned())
    }

    /// Removes attribute `key` and returns its value (`MPI_Comm_delete_attr`).
    pub fn delete_attr<T: Clone + Send + Sync + 'static>(&self, key: &Keyval<T>) -> Option<T> {
        let v = self.state.attrs.delete(NO_COMM, &key.def).ok()??;
        v.downcast_ref::<T>().cloned()
    }

    /// The value of a predefined attribute (`MPI_Comm_get_attr` with `MPI_TAG_UB`, ...): set
    /// on the world communicator only; [`Predefined::Appnum`] only when the launcher gave an
    /// MPMD index.
    pub fn predefined_attr(&self, key: Predefined) -> Option<i32> {
        self.core().predefined_attr(key)
    }

    /// An intercommunicator between this (local) communicator and another group
    /// (`MPI_Intercomm_create`). `local_leader` (a rank here) and `remote_leader` (its rank
    /// in `peer`) talk over `peer` with `tag`. Collective over both groups.
    pub fn create_intercomm(
        &self,
        local_leader: i32,
        peer: &Communicator<L>,
        remote_leader: i32,
        tag: i32,
    ) -> Result<InterCommunicator<L>> {
        if local_leader < 0 || local_leader >= self.size() {
            return Err(Error::new(
                ErrorClass::Rank,
                format!(
                    "create_intercomm: local leader {local_leader} is not a rank (size {})",
                    self.size()
                ),
            ));
        }
        let leader = self.rank() == local_leader;
        if leader && (remote_leader < 0 || remote_leader >= peer.size()) {
            return Err(Error::new(ErrorClass::Rank, format!("create_intercomm: remote leader {remote_leader} is not a rank of the peer communicator")));
        }
        // Exchange (AND-combine) data with the other group through the leaders.
        let exchange = |mine: &mut [u64]| -> Result<()> {
            if leader {
                let (theirs, _) = peer.receive_vec_and_send::<u64>(mine, remote_leader, tag)?;
                if theirs.len() != mine.len() {
                    return Err(Error::new(
                        ErrorClass::Intern,
                        "create_intercomm: leaders disagree on the mask size",
                    ));
                }
                for (m, t) in mine.iter_mut().zip(theirs) {
                    *m &= t;
                }
            }
            self.broadcast_into(local_leader, mine)
        };
        // Remote group membership.
        let mut remote: Vec<u32> = Vec::new();
        if leader {
            let mine: Vec<u64> = self.state.members.iter().map(|&w| w as u64).collect();
            let (theirs, _) = peer.receive_vec_and_send::<u64>(&mine, remote_leader, tag)?;
            remote = theirs.into_iter().map(|w| w as u32).collect();
        }
        let mut n = remote.len() as u64;
        self.broadcast_into(local_leader, &mut n)?;
        remote.resize(n as usize, 0);
        self.broadcast_into(local_leader, &mut remote[..])?;
        // Two pairs free in both groups: the intercommunicator's and the local groups'.
        let ks = loop {
            let mut all = [0u64; WORDS];
            self.all_reduce_into(&free_mask()[..], &mut all[..], Op::BitwiseAnd)?;
            exchange(&mut all)?;
            let ks = lowest(&all, 2).ok_or_else(|| out_of_contexts("create_intercomm"))?;
            if let Some(ks) = confirm(self.rt.level, ks, |ok| {
                let mut all_ok = [0u64];
                self.all_reduce_into(&[ok as u64][..], &mut all_ok[..], Op::BitwiseAnd)?;
                exchange(&mut all_ok)?;
                Ok(all_ok[0] != 0)
            })? {
                break ks;
            }
        };
        let st = CommState::from_core(CommCore {
            context: 2 * ks[0],
            rank: self.state.rank,
            members: self.state.members.clone(),
            remote: Some(remote),
            local_context: 2 * ks[1],
            owned_pairs: ks.clone(),
        });
        Ok(InterCommunicator {
            rt: self.rt.clone(),
            state: Arc::new(st),
            _level: L::Marker::default(),
        })
    }

    /// Sends `mine` to `dest` and receives a vector of any length from it, with `tag`.
    fn receive_vec_and_send<T: crate::Equivalence>(
        &self,
        mine: &[T],
        dest: i32,
        tag: i32,
    ) -> Result<(Vec<T>, crate::Status)> {
        crate::request::scope(|s| {
            let r = self.immediate_send(s, mine, dest, tag)?;
            let got = self.receive_vec::<T>(dest, tag)?;
            r.wait()?;
            Ok(got)
        })
    }
}

/// The tag of a construction from groups with string tag `s`: 64-bit FNV-1a over `kind`
/// (which construction), the string and the world ranks of `groups` (so constructions over
/// different groups with one string differ too), folded to 30 bits. Two different strings
/// share a tag once in 2³⁰ pairs; that matters only for constructions running at the same
/// time over groups sharing processes, whose messages could then match across: the members'
/// check of the string ([`Comm::from_group`]) fails those that see the other's bytes instead
/// of building a mixed communicator (the others may then wait for them).
fn string_tag(kind: &str, s: &str, groups: &[&[u32]]) -> i32 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    };
    // Lengths first, so that no two sequences of parts give the same bytes.
    for part in [kind.as_bytes(), s.as_bytes()] {
        eat(&(part.len() as u64).to_le_bytes());
        eat(part);
    }
    for g in groups {
        eat(&(g.len() as u64).to_le_bytes());
        for w in *g {
            eat(&w.to_le_bytes());
        }
    }
    ((h ^ (h >> 30) ^ (h >> 60)) & u64::from(TAG_SPLIT - 1)) as i32
}

/// With concurrent threads (`THREAD_MULTIPLE`) another communicator may have claimed an
/// agreed pair in this process meanwhile: claim, ask everyone (`all_ok`), and on any failure
/// give the pairs back and start over (`None`).
fn confirm(
    level: Threading,
    ks: Vec<u32>,
    all_ok: impl FnOnce(bool) -> Result<bool>,
) -> Result<Option<Vec<u32>>> {
    let claimed: Vec<bool> = ks.iter().map(|&k| claim(k)).collect();
    let ok = claimed.iter().all(|&c| c);
    if level < Threading::Multiple {
        debug_assert!(ok, "context pair taken without concurrent threads");
        return Ok(Some(ks));
    }
    let everyone = all_ok(ok);
    if matches!(everyone, Ok(true)) {
        return Ok(Some(ks));
    }
    for (&k, c) in ks.iter().zip(claimed) {
        if c {
            release(k);
        }
    }
    everyone.map(|_| None)
}

/// An attribute key (`MPI_Comm_create_keyval`) for values of type `T`.
#[derive(Debug)]
pub struct Keyval<T> {
    def: Arc<KeyDef>,
    _value: PhantomData<fn() -> T>,
}

impl<T: Clone + Send + Sync + 'static> Keyval<T> {
    /// A new key. With `copy_on_dup`, [`duplicate`](Communicator::duplicate) copies the
    /// value into the new communicator (`MPI_COMM_DUP_FN`); otherwise it does not
    /// (`MPI_COMM_NULL_COPY_FN`). Values are dropped when deleted, replaced, or when the
    /// communicator goes (the delete callback is `T`'s `Drop`).
    pub fn new(copy_on_dup: bool) -> Keyval<T> {
        let copy = copy_on_dup.then(|| -> crate::handle::attr::CopyHook {
            Box::new(|_, v: &Value| Ok(v.downcast_ref::<T>().map(|t| Arc::new(t.clone()) as Value)))
        });
        Keyval {
            def: Arc::new(KeyDef {
                id: crate::handle::attr::next_key_id(),
                copy,
                delete: None,
                predefined: false,
            }),
            _value: PhantomData,
        }
    }
}

/// An intercommunicator (`MPI_Comm` with `MPI_Comm_test_inter` true): two disjoint groups;
/// ranks given to its operations name processes of the *remote* group.
#[derive(Debug, Clone)]
pub struct InterCommunicator<L: ThreadLevel = Single> {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) state: Arc<CommState>,
    _level: L::Marker,
}

impl<L: ThreadLevel> InterCommunicator<L> {
    pub(crate) fn from_state(rt: Arc<Runtime>, state: CommState) -> Self {
        InterCommunicator::from_arc(rt, Arc::new(state))
    }

    pub(crate) fn from_arc(rt: Arc<Runtime>, state: Arc<CommState>) -> Self {
        InterCommunicator {
            rt,
            state,
            _level: L::Marker::default(),
        }
    }

    /// This process's rank in the local group (`MPI_Comm_rank`).
    pub fn rank(&self) -> i32 {
        self.state.rank as i32
    }

    /// Size of the local group (`MPI_Comm_size`).
    pub fn size(&self) -> i32 {
        self.state.members.len() as i32
    }

    /// Size of the remote group (`MPI_Comm_remote_size`).
    pub fn remote_size(&self) -> i32 {
        self.remote().len() as i32
    }

    pub(crate) fn remote(&self) -> &[u32] {
        self.state.remote.as_deref().unwrap_or(&[])
    }

    /// The local group (`MPI_Comm_group`).
    pub fn group(&self) -> Group {
        Group::new(self.state.members.clone(), self.rt.rank)
    }

    /// The remote group (`MPI_Comm_remote_group`).
    pub fn remote_group(&self) -> Group {
        Group::new(self.remote().to_vec(), self.rt.rank)
    }

    /// Releases this handle (`MPI_Comm_free`); see [`Communicator::free`].
    pub fn free(self) {}

    /// An intracommunicator of both groups (`MPI_Intercomm_merge`): the group whose
    /// processes pass `high == false` comes first (if both pass the same, the group with the
    /// lowest member (job id, then rank) does). Collective over both groups.
    pub fn merge(&self, high: bool) -> Result<Communicator<L>> {
        // The other group's `high` and lowest member, through the leaders. Members are
        // compared by identity (job id, rank in the job), which both groups see alike even
        // when they are different jobs (`MPI_Comm_spawn`); within a job, by world rank.
        let low = (self.state.members.iter())
            .map(|&w| self.rt.identity(w))
            .min()
            .unwrap_or((0, 0));
        let mine = [high as u64, low.0, u64::from(low.1)];
        let mut theirs = [0u64; 3];
        self.exchange_through_leaders(&mine, &mut theirs)?;
        let (their_high, their_low) = (theirs[0] != 0, (theirs[1], theirs[2] as u32));
        let me_first = if high != their_high {
            !high
        } else {
            low <= their_low
        };
        let (first, second) = if me_first {
            (&self.state.members[..], self.remote())
        } else {
            (self.remote(), &self.state.members[..])
        };
        let members: Vec<u32> = first.iter().chain(second).copied().collect();
        let rank = if me_first {
            self.state.rank
        } else {
            (first.len() + self.state.rank as usize) as u32
        };
        let ks = self.agree_pairs_over_both("merge", 1)?;
        Ok(Communicator::from_state(
            self.rt.clone(),
            CommState::new(2 * ks[0], rank, members, ks),
        ))
    }

    /// `n` context pairs free in both groups, claimed here. Collective over both groups.
    fn agree_pairs_over_both(&self, call: &str, n: usize) -> Result<Vec<u32>> {
        loop {
            let mut all = [0u64; WORDS];
            self.and_over_both(&free_mask(), &mut all)?;
            let ks = lowest(&all, n).ok_or_else(|| out_of_contexts(call))?;
            if let Some(ks) = confirm(self.rt.level, ks, |ok| {
                let mut all_ok = [0u64];
                self.and_over_both(&[ok as u64], &mut all_ok)?;
                Ok(all_ok[0] != 0)
            })? {
                return Ok(ks);
            }
        }
    }

    /// The state of a duplicate: the same groups on two new context pairs (traffic between
    /// the groups, the local group's collectives). Collective over both groups.
    fn dup_state(&self) -> Result<CommState> {
        let ks = self.agree_pairs_over_both("duplicate", 2)?;
        Ok(CommState::inter(
            ks[0],
            ks[1],
            self.state.rank,
            self.state.members.clone(),
            self.remote().to_vec(),
        ))
    }

    /// A new intercommunicator over the same two groups with contexts of its own
    /// (`MPI_Comm_dup`): its messages never match this one's. Collective over both groups.
    pub fn duplicate(&self) -> Result<InterCommunicator<L>> {
        Ok(InterCommunicator::from_state(
            self.rt.clone(),
            self.dup_state()?,
        ))
    }

    /// Splits both groups by `color` (`MPI_Comm_split` of an intercommunicator): the
    /// processes of one color in each group form a new intercommunicator, local ranks ordered
    /// by `key`, then by rank. A process whose color is [`UNDEFINED`] or absent from the
    /// other group gets `None`. Collective over both groups.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<InterCommunicator<L>>> {
        let core = Comm {
            rt: self.rt.clone(),
            state: self.state.clone(),
        };
        Ok(core
            .split(color, key)?
            .map(|c| InterCommunicator::from_arc(c.rt, c.state)))
    }

    /// Compares with another intercommunicator (`MPI_Comm_compare`).
    pub fn compare(&self, other: &InterCommunicator<L>) -> Relation {
        let core = |c: &InterCommunicator<L>| Comm {
            rt: c.rt.clone(),
            state: c.state.clone(),
        };
        core(self).compare(&core(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_pairs_are_claimed_lowest_first_and_released() {
        let mask = free_mask();
        let ks = lowest(&mask, 2).unwrap();
        assert!(
            ks[0] >= 3,
            "the WORLD, SELF and from-group pairs are never free"
        );
        assert!(claim(ks[0]));
        assert!(!claim(ks[0]), "claimed twice");
        release(ks[0]);
        assert!(claim(ks[0]));
        release(ks[0]);
        let mut m = [0u64; WORDS];
        m[1] = 0b1010;
        assert_eq!(lowest(&m, 2), Some(vec![65, 67]));
        assert_eq!(lowest(&m, 3), None);
    }

    #[test]
    fn confirm_without_threads_claims_directly() {
        let k = lowest(&free_mask(), 1).unwrap();
        let got = confirm(Threading::Single, k.clone(), |_| unreachable!()).unwrap();
        assert_eq!(got, Some(k.clone()));
        // Under THREAD_MULTIPLE a refusal by anyone gives the pair back.
        release(k[0]);
        let got = confirm(Threading::Multiple, k.clone(), |ok| {
            assert!(ok);
            Ok(false)
        })
        .unwrap();
        assert_eq!(got, None);
        assert!(claim(k[0]), "released after the refusal");
        release(k[0]);
    }

    #[test]
    fn string_tags_are_stable_and_tell_strings_groups_and_kinds_apart() {
        let g: &[u32] = &[0, 2, 4];
        let t = string_tag("comm", "org.mpi4py", &[g]);
        assert_eq!(t, string_tag("comm", "org.mpi4py", &[g]), "stable");
        assert!(
            (0..TAG_SPLIT as i32).contains(&t),
            "below the subgroup tag range"
        );
        assert_ne!(t, string_tag("comm", "org.mpi4py.", &[g]));
        assert_ne!(t, string_tag("comm", "org.mpi4py", &[&[0, 2]]));
        assert_ne!(t, string_tag("intercomm", "org.mpi4py", &[g]));
        // Parts are length-prefixed: moving bytes between them changes the tag.
        assert_ne!(string_tag("ab", "c", &[]), string_tag("a", "bc", &[]));
        // Spread: 2000 strings, no collision expected among 2³⁰ values.
        let mut seen: Vec<i32> = (0..2000)
            .map(|i| string_tag("comm", &format!("tag{i}"), &[g]))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 2000);
    }

    #[test]
    fn keyvals_are_distinct() {
        let a = Keyval::<u32>::new(true);
        let b = Keyval::<u32>::new(false);
        assert_ne!(a.def.id, b.def.id);
    }
}
