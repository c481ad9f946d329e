//! Barrier and 8-byte allreduce latency on the world and on a communicator split from it
//! (same ranks, its own context), microseconds, mean over ranks, timed back to back. A
//! measuring tool, not a test: `oxrun -n 4 coll_split_latency [ITERS]`; compare runs with
//! `OXMPI_SHM_COLL_COMMS=0` (split communicator over messages) and without.

use oxmpi::{Communicator, Op};

fn mean_over_ranks(w: &Communicator, secs: f64, iters: usize) -> f64 {
    let mut sum = [0.0f64];
    w.all_reduce_into(&[secs / iters as f64][..], &mut sum[..], Op::Sum)
        .expect("allreduce");
    sum[0] / w.size() as f64 * 1e6
}

/// Barrier and 8 B allreduce latency on `c`.
fn measure(w: &Communicator, c: &Communicator, iters: usize) -> (f64, f64) {
    for _ in 0..iters / 10 {
        c.barrier().expect("barrier");
    }
    let t0 = oxmpi::time();
    for _ in 0..iters {
        c.barrier().expect("barrier");
    }
    let b = mean_over_ranks(w, oxmpi::time() - t0, iters);
    let send = [c.rank() as i64];
    let mut recv = [0i64];
    for _ in 0..iters / 10 {
        c.all_reduce_into(&send[..], &mut recv[..], Op::Sum)
            .expect("allreduce");
    }
    c.barrier().expect("barrier");
    let t0 = oxmpi::time();
    for _ in 0..iters {
        c.all_reduce_into(&send[..], &mut recv[..], Op::Sum)
            .expect("allreduce");
    }
    let a = mean_over_ranks(w, oxmpi::time() - t0, iters);
    (b, a)
}

fn main() {
    let universe = oxmpi::init().expect("init");
    let w = universe.world();
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20000);
    let split = w.split(0, w.rank()).expect("split").expect("color 0");
    let (wb, wa) = measure(&w, &w, iters);
    let (sb, sa) = measure(&w, &split, iters);
    if w.rank() == 0 {
        println!("world barrier {wb:.3} allreduce8 {wa:.3}");
        println!("split barrier {sb:.3} allreduce8 {sa:.3}");
    }
}
