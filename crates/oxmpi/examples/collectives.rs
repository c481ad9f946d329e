//! Every collective, with the root taken from a process handle where there is one:
//! barrier, broadcast, gather (fixed and varying counts), scatter, reduce, all-gather,
//! all-to-all, all-reduce, reduce-scatter, scans, `bool`/`char` collectives, and nonblocking
//! forms awaited with `wait`. As in rsmpi, a buffer is one value, an array, a slice or a
//! vector: single values need no `&[x][..]`. Each rank checks every result against what it
//! computes itself and prints `collectives OK`.
//!
//! `oxrun -n 3 target/release/examples/collectives`

use oxmpi::Op;

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let (r, p) = (rank as u64, size as usize);
    let root = world.process_at_rank(size - 1);
    let at_root = root.is_self();
    let mut ok = true;

    world.barrier()?;

    // Broadcast one value from the root.
    let mut x = if at_root { 42u64 } else { 0 };
    root.broadcast_into(&mut x)?;
    ok &= x == 42;

    // Gather everyone's rank (and twice it) at the root.
    let mine = [r, 2 * r];
    if at_root {
        let mut all = vec![0u64; 2 * p];
        root.gather_into_root(&mine[..], &mut all[..])?;
        ok &= (0..p).all(|i| all[2 * i] == i as u64 && all[2 * i + 1] == 2 * i as u64);
    } else {
        root.gather_into(&mine[..])?;
    }

    // Gather with counts: rank i contributes i + 1 values.
    let counts: Vec<usize> = (1..=p).collect();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |a, c| Some(std::mem::replace(a, *a + c)))
        .collect();
    let part = vec![r; rank as usize + 1];
    let mut allv = vec![0u64; if at_root { counts.iter().sum() } else { 0 }];
    world.gather_varcount_into(size - 1, &part[..], &mut allv[..], &counts, &displs)?;
    if at_root {
        ok &= (0..p).all(|i| {
            allv[displs[i]..displs[i] + counts[i]]
                .iter()
                .all(|&v| v == i as u64)
        });
    }

    // Scatter: rank i gets 10 * i, into a single value.
    let mut mine1 = 0u64;
    if at_root {
        let blocks: Vec<u64> = (0..p as u64).map(|i| 10 * i).collect();
        root.scatter_into_root(&blocks, &mut mine1)?;
    } else {
        root.scatter_into(&mut mine1)?;
    }
    ok &= mine1 == 10 * r;

    // Reduce: sum and max of the ranks at the root, single values.
    let total: u64 = (0..p as u64).sum();
    if at_root {
        let (mut s, mut m) = (0u64, 0u64);
        root.reduce_into_root(&r, &mut s, Op::Sum)?;
        root.reduce_into_root(&r, &mut m, Op::Max)?;
        ok &= s == total && m == p as u64 - 1;
    } else {
        root.reduce_into(&r, Op::Sum)?;
        root.reduce_into(&r, Op::Max)?;
    }

    // All-gather, all-to-all, all-reduce.
    let mut ranks = vec![0u64; p];
    world.all_gather_into(&r, &mut ranks)?;
    ok &= ranks == (0..p as u64).collect::<Vec<_>>();
    let send: Vec<u64> = (0..p as u64).map(|j| 100 * r + j).collect();
    let mut recv = vec![0u64; p];
    world.all_to_all_into(&send, &mut recv)?;
    ok &= (0..p).all(|j| recv[j] == 100 * j as u64 + r);
    let mut s = 0u64;
    world.all_reduce_into(&r, &mut s, Op::Sum)?;
    ok &= s == total;
    // An array is its elements: [min, max] of (rank, -rank) at once.
    let mut mm = [0i64; 2];
    world.all_reduce_into(&[rank as i64, -(rank as i64)], &mut mm, Op::Max)?;
    ok &= mm == [p as i64 - 1, 0];

    // Reduce-scatter: block i of the element-wise sum goes to rank i.
    let contrib: Vec<u64> = (0..p as u64).map(|j| j + r).collect();
    let mut block = 0u64;
    world.reduce_scatter_block_into(&contrib, &mut block, Op::Sum)?;
    ok &= block == p as u64 * r + total;

    // Inclusive and exclusive prefix sums.
    let mut inc = 0u64;
    world.scan_into(&r, &mut inc, Op::Sum)?;
    ok &= inc == (0..=r).sum::<u64>();
    let mut exc = 0u64;
    world.exclusive_scan_into(&r, &mut exc, Op::Sum)?;
    ok &= rank == 0 || exc == (0..r).sum::<u64>();

    // bool and char (checked on receipt): logical reductions on bool, MIN/MAX on char.
    let (mut any_odd, mut all_odd) = (false, false);
    world.all_reduce_into(&(r % 2 == 1), &mut any_odd, Op::LogicalOr)?;
    world.all_reduce_into(&(r % 2 == 1), &mut all_odd, Op::LogicalAnd)?;
    ok &= any_odd == (p > 1) && !all_odd;
    let mut last = ' ';
    world.all_reduce_into(&char::from(b'a' + r as u8), &mut last, Op::Max)?;
    ok &= last == char::from(b'a' + p as u8 - 1);
    let mut flags = [at_root, !at_root];
    root.broadcast_into(&mut flags)?;
    ok &= flags == [true, false];

    // Nonblocking forms: start several, then complete them.
    let mut b = if at_root { 7u32 } else { 0 };
    let mut sum = [0u64];
    let one = [1u64];
    oxmpi::scope(|sc| -> oxmpi::Result<()> {
        let rb = world.immediate_broadcast_into(sc, size - 1, &mut b)?;
        let ra = world.immediate_all_reduce_into(sc, &one[..], &mut sum[..], Op::Sum)?;
        let rbar = world.immediate_barrier(sc)?;
        rb.wait()?;
        ra.wait()?;
        rbar.wait()?;
        Ok(())
    })?;
    ok &= b == 7 && sum[0] == p as u64;

    println!(
        "rank {rank}: collectives {}",
        if ok { "OK" } else { "WRONG" }
    );
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
