//! Persistent collectives on shared-memory channels of their own (barrier, bcast, reduce,
//! allreduce of at most a slot, and broadcasts and reductions by single copies from the
//! blocking forms' crossovers), every result checked against a serial reference:
//! - on the world, a dup and two splits, at counts inside the slots and just past them,
//!   restarted many times with new contents written before every start (handle layer, raw
//!   buffers as the C layer drives them), started together and waited in reverse order;
//! - a blocking collective on the same communicator between a start and its wait;
//! - two persistent collectives started in different orders on even and odd ranks;
//! - a request freed while active, then init/run/free in a loop (channels given back and
//!   taken again);
//! - more persistent collectives than channels: the rest run as messages, and channels stay
//!   free for new communicators;
//! - counts that differ between ranks (an error on every rank, the channel still usable;
//!   for large reductions already at init);
//! - a user operation (never on shared memory).
//!
//! `coll_persist_shm expect|any [RESTARTS]`: with `expect`, every communicator of 2+ ranks
//! must run its small persistent collectives through shared memory (all ranks on this host);
//! with `any`, that is not checked (hosts faked apart). Exits non-zero on a mismatch.

use oxmpi::handle::op::OpHandle;
use oxmpi::handle::request::{RequestId, Requests};
use oxmpi::{scope, Communicator, ErrorClass, Op, Persistent};
use oxmpi_tests::{check, must};

/// A buffer reached only through one raw pointer while requests use it.
struct RawBuf {
    p: *mut i64,
    n: usize,
}

impl RawBuf {
    fn new(n: usize) -> RawBuf {
        let b: Box<[i64]> = vec![-1i64; n].into_boxed_slice();
        RawBuf {
            p: Box::into_raw(b).cast::<i64>(),
            n,
        }
    }
    fn set(&self, f: impl Fn(usize) -> i64) {
        for i in 0..self.n {
            // SAFETY: `i < n` inside the allocation; no request using it is active (callers
            // write between a wait and the next start).
            unsafe { self.p.add(i).write(f(i)) };
        }
    }
    fn get(&self) -> Vec<i64> {
        // SAFETY: as for `set`.
        (0..self.n)
            .map(|i| unsafe { self.p.add(i).read() })
            .collect()
    }
}

impl Drop for RawBuf {
    fn drop(&mut self) {
        // SAFETY: made by `Box::into_raw` of a slice of `n` elements in `new`.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.p, self.n)) });
    }
}

/// Element `j` of rank `r`'s contribution in run `k`.
fn v(r: i32, j: usize, k: usize) -> i64 {
    (r as i64 * 31 + j as i64 * 7 + k as i64 * 13) % 1009 - 500
}

/// Counts of i64: one element, inside the slots, 1 KiB and one past it (the most a reduction
/// at np 9 and up puts in a slot), a full 8 KiB slot and one past it, 32 KiB and just past
/// 256 KiB, uneven (the test sets the single-copy crossovers of bcast, reduce and allreduce
/// between them in one run; by default none lies below the largest).
const COUNTS: [usize; 8] = [1, 16, 128, 129, 1024, 1025, 4096, 32771];

/// Whether this host runs more ranks than it has cores (every rank of the job is here in
/// `expect` mode), as the runtime judges it; set in `main`.
static OVERSUBSCRIBED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// The single-copy crossovers in force of the blocking bcast, reduce and allreduce on this
/// host, on a communicator of `ranks`.
fn single_copy_mins(ranks: usize) -> (usize, usize, usize) {
    let over = *OVERSUBSCRIBED.get().expect("set in main");
    let c = oxmpi::coll::crossovers();
    (
        c.shm_bcast_min(over, ranks),
        c.shm_reduce_long,
        c.shm_allreduce_min(over),
    )
}

/// Bytes of a shared-memory slot.
const SLOT: usize = 8192;

/// Whether a persistent bcast of `n` i64 on `c` must run through the slots.
fn want_shm(c: &Communicator, expect: bool, n: usize) -> bool {
    expect && c.size() >= 2 && n * 8 <= SLOT
}

/// Whether a persistent reduction of `n` i64 on `c` must run through the slots: at most
/// 1 KiB, or the inputs of the p - 1 others fit a slot together (half a slot when every
/// rank combines them: `all`).
fn want_shm_reduce(c: &Communicator, expect: bool, n: usize, all: bool) -> bool {
    let others = c.size().max(1) as usize - 1;
    let budget = if all { SLOT / 2 } else { SLOT };
    want_shm(c, expect, n) && (n * 8 <= 1024 || n * 8 * others <= budget)
}

