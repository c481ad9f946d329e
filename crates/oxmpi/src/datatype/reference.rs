//! A reference interpreter of type maps, naive and obviously right: every type expands to
//! its list of `(offset, basic type)` entries straight from the standard's definitions
//! (subarray and darray by enumerating the owned indices), with bounds from the placed
//! instances of each old type. Property tests check the compiled engine against it on
//! random type trees: size, bounds, true bounds, pack (whole and resumed in random chunks),
//! unpack (gap bytes untouched), iovec pieces, get_elements and envelope/contents round trips.

use proptest::prelude::*;

use super::build::{Combiner, Distribution, Order, Type};
use super::envelope::from_contents;
use super::pack;
use super::predefined::{Predefined, Repr};

/// An expanded type map.
#[derive(Debug, Clone, PartialEq)]
struct Map {
    entries: Vec<(i64, Repr)>,
    lb: i64,
    ub: i64,
    lb_m: bool,
    ub_m: bool,
    align: u64,
}

impl Map {
    fn extent(&self) -> i64 {
        self.ub - self.lb
    }

    fn true_bounds(&self) -> (i64, i64) {
        let lo = self.entries.iter().map(|e| e.0).min().unwrap_or(0);
        let hi = self
            .entries
            .iter()
            .map(|e| e.0 + e.1.size() as i64)
            .max()
            .unwrap_or(0);
        (lo, hi)
    }
}

/// The map of old types placed at the given displacements, in order.
fn place(instances: &[(i64, &Map)], pad: bool) -> Map {
    let mut entries = Vec::new();
    for (d, m) in instances {
        entries.extend(m.entries.iter().map(|(o, r)| (o + d, *r)));
    }
    let live: Vec<&(i64, &Map)> = instances
        .iter()
        .filter(|(_, m)| !m.entries.is_empty() || m.lb_m || m.ub_m)
        .collect();
    let lb_m = live.iter().any(|(_, m)| m.lb_m);
    let ub_m = live.iter().any(|(_, m)| m.ub_m);
    let lb = live
        .iter()
        .filter(|(_, m)| if lb_m { m.lb_m } else { !m.entries.is_empty() })
        .map(|(d, m)| d + m.lb)
        .min()
        .unwrap_or(0);
    let mut ub = live
        .iter()
        .filter(|(_, m)| if ub_m { m.ub_m } else { !m.entries.is_empty() })
        .map(|(d, m)| d + m.ub)
        .max()
        .unwrap_or(0);
    let align = live.iter().map(|(_, m)| m.align).max().unwrap_or(1);
    if pad && !ub_m && !entries.is_empty() {
        while (ub - lb) % align as i64 != 0 {
            ub += 1;
        }
    }
    Map {
        entries,
        lb,
        ub,
        lb_m,
        ub_m,
        align,
    }
}

fn whole_array(entries: Vec<(i64, Repr)>, ub: i64, align: u64) -> Map {
    Map {
        entries,
        lb: 0,
        ub,
        lb_m: true,
        ub_m: true,
        align,
    }
}

