//! Nonblocking point-to-point with scopes: requests borrow their buffers inside
//! `oxmpi::scope`, are waited for one by one, all at once, or through a
//! `RequestCollection` with stable indices; a cancel guard ends a receive that never
//! matches; `static_scope` serves `'static` buffers and `immediate_barrier` without a scope
//! block. Every rank exchanges with both ring neighbours, checks, and prints `immediate OK`.
//!
//! `oxrun -n 3 target/release/examples/immediate`

use oxmpi::request::wait_all;
use oxmpi::RequestCollection;

static GREETING: [u8; 5] = *b"hello";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut ok = true;

    // Send right, receive from the left, wait for both.
    let out = [rank; 4];
    let mut inp = [0i32; 4];
    oxmpi::scope(|s| -> oxmpi::Result<()> {
        let r = world.immediate_receive_into(s, &mut inp[..], prev, 1)?;
        let t = world.immediate_send(s, &out[..], next, 1)?;
        let sts = wait_all(vec![r, t]).map_err(oxmpi::Error::from)?;
        ok &= sts[0].source() == prev;
        Ok(())
    })?;
    ok &= inp == [prev; 4];

    // Many requests with stable indices: which one finished is reported, with its peer.
    let mut from = vec![0i32; 2];
    let (a, b) = from.split_at_mut(1);
    oxmpi::scope(|s| -> oxmpi::Result<()> {
        let mut coll: RequestCollection<'_, '_, i32> = RequestCollection::new();
        coll.add_with(world.immediate_receive_into(s, &mut a[0], prev, 2)?, prev);
        coll.add_with(world.immediate_receive_into(s, &mut b[0], next, 2)?, next);
        coll.add_with(world.immediate_send(s, &rank, next, 2)?, next);
        coll.add_with(world.immediate_send(s, &rank, prev, 2)?, prev);
        let mut seen = [false; 4];
        while let Some(f) = coll.wait_any() {
            f.result?;
            seen[f.index] = true;
        }
        ok &= seen == [true; 4] && coll.outstanding() == 0;
        Ok(())
    })?;
    ok &= from == [prev, next];

    // A receive nobody sends to, ended by its guard; test() polls without blocking.
    let mut never = [0u8; 1];
    let mut got = [0u8; 5];
    oxmpi::scope(|s| -> oxmpi::Result<()> {
        let g = world
            .immediate_receive_into(s, &mut never[..], prev, 99)?
            .cancel_guard();
        let mut r = world.immediate_receive_into(s, &mut got[..], prev, 3)?;
        world.send(&GREETING[..], next, 3)?;
        let st = loop {
            if let Some(st) = r.test() {
                break st?;
            }
        };
        ok &= st.count() == Some(5);
        drop(g);
        Ok(())
    })?;
    ok &= &got == b"hello";

    // 'static buffers need no scope block.
    let r = world.immediate_send(oxmpi::static_scope(), &GREETING[..], next, 4)?;
    let mut again = [0u8; 5];
    world.receive_into(&mut again[..], prev, 4)?;
    r.wait()?;
    world.immediate_barrier(oxmpi::static_scope())?.wait()?;
    ok &= &again == b"hello";

    println!("rank {rank}: immediate {}", if ok { "OK" } else { "WRONG" });
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
