//! Intra-host collectives through shared memory (`transport::shm::node`): barrier, and
//! small allreduce, reduce, broadcast, allgather(v) and alltoall through per-rank arrival
//! counters and data slots.
//! Blocking forms only: each is one arrival and one wait, not a program of messages.
//!
//! The world meets in its own counter; any other intracommunicator whose members all share
//! this host takes one of the per-communicator channels on its first such collective: the
//! members agree on the lowest channel free in all of them with one allreduce (over
//! messages), and the communicator keeps it until its last handle is dropped. Channels are
//! few ([`CHANNELS`]); a communicator that finds none falls back to message algorithms.
//!
//! Large reductions, broadcasts and gathers use the same arrivals to exchange addresses and
//! copy between processes with one system call per piece (`process_vm_readv`/`writev`): in a
//! reduction each rank combines its own slice of the vector from every rank's input in rank
//! order and writes the result into the receivers' buffers; in a broadcast every rank pulls
//! the root's buffer; in an allgather(v) every rank (in a gather, the root) pulls every
//! peer's block into place. A final arrival keeps every buffer alive until all copies are
//! done.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use super::shm_kept::ShmKind;
use super::{bytes, bytes_mut};
use crate::comm::Communicator;
use crate::error::{Error, ErrorClass, Result};
use crate::op::Kernel;
use crate::op::{Op, Reducible};
use crate::p2p::engine::Engine;
use crate::threading::ThreadLevel;
use crate::transport::shm::cma;
use crate::transport::shm::node::{Meet, Node, CHANNELS, CHAN_BUSY};
use crate::transport::shm::COLL_SLOT_BYTES;

/// Largest communicator whose collectives go through shared-memory counters (each rank reads
/// every other rank's counter, so the cost grows with p).
const SHM_MAX_RANKS: usize = 64;

/// Bytes a rank's input to a reduction through the slots may have at any group size.
const REDUCE_SLOT_ANY: usize = 1024;

/// Whether a reduction of `len` bytes per rank among `p` ranks goes through the slots
/// (`all`: every rank combines, an allreduce; else only the root). Each combining rank
/// reads the other p - 1 inputs, where a tree reads about log₂ p of them, so beyond
/// [`REDUCE_SLOT_ANY`] the others' inputs together must fit one slot, or half of one when
/// every rank reads them at once (np 2, interleaved rounds, slots against messages: reduce
/// 2 KiB 0.16 against 0.33 µs, 8 KiB 0.33 against 0.52; allreduce 2 KiB 0.24 against 0.43,
/// 4 KiB 0.55 against 0.58, but 8 KiB 0.79 against 0.75 on cores 0.04 µs apart and 1.82
/// against 1.54 on cores far apart, a cache line taking over 0.15 µs one way).
pub(crate) fn reduce_fits(len: usize, p: usize, all: bool) -> bool {
    let budget = if all {
        COLL_SLOT_BYTES / 2
    } else {
        COLL_SLOT_BYTES
    };
    (1..=COLL_SLOT_BYTES).contains(&len)
        && (len <= REDUCE_SLOT_ANY || len.saturating_mul(p.saturating_sub(1)) <= budget)
}

/// Channels given back by dropped communicators, to release under the engine lock at the
/// next shared-memory collective (a communicator's drop cannot reach the engine).
static RELEASED: Mutex<Vec<(usize, Vec<u32>)>> = Mutex::new(Vec::new());
/// Whether [`RELEASED`] may be non-empty (checked on every shared-memory collective).
static PENDING: AtomicBool = AtomicBool::new(false);

/// A communicator's claim on a shared-memory channel, kept in its shared state.
#[derive(Debug, Default)]
pub(crate) struct ShmChannel {
    /// Whether the communicator may take a channel: an intracommunicator with contexts of
    /// its own (not the world, nor a scratch communicator borrowing its parent's contexts).
    eligible: bool,
    /// The channel and the members' world ranks, once agreed (`None`: messages only).
    chan: OnceLock<Option<(usize, Vec<u32>)>>,
    /// Whether every member can copy straight from every other (probed together on the
    /// first large shared-memory collective, so all members agree).
    single_copy: OnceLock<bool>,
    /// Whether this world communicator meets in the world's arrival counter: fixed at
    /// start-up, so found once instead of on every barrier.
    world: OnceLock<bool>,
}

/// `OXMPI_SHM_COLL_COMMS`, read once (an unreadable configuration failed `init` already).
fn channels_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| crate::config::Config::from_env().map_or(true, |c| c.shm_coll_comms))
}

impl ShmChannel {
    /// The claim of a new communicator; `eligible` as for the field.
    pub(crate) fn new(eligible: bool) -> Self {
        ShmChannel {
            eligible,
            chan: OnceLock::new(),
            single_copy: OnceLock::new(),
            world: OnceLock::new(),
        }
    }
}

impl Drop for ShmChannel {
    fn drop(&mut self) {
        if let Some(Some(claim)) = self.chan.take() {
            give_back(claim);
        }
    }
}

/// Queues channel `claim.0` of members `claim.1` for release at the next shared-memory
/// collective or channel agreement, which hold the engine.
fn give_back(claim: (usize, Vec<u32>)) {
    RELEASED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(claim);
    PENDING.store(true, Ordering::Release);
}

/// Channels a persistent collective leaves free for communicators: it may hold its channel
/// for the whole run of a program.
const PERSIST_SPARE: usize = 4;

/// A channel agreed for one persistent collective: its number and the members' world
/// ranks; given back when dropped (with the last handle on the collective).
#[derive(Debug)]
pub(crate) struct ChanClaim {
    pub(super) chan: usize,
    pub(super) members: Vec<u32>,
    /// For a large reduction: every member's buffers and pid, exchanged at init.
    pub(super) peers: Vec<(Exposed, i32)>,
}

impl Drop for ChanClaim {
    fn drop(&mut self) {
        give_back((self.chan, std::mem::take(&mut self.members)));
    }
}

/// Bytes of a rank's slice combined at a time in a shared-memory reduce-scatter: the two
/// buffers of one piece stay in cache while every rank's input streams through them.
const REDUCE_CHUNK: usize = 64 * 1024;

/// What a rank publishes with the first arrival of a single-copy collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exposed {
    /// Whether it may copy between processes.
    ok: bool,
    /// Bytes it contributes (or expects, for a broadcast).
    len: usize,
    /// Address of its input (a broadcast root's buffer).
    input: u64,
    /// Address of its output, where others write results (0 when it receives none).
    output: u64,
}

/// Bytes of an encoded [`Exposed`].
const EXPOSED_BYTES: usize = 32;

impl Exposed {
    fn encode(&self) -> [u8; EXPOSED_BYTES] {
        let mut b = [0u8; EXPOSED_BYTES];
        b[..8].copy_from_slice(&u64::from(self.ok).to_le_bytes());
        b[8..16].copy_from_slice(&(self.len as u64).to_le_bytes());
        b[16..24].copy_from_slice(&self.input.to_le_bytes());
        b[24..].copy_from_slice(&self.output.to_le_bytes());
        b
    }

    fn decode(b: &[u8; EXPOSED_BYTES]) -> Self {
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Exposed {
            ok: word(0) == 1,
            len: word(8) as usize,
            input: word(16),
            output: word(24),
        }
    }
}

/// The error of a cross-process copy that failed after every member had agreed to use them.
fn copy_error(call: &str, what: &str, rank: usize, e: std::io::Error) -> Error {
    Error::new(
        ErrorClass::Other,
        format!("{call}: cross-process copy {what} rank {rank} failed: {e}"),
    )
}

