//! Allgather: recursive doubling (power-of-two groups), Bruck (any size, ⌈log₂ p⌉ rounds) and
//! the ring (long messages, and allgatherv with any block sizes).

use super::allreduce::ring_allgather;
use super::{unrotate, Grp};
use crate::coll::schedule::{Program, Span};

/// Recursive doubling for power-of-two groups: log₂ p exchanges of doubling size.
pub(crate) fn recursive_doubling(pr: &mut Program, g: Grp<'_>, input: Span, output: Span) {
    let (p, r, n) = (g.size(), g.me, input.len);
    debug_assert!(p.is_power_of_two());
    pr.copy(input, output.sub(r as usize * n, n));
    let mut mask = 1;
    while mask < p {
        let partner = r ^ mask;
        let mine = (r & !(mask - 1)) as usize;
        let theirs = (partner & !(mask - 1)) as usize;
        let m = mask as usize;
        pr.exchange(
            g.peer(partner),
            output.sub(mine * n, m * n),
            output.sub(theirs * n, m * n),
        );
        mask <<= 1;
    }
}

/// Bruck: in round k, send the first min(k, p − k) gathered blocks to rank r − k and receive
/// as many from r + k; then rotate into rank order.
pub(crate) fn bruck(pr: &mut Program, g: Grp<'_>, input: Span, output: Span) {
    let (p, r, n) = (g.size(), g.me, input.len);
    let tmp = pr.scratch(p as usize * n);
    pr.copy(input, tmp.sub(0, n));
    let mut k = 1;
    while k < p {
        let cnt = k.min(p - k) as usize;
        pr.send(g.peer((r + p - k) % p), tmp.sub(0, cnt * n));
        pr.recv(g.peer((r + k) % p), tmp.sub(k as usize * n, cnt * n));
        pr.wait();
        k <<= 1;
    }
    // tmp block j holds rank (r + j) mod p's data.
    unrotate(pr, tmp, output, p, r, n);
}

/// Ring over blocks at byte offsets `offs` (allgather of long blocks; allgatherv).
/// `input` is copied into block `me` first (skipped when already there: in place).
pub(crate) fn ring(pr: &mut Program, g: Grp<'_>, input: Span, output: Span, offs: &[usize]) {
    let r = g.me as usize;
    pr.copy(input, output.sub(offs[r], offs[r + 1] - offs[r]));
    ring_allgather(pr, g, output, offs);
}

/// Allgatherv with blocks anywhere in `output`: every rank sends its block to every other
/// directly (posted all at once). `slots[i]` is where rank i's block lands.
pub(crate) fn linear_v(pr: &mut Program, g: Grp<'_>, input: Span, slots: &[Span]) {
    let (p, r) = (g.size(), g.me);
    pr.copy(input, slots[r as usize]);
    for s in 1..p {
        let from = (r + p - s) % p;
        pr.recv(g.peer(from), slots[from as usize]);
    }
    for s in 1..p {
        pr.send(g.peer((r + s) % p), input);
    }
    pr.wait();
}

#[cfg(test)]
mod tests {
    use super::super::offsets;
    use super::super::testing::*;
    use super::*;
    use crate::coll::schedule::sim::Bufs;
    use crate::coll::schedule::Region;

    fn val(r: usize, i: usize) -> u8 {
        (r * 29 + i * 13 + 1) as u8
    }

    #[test]
    fn allgathers_collect_every_block_in_rank_order() {
        for &p in SIZES {
            for n in sweep(&[0usize, 1, 3, 8, 20]) {
                for alg in 0..4 {
                    if alg == 0 && !p.is_power_of_two() {
                        continue;
                    }
                    for in_place in [false, true] {
                        let pu = p as usize;
                        let progs: Vec<_> = (0..p)
                            .map(|r| {
                                let mut pr = Program::new();
                                let out = Span::new(Region::Recv, 0, pu * n);
                                let input = if in_place {
                                    out.sub(r as usize * n, n)
                                } else {
                                    Span::new(Region::Send, 0, n)
                                };
                                let g = Grp::all(r, p);
                                match alg {
                                    0 => recursive_doubling(&mut pr, g, input, out),
                                    1 => bruck(&mut pr, g, input, out),
                                    2 => ring(&mut pr, g, input, out, &offsets(pu, pu, n)),
                                    _ => {
                                        let slots: Vec<Span> =
                                            (0..pu).map(|i| out.sub(i * n, n)).collect();
                                        linear_v(&mut pr, g, input, &slots)
                                    }
                                }
                                pr
                            })
                            .collect();
                        let mut bufs: Vec<Bufs> = (0..pu)
                            .map(|r| {
                                let mine: Vec<u8> = (0..n).map(|i| val(r, i)).collect();
                                if in_place {
                                    let mut recv = vec![0; pu * n];
                                    recv[r * n..(r + 1) * n].copy_from_slice(&mine);
                                    Bufs { send: vec![], recv }
                                } else {
                                    Bufs {
                                        send: mine,
                                        recv: vec![0; pu * n],
                                    }
                                }
                            })
                            .collect();
                        run(&progs, &mut bufs, None);
                        let want: Vec<u8> = (0..pu)
                            .flat_map(|r| (0..n).map(move |i| val(r, i)))
                            .collect();
                        for b in &bufs {
                            assert_eq!(b.recv, want, "alg {alg} p {p} n {n} in_place {in_place}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn ring_handles_uneven_blocks() {
        for &p in SIZES {
            let pu = p as usize;
            let sizes: Vec<usize> = (0..pu).map(|r| (r * 5) % 7).collect();
            let mut offs = vec![0];
            for s in &sizes {
                offs.push(offs.last().unwrap() + s);
            }
            let total = offs[pu];
            let progs: Vec<_> = (0..p)
                .map(|r| {
                    let mut pr = Program::new();
                    ring(
                        &mut pr,
                        Grp::all(r, p),
                        Span::new(Region::Send, 0, sizes[r as usize]),
                        Span::new(Region::Recv, 0, total),
                        &offs,
                    );
                    pr
                })
                .collect();
            let mut bufs: Vec<Bufs> = (0..pu)
                .map(|r| Bufs {
                    send: (0..sizes[r]).map(|i| val(r, i)).collect(),
                    recv: vec![0; total],
                })
                .collect();
            run(&progs, &mut bufs, None);
            let want: Vec<u8> = (0..pu)
                .flat_map(|r| (0..sizes[r]).map(move |i| val(r, i)))
                .collect();
            for b in &bufs {
                assert_eq!(b.recv, want, "p {p}");
            }
        }
    }
}
