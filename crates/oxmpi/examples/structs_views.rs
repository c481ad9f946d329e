//! Structs and views: a `#[derive(Equivalence)]` struct with padding sent whole and in
//! slices, and a strided view (every other element, through a vector datatype) sent as
//! contiguous values and received back into the strided places with the gaps untouched.
//! Around a ring; each rank checks and prints `structs_views OK`.
//!
//! `oxrun -n 3 target/release/examples/structs_views`

use oxmpi::datatype::Type;
use oxmpi::point_to_point::{View, ViewMut};

#[derive(oxmpi::Equivalence, Clone, Copy, Debug, PartialEq)]
struct Particle {
    id: u8, // padding follows: never sent
    pos: [f64; 3],
    charge: i32,
}

fn particle(r: i32, i: i32) -> Particle {
    Particle {
        id: (r * 10 + i) as u8,
        pos: [r as f64, i as f64, 0.5],
        charge: -r,
    }
}

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut ok = true;

    // Structs through their own datatype (the padding is never read or written).
    let mine: Vec<Particle> = (0..4).map(|i| particle(rank, i)).collect();
    let mut got = vec![particle(-1, -1); 4];
    world.send_view(&View::of(&mine), next, 1)?;
    world.receive_view(&mut ViewMut::of(&mut got), prev, 1)?;
    ok &= got == (0..4).map(|i| particle(prev, i)).collect::<Vec<_>>();

    // Every other double of an 8-element array, sent as 4 contiguous values.
    let every_other = Type::vector(4, 1, 2, &Type::of::<f64>())?;
    let a: Vec<f64> = (0..8).map(|i| (100 * rank + i) as f64).collect();
    world.send_view(&View::new(&a, &every_other, 1)?, next, 2)?;
    let mut dense = [0f64; 4];
    world.receive_into(&mut dense[..], prev, 2)?;
    ok &= (0..4).all(|i| dense[i] == (100 * prev + 2 * i as i32) as f64);

    // And back into the strided places: the gaps keep their -1.
    world.send(&dense[..], prev, 3)?;
    let mut sparse = [-1f64; 8];
    world.receive_view(&mut ViewMut::new(&mut sparse, &every_other, 1)?, next, 3)?;
    ok &= (0..8).all(|i| {
        let want = if i % 2 == 0 {
            (100 * rank + i as i32) as f64
        } else {
            -1.0
        };
        sparse[i] == want
    });

    println!(
        "rank {rank}: structs_views {}",
        if ok { "OK" } else { "WRONG" }
    );
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
