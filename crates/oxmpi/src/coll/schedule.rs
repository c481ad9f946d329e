//! Collective schedules: a program of sends, receives, waits and local reductions/copies over
//! three byte regions (this rank's input, its output, scratch), built by the pure functions
//! in [`algorithms`](super::algorithms) and run by [`Exec`], either inside the engine's
//! progress loop (nonblocking collectives, via [`Schedule`]) or driven by the caller
//! (blocking collectives, no boxing and no engine registration).
//!
//! Program rules, which every algorithm follows and [`Exec::new`] checks:
//! - sends and receives started since the last [`Step::Wait`] run concurrently; a span sent or
//!   received must not be touched by a local step before the next `Wait`;
//! - the input region is never written; spans lie inside their region;
//! - between one pair of ranks, messages of one collective match in the order they were
//!   started (all use the collective's tag; transports are FIFO per pair).

use std::sync::Arc;

use crate::comm::CommState;
use crate::error::{Error, ErrorClass, Result};
use crate::op::Kernel;
use crate::p2p::engine::{Engine, RecvStart, Schedule, SendMode};
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
    fn overlaps(self, o: Span) -> bool {
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
    /// Applies one `Reduce` step to byte slices: `dst = src ∘ dst`, or `dst = dst ∘ src`.
    pub fn apply(&self, src: &mut [u8], dst: &mut [u8], later: bool) {
        if !later || self.commutative {
            self.kernel.call(src, dst);
        } else {
            self.kernel.call(dst, src);
            dst.copy_from_slice(src);
        }
    }
}

/// A raw region: base pointer and length, valid for the schedule's life (see [`Exec::new`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Raw {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Raw {
    pub const EMPTY: Raw = Raw {
        ptr: std::ptr::NonNull::<u128>::dangling().as_ptr().cast(),
        len: 0,
    };
    pub fn read(s: &[u8]) -> Raw {
        Raw {
            ptr: s.as_ptr().cast_mut(),
            len: s.len(),
        }
    }
    pub fn write(s: &mut [u8]) -> Raw {
        Raw {
            ptr: s.as_mut_ptr(),
            len: s.len(),
        }
    }
}

