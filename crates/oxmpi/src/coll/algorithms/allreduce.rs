//! Allreduce: recursive doubling (short), Rabenseifner's reduce-scatter + allgather (long),
//! and the ring (long, commutative, any group size); plus the ring reduce-scatter.
//!
//! Every algorithm here gives bit-identical results on all ranks: in recursive doubling both
//! partners combine the same two operands in the same (rank) order; in the others each piece
//! is combined by exactly one rank and then copied to the rest.

use super::{blocks, offsets, pow2_floor, Grp};
use crate::coll::schedule::{Program, Span};

/// Folds a non-power-of-two group: of the first 2·rem ranks, each even one hands its data to
/// the odd one above it and sits out. Returns this rank's index among the remaining
/// power-of-two ranks, and the map from those indices back to group indices.
fn fold(pr: &mut Program, g: &Grp<'_>, acc: Span, tmp: Span) -> (Option<u32>, u32, u32) {
    let (p, r) = (g.size(), g.me);
    let pof2 = pow2_floor(p);
    let rem = p - pof2;
    let nr = if r < 2 * rem {
        if r % 2 == 0 {
            pr.send(g.peer(r + 1), acc);
            pr.wait();
            None
        } else {
            pr.recv(g.peer(r - 1), tmp);
            pr.wait();
            pr.reduce(tmp, acc, false);
            Some(r / 2)
        }
    } else {
        Some(r - rem)
    };
    (nr, pof2, rem)
}

fn real(nr: u32, rem: u32) -> u32 {
    if nr < rem {
        2 * nr + 1
    } else {
        nr + rem
    }
}

fn unfold(pr: &mut Program, g: &Grp<'_>, rem: u32, acc: Span) {
    let r = g.me;
    if r < 2 * rem {
        if r % 2 == 1 {
            pr.send(g.peer(r - 1), acc);
        } else {
            pr.recv(g.peer(r + 1), acc);
        }
        pr.wait();
    }
}

/// Recursive doubling: ⌈log₂ p⌉ exchanges of the whole vector (plus two for a non-power of
/// two). Any operation: partners combine in rank order. In a power-of-two group the first
/// exchange sends the input itself and receives into the output, which the input is then
/// combined into (no copy first), where the operation allows combining that way round.
pub(crate) fn recursive_doubling(
    pr: &mut Program,
    g: Grp<'_>,
    input: Span,
    output: Span,
    commutative: bool,
) {
    let n = input.len;
    let p = g.size();
    let direct =
        p > 1 && p == pow2_floor(p) && !input.overlaps(output) && (commutative || g.me & 1 == 0);
    if !direct {
        pr.copy(input, output);
    }
    if p == 1 {
        return;
    }
    let (nr, pof2, rem, first) = if direct {
        // The partner of the first step is the rank next to this one: this rank's input
        // comes first (even rank) or the operation commutes.
        pr.exchange(g.peer(g.me ^ 1), input, output);
        pr.reduce(input, output, false);
        (Some(g.me), p, 0, 2)
    } else {
        let tmp = pr.scratch(n);
        let (nr, pof2, rem) = fold(pr, &g, output, tmp);
        (nr, pof2, rem, 1)
    };
    if let Some(nr) = nr {
        let mut tmp = None;
        let mut mask = first;
        while mask < pof2 {
            let t = *tmp.get_or_insert_with(|| pr.scratch(n));
            let partner = nr ^ mask;
            let dst = real(partner, rem);
            pr.exchange(g.peer(dst), output, t);
            pr.reduce(t, output, partner > nr);
            mask <<= 1;
        }
    }
    unfold(pr, &g, rem, output);
}

