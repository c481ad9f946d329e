//! A restart of a persistent collective allocates nothing: the plan, its scratch space and the
//! engine's handle on it are made at init. Counts this thread's heap allocations in the
//! starts of every persistent collective of the handle layer (the C layer's path), after two
//! warm-up runs, with the results checked against a serial reference. A kept message program
//! reserves room for all its transfers in flight at init; the engine's own tables (requests,
//! queues) grow by doubling and keep their room, so a later start may still find one of them
//! full when its peers' timing leaves more in flight than ever before: one start per
//! collective may allocate, a second fails, as does any allocation in every start.
//!
//! The waits are not counted: a message that arrives before its receive is posted is stored
//! in a buffer the engine reuses once warm, but how many arrive early at once depends on the
//! timing of the run. A blocking barrier after every run keeps the ranks in step, so that no
//! rank's starts find its peers' messages piled up.
//!
//! `coll_persist_alloc [RESTARTS]`: exits non-zero if a restart allocated or a result is wrong.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use oxmpi::handle::op::OpHandle;
use oxmpi::handle::request::{RequestId, Requests};
use oxmpi::Communicator;
use oxmpi_tests::{check, must};

/// The system allocator, counting the calls made on each thread.
struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: a thread being torn down may still free or allocate.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees hold; the counter is a const-initialised thread-local without a
// destructor, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Element `i` of rank `r`'s contribution in run `k`.
fn v(r: usize, i: usize, k: usize) -> i64 {
    (r * 1000 + i * 7 + k * 13 + 1) as i64
}

/// Writes run `k`'s contributions into the send buffer (or the receive buffer, for a
/// broadcast).
type Fill = Box<dyn Fn(&mut [i64], &mut [i64], usize)>;
/// Whether the receive buffer holds run `k`'s result.
type Check = Box<dyn Fn(&[i64], usize) -> bool>;

/// A persistent collective under test: its request and buffers.
struct Case {
    name: String,
    id: RequestId,
    send: Vec<i64>,
    recv: Vec<i64>,
    fill: Fill,
    ok: Check,
}

/// Runs `case` `restarts` times (after two warm-up runs), refilling it before every start;
/// returns how many of the counted starts allocated and whether every result was right.
fn drive<L: oxmpi::threading::ThreadLevel>(
    world: &Communicator<L>,
    reqs: &mut Requests<L>,
    case: &mut Case,
    restarts: usize,
) -> (u64, bool) {
    let mut counted = 0;
    let mut ok = true;
    for k in 0..restarts + 2 {
        (case.fill)(&mut case.send, &mut case.recv, k);
        let before = allocs();
        must(&case.name, reqs.start(case.id));
        if k >= 2 && allocs() != before {
            counted += 1;
        }
        must(&case.name, reqs.wait(&mut case.id));
        ok &= (case.ok)(&case.recv, k);
        must("barrier", world.barrier());
    }
    (counted, ok)
}

