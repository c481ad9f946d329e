//! User-defined reductions: a commutative one (element-wise maximum of absolute values) and
//! a non-commutative one (2×2 matrix product, combined strictly in rank order), used in
//! all-reduce and reduce, and `reduce_local`. Each rank checks the results against a local
//! computation and prints `user_ops OK`.
//!
//! `oxrun -n 3 target/release/examples/user_ops`

use oxmpi::{reduce_local, Op};

/// Row-major 2×2 integer matrices.
type M = [i64; 4];

fn mul(a: &M, b: &M) -> M {
    [
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
    ]
}

/// Rank r's matrix: [[1, r], [0, 1]] + r on the diagonal of the second row, so order matters.
fn mat(r: i64) -> M {
    [1, r + 1, r, 1]
}

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let mut ok = true;

    let absmax = Op::user(true, |a: &[i32], b: &mut [i32]| {
        for (x, y) in a.iter().zip(b.iter_mut()) {
            *y = (*y).abs().max(x.abs());
        }
    });
    let mine = [-(rank * 3), rank];
    let mut got = [0i32; 2];
    world.all_reduce_into(&mine[..], &mut got[..], absmax.clone())?;
    ok &= got == [(size - 1) * 3, size - 1];

    // inout = in ∘ inout, with `in` from the lower ranks: the product in rank order.
    let matprod = Op::user(false, |a: &[M], b: &mut [M]| {
        for (x, y) in a.iter().zip(b.iter_mut()) {
            *y = mul(x, y);
        }
    });
    let want = (0..size as i64)
        .map(mat)
        .reduce(|acc, m| mul(&acc, &m))
        .unwrap();
    let mut prod = [[0i64; 4]];
    world.reduce_into(0, &[mat(rank as i64)][..], &mut prod[..], matprod.clone())?;
    if rank == 0 {
        ok &= prod[0] == want;
    }
    let mut all = [[0i64; 4]];
    world.all_reduce_into(&[mat(rank as i64)][..], &mut all[..], matprod)?;
    ok &= all[0] == want;

    // The same operation applied locally.
    let mut inout = [5i32, -1];
    reduce_local(&[-7i32, 0][..], &mut inout[..], &absmax)?;
    ok &= inout == [7, 1];

    println!("rank {rank}: user_ops {}", if ok { "OK" } else { "WRONG" });
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
