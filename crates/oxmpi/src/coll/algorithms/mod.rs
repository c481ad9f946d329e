//! Collective algorithms as pure functions: given this rank's place in a group, sizes and the
//! spans holding input and output, each appends the steps of one algorithm to a [`Program`].
//! No communication happens here, so every algorithm is unit-tested for many group sizes and
//! counts on a simulated network ([`schedule::sim`](super::schedule::sim)).
//!
//! Algorithms work on a [`Grp`]: a list of communicator ranks (all ranks, or one host's, or
//! the host leaders), so the node-aware variants compose the flat ones.

pub(crate) mod allgather;
pub(crate) mod allreduce;
pub(crate) mod alltoall;
pub(crate) mod misc;
pub(crate) mod neighbor;
pub(crate) mod tree;

use super::schedule::{Peer, Program, Region, Span};

/// The ranks an algorithm runs over: index `i` of the group is communicator rank `at(i)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grp<'a> {
    list: Option<&'a [u32]>,
    size: u32,
    /// This rank's index in the group.
    pub me: u32,
}

impl<'a> Grp<'a> {
    /// Every rank of a communicator of `size`, this one being `me`.
    pub fn all(me: u32, size: u32) -> Grp<'static> {
        Grp {
            list: None,
            size,
            me,
        }
    }
    /// The ranks in `list`, this one being `list[me]`.
    pub fn of(list: &'a [u32], me: u32) -> Grp<'a> {
        Grp {
            list: Some(list),
            size: list.len() as u32,
            me,
        }
    }
    pub fn size(&self) -> u32 {
        self.size
    }
    /// The peer at group index `i`.
    pub fn peer(&self, i: u32) -> Peer {
        Peer::Local(self.list.map_or(i, |l| l[i as usize]))
    }
}

/// Element range `[start, start + len)` of part `i` when `count` elements are split into
/// `parts` nearly equal parts (the first `count % parts` one larger).
pub(crate) fn part(count: usize, parts: usize, i: usize) -> (usize, usize) {
    let (q, r) = (count / parts, count % parts);
    (i * q + i.min(r), q + usize::from(i < r))
}

/// Byte offsets of `parts` nearly equal parts of `count` elements of `elem` bytes: part `i`
/// is `[offs[i], offs[i + 1])`.
pub(crate) fn offsets(count: usize, parts: usize, elem: usize) -> Vec<usize> {
    (0..=parts)
        .map(|i| {
            if i == parts {
                count * elem
            } else {
                part(count, parts, i).0 * elem
            }
        })
        .collect()
}

/// Blocks `[offs[a], offs[b])` of `span`.
pub(crate) fn blocks(span: Span, offs: &[usize], a: usize, b: usize) -> Span {
    span.sub(offs[a], offs[b] - offs[a])
}

/// Largest power of two ≤ `p` (p ≥ 1).
pub(crate) fn pow2_floor(p: u32) -> u32 {
    1 << (31 - p.leading_zeros())
}

/// Lowest set bit of `v` (v > 0).
pub(crate) fn low_bit(v: u32) -> u32 {
    v & v.wrapping_neg()
}

/// A zero-length span (messages that only synchronize).
pub(crate) const EMPTY: Span = Span::new(Region::Tmp, 0, 0);

/// Copies `len` bytes of `src` starting at group block `from`, rotated: block `j` of `dst`
/// (relative order) is block `(j + shift) % p` of `src` (absolute order), `n` bytes a block.
pub(crate) fn rotate(pr: &mut Program, src: Span, dst: Span, p: u32, shift: u32, n: usize) {
    let (p, s) = (p as usize, shift as usize);
    pr.copy(src.sub(s * n, (p - s) * n), dst.sub(0, (p - s) * n));
    pr.copy(src.sub(0, s * n), dst.sub((p - s) * n, s * n));
}