fn expand(t: &Type) -> Map {
    match t.combiner() {
        Combiner::Named(p) => {
            let i = p.info();
            let entries = match i.pair_index {
                Some(idx) => vec![(0, i.repr), (idx as i64, p.pair_index_repr())],
                None => vec![(0, i.repr)],
            };
            Map {
                entries,
                lb: 0,
                ub: i.extent as i64,
                lb_m: false,
                ub_m: false,
                align: i.align as u64,
            }
        }
        Combiner::F90Real { base, .. }
        | Combiner::F90Complex { base, .. }
        | Combiner::F90Integer { base, .. } => expand(&Type::predefined(*base)),
        Combiner::Dup { old } => expand(old),
        Combiner::Resized { lb, extent, old } => {
            let m = expand(old);
            Map {
                lb: *lb,
                ub: lb + extent,
                lb_m: true,
                ub_m: true,
                ..m
            }
        }
        Combiner::Contiguous { count, old } => {
            let m = expand(old);
            let e = m.extent();
            place(&(0..*count).map(|j| (j * e, &m)).collect::<Vec<_>>(), false)
        }
        Combiner::Vector {
            count,
            blocklen,
            stride,
            old,
        }
        | Combiner::Hvector {
            count,
            blocklen,
            stride,
            old,
        } => {
            let m = expand(old);
            let e = m.extent();
            let s = if matches!(t.combiner(), Combiner::Vector { .. }) {
                stride * e
            } else {
                *stride
            };
            let mut inst = Vec::new();
            for i in 0..*count {
                for j in 0..*blocklen {
                    inst.push((i * s + j * e, &m));
                }
            }
            place(&inst, false)
        }
        Combiner::Indexed {
            blocklens,
            displs,
            old,
        }
        | Combiner::Hindexed {
            blocklens,
            displs,
            old,
        } => {
            let m = expand(old);
            let e = m.extent();
            let unit = if matches!(t.combiner(), Combiner::Indexed { .. }) {
                e
            } else {
                1
            };
            let mut inst = Vec::new();
            for (b, d) in blocklens.iter().zip(displs) {
                for j in 0..*b {
                    inst.push((d * unit + j * e, &m));
                }
            }
            place(&inst, false)
        }
        Combiner::IndexedBlock {
            blocklen,
            displs,
            old,
        }
        | Combiner::HindexedBlock {
            blocklen,
            displs,
            old,
        } => {
            let m = expand(old);
            let e = m.extent();
            let unit = if matches!(t.combiner(), Combiner::IndexedBlock { .. }) {
                e
            } else {
                1
            };
            let mut inst = Vec::new();
            for d in displs {
                for j in 0..*blocklen {
                    inst.push((d * unit + j * e, &m));
                }
            }
            place(&inst, false)
        }
        Combiner::Struct {
            blocklens,
            displs,
            types,
        } => {
            let maps: Vec<Map> = types.iter().map(expand).collect();
            let mut inst = Vec::new();
            for ((b, d), m) in blocklens.iter().zip(displs).zip(&maps) {
                for j in 0..*b {
                    inst.push((d + j * m.extent(), m));
                }
            }
            place(&inst, true)
        }
        Combiner::Subarray {
            sizes,
            subsizes,
            starts,
            order,
            old,
        } => {
            let m = expand(old);
            let idx: Vec<Vec<i64>> = (0..sizes.len())
                .map(|d| (starts[d]..starts[d] + subsizes[d]).collect())
                .collect();
            array(&m, sizes, &idx, *order)
        }
        Combiner::Darray {
            size: _,
            rank,
            gsizes,
            distribs,
            psizes,
            order,
            old,
        } => {
            let m = expand(old);
            let n = gsizes.len();
            let mut coords = vec![0i64; n];
            let mut r = *rank as i64;
            for i in (0..n).rev() {
                coords[i] = r % psizes[i] as i64;
                r /= psizes[i] as i64;
            }
            let idx: Vec<Vec<i64>> = (0..n)
                .map(|d| {
                    let (g, p) = (gsizes[d], psizes[d] as i64);
                    (0..g)
                        .filter(|&x| match distribs[d] {
                            Distribution::None => true,
                            Distribution::Block(b) => x / b.unwrap_or((g + p - 1) / p) == coords[d],
                            Distribution::Cyclic(b) => (x / b.unwrap_or(1)) % p == coords[d],
                        })
                        .collect()
                })
                .collect();
            array(&m, gsizes, &idx, *order)
        }
    }
}

