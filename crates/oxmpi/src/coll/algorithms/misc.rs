//! Barrier (dissemination), inclusive and exclusive scan (recursive doubling), and
//! reduce-scatter for non-commutative operations (reduce, then scatter).

use super::{tree, Grp, EMPTY};
use crate::coll::schedule::{Program, Span};

/// Dissemination barrier: in round k, signal rank r + 2ᵏ and wait for rank r − 2ᵏ;
/// ⌈log₂ p⌉ rounds for any p.
pub(crate) fn barrier_dissemination(pr: &mut Program, g: Grp<'_>) {
    let (p, r) = (g.size(), g.me);
    let mut k = 1;
    while k < p {
        pr.send(g.peer((r + k) % p), EMPTY);
        pr.recv(g.peer((r + p - k) % p), EMPTY);
        pr.wait();
        k <<= 1;
    }
}

/// Inclusive scan by recursive doubling: `partial` covers an aligned block of ranks around
/// this one, `output` the ranks up to this one; combinations keep rank order.
pub(crate) fn scan(pr: &mut Program, g: Grp<'_>, input: Span, output: Span) {
    let (p, r, n) = (g.size(), g.me, input.len);
    pr.copy(input, output);
    if p == 1 {
        return;
    }
    let partial = pr.scratch(n);
    let tmp = pr.scratch(n);
    pr.copy(output, partial);
    let mut mask = 1;
    while mask < p {
        let dst = r ^ mask;
        if dst < p {
            pr.exchange(g.peer(dst), partial, tmp);
            if r > dst {
                pr.reduce(tmp, output, false);
                pr.reduce(tmp, partial, false);
            } else {
                pr.reduce(tmp, partial, true);
            }
        }
        mask <<= 1;
    }
}

/// Exclusive scan: as [`scan`], but `output` collects only lower ranks (rank 0's output is
/// left untouched, as MPI leaves it undefined).
pub(crate) fn exscan(pr: &mut Program, g: Grp<'_>, input: Span, output: Span) {
    let (p, r, n) = (g.size(), g.me, input.len);
    if p == 1 {
        return;
    }
    let partial = pr.scratch(n);
    let tmp = pr.scratch(n);
    pr.copy(input, partial);
    let mut have = false;
    let mut mask = 1;
    while mask < p {
        let dst = r ^ mask;
        if dst < p {
            pr.exchange(g.peer(dst), partial, tmp);
            if r > dst {
                if have {
                    pr.reduce(tmp, output, false);
                } else {
                    pr.copy(tmp, output);
                    have = true;
                }
                pr.reduce(tmp, partial, false);
            } else {
                pr.reduce(tmp, partial, true);
            }
        }
        mask <<= 1;
    }
}