fn main() {
    let (world, args) = oxmpi_tests::handle_layer_world();
    let restarts: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(50);
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let root = 1 % p;
    let mut reqs = Requests::new(&world);
    let mut failed = false;
    // Element counts: inside a shared-memory slot (300: only a bcast's or a small group's
    // reduction), past it, and past the single-copy crossovers of the large reductions and
    // broadcasts.
    for n in [1usize, 300, 1100, 40_000] {
        let mut cases = Vec::new();
        let mut add = |name: &str,
                       send: usize,
                       recv: usize,
                       init: &dyn Fn(&mut Requests<_>, *mut i64, *mut i64) -> RequestId,
                       fill: Fill,
                       ok: Check| {
            let mut c = Case {
                name: format!("{name} of {n}"),
                id: RequestId::NULL,
                send: vec![0; send],
                recv: vec![0; recv],
                fill,
                ok,
            };
            c.id = init(&mut reqs, c.send.as_mut_ptr(), c.recv.as_mut_ptr());
            cases.push(c);
        };
        let sum = OpHandle::SUM;
        let w = &world;
        // SAFETY (every init below): the Vecs of each case are never resized and outlive its
        // request, freed below; between a wait and the next start only this thread touches
        // them.
        add(
            "barrier",
            0,
            0,
            &|r, _, _| must("barrier_init", unsafe { r.barrier_init(w) }),
            Box::new(|_, _, _| {}),
            Box::new(|_, _| true),
        );
        add(
            "bcast",
            0,
            n,
            &|r, _, b| must("bcast_init", unsafe { r.bcast_init(w, b, n, root as i32) }),
            Box::new(move |_, r, k| {
                for (i, x) in r.iter_mut().enumerate() {
                    *x = if me == root { v(root, i, k) } else { -1 };
                }
            }),
            Box::new(move |r, k| r.iter().enumerate().all(|(i, &x)| x == v(root, i, k))),
        );
        add(
            "allreduce",
            n,
            n,
            &|r, s, d| {
                must("allreduce_init", unsafe {
                    r.allreduce_init(w, s, d, n, sum)
                })
            },
            Box::new(move |s, _, k| {
                for (i, x) in s.iter_mut().enumerate() {
                    *x = v(me, i, k);
                }
            }),
            Box::new(move |r, k| {
                r.iter()
                    .enumerate()
                    .all(|(i, &x)| x == (0..p).map(|r| v(r, i, k)).sum::<i64>())
            }),
        );
        add(
            "reduce",
            n,
            n,
            &|r, s, d| {
                must("reduce_init", unsafe {
                    r.reduce_init(w, s, d, n, sum, root as i32)
                })
            },
            Box::new(move |s, _, k| {
                for (i, x) in s.iter_mut().enumerate() {
                    *x = v(me, i, k);
                }
            }),
            Box::new(move |r, k| {
                me != root
                    || r.iter()
                        .enumerate()
                        .all(|(i, &x)| x == (0..p).map(|r| v(r, i, k)).sum::<i64>())
            }),
        );
        add(
            "allgather",
            n,
            n * p,
            &|r, s, d| must("allgather_init", unsafe { r.allgather_init(w, s, n, d) }),
            Box::new(move |s, _, k| {
                for (i, x) in s.iter_mut().enumerate() {
                    *x = v(me, i, k);
                }
            }),
            Box::new(move |r, k| r.iter().enumerate().all(|(j, &x)| x == v(j / n, j % n, k))),
        );
        add(
            "alltoall",
            n * p,
            n * p,
            &|r, s, d| must("alltoall_init", unsafe { r.alltoall_init(w, s, d, n) }),
            Box::new(move |s, _, k| {
                for (j, x) in s.iter_mut().enumerate() {
                    // Block j / n goes to rank j / n: tag it with the receiver.
                    *x = v(me, j % n + (j / n) * 100_000, k);
                }
            }),
            Box::new(move |r, k| {
                r.iter()
                    .enumerate()
                    .all(|(j, &x)| x == v(j / n, j % n + me * 100_000, k))
            }),
        );
        add(
            "scan",
            n,
            n,
            &|r, s, d| must("scan_init", unsafe { r.scan_init(w, s, d, n, sum, false) }),
            Box::new(move |s, _, k| {
                for (i, x) in s.iter_mut().enumerate() {
                    *x = v(me, i, k);
                }
            }),
            Box::new(move |r, k| {
                r.iter()
                    .enumerate()
                    .all(|(i, &x)| x == (0..=me).map(|r| v(r, i, k)).sum::<i64>())
            }),
        );
        for c in &mut cases {
            let (allocating, ok) = drive(&world, &mut reqs, c, restarts);
            if allocating > 1 {
                eprintln!(
                    "rank {me}: {}: {allocating} of {restarts} starts allocated",
                    c.name
                );
                failed = true;
            }
            check!(ok, "{}: wrong result", c.name);
            must("request_free", reqs.free(&mut c.id));
        }
    }
    drop(world);
    must("finalize", oxmpi::handle::env::finalize());
    if failed {
        std::process::exit(1);
    }
    println!("rank {me}: coll_persist_alloc passed");
}