/// Whether a persistent reduction of `n` i64 on `c` must run by single copies between the
/// members' buffers: from `min` bytes, where the blocking one does, unless they are off.
fn want_single_copy(c: &Communicator, expect: bool, n: usize, min: usize) -> bool {
    let on = std::env::var("OXMPI_SINGLE_COPY").as_deref() != Ok("0");
    expect && on && c.size() >= 2 && n * 8 >= min
}

fn sum_of(p: i32, j: usize, k: usize) -> i64 {
    (0..p).map(|r| v(r, j, k)).sum()
}

/// Every small persistent collective on `c`, restarted `restarts` times.
fn restarts_with_new_contents(c: &Communicator, expect: bool, restarts: usize, what: &str) {
    let (me, p) = (c.rank(), c.size());
    let last = p - 1;
    let mut reqs = Requests::new(c);
    for &n in &COUNTS {
        let bshm = want_shm(c, expect, n);
        let (rshm, arshm) = (
            want_shm_reduce(c, expect, n, false),
            want_shm_reduce(c, expect, n, true),
        );
        let (bc0, bcl) = (RawBuf::new(n), RawBuf::new(n));
        let (rs, rr0, rrl) = (RawBuf::new(n), RawBuf::new(n), RawBuf::new(n));
        let (ars, arr, arp) = (RawBuf::new(n), RawBuf::new(n), RawBuf::new(n));
        let fm = RawBuf::new(n);
        // SAFETY (every `*_init`): each buffer outlives its request, freed below; between a
        // wait and the next start only this thread touches it.
        let mut ids = unsafe {
            vec![
                must("barrier_init", reqs.barrier_init(c)),
                must("bcast_init 0", reqs.bcast_init(c, bc0.p, n, 0)),
                must("bcast_init last", reqs.bcast_init(c, bcl.p, n, last)),
                must(
                    "reduce_init 0",
                    reqs.reduce_init(c, rs.p, rr0.p, n, OpHandle::SUM, 0),
                ),
                // In place at the root.
                must(
                    "reduce_init last",
                    reqs.reduce_init(
                        c,
                        if me == last { std::ptr::null() } else { rs.p },
                        rrl.p,
                        n,
                        OpHandle::SUM,
                        last,
                    ),
                ),
                must(
                    "allreduce_init",
                    reqs.allreduce_init(c, ars.p, arr.p, n, OpHandle::SUM),
                ),
                must(
                    "allreduce_init in place",
                    reqs.allreduce_init(c, std::ptr::null(), arp.p, n, OpHandle::SUM),
                ),
                must(
                    "allreduce_init max",
                    reqs.allreduce_init(c, std::ptr::null(), fm.p, n, OpHandle::MAX),
                ),
            ]
        };
        for (i, id) in ids.iter().enumerate() {
            // The barrier (request 0) carries no data: on shared memory at every count.
            // Large bcasts (1, 2), reduces (3, 4) and allreduces (5-7) copy between the
            // buffers instead.
            let (bcast_min, reduce_min, allreduce_min) = single_copy_mins(c.size() as usize);
            let shm = (i == 0 && want_shm(c, expect, 1))
                || ((1..=2).contains(&i) && bshm)
                || ((3..=4).contains(&i) && rshm)
                || (i >= 5 && arshm)
                || ((1..=2).contains(&i) && want_single_copy(c, expect, n, bcast_min))
                || ((3..=4).contains(&i) && want_single_copy(c, expect, n, reduce_min))
                || (i >= 5 && want_single_copy(c, expect, n, allreduce_min));
            check!(
                reqs.runs_on_shared_memory(*id) == shm,
                "{what} n {n} request {i}: on shared memory {}, expected {shm}",
                reqs.runs_on_shared_memory(*id)
            );
        }
        for k in 0..restarts {
            bc0.set(|j| if me == 0 { v(0, j, k) } else { -1 });
            bcl.set(|j| if me == last { v(last, j, k) } else { -1 });
            rs.set(|j| v(me, j, k));
            rr0.set(|_| -1);
            rrl.set(|j| if me == last { v(me, j, k) } else { -1 });
            ars.set(|j| v(me, j, k));
            arr.set(|_| -1);
            arp.set(|j| v(me, j, k));
            fm.set(|j| v(me, j, k) * if (j + k) % 2 == 0 { 1 } else { -1 });
            must("start_all", reqs.start_all(&ids));
            for id in ids.iter_mut().rev() {
                must("wait", reqs.wait(id));
            }
            let sums: Vec<i64> = (0..n).map(|j| sum_of(p, j, k)).collect();
            let at = format!("{what} n {n} run {k}");
            check!(
                bc0.get() == (0..n).map(|j| v(0, j, k)).collect::<Vec<_>>(),
                "{at}: bcast from 0"
            );
            check!(
                bcl.get() == (0..n).map(|j| v(last, j, k)).collect::<Vec<_>>(),
                "{at}: bcast from last"
            );
            if me == 0 {
                check!(rr0.get() == sums, "{at}: reduce to 0");
            }
            if me == last {
                check!(rrl.get() == sums, "{at}: reduce to last in place");
            }
            check!(arr.get() == sums, "{at}: allreduce");
            check!(arp.get() == sums, "{at}: allreduce in place");
            let max: Vec<i64> = (0..n)
                .map(|j| {
                    (0..p)
                        .map(|r| v(r, j, k) * if (j + k) % 2 == 0 { 1 } else { -1 })
                        .max()
                        .expect("p >= 1")
                })
                .collect();
            check!(fm.get() == max, "{at}: allreduce max");
        }
        for id in &mut ids {
            must("free", reqs.free(id));
        }
    }
}

