//! Neighbourhood exchange: every receive from the in-neighbours and every send to the
//! out-neighbours posted at once, then one wait. One program serves allgather(v) (every send
//! span the same input) and alltoall(v/w) (a span per neighbour).
//!
//! Blocks pair up by order: between two processes, the k-th message one sends matches the
//! k-th receive the other posts (one tag per collective, FIFO per pair). For graphs that is
//! the standard's rule (the k-th edge to a process meets the k-th edge from it). Cartesian
//! blocks pair crosswise instead — block `2d` goes to the negative neighbour along `d` and
//! lands in its block `2d + 1` — which only the receive order can express when both
//! neighbours are one process (a periodic dimension of size 1 or 2), so the two receives of
//! each dimension are posted in reverse.

use crate::coll::schedule::{Peer, Program, Span};
use crate::PROC_NULL;

/// Receives `recv[i]` from `sources[i]` and sends `send[i]` to `dests[i]`, skipping
/// [`PROC_NULL`] (its receive block is left as it is). With `crosswise`, the receives of
/// blocks `2d` and `2d + 1` are posted in the order `2d + 1`, `2d` (Cartesian topologies).
pub(crate) fn exchange(
    pr: &mut Program,
    sources: &[i32],
    dests: &[i32],
    send: &[Span],
    recv: &[Span],
    crosswise: bool,
) {
    debug_assert_eq!(sources.len(), recv.len());
    debug_assert_eq!(dests.len(), send.len());
    for j in 0..sources.len() {
        let i = if crosswise { j ^ 1 } else { j };
        // An odd count never happens for Cartesian lists (two per dimension).
        let i = if i < sources.len() { i } else { j };
        if sources[i] != PROC_NULL {
            pr.recv(Peer::Local(sources[i] as u32), recv[i]);
        }
    }
    for (&d, &s) in dests.iter().zip(send) {
        if d != PROC_NULL {
            pr.send(Peer::Local(d as u32), s);
        }
    }
    pr.wait();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::schedule::sim::{run, Bufs};
    use crate::coll::schedule::Region;
    use crate::handle::topo::{Cart, Topology};

    fn val(from: usize, block: usize, i: usize) -> u8 {
        (from * 37 + block * 11 + i * 5 + 1) as u8
    }

    /// Runs an alltoall of `n`-byte blocks over `topo` at `p` ranks and returns every rank's
    /// receive buffer (blocks from PROC_NULL stay 0xEE).
    fn alltoall(topo: &Topology, p: usize, n: usize) -> Vec<Vec<u8>> {
        let mut progs = Vec::new();
        let mut bufs = Vec::new();
        for r in 0..p {
            let nb = topo.neighbors(r as i32);
            let send: Vec<Span> = (0..nb.dests.len())
                .map(|i| Span::new(Region::Send, i * n, n))
                .collect();
            let recv: Vec<Span> = (0..nb.sources.len())
                .map(|i| Span::new(Region::Recv, i * n, n))
                .collect();
            let mut pr = Program::new();
            exchange(&mut pr, &nb.sources, &nb.dests, &send, &recv, nb.crosswise);
            progs.push(pr);
            bufs.push(Bufs {
                send: (0..nb.dests.len())
                    .flat_map(|b| (0..n).map(move |i| val(r, b, i)))
                    .collect(),
                recv: vec![0xEE; nb.sources.len() * n],
            });
        }
        run(&progs, &mut bufs, None);
        bufs.into_iter().map(|b| b.recv).collect()
    }

    #[test]
    fn cartesian_blocks_pair_crosswise_even_when_a_neighbour_repeats() {
        let grids: &[(&[i32], &[bool])] = &[
            (&[1], &[true]),
            (&[2], &[true]),
            (&[3], &[true]),
            (&[4], &[false]),
            (&[2], &[false]),
            (&[2, 2], &[true, true]),
            (&[1, 3], &[true, false]),
            (&[2, 3], &[true, true]),
            (&[1, 1, 2], &[true, true, true]),
            (&[2, 1, 3], &[false, true, true]),
        ];
        for &(dims, periods) in grids {
            let cart = Cart::new("t", dims, periods).unwrap();
            let p = cart.size() as usize;
            let topo = Topology::Cart(cart.clone());
            for n in [0usize, 1, 3] {
                let got = alltoall(&topo, p, n);
                for (r, buf) in got.iter().enumerate() {
                    for d in 0..dims.len() {
                        let (src, dst) = cart.shift("t", r as i32, d as i32, 1).unwrap();
                        // Block 2d comes from the negative neighbour's block 2d + 1 (what it
                        // sent in the positive direction), block 2d + 1 from the positive
                        // neighbour's block 2d.
                        for (slot, from, their) in
                            [(2 * d, src, 2 * d + 1), (2 * d + 1, dst, 2 * d)]
                        {
                            let want: Vec<u8> = if from == PROC_NULL {
                                vec![0xEE; n]
                            } else {
                                (0..n).map(|i| val(from as usize, their, i)).collect()
                            };
                            assert_eq!(
                                &buf[slot * n..(slot + 1) * n],
                                &want[..],
                                "dims {dims:?} periods {periods:?} rank {r} block {slot}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The k-th occurrence of `r` among `j`'s destinations feeds the k-th occurrence of `j`
    /// among `r`'s sources.
    fn graph_reference(srcs: &[Vec<i32>], dsts: &[Vec<i32>], r: usize, n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, &j) in srcs[r].iter().enumerate() {
            let nth = srcs[r][..k].iter().filter(|&&x| x == j).count();
            let block = dsts[j as usize]
                .iter()
                .enumerate()
                .filter(|(_, &x)| x == r as i32)
                .nth(nth)
                .map(|(b, _)| b)
                .expect("an edge for every in-edge");
            out.extend((0..n).map(|i| val(j as usize, block, i)));
        }
        out
    }

    #[test]
    fn graph_edges_pair_in_order_with_repeats_and_self_loops() {
        // Asymmetric, with a repeated edge (0 → 1 twice) and a self loop (2 → 2).
        let dsts: Vec<Vec<i32>> = vec![vec![1, 2, 1], vec![0], vec![2, 0, 3], vec![]];
        let p = dsts.len();
        let srcs: Vec<Vec<i32>> = (0..p as i32)
            .map(|r| {
                (0..p as i32)
                    .flat_map(|j| {
                        dsts[j as usize]
                            .iter()
                            .filter(move |&&x| x == r)
                            .map(move |_| j)
                    })
                    .collect()
            })
            .collect();
        for n in [1usize, 4] {
            let mut progs = Vec::new();
            let mut bufs = Vec::new();
            for r in 0..p {
                let send: Vec<Span> = (0..dsts[r].len())
                    .map(|i| Span::new(Region::Send, i * n, n))
                    .collect();
                let recv: Vec<Span> = (0..srcs[r].len())
                    .map(|i| Span::new(Region::Recv, i * n, n))
                    .collect();
                let mut pr = Program::new();
                exchange(&mut pr, &srcs[r], &dsts[r], &send, &recv, false);
                progs.push(pr);
                bufs.push(Bufs {
                    send: (0..dsts[r].len())
                        .flat_map(|b| (0..n).map(move |i| val(r, b, i)))
                        .collect(),
                    recv: vec![0; srcs[r].len() * n],
                });
            }
            run(&progs, &mut bufs, None);
            for (r, b) in bufs.iter().enumerate() {
                assert_eq!(b.recv, graph_reference(&srcs, &dsts, r, n), "rank {r}");
            }
        }
    }
}