/// Rabenseifner: reduce-scatter by recursive halving, then allgather by recursive doubling;
/// about 2·n bytes moved per rank. Any operation (pieces combine adjacent rank intervals).
/// Without folding, the first halving step reads the input directly (no copy to the output
/// first) when the operation allows combining into the received half.
pub(crate) fn rabenseifner(
    pr: &mut Program,
    g: Grp<'_>,
    input: Span,
    output: Span,
    count: usize,
    elem: usize,
    commutative: bool,
) {
    let n = input.len;
    let (p, r) = (g.size(), g.me);
    let pof2 = pow2_floor(p);
    let direct = p > 1 && p == pof2 && input != output && (commutative || r & 1 == 0);
    if !direct {
        pr.copy(input, output);
    }
    if p == 1 {
        return;
    }
    let tmp = pr.scratch(n);
    let (nr, pof2, rem) = if direct {
        (Some(r), pof2, 0)
    } else {
        fold(pr, &g, output, tmp)
    };
    if let Some(nr) = nr {
        let offs = offsets(count, pof2 as usize, elem);
        let range = |s: Span, a: u32, b: u32| blocks(s, &offs, a as usize, b as usize);
        let (mut lo, mut hi) = (0u32, pof2);
        let mut mask = 1;
        while mask < pof2 {
            let partner = nr ^ mask;
            let dst = g.peer(real(partner, rem));
            let mid = (lo + hi) / 2;
            let (keep, give) = if nr & mask == 0 {
                ((lo, mid), (mid, hi))
            } else {
                ((mid, hi), (lo, mid))
            };
            if direct && mask == 1 {
                // Theirs lands in the output; mine is combined from the input.
                pr.send(dst, range(input, give.0, give.1));
                pr.recv(dst, range(output, keep.0, keep.1));
                pr.wait();
                pr.reduce(
                    range(input, keep.0, keep.1),
                    range(output, keep.0, keep.1),
                    partner < nr,
                );
            } else {
                pr.send(dst, range(output, give.0, give.1));
                pr.recv(dst, range(tmp, keep.0, keep.1));
                pr.wait();
                pr.reduce(
                    range(tmp, keep.0, keep.1),
                    range(output, keep.0, keep.1),
                    partner > nr,
                );
            }
            (lo, hi) = keep;
            mask <<= 1;
        }
        mask = pof2 >> 1;
        while mask > 0 {
            let partner = nr ^ mask;
            let dst = g.peer(real(partner, rem));
            let w = hi - lo;
            let other = if nr & mask == 0 {
                (hi, hi + w)
            } else {
                (lo - w, lo)
            };
            pr.send(dst, range(output, lo, hi));
            pr.recv(dst, range(output, other.0, other.1));
            pr.wait();
            (lo, hi) = (lo.min(other.0), hi.max(other.1));
            mask >>= 1;
        }
    }
    unfold(pr, &g, rem, output);
}

/// Ring reduce-scatter over `work` (p blocks, `offs` in bytes): after p − 1 steps, rank r
/// holds the fully reduced block r. Commutative operations only.
pub(crate) fn ring_reduce_scatter(pr: &mut Program, g: Grp<'_>, work: Span, offs: &[usize]) {
    let (p, r) = (g.size(), g.me);
    let maxb = (0..p as usize)
        .map(|i| offs[i + 1] - offs[i])
        .max()
        .unwrap_or(0);
    let tmp = pr.scratch(maxb);
    let (right, left) = (g.peer((r + 1) % p), g.peer((r + p - 1) % p));
    for s in 0..p.saturating_sub(1) {
        let out = ((r + 2 * p - s - 1) % p) as usize;
        let inn = ((r + 2 * p - s - 2) % p) as usize;
        let inb = tmp.sub(0, offs[inn + 1] - offs[inn]);
        pr.send(right, blocks(work, offs, out, out + 1));
        pr.recv(left, inb);
        pr.wait();
        pr.reduce(inb, blocks(work, offs, inn, inn + 1), false);
    }
}

