//! Probes: `probe` and `immediate_probe` look at a message without taking it,
//! `matched_probe` takes it out of matching so only its `Message` can receive it (safe
//! with several threads), and a dropped `Message` is discarded rather than lost silently.
//! Every rank sends its right neighbour messages of rank-dependent length; each checks and
//! prints `probes OK`.
//!
//! `oxrun -n 3 target/release/examples/probes`

use oxmpi::Tag;

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut ok = true;
    let n = rank as usize + 3;
    world.send(&vec![rank as u16; n][..], next, 1)?;
    world.send(&vec![rank as u16; n][..], next, 2)?;
    world.send(&[0u8; 3][..], next, 3)?;

    // probe: the status tells the length, then a receive takes the message.
    let st = world.probe::<u16>(prev, 1)?;
    let len = st.count().unwrap_or(0) as usize;
    let mut v = vec![0u16; len];
    world.receive_into(&mut v[..], prev, 1)?;
    ok &= len == prev as usize + 3 && v.iter().all(|&x| x == prev as u16);

    // matched_probe: the message is ours alone.
    let (msg, st) = world.matched_probe::<u16>(prev, Tag::Is(2))?;
    ok &= st.count() == Some(prev as u64 + 3);
    let (w, _) = msg.matched_receive_vec::<u16>()?;
    ok &= w == v;

    // immediate_probe: poll until the message is there, then drop it unreceived.
    let st = loop {
        if let Some(st) = world.immediate_probe::<u8>(prev, 3)? {
            break st;
        }
    };
    ok &= st.count() == Some(3);
    let (msg, _) = world.matched_probe::<u8>(prev, 3)?;
    drop(msg); // received into scratch space and thrown away
    ok &= world.immediate_probe::<u8>(prev, 3)?.is_none();

    println!("rank {rank}: probes {}", if ok { "OK" } else { "WRONG" });
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
