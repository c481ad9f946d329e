//! A token travels around the ring of ranks; each rank adds its rank number, and rank 0
//! prints the total after one lap (it must equal 0 + 1 + ... + (n-1)).
//!
//! `oxrun -n 4 target/release/examples/ring`

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;
    let mut token = 0u64;
    if rank == 0 {
        world.send(&token, next, 0)?;
        world.receive_into(&mut token, prev, 0)?;
        let expected: u64 = (0..size as u64).sum();
        println!(
            "ring of {size} ranks: token came back as {token} (expected {expected}) {}",
            if token == expected { "OK" } else { "WRONG" }
        );
        if token != expected {
            universe.abort(1);
        }
    } else {
        world.receive_into(&mut token, prev, 0)?;
        token += rank as u64;
        world.send(&token, next, 0)?;
    }
    universe.finalize()
}