/// Reduce-scatter for any operation: reduce the whole vector to rank 0 (rank order), then
/// scatter block i (`slots`, in the reduced vector's scratch) to rank i.
pub(crate) fn reduce_then_scatter(
    pr: &mut Program,
    g: Grp<'_>,
    input: Span,
    output: Span,
    offs: &[usize],
    commutative: bool,
) {
    let total = input.len;
    let whole = pr.scratch(if g.me == 0 { total } else { 0 });
    tree::reduce_binomial(pr, g, 0, input, whole, commutative);
    let slots: Vec<Span> = (0..g.size() as usize)
        .map(|i| {
            if g.me == 0 {
                whole.sub(offs[i], offs[i + 1] - offs[i])
            } else {
                whole
            }
        })
        .collect();
    tree::scatter_linear(pr, g, 0, &slots, Some(output));
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::{allreduce, offsets};
    use super::*;
    use crate::coll::schedule::sim::Bufs;
    use crate::coll::schedule::Region;

    /// ⌈log₂ p⌉.
    fn rounds(p: u32) -> u32 {
        if p <= 1 {
            0
        } else {
            super::super::pow2_floor(p - 1).trailing_zeros() + 1
        }
    }

    #[test]
    fn barrier_completes_with_no_stray_messages() {
        for &p in SIZES {
            let progs: Vec<_> = (0..p)
                .map(|r| {
                    let mut pr = Program::new();
                    barrier_dissemination(&mut pr, Grp::all(r, p));
                    pr
                })
                .collect();
            let rounds_seen = progs[0]
                .steps
                .iter()
                .filter(|s| matches!(s, crate::coll::schedule::Step::Wait))
                .count() as u32;
            assert_eq!(rounds_seen, rounds(p), "p {p}");
            run(&progs, &mut vec![Bufs::default(); p as usize], None);
        }
    }

    #[test]
    fn scans_follow_rank_order() {
        for &p in SIZES {
            for &count in COUNTS {
                for exclusive in [false, true] {
                    let n = count * 8;
                    let progs: Vec<_> = (0..p)
                        .map(|r| {
                            let mut pr = Program::new();
                            let (i, o) =
                                (Span::new(Region::Send, 0, n), Span::new(Region::Recv, 0, n));
                            if exclusive {
                                exscan(&mut pr, Grp::all(r, p), i, o);
                            } else {
                                scan(&mut pr, Grp::all(r, p), i, o);
                            }
                            pr
                        })
                        .collect();
                    let mut bufs: Vec<Bufs> = (0..p as usize)
                        .map(|r| Bufs {
                            send: bytes(&(0..count).map(|i| affine_in(r, i)).collect::<Vec<_>>()),
                            recv: vec![0; n],
                        })
                        .collect();
                    run(&progs, &mut bufs, Some(&affine()));
                    for (r, b) in bufs.iter().enumerate() {
                        if exclusive && r == 0 {
                            assert_eq!(b.recv, vec![0; n]);
                            continue;
                        }
                        let hi = if exclusive { r } else { r + 1 };
                        let want = bytes(
                            &(0..count)
                                .map(|i| affine_ref(affine_in, 0, hi, i))
                                .collect::<Vec<_>>(),
                        );
                        assert_eq!(
                            b.recv, want,
                            "p {p} count {count} rank {r} exclusive {exclusive}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn reduce_scatter_both_ways() {
        for &p in SIZES {
            let pu = p as usize;
            for per in [0usize, 1, 3] {
                // blocks of per + (i % 2) elements of 8 bytes
                let counts: Vec<usize> = (0..pu).map(|i| per + i % 2).collect();
                let mut offs = vec![0];
                for c in &counts {
                    offs.push(offs.last().unwrap() + c * 8);
                }
                let total_elems: usize = counts.iter().sum();
                for commutative in [true, false] {
                    let progs: Vec<_> = (0..pu)
                        .map(|r| {
                            let mut pr = Program::new();
                            let input = Span::new(Region::Send, 0, total_elems * 8);
                            let out = Span::new(Region::Recv, 0, counts[r] * 8);
                            if commutative {
                                let work = pr.scratch(total_elems * 8);
                                pr.copy(input, work);
                                allreduce::ring_reduce_scatter(
                                    &mut pr,
                                    Grp::all(r as u32, p),
                                    work,
                                    &offs,
                                );
                                pr.copy(work.sub(offs[r], counts[r] * 8), out);
                            } else {
                                reduce_then_scatter(
                                    &mut pr,
                                    Grp::all(r as u32, p),
                                    input,
                                    out,
                                    &offs,
                                    false,
                                );
                            }
                            pr
                        })
                        .collect();
                    let mut bufs: Vec<Bufs> = (0..pu)
                        .map(|r| Bufs {
                            send: bytes(
                                &(0..total_elems)
                                    .map(|i| affine_in(r, i))
                                    .collect::<Vec<_>>(),
                            ),
                            recv: vec![0; counts[r] * 8],
                        })
                        .collect();
                    let c = if commutative { sum() } else { affine() };
                    run(&progs, &mut bufs, Some(&c));
                    for (r, b) in bufs.iter().enumerate() {
                        let first = offs[r] / 8;
                        let want: Vec<[u32; 2]> = (first..first + counts[r])
                            .map(|i| {
                                if commutative {
                                    (0..pu).map(|q| affine_in(q, i)).fold([0u32; 2], |a, x| {
                                        [a[0].wrapping_add(x[0]), a[1].wrapping_add(x[1])]
                                    })
                                } else {
                                    affine_ref(affine_in, 0, pu, i)
                                }
                            })
                            .collect();
                        assert_eq!(
                            b.recv,
                            bytes(&want),
                            "p {p} per {per} comm {commutative} rank {r}"
                        );
                    }
                }
            }
        }
        let _ = offsets(1, 1, 1);
    }
}