/// A blocking collective between a start and its wait, and two persistent collectives
/// started in different orders on even and odd ranks (both on shared memory only: the
/// message forms take their tags in start order).
fn overlap_and_order(c: &Communicator, expect: bool, what: &str) {
    let (me, p) = (c.rank(), c.size());
    let mut reqs = Requests::new(c);
    let (a, b) = (RawBuf::new(4), RawBuf::new(4));
    // SAFETY: the buffers outlive the requests, freed below; written only between runs.
    let (mut ia, mut ib) = unsafe {
        (
            must(
                "init a",
                reqs.allreduce_init(c, std::ptr::null(), a.p, 4, OpHandle::SUM),
            ),
            must("init b", reqs.bcast_init(c, b.p, 4, p - 1)),
        )
    };
    let both = reqs.runs_on_shared_memory(ia) && reqs.runs_on_shared_memory(ib);
    check!(
        !expect || p < 2 || both,
        "{what}: small persistent collectives not on shared memory"
    );
    for k in 0..20 {
        a.set(|j| v(me, j, k));
        b.set(|j| if me == p - 1 { v(me, j, k) } else { -1 });
        if both && me % 2 == 1 {
            must("start b", reqs.start(ib));
            must("start a", reqs.start(ia));
        } else {
            must("start a", reqs.start(ia));
            must("start b", reqs.start(ib));
        }
        // A blocking allreduce and barrier on the same communicator meanwhile.
        let mut x = [me as i64 + k as i64];
        must("blocking", c.all_reduce_in_place(&mut x[..], Op::Sum));
        must("barrier", c.barrier());
        check!(
            x[0] == (0..p as i64).sum::<i64>() + p as i64 * k as i64,
            "{what} run {k}: blocking allreduce"
        );
        must("wait b", reqs.wait(&mut ib));
        must("wait a", reqs.wait(&mut ia));
        check!(
            a.get() == (0..4).map(|j| sum_of(p, j, k)).collect::<Vec<_>>(),
            "{what} run {k}: allreduce"
        );
        check!(
            b.get() == (0..4).map(|j| v(p - 1, j, k)).collect::<Vec<_>>(),
            "{what} run {k}: bcast"
        );
    }
    must("free a", reqs.free(&mut ia));
    must("free b", reqs.free(&mut ib));
}