/// The elements of an array of `sizes` whose index in dimension `d` is in `idx[d]`, in
/// memory order, with the extent of the whole array.
fn array(m: &Map, sizes: &[i64], idx: &[Vec<i64>], order: Order) -> Map {
    let n = sizes.len();
    // Memory order: the slowest dimension first.
    let dims: Vec<usize> = match order {
        Order::C => (0..n).collect(),
        Order::Fortran => (0..n).rev().collect(),
    };
    let mut lin = vec![0i64];
    for &d in &dims {
        let mut next = Vec::new();
        for &l in &lin {
            for &i in &idx[d] {
                next.push(l * sizes[d] + i);
            }
        }
        // Keep the partial linear index in the dims' own order.
        lin = next;
    }
    let e = m.extent();
    let mut entries = Vec::new();
    for l in lin {
        entries.extend(m.entries.iter().map(|(o, r)| (o + l * e, *r)));
    }
    whole_array(entries, sizes.iter().product::<i64>() * e, m.align)
}

/// A random type tree.
#[derive(Debug, Clone)]
enum Spec {
    Leaf(Predefined),
    Dup(Box<Spec>),
    Contig(i64, Box<Spec>),
    Vector(i64, i64, i64, bool, Box<Spec>),
    Indexed(Vec<(i64, i64)>, bool, Box<Spec>),
    Block(i64, Vec<i64>, bool, Box<Spec>),
    Struct(Vec<(i64, i64, Spec)>),
    Resized(i64, i64, Box<Spec>),
    Subarray(Vec<(i64, i64, i64)>, bool, Box<Spec>),
    Darray(Vec<(i64, i32, u8, i64)>, u32, bool, Box<Spec>),
}

fn build(s: &Spec) -> Type {
    let b = |s: &Spec| build(s);
    match s {
        Spec::Leaf(p) => Type::predefined(*p),
        Spec::Dup(x) => Type::dup(&b(x)),
        Spec::Contig(n, x) => Type::contiguous(*n, &b(x)).unwrap(),
        Spec::Vector(n, bl, st, h, x) => {
            if *h {
                Type::hvector(*n, *bl, *st, &b(x)).unwrap()
            } else {
                Type::vector(*n, *bl, *st, &b(x)).unwrap()
            }
        }
        Spec::Indexed(v, h, x) => {
            let (bl, d): (Vec<i64>, Vec<i64>) = v.iter().copied().unzip();
            if *h {
                Type::hindexed(&bl, &d, &b(x)).unwrap()
            } else {
                Type::indexed(&bl, &d, &b(x)).unwrap()
            }
        }
        Spec::Block(bl, d, h, x) => {
            if *h {
                Type::hindexed_block(*bl, d, &b(x)).unwrap()
            } else {
                Type::indexed_block(*bl, d, &b(x)).unwrap()
            }
        }
        Spec::Struct(v) => {
            let bl: Vec<i64> = v.iter().map(|e| e.0).collect();
            let d: Vec<i64> = v.iter().map(|e| e.1).collect();
            let t: Vec<Type> = v.iter().map(|e| b(&e.2)).collect();
            Type::structure(&bl, &d, &t).unwrap()
        }
        Spec::Resized(lb, ext, x) => Type::resized(&b(x), *lb, *ext).unwrap(),
        Spec::Subarray(dims, f, x) => {
            let sizes: Vec<i64> = dims.iter().map(|d| d.0).collect();
            let sub: Vec<i64> = dims.iter().map(|d| d.1).collect();
            let st: Vec<i64> = dims.iter().map(|d| d.2).collect();
            let o = if *f { Order::Fortran } else { Order::C };
            Type::subarray(&sizes, &sub, &st, o, &b(x)).unwrap()
        }
        Spec::Darray(dims, rank_seed, f, x) => {
            let gs: Vec<i64> = dims.iter().map(|d| d.0).collect();
            let ps: Vec<i32> = dims.iter().map(|d| d.1).collect();
            let ds: Vec<Distribution> = dims
                .iter()
                .map(|&(g, p, k, a)| match k {
                    0 => Distribution::Block(None),
                    1 => Distribution::Block(Some((g + p as i64 - 1) / p as i64 + a)),
                    2 => Distribution::Cyclic(None),
                    _ => Distribution::Cyclic(Some(1 + a)),
                })
                .collect();
            let size: i32 = ps.iter().product();
            let o = if *f { Order::Fortran } else { Order::C };
            Type::darray(
                size,
                (*rank_seed % size as u32) as i32,
                &gs,
                &ds,
                &ps,
                o,
                &b(x),
            )
            .unwrap()
        }
    }
}

