//! One-sided communication (RMA): the window core, without lifetimes or element types, which
//! the Rust API ([`crate::window`]) wraps.
//!
//! A window keeps a private communicator (a split of the user's, so no attribute callbacks
//! run) for creation and fences, and one shared segment per window on the host, created by
//! rank 0 and mapped by every member. The segment holds the control block ([`ctl`]: lock
//! words, accumulate mutexes, PSCW counters, dynamic regions) and, for `allocate` and
//! `allocate_shared`, every member's window memory. So every target is reached without a
//! message and every operation is complete when its call returns:
//! - memory in the segment by plain loads and stores, and accumulates on 4- and 8-byte
//!   elements by atomics (fetch-add, swap, compare-exchange loops), so contended counters take
//!   no lock;
//! - memory a user gave to `create`, or attached to a dynamic window, by
//!   `process_vm_readv`/`writev`, with accumulates under the target's accumulate mutex.
//!
//! Which path an element takes depends only on the window flavor, its size and its address,
//! so all accumulates to one location agree and stay atomic with respect to each other.
//! Windows whose members span several hosts are refused
//! ([`ErrorClass::UnsupportedOperation`]); active messages over TCP are the later design.
//!
//! # Standard sections
//! MPI-5.0 chapter 12 (one-sided communications).

pub(crate) mod am;
mod combine;
pub(crate) mod ctl;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::comm::{Comm, Communicator};
use crate::datatype::predefined::{OpClass, Predefined, Repr};
use crate::error::{Error, ErrorClass, Result};
use crate::op::Op;
use crate::p2p::matching::PROC_NULL;
use crate::p2p::progress::Backoff;
use crate::threading::Multiple;
use crate::transport::shm::cma;
use crate::transport::shm::segment::Segment;

/// How a window's memory was provided (`MPI_WIN_CREATE_FLAVOR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// `MPI_Win_create`: memory the user owns.
    Create,
    /// `MPI_Win_allocate`: memory the window allocated.
    Allocate,
    /// `MPI_Win_create_dynamic`: memory attached and detached later.
    Dynamic,
    /// `MPI_Win_allocate_shared`: memory every member on the host loads and stores directly.
    Shared,
}

/// Lock types of passive-target epochs (`MPI_LOCK_EXCLUSIVE`, `MPI_LOCK_SHARED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockType {
    /// One holder at a time.
    Exclusive,
    /// Any number of shared holders, no exclusive one.
    Shared,
}

/// Assertions of the synchronization calls (`MPI_MODE_*`, standard ABI values).
pub mod mode {
    /// `MPI_MODE_NOCHECK`.
    pub const NOCHECK: i32 = 1024;
    /// `MPI_MODE_NOPRECEDE`.
    pub const NOPRECEDE: i32 = 2048;
    /// `MPI_MODE_NOPUT`.
    pub const NOPUT: i32 = 4096;
    /// `MPI_MODE_NOSTORE`.
    pub const NOSTORE: i32 = 8192;
    /// `MPI_MODE_NOSUCCEED`.
    pub const NOSUCCEED: i32 = 16384;
    /// Every valid bit.
    pub(crate) const ALL: i32 = NOCHECK | NOPRECEDE | NOPUT | NOSTORE | NOSUCCEED;
}

/// What an origin knows of one target.
#[derive(Debug, Clone, Copy)]
struct Target {
    /// Window size in bytes.
    size: u64,
    /// Displacement unit in bytes.
    disp_unit: u64,
    /// Base address in the target's address space (`create`), for cross-memory copies.
    base: u64,
    /// The target's process id.
    pid: i32,
    /// Where the target's memory is mapped here, or null (reached by cross-memory copies,
    /// or by active messages when `off_host`).
    mapped: *mut u8,
    /// On another host: reached only by active messages to its server.
    off_host: bool,
}

/// Where one access goes.
#[derive(Debug, Clone, Copy)]
enum Loc {
    /// Memory mapped in this process.
    Mapped(*mut u8),
    /// An address in another process on this host.
    Remote { pid: i32, addr: u64 },
    /// Target `t` on another host: byte offset in its window (absolute address for a dynamic
    /// window), reached by an active message.
    Off { t: usize, addr: u64 },
}

/// This process's synchronization state for the window.
#[derive(Debug, Default)]
struct Epoch {
    /// A fence opened an access and exposure epoch (until a fence with `NOSUCCEED`).
    fence: bool,
    /// Targets of the access epoch opened by `start`.
    access: Option<Vec<usize>>,
    /// Origins of the exposure epoch opened by `post`.
    exposure: Option<Vec<usize>>,
    /// Passive-target locks held, per target.
    locks: Vec<Option<LockType>>,
    /// `lock_all` holds a shared lock on every target.
    lock_all: bool,
    /// Posts consumed from each target by `start`.
    started: Vec<u64>,
    /// Completions consumed from each origin by `wait`/`test`.
    waited: Vec<u64>,
}

/// The epoch's mirrors read without its mutex (see [`Core::open`]).
#[derive(Debug)]
struct Open {
    fence: AtomicBool,
    lock_all: AtomicBool,
    locked: Box<[AtomicBool]>,
}

/// The locked epoch; publishes its fence and `lock_all` to [`Open`] when dropped, so every
/// change made through it is mirrored on every path.
struct EpochGuard<'a> {
    ep: MutexGuard<'a, Epoch>,
    open: &'a Open,
}

impl std::ops::Deref for EpochGuard<'_> {
    type Target = Epoch;
    fn deref(&self) -> &Epoch {
        &self.ep
    }
}

impl std::ops::DerefMut for EpochGuard<'_> {
    fn deref_mut(&mut self) -> &mut Epoch {
        &mut self.ep
    }
}

impl Drop for EpochGuard<'_> {
    fn drop(&mut self) {
        self.open.fence.store(self.ep.fence, Ordering::Relaxed);
        self.open
            .lock_all
            .store(self.ep.lock_all, Ordering::Relaxed);
    }
}

impl Epoch {
    fn can_access(&self, t: usize) -> bool {
        self.fence
            || self.lock_all
            || self.locks[t].is_some()
            || self.access.as_ref().is_some_and(|g| g.contains(&t))
    }

    fn passive(&self) -> bool {
        self.lock_all || self.locks.iter().any(Option::is_some)
    }
}

/// A window (`MPI_Win`) without lifetimes: the memory it names must outlive it, which the
/// front end ensures. Shared with the window's active-message server ([`am`]), which the
/// last drop stops.
pub(crate) struct WinCore(Arc<Core>);

impl std::ops::Deref for WinCore {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.0
    }
}

impl Drop for WinCore {
    fn drop(&mut self) {
        if let Some(a) = &self.0.am {
            a.stop();
        }
    }
}

impl std::fmt::Debug for WinCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The window's state, shared by its front end and its active-message server.
pub(crate) struct Core {
    comm: Comm,
    me: usize,
    flavor: Flavor,
    targets: Vec<Target>,
    seg: Segment,
    layout: ctl::Layout,
    /// Whether this process's entry count has one writer at a time (thread level SINGLE or
    /// FUNNELED: one thread calls MPI, and no progress thread runs below SERIALIZED), so an
    /// element-wise accumulate leaves by a plain store instead of a locked subtraction.
    sole_entries: bool,
    /// Offset of this process's entry count (`layout.acc_entries(me)`, a few multiplications
    /// kept out of every element-wise accumulate).
    my_entries: usize,
    /// Offset of member 0's entry count; member `o`'s is `64 * o` further (the same
    /// multiplications kept out of every bulk accumulate's check of the counts).
    entries0: usize,
    epoch: Mutex<Epoch>,
    /// Mirrors of the epoch for the per-operation checks, read without the mutex (a lock
    /// and unlock per put and per flush doubled a small accumulate's cost): whether a fence
    /// or `lock_all` opens access to every target, and per target whether `lock` holds it.
    /// Written under the mutex; a thread racing an epoch change with an operation on the
    /// same window is erroneous, so the checks need no ordering beyond their own thread's.
    open: Open,
    /// Active messages to and from members on other hosts; `None` when all share one.
    am: Option<am::Am>,
}

