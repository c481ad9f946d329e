//! User code that calls MPI from where the library calls it: reduction closures that probe
//! through MPI (which takes the progress engine) in blocking and nonblocking reductions, on
//! the world (its shared-memory path for small vectors) and on a duplicate, commutative and
//! not; a user operation whose captured value calls MPI when dropped, dropped while its
//! nonblocking reduction runs; and an attribute whose `Drop` calls MPI, on a communicator
//! freed while a nonblocking collective on it is still running. Before the fix these
//! deadlocked (locked thread levels) or aliased the engine (SINGLE). At MULTIPLE a second
//! thread runs collectives of its own meanwhile, so parked user steps also run from its
//! waits. Send buffers of some reductions are `static` (read-only memory). Every result is
//! checked; exits non-zero on a mismatch.
//!
//! `coll_reentry single|multiple`

use std::cell::RefCell;
use std::process::exit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use oxmpi::{scope, Communicator, Keyval, Op, Source, Tag, ThreadLevel};
use oxmpi_tests::{check, must};

type MpiCall = Arc<dyn Fn() + Send + Sync>;

thread_local! {
    /// SINGLE: the MPI call, reachable only from the thread that initialized MPI.
    static LOCAL: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
}
/// MULTIPLE: the MPI call, from any thread.
static SHARED: Mutex<Option<MpiCall>> = Mutex::new(None);
/// MPI calls made from user code.
static CALLS: AtomicUsize = AtomicUsize::new(0);
/// Values whose `Drop` called MPI.
static DROPS: AtomicUsize = AtomicUsize::new(0);

/// Probes for a message that never comes: takes the engine and runs progress.
fn probe_through_mpi<L: ThreadLevel>(c: &Communicator<L>) {
    match c.immediate_probe::<u8>(Source::Any, Tag::Any) {
        Ok(None) => {}
        other => {
            eprintln!("ERROR probe from user code: {other:?}");
            exit(1);
        }
    }
    CALLS.fetch_add(1, Ordering::Relaxed);
}

/// Calls MPI from user code.
fn reenter() {
    let shared = SHARED.lock().unwrap().clone();
    match shared {
        Some(f) => f(),
        None => LOCAL.with(|l| (l.borrow().as_ref().expect("MPI call set up"))()),
    }
}

/// A value that calls MPI when dropped (an attribute, or captured by a user operation).
#[derive(Clone)]
struct CallsMpiOnDrop;

