//! Reduction operations through the collectives: every predefined operation on every type
//! it applies to, MINLOC/MAXLOC, REPLACE/NO_OP, user closures (a non-commutative 2×2 matrix
//! product must come out in rank order through every algorithm), bit-identical floating-point
//! allreduce results on every rank, and `reduce_local`. Exits non-zero on a mismatch.

use oxmpi::op::{DoubleInt, TwoInt};
use oxmpi::{reduce_local, Communicator, Op};
use oxmpi_tests::{check, must};

macro_rules! int_ops {
    ($c:expr, $($t:ty),*) => { $( {
        let p = $c.size() as usize;
        let me = $c.rank() as usize;
        let v = |r: usize, i: usize| -> $t { ((r * 5 + i * 3) % 7) as $t };
        let n = 9;
        let cases: [(Op, fn($t, $t) -> $t); 10] = [
            (Op::Sum, |a, b| a.wrapping_add(b)),
            (Op::Prod, |a, b| a.wrapping_mul(b)),
            (Op::Min, |a, b| a.min(b)),
            (Op::Max, |a, b| a.max(b)),
            (Op::LogicalAnd, |a, b| ((a != 0) && (b != 0)) as $t),
            (Op::LogicalOr, |a, b| ((a != 0) || (b != 0)) as $t),
            (Op::LogicalXor, |a, b| ((a != 0) ^ (b != 0)) as $t),
            (Op::BitwiseAnd, |a, b| a & b),
            (Op::BitwiseOr, |a, b| a | b),
            (Op::BitwiseXor, |a, b| a ^ b),
        ];
        for (op, f) in cases {
            let name = op.name();
            let send: Vec<$t> = (0..n).map(|i| v(me, i)).collect();
            let mut recv = vec![0 as $t; n];
            must(name, $c.all_reduce_into(&send, &mut recv, op));
            let want: Vec<$t> = (0..n).map(|i| (1..p).fold(v(0, i), |a, r| f(a, v(r, i)))).collect();
            check!(recv == want, "{} on {}: {:?} != {:?}", name, stringify!($t), recv, want);
        }
    } )* };
}

macro_rules! float_ops {
    ($c:expr, $($t:ty),*) => { $( {
        let p = $c.size() as usize;
        let me = $c.rank() as usize;
        let v = |r: usize, i: usize| -> $t { ((r * 5 + i * 3) % 7) as $t - 2.0 };
        let n = 9;
        let cases: [(Op, fn($t, $t) -> $t); 4] = [
            (Op::Sum, |a, b| a + b),
            (Op::Prod, |a, b| a * b),
            (Op::Min, |a, b| a.min(b)),
            (Op::Max, |a, b| a.max(b)),
        ];
        for (op, f) in cases {
            let name = op.name();
            let send: Vec<$t> = (0..n).map(|i| v(me, i)).collect();
            let mut recv = vec![0.0 as $t; n];
            must(name, $c.all_reduce_into(&send, &mut recv, op));
            let want: Vec<$t> = (0..n).map(|i| (1..p).fold(v(0, i), |a, r| f(a, v(r, i)))).collect();
            check!(recv == want, "{} on {}: {:?} != {:?}", name, stringify!($t), recv, want);
        }
        // Bitwise operations are not defined on floating point.
        let e = $c.all_reduce_into(&[1.0 as $t][..], &mut [0.0 as $t][..], Op::BitwiseAnd).unwrap_err();
        check!(e.class() == oxmpi::ErrorClass::Op, "BAND on {} gave {e}", stringify!($t));
    } )* };
}

type M = [i64; 4];

fn mat(r: usize, i: usize) -> M {
    let a = (r as i64 * 3 + i as i64) % 5 + 1;
    [a, 1, (i as i64 % 3) - 1, 2]
}

/// x · y (row-major 2×2, wrapping).
fn mul(x: M, y: M) -> M {
    [
        x[0].wrapping_mul(y[0])
            .wrapping_add(x[1].wrapping_mul(y[2])),
        x[0].wrapping_mul(y[1])
            .wrapping_add(x[1].wrapping_mul(y[3])),
        x[2].wrapping_mul(y[0])
            .wrapping_add(x[3].wrapping_mul(y[2])),
        x[2].wrapping_mul(y[1])
            .wrapping_add(x[3].wrapping_mul(y[3])),
    ]
}