fn spec() -> impl Strategy<Value = Spec> {
    let leaf = prop::sample::select(vec![
        Predefined::BYTE,
        Predefined::SHORT,
        Predefined::INT,
        Predefined::DOUBLE,
        Predefined::LONG,
        Predefined::C_FLOAT_COMPLEX,
        Predefined::DOUBLE_INT,
        Predefined::SHORT_INT,
    ])
    .prop_map(Spec::Leaf);
    leaf.prop_recursive(4, 48, 3, |inner| {
        let bx = inner.clone().prop_map(Box::new);
        prop_oneof![
            bx.clone().prop_map(Spec::Dup),
            (0i64..4, bx.clone()).prop_map(|(n, x)| Spec::Contig(n, x)),
            (0i64..4, 0i64..3, -6i64..7, any::<bool>(), bx.clone())
                .prop_map(|(n, b, s, h, x)| Spec::Vector(n, b, s, h, x)),
            (
                prop::collection::vec((0i64..3, -12i64..12), 0..4),
                any::<bool>(),
                bx.clone()
            )
                .prop_map(|(v, h, x)| Spec::Indexed(v, h, x)),
            (
                0i64..3,
                prop::collection::vec(-12i64..12, 0..4),
                any::<bool>(),
                bx.clone()
            )
                .prop_map(|(b, d, h, x)| Spec::Block(b, d, h, x)),
            prop::collection::vec((0i64..3, -24i64..24, inner.clone()), 1..4)
                .prop_map(Spec::Struct),
            (-16i64..16, -8i64..40, bx.clone()).prop_map(|(l, e, x)| Spec::Resized(l, e, x)),
            (
                prop::collection::vec((1i64..4, 1i64..4, 0i64..4), 1..3).prop_map(|v| v
                    .into_iter()
                    .map(|(s, a, b)| (s, a.min(s), b % (s - a.min(s) + 1)))
                    .collect()),
                any::<bool>(),
                bx.clone()
            )
                .prop_map(|(d, f, x)| Spec::Subarray(d, f, x)),
            (
                prop::collection::vec((1i64..6, 1i32..3, 0u8..4, 0i64..2), 1..3),
                any::<u32>(),
                any::<bool>(),
                bx
            )
                .prop_map(|(d, r, f, x)| Spec::Darray(d, r, f, x)),
        ]
    })
}

/// The reference packed stream of `count` elements at `origin` of `buf`.
fn ref_pack(m: &Map, buf: &[u8], origin: i64, count: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for k in 0..count as i64 {
        for (o, r) in &m.entries {
            let at = (origin + k * m.extent() + o) as usize;
            out.extend_from_slice(&buf[at..at + r.size()]);
        }
    }
    out
}

fn ref_unpack(m: &Map, buf: &mut [u8], origin: i64, count: u64, mut input: &[u8]) {
    for k in 0..count as i64 {
        for (o, r) in &m.entries {
            let at = (origin + k * m.extent() + o) as usize;
            buf[at..at + r.size()].copy_from_slice(&input[..r.size()]);
            input = &input[r.size()..];
        }
    }
}

