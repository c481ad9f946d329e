//! Collective schedules: a program of sends, receives, waits and local reductions/copies over
//! three byte regions (this rank's input, its output, scratch), built by the pure functions
//! in [`algorithms`](super::algorithms) and run by [`Exec`], either inside the engine's
//! progress loop (nonblocking collectives, via [`Schedule`]) or driven by the caller
//! (blocking collectives, no boxing and no engine registration).
//!
//! Program rules, which every algorithm follows and [`Exec::new`] checks:
//! - sends and receives started since the last [`Step::Wait`] run concurrently; a span sent or
//!   received must not be touched by a local step before the next `Wait`;
//! - the input region is never written (it is only ever seen through `*const` pointers and
//!   shared slices: it may be read-only memory); spans lie inside their region;
//! - between one pair of ranks, messages of one collective match in the order they were
//!   started (all use the collective's tag; transports are FIFO per pair).
//!
//! User reductions (closures that may call MPI) never run inside the engine's critical
//! section: a program reaching a `Reduce` step with a user kernel stops there
//! ([`Advance::Unlocked`]); blocking collectives run the step themselves between engine
//! calls, and the engine parks nonblocking ones until a waiting caller runs it with the
//! engine unlocked (`EngineCell::run_parked`). Predefined operations run in place.

use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::comm::CommCore;
use crate::error::{Error, ErrorClass, Result};
use crate::op::Kernel;
use crate::p2p::engine::{Advance, Engine, RecvStart, Schedule, SendMode};
use crate::p2p::progress::Backoff;
use crate::p2p::request::ReqId;
use crate::p2p::wire::Envelope;
use crate::runtime::Runtime;

/// Which buffer a span lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Region {
    /// This rank's input (read only).
    Send,
    /// This rank's output (also input of in-place and rooted operations like bcast).
    Recv,
    /// Scratch space owned by the schedule.
    Tmp,
}

/// A byte range of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub region: Region,
    pub off: usize,
    pub len: usize,
}

impl Span {
    pub const fn new(region: Region, off: usize, len: usize) -> Span {
        Span { region, off, len }
    }
    /// The sub-range `[at, at + len)` of this span.
    pub fn sub(self, at: usize, len: usize) -> Span {
        debug_assert!(at + len <= self.len, "{self:?} sub({at}, {len})");
        Span {
            region: self.region,
            off: self.off + at,
            len,
        }
    }
    fn end(self) -> usize {
        self.off + self.len
    }
    pub(crate) fn overlaps(self, o: Span) -> bool {
        self.region == o.region && self.off < o.end() && o.off < self.end()
    }
}

/// The rank a message goes to or comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// A rank of the (local group of the) communicator.
    Local(u32),
    /// A rank of an intercommunicator's remote group.
    Remote(u32),
}

/// One instruction of a collective program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Start sending `data` to `to`.
    Send { to: Peer, data: Span },
    /// Start receiving exactly `into.len` bytes (at most) from `from`.
    Recv { from: Peer, into: Span },
    /// Wait for every send and receive started so far.
    Wait,
    /// `dst = src ∘ dst` (`src` holds lower ranks' data), or with `later`, `dst = dst ∘ src`
    /// (`src` holds higher ranks' data; `src` may be overwritten).
    Reduce { src: Span, dst: Span, later: bool },
    /// `dst = src` (skipped when they are the same bytes).
    Copy { src: Span, dst: Span },
    /// Writes `value` (8 bytes, little-endian) to `dst`, an 8-byte span.
    Put { dst: Span, value: u64 },
    /// Checks that the 8-byte span `src` holds `value` (little-endian); ends the program with
    /// an [`ErrorClass::Op`] error otherwise. Used to check that peers passed the same
    /// reduction operation (see `inter`).
    Expect { src: Span, value: u64 },
}

/// A collective program: its steps and how much scratch it needs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Program {
    pub steps: Vec<Step>,
    pub tmp: usize,
}

impl Program {
    /// An empty program (capacity for a few steps).
    pub fn new() -> Program {
        Program {
            steps: Vec::with_capacity(8),
            tmp: 0,
        }
    }
    /// Reserves `len` bytes of scratch, aligned to 16 bytes.
    pub fn scratch(&mut self, len: usize) -> Span {
        let off = self.tmp.next_multiple_of(16);
        self.tmp = off + len;
        Span::new(Region::Tmp, off, len)
    }
    pub fn send(&mut self, to: Peer, data: Span) {
        self.steps.push(Step::Send { to, data });
    }
    pub fn recv(&mut self, from: Peer, into: Span) {
        self.steps.push(Step::Recv { from, into });
    }
    /// A wait, unless the previous step is one already (or there is nothing to wait for).
    pub fn wait(&mut self) {
        if !matches!(self.steps.last(), None | Some(Step::Wait)) {
            self.steps.push(Step::Wait);
        }
    }
    pub fn reduce(&mut self, src: Span, dst: Span, later: bool) {
        debug_assert_eq!(src.len, dst.len);
        if src.len > 0 {
            self.steps.push(Step::Reduce { src, dst, later });
        }
    }
    pub fn copy(&mut self, src: Span, dst: Span) {
        debug_assert_eq!(src.len, dst.len);
        if src.len > 0 && src != dst {
            self.steps.push(Step::Copy { src, dst });
        }
    }
    /// Writes `value` to the 8-byte span `dst` (a [`Step::Put`]).
    pub fn put(&mut self, dst: Span, value: u64) {
        self.steps.push(Step::Put { dst, value });
    }
    /// Fails unless the 8-byte span `src` holds `value` (an [`Step::Expect`]).
    pub fn expect(&mut self, src: Span, value: u64) {
        self.steps.push(Step::Expect { src, value });
    }
    /// Sends to and receives from the same peer, then waits.
    pub fn exchange(&mut self, peer: Peer, data: Span, into: Span) {
        self.send(peer, data);
        self.recv(peer, into);
        self.wait();
    }
}