impl Drop for CallsMpiOnDrop {
    fn drop(&mut self) {
        reenter();
        DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Wrapping sum that calls MPI first (commutative).
fn sum_op() -> Op {
    Op::user::<u64>(true, |a, b| {
        reenter();
        for (y, x) in b.iter_mut().zip(a) {
            *y = y.wrapping_add(*x);
        }
    })
}

/// Affine maps `x ↦ m·x + c` (mod 2⁶⁴) composed in rank order (not commutative): the
/// lower ranks' map `a` is applied first, `inout = b ∘ a`.
fn affine_op() -> Op {
    Op::user::<[u64; 2]>(false, |a, b| {
        reenter();
        for (y, x) in b.iter_mut().zip(a) {
            *y = [
                y[0].wrapping_mul(x[0]),
                y[0].wrapping_mul(x[1]).wrapping_add(y[1]),
            ];
        }
    })
}

fn affine(r: usize, i: usize) -> [u64; 2] {
    [(2 * r + i % 5 + 1) as u64, (r * 7 + i) as u64]
}

fn affine_ref(p: usize, i: usize) -> [u64; 2] {
    (1..p).fold(affine(0, i), |acc, r| {
        let b = affine(r, i);
        [
            b[0].wrapping_mul(acc[0]),
            b[0].wrapping_mul(acc[1]).wrapping_add(b[1]),
        ]
    })
}

const BIG: usize = 32 * 1024;
/// Read-only memory: a reduction writing its input, or a `&mut` over it, would be a fault.
static STATIC_BIG: [u64; BIG] = {
    let mut a = [0u64; BIG];
    let mut i = 0;
    while i < BIG {
        a[i] = (i as u64).wrapping_mul(0x9e37_79b9) ^ 5;
        i += 1;
    }
    a
};
static STATIC_SMALL: [u64; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

/// Blocking and nonblocking reductions with user operations that call MPI, on `c`.
fn reductions<L: ThreadLevel>(c: &Communicator<L>, what: &str) {
    let (p, me) = (c.size() as usize, c.rank() as usize);
    for n in [3usize, 100, 5000, BIG] {
        let send: Vec<u64> = (0..n).map(|i| (me * 1000 + i) as u64).collect();
        let want: Vec<u64> = (0..n)
            .map(|i| (0..p).map(|r| (r * 1000 + i) as u64).sum())
            .collect();
        let mut recv = vec![0u64; n];
        must("allreduce", c.all_reduce_into(&send, &mut recv, sum_op()));
        check!(recv == want, "{what}: user-sum allreduce n {n}");
        let mut recv = vec![0u64; n];
        must("reduce", c.reduce_into(0, &send, &mut recv, sum_op()));
        check!(me != 0 || recv == want, "{what}: user-sum reduce n {n}");

        let send: Vec<[u64; 2]> = (0..n.min(2000)).map(|i| affine(me, i)).collect();
        let want: Vec<[u64; 2]> = (0..send.len()).map(|i| affine_ref(p, i)).collect();
        let mut recv = vec![[0u64; 2]; send.len()];
        must(
            "allreduce",
            c.all_reduce_into(&send, &mut recv, affine_op()),
        );
        check!(recv == want, "{what}: affine allreduce n {n}");

        // Nonblocking, several in flight, completed by wait and by test loops.
        let mut r1 = vec![0u64; n];
        let mut r2 = vec![[0u64; 2]; send.len()];
        let mut r3 = vec![0u64; n];
        let sendu: Vec<u64> = (0..n).map(|i| (me * 1000 + i) as u64).collect();
        let wantu: Vec<u64> = (0..n)
            .map(|i| (0..p).map(|r| (r * 1000 + i) as u64).sum())
            .collect();
        scope(|s| {
            let a = must(
                "iallreduce",
                c.immediate_all_reduce_into(s, &sendu, &mut r1, sum_op()),
            );
            let b = must(
                "iallreduce",
                c.immediate_all_reduce_into(s, &send, &mut r2, affine_op()),
            );
            let mut d = must(
                "ireduce",
                c.immediate_reduce_into(s, p as i32 - 1, &sendu, &mut r3, sum_op()),
            );
            must("wait", b.wait());
            loop {
                if let Some(r) = d.test() {
                    must("test", r);
                    break;
                }
            }
            must("wait", a.wait());
        });
        check!(r1 == wantu, "{what}: nonblocking user-sum allreduce n {n}");
        check!(r2 == want, "{what}: nonblocking affine allreduce n {n}");
        check!(
            me != p - 1 || r3 == wantu,
            "{what}: nonblocking reduce n {n}"
        );
    }

    // Read-only (static) send buffers, predefined and user operations, blocking and not.
    for big in [false, true] {
        let send: &'static [u64] = if big { &STATIC_BIG } else { &STATIC_SMALL };
        let want: Vec<u64> = send.iter().map(|x| x.wrapping_mul(p as u64)).collect();
        for op in [Op::Sum, sum_op()] {
            let mut recv = vec![0u64; send.len()];
            must("allreduce", c.all_reduce_into(send, &mut recv, op.clone()));
            check!(recv == want, "{what}: static allreduce big {big} {op:?}");
            let mut recv = vec![0u64; send.len()];
            scope(|s| {
                let r = must(
                    "iallreduce",
                    c.immediate_all_reduce_into(s, send, &mut recv, op.clone()),
                );
                must("wait", r.wait());
            });
            check!(recv == want, "{what}: static iallreduce big {big} {op:?}");
            let mut recv = vec![0u64; send.len()];
            must("scan", c.scan_into(send, &mut recv, op.clone()));
            let mine: Vec<u64> = send.iter().map(|x| x.wrapping_mul(me as u64 + 1)).collect();
            check!(recv == mine, "{what}: static scan big {big} {op:?}");
        }
    }
}

/// Drops: a user operation's captured value and an attribute, both calling MPI.
fn drops<L: ThreadLevel>(world: &Communicator<L>) {
    let p = world.size() as u64;
    let before = DROPS.load(Ordering::Relaxed);
    // The operation's only owner is the nonblocking schedule once `op` is moved into it.
    let guard = CallsMpiOnDrop;
    let op = Op::user::<u64>(true, move |a, b| {
        let _ = &guard;
        for (y, x) in b.iter_mut().zip(a) {
            *y += *x;
        }
    });
    let send = [1u64; 64];
    let mut recv = [0u64; 64];
    scope(|s| {
        let r = must(
            "iallreduce",
            world.immediate_all_reduce_into(s, &send, &mut recv, op),
        );
        must("wait", r.wait());
    });
    check!(recv == [p; 64], "allreduce with a capturing op");
    check!(
        dropped_since(world, before),
        "the operation's captured value was dropped"
    );

    // An attribute on a communicator freed while its nonblocking collective runs.
    let before = DROPS.load(Ordering::Relaxed);
    let dup = must("duplicate", world.duplicate());
    let key = Keyval::<CallsMpiOnDrop>::new(false);
    dup.set_attr(&key, CallsMpiOnDrop);
    let mut recv = [0u64; 1000];
    let send = [2u64; 1000];
    scope(|s| {
        let r = must(
            "iallreduce",
            dup.immediate_all_reduce_into(s, &send, &mut recv, sum_op()),
        );
        let b = must("ibarrier", dup.immediate_barrier(s));
        dup.free();
        must("wait", r.wait());
        must("wait", b.wait());
    });
    check!(recv == [2 * p; 1000], "allreduce on a freed communicator");
    check!(dropped_since(world, before), "the attribute was dropped");
}

/// Whether a value whose `Drop` calls MPI has been dropped since the count was `before`, on
/// every rank. A later wait hands a finished schedule back for dropping if the last one did
/// not; at MULTIPLE the side thread's wait may be the one dropping it, still running when the
/// main thread gets here, so the ranks wait for it together (a bounded number of rounds).
fn dropped_since<L: ThreadLevel>(world: &Communicator<L>, before: usize) -> bool {
    for _ in 0..10_000 {
        must("barrier", world.barrier());
        let mine = [u8::from(DROPS.load(Ordering::Relaxed) > before)];
        let mut all = [0u8];
        must("allreduce", world.all_reduce_into(&mine, &mut all, Op::Min));
        if all[0] == 1 {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    false
}

fn body<L: ThreadLevel>(world: &Communicator<L>) {
    reductions(world, "world");
    let dup = must("duplicate", world.duplicate());
    reductions(&dup, "duplicate");
    drops(world);
    check!(
        world.size() == 1 || CALLS.load(Ordering::Relaxed) > 0,
        "user code called MPI"
    );
}

fn main() {
    let level = std::env::args().nth(1).unwrap_or_else(|| "single".into());
    match level.as_str() {
        "single" => {
            let universe = oxmpi::init().expect("init");
            let world = universe.world();
            let probe = must("duplicate", world.duplicate());
            LOCAL.with(|l| *l.borrow_mut() = Some(Box::new(move || probe_through_mpi(&probe))));
            body(&world);
            LOCAL.with(|l| l.borrow_mut().take());
            must("barrier", world.barrier());
            println!("rank {}: coll_reentry single passed", world.rank());
        }
        "multiple" => {
            let universe = oxmpi::init_with::<oxmpi::Multiple>().expect("init");
            let world = universe.world();
            let probe = must("duplicate", world.duplicate());
            *SHARED.lock().unwrap() = Some(Arc::new(move || probe_through_mpi(&probe)));
            let side = must("duplicate", world.duplicate());
            std::thread::scope(|s| {
                // Its waits also run the main thread's parked user steps.
                let t = s.spawn(|| {
                    let p = side.size() as u64;
                    for round in 0..200u64 {
                        let send = [round; 16];
                        let mut recv = [0u64; 16];
                        must(
                            "allreduce",
                            side.all_reduce_into(&send, &mut recv, sum_op()),
                        );
                        check!(recv == [round * p; 16], "side thread round {round}");
                    }
                });
                body(&world);
                t.join().expect("side thread");
            });
            SHARED.lock().unwrap().take();
            must("barrier", world.barrier());
            println!("rank {}: coll_reentry multiple passed", world.rank());
        }
        other => {
            eprintln!("usage: coll_reentry single|multiple (got {other})");
            exit(2);
        }
    }
}