fn product(ranks: std::ops::Range<usize>, i: usize) -> M {
    ranks.map(|r| mat(r, i)).reduce(mul).unwrap_or([1, 0, 0, 1])
}

fn matmul_op() -> Op {
    // inout = in · inout: `in` holds the lower ranks' product.
    Op::user::<M>(false, |a, b| {
        for (x, y) in a.iter().zip(b.iter_mut()) {
            *y = mul(*x, *y);
        }
    })
}

fn noncommutative(c: &Communicator, label: &str) {
    let p = c.size() as usize;
    let me = c.rank() as usize;
    // 3 elements: short algorithms; 700 (22 KiB): the long ones.
    for n in [3usize, 700] {
        let send: Vec<M> = (0..n).map(|i| mat(me, i)).collect();
        let want: Vec<M> = (0..n).map(|i| product(0..p, i)).collect();
        let mut recv = vec![[0i64; 4]; n];
        must(
            "allreduce matmul",
            c.all_reduce_into(&send, &mut recv, matmul_op()),
        );
        check!(
            recv == want,
            "{label} n {n}: allreduce of matrices is not the rank-order product"
        );
        for root in [0, p as i32 - 1] {
            let mut out = vec![[0i64; 4]; if me == root as usize { n } else { 0 }];
            must(
                "reduce matmul",
                c.reduce_into(root, &send, &mut out, matmul_op()),
            );
            if me == root as usize {
                check!(
                    out == want,
                    "{label} n {n}: reduce of matrices at root {root}"
                );
            }
        }
        let mut sc = vec![[0i64; 4]; n];
        must("scan matmul", c.scan_into(&send, &mut sc, matmul_op()));
        let wsc: Vec<M> = (0..n).map(|i| product(0..me + 1, i)).collect();
        check!(sc == wsc, "{label} n {n}: scan of matrices");
        let mut ex = vec![[0i64; 4]; n];
        must(
            "exscan matmul",
            c.exclusive_scan_into(&send, &mut ex, matmul_op()),
        );
        if me > 0 {
            check!(
                ex == (0..n).map(|i| product(0..me, i)).collect::<Vec<_>>(),
                "{label} n {n}: exscan of matrices"
            );
        }
        let b = n / p + 1;
        let send: Vec<M> = (0..b * p).map(|i| mat(me, i)).collect();
        let mut mine = vec![[0i64; 4]; b];
        must(
            "reduce_scatter_block matmul",
            c.reduce_scatter_block_into(&send, &mut mine, matmul_op()),
        );
        check!(
            mine == (me * b..(me + 1) * b)
                .map(|i| product(0..p, i))
                .collect::<Vec<_>>(),
            "{label} n {n}: reduce_scatter_block of matrices"
        );
    }
    // REPLACE keeps the highest rank's value, NO_OP the lowest's.
    let mut r = [0i32; 2];
    must(
        "replace",
        c.all_reduce_into(&[me as i32, 7][..], &mut r[..], Op::Replace),
    );
    check!(r == [p as i32 - 1, 7], "{label}: REPLACE gave {r:?}");
    must(
        "no_op",
        c.all_reduce_into(&[me as i32 + 10, 7][..], &mut r[..], Op::NoOp),
    );
    check!(r == [10, 7], "{label}: NO_OP gave {r:?}");
}