/// How the operation combines elements (for programs with `Reduce` steps).
#[derive(Clone)]
pub(crate) struct Combine {
    pub kernel: Kernel,
    pub commutative: bool,
}

impl std::fmt::Debug for Combine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Combine {{ commutative: {} }}", self.commutative)
    }
}

impl Combine {
    /// Whether a `Reduce` step with `later` overwrites its source: a non-commutative
    /// operation must combine the other way round (`src = dst ∘ src`) and copy the result.
    #[inline]
    pub fn clobbers(&self, later: bool) -> bool {
        later && !self.commutative
    }

    /// Applies a `Reduce` step that does not clobber its source: `dst = src ∘ dst`, or for a
    /// commutative operation equally `dst ∘ src`.
    #[inline]
    pub fn apply(&self, src: &[u8], dst: &mut [u8]) {
        self.kernel.call(src, dst);
    }

    /// Applies a `later` step of a non-commutative operation: `dst = dst ∘ src`, computed in
    /// `src` (scratch or output, never the input region) and copied to `dst`.
    #[inline]
    pub fn apply_later(&self, src: &mut [u8], dst: &mut [u8]) {
        self.kernel.call(dst, src);
        dst.copy_from_slice(src);
    }
}

/// Marks a [`Raw`] region the schedule only reads (the caller's input, possibly read-only
/// memory).
#[derive(Debug, Clone, Copy)]
pub(crate) struct In;

/// Marks a [`Raw`] region the schedule reads and writes (the caller's output).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Out;

/// A raw region: base pointer and length, valid for the schedule's life (see [`Exec::new`]).
/// Only an `Out` region ever yields a `*mut` pointer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Raw<M> {
    ptr: NonNull<u8>,
    pub len: usize,
    _mode: PhantomData<M>,
}