/// Scratch of a shared-memory reduce-scatter: the running fold of one piece and a peer's
/// piece being folded in, 16-byte aligned (kernels read whole elements). A persistent
/// reduction keeps one, so its restarts allocate nothing.
#[derive(Debug, Default)]
pub(crate) struct SliceScratch {
    acc: Vec<u128>,
    tmp: Vec<u128>,
}

impl SliceScratch {
    /// The two buffers, of `acc` and `tmp` bytes (grown when short only).
    fn get(&mut self, acc: usize, tmp: usize) -> (&mut [u8], &mut [u8]) {
        for (v, len) in [(&mut self.acc, acc), (&mut self.tmp, tmp)] {
            if v.len() * 16 < len {
                *v = super::schedule::aligned(len);
            }
        }
        (
            &mut bytemuck::cast_slice_mut(&mut self.acc)[..acc],
            &mut bytemuck::cast_slice_mut(&mut self.tmp)[..tmp],
        )
    }
}

/// Combines this rank's slice (elements `me·n/p .. (me+1)·n/p`, of `es` bytes each) of every
/// rank's input, in rank order, and writes it into the output of every receiver (`root`, or
/// all ranks). `input` is `None` in place (then `out` holds this rank's input).
///
/// A receiver that is not in place combines straight into `out`, and with a commutative
/// operation the last rank starts from its predecessor's input instead of a copy of its
/// own: a local copy of the slice less each (1 MiB at np 2: a 512 KiB copy of the ~100 µs).
#[allow(clippy::too_many_arguments)] // the reduction's one description, split in two callers
pub(crate) fn reduce_slice(
    kernel: &Kernel,
    commutative: bool,
    all: &[(Exposed, i32)],
    me: usize,
    root: Option<usize>,
    es: usize,
    input: Option<&[u8]>,
    out: &mut [u8],
    scratch: &mut SliceScratch,
) -> Result<()> {
    let (p, n) = (all.len(), input.map_or(out.len(), <[u8]>::len) / es);
    let (lo, hi) = (me * n / p, (me + 1) * n / p);
    if lo == hi {
        return Ok(());
    }
    let receivers = root.map_or(0..p, |r| r..r + 1);
    // Combine in `out` itself when we receive and our input is elsewhere.
    let direct = input.is_some() && receivers.contains(&me);
    let ch = (REDUCE_CHUNK / es).max(1).min(hi - lo);
    let (own_acc, tmp) = scratch.get(if direct { 0 } else { ch * es }, ch * es);
    // The last rank's input starts the fold; with a commutative operation and the last rank
    // ourselves, our predecessor's does (x_{p-1} ⊕ x_{p-2} = x_{p-2} ⊕ x_{p-1}).
    let first = if commutative && me == p - 1 && p > 1 {
        p - 2
    } else {
        p - 1
    };
    // x_first into `acc`, then x_k ⊕ acc downwards (ours right after x_first when we come
    // later): the rank order MPI fixes for non-commutative operations, and the same bits
    // on every receiver.
    let fold = |off: u64, mine: &[u8], acc: &mut [u8], tmp: &mut [u8]| -> Result<()> {
        for k in (0..=first).rev() {
            let (x, pid) = all[k];
            if k == me {
                if k == first {
                    acc.copy_from_slice(mine);
                } else {
                    kernel.call(mine, acc);
                }
            } else if k == first {
                cma::read_from(pid, x.input + off, acc)
                    .map_err(|e| copy_error("reduce", "from", k, e))?;
                if me > first {
                    kernel.call(mine, acc);
                }
            } else {
                cma::read_from(pid, x.input + off, tmp)
                    .map_err(|e| copy_error("reduce", "from", k, e))?;
                kernel.call(tmp, acc);
            }
        }
        Ok(())
    };
    let send = |off: u64, acc: &[u8]| -> Result<()> {
        for q in receivers.clone().filter(|&q| q != me) {
            let (x, pid) = all[q];
            cma::write_to(pid, x.output + off, acc)
                .map_err(|e| copy_error("reduce", "to", q, e))?;
        }
        Ok(())
    };
    let mut a = lo;
    while a < hi {
        let b = (a + ch).min(hi);
        let (off, len) = (a * es, (b - a) * es);
        let tmp = &mut tmp[..len];
        match input {
            Some(s) if direct => {
                let acc = &mut out[off..off + len];
                fold(off as u64, &s[off..off + len], acc, tmp)?;
                send(off as u64, acc)?;
            }
            _ => {
                let acc = &mut own_acc[..len];
                let mine = match input {
                    Some(s) => &s[off..off + len],
                    None => &out[off..off + len],
                };
                fold(off as u64, mine, acc, tmp)?;
                send(off as u64, acc)?;
                if receivers.contains(&me) {
                    out[off..off + len].copy_from_slice(acc);
                }
            }
        }
        a = b;
    }
    Ok(())
}

/// This rank's copies of a single-copy broadcast from `root` over the members' exposures
/// `all` (lengths checked equal): a receiver pulls the head of the root's buffer into `buf`,
/// the root writes the tail of its `buf` into every receiver (see [`bcast_cut`]).
pub(crate) fn bcast_copies(
    all: &[(Exposed, i32)],
    root: usize,
    me: usize,
    buf: &mut [u8],
) -> Result<()> {
    let cut = bcast_cut(all, root);
    if me == root {
        if cut == buf.len() {
            return Ok(());
        }
        let p = all.len();
        // Each receiver in turn from the next rank up, as the receivers pull.
        (1..p).map(|i| (root + i) % p).try_for_each(|q| {
            let (x, pid) = all[q];
            cma::write_to(pid, x.output + cut as u64, &buf[cut..])
                .map_err(|e| copy_error("broadcast", "to", q, e))
        })
    } else if cut == 0 {
        Ok(())
    } else {
        let (x, pid) = all[root];
        cma::read_from(pid, x.input, &mut buf[..cut])
            .map_err(|e| copy_error("broadcast", "from", root, e))
    }
}

/// Where a single-copy broadcast from `root` splits each receiver's buffer: receivers pull
/// the bytes below, the root writes the rest (1/p of the buffer, ending the head on a cache
/// line), or nothing when some receiver exposed no buffer. Every member computes the same.
fn bcast_cut(all: &[(Exposed, i32)], root: usize) -> usize {
    let (len, p) = (all[root].0.len, all.len());
    let every = all
        .iter()
        .enumerate()
        .all(|(k, (x, _))| k == root || x.output != 0);
    if every && p > 1 {
        (len - len / p) & !63
    } else {
        len
    }
}

/// The engine's intra-host collective helpers, which `shm_meet` found.
pub(super) fn node_of(e: &mut Engine) -> Result<&mut dyn Node> {
    e.node()
        .ok_or_else(|| Error::new(ErrorClass::Intern, "no shared-memory transport"))
}

/// The node with every channel given back since the last call released.
pub(super) fn node_released(e: &mut Engine) -> Result<&mut dyn Node> {
    let n = node_of(e)?;
    // A plain load first: no read-modify-write of a shared line on every collective.
    if PENDING.load(Ordering::Relaxed) && PENDING.swap(false, Ordering::Acquire) {
        let gone = std::mem::take(&mut *RELEASED.lock().unwrap_or_else(|p| p.into_inner()));
        for (k, members) in gone {
            n.chan_release(k, members);
        }
    }
    Ok(n)
}