// SAFETY: the raw pointers in `targets` point into `seg` (owned here) or into memory the front
// end keeps alive for the window's lifetime; every access through them is a copy or an atomic
// on shared memory other processes touch concurrently anyway, so which thread issues it does
// not matter. The mutable state is behind `epoch`'s mutex.
unsafe impl Send for Core {}
// SAFETY: as above.
unsafe impl Sync for Core {}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WinCore")
            .field("rank", &self.me)
            .field("size", &self.targets.len())
            .field("flavor", &self.flavor)
            .finish_non_exhaustive()
    }
}

fn err(class: ErrorClass, msg: impl Into<String>) -> Error {
    Error::new(class, msg)
}

fn random_hex() -> String {
    let mut b = [0u8; 8];
    if getrandom::getrandom(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        b = t.to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Orders every load and store of this thread before it with every one after it (what a
/// flush and `MPI_Win_sync` promise). On x86-64 a locked instruction on a line of this
/// thread's own is such a barrier and costs about 3 ns where `mfence` (what
/// `fence(SeqCst)` compiles to) costs 23 ns (measured on the AMD EPYC test machine, a store
/// before each; half of a small put's latency). The read-modify-write is sequentially
/// consistent, so the compiler moves no access across it either.
#[inline]
fn full_fence() {
    UNFENCED.set(false);
    #[cfg(target_arch = "x86_64")]
    {
        thread_local! {
            static BARRIER: AtomicU32 = const { AtomicU32::new(0) };
        }
        BARRIER.with(|b| b.fetch_add(1, Ordering::SeqCst));
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(Ordering::SeqCst);
}

thread_local! {
    /// Whether this thread has written window memory with plain stores (a put, or a copy
    /// through the kernel) since its last [`full_fence`]. Every other write of window data
    /// is a locked read-modify-write or comes before one (an element-wise atomic, the
    /// exclusive accumulate lock's release), which on x86-64 already makes it visible to
    /// every other core before anything after it: a flush after only such operations has
    /// nothing to order (it was a third of a small accumulate-and-flush's time).
    static UNFENCED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The barrier a flush owes: [`full_fence`] unless this thread's writes to window memory
/// since its last one are all ordered already (see [`UNFENCED`]). Only on x86-64, whose
/// locked instructions are full barriers; elsewhere always the fence.
#[inline]
fn flush_fence() {
    if !cfg!(target_arch = "x86_64") || UNFENCED.get() {
        full_fence();
    }
}

/// Buffers aligned for every element type a kernel may see.
fn aligned(len: usize) -> Vec<u128> {
    vec![0u128; len.div_ceil(16)]
}

/// How many elements of `elem` bytes make `len` bytes, if a whole number do. Every
/// predefined type's extent but a few pair types' is a power of two, which takes a shift
/// instead of a division (tens of cycles, a third of a small accumulate's cost when measured).
#[inline]
fn whole_elements(len: usize, elem: usize) -> Option<usize> {
    if elem.is_power_of_two() {
        (len & (elem - 1) == 0).then(|| len >> elem.trailing_zeros())
    } else {
        (elem != 0 && len.is_multiple_of(elem)).then(|| len / elem)
    }
}

/// Elements up to which an accumulate on mapped memory runs as atomics per element; larger
/// ones take the target's accumulate lock exclusively and combine in place, which is far
/// cheaper per byte than one locked instruction per element. Since element-wise ones enter
/// through their own line and the exclusive path costs one locked instruction (the release
/// is a plain store), a single element is all the atomics win on, uncontended: with the
/// threshold at 4, 8 and 16 bytes of `int` took 0.043-0.061 and 0.057-0.078 µs
/// element-wise against 0.034-0.055 and 0.034-0.057 µs exclusive (5 interleaved rounds). A
/// single element (`MPI_Fetch_and_op`, counters) stays an atomic, so contended counters
/// still never wait for each other.
const ATOMIC_ELEMENTS: usize = 1;

/// Holds a target's accumulate lock until dropped, on every path: an element-wise entry
/// (this member's entry count, and whether it has one writer at a time) or the target's
/// accumulate word, exclusively.
enum AccGuard<'a> {
    Entered(&'a AtomicU64, bool),
    Exclusive(&'a AtomicU64),
}

impl Drop for AccGuard<'_> {
    fn drop(&mut self) {
        match self {
            AccGuard::Entered(e, true) => ctl::acc_leave_sole(e),
            AccGuard::Entered(e, false) => ctl::acc_leave(e),
            AccGuard::Exclusive(w) => ctl::unlock_acc_exclusive(w),
        }
    }
}

impl WinCore {
    /// Creates a window over `comm` (collective). `size` bytes with displacement unit
    /// `disp_unit` here; `user_base` is the memory of a `Create` window (ignored otherwise).
    pub(crate) fn new(
        comm: &Comm,
        flavor: Flavor,
        size: usize,
        disp_unit: usize,
        user_base: *mut u8,
    ) -> Result<WinCore> {
        let call = match flavor {
            Flavor::Create => "win_create",
            Flavor::Allocate => "win_allocate",
            Flavor::Dynamic => "win_create_dynamic",
            Flavor::Shared => "win_allocate_shared",
        };
        if comm.is_inter() {
            return Err(err(
                ErrorClass::Comm,
                format!("{call}: windows need an intracommunicator"),
            ));
        }
        let wcomm = comm
            .split(0, comm.rank())?
            .ok_or_else(|| err(ErrorClass::Intern, format!("{call}: split gave nothing")))?;
        let view = Communicator::<Multiple>::from_comm(wcomm.clone());
        let n = wcomm.size() as usize;
        let me = wcomm.rank() as usize;
        let members = &wcomm.state.members;
        // Two members share memory only if they share a host both for the transports and
        // for the placement (`OXMPI_HOST_OVERRIDE` pretends hosts apart, and a window must
        // not reach across what the job treats as two hosts).
        let host = |r: usize| {
            let w = members[r];
            (
                wcomm.rt.locality.host_of(w),
                wcomm.rt.coll_locality.host_of(w),
            )
        };
        let on_host: Vec<bool> = (0..n).map(|r| host(r) == host(me)).collect();
        let spans = on_host.iter().any(|&h| !h);
        if spans && flavor == Flavor::Shared {
            return Err(err(
                ErrorClass::UnsupportedOperation,
                format!(
                    "{call}: the communicator spans several hosts; shared windows need \
                     memory every member can load and store"
                ),
            ));
        }
        let mine = [
            size as u64,
            disp_unit as u64,
            user_base as u64,
            std::process::id() as u64,
        ];
        let mut all = vec![0u64; 4 * n];
        view.all_gather_into(&mine[..], &mut all)?;
        // One segment per host, created by the host's lowest window rank; it holds the
        // control words of every member (those of members elsewhere stay unused) and the
        // memory of this host's members of an allocated window.
        let leader = on_host.iter().position(|&h| h).unwrap_or(me);
        let hcomm = if spans {
            wcomm
                .split(leader as i32, me as i32)?
                .ok_or_else(|| err(ErrorClass::Intern, format!("{call}: split gave nothing")))?
        } else {
            wcomm.clone()
        };
        let hview = Communicator::<Multiple>::from_comm(hcomm);
        let layout = ctl::Layout::new(n);
        let mut offs = vec![0usize; n];
        let mut end = layout.len();
        if matches!(flavor, Flavor::Allocate | Flavor::Shared) {
            for (r, off) in offs.iter_mut().enumerate() {
                if !on_host[r] {
                    continue;
                }
                *off = end;
                end = end.checked_add(all[4 * r] as usize).ok_or_else(|| {
                    err(ErrorClass::Size, format!("{call}: window sizes overflow"))
                })?;
                // Shared windows are contiguous (the standard's default); allocated ones
                // start each member at a cache line.
                if flavor == Flavor::Allocate {
                    end = end.div_ceil(64) * 64;
                }
            }
        }
        let mut name = [0u8; 128];
        let mut seg = None;
        let mut failure = None;
        if me == leader {
            // Under the job's prefix when launched, so the launcher removes it should the
            // job die between creation and the unlink below.
            let prefix = std::env::var(oxmpi_pmi::launch::JOBKEY_ENV)
                .ok()
                .filter(|k| oxmpi_pmi::launch::valid_jobkey(k))
                .map_or_else(
                    || "oxmpi.".to_string(),
                    |k| oxmpi_pmi::launch::shm_prefix(&k),
                );
            let path = format!(
                "{}/{prefix}win.{}.{}",
                oxmpi_pmi::launch::SHM_DIR,
                std::process::id(),
                random_hex()
            );
            match Segment::create(&path, end.max(64)) {
                Ok(s) => {
                    name[..path.len()].copy_from_slice(path.as_bytes());
                    seg = Some(s);
                }
                Err(e) => failure = Some(format!("{call}: cannot create {path}: {e}")),
            }
        }
        hview.broadcast_into(0, &mut name[..])?;
        if me != leader {
            let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            if len == 0 {
                failure = Some(format!(
                    "{call}: window rank {leader} could not create the window memory"
                ));
            } else {
                let path = String::from_utf8_lossy(&name[..len]).into_owned();
                match Segment::open(&path) {
                    Ok(s) => seg = Some(s),
                    Err(e) => failure = Some(format!("{call}: cannot map {path}: {e}")),
                }
            }
        }
        let mut oks = vec![0u8; n];
        view.all_gather_into(&[failure.is_none() as u8][..], &mut oks)?;
        if let Some(s) = seg.as_mut() {
            // Everyone has mapped it (or failed): the name is no longer needed.
            s.unlink();
        }
        if let Some(msg) = failure {
            return Err(err(ErrorClass::NoMem, msg));
        }
        let seg = match seg {
            Some(s) if oks.iter().all(|&o| o == 1) => s,
            _ => {
                return Err(err(
                    ErrorClass::NoMem,
                    format!("{call}: another member could not map the window memory"),
                ))
            }
        };
        let base = seg.base().as_ptr();
        let targets = (0..n)
            .map(|r| {
                let mapped = match flavor {
                    // SAFETY: `offs[r] + size(r) <= end <= seg.len()`: inside the mapping.
                    Flavor::Allocate | Flavor::Shared if on_host[r] => unsafe { base.add(offs[r]) },
                    Flavor::Create if r == me => user_base,
                    _ => std::ptr::null_mut(),
                };
                Target {
                    size: all[4 * r],
                    disp_unit: all[4 * r + 1],
                    base: all[4 * r + 2],
                    pid: all[4 * r + 3] as i32,
                    mapped,
                    off_host: !on_host[r],
                }
            })
            .collect();
        let am = if spans {
            Some(am::Am::new(&wcomm, call)?)
        } else {
            None
        };
        let core = Arc::new(Core {
            comm: wcomm,
            me,
            flavor,
            targets,
            seg,
            layout,
            sole_entries: !comm.rt.level.needs_lock(),
            my_entries: layout.acc_entries(me),
            entries0: layout.acc_entries(0),
            open: Open {
                fence: AtomicBool::new(false),
                lock_all: AtomicBool::new(false),
                locked: (0..n).map(|_| AtomicBool::new(false)).collect(),
            },
            epoch: Mutex::new(Epoch {
                locks: vec![None; n],
                started: vec![0; n],
                waited: vec![0; n],
                ..Epoch::default()
            }),
            am,
        });
        if core.am.is_some() {
            am::serve(&core)?;
        }
        Ok(WinCore(core))
    }
}

impl Core {
    fn word(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off + 8 <= self.layout.len());
        // SAFETY: `off` is a control-block offset from `layout` (8-aligned, inside the
        // segment, whose base is page-aligned); the segment lives as long as `self`, and
        // these words are only ever accessed atomically by every process.
        unsafe { &*self.seg.base().as_ptr().add(off).cast::<AtomicU64>() }
    }

    /// The epoch, locked; [`Open`]'s fence and `lock_all` follow it when the guard drops.
    fn epoch(&self) -> EpochGuard<'_> {
        EpochGuard {
            ep: self.epoch.lock().unwrap_or_else(|p| p.into_inner()),
            open: &self.open,
        }
    }

    /// Whether an access epoch to target `t` is open: without the mutex when a fence,
    /// `lock_all` or `lock(t)` opened it.
    #[inline]
    fn can_access(&self, t: usize) -> bool {
        self.open.fence.load(Ordering::Relaxed)
            || self.open.lock_all.load(Ordering::Relaxed)
            || self.open.locked[t].load(Ordering::Relaxed)
            || self.can_access_locked(t)
    }

    /// [`Self::can_access`] under the mutex (a PSCW access epoch), out of the inlined path.
    #[cold]
    fn can_access_locked(&self, t: usize) -> bool {
        self.epoch().can_access(t)
    }

    /// Waits until `ready` holds, keeping the engine progressing for peers meanwhile.
    fn wait_until(&self, mut ready: impl FnMut() -> bool) {
        let rt = &self.comm.rt;
        let mut b = Backoff::new(rt.wait);
        while !ready() {
            rt.engine.with(|e| {
                e.progress();
            });
            b.snooze();
        }
    }

    /// The window's private communicator.
    pub(crate) fn comm(&self) -> &Comm {
        &self.comm
    }

    /// Number of members.
    pub(crate) fn size(&self) -> usize {
        self.targets.len()
    }

    /// This process's rank in the window.
    pub(crate) fn rank(&self) -> usize {
        self.me
    }

    /// The flavor.
    pub(crate) fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The group of the window.
    pub(crate) fn group(&self) -> crate::group::Group {
        self.comm.group()
    }

    /// `MPI_WIN_BASE`, `MPI_WIN_SIZE`, `MPI_WIN_DISP_UNIT` of this process.
    pub(crate) fn local(&self) -> (*mut u8, usize, usize) {
        let t = &self.targets[self.me];
        (t.mapped, t.size as usize, t.disp_unit as usize)
    }

    /// `MPI_Win_shared_query`: where member `rank`'s memory is mapped here, its size and
    /// displacement unit. `PROC_NULL` names the first member with a non-empty window. Memory
    /// MPI did not allocate (a created or dynamic window) is not mapped here: size 0 and a
    /// null address, as MPI-4.1 has it for memory not reachable by loads and stores.
    pub(crate) fn shared_query(&self, rank: i32) -> Result<(*mut u8, usize, usize)> {
        if !matches!(self.flavor, Flavor::Shared | Flavor::Allocate) {
            let unit = if rank == PROC_NULL {
                1
            } else {
                self.targets[self.check_rank("win_shared_query", rank)?].disp_unit as usize
            };
            return Ok((std::ptr::null_mut(), 0, unit));
        }
        let r = if rank == PROC_NULL {
            self.targets.iter().position(|t| t.size > 0).unwrap_or(0)
        } else {
            self.check_rank("win_shared_query", rank)?
        };
        let t = &self.targets[r];
        Ok((t.mapped, t.size as usize, t.disp_unit as usize))
    }

    fn check_rank(&self, call: &str, rank: i32) -> Result<usize> {
        if rank < 0 || rank as usize >= self.targets.len() {
            return Err(err(
                ErrorClass::Rank,
                format!(
                    "{call}: rank {rank} is not in the window's group of {}",
                    self.targets.len()
                ),
            ));
        }
        Ok(rank as usize)
    }

    fn check_assert(call: &str, assert: i32) -> Result<()> {
        if assert & !mode::ALL != 0 {
            return Err(err(
                ErrorClass::Assert,
                format!("{call}: assertion {assert:#x} has bits no MPI_MODE_* names"),
            ));
        }
        Ok(())
    }

    /// Where `len` bytes at displacement `disp` of target `t` are, after the epoch and range
    /// checks; `None` for `PROC_NULL` and empty accesses.
    fn resolve(&self, call: &str, t: i32, disp: i64, len: usize) -> Result<Option<Loc>> {
        self.resolve_at(call, t, disp, 0, len)
    }

    /// As [`Self::resolve`], for the bytes `skew` bytes after (or before) displacement `disp`:
    /// one contiguous piece of a non-contiguous target datatype. Inlined: returned through
    /// memory, its result was read back wider than written (a failed store forward, a sixth
    /// of a small accumulate's time when profiled).
    #[inline(always)]
    fn resolve_at(
        &self,
        call: &str,
        t: i32,
        disp: i64,
        skew: i64,
        len: usize,
    ) -> Result<Option<Loc>> {
        if t == PROC_NULL {
            return Ok(None);
        }
        let t = self.check_rank(call, t)?;
        if !self.can_access(t) {
            return Err(err(
                ErrorClass::RmaSync,
                format!("{call}: no access epoch to rank {t} is open (fence, start, lock)"),
            ));
        }
        if len == 0 {
            return Ok(None);
        }
        let tg = &self.targets[t];
        let range = || {
            err(
                ErrorClass::RmaRange,
                format!("{call}: {len} bytes at displacement {disp} are outside rank {t}'s window"),
            )
        };
        if disp < 0 {
            return Err(range());
        }
        if self.flavor == Flavor::Dynamic {
            let addr =
                u64::try_from(disp.checked_add(skew).ok_or_else(range)?).map_err(|_| range())?;
            let end = addr.checked_add(len as u64).ok_or_else(range)?;
            if tg.off_host {
                // Its attached regions are known only on its host: its server checks them.
                return Ok(Some(Loc::Off { t, addr }));
            }
            let inside = (0..ctl::MAX_REGIONS).any(|i| {
                let o = self.layout.region(t, i);
                let a = self.word(o).load(Ordering::Acquire);
                let l = self.word(o + 8).load(Ordering::Acquire);
                l > 0 && addr >= a && end <= a + l
            });
            if !inside {
                return Err(err(
                    ErrorClass::RmaRange,
                    format!("{call}: {len} bytes at address {addr:#x} are not in memory rank {t} attached"),
                ));
            }
            return Ok(Some(if t == self.me {
                Loc::Mapped(addr as *mut u8)
            } else {
                Loc::Remote { pid: tg.pid, addr }
            }));
        }
        let off = i64::try_from(tg.disp_unit)
            .ok()
            .and_then(|u| disp.checked_mul(u))
            .and_then(|o| o.checked_add(skew))
            .and_then(|o| u64::try_from(o).ok())
            .ok_or_else(range)?;
        if off.checked_add(len as u64).is_none_or(|e| e > tg.size) {
            return Err(range());
        }
        Ok(Some(if tg.off_host {
            Loc::Off { t, addr: off }
        } else if tg.mapped.is_null() {
            Loc::Remote {
                pid: tg.pid,
                addr: tg.base + off,
            }
        } else {
            // SAFETY: `off + len <= size`: inside the target's mapped memory.
            Loc::Mapped(unsafe { tg.mapped.add(off as usize) })
        }))
    }

    /// Checks that `len` bytes `skew` bytes past displacement `disp` of `target` may be
    /// accessed now (epoch and range) without touching them, so that an operation of several
    /// pieces can check them all before it moves any.
    pub(crate) fn check_at(
        &self,
        call: &str,
        target: i32,
        disp: i64,
        skew: i64,
        len: usize,
    ) -> Result<()> {
        self.resolve_at(call, target, disp, skew, len).map(drop)
    }

    fn cma_err(call: &str, e: std::io::Error) -> Error {
        err(
            ErrorClass::Other,
            format!("{call}: cross-process copy failed ({e}); is ptrace restricted?"),
        )
    }

    fn write(call: &str, loc: Loc, data: &[u8]) -> Result<()> {
        UNFENCED.set(true);
        match loc {
            // SAFETY: `resolve` checked that `data.len()` bytes from `p` are window memory
            // (mapped segment or the user's memory kept alive by the front end); `copy`
            // allows the origin buffer to be window memory too.
            Loc::Mapped(p) => unsafe {
                crate::bytecopy::copy_overlapping(p, data.as_ptr(), data.len())
            },
            Loc::Remote { pid, addr } => {
                cma::write_to(pid, addr, data).map_err(|e| Self::cma_err(call, e))?
            }
            Loc::Off { .. } => return Err(am::misrouted(call)),
        }
        Ok(())
    }

    fn read(call: &str, loc: Loc, out: &mut [u8]) -> Result<()> {
        match loc {
            // SAFETY: as in `write`, for reads of `out.len()` bytes.
            Loc::Mapped(p) => unsafe {
                crate::bytecopy::copy_overlapping(out.as_mut_ptr(), p, out.len())
            },
            Loc::Remote { pid, addr } => {
                cma::read_from(pid, addr, out).map_err(|e| Self::cma_err(call, e))?
            }
            Loc::Off { .. } => return Err(am::misrouted(call)),
        }
        Ok(())
    }

    /// `MPI_Put` of contiguous bytes to displacement `disp` of `target`.
    pub(crate) fn put(&self, data: &[u8], target: i32, disp: i64) -> Result<()> {
        self.put_at(data, target, disp, 0)
    }

    /// `MPI_Put` of contiguous bytes to `skew` bytes past displacement `disp` of `target`.
    pub(crate) fn put_at(&self, data: &[u8], target: i32, disp: i64, skew: i64) -> Result<()> {
        match self.resolve_at("put", target, disp, skew, data.len())? {
            Some(Loc::Off { t, addr }) => self.am_put(t, addr, data),
            Some(loc) => Self::write("put", loc, data),
            None => Ok(()),
        }
    }

    /// `MPI_Get` of contiguous bytes from displacement `disp` of `target`.
    pub(crate) fn get(&self, out: &mut [u8], target: i32, disp: i64) -> Result<()> {
        self.get_at(out, target, disp, 0)
    }

    /// `MPI_Get` of contiguous bytes from `skew` bytes past displacement `disp` of `target`.
    pub(crate) fn get_at(&self, out: &mut [u8], target: i32, disp: i64, skew: i64) -> Result<()> {
        match self.resolve_at("get", target, disp, skew, out.len())? {
            Some(Loc::Off { t, addr }) => self.am_get(t, addr, out),
            Some(loc) => Self::read("get", loc, out),
            None => Ok(()),
        }
    }

    /// Whether accumulates on this window use atomics for 4- and 8-byte elements.
    fn atomics(&self) -> bool {
        matches!(self.flavor, Flavor::Allocate | Flavor::Shared)
    }

    /// Takes target `t`'s accumulate lock: an entry for element-wise atomics, the word
    /// exclusively (once every entered element-wise accumulate on this host has left) for
    /// read-combine-write.
    /// With `wait == false` (inside the engine, where nothing may wait) it tries once.
    /// Inlined with its first try: an element-wise accumulate is a few dozen instructions,
    /// and the call and the back-off set up before the try were a sixth of them.
    #[inline(always)]
    fn acc_lock(&self, t: usize, exclusive: bool, wait: bool) -> Option<AccGuard<'_>> {
        let word = self.word(self.layout.acc_mutex(t));
        if !exclusive {
            let mine = self.word(self.my_entries);
            if !ctl::try_acc_enter(word, mine) {
                if !wait {
                    return None;
                }
                self.wait_until(|| ctl::try_acc_enter(word, mine));
            }
            return Some(AccGuard::Entered(mine, self.sole_entries));
        }
        self.acc_lock_exclusive(word, wait)
    }

    /// Whether no element-wise accumulate on this host is in progress: every entry count
    /// is zero. Only members on this host enter through this segment (others reach it
    /// through this host's server, which counts as its own member).
    #[inline]
    fn acc_drained(&self) -> bool {
        let count = |o: usize| self.word(self.entries0 + 64 * o);
        if self.am.is_none() {
            ctl::acc_drained((0..self.size()).map(count))
        } else {
            ctl::acc_drained(
                (0..self.size())
                    .filter(|&o| !self.targets[o].off_host)
                    .map(count),
            )
        }
    }

    /// [`Self::acc_lock`]'s exclusive side on the accumulate word `word`. The first try
    /// goes without the back-off's set-up (two of them were a fifth of a 64-byte
    /// accumulate's instructions, uncontended).
    #[inline]
    fn acc_lock_exclusive<'a>(&'a self, word: &'a AtomicU64, wait: bool) -> Option<AccGuard<'a>> {
        if !ctl::try_acc_exclusive(word) {
            if !wait {
                return None;
            }
            self.wait_until(|| ctl::try_acc_exclusive(word));
        }
        if self.acc_drained() {
            return Some(AccGuard::Exclusive(word));
        }
        if !wait {
            ctl::acc_exclusive_retreat(word);
            return None;
        }
        let guard = AccGuard::Exclusive(word);
        self.wait_until(|| self.acc_drained());
        Some(guard)
    }

    /// `MPI_Accumulate` (`result == None`) and `MPI_Get_accumulate`: element-wise `target =
    /// target ∘ origin` over elements of `base`, the old values into `result`. `origin` may
    /// be empty for `NoOp` (then `result` gives the length).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn accumulate(
        &self,
        call: &str,
        origin: &[u8],
        result: Option<&mut [u8]>,
        target: i32,
        disp: i64,
        base: Predefined,
        op: &Op,
    ) -> Result<()> {
        self.accumulate_at(call, origin, result, target, disp, 0, base, op)
    }

    /// [`Self::accumulate`] on the elements `skew` bytes past displacement `disp`: one
    /// contiguous piece of a non-contiguous target datatype. Each element stays atomic.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn accumulate_at(
        &self,
        call: &str,
        origin: &[u8],
        mut result: Option<&mut [u8]>,
        target: i32,
        disp: i64,
        skew: i64,
        base: Predefined,
        op: &Op,
    ) -> Result<()> {
        if self
            .acc_mapped(origin, result.as_deref_mut(), target, disp, skew, base, op)
            .is_some()
        {
            return Ok(());
        }
        if matches!(op, Op::User(_)) {
            return Err(err(
                ErrorClass::Op,
                format!("{call}: user-defined operations are not allowed in one-sided accumulates"),
            ));
        }
        // Refuses unsupported (op, type) pairs before anything moves.
        let k = combine::kernel(op, base)?;
        let elem = base.info().extent;
        let no_origin = origin.is_empty() && matches!(op, Op::NoOp);
        let len = match (&result, no_origin) {
            (Some(r), true) => r.len(),
            (Some(r), false) if r.len() != origin.len() => {
                return Err(err(
                    ErrorClass::Count,
                    format!(
                        "{call}: origin has {} bytes but the result buffer {}",
                        origin.len(),
                        r.len()
                    ),
                ))
            }
            _ => origin.len(),
        };
        if whole_elements(len, elem).is_none() {
            return Err(err(
                ErrorClass::Count,
                format!(
                    "{call}: {len} bytes are not whole elements of {}",
                    base.name()
                ),
            ));
        }
        let Some(loc) = self.resolve_at(call, target, disp, skew, len)? else {
            return Ok(());
        };
        if let Loc::Off { t, addr } = loc {
            return self.am_accumulate(call, t, addr, origin, result, len, base, op);
        }
        self.acc_apply(
            call,
            loc,
            origin,
            result,
            target as usize,
            base,
            (op, k),
            len,
            true,
        )
        .map(drop)
    }

    /// The common accumulate on memory of an allocated or shared window, without the general
    /// path's set-up (the location's enum, error values, the calls in between; together more
    /// than half of a 4-byte accumulate's 470 instructions, and 1.5x Open MPI's time up to
    /// 2 KiB): the same two paths [`Self::acc_apply`] takes, chosen by the same rule (so
    /// both agree on every location): at most [`ATOMIC_ELEMENTS`] aligned 4- or 8-byte
    /// integers under an operation that is one atomic instruction each, element-wise; aligned
    /// elements of any other count, combined in place under the exclusive accumulate lock.
    /// `None`, with nothing done, for everything else, including every error: the general
    /// path then checks and reports it.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn acc_mapped(
        &self,
        origin: &[u8],
        mut result: Option<&mut [u8]>,
        target: i32,
        disp: i64,
        skew: i64,
        base: Predefined,
        op: &Op,
    ) -> Option<()> {
        let info = base.info();
        let elem = info.extent;
        let len = origin.len();
        if !self.atomics()
            || matches!(op, Op::User(_))
            || len == 0
            || whole_elements(len, elem).is_none()
            || result.as_ref().is_some_and(|r| r.len() != len)
        {
            return None;
        }
        let t = usize::try_from(target)
            .ok()
            .filter(|&t| t < self.targets.len())?;
        if !self.can_access(t) {
            return None;
        }
        let tg = &self.targets[t];
        if tg.off_host || tg.mapped.is_null() {
            return None;
        }
        let off = u64::try_from(disp)
            .ok()?
            .checked_mul(tg.disp_unit)?
            .checked_add_signed(skew)?;
        if off.checked_add(len as u64)? > tg.size {
            return None;
        }
        // SAFETY: `off + len <= size`: inside the target's mapped memory.
        let p = unsafe { tg.mapped.add(off as usize) };
        // `acc_apply`'s rule for the element-wise path.
        if (elem == 4 || elem == 8)
            && (p as usize) & (elem - 1) == 0
            && len <= ATOMIC_ELEMENTS * elem
        {
            if !matches!(
                info.repr,
                Repr::I32 | Repr::U32 | Repr::I64 | Repr::U64 | Repr::Long | Repr::ULong
            ) || !matches!(
                op,
                Op::Sum | Op::BitwiseAnd | Op::BitwiseOr | Op::BitwiseXor | Op::Replace
            ) {
                return None;
            }
            let _guard = self.acc_lock(t, false, true)?;
            macro_rules! few {
                ($atomic:ty, $t:ty) => {
                    let w = std::mem::size_of::<$t>();
                    for (i, x) in origin.chunks_exact(w).enumerate() {
                        let mut b = [0u8; std::mem::size_of::<$t>()];
                        b.copy_from_slice(x);
                        let x = <$t>::from_ne_bytes(b);
                        // SAFETY: element `i` lies inside the window memory checked above,
                        // aligned for its size; every process touches these elements only
                        // atomically (accumulates) or by plain copies the standard leaves
                        // undefined when they race.
                        let a = unsafe { &*p.add(i * w).cast::<$atomic>() };
                        let old = match op {
                            Op::Sum => a.fetch_add(x, Ordering::AcqRel),
                            Op::BitwiseAnd => a.fetch_and(x, Ordering::AcqRel),
                            Op::BitwiseOr => a.fetch_or(x, Ordering::AcqRel),
                            Op::BitwiseXor => a.fetch_xor(x, Ordering::AcqRel),
                            _ => a.swap(x, Ordering::AcqRel),
                        };
                        if let Some(r) = result.as_deref_mut() {
                            r[i * w..(i + 1) * w].copy_from_slice(&old.to_ne_bytes());
                        }
                    }
                };
            }
            if elem == 8 {
                few!(AtomicU64, u64);
            } else {
                few!(AtomicU32, u32);
            }
            return Some(());
        }
        // `acc_apply`'s in-place combine: both sides aligned, the kernel defined.
        let mask = info.align.max(1) - 1;
        if (p as usize | origin.as_ptr() as usize) & mask != 0 {
            return None;
        }
        let k = combine::kernel(op, base).ok()?;
        let _guard = self.acc_lock(t, true, true)?;
        // SAFETY: `len` bytes at `p` are window memory (checked above), aligned for the
        // element type; the exclusive accumulate lock keeps every other accumulate off it
        // meanwhile (plain puts racing with it are erroneous).
        let target_mem = unsafe { std::slice::from_raw_parts_mut(p, len) };
        if let Some(r) = result {
            r.copy_from_slice(target_mem);
        }
        match op {
            Op::NoOp => {}
            Op::Replace => crate::bytecopy::copy_slice(target_mem, origin),
            // The remaining predefined operations are commutative (see `acc_apply`).
            _ => k(origin, target_mem),
        }
        Some(())
    }

    /// Applies an accumulate of `len` bytes at `loc` of target `t` (checked): element-wise
    /// atomics for few 4- and 8-byte elements of mapped memory, otherwise read-combine-write
    /// under the exclusive accumulate lock. `k` is `op`'s kernel on `base`
    /// ([`combine::kernel`], looked up once by the caller). `Ok(false)`: `wait` was false and
    /// the lock busy, nothing done.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn acc_apply(
        &self,
        call: &str,
        loc: Loc,
        origin: &[u8],
        mut result: Option<&mut [u8]>,
        t: usize,
        base: Predefined,
        (op, k): (&Op, crate::op::KernelFn),
        len: usize,
        wait: bool,
    ) -> Result<bool> {
        let elem = base.info().extent;
        let no_origin = origin.is_empty() && matches!(op, Op::NoOp);
        let origin_at = |i: usize, w: usize| -> u64 {
            if no_origin {
                return 0;
            }
            let mut b = [0u8; 8];
            b[..w].copy_from_slice(&origin[i * w..(i + 1) * w]);
            u64::from_ne_bytes(b)
        };
        let repr = base.info().repr;
        let int = matches!(
            repr,
            Repr::I32 | Repr::U32 | Repr::I64 | Repr::U64 | Repr::Long | Repr::ULong
        );
        if let Loc::Mapped(p) = loc {
            // Element sizes are constants in each arm, so the size checks, the element count
            // and the indexing below compile to masks and shifts, not divisions (which cost
            // as much as a locked instruction each).
            let few = |elem: usize| {
                self.atomics() && (p as usize) & (elem - 1) == 0 && len <= ATOMIC_ELEMENTS * elem
            };
            if (elem == 8 && few(8)) || (elem == 4 && few(4)) {
                let Some(_guard) = self.acc_lock(t, false, wait) else {
                    return Ok(false);
                };
                macro_rules! atomic_loop {
                    ($atomic:ty, $t:ty) => {
                        let elem = std::mem::size_of::<$t>();
                        for i in 0..len / elem {
                            // SAFETY: element `i` lies inside the window memory `resolve`
                            // checked, aligned for its size; every process touches these
                            // elements only atomically (accumulates) or by plain copies
                            // the standard leaves undefined when they race.
                            let a = unsafe { &*p.add(i * elem).cast::<$atomic>() };
                            let x = origin_at(i, elem) as $t;
                            let old: $t = match op {
                                Op::NoOp => a.load(Ordering::Acquire),
                                Op::Replace => a.swap(x, Ordering::AcqRel),
                                Op::Sum if int => a.fetch_add(x, Ordering::AcqRel),
                                Op::BitwiseAnd if int => a.fetch_and(x, Ordering::AcqRel),
                                Op::BitwiseOr if int => a.fetch_or(x, Ordering::AcqRel),
                                Op::BitwiseXor if int => a.fetch_xor(x, Ordering::AcqRel),
                                _ => {
                                    let mut cur = a.load(Ordering::Relaxed);
                                    loop {
                                        let mut new = x;
                                        k(
                                            bytemuck::bytes_of(&cur),
                                            bytemuck::bytes_of_mut(&mut new),
                                        );
                                        match a.compare_exchange_weak(
                                            cur,
                                            new,
                                            Ordering::AcqRel,
                                            Ordering::Relaxed,
                                        ) {
                                            Ok(_) => break cur,
                                            Err(c) => cur = c,
                                        }
                                    }
                                }
                            };
                            if let Some(r) = result.as_deref_mut() {
                                r[i * elem..(i + 1) * elem].copy_from_slice(&old.to_ne_bytes());
                            }
                        }
                    };
                }
                if elem == 8 {
                    atomic_loop!(AtomicU64, u64);
                } else {
                    atomic_loop!(AtomicU32, u32);
                }
                return Ok(true);
            }
        }
        let Some(_guard) = self.acc_lock(t, true, wait) else {
            return Ok(false);
        };
        if let Loc::Mapped(p) = loc {
            // Every alignment is a power of two: a mask, not a division (a 64-bit division
            // was a tenth of a 512-byte accumulate's time).
            let mask = base.info().align.max(1) - 1;
            if (p as usize | origin.as_ptr() as usize) & mask == 0 {
                // SAFETY: `resolve` checked `len` bytes at `p` are window memory, aligned for
                // the element type; the exclusive accumulate lock keeps every other
                // accumulate off it meanwhile (plain puts racing with it are erroneous).
                let target_mem = unsafe { std::slice::from_raw_parts_mut(p, len) };
                if let Some(r) = result {
                    r.copy_from_slice(target_mem);
                }
                match op {
                    Op::NoOp => {}
                    Op::Replace => crate::bytecopy::copy_slice(target_mem, origin),
                    // The remaining predefined operations are commutative:
                    // target ∘ origin = origin ∘ target, so target can be the in-out side.
                    _ => k(origin, target_mem),
                }
                return Ok(true);
            }
        }
        let mut cur = aligned(len);
        let cur = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut cur)[..len];
        Self::read(call, loc, cur)?;
        if let Some(r) = result {
            r.copy_from_slice(cur);
        }
        if !matches!(op, Op::NoOp) {
            let mut new = aligned(len);
            let new = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut new)[..len];
            new.copy_from_slice(origin);
            k(cur, new);
            Self::write(call, loc, new)?;
        }
        Ok(true)
    }

    /// `MPI_Compare_and_swap` on one element of `base`: `target = origin` if it equals
    /// `compare`; the old value into `result`.
    pub(crate) fn compare_and_swap(
        &self,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        target: i32,
        disp: i64,
        base: Predefined,
    ) -> Result<()> {
        let call = "compare_and_swap";
        let info = base.info();
        if !matches!(
            info.class,
            OpClass::CInteger
                | OpClass::FortranInteger
                | OpClass::Logical
                | OpClass::Byte
                | OpClass::MultiLanguage
        ) {
            return Err(err(
                ErrorClass::Type,
                format!(
                    "{call}: {} is not an integer, logical or byte type",
                    base.name()
                ),
            ));
        }
        let elem = info.extent;
        if origin.len() != elem || compare.len() != elem || result.len() != elem {
            return Err(err(
                ErrorClass::Count,
                format!(
                    "{call}: origin, compare and result must each be one {}",
                    base.name()
                ),
            ));
        }
        if self
            .cas_mapped(origin, compare, result, target, disp)
            .is_some()
        {
            return Ok(());
        }
        let Some(loc) = self.resolve(call, target, disp, elem)? else {
            return Ok(());
        };
        if let Loc::Off { t, addr } = loc {
            return self.am_cas(t, addr, origin, compare, result, base);
        }
        self.cas_apply(call, loc, origin, compare, result, target as usize, true)
            .map(drop)
    }

    /// The common compare-and-swap, one aligned 4- or 8-byte element of an allocated or
    /// shared window, without the general path's location enum and error set-up (as
    /// [`Self::acc_mapped`] for accumulates): the element-wise path [`Self::cas_apply`] takes
    /// for it, so both agree on every location. `None`, with nothing done, for everything
    /// else, errors included: the general path then checks and reports it.
    #[inline(always)]
    fn cas_mapped(
        &self,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        target: i32,
        disp: i64,
    ) -> Option<()> {
        let elem = origin.len();
        if !self.atomics() || (elem != 4 && elem != 8) {
            return None;
        }
        let t = usize::try_from(target)
            .ok()
            .filter(|&t| t < self.targets.len())?;
        if !self.can_access(t) {
            return None;
        }
        let tg = &self.targets[t];
        if tg.off_host || tg.mapped.is_null() {
            return None;
        }
        let off = u64::try_from(disp).ok()?.checked_mul(tg.disp_unit)?;
        if off.checked_add(elem as u64)? > tg.size {
            return None;
        }
        // SAFETY: `off + elem <= size`: inside the target's mapped memory.
        let p = unsafe { tg.mapped.add(off as usize) };
        if (p as usize) & (elem - 1) != 0 {
            return None;
        }
        if compare.len() != elem || result.len() != elem {
            return None;
        }
        let mut o = [0u8; 8];
        let mut c = [0u8; 8];
        o[..elem].copy_from_slice(origin);
        c[..elem].copy_from_slice(compare);
        let (o, c) = (u64::from_ne_bytes(o), u64::from_ne_bytes(c));
        let _guard = self.acc_lock(t, false, true)?;
        if elem == 8 {
            // SAFETY: one aligned element inside checked window memory, accessed atomically
            // by every accumulate (see `acc_mapped`).
            let a = unsafe { &*p.cast::<AtomicU64>() };
            let old = a
                .compare_exchange(c, o, Ordering::AcqRel, Ordering::Acquire)
                .unwrap_or_else(|v| v);
            result.copy_from_slice(&old.to_ne_bytes());
        } else {
            // SAFETY: as above, for a 4-byte element.
            let a = unsafe { &*p.cast::<AtomicU32>() };
            let old = a
                .compare_exchange(c as u32, o as u32, Ordering::AcqRel, Ordering::Acquire)
                .unwrap_or_else(|v| v);
            result.copy_from_slice(&old.to_ne_bytes());
        }
        Some(())
    }

    /// Applies a compare-and-swap of one element at `loc` of target `t` (checked), under the
    /// same rule as [`Self::acc_apply`] (which it returns like).
    #[allow(clippy::too_many_arguments)]
    fn cas_apply(
        &self,
        call: &str,
        loc: Loc,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        t: usize,
        wait: bool,
    ) -> Result<bool> {
        let elem = origin.len();
        if let Loc::Mapped(p) = loc {
            if self.atomics() && (elem == 8 || elem == 4) && (p as usize) & (elem - 1) == 0 {
                let Some(_guard) = self.acc_lock(t, false, wait) else {
                    return Ok(false);
                };
                let mut o = [0u8; 8];
                let mut c = [0u8; 8];
                o[..elem].copy_from_slice(origin);
                c[..elem].copy_from_slice(compare);
                let (o, c) = (u64::from_ne_bytes(o), u64::from_ne_bytes(c));
                if elem == 8 {
                    // SAFETY: one aligned element inside checked window memory, accessed
                    // atomically by every accumulate (see `accumulate`).
                    let a = unsafe { &*p.cast::<AtomicU64>() };
                    let old = a
                        .compare_exchange(c, o, Ordering::AcqRel, Ordering::Acquire)
                        .unwrap_or_else(|v| v);
                    result.copy_from_slice(&old.to_ne_bytes());
                } else {
                    // SAFETY: as above, for a 4-byte element.
                    let a = unsafe { &*p.cast::<AtomicU32>() };
                    let old = a
                        .compare_exchange(c as u32, o as u32, Ordering::AcqRel, Ordering::Acquire)
                        .unwrap_or_else(|v| v);
                    result.copy_from_slice(&old.to_ne_bytes());
                }
                return Ok(true);
            }
        }
        let Some(_guard) = self.acc_lock(t, true, wait) else {
            return Ok(false);
        };
        Self::read(call, loc, result)?;
        if result == compare {
            Self::write(call, loc, origin)?;
        }
        Ok(true)
    }

    /// `MPI_Win_fence`: completes the previous fence epoch and opens the next unless
    /// `NOSUCCEED`. Collective.
    pub(crate) fn fence(&self, assert: i32) -> Result<()> {
        Self::check_assert("win_fence", assert)?;
        {
            let ep = self.epoch();
            if ep.access.is_some() || ep.exposure.is_some() || ep.passive() {
                return Err(err(
                    ErrorClass::RmaSync,
                    "win_fence: a PSCW or lock epoch is still open",
                ));
            }
        }
        // Every operation completed when its call returned: the barrier orders them before
        // everything after the fence.
        Communicator::<Multiple>::from_comm(self.comm.clone()).barrier()?;
        self.epoch().fence = assert & mode::NOSUCCEED == 0;
        Ok(())
    }

    fn ranks(&self, call: &str, group: &[i32]) -> Result<Vec<usize>> {
        group.iter().map(|&r| self.check_rank(call, r)).collect()
    }

    /// `MPI_Win_post`: opens an exposure epoch to the window ranks in `group`.
    pub(crate) fn post(&self, group: &[i32], assert: i32) -> Result<()> {
        Self::check_assert("win_post", assert)?;
        let g = self.ranks("win_post", group)?;
        let mut ep = self.epoch();
        if ep.exposure.is_some() {
            return Err(err(
                ErrorClass::RmaSync,
                "win_post: an exposure epoch is already open",
            ));
        }
        for &o in &g {
            if self.targets[o].off_host {
                // The origin waits on its own host's copy of the counter.
                self.am_sync(o, am::Kind::Post, 0)?;
            } else {
                self.word(self.layout.post(self.me, o))
                    .fetch_add(1, Ordering::Release);
            }
        }
        ep.fence = false;
        ep.exposure = Some(g);
        Ok(())
    }

    /// `MPI_Win_start`: opens an access epoch to the window ranks in `group`, once each has
    /// posted.
    pub(crate) fn start(&self, group: &[i32], assert: i32) -> Result<()> {
        Self::check_assert("win_start", assert)?;
        let g = self.ranks("win_start", group)?;
        let mut ep = self.epoch();
        if ep.access.is_some() {
            return Err(err(
                ErrorClass::RmaSync,
                "win_start: an access epoch is already open",
            ));
        }
        for &t in &g {
            let seen = ep.started[t];
            let w = self.word(self.layout.post(t, self.me));
            self.wait_until(|| w.load(Ordering::Acquire) > seen);
            ep.started[t] = seen + 1;
        }
        ep.fence = false;
        ep.access = Some(g);
        Ok(())
    }

    /// `MPI_Win_complete`: ends the access epoch `start` opened.
    pub(crate) fn complete(&self) -> Result<()> {
        let g = self.epoch().access.take().ok_or_else(|| {
            err(
                ErrorClass::RmaSync,
                "win_complete: no access epoch was started",
            )
        })?;
        for t in g {
            if self.targets[t].off_host {
                // Every operation to `t` has been acknowledged: this one lands after them.
                self.am_sync(t, am::Kind::Done, 0)?;
            } else {
                self.word(self.layout.done(t, self.me))
                    .fetch_add(1, Ordering::Release);
            }
        }
        Ok(())
    }

    fn exposure_done(&self, ep: &Epoch, g: &[usize]) -> bool {
        g.iter().all(|&o| {
            self.word(self.layout.done(self.me, o))
                .load(Ordering::Acquire)
                > ep.waited[o]
        })
    }

    /// `MPI_Win_wait`: ends the exposure epoch once every origin completed.
    pub(crate) fn wait(&self) -> Result<()> {
        let mut ep = self.epoch();
        let g = ep.exposure.take().ok_or_else(|| {
            err(
                ErrorClass::RmaSync,
                "win_wait: no exposure epoch was posted",
            )
        })?;
        self.wait_until(|| self.exposure_done(&ep, &g));
        for o in g {
            ep.waited[o] += 1;
        }
        Ok(())
    }

    /// `MPI_Win_test`: `wait` if every origin completed, otherwise `false`.
    pub(crate) fn test(&self) -> Result<bool> {
        let mut ep = self.epoch();
        let g = ep.exposure.clone().ok_or_else(|| {
            err(
                ErrorClass::RmaSync,
                "win_test: no exposure epoch was posted",
            )
        })?;
        if !self.exposure_done(&ep, &g) {
            drop(ep);
            self.comm.rt.engine.with(|e| {
                e.progress();
            });
            return Ok(false);
        }
        for o in g {
            ep.waited[o] += 1;
        }
        ep.exposure = None;
        Ok(true)
    }

    /// `MPI_Win_lock`.
    pub(crate) fn lock(&self, kind: LockType, target: i32, assert: i32) -> Result<()> {
        Self::check_assert("win_lock", assert)?;
        if target == PROC_NULL {
            return Ok(());
        }
        let t = self.check_rank("win_lock", target)?;
        let mut ep = self.epoch();
        if ep.locks[t].is_some() || ep.lock_all {
            return Err(err(
                ErrorClass::RmaSync,
                format!("win_lock: rank {t} is already locked by this process"),
            ));
        }
        self.lock_word(t, kind)?;
        ep.fence = false;
        ep.locks[t] = Some(kind);
        self.open.locked[t].store(true, Ordering::Relaxed);
        Ok(())
    }

    /// `MPI_Win_unlock`.
    pub(crate) fn unlock(&self, target: i32) -> Result<()> {
        if target == PROC_NULL {
            return Ok(());
        }
        let t = self.check_rank("win_unlock", target)?;
        let kind = {
            let mut ep = self.epoch();
            self.open.locked[t].store(false, Ordering::Relaxed);
            ep.locks[t].take()
        }
        .ok_or_else(|| {
            err(
                ErrorClass::RmaSync,
                format!("win_unlock: rank {t} is not locked by this process"),
            )
        })?;
        self.unlock_word(t, kind)
    }

    /// Takes target `t`'s lock word: directly on this host, else through `t`'s server,
    /// which takes it on this process's behalf.
    fn lock_word(&self, t: usize, kind: LockType) -> Result<()> {
        if self.targets[t].off_host {
            return self.am_sync(t, am::Kind::Lock, am::lock_flags(kind));
        }
        let w = self.word(self.layout.lock(t));
        match kind {
            LockType::Exclusive => self.wait_until(|| ctl::try_lock_exclusive(w)),
            LockType::Shared => self.wait_until(|| ctl::try_lock_shared(w)),
        }
        Ok(())
    }

    /// Releases what [`Self::lock_word`] took.
    fn unlock_word(&self, t: usize, kind: LockType) -> Result<()> {
        if self.targets[t].off_host {
            return self.am_sync(t, am::Kind::Unlock, am::lock_flags(kind));
        }
        let w = self.word(self.layout.lock(t));
        match kind {
            LockType::Exclusive => ctl::unlock_exclusive(w),
            LockType::Shared => ctl::unlock_shared(w),
        }
        Ok(())
    }

    /// `MPI_Win_lock_all`: a shared lock on every member.
    pub(crate) fn lock_all(&self, assert: i32) -> Result<()> {
        Self::check_assert("win_lock_all", assert)?;
        let mut ep = self.epoch();
        if ep.passive() {
            return Err(err(
                ErrorClass::RmaSync,
                "win_lock_all: this process already holds locks on the window",
            ));
        }
        for t in 0..self.size() {
            self.lock_word(t, LockType::Shared)?;
        }
        ep.fence = false;
        ep.lock_all = true;
        Ok(())
    }

    /// `MPI_Win_unlock_all`.
    pub(crate) fn unlock_all(&self) -> Result<()> {
        let mut ep = self.epoch();
        if !ep.lock_all {
            return Err(err(
                ErrorClass::RmaSync,
                "win_unlock_all: lock_all was not called",
            ));
        }
        ep.lock_all = false;
        let mut first = Ok(());
        for t in 0..self.size() {
            let r = self.unlock_word(t, LockType::Shared);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    /// `MPI_Win_flush` and `MPI_Win_flush_local` (`target = None`: the `_all` forms).
    /// Operations are complete when their calls return, so this only checks the epoch and
    /// orders memory.
    pub(crate) fn flush(&self, call: &str, target: Option<i32>) -> Result<()> {
        // A passive epoch open without the mutex: `lock_all`, or `lock` of this target.
        let open = self.open.lock_all.load(Ordering::Relaxed)
            || match target {
                Some(t) if t != PROC_NULL => {
                    let t = self.check_rank(call, t)?;
                    self.open.locked[t].load(Ordering::Relaxed)
                }
                _ => false,
            };
        if open {
            flush_fence();
            return Ok(());
        }
        let ep = self.epoch();
        let ok = match target {
            Some(PROC_NULL) => true,
            Some(t) => {
                let t = self.check_rank(call, t)?;
                ep.lock_all || ep.locks[t].is_some()
            }
            None => ep.passive(),
        };
        if !ok {
            return Err(err(
                ErrorClass::RmaSync,
                format!("{call}: no passive-target epoch (lock) is open"),
            ));
        }
        flush_fence();
        Ok(())
    }

    /// `MPI_Win_sync`: orders this process's loads and stores to the window.
    pub(crate) fn sync(&self) {
        full_fence();
    }

    /// `MPI_Win_attach`: `len` bytes at `addr` become reachable in a dynamic window.
    pub(crate) fn attach(&self, addr: u64, len: usize) -> Result<()> {
        if self.flavor != Flavor::Dynamic {
            return Err(err(
                ErrorClass::RmaFlavor,
                "win_attach: the window is not dynamic",
            ));
        }
        let _ep = self.epoch();
        let mut free = None;
        for i in 0..ctl::MAX_REGIONS {
            let o = self.layout.region(self.me, i);
            let a = self.word(o).load(Ordering::Relaxed);
            let l = self.word(o + 8).load(Ordering::Relaxed);
            if l == 0 {
                free.get_or_insert(o);
            } else if addr < a + l && a < addr + len as u64 {
                return Err(err(
                    ErrorClass::RmaAttach,
                    format!("win_attach: {len} bytes at {addr:#x} overlap memory already attached"),
                ));
            }
        }
        let o = free.ok_or_else(|| {
            err(
                ErrorClass::RmaAttach,
                format!(
                    "win_attach: {} regions are already attached",
                    ctl::MAX_REGIONS
                ),
            )
        })?;
        if len > 0 {
            self.word(o).store(addr, Ordering::Relaxed);
            self.word(o + 8).store(len as u64, Ordering::Release);
        }
        Ok(())
    }

    /// `MPI_Win_detach`: the region attached at `addr` is no longer reachable.
    pub(crate) fn detach(&self, addr: u64) -> Result<()> {
        if self.flavor != Flavor::Dynamic {
            return Err(err(
                ErrorClass::RmaFlavor,
                "win_detach: the window is not dynamic",
            ));
        }
        let _ep = self.epoch();
        for i in 0..ctl::MAX_REGIONS {
            let o = self.layout.region(self.me, i);
            if self.word(o + 8).load(Ordering::Relaxed) > 0
                && self.word(o).load(Ordering::Relaxed) == addr
            {
                self.word(o + 8).store(0, Ordering::Release);
                self.word(o).store(0, Ordering::Relaxed);
                return Ok(());
            }
        }
        Err(err(
            ErrorClass::RmaAttach,
            format!("win_detach: nothing is attached at {addr:#x}"),
        ))
    }

    /// Whether memory at `addr` is still attached (dynamic windows).
    pub(crate) fn attached(&self, addr: u64) -> bool {
        (0..ctl::MAX_REGIONS).any(|i| {
            let o = self.layout.region(self.me, i);
            self.word(o + 8).load(Ordering::Relaxed) > 0
                && self.word(o).load(Ordering::Relaxed) == addr
        })
    }

    /// `MPI_Win_free`: fails with `RmaSync` while a PSCW or lock epoch is open; otherwise
    /// waits until every member stopped using the window. Collective.
    pub(crate) fn free(&self) -> Result<()> {
        {
            let ep = self.epoch();
            if ep.access.is_some() || ep.exposure.is_some() || ep.passive() {
                return Err(err(
                    ErrorClass::RmaSync,
                    "win_free: a PSCW or lock epoch is still open",
                ));
            }
        }
        // Every operation of every member was acknowledged before it entered the barrier:
        // after it, no active message for this window is in flight.
        let r = Communicator::<Multiple>::from_comm(self.comm.clone()).barrier();
        if let Some(a) = &self.am {
            a.stop();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::whole_elements;

    #[test]
    fn whole_elements_by_shift_and_by_division_agree() {
        for elem in 0..=40usize {
            for len in 0..=200usize {
                let want = (elem != 0 && len % elem == 0).then(|| len.checked_div(elem).unwrap());
                assert_eq!(whole_elements(len, elem), want, "len {len}, elem {elem}");
            }
        }
    }
}
