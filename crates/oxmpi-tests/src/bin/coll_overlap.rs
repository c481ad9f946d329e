//! Nonblocking collectives overlapped with point-to-point traffic and with each other: each
//! round starts several collectives on two communicators plus a ring of point-to-point
//! messages, then completes them in a rank- and round-dependent order (test loops and waits
//! mixed); then 32 allreduces are kept in flight at once and waited in a shuffled order.
//! Every result is checked. Exits non-zero on a mismatch.
//!
//! `coll_overlap ROUNDS`

use oxmpi::{scope, Op, Request};
use oxmpi_tests::{check, must};

/// Completes `reqs` in an order derived from `seed`, polling some with `test` first.
fn finish(mut reqs: Vec<Request<'_, '_>>, seed: u64) {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while !reqs.is_empty() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let i = (s % reqs.len() as u64) as usize;
        let mut r = reqs.swap_remove(i);
        if s.is_multiple_of(3) {
            // Poll a while before blocking.
            for _ in 0..50 {
                if let Some(res) = r.test() {
                    must("test", res);
                    break;
                }
            }
            drop(r);
        } else {
            must("wait", r.wait());
        }
    }
}

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    let p = world.size();
    let me = world.rank();
    let dup = must("dup", world.duplicate());
    let (right, left) = ((me + 1) % p, (me + p - 1) % p);
    for round in 0..rounds {
        let n = [1usize, 17, 3000, 40000][round % 4];
        let send: Vec<f64> = (0..n)
            .map(|i| (me as usize * n + i + round) as f64)
            .collect();
        let mut sum = vec![0.0f64; n];
        let mut bc = vec![0u32; n];
        if me == (round as i32 % p) {
            bc.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = (i * 3 + round) as u32);
        }
        let mine = [me * 1000 + round as i32];
        let mut gathered = vec![0i32; p as usize];
        let msg: Vec<u64> = (0..n)
            .map(|i| (me as usize * 7 + i + round) as u64)
            .collect();
        let mut got = vec![0u64; n];
        let mut dsum = [0i64];
        scope(|s| {
            let mut reqs = vec![
                must(
                    "iallreduce",
                    world.immediate_all_reduce_into(s, &send, &mut sum, Op::Sum),
                ),
                must(
                    "irecv",
                    world.immediate_receive_into(s, &mut got[..], left, round as i32),
                ),
                must(
                    "ibcast",
                    world.immediate_broadcast_into(s, round as i32 % p, &mut bc[..]),
                ),
                must(
                    "iallgather",
                    dup.immediate_all_gather_into(s, &mine[..], &mut gathered),
                ),
                must("ibarrier", world.immediate_barrier(s)),
            ];
            reqs.push(must(
                "isend",
                world.immediate_send(s, &msg[..], right, round as i32),
            ));
            // A blocking collective on the other communicator while all of that is in flight.
            must(
                "allreduce dup",
                dup.all_reduce_into(&[me as i64][..], &mut dsum[..], Op::Sum),
            );
            finish(reqs, (me as u64 + 1) * 1_000_003 + round as u64);
        });
        let want: Vec<f64> = (0..n)
            .map(|i| (0..p as usize).map(|r| (r * n + i + round) as f64).sum())
            .collect();
        check!(sum == want, "round {round}: iallreduce");
        check!(
            bc.iter()
                .enumerate()
                .all(|(i, &x)| x == (i * 3 + round) as u32),
            "round {round}: ibcast"
        );
        check!(
            gathered == (0..p).map(|r| r * 1000 + round as i32).collect::<Vec<_>>(),
            "round {round}: iallgather"
        );
        check!(
            got.iter()
                .enumerate()
                .all(|(i, &x)| x == (left as usize * 7 + i + round) as u64),
            "round {round}: ring message"
        );
        check!(
            dsum[0] == (p as i64) * (p as i64 - 1) / 2,
            "round {round}: blocking allreduce on dup"
        );
    }
    // Many in flight on one communicator, completed in a shuffled order.
    let k = 32;
    let sends: Vec<[i32; 4]> = (0..k).map(|j| [me, j, me * j, 1]).collect();
    let mut outs = vec![[0i32; 4]; k as usize];
    scope(|s| {
        let reqs: Vec<Request<'_, '_>> = sends
            .iter()
            .zip(outs.iter_mut())
            .map(|(a, b)| {
                must(
                    "iallreduce",
                    world.immediate_all_reduce_into(
                        s,
                        std::slice::from_ref(a),
                        std::slice::from_mut(b),
                        Op::Sum,
                    ),
                )
            })
            .collect();
        finish(reqs, me as u64 * 77 + 5);
    });
    let tri = p * (p - 1) / 2;
    for (j, o) in outs.iter().enumerate() {
        check!(
            *o == [tri, j as i32 * p, tri * j as i32, p],
            "in-flight allreduce {j}: {o:?}"
        );
    }
    world.barrier().expect("barrier");
    println!("rank {me} coll_overlap passed {rounds} rounds");
    universe.finalize().expect("finalize");
}