/// The error of a shared-memory collective whose ranks passed different counts, with the
/// classes the message algorithms report (more data than expected truncates).
pub(super) fn count_mismatch(call: &str, rank: u32, sent: usize, expect: usize) -> Error {
    if sent > expect {
        Error::new(
            ErrorClass::Truncate,
            format!("{call}: rank {rank} sent more data than this rank expects (counts differ between ranks)"),
        )
    } else {
        Error::new(
            ErrorClass::Count,
            format!("{call}: rank {rank} sent {sent} bytes where this rank expects {expect} (counts differ between ranks)"),
        )
    }
}

impl<L: ThreadLevel> Communicator<L> {
    /// The shared-memory channel this communicator's small collectives use, if it has taken
    /// one (on its first barrier or small reduction); for tests and diagnostics.
    #[doc(hidden)]
    pub fn shared_memory_channel(&self) -> Option<usize> {
        self.state.shm.chan.get()?.as_ref().map(|(k, _)| *k)
    }

    /// Where this communicator's small collectives meet in shared memory, if they can: the
    /// world's counter when every rank of the job is on this host, or the communicator's
    /// channel (agreed on first use, collectively) when every member is.
    pub(super) fn shm_meet(&self) -> Result<Option<Meet>> {
        let st = &self.state;
        if st.context == crate::comm::WORLD_CONTEXT {
            // Only the one communicator every rank calls in the same order may use the world
            // counter: the world itself (not a scratch communicator that borrows its
            // context for a subset of ranks).
            let world = *st.shm.world.get_or_init(|| {
                st.members.len() == self.rt.size as usize
                    && st.members.len() <= SHM_MAX_RANKS
                    && self.rt.coll_single_host
                    && self
                        .rt
                        .engine
                        .with(|e| e.node().is_some_and(|n| n.spans_world()))
            });
            return Ok(world.then_some(Meet::World));
        }
        if let Some(c) = st.shm.chan.get() {
            return Ok(c.as_ref().map(|(k, _)| Meet::Chan(*k)));
        }
        let chan = if self.shm_chan_possible(st.shm.eligible) {
            self.shm_chan_agree(0)?
        } else {
            None
        };
        let meet = chan.map(Meet::Chan);
        if let Err(Some((k, members))) = st.shm.chan.set(chan.map(|k| (k, st.members.clone()))) {
            // Another thread agreed first (only an erroneous program gets here): give ours
            // back as a freed communicator would.
            self.rt.engine.with(|e| {
                node_of(e)?.chan_release(k, members);
                Ok::<_, Error>(())
            })?;
        }
        Ok(meet)
    }

    /// Whether this communicator may take a channel: `eligible`, 2 to [`SHM_MAX_RANKS`]
    /// members, all on one host by the collective placement and reachable through the
    /// shared-memory transport. Every member computes the same answer.
    fn shm_chan_possible(&self, eligible: bool) -> bool {
        let st = &self.state;
        let m = &st.members;
        eligible
            && st.remote.is_none()
            && channels_enabled()
            && (2..=SHM_MAX_RANKS).contains(&m.len())
            && self.rt.coll_locality.all_in_job(m)
            && m.iter()
                .all(|&r| self.rt.coll_locality.host_of(r) == self.rt.coll_locality.host_of(m[0]))
            && self
                .rt
                .engine
                .with(|e| e.node().is_some_and(|n| m.iter().all(|&r| n.is_local(r))))
    }

    /// Agrees with the other members on a channel: each offers the channels it can take,
    /// an allreduce (maximum; busy is the largest value) finds those free in all, and each
    /// takes the lowest of them, unless no more than `spare` are.
    fn shm_chan_agree(&self, spare: usize) -> Result<Option<usize>> {
        let offer = self
            .rt
            .engine
            .with(|e| Ok::<_, Error>(node_released(e)?.chan_offer()))?;
        let mut agreed = [0u64; CHANNELS];
        let r = self
            .allreduce_plan(
                "allreduce",
                Some(&offer.offer[..]),
                &mut agreed[..],
                &Op::Max,
            )
            .and_then(|p| self.coll_run(p));
        if r.is_err() {
            agreed = [CHAN_BUSY; CHANNELS];
        }
        let k = self
            .rt
            .engine
            .with(|e| Ok::<_, Error>(node_of(e)?.chan_settle(&offer, &agreed, spare)))?;
        r.map(|()| k)
    }

    /// A channel of its own for persistent collective `p`, agreed now with the other members
    /// (a collective step of the `*_init` call), if `p` has a shared-memory form, every
    /// member shares this host and a channel is free beyond those left for communicators.
    /// The world may take one too: its blocking collectives meet in its own counter.
    pub(crate) fn shm_persist_claim(&self, p: &super::Planned<'_>) -> Result<Option<ChanClaim>> {
        let st = &self.state;
        let world =
            st.context == crate::comm::WORLD_CONTEXT && st.members.len() == self.rt.size as usize;
        let Some(kind) = p.shm_kind(st.members.len()) else {
            return Ok(None);
        };
        if !self.shm_chan_possible(st.shm.eligible || world) {
            return Ok(None);
        }
        let Some(chan) = self.shm_chan_agree(PERSIST_SPARE)? else {
            return Ok(None);
        };
        let mut claim = ChanClaim {
            chan,
            members: st.members.clone(),
            peers: Vec::new(),
        };
        // A large reduction or broadcast: every member shows its buffers on the new channel,
        // once; the runs copy between them. (A rank whose count made its collective a small
        // one arrives with its data instead, which the length check reports as a mismatch.)
        let (mine, want) = match kind {
            ShmKind::ReduceLarge { root, .. } => {
                let (len, input) = if p.send.len > 0 {
                    (p.send.len, p.send.addr())
                } else {
                    (p.recv.len, p.recv.addr())
                };
                let receives = root.is_none_or(|r| r == st.rank);
                let output = if receives { p.recv.addr() } else { 0 };
                (
                    Exposed {
                        ok: true,
                        len,
                        input,
                        output,
                    },
                    None,
                )
            }
            ShmKind::BcastLarge { root } => {
                // As the blocking broadcast: the root writes part of each receiver's buffer
                // on few ranks.
                let split = self.size() as usize <= super::select::crossovers().shm_bcast_split;
                let output = if split && st.rank != root {
                    p.recv.addr()
                } else {
                    0
                };
                let (len, input) = (p.recv.len, p.recv.addr());
                (
                    Exposed {
                        ok: true,
                        len,
                        input,
                        output,
                    },
                    Some(root as usize),
                )
            }
            _ => return Ok(Some(claim)),
        };
        let mine = Exposed {
            ok: self.shm_single_copy()?,
            ..mine
        };
        let at = Meet::Chan(chan);
        let Some(all) = self.shm_expose(at, mine)? else {
            // Single copies are refused on this host: every member agrees to keep the
            // message program, and the channel goes back.
            return Ok(None);
        };
        // A broadcast's lengths are checked against the root's, a reduction's against ours.
        let want = want.map_or(mine.len, |r| all[r].0.len);
        if let Some((k, (x, _))) = all.iter().enumerate().find(|(_, (x, _))| x.len != want) {
            // Every member sees the same lengths, so all fail here together.
            let e = count_mismatch(p.name, k as u32, x.len, want);
            self.shm_settle(at, false)?;
            return Err(e);
        }
        claim.peers = all;
        Ok(Some(claim))
    }

    /// Where an exchange of `len` bytes per rank can meet, if it fits the slots.
    pub(super) fn shm_fits(&self, len: usize) -> Result<Option<Meet>> {
        if len == 0 || len > COLL_SLOT_BYTES {
            return Ok(None);
        }
        self.shm_meet()
    }

