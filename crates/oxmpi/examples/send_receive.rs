//! Blocking point-to-point, rsmpi style: process handles (`process_at_rank`, `any_process`),
//! single values and slices, a message of unknown length (`receive_vec`), tags, and
//! `PROC_NULL`. Rank 0 greets every other rank, each answers with its rank squared. Every
//! rank checks what it got and prints `send_receive OK`.
//!
//! `oxrun -n 3 target/release/examples/send_receive`

use oxmpi::{Tag, PROC_NULL};

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let mut ok = true;
    if rank == 0 {
        for r in 1..size {
            let p = world.process_at_rank(r);
            p.send(&(r as u64 * 10))?; // one value, tag 0
            p.send_with_tag(&vec![r; r as usize][..], 7)?; // a slice, tag 7
        }
        for _ in 1..size {
            let (sq, st) = world.any_process().receive::<i32>()?;
            ok &= sq == st.source() * st.source();
        }
    } else {
        let root = world.process_at_rank(0);
        let (x, st) = root.receive_with_tag::<u64>(0)?;
        ok &= x == rank as u64 * 10 && st.tag() == 0;
        let (v, st) = world.receive_vec::<i32>(0, Tag::Is(7))?;
        ok &= v == vec![rank; rank as usize] && st.count() == Some(rank as u64);
        root.send(&(rank * rank))?;
    }
    // Sends to PROC_NULL go nowhere; receives from it complete at once, empty.
    world.send(&1u8, PROC_NULL, 0)?;
    let st = world.receive_into(&mut [0u8; 4][..], PROC_NULL, 0)?;
    ok &= st.source() == PROC_NULL && st.count() == Some(0);
    finish(&universe, ok, "send_receive")
}

fn finish(universe: &oxmpi::Universe, ok: bool, name: &str) -> Result<(), oxmpi::Error> {
    let rank = universe.world().rank();
    println!("rank {rank}: {name} {}", if ok { "OK" } else { "WRONG" });
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
