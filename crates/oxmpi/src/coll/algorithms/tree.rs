//! Rooted collectives on trees: binomial broadcast, reduce, gather and scatter, the
//! scatter + ring-allgather broadcast for long messages, and the linear forms of gatherv and
//! scatterv. Trees are numbered relative to the root (`vr = (me - root) mod p`).

use super::{blocks, low_bit, offsets, rotate, unrotate, Grp};
use crate::coll::schedule::{Program, Span};

fn rel(g: &Grp<'_>, root: u32) -> (u32, u32, impl Fn(u32) -> u32) {
    let p = g.size();
    ((g.me + p - root) % p, p, move |v: u32| (v + root) % p)
}

/// Binomial-tree broadcast of `buf` from group index `root`: ⌈log₂ p⌉ rounds.
pub(crate) fn bcast_binomial(pr: &mut Program, g: Grp<'_>, root: u32, buf: Span) {
    let (vr, p, abs) = rel(&g, root);
    let mut mask = 1;
    while mask < p {
        if vr & mask != 0 {
            pr.recv(g.peer(abs(vr - mask)), buf);
            pr.wait();
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < p {
            pr.send(g.peer(abs(vr + mask)), buf);
        }
        mask >>= 1;
    }
    pr.wait();
}

/// Long-message broadcast (van de Geijn): binomial scatter of p pieces, then a ring
/// allgather of the pieces. About 2·n bytes per rank instead of n·log₂ p.
pub(crate) fn bcast_scatter_allgather(
    pr: &mut Program,
    g: Grp<'_>,
    root: u32,
    buf: Span,
    count: usize,
    elem: usize,
) {
    let (vr, p, abs) = rel(&g, root);
    let pu = p as usize;
    let offs = offsets(count, pu, elem);
    let range = |a: u32, b: u32| blocks(buf, &offs, a as usize, b.min(p) as usize);
    let mut mask = 1;
    while mask < p {
        if vr & mask != 0 {
            pr.recv(g.peer(abs(vr - mask)), range(vr, vr + mask));
            pr.wait();
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        let c = vr + mask;
        if c < p {
            pr.send(g.peer(abs(c)), range(c, c + mask));
        }
        mask >>= 1;
    }
    pr.wait();
    let (right, left) = (g.peer(abs((vr + 1) % p)), g.peer(abs((vr + p - 1) % p)));
    for s in 0..p - 1 {
        let out = (vr + p - s) % p;
        let inn = (vr + 2 * p - s - 1) % p;
        pr.send(right, range(out, out + 1));
        pr.recv(left, range(inn, inn + 1));
        pr.wait();
    }
}

/// Binomial-tree reduction of `input` (n bytes) to group index `root`'s `output`.
///
/// With a non-commutative operation the tree is rooted at index 0 so every combination
/// joins adjacent rank intervals in order, and index 0 forwards the result to `root`.
pub(crate) fn reduce_binomial(
    pr: &mut Program,
    g: Grp<'_>,
    root: u32,
    input: Span,
    output: Span,
    commutative: bool,
) {
    let n = input.len;
    let tree_root = if commutative { root } else { 0 };
    let (vr, p, abs) = rel(&g, tree_root);
    // Children, nearest first: each brings the combination of the ranks after this one's.
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < p && vr & mask == 0 {
        if vr | mask < p {
            children.push(vr | mask);
        }
        mask <<= 1;
    }
    let parent = (mask < p).then_some(vr & !mask);
    let acc = if children.is_empty() {
        // A leaf sends its input as it is: no scratch, no copy.
        input
    } else if g.me == root && tree_root == root {
        output
    } else {
        pr.scratch(n)
    };
    let mut inb = None;
    for (i, &c) in children.iter().enumerate() {
        if i == 0 && !input.overlaps(acc) {
            // The first child's data lands in the accumulator and this rank's input, which
            // comes first in rank order, is combined into it: one pass instead of a copy.
            pr.recv(g.peer(abs(c)), acc);
            pr.wait();
            pr.reduce(input, acc, false);
            continue;
        }
        if i == 0 {
            pr.copy(input, acc);
        }
        let b = *inb.get_or_insert_with(|| pr.scratch(n));
        pr.recv(g.peer(abs(c)), b);
        pr.wait();
        pr.reduce(b, acc, true);
    }
    if let Some(up) = parent {
        pr.send(g.peer(abs(up)), acc);
        pr.wait();
    }
    if tree_root != root {
        if g.me == tree_root {
            pr.send(g.peer(root), acc);
            pr.wait();
        } else if g.me == root {
            pr.recv(g.peer(tree_root), output);
            pr.wait();
        }
    } else if g.me == root {
        // A root without children (a group of one) still owes its output.
        pr.copy(acc, output);
    }
}

/// Binomial-tree gather of `n`-byte blocks to `root`'s `output` (p·n bytes, rank order).
pub(crate) fn gather_binomial(pr: &mut Program, g: Grp<'_>, root: u32, input: Span, output: Span) {
    let n = input.len;
    let (vr, p, abs) = rel(&g, root);
    let sub = if vr == 0 { p } else { low_bit(vr).min(p - vr) };
    let direct = vr == 0 && root == 0;
    let buf = if direct {
        output
    } else if vr != 0 && sub == 1 {
        // A leaf sends its input as it is.
        input
    } else {
        pr.scratch(sub as usize * n)
    };
    pr.copy(input, buf.sub(0, n));
    let mut mask = 1;
    while mask < p && vr & mask == 0 {
        let c = vr + mask;
        if c < p {
            let cnt = mask.min(p - c) as usize;
            pr.recv(g.peer(abs(c)), buf.sub(mask as usize * n, cnt * n));
        }
        mask <<= 1;
    }
    pr.wait();
    if vr != 0 {
        pr.send(g.peer(abs(vr - low_bit(vr))), buf);
        pr.wait();
    } else if !direct {
        unrotate(pr, buf, output, p, root, n);
    }
}

/// Binomial-tree scatter of `root`'s `input` (p blocks of `n` bytes) into each `output`
/// (`None`: the root keeps its block where it is, the in-place form).
pub(crate) fn scatter_binomial(
    pr: &mut Program,
    g: Grp<'_>,
    root: u32,
    input: Span,
    output: Option<Span>,
    n: usize,
) {
    let (vr, p, abs) = rel(&g, root);
    let sub = if vr == 0 { p } else { low_bit(vr).min(p - vr) };
    let buf = if vr == 0 {
        if root == 0 {
            input
        } else {
            let b = pr.scratch(p as usize * n);
            rotate(pr, input, b, p, root, n);
            b
        }
    } else {
        let b = pr.scratch(sub as usize * n);
        pr.recv(g.peer(abs(vr - low_bit(vr))), b);
        pr.wait();
        b
    };
    let mut mask = if vr == 0 {
        p.next_power_of_two()
    } else {
        low_bit(vr)
    } >> 1;
    while mask > 0 {
        let c = vr + mask;
        if c < p {
            let cnt = mask.min(p - c) as usize;
            pr.send(g.peer(abs(c)), buf.sub(mask as usize * n, cnt * n));
        }
        mask >>= 1;
    }
    if let Some(out) = output {
        pr.copy(buf.sub(0, n), out);
    }
    pr.wait();
}

/// Linear gather with a span per rank (gatherv, and gather of long blocks): every rank sends
/// straight to the root, which posts all receives at once. `slots[i]` is where rank i's data
/// lands at the root; the root's own block is copied (skipped when in place).
pub(crate) fn gather_linear(pr: &mut Program, g: Grp<'_>, root: u32, input: Span, slots: &[Span]) {
    if g.me == root {
        for i in 0..g.size() {
            if i == root {
                pr.copy(input, slots[i as usize]);
            } else {
                pr.recv(g.peer(i), slots[i as usize]);
            }
        }
    } else {
        pr.send(g.peer(root), input);
    }
    pr.wait();
}

/// Linear scatter with a span per rank (scatterv, and scatter of long blocks).
pub(crate) fn scatter_linear(
    pr: &mut Program,
    g: Grp<'_>,
    root: u32,
    slots: &[Span],
    output: Option<Span>,
) {
    if g.me == root {
        for i in 0..g.size() {
            if i == root {
                if let Some(o) = output {
                    pr.copy(slots[i as usize], o);
                }
            } else {
                pr.send(g.peer(i), slots[i as usize]);
            }
        }
    } else if let Some(o) = output {
        pr.recv(g.peer(root), o);
    }
    pr.wait();
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::coll::schedule::sim::Bufs;
    use crate::coll::schedule::Region;

    fn val(r: usize, i: usize) -> u8 {
        (r * 37 + i * 11 + 5) as u8
    }

    #[test]
    fn broadcasts_deliver_the_roots_bytes() {
        for &p in SIZES {
            for &count in COUNTS.iter().chain(&[100]) {
                for root in sweep(&[0, p - 1, p / 2]) {
                    for long in [false, true] {
                        let n = count * 4;
                        let buf = Span::new(Region::Recv, 0, n);
                        let progs: Vec<_> = (0..p)
                            .map(|r| {
                                let mut pr = Program::new();
                                if long {
                                    bcast_scatter_allgather(
                                        &mut pr,
                                        Grp::all(r, p),
                                        root,
                                        buf,
                                        count,
                                        4,
                                    );
                                } else {
                                    bcast_binomial(&mut pr, Grp::all(r, p), root, buf);
                                }
                                pr
                            })
                            .collect();
                        let mut bufs: Vec<Bufs> = (0..p as usize)
                            .map(|r| Bufs {
                                send: vec![],
                                recv: (0..n)
                                    .map(|i| if r == root as usize { val(r, i) } else { 0 })
                                    .collect(),
                            })
                            .collect();
                        run(&progs, &mut bufs, None);
                        let want: Vec<u8> = (0..n).map(|i| val(root as usize, i)).collect();
                        for b in &bufs {
                            assert_eq!(b.recv, want, "p {p} count {count} root {root} long {long}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn reductions_combine_in_rank_order_at_any_root() {
        for &p in SIZES {
            for &count in COUNTS {
                for root in sweep(&[0, p - 1, p / 2]) {
                    for commutative in [true, false] {
                        let n = count * 8;
                        let progs: Vec<_> = (0..p)
                            .map(|r| {
                                let mut pr = Program::new();
                                let out = Span::new(Region::Recv, 0, if r == root { n } else { 0 });
                                reduce_binomial(
                                    &mut pr,
                                    Grp::all(r, p),
                                    root,
                                    Span::new(Region::Send, 0, n),
                                    out,
                                    commutative,
                                );
                                pr
                            })
                            .collect();
                        let mut bufs: Vec<Bufs> = (0..p as usize)
                            .map(|r| Bufs {
                                send: bytes(
                                    &(0..count).map(|i| affine_in(r, i)).collect::<Vec<_>>(),
                                ),
                                recv: vec![0; if r == root as usize { n } else { 0 }],
                            })
                            .collect();
                        let c = if commutative { sum() } else { affine() };
                        run(&progs, &mut bufs, Some(&c));
                        let got = &bufs[root as usize].recv;
                        if commutative {
                            // u32 sums of both words of each element.
                            let want: Vec<u32> = (0..count)
                                .flat_map(|i| {
                                    (0..p as usize)
                                        .map(|r| affine_in(r, i))
                                        .fold([0u32; 2], |a, x| {
                                            [a[0].wrapping_add(x[0]), a[1].wrapping_add(x[1])]
                                        })
                                })
                                .collect();
                            assert_eq!(got, &bytes(&want), "p {p} count {count} root {root}");
                        } else {
                            let want: Vec<[u32; 2]> = (0..count)
                                .map(|i| affine_ref(affine_in, 0, p as usize, i))
                                .collect();
                            assert_eq!(got, &bytes(&want), "p {p} count {count} root {root}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn gathers_and_scatters_place_blocks_by_rank() {
        for &p in SIZES {
            for n in sweep(&[0usize, 1, 5, 12]) {
                for root in sweep(&[0, p - 1, p / 2]) {
                    for linear in [false, true] {
                        let pu = p as usize;
                        // gather
                        let progs: Vec<_> = (0..p)
                            .map(|r| {
                                let mut pr = Program::new();
                                let input = Span::new(Region::Send, 0, n);
                                let out =
                                    Span::new(Region::Recv, 0, if r == root { pu * n } else { 0 });
                                if linear {
                                    let slots: Vec<Span> = (0..pu)
                                        .map(|i| if r == root { out.sub(i * n, n) } else { out })
                                        .collect();
                                    gather_linear(&mut pr, Grp::all(r, p), root, input, &slots);
                                } else {
                                    gather_binomial(&mut pr, Grp::all(r, p), root, input, out);
                                }
                                pr
                            })
                            .collect();
                        let mut bufs: Vec<Bufs> = (0..pu)
                            .map(|r| Bufs {
                                send: (0..n).map(|i| val(r, i)).collect(),
                                recv: vec![0; if r == root as usize { pu * n } else { 0 }],
                            })
                            .collect();
                        run(&progs, &mut bufs, None);
                        let want: Vec<u8> = (0..pu)
                            .flat_map(|r| (0..n).map(move |i| val(r, i)))
                            .collect();
                        assert_eq!(
                            bufs[root as usize].recv, want,
                            "gather p {p} n {n} root {root}"
                        );
                        // scatter
                        let progs: Vec<_> = (0..p)
                            .map(|r| {
                                let mut pr = Program::new();
                                let input =
                                    Span::new(Region::Send, 0, if r == root { pu * n } else { 0 });
                                let out = Span::new(Region::Recv, 0, n);
                                if linear {
                                    let slots: Vec<Span> = (0..pu)
                                        .map(|i| {
                                            if r == root {
                                                input.sub(i * n, n)
                                            } else {
                                                input
                                            }
                                        })
                                        .collect();
                                    scatter_linear(
                                        &mut pr,
                                        Grp::all(r, p),
                                        root,
                                        &slots,
                                        Some(out),
                                    );
                                } else {
                                    scatter_binomial(
                                        &mut pr,
                                        Grp::all(r, p),
                                        root,
                                        input,
                                        Some(out),
                                        n,
                                    );
                                }
                                pr
                            })
                            .collect();
                        let mut bufs: Vec<Bufs> = (0..pu)
                            .map(|r| Bufs {
                                send: if r == root as usize {
                                    want.clone()
                                } else {
                                    vec![]
                                },
                                recv: vec![0; n],
                            })
                            .collect();
                        run(&progs, &mut bufs, None);
                        for (r, b) in bufs.iter().enumerate() {
                            assert_eq!(
                                b.recv,
                                (0..n).map(|i| val(r, i)).collect::<Vec<_>>(),
                                "scatter p {p} n {n} root {root}"
                            );
                        }
                    }
                }
            }
        }
    }
}
