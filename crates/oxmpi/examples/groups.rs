//! Groups and communicators made from them: the world group, include/exclude, union,
//! intersection, difference, rank translation, comparison, `split`, `create` from a group,
//! and code written against `&dyn AnyCommunicator`. Each rank checks and prints
//! `groups OK`.
//!
//! `oxrun -n 3 target/release/examples/groups`

use oxmpi::{AnyCommunicator, Relation, UNDEFINED};

fn describe(c: &dyn AnyCommunicator) -> (i32, i32) {
    (c.rank(), c.size())
}

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let mut ok = true;

    let all = world.group();
    let evens: Vec<i32> = (0..size).step_by(2).collect();
    let odds: Vec<i32> = (1..size).step_by(2).collect();
    let g_even = all.include(&evens)?;
    let g_odd = all.exclude(&evens)?;
    ok &= g_even.size() == evens.len() as i32 && g_odd.size() == odds.len() as i32;
    ok &= g_even.union(&g_odd).compare(&all) == Relation::Similar || odds.is_empty() || size == 2;
    ok &= g_even.intersection(&g_odd).size() == 0;
    ok &= all.difference(&g_odd).compare(&g_even) == Relation::Identical;
    ok &= g_even.rank() == (rank % 2 == 0).then_some(rank / 2);
    let t = g_even.translate_ranks(&[0], &all)?;
    ok &= t == vec![Some(0)];

    // Split by parity: ranks keep their order within each half.
    let half = world
        .split(rank % 2, rank)?
        .expect("every rank has a colour");
    ok &= describe(&half)
        == (
            rank / 2,
            if rank % 2 == 0 {
                evens.len()
            } else {
                odds.len()
            } as i32,
        );
    let mut sum = [0i32];
    half.all_reduce_into(&[rank][..], &mut sum[..], oxmpi::Op::Sum)?;
    let mine: i32 = (0..size).filter(|r| r % 2 == rank % 2).sum();
    ok &= sum[0] == mine;

    // A communicator of the even ranks only; the odd ones get none.
    let evens_comm = world.create(&g_even)?;
    ok &= evens_comm.is_some() == (rank % 2 == 0);
    let none = world.split(UNDEFINED, 0)?;
    ok &= none.is_none();

    let dup = world.duplicate()?;
    ok &= dup.compare(&world) == Relation::Congruent;

    println!("rank {rank}: groups {}", if ok { "OK" } else { "WRONG" });
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
