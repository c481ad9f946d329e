//! All-to-all: Bruck (short blocks, ⌈log₂ p⌉ rounds of packed blocks), pairwise exchange
//! (long blocks, p − 1 rounds of one send and one receive), and linear (medium: everything
//! posted at once). The last two take a span per peer, so they also serve alltoallv/w.

use super::{rotate, Grp};
use crate::coll::schedule::{Program, Span};

/// Bruck with equal `n`-byte blocks: rotate, then in round k ship every block whose index
/// has bit k set to rank r + k (packed into one message), then rotate back.
pub(crate) fn bruck(pr: &mut Program, g: Grp<'_>, input: Span, output: Span, n: usize) {
    let (p, r) = (g.size(), g.me);
    let pu = p as usize;
    let tmp = pr.scratch(pu * n);
    // tmp block i: the data this rank sends to rank r + i.
    rotate(pr, input, tmp, p, r, n);
    let most = pu.div_ceil(2);
    let (pack_out, pack_in) = (pr.scratch(most * n), pr.scratch(most * n));
    let mut k = 1usize;
    while k < pu {
        let idx: Vec<usize> = (0..pu).filter(|i| i & k != 0).collect();
        for (j, &i) in idx.iter().enumerate() {
            pr.copy(tmp.sub(i * n, n), pack_out.sub(j * n, n));
        }
        let len = idx.len() * n;
        pr.send(g.peer(((r as usize + k) % pu) as u32), pack_out.sub(0, len));
        pr.recv(
            g.peer(((r as usize + pu - k) % pu) as u32),
            pack_in.sub(0, len),
        );
        pr.wait();
        for (j, &i) in idx.iter().enumerate() {
            pr.copy(pack_in.sub(j * n, n), tmp.sub(i * n, n));
        }
        k <<= 1;
    }
    // tmp block i now holds what rank r − i sent to this rank.
    for j in 0..pu {
        let i = (r as usize + pu - j) % pu;
        pr.copy(tmp.sub(i * n, n), output.sub(j * n, n));
    }
}

/// Pairwise exchange: in round s, send to r + s and receive from r − s.
pub(crate) fn pairwise(pr: &mut Program, g: Grp<'_>, send: &[Span], recv: &[Span]) {
    let (p, r) = (g.size(), g.me);
    pr.copy(send[r as usize], recv[r as usize]);
    for s in 1..p {
        let (to, from) = ((r + s) % p, (r + p - s) % p);
        pr.send(g.peer(to), send[to as usize]);
        pr.recv(g.peer(from), recv[from as usize]);
        pr.wait();
    }
}

/// Linear: post every receive and every send at once (in rotated order, so ranks do not
/// all start with the same peer), then wait once.
pub(crate) fn linear(pr: &mut Program, g: Grp<'_>, send: &[Span], recv: &[Span]) {
    let (p, r) = (g.size(), g.me);
    pr.copy(send[r as usize], recv[r as usize]);
    for s in 1..p {
        let from = (r + p - s) % p;
        pr.recv(g.peer(from), recv[from as usize]);
    }
    for s in 1..p {
        let to = (r + s) % p;
        pr.send(g.peer(to), send[to as usize]);
    }
    pr.wait();
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::coll::schedule::sim::Bufs;
    use crate::coll::schedule::Region;

    fn val(from: usize, to: usize, i: usize) -> u8 {
        (from * 41 + to * 7 + i * 3 + 2) as u8
    }

    #[test]
    fn every_block_reaches_its_destination() {
        for &p in SIZES {
            for n in sweep(&[0usize, 1, 4, 9]) {
                for alg in 0..3 {
                    let pu = p as usize;
                    let progs: Vec<_> = (0..p)
                        .map(|r| {
                            let mut pr = Program::new();
                            let (i, o) = (
                                Span::new(Region::Send, 0, pu * n),
                                Span::new(Region::Recv, 0, pu * n),
                            );
                            let si: Vec<Span> = (0..pu).map(|j| i.sub(j * n, n)).collect();
                            let so: Vec<Span> = (0..pu).map(|j| o.sub(j * n, n)).collect();
                            match alg {
                                0 => bruck(&mut pr, Grp::all(r, p), i, o, n),
                                1 => pairwise(&mut pr, Grp::all(r, p), &si, &so),
                                _ => linear(&mut pr, Grp::all(r, p), &si, &so),
                            }
                            pr
                        })
                        .collect();
                    let mut bufs: Vec<Bufs> = (0..pu)
                        .map(|r| Bufs {
                            send: (0..pu)
                                .flat_map(|to| (0..n).map(move |i| val(r, to, i)))
                                .collect(),
                            recv: vec![0; pu * n],
                        })
                        .collect();
                    run(&progs, &mut bufs, None);
                    for (r, b) in bufs.iter().enumerate() {
                        let want: Vec<u8> = (0..pu)
                            .flat_map(|from| (0..n).map(move |i| val(from, r, i)))
                            .collect();
                        assert_eq!(b.recv, want, "alg {alg} p {p} n {n} rank {r}");
                    }
                }
            }
        }
    }

    #[test]
    fn variable_blocks_with_pairwise_and_linear() {
        for &p in SIZES {
            let pu = p as usize;
            let size = |from: usize, to: usize| (from + 2 * to) % 5;
            for alg in 0..2 {
                let progs: Vec<_> = (0..pu)
                    .map(|r| {
                        let mut pr = Program::new();
                        let mut so = 0;
                        let si: Vec<Span> = (0..pu)
                            .map(|to| {
                                let s = Span::new(Region::Send, so, size(r, to));
                                so += size(r, to);
                                s
                            })
                            .collect();
                        let mut ro = 0;
                        let ri: Vec<Span> = (0..pu)
                            .map(|from| {
                                let s = Span::new(Region::Recv, ro, size(from, r));
                                ro += size(from, r);
                                s
                            })
                            .collect();
                        if alg == 0 {
                            pairwise(&mut pr, Grp::all(r as u32, p), &si, &ri);
                        } else {
                            linear(&mut pr, Grp::all(r as u32, p), &si, &ri);
                        }
                        pr
                    })
                    .collect();
                let mut bufs: Vec<Bufs> = (0..pu)
                    .map(|r| Bufs {
                        send: (0..pu)
                            .flat_map(|to| (0..size(r, to)).map(move |i| val(r, to, i)))
                            .collect(),
                        recv: vec![0; (0..pu).map(|f| size(f, r)).sum()],
                    })
                    .collect();
                run(&progs, &mut bufs, None);
                for (r, b) in bufs.iter().enumerate() {
                    let want: Vec<u8> = (0..pu)
                        .flat_map(|f| (0..size(f, r)).map(move |i| val(f, r, i)))
                        .collect();
                    assert_eq!(b.recv, want, "alg {alg} p {p}");
                }
            }
        }
    }
}
