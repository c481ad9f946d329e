//! Collective latency on oxmpi, timed as `bench/c/oxbench.c` does (warm-up, then each call
//! timed alone with an untimed barrier between calls; barrier timed back to back), mean over
//! ranks, microseconds. A measuring tool, not a test: `oxrun -n 2 coll_latency [ITERS]`.

use oxmpi::{Communicator, Op};

fn mean_over_ranks(w: &Communicator, secs: f64, iters: usize) -> f64 {
    let mut sum = [0.0f64];
    w.all_reduce_into(&[secs / iters as f64][..], &mut sum[..], Op::Sum)
        .expect("allreduce");
    sum[0] / w.size() as f64 * 1e6
}

fn main() {
    let universe = oxmpi::init().expect("init");
    let w = universe.world();
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10000);
    let warm = iters / 10;
    for i in 0..warm + iters {
        if i == warm {
            w.barrier().expect("barrier");
        }
        w.barrier().expect("barrier");
    }
    let t0 = oxmpi::time();
    for _ in 0..iters {
        w.barrier().expect("barrier");
    }
    let b = mean_over_ranks(&w, oxmpi::time() - t0, iters);
    if w.rank() == 0 {
        println!("barrier {b:.3}");
    }
    for bytes in [8usize, 1 << 20] {
        let n = bytes / 4;
        let send: Vec<i32> = (0..n as i32).map(|i| i + w.rank()).collect();
        let mut recv = vec![0i32; n];
        let it = if bytes > 8192 {
            (iters / 50).max(20)
        } else {
            iters
        };
        let mut total = 0.0;
        for i in 0..it + it / 10 {
            w.barrier().expect("barrier");
            let t = oxmpi::time();
            w.all_reduce_into(&send, &mut recv, Op::Sum)
                .expect("allreduce");
            if i >= it / 10 {
                total += oxmpi::time() - t;
            }
        }
        let p = w.size();
        assert_eq!(recv[n - 1], (n as i32 - 1) * p + p * (p - 1) / 2);
        let us = mean_over_ranks(&w, total, it);
        if w.rank() == 0 {
            println!("allreduce {bytes} {us:.3}");
        }
    }
    universe.finalize().expect("finalize");
}