    /// Where a reduction of `len` bytes per rank can meet through the slots, if it fits
    /// them ([`reduce_fits`]; `all`: an allreduce).
    pub(super) fn shm_fits_reduce(&self, len: usize, all: bool) -> Result<Option<Meet>> {
        if !reduce_fits(len, self.state.members.len(), all) {
            return Ok(None);
        }
        self.shm_meet()
    }

    /// Enters collective `at` with `data`, returning the arrival number. Waits first, if
    /// need be, until every member has entered the previous collective: only then have all
    /// finished reading the slot this arrival reuses (a rank that left a collective early
    /// may be one collective ahead of the others).
    fn shm_arrive(&self, at: Meet, data: &[u8]) -> Result<u64> {
        let members = &self.state.members;
        let ready = self.rt.engine.with(|e| {
            let node = node_released(e)?;
            let prev = node.next_arrival(at) - 1;
            if prev == 0 || node.arrived(at, members, prev)? {
                return Ok(Ok(node.arrive(at, data)));
            }
            Ok::<_, Error>(Err(prev))
        })?;
        match ready {
            Ok(n) => Ok(n),
            Err(prev) => {
                self.shm_coll_wait(at, prev)?;
                self.rt
                    .engine
                    .with(|e| Ok::<_, Error>(node_of(e)?.arrive(at, data)))
            }
        }
    }

    /// Enters collective `at` with `data` and, in the same engine visit, looks up to the
    /// inner spin count for the arrival of `from` (every member for `None`); once there, runs
    /// `then` on the node. The arrival, the wait and the work of a small collective cost one
    /// visit instead of three or four when the others are there already, the usual case.
    /// `Ok(Ok(r))`: done; `Ok(Err(Some(n)))`: entered as `n`, the others not seen yet;
    /// `Ok(Err(None))`: not entered (a member is still in the previous collective).
    fn shm_arrive_then<R>(
        &self,
        at: Meet,
        data: &[u8],
        from: Option<u32>,
        then: impl FnOnce(&mut dyn Node, u64) -> Result<R>,
    ) -> Result<std::result::Result<R, Option<u64>>> {
        let members = &self.state.members;
        let spins = self.rt.wait.inner_spin.max(1);
        self.rt.engine.with(|e| {
            let node = node_released(e)?;
            let prev = node.next_arrival(at) - 1;
            if prev != 0 && !node.arrived(at, members, prev)? {
                return Ok(Err(None));
            }
            let n = node.arrive(at, data);
            for _ in 0..spins {
                let there = match from {
                    Some(r) => node.arrived_rank(at, r, n)?,
                    None => node.arrived(at, members, n)?,
                };
                if there {
                    return then(node, n).map(Ok);
                }
            }
            Ok(Err(Some(n)))
        })
    }

    /// Waits until every member has arrived at shared-memory collective `n`.
    fn shm_coll_wait(&self, at: Meet, n: u64) -> Result<()> {
        self.shm_wait_from(at, None, n)
    }

    /// Waits until world rank `from` (every member for `None`) has arrived at
    /// shared-memory collective `n`.
    fn shm_wait_from(&self, at: Meet, from: Option<u32>, n: u64) -> Result<()> {
        let members = &self.state.members;
        let there = |node: &mut dyn Node| match from {
            Some(r) => node.arrived_rank(at, r, n),
            None => node.arrived(at, members, n),
        };
        crate::request::block_on(&self.rt, || {
            self.rt.engine.with(|e| {
                for _ in 0..self.rt.wait.inner_spin {
                    if there(node_of(e)?)? {
                        return Ok(Some(()));
                    }
                }
                // Peers may need our FINs or ACKs to reach the collective.
                e.progress();
                Ok(there(node_of(e)?)?.then_some(()))
            })
        })
    }

    /// Whether ranks of a small rooted collective that need nothing from the others leave
    /// as soon as they have arrived (`OXMPI_COLL_SHM_ROOTED_EARLY`).
    fn shm_rooted_early() -> bool {
        super::select::crossovers().shm_rooted_early != 0
    }

    /// The barrier through arrival counters.
    pub(super) fn shm_barrier(&self, at: Meet) -> Result<()> {
        if at == Meet::World {
            // Arrive and look for the others in one engine visit: the time between seeing
            // the last arrival and announcing the next is on every barrier's critical path.
            let spins = self.rt.wait.inner_spin;
            match self
                .rt
                .engine
                .with(|e| node_released(e)?.world_barrier(spins))?
            {
                Some(Ok(())) => return Ok(()),
                Some(Err(n)) => return self.shm_coll_wait(at, n),
                None => {}
            }
        }
        let n = self.shm_arrive(at, &[])?;
        self.shm_coll_wait(at, n)
    }

    /// Small broadcast: the root publishes `buf` with its arrival; once the root has
    /// arrived the others copy it from its slot. The root leaves at once (unless
    /// `OXMPI_COLL_SHM_ROOTED_EARLY` is 0: then every rank waits for all).
    pub(super) fn shm_bcast(&self, at: Meet, root: u32, buf: &mut [u8]) -> Result<()> {
        let is_root = self.state.rank == root;
        let owner = self.state.members[root as usize];
        let copy = |node: &mut dyn Node, n: u64, buf: &mut [u8]| -> Result<()> {
            let sent = node.slot_len(at, owner, n)?;
            if sent != buf.len() {
                return Err(count_mismatch("broadcast", root, sent, buf.len()));
            }
            let slot = node.slot(at, owner, n)?;
            // SAFETY: the root's slot holds the `buf.len()` bytes it published before arrival
            // `n` (the same count on every rank) in a live mapping; the root does not rewrite
            // it until we have arrived at `n + 1`.
            let theirs = unsafe { std::slice::from_raw_parts(slot, buf.len()) };
            buf.copy_from_slice(theirs);
            Ok(())
        };
        let early = Self::shm_rooted_early();
        let n = if !is_root && early {
            match self.shm_arrive_then(at, &[], Some(owner), |node, n| copy(node, n, buf))? {
                Ok(()) => return Ok(()),
                Err(Some(n)) => n,
                Err(None) => self.shm_arrive(at, &[])?,
            }
        } else {
            self.shm_arrive(at, if is_root { buf } else { &[] })?
        };
        if early {
            if is_root {
                return Ok(());
            }
            self.shm_wait_from(at, Some(owner), n)?;
        } else {
            self.shm_coll_wait(at, n)?;
            if is_root {
                return Ok(());
            }
        }
        self.rt.engine.with(|e| copy(node_of(e)?, n, buf))
    }