/// Floating-point sums whose value depends on the order: every rank must still get the
/// very same bits.
fn bit_identical(c: &Communicator, label: &str) {
    let p = c.size() as usize;
    let me = c.rank() as usize;
    for n in [1usize, 5, 3000, 70000] {
        let send: Vec<f64> = (0..n)
            .map(|i| {
                ((me * 7919 + i * 104729) % 1000) as f64 * 1e-3 + 1e10 * ((me + i) % 3) as f64
                    - 1e-7 * i as f64
            })
            .collect();
        let mut recv = vec![0.0f64; n];
        must(
            "allreduce f64",
            c.all_reduce_into(&send, &mut recv, Op::Sum),
        );
        let bits: Vec<u64> = recv.iter().map(|x| x.to_bits()).collect();
        let mut all = vec![0u64; n * p];
        must("allgather bits", c.all_gather_into(&bits, &mut all));
        for r in 0..p {
            check!(
                all[r * n..(r + 1) * n] == bits[..],
                "{label} n {n}: rank {r}'s allreduce result differs in its bits from rank {me}'s"
            );
        }
        // And the value is the sum up to rounding.
        for i in (0..n).step_by(997) {
            let exact: f64 = (0..p)
                .map(|r| {
                    ((r * 7919 + i * 104729) % 1000) as f64 * 1e-3 + 1e10 * ((r + i) % 3) as f64
                        - 1e-7 * i as f64
                })
                .sum();
            check!(
                (recv[i] - exact).abs() <= 1e-3 * exact.abs().max(1.0),
                "{label}: sum {} vs {}",
                recv[i],
                exact
            );
        }
    }
}

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let p = world.size() as usize;
    let me = world.rank() as usize;

    int_ops!(world, u8, i8, u16, i16, u32, i32, u64, i64);
    float_ops!(world, f32, f64);

    // MINLOC / MAXLOC on value-index pairs; ties go to the lower index.
    let v = |r: usize| ((r * 37) % 5) as f64;
    let send = [
        DoubleInt::new(v(me), me as i32),
        DoubleInt::new(1.0, me as i32),
    ];
    let mut out = [DoubleInt::default(); 2];
    must("minloc", world.all_reduce_into(&send, &mut out, Op::MinLoc));
    let min = (0..p).map(v).fold(f64::INFINITY, f64::min);
    let at = (0..p).find(|&r| v(r) == min).unwrap_or(0);
    check!(
        out[0] == DoubleInt::new(min, at as i32),
        "minloc {:?}",
        out[0]
    );
    check!(out[1] == DoubleInt::new(1.0, 0), "minloc tie {:?}", out[1]);
    let mut out2 = [TwoInt::default()];
    must(
        "maxloc",
        world.all_reduce_into(
            &[TwoInt::new(me as i32 % 3, me as i32)][..],
            &mut out2[..],
            Op::MaxLoc,
        ),
    );
    let mx = (0..p).map(|r| r as i32 % 3).max().unwrap_or(0);
    check!(
        out2[0] == TwoInt::new(mx, (0..p).find(|&r| r as i32 % 3 == mx).unwrap_or(0) as i32),
        "maxloc {:?}",
        out2[0]
    );

    // A commutative user closure.
    let sat = Op::user::<u8>(true, |a, b| {
        for (x, y) in a.iter().zip(b.iter_mut()) {
            *y = y.saturating_add(*x);
        }
    });
    let mut s = [0u8; 3];
    must(
        "user sat",
        world.all_reduce_into(&[100u8, 1, 0][..], &mut s[..], sat),
    );
    check!(
        s == [(100 * p).min(255) as u8, p as u8, 0],
        "saturating user op {s:?}"
    );

    noncommutative(&world, "world");
    let sub = must("split", world.split((me % 2) as i32, me as i32)).expect("member");
    noncommutative(&sub, "split");
    bit_identical(&world, "world");
    bit_identical(&sub, "split");

    let mut inout = [1i32, 2, 3];
    must(
        "reduce_local",
        reduce_local(&[10, 20, 30], &mut inout, &Op::Sum),
    );
    check!(inout == [11, 22, 33], "reduce_local {inout:?}");
    let mut m = [mat(1, 0)];
    must(
        "reduce_local matmul",
        reduce_local(&[mat(0, 0)], &mut m, &matmul_op()),
    );
    check!(
        m == [mul(mat(0, 0), mat(1, 0))],
        "reduce_local keeps argument order"
    );

    world.barrier().expect("barrier");
    println!("rank {me} coll_ops passed");
    universe.finalize().expect("finalize");
}
