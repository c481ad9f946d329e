//! A Cartesian topology: a periodic 1-D ring (or a 2-D grid where the size allows) made with
//! `dims_create`, coordinates and ranks, shifts, a send-receive along a dimension, and a
//! neighbour all-gather. Each rank checks what its neighbours sent and prints
//! `cartesian OK`.
//!
//! `oxrun -n 3 target/release/examples/cartesian`

use oxmpi::topology::dims_create;
use oxmpi::AnyCommunicator;

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let size = world.size();
    let mut dims = [0, 0];
    dims_create(size, &mut dims)?;
    let cart = world
        .create_cartesian_communicator(&dims, &[true, true], false)?
        .expect("every rank is on a grid of the world's size");
    let rank = cart.rank();
    let mut ok = dims.iter().product::<i32>() == size;

    let coords = cart.coordinates();
    ok &= cart.coordinates_to_rank(&coords)? == rank;
    ok &= cart.rank_to_coordinates(rank)? == coords;

    // Along each dimension: send right, receive from the left; the left neighbour's
    // coordinates are ours with that one decreased (periodically).
    for d in 0..2 {
        let shift = cart.shift(d, 1)?;
        let (src, dst) = (shift.source.unwrap(), shift.dest.unwrap());
        let mut theirs = [0i32; 2];
        let c = [coords[0], coords[1]];
        cart.send_receive_into(&c[..], dst, d, &mut theirs[..], src, d)?;
        let mut want = c;
        want[d as usize] = (c[d as usize] + dims[d as usize] - 1) % dims[d as usize];
        ok &= theirs == want;
    }

    // Neighbour all-gather: 4 neighbours (−x, +x, −y, +y), each sending its rank.
    let mut from = [0i32; 4];
    cart.neighbor_all_gather_into(&[rank][..], &mut from[..])?;
    let mut want = [0i32; 4];
    for d in 0..2 {
        let s = cart.shift(d as i32, 1)?;
        want[2 * d] = s.source.unwrap();
        want[2 * d + 1] = s.dest.unwrap();
    }
    ok &= from == want;

    // The topology communicator works wherever any communicator does.
    let any: &dyn AnyCommunicator = &cart;
    ok &= any.size() == size && !any.is_inter();

    println!("rank {rank}: cartesian {}", if ok { "OK" } else { "WRONG" });
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