/// A request freed while active, then init/run/free in a loop: every init finds a channel
/// again (those given back drain within one more agreement).
fn free_and_reuse(c: &Communicator, expect: bool, what: &str) {
    let (me, p) = (c.rank(), c.size());
    let mut reqs = Requests::new(c);
    let (a, b) = (RawBuf::new(2), RawBuf::new(2));
    {
        // SAFETY: the buffers outlive the requests (and the freed run, which completes by
        // the barrier's progress or at the latest before `a` is dropped at the end).
        let (mut ia, mut ib) = unsafe {
            (
                must(
                    "init a",
                    reqs.allreduce_init(c, std::ptr::null(), a.p, 2, OpHandle::SUM),
                ),
                must(
                    "init b",
                    reqs.allreduce_init(c, std::ptr::null(), b.p, 2, OpHandle::SUM),
                ),
            )
        };
        a.set(|j| v(me, j, 0));
        b.set(|j| v(me, j, 1));
        must("start a", reqs.start(ia));
        must("start b", reqs.start(ib));
        must("free a while active", reqs.free(&mut ia));
        must("wait b", reqs.wait(&mut ib));
        check!(
            b.get() == (0..2).map(|j| sum_of(p, j, 1)).collect::<Vec<_>>(),
            "{what}: b beside a freed request"
        );
        must("free b", reqs.free(&mut ib));
    }
    for k in 0..40 {
        let x = RawBuf::new(3);
        // SAFETY: `x` outlives the request, freed at the end of the iteration.
        let mut id = unsafe {
            must(
                "init",
                reqs.allreduce_init(c, std::ptr::null(), x.p, 3, OpHandle::SUM),
            )
        };
        check!(
            !want_shm_reduce(c, expect, 3, true) || reqs.runs_on_shared_memory(id),
            "{what} loop {k}: no channel"
        );
        x.set(|j| v(me, j, k));
        must("start", reqs.start(id));
        must("wait", reqs.wait(&mut id));
        check!(
            x.get() == (0..3).map(|j| sum_of(p, j, k)).collect::<Vec<_>>(),
            "{what} loop {k}: allreduce"
        );
        must("free", reqs.free(&mut id));
    }
    // The freed run completed in the loop's progress (every member had arrived before the
    // first agreement); `a` goes only now.
    must("barrier", c.barrier());
}

/// More persistent collectives than channels: some run as messages, all correct, and a
/// new communicator still takes a channel for its blocking collectives.
fn exhaustion(world: &Communicator, expect: bool) {
    let (me, p) = (world.rank(), world.size());
    let mut reqs = Requests::new(world);
    let bufs: Vec<RawBuf> = (0..20).map(|_| RawBuf::new(2)).collect();
    // SAFETY: the buffers outlive the requests, freed below.
    let mut ids: Vec<RequestId> = bufs
        .iter()
        .map(|b| unsafe {
            must(
                "init",
                reqs.allreduce_init(world, std::ptr::null(), b.p, 2, OpHandle::SUM),
            )
        })
        .collect();
    let on = ids
        .iter()
        .filter(|&&id| reqs.runs_on_shared_memory(id))
        .count();
    if expect && p >= 2 {
        check!(
            on >= 1 && on < ids.len(),
            "exhaustion: {on} of 20 on shared memory"
        );
        let fresh = must("dup", world.duplicate());
        must("barrier", fresh.barrier());
        check!(
            fresh.shared_memory_channel().is_some(),
            "exhaustion: a new communicator found no channel left"
        );
    }
    for k in 0..5 {
        for (i, b) in bufs.iter().enumerate() {
            b.set(|j| v(me, j, k + i));
        }
        must("start_all", reqs.start_all(&ids));
        for id in ids.iter_mut() {
            must("wait", reqs.wait(id));
        }
        for (i, b) in bufs.iter().enumerate() {
            check!(
                b.get() == (0..2).map(|j| sum_of(p, j, k + i)).collect::<Vec<_>>(),
                "exhaustion run {k} request {i}"
            );
        }
    }
    for id in &mut ids {
        must("free", reqs.free(id));
    }
}

/// Counts that differ between ranks, both within a slot: every rank's wait fails with a
/// count error; the channel stays in step for the next run.
fn mismatched_counts(c: &Communicator) {
    let (me, p) = (c.rank(), c.size());
    let mut reqs = Requests::new(c);
    let n = if me == 0 { 2 } else { 1 };
    let x = RawBuf::new(2);
    // SAFETY: `x` outlives the request, freed below.
    let mut id = unsafe {
        must(
            "init",
            reqs.allreduce_init(c, std::ptr::null(), x.p, n, OpHandle::SUM),
        )
    };
    check!(
        reqs.runs_on_shared_memory(id),
        "mismatch: not on shared memory"
    );
    must("start", reqs.start(id));
    // The error comes back in the status (as MPI_Wait's status.MPI_ERROR) or as the call's.
    let class = match reqs.wait(&mut id) {
        Ok(st) => st.error,
        Err(e) => Some(e.class()),
    };
    check!(
        matches!(class, Some(ErrorClass::Count | ErrorClass::Truncate)),
        "mismatch: {class:?}"
    );
    must("free", reqs.free(&mut id));
    let y = RawBuf::new(1);
    // SAFETY: `y` outlives the request, freed below.
    let mut id = unsafe {
        must(
            "init",
            reqs.allreduce_init(c, std::ptr::null(), y.p, 1, OpHandle::SUM),
        )
    };
    y.set(|_| me as i64);
    must("start", reqs.start(id));
    must("wait", reqs.wait(&mut id));
    check!(y.get() == [(0..p as i64).sum::<i64>()], "after a mismatch");
    must("free", reqs.free(&mut id));
}