/// Ring allgather of blocks `offs` in `buf`, each rank starting with its own block.
pub(crate) fn ring_allgather(pr: &mut Program, g: Grp<'_>, buf: Span, offs: &[usize]) {
    let (p, r) = (g.size(), g.me);
    let (right, left) = (g.peer((r + 1) % p), g.peer((r + p - 1) % p));
    for s in 0..p.saturating_sub(1) {
        let out = ((r + p - s) % p) as usize;
        let inn = ((r + 2 * p - s - 1) % p) as usize;
        pr.send(right, blocks(buf, offs, out, out + 1));
        pr.recv(left, blocks(buf, offs, inn, inn + 1));
        pr.wait();
    }
}

/// Ring allreduce: ring reduce-scatter then ring allgather, 2·(p − 1) steps moving about
/// 2·n bytes per rank. Commutative operations only.
pub(crate) fn ring(
    pr: &mut Program,
    g: Grp<'_>,
    input: Span,
    output: Span,
    count: usize,
    elem: usize,
) {
    pr.copy(input, output);
    let offs = offsets(count, g.size() as usize, elem);
    ring_reduce_scatter(pr, g, output, &offs);
    ring_allgather(pr, g, output, &offs);
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::coll::schedule::sim::Bufs;
    use crate::coll::schedule::Region;

    type Alg = fn(&mut Program, Grp<'_>, Span, Span, usize, usize);

    fn check(alg: Alg, name: &str, noncomm: bool) {
        for &p in SIZES {
            for &count in COUNTS.iter().chain(&[64]) {
                for in_place in [false, true] {
                    let n = count * 8;
                    let progs: Vec<_> = (0..p)
                        .map(|r| {
                            let mut pr = Program::new();
                            let out = Span::new(Region::Recv, 0, n);
                            let input = if in_place {
                                out
                            } else {
                                Span::new(Region::Send, 0, n)
                            };
                            alg(&mut pr, Grp::all(r, p), input, out, count, 8);
                            pr
                        })
                        .collect();
                    let data =
                        |r: usize| bytes(&(0..count).map(|i| affine_in(r, i)).collect::<Vec<_>>());
                    let mut bufs: Vec<Bufs> = (0..p as usize)
                        .map(|r| {
                            if in_place {
                                Bufs {
                                    send: vec![],
                                    recv: data(r),
                                }
                            } else {
                                Bufs {
                                    send: data(r),
                                    recv: vec![0; n],
                                }
                            }
                        })
                        .collect();
                    let c = if noncomm { affine() } else { sum() };
                    run(&progs, &mut bufs, Some(&c));
                    let want: Vec<u8> = if noncomm {
                        bytes(
                            &(0..count)
                                .map(|i| affine_ref(affine_in, 0, p as usize, i))
                                .collect::<Vec<_>>(),
                        )
                    } else {
                        bytes(
                            &(0..count)
                                .map(|i| {
                                    (0..p as usize)
                                        .map(|r| affine_in(r, i))
                                        .fold([0u32; 2], |a, x| {
                                            [a[0].wrapping_add(x[0]), a[1].wrapping_add(x[1])]
                                        })
                                })
                                .collect::<Vec<_>>(),
                        )
                    };
                    for (r, b) in bufs.iter().enumerate() {
                        assert_eq!(
                            b.recv, want,
                            "{name} p {p} count {count} rank {r} in_place {in_place}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn recursive_doubling_is_exact_for_any_operation() {
        let comm: Alg = |pr, g, i, o, _, _| recursive_doubling(pr, g, i, o, true);
        let noncomm: Alg = |pr, g, i, o, _, _| recursive_doubling(pr, g, i, o, false);
        check(comm, "recursive doubling", false);
        check(noncomm, "recursive doubling", true);
    }

    #[test]
    fn rabenseifner_is_exact_for_any_operation() {
        let comm: Alg = |pr, g, i, o, c, e| rabenseifner(pr, g, i, o, c, e, true);
        let noncomm: Alg = |pr, g, i, o, c, e| rabenseifner(pr, g, i, o, c, e, false);
        check(comm, "rabenseifner", false);
        check(noncomm, "rabenseifner", true);
    }

    #[test]
    fn ring_is_exact_for_commutative_operations() {
        check(ring, "ring", false);
    }
}