    /// Small scatter through the slots: the root publishes its whole `send` (p blocks of
    /// `block` bytes) with its arrival and leaves (as [`shm_bcast`](Self::shm_bcast)'s root
    /// does); once the root has arrived every other rank copies its block from the root's
    /// slot. `recv` is `None` at a root scattering in place.
    pub(super) fn shm_scatter(
        &self,
        at: Meet,
        root: u32,
        send: &[u8],
        recv: Option<&mut [u8]>,
        block: usize,
    ) -> Result<()> {
        let me = self.state.rank;
        let p = self.state.members.len();
        let owner = self.state.members[root as usize];
        if me == root {
            let n = self.shm_arrive(at, send)?;
            if let Some(r) = recv {
                r.copy_from_slice(&send[me as usize * block..][..block]);
            }
            if Self::shm_rooted_early() {
                return Ok(());
            }
            return self.shm_coll_wait(at, n);
        }
        let Some(recv) = recv else {
            // The caller sends a non-root without a receive buffer to the plan's error.
            return Err(Error::new(
                ErrorClass::Intern,
                "scatter: a non-root rank has no receive buffer",
            ));
        };
        let copy = |node: &mut dyn Node, n: u64, recv: &mut [u8]| -> Result<()> {
            let sent = node.slot_len(at, owner, n)?;
            if sent != block * p {
                return Err(count_mismatch("scatter", root, sent / p, block));
            }
            let slot = node.slot(at, owner, n)?;
            // SAFETY: the root's slot holds the `block * p` bytes it published before
            // arrival `n` (checked just above) in a live mapping; the root does not rewrite
            // it until we have arrived at `n + 1`.
            let theirs =
                unsafe { std::slice::from_raw_parts(slot.add(me as usize * block), block) };
            recv.copy_from_slice(theirs);
            Ok(())
        };
        let early = Self::shm_rooted_early();
        let n = if early {
            match self.shm_arrive_then(at, &[], Some(owner), |node, n| copy(node, n, recv))? {
                Ok(()) => return Ok(()),
                Err(Some(n)) => n,
                Err(None) => self.shm_arrive(at, &[])?,
            }
        } else {
            self.shm_arrive(at, &[])?
        };
        if early {
            self.shm_wait_from(at, Some(owner), n)?;
        } else {
            self.shm_coll_wait(at, n)?;
        }
        self.rt.engine.with(|e| copy(node_of(e)?, n, recv))
    }

    /// Small allgather(v) through the slots: every rank publishes its block (`send`, or its
    /// block of `recv` in place) with its arrival; after everyone has arrived each copies
    /// every other block from its owner's slot. `place[k]` is rank k's block in `recv`
    /// (byte offset and length, each at most a slot).
    pub(super) fn shm_allgather(
        &self,
        at: Meet,
        send: Option<&[u8]>,
        recv: &mut [u8],
        place: &[(usize, usize)],
    ) -> Result<()> {
        let me = self.state.rank as usize;
        let (off, len) = place[me];
        let n = self.shm_arrive(at, send.unwrap_or(&recv[off..off + len]))?;
        if let Some(s) = send {
            recv[off..off + len].copy_from_slice(s);
        }
        self.shm_coll_wait(at, n)?;
        self.rt.engine.with(|e| -> Result<()> {
            let node = node_of(e)?;
            for (k, &w) in self.state.members.iter().enumerate() {
                let (off, len) = place[k];
                let sent = node.slot_len(at, w, n)?;
                if sent != len {
                    return Err(count_mismatch("allgather", k as u32, sent, len));
                }
                if k == me || len == 0 {
                    continue;
                }
                let slot = node.slot(at, w, n)?;
                // SAFETY: rank k's slot holds the `len` bytes it published before arrival
                // `n` (checked just above) in a live mapping; k does not rewrite it until we
                // have arrived at `n + 1`.
                let theirs = unsafe { std::slice::from_raw_parts(slot, len) };
                recv[off..off + len].copy_from_slice(theirs);
            }
            Ok(())
        })
    }

    /// Small gather through the slots: every rank but the root publishes its block (`send`)
    /// with its arrival and leaves (unless `OXMPI_COLL_SHM_ROOTED_EARLY` is 0: then it waits
    /// for all); once everyone has arrived the root copies every other block from its
    /// owner's slot. `place[k]` is rank k's block in the root's `recv` (byte offset and
    /// length, each at most a slot); `send` is `None` in place at the root.
    pub(super) fn shm_gather(
        &self,
        at: Meet,
        root: u32,
        send: Option<&[u8]>,
        recv: &mut [u8],
        place: &[(usize, usize)],
    ) -> Result<()> {
        let me = self.state.rank;
        if me != root {
            let n = self.shm_arrive(at, send.unwrap_or(&[]))?;
            if Self::shm_rooted_early() {
                // Our slot stays until everyone has entered the next collective.
                return Ok(());
            }
            return self.shm_coll_wait(at, n);
        }
        let n = self.shm_arrive(at, &[])?;
        if let Some(s) = send {
            let (off, len) = place[me as usize];
            recv[off..off + len].copy_from_slice(s);
        }
        self.shm_coll_wait(at, n)?;
        self.rt.engine.with(|e| -> Result<()> {
            let node = node_of(e)?;
            for (k, &w) in self.state.members.iter().enumerate() {
                if k == me as usize {
                    continue;
                }
                let (off, len) = place[k];
                let sent = node.slot_len(at, w, n)?;
                if sent != len {
                    return Err(count_mismatch("gather", k as u32, sent, len));
                }
                let slot = node.slot(at, w, n)?;
                // SAFETY: rank k's slot holds the `len` bytes it published before arrival
                // `n` (checked just above) in a live mapping; k does not rewrite it until we
                // have arrived at `n + 1`.
                let theirs = unsafe { std::slice::from_raw_parts(slot, len) };
                recv[off..off + len].copy_from_slice(theirs);
            }
            Ok(())
        })
    }

    /// Small all-to-all through the slots: every rank publishes the blocks it sends to the
    /// others (its own left out, the rest in rank order, together at most a slot) with its
    /// arrival; after everyone has arrived each copies its block out of every peer's slot.
    /// `send` is `None` in place (then `recv` holds this rank's blocks until it is
    /// published). Both hold p blocks of `block` bytes.
    pub(super) fn shm_alltoall(
        &self,
        at: Meet,
        send: Option<&[u8]>,
        recv: &mut [u8],
        block: usize,
    ) -> Result<()> {
        let (me, p) = (self.state.rank as usize, self.state.members.len());
        let out = (p - 1) * block;
        let input = send.unwrap_or(recv);
        // The first and the last rank send a contiguous run of blocks; a middle one's two
        // runs are put together first (at most a slot, on the stack).
        let mut joined: [u8; COLL_SLOT_BYTES];
        let mine: &[u8] = if me == 0 {
            &input[block..]
        } else if me == p - 1 {
            &input[..out]
        } else {
            joined = [0u8; COLL_SLOT_BYTES];
            joined[..me * block].copy_from_slice(&input[..me * block]);
            joined[me * block..out].copy_from_slice(&input[(me + 1) * block..]);
            &joined[..out]
        };
        let n = self.shm_arrive(at, mine)?;
        if let Some(s) = send {
            recv[me * block..][..block].copy_from_slice(&s[me * block..][..block]);
        }
        self.shm_coll_wait(at, n)?;
        self.rt.engine.with(|e| -> Result<()> {
            let node = node_of(e)?;
            for (k, &w) in self.state.members.iter().enumerate() {
                let sent = node.slot_len(at, w, n)?;
                if sent != out {
                    return Err(count_mismatch("alltoall", k as u32, sent, out));
                }
                if k == me {
                    continue;
                }
                // Our block is rank k's block `me`, which sits one place lower in its slot
                // when it comes after k's own.
                let at_k = if me < k { me } else { me - 1 } * block;
                let slot = node.slot(at, w, n)?;
                // SAFETY: rank k's slot holds the `out` bytes it published before arrival
                // `n` (checked just above; `at_k + block <= out`) in a live mapping; k does
                // not rewrite it until we have arrived at `n + 1`.
                let theirs = unsafe { std::slice::from_raw_parts(slot.add(at_k), block) };
                recv[k * block..][..block].copy_from_slice(theirs);
            }
            Ok(())
        })
    }