/// Large counts that differ between ranks: every rank's init fails with a count error (the
/// members compare their buffers there), and a large reduction initialised next works.
fn mismatched_large_counts(c: &Communicator) {
    let (me, p) = (c.rank(), c.size());
    let mut reqs = Requests::new(c);
    let x = RawBuf::new(8192);
    let n = if me == 0 { 8192 } else { 8191 };
    // SAFETY: `x` outlives any request made here, each freed below.
    let r = unsafe { reqs.allreduce_init(c, std::ptr::null(), x.p, n, OpHandle::SUM) };
    let class = r.map_err(|e| e.class()).err();
    check!(
        matches!(class, Some(ErrorClass::Count | ErrorClass::Truncate)),
        "large mismatch at init: {class:?}"
    );
    // SAFETY: as above.
    let mut id = unsafe {
        must(
            "init",
            reqs.allreduce_init(c, std::ptr::null(), x.p, 8192, OpHandle::SUM),
        )
    };
    check!(
        reqs.runs_on_shared_memory(id),
        "after a large mismatch: not by single copies"
    );
    x.set(|j| v(me, j, 3));
    must("start", reqs.start(id));
    must("wait", reqs.wait(&mut id));
    check!(
        x.get() == (0..8192).map(|j| sum_of(p, j, 3)).collect::<Vec<_>>(),
        "after a large mismatch"
    );
    must("free", reqs.free(&mut id));
}

/// The Rust API: a user operation keeps its message program; a builtin one of the same
/// size takes shared memory; both give the serial result, restarted together.
fn rust_api(c: &Communicator, expect: bool) {
    let (me, p) = (c.rank(), c.size());
    let send = [me as i64 + 1, 2 * me as i64];
    let (mut a, mut b) = ([0i64; 2], [0i64; 2]);
    let add = Op::user::<i64>(true, |x, y| y.iter_mut().zip(x).for_each(|(y, x)| *y += x));
    let r: oxmpi::Result<()> = scope(|s| {
        let ra = c.all_reduce_init(s, &send[..], &mut a[..], add)?;
        let rb = c.all_reduce_init(s, &send[..], &mut b[..], Op::Sum)?;
        check!(
            !ra.runs_on_shared_memory(),
            "a user operation on shared memory"
        );
        check!(
            !want_shm_reduce(c, expect, 2, true) || rb.runs_on_shared_memory(),
            "a builtin allreduce not on shared memory"
        );
        let mut all = [ra, rb];
        for _ in 0..10 {
            Persistent::start_all(&mut all)?;
            for r in all.iter_mut().rev() {
                r.wait()?;
            }
        }
        Ok(())
    });
    must("rust api", r);
    let want = [
        (1..=p as i64).sum::<i64>(),
        (0..p as i64).map(|r| 2 * r).sum::<i64>(),
    ];
    check!(
        a == want,
        "rust api: user allreduce {a:?}, expected {want:?}"
    );
    check!(b == want, "rust api: allreduce {b:?}, expected {want:?}");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let expect = args.next().as_deref() == Some("expect");
    let restarts: usize = args.next().map_or(20, |s| s.parse().expect("RESTARTS"));
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let (me, p) = (world.rank(), world.size());
    // SAFETY: sysconf reads a system constant.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
    OVERSUBSCRIBED.get_or_init(|| p as i64 > cores);

    restarts_with_new_contents(&world, expect, restarts, "world");
    let dup = must("dup", world.duplicate());
    restarts_with_new_contents(&dup, expect, restarts, "dup");
    let halves = must("split", world.split(me % 2, p - me)).expect("a color");
    restarts_with_new_contents(&halves, expect, restarts / 2, "split by parity");
    overlap_and_order(&world, expect, "world");
    overlap_and_order(&halves, expect, "split by parity");
    free_and_reuse(&dup, expect, "dup");
    if expect && p >= 2 {
        mismatched_counts(&dup);
        if want_single_copy(&dup, expect, 8192, single_copy_mins(dup.size() as usize).2) {
            mismatched_large_counts(&dup);
        }
    }
    rust_api(&world, expect);
    // Last: channels given back drain lazily (each member arrives on a released channel at
    // its next agreement), so an init right after many frees may find too few free and
    // legitimately run as messages.
    exhaustion(&world, expect);
    println!("rank {me}: coll_persist_shm passed");
}