impl<M> Raw<M> {
    pub const EMPTY: Raw<M> = Raw {
        ptr: NonNull::<u128>::dangling().cast(),
        len: 0,
        _mode: PhantomData,
    };
    /// The base, for reads.
    fn get(self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The base address, to show to another process for its single copies.
    pub(super) fn addr(self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// The region's bytes.
    ///
    /// # Safety
    /// The region must be readable for its length and not written while the slice lives.
    pub(super) unsafe fn bytes<'x>(self) -> &'x [u8] {
        // SAFETY: forwarded from our caller; `ptr` is non-null and, for an empty region,
        // dangling but aligned, which a zero-length slice allows.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Raw<In> {
    pub fn read(s: &[u8]) -> Raw<In> {
        Raw {
            ptr: NonNull::from(s).cast(),
            len: s.len(),
            _mode: PhantomData,
        }
    }
}

impl Raw<Out> {
    pub fn write(s: &mut [u8]) -> Raw<Out> {
        Raw {
            len: s.len(),
            ptr: NonNull::from(s).cast(),
            _mode: PhantomData,
        }
    }
    /// The base, for writes (the pointer came from a `&mut`).
    pub(super) fn get_mut(self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The same region, for reads only.
    pub(super) fn as_read(self) -> Raw<In> {
        Raw {
            ptr: self.ptr,
            len: self.len,
            _mode: PhantomData,
        }
    }
}

/// A running collective program.
pub(crate) struct Exec {
    steps: Vec<Step>,
    pc: usize,
    /// Transfers in flight, with the bytes a receive expects (`usize::MAX` for sends).
    pending: Vec<(ReqId, usize)>,
    send: Raw<In>,
    recv: Raw<Out>,
    tmp: Vec<u128>,
    combine: Option<Combine>,
    /// Members and contexts only: an attribute's `Drop` never runs when a schedule ends.
    comm: Arc<CommCore>,
    tag: i32,
    name: &'static str,
    /// A user step panicked: the next [`step`](Exec::step) fails with this.
    failed: Option<Error>,
}

impl std::fmt::Debug for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exec")
            .field("name", &self.name)
            .field("pc", &self.pc)
            .field("steps", &self.steps.len())
            .field("pending", &self.pending.len())
            .field("tag", &self.tag)
            .finish()
    }
}

/// Scratch storage of `bytes` bytes, 16-byte aligned.
pub(crate) fn aligned(bytes: usize) -> Vec<u128> {
    vec![0u128; bytes.div_ceil(16)]
}

/// Largest scratch a thread keeps between programs, in bytes.
const SPARE_MAX: usize = 16 << 20;

thread_local! {
    /// The scratch of this thread's last finished program, for the next one: a large
    /// collective's scratch was otherwise allocated and zeroed on every call (a 64 KiB
    /// reduce spent longer zeroing than combining). A program reads only scratch it wrote
    /// first, so an earlier program's bytes never reach a result.
    static SPARE: std::cell::Cell<Vec<u128>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Scratch of at least `bytes` bytes: the thread's spare if it is large enough.
fn scratch(bytes: usize) -> Vec<u128> {
    let words = bytes.div_ceil(16);
    if words == 0 {
        return Vec::new();
    }
    // `try_with`: a collective started from another thread-local's destructor finds the
    // spare gone and allocates.
    let spare = SPARE.try_with(|s| s.take()).unwrap_or_default();
    if spare.len() >= words {
        return spare;
    }
    keep_spare(spare);
    aligned(bytes)
}

/// Keeps `tmp` as the thread's spare if it is the larger one and not too large.
fn keep_spare(tmp: Vec<u128>) {
    if tmp.len() * 16 > SPARE_MAX {
        return;
    }
    // `try_with`: during thread teardown the spare may be gone already; then just free.
    let _ = SPARE.try_with(|s| {
        let old = s.take();
        s.set(if tmp.len() > old.len() { tmp } else { old });
    });
}

impl Exec {
    /// Checks `prog` against the regions and prepares to run it.
    ///
    /// # Safety
    /// `send` must be valid for reads and `recv` for reads and writes of their lengths until
    /// the schedule finishes or is dropped, and `recv` must not be accessed otherwise meanwhile.
    /// `send` may alias `recv` only if `prog` never reads the aliased bytes of `send` after
    /// writing them through `recv` (the in-place forms: programs copy input to output first).
    pub unsafe fn new(
        name: &'static str,
        prog: Program,
        send: Raw<In>,
        recv: Raw<Out>,
        combine: Option<Combine>,
        comm: Arc<CommCore>,
        tag: i32,
    ) -> Result<Exec> {
        let tmp = scratch(prog.tmp);
        let len = |r: Region| match r {
            Region::Send => send.len,
            Region::Recv => recv.len,
            Region::Tmp => prog.tmp,
        };
        let bad = |what: &str, s: &Step| {
            Err(Error::new(
                ErrorClass::Intern,
                format!("{name}: invalid schedule step {s:?}: {what}"),
            ))
        };
        let (lsize, rsize) = (
            comm.members.len() as u32,
            comm.remote.as_ref().map_or(0, |r| r.len() as u32),
        );
        for s in &prog.steps {
            let spans: &[(Span, bool)] = match s {
                Step::Send { data, .. } => &[(*data, false)],
                Step::Recv { into, .. } => &[(*into, true)],
                Step::Reduce { src, dst, later } => {
                    // A `later` combination overwrites `src` unless the operation commutes.
                    let clobbers = combine.as_ref().map_or(*later, |c| c.clobbers(*later));
                    &[(*src, clobbers), (*dst, true)]
                }
                Step::Copy { src, dst } => &[(*src, false), (*dst, true)],
                Step::Put { dst, .. } => &[(*dst, true)],
                Step::Expect { src, .. } => &[(*src, false)],
                Step::Wait => &[],
            };
            for &(sp, written) in spans {
                if sp.end() > len(sp.region) {
                    return bad("span outside its region", s);
                }
                if written && sp.region == Region::Send && sp.len > 0 {
                    return bad("writes the input", s);
                }
            }
            match *s {
                Step::Send { to: p, .. } | Step::Recv { from: p, .. } => match p {
                    Peer::Local(r) if r >= lsize => return bad("peer out of range", s),
                    Peer::Remote(r) if r >= rsize => return bad("remote peer out of range", s),
                    _ => {}
                },
                Step::Put { dst: sp, .. } | Step::Expect { src: sp, .. } if sp.len != 8 => {
                    return bad("a value span is not 8 bytes", s);
                }
                Step::Reduce { src, dst, .. } => {
                    if combine.is_none() {
                        return bad("reduction without an operation", s);
                    }
                    if src.overlaps(dst) {
                        return bad("overlapping operands", s);
                    }
                }
                _ => {}
            }
        }
        Ok(Exec {
            steps: prog.steps,
            pc: 0,
            pending: Vec::new(),
            send,
            recv,
            tmp,
            combine,
            comm,
            tag,
            name,
            failed: None,
        })
    }

    /// Makes room for the most transfers the program has in flight at once (its sends and
    /// receives between two waits), so that the runs of a kept program never grow it.
    pub(crate) fn reserve_in_flight(&mut self) {
        let most = self
            .steps
            .split(|s| *s == Step::Wait)
            .map(|run| {
                run.iter()
                    .filter(|s| matches!(s, Step::Send { .. } | Step::Recv { .. }))
                    .count()
            })
            .max()
            .unwrap_or(0);
        self.pending.reserve_exact(most);
    }

    /// Prepares a finished program to run again with tag `tag` (persistent collectives):
    /// the steps, scratch and checks of [`new`](Self::new) are kept, so this allocates
    /// nothing. Fails while transfers of an earlier run that failed are still in flight.
    pub fn restart(&mut self, tag: i32) -> Result<()> {
        if !self.pending.is_empty() {
            return Err(Error::new(
                ErrorClass::Request,
                format!(
                    "{}: an earlier run of the persistent collective failed with transfers in flight",
                    self.name
                ),
            ));
        }
        self.pc = 0;
        self.failed = None;
        self.tag = tag;
        Ok(())
    }

    /// Where span `s` starts, for reading.
    fn src(&self, s: Span) -> *const u8 {
        let base = match s.region {
            Region::Send => self.send.get(),
            Region::Recv => self.recv.get(),
            Region::Tmp => self.tmp.as_ptr().cast::<u8>(),
        };
        if s.len == 0 {
            return base;
        }
        // SAFETY: `new` checked that the span lies inside its region.
        unsafe { base.add(s.off) }
    }

    /// Where span `s` starts, for writing; `new` checked that no written span lies in the
    /// input region.
    fn dst(&mut self, s: Span) -> *mut u8 {
        let base = match s.region {
            Region::Send => unreachable!("{}: write to the input region {s:?}", self.name),
            Region::Recv => self.recv.get_mut(),
            Region::Tmp => self.tmp.as_mut_ptr().cast::<u8>(),
        };
        if s.len == 0 {
            return base;
        }
        // SAFETY: `new` checked that the span lies inside its region.
        unsafe { base.add(s.off) }
    }

    /// Runs one `Reduce` step.
    fn reduce(&mut self, src: Span, dst: Span, later: bool) {
        let clobbers = match &self.combine {
            Some(c) => c.clobbers(later),
            None => unreachable!("checked in Exec::new"),
        };
        let pd = self.dst(dst);
        // `src` is written only when the step clobbers it, which `new` allows only outside
        // the input region.
        let ps_mut = clobbers.then(|| self.dst(src));
        let ps = self.src(src);
        let Some(c) = &self.combine else {
            unreachable!("checked in Exec::new")
        };
        // SAFETY: both spans are in bounds and do not overlap (checked in `new`); no transfer
        // uses them (program rule: reductions follow a Wait); a `&mut` is made only over
        // pointers from `dst`, i.e. over the output or scratch.
        unsafe {
            let d = std::slice::from_raw_parts_mut(pd, dst.len);
            match ps_mut {
                Some(p) => c.apply_later(std::slice::from_raw_parts_mut(p, src.len), d),
                None => c.apply(std::slice::from_raw_parts(ps, src.len), d),
            }
        }
    }

    /// Whether the operation is user code (steps and drop with the engine unlocked).
    pub(crate) fn user_op(&self) -> bool {
        self.combine.as_ref().is_some_and(|c| c.kernel.is_user())
    }

    /// World rank and context id of `p`.
    fn route(&self, p: Peer) -> (u32, u32) {
        let c = &self.comm;
        match p {
            Peer::Local(r) => (c.members[r as usize], c.local_context + 1),
            Peer::Remote(r) => (
                c.remote.as_ref().map_or(0, |g| g[r as usize]),
                c.context + 1,
            ),
        }
    }

    fn check(&self, st: crate::p2p::request::Status, expect: usize) -> Result<()> {
        match st.error {
            None if expect == usize::MAX || st.bytes == expect as u64 => Ok(()),
            None => Err(Error::new(
                ErrorClass::Count,
                format!(
                    "{}: rank {} sent {} bytes where this rank expects {expect} (counts differ between ranks)",
                    self.name, st.source, st.bytes
                ),
            )),
            Some(ErrorClass::Truncate) => Err(Error::new(
                ErrorClass::Truncate,
                format!(
                    "{}: rank {} sent more data than this rank expects (counts differ between ranks)",
                    self.name, st.source
                ),
            )),
            Some(c) => Err(Error::new(c, format!("{}: a message of the collective failed", self.name))),
        }
    }

    /// Runs as far as possible without blocking, stopping before a user reduction
    /// ([`Advance::Unlocked`]: run it with [`run_unlocked`](Schedule::run_unlocked)).
    /// After an error, pending receives are cancelled (their buffers may go away).
    pub fn step(&mut self, e: &mut Engine) -> Result<Advance> {
        let r = match self.failed.take() {
            Some(err) => Err(err),
            None => self.step_inner(e),
        };
        if r.is_err() {
            for &(id, _) in &self.pending {
                e.cancel(id);
            }
        }
        r
    }

    fn step_inner(&mut self, e: &mut Engine) -> Result<Advance> {
        loop {
            if self.pc == self.steps.len() || self.steps[self.pc] == Step::Wait {
                let mut i = 0;
                while i < self.pending.len() {
                    match e.test(self.pending[i].0) {
                        Some(st) => {
                            let (_, expect) = self.pending.swap_remove(i);
                            self.check(st, expect)?;
                        }
                        None => i += 1,
                    }
                }
                if !self.pending.is_empty() {
                    return Ok(Advance::Running);
                }
                if self.pc == self.steps.len() {
                    return Ok(Advance::Done);
                }
                self.pc += 1;
                continue;
            }
            let s = self.steps[self.pc];
            self.pc += 1;
            match s {
                Step::Send { to, data } => {
                    let (world, ctx) = self.route(to);
                    let env = Envelope {
                        ctx,
                        src: self.comm.rank,
                        tag: self.tag,
                    };
                    let p = self.src(data);
                    // SAFETY: `p` is valid for `data.len` bytes (checked in `new`) until the
                    // program's next Wait, which this schedule reaches before finishing.
                    if let Some(id) =
                        unsafe { e.isend(SendMode::Collective, p, data.len, world, env) }?
                    {
                        self.pending.push((id, usize::MAX));
                    }
                }
                Step::Recv { from, into } => {
                    let (_, ctx) = self.route(from);
                    let src = match from {
                        Peer::Local(r) | Peer::Remote(r) => r as i32,
                    };
                    let p = self.dst(into);
                    // SAFETY: as for sends; the span is not touched until the next Wait.
                    match unsafe { e.irecv(p, into.len, ctx, src, self.tag) }? {
                        RecvStart::Done(st) => self.check(st, into.len)?,
                        RecvStart::Pending(id) => self.pending.push((id, into.len)),
                    }
                }
                Step::Reduce { src, dst, later } => {
                    if self.user_op() {
                        self.pc -= 1;
                        return Ok(Advance::Unlocked);
                    }
                    self.reduce(src, dst, later);
                }
                Step::Copy { src, dst } => {
                    let (ps, pd) = (self.src(src), self.dst(dst));
                    if ps != pd.cast_const() {
                        // SAFETY: both spans are in bounds; `copy` allows overlap.
                        unsafe { std::ptr::copy(ps, pd, src.len) };
                    }
                }
                Step::Put { dst, value } => {
                    let pd = self.dst(dst);
                    // SAFETY: `dst` is an 8-byte span in bounds (checked in `new`) that no
                    // transfer uses (program rule: local steps follow a Wait).
                    unsafe { std::ptr::copy_nonoverlapping(value.to_le_bytes().as_ptr(), pd, 8) };
                }
                Step::Expect { src, value } => {
                    let mut got = [0u8; 8];
                    let ps = self.src(src);
                    // SAFETY: as for `Put`.
                    unsafe { std::ptr::copy_nonoverlapping(ps, got.as_mut_ptr(), 8) };
                    if u64::from_le_bytes(got) != value {
                        return Err(Error::new(
                            ErrorClass::Op,
                            format!(
                                "{}: the processes passed different reduction operations",
                                self.name
                            ),
                        ));
                    }
                }
                Step::Wait => unreachable!("handled above"),
            }
        }
    }
}

impl Schedule for Exec {
    fn advance(&mut self, e: &mut Engine) -> Result<Advance> {
        self.step(e)
    }

    fn run_unlocked(&mut self) -> std::thread::Result<()> {
        let r = catch_unwind(AssertUnwindSafe(|| {
            while let Some(&Step::Reduce { src, dst, later }) = self.steps.get(self.pc) {
                self.pc += 1;
                self.reduce(src, dst, later);
            }
        }));
        if r.is_err() {
            self.failed = Some(Error::new(
                ErrorClass::Other,
                format!("{}: the user reduction operation panicked", self.name),
            ));
        }
        r
    }

    fn drops_user_code(&self) -> bool {
        self.user_op()
    }

    fn restart(&mut self, tag: i32) -> Result<()> {
        Exec::restart(self, tag)
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        // A schedule dropped early (an error ended it) may still have transfers into its
        // scratch space in flight. Receives are cancelled; sends complete on their own, so
        // keep their buffer alive by leaking it rather than freeing memory a peer may read.
        let tmp = std::mem::take(&mut self.tmp);
        if self.pending.is_empty() {
            keep_spare(tmp);
        } else {
            std::mem::forget(tmp);
        }
    }
}

/// Runs `exec` to completion from the calling thread (blocking collectives), spinning on the
/// engine and then backing off like every blocking wait. User reductions run between engine
/// calls, with the engine unlocked, as do other schedules' parked user steps.
pub(crate) fn run(rt: &Runtime, exec: &mut Exec) -> Result<()> {
    let mut backoff = Backoff::new(rt.wait);
    loop {
        let (adv, worked) = rt.engine.with(|e| -> Result<(Advance, bool)> {
            // A fault found while this collective waits names it.
            e.enter(exec.name);
            match exec.step(e)? {
                Advance::Running => {}
                a => return Ok((a, true)),
            }
            let n = e.progress();
            Ok((exec.step(e)?, n > 0))
        })?;
        match adv {
            Advance::Done => return Ok(()),
            Advance::Unlocked => {
                if let Err(p) = exec.run_unlocked() {
                    // The panic is recorded: this step fails and cancels the receives still
                    // pointing into the caller's buffers before the panic leaves the call.
                    let _ = rt.engine.with(|e| exec.step(e));
                    std::panic::resume_unwind(p);
                }
                continue;
            }
            Advance::Running => {}
        }
        if rt.engine.run_parked() || worked {
            backoff.reset();
        }
        backoff.snooze();
    }
}

#[cfg(test)]
pub(crate) mod sim {
    //! A simulated network for testing programs without processes: every rank's program runs
    //! against FIFO queues per ordered pair, with eager (never blocking) sends.

    use std::collections::VecDeque;

    use super::*;

    /// One rank's buffers.
    #[derive(Debug, Clone, Default)]
    pub struct Bufs {
        pub send: Vec<u8>,
        pub recv: Vec<u8>,
    }

    /// Runs `progs[r]` for every rank `r` (intracommunicator peers only); panics on deadlock,
    /// on a size mismatch, or on an invalid step.
    pub fn run(progs: &[Program], bufs: &mut [Bufs], combine: Option<&Combine>) {
        let p = progs.len();
        // Scratch starts as garbage, as a reused spare does: a program that read scratch it had
        // not written would fail its test.
        let mut tmp: Vec<Vec<u8>> = progs.iter().map(|g| vec![0xA5u8; g.tmp]).collect();
        let mut pc = vec![0usize; p];
        let mut queues: Vec<VecDeque<Vec<u8>>> = vec![VecDeque::new(); p * p];
        let mut posted: Vec<Vec<(usize, Span)>> = vec![Vec::new(); p];
        loop {
            let mut moved = false;
            let mut all_done = true;
            for r in 0..p {
                loop {
                    let at_wait =
                        pc[r] == progs[r].steps.len() || progs[r].steps[pc[r]] == Step::Wait;
                    if at_wait {
                        // Match posted receives in order, per source.
                        let mut still = Vec::new();
                        for &(from, into) in &posted[r] {
                            let blocked_earlier =
                                still.iter().any(|&(f, _): &(usize, Span)| f == from);
                            match (!blocked_earlier)
                                .then(|| queues[from * p + r].pop_front())
                                .flatten()
                            {
                                Some(msg) => {
                                    assert!(
                                        msg.len() <= into.len,
                                        "rank {r}: {} bytes from {from} into {into:?}",
                                        msg.len()
                                    );
                                    let dst = region(&mut bufs[r], &mut tmp[r], into.region);
                                    dst[into.off..into.off + msg.len()].copy_from_slice(&msg);
                                    moved = true;
                                }
                                None => still.push((from, into)),
                            }
                        }
                        posted[r] = still;
                        if !posted[r].is_empty() || pc[r] == progs[r].steps.len() {
                            break;
                        }
                        pc[r] += 1;
                        continue;
                    }
                    let s = progs[r].steps[pc[r]];
                    pc[r] += 1;
                    moved = true;
                    match s {
                        Step::Send {
                            to: Peer::Local(to),
                            data,
                        } => {
                            let b = region(&mut bufs[r], &mut tmp[r], data.region);
                            queues[r * p + to as usize].push_back(b[data.off..data.end()].to_vec());
                        }
                        Step::Recv {
                            from: Peer::Local(from),
                            into,
                        } => posted[r].push((from as usize, into)),
                        Step::Reduce { src, dst, later } => {
                            let mut a = aligned_copy(
                                &region(&mut bufs[r], &mut tmp[r], src.region)[src.off..src.end()],
                            );
                            let mut b = aligned_copy(
                                &region(&mut bufs[r], &mut tmp[r], dst.region)[dst.off..dst.end()],
                            );
                            let a = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut a)[..src.len];
                            let b = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut b)[..dst.len];
                            let c = combine.expect("operation");
                            if c.clobbers(later) {
                                assert_ne!(
                                    src.region,
                                    Region::Send,
                                    "rank {r}: clobbers the input"
                                );
                                c.apply_later(a, b);
                            } else {
                                c.apply(a, b);
                            }
                            if later {
                                region(&mut bufs[r], &mut tmp[r], src.region)[src.off..src.end()]
                                    .copy_from_slice(a);
                            }
                            region(&mut bufs[r], &mut tmp[r], dst.region)[dst.off..dst.end()]
                                .copy_from_slice(b);
                        }
                        Step::Copy { src, dst } => {
                            let a = region(&mut bufs[r], &mut tmp[r], src.region)
                                [src.off..src.end()]
                                .to_vec();
                            region(&mut bufs[r], &mut tmp[r], dst.region)[dst.off..dst.end()]
                                .copy_from_slice(&a);
                        }
                        Step::Put { dst, value } => {
                            region(&mut bufs[r], &mut tmp[r], dst.region)[dst.off..dst.end()]
                                .copy_from_slice(&value.to_le_bytes());
                        }
                        Step::Expect { src, value } => {
                            let b = region(&mut bufs[r], &mut tmp[r], src.region);
                            assert_eq!(b[src.off..src.end()], value.to_le_bytes(), "rank {r}");
                        }
                        other => panic!("unexpected step {other:?}"),
                    }
                }
                if pc[r] < progs[r].steps.len() || !posted[r].is_empty() {
                    all_done = false;
                }
            }
            if all_done {
                break;
            }
            assert!(moved, "deadlock: pcs {pc:?}, posted {posted:?}");
        }
        for (q, i) in queues.iter().zip(0..) {
            assert!(q.is_empty(), "unreceived message {} -> {}", i / p, i % p);
        }
    }

    /// `bytes` in 16-byte-aligned storage, as the executor's operands are: kernels view them
    /// as elements, and a `Vec<u8>` is only byte-aligned (Miri's allocator shows it).
    fn aligned_copy(bytes: &[u8]) -> Vec<u128> {
        let mut v = aligned(bytes.len());
        bytemuck::cast_slice_mut::<u128, u8>(&mut v)[..bytes.len()].copy_from_slice(bytes);
        v
    }

    fn region<'a>(b: &'a mut Bufs, tmp: &'a mut [u8], r: Region) -> &'a mut [u8] {
        match r {
            Region::Send => &mut b.send,
            Region::Recv => &mut b.recv,
            Region::Tmp => tmp,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Schedules on a real one-rank engine (sends to itself): user steps run with the engine
    //! unlocked, and the input region is only ever read.

    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Weak;

    use super::*;
    use crate::comm::CommState;
    use crate::op::Op;
    use crate::p2p::progress::EngineCell;

    fn cell(locked: bool) -> Arc<EngineCell> {
        let engine = Engine::new(0, 1, None, &[]);
        Arc::new(EngineCell::new(engine, locked))
    }

    fn comm() -> Arc<CommCore> {
        CommState::new(0, 0, vec![0], Vec::new()).core.clone()
    }

    /// `recv = send ∘ send`: the input goes to the output, to itself through the engine into
    /// scratch, and is combined from there (a Reduce step after transfers).
    fn self_reduce(n: usize) -> Program {
        let mut p = Program::new();
        let t = p.scratch(n);
        p.copy(Span::new(Region::Send, 0, n), Span::new(Region::Recv, 0, n));
        p.exchange(Peer::Local(0), Span::new(Region::Send, 0, n), t);
        p.reduce(t, Span::new(Region::Recv, 0, n), false);
        p
    }

    /// The schedule of [`self_reduce`] over `send` and `recv` with `c`, tagged `tag`.
    ///
    /// # Safety
    /// `send` and `recv` must outlive the schedule (run it to its end before they go).
    unsafe fn self_reduce_exec(send: &[u32], recv: &mut [u32], c: Combine, tag: i32) -> Exec {
        // SAFETY: the caller keeps both buffers alive while the schedule runs.
        unsafe {
            Exec::new(
                "test",
                self_reduce(size_of_val(send)),
                Raw::read(bytemuck::cast_slice(send)),
                Raw::write(bytemuck::cast_slice_mut(recv)),
                Some(c),
                comm(),
                tag,
            )
        }
        .unwrap()
    }

    /// Drives schedule `id` like a wait loop does; panics if it does not finish.
    fn wait(cell: &EngineCell, id: ReqId) -> crate::p2p::request::Status {
        for _ in 0..1000 {
            cell.run_parked();
            let st = cell.with(|e| {
                // A schedule's error also comes back from progress (that is not what this
                // helper checks): the request's status carries it.
                let _ = e.progress();
                e.test(id)
            });
            if let Some(st) = st {
                return st;
            }
        }
        panic!("schedule did not finish");
    }

    /// Calls into the engine the way a user closure calling MPI does.
    fn touch(cell: &Weak<EngineCell>) -> usize {
        let c = cell.upgrade().expect("engine alive");
        c.with(|e| e.live_requests())
    }

    #[test]
    fn user_reduction_calling_into_the_engine_runs_unlocked() {
        for locked in [false, true] {
            let cell = cell(locked);
            let (weak, calls) = (Arc::downgrade(&cell), Arc::new(AtomicUsize::new(0)));
            let seen = calls.clone();
            let op = Op::user::<u32>(false, move |a, b| {
                // Re-entry would panic (EngineCell's check), failing the schedule.
                touch(&weak);
                seen.fetch_add(1, Ordering::Relaxed);
                for (y, x) in b.iter_mut().zip(a) {
                    *y = y.wrapping_mul(3).wrapping_add(*x);
                }
            });
            let send: Vec<u32> = (0..100).collect();
            let mut recv = vec![0u32; 100];
            let c = crate::coll::combine::<u32>(&op).unwrap();
            // SAFETY: `send` and `recv` outlive the schedule, which `wait` runs to the end.
            let exec = unsafe { self_reduce_exec(&send, &mut recv, c, 7) };
            let id = cell.with(|e| e.start_schedule(Box::new(exec))).unwrap();
            assert!(wait(&cell, id).error.is_none());
            let want: Vec<u32> = send.iter().map(|&x| x * 3 + x).collect();
            assert_eq!(recv, want, "locked {locked}");
            assert_eq!(calls.load(Ordering::Relaxed), 1);
        }
    }

    #[test]
    fn a_thread_keeps_its_largest_scratch_for_the_next_program() {
        let a = scratch(1000);
        let at = a.as_ptr();
        keep_spare(a);
        let b = scratch(500);
        assert_eq!(b.as_ptr(), at, "a smaller program takes the spare");
        let c = scratch(2000);
        assert!(c.len() * 16 >= 2000);
        let ct = c.as_ptr();
        keep_spare(b);
        keep_spare(c);
        let d = scratch(1900);
        assert_eq!(d.as_ptr(), ct, "the larger of two is kept");
        keep_spare(d);
        keep_spare(aligned(SPARE_MAX + 16));
        let kept = SPARE.with(|s| s.take());
        assert_eq!(
            kept.as_ptr(),
            ct,
            "scratch beyond SPARE_MAX is freed, not kept"
        );
        assert!(scratch(0).is_empty());
    }

    #[test]
    fn programs_reusing_scratch_compute_from_their_own_data() {
        let cell = cell(false);
        let c = crate::coll::combine::<u32>(&Op::Sum).unwrap();
        for round in 0..3u32 {
            let send: Vec<u32> = (0..64).map(|i| i * 7 + round).collect();
            let mut recv = vec![0u32; 64];
            // SAFETY: `send` and `recv` outlive the schedule, which `wait` runs to the end.
            let exec = unsafe { self_reduce_exec(&send, &mut recv, c.clone(), 9 + round as i32) };
            let id = cell.with(|e| e.start_schedule(Box::new(exec))).unwrap();
            assert!(wait(&cell, id).error.is_none());
            cell.run_parked();
            let want: Vec<u32> = send.iter().map(|&x| 2 * x).collect();
            assert_eq!(recv, want, "round {round}");
        }
    }

    #[test]
    fn a_kept_program_has_room_for_its_most_transfers_between_waits() {
        let c = crate::coll::combine::<u32>(&Op::Sum).unwrap();
        let (send, mut recv) = (vec![1u32; 8], vec![0u32; 8]);
        // SAFETY: the schedule is never started.
        let mut exec = unsafe { self_reduce_exec(&send, &mut recv, c, 5) };
        // `self_reduce`: one send and one receive, then a wait.
        assert_eq!(exec.pending.capacity(), 0);
        exec.reserve_in_flight();
        assert!(exec.pending.capacity() >= 2);
    }

    /// Holds the engine weakly and calls into it when dropped.
    struct CallsOnDrop(Weak<EngineCell>, Arc<AtomicBool>);

    impl Drop for CallsOnDrop {
        fn drop(&mut self) {
            touch(&self.0);
            self.1.store(true, Ordering::Relaxed);
        }
    }

    #[test]
    fn finished_user_schedules_are_dropped_unlocked() {
        for locked in [false, true] {
            let cell = cell(locked);
            let dropped = Arc::new(AtomicBool::new(false));
            let probe = CallsOnDrop(Arc::downgrade(&cell), dropped.clone());
            let op = Op::user::<u32>(true, move |a, b| {
                let _ = &probe;
                for (y, x) in b.iter_mut().zip(a) {
                    *y += *x;
                }
            });
            let c = crate::coll::combine::<u32>(&op).unwrap();
            drop(op); // the schedule now holds the only reference to the closure
            let send = [5u32; 4];
            let mut recv = [0u32; 4];
            // SAFETY: as above.
            let exec = unsafe { self_reduce_exec(&send, &mut recv, c, 8) };
            let id = cell.with(|e| e.start_schedule(Box::new(exec))).unwrap();
            assert!(wait(&cell, id).error.is_none());
            assert_eq!(recv, [10; 4]);
            // Dropped by the next waiter, outside the engine (a drop inside would panic).
            cell.run_parked();
            assert!(dropped.load(Ordering::Relaxed), "locked {locked}");
            assert!(cell.with(|e| e.unlocked_work().is_empty()));
        }
    }

    #[test]
    fn a_panicking_user_step_fails_its_schedule() {
        let cell = cell(false);
        let op = Op::user::<u32>(true, |_, _| panic!("user op fails"));
        let (send, mut recv) = ([1u32; 4], [0u32; 4]);
        // SAFETY: as above.
        let c = crate::coll::combine::<u32>(&op).unwrap();
        let exec = unsafe { self_reduce_exec(&send, &mut recv, c, 9) };
        let id = cell.with(|e| e.start_schedule(Box::new(exec))).unwrap();
        let caught = std::panic::catch_unwind(AssertUnwindSafe(|| wait(&cell, id)));
        assert!(caught.is_err(), "the user's panic reaches the waiter");
        // The schedule went back into the engine with the panic as its error.
        let st = wait(&cell, id);
        assert_eq!(st.error, Some(ErrorClass::Other));
    }

    /// Read-only memory: writing through any pointer into it would fault.
    static INPUT: [u32; 64] = {
        let mut a = [0u32; 64];
        let mut i = 0;
        while i < 64 {
            a[i] = i as u32 * 7;
            i += 1;
        }
        a
    };

    #[test]
    fn reductions_read_a_static_input_in_both_argument_orders() {
        let cell = cell(false);
        let n = 256;
        let mut p = Program::new();
        let (input, out) = (Span::new(Region::Send, 0, n), Span::new(Region::Recv, 0, n));
        let t = p.scratch(n);
        p.exchange(Peer::Local(0), input, t);
        p.copy(t, out);
        p.reduce(input, out, false);
        // A commutative `later` combination takes its source from the input as it is.
        p.reduce(input, out, true);
        let mut recv = [0u32; 64];
        // SAFETY: `INPUT` is static; `recv` outlives the schedule.
        let exec = unsafe {
            Exec::new(
                "test",
                p,
                Raw::read(bytemuck::cast_slice(&INPUT)),
                Raw::write(bytemuck::cast_slice_mut(&mut recv)),
                Some(crate::coll::combine::<u32>(&Op::Sum).unwrap()),
                comm(),
                10,
            )
        }
        .unwrap();
        let id = cell.with(|e| e.start_schedule(Box::new(exec))).unwrap();
        assert!(wait(&cell, id).error.is_none());
        let want: Vec<u32> = INPUT.iter().map(|x| 3 * x).collect();
        assert_eq!(recv[..], want[..]);
    }

    #[test]
    fn a_clobbering_step_over_the_input_is_rejected() {
        let mut p = Program::new();
        let t = p.scratch(16);
        p.reduce(Span::new(Region::Send, 0, 16), t, true);
        let send = [0u8; 16];
        let noncommutative = crate::coll::combine::<u32>(&Op::Replace).unwrap();
        // SAFETY: the program is rejected before anything runs.
        let r = unsafe {
            Exec::new(
                "test",
                p,
                Raw::read(&send),
                Raw::EMPTY,
                Some(noncommutative),
                comm(),
                11,
            )
        };
        assert_eq!(r.unwrap_err().class(), ErrorClass::Intern);
    }
}