/// A running collective program.
pub(crate) struct Exec {
    steps: Vec<Step>,
    pc: usize,
    /// Transfers in flight, with the bytes a receive expects (`usize::MAX` for sends).
    pending: Vec<(ReqId, usize)>,
    send: Raw,
    recv: Raw,
    tmp: Vec<u128>,
    combine: Option<Combine>,
    comm: Arc<CommState>,
    tag: i32,
    name: &'static str,
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
        send: Raw,
        recv: Raw,
        combine: Option<Combine>,
        comm: Arc<CommState>,
        tag: i32,
    ) -> Result<Exec> {
        let tmp = aligned(prog.tmp);
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
                    let clobbers = *later && !combine.as_ref().is_some_and(|c| c.commutative);
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
        })
    }

    fn ptr(&mut self, s: Span) -> *mut u8 {
        let base = match s.region {
            Region::Send => self.send.ptr,
            Region::Recv => self.recv.ptr,
            Region::Tmp => self.tmp.as_mut_ptr().cast::<u8>(),
        };
        if s.len == 0 {
            return base;
        }
        // SAFETY: `new` checked that the span lies inside its region.
        unsafe { base.add(s.off) }
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

    /// Runs as far as possible without blocking; `Ok(true)` once the program has finished.
    /// After an error, pending receives are cancelled (their buffers may go away).
    pub fn step(&mut self, e: &mut Engine) -> Result<bool> {
        let r = self.step_inner(e);
        if r.is_err() {
            for &(id, _) in &self.pending {
                e.cancel(id);
            }
        }
        r
    }

    fn step_inner(&mut self, e: &mut Engine) -> Result<bool> {
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
                    return Ok(false);
                }
                if self.pc == self.steps.len() {
                    return Ok(true);
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
                    let p = self.ptr(data);
                    // SAFETY: `p` is valid for `data.len` bytes (checked in `new`) until the
                    // program's next Wait, which this schedule reaches before finishing.
                    if let Some(id) =
                        unsafe { e.isend(SendMode::Standard, p, data.len, world, env) }?
                    {
                        self.pending.push((id, usize::MAX));
                    }
                }
                Step::Recv { from, into } => {
                    let (_, ctx) = self.route(from);
                    let src = match from {
                        Peer::Local(r) | Peer::Remote(r) => r as i32,
                    };
                    let p = self.ptr(into);
                    // SAFETY: as for sends; the span is not touched until the next Wait.
                    match unsafe { e.irecv(p, into.len, ctx, src, self.tag) }? {
                        RecvStart::Done(st) => self.check(st, into.len)?,
                        RecvStart::Pending(id) => self.pending.push((id, into.len)),
                    }
                }
                Step::Reduce { src, dst, later } => {
                    let (ps, pd) = (self.ptr(src), self.ptr(dst));
                    // SAFETY: both spans are in bounds and do not overlap (checked in `new`);
                    // no transfer uses them (program rule: reductions follow a Wait).
                    let (a, b) = unsafe {
                        (
                            std::slice::from_raw_parts_mut(ps, src.len),
                            std::slice::from_raw_parts_mut(pd, dst.len),
                        )
                    };
                    match &self.combine {
                        Some(c) => c.apply(a, b, later),
                        None => unreachable!("checked in Exec::new"),
                    }
                }
                Step::Copy { src, dst } => {
                    let (ps, pd) = (self.ptr(src), self.ptr(dst));
                    if ps != pd {
                        // SAFETY: both spans are in bounds; `copy` allows overlap.
                        unsafe { std::ptr::copy(ps, pd, src.len) };
                    }
                }
                Step::Put { dst, value } => {
                    let pd = self.ptr(dst);
                    // SAFETY: `dst` is an 8-byte span in bounds (checked in `new`) that no
                    // transfer uses (program rule: local steps follow a Wait).
                    unsafe { std::ptr::copy_nonoverlapping(value.to_le_bytes().as_ptr(), pd, 8) };
                }
                Step::Expect { src, value } => {
                    let mut got = [0u8; 8];
                    let ps = self.ptr(src);
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
    fn advance(&mut self, e: &mut Engine) -> Result<bool> {
        self.step(e)
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        // A schedule dropped early (an error ended it) may still have transfers into its
        // scratch space in flight. Receives are cancelled; sends complete on their own, so
        // keep their buffer alive by leaking it rather than freeing memory a peer may read.
        if !self.pending.is_empty() {
            std::mem::forget(std::mem::take(&mut self.tmp));
        }
    }
}

/// Runs `exec` to completion from the calling thread (blocking collectives), spinning on the
/// engine and then backing off like every blocking wait.
pub(crate) fn run(rt: &Runtime, exec: &mut Exec) -> Result<()> {
    let mut backoff = Backoff::new(rt.wait);
    loop {
        let (done, worked) = rt.engine.with(|e| -> Result<(bool, bool)> {
            if exec.step(e)? {
                return Ok((true, true));
            }
            let n = e.progress()?;
            Ok((exec.step(e)?, n > 0))
        })?;
        if done {
            return Ok(());
        }
        if worked {
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
        let mut tmp: Vec<Vec<u8>> = progs.iter().map(|g| vec![0u8; g.tmp]).collect();
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
                            combine.expect("operation").apply(a, b, later);
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
mod exec_tests {
    //! The executor itself (the simulation above stands in for it elsewhere) on a one-rank
    //! communicator: its raw-pointer steps over the caller's buffers and its scratch, and
    //! messages to itself through a real engine. No system calls, so Miri checks every pointer.

    use super::*;
    use crate::coll::algorithms::testing::sum;
    use crate::config::Config;
    use crate::p2p::engine::Route;
    use crate::p2p::protocol::Thresholds;

    fn engine() -> Engine {
        let limits = Thresholds::from_config(&Config::default());
        Engine::new(0, vec![Route::SelfLoop], None, limits)
    }

    fn comm() -> Arc<CommState> {
        Arc::new(CommState::new(4, 0, vec![0], Vec::new()))
    }

    /// Runs `exec` to its end, or returns its error.
    fn finish(exec: &mut Exec, e: &mut Engine) -> Result<()> {
        for _ in 0..100 {
            if exec.step(e)? {
                return Ok(());
            }
            e.progress()?;
        }
        panic!("the schedule did not finish");
    }

    #[test]
    fn steps_run_over_caller_buffers_and_scratch() {
        let mut e = engine();
        let send: Vec<u32> = vec![1, 2, 3, 4];
        let mut recv = vec![0u32; 8];
        let input = Span::new(Region::Send, 0, 16);
        let (lo, hi) = (
            Span::new(Region::Recv, 0, 16),
            Span::new(Region::Recv, 16, 16),
        );
        let mut pr = Program::new();
        let t = pr.scratch(16);
        pr.exchange(Peer::Local(0), input, t);
        pr.copy(input, lo);
        pr.reduce(t, lo, false);
        pr.copy(lo, hi);
        pr.put(hi.sub(8, 8), 7);
        pr.expect(hi.sub(8, 8), 7);
        let send_raw = Raw {
            ptr: send.as_ptr().cast_mut().cast(),
            len: 16,
        };
        let recv_raw = Raw {
            ptr: recv.as_mut_ptr().cast(),
            len: 32,
        };
        // SAFETY: both buffers outlive `exec`, which is dropped before `recv` is read; the
        // program never writes the input (checked by `new`).
        let mut exec =
            unsafe { Exec::new("test", pr, send_raw, recv_raw, Some(sum()), comm(), 0) }.unwrap();
        finish(&mut exec, &mut e).unwrap();
        drop(exec);
        assert_eq!(recv, [2, 4, 6, 8, 2, 4, 7, 0]);
        assert_eq!(send, [1, 2, 3, 4], "input untouched");
    }

    #[test]
    fn bad_programs_are_refused_and_mismatches_reported() {
        let mut recv = [0u8; 16];
        let recv_raw = Raw {
            ptr: recv.as_mut_ptr(),
            len: 16,
        };
        let new = |pr: Program| {
            // SAFETY: `recv` outlives every Exec made here; none is stepped but the last.
            unsafe { Exec::new("test", pr, Raw::EMPTY, recv_raw, Some(sum()), comm(), 0) }
        };
        let mut pr = Program::new();
        pr.copy(
            Span::new(Region::Recv, 0, 8),
            Span::new(Region::Recv, 12, 8),
        );
        assert!(new(pr).is_err(), "span outside its region");
        let mut pr = Program::new();
        pr.put(Span::new(Region::Send, 0, 8), 1);
        assert!(new(pr).is_err(), "writes the input");
        let mut pr = Program::new();
        pr.reduce(
            Span::new(Region::Recv, 0, 8),
            Span::new(Region::Recv, 4, 8),
            false,
        );
        assert!(new(pr).is_err(), "overlapping operands");
        let mut pr = Program::new();
        pr.send(Peer::Local(1), Span::new(Region::Recv, 0, 8));
        assert!(new(pr).is_err(), "peer out of range");
        let mut pr = Program::new();
        pr.put(Span::new(Region::Recv, 0, 8), 5);
        pr.expect(Span::new(Region::Recv, 0, 8), 6);
        let mut exec = new(pr).unwrap();
        let err = finish(&mut exec, &mut engine()).unwrap_err();
        assert_eq!(err.class(), ErrorClass::Op);
    }
}
