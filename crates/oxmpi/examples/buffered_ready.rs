//! Buffered and ready sends: a buffer attached for `buffered_send` (which returns at once,
//! even before the receive is posted), one too small being an error, and a ready send
//! after the receiver said (with a barrier) that its receive is posted. Each rank checks
//! and prints `buffered_ready OK`.
//!
//! `oxrun -n 3 target/release/examples/buffered_ready`

use oxmpi::{ErrorClass, BSEND_OVERHEAD};

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut ok = true;

    universe.buffer_attach(vec![0u8; 4 * (1024 + BSEND_OVERHEAD)].into_boxed_slice())?;
    let data = [rank as u64; 128];
    // Both buffered sends return before anyone receives.
    world.buffered_send(&data[..], next, 1)?;
    world.process_at_rank(next).buffered_send(&data[..4])?;
    let too_big = vec![0u8; 1 << 20];
    ok &= world
        .buffered_send(&too_big[..], next, 2)
        .map_err(|e| e.class())
        == Err(ErrorClass::Buffer);
    let mut got = [0u64; 128];
    world.receive_into(&mut got[..], prev, 1)?;
    ok &= got == [prev as u64; 128];
    let (small, _) = world.process_at_rank(prev).receive_vec::<u64>()?;
    ok &= small == vec![prev as u64; 4];
    let back = universe.buffer_detach()?;
    ok &= back.len() == 4 * (1024 + BSEND_OVERHEAD);

    // Ready send: legal only once the matching receive is posted.
    let mut r = [0u32; 2];
    oxmpi::scope(|s| -> oxmpi::Result<()> {
        let req = world.immediate_receive_into(s, &mut r[..], prev, 3)?;
        world.barrier()?; // every receive is posted past this point
        world.ready_send(&[rank as u32, 9][..], next, 3)?;
        req.wait()?;
        Ok(())
    })?;
    ok &= r == [prev as u32, 9];

    println!(
        "rank {rank}: buffered_ready {}",
        if ok { "OK" } else { "WRONG" }
    );
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
