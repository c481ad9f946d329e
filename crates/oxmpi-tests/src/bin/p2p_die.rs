//! Rank 1 dies (SIGKILL to itself) in the middle of a large rendezvous transfer from rank 0;
//! the launcher must end the job instead of letting rank 0 wait forever.

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let len = 64 << 20;
    match world.rank() {
        0 => {
            let v = vec![1u8; len];
            // Never completes: the receiver dies before answering.
            let _ = world.send(&v[..], 1, 1);
            let _ = world.send(&v[..], 1, 2);
        }
        1 => {
            let mut v = [0u8; 16];
            let _ = world.probe::<u8>(0, 1);
            // The rendezvous request is here; die instead of pulling the data.
            let _ = std::process::Command::new("kill")
                .args(["-9", &std::process::id().to_string()])
                .status();
            let _ = world.receive_into(&mut v[..], 0, 1);
        }
        _ => {}
    }
    universe.finalize().expect("finalize");
}