/// The inverse of [`rotate`]: block `j` of `src` (relative) goes to block `(j + shift) % p`.
pub(crate) fn unrotate(pr: &mut Program, src: Span, dst: Span, p: u32, shift: u32, n: usize) {
    let (p, s) = (p as usize, shift as usize);
    pr.copy(src.sub(0, (p - s) * n), dst.sub(s * n, (p - s) * n));
    pr.copy(src.sub((p - s) * n, s * n), dst.sub(0, s * n));
}

#[cfg(test)]
pub(crate) mod testing {
    //! Shared helpers for the algorithm tests: operations and simulated runs.

    use super::super::schedule::{sim, Combine, Program};
    use crate::op::{Op, Reducible};

    /// Sum of u32 (commutative).
    pub fn sum() -> Combine {
        Combine {
            kernel: Op::Sum.kernel_for::<u32>().unwrap(),
            commutative: true,
        }
    }

    /// Composition of affine maps x ↦ a·x + b over u32 (wrapping), applied lower rank first:
    /// (f ∘ g) here means "f, then g" — associative, not commutative.
    pub fn affine() -> Combine {
        let op = Op::user::<[u32; 2]>(false, |a, b| {
            for (f, g) in a.iter().zip(b.iter_mut()) {
                // first f then g: x ↦ g.a (f.a x + f.b) + g.b
                *g = [
                    g[0].wrapping_mul(f[0]),
                    g[0].wrapping_mul(f[1]).wrapping_add(g[1]),
                ];
            }
        });
        Combine {
            kernel: op.kernel_for::<[u32; 2]>().unwrap(),
            commutative: false,
        }
    }

    /// Serial reference of `affine` over ranks `lo..hi` for element `i`.
    pub fn affine_ref(
        input: impl Fn(usize, usize) -> [u32; 2],
        lo: usize,
        hi: usize,
        i: usize,
    ) -> [u32; 2] {
        let mut acc = input(lo, i);
        for r in lo + 1..hi {
            let g = input(r, i);
            acc = [
                g[0].wrapping_mul(acc[0]),
                g[0].wrapping_mul(acc[1]).wrapping_add(g[1]),
            ];
        }
        acc
    }

    /// Input element `i` of rank `r` for the affine tests.
    pub fn affine_in(r: usize, i: usize) -> [u32; 2] {
        [(r * 7 + i * 3 + 1) as u32 | 1, (r * 131 + i) as u32]
    }

    pub fn bytes<T: Reducible>(v: &[T]) -> Vec<u8> {
        bytemuck::cast_slice(v).to_vec()
    }

    pub fn run(progs: &[Program], bufs: &mut [sim::Bufs], c: Option<&Combine>) {
        sim::run(progs, bufs, c)
    }

    #[cfg(not(miri))]
    pub const SIZES: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16];
    #[cfg(not(miri))]
    pub const COUNTS: &[usize] = &[0, 1, 2, 3, 7, 16, 33];
    // Miri interprets every step (~1000× slower), and these sweeps hold no unsafe code of
    // their own: one communicator size of each kind (a power of two and not) and one count
    // of each kind (empty, fewer and more elements than ranks).
    #[cfg(miri)]
    pub const SIZES: &[u32] = &[3, 4];
    #[cfg(miri)]
    pub const COUNTS: &[usize] = &[0, 1, 7];

    /// The values of a test's own sweep: all, or under Miri the first and the last.
    pub fn sweep<T: Copy>(all: &[T]) -> Vec<T> {
        if cfg!(miri) && all.len() > 2 {
            vec![all[0], all[all.len() - 1]]
        } else {
            all.to_vec()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_range_in_order() {
        for count in 0..20 {
            for parts in 1..9 {
                let mut next = 0;
                for i in 0..parts {
                    let (s, l) = part(count, parts, i);
                    assert_eq!(s, next);
                    next += l;
                }
                assert_eq!(next, count);
                let o = offsets(count, parts, 4);
                assert_eq!(o.len(), parts + 1);
                assert_eq!(o[parts], count * 4);
            }
        }
        assert_eq!(pow2_floor(1), 1);
        assert_eq!(pow2_floor(7), 4);
        assert_eq!(pow2_floor(8), 8);
        assert_eq!(low_bit(12), 4);
    }
}