fn ref_elements(m: &Map, count: u64, bytes: u64) -> Option<u64> {
    let mut at = 0u64;
    let mut n = 0;
    for _ in 0..count.max(1) {
        for (_, r) in &m.entries {
            if at == bytes {
                return Some(n);
            }
            at += r.size() as u64;
            n += 1;
            if at > bytes {
                return None;
            }
        }
    }
    (at == bytes).then_some(n)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn compiled_engine_agrees_with_the_reference(
        s in spec(),
        count in 0u64..3,
        seed in any::<u64>(),
        cuts in prop::collection::vec(1usize..40, 1..6),
        ebytes in any::<prop::sample::Index>(),
    ) {
        let t = build(&s);
        let m = expand(&t);
        prop_assume!(m.entries.len() * (count as usize) < 20_000);
        let size: u64 = m.entries.iter().map(|e| e.1.size() as u64).sum();
        prop_assert_eq!(t.size(), size);
        prop_assert_eq!((t.lb(), t.extent()), (m.lb, m.extent()));
        let (tlb, tub) = m.true_bounds();
        prop_assert_eq!(t.true_extent(), (tlb, tub - tlb));
        prop_assert_eq!(t.signature().elements(), m.entries.len() as u64);

        // A buffer holding exactly the bytes the elements touch, plus a margin.
        let reach = (count.max(1) as i64 - 1) * m.extent();
        let lo = tlb + reach.min(0) - 3;
        let hi = tub + reach.max(0) + 3;
        let origin = -lo;
        let len = (hi - lo) as usize;
        let mut x = seed | 1;
        let buf: Vec<u8> = (0..len).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect();

        let want = ref_pack(&m, &buf, origin, count);
        let mut got = vec![0u8; want.len()];
        prop_assert_eq!(pack::pack(&t, &buf, origin as usize, count, 0, &mut got).unwrap(), want.len());
        prop_assert_eq!(&got, &want);

        // Resumed at arbitrary offsets, in chunks.
        let mut chunked = Vec::new();
        let mut pos = 0u64;
        for c in cuts.iter().cycle() {
            if pos as usize >= want.len() { break; }
            let mut part = vec![0u8; *c];
            let n = pack::pack(&t, &buf, origin as usize, count, pos, &mut part).unwrap();
            chunked.extend_from_slice(&part[..n]);
            pos += n as u64;
        }
        prop_assert_eq!(&chunked, &want);

        // iovec pieces cover the same bytes in the same order.
        let (pieces, covered) = pack::pieces(&t, count, 0, u64::MAX, usize::MAX);
        prop_assert_eq!(covered, want.len() as u64);
        let mut gathered = Vec::new();
        for (o, n) in pieces {
            let at = (origin + o) as usize;
            gathered.extend_from_slice(&buf[at..at + n as usize]);
        }
        prop_assert_eq!(&gathered, &want);

        // Unpack in chunks; gap bytes stay untouched.
        let mut a = vec![0xEEu8; len];
        let mut b = a.clone();
        let mut pos = 0usize;
        for c in cuts.iter().cycle() {
            if pos >= want.len() { break; }
            let end = (pos + c).min(want.len());
            pack::unpack(&t, &mut a, origin as usize, count, pos as u64, &want[pos..end]).unwrap();
            pos = end;
        }
        ref_unpack(&m, &mut b, origin, count, &want);
        prop_assert_eq!(a, b);

        // get_elements at an arbitrary byte count of the received data.
        let total = size * count;
        let bytes = if total == 0 { 0 } else { ebytes.index(total as usize + 1) as u64 };
        prop_assert_eq!(t.elements_in(bytes), ref_elements(&m, count, bytes));

        // Rebuilding from the envelope and contents gives the same type map.
        if t.as_predefined().is_none() {
            let again = from_contents(t.envelope().combiner, &t.contents().unwrap()).unwrap();
            let m2 = expand(&again);
            prop_assert_eq!(&m2.entries, &m.entries);
            prop_assert_eq!((again.lb(), again.extent()), (t.lb(), t.extent()));
            prop_assert_eq!(again.layout(), t.layout());
        }
    }
}
