//! A target that computes outside MPI while the others update its window, at thread level
//! `MULTIPLE`: rank 0 spins on plain loads of its own window (no MPI call) until every
//! other rank's `k` fetch_and_op increments have arrived, with a deadline. Ranks on other
//! hosts reach it only by active messages, so this ends only if something answers them
//! while rank 0 computes: run it with `OXMPI_RMA_PROGRESS_THREAD=1`.
//!
//! `rma_busy [K]` (default 200). Prints `rank R passed`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use oxmpi::window::Window;
use oxmpi::{Multiple, Op};
use oxmpi_tests::{check, must};

fn main() {
    let k: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let universe = must("init", oxmpi::init_with::<Multiple>());
    let world = universe.world();
    let me = world.rank();
    let n = world.size() as u64;
    let win: Window<Multiple> = must("allocate", world.window_allocate::<u64>(1));
    must("barrier", world.barrier());
    if me == 0 {
        let p = must("local", win.local::<u64>()).as_ptr();
        // SAFETY: `p` is this rank's window element, 8-aligned and alive until `free`;
        // every writer updates it atomically (fetch_and_op), so atomic loads are sound.
        let counter = unsafe { &*p.cast::<AtomicU64>() };
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut work = 0u64;
        loop {
            let v = counter.load(Ordering::Acquire);
            if v == (n - 1) * k {
                break;
            }
            check!(
                Instant::now() < deadline,
                "rank 0: only {v} of {} increments arrived while it computed",
                (n - 1) * k
            );
            for i in 0..10_000u64 {
                work = std::hint::black_box(work.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
        }
        println!(
            "rank 0 computed ({work:x}) while {} increments arrived",
            (n - 1) * k
        );
    } else {
        must("lock_all", win.lock_all(0));
        let mut last = None;
        for _ in 0..k {
            let old = must("fetch_and_op", win.fetch_and_op(&1u64, 0, 0, &Op::Sum));
            check!(
                last.is_none_or(|l| old > l),
                "counter went back: {old} after {last:?}"
            );
            last = Some(old);
        }
        must("unlock_all", win.unlock_all());
    }
    must("barrier", world.barrier());
    must("free", win.free());
    println!("rank {me} passed");
}