    /// Small reduction through shared memory: every rank publishes its vector (`send`, or
    /// `recv` itself in place); then `root` (every rank for an allreduce) combines all of
    /// them in rank order itself, so every rank that computes gets the same bits.
    pub(super) fn shm_reduce<T: Reducible>(
        &self,
        at: Meet,
        root: Option<u32>,
        send: Option<&[T]>,
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let kernel = op.kernel_for::<T>()?;
        let len = send.map_or(recv.len(), <[T]>::len);
        let leaf = root.is_some_and(|r| r != self.state.rank);
        let p = self.size() as usize;
        let members = &self.state.members;
        // Every member published `len` elements with arrival `n`.
        let counts_agree = |node: &mut dyn Node, n: u64| -> Result<()> {
            let want = size_of::<T>() * len;
            for (r, &w) in members.iter().enumerate() {
                let sent = node.slot_len(at, w, n)?;
                if sent != want {
                    return Err(count_mismatch("reduce", r as u32, sent, want));
                }
            }
            Ok(())
        };
        // Checks the counts, then combines the slots in rank order into `recv` (a predefined
        // operation, under the engine).
        let combine = |node: &mut dyn Node, n: u64, recv: &mut [T]| -> Result<()> {
            let recv = &mut recv[..len];
            counts_agree(node, n)?;
            for (k, rank) in members.iter().enumerate().rev() {
                let slot = node.slot(at, *rank, n)?.cast::<T>();
                // SAFETY: the slot is 16-byte aligned (enough for every `Reducible`) in a
                // live mapping and holds `len` values published before arrival `n`; its
                // owner does not rewrite it until we have arrived at `n + 1`. Our own slot
                // was copied when we arrived, so `recv` (our input in place) may be
                // overwritten now.
                let theirs = unsafe { std::slice::from_raw_parts(slot, len) };
                if k == p - 1 {
                    recv.copy_from_slice(theirs);
                } else {
                    kernel.call(bytes(theirs), bytes_mut(recv));
                }
            }
            Ok(())
        };
        let n = if !leaf && !kernel.is_user() {
            let mut held: [u8; COLL_SLOT_BYTES];
            let mine: &[u8] = match send {
                Some(s) => bytes(s),
                None => {
                    // In place our contribution is `recv`, which the combination (in the
                    // same engine visit as the arrival) writes: copied out first.
                    held = [0u8; COLL_SLOT_BYTES];
                    let b = &mut held[..size_of::<T>() * len];
                    b.copy_from_slice(bytes(&recv[..len]));
                    b
                }
            };
            match self.shm_arrive_then(at, mine, None, |node, n| combine(node, n, recv))? {
                Ok(()) => return Ok(()),
                Err(Some(n)) => n,
                Err(None) => self.shm_arrive(at, mine)?,
            }
        } else {
            self.shm_arrive(at, bytes(send.unwrap_or(recv)))?
        };
        if leaf && Self::shm_rooted_early() {
            // Our slot stays until everyone has entered the next collective.
            return Ok(());
        }
        self.shm_coll_wait(at, n)?;
        if leaf {
            return Ok(());
        }
        if kernel.is_user() {
            let recv = &mut recv[..len];
            self.rt.engine.with(|e| counts_agree(node_of(e)?, n))?;
            // User code may call MPI: copy the contributions out (at most a slot each) and
            // combine them with the engine unlocked, in the same order as `combine`.
            let mut all: Vec<T> = Vec::with_capacity(p * len);
            self.rt.engine.with(|e| -> Result<()> {
                for rank in members {
                    let slot = node_of(e)?.slot(at, *rank, n)?.cast::<T>();
                    // SAFETY: the slot is aligned for `T` (16 bytes) in a live mapping and
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
        self.rt.engine.with(|e| combine(node_of(e)?, n, recv))
    }

    /// Where a large reduction or broadcast of `len` bytes (at least `min`) can meet for
    /// single copies, if every member is on this host and none has found them refused.
    pub(super) fn shm_large(&self, len: usize, min: usize) -> Result<Option<Meet>> {
        if len <= COLL_SLOT_BYTES || len < min || self.state.shm.single_copy.get() == Some(&false) {
            return Ok(None);
        }
        self.shm_meet()
    }

    /// Arrives with `ok` after a phase and waits for everyone; whether every member was ok.
    pub(super) fn shm_settle(&self, at: Meet, ok: bool) -> Result<bool> {
        let n = self.shm_arrive(at, &[u8::from(ok)])?;
        self.shm_coll_wait(at, n)?;
        self.rt.engine.with(|e| -> Result<bool> {
            let node = node_of(e)?;
            for &w in &self.state.members {
                if node.slot_len(at, w, n)? != 1 {
                    return Err(Error::new(
                        ErrorClass::Intern,
                        "shared-memory collective: members out of step",
                    ));
                }
                // SAFETY: `w` published one byte with arrival `n`, which we saw; it does not
                // rewrite that slot before we arrive at `n + 1`.
                if unsafe { node.slot(at, w, n)?.read() } != 1 {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    /// Enters a single-copy collective with `mine` and returns every member's exposure and
    /// pid, or `None` when some member cannot copy between processes (then every member
    /// returns `None` and falls back to messages). The first time on this communicator the
    /// members also try one small copy from each peer and agree on the outcome.
    fn shm_expose(&self, at: Meet, mine: Exposed) -> Result<Option<Vec<(Exposed, i32)>>> {
        let n = self.shm_arrive(at, &mine.encode())?;
        self.shm_coll_wait(at, n)?;
        let all = self.rt.engine.with(|e| -> Result<Vec<(Exposed, i32)>> {
            let node = node_of(e)?;
            let mut all = Vec::with_capacity(self.state.members.len());
            for &w in &self.state.members {
                if node.slot_len(at, w, n)? != EXPOSED_BYTES {
                    return Err(Error::new(
                        ErrorClass::Count,
                        "collective: counts differ between ranks (a rank took the small-message path)",
                    ));
                }
                let slot = node.slot(at, w, n)?.cast::<[u8; EXPOSED_BYTES]>();
                // SAFETY: `w` published EXPOSED_BYTES bytes with arrival `n`, which we saw,
                // in a live mapping (slots are 16-byte aligned); it does not rewrite them
                // before we arrive at `n + 1`.
                let x = Exposed::decode(unsafe { &*slot });
                all.push((x, node.pid_of(w)?));
            }
            Ok(all)
        })?;
        let everyone = all.iter().all(|(x, _)| x.ok);
        if self.state.shm.single_copy.get().is_none() {
            // One probe per communicator, by all members together: a kernel that refuses
            // cross-process copies (ptrace policy) must send every member to messages
            // before anyone has written into another's buffer.
            let me = self.state.rank as usize;
            let mut ok = everyone;
            for (k, (x, pid)) in all.iter().enumerate() {
                let mut probe = [0u8; 1];
                if ok && k != me && x.len > 0 && cma::read_from(*pid, x.input, &mut probe).is_err()
                {
                    ok = false;
                    self.rt.engine.with(|e| {
                        node_of(e)?.single_copy_refused();
                        Ok::<_, Error>(())
                    })?;
                }
            }
            let agreed = self.shm_settle(at, ok)?;
            let _ = self.state.shm.single_copy.set(agreed);
            if !agreed {
                return Ok(None);
            }
        } else if !everyone {
            return Ok(None);
        }
        Ok(Some(all))
    }

    /// Finishes a single-copy collective after this rank's copies (`work`): waits until
    /// every member's are done (so no buffer is released early) and reports a failure of
    /// any member on every member.
    fn shm_finish(&self, at: Meet, call: &str, work: Result<()>) -> Result<()> {
        if work.is_err() {
            self.rt.engine.with(|e| {
                node_of(e)?.single_copy_refused();
                Ok::<_, Error>(())
            })?;
        }
        let all_ok = self.shm_settle(at, work.is_ok())?;
        work?;
        if !all_ok {
            return Err(Error::new(
                ErrorClass::Other,
                format!("{call}: a cross-process copy of another rank failed"),
            ));
        }
        Ok(())
    }

    /// Large broadcast by single copies: every rank but `root` pulls the head of the root's
    /// buffer while the root writes the tail (1/p of it) into every receiver, so the root's
    /// core shares the copying (each single copy also pins its pages, about as costly as the
    /// copy itself), on at most `OXMPI_COLL_SHM_BCAST_SPLIT` ranks; on more the receivers
    /// pull everything. The root writes (p−1)/p of the buffer in all, as much as each
    /// receiver reads, so neither side waits long for the other (np 3 and 4 on 2 cores:
    /// 512 KiB–1 MiB faster than pulls alone in most interleaved rounds).
    /// `Ok(false)`: single copies are unavailable; every member falls back to messages.
    pub(super) fn shm_bcast_large(&self, at: Meet, root: u32, buf: &mut [u8]) -> Result<bool> {
        let split = self.size() as usize <= super::select::crossovers().shm_bcast_split;
        let mine = Exposed {
            ok: self.shm_single_copy()?,
            len: buf.len(),
            input: buf.as_ptr() as u64,
            output: if split && self.state.rank != root {
                buf.as_ptr() as u64
            } else {
                0
            },
        };
        let Some(all) = self.shm_expose(at, mine)? else {
            return Ok(false);
        };
        let r = root as usize;
        // Every member checks every length, so all of them fail together.
        let want = all[r].0.len;
        if let Some((k, (x, _))) = all.iter().enumerate().find(|(_, (x, _))| x.len != want) {
            let e = count_mismatch("broadcast", k as u32, x.len, want);
            self.shm_settle(at, false)?;
            return Err(e);
        }
        let work = bcast_copies(&all, r, self.state.rank as usize, buf);
        self.shm_finish(at, "broadcast", work).map(|()| true)
    }

    /// Large allgather(v) by single copies: every rank exposes its block (`send`, or its block
    /// of `recv` in place) and reads every other rank's block straight into its place in
    /// `recv` (`place[k]`: byte offset and length of rank k's block). With `root`, only the
    /// root reads (a gather). `Ok(false)`: single copies are unavailable; every member falls
    /// back to messages.
    pub(super) fn shm_gather_large(
        &self,
        at: Meet,
        root: Option<u32>,
        send: Option<&[u8]>,
        recv: &mut [u8],
        place: &[(usize, usize)],
    ) -> Result<bool> {
        let me = self.state.rank as usize;
        let receives = root.is_none_or(|r| r as usize == me);
        let input = match send {
            Some(s) => s.as_ptr(),
            None => recv[place[me].0..].as_ptr(),
        };
        let mine = Exposed {
            ok: self.shm_single_copy()?,
            len: send.map_or(place[me].1, <[u8]>::len),
            input: input as u64,
            output: 0,
        };
        let Some(all) = self.shm_expose(at, mine)? else {
            return Ok(false);
        };
        let call = if root.is_some() {
            "gather"
        } else {
            "allgather"
        };
        // Every receiver checks every length before anyone copies; a sender checks its own.
        let bad = all
            .iter()
            .enumerate()
            .find(|&(k, (x, _))| (receives || k == me) && x.len != place[k].1);
        if let Some((k, (x, _))) = bad {
            let e = count_mismatch(call, k as u32, x.len, place[k].1);
            self.shm_settle(at, false)?;
            return Err(e);
        }
        let work = if receives {
            let p = all.len();
            if let Some(s) = send {
                recv[place[me].0..][..s.len()].copy_from_slice(s);
            }
            // Start after ourselves, so the ranks read from different peers at a time.
            (1..p).map(|i| (me + i) % p).try_for_each(|k| {
                let ((off, len), (x, pid)) = (place[k], all[k]);
                if len == 0 {
                    return Ok(());
                }
                cma::read_from(pid, x.input, &mut recv[off..off + len])
                    .map_err(|e| copy_error(call, "from", k, e))
            })
        } else {
            Ok(())
        };
        self.shm_finish(at, call, work).map(|()| true)
    }

    /// Large all-to-all by single copies (not in place): every rank exposes its send buffer of
    /// p blocks of `block` bytes and reads its own block of every peer's straight into place.
    /// `Ok(false)`: single copies are unavailable; every member falls back to messages.
    pub(super) fn shm_alltoall_large(
        &self,
        at: Meet,
        send: &[u8],
        recv: &mut [u8],
        block: usize,
    ) -> Result<bool> {
        let me = self.state.rank as usize;
        let mine = Exposed {
            ok: self.shm_single_copy()?,
            len: send.len(),
            input: send.as_ptr() as u64,
            output: 0,
        };
        let Some(all) = self.shm_expose(at, mine)? else {
            return Ok(false);
        };
        if let Some((k, (x, _))) = all
            .iter()
            .enumerate()
            .find(|(_, (x, _))| x.len != send.len())
        {
            let e = count_mismatch("alltoall", k as u32, x.len, send.len());
            self.shm_settle(at, false)?;
            return Err(e);
        }
        let p = all.len();
        recv[me * block..][..block].copy_from_slice(&send[me * block..][..block]);
        let off = (me * block) as u64;
        let work = (1..p).map(|i| (me + i) % p).try_for_each(|k| {
            let (x, pid) = all[k];
            cma::read_from(pid, x.input + off, &mut recv[k * block..][..block])
                .map_err(|e| copy_error("alltoall", "from", k, e))
        });
        self.shm_finish(at, "alltoall", work).map(|()| true)
    }

    /// Large reduction as a shared-memory reduce-scatter: each rank combines its slice of
    /// every rank's input and writes it to `root` (every rank for an allreduce).
    /// `Ok(false)`: single copies are unavailable; every member falls back to messages.
    pub(super) fn shm_reduce_large<T: Reducible>(
        &self,
        at: Meet,
        root: Option<u32>,
        send: Option<&[T]>,
        recv: &mut [T],
        op: &Op,
    ) -> Result<bool> {
        let kernel = op.kernel_for::<T>()?;
        let me = self.state.rank;
        let input = send.map_or(recv.as_ptr(), <[T]>::as_ptr);
        let len = size_of_val(send.unwrap_or(recv));
        let mine = Exposed {
            ok: self.shm_single_copy()?,
            len,
            input: input as u64,
            output: if root.is_none_or(|r| r == me) {
                recv.as_ptr() as u64
            } else {
                0
            },
        };
        let Some(all) = self.shm_expose(at, mine)? else {
            return Ok(false);
        };
        if let Some((k, (x, _))) = all.iter().enumerate().find(|(_, (x, _))| x.len != len) {
            let e = count_mismatch("reduce", k as u32, x.len, len);
            self.shm_settle(at, false)?;
            return Err(e);
        }
        let root = root.map(|r| r as usize);
        // A user operation may panic: the peers still need our final arrival first.
        let work = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            reduce_slice(
                &kernel,
                op.is_commutative(),
                &all,
                me as usize,
                root,
                size_of::<T>(),
                send.map(bytes),
                bytes_mut(recv),
                &mut SliceScratch::default(),
            )
        }));
        match work {
            Ok(work) => self.shm_finish(at, "reduce", work).map(|()| true),
            Err(panic) => {
                let _ = self.shm_settle(at, false);
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Whether this process may copy between processes now.
    fn shm_single_copy(&self) -> Result<bool> {
        self.rt
            .engine
            .with(|e| Ok::<_, Error>(node_of(e)?.single_copy()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `inout = input ∘ inout` for affine maps `x ↦ a·x + b` (mod 2³²) packed as `a << 32 | b`,
    /// applying `input` first: associative but not commutative, so any change of the rank
    /// order shows in the result.
    fn compose(input: &[u8], inout: &mut [u8]) {
        for (i, o) in input.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
            let f = u64::from_le_bytes(i.try_into().unwrap());
            let g = u64::from_le_bytes((&*o).try_into().unwrap());
            let (fa, fb, ga, gb) = (f >> 32, f & 0xffff_ffff, g >> 32, g & 0xffff_ffff);
            let a = (ga * fa) & 0xffff_ffff;
            let b = (ga * fb + gb) & 0xffff_ffff;
            o.copy_from_slice(&(a << 32 | b).to_le_bytes());
        }
    }

    fn val(r: usize, j: usize) -> u64 {
        let a = (r * 7 + j * 3) as u64 % 1000 + 1;
        let b = (r * 13 + j) as u64 % 997;
        a << 32 | b
    }

    /// A combining function over bytes: `inout = input ∘ inout`.
    type ByteOp = fn(&[u8], &mut [u8]);

    /// `inout = input + inout` on u64 (mod 2⁶⁴): commutative.
    fn add(input: &[u8], inout: &mut [u8]) {
        for (i, o) in input.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
            let s = u64::from_le_bytes(i.try_into().unwrap())
                .wrapping_add(u64::from_le_bytes((&*o).try_into().unwrap()));
            o.copy_from_slice(&s.to_le_bytes());
        }
    }

    /// Every rank's `reduce_slice` run in this process (single copies to and from our own
    /// pid), against a serial left-to-right fold; in place and not, to all or to a root;
    /// a non-commutative operation (rank order kept) and a commutative one (the last rank
    /// starts from its predecessor's input, receivers combine in their output).
    #[test]
    fn slices_combine_in_rank_order_across_pieces() {
        let pid = std::process::id() as i32;
        let ops: [(ByteOp, bool); 2] = [(compose, false), (add, true)];
        // Counts below p, inside one piece, and across several 64 KiB pieces.
        for ((p, n), (f, commutative)) in [
            (1, 5),
            (2, 3),
            (2, 2 * REDUCE_CHUNK / 8 + 3),
            (3, 2),
            (3, 1000),
            (4, 3 * REDUCE_CHUNK / 8 + 5),
            (6, 20_000),
        ]
        .into_iter()
        .flat_map(|pn| ops.map(|o| (pn, o)))
        {
            let kernel = Kernel::Fn(f);
            let mut scratch = SliceScratch::default();
            let want: Vec<u64> = (0..n)
                .map(|j| {
                    let mut acc = val(0, j).to_le_bytes();
                    for r in 1..p {
                        let mut next = val(r, j).to_le_bytes();
                        f(&acc, &mut next);
                        acc = next;
                    }
                    u64::from_le_bytes(acc)
                })
                .collect();
            for (in_place, root) in [(false, None), (true, None), (false, Some(p - 1))] {
                let inputs: Vec<Vec<u64>> = (0..p)
                    .map(|r| (0..n).map(|j| val(r, j)).collect())
                    .collect();
                let mut outs: Vec<Vec<u64>> = if in_place {
                    inputs.clone()
                } else {
                    vec![vec![0; n]; p]
                };
                let all: Vec<(Exposed, i32)> = (0..p)
                    .map(|r| {
                        let x = Exposed {
                            ok: true,
                            len: n * 8,
                            input: if in_place {
                                outs[r].as_ptr()
                            } else {
                                inputs[r].as_ptr()
                            } as u64,
                            output: outs[r].as_ptr() as u64,
                        };
                        assert_eq!(Exposed::decode(&x.encode()), x);
                        (x, pid)
                    })
                    .collect();
                for me in 0..p {
                    let input = (!in_place).then(|| bytes(&inputs[me][..]));
                    let out = bytes_mut(&mut outs[me][..]);
                    reduce_slice(
                        &kernel,
                        commutative,
                        &all,
                        me,
                        root,
                        8,
                        input,
                        out,
                        &mut scratch,
                    )
                    .unwrap();
                }
                for (r, out) in outs.iter().enumerate() {
                    if root.is_none_or(|root| root == r) {
                        assert_eq!(
                            out, &want,
                            "p {p} n {n} commutative {commutative} in place {in_place} rank {r}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_reduction_takes_the_slots_while_the_others_inputs_fit_one() {
        // Up to 1 KiB at any size of group; at np 2 a whole slot (reduce) or half (allreduce).
        for all in [false, true] {
            for p in [2, 3, 9, 64] {
                assert!(reduce_fits(1, p, all) && reduce_fits(REDUCE_SLOT_ANY, p, all));
                assert!(!reduce_fits(0, p, all) && !reduce_fits(COLL_SLOT_BYTES + 1, p, all));
            }
            assert!(!reduce_fits(REDUCE_SLOT_ANY + 1, 9, all));
            assert!(!reduce_fits(usize::MAX, 2, all));
        }
        let half = COLL_SLOT_BYTES / 2;
        assert!(reduce_fits(COLL_SLOT_BYTES, 2, false) && !reduce_fits(half + 1, 2, true));
        assert!(reduce_fits(half, 2, true) && reduce_fits(half, 3, false));
        assert!(!reduce_fits(half + 1, 3, false) && !reduce_fits(half / 2 + 1, 3, true));
    }

    #[test]
    fn bcast_cut_leaves_the_root_1_over_p_on_a_cache_line_or_nothing() {
        let x = |len: usize, output: u64| {
            (
                Exposed {
                    ok: true,
                    len,
                    input: 64,
                    output,
                },
                1,
            )
        };
        // Two ranks, root first or last: the receiver pulls the head half.
        assert_eq!(bcast_cut(&[x(1 << 20, 0), x(1 << 20, 64)], 0), 1 << 19);
        assert_eq!(bcast_cut(&[x(1 << 20, 64), x(1 << 20, 0)], 1), 1 << 19);
        // Three ranks, an odd length: the head ends on a cache line at or below 2/3.
        let all = [x(100_001, 64), x(100_001, 0), x(100_001, 64)];
        let cut = bcast_cut(&all, 1);
        assert_eq!(cut % 64, 0);
        assert!(cut <= 100_001 - 100_001 / 3 && cut + 64 > 100_001 - 100_001 / 3);
        // A receiver that exposed no buffer: it pulls everything, and so does every other.
        assert_eq!(bcast_cut(&[x(5000, 0), x(5000, 0), x(5000, 64)], 0), 5000);
        // One rank: nothing to split.
        assert_eq!(bcast_cut(&[x(5000, 0)], 0), 5000);
    }

    #[test]
    fn a_refused_copy_is_an_error() {
        let x = Exposed {
            ok: true,
            len: 64,
            input: 8,
            output: 8,
        };
        let all = [
            (x, std::process::id() as i32),
            (x, std::process::id() as i32),
        ];
        let mut out = [0u64; 8];
        let e = reduce_slice(
            &Kernel::Fn(compose),
            false,
            &all,
            0,
            None,
            8,
            Some(bytes(&[1u64; 8][..])),
            bytes_mut(&mut out[..]),
            &mut SliceScratch::default(),
        );
        assert_eq!(e.unwrap_err().class(), ErrorClass::Other);
    }
}
